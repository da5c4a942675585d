//! The error type of the semantic core. Every variant maps to one stable
//! `ErrorCode`; domain errors keep their own codes.

use mk_core::ErrorCode;
use mk_log::StorageError;

/// Errors of `BrokerCluster` and its clients.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(transparent)]
    Log(#[from] mk_log::LogError),
    #[error(transparent)]
    Replication(#[from] mk_replication::ReplicationError),
    #[error(transparent)]
    Group(#[from] mk_group::GroupError),
    #[error(transparent)]
    Txn(#[from] mk_txn::TxnError),
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// An invalid partition count (Kafka's INVALID_PARTITIONS); worded as
    /// an invalid request, which is what the JSON protocol reports.
    #[error("invalid request: {0}")]
    InvalidPartitions(String),
    #[error("invalid request: {0}")]
    InvalidReplicationFactor(String),
    #[error("invalid request: {0}")]
    InvalidConfig(String),
    #[error("invalid request: {0}")]
    InvalidTopic(String),
    /// The request reached a broker that does not lead the partition.
    #[error("not the leader: {0}")]
    NotLeaderOrFollower(String),
    /// The partition's leader is offline and no in-sync replica can lead.
    #[error("leader not available: {0}")]
    LeaderNotAvailable(String),
    /// A request carries a leader epoch newer than the partition's.
    #[error("unknown leader epoch: {0}")]
    UnknownLeaderEpoch(String),
    /// The request's own deadline passed (Kafka's REQUEST_TIMED_OUT).
    #[error("request timed out: {0}")]
    RequestTimedOut(String),
    /// A request carries a stale leader epoch (KIP-320).
    #[error("fenced leader epoch: {0}")]
    FencedLeaderEpoch(String),
    #[error("unknown topic id: {0}")]
    UnknownTopicId(String),
    #[error("unknown topic: {0}")]
    UnknownTopic(String),
    #[error("unknown partition: {0}")]
    UnknownPartition(String),
    #[error("topic already exists: {0}")]
    TopicAlreadyExists(String),
    #[error("offset {offset} is out of range [{log_start}, {log_end}]")]
    OffsetOutOfRange {
        offset: i64,
        log_start: i64,
        log_end: i64,
    },
    /// A partition of an all-or-nothing request that was fine, left alone
    /// because another one was refused (Kafka's OPERATION_NOT_ATTEMPTED).
    #[error("operation not attempted: {0}")]
    OperationNotAttempted(String),
    #[error("producer buffer full: {0}")]
    ProducerBufferFull(String),
    /// A store of the cluster itself (data directory, lock, metadata) cannot
    /// be used; the domain crates' storage failures arrive in their own
    /// variants, with the same `StorageError` inside.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The partition is offline because its files are damaged (found while
    /// reading or opening them); every other partition keeps serving.
    #[error("storage error: partition {partition} is damaged and offline: {cause}")]
    PartitionDamaged { partition: String, cause: String },
    #[error("the cluster is closed")]
    Closed,
    #[error("the cluster failed: {0}")]
    Failed(String),
    /// A queued record was dropped because its producer crashed or closed
    /// before sending it.
    #[error("cancelled: {0}")]
    Cancelled(String),
    /// A copy of an error already reported elsewhere (every record of a
    /// failed batch fails with the same code and message).
    #[error("{message}")]
    Replayed { code: ErrorCode, message: String },
}

impl ClusterError {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            ClusterError::Log(e) => e.code(),
            ClusterError::Replication(e) => e.code(),
            ClusterError::Group(e) => e.code(),
            ClusterError::Txn(e) => e.code(),
            ClusterError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            ClusterError::InvalidPartitions(_) => ErrorCode::InvalidPartitions,
            ClusterError::InvalidReplicationFactor(_) => ErrorCode::InvalidReplicationFactor,
            ClusterError::InvalidConfig(_) => ErrorCode::InvalidConfig,
            ClusterError::InvalidTopic(_) => ErrorCode::InvalidTopic,
            ClusterError::NotLeaderOrFollower(_) => ErrorCode::NotLeaderOrFollower,
            ClusterError::LeaderNotAvailable(_) => ErrorCode::LeaderNotAvailable,
            ClusterError::UnknownLeaderEpoch(_) => ErrorCode::UnknownLeaderEpoch,
            ClusterError::UnknownTopicId(_) => ErrorCode::UnknownTopicId,
            ClusterError::RequestTimedOut(_) => ErrorCode::RequestTimedOut,
            ClusterError::FencedLeaderEpoch(_) => ErrorCode::FencedLeaderEpoch,
            ClusterError::UnknownTopic(_) => ErrorCode::UnknownTopic,
            ClusterError::UnknownPartition(_) => ErrorCode::UnknownPartition,
            ClusterError::TopicAlreadyExists(_) => ErrorCode::TopicAlreadyExists,
            ClusterError::OffsetOutOfRange { .. } => ErrorCode::OffsetOutOfRange,
            ClusterError::OperationNotAttempted(_) => ErrorCode::OperationNotAttempted,
            ClusterError::ProducerBufferFull(_) => ErrorCode::ProducerBufferFull,
            ClusterError::Storage(_) | ClusterError::PartitionDamaged { .. } => {
                ErrorCode::StorageError
            }
            ClusterError::Closed | ClusterError::Cancelled(_) => ErrorCode::ClusterClosed,
            ClusterError::Failed(_) => ErrorCode::ClusterFailed,
            ClusterError::Replayed { code, .. } => *code,
        }
    }

    /// An invalid-request error re-filed as an invalid config (same
    /// message); other errors unchanged.
    pub(crate) fn into_invalid_config(self) -> ClusterError {
        match self {
            ClusterError::InvalidRequest(m) => ClusterError::InvalidConfig(m),
            other => other,
        }
    }

    /// The member id a MEMBER_ID_REQUIRED answer of `groups().join_member`
    /// carries: the new member must join again with it.
    pub fn member_id_required(&self) -> Option<&str> {
        match self {
            ClusterError::Group(e) => e.member_id_required(),
            _ => None,
        }
    }

    /// True for failures of the disk (how far each reaches is decided by
    /// the cluster, see `health.rs`). A damaged partition's refusal is not
    /// one: that failure was already handled.
    pub fn is_storage_failure(&self) -> bool {
        match self {
            ClusterError::Log(e) => e.is_storage_failure(),
            ClusterError::Replication(e) => e.is_storage_failure(),
            ClusterError::Group(e) => e.is_storage_failure(),
            ClusterError::Txn(e) => e.is_storage_failure(),
            ClusterError::Storage(_) => true,
            _ => false,
        }
    }
}

impl ClusterError {
    /// The typed storage failure behind this error, at whatever layer it
    /// happened (a log, a replica's store, the journal, the offsets log or
    /// the cluster's own files).
    pub fn storage_cause(&self) -> Option<&StorageError> {
        use mk_log::LogError;
        use mk_replication::ReplicationError;
        match self {
            ClusterError::Log(LogError::Storage(s))
            | ClusterError::Replication(ReplicationError::Storage(s))
            | ClusterError::Replication(ReplicationError::Log(LogError::Storage(s)))
            | ClusterError::Group(mk_group::GroupError::Log(LogError::Storage(s)))
            | ClusterError::Txn(mk_txn::TxnError::Storage(s))
            | ClusterError::Storage(s) => Some(s),
            _ => None,
        }
    }
}

/// Result alias of the core.
pub type Result<T, E = ClusterError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::ErrorKind;

    #[test]
    fn the_io_cause_of_a_storage_failure_stays_typed_at_the_top() {
        let io = || StorageError::io("/d/f", std::io::Error::from(ErrorKind::PermissionDenied));
        let errors = [
            ClusterError::from(mk_log::LogError::from(io())),
            ClusterError::from(mk_replication::ReplicationError::from(io())),
            ClusterError::from(mk_replication::ReplicationError::from(
                mk_log::LogError::from(io()),
            )),
            ClusterError::from(mk_group::GroupError::from(mk_log::LogError::from(io()))),
            ClusterError::from(mk_txn::TxnError::from(io())),
            ClusterError::from(io()),
        ];
        for e in &errors {
            assert_eq!(e.code(), ErrorCode::StorageError, "{e}");
            assert!(e.is_storage_failure(), "{e}");
            let cause = e.storage_cause().unwrap_or_else(|| panic!("{e:?}"));
            assert_eq!(cause.path(), std::path::Path::new("/d/f"));
            assert_eq!(
                cause.io_error().map(std::io::Error::kind),
                Some(ErrorKind::PermissionDenied)
            );
            assert!(e.to_string().starts_with("I/O error on /d/f"), "{e}");
        }
        let client = ClusterError::InvalidRequest("x".into());
        assert!(client.storage_cause().is_none() && !client.is_storage_failure());
    }
}
