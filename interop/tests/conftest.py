"""Fixtures of the live interop suite: real mk-server processes.

`broker` is one single-broker server shared by the whole session (every
scenario uses its own topics); scenarios that need their own cluster start
one with `start_server` and stop it themselves.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mkinterop.drivers import DRIVERS  # noqa: E402
from mkinterop.kcat import create_topic_via_cli, kcat  # noqa: E402
from mkinterop.model import Rec  # noqa: E402
from mkinterop.server import MkServer, start_server  # noqa: E402


def unique_topic(*parts: str) -> str:
    return "-".join([*parts, uuid.uuid4().hex[:8]])


@pytest.fixture(scope="session")
def broker(tmp_path_factory) -> MkServer:
    server = start_server(tmp_path_factory.mktemp("broker"), brokers=[1], name="single")
    yield server
    code = server.stop()
    assert code == 0, f"mk-server exited with {code} after SIGTERM; log tail:\n{server.log_tail()}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed scenario shows the tail of every server log it used."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for value in getattr(item, "funcargs", {}).values():
            if isinstance(value, MkServer):
                report.sections.append((f"mk-server log ({value.log_path})", value.log_tail(80)))


CODECS = ("gzip", "snappy", "lz4", "zstd")


def compressible(prefix: str, n: int) -> list[Rec]:
    """Keyed records with repetitive values: librdkafka sends a batch
    uncompressed when compressing would not make it smaller."""
    return [Rec(key=f"k{i % 7}".encode(), value=f"{prefix}-{i:04d}-".encode() + b"x" * 200) for i in range(n)]


@pytest.fixture(scope="session")
def compressed_by_confluent(broker):
    """One single-partition topic per codec, produced by confluent-kafka
    with compression.type set."""
    producer = DRIVERS["confluent-kafka"]
    topics = {}
    for codec in CODECS:
        topic = unique_topic("zck", codec)
        producer.create_topic(broker.bootstrap, topic, partitions=1)
        sent = compressible(f"ck-{codec}", 500)
        producer.produce(broker.bootstrap, topic, sent, compression=codec)
        topics[codec] = (topic, sent)
    return topics


@pytest.fixture(scope="session")
def compressed_by_kcat(broker):
    """One single-partition topic per codec, produced by `kcat -P -z`."""
    topics = {}
    for codec in CODECS:
        topic = unique_topic("zkcat", codec)
        create_topic_via_cli(broker, topic, partitions=1)
        sent = compressible(f"kcat-{codec}", 500)
        lines = b"".join(r.key + b":" + r.value + b"\n" for r in sent)
        kcat(broker, "-P", "-t", topic, "-K:", "-z", codec, "-X", "linger.ms=50", stdin=lines)
        topics[codec] = (topic, sent)
    return topics
