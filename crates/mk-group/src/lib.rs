//! Consumer groups (book chapter 7): the group coordinator with generations
//! and fencing, the assignors, and durable committed offsets stored in an
//! internal compacted log.
//!
//! It must never know replication, transactions, networks, JSON wire shapes,
//! threads, async runtimes or the wall clock.
//!
//! Entry point: [`GroupCoordinator::open`] with the directory of the
//! `__consumer_offsets` log, a [`GroupConfig`] and a clock. Topic metadata
//! comes from the caller through [`TopicMetadata`] on every call that needs
//! it, so the coordinator never holds a second copy of it.

mod assignor;
pub mod codec;
mod coordinator;
mod error;
mod group;
mod metadata;
mod offsets;

pub use assignor::{Assignment, AssignorKind, Subscriptions};
pub use coordinator::{
    GroupConfig, GroupCoordinator, MAX_ID_BYTES, MemberAssignment, OFFSETS_TOPIC,
};
pub use error::{GroupError, Result};
pub use group::{GroupDescription, GroupState, MemberDescription};
pub use metadata::TopicMetadata;
pub use mk_log::CompactionResult;
