//! The semantic core (book chapters 1, 4 and 9): `BrokerCluster` composes the
//! log, replication, group and transaction crates behind one API, plus the
//! in-process Producer and Consumer and the cluster lifecycle.
//!
//! It must never know JSON wire shapes, sockets or command-line flags;
//! adapters translate into its operations.

pub mod config;
mod error;
pub mod metadata;
pub mod partitioner;

pub use config::{BrokerId, CleanupPolicy, FlushPolicy, MiniKafkaConfig, TopicConfig};
pub use error::{ClusterError, Result};
