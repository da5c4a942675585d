"""Checks shared by every client's scenarios. Each returns nothing and
raises AssertionError with what was expected and what was found."""

from __future__ import annotations

from collections import Counter, defaultdict

from .model import Ack, Got, Rec


def _short(items: list, n: int = 10) -> str:
    return repr(items[:n]) + (f" ... ({len(items)} in all)" if len(items) > n else "")


def check_keyed_round_trip(
    sent: list[Rec], acks: list[Ack], got: list[Got], partitions: int
) -> None:
    """Every acknowledged record is read back exactly once, where the broker
    said it was written, in production order within its partition, and each
    key always lands on the same partition."""
    assert len(acks) == len(sent), f"{len(sent)} records sent, {len(acks)} acknowledged"
    by_value_sent = {r.value: r for r in sent}
    assert len(by_value_sent) == len(sent), "test bug: values must be unique"

    # Count: nothing lost, nothing duplicated.
    values = [g.value for g in got]
    dupes = sorted(v for v, n in Counter(values).items() if n > 1)
    assert not dupes, f"records read more than once: {_short(dupes)}"
    missing = sorted(set(by_value_sent) - set(values))
    assert not missing, f"{len(missing)} acknowledged records never read: {_short(missing)}"
    extra = sorted(set(values) - set(by_value_sent), key=repr)
    assert not extra, f"records read that were never sent: {_short(extra)}"
    assert len(got) == len(sent), f"sent {len(sent)}, read {len(got)}"

    # Where the broker acknowledged each record is where it is read.
    ack_of = {a.value: a for a in acks}
    wrong_place = [
        (g.value, (ack_of[g.value].partition, ack_of[g.value].offset), (g.partition, g.offset))
        for g in got
        if (ack_of[g.value].partition, ack_of[g.value].offset) != (g.partition, g.offset)
    ]
    assert not wrong_place, f"read at another place than acknowledged (value, acked, read): {_short(wrong_place)}"

    # Key, value and headers survive.
    changed = [
        (g.value, by_value_sent[g.value].key, g.key)
        for g in got
        if g.key != by_value_sent[g.value].key or tuple(g.headers) != tuple(by_value_sent[g.value].headers)
    ]
    assert not changed, f"keys or headers changed (value, sent key, read key): {_short(changed)}"

    # Per partition: offsets contiguous from 0 (a fresh topic) and records in
    # the order the producer sent them.
    sent_index = {r.value: i for i, r in enumerate(sent)}
    by_partition: dict[int, list[Got]] = defaultdict(list)
    for g in got:
        by_partition[g.partition].append(g)
    assert set(by_partition) <= set(range(partitions)), f"partitions read: {sorted(by_partition)}"
    assert len(by_partition) == partitions, (
        f"the keys spread over {sorted(by_partition)} only; expected all {partitions} "
        "partitions to be used (does metadata show every partition?)"
    )
    for p, records in by_partition.items():
        offsets = [g.offset for g in records]
        assert offsets == list(range(len(records))), f"partition {p}: offsets {_short(offsets)}"
        order = [sent_index[g.value] for g in records]
        assert order == sorted(order), f"partition {p}: not in production order: {_short(order)}"

    # Each key maps to exactly one partition.
    partitions_of_key: dict[bytes | None, set[int]] = defaultdict(set)
    for g in got:
        partitions_of_key[g.key].add(g.partition)
    split = {k: sorted(ps) for k, ps in partitions_of_key.items() if len(ps) > 1}
    assert not split, f"keys found on several partitions: {split}"


def check_in_order(expected: list[Rec], got: list[Got]) -> None:
    """A single-partition topic reads back exactly `expected`, in order,
    with keys and values intact."""
    assert [(g.key, g.value) for g in got] == [(r.key, r.value) for r in expected], (
        f"read {len(got)} records, expected {len(expected)}; first differences: "
        + _short(
            [
                (i, (r.key, r.value), (g.key, g.value))
                for i, (r, g) in enumerate(zip(expected, got))
                if (r.key, r.value) != (g.key, g.value)
            ]
        )
    )
    offsets = [g.offset for g in got]
    assert offsets == list(range(len(got))), f"offsets {_short(offsets)}"


def expected_offsets_for_time(
    acks: list[Ack], sent: list[Rec], partitions: int, timestamp_ms: int
) -> dict[int, int | None]:
    """Kafka's answer to ListOffsets(timestamp): per partition the earliest
    offset whose timestamp is >= timestamp_ms, None if there is none."""
    ts_of = {r.value: r.timestamp_ms for r in sent}
    result: dict[int, int | None] = {p: None for p in range(partitions)}
    for a in acks:
        ts = ts_of[a.value]
        assert ts is not None, "test bug: timestamp scenarios set every timestamp"
        if ts >= timestamp_ms:
            cur = result[a.partition]
            if cur is None or a.offset < cur:
                result[a.partition] = a.offset
    return result
