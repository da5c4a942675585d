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
    /// A malformed request: empty or oversized ids, a topic that does not
    /// exist in a join, a negative offset, a conflicting assignor.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
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

impl GroupError {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            GroupError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            GroupError::UnknownMember(_) => ErrorCode::UnknownMember,
            GroupError::IllegalGeneration { .. } => ErrorCode::IllegalGeneration,
            GroupError::RebalanceInProgress { .. } => ErrorCode::RebalanceInProgress,
            GroupError::NotPartitionOwner { .. } => ErrorCode::NotPartitionOwner,
            GroupError::UnknownTopic(_) => ErrorCode::UnknownTopic,
            GroupError::UnknownPartition { .. } => ErrorCode::UnknownPartition,
            GroupError::CorruptOffsetsLog { .. } => ErrorCode::StorageError,
            GroupError::Log(e) => e.code(),
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
        let io = GroupError::Log(LogError::from(mk_log::StorageError::io(
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
