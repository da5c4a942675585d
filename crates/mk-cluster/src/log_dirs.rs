//! What DescribeLogDirs answers: one hosted broker's log directory
//! (`<data_dir>/broker-<id>`), the replicas it holds with their sizes and
//! how far each is behind the high watermark, and the file system's size.

use crate::config::BrokerId;
use crate::error::{ClusterError, Result};
use crate::inspect::{DiskSpace, disk_space};
use crate::stats::OperatorViews;
use mk_core::TopicPartition;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// One replica in a log directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogDirReplica {
    /// The bytes of its segments' log files (Kafka's `log.size`; indexes
    /// not counted).
    pub size_bytes: u64,
    /// How far its log end is behind the partition's high watermark, 0 when
    /// it is not (Kafka's `offsetLag` of a current replica).
    pub offset_lag: i64,
}

/// One broker's log directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDir {
    pub path: PathBuf,
    /// Its replicas, in topic and partition order; damaged partitions (whose
    /// files cannot be read) are left out.
    pub replicas: Vec<(TopicPartition, LogDirReplica)>,
    /// `None` when the file system cannot be asked.
    pub disk: Option<DiskSpace>,
}

impl OperatorViews<'_> {
    /// The log directory of hosted broker `broker`, with the replicas it
    /// holds (all of them, or those `wanted` names). INVALID_REQUEST for a
    /// broker this process does not host.
    pub fn log_dir(
        self,
        broker: BrokerId,
        wanted: Option<&BTreeSet<TopicPartition>>,
    ) -> Result<LogDir> {
        self.cluster.check_running()?;
        if !self.cluster.config.broker_ids.contains(&broker) {
            return Err(ClusterError::InvalidRequest(format!(
                "broker {broker} is not hosted here"
            )));
        }
        let path = self
            .cluster
            .config
            .data_dir
            .join(format!("broker-{broker}"));
        let mut replicas = Vec::new();
        for slot in self.cluster.all_slots() {
            if slot.damage().is_some() || wanted.is_some_and(|w| !w.contains(&slot.tp)) {
                continue;
            }
            let found = self.cluster.read_slot(&slot, |set| {
                if !set.replicas().contains(&broker) {
                    return Ok(None);
                }
                let log = set.replica_log(broker)?;
                Ok(Some(LogDirReplica {
                    size_bytes: log.segments().iter().map(|s| s.log_bytes).sum(),
                    offset_lag: (set.high_watermark() - log.leo()).max(0),
                }))
            });
            let found = match found {
                // Found offline just now: left out like the others.
                Err(e) if e.is_partition_offline() => None,
                other => other?,
            };
            if let Some(r) = found {
                replicas.push((slot.tp.clone(), r));
            }
        }
        Ok(LogDir {
            disk: disk_space(&path),
            path,
            replicas,
        })
    }
}
