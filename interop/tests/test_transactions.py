"""Transactions (issue 11) with real transactional producers of
confluent-kafka, kafka-python and the Java client, read back by every
client's consumer in both isolation levels, plus kcat. On a broker without the transaction APIs
every scenario fails (InitProducerId with a transactional id is refused);
none skips.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict

import pytest
from conftest import unique_topic

from mkinterop.drivers import DRIVERS
from mkinterop.group import committed_offsets, wait_until
from mkinterop.kcat import create_topic_via_cli, kcat
from mkinterop.model import Rec
from mkinterop.txn import TXN_PRODUCERS, open_transaction

TXN_CLIENTS = list(TXN_PRODUCERS)
PARTITIONS = 3


@pytest.fixture(params=TXN_CLIENTS)
def client(request) -> str:
    return request.param


def new_topic(bootstrap: str, *parts: str) -> str:
    topic = unique_topic(*parts)
    DRIVERS["confluent-kafka"].create_topic(bootstrap, topic, partitions=PARTITIONS)
    return topic


def by_partition(got) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = defaultdict(list)
    for g in got:
        out[g.partition].append(g.value)
    return dict(out)


def check_isolated_reads(bootstrap: str, topic: str, committed: dict[int, list[bytes]], everything: dict[int, list[bytes]]):
    """Every client's consumer: read_committed returns exactly the
    committed records, in order per partition; read_uncommitted returns
    every record written, aborted ones included, in order."""
    for name, reader in DRIVERS.items():
        got = by_partition(reader.read_isolated(bootstrap, topic, "read_committed"))
        assert {p: v for p, v in got.items() if v} == {p: v for p, v in committed.items() if v}, (
            f"{name} read_committed: {got}"
        )
        got = by_partition(reader.read_isolated(bootstrap, topic, "read_uncommitted"))
        assert {p: v for p, v in got.items() if v} == {p: v for p, v in everything.items() if v}, (
            f"{name} read_uncommitted: {got}"
        )


def lso_and_hw(bootstrap: str, topic: str) -> tuple[dict[int, int], dict[int, int]]:
    """ListOffsets latest under read_committed (the last stable offset) and
    under read_uncommitted (the high watermark), from kafka-python."""
    from kafka import KafkaConsumer, TopicPartition

    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    ends = []
    for isolation in ("read_committed", "read_uncommitted"):
        c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, isolation_level=isolation)
        try:
            ends.append({tp.partition: o for tp, o in c.end_offsets(tps).items()})
        finally:
            c.close()
    return ends[0], ends[1]


def test_txn_commit_and_abort_on_one_and_across_three_partitions(broker, client):
    """Transactions committed and aborted, on one partition and across
    three, one after the other from one producer: read_committed readers
    see exactly the committed ones in order, read_uncommitted see all; the
    last stable offset then equals the high watermark."""
    topic = new_topic(broker.bootstrap, "txn", client)
    producer = TXN_PRODUCERS[client](broker.bootstrap, unique_topic("tid", client))
    plan = [
        ("a", "commit", [0] * 10),
        ("b", "abort", [0] * 10),
        ("c", "commit", [0, 1, 2] * 10),
        ("d", "abort", [0, 1, 2] * 10),
        ("e", "commit", [1] * 5),
    ]
    committed: dict[int, list[bytes]] = defaultdict(list)
    everything: dict[int, list[bytes]] = defaultdict(list)
    try:
        producer.init()
        for tag, end, partitions in plan:
            producer.begin()
            for i, p in enumerate(partitions):
                value = f"{client}-{tag}-{i:03d}".encode()
                producer.send(topic, value, p)
                everything[p].append(value)
                if end == "commit":
                    committed[p].append(value)
            # Written before the transaction ends, so aborted records are
            # really in the log for read_uncommitted readers.
            producer.flush()
            producer.commit() if end == "commit" else producer.abort()
    finally:
        producer.close()
    check_isolated_reads(broker.bootstrap, topic, committed, everything)
    lso, hw = lso_and_hw(broker.bootstrap, topic)
    assert lso == hw, f"no transaction is open, yet the last stable offsets {lso} trail the high watermarks {hw}"


def _fenced(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return "fenc" in text or "epoch" in text


def _refused_after_timeout(client: str, exc: BaseException) -> bool:
    """How a timed-out producer's commit fails: fenced for clients of the
    first transaction protocol; a transactions-v2 client (the Java client,
    EndTxn v5) gets INVALID_TXN_STATE, as from Kafka 4: its EndTxn with the
    timed-out epoch counts as a retry of the timeout's abort, and a commit
    of an abort is an invalid transition."""
    text = f"{type(exc).__name__} {exc}".lower()
    return _fenced(exc) or (client == "java" and "invalidtxnstate" in text)


def test_txn_second_producer_with_the_same_id_fences_the_first(broker, client):
    """Two producers with one transactional.id: the second's
    init_transactions aborts the first one's open transaction and fences
    it, so the first can no longer commit; the second's transaction
    commits."""
    topic = new_topic(broker.bootstrap, "zombie", client)
    tid = unique_topic("tid-zombie", client)
    old = TXN_PRODUCERS[client](broker.bootstrap, tid)
    new = TXN_PRODUCERS[client](broker.bootstrap, tid)
    try:
        old_values = open_transaction(old, topic, [f"old-{i:02d}".encode() for i in range(10)])

        new.init()
        with pytest.raises(Exception) as raised:
            old.commit()
        assert _fenced(raised.value), f"the fenced producer's commit failed with {raised.value!r}"

        new.begin()
        new_values = [f"new-{i:02d}".encode() for i in range(10)]
        for v in new_values:
            new.send(topic, v, 0)
        new.flush()
        new.commit()
    finally:
        new.close()
    check_isolated_reads(broker.bootstrap, topic, {0: new_values}, {0: old_values + new_values})


def test_txn_left_open_past_its_timeout_is_aborted_and_fenced(broker, client):
    """A transaction left open past its transaction timeout is aborted by
    the broker (the last stable offset moves past it, not before the
    timeout) and its producer is fenced: its commit fails."""
    timeout_ms = 5000
    topic = new_topic(broker.bootstrap, "txn-timeout", client)
    producer = TXN_PRODUCERS[client](broker.bootstrap, unique_topic("tid-timeout", client), transaction_timeout_ms=timeout_ms)
    try:
        values = open_transaction(producer, topic, [f"timeout-{i:02d}".encode() for i in range(10)])
        written_at = time.monotonic()
        lso, hw = lso_and_hw(broker.bootstrap, topic)
        assert lso[0] == 0 and hw[0] == 10, f"while the transaction is open: LSO {lso}, HW {hw}"

        def aborted():
            lso, hw = lso_and_hw(broker.bootstrap, topic)
            return lso[0] == hw[0] and hw[0] > 10, (lso, hw)

        wait_until(aborted, "the broker to abort the timed-out transaction", timeout_s=timeout_ms / 1000 + 30)
        took = time.monotonic() - written_at
        assert took >= timeout_ms / 1000 - 1.0, f"the transaction was aborted {took:.1f}s after it began"
        with pytest.raises(Exception) as raised:
            producer.commit()
        assert _refused_after_timeout(client, raised.value), (
            f"the timed-out producer's commit failed with {raised.value!r}"
        )
    finally:
        producer.close()
    check_isolated_reads(broker.bootstrap, topic, {}, {0: values})


KILLS = 3
INPUT_RECORDS = 10_000


def test_txn_consume_transform_produce_exactly_once_across_sigkills(broker, client, members):
    """A consume-transform-produce loop (read_committed group consumer,
    transactional producer, send_offsets_to_transaction) turns a 10k-record
    input topic into an output topic while its process is SIGKILLed and
    restarted three times at random points, at least once while it holds a
    transaction open with its records written: the output holds each input
    record exactly once, on its partition and in its order (the open
    transactions' records are there only as aborted ones), and the group's
    committed input offsets are the input's end offsets."""
    bootstrap = broker.bootstrap
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    print(f"consume-transform-produce: seed {seed}")
    source = new_topic(bootstrap, "ctp-in", client)
    sink = new_topic(bootstrap, "ctp-out", client)
    sent = [Rec(key=f"k{i % 97}".encode(), value=f"in-{i:05d}".encode(), partition=i % PARTITIONS) for i in range(INPUT_RECORDS)]
    acks = DRIVERS["confluent-kafka"].produce(bootstrap, source, sent)
    ends = {p: 0 for p in range(PARTITIONS)}
    for a in acks:
        ends[a.partition] = max(ends[a.partition], a.offset + 1)
    input_at = {a.value: (a.partition, a.offset) for a in acks}
    group = unique_topic("g-ctp", client)
    cfg = dict(input=source, output=sink, transactional_id=unique_topic("tid-ctp", client), batch=100, module="mkinterop.txn_processor")
    # Kill points leave a fifth of the input for the runs after them: a
    # kill lands a little after its point (the processor keeps going until
    # the signal), and every kill needs input left to process.
    kill_points = sorted(rng.sample(range(500, INPUT_RECORDS * 4 // 5), KILLS))
    # "open": killed while a transaction with written records is open (the
    # processor holds it), so the restart must abort it; "anywhere": killed
    # a random moment after the point, inside or between transactions.
    modes = ["open"] + [rng.choice(["open", "anywhere"]) for _ in range(KILLS - 1)]
    rng.shuffle(modes)
    done = 0
    runs = []
    for run, point in enumerate(kill_points + [None]):
        mode = modes[run] if point is not None else None
        if point is not None:
            point = max(point, done + 1)
            assert point < INPUT_RECORDS, f"no input left for kill {run}: {done} records done"
        hold = {"hold_after": point - done} if mode == "open" else {}
        proc = members.start(client, bootstrap, group, source, f"run{run}", **cfg, **hold)
        runs.append(proc)

        def progress(proc=proc):
            return done + sum(e["n"] for e in proc.of("txn"))

        if mode == "open":
            wait_until(
                lambda proc=proc: (bool(proc.of("open")), progress()),
                f"run {run} to hold a transaction open after {point} committed records",
                timeout_s=90,
                members=[proc],
            )
            proc.kill()
            done = progress()
        elif point is None:
            wait_until(
                lambda: ((c := committed_offsets(bootstrap, group, source)) == ends, c),
                "the last run to commit the input's end offsets",
                timeout_s=120,
                members=[proc],
            )
            proc.stop()
        else:
            wait_until(
                lambda point=point, progress=progress: (progress() >= point, progress()),
                f"run {run} to reach {point} committed records",
                timeout_s=90,
                members=[proc],
                poll_s=0.005,
            )
            # Somewhere inside a later transaction, or between two.
            time.sleep(rng.uniform(0, 0.02))
            proc.kill()
            done = progress()
        assert not proc.errors, proc.describe()

    got = DRIVERS["confluent-kafka"].read_isolated(bootstrap, sink, "read_committed")
    values = [g.value for g in got]
    expected = {b"out:" + r.value for r in sent}
    assert len(values) == len(set(values)), f"{len(values) - len(set(values))} output records are duplicates"
    assert set(values) == expected, (
        f"{len(expected - set(values))} input records missing from the output, "
        f"{len(set(values) - expected)} unexpected output records"
    )
    for p in range(PARTITIONS):
        order = [input_at[g.value[len(b'out:'):]] for g in got if g.partition == p]
        assert all(q == p for q, _ in order), f"output partition {p} holds input of other partitions"
        assert [o for _, o in order] == sorted(o for _, o in order), f"output partition {p} out of input order"
    assert committed_offsets(bootstrap, group, source) == ends
    everything = DRIVERS["confluent-kafka"].read_isolated(bootstrap, sink, "read_uncommitted")
    held = sum(e["n"] for proc in runs for e in proc.of("open"))
    # The records of every transaction left open are in the log, aborted.
    assert len(everything) >= INPUT_RECORDS + held, (
        f"{len(everything)} output records with read_uncommitted; the {held} records of the transactions "
        "left open should be there, aborted"
    )
    print(
        f"consume-transform-produce: killed at {list(zip(kill_points, modes))}; output {len(values)} committed "
        f"records, {len(everything)} including aborted ones ({held} in transactions left open)"
    )


def test_kcat_transactional_produce_and_read_committed_consumer(broker):
    """kcat -P with -X transactional.id produces its input in one committed
    transaction; a confluent-kafka transaction is then aborted on the same
    topic. kcat -C with -X isolation.level=read_committed reads exactly
    kcat's records, and with read_uncommitted the aborted ones too."""
    topic = unique_topic("kcat-txn")
    create_topic_via_cli(broker, topic, 1)
    lines = [f"kcat-txn-{i:04d}" for i in range(300)]
    proc = kcat(broker, "-P", "-v", "-t", topic, "-p", "0", "-X", f"transactional.id={unique_topic('tid-kcat')}",
                stdin="".join(f"{line}\n" for line in lines).encode())
    assert "Transaction successfully committed" in proc.stderr.decode(), proc.stderr.decode()

    aborted = TXN_PRODUCERS["confluent-kafka"](broker.bootstrap, unique_topic("tid-kcat-abort"))
    try:
        open_transaction(aborted, topic, [f"aborted-{i:02d}".encode() for i in range(50)])
        aborted.abort()
    finally:
        aborted.close()

    def consume(isolation: str) -> list[str]:
        out = kcat(broker, "-C", "-t", topic, "-o", "beginning", "-e", "-X", f"isolation.level={isolation}", "-f", "%s\\n")
        return out.stdout.decode().splitlines()

    assert consume("read_committed") == lines
    assert consume("read_uncommitted") == lines + [f"aborted-{i:02d}" for i in range(50)]
