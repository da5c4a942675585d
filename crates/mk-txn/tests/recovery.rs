//! Durability of the coordinator: crash after PrepareCommit, crashes at
//! every step of a transaction, torn and corrupt journal tails, the clean
//! close snapshot, unclean restarts, journal write failures and automatic
//! compaction.

mod common;

use common::{Harness, record, tp};
use mk_core::{ErrorCode, SharedClock};
use mk_txn::{JournalFaults, Outcome, TransactionCoordinator, TxnConfig, TxnState};
use std::io::Write;
use std::sync::Arc;

#[test]
fn crash_after_prepare_commit_recovers_to_a_committed_transaction_with_markers_and_offsets() {
    let mut h = Harness::new();
    let (a, b, input) = h.two_partition_txn(42);
    // The coordinator journals PrepareCommit and returns its plan; the
    // process dies before executing any of it.
    let plan = h.coord().commit("tx", 0).unwrap();
    drop(plan);
    let mut plans = h.crash_and_reopen();

    assert_eq!(plans.len(), 1);
    assert_eq!(h.state("tx"), TxnState::PrepareCommit);
    assert!(
        h.read_committed(&a).is_empty(),
        "not visible before the markers"
    );
    assert_eq!(h.committed_offset("g", &input), None);
    let plan = plans.pop().unwrap();
    assert_eq!(plan.outcome(), Outcome::Commit);
    assert_eq!(plan.markers().len(), 2);
    assert_eq!(plan.offsets_to_store()[0].offset, 42);

    assert_eq!(h.finish(plan), TxnState::CompleteCommit);
    assert_eq!(h.read_committed(&a), vec!["a1"]);
    assert_eq!(h.read_committed(&b), vec!["b1"]);
    assert_eq!(h.committed_offset("g", &input), Some(42));
    assert!(h.crash_and_reopen().is_empty(), "nothing left to complete");
    assert_eq!(h.state("tx"), TxnState::CompleteCommit);
}

#[test]
fn a_partly_executed_plan_is_rerun_after_a_crash_and_duplicate_markers_are_harmless() {
    let mut h = Harness::new();
    let (a, b) = (tp("out", 0), tp("out", 1));
    h.begin("tx", 1, 0);
    h.send("tx", 0, &a, "a1");
    h.send("tx", 0, &b, "b1");
    let plan = h.coord().commit("tx", 0).unwrap();
    // Only the first marker lands before the crash.
    let first = plan.markers()[0].batch().clone();
    h.raw_marker(&a, &first);
    drop(plan);
    let plans = h.crash_and_reopen();
    assert_eq!(h.read_committed(&a), vec!["a1"]);
    assert!(h.read_committed(&b).is_empty());

    // The recovery plan writes both markers again (a's twice), and even a
    // second run of the whole plan changes nothing visible.
    let mut again = h.coord_ref().pending_completions();
    for plan in plans {
        h.finish(plan);
    }
    h.execute(&mut again[0]);
    assert_eq!(h.read_committed(&a), vec!["a1"]);
    assert_eq!(h.read_committed(&b), vec!["b1"]);
    assert_eq!(h.lso(&a), h.hw(&a));
    assert_eq!(h.lso(&b), h.hw(&b));
    let duplicate = again.pop().unwrap();
    assert_eq!(
        h.coord().complete(duplicate).unwrap_err().code(),
        ErrorCode::InvalidTxnState
    );
}

#[test]
fn crash_after_prepare_abort_recovers_to_an_aborted_transaction() {
    let mut h = Harness::new();
    let out = h.ongoing("x");
    h.coord()
        .send_offsets("tx", 0, "g", [(tp("in", 0), 1)])
        .unwrap();
    drop(h.coord().abort("tx", 0).unwrap());
    let plans = h.crash_and_reopen();
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].outcome(), Outcome::Abort);
    assert_eq!(
        h.lso(&out),
        0,
        "the open data holds the LSO until the marker"
    );
    for plan in plans {
        assert_eq!(h.finish(plan), TxnState::CompleteAbort);
    }
    assert_eq!(h.lso(&out), h.hw(&out));
    assert!(h.read_committed(&out).is_empty());
    assert!(h.committed.is_empty());
}

/// The steps of one read-process-write transaction, in order.
const STEPS: usize = 9;

fn run_step(h: &mut Harness, step: usize, plan: &mut Option<mk_txn::CompletionPlan>) {
    let (a, b) = (tp("out", 0), tp("out", 1));
    match step {
        0 => h.begin("tx", 1, 0),
        1 => {
            h.send("tx", 0, &a, "a");
        }
        2 => {
            h.send("tx", 0, &b, "b");
        }
        3 => h
            .coord()
            .send_offsets("tx", 0, "g", [(tp("in", 0), 10)])
            .unwrap(),
        4 => *plan = Some(h.coord().commit("tx", 0).unwrap()),
        5 | 6 => {
            let p = plan.as_mut().unwrap();
            let i = step - 5;
            let (tp, batch) = (p.markers()[i].tp().clone(), p.markers()[i].batch().clone());
            h.raw_marker(&tp, &batch);
            p.ack_marker(&tp).unwrap();
        }
        7 => {
            let p = plan.as_mut().unwrap();
            for o in p.offsets_to_store() {
                h.committed
                    .insert((o.group.clone(), o.tp.clone()), o.offset);
            }
            p.ack_offsets_stored();
        }
        8 => {
            let p = plan.take().unwrap();
            h.coord().complete(p).unwrap();
        }
        _ => unreachable!("only {STEPS} steps"),
    }
}

#[test]
fn a_crash_at_any_step_recovers_all_or_nothing() {
    for crash_after in 0..=STEPS {
        let mut h = Harness::new();
        let mut plan = None;
        for step in 0..crash_after {
            run_step(&mut h, step, &mut plan);
        }
        drop(plan);
        let decided = crash_after > 4;
        let plans = h.crash_and_reopen();
        let expected_plans = usize::from(decided && crash_after < STEPS);
        assert_eq!(
            plans.len(),
            expected_plans,
            "crash after {crash_after} steps"
        );
        for plan in plans {
            h.finish(plan);
        }
        // The restarted producer (a newer epoch) cleans up whatever is open.
        if crash_after > 0 {
            match h.coord().begin("tx", 1, 1).unwrap() {
                mk_txn::Begin::Started => {}
                mk_txn::Begin::CompletePriorFirst(p) => {
                    assert_eq!(p.outcome(), Outcome::Abort, "crash after {crash_after}");
                    assert!(!decided);
                    h.finish(p);
                }
            }
        }
        let (a, b) = (tp("out", 0), tp("out", 1));
        let (ra, rb) = (h.read_committed(&a), h.read_committed(&b));
        let offset = h.committed_offset("g", &tp("in", 0));
        if decided {
            assert_eq!(
                (ra, rb, offset),
                (vec!["a".to_string()], vec!["b".to_string()], Some(10))
            );
        } else {
            assert!(
                ra.is_empty() && rb.is_empty() && offset.is_none(),
                "crash after {crash_after}"
            );
        }
        assert_eq!(h.lso(&a), h.hw(&a), "crash after {crash_after}");
        assert_eq!(h.lso(&b), h.hw(&b), "crash after {crash_after}");
    }
}

fn open_raw(h: &Harness) -> mk_txn::Recovered {
    let clock: SharedClock = Arc::new(h.clock.clone());
    TransactionCoordinator::open(&h.journal_path(), TxnConfig::default(), clock).unwrap()
}

/// A journal with three valid lines for "tx": Ongoing, Ongoing with a
/// partition, and the first offset.
fn journal_with_a_send() -> Harness {
    let mut h = Harness::new();
    h.begin("tx", 1, 0);
    h.send("tx", 0, &tp("out", 0), "x");
    h
}

fn assert_tail_is_cut(tail: &[u8]) {
    let mut h = journal_with_a_send();
    h.crash_coordinator();
    let valid = std::fs::read(h.journal_path()).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(h.journal_path())
        .unwrap();
    f.write_all(tail).unwrap();
    drop(f);

    let recovered = open_raw(&h);
    assert_eq!(
        recovered.truncated_bytes,
        tail.len() as u64,
        "tail {tail:?}"
    );
    assert!(recovered.plans.is_empty());
    let d = recovered.coordinator.describe("tx").unwrap();
    assert_eq!(d.state, TxnState::Ongoing);
    assert_eq!(d.partitions, vec![(tp("out", 0), Some(0))]);
    let text = std::fs::read_to_string(h.journal_path()).unwrap();
    assert!(text.len() <= valid.len(), "the tail is gone");
    assert!(text.ends_with('\n'));
    assert!(!text.contains("garbage") && !text.contains("PrepareCommit"));
    drop(recovered);
    assert_eq!(open_raw(&h).truncated_bytes, 0, "the cut is durable");
}

/// A PrepareCommit line for "tx" as the coordinator would write it.
fn prepare_commit_line() -> String {
    let mut h = journal_with_a_send();
    drop(h.coord().commit("tx", 0).unwrap());
    let text = h.journal_text();
    text.lines().last().unwrap().to_string() + "\n"
}

#[test]
fn torn_journal_tail_of_garbage_is_truncated() {
    assert_tail_is_cut(b"garbage that is not a journal line\n");
    assert_tail_is_cut(b"\x00\x00\x00\x00");
}

#[test]
fn torn_journal_tail_of_half_a_line_is_truncated() {
    let line = prepare_commit_line();
    assert_tail_is_cut(&line.as_bytes()[..line.len() / 2]);
    // Everything but the newline is still a torn line.
    assert_tail_is_cut(&line.as_bytes()[..line.len() - 1]);
}

#[test]
fn torn_journal_tail_with_a_crc_mismatch_is_truncated() {
    let line = prepare_commit_line();
    let corrupt = line.replacen("\"producer_epoch\":0", "\"producer_epoch\":9", 1);
    assert_ne!(corrupt, line);
    assert_tail_is_cut(corrupt.as_bytes());
}

#[test]
fn recovery_stops_at_the_first_bad_line_even_if_valid_lines_follow() {
    let line = prepare_commit_line();
    let mut tail = b"bad line\n".to_vec();
    tail.extend_from_slice(line.as_bytes());
    assert_tail_is_cut(&tail);
}

#[test]
fn journal_snapshot_on_clean_close_is_compact_and_round_trips() {
    let mut h = Harness::new();
    let (a, b) = (tp("out", 0), tp("out", 1));
    for round in 0..5 {
        for (i, id) in ["x", "y", "z"].iter().enumerate() {
            let pid = i as i64 + 1;
            h.begin(id, pid, 0);
            h.send(id, 0, &a, "v");
            h.send(id, 0, &b, "v");
            h.coord()
                .send_offsets(id, 0, "g", [(tp("in", 0), round)])
                .unwrap();
            if i == 1 {
                h.abort(id, 0);
            } else {
                h.commit(id, 0);
            }
        }
    }
    h.begin("open", 9, 2);
    h.send("open", 2, &a, "pending");
    h.coord()
        .send_offsets("open", 2, "g2", [(tp("in", 1), 77)])
        .unwrap();
    let before = h.coord_ref().list();
    let lines_before = h.journal_text().lines().count();

    h.close_coordinator();
    let text = h.journal_text();
    assert!(
        lines_before > 4 * 5,
        "{lines_before} lines before the snapshot"
    );
    assert_eq!(text.lines().count(), 4, "one line per id:\n{text}");
    assert!(
        text.lines().all(|l| l.ends_with("\"clean\":true}")),
        "{text}"
    );
    assert!(h.open_coordinator().is_empty());
    assert_eq!(h.coord_ref().list(), before);
    // Reopening consumes the clean marks: sends after it are not journaled
    // one by one, so a crash from here on must not trust the sequences.
    let text = h.journal_text();
    assert_eq!(text.lines().count(), 4);
    assert!(
        text.lines().all(|l| l.ends_with("\"clean\":false}")),
        "{text}"
    );

    // A clean close keeps the open transaction committable and its
    // sequences exact: the next send continues at sequence 1.
    let p = h
        .coord()
        .send("open", 2, a.clone(), record("more"))
        .unwrap();
    assert_eq!(p.producer().base_sequence, 1);
    let offset = h.log(&a).append(p.batch().clone()).unwrap().base_offset;
    h.coord().send_appended(p, offset).unwrap();
    h.commit("open", 2);
    assert_eq!(h.committed_offset("g2", &tp("in", 1)), Some(77));
    assert!(
        h.read_committed(&a)
            .ends_with(&["pending".to_string(), "more".to_string()])
    );
}

#[test]
fn an_unclean_restart_fences_sends_of_recovered_epochs_and_makes_open_transactions_abort_only() {
    let mut h = Harness::new();
    let out = h.ongoing("a");
    h.send("tx", 0, &out, "b");
    h.begin("done", 2, 0);
    h.commit("done", 0);
    assert!(h.crash_and_reopen().is_empty());

    let c = h.coord();
    let err = c.send("tx", 0, out.clone(), record("c")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ProducerFenced);
    assert!(
        err.to_string().contains("sequence numbers are unknown"),
        "{err}"
    );
    assert_eq!(
        c.commit("tx", 0).unwrap_err().code(),
        ErrorCode::InvalidTxnState
    );
    assert_eq!(
        c.begin("done", 2, 0).unwrap_err().code(),
        ErrorCode::ProducerFenced
    );
    let d = c.describe("tx").unwrap();
    assert!(d.abort_only.unwrap().contains("without a clean shutdown"));

    // Aborting is still allowed, and a newer epoch starts with exact sequences.
    h.abort("tx", 0);
    h.begin("tx", 1, 1);
    let p = h.coord().send("tx", 1, out.clone(), record("c")).unwrap();
    assert_eq!(p.producer().base_sequence, 0);
    drop(p);
    h.begin("done", 2, 1);
}

/// A coordinator whose journal faults the test controls, with transaction
/// "tx" Ongoing after one record on out-0.
fn ongoing_with_journal_faults() -> (Harness, Arc<JournalFaults>) {
    let config = TxnConfig::default();
    let faults = config.faults.clone();
    let mut h = Harness::with_config(config);
    h.ongoing("x");
    (h, faults)
}

#[test]
fn a_journal_write_failure_changes_nothing_and_fails_the_coordinator() {
    let (mut h, faults) = ongoing_with_journal_faults();

    faults.fail_writes_after(0);
    let err = h.coord().commit("tx", 0).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StorageError);
    assert!(err.is_storage_failure());
    assert!(h.coord_ref().is_failed());
    assert_eq!(
        h.state("tx"),
        TxnState::Ongoing,
        "not journaled, not applied"
    );
    faults.clear();
    let later = h.coord().abort("tx", 0).unwrap_err();
    assert_eq!(later.code(), ErrorCode::StorageError);
    assert!(
        later.to_string().contains("after a journal failure"),
        "{later}"
    );

    assert!(h.crash_and_reopen().is_empty());
    assert_eq!(h.state("tx"), TxnState::Ongoing);
}

#[test]
fn a_write_torn_by_a_crash_loses_only_that_state_change() {
    let (mut h, faults) = ongoing_with_journal_faults();
    faults.tear_write_after(0);
    assert_eq!(
        h.coord().commit("tx", 0).unwrap_err().code(),
        ErrorCode::StorageError
    );
    faults.clear();
    let torn = h.journal_text();
    assert!(!torn.ends_with('\n'), "half a line is on disk");
    assert!(
        h.crash_and_reopen().is_empty(),
        "the torn PrepareCommit never happened"
    );
    assert_eq!(h.state("tx"), TxnState::Ongoing);
    assert!(h.journal_text().ends_with('\n'));
    h.abort("tx", 0);
    assert!(h.read_committed(&tp("out", 0)).is_empty());
}

#[test]
fn a_busy_journal_compacts_itself_without_a_clean_close() {
    let config = TxnConfig {
        journal_compaction_lines: 20,
        ..TxnConfig::default()
    };
    let mut h = Harness::with_config(config);
    let out = tp("out", 0);
    for _ in 0..50 {
        h.begin("tx", 1, 0);
        h.send("tx", 0, &out, "v");
        h.commit("tx", 0);
    }
    let lines = h.journal_text().lines().count();
    assert!(lines <= 21, "{lines} lines");
    assert!(h.crash_and_reopen().is_empty());
    assert_eq!(h.state("tx"), TxnState::CompleteCommit);
    assert_eq!(h.read_committed(&out).len(), 50);
}

#[test]
fn opening_a_journal_in_a_missing_directory_is_a_storage_error() {
    let dir = tempfile::tempdir().unwrap();
    let clock: SharedClock = Arc::new(mk_core::ManualClock::new(0));
    let path = dir.path().join("missing").join("transactions.journal");
    let err = TransactionCoordinator::open(&path, TxnConfig::default(), clock).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StorageError);
}
