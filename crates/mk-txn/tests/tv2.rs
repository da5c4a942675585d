//! Transactions v2 (KIP-890 part 2) in the coordinator: the epoch bump at
//! every end (markers under the new epoch, the old one fenced), retries of
//! a lost EndTxn answer, implicit partitions on append, the abort with
//! nothing open, and the move to a fresh producer id when the epochs run
//! out — across a crash too.

mod common;

use common::{Harness, Session, TIMEOUT_MS, code, tp, tx_on_out0};
use mk_core::ErrorCode;
use mk_txn::{EndTxnV2, MAX_PRODUCER_EPOCH, Outcome, TxnError, TxnState, TxnVersion};

/// A Produce v12 batch: the coordinator adds the partition if needed, then
/// the batch is appended.
fn produce_v2(
    h: &mut Harness,
    s: &Session,
    out: &mk_core::TopicPartition,
    value: &str,
) -> Result<i64, TxnError> {
    h.produce_as(s, out, value, TxnVersion::V2)
}

/// EndTxn v5 executed to the end; returns the session the producer goes on
/// with.
fn end_v2(h: &mut Harness, s: &Session, outcome: Outcome) -> Session {
    let (pid, epoch) = match h
        .coord()
        .end_txn_v2(&s.id, s.pid, s.epoch, outcome, None)
        .unwrap()
    {
        EndTxnV2::Execute(plan) => {
            let next = plan.continue_as();
            h.finish(plan);
            next
        }
        EndTxnV2::AlreadyComplete {
            producer_id,
            producer_epoch,
        } => (producer_id, producer_epoch),
        EndTxnV2::NeedsProducerId => panic!("epochs exhausted"),
    };
    Session {
        id: s.id.clone(),
        pid,
        epoch,
    }
}

#[test]
fn every_end_bumps_the_epoch_the_markers_carry_it_and_the_old_epoch_is_fenced() {
    let mut h = Harness::new();
    let (a, b) = (tp("out", 0), tp("out", 1));
    let s = h.init("tx");
    // No AddPartitionsToTxn: the first batch begins the transaction.
    produce_v2(&mut h, &s, &a, "a1").unwrap();
    produce_v2(&mut h, &s, &b, "b1").unwrap();
    let d = h.coord_ref().describe("tx").unwrap();
    assert_eq!(d.state, TxnState::Ongoing);
    assert_eq!(d.partitions, vec![a.clone(), b.clone()]);
    // An Ongoing transaction ends with a plan.
    let plan = decided_end(&mut h, &s, Outcome::Commit, None);
    assert_eq!(plan.producer().producer_epoch, s.epoch + 1);
    assert_eq!(plan.continue_as(), (s.pid, s.epoch + 1));
    assert_eq!(plan.markers().len(), 2);
    for m in plan.markers() {
        assert_eq!(m.batch().producer().producer_epoch, s.epoch + 1);
    }
    assert_eq!(h.finish(plan), TxnState::CompleteCommit);
    assert_eq!(h.epoch("tx"), s.epoch + 1);
    assert_eq!(h.read_committed(&a), vec!["a1"]);
    // A late batch of the ended transaction's epoch is refused, and cannot
    // begin a transaction.
    assert_eq!(
        code(produce_v2(&mut h, &s, &a, "late")),
        ErrorCode::InvalidProducerEpoch
    );
    assert_eq!(h.state("tx"), TxnState::CompleteCommit);
    // The producer goes on with the bumped epoch; the next end bumps again.
    let s2 = Session {
        epoch: s.epoch + 1,
        ..s.clone()
    };
    produce_v2(&mut h, &s2, &a, "a2").unwrap();
    assert_eq!(
        h.coord_ref().describe("tx").unwrap().partitions,
        vec![a.clone()]
    );
    // The old epoch is not a retry of anything now: fenced.
    assert_eq!(
        code(end_again(&mut h, &s, Outcome::Abort)),
        ErrorCode::ProducerFenced
    );
    let s3 = end_v2(&mut h, &s2, Outcome::Abort);
    assert_eq!(s3.epoch, s.epoch + 2);
    assert_eq!(h.read_committed(&a), vec!["a1"]);
    assert_eq!(h.read_uncommitted(&a), vec!["a1", "a2"]);
}

/// A harness whose id "tx" has a transaction open on out-0 with `value`.
fn one_open_transaction(value: &str) -> (Harness, Session, mk_core::TopicPartition) {
    let (mut h, out, s) = tx_on_out0();
    produce_v2(&mut h, &s, &out, value).unwrap();
    (h, s, out)
}

#[test]
fn a_retry_of_a_lost_end_answer_gets_the_same_answer() {
    let (mut h, s, out) = one_open_transaction("x");
    let plan = decided_end(&mut h, &s, Outcome::Commit, None);
    // While the plan executes: the retry waits, the new epoch too.
    for epoch in [s.epoch, s.epoch + 1] {
        let r = h
            .coord()
            .end_txn_v2(&s.id, s.pid, epoch, Outcome::Commit, None);
        assert_eq!(code(r), ErrorCode::ConcurrentTransactions, "epoch {epoch}");
    }
    // The plan is lost: the retry gets it again, with the same identity.
    drop(plan);
    let again = decided_end(&mut h, &s, Outcome::Commit, None);
    assert_eq!(again.continue_as(), (s.pid, s.epoch + 1));
    h.finish(again);
    // Complete: the same outcome answers the bumped identity again, the
    // other outcome is INVALID_TXN_STATE, an older epoch is fenced.
    assert_eq!(
        answered(end_again(&mut h, &s, Outcome::Commit)),
        (s.pid, s.epoch + 1)
    );
    for (pid, epoch, outcome, expected) in [
        (s.pid, s.epoch, Outcome::Abort, ErrorCode::InvalidTxnState),
        (
            s.pid,
            s.epoch + 7,
            Outcome::Abort,
            ErrorCode::ProducerFenced,
        ),
        (
            s.pid + 1,
            s.epoch,
            Outcome::Commit,
            ErrorCode::InvalidProducerIdMapping,
        ),
    ] {
        let r = h.coord().end_txn_v2(&s.id, pid, epoch, outcome, None);
        assert_eq!(
            code(r),
            expected,
            "producer {pid}, epoch {epoch}, {outcome:?}"
        );
    }
    assert_eq!(h.read_committed(&out), vec!["x"]);
}

#[test]
fn an_abort_with_nothing_open_bumps_the_epoch_and_marks_nothing() {
    let (mut h, out, s) = tx_on_out0();
    // A commit needs a transaction.
    assert_eq!(
        code(end_again(&mut h, &s, Outcome::Commit)),
        ErrorCode::InvalidTxnState
    );
    produce_v2(&mut h, &s, &out, "x").unwrap();
    let s2 = end_v2(&mut h, &s, Outcome::Commit);
    // Complete, nothing open: an abort bumps the epoch without re-marking
    // the previous transaction's partitions.
    let plan = decided_end(&mut h, &s2, Outcome::Abort, None);
    assert!(plan.markers().is_empty());
    assert_eq!(plan.continue_as(), (s.pid, s2.epoch + 1));
    assert_eq!(h.finish(plan), TxnState::CompleteAbort);
    assert_eq!(h.read_uncommitted(&out), vec!["x"]);
    assert_eq!(h.read_committed(&out), vec!["x"]);
}

#[test]
fn implicit_partitions_follow_the_transactions_rules() {
    let mut h = Harness::new();
    let (a, b) = (tp("out", 0), tp("out", 1));
    let s = h.init("tx");
    let stranger = Session {
        id: "nobody".into(),
        ..s.clone()
    };
    assert_eq!(
        code(produce_v2(&mut h, &stranger, &a, "x")),
        ErrorCode::InvalidProducerIdMapping
    );
    produce_v2(&mut h, &s, &a, "x").unwrap();
    // Abort-only: nothing more joins.
    h.coord().mark_abort_only("tx", s.epoch, "a send failed");
    assert_eq!(
        code(produce_v2(&mut h, &s, &b, "y")),
        ErrorCode::InvalidTxnState
    );
    // While the end is being decided, a batch of the new epoch waits.
    let plan = decided_end(&mut h, &s, Outcome::Abort, None);
    let next = Session {
        epoch: s.epoch + 1,
        ..s.clone()
    };
    assert_eq!(
        code(produce_v2(&mut h, &next, &b, "z")),
        ErrorCode::ConcurrentTransactions
    );
    h.finish(plan);
    produce_v2(&mut h, &next, &b, "z").unwrap();
    let d = h.coord_ref().describe("tx").unwrap();
    assert_eq!((d.state, d.partitions), (TxnState::Ongoing, vec![b]));
    // The timeout counts from the implicit begin.
    h.clock.advance(TIMEOUT_MS + 1);
    let expired = h.coord().expire_transactions().unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].markers()[0].tp(), &tp("out", 1));
}

/// A harness whose id "tx" (producer id 1) has one epoch left: its
/// session holds `MAX_PRODUCER_EPOCH - 1`, so its next end exhausts them.
fn last_epoch_session() -> (Harness, Session) {
    let mut h = Harness::with_idle_tx_at(MAX_PRODUCER_EPOCH - 2);
    let s = h.init("tx");
    assert_eq!(s.epoch, MAX_PRODUCER_EPOCH - 1);
    (h, s)
}

/// EndTxn v5 of `s` that decides its transaction: the plan to execute.
fn decided_end(
    h: &mut Harness,
    s: &Session,
    outcome: Outcome,
    fresh: Option<i64>,
) -> mk_txn::CompletionPlan {
    match h.coord().end_txn_v2(&s.id, s.pid, s.epoch, outcome, fresh) {
        Ok(EndTxnV2::Execute(plan)) => plan,
        other => panic!("expected a plan, got {other:?}"),
    }
}

/// EndTxn v5 of `s`, as its retry would send it.
fn end_again(h: &mut Harness, s: &Session, outcome: Outcome) -> Result<EndTxnV2, TxnError> {
    h.coord().end_txn_v2(&s.id, s.pid, s.epoch, outcome, None)
}

fn answered(r: Result<EndTxnV2, TxnError>) -> (i64, i32) {
    match r.unwrap() {
        EndTxnV2::AlreadyComplete {
            producer_id,
            producer_epoch,
        } => (producer_id, producer_epoch),
        other => panic!("expected the answer of a complete end, got {other:?}"),
    }
}

#[test]
fn exhausted_epochs_move_the_id_to_a_fresh_producer_id_at_the_end_also_across_a_crash() {
    let (mut h, s) = last_epoch_session();
    let out = tp("out", 0);
    produce_v2(&mut h, &s, &out, "last").unwrap();
    let r = h
        .coord()
        .end_txn_v2(&s.id, s.pid, s.epoch, Outcome::Commit, None)
        .unwrap();
    assert!(matches!(r, EndTxnV2::NeedsProducerId), "{r:?}");
    // The same producer id is no fresh one.
    let r = h
        .coord()
        .end_txn_v2(&s.id, s.pid, s.epoch, Outcome::Commit, Some(s.pid))
        .unwrap();
    assert!(matches!(r, EndTxnV2::NeedsProducerId), "{r:?}");
    let plan = decided_end(&mut h, &s, Outcome::Commit, Some(9));
    // The markers close the old producer id at the last epoch.
    assert_eq!(plan.producer().producer_id, s.pid);
    assert_eq!(plan.producer().producer_epoch, MAX_PRODUCER_EPOCH);
    assert_eq!(plan.continue_as(), (9, 0));
    // A crash before the markers: recovery completes the end and moves on.
    drop(plan);
    let plans = h.crash_and_reopen();
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].continue_as(), (9, 0));
    for plan in plans {
        h.finish(plan);
    }
    let d = h.coord_ref().describe("tx").unwrap();
    assert_eq!(
        (d.state, d.producer_id, d.producer_epoch),
        (TxnState::CompleteCommit, 9, 0)
    );
    assert_eq!(h.read_committed(&out), vec!["last"]);
    let next = Session {
        id: "tx".into(),
        pid: 9,
        epoch: 0,
    };
    produce_v2(&mut h, &next, &out, "fresh").unwrap();
    assert_eq!(end_v2(&mut h, &next, Outcome::Commit).epoch, 1);
    assert_eq!(h.read_committed(&out), vec!["last", "fresh"]);
}

#[test]
fn a_retried_end_after_the_move_to_a_fresh_producer_id_gets_the_same_answer_also_after_a_crash() {
    let (mut h, s) = last_epoch_session();
    let out = tp("out", 0);
    produce_v2(&mut h, &s, &out, "last").unwrap();
    let plan = decided_end(&mut h, &s, Outcome::Commit, Some(9));
    h.finish(plan);
    // The answer was lost: the retry names the previous producer id and
    // its last epoch, and learns the fresh identity again.
    assert_eq!(answered(end_again(&mut h, &s, Outcome::Commit)), (9, 0));
    assert_eq!(
        code(end_again(&mut h, &s, Outcome::Abort)),
        ErrorCode::InvalidTxnState
    );
    // Only that identity is a retry: another epoch of the old id is not.
    let other = Session {
        epoch: s.epoch - 1,
        ..s.clone()
    };
    assert_eq!(
        code(end_again(&mut h, &other, Outcome::Commit)),
        ErrorCode::InvalidProducerIdMapping
    );
    // The memory is journaled: after a crash, and after a clean close.
    assert!(h.crash_and_reopen().is_empty());
    assert_eq!(answered(end_again(&mut h, &s, Outcome::Commit)), (9, 0));
    assert!(h.close_and_reopen().is_empty());
    assert_eq!(answered(end_again(&mut h, &s, Outcome::Commit)), (9, 0));
    assert!(
        h.journal_text().contains(r#""previous_producer_id":1"#),
        "{}",
        h.journal_text()
    );
    // Once the fresh identity begins its next transaction the old one is
    // forgotten, as in Kafka.
    let next = Session {
        id: "tx".into(),
        pid: 9,
        epoch: 0,
    };
    produce_v2(&mut h, &next, &out, "fresh").unwrap();
    assert_eq!(
        code(end_again(&mut h, &s, Outcome::Commit)),
        ErrorCode::InvalidProducerIdMapping
    );
    assert!(
        !h.journal_text()
            .lines()
            .last()
            .unwrap()
            .contains("previous_producer_id")
    );
    assert_eq!(end_v2(&mut h, &next, Outcome::Commit).epoch, 1);
    assert_eq!(h.read_committed(&out), vec!["last", "fresh"]);
}

#[test]
fn a_producer_whose_transaction_timed_out_aborts_with_its_old_epoch_and_goes_on() {
    let (mut h, s, out) = one_open_transaction("slow");
    h.clock.advance(TIMEOUT_MS + 1);
    let mut expired = h.coord().expire_transactions().unwrap();
    assert_eq!(expired.len(), 1);
    let fence = expired.pop().unwrap();
    assert_eq!(fence.continue_as(), (s.pid, s.epoch + 1));
    // While the timeout's abort is written: the producer's abort waits.
    assert_eq!(
        code(end_again(&mut h, &s, Outcome::Abort)),
        ErrorCode::ConcurrentTransactions
    );
    drop(fence);
    // A crash before its markers: recovery finishes the abort, and the
    // producer's abort is still the same retry.
    let plans = h.crash_and_reopen();
    assert_eq!(plans.len(), 1);
    for plan in plans {
        h.finish(plan);
    }
    assert_eq!(h.state("tx"), TxnState::CompleteAbort);
    // The zombie's data and its commit are refused; so is the first
    // protocol's EndTxn with the old epoch.
    assert_eq!(
        code(produce_v2(&mut h, &s, &out, "late")),
        ErrorCode::InvalidProducerEpoch
    );
    assert_eq!(
        code(end_again(&mut h, &s, Outcome::Commit)),
        ErrorCode::InvalidTxnState
    );
    assert_eq!(
        code(h.coord().end_txn(&s.id, s.pid, s.epoch, Outcome::Abort)),
        ErrorCode::ProducerFenced
    );
    // Its abort is answered with the fence's epoch, and it goes on.
    assert_eq!(
        answered(end_again(&mut h, &s, Outcome::Abort)),
        (s.pid, s.epoch + 1)
    );
    let next = Session {
        epoch: s.epoch + 1,
        ..s.clone()
    };
    produce_v2(&mut h, &next, &out, "again").unwrap();
    assert_eq!(end_v2(&mut h, &next, Outcome::Commit).epoch, s.epoch + 2);
    assert_eq!(h.read_committed(&out), vec!["again"]);
    // A new session fences it for good.
    let fresh = h.init("tx");
    assert_eq!(fresh.epoch, s.epoch + 3);
    assert_eq!(
        code(end_again(&mut h, &next, Outcome::Abort)),
        ErrorCode::ProducerFenced
    );
}

#[test]
fn a_timeout_that_takes_the_last_epoch_fences_its_producer_for_good() {
    let (mut h, s) = last_epoch_session();
    produce_v2(&mut h, &s, &tp("out", 0), "slow").unwrap();
    h.clock.advance(TIMEOUT_MS + 1);
    for plan in h.coord().expire_transactions().unwrap() {
        h.finish(plan);
    }
    assert_eq!(h.epoch("tx"), MAX_PRODUCER_EPOCH);
    // Handing out the last epoch would leave nothing to fence it with.
    assert_eq!(
        code(end_again(&mut h, &s, Outcome::Abort)),
        ErrorCode::ProducerFenced
    );
}
