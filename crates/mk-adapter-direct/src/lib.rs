//! The in-process adapter (book chapter 10): a transparent facade over
//! `BrokerCluster` with no semantics of its own.
//!
//! It must never implement topics, offsets, fencing or visibility itself.
