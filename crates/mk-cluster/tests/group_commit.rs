//! Group commit in the core (`produce_group`, `submit_append_group`):
//! pipelined produce requests are answered exactly as one `produce` call
//! after another would answer them — offsets, acks, idempotence and each
//! request's own error — while the plain ones to one partition go down in
//! one write.

mod common;

use common::{b, open, open_with, read_uncommitted, replicating, tp};
use mk_cluster::*;
use std::sync::Arc;

fn req(p: &TopicPartition, value: &str, acks: AckMode) -> ProduceRequest {
    ProduceRequest {
        tp: p.clone(),
        records: vec![ProduceEntry {
            value: Some(b(value)),
            ..ProduceEntry::default()
        }],
        acks,
        producer: None,
    }
}

fn idempotent(p: &TopicPartition, value: &str, id: ProducerIdentity, seq: i32) -> ProduceRequest {
    ProduceRequest {
        producer: Some(ProducerInfo {
            producer_id: id.producer_id,
            producer_epoch: id.epoch,
            base_sequence: seq,
        }),
        ..req(p, value, AckMode::One)
    }
}

/// What a client sees of an answer: the base offset or the error code.
fn seen(answers: Vec<Result<ProduceResponse>>) -> Vec<Result<(u32, Option<i64>), ErrorCode>> {
    answers
        .into_iter()
        .map(|a| {
            a.map(|r| (r.partition, r.base_offset))
                .map_err(|e| e.code())
        })
        .collect()
}

/// A pipeline with refusals of every kind among plain requests: too large,
/// an unknown partition, an out-of-order idempotent batch.
fn pipeline(c: &BrokerCluster) -> Vec<ProduceRequest> {
    let (p0, p1) = (tp("g", 0), tp("g", 1));
    let id = c.transactions().init_producer(None).unwrap();
    let big = "x".repeat(2_000);
    vec![
        req(&p0, "a", AckMode::One),
        req(&p0, "b", AckMode::One),
        req(&p0, &big, AckMode::One),
        req(&p0, "c", AckMode::One),
        req(&tp("g", 9), "lost", AckMode::One),
        req(&p0, "d", AckMode::One),
        idempotent(&p0, "i0", id, 0),
        idempotent(&p0, "i5", id, 5),
        req(&p0, "e", AckMode::One),
        req(&p0, "z", AckMode::Zero),
        req(&p1, "p1", AckMode::One),
        req(&p0, "f", AckMode::One),
    ]
}

fn small_batches(c: MiniKafkaConfig) -> MiniKafkaConfig {
    MiniKafkaConfig {
        max_batch_bytes: 1_000,
        ..c
    }
}

#[tokio::test]
async fn one_refused_request_of_a_pipelined_group_leaves_its_neighbours_exact() {
    let dir = tempfile::tempdir().unwrap();
    let c = open_with(dir.path(), &ManualClock::new(1_000), small_batches);
    c.topics().create("g", 2, 1).unwrap();
    let answers = seen(c.data().produce_group(pipeline(&c)).await);
    assert_eq!(
        answers,
        vec![
            Ok((0, Some(0))),
            Ok((0, Some(1))),
            Err(ErrorCode::InvalidRecord),
            Ok((0, Some(2))),
            Err(ErrorCode::UnknownPartition),
            Ok((0, Some(3))),
            Ok((0, Some(4))),
            Err(ErrorCode::OutOfOrderSequence),
            Ok((0, Some(5))),
            Ok((0, None)),
            Ok((1, Some(0))),
            Ok((0, Some(7))),
        ]
    );
    assert_eq!(
        read_uncommitted(&c, &tp("g", 0)),
        ["a", "b", "c", "d", "i0", "e", "z", "f"]
    );
    assert_eq!(read_uncommitted(&c, &tp("g", 1)), ["p1"]);
}

#[tokio::test]
async fn a_group_answers_as_one_produce_after_another() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let clock = ManualClock::new(1_000);
    let (one, grouped) = (
        open_with(d1.path(), &clock, small_batches),
        open_with(d2.path(), &clock, small_batches),
    );
    let mut singly = Vec::new();
    one.topics().create("g", 2, 1).unwrap();
    for r in pipeline(&one) {
        singly.push(one.data().produce(r).await);
    }
    grouped.topics().create("g", 2, 1).unwrap();
    let together = grouped.data().produce_group(pipeline(&grouped)).await;
    assert_eq!(seen(together), seen(singly));
    for p in [tp("g", 0), tp("g", 1)] {
        assert_eq!(read_uncommitted(&grouped, &p), read_uncommitted(&one, &p));
    }
}

#[tokio::test]
async fn plain_requests_to_one_partition_are_one_write() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(FaultInjector::new());
    let c = BrokerCluster::open_with_faults(
        MiniKafkaConfig::new(dir.path()),
        Arc::new(ManualClock::new(1_000)),
        faults.clone(),
    )
    .unwrap();
    c.topics().create("w", 1, 1).unwrap();
    let p = tp("w", 0);
    let before = faults.sites_passed();
    let group = (0..20)
        .map(|i| req(&p, &format!("v{i}"), AckMode::One))
        .collect();
    let answers = seen(c.data().produce_group(group).await);
    assert_eq!(
        faults.sites_passed() - before,
        1,
        "twenty requests, one write"
    );
    assert_eq!(answers.last(), Some(&Ok((0, Some(19)))));

    let before = faults.sites_passed();
    for i in 20..40 {
        c.data()
            .produce(req(&p, &format!("v{i}"), AckMode::One))
            .await
            .unwrap();
    }
    assert_eq!(faults.sites_passed() - before, 20);
}

#[tokio::test]
async fn acks_all_in_a_group_waits_for_the_followers() {
    let dir = tempfile::tempdir().unwrap();
    let c = open_with(dir.path(), &ManualClock::new(1_000), |c| {
        c.with_brokers(vec![1, 2, 3])
    });
    c.topics().create("r", 1, 3).unwrap();
    let p = tp("r", 0);
    let group = (0..5)
        .map(|i| req(&p, &format!("v{i}"), AckMode::All))
        .collect();
    let answers = replicating(&c, c.data().produce_group(group)).await;
    let offsets: Vec<_> = seen(answers).into_iter().map(|a| a.unwrap().1).collect();
    assert_eq!(offsets, [0, 1, 2, 3, 4].map(Some));
    let fetched = c
        .data()
        .fetch(&FetchRequest {
            tp: p.clone(),
            offset: 0,
            max_records: 10,
            max_bytes: None,
            isolation: Isolation::ReadUncommitted,
        })
        .unwrap();
    assert_eq!(
        fetched.high_watermark, 5,
        "every ack came after the HW passed it"
    );
}

#[tokio::test]
async fn an_unknown_topic_refuses_each_request_of_a_group() {
    let dir = tempfile::tempdir().unwrap();
    let c = open(dir.path(), &ManualClock::new(1_000));
    let p = tp("never", 0);
    let group = (0..3)
        .map(|i| req(&p, &format!("v{i}"), AckMode::One))
        .collect();
    let answers = seen(c.data().produce_group(group).await);
    assert_eq!(answers, vec![Err(ErrorCode::UnknownTopic); 3]);
}
