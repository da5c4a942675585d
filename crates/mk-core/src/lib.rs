//! The shared vocabulary of MiniKafka: `TopicPartition`, the injected `Clock`
//! (`SystemClock`, `ManualClock`), the stable `ErrorCode` strings of the
//! public protocol, and `ByteReader`, the bounded cursor every decoder uses.
//!
//! This crate owns nothing else. It knows no logs, replicas, groups,
//! transactions, files, JSON or networks; every other crate may depend on it
//! and it depends on nothing.

mod clock;
mod error;
mod reader;
mod tp;

pub use clock::{Clock, ManualClock, SharedClock, SystemClock};
pub use error::ErrorCode;
pub use reader::{ByteReader, Truncated};
pub use tp::{TopicNameError, TopicPartition, validate_topic_name};
