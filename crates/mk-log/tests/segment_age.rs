//! `segment.ms`: the active segment rolls on the next append once it has
//! held data for longer than the limit, by the injected clock.

mod common;

use common::{keyed, small_config, temp_log};
use mk_core::{Clock, ManualClock, SharedClock};
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

#[test]
fn an_append_after_segment_ms_rolls_the_active_segment() {
    let (_dir, clock, mut log) = aged_log(1_000, 100);
    log.append(keyed(0, 4, clock.now_ms())).unwrap();
    clock.advance(100);
    // Exactly the limit is not older than it.
    log.append(keyed(1, 4, clock.now_ms())).unwrap();
    assert_eq!(log.segments().len(), 1);
    clock.advance(1);
    let info = log.append(keyed(2, 4, clock.now_ms())).unwrap();
    assert_eq!(info.segment_base_offset, 2);
    assert_eq!(log.segments().len(), 2);
    // The new segment's age starts at its first append.
    clock.advance(100);
    log.append(keyed(3, 4, clock.now_ms())).unwrap();
    assert_eq!(log.segments().len(), 2);
}

#[test]
fn an_idle_log_does_not_roll_an_empty_segment() {
    let (_dir, clock, mut log) = aged_log(0, 10);
    clock.advance(1_000);
    let info = log.append(keyed(0, 4, 0)).unwrap();
    assert_eq!(info.segment_base_offset, 0);
    assert_eq!(log.segments().len(), 1);
}

#[test]
fn a_group_append_rolls_an_aged_segment_first() {
    let (_dir, clock, mut log) = aged_log(0, 50);
    log.append(keyed(0, 4, 0)).unwrap();
    clock.advance(51);
    let answers = log.append_group(vec![keyed(1, 4, 51), keyed(2, 4, 51)]);
    let infos: Vec<_> = answers.into_iter().map(Result::unwrap).collect();
    assert_eq!(infos[0].segment_base_offset, 1);
    assert_eq!(infos[1].segment_base_offset, 1);
    assert_eq!(log.segments().len(), 2);
}

#[test]
fn segment_ms_altered_at_runtime_applies_to_the_next_append() {
    let (_dir, clock, mut log) = aged_log(0, 1_000);
    log.append(keyed(0, 4, 0)).unwrap();
    clock.advance(500);
    log.append(keyed(1, 4, 500)).unwrap();
    assert_eq!(log.segments().len(), 1);
    log.set_segment_ms(Some(100)).unwrap();
    log.append(keyed(2, 4, 500)).unwrap();
    assert_eq!(log.segments().len(), 2);
    assert!(log.set_segment_ms(Some(0)).is_err());
    log.set_segment_ms(None).unwrap();
    clock.advance(10_000);
    log.append(keyed(3, 4, 10_500)).unwrap();
    assert_eq!(log.segments().len(), 2);
}
