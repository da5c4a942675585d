//! Group commit (`PartitionLog::append_group`): a group is appended exactly
//! as consecutive `append` calls would append it — the same answers, the
//! same files byte for byte — in fewer writes; and a failed group write
//! leaves none of the group behind.

mod common;

use common::*;
use mk_log::{Fault, FaultInjector, LogConfig, PartitionLog, Record, RecordBatch};
use proptest::prelude::*;
use std::path::Path;
use std::sync::Arc;

fn config_with(segment_max_bytes: u64, faults: &Arc<FaultInjector>) -> LogConfig {
    LogConfig {
        segment_max_bytes,
        index_interval_bytes: 128,
        max_batch_bytes: 600,
        faults: faults.clone(),
        ..LogConfig::default()
    }
}

/// A batch of `sizes.len()` records with values of those sizes; a large
/// value makes a batch that `max_batch_bytes` refuses.
fn batch(id: usize, sizes: &[usize]) -> RecordBatch {
    let records = sizes
        .iter()
        .enumerate()
        .map(|(j, n)| {
            let value = format!("{id}-{j}-{}", "x".repeat(*n));
            Record::new(Some(b(&format!("k{id}"))), Some(b(&value)), id as i64)
        })
        .collect();
    RecordBatch::new(records).unwrap()
}

/// Every file of `dir` with its bytes, sorted by name.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    files(dir)
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(dir.join(&f)).unwrap();
            (f, bytes)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Any split of any sequence of batches (some too large) into groups
    /// gives the answers and the files of appending them one by one.
    #[test]
    fn groups_append_exactly_like_consecutive_appends(
        batches in prop::collection::vec(prop::collection::vec(0usize..700, 1..4), 1..40),
        cuts in prop::collection::vec(1usize..9, 1..40),
        segment_max_bytes in 200u64..3000,
    ) {
        let (one, grouped) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let faults = Arc::new(FaultInjector::new());
        let mut a = PartitionLog::open(one.path(), config_with(segment_max_bytes, &faults), 0).unwrap();
        let mut g = PartitionLog::open(grouped.path(), config_with(segment_max_bytes, &faults), 0).unwrap();

        let singly: Vec<_> = batches
            .iter()
            .enumerate()
            .map(|(i, s)| a.append(batch(i, s)).map_err(|e| e.to_string()))
            .collect();
        let mut together = Vec::new();
        let mut next = 0;
        for cut in cuts.iter().cycle() {
            if next >= batches.len() {
                break;
            }
            let end = (next + cut).min(batches.len());
            let group = (next..end).map(|i| batch(i, &batches[i])).collect();
            together.extend(g.append_group(group).into_iter().map(|r| r.map_err(|e| e.to_string())));
            next = end;
        }
        prop_assert_eq!(&together, &singly);
        prop_assert_eq!(dump(&g), dump(&a));
        a.flush().unwrap();
        g.flush().unwrap();
        prop_assert_eq!(contents(grouped.path()), contents(one.path()));
    }
}

/// An empty log with 1 MiB segments and its fault injector.
fn fresh_log() -> (tempfile::TempDir, Arc<FaultInjector>, PartitionLog) {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(FaultInjector::new());
    let log = PartitionLog::open(dir.path(), config_with(1 << 20, &faults), 0).unwrap();
    (dir, faults, log)
}

/// The base offsets of answers that must all be accepted.
fn offsets(answers: &[mk_log::Result<mk_log::AppendInfo>]) -> Vec<i64> {
    answers
        .iter()
        .map(|r| r.as_ref().unwrap().base_offset)
        .collect()
}

#[test]
fn a_group_that_fits_the_segment_is_one_write() {
    let (_dir, faults, mut log) = fresh_log();
    let before = faults.sites_passed();
    let answers = log.append_group((0..10).map(|i| batch(i, &[10])).collect());
    assert_eq!(faults.sites_passed() - before, 1, "ten batches, one write");
    assert_eq!(offsets(&answers), (0..10).collect::<Vec<i64>>());

    let before = faults.sites_passed();
    for i in 10..20 {
        log.append(batch(i, &[10])).unwrap();
    }
    assert_eq!(
        faults.sites_passed() - before,
        10,
        "one write per lone append"
    );
}

#[test]
fn a_rejected_batch_leaves_its_neighbours_in_the_group() {
    let (_dir, faults, mut log) = fresh_log();
    let before = faults.sites_passed();
    let answers = log.append_group(vec![batch(0, &[1, 2]), batch(1, &[900]), batch(2, &[3])]);
    assert_eq!(faults.sites_passed() - before, 1);
    assert_eq!(answers[0].as_ref().unwrap().base_offset, 0);
    let refused = answers[1].as_ref().unwrap_err();
    assert!(
        refused.to_string().contains("exceeds max_batch_bytes"),
        "{refused}"
    );
    assert_eq!(answers[2].as_ref().unwrap().base_offset, 2);
    assert_eq!(log.leo(), 3);
    let values: Vec<_> = dump(&log).into_iter().map(|r| r.2.unwrap()).collect();
    assert_eq!(values, vec![b("0-0-x"), b("0-1-xx"), b("2-0-xxx")]);
}

/// A log holding one record whose next write site fails with `fault`, and
/// the answers to a group of five batches of `size`-byte values sent into
/// it.
struct FailedGroup {
    dir: tempfile::TempDir,
    faults: Arc<FaultInjector>,
    config: LogConfig,
    log: PartitionLog,
    answers: Vec<mk_log::Result<mk_log::AppendInfo>>,
}

fn failed_group(fault: Fault, size: usize) -> FailedGroup {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(FaultInjector::new());
    let config = config_with(1 << 20, &faults);
    let mut log = PartitionLog::open(dir.path(), config.clone(), 0).unwrap();
    log.append(batch(0, &[5])).unwrap();
    faults.inject_at(faults.sites_passed(), fault);
    let answers = log.append_group((1..6).map(|i| batch(i, &[size])).collect());
    FailedGroup {
        dir,
        faults,
        config,
        log,
        answers,
    }
}

#[test]
fn a_full_disk_fails_the_whole_group_and_keeps_nothing_of_it() {
    let FailedGroup {
        dir,
        faults,
        config,
        mut log,
        answers,
    } = failed_group(Fault::NoSpace, 5);
    assert!(
        answers
            .iter()
            .all(|r| r.as_ref().is_err_and(|e| e.is_transient()))
    );
    assert_eq!(log.leo(), 1);

    faults.clear();
    let answers = log.append_group((1..6).map(|i| batch(i, &[5])).collect());
    assert_eq!(offsets(&answers), vec![1, 2, 3, 4, 5]);
    drop(log);
    let log = PartitionLog::open(dir.path(), config, 0).unwrap();
    let ids: Vec<i64> = dump(&log).into_iter().map(|r| r.3).collect();
    assert_eq!(ids, vec![0, 1, 2, 3, 4, 5]);
}

#[test]
fn a_torn_group_write_is_gone_after_reopening() {
    let mut torn = failed_group(Fault::Torn, 50);
    let answers = &torn.answers;
    assert!(answers.iter().all(Result::is_err), "{answers:?}");
    assert!(
        torn.log.append(batch(9, &[1])).is_err(),
        "a torn write latches the log"
    );
    drop(torn.log);
    torn.faults.clear();
    let mut log = PartitionLog::open(torn.dir.path(), torn.config, 0).unwrap();
    // Whole frames of the first half may survive, as after any failed
    // write (its outcome was an error, not an acknowledgement); the torn
    // frame does not.
    let survived = dump(&log);
    assert!(log.leo() < 6, "the second half never reached the file");
    let ids: Vec<i64> = survived.iter().map(|r| r.3).collect();
    assert_eq!(ids, (0..log.leo()).collect::<Vec<i64>>());
    let leo = log.leo();
    let again = log.append_group(vec![batch(7, &[1]), batch(8, &[1])]);
    assert_eq!(again[1].as_ref().unwrap().base_offset, leo + 1);
}
