//! The error type of mk-replication. Every variant maps to one stable
//! `ErrorCode`; failures of the disk stay recognisable as such.

use mk_core::ErrorCode;
use mk_log::LogError;
use mk_storage::StorageError;

/// Broker identifiers, as in Kafka (`int32`, non-negative).
pub type BrokerId = i32;

/// Errors of the replication layer.
#[derive(Debug, thiserror::Error)]
pub enum ReplicationError {
    /// An error of a replica's log, unchanged (its code is kept).
    #[error(transparent)]
    Log(#[from] LogError),
    /// A store of this crate (epoch checkpoint, HW checkpoint, producer
    /// snapshot, identity store) cannot be written, parsed or trusted.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A request carried a leader epoch other than the current one, or
    /// leadership changed before an `acks=all` write was acknowledged.
    #[error("fenced leader epoch: {0}")]
    FencedLeaderEpoch(String),
    /// `acks=all` was refused before anything was written.
    #[error(
        "not enough replicas: acks=all needs at least {min_insync_replicas} in-sync replicas, the ISR has {isr_size}"
    )]
    NotEnoughReplicas {
        isr_size: usize,
        min_insync_replicas: usize,
    },
    /// An `acks=all` write was appended, then the ISR fell below the minimum.
    #[error(
        "not enough replicas after append: the batch ending before offset {next_offset} was written, but the ISR shrank to {isr_size} (< {min_insync_replicas})"
    )]
    NotEnoughReplicasAfterAppend {
        next_offset: i64,
        isr_size: usize,
        min_insync_replicas: usize,
    },
    /// Promotion of a replica outside the ISR.
    #[error("broker {broker} is not in the ISR {isr:?}; only an in-sync replica can be promoted")]
    NotInSyncReplica {
        broker: BrokerId,
        isr: Vec<BrokerId>,
    },
    /// The broker holds no replica of this partition.
    #[error("broker {broker} holds no replica of {partition}; replicas are {replicas:?}")]
    UnknownReplica {
        broker: BrokerId,
        partition: String,
        replicas: Vec<BrokerId>,
    },
    /// The producer epoch is older than the one registered or recorded.
    #[error(
        "producer {producer_id} is fenced: epoch {epoch} is older than the current epoch {current_epoch}"
    )]
    ProducerFenced {
        producer_id: i64,
        epoch: i32,
        current_epoch: i32,
    },
    /// An idempotent sequence gap or a stale non-duplicate retry.
    #[error(
        "out of order sequence for producer {producer_id} (epoch {epoch}): expected sequence {expected}, got {actual}"
    )]
    OutOfOrderSequence {
        producer_id: i64,
        epoch: i32,
        expected: i32,
        actual: i32,
    },
    /// A malformed request or configuration.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The replica set was closed or dropped before an `acks=all` write was
    /// acknowledged.
    #[error("replica set closed: {0}")]
    Closed(String),
}

impl ReplicationError {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            ReplicationError::Log(e) => e.code(),
            ReplicationError::Storage(_) => ErrorCode::StorageError,
            ReplicationError::FencedLeaderEpoch(_) => ErrorCode::FencedLeaderEpoch,
            ReplicationError::NotEnoughReplicas { .. } => ErrorCode::NotEnoughReplicas,
            ReplicationError::NotEnoughReplicasAfterAppend { .. } => {
                ErrorCode::NotEnoughReplicasAfterAppend
            }
            ReplicationError::NotInSyncReplica { .. } => ErrorCode::NotInSyncReplica,
            ReplicationError::UnknownReplica { .. } => ErrorCode::UnknownPartition,
            ReplicationError::ProducerFenced { .. } => ErrorCode::ProducerFenced,
            ReplicationError::OutOfOrderSequence { .. } => ErrorCode::OutOfOrderSequence,
            ReplicationError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            ReplicationError::Closed(_) => ErrorCode::ClusterClosed,
        }
    }

    /// True for failures of the disk (as opposed to bad input or a protocol
    /// outcome): the caller must treat these as fatal for the broker and
    /// never report them as a client error.
    pub fn is_storage_failure(&self) -> bool {
        match self {
            ReplicationError::Log(e) => e.is_storage_failure(),
            ReplicationError::Storage(_) => true,
            _ => false,
        }
    }
}

/// Result alias of the replication layer.
pub type Result<T, E = ReplicationError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
    )]
    fn every_variant_has_its_code_and_storage_failures_stay_visible() {
        let io = ReplicationError::from(LogError::from(StorageError::io(
            "x",
            std::io::Error::other("disk"),
        )));
        assert_eq!(io.code(), ErrorCode::StorageError);
        assert!(io.is_storage_failure());
        let bad = ReplicationError::from(LogError::InvalidRecord("r".into()));
        assert_eq!(bad.code(), ErrorCode::InvalidRecord);
        assert!(!bad.is_storage_failure());
        let unusable = ReplicationError::from(StorageError::unusable("p", "r"));
        assert!(unusable.is_storage_failure());
        assert_eq!(unusable.to_string(), "storage error in p: r");
        let cases = [
            (
                ReplicationError::FencedLeaderEpoch("x".into()),
                ErrorCode::FencedLeaderEpoch,
            ),
            (
                ReplicationError::NotEnoughReplicas {
                    isr_size: 1,
                    min_insync_replicas: 2,
                },
                ErrorCode::NotEnoughReplicas,
            ),
            (
                ReplicationError::NotEnoughReplicasAfterAppend {
                    next_offset: 1,
                    isr_size: 1,
                    min_insync_replicas: 2,
                },
                ErrorCode::NotEnoughReplicasAfterAppend,
            ),
            (
                ReplicationError::NotInSyncReplica {
                    broker: 2,
                    isr: vec![1],
                },
                ErrorCode::NotInSyncReplica,
            ),
            (
                ReplicationError::UnknownReplica {
                    broker: 9,
                    partition: "t-0".into(),
                    replicas: vec![1],
                },
                ErrorCode::UnknownPartition,
            ),
            (
                ReplicationError::ProducerFenced {
                    producer_id: 1,
                    epoch: 0,
                    current_epoch: 1,
                },
                ErrorCode::ProducerFenced,
            ),
            (
                ReplicationError::OutOfOrderSequence {
                    producer_id: 1,
                    epoch: 0,
                    expected: 3,
                    actual: 5,
                },
                ErrorCode::OutOfOrderSequence,
            ),
            (
                ReplicationError::InvalidRequest("x".into()),
                ErrorCode::InvalidRequest,
            ),
            (
                ReplicationError::Closed("x".into()),
                ErrorCode::ClusterClosed,
            ),
        ];
        for (err, code) in cases {
            assert_eq!(err.code(), code, "{err}");
            assert!(!err.is_storage_failure(), "{err}");
        }
    }

    #[test]
    fn sequence_error_names_expected_and_actual() {
        let e = ReplicationError::OutOfOrderSequence {
            producer_id: 4,
            epoch: 0,
            expected: 3,
            actual: 5,
        };
        assert!(e.to_string().contains("expected sequence 3, got 5"), "{e}");
    }
}
