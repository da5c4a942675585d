//! Model-based property test of coordinator-assigned (JSON-TCP) members:
//! random sequences of joins, leaves, heartbeats, clock steps, expiries,
//! commits, compactions, crashes and restarts. After every step the
//! coordinator must keep the invariants of spec 03, answer each commit with
//! the code the commit rule's order predicts, and hold exactly the committed
//! offsets of a plain in-test model. (The classic protocol's model test is
//! `classic_model.rs`.)
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

mod common;

use common::Fixture;
use mk_core::{Clock, ErrorCode, TopicPartition};
use mk_group::{AssignorKind, GroupState};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

const GROUPS: [&str; 3] = ["g0", "g1", "g2"];
const MEMBERS: [&str; 4] = ["m0", "m1", "m2", "m3"];
const TOPICS: [&str; 3] = ["orders", "payments", "audit"];

#[derive(Debug, Clone)]
enum Op {
    Join {
        group: usize,
        member: usize,
        topics: Vec<usize>,
        assignor: Option<usize>,
    },
    Leave {
        group: usize,
        member: usize,
    },
    Heartbeat {
        group: usize,
        member: usize,
    },
    Advance(i64),
    Expire,
    Commit {
        group: usize,
        member: usize,
        stale: bool,
        offsets: Vec<(usize, u32, i64)>,
    },
    CommitDirect {
        group: usize,
        offsets: Vec<(usize, u32, i64)>,
    },
    Compact,
    Crash,
    Restart,
}

fn arb_offsets() -> impl Strategy<Value = Vec<(usize, u32, i64)>> {
    prop::collection::vec((0usize..3, 0u32..5, -2i64..100), 0..4)
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..3, 0usize..4, prop::sample::subsequence(vec![0usize, 1, 2], 0..=3), prop::option::of(0usize..3))
            .prop_map(|(group, member, topics, assignor)| Op::Join { group, member, topics, assignor }),
        2 => (0usize..3, 0usize..4).prop_map(|(group, member)| Op::Leave { group, member }),
        2 => (0usize..3, 0usize..4).prop_map(|(group, member)| Op::Heartbeat { group, member }),
        2 => (0i64..8_000).prop_map(Op::Advance),
        1 => Just(Op::Expire),
        6 => (0usize..3, 0usize..4, any::<bool>(), arb_offsets())
            .prop_map(|(group, member, stale, offsets)| Op::Commit { group, member, stale, offsets }),
        2 => (0usize..3, arb_offsets()).prop_map(|(group, offsets)| Op::CommitDirect { group, offsets }),
        1 => Just(Op::Compact),
        1 => Just(Op::Crash),
        1 => Just(Op::Restart),
    ]
}

fn to_map(offsets: &[(usize, u32, i64)]) -> BTreeMap<TopicPartition, i64> {
    offsets
        .iter()
        .map(|(t, p, o)| (TopicPartition::new(TOPICS[*t], *p), *o))
        .collect()
}

/// The code the commit rule (Kafka's order) predicts for a member's commit,
/// from the group as described before the call; `None` means accepted.
fn expected_commit(
    f: &mut Fixture,
    group: &str,
    member: &str,
    generation: i32,
    offsets: &BTreeMap<TopicPartition, i64>,
) -> Option<ErrorCode> {
    let described = f.c().describe_group(group);
    let no_members = described.as_ref().is_none_or(|d| d.members.is_empty());
    if generation < 0 && no_members {
        // A negative generation is a plain commit while nobody is a member.
        return expected_direct(f, group, offsets);
    }
    let Some(d) = described else {
        return Some(ErrorCode::IllegalGeneration);
    };
    let Some(m) = d.members.iter().find(|m| m.member_id == member) else {
        return Some(ErrorCode::UnknownMember);
    };
    if generation != d.generation {
        return Some(ErrorCode::IllegalGeneration);
    }
    if d.state != GroupState::Stable {
        return Some(ErrorCode::RebalanceInProgress);
    }
    offsets_refusal(
        offsets,
        |tp| !m.assignment.contains(tp),
        ErrorCode::NotPartitionOwner,
    )
}

fn expected_direct(
    f: &mut Fixture,
    group: &str,
    offsets: &BTreeMap<TopicPartition, i64>,
) -> Option<ErrorCode> {
    if f.c()
        .describe_group(group)
        .is_some_and(|d| !d.members.is_empty())
    {
        return Some(ErrorCode::UnknownMember);
    }
    offsets_refusal(
        offsets,
        |tp| tp.partition >= f.meta[&tp.topic],
        ErrorCode::UnknownPartition,
    )
}

/// The commit rule's last checks, in its order: a partition this commit
/// may not name (`refused` answers `code`), then a negative offset.
fn offsets_refusal(
    offsets: &BTreeMap<TopicPartition, i64>,
    refused: impl Fn(&TopicPartition) -> bool,
    code: ErrorCode,
) -> Option<ErrorCode> {
    if offsets.keys().any(refused) {
        return Some(code);
    }
    offsets
        .values()
        .any(|o| *o < 0)
        .then_some(ErrorCode::InvalidRequest)
}

fn check_invariants(
    f: &mut Fixture,
    model: &BTreeMap<String, BTreeMap<TopicPartition, i64>>,
    generations: &mut BTreeMap<String, i32>,
) -> Result<(), TestCaseError> {
    for group in GROUPS {
        let committed = f.c().committed_offsets(group);
        prop_assert_eq!(
            &committed,
            &model.get(group).cloned().unwrap_or_default(),
            "offsets of {}",
            group
        );
        let Some(d) = f.c().describe_group(group) else {
            continue;
        };
        let seen = generations.entry(group.to_string()).or_insert(0);
        prop_assert!(
            d.generation >= *seen,
            "generation of {} went back from {} to {}",
            group,
            seen,
            d.generation
        );
        *seen = d.generation;
        prop_assert_eq!(d.state == GroupState::Empty, d.members.is_empty());
        // Coordinator-assigned groups rebalance within the call.
        prop_assert!(matches!(d.state, GroupState::Empty | GroupState::Stable));
        let mut owners: BTreeMap<TopicPartition, usize> = BTreeMap::new();
        for m in &d.members {
            for p in &m.assignment {
                prop_assert!(m.topics.contains(&p.topic));
                *owners.entry(p.clone()).or_default() += 1;
            }
        }
        let subscribed: BTreeSet<&String> = d.members.iter().flat_map(|m| &m.topics).collect();
        let expected: usize = subscribed.iter().map(|t| f.meta[*t] as usize).sum();
        prop_assert_eq!(owners.len(), expected, "unowned partitions in {}", group);
        prop_assert!(
            owners.values().all(|n| *n == 1),
            "shared partitions in {}",
            group
        );
    }
    Ok(())
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut f = Fixture::new();
    let mut model: BTreeMap<String, BTreeMap<TopicPartition, i64>> = BTreeMap::new();
    let mut generations = BTreeMap::new();
    for op in ops {
        match op {
            Op::Join {
                group,
                member,
                topics,
                assignor,
            } => {
                let topics: Vec<&str> = topics.iter().map(|t| TOPICS[*t]).collect();
                let assignor = assignor.map(|a| AssignorKind::ALL[a]);
                let (c, meta) = f.parts();
                let current = c.describe_group(GROUPS[group]);
                let conflict = assignor.is_some_and(|a| {
                    current.is_some_and(|d| {
                        d.assignor != a && d.members.iter().any(|m| m.member_id != MEMBERS[member])
                    })
                });
                let r =
                    c.join_with_assignor(GROUPS[group], MEMBERS[member], &topics, assignor, meta);
                match r {
                    Ok(_) => prop_assert!(!conflict),
                    Err(e) => {
                        prop_assert!(conflict, "{}", e);
                        prop_assert_eq!(e.code(), ErrorCode::InvalidRequest);
                    }
                }
            }
            Op::Leave { group, member } => {
                f.leave(GROUPS[group], MEMBERS[member]);
            }
            Op::Heartbeat { group, member } => {
                let generation = f
                    .c()
                    .describe_group(GROUPS[group])
                    .map_or(0, |d| d.generation);
                let _ = f.c().heartbeat(GROUPS[group], MEMBERS[member], generation);
            }
            Op::Advance(ms) => f.clock.advance(ms),
            Op::Expire => {
                f.expire();
            }
            Op::Commit {
                group,
                member,
                stale,
                offsets,
            } => {
                let (g, m) = (GROUPS[group], MEMBERS[member]);
                let offsets = to_map(&offsets);
                let current = f.c().describe_group(g).map_or(0, |d| d.generation);
                let generation = if stale { current - 1 } else { current };
                let expected = expected_commit(&mut f, g, m, generation, &offsets);
                let r = f.commit(g, m, generation, &offsets);
                prop_assert_eq!(r.as_ref().err().map(|e| e.code()), expected, "{:?}", r);
                if r.is_ok() && !offsets.is_empty() {
                    model.entry(g.to_string()).or_default().extend(offsets);
                }
            }
            Op::CommitDirect { group, offsets } => {
                let g = GROUPS[group];
                let offsets = to_map(&offsets);
                let expected = expected_direct(&mut f, g, &offsets);
                let meta = f.meta.clone();
                let r = f.c().commit_direct(g, &offsets, &meta);
                prop_assert_eq!(r.as_ref().err().map(|e| e.code()), expected, "{:?}", r);
                if r.is_ok() && !offsets.is_empty() {
                    model.entry(g.to_string()).or_default().extend(offsets);
                }
            }
            Op::Compact => {
                let now = f.clock.now_ms();
                f.c()
                    .compact(now)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
            Op::Crash => f.crash(),
            Op::Restart => f.restart(),
        }
        check_invariants(&mut f, &model, &mut generations)?;
    }
    // Whatever happened, a final crash loses nothing that was acknowledged.
    f.crash();
    check_invariants(&mut f, &model, &mut generations)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn coordinator_matches_the_model_under_random_operations(ops in prop::collection::vec(arb_op(), 1..40)) {
        run(ops)?;
    }
}
