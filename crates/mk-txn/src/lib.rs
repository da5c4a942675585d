//! Transactions (book chapter 8): the transaction coordinator, its journal,
//! commit/abort markers, the last stable offset and read_committed
//! visibility.
//!
//! It must never know replication, consumer-group generations, networks,
//! threads, async runtimes or the wall clock. It asks its caller to append
//! markers and records instead of reaching into replica sets itself.
