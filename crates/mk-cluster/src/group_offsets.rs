//! A consumer group's offsets seen from outside the group: the lag of each
//! partition it reads, and resets as `kafka-consumer-groups
//! --reset-offsets` makes them — a plan first (where each partition would
//! move: the dry run), then its execution, which is Kafka's commit from
//! outside the group and so refused while the group has members.

use crate::data::OffsetSpec;
use crate::error::{ClusterError, Result};
use crate::groups::Groups;
use mk_core::TopicPartition;
use mk_group::AnyGroupDescription;
use std::collections::{BTreeMap, BTreeSet};

/// One partition a group reads: its committed offset and how far the
/// partition's high watermark is ahead of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionLag {
    pub tp: TopicPartition,
    /// `None` where the group has committed nothing (a member is assigned
    /// the partition but has not committed yet).
    pub committed: Option<i64>,
    pub log_start_offset: i64,
    pub high_watermark: i64,
    /// High watermark minus committed, never below 0; `None` without a
    /// committed offset.
    pub lag: Option<i64>,
    /// The member the partition is assigned to, if any (of any group type;
    /// in a share group, the first by member id of those sharing it).
    pub member_id: Option<String>,
}

/// Where a reset moves each partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetTarget {
    /// The log start offset.
    Earliest,
    /// The high watermark.
    Latest,
    /// This offset, moved into `[earliest, latest]`.
    Offset(i64),
    /// The first record at or after this timestamp, or latest.
    Timestamp(i64),
    /// The committed offset plus this (negative moves back), moved into
    /// `[earliest, latest]`.
    ShiftBy(i64),
}

/// One partition of a reset plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedReset {
    pub tp: TopicPartition,
    pub current: Option<i64>,
    pub target: i64,
}

impl Groups<'_> {
    /// The lag of every partition the group has committed or a member is
    /// assigned, sorted; partitions of deleted topics are left out.
    pub fn lag_of(self, group: &str) -> Result<Vec<PartitionLag>> {
        let committed = self.committed(group)?;
        let mut owners: BTreeMap<TopicPartition, String> = BTreeMap::new();
        let assigned: Vec<(String, Vec<TopicPartition>)> = match self.describe_any(group)? {
            None => Vec::new(),
            Some(AnyGroupDescription::Classic(d)) => d
                .members
                .into_iter()
                .map(|m| (m.member_id, m.assignment))
                .collect(),
            Some(AnyGroupDescription::Consumer(d)) => d
                .members
                .into_iter()
                .map(|m| (m.member_id, m.assignment))
                .collect(),
            Some(AnyGroupDescription::Share(d)) => d
                .members
                .into_iter()
                .map(|m| (m.member_id, m.assignment))
                .collect(),
        };
        // Share-group members may share a partition: the first (by member
        // id) is named.
        for (member, tps) in assigned {
            for tp in tps {
                owners.entry(tp).or_insert_with(|| member.clone());
            }
        }
        let partitions: BTreeSet<TopicPartition> =
            committed.keys().chain(owners.keys()).cloned().collect();
        let mut out = Vec::with_capacity(partitions.len());
        for tp in partitions {
            let data = self.cluster.data();
            let (log_start, hw) = match (data.log_start_offset(&tp), data.visible_end(&tp)) {
                (Ok(s), Ok(hw)) => (s, hw),
                (Err(e), _) | (_, Err(e)) if is_gone(&e) => continue,
                (Err(e), _) | (_, Err(e)) => return Err(e),
            };
            let current = committed.get(&tp).copied();
            out.push(PartitionLag {
                lag: current.map(|c| (hw - c).max(0)),
                committed: current,
                log_start_offset: log_start,
                high_watermark: hw,
                member_id: owners.remove(&tp),
                tp,
            });
        }
        Ok(out)
    }

    /// Where a reset would move the group: every partition of `topics`,
    /// or with no topics every partition the group has committed
    /// (INVALID_REQUEST when that is none). Nothing changes.
    pub fn plan_offset_reset(
        self,
        group: &str,
        topics: &[String],
        target: ResetTarget,
    ) -> Result<Vec<PlannedReset>> {
        let committed = self.committed(group)?;
        let partitions: Vec<TopicPartition> = if topics.is_empty() {
            committed.keys().cloned().collect()
        } else {
            let mut all = Vec::new();
            for t in topics {
                let count = self.cluster.topics().partition_count(t)?;
                all.extend((0..count).map(|p| TopicPartition::new(t, p)));
            }
            all
        };
        if partitions.is_empty() {
            return Err(ClusterError::InvalidRequest(format!(
                "group {group:?} has no committed offsets; name the topics to reset"
            )));
        }
        partitions
            .into_iter()
            .map(|tp| {
                let current = committed.get(&tp).copied();
                let target = self.reset_target(&tp, current, target)?;
                Ok(PlannedReset {
                    tp,
                    current,
                    target,
                })
            })
            .collect()
    }

    /// Executes a plan: every target becomes the group's committed offset
    /// at once (`alter_offsets`; a group with members refuses it).
    pub fn execute_offset_reset(self, group: &str, plan: &[PlannedReset]) -> Result<()> {
        let offsets = plan.iter().map(|r| (r.tp.clone(), r.target)).collect();
        self.alter_offsets(group, &offsets)
    }

    fn reset_target(
        self,
        tp: &TopicPartition,
        current: Option<i64>,
        target: ResetTarget,
    ) -> Result<i64> {
        let data = self.cluster.data();
        let earliest = data.list_offsets(tp, OffsetSpec::Earliest)?.unwrap_or(0);
        let latest = data
            .list_offsets(tp, OffsetSpec::Latest)?
            .unwrap_or(earliest)
            .max(earliest);
        Ok(match target {
            ResetTarget::Earliest => earliest,
            ResetTarget::Latest => latest,
            ResetTarget::Offset(o) => o.clamp(earliest, latest),
            ResetTarget::Timestamp(ts) => data
                .list_offsets(tp, OffsetSpec::Timestamp(ts))?
                .unwrap_or(latest),
            ResetTarget::ShiftBy(n) => {
                let Some(c) = current else {
                    return Err(ClusterError::InvalidRequest(format!(
                        "{tp} has no committed offset to shift from"
                    )));
                };
                c.saturating_add(n).clamp(earliest, latest)
            }
        })
    }
}

fn is_gone(e: &ClusterError) -> bool {
    matches!(
        e.code(),
        mk_core::ErrorCode::UnknownTopic | mk_core::ErrorCode::UnknownPartition
    )
}
