//! Stable error codes. Every error a user can see maps to exactly one of these
//! strings; they are part of the public protocol and never change spelling.

use std::fmt;

/// The stable, user-visible error codes of 00-overview.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCode {
    OffsetOutOfRange,
    InvalidRecord,
    CorruptBatch,
    CorruptIndex,
    StorageError,
    TopicAlreadyExists,
    UnknownTopic,
    UnknownPartition,
    ProducerBufferFull,
    RebalanceInProgress,
    IllegalGeneration,
    NotPartitionOwner,
    UnknownMember,
    NotEnoughReplicas,
    NotEnoughReplicasAfterAppend,
    NotInSyncReplica,
    FencedLeaderEpoch,
    ProducerFenced,
    OutOfOrderSequence,
    InvalidTxnState,
    InvalidRequest,
    FrameTooLarge,
    ClusterClosed,
    ClusterFailed,
    NotLeaderOrFollower,
    LeaderNotAvailable,
    UnknownLeaderEpoch,
    UnknownTopicId,
    InvalidTopic,
    InvalidPartitions,
    InvalidReplicationFactor,
    InvalidConfig,
    RequestTimedOut,
    InvalidGroupId,
    MemberIdRequired,
    InconsistentGroupProtocol,
    InvalidSessionTimeout,
    NonEmptyGroup,
    GroupIdNotFound,
    GroupSubscribedToTopic,
    FencedInstanceId,
    GroupMaxSizeReached,
    ConcurrentTransactions,
    InvalidProducerEpoch,
    InvalidProducerIdMapping,
    InvalidTransactionTimeout,
    OperationNotAttempted,
    OffsetMetadataTooLarge,
    StaleMemberEpoch,
    FencedMemberEpoch,
    UnreleasedInstanceId,
    UnsupportedAssignor,
    InvalidRegularExpression,
    UnsupportedVersion,
    InvalidRecordState,
    ShareSessionNotFound,
    InvalidShareSessionEpoch,
    NotCoordinator,
    CoordinatorNotAvailable,
    TopicAuthorizationFailed,
    GroupAuthorizationFailed,
    ClusterAuthorizationFailed,
    TransactionalIdAuthorizationFailed,
    SaslAuthenticationFailed,
    IllegalSaslState,
    UnsupportedSaslMechanism,
    UnacceptableCredential,
    ResourceNotFound,
    DuplicateResource,
    SecurityDisabled,
    MessageTooLarge,
    InvalidTimestamp,
    TransactionAbortable,
}

impl ErrorCode {
    /// Every code, in the order of the specification's table.
    pub const ALL: [ErrorCode; 73] = [
        ErrorCode::OffsetOutOfRange,
        ErrorCode::InvalidRecord,
        ErrorCode::CorruptBatch,
        ErrorCode::CorruptIndex,
        ErrorCode::StorageError,
        ErrorCode::TopicAlreadyExists,
        ErrorCode::UnknownTopic,
        ErrorCode::UnknownPartition,
        ErrorCode::ProducerBufferFull,
        ErrorCode::RebalanceInProgress,
        ErrorCode::IllegalGeneration,
        ErrorCode::NotPartitionOwner,
        ErrorCode::UnknownMember,
        ErrorCode::NotEnoughReplicas,
        ErrorCode::NotEnoughReplicasAfterAppend,
        ErrorCode::NotInSyncReplica,
        ErrorCode::FencedLeaderEpoch,
        ErrorCode::ProducerFenced,
        ErrorCode::OutOfOrderSequence,
        ErrorCode::InvalidTxnState,
        ErrorCode::InvalidRequest,
        ErrorCode::FrameTooLarge,
        ErrorCode::ClusterClosed,
        ErrorCode::ClusterFailed,
        ErrorCode::NotLeaderOrFollower,
        ErrorCode::LeaderNotAvailable,
        ErrorCode::UnknownLeaderEpoch,
        ErrorCode::UnknownTopicId,
        ErrorCode::InvalidTopic,
        ErrorCode::InvalidPartitions,
        ErrorCode::InvalidReplicationFactor,
        ErrorCode::InvalidConfig,
        ErrorCode::RequestTimedOut,
        ErrorCode::InvalidGroupId,
        ErrorCode::MemberIdRequired,
        ErrorCode::InconsistentGroupProtocol,
        ErrorCode::InvalidSessionTimeout,
        ErrorCode::NonEmptyGroup,
        ErrorCode::GroupIdNotFound,
        ErrorCode::GroupSubscribedToTopic,
        ErrorCode::FencedInstanceId,
        ErrorCode::GroupMaxSizeReached,
        ErrorCode::ConcurrentTransactions,
        ErrorCode::InvalidProducerEpoch,
        ErrorCode::InvalidProducerIdMapping,
        ErrorCode::InvalidTransactionTimeout,
        ErrorCode::OperationNotAttempted,
        ErrorCode::OffsetMetadataTooLarge,
        ErrorCode::StaleMemberEpoch,
        ErrorCode::FencedMemberEpoch,
        ErrorCode::UnreleasedInstanceId,
        ErrorCode::UnsupportedAssignor,
        ErrorCode::InvalidRegularExpression,
        ErrorCode::UnsupportedVersion,
        ErrorCode::InvalidRecordState,
        ErrorCode::ShareSessionNotFound,
        ErrorCode::InvalidShareSessionEpoch,
        ErrorCode::NotCoordinator,
        ErrorCode::CoordinatorNotAvailable,
        ErrorCode::TopicAuthorizationFailed,
        ErrorCode::GroupAuthorizationFailed,
        ErrorCode::ClusterAuthorizationFailed,
        ErrorCode::TransactionalIdAuthorizationFailed,
        ErrorCode::SaslAuthenticationFailed,
        ErrorCode::IllegalSaslState,
        ErrorCode::UnsupportedSaslMechanism,
        ErrorCode::UnacceptableCredential,
        ErrorCode::ResourceNotFound,
        ErrorCode::DuplicateResource,
        ErrorCode::SecurityDisabled,
        ErrorCode::MessageTooLarge,
        ErrorCode::InvalidTimestamp,
        ErrorCode::TransactionAbortable,
    ];

    /// The wire spelling of the code, e.g. `"OFFSET_OUT_OF_RANGE"`.
    #[allow(
        clippy::too_many_lines,
        reason = "one arm per error code: the table reads best whole"
    )]
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::OffsetOutOfRange => "OFFSET_OUT_OF_RANGE",
            ErrorCode::InvalidRecord => "INVALID_RECORD",
            ErrorCode::CorruptBatch => "CORRUPT_BATCH",
            ErrorCode::CorruptIndex => "CORRUPT_INDEX",
            ErrorCode::StorageError => "STORAGE_ERROR",
            ErrorCode::TopicAlreadyExists => "TOPIC_ALREADY_EXISTS",
            ErrorCode::UnknownTopic => "UNKNOWN_TOPIC",
            ErrorCode::UnknownPartition => "UNKNOWN_PARTITION",
            ErrorCode::ProducerBufferFull => "PRODUCER_BUFFER_FULL",
            ErrorCode::RebalanceInProgress => "REBALANCE_IN_PROGRESS",
            ErrorCode::IllegalGeneration => "ILLEGAL_GENERATION",
            ErrorCode::NotPartitionOwner => "NOT_PARTITION_OWNER",
            ErrorCode::UnknownMember => "UNKNOWN_MEMBER",
            ErrorCode::NotEnoughReplicas => "NOT_ENOUGH_REPLICAS",
            ErrorCode::NotEnoughReplicasAfterAppend => "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
            ErrorCode::NotInSyncReplica => "NOT_IN_SYNC_REPLICA",
            ErrorCode::FencedLeaderEpoch => "FENCED_LEADER_EPOCH",
            ErrorCode::ProducerFenced => "PRODUCER_FENCED",
            ErrorCode::OutOfOrderSequence => "OUT_OF_ORDER_SEQUENCE",
            ErrorCode::InvalidTxnState => "INVALID_TXN_STATE",
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::FrameTooLarge => "FRAME_TOO_LARGE",
            ErrorCode::ClusterClosed => "CLUSTER_CLOSED",
            ErrorCode::ClusterFailed => "CLUSTER_FAILED",
            ErrorCode::NotLeaderOrFollower => "NOT_LEADER_OR_FOLLOWER",
            ErrorCode::LeaderNotAvailable => "LEADER_NOT_AVAILABLE",
            ErrorCode::UnknownLeaderEpoch => "UNKNOWN_LEADER_EPOCH",
            ErrorCode::UnknownTopicId => "UNKNOWN_TOPIC_ID",
            ErrorCode::InvalidTopic => "INVALID_TOPIC",
            ErrorCode::InvalidPartitions => "INVALID_PARTITIONS",
            ErrorCode::InvalidReplicationFactor => "INVALID_REPLICATION_FACTOR",
            ErrorCode::InvalidConfig => "INVALID_CONFIG",
            ErrorCode::RequestTimedOut => "REQUEST_TIMED_OUT",
            ErrorCode::InvalidGroupId => "INVALID_GROUP_ID",
            ErrorCode::MemberIdRequired => "MEMBER_ID_REQUIRED",
            ErrorCode::InconsistentGroupProtocol => "INCONSISTENT_GROUP_PROTOCOL",
            ErrorCode::InvalidSessionTimeout => "INVALID_SESSION_TIMEOUT",
            ErrorCode::NonEmptyGroup => "NON_EMPTY_GROUP",
            ErrorCode::GroupIdNotFound => "GROUP_ID_NOT_FOUND",
            ErrorCode::GroupSubscribedToTopic => "GROUP_SUBSCRIBED_TO_TOPIC",
            ErrorCode::FencedInstanceId => "FENCED_INSTANCE_ID",
            ErrorCode::GroupMaxSizeReached => "GROUP_MAX_SIZE_REACHED",
            ErrorCode::ConcurrentTransactions => "CONCURRENT_TRANSACTIONS",
            ErrorCode::InvalidProducerEpoch => "INVALID_PRODUCER_EPOCH",
            ErrorCode::InvalidProducerIdMapping => "INVALID_PRODUCER_ID_MAPPING",
            ErrorCode::InvalidTransactionTimeout => "INVALID_TRANSACTION_TIMEOUT",
            ErrorCode::OperationNotAttempted => "OPERATION_NOT_ATTEMPTED",
            ErrorCode::OffsetMetadataTooLarge => "OFFSET_METADATA_TOO_LARGE",
            ErrorCode::StaleMemberEpoch => "STALE_MEMBER_EPOCH",
            ErrorCode::FencedMemberEpoch => "FENCED_MEMBER_EPOCH",
            ErrorCode::UnreleasedInstanceId => "UNRELEASED_INSTANCE_ID",
            ErrorCode::UnsupportedAssignor => "UNSUPPORTED_ASSIGNOR",
            ErrorCode::InvalidRegularExpression => "INVALID_REGULAR_EXPRESSION",
            ErrorCode::UnsupportedVersion => "UNSUPPORTED_VERSION",
            ErrorCode::InvalidRecordState => "INVALID_RECORD_STATE",
            ErrorCode::ShareSessionNotFound => "SHARE_SESSION_NOT_FOUND",
            ErrorCode::InvalidShareSessionEpoch => "INVALID_SHARE_SESSION_EPOCH",
            ErrorCode::NotCoordinator => "NOT_COORDINATOR",
            ErrorCode::CoordinatorNotAvailable => "COORDINATOR_NOT_AVAILABLE",
            ErrorCode::TopicAuthorizationFailed => "TOPIC_AUTHORIZATION_FAILED",
            ErrorCode::GroupAuthorizationFailed => "GROUP_AUTHORIZATION_FAILED",
            ErrorCode::ClusterAuthorizationFailed => "CLUSTER_AUTHORIZATION_FAILED",
            ErrorCode::TransactionalIdAuthorizationFailed => {
                "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
            }
            ErrorCode::SaslAuthenticationFailed => "SASL_AUTHENTICATION_FAILED",
            ErrorCode::IllegalSaslState => "ILLEGAL_SASL_STATE",
            ErrorCode::UnsupportedSaslMechanism => "UNSUPPORTED_SASL_MECHANISM",
            ErrorCode::UnacceptableCredential => "UNACCEPTABLE_CREDENTIAL",
            ErrorCode::ResourceNotFound => "RESOURCE_NOT_FOUND",
            ErrorCode::DuplicateResource => "DUPLICATE_RESOURCE",
            ErrorCode::SecurityDisabled => "SECURITY_DISABLED",
            ErrorCode::MessageTooLarge => "MESSAGE_TOO_LARGE",
            ErrorCode::InvalidTimestamp => "INVALID_TIMESTAMP",
            ErrorCode::TransactionAbortable => "TRANSACTION_ABORTABLE",
        }
    }

    /// Parses a wire spelling back into a code.
    pub fn parse(s: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_through_its_wire_spelling() {
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
        }
        assert_eq!(ErrorCode::parse("NOPE"), None);
    }

    #[test]
    fn wire_spellings_are_unique_screaming_snake_case() {
        let mut seen = std::collections::BTreeSet::new();
        for code in ErrorCode::ALL {
            let s = code.as_str();
            assert!(s.chars().all(|c| c.is_ascii_uppercase() || c == '_'), "{s}");
            assert!(seen.insert(s), "duplicate {s}");
        }
    }
}
