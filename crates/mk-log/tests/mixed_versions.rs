//! A log holding MKB1 version 1 and version 2 frames side by side: every
//! read path (fetch, time lookups, the transaction index, recovery scans,
//! follower copies, compaction) serves both, whatever the block's codec.

mod common;

use bytes::Bytes;
use common::blocks::*;
use common::*;
use mk_log::block::Codec;
use mk_log::{ControlType, LogConfig, PartitionLog, ProducerInfo, RecordBatch};
use std::path::Path;

type Expected = Vec<(i64, Option<Bytes>, Option<Bytes>, i64)>;

/// Appends, alternately, version 1 batches and version 2 blocks of every
/// codec; returns what a reader must see.
fn fill(log: &mut PartitionLog) -> Expected {
    let mut want = Vec::new();
    let mut i = 0;
    for round in 0..4 {
        for codec in CODECS {
            let n = 1 + (round + i) % 3;
            let rs = records(i, n);
            let base = if i % 2 == 0 {
                log.append_block(block_batch(&rs, codec, None)).unwrap()
            } else {
                log.append(mk_log::RecordBatch::new(rs.clone()).unwrap())
                    .unwrap()
            }
            .base_offset;
            for (k, r) in rs.into_iter().enumerate() {
                want.push((base + k as i64, r.key, r.value, r.timestamp_ms));
            }
            i += n;
        }
    }
    want
}

fn config() -> LogConfig {
    small_config()
}

fn remove_checkpoints_and_indexes(dir: &Path) {
    for name in files(dir) {
        if name == "clean-shutdown"
            || name == "recovery-checkpoint"
            || name.ends_with(".index")
            || name.ends_with(".timeindex")
        {
            std::fs::remove_file(dir.join(name)).unwrap();
        }
    }
}

#[test]
fn a_log_of_both_versions_serves_every_record_across_reopen_and_a_full_scan() {
    let (dir, mut log) = temp_log(&config());
    let want = fill(&mut log);
    assert!(log.segments().len() > 2, "several segments");
    assert_eq!(dump(&log), want);
    log.close().unwrap();
    let log = open(dir.path(), &config());
    assert_eq!(dump(&log), want, "after a clean reopen");
    drop(log); // A crash: nothing trusted, every frame scanned.
    remove_checkpoints_and_indexes(dir.path());
    let mut log = open(dir.path(), &config());
    assert!(log.opened_after_crash());
    assert_eq!(dump(&log), want, "after a full recovery scan");
    let next = log
        .append_block(block_batch(&records(999, 2), Codec::Zstd, None))
        .unwrap();
    assert_eq!(next.base_offset, want.last().unwrap().0 + 1);
}

#[test]
fn a_follower_copies_version_2_frames_byte_for_byte() {
    let leader_dir = tempfile::tempdir().unwrap();
    let follower_dir = tempfile::tempdir().unwrap();
    let mut leader = open(leader_dir.path(), &config());
    let want = fill(&mut leader);
    let mut follower = open(follower_dir.path(), &config());
    let batches = leader.read_batches(0, usize::MAX, None).unwrap();
    for batch in &batches {
        follower.append_replica_frame(batch).unwrap();
    }
    let copied = follower.read_batches(0, usize::MAX, None).unwrap();
    assert_eq!(copied, batches);
    assert_eq!(dump(&follower), want);
    // A damaged block is refused by Kafka's CRC even when the frame CRC
    // was recomputed around it.
    let mut bad = batches[0].frame.to_vec();
    let last = bad.len() - 1;
    bad[last] ^= 0x40;
    let crc = crc32c::crc32c(&bad[12..]);
    bad[8..12].copy_from_slice(&crc.to_be_bytes());
    let other_dir = tempfile::tempdir().unwrap();
    let mut other = open(other_dir.path(), &config());
    let err = other
        .append_replica_frame(&mk_log::StoredBatch {
            header: batches[0].header,
            frame: Bytes::from(bad),
            unchecked: None,
        })
        .unwrap_err();
    assert_eq!(err.code(), mk_core::ErrorCode::CorruptBatch);
}

#[test]
fn time_lookups_read_version_2_timestamps() {
    let (_dir, mut log) = temp_log(&config());
    let want = fill(&mut log);
    for (offset, _, _, ts) in want.iter().step_by(3) {
        assert_eq!(log.offset_for_timestamp(*ts).unwrap(), Some(*offset));
    }
    let (_, _, _, last_ts) = want.last().unwrap();
    assert_eq!(log.offset_for_timestamp(last_ts + 1).unwrap(), None);
}

#[test]
fn transactions_in_version_2_frames_are_indexed_and_survive_a_crash() {
    let (dir, mut log) = temp_log(&config());
    let first = log
        .append_block(block_batch(&records(0, 2), Codec::Lz4, Some(("tx", 7))))
        .unwrap()
        .base_offset;
    log.append_block(block_batch(&records(2, 1), Codec::None, None))
        .unwrap();
    assert_eq!(log.first_unstable_offset(), Some(first));
    let marker = log
        .append_block(block_marker(ControlType::Abort, "tx", 7, 2_000))
        .unwrap()
        .base_offset;
    assert_eq!(log.first_unstable_offset(), None);
    let aborted = log.aborted_transactions(0, marker + 1);
    assert_eq!(aborted.len(), 1, "{aborted:?}");
    assert_eq!(aborted[0].producer_id, 7);
    assert_eq!(aborted[0].first_offset, first);
    drop(log);
    remove_checkpoints_and_indexes(dir.path());
    let log = open(dir.path(), &config());
    assert_eq!(log.aborted_transactions(0, marker + 1), aborted);
    let batches = log.read_batches(0, usize::MAX, None).unwrap();
    let last = batches.last().unwrap();
    assert_eq!(last.header.control, Some(ControlType::Abort));
    assert_eq!(last.decode().unwrap().records().len(), 0);
}

#[test]
fn a_torn_version_2_tail_is_cut_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), &LogConfig::default());
    let want = fill(&mut log);
    drop(log);
    let path = dir.path().join("00000000000000000000.log");
    let good_len = std::fs::metadata(&path).unwrap().len();
    let mut torn = block_batch(&records(500, 3), Codec::Gzip, None);
    torn.assign(want.last().unwrap().0 + 1, 0).unwrap();
    let frame = torn.encode().unwrap();
    append_bytes(&path, &frame[..frame.len() - 5]);
    let log = open(dir.path(), &LogConfig::default());
    assert_eq!(dump(&log), want);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), good_len);
}

#[test]
fn compaction_over_both_versions_keeps_the_latest_value_per_key() {
    let (_dir, mut log) = temp_log(&config());
    let want = fill(&mut log);
    log.roll().unwrap();
    log.compact(1_000_000, 0).unwrap();
    let mut latest = std::collections::BTreeMap::new();
    for (offset, key, value, ts) in &want {
        if let Some(k) = key {
            latest.insert(k.clone(), (*offset, value.clone(), *ts));
        }
    }
    let got: Vec<_> = dump(&log)
        .into_iter()
        .filter(|(_, k, _, _)| k.is_some())
        .collect();
    let expected: Vec<_> = latest
        .into_iter()
        .filter(|(_, (_, v, _))| v.is_some())
        .map(|(k, (o, v, ts))| (o, Some(k), v, ts))
        .collect();
    let mut expected = expected;
    expected.sort();
    assert_eq!(got, expected);
}

#[test]
fn a_batch_that_kept_its_block_is_stored_as_that_block() {
    let (_dir, mut log) = temp_log(&config());
    let rs = records(0, 3);
    let block = block_batch(&rs, Codec::Zstd, None);
    let batch = mk_log::RecordBatch::new(rs.clone())
        .unwrap()
        .with_block(block.clone())
        .unwrap();
    log.append(batch).unwrap();
    let stored = log.read_batches(0, usize::MAX, None).unwrap();
    assert_eq!(mk_log::block::frame_version(&stored[0].frame), Some(2));
    let back = mk_log::block::decode(&stored[0].frame, u32::MAX).unwrap();
    assert_eq!(back.block(), block.block(), "the zstd block as produced");
    assert_eq!(back.kafka_crc(), block.kafka_crc());
    // Read back, the batch still carries its block, so copying it writes
    // the same frame.
    let decoded = stored[0].decode().unwrap();
    assert_eq!(decoded.block().map(|b| b.block()), Some(block.block()));
    assert_eq!(mk_log::codec::encode(&decoded).unwrap(), stored[0].frame);
    // A block that is not the batch's records is refused.
    let err = mk_log::RecordBatch::new(rs[..2].to_vec())
        .unwrap()
        .with_block(block)
        .unwrap_err();
    assert_eq!(err.code(), mk_core::ErrorCode::InvalidRecord);
}

#[test]
fn a_batch_of_only_its_block_is_stored_as_produced_and_keeps_its_identity() {
    let (_dir, mut log) = temp_log(&config());
    let rs = records(0, 4);
    let block = block_batch(&rs, Codec::Lz4, None);
    let batch = mk_log::RecordBatch::from_block(block.clone()).unwrap();
    // Nothing was decoded: the batch counts the block's records.
    assert!(batch.is_block_only());
    assert!(batch.records().is_empty());
    assert_eq!(batch.record_count(), 4);
    assert_eq!(batch.max_timestamp_ms(), block.max_timestamp());
    let info = log.append(batch.clone()).unwrap();
    assert_eq!(info.header.record_count, 4);
    assert_eq!((info.base_offset, info.next_offset), (0, 4));
    assert_eq!(info.max_timestamp_ms, block.max_timestamp());
    // Stored as the block, read back with every record.
    let stored = log.read_batches(0, usize::MAX, None).unwrap();
    let back = mk_log::block::decode(&stored[0].frame, u32::MAX).unwrap();
    assert_eq!(back.block(), block.block(), "the lz4 block as produced");
    let fetched = log.fetch(0, 100, None).unwrap();
    let values: Vec<_> = fetched.iter().map(|r| r.record.value.clone()).collect();
    let expected: Vec<_> = rs.iter().map(|r| r.value.clone()).collect();
    assert_eq!(values, expected);
    // The records a check needs are decoded from the block on demand.
    assert_eq!(batch.decoded(1 << 20).unwrap().records(), &rs[..]);
    // Its producer lives in the block: changing it without the block is
    // refused, not written.
    let changed = batch.with_producer(ProducerInfo {
        producer_id: 9,
        producer_epoch: 0,
        base_sequence: 0,
    });
    let err = log.append(changed).unwrap_err();
    assert_eq!(err.code(), mk_core::ErrorCode::InvalidRecord);
    assert_eq!(log.leo(), 4, "nothing written");
    // A marker is never a producer's block.
    let marker = block_marker(ControlType::Commit, "t", 1, 5);
    assert!(mk_log::RecordBatch::from_block(marker).is_err());
}

#[test]
fn located_batches_leave_the_frame_crc_to_a_check_that_names_the_damage() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = LogConfig::default();
    let mut log = PartitionLog::open(dir.path(), cfg.clone(), 0).unwrap();
    for i in 0..3 {
        log.append(
            RecordBatch::from_block(block_batch(&records(i * 5, 5), Codec::Zstd, None)).unwrap(),
        )
        .unwrap();
    }
    let checked = log.read_batches(0, usize::MAX, None).unwrap();
    let located = log.locate_batches(0, usize::MAX, None).unwrap();
    assert_eq!(located.len(), checked.len());
    for (l, c) in located.iter().zip(&checked) {
        assert_eq!((l.header, &l.frame), (c.header, &c.frame));
        assert!(c.unchecked.is_none());
        assert_eq!(
            l.unchecked.as_ref().unwrap().position,
            located_position(&located, l)
        );
        l.check().unwrap();
    }
    // A damaged block byte behind a sound header: located, then refused
    // by the check, naming the segment and position.
    let mut bad = located[1].clone();
    let mut bytes = bad.frame.to_vec();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    bad.frame = Bytes::from(bytes);
    let err = bad.check().unwrap_err();
    let origin = bad.unchecked.as_ref().unwrap();
    assert!(
        err.to_string()
            .contains(&format!("position {}", origin.position)),
        "{err}"
    );
    assert!(err.to_string().contains("CRC mismatch"), "{err}");
    assert!(matches!(err, mk_log::LogError::Storage(_)), "{err:?}");
}

fn located_position(all: &[mk_log::StoredBatch], b: &mk_log::StoredBatch) -> u64 {
    all.iter()
        .take_while(|x| x.header.base_offset < b.header.base_offset)
        .map(|x| x.frame.len() as u64)
        .sum()
}
