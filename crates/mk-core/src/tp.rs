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

/// Why a name breaks the topic naming rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopicNameError {
    Empty,
    /// Longer than 249 characters.
    TooLong {
        len: usize,
    },
    /// `.` or `..`.
    Reserved {
        name: String,
    },
    /// A character outside `[A-Za-z0-9._-]`.
    BadCharacter {
        name: String,
        bad: char,
    },
}

impl fmt::Display for TopicNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("topic name must not be empty"),
            Self::TooLong { len } => write!(
                f,
                "topic name is {len} characters long; at most 249 are allowed"
            ),
            Self::Reserved { name } => write!(f, "topic name {name:?} is reserved"),
            Self::BadCharacter { name, bad } => write!(
                f,
                "topic name {name:?} contains {bad:?}; only [A-Za-z0-9._-] are allowed"
            ),
        }
    }
}

impl std::error::Error for TopicNameError {}

/// Checks the topic naming rule: 1..=249 characters of `[A-Za-z0-9._-]`,
/// and neither `.` nor `..`.
pub fn validate_topic_name(name: &str) -> Result<(), TopicNameError> {
    if name.is_empty() {
        return Err(TopicNameError::Empty);
    }
    if name.len() > 249 {
        return Err(TopicNameError::TooLong { len: name.len() });
    }
    if name == "." || name == ".." {
        return Err(TopicNameError::Reserved {
            name: name.to_string(),
        });
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(TopicNameError::BadCharacter {
            name: name.to_string(),
            bad,
        });
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
        assert_eq!(
            validate_topic_name("a/b").unwrap_err().to_string(),
            "topic name \"a/b\" contains '/'; only [A-Za-z0-9._-] are allowed"
        );
    }

    #[test]
    fn dir_name_joins_topic_and_partition() {
        assert_eq!(TopicPartition::new("t", 3).dir_name(), "t-3");
    }
}
