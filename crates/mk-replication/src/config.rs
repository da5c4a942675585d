//! Replication settings (`ReplicationConfig`) and the producer's `AckMode`.

use crate::error::{ReplicationError, Result};
use mk_log::LogConfig;
use std::fmt;
use std::str::FromStr;

/// Settings of every replica set of a cluster. Defaults follow the
/// configuration table of spec 00.
#[derive(Debug, Clone)]
pub struct ReplicationConfig {
    /// A follower more than this many offsets behind the leader's LEO leaves
    /// the ISR (>= 0).
    pub replica_lag_max_offsets: i64,
    /// A follower that has not fetched for longer than this leaves the ISR
    /// (> 0).
    pub replica_lag_time_ms: i64,
    /// Bytes one follower fetch copies at most; at least one whole batch is
    /// always copied (> 0).
    pub replica_fetch_max_bytes: usize,
    /// `acks=all` needs at least this many in-sync replicas (> 0).
    pub min_insync_replicas: usize,
    /// Settings of every replica's log.
    pub log: LogConfig,
}

impl Default for ReplicationConfig {
    fn default() -> Self {
        Self {
            replica_lag_max_offsets: 10_000,
            replica_lag_time_ms: 10_000,
            replica_fetch_max_bytes: 1_048_576,
            min_insync_replicas: 1,
            log: LogConfig::default(),
        }
    }
}

impl ReplicationConfig {
    /// Checks every rule of the configuration table (spec 00).
    pub fn validate(&self) -> Result<()> {
        // (name, value, the rule it must meet, whether it does)
        let rules: [(&str, &dyn fmt::Display, &str, bool); 4] = [
            (
                "replica_lag_max_offsets",
                &self.replica_lag_max_offsets,
                ">= 0",
                self.replica_lag_max_offsets >= 0,
            ),
            (
                "replica_lag_time_ms",
                &self.replica_lag_time_ms,
                "> 0",
                self.replica_lag_time_ms > 0,
            ),
            (
                "replica_fetch_max_bytes",
                &self.replica_fetch_max_bytes,
                "> 0",
                self.replica_fetch_max_bytes > 0,
            ),
            (
                "min_insync_replicas",
                &self.min_insync_replicas,
                "> 0",
                self.min_insync_replicas > 0,
            ),
        ];
        if let Some((name, value, rule, _)) = rules.into_iter().find(|r| !r.3) {
            return Err(ReplicationError::InvalidRequest(format!(
                "{name} must be {rule}, got {value}"
            )));
        }
        self.log.validate()?;
        Ok(())
    }
}

/// How many replicas must have a batch before the producer hears back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AckMode {
    /// `acks=0`: fire and forget; the result carries no offsets.
    Zero,
    /// `acks=1`: the leader has appended the batch.
    One,
    /// `acks=all` (`-1`): the batch is below the high watermark while the
    /// ISR has at least `min_insync_replicas` members.
    All,
}

impl AckMode {
    /// The canonical spelling: `"0"`, `"1"` or `"all"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            AckMode::Zero => "0",
            AckMode::One => "1",
            AckMode::All => "all",
        }
    }
}

impl fmt::Display for AckMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for AckMode {
    type Err = ReplicationError;

    /// Parses `"0"`, `"1"`, `"all"` and `"-1"` (= all).
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "0" => Ok(AckMode::Zero),
            "1" => Ok(AckMode::One),
            "all" | "-1" => Ok(AckMode::All),
            other => Err(ReplicationError::InvalidRequest(format!(
                "acks must be one of \"0\", \"1\", \"all\", \"-1\"; got {other:?}"
            ))),
        }
    }
}

impl TryFrom<i64> for AckMode {
    type Error = ReplicationError;

    /// Parses the numbers 0, 1 and -1 (= all).
    fn try_from(n: i64) -> Result<Self> {
        match n {
            0 => Ok(AckMode::Zero),
            1 => Ok(AckMode::One),
            -1 => Ok(AckMode::All),
            other => Err(ReplicationError::InvalidRequest(format!(
                "acks must be one of 0, 1, -1; got {other}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mk_core::ErrorCode;

    #[test]
    fn ack_mode_parses_strings_and_numbers() {
        assert_eq!("0".parse::<AckMode>().unwrap(), AckMode::Zero);
        assert_eq!("1".parse::<AckMode>().unwrap(), AckMode::One);
        assert_eq!("all".parse::<AckMode>().unwrap(), AckMode::All);
        assert_eq!("-1".parse::<AckMode>().unwrap(), AckMode::All);
        for bad in ["2", "", "ALL ", "one"] {
            let err = bad.parse::<AckMode>().unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidRequest, "{bad:?}");
        }
        assert_eq!(AckMode::try_from(0).unwrap(), AckMode::Zero);
        assert_eq!(AckMode::try_from(1).unwrap(), AckMode::One);
        assert_eq!(AckMode::try_from(-1).unwrap(), AckMode::All);
        assert!(AckMode::try_from(2).is_err());
        for mode in [AckMode::Zero, AckMode::One, AckMode::All] {
            assert_eq!(mode.to_string().parse::<AckMode>().unwrap(), mode);
        }
    }

    #[test]
    fn config_defaults_are_valid_and_rules_are_enforced() {
        let ok = ReplicationConfig::default();
        ok.validate().unwrap();
        assert_eq!(ok.replica_lag_max_offsets, 10_000);
        assert_eq!(ok.replica_lag_time_ms, 10_000);
        assert_eq!(ok.replica_fetch_max_bytes, 1_048_576);
        assert_eq!(ok.min_insync_replicas, 1);
        let zero_lag = ReplicationConfig {
            replica_lag_max_offsets: 0,
            ..ReplicationConfig::default()
        };
        zero_lag.validate().unwrap();
        let bad = [
            ReplicationConfig {
                replica_lag_max_offsets: -1,
                ..ReplicationConfig::default()
            },
            ReplicationConfig {
                replica_lag_time_ms: 0,
                ..ReplicationConfig::default()
            },
            ReplicationConfig {
                replica_fetch_max_bytes: 0,
                ..ReplicationConfig::default()
            },
            ReplicationConfig {
                min_insync_replicas: 0,
                ..ReplicationConfig::default()
            },
            ReplicationConfig {
                log: LogConfig {
                    segment_max_bytes: 0,
                    ..LogConfig::default()
                },
                ..ReplicationConfig::default()
            },
        ];
        for cfg in bad {
            assert_eq!(
                cfg.validate().unwrap_err().code(),
                ErrorCode::InvalidRequest,
                "{cfg:?}"
            );
        }
    }
}
