#!/usr/bin/env bash
# The container image's check, run by .ci/run (issue 30): builds the image
# with deploy/build-image.sh (podman, installed from Debian when missing),
# starts it with a published port and a named volume, and with kcat, a real
# Kafka client, produces a record through it and reads it back. Then checks
# that the node runs as uid 65532 and not root, stops it (SIGTERM: a clean
# exit within the node's 10 s), starts a new container on the same volume
# and reads the record again. Then starts deploy/compose.yaml's three-node
# cluster with podman-compose (installed from Debian when missing), creates
# a topic with replication factor 3, produces with acks=all through one
# node and consumes through another, stops a node, produces again, starts
# it and waits for it back in every ISR. Removes its containers, volumes,
# network and images whatever happens. Fails on any failure.
#
# Where podman cannot run a container at all (no container runtime works
# on this machine), it says so on stderr, "NOT RUN", with podman's error,
# and exits 0 without having checked anything but the build; with
# SKEIN_IMAGE_REQUIRED=1 that is a failure instead.
#
# Some machines need more than `podman run`: the script tries, in order,
# podman as configured; then with rlimits no higher than this shell's
# (podman asks for 1048576 open files, refused without CAP_SYS_RESOURCE);
# then with runc instead of crun (crun 1.8 refuses hybrid cgroup v1/v2
# hierarchies), installing runc from Debian. It uses the first that runs,
# through a containers.conf of its own (CONTAINERS_CONF), and says which.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
export PATH="$PATH:/usr/local/go/bin"

sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
apt_install() {
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq "$@" >/dev/null
}
command -v podman >/dev/null || apt_install podman
command -v kcat >/dev/null || apt_install kcat

TAG="imagetest$$"
IMAGE="skein-imagetest"
NAME="skein-imagetest-$$"
PROJECT="skein-imagetest-$$"
VOL="skein-imagetest-$$"
TOPIC="image-test"
WORK="$(mktemp -d)"
fail() {
	echo "FAIL tests/image: $*" >&2
	exit 1
}
composed=0
compose() { SKEIN_IMAGE="$IMAGE:$TAG" podman-compose -p "$PROJECT" -f deploy/compose.yaml "$@"; }
cleanup() {
	podman rm -f -t 0 "$NAME" >/dev/null 2>&1 || true
	if [ "$composed" = 1 ]; then
		compose down -v -t 0 >/dev/null 2>&1 || true
		podman network rm -f "${PROJECT}_default" >/dev/null 2>&1 || true
	fi
	podman volume rm -f "$VOL" >/dev/null 2>&1 || true
	podman rmi -f "$IMAGE:$TAG" >/dev/null 2>&1 || true
	podman rmi -f "$IMAGE:latest" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT

echo "== tests/image: building the image ($IMAGE:$TAG)"
IMAGE="$IMAGE" VERSION="$TAG" BUILDER=podman deploy/build-image.sh >"$WORK/build.log" 2>&1 ||
	{ cat "$WORK/build.log" >&2; fail "deploy/build-image.sh failed"; }
size=$(podman image inspect -f '{{.Size}}' "$IMAGE:$TAG")
echo "ok  the image builds from scratch, $((size / 1024 / 1024)) MiB"

# The ways to run a container, tried until one works.
hn=$(ulimit -Hn)
hu=$(ulimit -Hu)
# NB: podman runs conmon and the runtime under a process limit of its own
# choosing (32768 here): asking for more than it is refused too.
[ "$hu" = unlimited ] || [ "$hu" -gt 32768 ] && hu=32768
[ "$hn" = unlimited ] && hn=1048576
conf_limits="[containers]
default_ulimits = [\"nofile=$hn:$hn\", \"nproc=$hu:$hu\"]
"
conf_runc="[engine]
runtime = \"runc\"
"
probe() { # probe DESCRIPTION CONTAINERS.CONF-CONTENT
	printf '%s' "$2" >"$WORK/containers.conf"
	if CONTAINERS_CONF="$WORK/containers.conf" podman run --rm --entrypoint /skein "$IMAGE:$TAG" --help >/dev/null 2>"$WORK/probe.err"; then
		echo "ok  podman runs the image ($1)"
		return 0
	fi
	echo "    podman could not run a container ($1): $(tail -1 "$WORK/probe.err")"
	return 1
}
if ! probe "as configured" "" && ! probe "rlimits nofile=$hn, nproc=$hu" "$conf_limits"; then
	command -v runc >/dev/null || apt_install runc || true
	if ! command -v runc >/dev/null || ! probe "runc, rlimits nofile=$hn, nproc=$hu" "$conf_limits$conf_runc"; then
		why="$(tail -1 "$WORK/probe.err" 2>/dev/null)"
		command -v runc >/dev/null || why="no runc could be installed; $why"
		if [ "${SKEIN_IMAGE_REQUIRED:-0}" = 1 ]; then
			fail "podman cannot run a container on this machine: $why"
		fi
		echo "NOT RUN tests/image: the image built, but podman cannot run a container on this machine, so it was not started nor checked with a client: $why" >&2
		exit 0
	fi
fi
export CONTAINERS_CONF="$WORK/containers.conf"

# A host port nothing listens on, published on loopback and advertised.
port=""
for p in $(seq 45092 45192); do
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && ! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 1000))") 2>/dev/null; then
		port=$p
		break
	fi
done
[ -n "$port" ] || fail "no free port in 45092-45192"
aport=$((port + 1000))
BROKER="127.0.0.1:$port"

podman volume create "$VOL" >/dev/null
start() {
	podman run -d --name "$NAME" -p "127.0.0.1:$port:9092" -p "127.0.0.1:$aport:9644" \
		-e SKEIN_ADVERTISED_LISTENERS="PLAINTEXT://$BROKER" \
		-v "$VOL:/var/lib/skein" "$IMAGE:$TAG" >/dev/null || fail "podman run failed"
	for _ in $(seq 1 120); do
		if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$aport/readyz")" = 200 ]; then
			echo "ok  the node is ready (/readyz through the published admin port $aport)"
			return 0
		fi
		if [ "$(podman inspect -f '{{.State.Running}}' "$NAME")" != true ]; then
			podman logs "$NAME" 2>&1 | tail -20 >&2
			fail "the container exited"
		fi
		sleep 0.5
	done
	podman logs "$NAME" 2>&1 | tail -20 >&2
	fail "the node was not ready within 60 s"
}
stop() { # a clean stop: SIGTERM, exit 0 within the node's 10 s
	podman stop -t 20 "$NAME" >/dev/null || fail "podman stop failed"
	code=$(podman inspect -f '{{.State.ExitCode}}' "$NAME")
	if [ "$code" != 0 ]; then
		podman logs "$NAME" 2>&1 | tail -20 >&2
		fail "the node exited $code on SIGTERM, not 0"
	fi
	echo "ok  podman stop: the node stopped gracefully (exit 0)"
	podman rm "$NAME" >/dev/null
}
consume() { # consume WHAT: the topic's records match what was produced
	timeout 30 kcat -b "$BROKER" -C -t "$TOPIC" -o beginning -e -f '%k:%s\n' >"$WORK/got" 2>"$WORK/kcat.err" ||
		{ cat "$WORK/kcat.err" >&2; fail "kcat -C failed ($1)"; }
	diff -u "$WORK/want" "$WORK/got" >&2 || fail "kcat -C read other records than were produced ($1)"
	echo "ok  kcat -C reads the records back ($1)"
}

start
printf 'k1:hello from the image\nk2:%s\n' "$(date +%s%N)" >"$WORK/want"
timeout 30 kcat -b "$BROKER" -P -t "$TOPIC" -K : -X acks=all -l "$WORK/want" 2>"$WORK/kcat.err" ||
	{ cat "$WORK/kcat.err" >&2; fail "kcat -P failed"; }
echo "ok  kcat -P produced 2 records through the published port $port"
consume "same container"

# Not root: the image's user, and the process's real ids as the host sees them.
user=$(podman inspect -f '{{.Config.User}}' "$NAME")
[ "$user" = 65532:65532 ] || fail "the container's user is '$user', not 65532:65532"
pid=$(podman inspect -f '{{.State.Pid}}' "$NAME")
ids=$(awk '/^Uid:|^Gid:/ {print $2, $3, $4, $5}' "/proc/$pid/status" | sort -u)
[ "$ids" = "65532 65532 65532 65532" ] || fail "the node's uids and gids are '$ids', not all 65532"
huser=$(podman top "$NAME" huser | tail -1 | tr -d ' ')
[ "$huser" = 65532 ] || fail "podman top says the node runs as $huser"
echo "ok  the node runs as 65532:65532, not root"

stop
start
consume "a new container on the same volume"
stop

# --- deploy/compose.yaml: three nodes ---------------------------------------
command -v podman-compose >/dev/null || apt_install podman-compose
for p in 19092 29092 39092 19644 29644 39644; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		fail "compose: port $p, which deploy/compose.yaml publishes, is taken"
	fi
done
SKEIN="$ROOT/bin/image/skein" # deploy/build-image.sh's linux binary
composed=1
compose up -d >"$WORK/compose.log" 2>&1 || { cat "$WORK/compose.log" >&2; fail "podman-compose up failed"; }
compose_logs() {
	for i in 1 2 3; do
		echo "-- skein$i" >&2
		podman logs "${PROJECT}_skein${i}_1" 2>&1 | tail -15 >&2
	done
}
up=0
for _ in $(seq 1 120); do
	up=1
	for p in 19092 29092 39092; do
		n=$(timeout 5 kcat -b "localhost:$p" -L 2>/dev/null | grep -c '^  broker [123] at localhost:[123]9092') || true
		[ "$n" = 3 ] || up=0
	done
	[ "$up" = 1 ] && break
	sleep 0.5
done
[ "$up" = 1 ] || { compose_logs; fail "compose: the three nodes did not each list three brokers within 60 s"; }
echo "ok  compose: three nodes, each lists the three brokers"
"$SKEIN" topic create rf3 -p 3 -r 3 --brokers localhost:19092 >"$WORK/create.out" 2>&1 ||
	{ cat "$WORK/create.out" >&2; compose_logs; fail "compose: skein topic create rf3 -r 3 failed"; }
seq 1 100 | sed 's/^/k:/' >"$WORK/want"
timeout 30 kcat -b localhost:29092 -P -t rf3 -K : -X acks=all -l "$WORK/want" 2>"$WORK/kcat.err" ||
	{ cat "$WORK/kcat.err" >&2; compose_logs; fail "compose: kcat -P to rf3 failed"; }
echo "ok  compose: topic rf3 (3 partitions, replication factor 3) takes 100 records with acks=all through node 2"
BROKER=localhost:39092
consume_sorted() {
	timeout 30 kcat -b "$BROKER" -C -t rf3 -o beginning -e -f '%k:%s\n' 2>"$WORK/kcat.err" | sort -t: -k2n >"$WORK/got" ||
		{ cat "$WORK/kcat.err" >&2; fail "compose: kcat -C failed ($1)"; }
	diff -u "$WORK/want" "$WORK/got" >&2 || fail "compose: kcat -C read other records than were produced ($1)"
	echo "ok  compose: kcat -C through node 3 reads them all back ($1)"
}
consume_sorted "every node up"
podman stop -t 20 "${PROJECT}_skein3_1" >/dev/null || fail "compose: podman stop skein3 failed"
seq 101 150 | sed 's/^/k:/' >"$WORK/more"
timeout 60 kcat -b localhost:19092 -P -t rf3 -K : -X acks=all -l "$WORK/more" 2>"$WORK/kcat.err" ||
	{ cat "$WORK/kcat.err" >&2; compose_logs; fail "compose: kcat -P with node 3 stopped failed"; }
cat "$WORK/more" >>"$WORK/want"
echo "ok  compose: node 3 stopped, 50 more records with acks=all through node 1"
podman start "${PROJECT}_skein3_1" >/dev/null || fail "compose: podman start skein3 failed"
back=0
for _ in $(seq 1 120); do
	if "$SKEIN" topic describe rf3 --brokers localhost:19092 2>/dev/null | grep -Ec '^[0-2] .*\[[123],[123],[123]\] +\[\]' | grep -qx 3; then
		back=1
		break
	fi
	sleep 0.5
done
[ "$back" = 1 ] || { "$SKEIN" topic describe rf3 --brokers localhost:19092 >&2; compose_logs; fail "compose: node 3 did not rejoin every ISR within 60 s"; }
echo "ok  compose: node 3 started again and back in every partition's ISR"
consume_sorted "after node 3's restart"
compose down -v -t 20 >"$WORK/compose.log" 2>&1 || { cat "$WORK/compose.log" >&2; fail "podman-compose down failed"; }
podman network rm -f "${PROJECT}_default" >/dev/null 2>&1 || true
echo "PASS tests/image"
