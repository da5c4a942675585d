"""Applications built on the Kafka clients, run unmodified against the
broker at pinned versions (interop/apps/requirements.txt, a venv of their
own): Quix Streams.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from confluent_kafka.admin import AdminClient, ConfigResource
from conftest import unique_topic

from mkinterop.drivers import DRIVERS
from mkinterop.model import Rec

APP = Path(__file__).resolve().parent.parent / "apps" / "quix_app.py"


def run_quix(broker, group: str, source: str, sink: str, state_dir: Path, count: int) -> int:
    """Runs the Quix Streams app with exactly-once processing until it has
    written `count` totals; returns how many it wrote."""
    python = os.environ["MK_APPS_PYTHON"]
    args = [python, str(APP), broker.bootstrap, group, source, sink, str(state_dir), str(count), "exactly-once"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-4000:]
    return int(done.stdout.strip().splitlines()[-1])


def numbers(start: int, end: int) -> list[Rec]:
    return [Rec(f"k{i % 3}".encode(), json.dumps({"n": i}).encode()) for i in range(start, end)]


def running_totals(sent: list[Rec]) -> dict[str, list[int]]:
    """Per key, the total after each of its records (a key's records keep
    their order: one key, one partition)."""
    totals: dict[str, list[int]] = {}
    for r in sent:
        key = r.key.decode()
        before = totals[key][-1] if key in totals else 0
        totals.setdefault(key, []).append(before + json.loads(r.value)["n"])
    return totals


def test_quix_streams_keeps_exactly_once_totals_across_a_restart_that_restores_state_from_the_changelog(
    broker, tmp_path
):
    """Quix Streams 3.28 with exactly-once processing (a transactional
    producer; offsets committed in its transactions) keeps a running total
    per key in a state store backed by a changelog topic it creates. A
    second run with an empty state directory restores the totals from the
    changelog and goes on from them: the output, read_committed, holds
    every key's running totals exactly once."""
    source, sink, group = unique_topic("quix-in"), unique_topic("quix-out"), unique_topic("quix")
    confluent = DRIVERS["confluent-kafka"]
    confluent.create_topic(broker.bootstrap, source, 3)
    first, second = numbers(0, 30), numbers(30, 60)
    confluent.produce(broker.bootstrap, source, first)
    assert run_quix(broker, group, source, sink, tmp_path / "state-1", len(first)) == len(first)
    confluent.produce(broker.bootstrap, source, second)
    assert run_quix(broker, group, source, sink, tmp_path / "state-2", len(second)) == len(second)

    got: dict[str, list[int]] = {}
    for r in sorted(confluent.read_isolated(broker.bootstrap, sink, "read_committed"), key=lambda g: (g.partition, g.offset)):
        got.setdefault(r.key.decode(), []).append(json.loads(r.value)["total"])
    assert got == running_totals(first + second), got

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    changelogs = [t for t in admin.list_topics(timeout=30).topics if t.startswith("changelog__") and group in t]
    assert len(changelogs) == 1, changelogs
    resource = ConfigResource(ConfigResource.Type.TOPIC, changelogs[0])
    policy = admin.describe_configs([resource])[resource].result(timeout=30)["cleanup.policy"].value
    assert policy == "compact", policy
