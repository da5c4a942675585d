//! The error type of mk-log. Every variant maps to one stable `ErrorCode`.

use mk_core::ErrorCode;
use std::path::PathBuf;

/// Errors of the log layer.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// A batch or record violates the record model.
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    /// MKB1 bytes could not be decoded.
    #[error("corrupt batch: {0}")]
    CorruptBatch(String),
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
    /// The files of a log cannot be trusted (corrupt closed segment,
    /// non-contiguous segments, unparsable names).
    #[error("storage error in {path}: {reason}")]
    Storage { path: PathBuf, reason: String },
    /// The operating system refused an operation on a log file.
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl LogError {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            LogError::InvalidRecord(_) => ErrorCode::InvalidRecord,
            LogError::CorruptBatch(_) => ErrorCode::CorruptBatch,
            LogError::CorruptIndex(_) => ErrorCode::CorruptIndex,
            LogError::OffsetOutOfRange { .. } => ErrorCode::OffsetOutOfRange,
            LogError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            LogError::Storage { .. } | LogError::Io { .. } => ErrorCode::StorageError,
        }
    }

    /// True for failures of the disk (as opposed to bad input): the caller
    /// must treat these as fatal for the broker, never as a client error.
    pub fn is_storage_failure(&self) -> bool {
        matches!(self, LogError::Storage { .. } | LogError::Io { .. })
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        LogError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn storage(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        LogError::Storage {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

/// Result alias of the log layer.
pub type Result<T, E = LogError> = std::result::Result<T, E>;
