//! `BrokerCluster`: the one semantic core. It owns the metadata store, one
//! `PartitionReplicaSet` per partition (each behind its own lock, so
//! operations on different partitions run in parallel), the producer
//! identity store, the group coordinator and the transaction coordinator.
//! Locks are never held across an `.await`: `acks=all` appends hand back a
//! completion that is awaited after the partition lock is released.

use crate::config::{BrokerId, FlushPolicy, MiniKafkaConfig, TopicConfig};
use crate::error::{ClusterError, Result};
use crate::lifecycle::{DirLock, Lifecycle, LifecycleState};
use crate::metadata::{MetadataStore, PartitionMeta, TopicMeta};
use mk_core::{SharedClock, SystemClock, TopicPartition};
use mk_group::{GroupConfig, GroupCoordinator};
use mk_log::{FaultInjector, LogConfig, StorageError};
use mk_replication::{
    PartitionAssignment, PartitionReplicaSet, ProducerIdentityStore, ReplicationConfig,
};
use mk_txn::{TransactionCoordinator, TxnConfig};
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

/// One partition: its replica set and the signal fired when its high
/// watermark may have moved (long-poll fetches wait on it).
#[derive(Debug)]
pub(crate) struct PartitionSlot {
    pub tp: TopicPartition,
    /// `None` once the cluster is closed or crashed. Reads (fetch,
    /// metadata) share the lock; appends and steps take it exclusively.
    pub set: RwLock<Option<PartitionReplicaSet>>,
    pub hw_moved: Notify,
    /// More than one replica: only such a partition has followers to copy
    /// to, so only its appends wake the replication driver, and the driver
    /// visits only such partitions (a single-replica partition's high
    /// watermark moves with the append itself).
    pub replicated: bool,
    /// What the flush policy needs to know since the last fsync.
    pub unflushed: Mutex<Unflushed>,
    /// Held by the flush cycle while it works on the partition's files
    /// without the partition lock (steps.rs `flush_slot`); whoever removes
    /// the partition's directory takes it first, so no staged file lands in
    /// a directory being removed.
    pub flushing: Mutex<()>,
    /// Set once when damage takes the partition offline (`health.rs`).
    pub damaged: std::sync::OnceLock<String>,
}

/// Appends since a partition's last fsync, for the flush policy (Kafka's
/// `flush.messages` / `flush.ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unflushed {
    /// Records appended since the last fsync.
    pub records: u64,
    /// When the last fsync happened, by the cluster clock.
    pub synced_at_ms: i64,
}

impl Unflushed {
    /// Nothing unflushed: an fsync just happened at `now_ms`.
    pub fn synced(now_ms: i64) -> Self {
        Self {
            records: 0,
            synced_at_ms: now_ms,
        }
    }

    /// Counts `records` just appended; true when `policy` wants an fsync
    /// now, in which case the count restarts as if it already happened.
    pub fn note_appended(&mut self, records: u64, now_ms: i64, policy: FlushPolicy) -> bool {
        self.records += records;
        let due = policy.messages.is_some_and(|n| self.records >= n)
            || policy
                .interval_ms
                .is_some_and(|ms| now_ms - self.synced_at_ms >= ms);
        if due {
            *self = Self::synced(now_ms);
        }
        due
    }
}

/// One topic: its metadata and partitions.
#[derive(Debug)]
pub(crate) struct Topic {
    pub meta: TopicMeta,
    pub partitions: Vec<Arc<PartitionSlot>>,
}

/// The semantic core. Share it as `Arc<BrokerCluster>`; it is `Send + Sync`.
#[derive(Debug)]
pub struct BrokerCluster {
    pub(crate) config: MiniKafkaConfig,
    pub(crate) clock: SharedClock,
    pub(crate) faults: Arc<FaultInjector>,
    pub(crate) life: Lifecycle,
    pub(crate) topics: RwLock<BTreeMap<String, Arc<Topic>>>,
    pub(crate) metadata: Mutex<MetadataStore>,
    pub(crate) identities: Mutex<ProducerIdentityStore>,
    pub(crate) groups: Mutex<Option<GroupCoordinator>>,
    pub(crate) txns: Mutex<Option<TransactionCoordinator>>,
    /// Fired on every append so the replication driver wakes at once.
    pub(crate) appended: Notify,
    pub(crate) tasks: TaskTracker,
    pub(crate) shutdown: CancellationToken,
    pub(crate) started_ms: i64,
    pub(crate) member_counter: AtomicU64,
    pub(crate) clients: Mutex<crate::clients::ClientRegistry>,
    /// Held from open until close or crash (not until the last `Arc` is
    /// dropped), so a closed cluster's directory can be reopened at once.
    pub(crate) dir_lock: Mutex<Option<DirLock>>,
    /// Hosted brokers taken offline by an operator (see `brokers.rs`).
    pub(crate) offline_brokers: tokio::sync::watch::Sender<std::collections::BTreeSet<BrokerId>>,
    /// Set while writes fail because the disk is full (`health.rs`).
    pub(crate) disk_full: Mutex<Option<crate::health::DiskFull>>,
    /// Mirrors `disk_full.is_some()`, so the append path checks it without
    /// a lock.
    pub(crate) disk_full_flag: std::sync::atomic::AtomicBool,
}

impl BrokerCluster {
    /// Opens (or creates) a cluster in `config.data_dir` with the system
    /// clock.
    pub fn open(config: MiniKafkaConfig) -> Result<Arc<Self>> {
        Self::open_with_clock(config, Arc::new(SystemClock))
    }

    /// Opens with an injected clock (tests pass a `ManualClock` they keep a
    /// handle to). Recovers every partition, the offsets log and the
    /// transaction journal, and completes transactions that a crash left in
    /// a Prepare state.
    pub fn open_with_clock(config: MiniKafkaConfig, clock: SharedClock) -> Result<Arc<Self>> {
        Self::open_with_faults(config, clock, Arc::new(FaultInjector::new()))
    }

    /// Opens with an injected clock and the fault seam every write and
    /// fsync of every store will pass (the fault-injection suite passes one
    /// so that it can also fail the writes of opening itself).
    pub fn open_with_faults(
        config: MiniKafkaConfig,
        clock: SharedClock,
        faults: Arc<FaultInjector>,
    ) -> Result<Arc<Self>> {
        config.validate()?;
        std::fs::create_dir_all(&config.data_dir)
            .map_err(|e| StorageError::io(&config.data_dir, e))?;
        let lock = DirLock::acquire(&config.data_dir)?;
        let metadata_existed = config.data_dir.join("metadata.json").exists();
        let mut metadata = MetadataStore::load(&config.data_dir)?.with_faults(faults.clone());
        crate::topics::finish_pending_deletions(&config.data_dir, &mut metadata)?;
        crate::topics::check_no_unknown_partitions(&config.data_dir, &metadata, metadata_existed)?;
        metadata.persist_upgrade()?;
        let replicas: u64 = metadata
            .topics()
            .flat_map(|t| t.partitions.iter())
            .map(|p| p.replicas.len() as u64)
            .sum();
        crate::resources::check_room_for_replicas(
            replicas,
            &format!("opening {replicas} replica(s) of the metadata's partitions"),
        )?;
        let mut identities =
            ProducerIdentityStore::open(&config.data_dir)?.with_faults(faults.clone());
        let mut seen_producers: BTreeMap<i64, i32> = BTreeMap::new();
        let mut topics = BTreeMap::new();
        let mut epoch_changes = Vec::new();
        for meta in metadata.topics() {
            let mut partitions = Vec::with_capacity(meta.partitions.len());
            for p in &meta.partitions {
                let tp = TopicPartition::new(&meta.name, p.partition);
                // Every replica directory exists from the partition's
                // creation on: a missing one lost its data, and opening it
                // would silently start an empty log in its place.
                let missing: Vec<String> = p
                    .replicas
                    .iter()
                    .map(|b| mk_replication::replica_dir(&config.data_dir, *b, &tp))
                    .filter(|d| !d.exists())
                    .map(|d| d.display().to_string())
                    .collect();
                if !missing.is_empty() {
                    let cause = format!(
                        "replica directories are missing ({}): their data is gone; restore them \
                         from a backup, or delete the topic to start it again empty",
                        missing.join(", ")
                    );
                    tracing::error!(partition = %tp, cause, "partition damaged: opened offline");
                    partitions.push(Arc::new(PartitionSlot::damaged_at_open(
                        tp,
                        cause,
                        clock.now_ms(),
                    )));
                    continue;
                }
                let opened = PartitionReplicaSet::open(
                    &config.data_dir,
                    tp.clone(),
                    PartitionAssignment {
                        replicas: p.replicas.clone(),
                        leader_id: p.leader_id,
                        leader_epoch: p.leader_epoch,
                    },
                    replication_config(&config, &meta.config, &faults),
                    clock.clone(),
                );
                let mut set = match opened.map_err(ClusterError::from) {
                    Ok(set) => set,
                    // Damage stays with its partition: the broker starts
                    // without it. A transient failure (no space, no file
                    // descriptor) refuses the start instead, since retrying
                    // with the resource back opens the partition fine.
                    Err(e)
                        if crate::health::reach(&e, crate::health::Access::Read)
                            == Some(crate::health::Reach::Partition) =>
                    {
                        tracing::error!(
                            partition = %tp,
                            cause = %e,
                            "partition damaged: opened offline; every other partition serves"
                        );
                        partitions.push(Arc::new(PartitionSlot::damaged_at_open(
                            tp,
                            e.to_string(),
                            clock.now_ms(),
                        )));
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                for (id, epoch) in set.producer_epochs() {
                    note_producer(&mut seen_producers, id, epoch);
                }
                if (set.leader_id(), set.leader_epoch()) != (p.leader_id, p.leader_epoch) {
                    epoch_changes.push((tp.clone(), set.leader_id(), set.leader_epoch()));
                }
                for (_, identity) in identities.identities() {
                    // Re-register every known producer epoch so zombies stay
                    // fenced after a restart.
                    let _ = set.register_producer(identity.producer_id, identity.epoch);
                }
                partitions.push(Arc::new(PartitionSlot::new(tp, set, clock.now_ms())));
            }
            topics.insert(
                meta.name.clone(),
                Arc::new(Topic {
                    meta: meta.clone(),
                    partitions,
                }),
            );
        }
        for (tp, leader, epoch) in epoch_changes {
            metadata.set_leader(&tp.topic, tp.partition, leader, epoch)?;
        }
        let groups = GroupCoordinator::open(
            &config.data_dir.join(format!("{OFFSETS_TOPIC}-0")),
            GroupConfig {
                session_timeout_ms: config.group_session_timeout_ms,
                min_session_timeout_ms: config.group_min_session_timeout_ms,
                max_session_timeout_ms: config.group_max_session_timeout_ms,
                max_group_size: config.group_max_size,
                // Member ids made after a restart must never equal ids of
                // before: a client that still holds an old id would take
                // over a newcomer's place.
                member_id_salt: uuid::Uuid::new_v4().simple().to_string(),
                offsets_log: log_config(&config, None, &faults),
                ..GroupConfig::default()
            },
            clock.clone(),
        )?;
        let recovered = TransactionCoordinator::open(
            &config.data_dir.join(mk_txn::JOURNAL_FILE_NAME),
            TxnConfig {
                transaction_timeout_ms: config.transaction_timeout_ms,
                faults: Arc::new(mk_txn::JournalFaults::with_storage(faults.clone())),
                max_transaction_timeout_ms: config.max_transaction_timeout_ms,
                ..TxnConfig::default()
            },
            clock.clone(),
        )?;
        for t in recovered.coordinator.list() {
            note_producer(&mut seen_producers, t.producer_id, t.producer_epoch);
        }
        // The logs and the journal, not the store, are the truth about
        // which producer ids are taken: a lost or stale store must never
        // hand one out again.
        identities.respect_seen(&seen_producers)?;
        let started_ms = clock.now_ms();
        let cluster = Arc::new(Self {
            config,
            clock,
            faults,
            life: Lifecycle::new(),
            topics: RwLock::new(topics),
            metadata: Mutex::new(metadata),
            identities: Mutex::new(identities),
            groups: Mutex::new(Some(groups)),
            txns: Mutex::new(Some(recovered.coordinator)),
            appended: Notify::new(),
            tasks: TaskTracker::new(),
            shutdown: CancellationToken::new(),
            started_ms,
            member_counter: AtomicU64::new(0),
            clients: Mutex::new(crate::clients::ClientRegistry::default()),
            dir_lock: Mutex::new(Some(lock)),
            offline_brokers: tokio::sync::watch::Sender::new(Default::default()),
            disk_full: Mutex::new(None),
            disk_full_flag: std::sync::atomic::AtomicBool::new(false),
        });
        cluster.recover_transactions(recovered.plans)?;
        cluster.repair_hanging_transactions()?;
        Ok(cluster)
    }

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
        self.metadata
            .lock()
            .expect("metadata lock")
            .cluster_id()
            .to_string()
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

    pub fn state(&self) -> LifecycleState {
        self.life.get()
    }

    /// Resolves with the cause once the cluster is terminally FAILED (what
    /// a supervising process waits for).
    pub async fn until_failed(&self) -> String {
        self.life.until_failed().await
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
        r.map_err(|e| {
            let e = e.into();
            match crate::health::reach(&e, crate::health::Access::Write) {
                None => e,
                Some(crate::health::Reach::Transient) => {
                    if let Some(cause) = e.storage_cause() {
                        self.note_transient(cause);
                    }
                    e
                }
                Some(_) => self.life.fail(e.to_string()),
            }
        })
    }

    /// Like `guard`, but every storage failure is terminal: for stores that
    /// stop themselves after any failed write (the transaction journal).
    pub(crate) fn guard_strict<T, E: Into<ClusterError>>(
        &self,
        r: std::result::Result<T, E>,
    ) -> Result<T> {
        r.map_err(|e| {
            let e = e.into();
            if e.is_storage_failure() {
                self.life.fail(e.to_string())
            } else {
                e
            }
        })
    }

    /// Settles the outcome of an operation on one partition (see
    /// `health.rs`): damage takes the partition offline, a transient
    /// failure reaches only the caller, anything else fails the cluster.
    pub(crate) fn settle<T>(
        &self,
        slot: &PartitionSlot,
        access: crate::health::Access,
        r: Result<T>,
    ) -> Result<T> {
        use crate::health::Reach;
        r.map_err(|e| match crate::health::reach(&e, access) {
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

    pub(crate) fn topic(&self, name: &str) -> Result<Arc<Topic>> {
        self.topics
            .read()
            .expect("topics lock")
            .get(name)
            .cloned()
            .ok_or_else(|| ClusterError::UnknownTopic(format!("topic {name:?} does not exist")))
    }

    pub(crate) fn slot(&self, tp: &TopicPartition) -> Result<Arc<PartitionSlot>> {
        let topic = self.topic(&tp.topic)?;
        topic
            .partitions
            .get(tp.partition as usize)
            .cloned()
            .ok_or_else(|| {
                ClusterError::UnknownPartition(format!(
                    "{tp} does not exist; topic {:?} has {} partition(s)",
                    tp.topic,
                    topic.partitions.len()
                ))
            })
    }

    /// Every partition slot, in topic and partition order.
    pub(crate) fn all_slots(&self) -> Vec<Arc<PartitionSlot>> {
        self.topics
            .read()
            .expect("topics lock")
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
        let mut guard = slot.set.write().expect("partition lock");
        let Some(set) = guard.as_mut() else {
            return Err(self.gone(slot));
        };
        let r = f(set);
        drop(guard);
        self.settle(slot, crate::health::Access::Write, r)
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
        let guard = slot.set.read().expect("partition lock");
        let Some(set) = guard.as_ref() else {
            return Err(self.gone(slot));
        };
        let r = f(set);
        drop(guard);
        self.settle(slot, crate::health::Access::Read, r)
    }

    /// Why a slot has no replica set: the cluster closed, or the topic was
    /// deleted while the caller held the slot.
    fn gone(&self, slot: &PartitionSlot) -> ClusterError {
        match self.check_running() {
            Err(e) => e,
            Ok(()) => ClusterError::UnknownTopic(format!("{} was deleted", slot.tp)),
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
        self.topics
            .read()
            .expect("topics lock")
            .iter()
            .map(|(n, t)| (n.clone(), t.partitions.len() as u32))
            .collect()
    }

    pub(crate) fn groups(&self) -> Result<MutexGuard<'_, Option<GroupCoordinator>>> {
        self.check_running()?;
        Ok(self.groups.lock().expect("groups lock"))
    }

    pub(crate) fn txns(&self) -> Result<MutexGuard<'_, Option<TransactionCoordinator>>> {
        self.check_running()?;
        Ok(self.txns.lock().expect("txns lock"))
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

    /// How many tasks the cluster owns right now (0 after `close()`).
    pub fn owned_tasks(&self) -> usize {
        self.tasks.len()
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

impl PartitionSlot {
    pub(crate) fn new(tp: TopicPartition, set: PartitionReplicaSet, now_ms: i64) -> Self {
        Self {
            tp,
            replicated: set.replicas().len() > 1,
            set: RwLock::new(Some(set)),
            hw_moved: Notify::new(),
            unflushed: Mutex::new(Unflushed::synced(now_ms)),
            flushing: Mutex::new(()),
            damaged: std::sync::OnceLock::new(),
        }
    }

    /// A partition whose replicas could not be opened: offline from the
    /// start, with `cause`.
    pub(crate) fn damaged_at_open(tp: TopicPartition, cause: String, now_ms: i64) -> Self {
        let slot = Self {
            tp,
            set: RwLock::new(None),
            hw_moved: Notify::new(),
            replicated: false,
            unflushed: Mutex::new(Unflushed::synced(now_ms)),
            flushing: Mutex::new(()),
            damaged: std::sync::OnceLock::new(),
        };
        let _ = slot.damaged.set(cause);
        slot
    }
}

/// Records that producer `id` is known at `epoch` (keeping the highest).
fn note_producer(seen: &mut BTreeMap<i64, i32>, id: i64, epoch: i32) {
    let e = seen.entry(id).or_insert(epoch);
    *e = (*e).max(epoch);
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
        index_interval_bytes: config.index_interval_bytes,
        max_batch_bytes: config.max_batch_bytes,
        faults: faults.clone(),
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
        replica_fetch_max_bytes: config.replica_fetch_max_bytes as usize,
        min_insync_replicas: config.min_insync_replicas,
        log: log_config(config, Some(topic), faults),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flush_policy_fires_on_count_or_age_and_restarts() {
        let every_3 = FlushPolicy {
            messages: Some(3),
            interval_ms: None,
        };
        let mut u = Unflushed::synced(0);
        assert!(!u.note_appended(2, 10, every_3));
        assert!(u.note_appended(1, 20, every_3));
        assert_eq!(u, Unflushed::synced(20));
        let every_100ms = FlushPolicy {
            messages: None,
            interval_ms: Some(100),
        };
        assert!(!u.note_appended(50, 119, every_100ms));
        assert!(u.note_appended(1, 120, every_100ms));
        assert_eq!(u, Unflushed::synced(120));
        assert!(!u.note_appended(1_000, 1_000, FlushPolicy::default()));
    }
}
