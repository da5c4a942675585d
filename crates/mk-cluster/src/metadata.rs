//! The metadata store, `<data_dir>/metadata.json`: the cluster id, topics
//! (each with its stable topic id) -> partitions -> replicas, leader and
//! leader epoch (and a pending reassignment's adding and removing replicas,
//! and the replicas that left whose directories may remain), plus
//! per-topic configs, and the topics whose deletion has been decided but
//! whose files may not all be gone yet. Written atomically
//! (temp file, fsync, rename, directory fsync); a file that cannot be parsed
//! is STORAGE_ERROR at open, never silently reset.
//!
//! Version 1 files (before topic and cluster ids) are read and upgraded:
//! ids are generated once and persisted with the next write.

use crate::config::{BrokerId, CleanupPolicy, TopicConfig};
use crate::error::{ClusterError, Result};
use mk_core::TopicPartition;
use mk_storage::StorageError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use crate::topic_id::TopicId;

/// One partition's placement and leadership.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMeta {
    pub partition: u32,
    /// During a reassignment: the target, then the replicas it removes.
    pub replicas: Vec<BrokerId>,
    pub leader_id: BrokerId,
    pub leader_epoch: i32,
    /// A pending reassignment's new replicas (Kafka's `addingReplicas`).
    pub adding_replicas: Vec<BrokerId>,
    /// A pending reassignment's leaving replicas (`removingReplicas`).
    pub removing_replicas: Vec<BrokerId>,
    /// Replicas that left the partition whose directories may still
    /// exist: open removes them before it checks the data directory.
    pub deleting_replicas: Vec<BrokerId>,
}

/// One topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMeta {
    pub name: String,
    pub topic_id: TopicId,
    pub partitions: Vec<PartitionMeta>,
    pub config: TopicConfig,
}

/// A topic being deleted: what is needed to find and remove its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingDeletion {
    pub name: String,
    pub topic_id: TopicId,
    pub partitions: Vec<PartitionMeta>,
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
        adding_replicas: Vec::new(),
        removing_replicas: Vec::new(),
        deleting_replicas: Vec::new(),
    }
}

/// The current file format (version 2); version 1 lacks the ids and the
/// pending deletions, which default when it is read.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileV1 {
    version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cluster_id: Option<String>,
    topics: BTreeMap<String, TopicV1>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    deleting: Vec<DeletingV2>,
    /// Broker configs altered at run time: key "" for every broker,
    /// else a broker id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    broker_configs: BTreeMap<String, BTreeMap<String, String>>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TopicV1 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    topic_id: Option<String>,
    partitions: Vec<PartitionV1>,
    config: ConfigV1,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeletingV2 {
    name: String,
    topic_id: String,
    partitions: Vec<PartitionV1>,
}

/// The version `save` writes.
const FORMAT_VERSION: u32 = 2;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartitionV1 {
    partition: u32,
    replicas: Vec<BrokerId>,
    leader_id: BrokerId,
    leader_epoch: i32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    adding_replicas: Vec<BrokerId>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    removing_replicas: Vec<BrokerId>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    deleting_replicas: Vec<BrokerId>,
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
    /// The topic's other catalog configs (absent in files written before
    /// they existed).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    others: BTreeMap<String, String>,
}

/// The persisted set of topics.
#[derive(Debug)]
pub struct MetadataStore {
    path: PathBuf,
    /// The broker's fault seam, which every save passes.
    faults: std::sync::Arc<mk_storage::FaultInjector>,
    cluster_id: String,
    topics: BTreeMap<String, TopicMeta>,
    deleting: Vec<PendingDeletion>,
    /// Broker configs altered at run time ("" = every broker).
    broker_configs: BTreeMap<String, BTreeMap<String, String>>,
    /// Ids were generated while reading an older file: persist them.
    upgraded: bool,
}

/// A fresh cluster id in Kafka's form: a random UUID as 22 characters of
/// URL-safe base64 without padding.
fn new_cluster_id() -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(TopicId::random().0)
}

fn parse_id(path: &Path, name: &str, id: &str) -> Result<TopicId> {
    TopicId::parse(id).ok_or_else(|| {
        StorageError::unusable(
            path,
            format!("topic {name} has an unreadable topic id {id:?}"),
        )
        .into()
    })
}

fn partitions_of(ps: Vec<PartitionV1>) -> Vec<PartitionMeta> {
    ps.into_iter()
        .map(|p| PartitionMeta {
            partition: p.partition,
            replicas: p.replicas,
            leader_id: p.leader_id,
            leader_epoch: p.leader_epoch,
            adding_replicas: p.adding_replicas,
            removing_replicas: p.removing_replicas,
            deleting_replicas: p.deleting_replicas,
        })
        .collect()
}

fn partitions_v1(ps: &[PartitionMeta]) -> Vec<PartitionV1> {
    ps.iter()
        .map(|p| PartitionV1 {
            partition: p.partition,
            replicas: p.replicas.clone(),
            leader_id: p.leader_id,
            leader_epoch: p.leader_epoch,
            adding_replicas: p.adding_replicas.clone(),
            removing_replicas: p.removing_replicas.clone(),
            deleting_replicas: p.deleting_replicas.clone(),
        })
        .collect()
}

/// A metadata file refused at open (STORAGE_ERROR, never reset).
fn unusable(path: &Path, reason: String) -> ClusterError {
    StorageError::unusable(path, reason).into()
}

/// Reads and parses the file at `path` if it exists, in a version this
/// code knows.
fn read_file(path: &Path) -> Result<Option<FileV1>> {
    let Some(bytes) = mk_storage::fsutil::read_optional(path)? else {
        return Ok(None);
    };
    let file: FileV1 = serde_json::from_slice(&bytes)
        .map_err(|e| unusable(path, format!("cannot be parsed: {e}")))?;
    if file.version != 1 && file.version != FORMAT_VERSION {
        return Err(unusable(path, format!("unknown version {}", file.version)));
    }
    Ok(Some(file))
}

/// One stored topic, checked: its id (generated when a version 1 file has
/// none, which the returned flag says), its config and its partitions.
fn topic_of(path: &Path, name: String, t: TopicV1) -> Result<(TopicMeta, bool)> {
    let (topic_id, id_generated) = match &t.topic_id {
        Some(id) => (parse_id(path, &name, id)?, false),
        None => (TopicId::random(), true),
    };
    let config = config_of(path, &name, t.config)?;
    let partitions = partitions_of(t.partitions);
    if !partitions_consistent(&partitions) {
        return Err(unusable(
            path,
            format!("topic {name} has inconsistent partitions"),
        ));
    }
    let topic = TopicMeta {
        name,
        topic_id,
        partitions,
        config,
    };
    Ok((topic, id_generated))
}

/// A stored topic config. Its other configs must be stored as the
/// catalog normalizes them: anything else was not written by this code.
fn config_of(path: &Path, name: &str, c: ConfigV1) -> Result<TopicConfig> {
    let config = TopicConfig {
        cleanup_policy: CleanupPolicy::parse(&c.cleanup_policy)
            .map_err(|e| unusable(path, e.to_string()))?,
        retention_ms: c.retention_ms,
        retention_bytes: c.retention_bytes,
        segment_bytes: c.segment_bytes,
        delete_retention_ms: c.delete_retention_ms,
        others: c.others,
    };
    for (key, value) in &config.others {
        let stored = crate::topic_configs::topic_config_def(key)
            .and_then(|d| d.normalize(value))
            .map_err(|e| unusable(path, format!("topic {name}: {e}")))?;
        if &stored != value {
            return Err(unusable(
                path,
                format!("topic {name}: config {key} is stored as {value:?}, expected {stored:?}"),
            ));
        }
    }
    Ok(config)
}

/// Partitions numbered 0.., each with replicas that include its leader,
/// and a pending reassignment's adding and removing replicas among them
/// and apart from each other.
fn partitions_consistent(partitions: &[PartitionMeta]) -> bool {
    partitions.iter().enumerate().all(|(i, p)| {
        p.partition as usize == i
            && !p.replicas.is_empty()
            && p.replicas.contains(&p.leader_id)
            && p.adding_replicas.iter().all(|b| p.replicas.contains(b))
            && p.removing_replicas.iter().all(|b| p.replicas.contains(b))
            && !p
                .adding_replicas
                .iter()
                .any(|b| p.removing_replicas.contains(b))
    })
}

impl MetadataStore {
    /// Loads `<data_dir>/metadata.json`; a missing file is an empty cluster.
    pub fn load(data_dir: &Path) -> Result<Self> {
        let path = data_dir.join("metadata.json");
        let mut store = Self {
            faults: std::sync::Arc::new(mk_storage::FaultInjector::new()),
            cluster_id: String::new(),
            topics: BTreeMap::new(),
            deleting: Vec::new(),
            broker_configs: BTreeMap::new(),
            upgraded: false,
            path,
        };
        let mut cluster_id = None;
        if let Some(file) = read_file(&store.path)? {
            store.upgraded = file.version != FORMAT_VERSION;
            cluster_id = file.cluster_id;
            store.broker_configs = file.broker_configs;
            for d in file.deleting {
                store.deleting.push(PendingDeletion {
                    topic_id: parse_id(&store.path, &d.name, &d.topic_id)?,
                    name: d.name,
                    partitions: partitions_of(d.partitions),
                });
            }
            for (name, t) in file.topics {
                let (topic, id_generated) = topic_of(&store.path, name, t)?;
                store.upgraded |= id_generated;
                store.topics.insert(topic.name.clone(), topic);
            }
        }
        store.cluster_id = cluster_id.unwrap_or_else(|| {
            store.upgraded = true;
            new_cluster_id()
        });
        Ok(store)
    }

    /// Makes every save pass `faults` (the broker's one fault seam).
    pub fn with_faults(mut self, faults: std::sync::Arc<mk_storage::FaultInjector>) -> Self {
        self.faults = faults;
        self
    }

    /// Persists ids generated while reading an older (or absent) file, so
    /// they are stable from the first open on.
    pub fn persist_upgrade(&mut self) -> Result<()> {
        if self.upgraded {
            self.save()?;
            self.upgraded = false;
        }
        Ok(())
    }

    /// The cluster's stable id.
    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    /// Topics whose deletion was decided but may not have finished.
    pub fn pending_deletions(&self) -> &[PendingDeletion] {
        &self.deleting
    }

    /// Removes a topic and records it as being deleted, in one atomic
    /// write: from here on the topic is gone even if the process dies
    /// before its files are removed (the next open removes them).
    pub fn begin_delete(&mut self, topic: &str) -> Result<PendingDeletion> {
        let t = self
            .topics
            .remove(topic)
            .ok_or_else(|| ClusterError::UnknownTopic {
                topic: topic.to_string(),
            })?;
        // Directories of replicas that left a partition but were not yet
        // removed go with the topic's.
        let partitions = t
            .partitions
            .iter()
            .map(|p| {
                let mut p = p.clone();
                let leftovers = std::mem::take(&mut p.deleting_replicas);
                p.replicas.extend(
                    leftovers
                        .into_iter()
                        .filter(|b| !p.replicas.contains(b))
                        .collect::<Vec<_>>(),
                );
                p
            })
            .collect();
        let pending = PendingDeletion {
            name: t.name.clone(),
            topic_id: t.topic_id,
            partitions,
        };
        self.deleting.push(pending.clone());
        if let Err(e) = self.save() {
            self.deleting.pop();
            self.topics.insert(t.name.clone(), t);
            return Err(e);
        }
        Ok(pending)
    }

    /// Records that files of `partitions` of `topic` are about to be
    /// created, before any of them exists: until [`finish_create`] the
    /// record says "remove these files", so a crash in the middle of a
    /// creation leaves nothing behind (the next open removes them, as it
    /// finishes a deletion) and a partition directory the metadata does not
    /// know is always damage, never a creation in progress.
    ///
    /// [`finish_create`]: Self::finish_create
    pub fn begin_create(&mut self, topic: &TopicMeta, partitions: &[PartitionMeta]) -> Result<()> {
        self.deleting.push(PendingDeletion {
            name: topic.name.clone(),
            topic_id: topic.topic_id,
            partitions: partitions.to_vec(),
        });
        if let Err(e) = self.save() {
            self.deleting.pop();
            return Err(e);
        }
        Ok(())
    }

    /// Publishes a created topic (or its added partitions) and drops the
    /// removal record of [`begin_create`](Self::begin_create), in one
    /// atomic write. On failure the store is unchanged.
    pub fn finish_create(&mut self, topic: TopicMeta) -> Result<()> {
        let previous_deleting = self.deleting.clone();
        self.deleting.retain(|d| d.topic_id != topic.topic_id);
        let previous = self.topics.insert(topic.name.clone(), topic.clone());
        if let Err(e) = self.save() {
            self.deleting = previous_deleting;
            match previous {
                Some(p) => self.topics.insert(topic.name, p),
                None => self.topics.remove(&topic.name),
            };
            return Err(e);
        }
        Ok(())
    }

    /// Forgets a finished deletion (its files are gone).
    pub fn finish_delete(&mut self, topic_id: TopicId) -> Result<()> {
        let before = self.deleting.len();
        self.deleting.retain(|d| d.topic_id != topic_id);
        if self.deleting.len() != before {
            self.save()?;
        }
        Ok(())
    }

    pub fn topics(&self) -> impl Iterator<Item = &TopicMeta> {
        self.topics.values()
    }

    pub fn get(&self, topic: &str) -> Option<&TopicMeta> {
        self.topics.get(topic)
    }

    /// Broker configs altered at run time, by scope ("" = every broker,
    /// else a broker id).
    pub fn broker_configs(&self) -> &BTreeMap<String, BTreeMap<String, String>> {
        &self.broker_configs
    }

    /// Replaces the run-time configs of one broker scope and persists the
    /// store. On failure the in-memory store is unchanged.
    pub fn put_broker_configs(
        &mut self,
        scope: &str,
        configs: BTreeMap<String, String>,
    ) -> Result<()> {
        let previous = if configs.is_empty() {
            self.broker_configs.remove(scope)
        } else {
            self.broker_configs.insert(scope.to_string(), configs)
        };
        if let Err(e) = self.save() {
            match previous {
                Some(p) => self.broker_configs.insert(scope.to_string(), p),
                None => self.broker_configs.remove(scope),
            };
            return Err(e);
        }
        Ok(())
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
        self.update_partition(topic, partition, |p| {
            p.leader_id = leader_id;
            p.leader_epoch = leader_epoch;
        })
    }

    /// Changes one partition's record with `change` and persists the
    /// store. On failure the in-memory store is unchanged.
    pub fn update_partition(
        &mut self,
        topic: &str,
        partition: u32,
        change: impl FnOnce(&mut PartitionMeta),
    ) -> Result<()> {
        let mut t = self
            .topics
            .get(topic)
            .cloned()
            .ok_or_else(|| ClusterError::UnknownTopic {
                topic: topic.to_string(),
            })?;
        let partitions = u32::try_from(t.partitions.len()).unwrap_or(u32::MAX);
        let p = t.partitions.get_mut(partition as usize).ok_or_else(|| {
            ClusterError::UnknownPartition {
                partition: TopicPartition::new(topic, partition),
                partitions,
            }
        })?;
        change(p);
        self.put(t)
    }

    fn save(&self) -> Result<()> {
        let file = FileV1 {
            version: FORMAT_VERSION,
            broker_configs: self.broker_configs.clone(),
            cluster_id: Some(self.cluster_id.clone()),
            deleting: self
                .deleting
                .iter()
                .map(|d| DeletingV2 {
                    name: d.name.clone(),
                    topic_id: d.topic_id.to_string(),
                    partitions: partitions_v1(&d.partitions),
                })
                .collect(),
            topics: self
                .topics
                .iter()
                .map(|(name, t)| {
                    (
                        name.clone(),
                        TopicV1 {
                            topic_id: Some(t.topic_id.to_string()),
                            partitions: partitions_v1(&t.partitions),
                            config: ConfigV1 {
                                cleanup_policy: t.config.cleanup_policy.as_str().to_string(),
                                retention_ms: t.config.retention_ms,
                                retention_bytes: t.config.retention_bytes,
                                segment_bytes: t.config.segment_bytes,
                                delete_retention_ms: t.config.delete_retention_ms,
                                others: t.config.others.clone(),
                            },
                        },
                    )
                })
                .collect(),
        };
        let bytes = serde_json::to_vec_pretty(&file).map_err(|e| {
            StorageError::unusable(&self.path, format!("cannot serialize metadata: {e}"))
        })?;
        mk_storage::fsutil::write_atomic_with(&self.faults, &self.path, &bytes)?;
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
            topic_id: TopicId::random(),
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
        assert_eq!(got.topic_id, t.topic_id);
        assert_eq!(back.cluster_id(), s.cluster_id());
        assert_eq!(s.cluster_id().len(), 22);
        assert_eq!(
            (got.partitions[1].leader_id, got.partitions[1].leader_epoch),
            (2, 4)
        );
        std::fs::write(dir.path().join("metadata.json"), b"{not json").unwrap();
        let err = MetadataStore::load(dir.path()).unwrap_err();
        assert_eq!(err.code(), mk_core::ErrorCode::StorageError);
    }
}

#[cfg(test)]
mod id_tests {
    use super::*;

    #[test]
    fn version_1_files_get_ids_once_and_keep_them() {
        let dir = tempfile::tempdir().unwrap();
        let v1 = r#"{"version":1,"topics":{"a":{"partitions":[{"partition":0,"replicas":[1],"leader_id":1,"leader_epoch":0}],"config":{"cleanup.policy":"delete","retention.ms":null,"retention.bytes":null,"segment.bytes":null,"delete.retention.ms":86400000}}}}"#;
        std::fs::write(dir.path().join("metadata.json"), v1).unwrap();
        let mut s = MetadataStore::load(dir.path()).unwrap();
        let id = s.get("a").unwrap().topic_id;
        let cluster = s.cluster_id().to_string();
        s.persist_upgrade().unwrap();
        let again = MetadataStore::load(dir.path()).unwrap();
        assert_eq!(again.get("a").unwrap().topic_id, id);
        assert_eq!(again.cluster_id(), cluster);
    }

    #[test]
    fn a_deletion_is_pending_until_finished_and_survives_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = MetadataStore::load(dir.path()).unwrap();
        let id = TopicId::random();
        s.put(TopicMeta {
            name: "gone".into(),
            topic_id: id,
            partitions: vec![place_replicas(&[1], 0, 1)],
            config: TopicConfig::default(),
        })
        .unwrap();
        s.begin_delete("gone").unwrap();
        let reloaded = MetadataStore::load(dir.path()).unwrap();
        assert!(reloaded.get("gone").is_none());
        assert_eq!(reloaded.pending_deletions()[0].topic_id, id);
        s.finish_delete(id).unwrap();
        assert!(
            MetadataStore::load(dir.path())
                .unwrap()
                .pending_deletions()
                .is_empty()
        );
    }
}
