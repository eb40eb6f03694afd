#!/usr/bin/env bash
# Differential tests: Apache Kafka's broker (tests/kafkaref/pom.xml pins the
# release) and Skein side by side, the same requests to both, the answers
# compared field by field (tests/diff/doc.go says how; differences.go lists
# the intended differences with their reasons). .ci/run runs it after
# tests/interop/run.sh; it also runs alone, from any directory:
# tests/diff/run.sh [go test flags, e.g. -run TestCreateTopics -v]
#
# Java 17 and Maven come from Debian when missing (as tests/interop/run.sh
# installs them); Kafka's jars come from Maven Central into ~/.m2, resolved
# into tests/kafkaref/target/classpath.txt. The Kafka broker runs with a
# 1 GiB heap.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export PATH="$PATH:/usr/local/go/bin"

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
	echo "installing openjdk-17-jdk-headless and maven"
	export DEBIAN_FRONTEND=noninteractive
	as_root apt-get update -qq
	as_root apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
fi
echo "java: $(java -version 2>&1 | head -n 1); $(mvn -v 2>&1 | head -n 1 | sed 's/\x1b\[[0-9;]*m//g')"

POM=$ROOT/tests/kafkaref/pom.xml
CLASSPATH_FILE=$ROOT/tests/kafkaref/target/classpath.txt
mvn -q -B -Dstyle.color=never -f "$POM" package dependency:build-classpath -Dmdep.outputFile="$CLASSPATH_FILE"

cd "$ROOT"
KAFKAREF_CLASSPATH=$(cat "$CLASSPATH_FILE") go test -tags kafkadiff -count=1 -timeout 15m ./tests/diff/ "$@"
# The broker benchmark's kafka target and its -perftest mode (Kafka's perf
# tools as the load), on a few records: tests/bench/kafka_test.go.
KAFKAREF_CLASSPATH=$(cat "$CLASSPATH_FILE") go test -tags kafkadiff -count=1 -timeout 10m -run 'TestKafkaSmoke|TestPerfSmoke' ./tests/bench/
