"""What the scenarios send and what they get back, the same for every client."""

from __future__ import annotations

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
