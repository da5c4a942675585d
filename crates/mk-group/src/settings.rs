//! Per-group settings: Kafka's dynamic group configs (`consumer.*` of
//! KIP-848 groups, `share.*` of KIP-932 groups). mk-cluster owns the
//! config catalog that validates, stores and describes them, and hands the
//! coordinator each group's values; a value left unset falls back to the
//! coordinator's own default (the broker config).

use std::fmt;

/// Where a share group starts reading a partition it has no state for
/// (`share.auto.offset.reset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShareAutoOffsetReset {
    /// Kafka's default: only records produced from now on.
    #[default]
    Latest,
    Earliest,
}

impl ShareAutoOffsetReset {
    pub const fn as_str(self) -> &'static str {
        match self {
            ShareAutoOffsetReset::Latest => "latest",
            ShareAutoOffsetReset::Earliest => "earliest",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Latest, Self::Earliest]
            .into_iter()
            .find(|v| v.as_str().eq_ignore_ascii_case(s.trim()))
    }
}

impl fmt::Display for ShareAutoOffsetReset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which records a share group hands out (`share.isolation.level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShareIsolation {
    /// Kafka's default: everything up to the high watermark.
    #[default]
    ReadUncommitted,
    /// Only committed data, up to the last stable offset; aborted
    /// transactions' records are archived without being delivered.
    ReadCommitted,
}

impl ShareIsolation {
    pub const fn as_str(self) -> &'static str {
        match self {
            ShareIsolation::ReadUncommitted => "read_uncommitted",
            ShareIsolation::ReadCommitted => "read_committed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::ReadUncommitted, Self::ReadCommitted]
            .into_iter()
            .find(|v| v.as_str().eq_ignore_ascii_case(s.trim()))
    }
}

impl fmt::Display for ShareIsolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One group's settings; `None` means the coordinator's default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupSettings {
    /// `consumer.session.timeout.ms`
    pub consumer_session_timeout_ms: Option<i32>,
    /// `consumer.heartbeat.interval.ms`
    pub consumer_heartbeat_interval_ms: Option<i32>,
    /// `share.session.timeout.ms`
    pub share_session_timeout_ms: Option<i32>,
    /// `share.heartbeat.interval.ms`
    pub share_heartbeat_interval_ms: Option<i32>,
    /// `share.record.lock.duration.ms`
    pub share_record_lock_duration_ms: Option<i32>,
    /// `share.delivery.count.limit`
    pub share_delivery_count_limit: Option<i32>,
    /// `share.auto.offset.reset`
    pub share_auto_offset_reset: Option<ShareAutoOffsetReset>,
    /// `share.isolation.level`
    pub share_isolation_level: Option<ShareIsolation>,
}
