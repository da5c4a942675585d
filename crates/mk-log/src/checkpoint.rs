//! The two checkpoint files of a partition log, which share one format and
//! differ in what they promise ([`CheckpointKind`]):
//!
//! - `clean-shutdown`: `close()` writes it last, after every file is
//!   fsynced; `open()` reads it and deletes it before changing anything.
//!   When it is intact and agrees with the files on disk, open trusts every
//!   segment and its index files without decoding a single batch, so
//!   reopening costs O(number of segments) metadata calls, not O(log).
//! - `recovery-checkpoint`: every flush writes it for the closed segments
//!   (all fsynced by that flush) and the transaction index as it stood at
//!   the start of the active segment. After a crash, open trusts that prefix
//!   and scans only the rest.
//!
//! Without a usable checkpoint every segment is scanned, which is always
//! safe; a damaged checkpoint is therefore never an error, only slower.
//!
//! ```text
//! magic "MKCS" | version u8 = 1 | crc32c u32 of the body | body
//! body := segment count u32 | per segment: base_offset i64 | next_offset i64
//!         | size u64 | max_timestamp_ms i64 | index_bytes u64
//!         | transaction index (txn_index.rs)
//! ```

use crate::segment::{LOG_EXT, Segment, segment_path};
use crate::txn_index::TxnIndex;
use mk_core::{ByteReader, Truncated};
use std::path::Path;

const MAGIC: &[u8; 4] = b"MKCS";
const VERSION: u8 = 1;
/// magic + version + crc.
const HEADER_BYTES: usize = 9;
/// The encoded size of one [`SegmentSummary`].
const SEGMENT_BYTES: usize = 40;

/// Which checkpoint file, and so which promise its content makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CheckpointKind {
    /// Every segment, the active one included, was fsynced and summarized
    /// by a clean `close()`.
    CleanShutdown,
    /// The closed segments were fsynced and summarized by a flush; the
    /// segment active then, and any rolled after it, were not.
    RecoveryPoint,
}

impl CheckpointKind {
    /// The file's name inside the partition directory.
    pub fn file_name(self) -> &'static str {
        match self {
            CheckpointKind::CleanShutdown => "clean-shutdown",
            CheckpointKind::RecoveryPoint => "recovery-checkpoint",
        }
    }
}

/// What a checkpoint remembers of one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SegmentSummary {
    pub base_offset: i64,
    pub next_offset: i64,
    pub size: u64,
    pub max_timestamp_ms: i64,
    pub index_bytes: u64,
}

impl SegmentSummary {
    pub fn of(s: &Segment) -> Self {
        Self {
            base_offset: s.base_offset,
            next_offset: s.next_offset,
            size: s.size,
            max_timestamp_ms: s.max_timestamp_ms,
            index_bytes: s.index_bytes,
        }
    }
}

/// The content of either checkpoint file: summaries of the segments it
/// vouches for, oldest first, and the transaction index after them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    pub segments: Vec<SegmentSummary>,
    pub txns: TxnIndex,
}

/// Why a checkpoint file was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CheckpointError {
    #[error("not a checkpoint of format version {VERSION} (bad magic, version or length)")]
    Header,
    #[error("CRC mismatch: stored {stored:08x}, computed {computed:08x}")]
    Crc { stored: u32, computed: u32 },
    #[error("body truncated: {0}")]
    Truncated(#[from] Truncated),
    #[error("{0} trailing bytes after the transaction index")]
    TrailingBytes(usize),
    #[error("producer {0} is listed with two open transactions")]
    DuplicateOpenTransaction(i64),
}

impl Checkpoint {
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(16 + self.segments.len() * SEGMENT_BYTES);
        let count = u32::try_from(self.segments.len()).expect("a log has fewer than 2^32 segments");
        body.extend_from_slice(&count.to_be_bytes());
        for s in &self.segments {
            body.extend_from_slice(&s.base_offset.to_be_bytes());
            body.extend_from_slice(&s.next_offset.to_be_bytes());
            body.extend_from_slice(&s.size.to_be_bytes());
            body.extend_from_slice(&s.max_timestamp_ms.to_be_bytes());
            body.extend_from_slice(&s.index_bytes.to_be_bytes());
        }
        self.txns.encode_into(&mut body);
        let mut out = Vec::with_capacity(body.len() + HEADER_BYTES);
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// Decodes a checkpoint; the error says what is damaged (the log then
    /// falls back to a recovery scan, which is always safe).
    pub fn decode(bytes: &[u8]) -> Result<Self, CheckpointError> {
        let mut r = ByteReader::new(bytes);
        let header = r.take(HEADER_BYTES).map_err(|_| CheckpointError::Header)?;
        if &header[..4] != MAGIC || header[4] != VERSION {
            return Err(CheckpointError::Header);
        }
        let stored = u32::from_be_bytes([header[5], header[6], header[7], header[8]]);
        let body = r.rest();
        let computed = crc32c::crc32c(body);
        if computed != stored {
            return Err(CheckpointError::Crc { stored, computed });
        }
        let mut r = ByteReader::new(body);
        let n = r.u32_count(SEGMENT_BYTES)?;
        let mut segments = Vec::with_capacity(n);
        for _ in 0..n {
            segments.push(SegmentSummary {
                base_offset: r.i64()?,
                next_offset: r.i64()?,
                size: r.u64()?,
                max_timestamp_ms: r.i64()?,
                index_bytes: r.u64()?,
            });
        }
        let txns = TxnIndex::decode(&mut r)?;
        if !r.is_empty() {
            return Err(CheckpointError::TrailingBytes(r.remaining()));
        }
        Ok(Self { segments, txns })
    }

    /// True when the checkpoint agrees with the segment files on disk
    /// (`bases`, ascending): the segments it lists are, with unchanged log
    /// sizes and in order, all of them (a clean shutdown) or a strict prefix
    /// of them (a recovery point: the rest is scanned).
    pub fn matches(&self, kind: CheckpointKind, dir: &Path, bases: &[i64]) -> bool {
        let count_fits = match kind {
            CheckpointKind::CleanShutdown => self.segments.len() == bases.len(),
            CheckpointKind::RecoveryPoint => self.segments.len() < bases.len(),
        };
        count_fits
            && self.segments.iter().zip(bases).all(|(s, b)| {
                s.base_offset == *b
                    && std::fs::metadata(segment_path(dir, *b, LOG_EXT))
                        .is_ok_and(|m| m.len() == s.size)
            })
            && self
                .segments
                .windows(2)
                .all(|w| w[1].base_offset >= w[0].next_offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_any_damage() {
        let cp = Checkpoint {
            segments: vec![SegmentSummary {
                base_offset: 0,
                next_offset: 10,
                size: 1234,
                max_timestamp_ms: 99,
                index_bytes: 24,
            }],
            txns: TxnIndex::default(),
        };
        let bytes = cp.encode();
        assert_eq!(Checkpoint::decode(&bytes), Ok(cp));
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert!(Checkpoint::decode(&bad).is_err(), "flip at {i}");
            assert!(Checkpoint::decode(&bytes[..i]).is_err(), "cut at {i}");
        }
    }

    #[test]
    fn damage_is_named() {
        let cp = Checkpoint {
            segments: Vec::new(),
            txns: TxnIndex::default(),
        };
        let bytes = cp.encode();
        assert_eq!(
            Checkpoint::decode(&bytes[..5]),
            Err(CheckpointError::Header)
        );
        let mut flipped = bytes.clone();
        flipped[HEADER_BYTES] ^= 1;
        assert!(matches!(
            Checkpoint::decode(&flipped),
            Err(CheckpointError::Crc { .. })
        ));
        // A body that claims a segment it does not hold, behind a valid CRC.
        let mut body = 1u32.to_be_bytes().to_vec();
        body.extend_from_slice(&[0; 8]);
        let mut claimed = bytes[..5].to_vec();
        claimed.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
        claimed.extend_from_slice(&body);
        assert!(matches!(
            Checkpoint::decode(&claimed),
            Err(CheckpointError::Truncated(_))
        ));
        let mut long = bytes.clone();
        long.push(0);
        let body = &long[HEADER_BYTES..];
        let crc = crc32c::crc32c(body).to_be_bytes();
        long[5..HEADER_BYTES].copy_from_slice(&crc);
        assert_eq!(
            Checkpoint::decode(&long),
            Err(CheckpointError::TrailingBytes(1))
        );
    }

    #[test]
    fn a_clean_shutdown_lists_every_segment_and_a_recovery_point_a_strict_prefix() {
        let dir = tempfile::tempdir().unwrap();
        for (base, len) in [(0i64, 5u64), (10, 7)] {
            std::fs::write(
                segment_path(dir.path(), base, LOG_EXT),
                vec![0; usize::try_from(len).unwrap()],
            )
            .unwrap();
        }
        let summary = |base_offset, next_offset, size| SegmentSummary {
            base_offset,
            next_offset,
            size,
            max_timestamp_ms: -1,
            index_bytes: 0,
        };
        let all = Checkpoint {
            segments: vec![summary(0, 10, 5), summary(10, 12, 7)],
            txns: TxnIndex::default(),
        };
        let prefix = Checkpoint {
            segments: vec![summary(0, 10, 5)],
            txns: TxnIndex::default(),
        };
        let bases = [0, 10];
        use CheckpointKind::{CleanShutdown, RecoveryPoint};
        assert!(all.matches(CleanShutdown, dir.path(), &bases));
        assert!(!all.matches(RecoveryPoint, dir.path(), &bases));
        assert!(prefix.matches(RecoveryPoint, dir.path(), &bases));
        assert!(!prefix.matches(CleanShutdown, dir.path(), &bases));
        let resized = Checkpoint {
            segments: vec![summary(0, 10, 6)],
            txns: TxnIndex::default(),
        };
        assert!(!resized.matches(RecoveryPoint, dir.path(), &bases));
    }
}
