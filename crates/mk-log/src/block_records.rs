//! The records inside an MKB1 version 2 block: Kafka's varint record
//! encoding, decompressed within a bound by the block's codec (gzip, snappy
//! raw or xerial-framed, LZ4 frames, zstd), decoded into the core's
//! `RecordBatch` where an answer needs records (compaction, replay, the
//! JSON protocol). The broker compresses here too: a topic whose
//! `compression.type` is a codec recompresses produced blocks of another
//! codec, and compaction encodes the records it keeps of a block as a new
//! block in the block's codec (as Kafka's cleaner does). Fetch and
//! replication never come here: they move the block as stored.

use crate::block::{BlockBatch, BlockParts, Codec, Compression, TimestampType};
use crate::codec::{corrupt, truncated, utf8};
use crate::error::Result;
use crate::record::{Header, Record, RecordBatch};
use bytes::Bytes;
use mk_core::ByteReader;
use std::io::Read;

/// The xerial snappy-java stream header ("\x82SNAPPY\0").
pub const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// The uncompressed size of one xerial block the broker writes (snappy-java's
/// default, which Kafka's producer uses).
const XERIAL_BLOCK_BYTES: usize = 32 * 1024;
/// The zstd window a block may ask for (16 MiB): larger windows would let a
/// tiny frame make the decoder allocate a large buffer.
const ZSTD_WINDOW_LOG_MAX: u32 = 24;
/// The fewest bytes a Kafka record takes (seven one-byte fields).
const RECORD_MIN_BYTES: usize = 7;

/// The block's records section decompressed, at most `limit` bytes
/// whatever sizes the compressed data claims. Damaged data is
/// [`LogError::CorruptBatch`](crate::LogError::CorruptBatch), data that
/// would grow past `limit`
/// [`LogError::DecompressedTooLarge`](crate::LogError::DecompressedTooLarge).
pub fn decompress(codec: Codec, data: &Bytes, limit: usize) -> Result<Bytes> {
    match codec {
        Codec::None if data.len() > limit => Err(too_large(limit)),
        Codec::None => Ok(data.clone()),
        Codec::Gzip => read_bounded(codec, flate2::read::GzDecoder::new(&data[..]), limit),
        Codec::Lz4 => read_bounded(codec, lz4_flex::frame::FrameDecoder::new(&data[..]), limit),
        Codec::Zstd => {
            let mut d =
                zstd::stream::read::Decoder::new(&data[..]).map_err(|e| cannot(codec, e))?;
            d.window_log_max(ZSTD_WINDOW_LOG_MAX)
                .map_err(|e| cannot(codec, e))?;
            read_bounded(codec, d, limit)
        }
        Codec::Snappy => snappy(data, limit),
    }
}

/// Compresses a records section with `to`, framed as Kafka's own clients
/// frame it: a gzip member, xerial-framed snappy, an LZ4 frame of
/// independent 64 KiB blocks, a zstd frame.
pub fn compress(to: Compression, data: &[u8]) -> Result<Bytes> {
    use std::io::Write;
    let codec = to.codec;
    let fail = |e: std::io::Error| {
        crate::LogError::InvalidRecord(format!("cannot {codec:?}-compress records: {e}"))
    };
    let out = match codec {
        Codec::None => data.to_vec(),
        Codec::Gzip => {
            let level = to
                .level
                .and_then(|l| u32::try_from(l).ok())
                .map_or_else(flate2::Compression::default, |l| {
                    flate2::Compression::new(l.min(9))
                });
            let mut e = flate2::write::GzEncoder::new(Vec::new(), level);
            e.write_all(data).map_err(fail)?;
            e.finish().map_err(fail)?
        }
        Codec::Snappy => xerial_snappy(data)?,
        Codec::Lz4 => lz4_frame(data, to.level).map_err(fail)?,
        Codec::Zstd => zstd::bulk::compress(data, to.level.unwrap_or(3)).map_err(fail)?,
    };
    Ok(Bytes::from(out))
}

/// Kafka's default `compression.lz4.level`, the one level Kafka compresses
/// in LZ4's fast mode.
const LZ4_FAST_LEVEL: i32 = 9;

/// An LZ4 frame as Kafka's producer writes one (independent 64 KiB blocks,
/// no block or content checksum): at `level` 9 (Kafka's default, or no
/// level) in LZ4's fast mode, at any other level with LZ4 HC, as Kafka
/// 3.8+ does (KIP-390). The LZ4 library caps HC at its level 12 (Kafka's
/// range goes to 17), and its frame encoder takes levels 1 and 2 as fast
/// mode.
fn lz4_frame(data: &[u8], level: Option<i32>) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    let Some(level) = level.filter(|l| *l != LZ4_FAST_LEVEL) else {
        let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
        e.write_all(data)?;
        return e.finish().map_err(std::io::Error::other);
    };
    let mut e = lz4::EncoderBuilder::new()
        .block_size(lz4::BlockSize::Max64KB)
        .block_mode(lz4::BlockMode::Independent)
        .block_checksum(lz4::liblz4::BlockChecksum::NoBlockChecksum)
        .checksum(lz4::ContentChecksum::NoChecksum)
        .level(u32::try_from(level).unwrap_or(1))
        .build(Vec::new())?;
    e.write_all(data)?;
    let (out, done) = e.finish();
    done.map(|()| out)
}

/// snappy-java's stream format, which Kafka's producer writes: the xerial
/// header (magic, version 1, compatible version 1), then blocks of
/// (length i32, raw snappy) of at most 32 KiB uncompressed each.
fn xerial_snappy(data: &[u8]) -> Result<Vec<u8>> {
    let mut out = XERIAL_MAGIC.to_vec();
    out.extend_from_slice(&1i32.to_be_bytes());
    out.extend_from_slice(&1i32.to_be_bytes());
    let mut encoder = snap::raw::Encoder::new();
    let mut scratch = Vec::new();
    for chunk in data.chunks(XERIAL_BLOCK_BYTES) {
        scratch.resize(snap::raw::max_compress_len(chunk.len()), 0);
        let n = encoder
            .compress(chunk, &mut scratch)
            .map_err(|e| crate::LogError::InvalidRecord(format!("cannot snappy-compress: {e}")))?;
        // A block of at most 32 KiB compresses to far less than 2 GiB.
        let len = i32::try_from(n).unwrap_or(i32::MAX);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&scratch[..n]);
    }
    Ok(out)
}

/// `batch` with its records section compressed by `to` (see
/// [`BlockBatch::recompressed`]): the records are the same bytes, only
/// their compression changes.
pub(crate) fn recompress(batch: &BlockBatch, to: Compression, limit: usize) -> Result<BlockBatch> {
    if batch.codec() == to.codec {
        return Ok(batch.clone());
    }
    let body = decompress(batch.codec(), batch.block(), limit)?;
    let block = compress(to, &body)?;
    BlockBatch::new(BlockParts {
        codec: to.codec,
        block,
        ..batch.to_parts()
    })
}

/// The block batch of the records compaction kept of `original`'s:
/// `kept` (assigned, its records a subset of `original`'s, offsets and
/// deltas as they were) encoded as Kafka's records section and compressed
/// with `original`'s codec, as Kafka's cleaner rebuilds a batch. Offsets,
/// epoch, producer, transactional id and timestamp type stay; the base
/// timestamp becomes the first kept record's, and a CreateTime batch's max
/// timestamp the greatest kept one (a LogAppendTime batch keeps its
/// append time).
pub(crate) fn rebuild(original: &BlockBatch, kept: &RecordBatch) -> Result<BlockBatch> {
    let first = kept
        .records()
        .first()
        .map_or(original.first_timestamp(), |r| r.timestamp_ms);
    let max_timestamp = match original.timestamp_type() {
        TimestampType::LogAppendTime => original.max_timestamp(),
        TimestampType::CreateTime => kept.max_timestamp_ms(),
    };
    let body = encode_records(kept.records(), kept.offset_deltas(), first);
    let block = compress(Compression::of(original.codec()), &body)?;
    let record_count = u32::try_from(kept.records().len())
        .map_err(|_| crate::LogError::InvalidRecord("too many records for a batch".into()))?;
    BlockBatch::new(BlockParts {
        record_count,
        first_timestamp: first,
        max_timestamp,
        block,
        ..original.to_parts()
    })
}

/// The block batch of the broker's own records (a JSON-TCP or direct
/// produce, decoded, never stored) for a topic whose `compression.type` is
/// the codec `to`: stored as Kafka stores an uncompressed producer batch
/// for such a topic, its records section compressed with `to`. Offset
/// deltas, producer, transactional id and CreateTime timestamps stay; the
/// base timestamp is the smallest record timestamp, so the batch's first
/// and max timestamps are its records' smallest and greatest, as they were.
pub(crate) fn compressed_block(batch: &RecordBatch, to: Compression) -> Result<BlockBatch> {
    let records = batch.records();
    let first = records.iter().map(|r| r.timestamp_ms).min().unwrap_or(-1);
    let body = encode_records(records, batch.offset_deltas(), first);
    let record_count = u32::try_from(records.len())
        .map_err(|_| crate::LogError::InvalidRecord("too many records for a batch".into()))?;
    BlockBatch::new(BlockParts {
        base_offset: 0,
        leader_epoch: 0,
        producer: batch.producer(),
        transactional_id: batch.transactional_id().map(str::to_string),
        control: None,
        last_offset_delta: batch.last_offset_delta(),
        record_count,
        codec: to.codec,
        timestamp_type: TimestampType::CreateTime,
        first_timestamp: first,
        max_timestamp: batch.max_timestamp_ms(),
        block: compress(to, &body)?,
    })
}

/// Kafka's records section (uncompressed) for `records` with their offset
/// `deltas`, timestamps as deltas from `first_timestamp`.
pub fn encode_records(records: &[Record], deltas: &[i32], first_timestamp: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(records.iter().map(|r| r.payload_bytes() + 16).sum());
    let mut body = Vec::new();
    for (r, delta) in records.iter().zip(deltas) {
        body.clear();
        body.push(0); // record attributes: unused by Kafka
        put_varlong(&mut body, r.timestamp_ms.wrapping_sub(first_timestamp));
        put_varlong(&mut body, i64::from(*delta));
        put_varint_bytes(&mut body, r.key.as_deref());
        put_varint_bytes(&mut body, r.value.as_deref());
        put_varlong(&mut body, r.headers.len() as i64);
        for h in &r.headers {
            put_varint_bytes(&mut body, Some(h.key.as_bytes()));
            put_varint_bytes(&mut body, h.value.as_deref());
        }
        put_varlong(&mut out, body.len() as i64);
        out.extend_from_slice(&body);
    }
    out
}

/// A zigzag varint (Kafka's `varint`/`varlong` share the encoding).
#[allow(
    clippy::cast_possible_truncation,
    reason = "each byte takes the low seven bits on purpose"
)]
fn put_varlong(out: &mut Vec<u8>, n: i64) {
    let mut u = ((n << 1) ^ (n >> 63)) as u64;
    while u >= 0x80 {
        out.push((u & 0x7f) as u8 | 0x80);
        u >>= 7;
    }
    out.push(u as u8);
}

fn put_varint_bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => put_varlong(out, -1),
        Some(b) => {
            put_varlong(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

fn too_large(limit: usize) -> crate::LogError {
    crate::LogError::DecompressedTooLarge { limit }
}

fn cannot(codec: Codec, e: impl std::fmt::Display) -> crate::LogError {
    corrupt(format!("cannot decompress {codec:?} records: {e}"))
}

fn read_bounded(codec: Codec, reader: impl Read, limit: usize) -> Result<Bytes> {
    let mut out = Vec::new();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    reader
        .take(cap)
        .read_to_end(&mut out)
        .map_err(|e| cannot(codec, e))?;
    if out.len() > limit {
        return Err(too_large(limit));
    }
    Ok(Bytes::from(out))
}

fn snappy(data: &[u8], limit: usize) -> Result<Bytes> {
    let mut out = Vec::new();
    if !data.starts_with(&XERIAL_MAGIC) {
        snappy_block(data, limit, &mut out)?;
        return Ok(Bytes::from(out));
    }
    // xerial framing: magic, version i32, compatible version i32, then
    // blocks of (length i32, raw snappy).
    let mut r = ByteReader::new(&data[XERIAL_MAGIC.len()..]);
    r.take(8).map_err(|e| cannot(Codec::Snappy, e))?;
    while !r.is_empty() {
        let n = r.i32().map_err(|e| cannot(Codec::Snappy, e))?;
        let n = usize::try_from(n).map_err(|_| cannot(Codec::Snappy, "negative block length"))?;
        let block = r.take(n).map_err(|e| cannot(Codec::Snappy, e))?;
        let room = limit.saturating_sub(out.len());
        snappy_block(block, room, &mut out)?;
    }
    Ok(Bytes::from(out))
}

/// Decompresses one raw snappy block onto `out`, refusing one that claims
/// more than `room` bytes before allocating for it.
fn snappy_block(block: &[u8], room: usize, out: &mut Vec<u8>) -> Result<()> {
    let len = snap::raw::decompress_len(block).map_err(|e| cannot(Codec::Snappy, e))?;
    if len > room {
        return Err(too_large(room));
    }
    let start = out.len();
    out.resize(start + len, 0);
    let n = snap::raw::Decoder::new()
        .decompress(block, &mut out[start..])
        .map_err(|e| cannot(Codec::Snappy, e))?;
    out.truncate(start + n);
    Ok(())
}

/// Decodes a block batch's records into the core's batch (offsets, producer,
/// transactional id and marker kept), with the block kept beside them so
/// that writing the batch again writes the block as it is. A marker batch
/// becomes a marker with no records, as version 1 stores it. Damage is
/// CORRUPT_BATCH.
pub fn decode_records(batch: &BlockBatch, limit: usize) -> Result<RecordBatch> {
    if batch.is_emptied() {
        return Ok(RecordBatch::emptied_from(batch));
    }
    let h = batch.header();
    let (records, deltas) = if h.control.is_some() {
        (Vec::new(), Vec::new())
    } else {
        let body = decompress(batch.codec(), batch.block(), limit)?;
        data_records(batch, &body)?
    };
    RecordBatch::from_parts(
        records,
        deltas,
        h.last_offset_delta,
        h.base_offset,
        h.leader_epoch,
        h.producer,
        batch.transactional_id().map(str::to_string),
        h.control,
    )
    .map_err(corrupt)?
    .with_block(batch.clone())
    .map_err(|e| corrupt(e.to_string()))
}

fn data_records(batch: &BlockBatch, body: &Bytes) -> Result<(Vec<Record>, Vec<i32>)> {
    let mut r = ByteReader::new(body);
    let count = r
        .check_count(batch.header().record_count as usize, RECORD_MIN_BYTES)
        .map_err(truncated)?;
    let stamp = match batch.timestamp_type() {
        TimestampType::LogAppendTime => Some(batch.max_timestamp()),
        TimestampType::CreateTime => None,
    };
    let mut records = Vec::with_capacity(count);
    let mut deltas = Vec::with_capacity(count);
    for i in 0..count {
        let (record, delta) = record(&mut r, body, batch.first_timestamp(), stamp)
            .map_err(|e| corrupt(format!("record {i}: {e}")))?;
        records.push(record);
        deltas.push(delta);
    }
    if !r.is_empty() {
        return Err(corrupt(format!(
            "{} byte(s) after the last of {count} records",
            r.remaining()
        )));
    }
    Ok((records, deltas))
}

/// One record; `stamp` is the batch's append time on LogAppendTime batches.
fn record(
    r: &mut ByteReader<'_>,
    whole: &Bytes,
    first_timestamp: i64,
    stamp: Option<i64>,
) -> Result<(Record, i32)> {
    let length = varint(r)?;
    let length = usize::try_from(length)
        .ok()
        .filter(|n| *n <= r.remaining())
        .ok_or_else(|| corrupt(format!("length {length} with {} bytes left", r.remaining())))?;
    let start = r.position();
    let _attributes = r.u8().map_err(truncated)?;
    let timestamp_delta = varlong(r)?;
    let offset_delta = varint(r)?;
    let key = varint_bytes(r, whole)?;
    let value = varint_bytes(r, whole)?;
    let header_count = varint(r)?;
    let header_count = usize::try_from(header_count)
        .map_err(|_| corrupt(format!("header count {header_count}")))
        .and_then(|n| r.check_count(n, 2).map_err(truncated))?;
    let mut headers = Vec::with_capacity(header_count);
    for _ in 0..header_count {
        let key_len = varint(r)?;
        let key_len =
            usize::try_from(key_len).map_err(|_| corrupt("a header key is null".to_string()))?;
        let key = utf8(r.take(key_len).map_err(truncated)?, "header key")?.to_string();
        headers.push(Header::new(key, varint_bytes(r, whole)?));
    }
    if r.position() - start != length {
        return Err(corrupt(format!(
            "length says {length} bytes, its fields took {}",
            r.position() - start
        )));
    }
    let timestamp_ms = stamp.unwrap_or_else(|| first_timestamp.wrapping_add(timestamp_delta));
    Ok((
        Record::new(key, value, timestamp_ms).with_headers(headers),
        offset_delta,
    ))
}

/// A zigzag varint of at most 5 bytes (Kafka's `varint`).
fn varint(r: &mut ByteReader<'_>) -> Result<i32> {
    let v = unsigned_varint(r, 5)?;
    let v = u32::try_from(v).map_err(|_| corrupt("a varint overflows 32 bits".to_string()))?;
    // Zigzag: the low bit is the sign.
    Ok(((v >> 1) as i32) ^ -((v & 1) as i32))
}

/// A zigzag varint of at most 10 bytes (Kafka's `varlong`).
fn varlong(r: &mut ByteReader<'_>) -> Result<i64> {
    let v = unsigned_varint(r, 10)?;
    Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
}

fn unsigned_varint(r: &mut ByteReader<'_>, max_bytes: u32) -> Result<u64> {
    let mut value = 0u64;
    for i in 0..max_bytes {
        let b = r.u8().map_err(truncated)?;
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(corrupt(format!("a varint runs past {max_bytes} bytes")))
}

/// Varint-length bytes (-1 is null) as a zero-copy slice of `whole`.
fn varint_bytes(r: &mut ByteReader<'_>, whole: &Bytes) -> Result<Option<Bytes>> {
    match varint(r)? {
        -1 => Ok(None),
        n => {
            let n = usize::try_from(n).map_err(|_| corrupt(format!("length {n} is negative")))?;
            let start = r.position();
            r.take(n).map_err(truncated)?;
            Ok(Some(whole.slice(start..start + n)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mk_core::ErrorCode;

    #[test]
    fn a_block_decompressing_past_the_limit_is_refused_without_growing_past_it() {
        let zeros = vec![0u8; 1 << 20];
        let bombs = [
            (Codec::Zstd, zstd::encode_all(&zeros[..], 3).unwrap()),
            (
                Codec::Snappy,
                snap::raw::Encoder::new().compress_vec(&zeros).unwrap(),
            ),
            (Codec::None, zeros.clone()),
        ];
        for (codec, data) in bombs {
            let err = decompress(codec, &Bytes::from(data), 4096).unwrap_err();
            assert_eq!(err.code(), ErrorCode::CorruptBatch, "{codec:?}");
            assert!(err.to_string().contains("more than 4096"), "{err}");
        }
    }

    const CODECS: [Codec; 5] = [
        Codec::None,
        Codec::Gzip,
        Codec::Snappy,
        Codec::Lz4,
        Codec::Zstd,
    ];
    const LIMIT: usize = 1 << 20;

    fn sample() -> Vec<Record> {
        (0..40)
            .map(|i| {
                let key = (i % 4 != 0).then(|| Bytes::from(format!("key-{}", i % 7)));
                let value = (i % 9 != 8).then(|| Bytes::from(format!("{{\"n\":{i}}}").repeat(i)));
                Record::new(key, value, 1_000 + i as i64 * 3)
                    .with_headers(vec![Header::new("h", Some(Bytes::from(i.to_string())))])
            })
            .collect()
    }

    fn produced(records: &[Record], codec: Codec) -> BlockBatch {
        let deltas: Vec<i32> = (0..i32::try_from(records.len()).unwrap()).collect();
        let body = encode_records(records, &deltas, records[0].timestamp_ms);
        BlockBatch::new(BlockParts {
            base_offset: 500,
            leader_epoch: 2,
            producer: crate::ProducerInfo {
                producer_id: 9,
                producer_epoch: 1,
                base_sequence: 30,
            },
            transactional_id: None,
            control: None,
            last_offset_delta: i32::try_from(deltas.len()).unwrap() - 1,
            record_count: u32::try_from(records.len()).unwrap(),
            codec,
            timestamp_type: TimestampType::CreateTime,
            first_timestamp: records[0].timestamp_ms,
            max_timestamp: records.iter().map(|r| r.timestamp_ms).max().unwrap(),
            block: compress(Compression::of(codec), &body).unwrap(),
        })
        .unwrap()
    }

    #[test]
    fn every_codec_recompresses_to_every_codec_keeping_records_and_fields() {
        let records = sample();
        for from in CODECS {
            let batch = produced(&records, from);
            assert_eq!(
                batch.records(LIMIT).unwrap().records(),
                &records[..],
                "{from:?}"
            );
            for to in CODECS {
                let again = batch.recompressed(Compression::of(to), LIMIT).unwrap();
                assert_eq!(again.codec(), to, "{from:?} -> {to:?}");
                if from == to {
                    assert_eq!(again, batch, "the same codec passes the batch through");
                    continue;
                }
                assert_ne!(again.block(), batch.block(), "{from:?} -> {to:?}");
                assert_eq!(again.header(), batch.header(), "{from:?} -> {to:?}");
                assert_eq!(again.max_timestamp(), batch.max_timestamp());
                // Kafka's CRC covers the new block: a stored frame decodes.
                let frame = again.encode().unwrap();
                let back = crate::block::decode(&frame, u32::try_from(LIMIT).unwrap()).unwrap();
                assert_eq!(back.records(LIMIT).unwrap().records(), &records[..]);
            }
        }
    }

    #[test]
    fn the_brokers_own_records_become_a_block_of_the_topics_codec() {
        let producer = crate::ProducerInfo {
            producer_id: 4,
            producer_epoch: 2,
            base_sequence: 10,
        };
        // Timestamps out of order: the block's first and max are still the
        // records' smallest and greatest.
        let mut records = sample();
        records.swap(0, 7);
        let own = RecordBatch::new(records.clone())
            .unwrap()
            .with_producer(producer)
            .with_transactional_id("t");
        for codec in CODECS {
            let mut batch = own.clone();
            let changed = batch.recompress(Compression::of(codec), LIMIT).unwrap();
            if codec == Codec::None {
                assert!(!changed && batch == own, "uncompressed keeps the batch");
                continue;
            }
            assert!(changed && batch.is_block_only(), "{codec:?}");
            let block = batch.block().unwrap();
            assert_eq!(block.codec(), codec);
            assert_eq!(batch.producer(), producer);
            assert_eq!(batch.transactional_id(), Some("t"));
            assert_eq!(batch.record_count(), 40);
            assert_eq!(batch.last_offset_delta(), 39);
            assert_eq!(batch.min_timestamp_ms(), own.min_timestamp_ms());
            assert_eq!(batch.max_timestamp_ms(), own.max_timestamp_ms());
            let back = block.records(LIMIT).unwrap();
            assert_eq!(back.records(), &records[..], "{codec:?}");
            assert_eq!(back.offset_deltas(), own.offset_deltas());
        }
        // A marker and an assigned batch are left as they are.
        let marker = RecordBatch::marker(crate::ControlType::Commit, "t", producer);
        let mut m = marker.clone();
        assert!(!m.recompress(Compression::of(Codec::Zstd), LIMIT).unwrap());
        assert_eq!(m, marker);
        let mut assigned = own.clone();
        assigned.assign(3, 0).unwrap();
        let before = assigned.clone();
        assert!(
            !assigned
                .recompress(Compression::of(Codec::Zstd), LIMIT)
                .unwrap()
        );
        assert_eq!(assigned, before);
    }

    #[test]
    fn recompression_stays_within_the_decompression_bound() {
        let batch = produced(&sample(), Codec::Zstd);
        let err = batch
            .recompressed(Compression::of(Codec::Gzip), 100)
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::CorruptBatch);
    }

    #[test]
    fn levels_change_the_bytes_not_the_records() {
        let records = sample();
        let body = encode_records(&records, &(0..40).collect::<Vec<_>>(), 1_000);
        for codec in [Codec::Gzip, Codec::Zstd] {
            let fast = compress(
                Compression {
                    codec,
                    level: Some(1),
                },
                &body,
            )
            .unwrap();
            let best = compress(
                Compression {
                    codec,
                    level: Some(9),
                },
                &body,
            )
            .unwrap();
            assert_ne!(fast, best, "{codec:?}");
            for c in [fast, best] {
                assert_eq!(decompress(codec, &c, LIMIT).unwrap(), &body[..]);
            }
        }
        // lz4: Kafka's default level 9 is LZ4's fast mode, another level
        // LZ4 HC (smaller here); both frames as Kafka's producer writes
        // them: FLG version 1 with independent blocks and no checksums,
        // BD 64 KiB blocks.
        let lz4_at = |level| {
            compress(
                Compression {
                    codec: Codec::Lz4,
                    level: Some(level),
                },
                &body,
            )
            .unwrap()
        };
        let (fast, high) = (lz4_at(9), lz4_at(12));
        assert_eq!(fast, compress(Compression::of(Codec::Lz4), &body).unwrap());
        assert!(high.len() < fast.len(), "{} vs {}", high.len(), fast.len());
        for c in [fast, high] {
            assert_eq!(&c[..4], &[0x04, 0x22, 0x4d, 0x18], "LZ4 frame magic");
            assert_eq!((c[4], c[5]), (0x60, 0x40), "FLG and BD");
            assert_eq!(decompress(Codec::Lz4, &c, LIMIT).unwrap(), &body[..]);
        }
        // Snappy is written as Kafka's producer writes it: xerial-framed.
        let snappy = compress(Compression::of(Codec::Snappy), &body).unwrap();
        assert!(snappy.starts_with(&XERIAL_MAGIC));
        let big = vec![7u8; 3 * XERIAL_BLOCK_BYTES + 5];
        let framed = compress(Compression::of(Codec::Snappy), &big).unwrap();
        assert_eq!(decompress(Codec::Snappy, &framed, LIMIT).unwrap(), &big[..]);
    }

    #[test]
    fn a_rebuilt_block_keeps_offsets_producer_and_codec_of_the_original() {
        let records = sample();
        for codec in CODECS {
            let original = produced(&records, codec);
            let mut kept = original.records(LIMIT).unwrap();
            kept.retain_records(|offset, _| offset % 3 == 1);
            let rebuilt = rebuild(&original, &kept).unwrap();
            assert_eq!(rebuilt.codec(), codec);
            let h = rebuilt.header();
            assert_eq!(h.base_offset, 500);
            assert_eq!(h.last_offset_delta, 39, "the last offset stays");
            assert_eq!(h.producer, original.header().producer);
            assert_eq!(h.record_count as usize, kept.records().len());
            assert_eq!(rebuilt.first_timestamp(), 1_006, "offset 502");
            let back =
                crate::block::decode(&rebuilt.encode().unwrap(), u32::try_from(LIMIT).unwrap())
                    .unwrap();
            let decoded = back.records(LIMIT).unwrap();
            assert_eq!(decoded.records(), kept.records());
            assert_eq!(decoded.offset_deltas(), kept.offset_deltas());
            assert_eq!(back.max_timestamp(), kept.max_timestamp_ms());
        }
    }

    #[test]
    fn varints_decode_as_kafka_encodes_them() {
        let bytes = [
            0x01, 0x02, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x80, 0x80, 0x80, 0x80, 0x80,
        ];
        let mut r = ByteReader::new(&bytes);
        assert_eq!(varint(&mut r).unwrap(), -1);
        assert_eq!(varint(&mut r).unwrap(), 1);
        assert_eq!(varint(&mut r).unwrap(), i32::MIN);
        let err = varint(&mut r).unwrap_err();
        assert!(err.to_string().contains("past 5 bytes"), "{err}");
    }
}
