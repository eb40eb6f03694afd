"""librdkafka's KIP-848 consumer (group.protocol=consumer, through
confluent-kafka-python) against a Skein node.

Two consumers of one group subscribe to a topic of four partitions; once the
coordinator has split the partitions between them (disjoint, neither empty,
covering all), records are produced, and together they consume every record
exactly once, each only from partitions it owns at the time; both commit,
and the group's committed offsets equal the end offsets. The admin client
then describes the group as a consumer-protocol group with its two members.
When one member leaves, the other takes every partition.

Usage: python groups848.py BROKER PREFIX

Output: one line per check, "ok <name>" or "FAIL <name>: <why>", which
run.sh counts. Exits 1 if any check failed.
"""

import sys
import time

import confluent_kafka
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, Producer, TopicPartition, libversion
from confluent_kafka.admin import AdminClient, NewTopic

from checks import check, expect
from checks import main as check_main

if len(sys.argv) != 3:
    print(__doc__.split("\n\n")[2], file=sys.stderr)
    sys.exit(2)
BROKER, PREFIX = sys.argv[1:3]
TOPIC, GROUP = PREFIX + "-topic", PREFIX + "-group"
PARTITIONS = 4
RECORDS = 400
TIMEOUT = 30  # seconds, for each wait


class Member:
    """A KIP-848 consumer and the partitions it owns, kept from its
    incremental assign and revoke callbacks."""

    def __init__(self, name):
        self.name = name
        self.owned = set()
        self.consumed = 0
        self.c = Consumer({
            "bootstrap.servers": BROKER,
            "group.id": GROUP,
            "group.protocol": "consumer",
            "client.id": f"{PREFIX}-{name}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        })
        self.c.subscribe([TOPIC], on_assign=self.assigned, on_revoke=self.revoked, on_lost=self.revoked)

    def assigned(self, _consumer, partitions):
        self.owned |= {p.partition for p in partitions}

    def revoked(self, _consumer, partitions):
        self.owned -= {p.partition for p in partitions}

    def poll(self):
        """Polls once; returns the records, each checked to come from a
        partition this member owns."""
        out = []
        for m in self.c.consume(num_messages=100, timeout=0.1):
            if m.error():
                raise KafkaException(m.error())
            if m.partition() not in self.owned:
                raise AssertionError(f"{self.name} read partition {m.partition()}, owning {sorted(self.owned)}")
            out.append(m.key().decode())
        self.consumed += len(out)
        return out


def wait(what, cond, members):
    """Polls the members in turn until cond() holds, within TIMEOUT."""
    deadline = time.monotonic() + TIMEOUT
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {TIMEOUT} s (owned: "
                               + ", ".join(f"{m.name} {sorted(m.owned)}" for m in members) + ")")
        for m in members:
            got = m.poll()
            if got:
                raise AssertionError(f"{m.name} read {len(got)} records before any was produced")


def main():
    print(f"confluent-kafka {confluent_kafka.__version__}, librdkafka {libversion()[0]}", flush=True)
    admin = AdminClient({"bootstrap.servers": BROKER})
    members = []

    @check(f"confluent-kafka create_topics {TOPIC} ({PARTITIONS} partitions)")
    def _():
        for f in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
            f.result(TIMEOUT)

    @check("librdkafka KIP-848 consumers (group.protocol=consumer): two members split the partitions")
    def _():
        members.extend([Member("m1"), Member("m2")])
        a, b = members
        wait("the members split the partitions",
             lambda: a.owned and b.owned and not a.owned & b.owned and a.owned | b.owned == set(range(PARTITIONS)),
             members)

    @check(f"librdkafka KIP-848 consumers: {RECORDS} records consumed exactly once, each from its owner")
    def _():
        p = Producer({"bootstrap.servers": BROKER})
        for i in range(RECORDS):
            p.produce(TOPIC, key=f"k{i}", value=f"v{i}", partition=i % PARTITIONS)
        expect("records left unflushed", p.flush(TIMEOUT), 0)
        seen = []
        deadline = time.monotonic() + TIMEOUT
        while len(seen) < RECORDS:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(seen)} of {RECORDS} records consumed in {TIMEOUT} s")
            for m in members:
                seen += m.poll()
        expect("keys consumed", sorted(seen), sorted(f"k{i}" for i in range(RECORDS)))
        if not all(m.consumed for m in members):
            raise AssertionError("records per member: " + ", ".join(f"{m.name} {m.consumed}" for m in members))

    @check("librdkafka KIP-848 consumers: commit, then the group's committed offsets are the end offsets")
    def _():
        for m in members:
            m.c.commit(asynchronous=False)
        tps = [TopicPartition(TOPIC, i) for i in range(PARTITIONS)]
        committed = members[0].c.committed(tps, timeout=TIMEOUT)
        got = {tp.partition: tp.offset for tp in committed}
        want = {i: members[0].c.get_watermark_offsets(TopicPartition(TOPIC, i), timeout=TIMEOUT)[1] for i in range(PARTITIONS)}
        expect("committed offsets", got, want)
        offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(GROUP)])[GROUP].result(TIMEOUT)
        expect("list_consumer_group_offsets", {tp.partition: tp.offset for tp in offsets.topic_partitions}, want)

    @check("confluent-kafka describe_consumer_groups: a consumer-protocol group, Stable, its two members")
    def _():
        d = admin.describe_consumer_groups([GROUP])[GROUP].result(TIMEOUT)
        expect("type", str(d.type), "ConsumerGroupType.CONSUMER")
        expect("state", str(d.state), "ConsumerGroupState.STABLE")
        expect("members", sorted(m.client_id for m in d.members), [f"{PREFIX}-m1", f"{PREFIX}-m2"])

    @check("librdkafka KIP-848 consumers: when one member leaves, the other owns every partition")
    def _():
        a, b = members
        b.c.close()
        members.remove(b)
        wait("the remaining member owns every partition", lambda: a.owned == set(range(PARTITIONS)), members)

    for m in members:
        m.c.close()


check_main("groups848.py", main)
