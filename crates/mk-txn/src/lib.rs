//! Transactions (book chapter 8): the transaction coordinator, its journal,
//! commit/abort markers, the last stable offset and read_committed
//! visibility.
//!
//! It must never know replication, consumer-group generations, networks,
//! threads, async runtimes or the wall clock. It asks its caller to append
//! markers instead of reaching into replica sets itself.
//!
//! # The seam with mk-cluster
//!
//! mk-txn sits beside mk-replication and mk-group and may depend on none of
//! them, so it cannot append to a partition, allocate a producer id or
//! store a consumer offset. Every such side effect leaves the coordinator as
//! a value that mk-cluster executes and then reports back. The calls follow
//! Kafka's transaction flow:
//!
//! | coordinator call | hands out | mk-cluster executes | then calls |
//! | --- | --- | --- | --- |
//! | `init_producer(id, timeout, current, fresh)` | `InitProducer::NeedsProducerId` | allocates a producer id | `init_producer` again with it |
//! | `init_producer(..)` | `InitProducer::CompletePriorFirst(plan)` | the plan (what the previous epoch left) | `complete(plan)`, then `init_producer` again |
//! | `init_producer(..)` | `InitProducer::Ready { .. }` | nothing | — |
//! | `add_partitions` / `add_offsets` / `stage_offsets` / `begin` | nothing (journaled) | nothing | — |
//! | `verify_append(id, producer, tp)` | `Ok` or the error | append the batch, under the same partition lock | — |
//! | `end_txn(id, pid, epoch, outcome)` | `EndTxn::Execute(plan)` or `AlreadyComplete` | the plan | `complete(plan)` |
//! | `expire_transactions()` | `Vec<CompletionPlan>` (fenced aborts) | each plan | `complete(plan)` for each |
//! | `TransactionCoordinator::open(..)` | `Recovered { coordinator, plans }` | each plan (Prepare* found in the journal) | `complete(plan)` for each |
//! | after a failed plan execution | — | — | `pending_completions()` / `pending_completion(id)` re-issue the plan |
//!
//! Executing a `CompletionPlan`: for each `plan.markers()` entry, append
//! `marker.batch().clone()` to `marker.tp()` with acks=all (in the order
//! given, which is sorted by partition) and call `plan.ack_marker(tp)`; then
//! store every `plan.offsets_to_store()` entry for its group without a
//! generation check and call `plan.ack_offsets_stored()`; then pass the plan
//! to `complete`. `complete` consumes the plan and refuses one with a
//! piece unacknowledged, or one whose transaction is no longer in the
//! plan's Prepare* state (INVALID_TXN_STATE), so a transaction completes at
//! most once and never before its markers exist. While a plan lives, its
//! transaction counts as completing: other requests for the id get
//! CONCURRENT_TRANSACTIONS, and no second plan is handed out. Markers carry
//! the id's producer id and current epoch with sequence -1 (like Kafka's
//! coordinator-written markers): the idempotent-producer check accepts them
//! on epoch alone and registers their epoch, so late data of an older epoch
//! is fenced. Writing a marker twice is harmless: the log's transaction
//! index ignores a marker for a producer with nothing open.
//!
//! Data batches are the producer's own (its sequences, checked by the
//! partition's idempotent-producer state). mk-cluster asks `verify_append`
//! before appending a transactional batch and holds the partition's lock
//! across the check and the append; a marker needs that lock too, so no
//! batch of a transaction can land after its marker, and no batch can open
//! a transaction on a partition the coordinator will not mark (the
//! "hanging transaction" KIP-890 closes).
//!
//! Epochs: one producer id per transactional id; InitProducerId bumps the
//! epoch once per producer session. An Ongoing transaction found by a new
//! session is aborted under that bumped epoch (Kafka's epoch fence), which
//! the session then gets; one expired by its timeout is aborted under a
//! bumped epoch too, so its producer is fenced. Epochs stay below
//! `MAX_PRODUCER_EPOCH` (Kafka's `int16`); past that an id moves to a fresh
//! producer id.
//!
//! Durability: every state change is one fsynced journal line (format
//! below) written before it takes effect. After a crash, `open` keeps the
//! last valid line per id, cuts the torn tail and returns the Prepare*
//! plans. An Ongoing transaction stays Ongoing: its producer may go on
//! after the restart (Kafka does the same), and if it does not, the
//! transaction's timeout, which counts from its journaled start, aborts it.
//! `close` writes a compact snapshot.
//!
//! # Journal format
//!
//! `transactions.journal` holds one line per state change:
//! `<crc32c of the payload, 8 lowercase hex digits> <space> <compact JSON>\n`.
//! The payload is the complete metadata of one transactional id, fields in
//! this order: `id`, `state` (`Empty`, `Ongoing`, `PrepareCommit`,
//! `CompleteCommit`, `PrepareAbort`, `CompleteAbort`), `producer_id`,
//! `producer_epoch`, `last_producer_epoch` (the epoch a KIP-360 bump came
//! from, -1 if none), `timeout_ms`, `start_ms`, `partitions`
//! (`[{topic, partition}]`), `groups` (added by AddOffsetsToTxn) and
//! `offsets` (staged: `[{group, topic, partition, offset}]`, plus
//! `leader_epoch` and `metadata` when the committer sent them), then, only
//! when set, `next_producer_id` (a transactions-v2 end that exhausted the
//! epochs, while Prepare*) and `previous_producer_id` (the producer id such
//! an end moved away from, remembered for its retry). Every field is
//! required except those four, and no other is allowed; a line without
//! them (all lines written before they existed) stages no epoch and empty
//! metadata. Lines of the first format (with
//! `first_offset`, `sequences` and `clean`, written before Kafka's flow)
//! are still read, with the configured default timeout. Recovery reads
//! lines until the first bad one (CRC mismatch, unparsable JSON, missing
//! field, invalid value, a last line without its newline), cuts the file
//! there, keeps the last line per id, and rewrites the journal as one line
//! per id. A clean close writes the same compact snapshot atomically (temp
//! file, fsync, rename, directory fsync). A busy journal also compacts
//! itself past `TxnConfig::journal_compaction_lines`.
//!
//! Visibility never asks the coordinator: `visibility::fetch_committed`
//! bounds a read by `last_stable_offset(high_watermark,
//! log.first_unstable_offset())` and drops records in the log's aborted
//! ranges, so a reused transactional id cannot hide what an earlier
//! transaction committed.

mod coordinator;
mod error;
mod journal;
mod listing;
mod plan;
mod state;
pub mod visibility;

pub use coordinator::{
    CompletedTransaction, DEFAULT_MAX_TRANSACTION_TIMEOUT_MS, EndTxn, EndTxnV2, InitProducer,
    MAX_PRODUCER_EPOCH, RECENT_COMPLETIONS, Recovered, TransactionCoordinator, TxnConfig,
    TxnDescription, TxnVersion,
};
pub use error::{Result, TxnError};
pub use journal::JournalFaults;
pub use listing::{STATES_NEVER_SHOWN, TxnFilter, TxnListing};
pub use plan::{CompletionPlan, MarkerWrite};
pub use state::{Outcome, StagedCommit, StagedOffset, TxnState};
pub use visibility::{
    fetch_committed, is_aborted, is_batch_aborted, last_stable_offset, read_committed,
    read_uncommitted,
};

/// The journal's file name inside the data directory.
pub const JOURNAL_FILE_NAME: &str = "transactions.journal";
