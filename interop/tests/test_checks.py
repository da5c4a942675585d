"""The suite's checks reject what they are meant to reject (no assertion
that cannot fail): each is fed data that is right, then data broken in one
way at a time."""

from __future__ import annotations

import pytest

from mkinterop.checks import check_in_order, check_keyed_round_trip, expected_offsets_for_time
from mkinterop.model import Ack, Got, Rec


def _keyed():
    sent = [Rec(key=f"k{i % 6}".encode(), value=f"v{i}".encode()) for i in range(30)]
    partition_of_key = {f"k{j}".encode(): j % 3 for j in range(6)}
    acks, got, next_offset = [], [], [0, 0, 0]
    for r in sent:
        p = partition_of_key[r.key]
        acks.append(Ack(r.value, p, next_offset[p]))
        got.append(Got(p, next_offset[p], r.key, r.value, 0))
        next_offset[p] += 1
    return sent, acks, got


def test_a_correct_round_trip_passes():
    sent, acks, got = _keyed()
    check_keyed_round_trip(sent, acks, got, partitions=3)


@pytest.mark.parametrize(
    "breakage,message",
    [
        (lambda got: got[:-1], "never read"),
        (lambda got: got + got[:1], "more than once"),
        (lambda got: [Got(g.partition, g.offset, b"other", g.value, 0) for g in got], "keys or headers"),
        (lambda got: [Got(g.partition, g.offset + 1, g.key, g.value, 0) for g in got], "another place"),
        (lambda got: [g for g in got if g.partition != 2], "never read"),
    ],
)
def test_a_broken_round_trip_fails(breakage, message):
    sent, acks, got = _keyed()
    with pytest.raises(AssertionError, match=message):
        check_keyed_round_trip(sent, acks, breakage(got), partitions=3)


def test_records_out_of_production_order_fail():
    sent, acks, got = _keyed()
    # v0 and v3 (keys k0 and k3) are partition 0's offsets 0 and 1: the broker
    # acknowledged and returned them swapped.
    swap = {b"v0": 1, b"v3": 0}
    acks = [Ack(a.value, a.partition, swap[a.value]) if a.value in swap else a for a in acks]
    got = sorted(
        (Got(g.partition, swap[g.value], g.key, g.value, 0) if g.value in swap else g for g in got),
        key=lambda g: (g.partition, g.offset),
    )
    with pytest.raises(AssertionError, match="production order"):
        check_keyed_round_trip(sent, acks, got, partitions=3)


def test_a_key_on_two_partitions_fails():
    sent, acks, got = _keyed()
    # Move the first record of key k0 to partition 1 consistently in acks
    # and reads, so that only the key rule is broken.
    moved = sent[0].value
    acks = [Ack(a.value, 1, 100) if a.value == moved else a for a in acks]
    got = [Got(1, 100, g.key, g.value, 0) if g.value == moved else g for g in got]
    with pytest.raises(AssertionError):
        check_keyed_round_trip(sent, acks, got, partitions=3)


def test_unused_partitions_fail():
    sent = [Rec(key=b"same", value=f"v{i}".encode()) for i in range(5)]
    acks = [Ack(r.value, 0, i) for i, r in enumerate(sent)]
    got = [Got(0, i, r.key, r.value, 0) for i, r in enumerate(sent)]
    with pytest.raises(AssertionError, match="spread over"):
        check_keyed_round_trip(sent, acks, got, partitions=3)


def test_in_order_check():
    sent = [Rec(key=b"k", value=f"v{i}".encode()) for i in range(5)]
    got = [Got(0, i, r.key, r.value, 0) for i, r in enumerate(sent)]
    check_in_order(sent, got)
    with pytest.raises(AssertionError):
        check_in_order(sent, got[::-1])
    with pytest.raises(AssertionError):
        check_in_order(sent, got[:-1])


def test_expected_offsets_for_time():
    sent = [Rec(key=None, value=f"v{i}".encode(), timestamp_ms=1000 + 10 * i, partition=i % 2) for i in range(6)]
    acks = [Ack(r.value, i % 2, i // 2) for i, r in enumerate(sent)]
    assert expected_offsets_for_time(acks, sent, 2, 0) == {0: 0, 1: 0}
    assert expected_offsets_for_time(acks, sent, 2, 1015) == {0: 1, 1: 1}
    assert expected_offsets_for_time(acks, sent, 2, 1050) == {0: None, 1: 2}
    assert expected_offsets_for_time(acks, sent, 2, 1051) == {0: None, 1: None}
