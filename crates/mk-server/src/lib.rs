//! The MiniKafka broker as a library: what the `mk-server` binary serves
//! with, and an embedded broker for tests ([`embedded`]).
//!
//! A test starts a broker on free loopback ports with a temporary data
//! directory, gets its bootstrap address, and the broker stops (and the
//! directory goes) when the handle is dropped. In-process:
//!
//! ```
//! use mk_server::embedded::BrokerBuilder;
//!
//! let broker = BrokerBuilder::new()
//!     .brokers([1, 2, 3])
//!     .min_insync_replicas(2)
//!     .start()
//!     .expect("the broker starts");
//! broker.create_topic("events", 2, 3).expect("created");
//! // Point any Kafka client at broker.bootstrap() ("127.0.0.1:PORT,..."),
//! // or a JSON-TCP client at broker.json_addr().
//! assert_eq!(broker.listening().kafka.len(), 3);
//! assert!(broker.bootstrap().starts_with("127.0.0.1:"));
//! ```
//!
//! `BrokerBuilder::spawn(path)` runs the `mk-server` binary as a child
//! process instead (the same flags, the same handle methods, plus signals
//! and exit codes). `tests/kafka_client.rs` uses both from a Kafka client
//! (rskafka): produce, consume, a restart that keeps every record.
//!
//! Serving itself is `BrokerCluster` + `JsonTcpServer` + `KafkaServer`
//! (`serve.rs`); nothing here implements broker semantics.

pub mod embedded;
mod listening;
mod metrics;
mod serve;
mod settings;
mod supervise;

pub use listening::Listening;
pub use serve::{ServeError, run};
pub use settings::{DEFAULT_SEGMENT_BYTES, ServeArgs, Settings};
