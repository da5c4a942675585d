//! The leader-epoch cache of one replica (KIP-101 / KIP-279): ordered
//! `(epoch, start_offset)` entries saying at which offset each leader epoch
//! began in this replica's log, persisted in `leader-epoch-checkpoint` in the
//! replica's partition directory.
//!
//! File format (Kafka's own, text): a version line `0`, a count line, then
//! one `<epoch> <start_offset>` line per entry, oldest first. Every change is
//! written with `write_atomic`, so a crash leaves the old or the new file.

use crate::error::{ReplicationError, Result};
use mk_log::PartitionLog;
use mk_storage::{StorageError, fsutil};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// File name of the checkpoint inside a replica's partition directory.
pub const EPOCH_CHECKPOINT_FILE: &str = "leader-epoch-checkpoint";

const VERSION: &str = "0";

/// Bytes read per step when the cache must be rebuilt from the log.
const REBUILD_READ_BYTES: usize = 1 << 20;

/// Leader epoch `epoch` started at `start_offset` in this log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct EpochEntry {
    pub epoch: i32,
    pub start_offset: i64,
}

/// The answer to an `OffsetsForLeaderEpoch` question (KIP-279): the largest
/// epoch <= the requested one that this log knows, and the offset where that
/// epoch's data ends here (exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEndOffset {
    pub epoch: i32,
    pub end_offset: i64,
}

/// The in-memory cache plus the path of its checkpoint.
#[derive(Debug)]
pub(crate) struct LeaderEpochCache {
    path: PathBuf,
    entries: Vec<EpochEntry>,
    /// The log's fault seam, which the checkpoint's writes pass too.
    faults: std::sync::Arc<mk_storage::FaultInjector>,
}

impl LeaderEpochCache {
    /// Loads the cache of the log in `dir`. Entries that start at or beyond
    /// the LEO (left by a crash that cut the log's tail) are dropped. Only a
    /// missing checkpoint next to a non-empty log is rebuilt from the batch
    /// headers; a damaged checkpoint is STORAGE_ERROR.
    pub(crate) fn load(dir: &Path, log: &PartitionLog) -> Result<Self> {
        let path = dir.join(EPOCH_CHECKPOINT_FILE);
        let (entries, from_file) = match fsutil::read_optional(&path)? {
            Some(bytes) => (parse(&path, &bytes)?, true),
            None => (rebuild_from_log(log)?, false),
        };
        let mut cache = Self {
            path,
            entries: entries.clone(),
            faults: log.config().faults.clone(),
        };
        cache.entries.retain(|e| e.start_offset < log.leo());
        if !from_file || cache.entries != entries {
            cache.persist(&cache.entries)?;
        }
        Ok(cache)
    }

    pub(crate) fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    pub(crate) fn latest(&self) -> Option<EpochEntry> {
        self.entries.last().copied()
    }

    /// KIP-279's `endOffsetFor`: `None` (UNDEFINED) when the cache is empty
    /// or `epoch` is newer than every entry; the LEO for the latest epoch;
    /// otherwise the largest known epoch <= `epoch` (or `epoch` itself when
    /// it predates every entry) with the start offset of the first epoch
    /// greater than `epoch`.
    pub(crate) fn end_offset_for(&self, epoch: i32, leo: i64) -> Option<EpochEndOffset> {
        let latest = self.latest()?;
        if epoch == latest.epoch {
            return Some(EpochEndOffset {
                epoch,
                end_offset: leo,
            });
        }
        if epoch > latest.epoch {
            return None;
        }
        let higher = self
            .entries
            .iter()
            .find(|e| e.epoch > epoch)
            .expect("an entry newer than `epoch` exists because the latest one is");
        let floor = self.entries.iter().rev().find(|e| e.epoch <= epoch);
        Some(EpochEndOffset {
            epoch: floor.map_or(epoch, |f| f.epoch),
            end_offset: higher.start_offset,
        })
    }

    /// Records that `epoch` starts at `start_offset`. A no-op when `epoch`
    /// is already the latest; an older epoch or a start below the latest
    /// entry's would break the ordering every reconciliation relies on. Like
    /// Kafka, an entry that starts where the new one starts is replaced: it
    /// covers no data, so start offsets stay strictly increasing and two
    /// replicas holding the same batches hold the same entries.
    pub(crate) fn assign(&mut self, epoch: i32, start_offset: i64) -> Result<()> {
        if let Some(latest) = self.latest() {
            if epoch == latest.epoch {
                return Ok(());
            }
            assert!(
                epoch > latest.epoch && start_offset >= latest.start_offset,
                "leader epoch cache {}: cannot add epoch {epoch} at {start_offset} after epoch {} at {}",
                self.path.display(),
                latest.epoch,
                latest.start_offset
            );
        }
        let mut next: Vec<EpochEntry> = self
            .entries
            .iter()
            .copied()
            .filter(|e| e.start_offset < start_offset)
            .collect();
        next.push(EpochEntry {
            epoch,
            start_offset,
        });
        self.persist(&next)?;
        self.entries = next;
        Ok(())
    }

    /// Keeps only the entries that satisfy `keep`, persisting when that
    /// changes anything.
    fn retain(&mut self, keep: impl Fn(&EpochEntry) -> bool) -> Result<()> {
        let next: Vec<EpochEntry> = self.entries.iter().copied().filter(keep).collect();
        if next != self.entries {
            self.persist(&next)?;
            self.entries = next;
        }
        Ok(())
    }

    /// Drops entries whose epoch started at or after `end_offset` (the log
    /// was truncated there).
    pub(crate) fn truncate_from_end(&mut self, end_offset: i64) -> Result<()> {
        self.retain(|e| e.start_offset < end_offset)
    }

    /// Drops entries newer than `epoch`.
    pub(crate) fn retain_epochs_up_to(&mut self, epoch: i32) -> Result<()> {
        self.retain(|e| e.epoch <= epoch)
    }

    fn persist(&self, entries: &[EpochEntry]) -> Result<()> {
        fsutil::write_atomic_with(&self.faults, &self.path, encode(entries).as_bytes())?;
        Ok(())
    }
}

fn encode(entries: &[EpochEntry]) -> String {
    let mut out = format!("{VERSION}\n{}\n", entries.len());
    for e in entries {
        let _ = writeln!(out, "{} {}", e.epoch, e.start_offset);
    }
    out
}

fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<EpochEntry>> {
    let bad = |reason: String| ReplicationError::from(StorageError::unusable(path, reason));
    let text = std::str::from_utf8(bytes).map_err(|e| bad(format!("not UTF-8: {e}")))?;
    let mut lines = text.lines();
    match lines.next() {
        Some(VERSION) => {}
        other => {
            return Err(bad(format!(
                "expected version line {VERSION:?}, found {other:?}"
            )));
        }
    }
    let count: usize = lines
        .next()
        .and_then(|l| l.parse().ok())
        .ok_or_else(|| bad("expected an entry count on line 2".into()))?;
    let mut entries: Vec<EpochEntry> = Vec::with_capacity(count.min(1024));
    for (i, line) in lines.by_ref().take(count).enumerate() {
        let mut parts = line.split(' ');
        let (Some(epoch), Some(start), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad(format!(
                "line {}: expected \"<epoch> <start_offset>\", found {line:?}",
                i + 3
            )));
        };
        let (Ok(epoch), Ok(start_offset)) = (epoch.parse::<i32>(), start.parse::<i64>()) else {
            return Err(bad(format!(
                "line {}: unparsable numbers in {line:?}",
                i + 3
            )));
        };
        if epoch < 0 || start_offset < 0 {
            return Err(bad(format!("line {}: negative value in {line:?}", i + 3)));
        }
        if let Some(prev) = entries.last()
            && (epoch <= prev.epoch || start_offset < prev.start_offset)
        {
            return Err(bad(format!(
                "line {}: entry ({epoch}, {start_offset}) does not follow ({}, {}); epochs must increase and start offsets must not decrease",
                i + 3,
                prev.epoch,
                prev.start_offset
            )));
        }
        entries.push(EpochEntry {
            epoch,
            start_offset,
        });
    }
    if entries.len() != count {
        return Err(bad(format!(
            "expected {count} entries, found {}",
            entries.len()
        )));
    }
    if let Some(extra) = lines.find(|l| !l.is_empty()) {
        return Err(bad(format!(
            "unexpected line after {count} entries: {extra:?}"
        )));
    }
    Ok(entries)
}

/// Rebuilds the cache from the batch headers. Only used when the checkpoint
/// is missing next to a non-empty log (a directory written before the file
/// existed, or a checkpoint deleted by hand), never on a normal open.
fn rebuild_from_log(log: &PartitionLog) -> Result<Vec<EpochEntry>> {
    let mut entries: Vec<EpochEntry> = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < log.leo() {
        let batches = log.read_batches(offset, REBUILD_READ_BYTES, None)?;
        let Some(last) = batches.last() else { break };
        let next = last.next_offset();
        for b in &batches {
            let epoch = b.header.leader_epoch;
            if entries.last().is_none_or(|e| epoch > e.epoch) {
                entries.push(EpochEntry {
                    epoch,
                    start_offset: b.base_offset(),
                });
            }
        }
        offset = next;
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use mk_core::ErrorCode;
    use mk_log::{LogConfig, Record, RecordBatch};

    fn batch(n: usize) -> RecordBatch {
        RecordBatch::new(
            (0..n)
                .map(|i| Record::new(None, Some(Bytes::from(format!("v{i}"))), 1))
                .collect(),
        )
        .unwrap()
    }

    fn cache(entries: &[(i32, i64)]) -> LeaderEpochCache {
        LeaderEpochCache {
            path: PathBuf::from("unused"),
            entries: entries
                .iter()
                .map(|&(epoch, start_offset)| EpochEntry {
                    epoch,
                    start_offset,
                })
                .collect(),
            faults: std::sync::Arc::new(mk_storage::FaultInjector::new()),
        }
    }

    fn end(epoch: i32, end_offset: i64) -> Option<EpochEndOffset> {
        Some(EpochEndOffset { epoch, end_offset })
    }

    #[test]
    fn end_offset_for_epoch_follows_kip_279() {
        let c = cache(&[(1, 0), (3, 10), (4, 15)]);
        assert_eq!(c.end_offset_for(4, 20), end(4, 20), "latest epoch: LEO");
        assert_eq!(c.end_offset_for(3, 20), end(3, 15));
        assert_eq!(c.end_offset_for(2, 20), end(1, 10), "unknown epoch: floor");
        assert_eq!(c.end_offset_for(0, 20), end(0, 0), "below the first entry");
        assert_eq!(c.end_offset_for(5, 20), None, "newer than every entry");
        assert_eq!(cache(&[]).end_offset_for(0, 0), None);
    }

    #[test]
    fn checkpoint_round_trips_in_kafka_text_format_and_drops_entries_beyond_leo() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(dir.path(), LogConfig::default(), 0).unwrap();
        log.append(batch(2)).unwrap();
        log.set_leader_epoch(2).unwrap();
        log.append(batch(1)).unwrap();
        let mut c = LeaderEpochCache::load(dir.path(), &log).unwrap();
        assert_eq!(
            c.entries(),
            &[
                EpochEntry {
                    epoch: 0,
                    start_offset: 0
                },
                EpochEntry {
                    epoch: 2,
                    start_offset: 2
                }
            ],
            "a missing checkpoint next to data is rebuilt from the batch headers"
        );
        c.assign(3, 3).unwrap();
        let text = std::fs::read_to_string(dir.path().join(EPOCH_CHECKPOINT_FILE)).unwrap();
        assert_eq!(text, "0\n3\n0 0\n2 2\n3 3\n");
        let reloaded = LeaderEpochCache::load(dir.path(), &log).unwrap();
        assert_eq!(reloaded.entries().len(), 2, "epoch 3 starts at the LEO");
        let text = std::fs::read_to_string(dir.path().join(EPOCH_CHECKPOINT_FILE)).unwrap();
        assert_eq!(text, "0\n2\n0 0\n2 2\n");
    }

    #[test]
    fn damaged_checkpoint_is_storage_error() {
        let dir = tempfile::tempdir().unwrap();
        let log = PartitionLog::open(dir.path(), LogConfig::default(), 0).unwrap();
        for bad in [
            "1\n0\n",
            "0\nx\n",
            "0\n2\n0 0\n",
            "0\n1\n0\n",
            "0\n2\n1 0\n1 5\n",
            "0\n2\n1 5\n2 3\n",
            "0\n1\n-1 0\n",
            "0\n1\n0 0\n7 7\n",
        ] {
            std::fs::write(dir.path().join(EPOCH_CHECKPOINT_FILE), bad).unwrap();
            let err = LeaderEpochCache::load(dir.path(), &log).unwrap_err();
            assert_eq!(err.code(), ErrorCode::StorageError, "{bad:?}");
        }
    }

    #[test]
    fn truncation_and_epoch_pruning_persist() {
        let dir = tempfile::tempdir().unwrap();
        let log = PartitionLog::open(dir.path(), LogConfig::default(), 0).unwrap();
        let mut c = LeaderEpochCache::load(dir.path(), &log).unwrap();
        c.assign(0, 0).unwrap();
        c.assign(0, 5).unwrap();
        c.assign(1, 5).unwrap();
        c.assign(2, 5).unwrap();
        assert_eq!(
            c.entries().iter().map(|e| e.epoch).collect::<Vec<_>>(),
            [0, 2],
            "an epoch without data is replaced by the next one at the same offset"
        );
        c.assign(4, 9).unwrap();
        c.truncate_from_end(9).unwrap();
        assert_eq!(c.latest().unwrap().epoch, 2);
        c.retain_epochs_up_to(1).unwrap();
        assert_eq!(c.entries().len(), 1);
        let text = std::fs::read_to_string(dir.path().join(EPOCH_CHECKPOINT_FILE)).unwrap();
        assert_eq!(text, "0\n1\n0 0\n");
        c.retain_epochs_up_to(-1).unwrap();
        assert_eq!(c.latest(), None);
    }
}
