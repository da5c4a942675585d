//! When the cleaner compacts a log, as Kafka's LogCleanerManager decides:
//! the first dirty offset (what the last compaction cleaned up to), the
//! dirty ratio over closed segments against `min_dirty_ratio`, a dirty
//! record older than `max_lag_ms`, and dirty segments within `min_lag_ms`
//! left out. Time is the `now_ms` each call is given.

mod common;

use common::{append_keyed, small_config, temp_log};
use mk_log::{CleanerConfig, LogConfig, PartitionLog};

const NOW: i64 = 1_000_000;

/// `n` one-record batches of `keys` keys at `ts` each, then a roll, so they
/// all lie in closed segments.
fn fill(log: &mut PartitionLog, n: usize, keys: usize, ts: i64) {
    append_keyed(log, 0..n, keys, ts);
    log.roll().unwrap();
}

/// A log in a temporary directory whose cleaner is configured so.
fn cleaned_log(cleaner: CleanerConfig) -> (tempfile::TempDir, PartitionLog) {
    temp_log(&LogConfig {
        cleaner,
        ..small_config()
    })
}

#[test]
fn a_log_never_cleaned_is_all_dirty_and_due() {
    let (_dir, mut log) = cleaned_log(CleanerConfig::default());
    fill(&mut log, 60, 4, NOW);
    let s = log.cleaner_state(NOW).unwrap();
    assert_eq!(s.first_dirty_offset, 0);
    assert_eq!(s.first_uncleanable_offset, 60);
    assert_eq!(s.clean_bytes, 0);
    let closed: u64 = log.closed_segments().iter().map(|s| s.log_bytes).sum();
    assert_eq!(s.dirty_bytes, closed);
    assert!((s.dirty_ratio() - 1.0).abs() < f64::EPSILON);
    assert!(s.due && !s.overdue);
    let r = log.compact_if_due(NOW, 0).unwrap().expect("due");
    assert!(r.records_after < r.records_before, "{r:?}");
    // What was cleaned is clean now: nothing is dirty, nothing is due.
    let s = log.cleaner_state(NOW).unwrap();
    assert_eq!(s.first_dirty_offset, 60);
    assert_eq!(s.dirty_bytes, 0);
    assert!(!s.due);
    assert_eq!(log.compact_if_due(NOW, 0).unwrap(), None);
}

#[test]
fn the_dirty_ratio_decides_against_min_dirty_ratio() {
    let (_dir, mut log) = cleaned_log(CleanerConfig::default());
    // Many distinct keys: compaction keeps most of the clean part.
    fill(&mut log, 60, 60, NOW);
    log.compact(NOW, 0).unwrap();
    fill(&mut log, 10, 60, NOW);
    let s = log.cleaner_state(NOW).unwrap();
    assert_eq!(s.first_dirty_offset, 60);
    assert!(s.clean_bytes > 0 && s.dirty_bytes > 0, "{s:?}");
    let ratio = s.dirty_ratio();
    assert!(ratio < 0.5, "{ratio}");
    assert!(!s.due);
    assert_eq!(log.compact_if_due(NOW, 0).unwrap(), None);
    // Kafka cleans when the ratio is above the minimum, not at it.
    let at = CleanerConfig {
        min_dirty_ratio: ratio,
        ..CleanerConfig::default()
    };
    log.set_cleaner(at).unwrap();
    assert!(!log.cleaner_state(NOW).unwrap().due);
    let below = CleanerConfig {
        min_dirty_ratio: ratio * 0.99,
        ..CleanerConfig::default()
    };
    log.set_cleaner(below).unwrap();
    assert!(log.cleaner_state(NOW).unwrap().due);
    assert!(log.compact_if_due(NOW, 0).unwrap().is_some());
    assert_eq!(log.cleaner_state(NOW).unwrap().first_dirty_offset, 70);
}

#[test]
fn a_dirty_record_older_than_max_lag_makes_the_log_due() {
    let (_dir, mut log) = cleaned_log(CleanerConfig::default());
    fill(&mut log, 60, 60, NOW - 10_000);
    log.compact(NOW, 0).unwrap();
    // A small dirty part whose first batch is 5 s old.
    fill(&mut log, 5, 60, NOW - 5_000);
    let lag = |max_lag_ms| CleanerConfig {
        max_lag_ms,
        ..CleanerConfig::default()
    };
    log.set_cleaner(lag(5_000)).unwrap();
    let s = log.cleaner_state(NOW).unwrap();
    assert!(
        !s.overdue && !s.due,
        "exactly the lag is not past it: {s:?}"
    );
    log.set_cleaner(lag(4_999)).unwrap();
    let s = log.cleaner_state(NOW).unwrap();
    assert!(s.overdue && s.due, "{s:?}");
    assert!(s.dirty_ratio() < 0.5);
    assert!(log.compact_if_due(NOW, 0).unwrap().is_some());
    // Cleaned: the old records are no longer dirty.
    let s = log.cleaner_state(NOW).unwrap();
    assert!(!s.overdue && !s.due, "{s:?}");
}

#[test]
fn records_without_a_timestamp_never_make_a_log_overdue() {
    let cleaner = CleanerConfig {
        max_lag_ms: 1,
        min_dirty_ratio: 1.0,
        ..CleanerConfig::default()
    };
    let (_dir, mut log) = cleaned_log(cleaner);
    // Kafka only counts first-batch timestamps above zero.
    fill(&mut log, 10, 4, -1);
    let s = log.cleaner_state(NOW).unwrap();
    assert!(!s.overdue && !s.due, "{s:?}");
    fill(&mut log, 10, 4, 1);
    assert!(log.cleaner_state(NOW).unwrap().due);
}

#[test]
fn dirty_segments_within_min_lag_are_not_cleanable() {
    let cleaner = CleanerConfig {
        min_lag_ms: 60_000,
        ..CleanerConfig::default()
    };
    let (_dir, mut log) = cleaned_log(cleaner);
    fill(&mut log, 40, 4, NOW - 1_000);
    let s = log.cleaner_state(NOW).unwrap();
    assert_eq!(s.first_uncleanable_offset, 0);
    assert_eq!(s.dirty_bytes, 0);
    assert!(!s.due, "{s:?}");
    // Once past the lag they are dirty, and the log is due.
    let later = NOW + 60_000;
    let s = log.cleaner_state(later).unwrap();
    assert_eq!(s.first_uncleanable_offset, 40);
    assert!(s.due, "{s:?}");
}

#[test]
fn truncation_and_a_moved_log_start_move_the_first_dirty_offset() {
    let (_dir, mut log) = cleaned_log(CleanerConfig::default());
    fill(&mut log, 60, 60, NOW);
    log.compact(NOW, 0).unwrap();
    assert_eq!(log.first_dirty_offset(), 60);
    // A cut below it: what comes back after the cut is dirty.
    log.truncate_to(50).unwrap();
    assert_eq!(log.first_dirty_offset(), 50);
    // A log start above it: the first dirty offset is the start.
    fill(&mut log, 30, 60, NOW);
    log.compact(NOW, 0).unwrap();
    assert_eq!(log.first_dirty_offset(), 80);
    fill(&mut log, 10, 60, NOW);
    log.advance_log_start(85).unwrap();
    assert_eq!(log.first_dirty_offset(), 85);
}
