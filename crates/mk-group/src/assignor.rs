//! Partition assignors: round-robin (the default, exactly as spec 03 defines
//! it), range (Kafka's `RangeAssignor`) and sticky (minimal movement on
//! rebalance). They are pure functions of the members' subscriptions, the
//! partition counts and, for sticky, the previous assignment, so every
//! rebalance is deterministic and can be tested without a coordinator.

use mk_core::TopicPartition;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Member id -> subscribed topic names.
pub type Subscriptions = BTreeMap<String, BTreeSet<String>>;

/// Member id -> assigned partitions, sorted by (topic, partition). Every
/// member of the input appears, possibly with an empty list.
pub type Assignment = BTreeMap<String, Vec<TopicPartition>>;

/// The assignment strategy of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum AssignorKind {
    /// Spec 03's round-robin with one cursor shared across topics.
    #[default]
    RoundRobin,
    /// Kafka's range assignor: per topic, consecutive ranges of partitions.
    Range,
    /// Keeps every still-valid previous ownership and moves a partition only
    /// to even out loads that differ by two or more.
    Sticky,
}

impl AssignorKind {
    /// Every assignor, in the order of their wire byte.
    pub const ALL: [AssignorKind; 3] = [
        AssignorKind::RoundRobin,
        AssignorKind::Range,
        AssignorKind::Sticky,
    ];

    /// The protocol name, as Kafka clients spell it.
    pub const fn name(self) -> &'static str {
        match self {
            AssignorKind::RoundRobin => "roundrobin",
            AssignorKind::Range => "range",
            AssignorKind::Sticky => "sticky",
        }
    }

    /// Parses a protocol name.
    pub fn parse(name: &str) -> Option<AssignorKind> {
        AssignorKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The byte that stands for this assignor in the offsets log.
    pub(crate) const fn to_byte(self) -> u8 {
        match self {
            AssignorKind::RoundRobin => 0,
            AssignorKind::Range => 1,
            AssignorKind::Sticky => 2,
        }
    }

    pub(crate) fn from_byte(b: u8) -> Option<AssignorKind> {
        AssignorKind::ALL.into_iter().find(|k| k.to_byte() == b)
    }

    /// Assigns every partition of every subscribed topic to exactly one
    /// subscribed member. A topic missing from `partition_counts` has no
    /// partitions (it was deleted). `previous` is only read by the sticky
    /// assignor.
    pub fn assign(
        self,
        subscriptions: &Subscriptions,
        partition_counts: &BTreeMap<String, u32>,
        previous: &Assignment,
    ) -> Assignment {
        match self {
            AssignorKind::RoundRobin => round_robin(subscriptions, partition_counts),
            AssignorKind::Range => range(subscriptions, partition_counts),
            AssignorKind::Sticky => sticky(subscriptions, partition_counts, previous),
        }
    }
}

impl fmt::Display for AssignorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn empty_assignment(subscriptions: &Subscriptions) -> Assignment {
    subscriptions
        .keys()
        .map(|m| (m.clone(), Vec::new()))
        .collect()
}

/// Topics subscribed by at least one member, sorted by name, with their
/// sorted eligible members.
fn topics_with_eligible(subscriptions: &Subscriptions) -> BTreeMap<&str, Vec<&str>> {
    let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    // Members iterate in id order, so every eligible list comes out sorted.
    for (member, topics) in subscriptions {
        for topic in topics {
            out.entry(topic.as_str()).or_default().push(member.as_str());
        }
    }
    out
}

fn count(partition_counts: &BTreeMap<String, u32>, topic: &str) -> u32 {
    partition_counts.get(topic).copied().unwrap_or(0)
}

/// Spec 03: members sorted by id, topics by name, one cursor shared across
/// topics; partition p of a topic goes to `eligible[cursor % len]`.
fn round_robin(
    subscriptions: &Subscriptions,
    partition_counts: &BTreeMap<String, u32>,
) -> Assignment {
    let mut out = empty_assignment(subscriptions);
    let mut cursor = 0usize;
    for (topic, eligible) in topics_with_eligible(subscriptions) {
        for partition in 0..count(partition_counts, topic) {
            let member = eligible[cursor % eligible.len()];
            out.get_mut(member)
                .expect("eligible members come from the subscriptions")
                .push(TopicPartition::new(topic, partition));
            cursor += 1;
        }
    }
    out
}

/// Kafka's range assignor: per topic, the i-th eligible member gets the i-th
/// consecutive range; the first `partitions % members` ranges are one longer.
fn range(subscriptions: &Subscriptions, partition_counts: &BTreeMap<String, u32>) -> Assignment {
    let mut out = empty_assignment(subscriptions);
    for (topic, eligible) in topics_with_eligible(subscriptions) {
        let n = count(partition_counts, topic);
        let members = u32::try_from(eligible.len()).expect("a group has fewer than 2^32 members");
        let (per_member, extra) = (n / members, n % members);
        for (i, member) in (0u32..).zip(&eligible) {
            let start = i * per_member + i.min(extra);
            let len = per_member + u32::from(i < extra);
            let list = out
                .get_mut(*member)
                .expect("eligible members are subscribed");
            list.extend((start..start + len).map(|p| TopicPartition::new(topic, p)));
        }
    }
    out
}

/// Sticky: (1) every member keeps each previously owned partition that
/// still exists and that it is still subscribed to; (2) unowned partitions,
/// the most constrained first, go to the least loaded eligible member;
/// (3) while some partition's owner holds at least two more partitions than
/// another eligible member, that partition moves. Each move lowers the sum of
/// squared loads, so step 3 ends; it moves nothing in a balanced group.
fn sticky(
    subscriptions: &Subscriptions,
    partition_counts: &BTreeMap<String, u32>,
    previous: &Assignment,
) -> Assignment {
    let mut eligible: BTreeMap<TopicPartition, Vec<&str>> = BTreeMap::new();
    for (topic, members) in topics_with_eligible(subscriptions) {
        for p in 0..count(partition_counts, topic) {
            eligible.insert(TopicPartition::new(topic, p), members.clone());
        }
    }
    let mut owned: BTreeMap<&str, BTreeSet<TopicPartition>> = subscriptions
        .keys()
        .map(|m| (m.as_str(), BTreeSet::new()))
        .collect();
    let mut claimed: BTreeSet<&TopicPartition> = BTreeSet::new();

    for (member, partitions) in previous {
        let Some(list) = owned.get_mut(member.as_str()) else {
            continue;
        };
        for tp in partitions {
            let Some((key, members)) = eligible.get_key_value(tp) else {
                continue;
            };
            if members.contains(&member.as_str()) && claimed.insert(key) {
                list.insert(tp.clone());
            }
        }
    }

    let mut unowned: Vec<(&TopicPartition, &Vec<&str>)> = eligible
        .iter()
        .filter(|(tp, _)| !claimed.contains(tp))
        .collect();
    unowned.sort_by_key(|(tp, members)| (members.len(), *tp));
    for (tp, members) in unowned {
        let target =
            least_loaded(members, &owned, usize::MAX).expect("a topic has eligible members");
        owned
            .get_mut(target)
            .expect("eligible members are subscribed")
            .insert(tp.clone());
    }

    // Each move lowers the sum of squared loads by at least two, so the
    // bound is never reached; it only guards against a logic error.
    let mut moves_left = eligible.len().saturating_mul(subscriptions.len()) + 1;
    while let Some((from, to, tp)) = find_move(&eligible, &owned) {
        moves_left -= 1;
        debug_assert!(moves_left > 0, "sticky balancing does not converge");
        if moves_left == 0 {
            break;
        }
        owned.get_mut(from).expect("owner").remove(&tp);
        owned.get_mut(to).expect("target").insert(tp);
    }

    owned
        .into_iter()
        .map(|(m, set)| (m.to_string(), set.into_iter().collect()))
        .collect()
}

/// The eligible member with the fewest partitions (ties: smallest id) whose
/// load is below `below`.
fn least_loaded<'a>(
    members: &[&'a str],
    owned: &BTreeMap<&str, BTreeSet<TopicPartition>>,
    below: usize,
) -> Option<&'a str> {
    members
        .iter()
        .map(|m| (owned.get(m).map_or(0, BTreeSet::len), *m))
        .filter(|(load, _)| *load < below)
        .min()
        .map(|(_, m)| m)
}

/// The next balancing move: from the most loaded member (ties: smallest id),
/// its highest partition that an eligible member with at least two fewer
/// partitions can take, to the least loaded such member.
fn find_move<'a>(
    eligible: &BTreeMap<TopicPartition, Vec<&'a str>>,
    owned: &BTreeMap<&'a str, BTreeSet<TopicPartition>>,
) -> Option<(&'a str, &'a str, TopicPartition)> {
    let min_load = owned.values().map(BTreeSet::len).min()?;
    let mut by_load: Vec<(&'a str, usize)> = owned.iter().map(|(m, s)| (*m, s.len())).collect();
    by_load.sort_by_key(|(m, load)| (Reverse(*load), *m));
    for (from, load) in by_load {
        if load <= min_load + 1 {
            // No lighter member differs from this one (or any later) by two.
            return None;
        }
        for tp in owned[from].iter().rev() {
            if let Some(to) = least_loaded(&eligible[tp], owned, load - 1) {
                return Some((from, to, tp.clone()));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_bytes_round_trip() {
        for k in AssignorKind::ALL {
            assert_eq!(AssignorKind::parse(k.name()), Some(k));
            assert_eq!(AssignorKind::from_byte(k.to_byte()), Some(k));
        }
        assert_eq!(AssignorKind::parse("cooperative-sticky"), None);
        assert_eq!(AssignorKind::from_byte(9), None);
        assert_eq!(AssignorKind::default(), AssignorKind::RoundRobin);
    }
}
