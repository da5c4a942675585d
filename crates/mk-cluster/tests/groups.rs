//! The core's group API for the Kafka adapter (`groups().join_member`,
//! `groups().sync_member`, heartbeats, leaves, commits, listings, deletions),
//! tested in the core: waiting joins resolved by other members and by the
//! time step (mk-runtime's tests hold the drivers to it); closing and storage
//! failures; and Kafka members next to coordinator-assigned ones.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

use bytes::Bytes;
use mk_cluster::*;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// A cluster with topic `orders` (3 partitions) on a temporary directory
/// (kept as long as the cluster is used) and a manual clock.
fn open_orders() -> (tempfile::TempDir, ManualClock, Arc<BrokerCluster>) {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000);
    let c =
        BrokerCluster::open_with_clock(MiniKafkaConfig::new(dir.path()), Arc::new(clock.clone()))
            .unwrap();
    c.topics().create("orders", 3, 1).unwrap();
    (dir, clock, c)
}

fn tp(t: &str, p: u32) -> TopicPartition {
    TopicPartition::new(t, p)
}

fn join(member: &str) -> GroupJoin {
    GroupJoin {
        group_id: "g".into(),
        member_id: member.into(),
        group_instance_id: None,
        client_id: "rdkafka".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), Bytes::from_static(b"orders"))],
        require_known_member_id: true,
        subscribed_topics: vec!["orders".into()],
    }
}

fn sync(member: &str, generation: i32, assignments: Vec<(String, Bytes)>) -> GroupSync {
    GroupSync {
        group_id: "g".into(),
        generation_id: generation,
        member_id: member.into(),
        group_instance_id: None,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assigned_partitions: assignments
            .iter()
            .map(|(m, _)| (m.clone(), vec![tp("orders", 0)]))
            .take(1)
            .collect(),
        assignments,
    }
}

/// A request sent to the coordinator: polled once, so it reaches the
/// coordinator (and registers its wait) deterministically.
enum Sent<'a, T> {
    Waiting(Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>),
    Done(Result<T>),
}

impl<'a, T> Sent<'a, T> {
    fn new(f: impl Future<Output = Result<T>> + Send + 'a) -> Self {
        let mut s = Sent::Waiting(Box::pin(f));
        s.poll();
        s
    }

    /// Polls once more; returns whether the request still waits.
    fn poll(&mut self) -> bool {
        let Sent::Waiting(f) = self else {
            return false;
        };
        let mut cx = Context::from_waker(Waker::noop());
        match f.as_mut().poll(&mut cx) {
            Poll::Pending => true,
            Poll::Ready(r) => {
                *self = Sent::Done(r);
                false
            }
        }
    }

    async fn answer(self) -> Result<T> {
        match self {
            Sent::Waiting(f) => f.await,
            Sent::Done(r) => r,
        }
    }
}

/// A new member's two joins (MEMBER_ID_REQUIRED, then with the made id);
/// returns the made id and the second join, sent.
async fn join_new(c: &BrokerCluster) -> (String, Sent<'_, GroupJoined>) {
    let e = c.groups().join_member(join("")).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::MemberIdRequired);
    let id = e
        .member_id_required()
        .expect("the error carries the id")
        .to_string();
    let second = Sent::new(c.groups().join_member(join(&id)));
    (id, second)
}

/// The first member of `g`, joined and synced in generation 1.
async fn first_member_synced(c: &BrokerCluster) -> String {
    let (a, task) = join_new(c).await;
    task.answer().await.unwrap();
    c.groups().sync_member(sync(&a, 1, vec![])).await.unwrap();
    a
}

#[tokio::test]
async fn kafka_members_join_sync_heartbeat_commit_and_leave_through_the_cluster() {
    let (_dir, _, c) = open_orders();
    let (a, task) = join_new(&c).await;
    let ja = task.answer().await.unwrap();
    assert_eq!((ja.generation_id, ja.leader_id.as_str()), (1, a.as_str()));
    let sa = c
        .groups()
        .sync_member(sync(&a, 1, vec![(a.clone(), Bytes::from_static(b"A1"))]))
        .await
        .unwrap();
    assert_eq!(sa.assignment, Bytes::from_static(b"A1"));
    c.groups().heartbeat_member("g", &a, 1, None).unwrap();
    let offsets = BTreeMap::from([(tp("orders", 2), 7)]);
    c.groups().commit("g", 1, &a, None, &offsets).unwrap();
    assert_eq!(
        c.groups().fetch_committed("g", &tp("orders", 2)).unwrap(),
        Some(7)
    );

    // A second member waits at the barrier until the first rejoins.
    let (b, mut task_b) = join_new(&c).await;
    assert!(task_b.poll(), "the join waits for a to rejoin");
    assert_eq!(
        c.groups()
            .heartbeat_member("g", &a, 1, None)
            .unwrap_err()
            .code(),
        ErrorCode::RebalanceInProgress
    );
    let ja = c.groups().join_member(join(&a)).await.unwrap();
    let jb = task_b.answer().await.unwrap();
    assert_eq!((ja.generation_id, jb.generation_id), (2, 2));
    assert_eq!(ja.members.len(), 2);
    // The follower's sync waits for the leader's.
    let mut follower = Sent::new(c.groups().sync_member(sync(&b, 2, vec![])));
    assert!(follower.poll());
    c.groups()
        .sync_member(sync(
            &a,
            2,
            vec![
                (a.clone(), Bytes::from_static(b"A2")),
                (b.clone(), Bytes::from_static(b"B2")),
            ],
        ))
        .await
        .unwrap();
    assert_eq!(
        follower.answer().await.unwrap().assignment,
        Bytes::from_static(b"B2")
    );
    // The stale generation is fenced.
    assert_eq!(
        c.groups()
            .commit("g", 1, &a, None, &offsets)
            .unwrap_err()
            .code(),
        ErrorCode::IllegalGeneration
    );
    let answers = c
        .groups()
        .leave_members("g", &[(b.clone(), None), ("ghost".into(), None)])
        .unwrap();
    assert!(answers[0].is_ok());
    assert_eq!(
        answers[1].as_ref().unwrap_err().code(),
        ErrorCode::UnknownMember
    );
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_waiting_join_is_completed_by_the_time_step() {
    let (_dir, clock, c) = open_orders();
    let a = first_member_synced(&c).await;
    let (_b, mut task_b) = join_new(&c).await;
    clock.advance(29_999);
    c.groups().heartbeat_member("g", &a, 1, None).unwrap_err();
    assert!(c.groups().expire_members().unwrap().is_empty());
    assert!(task_b.poll());
    clock.advance(1);
    assert_eq!(
        c.groups().expire_members().unwrap(),
        vec![("g".to_string(), a.clone())]
    );
    let jb = task_b.answer().await.unwrap();
    assert_eq!((jb.generation_id, jb.members.len()), (2, 1));
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn closing_the_cluster_answers_a_waiting_join_cluster_closed() {
    let (_dir, _, c) = open_orders();
    first_member_synced(&c).await;
    let (_b, task_b) = join_new(&c).await;
    c.lifecycle().close().await.unwrap();
    let e = task_b.answer().await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::ClusterClosed, "{e}");
}

#[tokio::test]
async fn a_storage_failure_while_forming_a_generation_fails_the_cluster() {
    let (_dir, _, c) = open_orders();
    c.failure_injector().fail_writes_after(0);
    let mut first = join("");
    first.require_known_member_id = false;
    let e = c.groups().join_member(first).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::ClusterFailed, "{e}");
    assert!(matches!(c.lifecycle().state(), LifecycleState::Failed(_)));
    assert_eq!(
        c.groups()
            .heartbeat_member("g", "x", 1, None)
            .unwrap_err()
            .code(),
        ErrorCode::ClusterFailed
    );
}

#[tokio::test]
async fn listings_descriptions_and_deletions_through_the_cluster() {
    let (_dir, _, c) = open_orders();
    let (a, task) = join_new(&c).await;
    task.answer().await.unwrap();
    let mut s = sync(&a, 1, vec![(a.clone(), Bytes::from_static(b"A"))]);
    s.assigned_partitions = vec![(a.clone(), vec![tp("orders", 1), tp("orders", 0)])];
    c.groups().sync_member(s).await.unwrap();
    c.groups()
        .commit("g", 1, &a, None, &BTreeMap::from([(tp("orders", 0), 3)]))
        .unwrap();
    c.groups()
        .commit(
            "manual",
            -1,
            "",
            None,
            &BTreeMap::from([(tp("orders", 1), 9)]),
        )
        .unwrap();
    let listings = c.groups().listings().unwrap();
    assert_eq!(
        listings,
        vec![
            GroupListing {
                group_id: "g".into(),
                protocol_type: "consumer".into(),
                state: GroupState::Stable,
                group_type: GroupType::Classic,
            },
            GroupListing {
                group_id: "manual".into(),
                protocol_type: String::new(),
                state: GroupState::Empty,
                group_type: GroupType::Classic,
            },
        ]
    );
    let d = c.groups().describe("g").unwrap().unwrap();
    assert_eq!(
        (d.protocol_type.as_str(), d.protocol_name.as_str()),
        ("consumer", "range")
    );
    let m = &d.members[0];
    assert_eq!(
        (m.client_id.as_str(), m.client_host.as_str()),
        ("rdkafka", "/127.0.0.1")
    );
    assert_eq!(m.assignment, vec![tp("orders", 0), tp("orders", 1)]);
    assert_eq!(m.assignment_bytes, Bytes::from_static(b"A"));
    assert_eq!(m.metadata, Bytes::from_static(b"orders"));
    // Deleting: offsets of a subscribed topic, a group with members.
    let answer = c.groups().delete_offsets("g", &[tp("orders", 0)]).unwrap();
    assert_eq!(
        answer[0].1.as_ref().unwrap_err().code(),
        ErrorCode::GroupSubscribedToTopic
    );
    let answers = c
        .groups()
        .delete(&["g".into(), "manual".into(), "nope".into()])
        .unwrap();
    let codes: Vec<Option<ErrorCode>> = answers
        .iter()
        .map(|r| r.as_ref().err().map(ClusterError::code))
        .collect();
    assert_eq!(
        codes,
        vec![
            Some(ErrorCode::NonEmptyGroup),
            None,
            Some(ErrorCode::GroupIdNotFound)
        ]
    );
    assert_eq!(
        c.groups()
            .fetch_committed("manual", &tp("orders", 1))
            .unwrap(),
        None
    );
    assert_eq!(
        c.groups()
            .delete_offsets("nope", &[tp("orders", 0)])
            .unwrap_err()
            .code(),
        ErrorCode::GroupIdNotFound
    );
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn kafka_members_and_json_members_take_turns_in_one_group() {
    let (_dir, _, c) = open_orders();
    let json = c
        .groups()
        .join("g", "cli", &["orders".to_string()])
        .unwrap();
    c.groups()
        .commit_offsets(
            "g",
            "cli",
            json.generation,
            &BTreeMap::from([(tp("orders", 0), 4)]),
        )
        .unwrap();
    let e = c.groups().join_member(join("")).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::InconsistentGroupProtocol, "{e}");
    assert!(c.groups().leave("g", "cli").unwrap());
    let mut first = join("");
    first.require_known_member_id = false;
    let k = c.groups().join_member(first).await.unwrap();
    assert_eq!(
        k.generation_id,
        json.generation + 2,
        "one generation counter"
    );
    assert_eq!(
        c.groups().fetch_committed("g", &tp("orders", 0)).unwrap(),
        Some(4)
    );
    let e = c
        .groups()
        .join("g", "cli", &["orders".to_string()])
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InconsistentGroupProtocol);
    c.lifecycle().close().await.unwrap();
}
