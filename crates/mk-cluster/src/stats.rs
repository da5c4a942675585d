//! Read-only views of the whole cluster for operators.

use crate::cluster::BrokerCluster;
use crate::config::BrokerId;
use crate::connection_stats::{ConnectionStats, ProtocolStats};
use crate::error::Result;
use crate::topics::PartitionInfo;
use mk_core::TopicPartition;
use std::sync::Arc;

/// Read-only views of the whole cluster for operators: `cluster.views().stats()`.
#[derive(Debug, Clone, Copy)]
pub struct OperatorViews<'a> {
    pub(crate) cluster: &'a BrokerCluster,
}

impl BrokerCluster {
    /// The views role (see [`OperatorViews`]).
    pub fn views(&self) -> OperatorViews<'_> {
        OperatorViews { cluster: self }
    }
}

/// `describe_cluster`: brokers and every partition's live state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterDescription {
    pub brokers: Vec<BrokerId>,
    /// The hosted brokers an operator took offline (`brokers.rs`): a
    /// partition whose leader is one of them has no leader clients can use.
    pub offline_brokers: Vec<BrokerId>,
    pub partitions: Vec<PartitionInfo>,
}

/// Counters of the core, and what every listener reported to it.
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
    /// Partitions offline because of damage or a failure (see `health`).
    pub damaged_partitions: usize,
    /// True while writes fail because the disk is full.
    pub disk_full: bool,
    /// Listeners, connections and requests of each protocol, in
    /// `Protocol::ALL` order.
    pub protocols: Vec<ProtocolStats>,
}

impl<'a> OperatorViews<'a> {
    /// Where the listeners count their connections and requests (both
    /// listeners update it; `stats` reads it).
    pub fn connection_stats(self) -> &'a Arc<ConnectionStats> {
        &self.cluster.connection_stats
    }

    /// The bytes of each partition's leader log (segments and indexes), for
    /// operators' partition-size metrics. Damaged partitions are left out
    /// (their files are not trusted), so one of them never hides the size
    /// of the others.
    pub fn partition_log_bytes(self) -> Result<Vec<(TopicPartition, u64)>> {
        self.cluster.check_running()?;
        let mut sizes = Vec::new();
        for slot in self.cluster.all_slots() {
            if slot.damage().is_some() {
                continue;
            }
            let read = self.cluster.read_slot(&slot, |set| {
                sizes.push((set.topic_partition().clone(), set.leader_log().size_bytes()));
                Ok(())
            });
            // Found offline just now (damage, a poisoned lock): left out too.
            if let Err(e) = read
                && !e.is_partition_offline()
            {
                return Err(e);
            }
        }
        sizes.sort();
        Ok(sizes)
    }

    pub fn describe_cluster(self) -> Result<ClusterDescription> {
        Ok(ClusterDescription {
            brokers: self.cluster.config.broker_ids.clone(),
            offline_brokers: self
                .cluster
                .offline_brokers
                .borrow()
                .iter()
                .copied()
                .collect(),
            partitions: self.cluster.topics().describe_partitions()?,
        })
    }

    pub fn stats(self) -> Result<ClusterStats> {
        self.cluster.check_running()?;
        let mut partitions = 0;
        let mut records = 0;
        let mut log_bytes = 0;
        let mut damaged_partitions = 0;
        for slot in self.cluster.all_slots() {
            partitions += 1;
            if slot.damage().is_some() {
                damaged_partitions += 1;
                continue;
            }
            let read = self.cluster.read_slot(&slot, |set| {
                records += set.log_end_offset();
                for b in set.replicas().to_vec() {
                    log_bytes += set.replica_log(b).map(|l| l.size_bytes()).unwrap_or(0);
                }
                Ok(())
            });
            match read {
                Err(e) if e.is_partition_offline() => damaged_partitions += 1,
                other => other?,
            }
        }
        Ok(ClusterStats {
            uptime_ms: self.cluster.uptime_ms(),
            topics: self.cluster.topics().list()?.len(),
            partitions,
            groups: self.cluster.groups().list()?.len(),
            transactions: self.cluster.transactions().list()?.len(),
            records,
            log_bytes,
            owned_tasks: self.cluster.lifecycle().owned_tasks(),
            damaged_partitions,
            disk_full: self.cluster.lifecycle().health().disk_full.is_some(),
            protocols: self.cluster.connection_stats.snapshot(),
        })
    }
}
