# Skein's build. `make run` starts a single node on the embedded defaults;
# `make test` runs every Go test with the race detector, and then the
# in-process clusters of node/nodetest without it (several protoactor
# remotes in one process race on gRPC's global logger; the same code runs
# race-built in tests/cluster's node processes).

GO        ?= go
FUZZTIME  ?= 10s
BENCH     ?= .
BENCHTIME ?= 1x
PKGS      ?= ./...

# What `skein --version` says: VERSION from git describe (a tag, or the
# commit, -dirty with uncommitted changes), COMMIT the full revision. Both
# go in LDFLAGS, which every target that links bin/skein uses; without
# them (plain go build or go install) skein reads its module version and
# commit from the build information instead.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  = -X github.com/skeinlog/skein/cli.version=$(VERSION) -X github.com/skeinlog/skein/cli.commit=$(COMMIT)

# make install copies bin/skein to $(DESTDIR)$(PREFIX)/bin/skein
# (/usr/local/bin/skein: on PATH; PREFIX=$HOME/.local for yourself alone).
PREFIX  ?= /usr/local

.PHONY: build install run test diff bench bench-broker fuzz lint generate release image clean

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/skein ./cmd/skein

install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 bin/skein $(DESTDIR)$(PREFIX)/bin/skein

run: build
	./bin/skein node

# Tests that need root skip themselves when run by anyone else
# (internal/needroot) and are named after the run, with what each needs.
NOT_RUN_DIR := $(CURDIR)/bin/not-run
test:
	@status=0; \
	SKEIN_NOT_RUN_DIR=$(NOT_RUN_DIR) $(GO) test -race -timeout 20m $(PKGS) || status=$$?; \
	if [ $$status -eq 0 ]; then $(GO) test -count=1 -timeout 10m ./node/nodetest/ || status=$$?; fi; \
	if [ -n "$$(ls -A $(NOT_RUN_DIR) 2>/dev/null)" ]; then \
		echo "Not run, each for what it needs:"; cat $(NOT_RUN_DIR)/* | sed 's/^/  /'; \
	fi; \
	exit $$status

# The differential tests against Apache Kafka's broker (tests/diff/run.sh;
# needs Java 17 and Maven, which it installs from Debian when missing).
diff:
	tests/diff/run.sh

# Benchmarks report MB/s and allocs/op; BENCH selects them, BENCHTIME sets -benchtime.
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) $(PKGS)

# The broker benchmark (tests/bench/README.md): Skein with durability fsync and
# replicated against franz-go's kfake, each broker its own process, driven by
# kgo; BENCHFLAGS passes flags, e.g. BENCHFLAGS='-records 200000'.
BENCHFLAGS ?=
bench-broker:
	$(GO) run ./tests/bench $(BENCHFLAGS)

# Runs every fuzz target for FUZZTIME each.
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

# The differential tests, and the broker benchmark's Kafka smoke tests, are
# behind the kafkadiff tag: vet them with it.
lint:
	$(GO) vet $(PKGS)
	$(GO) vet -tags kafkadiff ./tests/diff/ ./tests/bench/
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Regenerates actors/frame.pb.go, the one protobuf type remoting carries;
# needs protoc (Debian's protobuf-compiler). protoc-gen-go is pinned to the
# google.golang.org/protobuf of go.mod.
PROTOC_GEN_GO_VERSION ?= $(shell $(GO) list -m -f '{{.Version}}' google.golang.org/protobuf)
generate:
	GOBIN=$(CURDIR)/bin $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	cd actors && protoc --plugin=protoc-gen-go=$(CURDIR)/bin/protoc-gen-go --go_out=. --go_opt=paths=source_relative frame.proto

# make release: for each of RELEASE_PLATFORMS a statically linked skein
# (CGO_ENABLED=0) in dist/skein-$(VERSION)-OS-ARCH.tar.gz, with README.md,
# LICENSE when there is one, and deploy/skein.service and skein.yaml; and
# dist/SHA256SUMS (`cd dist && sha256sum -c SHA256SUMS`). The archives
# hold the files under skein-$(VERSION)-OS-ARCH/, owned by root, dated at
# the last commit and sorted, so that the same commit and Go give the same
# bytes (GNU tar).
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
release:
	@set -e; rm -rf dist; mkdir -p dist; \
	mtime=$$(git log -1 --format=%ct 2>/dev/null || date +%s); \
	for p in $(RELEASE_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; name=skein-$(VERSION)-$$os-$$arch; \
		echo "release: $$name.tar.gz"; mkdir -p dist/$$name; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o dist/$$name/skein ./cmd/skein; \
		cp README.md deploy/skein.service deploy/skein.yaml dist/$$name/; \
		if [ -f LICENSE ]; then cp LICENSE dist/$$name/; fi; \
		tar -C dist --sort=name --owner=0 --group=0 --numeric-owner --mtime=@$$mtime -cf - $$name | gzip -9n >dist/$$name.tar.gz; \
		rm -rf dist/$$name; \
	done; \
	cd dist && sha256sum skein-*.tar.gz >SHA256SUMS && cat SHA256SUMS

# make image: the container image skein:$(VERSION) and skein:latest from
# deploy/Containerfile, with podman (or buildah, or docker), downloading
# nothing (deploy/build-image.sh; tests/image/run.sh checks it).
image:
	GO=$(GO) VERSION=$(VERSION) LDFLAGS='$(LDFLAGS)' deploy/build-image.sh

clean:
	rm -rf bin
