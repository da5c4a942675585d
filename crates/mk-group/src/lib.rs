//! Consumer groups (book chapter 7): the group coordinator with Kafka's
//! three group protocols side by side. The classic rebalance protocol
//! (join barrier, generations, leader, SyncGroup, static membership,
//! fencing; `classic.rs`, `rebalance.rs`), KIP-848's consumer protocol
//! (member and group epochs, server-side assignors, incremental
//! reconciliation; `consumer/`) and KIP-932's share groups (records shared
//! among members under acquisition locks and delivery counts; `share/`).
//! Committed offsets, share-partition state and group configs are stored
//! durably in an internal compacted log.
//!
//! It must never know replication, transactions, networks, JSON wire shapes,
//! threads, async runtimes or the wall clock.
//!
//! Entry point: [`GroupCoordinator::open`] with the directory of the
//! `__consumer_offsets` log, a [`GroupConfig`] and a clock. Topic metadata
//! comes from the caller through [`TopicMetadata`] on every call that needs
//! it, so the coordinator never holds a second copy of it.
//!
//! ```
//! use mk_core::{ManualClock, TopicPartition};
//! use mk_group::{GroupConfig, GroupCoordinator};
//! use std::collections::BTreeMap;
//! use std::sync::Arc;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let data_dir = tempfile::tempdir()?;
//! let clock = ManualClock::new(0);
//! let offsets_dir = data_dir.path().join("__consumer_offsets-0");
//! let mut groups = GroupCoordinator::open(&offsets_dir, GroupConfig::default(), Arc::new(clock.clone()))?;
//! // Topic metadata: anything implementing `TopicMetadata` (here a map).
//! let topics = BTreeMap::from([("orders".to_string(), 2u32)]);
//!
//! let joined = groups.join("billing", "consumer-1", ["orders"], &topics)?;
//! assert_eq!(joined.partitions.len(), 2);
//! let offsets = BTreeMap::from([(TopicPartition::new("orders", 0), 42)]);
//! groups.commit_offsets("billing", joined.generation, "consumer-1", None, &offsets, &topics)?;
//! assert_eq!(groups.fetch_committed("billing", &TopicPartition::new("orders", 0)), Some(42));
//!
//! clock.advance(10_001);
//! assert_eq!(groups.expire_members(&topics)?.len(), 1);
//! groups.flush()?; // the flush cycle's fsync
//! groups.close()?;
//! # Ok(())
//! # }
//! ```

mod assignor;
mod classic;
pub mod codec;
mod commits;
pub mod consumer;
mod coordinator;
mod error;
mod group;
mod metadata;
mod offsets;
mod protocol;
mod rebalance;
mod settings;
pub mod share;

pub use assignor::{Assignment, AssignorKind, Subscriptions};
pub use commits::{CommitRequest, DEFAULT_OFFSET_METADATA_MAX_BYTES, OffsetAndMetadata};
pub use consumer::{
    ConsumerGroupDescription, ConsumerHeartbeat, ConsumerHeartbeatAnswer,
    ConsumerMemberDescription, MemberState, ServerAssignor,
};
pub use coordinator::{
    GroupConfig, GroupCoordinator, MAX_ID_BYTES, MAX_PROTOCOLS, MemberAssignment, OFFSETS_TOPIC,
};
pub use error::{GroupError, Result};
pub use group::{
    AnyGroupDescription, CONSUMER_PROTOCOL_TYPE, GroupDescription, GroupState, GroupType,
    MemberDescription,
};
pub use metadata::TopicMetadata;
pub use mk_log::CompactionResult;
pub use protocol::{
    GroupHandle, GroupJoin, GroupJoined, GroupListing, GroupSync, GroupSynced, HeartbeatAnswer,
    JoinHandle, JoinedMember, SyncHandle,
};
pub use settings::{
    GROUP_CONFIGS, GroupConfigDef, GroupConfigEntry, GroupConfigKind, GroupSettings,
    ShareAutoOffsetReset, ShareIsolation,
};
pub use share::{
    ShareGroupDescription, ShareHeartbeat, ShareHeartbeatAnswer, ShareMemberDescription,
};
