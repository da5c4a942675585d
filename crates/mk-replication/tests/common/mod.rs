//! Shared scaffolding of the integration tests: a temporary data directory
//! with a manual clock, batch builders and readers that turn a replica's log
//! into comparable values.

#![allow(dead_code)]

use bytes::Bytes;
use mk_core::{ErrorCode, ManualClock, SharedClock, TopicPartition};
use mk_log::{PartitionLog, ProducerInfo, Record, RecordBatch};
use mk_replication::{
    AckHandle, AckMode, AppendOutcome, BrokerId, PartitionAssignment, PartitionReplicaSet,
    ProduceResult, ReplicationConfig, ReplicationError,
};
use std::sync::Arc;

pub const TOPIC: &str = "events";
pub const START_MS: i64 = 1_000_000;

/// A data directory, a clock and a configuration for one partition.
pub struct Harness {
    pub dir: tempfile::TempDir,
    pub clock: ManualClock,
    pub tp: TopicPartition,
    pub config: ReplicationConfig,
}

impl Harness {
    pub fn new() -> Self {
        Self::with(|_| {})
    }

    pub fn with(tune: impl FnOnce(&mut ReplicationConfig)) -> Self {
        let mut config = ReplicationConfig::default();
        tune(&mut config);
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
            clock: ManualClock::new(START_MS),
            tp: TopicPartition::new(TOPIC, 0),
            config,
        }
    }

    pub fn clock(&self) -> SharedClock {
        Arc::new(self.clock.clone())
    }

    pub fn create(&self, replicas: &[BrokerId]) -> PartitionReplicaSet {
        PartitionReplicaSet::create(
            self.dir.path(),
            self.tp.clone(),
            replicas.to_vec(),
            self.config.clone(),
            self.clock(),
        )
        .expect("create replica set")
    }

    /// A fresh harness and a new replica set of `replicas`.
    pub fn with_replicas(replicas: &[BrokerId]) -> (Self, PartitionReplicaSet) {
        let h = Self::new();
        let set = h.create(replicas);
        (h, set)
    }

    /// `with_replicas` under `min.insync.replicas=2`.
    pub fn min_isr_two(replicas: &[BrokerId]) -> (Self, PartitionReplicaSet) {
        let h = Self::with(|c| c.min_insync_replicas = 2);
        let set = h.create(replicas);
        (h, set)
    }

    /// A replica set of `replicas` whose leader holds the one record "a".
    pub fn holding_a(replicas: &[BrokerId]) -> (Self, PartitionReplicaSet) {
        let (h, mut set) = Self::with_replicas(replicas);
        put(&mut set, &["a"]);
        (h, set)
    }

    /// A replica set of `replicas` whose leader took `values` (acks=1),
    /// replicated once (so every replica has them and the high watermark
    /// covers them).
    pub fn replicated(replicas: &[BrokerId], values: &[&str]) -> (Self, PartitionReplicaSet) {
        let (h, mut set) = Self::with_replicas(replicas);
        put(&mut set, values);
        set.replicate_all_once().unwrap();
        (h, set)
    }

    /// Replicas 1, 2 and 3 holding the one record "a", replicated once.
    pub fn three_with_a_replicated() -> (Self, PartitionReplicaSet) {
        Self::replicated(&[1, 2, 3], &["a"])
    }

    pub fn open(&self, assignment: PartitionAssignment) -> PartitionReplicaSet {
        self.try_open(assignment).expect("open replica set")
    }

    pub fn try_open(
        &self,
        assignment: PartitionAssignment,
    ) -> Result<PartitionReplicaSet, ReplicationError> {
        PartitionReplicaSet::open(
            self.dir.path(),
            self.tp.clone(),
            assignment,
            self.config.clone(),
            self.clock(),
        )
    }

    /// Clean shutdown and reopen with the assignment the set reported.
    pub fn reopen(&self, set: PartitionReplicaSet) -> PartitionReplicaSet {
        let assignment = set.assignment();
        set.close().expect("close");
        self.open(assignment)
    }

    /// Process kill and reopen with the assignment the set reported.
    pub fn crash_reopen(&self, set: PartitionReplicaSet) -> PartitionReplicaSet {
        let assignment = set.assignment();
        set.crash();
        self.open(assignment)
    }
}

pub fn record(value: &str) -> Record {
    Record::new(
        None,
        Some(Bytes::copy_from_slice(value.as_bytes())),
        START_MS,
    )
}

/// A plain batch with one record per value.
pub fn batch(values: &[&str]) -> RecordBatch {
    RecordBatch::new(values.iter().map(|v| record(v)).collect()).expect("valid batch")
}

/// An idempotent batch of producer `pid` in `epoch` starting at `seq`.
pub fn idem(pid: i64, epoch: i32, seq: i32, values: &[&str]) -> RecordBatch {
    batch(values).with_producer(ProducerInfo {
        producer_id: pid,
        producer_epoch: epoch,
        base_sequence: seq,
    })
}

/// The result of an `acks=0`/`acks=1` append.
pub fn done(outcome: AppendOutcome) -> ProduceResult {
    match outcome {
        AppendOutcome::Done(r) => r,
        AppendOutcome::Pending(h) => panic!("expected an immediate result, got {h:?}"),
    }
}

/// The handle of an `acks=all` append.
pub fn pending(outcome: AppendOutcome) -> AckHandle {
    match outcome {
        AppendOutcome::Pending(h) => h,
        AppendOutcome::Done(r) => panic!("expected a pending handle, got {r:?}"),
    }
}

/// Appends with `acks=1` and returns the base offset.
pub fn put(set: &mut PartitionReplicaSet, values: &[&str]) -> i64 {
    done(
        set.append(batch(values), AckMode::One, None)
            .expect("append"),
    )
    .base_offset
    .expect("acks=1 reports offsets")
}

/// Appends with `acks=all` and returns the handle that waits for the
/// high watermark.
pub fn put_all(set: &mut PartitionReplicaSet, values: &[&str]) -> AckHandle {
    pending(
        set.append(batch(values), AckMode::All, None)
            .expect("append"),
    )
}

/// The error an acks=all handle settled with (fails the test if it still
/// waits or succeeded).
pub fn failed(handle: &mut AckHandle) -> ReplicationError {
    match handle.try_result() {
        Some(Err(e)) => e,
        other => panic!("expected a failed handle, got {other:?}"),
    }
}

/// The error code of a failed operation.
pub fn code<T: std::fmt::Debug>(r: Result<T, ReplicationError>) -> ErrorCode {
    r.expect_err("expected an error").code()
}

/// Every record of a log as `(offset, value)`.
pub fn values(log: &PartitionLog) -> Vec<(i64, String)> {
    values_below(log, log.leo())
}

/// The records of a log below `end` as `(offset, value)`.
pub fn values_below(log: &PartitionLog, end: i64) -> Vec<(i64, String)> {
    log.fetch(log.log_start_offset(), usize::MAX, Some(end))
        .expect("fetch")
        .into_iter()
        .map(|r| {
            let v = r.record.value.expect("test records have values");
            (r.offset, String::from_utf8(v.to_vec()).expect("utf-8"))
        })
        .collect()
}

/// What a read_uncommitted consumer sees: the leader's records below the HW.
pub fn visible(set: &PartitionReplicaSet) -> Vec<(i64, String)> {
    values_below(set.leader_log(), set.high_watermark())
}

/// The stored frames of a log in `[from, end)`, with their base offsets.
pub fn frames(log: &PartitionLog, from: i64, end: i64) -> Vec<(i64, Bytes)> {
    log.read_batches(from, usize::MAX, Some(end))
        .expect("read batches")
        .into_iter()
        .map(|b| (b.base_offset(), b.frame))
        .collect()
}

/// Asserts that every ISR member holds byte-identical batches below the HW.
pub fn assert_isr_identical_below_hw(set: &PartitionReplicaSet) {
    let hw = set.high_watermark();
    let from = set
        .isr()
        .iter()
        .map(|b| set.replica_log(*b).unwrap().log_start_offset())
        .max()
        .unwrap();
    let leader = frames(set.leader_log(), from, hw);
    for b in set.isr() {
        let log = set.replica_log(b).unwrap();
        assert_eq!(
            frames(log, from, hw),
            leader,
            "ISR member {b} differs from leader {} below HW {hw}",
            set.leader_id()
        );
    }
}

pub fn vals(pairs: &[(i64, &str)]) -> Vec<(i64, String)> {
    pairs.iter().map(|(o, v)| (*o, v.to_string())).collect()
}
