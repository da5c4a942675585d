//! How many records clients produced to and fetched from each partition
//! since the broker started: plain counters the data path bumps once per
//! answer, from which the console draws produce and fetch rates. They
//! count what clients asked for and got (replication and the group and
//! transaction stores are not clients); they are not persisted.

use std::sync::atomic::{AtomicU64, Ordering};

/// The counters of one partition.
#[derive(Debug, Default)]
pub(crate) struct PartitionTraffic {
    produced_records: AtomicU64,
    fetched_records: AtomicU64,
    fetched_bytes: AtomicU64,
}

impl PartitionTraffic {
    /// `records` were appended for a client.
    pub fn produced(&self, records: u64) {
        self.produced_records.fetch_add(records, Ordering::Relaxed);
    }

    /// A fetch answer carried `records` records in `bytes` bytes.
    pub fn fetched(&self, records: u64, bytes: u64) {
        self.fetched_records.fetch_add(records, Ordering::Relaxed);
        self.fetched_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Traffic {
        Traffic {
            produced_records: self.produced_records.load(Ordering::Relaxed),
            fetched_records: self.fetched_records.load(Ordering::Relaxed),
            fetched_bytes: self.fetched_bytes.load(Ordering::Relaxed),
        }
    }
}

/// Records produced and fetched since the broker started (totals; a
/// reader derives rates from two snapshots). A deleted topic's counts
/// leave the totals with it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    pub produced_records: u64,
    pub fetched_records: u64,
    /// Stored bytes of the batches (Kafka fetches) or the records' key,
    /// value and header bytes (JSON-TCP fetches) that fetch answers carried.
    pub fetched_bytes: u64,
}

impl std::ops::AddAssign for Traffic {
    fn add_assign(&mut self, other: Traffic) {
        self.produced_records += other.produced_records;
        self.fetched_records += other.fetched_records;
        self.fetched_bytes += other.fetched_bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add_up_and_snapshots_sum() {
        let t = PartitionTraffic::default();
        t.produced(3);
        t.produced(2);
        t.fetched(4, 100);
        let s = t.snapshot();
        assert_eq!(
            s,
            Traffic {
                produced_records: 5,
                fetched_records: 4,
                fetched_bytes: 100
            }
        );
        let mut total = s;
        total += s;
        assert_eq!(total.produced_records, 10);
        assert_eq!(total.fetched_bytes, 200);
    }
}
