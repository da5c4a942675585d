//! Topic-partition identity and the topic naming rule.

use std::fmt;

/// One partition of one topic.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: u32,
}

impl TopicPartition {
    pub fn new(topic: impl Into<String>, partition: u32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }

    /// The directory name of this partition's replica: `<topic>-<partition>`.
    pub fn dir_name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// Checks the topic naming rule: 1..=249 characters of `[A-Za-z0-9._-]`,
/// and neither `.` nor `..`. Returns a message describing the violation.
pub fn validate_topic_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("topic name must not be empty".to_string());
    }
    if name.len() > 249 {
        return Err(format!(
            "topic name is {} characters long; at most 249 are allowed",
            name.len()
        ));
    }
    if name == "." || name == ".." {
        return Err(format!("topic name {name:?} is reserved"));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "topic name {name:?} contains {bad:?}; only [A-Za-z0-9._-] are allowed"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_follow_the_kafka_rule() {
        assert!(validate_topic_name("events").is_ok());
        assert!(validate_topic_name("a.b_c-D9").is_ok());
        assert!(validate_topic_name(&"x".repeat(249)).is_ok());
        assert!(validate_topic_name("").is_err());
        assert!(validate_topic_name(".").is_err());
        assert!(validate_topic_name("..").is_err());
        assert!(validate_topic_name(&"x".repeat(250)).is_err());
        assert!(validate_topic_name("a/b").is_err());
        assert!(validate_topic_name("é").is_err());
    }

    #[test]
    fn dir_name_joins_topic_and_partition() {
        assert_eq!(TopicPartition::new("t", 3).dir_name(), "t-3");
    }
}
