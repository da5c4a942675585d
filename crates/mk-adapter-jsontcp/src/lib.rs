//! The newline-delimited JSON-over-TCP adapter (book chapter 10): a server
//! that translates request lines into `BrokerCluster` operations, and a typed
//! client.
//!
//! It must never implement topics, offsets, fencing or visibility itself;
//! it only decodes, calls one core operation and encodes.
