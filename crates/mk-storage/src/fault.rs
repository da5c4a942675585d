//! The fault-injection seam of the storage layer. Every write and fsync of
//! every store of the broker (segments, indexes, checkpoints, the small
//! stores written with `fsutil::write_atomic_with`, the transaction journal)
//! passes through one `FaultInjector`, which counts those sites and can make
//! any one of them fail: with ENOSPC (and every later write too, as a full
//! disk does), with EIO, or as a torn write (half the bytes, then EIO).
//! Tests also fail the Nth write, fail fsyncs, or "crash" the process at a
//! chosen step of a multi-step file operation. Production code carries an
//! injector that never fires.

use crate::error::StorageError;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicU64, Ordering};

/// What an injected fault does at its site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// The disk is full: this write and every later one fail with ENOSPC
    /// until `clear` (fsyncs still succeed, as on a full local disk).
    NoSpace,
    /// One I/O error (EIO) at this site.
    Io,
    /// At a write: half the bytes reach the file, then EIO. At an fsync:
    /// EIO.
    Torn,
}

impl Fault {
    pub const ALL: [Fault; 3] = [Fault::NoSpace, Fault::Io, Fault::Torn];

    fn code(self) -> u8 {
        match self {
            Fault::NoSpace => 1,
            Fault::Io => 2,
            Fault::Torn => 3,
        }
    }

    fn from_code(c: u8) -> Option<Self> {
        match c {
            1 => Some(Fault::NoSpace),
            2 => Some(Fault::Io),
            3 => Some(Fault::Torn),
            _ => None,
        }
    }
}

/// What a write site must do, as decided by the injector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteGate {
    /// Write everything.
    Whole,
    /// Write only the first `n` bytes, then fail with [`torn_error`].
    Torn(usize),
}

/// Shared switches consulted before writes, fsyncs and swap steps.
#[derive(Debug)]
pub struct FaultInjector {
    writes_before_failure: AtomicI64,
    fail_syncs: AtomicBool,
    crash_at_step: AtomicI64,
    /// Write and fsync sites passed so far.
    sites: AtomicU64,
    /// The site index to fail, -1 for none.
    fail_site: AtomicI64,
    fault: AtomicU8,
    /// Set once a `NoSpace` fault fired: every later write fails too.
    disk_full: AtomicBool,
    /// A failed invariant planned at the next write under a path that
    /// contains this text (`fail_invariant_at_write_under`).
    invariant_under: std::sync::Mutex<Option<String>>,
    /// Mirrors `invariant_under.is_some()`, so writes check it without a lock.
    invariant_planned: AtomicBool,
}

impl FaultInjector {
    /// An injector with nothing planned.
    const fn idle() -> FaultInjector {
        FaultInjector {
            writes_before_failure: AtomicI64::new(-1),
            fail_syncs: AtomicBool::new(false),
            crash_at_step: AtomicI64::new(-1),
            sites: AtomicU64::new(0),
            fail_site: AtomicI64::new(-1),
            fault: AtomicU8::new(0),
            disk_full: AtomicBool::new(false),
            invariant_under: std::sync::Mutex::new(None),
            invariant_planned: AtomicBool::new(false),
        }
    }
}

impl Default for FaultInjector {
    fn default() -> Self {
        Self::idle()
    }
}

/// An injector that never fires, for callers that have none of their own.
pub(crate) static NEVER: FaultInjector = FaultInjector::idle();

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

    /// How many write and fsync sites have been passed since this injector
    /// was made. A run that passed N sites can be repeated with
    /// `inject_at(i, ..)` for every `i < N`.
    pub fn sites_passed(&self) -> u64 {
        self.sites.load(Ordering::SeqCst)
    }

    /// Makes the site with index `site` (counted from the injector's
    /// creation) fail with `fault`.
    pub fn inject_at(&self, site: u64, fault: Fault) {
        self.fault.store(fault.code(), Ordering::SeqCst);
        self.fail_site
            .store(i64::try_from(site).unwrap_or(i64::MAX), Ordering::SeqCst);
    }

    /// Makes every write fail with ENOSPC from now on (a full disk), or
    /// gives the space back.
    pub fn disk_full(&self, on: bool) {
        self.disk_full.store(on, Ordering::SeqCst);
    }

    /// Makes the next write to a file whose path contains `path_part` fail
    /// an invariant: it panics, as a failed `assert!` in the code that
    /// wrote it would, once. Tests use it to check that a failure of the
    /// code (not of the disk) stays with the partition or store it hit.
    pub fn fail_invariant_at_write_under(&self, path_part: &str) {
        *self
            .invariant_under
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(path_part.to_string());
        self.invariant_planned.store(true, Ordering::SeqCst);
    }

    /// Panics if a failed invariant is planned for a write to `path`.
    fn check_invariant_at(&self, path: &Path) {
        if !self.invariant_planned.load(Ordering::Relaxed) {
            return;
        }
        let mut planned = self
            .invariant_under
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if planned
            .as_deref()
            .is_some_and(|part| path.to_string_lossy().contains(part))
        {
            *planned = None;
            self.invariant_planned.store(false, Ordering::SeqCst);
            drop(planned);
            panic!(
                "injected invariant failure at a write to {}",
                path.display()
            );
        }
    }

    /// Turns every fault off.
    pub fn clear(&self) {
        self.writes_before_failure.store(-1, Ordering::SeqCst);
        self.fail_syncs.store(false, Ordering::SeqCst);
        self.crash_at_step.store(-1, Ordering::SeqCst);
        self.fail_site.store(-1, Ordering::SeqCst);
        self.disk_full.store(false, Ordering::SeqCst);
        *self
            .invariant_under
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        self.invariant_planned.store(false, Ordering::SeqCst);
    }

    /// Counts a site; the fault planned for it, if any.
    fn pass_site(&self) -> Option<Fault> {
        let index = self.sites.fetch_add(1, Ordering::SeqCst);
        let planned = self.fail_site.load(Ordering::SeqCst);
        if planned >= 0 && planned as u64 == index {
            let fault = Fault::from_code(self.fault.load(Ordering::SeqCst));
            if fault == Some(Fault::NoSpace) {
                self.disk_full.store(true, Ordering::SeqCst);
            }
            return fault;
        }
        None
    }

    /// Consulted before writing `len` bytes to `path` at a site that
    /// `fail_writes_after` also counts: the appends of a log and its two
    /// checkpoints (what that counter always counted, so tests written
    /// against it keep their meaning).
    pub fn before_write_of(&self, path: &Path, len: usize) -> Result<WriteGate, StorageError> {
        let gate = self.site_write_of(path, len)?;
        if gate != WriteGate::Whole {
            return Ok(gate);
        }
        let left = self.writes_before_failure.load(Ordering::SeqCst);
        if left < 0 {
            return Ok(WriteGate::Whole);
        }
        if left == 0 {
            return Err(injected_io(path, "write"));
        }
        self.writes_before_failure.fetch_sub(1, Ordering::SeqCst);
        Ok(WriteGate::Whole)
    }

    /// Like [`before_write_of`](Self::before_write_of) for a write whose
    /// size does not matter: any fault makes it fail.
    pub fn before_write(&self, path: &Path) -> Result<(), StorageError> {
        match self.before_write_of(path, 0)? {
            WriteGate::Whole => Ok(()),
            WriteGate::Torn(_) => Err(injected_io(path, "write")),
        }
    }

    /// Consulted before writing `len` bytes to `path` at any other write
    /// site (a small store, an index file, a new segment file, the
    /// journal): only `inject_at` and `disk_full` reach it.
    pub fn site_write_of(&self, path: &Path, len: usize) -> Result<WriteGate, StorageError> {
        self.check_invariant_at(path);
        let planned = self.pass_site();
        if self.disk_full.load(Ordering::SeqCst) {
            return Err(no_space(path));
        }
        match planned {
            Some(Fault::Io) => Err(injected_io(path, "write")),
            Some(Fault::Torn) => Ok(WriteGate::Torn(len / 2)),
            Some(Fault::NoSpace) | None => Ok(WriteGate::Whole),
        }
    }

    /// [`site_write_of`](Self::site_write_of) for a write whose size does
    /// not matter (creating a file, a rename).
    pub fn site_write(&self, path: &Path) -> Result<(), StorageError> {
        match self.site_write_of(path, 0)? {
            WriteGate::Whole => Ok(()),
            WriteGate::Torn(_) => Err(injected_io(path, "write")),
        }
    }

    /// Consulted before an fsync of a log's files or directory, which
    /// `fail_syncs` also fails.
    pub fn before_sync(&self, path: &Path) -> Result<(), StorageError> {
        self.site_sync(path)?;
        if self.fail_syncs.load(Ordering::SeqCst) {
            return Err(injected_io(path, "fsync"));
        }
        Ok(())
    }

    /// Consulted before any other fsync (a small store, the journal): only
    /// `inject_at` reaches it.
    pub fn site_sync(&self, path: &Path) -> Result<(), StorageError> {
        match self.pass_site() {
            Some(Fault::Io | Fault::Torn) => Err(injected_io(path, "fsync")),
            Some(Fault::NoSpace) | None => Ok(()),
        }
    }

    pub fn at_step(&self, step: u32, path: &Path) -> Result<(), StorageError> {
        if self.crash_at_step.load(Ordering::SeqCst) == i64::from(step) {
            return Err(StorageError::io(
                path,
                std::io::Error::other(format!("injected crash before step {step} failure")),
            ));
        }
        Ok(())
    }
}

/// The error a torn write reports after writing its part.
pub fn torn_error(path: &Path) -> StorageError {
    injected_io(path, "torn write")
}

fn injected_io(path: &Path, what: &str) -> StorageError {
    StorageError::io(
        path,
        std::io::Error::other(format!("injected {what} failure")),
    )
}

fn no_space(path: &Path) -> StorageError {
    StorageError::io(path, std::io::Error::from(std::io::ErrorKind::StorageFull))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_are_counted_and_the_planned_one_fails_as_asked() {
        let f = FaultInjector::new();
        let p = Path::new("/d/x");
        f.before_write(p).unwrap();
        f.before_sync(p).unwrap();
        assert_eq!(f.sites_passed(), 2);
        f.inject_at(3, Fault::Torn);
        assert_eq!(f.before_write_of(p, 10).unwrap(), WriteGate::Whole);
        assert_eq!(f.before_write_of(p, 10).unwrap(), WriteGate::Torn(5));
        assert_eq!(
            f.before_write_of(p, 10).unwrap(),
            WriteGate::Whole,
            "one-shot"
        );
        f.inject_at(5, Fault::Io);
        assert!(f.before_sync(p).is_err());
        f.before_sync(p).unwrap();
        f.inject_at(8, Fault::NoSpace);
        f.before_write(p).unwrap();
        let e = f.before_write(p).unwrap_err();
        assert!(e.is_disk_full(), "{e}");
        assert!(
            f.before_write(p).unwrap_err().is_disk_full(),
            "a full disk stays full"
        );
        f.before_sync(p).unwrap();
        f.clear();
        f.before_write(p).unwrap();
    }
}
