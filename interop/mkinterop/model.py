"""What the scenarios send and what they get back, the same for every client."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Rec:
    """A record to produce. `partition=None` lets the client's partitioner
    choose (by key); `timestamp_ms=None` lets the client stamp it."""

    key: bytes | None
    value: bytes
    timestamp_ms: int | None = None
    partition: int | None = None
    headers: tuple[tuple[str, bytes], ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Ack:
    """An acknowledged produce: where the broker says the record went."""

    value: bytes
    partition: int
    offset: int


@dataclass(frozen=True)
class Got:
    """A record as a consumer returned it."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: tuple[tuple[str, bytes], ...] = field(default_factory=tuple)


def got_from(j: dict, decode: Callable[[str | None], bytes | None]) -> Got:
    """A record as a driver process reports it in JSON (partition, offset,
    key, value, timestamp, headers), its bytes decoded by `decode`."""
    return Got(
        j["partition"],
        j["offset"],
        decode(j["key"]),
        decode(j["value"]),
        j["timestamp"],
        tuple((k, decode(v)) for k, v in j["headers"]),
    )


# Null and empty keys and values, then repeated and empty header values;
# (None, None) is left out: kafka-python and aiokafka refuse it. Repeated
# header keys stay adjacent: kafkajs takes headers as an object, so it
# cannot interleave them with other keys.
EDGE_SHAPES = [
    (None, b"null key"),
    (b"", b"empty key"),
    (b"null value", None),
    (b"empty value", b""),
    (b"dup headers", b"v"),
    (b"empty header value", b"v"),
]
EDGE_HEADERS = {4: (("h", b"1"), ("h", b"2"), ("h", b"3"), ("other", b"x")), 5: (("e", b""),)}


def edge_records(base_ms: int, extra: tuple[tuple[bytes | None, bytes | None], ...] = ()) -> list[Rec]:
    """EDGE_SHAPES and then `extra` (key, value) pairs, for partition 0,
    the i-th stamped base_ms + i and carrying EDGE_HEADERS.get(i)."""
    return [
        Rec(key=k, value=v, timestamp_ms=base_ms + i, partition=0, headers=EDGE_HEADERS.get(i, ()))
        for i, (k, v) in enumerate([*EDGE_SHAPES, *extra])
    ]
