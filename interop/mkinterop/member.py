"""One consumer-group member in its own process, for the group scenarios.

    python -m mkinterop.member '<json config>'

runs a subscribed consumer of confluent-kafka, kafka-python or aiokafka
(kafkajs's member is `node js/mk_interop.js group-member '<json>'`, with the
same config and the same events). The member prints one JSON event per line
on stdout and stops gracefully (commit, close: LeaveGroup) when it reads
`stop` on stdin or when it has processed `limit` records. The test process
(mkinterop/group.py) reads the events and does every check; running each
member in its own process lets a scenario SIGKILL one.

Config keys: client, bootstrap, group, topics, session_timeout_ms,
heartbeat_interval_ms, max_poll_interval_ms, group_protocol ("consumer":
KIP-848, for confluent-kafka; then remote_assignor picks the server
assignor and the session, heartbeat and assignor keys are not sent; the
Java member takes `props` {"group.protocol": "consumer"}), assignor (a Kafka assignor
name, e.g. "range", "roundrobin" or "cooperative-sticky"; the client's
default if absent), instance_id (group.instance.id: a static member), limit
(records to process before stopping by itself; none: run until `stop`),
batch (most records per poll).

Processing is "print the records, then commit exactly the offsets after
them, synchronously, before the next poll". A commit that fails (while a
rebalance completes: REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION; in the
cooperative protocol members keep consuming during a rebalance) stays
pending: it is committed again with the next batch, and in the revocation
callback of its partition, which the member still owns then. Revocations
are serialized with processing (confluent-kafka and kafka-python call the
listener inside poll(); aiokafka's listener waits on a lock and drops a
batch handed out while a revocation is under way), so a graceful rebalance
never hands a partition over with processed but uncommitted records:
across members every record is processed exactly once.

Events (`ev`): started; assigned {partitions}; revoked {partitions};
records {recs: [[partition, offset, value], ...]}; committed {offsets:
{partition: next offset}}; commit_failed {error}; closed; error {error}.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
import time
import traceback

DEBUG = os.environ.get("MK_INTEROP_DEBUG") == "1"
_out_lock = threading.Lock()


def emit(ev: str, **fields) -> None:
    line = json.dumps({"ev": ev, "t": time.time(), **fields})
    with _out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Control:
    """`stop` on stdin (or stdin closing) asks the member to stop."""

    def __init__(self):
        self.stop = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in sys.stdin:
            if line.strip() == "stop":
                break
        self.stop.set()


class Member:
    """What every Python member shares: the processing rule and its lock."""

    def __init__(self, cfg: dict):
        self.cfg = cfg
        self.lock = threading.RLock()
        self.revocations = 0
        self.processed = 0
        # Processed but not yet committed: partition -> next offset. A commit
        # can fail while a rebalance completes (REBALANCE_IN_PROGRESS,
        # ILLEGAL_GENERATION: in the cooperative protocol a member keeps
        # consuming during the rebalance); what failed is committed again
        # with the next batch, or when its partition is revoked (then with
        # the new generation).
        self.pending: dict[int, int] = {}
        self.control = Control()

    @property
    def limit_reached(self) -> bool:
        limit = self.cfg.get("limit")
        return limit is not None and self.processed >= limit

    @property
    def batch(self) -> int:
        return int(self.cfg.get("batch", 100))

    def next_offsets(self, recs: list[tuple[int, int, bytes]]) -> dict[int, int]:
        nxt: dict[int, int] = {}
        for p, o, _ in recs:
            nxt[p] = max(nxt.get(p, 0), o + 1)
        return nxt

    def emit_records(self, recs: list[tuple[int, int, bytes]]) -> None:
        emit("records", recs=[[p, o, v.decode() if v is not None else None] for p, o, v in recs])
        self.processed += len(recs)
        for p, o in self.next_offsets(recs).items():
            self.pending[p] = max(self.pending.get(p, 0), o)

    def to_commit(self, only=None) -> dict[int, int]:
        return {p: o for p, o in self.pending.items() if only is None or p in only}

    def committed(self, offsets: dict[int, int]) -> None:
        emit("committed", offsets=offsets)
        for p, o in offsets.items():
            if self.pending.get(p) == o:
                del self.pending[p]

    def commit_sync(self, commit, only=None) -> None:
        """Commits what is pending (of the partitions `only`) with the
        client's synchronous `commit(offsets)`."""
        offsets = self.to_commit(only)
        if not offsets:
            return
        try:
            commit(offsets)
        except Exception as e:  # noqa: BLE001 - reported as an event
            emit("commit_failed", error=repr(e), offsets=offsets)
            return
        self.committed(offsets)

    def revoked(self, partitions: list[int], commit) -> None:
        """A revocation: commit what is pending of those partitions (the
        member still owns them), then forget it."""
        with self.lock:
            self.revocations += 1
            self.commit_sync(commit, only=set(partitions))
            for p in partitions:
                self.pending.pop(p, None)
        emit("revoked", partitions=sorted(partitions))

    def consume(self, poll, commit, close) -> None:
        """A synchronous client's loop: until stopped or at its limit, the
        records `poll()` returns ([(partition, offset, value)]) are emitted
        and committed with `commit(offsets)` under the lock; then `close()`."""
        try:
            while not self.control.stop.is_set() and not self.limit_reached:
                recs = poll()
                if not recs:
                    continue
                with self.lock:
                    self.emit_records(recs)
                    self.commit_sync(commit)
        finally:
            close()
            emit("closed")


# --------------------------------------------------------------------------


class ConfluentMember(Member):
    def run(self) -> None:
        from confluent_kafka import Consumer, TopicPartition

        cfg = self.cfg
        conf = {
            "bootstrap.servers": cfg["bootstrap"],
            "broker.address.family": "v4",
            "group.id": cfg["group"],
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "max.poll.interval.ms": cfg.get("max_poll_interval_ms", 30000),
        }
        if cfg.get("group_protocol") == "consumer":
            # KIP-848: the coordinator owns sessions, heartbeats and the
            # assignor; librdkafka refuses the classic settings with it.
            conf["group.protocol"] = "consumer"
            if cfg.get("remote_assignor"):
                conf["group.remote.assignor"] = cfg["remote_assignor"]
        else:
            conf["session.timeout.ms"] = cfg.get("session_timeout_ms", 6000)
            conf["heartbeat.interval.ms"] = cfg.get("heartbeat_interval_ms", 1000)
            if cfg.get("assignor"):
                conf["partition.assignment.strategy"] = cfg["assignor"]
        if cfg.get("isolation_level"):
            conf["isolation.level"] = cfg["isolation_level"]
        if cfg.get("instance_id"):
            conf["group.instance.id"] = cfg["instance_id"]
        if DEBUG:
            conf["debug"] = "cgrp,protocol,broker,consumer"
        consumer = Consumer(conf)

        def on_assign(c, parts):
            emit("assigned", partitions=sorted(tp.partition for tp in parts))

        topic = cfg["topics"][0]

        def commit(offsets):
            consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)

        def on_revoke(c, parts):
            self.revoked([tp.partition for tp in parts], commit)

        consumer.subscribe(cfg["topics"], on_assign=on_assign, on_revoke=on_revoke)
        def poll():
            recs = []
            for m in consumer.consume(num_messages=self.batch, timeout=0.2):
                if m.error():
                    emit("error", error=str(m.error()))
                    continue
                recs.append((m.partition(), m.offset(), m.value()))
            return recs

        emit("started")
        self.consume(poll, commit, consumer.close)


def _python_member_config(cfg: dict, assignors: dict) -> dict:
    """The consumer settings kafka-python and aiokafka members share (the
    two clients spell them alike)."""
    kwargs = {
        "bootstrap_servers": cfg["bootstrap"],
        "group_id": cfg["group"],
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest",
        "session_timeout_ms": cfg.get("session_timeout_ms", 6000),
        "heartbeat_interval_ms": cfg.get("heartbeat_interval_ms", 1000),
        "max_poll_interval_ms": cfg.get("max_poll_interval_ms", 30000),
    }
    if cfg.get("assignor"):
        kwargs["partition_assignment_strategy"] = [assignors[a] for a in cfg["assignor"].split(",")]
    if cfg.get("isolation_level"):
        kwargs["isolation_level"] = cfg["isolation_level"]
    if cfg.get("instance_id"):
        kwargs["group_instance_id"] = cfg["instance_id"]
    return kwargs


class KafkaPythonMember(Member):
    def run(self) -> None:
        from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
        from kafka.consumer.subscription_state import ConsumerRebalanceListener
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
        from kafka.coordinator.assignors.range import RangePartitionAssignor
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

        cfg = self.cfg
        assignors = {
            "range": RangePartitionAssignor,
            "roundrobin": RoundRobinPartitionAssignor,
            "cooperative-sticky": CooperativeStickyAssignor,
        }
        consumer = KafkaConsumer(**_python_member_config(cfg, assignors))
        member = self
        topic = cfg["topics"][0]

        def commit(offsets):
            consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()})

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                member.revoked([tp.partition for tp in revoked], commit)

            def on_partitions_assigned(self, assigned):
                emit("assigned", partitions=sorted(tp.partition for tp in assigned))

        consumer.subscribe(topics=cfg["topics"], listener=Listener())
        # kafka-python 3.0.12: a leader whose first join comes before a
        # metadata update for the new subscription assigns with an empty
        # metadata snapshot, and the next metadata update makes it rejoin
        # (one more rebalance). If poll()'s timeout expires while that
        # rejoin's JoinGroup/SyncGroup are in flight, the finished join is
        # never applied (kafka/coordinator/base.py join_group_async returns
        # early once need_rejoin() is False): no assignment, heartbeats stay
        # off, and the coordinator expires the member, which never notices.
        # topics() fetches metadata through the shared cluster object, so the
        # coordinator's snapshot is complete before the first join; the
        # longer poll timeout narrows the window for any other rejoin.
        consumer.topics()
        emit("started")
        topic = cfg["topics"][0]

        def poll():
            # The listener runs inside poll(), so what poll() returns
            # belongs to the assignment in force.
            polled = consumer.poll(timeout_ms=1000, max_records=self.batch)
            return [(tp.partition, m.offset, m.value) for tp, ms in polled.items() for m in ms]

        self.consume(poll, commit, consumer.close)


class AioKafkaMember(Member):
    def run(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
        from aiokafka.coordinator.assignors.range import RangePartitionAssignor
        from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        from aiokafka.errors import KafkaError

        cfg = self.cfg
        assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
        consumer = AIOKafkaConsumer(
            rebalance_timeout_ms=cfg.get("max_poll_interval_ms", 30000),
            **_python_member_config(cfg, assignors),
        )
        # aiokafka rebalances in a background task. The listener marks the
        # revocation at once (no await before it), then waits for the batch
        # being processed to be committed (the asyncio lock). A batch that
        # getmany() hands out while a revocation is under way is dropped:
        # the next assignment starts again from the committed offsets.
        alock = asyncio.Lock()
        member = self
        member.revoking = False

        async def commit_pending(only=None):
            offsets = member.to_commit(only)
            if not offsets:
                return
            try:
                await consumer.commit({TopicPartition(topic, p): o for p, o in offsets.items()})
            except KafkaError as e:
                emit("commit_failed", error=repr(e), offsets=offsets)
                return
            member.committed(offsets)

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                member.revoking = True
                parts = [tp.partition for tp in revoked]
                async with alock:
                    member.revocations += 1
                    await commit_pending(set(parts))
                    for p in parts:
                        member.pending.pop(p, None)
                emit("revoked", partitions=sorted(parts))

            async def on_partitions_assigned(self, assigned):
                member.revoking = False
                emit("assigned", partitions=sorted(tp.partition for tp in assigned))

        topic = cfg["topics"][0]
        await consumer.start()
        consumer.subscribe(topics=cfg["topics"], listener=Listener())
        emit("started")
        try:
            while not self.control.stop.is_set() and not self.limit_reached:
                polled = await consumer.getmany(timeout_ms=200, max_records=self.batch)
                recs = [(tp.partition, m.offset, m.value) for tp, ms in polled.items() for m in ms]
                # No await between getmany() returning and this check.
                if not recs or self.revoking:
                    if recs:
                        emit("dropped", recs=len(recs))
                    continue
                async with alock:
                    self.emit_records(recs)
                    await commit_pending()
        finally:
            await consumer.stop()
            emit("closed")


MEMBERS = {"confluent-kafka": ConfluentMember, "kafka-python": KafkaPythonMember, "aiokafka": AioKafkaMember}


def main() -> None:
    cfg = json.loads(sys.argv[1])
    if DEBUG:
        logging.basicConfig(stream=sys.stderr, level=logging.DEBUG)
    try:
        MEMBERS[cfg["client"]](cfg).run()
    except BaseException as e:  # noqa: BLE001 - reported, then the exit code says it
        emit("error", error=f"{type(e).__name__}: {e}", trace=traceback.format_exc())
        sys.exit(1)


if __name__ == "__main__":
    main()
