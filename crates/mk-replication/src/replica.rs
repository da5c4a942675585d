//! One replica of a partition inside a replica set: its log, leader-epoch
//! cache, producer state and follower bookkeeping, plus the operations that
//! must keep those four consistent (leader append, follower append,
//! truncation, full reset, checkpoints).

use crate::epoch_cache::LeaderEpochCache;
use crate::error::{BrokerId, Result};
use crate::hw_checkpoint;
use crate::producer_state::{self, ProducerStateMap, Registrations, Snapshot};
use mk_core::TopicPartition;
use mk_log::{AppendInfo, CheckedFrame, LogConfig, LogError, PartitionLog, RecordBatch};
use mk_storage::{StorageError, fsutil};
use std::fs;
use std::path::{Path, PathBuf};

/// What a replica currently does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplicaRole {
    /// Appends producer batches and answers follower fetches.
    Leader,
    /// Fetches from the leader on every replication step.
    Follower,
    /// Failed (removed from the ISR by failure injection, or a deposed
    /// leader): does not fetch until `rejoin`.
    Offline,
}

/// The directory of `broker`'s replica of `tp`.
pub fn replica_dir(data_dir: &Path, broker: BrokerId, tp: &TopicPartition) -> PathBuf {
    data_dir
        .join(format!("broker-{broker}"))
        .join(tp.dir_name())
}

#[derive(Debug)]
pub(crate) struct Replica {
    pub(crate) dir: PathBuf,
    pub(crate) log: PartitionLog,
    pub(crate) epochs: LeaderEpochCache,
    pub(crate) producers: ProducerStateMap,
    pub(crate) role: ReplicaRole,
    pub(crate) last_fetch_ms: i64,
    /// The leader epoch under which this replica last completed
    /// reconciliation; a follower reconciles before fetching in a new epoch.
    pub(crate) reconciled_epoch: Option<i32>,
    /// The HW value in this replica's checkpoint file, if any.
    pub(crate) checkpointed_hw: Option<i64>,
    /// Offset and registrations of the newest snapshot written or loaded.
    snapshot: Option<(i64, Registrations)>,
}

impl Replica {
    /// Opens the replica: the log (with mk-log's recovery), the epoch cache
    /// (from its checkpoint), the producer state (snapshot plus tail) and
    /// the HW checkpoint. Returns the registrations found in the snapshot.
    pub(crate) fn open(
        dir: PathBuf,
        tp: &TopicPartition,
        config: &LogConfig,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<(Self, Registrations)> {
        let log = PartitionLog::open(&dir, config.clone(), leader_epoch)?;
        let epochs = LeaderEpochCache::load(&dir, &log)?;
        let (producers, registrations, snapshot_offset) = producer_state::load_state(&dir, &log)?;
        let checkpointed_hw = hw_checkpoint::read(&dir, tp)?;
        let replica = Self {
            dir,
            log,
            epochs,
            producers,
            role: ReplicaRole::Follower,
            last_fetch_ms: now_ms,
            reconciled_epoch: None,
            checkpointed_hw,
            snapshot: snapshot_offset.map(|o| (o, registrations.clone())),
        };
        Ok((replica, registrations))
    }

    pub(crate) fn leo(&self) -> i64 {
        self.log.leo()
    }

    /// Appends a validated producer batch as leader and records it in the
    /// producer state.
    pub(crate) fn append_as_leader(&mut self, batch: RecordBatch) -> Result<AppendInfo> {
        let info = self.log.append(batch)?;
        self.observe_leader_append(&info);
        Ok(info)
    }

    /// `append_as_leader` for a group (`PartitionLog::append_group`).
    pub(crate) fn append_group_as_leader(
        &mut self,
        batches: Vec<RecordBatch>,
    ) -> Vec<mk_log::Result<AppendInfo>> {
        let written = self.log.append_group(batches);
        for info in written.iter().flatten() {
            self.observe_leader_append(info);
        }
        written
    }

    fn observe_leader_append(&mut self, info: &AppendInfo) {
        debug_assert_eq!(
            self.epochs.latest().map(|e| e.epoch),
            Some(info.leader_epoch),
            "a leader appends only in the epoch its cache starts"
        );
        self.producers.observe(&info.header, info.max_timestamp_ms);
    }

    /// Appends a batch fetched from the leader byte for byte. A batch of a
    /// new epoch first extends the epoch cache (persisted before the data,
    /// so a crash in between only leaves an entry at the LEO, which open
    /// drops).
    pub(crate) fn append_fetched(&mut self, checked: &CheckedFrame) -> Result<()> {
        let batch = checked.batch();
        let epoch = batch.header.leader_epoch;
        let latest = self.epochs.latest().map(|e| e.epoch);
        assert!(
            latest.is_none_or(|l| epoch >= l),
            "{}: fetched batch at {} has epoch {epoch}, older than the cache's latest {latest:?}; reconciliation must have truncated first",
            self.dir.display(),
            batch.base_offset()
        );
        if latest.is_none_or(|l| epoch > l) {
            self.epochs.assign(epoch, batch.base_offset())?;
        }
        let info = self.log.append_checked_frame(checked)?;
        self.producers.observe(&info.header, info.max_timestamp_ms);
        Ok(())
    }

    /// Truncates the log so that it ends at `target` or, if `target` falls
    /// inside a batch, at that batch's start. Drops epoch-cache entries and
    /// snapshots above the new end and rebuilds the producer state. Returns
    /// the new LEO. `target` must be within `[log_start, LEO]`.
    pub(crate) fn truncate_to(&mut self, target: i64) -> Result<i64> {
        if target >= self.leo() {
            return Ok(self.leo());
        }
        let end = match self.log.truncate_to(target) {
            Ok(()) => target,
            Err(LogError::InvalidRecord(_)) => {
                // The leader's boundary is not one of ours (a log written
                // differently in the same epoch): cut at our own boundary
                // below it and let the fetch copy the rest.
                let containing = self.log.read_batches(target, 1, None)?;
                let boundary = containing
                    .first()
                    .map_or(target, mk_log::StoredBatch::base_offset);
                self.log.truncate_to(boundary)?;
                boundary
            }
            Err(e) => return Err(e.into()),
        };
        self.epochs.truncate_from_end(end)?;
        producer_state::delete_snapshots_above(&self.log.config().faults, &self.dir, end)?;
        let (producers, _, snapshot_offset) = producer_state::load_state(&self.dir, &self.log)?;
        self.producers = producers;
        if self.snapshot.as_ref().is_some_and(|(o, _)| *o > end) {
            self.snapshot = None;
        }
        debug_assert!(snapshot_offset.is_none_or(|o| o <= end));
        Ok(end)
    }

    /// Empties the replica and restarts its log at `start_offset` (Kafka's
    /// `truncateFullyAndStartAt`), for a follower whose log shares no usable
    /// prefix with the leader's retained log. mk-log has no such operation,
    /// so this builds on its documented directory layout: every file of the
    /// directory is removed and an empty segment file named after
    /// `start_offset` is created before the log is reopened.
    pub(crate) fn reset_to(&mut self, start_offset: i64, config: &LogConfig) -> Result<()> {
        let io = |path: &Path, e: std::io::Error| StorageError::io(path, e);
        for entry in fs::read_dir(&self.dir).map_err(|e| io(&self.dir, e))? {
            let entry = entry.map_err(|e| io(&self.dir, e))?;
            fsutil::remove_if_exists(&entry.path())?;
        }
        let segment = self.dir.join(format!("{start_offset:020}.log"));
        config.faults.site_write(&segment)?;
        fs::File::create(&segment).map_err(|e| io(&segment, e))?;
        fsutil::sync_dir_with(&config.faults, &self.dir)?;
        self.log = PartitionLog::open(&self.dir, config.clone(), self.log.leader_epoch())?;
        self.epochs = LeaderEpochCache::load(&self.dir, &self.log)?;
        self.producers = ProducerStateMap::default();
        self.checkpointed_hw = None;
        self.snapshot = None;
        Ok(())
    }

    /// The snapshot `write_snapshot` would write now (`None` when the newest
    /// one already holds this state): its offset and encoded bytes, for a
    /// flush that writes it outside the partition lock.
    pub(crate) fn snapshot_to_write(
        &self,
        registrations: &Registrations,
    ) -> Option<(i64, Vec<u8>)> {
        let offset = self.leo();
        if self
            .snapshot
            .as_ref()
            .is_some_and(|(o, r)| *o == offset && r == registrations)
        {
            return None;
        }
        let snapshot = Snapshot {
            offset,
            state: self.producers.clone(),
            registrations: registrations.clone(),
        };
        Some((offset, snapshot.encode()))
    }

    /// Records that the snapshot at `offset` is in place (written outside
    /// the lock) and keeps only the newest files. The removals are made
    /// durable by the log's next directory fsync; an older snapshot that
    /// survives a crash is still true.
    pub(crate) fn snapshot_written(
        &mut self,
        offset: i64,
        registrations: &Registrations,
    ) -> Result<()> {
        self.snapshot = Some((offset, registrations.clone()));
        producer_state::prune_snapshots(&self.dir)?;
        self.log.note_dir_changed();
        Ok(())
    }
}
