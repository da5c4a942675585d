//! Topic administration: create, describe, list, partition metadata.

use crate::cluster::{BrokerCluster, INTERNAL_TOPICS, PartitionSlot, Topic, replication_config};
use crate::config::{BrokerId, TopicConfig, TopicConfigOverrides};
use crate::error::{ClusterError, Result};
use mk_core::TopicPartition;
use mk_replication::PartitionReplicaSet;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Everything an operator wants to know about one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    pub topic: String,
    pub partition: u32,
    pub leader_id: BrokerId,
    pub leader_epoch: i32,
    pub replicas: Vec<BrokerId>,
    pub isr: Vec<BrokerId>,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    /// Each replica's log end offset.
    pub log_end_offsets: BTreeMap<BrokerId, i64>,
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
        isr: set.isr(),
        high_watermark: hw,
        last_stable_offset: mk_txn::last_stable_offset(
            hw,
            set.leader_log().first_unstable_offset(),
        ),
        log_start_offset: set.log_start_offset(),
        log_end_offset: set.log_end_offset(),
        log_end_offsets,
    }
}

impl BrokerCluster {
    /// Creates a topic with the cluster's default topic configuration.
    pub fn create_topic(
        &self,
        name: &str,
        partitions: u32,
        replication_factor: usize,
    ) -> Result<()> {
        self.create_topic_with_config(
            name,
            partitions,
            replication_factor,
            self.config.default_topic_config.clone(),
        )
    }

    /// Creates a topic with the cluster's default topic configuration
    /// except for the settings `overrides` names.
    pub fn create_topic_with_overrides(
        &self,
        name: &str,
        partitions: u32,
        replication_factor: usize,
        overrides: &TopicConfigOverrides,
    ) -> Result<()> {
        self.create_topic_with_config(
            name,
            partitions,
            replication_factor,
            overrides.apply(self.config.default_topic_config.clone()),
        )
    }

    /// Creates a topic: validates the request (INVALID_REQUEST), refuses an
    /// existing name (TOPIC_ALREADY_EXISTS), creates every replica log,
    /// persists the metadata, and only then publishes the topic, so no
    /// half-created topic is ever visible.
    pub fn create_topic_with_config(
        &self,
        name: &str,
        partitions: u32,
        replication_factor: usize,
        config: TopicConfig,
    ) -> Result<()> {
        self.check_running()?;
        mk_core::validate_topic_name(name).map_err(ClusterError::InvalidRequest)?;
        if INTERNAL_TOPICS.contains(&name) {
            return Err(ClusterError::InvalidRequest(format!(
                "{name:?} is an internal topic name and cannot be created"
            )));
        }
        if partitions == 0 {
            return Err(ClusterError::InvalidRequest(
                "partitions must be > 0".into(),
            ));
        }
        if partitions > 10_000 {
            return Err(ClusterError::InvalidRequest(format!(
                "partitions must be <= 10000, got {partitions}"
            )));
        }
        let brokers = self.config.broker_ids.len();
        if replication_factor == 0 || replication_factor > brokers {
            return Err(ClusterError::InvalidRequest(format!(
                "replication_factor must be between 1 and the number of brokers ({brokers}), got {replication_factor}"
            )));
        }
        config.validate()?;
        // The metadata lock serializes creations, so two creators of one
        // name cannot both pass the existence check.
        let mut metadata = self.metadata.lock().expect("metadata lock");
        if self.topics.read().expect("topics lock").contains_key(name) {
            return Err(ClusterError::TopicAlreadyExists(format!(
                "topic {name:?} already exists"
            )));
        }
        let meta = self.new_topic_meta(name, partitions, replication_factor, config);
        let mut slots = Vec::with_capacity(meta.partitions.len());
        for p in &meta.partitions {
            let tp = TopicPartition::new(name, p.partition);
            let set = self.guard(PartitionReplicaSet::create(
                &self.config.data_dir,
                tp.clone(),
                p.replicas.clone(),
                replication_config(&self.config, &meta.config, &self.faults),
                self.clock.clone(),
            ))?;
            slots.push(Arc::new(PartitionSlot::new(tp, set, self.clock.now_ms())));
        }
        self.guard(metadata.put(meta.clone()))?;
        self.topics.write().expect("topics lock").insert(
            name.to_string(),
            Arc::new(Topic {
                meta,
                partitions: slots,
            }),
        );
        tracing::info!(
            topic = name,
            partitions,
            replication_factor,
            "topic created"
        );
        Ok(())
    }

    /// User topics, sorted by name (internal topics are never listed).
    pub fn list_topics(&self) -> Result<Vec<String>> {
        self.check_running()?;
        Ok(self
            .topics
            .read()
            .expect("topics lock")
            .keys()
            .cloned()
            .collect())
    }

    /// A topic's configuration and the live state of every partition.
    pub fn describe_topic(&self, name: &str) -> Result<TopicDescription> {
        self.check_running()?;
        let topic = self.topic(name)?;
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for slot in &topic.partitions {
            partitions.push(self.read_slot(slot, |set| Ok(partition_info(set)))?);
        }
        Ok(TopicDescription {
            name: topic.meta.name.clone(),
            config: topic.meta.config.clone(),
            partitions,
        })
    }

    /// The live state of one partition.
    pub fn partition_metadata(&self, tp: &TopicPartition) -> Result<PartitionInfo> {
        self.read_partition(tp, |set| Ok(partition_info(set)))
    }

    /// How many partitions a topic has.
    pub fn partition_count(&self, topic: &str) -> Result<u32> {
        self.check_running()?;
        Ok(self.topic(topic)?.partitions.len() as u32)
    }

    /// Every partition of every topic (for `describe_cluster`).
    pub fn describe_partitions(&self) -> Result<Vec<PartitionInfo>> {
        self.check_running()?;
        let mut out = Vec::new();
        for slot in self.all_slots() {
            out.push(self.read_slot(&slot, |set| Ok(partition_info(set)))?);
        }
        Ok(out)
    }
}
