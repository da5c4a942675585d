//! Durability of the coordinator: crash after PrepareCommit, crashes at
//! every step of a transaction (also among its markers), Ongoing
//! transactions across a crash, torn and corrupt journal tails, the clean
//! close snapshot, journals of the first format, journal write failures and
//! automatic compaction.

mod common;

use common::{Harness, Session, decided_on_out0, tp, tx_on_out0, tx_on_out0_and_out1};
use mk_core::{ErrorCode, SharedClock, TopicPartition};
use mk_txn::{JournalFaults, Outcome, TransactionCoordinator, TxnConfig, TxnState};
use std::io::Write;
use std::sync::Arc;

#[test]
fn crash_after_prepare_commit_recovers_to_a_committed_transaction_with_markers_and_offsets() {
    let (mut h, a, b, s) = tx_on_out0_and_out1();
    let input = tp("in", 0);
    h.stage(&s, "g", &[(input.clone(), 42)]);
    // The coordinator journals PrepareCommit and returns its plan; the
    // process dies before executing any of it.
    let plan = h.end_plan(&s, Outcome::Commit);
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
    let (mut h, a, b, s) = tx_on_out0_and_out1();
    let plan = h.end_plan(&s, Outcome::Commit);
    // Only the first marker lands before the crash.
    let first = plan.markers()[0].batch().clone();
    h.raw_marker(&a, &first);
    drop(plan);
    let plans = h.crash_and_reopen();
    assert_eq!(h.read_committed(&a), vec!["a1"]);
    assert!(h.read_committed(&b).is_empty());

    // The recovery plan writes both markers again (a's twice), and even a
    // second run of the whole plan's markers changes nothing visible.
    let duplicates: Vec<_> = plans[0]
        .markers()
        .iter()
        .map(|m| (m.tp().clone(), m.batch().clone()))
        .collect();
    for plan in plans {
        h.finish(plan);
    }
    for (tp, batch) in &duplicates {
        h.raw_marker(tp, batch);
    }
    assert_eq!(h.read_committed(&a), vec!["a1"]);
    assert_eq!(h.read_committed(&b), vec!["b1"]);
    assert_eq!(h.lso(&a), h.hw(&a));
    assert_eq!(h.lso(&b), h.hw(&b));
    assert!(h.coord_ref().pending_completions().is_empty());
}

#[test]
fn crash_after_prepare_abort_recovers_to_an_aborted_transaction() {
    let (mut h, out, _) = decided_on_out0("x", 1, Outcome::Abort);
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

/// The steps of one read-process-write transaction over two partitions, in
/// order: InitProducerId, AddPartitionsToTxn + Produce on each partition,
/// AddOffsetsToTxn, TxnOffsetCommit, EndTxn(commit), each marker, the
/// offsets, complete.
const STEPS: usize = 11;
/// The step after which the commit is decided (EndTxn's PrepareCommit).
const DECIDED_AFTER: usize = 7;

fn run_step(
    h: &mut Harness,
    step: usize,
    s: &mut Option<Session>,
    plan: &mut Option<mk_txn::CompletionPlan>,
) {
    let (a, b) = (tp("out", 0), tp("out", 1));
    match step {
        0 => *s = Some(h.init("tx")),
        1 => {
            let s = s.clone().unwrap();
            h.add(&s, &a);
            h.add(&s, &b);
        }
        2 => {
            h.produce(&s.clone().unwrap(), &a, "a").unwrap();
        }
        3 => {
            h.produce(&s.clone().unwrap(), &b, "b").unwrap();
        }
        4 => {
            let s = s.clone().unwrap();
            h.coord().add_offsets(&s.id, s.pid, s.epoch, "g").unwrap();
        }
        5 => {
            let s = s.clone().unwrap();
            h.coord()
                .stage_offsets(&s.id, s.pid, s.epoch, "g", [(tp("in", 0), 10)])
                .unwrap();
        }
        6 => *plan = Some(h.end_plan(&s.clone().unwrap(), Outcome::Commit)),
        7 | 8 => {
            let p = plan.as_mut().unwrap();
            let i = step - 7;
            let (tp, batch) = (p.markers()[i].tp().clone(), p.markers()[i].batch().clone());
            h.raw_marker(&tp, &batch);
            p.ack_marker(&tp).unwrap();
        }
        9 => {
            let p = plan.as_mut().unwrap();
            for o in p.offsets_to_store() {
                h.committed
                    .insert((o.group.clone(), o.tp.clone()), o.offset);
            }
            p.ack_offsets_stored();
        }
        10 => {
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
        let (mut s, mut plan) = (None, None);
        for step in 0..crash_after {
            run_step(&mut h, step, &mut s, &mut plan);
        }
        drop(plan);
        let decided = crash_after >= DECIDED_AFTER;
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
        // The restarted producer (a new session) cleans up whatever is open.
        if crash_after > 0 {
            let before = h.coord_ref().describe("tx").unwrap();
            h.init("tx");
            assert!(
                before.state != TxnState::Ongoing || !decided,
                "crash after {crash_after}"
            );
        }
        let (a, b) = (tp("out", 0), tp("out", 1));
        let (ra, rb) = (h.read_committed(&a), h.read_committed(&b));
        let offset = h.committed_offset("g", &tp("in", 0));
        if decided {
            assert_eq!(
                (ra, rb, offset),
                (vec!["a".to_string()], vec!["b".to_string()], Some(10)),
                "crash after {crash_after}"
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

#[test]
fn an_ongoing_transaction_stays_ongoing_after_a_crash_and_its_producer_goes_on() {
    let (mut h, out, s) = tx_on_out0();
    h.send(&s, &out, "before-crash");
    h.stage(&s, "g", &[(tp("in", 0), 3)]);
    assert!(h.crash_and_reopen().is_empty());
    let d = h.coord_ref().describe("tx").unwrap();
    assert_eq!(d.state, TxnState::Ongoing);
    assert_eq!(d.partitions, vec![out.clone()]);
    assert_eq!(h.lso(&out), 0, "still open");
    // The producer continues with its own sequences and commits.
    h.send(&s, &out, "after-crash");
    h.commit(&s);
    assert_eq!(h.read_committed(&out), vec!["before-crash", "after-crash"]);
    assert_eq!(h.committed_offset("g", &tp("in", 0)), Some(3));
}

fn open_raw(h: &Harness) -> mk_txn::Recovered {
    let clock: SharedClock = Arc::new(h.clock.clone());
    TransactionCoordinator::open(&h.journal_path(), TxnConfig::default(), clock).unwrap()
}

/// A journal whose last valid state of "tx" is Ongoing with `out-0` added.
fn journal_with_a_send() -> (Harness, Session) {
    let mut h = Harness::new();
    let s = h.init("tx");
    h.send(&s, &tp("out", 0), "x");
    (h, s)
}

fn assert_tail_is_cut(tail: &[u8]) {
    let (mut h, _) = journal_with_a_send();
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
    assert_eq!(d.partitions, vec![tp("out", 0)]);
    let text = std::fs::read_to_string(h.journal_path()).unwrap();
    assert!(text.len() <= valid.len(), "the tail is gone");
    assert!(text.ends_with('\n'));
    assert!(!text.contains("garbage") && !text.contains("PrepareCommit"));
    drop(recovered);
    assert_eq!(open_raw(&h).truncated_bytes, 0, "the cut is durable");
}

/// A PrepareCommit line for "tx" as the coordinator would write it.
fn prepare_commit_line() -> String {
    let (mut h, s) = journal_with_a_send();
    drop(h.end_plan(&s, Outcome::Commit));
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
fn a_bad_line_followed_by_valid_lines_is_damage_and_refused_not_cut() {
    let line = prepare_commit_line();
    let (mut h, _) = journal_with_a_send();
    h.crash_coordinator();
    let valid_lines = h.journal_text().lines().count();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(h.journal_path())
        .unwrap();
    f.write_all(b"bad line\n").unwrap();
    f.write_all(line.as_bytes()).unwrap();
    drop(f);
    let before = std::fs::read(h.journal_path()).unwrap();
    let clock: SharedClock = Arc::new(h.clock.clone());
    for _ in 0..2 {
        let e =
            TransactionCoordinator::open(&h.journal_path(), TxnConfig::default(), clock.clone())
                .unwrap_err();
        assert_eq!(e.code(), mk_core::ErrorCode::StorageError, "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("line {}", valid_lines + 1))
                && msg.contains("1 valid line(s) follow")
                && msg.contains("not a torn append"),
            "{msg}"
        );
        assert_eq!(
            std::fs::read(h.journal_path()).unwrap(),
            before,
            "nothing was cut"
        );
    }
}

#[test]
fn journal_snapshot_on_clean_close_is_compact_and_round_trips() {
    let mut h = Harness::new();
    let (a, b) = (tp("out", 0), tp("out", 1));
    let sessions: Vec<Session> = ["x", "y", "z"].iter().map(|id| h.init(id)).collect();
    for round in 0..5 {
        for (i, s) in sessions.iter().enumerate() {
            h.send(s, &a, "v");
            h.send(s, &b, "v");
            h.stage(s, "g", &[(tp("in", 0), round)]);
            if i == 1 {
                h.abort(s);
            } else {
                h.commit(s);
            }
        }
    }
    let open = h.init("open");
    h.send(&open, &a, "pending");
    h.stage(&open, "g2", &[(tp("in", 1), 77)]);
    let before = h.coord_ref().list();
    let lines_before = h.journal_text().lines().count();

    h.close_coordinator();
    let text = h.journal_text();
    assert!(
        lines_before > 4 * 5,
        "{lines_before} lines before the snapshot"
    );
    assert_eq!(text.lines().count(), 4, "one line per id:\n{text}");
    assert!(h.open_coordinator().is_empty());
    assert_eq!(h.coord_ref().list(), before);

    // The open transaction goes on after the clean restart.
    h.send(&open, &a, "more");
    h.commit(&open);
    assert_eq!(h.committed_offset("g2", &tp("in", 1)), Some(77));
    assert!(
        h.read_committed(&a)
            .ends_with(&["pending".to_string(), "more".to_string()])
    );
}

#[test]
fn a_journal_of_the_first_format_opens_and_its_transactions_go_on() {
    let mut h = Harness::new();
    h.crash_coordinator();
    // Lines as the teaching model's coordinator wrote them: an Ongoing
    // transaction with staged offsets, and a prepared commit.
    let lines = [
        r#"{"id":"open","state":"Ongoing","producer_id":1,"producer_epoch":3,"start_ms":1000000,"partitions":[{"topic":"out","partition":0,"first_offset":null}],"offsets":[{"group":"g","topic":"in","partition":0,"offset":4}],"sequences":[{"topic":"out","partition":0,"next":0}],"clean":false}"#,
        r#"{"id":"decided","state":"PrepareCommit","producer_id":2,"producer_epoch":0,"start_ms":1000000,"partitions":[{"topic":"out","partition":1,"first_offset":0}],"offsets":[],"sequences":[],"clean":true}"#,
    ];
    let text: String = lines
        .iter()
        .map(|j| format!("{:08x} {j}\n", crc32c::crc32c(j.as_bytes())))
        .collect();
    std::fs::write(h.journal_path(), text).unwrap();
    let plans = h.open_coordinator();
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].transactional_id(), "decided");
    for plan in plans {
        assert_eq!(h.finish(plan), TxnState::CompleteCommit);
    }
    let d = h.coord_ref().describe("open").unwrap();
    assert_eq!((d.state, d.producer_epoch), (TxnState::Ongoing, 3));
    assert_eq!(d.groups, vec!["g"]);
    assert_eq!(d.timeout_ms, h.config.transaction_timeout_ms);
    let s = Session {
        id: "open".into(),
        pid: 1,
        epoch: 3,
    };
    h.send(&s, &tp("out", 0), "v");
    h.commit(&s);
    assert_eq!(h.committed_offset("g", &tp("in", 0)), Some(4));
    // The journal is rewritten in today's format.
    assert!(!h.journal_text().contains("\"sequences\""));
}

/// A harness whose journal faults the test injects, and transaction `tx`
/// ongoing with one record on `out-0`.
fn ongoing_with_faults() -> (Harness, Arc<JournalFaults>, Session, TopicPartition) {
    let config = TxnConfig::default();
    let faults = config.faults.clone();
    let mut h = Harness::with_config(config);
    let out = tp("out", 0);
    let s = h.init("tx");
    h.send(&s, &out, "x");
    (h, faults, s, out)
}

#[test]
fn a_journal_write_failure_changes_nothing_and_fails_the_coordinator() {
    let (mut h, faults, s, out) = ongoing_with_faults();

    faults.fail_writes_after(0);
    let err = h
        .coord()
        .end_txn(&s.id, s.pid, s.epoch, Outcome::Commit)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::StorageError);
    assert!(err.is_storage_failure());
    assert!(h.coord_ref().is_failed());
    assert_eq!(
        h.state("tx"),
        TxnState::Ongoing,
        "not journaled, not applied"
    );
    faults.clear();
    let later = h
        .coord()
        .end_txn(&s.id, s.pid, s.epoch, Outcome::Abort)
        .unwrap_err();
    assert_eq!(later.code(), ErrorCode::StorageError);
    assert!(
        later.to_string().contains("after a journal failure"),
        "{later}"
    );
    let verify = h.produce(&s, &out, "y").unwrap_err();
    assert_eq!(verify.code(), ErrorCode::StorageError);

    assert!(h.crash_and_reopen().is_empty());
    assert_eq!(h.state("tx"), TxnState::Ongoing);
}

#[test]
fn a_write_torn_by_a_crash_loses_only_that_state_change() {
    let (mut h, faults, s, out) = ongoing_with_faults();
    faults.tear_write_after(0);
    assert_eq!(
        h.coord()
            .end_txn(&s.id, s.pid, s.epoch, Outcome::Commit)
            .unwrap_err()
            .code(),
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
    h.abort(&s);
    assert!(h.read_committed(&out).is_empty());
}

#[test]
fn a_busy_journal_compacts_itself_without_a_clean_close() {
    let config = TxnConfig {
        journal_compaction_lines: 20,
        ..TxnConfig::default()
    };
    let mut h = Harness::with_config(config);
    let out = tp("out", 0);
    let s = h.init("tx");
    for _ in 0..50 {
        h.send(&s, &out, "v");
        h.commit(&s);
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
