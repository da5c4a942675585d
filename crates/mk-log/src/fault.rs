//! The fault-injection seam of the storage layer. Tests (and the cluster's
//! failure injector) use it to fail the Nth write, fail fsyncs, or "crash"
//! the process at a chosen step of a multi-step file operation. Production
//! code carries an injector that never fires.

use crate::error::{LogError, Result};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// Shared switches consulted before writes, fsyncs and swap steps.
#[derive(Debug)]
pub struct FaultInjector {
    writes_before_failure: AtomicI64,
    fail_syncs: AtomicBool,
    crash_at_step: AtomicI64,
}

impl Default for FaultInjector {
    fn default() -> Self {
        Self {
            writes_before_failure: AtomicI64::new(-1),
            fail_syncs: AtomicBool::new(false),
            crash_at_step: AtomicI64::new(-1),
        }
    }
}

impl FaultInjector {
    pub fn new() -> Self {
        Self::default()
    }

    /// Lets `n` more writes succeed, then fails every later one.
    pub fn fail_writes_after(&self, n: u64) {
        self.writes_before_failure
            .store(i64::try_from(n).unwrap_or(i64::MAX), Ordering::SeqCst);
    }

    /// Makes every fsync fail (or succeed again).
    pub fn fail_syncs(&self, on: bool) {
        self.fail_syncs.store(on, Ordering::SeqCst);
    }

    /// Stops a crash-safe multi-step operation (the compaction swap) right
    /// before step `step` (0-based), as if the process died there.
    pub fn crash_at_step(&self, step: u32) {
        self.crash_at_step.store(i64::from(step), Ordering::SeqCst);
    }

    /// Turns every fault off.
    pub fn clear(&self) {
        self.writes_before_failure.store(-1, Ordering::SeqCst);
        self.fail_syncs.store(false, Ordering::SeqCst);
        self.crash_at_step.store(-1, Ordering::SeqCst);
    }

    pub(crate) fn before_write(&self, path: &Path) -> Result<()> {
        let left = self.writes_before_failure.load(Ordering::SeqCst);
        if left < 0 {
            return Ok(());
        }
        if left == 0 {
            return Err(LogError::io(path, injected("write")));
        }
        self.writes_before_failure.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }

    pub(crate) fn before_sync(&self, path: &Path) -> Result<()> {
        if self.fail_syncs.load(Ordering::SeqCst) {
            return Err(LogError::io(path, injected("fsync")));
        }
        Ok(())
    }

    pub(crate) fn at_step(&self, step: u32, path: &Path) -> Result<()> {
        if self.crash_at_step.load(Ordering::SeqCst) == i64::from(step) {
            return Err(LogError::io(
                path,
                injected(&format!("crash before step {step}")),
            ));
        }
        Ok(())
    }
}

fn injected(what: &str) -> std::io::Error {
    std::io::Error::other(format!("injected {what} failure"))
}
