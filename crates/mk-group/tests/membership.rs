//! Membership, generations, rebalances, expiry, heartbeats and the
//! assignment query (spec 03), through the public coordinator API.

mod common;

use common::{Fixture, SESSION_MS, code, parts, tp};
use mk_core::{Clock, ErrorCode, TopicPartition};
use mk_group::{AssignorKind, GroupState};
use std::collections::{BTreeMap, BTreeSet};

/// Checks the classic invariant on a described group: every partition of
/// every subscribed topic has exactly one owner, and that owner subscribes
/// to the topic.
fn assert_single_owner(f: &mut Fixture, group: &str) {
    let d = f.c().describe_group(group).expect("group exists");
    assert_eq!(d.state, GroupState::Stable);
    let mut owners: BTreeMap<TopicPartition, Vec<String>> = BTreeMap::new();
    for m in &d.members {
        for p in &m.assignment {
            assert!(
                m.topics.contains(&p.topic),
                "{} owns {p} unsubscribed",
                m.member_id
            );
            owners
                .entry(p.clone())
                .or_default()
                .push(m.member_id.clone());
        }
    }
    let subscribed: BTreeSet<&String> = d.members.iter().flat_map(|m| &m.topics).collect();
    let expected: BTreeSet<TopicPartition> = subscribed
        .iter()
        .flat_map(|t| (0..f.meta[*t]).map(|p| tp(t, p)))
        .collect();
    assert_eq!(owners.keys().cloned().collect::<BTreeSet<_>>(), expected);
    for (p, o) in owners {
        assert_eq!(o.len(), 1, "{p} has owners {o:?}");
    }
}

#[test]
fn single_owner_per_partition_in_a_stable_generation() {
    let mut f = Fixture::new();
    f.join("g", "m1", &["orders", "payments"]);
    f.join("g", "m2", &["orders"]);
    let last = f.join("g", "m3", &["payments", "audit"]);
    assert_single_owner(&mut f, "g");
    // Every member sees the same generation and the partitions are disjoint.
    let mut seen = BTreeSet::new();
    for m in ["m1", "m2", "m3"] {
        let a = f.c().assignment("g", m).unwrap();
        assert_eq!(a.generation, last.generation);
        for p in a.partitions {
            assert!(seen.insert(p.clone()), "{p} assigned twice");
        }
    }
    assert_eq!(seen.len(), 4 + 2 + 3);
}

#[test]
fn first_join_starts_generation_one_and_gets_everything() {
    let mut f = Fixture::new();
    let a = f.join("g", "m1", &["payments"]);
    assert_eq!(a.generation, 1);
    assert_eq!(a.partitions, parts(&[("payments", 0), ("payments", 1)]));
    assert_eq!(f.c().describe_group("g").unwrap().state, GroupState::Stable);
}

#[test]
fn a_rejoin_with_new_topics_rebalances_and_an_unchanged_rejoin_does_not() {
    let mut f = Fixture::new();
    assert_eq!(f.join("g", "m1", &["orders"]).generation, 1);
    let again = f.join("g", "m1", &["payments"]);
    assert_eq!(again.generation, 2);
    // The re-join replaced the subscriptions.
    assert_eq!(again.partitions, parts(&[("payments", 0), ("payments", 1)]));
    let d = f.c().describe_group("g").unwrap();
    assert_eq!(d.members.len(), 1);
    assert_eq!(d.members[0].topics, vec!["payments".to_string()]);
    // Kafka's idempotent rejoin: same topics while Stable, same generation
    // and assignment, nothing written, and the session is extended.
    let leo = f.leo();
    f.clock.advance(4_000);
    let same = f.join("g", "m1", &["payments"]);
    assert_eq!(same, again);
    assert_eq!(f.leo(), leo, "an unchanged rejoin writes no generation");
    let d = f.c().describe_group("g").unwrap();
    assert_eq!(d.members[0].deadline_ms, f.clock.now_ms() + SESSION_MS);
    // Naming another assignor is a change (allowed for the only member).
    let (c, meta) = f.parts();
    let changed = c
        .join_with_assignor("g", "m1", ["payments"], Some(AssignorKind::Range), meta)
        .unwrap();
    assert_eq!(changed.generation, 3);
}

#[test]
fn two_members_rejoining_unchanged_do_not_fence_each_other() {
    // The defect of the old "every join rebalances" rule: two consumers
    // that rejoin after a failed commit kept bumping the generation and
    // fencing each other. Now they settle.
    let mut f = Fixture::new();
    f.join("g", "a", &["orders"]);
    let b = f.join("g", "b", &["orders"]);
    for _ in 0..3 {
        let a = f.join("g", "a", &["orders"]);
        let b2 = f.join("g", "b", &["orders"]);
        assert_eq!((a.generation, b2.generation), (b.generation, b.generation));
        f.commit(
            "g",
            "a",
            a.generation,
            &common::offsets(&[(a.partitions[0].topic.as_str(), a.partitions[0].partition, 1)]),
        )
        .unwrap();
        f.c().heartbeat("g", "b", b2.generation).unwrap();
    }
    assert_single_owner(&mut f, "g");
}

#[test]
fn join_rejects_empty_ids_and_unknown_topics_with_invalid_request() {
    let mut f = Fixture::new();
    f.join("g", "m1", &["orders"]);
    let (c, meta) = f.parts();
    // The group id is checked before the member id and the topics.
    let (code_, msg) = code(c.join("", "", ["nope"], meta));
    assert_eq!(code_, ErrorCode::InvalidGroupId);
    assert!(msg.contains("group id"), "{msg}");
    let (code_, msg) = code(c.join("g", "", ["nope"], meta));
    assert_eq!(code_, ErrorCode::InvalidRequest);
    assert!(msg.contains("member id"), "{msg}");
    let (code_, msg) = code(c.join("g", "m2", ["orders", "nope"], meta));
    assert_eq!(code_, ErrorCode::InvalidRequest);
    assert!(msg.contains("\"nope\""), "{msg}");
    let long = "x".repeat(mk_group::MAX_ID_BYTES + 1);
    assert_eq!(
        code(c.join(&long, "m", ["orders"], meta)).0,
        ErrorCode::InvalidGroupId
    );
    assert_eq!(
        code(c.join("g", &long, ["orders"], meta)).0,
        ErrorCode::InvalidRequest
    );
    // Nothing changed: same generation, same single member.
    let d = c.describe_group("g").unwrap();
    assert_eq!(d.generation, 1);
    assert_eq!(d.members.len(), 1);
}

#[test]
fn a_member_with_no_topics_gets_an_empty_assignment() {
    let mut f = Fixture::new();
    f.join("g", "a", &["orders"]);
    let b = f.join("g", "b", &[]);
    assert!(b.partitions.is_empty());
    assert_eq!(f.c().assignment("g", "a").unwrap().partitions.len(), 4);
}

#[test]
fn leave_rebalances_and_hands_partitions_to_the_remaining_members() {
    let mut f = Fixture::new();
    f.join("g", "a", &["orders"]);
    let both = f.join("g", "b", &["orders"]);
    assert_eq!(f.c().assignment("g", "a").unwrap().partitions.len(), 2);
    assert!(f.leave("g", "b"));
    let a = f.c().assignment("g", "a").unwrap();
    assert_eq!(a.generation, both.generation + 1);
    assert_eq!(a.partitions.len(), 4);
    assert_eq!(code(f.c().assignment("g", "b")).0, ErrorCode::UnknownMember);
}

#[test]
fn last_leave_empties_the_group_and_the_left_member_is_unknown() {
    let mut f = Fixture::new();
    let a = f.join("g", "a", &["orders"]);
    assert!(f.leave("g", "a"));
    let d = f.c().describe_group("g").unwrap();
    assert_eq!(d.state, GroupState::Empty);
    assert_eq!(d.generation, a.generation + 1);
    assert!(d.members.is_empty());
    assert!(f.c().group_assignment("g").is_empty());
    let gen_ = d.generation;
    let (c, msg) = f.refused_commit("g", "a", gen_, &[("orders", 0, 1)]);
    assert_eq!(c, ErrorCode::UnknownMember);
    assert!(msg.contains("\"a\""), "{msg}");
}

#[test]
fn leave_of_unknown_group_or_member_is_a_no_op() {
    let mut f = Fixture::new();
    f.join("g", "a", &["orders"]);
    let before = f.leo();
    assert!(!f.leave("nope", "a"));
    assert!(!f.leave("g", "nope"));
    assert_eq!(f.generation("g"), 1);
    assert_eq!(f.leo(), before, "a no-op writes nothing");
}

#[test]
fn heartbeat_error_order_unknown_group_then_member_then_generation() {
    let mut f = Fixture::new();
    let a = f.join("g", "a", &["orders"]);
    let c = f.c();
    assert_eq!(
        code(c.heartbeat("nope", "a", a.generation)).0,
        ErrorCode::UnknownMember
    );
    // As in Kafka, an unknown member is reported before its generation.
    let (c1, msg) = code(c.heartbeat("g", "ghost", a.generation + 5));
    assert_eq!(c1, ErrorCode::UnknownMember);
    assert!(msg.contains("ghost"), "{msg}");
    let (c2, msg) = code(c.heartbeat("g", "a", a.generation + 5));
    assert_eq!(c2, ErrorCode::IllegalGeneration);
    assert!(
        msg.contains("generation 6") && msg.contains("current is 1"),
        "{msg}"
    );
    c.heartbeat("g", "a", a.generation).unwrap();
}

#[test]
fn heartbeat_extends_the_session_deadline() {
    let mut f = Fixture::new();
    let a = f.join("g", "a", &["orders"]);
    let joined_at = f.clock.now_ms();
    let deadline = |f: &mut Fixture| f.c().describe_group("g").unwrap().members[0].deadline_ms;
    assert_eq!(deadline(&mut f), joined_at + SESSION_MS);
    f.clock.advance(4_000);
    f.c().heartbeat("g", "a", a.generation).unwrap();
    assert_eq!(deadline(&mut f), joined_at + 4_000 + SESSION_MS);
}

#[test]
fn session_timeout_expiry_removes_the_member_and_rebalances() {
    let mut f = Fixture::new();
    f.join("g", "a", &["orders"]);
    let b = f.join("g", "b", &["orders"]);
    f.clock.advance(5_000);
    f.c().heartbeat("g", "a", b.generation).unwrap();
    // At exactly the deadline the member is still alive (now > deadline).
    f.clock.advance(SESSION_MS - 5_000);
    assert!(f.expire().is_empty());
    assert_eq!(f.generation("g"), b.generation);
    f.clock.advance(1);
    assert_eq!(f.expire(), vec![("g".to_string(), "b".to_string())]);
    let a = f.c().assignment("g", "a").unwrap();
    assert_eq!(a.generation, b.generation + 1);
    assert_eq!(a.partitions.len(), 4, "the survivor owns everything");
    // The expired member is fenced: it is no member any more.
    assert_eq!(
        code(f.c().heartbeat("g", "b", b.generation)).0,
        ErrorCode::UnknownMember
    );
    assert_eq!(
        code(f.c().heartbeat("g", "b", a.generation)).0,
        ErrorCode::UnknownMember
    );
}

#[test]
fn expire_members_returns_sorted_pairs_and_rebalances_each_group_once() {
    let mut f = Fixture::new();
    for (g, m) in [
        ("g2", "z"),
        ("g2", "a"),
        ("g1", "y"),
        ("g1", "b"),
        ("g3", "keep"),
    ] {
        f.join(g, m, &["orders"]);
    }
    let before: Vec<i32> = ["g1", "g2", "g3"].iter().map(|g| f.generation(g)).collect();
    f.clock.advance(SESSION_MS / 2);
    let g3 = f.generation("g3");
    f.c().heartbeat("g3", "keep", g3).unwrap();
    f.clock.advance(SESSION_MS / 2 + 1);
    let removed = f.expire();
    let pairs: Vec<(&str, &str)> = removed
        .iter()
        .map(|(g, m)| (g.as_str(), m.as_str()))
        .collect();
    assert_eq!(
        pairs,
        vec![("g1", "b"), ("g1", "y"), ("g2", "a"), ("g2", "z")]
    );
    assert_eq!(f.generation("g1"), before[0] + 1);
    assert_eq!(f.generation("g2"), before[1] + 1);
    assert_eq!(
        f.generation("g3"),
        before[2],
        "an unaffected group keeps its generation"
    );
    assert_eq!(f.c().describe_group("g1").unwrap().state, GroupState::Empty);
    assert!(f.expire().is_empty());
}

#[test]
fn assignment_of_unknown_group_or_member_is_unknown_member() {
    let mut f = Fixture::new();
    f.join("g", "a", &["orders"]);
    assert_eq!(
        code(f.c().assignment("nope", "a")).0,
        ErrorCode::UnknownMember
    );
    let (c, msg) = code(f.c().assignment("g", "b"));
    assert_eq!(c, ErrorCode::UnknownMember);
    assert!(msg.contains("\"b\"") && msg.contains("\"g\""), "{msg}");
}

#[test]
fn a_member_keeps_its_stale_view_until_it_refreshes() {
    // The model has no revoke barrier: the old member learns of the new
    // generation only through `assignment` (or a failed heartbeat).
    let mut f = Fixture::new();
    let old = f.join("g", "a", &["orders"]);
    let new = f.join("g", "b", &["orders"]);
    assert_eq!(
        code(f.c().heartbeat("g", "a", old.generation)).0,
        ErrorCode::IllegalGeneration
    );
    let refreshed = f.c().assignment("g", "a").unwrap();
    assert_eq!(refreshed.generation, new.generation);
    f.c().heartbeat("g", "a", refreshed.generation).unwrap();
    let mine: BTreeSet<_> = refreshed.partitions.into_iter().collect();
    let theirs: BTreeSet<_> = new.partitions.into_iter().collect();
    assert!(mine.is_disjoint(&theirs));
    assert_eq!(mine.len() + theirs.len(), 4);
}

#[test]
fn assignor_is_chosen_by_the_first_join_and_a_conflicting_member_is_invalid_request() {
    let mut f = Fixture::new();
    let (c, meta) = f.parts();
    c.join_with_assignor("g", "a", ["orders"], Some(AssignorKind::Range), meta)
        .unwrap();
    // No preference accepts the group's assignor.
    c.join("g", "b", ["orders"], meta).unwrap();
    assert_eq!(c.describe_group("g").unwrap().assignor, AssignorKind::Range);
    assert_eq!(
        c.assignment("g", "a").unwrap().partitions,
        parts(&[("orders", 0), ("orders", 1)]),
        "range gives consecutive partitions"
    );
    let gen_ = c.describe_group("g").unwrap().generation;
    let (code_, msg) =
        code(c.join_with_assignor("g", "c", ["orders"], Some(AssignorKind::Sticky), meta));
    assert_eq!(code_, ErrorCode::InvalidRequest);
    assert!(msg.contains("range") && msg.contains("sticky"), "{msg}");
    assert_eq!(
        c.describe_group("g").unwrap().generation,
        gen_,
        "nothing changed"
    );
    // Naming the group's own assignor is fine.
    c.join_with_assignor("g", "c", ["orders"], Some(AssignorKind::Range), meta)
        .unwrap();
}

#[test]
fn assignor_can_change_when_no_other_member_is_in_the_group() {
    let mut f = Fixture::new();
    let (c, meta) = f.parts();
    c.join("g", "a", ["orders"], meta).unwrap();
    assert_eq!(
        c.describe_group("g").unwrap().assignor,
        AssignorKind::RoundRobin
    );
    // The only member re-joins with another assignor: allowed.
    c.join_with_assignor("g", "a", ["orders"], Some(AssignorKind::Sticky), meta)
        .unwrap();
    assert_eq!(
        c.describe_group("g").unwrap().assignor,
        AssignorKind::Sticky
    );
    c.leave("g", "a", meta).unwrap();
    // An emptied group keeps its assignor for a join without preference...
    c.join("g", "b", ["orders"], meta).unwrap();
    assert_eq!(
        c.describe_group("g").unwrap().assignor,
        AssignorKind::Sticky
    );
    c.leave("g", "b", meta).unwrap();
    // ...and takes the one named by the first join after it emptied.
    c.join_with_assignor("g", "c", ["orders"], Some(AssignorKind::Range), meta)
        .unwrap();
    assert_eq!(c.describe_group("g").unwrap().assignor, AssignorKind::Range);
}

#[test]
fn sticky_group_moves_only_what_balance_requires_when_a_member_joins() {
    let mut f = Fixture::new();
    f.meta.insert("wide".into(), 6);
    let (c, meta) = f.parts();
    c.join_with_assignor("g", "a", ["wide"], Some(AssignorKind::Sticky), meta)
        .unwrap();
    c.join("g", "b", ["wide"], meta).unwrap();
    let before = c.group_assignment("g");
    c.join("g", "c", ["wide"], meta).unwrap();
    let after = c.group_assignment("g");
    for m in ["a", "b"] {
        let kept: BTreeSet<_> = after[m].iter().collect();
        assert!(
            kept.is_subset(&before[m].iter().collect()),
            "{m} gained a partition"
        );
        assert_eq!(after[m].len(), 2);
    }
    assert_eq!(
        after["c"].len(),
        2,
        "the newcomer took exactly two partitions"
    );
}

#[test]
fn rebalance_subscribers_picks_up_a_changed_partition_count() {
    let mut f = Fixture::new();
    f.join("g", "a", &["payments"]);
    f.join("g", "b", &["payments"]);
    f.join("other", "x", &["orders"]);
    let other_gen = f.generation("other");
    f.meta.insert("payments".into(), 4);
    let (c, meta) = f.parts();
    assert_eq!(
        c.rebalance_subscribers("payments", meta).unwrap(),
        vec!["g".to_string()]
    );
    assert_eq!(c.assignment("g", "a").unwrap().partitions.len(), 2);
    assert_eq!(c.assignment("g", "b").unwrap().partitions.len(), 2);
    assert_eq!(c.describe_group("other").unwrap().generation, other_gen);
    // A deleted topic leaves its subscribers with nothing of it.
    f.meta.remove("payments");
    let (c, meta) = f.parts();
    c.rebalance_subscribers("payments", meta).unwrap();
    assert!(c.assignment("g", "a").unwrap().partitions.is_empty());
    assert!(c.assignment("g", "b").unwrap().partitions.is_empty());
}

#[test]
fn describe_and_list_show_state_generation_members_and_assignment() {
    let mut f = Fixture::new();
    f.join("g", "b", &["payments"]);
    f.join("g", "a", &["payments", "orders"]);
    let meta = f.meta.clone();
    f.c()
        .commit_direct("manual", &common::offsets(&[("audit", 2, 9)]), &meta)
        .unwrap();
    assert_eq!(
        f.c().list_groups(),
        vec!["g".to_string(), "manual".to_string()]
    );
    let d = f.c().describe_group("g").unwrap();
    assert_eq!(d.group_id, "g");
    assert_eq!(d.state, GroupState::Stable);
    assert_eq!(d.generation, 2);
    assert_eq!(d.assignor, AssignorKind::RoundRobin);
    let ids: Vec<&str> = d.members.iter().map(|m| m.member_id.as_str()).collect();
    assert_eq!(ids, vec!["a", "b"]);
    assert_eq!(
        d.members[0].topics,
        vec!["orders".to_string(), "payments".to_string()]
    );
    // Round-robin: orders (only a), then payments shared by a and b with the
    // cursor at 4 -> payments-0 to a, payments-1 to b.
    assert_eq!(
        d.members[0].assignment,
        parts(&[
            ("orders", 0),
            ("orders", 1),
            ("orders", 2),
            ("orders", 3),
            ("payments", 0)
        ])
    );
    assert_eq!(d.members[1].assignment, parts(&[("payments", 1)]));
    let manual = f.c().describe_group("manual").unwrap();
    assert_eq!((manual.state, manual.generation), (GroupState::Empty, 0));
    assert!(manual.members.is_empty());
    assert_eq!(f.c().describe_group("nope"), None);
}
