#!/bin/bash
# usage: tests/bench/topic_scale.sh SKEIN-BINARY PARTITIONS TAG
# (HOST: the loopback address to listen on, 127.0.0.1 by default)
# Starts `skein node` on ${HOST:-127.0.0.1}, times `skein topic create big -p N` (CLI
# return, and until every partition directory exists), then `skein topic
# delete big` (CLI return, until no big-<n> directory is left, i.e. all
# renamed to *-delete, and until those are removed too).
B=$1; N=$2; TAG=$3; D=${TMPDIR:-/tmp}/topic-scale-$TAG-$N; A=${HOST:-127.0.0.1}:9092
rm -rf $D
$B node --data-dir $D --listen $A --admin-listen ${HOST:-127.0.0.1}:9644 --cpuprofile $D.prof > $D.log 2>&1 &
P=$!
for i in $(seq 100); do $B --brokers $A topic list >/dev/null 2>&1 && break; sleep 0.1; done
el() { echo "$(date +%s.%N) - $1" | bc; }
t0=$(date +%s.%N); $B --brokers $A topic create big -p $N; echo "rc=$? create cli $(el $t0) s"
until [ "$(ls $D | grep -c '^big-[0-9]*$')" -ge $N ]; do sleep 0.2; done; echo "create: all $N directories after $(el $t0) s"
t0=$(date +%s.%N); $B --brokers $A topic delete big; echo "rc=$? delete cli $(el $t0) s"
until [ "$(ls $D | grep -c '^big-[0-9]*$')" -eq 0 ]; do sleep 0.2; done; echo "delete: all renamed after $(el $t0) s"
until [ "$(ls $D | grep -c '^big-')" -eq 0 ]; do sleep 0.5; done; echo "delete: all removed after $(el $t0) s"
t0=$(date +%s.%N); kill $P; wait $P; echo "stop exit $? after $(el $t0) s"
rm -rf $D
