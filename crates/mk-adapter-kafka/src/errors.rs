//! The one mapping from the core's stable error codes to Kafka's numeric
//! error codes (the table in docs/kafka-wire.md, tested below), and the
//! Kafka codes this adapter answers itself.

use mk_cluster::{ClusterError, ErrorCode};

/// A Kafka protocol error code (`int16` on the wire). Its default is
/// NONE (0), as in every message schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct KafkaCode(pub i16);

impl KafkaCode {
    pub const UNKNOWN_SERVER_ERROR: KafkaCode = KafkaCode(-1);
    pub const NONE: KafkaCode = KafkaCode(0);
    pub const OFFSET_OUT_OF_RANGE: KafkaCode = KafkaCode(1);
    pub const CORRUPT_MESSAGE: KafkaCode = KafkaCode(2);
    pub const UNKNOWN_TOPIC_OR_PARTITION: KafkaCode = KafkaCode(3);
    pub const LEADER_NOT_AVAILABLE: KafkaCode = KafkaCode(5);
    pub const NOT_LEADER_OR_FOLLOWER: KafkaCode = KafkaCode(6);
    pub const REQUEST_TIMED_OUT: KafkaCode = KafkaCode(7);
    pub const BROKER_NOT_AVAILABLE: KafkaCode = KafkaCode(8);
    pub const MESSAGE_TOO_LARGE: KafkaCode = KafkaCode(10);
    pub const INVALID_TIMESTAMP: KafkaCode = KafkaCode(32);
    pub const OFFSET_METADATA_TOO_LARGE: KafkaCode = KafkaCode(12);
    pub const COORDINATOR_NOT_AVAILABLE: KafkaCode = KafkaCode(15);
    pub const NOT_COORDINATOR: KafkaCode = KafkaCode(16);
    pub const INVALID_TOPIC_EXCEPTION: KafkaCode = KafkaCode(17);
    pub const NOT_ENOUGH_REPLICAS: KafkaCode = KafkaCode(19);
    pub const NOT_ENOUGH_REPLICAS_AFTER_APPEND: KafkaCode = KafkaCode(20);
    pub const INVALID_REQUIRED_ACKS: KafkaCode = KafkaCode(21);
    pub const ILLEGAL_GENERATION: KafkaCode = KafkaCode(22);
    pub const INCONSISTENT_GROUP_PROTOCOL: KafkaCode = KafkaCode(23);
    pub const INVALID_GROUP_ID: KafkaCode = KafkaCode(24);
    pub const UNKNOWN_MEMBER_ID: KafkaCode = KafkaCode(25);
    pub const INVALID_SESSION_TIMEOUT: KafkaCode = KafkaCode(26);
    pub const REBALANCE_IN_PROGRESS: KafkaCode = KafkaCode(27);
    pub const UNSUPPORTED_VERSION: KafkaCode = KafkaCode(35);
    pub const TOPIC_ALREADY_EXISTS: KafkaCode = KafkaCode(36);
    pub const INVALID_PARTITIONS: KafkaCode = KafkaCode(37);
    pub const INVALID_REPLICATION_FACTOR: KafkaCode = KafkaCode(38);
    pub const INVALID_CONFIG: KafkaCode = KafkaCode(40);
    pub const INVALID_REQUEST: KafkaCode = KafkaCode(42);
    pub const OUT_OF_ORDER_SEQUENCE_NUMBER: KafkaCode = KafkaCode(45);
    pub const DUPLICATE_SEQUENCE_NUMBER: KafkaCode = KafkaCode(46);
    pub const INVALID_PRODUCER_EPOCH: KafkaCode = KafkaCode(47);
    pub const INVALID_TXN_STATE: KafkaCode = KafkaCode(48);
    pub const INVALID_PRODUCER_ID_MAPPING: KafkaCode = KafkaCode(49);
    pub const INVALID_TRANSACTION_TIMEOUT: KafkaCode = KafkaCode(50);
    pub const CONCURRENT_TRANSACTIONS: KafkaCode = KafkaCode(51);
    pub const OPERATION_NOT_ATTEMPTED: KafkaCode = KafkaCode(55);
    pub const KAFKA_STORAGE_ERROR: KafkaCode = KafkaCode(56);
    pub const NON_EMPTY_GROUP: KafkaCode = KafkaCode(68);
    pub const GROUP_ID_NOT_FOUND: KafkaCode = KafkaCode(69);
    pub const FENCED_LEADER_EPOCH: KafkaCode = KafkaCode(74);
    pub const UNKNOWN_LEADER_EPOCH: KafkaCode = KafkaCode(75);
    pub const UNSUPPORTED_COMPRESSION_TYPE: KafkaCode = KafkaCode(76);
    pub const MEMBER_ID_REQUIRED: KafkaCode = KafkaCode(79);
    pub const GROUP_MAX_SIZE_REACHED: KafkaCode = KafkaCode(81);
    pub const FENCED_INSTANCE_ID: KafkaCode = KafkaCode(82);
    pub const GROUP_SUBSCRIBED_TO_TOPIC: KafkaCode = KafkaCode(86);
    pub const INVALID_RECORD: KafkaCode = KafkaCode(87);
    pub const PRODUCER_FENCED: KafkaCode = KafkaCode(90);
    pub const UNKNOWN_TOPIC_ID: KafkaCode = KafkaCode(100);
    pub const TRANSACTIONAL_ID_NOT_FOUND: KafkaCode = KafkaCode(105);
    pub const FENCED_MEMBER_EPOCH: KafkaCode = KafkaCode(110);
    pub const UNRELEASED_INSTANCE_ID: KafkaCode = KafkaCode(111);
    pub const UNSUPPORTED_ASSIGNOR: KafkaCode = KafkaCode(112);
    pub const STALE_MEMBER_EPOCH: KafkaCode = KafkaCode(113);
    pub const TRANSACTION_ABORTABLE: KafkaCode = KafkaCode(120);
    pub const INVALID_RECORD_STATE: KafkaCode = KafkaCode(121);
    pub const SHARE_SESSION_NOT_FOUND: KafkaCode = KafkaCode(122);
    pub const INVALID_SHARE_SESSION_EPOCH: KafkaCode = KafkaCode(123);
    pub const INVALID_REGULAR_EXPRESSION: KafkaCode = KafkaCode(128);
    pub const TOPIC_AUTHORIZATION_FAILED: KafkaCode = KafkaCode(29);
    pub const GROUP_AUTHORIZATION_FAILED: KafkaCode = KafkaCode(30);
    pub const CLUSTER_AUTHORIZATION_FAILED: KafkaCode = KafkaCode(31);
    pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: KafkaCode = KafkaCode(53);
    pub const SASL_AUTHENTICATION_FAILED: KafkaCode = KafkaCode(58);
    pub const ILLEGAL_SASL_STATE: KafkaCode = KafkaCode(34);
    pub const UNSUPPORTED_SASL_MECHANISM: KafkaCode = KafkaCode(33);
    pub const UNACCEPTABLE_CREDENTIAL: KafkaCode = KafkaCode(93);
    pub const RESOURCE_NOT_FOUND: KafkaCode = KafkaCode(91);
    pub const DUPLICATE_RESOURCE: KafkaCode = KafkaCode(92);
    pub const SECURITY_DISABLED: KafkaCode = KafkaCode(54);

    pub fn is_none(self) -> bool {
        self == Self::NONE
    }
}

/// The Kafka code for each core code. Every core code has exactly one;
/// codes that only the JSON protocol or the in-process clients can produce
/// map to the closest Kafka meaning.
#[allow(
    clippy::too_many_lines,
    reason = "one arm per error code: the table reads best whole"
)]
pub fn kafka_code(code: ErrorCode) -> KafkaCode {
    match code {
        ErrorCode::OffsetOutOfRange => KafkaCode::OFFSET_OUT_OF_RANGE,
        ErrorCode::InvalidRecord => KafkaCode::INVALID_RECORD,
        ErrorCode::CorruptBatch => KafkaCode::CORRUPT_MESSAGE,
        ErrorCode::CorruptIndex | ErrorCode::StorageError => KafkaCode::KAFKA_STORAGE_ERROR,
        ErrorCode::TopicAlreadyExists => KafkaCode::TOPIC_ALREADY_EXISTS,
        ErrorCode::UnknownTopic | ErrorCode::UnknownPartition => {
            KafkaCode::UNKNOWN_TOPIC_OR_PARTITION
        }
        ErrorCode::ProducerBufferFull => KafkaCode::UNKNOWN_SERVER_ERROR,
        ErrorCode::RebalanceInProgress => KafkaCode::REBALANCE_IN_PROGRESS,
        ErrorCode::IllegalGeneration => KafkaCode::ILLEGAL_GENERATION,
        ErrorCode::NotPartitionOwner => KafkaCode::ILLEGAL_GENERATION,
        ErrorCode::UnknownMember => KafkaCode::UNKNOWN_MEMBER_ID,
        ErrorCode::NotEnoughReplicas => KafkaCode::NOT_ENOUGH_REPLICAS,
        ErrorCode::NotEnoughReplicasAfterAppend => KafkaCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode::NotInSyncReplica => KafkaCode::INVALID_REQUEST,
        ErrorCode::FencedLeaderEpoch => KafkaCode::FENCED_LEADER_EPOCH,
        ErrorCode::UnknownLeaderEpoch => KafkaCode::UNKNOWN_LEADER_EPOCH,
        ErrorCode::ProducerFenced => KafkaCode::PRODUCER_FENCED,
        ErrorCode::OutOfOrderSequence => KafkaCode::OUT_OF_ORDER_SEQUENCE_NUMBER,
        ErrorCode::InvalidTxnState => KafkaCode::INVALID_TXN_STATE,
        ErrorCode::InvalidRequest => KafkaCode::INVALID_REQUEST,
        ErrorCode::InvalidPartitions => KafkaCode::INVALID_PARTITIONS,
        ErrorCode::InvalidReplicationFactor => KafkaCode::INVALID_REPLICATION_FACTOR,
        ErrorCode::InvalidConfig => KafkaCode::INVALID_CONFIG,
        ErrorCode::InvalidTopic => KafkaCode::INVALID_TOPIC_EXCEPTION,
        ErrorCode::NotLeaderOrFollower => KafkaCode::NOT_LEADER_OR_FOLLOWER,
        ErrorCode::LeaderNotAvailable => KafkaCode::LEADER_NOT_AVAILABLE,
        ErrorCode::FrameTooLarge => KafkaCode::MESSAGE_TOO_LARGE,
        ErrorCode::UnknownTopicId => KafkaCode::UNKNOWN_TOPIC_ID,
        ErrorCode::RequestTimedOut => KafkaCode::REQUEST_TIMED_OUT,
        ErrorCode::InvalidGroupId => KafkaCode::INVALID_GROUP_ID,
        ErrorCode::MemberIdRequired => KafkaCode::MEMBER_ID_REQUIRED,
        ErrorCode::InconsistentGroupProtocol => KafkaCode::INCONSISTENT_GROUP_PROTOCOL,
        ErrorCode::InvalidSessionTimeout => KafkaCode::INVALID_SESSION_TIMEOUT,
        ErrorCode::NonEmptyGroup => KafkaCode::NON_EMPTY_GROUP,
        ErrorCode::GroupIdNotFound => KafkaCode::GROUP_ID_NOT_FOUND,
        ErrorCode::GroupSubscribedToTopic => KafkaCode::GROUP_SUBSCRIBED_TO_TOPIC,
        ErrorCode::FencedInstanceId => KafkaCode::FENCED_INSTANCE_ID,
        ErrorCode::GroupMaxSizeReached => KafkaCode::GROUP_MAX_SIZE_REACHED,
        ErrorCode::ConcurrentTransactions => KafkaCode::CONCURRENT_TRANSACTIONS,
        ErrorCode::InvalidProducerEpoch => KafkaCode::INVALID_PRODUCER_EPOCH,
        ErrorCode::InvalidProducerIdMapping => KafkaCode::INVALID_PRODUCER_ID_MAPPING,
        ErrorCode::InvalidTransactionTimeout => KafkaCode::INVALID_TRANSACTION_TIMEOUT,
        ErrorCode::OperationNotAttempted => KafkaCode::OPERATION_NOT_ATTEMPTED,
        ErrorCode::OffsetMetadataTooLarge => KafkaCode::OFFSET_METADATA_TOO_LARGE,
        ErrorCode::StaleMemberEpoch => KafkaCode::STALE_MEMBER_EPOCH,
        ErrorCode::FencedMemberEpoch => KafkaCode::FENCED_MEMBER_EPOCH,
        ErrorCode::UnreleasedInstanceId => KafkaCode::UNRELEASED_INSTANCE_ID,
        ErrorCode::UnsupportedAssignor => KafkaCode::UNSUPPORTED_ASSIGNOR,
        ErrorCode::InvalidRegularExpression => KafkaCode::INVALID_REGULAR_EXPRESSION,
        ErrorCode::UnsupportedVersion => KafkaCode::UNSUPPORTED_VERSION,
        ErrorCode::InvalidRecordState => KafkaCode::INVALID_RECORD_STATE,
        ErrorCode::ShareSessionNotFound => KafkaCode::SHARE_SESSION_NOT_FOUND,
        ErrorCode::InvalidShareSessionEpoch => KafkaCode::INVALID_SHARE_SESSION_EPOCH,
        ErrorCode::NotCoordinator => KafkaCode::NOT_COORDINATOR,
        ErrorCode::CoordinatorNotAvailable => KafkaCode::COORDINATOR_NOT_AVAILABLE,
        ErrorCode::ClusterClosed => KafkaCode::BROKER_NOT_AVAILABLE,
        ErrorCode::TopicAuthorizationFailed => KafkaCode::TOPIC_AUTHORIZATION_FAILED,
        ErrorCode::GroupAuthorizationFailed => KafkaCode::GROUP_AUTHORIZATION_FAILED,
        ErrorCode::ClusterAuthorizationFailed => KafkaCode::CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode::TransactionalIdAuthorizationFailed => {
            KafkaCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        }
        ErrorCode::SaslAuthenticationFailed => KafkaCode::SASL_AUTHENTICATION_FAILED,
        ErrorCode::IllegalSaslState => KafkaCode::ILLEGAL_SASL_STATE,
        ErrorCode::UnsupportedSaslMechanism => KafkaCode::UNSUPPORTED_SASL_MECHANISM,
        ErrorCode::UnacceptableCredential => KafkaCode::UNACCEPTABLE_CREDENTIAL,
        ErrorCode::ResourceNotFound => KafkaCode::RESOURCE_NOT_FOUND,
        ErrorCode::DuplicateResource => KafkaCode::DUPLICATE_RESOURCE,
        ErrorCode::SecurityDisabled => KafkaCode::SECURITY_DISABLED,
        ErrorCode::MessageTooLarge => KafkaCode::MESSAGE_TOO_LARGE,
        ErrorCode::InvalidTimestamp => KafkaCode::INVALID_TIMESTAMP,
        ErrorCode::TransactionAbortable => KafkaCode::TRANSACTION_ABORTABLE,
        ErrorCode::ClusterFailed => KafkaCode::KAFKA_STORAGE_ERROR,
    }
}

/// A core error as a Kafka code and a message for the fields that carry one.
pub fn from_cluster(e: &ClusterError) -> (KafkaCode, String) {
    (kafka_code(e.code()), e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_core_code_maps_and_the_spec_pairs_hold() {
        for code in ErrorCode::ALL {
            let _ = kafka_code(code);
        }
        let pairs = [
            (ErrorCode::UnknownTopic, 3),
            (ErrorCode::NotLeaderOrFollower, 6),
            (ErrorCode::NotEnoughReplicas, 19),
            (ErrorCode::OutOfOrderSequence, 45),
            (ErrorCode::ProducerFenced, 90),
            (ErrorCode::IllegalGeneration, 22),
            (ErrorCode::UnknownMember, 25),
            (ErrorCode::RebalanceInProgress, 27),
            (ErrorCode::OffsetOutOfRange, 1),
            (ErrorCode::CorruptBatch, 2),
            (ErrorCode::FrameTooLarge, 10),
            (ErrorCode::InvalidTxnState, 48),
            (ErrorCode::StorageError, 56),
            (ErrorCode::FencedLeaderEpoch, 74),
            (ErrorCode::TopicAlreadyExists, 36),
            (ErrorCode::InvalidPartitions, 37),
            (ErrorCode::InvalidReplicationFactor, 38),
            (ErrorCode::InvalidRequest, 42),
            (ErrorCode::MemberIdRequired, 79),
            (ErrorCode::InconsistentGroupProtocol, 23),
            (ErrorCode::InvalidSessionTimeout, 26),
            (ErrorCode::NonEmptyGroup, 68),
            (ErrorCode::GroupIdNotFound, 69),
            (ErrorCode::GroupSubscribedToTopic, 86),
            (ErrorCode::FencedInstanceId, 82),
            (ErrorCode::InvalidGroupId, 24),
            (ErrorCode::GroupMaxSizeReached, 81),
            (ErrorCode::InvalidProducerEpoch, 47),
            (ErrorCode::InvalidProducerIdMapping, 49),
            (ErrorCode::InvalidTransactionTimeout, 50),
            (ErrorCode::ConcurrentTransactions, 51),
            (ErrorCode::OperationNotAttempted, 55),
            (ErrorCode::TopicAuthorizationFailed, 29),
            (ErrorCode::GroupAuthorizationFailed, 30),
            (ErrorCode::ClusterAuthorizationFailed, 31),
            (ErrorCode::TransactionalIdAuthorizationFailed, 53),
            (ErrorCode::SaslAuthenticationFailed, 58),
            (ErrorCode::IllegalSaslState, 34),
            (ErrorCode::UnsupportedSaslMechanism, 33),
            (ErrorCode::UnacceptableCredential, 93),
            (ErrorCode::ResourceNotFound, 91),
            (ErrorCode::DuplicateResource, 92),
            (ErrorCode::SecurityDisabled, 54),
            (ErrorCode::MessageTooLarge, 10),
            (ErrorCode::InvalidTimestamp, 32),
            (ErrorCode::TransactionAbortable, 120),
        ];
        for (core, kafka) in pairs {
            assert_eq!(kafka_code(core), KafkaCode(kafka), "{core:?}");
        }
        let errors: BTreeSet<i16> = ErrorCode::ALL.iter().map(|c| kafka_code(*c).0).collect();
        assert!(!errors.contains(&0), "no core error may map to NONE");
    }
}
