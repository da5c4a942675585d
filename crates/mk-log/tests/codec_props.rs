//! Property tests and the byte-layout snapshot of the MKB1 codec.

mod common;

use bytes::Bytes;
use common::enveloped;
use mk_core::ErrorCode;
use mk_log::codec;
use mk_log::{ControlType, Header, ProducerInfo, Record, RecordBatch};
use proptest::prelude::*;

const MAX: u32 = 16 * 1024 * 1024;

fn opt_bytes() -> impl Strategy<Value = Option<Bytes>> {
    prop::option::of(prop::collection::vec(any::<u8>(), 0..40).prop_map(Bytes::from))
}

fn record() -> impl Strategy<Value = Record> {
    (
        opt_bytes(),
        opt_bytes(),
        any::<i64>(),
        prop::collection::vec(("[a-zé☃]{0,8}", opt_bytes()), 0..3),
    )
        .prop_map(|(key, value, ts, headers)| {
            Record::new(key, value, ts).with_headers(
                headers
                    .into_iter()
                    .map(|(k, v)| Header::new(k, v))
                    .collect(),
            )
        })
}

fn batch() -> impl Strategy<Value = RecordBatch> {
    let data = (
        prop::collection::vec(record(), 1..6),
        0i64..1_000_000,
        0i32..1000,
        prop::option::of("[a-z]{0,6}"),
        (-1i64..5, -1i32..3, -1i32..100),
        prop::collection::vec(0i32..3, 6),
    )
        .prop_map(|(records, base, epoch, txn, (pid, pe, seq), gaps)| {
            // Strictly increasing deltas with random gaps, as left by compaction.
            let mut deltas = Vec::new();
            let mut d = 0;
            for (i, _) in records.iter().enumerate() {
                d += gaps[i];
                deltas.push(d);
                d += 1;
            }
            let last = d - 1 + gaps[5];
            let mut b = RecordBatch::new(records)
                .unwrap()
                .with_offset_deltas(deltas, last)
                .unwrap()
                .with_producer(ProducerInfo {
                    producer_id: pid,
                    producer_epoch: pe,
                    base_sequence: seq,
                });
            if let Some(t) = txn {
                b = b.with_transactional_id(t);
            }
            b.assign(base, epoch).unwrap();
            b
        });
    let control = (any::<bool>(), "[a-z]{0,6}", 0i64..1000, 0i32..10).prop_map(
        |(commit, txn, base, epoch)| {
            let kind = if commit {
                ControlType::Commit
            } else {
                ControlType::Abort
            };
            let mut b = RecordBatch::marker(
                kind,
                txn,
                ProducerInfo {
                    producer_id: 3,
                    producer_epoch: 1,
                    base_sequence: -1,
                },
            );
            b.assign(base, epoch).unwrap();
            b
        },
    );
    prop_oneof![4 => data, 1 => control]
}

proptest! {
    #[test]
    fn any_batch_round_trips_byte_exact(b in batch()) {
        let frame = codec::encode(&b).unwrap();
        prop_assert_eq!(frame.len(), codec::encoded_len(&b));
        let back = codec::decode(&frame, MAX).unwrap();
        prop_assert_eq!(&back, &b);
        prop_assert_eq!(codec::encode(&back).unwrap(), frame);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let frame = Bytes::from(bytes);
        if let Err(e) = codec::decode(&frame, MAX) {
            prop_assert_eq!(e.code(), ErrorCode::CorruptBatch);
        }
    }

    #[test]
    fn valid_envelope_with_random_payload_never_panics(payload in prop::collection::vec(any::<u8>(), 0..300)) {
        // A correct magic, length and CRC around garbage reaches the deep checks.
        if let Err(e) = codec::decode(&enveloped(&payload), MAX) {
            prop_assert_eq!(e.code(), ErrorCode::CorruptBatch);
        }
    }

    #[test]
    fn single_byte_flips_are_detected(b in batch(), pos in any::<prop::sample::Index>(), bit in 0u8..8) {
        let frame = codec::encode(&b).unwrap();
        let mut bad = frame.to_vec();
        let i = pos.index(bad.len());
        bad[i] ^= 1 << bit;
        // Every flip is caught: magic, length, CRC field or payload (via CRC).
        prop_assert_eq!(codec::decode(&Bytes::from(bad), MAX).unwrap_err().code(), ErrorCode::CorruptBatch);
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut lines = Vec::new();
    for chunk in bytes.chunks(16) {
        lines.push(
            chunk
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(" "),
        );
    }
    lines.join("\n")
}

#[test]
fn snapshot_fixed_batch_hex_freezes_the_byte_layout() {
    let records = vec![
        Record::new(
            Some(Bytes::from_static(b"key")),
            Some(Bytes::from_static(b"value")),
            1_700_000_000_000,
        )
        .with_headers(vec![
            Header::new("h1", Some(Bytes::from_static(b"x"))),
            Header::new("h2", None),
        ]),
        Record::new(None, Some(Bytes::new()), 1_700_000_000_005),
    ];
    let mut batch = RecordBatch::new(records)
        .unwrap()
        .with_producer(ProducerInfo {
            producer_id: 7,
            producer_epoch: 1,
            base_sequence: 3,
        })
        .with_transactional_id("tx");
    batch.assign(42, 2).unwrap();
    insta::assert_snapshot!(hex(&codec::encode(&batch).unwrap()));
}

#[test]
fn snapshot_commit_marker_hex() {
    let mut m = RecordBatch::marker(
        ControlType::Commit,
        "tx",
        ProducerInfo {
            producer_id: 7,
            producer_epoch: 1,
            base_sequence: -1,
        },
    );
    m.assign(45, 2).unwrap();
    insta::assert_snapshot!(hex(&codec::encode(&m).unwrap()));
}
