//! Small durable-file helpers shared by every store of the broker: atomic
//! replacement (temp file, fsync, rename, directory fsync) and directory
//! fsync, each with a variant whose writes and fsyncs pass a
//! `FaultInjector`. Every failure is a `StorageError` with the path it
//! concerns.

use crate::error::StorageError;
use crate::fault::{FaultInjector, NEVER, WriteGate, torn_error};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically: readers see either the old file or
/// the complete new one, also after a crash at any instant.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StorageError> {
    write_atomic_with(&NEVER, path, bytes)
}

/// [`write_atomic`] with every write and fsync passing `faults`. A failure
/// before the rename leaves the old file as it was (and removes the
/// temporary file, so a full disk gets no fuller); a failure of the final
/// directory fsync leaves either file.
pub fn write_atomic_with(
    faults: &FaultInjector,
    path: &Path,
    bytes: &[u8],
) -> Result<(), StorageError> {
    let staged = stage_as(faults, path, bytes, "tmp")?;
    let dir = staged.dir().to_path_buf();
    staged.commit(faults)?;
    sync_dir_with(faults, &dir)
}

/// The first half of [`write_atomic_with`]: `bytes` written and fsynced
/// beside `path`, not yet in its place. The expensive part (the fsync) can
/// so run without the lock that guards the store, and the cheap rename
/// ([`Staged::commit`]) under it, after checking that the store has not
/// changed meanwhile; the directory fsync that makes the rename durable
/// again needs no lock. A failure leaves the old file as it was and removes
/// the temporary file. The staged file is `<name>.<n>.staged` with `n`
/// unique in the process, so two stagings of one file (a flush cycle
/// outside the lock and a flush under it) never share a temporary file,
/// and it is apart from the `<name>.tmp` of [`write_atomic_with`]. A
/// [`Staged`] dropped without `commit` removes its file; a crash may leave
/// one, which [`remove_staged`] clears at open.
pub fn stage(faults: &FaultInjector, path: &Path, bytes: &[u8]) -> Result<Staged, StorageError> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    stage_as(faults, path, bytes, &format!("{n}.{STAGED_EXT}"))
}

const STAGED_EXT: &str = "staged";

/// Removes the files a crash left staged in `dir` (see [`stage`]).
pub fn remove_staged(dir: &Path) -> Result<(), StorageError> {
    for entry in fs::read_dir(dir).map_err(|e| StorageError::io(dir, e))? {
        let entry = entry.map_err(|e| StorageError::io(dir, e))?;
        if entry
            .file_name()
            .to_string_lossy()
            .ends_with(&format!(".{STAGED_EXT}"))
        {
            remove_if_exists(&entry.path())?;
        }
    }
    Ok(())
}

fn stage_as(
    faults: &FaultInjector,
    path: &Path,
    bytes: &[u8],
    suffix: &str,
) -> Result<Staged, StorageError> {
    let dir = path
        .parent()
        .ok_or_else(|| StorageError::unusable(path, "path has no parent directory"))?;
    let name = path
        .file_name()
        .ok_or_else(|| StorageError::unusable(path, "path has no file name"))?;
    let tmp = dir.join(format!("{}.{suffix}", name.to_string_lossy()));
    if let Err(e) = write_synced(faults, &tmp, bytes) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(Staged {
        tmp: Some(tmp),
        path: path.to_path_buf(),
    })
}

/// A file written and fsynced beside its place (see [`stage`]).
#[derive(Debug)]
pub struct Staged {
    /// `None` once renamed into place.
    tmp: Option<std::path::PathBuf>,
    path: std::path::PathBuf,
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let _ = fs::remove_file(tmp);
        }
    }
}

impl Staged {
    /// Where the file goes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory whose fsync makes the commit durable.
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// Renames the file into place (readers see the old or the new file).
    /// A failure leaves the old file and removes the staged one.
    pub fn commit(mut self, faults: &FaultInjector) -> Result<(), StorageError> {
        let tmp = self.tmp.take().expect("a staged file is committed once");
        let moved = faults.site_write(&self.path).and_then(|()| {
            fs::rename(&tmp, &self.path).map_err(|e| StorageError::io(&self.path, e))
        });
        if moved.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        moved
    }

    /// Drops the staged file: the store changed while it was written, so it
    /// no longer describes it (dropping a `Staged` does the same).
    pub fn discard(self) {}
}

/// Creates (or replaces) `path` with `bytes` and fsyncs it.
fn write_synced(faults: &FaultInjector, path: &Path, bytes: &[u8]) -> Result<(), StorageError> {
    let gate = faults.site_write_of(path, bytes.len())?;
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| StorageError::io(path, e))?;
    match gate {
        WriteGate::Whole => f.write_all(bytes).map_err(|e| StorageError::io(path, e))?,
        WriteGate::Torn(n) => {
            f.write_all(&bytes[..n])
                .map_err(|e| StorageError::io(path, e))?;
            return Err(torn_error(path));
        }
    }
    faults.site_sync(path)?;
    f.sync_all().map_err(|e| StorageError::io(path, e))
}

/// Reads a whole file, `None` if it does not exist.
pub fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, StorageError> {
    match fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StorageError::io(path, e)),
    }
}

/// Fsyncs a directory so that creations, renames and deletions in it are
/// durable.
pub fn sync_dir(dir: &Path) -> Result<(), StorageError> {
    sync_dir_with(&NEVER, dir)
}

/// [`sync_dir`] passing `faults`.
pub fn sync_dir_with(faults: &FaultInjector, dir: &Path) -> Result<(), StorageError> {
    faults.site_sync(dir)?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StorageError::io(dir, e))
}

/// Removes a file; a file that is already gone is fine.
pub fn remove_if_exists(path: &Path) -> Result<(), StorageError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StorageError::io(path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("store.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(read_optional(&p).unwrap().unwrap(), b"two");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        assert_eq!(read_optional(&dir.path().join("missing")).unwrap(), None);
        remove_if_exists(&p).unwrap();
        remove_if_exists(&p).unwrap();
    }

    #[test]
    fn a_failed_atomic_write_leaves_the_old_file_and_no_temp_file() {
        use crate::fault::Fault;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("store.json");
        let faults = FaultInjector::new();
        write_atomic_with(&faults, &p, b"old").unwrap();
        let sites = faults.sites_passed();
        assert_eq!(sites, 4, "write, fsync, rename, directory fsync");
        for site in 0..sites - 1 {
            for fault in Fault::ALL {
                let f = FaultInjector::new();
                f.inject_at(site, fault);
                let e = write_atomic_with(&f, &p, b"new").unwrap_err();
                if fault == Fault::NoSpace {
                    assert!(e.is_disk_full(), "{e}");
                }
                assert_eq!(
                    read_optional(&p).unwrap().unwrap(),
                    b"old",
                    "{site} {fault:?}"
                );
                assert_eq!(
                    fs::read_dir(dir.path()).unwrap().count(),
                    1,
                    "{site} {fault:?}"
                );
            }
        }
        // After the rename only the directory fsync is left: the new file
        // is there, its durability is what failed.
        let f = FaultInjector::new();
        f.inject_at(3, Fault::Io);
        assert!(write_atomic_with(&f, &p, b"new").is_err());
        assert_eq!(read_optional(&p).unwrap().unwrap(), b"new");
    }
}
