//! The log start offset that DeleteRecords moves inside a segment (Kafka's
//! `log-start-offset-checkpoint`, here one file per partition directory).
//!
//! Without it the log start is the base of the first segment. Once moved
//! forward, the offsets below it are gone for readers (OFFSET_OUT_OF_RANGE)
//! although their batches may still sit in the first segment until the
//! whole segment lies below the start and is deleted. The file is
//! `log-start-offset`, an offset file (`offset_file.rs`) with magic
//! "MKLS", replaced atomically, so a crash leaves the old start or the new
//! one.

use crate::error::{LogError, Result};
use crate::log::PartitionLog;
use crate::offset_file;
use mk_storage::fsutil;
use std::path::Path;

/// The file's name inside the partition directory.
pub const LOG_START_FILE: &str = "log-start-offset";

const MAGIC: &[u8; 4] = b"MKLS";

/// The stored log start of the partition in `dir`, if DeleteRecords ever
/// moved it; a damaged file is STORAGE_ERROR (guessing would bring deleted
/// records back or hide live ones).
pub(crate) fn load(dir: &Path) -> Result<Option<i64>> {
    let path = dir.join(LOG_START_FILE);
    match fsutil::read_optional(&path)? {
        None => Ok(None),
        Some(bytes) => offset_file::decode(MAGIC, &bytes).map(Some).map_err(|why| {
            LogError::storage(&path, format!("the log start file is damaged: {why}"))
        }),
    }
}

impl PartitionLog {
    /// Moves the log start offset forward to `offset` (Kafka's
    /// `maybeIncrementLogStartOffset`): records below it can no longer be
    /// read, and the closed segments that lie wholly below it are deleted.
    /// The new start is durable before this returns. An offset at or
    /// below the current start changes nothing (false); one above the LEO
    /// is OFFSET_OUT_OF_RANGE. Where the start may go (the high watermark)
    /// is decided above the log.
    pub fn advance_log_start(&mut self, offset: i64) -> Result<bool> {
        self.check_writable()?;
        if offset <= self.log_start_offset() {
            return Ok(false);
        }
        if offset > self.leo() {
            return Err(LogError::OffsetOutOfRange {
                offset,
                log_start: self.log_start_offset(),
                log_end: self.leo(),
            });
        }
        let path = self.dir.join(LOG_START_FILE);
        if let Err(e) = fsutil::write_atomic_with(
            &self.config.faults,
            &path,
            &offset_file::encode(MAGIC, offset),
        ) {
            return self.fail(e.into());
        }
        self.start_floor = offset;
        let below: Vec<i64> = self
            .closed_segments()
            .iter()
            .take_while(|s| s.next_offset <= offset)
            .map(|s| s.base_offset)
            .collect();
        self.delete_closed_segments(&below)?;
        self.txns.prune_below(offset);
        Ok(true)
    }
}
