//! Log recovery on open: which segments can be trusted from a checkpoint,
//! which must be scanned, and the scan itself (a torn tail of the active
//! segment is cut off; a corrupt closed segment or a gap between segments is
//! STORAGE_ERROR). Also the upkeep of the recovery point that every flush
//! writes, since it exists only to make this scan short.
//!
//! The order of trust: a clean-shutdown checkpoint that matches the files
//! vouches for every segment; otherwise a matching recovery point vouches
//! for the closed segments it lists and only the rest is scanned; otherwise
//! everything is scanned. Every path yields the same segments and
//! transaction index, only at different cost.

use crate::checkpoint::{Checkpoint, CheckpointKind};
use crate::codec;
use crate::config::LogConfig;
use crate::error::{LogError, Result};
use crate::segment::{
    FrameError, FrameReader, INDEX_EXT, LOG_EXT, Segment, TIME_INDEX_EXT, segment_path,
};
use crate::txn_index::TxnIndex;
use mk_storage::fsutil;
use std::fs::{self, File, OpenOptions};
use std::path::Path;

/// What recovery hands to `PartitionLog::open`.
pub(crate) struct Recovered {
    /// Oldest first; empty for a new log.
    pub segments: Vec<Segment>,
    pub txns: TxnIndex,
    /// Base offsets listed by the recovery point that was used (empty when
    /// none was): the next flush rewrites it only if the closed segments
    /// differ.
    pub recovery_bases: Vec<i64>,
    /// The log had files but no matching clean-shutdown checkpoint: the
    /// process that wrote it did not close it (a crash or a power loss), so
    /// whatever was not fsynced may be gone.
    pub after_crash: bool,
}

/// Recovers the segments of the log in `dir` (which exists).
pub(crate) fn recover(dir: &Path, config: &LogConfig) -> Result<Recovered> {
    crate::swap::recover_swap(dir)?;
    let bases = list_segment_bases(dir)?;
    let cp_path = dir.join(CheckpointKind::CleanShutdown.file_name());
    let checkpoint = fsutil::read_optional(&cp_path)?;
    let rp_path = dir.join(CheckpointKind::RecoveryPoint.file_name());
    let recovery_point = fsutil::read_optional(&rp_path)?;
    // Before anything is changed, so the refusal repeats on every open.
    for (bytes, path) in [(&checkpoint, &cp_path), (&recovery_point, &rp_path)] {
        if let Some(cp) = bytes.as_deref().and_then(|b| Checkpoint::decode(b).ok()) {
            check_listed_segments_exist(dir, &cp, &bases, path)?;
        }
    }
    if checkpoint.is_some() {
        // From here on any crash must be treated as unclean.
        fsutil::remove_if_exists(&cp_path)?;
        fsutil::sync_dir_with(&config.faults, dir)?;
    }
    if let Some(cp) = usable(checkpoint, CheckpointKind::CleanShutdown, dir, &bases) {
        let (segments, txns) = load_trusted(cp);
        return Ok(Recovered {
            segments,
            txns,
            recovery_bases: Vec::new(),
            after_crash: false,
        });
    }
    let after_crash = !bases.is_empty();
    let Some(cp) = usable(recovery_point, CheckpointKind::RecoveryPoint, dir, &bases) else {
        let (segments, txns) =
            recover_segments(dir, config, &bases, Vec::new(), TxnIndex::default())?;
        return Ok(Recovered {
            segments,
            txns,
            recovery_bases: Vec::new(),
            after_crash,
        });
    };
    // After a crash, segments below the recovery point were fsynced and
    // summarized by the last flush: only the rest is scanned.
    let recovery_bases: Vec<i64> = cp.segments.iter().map(|s| s.base_offset).collect();
    let (trusted, txns) = load_trusted(cp);
    let rest = &bases[recovery_bases.len()..];
    let (segments, txns) = recover_segments(dir, config, rest, trusted, txns)?;
    Ok(Recovered {
        segments,
        txns,
        recovery_bases,
        after_crash,
    })
}

/// Refuses a log from which a segment that a checkpoint lists has
/// disappeared while later segments remain: every way this code removes
/// segments forgets the checkpoints first, so this is a file deleted from
/// outside, and opening would silently skip its offsets (gaps between
/// segments are legal after compaction, so the offsets alone cannot tell).
fn check_listed_segments_exist(
    dir: &Path,
    cp: &Checkpoint,
    bases: &[i64],
    checkpoint_path: &Path,
) -> Result<()> {
    let Some(&last_on_disk) = bases.last() else {
        return Ok(());
    };
    let missing: Vec<i64> = cp
        .segments
        .iter()
        .map(|s| s.base_offset)
        .filter(|b| *b < last_on_disk && bases.binary_search(b).is_err())
        .collect();
    let Some(first) = missing.first() else {
        return Ok(());
    };
    Err(LogError::storage(
        segment_path(dir, *first, LOG_EXT),
        format!(
            "{} segment file(s) listed by {} are missing while later segments exist \
             (missing bases {missing:?}, on disk {bases:?}): their offsets would be silently \
             skipped. Restore the files, or move the partition directory away to give up \
             its data",
            missing.len(),
            checkpoint_path.display()
        ),
    ))
}

/// Parses the base offset out of a segment file name (`<20 digits>.<ext>`).
fn parse_base(stem: &str) -> Option<i64> {
    if stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit()) {
        stem.parse().ok()
    } else {
        None
    }
}

/// Lists the base offsets of the `.log` files in `dir`, sorted. A file named
/// like a segment file but with an unparsable base is STORAGE_ERROR.
fn list_segment_bases(dir: &Path) -> Result<Vec<i64>> {
    let mut bases = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| LogError::io(dir, e))? {
        let entry = entry.map_err(|e| LogError::io(dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Some((stem, ext)) = name.split_once('.') else {
            continue;
        };
        if ![LOG_EXT, INDEX_EXT, TIME_INDEX_EXT].contains(&ext) {
            continue;
        }
        let Some(base) = parse_base(stem) else {
            return Err(LogError::storage(
                entry.path(),
                "named like a segment file but its base offset is not 20 digits",
            ));
        };
        if ext == LOG_EXT {
            bases.push(base);
        }
    }
    bases.sort_unstable();
    Ok(bases)
}

/// The checkpoint in `bytes` if it is intact and agrees with the segment
/// files on disk; anything else means a scan.
fn usable(
    bytes: Option<Vec<u8>>,
    kind: CheckpointKind,
    dir: &Path,
    bases: &[i64],
) -> Option<Checkpoint> {
    Checkpoint::decode(&bytes?)
        .ok()
        .filter(|cp| cp.matches(kind, dir, bases))
}

/// The segments a checkpoint vouches for, trusted without being read (their
/// indexes load lazily).
fn load_trusted(cp: Checkpoint) -> (Vec<Segment>, TxnIndex) {
    let segments = cp
        .segments
        .iter()
        .map(|s| Segment {
            base_offset: s.base_offset,
            next_offset: s.next_offset,
            size: s.size,
            max_timestamp_ms: s.max_timestamp_ms,
            index_bytes: s.index_bytes,
            indexes: std::sync::OnceLock::new(),
            index_dirty: false,
            unsynced: false,
            // Read from disk without a check: fetches check it once.
            trusted: crate::segment::Trusted::new(s.size),
        })
        .collect();
    (segments, cp.txns)
}

/// Full recovery scan: decodes every batch of every segment, rebuilds the
/// indexes and the transaction index, cuts a torn tail off the active
/// segment and refuses a corrupt closed segment or a gap.
fn recover_segments(
    dir: &Path,
    config: &LogConfig,
    bases: &[i64],
    mut segments: Vec<Segment>,
    mut txns: TxnIndex,
) -> Result<(Vec<Segment>, TxnIndex)> {
    segments.reserve(bases.len());
    for (i, &base) in bases.iter().enumerate() {
        let active = i + 1 == bases.len();
        let path = segment_path(dir, base, LOG_EXT);
        check_follows(segments.last(), base, &path)?;
        let file = File::open(&path).map_err(|e| LogError::io(&path, e))?;
        let len = file.metadata().map_err(|e| LogError::io(&path, e))?.len();
        let (mut seg, bad) = scan_segment(&file, &path, base, len, config, &mut txns)?;
        match bad {
            None => debug_assert_eq!(seg.size, len),
            Some(bad) if !active => {
                return Err(LogError::storage(
                    &path,
                    format!(
                        "corrupt closed segment at position {}: {}",
                        bad.position, bad.reason
                    ),
                ));
            }
            Some(bad) => cut_torn_tail(&file, &path, len, seg.next_offset, &bad, config)?,
        }
        seg.unsynced = false;
        segments.push(seg);
    }
    Ok((segments, txns))
}

/// Where a segment scan stopped before the end of the file, and why.
struct BadFrame {
    position: u64,
    reason: String,
}

/// Refuses a segment that starts below the end of the one before it.
/// Gaps are legal (compaction leaves them); an overlap is not.
fn check_follows(prev: Option<&Segment>, base: i64, path: &Path) -> Result<()> {
    match prev {
        Some(prev) if base < prev.next_offset => Err(LogError::storage(
            path,
            format!(
                "segments are not contiguous: segment {base} starts below the end {} of segment {}",
                prev.next_offset, prev.base_offset
            ),
        )),
        _ => Ok(()),
    }
}

/// Reads the segment file frame by frame, verifying each batch and noting
/// it in the rebuilt segment (indexes, size, timestamps) and in `txns`.
/// Stops at the first frame that is not an intact batch following the one
/// before it, and returns the segment as far as it is good and that frame.
fn scan_segment(
    file: &File,
    path: &Path,
    base: i64,
    len: u64,
    config: &LogConfig,
    txns: &mut TxnIndex,
) -> Result<(Segment, Option<BadFrame>)> {
    let mut seg = Segment::empty(base);
    let mut frames = FrameReader::new(file, path, 0, len, config.max_batch_bytes)
        .with_chunk_hint(usize::try_from(len).unwrap_or(usize::MAX));
    loop {
        let (position, frame) = match frames.next_frame() {
            Ok(Some(f)) => f,
            Ok(None) => return Ok((seg, None)),
            Err(FrameError::Io(e)) => return Err(e),
            Err(FrameError::Bad { position, reason }) => {
                return Ok((seg, Some(BadFrame { position, reason })));
            }
        };
        let (header, max_timestamp_ms) = match verify_batch(&frame, seg.next_offset, config) {
            Ok(verified) => verified,
            Err(reason) => return Ok((seg, Some(BadFrame { position, reason }))),
        };
        // The log rolls before an offset leaves the segment's 32-bit
        // relative range, so an intact batch beyond it was not written
        // here: refused, neither indexed nor cut.
        if header.base_offset - base > i64::from(u32::MAX) {
            return Err(LogError::storage(
                path,
                format!(
                    "batch at offset {} (position {position}) is beyond the 32-bit offset \
                     range of segment {base}",
                    header.base_offset
                ),
            ));
        }
        seg.note_batch(
            position,
            &header,
            frame.len() as u64,
            max_timestamp_ms,
            config.index_interval_bytes,
        );
        txns.observe(&header);
    }
}

/// Checks that `frame` holds an intact batch (header, CRC, records) that
/// starts at or after `expected_offset`: its header and largest timestamp,
/// or why not.
fn verify_batch(
    frame: &bytes::Bytes,
    expected_offset: i64,
    config: &LogConfig,
) -> std::result::Result<(codec::BatchHeader, i64), String> {
    let header = codec::decode_header(frame, config.max_batch_bytes).map_err(|e| e.to_string())?;
    let batch = codec::decode_verified(frame, &header).map_err(|e| e.to_string())?;
    if header.base_offset < expected_offset {
        return Err(format!(
            "batch at offset {} overlaps or moves backwards (expected >= {expected_offset})",
            header.base_offset
        ));
    }
    Ok((header, batch.max_timestamp_ms()))
}

/// Repairs the active segment after a crash tore its last write: cuts the
/// file at the bad frame and fsyncs it. A write torn by a crash is the end
/// of what was written; an intact batch after the bad bytes means the
/// bytes were damaged at rest, and cutting there would drop data that was
/// stored, so that is refused instead.
fn cut_torn_tail(
    file: &File,
    path: &Path,
    len: u64,
    next_offset: i64,
    bad: &BadFrame,
    config: &LogConfig,
) -> Result<()> {
    let BadFrame {
        position: pos,
        reason,
    } = bad;
    if let Some((at, offset)) = intact_frame_after(file, path, *pos, len, next_offset, config)? {
        return Err(LogError::storage(
            path,
            format!(
                "damaged bytes in the active segment at position {pos} ({reason}), \
                 followed by an intact batch at offset {offset} (position {at}): this is \
                 not a torn write, so nothing is cut. Restore the file, or to give up \
                 everything from position {pos} on, truncate it to {pos} bytes \
                 (truncate -s {pos} {})",
                path.display()
            ),
        ));
    }
    tracing::warn!(
        path = %path.display(),
        position = pos,
        bytes = len - pos,
        reason,
        "cutting a torn write off the end of the active segment"
    );
    let f = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| LogError::io(path, e))?;
    f.set_len(*pos).map_err(|e| LogError::io(path, e))?;
    config.faults.site_sync(path)?;
    f.sync_all().map_err(|e| LogError::io(path, e))
}
/// The first intact frame (envelope, CRC and structure valid, starting at
/// or after `expected_offset`) that starts after position `bad` in
/// `[bad, len)` of a segment file: its position and base offset. Only
/// candidates that begin with the magic are decoded, so the cost is one
/// read of the rest of the segment.
fn intact_frame_after(
    file: &File,
    path: &Path,
    bad: u64,
    len: u64,
    expected_offset: i64,
    config: &LogConfig,
) -> Result<Option<(u64, i64)>> {
    use std::os::unix::fs::FileExt;
    const WINDOW: u64 = 1 << 20;
    let read = |at: u64, n: u64| -> Result<Vec<u8>> {
        let mut buf = vec![0u8; usize::try_from(n).expect("reads are at most WINDOW bytes")];
        let mut done = 0;
        while done < buf.len() {
            match file.read_at(&mut buf[done..], at + done as u64) {
                Ok(0) => break,
                Ok(k) => done += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(LogError::io(path, e)),
            }
        }
        buf.truncate(done);
        Ok(buf)
    };
    let mut start = bad + 1;
    while start < len {
        // Windows overlap by the magic's length so no candidate is missed.
        let window = read(start, WINDOW.min(len - start))?;
        for (i, w) in window.windows(codec::MAGIC.len()).enumerate() {
            if w != codec::MAGIC {
                continue;
            }
            let at = start + i as u64;
            let head = read(at, codec::FRAME_HEADER_BYTES as u64)?;
            let Ok(Some(frame_len)) = codec::peek_frame_len(&head, config.max_batch_bytes) else {
                continue;
            };
            if at + frame_len as u64 > len {
                continue;
            }
            let frame = bytes::Bytes::from(read(at, frame_len as u64)?);
            if let Ok((header, _)) = verify_batch(&frame, expected_offset, config) {
                return Ok(Some((at, header.base_offset)));
            }
        }
        if start + WINDOW >= len {
            break;
        }
        start += WINDOW - codec::MAGIC.len() as u64 + 1;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use crate::{LogConfig, PartitionLog, Record, RecordBatch, codec};
    use mk_core::ErrorCode;

    /// An intact batch whose offset the segment could not index (planted,
    /// not written by the log) is STORAGE_ERROR at open, not a panic and
    /// not a cut.
    #[test]
    fn a_batch_beyond_the_segments_offset_range_is_a_storage_error() {
        let dir = tempfile::tempdir().unwrap();
        let value = bytes::Bytes::from_static(b"v");
        let mut batch = RecordBatch::new(vec![Record::new(None, Some(value), 1)]).unwrap();
        batch.assign(1 << 33, 0).unwrap();
        let mut frame = Vec::new();
        codec::encode_into(&batch, &mut frame).unwrap();
        let segment = dir.path().join("00000000000000000000.log");
        std::fs::write(&segment, &frame).unwrap();
        let err = PartitionLog::open(dir.path(), LogConfig::default(), 0).unwrap_err();
        assert_eq!(err.code(), ErrorCode::StorageError, "{err}");
        assert!(err.to_string().contains("32-bit offset range"), "{err}");
        assert_eq!(std::fs::read(&segment).unwrap(), frame, "nothing was cut");
    }
}
