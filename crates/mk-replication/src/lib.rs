//! Replication (book chapters 4-6): a partition's replica set with follower
//! fetch, the in-sync replica set, the high watermark, acks modes, leader
//! epochs with KIP-101/279 reconciliation, and the broker half of the
//! idempotent producer.
//!
//! It must never know consumer groups, transactions' coordinator state,
//! networks, JSON, threads, async runtimes or the wall clock: time comes from
//! an injected `mk_core::Clock`.
