//! Committed offsets through the group protocol and plain commits: fencing
//! by generation, ownership, the exact error order of spec 03, and "nothing
//! of a rejected commit is stored".

mod common;

use common::{Fixture, code, offsets, plain, tp};
use mk_core::{ErrorCode, TopicPartition};
use mk_group::OffsetAndMetadata;
use std::collections::BTreeMap;

/// Asserts that a rejected operation left no trace: no new record in the
/// offsets log and no committed offset for the group.
fn assert_nothing_stored(f: &mut Fixture, group: &str, leo_before: i64) {
    assert_eq!(f.leo(), leo_before, "a rejected commit appended a record");
    assert!(f.c().committed_offsets(group).is_empty());
}

#[test]
fn owner_commits_and_fetch_committed_returns_the_offset() {
    let mut f = Fixture::new();
    let a = f.join_and_commit("g", "a", "payments", &[(0, 5), (1, 7)]);
    assert_eq!(f.c().fetch_committed("g", &tp("payments", 0)), Some(5));
    assert_eq!(f.c().fetch_committed("g", &tp("payments", 1)), Some(7));
    assert_eq!(f.c().fetch_committed("g", &tp("orders", 0)), None);
    assert_eq!(f.c().fetch_committed("other", &tp("payments", 0)), None);
    // A later commit overwrites; offsets may also move backwards (a reset).
    f.commit_ok("g", "a", a.generation, &[("payments", 0, 2)]);
    assert_eq!(
        f.c().committed_offsets("g"),
        offsets(&[("payments", 0, 2), ("payments", 1, 7)])
    );
}

#[test]
fn a_commit_of_several_partitions_is_one_append() {
    let mut f = Fixture::new();
    let a = f.join("g", "a", &["orders"]);
    let before = f.leo();
    f.commit_ok(
        "g",
        "a",
        a.generation,
        &[("orders", 0, 1), ("orders", 1, 2), ("orders", 3, 4)],
    );
    let log = f.c().offsets_log();
    let batches = log.read_batches(before, usize::MAX, None).unwrap();
    assert_eq!(batches.len(), 1);
    assert_eq!(batches[0].decode().unwrap().records().len(), 3);
    assert_eq!(log.leo(), before + 3);
}

#[test]
fn new_member_bumps_the_generation_and_the_old_members_commit_is_illegal_generation() {
    let mut f = Fixture::new();
    let old = f.join_and_commit("g", "a", "payments", &[(1, 3)]);
    let new = f.join("g", "b", &["payments"]);
    assert_eq!(new.generation, old.generation + 1);
    assert_eq!(new.partitions, vec![tp("payments", 1)]);
    // The new owner commits; the stale member then tries to overwrite it.
    f.commit_ok("g", "b", new.generation, &[("payments", 1, 50)]);
    let leo = f.leo();
    let (c, msg) = f.refused_commit("g", "a", old.generation, &[("payments", 1, 10)]);
    assert_eq!(c, ErrorCode::IllegalGeneration);
    assert_eq!(msg, "generation 1 of group \"g\" is stale; current is 2");
    assert_eq!(f.c().fetch_committed("g", &tp("payments", 1)), Some(50));
    assert_eq!(f.leo(), leo);
    // After refreshing, the old member commits what it owns now.
    let refreshed = f.c().assignment("g", "a").unwrap();
    assert_eq!(refreshed.partitions, vec![tp("payments", 0)]);
    f.commit_ok("g", "a", refreshed.generation, &[("payments", 0, 8)]);
    assert_eq!(f.c().fetch_committed("g", &tp("payments", 0)), Some(8));
}

#[test]
fn a_future_generation_is_illegal_too() {
    let mut f = Fixture::new();
    let a = f.join("g", "a", &["payments"]);
    let (c, msg) = f.refused_commit("g", "a", a.generation + 1, &[("payments", 0, 1)]);
    assert_eq!(c, ErrorCode::IllegalGeneration);
    assert!(msg.contains("ahead"), "{msg}");
}

#[test]
fn member_cannot_commit_partitions_it_does_not_own() {
    let mut f = Fixture::new();
    f.join("g", "a", &["payments"]);
    let b = f.join("g", "b", &["payments"]);
    let leo = f.leo();
    // b owns payments-1 only; a commit that includes payments-0 is refused
    // whole, the owned partition included.
    let (c, msg) = f.refused_commit(
        "g",
        "b",
        b.generation,
        &[("payments", 0, 4), ("payments", 1, 4)],
    );
    assert_eq!(c, ErrorCode::NotPartitionOwner);
    assert!(msg.contains("payments-0") && msg.contains("\"b\""), "{msg}");
    // A topic the member is not even subscribed to.
    let (c, _) = f.refused_commit("g", "b", b.generation, &[("orders", 0, 1)]);
    assert_eq!(c, ErrorCode::NotPartitionOwner);
    assert_nothing_stored(&mut f, "g", leo);
}

#[test]
fn commit_error_order_group_member_generation_state_owner_offset() {
    // Kafka's order: the group, then the member, then its generation, then
    // the group's state; ours follows: ownership (coordinator-assigned
    // members only), then the offsets.
    let mut f = Fixture::new();
    let a = f.join("g", "a", &["payments"]);
    let g1 = a.generation;
    let leo = f.leo();
    let bad_everything = offsets(&[("orders", 0, -1)]);
    // 1. A group the coordinator does not know: ILLEGAL_GENERATION for a
    //    commit that names a generation (Kafka before OffsetCommit v9).
    let (c, msg) = code(f.commit("nope", "ghost", 99, &bad_everything));
    assert_eq!(c, ErrorCode::IllegalGeneration);
    assert!(msg.contains("\"nope\""), "{msg}");
    // 2. An unknown member beats a wrong generation, ownership and offsets.
    assert_eq!(
        code(f.commit("g", "ghost", g1 + 3, &bad_everything)).0,
        ErrorCode::UnknownMember
    );
    // 3. A known member with another generation.
    assert_eq!(
        code(f.commit("g", "a", g1 + 3, &bad_everything)).0,
        ErrorCode::IllegalGeneration
    );
    // 4. Ownership beats a negative offset.
    assert_eq!(
        code(f.commit("g", "a", g1, &bad_everything)).0,
        ErrorCode::NotPartitionOwner
    );
    // 5. Negative offset on an owned partition.
    assert_eq!(
        f.refused_commit("g", "a", g1, &[("payments", 0, -1)]).0,
        ErrorCode::InvalidRequest
    );
    assert_nothing_stored(&mut f, "g", leo);
    // An empty group has no members to commit as.
    f.leave("g", "a");
    let leo = f.leo();
    assert_eq!(
        f.refused_commit("g", "a", g1 + 1, &[("payments", 0, 1)]).0,
        ErrorCode::UnknownMember
    );
    assert_nothing_stored(&mut f, "g", leo);
}

#[test]
fn a_commit_with_a_negative_generation_is_accepted_while_the_group_has_no_members() {
    // Kafka lets a consumer that assigns partitions itself commit with
    // generation -1 (with or without a member id) to a group without members.
    let mut f = Fixture::new();
    f.commit("fresh", "", -1, &offsets(&[("payments", 0, 4)]))
        .unwrap();
    f.commit("fresh", "whoever", -1, &offsets(&[("payments", 1, 5)]))
        .unwrap();
    assert_eq!(
        f.c().committed_offsets("fresh"),
        offsets(&[("payments", 0, 4), ("payments", 1, 5)])
    );
    // Such a commit is checked like any other: partitions must exist.
    let (c, msg) = f.refused_commit("fresh", "", -1, &[("payments", 7, 1)]);
    assert_eq!(c, ErrorCode::UnknownPartition);
    assert!(msg.contains("payments-7"), "{msg}");
    // With members, a commit without membership is refused.
    f.join("fresh", "m", &["payments"]);
    assert_eq!(
        f.refused_commit("fresh", "", -1, &[("payments", 0, 9)]).0,
        ErrorCode::UnknownMember
    );
    assert_eq!(f.c().fetch_committed("fresh", &tp("payments", 0)), Some(4));
}

#[test]
fn negative_offsets_are_rejected_and_nothing_of_the_commit_is_stored() {
    let mut f = Fixture::new();
    let a = f.join("g", "a", &["payments"]);
    let leo = f.leo();
    let (c, msg) = f.refused_commit(
        "g",
        "a",
        a.generation,
        &[("payments", 0, 5), ("payments", 1, -3)],
    );
    assert_eq!(c, ErrorCode::InvalidRequest);
    assert!(msg.contains("payments-1") && msg.contains("-3"), "{msg}");
    assert_nothing_stored(&mut f, "g", leo);
    let meta = f.meta.clone();
    let (c, _) = code(f.c().commit_direct(
        "manual",
        &offsets(&[("payments", 0, 1), ("payments", 1, -1)]),
        &meta,
    ));
    assert_eq!(c, ErrorCode::InvalidRequest);
    assert_nothing_stored(&mut f, "manual", leo);
    // Zero is a valid offset.
    f.commit_ok("g", "a", a.generation, &[("payments", 0, 0)]);
    assert_eq!(f.c().fetch_committed("g", &tp("payments", 0)), Some(0));
}

#[test]
fn an_empty_commit_is_accepted_and_writes_nothing() {
    let mut f = Fixture::new();
    let a = f.join("g", "a", &["payments"]);
    let leo = f.leo();
    f.commit_ok("g", "a", a.generation, &[]);
    assert_eq!(f.leo(), leo);
}

#[test]
fn plain_commit_needs_no_generation_and_validates_partitions() {
    let mut f = Fixture::new();
    let meta = f.meta.clone();
    let c = f.c();
    c.commit_direct("manual", &offsets(&[("orders", 3, 11)]), &meta)
        .unwrap();
    assert_eq!(c.fetch_committed("manual", &tp("orders", 3)), Some(11));
    let leo = c.offsets_log().leo();
    assert_eq!(
        code(c.commit_direct("", &offsets(&[("orders", 0, 1)]), &meta)).0,
        ErrorCode::InvalidGroupId
    );
    let (e, msg) = code(c.commit_direct("manual", &offsets(&[("ghost", 0, 1)]), &meta));
    assert_eq!(e, ErrorCode::UnknownTopic);
    assert!(msg.contains("ghost"), "{msg}");
    let (e, msg) = code(c.commit_direct("manual", &offsets(&[("orders", 4, 1)]), &meta));
    assert_eq!(e, ErrorCode::UnknownPartition);
    assert!(
        msg.contains("orders-4") && msg.contains("4 partitions"),
        "{msg}"
    );
    // Unknown topic is checked before a negative offset.
    assert_eq!(
        code(c.commit_direct("manual", &offsets(&[("ghost", 0, -1)]), &meta)).0,
        ErrorCode::UnknownTopic
    );
    assert_eq!(c.offsets_log().leo(), leo);
    assert_eq!(c.committed_offsets("manual"), offsets(&[("orders", 3, 11)]));
}

#[test]
fn plain_commit_to_a_group_with_members_is_unknown_member() {
    // As in Kafka, a commit without membership must not overwrite what the
    // owners of an active group commit.
    let mut f = Fixture::new();
    f.join("g", "a", &["orders"]);
    let meta = f.meta.clone();
    let leo = f.leo();
    let (c, msg) = code(
        f.c()
            .commit_direct("g", &offsets(&[("orders", 0, 1)]), &meta),
    );
    assert_eq!(c, ErrorCode::UnknownMember);
    assert!(msg.contains("1 active members"), "{msg}");
    assert_nothing_stored(&mut f, "g", leo);
    // Once the group is empty, plain commits are allowed again.
    f.leave("g", "a");
    f.c()
        .commit_direct("g", &offsets(&[("orders", 0, 1)]), &meta)
        .unwrap();
    assert_eq!(f.c().fetch_committed("g", &tp("orders", 0)), Some(1));
}

/// The codes of a `delete_group_offsets` answer, per partition.
fn deletion_codes(
    answer: Vec<(mk_core::TopicPartition, mk_group::Result<()>)>,
) -> Vec<(String, Option<ErrorCode>)> {
    answer
        .into_iter()
        .map(|(tp, r)| (tp.to_string(), r.err().map(|e| e.code())))
        .collect()
}

#[test]
fn delete_offsets_writes_tombstones_and_refuses_subscribed_topics_per_partition() {
    let mut f = Fixture::new();
    let meta = f.meta.clone();
    f.c()
        .commit_direct(
            "g",
            &offsets(&[("orders", 0, 1), ("orders", 1, 2), ("audit", 0, 3)]),
            &meta,
        )
        .unwrap();
    let answer = f
        .c()
        .delete_group_offsets("g", &[tp("orders", 0), tp("orders", 0), tp("orders", 2)])
        .unwrap();
    assert_eq!(
        deletion_codes(answer),
        vec![
            ("orders-0".to_string(), None),
            ("orders-0".to_string(), None),
            ("orders-2".to_string(), None)
        ],
        "a partition without an offset is a success that writes nothing"
    );
    assert_eq!(
        f.c().committed_offsets("g"),
        offsets(&[("audit", 0, 3), ("orders", 1, 2)])
    );
    f.join("g", "m", &["audit"]);
    let answer = f
        .c()
        .delete_group_offsets("g", &[tp("orders", 1), tp("audit", 0)])
        .unwrap();
    assert_eq!(
        deletion_codes(answer),
        vec![
            ("orders-1".to_string(), None),
            (
                "audit-0".to_string(),
                Some(ErrorCode::GroupSubscribedToTopic)
            )
        ]
    );
    assert_eq!(
        f.c().committed_offsets("g"),
        offsets(&[("audit", 0, 3)]),
        "only the unsubscribed topic's offset went"
    );
    let (c, msg) = code(f.c().delete_group_offsets("nope", &[tp("orders", 0)]));
    assert_eq!(c, ErrorCode::GroupIdNotFound);
    assert!(msg.contains("nope"), "{msg}");
}

#[test]
fn delete_groups_needs_empty_known_groups_and_removes_everything() {
    let mut f = Fixture::new();
    f.join_and_commit("g", "a", "orders", &[(2, 9)]);
    let answers = f
        .c()
        .delete_groups(&["nope".to_string(), "g".to_string()])
        .unwrap();
    assert_eq!(
        code(answers.into_iter().next().unwrap()).0,
        ErrorCode::GroupIdNotFound
    );
    let answers = f.c().delete_groups(&["g".to_string()]).unwrap();
    let (c, msg) = code(answers.into_iter().next().unwrap());
    assert_eq!(c, ErrorCode::NonEmptyGroup);
    assert!(msg.contains("1 member"), "{msg}");
    f.leave("g", "a");
    let answers = f
        .c()
        .delete_groups(&["g".to_string(), "g".to_string()])
        .unwrap();
    assert!(answers[0].is_ok());
    assert_eq!(
        answers[1].as_ref().unwrap_err().code(),
        ErrorCode::GroupIdNotFound,
        "a group named twice is gone the second time"
    );
    assert_eq!(f.c().describe_group("g"), None);
    assert!(f.c().list_groups().is_empty());
    assert_eq!(f.c().fetch_committed("g", &tp("orders", 2)), None);
    // A recreated group starts again at generation 1.
    assert_eq!(f.join("g", "a", &["orders"]).generation, 1);
}

#[test]
fn a_group_known_only_by_its_offsets_is_empty_at_generation_zero() {
    // Kafka shows a group used only to store offsets as Empty; every
    // operation sees it the same way (describe, commit, heartbeat).
    let mut f = Fixture::new();
    let meta = f.meta.clone();
    f.c()
        .commit_direct("manual", &offsets(&[("orders", 0, 3)]), &meta)
        .unwrap();
    let d = f.c().describe_group("manual").unwrap();
    assert_eq!((d.state, d.generation), (mk_group::GroupState::Empty, 0));
    let (c, msg) = f.refused_commit("manual", "m", 0, &[("orders", 0, 4)]);
    assert_eq!(c, ErrorCode::UnknownMember);
    assert!(msg.contains("\"m\""), "{msg}");
    assert_eq!(
        code(f.c().heartbeat("manual", "m", 1)).0,
        ErrorCode::UnknownMember
    );
    assert_eq!(
        code(f.c().heartbeat("manual", "m", 0)).0,
        ErrorCode::UnknownMember
    );
    assert_eq!(
        code(f.c().assignment("manual", "m")).0,
        ErrorCode::UnknownMember
    );
    // Joining turns it into a live group; its offsets are kept.
    assert_eq!(f.join("manual", "m", &["orders"]).generation, 1);
    assert_eq!(f.c().fetch_committed("manual", &tp("orders", 0)), Some(3));
}

#[test]
fn transactional_offsets_are_stored_while_the_group_has_members() {
    let mut f = Fixture::new();
    let a = f.join("g", "a", &["orders"]);
    let meta = f.meta.clone();
    // A plain commit is refused for an active group...
    assert_eq!(
        code(
            f.c()
                .commit_direct("g", &offsets(&[("orders", 0, 3)]), &meta)
        )
        .0,
        ErrorCode::UnknownMember
    );
    // ...but offsets staged by a committed transaction are stored.
    f.c()
        .commit_transactional("g", &plain(&[("orders", 0, 3)]))
        .unwrap();
    assert_eq!(f.c().fetch_committed("g", &tp("orders", 0)), Some(3));
    assert_eq!(
        code(
            f.c()
                .commit_transactional("g", &plain(&[("orders", 0, -1)]))
        )
        .0,
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        code(f.c().commit_transactional("", &plain(&[]))).0,
        ErrorCode::InvalidGroupId
    );
    // The member is untouched by it.
    f.c().heartbeat("g", "a", a.generation).unwrap();
}

/// Offsets with a leader epoch and metadata, as Kafka clients commit them.
fn with_metadata(
    list: &[(&str, u32, i64, i32, &str)],
) -> BTreeMap<TopicPartition, OffsetAndMetadata> {
    list.iter()
        .map(|(t, p, o, e, m)| {
            (
                tp(t, *p),
                OffsetAndMetadata::from_wire(*o, *e, Some(m.to_string())),
            )
        })
        .collect()
}

#[test]
fn leader_epochs_and_metadata_are_stored_and_fetched_back() {
    let mut f = Fixture::new();
    let a = f.join("g", "a", &["payments"]);
    let (c, meta) = f.parts();
    let answers = c
        .commit_offsets_with_metadata(
            "g",
            a.generation,
            "a",
            None,
            &with_metadata(&[
                ("payments", 0, 5, 3, "app-state"),
                ("payments", 1, 7, -1, ""),
            ]),
            meta,
        )
        .unwrap();
    assert!(answers.iter().all(|(_, r)| r.is_ok()), "{answers:?}");
    let got = f
        .c()
        .fetch_committed_with_metadata("g", &tp("payments", 0))
        .unwrap();
    assert_eq!(got.offset, 5);
    assert_eq!(got.leader_epoch, Some(3));
    assert_eq!(got.metadata, "app-state");
    assert_eq!(got.leader_epoch_or_none(), 3);
    // -1 is "no epoch", as on Kafka's wire; a null metadata string is "".
    let none = f
        .c()
        .fetch_committed_with_metadata("g", &tp("payments", 1))
        .unwrap();
    assert_eq!((none.leader_epoch, none.metadata.as_str()), (None, ""));
    assert_eq!(none.leader_epoch_or_none(), -1);
    assert_eq!(
        OffsetAndMetadata::from_wire(1, -7, None),
        OffsetAndMetadata::new(1)
    );
    // A plain commit replaces both with nothing.
    f.commit_ok("g", "a", a.generation, &[("payments", 0, 6)]);
    assert_eq!(
        f.c().fetch_committed_with_metadata("g", &tp("payments", 0)),
        Some(OffsetAndMetadata::new(6))
    );
    assert_eq!(f.c().committed_offsets_with_metadata("g").len(), 2);
    assert_eq!(
        f.c().fetch_committed_with_metadata("g", &tp("orders", 0)),
        None
    );
}

#[test]
fn metadata_longer_than_the_bound_is_refused_per_partition_and_the_rest_is_stored() {
    let mut f = Fixture::with_config(mk_group::GroupConfig {
        offset_metadata_max_bytes: 4,
        ..mk_group::GroupConfig::default()
    });
    let meta = f.meta.clone();
    let before = f.leo();
    // Four characters fit (counted as Kafka counts them: "éé" is 2 UTF-16
    // units in 4 UTF-8 bytes; one astral character is 2 units).
    let answers = f
        .c()
        .commit_offsets_with_metadata(
            "g",
            -1,
            "",
            None,
            &with_metadata(&[
                ("orders", 0, 1, 0, "abcd"),
                ("orders", 1, 2, 0, "abcde"),
                ("orders", 2, 3, 0, "éééé"),
                ("orders", 3, 4, 0, "😀😀😀"),
            ]),
            &meta,
        )
        .unwrap();
    let codes: Vec<(u32, Option<ErrorCode>)> = answers
        .iter()
        .map(|(tp, r)| (tp.partition, r.as_ref().err().map(|e| e.code())))
        .collect();
    assert_eq!(
        codes,
        vec![
            (0, None),
            (1, Some(ErrorCode::OffsetMetadataTooLarge)),
            (2, None),
            (3, Some(ErrorCode::OffsetMetadataTooLarge)),
        ]
    );
    assert_eq!(
        f.leo(),
        before + 2,
        "only the accepted partitions are appended"
    );
    assert_eq!(
        f.c().committed_offsets("g"),
        offsets(&[("orders", 0, 1), ("orders", 2, 3)])
    );
    let message = answers[1].1.as_ref().unwrap_err().to_string();
    assert!(
        message.contains("orders-1") && message.contains('4'),
        "{message}"
    );
    // The bound is also what TxnOffsetCommit asks before staging.
    assert!(
        f.c()
            .check_offset_metadata(&tp("orders", 0), "abcd")
            .is_ok()
    );
    assert_eq!(
        code(f.c().check_offset_metadata(&tp("orders", 0), "abcde")).0,
        ErrorCode::OffsetMetadataTooLarge
    );
}

#[test]
fn a_commit_with_metadata_is_fenced_like_any_commit() {
    let mut f = Fixture::new();
    let a = f.join("g", "a", &["payments"]);
    let before = f.leo();
    let (c, meta) = f.parts();
    let r = c.commit_offsets_with_metadata(
        "g",
        a.generation + 1,
        "a",
        None,
        &with_metadata(&[("payments", 0, 5, 3, "x")]),
        meta,
    );
    assert_eq!(code(r).0, ErrorCode::IllegalGeneration);
    assert_nothing_stored(&mut f, "g", before);
}

#[test]
fn offsets_of_a_group_without_members_expire_after_the_retention_and_the_group_with_them() {
    const DAY: i64 = 86_400_000;
    let mut f = Fixture::with_config(mk_group::GroupConfig {
        session_timeout_ms: common::SESSION_MS,
        offsets_retention_ms: 7 * DAY,
        ..mk_group::GroupConfig::default()
    });
    let meta = f.meta.clone();
    // A plain committer (no membership), a group that keeps a member, and
    // a group whose member leaves a day after its last commit.
    f.c()
        .commit_direct("plain", &offsets(&[("orders", 0, 5)]), &meta)
        .unwrap();
    let _ = f.join_and_commit("busy", "a", "orders", &[(0, 7)]);
    let _ = f.join_and_commit("left", "b", "payments", &[(1, 3)]);
    f.clock.advance(DAY);
    // The broker runs the step every minute: this run sees both groups'
    // members.
    assert_eq!(f.c().expire_offsets().unwrap(), Vec::<String>::new());
    f.leave("left", "b");
    // Six days and a bit on: nothing has been idle for seven days.
    f.clock.advance(6 * DAY - 1);
    assert_eq!(f.c().expire_offsets().unwrap(), Vec::<String>::new());
    // The plain committer's seven days are up (from its commit); the
    // group that lost its member a day later keeps its offsets a day more.
    f.clock.advance(1);
    assert_eq!(f.c().expire_offsets().unwrap(), vec!["plain".to_string()]);
    assert!(f.c().committed_offsets("plain").is_empty());
    assert!(!f.c().list_groups().contains(&"plain".to_string()));
    // The busy group's member stays (no session expiry runs here); it
    // keeps its offsets however old its commit.
    f.clock.advance(DAY);
    let expired = f.c().expire_offsets().unwrap();
    assert_eq!(expired, vec!["left".to_string()]);
    assert_eq!(f.c().fetch_committed("busy", &tp("orders", 0)), Some(7));
    assert!(f.c().committed_offsets("left").is_empty());
    // What expired stays expired after a restart; the rest is kept.
    f.restart();
    assert!(f.c().committed_offsets("plain").is_empty());
    assert!(f.c().committed_offsets("left").is_empty());
    assert_eq!(f.c().fetch_committed("busy", &tp("orders", 0)), Some(7));
    // A restart counts as activity: the busy group, now without its
    // member, keeps its offsets for the retention after the reopen.
    f.clock.advance(7 * DAY - 1);
    assert_eq!(f.c().expire_offsets().unwrap(), Vec::<String>::new());
    f.clock.advance(1);
    assert_eq!(f.c().expire_offsets().unwrap(), vec!["busy".to_string()]);
}
