//! Consumer groups (book chapter 7): the group coordinator with generations
//! and fencing, the assignors, and durable committed offsets stored in an
//! internal compacted log.
//!
//! It must never know replication, transactions, networks, JSON wire shapes,
//! threads, async runtimes or the wall clock.
