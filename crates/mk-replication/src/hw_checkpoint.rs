//! The high-watermark checkpoint (`replication-offset-checkpoint`) of one
//! replica: the HW this replica knew at the last checkpoint step.
//!
//! Placement: one file per replica in its partition directory
//! (`<data_dir>/broker-<id>/<topic>-<p>/replication-offset-checkpoint`), not
//! Kafka's one file per log directory, so that every replica set checkpoints
//! on its own without coordinating with other partitions. The format is
//! Kafka's text format with a single entry: a version line `0`, a count line
//! `1`, then `<topic> <partition> <high_watermark>`.

use crate::error::{ReplicationError, Result};
use mk_core::TopicPartition;
use mk_storage::{StorageError, fsutil};
use std::path::Path;

/// File name of the checkpoint inside a replica's partition directory.
pub const HW_CHECKPOINT_FILE: &str = "replication-offset-checkpoint";

/// The checkpoint file's bytes for `high_watermark`.
pub(crate) fn encode(tp: &TopicPartition, high_watermark: i64) -> Vec<u8> {
    format!("0\n1\n{} {} {high_watermark}\n", tp.topic, tp.partition).into_bytes()
}

/// Reads the checkpoint of `dir`; `None` if there is none yet. A damaged
/// file, or one about another partition, is STORAGE_ERROR.
pub(crate) fn read(dir: &Path, tp: &TopicPartition) -> Result<Option<i64>> {
    let path = dir.join(HW_CHECKPOINT_FILE);
    let Some(bytes) = fsutil::read_optional(&path)? else {
        return Ok(None);
    };
    let bad = |reason: String| ReplicationError::from(StorageError::unusable(&path, reason));
    let text = std::str::from_utf8(&bytes).map_err(|e| bad(format!("not UTF-8: {e}")))?;
    let lines: Vec<&str> = text.lines().collect();
    let [version, count, entry] = lines[..] else {
        return Err(bad(format!(
            "expected 3 lines (version, count, entry), found {}",
            lines.len()
        )));
    };
    if version != "0" || count != "1" {
        return Err(bad(format!(
            "expected version \"0\" and count \"1\", found {version:?} and {count:?}"
        )));
    }
    let parts: Vec<&str> = entry.split(' ').collect();
    let [topic, partition, hw] = parts[..] else {
        return Err(bad(format!(
            "expected \"<topic> <partition> <hw>\", found {entry:?}"
        )));
    };
    if topic != tp.topic || partition != tp.partition.to_string() {
        return Err(bad(format!(
            "checkpoint is about {topic}-{partition}, expected {tp}"
        )));
    }
    let hw: i64 = hw
        .parse()
        .ok()
        .filter(|hw| *hw >= 0)
        .ok_or_else(|| bad(format!("expected a high watermark >= 0, found {hw:?}")))?;
    Ok(Some(hw))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mk_core::ErrorCode;
    use mk_storage::FaultInjector;

    /// What the flush writes (through `fsutil::stage` and a rename).
    fn write(_: &FaultInjector, dir: &Path, tp: &TopicPartition, hw: i64) -> Result<()> {
        fsutil::write_atomic(&dir.join(HW_CHECKPOINT_FILE), &encode(tp, hw))?;
        Ok(())
    }

    #[test]
    fn round_trip_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let tp = TopicPartition::new("orders.v1", 3);
        assert_eq!(read(dir.path(), &tp).unwrap(), None);
        write(&FaultInjector::new(), dir.path(), &tp, 42).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(HW_CHECKPOINT_FILE)).unwrap(),
            "0\n1\norders.v1 3 42\n"
        );
        assert_eq!(read(dir.path(), &tp).unwrap(), Some(42));
        assert_eq!(
            read(dir.path(), &TopicPartition::new("orders.v1", 4))
                .unwrap_err()
                .code(),
            ErrorCode::StorageError
        );
        for bad in [
            "",
            "0\n1\n",
            "1\n1\nt 0 1\n",
            "0\n1\nt 0\n",
            "0\n1\nt 0 -4\n",
            "0\n1\nt 0 x\n",
        ] {
            std::fs::write(dir.path().join(HW_CHECKPOINT_FILE), bad).unwrap();
            let err = read(dir.path(), &TopicPartition::new("t", 0)).unwrap_err();
            assert_eq!(err.code(), ErrorCode::StorageError, "{bad:?}");
        }
    }
}
