//! Key compaction (`cleanup.policy=compact`) and its crash-safe swap.
//!
//! Closed segments below the first unstable offset are rewritten keeping,
//! for every key, only its latest record in the whole log; null-key records
//! are kept; tombstones are kept until they are older than
//! `delete_retention_ms`; records of aborted transactions are dropped
//! (like Kafka's cleaner). A transaction marker goes once its transaction
//! has no record left (an aborted one never has, once cleaned), its
//! producer has a later batch in the log (which keeps the producer's state,
//! as Kafka's cleaner keeps each producer's last batch) and the newest
//! record of its segment is older than `delete_retention_ms` (Kafka times
//! the marker's removal from a delete horizon it writes into the batch at
//! the first cleaning; the segment's time needs no change of format, as the
//! tombstone rule uses the record's own). The transaction index forgets the
//! transaction with its marker, so a read_committed reader is never told
//! of an abort whose marker it cannot meet. A marker says nothing a reader
//! needs once its transaction's records are gone; without this, a
//! transactional producer committing every 100 ms would leave 864,000
//! markers a day in a compacted topic. Offsets of kept records never change. A batch
//! that keeps all its records is copied byte for byte; one that loses some
//! is rebuilt: a producer's block (version 2) as a new block of the kept
//! records, compressed with the block's codec, with its base and last
//! offset, producer id, epoch, base sequence, transactional and timestamp
//! type attributes kept (what Kafka's cleaner keeps, so a producer's last
//! sequence survives); a batch the broker encoded (version 1) as version 1.
//! A batch that loses every record goes, except its producer's last data
//! batch: that one stays as an emptied batch (no records, its offsets and
//! sequence kept; `BlockBatch::emptied`), as Kafka's cleaner keeps it, so
//! a replica that rebuilds its producer state from the log still knows the
//! producer's last sequence. It goes once the producer has a later batch.
//!
//! The swap is crash-safe at every instant:
//! 1. cleaned copies `<base>.{log,index,timeindex}.cleaned` are written and
//!    fsynced beside the live files; a crash here leaves the old log (open
//!    deletes stray `.cleaned` files);
//! 2. the commit point: a `cleaner-swap` file listing the bases is written
//!    (temp file, fsync, rename, directory fsync); from here on, open rolls
//!    the swap forward;
//! 3. every `.cleaned` file is renamed over its live file (each rename is
//!    atomic), the directory is fsynced and `cleaner-swap` is removed.

use crate::block::BlockBatch;
use crate::error::{LogError, Result};
use crate::log::PartitionLog;
use crate::segment::{INDEX_EXT, LOG_EXT, Segment, TIME_INDEX_EXT, segment_path, write_file};
use crate::swap::{EXTS, SWAP_MARKER, cleaned_path, encode_bases, remove_cleaned_files};
use crate::txn_index::AbortedTxn;
use crate::{block_records, codec, codec::BatchHeader};
use bytes::Bytes;
use mk_storage::fsutil;
use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::ops::ControlFlow;

/// What a compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactionResult {
    /// Base offsets of the closed segments that were rewritten.
    pub segments: Vec<i64>,
    /// Records in the examined closed segments before compaction.
    pub records_before: u64,
    /// Records in the examined closed segments after compaction.
    pub records_after: u64,
    /// Transaction markers removed (see the module docs).
    pub markers_removed: u64,
    /// Producers' last data batches left empty (see the module docs).
    pub batches_emptied: u64,
}

/// What decides a transaction marker's removal while the segments are
/// rewritten in order.
struct Markers {
    /// The base offset of each producer's last batch below the key map's
    /// limit.
    last_batch: HashMap<i64, i64>,
    /// The base offset of each producer's last data batch there.
    last_data: HashMap<i64, i64>,
    /// Producers whose current transaction kept a record in this cleaning.
    retained: HashSet<i64>,
    /// Markers removed, by offset.
    removed: Vec<i64>,
}

impl Markers {
    /// A data batch that keeps `kept` records.
    fn data(&mut self, h: &BatchHeader, kept: usize) {
        if h.transactional && kept > 0 {
            self.retained.insert(h.producer.producer_id);
        }
    }

    /// Whether `h` is its producer's last data batch, which stays (empty if
    /// need be) so that the producer's last sequence stays in the log.
    fn is_last_data(&self, h: &BatchHeader) -> bool {
        h.producer.producer_id >= 0
            && self.last_data.get(&h.producer.producer_id) == Some(&h.base_offset)
    }

    /// Whether the marker `h` stays; `aged` when its segment's newest record
    /// is past the grace.
    fn keeps(&mut self, h: &BatchHeader, aged: bool) -> bool {
        let pid = h.producer.producer_id;
        let had_records = self.retained.remove(&pid);
        let later_batch = self
            .last_batch
            .get(&pid)
            .is_some_and(|&last| last > h.base_offset);
        let gone = h.transactional && !had_records && later_batch && aged;
        if gone {
            self.removed.push(h.base_offset);
        }
        !gone
    }
}

/// Where the cleaner stands on a log (Kafka's `LogToClean`): the part
/// compacted before, the part written since, and whether that makes the
/// log due for cleaning.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CleanerState {
    /// The first offset not compacted yet (the log start when the stored
    /// one is out of the log's range).
    pub first_dirty_offset: i64,
    /// Where cleaning must stop: the base of the first closed segment it
    /// may not clean (the active segment, the first unstable offset, or a
    /// dirty segment within `min_lag_ms`).
    pub first_uncleanable_offset: i64,
    /// Bytes of the segments below the first dirty offset.
    pub clean_bytes: u64,
    /// Bytes of the segments from the first dirty offset to the first
    /// uncleanable one.
    pub dirty_bytes: u64,
    /// A dirty closed segment's first batch is older than `max_lag_ms`.
    pub overdue: bool,
    /// The cleaner compacts the log now: it is overdue with dirty bytes, or
    /// its dirty ratio is above `min_dirty_ratio` (Kafka compares with >).
    pub due: bool,
}

impl CleanerState {
    /// Dirty bytes over clean and dirty bytes (0 for an empty section).
    pub fn dirty_ratio(&self) -> f64 {
        let total = self.clean_bytes + self.dirty_bytes;
        if total == 0 {
            return 0.0;
        }
        // Byte counts of one log are far below 2^52: exact as f64.
        self.dirty_bytes as f64 / total as f64
    }
}

/// Aborted ranges by producer id.
struct Aborted(HashMap<i64, Vec<(i64, i64)>>);

impl Aborted {
    fn new(list: Vec<AbortedTxn>) -> Self {
        let mut map: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
        for a in list {
            map.entry(a.producer_id)
                .or_default()
                .push((a.first_offset, a.last_offset));
        }
        Self(map)
    }

    fn contains(&self, header: &BatchHeader, offset: i64) -> bool {
        header.transactional
            && self
                .0
                .get(&header.producer.producer_id)
                .is_some_and(|ranges| {
                    ranges
                        .iter()
                        .any(|&(first, last)| first <= offset && offset <= last)
                })
    }
}

struct Cleaned {
    index: usize,
    shadow: Segment,
}

/// What rewriting one segment did.
struct SegmentPass {
    shadow: Segment,
    /// Data records before and after.
    before: u64,
    after: u64,
    /// Producers' last data batches left empty.
    emptied: u64,
    /// Whether any batch was not copied as it was.
    changed: bool,
}

/// How a batch stays in a cleaned segment.
enum Kept {
    /// Copied byte for byte; its newest record's time (-1: none).
    AsItWas(i64),
    /// Written anew (the frame is in the caller's buffer): its header and
    /// newest record's time.
    Rewritten(BatchHeader, i64),
}

/// Cleans one data batch: `None` when it goes, else how it stays (a
/// rewritten one is encoded into `buf`).
fn clean_data_batch(
    b: &crate::StoredBatch,
    keep: &impl Fn(&BatchHeader, i64, &crate::Record) -> bool,
    markers: &mut Markers,
    pass: &mut SegmentPass,
    buf: &mut Vec<u8>,
) -> Result<Option<Kept>> {
    let mut batch = b.decode()?;
    let produced = batch.block().cloned();
    let n = batch.records().len();
    batch.retain_records(|o, r| keep(&b.header, o, r));
    let kept = batch.records().len();
    markers.data(&b.header, kept);
    pass.before += n as u64;
    pass.after += kept as u64;
    let last = markers.is_last_data(&b.header);
    if kept == n {
        // Every record stays; an emptied batch stays empty while it is its
        // producer's last.
        return Ok((n > 0 || last).then(|| Kept::AsItWas(batch.max_timestamp_ms())));
    }
    buf.clear();
    if kept == 0 {
        if !last {
            return Ok(None);
        }
        // A producer's last data batch stays, empty, as Kafka's cleaner
        // keeps it: its sequence is the producer's state.
        let tid = batch.transactional_id().map(str::to_string);
        BlockBatch::emptied(&b.header, tid)?.encode_into(buf)?;
        pass.emptied += 1;
        return Ok(Some(Kept::Rewritten(b.header.with_record_count(0), -1)));
    }
    // A producer's block loses records as Kafka's cleaner rebuilds one: the
    // kept records in a new version 2 block of the same codec, offsets,
    // producer and markers kept.
    match &produced {
        Some(p) => block_records::rebuild(p, &batch)?.encode_into(buf)?,
        None => codec::encode_into(&batch, buf)?,
    }
    let count = u32::try_from(kept).expect("kept records are at most the batch's u32 count");
    Ok(Some(Kept::Rewritten(
        b.header.with_record_count(count),
        batch.max_timestamp_ms(),
    )))
}

impl PartitionLog {
    /// Compacts the closed segments (see the module docs). `now_ms` decides
    /// which tombstones have outlived `delete_retention_ms`.
    pub fn compact(&mut self, now_ms: i64, delete_retention_ms: i64) -> Result<CompactionResult> {
        self.check_writable()?;
        if delete_retention_ms < 0 {
            return Err(LogError::InvalidRequest(format!(
                "delete_retention_ms must be >= 0, got {delete_retention_ms}"
            )));
        }
        let mut swapping = false;
        match self.compact_inner(now_ms, delete_retention_ms, &mut swapping) {
            Ok(r) => Ok(r),
            Err(e) if swapping => {
                // Past the commit marker the files and the memory disagree
                // until the next open rolls the swap forward.
                self.latch(&e);
                Err(e)
            }
            Err(e) => {
                // Before the marker the live segments are untouched; what
                // was written beside them goes, so a full disk gets no
                // fuller, and a transient failure can simply be retried.
                let _ = remove_cleaned_files(&self.dir);
                self.fail(e)
            }
        }
    }

    /// Compacts the closed segments as [`Self::compact`] does when the
    /// cleaner finds the log due ([`Self::cleaner_state`]); `None` when it
    /// is not.
    pub fn compact_if_due(
        &mut self,
        now_ms: i64,
        delete_retention_ms: i64,
    ) -> Result<Option<CompactionResult>> {
        if !self.cleaner_state(now_ms)?.due {
            return Ok(None);
        }
        self.compact(now_ms, delete_retention_ms).map(Some)
    }

    /// The cleaner's view of this log at `now_ms` (Kafka's
    /// LogCleanerManager): the first dirty offset, the dirty and clean
    /// bytes of the closed segments, and whether the log is due for
    /// cleaning by `min_dirty_ratio` or `max_lag_ms`. Reads the first batch
    /// of each dirty closed segment.
    pub fn cleaner_state(&self, now_ms: i64) -> Result<CleanerState> {
        let first_dirty = self.first_dirty_offset();
        let (_, eligible, _) = self.cleanable(now_ms);
        let uncleanable = self.segments[eligible].base_offset.max(first_dirty);
        let closed = &self.segments[..self.segments.len() - 1];
        let bytes = |from: i64, to: i64| -> u64 {
            closed
                .iter()
                .filter(|s| s.base_offset < to && s.next_offset > from)
                .map(|s| s.size)
                .sum()
        };
        let clean_bytes = bytes(i64::MIN, first_dirty);
        let dirty_bytes = bytes(first_dirty.min(uncleanable), uncleanable);
        let clean_until = now_ms.saturating_sub(self.config.cleaner.max_lag_ms.max(0));
        let mut overdue = false;
        for (i, s) in closed.iter().enumerate() {
            if s.next_offset > first_dirty
                && self
                    .first_batch_max_ts(i)?
                    .is_some_and(|ts| ts > 0 && ts < clean_until)
            {
                overdue = true;
                break;
            }
        }
        let mut state = CleanerState {
            first_dirty_offset: first_dirty,
            first_uncleanable_offset: uncleanable,
            clean_bytes,
            dirty_bytes,
            overdue,
            due: false,
        };
        state.due = (overdue && dirty_bytes > 0)
            || state.dirty_ratio() > self.config.cleaner.min_dirty_ratio;
        Ok(state)
    }

    /// The stored first dirty offset, or the log start when it lies outside
    /// the log (below its start, or past its end after a lost tail), as
    /// Kafka resets its cleaner checkpoint.
    pub fn first_dirty_offset(&self) -> i64 {
        let start = self.log_start_offset();
        if self.first_dirty < start || self.first_dirty > self.leo() {
            start
        } else {
            self.first_dirty
        }
    }

    /// The cleanable section: the first unstable offset (or LEO), how many
    /// closed segments below it may be cleaned, and where the keys that
    /// clean them end. Under a compaction lag, cleaning stops at the first
    /// dirty segment holding a record newer than `now_ms - lag`, and
    /// records past it neither go nor make older records of their key go
    /// (Kafka's cleanable section).
    fn cleanable(&self, now_ms: i64) -> (i64, usize, i64) {
        let leo = self.leo();
        let limit = self.first_unstable_offset().map_or(leo, |u| u.min(leo));
        let closed = self.segments.len() - 1;
        let lag = self.config.cleaner.min_lag_ms;
        let newest_cleanable = now_ms.saturating_sub(lag);
        let first_dirty = self.first_dirty_offset();
        let eligible = self.segments[..closed]
            .iter()
            .take_while(|s| s.next_offset <= limit)
            .take_while(|s| {
                lag == 0 || s.next_offset <= first_dirty || s.max_timestamp_ms <= newest_cleanable
            })
            .count();
        let map_limit = match eligible.checked_sub(1) {
            Some(last) if lag > 0 => self.segments[last].next_offset,
            _ => limit,
        };
        (limit, eligible, map_limit)
    }

    fn compact_inner(
        &mut self,
        now_ms: i64,
        delete_retention_ms: i64,
        swapping: &mut bool,
    ) -> Result<CompactionResult> {
        let (limit, eligible, map_limit) = self.cleanable(now_ms);
        let mut result = CompactionResult::default();
        if eligible == 0 {
            return Ok(result);
        }
        // What is cleaned now counts as clean from here on, whether or not
        // a record went (Kafka moves its checkpoint after every cleaning).
        let cleaned_end = self.segments[eligible - 1].next_offset;
        let aborted = Aborted::new(
            self.txns
                .aborted_overlapping(self.log_start_offset(), limit),
        );
        let (latest, last_batch, last_data) = self.latest_offsets(map_limit, &aborted)?;
        let mut markers = Markers {
            last_batch,
            last_data,
            retained: HashSet::new(),
            removed: Vec::new(),
        };
        let grace_end = now_ms.saturating_sub(delete_retention_ms);
        let keep = |h: &BatchHeader, offset: i64, r: &crate::Record| {
            if aborted.contains(h, offset) {
                return false;
            }
            match &r.key {
                None => true,
                Some(k) => {
                    latest.get(k.as_ref()) == Some(&offset)
                        && !(r.value.is_none()
                            && now_ms.saturating_sub(r.timestamp_ms) > delete_retention_ms)
                }
            }
        };

        let mut step = 0u32;
        let mut cleaned = Vec::new();
        for i in 0..eligible {
            self.crash_point(&mut step)?;
            let aged = self.segments[i].max_timestamp_ms < grace_end;
            let pass = self.write_cleaned(i, &keep, &mut markers, aged)?;
            result.records_before += pass.before;
            result.records_after += pass.after;
            result.batches_emptied += pass.emptied;
            if pass.changed {
                cleaned.push(Cleaned {
                    index: i,
                    shadow: pass.shadow,
                });
            } else {
                for ext in EXTS {
                    fsutil::remove_if_exists(&cleaned_path(
                        &self.dir,
                        self.segments[i].base_offset,
                        ext,
                    ))?;
                }
            }
        }
        if cleaned.is_empty() {
            self.cleaned_up_to(cleaned_end);
            return Ok(result);
        }
        result.segments = self.install_cleaned(cleaned, &mut step, swapping)?;
        result.markers_removed = markers.removed.len() as u64;
        // The transaction index stays what the batches left in the log
        // give: a removed marker completed nothing any more.
        self.txns.forget_completed(&markers.removed);
        self.cleaned_up_to(cleaned_end);
        Ok(result)
    }

    /// Swaps the cleaned copies in (crash-safe, see the module docs) and
    /// takes their segments' new sizes and indexes; returns their bases.
    fn install_cleaned(
        &mut self,
        cleaned: Vec<Cleaned>,
        step: &mut u32,
        swapping: &mut bool,
    ) -> Result<Vec<i64>> {
        fsutil::sync_dir_with(&self.config.faults, &self.dir)?;
        self.invalidate_recovery_checkpoint()?;
        let bases: Vec<i64> = cleaned
            .iter()
            .map(|c| self.segments[c.index].base_offset)
            .collect();
        self.commit_swap(&bases, step, swapping)?;
        for c in cleaned {
            let seg = &mut self.segments[c.index];
            seg.size = c.shadow.size;
            seg.max_timestamp_ms = c.shadow.max_timestamp_ms;
            seg.index_bytes = c.shadow.index_bytes;
            seg.indexes = c.shadow.indexes;
            seg.index_dirty = false;
            seg.unsynced = false;
        }
        Ok(bases)
    }

    fn crash_point(&self, step: &mut u32) -> Result<()> {
        self.config.faults.at_step(*step, &self.dir)?;
        *step += 1;
        Ok(())
    }

    /// The latest offset of every key among stable, non-aborted records
    /// below `limit`, and the base offsets of each producer's last batch
    /// and last data batch there.
    #[allow(clippy::type_complexity)]
    fn latest_offsets(
        &self,
        limit: i64,
        aborted: &Aborted,
    ) -> Result<(HashMap<Bytes, i64>, HashMap<i64, i64>, HashMap<i64, i64>)> {
        let mut latest: HashMap<Bytes, i64> = HashMap::new();
        let mut last_batch: HashMap<i64, i64> = HashMap::new();
        let mut last_data: HashMap<i64, i64> = HashMap::new();
        self.scan(self.log_start_offset(), limit, |b| {
            let pid = b.header.producer.producer_id;
            if pid >= 0 && b.header.base_offset < limit {
                last_batch.insert(pid, b.header.base_offset);
                if b.header.control.is_none() {
                    last_data.insert(pid, b.header.base_offset);
                }
            }
            if b.header.control.is_some() {
                return Ok(ControlFlow::Continue(()));
            }
            let batch = b.decode()?;
            for (offset, r) in batch.records_with_offsets() {
                if offset >= limit || aborted.contains(&b.header, offset) {
                    continue;
                }
                if let Some(k) = &r.key {
                    match latest.get_mut(k.as_ref()) {
                        Some(o) => *o = offset,
                        None => {
                            latest.insert(Bytes::copy_from_slice(k), offset);
                        }
                    }
                }
            }
            Ok(ControlFlow::Continue(()))
        })?;
        Ok((latest, last_batch, last_data))
    }

    /// Writes the cleaned copy of segment `i` and fsyncs it: the shadow
    /// segment describing it and what the pass did. `aged`: the segment's
    /// newest record is past the grace, so a transaction marker in it may
    /// go.
    fn write_cleaned(
        &self,
        i: usize,
        keep: &impl Fn(&BatchHeader, i64, &crate::Record) -> bool,
        markers: &mut Markers,
        aged: bool,
    ) -> Result<SegmentPass> {
        let base = self.segments[i].base_offset;
        let path = cleaned_path(&self.dir, base, LOG_EXT);
        let file = File::create(&path).map_err(|e| LogError::io(&path, e))?;
        let mut out = BufWriter::with_capacity(256 * 1024, file);
        let mut pass = SegmentPass {
            shadow: Segment::empty(base),
            before: 0,
            after: 0,
            emptied: 0,
            changed: false,
        };
        let interval = self.config.index_interval_bytes;
        let mut buf = Vec::new();
        self.scan_segment_all(i, |b| {
            let position = pass.shadow.size;
            let kept = if b.header.control.is_some() {
                markers.keeps(&b.header, aged).then_some(Kept::AsItWas(-1))
            } else {
                clean_data_batch(&b, keep, markers, &mut pass, &mut buf)?
            };
            let (header, bytes, max_ts) = match kept {
                None => {
                    pass.changed = true;
                    return Ok(());
                }
                Some(Kept::AsItWas(max_ts)) => (b.header, &b.frame[..], max_ts),
                Some(Kept::Rewritten(header, max_ts)) => {
                    pass.changed = true;
                    (header, &buf[..], max_ts)
                }
            };
            out.write_all(bytes).map_err(|e| LogError::io(&path, e))?;
            let size = bytes.len() as u64;
            pass.shadow
                .note_batch(position, &header, size, max_ts, interval);
            Ok(())
        })?;
        self.config.faults.before_write(&path)?;
        let file = out
            .into_inner()
            .map_err(|e| LogError::io(&path, e.into_error()))?;
        self.config.faults.before_sync(&path)?;
        file.sync_all().map_err(|e| LogError::io(&path, e))?;
        // The shadow keeps the original end offset: gaps stay gaps.
        pass.shadow.next_offset = self.segments[i].next_offset;
        let idx = pass
            .shadow
            .indexes
            .get()
            .expect("shadow indexes are loaded");
        for (ext, bytes) in [
            (INDEX_EXT, idx.offsets.to_bytes()),
            (TIME_INDEX_EXT, idx.times.to_bytes()),
        ] {
            let path = cleaned_path(&self.dir, base, ext);
            write_file(&self.config.faults, &path, &bytes, true)?;
        }
        Ok(pass)
    }

    fn scan_segment_all(
        &self,
        i: usize,
        mut f: impl FnMut(crate::StoredBatch) -> Result<()>,
    ) -> Result<()> {
        let seg = &self.segments[i];
        self.scan(seg.base_offset, seg.next_offset, |b| {
            f(b)?;
            Ok(ControlFlow::Continue(()))
        })
    }

    fn commit_swap(&self, bases: &[i64], step: &mut u32, swapping: &mut bool) -> Result<()> {
        let marker = self.dir.join(SWAP_MARKER);
        let tmp = self.dir.join(format!("{SWAP_MARKER}.tmp"));
        let faults = &self.config.faults;
        self.crash_point(step)?;
        write_file(faults, &tmp, &encode_bases(bases), true)?;
        self.crash_point(step)?;
        faults.site_write(&marker)?;
        // From here on a failure may have left the marker in place.
        *swapping = true;
        fs::rename(&tmp, &marker).map_err(|e| LogError::io(&marker, e))?;
        fsutil::sync_dir_with(faults, &self.dir)?;
        for &base in bases {
            for ext in EXTS {
                self.crash_point(step)?;
                let live = segment_path(&self.dir, base, ext);
                fs::rename(cleaned_path(&self.dir, base, ext), &live)
                    .map_err(|e| LogError::io(&live, e))?;
            }
        }
        fsutil::sync_dir_with(faults, &self.dir)?;
        self.crash_point(step)?;
        fsutil::remove_if_exists(&marker)?;
        Ok(fsutil::sync_dir_with(faults, &self.dir)?)
    }
}
