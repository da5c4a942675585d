//! The records inside an MKB1 version 2 block: Kafka's varint record
//! encoding, decompressed within a bound by the block's codec (gzip, snappy
//! raw or xerial-framed, LZ4 frames, zstd), decoded into the core's
//! `RecordBatch` where an answer needs records (compaction, replay, the
//! JSON protocol). Fetch and replication never come here: they move the
//! block as stored.

use crate::block::{BlockBatch, Codec, TimestampType};
use crate::codec::{corrupt, truncated, utf8};
use crate::error::Result;
use crate::record::{Header, Record, RecordBatch};
use bytes::Bytes;
use mk_core::ByteReader;
use std::io::Read;

/// The xerial snappy-java stream header ("\x82SNAPPY\0").
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// The zstd window a block may ask for (16 MiB): larger windows would let a
/// tiny frame make the decoder allocate a large buffer.
const ZSTD_WINDOW_LOG_MAX: u32 = 24;
/// The fewest bytes a Kafka record takes (seven one-byte fields).
const RECORD_MIN_BYTES: usize = 7;

/// The block's records section decompressed, at most `limit` bytes
/// whatever sizes the compressed data claims.
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

fn too_large(limit: usize) -> crate::LogError {
    corrupt(format!("the records decompress to more than {limit} bytes"))
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
