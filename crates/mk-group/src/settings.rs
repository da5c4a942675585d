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
    /// `by_duration:<ISO-8601 duration>`: the first record whose timestamp
    /// is at most this many milliseconds before the moment the partition
    /// is first fetched (the log end when no record is that recent).
    ByDuration {
        ms: i64,
    },
}

/// The prefix of Kafka's duration-based reset strategy.
const BY_DURATION: &str = "by_duration:";

impl ShareAutoOffsetReset {
    /// Kafka's spellings, case ignored: `latest`, `earliest` or
    /// `by_duration:PnDTnHnMn.nS` (Java's `Duration.parse` format, without
    /// signs: a negative duration is refused, as Kafka refuses it).
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("latest") {
            return Some(Self::Latest);
        }
        if s.eq_ignore_ascii_case("earliest") {
            return Some(Self::Earliest);
        }
        let head = s.get(..BY_DURATION.len())?;
        if !head.eq_ignore_ascii_case(BY_DURATION) {
            return None;
        }
        let ms = parse_iso_duration_ms(&s[BY_DURATION.len()..])?;
        Some(Self::ByDuration { ms })
    }
}

impl fmt::Display for ShareAutoOffsetReset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShareAutoOffsetReset::Latest => f.write_str("latest"),
            ShareAutoOffsetReset::Earliest => f.write_str("earliest"),
            ShareAutoOffsetReset::ByDuration { ms } => {
                write!(f, "{BY_DURATION}{}", iso_duration(*ms))
            }
        }
    }
}

/// An ISO-8601 duration as Java's `Duration.parse` reads it (`P1D`,
/// `PT1H30M`, `PT0.5S`, `P1DT2H`; letters in either case, `.` or `,`
/// before a fraction of seconds), in whole milliseconds (finer digits are
/// dropped). `None` for anything else, a sign included, or an overflow.
fn parse_iso_duration_ms(s: &str) -> Option<i64> {
    let rest = s.strip_prefix(['P', 'p'])?;
    let (date, time) = match rest.find(['T', 't']) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let mut total: i64 = 0;
    let mut parts = 0;
    if !date.is_empty() {
        let days = date.strip_suffix(['D', 'd'])?;
        total = add_units(total, days, 86_400_000)?;
        parts += 1;
    }
    if let Some(mut time) = time {
        if time.is_empty() {
            return None;
        }
        for (unit, ms) in [('H', 3_600_000), ('M', 60_000)] {
            if let Some(i) = time.find([unit, unit.to_ascii_lowercase()]) {
                total = add_units(total, &time[..i], ms)?;
                time = &time[i + 1..];
                parts += 1;
            }
        }
        if !time.is_empty() {
            total = total.checked_add(seconds_ms(time.strip_suffix(['S', 's'])?)?)?;
            parts += 1;
        }
    }
    (parts > 0).then_some(total)
}

/// `total + digits * unit_ms`; `None` unless `digits` is a plain number.
fn add_units(total: i64, digits: &str, unit_ms: i64) -> Option<i64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    total.checked_add(digits.parse::<i64>().ok()?.checked_mul(unit_ms)?)
}

/// `12`, `12.5` or `12,005` seconds in milliseconds (at most nine digits
/// of fraction, as Java allows).
fn seconds_ms(text: &str) -> Option<i64> {
    let (whole, fraction) = match text.find(['.', ',']) {
        Some(i) => (&text[..i], &text[i + 1..]),
        None => (text, ""),
    };
    if fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let millis: String = fraction.chars().chain("000".chars()).take(3).collect();
    add_units(millis.parse().ok()?, whole, 1_000)
}

/// `ms` as Java's `Duration.toString` writes it: `PT0S`, `PT1H30M`,
/// `PT24H`, `PT0.5S`.
fn iso_duration(ms: i64) -> String {
    let (hours, rest) = (ms / 3_600_000, ms % 3_600_000);
    let (minutes, rest) = (rest / 60_000, rest % 60_000);
    let (seconds, millis) = (rest / 1_000, rest % 1_000);
    let mut out = String::from("PT");
    if hours > 0 {
        out.push_str(&format!("{hours}H"));
    }
    if minutes > 0 {
        out.push_str(&format!("{minutes}M"));
    }
    if seconds > 0 || millis > 0 || out == "PT" {
        out.push_str(&seconds.to_string());
        if millis > 0 {
            let fraction = format!("{millis:03}");
            out.push('.');
            out.push_str(fraction.trim_end_matches('0'));
        }
        out.push('S');
    }
    out
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
    /// `latest`, `earliest` or `by_duration:<ISO-8601 duration>`.
    ResetStrategy,
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
        kind: GroupConfigKind::ResetStrategy,
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
            GroupConfigKind::ResetStrategy => {
                let reset = ShareAutoOffsetReset::parse(value).ok_or_else(|| {
                    invalid_config(format!(
                        "{name} must be latest, earliest or by_duration:PnDTnHnMn.nS \
                         (a duration that is not negative), got {value:?}"
                    ))
                })?;
                self.share_auto_offset_reset = Some(reset);
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
            "share.auto.offset.reset" => self.share_auto_offset_reset.map(|v| v.to_string()),
            "share.isolation.level" => self.share_isolation_level.map(|v| v.as_str().to_string()),
            _ => self.get_ms(name).map(|v| v.to_string()),
        }
    }
}
