//! KIP-848 consumer groups as the core serves them (the groups role): the
//! heartbeat and describe of mk-group's `consumer` machines with the
//! cluster's topic metadata, the OffsetCommit rule at a request version,
//! OffsetFetch's member check, a group's type, and per-group settings.
//! Also the two offset operations as a client names partitions (a topic and
//! an index that may name no partition): `commit_each`, where a partition
//! that does not exist is answered on its own and the others are committed,
//! and `fetch_offsets`, the committed offsets a fetch answers, grouped by
//! topic. The adapters only translate their wire into these.

use crate::error::{ClusterError, Result};
use crate::groups::Groups;
use mk_core::TopicPartition;
use mk_group::{
    CommitRequest, ConsumerGroupDescription, ConsumerHeartbeat, ConsumerHeartbeatAnswer,
    GroupConfigEntry, GroupListing, GroupSettings, GroupType, OffsetAndMetadata,
};
use std::collections::BTreeMap;

impl Groups<'_> {
    /// ConsumerGroupHeartbeat (see `GroupCoordinator::consumer_heartbeat`).
    pub fn consumer_heartbeat(self, hb: ConsumerHeartbeat) -> Result<ConsumerHeartbeatAnswer> {
        self.with_groups(|g, meta| g.consumer_heartbeat(hb, meta))
    }

    /// ConsumerGroupDescribe: `None` when no consumer group has the id.
    pub fn describe_consumer(self, group: &str) -> Result<Option<ConsumerGroupDescription>> {
        self.with_groups(|g, _| Ok(g.describe_consumer_group(group)))
    }

    /// The type of a group the coordinator knows.
    pub fn group_type(self, group: &str) -> Result<Option<GroupType>> {
        self.with_groups(|g, _| Ok(g.group_type(group)))
    }

    /// Kafka's OffsetCommit at its request version (the member-epoch rule
    /// of KIP-848 groups, GROUP_ID_NOT_FOUND for an unknown group from v9):
    /// one answer per partition, in partition order.
    pub fn commit_request(
        self,
        request: &CommitRequest<'_>,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
    ) -> Result<Vec<(TopicPartition, Result<()>)>> {
        let answers = self.with_groups(|g, meta| g.commit_request(request, offsets, meta))?;
        Ok(answers
            .into_iter()
            .map(|(tp, r)| (tp, r.map_err(ClusterError::from)))
            .collect())
    }

    /// Kafka's OffsetCommit with partitions as the request names them
    /// (`(topic, index)`, in request order): an index that names no
    /// partition (negative, past the topic's count, an unknown topic) is
    /// answered UNKNOWN_PARTITION / UNKNOWN_TOPIC on its own; the others are
    /// committed by `commit_request`'s rule, and when the group refuses
    /// the request whole each of them is answered that refusal. One answer
    /// per entry, in order. A request naming no existing partition commits
    /// nothing and asks nothing of the group.
    pub fn commit_each(
        self,
        request: &CommitRequest<'_>,
        offsets: &[(&str, i32, OffsetAndMetadata)],
    ) -> PartitionAnswers {
        let resolved: Vec<Result<TopicPartition>> = offsets
            .iter()
            .map(|(topic, index, _)| self.existing_partition(topic, *index))
            .collect();
        let known: BTreeMap<TopicPartition, OffsetAndMetadata> = resolved
            .iter()
            .zip(offsets)
            .filter_map(|(tp, (_, _, o))| Some((tp.as_ref().ok()?.clone(), o.clone())))
            .collect();
        let answers = if known.is_empty() {
            Ok(BTreeMap::new())
        } else {
            self.commit_request(request, &known)
                .map(|a| a.into_iter().collect())
        };
        answer_each(resolved, answers)
    }

    /// OffsetDelete with partitions as the request names them, answered as
    /// `commit_each` answers: a partition that does not exist on its own,
    /// the others by `delete_offsets`.
    pub fn delete_offsets_each(self, group: &str, partitions: &[(&str, i32)]) -> PartitionAnswers {
        let resolved: Vec<Result<TopicPartition>> = partitions
            .iter()
            .map(|(topic, index)| self.existing_partition(topic, *index))
            .collect();
        let known: Vec<TopicPartition> = resolved
            .iter()
            .filter_map(|tp| tp.as_ref().ok().cloned())
            .collect();
        let answers = self
            .delete_offsets(group, &known)
            .map(|a| a.into_iter().collect());
        answer_each(resolved, answers)
    }

    /// The partition `(topic, index)` names, if it exists: UNKNOWN_TOPIC,
    /// UNKNOWN_PARTITION (a negative index too) otherwise.
    fn existing_partition(self, topic: &str, index: i32) -> Result<TopicPartition> {
        let p = u32::try_from(index).map_err(|_| ClusterError::NegativePartition { index })?;
        let count = self.cluster.topics().partition_count(topic)?;
        let tp = TopicPartition::new(topic, p);
        if p < count {
            Ok(tp)
        } else {
            Err(ClusterError::UnknownPartition {
                partition: tp,
                partitions: count,
            })
        }
    }

    /// What an offset fetch answers for `group`: with `asked` (topics and
    /// the partition indexes named), each named partition in the order
    /// asked — its committed offset, `None` where nothing is committed, an
    /// index that cannot name a partition UNKNOWN_PARTITION on its own —
    /// else every partition the group has committed, by topic. `member`
    /// (OffsetFetch v9+: member id and epoch) is checked first against a
    /// KIP-848 group; a refusal refuses the whole group.
    pub fn fetch_offsets(
        self,
        group: &str,
        member: Option<(Option<&str>, i32)>,
        asked: Option<&[(&str, &[i32])]>,
    ) -> Result<Vec<FetchedTopic>> {
        if let Some((member, epoch)) = member {
            self.validate_offset_fetch(group, member, epoch)?;
        }
        let Some(asked) = asked else {
            let mut by_topic: BTreeMap<String, Vec<FetchedPartition>> = BTreeMap::new();
            for (tp, o) in self.committed_for(group, None)? {
                let index = i32::try_from(tp.partition).unwrap_or(i32::MAX);
                by_topic.entry(tp.topic).or_default().push((index, Ok(o)));
            }
            return Ok(by_topic
                .into_iter()
                .map(|(name, partitions)| FetchedTopic { name, partitions })
                .collect());
        };
        let named: Vec<TopicPartition> = asked
            .iter()
            .flat_map(|(name, indexes)| {
                indexes
                    .iter()
                    .filter_map(|p| u32::try_from(*p).ok())
                    .map(|p| TopicPartition::new(*name, p))
            })
            .collect();
        let mut committed: BTreeMap<TopicPartition, Option<OffsetAndMetadata>> = self
            .committed_for(group, Some(&named))?
            .into_iter()
            .collect();
        Ok(asked
            .iter()
            .map(|(name, indexes)| FetchedTopic {
                name: name.to_string(),
                partitions: indexes
                    .iter()
                    .map(|index| {
                        let answer = match u32::try_from(*index) {
                            Err(_) => Err(ClusterError::NegativePartition { index: *index }),
                            Ok(p) => Ok(committed
                                .get_mut(&TopicPartition::new(*name, p))
                                .and_then(Option::take)),
                        };
                        (*index, answer)
                    })
                    .collect(),
            })
            .collect())
    }

    /// OffsetFetch v9+'s member check (UNKNOWN_MEMBER, STALE_MEMBER_EPOCH
    /// for a KIP-848 group's member).
    pub fn validate_offset_fetch(
        self,
        group: &str,
        member: Option<&str>,
        epoch: i32,
    ) -> Result<()> {
        self.with_groups(|g, _| g.validate_offset_fetch(group, member, epoch))
    }

    /// ListGroups with its state (v4+) and type (v5+) filters.
    pub fn listings_filtered(
        self,
        states: &[String],
        types: &[String],
    ) -> Result<Vec<GroupListing>> {
        self.with_groups(|g, _| Ok(g.list_group_listings_filtered(states, types)))
    }

    /// DescribeConfigs of a GROUP resource: every group config, set or
    /// default.
    pub fn describe_configs(self, group: &str) -> Result<Vec<GroupConfigEntry>> {
        self.with_groups(|g, _| Ok(g.describe_group_configs(group)))
    }

    /// IncrementalAlterConfigs of a GROUP resource: SET (`Some`) or DELETE
    /// (`None`) per config, all or nothing, persisted unless
    /// `validate_only`.
    pub fn alter_configs(
        self,
        group: &str,
        changes: &[(String, Option<String>)],
        validate_only: bool,
    ) -> Result<()> {
        self.with_groups(|g, _| g.alter_group_configs(group, changes, validate_only))
    }

    /// Sets a group's settings (its dynamic group configs).
    pub fn set_settings(self, group: &str, settings: GroupSettings) -> Result<()> {
        self.with_groups(|g, _| {
            g.set_group_settings(group, settings);
            Ok(())
        })
    }
}

/// One partition of an offset fetch's answer: the index asked and its
/// committed offset (`None`: nothing committed) or why it has none.
pub type FetchedPartition = (i32, Result<Option<OffsetAndMetadata>>);

/// One topic of an offset fetch's answer (`groups().fetch_offsets`).
#[derive(Debug)]
pub struct FetchedTopic {
    pub name: String,
    pub partitions: Vec<FetchedPartition>,
}

/// The answers of an operation on partitions as a request names them:
/// whether the request as a whole was refused, and one answer per named
/// partition, in order (a refused request's refusal on each partition that
/// exists, a partition that does not exist answered on its own).
#[derive(Debug)]
pub struct PartitionAnswers {
    pub request: Result<()>,
    pub partitions: Vec<Result<()>>,
}

/// One answer per partition as named (`resolved`), from the answers of the
/// partitions that exist (or the refusal of all of them); a partition named
/// twice is answered the same twice.
fn answer_each(
    resolved: Vec<Result<TopicPartition>>,
    answers: Result<BTreeMap<TopicPartition, Result<()>>>,
) -> PartitionAnswers {
    let copy = |e: &ClusterError| ClusterError::Replayed {
        code: e.code(),
        message: e.to_string(),
    };
    let (request, mut answers) = match answers {
        Ok(a) => (Ok(()), a),
        Err(refused) => (Err(refused), BTreeMap::new()),
    };
    let partitions = resolved
        .into_iter()
        .map(|tp| {
            let tp = tp?;
            if let Err(refused) = &request {
                return Err(copy(refused));
            }
            match answers.remove(&tp) {
                Some(Err(e)) => {
                    answers.insert(tp, Err(copy(&e)));
                    Err(e)
                }
                Some(Ok(())) | None => Ok(()),
            }
        })
        .collect();
    PartitionAnswers {
        request,
        partitions,
    }
}
