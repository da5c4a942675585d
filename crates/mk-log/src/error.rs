//! The error type of mk-log. Every variant maps to one stable `ErrorCode`;
//! failures of the disk arrive as mk-storage's `StorageError`, carried
//! unchanged.

use mk_core::ErrorCode;
use mk_storage::StorageError;
use std::path::PathBuf;

/// Why one record of a batch was refused (Kafka's `RecordError`): its
/// position in the batch and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    pub batch_index: u32,
    pub message: String,
}

/// Errors of the log layer.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// A batch or record violates the record model.
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    /// Records of a batch broke a rule of their topic (Kafka's
    /// `RecordValidationException`): the whole batch is refused, and each
    /// offending record is named. The message is Kafka's, as Kafka's
    /// Produce answers it.
    #[error("{message}")]
    InvalidRecords {
        message: String,
        records: Vec<RecordError>,
    },
    /// MKB1 bytes could not be decoded.
    #[error("corrupt batch: {0}")]
    CorruptBatch(String),
    /// A compressed records section that would decompress to more than the
    /// caller's `limit` bytes (a "bomb", or simply too big): corrupt to the
    /// log, kept apart from damaged data so that a protocol can answer it
    /// as too large.
    #[error("corrupt batch: the records decompress to more than {limit} bytes")]
    DecompressedTooLarge { limit: usize },
    /// An index file is not a well-formed, monotonic index.
    #[error("corrupt index: {0}")]
    CorruptIndex(String),
    /// An offset outside `[log_start_offset, log_end_offset]`.
    #[error("offset {offset} is out of range [{log_start}, {log_end}]")]
    OffsetOutOfRange {
        offset: i64,
        log_start: i64,
        log_end: i64,
    },
    /// A request-class argument error (e.g. a negative retention).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// A failure of the disk or of files that cannot be trusted (corrupt
    /// closed segment, non-contiguous segments, unparsable names).
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl LogError {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            LogError::InvalidRecord(_) | LogError::InvalidRecords { .. } => {
                ErrorCode::InvalidRecord
            }
            LogError::CorruptBatch(_) | LogError::DecompressedTooLarge { .. } => {
                ErrorCode::CorruptBatch
            }
            LogError::CorruptIndex(_) => ErrorCode::CorruptIndex,
            LogError::OffsetOutOfRange { .. } => ErrorCode::OffsetOutOfRange,
            LogError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            LogError::Storage(_) => ErrorCode::StorageError,
        }
    }

    /// True for failures of the disk (as opposed to bad input): never a
    /// client error; see [`StorageError::is_transient`] for the ones that
    /// leave nothing behind.
    pub fn is_storage_failure(&self) -> bool {
        matches!(self, LogError::Storage(_))
    }

    /// The records a batch was refused for, one entry each; empty for
    /// every other error.
    pub fn record_errors(&self) -> &[RecordError] {
        match self {
            LogError::InvalidRecords { records, .. } => records,
            _ => &[],
        }
    }

    /// The storage failure inside, if this is one.
    pub fn storage_error(&self) -> Option<&StorageError> {
        match self {
            LogError::Storage(s) => Some(s),
            _ => None,
        }
    }

    /// A transient storage failure (see [`StorageError::is_transient`]).
    pub fn is_transient(&self) -> bool {
        self.storage_error().is_some_and(StorageError::is_transient)
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        LogError::Storage(StorageError::io(path, source))
    }

    pub(crate) fn storage(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        LogError::Storage(StorageError::unusable(path, reason))
    }
}

/// Result alias of the log layer.
pub type Result<T, E = LogError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn storage_failures_keep_their_cause_and_messages() {
        let io = LogError::io("/d/x.log", std::io::Error::other("disk on fire"));
        assert_eq!(io.code(), ErrorCode::StorageError);
        assert!(io.is_storage_failure());
        assert_eq!(io.to_string(), "I/O error on /d/x.log: disk on fire");
        let LogError::Storage(cause) = &io else {
            panic!("{io:?}")
        };
        assert_eq!(cause.path(), Path::new("/d/x.log"));
        assert_eq!(
            cause.io_error().map(std::io::Error::kind),
            Some(std::io::ErrorKind::Other)
        );
        let bad = LogError::storage("/d", "segments are not contiguous");
        assert_eq!(
            bad.to_string(),
            "storage error in /d: segments are not contiguous"
        );
        assert!(bad.is_storage_failure());
        assert!(!LogError::CorruptBatch("x".into()).is_storage_failure());
    }
}
