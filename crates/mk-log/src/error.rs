//! The error type of mk-log, and `StorageError`, the one type for failures
//! of the disk that every layer above carries unchanged. Every variant maps
//! to one stable `ErrorCode`.

use mk_core::ErrorCode;
use std::path::{Path, PathBuf};

/// A failure of storage: the operating system refused an operation on a
/// file, or files cannot be used as they are. Always STORAGE_ERROR, never a
/// client error; how far it reaches (one write, one partition, the whole
/// broker) is decided above, by what failed and where. mk-log, mk-replication,
/// mk-txn and mk-cluster wrap this same type, so the path and the I/O cause
/// stay typed all the way up instead of being flattened into text.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The files of a store cannot be used: corrupt or unparsable contents,
    /// non-contiguous segments, a name that does not parse, a directory held
    /// by another process.
    #[error("storage error in {path}: {reason}")]
    Unusable { path: PathBuf, reason: String },
    /// The operating system refused an operation on a file.
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl StorageError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StorageError::Io {
            path: path.into(),
            source,
        }
    }

    pub fn unusable(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        StorageError::Unusable {
            path: path.into(),
            reason: reason.into(),
        }
    }

    /// The file or directory concerned.
    pub fn path(&self) -> &Path {
        match self {
            StorageError::Unusable { path, .. } | StorageError::Io { path, .. } => path,
        }
    }

    /// The operating system's error, when that is what happened.
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            StorageError::Io { source, .. } => Some(source),
            StorageError::Unusable { .. } => None,
        }
    }

    /// The disk or the quota is full (ENOSPC, EDQUOT): writes work again
    /// once space is freed.
    pub fn is_disk_full(&self) -> bool {
        self.io_error().is_some_and(|e| {
            matches!(
                e.kind(),
                std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
            )
        })
    }

    /// The process or the system ran out of file descriptors (EMFILE,
    /// ENFILE; the same numbers on Linux and the BSDs).
    pub fn is_out_of_files(&self) -> bool {
        const ENFILE: i32 = 23;
        const EMFILE: i32 = 24;
        self.io_error()
            .and_then(std::io::Error::raw_os_error)
            .is_some_and(|c| c == EMFILE || c == ENFILE)
    }

    /// A failure that says nothing about the stored data: a resource (disk
    /// space, file descriptors) was missing, the operation had no effect
    /// that must be undone, and it can be retried once the resource is
    /// back. Everything else is damage or a failing disk.
    pub fn is_transient(&self) -> bool {
        self.is_disk_full() || self.is_out_of_files()
    }
}

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
            LogError::CorruptBatch(_) => ErrorCode::CorruptBatch,
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
