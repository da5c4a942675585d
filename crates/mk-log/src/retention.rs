//! Retention (`cleanup.policy=delete`): deleting a prefix of closed segments
//! by age and by total size. Deletion is always a continuous prefix, so a log
//! never has a hole in the middle.

use crate::error::{LogError, Result};
use crate::log::PartitionLog;

/// Which limits to apply; `None` means unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetentionPolicy {
    pub retention_ms: Option<i64>,
    pub retention_bytes: Option<i64>,
}

impl PartitionLog {
    /// Deletes the oldest closed segments that are past `retention_ms`
    /// (their newest record is older than `now_ms - retention_ms`) or that
    /// must go to bring the log under `retention_bytes`. Returns the base
    /// offsets removed; the log start offset moves forward accordingly.
    pub fn apply_retention(&mut self, now_ms: i64, policy: RetentionPolicy) -> Result<Vec<i64>> {
        let bases = self.retention_candidates(now_ms, policy, None)?;
        self.delete_closed_segments(&bases)?;
        Ok(bases)
    }

    /// The base offsets `apply_retention` would delete, without deleting:
    /// the longest prefix of closed segments that is past `retention_ms` or
    /// must go to respect `retention_bytes`, cut back so that no selected
    /// segment ends after `keep_from` (a replicated log never deletes data
    /// at or above its high watermark).
    pub fn retention_candidates(
        &self,
        now_ms: i64,
        policy: RetentionPolicy,
        keep_from: Option<i64>,
    ) -> Result<Vec<i64>> {
        if let Some(ms) = policy.retention_ms
            && ms < 0
        {
            return Err(LogError::InvalidRequest(format!(
                "retention_ms must be >= 0, got {ms}"
            )));
        }
        if let Some(bytes) = policy.retention_bytes
            && bytes <= 0
        {
            return Err(LogError::InvalidRequest(format!(
                "retention_bytes must be > 0, got {bytes}"
            )));
        }
        let closed = self.closed_segments();
        let mut count = 0;
        if let Some(ms) = policy.retention_ms {
            let cutoff = now_ms.saturating_sub(ms);
            while count < closed.len() && closed[count].max_timestamp_ms < cutoff {
                count += 1;
            }
        }
        if let Some(limit) = policy.retention_bytes {
            let limit = limit as u64;
            let mut total =
                self.size_bytes() - closed[..count].iter().map(|s| s.size_bytes).sum::<u64>();
            while count < closed.len() && total > limit {
                total -= closed[count].size_bytes;
                count += 1;
            }
        }
        if let Some(end) = keep_from {
            while count > 0 && closed[count - 1].next_offset > end {
                count -= 1;
            }
        }
        Ok(closed[..count].iter().map(|s| s.base_offset).collect())
    }
}
