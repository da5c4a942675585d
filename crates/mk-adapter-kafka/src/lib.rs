//! The Kafka binary protocol adapter (book chapter 10, continued): unmodified
//! Kafka clients — kcat, librdkafka-based clients, kafka-python, aiokafka,
//! kafkajs — talk to the one semantic core.
//!
//! Like the JSON adapter it only translates: decode a request, call core
//! operations, encode the answer. It holds no second implementation of
//! topics, offsets, groups, fencing, visibility or transactions; what Kafka
//! clients need and the core lacked was added to the core crate that owns
//! it. The parts: `codec` (the protocol's primitive types over the
//! project's bounded reader), `frame` (request and response headers),
//! `records` and `compression` (RecordBatch v2 <-> MKB1), `errors` (the one
//! code mapping), `api` (the API table, the router, and one module per API
//! family with each message's decode, encode and handler side by side) and
//! `server` (listeners, framing, pipelining, limits), `listener` (Kafka's
//! listener syntax and security protocols) and `tls` (rustls from PEM
//! files, the SSL principal).

pub mod api;
pub mod codec;
pub mod compression;
pub mod errors;
pub mod frame;
pub mod listener;
#[allow(
    clippy::too_many_lines,
    reason = "generated from the schemas: one match arm per API and version"
)]
pub mod messages;
pub mod records;
mod server;
pub mod tls;

pub use listener::{ListenerSpec, SecurityProtocol, parse_listeners};
pub use mk_cluster;
pub use server::{
    BrokerEndpoint, KafkaListener, KafkaOptions, KafkaServer, ListenerEndpoints, bind_consecutive,
    listen, reserve, reserve_consecutive,
};
pub use tls::TlsFiles;
