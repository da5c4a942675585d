//! The metadata store, `<data_dir>/metadata.json`: topics -> partitions ->
//! replicas, leader and leader epoch, plus per-topic configs. Written
//! atomically (temp file, fsync, rename, directory fsync); a file that cannot
//! be parsed is STORAGE_ERROR at open, never silently reset.

use crate::config::{BrokerId, CleanupPolicy, TopicConfig};
use crate::error::{ClusterError, Result};
use mk_log::StorageError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One partition's placement and leadership.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMeta {
    pub partition: u32,
    pub replicas: Vec<BrokerId>,
    pub leader_id: BrokerId,
    pub leader_epoch: i32,
}

/// One topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMeta {
    pub name: String,
    pub partitions: Vec<PartitionMeta>,
    pub config: TopicConfig,
}

/// Replica placement of spec 00: partition p with replication factor r over
/// brokers B gets `[B[(p + i) % len(B)] for i in 0..r]`, leader = first,
/// epoch 0.
pub fn place_replicas(
    brokers: &[BrokerId],
    partition: u32,
    replication_factor: usize,
) -> PartitionMeta {
    let replicas: Vec<BrokerId> = (0..replication_factor)
        .map(|i| brokers[(partition as usize + i) % brokers.len()])
        .collect();
    PartitionMeta {
        partition,
        leader_id: replicas[0],
        replicas,
        leader_epoch: 0,
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileV1 {
    version: u32,
    topics: BTreeMap<String, TopicV1>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TopicV1 {
    partitions: Vec<PartitionV1>,
    config: ConfigV1,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartitionV1 {
    partition: u32,
    replicas: Vec<BrokerId>,
    leader_id: BrokerId,
    leader_epoch: i32,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigV1 {
    #[serde(rename = "cleanup.policy")]
    cleanup_policy: String,
    #[serde(rename = "retention.ms")]
    retention_ms: Option<i64>,
    #[serde(rename = "retention.bytes")]
    retention_bytes: Option<i64>,
    #[serde(rename = "segment.bytes")]
    segment_bytes: Option<u64>,
    #[serde(rename = "delete.retention.ms")]
    delete_retention_ms: i64,
}

/// The persisted set of topics.
#[derive(Debug)]
pub struct MetadataStore {
    path: PathBuf,
    topics: BTreeMap<String, TopicMeta>,
}

impl MetadataStore {
    /// Loads `<data_dir>/metadata.json`; a missing file is an empty cluster.
    pub fn load(data_dir: &Path) -> Result<Self> {
        let path = data_dir.join("metadata.json");
        let mut topics = BTreeMap::new();
        if let Some(bytes) = mk_log::fsutil::read_optional(&path)? {
            let unusable =
                |reason: String| ClusterError::from(StorageError::unusable(&path, reason));
            let file: FileV1 = serde_json::from_slice(&bytes)
                .map_err(|e| unusable(format!("cannot be parsed: {e}")))?;
            if file.version != 1 {
                return Err(unusable(format!("unknown version {}", file.version)));
            }
            for (name, t) in file.topics {
                let config = TopicConfig {
                    cleanup_policy: CleanupPolicy::parse(&t.config.cleanup_policy)
                        .map_err(|e| unusable(e.to_string()))?,
                    retention_ms: t.config.retention_ms,
                    retention_bytes: t.config.retention_bytes,
                    segment_bytes: t.config.segment_bytes,
                    delete_retention_ms: t.config.delete_retention_ms,
                };
                let partitions = t
                    .partitions
                    .into_iter()
                    .map(|p| PartitionMeta {
                        partition: p.partition,
                        replicas: p.replicas,
                        leader_id: p.leader_id,
                        leader_epoch: p.leader_epoch,
                    })
                    .collect::<Vec<_>>();
                let consistent = partitions.iter().enumerate().all(|(i, p)| {
                    p.partition as usize == i
                        && !p.replicas.is_empty()
                        && p.replicas.contains(&p.leader_id)
                });
                if !consistent {
                    return Err(unusable(format!(
                        "topic {name} has inconsistent partitions"
                    )));
                }
                topics.insert(
                    name.clone(),
                    TopicMeta {
                        name,
                        partitions,
                        config,
                    },
                );
            }
        }
        Ok(Self { path, topics })
    }

    pub fn topics(&self) -> impl Iterator<Item = &TopicMeta> {
        self.topics.values()
    }

    pub fn get(&self, topic: &str) -> Option<&TopicMeta> {
        self.topics.get(topic)
    }

    /// Adds or replaces a topic and persists the whole store atomically. On
    /// failure the in-memory store is unchanged.
    pub fn put(&mut self, topic: TopicMeta) -> Result<()> {
        let previous = self.topics.insert(topic.name.clone(), topic.clone());
        if let Err(e) = self.save() {
            match previous {
                Some(p) => self.topics.insert(topic.name, p),
                None => self.topics.remove(&topic.name),
            };
            return Err(e);
        }
        Ok(())
    }

    /// Records a leadership change of one partition and persists it.
    pub fn set_leader(
        &mut self,
        topic: &str,
        partition: u32,
        leader_id: BrokerId,
        leader_epoch: i32,
    ) -> Result<()> {
        let mut t = self
            .topics
            .get(topic)
            .cloned()
            .ok_or_else(|| ClusterError::UnknownTopic(topic.to_string()))?;
        let p = t
            .partitions
            .get_mut(partition as usize)
            .ok_or_else(|| ClusterError::UnknownPartition(format!("{topic}-{partition}")))?;
        p.leader_id = leader_id;
        p.leader_epoch = leader_epoch;
        self.put(t)
    }

    fn save(&self) -> Result<()> {
        let file = FileV1 {
            version: 1,
            topics: self
                .topics
                .iter()
                .map(|(name, t)| {
                    (
                        name.clone(),
                        TopicV1 {
                            partitions: t
                                .partitions
                                .iter()
                                .map(|p| PartitionV1 {
                                    partition: p.partition,
                                    replicas: p.replicas.clone(),
                                    leader_id: p.leader_id,
                                    leader_epoch: p.leader_epoch,
                                })
                                .collect(),
                            config: ConfigV1 {
                                cleanup_policy: t.config.cleanup_policy.as_str().to_string(),
                                retention_ms: t.config.retention_ms,
                                retention_bytes: t.config.retention_bytes,
                                segment_bytes: t.config.segment_bytes,
                                delete_retention_ms: t.config.delete_retention_ms,
                            },
                        },
                    )
                })
                .collect(),
        };
        let bytes = serde_json::to_vec_pretty(&file).map_err(|e| {
            StorageError::unusable(&self.path, format!("cannot serialize metadata: {e}"))
        })?;
        mk_log::fsutil::write_atomic(&self.path, &bytes)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_follows_the_spec_rule() {
        let b = [1, 2, 3];
        assert_eq!(place_replicas(&b, 0, 2).replicas, vec![1, 2]);
        assert_eq!(place_replicas(&b, 1, 3).replicas, vec![2, 3, 1]);
        let p = place_replicas(&b, 5, 1);
        assert_eq!(
            (p.replicas.clone(), p.leader_id, p.leader_epoch),
            (vec![3], 3, 0)
        );
    }

    #[test]
    fn store_round_trips_and_refuses_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = MetadataStore::load(dir.path()).unwrap();
        assert_eq!(s.topics().count(), 0);
        let t = TopicMeta {
            name: "t".into(),
            partitions: vec![place_replicas(&[1, 2], 0, 2), place_replicas(&[1, 2], 1, 2)],
            config: TopicConfig {
                cleanup_policy: CleanupPolicy::Compact,
                retention_bytes: Some(99),
                ..TopicConfig::default()
            },
        };
        s.put(t.clone()).unwrap();
        s.set_leader("t", 1, 2, 4).unwrap();
        let back = MetadataStore::load(dir.path()).unwrap();
        let got = back.get("t").unwrap();
        assert_eq!(got.config, t.config);
        assert_eq!(
            (got.partitions[1].leader_id, got.partitions[1].leader_epoch),
            (2, 4)
        );
        std::fs::write(dir.path().join("metadata.json"), b"{not json").unwrap();
        let err = MetadataStore::load(dir.path()).unwrap_err();
        assert_eq!(err.code(), mk_core::ErrorCode::StorageError);
    }
}
