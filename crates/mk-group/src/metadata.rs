//! The seam through which the coordinator learns which topics exist: mk-cluster
//! owns topic metadata and hands a view of it to every call that validates
//! subscriptions or computes an assignment.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;

/// Read-only view of the user topics of the cluster.
pub trait TopicMetadata {
    /// The number of partitions of `topic`, `None` if no such topic exists.
    fn partition_count(&self, topic: &str) -> Option<u32>;

    /// Every user topic, sorted by name (what a KIP-848 member's regular
    /// expression is matched against).
    fn topic_names(&self) -> Vec<String>;
}

impl TopicMetadata for BTreeMap<String, u32> {
    fn partition_count(&self, topic: &str) -> Option<u32> {
        self.get(topic).copied()
    }

    fn topic_names(&self) -> Vec<String> {
        self.keys().cloned().collect()
    }
}

impl<S: BuildHasher> TopicMetadata for HashMap<String, u32, S> {
    fn partition_count(&self, topic: &str) -> Option<u32> {
        self.get(topic).copied()
    }

    fn topic_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.keys().cloned().collect();
        names.sort();
        names
    }
}

impl<T: TopicMetadata + ?Sized> TopicMetadata for &T {
    fn partition_count(&self, topic: &str) -> Option<u32> {
        (**self).partition_count(topic)
    }

    fn topic_names(&self) -> Vec<String> {
        (**self).topic_names()
    }
}
