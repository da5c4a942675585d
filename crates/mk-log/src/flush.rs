//! The flush in three steps, so the slow part holds no lock.
//!
//! [`PartitionLog::flush`] fsyncs under `&mut self`, which for a broker
//! means under the partition's write lock: every append and fetch of the
//! partition waits for the disk, up to tens of milliseconds per cycle. The
//! flush cycle of a broker instead:
//!
//! 1. [`PartitionLog::plan_flush`] (under the lock, no I/O but opening
//!    files): which files hold unsynced bytes, as file handles, and the
//!    recovery checkpoint that describes the closed segments once they are
//!    synced;
//! 2. [`FlushPlan::sync`] (no lock): the fsyncs, then the checkpoint written
//!    and fsynced beside its place ([`fsutil::stage`]);
//! 3. [`PartitionLog::finish_flush`] (under the lock, no fsync): marks
//!    synced what has not changed since step 1 and renames the checkpoint
//!    into place.
//!
//! Appends between steps 1 and 3 are simply not covered: the active
//! segment keeps its unsynced mark when it grew, and the next flush syncs
//! it. Anything that rewrote the log meanwhile (truncation, retention,
//! compaction: the `rewrites` counter) makes step 3 mark nothing and drop
//! the checkpoint, whose summary may no longer hold. A failed fsync latches
//! the log in step 3 exactly as in `flush`.

use crate::checkpoint::{Checkpoint, CheckpointKind, SegmentSummary};
use crate::error::{LogError, Result};
use crate::log::PartitionLog;
use crate::segment::{INDEX_EXT, LOG_EXT, TIME_INDEX_EXT};
use mk_storage::FaultInjector;
use mk_storage::fsutil::{self, Staged};
use std::fs::File;
use std::path::PathBuf;

/// What one flush must make durable, collected by
/// [`PartitionLog::plan_flush`]; [`FlushPlan::sync`] does it without the
/// log.
#[derive(Debug)]
pub struct FlushPlan {
    faults: std::sync::Arc<FaultInjector>,
    /// Files to fsync; `true` when only the data matters (`fdatasync`).
    files: Vec<(PathBuf, File, bool)>,
    /// `(base offset, size)` of every segment the files above cover.
    segments: Vec<(i64, u64)>,
    /// The directory, when entries in it changed since its last fsync.
    dir: Option<PathBuf>,
    /// The recovery checkpoint to write, with the bases it lists.
    checkpoint: Option<(PathBuf, Vec<u8>, Vec<i64>)>,
    /// Index files of segments rolled since the last flush (the roll leaves
    /// them to the flush): segment base, path, bytes.
    indexes: Vec<(i64, PathBuf, Vec<u8>)>,
    rewrites: u64,
    rolls: u64,
}

/// The outcome of [`FlushPlan::sync`], for [`PartitionLog::finish_flush`].
#[derive(Debug)]
pub struct SyncedFlush {
    plan: FlushPlan,
    result: Result<Option<(Staged, Vec<i64>)>>,
    /// The index files, staged beside their places.
    indexes: Vec<(i64, Staged)>,
    /// The failure was an fsync's: it latches the log whatever its kind.
    fsync_failed: bool,
}

impl SyncedFlush {
    /// Whether the fsyncs (and the staged checkpoint) succeeded; the error
    /// itself reaches the caller through `finish_flush`.
    pub fn succeeded(&self) -> bool {
        self.result.is_ok()
    }
}

impl FlushPlan {
    /// The fsyncs of the plan, then the staged checkpoint. Needs no lock:
    /// the files are this plan's own handles.
    pub fn sync(mut self) -> SyncedFlush {
        // Index files first: the checkpoint below vouches for the segments
        // they belong to. They are staged and renamed like the checkpoint,
        // never written over a file that a compaction may have replaced
        // meanwhile (a missing index is rebuilt on open; a stale one that
        // looks valid would not be).
        let mut indexes: Vec<(i64, Staged)> = Vec::with_capacity(self.indexes.len());
        for (base, path, bytes) in std::mem::take(&mut self.indexes) {
            match fsutil::stage(&self.faults, &path, &bytes) {
                Ok(staged) => indexes.push((base, staged)),
                Err(e) => {
                    indexes.into_iter().for_each(|(_, s)| s.discard());
                    return SyncedFlush {
                        plan: self,
                        result: Err(e.into()),
                        indexes: Vec::new(),
                        fsync_failed: false,
                    };
                }
            }
        }
        if let Err(e) = self.sync_all() {
            indexes.into_iter().for_each(|(_, s)| s.discard());
            return SyncedFlush {
                plan: self,
                result: Err(e),
                indexes: Vec::new(),
                fsync_failed: true,
            };
        }
        let result = self
            .checkpoint
            .take()
            .map_or(Ok(None), |(path, bytes, bases)| {
                self.faults.before_write(&path)?;
                let staged = fsutil::stage(&self.faults, &path, &bytes)?;
                Ok(Some((staged, bases)))
            });
        SyncedFlush {
            plan: self,
            result,
            indexes,
            fsync_failed: false,
        }
    }

    fn sync_all(&self) -> Result<()> {
        for (path, file, data_only) in &self.files {
            self.faults.before_sync(path)?;
            let synced = if *data_only {
                file.sync_data()
            } else {
                file.sync_all()
            };
            synced.map_err(|e| LogError::io(path, e))?;
        }
        if let Some(dir) = &self.dir {
            self.faults.before_sync(dir)?;
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| LogError::io(dir, e))?;
        }
        Ok(())
    }
}

impl PartitionLog {
    /// Counts the changes that rewrote stored bytes or removed segments
    /// (truncation, retention, compaction). Whoever writes state derived
    /// from the log outside its lock (a producer snapshot, a high-watermark
    /// checkpoint) puts it in place only if this did not change meanwhile.
    pub fn rewrite_count(&self) -> u64 {
        self.rewrites
    }

    /// Files in the log's directory were created, renamed or removed by its
    /// owner: the next flush fsyncs the directory.
    pub fn note_dir_changed(&mut self) {
        self.dir_dirty = true;
    }

    /// Step 1 of the lock-free flush (see the module docs): cheap, under the
    /// caller's lock.
    pub fn plan_flush(&mut self) -> Result<FlushPlan> {
        self.check_writable()?;
        let mut plan = FlushPlan {
            faults: self.config.faults.clone(),
            files: Vec::new(),
            segments: Vec::new(),
            dir: self.dir_dirty.then(|| self.dir.clone()),
            checkpoint: None,
            indexes: Vec::new(),
            rewrites: self.rewrites,
            rolls: self.rolls,
        };
        let last = self.segments.len() - 1;
        for (i, seg) in self.segments.iter().enumerate() {
            if !seg.unsynced {
                continue;
            }
            let path = seg.path(&self.dir, LOG_EXT);
            if i == last {
                let file = self
                    .active_file
                    .try_clone()
                    .map_err(|e| LogError::io(&path, e))?;
                plan.files.push((path, file, true));
            } else {
                let file = File::open(&path).map_err(|e| LogError::io(&path, e))?;
                plan.files.push((path, file, false));
                for ext in [INDEX_EXT, TIME_INDEX_EXT] {
                    let p = seg.path(&self.dir, ext);
                    if let Ok(f) = File::open(&p) {
                        plan.files.push((p, f, false));
                    }
                }
            }
            plan.segments.push((seg.base_offset, seg.size));
        }
        for seg in &self.segments[..last] {
            if let (true, Some(idx)) = (seg.index_dirty, seg.indexes.get()) {
                let base = seg.base_offset;
                let offsets = (base, seg.path(&self.dir, INDEX_EXT), idx.offsets.to_bytes());
                let times = (
                    base,
                    seg.path(&self.dir, TIME_INDEX_EXT),
                    idx.times.to_bytes(),
                );
                plan.indexes.extend([offsets, times]);
            }
        }
        let closed = &self.segments[..last];
        if !closed
            .iter()
            .map(|s| s.base_offset)
            .eq(self.recovery_bases.iter().copied())
        {
            // The recovery point: every closed segment is synced once this
            // plan is (the ones marked unsynced are in it), so after a crash
            // only the segments from the active one on need a scan.
            // Rewritten only when the closed segments changed.
            let mut txns = self.txns.clone();
            txns.truncate(self.active_segment().base_offset);
            let cp = Checkpoint {
                segments: closed.iter().map(SegmentSummary::of).collect(),
                txns,
            };
            let path = self.dir.join(CheckpointKind::RecoveryPoint.file_name());
            let bases = closed.iter().map(|s| s.base_offset).collect();
            plan.checkpoint = Some((path, cp.encode(), bases));
        }
        Ok(plan)
    }

    /// Step 3 of the lock-free flush: under the caller's lock again.
    /// Returns the error of step 2 (the log then refuses writes, as after a
    /// failed `flush`).
    pub fn finish_flush(&mut self, synced: SyncedFlush) -> Result<()> {
        let SyncedFlush {
            plan,
            result,
            indexes,
            fsync_failed,
        } = synced;
        let staged = match result {
            Ok(staged) => staged,
            // After a failed fsync nobody knows what the disk holds; a
            // failed checkpoint write (a full disk) changed nothing.
            Err(e) if fsync_failed => {
                self.latch(&e);
                return Err(e);
            }
            Err(e) => return self.fail(e),
        };
        if plan.rewrites != self.rewrites {
            // Truncated, compacted or shortened meanwhile: what was synced
            // may not be what the log now holds. The next flush redoes it.
            if let Some((staged, _)) = staged {
                staged.discard();
            }
            indexes.into_iter().for_each(|(_, s)| s.discard());
            return Ok(());
        }
        let mut renamed = Vec::with_capacity(indexes.len());
        for (base, staged) in indexes {
            if let Err(e) = staged.commit(&self.config.faults) {
                return self.fail(e.into());
            }
            renamed.push(base);
        }
        for seg in &mut self.segments {
            if renamed.contains(&seg.base_offset) {
                seg.index_dirty = false;
                if let Some(i) = seg.indexes.get_mut() {
                    i.rebuilt = false;
                }
                // The renames are durable with the next directory fsync.
                self.dir_dirty = true;
            }
        }
        for (base, size) in &plan.segments {
            if let Some(seg) = self.segments.iter_mut().find(|s| s.base_offset == *base)
                && seg.size == *size
            {
                seg.unsynced = false;
            }
        }
        if plan.dir.is_some() && plan.rolls == self.rolls {
            self.dir_dirty = false;
        }
        if let Some((staged, bases)) = staged {
            if let Err(e) = staged.commit(&self.config.faults) {
                return self.fail(e.into());
            }
            self.recovery_bases = bases;
            // The rename is durable with the next directory fsync; until
            // then a crash finds the previous checkpoint, which listed a
            // prefix of the same segments and stays true.
            self.dir_dirty = true;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::checkpoint::CheckpointKind;
    use crate::config::LogConfig;
    use crate::log::PartitionLog;
    use crate::record::{Record, RecordBatch};
    use bytes::Bytes;

    fn small_segments() -> LogConfig {
        LogConfig {
            segment_max_bytes: 1_024,
            ..LogConfig::default()
        }
    }

    fn append(log: &mut PartitionLog, n: usize) {
        for i in 0..n {
            let value = Bytes::from(vec![b'v'; 200]);
            let r = Record::new(Some(Bytes::from(format!("k{i}"))), Some(value), 1);
            log.append(RecordBatch::new(vec![r]).unwrap()).unwrap();
        }
    }

    /// A log of `n` appended records in a new directory.
    fn log_of(n: usize) -> (tempfile::TempDir, PartitionLog) {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(dir.path(), small_segments(), 0).unwrap();
        append(&mut log, n);
        (dir, log)
    }

    fn recovery_point_written(dir: &std::path::Path) -> bool {
        dir.join(CheckpointKind::RecoveryPoint.file_name()).exists()
    }

    fn staged_left(dir: &std::path::Path) -> bool {
        std::fs::read_dir(dir).unwrap().any(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".staged")
        })
    }

    fn unsynced(log: &PartitionLog) -> Vec<i64> {
        log.segments
            .iter()
            .filter(|s| s.unsynced)
            .map(|s| s.base_offset)
            .collect()
    }

    #[test]
    fn appends_between_plan_and_finish_stay_unsynced() {
        let (dir, mut log) = log_of(12);
        // A fresh active segment with room for the append below.
        log.roll().unwrap();
        append(&mut log, 1);
        let closed_at_plan: Vec<i64> = log.segments[..log.segments.len() - 1]
            .iter()
            .map(|s| s.base_offset)
            .collect();
        assert!(closed_at_plan.len() >= 2, "the appends rolled segments");
        let plan = log.plan_flush().unwrap();
        let active_at_plan = log.active_segment().base_offset;
        // Without the lock: another append lands in the planned active
        // segment while the fsyncs run.
        append(&mut log, 1);
        assert_eq!(log.active_segment().base_offset, active_at_plan);
        let synced = plan.sync();
        log.finish_flush(synced).unwrap();

        let left = unsynced(&log);
        assert!(
            left.contains(&active_at_plan),
            "the grown segment keeps its mark: {left:?}"
        );
        assert!(
            closed_at_plan.iter().all(|b| !left.contains(b)),
            "segments closed at plan time are synced: {left:?}"
        );
        assert_eq!(log.recovery_bases, closed_at_plan);
        for base in &closed_at_plan {
            for ext in ["index", "timeindex"] {
                let p = dir.path().join(format!("{base:020}.{ext}"));
                assert!(p.exists(), "the flush wrote {}", p.display());
            }
        }
        assert!(recovery_point_written(dir.path()));
        assert!(
            !staged_left(dir.path()),
            "the staged checkpoint was renamed into place"
        );
    }

    #[test]
    fn a_truncation_between_plan_and_finish_discards_the_flush() {
        let (dir, mut log) = log_of(12);
        let plan = log.plan_flush().unwrap();
        log.truncate_to(1).unwrap();
        let synced = plan.sync();
        log.finish_flush(synced).unwrap();

        assert!(
            log.recovery_bases.is_empty(),
            "no summary of the old segments"
        );
        assert!(!recovery_point_written(dir.path()));
        assert!(
            !staged_left(dir.path()),
            "the staged checkpoint was removed"
        );
        // The next flush covers what is there now.
        log.flush().unwrap();
        assert!(unsynced(&log).is_empty());
    }

    #[test]
    fn a_flush_under_the_lock_while_a_plan_is_out_keeps_both_valid() {
        let (dir, mut log) = log_of(12);
        let plan = log.plan_flush().unwrap();
        // A flush policy's flush (under the lock) between the cycle's steps:
        // both stage the recovery checkpoint, each in its own file.
        log.flush().unwrap();
        let synced = plan.sync();
        log.finish_flush(synced).unwrap();
        assert!(!staged_left(dir.path()));
        drop(log);
        // A crash: the recovery point on disk is whole and trusted.
        let reopened = PartitionLog::open(dir.path(), small_segments(), 0).unwrap();
        assert_eq!(reopened.leo(), 12);
    }

    #[test]
    fn staged_files_a_crash_left_are_removed_at_open() {
        let (dir, mut log) = log_of(12);
        let synced = log.plan_flush().unwrap().sync();
        // The process dies between staging and renaming.
        std::mem::forget(synced);
        assert!(staged_left(dir.path()));
        drop(log);
        let reopened = PartitionLog::open(dir.path(), small_segments(), 0).unwrap();
        assert_eq!(reopened.leo(), 12);
        assert!(!staged_left(dir.path()));
    }

    #[test]
    fn a_failed_fsync_outside_the_lock_latches_the_log() {
        let (_dir, mut log) = log_of(3);
        let plan = log.plan_flush().unwrap();
        log.config.faults.fail_syncs(true);
        let synced = plan.sync();
        let e = log.finish_flush(synced).unwrap_err();
        assert!(e.is_storage_failure(), "{e}");
        assert!(log.check_writable().is_err(), "the log refuses writes");
    }
}
