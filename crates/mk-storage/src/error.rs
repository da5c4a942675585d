//! `StorageError`, the one type for failures of the disk that every layer
//! above carries unchanged.

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
