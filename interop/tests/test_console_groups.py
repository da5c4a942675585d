"""The console's groups API (mk-adapter-console) for a live KIP-848 group:
a confluent-kafka member with `group.protocol=consumer` joins, and the
console lists and describes the group as a consumer group, with the
member, its epoch and the partitions the coordinator assigned it (before,
the console described only classic groups and showed such a group Dead)."""

from __future__ import annotations

import json
import urllib.request

from conftest import unique_topic

from mkinterop.drivers import DRIVERS
from mkinterop.group import settled, wait_until
from mkinterop.server import start_server

PARTITIONS = 3
# A KIP-848 group needs a few heartbeats (5 s each) to settle.
SETTLE_S = 120.0


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def test_the_console_describes_a_live_kip848_group_with_its_member_and_assignment(tmp_path, members):
    server = start_server(tmp_path, console=True, name="console-groups")
    try:
        bootstrap = server.bootstrap
        topic = unique_topic("console-kip848")
        DRIVERS["confluent-kafka"].create_topic(bootstrap, topic, partitions=PARTITIONS)
        group = unique_topic("g-console-kip848")
        m1 = members.start("confluent-kafka", bootstrap, group, topic, "m1", group_protocol="consumer")
        wait_until(settled([m1], PARTITIONS), "m1 to hold every partition", timeout_s=SETTLE_S, members=[m1])
        everything = [{"topic": topic, "partition": p} for p in range(PARTITIONS)]

        def shown():
            g = get(f"{server.console_url}/api/groups/{group}")
            ms = g.get("members", [])
            ok = (
                g.get("group_type") == "consumer"
                and g.get("state") == "Stable"
                and len(ms) == 1
                and ms[0]["assignment"] == everything
                and ms[0]["target"] == everything
                and ms[0]["member_epoch"] == g["generation"]
            )
            return ok, g

        described = wait_until(shown, "the console to describe the stable consumer group", members=[m1], poll_s=0.5)
        assert described["coordinator_assignor"] in ("uniform", "range"), described
        listed = {g["group_id"]: g for g in get(f"{server.console_url}/api/groups")["groups"]}
        assert listed[group]["group_type"] == "consumer", listed
        assert listed[group]["members"] == 1, listed
        m1.stop()
    finally:
        code = server.stop()
        assert code == 0, f"mk-server exited with {code}; log tail:\n{server.log_tail()}"
