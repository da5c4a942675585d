//! Topic configs that change how an append is acknowledged: a topic's own
//! `min.insync.replicas` for acks=all (NOT_ENOUGH_REPLICAS before the
//! append, NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrinks under a
//! waiting one), altered at run time, and the broker time a LogAppendTime
//! topic reports for an append.

mod common;

use common::*;
use mk_cluster::*;

fn set(key: &str, value: &str) -> ConfigChange {
    ConfigChange::Set {
        key: key.into(),
        value: value.into(),
    }
}

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
    c.topics()
        .alter_config("strict", &[set("min.insync.replicas", "2")], false)
        .unwrap();
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
    c.topics()
        .alter_config("strict", &[set("min.insync.replicas", "1")], false)
        .unwrap();
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
    c.topics()
        .alter_config("strict", &[set("min.insync.replicas", "2")], false)
        .unwrap();
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
    c.topics()
        .alter_config(
            "stamped",
            &[set("message.timestamp.type", "LogAppendTime")],
            false,
        )
        .unwrap();
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
