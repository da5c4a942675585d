//! Transactions (book chapter 8): the transaction coordinator, its journal,
//! commit/abort markers, the last stable offset and read_committed
//! visibility.
//!
//! It must never know replication, consumer-group generations, networks,
//! threads, async runtimes or the wall clock. It asks its caller to append
//! markers and records instead of reaching into replica sets itself.
//!
//! # The seam with mk-cluster
//!
//! mk-txn sits beside mk-replication and mk-group and may depend on none of
//! them, so it cannot append to a partition, allocate a producer identity or
//! store a consumer offset. Every such side effect leaves the coordinator as
//! a value that mk-cluster executes and then reports back:
//!
//! | coordinator call | hands out | mk-cluster executes | then calls |
//! | --- | --- | --- | --- |
//! | `begin(id, pid, epoch)` | `Begin::Started` | nothing | `send` / `send_offsets` / `commit` / `abort` |
//! | `begin(id, pid, epoch)` | `Begin::CompletePriorFirst(plan)` | the plan (an older instance's transaction) | `complete(plan)`, then `begin` again with the same epoch |
//! | `send(id, epoch, tp, record)` | `PendingSend` | append `pending.batch()` to `pending.tp()` with acks=all | `send_appended(pending, base_offset)` or `send_failed(pending, fate)` |
//! | `send_offsets(id, epoch, group, offsets)` | nothing | nothing (offsets are staged) | — |
//! | `commit(id, epoch)` / `abort(id, epoch)` | `CompletionPlan` | every marker, then the offsets | `complete(plan)` |
//! | `expire_transactions()` | `Vec<CompletionPlan>` (aborts) | each plan | `complete(plan)` for each |
//! | `TransactionCoordinator::open(..)` | `Recovered { coordinator, plans }` | each plan (Prepare* found in the journal) | `complete(plan)` for each |
//! | after a failed plan execution | — | — | `pending_completions()` re-issues the plans of every Prepare* transaction |
//!
//! Executing a `CompletionPlan`: for each `plan.markers()` entry, append
//! `marker.batch().clone()` to `marker.tp()` with acks=all (in the order
//! given, which is sorted by partition) and call `plan.ack_marker(tp)`; then
//! store every `plan.offsets_to_store()` entry for its group without a
//! generation check and call `plan.ack_offsets_stored()`; then pass the plan
//! to `complete`. `complete` consumes the plan and refuses one with a
//! piece unacknowledged, or one whose transaction is no longer in the
//! plan's Prepare* state (INVALID_TXN_STATE), so a transaction completes at
//! most once and never before its markers exist. Markers carry the id's
//! producer id and current epoch with sequence -1 (like Kafka's
//! coordinator-written markers): the idempotent-producer check must accept
//! them on epoch alone, without sequence validation, and register their
//! epoch so that late data of an older epoch is fenced. Writing a marker
//! twice is harmless: the log's transaction index ignores a marker for a
//! producer with nothing open.
//!
//! A `PendingSend` counts as in flight until it is reported (or dropped):
//! commit, abort and expiry wait for it, so no data of a transaction can
//! land after its marker. The partition is journaled as part of the
//! transaction *before* the batch is handed out, so a crash between the
//! append and the report still leaves the coordinator knowing where to
//! write the ABORT marker.
//!
//! Durability: every state change is one fsynced journal line (format
//! below) written before it takes effect. After a crash, `open` keeps the
//! last valid line per id, cuts the torn tail, returns the Prepare* plans,
//! makes every Ongoing transaction abort-only, and fences sends of the
//! recovered producer epochs (their sequence numbers were not journaled
//! send by send); a newer epoch from the identity store starts clean.
//! `close` writes a compact snapshot that also records exact sequences.
//!
//! # Journal format
//!
//! `transactions.journal` holds one line per state change:
//! `<crc32c of the payload, 8 lowercase hex digits> <space> <compact JSON>\n`.
//! The payload is the complete metadata of one transactional id, fields in
//! this order: `id`, `state` (`Ongoing`, `PrepareCommit`, `CompleteCommit`,
//! `PrepareAbort`, `CompleteAbort`), `producer_id`, `producer_epoch`,
//! `start_ms`, `partitions` (`[{topic, partition, first_offset|null}]`),
//! `offsets` (staged: `[{group, topic, partition, offset}]`), `sequences`
//! (next sequence per partition: `[{topic, partition, next}]`) and `clean`
//! (true only in the snapshot written by a clean close). Every field is
//! required. Recovery reads lines until the first bad one (CRC mismatch,
//! unparsable JSON, missing field, invalid value, a last line without its
//! newline), cuts the file there, keeps the last line per id, and rewrites
//! the journal as one line per id. A clean close writes the same compact
//! snapshot atomically (temp file, fsync, rename, directory fsync). A busy
//! journal also compacts itself past `TxnConfig::journal_compaction_lines`.
//!
//! Visibility never asks the coordinator: `visibility::fetch_committed`
//! bounds a read by `last_stable_offset(high_watermark,
//! log.first_unstable_offset())` and drops records in the log's aborted
//! ranges, so a reused transactional id cannot hide what an earlier
//! transaction committed.

mod coordinator;
mod error;
mod journal;
mod plan;
mod state;
pub mod visibility;

pub use coordinator::{
    AppendFate, Begin, PendingSend, Recovered, TransactionCoordinator, TxnConfig, TxnDescription,
};
pub use error::{Result, TxnError};
pub use journal::JournalFaults;
pub use plan::{CompletionPlan, MarkerWrite};
pub use state::{Outcome, StagedOffset, TxnState};
pub use visibility::{
    fetch_committed, is_aborted, is_batch_aborted, last_stable_offset, read_committed,
    read_uncommitted,
};

/// The journal's file name inside the data directory.
pub const JOURNAL_FILE_NAME: &str = "transactions.journal";
