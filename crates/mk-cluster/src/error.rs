//! The error type of the semantic core. Every variant maps to one stable
//! `ErrorCode`; domain errors keep their own codes.

use crate::topic_id::TopicId;
use mk_core::{ErrorCode, TopicNameError, TopicPartition};
use mk_storage::StorageError;

/// Errors of `BrokerCluster` and its clients. Errors that callers tell
/// apart come with typed causes: the topic administration family in
/// [`TopicError`], leadership in [`LeaderError`], the in-process clients in
/// [`ClientError`], and what a request names that does not exist in the
/// `Unknown*` variants.
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
    /// A request whose values break a rule of the operation (the message
    /// says which); malformed requests are the adapters' to refuse.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// Creating, growing, deleting or validating a topic was refused.
    #[error(transparent)]
    Topic(#[from] TopicError),
    #[error("invalid request: {0}")]
    InvalidConfig(String),
    /// A batch larger than its topic's `max.message.bytes`.
    #[error("message too large: {0}")]
    MessageTooLarge(String),
    /// A CreateTime timestamp outside the topic's
    /// `message.timestamp.before.max.ms` / `after.max.ms` window.
    #[error("invalid timestamp: {0}")]
    InvalidTimestamp(String),
    /// Who may serve a partition, and under which leader epoch.
    #[error(transparent)]
    Leader(#[from] LeaderError),
    /// An in-process client refused or dropped a record.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The request's own deadline passed (Kafka's REQUEST_TIMED_OUT).
    #[error(
        "request timed out: the write was not acknowledged by enough replicas within {timeout_ms} ms"
    )]
    RequestTimedOut { timeout_ms: u128 },
    /// A security operation was refused (mk-auth: SASL, credentials, ACLs).
    #[error(transparent)]
    Auth(#[from] mk_auth::AuthError),
    /// Kafka's RESOURCE_NOT_FOUND (a SCRAM credential that does not exist).
    #[error("resource not found: {0}")]
    ResourceNotFound(String),
    /// Kafka's DUPLICATE_RESOURCE (one resource named twice in a request).
    #[error("duplicate resource: {0}")]
    DuplicateResource(String),
    #[error("unknown topic id: no topic has id {id}")]
    UnknownTopicId { id: TopicId },
    #[error("unknown topic: topic {topic:?} does not exist")]
    UnknownTopic { topic: String },
    /// The topic was deleted while the request held one of its partitions.
    #[error("unknown topic: {partition} was deleted")]
    TopicDeleted { partition: TopicPartition },
    #[error(
        "unknown partition: {partition} does not exist; topic {:?} has {partitions} partition(s)",
        partition.topic
    )]
    UnknownPartition {
        partition: TopicPartition,
        partitions: u32,
    },
    /// A partition index a client sent that no topic can have.
    #[error("unknown partition: partition {index} does not exist")]
    NegativePartition { index: i32 },
    #[error("offset {offset} is out of range [{log_start}, {log_end}]")]
    OffsetOutOfRange {
        offset: i64,
        log_start: i64,
        log_end: i64,
    },
    /// A partition of an all-or-nothing request that was fine, left alone
    /// because another one was refused (Kafka's OPERATION_NOT_ATTEMPTED).
    #[error(
        "operation not attempted: {partition} was not added because another partition of the request was refused"
    )]
    OperationNotAttempted { partition: TopicPartition },
    /// A store of the cluster itself (data directory, lock, metadata) cannot
    /// be used; the domain crates' storage failures arrive in their own
    /// variants, with the same `StorageError` inside.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The partition is offline because its files are damaged (found while
    /// reading or opening them); every other partition keeps serving.
    #[error("storage error: partition {partition} is damaged and offline: {cause}")]
    PartitionDamaged { partition: String, cause: String },
    /// The partition is offline because an invariant failed (a panic)
    /// while its lock was held, or its lock was found poisoned; every other
    /// partition keeps serving. The next open recovers it as after a crash.
    #[error("storage error: partition {partition} is offline: {cause}")]
    PartitionFailed {
        partition: TopicPartition,
        cause: String,
    },
    #[error("the cluster is closed")]
    Closed,
    /// Terminal; the message of the failure that made the cluster FAILED.
    #[error("the cluster failed: {0}")]
    Failed(String),
    /// A copy of an error already reported elsewhere (every record of a
    /// failed batch fails with the same code and message).
    #[error("{message}")]
    Replayed { code: ErrorCode, message: String },
}

/// Why a topic could not be created, grown, deleted or validated. Every
/// message reads as an invalid request, which is what the JSON protocol
/// reports; the codes tell the Kafka errors apart.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopicError {
    #[error("invalid request: {0}")]
    InvalidName(#[from] TopicNameError),
    #[error("invalid request: {name:?} is an internal topic name and cannot be created")]
    InternalName { name: String },
    #[error("invalid request: {name:?} is an internal topic and cannot be deleted")]
    InternalTopic { name: String },
    #[error("invalid request: partitions must be > 0")]
    NoPartitions,
    /// A count a Kafka client sent below -1 (-1 means the broker default).
    #[error("invalid request: partitions must be > 0, got {asked}")]
    PartitionsNotPositive { asked: i64 },
    /// A CreatePartitions total a Kafka client sent below 0.
    #[error("invalid request: the partition count must be positive, got {asked}")]
    CountNotPositive { asked: i64 },
    #[error("invalid request: partitions must be <= {max}, got {asked}")]
    TooManyPartitions { asked: u32, max: u32 },
    #[error(
        "invalid request: topic {topic:?} has {current} partition(s); the count can only grow, got {asked}"
    )]
    CannotShrink {
        topic: String,
        current: u32,
        asked: u32,
    },
    /// The new replicas would not fit under the open-file limit.
    #[error(
        "invalid request: {what} needs {needed} more open files ({per_replica} per replica) but only {room} \
         fit: {open} of the process's limit of {limit} are open and {reserved} stay reserved for \
         connections and reads; raise the open-file limit (ulimit -n) or create fewer partitions"
    )]
    OpenFileLimit {
        what: String,
        needed: u64,
        per_replica: u64,
        room: u64,
        open: u64,
        limit: u64,
        reserved: u64,
    },
    #[error(
        "invalid request: replication_factor must be between 1 and the number of brokers ({brokers}), got {asked}"
    )]
    ReplicationFactor { asked: usize, brokers: usize },
    /// A replication factor a Kafka client sent below -1.
    #[error("invalid request: replication_factor must be > 0, got {asked}")]
    ReplicationFactorNotPositive { asked: i64 },
    #[error("topic already exists: topic {topic:?} already exists")]
    AlreadyExists { topic: String },
}

impl TopicError {
    pub fn code(&self) -> ErrorCode {
        match self {
            TopicError::InvalidName(_)
            | TopicError::InternalName { .. }
            | TopicError::InternalTopic { .. } => ErrorCode::InvalidTopic,
            TopicError::NoPartitions
            | TopicError::PartitionsNotPositive { .. }
            | TopicError::CountNotPositive { .. }
            | TopicError::TooManyPartitions { .. }
            | TopicError::CannotShrink { .. }
            | TopicError::OpenFileLimit { .. } => ErrorCode::InvalidPartitions,
            TopicError::ReplicationFactor { .. }
            | TopicError::ReplicationFactorNotPositive { .. } => {
                ErrorCode::InvalidReplicationFactor
            }
            TopicError::AlreadyExists { .. } => ErrorCode::TopicAlreadyExists,
        }
    }
}

/// Why a broker may not serve a partition now: Kafka clients refresh their
/// metadata and retry on each of these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeaderError {
    /// The request reached a broker that does not lead the partition.
    #[error("not the leader: broker {broker} does not lead {partition}; broker {leader} does")]
    NotLeader {
        partition: TopicPartition,
        broker: i32,
        leader: i32,
    },
    /// The partition's leader is offline and no in-sync replica can lead.
    #[error(
        "leader not available: the leader of {partition}, broker {leader}, is offline and no in-sync replica could take over"
    )]
    NotAvailable {
        partition: TopicPartition,
        leader: i32,
    },
    /// A request carries a stale leader epoch (KIP-320).
    #[error(
        "fenced leader epoch: {partition}: the request's leader epoch {requested} is older than the current {current}"
    )]
    FencedEpoch {
        partition: TopicPartition,
        requested: i32,
        current: i32,
    },
    /// A group or transactional request reached a broker that does not
    /// coordinate its key (Kafka's NOT_COORDINATOR: the client looks the
    /// coordinator up again).
    #[error(
        "not the coordinator: broker {broker} does not coordinate {key}; broker {coordinator} does"
    )]
    NotCoordinator {
        key: String,
        broker: i32,
        coordinator: i32,
    },
    /// Every broker that could coordinate the key is offline.
    #[error("coordinator not available: every broker that can coordinate {key} is offline")]
    CoordinatorNotAvailable { key: String },
    /// A request carries a leader epoch newer than the partition's.
    #[error(
        "unknown leader epoch: {partition}: the request's leader epoch {requested} is newer than the current {current}"
    )]
    UnknownEpoch {
        partition: TopicPartition,
        requested: i32,
        current: i32,
    },
}

impl LeaderError {
    pub fn code(&self) -> ErrorCode {
        match self {
            LeaderError::NotLeader { .. } => ErrorCode::NotLeaderOrFollower,
            LeaderError::NotAvailable { .. } => ErrorCode::LeaderNotAvailable,
            LeaderError::FencedEpoch { .. } => ErrorCode::FencedLeaderEpoch,
            LeaderError::UnknownEpoch { .. } => ErrorCode::UnknownLeaderEpoch,
            LeaderError::NotCoordinator { .. } => ErrorCode::NotCoordinator,
            LeaderError::CoordinatorNotAvailable { .. } => ErrorCode::CoordinatorNotAvailable,
        }
    }
}

/// What an in-process client refuses or drops.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    #[error(
        "producer buffer full: {queued} bytes queued + {size} would exceed max_buffer_bytes {max}"
    )]
    BufferFull {
        queued: usize,
        size: usize,
        max: usize,
    },
    /// A queued record was dropped because its producer crashed or closed
    /// before sending it.
    #[error("cancelled: {0}")]
    Cancelled(Cancelled),
}

/// When a record was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cancelled {
    /// Before it was sent.
    BeforeSend,
    /// After it was sent, before its acknowledgement arrived.
    BeforeAcknowledgement,
}

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Cancelled::BeforeSend => "the producer was crashed before the record was sent",
            Cancelled::BeforeAcknowledgement => {
                "the producer was crashed or the cluster closed before the record was acknowledged"
            }
        })
    }
}

impl ClientError {
    pub fn code(&self) -> ErrorCode {
        match self {
            ClientError::BufferFull { .. } => ErrorCode::ProducerBufferFull,
            ClientError::Cancelled(_) => ErrorCode::ClusterClosed,
        }
    }
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
            ClusterError::Topic(e) => e.code(),
            ClusterError::InvalidConfig(_) => ErrorCode::InvalidConfig,
            ClusterError::MessageTooLarge(_) => ErrorCode::MessageTooLarge,
            ClusterError::InvalidTimestamp(_) => ErrorCode::InvalidTimestamp,
            ClusterError::Leader(e) => e.code(),
            ClusterError::Client(e) => e.code(),
            ClusterError::UnknownTopicId { .. } => ErrorCode::UnknownTopicId,
            ClusterError::Auth(e) => e.code(),
            ClusterError::ResourceNotFound(_) => ErrorCode::ResourceNotFound,
            ClusterError::DuplicateResource(_) => ErrorCode::DuplicateResource,
            ClusterError::RequestTimedOut { .. } => ErrorCode::RequestTimedOut,
            ClusterError::UnknownTopic { .. } | ClusterError::TopicDeleted { .. } => {
                ErrorCode::UnknownTopic
            }
            ClusterError::UnknownPartition { .. } | ClusterError::NegativePartition { .. } => {
                ErrorCode::UnknownPartition
            }
            ClusterError::OffsetOutOfRange { .. } => ErrorCode::OffsetOutOfRange,
            ClusterError::OperationNotAttempted { .. } => ErrorCode::OperationNotAttempted,
            ClusterError::Storage(_)
            | ClusterError::PartitionDamaged { .. }
            | ClusterError::PartitionFailed { .. } => ErrorCode::StorageError,
            ClusterError::Closed => ErrorCode::ClusterClosed,
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

    /// The records a produced batch was refused for (Kafka's per-record
    /// errors of Produce v8+): one entry per offending record, empty for
    /// every other error.
    pub fn record_errors(&self) -> &[mk_log::RecordError] {
        match self {
            ClusterError::Log(e) => e.record_errors(),
            _ => &[],
        }
    }

    /// True when the partition asked for is offline (damaged or failed)
    /// while the rest of the broker serves.
    pub fn is_partition_offline(&self) -> bool {
        matches!(
            self,
            ClusterError::PartitionDamaged { .. } | ClusterError::PartitionFailed { .. }
        )
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

    /// Every typed cause maps to its one stable code and keeps the message
    /// clients saw when the cause was a string (the wire snapshots hold
    /// the JSON side of the same messages).
    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
    )]
    fn typed_causes_keep_their_codes_and_messages() {
        let tp = TopicPartition::new("t", 3);
        let cases: Vec<(ClusterError, ErrorCode, &str)> = vec![
            (
                ClusterError::UnknownTopic { topic: "t".into() },
                ErrorCode::UnknownTopic,
                "unknown topic: topic \"t\" does not exist",
            ),
            (
                ClusterError::TopicDeleted {
                    partition: tp.clone(),
                },
                ErrorCode::UnknownTopic,
                "unknown topic: t-3 was deleted",
            ),
            (
                ClusterError::UnknownPartition {
                    partition: tp.clone(),
                    partitions: 2,
                },
                ErrorCode::UnknownPartition,
                "unknown partition: t-3 does not exist; topic \"t\" has 2 partition(s)",
            ),
            (
                TopicError::CannotShrink {
                    topic: "t".into(),
                    current: 4,
                    asked: 2,
                }
                .into(),
                ErrorCode::InvalidPartitions,
                "invalid request: topic \"t\" has 4 partition(s); the count can only grow, got 2",
            ),
            (
                TopicError::ReplicationFactor {
                    asked: 3,
                    brokers: 1,
                }
                .into(),
                ErrorCode::InvalidReplicationFactor,
                "invalid request: replication_factor must be between 1 and the number of brokers (1), got 3",
            ),
            (
                TopicError::AlreadyExists { topic: "t".into() }.into(),
                ErrorCode::TopicAlreadyExists,
                "topic already exists: topic \"t\" already exists",
            ),
            (
                TopicError::InvalidName(TopicNameError::Empty).into(),
                ErrorCode::InvalidTopic,
                "invalid request: topic name must not be empty",
            ),
            (
                LeaderError::NotLeader {
                    partition: tp.clone(),
                    broker: 2,
                    leader: 1,
                }
                .into(),
                ErrorCode::NotLeaderOrFollower,
                "not the leader: broker 2 does not lead t-3; broker 1 does",
            ),
            (
                LeaderError::FencedEpoch {
                    partition: tp.clone(),
                    requested: 1,
                    current: 2,
                }
                .into(),
                ErrorCode::FencedLeaderEpoch,
                "fenced leader epoch: t-3: the request's leader epoch 1 is older than the current 2",
            ),
            (
                ClientError::BufferFull {
                    queued: 10,
                    size: 5,
                    max: 12,
                }
                .into(),
                ErrorCode::ProducerBufferFull,
                "producer buffer full: 10 bytes queued + 5 would exceed max_buffer_bytes 12",
            ),
            (
                ClientError::Cancelled(Cancelled::BeforeSend).into(),
                ErrorCode::ClusterClosed,
                "cancelled: the producer was crashed before the record was sent",
            ),
            (
                ClusterError::RequestTimedOut { timeout_ms: 30 },
                ErrorCode::RequestTimedOut,
                "request timed out: the write was not acknowledged by enough replicas within 30 ms",
            ),
        ];
        for (e, code, message) in cases {
            assert_eq!(e.code(), code, "{e}");
            assert_eq!(e.to_string(), message);
        }
    }
}
