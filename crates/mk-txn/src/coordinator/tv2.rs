//! Transactions v2 (KIP-890 part 2): the coordinator's side of the flow
//! that clients speaking EndTxn v5, Produce v12 and TxnOffsetCommit v5 use.
//!
//! - Every end bumps the epoch: EndTxn journals Prepare* under the next
//!   epoch, the markers carry it (so a late batch of the ended
//!   transaction is fenced on every partition it touched), and the
//!   producer goes on with it (EndTxn v5 answers it). When the epochs are
//!   exhausted the markers carry the last one and the id moves to a fresh
//!   producer id at epoch 0.
//! - A retry of an end whose answer was lost carries the epoch before the
//!   bump; it gets the same answer (`last_producer_epoch` remembers it).
//! - Partitions and groups join implicitly: a transactional batch for a
//!   partition not yet in the transaction adds it (beginning the
//!   transaction if none is open), and so does TxnOffsetCommit for its
//!   group; there is no AddPartitionsToTxn / AddOffsetsToTxn round trip.
//! - An abort with no open transaction is allowed: it bumps the epoch and
//!   writes no marker (the client's way to get a fresh epoch after an
//!   abortable error).
//!
//! Clients of the first protocol (EndTxn v0-4, Produce v3-11) keep the
//! behaviour of `coordinator.rs`: one epoch per session.

use super::{Entry, TransactionCoordinator, begun, check_not_abort_only, completing};
use super::{MAX_PRODUCER_EPOCH, epoch_mismatch};
use crate::error::{Result, TxnError};
use crate::plan::CompletionPlan;
use crate::state::{Outcome, TxnMetadata, TxnState};
use mk_core::TopicPartition;
use mk_log::ProducerInfo;

/// Which transaction protocol a request speaks (Kafka's
/// `transaction.version` feature): V1 for EndTxn v0-4 and Produce v3-11,
/// V2 from EndTxn v5 and Produce v12 on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnVersion {
    V1,
    V2,
}

/// The outcome of `end_txn_v2`.
#[must_use = "an Execute plan must be executed and passed to complete(); NeedsProducerId asks for another call"]
#[derive(Debug)]
pub enum EndTxnV2 {
    /// The decision is journaled under the bumped epoch: execute the plan,
    /// `complete` it, and answer `plan.continue_as()`.
    Execute(CompletionPlan),
    /// A retry of an end that is complete: answer this identity.
    AlreadyComplete {
        producer_id: i64,
        producer_epoch: i32,
    },
    /// The epochs are exhausted: allocate a producer id and call again
    /// with it.
    NeedsProducerId,
}

impl TransactionCoordinator {
    /// EndTxn of the second protocol. Errors in Kafka's order: unknown id or
    /// another producer id -> INVALID_PRODUCER_ID_MAPPING; then
    ///
    /// - the current epoch: Ongoing (or, for an abort, no open
    ///   transaction) journals Prepare* under the next epoch and returns
    ///   the plan; commit of an abort-only transaction or of no transaction
    ///   -> INVALID_TXN_STATE; Prepare* -> CONCURRENT_TRANSACTIONS;
    /// - the identity before the bump of a Prepare* or Complete* end (a
    ///   retry; after a move to a fresh producer id, the previous producer
    ///   id with its last epoch; after a timeout's abort, the timed-out
    ///   epoch): the same outcome gets the plan again (or
    ///   CONCURRENT_TRANSACTIONS while it executes) or `AlreadyComplete`
    ///   with the identity to go on with; the other outcome is
    ///   INVALID_TXN_STATE;
    /// - any other epoch -> PRODUCER_FENCED.
    pub fn end_txn_v2(
        &mut self,
        txn_id: &str,
        producer_id: i64,
        producer_epoch: i32,
        outcome: Outcome,
        fresh_producer_id: Option<i64>,
    ) -> Result<EndTxnV2> {
        self.check_running()?;
        if let Some(entry) = self.txns.get(txn_id)
            && is_end_retry(&entry.meta, producer_id, producer_epoch)
        {
            return retried_end(entry, outcome);
        }
        let entry = self.known(txn_id, producer_id)?;
        let meta = &entry.meta;
        if producer_epoch != meta.producer_epoch {
            return Err(epoch_mismatch(txn_id, producer_epoch, meta.producer_epoch));
        }
        match meta.state {
            TxnState::Ongoing if outcome == Outcome::Commit => check_not_abort_only(entry)?,
            TxnState::Ongoing => {}
            s if s.prepared().is_some() => return Err(completing(txn_id, s)),
            s if outcome == Outcome::Commit => {
                return Err(TxnError::state(
                    txn_id,
                    "Ongoing to commit",
                    format!("{s} (no open transaction)"),
                ));
            }
            _ => {}
        }
        let rollover = meta.producer_epoch + 1 >= MAX_PRODUCER_EPOCH;
        let fresh = fresh_producer_id.filter(|p| *p >= 0 && *p != meta.producer_id);
        if rollover && fresh.is_none() {
            return Ok(EndTxnV2::NeedsProducerId);
        }
        let mut next = if meta.state == TxnState::Ongoing {
            meta.clone()
        } else {
            // An abort with nothing open: nothing of the previous
            // transaction is marked again.
            begun(meta, self.clock.now_ms())
        };
        next.state = outcome.prepare_state();
        next.last_producer_epoch = meta.producer_epoch;
        next.producer_epoch = (meta.producer_epoch + 1).min(MAX_PRODUCER_EPOCH);
        next.next_producer_id = if rollover { fresh } else { None };
        if outcome == Outcome::Abort {
            next.offsets.clear();
        }
        self.store(next)?;
        let entry = self.entry_mut(txn_id)?;
        entry.abort_only = None;
        entry.session_epoch = None;
        Ok(EndTxnV2::Execute(entry.plan(outcome)))
    }

    /// The check of a transactional batch of the second protocol before it
    /// is appended to `tp`: the batch's producer id and epoch must be the
    /// id's (INVALID_PRODUCER_ID_MAPPING / INVALID_PRODUCER_EPOCH); a
    /// partition not yet in the transaction is added, and an id with no
    /// open transaction begins one with it (journaled before the append).
    /// A transaction being decided -> CONCURRENT_TRANSACTIONS; an
    /// abort-only one -> INVALID_TXN_STATE. The caller holds the
    /// partition's lock across this call and the append, as for
    /// `verify_append`.
    pub fn add_partition_on_append(
        &mut self,
        txn_id: &str,
        producer: ProducerInfo,
        tp: &TopicPartition,
    ) -> Result<()> {
        let entry = self.batch_entry(txn_id, producer)?;
        let meta = &entry.meta;
        if meta.state == TxnState::Ongoing && meta.partitions.contains(tp) {
            return Ok(());
        }
        if meta.state.prepared().is_some() {
            return Err(completing(txn_id, meta.state));
        }
        check_not_abort_only(entry)?;
        let mut next = if meta.state == TxnState::Ongoing {
            meta.clone()
        } else {
            begun(meta, self.clock.now_ms())
        };
        next.partitions.insert(tp.clone());
        self.store(next)
    }

    /// AddPartitionsToTxn v4+ with `verify_only` (the check brokers ask of
    /// the coordinator before a transactional append): whether each of
    /// `partitions` is in the id's Ongoing transaction, changing nothing.
    /// Unknown id or another producer id -> INVALID_PRODUCER_ID_MAPPING;
    /// another epoch -> PRODUCER_FENCED; a transaction being decided ->
    /// CONCURRENT_TRANSACTIONS.
    pub fn partitions_in_transaction(
        &self,
        txn_id: &str,
        producer_id: i64,
        producer_epoch: i32,
        partitions: &[TopicPartition],
    ) -> Result<Vec<bool>> {
        self.check_running()?;
        let meta = &self.checked(txn_id, producer_id, producer_epoch)?.meta;
        if meta.state.prepared().is_some() {
            return Err(completing(txn_id, meta.state));
        }
        let open = meta.state == TxnState::Ongoing;
        Ok(partitions
            .iter()
            .map(|tp| open && meta.partitions.contains(tp))
            .collect())
    }
}

/// True when `(producer_id, producer_epoch)` is the identity an end of the
/// second protocol came with before its bump (the producer id before a move
/// to a fresh one included), and that end is decided: a retry whose answer
/// was lost.
fn is_end_retry(meta: &TxnMetadata, producer_id: i64, producer_epoch: i32) -> bool {
    (meta.state.prepared().is_some() || meta.state.is_complete())
        && meta.retry_identity() == Some((producer_id, producer_epoch))
}

/// A retry of the end that bumped the epoch: the same outcome gets the
/// plan again (CONCURRENT_TRANSACTIONS while it executes) or the identity
/// the producer goes on with; the other outcome is INVALID_TXN_STATE.
fn retried_end(entry: &Entry, outcome: Outcome) -> Result<EndTxnV2> {
    let meta = &entry.meta;
    let txn_id = meta.id.as_str();
    if meta.state == outcome.prepare_state() {
        if entry.is_completing() {
            return Err(completing(txn_id, meta.state));
        }
        return Ok(EndTxnV2::Execute(entry.plan(outcome)));
    }
    if meta.state == outcome.complete_state() {
        return Ok(EndTxnV2::AlreadyComplete {
            producer_id: meta.producer_id,
            producer_epoch: meta.producer_epoch,
        });
    }
    Err(TxnError::state(
        txn_id,
        format!(
            "{} or {} for a retry of EndTxn({outcome:?})",
            outcome.prepare_state(),
            outcome.complete_state()
        ),
        meta.state.as_str(),
    ))
}
