//! Property tests and the byte-layout snapshot of MKB1 version 2 (block
//! frames, docs/mkb1.md).

mod common;

use bytes::Bytes;
use common::enveloped;
use mk_core::ErrorCode;
use mk_log::block::{self, BlockBatch, BlockParts, Codec, TimestampType};
use mk_log::{ControlType, ProducerInfo};
use proptest::prelude::*;

const MAX: u32 = 16 * 1024 * 1024;

fn codec() -> impl Strategy<Value = Codec> {
    prop_oneof![
        Just(Codec::None),
        Just(Codec::Gzip),
        Just(Codec::Snappy),
        Just(Codec::Lz4),
        Just(Codec::Zstd),
    ]
}

fn data_batch() -> impl Strategy<Value = BlockBatch> {
    (
        (0i64..1_000_000, 0i32..1000, 1u32..20, 0i32..5),
        (-1i64..5, -1i16..3, -1i32..100),
        prop::option::of("[a-zé☃]{0,6}"),
        (codec(), any::<bool>(), any::<i64>(), any::<i64>()),
        prop::collection::vec(any::<u8>(), 0..200),
    )
        .prop_map(
            |((base, epoch, count, gap), (pid, pe, seq), txn, (codec, lat, first, max), block)| {
                BlockBatch::new(BlockParts {
                    base_offset: base,
                    leader_epoch: epoch,
                    producer: ProducerInfo {
                        producer_id: pid,
                        producer_epoch: i32::from(pe),
                        base_sequence: seq,
                    },
                    transactional_id: txn,
                    control: None,
                    // Compaction leaves fewer records than offsets.
                    last_offset_delta: i32::try_from(count).unwrap() - 1 + gap,
                    record_count: count,
                    codec,
                    timestamp_type: if lat {
                        TimestampType::LogAppendTime
                    } else {
                        TimestampType::CreateTime
                    },
                    first_timestamp: first,
                    max_timestamp: max,
                    block: Bytes::from(block),
                })
                .unwrap()
            },
        )
}

fn control_batch() -> impl Strategy<Value = BlockBatch> {
    (any::<bool>(), "[a-z]{0,6}", 0i64..1000, 0i32..10).prop_map(|(commit, txn, base, epoch)| {
        BlockBatch::new(BlockParts {
            base_offset: base,
            leader_epoch: epoch,
            producer: ProducerInfo {
                producer_id: 3,
                producer_epoch: 1,
                base_sequence: -1,
            },
            transactional_id: Some(txn),
            control: Some(if commit {
                ControlType::Commit
            } else {
                ControlType::Abort
            }),
            last_offset_delta: 0,
            record_count: 1,
            codec: Codec::None,
            timestamp_type: TimestampType::CreateTime,
            first_timestamp: 1_700_000_000_000,
            max_timestamp: 1_700_000_000_000,
            block: control_record(commit),
        })
        .unwrap()
    })
}

/// Kafka's control record (length, attributes, deltas, key, value, no
/// headers), as the doc describes it.
fn control_record(commit: bool) -> Bytes {
    let kind = u8::from(commit);
    // attributes, timestamp delta, offset delta, key length 4 (zigzag 8),
    // key = version 0 | type, value length 6 (zigzag 12), value = version 0
    // | coordinator epoch 0, no headers.
    let body = [
        0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, kind, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00,
    ];
    let mut r = vec![u8::try_from(body.len() * 2).unwrap()];
    r.extend_from_slice(&body);
    Bytes::from(r)
}

fn batch() -> impl Strategy<Value = BlockBatch> {
    prop_oneof![4 => data_batch(), 1 => control_batch()]
}

proptest! {
    #[test]
    fn any_block_batch_round_trips_byte_exact(b in batch()) {
        let frame = b.encode().unwrap();
        prop_assert_eq!(frame.len(), b.encoded_len());
        let back = block::decode(&frame, MAX).unwrap();
        prop_assert_eq!(&back, &b);
        prop_assert_eq!(back.encode().unwrap(), frame);
    }

    #[test]
    fn every_truncation_of_a_block_frame_is_corrupt_batch(b in batch()) {
        let frame = b.encode().unwrap();
        for len in 0..frame.len() {
            let err = block::decode(&frame.slice(..len), MAX).unwrap_err();
            prop_assert_eq!(err.code(), ErrorCode::CorruptBatch, "truncated to {}", len);
        }
    }

    #[test]
    fn single_byte_flips_in_a_block_frame_are_detected(
        b in batch(),
        pos in any::<prop::sample::Index>(),
        bit in 0u8..8,
    ) {
        let mut bad = b.encode().unwrap().to_vec();
        let i = pos.index(bad.len());
        bad[i] ^= 1 << bit;
        let err = block::decode(&Bytes::from(bad), MAX).unwrap_err();
        prop_assert_eq!(err.code(), ErrorCode::CorruptBatch);
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_block_decoder(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Err(e) = block::decode(&Bytes::from(bytes), MAX) {
            prop_assert_eq!(e.code(), ErrorCode::CorruptBatch);
        }
    }

    #[test]
    fn a_valid_envelope_around_a_random_version_2_payload_never_panics(
        mut payload in prop::collection::vec(any::<u8>(), 1..300),
    ) {
        // A correct magic, length, CRC and version byte reach the deep checks.
        payload[0] = 2;
        if let Err(e) = block::decode(&enveloped(&payload), MAX) {
            prop_assert_eq!(e.code(), ErrorCode::CorruptBatch);
        }
    }

    #[test]
    fn decoding_the_records_of_a_random_block_never_panics(b in data_batch()) {
        // The block's bytes are random: decoding them (decompressing with
        // the batch's codec first) fails cleanly or yields whole records.
        match b.records(1 << 20) {
            Ok(batch) => prop_assert_eq!(batch.records().len(), b.header().record_count as usize),
            Err(e) => prop_assert_eq!(e.code(), ErrorCode::CorruptBatch),
        }
    }

    #[test]
    fn the_kafka_batch_a_fetch_sends_carries_a_valid_crc(b in batch(), base in 0i64..1 << 40, epoch in 0i32..1000) {
        let mut b = b;
        let before = b.kafka_crc();
        b.assign(base, epoch).unwrap();
        prop_assert_eq!(b.kafka_crc(), before, "offsets are outside Kafka's CRC");
        let mut wire = b.kafka_batch_header().unwrap().to_vec();
        wire.extend_from_slice(b.block());
        prop_assert_eq!(&wire[0..8], &base.to_be_bytes());
        prop_assert_eq!(&wire[12..16], &epoch.to_be_bytes());
        prop_assert_eq!(&wire[17..21], &crc32c::crc32c(&wire[21..]).to_be_bytes());
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .chunks(16)
        .map(|chunk| {
            chunk
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn snapshot_fixed_block_frame_hex_freezes_the_version_2_layout() {
    let batch = BlockBatch::new(BlockParts {
        base_offset: 42,
        leader_epoch: 2,
        producer: ProducerInfo {
            producer_id: 7,
            producer_epoch: 1,
            base_sequence: 3,
        },
        transactional_id: Some("tx".into()),
        control: None,
        last_offset_delta: 1,
        record_count: 2,
        codec: Codec::Lz4,
        timestamp_type: TimestampType::CreateTime,
        first_timestamp: 1_700_000_000_000,
        max_timestamp: 1_700_000_000_005,
        block: Bytes::from_static(b"\x04\x22\x4d\x18 block"),
    })
    .unwrap();
    insta::assert_snapshot!(hex(&batch.encode().unwrap()));
}

#[test]
fn snapshot_fixed_block_commit_marker_hex() {
    let marker = BlockBatch::new(BlockParts {
        base_offset: 44,
        leader_epoch: 2,
        producer: ProducerInfo {
            producer_id: 7,
            producer_epoch: 1,
            base_sequence: -1,
        },
        transactional_id: Some("tx".into()),
        control: Some(ControlType::Commit),
        last_offset_delta: 0,
        record_count: 1,
        codec: Codec::None,
        timestamp_type: TimestampType::CreateTime,
        first_timestamp: 1_700_000_000_009,
        max_timestamp: 1_700_000_000_009,
        block: control_record(true),
    })
    .unwrap();
    insta::assert_snapshot!(hex(&marker.encode().unwrap()));
}
