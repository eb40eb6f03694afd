"""confluent-kafka-python (librdkafka) against a secured Skein node, over
SASL_SSL, as a Kafka user configures it: alice's SCRAM-SHA-512 password
produces and reads back records of a topic the ACLs give her, a topic
they do not give her is refused with TOPIC_AUTHORIZATION_FAILED, and a
wrong password fails authentication.

Usage: python sasl.py BROKER CA-PEM TOPIC PASSWORD

Output: one line per check, "ok <name>" or "FAIL <name>: <why>", which
run.sh counts. Exits 1 if any check failed.
"""

import sys

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from checks import check, expect
from checks import main as check_main

if len(sys.argv) != 5:
    print(__doc__.split("\n\n")[2], file=sys.stderr)
    sys.exit(2)
BROKER, CA, TOPIC, PASSWORD = sys.argv[1:]


def conf(password=PASSWORD, **extra):
    c = {"bootstrap.servers": BROKER, "security.protocol": "SASL_SSL", "ssl.ca.location": CA,
         "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice", "sasl.password": password}
    c.update(extra)
    return c


def produce(topic, n):
    """Produces n records to topic and returns the delivery errors."""
    p = Producer(conf(**{"enable.idempotence": True, "message.timeout.ms": 15000}))
    errors = []
    for i in range(n):
        p.produce(topic, value=f"py-{i}".encode(), on_delivery=lambda err, _msg: err and errors.append(err))
    p.flush(30)
    return errors


def run():
    @check("confluent-kafka SASL_SSL SCRAM-SHA-512: 20 records produced idempotently and read back")
    def _():
        expect("delivery errors", produce(TOPIC, 20), [])
        c = Consumer(conf(**{"group.id": TOPIC + "-g", "auto.offset.reset": "earliest"}))
        c.subscribe([TOPIC])
        got = []
        for _ in range(60):
            m = c.poll(1.0)
            if m is None:
                if len(got) >= 20:
                    break
                continue
            if m.error():
                raise KafkaException(m.error())
            got.append(m.value().decode())
        c.close()
        expect("records", sorted(got), sorted(f"py-{i}" for i in range(20)))

    @check("confluent-kafka SASL_SSL: a topic no ACL gives alice is refused, TOPIC_AUTHORIZATION_FAILED")
    def _():
        errors = produce("other-py", 1)
        expect("error codes", [e.code() for e in errors], [KafkaError.TOPIC_AUTHORIZATION_FAILED])

    @check("confluent-kafka SASL_SSL with a wrong password: authentication fails (_AUTHENTICATION)")
    def _():
        errors = []
        p = Producer(conf(password="wrong", error_cb=errors.append, log_level=0))
        for _ in range(20):  # the error comes to error_cb through poll
            p.poll(0.5)
            if errors:
                break
        codes = {e.code() for e in errors}
        if KafkaError._AUTHENTICATION not in codes:
            raise AssertionError(f"errors reported: {errors}, want an authentication failure")


check_main("sasl.py", run)
