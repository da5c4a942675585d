//! The Kafka binary protocol adapter (book chapter 10, continued).

pub mod codec;
pub mod compression;
pub mod errors;
pub mod records;
