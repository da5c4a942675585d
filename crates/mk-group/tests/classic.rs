//! Kafka's classic group protocol, rule by rule, through the public
//! coordinator API: the join barrier and its timeout, one generation bump
//! per rebalance, protocol selection, the leader, SyncGroup, idempotent
//! rejoins, heartbeats by state, session expiry, LeaveGroup, MEMBER_ID_REQUIRED,
//! static membership, the commit rule for Kafka members, describe, list and
//! the deletion rules, and how Kafka members and coordinator-assigned
//! members share a group over time.

mod common;

use bytes::Bytes;
use common::{
    Fixture, KAFKA_REBALANCE_MS, KAFKA_SESSION_MS, code, failed, kafka_join, kafka_sync, offsets,
    ready, tp, waiting,
};
use mk_core::{Clock, ErrorCode};
use mk_group::{
    GroupConfig, GroupHandle, GroupJoin, GroupJoined, GroupState, GroupSync, GroupSynced,
    JoinHandle, MemberDescription,
};

fn b(s: &'static str) -> Bytes {
    Bytes::from_static(s.as_bytes())
}

/// A member that joined and synced: its id and generation.
struct Joined {
    id: String,
    generation: i32,
}

/// Joins `join` and expects an immediate answer.
fn join_now(f: &mut Fixture, join: GroupJoin) -> GroupJoined {
    let mut h = f.c().join_member(join).expect("join accepted");
    ready(&mut h)
}

/// A one-member Stable group `g` whose leader assigned itself `orders-0`.
fn stable_alone(f: &mut Fixture) -> Joined {
    let j = join_now(f, kafka_join("g", ""));
    let mut sync = kafka_sync("g", &j.member_id, j.generation_id);
    sync.assignments = vec![(j.member_id.clone(), b("all"))];
    sync.assigned_partitions = vec![(j.member_id.clone(), vec![tp("orders", 0)])];
    let mut h = f.c().sync_member(sync).unwrap();
    assert_eq!(ready(&mut h).assignment, b("all"));
    Joined {
        id: j.member_id,
        generation: j.generation_id,
    }
}

/// A fixture with `stable_alone`'s group and a new member's join that
/// waits at the barrier.
fn stable_with_newcomer() -> (Fixture, Joined, JoinHandle) {
    let mut f = Fixture::new();
    let a = stable_alone(&mut f);
    let newcomer = f.c().join_member(kafka_join("g", "")).unwrap();
    (f, a, newcomer)
}

/// `beat` runs (a member keeps its session alive), the time step removes
/// nobody, and `h` still waits.
fn beat_and_hold<T: std::fmt::Debug>(
    f: &mut Fixture,
    h: &mut GroupHandle<T>,
    beat: impl Fn(&mut Fixture),
) {
    beat(f);
    assert!(f.expire().is_empty());
    waiting(h);
}

/// Steps the clock 5 s at a time while a step stays short of
/// `deadline_ms`, holding (`beat_and_hold`) after every step.
fn hold_until<T: std::fmt::Debug>(
    f: &mut Fixture,
    deadline_ms: i64,
    h: &mut GroupHandle<T>,
    beat: impl Fn(&mut Fixture),
) {
    while f.clock.now_ms() + 5_000 < deadline_ms {
        f.clock.advance(5_000);
        beat_and_hold(f, h, &beat);
    }
}

fn state(f: &mut Fixture, group: &str) -> GroupState {
    f.c().describe_group(group).expect("group exists").state
}

/// The leader `leader` syncs `generation`, handing out `assignments`
/// (member id, assignment bytes); its own answer.
fn sync_leader(
    f: &mut Fixture,
    leader: &str,
    generation: i32,
    assignments: &[(&String, &'static str)],
) -> GroupSynced {
    let mut sync = kafka_sync("g", leader, generation);
    sync.assignments = assignments
        .iter()
        .map(|(m, a)| ((*m).clone(), b(a)))
        .collect();
    ready(&mut f.c().sync_member(sync).unwrap())
}

/// The leader `leader` hands out `assignments` and `follower` syncs too,
/// both in the follower's generation (a passed barrier answers every
/// member with the same one).
fn sync_with_follower(
    f: &mut Fixture,
    leader: &str,
    follower: &GroupJoined,
    assignments: &[(&String, &'static str)],
) {
    sync_leader(f, leader, follower.generation_id, assignments);
    sync_follower(f, follower);
}

/// The member that joined as `j` syncs as a follower; its answer.
fn sync_follower(f: &mut Fixture, j: &GroupJoined) -> GroupSynced {
    let sync = kafka_sync("g", &j.member_id, j.generation_id);
    ready(&mut f.c().sync_member(sync).unwrap())
}

/// A dynamic newcomer joins the Stable one-member group `g` and its leader
/// rejoins with `leader_join`; the leader hands out `own` to itself and
/// `theirs` to the newcomer, and both sync: the Stable pair.
fn grow_to_pair(
    f: &mut Fixture,
    leader_join: GroupJoin,
    (own, theirs): (&'static str, &'static str),
) -> (Joined, Joined) {
    let mut newcomer = f.c().join_member(kafka_join("g", "")).unwrap();
    let leader_id = leader_join.member_id.clone();
    let leader = join_now(f, leader_join);
    let follower = ready(&mut newcomer);
    sync_leader(
        f,
        &leader_id,
        leader.generation_id,
        &[(&leader_id, own), (&follower.member_id, theirs)],
    );
    sync_follower(f, &follower);
    (
        Joined {
            id: leader_id,
            generation: leader.generation_id,
        },
        Joined {
            id: follower.member_id,
            generation: follower.generation_id,
        },
    )
}

/// Member `id` as group `g` describes it.
fn described(f: &mut Fixture, id: &str) -> MemberDescription {
    let d = f.c().describe_group("g").expect("group exists");
    d.members
        .into_iter()
        .find(|m| m.member_id == id)
        .expect("a member of the group")
}

/// An id handed out with MEMBER_ID_REQUIRED to `join` (a v4+ join
/// without one).
fn required_id(f: &mut Fixture, join: GroupJoin) -> String {
    f.c()
        .join_member(join)
        .unwrap_err()
        .member_id_required()
        .expect("MEMBER_ID_REQUIRED names the id")
        .to_string()
}

#[test]
fn the_first_member_forms_generation_one_leads_it_and_syncs_its_own_assignment() {
    let mut f = Fixture::new();
    let j = join_now(&mut f, kafka_join("g", ""));
    assert_eq!(j.generation_id, 1);
    assert_eq!(j.leader_id, j.member_id);
    assert!(j.member_id.starts_with("client-0-"), "{}", j.member_id);
    assert_eq!(
        (j.protocol_type.as_str(), j.protocol_name.as_str()),
        ("consumer", "range")
    );
    assert_eq!(j.members.len(), 1);
    assert_eq!(j.members[0].metadata, b("orders"));
    assert_eq!(state(&mut f, "g"), GroupState::CompletingRebalance);
    let mut sync = kafka_sync("g", &j.member_id, 1);
    sync.assignments = vec![(j.member_id.clone(), b("\x00\x01opaque"))];
    let mut h = f.c().sync_member(sync).unwrap();
    let synced = ready(&mut h);
    assert_eq!(
        synced.assignment,
        b("\x00\x01opaque"),
        "handed out verbatim"
    );
    assert_eq!(synced.protocol_name, "range");
    assert_eq!(state(&mut f, "g"), GroupState::Stable);
}

#[test]
fn the_barrier_waits_for_every_known_member_and_answers_all_joins_together() {
    let (mut f, a, mut hb) = stable_with_newcomer();
    waiting(&mut hb);
    assert_eq!(state(&mut f, "g"), GroupState::PreparingRebalance);
    // The known member learns of the rebalance from its heartbeat...
    assert_eq!(
        code(f.c().heartbeat_member("g", &a.id, a.generation, None)).0,
        ErrorCode::RebalanceInProgress
    );
    waiting(&mut hb);
    // ...and rejoins: both joins complete together in one new generation.
    let mut ha = f.c().join_member(kafka_join("g", &a.id)).unwrap();
    let (ja, jb) = (ready(&mut ha), ready(&mut hb));
    assert_eq!((ja.generation_id, jb.generation_id), (2, 2));
    assert_eq!(ja.leader_id, a.id, "the leader that rejoined stays leader");
    assert_eq!(jb.leader_id, a.id);
    let ids: Vec<&str> = ja.members.iter().map(|m| m.member_id.as_str()).collect();
    let mut expected = vec![a.id.as_str(), jb.member_id.as_str()];
    expected.sort();
    assert_eq!(ids, expected, "the leader gets every member's metadata");
    assert!(jb.members.is_empty(), "a follower gets no member list");
}

#[test]
fn stragglers_are_removed_when_the_rebalance_timeout_passes() {
    let mut f = Fixture::new();
    let a = stable_alone(&mut f);
    let mut newcomer = kafka_join("g", "");
    newcomer.rebalance_timeout_ms = 5_000;
    let mut hb = f.c().join_member(newcomer).unwrap();
    // The barrier waits the largest rebalance timeout of the members (a's).
    f.clock.advance(i64::from(KAFKA_REBALANCE_MS) - 1);
    // a kept its session alive but never rejoined.
    beat_and_hold(&mut f, &mut hb, |f| {
        f.c()
            .heartbeat_member("g", &a.id, a.generation, None)
            .unwrap_err();
    });
    f.clock.advance(1);
    let removed = f.expire();
    assert_eq!(removed, vec![("g".to_string(), a.id.clone())]);
    let jb = ready(&mut hb);
    assert_eq!(jb.generation_id, a.generation + 1);
    assert_eq!(jb.leader_id, jb.member_id, "a member that rejoined leads");
    assert_eq!(jb.members.len(), 1);
    assert_eq!(
        code(f.c().heartbeat_member("g", &a.id, jb.generation_id, None)).0,
        ErrorCode::UnknownMember
    );
}

#[test]
fn a_rebalance_bumps_the_generation_exactly_once() {
    let mut f = Fixture::new();
    let a = stable_alone(&mut f);
    let mut handles: Vec<_> = (0..3)
        .map(|_| f.c().join_member(kafka_join("g", "")).unwrap())
        .collect();
    handles.push(f.c().join_member(kafka_join("g", &a.id)).unwrap());
    let generations: Vec<i32> = handles.iter_mut().map(|h| ready(h).generation_id).collect();
    assert_eq!(generations, vec![a.generation + 1; 4]);
    assert_eq!(
        f.c().describe_group("g").unwrap().generation,
        a.generation + 1
    );
}

fn with_protocols(member: &str, protocols: &[&'static str]) -> GroupJoin {
    GroupJoin {
        protocols: protocols.iter().map(|p| (p.to_string(), b(p))).collect(),
        ..kafka_join("p", member)
    }
}

/// Joins every member (new ones) to group `p` and returns the protocol the
/// rebalance chose.
fn chosen(lists: &[&[&'static str]]) -> String {
    let mut f = Fixture::new();
    let mut handles: Vec<_> = lists
        .iter()
        .map(|l| f.c().join_member(with_protocols("", l)).unwrap())
        .collect();
    // The first join formed generation 1 alone; the others wait for its
    // member to rejoin.
    let first = ready(&mut handles[0]);
    let mut again = f
        .c()
        .join_member(with_protocols(&first.member_id, lists[0]))
        .unwrap();
    let answer = ready(&mut again);
    for h in &mut handles[1..] {
        assert_eq!(ready(h).protocol_name, answer.protocol_name);
    }
    answer.protocol_name
}

#[test]
fn the_protocol_is_the_one_all_members_support_with_the_most_first_choices() {
    // Only roundrobin is supported by all three.
    assert_eq!(
        chosen(&[
            &["range", "roundrobin"],
            &["roundrobin", "range"],
            &["roundrobin"]
        ]),
        "roundrobin"
    );
    // Both are supported by all; range is the first choice of two.
    assert_eq!(
        chosen(&[
            &["range", "roundrobin"],
            &["roundrobin", "range"],
            &["range", "roundrobin"]
        ]),
        "range"
    );
    // A tie (Kafka leaves it to hash order) goes to the smallest name.
    assert_eq!(chosen(&[&["y", "x"], &["x", "y"]]), "x");
}

#[test]
fn a_member_without_a_common_protocol_or_with_another_protocol_type_is_inconsistent() {
    let mut f = Fixture::new();
    join_now(&mut f, with_protocols("", &["range", "roundrobin"]));
    let (c, msg) = code(f.c().join_member(with_protocols("", &["sticky"])));
    assert_eq!(c, ErrorCode::InconsistentGroupProtocol);
    assert!(msg.contains("range, roundrobin"), "{msg}");
    let other_type = GroupJoin {
        protocol_type: "connect".into(),
        ..with_protocols("", &["range"])
    };
    let (c, msg) = code(f.c().join_member(other_type));
    assert_eq!(c, ErrorCode::InconsistentGroupProtocol);
    assert!(msg.contains("connect"), "{msg}");
    // The first member of a group needs a type and a protocol.
    let bare = GroupJoin {
        protocols: Vec::new(),
        ..kafka_join("q", "")
    };
    assert_eq!(
        code(f.c().join_member(bare)).0,
        ErrorCode::InconsistentGroupProtocol
    );
    assert_eq!(
        f.c().describe_group("q"),
        None,
        "a refused join creates no group"
    );
}

#[test]
fn followers_wait_for_the_leaders_sync_and_get_its_assignment_verbatim() {
    let (mut f, a, mut hb) = stable_with_newcomer();
    let mut hc = f.c().join_member(kafka_join("g", "")).unwrap();
    let ja = join_now(&mut f, kafka_join("g", &a.id));
    let (jb, jc) = (ready(&mut hb), ready(&mut hc));
    let generation = ja.generation_id;
    let mut follower = f
        .c()
        .sync_member(kafka_sync("g", &jb.member_id, generation))
        .unwrap();
    waiting(&mut follower);
    let mut leader_sync = kafka_sync("g", &a.id, generation);
    leader_sync.assignments = vec![
        (a.id.clone(), b("A")),
        (jb.member_id.clone(), b("B")),
        ("nobody".into(), b("ignored")),
    ];
    leader_sync.assigned_partitions = vec![
        (a.id.clone(), vec![tp("orders", 1), tp("orders", 0)]),
        (jb.member_id.clone(), vec![tp("orders", 2)]),
    ];
    let mut leader = f.c().sync_member(leader_sync).unwrap();
    assert_eq!(ready(&mut leader).assignment, b("A"));
    assert_eq!(ready(&mut follower).assignment, b("B"));
    // A member the leader left out gets an empty assignment.
    let mut late = f
        .c()
        .sync_member(kafka_sync("g", &jc.member_id, generation))
        .unwrap();
    assert_eq!(ready(&mut late).assignment, Bytes::new());
    let d = f.c().describe_group("g").unwrap();
    assert_eq!(d.state, GroupState::Stable);
    let mine = d.members.iter().find(|m| m.member_id == a.id).unwrap();
    assert_eq!(mine.assignment, vec![tp("orders", 0), tp("orders", 1)]);
    assert_eq!(mine.assignment_bytes, b("A"));
}

#[test]
fn a_sync_of_the_wrong_generation_member_protocol_or_state_is_refused() {
    let mut f = Fixture::new();
    let a = stable_alone(&mut f);
    let sync = |member: &str, generation: i32| kafka_sync("g", member, generation);
    assert_eq!(
        code(f.c().sync_member(sync(&a.id, a.generation + 1))).0,
        ErrorCode::IllegalGeneration
    );
    assert_eq!(
        code(f.c().sync_member(sync("ghost", a.generation))).0,
        ErrorCode::UnknownMember
    );
    assert_eq!(
        code(f.c().sync_member(kafka_sync("nope", &a.id, 1))).0,
        ErrorCode::UnknownMember
    );
    let wrong_name = GroupSync {
        protocol_name: Some("roundrobin".into()),
        ..sync(&a.id, a.generation)
    };
    assert_eq!(
        code(f.c().sync_member(wrong_name)).0,
        ErrorCode::InconsistentGroupProtocol
    );
    // A Stable group answers a sync at once with the current assignment.
    let mut h = f.c().sync_member(sync(&a.id, a.generation)).unwrap();
    assert_eq!(ready(&mut h).assignment, b("all"));
    // During PreparingRebalance there is nothing to sync.
    let _newcomer = f.c().join_member(kafka_join("g", "")).unwrap();
    assert_eq!(
        code(f.c().sync_member(sync(&a.id, a.generation))).0,
        ErrorCode::RebalanceInProgress
    );
}

/// A Stable group `g` with a leader and one follower; returns both.
fn stable_pair(f: &mut Fixture) -> (Joined, Joined) {
    let a = stable_alone(f);
    grow_to_pair(f, kafka_join("g", &a.id), ("A", "B"))
}

#[test]
fn a_followers_unchanged_rejoin_keeps_the_generation_and_a_change_or_the_leader_rebalances() {
    let mut f = Fixture::new();
    let (a, bm) = stable_pair(&mut f);
    let leo = f.leo();
    // Kafka's idempotent rejoin: the current generation, no rebalance.
    let j = join_now(&mut f, kafka_join("g", &bm.id));
    assert_eq!(
        (j.generation_id, j.leader_id.as_str()),
        (bm.generation, a.id.as_str())
    );
    assert!(j.members.is_empty());
    assert_eq!(state(&mut f, "g"), GroupState::Stable);
    assert_eq!(f.leo(), leo, "no generation was written");
    // A rejoin with changed metadata rebalances.
    let changed = GroupJoin {
        protocols: vec![("range".into(), b("orders,payments"))],
        ..kafka_join("g", &bm.id)
    };
    let mut hb = f.c().join_member(changed).unwrap();
    waiting(&mut hb);
    assert_eq!(state(&mut f, "g"), GroupState::PreparingRebalance);
    let ja = join_now(&mut f, kafka_join("g", &a.id));
    assert_eq!(ja.generation_id, bm.generation + 1);
    ready(&mut hb);
    // While CompletingRebalance an unchanged rejoin is answered with the
    // current generation; the leader gets the member list again.
    let again = join_now(&mut f, kafka_join("g", &a.id));
    assert_eq!(again.generation_id, ja.generation_id);
    assert_eq!(again.members.len(), 2);
    sync_leader(&mut f, &a.id, ja.generation_id, &[(&a.id, "A2")]);
    // The leader's rejoin while Stable always rebalances (Kafka: the leader
    // rejoins to react to changes its members' metadata does not show).
    let mut h = f.c().join_member(kafka_join("g", &a.id)).unwrap();
    waiting(&mut h);
    assert_eq!(state(&mut f, "g"), GroupState::PreparingRebalance);
}

#[test]
fn heartbeats_answer_by_state_member_and_generation() {
    let mut f = Fixture::new();
    let (a, bm) = stable_pair(&mut f);
    let hb = |f: &mut Fixture, m: &str, g: i32| f.c().heartbeat_member("g", m, g, None);
    hb(&mut f, &a.id, a.generation).unwrap();
    assert_eq!(
        code(hb(&mut f, &a.id, a.generation - 1)).0,
        ErrorCode::IllegalGeneration
    );
    assert_eq!(
        code(hb(&mut f, "ghost", a.generation)).0,
        ErrorCode::UnknownMember
    );
    assert_eq!(
        code(f.c().heartbeat_member("nope", &a.id, 1, None)).0,
        ErrorCode::UnknownMember
    );
    // PreparingRebalance: REBALANCE_IN_PROGRESS, and the session goes on.
    let mut hc = f.c().join_member(kafka_join("g", "")).unwrap();
    f.clock.advance(5_000);
    assert_eq!(
        code(hb(&mut f, &bm.id, bm.generation)).0,
        ErrorCode::RebalanceInProgress
    );
    let deadline = described(&mut f, &bm.id).deadline_ms;
    assert_eq!(deadline, f.clock.now_ms() + i64::from(KAFKA_SESSION_MS));
    // CompletingRebalance: members heartbeat between join and sync.
    let mut ha = f.c().join_member(kafka_join("g", &a.id)).unwrap();
    let mut hbm = f.c().join_member(kafka_join("g", &bm.id)).unwrap();
    let ja = ready(&mut ha);
    let jc = ready(&mut hc);
    ready(&mut hbm);
    assert_eq!(state(&mut f, "g"), GroupState::CompletingRebalance);
    hb(&mut f, &jc.member_id, ja.generation_id).unwrap();
}

#[test]
fn a_silent_member_expires_after_its_session_timeout_and_a_rebalance_starts() {
    let mut f = Fixture::new();
    let (a, bm) = stable_pair(&mut f);
    f.clock.advance(i64::from(KAFKA_SESSION_MS) - 1);
    f.c()
        .heartbeat_member("g", &a.id, a.generation, None)
        .unwrap();
    f.clock.advance(1);
    assert!(f.expire().is_empty(), "at the deadline the member is alive");
    f.clock.advance(1);
    assert_eq!(f.expire(), vec![("g".to_string(), bm.id.clone())]);
    assert_eq!(state(&mut f, "g"), GroupState::PreparingRebalance);
    // The survivor rejoins alone: the barrier passes at once.
    let ja = join_now(&mut f, kafka_join("g", &a.id));
    assert_eq!(ja.generation_id, a.generation + 1);
    assert_eq!(ja.members.len(), 1);
}

#[test]
fn a_member_waiting_at_the_barrier_does_not_expire() {
    let (mut f, a, mut hb) = stable_with_newcomer();
    // Past the newcomer's session timeout but within the barrier: it waits
    // for an answer, so it is alive (Kafka), and a is the one that goes.
    f.clock.advance(i64::from(KAFKA_SESSION_MS) + 1);
    assert_eq!(f.expire(), vec![("g".to_string(), a.id.clone())]);
    let jb = ready(&mut hb);
    assert_eq!(jb.generation_id, a.generation + 1);
}

#[test]
fn leave_group_removes_one_or_many_members_by_member_id_or_instance_id() {
    let mut f = Fixture::new();
    let (a, bm) = stable_pair(&mut f);
    let (c, meta) = f.parts();
    let answers = c
        .leave_members(
            "g",
            &[
                (bm.id.clone(), None),
                ("ghost".into(), None),
                (bm.id.clone(), None),
                (String::new(), Some("nobody".into())),
            ],
            meta,
        )
        .unwrap();
    let codes: Vec<Option<ErrorCode>> = answers
        .iter()
        .map(|r| r.as_ref().err().map(|e| e.code()))
        .collect();
    assert_eq!(
        codes,
        vec![
            None,
            Some(ErrorCode::UnknownMember),
            Some(ErrorCode::UnknownMember),
            Some(ErrorCode::UnknownMember)
        ]
    );
    assert_eq!(state(&mut f, "g"), GroupState::PreparingRebalance);
    let ja = join_now(&mut f, kafka_join("g", &a.id));
    assert_eq!((ja.generation_id, ja.members.len()), (a.generation + 1, 1));
    // An unknown group answers UNKNOWN_MEMBER per member.
    let (c, meta) = f.parts();
    let answers = c
        .leave_members("nope", &[("x".into(), None)], meta)
        .unwrap();
    assert_eq!(
        answers[0].as_ref().unwrap_err().code(),
        ErrorCode::UnknownMember
    );
    // The last member's leave empties the group with a new generation.
    let answers = c.leave_members("g", &[(a.id.clone(), None)], meta).unwrap();
    assert!(answers[0].is_ok());
    let d = c.describe_group("g").unwrap();
    assert_eq!(
        (d.state, d.generation),
        (GroupState::Empty, a.generation + 2)
    );
}

#[test]
fn a_new_member_gets_member_id_required_and_joins_with_the_made_id() {
    let mut f = Fixture::new();
    let v4 = GroupJoin {
        require_known_member_id: true,
        ..kafka_join("g", "")
    };
    let e = f.c().join_member(v4.clone()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::MemberIdRequired);
    let id = e.member_id_required().expect("carries the id").to_string();
    assert!(id.starts_with("client-0-"), "{id}");
    assert!(
        f.c().describe_group("g").unwrap().members.is_empty(),
        "not a member yet"
    );
    let j = join_now(&mut f, kafka_join("g", &id));
    assert_eq!((j.member_id.as_str(), j.generation_id), (id.as_str(), 1));
    // An id the coordinator never made is unknown.
    assert_eq!(
        code(f.c().join_member(kafka_join("g", "made-up"))).0,
        ErrorCode::UnknownMember
    );
    assert_eq!(
        code(f.c().join_member(kafka_join("other", "made-up"))).0,
        ErrorCode::UnknownMember
    );
    // Every made id is different.
    let second = f.c().join_member(v4).unwrap_err();
    assert_ne!(second.member_id_required().unwrap(), id);
}

#[test]
fn an_id_handed_out_holds_the_barrier_until_used_or_expired() {
    let mut f = Fixture::new();
    let a = stable_alone(&mut f);
    // b gets an id; a rejoins (so the barrier would pass) but b's id is
    // outstanding, so the barrier waits for b.
    let v4 = GroupJoin {
        require_known_member_id: true,
        ..kafka_join("g", "")
    };
    let b_id = required_id(&mut f, v4.clone());
    let c_id = required_id(&mut f, v4);
    let mut hb = f.c().join_member(kafka_join("g", &b_id)).unwrap();
    let mut ha = f.c().join_member(kafka_join("g", &a.id)).unwrap();
    waiting(&mut ha);
    waiting(&mut hb);
    // c never comes back: its id expires after its session timeout and the
    // barrier passes without it.
    f.clock.advance(i64::from(KAFKA_SESSION_MS) + 1);
    assert!(f.expire().is_empty(), "an unused id is no member");
    assert_eq!(ready(&mut ha).generation_id, a.generation + 1);
    assert_eq!(ready(&mut hb).members.len(), 0);
    assert_eq!(
        code(f.c().join_member(kafka_join("g", &c_id))).0,
        ErrorCode::UnknownMember
    );
}

#[test]
fn a_join_is_validated_before_anything_changes() {
    let mut f = Fixture::new();
    let short = GroupJoin {
        session_timeout_ms: 5_999,
        ..kafka_join("g", "")
    };
    let (c, msg) = code(f.c().join_member(short));
    assert_eq!(c, ErrorCode::InvalidSessionTimeout);
    assert!(msg.contains("5999") && msg.contains("6000"), "{msg}");
    let long = GroupJoin {
        session_timeout_ms: 1_800_001,
        ..kafka_join("g", "")
    };
    assert_eq!(
        code(f.c().join_member(long)).0,
        ErrorCode::InvalidSessionTimeout
    );
    assert_eq!(
        code(f.c().join_member(kafka_join("", ""))).0,
        ErrorCode::InvalidGroupId
    );
    let empty_instance = GroupJoin {
        group_instance_id: Some(String::new()),
        ..kafka_join("g", "")
    };
    assert_eq!(
        code(f.c().join_member(empty_instance)).0,
        ErrorCode::InvalidRequest
    );
    let many = GroupJoin {
        protocols: (0..65).map(|i| (format!("p{i}"), Bytes::new())).collect(),
        ..kafka_join("g", "")
    };
    assert_eq!(code(f.c().join_member(many)).0, ErrorCode::InvalidRequest);
    assert!(f.c().list_groups().is_empty());
}

#[test]
fn a_full_group_refuses_new_members() {
    let mut f = Fixture::with_config(GroupConfig {
        max_group_size: 2,
        ..GroupConfig::default()
    });
    let a = stable_alone(&mut f);
    let v4 = GroupJoin {
        require_known_member_id: true,
        ..kafka_join("g", "")
    };
    // A handed-out id counts: one member and one id fill the group.
    let id = f.c().join_member(v4.clone()).unwrap_err();
    assert_eq!(id.code(), ErrorCode::MemberIdRequired);
    let (c, msg) = code(f.c().join_member(v4));
    assert_eq!(c, ErrorCode::GroupMaxSizeReached);
    assert!(msg.contains("maximum of 2"), "{msg}");
    // A known member may still rejoin.
    f.c().join_member(kafka_join("g", &a.id)).unwrap();
}

/// Static members run with a long session, so a restart fits in it.
const STATIC_SESSION_MS: i32 = 60_000;

fn static_join(member: &str, instance: &str) -> GroupJoin {
    GroupJoin {
        group_instance_id: Some(instance.to_string()),
        session_timeout_ms: STATIC_SESSION_MS,
        ..kafka_join("g", member)
    }
}

/// A Stable group with static leader `s` (instance "i-s") and a dynamic
/// follower.
fn stable_with_static_leader(f: &mut Fixture) -> (Joined, Joined) {
    let s = join_now(f, static_join("", "i-s"));
    assert!(s.member_id.starts_with("i-s-"), "{}", s.member_id);
    sync_leader(f, &s.member_id, s.generation_id, &[(&s.member_id, "S")]);
    grow_to_pair(f, static_join(&s.member_id, "i-s"), ("S2", "D2"))
}

#[test]
fn a_static_member_that_returns_unchanged_takes_its_place_without_a_rebalance() {
    let mut f = Fixture::new();
    let (s, _d) = stable_with_static_leader(&mut f);
    let leo = f.leo();
    // The process restarts: no member id, the same instance id.
    let back = join_now(&mut f, static_join("", "i-s"));
    assert_ne!(back.member_id, s.id);
    assert_eq!(back.generation_id, s.generation, "no rebalance");
    assert_eq!(state(&mut f, "g"), GroupState::Stable);
    assert_eq!(f.leo(), leo);
    // The answer names the old leader id, so the restarted leader acts as a
    // follower and fetches its assignment instead of reassigning.
    assert_eq!(back.leader_id, s.id);
    assert!(back.members.is_empty());
    let mut sync = kafka_sync("g", &back.member_id, back.generation_id);
    sync.group_instance_id = Some("i-s".into());
    assert_eq!(
        ready(&mut f.c().sync_member(sync).unwrap()).assignment,
        b("S2")
    );
    // The old member id is fenced wherever it shows up with the instance id.
    let (c, msg) = code(
        f.c()
            .heartbeat_member("g", &s.id, s.generation, Some("i-s")),
    );
    assert_eq!(c, ErrorCode::FencedInstanceId);
    assert!(msg.contains(&back.member_id), "{msg}");
    assert_eq!(
        code(f.c().join_member(static_join(&s.id, "i-s"))).0,
        ErrorCode::FencedInstanceId
    );
    let mut stale = kafka_sync("g", &s.id, s.generation);
    stale.group_instance_id = Some("i-s".into());
    assert_eq!(
        code(f.c().sync_member(stale)).0,
        ErrorCode::FencedInstanceId
    );
    assert_eq!(
        code(f.commit_static("g", &s.id, s.generation, "i-s")).0,
        ErrorCode::FencedInstanceId
    );
    // The new id leads the group from now on.
    let m = described(&mut f, &back.member_id);
    assert_eq!(m.group_instance_id.as_deref(), Some("i-s"));
}

#[test]
fn a_static_member_that_returns_with_other_metadata_keeps_the_generation() {
    // The Java client's subscription metadata carries its owned partitions
    // and generation, so a restarted static member comes back with other
    // metadata for the same protocol. Kafka completes its join with the
    // current generation; so does mk-group.
    let mut f = Fixture::new();
    let (s, d) = stable_with_static_leader(&mut f);
    let leo = f.leo();
    let restarted = GroupJoin {
        protocols: vec![("range".into(), b("orders + owned partitions"))],
        ..static_join("", "i-s")
    };
    let back = join_now(&mut f, restarted);
    assert_eq!(back.generation_id, s.generation, "no rebalance");
    assert_eq!(back.protocol_name, "range");
    assert_eq!(state(&mut f, "g"), GroupState::Stable);
    assert_eq!(f.leo(), leo, "no generation was written");
    // The old incarnation is fenced.
    assert_eq!(
        code(
            f.c()
                .heartbeat_member("g", &s.id, s.generation, Some("i-s"))
        )
        .0,
        ErrorCode::FencedInstanceId
    );
    // The other member is untouched: its heartbeat still passes.
    f.c()
        .heartbeat_member("g", &d.id, d.generation, None)
        .expect("the dynamic member stays in the generation");
    // The new metadata is what describe shows for the new member id.
    let m = described(&mut f, &back.member_id);
    assert_eq!(m.metadata, b("orders + owned partitions"));
}

#[test]
fn a_static_member_whose_return_changes_the_selected_protocol_rebalances() {
    let mut f = Fixture::new();
    let rr = |s: &'static str| ("roundrobin".to_string(), b(s));
    let range = |s: &'static str| ("range".to_string(), b(s));
    let both = vec![rr("orders"), range("orders")];
    // s prefers range, d roundrobin: a tie, which goes to range.
    let s = join_now(
        &mut f,
        GroupJoin {
            protocols: vec![range("orders"), rr("orders")],
            ..static_join("", "i-s")
        },
    );
    sync_leader(
        &mut f,
        &s.member_id,
        s.generation_id,
        &[(&s.member_id, "S")],
    );
    let mut hd = f
        .c()
        .join_member(GroupJoin {
            protocols: both.clone(),
            ..kafka_join("g", "")
        })
        .unwrap();
    let js = join_now(
        &mut f,
        GroupJoin {
            protocols: vec![range("orders"), rr("orders")],
            ..static_join(&s.member_id, "i-s")
        },
    );
    let jd = ready(&mut hd);
    assert_eq!(js.protocol_name, "range");
    sync_with_follower(&mut f, &s.member_id, &jd, &[(&s.member_id, "S2")]);
    // s returns preferring roundrobin, while Stable: the group would now
    // select roundrobin, so the join waits for a rebalance.
    let changed = GroupJoin {
        protocols: both.clone(),
        ..static_join("", "i-s")
    };
    let mut new = f.c().join_member(changed).unwrap();
    waiting(&mut new);
    assert_eq!(
        code(
            f.c()
                .heartbeat_member("g", &jd.member_id, jd.generation_id, None)
        )
        .0,
        ErrorCode::RebalanceInProgress
    );
    let jd2 = join_now(
        &mut f,
        GroupJoin {
            protocols: both,
            ..kafka_join("g", &jd.member_id)
        },
    );
    let jn = ready(&mut new);
    assert_eq!(
        (jd2.generation_id, jn.generation_id),
        (js.generation_id + 1, js.generation_id + 1)
    );
    assert_eq!(jn.protocol_name, "roundrobin");
    assert_eq!(
        jn.leader_id, jn.member_id,
        "the replaced leader's new id leads"
    );
}

#[test]
fn a_static_member_replaced_while_its_old_incarnation_waits_fences_the_old_request() {
    let mut f = Fixture::new();
    let (s, d) = stable_with_static_leader(&mut f);
    // The old incarnation is parked at a barrier when the new one arrives.
    let mut old = f.c().join_member(static_join(&s.id, "i-s")).unwrap();
    waiting(&mut old);
    let mut new = f.c().join_member(static_join("", "i-s")).unwrap();
    assert_eq!(failed(&mut old).0, ErrorCode::FencedInstanceId);
    let jd = join_now(&mut f, kafka_join("g", &d.id));
    let jn = ready(&mut new);
    assert_eq!(
        (jd.generation_id, jn.generation_id),
        (s.generation + 1, s.generation + 1)
    );
    assert_eq!(jn.leader_id, jn.member_id);
}

#[test]
fn a_silent_static_member_stays_until_its_session_expires_or_its_instance_id_leaves() {
    let mut f = Fixture::new();
    let (s, d) = stable_with_static_leader(&mut f);
    // d's rejoin starts a rebalance; s (shut down without leaving) does not
    // rejoin. At the rebalance timeout the dynamic stragglers would go, the
    // static member stays in the new generation with its metadata.
    let mut hd = f
        .c()
        .join_member(GroupJoin {
            protocols: vec![("range".into(), b("orders,audit"))],
            ..kafka_join("g", &d.id)
        })
        .unwrap();
    f.clock.advance(i64::from(KAFKA_REBALANCE_MS));
    assert!(f.expire().is_empty());
    let jd = ready(&mut hd);
    assert_eq!(jd.generation_id, s.generation + 1);
    let ids: Vec<&str> = jd.members.iter().map(|m| m.member_id.as_str()).collect();
    assert!(
        ids.contains(&s.id.as_str()),
        "the static member is kept: {ids:?}"
    );
    // A LeaveGroup that names only its instance id removes it...
    let (c, meta) = f.parts();
    let answers = c
        .leave_members("g", &[(String::new(), Some("i-s".into()))], meta)
        .unwrap();
    assert!(answers[0].is_ok());
    assert!(
        c.describe_group("g")
            .unwrap()
            .members
            .iter()
            .all(|m| m.member_id != s.id)
    );
    // ...and without one its session expiry does (here: a second static
    // member that stays silent).
    let mut ht = f.c().join_member(static_join("", "i-t")).unwrap();
    let jd = join_now(&mut f, kafka_join("g", &d.id));
    let t = ready(&mut ht);
    sync_with_follower(&mut f, &jd.leader_id, &t, &[(&t.member_id, "T")]);
    let joined_at = f.clock.now_ms();
    while f.clock.now_ms() < joined_at + i64::from(STATIC_SESSION_MS) {
        f.clock.advance(5_000);
        let _ = f.c().heartbeat_member("g", &d.id, t.generation_id, None);
        let removed = f.expire();
        assert!(
            removed.iter().all(|(_, m)| *m != t.member_id),
            "removed before its session expired: {removed:?}"
        );
    }
    f.clock.advance(1);
    assert_eq!(f.expire(), vec![("g".to_string(), t.member_id.clone())]);
}

#[test]
fn members_that_miss_their_sync_are_removed_after_the_rebalance_timeout() {
    let mut f = Fixture::new();
    let (a, bm) = stable_pair(&mut f);
    let changed = GroupJoin {
        protocols: vec![("range".into(), b("x"))],
        ..kafka_join("g", &bm.id)
    };
    let mut hb = f.c().join_member(changed.clone()).unwrap();
    waiting(&mut hb);
    let mut hb2 = f.c().join_member(changed).unwrap();
    assert_eq!(
        failed(&mut hb).0,
        ErrorCode::RebalanceInProgress,
        "a retried join replaces the first"
    );
    let ja = join_now(&mut f, kafka_join("g", &a.id));
    ready(&mut hb2);
    // The leader never sends its SyncGroup (it still heartbeats, which is
    // allowed while CompletingRebalance): the follower's sync waits...
    let mut sync = f
        .c()
        .sync_member(kafka_sync("g", &bm.id, ja.generation_id))
        .unwrap();
    let deadline = f.clock.now_ms() + i64::from(KAFKA_REBALANCE_MS);
    let beat = |f: &mut Fixture| {
        f.c()
            .heartbeat_member("g", &a.id, ja.generation_id, None)
            .unwrap();
    };
    hold_until(&mut f, deadline, &mut sync, beat);
    f.clock.set(deadline - 1);
    beat_and_hold(&mut f, &mut sync, |_| {});
    // ...until the rebalance timeout: the leader is removed, the follower
    // is told to rejoin, and its rejoin forms the next generation.
    f.clock.set(deadline);
    assert_eq!(f.expire(), vec![("g".to_string(), a.id.clone())]);
    assert_eq!(failed(&mut sync).0, ErrorCode::RebalanceInProgress);
    let jb = join_now(&mut f, kafka_join("g", &bm.id));
    assert_eq!(
        (jb.generation_id, jb.leader_id.as_str()),
        (ja.generation_id + 1, bm.id.as_str())
    );
}

#[test]
fn kafka_members_commit_without_an_ownership_check_and_are_fenced_by_generation() {
    let mut f = Fixture::new();
    let (a, bm) = stable_pair(&mut f);
    // The leader computed the assignment; the coordinator does not check
    // which partitions a member commits (Kafka has no such check).
    let all = offsets(&[("orders", 0, 5), ("orders", 3, 7), ("payments", 1, 1)]);
    f.commit("g", &bm.id, bm.generation, &all).unwrap();
    assert_eq!(f.c().committed_offsets("g"), all);
    // A stale generation is fenced, a future one too.
    assert_eq!(
        code(f.commit("g", &a.id, a.generation - 1, &all)).0,
        ErrorCode::IllegalGeneration
    );
    // During PreparingRebalance a member of the current generation may
    // still commit (Kafka); during CompletingRebalance it may not.
    let mut hc = f.c().join_member(kafka_join("g", "")).unwrap();
    f.commit("g", &a.id, a.generation, &offsets(&[("orders", 0, 6)]))
        .unwrap();
    let mut ha = f.c().join_member(kafka_join("g", &a.id)).unwrap();
    let jb = join_now(&mut f, kafka_join("g", &bm.id));
    let ja = ready(&mut ha);
    ready(&mut hc);
    assert_eq!(jb.generation_id, ja.generation_id);
    assert_eq!(
        f.refused_commit("g", &a.id, ja.generation_id, &[("orders", 0, 7)])
            .0,
        ErrorCode::RebalanceInProgress
    );
    // The old generation is fenced now.
    assert_eq!(
        f.refused_commit("g", &a.id, a.generation, &[("orders", 0, 8)])
            .0,
        ErrorCode::IllegalGeneration
    );
    // A commit naming a topic or partition that does not exist is refused.
    assert_eq!(
        f.refused_commit("g", &a.id, ja.generation_id, &[("ghost", 0, 1)])
            .0,
        ErrorCode::RebalanceInProgress,
        "the state is checked before the partitions"
    );
    assert_eq!(f.c().fetch_committed("g", &tp("orders", 0)), Some(6));
}

#[test]
fn describe_and_list_show_kafka_members_protocol_and_state() {
    let mut f = Fixture::new();
    let (a, bm) = stable_pair(&mut f);
    let listings = f.c().list_group_listings();
    assert_eq!(listings.len(), 1);
    assert_eq!(
        (
            listings[0].group_id.as_str(),
            listings[0].protocol_type.as_str(),
            listings[0].state
        ),
        ("g", "consumer", GroupState::Stable)
    );
    let d = f.c().describe_group("g").unwrap();
    assert_eq!(
        (d.protocol_type.as_str(), d.protocol_name.as_str()),
        ("consumer", "range")
    );
    let m = d.members.iter().find(|m| m.member_id == bm.id).unwrap();
    assert_eq!(
        (m.client_id.as_str(), m.client_host.as_str()),
        ("client", "/127.0.0.1")
    );
    assert_eq!(
        (m.metadata.clone(), m.assignment_bytes.clone()),
        (b("orders"), b("B"))
    );
    assert_eq!(m.topics, vec!["orders".to_string()]);
    // Outside Stable, Kafka describes no protocol, metadata or assignment.
    let _h = f.c().join_member(kafka_join("g", &a.id)).unwrap();
    let d = f.c().describe_group("g").unwrap();
    assert_eq!(d.state, GroupState::PreparingRebalance);
    assert_eq!(d.protocol_name, "");
    assert!(
        d.members
            .iter()
            .all(|m| m.metadata.is_empty() && m.assignment_bytes.is_empty())
    );
    assert_eq!(
        f.c().list_group_listings()[0].state,
        GroupState::PreparingRebalance
    );
}

#[test]
fn offsets_of_topics_a_kafka_member_subscribes_to_cannot_be_deleted() {
    let mut f = Fixture::new();
    let (a, _) = stable_pair(&mut f);
    f.commit(
        "g",
        &a.id,
        a.generation,
        &offsets(&[("orders", 0, 1), ("audit", 0, 2)]),
    )
    .unwrap();
    let answer = f
        .c()
        .delete_group_offsets("g", &[tp("orders", 0), tp("audit", 0)])
        .unwrap();
    assert_eq!(
        answer[0].1.as_ref().unwrap_err().code(),
        ErrorCode::GroupSubscribedToTopic
    );
    assert!(answer[1].1.is_ok());
    assert_eq!(f.c().committed_offsets("g"), offsets(&[("orders", 0, 1)]));
    let answers = f.c().delete_groups(&["g".to_string()]).unwrap();
    assert_eq!(
        answers[0].as_ref().unwrap_err().code(),
        ErrorCode::NonEmptyGroup
    );
    // A group of another protocol type with members refuses the request.
    join_now(
        &mut f,
        GroupJoin {
            protocol_type: "connect".into(),
            ..kafka_join("c", "")
        },
    );
    assert_eq!(
        code(f.c().delete_group_offsets("c", &[tp("orders", 0)])).0,
        ErrorCode::NonEmptyGroup
    );
}

#[test]
fn kafka_and_coordinator_assigned_members_never_share_a_group_but_share_it_over_time() {
    let mut f = Fixture::new();
    let json = f.join("g", "cli", &["orders"]);
    let (c, msg) = code(f.c().join_member(kafka_join("g", "")));
    assert_eq!(c, ErrorCode::InconsistentGroupProtocol);
    assert!(msg.contains("coordinator assigns"), "{msg}");
    f.commit("g", "cli", json.generation, &offsets(&[("orders", 0, 10)]))
        .unwrap();
    assert!(f.leave("g", "cli"));
    // The group goes on with a Kafka member: the generation continues and
    // the offsets are there.
    let k = join_now(&mut f, kafka_join("g", ""));
    assert_eq!(k.generation_id, json.generation + 2);
    assert_eq!(f.c().fetch_committed("g", &tp("orders", 0)), Some(10));
    let (meta_c, meta) = f.parts();
    let (c, msg) = code(meta_c.join("g", "cli", ["orders"], meta));
    assert_eq!(c, ErrorCode::InconsistentGroupProtocol);
    assert!(msg.contains("Kafka-protocol members"), "{msg}");
    // The JSON member's old generation stays fenced.
    assert_eq!(
        f.refused_commit("g", "cli", json.generation, &[("orders", 0, 1)])
            .0,
        ErrorCode::UnknownMember
    );
    let (c, meta) = f.parts();
    assert!(c.leave("g", &k.member_id, meta).unwrap());
    let back = f.join("g", "cli", &["orders"]);
    assert_eq!(back.generation, k.generation_id + 2);
    assert_eq!(back.partitions.len(), 4);
}

#[test]
fn waiting_requests_are_answered_closed_when_the_coordinator_goes() {
    let (mut f, _a, mut hb) = stable_with_newcomer();
    f.crash();
    assert_eq!(failed(&mut hb).0, ErrorCode::ClusterClosed);
    // After the restart the group is Empty at its generation; members join
    // again as new ones.
    let d = f.c().describe_group("g").unwrap();
    assert_eq!((d.state, d.generation), (GroupState::Empty, 1));
    assert_eq!(join_now(&mut f, kafka_join("g", "")).generation_id, 2);
}

#[test]
fn the_time_step_completes_a_barrier_exactly_at_its_deadline() {
    let mut f = Fixture::new();
    let a = stable_alone(&mut f);
    let start = f.clock.now_ms();
    let deadline = start + i64::from(KAFKA_REBALANCE_MS);
    let mut hb = f.c().join_member(kafka_join("g", "")).unwrap();
    // a stays alive (its heartbeats say REBALANCE_IN_PROGRESS) but never
    // rejoins.
    let beat = |f: &mut Fixture| {
        assert_eq!(
            code(f.c().heartbeat_member("g", &a.id, a.generation, None)).0,
            ErrorCode::RebalanceInProgress
        );
    };
    hold_until(&mut f, deadline, &mut hb, beat);
    f.clock.set(deadline - 1);
    beat_and_hold(&mut f, &mut hb, beat);
    f.clock.set(deadline);
    // A heartbeat alone does not end the barrier; the step does.
    beat(&mut f);
    waiting(&mut hb);
    assert_eq!(f.expire(), vec![("g".to_string(), a.id.clone())]);
    assert_eq!(ready(&mut hb).generation_id, a.generation + 1);
}

#[test]
fn a_txn_offset_commit_with_membership_is_fenced_like_a_member_commit() {
    let mut f = Fixture::new();
    let (s, d) = stable_with_static_leader(&mut f);
    let c = f.c();
    // Without membership nothing is checked, whatever the group.
    c.validate_txn_offset_commit("g", "", -1, None).unwrap();
    c.validate_txn_offset_commit("unknown", "", -1, None)
        .unwrap();
    // Current members of the current generation pass, static or not.
    c.validate_txn_offset_commit("g", &d.id, d.generation, None)
        .unwrap();
    c.validate_txn_offset_commit("g", &s.id, s.generation, Some("i-s"))
        .unwrap();
    // A stale or future generation, an unknown member or group.
    for generation in [d.generation - 1, d.generation + 1] {
        assert_eq!(
            code(c.validate_txn_offset_commit("g", &d.id, generation, None)).0,
            ErrorCode::IllegalGeneration,
            "{generation}"
        );
    }
    assert_eq!(
        code(c.validate_txn_offset_commit("g", "zombie", d.generation, None)).0,
        ErrorCode::UnknownMember
    );
    assert_eq!(
        code(c.validate_txn_offset_commit("g", "", d.generation, None)).0,
        ErrorCode::UnknownMember,
        "a generation without a member id"
    );
    assert_eq!(
        code(c.validate_txn_offset_commit("unknown", "m", 1, None)).0,
        ErrorCode::UnknownMember
    );
    assert_eq!(
        code(c.validate_txn_offset_commit("", "", -1, None)).0,
        ErrorCode::InvalidGroupId
    );
    // The static member restarts with a new member id: the old one is
    // fenced by its instance id.
    let back = join_now(&mut f, static_join("", "i-s"));
    let (c, msg) = code(
        f.c()
            .validate_txn_offset_commit("g", &s.id, s.generation, Some("i-s")),
    );
    assert_eq!(c, ErrorCode::FencedInstanceId);
    assert!(msg.contains(&back.member_id), "{msg}");
    f.c()
        .validate_txn_offset_commit("g", &back.member_id, back.generation_id, Some("i-s"))
        .unwrap();
    // A rebalance does not stop a transactional commit of the current
    // generation (Kafka does not refuse it either).
    let mut h = f.c().join_member(kafka_join("g", "")).unwrap();
    waiting(&mut h);
    assert_eq!(state(&mut f, "g"), GroupState::PreparingRebalance);
    f.c()
        .validate_txn_offset_commit("g", &d.id, d.generation, None)
        .unwrap();
}

/// Issue 21: a client's JoinGroup with the member id of a MEMBER_ID_REQUIRED
/// round is lost (its coordinator moved), and it starts over with a new id.
/// The lost id blocks the new group's first rebalance only as Kafka's
/// classic coordinator lets it: until the id expires after its session
/// timeout, or until the join phase ends at the rebalance timeout,
/// whichever comes first — never at generation 0 for longer.
#[test]
fn a_lost_member_id_round_blocks_a_new_group_no_longer_than_kafka_would() {
    for (session_ms, rebalance_ms) in [(6_000, 30_000), (30_000, 8_000)] {
        let mut f = Fixture::new();
        let v4 = GroupJoin {
            require_known_member_id: true,
            session_timeout_ms: session_ms,
            rebalance_timeout_ms: rebalance_ms,
            ..kafka_join("g", "")
        };
        let lost = f.c().join_member(v4.clone()).unwrap_err();
        assert!(lost.member_id_required().is_some());
        // The client starts over and this time joins with its id.
        let id = required_id(&mut f, v4.clone());
        let mut joined = f
            .c()
            .join_member(GroupJoin {
                member_id: id.clone(),
                ..v4.clone()
            })
            .unwrap();
        waiting(&mut joined);
        let limit = i64::from(session_ms.min(rebalance_ms));
        f.clock.advance(limit - 1);
        f.expire();
        waiting(&mut joined);
        assert_eq!(f.generation("g"), 0, "still forming");
        f.clock.advance(1);
        f.expire();
        let answer = ready(&mut joined);
        assert_eq!(
            (
                answer.generation_id,
                answer.member_id.as_str(),
                answer.leader_id.as_str()
            ),
            (1, id.as_str(), id.as_str()),
            "session {session_ms} ms, rebalance {rebalance_ms} ms"
        );
        assert_eq!(answer.members.len(), 1);
    }
}

#[test]
fn the_first_rebalance_of_a_new_group_waits_the_initial_delay_for_more_members() {
    let mut f = Fixture::with_config(GroupConfig {
        initial_rebalance_delay_ms: 3_000,
        ..GroupConfig::default()
    });
    let mut first = f.c().join_member(kafka_join("g", "")).unwrap();
    // Alone and complete, the join phase still waits for company.
    waiting(&mut first);
    f.clock.advance(2_000);
    f.expire();
    waiting(&mut first);
    // A second member joins and extends the wait by the delay from now.
    let mut second = f.c().join_member(kafka_join("g", "")).unwrap();
    f.clock.advance(2_000);
    f.expire();
    waiting(&mut first);
    waiting(&mut second);
    f.clock.advance(1_000);
    f.expire();
    let (a, b) = (ready(&mut first), ready(&mut second));
    assert_eq!((a.generation_id, b.generation_id), (1, 1));
    assert_eq!(a.members.len() + b.members.len(), 2, "both in generation 1");
}

#[test]
fn without_an_initial_delay_the_first_member_forms_generation_one_at_once() {
    let mut f = Fixture::new();
    let mut h = f.c().join_member(kafka_join("g", "")).unwrap();
    assert_eq!(ready(&mut h).generation_id, 1);
}
