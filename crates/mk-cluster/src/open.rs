//! Opening a cluster: the data-directory lock, the metadata (finishing
//! what a crash interrupted, refusing directories it does not know), every
//! replica set (a damaged one opens offline), the producer identities, the
//! offsets log, the transaction journal, and the recovery of transactions
//! a crash left unfinished.

use crate::attached::ClientRegistry;
use crate::cluster::{BrokerCluster, OFFSETS_TOPIC, log_config, replication_config};
use crate::config::{BrokerId, MiniKafkaConfig, TopicConfig};
use crate::error::Result;
use crate::health::{Access, Reach, reach};
use crate::life::{DirLock, Life};
use crate::metadata::{MetadataStore, PartitionMeta, TopicMeta};
use crate::slot::{PartitionSlot, Topic};
use crate::topics::{check_no_unknown_partitions, finish_pending_deletions};
use mk_core::{SharedClock, SystemClock, TopicPartition};
use mk_group::{GroupConfig, GroupCoordinator};
use mk_replication::{PartitionAssignment, PartitionReplicaSet, ProducerIdentityStore};
use mk_storage::{FaultInjector, StorageError};
use mk_txn::{TransactionCoordinator, TxnConfig};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

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
    ///
    /// The steps run in this order, and every write of opening happens in
    /// it: the directory and its metadata, the replica sets, the groups'
    /// offsets log, the transaction journal, the producer ids they show,
    /// the security and quota stores; then transactions a crash left
    /// unfinished are completed.
    pub fn open_with_faults(
        config: MiniKafkaConfig,
        clock: SharedClock,
        faults: Arc<FaultInjector>,
    ) -> Result<Arc<Self>> {
        config.validate()?;
        let opening = Opening {
            config: &config,
            clock: &clock,
            faults: &faults,
        };
        let (lock, mut metadata) = opening.metadata()?;
        let mut identities =
            ProducerIdentityStore::open(&config.data_dir)?.with_faults(faults.clone());
        let opened = opening.topics(&metadata, &identities)?;
        let mut seen_producers = opened.seen_producers;
        for (tp, leader, epoch) in opened.epoch_changes {
            metadata.set_leader(&tp.topic, tp.partition, leader, epoch)?;
        }
        let groups = opening.groups()?;
        let recovered = opening.transactions()?;
        for t in recovered.coordinator.list() {
            note_producer(&mut seen_producers, t.producer_id, t.producer_epoch);
        }
        // The logs and the journal, not the store, are the truth about
        // which producer ids are taken: a lost or stale store must never
        // hand one out again.
        identities.respect_seen(&seen_producers)?;
        let stores = Stores {
            security: crate::security_store::SecurityStore::load(&config.data_dir, faults.clone())?,
            quotas: crate::quotas::QuotaStore::load(&config.data_dir, faults.clone())?,
            lock,
            metadata,
            topics: opened.topics,
            identities,
            groups,
            txns: recovered.coordinator,
        };
        let cluster = Arc::new(Self::assemble(config, clock, faults, stores));
        cluster
            .transactions()
            .recover_transactions(recovered.plans)?;
        cluster.transactions().repair_hanging_transactions()?;
        Ok(cluster)
    }

    /// The cluster over its opened stores, with fresh run-time state.
    fn assemble(
        config: MiniKafkaConfig,
        clock: SharedClock,
        faults: Arc<FaultInjector>,
        stores: Stores,
    ) -> Self {
        let started_ms = clock.now_ms();
        let broker_defaults =
            crate::broker_configs::broker_defaults(&config, stores.metadata.broker_configs());
        Self {
            broker_defaults: RwLock::new(Arc::new(broker_defaults)),
            config,
            clock,
            faults,
            life: Life::new(),
            topics: RwLock::new(stores.topics),
            metadata: Mutex::new(stores.metadata),
            topic_alters: Mutex::new(()),
            identities: Mutex::new(stores.identities),
            groups: Mutex::new(Some(stores.groups)),
            txns: Mutex::new(Some(stores.txns)),
            appended: Notify::new(),
            tasks: TaskTracker::new(),
            shutdown: CancellationToken::new(),
            started_ms,
            member_counter: AtomicU64::new(0),
            clients: Mutex::new(ClientRegistry::default()),
            dir_lock: Mutex::new(Some(stores.lock)),
            offline_brokers: tokio::sync::watch::Sender::new(Default::default()),
            disk_full: Mutex::new(None),
            disk_full_flag: std::sync::atomic::AtomicBool::new(false),
            security: crate::security::SecurityState::new(stores.security),
            quotas: Mutex::new(stores.quotas),
            connection_stats: Arc::default(),
        }
    }
}

/// Everything opening reads from the data directory, ready to serve.
struct Stores {
    lock: DirLock,
    metadata: MetadataStore,
    topics: BTreeMap<String, Arc<Topic>>,
    identities: ProducerIdentityStore,
    groups: GroupCoordinator,
    txns: TransactionCoordinator,
    security: crate::security_store::SecurityStore,
    quotas: crate::quotas::QuotaStore,
}

/// What every step of opening reads: the configuration, the clock and the
/// fault seam every store passes.
struct Opening<'a> {
    config: &'a MiniKafkaConfig,
    clock: &'a SharedClock,
    faults: &'a Arc<FaultInjector>,
}

/// What opening the replica sets found.
#[derive(Default)]
struct OpenedTopics {
    /// Every topic with its partitions, a damaged one offline.
    topics: BTreeMap<String, Arc<Topic>>,
    /// The highest epoch of every producer id the logs show.
    seen_producers: BTreeMap<i64, i32>,
    /// Partitions whose leader or epoch the logs moved past the metadata.
    epoch_changes: Vec<(TopicPartition, BrokerId, i32)>,
}

impl Opening<'_> {
    /// Takes the data directory (creating it) and its lock, loads the
    /// metadata and brings the directory in line with it: finishes
    /// deletions and replica removals a crash interrupted, refuses
    /// partition directories the metadata does not know, persists ids an
    /// older file lacked, and checks that the process may open every
    /// replica.
    fn metadata(&self) -> Result<(DirLock, MetadataStore)> {
        let data_dir = &self.config.data_dir;
        std::fs::create_dir_all(data_dir).map_err(|e| StorageError::io(data_dir, e))?;
        let lock = DirLock::acquire(data_dir)?;
        let metadata_existed = data_dir.join("metadata.json").exists();
        let mut metadata = MetadataStore::load(data_dir)?.with_faults(self.faults.clone());
        finish_pending_deletions(data_dir, &mut metadata)?;
        crate::reassignments::finish_replica_removals(data_dir, &mut metadata)?;
        check_no_unknown_partitions(data_dir, &metadata, metadata_existed)?;
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
        Ok((lock, metadata))
    }

    /// Opens the replica set of every partition the metadata lists.
    fn topics(
        &self,
        metadata: &MetadataStore,
        identities: &ProducerIdentityStore,
    ) -> Result<OpenedTopics> {
        let mut opened = OpenedTopics::default();
        for meta in metadata.topics() {
            let mut partitions = Vec::with_capacity(meta.partitions.len());
            for p in &meta.partitions {
                partitions.push(self.partition(&mut opened, meta, p, identities)?);
            }
            opened.topics.insert(
                meta.name.clone(),
                Arc::new(Topic::new(meta.clone(), partitions)),
            );
        }
        Ok(opened)
    }

    /// Opens partition `p` of `topic`, noting in `opened` the producers
    /// its logs show and a leadership its logs moved on. A partition whose
    /// data is gone or damaged opens offline (the broker starts without
    /// it); a transient failure (no space, no file descriptor) refuses the
    /// start instead, since retrying with the resource back opens it fine.
    fn partition(
        &self,
        opened: &mut OpenedTopics,
        topic: &TopicMeta,
        p: &PartitionMeta,
        identities: &ProducerIdentityStore,
    ) -> Result<Arc<PartitionSlot>> {
        let tp = TopicPartition::new(&topic.name, p.partition);
        let now_ms = || self.clock.now_ms();
        if let Some(cause) = missing_replica_dirs(&self.config.data_dir, &tp, p) {
            tracing::error!(partition = %tp, cause, "partition damaged: opened offline");
            return Ok(Arc::new(PartitionSlot::damaged_at_open(
                tp,
                cause,
                now_ms(),
            )));
        }
        let mut set = match self.replica_set(&topic.config, &tp, p) {
            Ok(set) => set,
            Err(e) if reach(&e, Access::Read) == Some(Reach::Partition) => {
                tracing::error!(
                    partition = %tp,
                    cause = %e,
                    "partition damaged: opened offline; every other partition serves"
                );
                let cause = e.to_string();
                return Ok(Arc::new(PartitionSlot::damaged_at_open(
                    tp,
                    cause,
                    now_ms(),
                )));
            }
            Err(e) => return Err(e),
        };
        for (id, epoch) in set.producer_epochs() {
            note_producer(&mut opened.seen_producers, id, epoch);
        }
        if (set.leader_id(), set.leader_epoch()) != (p.leader_id, p.leader_epoch) {
            opened
                .epoch_changes
                .push((tp.clone(), set.leader_id(), set.leader_epoch()));
        }
        for (_, identity) in identities.identities() {
            // Re-register every known producer epoch so zombies stay
            // fenced after a restart.
            let _ = set.register_producer(identity.producer_id, identity.epoch);
        }
        Ok(Arc::new(PartitionSlot::new(tp, set, now_ms())))
    }

    /// Opens the replica set of partition `p` as the metadata places it,
    /// resuming a reassignment it records.
    fn replica_set(
        &self,
        topic_config: &TopicConfig,
        tp: &TopicPartition,
        p: &PartitionMeta,
    ) -> Result<PartitionReplicaSet> {
        let assignment = PartitionAssignment {
            replicas: p.replicas.clone(),
            leader_id: p.leader_id,
            leader_epoch: p.leader_epoch,
        };
        let mut set = PartitionReplicaSet::open(
            &self.config.data_dir,
            tp.clone(),
            assignment,
            replication_config(self.config, topic_config, self.faults),
            self.clock.clone(),
        )?;
        if let Some(r) = crate::reassignments::recorded_reassignment(p) {
            set.restore_reassignment(r)?;
        }
        Ok(set)
    }

    /// Opens the group coordinator over the offsets log.
    fn groups(&self) -> Result<GroupCoordinator> {
        let config = self.config;
        let group_config = GroupConfig {
            session_timeout_ms: config.group_session_timeout_ms,
            min_session_timeout_ms: config.group_min_session_timeout_ms,
            max_session_timeout_ms: config.group_max_session_timeout_ms,
            max_group_size: config.group_max_size,
            offsets_retention_ms: config.offsets_retention_ms,
            initial_rebalance_delay_ms: config.group_initial_rebalance_delay_ms,
            // Member ids made after a restart must never equal ids of
            // before: a client that still holds an old id would take
            // over a newcomer's place.
            member_id_salt: uuid::Uuid::new_v4().simple().to_string(),
            offsets_log: log_config(config, None, self.faults),
            ..GroupConfig::default()
        };
        let offsets_dir = config.data_dir.join(format!("{OFFSETS_TOPIC}-0"));
        Ok(GroupCoordinator::open(
            &offsets_dir,
            group_config,
            self.clock.clone(),
        )?)
    }

    /// Opens the transaction coordinator over its journal: the coordinator
    /// and the plans that complete what a crash left in a Prepare state.
    fn transactions(&self) -> Result<mk_txn::Recovered> {
        let txn_config = TxnConfig {
            transaction_timeout_ms: self.config.transaction_timeout_ms,
            faults: Arc::new(mk_txn::JournalFaults::with_storage(self.faults.clone())),
            max_transaction_timeout_ms: self.config.max_transaction_timeout_ms,
            ..TxnConfig::default()
        };
        let journal = self.config.data_dir.join(mk_txn::JOURNAL_FILE_NAME);
        Ok(TransactionCoordinator::open(
            &journal,
            txn_config,
            self.clock.clone(),
        )?)
    }
}

/// Why partition `p` cannot open, if a replica directory is missing.
/// Every replica directory exists from the partition's creation on: a
/// missing one lost its data, and opening it would silently start an empty
/// log in its place. The one exception is an adding replica of a pending
/// move, which a crash may have left uncreated: it starts empty and
/// catches up as it would have anyway.
fn missing_replica_dirs(
    data_dir: &std::path::Path,
    tp: &TopicPartition,
    p: &PartitionMeta,
) -> Option<String> {
    let missing: Vec<String> = p
        .replicas
        .iter()
        .filter(|b| !p.adding_replicas.contains(b))
        .map(|b| mk_replication::replica_dir(data_dir, *b, tp))
        .filter(|d| !d.exists())
        .map(|d| d.display().to_string())
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "replica directories are missing ({}): their data is gone; restore them \
             from a backup, or delete the topic to start it again empty",
            missing.join(", ")
        )
    })
}

/// Records that producer `id` is known at `epoch` (keeping the highest).
fn note_producer(seen: &mut BTreeMap<i64, i32>, id: i64, epoch: i32) {
    let e = seen.entry(id).or_insert(epoch);
    *e = (*e).max(epoch);
}
