//! KIP-932 share groups as the core serves them (the groups role): the
//! heartbeat, describe and offset admin of mk-group's `share` machines, and
//! ShareFetch, which takes the data path in the middle: mk-group decides
//! where each partition is read from, the data path reads whole batches
//! (up to the high watermark, or the last stable offset for
//! `share.isolation.level=read_committed`, where aborted transactions'
//! batches count as undeliverable, as do markers and batches compaction
//! emptied), and mk-group acquires what it read.

use crate::config::BrokerId;
use crate::data::FetchedBatch;
use crate::error::{ClusterError, Result};
use crate::groups::Groups;
use mk_core::TopicPartition;
use mk_group::share::{AcquiredRange, FetchedSpan, PartitionRead, ShareBounds, ShareFetchRequest};
use mk_group::{
    ShareAutoOffsetReset, ShareGroupDescription, ShareHeartbeat, ShareHeartbeatAnswer,
    ShareIsolation,
};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

/// What a ShareFetch may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareFetchLimits {
    /// How long to wait for records when none can be acquired at once.
    pub max_wait: Duration,
    /// Most records acquired by the whole request.
    pub max_records: usize,
    /// Most batch bytes read per partition (one batch always goes out).
    pub max_bytes: usize,
    /// The broker the request was addressed to: partitions it does not
    /// lead cannot be read there.
    pub broker: Option<BrokerId>,
}

/// One partition's part of a ShareFetch answer.
#[derive(Debug)]
pub struct ShareFetchPartition {
    pub tp: TopicPartition,
    pub error: Option<ClusterError>,
    /// The batches holding the acquired records (a batch may hold records
    /// that were not acquired; the client keeps only the acquired ones).
    pub batches: Vec<FetchedBatch>,
    pub acquired: Vec<AcquiredRange>,
}

/// A ShareFetch's answer.
#[derive(Debug)]
pub struct ShareFetchAnswer {
    /// Each acknowledged partition's outcome.
    pub acks: Vec<(TopicPartition, Result<()>)>,
    pub partitions: Vec<ShareFetchPartition>,
    /// How long the member holds what it acquired.
    pub lock_duration_ms: i32,
}

/// What the data path read of one partition: spans for mk-group, decoded
/// deliverable batches for the answer.
struct Read {
    read: PartitionRead,
    batches: Vec<mk_log::StoredBatch>,
}

impl Groups<'_> {
    /// ShareGroupHeartbeat (see `GroupCoordinator::share_heartbeat`).
    pub fn share_heartbeat(self, hb: ShareHeartbeat) -> Result<ShareHeartbeatAnswer> {
        self.with_groups(|g, meta| g.share_heartbeat(hb, meta))
    }

    /// ShareGroupDescribe: `None` when no share group has the id.
    pub fn describe_share(self, group: &str) -> Result<Option<ShareGroupDescription>> {
        self.with_groups(|g, _| Ok(g.describe_share_group(group)))
    }

    /// ShareAcknowledge: each partition's outcome.
    pub fn share_acknowledge(
        self,
        req: &ShareFetchRequest,
    ) -> Result<Vec<(TopicPartition, Result<()>)>> {
        let answers = self.with_groups(|g, _| g.share_acknowledge(req))?;
        Ok(answers
            .into_iter()
            .map(|(tp, r)| (tp, r.map_err(ClusterError::from)))
            .collect())
    }

    /// DescribeShareGroupOffsets: each partition's start offset (`None`
    /// without state; every partition with state when `partitions` is
    /// `None`).
    pub fn describe_share_offsets(
        self,
        group: &str,
        partitions: Option<&[TopicPartition]>,
    ) -> Result<Vec<(TopicPartition, Option<i64>)>> {
        self.with_groups(|g, _| g.describe_share_offsets(group, partitions))
    }

    /// AlterShareGroupOffsets; unknown partitions are refused per partition.
    pub fn alter_share_offsets(
        self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> Result<Vec<(TopicPartition, Result<()>)>> {
        let counts = self.cluster.partition_counts();
        let (known, unknown): (BTreeMap<_, _>, BTreeMap<_, _>) = offsets
            .iter()
            .map(|(tp, o)| (tp.clone(), *o))
            .partition(|(tp, _)| counts.get(&tp.topic).is_some_and(|n| tp.partition < *n));
        let answers = self.with_groups(|g, _| g.alter_share_offsets(group, &known))?;
        let mut out: Vec<(TopicPartition, Result<()>)> = answers
            .into_iter()
            .map(|(tp, r)| (tp, r.map_err(ClusterError::from)))
            .collect();
        out.extend(unknown.into_keys().map(|tp| {
            let e = ClusterError::UnknownPartition {
                partitions: counts.get(&tp.topic).copied().unwrap_or(0),
                partition: tp.clone(),
            };
            (tp, Err(e))
        }));
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// DeleteShareGroupOffsets: per topic, whether the group had state.
    pub fn delete_share_offsets(
        self,
        group: &str,
        topics: &[String],
    ) -> Result<Vec<(String, bool)>> {
        self.with_groups(|g, _| g.delete_share_offsets(group, topics))
    }

    /// ShareFetch: the session and acknowledgements, then records acquired
    /// for the member; when none can be acquired at once, it waits up to
    /// `max_wait` for records to arrive in its partitions.
    pub async fn share_fetch(
        self,
        req: &ShareFetchRequest,
        limits: ShareFetchLimits,
    ) -> Result<ShareFetchAnswer> {
        let (group, member) = (req.group_id.as_str(), req.member_id.as_str());
        let preview = self.with_groups(|g, _| Ok(g.share_session_preview(req)))?;
        let (isolation, reset) = self
            .with_groups(|g, _| Ok((g.share_isolation(group), g.share_auto_offset_reset(group))))?;
        let bounds = self.share_bounds(&preview, isolation, reset);
        let plan = self.with_groups(|g, _| g.share_fetch_plan(req, &bounds))?;
        let mut answer = ShareFetchAnswer {
            acks: plan
                .acks
                .into_iter()
                .map(|(tp, r)| (tp, r.map_err(ClusterError::from)))
                .collect(),
            partitions: plan
                .errors
                .into_iter()
                .map(|(tp, e)| ShareFetchPartition {
                    tp,
                    error: Some(e.into()),
                    batches: Vec::new(),
                    acquired: Vec::new(),
                })
                .collect(),
            lock_duration_ms: plan.lock_duration_ms,
        };
        if plan.closed {
            return Ok(answer);
        }
        let deadline = tokio::time::Instant::now() + limits.max_wait;
        let mut reads = plan.reads;
        let slots: Vec<_> = preview
            .iter()
            .filter_map(|tp| self.cluster.slot(tp).ok())
            .collect();
        loop {
            // Listen before reading, so records that arrive between the read
            // and the wait are not missed.
            let mut waits: Vec<_> = slots
                .iter()
                .map(|s| Box::pin(s.hw_moved.notified()))
                .collect();
            for w in &mut waits {
                w.as_mut().enable();
            }
            let acquired = self.acquire_reads(group, member, &reads, isolation, limits)?;
            if !acquired.is_empty() || tokio::time::Instant::now() >= deadline || preview.is_empty()
            {
                answer.partitions.extend(acquired);
                return Ok(answer);
            }
            if !self.wait_for_records(waits, deadline).await {
                return Ok(answer);
            }
            let bounds = self.share_bounds(&preview, isolation, reset);
            reads = self
                .with_groups(|g, _| g.share_fetch_reads(group, member, &bounds))?
                .0;
        }
    }

    /// The bounds of each partition that exists: log start, fetchable end
    /// and, for a group that resets by duration, the first offset at most
    /// that old by the cluster clock (the time index's answer).
    fn share_bounds(
        self,
        partitions: &[TopicPartition],
        isolation: ShareIsolation,
        reset: ShareAutoOffsetReset,
    ) -> BTreeMap<TopicPartition, ShareBounds> {
        let data = self.cluster.data();
        let since = match reset {
            ShareAutoOffsetReset::ByDuration { ms } => {
                Some(self.cluster.clock.now_ms().saturating_sub(ms))
            }
            _ => None,
        };
        partitions
            .iter()
            .filter_map(|tp| {
                let start = data.log_start_offset(tp).ok()?;
                let end = match isolation {
                    ShareIsolation::ReadUncommitted => data.visible_end(tp).ok()?,
                    ShareIsolation::ReadCommitted => data.last_stable_offset(tp).ok()?,
                };
                let by_time = since.and_then(|ts| data.offset_for_timestamp(tp, ts).ok()?);
                let bounds = ShareBounds {
                    by_time,
                    ..ShareBounds::new(start, end)
                };
                Some((tp.clone(), bounds))
            })
            .collect()
    }

    /// Reads every planned partition and acquires what was read.
    fn acquire_reads(
        self,
        group: &str,
        member: &str,
        reads: &[(TopicPartition, i64)],
        isolation: ShareIsolation,
        limits: ShareFetchLimits,
    ) -> Result<Vec<ShareFetchPartition>> {
        let mut done = Vec::new();
        let mut out = Vec::new();
        for (tp, from) in reads {
            match self.read_share_partition(tp, *from, isolation, limits) {
                Ok(r) => done.push(r),
                Err(e) => out.push(ShareFetchPartition {
                    tp: tp.clone(),
                    error: Some(e),
                    batches: Vec::new(),
                    acquired: Vec::new(),
                }),
            }
        }
        let spans: Vec<PartitionRead> = done.iter().map(|r| r.read.clone()).collect();
        let fetched = self
            .with_groups(|g, _| g.share_fetch_acquire(group, member, &spans, limits.max_records))?;
        for f in fetched {
            let Some(read) = done.iter_mut().find(|r| r.read.partition == f.partition) else {
                continue;
            };
            // Outside the partition lock: a producer's batch is only sliced,
            // never decoded (see `FetchedBatch`).
            let batches = std::mem::take(&mut read.batches)
                .iter()
                .filter(|b| overlaps(b, &f.acquired))
                .map(FetchedBatch::of)
                .collect::<Result<Vec<_>>>();
            let (batches, error) = match batches {
                Ok(b) => (b, None),
                Err(e) => (Vec::new(), Some(e)),
            };
            out.push(ShareFetchPartition {
                tp: f.partition,
                error,
                batches,
                acquired: f.acquired,
            });
        }
        Ok(out)
    }

    /// Whole batches of `tp` from `from`, up to `limits.max_bytes` (one at
    /// least), below the high watermark or the last stable offset.
    fn read_share_partition(
        self,
        tp: &TopicPartition,
        from: i64,
        isolation: ShareIsolation,
        limits: ShareFetchLimits,
    ) -> Result<Read> {
        if let Some(b) = limits.broker {
            self.cluster.brokers().check_leader(tp, b)?;
        }
        let slot = self.cluster.slot(tp)?;
        // Under the partition lock the frames are only located; their CRCs
        // are checked after it (damage takes the partition offline as a
        // checked read under the lock would).
        let (read, skipped) = self.cluster.read_slot(&slot, |set| {
            let log = set.leader_log();
            let hw = set.high_watermark();
            let bound = match isolation {
                ShareIsolation::ReadUncommitted => hw,
                ShareIsolation::ReadCommitted => {
                    mk_txn::last_stable_offset(hw, log.first_unstable_offset())
                }
            };
            let from = from.max(log.log_start_offset());
            let stored = if from < bound {
                log.locate_batches(from, limits.max_bytes.max(1), Some(bound))?
            } else {
                Vec::new()
            };
            let aborted = match (isolation, stored.first(), stored.last()) {
                (ShareIsolation::ReadCommitted, Some(first), Some(last)) => {
                    log.aborted_transactions(first.base_offset(), last.next_offset())
                }
                _ => Vec::new(),
            };
            let mut read = Read {
                read: PartitionRead {
                    partition: tp.clone(),
                    spans: Vec::new(),
                    read_end: from,
                },
                batches: Vec::new(),
            };
            let mut skipped = Vec::new();
            for b in stored {
                // Markers, aborted data and a batch compaction emptied
                // (a producer's last batch kept without records) hold no
                // record to hand out: their offsets are archived at once.
                let deliverable = b.header.control.is_none()
                    && b.header.record_count > 0
                    && !mk_txn::is_batch_aborted(&b.header, &aborted);
                read.read.spans.push(FetchedSpan {
                    first: b.base_offset(),
                    last: b.header.last_offset(),
                    deliverable,
                });
                read.read.read_end = b.next_offset();
                if deliverable {
                    read.batches.push(b);
                } else {
                    skipped.push(b);
                }
            }
            Ok((read, skipped))
        })?;
        // A share consumer's read checks each frame's CRC once, as a
        // consumer's fetch does (`StoredBatch::check_once`).
        for b in read.batches.iter().chain(&skipped) {
            self.cluster.settle(
                &slot,
                crate::health::Access::Read,
                b.check_once().map_err(ClusterError::from),
            )?;
        }
        Ok(read)
    }

    /// Waits until one of `waits` fires, the deadline passes or the broker
    /// shuts down; false unless a partition moved.
    async fn wait_for_records(
        self,
        mut waits: Vec<Pin<Box<tokio::sync::futures::Notified<'_>>>>,
        deadline: tokio::time::Instant,
    ) -> bool {
        let any_moved = std::future::poll_fn(|cx| {
            for w in waits.iter_mut() {
                if w.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(());
                }
            }
            Poll::Pending
        });
        tokio::select! {
            _ = any_moved => true,
            _ = tokio::time::sleep_until(deadline) => false,
            _ = self.cluster.shutdown.cancelled() => false,
        }
    }
}

/// True when batch `b` holds an offset of `ranges`.
fn overlaps(b: &mk_log::StoredBatch, ranges: &[AcquiredRange]) -> bool {
    let (first, next) = (b.base_offset(), b.next_offset());
    ranges.iter().any(|r| r.first < next && first <= r.last)
}
