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

from mkinterop import java_client  # noqa: E402
from mkinterop.drivers import DRIVERS  # noqa: E402
from mkinterop.group import Members  # noqa: E402
from mkinterop.kcat import create_topic_via_cli, kcat  # noqa: E402
from mkinterop.model import Rec  # noqa: E402
from mkinterop.server import MkServer, start_server  # noqa: E402


def unique_topic(*parts: str) -> str:
    return "-".join([*parts, uuid.uuid4().hex[:8]])


@pytest.fixture(scope="session", autouse=True)
def java_logs(tmp_path_factory):
    """The shared Java driver logs into pytest's temp dir of this worker."""
    java_client.set_log_dir(tmp_path_factory.mktemp("java"))


@pytest.fixture(scope="session")
def broker(tmp_path_factory) -> MkServer:
    server = start_server(tmp_path_factory.mktemp("broker"), brokers=[1], name="single")
    yield server
    code = server.stop()
    assert code == 0, f"mk-server exited with {code} after SIGTERM; log tail:\n{server.log_tail()}"


@pytest.fixture(scope="session")
def three_broker_cluster(tmp_path_factory) -> MkServer:
    """Brokers 1, 2 and 3 in one process (min.insync.replicas 2), shared by
    the scenarios that need several brokers but take none offline."""
    server = start_server(tmp_path_factory.mktemp("cluster"), brokers=[1, 2, 3], min_insync_replicas=2, name="cluster")
    yield server
    code = server.stop()
    assert code == 0, f"mk-server exited with {code} after SIGTERM; log tail:\n{server.log_tail()}"


@pytest.fixture
def three_brokers(tmp_path) -> MkServer:
    """Brokers 1, 2 and 3 in one process with min.insync.replicas 2."""
    server = start_server(tmp_path, brokers=[1, 2, 3], min_insync_replicas=2, name="three")
    yield server
    code = server.stop()
    assert code == 0, f"mk-server exited with {code} after SIGTERM; log tail:\n{server.log_tail()}"


@pytest.fixture
def members(tmp_path) -> Members:
    """Consumer-group members (child processes) of one scenario; any still
    running at teardown are killed."""
    group = Members(tmp_path)
    yield group
    group.cleanup()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    item.java_log_start = java_client.log_position()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed scenario shows the tail of every server log it used, what
    each of its group members did, and what the Java driver logged during
    it."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        java_section = java_client.log_section(getattr(item, "java_log_start", None))
        if java_section is not None and report.when == "call":
            report.sections.append(java_section)
        for value in getattr(item, "funcargs", {}).values():
            if isinstance(value, MkServer):
                report.sections.append((f"mk-server log ({value.log_path})", value.log_tail(80)))
            if isinstance(value, Members):
                report.sections.extend(value.report_sections())
        for server in getattr(item, "mk_servers", ()):
            report.sections.append((f"mk-server log ({server.log_path})", server.log_tail(80)))


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


# --------------------------------------------------------------------------
# A summary per client at the end of the run.


def _client_of(item) -> str:
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "client" in params:
        return params["client"]
    if "client_name" in params:
        return params["client_name"]
    if "mix" in params:
        return "mixed group (" + " + ".join(params["mix"][0]) + ")"
    module = item.module.__name__
    if module.startswith("test_java"):
        return "java"
    if module == "test_kcat" or (module != "test_environment" and item.name.startswith("test_kcat")):
        return "kcat"
    if module == "test_failover":
        return "failover (confluent-kafka -> kafka-python)"
    if module == "test_checks":
        return "suite self-checks"
    if module == "test_security":
        return "security: negative matrix and ACLs"
    if module == "test_kafka_connect":
        return "Kafka Connect (java)"
    if module == "test_apps":
        return "applications"
    return "environment"


# Scenarios that mostly wait (session timeouts, transaction timeouts,
# restarts) go first, so the xdist workers do not end on a long tail.
SLOW_FIRST = (
    "consume_transform_produce",
    "left_open_past_its_timeout",
    "killed_member_expires",
    "failover",
    "third_member",
    "cooperative",
    "static_member",
    "survive_broker_restart",
    "join_and_leave",
    "stalled_tls_handshake",
)


def pytest_collection_modifyitems(items):
    for item in items:
        item.user_properties.append(("client", _client_of(item)))
    items.sort(key=lambda item: not any(s in item.name for s in SLOW_FIRST))


_RESULTS: dict[str, dict[str, list[str]]] = {}


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and not report.passed) or (
        report.when == "teardown" and report.failed
    ):
        client = dict(report.user_properties).get("client", "?")
        outcome = "failed" if report.failed else report.outcome
        _RESULTS.setdefault(client, {}).setdefault(outcome, []).append(report.nodeid.split("::", 1)[-1])


def pytest_terminal_summary(terminalreporter):
    if not _RESULTS:
        return
    tr = terminalreporter
    tr.section("interop results per client")
    for client in sorted(_RESULTS):
        by_outcome = _RESULTS[client]
        counts = ", ".join(f"{len(v)} {k}" for k, v in sorted(by_outcome.items()))
        tr.write_line(f"{client}: {counts}")
        for name in by_outcome.get("failed", []):
            tr.write_line(f"    FAILED {name}")
