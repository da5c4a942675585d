//! Topic configs that change how an append is acknowledged: a topic's own
//! `min.insync.replicas` for acks=all (NOT_ENOUGH_REPLICAS before the
//! append, NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrinks under a
//! waiting one), altered at run time, and the broker time a LogAppendTime
//! topic reports for an append; `unclean.leader.election.enable` (the
//! topic's, else the broker default) deciding whether an out-of-sync
//! replica leads when no in-sync one is left.

mod common;

use common::*;
use mk_cluster::*;

fn batch(value: &str) -> RecordBatch {
    RecordBatch::new(vec![Record::new(None, Some(b(value)), 1_000)]).unwrap()
}

#[tokio::test]
async fn a_topics_min_insync_replicas_decides_acks_all_and_follows_alterations() {
    // The broker's default is 1: only the topic asks for 2.
    let node = Node::new(|c| c.broker_ids = vec![1, 2]);
    let c = node.c();
    c.topics().create("strict", 1, 2).unwrap();
    c.topics().create("lenient", 1, 2).unwrap();
    alter_topic(c, "strict", &[("min.insync.replicas", "2")]);
    let (strict, lenient) = (tp("strict", 0), tp("lenient", 0));
    // With both replicas in sync, acks=all waits for the follower.
    let pending = c
        .data()
        .submit_append(&strict, batch("a"), AckMode::All, None)
        .unwrap();
    let r = replicating(c, pending.wait()).await.unwrap();
    assert_eq!(r.base_offset, Some(0));

    for t in [&strict, &lenient] {
        c.steps().remove_from_isr(t, 2).unwrap();
    }
    let e = c
        .data()
        .submit_append(&strict, batch("b"), AckMode::All, None)
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotEnoughReplicas, "{e}");
    assert_eq!(
        c.data().log_end_offset(&strict).unwrap(),
        1,
        "nothing written"
    );
    // acks=1 does not ask, and the other topic keeps the broker's 1.
    c.data()
        .append_batch(&strict, batch("c"), AckMode::One)
        .await
        .unwrap();
    c.data()
        .append_batch(&lenient, batch("d"), AckMode::All)
        .await
        .unwrap();
    // Lowered at run time: the next acks=all append is taken.
    alter_topic(c, "strict", &[("min.insync.replicas", "1")]);
    c.data()
        .append_batch(&strict, batch("e"), AckMode::All)
        .await
        .unwrap();
}

#[tokio::test]
async fn an_isr_that_shrinks_under_a_waiting_append_fails_it_after_the_append() {
    let node = Node::new(|c| c.broker_ids = vec![1, 2]);
    let c = node.c();
    c.topics().create("strict", 1, 2).unwrap();
    alter_topic(c, "strict", &[("min.insync.replicas", "2")]);
    let t = tp("strict", 0);
    let pending = c
        .data()
        .submit_append(&t, batch("x"), AckMode::All, None)
        .unwrap();
    let waiter = tokio::spawn(pending.wait());
    c.steps().remove_from_isr(&t, 2).unwrap();
    let e = waiter.await.unwrap().unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotEnoughReplicasAfterAppend, "{e}");
    // The record was written on the leader, as in Kafka.
    assert_eq!(c.data().log_end_offset(&t).unwrap(), 1);
}

#[tokio::test]
async fn a_log_append_time_topic_reports_the_time_it_stamped() {
    let node = Node::new(|_| {});
    let c = node.c();
    c.topics().create("stamped", 1, 1).unwrap();
    c.topics().create("created", 1, 1).unwrap();
    alter_topic(c, "stamped", &[("message.timestamp.type", "LogAppendTime")]);
    let now = c.clock().now_ms();
    let stamped = c
        .data()
        .submit_append(&tp("stamped", 0), batch("s"), AckMode::One, None)
        .unwrap();
    assert_eq!(stamped.log_append_time_ms(), Some(now));
    let created = c
        .data()
        .submit_append(&tp("created", 0), batch("c"), AckMode::One, None)
        .unwrap();
    assert_eq!(created.log_append_time_ms(), None);
    // Grouped appends report it per batch too.
    let grouped = c.data().submit_append_group(
        &tp("stamped", 0),
        vec![batch("g1"), batch("g2")],
        AckMode::One,
    );
    for g in grouped {
        assert_eq!(g.unwrap().log_append_time_ms(), Some(now));
    }
}

/// Two brokers; every topic named gets "a" on both replicas, then "b" on
/// broker 1 alone (broker 2 was offline and is back, out of sync), then
/// broker 1, the leader, goes offline: no in-sync replica is left.
async fn leader_lost_with_only_an_out_of_sync_replica(
    c: &BrokerCluster,
    topics: &[&str],
) -> Vec<(TopicPartition, LeaderAndEpoch)> {
    for t in topics {
        let p = tp(t, 0);
        c.data()
            .append_batch(&p, batch("a"), AckMode::One)
            .await
            .unwrap();
    }
    for _ in 0..3 {
        c.steps().replicate_all_once().unwrap();
    }
    c.brokers().take_offline(2).unwrap();
    for t in topics {
        let p = tp(t, 0);
        c.data()
            .append_batch(&p, batch("b"), AckMode::One)
            .await
            .unwrap();
        assert_eq!(c.topics().describe(t).unwrap().partitions[0].isr, vec![1]);
    }
    assert!(c.brokers().bring_online(2).unwrap());
    c.brokers().take_offline(1).unwrap()
}

fn leader_of(c: &BrokerCluster, t: &str) -> (i32, i32) {
    let d = c.topics().describe(t).unwrap();
    (d.partitions[0].leader_id, d.partitions[0].leader_epoch)
}

#[tokio::test]
async fn unclean_election_follows_the_topics_config_and_its_alteration() {
    let node = Node::new(|c| c.broker_ids = vec![1, 2]);
    let c = node.c();
    for t in ["u", "k"] {
        c.topics().create(t, 1, 2).unwrap();
    }
    let moved = leader_lost_with_only_an_out_of_sync_replica(c, &["u", "k"]).await;
    // The default (false): both partitions stay offline.
    assert!(moved.is_empty(), "{moved:?}");
    for t in ["u", "k"] {
        assert_eq!(c.brokers().available_leader(&tp(t, 0)).unwrap(), None);
        let e = c.brokers().check_leader(&tp(t, 0), 2).unwrap_err();
        assert_eq!(e.code(), ErrorCode::LeaderNotAvailable, "{e}");
    }
    // Turning it on elects the out-of-sync replica at once; "b" is lost.
    alter_topic(c, "u", &[("unclean.leader.election.enable", "true")]);
    assert_eq!(leader_of(c, "u"), (2, 1));
    assert_eq!(c.brokers().available_leader(&tp("u", 0)).unwrap(), Some(2));
    assert_eq!(read_uncommitted(c, &tp("u", 0)), vec!["a"]);
    let r = c
        .data()
        .append_batch(&tp("u", 0), batch("c"), AckMode::One)
        .await
        .unwrap();
    assert_eq!(r.base_offset, Some(1), "the new leader writes at its LEO");
    // The other topic kept false: no leader until broker 1 returns.
    assert_eq!(c.brokers().available_leader(&tp("k", 0)).unwrap(), None);
    assert!(c.brokers().bring_online(1).unwrap());
    for _ in 0..3 {
        c.steps().replicate_all_once().unwrap();
    }
    // Broker 1 truncated its "b" and follows the new leader.
    let d = c.topics().describe("u").unwrap();
    assert_eq!(
        (d.partitions[0].leader_id, d.partitions[0].isr.clone()),
        (2, vec![1, 2])
    );
    assert_eq!(read_uncommitted(c, &tp("u", 0)), vec!["a", "c"]);
    assert_eq!(leader_of(c, "k"), (1, 0));
    assert_eq!(read_uncommitted(c, &tp("k", 0)), vec!["a", "b"]);
}

#[tokio::test]
async fn the_broker_default_allows_unclean_election_unless_the_topic_refuses_it() {
    let node = Node::new(|c| c.broker_ids = vec![1, 2]);
    let c = node.c();
    let on = IncrementalChange {
        key: "unclean.leader.election.enable".into(),
        op: IncrementalOp::Set("true".into()),
    };
    c.alter_broker_configs(None, &[on], false, false).unwrap();
    for t in ["open", "strict"] {
        c.topics().create(t, 1, 2).unwrap();
    }
    alter_topic(c, "strict", &[("unclean.leader.election.enable", "false")]);
    let moved = leader_lost_with_only_an_out_of_sync_replica(c, &["open", "strict"]).await;
    assert_eq!(
        moved,
        vec![(
            tp("open", 0),
            LeaderAndEpoch {
                leader_id: 2,
                leader_epoch: 1
            }
        )]
    );
    assert_eq!(read_uncommitted(c, &tp("open", 0)), vec!["a"]);
    assert_eq!(
        c.brokers().available_leader(&tp("strict", 0)).unwrap(),
        None
    );
    assert_eq!(leader_of(c, "strict"), (1, 0));
}
