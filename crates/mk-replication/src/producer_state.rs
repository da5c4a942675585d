//! Idempotent-producer state (broker half of KIP-98) of one replica: per
//! producer id the epoch and the last five batches' sequence ranges and
//! offsets, the duplicate / fencing / sequence checks of the leader, and
//! CRC-protected snapshots that let a replica rebuild its state on open or
//! after a truncation without scanning the whole log.
//!
//! Every replica keeps its own state, updated as it appends (the leader
//! after validating, followers as they copy), exactly like Kafka's
//! `ProducerStateManager`; so a promoted follower already has the state it
//! needs. The state is a pure function of the log plus the registrations of
//! `register_producer`, which are not in the log and are carried in the
//! snapshots.
//!
//! Snapshot file: `<20-digit offset>.snapshot` in the replica's partition
//! directory (Kafka's name), the state after every batch below `offset`:
//!
//! ```text
//! magic "MKPS" | version u8 = 2 | offset i64 | producer count u32
//! per producer: producer_id i64 | epoch i32 | last_timestamp i64 | batch count u8 (<= 5)
//!   per batch: base_sequence i32 | last_sequence i32 | base_offset i64 | next_offset i64
//! registration count u32 | per registration: producer_id i64 | epoch i32
//! crc32c u32 of every byte before it
//! ```
//!
//! All integers are big-endian. `last_timestamp` is the max timestamp of
//! the producer's newest data batch (Kafka's `lastTimestamp`, -1 when
//! unknown); version 1, written before it was kept, has no such field and
//! still loads, with -1. A snapshot that fails its CRC or structure
//! is a damaged cache, not lost truth: it is deleted with a warning and the
//! state is rebuilt from an older snapshot or from the log.

use crate::error::{ReplicationError, Result};
use mk_core::{ByteReader, Truncated};
use mk_log::{BatchHeader, LogError, PartitionLog, ProducerInfo};
use mk_storage::{FaultInjector, StorageError, fsutil};
use std::collections::{BTreeMap, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};

/// How many batches are retained per producer for duplicate detection
/// (Kafka's limit, matching `max.in.flight.requests.per.connection <= 5`).
pub const MAX_RETAINED_BATCHES: usize = 5;

/// How many snapshot files a replica keeps; older ones only help a
/// truncation deep below the latest checkpoint.
pub(crate) const SNAPSHOTS_KEPT: usize = 3;

const MAGIC: &[u8; 4] = b"MKPS";
const VERSION: u8 = 2;
/// Snapshots written before `last_timestamp` was kept.
const VERSION_WITHOUT_TIMESTAMP: u8 = 1;
const SNAPSHOT_EXT: &str = "snapshot";
const REPLAY_READ_BYTES: usize = 1 << 20;

/// Where one retained batch of a producer landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    pub base_sequence: i32,
    pub last_sequence: i32,
    pub base_offset: i64,
    pub next_offset: i64,
}

/// What a replica knows about one producer id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerEntry {
    pub epoch: i32,
    /// The max timestamp of the newest data batch of this producer in the
    /// log (Kafka's `lastTimestamp`; markers carry no time here); -1 when
    /// unknown.
    pub last_timestamp: i64,
    /// Oldest first, at most [`MAX_RETAINED_BATCHES`].
    pub batches: VecDeque<BatchMetadata>,
}

/// Producer registrations (`producer_id -> epoch`) that are not in the log.
pub(crate) type Registrations = BTreeMap<i64, i32>;

/// The outcome of the leader's idempotence check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SequenceCheck {
    /// No producer id: nothing to check or record.
    NotIdempotent,
    /// A new batch in sequence: append it.
    Fresh,
    /// A retry of a retained batch: answer with its original offsets.
    Duplicate(BatchMetadata),
}

/// The producer state of one replica.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ProducerStateMap {
    producers: BTreeMap<i64, ProducerEntry>,
}

/// The sequence after `last`, wrapping like Kafka after `i32::MAX`.
pub(crate) fn next_sequence(last: i32) -> i32 {
    if last == i32::MAX { 0 } else { last + 1 }
}

impl ProducerStateMap {
    pub(crate) fn get(&self, producer_id: i64) -> Option<&ProducerEntry> {
        self.producers.get(&producer_id)
    }

    /// Every producer id with state here and its epoch.
    pub(crate) fn epochs(&self) -> impl Iterator<Item = (i64, i32)> + '_ {
        self.producers.iter().map(|(id, e)| (*id, e.epoch))
    }

    /// Every producer id with state here, ascending, with its state.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&i64, &ProducerEntry)> + '_ {
        self.producers.iter()
    }

    /// Updates the state with a batch that is now in the log, whose max
    /// timestamp is `max_timestamp` (-1 for a marker, which carries no
    /// time here and leaves the producer's last timestamp as it was). A
    /// newer epoch (from a data batch or a transaction marker) forgets the
    /// older epoch's batches; markers carry no sequence and add no batch.
    pub(crate) fn observe(&mut self, header: &BatchHeader, max_timestamp: i64) {
        let p = header.producer;
        if p.producer_id < 0 {
            return;
        }
        let entry = self
            .producers
            .entry(p.producer_id)
            .or_insert_with(|| ProducerEntry {
                epoch: p.producer_epoch,
                last_timestamp: -1,
                batches: VecDeque::new(),
            });
        if p.producer_epoch > entry.epoch {
            entry.epoch = p.producer_epoch;
            entry.batches.clear();
        } else if p.producer_epoch < entry.epoch {
            // Only a batch the leader validated reaches a log, so an older
            // epoch here can only come from a log written before a newer
            // epoch was seen by this replica; it must not rewind the state.
            return;
        }
        if max_timestamp >= 0 {
            entry.last_timestamp = max_timestamp;
        }
        if header.control.is_some() || p.base_sequence < 0 {
            return;
        }
        entry.batches.push_back(BatchMetadata {
            base_sequence: p.base_sequence,
            last_sequence: header.last_sequence(),
            base_offset: header.base_offset,
            next_offset: header.next_offset(),
        });
        while entry.batches.len() > MAX_RETAINED_BATCHES {
            entry.batches.pop_front();
        }
    }

    /// The base sequence the next new batch of `(producer_id, epoch)` must
    /// carry: 0 for an unknown producer or another epoch, else the one after
    /// the last retained batch.
    pub(crate) fn expected_sequence(&self, producer_id: i64, epoch: i32) -> i32 {
        self.producers
            .get(&producer_id)
            .filter(|e| e.epoch == epoch)
            .and_then(|e| e.batches.back())
            .map_or(0, |last| next_sequence(last.last_sequence))
    }

    /// The leader's check of a new batch (spec 02, "validate"): fencing,
    /// then duplicates, then the expected sequence.
    pub(crate) fn check(
        &self,
        producer: ProducerInfo,
        last_sequence: i32,
        control: bool,
        registered: Option<i32>,
    ) -> Result<SequenceCheck> {
        let pid = producer.producer_id;
        if pid < 0 {
            return Ok(SequenceCheck::NotIdempotent);
        }
        if producer.producer_epoch < 0 {
            return Err(LogError::InvalidRecord(format!(
                "batch of producer {pid} carries epoch {}; an idempotent batch needs an epoch >= 0",
                producer.producer_epoch
            ))
            .into());
        }
        let entry = self.producers.get(&pid);
        let current = entry.map(|e| e.epoch).max(registered);
        if let Some(current) = current
            && producer.producer_epoch < current
        {
            return Err(ReplicationError::ProducerFenced {
                producer_id: pid,
                epoch: producer.producer_epoch,
                current_epoch: current,
            });
        }
        if control {
            return Ok(SequenceCheck::Fresh);
        }
        if producer.base_sequence < 0 {
            return Err(LogError::InvalidRecord(format!(
                "batch of producer {pid} carries no base sequence; an idempotent batch needs base_sequence >= 0"
            ))
            .into());
        }
        if let Some(e) = entry.filter(|e| e.epoch == producer.producer_epoch)
            && let Some(dup) = e.batches.iter().find(|b| {
                b.base_sequence == producer.base_sequence && b.last_sequence == last_sequence
            })
        {
            return Ok(SequenceCheck::Duplicate(*dup));
        }
        let expected = self.expected_sequence(pid, producer.producer_epoch);
        if producer.base_sequence != expected {
            return Err(ReplicationError::OutOfOrderSequence {
                producer_id: pid,
                epoch: producer.producer_epoch,
                expected,
                actual: producer.base_sequence,
            });
        }
        Ok(SequenceCheck::Fresh)
    }

    /// Replays the batches of `log` in `[from, LEO)` into the state.
    pub(crate) fn replay(&mut self, log: &PartitionLog, from: i64) -> Result<()> {
        let mut offset = from.max(log.log_start_offset());
        while offset < log.leo() {
            let batches = log.read_batches(offset, REPLAY_READ_BYTES, None)?;
            let Some(last) = batches.last() else { break };
            let next = last.next_offset();
            for b in batches.iter().filter(|b| b.base_offset() >= offset) {
                self.observe(&b.header, b.max_timestamp()?);
            }
            offset = next;
        }
        Ok(())
    }
}

/// A decoded snapshot file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub(crate) offset: i64,
    pub(crate) state: ProducerStateMap,
    pub(crate) registrations: Registrations,
}

impl Snapshot {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.state.producers.len() * 128);
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&self.offset.to_be_bytes());
        out.extend_from_slice(&count_u32(self.state.producers.len()).to_be_bytes());
        for (pid, entry) in &self.state.producers {
            out.extend_from_slice(&pid.to_be_bytes());
            out.extend_from_slice(&entry.epoch.to_be_bytes());
            out.extend_from_slice(&entry.last_timestamp.to_be_bytes());
            // Kafka keeps the last five batches per producer.
            out.push(u8::try_from(entry.batches.len()).expect("at most five batches per producer"));
            for b in &entry.batches {
                out.extend_from_slice(&b.base_sequence.to_be_bytes());
                out.extend_from_slice(&b.last_sequence.to_be_bytes());
                out.extend_from_slice(&b.base_offset.to_be_bytes());
                out.extend_from_slice(&b.next_offset.to_be_bytes());
            }
        }
        out.extend_from_slice(&count_u32(self.registrations.len()).to_be_bytes());
        for (pid, epoch) in &self.registrations {
            out.extend_from_slice(&pid.to_be_bytes());
            out.extend_from_slice(&epoch.to_be_bytes());
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    /// Decodes a snapshot; the error says what is wrong with it.
    pub(crate) fn decode(bytes: &[u8]) -> std::result::Result<Self, SnapshotError> {
        if bytes.len() < MAGIC.len() + 1 + 8 + 4 + 4 + 4 {
            return Err(SnapshotError::TooShort(bytes.len()));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        let stored = u32::from_be_bytes(crc.try_into().expect("4 bytes"));
        let computed = crc32c::crc32c(body);
        if stored != computed {
            return Err(SnapshotError::Crc { stored, computed });
        }
        let mut r = ByteReader::new(body);
        if r.take(MAGIC.len())? != MAGIC {
            return Err(SnapshotError::Magic);
        }
        let version = r.u8()?;
        if version != VERSION && version != VERSION_WITHOUT_TIMESTAMP {
            return Err(SnapshotError::Version(version));
        }
        let timestamped = version == VERSION;
        let offset = r.i64()?;
        let mut state = ProducerStateMap::default();
        // A producer takes at least id, epoch, (timestamp) and batch count.
        let least = if timestamped { 21 } else { 13 };
        for _ in 0..r.u32_count(least)? {
            let producer_id = r.i64()?;
            let epoch = r.i32()?;
            let last_timestamp = if timestamped { r.i64()? } else { -1 };
            let batches = usize::from(r.u8()?);
            if producer_id < 0 || epoch < 0 || batches > MAX_RETAINED_BATCHES {
                return Err(SnapshotError::InvalidEntry {
                    producer_id,
                    epoch,
                    batches,
                });
            }
            let mut retained = VecDeque::with_capacity(batches);
            for _ in 0..batches {
                retained.push_back(BatchMetadata {
                    base_sequence: r.i32()?,
                    last_sequence: r.i32()?,
                    base_offset: r.i64()?,
                    next_offset: r.i64()?,
                });
            }
            state.producers.insert(
                producer_id,
                ProducerEntry {
                    epoch,
                    last_timestamp,
                    batches: retained,
                },
            );
        }
        let mut registrations = Registrations::new();
        // A registration is an id and an epoch: 12 bytes.
        for _ in 0..r.u32_count(12)? {
            let producer_id = r.i64()?;
            let epoch = r.i32()?;
            registrations.insert(producer_id, epoch);
        }
        if !r.is_empty() {
            return Err(SnapshotError::TrailingBytes(r.remaining()));
        }
        Ok(Self {
            offset,
            state,
            registrations,
        })
    }
}

/// Why a snapshot file cannot be used (it is then discarded and the state
/// rebuilt from an older snapshot or the log).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SnapshotError {
    #[error("{0} bytes is too short for a snapshot")]
    TooShort(usize),
    #[error("CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Crc { stored: u32, computed: u32 },
    #[error("bad magic")]
    Magic,
    #[error("expected version {VERSION_WITHOUT_TIMESTAMP} or {VERSION}, found {0}")]
    Version(u8),
    #[error("truncated: {0}")]
    Truncated(#[from] Truncated),
    #[error("invalid producer entry: id {producer_id}, epoch {epoch}, {batches} batches")]
    InvalidEntry {
        producer_id: i64,
        epoch: i32,
        batches: usize,
    },
    #[error("{0} trailing bytes")]
    TrailingBytes(usize),
}

pub(crate) fn snapshot_path(dir: &Path, offset: i64) -> PathBuf {
    dir.join(format!("{offset:020}.{SNAPSHOT_EXT}"))
}

/// Offsets of the snapshot files in `dir`, ascending.
pub(crate) fn list_snapshots(dir: &Path) -> Result<Vec<i64>> {
    let mut offsets = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| StorageError::io(dir, e))? {
        let entry = entry.map_err(|e| StorageError::io(dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if let Some((stem, SNAPSHOT_EXT)) = name.split_once('.')
            && stem.len() == 20
            && stem.bytes().all(|b| b.is_ascii_digit())
            && let Ok(offset) = stem.parse::<i64>()
        {
            offsets.push(offset);
        }
    }
    offsets.sort_unstable();
    Ok(offsets)
}

/// Removes all but the newest [`SNAPSHOTS_KEPT`] snapshot files (without a
/// directory fsync); true when it removed any.
pub(crate) fn prune_snapshots(dir: &Path) -> Result<bool> {
    let offsets = list_snapshots(dir)?;
    if offsets.len() <= SNAPSHOTS_KEPT {
        return Ok(false);
    }
    for offset in &offsets[..offsets.len() - SNAPSHOTS_KEPT] {
        fsutil::remove_if_exists(&snapshot_path(dir, *offset))?;
    }
    Ok(true)
}

/// Deletes every snapshot above `offset` (the log now ends there).
pub(crate) fn delete_snapshots_above(
    faults: &FaultInjector,
    dir: &Path,
    offset: i64,
) -> Result<()> {
    let mut removed = false;
    for o in list_snapshots(dir)?.into_iter().filter(|o| *o > offset) {
        fsutil::remove_if_exists(&snapshot_path(dir, o))?;
        removed = true;
    }
    if removed {
        fsutil::sync_dir_with(faults, dir)?;
    }
    Ok(())
}

/// Rebuilds the state of `log` (in `dir`): the newest usable snapshot at or
/// below the LEO plus a replay of the batches after it. Without a usable
/// snapshot the whole log is replayed. Returns the state, the registrations
/// the snapshot carried and the snapshot's offset.
pub(crate) fn load_state(
    dir: &Path,
    log: &PartitionLog,
) -> Result<(ProducerStateMap, Registrations, Option<i64>)> {
    delete_snapshots_above(&log.config().faults, dir, log.leo())?;
    let mut found = None;
    for offset in list_snapshots(dir)?.into_iter().rev() {
        let path = snapshot_path(dir, offset);
        let Some(bytes) = fsutil::read_optional(&path)? else {
            continue;
        };
        match Snapshot::decode(&bytes) {
            Ok(s) if s.offset == offset => {
                found = Some(s);
                break;
            }
            Ok(s) => discard(
                &path,
                &format!("names offset {offset} but holds {}", s.offset),
            )?,
            Err(reason) => discard(&path, &reason.to_string())?,
        }
    }
    let (mut state, registrations, from) = match found {
        Some(s) => (s.state, s.registrations, Some(s.offset)),
        None => (ProducerStateMap::default(), Registrations::new(), None),
    };
    state.replay(log, from.unwrap_or(0))?;
    Ok((state, registrations, from))
}

fn discard(path: &Path, reason: &str) -> Result<()> {
    tracing::warn!(
        path = %path.display(),
        reason,
        "discarding a damaged producer snapshot; the state is rebuilt from the log"
    );
    fsutil::remove_if_exists(path)?;
    Ok(())
}

/// A map's length as the snapshot's u32 count: one entry per producer held
/// in memory, far fewer than 2^32.
fn count_u32(n: usize) -> u32 {
    u32::try_from(n).expect("fewer than 2^32 producers")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the flush does (through `fsutil::stage`, a rename and
    /// `prune_snapshots`).
    fn write_snapshot(_: &FaultInjector, dir: &Path, snapshot: &Snapshot) -> Result<()> {
        fsutil::write_atomic(&snapshot_path(dir, snapshot.offset), &snapshot.encode())?;
        prune_snapshots(dir)?;
        Ok(())
    }
    use bytes::Bytes;
    use mk_core::ErrorCode;
    use mk_log::{ControlType, LogConfig, Record, RecordBatch};

    fn header(pid: i64, epoch: i32, seq: i32, base: i64, n: i32) -> BatchHeader {
        BatchHeader {
            base_offset: base,
            leader_epoch: 0,
            producer: ProducerInfo {
                producer_id: pid,
                producer_epoch: epoch,
                base_sequence: seq,
            },
            transactional: false,
            control: None,
            last_offset_delta: n - 1,
            record_count: n as u32,
        }
    }

    fn info(pid: i64, epoch: i32, seq: i32) -> ProducerInfo {
        ProducerInfo {
            producer_id: pid,
            producer_epoch: epoch,
            base_sequence: seq,
        }
    }

    #[test]
    fn duplicates_fencing_and_gaps() {
        let mut s = ProducerStateMap::default();
        assert_eq!(
            s.check(ProducerInfo::NONE, -1, false, None).unwrap(),
            SequenceCheck::NotIdempotent
        );
        assert_eq!(
            s.check(info(1, 0, 0), 1, false, None).unwrap(),
            SequenceCheck::Fresh
        );
        let err = s.check(info(1, 0, 3), 3, false, None).unwrap_err();
        assert_eq!(err.code(), ErrorCode::OutOfOrderSequence);
        assert!(
            err.to_string().contains("expected sequence 0, got 3"),
            "{err}"
        );
        s.observe(&header(1, 0, 0, 10, 2), 100);
        assert_eq!(
            s.check(info(1, 0, 0), 1, false, None).unwrap(),
            SequenceCheck::Duplicate(BatchMetadata {
                base_sequence: 0,
                last_sequence: 1,
                base_offset: 10,
                next_offset: 12
            })
        );
        assert_eq!(
            s.check(info(1, 0, 2), 2, false, None).unwrap(),
            SequenceCheck::Fresh
        );
        assert_eq!(
            s.check(info(1, 0, 0), 0, false, None).unwrap_err().code(),
            ErrorCode::OutOfOrderSequence,
            "same base, different last sequence is no duplicate"
        );
        let fenced = s.check(info(1, 0, 2), 2, false, Some(1)).unwrap_err();
        assert_eq!(fenced.code(), ErrorCode::ProducerFenced);
        assert_eq!(
            s.check(info(1, 1, 0), 0, false, Some(1)).unwrap(),
            SequenceCheck::Fresh,
            "a newer epoch starts at sequence 0"
        );
        assert_eq!(
            s.check(info(1, 1, 2), 2, false, None).unwrap_err().code(),
            ErrorCode::OutOfOrderSequence
        );
        assert_eq!(
            s.check(info(1, 0, -1), -1, false, None).unwrap_err().code(),
            ErrorCode::InvalidRecord
        );
        assert_eq!(
            s.check(info(1, -1, 0), 0, false, None).unwrap_err().code(),
            ErrorCode::InvalidRecord
        );
        assert_eq!(
            s.check(info(1, 0, -1), -1, true, None).unwrap(),
            SequenceCheck::Fresh,
            "a marker of the current epoch carries no sequence"
        );
    }

    #[test]
    fn only_five_batches_are_retained_and_sequences_wrap() {
        let mut s = ProducerStateMap::default();
        for i in 0..7 {
            s.observe(&header(3, 0, i * 2, i64::from(i) * 2, 2), 100);
        }
        let e = s.get(3).unwrap();
        assert_eq!(e.batches.len(), MAX_RETAINED_BATCHES);
        assert_eq!(e.batches.front().unwrap().base_sequence, 4);
        assert_eq!(
            s.check(info(3, 0, 2), 3, false, None).unwrap_err().code(),
            ErrorCode::OutOfOrderSequence,
            "a retry older than the five retained batches is out of order"
        );
        assert_eq!(next_sequence(i32::MAX), 0);
        let mut w = ProducerStateMap::default();
        w.observe(&header(4, 0, i32::MAX - 1, 0, 2), 100);
        assert_eq!(
            w.check(info(4, 0, 0), 0, false, None).unwrap(),
            SequenceCheck::Fresh
        );
    }

    #[test]
    fn a_newer_epoch_marker_resets_batches_and_an_older_epoch_is_ignored() {
        let mut s = ProducerStateMap::default();
        s.observe(&header(5, 0, 0, 0, 1), 100);
        let mut marker = header(5, 1, -1, 1, 1);
        marker.control = Some(ControlType::Abort);
        s.observe(&marker, -1);
        assert_eq!(s.get(5).unwrap().epoch, 1);
        assert!(s.get(5).unwrap().batches.is_empty());
        assert_eq!(
            s.get(5).unwrap().last_timestamp,
            100,
            "a marker carries no time"
        );
        s.observe(&header(5, 0, 1, 2, 1), 300);
        assert_eq!(s.get(5).unwrap().epoch, 1);
        assert!(s.get(5).unwrap().batches.is_empty());
        assert_eq!(s.get(5).unwrap().last_timestamp, 100);
        s.observe(&header(5, 1, 0, 3, 1), 400);
        assert_eq!(s.get(5).unwrap().last_timestamp, 400);
    }

    #[test]
    fn snapshot_round_trips_and_detects_damage() {
        let mut state = ProducerStateMap::default();
        state.observe(&header(1, 2, 0, 0, 3), 100);
        state.observe(&header(9, 0, 7, 3, 1), 1_700_000_000_123);
        let snap = Snapshot {
            offset: 4,
            state,
            registrations: Registrations::from([(1, 2), (11, 4)]),
        };
        let bytes = snap.encode();
        assert_eq!(Snapshot::decode(&bytes).unwrap(), snap);
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert!(Snapshot::decode(&bad).is_err(), "flip at byte {i}");
        }
        assert!(Snapshot::decode(&bytes[..bytes.len() - 1]).is_err());
    }

    /// A snapshot written before `last_timestamp` was kept (version 1, by
    /// hand from the layout it had) loads, every timestamp unknown.
    #[test]
    fn a_version_1_snapshot_loads_with_unknown_timestamps() {
        let mut v1 = Vec::new();
        v1.extend_from_slice(MAGIC);
        v1.push(1);
        v1.extend_from_slice(&4i64.to_be_bytes());
        v1.extend_from_slice(&1u32.to_be_bytes());
        v1.extend_from_slice(&9i64.to_be_bytes());
        v1.extend_from_slice(&0i32.to_be_bytes());
        v1.push(1);
        for n in [7i32, 7] {
            v1.extend_from_slice(&n.to_be_bytes());
        }
        for n in [3i64, 4] {
            v1.extend_from_slice(&n.to_be_bytes());
        }
        v1.extend_from_slice(&1u32.to_be_bytes());
        v1.extend_from_slice(&11i64.to_be_bytes());
        v1.extend_from_slice(&4i32.to_be_bytes());
        let crc = crc32c::crc32c(&v1);
        v1.extend_from_slice(&crc.to_be_bytes());
        let mut state = ProducerStateMap::default();
        state.observe(&header(9, 0, 7, 3, 1), -1);
        let expected = Snapshot {
            offset: 4,
            state,
            registrations: Registrations::from([(11, 4)]),
        };
        assert_eq!(Snapshot::decode(&v1).unwrap(), expected);
        let body = v1.len() - 4;
        v1[4] = 3;
        let crc = crc32c::crc32c(&v1[..body]);
        v1[body..].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(
            Snapshot::decode(&v1).unwrap_err(),
            SnapshotError::Version(3)
        );
    }

    fn batch(pid: i64, seq: i32) -> RecordBatch {
        let timestamp = 1_000 + i64::from(seq);
        RecordBatch::new(vec![Record::new(
            None,
            Some(Bytes::from_static(b"v")),
            timestamp,
        )])
        .unwrap()
        .with_producer(info(pid, 0, seq))
    }

    #[test]
    fn load_uses_the_newest_snapshot_plus_the_tail_and_survives_a_damaged_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::open(dir.path(), LogConfig::default(), 0).unwrap();
        let mut live = ProducerStateMap::default();
        for seq in 0..3 {
            let info = log.append(batch(1, seq)).unwrap();
            let b = &log.read_batches(info.base_offset, 1, None).unwrap()[0];
            live.observe(&b.header, b.max_timestamp().unwrap());
        }
        let mut at3 = live.clone();
        let regs = Registrations::from([(2, 5)]);
        write_snapshot(
            &FaultInjector::new(),
            dir.path(),
            &Snapshot {
                offset: 3,
                state: at3.clone(),
                registrations: regs.clone(),
            },
        )
        .unwrap();
        for seq in 3..5 {
            let info = log.append(batch(1, seq)).unwrap();
            let b = &log.read_batches(info.base_offset, 1, None).unwrap()[0];
            live.observe(&b.header, b.max_timestamp().unwrap());
            at3.observe(&b.header, b.max_timestamp().unwrap());
        }
        // A snapshot claiming a state that is not the log's would show up
        // if the tail were not replayed from its offset.
        let (state, r, from) = load_state(dir.path(), &log).unwrap();
        assert_eq!(state.get(1).unwrap().last_timestamp, 1_004);
        assert_eq!((state, r, from), (live.clone(), regs, Some(3)));

        std::fs::write(snapshot_path(dir.path(), 3), b"garbage that is long enough").unwrap();
        let (state, r, from) = load_state(dir.path(), &log).unwrap();
        assert_eq!((state, r.len(), from), (live, 0, None));
        assert!(list_snapshots(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn only_the_newest_snapshots_are_kept_and_those_above_the_leo_go() {
        let dir = tempfile::tempdir().unwrap();
        for offset in [1, 5, 9, 12, 20] {
            write_snapshot(
                &FaultInjector::new(),
                dir.path(),
                &Snapshot {
                    offset,
                    state: ProducerStateMap::default(),
                    registrations: Registrations::new(),
                },
            )
            .unwrap();
        }
        assert_eq!(list_snapshots(dir.path()).unwrap(), vec![9, 12, 20]);
        delete_snapshots_above(&FaultInjector::new(), dir.path(), 12).unwrap();
        assert_eq!(list_snapshots(dir.path()).unwrap(), vec![9, 12]);
    }
}
