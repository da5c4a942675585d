//! Read-only views of the whole cluster for operators.

use crate::cluster::BrokerCluster;
use crate::config::BrokerId;
use crate::error::Result;
use crate::topics::PartitionInfo;
use mk_core::TopicPartition;

/// `describe_cluster`: brokers and every partition's live state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterDescription {
    pub brokers: Vec<BrokerId>,
    pub partitions: Vec<PartitionInfo>,
}

/// Counters of the core (adapters add their own, e.g. connections).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterStats {
    pub uptime_ms: i64,
    pub topics: usize,
    pub partitions: usize,
    pub groups: usize,
    pub transactions: usize,
    /// Sum of the leaders' log end offsets.
    pub records: i64,
    /// Bytes of every replica's logs and indexes.
    pub log_bytes: u64,
    pub owned_tasks: usize,
    /// Partitions offline because of damage (see `health`).
    pub damaged_partitions: usize,
    /// True while writes fail because the disk is full.
    pub disk_full: bool,
}

impl BrokerCluster {
    /// The bytes of each partition's leader log (segments and indexes), for
    /// operators' partition-size metrics.
    pub fn partition_log_bytes(&self) -> Result<Vec<(TopicPartition, u64)>> {
        self.check_running()?;
        let mut sizes = Vec::new();
        for slot in self.all_slots() {
            self.read_slot(&slot, |set| {
                sizes.push((set.topic_partition().clone(), set.leader_log().size_bytes()));
                Ok(())
            })?;
        }
        sizes.sort();
        Ok(sizes)
    }

    pub fn describe_cluster(&self) -> Result<ClusterDescription> {
        Ok(ClusterDescription {
            brokers: self.config.broker_ids.clone(),
            partitions: self.describe_partitions()?,
        })
    }

    pub fn stats(&self) -> Result<ClusterStats> {
        self.check_running()?;
        let mut partitions = 0;
        let mut records = 0;
        let mut log_bytes = 0;
        let mut damaged_partitions = 0;
        for slot in self.all_slots() {
            partitions += 1;
            if slot.damage().is_some() {
                damaged_partitions += 1;
                continue;
            }
            self.read_slot(&slot, |set| {
                records += set.log_end_offset();
                for b in set.replicas().to_vec() {
                    log_bytes += set.replica_log(b).map(|l| l.size_bytes()).unwrap_or(0);
                }
                Ok(())
            })?;
        }
        Ok(ClusterStats {
            uptime_ms: self.uptime_ms(),
            topics: self.list_topics()?.len(),
            partitions,
            groups: self.list_groups()?.len(),
            transactions: self.list_transactions()?.len(),
            records,
            log_bytes,
            owned_tasks: self.owned_tasks(),
            damaged_partitions,
            disk_full: self.health().disk_full.is_some(),
        })
    }
}
