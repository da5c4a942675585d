//! The share groups' assignor (Kafka's `simple`): every subscribed
//! partition goes to at least one subscribed member, and members share a
//! partition when there are more members than partitions. Sharing is safe
//! because records, not partitions, are what a share group hands out.

use mk_core::TopicPartition;
use std::collections::{BTreeMap, BTreeSet};

/// The name ShareGroupDescribe reports.
pub const SHARE_ASSIGNOR: &str = "simple";

/// Per topic: with at least as many subscribed members as partitions,
/// member i (in id order) gets partition i mod n; with fewer, partition p
/// goes to member p mod m. Deterministic, balanced per topic.
pub(crate) fn assign(
    subscriptions: &BTreeMap<String, BTreeSet<String>>,
    counts: &BTreeMap<String, u32>,
) -> BTreeMap<String, BTreeSet<TopicPartition>> {
    let mut out: BTreeMap<String, BTreeSet<TopicPartition>> = subscriptions
        .keys()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for (topic, n) in counts {
        let members: Vec<&String> = subscriptions
            .iter()
            .filter(|(_, ts)| ts.contains(topic))
            .map(|(m, _)| m)
            .collect();
        let (m, n) = (members.len(), usize::try_from(*n).unwrap_or(usize::MAX));
        if m == 0 || n == 0 {
            continue;
        }
        let pairs: Vec<(usize, usize)> = if m >= n {
            (0..m).map(|i| (i, i % n)).collect()
        } else {
            (0..n).map(|p| (p % m, p)).collect()
        };
        for (i, p) in pairs {
            let p = u32::try_from(p).expect("p < n, which came from a u32");
            out.get_mut(members[i])
                .expect("members come from the subscriptions")
                .insert(TopicPartition::new(topic, p));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subs(members: &[&str], topic: &str) -> BTreeMap<String, BTreeSet<String>> {
        members
            .iter()
            .map(|m| (m.to_string(), BTreeSet::from([topic.to_string()])))
            .collect()
    }

    #[test]
    fn members_share_a_partition_and_every_partition_has_a_member() {
        let counts = BTreeMap::from([("t".to_string(), 1u32)]);
        let a = assign(&subs(&["a", "b", "c"], "t"), &counts);
        assert!(
            a.values()
                .all(|ps| ps == &BTreeSet::from([TopicPartition::new("t", 0)]))
        );
        let counts = BTreeMap::from([("t".to_string(), 5u32)]);
        let a = assign(&subs(&["a", "b"], "t"), &counts);
        assert_eq!(a["a"].len(), 3);
        assert_eq!(a["b"].len(), 2);
        let all: BTreeSet<_> = a.values().flatten().collect();
        assert_eq!(all.len(), 5);
    }
}
