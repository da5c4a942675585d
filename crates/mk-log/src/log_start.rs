//! The log start offset that DeleteRecords moves inside a segment (Kafka's
//! `log-start-offset-checkpoint`, here one file per partition directory).
//!
//! Without it the log start is the base of the first segment. Once moved
//! forward, the offsets below it are gone for readers (OFFSET_OUT_OF_RANGE)
//! although their batches may still sit in the first segment until the
//! whole segment lies below the start and is deleted. The file is
//! `log-start-offset`: magic "MKLS" | version u8 = 1 | offset i64 BE |
//! crc32c u32 BE of the twelve bytes before it; 17 bytes in all, replaced
//! atomically, so a crash leaves the old start or the new one.

use crate::error::{LogError, Result};
use crate::log::PartitionLog;
use mk_storage::fsutil;
use std::path::Path;

/// The file's name inside the partition directory.
pub const LOG_START_FILE: &str = "log-start-offset";

const MAGIC: &[u8; 4] = b"MKLS";
const VERSION: u8 = 1;
const FILE_BYTES: usize = 17;

fn encode(offset: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(FILE_BYTES);
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    out.extend_from_slice(&offset.to_be_bytes());
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

fn decode(bytes: &[u8]) -> std::result::Result<i64, &'static str> {
    let Ok(whole) = <&[u8; FILE_BYTES]>::try_from(bytes) else {
        return Err("it is not 17 bytes long");
    };
    let (body, crc) = whole.split_at(FILE_BYTES - 4);
    if &body[..4] != MAGIC || body[4] != VERSION {
        return Err("its magic or version is not MKLS 1");
    }
    let crc = u32::from_be_bytes(crc.try_into().expect("four bytes"));
    if crc32c::crc32c(body) != crc {
        return Err("its checksum does not match");
    }
    let offset = i64::from_be_bytes(body[5..].try_into().expect("eight bytes"));
    if offset < 0 {
        return Err("its offset is negative");
    }
    Ok(offset)
}

/// The stored log start of the partition in `dir`, if DeleteRecords ever
/// moved it; a damaged file is STORAGE_ERROR (guessing would bring deleted
/// records back or hide live ones).
pub(crate) fn load(dir: &Path) -> Result<Option<i64>> {
    let path = dir.join(LOG_START_FILE);
    match fsutil::read_optional(&path)? {
        None => Ok(None),
        Some(bytes) => decode(&bytes).map(Some).map_err(|why| {
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
        if let Err(e) = fsutil::write_atomic_with(&self.config.faults, &path, &encode(offset)) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_any_damage() {
        let bytes = encode(1_234_567);
        assert_eq!(bytes.len(), FILE_BYTES);
        assert_eq!(decode(&bytes), Ok(1_234_567));
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert!(decode(&bad).is_err(), "byte {i} flipped");
        }
        assert!(decode(&bytes[..16]).is_err());
        assert_eq!(decode(&encode(-1)), Err("its offset is negative"));
    }
}
