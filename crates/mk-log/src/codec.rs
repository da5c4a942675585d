//! The MKB1 batch encoding, byte exact (spec 01). All integers big-endian.
//!
//! ```text
//! frame   := magic "MKB1" | payload_len u32 | crc u32 (CRC-32C of payload) | payload
//! payload := version u8 | base_offset i64 | leader_epoch u32 | producer_id i64
//!          | producer_epoch i32 | base_sequence i32 | flags u8 | last_offset_delta i32
//!          | txn_id_len u16 | record_count u32 | txn_id bytes | record*
//! record  := offset_delta i32 | timestamp_ms i64 | key_len i32 | value_len i32
//!          | header_count u16 | key | value | header*
//! header  := key_len u16 | key (UTF-8) | value_len i32 | value
//! ```
//!
//! Version 2 payloads (a producer's record block kept as produced) are
//! `block.rs`; both versions share the frame and the first 40 payload
//! bytes, read here. docs/mkb1.md is the reference for outside decoders.
//!
//! Decoding never panics and never allocates more than the frame's own size,
//! whatever counts the frame claims: every capacity is bounded by the bytes
//! that are actually left.

use crate::error::{LogError, Result};
use crate::record::{ControlType, Header, ProducerInfo, Record, RecordBatch};
use bytes::Bytes;
use mk_core::{ByteReader, Truncated};

/// The four magic bytes that start every frame.
pub const MAGIC: &[u8; 4] = b"MKB1";
/// magic + payload_len + crc.
pub const FRAME_HEADER_BYTES: usize = 12;
/// The fixed part of a payload, before the transactional id.
pub const PAYLOAD_HEADER_BYTES: usize = 40;
/// The fixed part of a record, before key and value.
pub const RECORD_HEADER_BYTES: usize = 22;
/// The most bytes a stored version 2 block may decompress to when read.
/// Produce admitted it decompressed within `max_batch_bytes` (16 MiB by
/// default); this bound keeps a damaged or planted frame from ballooning a
/// read.
pub const MAX_UNCOMPRESSED_READ_BYTES: usize = 64 << 20;
/// The smallest possible record header (`key_len u16` + `value_len i32`).
const HEADER_MIN_BYTES: usize = 6;

const FLAG_TRANSACTIONAL: u8 = 0b001;
const FLAG_COMMIT: u8 = 0b010;
const FLAG_ABORT: u8 = 0b100;

/// The fields of a batch that can be read without decoding its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    pub leader_epoch: i32,
    pub producer: ProducerInfo,
    pub transactional: bool,
    pub control: Option<ControlType>,
    pub last_offset_delta: i32,
    pub record_count: u32,
}

impl BatchHeader {
    /// The header of a batch in memory whose first offset is `base_offset`.
    /// With `decode_header` (a header read from a frame) this is where every
    /// `BatchHeader` is built, so the two cannot drift apart.
    pub(crate) fn of_batch(batch: &RecordBatch, base_offset: i64) -> Self {
        Self {
            base_offset,
            leader_epoch: batch.leader_epoch(),
            producer: batch.producer(),
            transactional: batch.is_transactional(),
            control: batch.control(),
            last_offset_delta: batch.last_offset_delta(),
            // A batch holds at most `max_batch_bytes` of records, far fewer than 2^32.
            record_count: u32::try_from(batch.record_count()).expect("record count fits u32"),
        }
    }
    /// The same batch after compaction kept `record_count` of its records:
    /// offsets, producer and epoch never change, only the count.
    pub(crate) fn with_record_count(self, record_count: u32) -> Self {
        Self {
            record_count,
            ..self
        }
    }
    /// `base_offset + last_offset_delta + 1`.
    pub fn next_offset(&self) -> i64 {
        self.base_offset + i64::from(self.last_offset_delta) + 1
    }
    /// The offset of the batch's last logical record.
    pub fn last_offset(&self) -> i64 {
        self.base_offset + i64::from(self.last_offset_delta)
    }
    /// `base_sequence + last_offset_delta`, or -1 without a sequence.
    pub fn last_sequence(&self) -> i32 {
        crate::record::last_sequence(self.producer.base_sequence, self.last_offset_delta)
    }
}

/// The exact number of bytes `encode` will produce for `batch`.
pub fn encoded_len(batch: &RecordBatch) -> usize {
    if let Some(block) = batch.block() {
        return block.encoded_len();
    }
    let mut n =
        FRAME_HEADER_BYTES + PAYLOAD_HEADER_BYTES + batch.transactional_id().map_or(0, str::len);
    for r in batch.records() {
        n += RECORD_HEADER_BYTES
            + r.key.as_ref().map_or(0, Bytes::len)
            + r.value.as_ref().map_or(0, Bytes::len);
        for h in &r.headers {
            n += HEADER_MIN_BYTES + h.key.len() + h.value.as_ref().map_or(0, Bytes::len);
        }
    }
    n
}

/// Encodes an assigned batch into a new buffer.
pub fn encode(batch: &RecordBatch) -> Result<Bytes> {
    let mut buf = Vec::new();
    encode_into(batch, &mut buf)?;
    Ok(Bytes::from(buf))
}

/// Encodes an assigned batch, appending the frame to `out`. On error `out`
/// is left as it was. A batch that kept its producer's block is written as
/// a version 2 frame around that block, any other as version 1.
pub fn encode_into(batch: &RecordBatch, out: &mut Vec<u8>) -> Result<()> {
    encode_head_into(batch, out)?;
    out.extend_from_slice(frame_tail(batch));
    Ok(())
}

/// [`encode_into`] for a vectored write: appends the frame to `out` except
/// for its [`frame_tail`], to be written right after it. On error `out` is
/// left as it was.
pub fn encode_head_into(batch: &RecordBatch, out: &mut Vec<u8>) -> Result<()> {
    let base_offset = batch
        .base_offset()
        .ok_or_else(|| LogError::InvalidRecord("cannot encode an unassigned batch".into()))?;
    if let Some(block) = batch.block() {
        if batch.is_block_only() {
            batch.validate()?;
        }
        let mut assigned = block.clone();
        assigned.assign(base_offset, batch.leader_epoch())?;
        return assigned.encode_head_into(out);
    }
    batch.validate()?;
    let start = out.len();
    let total = encoded_len(batch);
    out.reserve(total);
    if let Err(e) = encode_v1_into(batch, base_offset, total, out) {
        out.truncate(start);
        return Err(e);
    }
    debug_assert_eq!(out.len() - start, total);
    let crc = crc32c::crc32c(&out[start + FRAME_HEADER_BYTES..]);
    out[start + 8..start + 12].copy_from_slice(&crc.to_be_bytes());
    Ok(())
}

/// What [`encode_head_into`] leaves out of `batch`'s frame: a version 2
/// frame's block, as produced (empty for version 1, which it writes whole).
pub fn frame_tail(batch: &RecordBatch) -> &[u8] {
    batch.block().map_or(&[], |b| b.block())
}

/// Appends a validated batch's version 1 frame of `total` bytes, its CRC
/// left zero; on error the caller cuts what was appended.
fn encode_v1_into(
    batch: &RecordBatch,
    base_offset: i64,
    total: usize,
    out: &mut Vec<u8>,
) -> Result<()> {
    let epoch = u32::try_from(batch.leader_epoch()).map_err(|_| {
        LogError::InvalidRecord(format!(
            "an assigned batch has a leader epoch >= 0, got {}",
            batch.leader_epoch()
        ))
    })?;
    let txn_id = batch.transactional_id().unwrap_or("").as_bytes();
    let txn_id_len = u16_len(txn_id.len(), "transactional id")?;
    let record_count = u32::try_from(batch.records().len())
        .map_err(|_| LogError::InvalidRecord("too many records".into()))?;
    let payload_len = u32::try_from(total - FRAME_HEADER_BYTES).map_err(|_| {
        LogError::InvalidRecord(format!("a batch of {total} bytes is too large to encode"))
    })?;
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&payload_len.to_be_bytes());
    out.extend_from_slice(&[0; 4]); // CRC, filled in by the caller.
    out.push(crate::record::FORMAT_VERSION);
    out.extend_from_slice(&base_offset.to_be_bytes());
    out.extend_from_slice(&epoch.to_be_bytes());
    let p = batch.producer();
    out.extend_from_slice(&p.producer_id.to_be_bytes());
    out.extend_from_slice(&p.producer_epoch.to_be_bytes());
    out.extend_from_slice(&p.base_sequence.to_be_bytes());
    out.push(flags_of(batch));
    out.extend_from_slice(&batch.last_offset_delta().to_be_bytes());
    out.extend_from_slice(&txn_id_len.to_be_bytes());
    out.extend_from_slice(&record_count.to_be_bytes());
    out.extend_from_slice(txn_id);
    for (delta, r) in batch.offset_deltas().iter().zip(batch.records()) {
        encode_v1_record(*delta, r, out)?;
    }
    Ok(())
}

/// Appends one record of a version 1 frame.
fn encode_v1_record(delta: i32, r: &Record, out: &mut Vec<u8>) -> Result<()> {
    out.extend_from_slice(&delta.to_be_bytes());
    out.extend_from_slice(&r.timestamp_ms.to_be_bytes());
    out.extend_from_slice(&i32_len(r.key.as_ref(), "key")?.to_be_bytes());
    out.extend_from_slice(&i32_len(r.value.as_ref(), "value")?.to_be_bytes());
    out.extend_from_slice(&u16_len(r.headers.len(), "header count")?.to_be_bytes());
    if let Some(k) = &r.key {
        out.extend_from_slice(k);
    }
    if let Some(v) = &r.value {
        out.extend_from_slice(v);
    }
    for h in &r.headers {
        out.extend_from_slice(&u16_len(h.key.len(), "header key")?.to_be_bytes());
        out.extend_from_slice(h.key.as_bytes());
        out.extend_from_slice(&i32_len(h.value.as_ref(), "header value")?.to_be_bytes());
        if let Some(v) = &h.value {
            out.extend_from_slice(v);
        }
    }
    Ok(())
}

fn flags_of(batch: &RecordBatch) -> u8 {
    let mut flags = 0;
    if batch.is_transactional() {
        flags |= FLAG_TRANSACTIONAL;
    }
    match batch.control() {
        Some(ControlType::Commit) => flags |= FLAG_COMMIT,
        Some(ControlType::Abort) => flags |= FLAG_ABORT,
        None => {}
    }
    flags
}

fn u16_len(len: usize, what: &str) -> Result<u16> {
    u16::try_from(len)
        .map_err(|_| LogError::InvalidRecord(format!("{what} is {len} long; at most 65535 fits")))
}

fn i32_len(bytes: Option<&Bytes>, what: &str) -> Result<i32> {
    match bytes {
        None => Ok(-1),
        Some(b) => i32::try_from(b.len()).map_err(|_| {
            LogError::InvalidRecord(format!("{what} of {} bytes is too large", b.len()))
        }),
    }
}

/// Looks at the start of `buf` and returns the total length of the frame
/// there, `None` if fewer than 12 bytes are available. Fails on a wrong
/// magic or a payload longer than `max_batch_bytes`.
pub fn peek_frame_len(buf: &[u8], max_batch_bytes: u32) -> Result<Option<usize>> {
    if buf.len() < FRAME_HEADER_BYTES {
        return Ok(None);
    }
    if &buf[..4] != MAGIC {
        return Err(corrupt(format!("bad magic {:02x?}", &buf[..4])));
    }
    let payload_len = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
    if payload_len > max_batch_bytes {
        return Err(corrupt(format!(
            "payload length {payload_len} exceeds max_batch_bytes {max_batch_bytes}"
        )));
    }
    if (payload_len as usize) < PAYLOAD_HEADER_BYTES {
        return Err(corrupt(format!(
            "payload length {payload_len} is shorter than the {PAYLOAD_HEADER_BYTES}-byte batch header"
        )));
    }
    Ok(Some(FRAME_HEADER_BYTES + payload_len as usize))
}

/// Checks the frame envelope (magic, exact length, CRC) of `frame` and
/// decodes only the batch header. `frame` must be exactly one frame.
/// Both payload versions are read (version 2 by `block.rs`).
pub fn decode_header(frame: &[u8], max_batch_bytes: u32) -> Result<BatchHeader> {
    payload_header(checked_payload(frame, max_batch_bytes)?)
}

/// [`decode_header`] without the frame CRC check: magic, exact length
/// and the header's own rules only (the CRC is checked later, with
/// [`check_frame_crc`]).
pub fn decode_header_unchecked(frame: &[u8], max_batch_bytes: u32) -> Result<BatchHeader> {
    payload_header(sized_payload(frame, max_batch_bytes)?)
}

/// The batch header of a payload of either version.
fn payload_header(payload: &[u8]) -> Result<BatchHeader> {
    if payload.first() == Some(&crate::block::BLOCK_VERSION) {
        return crate::block::payload_header(payload);
    }
    read_batch_header(&mut ByteReader::new(payload)).map(|(h, _)| h)
}

/// Checks the CRC-32C of a frame whose envelope was already sized.
pub(crate) fn check_frame_crc(frame: &[u8]) -> Result<()> {
    let (Some(stored), Some(payload)) = (frame.get(8..12), frame.get(FRAME_HEADER_BYTES..)) else {
        return Err(corrupt(format!(
            "frame of {} bytes has no CRC",
            frame.len()
        )));
    };
    let expected = u32::from_be_bytes([stored[0], stored[1], stored[2], stored[3]]);
    let actual = crate::crc::whole(payload);
    if expected != actual {
        return Err(corrupt(format!(
            "CRC mismatch: stored {expected:08x}, computed {actual:08x}"
        )));
    }
    Ok(())
}

/// The payload of exactly one frame (magic and exact length checked, not
/// the CRC).
fn sized_payload(frame: &[u8], max_batch_bytes: u32) -> Result<&[u8]> {
    let len = peek_frame_len(frame, max_batch_bytes)?.ok_or_else(|| {
        corrupt(format!(
            "frame of {} bytes is shorter than its header",
            frame.len()
        ))
    })?;
    if len != frame.len() {
        return Err(corrupt(format!(
            "frame length mismatch: header says {len} bytes, got {}",
            frame.len()
        )));
    }
    Ok(&frame[FRAME_HEADER_BYTES..])
}

/// Checks the envelope of exactly one frame of either version (magic,
/// exact length, CRC-32C) and returns its payload.
pub(crate) fn checked_payload(frame: &[u8], max_batch_bytes: u32) -> Result<&[u8]> {
    let payload = sized_payload(frame, max_batch_bytes)?;
    check_frame_crc(frame)?;
    Ok(payload)
}

/// Decodes one complete frame. Key, value and header values are zero-copy
/// slices of `frame`.
pub fn decode(frame: &Bytes, max_batch_bytes: u32) -> Result<RecordBatch> {
    let header = decode_header(frame, max_batch_bytes)?;
    decode_verified(frame, &header)
}

/// Decodes the records of a frame whose envelope and header were already
/// checked by [`decode_header`] (the read path verifies each CRC once). A
/// version 2 frame's block is decompressed, within
/// [`MAX_UNCOMPRESSED_READ_BYTES`], and its records decoded.
pub fn decode_verified(frame: &Bytes, header: &BatchHeader) -> Result<RecordBatch> {
    if crate::block::frame_version(frame) == Some(crate::block::BLOCK_VERSION) {
        return crate::block::decode_verified(frame)?.records(MAX_UNCOMPRESSED_READ_BYTES);
    }
    let payload = frame.slice(FRAME_HEADER_BYTES..);
    let mut r = ByteReader::new(&payload);
    let (_, txn_id_len) = read_batch_header(&mut r)?;
    let txn_id = r.take(usize::from(txn_id_len)).map_err(truncated)?;
    let transactional_id = if header.transactional {
        Some(utf8(txn_id, "transactional id")?.to_string())
    } else if txn_id_len > 0 {
        return Err(corrupt(
            "transactional id bytes without the transactional flag",
        ));
    } else {
        None
    };
    // Capacities come from the bytes actually left, never from the claimed
    // counts alone.
    let count = header.record_count as usize;
    let mut records = Vec::with_capacity(count.min(r.remaining() / RECORD_HEADER_BYTES));
    let mut deltas = Vec::with_capacity(records.capacity());
    for _ in 0..count {
        deltas.push(r.i32().map_err(truncated)?);
        let timestamp_ms = r.i64().map_err(truncated)?;
        let key_len = len_i32(&mut r, "key")?;
        let value_len = len_i32(&mut r, "value")?;
        let header_count = usize::from(r.u16().map_err(truncated)?);
        let key = opt_bytes(&mut r, &payload, key_len)?;
        let value = opt_bytes(&mut r, &payload, value_len)?;
        let mut headers = Vec::with_capacity(header_count.min(r.remaining() / HEADER_MIN_BYTES));
        for _ in 0..header_count {
            let key_len = usize::from(r.u16().map_err(truncated)?);
            let key = utf8(r.take(key_len).map_err(truncated)?, "header key")?.to_string();
            let value_len = len_i32(&mut r, "header value")?;
            let value = opt_bytes(&mut r, &payload, value_len)?;
            headers.push(Header { key, value });
        }
        records.push(Record {
            key,
            value,
            timestamp_ms,
            headers,
        });
    }
    if r.remaining() != 0 {
        return Err(corrupt(format!(
            "{} trailing bytes after the last record",
            r.remaining()
        )));
    }
    RecordBatch::from_parts(
        records,
        deltas,
        header.last_offset_delta,
        header.base_offset,
        header.leader_epoch,
        header.producer,
        transactional_id,
        header.control,
    )
    .map_err(corrupt)
}

/// Reads the 40-byte header of a version 1 payload; returns it and the
/// transactional id length.
fn read_batch_header(r: &mut ByteReader<'_>) -> Result<(BatchHeader, u16)> {
    let (header, txn_id_len) = read_common_header(r, crate::record::FORMAT_VERSION)?;
    // A version 1 marker is its header alone; version 2 keeps Kafka's
    // control record in its block.
    if header.control.is_some() && header.record_count != 0 {
        return Err(corrupt(format!(
            "a control batch claims {} records",
            header.record_count
        )));
    }
    Ok((header, txn_id_len))
}

/// Reads the 40 header bytes both payload versions share (docs/mkb1.md)
/// and checks that the payload is of `version`; returns the header and the
/// transactional id length.
pub(crate) fn read_common_header(
    r: &mut ByteReader<'_>,
    version: u8,
) -> Result<(BatchHeader, u16)> {
    let found = r.u8().map_err(truncated)?;
    if found != version {
        return Err(corrupt(format!("unknown batch version {found}")));
    }
    let base_offset = r.i64().map_err(truncated)?;
    if base_offset < 0 {
        return Err(corrupt(format!("negative base offset {base_offset}")));
    }
    let epoch = r.u32().map_err(truncated)?;
    let leader_epoch = i32::try_from(epoch)
        .map_err(|_| corrupt(format!("leader epoch {epoch} is out of range")))?;
    let producer = ProducerInfo {
        producer_id: r.i64().map_err(truncated)?,
        producer_epoch: r.i32().map_err(truncated)?,
        base_sequence: r.i32().map_err(truncated)?,
    };
    let flags = r.u8().map_err(truncated)?;
    if flags & !(FLAG_TRANSACTIONAL | FLAG_COMMIT | FLAG_ABORT) != 0 {
        return Err(corrupt(format!("unknown flags {flags:#04x}")));
    }
    let control = match (flags & FLAG_COMMIT != 0, flags & FLAG_ABORT != 0) {
        (true, true) => return Err(corrupt("both commit and abort marker flags are set")),
        (true, false) => Some(ControlType::Commit),
        (false, true) => Some(ControlType::Abort),
        (false, false) => None,
    };
    let transactional = flags & FLAG_TRANSACTIONAL != 0;
    if control.is_some() && !transactional {
        return Err(corrupt("a marker batch without the transactional flag"));
    }
    let last_offset_delta = r.i32().map_err(truncated)?;
    if last_offset_delta < 0 {
        return Err(corrupt(format!(
            "negative last offset delta {last_offset_delta}"
        )));
    }
    if base_offset
        .checked_add(i64::from(last_offset_delta) + 1)
        .is_none()
    {
        return Err(corrupt("base offset plus last offset delta overflows"));
    }
    let txn_id_len = r.u16().map_err(truncated)?;
    let record_count = r.u32().map_err(truncated)?;
    if !transactional && txn_id_len != 0 {
        return Err(corrupt(
            "transactional id bytes without the transactional flag",
        ));
    }
    Ok((
        BatchHeader {
            base_offset,
            leader_epoch,
            producer,
            transactional,
            control,
            last_offset_delta,
            record_count,
        },
        txn_id_len,
    ))
}

pub(crate) fn corrupt(msg: impl Into<String>) -> LogError {
    LogError::CorruptBatch(msg.into())
}

pub(crate) fn utf8<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|e| corrupt(format!("{what} is not valid UTF-8: {e}")))
}

/// Running out of payload bytes: the frame claims more than it holds.
pub(crate) fn truncated(t: Truncated) -> LogError {
    corrupt(format!("payload truncated: {t}"))
}

/// A length field where -1 means None and other negatives are corrupt.
fn len_i32(r: &mut ByteReader<'_>, what: &str) -> Result<Option<usize>> {
    match r.i32().map_err(truncated)? {
        -1 => Ok(None),
        n if n < 0 => Err(corrupt(format!("{what} length {n} is negative"))),
        n => Ok(Some(n as usize)),
    }
}

/// Takes `len` bytes as a zero-copy slice of `whole` (the buffer `r`
/// reads).
fn opt_bytes(r: &mut ByteReader<'_>, whole: &Bytes, len: Option<usize>) -> Result<Option<Bytes>> {
    match len {
        None => Ok(None),
        Some(n) => {
            let start = r.position();
            r.take(n).map_err(truncated)?;
            Ok(Some(whole.slice(start..start + n)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Header;

    const MAX: u32 = 16 * 1024 * 1024;

    fn b(s: &[u8]) -> Bytes {
        Bytes::copy_from_slice(s)
    }

    pub(crate) fn fixed_batch() -> RecordBatch {
        let records = vec![
            Record::new(Some(b(b"k1")), Some(b(b"hello")), 1_700_000_000_000).with_headers(vec![
                Header::new("h", Some(b(b"v"))),
                Header::new("n", None),
            ]),
            Record::new(None, Some(b(b"")), 1_700_000_000_001),
            Record::new(Some(b(b"")), None, 1_700_000_000_002),
        ];
        let mut batch = RecordBatch::new(records)
            .unwrap()
            .with_producer(ProducerInfo {
                producer_id: 42,
                producer_epoch: 3,
                base_sequence: 7,
            })
            .with_transactional_id("tx-1");
        batch.assign(100, 5).unwrap();
        batch
    }

    #[test]
    fn header_sizes_match_the_spec() {
        let mut batch = RecordBatch::new(vec![Record::new(None, None, 0)]).unwrap();
        batch.assign(0, 0).unwrap();
        let frame = encode(&batch).unwrap();
        assert_eq!(
            frame.len(),
            FRAME_HEADER_BYTES + PAYLOAD_HEADER_BYTES + RECORD_HEADER_BYTES
        );
        assert_eq!(encoded_len(&batch), frame.len());
    }

    #[test]
    fn round_trip_keeps_none_distinct_from_empty() {
        let batch = fixed_batch();
        let frame = encode(&batch).unwrap();
        assert_eq!(frame.len(), encoded_len(&batch));
        let back = decode(&frame, MAX).unwrap();
        assert_eq!(back, batch);
        assert_eq!(back.records()[1].key, None);
        assert_eq!(back.records()[1].value, Some(Bytes::new()));
        assert_eq!(back.records()[2].key, Some(Bytes::new()));
        assert_eq!(back.records()[2].value, None);
        assert_eq!(back.records()[0].headers[1].value, None);
    }

    #[test]
    fn the_header_of_a_batch_in_memory_is_the_header_on_disk() {
        let batch = fixed_batch();
        let frame = encode(&batch).unwrap();
        assert_eq!(batch.header(), Some(decode_header(&frame, MAX).unwrap()));
        let unassigned = RecordBatch::new(vec![Record::new(None, None, 0)]).unwrap();
        assert_eq!(unassigned.header(), None);
    }

    #[test]
    fn a_truncated_payload_names_what_ran_out() {
        let batch = fixed_batch();
        let mut p = payload_of(&batch);
        p.truncate(p.len() - 1);
        let err = decode(&frame_of(&p), MAX).unwrap_err();
        assert!(
            err.to_string().contains("payload truncated: ")
                && err.to_string().contains("but only 1 left"),
            "{err}"
        );
    }

    #[test]
    fn control_batches_round_trip() {
        for kind in [ControlType::Commit, ControlType::Abort] {
            let mut c = RecordBatch::marker(
                kind,
                "tx",
                ProducerInfo {
                    producer_id: 1,
                    producer_epoch: 0,
                    base_sequence: -1,
                },
            );
            c.assign(9, 2).unwrap();
            let frame = encode(&c).unwrap();
            assert_eq!(decode(&frame, MAX).unwrap(), c);
            let h = decode_header(&frame, MAX).unwrap();
            assert_eq!(h.control, Some(kind));
            assert_eq!(h.next_offset(), 10);
        }
    }

    #[test]
    fn unassigned_batch_cannot_be_encoded() {
        let batch = RecordBatch::new(vec![Record::new(None, None, 0)]).unwrap();
        assert_eq!(
            encode(&batch).unwrap_err().code(),
            mk_core::ErrorCode::InvalidRecord
        );
    }

    #[test]
    fn oversized_header_key_is_invalid_record_on_encode() {
        let mut batch = RecordBatch::new(vec![
            Record::new(None, None, 0).with_headers(vec![Header::new("k".repeat(65_536), None)]),
        ])
        .unwrap();
        batch.assign(0, 0).unwrap();
        let mut out = vec![1, 2, 3];
        let err = encode_into(&batch, &mut out).unwrap_err();
        assert_eq!(err.code(), mk_core::ErrorCode::InvalidRecord);
        assert_eq!(
            out,
            vec![1, 2, 3],
            "a failed encode leaves the buffer as it was"
        );
    }

    /// Decoding `frame` (with `max` batch bytes) fails with CORRUPT_BATCH;
    /// `case` names it in a failure.
    fn assert_corrupt(frame: &Bytes, max: u32, case: &str) {
        match decode(frame, max) {
            Err(err) => assert_eq!(
                err.code(),
                mk_core::ErrorCode::CorruptBatch,
                "{case}: {err}"
            ),
            Ok(batch) => panic!("{case}: decoded {batch:?}"),
        }
    }

    #[test]
    fn crc_flip_is_corrupt_batch() {
        let frame = encode(&fixed_batch()).unwrap();
        for pos in [8, FRAME_HEADER_BYTES + 3, frame.len() - 1] {
            let mut bad = frame.to_vec();
            bad[pos] ^= 0x01;
            assert_corrupt(&Bytes::from(bad), MAX, &format!("flip at {pos}"));
        }
    }

    #[test]
    fn every_truncation_of_a_valid_frame_is_corrupt_batch() {
        let frame = encode(&fixed_batch()).unwrap();
        for len in 0..frame.len() {
            assert_corrupt(&frame.slice(..len), MAX, &format!("truncated to {len}"));
        }
    }

    #[test]
    fn trailing_bytes_are_corrupt_batch() {
        let mut frame = encode(&fixed_batch()).unwrap().to_vec();
        frame.push(0);
        assert_corrupt(&Bytes::from(frame), MAX, "one trailing byte");
    }

    /// Re-frames `payload` with a correct CRC, so tests reach the checks
    /// behind the CRC.
    fn frame_of(payload: &[u8]) -> Bytes {
        let mut f = Vec::new();
        f.extend_from_slice(MAGIC);
        f.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_be_bytes());
        f.extend_from_slice(&crc32c::crc32c(payload).to_be_bytes());
        f.extend_from_slice(payload);
        Bytes::from(f)
    }

    fn payload_of(batch: &RecordBatch) -> Vec<u8> {
        encode(batch).unwrap()[FRAME_HEADER_BYTES..].to_vec()
    }

    #[test]
    fn huge_claimed_record_count_fails_fast_without_allocating() {
        let mut batch = RecordBatch::new(vec![Record::new(None, None, 0)]).unwrap();
        batch.assign(0, 0).unwrap();
        let mut p = payload_of(&batch);
        // record_count sits at payload bytes 36..40.
        p[36..40].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_corrupt(&frame_of(&p), MAX, "record count u32::MAX");
    }

    #[test]
    fn semantic_corruptions_behind_a_valid_crc_are_corrupt_batch() {
        let batch = fixed_batch();
        let base = payload_of(&batch);
        type Mutation = Box<dyn Fn(&mut Vec<u8>)>;
        let cases: Vec<(&str, Mutation)> = vec![
            ("version", Box::new(|p| p[0] = 2)),
            ("both markers", Box::new(|p| p[29] = 0b111)),
            ("unknown flag", Box::new(|p| p[29] |= 0b1000)),
            ("txn id without flag", Box::new(|p| p[29] = 0)),
            (
                "negative key length",
                Box::new(|p| {
                    let at = 40 + 4 + 12;
                    p[at..at + 4].copy_from_slice(&(-2i32).to_be_bytes());
                }),
            ),
            ("bad utf-8 txn id", Box::new(|p| p[40] = 0xff)),
            (
                "epoch above i32",
                Box::new(|p| p[9..13].copy_from_slice(&u32::MAX.to_be_bytes())),
            ),
        ];
        for (name, mutate) in cases {
            let mut p = base.clone();
            mutate(&mut p);
            assert_corrupt(&frame_of(&p), MAX, name);
        }
    }

    #[test]
    fn wrong_magic_and_oversized_payload_are_corrupt_batch() {
        let frame = encode(&fixed_batch()).unwrap();
        let mut bad = frame.to_vec();
        bad[0] = b'X';
        assert_corrupt(&Bytes::from(bad), MAX, "wrong magic");
        assert_corrupt(&frame, 10, "payload above max_batch_bytes 10");
    }
}
