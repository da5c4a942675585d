"""Kafka Connect (connect-runtime 4.3.0) against the broker: a distributed
worker's herder, worker, group membership (protocol type `connect`) and
its Kafka-backed config, offset and status stores, running Kafka's
FileStream source and sink connectors. The worker runs in the Java driver
without its REST server (interop/java/src/mkinterop/ConnectScenarios.java
says why); everything it does with the broker is Connect's own.
"""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource
from conftest import unique_topic

from mkinterop import java_client
from mkinterop.drivers import DRIVERS


def worker(broker, group: str, src, out, lines: int, create: bool, exactly_once: str) -> dict:
    return java_client.call(
        "connect-worker", bootstrap=broker.bootstrap, group=group,
        input=str(src), output=str(out), lines=lines, create=create, exactly_once=exactly_once,
    )


def transactions_of(broker, group: str) -> dict:
    """The state of each transactional id of the Connect group `group`."""
    transactions = java_client.call("list-transactions", bootstrap=broker.bootstrap)
    return {tid: t["state"] for tid, t in transactions.items() if group in tid}


RUNNING = {"src": ["RUNNING", "RUNNING"], "sink": ["RUNNING", "RUNNING"]}


@pytest.mark.parametrize("exactly_once", ("disabled", "enabled"))
def test_a_connect_worker_moves_a_file_through_a_topic_and_a_new_worker_resumes_where_it_stopped(
    broker, tmp_path, exactly_once
):
    """A worker creates its internal topics, a FileStream source copies a
    file's lines into a topic and a sink writes them to another file. A new
    worker of the same group then reads the connectors from the config
    topic, the source's position from the offset topic and the sink's from
    its consumer group: lines appended meanwhile arrive once, none twice.
    With exactly-once source support (KIP-618) the leader writes the config
    topic and the source task writes its records and offsets in
    transactions, each under Connect's transactional id."""
    group = unique_topic("connect")
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    first = [f"line-{i}" for i in range(100)]
    src.write_text("".join(f"{line}\n" for line in first))
    run = worker(broker, group, src, out, len(first), create=True, exactly_once=exactly_once)
    assert run == {"connectors": ["sink", "src"], "states": RUNNING, "output_lines": len(first)}, run
    assert out.read_text().splitlines() == first
    assert transactions_of(broker, group) == (
        {f"connect-cluster-{group}": "COMPLETE_COMMIT", f"{group}-src-0": "COMPLETE_COMMIT"}
        if exactly_once == "enabled" else {}
    )

    more = [f"more-{i}" for i in range(50)]
    with src.open("a") as f:
        f.write("".join(f"{line}\n" for line in more))
    run = worker(broker, group, src, out, len(first) + len(more), create=False, exactly_once=exactly_once)
    assert run == {"connectors": ["sink", "src"], "states": RUNNING, "output_lines": len(first) + len(more)}, run
    assert out.read_text().splitlines() == first + more

    # The internal topics as Connect asked for them (it checks the cleanup
    # policy itself and refuses to start on a topic that is not compacted).
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    names = [f"{group}-configs", f"{group}-offsets", f"{group}-status"]
    described = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, n) for n in names])
    policies = {r.name: f.result(timeout=30)["cleanup.policy"].value for r, f in described.items()}
    assert policies == dict.fromkeys(names, "compact"), policies
    partitions = {n: len(t.partitions) for n, t in admin.list_topics(timeout=30).topics.items() if n in names}
    assert partitions == {names[0]: 1, names[1]: 25, names[2]: 5}, partitions

    data = DRIVERS["confluent-kafka"].read_isolated(broker.bootstrap, f"{group}-data", "read_committed")
    assert [r.value.decode() for r in data] == first + more
    # The new leader fenced the old one's config producer and had nothing
    # to write (the connectors and the session key were in the topic).
    assert transactions_of(broker, group) == (
        {f"connect-cluster-{group}": "EMPTY", f"{group}-src-0": "COMPLETE_COMMIT"}
        if exactly_once == "enabled" else {}
    )
