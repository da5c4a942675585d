//! KIP-848 consumer groups as the core serves them (the groups role): the
//! heartbeat and describe of mk-group's `consumer` machines with the
//! cluster's topic metadata, the OffsetCommit rule at a request version,
//! OffsetFetch's member check, a group's type, and per-group settings.

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
