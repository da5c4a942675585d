//! `PartitionLog`: one replica of one partition on disk — append, read,
//! truncate, roll, delete, flush and close. Opening runs the recovery of
//! `recovery.rs`.
//!
//! Directory layout: `<base>.log` (MKB1 frames back to back), `<base>.index`,
//! `<base>.timeindex` per segment (base = 20-digit zero-padded base offset),
//! plus `clean-shutdown` after a clean close, `recovery-checkpoint` after a
//! flush and `cleaner-swap` while a compaction swap is being committed.

use crate::block::{self, BlockBatch};
use crate::checkpoint::{Checkpoint, CheckpointKind, SegmentSummary};
use crate::codec::{self, BatchHeader};
use crate::config::LogConfig;
use crate::error::{LogError, Result};
use crate::log_start;
use crate::record::{Record, RecordBatch};
use crate::recovery::{self, Recovered};
use crate::segment::{
    FrameReader, INDEX_EXT, LOG_EXT, NextFrame, ReadHandles, Segment, TIME_INDEX_EXT, segment_path,
    stored_corruption,
};
use crate::txn_index::{AbortedTxn, TxnIndex};
use bytes::Bytes;
use mk_storage::fsutil;
use mk_storage::{WriteGate, torn_error};
use std::cell::Cell;
use std::fs::{self, File, OpenOptions};
use std::io::IoSlice;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where an appended batch landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    /// The batch's header as written (what producer state and the
    /// transaction index observe).
    pub header: BatchHeader,
    pub base_offset: i64,
    pub next_offset: i64,
    pub leader_epoch: i32,
    pub segment_base_offset: i64,
    /// Byte position of the frame in its segment.
    pub position: u64,
    /// Encoded size of the frame.
    pub size: u64,
    pub max_timestamp_ms: i64,
}

/// One encoded frame of a group being appended: where it is in the group's
/// buffer.
struct Frame {
    /// The batch's place among the group's answers.
    answer: usize,
    header: BatchHeader,
    range: std::ops::Range<usize>,
    batch: RecordBatch,
}

/// A whole batch as stored: its header and its exact frame bytes (what a
/// follower copies unchanged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBatch {
    pub header: BatchHeader,
    pub frame: Bytes,
    /// Where the frame was read from when it was read with its frame CRC
    /// not yet checked ([`PartitionLog::locate_batches`]); `None` once
    /// checked (every other read).
    pub unchecked: Option<FrameOrigin>,
}

/// The segment file and position of a frame read without its CRC checked,
/// so that the check made later names the damage as a checked read does,
/// and what of its segment needs no check ([`StoredBatch::check_once`]).
#[derive(Debug, Clone)]
pub struct FrameOrigin {
    pub path: Arc<Path>,
    pub position: u64,
    pub(crate) trusted: Arc<crate::segment::Trusted>,
}

impl PartialEq for FrameOrigin {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
            && self.position == other.position
            && Arc::ptr_eq(&self.trusted, &other.trusted)
    }
}

impl Eq for FrameOrigin {}

/// A stored batch whose frame CRC is checked and whose max timestamp is
/// known: what a follower appends under the partition lock after the
/// record work ([`CheckedFrame::of`]) was done outside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedFrame {
    batch: StoredBatch,
    max_timestamp: i64,
}

impl CheckedFrame {
    /// Checks `batch`'s frame CRC (when it was read unchecked) and reads
    /// its max timestamp: from the header of a version 2 frame, by
    /// decoding the records of a version 1 frame. Damage is the storage
    /// error a checked read of the frame gives.
    pub fn of(batch: StoredBatch) -> Result<CheckedFrame> {
        batch.check()?;
        let max_timestamp = batch.max_timestamp()?;
        Ok(CheckedFrame {
            batch,
            max_timestamp,
        })
    }

    pub fn batch(&self) -> &StoredBatch {
        &self.batch
    }
}

impl StoredBatch {
    /// The batch's max timestamp (Kafka's `maxTimestamp`): read from the
    /// header of a version 2 frame, by decoding the records of a version 1
    /// frame.
    pub fn max_timestamp(&self) -> Result<i64> {
        if block::frame_version(&self.frame) == Some(block::BLOCK_VERSION) {
            Ok(block::located(&self.frame)?.max_timestamp())
        } else {
            Ok(self.decode()?.max_timestamp_ms())
        }
    }

    /// Checks the frame CRC of a batch read by
    /// [`PartitionLog::locate_batches`] (the caller does it after releasing
    /// the partition lock): a mismatch is the storage error a checked read
    /// of the same frame gives. A checked batch passes at once.
    pub fn check(&self) -> Result<()> {
        let Some(origin) = &self.unchecked else {
            return Ok(());
        };
        codec::check_frame_crc(&self.frame)
            .map_err(|e| stored_corruption(&origin.path, origin.position, &e))
    }

    /// [`Self::check`] for a consumer's fetch, which checks a frame once:
    /// a frame this process wrote (it computed the CRC as it appended it)
    /// or one a fetch already checked passes at once, and a checked frame
    /// adds to what later fetches trust. Damage done to the file behind the
    /// process's back after that is not seen here: Kafka never checks CRCs
    /// on a fetch at all (its consumers do). Followers keep checking every
    /// frame ([`CheckedFrame::of`]), as Kafka's followers check what they
    /// append.
    pub fn check_once(&self) -> Result<()> {
        let Some(origin) = &self.unchecked else {
            return Ok(());
        };
        let len = self.frame.len() as u64;
        if origin.trusted.covers(origin.position, len) {
            return Ok(());
        }
        self.check()?;
        origin.trusted.checked(origin.position, len);
        Ok(())
    }

    /// Decodes the records (the CRC was checked when the batch was read).
    pub fn decode(&self) -> Result<RecordBatch> {
        codec::decode_verified(&self.frame, &self.header)
    }
    /// The producer's block with its header fields when the frame is
    /// version 2, without decompressing or decoding a record (what a Kafka
    /// fetch sends); `None` for a version 1 frame, whose records the broker
    /// encoded itself and must decode to send.
    pub fn block(&self) -> Result<Option<BlockBatch>> {
        if block::frame_version(&self.frame) == Some(block::BLOCK_VERSION) {
            block::located(&self.frame).map(Some)
        } else {
            Ok(None)
        }
    }
    pub fn size(&self) -> usize {
        self.frame.len()
    }
    pub fn base_offset(&self) -> i64 {
        self.header.base_offset
    }
    pub fn next_offset(&self) -> i64 {
        self.header.next_offset()
    }
}

/// What a bounded fetch read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fetched {
    pub records: Vec<LogRecord>,
    /// Reading stopped at `max_records` or `max_bytes` while more records
    /// were visible (so the next read starts after the last record, not at
    /// the visible end).
    pub limited: bool,
}

/// One record read from the log with its offset and its batch's header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    pub offset: i64,
    pub record: Record,
    pub batch: BatchHeader,
}

/// A read-only summary of one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentInfo {
    pub base_offset: i64,
    pub next_offset: i64,
    /// Log bytes plus index bytes.
    pub size_bytes: u64,
    pub log_bytes: u64,
    pub max_timestamp_ms: i64,
    pub active: bool,
}

/// One replica of one partition: an ordered list of segments, the last of
/// which is active (appended to).
#[derive(Debug)]
pub struct PartitionLog {
    pub(crate) dir: PathBuf,
    pub(crate) config: LogConfig,
    leader_epoch: i32,
    /// Never empty; the last segment is the active one.
    pub(crate) segments: Vec<Segment>,
    pub(crate) active_file: File,
    /// The active segment's `.log` path (kept, not rebuilt per append).
    active_path: PathBuf,
    /// Read handles of closed segments kept between reads.
    read_handles: ReadHandles,
    pub(crate) txns: TxnIndex,
    scratch: Vec<u8>,
    /// Clock time the active segment was started or loaded at (`None`
    /// without a clock): what `segment_ms` ages when its first batch has
    /// no timestamp (Kafka's segment creation time).
    active_created_ms: Option<i64>,
    /// The max timestamp of the active segment's first batch (`None` while
    /// it is empty): what `segment_ms` ages (Kafka's
    /// `rollingBasedTimestamp`).
    active_first_ts: Option<i64>,
    /// The cleaner's first dirty offset (Kafka's cleaner checkpoint): the
    /// end of the section the last compaction cleaned; everything from here
    /// on has not been compacted yet. Stored in `cleaner-offset-checkpoint`
    /// (`cleaner_checkpoint.rs`).
    pub(crate) first_dirty: i64,
    /// Set by the first I/O failure; every later write is refused.
    failed: Option<String>,
    /// Files were created or removed since the directory was last fsynced.
    pub(crate) dir_dirty: bool,
    /// Segment rolls so far (a flush outside the lock checks it: see
    /// `flush.rs`).
    pub(crate) rolls: u64,
    /// Changes that rewrote stored bytes or removed segments (truncation,
    /// retention, compaction) so far.
    pub(crate) rewrites: u64,
    /// Base offsets listed in the recovery checkpoint on disk (empty when
    /// there is none): the flush rewrites it when the closed segments change.
    pub(crate) recovery_bases: Vec<i64>,
    /// Opened without a clean shutdown behind it (see `opened_after_crash`).
    after_crash: bool,
    /// The log start DeleteRecords set (`log_start.rs`), 0 when never
    /// moved: the start is the larger of it and the first segment's base.
    pub(crate) start_floor: i64,
    /// Bytes read from segment files by scans and fetches (not recovery).
    bytes_read: AtomicU64,
}

/// What a fetch wants from a scan: about how many bytes in all (the first
/// read is sized to it), and the room left for the next frame, which the
/// caller shrinks as it takes frames: a frame longer than that ends the
/// scan before its body is read.
struct Budget<'a> {
    want: usize,
    room: &'a Cell<usize>,
}

impl PartitionLog {
    /// Opens (or creates) the log in `dir`, recovering it: a torn tail of the
    /// active segment is cut off, a corrupt closed segment or a gap between
    /// segments is STORAGE_ERROR. After a clean close, closed segments are
    /// trusted without being read.
    pub fn open(dir: &Path, config: LogConfig, leader_epoch: i32) -> Result<Self> {
        config.validate()?;
        if leader_epoch < 0 {
            return Err(LogError::InvalidRequest(format!(
                "leader epoch must be >= 0, got {leader_epoch}"
            )));
        }
        let existed = dir.exists();
        fs::create_dir_all(dir).map_err(|e| LogError::io(dir, e))?;
        if !existed && let Some(parent) = dir.parent() {
            // The new directory's own entry must survive a power loss too.
            fsutil::sync_dir_with(&config.faults, parent)?;
        }
        // Checkpoints a crash caught between staging and renaming.
        fsutil::remove_staged(dir)?;
        let Recovered {
            mut segments,
            txns,
            recovery_bases,
            after_crash,
        } = recovery::recover(dir, &config)?;
        // Recovery refuses overlapping segments (as STORAGE_ERROR), so what
        // it hands back is ordered; checking costs one comparison a segment.
        assert!(
            segments.windows(2).all(
                |w| w[0].base_offset < w[1].base_offset && w[0].next_offset <= w[1].base_offset
            ),
            "{}: recovered segments out of order",
            dir.display()
        );
        let mut dir_dirty = false;
        if segments.is_empty() {
            segments.push(Segment::empty(0));
            dir_dirty = true;
        }
        let active = segments.last_mut().expect("at least one segment");
        let active_path = active.path(dir, LOG_EXT);
        let active_file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&active_path)
            .map_err(|e| LogError::io(&active_path, e))?;
        active.load_indexes(dir, &config)?;
        let mut log = Self {
            dir: dir.to_path_buf(),
            config,
            leader_epoch,
            segments,
            active_file,
            active_path,
            read_handles: ReadHandles::default(),
            txns,
            scratch: Vec::new(),
            active_created_ms: None,
            active_first_ts: None,
            first_dirty: 0,
            failed: None,
            dir_dirty,
            rolls: 0,
            rewrites: 0,
            recovery_bases,
            after_crash,
            start_floor: log_start::load(dir)?.unwrap_or(0),
            bytes_read: AtomicU64::new(0),
        };
        log.start_active_age()?;
        log.load_first_dirty();
        if log.dir_dirty {
            log.sync_dir()?;
        }
        Ok(log)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// Changes the segment size for future rolls (a topic's `segment.bytes`
    /// altered at runtime); existing segments are left as they are.
    pub fn set_segment_max_bytes(&mut self, bytes: u64) -> Result<()> {
        if bytes == 0 {
            return Err(LogError::InvalidRequest(
                "segment_max_bytes must be > 0".into(),
            ));
        }
        self.config.segment_max_bytes = bytes;
        Ok(())
    }

    /// Changes `segment.ms` (a topic config altered at runtime); the next
    /// append applies it to the active segment. `None` rolls by size only.
    pub fn set_segment_ms(&mut self, segment_ms: Option<i64>) -> Result<()> {
        if let Some(ms) = segment_ms
            && ms < 1
        {
            return Err(LogError::InvalidRequest(format!(
                "segment_ms must be >= 1, got {ms}"
            )));
        }
        self.config.segment_ms = segment_ms;
        Ok(())
    }

    /// Changes the bytes between sparse index entries (a topic's
    /// `index.interval.bytes`), from the next batch appended on.
    pub fn set_index_interval_bytes(&mut self, bytes: u64) -> Result<()> {
        if bytes == 0 {
            return Err(LogError::InvalidRequest(
                "index_interval_bytes must be > 0".into(),
            ));
        }
        self.config.index_interval_bytes = bytes;
        Ok(())
    }

    /// Changes `segment.jitter.ms` (see [`LogConfig::segment_jitter_ms`]);
    /// the next append applies it to the active segment.
    pub fn set_segment_jitter_ms(&mut self, jitter_ms: i64) -> Result<()> {
        if jitter_ms < 0 {
            return Err(LogError::InvalidRequest(format!(
                "segment_jitter_ms must be >= 0, got {jitter_ms}"
            )));
        }
        self.config.segment_jitter_ms = jitter_ms;
        Ok(())
    }

    /// The age past which the active segment rolls: `segment_ms` less the
    /// segment's jitter. Kafka draws each segment's jitter at random below
    /// `min(segment.jitter.ms, segment.ms)`; here it is a hash of the log's
    /// directory name and the segment's base offset, spread over the same
    /// range: different for each partition and segment, and the same on
    /// every replica, run and reopen (the log stays deterministic).
    fn roll_age(&self) -> Option<i64> {
        let segment_ms = self.config.segment_ms?;
        let range = self.config.segment_jitter_ms.min(segment_ms);
        if range <= 0 {
            return Some(segment_ms);
        }
        let name = self
            .dir
            .file_name()
            .map_or(&[][..], |n| n.as_encoded_bytes());
        let base = self.active_segment().base_offset.to_be_bytes();
        let hash = crc32c::crc32c_append(crc32c::crc32c(name), &base);
        Some(segment_ms - i64::from(hash) % range)
    }

    /// Changes when the cleaner compacts this log (the topic's compaction
    /// lags and dirty ratio), from the next compaction on.
    pub fn set_cleaner(&mut self, cleaner: crate::config::CleanerConfig) -> Result<()> {
        cleaner.validate()?;
        self.config.cleaner = cleaner;
        Ok(())
    }

    /// Starts the age of the active segment (at open, roll and truncation):
    /// its creation time is now by the clock, and its rolling timestamp is
    /// its first batch's max timestamp, read from the file when it has one.
    fn start_active_age(&mut self) -> Result<()> {
        self.active_created_ms = self.config.clock.as_ref().map(|c| c.now_ms());
        let active = self.segments.len() - 1;
        self.active_first_ts = self.first_batch_max_ts(active)?;
        Ok(())
    }

    /// Whether appending a batch whose max timestamp is `max_ts` rolls the
    /// active segment by age (Kafka's time-based roll): a segment with data
    /// rolls when `max_ts` is more than its roll age ([`Self::roll_age`])
    /// past the max timestamp of its first batch, or, when that batch has
    /// no timestamp, when the clock is more than that past the segment's
    /// creation.
    fn rolls_by_age(&self, max_ts: i64) -> bool {
        let Some(max_age) = self.roll_age() else {
            return false;
        };
        if self.active_segment().size == 0 {
            return false;
        }
        let waited = match (self.active_first_ts, &self.config.clock) {
            (Some(first), _) if first >= 0 => max_ts.saturating_sub(first),
            (_, Some(clock)) => match self.active_created_ms {
                Some(created) => clock.now_ms().saturating_sub(created),
                None => return false,
            },
            _ => return false,
        };
        waited > max_age
    }

    /// The max timestamp of the first batch of segment `i` (`None` when
    /// it has no batch).
    pub(crate) fn first_batch_max_ts(&self, i: usize) -> Result<Option<i64>> {
        let seg = &self.segments[i];
        if seg.size == 0 {
            return Ok(None);
        }
        let mut first = None;
        self.scan(seg.base_offset, seg.next_offset, |b| {
            first = Some(frame_max_timestamp(&b.frame, &b.header)?);
            Ok(ControlFlow::Break(()))
        })?;
        Ok(first)
    }

    /// The epoch stamped on batches appended from now on.
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch
    }

    pub fn set_leader_epoch(&mut self, leader_epoch: i32) -> Result<()> {
        if leader_epoch < 0 {
            return Err(LogError::InvalidRequest(format!(
                "leader epoch must be >= 0, got {leader_epoch}"
            )));
        }
        self.leader_epoch = leader_epoch;
        Ok(())
    }

    /// The first readable offset: the base of the first segment, or the
    /// later start DeleteRecords set (`advance_log_start`).
    pub fn log_start_offset(&self) -> i64 {
        // A crash can take an unflushed tail below a stored start with it;
        // the start then stays at the LEO.
        let floor = self.start_floor.min(self.leo());
        self.segments[0].base_offset.max(floor)
    }

    /// Log end offset: the next offset to assign.
    pub fn leo(&self) -> i64 {
        self.active_segment().next_offset
    }

    pub(crate) fn active_segment(&self) -> &Segment {
        self.segments
            .last()
            .expect("a log always has an active segment")
    }

    fn info(seg: &Segment, active: bool) -> SegmentInfo {
        SegmentInfo {
            base_offset: seg.base_offset,
            next_offset: seg.next_offset,
            size_bytes: seg.size + seg.index_bytes,
            log_bytes: seg.size,
            max_timestamp_ms: seg.max_timestamp_ms,
            active,
        }
    }

    /// Every segment, oldest first; the last is active.
    pub fn segments(&self) -> Vec<SegmentInfo> {
        let last = self.segments.len() - 1;
        self.segments
            .iter()
            .enumerate()
            .map(|(i, s)| Self::info(s, i == last))
            .collect()
    }

    /// The active segment.
    pub fn active(&self) -> SegmentInfo {
        Self::info(self.active_segment(), true)
    }

    /// Every segment but the active one.
    pub fn closed_segments(&self) -> Vec<SegmentInfo> {
        let mut all = self.segments();
        all.pop();
        all
    }

    /// Bytes of every log and index file.
    pub fn size_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.size + s.index_bytes).sum()
    }

    /// True when this log existed but was not closed cleanly before this
    /// open (a crash or power loss): data that was never fsynced may be
    /// gone, so replicas cannot assume that equal epochs mean equal data.
    /// A new log is not "after a crash".
    pub fn opened_after_crash(&self) -> bool {
        self.after_crash
    }

    /// True after an I/O failure; the log then refuses writes.
    pub fn is_failed(&self) -> bool {
        self.failed.is_some()
    }

    /// First offset of the earliest transaction that has data here but no
    /// marker yet.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.txns.first_unstable_offset()
    }

    /// `(producer_id, first_offset)` of every open transaction.
    pub fn open_transactions(&self) -> Vec<(i64, i64)> {
        self.txns.open_transactions().collect()
    }

    /// Aborted transactions whose range overlaps `[from_offset, to_offset)`.
    pub fn aborted_transactions(&self, from_offset: i64, to_offset: i64) -> Vec<AbortedTxn> {
        self.txns.aborted_overlapping(from_offset, to_offset)
    }

    // ----- writes -------------------------------------------------------

    pub(crate) fn check_writable(&self) -> Result<()> {
        match &self.failed {
            None => Ok(()),
            Some(cause) => Err(LogError::storage(
                &self.dir,
                format!("log refuses writes after an earlier I/O failure: {cause}"),
            )),
        }
    }

    /// Records an I/O failure: the log refuses every later write. A
    /// transient failure of a write (a full disk, no file descriptor left)
    /// is not recorded: the write had no effect, so the next one may work.
    /// Failures of fsync are recorded at their site whatever their kind
    /// (see `latch`), because after a failed fsync nobody knows what the
    /// disk holds.
    pub(crate) fn fail<T>(&mut self, e: LogError) -> Result<T> {
        if e.is_storage_failure() && !e.is_transient() {
            self.latch(&e);
        }
        Err(e)
    }

    /// Makes the log refuse every later write, whatever `e` is.
    pub(crate) fn latch(&mut self, e: &LogError) {
        if self.failed.is_none() {
            self.failed = Some(e.to_string());
        }
    }

    /// Runs an fsync site: `faults` first, then `sync`; any failure latches.
    fn synced(
        &mut self,
        path: &Path,
        sync: impl FnOnce(&Self) -> std::io::Result<()>,
    ) -> Result<()> {
        let r = self
            .config
            .faults
            .before_sync(path)
            .map_err(LogError::from)
            .and_then(|()| sync(self).map_err(|e| LogError::io(path, e)));
        if let Err(e) = &r {
            self.latch(e);
        }
        r
    }

    /// Appends a new batch: assigns base offset = LEO and the current leader
    /// epoch, writes it (to the OS, not yet fsynced) and returns where it
    /// landed.
    pub fn append(&mut self, mut batch: RecordBatch) -> Result<AppendInfo> {
        self.check_writable()?;
        batch.assign(self.leo(), self.leader_epoch)?;
        self.append_assigned(&batch)
    }

    /// Appends a batch that already carries its offsets (a follower copying
    /// the leader); its base offset must equal the LEO.
    pub fn append_replica_batch(&mut self, batch: RecordBatch) -> Result<AppendInfo> {
        self.check_writable()?;
        self.check_next(batch.base_offset())?;
        self.append_assigned(&batch)
    }

    /// Appends a stored frame unchanged (byte-identical replicas). The frame
    /// is verified (CRC and structure) first; its base offset must equal the
    /// LEO.
    pub fn append_replica_frame(&mut self, batch: &StoredBatch) -> Result<AppendInfo> {
        self.check_writable()?;
        let header = codec::decode_header(&batch.frame, self.config.max_batch_bytes)?;
        self.check_next(Some(header.base_offset))?;
        let max_ts = frame_max_timestamp(&batch.frame, &header)?;
        self.write_frame(&[&batch.frame], &header, max_ts)
    }

    /// [`Self::append_replica_frame`] for a frame checked outside the
    /// partition lock: only its base offset is compared with the LEO here.
    pub fn append_checked_frame(&mut self, checked: &CheckedFrame) -> Result<AppendInfo> {
        self.check_writable()?;
        let batch = &checked.batch;
        self.check_next(Some(batch.header.base_offset))?;
        self.write_frame(&[&batch.frame], &batch.header, checked.max_timestamp)
    }

    /// Appends a producer's block batch as a version 2 frame: assigns base
    /// offset = LEO and the current leader epoch (Kafka's CRC does not cover
    /// them) and writes the block as produced.
    pub fn append_block(&mut self, mut batch: BlockBatch) -> Result<AppendInfo> {
        self.check_writable()?;
        batch.assign(self.leo(), self.leader_epoch)?;
        let payload = batch.encoded_len() - codec::FRAME_HEADER_BYTES;
        if payload > self.config.max_batch_bytes as usize {
            return Err(LogError::InvalidRecord(format!(
                "batch payload of {payload} bytes exceeds max_batch_bytes {}",
                self.config.max_batch_bytes
            )));
        }
        let mut head = Vec::new();
        batch.encode_head_into(&mut head)?;
        self.write_frame(
            &[&head, batch.block()],
            &batch.header(),
            batch.max_timestamp(),
        )
    }

    fn check_next(&self, base_offset: Option<i64>) -> Result<()> {
        match base_offset {
            Some(b) if b == self.leo() => Ok(()),
            Some(b) => Err(LogError::InvalidRecord(format!(
                "replica batch base offset {b} does not equal the log end offset {}",
                self.leo()
            ))),
            None => Err(LogError::InvalidRecord(
                "a replica batch must carry its base offset".into(),
            )),
        }
    }

    fn append_assigned(&mut self, batch: &RecordBatch) -> Result<AppendInfo> {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        let result = self.frame_into(batch, &mut buf).and_then(|(header, _)| {
            let parts = [&buf[..], codec::frame_tail(batch)];
            self.write_frame(&parts, &header, batch.max_timestamp_ms())
        });
        self.scratch = buf;
        result
    }

    /// Appends producer batches exactly as consecutive `append` calls
    /// would: in order, each at the offsets after the previous accepted
    /// one, and a batch that `append` would refuse is refused alone while
    /// its neighbours go in. The difference is the disk: the accepted
    /// frames go down in one write when they fit the active segment
    /// together (group commit), instead of one write each. If that write
    /// fails, none of it is acknowledged and each batch is then appended
    /// alone, so each answer is one a lone append can give.
    pub fn append_group(&mut self, batches: Vec<RecordBatch>) -> Vec<Result<AppendInfo>> {
        let mut answers: Vec<Option<Result<AppendInfo>>> = Vec::with_capacity(batches.len());
        let mut frames: Vec<Frame> = Vec::with_capacity(batches.len());
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        let mut next = self.leo();
        for mut batch in batches {
            let framed = self
                .check_writable()
                .and_then(|()| batch.assign(next, self.leader_epoch))
                .and_then(|()| self.frame_into(&batch, &mut buf));
            match framed {
                Ok((header, range)) => {
                    next = header.next_offset();
                    frames.push(Frame {
                        answer: answers.len(),
                        header,
                        range,
                        batch,
                    });
                    answers.push(None);
                }
                Err(e) => answers.push(Some(Err(e))),
            }
        }
        let written = self.write_frames(&buf, frames);
        self.scratch = buf;
        for (i, answer) in written {
            answers[i] = Some(answer);
        }
        answers
            .into_iter()
            .map(|a| a.expect("every batch of a group is answered"))
            .collect()
    }

    /// Encodes an assigned batch at the end of `buf`, within
    /// `max_batch_bytes` (on error `buf` is as it was): its header and
    /// where its frame is in `buf`, but for its [`codec::frame_tail`] (a
    /// produced block, written from where it is).
    fn frame_into(
        &self,
        batch: &RecordBatch,
        buf: &mut Vec<u8>,
    ) -> Result<(BatchHeader, std::ops::Range<usize>)> {
        let header = batch.header().ok_or_else(|| {
            LogError::InvalidRecord("cannot append a batch without a base offset".into())
        })?;
        let start = buf.len();
        codec::encode_head_into(batch, buf)?;
        let payload =
            buf.len() - start + codec::frame_tail(batch).len() - codec::FRAME_HEADER_BYTES;
        if payload > self.config.max_batch_bytes as usize {
            buf.truncate(start);
            return Err(LogError::InvalidRecord(format!(
                "batch payload of {payload} bytes exceeds max_batch_bytes {}",
                self.config.max_batch_bytes
            )));
        }
        Ok((header, start..buf.len()))
    }

    /// Writes the consecutive frames of a group: one write when they fit
    /// the active segment together. Otherwise each frame is written alone
    /// (rolling where a lone append would) until one fails; from there on,
    /// as after a failed group write, the rest are appended alone from
    /// their batches, since their offsets moved.
    fn write_frames(&mut self, buf: &[u8], frames: Vec<Frame>) -> Vec<(usize, Result<AppendInfo>)> {
        let (Some(first), Some(last)) = (frames.first(), frames.last()) else {
            return Vec::new();
        };
        // Each frame starts where the one before it ends, the first at the
        // log end, and each is one whole frame: checked for the group as a
        // lone append checks its one frame.
        self.assert_at_end(&first.header);
        for (f, next) in frames.iter().zip(frames.iter().skip(1)) {
            assert_eq!(
                next.header.base_offset,
                f.header.next_offset(),
                "{}: the frames of a group must be contiguous",
                self.dir.display()
            );
        }
        // Each frame is its encoded head in `buf` and its block where the
        // producer's request left it.
        let parts: Vec<&[u8]> = frames
            .iter()
            .flat_map(|f| [&buf[f.range.clone()], codec::frame_tail(&f.batch)])
            .collect();
        for frame in parts.chunks(2) {
            self.assert_whole_frame(frame);
        }
        let bytes: u64 = parts.iter().map(|p| p.len() as u64).sum();
        let active = self.active_segment();
        let fits = frames.len() > 1
            && !self.group_may_roll_by_age(&frames)
            && active.size + bytes <= self.config.segment_max_bytes
            && last.header.next_offset() - active.base_offset <= i64::from(u32::MAX);
        let mut failed = false;
        if fits {
            match self.write_at_end(&parts) {
                Ok((mut at, segment_base_offset)) => {
                    return frames
                        .iter()
                        .zip(parts.chunks(2))
                        .map(|(f, frame)| {
                            let len = frame_len(frame);
                            let info = self.note_written(
                                &f.header,
                                at,
                                segment_base_offset,
                                len,
                                f.batch.max_timestamp_ms(),
                            );
                            at += len;
                            (f.answer, Ok(info))
                        })
                        .collect();
                }
                Err(_) => failed = true,
            }
        }
        frames
            .into_iter()
            .map(|mut f| {
                let answer = if failed {
                    f.batch.unassign();
                    self.append(f.batch)
                } else {
                    let ts = f.batch.max_timestamp_ms();
                    let frame = [&buf[f.range], codec::frame_tail(&f.batch)];
                    let r = self
                        .check_writable()
                        .and_then(|()| self.write_frame(&frame, &f.header, ts));
                    failed = r.is_err();
                    r
                };
                (f.answer, answer)
            })
            .collect()
    }

    /// Whether a frame of a group might roll the active segment by age if
    /// appended alone: the group is then written frame by frame, which
    /// rolls exactly where lone appends would.
    fn group_may_roll_by_age(&self, frames: &[Frame]) -> bool {
        let (Some(max_age), Some(first)) = (self.roll_age(), frames.first()) else {
            return false;
        };
        let ts = |f: &Frame| f.batch.max_timestamp_ms();
        if self.active_segment().size > 0 {
            return frames.iter().any(|f| self.rolls_by_age(ts(f)));
        }
        // An empty segment starts aging at the group's first batch.
        let base = ts(first);
        base < 0 || frames.iter().any(|f| ts(f).saturating_sub(base) > max_age)
    }

    /// Writes one frame, given in parts (a head and a block, or a whole
    /// frame), rolling first where the segment is full or old enough.
    fn write_frame(
        &mut self,
        frame: &[&[u8]],
        header: &BatchHeader,
        max_ts: i64,
    ) -> Result<AppendInfo> {
        self.assert_at_end(header);
        self.assert_whole_frame(frame);
        let len = frame_len(frame);
        let active = self.active_segment();
        let relative_end = header.next_offset() - active.base_offset;
        if active.size > 0
            && (active.size + len > self.config.segment_max_bytes
                || relative_end > i64::from(u32::MAX)
                || self.rolls_by_age(max_ts))
        {
            self.roll_active()?;
        }
        let (position, segment_base_offset) = self.write_at_end(frame)?;
        Ok(self.note_written(header, position, segment_base_offset, len, max_ts))
    }

    /// Offsets only grow, without gaps between appends: every caller
    /// assigned or checked base offset == LEO, so a mismatch is a bug that
    /// must not reach the disk.
    fn assert_at_end(&self, header: &BatchHeader) {
        assert_eq!(
            header.base_offset,
            self.leo(),
            "{}: an append must start at the log end offset",
            self.dir.display()
        );
    }

    /// Every frame that reaches the disk is one whole frame whose length
    /// prefix names exactly its bytes (its parts together), within
    /// `max_batch_bytes`: every caller built it with the encoder and
    /// bounded it, or verified it, so a mismatch is a bug, and writing it
    /// would make the next recovery cut the log at this frame. Checking
    /// costs a read of its 12-byte header, which the first part holds.
    fn assert_whole_frame(&self, frame: &[&[u8]]) {
        let len = frame_len(frame);
        let first = frame.first().copied().unwrap_or_default();
        let named = codec::peek_frame_len(first, self.config.max_batch_bytes);
        assert!(
            matches!(named, Ok(Some(n)) if n as u64 == len),
            "{}: a frame of {len} bytes about to be written is not one whole frame \
             within max_batch_bytes {}: its header names {named:?}",
            self.dir.display(),
            self.config.max_batch_bytes
        );
    }

    /// Writes `parts` one after the other at the end of the active segment
    /// (one vectored write) and returns where (position, segment base
    /// offset). On failure nothing of them stays in the file, or the log
    /// refuses further writes.
    fn write_at_end(&mut self, parts: &[&[u8]]) -> Result<(u64, i64)> {
        let active = self.segments.last().expect("active");
        let position = active.size;
        let segment_base_offset = active.base_offset;
        debug_assert_eq!(self.active_path, active.path(&self.dir, LOG_EXT));
        let path = &self.active_path;
        let len = parts.iter().map(|p| p.len()).sum();
        let gate = match self.config.faults.before_write_of(path, len) {
            Ok(g) => g,
            Err(e) => return self.fail(e.into()),
        };
        let written = match gate {
            WriteGate::Whole => write_all_vectored_at(&self.active_file, parts, position),
            WriteGate::Torn(n) => {
                write_all_vectored_at(&self.active_file, &first_bytes(parts, n), position)
            }
        };
        if let (Ok(()), WriteGate::Torn(_)) = (&written, gate) {
            let e = LogError::from(torn_error(path));
            self.latch(&e);
            return Err(e);
        }
        if let Err(e) = written {
            let e = LogError::io(path, e);
            if e.is_transient() {
                // A full disk may have taken part of the bytes: cut them, so
                // the next append writes at the same place and a crash finds
                // no half frame (shrinking a file needs no space).
                if let Err(cut) = self.active_file.set_len(position) {
                    self.latch(&LogError::io(path, cut));
                }
            }
            return self.fail(e);
        }
        Ok((position, segment_base_offset))
    }

    /// Records a frame written at `position` of the active segment.
    fn note_written(
        &mut self,
        header: &BatchHeader,
        position: u64,
        segment_base_offset: i64,
        len: u64,
        max_ts: i64,
    ) -> AppendInfo {
        let interval = self.config.index_interval_bytes;
        let active = self.segments.last_mut().expect("active");
        active.note_batch(position, header, len, max_ts, interval);
        active.unsynced = true;
        if position == 0 {
            self.active_first_ts = Some(max_ts);
        }
        self.txns.observe(header);
        AppendInfo {
            header: *header,
            base_offset: header.base_offset,
            next_offset: header.next_offset(),
            leader_epoch: header.leader_epoch,
            segment_base_offset,
            position,
            size: len,
            max_timestamp_ms: max_ts,
        }
    }

    /// Closes the active segment if it has data and starts a new one at the
    /// LEO.
    pub fn roll(&mut self) -> Result<()> {
        self.check_writable()?;
        self.roll_active()
    }

    fn roll_active(&mut self) -> Result<()> {
        let leo = self.leo();
        let dir = self.dir.clone();
        let active = self.segments.last_mut().expect("active");
        if active.size == 0 {
            return Ok(());
        }
        // A segment with data ends above its base, so segment bases stay
        // strictly ascending.
        assert!(
            leo > active.base_offset,
            "{}: rolling at {leo} would not follow segment {}",
            dir.display(),
            active.base_offset
        );
        // The closed segment's log is fsynced, and its index files are
        // written, by the next flush outside the lock (flush.rs), like
        // Kafka's asynchronous flush of rolled segments; until then its
        // indexes live in memory, and a crash rebuilds them by the scan.
        let faults = self.config.faults.clone();
        let path = segment_path(&dir, leo, LOG_EXT);
        if let Err(e) = faults.site_write(&path) {
            return self.fail(e.into());
        }
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) => return self.fail(LogError::io(path, e)),
        };
        self.segments.push(Segment::empty(leo));
        // The rolled segment's file serves its reads from now on: no
        // reader has to open it again.
        let rolled = std::mem::replace(&mut self.active_file, file);
        let rolled_base = self.segments[self.segments.len() - 2].base_offset;
        self.read_handles
            .keep(rolled_base, self.rewrites, Arc::new(rolled));
        self.active_path = path;
        self.active_created_ms = self.config.clock.as_ref().map(|c| c.now_ms());
        self.active_first_ts = None;
        self.dir_dirty = true;
        self.rolls += 1;
        Ok(())
    }

    /// Fsyncs every file written since the last flush (active segment,
    /// rolled segments and their indexes) and the directory.
    pub fn flush(&mut self) -> Result<()> {
        self.check_writable()?;
        if let Err(e) = self.flush_inner() {
            return self.fail(e);
        }
        Ok(())
    }

    fn flush_inner(&mut self) -> Result<()> {
        // The three steps of the flush cycle (flush.rs), with nothing in
        // between; the checkpoint's rename is made durable right away.
        let synced = self.plan_flush()?.sync();
        self.finish_flush(synced)?;
        if self.dir_dirty {
            self.sync_dir()?;
        }
        Ok(())
    }

    pub(crate) fn sync_dir(&mut self) -> Result<()> {
        let dir = self.dir.clone();
        self.synced(&dir, |_| File::open(&dir).and_then(|d| d.sync_all()))?;
        self.dir_dirty = false;
        Ok(())
    }

    /// Flushes everything, writes the index files and the clean-shutdown
    /// checkpoint so the next open is O(active segment).
    pub fn close(mut self) -> Result<()> {
        self.flush()?;
        let dir = self.dir.clone();
        let faults = self.config.faults.clone();
        let written = self.segments.iter_mut().try_for_each(|seg| {
            let rebuilt = seg.indexes.get().is_some_and(|i| i.rebuilt);
            if seg.index_dirty || rebuilt {
                seg.write_index_files(&dir, true, &faults)?;
            }
            Ok::<_, LogError>(())
        });
        let written = written.and_then(|()| {
            let cp = Checkpoint {
                segments: self.segments.iter().map(SegmentSummary::of).collect(),
                txns: self.txns.clone(),
            };
            let path = dir.join(CheckpointKind::CleanShutdown.file_name());
            faults.before_write(&path)?;
            Ok(fsutil::write_atomic_with(&faults, &path, &cp.encode())?)
        });
        match written {
            // The data is fsynced; without the checkpoint (which is only a
            // shortcut) the next open recovers as after a crash.
            Err(e) if e.is_transient() => {
                tracing::warn!(dir = %dir.display(), error = %e, "closed without a clean-shutdown checkpoint");
                Ok(())
            }
            other => other,
        }
    }

    /// Cuts the log back so that `next_offset` becomes the LEO. Allowed only
    /// at a batch boundary (or log start / LEO). Later segments are removed
    /// whole; the segment holding the boundary is truncated in place (log
    /// and index), so the retained log is never rewritten.
    pub fn truncate_to(&mut self, next_offset: i64) -> Result<()> {
        self.check_writable()?;
        self.check_in_range(next_offset)?;
        if next_offset == self.leo() {
            return Ok(());
        }
        self.rewrites += 1;
        self.read_handles.clear();
        let i = self.segment_index_for(next_offset);
        let cut = self.boundary_position(i, next_offset)?;
        if i + 1 < self.segments.len()
            && let Err(e) = self.invalidate_recovery_checkpoint()
        {
            return self.fail(e);
        }
        if let Err(e) = self.truncate_segments(i, cut, next_offset) {
            return self.fail(e);
        }
        assert_eq!(
            self.leo(),
            next_offset,
            "{}: truncation",
            self.dir.display()
        );
        self.txns.truncate(next_offset);
        self.truncated_below_first_dirty(next_offset)
    }

    fn truncate_segments(&mut self, i: usize, cut: u64, next_offset: i64) -> Result<()> {
        // Newest first, so a crash in between leaves a contiguous log.
        while self.segments.len() > i + 1 {
            let seg = self.segments.pop().expect("len > i + 1");
            remove_segment_files(&self.dir, seg.base_offset)?;
        }
        let dir = self.dir.clone();
        let seg = &mut self.segments[i];
        let path = seg.path(&dir, LOG_EXT);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| LogError::io(&path, e))?;
        file.set_len(cut).map_err(|e| LogError::io(&path, e))?;
        self.config.faults.site_sync(&path)?;
        file.sync_all().map_err(|e| LogError::io(&path, e))?;
        seg.load_indexes(&dir, &self.config)?;
        let rel = u32::try_from(next_offset - seg.base_offset).unwrap_or(u32::MAX);
        let idx = seg.indexes.get_mut().expect("loaded");
        idx.offsets.truncate_from_offset(rel);
        idx.times.truncate_from_offset(rel);
        seg.index_bytes = idx.byte_len();
        seg.index_dirty = true;
        seg.size = cut;
        seg.trusted.cut(cut);
        seg.next_offset = next_offset;
        seg.max_timestamp_ms = max_timestamp_below(&file, &path, cut, self.config.max_batch_bytes)?;
        seg.unsynced = false;
        self.active_file = file;
        self.active_path = path;
        self.start_active_age()?;
        self.sync_dir()
    }

    /// Byte position in segment `i` where the log must be cut so that
    /// `offset` becomes the LEO; INVALID_RECORD inside a batch.
    fn boundary_position(&self, i: usize, offset: i64) -> Result<u64> {
        let seg = &self.segments[i];
        let start = seg.scan_start(&self.dir, offset, &self.config)?;
        let mut cut = seg.size;
        let _ = self.scan_segment(i, start, |pos, b| {
            let h = &b.header;
            if h.base_offset >= offset {
                cut = pos;
                return Ok(ControlFlow::Break(()));
            }
            if h.next_offset() > offset {
                return Err(LogError::InvalidRecord(format!(
                    "offset {offset} is inside the batch {}..{}; truncation needs a batch boundary",
                    h.base_offset,
                    h.next_offset()
                )));
            }
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(cut)
    }

    /// Deletes a continuous prefix of closed segments (oldest first).
    pub fn delete_closed_segments(&mut self, bases: &[i64]) -> Result<()> {
        self.check_writable()?;
        if bases.is_empty() {
            return Ok(());
        }
        let closed = &self.segments[..self.segments.len() - 1];
        let is_prefix = bases.len() <= closed.len()
            && bases.iter().zip(closed).all(|(b, s)| *b == s.base_offset);
        if !is_prefix {
            let available: Vec<i64> = closed.iter().map(|s| s.base_offset).collect();
            return Err(LogError::InvalidRequest(format!(
                "only a continuous prefix of closed segments can be deleted: asked for {bases:?}, closed segments are {available:?}"
            )));
        }
        if let Err(e) = self.invalidate_recovery_checkpoint() {
            return self.fail(e);
        }
        for base in bases {
            if let Err(e) = remove_segment_files(&self.dir, *base) {
                return self.fail(e);
            }
        }
        self.segments.drain(..bases.len());
        let start = self.log_start_offset();
        self.txns.prune_below(start);
        if let Err(e) = self.sync_dir() {
            return self.fail(e);
        }
        Ok(())
    }

    // ----- reads --------------------------------------------------------

    fn check_in_range(&self, offset: i64) -> Result<()> {
        let (start, end) = (self.log_start_offset(), self.leo());
        if offset < start || offset > end {
            return Err(LogError::OffsetOutOfRange {
                offset,
                log_start: start,
                log_end: end,
            });
        }
        Ok(())
    }

    fn visible_end(&self, end_offset: Option<i64>) -> i64 {
        end_offset.map_or(self.leo(), |e| e.min(self.leo()))
    }

    /// Index of the segment that may hold `offset` (greatest base <= it).
    fn segment_index_for(&self, offset: i64) -> usize {
        self.segments
            .partition_point(|s| s.base_offset <= offset)
            .saturating_sub(1)
    }

    /// Visits the stored batches of segment `i` from byte `start`.
    fn scan_segment(
        &self,
        i: usize,
        start: u64,
        f: impl FnMut(u64, StoredBatch) -> Result<ControlFlow<()>>,
    ) -> Result<ControlFlow<()>> {
        self.scan_segment_with(i, start, true, None, None, f)
    }

    /// [`Self::scan_segment`]; with `checked` false the frames' CRCs are
    /// left to the caller ([`StoredBatch::check`]): magic, length and
    /// header are still checked. `want` is about how many bytes the caller
    /// expects to visit (a fetch's limit): the first read is sized to it,
    /// so a small fetch reads a few KiB, not a whole chunk. A frame longer
    /// than `room` ends the scan unread (see [`Budget`]).
    fn scan_segment_with(
        &self,
        i: usize,
        start: u64,
        checked: bool,
        want: Option<usize>,
        room: Option<&Cell<usize>>,
        mut f: impl FnMut(u64, StoredBatch) -> Result<ControlFlow<()>>,
    ) -> Result<ControlFlow<()>> {
        let seg = &self.segments[i];
        if start >= seg.size {
            return Ok(ControlFlow::Continue(()));
        }
        let path = seg.path(&self.dir, LOG_EXT);
        let kept;
        let file = if i == self.segments.len() - 1 {
            &self.active_file
        } else {
            kept = self
                .read_handles
                .get(seg.base_offset, self.rewrites, &path)?;
            &*kept
        };
        let max = self.config.max_batch_bytes;
        let origin: Option<Arc<Path>> = (!checked).then(|| Arc::from(path.as_path()));
        let trusted = &seg.trusted;
        let mut frames =
            FrameReader::new(file, &path, start, seg.size, max).counting_into(&self.bytes_read);
        if let Some(want) = want {
            frames = frames.with_first_read(want);
        }
        loop {
            let room = room.map_or(usize::MAX, Cell::get);
            let (pos, frame) = match frames
                .next_frame_within(room)
                .map_err(|e| e.into_storage(&path))?
            {
                NextFrame::Frame(pos, frame) => (pos, frame),
                NextFrame::TooLong => return Ok(ControlFlow::Break(())),
                NextFrame::End => break,
            };
            let header = if checked {
                codec::decode_header(&frame, max)
            } else {
                codec::decode_header_unchecked(&frame, max)
            }
            .map_err(|e| stored_corruption(&path, pos, &e))?;
            let unchecked = origin.as_ref().map(|path| FrameOrigin {
                path: Arc::clone(path),
                position: pos,
                trusted: Arc::clone(trusted),
            });
            let batch = StoredBatch {
                header,
                frame,
                unchecked,
            };
            if f(pos, batch)?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Visits, in order, every stored batch that ends after `offset` and
    /// starts before `end`.
    pub(crate) fn scan(
        &self,
        offset: i64,
        end: i64,
        f: impl FnMut(StoredBatch) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        self.scan_with(offset, end, true, None, f)
    }

    /// [`Self::scan`], the frame CRCs checked or left to the caller.
    fn scan_with(
        &self,
        offset: i64,
        end: i64,
        checked: bool,
        budget: Option<&Budget<'_>>,
        mut f: impl FnMut(StoredBatch) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        let first = self.segment_index_for(offset);
        for i in first..self.segments.len() {
            let seg = &self.segments[i];
            if seg.base_offset >= end {
                break;
            }
            let start = if i == first {
                seg.scan_start(&self.dir, offset, &self.config)?
            } else {
                0
            };
            // The first segment is read from the index entry at or before
            // `offset`: up to an index interval (and a batch) before it.
            let want = budget.map(|b| {
                let behind = if i == first {
                    usize::try_from(self.config.index_interval_bytes).unwrap_or(usize::MAX)
                } else {
                    0
                };
                b.want.saturating_add(behind)
            });
            let room = budget.map(|b| b.room);
            let flow = self.scan_segment_with(i, start, checked, want, room, |_, b| {
                if b.header.next_offset() <= offset {
                    return Ok(ControlFlow::Continue(()));
                }
                if b.header.base_offset >= end {
                    return Ok(ControlFlow::Break(()));
                }
                f(b)
            })?;
            if flow.is_break() {
                break;
            }
        }
        Ok(())
    }

    /// Records from `offset` below `min(end_offset, LEO)`, at most
    /// `max_records`. `offset` outside `[log_start, LEO]` is
    /// OFFSET_OUT_OF_RANGE; `offset == LEO` or `max_records == 0` gives
    /// nothing. Control batches hold no records and so yield nothing.
    pub fn fetch(
        &self,
        offset: i64,
        max_records: usize,
        end_offset: Option<i64>,
    ) -> Result<Vec<LogRecord>> {
        Ok(self
            .fetch_bounded(offset, max_records, usize::MAX, end_offset)?
            .records)
    }

    /// Like [`fetch`](Self::fetch), and reading stops before the records'
    /// [`payload_bytes`](Record::payload_bytes) would exceed `max_bytes`
    /// (the first record is always returned, so a reader makes progress).
    /// Nothing past the limit is decoded, so the memory a read takes is
    /// bounded by `max_bytes` plus one batch, whatever `max_records` is.
    pub fn fetch_bounded(
        &self,
        offset: i64,
        max_records: usize,
        max_bytes: usize,
        end_offset: Option<i64>,
    ) -> Result<Fetched> {
        self.check_in_range(offset)?;
        let end = self.visible_end(end_offset);
        let mut out = Fetched::default();
        if max_records == 0 || offset >= end {
            return Ok(out);
        }
        let mut bytes = 0usize;
        self.scan(offset, end, |b| {
            let batch = b.decode()?;
            let header = b.header;
            for (o, r) in batch.records_with_offsets() {
                if o < offset {
                    continue;
                }
                if o >= end {
                    return Ok(ControlFlow::Break(()));
                }
                let size = r.payload_bytes();
                if out.records.len() >= max_records
                    || (!out.records.is_empty() && bytes.saturating_add(size) > max_bytes)
                {
                    out.limited = true;
                    return Ok(ControlFlow::Break(()));
                }
                bytes += size;
                out.records.push(LogRecord {
                    offset: o,
                    record: r.clone(),
                    batch: header,
                });
            }
            // Stopping at a full answer without decoding the next batch is
            // what the read path's throughput depends on.
            if out.records.len() >= max_records {
                out.limited = true;
                return Ok(ControlFlow::Break(()));
            }
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    /// Whole batches, starting with the one that contains `offset`, stopping
    /// before a batch that starts at/after `min(end_offset, LEO)`. At least
    /// one batch is returned if any is visible; after that, reading stops
    /// before `max_bytes` would be exceeded.
    pub fn read_batches(
        &self,
        offset: i64,
        max_bytes: usize,
        end_offset: Option<i64>,
    ) -> Result<Vec<StoredBatch>> {
        self.read_batches_with(offset, max_bytes, end_offset, true)
    }

    /// Bytes this log has read from its segment files for scans and
    /// fetches since it was opened (what a fetch costs the page cache).
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    /// [`Self::read_batches`] for a fetch that holds the partition lock:
    /// the frames are read and their headers checked, but their CRCs are
    /// left to [`StoredBatch::check`], which the caller runs after letting
    /// the lock go, so no pass over record bytes happens under it.
    pub fn locate_batches(
        &self,
        offset: i64,
        max_bytes: usize,
        end_offset: Option<i64>,
    ) -> Result<Vec<StoredBatch>> {
        self.read_batches_with(offset, max_bytes, end_offset, false)
    }

    fn read_batches_with(
        &self,
        offset: i64,
        max_bytes: usize,
        end_offset: Option<i64>,
        checked: bool,
    ) -> Result<Vec<StoredBatch>> {
        self.check_in_range(offset)?;
        let end = self.visible_end(end_offset);
        let mut out: Vec<StoredBatch> = Vec::new();
        if offset >= end {
            return Ok(out);
        }
        let mut total = 0usize;
        // The first frame is always taken (a reader makes progress); after
        // it, a frame that would take the total past `max_bytes` ends the
        // read before its body is read from the file.
        let room = Cell::new(usize::MAX);
        let budget = Budget {
            want: max_bytes,
            room: &room,
        };
        self.scan_with(offset, end, checked, Some(&budget), |b| {
            total += b.size();
            out.push(b);
            room.set(max_bytes.saturating_sub(total));
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    /// The first offset whose record timestamp is >= `timestamp_ms` (Kafka's
    /// ListOffsets by time), `None` if there is none.
    pub fn offset_for_timestamp(&self, timestamp_ms: i64) -> Result<Option<i64>> {
        Ok(self.record_for_timestamp(timestamp_ms)?.map(|(o, _)| o))
    }

    /// The offset and timestamp of the first record whose timestamp is >=
    /// `timestamp_ms`, `None` if there is none.
    pub fn record_for_timestamp(&self, timestamp_ms: i64) -> Result<Option<(i64, i64)>> {
        for i in 0..self.segments.len() {
            let seg = &self.segments[i];
            if seg.max_timestamp_ms < timestamp_ms || seg.size == 0 {
                continue;
            }
            let idx = seg.indexes(&self.dir, &self.config)?;
            let rel = idx.times.scan_start(timestamp_ms);
            let start =
                seg.scan_start(&self.dir, seg.base_offset + i64::from(rel), &self.config)?;
            let mut found = None;
            let _ = self.scan_segment(i, start, |_, b| {
                let batch = b.decode()?;
                found = batch
                    .records_with_offsets()
                    .find(|(_, r)| r.timestamp_ms >= timestamp_ms)
                    .map(|(o, r)| (o, r.timestamp_ms));
                Ok(if found.is_some() {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                })
            })?;
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// The offset and timestamp of the record with the largest timestamp
    /// below `end_offset` (the first such record on ties), `None` for a log
    /// without records there (Kafka's ListOffsets MAX_TIMESTAMP). Only the
    /// segment holding the maximum is read.
    pub fn max_timestamp_record(&self, end_offset: i64) -> Result<Option<(i64, i64)>> {
        let mut best: Option<(i64, i64)> = None;
        for i in 0..self.segments.len() {
            let seg = &self.segments[i];
            if seg.size == 0 || seg.base_offset >= end_offset {
                break;
            }
            // A closed segment entirely below the end can be judged by its
            // summary; only a better candidate is scanned.
            if best.is_some_and(|(_, ts)| seg.max_timestamp_ms <= ts) {
                continue;
            }
            let _ = self.scan_segment(i, 0, |_, b| {
                if b.base_offset() >= end_offset {
                    return Ok(ControlFlow::Break(()));
                }
                let batch = b.decode()?;
                for (o, r) in batch.records_with_offsets() {
                    if o >= end_offset {
                        break;
                    }
                    if best.is_none_or(|(_, ts)| r.timestamp_ms > ts) {
                        best = Some((o, r.timestamp_ms));
                    }
                }
                Ok(ControlFlow::Continue(()))
            })?;
        }
        Ok(best)
    }
}

/// The bytes of a frame given in parts.
fn frame_len(frame: &[&[u8]]) -> u64 {
    frame.iter().map(|p| p.len() as u64).sum()
}

/// The first `n` bytes of `parts`, as parts (what a torn write leaves).
fn first_bytes<'a>(parts: &[&'a [u8]], mut n: usize) -> Vec<&'a [u8]> {
    let mut kept = Vec::with_capacity(parts.len());
    for p in parts {
        let take = n.min(p.len());
        kept.push(&p[..take]);
        n -= take;
    }
    kept
}

/// Writes all of `parts`, in order, at `position` of `file`, with as few
/// `pwritev` calls as the kernel allows: again for what a short write
/// left, at most `IOV_MAX` (1024 on Linux) parts per call.
fn write_all_vectored_at(file: &File, parts: &[&[u8]], mut position: u64) -> std::io::Result<()> {
    const IOV_MAX: usize = 1024;
    let mut slices: Vec<IoSlice<'_>> = parts
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| IoSlice::new(p))
        .collect();
    let mut rest: &mut [IoSlice<'_>] = &mut slices;
    while !rest.is_empty() {
        let n = rest.len().min(IOV_MAX);
        match rustix::io::pwritev(file, &rest[..n], position) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(written) => {
                position += written as u64;
                IoSlice::advance_slices(&mut rest, written);
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

pub(crate) fn remove_segment_files(dir: &Path, base: i64) -> Result<()> {
    for ext in [LOG_EXT, INDEX_EXT, TIME_INDEX_EXT] {
        fsutil::remove_if_exists(&segment_path(dir, base, ext))?;
    }
    Ok(())
}

/// The max timestamp of a stored frame: a version 2 frame's block header
/// carries it (Kafka's CRC covers the block); a version 1 frame's records
/// are decoded.
fn frame_max_timestamp(frame: &Bytes, header: &BatchHeader) -> Result<i64> {
    if block::frame_version(frame) == Some(block::BLOCK_VERSION) {
        Ok(block::decode_verified(frame)?.max_timestamp())
    } else {
        Ok(codec::decode_verified(frame, header)?.max_timestamp_ms())
    }
}

/// The greatest record timestamp among the frames in `[0, limit)`.
fn max_timestamp_below(file: &File, path: &Path, limit: u64, max_batch_bytes: u32) -> Result<i64> {
    let mut max = -1;
    let mut frames = FrameReader::new(file, path, 0, limit, max_batch_bytes);
    while let Some((pos, frame)) = frames.next_frame().map_err(|e| e.into_storage(path))? {
        let batch =
            codec::decode(&frame, max_batch_bytes).map_err(|e| stored_corruption(path, pos, &e))?;
        max = max.max(batch.max_timestamp_ms());
    }
    Ok(max)
}

impl PartitionLog {
    /// Forgets the recovery point before closed segments change (truncation,
    /// deletion, compaction), so a crash never trusts a stale summary. The
    /// next flush writes a new one.
    pub(crate) fn invalidate_recovery_checkpoint(&mut self) -> Result<()> {
        let path = self.dir.join(CheckpointKind::RecoveryPoint.file_name());
        self.recovery_bases.clear();
        self.rewrites += 1;
        self.read_handles.clear();
        if path.exists() {
            fsutil::remove_if_exists(&path)?;
            fsutil::sync_dir_with(&self.config.faults, &self.dir)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Record, RecordBatch};
    use std::panic::{AssertUnwindSafe, catch_unwind};

    /// A frame whose length prefix does not name its bytes fails the
    /// invariant before a byte of it reaches the segment (in release builds
    /// too), so the log on disk stays whole.
    #[test]
    fn a_frame_that_is_not_whole_fails_the_invariant_before_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(dir.path(), LogConfig::default(), 0).unwrap();
        let value = bytes::Bytes::from_static(b"v");
        let mut batch = RecordBatch::new(vec![Record::new(None, Some(value), 1)]).unwrap();
        batch.assign(0, 0).unwrap();
        let header = batch.header().unwrap();
        let mut frame = Vec::new();
        codec::encode_into(&batch, &mut frame).unwrap();
        let torn = &frame[..frame.len() - 1];
        let written = catch_unwind(AssertUnwindSafe(|| log.write_frame(&[torn], &header, 1)));
        assert!(written.is_err(), "a torn frame must not be written");
        assert_eq!((log.leo(), log.size_bytes()), (0, 0));
        let info = log.write_frame(&[&frame], &header, 1).unwrap();
        assert_eq!((info.next_offset, info.size), (1, frame.len() as u64));
    }

    /// Flips one byte of `path` in place (the same file, as damage on disk).
    fn flip(path: &Path, at: u64) {
        let mut bytes = std::fs::read(path).unwrap();
        bytes[usize::try_from(at).unwrap()] ^= 0x40;
        std::fs::write(path, bytes).unwrap();
    }

    /// The middle byte of a located frame: its segment and position.
    fn middle(b: &StoredBatch) -> (Arc<Path>, u64) {
        let origin = b.unchecked.as_ref().expect("located without a check");
        (
            Arc::clone(&origin.path),
            origin.position + b.size() as u64 / 2,
        )
    }

    /// A consumer's fetch checks a frame's CRC once: not at all for frames
    /// this process wrote, once for frames read from disk; a damaged frame
    /// fails until it is intact again.
    #[test]
    fn a_fetch_checks_each_frame_read_from_disk_once_and_trusts_its_own_writes() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(dir.path(), LogConfig::default(), 0).unwrap();
        for i in 0..3 {
            let value = bytes::Bytes::from(format!("value {i}"));
            let batch = RecordBatch::new(vec![Record::new(None, Some(value), 1)]).unwrap();
            log.append(batch).unwrap();
        }
        let locate = |log: &PartitionLog| log.locate_batches(0, usize::MAX, None).unwrap();
        // Written here: trusted as Kafka trusts its log on a fetch, though
        // damage behind the process's back is still seen by a full check.
        let (path, at) = middle(&locate(&log)[1]);
        flip(&path, at);
        let own = locate(&log);
        assert!(own[1].check_once().is_ok());
        assert!(own[1].check().is_err());
        flip(&path, at);
        // Read from disk after a clean reopen: the first fetch checks.
        log.close().unwrap();
        let log = PartitionLog::open(dir.path(), LogConfig::default(), 0).unwrap();
        flip(&path, at);
        let read = locate(&log);
        read[0].check_once().unwrap();
        assert!(read[1].check_once().is_err(), "damage is found");
        assert!(locate(&log)[1].check_once().is_err(), "and found again");
        flip(&path, at);
        for b in locate(&log) {
            b.check_once().unwrap();
        }
        // Checked once: later fetches trust it.
        flip(&path, at);
        assert!(locate(&log)[1].check_once().is_ok());
        assert!(locate(&log)[1].check().is_err());
    }

    /// Closed segments are read through handles kept between reads (the
    /// rolled active file first), at most two of them, dropped when
    /// segments go.
    #[test]
    fn closed_segments_are_read_through_kept_handles_at_most_two() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = LogConfig {
            segment_max_bytes: 200,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::open(dir.path(), cfg, 0).unwrap();
        for i in 0..12 {
            let value = bytes::Bytes::from(format!("value-{i:03}-{}", "x".repeat(60)));
            let batch = RecordBatch::new(vec![Record::new(None, Some(value), 1)]).unwrap();
            log.append(batch).unwrap();
        }
        let bases: Vec<i64> = log
            .closed_segments()
            .iter()
            .map(|s| s.base_offset)
            .collect();
        assert!(bases.len() >= 4, "{bases:?}");
        assert!(
            log.read_handles.len() <= 2,
            "rolled files kept, two at most"
        );
        let read_all = |log: &PartitionLog| {
            (0..log.leo())
                .map(|o| log.read_batches(o, 1, None).unwrap()[0].base_offset())
                .collect::<Vec<_>>()
        };
        assert_eq!(read_all(&log), (0..12).collect::<Vec<_>>());
        assert_eq!(log.read_handles.len(), 2);
        let (first, generation) = (bases[0], log.rewrites);
        let path = segment_path(dir.path(), first, LOG_EXT);
        let a = log.read_handles.get(first, generation, &path).unwrap();
        let b = log.read_handles.get(first, generation, &path).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "the second read reuses the handle");
        // Deleting segments drops the handles; reads open what is left.
        log.delete_closed_segments(&bases[..2]).unwrap();
        assert_eq!(log.read_handles.len(), 0);
        let start = log.log_start_offset();
        assert_eq!(
            log.read_batches(start, 1, None).unwrap()[0].base_offset(),
            start
        );
        assert!((1..=2).contains(&log.read_handles.len()));
    }
}
