//! The cleaner's first dirty offset on disk (Kafka's
//! `cleaner-offset-checkpoint`, here one file per partition directory, as
//! `log-start-offset` is), so a restart does not compact every compacted
//! partition once more.
//!
//! The file is `cleaner-offset-checkpoint`, an offset file
//! (`offset_file.rs`) with magic "MKCO", replaced atomically, so a crash
//! leaves the old offset or the new one. It is written after a compaction moved the offset, and before a
//! truncation below it returns. The stored offset may lag behind the one in
//! memory (a crash between a compaction and its checkpoint, a failed write)
//! but is never above it: a lower offset only makes the cleaner look at
//! clean segments again, while a higher one could let it clean records
//! still within `min.compaction.lag.ms`. A damaged or unreadable file is
//! therefore not an error: it is reported, ignored, and costs one pass.

use crate::error::Result;
use crate::log::PartitionLog;
use crate::offset_file;
use mk_storage::fsutil;
use std::path::Path;

/// The file's name inside the partition directory.
pub const CLEANER_CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";

const MAGIC: &[u8; 4] = b"MKCO";

/// The first dirty offset stored in `dir`, 0 (everything dirty) when there
/// is none or it cannot be used; a damaged file is logged as a warning.
pub(crate) fn load(dir: &Path) -> i64 {
    let path = dir.join(CLEANER_CHECKPOINT_FILE);
    let why = match fsutil::read_optional(&path) {
        Ok(None) => return 0,
        Ok(Some(bytes)) => match offset_file::decode(MAGIC, &bytes) {
            Ok(offset) => return offset,
            Err(why) => why.to_string(),
        },
        Err(e) => e.to_string(),
    };
    tracing::warn!(
        path = %path.display(),
        reason = %why,
        "cleaner checkpoint ignored: every closed segment counts as dirty, the next cleaner cycle compacts this partition once more"
    );
    0
}

impl PartitionLog {
    /// At open: the stored first dirty offset, unless it lies past the
    /// recovered log end (a lost tail would otherwise let records written
    /// again there count as clean).
    pub(crate) fn load_first_dirty(&mut self) {
        let stored = load(&self.dir);
        self.first_dirty = if stored > self.leo() { 0 } else { stored };
    }

    /// After a compaction cleaned up to `offset`: stored in memory, then on
    /// disk. A failed write leaves the older, lower offset on disk, which
    /// costs one pass after a restart and nothing else, so it is logged
    /// rather than failing a compaction that is done.
    pub(crate) fn cleaned_up_to(&mut self, offset: i64) {
        if offset == self.first_dirty {
            return;
        }
        self.first_dirty = offset;
        if let Err(e) = self.store_first_dirty() {
            tracing::warn!(
                dir = %self.dir.display(),
                error = %e,
                "cleaner checkpoint not written: a restart compacts this partition once more"
            );
        }
    }

    /// A truncation to `next_offset`: cut records are no longer cleaned
    /// (Kafka lowers its cleaner checkpoint to a truncation point). The
    /// lower offset is durable before this returns (or, when it cannot be
    /// written, the file is gone), so records appended again past the cut
    /// never count as clean after a restart; when neither works, the log
    /// refuses further writes.
    pub(crate) fn truncated_below_first_dirty(&mut self, next_offset: i64) -> Result<()> {
        if next_offset >= self.first_dirty {
            return Ok(());
        }
        self.first_dirty = next_offset;
        let Err(e) = self.store_first_dirty() else {
            return Ok(());
        };
        // Without the file every segment counts as dirty after a restart:
        // one pass more, never a record cleaned too early.
        let path = self.dir.join(CLEANER_CHECKPOINT_FILE);
        let removed = fsutil::remove_if_exists(&path)
            .and_then(|()| fsutil::sync_dir_with(&self.config.faults, &self.dir));
        match removed {
            Ok(()) => {
                tracing::warn!(
                    path = %path.display(),
                    error = %e,
                    "cleaner checkpoint removed, not lowered: a restart compacts this partition once more"
                );
                Ok(())
            }
            Err(removing) => {
                let removing = removing.into();
                self.latch(&removing);
                Err(removing)
            }
        }
    }

    fn store_first_dirty(&self) -> Result<()> {
        let path = self.dir.join(CLEANER_CHECKPOINT_FILE);
        let bytes = offset_file::encode(MAGIC, self.first_dirty);
        Ok(fsutil::write_atomic_with(
            &self.config.faults,
            &path,
            &bytes,
        )?)
    }
}
