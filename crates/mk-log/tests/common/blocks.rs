//! Producer blocks for the tests of MKB1 version 2: Kafka's records
//! section encoded as a producer encodes it, compressed with every codec.

use super::{b, producer};
use bytes::Bytes;
use mk_log::block::{BlockBatch, BlockParts, Codec, TimestampType};
use mk_log::{ControlType, Header, ProducerInfo, Record};
use std::io::Write;

pub const CODECS: [Codec; 5] = [
    Codec::None,
    Codec::Gzip,
    Codec::Snappy,
    Codec::Lz4,
    Codec::Zstd,
];

pub fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

pub fn put_varint(out: &mut Vec<u8>, n: i64) {
    let mut u = zigzag(n);
    while u >= 0x80 {
        out.push(u.to_le_bytes()[0] | 0x80);
        u >>= 7;
    }
    out.push(u.to_le_bytes()[0]);
}

pub fn put_bytes(out: &mut Vec<u8>, b: Option<&Bytes>) {
    match b {
        None => put_varint(out, -1),
        Some(b) => {
            put_varint(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// Kafka's records section for `records`, as a producer encodes it.
pub fn kafka_records(records: &[Record]) -> Vec<u8> {
    let first = records[0].timestamp_ms;
    let mut out = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let mut body = vec![0u8];
        put_varint(&mut body, r.timestamp_ms - first);
        put_varint(&mut body, i as i64);
        put_bytes(&mut body, r.key.as_ref());
        put_bytes(&mut body, r.value.as_ref());
        put_varint(&mut body, r.headers.len() as i64);
        for h in &r.headers {
            put_bytes(&mut body, Some(&Bytes::copy_from_slice(h.key.as_bytes())));
            put_bytes(&mut body, h.value.as_ref());
        }
        put_varint(&mut out, body.len() as i64);
        out.extend_from_slice(&body);
    }
    out
}

pub fn compress(codec: Codec, data: &[u8]) -> Vec<u8> {
    match codec {
        Codec::None => data.to_vec(),
        Codec::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        Codec::Snappy => snap::raw::Encoder::new().compress_vec(data).unwrap(),
        Codec::Lz4 => {
            let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        Codec::Zstd => zstd::encode_all(data, 3).unwrap(),
    }
}

/// A produced block batch of `records` (unassigned: the log assigns).
pub fn block_batch(records: &[Record], codec: Codec, txn: Option<(&str, i64)>) -> BlockBatch {
    let max = records.iter().map(|r| r.timestamp_ms).max().unwrap();
    BlockBatch::new(BlockParts {
        base_offset: 0,
        leader_epoch: 0,
        producer: txn.map_or(ProducerInfo::NONE, |(_, pid)| producer(pid)),
        transactional_id: txn.map(|(id, _)| id.to_string()),
        control: None,
        last_offset_delta: i32::try_from(records.len()).unwrap() - 1,
        record_count: u32::try_from(records.len()).unwrap(),
        codec,
        timestamp_type: TimestampType::CreateTime,
        first_timestamp: records[0].timestamp_ms,
        max_timestamp: max,
        block: Bytes::from(compress(codec, &kafka_records(records))),
    })
    .unwrap()
}

/// A version 2 abort or commit marker of producer `pid`.
pub fn block_marker(kind: ControlType, txn: &str, pid: i64, ts: i64) -> BlockBatch {
    let kind_byte = u8::from(kind == ControlType::Commit);
    let body = [0, 0, 0, 8, 0, 0, 0, kind_byte, 12, 0, 0, 0, 0, 0, 0, 0];
    let mut block = vec![32u8];
    block.extend_from_slice(&body);
    BlockBatch::new(BlockParts {
        base_offset: 0,
        leader_epoch: 0,
        producer: producer(pid),
        transactional_id: Some(txn.into()),
        control: Some(kind),
        last_offset_delta: 0,
        record_count: 1,
        codec: Codec::None,
        timestamp_type: TimestampType::CreateTime,
        first_timestamp: ts,
        max_timestamp: ts,
        block: Bytes::from(block),
    })
    .unwrap()
}

/// Records `i..i + n` with keys, values, a header and rising timestamps.
pub fn records(i: usize, n: usize) -> Vec<Record> {
    (i..i + n)
        .map(|j| {
            let key = (j % 3 != 0).then(|| b(&format!("k{}", j % 4)));
            let value = (j % 7 != 6).then(|| b(&format!("value {j} {}", "x".repeat(j % 50))));
            Record::new(key, value, 1_000 + j as i64 * 10)
                .with_headers(vec![Header::new("h", Some(b(&j.to_string())))])
        })
        .collect()
}
