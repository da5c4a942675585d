//! `BrokerCluster`: the one semantic core. It owns the metadata store, one
//! `PartitionReplicaSet` per partition (each behind its own lock, so
//! operations on different partitions run in parallel), the producer
//! identity store, the group coordinator and the transaction coordinator.
//! Locks are never held across an `.await`: `acks=all` appends hand back a
//! completion that is awaited after the partition lock is released.
//!
//! Its operations are grouped by role, each role a borrowed view with a
//! file of its own: `topics()` (topics.rs), `brokers()` (brokers.rs),
//! `data()` (data.rs), `groups()` (groups.rs), `transactions()`
//! (transactions.rs, txn_repair.rs), `steps()` (steps.rs), `lifecycle()`
//! (lifecycle.rs) and `views()` (stats.rs); opening is in open.rs. This
//! file holds the state the roles share and the plumbing they all use:
//! finding a partition, running under its lock, and settling a storage
//! failure by how far it reaches (health.rs).

use crate::attached::ClientRegistry;
use crate::config::{BrokerId, MiniKafkaConfig, TopicConfig};
use crate::error::{ClusterError, Result};
use crate::health::{Access, DiskFull, Reach, reach};
use crate::life::{DirLock, Life};
use crate::metadata::{MetadataStore, PartitionMeta, TopicMeta};
use crate::slot::{Offline, PartitionSlot, Topic, panic_text};
use crate::topic_configs::BrokerDefaults;
use mk_core::{SharedClock, TopicPartition};
use mk_group::GroupCoordinator;
use mk_log::LogConfig;
use mk_replication::{PartitionReplicaSet, ProducerIdentityStore, ReplicationConfig};
use mk_storage::{FaultInjector, StorageError};
use mk_txn::TransactionCoordinator;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The name of the internal offsets log (hidden from topic listings).
pub use mk_group::OFFSETS_TOPIC;

/// Names users may not create or produce to.
pub const INTERNAL_TOPICS: &[&str] = &[OFFSETS_TOPIC, "__transaction_state"];

/// The semantic core. Share it as `Arc<BrokerCluster>`; it is `Send + Sync`.
#[derive(Debug)]
pub struct BrokerCluster {
    pub(crate) config: MiniKafkaConfig,
    pub(crate) clock: SharedClock,
    pub(crate) faults: Arc<FaultInjector>,
    pub(crate) life: Life,
    pub(crate) topics: RwLock<BTreeMap<String, Arc<Topic>>>,
    pub(crate) metadata: Mutex<MetadataStore>,
    /// Serializes topic config changes, which persist under the metadata
    /// lock and then apply to the partitions under their own locks (the
    /// lock order is partition, then metadata: `locks.rs`).
    pub(crate) topic_alters: Mutex<()>,
    /// The broker layers of topic configs (`broker_configs.rs`), replaced
    /// whole when a broker config is altered.
    pub(crate) broker_defaults: RwLock<Arc<crate::topic_configs::BrokerDefaults>>,
    pub(crate) identities: Mutex<ProducerIdentityStore>,
    pub(crate) groups: Mutex<Option<GroupCoordinator>>,
    pub(crate) txns: Mutex<Option<TransactionCoordinator>>,
    /// Fired on every append so the replication driver wakes at once.
    pub(crate) appended: Notify,
    pub(crate) tasks: TaskTracker,
    pub(crate) shutdown: CancellationToken,
    pub(crate) started_ms: i64,
    pub(crate) member_counter: AtomicU64,
    pub(crate) clients: Mutex<ClientRegistry>,
    /// Held from open until close or crash (not until the last `Arc` is
    /// dropped), so a closed cluster's directory can be reopened at once.
    pub(crate) dir_lock: Mutex<Option<DirLock>>,
    /// Hosted brokers taken offline by an operator (see `brokers.rs`).
    pub(crate) offline_brokers: tokio::sync::watch::Sender<std::collections::BTreeSet<BrokerId>>,
    /// Set while writes fail because the disk is full (`health.rs`).
    pub(crate) disk_full: Mutex<Option<DiskFull>>,
    /// Mirrors `disk_full.is_some()`, so the append path checks it without
    /// a lock.
    pub(crate) disk_full_flag: std::sync::atomic::AtomicBool,
    /// ACLs and SCRAM credentials (`security.rs`).
    pub(crate) security: crate::security::SecurityState,
    /// Client quotas (`quotas.rs`).
    pub(crate) quotas: Mutex<crate::quotas::QuotaStore>,
    /// What the listeners report about their clients (`connection_stats.rs`).
    pub(crate) connection_stats: Arc<crate::connection_stats::ConnectionStats>,
}

impl BrokerCluster {
    pub fn config(&self) -> &MiniKafkaConfig {
        &self.config
    }

    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// Milliseconds since the cluster was opened, by its clock.
    pub fn uptime_ms(&self) -> i64 {
        self.clock.now_ms() - self.started_ms
    }

    /// The cluster's stable id (Kafka's cluster id), persisted in metadata.
    pub fn cluster_id(&self) -> String {
        // Reading the id cannot be harmed by a half-done update elsewhere.
        crate::locks::plain(&self.metadata).cluster_id().to_string()
    }

    /// The broker ids this process hosts.
    pub fn broker_ids(&self) -> &[BrokerId] {
        &self.config.broker_ids
    }

    /// The failure injector shared by every log and store: tests fail
    /// writes or fsyncs through it to drive the cluster into FAILED.
    pub fn failure_injector(&self) -> &Arc<FaultInjector> {
        &self.faults
    }

    // ----- internal helpers ------------------------------------------------

    /// Ok while the cluster runs; CLUSTER_CLOSED / CLUSTER_FAILED otherwise.
    pub(crate) fn check_running(&self) -> Result<()> {
        self.life.check()
    }

    /// Settles a storage failure of an operation outside any partition (a
    /// broker-wide store): transient ones reach only the caller (typed, the
    /// disk-full state noted); every other one makes the cluster terminally
    /// FAILED (the caller sees CLUSTER_FAILED with the cause). Other errors
    /// pass through.
    pub(crate) fn guard<T, E: Into<ClusterError>>(
        &self,
        r: std::result::Result<T, E>,
    ) -> Result<T> {
        self.guard_store(r, false)
    }

    /// Like `guard`, but every storage failure is terminal: for stores that
    /// stop themselves after any failed write (the transaction journal).
    pub(crate) fn guard_strict<T, E: Into<ClusterError>>(
        &self,
        r: std::result::Result<T, E>,
    ) -> Result<T> {
        self.guard_store(r, true)
    }

    /// `guard` (`strict`: `guard_strict`). `reach` finds a reach for
    /// exactly the storage failures, so a strict store fails the cluster
    /// on every one of them.
    fn guard_store<T, E: Into<ClusterError>>(
        &self,
        r: std::result::Result<T, E>,
        strict: bool,
    ) -> Result<T> {
        r.map_err(|e| {
            let e = e.into();
            match reach(&e, Access::Write) {
                None => e,
                Some(Reach::Transient) if !strict => {
                    if let Some(cause) = e.storage_cause() {
                        self.note_transient(cause);
                    }
                    e
                }
                Some(_) => self.life.fail(e.to_string()),
            }
        })
    }

    /// Settles the outcome of an operation on one partition (see
    /// `health.rs`): damage takes the partition offline, a transient
    /// failure reaches only the caller, anything else fails the cluster.
    pub(crate) fn settle<T>(
        &self,
        slot: &PartitionSlot,
        access: Access,
        r: Result<T>,
    ) -> Result<T> {
        r.map_err(|e| match reach(&e, access) {
            None => e,
            Some(Reach::Transient) => {
                if let Some(cause) = e.storage_cause() {
                    self.note_transient(cause);
                }
                e
            }
            Some(Reach::Partition) => self.mark_damaged(slot, &e),
            Some(Reach::Broker) => self.life.fail(e.to_string()),
        })
    }
    /// Records a transient failure: a full disk is remembered until a write
    /// succeeds, once, with one error line; running out of descriptors is
    /// logged.
    pub(crate) fn note_transient(&self, cause: &StorageError) {
        if !cause.is_disk_full() {
            tracing::warn!(error = %cause, "out of file descriptors; the operation failed and changed nothing");
            return;
        }
        let mut full = crate::locks::plain(&self.disk_full);
        if full.is_none() {
            tracing::error!(
                path = %cause.path().display(),
                error = %cause,
                "disk full: writes answer STORAGE_ERROR until space is freed; reads go on"
            );
            *full = Some(DiskFull {
                since_ms: self.clock.now_ms(),
                path: cause.path().to_path_buf(),
                error: cause.to_string(),
            });
            self.disk_full_flag.store(true, Ordering::SeqCst);
        }
    }

    /// A write went through: a full disk is over.
    pub(crate) fn note_write_succeeded(&self) {
        if !self.disk_full_flag.load(Ordering::Relaxed) {
            return;
        }
        let mut full = crate::locks::plain(&self.disk_full);
        self.disk_full_flag.store(false, Ordering::SeqCst);
        if let Some(f) = full.take() {
            tracing::info!(
                full_for_ms = self.clock.now_ms() - f.since_ms,
                "disk space is back: writes work again"
            );
        }
    }

    /// Takes `slot` offline because of `cause` (once; later causes are the
    /// same damage seen again) and returns the error its callers get.
    pub(crate) fn mark_damaged(&self, slot: &PartitionSlot, cause: &ClusterError) -> ClusterError {
        let text = cause.to_string();
        if slot.damaged.set(Offline::Damaged(text.clone())).is_ok() {
            tracing::error!(
                partition = %slot.tp,
                cause = %text,
                "partition damaged: it answers STORAGE_ERROR from now on; every other partition keeps serving"
            );
        }
        slot.damaged_error()
    }

    pub(crate) fn topic(&self, name: &str) -> Result<Arc<Topic>> {
        crate::locks::plain_read(&self.topics)
            .get(name)
            .cloned()
            .ok_or_else(|| ClusterError::UnknownTopic {
                topic: name.to_string(),
            })
    }

    pub(crate) fn slot(&self, tp: &TopicPartition) -> Result<Arc<PartitionSlot>> {
        let topic = self.topic(&tp.topic)?;
        topic
            .partitions
            .get(tp.partition as usize)
            .cloned()
            .ok_or_else(|| ClusterError::UnknownPartition {
                partition: tp.clone(),
                partitions: u32::try_from(topic.partitions.len()).unwrap_or(u32::MAX),
            })
    }

    /// Every partition slot, in topic and partition order.
    pub(crate) fn all_slots(&self) -> Vec<Arc<PartitionSlot>> {
        crate::locks::plain_read(&self.topics)
            .values()
            .flat_map(|t| t.partitions.iter().cloned())
            .collect()
    }

    /// Every partition slot that is not damaged: what the steps that run
    /// over all partitions work on, so one damaged partition never stops
    /// them for the others.
    pub(crate) fn healthy_slots(&self) -> Vec<Arc<PartitionSlot>> {
        let mut slots = self.all_slots();
        slots.retain(|s| s.damage().is_none());
        slots
    }

    /// Runs `f` on the replica set of `tp` under its lock, guarding storage
    /// failures.
    pub(crate) fn with_partition<T>(
        &self,
        tp: &TopicPartition,
        f: impl FnOnce(&mut PartitionReplicaSet) -> Result<T>,
    ) -> Result<T> {
        self.check_running()?;
        let slot = self.slot(tp)?;
        self.with_slot(&slot, f)
    }

    pub(crate) fn with_slot<T>(
        &self,
        slot: &PartitionSlot,
        f: impl FnOnce(&mut PartitionReplicaSet) -> Result<T>,
    ) -> Result<T> {
        if slot.damage().is_some() {
            return Err(slot.damaged_error());
        }
        let mut guard = slot.write_set()?;
        let Some(set) = guard.as_mut() else {
            return Err(self.gone(slot));
        };
        // A failed invariant (a panic) under the lock leaves the set in an
        // unknown state: the partition goes offline as FAILED instead of
        // taking its caller, or the lock, down with it.
        let epoch_before = set.leader_epoch();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let r = f(set);
            check_partition_invariants(set, epoch_before);
            r
        }));
        drop(guard);
        self.settle_caught(slot, Access::Write, r)
    }

    /// Like `with_slot` for read-only work: many readers of one partition
    /// proceed together.
    pub(crate) fn read_slot<T>(
        &self,
        slot: &PartitionSlot,
        f: impl FnOnce(&PartitionReplicaSet) -> Result<T>,
    ) -> Result<T> {
        if slot.damage().is_some() {
            return Err(slot.damaged_error());
        }
        let guard = slot.read_set()?;
        let Some(set) = guard.as_ref() else {
            return Err(self.gone(slot));
        };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(set)));
        drop(guard);
        self.settle_caught(slot, Access::Read, r)
    }

    /// Settles what work under a partition's lock came to: its result (see
    /// `settle`), or a panic, which marks the partition FAILED.
    fn settle_caught<T>(
        &self,
        slot: &PartitionSlot,
        access: Access,
        caught: std::thread::Result<Result<T>>,
    ) -> Result<T> {
        match caught {
            Ok(r) => self.settle(slot, access, r),
            Err(panic) => Err(slot.mark_failed(&format!(
                "an invariant failed under its lock: {}",
                panic_text(panic.as_ref())
            ))),
        }
    }

    /// Why a slot has no replica set: the cluster closed, or the topic was
    /// deleted while the caller held the slot.
    fn gone(&self, slot: &PartitionSlot) -> ClusterError {
        match self.check_running() {
            Err(e) => e,
            Ok(()) => ClusterError::TopicDeleted {
                partition: slot.tp.clone(),
            },
        }
    }

    pub(crate) fn read_partition<T>(
        &self,
        tp: &TopicPartition,
        f: impl FnOnce(&PartitionReplicaSet) -> Result<T>,
    ) -> Result<T> {
        self.check_running()?;
        let slot = self.slot(tp)?;
        self.read_slot(&slot, f)
    }

    /// Partition counts of the user topics (what the group coordinator sees).
    pub(crate) fn partition_counts(&self) -> BTreeMap<String, u32> {
        crate::locks::plain_read(&self.topics)
            .iter()
            .map(|(n, t)| (n.clone(), t.partition_count()))
            .collect()
    }

    pub(crate) fn group_coordinator(&self) -> Result<MutexGuard<'_, Option<GroupCoordinator>>> {
        self.check_running()?;
        self.store(&self.groups, "group coordinator")
    }

    pub(crate) fn txn_coordinator(&self) -> Result<MutexGuard<'_, Option<TransactionCoordinator>>> {
        self.check_running()?;
        self.store(&self.txns, "transaction coordinator")
    }

    pub(crate) fn next_member_number(&self) -> u64 {
        self.member_counter.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Spawns a task owned by the cluster: it is cancelled and awaited by
    /// `close()`, so it never outlives the cluster.
    pub(crate) fn spawn_owned<F>(&self, fut: F) -> Result<()>
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let handle = tokio::runtime::Handle::try_current().map_err(|_| {
            ClusterError::InvalidRequest(
                "this operation needs a tokio runtime (acks=all completions run as tasks)".into(),
            )
        })?;
        let token = self.shutdown.clone();
        self.tasks.spawn_on(
            async move {
                tokio::select! {
                    _ = token.cancelled() => {}
                    _ = fut => {}
                }
            },
            &handle,
        );
        Ok(())
    }

    /// Creates the topic metadata entry for a new topic.
    pub(crate) fn new_topic_meta(
        &self,
        name: &str,
        partitions: u32,
        rf: usize,
        config: TopicConfig,
    ) -> TopicMeta {
        TopicMeta {
            name: name.to_string(),
            topic_id: crate::metadata::TopicId::random(),
            partitions: (0..partitions)
                .map(|p| crate::metadata::place_replicas(&self.config.broker_ids, p, rf))
                .collect::<Vec<PartitionMeta>>(),
            config,
        }
    }
}

/// The invariants every change of a partition keeps, checked after each
/// one in release builds too: the high watermark never passes the leader's
/// log end, and the leader epoch never goes back. A violation is a failed
/// invariant: it panics under the partition's lock, and `with_slot` takes
/// the partition offline as FAILED before anyone reads the broken state.
fn check_partition_invariants(set: &PartitionReplicaSet, epoch_before: i32) {
    let (hw, leo) = (set.high_watermark(), set.log_end_offset());
    assert!(
        hw <= leo,
        "{}: high watermark {hw} is past the leader's log end {leo}",
        set.topic_partition()
    );
    let epoch = set.leader_epoch();
    assert!(
        epoch >= epoch_before,
        "{}: the leader epoch went back from {epoch_before} to {epoch}",
        set.topic_partition()
    );
}

/// The log settings of one topic's replicas.
pub(crate) fn log_config(
    config: &MiniKafkaConfig,
    topic: Option<&TopicConfig>,
    faults: &Arc<FaultInjector>,
) -> LogConfig {
    LogConfig {
        segment_max_bytes: topic
            .and_then(|t| t.segment_bytes)
            .unwrap_or(config.segment_max_bytes),
        // The server's flag is the broker default a topic's own value
        // overrides.
        index_interval_bytes: topic.map_or(config.index_interval_bytes, |t| {
            let server = crate::broker_configs::broker_defaults(config, &BTreeMap::new());
            crate::data::index_interval(t, &server)
        }),
        max_batch_bytes: config.max_batch_bytes,
        faults: faults.clone(),
        // The broker layers are applied when the log acts (every append
        // sets the roll age, every compaction the cleaner settings).
        segment_ms: topic.map(|t| t.roll_ms(&BrokerDefaults::default())),
        segment_jitter_ms: topic.map_or(0, |t| {
            t.effective_i64("segment.jitter.ms", &BrokerDefaults::default())
        }),
        cleaner: topic.map_or_else(mk_log::CleanerConfig::default, |t| {
            t.cleaner(&BrokerDefaults::default())
        }),
        // The replica set gives its logs its injected clock.
        clock: None,
    }
}

pub(crate) fn replication_config(
    config: &MiniKafkaConfig,
    topic: &TopicConfig,
    faults: &Arc<FaultInjector>,
) -> ReplicationConfig {
    ReplicationConfig {
        replica_lag_max_offsets: config.replica_lag_max_offsets,
        replica_lag_time_ms: config.replica_lag_time_ms,
        replica_fetch_max_bytes: usize::try_from(config.replica_fetch_max_bytes)
            .unwrap_or(usize::MAX),
        min_insync_replicas: config.min_insync_replicas,
        log: log_config(config, Some(topic), faults),
    }
}
