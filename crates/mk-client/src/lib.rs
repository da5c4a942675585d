//! The in-process client library (book chapters 1, 4 and 7), above the
//! core: the `Producer` (`producer.rs`: Kafka's default partitioner with a
//! sticky partition for keyless records, a per-partition accumulator,
//! idempotence) and the `Consumer` (`consumer.rs`: assignment or group
//! subscription, positions, commits, resets), made on a shared cluster by
//! `ClusterClients` (`clients.rs`). They reach the cluster only through
//! its public roles, and attach themselves to its lifecycle so that the
//! cluster's close and crash reach them.

mod clients;
mod consumer;
mod producer;

pub use clients::ClusterClients;
pub use consumer::{Consumer, ConsumerOptions, OffsetReset, PolledRecord};
pub use producer::{
    Producer, ProducerOptions, ProducerRecord, RecordFuture, RecordMetadata, estimated_size,
};
