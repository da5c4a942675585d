"""A consume-transform-produce loop in its own process, for the
exactly-once scenario of tests/test_transactions.py:

    python -m mkinterop.txn_processor '<json config>'

A group consumer (read_committed, no auto commit) reads the input topic;
for each poll a transactional producer begins a transaction, writes
`out:<value>` for every record to the same partition of the output topic,
adds the consumed offsets with send_offsets_to_transaction and commits.
The test SIGKILLs the process at random points and starts it again with the
same transactional.id: init_transactions fences the dead producer and
aborts its open transaction, and the consumer resumes at the offsets the
last committed transaction wrote.

Config keys: client (confluent-kafka or kafka-python), bootstrap, group,
input, output, transactional_id, batch, hold_after (once this run has
committed that many records, the next transaction is written, flushed and
left open until the process is killed). Events (one JSON line each):
started; assigned {partitions}; revoked {partitions}; txn {n, offsets}
after each commit; open {n, offsets} for the transaction left open; closed;
error {error}. Any failed transactional call is
an error: the process exits 1 (a single member never rebalances while it
processes, so nothing here is expected to fail).
"""

from __future__ import annotations

import json
import sys
import time
import traceback

from mkinterop.member import Control, emit
from mkinterop.txn import DEBUG, TXN_PRODUCERS


def next_offsets(recs) -> dict[int, int]:
    nxt: dict[int, int] = {}
    for p, o, _, _ in recs:
        nxt[p] = max(nxt.get(p, 0), o + 1)
    return nxt


def run_confluent(cfg: dict, control: Control, producer) -> None:
    from confluent_kafka import Consumer

    conf = {
        "bootstrap.servers": cfg["bootstrap"],
        "broker.address.family": "v4",
        "group.id": cfg["group"],
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 1000,
        "max.poll.interval.ms": 30000,
    }
    if DEBUG:
        conf["debug"] = "cgrp,eos,protocol,broker"
    consumer = Consumer(conf)
    consumer.subscribe(
        [cfg["input"]],
        on_assign=lambda c, ps: emit("assigned", partitions=sorted(tp.partition for tp in ps)),
        on_revoke=lambda c, ps: emit("revoked", partitions=sorted(tp.partition for tp in ps)),
    )
    emit("started")
    try:
        while not control.stop.is_set():
            msgs = consumer.consume(num_messages=cfg.get("batch", 100), timeout=0.2)
            for m in msgs:
                if m.error():
                    raise RuntimeError(f"consume error: {m.error()}")
            recs = [(m.partition(), m.offset(), m.key(), m.value()) for m in msgs]
            if recs:
                transact(cfg, producer, consumer, recs)
    finally:
        consumer.close()


def run_kafka_python(cfg: dict, control: Control, producer) -> None:
    from kafka import KafkaConsumer
    from kafka.consumer.subscription_state import ConsumerRebalanceListener

    consumer = KafkaConsumer(
        bootstrap_servers=cfg["bootstrap"],
        group_id=cfg["group"],
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
        max_poll_interval_ms=30000,
    )

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            emit("revoked", partitions=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned):
            emit("assigned", partitions=sorted(tp.partition for tp in assigned))

    consumer.subscribe(topics=[cfg["input"]], listener=Listener())
    # See mkinterop/member.py: kafka-python 3.0.12 can lose a rejoin that
    # its own metadata race causes; a metadata update before the first join
    # avoids that rejoin.
    consumer.topics()
    emit("started")
    try:
        while not control.stop.is_set():
            polled = consumer.poll(timeout_ms=1000, max_records=cfg.get("batch", 100))
            recs = [(tp.partition, m.offset, m.key, m.value) for tp, ms in polled.items() for m in ms]
            if recs:
                transact(cfg, producer, consumer, recs)
    finally:
        consumer.close()


class Progress:
    committed = 0


def transact(cfg: dict, producer, consumer, recs) -> None:
    producer.begin()
    for p, _, key, value in recs:
        producer.send(cfg["output"], b"out:" + value, p, key=key)
    offsets = next_offsets(recs)
    producer.send_offsets(cfg["input"], offsets, consumer)
    hold_after = cfg.get("hold_after")
    if hold_after is not None and Progress.committed >= hold_after:
        # Written and open: the test kills the process now, so the next
        # run's init_transactions has to abort this transaction.
        producer.flush()
        emit("open", n=len(recs), offsets=offsets)
        while True:
            time.sleep(1)
    producer.commit()
    Progress.committed += len(recs)
    emit("txn", n=len(recs), offsets=offsets)


def main() -> None:
    cfg = json.loads(sys.argv[1])
    if DEBUG:
        import logging

        logging.basicConfig(stream=sys.stderr, level=logging.DEBUG)
    control = Control()
    try:
        producer = TXN_PRODUCERS[cfg["client"]](cfg["bootstrap"], cfg["transactional_id"])
        started = time.monotonic()
        producer.init()
        emit("initialized", took=time.monotonic() - started)
        runner = run_confluent if cfg["client"] == "confluent-kafka" else run_kafka_python
        runner(cfg, control, producer)
        producer.close()
        emit("closed")
    except BaseException as e:  # noqa: BLE001 - reported, then the exit code says it
        emit("error", error=f"{type(e).__name__}: {e}", trace=traceback.format_exc())
        sys.exit(1)


if __name__ == "__main__":
    main()
