//! Replication (book chapters 4-6): a partition's replica set with follower
//! fetch, the in-sync replica set, the high watermark, acks modes, leader
//! epochs with KIP-101/279 reconciliation, and the broker half of the
//! idempotent producer.
//!
//! It must never know consumer groups, transactions' coordinator state,
//! networks, JSON, threads, async runtimes or the wall clock: time comes from
//! an injected `mk_core::Clock`. The only asynchronous thing it hands out is
//! the `acks=all` completion handle, a `futures_channel::oneshot` receiver
//! resolved by a later state transition.
//!
//! Files per replica (`<data_dir>/broker-<id>/<topic>-<p>/`, next to mk-log's
//! segments): `leader-epoch-checkpoint`, `replication-offset-checkpoint`
//! and `<offset>.snapshot` producer snapshots. Per data directory:
//! `producer-identities.json`.

mod ack;
mod config;
mod epoch_cache;
mod error;
mod hw_checkpoint;
mod identity;
mod producer_state;
mod replica;
mod replica_set;

pub use ack::{AckHandle, AppendOutcome, ProduceResult};
pub use config::{AckMode, ReplicationConfig};
pub use epoch_cache::{EPOCH_CHECKPOINT_FILE, EpochEndOffset, EpochEntry};
pub use error::{BrokerId, ReplicationError, Result};
pub use hw_checkpoint::HW_CHECKPOINT_FILE;
pub use identity::{IDENTITY_FILE, ProducerIdentity, ProducerIdentityStore};
pub use producer_state::{BatchMetadata, MAX_RETAINED_BATCHES, ProducerEntry};
pub use replica::{ReplicaRole, replica_dir};
pub use replica_set::{FollowerFetch, LeaderAndEpoch, PartitionAssignment, PartitionReplicaSet};
