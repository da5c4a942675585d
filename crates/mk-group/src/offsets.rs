//! The durable side of the coordinator: the internal compacted log
//! `__consumer_offsets` (one mk-log `PartitionLog`) and the in-memory map
//! rebuilt from it on open.
//!
//! Every commit is one append (one batch holding one record per partition),
//! written to the OS before the call returns; fsync happens in `flush`, like
//! every other log of the broker. Replay reads the log from its start; the
//! last record of a key wins and a tombstone deletes. `compact` rolls the
//! active segment and runs the mk-log compactor, which keeps exactly the
//! latest record of every key, so replay after compaction yields the same map.

use crate::codec::{self, CodecError, GroupMetadata, OffsetsKey};
use crate::commits::OffsetAndMetadata;
use crate::error::{GroupError, Result};
use crate::share::ShareSnapshot;
use bytes::Bytes;
use mk_core::TopicPartition;
use mk_log::{CompactionResult, LogConfig, PartitionLog, Record, RecordBatch};
use std::collections::BTreeMap;
use std::path::Path;

/// Bytes read per step while replaying; bounds replay memory.
const REPLAY_CHUNK_BYTES: usize = 1 << 20;

/// Committed offsets of every group, and the log that makes them durable.
#[derive(Debug)]
pub(crate) struct OffsetStore {
    log: PartitionLog,
    offsets: BTreeMap<String, BTreeMap<TopicPartition, OffsetAndMetadata>>,
    /// When each group with offsets last committed one (the commit
    /// records' timestamps): what offset expiration counts from.
    last_commit_ms: BTreeMap<String, i64>,
}

/// What replay finds besides committed offsets: every group's last
/// metadata and every share partition's last state.
#[derive(Debug, Default)]
pub(crate) struct Persisted {
    pub(crate) groups: BTreeMap<String, GroupMetadata>,
    pub(crate) shares: BTreeMap<String, BTreeMap<TopicPartition, ShareSnapshot>>,
    pub(crate) configs: BTreeMap<String, Vec<(String, String)>>,
}

impl OffsetStore {
    /// Opens (or creates) the log in `dir` and replays it. Returns the store
    /// and what it found of groups and share partitions.
    pub(crate) fn open(dir: &Path, config: LogConfig) -> Result<(Self, Persisted)> {
        let log = PartitionLog::open(dir, config, 0)?;
        let mut store = Self {
            log,
            offsets: BTreeMap::new(),
            last_commit_ms: BTreeMap::new(),
        };
        let persisted = store.replay()?;
        Ok((store, persisted))
    }

    fn replay(&mut self) -> Result<Persisted> {
        let mut found = Persisted::default();
        let end = self.log.leo();
        let mut next = self.log.log_start_offset();
        while next < end {
            let batches = self.log.read_batches(next, REPLAY_CHUNK_BYTES, None)?;
            let Some(last) = batches.last() else {
                // Only compaction gaps are left before the end.
                break;
            };
            let after = last.next_offset();
            for stored in batches {
                let batch = stored.decode()?;
                for (offset, record) in batch.records_with_offsets() {
                    self.apply(offset, record, &mut found)?;
                }
            }
            next = after;
        }
        Ok(found)
    }

    fn corrupt(&self, offset: i64, reason: CodecError) -> GroupError {
        GroupError::CorruptOffsetsLog {
            path: self.log.dir().to_path_buf(),
            offset,
            reason,
        }
    }

    fn apply(&mut self, offset: i64, record: &Record, found: &mut Persisted) -> Result<()> {
        let key = record
            .key
            .as_ref()
            .ok_or_else(|| self.corrupt(offset, CodecError::NoKey))?;
        let key = codec::decode_key(key).map_err(|r| self.corrupt(offset, r))?;
        match (key, &record.value) {
            (OffsetsKey::Offset { group, partition }, None) => {
                self.remove(&group, &partition);
            }
            (OffsetsKey::Offset { group, partition }, Some(v)) => {
                let committed =
                    codec::decode_offset_value(v).map_err(|r| self.corrupt(offset, r))?;
                self.noted_commit(&group, record.timestamp_ms);
                self.offsets
                    .entry(group)
                    .or_default()
                    .insert(partition, committed);
            }
            (OffsetsKey::Group { group }, None) => {
                found.groups.remove(&group);
            }
            (OffsetsKey::Group { group }, Some(v)) => {
                let meta = codec::decode_group_value(v).map_err(|r| self.corrupt(offset, r))?;
                found.groups.insert(group, meta);
            }
            (OffsetsKey::Share { group, partition }, None) => {
                if let Some(states) = found.shares.get_mut(&group) {
                    states.remove(&partition);
                    if states.is_empty() {
                        found.shares.remove(&group);
                    }
                }
            }
            (OffsetsKey::Config { group }, None) => {
                found.configs.remove(&group);
            }
            (OffsetsKey::Config { group }, Some(v)) => {
                let configs = codec::decode_config_value(v).map_err(|r| self.corrupt(offset, r))?;
                found.configs.insert(group, configs);
            }
            (OffsetsKey::Share { group, partition }, Some(v)) => {
                let state = codec::decode_share_value(v).map_err(|r| self.corrupt(offset, r))?;
                found
                    .shares
                    .entry(group)
                    .or_default()
                    .insert(partition, state);
            }
        }
        Ok(())
    }

    fn remove(&mut self, group: &str, partition: &TopicPartition) {
        if let Some(map) = self.offsets.get_mut(group) {
            map.remove(partition);
            if map.is_empty() {
                self.offsets.remove(group);
                self.last_commit_ms.remove(group);
            }
        }
    }

    /// A commit of `group` stamped `at_ms` (the record's timestamp).
    fn noted_commit(&mut self, group: &str, at_ms: i64) {
        let last = self
            .last_commit_ms
            .entry(group.to_string())
            .or_insert(at_ms);
        *last = (*last).max(at_ms);
    }

    /// When `group` last committed an offset it still has.
    pub(crate) fn last_commit_ms(&self, group: &str) -> Option<i64> {
        self.last_commit_ms.get(group).copied()
    }

    /// Appends one batch of `(key, value)` records stamped `now_ms`.
    fn append(&mut self, records: Vec<(Bytes, Option<Bytes>)>, now_ms: i64) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let records = records
            .into_iter()
            .map(|(k, v)| Record::new(Some(k), v, now_ms))
            .collect();
        self.log.append(RecordBatch::new(records)?)?;
        Ok(())
    }

    pub(crate) fn committed(
        &self,
        group: &str,
        partition: &TopicPartition,
    ) -> Option<&OffsetAndMetadata> {
        self.offsets.get(group)?.get(partition)
    }

    pub(crate) fn group_offsets(
        &self,
        group: &str,
    ) -> Option<&BTreeMap<TopicPartition, OffsetAndMetadata>> {
        self.offsets.get(group)
    }

    /// Groups that have at least one committed offset.
    pub(crate) fn groups(&self) -> impl Iterator<Item = &String> {
        self.offsets.keys()
    }

    /// Stores `offsets` (already validated) with one append; memory changes
    /// only after the append succeeded.
    pub(crate) fn commit(
        &mut self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
        now_ms: i64,
    ) -> Result<()> {
        let records = offsets
            .iter()
            .map(|(tp, o)| (codec::offset_key(group, tp), Some(codec::offset_value(o))))
            .collect();
        self.append(records, now_ms)?;
        if !offsets.is_empty() {
            let map = self.offsets.entry(group.to_string()).or_default();
            map.extend(offsets.iter().map(|(tp, o)| (tp.clone(), o.clone())));
            self.noted_commit(group, now_ms);
        }
        Ok(())
    }

    /// Persists a group's generation and assignor (`None` deletes it).
    pub(crate) fn write_group(
        &mut self,
        group: &str,
        meta: Option<GroupMetadata>,
        now_ms: i64,
    ) -> Result<()> {
        self.append(
            vec![(codec::group_key(group), meta.map(codec::group_value))],
            now_ms,
        )
    }

    /// Writes tombstones for those of `partitions` that have a committed
    /// offset, in one append. Returns how many were deleted.
    pub(crate) fn delete_offsets(
        &mut self,
        group: &str,
        partitions: &[TopicPartition],
        now_ms: i64,
    ) -> Result<usize> {
        let mut doomed: Vec<&TopicPartition> = partitions
            .iter()
            .filter(|tp| self.committed(group, tp).is_some())
            .collect();
        doomed.sort();
        doomed.dedup();
        let records = doomed
            .iter()
            .map(|tp| (codec::offset_key(group, tp), None))
            .collect();
        self.append(records, now_ms)?;
        let deleted: Vec<TopicPartition> = doomed.into_iter().cloned().collect();
        for tp in &deleted {
            self.remove(group, tp);
        }
        Ok(deleted.len())
    }

    /// Persists the states of share partitions of `group` (`None` deletes
    /// one), in one append: all of them or none.
    pub(crate) fn write_share_states(
        &mut self,
        group: &str,
        states: &[(TopicPartition, Option<ShareSnapshot>)],
        now_ms: i64,
    ) -> Result<()> {
        let records = states
            .iter()
            .map(|(tp, s)| {
                (
                    codec::share_key(group, tp),
                    s.as_ref().map(codec::share_value),
                )
            })
            .collect();
        self.append(records, now_ms)
    }

    /// Persists a group's dynamic configs (none: a tombstone).
    pub(crate) fn write_configs(
        &mut self,
        group: &str,
        configs: &[(String, String)],
        now_ms: i64,
    ) -> Result<()> {
        let value = (!configs.is_empty()).then(|| codec::config_value(configs));
        self.append(vec![(codec::config_key(group), value)], now_ms)
    }

    /// Deletes every offset of `group`, the states of its share
    /// partitions `shares` and its metadata, in one append.
    pub(crate) fn delete_group(
        &mut self,
        group: &str,
        shares: &[TopicPartition],
        now_ms: i64,
    ) -> Result<()> {
        let mut records: Vec<(Bytes, Option<Bytes>)> = self
            .group_offsets(group)
            .into_iter()
            .flat_map(|m| m.keys())
            .map(|tp| (codec::offset_key(group, tp), None))
            .collect();
        records.extend(shares.iter().map(|tp| (codec::share_key(group, tp), None)));
        records.push((codec::group_key(group), None));
        self.append(records, now_ms)?;
        self.offsets.remove(group);
        self.last_commit_ms.remove(group);
        Ok(())
    }

    /// Rolls the active segment, compacts the closed ones and deletes the
    /// leading closed segments that compaction left empty.
    pub(crate) fn compact(
        &mut self,
        now_ms: i64,
        delete_retention_ms: i64,
    ) -> Result<CompactionResult> {
        self.log.roll()?;
        let result = self.log.compact(now_ms, delete_retention_ms)?;
        let empty_prefix: Vec<i64> = self
            .log
            .closed_segments()
            .iter()
            .take_while(|s| s.log_bytes == 0)
            .map(|s| s.base_offset)
            .collect();
        self.log.delete_closed_segments(&empty_prefix)?;
        Ok(result)
    }

    pub(crate) fn log(&self) -> &PartitionLog {
        &self.log
    }

    pub(crate) fn flush(&mut self) -> Result<()> {
        self.log.flush()?;
        Ok(())
    }

    pub(crate) fn close(self) -> Result<()> {
        self.log.close()?;
        Ok(())
    }
}
