//! A topic's stable id (Kafka's topic id, a UUID).

/// A topic's stable id (Kafka's topic id, a UUID): it tells a topic from a
/// deleted one of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicId(pub [u8; 16]);

impl TopicId {
    /// A fresh random (version 4) id; never all zeroes, which Kafka reserves
    /// for "no id".
    pub fn random() -> Self {
        loop {
            let id = TopicId(*uuid::Uuid::new_v4().as_bytes());
            if id.0 != [0; 16] {
                return id;
            }
        }
    }

    /// Parses the canonical hyphenated form.
    pub fn parse(s: &str) -> Option<Self> {
        uuid::Uuid::parse_str(s)
            .ok()
            .map(|u| TopicId(*u.as_bytes()))
    }
}

impl std::fmt::Display for TopicId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        uuid::Uuid::from_bytes(self.0).hyphenated().fmt(f)
    }
}
