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
//!
//! ```
//! use mk_core::{ManualClock, TopicPartition};
//! use mk_log::{Record, RecordBatch};
//! use mk_replication::{AckMode, AppendOutcome, PartitionReplicaSet, ReplicationConfig};
//! use std::sync::Arc;
//!
//! # fn main() -> Result<(), mk_replication::ReplicationError> {
//! let dir = tempfile::tempdir().unwrap();
//! let config = ReplicationConfig { min_insync_replicas: 2, ..Default::default() };
//! let clock = Arc::new(ManualClock::new(0));
//! let tp = TopicPartition::new("orders", 0);
//! let mut set = PartitionReplicaSet::create(dir.path(), tp, vec![1, 2, 3], config, clock)?;
//!
//! let batch = RecordBatch::new(vec![Record::new(None, Some("hello".into()), 0)])?;
//! let AppendOutcome::Pending(mut ack) = set.append(batch, AckMode::All, None)? else {
//!     unreachable!("acks=all hands out a handle")
//! };
//! assert!(ack.try_result().is_none(), "not committed until the followers have it");
//! set.replicate_all_once()?; // what a broker's replica fetchers do
//! assert_eq!(ack.try_result().unwrap()?.base_offset, Some(0));
//! assert_eq!(set.high_watermark(), 1);
//!
//! let new_leader = set.promote(2)?; // persist (leader_id, leader_epoch)
//! assert_eq!((new_leader.leader_id, new_leader.leader_epoch), (2, 1));
//! set.rejoin(1)?; // the old leader reconciles on its next fetch
//! set.replicate_all_once()?;
//! assert_eq!(set.isr(), vec![1, 2, 3]);
//!
//! let assignment = set.assignment();
//! set.close()?;
//! let clock = Arc::new(ManualClock::new(0));
//! let tp = TopicPartition::new("orders", 0);
//! let set = PartitionReplicaSet::open(dir.path(), tp, assignment, ReplicationConfig::default(), clock)?;
//! assert_eq!(set.high_watermark(), 1);
//! # Ok(())
//! # }
//! ```

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
pub use replica_set::{
    ActiveProducer, CheckedCopy, CheckpointPlan, DELETE_TO_HIGH_WATERMARK, FollowerCopy,
    FollowerFetch, LeaderAndEpoch, PartitionAssignment, PartitionReplicaSet, Reassignment,
    SettledPlacement, SyncedCheckpoint, check_target, remove_replica_dirs,
};

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}

    #[test]
    fn types_mk_cluster_shares_across_tasks_are_send() {
        send::<PartitionReplicaSet>();
        send::<AckHandle>();
        send::<AppendOutcome>();
        send_sync::<ReplicationError>();
        send_sync::<ProducerIdentityStore>();
        send_sync::<ReplicationConfig>();
    }
}
