# Sourced by run.sh (which defines HERE, WORK, BROKER, JAVA_OK, ok and
# fail): a Kafka Streams 4.2.1 application with group.protocol=streams
# (KIP-1071) and exactly_once_v2, two instances of two threads each over a
# 4-partition topic (a repartition topic and a count with a changelog, both
# created by the node from the topology); one instance is killed with
# SIGKILL mid-run and, once its session ends, the other takes its tasks;
# the output must hold each key's exact count. The group's
# streams.session.timeout.ms and streams.heartbeat.interval.ms are set
# first to the least the node allows (run.sh lowers
# group.streams.min.session.timeout.ms and
# group.streams.min.heartbeat.interval.ms to 6 s and 1 s; Kafka's are 45 s
# and 5 s), so the killed instance's tasks move within seconds. Then Kafka's kafka-streams-groups tool lists and describes the
# group. The application is tests/interop/streams, its own Maven module.
streams_check() {
	local S="$HERE/streams" cp j pa pb
	if ! mvn -q -B -f "$S/pom.xml" package dependency:build-classpath \
		-Dmdep.outputFile=target/classpath.txt >"$WORK/streams-build.log" 2>&1; then
		fail "streams: mvn package"
		tail -n 20 "$WORK/streams-build.log"
		return
	fi
	cp="$S/target/classes:$(cat "$S/target/classpath.txt")"
	j=(java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$cp")
	"${j[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "$BROKER" --create --topic streams-in --partitions 4 >/dev/null 2>&1
	"${j[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "$BROKER" --create --topic streams-out --partitions 2 >/dev/null 2>&1
	if ! "${j[@]}" skein.interop.streams.Main group-config "$BROKER" streams-app \
		streams.session.timeout.ms=6000 streams.heartbeat.interval.ms=1000 >"$WORK/streams-config.log" 2>&1; then
		fail "streams: group configs streams.session.timeout.ms and streams.heartbeat.interval.ms"
		tail -n 5 "$WORK/streams-config.log"
	fi
	"${j[@]}" skein.interop.streams.Main run "$BROKER" streams-app streams-in streams-out "$WORK/streams-a" >"$WORK/streams-a.log" 2>&1 &
	pa=$!
	"${j[@]}" skein.interop.streams.Main run "$BROKER" streams-app streams-in streams-out "$WORK/streams-b" >"$WORK/streams-b.log" 2>&1 &
	pb=$!
	sleep 15
	"${j[@]}" skein.interop.streams.Main produce "$BROKER" streams-in 30000 10 >/dev/null 2>&1
	kill -9 "$pb"
	"${j[@]}" skein.interop.streams.Main produce "$BROKER" streams-in 30000 10 >/dev/null 2>&1
	sleep 15
	if timeout 120 "${j[@]}" skein.interop.streams.Main verify "$BROKER" streams-out 60000 10 >"$WORK/streams-verify.out" 2>&1; then
		ok "streams: group.protocol=streams, EOS v2, one of two instances killed: exact counts"
	else
		fail "streams: exact counts ($(tail -n 1 "$WORK/streams-verify.out"))"
		tail -n 20 "$WORK/streams-a.log"
	fi
	if "${j[@]}" org.apache.kafka.tools.streams.StreamsGroupCommand --bootstrap-server "$BROKER" --list 2>/dev/null | grep -qx streams-app &&
		"${j[@]}" org.apache.kafka.tools.streams.StreamsGroupCommand --bootstrap-server "$BROKER" --describe --group streams-app --members 2>/dev/null | grep -q "ACTIVE:"; then
		ok "streams: kafka-streams-groups --list and --describe --members"
	else
		fail "streams: kafka-streams-groups --list and --describe --members"
	fi
	kill "$pa" 2>/dev/null
	wait "$pa" 2>/dev/null
}
