//! Visibility semantics on real partition logs: the LSO, read_committed and
//! read_uncommitted around open, committed, aborted and reused
//! transactions.

mod common;

use common::{Harness, tp, tx_on_out0, tx_on_out0_and_out1};
use mk_txn::{Outcome, TxnState, fetch_committed};

#[test]
fn open_transaction_is_invisible_to_read_committed_and_holds_back_the_lso() {
    let mut h = Harness::new();
    let out = tp("out", 0);
    let before = h.plain(&out, "before");
    let s = h.init("tx");
    let first = h.send(&s, &out, "t1");
    // Another producer writes after the open transaction: it must wait too.
    h.plain(&out, "after");
    h.send(&s, &out, "t2");

    assert_eq!(before, 0);
    assert_eq!(h.lso(&out), first, "LSO stops at the open transaction");
    assert!(h.lso(&out) < h.hw(&out));
    assert_eq!(h.read_committed(&out), vec!["before"]);
    assert_eq!(
        h.read_uncommitted(&out),
        vec!["before", "t1", "after", "t2"]
    );

    assert_eq!(h.commit(&s), TxnState::CompleteCommit);
    assert_eq!(h.lso(&out), h.hw(&out));
    assert_eq!(h.read_committed(&out), vec!["before", "t1", "after", "t2"]);
}

#[test]
fn commit_makes_records_and_staged_offsets_visible_together() {
    let (mut h, a, b, s) = tx_on_out0_and_out1();
    let input = tp("in", 0);
    h.stage(&s, "g", &[(input.clone(), 17)]);
    // Staged, not stored.
    assert_eq!(h.committed_offset("g", &input), None);

    let mut plan = h.end_plan(&s, Outcome::Commit);
    // Prepared but not executed: neither records nor offsets are visible.
    assert_eq!(h.state("tx"), TxnState::PrepareCommit);
    assert!(h.read_committed(&a).is_empty());
    assert!(h.read_committed(&b).is_empty());
    assert_eq!(h.committed_offset("g", &input), None);
    let marker_tps: Vec<_> = plan.markers().iter().map(|m| m.tp().clone()).collect();
    assert_eq!(
        marker_tps,
        vec![a.clone(), b.clone()],
        "sorted, one per partition"
    );
    assert_eq!(plan.offsets_to_store().len(), 1);
    assert_eq!(plan.offsets_to_store()[0].offset, 17);

    h.execute(&mut plan);
    assert_eq!(h.coord().complete(plan).unwrap(), TxnState::CompleteCommit);
    assert_eq!(h.read_committed(&a), vec!["a1"]);
    assert_eq!(h.read_committed(&b), vec!["b1"]);
    assert_eq!(h.committed_offset("g", &input), Some(17));
    assert_eq!(h.state("tx"), TxnState::CompleteCommit);
}

#[test]
fn abort_hides_records_forever_and_stores_no_offsets() {
    let (mut h, out, s) = tx_on_out0();
    let input = tp("in", 0);
    h.send(&s, &out, "doomed");
    h.stage(&s, "g", &[(input.clone(), 9)]);
    let plan = h.end_plan(&s, Outcome::Abort);
    assert!(plan.offsets_to_store().is_empty());
    assert_eq!(h.finish(plan), TxnState::CompleteAbort);
    assert_eq!(h.committed_offset("g", &input), None);

    // Later traffic, a later committed transaction of the same id and a
    // full restart do not resurrect the aborted record.
    h.plain(&out, "plain");
    h.send(&s, &out, "kept");
    h.commit(&s);
    assert_eq!(h.read_committed(&out), vec!["plain", "kept"]);
    h.crash_and_reopen();
    assert_eq!(h.read_committed(&out), vec!["plain", "kept"]);
    assert_eq!(h.read_uncommitted(&out), vec!["doomed", "plain", "kept"]);
    assert_eq!(h.committed_offset("g", &input), None);
}

#[test]
fn read_uncommitted_sees_transactional_records_but_never_markers() {
    let (mut h, out, s) = tx_on_out0();
    h.send(&s, &out, "c");
    h.commit(&s);
    h.send(&s, &out, "a");
    h.abort(&s);
    h.send(&s, &out, "open");

    // Offsets 0..5 hold c, COMMIT, a, ABORT, open: three data records and
    // two markers.
    assert_eq!(h.hw(&out), 5);
    let hw = h.hw(&out);
    let raw = h.log(&out).fetch(0, usize::MAX, Some(hw)).unwrap();
    let seen = mk_txn::read_uncommitted(raw);
    assert!(seen.iter().all(|r| r.batch.control.is_none()));
    assert!(seen.iter().all(|r| r.batch.transactional));
    assert_eq!(common::values(seen), vec!["c", "a", "open"]);
    assert_eq!(h.read_committed(&out), vec!["c"]);
}

#[test]
fn reusing_an_id_keeps_earlier_commits_visible_while_the_lso_holds_back_the_new_ones() {
    let (mut h, out, s) = tx_on_out0();
    h.send(&s, &out, "first-1");
    h.send(&s, &out, "first-2");
    h.commit(&s);
    let committed_end = h.hw(&out);

    // The same session (same producer id and epoch) opens a new transaction.
    let new_first = h.send(&s, &out, "second");
    assert_eq!(h.state("tx"), TxnState::Ongoing);
    assert_eq!(new_first, committed_end);

    assert_eq!(h.read_committed(&out), vec!["first-1", "first-2"]);
    assert_eq!(h.lso(&out), new_first);

    // Also through a newer session of the id, which aborts the open one.
    let s2 = h.init("tx");
    assert_eq!(s2.pid, s.pid);
    h.send(&s2, &out, "third");
    assert_eq!(h.read_committed(&out), vec!["first-1", "first-2"]);
    h.commit(&s2);
    assert_eq!(h.read_committed(&out), vec!["first-1", "first-2", "third"]);
}

#[test]
fn fetch_committed_fills_max_records_past_aborted_ones_and_stops_at_the_lso() {
    let (mut h, out, s) = tx_on_out0();
    for i in 0..5 {
        h.send(&s, &out, &format!("x{i}"));
    }
    h.abort(&s);
    for i in 0..3 {
        h.plain(&out, &format!("p{i}"));
    }
    h.send(&s, &out, "open");
    h.plain(&out, "behind-open");

    let hw = h.hw(&out);
    let log = h.log(&out);
    let got = common::values(fetch_committed(log, 0, 2, hw).unwrap());
    assert_eq!(got, vec!["p0", "p1"]);
    let all = common::values(fetch_committed(log, 0, 100, hw).unwrap());
    assert_eq!(all, vec!["p0", "p1", "p2"]);
    // Starting inside the aborted range or at the LSO works too.
    let from_mid = common::values(fetch_committed(log, 3, 100, hw).unwrap());
    assert_eq!(from_mid, vec!["p0", "p1", "p2"]);
    let lso = mk_txn::last_stable_offset(hw, log.first_unstable_offset());
    assert!(fetch_committed(log, lso, 100, hw).unwrap().is_empty());
    assert!(fetch_committed(log, 0, 0, hw).unwrap().is_empty());
    let beyond = fetch_committed(log, hw + 1, 10, hw).unwrap_err();
    assert_eq!(beyond.code(), mk_core::ErrorCode::OffsetOutOfRange);
}

#[test]
fn lso_is_bounded_by_the_high_watermark() {
    let mut h = Harness::new();
    let out = tp("out", 0);
    h.plain(&out, "a");
    h.plain(&out, "b");
    let s = h.init("tx");
    h.send(&s, &out, "t");
    // A high watermark below the open transaction (followers behind).
    let log = h.log(&out);
    assert_eq!(
        mk_txn::last_stable_offset(1, log.first_unstable_offset()),
        1
    );
    let got = common::values(fetch_committed(log, 0, 10, 1).unwrap());
    assert_eq!(got, vec!["a"]);
}
