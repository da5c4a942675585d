//! The log's transaction index, derived from batch headers alone (like
//! Kafka's producer-state and `.txnindex`): which producers have an open
//! transaction in this partition and from which offset, and which completed
//! transactions were aborted. Every replica maintains it identically because
//! it is a pure function of the batches in the log.
//!
//! It knows nothing of the transaction coordinator; mk-txn decides
//! visibility from what this index reports.

use crate::checkpoint::CheckpointError;
use crate::codec::BatchHeader;
use crate::record::ControlType;
use mk_core::ByteReader;
use std::collections::BTreeMap;

/// A transaction that ended with an ABORT marker: records of `producer_id`
/// in `first_offset..=last_offset` are hidden from read_committed readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The offset of the ABORT marker.
    pub last_offset: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CompletedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    pub last_offset: i64,
    pub aborted: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TxnIndex {
    /// producer id -> first offset of its open transaction.
    open: BTreeMap<i64, i64>,
    /// Completed transactions in marker order (ascending `last_offset`).
    completed: Vec<CompletedTxn>,
}

impl TxnIndex {
    /// Feeds one appended batch, in log order.
    pub fn observe(&mut self, h: &BatchHeader) {
        if !h.transactional {
            return;
        }
        let pid = h.producer.producer_id;
        match h.control {
            None => {
                self.open.entry(pid).or_insert(h.base_offset);
            }
            Some(kind) => {
                // A marker for a producer with nothing open here (e.g. a
                // marker rewritten during recovery) completes nothing.
                if let Some(first_offset) = self.open.remove(&pid) {
                    self.completed.push(CompletedTxn {
                        producer_id: pid,
                        first_offset,
                        last_offset: h.base_offset,
                        aborted: kind == ControlType::Abort,
                    });
                }
            }
        }
    }

    /// The first offset of the earliest open transaction.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.open.values().copied().min()
    }

    pub fn open_transactions(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.open.iter().map(|(p, f)| (*p, *f))
    }

    /// Aborted transactions overlapping `[from, to)`.
    pub fn aborted_overlapping(&self, from: i64, to: i64) -> Vec<AbortedTxn> {
        let start = self.completed.partition_point(|c| c.last_offset < from);
        self.completed[start..]
            .iter()
            .filter(|c| c.aborted && c.first_offset < to)
            .map(|c| AbortedTxn {
                producer_id: c.producer_id,
                first_offset: c.first_offset,
                last_offset: c.last_offset,
            })
            .collect()
    }

    /// Undoes everything at or after `leo`: markers there are forgotten, so
    /// the transactions they completed become open again.
    pub fn truncate(&mut self, leo: i64) {
        self.open.retain(|_, first| *first < leo);
        while let Some(last) = self.completed.last().copied() {
            if last.last_offset < leo {
                break;
            }
            self.completed.pop();
            if last.first_offset < leo {
                self.open.insert(last.producer_id, last.first_offset);
            }
        }
    }

    /// Forgets the completed transactions whose markers (at `offsets`, in
    /// ascending order) compaction removed with all their records.
    pub fn forget_completed(&mut self, offsets: &[i64]) {
        if offsets.is_empty() {
            return;
        }
        self.completed
            .retain(|c| offsets.binary_search(&c.last_offset).is_err());
    }

    /// Forgets completed transactions that ended below `log_start`.
    pub fn prune_below(&mut self, log_start: i64) {
        let cut = self
            .completed
            .partition_point(|c| c.last_offset < log_start);
        self.completed.drain(..cut);
    }

    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&count_u32(self.open.len()).to_be_bytes());
        for (pid, first) in &self.open {
            out.extend_from_slice(&pid.to_be_bytes());
            out.extend_from_slice(&first.to_be_bytes());
        }
        out.extend_from_slice(&count_u32(self.completed.len()).to_be_bytes());
        for c in &self.completed {
            out.extend_from_slice(&c.producer_id.to_be_bytes());
            out.extend_from_slice(&c.first_offset.to_be_bytes());
            out.extend_from_slice(&c.last_offset.to_be_bytes());
            out.push(u8::from(c.aborted));
        }
    }

    /// Decodes what `encode_into` wrote (inside a checkpoint body).
    pub fn decode(r: &mut ByteReader<'_>) -> Result<Self, CheckpointError> {
        let mut idx = TxnIndex::default();
        let open = r.u32_count(16)?;
        for _ in 0..open {
            let producer_id = r.i64()?;
            if idx.open.insert(producer_id, r.i64()?).is_some() {
                return Err(CheckpointError::DuplicateOpenTransaction(producer_id));
            }
        }
        let completed = r.u32_count(25)?;
        idx.completed.reserve(completed);
        for _ in 0..completed {
            idx.completed.push(CompletedTxn {
                producer_id: r.i64()?,
                first_offset: r.i64()?,
                last_offset: r.i64()?,
                aborted: r.u8()? != 0,
            });
        }
        Ok(idx)
    }
}

/// A list length as the index's u32 count: one entry per producer or per
/// transaction kept in memory, far fewer than 2^32.
fn count_u32(n: usize) -> u32 {
    u32::try_from(n).expect("fewer than 2^32 transaction index entries")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::ProducerInfo;

    fn h(pid: i64, base: i64, control: Option<ControlType>) -> BatchHeader {
        BatchHeader {
            base_offset: base,
            leader_epoch: 0,
            producer: ProducerInfo {
                producer_id: pid,
                producer_epoch: 0,
                base_sequence: 0,
            },
            transactional: true,
            control,
            last_offset_delta: 0,
            record_count: u32::from(control.is_none()),
        }
    }

    #[test]
    fn tracks_open_and_aborted_ranges_and_undoes_truncation() {
        let mut idx = TxnIndex::default();
        idx.observe(&h(1, 0, None));
        idx.observe(&h(2, 1, None));
        idx.observe(&h(1, 2, None));
        assert_eq!(idx.first_unstable_offset(), Some(0));
        idx.observe(&h(1, 3, Some(ControlType::Abort)));
        assert_eq!(idx.first_unstable_offset(), Some(1));
        idx.observe(&h(2, 4, Some(ControlType::Commit)));
        assert_eq!(idx.first_unstable_offset(), None);
        assert_eq!(
            idx.aborted_overlapping(0, 10),
            vec![AbortedTxn {
                producer_id: 1,
                first_offset: 0,
                last_offset: 3
            }]
        );
        assert!(idx.aborted_overlapping(4, 10).is_empty());
        idx.truncate(4);
        assert_eq!(idx.first_unstable_offset(), Some(1), "commit marker undone");
        idx.truncate(1);
        assert_eq!(
            idx.first_unstable_offset(),
            Some(0),
            "abort marker undone, pid 2 gone"
        );
        let mut buf = Vec::new();
        idx.encode_into(&mut buf);
        let back = TxnIndex::decode(&mut ByteReader::new(&buf)).unwrap();
        assert_eq!(back, idx);
    }

    #[test]
    fn a_transaction_compaction_removed_is_what_the_remaining_batches_give() {
        // Transactions of pid 1 at 0..=1 (commit), pid 2 at 2..=3 (abort)
        // and pid 3 at 4..=5 (abort). Compaction removes the first two with
        // their markers: the index becomes the one built from the batches
        // left (the abort of pid 2 is no longer reported), and a truncation
        // below a removed marker reopens nothing.
        let mut idx = TxnIndex::default();
        for b in [
            h(1, 0, None),
            h(1, 1, Some(ControlType::Commit)),
            h(2, 2, None),
            h(2, 3, Some(ControlType::Abort)),
            h(3, 4, None),
            h(3, 5, Some(ControlType::Abort)),
        ] {
            idx.observe(&b);
        }
        idx.forget_completed(&[1, 3]);
        let mut rebuilt = TxnIndex::default();
        for b in [h(3, 4, None), h(3, 5, Some(ControlType::Abort))] {
            rebuilt.observe(&b);
        }
        assert_eq!(idx, rebuilt);
        assert_eq!(idx.aborted_overlapping(0, 10).len(), 1);
        idx.truncate(3);
        assert_eq!(idx.first_unstable_offset(), None);
    }
}
