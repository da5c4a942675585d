//! What a consumer-group member subscribes to — topic names, a regular
//! expression, or both — resolved against the cluster's user topics.
//!
//! Kafka matches a subscription's regular expression with RE2/J, against
//! the whole topic name. mk-group uses the `regex` crate, whose syntax is
//! RE2's as well (no look-around, no backreferences), anchored at both ends
//! the same way. The differences: `\w`, `\d`, `\s` and `\b` are Unicode-aware
//! here and ASCII in RE2/J, and the crate accepts a few spellings RE2/J
//! rejects (e.g. `(?<name>...)` groups). Topic names are ASCII
//! (`[A-Za-z0-9._-]`), so a pattern both accept matches the same topics.

use crate::error::{GroupError, Result};
use crate::metadata::TopicMetadata;
use regex::{Regex, RegexBuilder};
use std::collections::{BTreeMap, BTreeSet};

/// Longest regular expression a member may subscribe with.
pub const MAX_REGEX_BYTES: usize = 4096;

/// Most topic names one subscription may list.
pub const MAX_SUBSCRIBED_TOPICS: usize = 10_000;

/// Upper bound of a compiled expression's size: a hostile pattern cannot
/// make the coordinator build a huge automaton.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Compiles a member's regular expression, anchored to match whole topic
/// names. INVALID_REGULAR_EXPRESSION if it does not compile (or is too big).
pub(crate) fn compile(pattern: &str) -> Result<Regex> {
    if pattern.len() > MAX_REGEX_BYTES {
        return Err(GroupError::InvalidRegularExpression(format!(
            "the subscription regex is {} bytes long; at most {MAX_REGEX_BYTES} are allowed",
            pattern.len()
        )));
    }
    RegexBuilder::new(&format!("^(?:{pattern})$"))
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| {
            GroupError::InvalidRegularExpression(format!("SubscribedTopicRegex {pattern:?}: {e}"))
        })
}

/// The topics of the cluster and what each regular expression of a group
/// matches among them, recomputed only when the topics change.
#[derive(Debug, Default)]
pub(crate) struct Resolver {
    topics: Vec<String>,
    compiled: BTreeMap<String, Regex>,
    matches: BTreeMap<String, BTreeSet<String>>,
}

impl Resolver {
    /// Brings the topic list up to date; forgets every cached match if it
    /// changed.
    pub(crate) fn refresh(&mut self, meta: &dyn TopicMetadata) {
        let topics = meta.topic_names();
        if topics != self.topics {
            self.topics = topics;
            self.matches.clear();
        }
    }

    /// The topics `pattern` matches (compiled and cached on first use).
    pub(crate) fn matching(&mut self, pattern: &str) -> Result<&BTreeSet<String>> {
        if !self.matches.contains_key(pattern) {
            if !self.compiled.contains_key(pattern) {
                let re = compile(pattern)?;
                self.compiled.insert(pattern.to_string(), re);
            }
            let re = &self.compiled[pattern];
            let hits = self
                .topics
                .iter()
                .filter(|t| re.is_match(t))
                .cloned()
                .collect();
            self.matches.insert(pattern.to_string(), hits);
        }
        Ok(&self.matches[pattern])
    }

    /// Drops the patterns no member uses any more.
    pub(crate) fn retain(&mut self, in_use: &BTreeSet<&str>) {
        self.compiled.retain(|p, _| in_use.contains(p.as_str()));
        self.matches.retain(|p, _| in_use.contains(p.as_str()));
    }

    /// The existing topics a subscription resolves to: its names that
    /// exist, and every topic its expression matches.
    pub(crate) fn resolve(
        &mut self,
        names: &BTreeSet<String>,
        regex: Option<&str>,
        meta: &dyn TopicMetadata,
    ) -> Result<BTreeSet<String>> {
        let mut topics: BTreeSet<String> = names
            .iter()
            .filter(|t| meta.partition_count(t).is_some())
            .cloned()
            .collect();
        if let Some(pattern) = regex {
            topics.extend(self.matching(pattern)?.iter().cloned());
        }
        Ok(topics)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_matches_whole_topic_names_only() {
        let meta = BTreeMap::from([
            ("orders".to_string(), 1u32),
            ("orders-eu".to_string(), 1),
            ("audit".to_string(), 1),
        ]);
        let mut r = Resolver::default();
        r.refresh(&meta);
        let hits = r
            .resolve(&BTreeSet::new(), Some("orders.*"), &meta)
            .unwrap();
        assert_eq!(hits, BTreeSet::from(["orders".into(), "orders-eu".into()]));
        // Unanchored in the pattern, anchored in the match: "rders" alone
        // matches nothing.
        assert!(
            r.resolve(&BTreeSet::new(), Some("rders"), &meta)
                .unwrap()
                .is_empty()
        );
        // Names that do not exist are left out; both kinds combine.
        let names = BTreeSet::from(["audit".to_string(), "nope".to_string()]);
        let both = r.resolve(&names, Some("orders"), &meta).unwrap();
        assert_eq!(both, BTreeSet::from(["audit".into(), "orders".into()]));
    }

    #[test]
    fn new_topics_are_seen_after_a_refresh() {
        let mut meta = BTreeMap::from([("a1".to_string(), 1u32)]);
        let mut r = Resolver::default();
        r.refresh(&meta);
        assert_eq!(r.matching("a.").unwrap().len(), 1);
        meta.insert("a2".into(), 1);
        r.refresh(&meta);
        assert_eq!(r.matching("a.").unwrap().len(), 2);
    }

    #[test]
    fn a_bad_or_huge_pattern_is_refused() {
        for bad in ["(", "a{99999}{99999}", &"x".repeat(MAX_REGEX_BYTES + 1)] {
            let e = compile(bad).unwrap_err();
            assert_eq!(
                e.code(),
                mk_core::ErrorCode::InvalidRegularExpression,
                "{bad:.20}"
            );
        }
        assert!(compile("^orders$").is_ok(), "anchors inside are fine");
    }
}
