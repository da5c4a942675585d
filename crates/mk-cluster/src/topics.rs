//! Topic administration: create (also automatically, for Kafka clients),
//! describe, list, delete, add partitions, alter configs, partition
//! metadata.
//!
//! Every change follows one order so that no half-done change is ever
//! visible: files first, then metadata.json (atomically), then the
//! in-memory topic map. Deletion is the reverse and crash-safe: the topic
//! leaves metadata.json (recorded as a pending deletion) before any file is
//! removed, and the next open finishes whatever a crash interrupted.

use crate::cluster::{BrokerCluster, INTERNAL_TOPICS, replication_config};
use crate::config::{BrokerId, ConfigChange, TopicConfig, TopicConfigEntry, TopicConfigOverrides};
use crate::error::{ClusterError, Result, TopicError};
use crate::metadata::{MetadataStore, PendingDeletion, TopicId, TopicMeta, place_replicas};
use crate::slot::{PartitionSlot, Topic};
use mk_core::TopicPartition;
use mk_replication::PartitionReplicaSet;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Topic administration and metadata: `cluster.topics().create(..)`.
#[derive(Debug, Clone, Copy)]
pub struct Topics<'a> {
    pub(crate) cluster: &'a BrokerCluster,
}

impl BrokerCluster {
    /// The topics role (see [`Topics`]).
    pub fn topics(&self) -> Topics<'_> {
        Topics { cluster: self }
    }
}

/// The most partitions one topic may have.
pub const MAX_PARTITIONS: u32 = 10_000;

/// Everything an operator wants to know about one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    pub topic: String,
    pub partition: u32,
    pub leader_id: BrokerId,
    pub leader_epoch: i32,
    pub replicas: Vec<BrokerId>,
    /// The replicas a move in progress adds (a subset of `replicas`;
    /// empty when no move is pending). They do not count towards the
    /// replication factor until the move completes.
    pub adding_replicas: Vec<BrokerId>,
    pub isr: Vec<BrokerId>,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    /// Each replica's log end offset.
    pub log_end_offsets: BTreeMap<BrokerId, i64>,
    /// Why the partition is offline, when damage took it offline; every
    /// operation on it then answers STORAGE_ERROR.
    pub damaged: Option<String>,
}

/// A topic with its configuration and partitions (ascending).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicDescription {
    pub name: String,
    pub config: TopicConfig,
    pub partitions: Vec<PartitionInfo>,
}

pub(crate) fn partition_info(set: &PartitionReplicaSet) -> PartitionInfo {
    let tp = set.topic_partition();
    let hw = set.high_watermark();
    let log_end_offsets = set
        .replicas()
        .iter()
        .map(|b| (*b, set.replica_log_end_offset(*b).unwrap_or(-1)))
        .collect();
    PartitionInfo {
        topic: tp.topic.clone(),
        partition: tp.partition,
        leader_id: set.leader_id(),
        leader_epoch: set.leader_epoch(),
        replicas: set.replicas().to_vec(),
        adding_replicas: set
            .reassignment()
            .map(mk_replication::Reassignment::adding)
            .unwrap_or_default(),
        isr: set.isr(),
        high_watermark: hw,
        last_stable_offset: mk_txn::last_stable_offset(
            hw,
            set.leader_log().first_unstable_offset(),
        ),
        log_start_offset: set.log_start_offset(),
        log_end_offset: set.log_end_offset(),
        log_end_offsets,
        damaged: None,
    }
}

/// What is known of a damaged partition: its live state if its replicas
/// are open, else its placement from the metadata with unknown (-1)
/// offsets.
fn damaged_info(slot: &PartitionSlot, meta: &TopicMeta, cause: &str) -> PartitionInfo {
    // A partition that failed (not merely damaged) has a state in memory
    // nobody may trust, and maybe a poisoned lock: only its placement is
    // told.
    let failed = matches!(slot.damaged.get(), Some(crate::slot::Offline::Failed(_)));
    if !failed
        && let Ok(guard) = slot.set.read()
        && let Some(set) = guard.as_ref()
    {
        let mut info = partition_info(set);
        info.damaged = Some(cause.to_string());
        return info;
    }
    let p = meta.partitions.get(slot.tp.partition as usize);
    let replicas = p.map(|p| p.replicas.clone()).unwrap_or_default();
    PartitionInfo {
        topic: slot.tp.topic.clone(),
        partition: slot.tp.partition,
        leader_id: p.map_or(-1, |p| p.leader_id),
        leader_epoch: p.map_or(-1, |p| p.leader_epoch),
        log_end_offsets: replicas.iter().map(|b| (*b, -1)).collect(),
        replicas,
        adding_replicas: p.map(|p| p.adding_replicas.clone()).unwrap_or_default(),
        isr: Vec::new(),
        high_watermark: -1,
        last_stable_offset: -1,
        log_start_offset: -1,
        log_end_offset: -1,
        damaged: Some(cause.to_string()),
    }
}

impl Topics<'_> {
    /// Creates a topic with the cluster's default topic configuration.
    pub fn create(self, name: &str, partitions: u32, replication_factor: usize) -> Result<()> {
        self.create_with_config(
            name,
            partitions,
            replication_factor,
            self.cluster.config.default_topic_config.clone(),
        )
    }

    /// Creates a topic with the cluster's default topic configuration
    /// except for the settings `overrides` names (any of Kafka's topic
    /// configs; one the catalog refuses is INVALID_CONFIG and nothing is
    /// created).
    pub fn create_with_overrides(
        self,
        name: &str,
        partitions: u32,
        replication_factor: usize,
        overrides: &TopicConfigOverrides,
    ) -> Result<()> {
        let config = overrides.resolve(self.cluster.config.default_topic_config.clone())?;
        self.create_with_config(name, partitions, replication_factor, config)
    }

    /// Creates a topic: validates the request (INVALID_REQUEST), refuses an
    /// existing name (TOPIC_ALREADY_EXISTS), creates every replica log,
    /// persists the metadata, and only then publishes the topic, so no
    /// half-created topic is ever visible.
    pub fn create_with_config(
        self,
        name: &str,
        partitions: u32,
        replication_factor: usize,
        config: TopicConfig,
    ) -> Result<()> {
        self.cluster.check_running()?;
        // The metadata lock serializes creations, so two creators of one
        // name cannot both pass the existence check.
        let mut metadata = self
            .cluster
            .store(&self.cluster.metadata, "metadata store")?;
        self.validate_new(name, partitions, replication_factor, &config)?;
        let meta = self
            .cluster
            .new_topic_meta(name, partitions, replication_factor, config);
        let slots = self.create_partition_files(&mut metadata, &meta, &meta.partitions)?;
        if let Err(e) = metadata.finish_create(meta.clone()) {
            return Err(self.undo_create(&mut metadata, &meta, &meta.partitions, slots, e));
        }
        crate::locks::plain_write(&self.cluster.topics)
            .insert(name.to_string(), Arc::new(Topic::new(meta, slots)));
        tracing::info!(
            topic = name,
            partitions,
            replication_factor,
            "topic created"
        );
        Ok(())
    }

    /// Every check `create_with_config` makes, without creating
    /// anything (Kafka's CreateTopics with validate_only): names
    /// (INVALID_TOPIC), counts (INVALID_PARTITIONS,
    /// INVALID_REPLICATION_FACTOR), config (INVALID_CONFIG), existence
    /// (TOPIC_ALREADY_EXISTS).
    pub fn validate_new(
        self,
        name: &str,
        partitions: u32,
        replication_factor: usize,
        config: &TopicConfig,
    ) -> Result<()> {
        self.cluster.check_running()?;
        mk_core::validate_topic_name(name).map_err(TopicError::InvalidName)?;
        if INTERNAL_TOPICS.contains(&name) {
            return Err(TopicError::InternalName {
                name: name.to_string(),
            }
            .into());
        }
        if partitions == 0 {
            return Err(TopicError::NoPartitions.into());
        }
        if partitions > MAX_PARTITIONS {
            return Err(TopicError::TooManyPartitions {
                asked: partitions,
                max: MAX_PARTITIONS,
            }
            .into());
        }
        let brokers = self.cluster.config.broker_ids.len();
        if replication_factor == 0 || replication_factor > brokers {
            return Err(TopicError::ReplicationFactor {
                asked: replication_factor,
                brokers,
            }
            .into());
        }
        config
            .validate()
            .map_err(ClusterError::into_invalid_config)?;
        if crate::locks::plain_read(&self.cluster.topics).contains_key(name) {
            return Err(TopicError::AlreadyExists {
                topic: name.to_string(),
            }
            .into());
        }
        Ok(())
    }

    /// User topics, sorted by name (internal topics are never listed).
    pub fn list(self) -> Result<Vec<String>> {
        self.cluster.check_running()?;
        Ok(crate::locks::plain_read(&self.cluster.topics)
            .keys()
            .cloned()
            .collect())
    }

    /// A topic's configuration and the live state of every partition
    /// (damaged ones included, marked so).
    pub fn describe(self, name: &str) -> Result<TopicDescription> {
        self.cluster.check_running()?;
        let topic = self.cluster.topic(name)?;
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for slot in &topic.partitions {
            partitions.push(self.slot_info(slot, &topic.meta)?);
        }
        Ok(TopicDescription {
            name: topic.meta.name.clone(),
            config: topic.meta.config.clone(),
            partitions,
        })
    }

    /// Ok if the partition exists (UNKNOWN_TOPIC or UNKNOWN_PARTITION
    /// otherwise), damaged or not; nothing is read.
    pub fn check_partition(self, tp: &TopicPartition) -> Result<()> {
        self.cluster.slot(tp).map(drop)
    }

    /// The live state of one partition.
    pub fn describe_partition(self, tp: &TopicPartition) -> Result<PartitionInfo> {
        self.cluster.check_running()?;
        let topic = self.cluster.topic(&tp.topic)?;
        let slot = self.cluster.slot(tp)?;
        self.slot_info(&slot, &topic.meta)
    }

    /// One partition's state; for a damaged one what is known, marked so.
    fn slot_info(self, slot: &PartitionSlot, meta: &TopicMeta) -> Result<PartitionInfo> {
        match slot.damage() {
            Some(cause) => Ok(damaged_info(slot, meta, cause)),
            None => match self.cluster.read_slot(slot, |set| Ok(partition_info(set))) {
                Err(
                    ClusterError::PartitionDamaged { cause, .. }
                    | ClusterError::PartitionFailed { cause, .. },
                ) => Ok(damaged_info(slot, meta, &cause)),
                other => other,
            },
        }
    }

    /// How many partitions a topic has.
    pub fn partition_count(self, topic: &str) -> Result<u32> {
        self.cluster.check_running()?;
        Ok(self.cluster.topic(topic)?.partition_count())
    }

    /// Every partition of every topic (for `describe_cluster`).
    pub fn describe_partitions(self) -> Result<Vec<PartitionInfo>> {
        self.cluster.check_running()?;
        let topics: Vec<Arc<Topic>> = crate::locks::plain_read(&self.cluster.topics)
            .values()
            .cloned()
            .collect();
        let mut out = Vec::new();
        for t in topics {
            for slot in &t.partitions {
                out.push(self.slot_info(slot, &t.meta)?);
            }
        }
        Ok(out)
    }
}

impl Topics<'_> {
    /// Creates the replica logs of `partitions` of a topic (not yet
    /// published) with every known producer epoch registered, so zombies
    /// stay fenced on new partitions too. Before anything is created it
    /// checks that the replicas fit under the open-file limit and that no
    /// directory of theirs exists, and records the creation in the
    /// metadata as files to remove; if creating fails, what was created is
    /// removed again. So a creation either completes or leaves nothing,
    /// also across a crash, and its failure never fails the broker.
    fn create_partition_files(
        self,
        metadata: &mut MetadataStore,
        meta: &TopicMeta,
        partitions: &[crate::metadata::PartitionMeta],
    ) -> Result<Vec<Arc<PartitionSlot>>> {
        let replicas: u64 = partitions.iter().map(|p| p.replicas.len() as u64).sum();
        crate::resources::check_room_for_replicas(
            replicas,
            &format!(
                "creating {} partition(s) of {:?} with {replicas} replica(s)",
                partitions.len(),
                meta.name
            ),
        )?;
        for p in partitions {
            let tp = TopicPartition::new(&meta.name, p.partition);
            for broker in &p.replicas {
                let dir = mk_replication::replica_dir(&self.cluster.config.data_dir, *broker, &tp);
                if dir.exists() {
                    return Err(mk_storage::StorageError::unusable(
                        &dir,
                        format!(
                            "refusing to create {tp}: this directory already exists and may hold                              data of a topic the metadata does not know; move it away first"
                        ),
                    )
                    .into());
                }
            }
        }
        self.cluster
            .guard(metadata.begin_create(meta, partitions))?;
        let identities: Vec<_> = self
            .cluster
            .store(&self.cluster.identities, "producer identity store")?
            .identities()
            .map(|(_, i)| i)
            .collect();
        let mut slots = Vec::with_capacity(partitions.len());
        for p in partitions {
            let tp = TopicPartition::new(&meta.name, p.partition);
            let created = PartitionReplicaSet::create(
                &self.cluster.config.data_dir,
                tp.clone(),
                p.replicas.clone(),
                replication_config(&self.cluster.config, &meta.config, &self.cluster.faults),
                self.cluster.clock.clone(),
            );
            let mut set = match created {
                Ok(set) => set,
                Err(e) => {
                    return Err(self.undo_create(metadata, meta, partitions, slots, e.into()));
                }
            };
            for identity in &identities {
                let _ = set.register_producer(identity.producer_id, identity.epoch);
            }
            slots.push(Arc::new(PartitionSlot::new(
                tp,
                set,
                self.cluster.clock.now_ms(),
            )));
        }
        Ok(slots)
    }

    /// Takes back a creation that failed with `cause`: closes what was
    /// opened, removes every directory of `partitions` and drops the
    /// removal record. Returns `cause`, which the caller reports as it is
    /// (a failed creation is not a failure of the broker: nothing
    /// acknowledged was at stake). If removing fails, the record stays and
    /// the next open removes the rest.
    fn undo_create(
        self,
        metadata: &mut MetadataStore,
        meta: &TopicMeta,
        partitions: &[crate::metadata::PartitionMeta],
        slots: Vec<Arc<PartitionSlot>>,
        cause: ClusterError,
    ) -> ClusterError {
        for slot in slots {
            if let Some(set) = slot.take_set() {
                set.crash();
            }
        }
        let pending = PendingDeletion {
            name: meta.name.clone(),
            topic_id: meta.topic_id,
            partitions: partitions.to_vec(),
        };
        let undone = remove_topic_files(&self.cluster.config.data_dir, &pending)
            .and_then(|()| metadata.finish_delete(meta.topic_id));
        match undone {
            Ok(()) => {
                tracing::warn!(topic = meta.name, error = %cause, "creation failed and was undone")
            }
            Err(e) => tracing::error!(
                topic = meta.name,
                error = %cause,
                cleanup_error = %e,
                "creation failed and could not be undone; the next open removes what is left"
            ),
        }
        cause
    }

    /// A topic's stable id.
    pub fn id(self, name: &str) -> Result<TopicId> {
        self.cluster.check_running()?;
        Ok(self.cluster.topic(name)?.meta.topic_id)
    }

    /// The codec a topic's `compression.type` stores its batches in,
    /// `None` for `producer` (each batch as its producer compressed it).
    pub fn compression_codec(self, name: &str) -> Result<Option<mk_log::block::Codec>> {
        self.cluster.check_running()?;
        let topic = self.cluster.topic(name)?;
        let broker = self.cluster.broker_defaults();
        Ok(topic.meta.config.compression(&broker).map(|c| c.codec))
    }

    /// The topic with this id, if it exists.
    pub fn name_by_id(self, id: TopicId) -> Result<String> {
        self.cluster.check_running()?;
        crate::locks::plain_read(&self.cluster.topics)
            .values()
            .find(|t| t.meta.topic_id == id)
            .map(|t| t.meta.name.clone())
            .ok_or(ClusterError::UnknownTopicId { id })
    }

    /// Describes a topic, creating it first with the cluster's auto-create
    /// settings when it does not exist, `allow` is true (the client asked
    /// for it) and the cluster enables auto-creation — Kafka's behaviour
    /// for metadata requests. Internal and invalid names are never created.
    pub fn describe_or_auto_create(self, name: &str, allow: bool) -> Result<TopicDescription> {
        match self.describe(name) {
            Err(e) if e.code() == mk_core::ErrorCode::UnknownTopic => {
                if !(allow && self.cluster.config.auto_create_topics) {
                    return Err(e);
                }
                let rf = self
                    .cluster
                    .config
                    .auto_create_replication_factor
                    .min(self.cluster.config.broker_ids.len());
                match self.create(name, self.cluster.config.auto_create_partitions, rf) {
                    Ok(()) => tracing::info!(topic = name, "topic auto-created"),
                    // Another client created it first: fine.
                    Err(e) if e.code() == mk_core::ErrorCode::TopicAlreadyExists => {}
                    Err(e) => return Err(e),
                }
                self.describe(name)
            }
            other => other,
        }
    }

    /// A topic's settings as an operator sees them: every key with its
    /// value (the cluster's segment size where the topic sets none) and
    /// whether it is the cluster default.
    pub fn describe_config(self, name: &str) -> Result<Vec<TopicConfigEntry>> {
        let config = self.describe(name)?.config;
        Ok(config.entries(
            &self.cluster.config.default_topic_config,
            self.cluster.config.segment_max_bytes,
        ))
    }

    /// A topic's configs as Kafka's DescribeConfigs reports them: every
    /// catalog config with its effective value, source and layers.
    pub fn described_configs(self, name: &str) -> Result<Vec<crate::DescribedConfig>> {
        let config = self.describe(name)?.config;
        Ok(config.described(
            &self.cluster.broker_defaults(),
            self.cluster.config.segment_max_bytes,
        ))
    }

    /// Kafka's IncrementalAlterConfigs of one topic: SET, DELETE, APPEND
    /// and SUBTRACT, resolved against the topic's config under the
    /// metadata lock, then applied as `alter_config` does (all or nothing,
    /// validated, persisted).
    pub fn alter_config_incremental(
        self,
        name: &str,
        changes: &[crate::IncrementalChange],
        validate_only: bool,
    ) -> Result<TopicConfig> {
        let segment_bytes = self.cluster.config.segment_max_bytes;
        self.alter_resolved(name, validate_only, |topic| {
            topic
                .meta
                .config
                .resolve_incremental(changes, segment_bytes)
        })
    }

    /// Deletes a topic for real: it disappears from listings and metadata
    /// at once, its replica logs are closed and their directories removed,
    /// and every group's committed offsets for it are deleted. A name can
    /// be created again afterwards and starts empty (with a new topic id).
    pub fn delete(self, name: &str) -> Result<()> {
        self.cluster.check_running()?;
        if INTERNAL_TOPICS.contains(&name) {
            return Err(TopicError::InternalTopic {
                name: name.to_string(),
            }
            .into());
        }
        // A flush cycle may be working on the partitions' files without
        // their locks (steps.rs): wait for it and keep it out while the
        // files go. Taken before the metadata lock, as the flush does.
        // Then the partitions' own locks, still before the metadata lock
        // (promotion and moves persist under a partition's lock). Partitions
        // added meanwhile (CreatePartitions) send it round again.
        let mut topic: Arc<Topic>;
        let (_files, mut sets, mut metadata) = loop {
            topic = self.cluster.topic(name)?;
            let files: Vec<_> = topic.partitions.iter().map(|s| s.hold_files()).collect();
            let sets: Vec<_> = topic
                .partitions
                .iter()
                .map(|s| s.lock_for_removal())
                .collect();
            let metadata = self
                .cluster
                .store(&self.cluster.metadata, "metadata store")?;
            let now = self.cluster.topic(name)?;
            if now.partitions.len() == topic.partitions.len() {
                break (files, sets, metadata);
            }
        };
        let pending = self.cluster.guard(metadata.begin_delete(name))?;
        crate::locks::plain_write(&self.cluster.topics).remove(name);
        for (slot, set) in topic.partitions.iter().zip(sets.iter_mut()) {
            // The files are about to be removed: nothing needs flushing.
            if let Some(set) = set.take() {
                set.crash();
            }
            slot.hw_moved.notify_waiters();
        }
        drop(sets);
        {
            let mut groups = self
                .cluster
                .store(&self.cluster.groups, "group coordinator")?;
            if let Some(g) = groups.as_mut() {
                let r = g.delete_topic_offsets(name);
                drop(groups);
                self.cluster.guard(r)?;
            }
        }
        self.cluster
            .guard(remove_topic_files(&self.cluster.config.data_dir, &pending))?;
        self.cluster
            .guard(metadata.finish_delete(pending.topic_id))?;
        tracing::info!(topic = name, topic_id = %pending.topic_id, "topic deleted");
        Ok(())
    }

    /// Grows a topic to `total` partitions (Kafka's CreatePartitions). The
    /// count can only grow (INVALID_PARTITIONS otherwise); new partitions
    /// get the topic's replication factor and the placement rule of spec
    /// 00. Keyed records may map to other partitions afterwards, as in
    /// Kafka.
    pub fn create_partitions(self, name: &str, total: u32) -> Result<()> {
        let mut metadata = self
            .cluster
            .store(&self.cluster.metadata, "metadata store")?;
        self.validate_create_partitions(name, total)?;
        let topic = self.cluster.topic(name)?;
        let current = topic.partition_count();
        let rf = topic.meta.partitions[0].replicas.len();
        let added: Vec<_> = (current..total)
            .map(|p| place_replicas(&self.cluster.config.broker_ids, p, rf))
            .collect();
        let slots = self.create_partition_files(&mut metadata, &topic.meta, &added)?;
        let mut meta = topic.meta.clone();
        meta.partitions.extend(added.iter().cloned());
        if let Err(e) = metadata.finish_create(meta.clone()) {
            return Err(self.undo_create(&mut metadata, &meta, &added, slots, e));
        }
        let mut partitions = topic.partitions.clone();
        partitions.extend(slots);
        crate::locks::plain_write(&self.cluster.topics)
            .insert(name.to_string(), Arc::new(Topic::new(meta, partitions)));
        tracing::info!(topic = name, from = current, to = total, "partitions added");
        Ok(())
    }

    /// The checks of `create_partitions` without changing anything.
    pub fn validate_create_partitions(self, name: &str, total: u32) -> Result<()> {
        self.cluster.check_running()?;
        let current = self.cluster.topic(name)?.partition_count();
        if total <= current {
            return Err(TopicError::CannotShrink {
                topic: name.to_string(),
                current,
                asked: total,
            }
            .into());
        }
        if total > MAX_PARTITIONS {
            return Err(TopicError::TooManyPartitions {
                asked: total,
                max: MAX_PARTITIONS,
            }
            .into());
        }
        Ok(())
    }

    /// Applies config changes to a topic (Kafka's IncrementalAlterConfigs):
    /// all or nothing, validated first (INVALID_CONFIG), persisted, then in
    /// force — retention and compaction read the new values on their next
    /// run, a new `segment.bytes` applies to the next roll. With `validate_only`
    /// nothing changes. Returns the resulting config.
    pub fn alter_config(
        self,
        name: &str,
        changes: &[ConfigChange],
        validate_only: bool,
    ) -> Result<TopicConfig> {
        self.alter_resolved(name, validate_only, |_| Ok(changes.to_vec()))
    }

    /// Alters the topic's config by the changes `resolve` makes of the
    /// topic, all under the metadata lock.
    fn alter_resolved(
        self,
        name: &str,
        validate_only: bool,
        resolve: impl FnOnce(&Topic) -> Result<Vec<ConfigChange>>,
    ) -> Result<TopicConfig> {
        self.cluster.check_running()?;
        let _alter = crate::locks::plain(&self.cluster.topic_alters);
        let metadata = self
            .cluster
            .store(&self.cluster.metadata, "metadata store")?;
        let topic = self.cluster.topic(name)?;
        let changes = resolve(&topic)?;
        self.alter_locked(metadata, &topic, &changes, validate_only)
    }

    fn alter_locked(
        self,
        mut metadata: std::sync::MutexGuard<'_, crate::metadata::MetadataStore>,
        topic: &Arc<Topic>,
        changes: &[ConfigChange],
        validate_only: bool,
    ) -> Result<TopicConfig> {
        let name = topic.meta.name.as_str();
        let config = topic
            .meta
            .config
            .with_changes(changes, &self.cluster.config.default_topic_config)?;
        if validate_only || config == topic.meta.config {
            return Ok(config);
        }
        let mut meta = topic.meta.clone();
        meta.config = config.clone();
        self.cluster.guard(metadata.put(meta.clone()))?;
        crate::locks::plain_write(&self.cluster.topics).insert(
            name.to_string(),
            Arc::new(Topic::new(meta, topic.partitions.clone())),
        );
        // The partitions' locks come before the metadata lock (promotion
        // and moves persist under a partition's lock), so the new segment
        // size is applied after it is released; `topic_alters`,
        // still held by the caller, keeps another change from applying in
        // between.
        drop(metadata);
        let segment = config
            .segment_bytes
            .unwrap_or(self.cluster.config.segment_max_bytes);
        // A damaged partition gets the size from the metadata when it is
        // opened again.
        for slot in topic.partitions.iter().filter(|s| s.damage().is_none()) {
            self.cluster
                .with_slot(slot, |set| Ok(set.set_segment_max_bytes(segment)?))?;
        }
        tracing::info!(topic = name, ?changes, "topic config altered");
        // Turning unclean elections on gives the topic's leaderless
        // partitions a leader at once, as Kafka's controller does.
        self.cluster.brokers().elect_offline_uncleanly(Some(name))?;
        Ok(config)
    }
}

/// Removes every replica directory of a deleted topic (missing ones are
/// fine: an earlier attempt may have removed them).
fn remove_topic_files(data_dir: &Path, deletion: &PendingDeletion) -> Result<()> {
    for p in &deletion.partitions {
        let tp = TopicPartition::new(&deletion.name, p.partition);
        if let Err(e) = mk_replication::remove_replica_dirs(data_dir, &tp, &p.replicas) {
            tracing::error!(topic = deletion.name, error = %e, "cannot remove a deleted topic's files");
            return Err(e.into());
        }
    }
    Ok(())
}

/// Finishes deletions a crash interrupted (called on open, before any
/// partition is opened).
pub(crate) fn finish_pending_deletions(
    data_dir: &Path,
    metadata: &mut MetadataStore,
) -> Result<()> {
    for d in metadata.pending_deletions().to_vec() {
        remove_topic_files(data_dir, &d)?;
        metadata.finish_delete(d.topic_id)?;
        tracing::info!(topic = d.name, topic_id = %d.topic_id, "finished deleting topic");
    }
    Ok(())
}

/// Refuses to open a data directory holding partition directories that
/// the metadata does not know (after pending deletions and creations were
/// finished): their data would be silently hidden, and re-creating the
/// topic would serve it again. The message names them and what to do.
pub(crate) fn check_no_unknown_partitions(
    data_dir: &Path,
    metadata: &MetadataStore,
    metadata_existed: bool,
) -> Result<()> {
    let known: std::collections::BTreeSet<(BrokerId, String)> = metadata
        .topics()
        .flat_map(|t| {
            t.partitions.iter().flat_map(move |p| {
                let dir = TopicPartition::new(&t.name, p.partition).dir_name();
                p.replicas.iter().map(move |b| (*b, dir.clone()))
            })
        })
        .collect();
    let mut unknown = Vec::new();
    let entries =
        std::fs::read_dir(data_dir).map_err(|e| mk_storage::StorageError::io(data_dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| mk_storage::StorageError::io(data_dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(broker) = name
            .strip_prefix("broker-")
            .and_then(|b| b.parse::<BrokerId>().ok())
        else {
            continue;
        };
        let dir = entry.path();
        if !dir.is_dir() {
            continue;
        }
        for part in std::fs::read_dir(&dir).map_err(|e| mk_storage::StorageError::io(&dir, e))? {
            let part = part.map_err(|e| mk_storage::StorageError::io(&dir, e))?;
            let pname = part.file_name().to_string_lossy().into_owned();
            let looks_like_partition = pname
                .rsplit_once('-')
                .is_some_and(|(t, p)| !t.is_empty() && p.parse::<u32>().is_ok());
            if part.path().is_dir()
                && looks_like_partition
                && !known.contains(&(broker, pname.clone()))
            {
                unknown.push(format!("{name}/{pname}"));
            }
        }
    }
    if unknown.is_empty() {
        return Ok(());
    }
    unknown.sort();
    let shown = unknown
        .iter()
        .take(5)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    let more = match unknown.len() {
        n if n > 5 => format!(" and {} more", n - 5),
        _ => String::new(),
    };
    let why = if metadata_existed {
        "metadata.json does not list them"
    } else {
        "metadata.json is missing"
    };
    Err(mk_storage::StorageError::unusable(
        data_dir,
        format!(
            "the data directory holds partition directories that the metadata does not know              ({shown}{more}): {why}. The broker refuses to start so that this data is neither              hidden nor served again under a topic created with the same name. To recover,              restore metadata.json from a backup; to discard the data, move these directories              out of the data directory"
        ),
    )
    .into())
}
