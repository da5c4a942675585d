"""A few Kafka requests encoded by hand, for what no client library sends on
purpose: an OffsetCommit v9 with a member epoch of our choosing (a stale
one, to see the broker refuse it as Kafka does), and a Fetch v4 whose
record batches are read header by header, to see the codec each batch is
served in (what no consumer library reports). Flexible-version framing
(KIP-482): compact strings and arrays, empty tagged-field sections; Fetch
v4 is classic framing.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

OFFSET_COMMIT = 8
FETCH = 1


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _compact_str(s: str | None) -> bytes:
    if s is None:
        return _uvarint(0)
    raw = s.encode()
    return _uvarint(len(raw) + 1) + raw


def _header(api_key: int, version: int, correlation_id: int, client_id: str) -> bytes:
    raw = client_id.encode()
    # Request header v2: a classic nullable client id, then tagged fields.
    return struct.pack(">hhih", api_key, version, correlation_id, len(raw)) + raw + _uvarint(0)


def offset_commit_v9(group: str, member: str, epoch: int, topic: str, partition: int, offset: int) -> bytes:
    body = _compact_str(group) + struct.pack(">i", epoch) + _compact_str(member) + _compact_str(None)
    part = struct.pack(">iqi", partition, offset, -1) + _compact_str(None) + _uvarint(0)
    body += _uvarint(2) + _compact_str(topic) + _uvarint(2) + part + _uvarint(0)
    return body + _uvarint(0)


class _Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        out = self.data[self.pos : self.pos + n]
        if len(out) != n:
            raise ValueError(f"truncated response at {self.pos}")
        self.pos += n
        return out

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def compact_str(self) -> str:
        return self.take(self.uvarint() - 1).decode()


def _header_v1(api_key: int, version: int, correlation_id: int, client_id: str) -> bytes:
    raw = client_id.encode()
    # Request header v1 (non-flexible requests): no tagged fields.
    return struct.pack(">hhih", api_key, version, correlation_id, len(raw)) + raw


def _call(bootstrap: str, api_key: int, version: int, body: bytes, flexible: bool = True) -> bytes:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    header = _header if flexible else _header_v1
    frame = header(api_key, version, 7, "mkinterop-raw") + body
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", _recv(s, 4))[0]
        data = _recv(s, size)
    if struct.unpack(">i", data[:4])[0] != 7:
        raise ValueError("the answer carries another correlation id")
    return data[4:]


def _recv(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        buf += chunk
    return buf


def commit_with_epoch(bootstrap: str, group: str, member: str, epoch: int, topic: str, partition: int, offset: int) -> int:
    """OffsetCommit v9 of one partition as `member` at `epoch`; returns the
    partition's error code (0 when stored)."""
    r = _Reader(_call(bootstrap, OFFSET_COMMIT, 9, offset_commit_v9(group, member, epoch, topic, partition, offset)))
    r.skip_tags()  # response header v1
    r.take(4)  # throttle_time_ms
    codes = []
    for _ in range(r.uvarint() - 1):
        r.compact_str()
        for _ in range(r.uvarint() - 1):
            _, code = struct.unpack(">ih", r.take(6))
            codes.append(code)
            r.skip_tags()
        r.skip_tags()
    if len(codes) != 1:
        raise ValueError(f"expected one partition's answer, got {codes}")
    return codes[0]


def _str(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


class FetchError(ValueError):
    """A partition's error code in a Fetch answer."""

    def __init__(self, code: int):
        super().__init__(f"fetch answered error {code}")
        self.code = code


@dataclass(frozen=True)
class FetchedBatch:
    """The header fields of one record batch as a Fetch served it."""

    base_offset: int
    last_offset_delta: int
    attributes: int
    producer_id: int
    base_sequence: int
    record_count: int

    @property
    def codec(self) -> int:
        return self.attributes & 0x07


def fetched_batch_codecs(bootstrap: str, topic: str, partition: int = 0, offset: int = 0, version: int = 10) -> list[int]:
    """The codec (attributes bits 0-2: 0 none, 1 gzip, 2 snappy, 3 lz4, 4
    zstd) of every complete record batch one Fetch (v4, or v10, the first
    that may carry zstd) of `topic`'s `partition` from `offset` returns (up
    to 8 MiB); a partition error raises FetchError."""
    return [b.codec for b in fetched_batches(bootstrap, topic, partition, offset, version)]


def fetched_batches(
    bootstrap: str, topic: str, partition: int = 0, offset: int = 0, version: int = 10
) -> list[FetchedBatch]:
    """The header of every complete record batch one Fetch (v4 or v10) of
    `topic`'s `partition` from `offset` returns (up to 8 MiB); a partition
    error raises FetchError."""
    if version not in (4, 10):
        raise ValueError(f"Fetch v{version} is not spelled here")
    max_bytes = 8 << 20
    body = struct.pack(">iiiib", -1, 1000, 1, max_bytes, 0)
    if version >= 7:
        body += struct.pack(">ii", 0, -1)  # no fetch session
    body += struct.pack(">i", 1) + _str(topic) + struct.pack(">i", 1)
    if version >= 9:
        body += struct.pack(">iiqqi", partition, -1, offset, -1, max_bytes)
    else:
        body += struct.pack(">iqi", partition, offset, max_bytes)
    if version >= 7:
        body += struct.pack(">i", 0)  # forgotten topics
    r = _Reader(_call(bootstrap, FETCH, version, body, flexible=False))
    r.take(4)  # throttle_time_ms
    if version >= 7:
        (code,) = struct.unpack(">h", r.take(2))
        if code != 0:
            raise FetchError(code)
        r.take(4)  # session_id
    (topics,) = struct.unpack(">i", r.take(4))
    batches: list[FetchedBatch] = []
    for _ in range(topics):
        (name_len,) = struct.unpack(">h", r.take(2))
        r.take(name_len)
        (partitions,) = struct.unpack(">i", r.take(4))
        for _ in range(partitions):
            _, code, _, _ = struct.unpack(">ihqq", r.take(22))
            if version >= 5:
                r.take(8)  # log_start_offset
            if code != 0:
                raise FetchError(code)
            (aborted,) = struct.unpack(">i", r.take(4))
            r.take(16 * max(aborted, 0))
            (size,) = struct.unpack(">i", r.take(4))
            batches += _batch_headers(r.take(max(size, 0)))
    return batches


# A v2 batch header: baseOffset i64, batchLength i32, partitionLeaderEpoch
# i32, magic i8, crc u32, attributes i16, lastOffsetDelta i32,
# baseTimestamp i64, maxTimestamp i64, producerId i64, producerEpoch i16,
# baseSequence i32, recordCount i32: 61 bytes.
_BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")


def _batch_headers(records: bytes) -> list[FetchedBatch]:
    """The complete batches of a records section; a partial last batch is
    left out, as clients leave it."""
    out = []
    pos = 0
    while pos + _BATCH_HEADER.size <= len(records):
        f = _BATCH_HEADER.unpack_from(records, pos)
        length = f[1]
        if pos + 12 + length > len(records):
            break
        out.append(
            FetchedBatch(
                base_offset=f[0],
                last_offset_delta=f[6],
                attributes=f[5],
                producer_id=f[9],
                base_sequence=f[11],
                record_count=f[12],
            )
        )
        pos += 12 + length
    return out
