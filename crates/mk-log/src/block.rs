//! MKB1 version 2: a Kafka producer's record block kept as produced
//! (compressed or not) behind a fixed-width header. Byte layout, field
//! rules and what each CRC covers: docs/mkb1.md.
//!
//! ```text
//! frame   := magic "MKB1" | payload_len u32 | crc u32 (CRC-32C of payload) | payload
//! payload := common header (40 bytes, version = 2, see codec.rs)
//!          | attributes u16 | first_timestamp i64 | max_timestamp i64 | kafka_crc u32
//!          | txn_id bytes | block (the rest of the payload)
//! ```
//!
//! The block is opaque here: the broker validates a producer's records once,
//! on produce, and a fetch sends the block as stored behind a Kafka batch
//! header built from these fields ([`BlockBatch::kafka_batch_header`]).
//! `kafka_crc` is Kafka's own batch CRC, which does not cover the base
//! offset or the leader epoch, so it is computed once and a fetch never
//! recomputes it.

use crate::BatchHeader;
use crate::codec::{
    FRAME_HEADER_BYTES, MAGIC, PAYLOAD_HEADER_BYTES, checked_payload, corrupt, read_common_header,
    truncated, utf8,
};
use crate::crc;
use crate::error::{LogError, Result};
use crate::record::{ControlType, ProducerInfo};
use bytes::Bytes;
use mk_core::ByteReader;

/// The one bounded decoder of a block's records section (every codec, any
/// claimed size held to the caller's limit), here beside [`Codec`] for the
/// users of blocks above the log (the Kafka adapter decodes a produced
/// batch's records with it).
pub use crate::block_records::{XERIAL_MAGIC, decompress};

/// The payload version byte of a block frame.
pub const BLOCK_VERSION: u8 = 2;
/// The fixed part of a version 2 payload, before the transactional id.
pub const BLOCK_PAYLOAD_HEADER_BYTES: usize = PAYLOAD_HEADER_BYTES + 22;
/// The size of the Kafka RecordBatch header that precedes a block on the
/// wire.
pub const KAFKA_BATCH_HEADER_BYTES: usize = 61;

const FLAG_TRANSACTIONAL: u8 = 0b001;
const FLAG_COMMIT: u8 = 0b010;
const FLAG_ABORT: u8 = 0b100;

const ATTR_CODEC_MASK: u16 = 0x0007;
const ATTR_LOG_APPEND_TIME: u16 = 0x0008;
const ATTR_TRANSACTIONAL: u16 = 0x0010;
const ATTR_CONTROL: u16 = 0x0020;
const ATTR_KNOWN: u16 = 0x003f;

/// The compression codec of a block (Kafka's attribute bits 0-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl Codec {
    /// The codec's number in Kafka's attributes.
    pub fn id(self) -> u16 {
        match self {
            Codec::None => 0,
            Codec::Gzip => 1,
            Codec::Snappy => 2,
            Codec::Lz4 => 3,
            Codec::Zstd => 4,
        }
    }

    /// The codec numbered `id`, `None` for an unknown number.
    pub fn from_id(id: u16) -> Option<Codec> {
        Some(match id {
            0 => Codec::None,
            1 => Codec::Gzip,
            2 => Codec::Snappy,
            3 => Codec::Lz4,
            4 => Codec::Zstd,
            _ => return None,
        })
    }
}

/// What the broker compresses a block with when it builds or recompresses
/// one: a codec and its level (`None`: the codec's default, Kafka's `-1`
/// or unset level). gzip takes levels 1-9, zstd Kafka's range, lz4 Kafka's
/// 1-17 (9, its default, is LZ4's fast mode; any other level LZ4 HC);
/// snappy has one level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Compression {
    pub codec: Codec,
    pub level: Option<i32>,
}

impl Compression {
    /// `codec` at its default level.
    pub fn of(codec: Codec) -> Compression {
        Compression { codec, level: None }
    }
}

/// Which timestamp a batch's records carry (Kafka's attribute bit 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

/// The fields of a block batch a writer chooses; the frame's flags,
/// attributes bits 4-5 and `kafka_crc` follow from them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockParts {
    pub base_offset: i64,
    pub leader_epoch: i32,
    pub producer: ProducerInfo,
    pub transactional_id: Option<String>,
    pub control: Option<ControlType>,
    pub last_offset_delta: i32,
    pub record_count: u32,
    pub codec: Codec,
    pub timestamp_type: TimestampType,
    pub first_timestamp: i64,
    pub max_timestamp: i64,
    /// Kafka's records section, as produced (compressed with `codec`).
    pub block: Bytes,
}

/// A batch whose records stay the producer's block. Its fields always
/// satisfy docs/mkb1.md's rules, and `kafka_crc` always matches them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockBatch {
    header: BatchHeader,
    attributes: u16,
    first_timestamp: i64,
    max_timestamp: i64,
    kafka_crc: u32,
    transactional_id: Option<String>,
    block: Bytes,
}

impl BlockBatch {
    /// Checks `parts` against the format's rules and computes Kafka's CRC.
    /// A violation is INVALID_RECORD (the writer's mistake, not damage).
    pub fn new(parts: BlockParts) -> Result<BlockBatch> {
        let mut batch = Self::unchecked_crc(parts)?;
        batch.kafka_crc = batch.compute_kafka_crc();
        Ok(batch)
    }

    /// The checked batch of `parts`, its Kafka CRC still 0.
    fn unchecked_crc(parts: BlockParts) -> Result<BlockBatch> {
        let transactional = parts.transactional_id.is_some();
        let mut attributes = parts.codec.id();
        if parts.timestamp_type == TimestampType::LogAppendTime {
            attributes |= ATTR_LOG_APPEND_TIME;
        }
        if transactional {
            attributes |= ATTR_TRANSACTIONAL;
        }
        if parts.control.is_some() {
            attributes |= ATTR_CONTROL;
        }
        let header = BatchHeader {
            base_offset: parts.base_offset,
            leader_epoch: parts.leader_epoch,
            producer: parts.producer,
            transactional,
            control: parts.control,
            last_offset_delta: parts.last_offset_delta,
            record_count: parts.record_count,
        };
        let batch = BlockBatch {
            header,
            attributes,
            first_timestamp: parts.first_timestamp,
            max_timestamp: parts.max_timestamp,
            kafka_crc: 0,
            transactional_id: parts.transactional_id,
            block: parts.block,
        };
        batch
            .check()
            .map_err(|e| LogError::InvalidRecord(format!("a block batch {e}")))?;
        if let Some(id) = &batch.transactional_id {
            u16::try_from(id.len()).map_err(|_| {
                LogError::InvalidRecord(format!(
                    "transactional id is {} long; at most 65535 fits",
                    id.len()
                ))
            })?;
        }
        Ok(batch)
    }

    /// Like [`BlockBatch::new`] for a produced batch whose Kafka CRC the
    /// caller has just verified over exactly these fields and block (the
    /// produce path checks the CRC the producer sent, one pass over the
    /// block): `kafka_crc` is taken as it is instead of computed again.
    pub fn with_verified_crc(parts: BlockParts, kafka_crc: u32) -> Result<BlockBatch> {
        let mut batch = Self::unchecked_crc(parts)?;
        batch.kafka_crc = kafka_crc;
        debug_assert_eq!(kafka_crc, batch.compute_kafka_crc(), "a verified CRC");
        Ok(batch)
    }

    /// What compaction leaves of a producer's last data batch once every
    /// record in it is gone (Kafka's cleaner keeps such a batch empty):
    /// its offsets, leader epoch, producer id, epoch and base sequence and
    /// its transactional attribute, no records, an empty uncompressed block
    /// and no timestamp (-1). A replica that replays the log learns the
    /// producer's last sequence from it.
    pub fn emptied(header: &BatchHeader, transactional_id: Option<String>) -> Result<BlockBatch> {
        if header.control.is_some() {
            return Err(LogError::InvalidRecord(
                "a transaction marker is never emptied".into(),
            ));
        }
        Self::new(BlockParts {
            base_offset: header.base_offset,
            leader_epoch: header.leader_epoch,
            producer: header.producer,
            transactional_id,
            control: None,
            last_offset_delta: header.last_offset_delta,
            record_count: 0,
            codec: Codec::None,
            timestamp_type: TimestampType::CreateTime,
            first_timestamp: -1,
            max_timestamp: -1,
            block: Bytes::new(),
        })
    }

    /// Whether this is an emptied batch ([`BlockBatch::emptied`]).
    pub fn is_emptied(&self) -> bool {
        self.header.control.is_none() && self.header.record_count == 0
    }

    /// The fields this batch was built from (offsets as assigned so far),
    /// for building a batch like it around another block.
    pub fn to_parts(&self) -> BlockParts {
        let h = &self.header;
        BlockParts {
            base_offset: h.base_offset,
            leader_epoch: h.leader_epoch,
            producer: h.producer,
            transactional_id: self.transactional_id.clone(),
            control: h.control,
            last_offset_delta: h.last_offset_delta,
            record_count: h.record_count,
            codec: self.codec(),
            timestamp_type: self.timestamp_type(),
            first_timestamp: self.first_timestamp,
            max_timestamp: self.max_timestamp,
            block: self.block.clone(),
        }
    }

    /// The same batch with its records compressed by `to` instead (a
    /// topic's `compression.type`, as Kafka's validator recompresses):
    /// decompressed within `limit` bytes and compressed again; every
    /// other field stays, Kafka's CRC is computed for the new block. A
    /// batch already in `to`'s codec is returned as it is.
    pub fn recompressed(&self, to: Compression, limit: usize) -> Result<BlockBatch> {
        crate::block_records::recompress(self, to, limit)
    }

    /// Sets the max timestamp of a CreateTime batch to the one its records
    /// carry when the producer's header said otherwise (Kafka corrects it
    /// the same way); Kafka's CRC is recomputed, only if it changed.
    pub fn set_max_timestamp(&mut self, max_timestamp: i64) {
        if self.max_timestamp != max_timestamp {
            let block_crc = self.large_block_crc();
            self.max_timestamp = max_timestamp;
            self.refresh_kafka_crc(block_crc);
        }
    }

    /// Sets the offsets and epoch the leader assigns at append. Kafka's CRC
    /// does not cover them, so it stays as it is.
    pub fn assign(&mut self, base_offset: i64, leader_epoch: i32) -> Result<()> {
        let mut header = self.header;
        header.base_offset = base_offset;
        header.leader_epoch = leader_epoch;
        check_offsets(&header).map_err(LogError::InvalidRecord)?;
        self.header = header;
        Ok(())
    }

    /// Stamps a LogAppendTime topic's append time: the max timestamp and the
    /// timestamp-type attribute change, and Kafka's CRC is recomputed once.
    pub fn set_log_append_time(&mut self, now_ms: i64) {
        let block_crc = self.large_block_crc();
        self.attributes |= ATTR_LOG_APPEND_TIME;
        self.max_timestamp = now_ms;
        self.refresh_kafka_crc(block_crc);
    }

    /// The fields every version shares (offsets, producer, markers).
    pub fn header(&self) -> BatchHeader {
        self.header
    }
    /// Kafka's batch attributes, as a fetch sends them.
    pub fn attributes(&self) -> u16 {
        self.attributes
    }
    pub fn codec(&self) -> Codec {
        // The constructor and the decoder admit only known codecs.
        Codec::from_id(self.attributes & ATTR_CODEC_MASK).unwrap_or(Codec::None)
    }
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes & ATTR_LOG_APPEND_TIME != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }
    pub fn first_timestamp(&self) -> i64 {
        self.first_timestamp
    }
    pub fn max_timestamp(&self) -> i64 {
        self.max_timestamp
    }
    /// Kafka's CRC-32C of the batch from its attributes to its end.
    pub fn kafka_crc(&self) -> u32 {
        self.kafka_crc
    }
    pub fn transactional_id(&self) -> Option<&str> {
        self.transactional_id.as_deref()
    }
    /// The producer's records section, as stored.
    pub fn block(&self) -> &Bytes {
        &self.block
    }

    /// Decodes the records, decompressing at most `limit` bytes: only where
    /// an answer needs records (compaction, replay, JSON-TCP).
    pub fn records(&self, limit: usize) -> Result<crate::RecordBatch> {
        crate::block_records::decode_records(self, limit)
    }

    /// The exact number of bytes [`BlockBatch::encode`] produces.
    pub fn encoded_len(&self) -> usize {
        FRAME_HEADER_BYTES
            + BLOCK_PAYLOAD_HEADER_BYTES
            + self.transactional_id.as_ref().map_or(0, String::len)
            + self.block.len()
    }

    /// Encodes the batch as one MKB1 version 2 frame.
    pub fn encode(&self) -> Result<Bytes> {
        let mut out = Vec::new();
        self.encode_into(&mut out)?;
        Ok(Bytes::from(out))
    }

    /// Appends the batch's frame to `out`; on error `out` is unchanged.
    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<()> {
        out.reserve(self.encoded_len());
        self.encode_head_into(out)?;
        out.extend_from_slice(&self.block);
        Ok(())
    }

    /// Appends the batch's frame but its block to `out` (on error `out` is
    /// unchanged): written followed by [`BlockBatch::block`], it is the
    /// frame, whose CRC it already holds. The log writes the two with one
    /// vectored write, so the block is never copied on its way to the file.
    pub fn encode_head_into(&self, out: &mut Vec<u8>) -> Result<()> {
        let total = self.encoded_len();
        let payload_len = u32::try_from(total - FRAME_HEADER_BYTES).map_err(|_| {
            LogError::InvalidRecord(format!("a batch of {total} bytes is too large to encode"))
        })?;
        // Both fit: the constructor and `assign` checked them.
        let epoch = u32::try_from(self.header.leader_epoch).unwrap_or(0);
        let txn_id = self.transactional_id.as_deref().unwrap_or("").as_bytes();
        let txn_id_len = u16::try_from(txn_id.len()).unwrap_or(0);
        let h = &self.header;
        let start = out.len();
        out.reserve(total - self.block.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&payload_len.to_be_bytes());
        out.extend_from_slice(&[0; 4]); // CRC, filled in below.
        out.push(BLOCK_VERSION);
        out.extend_from_slice(&h.base_offset.to_be_bytes());
        out.extend_from_slice(&epoch.to_be_bytes());
        out.extend_from_slice(&h.producer.producer_id.to_be_bytes());
        out.extend_from_slice(&h.producer.producer_epoch.to_be_bytes());
        out.extend_from_slice(&h.producer.base_sequence.to_be_bytes());
        out.push(flags_of(h));
        out.extend_from_slice(&h.last_offset_delta.to_be_bytes());
        out.extend_from_slice(&txn_id_len.to_be_bytes());
        out.extend_from_slice(&h.record_count.to_be_bytes());
        out.extend_from_slice(&self.attributes.to_be_bytes());
        out.extend_from_slice(&self.first_timestamp.to_be_bytes());
        out.extend_from_slice(&self.max_timestamp.to_be_bytes());
        out.extend_from_slice(&self.kafka_crc.to_be_bytes());
        out.extend_from_slice(txn_id);
        debug_assert_eq!(out.len() - start + self.block.len(), total);
        // The frame CRC covers the header just written and the block; the
        // block's part follows from Kafka's CRC when the block is large, so
        // appending a produced batch does not read its bytes at all.
        let head = crc32c::crc32c(&out[start + FRAME_HEADER_BYTES..]);
        let crc = match self.large_block_crc() {
            Some(block_crc) => crc::combine(head, block_crc, self.block.len()),
            None => crc32c::crc32c_append(head, &self.block),
        };
        out[start + 8..start + 12].copy_from_slice(&crc.to_be_bytes());
        Ok(())
    }

    /// The 61-byte Kafka RecordBatch header that, followed by
    /// [`BlockBatch::block`], is this batch on the Kafka wire.
    pub fn kafka_batch_header(&self) -> Result<[u8; KAFKA_BATCH_HEADER_BYTES]> {
        let batch_length = self
            .block
            .len()
            .checked_add(KAFKA_BATCH_HEADER_BYTES - 12)
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(|| {
                LogError::InvalidRecord(format!(
                    "a block of {} bytes is too large for a Kafka batch",
                    self.block.len()
                ))
            })?;
        let mut out = [0u8; KAFKA_BATCH_HEADER_BYTES];
        out[0..8].copy_from_slice(&self.header.base_offset.to_be_bytes());
        out[8..12].copy_from_slice(&batch_length.to_be_bytes());
        out[12..16].copy_from_slice(&self.header.leader_epoch.to_be_bytes());
        out[16] = 2;
        out[17..21].copy_from_slice(&self.kafka_crc.to_be_bytes());
        out[21..].copy_from_slice(&self.kafka_crc_fields());
        Ok(out)
    }

    /// The 40 header bytes Kafka's CRC covers before the block, in Kafka's
    /// order (attributes to record count).
    fn kafka_crc_fields(&self) -> [u8; 40] {
        let h = &self.header;
        // Both fit: checked by the constructor and the decoder.
        let producer_epoch = i16::try_from(h.producer.producer_epoch).unwrap_or(-1);
        let record_count = i32::try_from(h.record_count).unwrap_or(0);
        let mut f = [0u8; 40];
        f[0..2].copy_from_slice(&self.attributes.to_be_bytes());
        f[2..6].copy_from_slice(&h.last_offset_delta.to_be_bytes());
        f[6..14].copy_from_slice(&self.first_timestamp.to_be_bytes());
        f[14..22].copy_from_slice(&self.max_timestamp.to_be_bytes());
        f[22..30].copy_from_slice(&h.producer.producer_id.to_be_bytes());
        f[30..32].copy_from_slice(&producer_epoch.to_be_bytes());
        f[32..36].copy_from_slice(&h.producer.base_sequence.to_be_bytes());
        f[36..40].copy_from_slice(&record_count.to_be_bytes());
        f
    }

    fn compute_kafka_crc(&self) -> u32 {
        crc32c::crc32c_append(crc32c::crc32c(&self.kafka_crc_fields()), &self.block)
    }

    /// The CRC-32C of a large block, from Kafka's CRC (which always
    /// matches the fields and the block) without reading the block; `None`
    /// for a small block, which is cheaper to read again.
    fn large_block_crc(&self) -> Option<u32> {
        let len = self.block.len();
        (len >= crc::COMBINE_MIN_BYTES).then(|| {
            crc::suffix(
                self.kafka_crc,
                crc32c::crc32c(&self.kafka_crc_fields()),
                len,
            )
        })
    }

    /// Recomputes Kafka's CRC after a header field changed, from the
    /// block's CRC taken before the change when the block is large.
    fn refresh_kafka_crc(&mut self, block_crc: Option<u32>) {
        self.kafka_crc = match block_crc {
            Some(b) => crc::combine(
                crc32c::crc32c(&self.kafka_crc_fields()),
                b,
                self.block.len(),
            ),
            None => self.compute_kafka_crc(),
        };
        debug_assert_eq!(self.kafka_crc, self.compute_kafka_crc());
    }

    /// The rules of docs/mkb1.md beyond the common header's, as a message.
    fn check(&self) -> std::result::Result<(), String> {
        let h = &self.header;
        check_offsets(h)?;
        let codec = Codec::from_id(self.attributes & ATTR_CODEC_MASK)
            .ok_or_else(|| format!("has unknown codec {}", self.attributes & ATTR_CODEC_MASK))?;
        if self.attributes & !ATTR_KNOWN != 0 {
            return Err(format!("has reserved attributes {:#06x}", self.attributes));
        }
        if (self.attributes & ATTR_TRANSACTIONAL != 0) != h.transactional {
            return Err("disagrees with itself on being transactional".into());
        }
        if (self.attributes & ATTR_CONTROL != 0) != h.control.is_some() {
            return Err("disagrees with itself on being a control batch".into());
        }
        if h.control.is_some() && !h.transactional {
            return Err("is a marker without a transactional id".into());
        }
        if i16::try_from(h.producer.producer_epoch).is_err() {
            return Err(format!(
                "has producer epoch {} beyond Kafka's 16 bits",
                h.producer.producer_epoch
            ));
        }
        if i32::try_from(h.record_count).is_err()
            || i64::from(h.record_count) > i64::from(h.last_offset_delta) + 1
        {
            return Err(format!(
                "claims {} records in {} offsets",
                h.record_count,
                i64::from(h.last_offset_delta) + 1
            ));
        }
        match h.control {
            Some(_) if h.record_count != 1 || codec != Codec::None => {
                Err("control batch must hold one uncompressed control record".into())
            }
            // An emptied batch (below) is the one data batch without records.
            None if h.record_count == 0 && (codec != Codec::None || !self.block.is_empty()) => {
                Err("data batch holds no records but a block".into())
            }
            _ => Ok(()),
        }
    }
}

/// The offset rules both a new batch and an assignment must keep.
fn check_offsets(h: &BatchHeader) -> std::result::Result<(), String> {
    if h.base_offset < 0 || h.leader_epoch < 0 || h.last_offset_delta < 0 {
        return Err(format!(
            "needs base offset, leader epoch and last offset delta >= 0, got {}, {}, {}",
            h.base_offset, h.leader_epoch, h.last_offset_delta
        ));
    }
    if h.base_offset
        .checked_add(i64::from(h.last_offset_delta) + 1)
        .is_none()
    {
        return Err("base offset plus last offset delta overflows".into());
    }
    Ok(())
}

fn flags_of(h: &BatchHeader) -> u8 {
    let mut flags = 0;
    if h.transactional {
        flags |= FLAG_TRANSACTIONAL;
    }
    match h.control {
        Some(ControlType::Commit) => flags |= FLAG_COMMIT,
        Some(ControlType::Abort) => flags |= FLAG_ABORT,
        None => {}
    }
    flags
}

/// The payload version of the frame at the start of `buf` (1 or 2, or
/// whatever a damaged frame claims), `None` when `buf` is too short to say.
pub fn frame_version(buf: &[u8]) -> Option<u8> {
    buf.get(FRAME_HEADER_BYTES).copied()
}

/// Decodes one complete version 2 frame and checks everything docs/mkb1.md
/// says a decoder checks, Kafka's CRC included. The block is a zero-copy
/// slice of `frame`. Damage of any kind is CORRUPT_BATCH, never a panic.
pub fn decode(frame: &Bytes, max_batch_bytes: u32) -> Result<BlockBatch> {
    checked_payload(frame, max_batch_bytes)?;
    decode_verified(frame)
}

/// Decodes a version 2 frame whose envelope (magic, length, frame CRC) was
/// already checked, checking the rest as [`decode`] does.
pub fn decode_verified(frame: &Bytes) -> Result<BlockBatch> {
    let payload = frame.get(FRAME_HEADER_BYTES..).unwrap_or_default();
    let (batch, block_start) = read_payload_header(payload)?;
    let batch = BlockBatch {
        block: frame.slice(FRAME_HEADER_BYTES + block_start..),
        ..batch
    };
    let actual = batch.compute_kafka_crc();
    if actual != batch.kafka_crc {
        return Err(corrupt(format!(
            "Kafka CRC mismatch: stored {:08x}, computed {actual:08x}",
            batch.kafka_crc
        )));
    }
    Ok(batch)
}

/// A version 2 frame whose envelope (magic, length, frame CRC) was already
/// checked, read for sending: its header fields and a zero-copy slice of
/// its block, with neither the block's records nor Kafka's CRC looked at
/// (the frame CRC, checked when the frame was read, covers both). This is
/// the whole of a fetch's work on a stored batch.
pub fn located(frame: &Bytes) -> Result<BlockBatch> {
    let payload = frame.get(FRAME_HEADER_BYTES..).unwrap_or_default();
    let (batch, block_start) = read_payload_header(payload)?;
    Ok(BlockBatch {
        block: frame.slice(FRAME_HEADER_BYTES + block_start..),
        ..batch
    })
}

/// The header of a version 2 payload, checked by every rule but Kafka's
/// CRC (which needs the block): what locating batches needs.
pub(crate) fn payload_header(payload: &[u8]) -> Result<BatchHeader> {
    read_payload_header(payload).map(|(b, _)| b.header)
}

/// Reads and checks a version 2 payload's header fields and transactional
/// id; returns them (with an empty block) and where the block starts.
fn read_payload_header(payload: &[u8]) -> Result<(BlockBatch, usize)> {
    let mut r = ByteReader::new(payload);
    let (header, txn_id_len) = read_common_header(&mut r, BLOCK_VERSION)?;
    let attributes = r.u16().map_err(truncated)?;
    let first_timestamp = r.i64().map_err(truncated)?;
    let max_timestamp = r.i64().map_err(truncated)?;
    let kafka_crc = r.u32().map_err(truncated)?;
    let txn_id = r.take(usize::from(txn_id_len)).map_err(truncated)?;
    let transactional_id = if header.transactional {
        Some(utf8(txn_id, "transactional id")?.to_string())
    } else {
        None
    };
    let batch = BlockBatch {
        header,
        attributes,
        first_timestamp,
        max_timestamp,
        kafka_crc,
        transactional_id,
        block: Bytes::new(),
    };
    batch.check().map_err(|e| corrupt(format!("batch {e}")))?;
    Ok((batch, r.position()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mk_core::ErrorCode;

    const MAX: u32 = 1 << 20;

    fn parts() -> BlockParts {
        BlockParts {
            base_offset: 100,
            leader_epoch: 5,
            producer: ProducerInfo {
                producer_id: 42,
                producer_epoch: 3,
                base_sequence: 7,
            },
            transactional_id: Some("tx-1".into()),
            control: None,
            last_offset_delta: 2,
            record_count: 3,
            codec: Codec::Zstd,
            timestamp_type: TimestampType::CreateTime,
            first_timestamp: 1_700_000_000_000,
            max_timestamp: 1_700_000_000_002,
            block: Bytes::from_static(b"\x28\xb5\x2f\xfd opaque zstd bytes"),
        }
    }

    /// Re-frames `payload` with a correct frame CRC, so tests reach the
    /// checks behind it.
    fn frame_of(payload: &[u8]) -> Bytes {
        let mut f = MAGIC.to_vec();
        f.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_be_bytes());
        f.extend_from_slice(&crc32c::crc32c(payload).to_be_bytes());
        f.extend_from_slice(payload);
        Bytes::from(f)
    }

    #[test]
    fn sizes_match_the_document() {
        let batch = BlockBatch::new(parts()).unwrap();
        let frame = batch.encode().unwrap();
        assert_eq!(BLOCK_PAYLOAD_HEADER_BYTES, 62);
        assert_eq!(frame.len(), 12 + 62 + 4 + batch.block().len());
        assert_eq!(frame.len(), batch.encoded_len());
        assert_eq!(frame_version(&frame), Some(2));
    }

    #[test]
    fn round_trip_keeps_the_block_byte_for_byte() {
        let batch = BlockBatch::new(parts()).unwrap();
        let frame = batch.encode().unwrap();
        let back = decode(&frame, MAX).unwrap();
        assert_eq!(back, batch);
        assert_eq!(back.block(), &parts().block);
        assert_eq!(back.codec(), Codec::Zstd);
        assert_eq!(back.transactional_id(), Some("tx-1"));
        assert_eq!(back.header().next_offset(), 103);
    }

    #[test]
    fn the_kafka_header_and_block_carry_kafkas_crc() {
        let batch = BlockBatch::new(parts()).unwrap();
        let mut wire = batch.kafka_batch_header().unwrap().to_vec();
        wire.extend_from_slice(batch.block());
        // Kafka's batchLength counts from the partition leader epoch on.
        let length = i32::from_be_bytes(wire[8..12].try_into().unwrap());
        assert_eq!(usize::try_from(length).unwrap(), wire.len() - 12);
        let stored = u32::from_be_bytes(wire[17..21].try_into().unwrap());
        assert_eq!(stored, crc32c::crc32c(&wire[21..]));
        assert_eq!(&wire[21..23], &[0x00, 0x14], "zstd, transactional");
        assert_eq!(&wire[51..53], &[0x00, 0x03], "producer epoch as i16");
    }

    #[test]
    fn assigning_keeps_kafkas_crc_and_append_time_changes_it_once() {
        let mut batch = BlockBatch::new(parts()).unwrap();
        let crc = batch.kafka_crc();
        batch.assign(7_000, 9).unwrap();
        assert_eq!(batch.kafka_crc(), crc);
        assert_eq!(batch.header().base_offset, 7_000);
        batch.set_log_append_time(1_800_000_000_000);
        assert_ne!(batch.kafka_crc(), crc);
        assert_eq!(batch.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(batch.max_timestamp(), 1_800_000_000_000);
        assert_eq!(decode(&batch.encode().unwrap(), MAX).unwrap(), batch);
        let err = batch.assign(-1, 0).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidRecord);
    }

    #[test]
    fn a_large_blocks_crcs_follow_from_kafkas_without_reading_it_again() {
        let mut x = 7u32;
        let block: Vec<u8> = (0..100_000)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                x.to_be_bytes()[1]
            })
            .collect();
        let mut p = parts();
        p.block = Bytes::from(block);
        let sent = BlockBatch::new(p).unwrap();
        let mut batch = BlockBatch::with_verified_crc(sent.to_parts(), sent.kafka_crc()).unwrap();
        batch.set_max_timestamp(1_700_000_000_009);
        batch.assign(9_000, 3).unwrap();
        let frame = batch.encode().unwrap();
        let payload = &frame[FRAME_HEADER_BYTES..];
        assert_eq!(&frame[8..12], &crc32c::crc32c(payload).to_be_bytes());
        assert_eq!(
            decode(&frame, MAX).unwrap(),
            batch,
            "Kafka's CRC checks out"
        );
        batch.set_log_append_time(1_800_000_000_000);
        let frame = batch.encode().unwrap();
        assert_eq!(decode(&frame, MAX).unwrap(), batch);
        assert_ne!(batch.kafka_crc(), sent.kafka_crc());
    }

    #[test]
    fn control_batches_hold_one_uncompressed_record() {
        let mut p = parts();
        p.control = Some(ControlType::Abort);
        p.last_offset_delta = 0;
        p.record_count = 1;
        assert_eq!(
            BlockBatch::new(p.clone()).unwrap_err().code(),
            ErrorCode::InvalidRecord,
            "compressed"
        );
        p.codec = Codec::None;
        let batch = BlockBatch::new(p.clone()).unwrap();
        assert_eq!(batch.attributes(), 0x30);
        let back = decode(&batch.encode().unwrap(), MAX).unwrap();
        assert_eq!(back.header().control, Some(ControlType::Abort));
        p.transactional_id = None;
        assert_eq!(
            BlockBatch::new(p).unwrap_err().code(),
            ErrorCode::InvalidRecord,
            "a marker is transactional"
        );
    }

    #[test]
    fn only_an_uncompressed_empty_block_holds_no_records() {
        let emptied = BlockBatch::emptied(
            &BlockBatch::new(parts()).unwrap().header(),
            Some("tx-1".into()),
        )
        .unwrap();
        assert!(emptied.is_emptied());
        assert_eq!(
            emptied.attributes(),
            0x10,
            "uncompressed, CreateTime, transactional"
        );
        assert_eq!(emptied.header().last_offset_delta, 2, "its offsets stay");
        assert_eq!(
            emptied.header().producer.base_sequence,
            7,
            "its sequence stays"
        );
        let back = decode(&emptied.encode().unwrap(), MAX).unwrap();
        assert_eq!(back, emptied);
        assert_eq!(back.records(MAX as usize).unwrap().records().len(), 0);
        let mut p = emptied.to_parts();
        p.block = Bytes::from_static(b"\x00");
        assert_eq!(
            BlockBatch::new(p).unwrap_err().code(),
            ErrorCode::InvalidRecord,
            "a block"
        );
        let mut p = emptied.to_parts();
        p.codec = Codec::Lz4;
        assert_eq!(
            BlockBatch::new(p).unwrap_err().code(),
            ErrorCode::InvalidRecord,
            "a codec"
        );
        let mut marker = emptied.header();
        marker.control = Some(ControlType::Commit);
        assert_eq!(
            BlockBatch::emptied(&marker, Some("tx-1".into()))
                .unwrap_err()
                .code(),
            ErrorCode::InvalidRecord
        );
        let Err(e) = crate::RecordBatch::from_block(emptied) else {
            panic!("a producer's batch without records was taken");
        };
        assert_eq!(e.code(), ErrorCode::InvalidRecord);
    }

    #[test]
    fn writer_mistakes_are_invalid_record() {
        type Mutation = fn(&mut BlockParts);
        let cases: [(&str, Mutation); 5] = [
            ("epoch beyond i16", |p| p.producer.producer_epoch = 40_000),
            ("no records", |p| p.record_count = 0),
            ("more records than offsets", |p| p.record_count = 4),
            ("negative base offset", |p| p.base_offset = -1),
            ("txn id too long", |p| {
                p.transactional_id = Some("t".repeat(70_000))
            }),
        ];
        for (name, mutate) in cases {
            let mut p = parts();
            mutate(&mut p);
            let err = BlockBatch::new(p).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidRecord, "{name}: {err}");
        }
    }

    #[test]
    fn semantic_corruptions_behind_a_valid_crc_are_corrupt_batch() {
        let frame = BlockBatch::new(parts()).unwrap().encode().unwrap();
        let base = frame[FRAME_HEADER_BYTES..].to_vec();
        type Mutation = fn(&mut Vec<u8>);
        let cases: [(&str, Mutation); 10] = [
            ("version 1 reader's version", |p| p[0] = 1),
            ("version 3", |p| p[0] = 3),
            ("unknown codec", |p| p[41] = (p[41] & !7) | 5),
            ("reserved attribute", |p| p[40] |= 0x01),
            ("attribute says not transactional", |p| p[41] &= !0x10),
            ("attribute says control", |p| p[41] |= 0x20),
            ("producer epoch beyond i16", |p| {
                p[21..25].copy_from_slice(&40_000i32.to_be_bytes())
            }),
            ("record count above offsets", |p| {
                p[36..40].copy_from_slice(&9u32.to_be_bytes())
            }),
            ("kafka crc", |p| p[58] ^= 0x01),
            ("block byte behind the kafka crc", |p| {
                let last = p.len() - 1;
                p[last] ^= 0x80;
            }),
        ];
        for (name, mutate) in cases {
            let mut p = base.clone();
            mutate(&mut p);
            let err = decode(&frame_of(&p), MAX).unwrap_err();
            assert_eq!(err.code(), ErrorCode::CorruptBatch, "{name}: {err}");
        }
        assert!(
            decode(&frame_of(&base), MAX).is_ok(),
            "the unmutated payload"
        );
    }

    #[test]
    fn a_version_1_frame_is_not_a_block_frame_and_a_bad_block_is_corrupt() {
        let mut v1 = crate::RecordBatch::new(vec![crate::Record::new(None, None, 0)]).unwrap();
        v1.assign(0, 0).unwrap();
        let v1 = crate::codec::encode(&v1).unwrap();
        assert_eq!(frame_version(&v1), Some(1));
        assert_eq!(
            decode(&v1, MAX).unwrap_err().code(),
            ErrorCode::CorruptBatch
        );
        // The version 1 reader reads a version 2 frame's records; this
        // block is not zstd at all, which only decoding its records finds.
        let v2 = BlockBatch::new(parts()).unwrap().encode().unwrap();
        assert!(decode(&v2, MAX).is_ok());
        let err = crate::codec::decode(&v2, MAX).unwrap_err();
        assert_eq!(err.code(), ErrorCode::CorruptBatch);
        assert!(err.to_string().contains("Zstd"), "{err}");
    }
}
