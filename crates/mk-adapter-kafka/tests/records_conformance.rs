//! Record batches against an independent implementation: batches the
//! `kafka-protocol` crate encodes — uncompressed and with each codec — are
//! accepted by our produce path with every field intact, and the v2
//! batches our fetch path writes are read back by it with the same offsets
//! (compaction gaps included), timestamps, producer fields and flags; a
//! produced batch, stored and fetched, is the producer's bytes but for the
//! broker's fields (base offset, leader epoch), whatever its codec.

use bytes::{Bytes, BytesMut};
use indexmap::IndexMap;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record as KRecord, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions,
    TimestampType,
};
use mk_adapter_kafka::records::{DecodeLimits, decode_produced, encode_batch, encode_fetched};
use mk_cluster::{ControlType, Header, ProducerInfo, Record, RecordBatch};

fn oracle_records(n: i64, producer_id: i64, base_sequence: i32) -> Vec<KRecord> {
    (0..n)
        .map(|i| {
            let mut headers = IndexMap::new();
            headers.insert(
                StrBytes::from_static_str("trace"),
                Some(Bytes::from(format!("t{i}"))),
            );
            headers.insert(StrBytes::from_static_str("empty"), None);
            KRecord {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id,
                producer_epoch: if producer_id >= 0 { 1 } else { -1 },
                timestamp_type: TimestampType::Creation,
                offset: i,
                sequence: if producer_id >= 0 {
                    base_sequence + i32::try_from(i).unwrap()
                } else {
                    -1
                },
                timestamp: 1_700_000_000_000 + i * 3,
                key: if i % 3 == 0 {
                    None
                } else {
                    Some(Bytes::from(format!("key-{i}")))
                },
                value: if i % 5 == 4 {
                    None
                } else {
                    Some(Bytes::from(vec![b'v'; usize::try_from(i * 7).unwrap()]))
                },
                headers,
            }
        })
        .collect()
}

fn limits() -> DecodeLimits {
    DecodeLimits {
        max_uncompressed_bytes: 16 << 20,
    }
}

/// Every compression a producer may use.
const EVERY_CODEC: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

#[test]
fn batches_the_oracle_produces_are_accepted_intact_with_every_codec() {
    for compression in EVERY_CODEC {
        let records = oracle_records(50, 12, 100);
        let mut buf = BytesMut::new();
        RecordBatchEncoder::encode(
            &mut buf,
            &records,
            &RecordEncodeOptions {
                version: 2,
                compression,
            },
        )
        .unwrap();
        let got = decode_produced(&buf.freeze(), limits(), 0, None)
            .unwrap_or_else(|e| panic!("{compression:?}: {e:?}"));
        assert_eq!(got.record_count, 50, "{compression:?}");
        assert_eq!(
            got.batch.producer(),
            ProducerInfo {
                producer_id: 12,
                producer_epoch: 1,
                base_sequence: 100
            }
        );
        // The batch travels as the producer's block; its records, decoded
        // where an answer needs them, are the producer's.
        assert!(got.batch.is_block_only(), "{compression:?}");
        let decoded = got.batch.decoded(1 << 24).unwrap();
        assert_eq!(decoded.records().len(), 50, "{compression:?}");
        for (k, ours) in records.iter().zip(decoded.records()) {
            assert_eq!(ours.key, k.key, "{compression:?}");
            assert_eq!(ours.value, k.value, "{compression:?}");
            assert_eq!(ours.timestamp_ms, k.timestamp, "{compression:?}");
            let headers: Vec<(String, Option<Bytes>)> = k
                .headers
                .iter()
                .map(|(key, v)| (key.to_string(), v.clone()))
                .collect();
            let ours_headers: Vec<(String, Option<Bytes>)> = ours
                .headers
                .iter()
                .map(|h| (h.key.clone(), h.value.clone()))
                .collect();
            assert_eq!(ours_headers, headers, "{compression:?}");
        }
    }
}

fn b(s: &str) -> Option<Bytes> {
    Some(Bytes::copy_from_slice(s.as_bytes()))
}

#[test]
fn batches_we_write_are_read_back_by_the_oracle() {
    // A compacted batch: records at offsets 100, 103 and 107 of a batch whose
    // last offset is 109, a transactional producer, duplicate header keys.
    let records = vec![
        Record::new(b("a"), b("1"), 5_000),
        Record::new(None, Some(Bytes::new()), 5_010)
            .with_headers(vec![Header::new("h", b("x")), Header::new("h", None)]),
        Record::new(b("c"), None, 4_990),
    ];
    let mut batch = RecordBatch::new(records.clone())
        .unwrap()
        .with_offset_deltas(vec![0, 3, 7], 9)
        .unwrap()
        .with_producer(ProducerInfo {
            producer_id: 4,
            producer_epoch: 2,
            base_sequence: 0,
        })
        .with_transactional_id("tx");
    batch.assign(100, 6).unwrap();
    let mut marker = RecordBatch::marker(
        ControlType::Commit,
        "tx",
        ProducerInfo {
            producer_id: 4,
            producer_epoch: 2,
            base_sequence: -1,
        },
    );
    marker.assign(110, 6).unwrap();
    let mut out = BytesMut::new();
    encode_batch(&batch, &mut out);
    encode_batch(&marker, &mut out);
    let mut buf = out.freeze();
    let sets = RecordBatchDecoder::decode_all(&mut buf).unwrap();
    assert_eq!(sets.len(), 2);
    let data = &sets[0].records;
    let offsets: Vec<i64> = data.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, vec![100, 103, 107]);
    for (k, ours) in data.iter().zip(&records) {
        assert_eq!(k.key, ours.key);
        assert_eq!(k.value, ours.value);
        assert_eq!(k.timestamp, ours.timestamp_ms);
        assert!(k.transactional && !k.control);
        assert_eq!((k.producer_id, k.producer_epoch), (4, 2));
        assert_eq!(k.partition_leader_epoch, 6);
    }
    // The oracle keeps headers in a map, so of the duplicate keys it holds
    // one; that the batch decodes at all means the lengths are right.
    assert!(data[1].headers.keys().any(|k| &**k == "h"));
    let control = &sets[1].records;
    assert_eq!(control.len(), 1);
    assert!(control[0].control && control[0].transactional);
    assert_eq!(control[0].offset, 110);
    // Control record key: version 0, type 1 (COMMIT).
    assert_eq!(control[0].key.as_deref(), Some(&[0u8, 0, 0, 1][..]));
}

#[test]
fn a_produced_batch_is_stored_and_fetched_as_produced_with_every_codec() {
    use mk_cluster::block;
    for compression in EVERY_CODEC {
        let mut buf = BytesMut::new();
        RecordBatchEncoder::encode(
            &mut buf,
            &oracle_records(40, 12, 100),
            &RecordEncodeOptions {
                version: 2,
                compression,
            },
        )
        .unwrap();
        let produced = buf.freeze();
        let got = decode_produced(&produced, limits(), 0, None).unwrap();
        // What the log does: assign offset and epoch, write an MKB1
        // version 2 frame, read it back.
        let mut stored = got.batch.block().expect("the block is kept").clone();
        stored.assign(1_000, 7).unwrap();
        let frame = stored.encode().unwrap();
        // What a fetch does with it: slices the stored frame, decodes
        // nothing.
        assert_eq!(block::decode(&frame, u32::MAX).unwrap(), stored);
        let located = mk_cluster::FetchedBatch::Block(block::located(&frame).unwrap());
        let mut fetched = BytesMut::new();
        encode_fetched(&located, &mut fetched);
        // Byte for byte the producer's batch, but for the broker's fields.
        assert_eq!(fetched.len(), produced.len(), "{compression:?}");
        assert_eq!(&fetched[0..8], &1_000i64.to_be_bytes(), "{compression:?}");
        assert_eq!(&fetched[12..16], &7i32.to_be_bytes(), "{compression:?}");
        assert_eq!(&fetched[8..12], &produced[8..12], "{compression:?}");
        assert_eq!(&fetched[16..], &produced[16..], "{compression:?}");
        // The oracle reads it back: 40 records from offset 1000.
        let mut bytes = fetched.freeze();
        let sets = RecordBatchDecoder::decode_all(&mut bytes).unwrap();
        let set = &sets[0];
        assert_eq!(set.records.len(), 40, "{compression:?}");
        assert_eq!(set.records[0].offset, 1_000);
        assert_eq!(set.records[39].offset, 1_039);
        assert_eq!(set.records[1].key, Some(Bytes::from("key-1")));
    }
}
