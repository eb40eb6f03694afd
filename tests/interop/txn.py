"""librdkafka's transactions (through confluent-kafka-python) against a Skein node.

A transactional producer (transactional.id, init_transactions, begin,
commit, abort) writes OUT: committed transactions, an aborted one, one
left open while consumers read, a zombie fenced by a second producer with
the same transactional.id, and a consume-transform-produce loop copying IN
with send_offsets_to_transaction (KIP-447: the consumer's group metadata),
first aborted, then rewound and committed. read_committed consumers read
exactly the committed records, read_uncommitted ones every record written,
and the group's offsets (OffsetFetch) are the ones the committed transaction
sent. run.sh then reads OUT with kcat (librdkafka 2.0.2), read_committed and
read_uncommitted, and compares with COMMITTED_FILE and ALL_FILE.

Usage: python txn.py BROKER PREFIX COMMITTED_FILE ALL_FILE [KCAT]

With KCAT, kcat -X isolation.level=read_committed -e also reads OUT while a
transaction is open: it must stop at the last stable offset.

Output: one line per check, "ok <name>" or "FAIL <name>: <why>", which
run.sh counts. Exits 1 if any check failed.
"""

import subprocess
import sys
import time

import confluent_kafka
from confluent_kafka import (OFFSET_BEGINNING, Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, Producer,
                             TopicPartition, libversion)
from confluent_kafka.admin import AdminClient, NewTopic

from checks import check, expect
from checks import main as check_main

if len(sys.argv) not in (5, 6):
    print(__doc__.split("\n\n")[2], file=sys.stderr)
    sys.exit(2)
BROKER, PREFIX, COMMITTED_FILE, ALL_FILE = sys.argv[1:5]
KCAT = sys.argv[5] if len(sys.argv) == 6 else None
IN, OUT = PREFIX + "-in", PREFIX + "-out"
GROUP = PREFIX + "-copier"
PARTITIONS = 3
INPUT = 30  # records in IN
TIMEOUT = 30  # seconds, for each blocking librdkafka call

errors = []  # delivery errors since the last flush


def delivered(err, msg):
    if err is not None:
        errors.append(err)


def flush(p):
    """Flushes p: every record sent is acknowledged, without error."""
    left = p.flush(TIMEOUT)
    expect("records left unflushed", left, 0)
    if errors:
        e = list(errors)
        errors.clear()
        raise AssertionError(f"delivery errors: {e}")


class Log:
    """Every record written to OUT as "key:value", and whether it was committed."""

    def __init__(self):
        self.committed, self.all_, self.uncommitted = [], [], []

    def send(self, p, key, value, partition=None):
        kw = {} if partition is None else {"partition": partition}
        p.produce(OUT, key=key, value=value, on_delivery=delivered, **kw)
        self.uncommitted.append(f"{key}:{value}")

    def resolve(self, committed):
        """Ends the records sent since the last resolve: committed or aborted."""
        if committed:
            self.committed += self.uncommitted
        self.all_ += self.uncommitted
        self.uncommitted = []


log = Log()


def read(topic, committed, group=None):
    """Reads topic from the beginning to its end (librdkafka's partition EOF:
    the last stable offset for read_committed, the high watermark otherwise),
    returning the records as "key:value", sorted."""
    c = Consumer({
        "bootstrap.servers": BROKER,
        "group.id": group or f"{PREFIX}-reader",
        "isolation.level": "read_committed" if committed else "read_uncommitted",
        "enable.partition.eof": True,
        "enable.auto.commit": False,
    })
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        out, eof = [], set()
        deadline = time.monotonic() + TIMEOUT
        while len(eof) < PARTITIONS:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no end of partitions {sorted(set(range(PARTITIONS)) - eof)} of {topic}")
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                    continue
                raise KafkaException(m.error())
            eof.discard(m.partition())
            out.append(f"{m.key().decode()}:{m.value().decode()}")
        return sorted(out)
    finally:
        c.close()


def producer(tid):
    return Producer({"bootstrap.servers": BROKER, "transactional.id": tid, "linger.ms": 5})


def main():
    print(f"confluent-kafka {confluent_kafka.__version__}, librdkafka {libversion()[0]}", flush=True)
    admin = AdminClient({"bootstrap.servers": BROKER})

    @check(f"confluent-kafka create_topics {IN} and {OUT} ({PARTITIONS} partitions)")
    def _():
        for f in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in (IN, OUT)]).values():
            f.result(TIMEOUT)

    @check(f"confluent-kafka plain producer: {INPUT} records into {IN}")
    def _():
        p = Producer({"bootstrap.servers": BROKER})
        for i in range(INPUT):
            p.produce(IN, key=f"k{i % 7}", value=f"in-{i}", on_delivery=delivered)
        flush(p)

    p = producer(PREFIX + "-tx")

    @check("librdkafka transactional producer: init_transactions (InitProducerId)")
    def _():
        p.init_transactions(TIMEOUT)

    # NB: abort_transaction purges the records not yet sent, failing their
    # delivery: each transaction flushes first, so that the aborted records
    # are in the log too.
    def transaction(commit, values):
        p.begin_transaction()
        for v in values:
            log.send(p, f"k-{v}", v)
        flush(p)
        if commit:
            p.commit_transaction(TIMEOUT)
        else:
            p.abort_transaction(TIMEOUT)
        log.resolve(commit)

    @check("librdkafka transactional producer: a transaction of 10 records committed")
    def _():
        transaction(True, [f"c1-{i}" for i in range(10)])

    @check("librdkafka transactional producer: a transaction of 10 records aborted")
    def _():
        transaction(False, [f"a1-{i}" for i in range(10)])

    @check("librdkafka read_committed consumer: the committed records, not the aborted ones")
    def _():
        expect("read_committed", read(OUT, True), sorted(log.committed))

    @check("librdkafka read_uncommitted consumer: the aborted records too")
    def _():
        expect("read_uncommitted", read(OUT, False), sorted(log.all_))

    # A transaction left open while consumers read: read_committed stops at
    # its first record (the last stable offset), read_uncommitted reads it.
    @check("librdkafka transaction open: read_committed stops before it, read_uncommitted reads it")
    def _():
        p.begin_transaction()
        for i in range(5):
            log.send(p, f"k-o-{i}", f"o-{i}")
        flush(p)
        expect("read_committed", read(OUT, True), sorted(log.committed))
        expect("read_uncommitted", read(OUT, False), sorted(log.all_ + log.uncommitted))
        lso = high = 0
        for part in range(PARTITIONS):
            rc = Consumer({"bootstrap.servers": BROKER, "group.id": f"{PREFIX}-wm", "isolation.level": "read_committed"})
            ru = Consumer({"bootstrap.servers": BROKER, "group.id": f"{PREFIX}-wm", "isolation.level": "read_uncommitted"})
            lso += rc.get_watermark_offsets(TopicPartition(OUT, part), TIMEOUT, cached=False)[1]
            high += ru.get_watermark_offsets(TopicPartition(OUT, part), TIMEOUT, cached=False)[1]
            rc.close()
            ru.close()
        if lso >= high:
            raise AssertionError(f"ListOffsets latest: read_committed {lso}, read_uncommitted {high}: want fewer")

    if KCAT:
        @check("kcat -X isolation.level=read_committed -e with a transaction open: the committed records")
        def _():
            r = subprocess.run([KCAT, "-b", BROKER, "-C", "-t", OUT, "-o", "beginning", "-e", "-q",
                                "-X", "isolation.level=read_committed", "-f", "%k:%s\n"],
                               capture_output=True, text=True, timeout=TIMEOUT)
            expect("kcat exit status", r.returncode, 0)
            expect("kcat read_committed", sorted(r.stdout.splitlines()), sorted(log.committed))

    @check("librdkafka transactional producer: the open transaction committed, then read_committed reads it")
    def _():
        p.commit_transaction(TIMEOUT)
        log.resolve(True)
        expect("read_committed", read(OUT, True), sorted(log.committed))

    # Zombie fencing: a second producer with the same transactional.id
    # bumps the epoch, aborting the first one's open transaction; the first
    # can no longer commit.
    p2 = producer(PREFIX + "-tx")

    @check("librdkafka zombie fencing: a second init_transactions aborts the first producer's open transaction")
    def _():
        p.begin_transaction()
        for i in range(5):
            log.send(p, f"k-z-{i}", f"z-{i}")
        flush(p)
        p2.init_transactions(TIMEOUT)
        try:
            p.commit_transaction(TIMEOUT)
        except KafkaException as e:
            err = e.args[0]
            if not err.fatal() or err.code() not in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                                                     KafkaError.INVALID_PRODUCER_EPOCH):
                raise AssertionError(f"commit by the zombie: {err}, want a fatal fencing error") from None
        else:
            raise AssertionError("the zombie committed")
        log.resolve(False)
        expect("read_committed", read(OUT, True), sorted(log.committed))

    # Consume-transform-produce: a consumer in GROUP reads IN, the producer
    # writes a copy of each record to OUT and sends the consumer's positions
    # to the transaction. The first attempt, half the input, is aborted:
    # the group commits nothing and the consumer rewinds to what it has
    # committed (nothing: the beginning). The second copies everything and
    # commits.
    c = Consumer({
        "bootstrap.servers": BROKER,
        "group.id": GROUP,
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": True,
    })
    c.subscribe([IN])

    def consume(n):
        """Polls c for n records, or all of IN when n is None."""
        got, eof = [], set()
        deadline = time.monotonic() + TIMEOUT
        while (n is None and len(eof) < PARTITIONS) or (n is not None and len(got) < n):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(got)} records of {IN} consumed")
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                    continue
                raise KafkaException(m.error())
            eof.discard(m.partition())
            got.append(m)
        return got

    def copy(msgs):
        """Begins a transaction copying msgs to OUT, with the consumer's
        positions sent to it; returns the positions."""
        p2.begin_transaction()
        for m in msgs:
            log.send(p2, m.key().decode(), "copy-" + m.value().decode())
        flush(p2)
        positions = c.position(c.assignment())
        p2.send_offsets_to_transaction(positions, c.consumer_group_metadata(), TIMEOUT)
        return {tp.partition: tp.offset for tp in positions}

    def end(commit):
        if commit:
            p2.commit_transaction(TIMEOUT)
        else:
            p2.abort_transaction(TIMEOUT)
        log.resolve(commit)

    def offset_fetch(require_stable):
        """The group's offsets of IN by partition, as librdkafka's admin client
        reads them (OffsetFetch): (offset, error code or None)."""
        req = ConsumerGroupTopicPartitions(GROUP, [TopicPartition(IN, p) for p in range(PARTITIONS)])
        res = admin.list_consumer_group_offsets([req], require_stable=require_stable)[GROUP].result(TIMEOUT)
        return {tp.partition: (tp.offset, tp.error and tp.error.code()) for tp in res.topic_partitions}

    def committed():
        """The group's committed offsets of IN by partition (OffsetFetch,
        require_stable). EndTxn answers once the transaction's end is
        decided, before its markers are written: until the marker, a
        partition's offset is UNSTABLE_OFFSET_COMMIT (KIP-447), which the
        admin client returns as is; this asks again."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            got = offset_fetch(True)
            errs = {p: e for p, (_, e) in got.items() if e is not None}
            if not errs:
                return {p: o for p, (o, _) in got.items()}
            if any(e != KafkaError.UNSTABLE_OFFSET_COMMIT for e in errs.values()) or time.monotonic() > deadline:
                raise AssertionError(f"OffsetFetch: {errs}")
            time.sleep(0.02)

    def ends(topic):
        c2 = Consumer({"bootstrap.servers": BROKER, "group.id": f"{PREFIX}-wm"})
        try:
            return {p: c2.get_watermark_offsets(TopicPartition(topic, p), TIMEOUT, cached=False)[1]
                    for p in range(PARTITIONS)}
        finally:
            c2.close()

    # OFFSET_INVALID: librdkafka's offset for a partition with none.
    none = {p: -1001 for p in range(PARTITIONS)}

    @check("librdkafka consume-transform-produce: offsets sent to a transaction in progress: "
           "OffsetFetch require_stable answers UNSTABLE_OFFSET_COMMIT, without it no offset")
    def _():
        sent = {p: o for p, o in copy(consume(INPUT // 2)).items() if o >= 0}
        if not sent:
            raise AssertionError("no offset sent")
        expect("require_stable", offset_fetch(True),
               {p: (-1001, KafkaError.UNSTABLE_OFFSET_COMMIT if p in sent else None) for p in range(PARTITIONS)})
        expect("not require_stable", offset_fetch(False), {p: (-1001, None) for p in range(PARTITIONS)})

    @check("librdkafka consume-transform-produce: send_offsets_to_transaction, aborted: the group commits nothing")
    def _():
        end(False)
        expect("committed offsets", committed(), none)

    @check("librdkafka consume-transform-produce: rewound, every record copied, send_offsets_to_transaction, committed")
    def _():
        got = c.committed(c.assignment(), TIMEOUT)
        expect("the consumer's committed offsets", [tp.offset for tp in got], [-1001] * len(got))
        for tp in c.assignment():
            c.seek(TopicPartition(IN, tp.partition, 0))
        copy(consume(None))
        end(True)

    @check("librdkafka: the group's offsets (OffsetFetch) are the ones the committed transaction sent")
    def _():
        want = ends(IN)
        expect("sum of the end offsets", sum(want.values()), INPUT)
        expect("committed offsets (admin, require_stable)", committed(), want)
        got = {tp.partition: tp.offset for tp in c.committed(c.assignment(), TIMEOUT)}
        expect("committed offsets (the consumer)", got, want)

    c.close()

    @check("librdkafka read_committed consumer: exactly the committed records of every transaction")
    def _():
        expect("read_committed", read(OUT, True), sorted(log.committed))
        copies = sorted(r for r in log.committed if ":copy-" in r)
        expect("copies", len(copies), INPUT)

    @check("librdkafka read_uncommitted consumer: every record written, aborted ones included")
    def _():
        expect("read_uncommitted", read(OUT, False), sorted(log.all_))

    with open(COMMITTED_FILE, "w") as f:
        f.writelines(r + "\n" for r in log.committed)
    with open(ALL_FILE, "w") as f:
        f.writelines(r + "\n" for r in log.all_)


check_main("txn.py", main)
