//! The newline-delimited JSON-over-TCP adapter (book chapter 10): a server
//! that translates request lines into `BrokerCluster` operations, and a typed
//! client.
//!
//! It must never implement topics, offsets, fencing or visibility itself;
//! it only decodes, calls one core operation and encodes. The wire model
//! lives in `protocol` (typed requests and responses over the core's own
//! types, one module per operation family with each operation's four
//! directions side by side; `fast` is the borrowed decoder of a batched
//! produce, `wire` the strict field access and the ordered writer), the
//! socket handling in `server`, the one-call-per-request mapping in
//! `dispatch`, and the client in `client`. Only this crate and mk-server's
//! CLI know the JSON wire shapes.

mod client;
mod dispatch;
mod fast;
pub mod protocol;
mod server;
mod wire;

pub use client::{ClientError, ClientResult, JsonTcpClient, MAX_RESPONSE_BYTES, decode_answer};
pub use dispatch::execute;
pub use mk_cluster;
pub use protocol::{
    DecodedLine, ErrorResponse, Operation, Password, ProduceRecords, ProduceSpec, Request,
    Response, ServerStats, TopicConfigOverrides, TxnRef, decode_request_line,
};
pub use server::{JsonTcpServer, ServerOptions, json_code};
pub use wire::DecodeError;
