//! The storage seam every store of the broker writes through (below the
//! partition log): `StorageError`, the typed failure of the disk that every
//! layer above carries unchanged; the fault injector every write and fsync
//! passes (`fault.rs`); and small durable-file helpers, atomic replacement
//! and directory fsync (`fsutil.rs`). The partition log, the replica
//! stores, the transaction journal, the group offsets and the cluster's
//! metadata all use it; it knows nothing of what they store.

mod error;
mod fault;
pub mod fsutil;

pub use error::StorageError;
pub use fault::{Fault, FaultInjector, WriteGate, torn_error};
