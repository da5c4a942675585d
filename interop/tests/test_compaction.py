"""Compaction as every client sees it: the broker's own cleaner (run every
100 ms here, `--log-cleaner-backoff-ms`) compacts a topic whose records
two idempotent producers wrote, and each client reads what is left.

The first producer's records are all superseded by the second's, so the
cleaner keeps that producer's last batch with no records in it (Kafka's
cleaner does the same, to keep the producer's last sequence in the log).
A consumer has to read past a batch without records; the raw Fetch below
shows the batch is really there.
"""

from __future__ import annotations

import time

import pytest
from conftest import unique_topic

from mkinterop import raw_kafka
from mkinterop.drivers import DRIVERS
from mkinterop.model import Rec
from mkinterop.server import start_server

KEYS = 10


@pytest.fixture(scope="module")
def emptied(tmp_path_factory):
    """A compacted topic whose first producer's last batch the cleaner left
    without records: (server, topic, the records that must be read)."""
    server = start_server(
        tmp_path_factory.mktemp("cleaner"),
        extra_args=["--log-cleaner-backoff-ms", "100"],
        name="cleaner",
    )
    try:
        producer = DRIVERS["confluent-kafka"]
        topic = unique_topic("emptied")
        producer.create_topic(server.bootstrap, topic, partitions=1)
        # Segments of 1 KiB: each producer's batch ends up in a segment of
        # its own, so the first one's is closed and cleanable.
        producer.alter_topic_config(server.bootstrap, topic, "segment.bytes", "1024")
        producer.alter_topic_config(server.bootstrap, topic, "cleanup.policy", "compact")
        old = [Rec(key=f"k{i}".encode(), value=b"old-" + b"x" * 200) for i in range(KEYS)]
        producer.produce(server.bootstrap, topic, old)
        new = [Rec(key=f"k{i}".encode(), value=f"new-{i}".encode()) for i in range(KEYS)]
        acks = producer.produce(server.bootstrap, topic, new)
        first_new = min(a.offset for a in acks)
        assert first_new >= KEYS, acks
        deadline = time.monotonic() + 30
        while True:
            batches = raw_kafka.fetched_batches(server.bootstrap, topic)
            if any(b.record_count == 0 for b in batches):
                break
            assert time.monotonic() < deadline, f"the cleaner emptied no batch within 30 s: {batches}"
            time.sleep(0.05)
        yield server, topic, new, batches
    finally:
        code = server.stop()
        assert code == 0, f"mk-server exited with {code}; log tail:\n{server.log_tail()}"


def test_the_cleaner_keeps_the_first_producers_last_batch_without_records(emptied):
    _, _, _, batches = emptied
    empty = [b for b in batches if b.record_count == 0]
    assert len(empty) == 1, batches
    kept = empty[0]
    # Its offsets end where the first producer's records ended, and it
    # carries that producer's id and the sequence of its first record.
    assert kept.base_offset + kept.last_offset_delta == KEYS - 1, kept
    assert kept.producer_id >= 0 and kept.base_sequence >= 0, kept
    assert kept.codec == 0, kept
    others = [b for b in batches if b is not kept]
    assert all(b.producer_id != kept.producer_id for b in others), batches
    assert all(b.base_offset >= KEYS for b in others), batches


@pytest.mark.parametrize("client_name", list(DRIVERS))
def test_every_client_reads_past_a_batch_without_records(emptied, client_name):
    server, topic, new, _ = emptied
    got = DRIVERS[client_name].read_all(server.bootstrap, topic)
    assert [(g.key, g.value) for g in got] == [(r.key, r.value) for r in new]
    assert [g.offset for g in got] == list(range(KEYS, 2 * KEYS))
