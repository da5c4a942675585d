//! Repair of hanging transactions at open: a transaction that is open on a
//! partition (data without a marker) although the coordinator does not
//! have it in progress there. That happens when a marker was lost — e.g. a
//! power loss took a COMMIT marker written after the journal's
//! CompleteCommit — and without repair the partition's last stable offset
//! would stay in front of it forever, blocking every read_committed reader.
//!
//! The coordinator's word decides the outcome: COMMIT if its latest state
//! for that producer is CompleteCommit and lists this partition, ABORT
//! otherwise (a transaction nobody can still commit).
//! Only the coordinator's recovery runs before this, so nothing races it.

use crate::error::Result;
use crate::transactions::Transactions;
use mk_core::TopicPartition;
use mk_log::{ControlType, ProducerInfo, RecordBatch};
use mk_replication::AckMode;
use mk_txn::{TxnDescription, TxnState};

/// One open transaction of a partition that the coordinator does not have
/// in progress there.
struct Hanging {
    tp: TopicPartition,
    producer_id: i64,
    first_offset: i64,
}

impl Transactions<'_> {
    /// The open transactions of partition logs that no transaction in
    /// progress at the coordinator accounts for.
    fn hanging(self, txns: &[TxnDescription]) -> Result<Vec<Hanging>> {
        let mut hanging = Vec::new();
        for slot in self.cluster.healthy_slots() {
            self.cluster.read_slot(&slot, |set| {
                for (producer_id, first_offset) in set.leader_log().open_transactions() {
                    let in_progress = txns.iter().any(|t| {
                        t.producer_id == producer_id
                            && !matches!(
                                t.state,
                                TxnState::CompleteCommit | TxnState::CompleteAbort
                            )
                            && t.partitions.contains(&slot.tp)
                    });
                    if !in_progress {
                        hanging.push(Hanging {
                            tp: slot.tp.clone(),
                            producer_id,
                            first_offset,
                        });
                    }
                }
                Ok(())
            })?;
        }
        Ok(hanging)
    }

    /// Writes the missing marker of every hanging transaction (on the
    /// leader, acks=1, like the recovery of prepared transactions; the
    /// markers replicate like any batch afterwards). Returns how many.
    pub(crate) fn repair_hanging_transactions(self) -> Result<usize> {
        let txns = self.list()?;
        let hanging = self.hanging(&txns)?;
        for h in &hanging {
            // The coordinator keeps a completed transaction's partitions
            // until the id's next transaction begins, and a later
            // transaction of the same producer on this partition would have
            // closed the open range with its own marker: so a completed
            // commit listing this partition is the one whose marker is lost.
            let committed = txns.iter().find(|t| {
                t.producer_id == h.producer_id
                    && t.state == TxnState::CompleteCommit
                    && t.partitions.contains(&h.tp)
            });
            let kind = if committed.is_some() {
                ControlType::Commit
            } else {
                ControlType::Abort
            };
            self.cluster.with_partition(&h.tp, |set| {
                // The marker speaks for the transaction's own id, at the
                // newest epoch known for the producer (an older one would be
                // fenced).
                let first = set.leader_log().read_batches(h.first_offset, 1, None)?;
                let data = first.first().map(|b| b.decode()).transpose()?;
                let txn_id = committed
                    .map(|t| t.transactional_id.clone())
                    .or_else(|| {
                        data.as_ref()
                            .and_then(|d| d.transactional_id().map(str::to_string))
                    })
                    .unwrap_or_else(|| format!("producer-{}", h.producer_id));
                let epoch = [
                    data.as_ref().map(|d| d.producer().producer_epoch),
                    set.producer_entry(h.producer_id).map(|e| e.epoch),
                    set.registered_epoch(h.producer_id),
                    committed.map(|t| t.producer_epoch),
                ]
                .into_iter()
                .flatten()
                .max()
                .unwrap_or(0);
                let marker = RecordBatch::marker(
                    kind,
                    txn_id.clone(),
                    ProducerInfo {
                        producer_id: h.producer_id,
                        producer_epoch: epoch,
                        base_sequence: -1,
                    },
                );
                set.append(marker, AckMode::One, None)?;
                tracing::warn!(
                    partition = %h.tp,
                    transactional_id = txn_id,
                    producer_id = h.producer_id,
                    first_offset = h.first_offset,
                    marker = ?kind,
                    "wrote the lost marker of a transaction left open on a partition"
                );
                Ok(())
            })?;
        }
        Ok(hanging.len())
    }
}
