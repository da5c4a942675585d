//! The clean-shutdown checkpoint of a partition log (`clean-shutdown`).
//!
//! `close()` writes it last, after every file is fsynced; `open()` reads it
//! and deletes it before changing anything. When it is present, intact and
//! agrees with the files on disk, open trusts the closed segments and their
//! index files without decoding a single batch, so reopening costs
//! O(number of segments) metadata calls and O(1) data, not O(log). After a
//! crash, the `recovery-checkpoint` written by every flush (same format,
//! closed segments only) lets open trust the fsynced prefix and scan only
//! the rest; without either, every segment is scanned.

use crate::txn_index::TxnIndex;

pub(crate) const FILE_NAME: &str = "clean-shutdown";
/// The same format, written by `flush`: the closed segments (all fsynced)
/// and the transaction index as it stood at the start of the active
/// segment. After a crash, open trusts that prefix and scans the rest.
pub(crate) const RECOVERY_FILE_NAME: &str = "recovery-checkpoint";
const MAGIC: &[u8; 4] = b"MKCS";
const VERSION: u8 = 1;

/// What the checkpoint remembers of one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SegmentSummary {
    pub base_offset: i64,
    pub next_offset: i64,
    pub size: u64,
    pub max_timestamp_ms: i64,
    pub index_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CleanShutdown {
    pub segments: Vec<SegmentSummary>,
    pub txns: TxnIndex,
}

impl CleanShutdown {
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(16 + self.segments.len() * 40);
        body.extend_from_slice(&(self.segments.len() as u32).to_be_bytes());
        for s in &self.segments {
            body.extend_from_slice(&s.base_offset.to_be_bytes());
            body.extend_from_slice(&s.next_offset.to_be_bytes());
            body.extend_from_slice(&s.size.to_be_bytes());
            body.extend_from_slice(&s.max_timestamp_ms.to_be_bytes());
            body.extend_from_slice(&s.index_bytes.to_be_bytes());
        }
        self.txns.encode_into(&mut body);
        let mut out = Vec::with_capacity(body.len() + 9);
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// Decodes a checkpoint; `None` when it is damaged in any way (the log
    /// then falls back to a full recovery scan, which is always safe).
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        if bytes.len() < 9 || &bytes[..4] != MAGIC || bytes[4] != VERSION {
            return None;
        }
        let crc = u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]);
        let body = &bytes[9..];
        if crc32c::crc32c(body) != crc {
            return None;
        }
        let mut r = Cursor::new(body);
        let n = r.u32()? as usize;
        if n > r.remaining() / 40 {
            return None;
        }
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
        (r.remaining() == 0).then_some(Self { segments, txns })
    }
}

/// A tiny bounds-checked big-endian reader for checkpoint files.
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.buf.split_first_chunk::<N>()?;
        self.buf = rest;
        Some(*head)
    }
    pub fn u8(&mut self) -> Option<u8> {
        self.take::<1>().map(|b| b[0])
    }
    pub fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_be_bytes)
    }
    pub fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_be_bytes)
    }
    pub fn i64(&mut self) -> Option<i64> {
        self.take().map(i64::from_be_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_any_damage() {
        let cp = CleanShutdown {
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
        assert_eq!(CleanShutdown::decode(&bytes), Some(cp));
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert_eq!(CleanShutdown::decode(&bad), None, "flip at {i}");
            assert_eq!(CleanShutdown::decode(&bytes[..i]), None, "cut at {i}");
        }
    }
}
