//! The coordinator's state machine, rule by rule, in Kafka's transaction
//! flow: InitProducerId (ids, epochs, KIP-360, timeouts, fencing of an open
//! transaction), AddPartitionsToTxn, the verification of transactional
//! batches, AddOffsetsToTxn / TxnOffsetCommit staging, EndTxn and its
//! retries, CONCURRENT_TRANSACTIONS, the timeout's epoch fence, abort-only
//! transactions and request validation.

mod common;

use common::{
    Harness, Session, TIMEOUT_MS, assert_refused, code, decided_on_out0, producer, session_on_out0,
    tp, tx_on_out0,
};
use mk_core::{Clock, ErrorCode};
use mk_log::ControlType;
use mk_txn::{EndTxn, InitProducer, MAX_PRODUCER_EPOCH, Outcome, TxnConfig, TxnError, TxnState};

#[test]
fn init_gives_one_producer_id_per_transactional_id_and_bumps_the_epoch_once_per_session() {
    let mut h = Harness::new();
    // A new id needs a producer id from the caller's allocator.
    let first = h
        .coord()
        .init_producer("tx", TIMEOUT_MS, None, None)
        .unwrap();
    assert!(matches!(first, InitProducer::NeedsProducerId), "{first:?}");
    assert!(
        h.coord_ref().describe("tx").is_none(),
        "nothing journaled yet"
    );
    let s0 = h.init("tx");
    assert_eq!((s0.pid, s0.epoch), (1, 0));
    assert_eq!(h.state("tx"), TxnState::Empty);

    // Transactions of one session keep its epoch.
    let out = tp("out", 0);
    h.send(&s0, &out, "a");
    h.commit(&s0);
    h.send(&s0, &out, "b");
    h.commit(&s0);
    assert_eq!(h.epoch("tx"), 0);

    // Every new session bumps it once; the producer id stays.
    let s1 = h.init("tx");
    assert_eq!((s1.pid, s1.epoch), (1, 1));
    let s2 = h.init("tx");
    assert_eq!((s2.pid, s2.epoch), (1, 2));
    assert_eq!(h.state("tx"), TxnState::Empty);
    // Another id gets another producer id.
    assert_eq!(h.init("other").pid, 2);
    // The old sessions are fenced.
    assert_eq!(
        code(
            h.coord()
                .add_partitions("tx", 1, 1, std::slice::from_ref(&out))
        ),
        ErrorCode::ProducerFenced
    );
    assert_eq!(h.read_committed(&out), vec!["a", "b"]);
}

#[test]
fn init_refuses_a_timeout_outside_one_ms_to_the_maximum() {
    let mut h = Harness::new();
    let max = h.config.max_transaction_timeout_ms;
    assert_eq!(max, 900_000, "Kafka's transaction.max.timeout.ms default");
    for bad in [0, -1, max + 1, i64::MAX] {
        let err = h
            .coord()
            .init_producer("tx", bad, None, Some(1))
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidTransactionTimeout, "{bad}");
        assert!(err.to_string().contains(&format!("got {bad}")), "{err}");
    }
    assert!(h.coord_ref().describe("tx").is_none());
    let s = h.try_init("tx", max, None).unwrap();
    assert_eq!(h.coord_ref().describe("tx").unwrap().timeout_ms, max);
    // A later session may choose another timeout.
    h.try_init("tx", 1, Some((s.pid, s.epoch))).unwrap();
    assert_eq!(h.coord_ref().describe("tx").unwrap().timeout_ms, 1);
}

#[test]
fn init_with_the_current_epoch_bumps_it_and_a_retry_of_that_bump_gets_the_same_answer() {
    let mut h = Harness::new();
    let s0 = h.init("tx");
    // KIP-360: the producer names its current identity and gets the next
    // epoch of the same producer id.
    let s1 = h
        .try_init("tx", TIMEOUT_MS, Some((s0.pid, s0.epoch)))
        .unwrap();
    assert_eq!((s1.pid, s1.epoch), (s0.pid, 1));
    // The answer was lost; the retry names epoch 0 again and gets epoch 1
    // again, not a second bump.
    let retry = h
        .try_init("tx", TIMEOUT_MS, Some((s0.pid, s0.epoch)))
        .unwrap();
    assert_eq!(retry, s1);
    // Once the new session has done something, the old epoch is fenced.
    h.add(&s1, &tp("out", 0));
    assert_eq!(
        code(h.try_init("tx", TIMEOUT_MS, Some((s0.pid, s0.epoch)))),
        ErrorCode::ProducerFenced
    );
    // Another producer id, or an epoch that was never handed out, is fenced.
    assert_refused(
        h.try_init("tx", TIMEOUT_MS, Some((99, s1.epoch))),
        ErrorCode::ProducerFenced,
        "producer id 99",
    );
    assert_eq!(
        code(h.try_init("tx", TIMEOUT_MS, Some((s1.pid, 7)))),
        ErrorCode::ProducerFenced
    );
    // A producer naming an identity of an id this coordinator never knew
    // starts afresh.
    let fresh = h.try_init("new", TIMEOUT_MS, Some((42, 3))).unwrap();
    assert_eq!(fresh.epoch, 0);
}

#[test]
fn init_aborts_what_the_previous_session_left_open_under_a_fenced_epoch() {
    let mut h = Harness::new();
    let (a, b) = (tp("out", 0), tp("out", 1));
    let zombie = h.init("tx");
    h.send(&zombie, &a, "zombie-a");
    h.send(&zombie, &b, "zombie-b");
    h.stage(&zombie, "g", &[(tp("in", 0), 5)]);

    // A new session finds the transaction Ongoing: the epoch is bumped to
    // fence the zombie and the transaction is aborted first.
    let Ok(InitProducer::CompletePriorFirst(plan)) =
        h.coord().init_producer("tx", TIMEOUT_MS, None, None)
    else {
        panic!("the open transaction must be aborted first");
    };
    assert_eq!(plan.outcome(), Outcome::Abort);
    assert_eq!(plan.producer(), producer(zombie.pid, 1, -1), "fenced epoch");
    assert_eq!(plan.markers().len(), 2);
    assert_eq!(
        plan.markers()[0].batch().control(),
        Some(ControlType::Abort)
    );
    assert!(plan.offsets_to_store().is_empty());
    assert_eq!(h.state("tx"), TxnState::PrepareAbort);

    // While its abort is being completed, the id answers
    // CONCURRENT_TRANSACTIONS (clients retry), and the zombie is fenced.
    assert_eq!(
        code(h.coord().init_producer("tx", TIMEOUT_MS, None, None)),
        ErrorCode::ConcurrentTransactions
    );
    assert!(h.coord_ref().pending_completions().is_empty());
    assert!(h.coord_ref().describe("tx").unwrap().completing);
    let z = zombie.clone();
    assert_eq!(
        code(
            h.coord()
                .add_partitions(&z.id, z.pid, z.epoch, std::slice::from_ref(&a))
        ),
        ErrorCode::ProducerFenced
    );
    assert_eq!(
        code(h.coord().end_txn(&z.id, z.pid, z.epoch, Outcome::Commit)),
        ErrorCode::ProducerFenced
    );
    assert_eq!(
        code(h.produce(&zombie, &a, "late")),
        ErrorCode::InvalidProducerEpoch
    );

    assert_eq!(h.finish(plan), TxnState::CompleteAbort);
    let s = h.init("tx");
    assert_eq!(
        (s.pid, s.epoch),
        (zombie.pid, 1),
        "the fence's epoch is the new session's: one bump"
    );
    // A later session bumps once more, as usual.
    let s = {
        let later = h.init("tx");
        assert_eq!(later.epoch, 2);
        later
    };
    assert_eq!(h.lso(&a), h.hw(&a));
    assert!(h.read_committed(&a).is_empty() && h.read_committed(&b).is_empty());
    assert_eq!(h.committed_offset("g", &tp("in", 0)), None);
    h.send(&s, &a, "new");
    h.commit(&s);
    assert_eq!(h.read_committed(&a), vec!["new"]);
}

#[test]
fn init_completes_a_prepared_commit_of_the_previous_session() {
    // The decision to commit is journaled, then its plan is lost.
    let (mut h, out, old) = decided_on_out0("decided", 4, Outcome::Commit);

    let Ok(InitProducer::CompletePriorFirst(plan)) =
        h.coord().init_producer("tx", TIMEOUT_MS, None, None)
    else {
        panic!("the prepared commit must be completed first");
    };
    assert_eq!(
        plan.outcome(),
        Outcome::Commit,
        "a decision is never reversed"
    );
    assert_eq!(plan.producer(), producer(old.pid, old.epoch, -1));
    assert_eq!(h.finish(plan), TxnState::CompleteCommit);
    assert_eq!(h.read_committed(&out), vec!["decided"]);
    assert_eq!(h.committed_offset("g", &tp("in", 0)), Some(4));
    assert_eq!(h.init("tx").epoch, old.epoch + 1);
}

#[test]
fn exhausted_epochs_move_the_id_to_a_fresh_producer_id() {
    // An id two bumps below the end.
    let mut h = Harness::with_idle_tx_at(MAX_PRODUCER_EPOCH - 2);
    h.next_pid = 2;
    // The last epoch InitProducerId hands out.
    let s = h.init("tx");
    assert_eq!(s.epoch, i32::from(i16::MAX) - 1);
    // Its timeout fence still fits an i16.
    h.add(&s, &tp("out", 0));
    h.clock.advance(TIMEOUT_MS + 1);
    let plans = h.coord().expire_transactions().unwrap();
    assert_eq!(plans[0].producer().producer_epoch, i32::from(i16::MAX));
    for plan in plans {
        h.finish(plan);
    }
    let next = h
        .coord()
        .init_producer("tx", TIMEOUT_MS, None, None)
        .unwrap();
    assert!(matches!(next, InitProducer::NeedsProducerId), "{next:?}");
    let fresh = h.init("tx");
    assert_ne!(fresh.pid, s.pid);
    assert_eq!(fresh.epoch, 0);
}

#[test]
fn add_partitions_begins_the_transaction_and_checks_in_kafkas_order() {
    let mut h = Harness::new();
    let (a, b) = (tp("out", 0), tp("out", 1));
    assert_eq!(
        code(
            h.coord()
                .add_partitions("tx", 1, 0, std::slice::from_ref(&a))
        ),
        ErrorCode::InvalidProducerIdMapping,
        "unknown transactional id"
    );
    let s = h.init("tx");
    h.clock.advance(5);
    h.coord()
        .add_partitions(&s.id, s.pid, s.epoch, &[b.clone(), a.clone()])
        .unwrap();
    let d = h.coord_ref().describe("tx").unwrap();
    assert_eq!(d.state, TxnState::Ongoing);
    assert_eq!(d.partitions, vec![a.clone(), b.clone()]);
    assert_eq!(d.start_ms, 1_000_005, "the timeout counts from here");

    // Adding what is already there journals nothing.
    let lines = h.journal_text().lines().count();
    h.add(&s, &a);
    assert_eq!(h.journal_text().lines().count(), lines);

    let c = h.coord();
    assert_eq!(
        code(c.add_partitions(&s.id, s.pid + 1, s.epoch, std::slice::from_ref(&a))),
        ErrorCode::InvalidProducerIdMapping,
        "another producer id"
    );
    assert_refused(
        c.add_partitions(&s.id, s.pid, s.epoch + 1, std::slice::from_ref(&a)),
        ErrorCode::ProducerFenced,
        "newer than the current epoch 0",
    );

    // PrepareCommit: CONCURRENT_TRANSACTIONS until it is complete.
    let plan = h.end_plan(&s, Outcome::Commit);
    assert_eq!(
        code(
            h.coord()
                .add_partitions(&s.id, s.pid, s.epoch, std::slice::from_ref(&a))
        ),
        ErrorCode::ConcurrentTransactions
    );
    h.finish(plan);
    // CompleteCommit: the next transaction begins with nothing of the last.
    h.add(&s, &b);
    let d = h.coord_ref().describe("tx").unwrap();
    assert_eq!((d.state, d.partitions), (TxnState::Ongoing, vec![b]));
}

#[test]
fn a_transactional_batch_is_verified_against_the_ongoing_transaction() {
    let (mut h, a, s) = tx_on_out0();
    let b = tp("out", 1);
    // Empty: nothing was added.
    assert_refused(
        h.produce(&s, &a, "x"),
        ErrorCode::TransactionAbortable,
        "out-0 was not added",
    );
    h.add(&s, &a);
    h.produce(&s, &a, "ok").unwrap();
    // A partition not added to the transaction is refused.
    assert_eq!(
        code(h.produce(&s, &b, "x")),
        ErrorCode::TransactionAbortable
    );
    // Another epoch, another producer id, an unknown id.
    let older = Session {
        epoch: s.epoch + 1,
        ..s.clone()
    };
    assert_eq!(
        code(h.produce(&older, &a, "x")),
        ErrorCode::InvalidProducerEpoch
    );
    let other = Session {
        pid: 77,
        ..s.clone()
    };
    assert_eq!(
        code(h.produce(&other, &a, "x")),
        ErrorCode::InvalidProducerIdMapping
    );
    let unknown = Session {
        id: "nobody".into(),
        ..s.clone()
    };
    assert_eq!(
        code(h.produce(&unknown, &a, "x")),
        ErrorCode::InvalidProducerIdMapping
    );
    // Once EndTxn has decided, nothing more may join the transaction.
    let plan = h.end_plan(&s, Outcome::Commit);
    assert_eq!(code(h.produce(&s, &a, "late")), ErrorCode::InvalidTxnState);
    h.finish(plan);
    assert_eq!(
        code(h.produce(&s, &a, "later")),
        ErrorCode::TransactionAbortable
    );
    assert_eq!(h.read_committed(&a), vec!["ok"]);
    assert!(
        h.log(&b).leo() == 0,
        "nothing was written where it was refused"
    );
}

#[test]
fn staged_offsets_need_their_group_added_and_are_stored_exactly_on_commit() {
    let mut h = Harness::new();
    let (i0, i1) = (tp("in", 0), tp("in", 1));
    let s = h.init("tx");
    // TxnOffsetCommit without AddOffsetsToTxn is refused.
    assert_refused(
        h.coord()
            .stage_offsets(&s.id, s.pid, s.epoch, "g", [(i0.clone(), 1)]),
        ErrorCode::TransactionAbortable,
        "AddOffsetsToTxn",
    );
    // AddOffsetsToTxn begins the transaction, like AddPartitionsToTxn.
    h.coord().add_offsets(&s.id, s.pid, s.epoch, "g").unwrap();
    assert_eq!(h.state("tx"), TxnState::Ongoing);
    assert_eq!(
        code(
            h.coord()
                .stage_offsets(&s.id, s.pid, s.epoch, "h", [(i0.clone(), 1)])
        ),
        ErrorCode::TransactionAbortable,
        "another group"
    );
    h.stage(&s, "g", &[(i0.clone(), 3), (i1.clone(), 8)]);
    h.stage(&s, "g", &[(i0.clone(), 5)]);
    h.stage(&s, "g", &[]);
    let d = h.coord_ref().describe("tx").unwrap();
    assert_eq!(d.groups, vec!["g"]);
    let staged: Vec<(mk_core::TopicPartition, i64)> = d
        .staged_offsets
        .iter()
        .map(|o| (o.tp.clone(), o.offset))
        .collect();
    assert_eq!(staged, vec![(i0.clone(), 5), (i1.clone(), 8)]);
    assert_eq!(h.committed_offset("g", &i0), None, "staged, not stored");
    let plan = h.end_plan(&s, Outcome::Commit);
    assert_eq!(plan.offsets_to_store().len(), 2);
    assert_eq!(
        h.committed_offset("g", &i0),
        None,
        "decided, not yet stored"
    );
    h.finish(plan);
    assert_eq!(h.committed_offset("g", &i0), Some(5));
    assert_eq!(h.committed_offset("g", &i1), Some(8));

    // Offsets of an aborted transaction are dropped.
    h.stage(&s, "g", &[(i0.clone(), 99)]);
    h.abort(&s);
    assert_eq!(h.committed_offset("g", &i0), Some(5));
    // The next transaction must add its group again.
    h.add(&s, &tp("out", 0));
    assert_eq!(
        code(
            h.coord()
                .stage_offsets(&s.id, s.pid, s.epoch, "g", [(i0.clone(), 1)])
        ),
        ErrorCode::TransactionAbortable
    );
}

/// Once `done` completed, the same outcome again is answered
/// AlreadyComplete and the `other` one INVALID_TXN_STATE.
fn assert_completed_as(h: &mut Harness, s: &Session, done: Outcome, other: Outcome) {
    assert!(matches!(
        h.coord().end_txn(&s.id, s.pid, s.epoch, done),
        Ok(EndTxn::AlreadyComplete)
    ));
    assert_eq!(
        code(h.coord().end_txn(&s.id, s.pid, s.epoch, other)),
        ErrorCode::InvalidTxnState
    );
}

#[test]
fn end_txn_retries_of_the_completed_outcome_succeed_and_mismatches_are_invalid() {
    let (mut h, out, s) = tx_on_out0();
    // Empty: there is nothing to end.
    assert_eq!(
        code(h.coord().end_txn(&s.id, s.pid, s.epoch, Outcome::Commit)),
        ErrorCode::InvalidTxnState
    );
    h.send(&s, &out, "x");
    let plan = h.end_plan(&s, Outcome::Commit);
    // A retry while the plan is being executed: CONCURRENT_TRANSACTIONS; the
    // other outcome: INVALID_TXN_STATE.
    assert_eq!(
        code(h.coord().end_txn(&s.id, s.pid, s.epoch, Outcome::Commit)),
        ErrorCode::ConcurrentTransactions
    );
    assert_refused(
        h.coord().end_txn(&s.id, s.pid, s.epoch, Outcome::Abort),
        ErrorCode::InvalidTxnState,
        "found PrepareCommit",
    );
    // The plan is lost (a failed marker write): a retry gets it again.
    drop(plan);
    let Ok(EndTxn::Execute(again)) = h.coord().end_txn(&s.id, s.pid, s.epoch, Outcome::Commit)
    else {
        panic!("a retry re-issues an unfinished plan");
    };
    h.finish(again);
    assert_completed_as(&mut h, &s, Outcome::Commit, Outcome::Abort);
    // Likewise for an abort.
    h.send(&s, &out, "y");
    h.abort(&s);
    assert_completed_as(&mut h, &s, Outcome::Abort, Outcome::Commit);
    // Fencing comes before the state.
    assert_eq!(
        code(h.coord().end_txn(&s.id, s.pid, s.epoch - 1, Outcome::Abort)),
        ErrorCode::ProducerFenced
    );
    assert_eq!(
        code(h.coord().end_txn(&s.id, s.pid + 5, s.epoch, Outcome::Abort)),
        ErrorCode::InvalidProducerIdMapping
    );
    assert_eq!(
        code(h.coord().end_txn("nobody", s.pid, s.epoch, Outcome::Abort)),
        ErrorCode::InvalidProducerIdMapping
    );
    assert_eq!(h.read_committed(&out), vec!["x"]);
}

#[test]
fn timeout_aborts_an_abandoned_transaction_and_fences_its_producer() {
    let (mut h, out, old) = session_on_out0("old");
    h.send(&old, &out, "abandoned");
    h.stage(&old, "g", &[(tp("in", 0), 2)]);
    h.clock.advance(30_000);
    let young = h.try_init("young", 10_000, None).unwrap();
    h.send(&young, &out, "young");

    h.clock.advance(10_000);
    assert!(
        h.coord().expire_transactions().unwrap().is_empty(),
        "exactly the timeout is not older"
    );
    h.clock.advance(1);
    let plans = h.coord().expire_transactions().unwrap();
    let ids: Vec<&str> = plans.iter().map(|p| p.transactional_id()).collect();
    assert_eq!(ids, vec!["young"], "each id has its own timeout");
    for plan in plans {
        h.finish(plan);
    }
    h.clock.advance(20_000);
    let plans = h.coord().expire_transactions().unwrap();
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].transactional_id(), "old");
    assert_eq!(plans[0].outcome(), Outcome::Abort);
    assert_eq!(plans[0].producer(), producer(old.pid, old.epoch + 1, -1));
    assert!(plans[0].offsets_to_store().is_empty());
    for plan in plans {
        h.finish(plan);
    }
    assert_eq!(h.state("old"), TxnState::CompleteAbort);
    assert_eq!(h.committed_offset("g", &tp("in", 0)), None);
    assert_eq!(h.lso(&out), h.hw(&out));
    assert!(h.read_committed(&out).is_empty());

    // The zombie is fenced everywhere: at the coordinator and on Produce.
    let c = h.coord();
    assert_eq!(
        code(c.end_txn(&old.id, old.pid, old.epoch, Outcome::Commit)),
        ErrorCode::ProducerFenced
    );
    assert_eq!(
        code(c.add_partitions(&old.id, old.pid, old.epoch, std::slice::from_ref(&out))),
        ErrorCode::ProducerFenced
    );
    assert_eq!(
        code(c.add_offsets(&old.id, old.pid, old.epoch, "g")),
        ErrorCode::ProducerFenced
    );
    assert_eq!(
        code(h.produce(&old, &out, "late")),
        ErrorCode::InvalidProducerEpoch
    );
    // A new session of the id works.
    let s = h.init("old");
    assert_eq!(s.epoch, old.epoch + 2);
    h.send(&s, &out, "again");
    h.commit(&s);
    assert_eq!(h.read_committed(&out), vec!["again"]);
}

#[test]
fn timeout_counts_from_the_start_of_the_transaction_across_a_restart() {
    let (mut h, out, s) = tx_on_out0();
    h.clock.advance(50_000);
    h.send(&s, &out, "x");
    h.clock.advance(59_000);
    assert!(h.crash_and_reopen().is_empty());
    assert!(h.coord().expire_transactions().unwrap().is_empty());
    h.clock.advance(1_001);
    let plans = h.coord().expire_transactions().unwrap();
    assert_eq!(plans.len(), 1);
    for plan in plans {
        h.finish(plan);
    }
    assert_eq!(h.lso(&out), h.hw(&out));
    assert!(h.read_committed(&out).is_empty());
}

#[test]
fn an_abort_only_transaction_can_only_abort() {
    let mut h = Harness::new();
    let out = tp("out", 0);
    let s = h.init_and_begin("tx");
    h.send(&s, &out, "ok");
    h.coord()
        .mark_abort_only("tx", s.epoch, "a send to out-0 failed");
    // Other epochs and states are untouched by the mark.
    h.coord().mark_abort_only("tx", s.epoch + 1, "ignored");
    let d = h.coord_ref().describe("tx").unwrap();
    assert_eq!(d.abort_only.as_deref(), Some("a send to out-0 failed"));

    assert_refused(
        h.coord().end_txn(&s.id, s.pid, s.epoch, Outcome::Commit),
        ErrorCode::InvalidTxnState,
        "abort-only",
    );
    assert_eq!(
        code(
            h.coord()
                .add_partitions(&s.id, s.pid, s.epoch, &[tp("out", 1)])
        ),
        ErrorCode::InvalidTxnState
    );
    assert_eq!(
        code(h.coord().add_offsets(&s.id, s.pid, s.epoch, "g")),
        ErrorCode::InvalidTxnState
    );
    h.abort(&s);
    assert!(h.read_committed(&out).is_empty());
    assert_eq!(h.coord_ref().describe("tx").unwrap().abort_only, None);
    // The next transaction is normal again.
    h.send(&s, &out, "next");
    h.commit(&s);
    assert_eq!(h.read_committed(&out), vec!["next"]);
}

#[test]
fn explicit_begin_opens_an_empty_transaction_only_from_an_idle_id() {
    let mut h = Harness::new();
    let s = h.init_and_begin("tx");
    assert_eq!(h.state("tx"), TxnState::Ongoing);
    assert_refused(
        h.coord().begin(&s.id, s.pid, s.epoch),
        ErrorCode::InvalidTxnState,
        "found Ongoing",
    );
    // An empty transaction commits without markers.
    let plan = h.end_plan(&s, Outcome::Commit);
    assert!(plan.markers().is_empty() && plan.is_executed());
    assert_eq!(
        code(h.coord().begin(&s.id, s.pid, s.epoch)),
        ErrorCode::ConcurrentTransactions
    );
    h.finish(plan);
    h.coord().begin(&s.id, s.pid, s.epoch).unwrap();
    assert_eq!(
        code(h.coord().begin(&s.id, s.pid, s.epoch - 1)),
        ErrorCode::ProducerFenced
    );
    assert_eq!(
        code(h.coord().begin("nobody", 1, 0)),
        ErrorCode::InvalidProducerIdMapping
    );
}

#[test]
fn complete_accepts_only_an_executed_plan_and_plans_are_issued_one_at_a_time() {
    let (mut h, out, s) = tx_on_out0();
    h.send(&s, &out, "x");
    let mut plan = h.end_plan(&s, Outcome::Commit);
    // Unacknowledged pieces are refused and change nothing.
    assert_refused(
        h.coord().complete(plan),
        ErrorCode::InvalidTxnState,
        "markers not written on out-0",
    );
    assert_eq!(h.state("tx"), TxnState::PrepareCommit);
    // The refused plan was consumed; the pending one is issued instead.
    plan = h.coord_ref().pending_completion("tx").unwrap();
    assert!(
        h.coord_ref().pending_completion("tx").is_none(),
        "one at a time"
    );
    let err = plan.ack_marker(&tp("elsewhere", 0)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidRequest);
    assert_eq!(plan.missing_markers(), vec![out.clone()]);
    h.execute(&mut plan);
    h.coord().complete(plan).unwrap();
    assert_eq!(h.state("tx"), TxnState::CompleteCommit);
    assert!(h.coord_ref().pending_completion("tx").is_none());

    // A plan dropped unfinished is issued again, and only one at a time.
    h.send(&s, &out, "y");
    drop(h.end_plan(&s, Outcome::Abort));
    let again = h.coord_ref().pending_completion("tx").unwrap();
    assert!(
        h.coord_ref().pending_completions().is_empty(),
        "that plan is in progress"
    );
    assert_eq!(h.finish(again), TxnState::CompleteAbort);
    assert!(h.coord_ref().pending_completions().is_empty());
}

#[test]
fn malformed_requests_are_invalid_request() {
    let mut h = Harness::new();
    let c = h.coord();
    assert_eq!(
        code(c.init_producer("", TIMEOUT_MS, None, Some(1))),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        code(c.init_producer("tx", TIMEOUT_MS, Some((-1, 0)), Some(1))),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        code(c.init_producer("tx", TIMEOUT_MS, None, Some(-3))),
        ErrorCode::InvalidRequest
    );
    let s = h.init("tx");
    let c = h.coord();
    assert_eq!(
        code(c.add_offsets(&s.id, s.pid, s.epoch, "")),
        ErrorCode::InvalidRequest
    );
    c.add_offsets(&s.id, s.pid, s.epoch, "g").unwrap();
    assert_eq!(
        code(c.stage_offsets(&s.id, s.pid, s.epoch, "g", [(tp("in", 0), -1)])),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        code(c.stage_offsets(&s.id, s.pid, s.epoch, "", [(tp("in", 0), 1)])),
        ErrorCode::InvalidRequest
    );

    for bad in [
        TxnConfig {
            transaction_timeout_ms: 0,
            ..TxnConfig::default()
        },
        TxnConfig {
            max_transaction_timeout_ms: -1,
            ..TxnConfig::default()
        },
        TxnConfig {
            journal_compaction_lines: 0,
            ..TxnConfig::default()
        },
    ] {
        assert_eq!(code(bad.validate()), ErrorCode::InvalidRequest);
    }
    assert!(TxnConfig::default().validate().is_ok());
    assert_eq!(TxnConfig::default().transaction_timeout_ms, 60_000);
}

#[test]
fn the_list_is_sorted_and_unknown_ids_are_not_described() {
    let mut h = Harness::new();
    h.init("b");
    h.init("a");
    let ids: Vec<String> = h
        .coord_ref()
        .list()
        .into_iter()
        .map(|d| d.transactional_id)
        .collect();
    assert_eq!(ids, vec!["a", "b"]);
    assert!(h.coord_ref().describe("nope").is_none());
}

#[test]
fn coordinator_and_plans_can_cross_threads() {
    // mk-cluster keeps the coordinator behind a mutex shared by tokio tasks
    // and moves plans into them.
    fn assert_send_sync<T: Send + Sync>() {}
    fn assert_send<T: Send>() {}
    assert_send_sync::<mk_txn::TransactionCoordinator>();
    assert_send::<mk_txn::CompletionPlan>();
    assert_send::<TxnError>();
}

#[test]
fn recent_completions_remember_how_each_transaction_ended_newest_last_and_bounded() {
    let mut h = Harness::new();
    let (a, b) = (tp("out", 0), tp("out", 1));
    let s = h.init_and_begin("tx");
    let started = h.clock.now_ms();
    h.send(&s, &a, "1");
    h.send(&s, &b, "2");
    h.stage(&s, "g", &[(a.clone(), 1)]);
    h.clock.advance(250);
    assert!(
        h.coord_ref().recent_completions().is_empty(),
        "nothing completed yet"
    );
    h.commit(&s);
    let s = h.init_and_begin("tx");
    h.send(&s, &b, "3");
    h.abort(&s);

    let recent = h.coord_ref().recent_completions();
    assert_eq!(recent.len(), 2, "{recent:?}");
    let (first, second) = (&recent[0], &recent[1]);
    assert_eq!(first.transactional_id, "tx");
    assert_eq!(first.state, TxnState::CompleteCommit);
    assert_eq!(first.partitions, vec![a.clone(), b.clone()]);
    assert_eq!(first.groups, vec!["g".to_string()]);
    assert_eq!(first.start_ms, started);
    assert_eq!(first.completed_ms, started + 250);
    assert_eq!(second.state, TxnState::CompleteAbort);
    assert_eq!(second.partitions, vec![b.clone()]);
    assert_eq!(second.producer_epoch, s.epoch);

    // Only the latest RECENT_COMPLETIONS are kept.
    for _ in 0..mk_txn::RECENT_COMPLETIONS {
        let s = h.init_and_begin("tx");
        h.send(&s, &a, "x");
        h.commit(&s);
    }
    let recent = h.coord_ref().recent_completions();
    assert_eq!(recent.len(), mk_txn::RECENT_COMPLETIONS);
    assert!(
        recent.iter().all(|c| c.state == TxnState::CompleteCommit),
        "the abort fell out of the window"
    );
}

/// ListTransactions' filters as Kafka 4.1 applies them: states by name
/// (unknown names reported back, Kafka's Dead matching nothing), producer
/// ids, a minimum running time, and a pattern the whole id must match.
#[test]
fn list_filtered_applies_kafkas_state_producer_duration_and_pattern_filters() {
    use mk_txn::TxnFilter;
    let (mut h, out, a) = session_on_out0("tx-a");
    h.send(&a, &out, "x");
    h.clock.advance(5_000);
    let b = h.init("tx-b");
    h.send(&b, &out, "y");
    let done = h.init("done");
    h.send(&done, &out, "z");
    h.commit(&done);
    let now = h.clock.now_ms();
    let ids = |f: &TxnFilter| {
        let l = h.coord_ref().list_filtered(f, now).unwrap();
        let ids: Vec<String> = l
            .transactions
            .into_iter()
            .map(|d| d.transactional_id)
            .collect();
        (ids, l.unknown_states)
    };
    let none: Vec<String> = Vec::new();
    assert_eq!(ids(&TxnFilter::default()).0, vec!["done", "tx-a", "tx-b"]);
    let ongoing = TxnFilter {
        states: vec!["Ongoing".into(), "Dead".into(), "Sleeping".into()],
        ..TxnFilter::default()
    };
    assert_eq!(
        ids(&ongoing),
        (
            vec!["tx-a".to_string(), "tx-b".to_string()],
            vec!["Sleeping".to_string()]
        )
    );
    let by_pid = TxnFilter {
        producer_ids: vec![b.pid, 999],
        ..TxnFilter::default()
    };
    assert_eq!(ids(&by_pid), (vec!["tx-b".to_string()], none.clone()));
    // Running for more than 4 s: only tx-a (started 5 s before tx-b).
    let long = TxnFilter {
        states: vec!["Ongoing".into()],
        min_duration_ms: Some(4_000),
        ..TxnFilter::default()
    };
    assert_eq!(ids(&long).0, vec!["tx-a"]);
    let pattern = |p: &str| TxnFilter {
        id_pattern: Some(p.into()),
        ..TxnFilter::default()
    };
    assert_eq!(ids(&pattern("tx-.")).0, vec!["tx-a", "tx-b"]);
    assert_eq!(ids(&pattern("tx")).0, none, "the whole id must match");
    assert_eq!(ids(&pattern("")).0.len(), 3, "empty filters nothing");
    let e = h
        .coord_ref()
        .list_filtered(&pattern("tx-("), now)
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidRegularExpression);
}
