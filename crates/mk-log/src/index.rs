//! Sparse indexes of one segment: the offset index (`.index`, entries of
//! `relative_offset u32 | position u64`) and the time index (`.timeindex`,
//! entries of `timestamp_ms i64 | relative_offset u32`). Both are 12-byte
//! big-endian entries, strictly increasing in both fields.
//!
//! Indexes are a cache of the log: they are kept in memory, written to disk
//! when a segment is closed or the log is closed cleanly, and rebuilt from the
//! log whenever they cannot be trusted.

use crate::error::{LogError, Result};
use mk_core::{ByteReader, Truncated};

/// Bytes per entry in both index files.
pub const ENTRY_BYTES: usize = 12;

/// The entries of one sparse index, strictly increasing in both fields.
/// [`OffsetIndex`] and [`TimeIndex`] are its two kinds; each adds its own
/// file layout and lookups.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SparseIndex<A, B> {
    entries: Vec<(A, B)>,
}

/// Offset index: relative offset of a batch's base -> byte position.
pub type OffsetIndex = SparseIndex<u32, u64>;

/// Time index: entry `(t, o)` says every record stored before the batch at
/// relative offset `o` has a timestamp <= `t`. Timestamps and offsets both
/// strictly increase.
pub type TimeIndex = SparseIndex<i64, u32>;

impl<A: Copy, B: Copy> SparseIndex<A, B> {
    pub fn new() -> Self {
        Self {
            entries: Vec::new(),
        }
    }

    pub fn entries(&self) -> &[(A, B)] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The index file: each entry's two fields (`encode` makes their
    /// big-endian bytes), back to back.
    fn encode<const M: usize, const N: usize>(
        &self,
        encode: impl Fn(A, B) -> ([u8; M], [u8; N]),
    ) -> Vec<u8> {
        debug_assert_eq!(M + N, ENTRY_BYTES);
        let mut out = Vec::with_capacity(self.entries.len() * ENTRY_BYTES);
        for &(a, b) in &self.entries {
            let (a, b) = encode(a, b);
            out.extend_from_slice(&a);
            out.extend_from_slice(&b);
        }
        out
    }

    /// Drops the entries from the first whose relative offset (`rel` picks
    /// it out of an entry) is at or after `relative_offset`.
    fn truncate_where(&mut self, relative_offset: u32, rel: impl Fn(&(A, B)) -> u32) {
        let keep = self.entries.partition_point(|e| rel(e) < relative_offset);
        self.entries.truncate(keep);
    }
}

impl<A, B> SparseIndex<A, B>
where
    A: Copy + Ord + std::fmt::Display,
    B: Copy + Ord + std::fmt::Display,
{
    /// Parses an index file (`what` names it in messages): whole entries
    /// of `ENTRY_BYTES` each, read by `read`, each strictly after the
    /// previous one in both fields. Anything else is CORRUPT_INDEX.
    fn parse(
        bytes: &[u8],
        what: &str,
        read: impl Fn(&mut ByteReader<'_>) -> Result<(A, B), Truncated>,
    ) -> Result<Self> {
        if !bytes.len().is_multiple_of(ENTRY_BYTES) {
            return Err(LogError::CorruptIndex(format!(
                "{what} of {} bytes is not a multiple of {ENTRY_BYTES}",
                bytes.len()
            )));
        }
        let mut r = ByteReader::new(bytes);
        let mut entries: Vec<(A, B)> = Vec::with_capacity(bytes.len() / ENTRY_BYTES);
        while !r.is_empty() {
            let (a, b) =
                read(&mut r).map_err(|t| LogError::CorruptIndex(format!("{what}: {t}")))?;
            if let Some(&(last_a, last_b)) = entries.last()
                && (a <= last_a || b <= last_b)
            {
                return Err(LogError::CorruptIndex(format!(
                    "{what} entry ({a}, {b}) does not follow ({last_a}, {last_b})"
                )));
            }
            entries.push((a, b));
        }
        Ok(Self { entries })
    }
}

impl OffsetIndex {
    /// Parses an index file. Fails with CORRUPT_INDEX unless the bytes are
    /// whole entries, strictly increasing in offset and position.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        Self::parse(bytes, "offset index", |r| Ok((r.u32()?, r.u64()?)))
    }

    /// Checks that the entries fit a segment of `size` bytes whose relative
    /// offsets stay below `span`.
    pub(crate) fn check_fits(&self, size: u64, span: i64) -> Result<()> {
        match self.entries.last() {
            Some(&(rel, pos)) if pos >= size || i64::from(rel) >= span.max(1) => {
                Err(LogError::CorruptIndex(format!(
                    "offset index entry ({rel}, {pos}) lies outside a segment of {size} bytes and {span} offsets"
                )))
            }
            _ => Ok(()),
        }
    }

    /// Serializes the index in file format.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.encode(|rel, pos| (rel.to_be_bytes(), pos.to_be_bytes()))
    }

    /// Appends an entry; it must be strictly after the last one.
    pub fn push(&mut self, relative_offset: u32, position: u64) {
        debug_assert!(
            self.entries
                .last()
                .is_none_or(|&(r, p)| relative_offset > r && position > p),
            "offset index must stay strictly increasing"
        );
        self.entries.push((relative_offset, position));
    }

    /// The greatest entry whose relative offset is <= `relative_offset`.
    pub fn floor(&self, relative_offset: u32) -> Option<(u32, u64)> {
        let i = self.entries.partition_point(|&(r, _)| r <= relative_offset);
        i.checked_sub(1).map(|i| self.entries[i])
    }

    /// Position of the last entry, if any.
    pub fn last_position(&self) -> Option<u64> {
        self.entries.last().map(|&(_, p)| p)
    }

    /// Drops entries at or after `relative_offset`.
    pub fn truncate_from_offset(&mut self, relative_offset: u32) {
        self.truncate_where(relative_offset, |&(r, _)| r);
    }
}

impl TimeIndex {
    /// Parses a time index file (CORRUPT_INDEX when malformed).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        Self::parse(bytes, "time index", |r| Ok((r.i64()?, r.u32()?)))
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        self.encode(|ts, rel| (ts.to_be_bytes(), rel.to_be_bytes()))
    }

    /// Adds `(max_timestamp_before, relative_offset)` if it moves the index
    /// forward in both fields; otherwise the entry would add nothing.
    pub fn maybe_push(&mut self, max_timestamp_before: i64, relative_offset: u32) {
        match self.entries.last() {
            Some(&(ts, rel)) if max_timestamp_before <= ts || relative_offset <= rel => {}
            _ => self.entries.push((max_timestamp_before, relative_offset)),
        }
    }

    /// The relative offset from which a scan for the first record with
    /// timestamp >= `target_ms` may start: the greatest entry whose
    /// timestamp is below the target (every record before it is too early).
    pub fn scan_start(&self, target_ms: i64) -> u32 {
        let i = self.entries.partition_point(|&(ts, _)| ts < target_ms);
        i.checked_sub(1).map_or(0, |i| self.entries[i].1)
    }

    pub fn truncate_from_offset(&mut self, relative_offset: u32) {
        self.truncate_where(relative_offset, |&(_, r)| r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_index_round_trips_and_floors() {
        let mut idx = OffsetIndex::new();
        idx.push(0, 0);
        idx.push(10, 4_100);
        idx.push(25, 8_300);
        let back = OffsetIndex::from_bytes(&idx.to_bytes()).unwrap();
        assert_eq!(back, idx);
        assert_eq!(idx.to_bytes().len(), 36);
        assert_eq!(idx.floor(0), Some((0, 0)));
        assert_eq!(idx.floor(9), Some((0, 0)));
        assert_eq!(idx.floor(10), Some((10, 4_100)));
        assert_eq!(idx.floor(1_000), Some((25, 8_300)));
        idx.truncate_from_offset(10);
        assert_eq!(idx.entries(), &[(0, 0)]);
    }

    #[test]
    fn malformed_index_files_are_corrupt_index() {
        assert_eq!(
            OffsetIndex::from_bytes(&[0; 13]).unwrap_err().code(),
            mk_core::ErrorCode::CorruptIndex
        );
        let mut idx = OffsetIndex::new();
        idx.push(5, 100);
        let mut bytes = idx.to_bytes();
        bytes.extend_from_slice(&idx.to_bytes()); // same entry twice: not increasing
        assert_eq!(
            OffsetIndex::from_bytes(&bytes).unwrap_err().code(),
            mk_core::ErrorCode::CorruptIndex
        );
        let mut t = TimeIndex::new();
        t.maybe_push(10, 1);
        let mut tb = t.to_bytes();
        tb.extend_from_slice(&t.to_bytes());
        assert_eq!(
            TimeIndex::from_bytes(&tb).unwrap_err().code(),
            mk_core::ErrorCode::CorruptIndex
        );
    }

    #[test]
    fn time_index_only_moves_forward_and_finds_scan_start() {
        let mut t = TimeIndex::new();
        t.maybe_push(-1, 0);
        t.maybe_push(100, 5);
        t.maybe_push(90, 9); // not forward in time: skipped
        t.maybe_push(200, 12);
        assert_eq!(t.entries(), &[(-1, 0), (100, 5), (200, 12)]);
        assert_eq!(t.scan_start(50), 0);
        assert_eq!(t.scan_start(100), 0);
        assert_eq!(t.scan_start(101), 5);
        assert_eq!(t.scan_start(10_000), 12);
        assert_eq!(TimeIndex::from_bytes(&t.to_bytes()).unwrap(), t);
    }
}
