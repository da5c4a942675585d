//! Kafka's transaction flow through the core, rule by rule: InitProducerId
//! with a transactional id, AddPartitionsToTxn (all or nothing),
//! transactional Produce (verified against the transaction, checked by the
//! idempotent-producer state), AddOffsetsToTxn and TxnOffsetCommit (staged,
//! fenced by the group), EndTxn and its retries, CONCURRENT_TRANSACTIONS,
//! decided transactions whose markers must wait, timeouts that fence, and
//! crashes in the middle of EndTxn.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

mod common;

use common::*;
use mk_cluster::*;
use std::collections::BTreeMap;

/// Two brokers, min.insync.replicas 2, `out` with 3 partitions of RF 2.
fn replicated() -> Node {
    let node = Node::new(|c| {
        c.broker_ids = vec![1, 2];
        c.min_insync_replicas = 2;
    });
    node.c().topics().create("out", 3, 2).unwrap();
    node
}

/// The code InitProducerId refuses `id` with (it must refuse it).
async fn init_refused(
    c: &BrokerCluster,
    id: &str,
    timeout_ms: i32,
    current: Option<(i64, i32)>,
) -> ErrorCode {
    code(
        c.transactions()
            .init_transactional_producer(id, timeout_ms, current)
            .await,
    )
}

#[tokio::test]
async fn init_gives_one_producer_id_per_transactional_id_and_one_epoch_bump_per_session() {
    let node = single();
    let c = node.c();
    let idempotent = c.transactions().init_producer(None).unwrap();
    let a0 = Client::init(c, "a", TIMEOUT_MS).await.unwrap();
    let b0 = Client::init(c, "b", TIMEOUT_MS).await.unwrap();
    let a1 = Client::init(c, "a", TIMEOUT_MS).await.unwrap();
    assert_eq!(a0.epoch, 0);
    assert_eq!((a1.pid, a1.epoch), (a0.pid, 1));
    let ids = [idempotent.producer_id, a0.pid, b0.pid];
    assert!(
        ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2],
        "{ids:?}"
    );
    // KIP-360: the current identity asks for the next epoch; anything else
    // is fenced.
    let a2 = c
        .transactions()
        .init_transactional_producer("a", TIMEOUT_MS, Some((a1.pid, a1.epoch)))
        .await
        .unwrap();
    assert_eq!((a2.producer_id, a2.epoch), (a0.pid, 2));
    assert_eq!(
        init_refused(c, "a", TIMEOUT_MS, Some((a0.pid, 0))).await,
        ErrorCode::ProducerFenced
    );
    // Kafka's default transaction.max.timeout.ms is 15 minutes.
    for bad in [0, -5, 900_001] {
        assert_eq!(
            init_refused(c, "a", bad, None).await,
            ErrorCode::InvalidTransactionTimeout,
            "{bad}"
        );
    }
    c.transactions()
        .init_transactional_producer("a", 900_000, None)
        .await
        .unwrap();
    assert_eq!(
        init_refused(c, "", TIMEOUT_MS, None).await,
        ErrorCode::InvalidRequest
    );
    // The producer ids survive a restart; the epoch goes on from there.
    let mut node = node;
    node.crash_and_reopen();
    let again = Client::init(node.c(), "a", TIMEOUT_MS).await.unwrap();
    assert_eq!((again.pid, again.epoch), (a0.pid, 4));
}

#[tokio::test]
async fn a_new_session_aborts_what_the_previous_one_left_open_and_fences_it() {
    let (node, mut zombie) = single_with_tx().await;
    let c = node.c();
    let (o0, o1, input) = (tp("out", 0), tp("out", 1), tp("in", 0));
    zombie.add(c, &[o0.clone(), o1.clone()]).await.unwrap();
    zombie.produce(c, &o0, &["z1", "z2"]).await.unwrap();
    zombie.produce(c, &o1, &["z3"]).await.unwrap();
    zombie.stage(c, "g", &[(input.clone(), 2)]).unwrap();
    assert!(!lso_is_free(c, &o0));

    let mut fresh = Client::init(c, "tx", TIMEOUT_MS).await.unwrap();
    assert_eq!(
        fresh.epoch,
        zombie.epoch + 1,
        "one bump: the fence's epoch is the new session's"
    );
    // The open transaction is aborted with markers before the epoch is out.
    assert_eq!(txn_state(c, "tx"), TxnState::Empty);
    for t in [&o0, &o1] {
        assert!(lso_is_free(c, t), "{t}");
        assert!(read_committed(c, t).is_empty(), "{t}");
    }
    assert_eq!(c.groups().fetch_committed("g", &input).unwrap(), None);
    // The zombie can append nothing and end nothing.
    assert_fenced(c, &mut zombie, &o0).await;
    // The new session works.
    fresh.add(c, std::slice::from_ref(&o0)).await.unwrap();
    fresh.produce(c, &o0, &["new"]).await.unwrap();
    fresh.end(c, true).await.unwrap();
    assert_eq!(read_committed(c, &o0), vec!["new"]);
    assert_eq!(read_uncommitted(c, &o0), vec!["z1", "z2", "new"]);
}

#[tokio::test]
async fn add_partitions_is_all_or_nothing_with_an_error_per_partition() {
    let node = single();
    let c = node.c();
    let s = Client::init(c, "tx", TIMEOUT_MS).await.unwrap();
    let asked = [
        tp("out", 0),
        tp("nope", 0),
        tp("out", 9),
        tp(OFFSETS_TOPIC, 0),
    ];
    let answers = c
        .transactions()
        .add_partitions(&s.id, s.pid, s.epoch, &asked)
        .await
        .unwrap();
    let codes: Vec<(TopicPartition, ErrorCode)> = answers
        .iter()
        .map(|(t, r)| (t.clone(), r.as_ref().unwrap_err().code()))
        .collect();
    assert_eq!(
        codes,
        vec![
            (tp("out", 0), ErrorCode::OperationNotAttempted),
            (tp("nope", 0), ErrorCode::UnknownTopic),
            (tp("out", 9), ErrorCode::UnknownPartition),
            (tp(OFFSETS_TOPIC, 0), ErrorCode::InvalidRequest),
        ]
    );
    let d = c.transactions().describe("tx").unwrap().unwrap();
    assert_eq!(
        (d.state, d.partitions.len()),
        (TxnState::Empty, 0),
        "nothing added"
    );
    // Whole-request errors.
    let out = [tp("out", 0)];
    assert_eq!(
        code(
            c.transactions()
                .add_partitions("nobody", s.pid, s.epoch, &out)
                .await
        ),
        ErrorCode::InvalidProducerIdMapping
    );
    assert_eq!(
        code(
            c.transactions()
                .add_partitions(&s.id, s.pid + 1, s.epoch, &out)
                .await
        ),
        ErrorCode::InvalidProducerIdMapping
    );
    assert_eq!(
        code(
            c.transactions()
                .add_partitions(&s.id, s.pid, s.epoch + 1, &out)
                .await
        ),
        ErrorCode::ProducerFenced
    );
    let ok = c
        .transactions()
        .add_partitions(&s.id, s.pid, s.epoch, &out)
        .await
        .unwrap();
    assert!(ok.iter().all(|(_, r)| r.is_ok()));
    let d = c.transactions().describe("tx").unwrap().unwrap();
    assert_eq!((d.state, d.partitions), (TxnState::Ongoing, out.to_vec()));
}

#[tokio::test]
async fn transactional_produce_is_verified_and_checked_by_the_idempotent_state() {
    let (node, mut s) = single_with_tx().await;
    let c = node.c();
    let (o0, o1) = (tp("out", 0), tp("out", 1));
    // Not added to the transaction: refused, nothing written (KIP-890).
    let err = s.produce(c, &o0, &["x"]).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::TransactionAbortable);
    assert_eq!(c.data().log_end_offset(&o0).unwrap(), 0);
    s.add(c, std::slice::from_ref(&o0)).await.unwrap();
    let first = s.produce(c, &o0, &["a", "b"]).await.unwrap();
    assert_eq!(first.base_offset, Some(0));
    assert_eq!(
        code(s.produce(c, &o1, &["x"]).await),
        ErrorCode::TransactionAbortable,
        "only the added partitions"
    );
    // The client's own sequences: an exact retry answers the original
    // offsets, a gap is out of order.
    let retry = s.batch(&o0, &["a", "b"]);
    let retry = RecordBatch::new(retry.records().to_vec())
        .unwrap()
        .with_producer(ProducerInfo {
            base_sequence: 0,
            ..retry.producer()
        })
        .with_transactional_id("tx");
    let dup = c
        .data()
        .submit_append(&o0, retry, AckMode::All, None)
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert!(dup.duplicate);
    assert_eq!(dup.base_offset, Some(0));
    s.seqs.insert(o0.clone(), 5);
    assert_eq!(
        code(s.produce(c, &o0, &["gap"]).await),
        ErrorCode::OutOfOrderSequence
    );
    s.seqs.insert(o0.clone(), 2);
    s.produce(c, &o0, &["c"]).await.unwrap();
    // Another epoch or another id: refused before anything is checked.
    let mut older = s.clone();
    older.epoch += 1;
    assert_eq!(
        code(older.produce(c, &o0, &["x"]).await),
        ErrorCode::InvalidProducerEpoch
    );
    let mut other = s.clone();
    other.id = "other".into();
    assert_eq!(
        code(other.produce(c, &o0, &["x"]).await),
        ErrorCode::InvalidProducerIdMapping
    );
    // Clients never write markers themselves.
    let marker = RecordBatch::marker(ControlType::Commit, "tx", s.batch(&o0, &["m"]).producer());
    assert_eq!(
        code(c.data().submit_append(&o0, marker, AckMode::All, None)),
        ErrorCode::InvalidRecord
    );
    assert_eq!(c.data().log_end_offset(&o0).unwrap(), 3);
    s.end(c, true).await.unwrap();
    assert_eq!(read_committed(c, &o0), vec!["a", "b", "c"]);
    // After EndTxn the partition is no longer part of a transaction.
    assert_eq!(
        code(s.produce(c, &o0, &["late"]).await),
        ErrorCode::TransactionAbortable
    );
}

#[tokio::test]
async fn staged_offsets_are_stored_exactly_when_the_transaction_commits() {
    // TxnOffsetCommit needs AddOffsetsToTxn first.
    let (node, mut s, out, input) = offsets_need_add_offsets(1).await;
    let c = node.c();
    s.add(c, std::slice::from_ref(&out)).await.unwrap();
    s.produce(c, &out, &["r"]).await.unwrap();
    s.stage(c, "g", &[(input.clone(), 7)]).unwrap();
    assert_eq!(
        c.groups().fetch_committed("g", &input).unwrap(),
        None,
        "staged only"
    );
    assert_eq!(
        code(
            c.transactions()
                .commit_offsets(&s.offset_commit("g", &[(tp("in", 3), 1)]))
        ),
        ErrorCode::UnknownPartition
    );
    assert_eq!(
        code(
            c.transactions()
                .commit_offsets(&s.offset_commit("g", &[(input.clone(), -1)]))
        ),
        ErrorCode::InvalidRequest
    );
    s.end(c, true).await.unwrap();
    assert_eq!(c.groups().fetch_committed("g", &input).unwrap(), Some(7));
    assert_eq!(read_committed(c, &out), vec!["r"]);

    // Aborted: dropped.
    s.stage(c, "g", &[(input.clone(), 99)]).unwrap();
    s.end(c, false).await.unwrap();
    assert_eq!(c.groups().fetch_committed("g", &input).unwrap(), Some(7));
    // The group's committed offsets are unaffected by a zombie's staging.
    let zombie = s.clone();
    Client::init(c, "tx", TIMEOUT_MS).await.unwrap();
    assert_eq!(
        code(zombie.stage(c, "g", &[(input.clone(), 50)])),
        ErrorCode::ProducerFenced
    );
    assert_eq!(c.groups().fetch_committed("g", &input).unwrap(), Some(7));
}

#[tokio::test]
async fn a_txn_offset_commit_with_membership_is_fenced_by_the_group() {
    let node = single();
    let c = node.c();
    let input = tp("in", 0);
    let m1 = c.groups().join("g", "m1", &["in".to_string()]).unwrap();
    let m2 = c.groups().join("g", "m2", &["in".to_string()]).unwrap();
    assert!(m2.generation > m1.generation);
    let s = Client::init(c, "tx", TIMEOUT_MS).await.unwrap();
    c.transactions()
        .add_offsets(&s.id, s.pid, s.epoch, "g")
        .unwrap();
    let commit = |generation: i32, member: &str, instance: Option<&str>| TxnOffsetCommit {
        generation_id: generation,
        member_id: member.to_string(),
        group_instance_id: instance.map(str::to_string),
        ..s.offset_commit("g", &[(input.clone(), 3)])
    };
    assert_eq!(
        code(
            c.transactions()
                .commit_offsets(&commit(m1.generation, "m1", None))
        ),
        ErrorCode::IllegalGeneration,
        "a consumer that missed the rebalance"
    );
    assert_eq!(
        code(
            c.transactions()
                .commit_offsets(&commit(m2.generation, "ghost", None))
        ),
        ErrorCode::UnknownMember
    );
    c.transactions()
        .commit_offsets(&commit(m2.generation, "m2", None))
        .unwrap();
    c.transactions()
        .commit_offsets(&commit(-1, "", None))
        .unwrap();
    s.end(c, true).await.unwrap();
    assert_eq!(c.groups().fetch_committed("g", &input).unwrap(), Some(3));

    // A static Kafka member restarts under a new member id: its old id is
    // fenced by its group.instance.id.
    let join = GroupJoin {
        group_id: "k".into(),
        member_id: String::new(),
        group_instance_id: Some("i-1".into()),
        client_id: "rdkafka".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), b("in"))],
        require_known_member_id: false,
        subscribed_topics: vec!["in".into()],
    };
    let first = c.groups().join_member(join.clone()).await.unwrap();
    c.groups()
        .sync_member(GroupSync {
            group_id: "k".into(),
            generation_id: first.generation_id,
            member_id: first.member_id.clone(),
            group_instance_id: Some("i-1".into()),
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignments: vec![(first.member_id.clone(), b("in-0"))],
            assigned_partitions: vec![(first.member_id.clone(), vec![input.clone()])],
        })
        .await
        .unwrap();
    let back = c.groups().join_member(join).await.unwrap();
    assert_ne!(back.member_id, first.member_id);
    c.transactions()
        .add_offsets(&s.id, s.pid, s.epoch, "k")
        .unwrap();
    let static_commit = |generation: i32, member: &str| TxnOffsetCommit {
        group_id: "k".into(),
        generation_id: generation,
        member_id: member.to_string(),
        group_instance_id: Some("i-1".into()),
        ..s.offset_commit("k", &[(input.clone(), 8)])
    };
    assert_eq!(
        code(
            c.transactions()
                .commit_offsets(&static_commit(first.generation_id, &first.member_id))
        ),
        ErrorCode::FencedInstanceId
    );
    c.transactions()
        .commit_offsets(&static_commit(back.generation_id, &back.member_id))
        .unwrap();
    s.end(c, true).await.unwrap();
    assert_eq!(c.groups().fetch_committed("k", &input).unwrap(), Some(8));
}

#[tokio::test]
async fn end_txn_retries_of_the_completed_outcome_succeed_and_mismatches_do_not() {
    let (node, mut s) = single_with_tx().await;
    let c = node.c();
    let out = tp("out", 0);
    assert_eq!(
        code(s.end(c, true).await),
        ErrorCode::InvalidTxnState,
        "Empty"
    );
    s.add(c, std::slice::from_ref(&out)).await.unwrap();
    s.produce(c, &out, &["v"]).await.unwrap();
    s.end(c, true).await.unwrap();
    s.end(c, true).await.unwrap();
    assert_eq!(code(s.end(c, false).await), ErrorCode::InvalidTxnState);
    s.add(c, std::slice::from_ref(&out)).await.unwrap();
    s.end(c, false).await.unwrap();
    s.end(c, false).await.unwrap();
    assert_eq!(code(s.end(c, true).await), ErrorCode::InvalidTxnState);
    assert_eq!(
        code(c.transactions().end("nobody", s.pid, s.epoch, true).await),
        ErrorCode::InvalidProducerIdMapping
    );
    assert_eq!(read_committed(c, &out), vec!["v"]);
}

#[tokio::test]
async fn requests_during_a_completion_in_progress_are_concurrent_transactions() {
    let node = replicated();
    let c = node.c().clone();
    let out = tp("out", 0);
    let mut s = Client::init(&c, "tx", TIMEOUT_MS).await.unwrap();
    s.add(&c, std::slice::from_ref(&out)).await.unwrap();
    replicating(&c, s.produce(&c, &out, &["v"])).await.unwrap();
    // EndTxn waits for its acks=all marker, which needs the follower.
    let ending = {
        let (c, s) = (c.clone(), s.clone());
        tokio::spawn(async move { s.end(&c, true).await })
    };
    while !c.transactions().describe("tx").unwrap().unwrap().completing {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        init_refused(&c, "tx", TIMEOUT_MS, None).await,
        ErrorCode::ConcurrentTransactions
    );
    assert_eq!(
        code(s.add(&c, std::slice::from_ref(&out)).await),
        ErrorCode::ConcurrentTransactions
    );
    assert_eq!(
        code(c.transactions().add_offsets(&s.id, s.pid, s.epoch, "g")),
        ErrorCode::ConcurrentTransactions
    );
    assert_eq!(
        code(s.end(&c, true).await),
        ErrorCode::ConcurrentTransactions
    );
    assert_eq!(code(s.end(&c, false).await), ErrorCode::InvalidTxnState);
    replicating(&c, ending).await.unwrap().unwrap();
    assert_eq!(txn_state(&c, "tx"), TxnState::CompleteCommit);
    assert_eq!(read_committed(&c, &out), vec!["v"]);
}

#[tokio::test]
async fn a_decided_transaction_whose_markers_must_wait_completes_later() {
    let node = replicated();
    let c = node.c().clone();
    let (o0, o1) = (tp("out", 0), tp("out", 1));
    let mut s = Client::init(&c, "tx", TIMEOUT_MS).await.unwrap();
    s.add(&c, &[o0.clone(), o1.clone()]).await.unwrap();
    replicating(&c, s.produce(&c, &o0, &["a"])).await.unwrap();
    replicating(&c, s.produce(&c, &o1, &["b"])).await.unwrap();
    // Partition 1 loses its follower: its marker is refused before append.
    let follower = c.topics().describe("out").unwrap().partitions[1].replicas[1];
    c.steps().remove_from_isr(&o1, follower).unwrap();
    // The decision is durable, so EndTxn succeeds, as in Kafka.
    replicating(&c, s.end(&c, true)).await.unwrap();
    let d = c.transactions().describe("tx").unwrap().unwrap();
    assert_eq!((d.state, d.completing), (TxnState::PrepareCommit, false));
    assert_eq!(read_committed(&c, &o0), vec!["a"], "its marker is written");
    assert!(read_committed(&c, &o1).is_empty() && !lso_is_free(&c, &o1));
    // The next transaction waits for it.
    assert_eq!(
        code(s.add(&c, std::slice::from_ref(&o0)).await),
        ErrorCode::ConcurrentTransactions
    );
    // The follower is back: the expiry step completes the transaction.
    c.steps().rejoin(&o1, follower).unwrap();
    c.steps().replicate_all_once().unwrap();
    assert_eq!(
        replicating(&c, c.transactions().expire()).await.unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(txn_state(&c, "tx"), TxnState::CompleteCommit);
    assert_eq!(read_committed(&c, &o1), vec!["b"]);
    assert!(lso_is_free(&c, &o1));
}

#[tokio::test]
async fn a_timeout_aborts_the_transaction_and_fences_its_producer() {
    let node = single();
    let c = node.c();
    let (out, input) = (tp("out", 0), tp("in", 0));
    let mut slow = Client::init(c, "slow", 1_000).await.unwrap();
    let mut steady = Client::init(c, "steady", TIMEOUT_MS).await.unwrap();
    slow.add(c, std::slice::from_ref(&out)).await.unwrap();
    slow.produce(c, &out, &["abandoned"]).await.unwrap();
    slow.stage(c, "g", &[(input.clone(), 5)]).unwrap();
    steady.add(c, std::slice::from_ref(&out)).await.unwrap();
    steady.produce(c, &out, &["steady"]).await.unwrap();
    node.clock.advance(1_000);
    assert!(
        c.transactions().expire().await.unwrap().is_empty(),
        "not older yet"
    );
    node.clock.advance(1);
    assert_eq!(c.transactions().expire().await.unwrap(), vec!["slow"]);
    assert_eq!(c.groups().fetch_committed("g", &input).unwrap(), None);
    // The zombie is fenced on every path.
    assert_fenced(c, &mut slow, &out).await;
    assert_eq!(
        code(slow.stage(c, "g", &[(input.clone(), 6)])),
        ErrorCode::ProducerFenced
    );
    // The steady transaction is untouched and commits.
    steady.end(c, true).await.unwrap();
    assert_eq!(read_committed(c, &out), vec!["steady"]);
    assert!(lso_is_free(c, &out));
    // A new session of the timed-out id starts again.
    let again = Client::init(c, "slow", 1_000).await.unwrap();
    assert_eq!(again.epoch, slow.epoch + 2);
}

#[tokio::test]
async fn an_ongoing_transaction_survives_a_crash_and_its_timeout_still_aborts_it() {
    let mut node = single();
    let (o0, o1) = (tp("out", 0), tp("out", 1));
    let mut s = Client::init(node.c(), "tx", 10_000).await.unwrap();
    s.add(node.c(), std::slice::from_ref(&o0)).await.unwrap();
    s.produce(node.c(), &o0, &["one"]).await.unwrap();
    let mut lost = Client::init(node.c(), "lost", 10_000).await.unwrap();
    lost.add(node.c(), std::slice::from_ref(&o1)).await.unwrap();
    lost.produce(node.c(), &o1, &["gone"]).await.unwrap();
    node.crash_and_reopen();
    let c = node.c();
    for id in ["tx", "lost"] {
        assert_eq!(
            c.transactions().describe(id).unwrap().unwrap().state,
            TxnState::Ongoing,
            "{id}"
        );
    }
    assert!(!lso_is_free(c, &o0) && !lso_is_free(c, &o1));
    // The producer that survived goes on with its own sequences.
    s.produce(c, &o0, &["two"]).await.unwrap();
    s.end(c, true).await.unwrap();
    assert_eq!(read_committed(c, &o0), vec!["one", "two"]);
    // The other one never comes back: its timeout aborts it.
    node.clock.advance(10_001);
    assert_eq!(c.transactions().expire().await.unwrap(), vec!["lost"]);
    assert!(lso_is_free(c, &o1));
    assert!(read_committed(c, &o1).is_empty());
}

/// A transaction over the three partitions of `out` with staged offsets,
/// decided with EndTxn(commit) while partition `k` (and those after it)
/// cannot take its marker, then a crash before anything else happens.
async fn crash_among_the_markers(k: usize) {
    let mut node = replicated();
    node.c().topics().create("in", 1, 2).unwrap();
    let c = node.c().clone();
    let outs: Vec<TopicPartition> = (0..3).map(|p| tp("out", p)).collect();
    let input = tp("in", 0);
    let mut s = Client::init(&c, "tx", TIMEOUT_MS).await.unwrap();
    s.add(&c, &outs).await.unwrap();
    for (i, t) in outs.iter().enumerate() {
        replicating(&c, s.produce(&c, t, &[&format!("v{i}")]))
            .await
            .unwrap();
    }
    s.stage(&c, "g", &[(input.clone(), 11)]).unwrap();
    // The markers are written in partition order: partition k is the first
    // that refuses (its follower left the ISR).
    let follower = c.topics().describe("out").unwrap().partitions[k].replicas[1];
    c.steps().remove_from_isr(&outs[k], follower).unwrap();
    replicating(&c, s.end(&c, true)).await.unwrap();
    assert_eq!(txn_state(&c, "tx"), TxnState::PrepareCommit, "k = {k}");
    for (i, t) in outs.iter().enumerate() {
        assert_eq!(lso_is_free(&c, t), i < k, "k = {k}, partition {i}");
    }
    assert_eq!(
        c.groups().fetch_committed("g", &input).unwrap(),
        None,
        "k = {k}"
    );
    drop(c);
    node.crash_and_reopen();
    let c = node.c();
    // Recovery wrote the missing markers and stored the offsets.
    assert_eq!(txn_state(c, "tx"), TxnState::CompleteCommit, "k = {k}");
    for (i, t) in outs.iter().enumerate() {
        assert!(lso_is_free(c, t), "k = {k}, partition {i}");
        assert_eq!(read_committed(c, t), vec![format!("v{i}")], "k = {k}");
    }
    assert_eq!(
        c.groups().fetch_committed("g", &input).unwrap(),
        Some(11),
        "k = {k}"
    );
}

#[tokio::test]
async fn a_crash_in_the_middle_of_end_txn_recovers_a_completed_transaction_and_a_moving_lso() {
    // Before the first marker, after one, after two.
    for k in 0..3 {
        crash_among_the_markers(k).await;
    }
}

#[tokio::test]
async fn a_storage_failure_during_end_txn_then_a_crash_recovers_the_commit() {
    // Fail the n-th write after the decision, wherever it lands (a marker
    // or the offsets log); the cluster turns FAILED and is killed.
    for n in 0..4 {
        let mut node = single();
        let c = node.c().clone();
        let outs: Vec<TopicPartition> = (0..3).map(|p| tp("out", p)).collect();
        let input = tp("in", 0);
        let mut s = Client::init(&c, "tx", TIMEOUT_MS).await.unwrap();
        s.add(&c, &outs).await.unwrap();
        for t in &outs {
            s.produce(&c, t, &["v"]).await.unwrap();
        }
        s.stage(&c, "g", &[(input.clone(), 4)]).unwrap();
        c.failure_injector().fail_writes_after(n);
        let ended = s.end(&c, true).await;
        c.failure_injector().clear();
        assert_eq!(code(ended), ErrorCode::ClusterFailed, "n = {n}");
        drop(c);
        node.crash_and_reopen();
        let c = node.c();
        assert_eq!(txn_state(c, "tx"), TxnState::CompleteCommit, "n = {n}");
        for t in &outs {
            assert!(lso_is_free(c, t), "n = {n}, {t}");
            assert_eq!(read_committed(c, t), vec!["v"], "n = {n}, {t}");
        }
        assert_eq!(
            c.groups().fetch_committed("g", &input).unwrap(),
            Some(4),
            "n = {n}"
        );
    }
}

#[tokio::test]
async fn the_teaching_operations_are_clients_of_the_same_flow() {
    let node = single();
    let c = node.c();
    let (out, input) = (tp("out", 1), tp("in", 0));
    let h = c.transactions().begin("etl").await.unwrap();
    // begin_txn is a new session (InitProducerId) plus an explicit begin.
    let d = c.transactions().describe("etl").unwrap().unwrap();
    assert_eq!(
        (d.state, d.producer_epoch, d.timeout_ms),
        (TxnState::Ongoing, 0, 60_000)
    );
    let (p, offset) = c
        .transactions()
        .send(&h, "out", None, Some(b("a")), Some(1))
        .await
        .unwrap();
    assert_eq!((p, offset), (1, 0));
    // The send added its partition with AddPartitionsToTxn and used the
    // sequence the partition expects.
    let d = c.transactions().describe("etl").unwrap().unwrap();
    assert_eq!(d.partitions, vec![out.clone()]);
    c.transactions()
        .send(&h, "out", None, Some(b("b")), Some(1))
        .await
        .unwrap();
    c.transactions()
        .send_offsets(&h, "g", &BTreeMap::from([(input.clone(), 1)]))
        .unwrap();
    assert_eq!(
        c.transactions().describe("etl").unwrap().unwrap().groups,
        vec!["g"]
    );
    c.transactions().commit(&h).await.unwrap();
    // A retried commit succeeds; an abort of the committed one does not.
    c.transactions().commit(&h).await.unwrap();
    assert_eq!(
        code(c.transactions().abort(&h).await),
        ErrorCode::InvalidTxnState
    );
    assert_eq!(read_committed(c, &out), vec!["a", "b"]);
    assert_eq!(c.groups().fetch_committed("g", &input).unwrap(), Some(1));
    // A send after the commit starts the next transaction of the session.
    c.transactions()
        .send(&h, "out", None, Some(b("c")), Some(1))
        .await
        .unwrap();
    assert_eq!(
        c.transactions().describe("etl").unwrap().unwrap().state,
        TxnState::Ongoing
    );
    c.transactions().abort(&h).await.unwrap();
    assert_eq!(read_committed(c, &out), vec!["a", "b"]);
    // A new session; a send to a topic that does not exist is refused
    // before it reaches the transaction.
    let h2 = c.transactions().begin("etl").await.unwrap();
    assert_eq!(h2.producer_epoch, h.producer_epoch + 1);
    let missing = c
        .transactions()
        .send(&h2, "nope", None, Some(b("x")), None)
        .await;
    assert_eq!(code(missing), ErrorCode::UnknownTopic);
    assert!(
        c.transactions()
            .describe("etl")
            .unwrap()
            .unwrap()
            .partitions
            .is_empty()
    );
    // The Kafka API sees the same transaction.
    assert_eq!(
        code(
            c.transactions()
                .end("etl", h.producer_id, h.producer_epoch, true)
                .await
        ),
        ErrorCode::ProducerFenced
    );
    c.transactions()
        .end("etl", h2.producer_id, h2.producer_epoch, true)
        .await
        .unwrap();
}

#[tokio::test]
async fn txn_offset_commit_keeps_leader_epochs_and_metadata_through_a_crash_and_commit() {
    let mut node = single();
    let input = tp("in", 0);
    let out = tp("out", 0);
    let mut s = Client::init(node.c(), "tx", TIMEOUT_MS).await.unwrap();
    s.add(node.c(), std::slice::from_ref(&out)).await.unwrap();
    s.produce(node.c(), &out, &["a"]).await.unwrap();
    node.c()
        .transactions()
        .add_offsets(&s.id, s.pid, s.epoch, "g")
        .unwrap();
    let mut commit = s.offset_commit("g", &[]);
    commit.offsets = BTreeMap::from([
        (
            input.clone(),
            OffsetAndMetadata::from_wire(5, 3, Some("from-txn".into())),
        ),
        (
            tp("out", 1),
            OffsetAndMetadata::from_wire(1, 0, Some("y".repeat(4097))),
        ),
    ]);
    let answers = node.c().transactions().commit_offsets(&commit).unwrap();
    assert!(answers[0].1.is_ok());
    assert_eq!(
        answers[1].1.as_ref().unwrap_err().code(),
        ErrorCode::OffsetMetadataTooLarge,
        "metadata over the bound is refused for its partition only"
    );
    // The staged epoch and metadata are journaled: a crash keeps them.
    node.crash_and_reopen();
    s.end(node.c(), true).await.unwrap();
    assert_eq!(
        node.c()
            .groups()
            .committed_for("g", Some(&[input.clone(), tp("out", 1)]))
            .unwrap(),
        vec![
            (
                input,
                Some(OffsetAndMetadata::from_wire(5, 3, Some("from-txn".into())))
            ),
            (tp("out", 1), None),
        ]
    );
}
