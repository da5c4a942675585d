//! KIP-848 consumer groups in mk-group: joining, the group epoch and the
//! member epochs, incremental reconciliation (a partition is revoked from
//! its holder before anyone else gets it), leaving, session and rebalance
//! timeouts on the injected clock, static members, regular expressions,
//! the server assignors, the member-epoch rule of commits and fetches,
//! conversion from and to an empty classic group, and what survives a
//! restart.

mod common;

use common::{Fixture, code, kafka_join, offsets, plain, ready, tp};
use mk_core::{ErrorCode, TopicPartition};
use mk_group::{ConsumerHeartbeat, ConsumerHeartbeatAnswer, GroupState, GroupType, MemberState};

fn join(member: &str, topics: &[&str]) -> ConsumerHeartbeat {
    ConsumerHeartbeat {
        group_id: "g".into(),
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(topics.iter().map(|t| t.to_string()).collect()),
        owned_partitions: Some(Vec::new()),
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        ..ConsumerHeartbeat::default()
    }
}

/// A heartbeat of `member` at `epoch` reporting it owns `owned`.
fn beat(member: &str, epoch: i32, owned: &[TopicPartition]) -> ConsumerHeartbeat {
    ConsumerHeartbeat {
        group_id: "g".into(),
        member_id: member.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        owned_partitions: Some(owned.to_vec()),
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        ..ConsumerHeartbeat::default()
    }
}

fn hb(f: &mut Fixture, req: ConsumerHeartbeat) -> ConsumerHeartbeatAnswer {
    let (c, meta) = f.parts();
    c.consumer_heartbeat(req, meta).expect("heartbeat accepted")
}

fn hb_err(f: &mut Fixture, req: ConsumerHeartbeat) -> (ErrorCode, String) {
    let (c, meta) = f.parts();
    code(c.consumer_heartbeat(req, meta))
}

fn orders(ps: &[u32]) -> Vec<TopicPartition> {
    ps.iter().map(|p| tp("orders", *p)).collect()
}

/// No partition is held by two members at once, and each member's
/// assignment is within its target or being revoked.
fn assert_single_holders(f: &mut Fixture) {
    let d = f
        .c()
        .describe_consumer_group("g")
        .expect("a consumer group");
    let mut seen = std::collections::BTreeSet::new();
    for m in &d.members {
        for p in m.assignment.iter().chain(&m.revoking) {
            assert!(seen.insert(p.clone()), "{p} is held twice: {d:?}");
        }
    }
}

#[test]
fn the_first_member_gets_every_partition_at_epoch_one() {
    let mut f = Fixture::new();
    let a = hb(&mut f, join("a", &["orders"]));
    assert_eq!((a.member_id.as_str(), a.member_epoch), ("a", 1));
    assert_eq!(a.assignment, Some(orders(&[0, 1, 2, 3])));
    assert_eq!(a.heartbeat_interval_ms, 5_000);
    let d = f.c().describe_consumer_group("g").unwrap();
    assert_eq!(
        (d.state, d.epoch, d.assignment_epoch),
        (GroupState::Stable, 1, 1)
    );
    assert_eq!(d.assignor.name(), "uniform");
    assert_eq!(d.members[0].target, orders(&[0, 1, 2, 3]));
    // A plain heartbeat with nothing new: same epoch, no assignment sent.
    let again = hb(&mut f, beat("a", 1, &orders(&[0, 1, 2, 3])));
    assert_eq!((again.member_epoch, again.assignment), (1, None));
    assert_eq!(f.c().group_type("g"), Some(GroupType::Consumer));
}

#[test]
fn a_partition_moves_only_after_its_holder_revoked_it() {
    let mut f = Fixture::new();
    hb(&mut f, join("a", &["orders"]));
    // b joins: the group epoch grows, b's target is half the partitions,
    // all still held by a: b gets nothing yet.
    let b = hb(&mut f, join("b", &["orders"]));
    assert_eq!((b.member_epoch, b.assignment.clone()), (2, Some(vec![])));
    let d = f.c().describe_consumer_group("g").unwrap();
    assert_eq!((d.state, d.epoch), (GroupState::Reconciling, 2));
    let bd = d.members.iter().find(|m| m.member_id == "b").unwrap();
    assert_eq!(bd.state, MemberState::UnreleasedPartitions);
    let b_target = bd.target.clone();
    assert_eq!(b_target.len(), 2);
    assert_single_holders(&mut f);
    // a's next heartbeat: keep two, revoke two, stay at epoch 1.
    let a = hb(&mut f, beat("a", 1, &orders(&[0, 1, 2, 3])));
    assert_eq!(a.member_epoch, 1);
    let kept = a.assignment.clone().expect("assignment changed");
    assert_eq!(kept.len(), 2);
    assert!(kept.iter().all(|p| !b_target.contains(p)));
    assert_single_holders(&mut f);
    // a still reports the revoked partitions: nothing moves, b waits.
    assert_eq!(
        hb(&mut f, beat("a", 1, &orders(&[0, 1, 2, 3]))).assignment,
        None
    );
    assert_eq!(hb(&mut f, beat("b", 2, &[])).assignment, None);
    // a gave them up: it reaches epoch 2, and b gets them next.
    let a = hb(&mut f, beat("a", 1, &kept));
    assert_eq!((a.member_epoch, a.assignment), (2, None));
    let b = hb(&mut f, beat("b", 2, &[]));
    assert_eq!(b.assignment, Some(b_target));
    assert_single_holders(&mut f);
    assert_eq!(
        f.c().describe_consumer_group("g").unwrap().state,
        GroupState::Stable
    );
}

/// a joins and takes every partition of `orders`, then b joins; returns
/// what a keeps of the four once it heartbeats them at epoch 1.
fn a_then_b_joined(f: &mut Fixture) -> Vec<TopicPartition> {
    hb(f, join("a", &["orders"]));
    hb(f, join("b", &["orders"]));
    hb(f, beat("a", 1, &orders(&[0, 1, 2, 3])))
        .assignment
        .unwrap()
}

#[test]
fn epochs_ahead_or_behind_are_fenced_but_a_lost_answer_is_forgiven() {
    let mut f = Fixture::new();
    let kept = a_then_b_joined(&mut f);
    hb(&mut f, beat("a", 1, &kept)); // a is at epoch 2 now
    // The answer that moved a to epoch 2 was lost: epoch 1 with partitions
    // it still has is accepted.
    assert_eq!(hb(&mut f, beat("a", 1, &kept)).member_epoch, 2);
    // Epoch 1 with a partition it no longer has, epoch 3, epoch 0 of old:
    let (c, msg) = hb_err(&mut f, beat("a", 1, &orders(&[0, 1, 2, 3])));
    assert_eq!(c, ErrorCode::FencedMemberEpoch, "{msg}");
    assert_eq!(
        hb_err(&mut f, beat("a", 3, &kept)).0,
        ErrorCode::FencedMemberEpoch
    );
    assert_eq!(
        hb_err(&mut f, beat("zz", 2, &[])).0,
        ErrorCode::UnknownMember
    );
    // Rejoining with epoch 0 under the same id starts the member afresh.
    let again = hb(&mut f, join("a", &["orders"]));
    assert_eq!(again.member_epoch, 2);
    assert_single_holders(&mut f);
}

#[test]
fn a_leave_frees_the_partitions_and_grows_the_group_epoch() {
    let mut f = Fixture::new();
    let kept = a_then_b_joined(&mut f);
    hb(&mut f, beat("a", 1, &kept));
    hb(&mut f, beat("b", 2, &[]));
    let bye = hb(&mut f, beat("b", -1, &[]));
    assert_eq!(bye.member_epoch, -1);
    let d = f.c().describe_consumer_group("g").unwrap();
    assert_eq!(
        (d.state, d.epoch, d.members.len()),
        (GroupState::Assigning, 3, 1)
    );
    // a's next heartbeat computes the new target: everything is a's.
    let a = hb(&mut f, beat("a", 2, &kept));
    assert_eq!(
        (a.member_epoch, a.assignment),
        (3, Some(orders(&[0, 1, 2, 3])))
    );
    assert_eq!(
        hb_err(&mut f, beat("b", -1, &[])).0,
        ErrorCode::UnknownMember
    );
}

#[test]
fn sessions_and_revocations_run_out_on_the_clock() {
    let mut f = Fixture::new();
    hb(&mut f, join("a", &["orders"]));
    f.clock.advance(40_000);
    hb(&mut f, beat("a", 1, &orders(&[0, 1, 2, 3])));
    hb(&mut f, join("b", &["orders"]));
    // a must revoke two partitions within its rebalance timeout (30 s).
    hb(&mut f, beat("a", 1, &orders(&[0, 1, 2, 3])));
    f.clock.advance(30_001);
    hb(&mut f, beat("b", 2, &[]));
    assert_eq!(f.expire(), vec![("g".into(), "a".into())]);
    let d = f.c().describe_consumer_group("g").unwrap();
    assert_eq!(d.members.len(), 1);
    // b's session (45 s) runs out too.
    f.clock.advance(45_001);
    assert_eq!(f.expire(), vec![("g".into(), "b".into())]);
    assert_eq!(
        f.c().describe_consumer_group("g").unwrap().state,
        GroupState::Empty
    );
}

#[test]
fn a_static_member_steps_away_and_returns_under_a_new_id_with_its_partitions() {
    let mut f = Fixture::new();
    let with_instance = |r: ConsumerHeartbeat| ConsumerHeartbeat {
        instance_id: Some("i-a".into()),
        ..r
    };
    hb(&mut f, with_instance(join("a1", &["orders"])));
    hb(&mut f, join("b", &["orders"]));
    let kept = hb(&mut f, with_instance(beat("a1", 1, &orders(&[0, 1, 2, 3]))))
        .assignment
        .unwrap();
    hb(&mut f, with_instance(beat("a1", 1, &kept)));
    // While a1 holds the instance id, another id cannot take it.
    let (c, _) = hb_err(&mut f, with_instance(join("a2", &["orders"])));
    assert_eq!(c, ErrorCode::UnreleasedInstanceId);
    // a1 steps away for a restart (-2): it keeps its partitions.
    let away = hb(&mut f, with_instance(beat("a1", -2, &[])));
    assert_eq!(away.member_epoch, -2);
    let epoch = f.c().describe_consumer_group("g").unwrap().epoch;
    let back = hb(&mut f, with_instance(join("a2", &["orders"])));
    assert_eq!(back.assignment, Some(kept), "the same partitions, at once");
    let d = f.c().describe_consumer_group("g").unwrap();
    assert_eq!(d.epoch, epoch, "no rebalance");
    assert!(d.members.iter().all(|m| m.member_id != "a1"));
    // The old id is fenced.
    assert_eq!(
        hb_err(&mut f, with_instance(beat("a1", 2, &[]))).0,
        ErrorCode::FencedInstanceId
    );
    assert_single_holders(&mut f);
}

#[test]
fn a_regular_expression_follows_topics_as_they_come() {
    let mut f = Fixture::new();
    let by_regex = ConsumerHeartbeat {
        subscribed_topic_names: None,
        subscribed_topic_regex: Some("or.*|pay.+".into()),
        ..join("a", &[])
    };
    let a = hb(&mut f, by_regex);
    let mut want = orders(&[0, 1, 2, 3]);
    want.extend([tp("payments", 0), tp("payments", 1)]);
    assert_eq!(a.assignment, Some(want));
    // A new matching topic: the next heartbeat sees it and the epoch grows.
    f.meta.insert("orders-eu".into(), 1);
    let a = hb(&mut f, beat("a", 1, &[]));
    assert_eq!(a.member_epoch, 2);
    assert!(a.assignment.unwrap().contains(&tp("orders-eu", 0)));
    let bad = ConsumerHeartbeat {
        subscribed_topic_regex: Some("(".into()),
        ..join("b", &[])
    };
    assert_eq!(hb_err(&mut f, bad).0, ErrorCode::InvalidRegularExpression);
}

#[test]
fn members_pick_the_assignor_and_an_unknown_one_is_refused() {
    let mut f = Fixture::new();
    let range = |m: &str| ConsumerHeartbeat {
        server_assignor: Some("range".into()),
        ..join(m, &["orders"])
    };
    hb(&mut f, range("a"));
    hb(&mut f, range("b"));
    let d = f.c().describe_consumer_group("g").unwrap();
    assert_eq!(d.assignor.name(), "range");
    let targets: Vec<_> = d.members.iter().map(|m| m.target.clone()).collect();
    assert_eq!(targets, vec![orders(&[0, 1]), orders(&[2, 3])]);
    let sticky = ConsumerHeartbeat {
        server_assignor: Some("sticky".into()),
        ..join("c", &["orders"])
    };
    let (c, msg) = hb_err(&mut f, sticky);
    assert_eq!(c, ErrorCode::UnsupportedAssignor);
    assert!(msg.contains("uniform, range"), "{msg}");
}

#[test]
fn malformed_heartbeats_are_invalid_requests() {
    let mut f = Fixture::new();
    let cases = [
        (
            ConsumerHeartbeat {
                group_id: " ".into(),
                ..join("a", &["orders"])
            },
            "GroupId",
        ),
        (
            ConsumerHeartbeat {
                member_id: String::new(),
                ..join("a", &["orders"])
            },
            "MemberId",
        ),
        (
            ConsumerHeartbeat {
                rebalance_timeout_ms: -1,
                ..join("a", &["orders"])
            },
            "RebalanceTimeoutMs",
        ),
        (
            ConsumerHeartbeat {
                owned_partitions: None,
                ..join("a", &["orders"])
            },
            "TopicPartitions",
        ),
        (
            ConsumerHeartbeat {
                subscribed_topic_names: None,
                ..join("a", &["orders"])
            },
            "Subscribed",
        ),
        (
            ConsumerHeartbeat {
                instance_id: Some(String::new()),
                ..join("a", &["orders"])
            },
            "InstanceId",
        ),
        (
            ConsumerHeartbeat {
                member_epoch: -3,
                ..join("a", &["orders"])
            },
            "MemberEpoch",
        ),
        (
            ConsumerHeartbeat {
                member_epoch: -2,
                ..beat("a", 1, &[])
            },
            "InstanceId",
        ),
    ];
    for (req, word) in cases {
        let (c, msg) = hb_err(&mut f, req);
        assert_eq!(c, ErrorCode::InvalidRequest, "{msg}");
        assert!(msg.contains(word), "{msg} should name {word}");
    }
}

#[test]
fn v0_lets_the_coordinator_make_the_member_id_and_unknown_ids_are_refused() {
    let mut f = Fixture::new();
    // v0 lets the coordinator make the member id of a joining member.
    let v0 = ConsumerHeartbeat {
        member_id: String::new(),
        member_id_optional: true,
        ..join("", &["orders"])
    };
    assert!(!hb(&mut f, v0).member_id.is_empty());
    assert_eq!(
        hb_err(&mut f, beat("x", 1, &[])).0,
        ErrorCode::UnknownMember
    );
    let unknown_group = ConsumerHeartbeat {
        group_id: "nope".into(),
        ..beat("x", 1, &[])
    };
    assert_eq!(hb_err(&mut f, unknown_group).0, ErrorCode::GroupIdNotFound);
}

#[test]
fn commits_and_fetches_check_the_member_epoch() {
    let mut f = Fixture::new();
    hb(&mut f, join("a", &["orders"]));
    let o = plain(&[("orders", 0, 5)]);
    let commit = |f: &mut Fixture, member: &str, epoch: i32, version: i16| {
        f.commit_request("g", member, epoch, version, &o)
            .map(|_| ())
    };
    commit(&mut f, "a", 1, 9).expect("the member's epoch");
    assert_eq!(f.c().fetch_committed("g", &tp("orders", 0)), Some(5));
    assert_eq!(
        code(commit(&mut f, "a", 0, 9)).0,
        ErrorCode::StaleMemberEpoch
    );
    assert_eq!(
        code(commit(&mut f, "a", 2, 9)).0,
        ErrorCode::StaleMemberEpoch
    );
    assert_eq!(code(commit(&mut f, "zz", 1, 9)).0, ErrorCode::UnknownMember);
    assert_eq!(
        code(commit(&mut f, "a", 1, 8)).0,
        ErrorCode::UnsupportedVersion
    );
    // Without membership while the group has members: refused.
    assert_eq!(code(commit(&mut f, "", -1, 9)).0, ErrorCode::UnknownMember);
    assert_eq!(
        code(f.c().validate_offset_fetch("g", Some("a"), 0)).0,
        ErrorCode::StaleMemberEpoch
    );
    assert_eq!(
        code(f.c().validate_offset_fetch("g", Some("zz"), 1)).0,
        ErrorCode::UnknownMember
    );
    f.c().validate_offset_fetch("g", Some("a"), 1).unwrap();
    f.c().validate_offset_fetch("g", None, -1).unwrap();
    // An unknown group: GROUP_ID_NOT_FOUND from v9, ILLEGAL_GENERATION before.
    let unknown =
        |f: &mut Fixture, version: i16| code(f.commit_request("nope", "m", 3, version, &o)).0;
    assert_eq!(unknown(&mut f, 9), ErrorCode::GroupIdNotFound);
    assert_eq!(unknown(&mut f, 8), ErrorCode::IllegalGeneration);
    // Once the group is empty a plain commit is accepted.
    hb(&mut f, beat("a", -1, &[]));
    commit(&mut f, "", -1, 9).expect("a commit of an empty consumer group");
}

#[test]
fn an_empty_classic_group_becomes_a_consumer_group_and_back() {
    let mut f = Fixture::new();
    f.commit("g", "", -1, &offsets(&[("orders", 1, 7)]))
        .unwrap();
    assert_eq!(f.c().group_type("g"), Some(GroupType::Classic));
    hb(&mut f, join("a", &["orders"]));
    assert_eq!(f.c().group_type("g"), Some(GroupType::Consumer));
    assert_eq!(
        f.c().fetch_committed("g", &tp("orders", 1)),
        Some(7),
        "offsets stay"
    );
    assert!(
        f.c().describe_group("g").is_none(),
        "not a classic group any more"
    );
    // A classic member cannot join while consumer-protocol members are in.
    let (c, _) = code(f.c().join_member(kafka_join("g", "")));
    assert_eq!(c, ErrorCode::InconsistentGroupProtocol);
    hb(&mut f, beat("a", -1, &[]));
    let mut h = f
        .c()
        .join_member(kafka_join("g", ""))
        .expect("the empty group converts");
    let joined = ready(&mut h);
    assert_eq!(joined.generation_id, 1);
    assert_eq!(f.c().group_type("g"), Some(GroupType::Classic));
    assert_eq!(f.c().fetch_committed("g", &tp("orders", 1)), Some(7));
    // A classic group with members does not convert.
    let (c, msg) = hb_err(&mut f, join("a", &["orders"]));
    assert_eq!(c, ErrorCode::GroupIdNotFound, "{msg}");
}

#[test]
fn the_group_epoch_survives_a_restart_and_old_members_are_unknown() {
    let mut f = Fixture::new();
    hb(&mut f, join("a", &["orders"]));
    hb(&mut f, join("b", &["orders"]));
    f.restart();
    let d = f.c().describe_consumer_group("g").unwrap();
    assert_eq!(
        (d.state, d.epoch, d.members.len()),
        (GroupState::Empty, 2, 0)
    );
    let listed = f.c().list_group_listings();
    assert_eq!(listed[0].group_type, GroupType::Consumer);
    assert_eq!(listed[0].protocol_type, "consumer");
    assert_eq!(
        hb_err(&mut f, beat("a", 1, &[])).0,
        ErrorCode::UnknownMember
    );
    assert_eq!(hb(&mut f, join("a", &["orders"])).member_epoch, 3);
}

#[test]
fn a_failed_write_publishes_no_epoch() {
    use mk_log::{FaultInjector, LogConfig};
    use std::sync::Arc;
    let faults = Arc::new(FaultInjector::new());
    let mut f = Fixture::with_config(mk_group::GroupConfig {
        offsets_log: LogConfig {
            faults: faults.clone(),
            ..LogConfig::default()
        },
        ..mk_group::GroupConfig::default()
    });
    hb(&mut f, join("a", &["orders"]));
    faults.fail_writes_after(0);
    let (c, _) = hb_err(&mut f, join("b", &["orders"]));
    assert_eq!(c, ErrorCode::StorageError);
    let d = f.c().describe_consumer_group("g").unwrap();
    assert_eq!(
        (d.epoch, d.members.len()),
        (1, 1),
        "nothing of the refused join shows"
    );
}
