//! Operator views of what the book teaches, for the console: one
//! partition's internals (segments, leader-epoch history, open
//! transactions), records as they are stored (control records, aborted and
//! not-yet-stable data marked), and the cluster at a glance (brokers,
//! partition health, disk, traffic). Read-only: nothing here changes state.

use crate::config::BrokerId;
use crate::error::{ClusterError, Result};
use crate::health::DiskFull;
use crate::stats::{ClusterStats, OperatorViews};
use crate::topics::PartitionInfo;
use crate::traffic::Traffic;
use bytes::Bytes;
use mk_core::TopicPartition;
use mk_log::{ControlType, Header, PartitionLog, SegmentInfo, StoredBatch};
use mk_replication::EpochEntry;

/// The most records one `browse` answers.
pub const MAX_BROWSE_RECORDS: usize = 500;

/// One partition's internals beyond `PartitionInfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInternals {
    pub info: PartitionInfo,
    /// The leader's segments, oldest first; the last is the active one.
    /// Empty for a damaged partition.
    pub segments: Vec<SegmentInfo>,
    /// The leader's epoch history (the leader-epoch checkpoint): each
    /// epoch and the first offset written in it, oldest first.
    pub epochs: Vec<EpochEntry>,
    /// `(producer id, first offset)` of every transaction with data here
    /// and no marker yet; the earliest first offset is the LSO.
    pub open_transactions: Vec<(i64, i64)>,
}

/// Where `browse` starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrowseFrom {
    /// This offset, moved into `[log start, high watermark]`.
    Offset(i64),
    /// The first record whose timestamp is at or after this (the high
    /// watermark if there is none).
    Timestamp(i64),
}

/// One stored record as an operator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowsedRecord {
    pub offset: i64,
    pub timestamp_ms: i64,
    pub key: Option<Bytes>,
    /// `None` is a tombstone.
    pub value: Option<Bytes>,
    pub headers: Vec<Header>,
    /// Set for a transaction marker (a control record), which consumers
    /// never see.
    pub control: Option<ControlType>,
    pub producer_id: i64,
    pub producer_epoch: i32,
    pub transactional: bool,
    /// Data of a transaction that ended with ABORT: read_committed
    /// consumers skip it.
    pub aborted: bool,
    /// At or past the last stable offset: read_committed consumers do not
    /// see it yet.
    pub beyond_lso: bool,
    /// The leader epoch the batch was written in.
    pub leader_epoch: i32,
}

/// The answer of `browse`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowsedRecords {
    /// Where reading started (after moving the request into range).
    pub start_offset: i64,
    pub records: Vec<BrowsedRecord>,
    /// Where the next page starts.
    pub next_offset: i64,
    pub log_start_offset: i64,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_end_offset: i64,
}

/// Whether clients can use a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionHealth {
    /// Its leader serves.
    Online,
    /// Its leader's broker is offline and no in-sync replica took over.
    Offline,
    /// Damage took it offline (`health.rs`).
    Damaged,
}

impl PartitionHealth {
    pub const fn as_str(self) -> &'static str {
        match self {
            PartitionHealth::Online => "online",
            PartitionHealth::Offline => "offline",
            PartitionHealth::Damaged => "damaged",
        }
    }
}

impl PartitionInfo {
    /// The replica count the partition is meant to have: during a move,
    /// the replica set without the replicas the move adds (Kafka's
    /// replication factor of a partition under reassignment).
    pub fn replication_factor(&self) -> usize {
        self.replicas
            .iter()
            .filter(|b| !self.adding_replicas.contains(b))
            .count()
    }

    /// Fewer replicas in sync than the replication factor (so the adding
    /// replicas of a move, still catching up, do not count; Kafka's rule).
    pub fn is_under_replicated(&self) -> bool {
        self.damaged.is_none() && self.isr.len() < self.replication_factor()
    }
}

/// How many partitions are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartitionCounts {
    pub total: usize,
    pub online: usize,
    pub offline: usize,
    pub damaged: usize,
    /// Counted among the online and offline ones too.
    pub under_replicated: usize,
}

/// The file system of the data directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskSpace {
    pub total_bytes: u64,
    /// What an unprivileged writer may still use.
    pub available_bytes: u64,
}

/// The cluster at a glance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterOverview {
    pub cluster_id: String,
    pub stats: ClusterStats,
    /// Every hosted broker and whether it is online, ascending.
    pub brokers: Vec<(BrokerId, bool)>,
    pub partitions: PartitionCounts,
    /// `None` when the file system cannot be asked.
    pub disk: Option<DiskSpace>,
    pub disk_full: Option<DiskFull>,
    /// Damaged partitions and why.
    pub damaged: Vec<(TopicPartition, String)>,
    pub traffic: Traffic,
}

impl OperatorViews<'_> {
    /// The internals of one partition (what is known of a damaged one).
    pub fn partition_internals(self, tp: &TopicPartition) -> Result<PartitionInternals> {
        let info = self.cluster.topics().describe_partition(tp)?;
        if info.damaged.is_some() {
            return Ok(PartitionInternals {
                info,
                segments: Vec::new(),
                epochs: Vec::new(),
                open_transactions: Vec::new(),
            });
        }
        self.cluster.read_partition(tp, |set| {
            let log = set.leader_log();
            Ok(PartitionInternals {
                segments: log.segments(),
                epochs: set.epoch_entries(set.leader_id())?,
                open_transactions: log.open_transactions(),
                info: crate::topics::partition_info(set),
            })
        })
    }

    /// Up to `max_records` (at most `MAX_BROWSE_RECORDS`) committed records
    /// (below the high watermark) from `from`, markers and aborted data
    /// included and marked, within the cluster's `fetch_max_bytes` (at
    /// least one batch).
    pub fn browse(
        self,
        tp: &TopicPartition,
        from: BrowseFrom,
        max_records: usize,
    ) -> Result<BrowsedRecords> {
        let max = max_records.min(MAX_BROWSE_RECORDS);
        let byte_limit = usize::try_from(self.cluster.config.fetch_max_bytes).unwrap_or(usize::MAX);
        self.cluster.read_partition(tp, |set| {
            let log = set.leader_log();
            let hw = set.high_watermark();
            let lso = mk_txn::last_stable_offset(hw, log.first_unstable_offset());
            let log_start = log.log_start_offset();
            let start = match from {
                BrowseFrom::Offset(o) => o.clamp(log_start, hw.max(log_start)),
                BrowseFrom::Timestamp(ts) => log
                    .offset_for_timestamp(ts)?
                    .filter(|o| *o < hw)
                    .unwrap_or(hw),
            };
            let (records, next_offset) =
                read_marked(log, start, Bounds { hw, lso }, max, byte_limit)?;
            Ok(BrowsedRecords {
                start_offset: start,
                records,
                next_offset,
                log_start_offset: log_start,
                high_watermark: hw,
                last_stable_offset: lso,
                log_end_offset: log.leo(),
            })
        })
    }

    /// Whether clients can use the partition `info` describes, now.
    pub fn health_of(self, info: &PartitionInfo) -> PartitionHealth {
        if info.damaged.is_some() {
            PartitionHealth::Damaged
        } else if self.cluster.brokers().is_online(info.leader_id) {
            PartitionHealth::Online
        } else {
            PartitionHealth::Offline
        }
    }

    /// The cluster at a glance.
    pub fn overview(self) -> Result<ClusterOverview> {
        let stats = self.stats()?;
        let mut partitions = PartitionCounts::default();
        for info in self.cluster.topics().describe_partitions()? {
            partitions.total += 1;
            match self.health_of(&info) {
                PartitionHealth::Online => partitions.online += 1,
                PartitionHealth::Offline => partitions.offline += 1,
                PartitionHealth::Damaged => partitions.damaged += 1,
            }
            partitions.under_replicated += usize::from(info.is_under_replicated());
        }
        let online = self.cluster.brokers().online();
        let health = self.cluster.lifecycle().health();
        Ok(ClusterOverview {
            cluster_id: self.cluster.cluster_id(),
            stats,
            brokers: self
                .cluster
                .config
                .broker_ids
                .iter()
                .map(|b| (*b, online.contains(b)))
                .collect(),
            partitions,
            disk: disk_space(&self.cluster.config.data_dir),
            disk_full: health.disk_full,
            damaged: health.damaged,
            traffic: self.traffic(),
        })
    }

    /// Records produced and fetched by clients since the start, over every
    /// partition.
    pub fn traffic(self) -> Traffic {
        let mut total = Traffic::default();
        for slot in self.cluster.all_slots() {
            total += slot.traffic.snapshot();
        }
        total
    }

    /// One partition's traffic since the start.
    pub fn partition_traffic(self, tp: &TopicPartition) -> Result<Traffic> {
        Ok(self.cluster.slot(tp)?.traffic.snapshot())
    }
}

/// The ends of what `read_marked` may read and what is stable.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    hw: i64,
    lso: i64,
}

/// Records from `start` below the high watermark, marked; and where the
/// next read starts.
fn read_marked(
    log: &PartitionLog,
    start: i64,
    bounds: Bounds,
    max: usize,
    byte_limit: usize,
) -> Result<(Vec<BrowsedRecord>, i64)> {
    let mut out = Vec::new();
    let mut next = start;
    let mut bytes = 0usize;
    while next < bounds.hw && out.len() < max && bytes < byte_limit {
        let stored = log.read_batches(next, byte_limit - bytes, Some(bounds.hw))?;
        let (Some(first), Some(last)) = (stored.first(), stored.last()) else {
            break;
        };
        let aborted = log.aborted_transactions(first.base_offset(), last.next_offset());
        for batch in &stored {
            bytes += batch.size();
            let is_aborted = mk_txn::is_batch_aborted(&batch.header, &aborted);
            for record in marked_records(batch, is_aborted, bounds.lso)? {
                if record.offset < start {
                    continue;
                }
                if out.len() == max {
                    return Ok((out, record.offset));
                }
                out.push(record);
            }
            next = batch.next_offset();
        }
    }
    Ok((out, next.max(start)))
}

/// The records of one stored batch, marked.
/// A marker batch stores no record (MKB1 keeps only its kind) but takes
/// one offset: it is shown as one control record there.
fn marked_records(batch: &StoredBatch, aborted: bool, lso: i64) -> Result<Vec<BrowsedRecord>> {
    let h = &batch.header;
    let decoded = batch.decode().map_err(ClusterError::from)?;
    let marked = |offset: i64, r: Option<&mk_log::Record>| BrowsedRecord {
        offset,
        timestamp_ms: r.map_or_else(|| decoded.max_timestamp_ms(), |r| r.timestamp_ms),
        key: r.and_then(|r| r.key.clone()),
        value: r.and_then(|r| r.value.clone()),
        headers: r.map(|r| r.headers.clone()).unwrap_or_default(),
        control: h.control,
        producer_id: h.producer.producer_id,
        producer_epoch: h.producer.producer_epoch,
        transactional: h.transactional,
        aborted,
        beyond_lso: offset >= lso,
        leader_epoch: h.leader_epoch,
    };
    if h.control.is_some() && decoded.records().is_empty() {
        return Ok(vec![marked(h.base_offset, None)]);
    }
    Ok(decoded
        .records_with_offsets()
        .map(|(offset, r)| marked(offset, Some(r)))
        .collect())
}

/// The size and free space of the file system holding `dir`.
pub(crate) fn disk_space(dir: &std::path::Path) -> Option<DiskSpace> {
    let s = rustix::fs::statvfs(dir).ok()?;
    Some(DiskSpace {
        total_bytes: s.f_blocks.saturating_mul(s.f_frsize),
        available_bytes: s.f_bavail.saturating_mul(s.f_frsize),
    })
}
