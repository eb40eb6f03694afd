#!/bin/bash
# usage: tests/bench/topic_scale.sh SKEIN-BINARY PARTITIONS TAG
# (HOST: the loopback address to listen on, 127.0.0.1 by default)
# Starts `skein node` on ${HOST:-127.0.0.1}, times `skein topic create big -p N`
# (the CLI returns once every partition is open, or says how many are still
# opening), produces N keyed records (one to each of about 63% of the
# partitions, which makes their directories), then times `skein topic
# delete big`: the CLI's return, until no big-<n> directory is left (all
# renamed to their deleted names) and until those are removed too. Last it
# times a SIGTERM stop.
B=$1; N=$2; TAG=$3; D=${TMPDIR:-/tmp}/topic-scale-$TAG-$N; A=${HOST:-127.0.0.1}:9092
rm -rf $D
$B node --data-dir $D --listen $A --admin-listen ${HOST:-127.0.0.1}:9644 --cpuprofile $D.prof > $D.log 2>&1 &
P=$!
for i in $(seq 100); do $B --brokers $A topic list >/dev/null 2>&1 && break; sleep 0.1; done
el() { echo "$(date +%s.%N) - $1" | bc; }
t0=$(date +%s.%N); $B --brokers $A --timeout 10m topic create big -p $N; echo "rc=$? create cli $(el $t0) s"
t0=$(date +%s.%N); seq $N | sed 's/.*/k&:v/' | $B --brokers $A produce big -k : ; echo "rc=$? produce $N records $(el $t0) s, $(ls $D | grep -c '^big-[0-9]*$') partition directories"
t0=$(date +%s.%N); $B --brokers $A topic delete big; echo "rc=$? delete cli $(el $t0) s"
until [ "$(ls $D | grep -c '^big-[0-9]*$')" -eq 0 ]; do sleep 0.2; done; echo "delete: all renamed after $(el $t0) s"
until [ "$(ls $D | grep -c '^big-')" -eq 0 ]; do sleep 0.5; done; echo "delete: all removed after $(el $t0) s"
t0=$(date +%s.%N); kill $P; wait $P; echo "stop exit $? after $(el $t0) s"
rm -rf $D
