#!/usr/bin/env bash
# franz-go's own test suite (github.com/twmb/franz-go/pkg/kgo, the version
# go.mod pins) against Skein: unmodified, over TCP, transactions included.
# Run from the repository root (.ci/run does), or from anywhere:
#
#   tests/franz/run.sh                        # once on one node, once on three
#   FRANZ_RUNS=10 tests/franz/run.sh          # ten runs in a row on each
#   FRANZ_NODES=3 FRANZ_RUN=TestTxnEtl tests/franz/run.sh
#
# It needs Go only: it builds bin/skein and the kgo test binary, and for
# each run starts fresh nodes on empty data directories, waits for their
# /readyz, runs the suite with KGO_SEEDS naming them, then stops them with
# SIGTERM (each must exit 0 within 20 s).
#
#   FRANZ_RUNS   runs per topology (1); the loop goes on after a failure
#                and the counts are reported
#   FRANZ_NODES  topologies, "1 3" by default: one node (KGO_TEST_RF=1) and
#                three nodes (KGO_TEST_RF=3)
#   FRANZ_HOST   the single node's address, 127.0.0.1 by default; it
#                listens on ports the kernel picks
#   FRANZ_HOSTS  the three nodes' addresses, "127.0.0.231 127.0.0.232
#                127.0.0.233" by default; each listens on 9092 (Kafka),
#                9093 (cluster) and 9644 (admin)
#   FRANZ_RUN    a -test.run filter (every test by default)
#   FRANZ_SKIP   a -test.skip filter (none by default)
#   FRANZ_KEEP=1 keeps the work directory (nodes' logs, each run's output);
#                it is kept anyway when a run fails
#
# The nodes run with the defaults a user gets (group.initial.rebalance.
# delay.ms 3 s included). Ends with "franz: N passed, M failed" and exits 1
# if any run failed. On two cores one run of the suite took 150-340 s on one
# node and 230-480 s on three, the default invocation 14 min in all (with
# other work sharing the cores).
#
# NB: franz-go's Test848RegexBrokerResolves failed 2 of 10 runs on three
# nodes: its loop stops once it has seen records of as many topics as it
# wants, and __consumer_offsets, which its regex also subscribes to and
# which holds the other tests' commits, counts as one; orders-v2, led by
# another node, had not been fetched yet.
set -uo pipefail # no -e: a failed run is counted and the loop goes on

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export PATH="$PATH:/usr/local/go/bin"
RUNS=${FRANZ_RUNS:-1}
NODES=${FRANZ_NODES:-1 3}
HOST=${FRANZ_HOST:-127.0.0.1}
read -r -a HOSTS <<<"${FRANZ_HOSTS:-127.0.0.231 127.0.0.232 127.0.0.233}"
WORK=$(mktemp -d -t skein-franz.XXXXXX)
PIDS=()

passed=0
failures=()

cleanup() {
	local rc=$? pid
	for pid in "${PIDS[@]}"; do
		if kill -0 "$pid" 2>/dev/null; then
			kill -KILL "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
		fi
	done
	echo "franz: $passed passed, ${#failures[@]} failed"
	for f in "${failures[@]}"; do
		echo "  failed: $f"
	done
	if [ "${#failures[@]}" -gt 0 ] || [ "$rc" -ne 0 ]; then
		echo "--- work directory kept: $WORK"
		[ "$rc" -ne 0 ] || rc=1
	elif [ -z "${FRANZ_KEEP:-}" ]; then
		rm -rf "$WORK"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() {
	echo "franz: $1" >&2
	failures+=("$1")
	exit 1
}

# readyz HOST:PORT succeeds when the node's /readyz answers 200 (bash's
# /dev/tcp: no curl needed).
readyz() {
	local status
	{ exec 3<>"/dev/tcp/${1%:*}/${1##*:}"; } 2>/dev/null || return 1
	printf 'GET /readyz HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" >&3
	read -r -t 5 _ status _ <&3
	exec 3<&- 3>&-
	[ "$status" = 200 ]
}

# wait_ready ADMIN PID LOG waits up to 60 s for the node's /readyz.
wait_ready() {
	local deadline=$((SECONDS + 60))
	until readyz "$1"; do
		kill -0 "$2" 2>/dev/null || { tail -n 20 "$3"; return 1; }
		if [ "$SECONDS" -ge "$deadline" ]; then
			tail -n 20 "$3"
			return 1
		fi
		sleep 0.1
	done
}

# stop_nodes sends every node SIGTERM; each must exit 0 within 20 s.
stop_nodes() {
	local pid status ok=0 deadline
	for pid in "${PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	deadline=$((SECONDS + 20))
	for pid in "${PIDS[@]}"; do
		while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			echo "node $pid still running 20 s after SIGTERM; killed"
			kill -KILL "$pid"
			ok=1
		fi
		wait "$pid"
		status=$?
		if [ "$status" -ne 0 ]; then
			echo "node $pid exited with status $status after SIGTERM"
			ok=1
		fi
	done
	PIDS=()
	return $ok
}

# start_one DIR: a single node on ports the kernel picks; sets SEEDS.
start_one() {
	local dir=$1 started admin deadline=$((SECONDS + 30))
	mkdir -p "$dir/data"
	"$ROOT/bin/skein" node --data-dir "$dir/data" --listen "$HOST:0" --admin-listen "$HOST:0" \
		--cluster-listen "$HOST:0" --log-format json >"$dir/node.log" 2>&1 &
	PIDS=($!)
	SEEDS=
	while [ -z "$SEEDS" ]; do
		kill -0 "${PIDS[0]}" 2>/dev/null || { tail -n 20 "$dir/node.log"; return 1; }
		[ "$SECONDS" -lt "$deadline" ] || { tail -n 20 "$dir/node.log"; return 1; }
		started=$(grep '"message":"node started"' "$dir/node.log" 2>/dev/null)
		SEEDS=$(echo "$started" | grep -o '"listen":"[^"]*"' | cut -d'"' -f4)
		admin=$(echo "$started" | grep -o '"admin.listen":"[^"]*"' | cut -d'"' -f4)
		[ -n "$SEEDS" ] || sleep 0.1
	done
	wait_ready "$admin" "${PIDS[0]}" "$dir/node.log"
}

# start_three DIR: three nodes forming one controller quorum; sets SEEDS.
start_three() {
	local dir=$1 i h voters="" seeds=()
	for i in 1 2 3; do
		voters+="${voters:+,}$i@${HOSTS[$((i - 1))]}:9093"
		seeds+=("${HOSTS[$((i - 1))]}:9092")
	done
	PIDS=()
	for i in 1 2 3; do
		h=${HOSTS[$((i - 1))]}
		mkdir -p "$dir/data$i"
		"$ROOT/bin/skein" node --node-id "$i" --data-dir "$dir/data$i" --listen "$h:9092" \
			--admin-listen "$h:9644" --cluster-listen "$h:9093" --controller-quorum "$voters" \
			--log-format json >"$dir/node$i.log" 2>&1 &
		PIDS+=($!)
	done
	for i in 1 2 3; do
		wait_ready "${HOSTS[$((i - 1))]}:9644" "${PIDS[$((i - 1))]}" "$dir/node$i.log" || return 1
	done
	SEEDS=$(
		IFS=,
		echo "${seeds[*]}"
	)
}

cd "$ROOT" || exit 1
go build -o bin/skein ./cmd/skein || die "go build ./cmd/skein"
go test -c -o "$WORK/kgo.test" github.com/twmb/franz-go/pkg/kgo || die "go test -c franz-go/pkg/kgo"
# The suite reads some of its package's files: it runs in the package's
# directory, in the module cache.
KGO_DIR=$(go list -f '{{.Dir}}' github.com/twmb/franz-go/pkg/kgo) || die "go list franz-go/pkg/kgo"
echo "franz-go $(go list -m -f '{{.Version}}' github.com/twmb/franz-go); work directory $WORK"

args=(-test.count=1 -test.timeout=30m)
[ -z "${FRANZ_RUN:-}" ] || args+=("-test.run=$FRANZ_RUN")
[ -z "${FRANZ_SKIP:-}" ] || args+=("-test.skip=$FRANZ_SKIP")
for n in $NODES; do
	case $n in
	1) rf=1 ;;
	3) rf=3 ;;
	*) die "FRANZ_NODES: $n is not 1 or 3" ;;
	esac
	for ((r = 1; r <= RUNS; r++)); do
		name="$n node(s), run $r/$RUNS"
		dir=$WORK/n$n-r$r
		mkdir -p "$dir"
		if [ "$n" = 1 ]; then start_one "$dir"; else start_three "$dir"; fi || {
			failures+=("$name: the nodes did not start")
			stop_nodes
			continue
		}
		start=$SECONDS
		(cd "$KGO_DIR" && KGO_SEEDS=$SEEDS KGO_TEST_RF=$rf "$WORK/kgo.test" "${args[@]}") >"$dir/kgo.out" 2>&1
		status=$?
		took=$((SECONDS - start))
		stop_nodes || status=1
		if [ "$status" -eq 0 ]; then
			passed=$((passed + 1))
			echo "ok $name (${took}s)"
		else
			failures+=("$name (${took}s, $dir/kgo.out)")
			echo "FAIL $name (${took}s): $dir/kgo.out"
			grep -E '^(--- FAIL|    --- FAIL|panic:)|^ +[a-z_0-9]+_test\.go:[0-9]+:' "$dir/kgo.out" | head -n 30
		fi
	done
done
