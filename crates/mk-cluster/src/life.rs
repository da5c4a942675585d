//! The cluster's life as a state (Running -> Closing -> Closed, or Running
//! -> Failed) and the data-directory lock that keeps a second process out.

use crate::error::{ClusterError, Result};
use mk_storage::StorageError;
use std::fs::{File, OpenOptions};
use std::path::Path;
use std::sync::Mutex;

/// Where the cluster is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LifecycleState {
    Running,
    Closing,
    Closed,
    /// Terminal: an I/O failure (or an injected one) happened; the original
    /// cause is kept for every later error.
    Failed(String),
}

#[derive(Debug)]
pub(crate) struct Life {
    state: Mutex<LifecycleState>,
    /// Fired when the state becomes Failed.
    failed: tokio::sync::Notify,
}

impl Life {
    pub fn new() -> Self {
        Self {
            state: Mutex::new(LifecycleState::Running),
            failed: tokio::sync::Notify::new(),
        }
    }

    /// Resolves with the cause once the cluster is Failed.
    pub async fn until_failed(&self) -> String {
        loop {
            let notified = self.failed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let LifecycleState::Failed(cause) = self.get() {
                return cause;
            }
            notified.await;
        }
    }

    pub fn get(&self) -> LifecycleState {
        crate::locks::plain(&self.state).clone()
    }

    /// Ok only while Running.
    pub fn check(&self) -> Result<()> {
        match &*crate::locks::plain(&self.state) {
            LifecycleState::Running => Ok(()),
            LifecycleState::Closing | LifecycleState::Closed => Err(ClusterError::Closed),
            LifecycleState::Failed(cause) => Err(ClusterError::Failed(cause.clone())),
        }
    }

    /// Moves to Failed (unless already Failed or Closed); returns the error
    /// every later call will see.
    pub fn fail(&self, cause: String) -> ClusterError {
        let mut s = crate::locks::plain(&self.state);
        match &*s {
            LifecycleState::Failed(first) => ClusterError::Failed(first.clone()),
            LifecycleState::Closed => ClusterError::Closed,
            _ => {
                tracing::error!(cause = %cause, "cluster failed");
                *s = LifecycleState::Failed(cause.clone());
                self.failed.notify_waiters();
                ClusterError::Failed(cause)
            }
        }
    }

    /// Running -> Closing; false if the cluster is not running (a second
    /// close, or a failed cluster).
    pub fn begin_close(&self) -> bool {
        let mut s = crate::locks::plain(&self.state);
        if *s == LifecycleState::Running {
            *s = LifecycleState::Closing;
            true
        } else {
            false
        }
    }

    /// Closing -> Failed when closing itself hit an I/O failure.
    pub fn fail_from_closing(&self, cause: String) -> ClusterError {
        let mut s = crate::locks::plain(&self.state);
        *s = LifecycleState::Failed(cause.clone());
        self.failed.notify_waiters();
        ClusterError::Failed(cause)
    }

    pub fn set(&self, state: LifecycleState) {
        *crate::locks::plain(&self.state) = state;
    }
}

/// An exclusive lock on `<data_dir>/.lock`, held for the cluster's life. The
/// operating system releases it when the process dies, so a crash never
/// leaves a stale lock behind.
#[derive(Debug)]
pub(crate) struct DirLock {
    _file: File,
}

impl DirLock {
    pub fn acquire(data_dir: &Path) -> Result<Self> {
        let path = data_dir.join(".lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| StorageError::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => Ok(Self { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(StorageError::unusable(
                &path,
                format!(
                    "data directory {} is in use by another process (this lock file is held)",
                    data_dir.display()
                ),
            )
            .into()),
            Err(std::fs::TryLockError::Error(e)) => Err(StorageError::io(&path, e).into()),
        }
    }
}
