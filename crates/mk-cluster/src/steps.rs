//! The explicit steps of a broker (spec 00 "Determinism and stepping"):
//! replication, failure injection, flush cycles, retention, compaction.
//! The server drives the same steps from timers; no behavior exists only
//! in a background loop.

use crate::cluster::BrokerCluster;
use crate::config::BrokerId;
use crate::error::{ClusterError, Result};
use crate::health::Access;
use crate::slot::{PartitionSlot, Unflushed};
use mk_core::TopicPartition;
use mk_log::RetentionPolicy;
use mk_replication::LeaderAndEpoch;
use std::collections::BTreeMap;

/// The explicit steps of a broker: `cluster.steps().replicate_all_once()`.
#[derive(Debug, Clone, Copy)]
pub struct Steps<'a> {
    pub(crate) cluster: &'a BrokerCluster,
}

impl BrokerCluster {
    /// The steps role (see [`Steps`]).
    pub fn steps(&self) -> Steps<'_> {
        Steps { cluster: self }
    }
}

/// What a compaction step did on one topic (summed over its partitions'
/// leaders).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactionSummary {
    pub records_before: u64,
    pub records_after: u64,
}

impl Steps<'_> {
    /// Every follower of every partition pulls once from its leader; ISR and
    /// HW are recomputed and `acks=all` waiters settle.
    pub fn replicate_all_once(self) -> Result<()> {
        self.cluster.check_running()?;
        // One partition's failure (a full disk, damage) must not stop the
        // others; the first error is reported after all were tried.
        let mut first_error = None;
        for slot in self.cluster.healthy_slots() {
            if !slot.is_replicated() {
                continue;
            }
            let r = self.replicate_slot(&slot);
            slot.hw_moved.notify_waiters();
            // A move whose adding replicas just got in sync completes now.
            let r = match r {
                Ok(true) => self.cluster.reassignments().complete_if_ready(&slot),
                other => other.map(|_| ()),
            };
            if let Err(e) = r {
                self.cluster.check_running()?;
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// One replication step of one partition; true when a reassignment is
    /// ready to complete. The frames the followers copy are located under
    /// the partition lock and appended under it, and checked between the
    /// two without it (CRCs, version 1 records), as a Kafka fetch is;
    /// damage takes the partition offline as a checked read does.
    fn replicate_slot(self, slot: &PartitionSlot) -> Result<bool> {
        let copies = self
            .cluster
            .with_slot(slot, |set| Ok(set.locate_follower_copies()?))?;
        let checked = copies
            .into_iter()
            .map(|c| {
                let checked = c.check().map_err(ClusterError::from);
                self.cluster.settle(slot, Access::Read, checked)
            })
            .collect::<Result<Vec<_>>>()?;
        self.cluster.with_slot(slot, |set| {
            set.apply_follower_copies(checked)?;
            Ok(set.reassignment_ready())
        })
    }

    /// Recomputes the ISR of every partition by the time rule without
    /// fetching (the server's ISR refresh tick).
    pub fn refresh_isr(self) -> Result<()> {
        self.cluster.check_running()?;
        for slot in self.cluster.healthy_slots() {
            let ready = self.cluster.with_slot(&slot, |set| {
                set.refresh_isr();
                Ok(set.reassignment_ready())
            })?;
            slot.hw_moved.notify_waiters();
            if ready {
                self.cluster.reassignments().complete_if_ready(&slot)?;
            }
        }
        Ok(())
    }

    /// Promotes an in-sync replica to leader (epoch + 1, persisted in the
    /// metadata before the new leadership is used).
    pub fn promote(self, tp: &TopicPartition, broker: BrokerId) -> Result<LeaderAndEpoch> {
        self.elect(tp, broker, false)
    }

    /// Unclean election: `broker` leads in epoch + 1 though it may be out
    /// of the ISR; records above its LEO are lost (mk-replication's
    /// `promote_unclean`). Persisted as `promote` is. The caller checks
    /// that the topic (or an ElectLeaders UNCLEAN request) allows it.
    pub fn promote_unclean(self, tp: &TopicPartition, broker: BrokerId) -> Result<LeaderAndEpoch> {
        self.elect(tp, broker, true)
    }

    fn elect(self, tp: &TopicPartition, broker: BrokerId, unclean: bool) -> Result<LeaderAndEpoch> {
        self.cluster.check_running()?;
        let slot = self.cluster.slot(tp)?;
        let result = self.cluster.with_slot(&slot, |set| {
            let le = if unclean {
                set.promote_unclean(broker)?
            } else {
                set.promote(broker)?
            };
            // Persisting under the partition lock keeps appends of the new
            // epoch from racing ahead of the metadata.
            self.cluster
                .store(&self.cluster.metadata, "metadata store")?
                .set_leader(&tp.topic, tp.partition, le.leader_id, le.leader_epoch)?;
            Ok(le)
        });
        slot.hw_moved.notify_waiters();
        result
    }

    /// A former leader or lagging replica becomes a follower of the current
    /// epoch; its next fetch reconciles it.
    pub fn rejoin(self, tp: &TopicPartition, broker: BrokerId) -> Result<()> {
        self.cluster
            .with_partition(tp, |set| Ok(set.rejoin(broker)?))
    }

    /// Failure injection: removes a follower from the ISR.
    pub fn remove_from_isr(self, tp: &TopicPartition, broker: BrokerId) -> Result<()> {
        let slot = self.cluster.slot(tp)?;
        let r = self
            .cluster
            .with_slot(&slot, |set| Ok(set.remove_from_isr(broker)?));
        slot.hw_moved.notify_waiters();
        r
    }

    /// Closes the active segment of every replica of the partition.
    pub fn roll(self, tp: &TopicPartition) -> Result<()> {
        self.cluster.with_partition(tp, |set| Ok(set.roll()?))
    }

    /// Fsyncs every log, index and store and writes the HW, epoch and
    /// producer-state checkpoints. A failure (real or injected) makes the
    /// cluster terminally FAILED.
    pub fn run_flush_cycle(self) -> Result<()> {
        self.cluster.check_running()?;
        // Every partition is fsynced even if another one's checkpoint could
        // not be written (a full disk): durability must not wait for space.
        let mut first_error = None;
        for slot in self.cluster.healthy_slots() {
            let planned_at = self.cluster.clock.now_ms();
            match self.flush_slot(&slot) {
                Ok(()) => {
                    *slot.unflushed() = Unflushed::synced(planned_at);
                }
                // Deleted while the fsyncs ran: nothing left to flush.
                Err(ClusterError::TopicDeleted { .. }) if !slot.has_set() => {}
                Err(e) => {
                    self.cluster.check_running()?;
                    first_error.get_or_insert(e);
                }
            }
        }
        let mut groups = self.cluster.group_coordinator()?;
        let g = groups.as_mut().ok_or(ClusterError::Closed)?;
        let flushed = self.cluster.guard(g.flush());
        drop(groups);
        match first_error {
            Some(e) => Err(e),
            None => flushed,
        }
    }

    /// One partition's checkpoint in the three steps of mk-replication's
    /// `flush.rs`: planned under the partition lock, fsynced without it (so
    /// appends and fetches of the partition go on while the disk works),
    /// finished under it. Appends that land while the fsyncs run are synced
    /// by the next cycle.
    fn flush_slot(self, slot: &PartitionSlot) -> Result<()> {
        let _files = slot.hold_files();
        let plan = self
            .cluster
            .with_slot(slot, |set| Ok(set.plan_checkpoint()?))?;
        // The fsyncs run without the lock; a failed invariant there fails
        // this partition only, like one under the lock.
        let synced = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| plan.sync()))
            .map_err(|panic| {
                slot.mark_failed(&format!(
                    "an invariant failed while it was flushed: {}",
                    crate::slot::panic_text(panic.as_ref())
                ))
            })?;
        self.cluster
            .with_slot(slot, |set| Ok(set.finish_checkpoint(synced)?))
    }

    /// Applies retention to one topic: with `overrides`, those limits; else
    /// the topic's own `retention.ms` / `retention.bytes` (only for
    /// `cleanup.policy=delete`). Returns the deleted segment bases per
    /// partition (leaders).
    pub fn apply_retention(
        self,
        topic: &str,
        overrides: Option<RetentionPolicy>,
    ) -> Result<BTreeMap<u32, Vec<i64>>> {
        self.cluster.check_running()?;
        let t = self.cluster.topic(topic)?;
        let policy = match overrides {
            Some(p) => p,
            None if t.meta.config.cleanup_policy.deletes() => RetentionPolicy {
                retention_ms: t.meta.config.retention_ms,
                retention_bytes: t.meta.config.retention_bytes,
            },
            None => return Ok(BTreeMap::new()),
        };
        let now = self.cluster.clock.now_ms();
        let mut out = BTreeMap::new();
        for slot in t.partitions.iter().filter(|s| s.damage().is_none()) {
            let deleted = self
                .cluster
                .with_slot(slot, |set| Ok(set.apply_retention(now, policy)?))?;
            out.insert(slot.tp.partition, deleted);
        }
        Ok(out)
    }

    /// Applies every delete-policy topic's retention.
    pub fn apply_retention_all(self) -> Result<BTreeMap<TopicPartition, Vec<i64>>> {
        let mut out = BTreeMap::new();
        for topic in self.cluster.topics().list()? {
            for (p, deleted) in self.apply_retention(&topic, None)? {
                if !deleted.is_empty() {
                    out.insert(TopicPartition::new(&topic, p), deleted);
                }
            }
        }
        Ok(out)
    }

    /// Compacts one topic's replicas now (closed segments below the HW,
    /// within the topic's `min.compaction.lag.ms`, whatever their dirty
    /// ratio), with the topic's `delete.retention.ms` unless overridden.
    /// Counts are the leaders'.
    pub fn compact(
        self,
        topic: &str,
        delete_retention_ms: Option<i64>,
    ) -> Result<CompactionSummary> {
        self.compact_topic(topic, delete_retention_ms, false)
    }

    /// One topic's compaction: every replica, or (`only_due`) those the
    /// cleaner finds due by the topic's dirty ratio and compaction lags.
    fn compact_topic(
        self,
        topic: &str,
        delete_retention_ms: Option<i64>,
        only_due: bool,
    ) -> Result<CompactionSummary> {
        self.cluster.check_running()?;
        let t = self.cluster.topic(topic)?;
        let grace = delete_retention_ms.unwrap_or(t.meta.config.delete_retention_ms);
        if grace < 0 {
            return Err(ClusterError::InvalidRequest(format!(
                "delete_retention_ms must be >= 0, got {grace}"
            )));
        }
        let cleaner = t.meta.config.cleaner(&self.cluster.broker_defaults());
        let now = self.cluster.clock.now_ms();
        let mut summary = CompactionSummary::default();
        for slot in t.partitions.iter().filter(|s| s.damage().is_none()) {
            self.cluster.with_slot(slot, |set| {
                let leader = set.leader_id();
                set.set_cleaner(cleaner)?;
                let results = if only_due {
                    set.compact_if_due(now, grace)?
                } else {
                    set.compact(now, grace)?
                };
                for (broker, r) in results {
                    if broker == leader {
                        summary.records_before += r.records_before;
                        summary.records_after += r.records_after;
                    }
                }
                Ok(())
            })?;
        }
        Ok(summary)
    }

    /// The cleaner's cycle: compacts the partitions of compact-policy topics
    /// that are due (dirty ratio above `min.cleanable.dirty.ratio`, or a
    /// dirty record older than `max.compaction.lag.ms`), and the internal
    /// offsets log.
    pub fn compact_all(self) -> Result<BTreeMap<String, CompactionSummary>> {
        let mut out = BTreeMap::new();
        for topic in self.cluster.topics().list()? {
            if self
                .cluster
                .topic(&topic)?
                .meta
                .config
                .cleanup_policy
                .compacts()
            {
                out.insert(topic.clone(), self.compact_topic(&topic, None, true)?);
            }
        }
        let now = self.cluster.clock.now_ms();
        let mut groups = self.cluster.group_coordinator()?;
        let g = groups.as_mut().ok_or(ClusterError::Closed)?;
        let r = self.cluster.guard(g.compact(now))?;
        out.insert(
            crate::cluster::OFFSETS_TOPIC.to_string(),
            CompactionSummary {
                records_before: r.records_before,
                records_after: r.records_after,
            },
        );
        Ok(out)
    }
}
