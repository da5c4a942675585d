//! DeleteRecords in the replica set (Kafka's `deleteRecordsOnLocalLog` and
//! the followers' `maybeIncrementLogStartOffset`): the leader's log start
//! moves forward, never past the high watermark, and every follower's
//! follows as far as its own log reaches; a follower that catches up later
//! takes the leader's start then (`follow_log_start`).

use super::PartitionReplicaSet;
use crate::error::{BrokerId, Result};
use mk_log::LogError;

/// DeleteRecords' "delete up to the high watermark" (Kafka's
/// `DeleteRecordsRequest.HIGH_WATERMARK`).
pub const DELETE_TO_HIGH_WATERMARK: i64 = -1;

impl PartitionReplicaSet {
    /// Deletes the records below `offset` (-1: below the high watermark) on
    /// every replica and returns the new log start (Kafka's low watermark).
    /// An offset below -1 or above the HW is OFFSET_OUT_OF_RANGE; one at or
    /// below the current start changes nothing and answers the start.
    pub fn delete_records(&mut self, offset: i64) -> Result<i64> {
        let hw = self.high_watermark;
        let target = if offset == DELETE_TO_HIGH_WATERMARK {
            hw
        } else {
            offset
        };
        if target < 0 || target > hw {
            return Err(LogError::OffsetOutOfRange {
                offset,
                log_start: self.leader().log.log_start_offset(),
                log_end: hw,
            }
            .into());
        }
        let leader_id = self.leader_id;
        let mut moved = self.replica_mut(leader_id).log.advance_log_start(target)?;
        let brokers: Vec<BrokerId> = self.replicas.keys().copied().collect();
        for b in brokers.into_iter().filter(|b| *b != leader_id) {
            moved |= self.follow_log_start(b)?;
        }
        if moved {
            // As after retention: a producer snapshot below the new start
            // could no longer be completed by replaying the log after it.
            self.checkpoint()?;
        }
        self.check_invariants();
        Ok(self.leader().log.log_start_offset())
    }

    /// Moves a follower's log start up to the leader's, as far as the
    /// follower's log reaches (Kafka's followers take the leader's log
    /// start from each fetch answer). True when it moved.
    pub(super) fn follow_log_start(&mut self, broker: BrokerId) -> Result<bool> {
        let leader_start = self.leader().log.log_start_offset();
        let follower = self.replica_mut(broker);
        let target = leader_start.min(follower.leo());
        Ok(follower.log.advance_log_start(target)?)
    }
}
