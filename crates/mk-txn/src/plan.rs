//! `CompletionPlan`: the side effects of a transaction decision that the
//! coordinator cannot perform itself (it never touches partitions), handed
//! to the caller (mk-cluster) to execute and acknowledge piece by piece
//! before `TransactionCoordinator::complete` accepts it back.

use crate::error::{Result, TxnError};
use crate::state::{Outcome, StagedOffset, TxnMetadata};
use mk_core::TopicPartition;
use mk_log::{ProducerInfo, RecordBatch};
use std::sync::Arc;

/// One control batch to append to one partition.
#[derive(Debug, Clone)]
pub struct MarkerWrite {
    tp: TopicPartition,
    batch: RecordBatch,
    written: bool,
}

impl MarkerWrite {
    /// The partition that receives the marker.
    pub fn tp(&self) -> &TopicPartition {
        &self.tp
    }

    /// The COMMIT or ABORT control batch to append (clone it per attempt;
    /// writing it twice is harmless).
    pub fn batch(&self) -> &RecordBatch {
        &self.batch
    }

    /// True once the caller acknowledged the append.
    pub fn is_written(&self) -> bool {
        self.written
    }
}

/// The work that turns a `Prepare*` transaction into `Complete*`: append a
/// marker to every touched partition (sorted order, acks=all), store the
/// staged offsets (commit only), acknowledge each piece on the plan, then
/// pass the plan to `TransactionCoordinator::complete`.
///
/// A plan is not `Clone` and `complete` consumes it, so one plan completes a
/// transaction at most once; `complete` refuses a plan whose pieces were not
/// all acknowledged. While a plan exists its transaction counts as being
/// completed: other requests for the id get CONCURRENT_TRANSACTIONS instead
/// of a second plan. Dropping a plan unfinished (a failed marker write, a
/// cancelled task) ends that, and the next request or the expiry step gets
/// the plan again.
#[must_use = "execute the markers and offsets, acknowledge them, then pass the plan to complete()"]
#[derive(Debug)]
pub struct CompletionPlan {
    txn_id: String,
    outcome: Outcome,
    producer: ProducerInfo,
    markers: Vec<MarkerWrite>,
    offsets: Vec<StagedOffset>,
    offsets_stored: bool,
    /// The producer id and epoch the producer goes on with once the plan
    /// completes (transactions v2 hands them back in EndTxn).
    continue_as: (i64, i32),
    /// Shared with the coordinator's entry: the completion is in progress
    /// while this plan lives.
    _in_progress: Arc<()>,
}

impl CompletionPlan {
    /// The plan that carries the decision `outcome` of `meta`'s transaction.
    pub(crate) fn for_txn(meta: &TxnMetadata, outcome: Outcome, in_progress: Arc<()>) -> Self {
        // Markers carry the id's current producer epoch with no sequence, as
        // Kafka's coordinator-written markers do; a marker of a newer epoch
        // also fences late data of the older one on the partition.
        let producer = ProducerInfo {
            producer_id: meta.producer_id,
            producer_epoch: meta.producer_epoch,
            base_sequence: -1,
        };
        let markers = meta
            .partitions
            .iter()
            .map(|tp| MarkerWrite {
                tp: tp.clone(),
                batch: RecordBatch::marker(outcome.marker(), meta.id.clone(), producer),
                written: false,
            })
            .collect();
        let offsets = match outcome {
            Outcome::Commit => meta.staged_offsets(),
            Outcome::Abort => Vec::new(),
        };
        let continue_as = match meta.next_producer_id {
            Some(fresh) => (fresh, 0),
            None => (meta.producer_id, meta.producer_epoch),
        };
        Self {
            txn_id: meta.id.clone(),
            outcome,
            producer,
            continue_as,
            markers,
            offsets_stored: offsets.is_empty(),
            offsets,
            _in_progress: in_progress,
        }
    }

    pub fn transactional_id(&self) -> &str {
        &self.txn_id
    }

    pub fn outcome(&self) -> Outcome {
        self.outcome
    }

    /// Producer id and epoch stamped on the markers (sequence -1).
    pub fn producer(&self) -> ProducerInfo {
        self.producer
    }

    /// The producer id and epoch the id has once this plan completes: the
    /// markers' own, or a fresh producer id at epoch 0 when a
    /// transactions-v2 end exhausted the epochs. EndTxn v5 answers them.
    pub fn continue_as(&self) -> (i64, i32) {
        self.continue_as
    }

    /// The markers to append, one per touched partition, in partition order.
    pub fn markers(&self) -> &[MarkerWrite] {
        &self.markers
    }

    /// The offsets to store (no generation check) on commit; empty on abort.
    pub fn offsets_to_store(&self) -> &[StagedOffset] {
        &self.offsets
    }

    /// Acknowledges that the marker for `tp` is appended (acks=all).
    pub fn ack_marker(&mut self, tp: &TopicPartition) -> Result<()> {
        let txn_id = &self.txn_id;
        let marker = self
            .markers
            .iter_mut()
            .find(|m| &m.tp == tp)
            .ok_or_else(|| {
                TxnError::InvalidRequest(format!(
                    "the plan of transaction {txn_id:?} has no marker for {tp}"
                ))
            })?;
        marker.written = true;
        Ok(())
    }

    /// Acknowledges that every offset of `offsets_to_store` is stored.
    pub fn ack_offsets_stored(&mut self) {
        self.offsets_stored = true;
    }

    /// Partitions whose marker is not acknowledged yet.
    pub fn missing_markers(&self) -> Vec<TopicPartition> {
        self.markers
            .iter()
            .filter(|m| !m.written)
            .map(|m| m.tp.clone())
            .collect()
    }

    /// The markers not acknowledged yet, with the batches to append, owned
    /// so the caller can append them while acknowledging on the plan.
    pub fn unwritten_markers(&self) -> Vec<(TopicPartition, RecordBatch)> {
        self.markers
            .iter()
            .filter(|m| !m.written)
            .map(|m| (m.tp.clone(), m.batch.clone()))
            .collect()
    }

    /// True when every marker and the offsets are acknowledged.
    pub fn is_executed(&self) -> bool {
        self.offsets_stored && self.markers.iter().all(|m| m.written)
    }

    /// Describes what is still missing, for INVALID_TXN_STATE messages.
    pub(crate) fn missing_description(&self) -> String {
        let mut parts = Vec::new();
        let missing = self.missing_markers();
        if !missing.is_empty() {
            let names: Vec<String> = missing.iter().map(ToString::to_string).collect();
            parts.push(format!("markers not written on {}", names.join(", ")));
        }
        if !self.offsets_stored {
            parts.push(format!("{} staged offsets not stored", self.offsets.len()));
        }
        parts.join("; ")
    }
}
