//! `LogConfig`: the settings of one partition log (segment size, index
//! interval, largest batch, the fault seam), apart from `PartitionLog` so
//! that segments and recovery can read them without the log itself.

use crate::error::{LogError, Result};
use mk_core::SharedClock;
use mk_storage::FaultInjector;
use std::sync::Arc;

/// Settings of one partition log.
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// Roll to a new segment before a batch would grow the active one past
    /// this size.
    pub segment_max_bytes: u64,
    /// Bytes between two sparse index entries.
    pub index_interval_bytes: u64,
    /// Largest payload a batch may have; the decoder refuses larger frames.
    pub max_batch_bytes: u32,
    /// Fault-injection switches (never fire unless a test turns them on).
    pub faults: Arc<FaultInjector>,
    /// `segment.ms`: an append rolls the active segment first when it has
    /// held data for longer than this, by `clock`. `None` rolls by size only.
    pub segment_ms: Option<i64>,
    /// `segment.jitter.ms`: each segment rolls by age up to this much
    /// before `segment_ms` (less than `segment_ms`), so that partitions
    /// created together do not all roll at once. 0: no jitter.
    pub segment_jitter_ms: i64,
    /// The injected clock that ages the active segment; `None` (no clock)
    /// never rolls by age.
    pub clock: Option<SharedClock>,
    /// When the cleaner may and must compact this log.
    pub cleaner: CleanerConfig,
}

/// The topic configs that decide when the cleaner compacts a log (Kafka's
/// `min.compaction.lag.ms`, `max.compaction.lag.ms` and
/// `min.cleanable.dirty.ratio`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CleanerConfig {
    /// Compaction stops at the first dirty closed segment holding a record
    /// newer than `now - this`, and keys newer than that do not clean older
    /// records yet (0: every closed segment).
    pub min_lag_ms: i64,
    /// A dirty closed segment whose first batch is older than `now - this`
    /// makes the log due for cleaning whatever its dirty ratio.
    pub max_lag_ms: i64,
    /// The log is due for cleaning when its dirty bytes are more than this
    /// share of its closed bytes.
    pub min_dirty_ratio: f64,
}

impl Default for CleanerConfig {
    /// Kafka's defaults: no lag, no deadline, half the log dirty.
    fn default() -> Self {
        Self {
            min_lag_ms: 0,
            max_lag_ms: i64::MAX,
            min_dirty_ratio: 0.5,
        }
    }
}

impl CleanerConfig {
    /// Checks the ranges Kafka's topic configs allow.
    pub fn validate(&self) -> Result<()> {
        for (name, value, min) in [
            ("min_compaction_lag_ms", self.min_lag_ms, 0),
            ("max_compaction_lag_ms", self.max_lag_ms, 1),
        ] {
            if value < min {
                return Err(LogError::InvalidRequest(format!(
                    "{name} must be >= {min}, got {value}"
                )));
            }
        }
        if !(0.0..=1.0).contains(&self.min_dirty_ratio) {
            return Err(LogError::InvalidRequest(format!(
                "min_cleanable_dirty_ratio must be in [0, 1], got {}",
                self.min_dirty_ratio
            )));
        }
        Ok(())
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            segment_max_bytes: 1_048_576,
            index_interval_bytes: 4_096,
            max_batch_bytes: 16_777_216,
            faults: Arc::new(FaultInjector::new()),
            segment_ms: None,
            segment_jitter_ms: 0,
            clock: None,
            cleaner: CleanerConfig::default(),
        }
    }
}

impl LogConfig {
    /// Checks every rule of the configuration table (spec 00).
    pub fn validate(&self) -> Result<()> {
        for (name, zero) in [
            ("segment_max_bytes", self.segment_max_bytes == 0),
            ("index_interval_bytes", self.index_interval_bytes == 0),
            ("max_batch_bytes", self.max_batch_bytes == 0),
        ] {
            if zero {
                return Err(LogError::InvalidRequest(format!("{name} must be > 0")));
            }
        }
        self.cleaner.validate()?;
        if let Some(ms) = self.segment_ms
            && ms < 1
        {
            return Err(LogError::InvalidRequest(format!(
                "segment_ms must be >= 1, got {ms}"
            )));
        }
        if self.segment_jitter_ms < 0 {
            return Err(LogError::InvalidRequest(format!(
                "segment_jitter_ms must be >= 0, got {}",
                self.segment_jitter_ms
            )));
        }
        Ok(())
    }
}
