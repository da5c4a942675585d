//! KIP-932 share groups in mk-group: membership (several members share a
//! partition), acquisition under time locks, acknowledgements (accept,
//! release, reject), redelivery after a lock runs out or a member leaves,
//! the delivery limit, share sessions, read_committed's undeliverable
//! records, the offset admin operations, and crash safety: an answered
//! acknowledgement survives a crash at every write, and a delivery is
//! never forgotten.

mod common;

use common::share::{FakeLog, ShareClient, ack, share_join, share_leave};
use common::{Fixture, code, consumer_join, tp};
use mk_core::{ErrorCode, TopicPartition};
use mk_group::share::{AckBatch, AckType, AcquiredRange, RecordState};
use mk_group::{GroupSettings, GroupState, ShareAutoOffsetReset, ShareHeartbeat};
use std::collections::BTreeMap;

fn queue() -> TopicPartition {
    tp("queue", 0)
}

/// A fixture whose share group "q" reads from the earliest offset.
fn earliest_q() -> Fixture {
    let mut f = Fixture::new();
    f.c().set_group_settings(
        "q",
        GroupSettings {
            share_auto_offset_reset: Some(ShareAutoOffsetReset::Earliest),
            ..GroupSettings::default()
        },
    );
    f
}

/// `earliest_q`, and a
/// log of `records` records of queue-0 in batches of 2.
fn setup(records: i64) -> (Fixture, FakeLog) {
    let f = earliest_q();
    let mut log = FakeLog::new();
    for _ in 0..records / 2 {
        log.append(&queue(), 2, true);
    }
    (f, log)
}

/// `setup`, with `members` of "q" joined on queue-0 and a share client
/// for each, in order.
fn with_members<const N: usize>(
    records: i64,
    members: [&str; N],
) -> (Fixture, FakeLog, [ShareClient; N]) {
    let (mut f, log) = setup(records);
    for m in members {
        share_join(&mut f, "q", m, &["queue"]);
    }
    (f, log, members.map(|m| ShareClient::new("q", m)))
}

fn range(first: i64, last: i64, delivery_count: u16) -> AcquiredRange {
    AcquiredRange {
        first,
        last,
        delivery_count,
    }
}

fn acquired(got: &[mk_group::share::ShareFetched]) -> Vec<AcquiredRange> {
    got.iter().flat_map(|g| g.acquired.clone()).collect()
}

fn state(f: &mut Fixture, offset: i64) -> Option<(RecordState, u16)> {
    f.c()
        .share_partition("q", &queue())
        .and_then(|p| p.state_of(offset))
}

#[test]
fn members_share_a_partition_and_never_hold_the_same_record() {
    let (mut f, log) = setup(10);
    for m in ["a", "b", "c"] {
        let joined = share_join(&mut f, "q", m, &["queue"]);
        assert_eq!(
            joined.assignment,
            Some(vec![queue()]),
            "every member gets queue-0"
        );
    }
    let d = f.c().describe_share_group("q").unwrap();
    assert_eq!((d.state, d.members.len()), (GroupState::Stable, 3));
    let (mut a, mut b, mut c) = (
        ShareClient::new("q", "a"),
        ShareClient::new("q", "b"),
        ShareClient::new("q", "c"),
    );
    let (_, got) = a.fetch(&mut f, &log, &[queue()], vec![], 4).unwrap();
    assert_eq!(acquired(&got), vec![range(0, 3, 1)]);
    let (_, got) = b.fetch(&mut f, &log, &[queue()], vec![], 4).unwrap();
    assert_eq!(acquired(&got), vec![range(4, 7, 1)]);
    let (_, got) = c.fetch(&mut f, &log, &[queue()], vec![], 4).unwrap();
    assert_eq!(acquired(&got), vec![range(8, 9, 1)]);
    let (_, got) = a.fetch(&mut f, &log, &[], vec![], 4).unwrap();
    assert!(got.is_empty(), "everything is held");
}

#[test]
fn accept_release_and_reject_decide_what_comes_back() {
    let (mut f, log, [mut a, mut b]) = with_members(6, ["a", "b"]);
    a.fetch(&mut f, &log, &[queue()], vec![], 4).unwrap();
    let acks = vec![(
        queue(),
        vec![
            ack(0, 1, AckType::Accept),
            ack(2, 2, AckType::Release),
            ack(3, 3, AckType::Reject),
        ],
    )];
    let results = a.acknowledge(&mut f, acks).unwrap();
    assert!(results.iter().all(|(_, r)| r.is_ok()), "{results:?}");
    assert_eq!(
        f.c().share_partition("q", &queue()).unwrap().start_offset(),
        2
    );
    assert_eq!(state(&mut f, 2), Some((RecordState::Available, 1)));
    assert_eq!(state(&mut f, 3), Some((RecordState::Archived, 1)));
    // b gets the released record again (its second delivery), then the
    // rest; the rejected one never.
    let (_, got) = b.fetch(&mut f, &log, &[queue()], vec![], 10).unwrap();
    assert_eq!(acquired(&got), vec![range(2, 2, 2), range(4, 5, 1)]);
    // One ShareFetch acknowledges and fetches: per offset types.
    let per_offset = AckBatch {
        first: 4,
        last: 5,
        types: vec![AckType::Accept, AckType::Gap],
    };
    let (plan, _) = b
        .fetch(
            &mut f,
            &log,
            &[],
            vec![(queue(), vec![ack(2, 2, AckType::Accept), per_offset])],
            10,
        )
        .unwrap();
    assert!(plan.acks.iter().all(|(_, r)| r.is_ok()));
    assert_eq!(
        f.c().share_partition("q", &queue()).unwrap().start_offset(),
        6,
        "all done"
    );
}

#[test]
fn acknowledgements_of_records_not_held_change_nothing() {
    let (mut f, log, [mut a, mut b]) = with_members(6, ["a", "b"]);
    a.fetch(&mut f, &log, &[queue()], vec![], 2).unwrap();
    b.fetch(&mut f, &log, &[queue()], vec![], 2).unwrap();
    let bad = [
        vec![ack(0, 3, AckType::Accept)], // 2..3 are b's
        vec![ack(0, 0, AckType::Accept), ack(0, 1, AckType::Reject)], // overlap
        vec![ack(4, 5, AckType::Accept)], // never fetched
        vec![AckBatch {
            first: 0,
            last: 1,
            types: vec![AckType::Accept; 3],
        }],
    ];
    for batches in bad {
        let mut results = a
            .acknowledge(&mut f, vec![(queue(), batches.clone())])
            .unwrap();
        let (c, msg) = code(results.remove(0).1);
        assert_eq!(c, ErrorCode::InvalidRecordState, "{batches:?}: {msg}");
        assert_eq!(
            state(&mut f, 0),
            Some((RecordState::Acquired, 1)),
            "nothing applied"
        );
    }
    let mut unknown = a
        .acknowledge(
            &mut f,
            vec![(tp("audit", 0), vec![ack(0, 0, AckType::Accept)])],
        )
        .unwrap();
    assert_eq!(code(unknown.remove(0).1).0, ErrorCode::InvalidRecordState);
}

#[test]
fn a_lock_that_runs_out_or_a_member_that_leaves_hands_the_records_out_again() {
    let (mut f, log, [mut a, mut b]) = with_members(4, ["a", "b"]);
    a.fetch(&mut f, &log, &[queue()], vec![], 2).unwrap();
    f.clock.advance(30_001);
    // b keeps heartbeating (a's session has 45 s) ...
    f.expire();
    let (_, got) = b.fetch(&mut f, &log, &[queue()], vec![], 10).unwrap();
    assert_eq!(
        acquired(&got),
        vec![range(0, 1, 2), range(2, 3, 1)],
        "a's lock ran out"
    );
    // a member that leaves releases what it holds at once.
    assert_eq!(share_leave(&mut f, "q", "b").unwrap().member_epoch, -1);
    assert_eq!(state(&mut f, 0), Some((RecordState::Available, 2)));
    let (_, got) = a.fetch(&mut f, &log, &[queue()], vec![], 10).unwrap();
    assert_eq!(acquired(&got), vec![range(0, 1, 3), range(2, 3, 2)]);
    // Closing the session (the final epoch) releases too.
    a.close(&mut f, vec![]).unwrap();
    assert_eq!(state(&mut f, 2), Some((RecordState::Available, 2)));
}

#[test]
fn the_delivery_limit_archives_a_poison_record() {
    let (mut f, log) = setup(2);
    f.c().set_group_settings(
        "q",
        GroupSettings {
            share_auto_offset_reset: Some(ShareAutoOffsetReset::Earliest),
            share_delivery_count_limit: Some(3),
            ..GroupSettings::default()
        },
    );
    share_join(&mut f, "q", "a", &["queue"]);
    let mut a = ShareClient::new("q", "a");
    for delivery in 1..=3u16 {
        let (_, got) = a.fetch(&mut f, &log, &[queue()], vec![], 1).unwrap();
        assert_eq!(acquired(&got), vec![range(0, 0, delivery)]);
        a.acknowledge(&mut f, vec![(queue(), vec![ack(0, 0, AckType::Release)])])
            .unwrap();
    }
    assert_eq!(
        f.c().share_partition("q", &queue()).unwrap().start_offset(),
        1,
        "archived"
    );
    let (_, got) = a.fetch(&mut f, &log, &[], vec![], 10).unwrap();
    assert_eq!(
        acquired(&got),
        vec![range(1, 1, 1)],
        "the poison record never again"
    );
}

#[test]
fn undeliverable_records_and_gaps_are_archived_without_delivery() {
    let mut f = earliest_q();
    let mut log = FakeLog::new();
    log.append(&queue(), 2, true);
    log.append(&queue(), 3, false); // an aborted transaction's batch
    log.append(&queue(), 1, false); // its marker
    log.append_after_gap(&queue(), 4, 2); // compaction removed 6..9
    share_join(&mut f, "q", "a", &["queue"]);
    let mut a = ShareClient::new("q", "a");
    let (_, got) = a.fetch(&mut f, &log, &[queue()], vec![], 100).unwrap();
    assert_eq!(acquired(&got), vec![range(0, 1, 1), range(10, 11, 1)]);
    for offset in 2..10 {
        assert_eq!(
            state(&mut f, offset),
            Some((RecordState::Archived, 0)),
            "offset {offset}"
        );
    }
}

#[test]
fn share_sessions_follow_their_epochs() {
    let (mut f, log, [mut a]) = with_members(2, ["a"]);
    a.epoch = 3;
    assert_eq!(
        code(a.fetch(&mut f, &log, &[queue()], vec![], 1)).0,
        ErrorCode::ShareSessionNotFound
    );
    a.epoch = 0;
    a.fetch(&mut f, &log, &[queue()], vec![], 1).unwrap();
    a.epoch = 5;
    assert_eq!(
        code(a.fetch(&mut f, &log, &[], vec![], 1)).0,
        ErrorCode::InvalidShareSessionEpoch
    );
    a.epoch = 0;
    assert_eq!(
        code(a.acknowledge(&mut f, vec![])).0,
        ErrorCode::InvalidShareSessionEpoch
    );
    let mut stranger = ShareClient::new("q", "zz");
    assert_eq!(
        code(stranger.fetch(&mut f, &log, &[queue()], vec![], 1)).0,
        ErrorCode::UnknownMember
    );
    let mut elsewhere = ShareClient::new("nope", "a");
    assert_eq!(
        code(elsewhere.fetch(&mut f, &log, &[queue()], vec![], 1)).0,
        ErrorCode::GroupIdNotFound
    );
}

#[test]
fn heartbeats_follow_kafkas_rules() {
    let mut f = Fixture::new();
    let hb = |member: &str, epoch: i32, topics: Option<Vec<String>>| ShareHeartbeat {
        group_id: "q".into(),
        member_id: member.into(),
        member_epoch: epoch,
        subscribed_topic_names: topics,
        ..ShareHeartbeat::default()
    };
    let queue_topics = Some(vec!["queue".to_string()]);
    let mut send = |h: ShareHeartbeat| {
        let (c, meta) = f.parts();
        c.share_heartbeat(h, meta)
    };
    assert_eq!(
        code(send(hb("", 0, queue_topics.clone()))).0,
        ErrorCode::InvalidRequest
    );
    assert_eq!(code(send(hb("a", 0, None))).0, ErrorCode::InvalidRequest);
    assert_eq!(code(send(hb("a", 1, None))).0, ErrorCode::GroupIdNotFound);
    assert_eq!(
        send(hb("a", 0, queue_topics.clone())).unwrap().member_epoch,
        1
    );
    let second = send(hb("b", 0, queue_topics.clone())).unwrap();
    assert_eq!(second.member_epoch, 2);
    assert_eq!(code(send(hb("a", 5, None))).0, ErrorCode::FencedMemberEpoch);
    assert_eq!(code(send(hb("zz", 2, None))).0, ErrorCode::UnknownMember);
    // a at its previous epoch (a lost answer) is accepted and moved on.
    assert_eq!(send(hb("a", 1, None)).unwrap().member_epoch, 2);
    // A share group is not a consumer group, and the other way round.
    let consumer = consumer_join("q", "c", "queue");
    let (c, meta) = f.parts();
    assert_eq!(
        code(c.consumer_heartbeat(consumer, meta)).0,
        ErrorCode::GroupIdNotFound
    );
    let (c, meta) = f.parts();
    let commit = c.commit_offsets(
        "q",
        -1,
        "",
        None,
        &common::offsets(&[("queue", 0, 1)]),
        meta,
    );
    assert_eq!(code(commit).0, ErrorCode::GroupIdNotFound);
}

#[test]
fn admin_operations_read_set_and_forget_start_offsets() {
    let (mut f, log, [mut a]) = with_members(6, ["a"]);
    a.fetch(&mut f, &log, &[queue()], vec![], 2).unwrap();
    a.acknowledge(&mut f, vec![(queue(), vec![ack(0, 1, AckType::Accept)])])
        .unwrap();
    assert_eq!(
        f.c().describe_share_offsets("q", None).unwrap(),
        vec![(queue(), Some(2))]
    );
    assert_eq!(
        f.c()
            .describe_share_offsets("q", Some(&[tp("audit", 0)]))
            .unwrap(),
        vec![(tp("audit", 0), None)]
    );
    let new = BTreeMap::from([(queue(), 5)]);
    assert_eq!(
        code(f.c().alter_share_offsets("q", &new)).0,
        ErrorCode::NonEmptyGroup
    );
    a.close(&mut f, vec![]).unwrap();
    share_leave(&mut f, "q", "a").unwrap();
    f.c().alter_share_offsets("q", &new).unwrap();
    assert_eq!(
        f.c().describe_share_offsets("q", None).unwrap(),
        vec![(queue(), Some(5))]
    );
    assert_eq!(
        f.c()
            .delete_share_offsets("q", &["queue".into(), "audit".into()])
            .unwrap(),
        vec![("queue".into(), true), ("audit".into(), false)]
    );
    assert!(f.c().describe_share_offsets("q", None).unwrap().is_empty());
    assert_eq!(
        code(f.c().describe_share_offsets("nope", None)).0,
        ErrorCode::GroupIdNotFound
    );
    // The group itself can go now, state and all.
    assert!(f.c().delete_groups(&["q".into()]).unwrap()[0].is_ok());
    assert!(f.c().describe_share_group("q").is_none());
}

#[test]
fn latest_is_the_default_start() {
    let mut f = Fixture::new();
    let mut log = FakeLog::new();
    log.append(&queue(), 3, true);
    share_join(&mut f, "q", "a", &["queue"]);
    let mut a = ShareClient::new("q", "a");
    let (_, got) = a.fetch(&mut f, &log, &[queue()], vec![], 10).unwrap();
    assert!(got.is_empty(), "only records produced from now on");
    log.append(&queue(), 2, true);
    let (_, got) = a.fetch(&mut f, &log, &[], vec![], 10).unwrap();
    assert_eq!(acquired(&got), vec![range(3, 4, 1)]);
}

#[test]
fn a_restart_keeps_acknowledgements_and_delivery_counts() {
    let (mut f, log, [mut a]) = with_members(6, ["a"]);
    a.fetch(&mut f, &log, &[queue()], vec![], 4).unwrap();
    a.acknowledge(
        &mut f,
        vec![(
            queue(),
            vec![ack(0, 1, AckType::Accept), ack(3, 3, AckType::Reject)],
        )],
    )
    .unwrap();
    f.crash();
    assert_eq!(
        f.c().describe_share_offsets("q", None).unwrap(),
        vec![(queue(), Some(2))]
    );
    assert_eq!(
        state(&mut f, 2),
        Some((RecordState::Available, 1)),
        "acquired comes back available, counted"
    );
    assert_eq!(state(&mut f, 3), Some((RecordState::Archived, 1)));
    share_join(&mut f, "q", "a", &["queue"]);
    let mut a = ShareClient::new("q", "a");
    let (_, got) = a.fetch(&mut f, &log, &[queue()], vec![], 10).unwrap();
    assert_eq!(acquired(&got), vec![range(2, 2, 2), range(4, 5, 1)]);
}

/// The scenario of the crash test: joins, fetches, acknowledgements of
/// every kind, a lock running out. Returns, as it goes, what an answered
/// request promised.
fn crash_scenario(f: &mut Fixture, log: &FakeLog, promised: &mut Promises) -> mk_group::Result<()> {
    let (c, meta) = f.parts();
    c.share_heartbeat(
        ShareHeartbeat {
            group_id: "q".into(),
            member_id: "a".into(),
            subscribed_topic_names: Some(vec!["queue".into()]),
            ..ShareHeartbeat::default()
        },
        meta,
    )?;
    let mut a = ShareClient::new("q", "a");
    for round in 0..3 {
        let (_, got) = a.fetch(f, log, &[queue()], vec![], 3)?;
        for r in acquired(&got) {
            for o in r.first..=r.last {
                promised.delivered.insert(o, r.delivery_count);
            }
        }
        let acks = vec![
            ack(round * 2, round * 2, AckType::Accept),
            ack(round * 2 + 1, round * 2 + 1, AckType::Release),
        ];
        let results = a.acknowledge(f, vec![(queue(), acks)])?;
        if results.iter().all(|(_, r)| r.is_ok()) {
            promised.accepted.push(round * 2);
        }
        f.c().flush()?;
        f.clock.advance(31_000);
        let (c, meta) = f.parts();
        c.expire_members(meta)?;
    }
    Ok(())
}

#[derive(Debug, Default)]
struct Promises {
    accepted: Vec<i64>,
    delivered: BTreeMap<i64, u16>,
}

#[test]
fn a_crash_at_any_write_loses_no_answered_acknowledgement_and_no_delivery() {
    use mk_log::{Fault, FaultInjector, LogConfig};
    use std::sync::Arc;
    let counting = Arc::new(FaultInjector::new());
    let (_, log) = setup(8);
    let settings = GroupSettings {
        share_auto_offset_reset: Some(ShareAutoOffsetReset::Earliest),
        ..GroupSettings::default()
    };
    // The fault is armed once the coordinator is open: `site` counts the
    // scenario's own write and fsync sites.
    let run = |faults: Arc<FaultInjector>, site: Option<(u64, Fault)>| {
        let mut f = Fixture::with_config(mk_group::GroupConfig {
            offsets_log: LogConfig {
                faults: faults.clone(),
                ..LogConfig::default()
            },
            session_timeout_ms: 10_000,
            share_session_timeout_ms: 1_000_000,
            ..mk_group::GroupConfig::default()
        });
        let opened = faults.sites_passed();
        if let Some((site, fault)) = site {
            faults.inject_at(opened + site, fault);
        }
        f.c().set_group_settings("q", settings.clone());
        let mut promised = Promises::default();
        let outcome = crash_scenario(&mut f, &log, &mut promised);
        (f, promised, outcome, faults.sites_passed() - opened)
    };
    let (_, _, clean, sites) = run(counting, None);
    clean.expect("the scenario runs without faults");
    assert!(sites >= 12, "the scenario writes and syncs: {sites} sites");
    let mut failures = 0;
    for site in 0..sites {
        for fault in Fault::ALL {
            let faults = Arc::new(FaultInjector::new());
            let (mut f, promised, outcome, _) = run(faults.clone(), Some((site, fault)));
            if outcome.is_err() {
                failures += 1;
            }
            faults.clear();
            f.crash();
            f.c().set_group_settings("q", settings.clone());
            let p = f.c().share_partition("q", &queue()).cloned();
            for o in &promised.accepted {
                let done = p.as_ref().is_some_and(|p| {
                    *o < p.start_offset() || p.state_of(*o).is_some_and(|(s, _)| s.is_done())
                });
                assert!(
                    done,
                    "site {site} {fault:?}: accepted offset {o} is not done after the crash: {p:?}"
                );
            }
            for (o, count) in &promised.delivered {
                let Some(p) = &p else {
                    panic!("site {site}: a delivery happened but no state survived")
                };
                if *o >= p.start_offset()
                    && let Some((s, c)) = p.state_of(*o)
                {
                    assert!(
                        s.is_done() || c >= *count,
                        "site {site} {fault:?}: offset {o} delivered {count} times, now counted {c}"
                    );
                }
            }
        }
    }
    assert!(failures > 0, "some injected faults must hit the scenario");
}

#[test]
fn a_deleted_topic_takes_its_share_state_with_it() {
    let (mut f, log, [mut a]) = with_members(4, ["a"]);
    a.fetch(&mut f, &log, &[queue()], vec![], 2).unwrap();
    assert!(f.c().share_partition("q", &queue()).is_some());
    f.c().delete_topic_offsets("queue").unwrap();
    assert!(f.c().share_partition("q", &queue()).is_none());
    f.restart();
    assert!(
        f.c().share_partition("q", &queue()).is_none(),
        "the tombstone was written"
    );
}
