//! The seam through which the coordinator learns which topics exist: mk-cluster
//! owns topic metadata and hands a view of it to every call that validates
//! subscriptions or computes an assignment.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;

/// Read-only view of the user topics of the cluster.
pub trait TopicMetadata {
    /// The number of partitions of `topic`, `None` if no such topic exists.
    fn partition_count(&self, topic: &str) -> Option<u32>;
}

impl TopicMetadata for BTreeMap<String, u32> {
    fn partition_count(&self, topic: &str) -> Option<u32> {
        self.get(topic).copied()
    }
}

impl<S: BuildHasher> TopicMetadata for HashMap<String, u32, S> {
    fn partition_count(&self, topic: &str) -> Option<u32> {
        self.get(topic).copied()
    }
}

impl<T: TopicMetadata + ?Sized> TopicMetadata for &T {
    fn partition_count(&self, topic: &str) -> Option<u32> {
        (**self).partition_count(topic)
    }
}
