//! Transactions in the core: mk-txn decides states and visibility and hands
//! back plans; this module executes them — appending records and markers
//! with acks=all, storing staged offsets — and reports back (the seam
//! described in docs/ARCHITECTURE.md).

use crate::cluster::BrokerCluster;
use crate::error::{ClusterError, Result};
use bytes::Bytes;
use mk_core::TopicPartition;
use mk_log::Record;
use mk_replication::{AckMode, ProducerIdentity};
use mk_txn::{AppendFate, Begin, CompletionPlan, TransactionCoordinator, TxnDescription};
use std::collections::BTreeMap;

/// An instance of a transactional producer: its id and the epoch that
/// fences every older instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnHandle {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i32,
}

fn identity_name_for_txn(txn_id: &str) -> String {
    format!("txn:{txn_id}")
}

impl BrokerCluster {
    fn with_txns<T>(
        &self,
        f: impl FnOnce(&mut TransactionCoordinator) -> mk_txn::Result<T>,
    ) -> Result<T> {
        let mut guard = self.txns()?;
        let t = guard.as_mut().ok_or(ClusterError::Closed)?;
        let r = f(t);
        drop(guard);
        self.guard(r)
    }

    /// Allocates a producer identity: a new name gets the next id and epoch
    /// 0, a known name keeps its id and bumps the epoch (fencing the older
    /// instance on every partition). `None` allocates a fresh anonymous id.
    pub fn init_producer(&self, name: Option<&str>) -> Result<ProducerIdentity> {
        self.check_running()?;
        let name = match name {
            Some("") => {
                return Err(ClusterError::InvalidRequest(
                    "producer name must not be empty".into(),
                ));
            }
            Some(n) if n.starts_with("txn:") => {
                return Err(ClusterError::InvalidRequest(
                    "producer names starting with \"txn:\" are reserved for transactional ids"
                        .into(),
                ));
            }
            Some(n) => n.to_string(),
            None => format!(
                "anonymous-{}-{}",
                self.started_ms,
                self.next_member_number()
            ),
        };
        let identity = {
            let mut store = self.identities.lock().expect("identities lock");
            let r = store.allocate(&name);
            drop(store);
            self.guard(r)?
        };
        self.register_everywhere(identity)?;
        Ok(identity)
    }

    /// Registers a producer epoch on every partition, fencing older epochs.
    fn register_everywhere(&self, identity: ProducerIdentity) -> Result<()> {
        for slot in self.all_slots() {
            self.with_slot(&slot, |set| {
                Ok(set.register_producer(identity.producer_id, identity.epoch)?)
            })?;
        }
        Ok(())
    }

    /// Begins a transaction, allocating (or bumping) the transactional id's
    /// producer identity: a newer instance fences the older one, whose
    /// unfinished transaction is completed first (aborted if Ongoing).
    pub async fn begin_transaction(&self, txn_id: &str) -> Result<TxnHandle> {
        self.check_running()?;
        if txn_id.is_empty() {
            return Err(ClusterError::InvalidRequest(
                "transactional_id must not be empty".into(),
            ));
        }
        let identity = {
            let mut store = self.identities.lock().expect("identities lock");
            let r = store.allocate(&identity_name_for_txn(txn_id));
            drop(store);
            self.guard(r)?
        };
        self.register_everywhere(identity)?;
        // At most two rounds: the second begin finds the prior one finished.
        for _ in 0..2 {
            match self.with_txns(|t| t.begin(txn_id, identity.producer_id, identity.epoch))? {
                Begin::Started => {
                    return Ok(TxnHandle {
                        transactional_id: txn_id.to_string(),
                        producer_id: identity.producer_id,
                        producer_epoch: identity.epoch,
                    });
                }
                Begin::CompletePriorFirst(plan) => self.execute_plan(plan).await?,
            }
        }
        Err(ClusterError::InvalidRequest(format!(
            "transaction {txn_id:?} could not begin: its previous transaction is still completing"
        )))
    }

    /// The current handle of a transactional id (its latest instance).
    pub fn transaction_handle(&self, txn_id: &str) -> Result<Option<TxnHandle>> {
        Ok(self.describe_transaction(txn_id)?.map(|d| TxnHandle {
            transactional_id: d.transactional_id,
            producer_id: d.producer_id,
            producer_epoch: d.producer_epoch,
        }))
    }

    /// The handle a client speaking for `txn_id` at `producer_epoch` acts
    /// with: the id's current producer id (or -1 for an id the coordinator
    /// does not know) and the epoch it claims. Fencing is decided by the
    /// operations that use the handle, by (transactional id, epoch).
    pub fn transaction_handle_at(&self, txn_id: &str, producer_epoch: i32) -> Result<TxnHandle> {
        let producer_id = self
            .transaction_handle(txn_id)?
            .map_or(-1, |h| h.producer_id);
        Ok(TxnHandle {
            transactional_id: txn_id.to_string(),
            producer_id,
            producer_epoch,
        })
    }

    /// Sends one record in the transaction (acks=all). The partition is
    /// `partitioner::partition_for`'s: the explicit one, else the keyed
    /// partitioner's, else 0. Returns the
    /// partition and offset.
    pub async fn txn_send(
        &self,
        handle: &TxnHandle,
        topic: &str,
        key: Option<Bytes>,
        value: Option<Bytes>,
        partition: Option<u32>,
    ) -> Result<(u32, i64)> {
        self.check_running()?;
        let count = self.partition_count(topic)?;
        let partition = match (partition, &key) {
            (Some(p), _) if p >= count => {
                return Err(ClusterError::UnknownPartition(format!(
                    "{topic}-{p} does not exist; topic {topic:?} has {count} partition(s)"
                )));
            }
            _ => crate::partitioner::partition_for(partition, key.as_deref(), count),
        };
        let tp = TopicPartition::new(topic, partition);
        let record = Record::new(key, value, self.clock.now_ms());
        let pending = self.with_txns(|t| {
            t.send(
                &handle.transactional_id,
                handle.producer_epoch,
                tp.clone(),
                record,
            )
        })?;
        let submitted = self.submit_append(&tp, pending.batch().clone(), AckMode::All, None);
        let outcome = match submitted {
            Err(e) => Err((e, AppendFate::NotAppended)),
            Ok(p) => p.wait().await.map_err(|e| (e, AppendFate::MaybeAppended)),
        };
        match outcome {
            Ok(result) => {
                let base = result.base_offset.ok_or_else(|| {
                    ClusterError::InvalidRequest("an acks=all append always has an offset".into())
                })?;
                self.with_txns(|t| t.send_appended(pending, base))?;
                Ok((partition, base))
            }
            Err((e, fate)) => {
                // Report the failure so the transaction can only abort; a
                // closed coordinator has nothing left to report to.
                let _ = self.with_txns(|t| t.send_failed(pending, fate));
                Err(e)
            }
        }
    }

    /// Stages consumer offsets to be stored when the transaction commits.
    pub fn txn_send_offsets(
        &self,
        handle: &TxnHandle,
        group: &str,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> Result<()> {
        self.check_running()?;
        for tp in offsets.keys() {
            self.slot(tp)?;
        }
        self.with_txns(|t| {
            t.send_offsets(
                &handle.transactional_id,
                handle.producer_epoch,
                group,
                offsets.iter().map(|(tp, o)| (tp.clone(), *o)),
            )
        })
    }

    /// Commits: PrepareCommit, COMMIT markers (acks=all) on every touched
    /// partition, staged offsets stored, CompleteCommit.
    pub async fn commit_transaction(&self, handle: &TxnHandle) -> Result<()> {
        let plan = self.with_txns(|t| t.commit(&handle.transactional_id, handle.producer_epoch))?;
        self.execute_plan(plan).await
    }

    /// Aborts: PrepareAbort, ABORT markers, staged offsets dropped,
    /// CompleteAbort.
    pub async fn abort_transaction(&self, handle: &TxnHandle) -> Result<()> {
        let plan = self.with_txns(|t| t.abort(&handle.transactional_id, handle.producer_epoch))?;
        self.execute_plan(plan).await
    }

    /// Aborts Ongoing transactions older than the timeout and retries any
    /// unfinished completion; returns the transactional ids aborted.
    pub async fn expire_transactions(&self) -> Result<Vec<String>> {
        let mut plans = self.with_txns(|t| t.expire_transactions())?;
        let aborted: Vec<String> = plans
            .iter()
            .map(|p| p.transactional_id().to_string())
            .collect();
        let pending = self.with_txns(|t| Ok(t.pending_completions()))?;
        for p in pending {
            if !aborted.iter().any(|a| a == p.transactional_id()) {
                plans.push(p);
            }
        }
        for plan in plans {
            self.execute_plan(plan).await?;
        }
        Ok(aborted)
    }

    pub fn describe_transaction(&self, txn_id: &str) -> Result<Option<TxnDescription>> {
        self.with_txns(|t| Ok(t.describe(txn_id)))
    }

    pub fn list_transactions(&self) -> Result<Vec<TxnDescription>> {
        self.with_txns(|t| Ok(t.list()))
    }

    /// Executes a completion plan: markers with acks=all in partition order,
    /// then the staged offsets, then `complete`.
    async fn execute_plan(&self, mut plan: CompletionPlan) -> Result<()> {
        let markers = plan.unwritten_markers();
        for (tp, batch) in markers {
            self.append_batch(&tp, batch, AckMode::All).await?;
            self.guard(plan.ack_marker(&tp))?;
        }
        self.store_plan_offsets(&mut plan)?;
        self.with_txns(|t| t.complete(plan))?;
        Ok(())
    }

    fn store_plan_offsets(&self, plan: &mut CompletionPlan) -> Result<()> {
        let mut by_group: BTreeMap<String, BTreeMap<TopicPartition, i64>> = BTreeMap::new();
        for o in plan.offsets_to_store() {
            by_group
                .entry(o.group.clone())
                .or_default()
                .insert(o.tp.clone(), o.offset);
        }
        for (group, offsets) in by_group {
            self.store_transactional_offsets(&group, &offsets)?;
        }
        plan.ack_offsets_stored();
        Ok(())
    }

    /// Completes, at open, the transactions a crash left in a Prepare
    /// state: missing markers are written on the partition leaders (acks=1:
    /// no replication step runs during open; the markers replicate like any
    /// batch afterwards), staged offsets are stored, the state completes.
    pub(crate) fn recover_transactions(&self, plans: Vec<CompletionPlan>) -> Result<()> {
        for mut plan in plans {
            let markers = plan.unwritten_markers();
            for (tp, batch) in markers {
                self.with_partition(&tp, |set| {
                    set.append(batch, AckMode::One, None)?;
                    Ok(())
                })?;
                self.guard(plan.ack_marker(&tp))?;
            }
            self.store_plan_offsets(&mut plan)?;
            tracing::info!(
                transactional_id = plan.transactional_id(),
                "completed a transaction interrupted by a crash"
            );
            self.with_txns(|t| t.complete(plan))?;
        }
        Ok(())
    }
}
