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
from mkinterop.group import wait_until
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


def test_java_transactions_use_v2_so_every_end_bumps_the_epoch(three_broker_cluster):
    """ApiVersions finalizes `transaction.version` 2, so kafka-clients 4.3
    speaks transactions v2 (KIP-890 part 2): Produce v12 and EndTxn v5,
    without AddPartitionsToTxn. Only EndTxn v5 bumps the epoch at every
    end, so describeTransactions' epoch going up by one per commit and per
    abort shows the broker saw v5; the first protocol keeps one epoch per
    producer session. A Java read_committed consumer then reads exactly the
    committed records, and a second producer session of the id fences the
    first."""
    server = three_broker_cluster
    t = unique_topic("txnv2")
    DRIVERS["confluent-kafka"].create_topic(server.bootstrap, t, 2, replication_factor=3)
    tid = unique_topic("tid-txnv2")

    def described() -> dict:
        return java("describe-transactions", server, ids=[tid])[tid]

    producer = JavaTxnProducer(server.bootstrap, tid)
    try:
        producer.init()
        epochs = [described()["epoch"]]
        for i, commit in enumerate([True, False, True]):
            producer.begin()
            producer.send(t, f"v{i}".encode(), i % 2)
            producer.flush()
            d = described()
            assert d["state"] == "ONGOING" and d["epoch"] == epochs[-1], d
            assert d["partitions"] == [f"{t}:{i % 2}"], d
            if commit:
                producer.commit()
            else:
                producer.abort()
            d = described()
            assert d["state"] == ("COMPLETE_COMMIT" if commit else "COMPLETE_ABORT"), d
            epochs.append(d["epoch"])
        assert epochs == [epochs[0] + n for n in range(4)], epochs
    finally:
        producer.close()
    got = DRIVERS["java"].read_isolated(server.bootstrap, t, "read_committed")
    assert sorted(g.value for g in got) == [b"v0", b"v2"], got
    everything = DRIVERS["java"].read_isolated(server.bootstrap, t, "read_uncommitted")
    assert sorted(g.value for g in everything) == [b"v0", b"v1", b"v2"], everything


def test_java_producer_whose_transaction_timed_out_aborts_and_goes_on(broker):
    """Transactions v2 (Kafka 4): when the broker aborts a transaction
    that outlived its timeout, it bumps the epoch and remembers the
    timed-out one, so the Java producer's abortTransaction (EndTxn v5 with
    the old epoch) is answered as a retry of that abort with the new epoch,
    and the same producer runs its next transaction without a new
    initTransactions."""
    t = unique_topic("txn-timeout-v2")
    DRIVERS["confluent-kafka"].create_topic(broker.bootstrap, t, 1)
    tid = unique_topic("tid-timeout-v2")
    producer = JavaTxnProducer(broker.bootstrap, tid, transaction_timeout_ms=3000)
    try:
        producer.init()
        epoch = java("describe-transactions", broker, ids=[tid])[tid]["epoch"]
        producer.begin()
        producer.send(t, b"slow", 0)
        producer.flush()

        def aborted():
            d = java("describe-transactions", broker, ids=[tid])[tid]
            return d["state"] == "COMPLETE_ABORT", d

        wait_until(aborted, "the broker to abort the timed-out transaction", timeout_s=40, poll_s=0.5)
        producer.abort()
        producer.begin()
        producer.send(t, b"again", 0)
        producer.flush()
        producer.commit()
        d = java("describe-transactions", broker, ids=[tid])[tid]
        # The timeout's fence, then the commit's bump: one session throughout.
        assert d["state"] == "COMPLETE_COMMIT" and d["epoch"] == epoch + 2, d
    finally:
        producer.close()
    got = DRIVERS["java"].read_isolated(broker.bootstrap, t, "read_committed")
    assert [g.value for g in got] == [b"again"], got
