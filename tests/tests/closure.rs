//! The cross-feature closure test of issue 5: idempotent acks=all produce
//! with two brokers and min ISR 2, consume in a group, commit, member
//! expiry, a new member, promotion, close, reopen — committed offsets and
//! leadership survive.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

mod common;

use common::*;
use mk_adapter_direct::mk_cluster::*;
use mk_client::*;
use std::future::Future;

/// Awaits `fut` while driving replication by hand (the explicit step the
/// server's driver would run), so acks=all completes deterministically.
async fn drive<T: Send + 'static>(env: &Env, fut: impl Future<Output = T> + Send + 'static) -> T {
    let task = tokio::spawn(fut);
    while !task.is_finished() {
        env.admin.replicate_once().unwrap();
        tokio::task::yield_now().await;
    }
    task.await.unwrap()
}

async fn send_all(env: &Env, p: &Producer, from: usize, to: usize) -> Vec<RecordMetadata> {
    let futs: Vec<RecordFuture> = (from..to)
        .map(|i| {
            p.send(ProducerRecord::new(
                "orders",
                Some(b(&format!("k{}", i % 7))),
                Some(b(&format!("o{i}"))),
            ))
            .unwrap()
        })
        .collect();
    let p2 = p.clone();
    drive(env, async move { p2.flush().await }).await.unwrap();
    let mut out = Vec::new();
    for f in futs {
        out.push(f.await.unwrap());
    }
    out
}

#[tokio::test]
async fn e2e_closure_idempotent_acks_all_group_expiry_promotion_restart() {
    let mut env = Env::new(vec![1, 2], 2);
    env.admin.create_topic("orders", 2, 2).unwrap();
    let p = env.producer(ProducerOptions {
        acks: AckMode::All,
        idempotent: true,
        name: Some("orders-app".into()),
        ..ProducerOptions::default()
    });
    let first = send_all(&env, &p, 0, 20).await;
    assert!(first.iter().all(|m| m.offset.is_some()));

    let a = env.member("billing", "a");
    a.subscribe(&["orders"]).unwrap();
    assert_eq!(a.poll(100).unwrap().len(), 20);
    a.commit().unwrap();

    send_all(&env, &p, 20, 30).await;
    env.clock.advance(env.config.group_session_timeout_ms + 1);
    assert_eq!(
        env.admin.expire_group_members().unwrap(),
        vec![("billing".to_string(), "a".to_string())]
    );

    let bb = env.member("billing", "b");
    assert_eq!(bb.subscribe(&["orders"]).unwrap().len(), 2);
    let second = bb.poll(100).unwrap();
    assert_eq!(
        second.len(),
        10,
        "the new member resumes from the committed offsets"
    );
    bb.commit().unwrap();
    let committed = env.cluster.groups().committed("billing").unwrap();

    let le = env.admin.promote(&tp("orders", 0), 2).unwrap();
    assert_eq!((le.leader_id, le.leader_epoch), (2, 1));
    env.admin.rejoin(&tp("orders", 0), 1).unwrap();
    // The idempotent producer keeps its sequences across the promotion: the
    // new leader has its producer state.
    let third = send_all(&env, &p, 30, 40).await;
    assert!(third.iter().all(|m| m.offset.is_some()));
    let total: i64 = (0..2)
        .map(|part| env.cluster.data().visible_end(&tp("orders", part)).unwrap())
        .sum();
    assert_eq!(total, 40, "every record exactly once, no duplicates");

    env.restart().await;
    assert_eq!(
        env.cluster.groups().committed("billing").unwrap(),
        committed,
        "committed offsets survive"
    );
    let info = env.partition("orders", 0);
    assert_eq!(
        (info.leader_id, info.leader_epoch),
        (2, 1),
        "leadership survives"
    );
    let c = env
        .cluster
        .consumer("billing", ConsumerOptions::default())
        .unwrap();
    c.subscribe(&["orders"]).unwrap();
    assert_eq!(
        c.poll(100).unwrap().len(),
        10,
        "a consumer after restart sees exactly the uncommitted tail"
    );
    env.cluster.lifecycle().close().await.unwrap();
    assert_eq!(env.cluster.lifecycle().owned_tasks(), 0);
}
