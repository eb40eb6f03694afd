"""Checks a history written by Kafka's verifiable clients.

Usage: verifiable.py PRODUCER-OUTPUT CONSUMER-OUTPUT

The files are the JSON lines of kafka-verifiable-producer and of
kafka-verifiable-consumer --verbose. Every record the producer saw
acknowledged must be read at its partition and offset with its value;
nothing may be read that the producer never sent, and no value may be read
twice (the producer is idempotent, so a retry must not write a second
copy). Records whose send failed or was never answered may be read or not:
their outcome is unknown to the producer. Prints a one-line summary and
exits 1 on any violation, naming the first few.
"""

import json
import sys


def events(path, name):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            if event.get("name") == name:
                yield event


def main():
    producer, consumer = sys.argv[1], sys.argv[2]
    acked = {}  # (partition, offset) -> value
    sent = set()
    for e in events(producer, "producer_send_success"):
        acked[(e["partition"], e["offset"])] = e["value"]
        sent.add(e["value"])
    for e in events(producer, "producer_send_error"):
        sent.add(e["value"])
    tool = list(events(producer, "tool_data"))
    if tool:
        # The producer numbers its values 0 .. sent-1; those that neither
        # succeeded nor failed were still in flight at the end.
        sent.update(str(v) for v in range(tool[-1]["sent"]))

    read = {}
    seen = {}
    problems = []
    for e in events(consumer, "record_data"):
        at = (e["partition"], e["offset"])
        value = e["value"]
        if value not in sent:
            problems.append(f"read {value!r} at {at}, never sent")
        if value in seen and seen[value] != at:
            problems.append(f"read {value!r} twice, at {seen[value]} and {at}")
        seen[value] = at
        read[at] = value
    for at, value in sorted(acked.items()):
        if at not in read:
            problems.append(f"acknowledged {value!r} at {at}, not read")
        elif read[at] != value:
            problems.append(f"acknowledged {value!r} at {at}, read {read[at]!r} there")
    summary = f"{len(acked)} acknowledged, {len(read)} read"
    if problems:
        print(f"{summary}; {len(problems)} violations: " + "; ".join(problems[:5]))
        sys.exit(1)
    if not acked:
        print(f"{summary}: nothing acknowledged")
        sys.exit(1)
    print(f"{summary}; every acknowledged record read once at its offset, nothing unsent")


main()
