"""The transaction coordinator's admin APIs through the Java Admin client
on three hosted brokers: listTransactions (merged from every broker, each
listing the ids it coordinates) and describeTransactions (at each id's
coordinator), with a live Java transactional producer holding a
transaction open, then committing it.
"""

from __future__ import annotations

from conftest import unique_topic

from mkinterop import java_client
from mkinterop.drivers import DRIVERS
from mkinterop.java_client import JavaTxnProducer


def java(scenario: str, server, **args):
    return java_client.call(scenario, bootstrap=server.bootstrap, **args)


def test_java_lists_and_describes_an_open_then_committed_transaction(three_broker_cluster):
    server = three_broker_cluster
    t = unique_topic("txnadmin")
    DRIVERS["confluent-kafka"].create_topic(server.bootstrap, t, 2, replication_factor=3)
    tid = unique_topic("tid-txnadmin")
    producer = JavaTxnProducer(server.bootstrap, tid)
    try:
        producer.init()
        producer.begin()
        producer.send(t, b"held", 0)
        producer.send(t, b"held", 1)
        producer.flush()
        listed = java("list-transactions", server)
        assert listed[tid]["state"] == "ONGOING" and listed[tid]["producer_id"] >= 0, listed
        described = java("describe-transactions", server, ids=[tid, f"{tid}-never"])
        d = described[tid]
        assert d["error"] is None and d["state"] == "ONGOING", d
        assert d["producer_id"] == listed[tid]["producer_id"], d
        assert sorted(d["partitions"]) == [f"{t}:0", f"{t}:1"], d
        assert described[f"{tid}-never"]["code"] == "TRANSACTIONAL_ID_NOT_FOUND", described
        producer.commit()
    finally:
        producer.close()
    after = java("describe-transactions", server, ids=[tid])[tid]
    assert after["state"] == "COMPLETE_COMMIT" and after["partitions"] == [], after
    assert java("list-transactions", server)[tid]["state"] == "COMPLETE_COMMIT"
