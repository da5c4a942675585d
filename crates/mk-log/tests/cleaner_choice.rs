//! When the cleaner compacts a log, as Kafka's LogCleanerManager decides:
//! the first dirty offset (what the last compaction cleaned up to), the
//! dirty ratio over closed segments against `min_dirty_ratio`, a dirty
//! record older than `max_lag_ms`, and dirty segments within `min_lag_ms`
//! left out. Time is the `now_ms` each call is given.

mod common;

use common::{append_keyed, flip_byte, open, small_config, temp_log};
use mk_log::{CLEANER_CHECKPOINT_FILE, CleanerConfig, CompactionResult, LogConfig, PartitionLog};

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
    let (_dir, mut log, _) = compacted_log(60);
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

/// A log of 60 records of `keys` keys in closed segments, compacted once
/// (its first dirty offset is 60), and what that compaction did.
fn compacted_log(keys: usize) -> (tempfile::TempDir, PartitionLog, CompactionResult) {
    let (dir, mut log) = cleaned_log(CleanerConfig::default());
    fill(&mut log, 60, keys, NOW);
    let r = log.compact(NOW, 0).unwrap();
    assert_eq!(log.first_dirty_offset(), 60);
    (dir, log, r)
}

/// The log in `dir` reopened with the default cleaner, after a clean close
/// or (`crash`) after being dropped where it stood.
fn reopened(dir: &tempfile::TempDir, log: PartitionLog, crash: bool) -> PartitionLog {
    if crash {
        drop(log);
    } else {
        log.close().unwrap();
    }
    open(dir.path(), &small_config())
}

#[test]
fn the_first_dirty_offset_survives_a_restart_so_no_extra_pass_follows() {
    for crash in [false, true] {
        let (dir, log, _) = compacted_log(4);
        let mut log = reopened(&dir, log, crash);
        let s = log.cleaner_state(NOW).unwrap();
        assert_eq!(s.first_dirty_offset, 60, "crash: {crash}");
        assert_eq!((s.dirty_bytes, s.due), (0, false), "{s:?}");
        assert_eq!(log.compact_if_due(NOW, 0).unwrap(), None);
        // New dirt after the restart is measured from the stored offset.
        fill(&mut log, 4, 4, NOW);
        let s = log.cleaner_state(NOW).unwrap();
        assert_eq!(s.first_dirty_offset, 60);
        assert!(s.clean_bytes > 0 && s.dirty_bytes > 0, "{s:?}");
    }
}

#[test]
fn a_damaged_cleaner_checkpoint_is_ignored_and_costs_one_pass() {
    let (dir, log, first) = compacted_log(4);
    let kept: Vec<u64> = log.closed_segments().iter().map(|s| s.log_bytes).collect();
    log.close().unwrap();
    flip_byte(&dir.path().join(CLEANER_CHECKPOINT_FILE), 9, 0x01);
    let mut log = open(dir.path(), &small_config());
    // The log opens; the cleaner starts over from the log start.
    let s = log.cleaner_state(NOW).unwrap();
    assert_eq!(s.first_dirty_offset, 0);
    assert!(s.due, "{s:?}");
    // The extra pass finds nothing more to remove: what the first one
    // kept, it keeps.
    let again = log.compact_if_due(NOW, 0).unwrap().expect("one pass more");
    assert_eq!(again.records_before, first.records_after);
    assert_eq!(again.records_after, first.records_after);
    assert!(again.segments.is_empty(), "{again:?}");
    let now: Vec<u64> = log.closed_segments().iter().map(|s| s.log_bytes).collect();
    assert_eq!(now, kept);
    // And the checkpoint is whole again.
    let log = reopened(&dir, log, false);
    assert_eq!(log.first_dirty_offset(), 60);
}

#[test]
fn a_truncation_below_the_stored_offset_lowers_it_on_disk() {
    let (dir, mut log, _) = compacted_log(60);
    log.truncate_to(50).unwrap();
    // Records written again past the cut are dirty after a crash too.
    fill(&mut log, 20, 60, NOW);
    let log = reopened(&dir, log, true);
    assert_eq!(log.first_dirty_offset(), 50);
}

#[test]
fn a_stored_offset_past_the_log_end_is_not_trusted() {
    // A checkpoint that says more was cleaned than the log holds (here one
    // from a longer log): records appended later must not count as clean.
    let (long_dir, long, _) = compacted_log(4);
    long.close().unwrap();
    let (dir, mut log) = cleaned_log(CleanerConfig::default());
    fill(&mut log, 20, 4, NOW);
    log.close().unwrap();
    std::fs::copy(
        long_dir.path().join(CLEANER_CHECKPOINT_FILE),
        dir.path().join(CLEANER_CHECKPOINT_FILE),
    )
    .unwrap();
    let mut log = open(dir.path(), &small_config());
    fill(&mut log, 60, 4, NOW);
    assert_eq!(log.leo(), 80);
    assert_eq!(log.first_dirty_offset(), 0);
}
