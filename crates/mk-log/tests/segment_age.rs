//! `segment.ms`, counted as Kafka counts it: an append rolls the active
//! segment first when the new batch's max timestamp is more than the limit
//! past the max timestamp of the segment's first batch; when that batch has
//! no timestamp, the broker clock's time since the segment was started
//! counts instead.

mod common;

use common::{keyed, open, small_config, temp_log};
use mk_core::{ManualClock, SharedClock};
use mk_log::{LogConfig, PartitionLog};
use std::sync::Arc;

fn aged_config(clock: &Arc<ManualClock>, segment_ms: i64) -> LogConfig {
    let shared: SharedClock = clock.clone();
    LogConfig {
        segment_max_bytes: 1_048_576,
        segment_ms: Some(segment_ms),
        clock: Some(shared),
        ..small_config()
    }
}

/// A log rolling by `segment_ms` on a manual clock started at `now_ms`.
fn aged_log(now_ms: i64, segment_ms: i64) -> (tempfile::TempDir, Arc<ManualClock>, PartitionLog) {
    let clock = Arc::new(ManualClock::new(now_ms));
    let (dir, log) = temp_log(&aged_config(&clock, segment_ms));
    (dir, clock, log)
}

/// Appends keyed record `i` stamped `ts_ms`; how many segments the log
/// has then.
fn segments_after(log: &mut PartitionLog, i: usize, ts_ms: i64) -> usize {
    log.append(keyed(i, 4, ts_ms)).unwrap();
    log.segments().len()
}

/// Appends `batches` as one group; the segment each batch went to.
fn group_bases(log: &mut PartitionLog, batches: Vec<mk_log::RecordBatch>) -> Vec<i64> {
    log.append_group(batches)
        .into_iter()
        .map(|a| a.unwrap().segment_base_offset)
        .collect()
}

#[test]
fn a_batch_more_than_segment_ms_past_the_first_batch_rolls() {
    // The clock stands still: only the batches' timestamps count.
    let (_dir, _clock, mut log) = aged_log(1_000, 100);
    log.append(keyed(0, 4, 5_000)).unwrap();
    // Exactly the limit past the first batch is not beyond it.
    assert_eq!(segments_after(&mut log, 1, 5_100), 1);
    let info = log.append(keyed(2, 4, 5_101)).unwrap();
    assert_eq!(info.segment_base_offset, 2);
    assert_eq!(log.segments().len(), 2);
    // The new segment ages from its own first batch (5_101).
    assert_eq!(segments_after(&mut log, 3, 5_201), 2);
    assert_eq!(segments_after(&mut log, 4, 5_202), 3);
}

#[test]
fn the_broker_clock_does_not_age_a_segment_whose_first_batch_has_a_timestamp() {
    let (_dir, clock, mut log) = aged_log(0, 100);
    log.append(keyed(0, 4, 50)).unwrap();
    clock.advance(1_000_000);
    // An old-looking batch (or one from a producer whose clock is behind)
    // is measured against the first batch, not against the broker's time.
    assert_eq!(segments_after(&mut log, 1, 60), 1);
    // A batch older than the first one does not roll either.
    assert_eq!(segments_after(&mut log, 2, 0), 1);
}

#[test]
fn without_a_first_timestamp_the_segment_ages_by_the_clock_from_its_start() {
    let (_dir, clock, mut log) = aged_log(10_000, 100);
    // Kafka's NO_TIMESTAMP (-1): the segment's start time by the clock counts.
    log.append(keyed(0, 4, -1)).unwrap();
    clock.advance(100);
    assert_eq!(
        segments_after(&mut log, 1, 99_999),
        1,
        "100 ms since the start"
    );
    clock.advance(1);
    let info = log.append(keyed(2, 4, 99_999)).unwrap();
    assert_eq!(info.segment_base_offset, 2);
    // The new segment's first batch has a timestamp again.
    clock.advance(1_000_000);
    assert_eq!(segments_after(&mut log, 3, 100_099), 2);
}

#[test]
fn the_first_batch_timestamp_is_read_back_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(0));
    let config = aged_config(&clock, 100);
    let mut log = open(dir.path(), &config);
    log.append(keyed(0, 4, 1_000)).unwrap();
    log.close().unwrap();
    let mut log = open(dir.path(), &config);
    assert_eq!(segments_after(&mut log, 1, 1_100), 1);
    assert_eq!(segments_after(&mut log, 2, 1_101), 2);
}

#[test]
fn an_idle_log_does_not_roll_an_empty_segment() {
    let (_dir, clock, mut log) = aged_log(0, 10);
    clock.advance(1_000);
    let info = log.append(keyed(0, 4, 5_000)).unwrap();
    assert_eq!(info.segment_base_offset, 0);
    assert_eq!(log.segments().len(), 1);
}

#[test]
fn a_group_append_rolls_where_lone_appends_would() {
    let (_dir, _clock, mut log) = aged_log(0, 50);
    log.append(keyed(0, 4, 0)).unwrap();
    let bases = group_bases(
        &mut log,
        vec![keyed(1, 4, 40), keyed(2, 4, 51), keyed(3, 4, 60)],
    );
    assert_eq!(bases, vec![0, 2, 2]);
    assert_eq!(log.segments().len(), 2);
    // Into an empty segment, the group's first batch starts the age.
    log.roll().unwrap();
    let bases = group_bases(&mut log, vec![keyed(4, 4, 100), keyed(5, 4, 151)]);
    assert_eq!(bases, vec![4, 5]);
}

#[test]
fn segment_ms_altered_at_runtime_applies_to_the_next_append() {
    let (_dir, clock, mut log) = aged_log(0, 1_000);
    log.append(keyed(0, 4, 0)).unwrap();
    assert_eq!(segments_after(&mut log, 1, 500), 1);
    log.set_segment_ms(Some(100)).unwrap();
    assert_eq!(segments_after(&mut log, 2, 500), 2);
    assert!(log.set_segment_ms(Some(0)).is_err());
    log.set_segment_ms(None).unwrap();
    clock.advance(10_000);
    assert_eq!(segments_after(&mut log, 3, 10_500), 2);
}

#[test]
fn truncating_the_active_segment_to_empty_restarts_its_age() {
    let (_dir, _clock, mut log) = aged_log(0, 100);
    log.append(keyed(0, 4, 1_000)).unwrap();
    log.truncate_to(0).unwrap();
    // The cut batch no longer starts the age: this one does.
    log.append(keyed(1, 4, 5_000)).unwrap();
    assert_eq!(segments_after(&mut log, 2, 5_100), 1);
}

/// How far past its first batch a batch must be to roll the first segment
/// of a log in directory `name`, rolling by `segment_ms` with
/// `segment_jitter_ms`.
fn roll_age(name: &str, segment_ms: i64, jitter_ms: i64) -> i64 {
    let root = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(0));
    let cfg = LogConfig {
        segment_jitter_ms: jitter_ms,
        ..aged_config(&clock, segment_ms)
    };
    let mut log = open(&root.path().join(name), &cfg);
    log.append(keyed(0, 4, 10_000)).unwrap();
    for (i, ts) in (10_001..=10_000 + segment_ms + 1).enumerate() {
        if segments_after(&mut log, i + 1, ts) == 2 {
            return ts - 10_000 - 1;
        }
    }
    panic!("{name}: no roll within segment_ms");
}

#[test]
fn segment_jitter_rolls_each_segment_a_little_early_and_the_same_way_every_time() {
    // segment.ms 1000, jitter 600: a segment rolls once a batch is more than
    // 1000 - j past its first, j below 600, decided by the partition's
    // directory and the segment's base offset.
    let ages: Vec<i64> = (0..12)
        .map(|p| roll_age(&format!("t-{p}"), 1_000, 600))
        .collect();
    assert!(ages.iter().all(|&a| a > 400 && a <= 1_000), "{ages:?}");
    let mut distinct = ages.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(distinct.len() >= 6, "partitions roll apart: {ages:?}");
    // The same partition rolls the same way on every run (and replica).
    assert_eq!(roll_age("t-3", 1_000, 600), ages[3]);
    // Without jitter a segment rolls at segment.ms exactly; a jitter above
    // segment.ms is bounded by it, so a segment never rolls at once.
    assert_eq!(roll_age("t-3", 1_000, 0), 1_000);
    let capped = roll_age("t-3", 100, 10_000);
    assert!(capped > 0 && capped <= 100, "{capped}");
}
