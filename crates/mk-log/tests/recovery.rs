//! Recovery on open: torn tails, corrupt closed segments, gaps, bad names,
//! index files as a cache, the clean-shutdown fast path, and I/O failures.

mod common;

use common::*;
use mk_core::ErrorCode;
use mk_log::{LogConfig, PartitionLog, RecordBatch};
use std::path::Path;

/// What `dump` lists: offset, key, value, timestamp.
type Dump = (i64, Option<bytes::Bytes>, Option<bytes::Bytes>, i64);

fn fill(dir: &Path, cfg: &LogConfig, n: usize) -> Vec<Dump> {
    let mut log = open(dir, cfg);
    for i in 0..n {
        log.append(keyed(i, 1000, i as i64)).unwrap();
    }
    let all = dump(&log);
    drop(log); // crash: no clean-shutdown checkpoint
    all
}

/// A fresh directory holding a crashed `small_config` log of `n` keyed
/// records, its config and everything it held.
fn filled(n: usize) -> (tempfile::TempDir, LogConfig, Vec<Dump>) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = small_config();
    let all = fill(dir.path(), &cfg, n);
    (dir, cfg, all)
}

#[test]
fn appended_records_survive_a_crash_without_flush() {
    let (dir, cfg, all) = filled(25);
    let log = open(dir.path(), &cfg);
    assert_eq!(
        dump(&log),
        all,
        "writes reached the OS before append returned"
    );
}

#[test]
fn torn_tail_of_the_active_segment_is_repaired_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = LogConfig::default();
    let all = fill(dir.path(), &cfg, 10);
    let path = seg_file(dir.path(), 0, "log");
    let good_len = std::fs::metadata(&path).unwrap().len();
    // A half-written frame: valid magic and length, then the process died.
    let mut frame = mk_log::codec::encode(&{
        let mut b = keyed(99, 1000, 0);
        b.assign(10, 0).unwrap();
        b
    })
    .unwrap()
    .to_vec();
    frame.truncate(frame.len() / 2);
    append_bytes(&path, &frame);
    let mut log = open(dir.path(), &cfg);
    assert_eq!(dump(&log), all);
    assert_eq!(log.leo(), 10);
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        good_len,
        "tail cut off"
    );
    assert_eq!(log.append(keyed(10, 1000, 0)).unwrap().base_offset, 10);
}

#[test]
fn damage_inside_the_active_segment_refuses_to_open_but_a_damaged_last_frame_is_cut() {
    let cfg = LogConfig::default();
    let (dir, mut log) = temp_log(&cfg);
    let mut infos = Vec::new();
    for i in 0..10 {
        infos.push(log.append(keyed(i, 1000, 0)).unwrap());
    }
    drop(log);
    // A flipped byte inside the 6th batch, with intact batches after it:
    // damage at rest, not a torn write. Nothing may be cut.
    let path = seg_file(dir.path(), 0, "log");
    let at = usize::try_from(infos[5].position).unwrap() + 20;
    let bytes = flip_byte(&path, at, 0xff);
    for _ in 0..2 {
        let err = PartitionLog::open(dir.path(), cfg.clone(), 0).unwrap_err();
        assert_eq!(err.code(), ErrorCode::StorageError, "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("not a torn write")
                && msg.contains("intact batch at offset 6")
                && msg.contains(&format!("truncate -s {}", infos[5].position)),
            "{msg}"
        );
        assert_untouched(&path, &bytes);
    }
    // The operator's way out that the message names: cut the file there.
    cut_file(&path, infos[5].position);
    assert_eq!(open(dir.path(), &cfg).leo(), 5);
    // Damage in the last frame has nothing intact after it: a torn write,
    // cut as before.
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), &cfg);
    let mut last = None;
    for i in 0..4 {
        last = Some(log.append(keyed(i, 1000, 0)).unwrap());
    }
    drop(log);
    let last = last.unwrap();
    let path = seg_file(dir.path(), 0, "log");
    flip_byte(&path, usize::try_from(last.position).unwrap() + 20, 0xff);
    let log = open(dir.path(), &cfg);
    assert_eq!(log.leo(), 3);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), last.position);
}

#[test]
fn a_segment_deleted_from_the_middle_refuses_to_open() {
    for clean in [true, false] {
        let cfg = small_config();
        let (dir, mut log) = temp_log(&cfg);
        append_keyed(&mut log, 0..30, 100, 0);
        let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
        assert!(bases.len() >= 3, "{bases:?}");
        if clean {
            log.close().unwrap();
        } else {
            // A flush records the closed segments; then the process dies.
            log.flush().unwrap();
            drop(log);
        }
        let middle = bases[1];
        std::fs::remove_file(seg_file(dir.path(), middle, "log")).unwrap();
        for _ in 0..2 {
            let err = PartitionLog::open(dir.path(), cfg.clone(), 0).unwrap_err();
            assert_eq!(err.code(), ErrorCode::StorageError, "{err}");
            let msg = err.to_string();
            assert!(
                msg.contains("are missing") && msg.contains(&format!("{middle:020}.log")),
                "clean={clean}: {msg}"
            );
        }
    }
}

#[test]
fn corrupt_closed_segment_refuses_to_open_with_storage_error() {
    let (dir, cfg, _) = filled(30);
    let path = seg_file(dir.path(), 0, "log");
    let bytes = flip_byte(&path, file_len(&path) / 2, 0x55);
    assert_open_refused(dir.path(), &cfg, "corrupt closed segment");
    // Nothing was repaired or deleted behind the user's back.
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn truncated_closed_segment_refuses_to_open() {
    let (dir, cfg, _) = filled(30);
    let path = seg_file(dir.path(), 0, "log");
    let len = std::fs::metadata(&path).unwrap().len();
    cut_file(&path, len - 3);
    assert_eq!(
        PartitionLog::open(dir.path(), cfg, 0).unwrap_err().code(),
        ErrorCode::StorageError
    );
}

#[test]
fn non_contiguous_segments_refuse_to_open() {
    let (dir, cfg, _) = filled(30);
    let log = open(dir.path(), &cfg);
    let second = log.segments()[1].base_offset;
    log.close().unwrap();
    // Rename the second segment's log below the first one's end: overlap.
    // Without the checkpoints, which would already name the renamed file as
    // missing, the scan itself must find the overlap.
    std::fs::rename(
        seg_file(dir.path(), second, "log"),
        seg_file(dir.path(), 1, "log"),
    )
    .unwrap();
    for checkpoint in ["clean-shutdown", "recovery-checkpoint"] {
        let _ = std::fs::remove_file(dir.path().join(checkpoint));
    }
    assert_open_refused(dir.path(), &cfg, "not contiguous");
}

#[test]
fn unparsable_segment_name_is_storage_error() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), &LogConfig::default(), 3);
    std::fs::write(dir.path().join("12.log"), b"").unwrap();
    let err = PartitionLog::open(dir.path(), LogConfig::default(), 0).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StorageError);
    // Files of other components (checkpoints) are left alone.
    std::fs::remove_file(dir.path().join("12.log")).unwrap();
    std::fs::write(dir.path().join("leader-epoch-checkpoint"), b"x").unwrap();
    assert!(PartitionLog::open(dir.path(), LogConfig::default(), 0).is_ok());
}

#[test]
fn damaged_index_files_are_rebuilt_from_the_log() {
    let (dir, cfg, all) = filled(40);
    let log = open(dir.path(), &cfg);
    log.close().unwrap();
    // Clean shutdown: indexes are trusted... unless they are malformed.
    std::fs::write(seg_file(dir.path(), 0, "index"), [1u8; 13]).unwrap();
    std::fs::remove_file(seg_file(dir.path(), 0, "timeindex")).unwrap();
    let log = open(dir.path(), &cfg);
    assert_eq!(dump(&log), all);
    assert_eq!(log.offset_for_timestamp(3).unwrap(), Some(3));
    log.close().unwrap();
    let rewritten = std::fs::read(seg_file(dir.path(), 0, "index")).unwrap();
    assert!(
        mk_log::index::OffsetIndex::from_bytes(&rewritten).is_ok(),
        "rewritten on close"
    );
}

#[test]
fn clean_reopen_trusts_closed_segments_without_reading_them() {
    let (dir, cfg, all) = filled(40);
    open(dir.path(), &cfg).close().unwrap();
    assert!(dir.path().join("clean-shutdown").exists());
    // Corrupt a closed segment without changing its size. A clean open does
    // not read it (that is what makes reopening O(active segment))...
    let path = seg_file(dir.path(), 0, "log");
    flip_byte(&path, 30, 0x01);
    let log = open(dir.path(), &cfg);
    assert!(
        !dir.path().join("clean-shutdown").exists(),
        "checkpoint consumed on open"
    );
    assert_eq!(log.leo(), all.len() as i64);
    // ...but reading the damaged batch fails loudly, never returns bad data.
    let err = log.fetch(0, 1, None).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StorageError, "{err}");
    // Records in undamaged segments are still served.
    let second = log.segments()[1].base_offset;
    assert_eq!(log.fetch(second, 1, None).unwrap()[0].offset, second);
}

#[test]
fn stale_clean_shutdown_checkpoint_is_ignored() {
    let (dir, cfg, _) = filled(10);
    open(dir.path(), &cfg).close().unwrap();
    let cp = std::fs::read(dir.path().join("clean-shutdown")).unwrap();
    let mut log = open(dir.path(), &cfg);
    append_keyed(&mut log, 10..20, 1000, 0);
    let all = dump(&log);
    drop(log);
    // An old checkpoint reappearing (e.g. restored by hand) must not be
    // trusted when the files disagree with it.
    std::fs::write(dir.path().join("clean-shutdown"), cp).unwrap();
    assert_eq!(reopened(dir.path(), &cfg), all);
}

#[test]
fn transaction_index_survives_clean_and_crash_reopen() {
    let cfg = small_config();
    let (dir, mut log) = temp_log(&cfg);
    log.append(txn_record(0, 1, "a")).unwrap();
    log.append(keyed(1, 10, 0)).unwrap();
    log.append(abort_marker("a", 1)).unwrap();
    log.append(txn_record(2, 2, "b")).unwrap();
    let aborted = log.aborted_transactions(0, log.leo());
    assert_eq!(aborted.len(), 1);
    assert_eq!(
        (
            aborted[0].producer_id,
            aborted[0].first_offset,
            aborted[0].last_offset
        ),
        (1, 0, 2)
    );
    assert_eq!(log.first_unstable_offset(), Some(3));
    log.close().unwrap();
    let log = open(dir.path(), &cfg);
    assert_eq!(log.aborted_transactions(0, 10), aborted);
    assert_eq!(log.first_unstable_offset(), Some(3));
    drop(log);
    let log = open(dir.path(), &cfg);
    assert_eq!(log.aborted_transactions(0, 10), aborted);
    assert_eq!(log.first_unstable_offset(), Some(3));
}

#[test]
fn failed_write_makes_the_log_refuse_further_writes() {
    let cfg = LogConfig::default();
    let (_dir, mut log) = temp_log(&cfg);
    log.append(keyed(0, 10, 0)).unwrap();
    cfg.faults.fail_writes_after(0);
    let err = log.append(keyed(1, 10, 0)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StorageError);
    assert!(err.is_storage_failure());
    cfg.faults.clear();
    assert!(log.is_failed());
    let err = log.append(keyed(2, 10, 0)).unwrap_err();
    assert!(err.to_string().contains("earlier I/O failure"), "{err}");
    assert_eq!(log.leo(), 1);
    assert_eq!(dump(&log).len(), 1, "reads still work");
}

#[test]
fn a_full_disk_fails_writes_without_poisoning_the_log_and_loses_nothing() {
    let cfg = small_config();
    let (dir, mut log) = temp_log(&cfg);
    append_keyed(&mut log, 0..3, 10, 0);
    let end = log.active().log_bytes;
    cfg.faults.disk_full(true);
    for i in 3..30 {
        // Every append fails, typed, and changes nothing.
        let err = log.append(keyed(i, 10, 0)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::StorageError);
        assert!(err.is_transient(), "{err}");
        let cause = err.storage_error().expect("a storage failure");
        assert!(cause.is_disk_full(), "{err}");
    }
    assert!(!log.is_failed(), "a full disk is not a broken disk");
    assert_eq!(log.leo(), 3);
    assert_eq!(dump(&log).len(), 3, "reads go on");
    // fsyncs need no space: what was written is made durable.
    log.flush().unwrap();
    cfg.faults.disk_full(false);
    let info = log.append(keyed(3, 10, 0)).unwrap();
    assert_eq!(
        (info.base_offset, info.position),
        (3, end),
        "the next write lands where the failed one would have"
    );
    drop(log);
    let log = open(dir.path(), &cfg);
    assert_eq!(
        dump(&log).len(),
        4,
        "a restart with space keeps every acknowledged record"
    );
}

#[test]
fn failed_fsync_fails_flush_loudly() {
    let cfg = LogConfig::default();
    let (_dir, mut log) = temp_log(&cfg);
    log.append(keyed(0, 10, 0)).unwrap();
    cfg.faults.fail_syncs(true);
    assert_eq!(log.flush().unwrap_err().code(), ErrorCode::StorageError);
    cfg.faults.fail_syncs(false);
    assert!(log.is_failed());
    assert!(log.flush().is_err());
}

#[test]
fn invalid_configuration_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let zeroed: [fn(&mut LogConfig); 3] = [
        |c| c.segment_max_bytes = 0,
        |c| c.index_interval_bytes = 0,
        |c| c.max_batch_bytes = 0,
    ];
    for zero in zeroed {
        let mut cfg = LogConfig::default();
        zero(&mut cfg);
        assert_eq!(
            PartitionLog::open(dir.path(), cfg, 0).unwrap_err().code(),
            ErrorCode::InvalidRequest
        );
    }
    assert!(PartitionLog::open(dir.path(), LogConfig::default(), -1).is_err());
}

#[test]
fn crash_reopen_after_a_flush_scans_only_what_was_not_flushed() {
    let cfg = small_config();
    let (dir, mut log) = temp_log(&cfg);
    for i in 0..40 {
        log.append(keyed(i, 1000, i as i64)).unwrap();
    }
    log.flush().unwrap(); // the recovery point: every closed segment so far
    assert!(dir.path().join("recovery-checkpoint").exists());
    let flushed: Vec<i64> = log
        .closed_segments()
        .iter()
        .map(|s| s.base_offset)
        .collect();
    for i in 40..80 {
        log.append(keyed(i, 1000, i as i64)).unwrap();
    }
    let after_flush: Vec<i64> = log
        .closed_segments()
        .iter()
        .map(|s| s.base_offset)
        .filter(|b| !flushed.contains(b))
        .collect();
    assert!(flushed.len() >= 2 && !after_flush.is_empty());
    let all = dump(&log);
    drop(log); // crash
    // A torn tail is still repaired...
    let active = dir
        .path()
        .join(format!("{:020}.log", log_bases(dir.path()).last().unwrap()));
    append_bytes(&active, b"MKB1\x00");
    // ...and a segment below the recovery point is trusted without being
    // read: damage to it (same size) is found only when it is read.
    let below = seg_file(dir.path(), flushed[0], "log");
    flip_byte(&below, 30, 0x01);
    let log = open(dir.path(), &cfg);
    assert_eq!(log.leo(), all.len() as i64, "torn tail cut, nothing lost");
    assert_eq!(
        log.fetch(0, 1, None).unwrap_err().code(),
        ErrorCode::StorageError
    );
    assert_eq!(
        log.fetch(flushed[1], 1000, None).unwrap().len(),
        all.len() - usize::try_from(flushed[1]).unwrap()
    );
    flip_byte(&below, 30, 0x01); // repaired
    drop(log);
    // A closed segment rolled after the flush is scanned: damage there
    // refuses to open.
    let above = seg_file(dir.path(), after_flush[0], "log");
    flip_byte(&above, 30, 0x01);
    assert_eq!(
        PartitionLog::open(dir.path(), cfg, 0).unwrap_err().code(),
        ErrorCode::StorageError
    );
}

fn log_bases(dir: &Path) -> Vec<i64> {
    let mut v: Vec<i64> = files(dir)
        .iter()
        .filter_map(|f| f.strip_suffix(".log").and_then(|b| b.parse().ok()))
        .collect();
    v.sort();
    v
}

#[test]
fn truncation_below_the_recovery_point_is_never_trusted_after_a_crash() {
    let cfg = small_config();
    let (dir, mut log) = temp_log(&cfg);
    append_keyed(&mut log, 0..40, 1000, 0);
    log.flush().unwrap();
    let cut = log.closed_segments()[1].base_offset + 1;
    log.truncate_to(cut).unwrap();
    for i in 0..30 {
        log.append(
            RecordBatch::new(vec![mk_log::Record::new(
                None,
                Some(b(&format!("new{i}"))),
                0,
            )])
            .unwrap(),
        )
        .unwrap();
    }
    let expected = dump(&log);
    drop(log); // crash without another flush
    assert_eq!(reopened(dir.path(), &cfg), expected);
}

#[test]
fn transactions_spanning_the_recovery_point_are_restored_exactly() {
    let cfg = small_config();
    let (dir, mut log) = temp_log(&cfg);
    log.append(txn_record(0, 1, "a")).unwrap();
    log.append(txn_record(1, 2, "b")).unwrap();
    append_keyed(&mut log, 0..30, 1000, 0);
    log.flush().unwrap(); // both transactions are open at the recovery point
    append_keyed(&mut log, 0..20, 1000, 0);
    log.append(abort_marker("a", 1)).unwrap();
    let aborted = log.aborted_transactions(0, log.leo());
    assert_eq!(aborted.len(), 1);
    assert_eq!(log.first_unstable_offset(), Some(1));
    drop(log);
    let log = open(dir.path(), &cfg);
    assert_eq!(log.aborted_transactions(0, log.leo()), aborted);
    assert_eq!(log.first_unstable_offset(), Some(1), "b is still open");
}
