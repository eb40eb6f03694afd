#!/usr/bin/env bash
# Interop: unmodified kcat (librdkafka), kafkajs, confluent-kafka-python and
# Apache Kafka's Java client against a fresh `skein node`, over TCP. .ci/run
# runs it after `make test`; it also runs alone, from any directory:
# tests/interop/run.sh
#
# It installs what is missing (kcat from Debian's package, kafkajs with
# `npm ci` from the committed package-lock.json, confluent-kafka with pip
# into a virtualenv, tests/interop/.venv, at the version requirements.txt
# pins; later, Java 17 and Maven from Debian), builds bin/skein, starts a
# node on a fresh data directory with a port the kernel picks, and runs
# named checks:
#   - kcat -L: the broker, then each topic with its partitions;
#   - kcat -P with keys (-K:) into a topic that the produce auto-creates
#     (the node runs with num.partitions=3), kcat -C -e reading exactly
#     those records back, and the -p, -o (absolute, relative, end,
#     s@timestamp) and -c options;
#   - librdkafka's idempotent producer (enable.idempotence) with each
#     codec: none, gzip, snappy, lz4, zstd;
#   - errors: an invalid topic name, a fetch past the end;
#   - kcat's balanced consumer (-G): two kcat -G processes in one group,
#     once with librdkafka's default eager assignors (range,roundrobin) and
#     once with cooperative-sticky (KIP-429); once both own partitions in
#     one generation, records are produced; together the members consume
#     every record, no partition is owned by both in one generation (from
#     librdkafka's cgrp debug log), and after SIGTERM the group's committed
#     offsets (groupoffsets.js) equal the end offsets;
#   - kafkajs.js: the admin client (createTopics, fetchTopicMetadata,
#     fetchTopicOffsets, fetchTopicOffsetsByTimestamp, fetchOffsets), an
#     idempotent producer, whose records kcat then reads back, and two
#     kafkajs consumers in one group (roundrobin assignor) consuming
#     every record and committing up to the end offsets;
#   - transactions (issue 10): txn.py, confluent-kafka-python (librdkafka
#     as of requirements.txt): a transactional producer committing and
#     aborting, one transaction left open while read_committed consumers
#     (and kcat) read, zombie fencing, consume-transform-produce with
#     send_offsets_to_transaction aborted and then committed, the group's
#     offsets (OffsetFetch) after; then kcat (Debian's librdkafka) reads the
#     topic with isolation.level read_committed (exactly the committed
#     records) and read_uncommitted (every record); kafkajs-txn.js: the
#     same with kafkajs's transactions and transaction.sendOffsets;
#   - groups848.py, confluent-kafka-python's KIP-848 consumer
#     (group.protocol=consumer): two members split a topic's partitions,
#     consume every record once from the partitions they own, commit (the
#     committed offsets are the end offsets), are described as a Stable
#     consumer-protocol group, and one takes every partition when the other
#     leaves;
#   - java/ (Main.java), Apache Kafka's Java client (kafka-clients, the
#     version java/pom.xml pins; Java and Maven from Debian when missing,
#     built with mvn): AdminClient createTopics, describeTopics, listTopics,
#     describeCluster, describeConfigs, incrementalAlterConfigs and
#     deleteTopics, listOffsets by timestamp and maxTimestamp, deleteRecords;
#     the idempotent producer (acks=all) with each codec,
#     records read back with key, value, header and timestamp; classic
#     groups of two consumers (range, cooperative-sticky, and static
#     members with group.instance.id) consuming
#     every record, committed offsets (listConsumerGroupOffsets) equal to
#     the end offsets, then listGroups, describeConsumerGroups,
#     deleteConsumerGroupOffsets and deleteConsumerGroups; transactions (commit, abort) read with
#     read_committed and read_uncommitted; a KIP-848 (group.protocol=
#     consumer) consumer subscribed to a pattern; share groups (KIP-932):
#     three KafkaShareConsumers with explicit acknowledgement sharing one
#     partition (share.auto.offset.reset=earliest set on the GROUP
#     resource), accepting, releasing and rejecting records by key: each
#     gets records, every record but the rejected accepted once, released
#     ones redelivered with a higher deliveryCount, rejected ones never,
#     commitSync without errors, then describeShareGroups and
#     listShareGroupOffsets (start offset at the end);
#   - Apache Kafka's command-line tools (kafka-tools, the same classpath):
#     kafka-topics (create, describe, alter to more partitions, list,
#     delete), kafka-producer-perf-test and kafka-consumer-perf-test (with a
#     group), kafka-consumer-groups (describe with lag, reset-offsets
#     --to-earliest), kafka-configs (kafka.admin.ConfigCommand, from the
#     broker's jar: a topic's, a broker's and the cluster default's dynamic
#     configs altered, described with synonyms and deleted, a bad value
#     refused; a group's configs set and described, one out of bounds
#     refused), kafka-verifiable-producer and -consumer, and
#     kafka-transactions list, describe, describe-producers and abort (a
#     transaction left open by a confluent-kafka producer that went away,
#     holding read_committed readers back until it is aborted);
#     kafka-console-share-consumer in a share group whose
#     share.auto.offset.reset kafka-configs sets, and kafka-share-groups
#     (ShareGroupCommand) --list, --describe (offsets, --members, --state)
#     while it consumes and after it stops on SIGTERM, --reset-offsets
#     --to-earliest, --delete-offsets and --delete; kafka-features
#     (FeatureCommand) describe, downgrade share.version to 0 (with
#     --dry-run first), an upgrade to 2 refused, and the upgrade back to 1,
#     each change seen in a describe;
#   - the node stops cleanly on SIGTERM;
#   - a secured node, started from a Kafka-style server.properties with
#     PLAINTEXT, SASL_SSL (PLAIN users in a JAAS line) and SSL (client
#     certificates required) listeners, certificates made with openssl, and
#     Kafka's StandardAuthorizer: skein acl grants alice the sec- topics;
#     kcat produces and reads back over SASL_SSL and over SSL with a client
#     certificate, is refused a topic no ACL gives alice, and is refused
#     with a wrong password or no certificate; kafkajs-sasl.js creates a
#     topic, produces and consumes with a group over SASL_SSL and is
#     refused with a wrong password; kafka-configs --entity-type users sets
#     and describes SCRAM credentials, which kcat (SCRAM-SHA-256), kafkajs
#     and the Java producer (SCRAM-SHA-512, ScramLoginModule) then log in
#     with; kafka-configs sets and describes client and ip quotas;
#     kafka-acls adds, lists and removes ACLs as the admin over SASL_SSL;
#     sasl.py (confluent-kafka) produces idempotently and consumes with
#     SCRAM-SHA-512 and is refused a topic and a wrong password;
#     Kafka's kafka-topics, kafka-producer-perf-test and
#     kafka-consumer-perf-test run over SASL_SSL with a client.properties
#     (PEM truststore, PLAIN JAAS); the log shows no password;
#   - a three-node cluster (127.0.0.221-223, in racks a, b and c, with the
#     RackAwareReplicaSelector): kafkajs-cluster.js creates a
#     topic of replication factor 3, checks every partition has three
#     replicas in sync, produces idempotently through every broker and
#     reads back with a two-member group; kcat -L shows the replicas and
#     kcat -C reads the records back through another node; Kafka's
#     verifiable producer (acks=all) writes to an RF 3 topic while the
#     leader of one partition is killed -9 and restarted, and verifiable.py
#     checks what the verifiable consumer then reads (every acknowledged
#     record at its offset, nothing unsent, nothing twice); a KafkaConsumer
#     with client.rack=b (Main.java's rack section) reads every record of a
#     partition led by node 1 from node 2, the replica in its rack (KIP-392:
#     its preferred-read-replica metric, node 2's
#     skein_fetch_follower_records_total); the three stop
#     cleanly on SIGTERM (controlled shutdown).
#
# For kcat's groups, kafkajs, the transaction scripts and the Java client it
# prints the API versions the client sent, from the node's
# skein_requests_total on its admin listener.
#
# Ends with "interop: N passed, M failed" and exits 1 if any check failed
# or the setup did. Set INTEROP_KEEP=1 to keep the work directory (node log,
# outputs); it is kept anyway when something fails.
set -uo pipefail # no -e: a failed check is counted and the run goes on

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tests/interop
export PATH="$PATH:/usr/local/go/bin"
# The kafkajs v2 partitioner warning is noise here: kafkajs.js picks the
# partitioner explicitly.
export KAFKAJS_NO_PARTITIONER_WARNING=1
export LC_ALL=C # sort and compare bytes

N=300 # records kcat produces with keys
M=200 # records the kafkajs idempotent producer sends
TOPIC_AUTO=interop-kcat-auto
TOPIC_KJS=interop-kafkajs
NODE_PID=
CLUSTER_PIDS=()
WORK=$(mktemp -d -t skein-interop.XXXXXX)

passed=0
failures=()
ok() {
	passed=$((passed + 1))
	echo "ok $1"
}
fail() {
	failures+=("$1")
	echo "FAIL $1"
}

summary() {
	echo "interop: $passed passed, ${#failures[@]} failed"
	local f
	for f in "${failures[@]}"; do
		echo "  failed: $f"
	done
}

# report SCRIPT STATUS OUT counts the "ok" and "FAIL" lines a node script
# wrote to OUT.out, and shows its stderr (OUT.err) when it failed.
report() {
	local script=$1 status=$2 out=$3 line
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "${line#ok }" ;;
		"FAIL "*) fail "${line#FAIL }" ;;
		*) echo "$line" ;;
		esac
	done <"$out.out"
	if [ "$status" -ne 0 ] && ! grep -q '^FAIL ' "$out.out"; then
		fail "$script exited with status $status"
	fi
	if [ "$status" -ne 0 ]; then
		echo "--- $script stderr"
		tail -n 20 "$out.err"
	fi
}

# stop_node NAME PID LOG sends a node SIGTERM and checks that it exits,
# with status 0, within 20 s (it bounds its graceful stop by 10 s).
stop_node() {
	local name=$1 pid=$2 log=$3 status deadline
	kill -TERM "$pid"
	deadline=$((SECONDS + 20))
	while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		fail "$name stops on SIGTERM: still running after 20 s"
		return
	fi
	wait "$pid"
	status=$?
	if [ "$status" -eq 0 ]; then
		ok "$name stops on SIGTERM with status 0"
	else
		fail "$name stops on SIGTERM: exit status $status"
		tail -n 20 "$log"
	fi
}

# die ends the run on a failure that leaves nothing to check.
die() {
	fail "$1"
	exit 1
}

cleanup() {
	local rc=$?
	local pid
	for pid in $NODE_PID ${SEC_PID:-} "${CLUSTER_PIDS[@]}"; do
		if kill -0 "$pid" 2>/dev/null; then
			kill -KILL "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
		fi
	done
	if [ "${#failures[@]}" -gt 0 ] || [ "$rc" -ne 0 ]; then
		if [ -f "$WORK/node.log" ]; then
			echo "--- last lines of the node's log ($WORK/node.log)"
			tail -n 30 "$WORK/node.log"
		fi
		echo "--- work directory kept: $WORK"
	elif [ -z "${INTEROP_KEEP:-}" ]; then
		rm -rf "$WORK"
	fi
	summary
	if [ "${#failures[@]}" -gt 0 ]; then
		exit 1
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- install --------------------------------------------------------------

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Debian ships kcat as "kcat" (bookworm on) and as "kafkacat" before.
KCAT=$(command -v kcat || command -v kafkacat || true)
if [ -z "$KCAT" ]; then
	echo "installing kcat"
	export DEBIAN_FRONTEND=noninteractive
	as_root apt-get update -qq || die "apt-get update"
	as_root apt-get install -y -qq kcat >/dev/null || as_root apt-get install -y -qq kafkacat >/dev/null ||
		die "apt-get install kcat"
	KCAT=$(command -v kcat || command -v kafkacat) || die "kcat installed but not on PATH"
fi
echo "kcat: $("$KCAT" -V 2>&1 | grep -o 'librdkafka [0-9.]*' | head -n 1)"

command -v node >/dev/null || die "node (Node.js) is not installed"
want=$(cd "$HERE" && node -p 'require("./package-lock.json").packages["node_modules/kafkajs"].version')
have=$(cd "$HERE" && node -p 'require("./node_modules/kafkajs/package.json").version' 2>/dev/null) || have=none
if [ "$want" != "$have" ]; then
	echo "installing kafkajs $want"
	(cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci"
fi
echo "kafkajs: $want"

# confluent-kafka (its wheels carry a current librdkafka) goes into a
# virtualenv of its own: Debian's python3 refuses pip installs outside one
# (PEP 668), and its venv module needs python3-venv.
VENV=$HERE/.venv
want=$(sed -n 's/^confluent-kafka==//p' "$HERE/requirements.txt")
have=$("$VENV/bin/python" -c 'import confluent_kafka; print(confluent_kafka.__version__)' 2>/dev/null) || have=none
if [ "$want" != "$have" ]; then
	echo "installing confluent-kafka $want"
	command -v python3 >/dev/null || die "python3 is not installed"
	if ! python3 -m venv --clear "$VENV" >/dev/null 2>&1; then
		export DEBIAN_FRONTEND=noninteractive
		as_root apt-get update -qq || die "apt-get update"
		as_root apt-get install -y -qq python3-venv >/dev/null || die "apt-get install python3-venv"
		python3 -m venv --clear "$VENV" || die "python3 -m venv $VENV"
	fi
	"$VENV/bin/pip" install -q --disable-pip-version-check -r "$HERE/requirements.txt" || die "pip install confluent-kafka"
fi
echo "confluent-kafka: $want"

# --- the node -------------------------------------------------------------

make -C "$ROOT" --no-print-directory build || die "make build"

# Port 0: the kernel picks a free port, with no window for another process
# to take it, and the node logs the address it bound. No
# group.initial.rebalance.delay.ms (Kafka's 3 s): each group check would
# wait it out, and none is about it (tests/group_initial_delay_test.go is).
# Streams groups may be given session timeouts and heartbeat intervals
# down to 6 s and 1 s (streams.sh sets them, so that the killed instance's
# tasks move quickly).
mkdir -p "$WORK/data"
"$ROOT/bin/skein" node --data-dir "$WORK/data" --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 \
	--log-format json --set num.partitions=3 --set group.initial.rebalance.delay.ms=0 \
	--set group.streams.min.session.timeout.ms=6000 --set group.streams.min.heartbeat.interval.ms=1000 >"$WORK/node.log" 2>&1 &
NODE_PID=$!

# A bounded poll of observable conditions: the "node started" line with the
# bound address, then kcat getting metadata from it.
BROKER=
ADMIN=
deadline=$((SECONDS + 30))
while [ -z "$BROKER" ]; do
	kill -0 "$NODE_PID" 2>/dev/null || die "the node exited during start"
	[ "$SECONDS" -lt "$deadline" ] || die "the node did not log 'node started' within 30 s"
	started=$(grep '"message":"node started"' "$WORK/node.log")
	BROKER=$(echo "$started" | grep -o '"listen":"[^"]*"' | cut -d'"' -f4)
	ADMIN=$(echo "$started" | grep -o '"admin.listen":"[^"]*"' | cut -d'"' -f4)
	[ -n "$BROKER" ] || sleep 0.1
done
until "$KCAT" -b "$BROKER" -L -m 1 >/dev/null 2>&1; do
	kill -0 "$NODE_PID" 2>/dev/null || die "the node exited during start"
	[ "$SECONDS" -lt "$deadline" ] || die "kcat -L got no metadata from $BROKER within 30 s"
	sleep 0.1
done
echo "node $NODE_PID on $BROKER, data in $WORK/data"

# kc runs kcat against the node, bounded so that a hang fails the check
# instead of the run: each call here takes about a second.
kc() {
	timeout 30 "$KCAT" -b "$BROKER" "$@"
}

# consume OUT ARGS... runs kcat -C ARGS with the records in file OUT and
# kcat's stderr in OUT.err, and returns kcat's exit status.
consume() {
	local out=$1
	shift
	kc -C "$@" >"$out" 2>"$out.err"
}

# requests_total prints the node's skein_requests_total counters from its
# admin listener's /metrics, one "API vVERSION COUNT" a line.
requests_total() {
	# shellcheck disable=SC2016 # JavaScript, not the shell, expands ${...}
	timeout 10 node -e '
		require("http").get(`http://${process.argv[1]}/metrics`, res => {
			let body = ""
			res.on("data", d => { body += d })
			res.on("end", () => {
				for (const l of body.split("\n")) {
					const m = l.match(/^skein_requests_total\{api="([^"]+)",version="(\d+)"\} (\S+)$/)
					if (m) console.log(`${m[1]} v${m[2]} ${m[3]}`)
				}
			})
		}).on("error", e => { console.error(e.message); process.exit(1) })' "$ADMIN"
}

# requests_since BEFORE prints, on one line, every "API vVERSION" whose
# counter grew since the requests_total output in file BEFORE.
requests_since() {
	requests_total | awk 'NR == FNR { n[$1 " " $2] = $3; next } $3 > n[$1 " " $2] + 0 { print $1 " " $2 }' "$1" - |
		sort | paste -sd, - | sed 's/,/, /g'
}

# same NAME STATUS GOT WANT is check NAME: kcat exited with STATUS 0 and
# file GOT equals file WANT.
same() {
	local name=$1 status=$2 got=$3 want=$4 why
	if [ "$status" -ne 0 ]; then
		why="kcat exit status $status"
		[ "$status" -ne 124 ] || why="kcat timed out (30 s)"
		fail "$name: $why"
		[ ! -f "$got.err" ] || tail -n 3 "$got.err"
	elif diff -u "$want" "$got" >"$WORK/diff" 2>&1; then
		ok "$name"
	else
		fail "$name"
		head -n 20 "$WORK/diff"
	fi
}

# metadata_check TOPIC PARTITIONS checks `kcat -L -J` output on stdin: the
# broker, and TOPIC with its partitions (metadata.js says what exactly).
metadata_check() {
	node "$HERE/metadata.js" "$BROKER" "$1" "$2"
}

# --- kcat: metadata, produce with auto-create, consume --------------------

if kc -L -J -m 10 | metadata_check "$TOPIC_AUTO" 0; then
	ok "kcat -L: the broker and controller; $TOPIC_AUTO absent"
else
	fail "kcat -L: the broker and controller; $TOPIC_AUTO absent"
fi

for i in $(seq 1 "$N"); do echo "key-$i:value-$i"; done >"$WORK/kcat.want"
if kc -P -t "$TOPIC_AUTO" -K: <"$WORK/kcat.want"; then
	ok "kcat -P -K: $N records, auto-creating $TOPIC_AUTO"
else
	fail "kcat -P -K: $N records, auto-creating $TOPIC_AUTO"
fi

if kc -L -J -t "$TOPIC_AUTO" | metadata_check "$TOPIC_AUTO" 3; then
	ok "kcat -L -t $TOPIC_AUTO: 3 partitions (num.partitions), leader, replicas, ISR"
else
	fail "kcat -L -t $TOPIC_AUTO: 3 partitions (num.partitions), leader, replicas, ISR"
fi

# Every record, as "partition offset timestamp key:value".
consume "$WORK/kcat.all" -t "$TOPIC_AUTO" -o beginning -e -f '%p %o %T %k:%s\n'
status=$?
cut -d' ' -f4 "$WORK/kcat.all" | sort >"$WORK/kcat.got"
sort "$WORK/kcat.want" >"$WORK/kcat.want.sorted"
same "kcat -C -o beginning -e: exactly the $N records produced" "$status" "$WORK/kcat.got" "$WORK/kcat.want.sorted"

# Offsets in each partition run 0, 1, 2, ... with no gap, and the keys
# spread over all three partitions.
if awk '!($1 in next_) { parts++ } { if ($2 != next_[$1] + 0) { bad = 1 } next_[$1] = $2 + 1 }
	END { exit (bad || parts != 3) }' "$WORK/kcat.all"; then
	ok "kcat -C: offsets contiguous from 0 in each of the 3 partitions"
else
	fail "kcat -C: offsets contiguous from 0 in each of the 3 partitions"
fi

# part P prints partition P's records from kcat.all as "offset key:value".
part() {
	awk -v p="$1" '$1 == p { print $2, $4 }' "$WORK/kcat.all"
}

for p in 0 1 2; do
	consume "$WORK/p$p.got" -t "$TOPIC_AUTO" -p "$p" -o beginning -e -f '%o %k:%s\n'
	status=$?
	part "$p" >"$WORK/p$p.want"
	same "kcat -C -p $p -o beginning: partition $p in offset order" "$status" "$WORK/p$p.got" "$WORK/p$p.want"
done

half=$(($(wc -l <"$WORK/p0.want") / 2))
consume "$WORK/abs.got" -t "$TOPIC_AUTO" -p 0 -o "$half" -e -f '%o %k:%s\n'
status=$?
part 0 | awk -v o="$half" '$1 >= o' >"$WORK/abs.want"
same "kcat -C -p 0 -o $half: from offset $half" "$status" "$WORK/abs.got" "$WORK/abs.want"

consume "$WORK/rel.got" -t "$TOPIC_AUTO" -p 1 -o -3 -e -f '%o %k:%s\n'
status=$?
part 1 | tail -n 3 >"$WORK/rel.want"
same "kcat -C -p 1 -o -3: the last 3 records" "$status" "$WORK/rel.got" "$WORK/rel.want"

consume "$WORK/count.got" -t "$TOPIC_AUTO" -p 2 -o beginning -c 10 -f '%o %k:%s\n'
status=$?
part 2 | head -n 10 >"$WORK/count.want"
same "kcat -C -p 2 -c 10: the first 10 records" "$status" "$WORK/count.got" "$WORK/count.want"

consume "$WORK/end.got" -t "$TOPIC_AUTO" -o end -e -f '%o %k:%s\n'
same "kcat -C -o end -e: nothing" $? "$WORK/end.got" /dev/null

# -o s@T starts each partition at its first record with a timestamp >= T
# (ListOffsets by timestamp). T is the median timestamp kcat saw, so the
# answer differs from both the beginning and the end.
ts=$(cut -d' ' -f3 "$WORK/kcat.all" | sort -n | awk '{ t[NR] = $1 } END { print t[int((NR + 1) / 2)] }')
consume "$WORK/ts.got" -t "$TOPIC_AUTO" -o "s@$ts" -e -f '%p %o %k:%s\n'
status=$?
sort -o "$WORK/ts.got" "$WORK/ts.got"
awk -v t="$ts" '$3 >= t { on[$1] = 1 } on[$1] { print $1, $2, $4 }' "$WORK/kcat.all" | sort >"$WORK/ts.want"
same "kcat -C -o s@$ts: from the first record at or after the timestamp" "$status" "$WORK/ts.got" "$WORK/ts.want"

# --- librdkafka's idempotent producer, every codec ------------------------

for codec in none gzip snappy lz4 zstd; do
	topic=interop-kcat-idempotent-$codec
	for i in $(seq 1 100); do echo "$codec-$i:$codec value $i $(printf '%*s' $((i * 7)) '' | tr ' ' v)"; done >"$WORK/$codec.want"
	name="kcat -P -X enable.idempotence=true -z $codec: 100 records read back"
	if ! kc -P -t "$topic" -K: -z "$codec" -X enable.idempotence=true <"$WORK/$codec.want"; then
		fail "$name (produce failed)"
		continue
	fi
	consume "$WORK/$codec.got" -t "$topic" -o beginning -e -f '%k:%s\n'
	status=$?
	sort -o "$WORK/$codec.got" "$WORK/$codec.got"
	sort -o "$WORK/$codec.want" "$WORK/$codec.want"
	same "$name" "$status" "$WORK/$codec.got" "$WORK/$codec.want"
done

# --- errors ---------------------------------------------------------------

# Auto-creating "bad topic!" must be refused with INVALID_TOPIC_EXCEPTION,
# which librdkafka reports as "Broker: Invalid topic". (When the metadata
# answer comes before kcat hands over its record, librdkafka fails the
# record itself as "Local: Unknown topic": the broker's answer is read from
# librdkafka's metadata debug log, which has it either way.)
if echo "x" | kc -P -t 'bad topic!' -X message.timeout.ms=10000 -d metadata 2>"$WORK/badtopic.err"; then
	fail "kcat -P to an invalid topic name: succeeded"
elif grep -q 'Error in metadata reply for topic bad topic! .*Broker: Invalid topic' "$WORK/badtopic.err"; then
	ok "kcat -P to an invalid topic name: Broker: Invalid topic"
else
	fail "kcat -P to an invalid topic name: $(tail -n 1 "$WORK/badtopic.err")"
fi

# Fetching past the end gets OFFSET_OUT_OF_RANGE; librdkafka then resets to
# the end and, with -e, exits without records.
consume "$WORK/oor.got" -t "$TOPIC_AUTO" -p 0 -o 1000000 -e -f '%o\n'
status=$?
if [ "$status" -eq 0 ] && grep -q 'Offset out of range' "$WORK/oor.got.err" && [ ! -s "$WORK/oor.got" ]; then
	ok "kcat -C -o past the end: Offset out of range, reset to the end"
else
	fail "kcat -C -o past the end: exit status $status"
	tail -n 3 "$WORK/oor.got.err"
fi

# --- kcat: balanced consumer groups ---------------------------------------

# owned FILE reads one kcat -G member's stderr, with librdkafka's cgrp
# debug lines, and prints "GENERATION PARTITION" for every partition the
# member owned in each generation: what it was assigned after the
# generation's JoinGroup response, and what it kept into it (cooperative).
owned() {
	awk '
		/JoinGroup response: GenerationId -?[0-9]+/ {
			match($0, /GenerationId -?[0-9]+/)
			g = substr($0, RSTART + 13, RLENGTH - 13) + 0
			if (g > 0) {
				gen = g
				for (p in cur) print gen, p
			}
			next
		}
		/^% Group .* rebalanced/ {
			add = $0 ~ /assigned:|incremental assignment/
			s = $0
			while (match(s, /\[[0-9]+\]/)) {
				p = substr(s, RSTART + 1, RLENGTH - 2)
				s = substr(s, RSTART + RLENGTH)
				if (add) {
					cur[p] = 1
					print gen, p
				} else {
					delete cur[p]
				}
			}
		}' "$1" | sort -u
}

# both_own GROUP succeeds when the two kcat -G members of GROUP each owned a
# partition in the same generation, by what they logged so far.
both_own() {
	{
		owned "$WORK/$1.1.err" | sed 's/^/1 /'
		owned "$WORK/$1.2.err" | sed 's/^/2 /'
	} | awk '!(($2, $1) in seen) { seen[$2, $1] = 1; n[$2]++ } END { for (g in n) if (n[g] == 2) found = 1; exit !found }'
}

# poll SECONDS CMD... runs CMD every 0.1 s until it succeeds, for at most
# SECONDS; it fails if CMD never did.
poll() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

# consumed_all GROUP succeeds when GROUP's two members together printed
# every record of $WORK/GROUP.want.
consumed_all() {
	cat "$WORK/$1.1" "$WORK/$1.2" | cut -d' ' -f3 | sort -u >"$WORK/$1.got"
	cmp -s "$WORK/$1.got" "$WORK/$1.want"
}

# kcat_group NAME GROUP ARGS... runs two `kcat -G GROUP` processes, with
# ARGS added, on a new topic GROUP holding one record; once both own
# partitions in one generation, kcat produces $N more. Together the members
# must consume every record, no partition may be owned by both in one
# generation, and after SIGTERM (kcat closes its consumer, committing) the
# group's committed offsets must equal the end offsets. Prints what each
# member owned and the API versions they sent.
kcat_group() {
	local name=$1 group=$2 i status=0 pids=()
	shift 2
	echo "seed:0" >"$WORK/$group.seed"
	kc -P -t "$group" -K: <"$WORK/$group.seed" || fail "$name: kcat -P creating topic $group"
	sort "$WORK/$group.seed" "$WORK/kcat.want" >"$WORK/$group.want"
	requests_total >"$WORK/$group.before"
	# -u: unbuffered, so that what a member consumed is in its file at once.
	for i in 1 2; do
		timeout 60 "$KCAT" -b "$BROKER" -G "$group" -X auto.offset.reset=earliest -u -d cgrp -f '%p %o %k:%s\n' "$@" "$group" \
			>"$WORK/$group.$i" 2>"$WORK/$group.$i.err" &
		pids+=($!)
	done
	if poll 30 both_own "$group"; then
		ok "$name: both members own partitions in one generation"
	else
		fail "$name: both members own partitions in one generation: not within 30 s"
	fi
	kc -P -t "$group" -K: <"$WORK/kcat.want" || fail "$name: kcat -P $N records"
	poll 30 consumed_all "$group"
	kill -TERM "${pids[@]}" 2>/dev/null
	for i in 0 1; do
		wait "${pids[$i]}" || status=$?
	done
	for i in 1 2; do
		owned "$WORK/$group.$i.err" >"$WORK/$group.$i.owned"
		echo "  kcat -G $group member $i: $(grep -c . "$WORK/$group.$i") records; owned (generation partition):" \
			"$(paste -sd, - <"$WORK/$group.$i.owned" | sed 's/,/, /g')"
	done
	echo "  kcat requests (both members and kcat -P): $(requests_since "$WORK/$group.before")"
	consumed_all "$group"
	same "$name: every record consumed, kcat exiting 0 on SIGTERM" "$status" "$WORK/$group.got" "$WORK/$group.want"
	cat "$WORK/$group.1.owned" "$WORK/$group.2.owned" | sort | uniq -d >"$WORK/$group.twice"
	if [ -s "$WORK/$group.twice" ]; then
		fail "$name: no partition owned by both members in one generation: $(paste -sd, - <"$WORK/$group.twice")"
	else
		ok "$name: no partition owned by both members in one generation"
	fi
	if node "$HERE/groupoffsets.js" "$BROKER" "$group" "$group" >"$WORK/$group.offsets" 2>&1; then
		ok "$name: committed offsets equal the end offsets"
	else
		fail "$name: committed offsets equal the end offsets"
		cat "$WORK/$group.offsets"
	fi
}

kcat_group "kcat -G, two members, eager range,roundrobin" interop-kcat-group-eager
kcat_group "kcat -G, two members, cooperative-sticky" interop-kcat-group-cooperative \
	-X partition.assignment.strategy=cooperative-sticky

# --- kafkajs --------------------------------------------------------------

requests_total >"$WORK/kafkajs.before"
timeout 120 node "$HERE/kafkajs.js" "$BROKER" "$TOPIC_KJS" "$M" "$WORK/kafkajs.want" \
	>"$WORK/kafkajs.out" 2>"$WORK/kafkajs.err"
report kafkajs.js $? "$WORK/kafkajs"
echo "kafkajs requests, as the node counted them: $(requests_since "$WORK/kafkajs.before")"

if kc -L -J -t "$TOPIC_KJS" | metadata_check "$TOPIC_KJS" 3; then
	ok "kcat -L -t $TOPIC_KJS: the topic kafkajs created, 3 partitions"
else
	fail "kcat -L -t $TOPIC_KJS: the topic kafkajs created, 3 partitions"
fi

if [ -f "$WORK/kafkajs.want" ]; then
	consume "$WORK/kafkajs.got" -t "$TOPIC_KJS" -o beginning -e -f '%k:%s:%h\n'
	status=$?
	sort -o "$WORK/kafkajs.got" "$WORK/kafkajs.got"
	sort -o "$WORK/kafkajs.want" "$WORK/kafkajs.want"
	same "kcat -C reads back the kafkajs records, with headers" "$status" "$WORK/kafkajs.got" "$WORK/kafkajs.want"
else
	fail "kcat -C reads back the kafkajs records: kafkajs.js wrote none"
fi

# --- transactions ---------------------------------------------------------

# txn.py: librdkafka's transactions through confluent-kafka-python; it also
# runs kcat read_committed while a transaction is open.
TXN_PY=interop-txn-py
requests_total >"$WORK/txn.before"
timeout 180 "$VENV/bin/python" "$HERE/txn.py" "$BROKER" "$TXN_PY" "$WORK/txn.committed" "$WORK/txn.all" "$KCAT" \
	>"$WORK/txn.out" 2>"$WORK/txn.err"
report txn.py $? "$WORK/txn"
echo "confluent-kafka requests, as the node counted them: $(requests_since "$WORK/txn.before")"

# kcat, with Debian's librdkafka, reads what the transactional producer
# wrote: read_committed exactly the committed records, read_uncommitted
# the aborted ones too. -e ends each partition at its last stable offset or
# high watermark.
if [ -s "$WORK/txn.committed" ] && [ -s "$WORK/txn.all" ]; then
	for level in read_committed read_uncommitted; do
		consume "$WORK/txn.$level" -t "$TXN_PY-out" -o beginning -e -X isolation.level=$level -f '%k:%s\n'
		status=$?
		sort -o "$WORK/txn.$level" "$WORK/txn.$level"
		want=$WORK/txn.committed
		[ "$level" = read_committed ] || want=$WORK/txn.all
		sort -o "$want" "$want"
		what="exactly the committed records"
		[ "$level" = read_committed ] || what="every record, the aborted ones too"
		same "kcat -C -X isolation.level=$level -e of the transactional producer's topic: $what" \
			"$status" "$WORK/txn.$level" "$want"
	done
else
	fail "kcat -C -X isolation.level=read_committed of the transactional producer's topic: txn.py wrote no records"
fi

# groups848.py: librdkafka's KIP-848 consumer (group.protocol=consumer)
# through confluent-kafka-python.
requests_total >"$WORK/groups848.before"
timeout 180 "$VENV/bin/python" "$HERE/groups848.py" "$BROKER" interop-848-py >"$WORK/groups848.out" 2>"$WORK/groups848.err"
report groups848.py $? "$WORK/groups848"
echo "confluent-kafka KIP-848 requests, as the node counted them: $(requests_since "$WORK/groups848.before")"

requests_total >"$WORK/kafkajs-txn.before"
timeout 180 node "$HERE/kafkajs-txn.js" "$BROKER" interop-txn-kafkajs >"$WORK/kafkajs-txn.out" 2>"$WORK/kafkajs-txn.err"
report kafkajs-txn.js $? "$WORK/kafkajs-txn"
echo "kafkajs transaction requests, as the node counted them: $(requests_since "$WORK/kafkajs-txn.before")"

# --- Apache Kafka's Java client --------------------------------------------

# java/: kafka-clients (the version java/pom.xml pins) from Maven Central
# into ~/.m2, built with Maven; Main prints one "ok"/"FAIL" line a check.
# Java and Maven come from Debian when missing. A failed install or build
# fails this step only: the node's remaining checks still run.
JAVA_OK=1
if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
	echo "installing openjdk-17-jdk-headless and maven"
	export DEBIAN_FRONTEND=noninteractive
	if ! as_root apt-get update -qq || ! as_root apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null; then
		fail "java: apt-get install openjdk-17-jdk-headless maven"
		JAVA_OK=
	fi
fi
if [ -n "$JAVA_OK" ]; then
	echo "java: $(java -version 2>&1 | head -n 1); $(mvn -v 2>&1 | head -n 1 | sed 's/\x1b\[[0-9;]*m//g')"
	if ! mvn -q -B -f "$HERE/java/pom.xml" package dependency:build-classpath \
		-Dmdep.outputFile=target/classpath.txt >"$WORK/java-build.log" 2>&1; then
		fail "java: mvn package"
		tail -n 20 "$WORK/java-build.log"
		JAVA_OK=
	fi
fi
if [ -n "$JAVA_OK" ]; then
	requests_total >"$WORK/java.before"
	timeout 300 java -cp "$HERE/java/target/classes:$(cat "$HERE/java/target/classpath.txt")" skein.interop.Main "$BROKER" \
		>"$WORK/java.out" 2>"$WORK/java.err"
	report Main.java $? "$WORK/java"
	echo "kafka-clients requests, as the node counted them: $(requests_since "$WORK/java.before")"
fi
# Kafka Streams with group.protocol=streams (KIP-1071): tests/interop/streams.sh.
if [ -n "$JAVA_OK" ]; then
	. "$HERE/streams.sh"
	streams_check
fi

# --- Apache Kafka's command-line tools ----------------------------------------

# The tools of kafka-tools (java/pom.xml pins it), run from the same
# classpath as kafka-topics.sh and the others run them: each checked for the
# answer a Kafka user expects.
if [ -n "$JAVA_OK" ]; then
	tool() { # CLASS ARGS...: runs a tool's main class (org.apache.kafka.tools.CLASS, or CLASS when it is kafka.*); its stdout is the output
		local class=$1
		shift
		case $class in kafka.*) ;; *) class=org.apache.kafka.tools.$class ;; esac
		timeout 120 java -cp "$HERE/java/target/classes:$(cat "$HERE/java/target/classpath.txt")" "$class" "$@" 2>>"$WORK/tools.err"
	}
	check_tool() { # NAME STATUS OUTPUT-FILE PATTERN: ok when STATUS is 0 and the output has PATTERN
		if [ "$2" -eq 0 ] && grep -Eq -- "$4" "$3"; then ok "$1"; else
			fail "$1 (status $2)"
			head -n 5 "$3"
			tail -n 3 "$WORK/tools.err"
		fi
	}
	T=$WORK/tools.out
	tool TopicCommand --bootstrap-server "$BROKER" --create --topic tools-t --partitions 3 --replication-factor 1 >"$T"
	check_tool "kafka-topics --create: Created topic tools-t." $? "$T" '^Created topic tools-t\.$'
	tool TopicCommand --bootstrap-server "$BROKER" --describe --topic tools-t >"$T"
	check_tool "kafka-topics --describe: PartitionCount 3, each partition led by node 1 with Isr 1" $? "$T" 'PartitionCount: 3'
	[ "$(grep -c 'Leader: 1.*Isr: 1' "$T")" -eq 3 ] || fail "kafka-topics --describe: three partitions led, in sync"
	tool TopicCommand --bootstrap-server "$BROKER" --alter --topic tools-t --partitions 4 >"$T"
	status=$?
	tool TopicCommand --bootstrap-server "$BROKER" --describe --topic tools-t >"$T"
	check_tool "kafka-topics --alter --partitions 4, then --describe: PartitionCount 4" $((status + $?)) "$T" 'PartitionCount: 4'
	tool TopicCommand --bootstrap-server "$BROKER" --list >"$T"
	check_tool "kafka-topics --list: tools-t" $? "$T" '^tools-t$'
	# kafka-configs (kafka.admin.ConfigCommand): a topic's dynamic configs
	# with their synonyms, a deleted one gone, a bad value refused; a
	# broker's and the cluster default's dynamic configs.
	configs() { tool kafka.admin.ConfigCommand --bootstrap-server "$BROKER" "$@"; }
	configs --entity-type topics --entity-name tools-t --alter --add-config retention.ms=3600000,cleanup.policy=compact >"$T"
	check_tool "kafka-configs --alter --add-config retention.ms,cleanup.policy on a topic" $? "$T" '^Completed updating config for topic tools-t\.$'
	configs --entity-type topics --entity-name tools-t --describe >"$T"
	check_tool "kafka-configs --describe: the topic's dynamic cleanup.policy with its synonyms" $? "$T" \
		'^  cleanup\.policy=compact sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:cleanup\.policy=compact, DEFAULT_CONFIG:log\.cleanup\.policy=delete\}$'
	grep -q '^  retention\.ms=3600000 ' "$T" || fail "kafka-configs --describe: the topic's dynamic retention.ms"
	configs --entity-type topics --entity-name tools-t --alter --delete-config retention.ms >"$T"
	status=$?
	configs --entity-type topics --entity-name tools-t --describe >"$T"
	if [ $((status + $?)) -eq 0 ] && ! grep -q 'retention\.ms=' "$T" && grep -q '^  cleanup\.policy=compact ' "$T"; then
		ok "kafka-configs --alter --delete-config retention.ms, then --describe: only cleanup.policy is left"
	else
		fail "kafka-configs --delete-config retention.ms, then --describe: only cleanup.policy is left (status $status)"
		cat "$T"
	fi
	: >"$WORK/tools.err"
	if configs --entity-type topics --entity-name tools-t --alter --add-config retention.ms=soon >"$T" 2>&1; then
		fail "kafka-configs --add-config retention.ms=soon: refused"
	elif grep -q 'InvalidConfigurationException: .*retention\.ms' "$WORK/tools.err"; then
		ok "kafka-configs --add-config retention.ms=soon: refused, InvalidConfigurationException naming retention.ms"
	else
		fail "kafka-configs --add-config retention.ms=soon: InvalidConfigurationException naming retention.ms"
		tail -n 3 "$WORK/tools.err"
	fi
	configs --entity-type brokers --entity-name 1 --alter --add-config message.max.bytes=2000000 >"$T"
	status=$?
	configs --entity-type brokers --entity-default --alter --add-config log.retention.ms=604800001 >>"$T"
	status=$((status + $?))
	configs --entity-type topics --entity-name tools-t --describe --all >"$T"
	status=$((status + $?))
	if [ $status -eq 0 ] &&
		grep -q '^  max\.message\.bytes=2000000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:message\.max\.bytes=2000000, DEFAULT_CONFIG:message\.max\.bytes=' "$T" &&
		grep -q '^  retention\.ms=604800001 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log\.retention\.ms=604800001, ' "$T"; then
		ok "kafka-configs --alter on broker 1 and on the cluster default: the topic's --describe --all takes both"
	else
		fail "kafka-configs --alter on broker 1 and on the cluster default: the topic's --describe --all takes both (status $status)"
		grep -E 'max\.message\.bytes|retention\.ms' "$T"
	fi
	configs --entity-type brokers --entity-name 1 --alter --delete-config message.max.bytes >"$T"
	status=$?
	configs --entity-type brokers --entity-default --alter --delete-config log.retention.ms >>"$T"
	status=$((status + $?))
	configs --entity-type brokers --entity-name 1 --describe >"$T"
	status=$((status + $?))
	configs --entity-type brokers --entity-default --describe >>"$T"
	status=$((status + $?))
	if [ $status -eq 0 ] && [ "$(grep -c '=' "$T")" -eq 0 ]; then
		ok "kafka-configs --delete-config on broker 1 and the cluster default: no dynamic broker configs left"
	else
		fail "kafka-configs --delete-config on broker 1 and the cluster default: no dynamic broker configs left (status $status)"
		cat "$T"
	fi
	# A group's configs (KIP-848): set before the group exists, described
	# with their source, a value outside the node's bounds refused.
	configs --entity-type groups --entity-name tools-group --alter --add-config consumer.session.timeout.ms=50000 >"$T"
	status=$?
	# Without a name it lists the groups that have configs
	# (ListConfigResources, KIP-1142).
	configs --entity-type groups --describe >>"$T"
	if [ $((status + $?)) -eq 0 ] && grep -q '^Completed updating config for group tools-group\.$' "$T" &&
		grep -q '^Dynamic configs for group tools-group are:$' "$T" &&
		grep -q '^  consumer\.session\.timeout\.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:consumer\.session\.timeout\.ms=50000}$' "$T"; then
		ok "kafka-configs --entity-type groups --alter, then --describe (the groups with configs listed): the group's consumer.session.timeout.ms"
	else
		fail "kafka-configs --entity-type groups --alter, then --describe: the group's consumer.session.timeout.ms (status $status)"
		cat "$T"
	fi
	: >"$WORK/tools.err"
	if configs --entity-type groups --entity-name tools-group --alter --add-config consumer.heartbeat.interval.ms=100000 >"$T"; then
		fail "kafka-configs --entity-type groups --add-config consumer.heartbeat.interval.ms=100000: refused"
	elif grep -q 'InvalidConfigurationException: consumer\.heartbeat\.interval\.ms must be less than or equal to group\.consumer\.max\.heartbeat\.interval\.ms' "$WORK/tools.err"; then
		ok "kafka-configs --entity-type groups --add-config consumer.heartbeat.interval.ms=100000: refused, over group.consumer.max.heartbeat.interval.ms"
	else
		fail "kafka-configs --entity-type groups --add-config consumer.heartbeat.interval.ms=100000: InvalidConfigurationException"
		tail -n 3 "$WORK/tools.err"
	fi
	tool TopicCommand --bootstrap-server "$BROKER" --delete --topic tools-t >"$T"
	status=$?
	tool TopicCommand --bootstrap-server "$BROKER" --list >"$T"
	if [ $status -eq 0 ] && ! grep -q '^tools-t$' "$T"; then ok "kafka-topics --delete: gone from --list"; else fail "kafka-topics --delete: gone from --list (status $status)"; fi

	tool ProducerPerformance --topic tools-perf --num-records 20000 --record-size 100 --throughput -1 \
		--command-property bootstrap.servers="$BROKER" acks=all >"$T"
	check_tool "kafka-producer-perf-test: 20000 records sent, acks=all" $? "$T" '^20000 records sent'
	tool ConsumerPerformance --bootstrap-server "$BROKER" --topic tools-perf --num-records 20000 --group tools-perf-group >"$T"
	check_tool "kafka-consumer-perf-test --group: 20000 records consumed" $? "$T" ', 20000, '
	# group_totals FILE: the committed offsets, log end offsets and lags of
	# tools-perf in a --describe, each summed over the partitions.
	group_totals() { awk '$2 == "tools-perf" { c += $4; e += $5; l += $6 } END { print c + 0, e + 0, l + 0 }' "$1"; }
	tool consumer.group.ConsumerGroupCommand --bootstrap-server "$BROKER" --describe --group tools-perf-group >"$T"
	status=$?
	if [ $status -eq 0 ] && [ "$(group_totals "$T")" = "20000 20000 0" ]; then
		ok "kafka-consumer-groups --describe: every partition of tools-perf committed at its end (20000 in all), lag 0"
	else
		fail "kafka-consumer-groups --describe: committed at the end, lag 0 (status $status, totals $(group_totals "$T"))"
		cat "$T"
	fi
	tool consumer.group.ConsumerGroupCommand --bootstrap-server "$BROKER" --reset-offsets --to-earliest --execute \
		--group tools-perf-group --topic tools-perf >"$T"
	status=$?
	tool consumer.group.ConsumerGroupCommand --bootstrap-server "$BROKER" --describe --group tools-perf-group >"$T"
	status=$((status + $?))
	if [ $status -eq 0 ] && [ "$(group_totals "$T")" = "0 20000 20000" ]; then
		ok "kafka-consumer-groups --reset-offsets --to-earliest --execute, then --describe: offsets 0, lag 20000"
	else
		fail "kafka-consumer-groups --reset-offsets --to-earliest, then --describe: offsets 0, lag 20000 (status $status, totals $(group_totals "$T"))"
		cat "$T"
	fi

	tool VerifiableProducer --bootstrap-server "$BROKER" --topic tools-verifiable --max-messages 1000 --acks -1 >"$T"
	check_tool "kafka-verifiable-producer: 1000 sent, 1000 acked" $? "$T" '"name":"tool_data","sent":1000,"acked":1000'
	tool VerifiableConsumer --bootstrap-server "$BROKER" --topic tools-verifiable --group-id tools-verifiable --max-messages 1000 >"$T"
	status=$?
	# Each records_consumed event's count, its partitions' counts left out.
	consumed=$(grep '"name":"records_consumed"' "$T" | sed 's/"partitions":\[[^]]*\]//' | grep -o '"count":[0-9]*' |
		awk -F: '{ n += $2 } END { print n + 0 }')
	committed=$(grep -c '"name":"offsets_committed".*"success":true' "$T")
	if [ $status -eq 0 ] && [ "${consumed:-0}" -eq 1000 ] && [ "$committed" -gt 0 ]; then
		ok "kafka-verifiable-consumer: 1000 records consumed, offsets committed"
	else
		fail "kafka-verifiable-consumer: 1000 records consumed, offsets committed (status $status, consumed ${consumed:-0}, commits $committed)"
	fi
	tool TransactionsCommand --bootstrap-server "$BROKER" list >"$T"
	check_tool "kafka-transactions list: the transactional ids of the node's coordinators" $? "$T" \
		'^TransactionalId[[:space:]]+Coordinator[[:space:]]+ProducerId[[:space:]]+TransactionState'

	# kafka-transactions describe, describe-producers and abort: a
	# transaction left open by a producer that went away (confluent-kafka,
	# its process gone without ending it, the transaction's timeout ten
	# minutes) holds tools-txn's last stable offset back, so read_committed
	# readers see nothing, not even a later plain record, until an operator
	# aborts it.
	tool TopicCommand --bootstrap-server "$BROKER" --create --topic tools-txn --partitions 1 --replication-factor 1 >"$T"
	status=$?
	timeout 60 "$VENV/bin/python" - "$BROKER" >>"$T" 2>&1 <<'EOF'
import os, sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "tools-open", "transaction.timeout.ms": 600000})
p.init_transactions(30)
p.begin_transaction()
p.produce("tools-txn", b"open", partition=0)
if p.flush(30) != 0:
    sys.exit(1)
os._exit(0)  # gone, the transaction neither committed nor aborted
EOF
	status=$((status + $?))
	echo after | kc -P -t tools-txn -p 0 >>"$T" 2>&1
	status=$((status + $?))
	[ $status -eq 0 ] || { fail "kafka-transactions: a transaction left open on tools-txn (status $status)"; cat "$T"; }
	tool TransactionsCommand --bootstrap-server "$BROKER" describe --transactional-id tools-open >"$T"
	check_tool "kafka-transactions describe: tools-open Ongoing (timeout 600000 ms) on tools-txn-0" $? "$T" \
		'^1[[:space:]]+tools-open[[:space:]]+[0-9]+[[:space:]]+0[[:space:]]+Ongoing[[:space:]]+600000[[:space:]].*tools-txn-0'
	# open_at: the CurrentTransactionStartOffset column of describe-producers.
	open_at() { awk 'NR == 2 { print $NF }' "$1"; }
	tool TransactionsCommand --bootstrap-server "$BROKER" describe-producers --topic tools-txn --partition 0 >"$T"
	status=$?
	consume "$WORK/tools-txn.before" -t tools-txn -o beginning -e -X isolation.level=read_committed -f '%s\n'
	status=$((status + $?))
	if [ $status -eq 0 ] && [ "$(open_at "$T")" = 0 ] && [ ! -s "$WORK/tools-txn.before" ]; then
		ok "kafka-transactions describe-producers: a transaction open at offset 0; kcat read_committed reads nothing"
	else
		fail "kafka-transactions describe-producers: a transaction open at offset 0, nothing read_committed (status $status)"
		cat "$T" "$WORK/tools-txn.before"
	fi
	tool TransactionsCommand --bootstrap-server "$BROKER" abort --topic tools-txn --partition 0 --start-offset 0 >"$T"
	status=$?
	tool TransactionsCommand --bootstrap-server "$BROKER" describe-producers --topic tools-txn --partition 0 >"$T"
	status=$((status + $?))
	consume "$WORK/tools-txn.after" -t tools-txn -o beginning -e -X isolation.level=read_committed -f '%s\n'
	status=$((status + $?))
	if [ $status -eq 0 ] && [ "$(open_at "$T")" = None ] && [ "$(cat "$WORK/tools-txn.after")" = after ]; then
		ok "kafka-transactions abort --start-offset 0: no transaction open; kcat read_committed reads the plain record only"
	else
		fail "kafka-transactions abort: no transaction open, the plain record read_committed (status $status)"
		cat "$T" "$WORK/tools-txn.after"
	fi

	# Share groups (KIP-932): kafka-console-share-consumer reads a
	# one-partition topic in tools-share-group, whose
	# share.auto.offset.reset kafka-configs sets to earliest, and stays (it
	# waits for a 101st record) while kafka-share-groups (ShareGroupCommand)
	# describes the group; then, the consumer gone, resets, deletes the
	# offsets and deletes the group.
	share_groups() { tool consumer.group.ShareGroupCommand --bootstrap-server "$BROKER" "$@"; }
	# share_start FILE: tools-share-0's START-OFFSET in a --describe.
	share_start() { awk '$1 == "tools-share-group" && $2 == "tools-share" && $3 == 0 { print $4 }' "$1"; }
	SG=tools-share-group
	tool TopicCommand --bootstrap-server "$BROKER" --create --topic tools-share --partitions 1 --replication-factor 1 >"$T"
	status=$?
	configs --entity-type groups --entity-name $SG --alter --add-config share.auto.offset.reset=earliest >>"$T"
	status=$((status + $?))
	seq 1 100 | kc -P -t tools-share >>"$T" 2>&1
	status=$((status + $?))
	[ $status -eq 0 ] || { fail "share groups: tools-share created, $SG's share.auto.offset.reset set, 100 records produced (status $status)"; cat "$T"; }
	timeout 120 java -cp "$HERE/java/target/classes:$(cat "$HERE/java/target/classpath.txt")" \
		org.apache.kafka.tools.consumer.ConsoleShareConsumer --bootstrap-server "$BROKER" --topic tools-share \
		--group $SG --max-messages 101 >"$WORK/share-console.out" 2>"$WORK/share-console.err" &
	share_pid=$!
	# Every record accepted (the console consumer acknowledges a poll's
	# records with its next) moves the start offset to the end.
	deadline=$((SECONDS + 60))
	until share_groups --describe --group $SG >"$T" && [ "$(share_start "$T")" = 100 ]; do
		[ "$SECONDS" -lt "$deadline" ] && kill -0 "$share_pid" 2>/dev/null || break
		sleep 0.5
	done
	if [ "$(share_start "$T")" = 100 ] && [ "$(wc -l <"$WORK/share-console.out")" -eq 100 ]; then
		ok "kafka-console-share-consumer: 100 records; kafka-share-groups --describe: $SG tools-share 0 at START-OFFSET 100"
	else
		fail "kafka-console-share-consumer: 100 records; kafka-share-groups --describe: START-OFFSET 100 ($(wc -l <"$WORK/share-console.out") records)"
		cat "$T"
		tail -n 5 "$WORK/share-console.err"
	fi
	share_groups --list >"$T"
	check_tool "kafka-share-groups --list: $SG" $? "$T" "^$SG\$"
	share_groups --describe --members --group $SG >"$T"
	check_tool "kafka-share-groups --describe --members: one member, client id console-share-consumer, assigned tools-share:0" $? "$T" \
		"^$SG +[A-Za-z0-9_-]{22} +/[0-9.]+ +console-share-consumer +1 +tools-share:0\$"
	share_groups --describe --state --group $SG >"$T"
	check_tool "kafka-share-groups --describe --state: Stable, 1 member, coordinator node 1" $? "$T" \
		"^$SG +[0-9.]+:[0-9]+ +\(1\) +Stable +1\$"
	# SIGTERM: the consumer closes, acknowledging and leaving the group,
	# well within its 30 s close timeout.
	kill -TERM "$share_pid" 2>/dev/null
	deadline=$((SECONDS + 10))
	while kill -0 "$share_pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
		sleep 0.1
	done
	if kill -0 "$share_pid" 2>/dev/null; then
		fail "kafka-console-share-consumer stops on SIGTERM: still running after 10 s"
		kill -KILL "$share_pid" 2>/dev/null
	fi
	wait "$share_pid" 2>/dev/null
	share_groups --describe --state --group $SG >"$T"
	if [ $? -eq 0 ] && grep -q '^Processed a total of 100 messages$' "$WORK/share-console.err" &&
		grep -Eq "^$SG +[0-9.]+:[0-9]+ +\(1\) +Empty +0\$" "$T"; then
		ok "kafka-console-share-consumer stops on SIGTERM; kafka-share-groups --describe --state: Empty, 0 members"
	else
		fail "kafka-console-share-consumer stops on SIGTERM; --describe --state: Empty, 0 members"
		cat "$T"
		tail -n 5 "$WORK/share-console.err"
	fi
	share_groups --reset-offsets --to-earliest --execute --topic tools-share --group $SG >"$T"
	status=$?
	grep -Eq "^$SG +tools-share +0 +0\$" "$T" || status=1
	share_groups --describe --group $SG >"$T"
	if [ $((status + $?)) -eq 0 ] && [ "$(share_start "$T")" = 0 ]; then
		ok "kafka-share-groups --reset-offsets --to-earliest --execute --topic tools-share: NEW-OFFSET 0, then --describe: START-OFFSET 0"
	else
		fail "kafka-share-groups --reset-offsets --to-earliest --execute, then --describe: START-OFFSET 0 (status $status)"
		cat "$T"
	fi
	share_groups --delete-offsets --topic tools-share --group $SG >"$T"
	status=$?
	grep -Eq '^tools-share +Successful$' "$T" || status=1
	share_groups --describe --group $SG >"$T"
	if [ $((status + $?)) -eq 0 ] && grep -q "^Share group '$SG' has no offset information\.\$" "$T"; then
		ok "kafka-share-groups --delete-offsets --topic tools-share: Successful, then --describe: no offset information"
	else
		fail "kafka-share-groups --delete-offsets --topic tools-share, then --describe: no offset information (status $status)"
		cat "$T"
	fi
	share_groups --delete --group $SG >"$T"
	status=$?
	grep -q "^Deletion of requested share groups ('$SG') was successful\.\$" "$T" || status=1
	share_groups --list >"$T"
	if [ $((status + $?)) -eq 0 ] && ! grep -q "^$SG\$" "$T"; then
		ok "kafka-share-groups --delete --group: successful, then gone from --list"
	else
		fail "kafka-share-groups --delete --group, then gone from --list (status $status)"
		cat "$T"
	fi

	# Feature levels (KIP-584): kafka-features (FeatureCommand) describes
	# share.version finalized at 1, downgrades it to 0 (share groups off),
	# and upgrades it back, each change seen in the next describe (polled:
	# the answering broker's image may be a moment behind the controller).
	features() { tool FeatureCommand --bootstrap-server "$BROKER" "$@"; }
	# share_level FILE: share.version's FinalizedVersionLevel in a describe.
	share_level() { awk '$2 == "share.version" { for (i = 3; i < NF; i++) if ($i == "FinalizedVersionLevel:") print $(i + 1) }' "$1"; }
	# features_until LEVEL: describes until share.version is at LEVEL.
	features_until() {
		local deadline=$((SECONDS + 30))
		until features describe >"$T" && [ "$(share_level "$T")" = "$1" ]; do
			[ "$SECONDS" -lt "$deadline" ] || return 1
			sleep 0.2
		done
	}
	features describe >"$T"
	check_tool "kafka-features describe: share.version supported 0-1, finalized 1" $? "$T" \
		'^Feature: share\.version[[:space:]]+SupportedMinVersion: 0[[:space:]]+SupportedMaxVersion: 1[[:space:]]+FinalizedVersionLevel: 1[[:space:]]+Epoch: [0-9]+$'
	features downgrade --feature share.version=0 --dry-run >"$T"
	check_tool "kafka-features downgrade --dry-run: share.version can be downgraded to 0" $? "$T" '^share\.version can be downgraded to 0\.$'
	features downgrade --feature share.version=0 >"$T"
	status=$?
	grep -q '^share\.version was downgraded to 0\.$' "$T" || status=1
	if [ $status -eq 0 ] && features_until 0; then
		ok "kafka-features downgrade --feature share.version=0: downgraded, then describe: FinalizedVersionLevel 0"
	else
		fail "kafka-features downgrade --feature share.version=0, then describe: FinalizedVersionLevel 0 (status $status)"
		cat "$T"
		tail -n 3 "$WORK/tools.err"
	fi
	: >"$WORK/tools.err"
	features upgrade --feature share.version=2 >"$T"
	status=$?
	if [ $status -ne 0 ] && grep -q '^Could not upgrade share\.version to 2\. .*Local controller 1 only supports versions 0-1$' "$T"; then
		ok "kafka-features upgrade --feature share.version=2: refused, the controller supports 0-1"
	else
		fail "kafka-features upgrade --feature share.version=2 refused (status $status)"
		cat "$T"
	fi
	features upgrade --feature share.version=1 >"$T"
	status=$?
	grep -q '^share\.version was upgraded to 1\.$' "$T" || status=1
	if [ $status -eq 0 ] && features_until 1; then
		ok "kafka-features upgrade --feature share.version=1: upgraded, then describe: FinalizedVersionLevel 1"
	else
		fail "kafka-features upgrade --feature share.version=1, then describe: FinalizedVersionLevel 1 (status $status)"
		cat "$T"
		tail -n 3 "$WORK/tools.err"
	fi
fi

# --- stop -----------------------------------------------------------------

# SIGTERM stops the node gracefully; issue 3 allows 10 s, the poll 20.
stop_node "the node" "$NODE_PID" "$WORK/node.log"
NODE_PID=

if grep -q '"level":"\(error\|fatal\|panic\)"' "$WORK/node.log"; then
	fail "the node logged no errors"
	grep '"level":"\(error\|fatal\|panic\)"' "$WORK/node.log" | head -n 10
else
	ok "the node logged no errors"
fi

# --- a secured node ---------------------------------------------------------

# A node from a Kafka-style server.properties with PLAINTEXT, SASL_SSL
# (PLAIN users in a JAAS line) and SSL (client certificates required)
# listeners, certificates made with openssl; kcat, kafkajs and Kafka's Java
# tools use them as they would a secured Kafka.
SEC=$WORK/sec
SHOST=127.0.0.240
SEC_PID=
mkdir -p "$SEC"
if ! command -v openssl >/dev/null; then
	export DEBIAN_FRONTEND=noninteractive
	as_root apt-get update -qq && as_root apt-get install -y -qq openssl >/dev/null
fi
certs() {
	local ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
	openssl req -x509 "${ec[@]}" -keyout "$SEC/ca.key" -out "$SEC/ca.pem" -days 2 -subj "/CN=interop CA" &&
		openssl req "${ec[@]}" -keyout "$SEC/broker.key" -out "$SEC/broker.csr" -subj "/CN=$SHOST" &&
		printf 'subjectAltName=IP:%s\n' "$SHOST" >"$SEC/san.ext" &&
		openssl x509 -req -in "$SEC/broker.csr" -CA "$SEC/ca.pem" -CAkey "$SEC/ca.key" -CAcreateserial \
			-out "$SEC/broker.crt" -days 2 -extfile "$SEC/san.ext" &&
		cat "$SEC/broker.key" "$SEC/broker.crt" >"$SEC/broker.pem" &&
		openssl req "${ec[@]}" -keyout "$SEC/alice.key" -out "$SEC/alice.csr" -subj "/OU=eng/CN=Alice" &&
		openssl x509 -req -in "$SEC/alice.csr" -CA "$SEC/ca.pem" -CAkey "$SEC/ca.key" -CAcreateserial \
			-out "$SEC/alice.crt" -days 2
}
if ! certs >"$SEC/openssl.log" 2>&1; then
	fail "openssl: the test certificates"
	tail -n 5 "$SEC/openssl.log"
else
	cat >"$SEC/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
log.dirs=$SEC/data
listeners=PLAINTEXT://$SHOST:9092,SASL_SSL://$SHOST:9093,SSL://$SHOST:9094
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL
inter.broker.listener.name=PLAINTEXT
ssl.keystore.type=PEM
ssl.keystore.location=$SEC/broker.pem
ssl.truststore.type=PEM
ssl.truststore.location=$SEC/ca.pem
listener.name.ssl.ssl.client.auth=required
ssl.principal.mapping.rules=RULE:^CN=([^,]+),OU=eng\$/\$1/L,DEFAULT
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\
    username="admin" password="admin-secret" \\
    user_admin="admin-secret" user_alice="alice-secret";
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin;User:ANONYMOUS
admin.listen=$SHOST:9644
num.partitions=2
group.initial.rebalance.delay.ms=0
offsets.topic.replication.factor=1
PROPS
	"$ROOT/bin/skein" node --config "$SEC/server.properties" --log-format json >"$SEC/node.log" 2>&1 &
	SEC_PID=$!
	deadline=$((SECONDS + 30))
	until "$KCAT" -b "$SHOST:9092" -L -m 1 >/dev/null 2>&1; do
		if ! kill -0 "$SEC_PID" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
			fail "secured node: started from server.properties"
			tail -n 10 "$SEC/node.log"
			SEC_PID=
			break
		fi
		sleep 0.1
	done
fi
if [ -n "$SEC_PID" ]; then
	grep -q 'password' "$SEC/node.log" && grep -q 'secret' "$SEC/node.log" &&
		fail "secured node: its log shows no password" || ok "secured node: its log shows no password"
	# The authorizer is on: alice may use the sec- topics and read in any
	# group, granted with skein acl over the PLAINTEXT listener (whose
	# User:ANONYMOUS is a super user, as the inter-broker listener's must be).
	if "$ROOT/bin/skein" acl create --brokers "$SHOST:9092" --allow-principal User:alice --operation All \
		--topic sec- --resource-pattern-type prefixed >"$SEC/acl.out" 2>&1 &&
		"$ROOT/bin/skein" acl create --brokers "$SHOST:9092" --allow-principal User:alice --operation Read --group '*' >>"$SEC/acl.out" 2>&1; then
		ok "skein acl create: alice may use the sec- topics and any group"
	else
		fail "skein acl create: alice may use the sec- topics and any group"
		tail -n 5 "$SEC/acl.out"
	fi
	KSASL=(-b "$SHOST:9093" -X security.protocol=SASL_SSL -X sasl.mechanisms=PLAIN -X sasl.username=alice
		-X ssl.ca.location="$SEC/ca.pem")
	KSSL=(-b "$SHOST:9094" -X security.protocol=SSL -X ssl.ca.location="$SEC/ca.pem")
	seq 1 40 | sed 's/^/sasl-/' >"$SEC/sasl.want"
	if timeout 30 "$KCAT" "${KSASL[@]}" -X sasl.password=alice-secret -P -t sec-kcat <"$SEC/sasl.want" 2>"$SEC/kcat.err" &&
		timeout 30 "$KCAT" "${KSASL[@]}" -X sasl.password=alice-secret -C -t sec-kcat -e -o beginning -q 2>>"$SEC/kcat.err" |
		sort >"$SEC/sasl.got" && [ "$(sort "$SEC/sasl.want")" = "$(cat "$SEC/sasl.got")" ]; then
		ok "kcat SASL_SSL PLAIN: 40 records produced and read back"
	else
		fail "kcat SASL_SSL PLAIN: 40 records produced and read back"
		tail -n 5 "$SEC/kcat.err"
	fi
	# (kcat exits non-zero when a delivery fails: its message says why.)
	echo denied | timeout 30 "$KCAT" "${KSASL[@]}" -X sasl.password=alice-secret -P -t other-kcat >"$SEC/denied.out" 2>&1
	if grep -q 'Topic authorization failed' "$SEC/denied.out"; then
		ok "kcat SASL_SSL as alice to a topic no ACL gives her: Topic authorization failed"
	else
		fail "kcat SASL_SSL as alice to a topic no ACL gives her: Topic authorization failed"
		tail -n 3 "$SEC/denied.out"
	fi
	if timeout 30 "$KCAT" "${KSASL[@]}" -X sasl.password=wrong -L -m 5 >"$SEC/bad.out" 2>&1; then
		fail "kcat SASL_SSL PLAIN with a wrong password: refused"
	elif grep -qi 'authentication failed\|Invalid username or password' "$SEC/bad.out"; then
		ok "kcat SASL_SSL PLAIN with a wrong password: refused (Authentication failed)"
	else
		fail "kcat SASL_SSL PLAIN with a wrong password: refused, saying why"
		tail -n 3 "$SEC/bad.out"
	fi
	if seq 1 10 | timeout 30 "$KCAT" "${KSSL[@]}" -X ssl.certificate.location="$SEC/alice.crt" -X ssl.key.location="$SEC/alice.key" \
		-P -t sec-mtls 2>"$SEC/mtls.err" &&
		[ "$(timeout 30 "$KCAT" "${KSSL[@]}" -X ssl.certificate.location="$SEC/alice.crt" -X ssl.key.location="$SEC/alice.key" \
			-C -t sec-mtls -e -o beginning -q 2>>"$SEC/mtls.err" | wc -l)" -eq 10 ]; then
		ok "kcat SSL with a client certificate: 10 records produced and read back"
	else
		fail "kcat SSL with a client certificate: 10 records produced and read back"
		tail -n 5 "$SEC/mtls.err"
	fi
	if timeout 30 "$KCAT" "${KSSL[@]}" -L -m 5 >"$SEC/nocert.out" 2>&1; then
		fail "kcat SSL without a client certificate: refused"
	else
		ok "kcat SSL without a client certificate: refused"
	fi
	SCRAM_OK=
	if [ -n "$JAVA_OK" ]; then
		# SCRAM users, made with kafka-configs over the PLAINTEXT listener
		# (no ACLs yet: anyone may), then used by kcat and kafkajs.
		tool kafka.admin.ConfigCommand --bootstrap-server "$SHOST:9092" --entity-type users --entity-name alice --alter \
			--add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-scram],SCRAM-SHA-512=[password=alice-scram512]' >"$T"
		check_tool "kafka-configs --entity-type users --alter --add-config SCRAM-SHA-256=[...],SCRAM-SHA-512=[...]" $? "$T" \
			"Completed updating config for user alice" && SCRAM_OK=1
		tool kafka.admin.ConfigCommand --bootstrap-server "$SHOST:9092" --entity-type users --entity-name alice --describe >"$T"
		check_tool "kafka-configs --entity-type users --describe: alice's SCRAM credentials" $? "$T" \
			"SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096"
		# Client quotas, as kafka-configs sets and shows them.
		tool kafka.admin.ConfigCommand --bootstrap-server "$SHOST:9092" --entity-type clients --entity-name slow --alter \
			--add-config producer_byte_rate=1048576,consumer_byte_rate=2097152 >"$T"
		check_tool "kafka-configs --entity-type clients --alter --add-config producer_byte_rate=...,consumer_byte_rate=..." $? "$T" \
			"Completed updating config for client slow"
		tool kafka.admin.ConfigCommand --bootstrap-server "$SHOST:9092" --entity-type clients --entity-name slow --describe >"$T"
		check_tool "kafka-configs --entity-type clients --describe: slow's quotas" $? "$T" \
			"Quota configs for client-id 'slow' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0"
		tool kafka.admin.ConfigCommand --bootstrap-server "$SHOST:9092" --entity-type ips --entity-default --alter \
			--add-config connection_creation_rate=100 >"$T"
		check_tool "kafka-configs --entity-type ips --entity-default --alter --add-config connection_creation_rate=100" $? "$T" \
			"Completed updating default config for ips"
		# ACLs, as kafka-acls manages them, as the admin over SASL_SSL.
		cat >"$SEC/admin.properties" <<PROPS
security.protocol=SASL_SSL
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";
ssl.truststore.type=PEM
ssl.truststore.location=$SEC/ca.pem
PROPS
		ADMIN=(--bootstrap-server "$SHOST:9093" --command-config "$SEC/admin.properties")
		tool AclCommand "${ADMIN[@]}" --add --allow-principal User:bob --operation Read --operation Describe --topic sec-bob >"$T"
		check_tool "kafka-acls --add over SASL_SSL: bob may read sec-bob" $? "$T" "principal=User:bob, host=\*, operation=READ, permissionType=ALLOW"
		tool AclCommand "${ADMIN[@]}" --list --topic sec-bob >"$T"
		check_tool "kafka-acls --list --topic sec-bob: bob's READ and DESCRIBE" $? "$T" "principal=User:bob, host=\*, operation=DESCRIBE, permissionType=ALLOW"
		tool AclCommand "${ADMIN[@]}" --remove --force --allow-principal User:bob --operation Read --operation Describe --topic sec-bob >"$T"
		status=$?
		tool AclCommand "${ADMIN[@]}" --list --topic sec-bob >"$T"
		if [ "$status" -eq 0 ] && ! grep -q 'User:bob' "$T"; then ok "kafka-acls --remove: bob's ACLs gone"; else
			fail "kafka-acls --remove: bob's ACLs gone (status $status)"
			head -n 5 "$T"
		fi
	fi
	if [ -n "$SCRAM_OK" ]; then
		KSCRAM=(-b "$SHOST:9093" -X security.protocol=SASL_SSL -X sasl.mechanisms=SCRAM-SHA-256 -X sasl.username=alice
			-X sasl.password=alice-scram -X ssl.ca.location="$SEC/ca.pem")
		if seq 1 15 | timeout 30 "$KCAT" "${KSCRAM[@]}" -P -t sec-scram 2>"$SEC/scram.err" &&
			[ "$(timeout 30 "$KCAT" "${KSCRAM[@]}" -C -t sec-scram -e -o beginning -q 2>>"$SEC/scram.err" | wc -l)" -eq 15 ]; then
			ok "kcat SASL_SSL SCRAM-SHA-256: 15 records produced and read back"
		else
			fail "kcat SASL_SSL SCRAM-SHA-256: 15 records produced and read back"
			tail -n 5 "$SEC/scram.err"
		fi
	fi
	node "$HERE/kafkajs-sasl.js" "$SHOST:9093" "$SEC/ca.pem" sec-kafkajs ${SCRAM_OK:+alice-scram512} >"$SEC/kafkajs.out" 2>"$SEC/kafkajs.err"
	report kafkajs-sasl.js $? "$SEC/kafkajs"
	if [ -n "$SCRAM_OK" ]; then
		timeout 180 "$VENV/bin/python" "$HERE/sasl.py" "$SHOST:9093" "$SEC/ca.pem" sec-py alice-scram512 >"$SEC/sasl-py.out" 2>"$SEC/sasl-py.err"
		report sasl.py $? "$SEC/sasl-py"
	fi
	if [ -n "$JAVA_OK" ]; then
		cat >"$SEC/client.properties" <<PROPS
security.protocol=SASL_SSL
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";
ssl.truststore.type=PEM
ssl.truststore.location=$SEC/ca.pem
PROPS
		tool TopicCommand --bootstrap-server "$SHOST:9093" --command-config "$SEC/client.properties" \
			--create --topic sec-java --partitions 3 --replication-factor 1 >"$T"
		check_tool "kafka-topics over SASL_SSL (PLAIN, PEM truststore): Created topic sec-java." $? "$T" '^Created topic sec-java\.$'
		tool ProducerPerformance --topic sec-java --num-records 2000 --record-size 100 --throughput -1 \
			--command-config "$SEC/client.properties" --command-property bootstrap.servers="$SHOST:9093" acks=all >"$T"
		check_tool "kafka-producer-perf-test over SASL_SSL: 2000 records sent" $? "$T" '^2000 records sent'
		tool ConsumerPerformance --bootstrap-server "$SHOST:9093" --topic sec-java --num-records 2000 --timeout 60000 \
			--command-config "$SEC/client.properties" >"$T"
		check_tool "kafka-consumer-perf-test over SASL_SSL: 2000 records consumed" $? "$T" ', 2000, '
		if [ -n "$SCRAM_OK" ]; then
			cat >"$SEC/scram.properties" <<PROPS
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-scram512";
ssl.truststore.type=PEM
ssl.truststore.location=$SEC/ca.pem
PROPS
			tool ProducerPerformance --topic sec-java --num-records 1000 --record-size 100 --throughput -1 \
				--command-config "$SEC/scram.properties" --command-property bootstrap.servers="$SHOST:9093" acks=all >"$T"
			check_tool "kafka-producer-perf-test over SASL_SSL with SCRAM-SHA-512 (ScramLoginModule JAAS): 1000 records sent" $? "$T" '^1000 records sent'
		fi
	fi
	stop_node "the secured node" "$SEC_PID" "$SEC/node.log"
	SEC_PID=
fi

# --- a three-node cluster -------------------------------------------------

CHOSTS=(127.0.0.221 127.0.0.222 127.0.0.223)
VOTERS="1@127.0.0.221:9093,2@127.0.0.222:9093,3@127.0.0.223:9093"
CBROKERS="127.0.0.221:9092,127.0.0.222:9092,127.0.0.223:9092"
TOPIC_CLUSTER=interop-cluster
# start_cluster_node I: starts (or restarts, on its data) node I, its pid
# in CLUSTER_PIDS[I-1]. Nodes 1, 2 and 3 are in racks a, b and c, and
# their leaders send consumers to a replica in their rack (KIP-392).
start_cluster_node() {
	local i=$1 h=${CHOSTS[$(($1 - 1))]} racks=(a b c)
	mkdir -p "$WORK/c$i"
	"$ROOT/bin/skein" node --node-id "$i" --data-dir "$WORK/c$i" --listen "$h:9092" --admin-listen "$h:9644" \
		--cluster-listen "$h:9093" --controller-quorum "$VOTERS" --log-format json \
		--set group.initial.rebalance.delay.ms=0 --set "broker.rack=${racks[$((i - 1))]}" \
		--set replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector >>"$WORK/c$i.log" 2>&1 &
	CLUSTER_PIDS[$((i - 1))]=$!
}
for i in 1 2 3; do
	start_cluster_node "$i"
done
deadline=$((SECONDS + 60))
cluster_up=1
for h in "${CHOSTS[@]}"; do
	until timeout 10 "$KCAT" -b "$h:9092" -L -m 1 2>/dev/null | grep -q ' 3 brokers:'; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			cluster_up=0
			break
		fi
		sleep 0.2
	done
done
if [ "$cluster_up" -eq 1 ]; then
	ok "three nodes form a cluster: each lists three brokers"
else
	fail "three nodes form a cluster: not every node listed three brokers within 60 s"
	tail -n 20 "$WORK"/c?.log
fi

timeout 180 node "$HERE/kafkajs-cluster.js" "$CBROKERS" "$TOPIC_CLUSTER" "$M" "$WORK/cluster.want" \
	>"$WORK/kafkajs-cluster.out" 2>"$WORK/kafkajs-cluster.err"
report kafkajs-cluster.js $? "$WORK/kafkajs-cluster"

# kcat -L through node 3: three partitions, each with three replicas in sync.
md=$(timeout 30 "$KCAT" -b 127.0.0.223:9092 -L -t "$TOPIC_CLUSTER" 2>&1)
if [ "$(echo "$md" | grep -c 'replicas: [0-9],[0-9],[0-9], isrs: [0-9],[0-9],[0-9]')" -eq 3 ]; then
	ok "kcat -L: $TOPIC_CLUSTER's three partitions each have three replicas, all in sync"
else
	fail "kcat -L: $TOPIC_CLUSTER's partitions"
	echo "$md"
fi
if [ -f "$WORK/cluster.want" ]; then
	timeout 30 "$KCAT" -b 127.0.0.223:9092 -C -t "$TOPIC_CLUSTER" -o beginning -e -f '%k:%s\n' >"$WORK/cluster.got" 2>"$WORK/cluster.got.err"
	status=$?
	sort -o "$WORK/cluster.got" "$WORK/cluster.got"
	sort -o "$WORK/cluster.want" "$WORK/cluster.want"
	same "kcat -C through node 3 reads back the records kafkajs produced to the cluster" "$status" "$WORK/cluster.got" "$WORK/cluster.want"
else
	fail "kcat -C reads back the cluster's records: kafkajs-cluster.js wrote none"
fi

# Fetch from follower (KIP-392): Main's rack section reads, with a
# KafkaConsumer in rack b (client.rack), a partition node 1 (rack a) leads;
# node 2, in rack b, must have served every record, as its /metrics says.
if [ -n "$JAVA_OK" ] && [ "$cluster_up" -eq 1 ]; then
	timeout 120 java -cp "$HERE/java/target/classes:$(cat "$HERE/java/target/classpath.txt")" skein.interop.Main "$CBROKERS" rack \
		>"$WORK/java-rack.out" 2>"$WORK/java-rack.err"
	report "Main.java rack" $? "$WORK/java-rack"
	served=$(timeout 10 python3 -c 'import sys, urllib.request
for l in urllib.request.urlopen(sys.argv[1]).read().decode().splitlines():
    if l.startswith("skein_fetch_follower_records_total "): print(int(float(l.split()[1])))' http://127.0.0.222:9644/metrics)
	if [ "${served:-0}" -ge 300 ]; then
		ok "java client.rack=b: node 2 (rack b) served the 300 records as a follower"
	else
		fail "java client.rack=b: node 2 (rack b) served ${served:-no} records as a follower, want 300"
	fi
fi

# Kafka's verifiable producer and consumer (the clients of Kafka's own
# system tests) through a failover: the producer (acks=all, idempotent)
# writes to an RF 3 topic with min.insync.replicas=2; the leader of its
# partition 0 is killed -9 once 2000 records are acknowledged, and started
# again once another node leads that partition; once the producer is done
# and the node is back in every ISR, the consumer reads until it has every
# acknowledged record (or a minute passes), and verifiable.py checks the
# history: every acknowledged record read at its partition and offset,
# nothing read that was never sent, nothing read twice. (The verifiable
# producer does not retry: sends in flight to the killed node fail, and
# their records may or may not be in the log.)
# leader_of HOST PARTITION: the partition's leader as HOST's metadata says.
leader_of() { timeout 10 "$KCAT" -b "$1:9092" -L -t tools-failover 2>/dev/null | sed -n "s/^ *partition $2, leader \(-\?[0-9]*\),.*/\1/p"; }
# acked FILE: how many records the verifiable producer's output acknowledges.
acked() { cat "$1" 2>/dev/null | grep -c '"name":"producer_send_success"'; }
if [ -n "$JAVA_OK" ] && [ "$cluster_up" -eq 1 ]; then
	VP=$WORK/verifiable-producer.out
	tool TopicCommand --bootstrap-server "$CBROKERS" --create --topic tools-failover --partitions 3 \
		--replication-factor 3 --config min.insync.replicas=2 >"$T"
	check_tool "kafka-topics --create on the cluster: tools-failover, RF 3, min.insync.replicas=2" $? "$T" '^Created topic tools-failover\.$'
	tool VerifiableProducer --bootstrap-server "$CBROKERS" --topic tools-failover --max-messages 20000 \
		--throughput 2000 --acks -1 >"$VP" &
	vp_pid=$!
	deadline=$((SECONDS + 60))
	until [ "$(acked "$VP")" -ge 2000 ] || [ "$SECONDS" -ge "$deadline" ]; do sleep 0.1; done
	victim=$(leader_of 127.0.0.221 0)
	case $victim in
	1 | 2 | 3)
		kill -9 "${CLUSTER_PIDS[$((victim - 1))]}"
		wait "${CLUSTER_PIDS[$((victim - 1))]}" 2>/dev/null
		other=${CHOSTS[$((victim % 3))]}
		deadline=$((SECONDS + 60))
		until l=$(leader_of "$other" 0) && [ -n "$l" ] && [ "$l" != "$victim" ] && [ "$l" != -1 ]; do
			[ "$SECONDS" -lt "$deadline" ] || break
			sleep 0.2
		done
		echo "verifiable: node $victim (leader of tools-failover-0) killed at $(acked "$VP") acknowledged; node ${l:-none} leads it now"
		start_cluster_node "$victim"
		;;
	*) fail "verifiable: no leader of tools-failover-0 to kill ($victim)" ;;
	esac
	wait "$vp_pid"
	status=$?
	n=$(acked "$VP")
	# Every partition's ISR holds all three nodes again: the restarted node
	# caught up.
	deadline=$((SECONDS + 60))
	until [ "$(timeout 10 "$KCAT" -b 127.0.0.221:9092 -L -t tools-failover 2>/dev/null | grep -c 'isrs: [0-9],[0-9],[0-9]')" -eq 3 ]; do
		[ "$SECONDS" -lt "$deadline" ] || break
		sleep 0.2
	done
	if [ "$SECONDS" -lt "$deadline" ]; then ok "verifiable: the restarted node rejoined every ISR of tools-failover"; else
		fail "verifiable: the restarted node rejoined every ISR of tools-failover"
		timeout 10 "$KCAT" -b 127.0.0.221:9092 -L -t tools-failover
	fi
	check_tool "kafka-verifiable-producer through the leader's kill -9: every record sent ($n acknowledged)" $status "$VP" '"name":"tool_data","sent":20000,'
	# The consumer reads until it has read every acknowledged record (a
	# record whose send failed may be in the log as well, so no count of
	# records says when it is done), then stops on SIGTERM.
	VC=$WORK/verifiable-consumer.out
	timeout 120 java -cp "$HERE/java/target/classes:$(cat "$HERE/java/target/classpath.txt")" \
		org.apache.kafka.tools.VerifiableConsumer --bootstrap-server "$CBROKERS" --topic tools-failover \
		--group-id tools-failover --reset-policy earliest --verbose >"$VC" 2>>"$WORK/tools.err" &
	vc_pid=$!
	deadline=$((SECONDS + 60))
	until python3 "$HERE/verifiable.py" "$VP" "$VC" >"$T" 2>&1 || [ "$SECONDS" -ge "$deadline" ] ||
		! kill -0 "$vc_pid" 2>/dev/null; do
		sleep 0.5
	done
	kill -TERM "$vc_pid" 2>/dev/null
	wait "$vc_pid"
	if python3 "$HERE/verifiable.py" "$VP" "$VC" >"$T" 2>&1; then
		ok "kafka-verifiable-consumer after the failover: $(cat "$T")"
	else
		fail "kafka-verifiable-consumer after the failover: $(cat "$T")"
	fi
fi

# SIGTERM: each node moves its leaderships away and stops, status 0.
for i in 1 2 3; do
	stop_node "cluster node $i" "${CLUSTER_PIDS[$((i - 1))]}" "$WORK/c$i.log"
done
CLUSTER_PIDS=()
