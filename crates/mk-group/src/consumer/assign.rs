//! The server-side assignors of KIP-848 consumer groups and the target
//! assignment they compute. A member names the assignor it wants
//! (`group.remote.assignor`); the group uses the one most of its members
//! ask for, `uniform` when none asks.
//!
//! `uniform` spreads partitions evenly over the members that subscribe to
//! them and keeps every still-valid ownership of the previous target (the
//! sticky assignor of `assignor.rs`); `range` gives each subscribed member
//! consecutive ranges per topic (the range assignor of `assignor.rs`).
//! Both are deterministic functions of the subscriptions, the partition
//! counts and the previous target.

use crate::assignor::{Assignment, AssignorKind, Subscriptions};
use mk_core::TopicPartition;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// An assignor a consumer-group member can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum ServerAssignor {
    /// Balanced and sticky: Kafka's default server assignor.
    #[default]
    Uniform,
    /// Per topic, consecutive ranges of partitions.
    Range,
}

impl ServerAssignor {
    /// Every assignor, the default first (Kafka's
    /// `group.consumer.assignors` order).
    pub const ALL: [ServerAssignor; 2] = [ServerAssignor::Uniform, ServerAssignor::Range];

    /// The name clients use.
    pub const fn name(self) -> &'static str {
        match self {
            ServerAssignor::Uniform => "uniform",
            ServerAssignor::Range => "range",
        }
    }

    /// Parses a name.
    pub fn parse(name: &str) -> Option<ServerAssignor> {
        ServerAssignor::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The assignment of every subscribed partition to exactly one member
    /// subscribed to its topic.
    pub(crate) fn assign(
        self,
        subscriptions: &Subscriptions,
        partition_counts: &BTreeMap<String, u32>,
        previous: &BTreeMap<String, BTreeSet<TopicPartition>>,
    ) -> BTreeMap<String, BTreeSet<TopicPartition>> {
        let previous: Assignment = previous
            .iter()
            .map(|(m, ps)| (m.clone(), ps.iter().cloned().collect()))
            .collect();
        let kind = match self {
            ServerAssignor::Uniform => AssignorKind::Sticky,
            ServerAssignor::Range => AssignorKind::Range,
        };
        kind.assign(subscriptions, partition_counts, &previous)
            .into_iter()
            .map(|(m, ps)| (m, ps.into_iter().collect()))
            .collect()
    }
}

impl fmt::Display for ServerAssignor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The assignor most members ask for (ties: the first in
/// [`ServerAssignor::ALL`]), or the default.
pub(crate) fn preferred<'a>(
    wanted: impl Iterator<Item = Option<ServerAssignor>> + 'a,
) -> ServerAssignor {
    let mut votes: BTreeMap<ServerAssignor, usize> = BTreeMap::new();
    for a in wanted.flatten() {
        *votes.entry(a).or_default() += 1;
    }
    votes
        .into_iter()
        .max_by(|(a, va), (b, vb)| va.cmp(vb).then_with(|| b.cmp(a)))
        .map_or_else(ServerAssignor::default, |(a, _)| a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_the_majority_picks_the_assignor() {
        for a in ServerAssignor::ALL {
            assert_eq!(ServerAssignor::parse(a.name()), Some(a));
        }
        assert_eq!(ServerAssignor::parse("sticky"), None);
        assert_eq!(preferred([None, None].into_iter()), ServerAssignor::Uniform);
        let range = Some(ServerAssignor::Range);
        let uniform = Some(ServerAssignor::Uniform);
        assert_eq!(preferred([range, None].into_iter()), ServerAssignor::Range);
        assert_eq!(
            preferred([range, uniform].into_iter()),
            ServerAssignor::Uniform
        );
        assert_eq!(
            preferred([range, uniform, range].into_iter()),
            ServerAssignor::Range
        );
    }
}
