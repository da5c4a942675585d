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

/// What values one group config takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupConfigKind {
    /// Milliseconds within Kafka's bounds (the broker's min and max configs
    /// at their defaults), widened to include the coordinator's own default.
    Ms { min: i32, max: i32 },
    /// One of these words (case ignored).
    Choice(&'static [&'static str]),
}

/// One of Kafka 4.1's dynamic group configs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupConfigDef {
    pub name: &'static str,
    pub kind: GroupConfigKind,
    pub doc: &'static str,
}

/// Every group config mk-group has, as Kafka 4.1 names and bounds them.
pub const GROUP_CONFIGS: [GroupConfigDef; 7] = [
    GroupConfigDef {
        name: "consumer.session.timeout.ms",
        kind: GroupConfigKind::Ms {
            min: 45_000,
            max: 60_000,
        },
        doc: "A KIP-848 member that does not heartbeat within this is removed.",
    },
    GroupConfigDef {
        name: "consumer.heartbeat.interval.ms",
        kind: GroupConfigKind::Ms {
            min: 5_000,
            max: 15_000,
        },
        doc: "How often KIP-848 members heartbeat.",
    },
    GroupConfigDef {
        name: "share.session.timeout.ms",
        kind: GroupConfigKind::Ms {
            min: 45_000,
            max: 60_000,
        },
        doc: "A share member that does not heartbeat within this is removed.",
    },
    GroupConfigDef {
        name: "share.heartbeat.interval.ms",
        kind: GroupConfigKind::Ms {
            min: 5_000,
            max: 15_000,
        },
        doc: "How often share members heartbeat.",
    },
    GroupConfigDef {
        name: "share.record.lock.duration.ms",
        kind: GroupConfigKind::Ms {
            min: 15_000,
            max: 60_000,
        },
        doc: "How long a member holds the records a share fetch acquired for it.",
    },
    GroupConfigDef {
        name: "share.auto.offset.reset",
        kind: GroupConfigKind::Choice(&["latest", "earliest"]),
        doc: "Where a share group starts a partition it has no state for.",
    },
    GroupConfigDef {
        name: "share.isolation.level",
        kind: GroupConfigKind::Choice(&["read_uncommitted", "read_committed"]),
        doc: "Which records a share group hands out.",
    },
];

/// One group config as describe shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfigEntry {
    pub name: &'static str,
    pub value: String,
    /// True when the group has not set it (the coordinator's default).
    pub is_default: bool,
}

fn invalid_config(msg: String) -> crate::error::GroupError {
    crate::error::GroupError::InvalidConfig(msg)
}

impl GroupSettings {
    /// Sets (`Some`) or removes (`None`) the config `name`. INVALID_CONFIG
    /// names an unknown config or a value out of its bounds (`defaults`
    /// widens a range to include the coordinator's own default).
    pub fn apply(
        &mut self,
        name: &str,
        value: Option<&str>,
        defaults: &GroupSettings,
    ) -> crate::Result<()> {
        let def = GROUP_CONFIGS
            .iter()
            .find(|d| d.name == name)
            .ok_or_else(|| invalid_config(format!("unknown group config {name:?}")))?;
        let Some(value) = value else {
            self.set_raw(name, None, None);
            return Ok(());
        };
        match def.kind {
            GroupConfigKind::Ms { min, max } => {
                let default = defaults.get_ms(name).unwrap_or(min);
                let (min, max) = (min.min(default), max.max(default));
                let v: i32 = value.trim().parse().map_err(|_| {
                    invalid_config(format!(
                        "{name} must be a number of milliseconds, got {value:?}"
                    ))
                })?;
                if v < min || v > max {
                    return Err(invalid_config(format!(
                        "{name} must be in [{min}, {max}], got {v}"
                    )));
                }
                self.set_raw(name, Some(v), None);
            }
            GroupConfigKind::Choice(words) => {
                let word = words
                    .iter()
                    .find(|w| w.eq_ignore_ascii_case(value.trim()))
                    .ok_or_else(|| {
                        invalid_config(format!(
                            "{name} must be one of {}, got {value:?}",
                            words.join(", ")
                        ))
                    })?;
                self.set_raw(name, None, Some(word));
            }
        }
        Ok(())
    }

    fn get_ms(&self, name: &str) -> Option<i32> {
        match name {
            "consumer.session.timeout.ms" => self.consumer_session_timeout_ms,
            "consumer.heartbeat.interval.ms" => self.consumer_heartbeat_interval_ms,
            "share.session.timeout.ms" => self.share_session_timeout_ms,
            "share.heartbeat.interval.ms" => self.share_heartbeat_interval_ms,
            "share.record.lock.duration.ms" => self.share_record_lock_duration_ms,
            _ => None,
        }
    }

    fn set_raw(&mut self, name: &str, ms: Option<i32>, word: Option<&str>) {
        match name {
            "consumer.session.timeout.ms" => self.consumer_session_timeout_ms = ms,
            "consumer.heartbeat.interval.ms" => self.consumer_heartbeat_interval_ms = ms,
            "share.session.timeout.ms" => self.share_session_timeout_ms = ms,
            "share.heartbeat.interval.ms" => self.share_heartbeat_interval_ms = ms,
            "share.record.lock.duration.ms" => self.share_record_lock_duration_ms = ms,
            "share.auto.offset.reset" => {
                self.share_auto_offset_reset = word.and_then(ShareAutoOffsetReset::parse);
            }
            "share.isolation.level" => {
                self.share_isolation_level = word.and_then(ShareIsolation::parse)
            }
            _ => {}
        }
    }

    /// `(name, value)` of every config this group sets, in the order of
    /// [`GROUP_CONFIGS`].
    pub fn overrides(&self) -> Vec<(String, String)> {
        GROUP_CONFIGS
            .iter()
            .filter_map(|d| self.value_of(d.name).map(|v| (d.name.to_string(), v)))
            .collect()
    }

    /// The value of one config as text, if set.
    pub fn value_of(&self, name: &str) -> Option<String> {
        match name {
            "share.auto.offset.reset" => {
                self.share_auto_offset_reset.map(|v| v.as_str().to_string())
            }
            "share.isolation.level" => self.share_isolation_level.map(|v| v.as_str().to_string()),
            _ => self.get_ms(name).map(|v| v.to_string()),
        }
    }
}
