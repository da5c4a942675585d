//! Shared fixture of the mk-group integration tests: a coordinator on a
//! temporary directory with a manual clock, and topic metadata.
// Each test file uses a different subset of these helpers.
#![allow(dead_code)]

pub mod model;
pub mod share;
use bytes::Bytes;
use mk_core::{ErrorCode, ManualClock, TopicPartition};
use mk_group::{
    CommitRequest, GroupConfig, GroupCoordinator, GroupError, GroupHandle, GroupJoin, GroupSync,
    OffsetAndMetadata,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

pub const SESSION_MS: i64 = 10_000;

/// A coordinator, its directory, clock and topic metadata.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub clock: ManualClock,
    pub meta: BTreeMap<String, u32>,
    pub config: GroupConfig,
    coordinator: Option<GroupCoordinator>,
}

impl Fixture {
    /// Topics: `orders` (4 partitions), `payments` (2), `audit` (3).
    pub fn new() -> Self {
        Self::with_config(GroupConfig {
            session_timeout_ms: SESSION_MS,
            ..GroupConfig::default()
        })
    }

    pub fn with_config(config: GroupConfig) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let clock = ManualClock::new(1_000);
        let meta = BTreeMap::from([
            ("orders".to_string(), 4),
            ("payments".to_string(), 2),
            ("audit".to_string(), 3),
            ("queue".to_string(), 1),
        ]);
        let mut f = Self {
            dir,
            clock,
            meta,
            config,
            coordinator: None,
        };
        f.coordinator = Some(f.open().expect("open coordinator"));
        f
    }

    pub fn offsets_dir(&self) -> PathBuf {
        self.dir.path().join("__consumer_offsets-0")
    }

    pub fn open(&self) -> mk_group::Result<GroupCoordinator> {
        GroupCoordinator::open(
            &self.offsets_dir(),
            self.config.clone(),
            Arc::new(self.clock.clone()),
        )
    }

    pub fn c(&mut self) -> &mut GroupCoordinator {
        self.coordinator.as_mut().expect("coordinator is open")
    }

    /// A commit the test expects to succeed; `offsets` as (topic,
    /// partition, offset).
    pub fn commit_ok(
        &mut self,
        group: &str,
        member: &str,
        generation: i32,
        list: &[(&str, u32, i64)],
    ) {
        self.commit(group, member, generation, &offsets(list))
            .unwrap();
    }

    /// `member` joins `group` subscribing to `topic` and commits `list`
    /// (partition, offset) of it in the generation it joined; returns its
    /// assignment.
    pub fn join_and_commit(
        &mut self,
        group: &str,
        member: &str,
        topic: &str,
        list: &[(u32, i64)],
    ) -> mk_group::MemberAssignment {
        let joined = self.join(group, member, &[topic]);
        let list: Vec<(&str, u32, i64)> = list.iter().map(|&(p, o)| (topic, p, o)).collect();
        self.commit_ok(group, member, joined.generation, &list);
        joined
    }

    /// A commit of `list` (topic, partition, offset) the test expects to
    /// be refused: its code and message.
    pub fn refused_commit(
        &mut self,
        group: &str,
        member: &str,
        generation: i32,
        list: &[(&str, u32, i64)],
    ) -> (ErrorCode, String) {
        code(self.commit(group, member, generation, &offsets(list)))
    }

    /// Splits the borrow: the coordinator and the metadata at once.
    pub fn parts(&mut self) -> (&mut GroupCoordinator, &BTreeMap<String, u32>) {
        (
            self.coordinator.as_mut().expect("coordinator is open"),
            &self.meta,
        )
    }

    /// Closes cleanly and reopens.
    pub fn restart(&mut self) {
        let c = self.coordinator.take().expect("open");
        c.close().expect("clean close");
        self.coordinator = Some(self.open().expect("reopen"));
    }

    /// Closes cleanly and leaves the coordinator closed (to write behind its
    /// back); `crash` or `reopen` bring it back.
    pub fn close(&mut self) {
        let c = self.coordinator.take().expect("open");
        c.close().expect("clean close");
    }

    /// Opens the coordinator again after `close`.
    pub fn reopen(&mut self) -> mk_group::Result<()> {
        self.coordinator = Some(self.open()?);
        Ok(())
    }

    /// Drops the coordinator without closing (a process kill) and reopens.
    pub fn crash(&mut self) {
        drop(self.coordinator.take());
        self.coordinator = Some(self.open().expect("reopen after crash"));
    }

    pub fn join(
        &mut self,
        group: &str,
        member: &str,
        topics: &[&str],
    ) -> mk_group::MemberAssignment {
        let (c, meta) = self.parts();
        c.join(group, member, topics, meta).expect("join")
    }

    pub fn leave(&mut self, group: &str, member: &str) -> bool {
        let (c, meta) = self.parts();
        c.leave(group, member, meta).expect("leave")
    }

    pub fn expire(&mut self) -> Vec<(String, String)> {
        let (c, meta) = self.parts();
        c.expire_members(meta).expect("expire")
    }

    /// A member's commit through the one commit rule.
    pub fn commit(
        &mut self,
        group: &str,
        member: &str,
        generation: i32,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> mk_group::Result<()> {
        self.commit_member(group, member, generation, None, offsets)
    }

    /// A commit through the one commit rule, with an optional instance id.
    pub fn commit_member(
        &mut self,
        group: &str,
        member: &str,
        generation: i32,
        instance: Option<&str>,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> mk_group::Result<()> {
        let (c, meta) = self.parts();
        c.commit_offsets(group, generation, member, instance, offsets, meta)
    }

    /// An OffsetCommit of `version` (no instance id) through the request
    /// path of the coordinator, with its answer per partition.
    pub fn commit_request(
        &mut self,
        group: &str,
        member: &str,
        generation: i32,
        version: i16,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
    ) -> mk_group::Result<Vec<(TopicPartition, mk_group::Result<()>)>> {
        let (c, meta) = self.parts();
        let request = CommitRequest {
            group,
            generation,
            member,
            instance: None,
            version: Some(version),
        };
        c.commit_request(&request, offsets, meta)
    }

    /// A static member's (empty) commit, naming its instance id.
    pub fn commit_static(
        &mut self,
        group: &str,
        member: &str,
        generation: i32,
        instance: &str,
    ) -> mk_group::Result<()> {
        self.commit_member(group, member, generation, Some(instance), &BTreeMap::new())
    }

    pub fn generation(&mut self, group: &str) -> i32 {
        self.c().describe_group(group).expect("group").generation
    }

    pub fn leo(&mut self) -> i64 {
        self.c().offsets_log().leo()
    }
}

/// A new member's first consumer-protocol heartbeat (KIP-848): `member`
/// of `group` subscribing to `topic`, owning nothing yet.
pub fn consumer_join(group: &str, member: &str, topic: &str) -> mk_group::ConsumerHeartbeat {
    mk_group::ConsumerHeartbeat {
        group_id: group.into(),
        member_id: member.into(),
        rebalance_timeout_ms: 1000,
        subscribed_topic_names: Some(vec![topic.into()]),
        owned_partitions: Some(vec![]),
        ..mk_group::ConsumerHeartbeat::default()
    }
}

pub fn tp(topic: &str, partition: u32) -> TopicPartition {
    TopicPartition::new(topic, partition)
}

pub fn offsets(list: &[(&str, u32, i64)]) -> BTreeMap<TopicPartition, i64> {
    list.iter().map(|(t, p, o)| (tp(t, *p), *o)).collect()
}

/// The same offsets without leader epochs or metadata, as the commit of
/// offsets with metadata (and transactional commits) take them.
pub fn plain(list: &[(&str, u32, i64)]) -> BTreeMap<TopicPartition, OffsetAndMetadata> {
    list.iter()
        .map(|(t, p, o)| (tp(t, *p), OffsetAndMetadata::new(*o)))
        .collect()
}

pub fn parts(list: &[(&str, u32)]) -> Vec<TopicPartition> {
    list.iter().map(|(t, p)| tp(t, *p)).collect()
}

/// The code of an error result, with the message for failing assertions.
pub fn code<T: std::fmt::Debug>(r: Result<T, GroupError>) -> (ErrorCode, String) {
    let e = r.expect_err("expected an error");
    (e.code(), e.to_string())
}

/// The session timeout of the Kafka-protocol members of the tests.
pub const KAFKA_SESSION_MS: i32 = 10_000;
/// Their rebalance timeout.
pub const KAFKA_REBALANCE_MS: i32 = 30_000;

/// A JoinGroup of a Kafka consumer in `group` (member id "" for a new
/// member) with one protocol, `range`, whose metadata names the member.
pub fn kafka_join(group: &str, member: &str) -> GroupJoin {
    GroupJoin {
        group_id: group.to_string(),
        member_id: member.to_string(),
        group_instance_id: None,
        client_id: "client".to_string(),
        client_host: "/127.0.0.1".to_string(),
        session_timeout_ms: KAFKA_SESSION_MS,
        rebalance_timeout_ms: KAFKA_REBALANCE_MS,
        protocol_type: "consumer".to_string(),
        protocols: vec![("range".to_string(), Bytes::from_static(b"orders"))],
        require_known_member_id: false,
        subscribed_topics: vec!["orders".to_string()],
    }
}

/// A SyncGroup of `member` in `generation` with no assignment (a follower).
pub fn kafka_sync(group: &str, member: &str, generation: i32) -> GroupSync {
    GroupSync {
        group_id: group.to_string(),
        generation_id: generation,
        member_id: member.to_string(),
        group_instance_id: None,
        protocol_type: Some("consumer".to_string()),
        protocol_name: None,
        assignments: Vec::new(),
        assigned_partitions: Vec::new(),
    }
}

/// The answer of a resolved handle (fails the test if it waits or failed).
pub fn ready<T>(h: &mut GroupHandle<T>) -> T {
    match h.try_result() {
        Some(Ok(v)) => v,
        Some(Err(e)) => panic!("expected an answer, got {e}"),
        None => panic!("expected an answer, the request still waits"),
    }
}

/// The error of a resolved handle.
pub fn failed<T: std::fmt::Debug>(h: &mut GroupHandle<T>) -> (ErrorCode, String) {
    match h.try_result() {
        Some(Err(e)) => (e.code(), e.to_string()),
        other => panic!("expected an error, got {other:?}"),
    }
}

/// Asserts that a handle still waits.
pub fn waiting<T: std::fmt::Debug>(h: &mut GroupHandle<T>) {
    assert!(h.try_result().is_none(), "the request should still wait");
}
