//! Retention and compaction, including a crash injected at every step of
//! the compaction swap.

mod common;

use bytes::Bytes;
use common::*;
use mk_core::ErrorCode;
use mk_log::{
    CleanerConfig, ControlType, LogConfig, PartitionLog, Record, RecordBatch, RetentionPolicy,
};

fn by_time(ms: i64) -> RetentionPolicy {
    RetentionPolicy {
        retention_ms: Some(ms),
        retention_bytes: None,
    }
}

fn by_size(bytes: i64) -> RetentionPolicy {
    RetentionPolicy {
        retention_ms: None,
        retention_bytes: Some(bytes),
    }
}

#[test]
fn retention_by_time_deletes_only_an_expired_prefix() {
    let (_dir, mut log) = temp_log(&small_config());
    // Old, then new, then old again: the old tail segment must survive
    // because deletion stops at the first segment that is not expired.
    for i in 0..90 {
        let ts = if (20..40).contains(&i) { 10_000 } else { 1_000 };
        log.append(keyed(i, 1000, ts)).unwrap();
    }
    let before = log.closed_segments();
    let deleted = log.apply_retention(6_000, by_time(2_000)).unwrap();
    assert!(!deleted.is_empty());
    let expected: Vec<i64> = before
        .iter()
        .take_while(|s| s.max_timestamp_ms < 4_000)
        .map(|s| s.base_offset)
        .collect();
    assert_eq!(deleted, expected);
    let after = log.segments();
    assert_eq!(
        after[0].base_offset,
        before[deleted.len()].base_offset,
        "prefix only"
    );
    assert!(
        after
            .iter()
            .any(|s| !s.active && s.max_timestamp_ms < 4_000),
        "no hole punched later"
    );
    let start = log.log_start_offset();
    assert_eq!(
        log.fetch(start - 1, 1, None).unwrap_err().code(),
        ErrorCode::OffsetOutOfRange
    );
    assert_eq!(log.fetch(start, 1, None).unwrap()[0].offset, start);
}

#[test]
fn retention_by_size_deletes_oldest_until_under_the_limit() {
    let (_dir, mut log) = keyed_log(&small_config(), 80);
    let total = log.size_bytes();
    let limit = (total / 2) as i64;
    let deleted = log.apply_retention(0, by_size(limit)).unwrap();
    assert!(!deleted.is_empty());
    assert!(log.size_bytes() <= limit as u64 || log.closed_segments().is_empty());
    // Deleting one segment fewer would not have been enough.
    let segs = log.segments();
    assert_eq!(segs[0].base_offset, log.log_start_offset());
    for w in segs.windows(2) {
        assert_eq!(w[1].base_offset, w[0].next_offset, "no holes");
    }
    // The active segment is never a candidate.
    let mut tiny = open(tempfile::tempdir().unwrap().path(), &LogConfig::default());
    tiny.append(keyed(0, 1, 1)).unwrap();
    assert!(tiny.apply_retention(0, by_size(1)).unwrap().is_empty());
}

#[test]
fn retention_rejects_invalid_limits() {
    let (_dir, mut log) = temp_log(&small_config());
    assert_eq!(
        log.apply_retention(0, by_time(-1)).unwrap_err().code(),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        log.apply_retention(0, by_size(0)).unwrap_err().code(),
        ErrorCode::InvalidRequest
    );
    assert!(
        log.apply_retention(0, RetentionPolicy::default())
            .unwrap()
            .is_empty()
    );
}

fn rec(key: Option<&str>, value: Option<&str>, ts: i64) -> RecordBatch {
    RecordBatch::new(vec![Record::new(key.map(b), value.map(b), ts)]).unwrap()
}

#[test]
fn compaction_keeps_latest_per_key_null_keys_and_offsets() {
    let cfg = small_config();
    let (dir, mut log) = temp_log(&cfg);
    append_keyed(&mut log, 0..40, 4, 100); // keys k0..k3, many versions
    log.append(rec(None, Some("no-key"), 100)).unwrap(); // offset 40
    append_keyed(&mut log, 41..60, 4, 100);
    log.roll().unwrap();
    let result = log.compact(200, 1_000).unwrap();
    assert!(!result.segments.is_empty());
    assert!(result.records_after < result.records_before);
    let got = dump(&log);
    // Latest of each key: offsets 56..60; plus the null-key record.
    let offsets: Vec<i64> = got.iter().map(|r| r.0).collect();
    assert_eq!(offsets, vec![40, 56, 57, 58, 59]);
    for (o, k, v, _) in &got {
        if *o != 40 {
            assert_eq!(k.as_ref(), Some(&b(&format!("k{}", o % 4))));
            assert_eq!(
                v.as_ref(),
                Some(&b(&format!("v{o}"))),
                "offsets never change"
            );
        }
    }
    // Fetch skips the gaps from any starting offset.
    assert_eq!(log.fetch(1, 1, None).unwrap()[0].offset, 40);
    assert_eq!(
        log.fetch(41, 2, None)
            .unwrap()
            .iter()
            .map(|r| r.offset)
            .collect::<Vec<_>>(),
        vec![56, 57]
    );
    assert_eq!(log.leo(), 60);
    // Survives a crash and a clean reopen.
    log.close().unwrap();
    assert_eq!(reopened(dir.path(), &cfg), got);
}

#[test]
fn compaction_leaves_the_active_segment_alone_but_counts_its_keys() {
    let (dir, mut log) = keyed_log(&small_config(), 30); // unique keys k0..k29
    let active_base = log.active().base_offset;
    // Newer versions of k0 and k1 land in the active segment.
    log.append(rec(Some("k0"), Some("new0"), 1)).unwrap();
    log.append(rec(Some("k1"), Some("new1"), 1)).unwrap();
    let active_bytes = std::fs::read(dir.path().join(format!("{active_base:020}.log"))).unwrap();
    log.compact(1, 1000).unwrap();
    let got = dump(&log);
    assert!(
        !got.iter().any(|r| r.0 == 0 || r.0 == 1),
        "older k0/k1 dropped"
    );
    assert_eq!(got.iter().filter(|r| r.1 == Some(b("k0"))).count(), 1);
    assert_eq!(
        std::fs::read(dir.path().join(format!("{active_base:020}.log"))).unwrap(),
        active_bytes,
        "active segment untouched"
    );
}

#[test]
fn tombstones_are_kept_within_grace_then_dropped() {
    let (_dir, mut log) = temp_log(&small_config());
    log.append(rec(Some("a"), Some("1"), 1_000)).unwrap();
    log.append(rec(Some("a"), None, 1_000)).unwrap(); // tombstone at offset 1
    append_keyed(&mut log, 0..30, 1000, 1_000);
    log.roll().unwrap();
    log.compact(1_500, 1_000).unwrap();
    let got = dump(&log);
    assert!(!got.iter().any(|r| r.0 == 0), "older value dropped");
    assert!(
        got.iter().any(|r| r.0 == 1 && r.2.is_none()),
        "tombstone kept within grace"
    );
    log.compact(2_001, 1_000).unwrap();
    assert!(
        !dump(&log).iter().any(|r| r.0 == 1),
        "tombstone dropped after grace"
    );
}

#[test]
fn compaction_keeps_control_batches_and_drops_aborted_records() {
    let (_dir, mut log) = temp_log(&small_config());
    let p = producer(9);
    log.append(rec(Some("x"), Some("committed"), 1)).unwrap(); // 0
    log.append(
        rec(Some("x"), Some("aborted"), 1)
            .with_producer(p)
            .with_transactional_id("t"),
    )
    .unwrap(); // 1
    log.append(RecordBatch::marker(ControlType::Abort, "t", p))
        .unwrap(); // 2
    append_keyed(&mut log, 0..30, 1000, 1);
    log.roll().unwrap();
    log.compact(1, 1000).unwrap();
    let got = dump(&log);
    // The aborted value neither survives nor shadows the committed one.
    assert!(got.iter().any(|r| r.0 == 0 && r.2 == Some(b("committed"))));
    assert!(!got.iter().any(|r| r.0 == 1));
    let batches = log.read_batches(0, usize::MAX, Some(3)).unwrap();
    assert!(
        batches
            .iter()
            .any(|b| b.header.control == Some(ControlType::Abort) && b.base_offset() == 2)
    );
}

/// The offsets and kinds of the log's control batches.
fn markers(log: &PartitionLog) -> Vec<(i64, ControlType)> {
    log.read_batches(0, usize::MAX, None)
        .unwrap()
        .iter()
        .filter_map(|b| b.header.control.map(|c| (b.base_offset(), c)))
        .collect()
}

fn in_txn(batch: RecordBatch, p: mk_log::ProducerInfo) -> RecordBatch {
    batch.with_producer(p).with_transactional_id("t")
}

#[test]
fn a_transaction_marker_goes_once_its_records_are_gone_and_its_segment_is_past_the_grace() {
    let cfg = small_config();
    let (dir, mut log) = temp_log(&cfg);
    let p = producer(9);
    let mut txn = |key: &str, end: ControlType| {
        log.append(in_txn(rec(Some(key), Some("in-txn"), 1), p))
            .unwrap();
        log.append(RecordBatch::marker(end, "t", p)).unwrap();
    };
    txn("x", ControlType::Commit); // 0, 1: x@0 is overwritten at 8
    txn("y", ControlType::Commit); // 2, 3: y@2 stays
    txn("z", ControlType::Abort); // 4, 5: z@4 goes as aborted
    txn("w", ControlType::Commit); // 6, 7: the producer's last batch
    log.append(rec(Some("x"), Some("newer"), 1)).unwrap(); // 8
    append_keyed(&mut log, 0..30, 1000, 1);
    log.roll().unwrap();
    let all = vec![
        (1, ControlType::Commit),
        (3, ControlType::Commit),
        (5, ControlType::Abort),
        (7, ControlType::Commit),
    ];
    // Within the grace (the segment's newest record is at 1 ms) the
    // markers stay although x@0 and z@4 are gone.
    let first = log.compact(500, 1_000).unwrap();
    assert_eq!(first.markers_removed, 0);
    assert!(!dump(&log).iter().any(|r| r.0 == 0 || r.0 == 4));
    assert_eq!(markers(&log), all);
    assert_eq!(log.aborted_transactions(0, 20).len(), 1);
    // Past it, the markers of the transactions with no record left go
    // (the commit at 1, the abort at 5, and the abort with them from the
    // index); the commit of y@2 and the producer's last batch stay.
    let second = log.compact(2_000, 1_000).unwrap();
    assert_eq!(second.markers_removed, 2, "{second:?}");
    let left = vec![(3, ControlType::Commit), (7, ControlType::Commit)];
    assert_eq!(markers(&log), left);
    assert_eq!(log.first_unstable_offset(), None);
    assert!(log.aborted_transactions(0, 20).is_empty());
    let got = dump(&log);
    assert!(got.iter().any(|r| r.0 == 2));
    // Reopened, the log rebuilds the same transactions from what is left.
    log.close().unwrap();
    let log = open(dir.path(), &cfg);
    assert_eq!(markers(&log), left);
    assert_eq!(log.first_unstable_offset(), None);
    assert!(log.aborted_transactions(0, 20).is_empty());
    assert_eq!(dump(&log), got);
}

#[test]
fn a_producers_last_batch_stays_even_when_it_is_an_empty_transactions_commit_marker() {
    // As Kafka's cleaner keeps each producer's last batch: its state (epoch,
    // sequence) must survive a restart.
    let (_dir, mut log) = temp_log(&small_config());
    let p = producer(9);
    log.append(in_txn(rec(Some("x"), Some("in-txn"), 1), p))
        .unwrap(); // 0
    log.append(RecordBatch::marker(ControlType::Commit, "t", p))
        .unwrap(); // 1
    log.append(rec(Some("x"), Some("newer"), 1)).unwrap(); // 2
    append_keyed(&mut log, 0..30, 1000, 1);
    log.roll().unwrap();
    let result = log.compact(5_000, 1_000).unwrap();
    assert!(!dump(&log).iter().any(|r| r.0 == 0));
    assert_eq!(result.markers_removed, 0);
    assert_eq!(markers(&log), vec![(1, ControlType::Commit)]);
}

#[test]
fn compaction_does_not_touch_segments_at_or_above_an_open_transaction() {
    let (_dir, mut log) = temp_log(&small_config());
    let p = producer(9);
    log.append(rec(Some("x"), Some("old"), 1)).unwrap();
    log.append(
        rec(Some("x"), Some("pending"), 1)
            .with_producer(p)
            .with_transactional_id("t"),
    )
    .unwrap();
    append_keyed(&mut log, 0..30, 1000, 1);
    log.roll().unwrap();
    let before = dump(&log);
    let result = log.compact(1, 1000).unwrap();
    assert!(result.segments.is_empty());
    assert_eq!(
        dump(&log),
        before,
        "nothing past the first unstable offset is cleaned"
    );
}

#[test]
fn compaction_rejects_negative_grace() {
    let (_dir, mut log) = temp_log(&small_config());
    assert_eq!(
        log.compact(0, -1).unwrap_err().code(),
        ErrorCode::InvalidRequest
    );
}

/// Builds a log with several closed segments worth compacting.
fn compactable(dir: &std::path::Path, cfg: &LogConfig) -> PartitionLog {
    let mut log = open(dir, cfg);
    for i in 0..90 {
        let value = if i % 17 == 0 {
            None
        } else {
            Some(Bytes::from(format!("v{i}")))
        };
        let key = if i % 11 == 0 {
            None
        } else {
            Some(Bytes::from(format!("k{}", i % 5)))
        };
        log.append(RecordBatch::new(vec![Record::new(key, value, 1_000)]).unwrap())
            .unwrap();
    }
    log.roll().unwrap();
    log
}

#[test]
fn crash_at_every_step_of_the_compaction_swap_reopens_to_old_or_new() {
    let cfg = small_config();
    let (_dir, _reference, old, new) = reference_compaction(&cfg, compactable);
    assert_ne!(old, new);

    compact_crashing_at_every_step(&cfg, compactable, &old, &new);
}

/// A log of several segments where transactions of two producers commit
/// among keyed records; every transaction's records are overwritten later
/// except the last one's of each producer.
fn with_commits(dir: &std::path::Path, cfg: &LogConfig) -> PartitionLog {
    let mut log = open(dir, cfg);
    for round in 0..6 {
        for pid in [7, 8] {
            let key = format!("t{pid}");
            log.append(in_txn(rec(Some(&key), Some("v"), 1_000), producer(pid)))
                .unwrap();
            log.append(RecordBatch::marker(ControlType::Commit, "t", producer(pid)))
                .unwrap();
        }
        append_keyed(&mut log, round * 10..round * 10 + 10, 5, 1_000);
    }
    log.roll().unwrap();
    log
}

/// A log from `build` compacted once at 20 s with 10 s of grace: its
/// content by `snapshot` before, the compaction's result, and after.
fn compacted_once<T>(
    cfg: &LogConfig,
    build: impl Fn(&std::path::Path, &LogConfig) -> PartitionLog,
    snapshot: impl Fn(&PartitionLog) -> T,
) -> (T, mk_log::CompactionResult, T) {
    let dir = tempfile::tempdir().unwrap();
    let mut log = build(dir.path(), cfg);
    let old = snapshot(&log);
    let result = log.compact(20_000, 10_000).unwrap();
    (old, result, snapshot(&log))
}

#[test]
fn crash_at_every_step_of_a_compaction_that_removes_commit_markers_reopens_to_old_or_new() {
    let cfg = small_config();
    let snapshot = |log: &PartitionLog| (dump(log), markers(log));
    let (old, result, new) = compacted_once(&cfg, with_commits, snapshot);
    // Each producer's last transaction keeps its record and marker; the
    // five before it lose both.
    assert_eq!(result.markers_removed, 10, "{result:?}");
    assert_eq!(new.1.len(), 2);
    assert!(
        result.segments.len() >= 2,
        "the swap spans several segments"
    );
    compact_crashing_at_every_step_with(&cfg, with_commits, 20_000, snapshot, &old, &new);
}

/// DeleteRecords' part in the log: the start moves inside a segment, the
/// segments wholly below it go, and the start survives a clean close and a
/// crash (drop without close).
#[test]
fn the_log_start_moves_inside_a_segment_and_survives_reopening() {
    let config = small_config();
    let (dir, mut log) = keyed_log(&config, 60);
    let closed = log.closed_segments();
    assert!(closed.len() >= 3, "{closed:?}");
    // One past the second segment's base: inside it, not at a boundary.
    let target = closed[1].base_offset + 1;
    assert!(target < closed[1].next_offset);
    assert!(log.advance_log_start(target).unwrap());
    assert_eq!(log.log_start_offset(), target);
    assert_eq!(log.segments()[0].base_offset, closed[1].base_offset);
    assert_eq!(
        log.fetch(target - 1, 1, None).unwrap_err().code(),
        ErrorCode::OffsetOutOfRange
    );
    assert_eq!(log.fetch(target, 1, None).unwrap()[0].offset, target);
    // Backwards or in place changes nothing; past the LEO is out of range.
    assert!(!log.advance_log_start(target).unwrap());
    assert!(!log.advance_log_start(3).unwrap());
    let leo = log.leo();
    let e = log.advance_log_start(leo + 1).unwrap_err();
    assert_eq!(e.code(), ErrorCode::OffsetOutOfRange);
    assert_eq!(log.log_start_offset(), target);
    log.close().unwrap();
    let mut log = open(dir.path(), &config);
    assert_eq!(log.log_start_offset(), target);
    assert!(log.advance_log_start(target + 2).unwrap());
    drop(log); // a crash: no clean-shutdown checkpoint
    let log = open(dir.path(), &config);
    assert_eq!(log.log_start_offset(), target + 2);
    assert_eq!(log.leo(), leo);
}

#[test]
fn a_damaged_log_start_file_is_a_storage_error() {
    let config = small_config();
    let (dir, mut log) = keyed_log(&config, 5);
    log.advance_log_start(2).unwrap();
    log.close().unwrap();
    let path = dir.path().join(mk_log::LOG_START_FILE);
    flip_byte(&path, 7, 1);
    assert_open_refused(dir.path(), &config, "log start file is damaged");
}

#[test]
fn min_compaction_lag_keeps_newer_records_and_their_older_keys() {
    let lagged = CleanerConfig {
        min_lag_ms: 5_000,
        ..CleanerConfig::default()
    };
    let cfg = LogConfig {
        cleaner: lagged,
        ..small_config()
    };
    let (_dir, mut log) = temp_log(&cfg);
    append_keyed(&mut log, 0..40, 4, 100);
    append_keyed(&mut log, 40..60, 4, 10_000);
    log.roll().unwrap();
    // now - lag = 7_000: only segments of records at 100 are cleanable.
    let result = log.compact(12_000, 1_000).unwrap();
    assert!(result.records_after < result.records_before);
    let offsets: Vec<i64> = dump(&log).iter().map(|r| r.0).collect();
    for o in 36..60 {
        assert!(
            offsets.contains(&o),
            "offset {o} is within the lag or latest before it"
        );
    }
    assert!(offsets.len() < 60);
    // Without the lag the newer versions clean the older ones.
    let no_lag = CleanerConfig {
        min_lag_ms: 0,
        ..lagged
    };
    log.set_cleaner(no_lag).unwrap();
    let negative = CleanerConfig {
        min_lag_ms: -1,
        ..lagged
    };
    assert!(log.set_cleaner(negative).is_err());
    log.compact(12_000, 1_000).unwrap();
    let offsets: Vec<i64> = dump(&log).iter().map(|r| r.0).collect();
    assert_eq!(offsets, vec![56, 57, 58, 59]);
}

/// The producer-owned batches of the log: (base offset, producer id,
/// record count, base sequence, last offset delta, frame version).
fn producer_batches(log: &PartitionLog) -> Vec<(i64, i64, u32, i32, i32, Option<u8>)> {
    log.read_batches(0, usize::MAX, None)
        .unwrap()
        .iter()
        .filter(|b| b.header.producer.producer_id >= 0 && b.header.control.is_none())
        .map(|b| {
            let h = b.header;
            (
                b.base_offset(),
                h.producer.producer_id,
                h.record_count,
                h.producer.base_sequence,
                h.last_offset_delta,
                mk_log::block::frame_version(&b.frame),
            )
        })
        .collect()
}

/// Producer 9's batches: two records at 0-1 (sequence 0), then, as its
/// block kept as produced (lz4), two records at 2-3 (sequence 2), all
/// overwritten by a producer without an id at 4-7, then keys to fill
/// segments.
fn superseded_producer(dir: &std::path::Path, cfg: &LogConfig) -> PartitionLog {
    use mk_log::block::{Codec, Compression};
    let mut log = open(dir, cfg);
    let p = producer(9);
    let two = |a: &str, b_: &str| {
        RecordBatch::new(vec![
            Record::new(Some(b(a)), Some(b("old")), 1),
            Record::new(Some(b(b_)), Some(b("old")), 1),
        ])
        .unwrap()
    };
    log.append(two("a", "b").with_producer(p)).unwrap();
    let mut last = two("c", "d").with_producer(mk_log::ProducerInfo {
        base_sequence: 2,
        ..p
    });
    assert!(
        last.recompress(Compression::of(Codec::Lz4), 1 << 20)
            .unwrap()
    );
    log.append(last).unwrap();
    for k in ["a", "b", "c", "d"] {
        log.append(rec(Some(k), Some("new"), 1)).unwrap();
    }
    append_keyed(&mut log, 0..30, 1000, 1);
    log.roll().unwrap();
    log
}

#[test]
fn a_producers_last_data_batch_stays_empty_when_compaction_takes_all_its_records() {
    // Kafka's cleaner keeps the batch that holds a producer's last sequence
    // even when none of its records is left, so that a replica replaying
    // the log (a restart without a snapshot, a new follower) still knows
    // the producer; its earlier batches go.
    let cfg = small_config();
    let (dir, mut log) = temp_log(&cfg);
    drop(log);
    log = superseded_producer(dir.path(), &cfg);
    assert_eq!(
        producer_batches(&log),
        vec![(0, 9, 2, 0, 1, Some(1)), (2, 9, 2, 2, 1, Some(2))]
    );
    let result = log.compact(5_000, 1_000).unwrap();
    assert_eq!(result.batches_emptied, 1, "{result:?}");
    let emptied = vec![(2, 9, 0, 2, 1, Some(2))];
    assert_eq!(producer_batches(&log), emptied);
    let got = dump(&log);
    assert!(!got.iter().any(|r| r.0 < 4), "{got:?}");
    // The emptied batch reads as a Kafka batch without records, offsets
    // 2-3 and the producer's sequence kept, no timestamp.
    let stored = log.read_batches(2, usize::MAX, Some(4)).unwrap();
    let block = stored[0].block().unwrap().expect("a version 2 frame");
    assert!(block.is_emptied());
    assert_eq!((block.first_timestamp(), block.max_timestamp()), (-1, -1));
    assert_eq!(block.block().len(), 0);
    assert_eq!(stored[0].decode().unwrap().records().len(), 0);
    let header = block.kafka_batch_header().unwrap();
    assert_eq!(i32::from_be_bytes(header[8..12].try_into().unwrap()), 49);
    assert_eq!(i32::from_be_bytes(header[57..61].try_into().unwrap()), 0);
    assert_eq!(
        u32::from_be_bytes(header[17..21].try_into().unwrap()),
        crc32c::crc32c(&header[21..]),
        "Kafka's CRC over the header fields of a batch without records"
    );
    // Compacted again, the emptied batch is copied as it is.
    let again = log.compact(5_000, 1_000).unwrap();
    assert_eq!((again.batches_emptied, again.segments.len()), (0, 0));
    // Reopened after a crash (recovery reads every frame), it is there.
    drop(log);
    let mut log = open(dir.path(), &cfg);
    assert_eq!(producer_batches(&log), emptied);
    assert_eq!(dump(&log), got);
    // Once the producer writes again, its emptied batch is no longer its
    // last and goes at the next compaction.
    log.append(
        rec(Some("e"), Some("later"), 1).with_producer(mk_log::ProducerInfo {
            base_sequence: 4,
            ..producer(9)
        }),
    )
    .unwrap();
    let later = log.leo() - 1;
    append_keyed(&mut log, 0..30, 1000, 1);
    log.roll().unwrap();
    let result = log.compact(5_000, 1_000).unwrap();
    assert!(!result.segments.is_empty());
    assert_eq!(producer_batches(&log), vec![(later, 9, 1, 4, 0, Some(1))]);
}

#[test]
fn crash_at_every_step_of_a_compaction_that_empties_a_producers_last_batch_reopens_to_old_or_new() {
    let cfg = small_config();
    let snapshot = |log: &PartitionLog| (dump(log), producer_batches(log));
    let (old, result, new) = compacted_once(&cfg, superseded_producer, snapshot);
    assert_eq!(result.batches_emptied, 1);
    compact_crashing_at_every_step_with(&cfg, superseded_producer, 20_000, snapshot, &old, &new);
}
