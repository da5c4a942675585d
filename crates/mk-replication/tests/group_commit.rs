//! Group commit on the leader (`PartitionReplicaSet::append_group`): the
//! answers, the log and the producer state are those of consecutive
//! `append` calls, with idempotent batches, refused batches and acks=all
//! mixed in.

mod common;

use common::*;
use mk_core::ErrorCode;
use mk_log::RecordBatch;
use mk_replication::{AckMode, AppendOutcome, PartitionReplicaSet, ReplicationError};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Item {
    /// A plain batch of that many records.
    Plain(usize),
    /// A plain batch over `max_batch_bytes`.
    TooLarge,
    /// A batch of producer 7 at this base sequence (right or wrong).
    Idempotent(i32),
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        6 => (1usize..4).prop_map(Item::Plain),
        1 => Just(Item::TooLarge),
        2 => (0i32..6).prop_map(Item::Idempotent),
    ]
}

fn build(i: usize, item: &Item) -> RecordBatch {
    let v = format!("v{i}");
    match item {
        Item::Plain(n) => batch(&vec![v.as_str(); *n]),
        Item::TooLarge => batch(&[&"x".repeat(2000)]),
        Item::Idempotent(seq) => idem(7, 0, *seq, &[&v]),
    }
}

/// What a caller can compare of an answer: the offsets or the error code.
fn seen(r: Result<AppendOutcome, ReplicationError>) -> Result<(Option<i64>, bool), ErrorCode> {
    match r {
        Ok(AppendOutcome::Done(r)) => Ok((r.base_offset, r.duplicate)),
        Ok(AppendOutcome::Pending(h)) => Ok((Some(h.base_offset()), false)),
        Err(e) => Err(e.code()),
    }
}

fn harness() -> Harness {
    Harness::with(|c| c.log.max_batch_bytes = 1000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_group_answers_and_writes_like_consecutive_appends(
        items in prop::collection::vec(item(), 1..30),
        cuts in prop::collection::vec(1usize..7, 1..30),
        acks in prop_oneof![Just(AckMode::Zero), Just(AckMode::One), Just(AckMode::All)],
    ) {
        let (h1, h2) = (harness(), harness());
        let (mut one, mut grouped): (PartitionReplicaSet, PartitionReplicaSet) =
            (h1.create(&[1]), h2.create(&[1]));
        let singly: Vec<_> = items
            .iter()
            .enumerate()
            .map(|(i, it)| seen(one.append(build(i, it), acks, None)))
            .collect();
        let mut together = Vec::new();
        let mut next = 0;
        for cut in cuts.iter().cycle() {
            if next >= items.len() {
                break;
            }
            let end = (next + cut).min(items.len());
            let group = (next..end).map(|i| build(i, &items[i])).collect();
            together.extend(grouped.append_group(group, acks, None).into_iter().map(seen));
            next = end;
        }
        prop_assert_eq!(&together, &singly);
        prop_assert_eq!(visible(&grouped), visible(&one));
        prop_assert_eq!(grouped.high_watermark(), one.high_watermark());
        prop_assert_eq!(grouped.next_sequence(7, 0), one.next_sequence(7, 0));
    }
}

#[test]
fn a_refused_batch_in_a_group_leaves_its_neighbours_written() {
    let h = harness();
    let mut set = h.create(&[1]);
    let answers = set.append_group(
        vec![
            batch(&["a"]),
            build(1, &Item::TooLarge),
            batch(&["b"]),
            idem(7, 0, 3, &["out of order"]),
            batch(&["c"]),
        ],
        AckMode::One,
        None,
    );
    let got: Vec<_> = answers.into_iter().map(seen).collect();
    assert_eq!(
        got,
        vec![
            Ok((Some(0), false)),
            Err(ErrorCode::InvalidRecord),
            Ok((Some(1), false)),
            Err(ErrorCode::OutOfOrderSequence),
            Ok((Some(2), false)),
        ]
    );
    assert_eq!(visible(&set), vals(&[(0, "a"), (1, "b"), (2, "c")]));
}

#[test]
fn a_fenced_leader_epoch_refuses_every_batch_of_the_group() {
    let h = harness();
    let mut set = h.create(&[1]);
    let answers = set.append_group(vec![batch(&["a"]), batch(&["b"])], AckMode::One, Some(9));
    assert!(
        answers
            .into_iter()
            .all(|a| seen(a) == Err(ErrorCode::FencedLeaderEpoch))
    );
    assert_eq!(set.log_end_offset(), 0);
}
