//! The coordinator's state machine: fencing, timeouts, wrong-state
//! operations, in-flight sends, failed sends, sequences and request
//! validation.

mod common;

use common::{Harness, producer, record, tp};
use mk_core::ErrorCode;
use mk_log::ControlType;
use mk_txn::{AppendFate, Begin, Outcome, TxnConfig, TxnError, TxnState};

fn code<T: std::fmt::Debug>(r: Result<T, TxnError>) -> ErrorCode {
    r.unwrap_err().code()
}

#[test]
fn zombie_instance_is_fenced_and_its_open_transaction_aborted_first() {
    let mut h = Harness::new();
    let out = h.ongoing("zombie-data");
    let late = h
        .coord()
        .send("tx", 0, out.clone(), record("late"))
        .unwrap();

    // A newer instance (epoch 1) arrives while epoch 0 is mid-transaction.
    let Begin::CompletePriorFirst(plan) = h.coord().begin("tx", 1, 1).unwrap() else {
        panic!("the open transaction of epoch 0 must be aborted first");
    };
    assert_eq!(plan.outcome(), Outcome::Abort);
    assert_eq!(
        plan.producer(),
        producer(1, 1, -1),
        "markers carry the new epoch"
    );
    assert_eq!(
        plan.markers()[0].batch().control(),
        Some(ControlType::Abort)
    );
    assert_eq!(h.state("tx"), TxnState::PrepareAbort);

    // Every operation of the old instance is PRODUCER_FENCED from now on.
    let c = h.coord();
    assert_eq!(
        code(c.send("tx", 0, out.clone(), record("z"))),
        ErrorCode::ProducerFenced
    );
    assert_eq!(
        code(c.send_offsets("tx", 0, "g", [(tp("in", 0), 1)])),
        ErrorCode::ProducerFenced
    );
    assert_eq!(code(c.commit("tx", 0)), ErrorCode::ProducerFenced);
    assert_eq!(code(c.abort("tx", 0)), ErrorCode::ProducerFenced);
    assert_eq!(code(c.begin("tx", 1, 0)), ErrorCode::ProducerFenced);
    assert_eq!(code(c.send_appended(late, 99)), ErrorCode::ProducerFenced);
    let msg = c.commit("tx", 0).unwrap_err().to_string();
    assert!(
        msg.contains("epoch 0 is older than the current epoch 1"),
        "{msg}"
    );

    // The new instance may only start once the prior abort is complete.
    assert_eq!(
        code(h.coord().begin("tx", 1, 1)),
        ErrorCode::InvalidTxnState
    );
    assert_eq!(h.finish(plan), TxnState::CompleteAbort);
    h.begin("tx", 1, 1);
    let pending = h.coord().send("tx", 1, out.clone(), record("new")).unwrap();
    assert_eq!(
        pending.producer(),
        producer(1, 1, 0),
        "a new epoch restarts sequences"
    );
    let offset = h
        .log(&out)
        .append(pending.batch().clone())
        .unwrap()
        .base_offset;
    h.coord().send_appended(pending, offset).unwrap();
    h.commit("tx", 1);
    assert_eq!(h.read_committed(&out), vec!["new"]);
    assert_eq!(code(h.coord().begin("tx", 1, 0)), ErrorCode::ProducerFenced);
}

#[test]
fn newer_instance_finishes_a_prepared_commit_of_the_older_one() {
    let mut h = Harness::new();
    let out = h.ongoing("decided");
    h.coord()
        .send_offsets("tx", 0, "g", [(tp("in", 0), 4)])
        .unwrap();
    let _lost_plan = h.coord().commit("tx", 0).unwrap();

    let Begin::CompletePriorFirst(plan) = h.coord().begin("tx", 1, 3).unwrap() else {
        panic!("the prepared commit must be completed first");
    };
    assert_eq!(
        plan.outcome(),
        Outcome::Commit,
        "a decision is never reversed"
    );
    assert_eq!(plan.producer(), producer(1, 3, -1));
    assert_eq!(plan.offsets_to_store().len(), 1);
    assert_eq!(h.finish(plan), TxnState::CompleteCommit);
    assert_eq!(h.read_committed(&out), vec!["decided"]);
    assert_eq!(h.committed_offset("g", &tp("in", 0)), Some(4));
    h.begin("tx", 1, 3);
}

#[test]
fn timeout_aborts_an_abandoned_transaction() {
    let mut h = Harness::new();
    let out = tp("out", 0);
    h.begin("old", 1, 0);
    h.send("old", 0, &out, "abandoned");
    h.coord()
        .send_offsets("old", 0, "g", [(tp("in", 0), 2)])
        .unwrap();
    h.clock.advance(30_000);
    h.begin("young", 2, 0);
    h.send("young", 0, &out, "young");

    h.clock.advance(30_000);
    assert!(
        h.coord().expire_transactions().unwrap().is_empty(),
        "exactly 60 s is not older"
    );
    h.clock.advance(1);
    let plans = h.coord().expire_transactions().unwrap();
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].transactional_id(), "old");
    assert_eq!(plans[0].outcome(), Outcome::Abort);
    assert!(plans[0].offsets_to_store().is_empty());
    assert_eq!(h.state("old"), TxnState::PrepareAbort);
    assert_eq!(h.state("young"), TxnState::Ongoing);
    for plan in plans {
        h.finish(plan);
    }
    assert_eq!(h.state("old"), TxnState::CompleteAbort);
    assert_eq!(h.committed_offset("g", &tp("in", 0)), None);

    // The young transaction now holds the LSO; the abandoned one no longer does.
    let young_first = h.coord_ref().describe("young").unwrap().partitions[0].1;
    assert_eq!(Some(h.lso(&out)), young_first);
    h.commit("young", 0);
    assert_eq!(h.lso(&out), h.hw(&out));
    assert_eq!(h.read_committed(&out), vec!["young"]);

    // The abandoning producer learns it was aborted, then may begin again.
    assert_eq!(code(h.coord().commit("old", 0)), ErrorCode::InvalidTxnState);
    h.begin("old", 1, 0);
}

#[test]
fn timeout_counts_from_begin_across_a_restart() {
    let mut h = Harness::new();
    let out = h.ongoing("x");
    h.clock.advance(59_000);
    assert!(h.crash_and_reopen().is_empty());
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
fn expiry_and_commit_wait_for_sends_in_flight() {
    let mut h = Harness::new();
    let out = tp("out", 0);
    h.begin("tx", 1, 0);
    let pending = h
        .coord()
        .send("tx", 0, out.clone(), record("slow"))
        .unwrap();
    assert_eq!(h.coord_ref().describe("tx").unwrap().in_flight_sends, 1);

    let err = h.coord().commit("tx", 0).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidTxnState);
    assert!(err.to_string().contains("1 sends in flight"), "{err}");
    assert_eq!(code(h.coord().abort("tx", 0)), ErrorCode::InvalidTxnState);
    h.clock.advance(120_000);
    assert!(h.coord().expire_transactions().unwrap().is_empty());

    let offset = h
        .log(&out)
        .append(pending.batch().clone())
        .unwrap()
        .base_offset;
    h.coord().send_appended(pending, offset).unwrap();
    assert_eq!(h.coord_ref().describe("tx").unwrap().in_flight_sends, 0);
    let plans = h.coord().expire_transactions().unwrap();
    assert_eq!(plans.len(), 1);
    for plan in plans {
        h.finish(plan);
    }
    assert!(h.read_committed(&out).is_empty());

    // Dropping an unreported send also releases the hold.
    h.begin("tx", 1, 0);
    let dropped = h
        .coord()
        .send("tx", 0, out.clone(), record("gone"))
        .unwrap();
    drop(dropped);
    assert_eq!(h.coord_ref().describe("tx").unwrap().in_flight_sends, 0);
    h.commit("tx", 0);
}

#[test]
fn wrong_state_operations_return_invalid_txn_state() {
    let mut h = Harness::new();
    let out = tp("out", 0);
    let offsets = || [(tp("in", 0), 1)];
    let c = h.coord();
    // Nothing begun yet.
    assert_eq!(
        code(c.send("tx", 0, out.clone(), record("x"))),
        ErrorCode::InvalidTxnState
    );
    assert_eq!(
        code(c.send_offsets("tx", 0, "g", offsets())),
        ErrorCode::InvalidTxnState
    );
    assert_eq!(code(c.commit("tx", 0)), ErrorCode::InvalidTxnState);
    assert_eq!(code(c.abort("tx", 0)), ErrorCode::InvalidTxnState);

    // Ongoing: a second begin of the same instance.
    h.begin("tx", 1, 0);
    h.send("tx", 0, &out, "x");
    let err = h.coord().begin("tx", 1, 0).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidTxnState);
    assert!(err.to_string().contains("found Ongoing"), "{err}");
    // An epoch that never began.
    assert_eq!(code(h.coord().commit("tx", 5)), ErrorCode::InvalidTxnState);

    // PrepareCommit: nothing but complete.
    let mut plan = h.coord().commit("tx", 0).unwrap();
    let second = h.coord().pending_completions().pop().unwrap();
    let c = h.coord();
    let err = c.send("tx", 0, out.clone(), record("y")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidTxnState);
    assert!(
        err.to_string()
            .contains("expected Ongoing, found PrepareCommit"),
        "{err}"
    );
    assert_eq!(
        code(c.send_offsets("tx", 0, "g", offsets())),
        ErrorCode::InvalidTxnState
    );
    assert_eq!(code(c.commit("tx", 0)), ErrorCode::InvalidTxnState);
    assert_eq!(code(c.abort("tx", 0)), ErrorCode::InvalidTxnState);
    assert_eq!(code(c.begin("tx", 1, 0)), ErrorCode::InvalidTxnState);

    // A plan with unacknowledged pieces is refused and changes nothing.
    let plan_tp = plan.markers()[0].tp().clone();
    plan.ack_marker(&plan_tp).unwrap();
    let unexecuted = h.coord().pending_completions().pop().unwrap();
    let err = h.coord().complete(unexecuted).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidTxnState);
    assert!(
        err.to_string().contains("markers not written on out-0"),
        "{err}"
    );
    assert_eq!(h.state("tx"), TxnState::PrepareCommit);

    // A plan completes once; any other plan of the same decision is refused.
    h.execute(&mut plan);
    h.coord().complete(plan).unwrap();
    let mut second = second;
    h.execute(&mut second);
    let err = h.coord().complete(second).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidTxnState);
    assert!(
        err.to_string()
            .contains("expected PrepareCommit, found CompleteCommit"),
        "{err}"
    );

    // CompleteCommit: the transaction is over.
    let c = h.coord();
    assert_eq!(
        code(c.send("tx", 0, out.clone(), record("z"))),
        ErrorCode::InvalidTxnState
    );
    assert_eq!(code(c.commit("tx", 0)), ErrorCode::InvalidTxnState);
    assert_eq!(code(c.abort("tx", 0)), ErrorCode::InvalidTxnState);

    // An abort plan cannot complete a prepared commit.
    h.begin("tx", 1, 0);
    let commit_plan = h.coord().commit("tx", 0).unwrap();
    h.begin("other", 2, 0);
    let mut abort_plan = h.coord().abort("other", 0).unwrap();
    h.execute(&mut abort_plan);
    assert!(
        commit_plan.is_executed(),
        "an empty transaction has nothing to execute"
    );
    assert_eq!(
        h.coord().complete(commit_plan).unwrap(),
        TxnState::CompleteCommit
    );
    assert_eq!(
        h.coord().complete(abort_plan).unwrap(),
        TxnState::CompleteAbort
    );
}

#[test]
fn a_failed_send_makes_the_transaction_abort_only() {
    let mut h = Harness::new();
    let out = h.ongoing("ok");
    let failing = h
        .coord()
        .send("tx", 0, out.clone(), record("refused"))
        .unwrap();
    assert_eq!(failing.producer().base_sequence, 1);
    h.coord()
        .send_failed(failing, AppendFate::NotAppended)
        .unwrap();
    let d = h.coord_ref().describe("tx").unwrap();
    assert_eq!(d.abort_only.as_deref(), Some("a send to out-0 failed"));

    let c = h.coord();
    let err = c.commit("tx", 0).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidTxnState);
    assert!(err.to_string().contains("abort-only"), "{err}");
    assert_eq!(
        code(c.send("tx", 0, out.clone(), record("x"))),
        ErrorCode::InvalidTxnState
    );
    assert_eq!(
        code(c.send_offsets("tx", 0, "g", [(tp("in", 0), 1)])),
        ErrorCode::InvalidTxnState
    );
    h.abort("tx", 0);
    assert!(h.read_committed(&out).is_empty());

    // The refused sequence was released: the next transaction reuses it.
    h.begin("tx", 1, 0);
    let next = h
        .coord()
        .send("tx", 0, out.clone(), record("again"))
        .unwrap();
    assert_eq!(next.producer().base_sequence, 1);
    // A send that may have been appended keeps its sequence consumed.
    h.coord()
        .send_failed(next, AppendFate::MaybeAppended)
        .unwrap();
    h.abort("tx", 0);
    h.begin("tx", 1, 0);
    let after = h
        .coord()
        .send("tx", 0, out.clone(), record("later"))
        .unwrap();
    assert_eq!(after.producer().base_sequence, 2);
}

#[test]
fn sequences_are_per_partition_and_continue_across_transactions_of_one_epoch() {
    let mut h = Harness::new();
    let (a, b) = (tp("out", 0), tp("out", 1));
    let mut seen = Vec::new();
    let mut send = |h: &mut Harness, epoch: i32, tp: &mk_core::TopicPartition| {
        let p = h
            .coord()
            .send("tx", epoch, tp.clone(), record("v"))
            .unwrap();
        assert_eq!(p.batch().transactional_id(), Some("tx"));
        assert_eq!(p.batch().records().len(), 1);
        assert_eq!(p.tp(), tp);
        seen.push((p.tp().partition, p.producer()));
        let offset = h.log(tp).append(p.batch().clone()).unwrap().base_offset;
        h.coord().send_appended(p, offset).unwrap();
    };
    h.begin("tx", 7, 0);
    send(&mut h, 0, &a);
    send(&mut h, 0, &a);
    send(&mut h, 0, &b);
    h.commit("tx", 0);
    h.begin("tx", 7, 0);
    send(&mut h, 0, &a);
    h.commit("tx", 0);
    h.begin("tx", 7, 1);
    send(&mut h, 1, &a);
    assert_eq!(
        seen,
        vec![
            (0, producer(7, 0, 0)),
            (0, producer(7, 0, 1)),
            (1, producer(7, 0, 0)),
            (0, producer(7, 0, 2)),
            (0, producer(7, 1, 0)),
        ]
    );
}

#[test]
fn first_offsets_are_recorded_per_partition_once_the_append_is_reported() {
    let mut h = Harness::new();
    let (a, b) = (tp("out", 0), tp("out", 1));
    h.plain(&a, "p");
    h.begin("tx", 1, 0);
    let pending = h.coord().send("tx", 0, b.clone(), record("b")).unwrap();
    // The partition is journaled before the append, its offset after.
    let d = h.coord_ref().describe("tx").unwrap();
    assert_eq!(d.partitions, vec![(b.clone(), None)]);
    h.coord().send_appended(pending, 0).unwrap();
    h.send("tx", 0, &a, "a1");
    h.send("tx", 0, &a, "a2");
    let d = h.coord_ref().describe("tx").unwrap();
    assert_eq!(
        d.partitions,
        vec![(a.clone(), Some(1)), (b.clone(), Some(0))]
    );
    // Reports that arrive out of order keep the smaller first offset.
    let c = tp("out", 2);
    let p1 = h.coord().send("tx", 0, c.clone(), record("c1")).unwrap();
    let p2 = h.coord().send("tx", 0, c.clone(), record("c2")).unwrap();
    let o1 = h.log(&c).append(p1.batch().clone()).unwrap().base_offset;
    let o2 = h.log(&c).append(p2.batch().clone()).unwrap().base_offset;
    h.coord().send_appended(p2, o2).unwrap();
    h.coord().send_appended(p1, o1).unwrap();
    let d = h.coord_ref().describe("tx").unwrap();
    assert_eq!(d.partitions[2], (c, Some(o1)));
    assert_eq!(d.state, TxnState::Ongoing);
    assert_eq!((d.producer_id, d.producer_epoch), (1, 0));
    assert_eq!(d.start_ms, 1_000_000);
}

#[test]
fn staged_offsets_replace_earlier_values_and_list_is_sorted() {
    let mut h = Harness::new();
    h.begin("b", 2, 0);
    h.begin("a", 1, 0);
    let input = tp("in", 0);
    h.coord()
        .send_offsets("a", 0, "g", [(input.clone(), 3), (tp("in", 1), 8)])
        .unwrap();
    h.coord()
        .send_offsets("a", 0, "g", [(input.clone(), 5)])
        .unwrap();
    h.coord().send_offsets("a", 0, "g", []).unwrap();
    let staged: Vec<_> = h.coord_ref().describe("a").unwrap().staged_offsets;
    assert_eq!(staged.len(), 2);
    assert_eq!((staged[0].tp.clone(), staged[0].offset), (input.clone(), 5));
    let ids: Vec<String> = h
        .coord_ref()
        .list()
        .into_iter()
        .map(|d| d.transactional_id)
        .collect();
    assert_eq!(ids, vec!["a", "b"]);
    assert!(h.coord_ref().describe("nope").is_none());
    h.commit("a", 0);
    assert_eq!(h.committed_offset("g", &input), Some(5));
    assert_eq!(h.committed_offset("g", &tp("in", 1)), Some(8));
}

#[test]
fn malformed_requests_are_invalid_request() {
    let mut h = Harness::new();
    let c = h.coord();
    assert_eq!(code(c.begin("", 1, 0)), ErrorCode::InvalidRequest);
    assert_eq!(code(c.begin("tx", -1, 0)), ErrorCode::InvalidRequest);
    assert_eq!(code(c.begin("tx", 1, -1)), ErrorCode::InvalidRequest);
    h.begin("tx", 1, 0);
    let c = h.coord();
    assert_eq!(
        code(c.begin("tx", 2, 1)),
        ErrorCode::InvalidRequest,
        "another producer id"
    );
    assert_eq!(
        code(c.send_offsets("tx", 0, "", [(tp("in", 0), 1)])),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        code(c.send_offsets("tx", 0, "g", [(tp("in", 0), -1)])),
        ErrorCode::InvalidRequest
    );
    let pending = c.send("tx", 0, tp("out", 0), record("x")).unwrap();
    assert_eq!(
        code(c.send_appended(pending, -1)),
        ErrorCode::InvalidRequest
    );
    let mut plan = c.abort("tx", 0).unwrap();
    let err = plan.ack_marker(&tp("elsewhere", 0)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidRequest);
    assert_eq!(plan.missing_markers(), vec![tp("out", 0)]);

    for bad in [
        TxnConfig {
            transaction_timeout_ms: 0,
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
fn coordinator_plans_and_sends_can_cross_threads() {
    // mk-cluster keeps the coordinator behind a mutex shared by tokio tasks
    // and moves plans and pending sends into them.
    fn assert_send_sync<T: Send + Sync>() {}
    fn assert_send<T: Send>() {}
    assert_send_sync::<mk_txn::TransactionCoordinator>();
    assert_send::<mk_txn::CompletionPlan>();
    assert_send::<mk_txn::PendingSend>();
    assert_send::<TxnError>();
}
