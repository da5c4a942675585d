//! The compaction swap's files and their crash recovery: the `cleaner-swap`
//! marker (the commit point of a compaction, see `compaction.rs`), the
//! `.cleaned` copies beside the live segment files, and `recover_swap`,
//! which open runs first to roll an interrupted swap forward or discard it.
//! Kept apart from compaction so that recovery needs no part of the log
//! itself.

use crate::error::{LogError, Result};
use crate::segment::{INDEX_EXT, LOG_EXT, TIME_INDEX_EXT, segment_path};
use mk_core::ByteReader;
use mk_storage::fsutil;
use std::fs;
use std::path::{Path, PathBuf};

pub(crate) const SWAP_MARKER: &str = "cleaner-swap";
const CLEANED: &str = "cleaned";
pub(crate) const EXTS: [&str; 3] = [LOG_EXT, INDEX_EXT, TIME_INDEX_EXT];

pub(crate) fn cleaned_path(dir: &Path, base: i64, ext: &str) -> PathBuf {
    let mut p = segment_path(dir, base, ext).into_os_string();
    p.push(".");
    p.push(CLEANED);
    PathBuf::from(p)
}

pub(crate) fn encode_bases(bases: &[i64]) -> Vec<u8> {
    let mut body = Vec::with_capacity(4 + bases.len() * 8);
    let count = u32::try_from(bases.len()).expect("a log has fewer than 2^32 segments");
    body.extend_from_slice(&count.to_be_bytes());
    for b in bases {
        body.extend_from_slice(&b.to_be_bytes());
    }
    let mut out = crc32c::crc32c(&body).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

fn decode_bases(bytes: &[u8]) -> Option<Vec<i64>> {
    let (crc, body) = bytes.split_first_chunk::<4>()?;
    if crc32c::crc32c(body) != u32::from_be_bytes(*crc) {
        return None;
    }
    let mut r = ByteReader::new(body);
    let n = r.u32().ok()? as usize;
    if n.checked_mul(8) != Some(r.remaining()) {
        return None;
    }
    (0..n).map(|_| r.i64().ok()).collect()
}

/// Completes or discards an interrupted compaction swap. Runs first thing on
/// open.
pub(crate) fn recover_swap(dir: &Path) -> Result<()> {
    let marker = dir.join(SWAP_MARKER);
    fsutil::remove_if_exists(&dir.join(format!("{SWAP_MARKER}.tmp")))?;
    match fsutil::read_optional(&marker)? {
        Some(bytes) => {
            let bases = decode_bases(&bytes)
                .ok_or_else(|| LogError::storage(&marker, "compaction swap marker is damaged"))?;
            for base in bases {
                for ext in EXTS {
                    let cleaned = cleaned_path(dir, base, ext);
                    if cleaned.exists() {
                        let live = segment_path(dir, base, ext);
                        fs::rename(&cleaned, &live).map_err(|e| LogError::io(&live, e))?;
                    }
                }
            }
            fsutil::sync_dir(dir)?;
            fsutil::remove_if_exists(&marker)?;
            fsutil::sync_dir(dir)?;
        }
        None => {
            if remove_cleaned_files(dir)? {
                fsutil::sync_dir(dir)?;
            }
        }
    }
    Ok(())
}

/// Removes every `.cleaned` file of `dir`; true if there was one.
pub(crate) fn remove_cleaned_files(dir: &Path) -> Result<bool> {
    let mut removed = false;
    for entry in fs::read_dir(dir).map_err(|e| LogError::io(dir, e))? {
        let entry = entry.map_err(|e| LogError::io(dir, e))?;
        if entry.file_name().to_string_lossy().ends_with(".cleaned") {
            fsutil::remove_if_exists(&entry.path())?;
            removed = true;
        }
    }
    Ok(removed)
}
