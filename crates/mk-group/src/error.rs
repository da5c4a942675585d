//! The error type of mk-group. Every variant maps to one stable `ErrorCode`;
//! failures of the disk stay distinguishable from client errors.

use crate::codec::CodecError;
use crate::group::GroupState;
use mk_core::{ErrorCode, TopicPartition};
use mk_log::LogError;
use std::path::PathBuf;

/// Errors of the group coordinator.
#[derive(Debug, thiserror::Error)]
pub enum GroupError {
    /// A malformed request: empty or oversized member ids, a topic that does
    /// not exist in a coordinator-assigned join, a negative offset, a
    /// conflicting assignor.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// An empty or oversized group id.
    #[error("invalid group id: {0}")]
    InvalidGroupId(String),
    /// JoinGroup v4+: a new member must join again with the id the
    /// coordinator made for it (carried here).
    #[error(
        "member id required: join group {group:?} again with the member id {member_id:?} made by the coordinator"
    )]
    MemberIdRequired { group: String, member_id: String },
    /// The member's protocol type or protocols do not fit the group's, or a
    /// Kafka-protocol member and a coordinator-assigned member meet.
    #[error("inconsistent group protocol: {0}")]
    InconsistentGroupProtocol(String),
    /// The session timeout is outside the broker's bounds.
    #[error("session timeout {given} ms is outside the allowed range [{min}, {max}] ms")]
    InvalidSessionTimeout { given: i64, min: i64, max: i64 },
    /// Only a group without members can be deleted.
    #[error("group {group:?} has {members} member(s); only an empty group can be deleted")]
    NonEmptyGroup { group: String, members: usize },
    /// The group is unknown to the coordinator.
    #[error("group {0:?} does not exist")]
    GroupIdNotFound(String),
    /// Offsets of a topic a member subscribes to cannot be deleted.
    #[error(
        "a member of group {group:?} subscribes to topic {topic:?}; its offsets cannot be deleted"
    )]
    GroupSubscribedToTopic { group: String, topic: String },
    /// Another member id now holds this static member's instance id.
    #[error(
        "member {member:?} of group {group:?} was replaced: instance id {instance:?} now belongs to {current:?}"
    )]
    FencedInstanceId {
        group: String,
        instance: String,
        member: String,
        current: String,
    },
    /// The group has as many members (and members-to-be) as it may have.
    #[error("group {group:?} already has its maximum of {max} members")]
    GroupMaxSizeReached { group: String, max: usize },
    /// KIP-848: the request's member epoch is not the member's current one
    /// (an OffsetCommit or OffsetFetch of a consumer-protocol member).
    #[error(
        "member {member:?} of group {group:?} sent member epoch {given}; its epoch is {current}"
    )]
    StaleMemberEpoch {
        group: String,
        member: String,
        given: i32,
        current: i32,
    },
    /// KIP-848: a heartbeat's member epoch is ahead of or behind the
    /// coordinator's; the member must give up its partitions and rejoin.
    #[error("fenced member epoch: {0}")]
    FencedMemberEpoch(String),
    /// KIP-848: a static member joins while another member id still holds
    /// its instance id (that member has not left).
    #[error("unreleased instance id: {0}")]
    UnreleasedInstanceId(String),
    /// KIP-848: a `server_assignor` the coordinator does not have.
    #[error("unsupported assignor: {0}")]
    UnsupportedAssignor(String),
    /// KIP-848: a subscription's regular expression does not compile.
    #[error("invalid regular expression: {0}")]
    InvalidRegularExpression(String),
    /// A request version the operation does not accept from this member
    /// (an OffsetCommit below v9 from a KIP-848 member).
    #[error("unsupported version: {0}")]
    UnsupportedVersion(String),
    /// KIP-932: an acknowledgement of records the member does not hold
    /// (not acquired, acquired by another member, or already acknowledged).
    #[error("invalid record state: {0}")]
    InvalidRecordState(String),
    /// KIP-932: a share fetch or acknowledge names a share session the
    /// coordinator does not have.
    #[error("share session not found: {0}")]
    ShareSessionNotFound(String),
    /// KIP-932: a share session epoch other than the next one.
    #[error("invalid share session epoch: {0}")]
    InvalidShareSessionEpoch(String),
    /// A group config that does not exist, or a value it does not take.
    #[error("invalid config: {0}")]
    InvalidConfig(String),
    /// The coordinator went away before a waiting request was answered.
    #[error("closed: {0}")]
    Closed(String),
    /// The group, or the member within it, is unknown to the coordinator.
    #[error("unknown member: {0}")]
    UnknownMember(String),
    /// The request carries a generation other than the group's current one.
    #[error(
        "generation {given} of group {group:?} is {}; current is {current}",
        if given < current { "stale" } else { "ahead of the coordinator" }
    )]
    IllegalGeneration {
        group: String,
        given: i32,
        current: i32,
    },
    /// The group is not Stable, so it has no assignment to act on.
    #[error("group {group:?} is {state}, not Stable; rejoin to get an assignment")]
    RebalanceInProgress { group: String, state: GroupState },
    /// A member committed an offset for a partition it was not assigned.
    #[error(
        "member {member:?} of group {group:?} does not own {partition} in generation {generation}"
    )]
    NotPartitionOwner {
        group: String,
        member: String,
        generation: i32,
        partition: TopicPartition,
    },
    /// A commit's metadata string is longer than the coordinator allows.
    #[error("the metadata committed for {partition} is longer than {max} characters")]
    OffsetMetadataTooLarge {
        partition: TopicPartition,
        max: usize,
    },
    /// A plain commit named a topic that does not exist.
    #[error("unknown topic: {0:?}")]
    UnknownTopic(String),
    /// A plain commit named a partition its topic does not have.
    #[error("unknown partition: {partition} (topic has {partitions} partitions)")]
    UnknownPartition {
        partition: TopicPartition,
        partitions: u32,
    },
    /// A record of the `__consumer_offsets` log cannot be interpreted. The
    /// store is never silently reset; the broker must fail loudly.
    #[error("corrupt record at offset {offset} of the offsets log in {path}: {reason}")]
    CorruptOffsetsLog {
        path: PathBuf,
        offset: i64,
        reason: CodecError,
    },
    /// The offsets log refused an operation.
    #[error(transparent)]
    Log(#[from] LogError),
}

/// INVALID_REQUEST with `msg` (Kafka's wording where it has one).
pub(crate) fn invalid(msg: impl Into<String>) -> GroupError {
    GroupError::InvalidRequest(msg.into())
}

impl GroupError {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            GroupError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            GroupError::InvalidGroupId(_) => ErrorCode::InvalidGroupId,
            GroupError::MemberIdRequired { .. } => ErrorCode::MemberIdRequired,
            GroupError::InconsistentGroupProtocol(_) => ErrorCode::InconsistentGroupProtocol,
            GroupError::InvalidSessionTimeout { .. } => ErrorCode::InvalidSessionTimeout,
            GroupError::NonEmptyGroup { .. } => ErrorCode::NonEmptyGroup,
            GroupError::GroupIdNotFound(_) => ErrorCode::GroupIdNotFound,
            GroupError::GroupSubscribedToTopic { .. } => ErrorCode::GroupSubscribedToTopic,
            GroupError::FencedInstanceId { .. } => ErrorCode::FencedInstanceId,
            GroupError::GroupMaxSizeReached { .. } => ErrorCode::GroupMaxSizeReached,
            GroupError::StaleMemberEpoch { .. } => ErrorCode::StaleMemberEpoch,
            GroupError::FencedMemberEpoch(_) => ErrorCode::FencedMemberEpoch,
            GroupError::UnreleasedInstanceId(_) => ErrorCode::UnreleasedInstanceId,
            GroupError::UnsupportedAssignor(_) => ErrorCode::UnsupportedAssignor,
            GroupError::InvalidRegularExpression(_) => ErrorCode::InvalidRegularExpression,
            GroupError::UnsupportedVersion(_) => ErrorCode::UnsupportedVersion,
            GroupError::InvalidRecordState(_) => ErrorCode::InvalidRecordState,
            GroupError::ShareSessionNotFound(_) => ErrorCode::ShareSessionNotFound,
            GroupError::InvalidShareSessionEpoch(_) => ErrorCode::InvalidShareSessionEpoch,
            GroupError::InvalidConfig(_) => ErrorCode::InvalidConfig,
            GroupError::Closed(_) => ErrorCode::ClusterClosed,
            GroupError::UnknownMember(_) => ErrorCode::UnknownMember,
            GroupError::IllegalGeneration { .. } => ErrorCode::IllegalGeneration,
            GroupError::RebalanceInProgress { .. } => ErrorCode::RebalanceInProgress,
            GroupError::NotPartitionOwner { .. } => ErrorCode::NotPartitionOwner,
            GroupError::OffsetMetadataTooLarge { .. } => ErrorCode::OffsetMetadataTooLarge,
            GroupError::UnknownTopic(_) => ErrorCode::UnknownTopic,
            GroupError::UnknownPartition { .. } => ErrorCode::UnknownPartition,
            GroupError::CorruptOffsetsLog { .. } => ErrorCode::StorageError,
            GroupError::Log(e) => e.code(),
        }
    }

    /// The member id a MEMBER_ID_REQUIRED answer carries.
    pub fn member_id_required(&self) -> Option<&str> {
        match self {
            GroupError::MemberIdRequired { member_id, .. } => Some(member_id),
            _ => None,
        }
    }

    /// True for failures of the disk (as opposed to bad input): the caller
    /// must treat these as fatal for the broker, never as a client error.
    pub fn is_storage_failure(&self) -> bool {
        match self {
            GroupError::CorruptOffsetsLog { .. } => true,
            GroupError::Log(e) => e.is_storage_failure(),
            _ => false,
        }
    }
}

/// Result alias of the group layer.
pub type Result<T, E = GroupError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn illegal_generation_names_expected_and_actual() {
        let stale = GroupError::IllegalGeneration {
            group: "g".into(),
            given: 3,
            current: 4,
        };
        assert_eq!(
            stale.to_string(),
            "generation 3 of group \"g\" is stale; current is 4"
        );
        let future = GroupError::IllegalGeneration {
            group: "g".into(),
            given: 9,
            current: 4,
        };
        assert_eq!(
            future.to_string(),
            "generation 9 of group \"g\" is ahead of the coordinator; current is 4"
        );
        assert_eq!(stale.code(), ErrorCode::IllegalGeneration);
    }

    #[test]
    fn only_disk_failures_are_storage_failures() {
        let io = GroupError::Log(LogError::from(mk_storage::StorageError::io(
            "x",
            std::io::Error::other("boom"),
        )));
        assert!(io.is_storage_failure());
        assert_eq!(io.code(), ErrorCode::StorageError);
        let corrupt = GroupError::CorruptOffsetsLog {
            path: "x".into(),
            offset: 7,
            reason: CodecError::NoKey,
        };
        assert!(corrupt.is_storage_failure());
        assert_eq!(corrupt.code(), ErrorCode::StorageError);
        let client = GroupError::Log(LogError::InvalidRecord("too big".into()));
        assert!(!client.is_storage_failure());
        assert!(!GroupError::InvalidRequest("x".into()).is_storage_failure());
        assert!(!GroupError::UnknownMember("x".into()).is_storage_failure());
    }
}
