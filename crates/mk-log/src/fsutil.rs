//! Small durable-file helpers shared by every store of the broker: atomic
//! replacement (temp file, fsync, rename, directory fsync) and directory
//! fsync. Every failure is a `StorageError` with the path it concerns.

use crate::error::StorageError;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically: readers see either the old file or
/// the complete new one, also after a crash at any instant.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StorageError> {
    let dir = path
        .parent()
        .ok_or_else(|| StorageError::unusable(path, "path has no parent directory"))?;
    let name = path
        .file_name()
        .ok_or_else(|| StorageError::unusable(path, "path has no file name"))?;
    let tmp = dir.join(format!("{}.tmp", name.to_string_lossy()));
    {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(|e| StorageError::io(&tmp, e))?;
        f.write_all(bytes).map_err(|e| StorageError::io(&tmp, e))?;
        f.sync_all().map_err(|e| StorageError::io(&tmp, e))?;
    }
    fs::rename(&tmp, path).map_err(|e| StorageError::io(path, e))?;
    sync_dir(dir)
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
}
