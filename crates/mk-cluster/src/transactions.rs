//! Transactions in the core, in Kafka's transaction flow: InitProducerId
//! with a transactional id, AddPartitionsToTxn, AddOffsetsToTxn,
//! TxnOffsetCommit (fenced by the group coordinator), the verification of
//! transactional Produce batches, EndTxn and the timeout step. mk-txn
//! decides states and hands back plans; this module executes them —
//! appending markers with acks=all, storing staged offsets — and reports
//! back (the seam described in docs/ARCHITECTURE.md). The teaching model's
//! operations (begin / send / send offsets / commit / abort) are clients of
//! the same flow.

use crate::cluster::BrokerCluster;
use crate::data::Append;
use crate::error::{ClusterError, Result};
use bytes::Bytes;
use mk_core::{ErrorCode, TopicPartition};
use mk_group::OffsetAndMetadata;
use mk_log::{ProducerInfo, Record, RecordBatch};
use mk_replication::{AckMode, ProducerIdentity};
use mk_txn::{
    CompletionPlan, EndTxn, EndTxnV2, InitProducer, Outcome, StagedCommit, TransactionCoordinator,
    TxnDescription, TxnError, TxnVersion,
};
use std::collections::BTreeMap;

/// Transactions: `cluster.transactions().end(..)`.
#[derive(Debug, Clone, Copy)]
pub struct Transactions<'a> {
    pub(crate) cluster: &'a BrokerCluster,
}

impl BrokerCluster {
    /// The transactions role (see [`Transactions`]).
    pub fn transactions(&self) -> Transactions<'_> {
        Transactions { cluster: self }
    }
}

/// How many InitProducerId rounds one call runs: allocate a producer id,
/// complete what the previous epoch left, then hand out the epoch.
const INIT_ROUNDS: usize = 4;

/// An instance of a transactional producer: its id and the epoch that
/// fences every older instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnHandle {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i32,
}

/// A TxnOffsetCommit as Kafka clients send it. `generation_id` -1 with an
/// empty `member_id` and no `group_instance_id` is a commit without group
/// membership (not fenced by the group); otherwise the group coordinator
/// checks the member and its generation, as for a member's commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnOffsetCommit {
    pub transactional_id: String,
    pub group_id: String,
    pub producer_id: i64,
    pub producer_epoch: i32,
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// Each partition's offset with the leader epoch and metadata the
    /// committer sent (stored as they are if the transaction commits).
    pub offsets: BTreeMap<TopicPartition, OffsetAndMetadata>,
}

impl TxnOffsetCommit {
    /// A commit of plain `offsets` for `group` by the producer
    /// `(id, epoch)` of `transactional_id`, from outside the group's
    /// membership (generation -1, no member id): what a producer that is
    /// not a group member sends.
    pub fn without_membership(
        transactional_id: &str,
        group: &str,
        (producer_id, producer_epoch): (i64, i32),
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> TxnOffsetCommit {
        TxnOffsetCommit {
            transactional_id: transactional_id.to_string(),
            group_id: group.to_string(),
            producer_id,
            producer_epoch,
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
            offsets: offsets
                .iter()
                .map(|(tp, o)| (tp.clone(), OffsetAndMetadata::new(*o)))
                .collect(),
        }
    }
}

/// Errors after which a plan cannot be retried by this process: the cluster
/// is closed or failed. Any other failure to execute a plan (too few
/// in-sync replicas, a leader offline, a timeout) leaves the decided
/// transaction Prepare*, and the next request for the id or the expiry step
/// executes its plan again.
fn is_fatal(e: &ClusterError) -> bool {
    matches!(
        e.code(),
        ErrorCode::ClusterClosed | ErrorCode::ClusterFailed | ErrorCode::StorageError
    )
}

/// EndTxn's `committed` flag as the coordinator's outcome.
fn outcome_of(commit: bool) -> Outcome {
    if commit {
        Outcome::Commit
    } else {
        Outcome::Abort
    }
}

/// The partition of a marker no longer exists (its topic was deleted
/// while the transaction was open): there is nothing left to mark.
fn is_gone(e: &ClusterError) -> bool {
    matches!(
        e.code(),
        ErrorCode::UnknownTopic | ErrorCode::UnknownPartition
    )
}

fn concurrent(txn_id: &str, reason: String) -> ClusterError {
    ClusterError::Txn(TxnError::ConcurrentTransactions {
        txn_id: txn_id.to_string(),
        reason,
    })
}

impl Transactions<'_> {
    fn with_txns<T>(
        self,
        f: impl FnOnce(&mut TransactionCoordinator) -> mk_txn::Result<T>,
    ) -> Result<T> {
        let mut guard = self.cluster.txn_coordinator()?;
        let t = guard.as_mut().ok_or(ClusterError::Closed)?;
        let r = f(t);
        drop(guard);
        // The coordinator stops itself after any failed journal write, so
        // every storage failure of it is the broker's.
        self.cluster.guard_strict(r)
    }

    /// Registers an idempotent producer's epoch on one partition (the
    /// in-process producer does it before its first batch there), so an
    /// older epoch of the same producer id is fenced on it.
    pub fn register_producer(
        self,
        tp: &TopicPartition,
        producer_id: i64,
        epoch: i32,
    ) -> Result<()> {
        self.cluster
            .with_partition(tp, |set| Ok(set.register_producer(producer_id, epoch)?))
    }

    /// Allocates a producer identity for an idempotent producer: a new name
    /// gets the next id and epoch 0, a known name keeps its id and bumps the
    /// epoch (fencing the older instance on every partition). `None`
    /// allocates a fresh anonymous id.
    pub fn init_producer(self, name: Option<&str>) -> Result<ProducerIdentity> {
        self.cluster.check_running()?;
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
                self.cluster.started_ms,
                self.cluster.next_member_number()
            ),
        };
        let identity = {
            let mut store = self
                .cluster
                .store(&self.cluster.identities, "producer identity store")?;
            let r = store.allocate(&name);
            drop(store);
            self.cluster.guard(r)?
        };
        self.register_everywhere(identity)?;
        Ok(identity)
    }

    /// Registers a producer epoch on every partition, fencing older epochs
    /// (a damaged partition refuses every batch anyway).
    fn register_everywhere(self, identity: ProducerIdentity) -> Result<()> {
        for slot in self.cluster.healthy_slots() {
            self.cluster.with_slot(&slot, |set| {
                Ok(set.register_producer(identity.producer_id, identity.epoch)?)
            })?;
        }
        Ok(())
    }

    /// A producer id from the identity store for a transactional id (whose
    /// epochs the transaction coordinator owns).
    fn allocate_producer_id(self) -> Result<i64> {
        let mut store = self
            .cluster
            .store(&self.cluster.identities, "producer identity store")?;
        let r = store.allocate_id();
        drop(store);
        self.cluster.guard(r)
    }

    // ----- Kafka's transaction flow ----------------------------------------

    /// InitProducerId with a transactional id: one producer id per
    /// transactional id, the epoch bumped once per producer session. What
    /// the previous epoch left Ongoing is aborted with markers (under a
    /// fencing epoch) and a Prepare* transaction completed, before the new
    /// epoch is handed out. `current` is the producer's own `(producer id,
    /// epoch)` when it asks for a bump (KIP-360), `None` for a fresh
    /// producer. Errors: INVALID_TRANSACTION_TIMEOUT outside `1..=`
    /// `max_transaction_timeout_ms`; PRODUCER_FENCED for a `current` that
    /// is not the id's; CONCURRENT_TRANSACTIONS while the previous
    /// transaction is being completed elsewhere, or when completing it
    /// failed for now (clients retry).
    pub async fn init_transactional_producer(
        self,
        transactional_id: &str,
        transaction_timeout_ms: i32,
        current: Option<(i64, i32)>,
    ) -> Result<ProducerIdentity> {
        self.init_txn_producer(transactional_id, i64::from(transaction_timeout_ms), current)
            .await
    }

    async fn init_txn_producer(
        self,
        txn_id: &str,
        timeout_ms: i64,
        current: Option<(i64, i32)>,
    ) -> Result<ProducerIdentity> {
        self.cluster.check_running()?;
        let mut current = current;
        let mut fresh = None;
        for _ in 0..INIT_ROUNDS {
            match self.with_txns(|t| t.init_producer(txn_id, timeout_ms, current, fresh))? {
                InitProducer::Ready {
                    producer_id,
                    producer_epoch,
                } => {
                    return Ok(ProducerIdentity {
                        producer_id,
                        epoch: producer_epoch,
                    });
                }
                InitProducer::NeedsProducerId => fresh = Some(self.allocate_producer_id()?),
                InitProducer::CompletePriorFirst(plan) => {
                    match self.execute_plan(plan).await {
                        Ok(()) => {}
                        Err(e) if is_fatal(&e) => return Err(e),
                        Err(e) => {
                            return Err(concurrent(
                                txn_id,
                                format!(
                                    "completing the previous transaction failed for now ({e}); retry"
                                ),
                            ));
                        }
                    }
                    // The producer's own epoch was checked in the first round;
                    // the fence it caused must not count against it.
                    current = None;
                }
            }
        }
        Err(concurrent(
            txn_id,
            "the previous transaction is still being completed; retry".into(),
        ))
    }

    /// AddPartitionsToTxn: adds partitions to the producer's transaction,
    /// beginning it if none is open. As in Kafka, the request is all or
    /// nothing: if any partition does not exist (UNKNOWN_TOPIC /
    /// UNKNOWN_PARTITION) or is internal (INVALID_REQUEST), nothing is
    /// added and the others answer OPERATION_NOT_ATTEMPTED. Whole-request
    /// errors are the outer `Err`: INVALID_PRODUCER_ID_MAPPING for an
    /// unknown id or another producer id, PRODUCER_FENCED for another
    /// epoch, CONCURRENT_TRANSACTIONS while the previous transaction
    /// completes (its plan is executed again by the expiry step, the next
    /// InitProducerId or an EndTxn retry, never by this request, which
    /// does not wait for markers), INVALID_TXN_STATE for an abort-only
    /// transaction.
    pub async fn add_partitions(
        self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i32,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Result<()>)>> {
        self.cluster.check_running()?;
        let mut results: Vec<(TopicPartition, Result<()>)> = partitions
            .iter()
            .map(|tp| {
                let r = crate::data::check_user_topic(tp)
                    .and_then(|()| self.cluster.slot(tp).map(drop));
                (tp.clone(), r)
            })
            .collect();
        if results.iter().any(|(_, r)| r.is_err()) {
            for (tp, r) in &mut results {
                if r.is_ok() {
                    *r = Err(ClusterError::OperationNotAttempted {
                        partition: tp.clone(),
                    });
                }
            }
            return Ok(results);
        }
        self.with_txns(|t| {
            t.add_partitions(transactional_id, producer_id, producer_epoch, partitions)
        })?;
        Ok(results)
    }

    /// AddPartitionsToTxn's verify-only form (v4+): for each partition,
    /// whether it is in the producer's open transaction; nothing changes.
    /// Whole-request errors: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
    /// CONCURRENT_TRANSACTIONS.
    pub fn verify_partitions(
        self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i32,
        partitions: &[TopicPartition],
    ) -> Result<Vec<bool>> {
        self.cluster.check_running()?;
        self.with_txns(|t| {
            t.partitions_in_transaction(transactional_id, producer_id, producer_epoch, partitions)
        })
    }

    /// AddOffsetsToTxn: lets `group_id` stage offsets in the producer's
    /// transaction, beginning it if none is open. The errors of
    /// `add_partitions`; an empty group id is INVALID_REQUEST.
    pub fn add_offsets(
        self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i32,
        group_id: &str,
    ) -> Result<()> {
        self.cluster.check_running()?;
        self.with_txns(|t| t.add_offsets(transactional_id, producer_id, producer_epoch, group_id))
    }

    /// TxnOffsetCommit: stages the offsets in the transaction; they are
    /// stored for the group exactly when it commits and dropped if it
    /// aborts. Checks, in order: every partition exists (UNKNOWN_TOPIC /
    /// UNKNOWN_PARTITION); the group fences the member like a member's
    /// commit when the request carries membership (ILLEGAL_GENERATION,
    /// UNKNOWN_MEMBER); then the transaction (the errors of
    /// `add_partitions`, and INVALID_TXN_STATE if the group was not
    /// added with AddOffsetsToTxn). A negative offset is INVALID_REQUEST.
    /// Then, per partition as Kafka answers it, metadata longer than the
    /// group coordinator's bound is OFFSET_METADATA_TOO_LARGE and is not
    /// staged; the other partitions are. One answer per partition, in
    /// partition order.
    pub fn commit_offsets(
        self,
        req: &TxnOffsetCommit,
    ) -> Result<Vec<(TopicPartition, Result<()>)>> {
        self.commit_offsets_as(req, TxnVersion::V1)
    }

    /// `commit_offsets` for a producer of transactions v2 (TxnOffsetCommit
    /// v5+, KIP-890 part 2) when `txn_version` is V2: the group joins the
    /// transaction implicitly (beginning it if none is open), after the
    /// group's own checks, instead of needing AddOffsetsToTxn.
    pub fn commit_offsets_as(
        self,
        req: &TxnOffsetCommit,
        txn_version: TxnVersion,
    ) -> Result<Vec<(TopicPartition, Result<()>)>> {
        self.cluster.check_running()?;
        for tp in req.offsets.keys() {
            self.cluster.slot(tp)?;
        }
        self.cluster.groups().validate_txn_offset_commit(
            &req.group_id,
            &req.member_id,
            req.generation_id,
            req.group_instance_id.as_deref(),
        )?;
        let answers = self.cluster.groups().check_offset_metadata(&req.offsets)?;
        let staged = req
            .offsets
            .iter()
            .zip(&answers)
            .filter(|(_, (_, answer))| answer.is_ok())
            .map(|((tp, o), _)| {
                let staged = StagedCommit {
                    offset: o.offset,
                    leader_epoch: o.leader_epoch.filter(|e| *e >= 0),
                    metadata: o.metadata.clone(),
                };
                (tp.clone(), staged)
            });
        self.with_txns(|t| {
            if txn_version == TxnVersion::V2 {
                t.add_offsets(
                    &req.transactional_id,
                    req.producer_id,
                    req.producer_epoch,
                    &req.group_id,
                )?;
            }
            t.stage_offsets(
                &req.transactional_id,
                req.producer_id,
                req.producer_epoch,
                &req.group_id,
                staged,
            )
        })?;
        Ok(answers)
    }

    /// EndTxn: commits or aborts. PrepareCommit / PrepareAbort is journaled,
    /// the markers are written on every partition of the transaction
    /// (acks=all, in partition order), staged offsets are stored on commit,
    /// then the transaction is Complete*. A retry matching the completed
    /// outcome succeeds; the other outcome is INVALID_TXN_STATE; a retry
    /// while the completion runs elsewhere is CONCURRENT_TRANSACTIONS.
    ///
    /// As in Kafka, the answer is success once the decision is durable: if
    /// a marker cannot be written yet (e.g. NOT_ENOUGH_REPLICAS), the
    /// transaction stays Prepare* and its plan is executed again by the
    /// expiry step and by the next request for the id; only a closed or
    /// failed cluster is an error (recovery completes the transaction on
    /// the next open).
    pub async fn end(
        self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i32,
        commit: bool,
    ) -> Result<()> {
        self.cluster.check_running()?;
        let outcome = outcome_of(commit);
        let plan = match self
            .with_txns(|t| t.end_txn(transactional_id, producer_id, producer_epoch, outcome))?
        {
            EndTxn::AlreadyComplete => return Ok(()),
            EndTxn::Execute(plan) => plan,
        };
        self.complete_decided(transactional_id, plan).await
    }

    /// EndTxn of transactions v2 (EndTxn v5+, KIP-890 part 2): like `end`,
    /// but the decision is journaled under the next epoch, the markers
    /// carry it, and the answer is the producer id and epoch the producer
    /// goes on with (a fresh producer id at epoch 0 once the epochs are
    /// exhausted). A retry with the epoch before the bump gets the same
    /// answer; an abort with no open transaction just bumps the epoch.
    pub async fn end_v2(
        self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i32,
        commit: bool,
    ) -> Result<(i64, i32)> {
        self.cluster.check_running()?;
        let outcome = outcome_of(commit);
        let mut fresh = None;
        let plan = loop {
            let decided = self.with_txns(|t| {
                t.end_txn_v2(
                    transactional_id,
                    producer_id,
                    producer_epoch,
                    outcome,
                    fresh,
                )
            })?;
            match decided {
                EndTxnV2::Execute(plan) => break plan,
                EndTxnV2::AlreadyComplete {
                    producer_id,
                    producer_epoch,
                } => return Ok((producer_id, producer_epoch)),
                EndTxnV2::NeedsProducerId if fresh.is_none() => {
                    fresh = Some(self.allocate_producer_id()?);
                }
                EndTxnV2::NeedsProducerId => {
                    return Err(ClusterError::InvalidRequest(format!(
                        "transaction {transactional_id:?} refused a fresh producer id"
                    )));
                }
            }
        };
        let identity = plan.continue_as();
        self.complete_decided(transactional_id, plan).await?;
        Ok(identity)
    }

    /// Executes the plan of a decided EndTxn. The decision is journaled, so
    /// only a fatal error fails the request; after any other the
    /// transaction stays decided and its plan is executed again later.
    async fn complete_decided(self, transactional_id: &str, plan: CompletionPlan) -> Result<()> {
        match self.execute_plan(plan).await {
            Err(e) if is_fatal(&e) => Err(e),
            Err(e) => {
                tracing::warn!(
                    transactional_id,
                    error = %e,
                    "a decided transaction could not be completed yet; it is retried"
                );
                Ok(())
            }
            Ok(()) => Ok(()),
        }
    }

    /// The check every transactional data batch passes before it is
    /// appended (called under the partition's lock, see `data.rs`).
    /// For transactions v2 the check adds the partition to the
    /// transaction (journaled), so a journal failure fails the broker as
    /// for any coordinator write.
    pub(crate) fn verify_txn_append(
        self,
        transactional_id: &str,
        producer: ProducerInfo,
        tp: &TopicPartition,
        txn_version: TxnVersion,
    ) -> Result<()> {
        let mut guard = self
            .cluster
            .store(&self.cluster.txns, "transaction coordinator")?;
        let t = guard.as_mut().ok_or(ClusterError::Closed)?;
        match txn_version {
            TxnVersion::V1 => {
                let r = t.verify_append(transactional_id, producer, tp);
                drop(guard);
                self.cluster.guard(r)
            }
            TxnVersion::V2 => {
                let r = t.add_partition_on_append(transactional_id, producer, tp);
                drop(guard);
                self.cluster.guard_strict(r)
            }
        }
    }

    // ----- the teaching model's operations ---------------------------------

    /// Begins a transaction (the teaching model's `begin_txn`): a new
    /// producer session of the id (InitProducerId: the epoch is bumped,
    /// older instances are fenced, what they left open is aborted first)
    /// with the cluster's `transaction_timeout_ms`, then an explicit begin,
    /// so an empty transaction can be committed and the timeout counts from
    /// here.
    pub async fn begin(self, txn_id: &str) -> Result<TxnHandle> {
        self.cluster.check_running()?;
        if txn_id.is_empty() {
            return Err(ClusterError::InvalidRequest(
                "transactional_id must not be empty".into(),
            ));
        }
        let identity = self
            .init_txn_producer(txn_id, self.cluster.config.transaction_timeout_ms, None)
            .await?;
        self.with_txns(|t| t.begin(txn_id, identity.producer_id, identity.epoch))?;
        Ok(TxnHandle {
            transactional_id: txn_id.to_string(),
            producer_id: identity.producer_id,
            producer_epoch: identity.epoch,
        })
    }

    /// The current handle of a transactional id (its latest instance).
    pub fn handle(self, txn_id: &str) -> Result<Option<TxnHandle>> {
        Ok(self.describe(txn_id)?.map(|d| TxnHandle {
            transactional_id: d.transactional_id,
            producer_id: d.producer_id,
            producer_epoch: d.producer_epoch,
        }))
    }

    /// The handle a client speaking for `txn_id` at `producer_epoch` acts
    /// with: the id's current producer id (or -1 for an id the coordinator
    /// does not know) and the epoch it claims. Fencing is decided by the
    /// operations that use the handle, by (transactional id, epoch).
    pub fn handle_at(self, txn_id: &str, producer_epoch: i32) -> Result<TxnHandle> {
        let producer_id = self.handle(txn_id)?.map_or(-1, |h| h.producer_id);
        Ok(TxnHandle {
            transactional_id: txn_id.to_string(),
            producer_id,
            producer_epoch,
        })
    }

    /// Sends one record in the transaction (the teaching model's
    /// `txn_produce`), as a Kafka client would: AddPartitionsToTxn for the
    /// partition, then a transactional batch with acks=all. The partition is
    /// `partitioner::partition_for`'s: the
    /// explicit one, else the keyed partitioner's, else 0. The core acts
    /// as the client and takes the sequence the partition expects next,
    /// under the append's lock. A failed send makes the transaction
    /// abort-only. Returns the partition and offset.
    pub async fn send(
        self,
        handle: &TxnHandle,
        topic: &str,
        key: Option<Bytes>,
        value: Option<Bytes>,
        partition: Option<u32>,
    ) -> Result<(u32, i64)> {
        self.cluster.check_running()?;
        let count = self.cluster.topics().partition_count(topic)?;
        let partition = match (partition, &key) {
            (Some(p), _) if p >= count => {
                return Err(ClusterError::UnknownPartition {
                    partition: TopicPartition::new(topic, p),
                    partitions: count,
                });
            }
            _ => crate::partitioner::partition_for(partition, key.as_deref(), count),
        };
        let tp = TopicPartition::new(topic, partition);
        let txn_id = handle.transactional_id.as_str();
        let added = self
            .add_partitions(
                txn_id,
                handle.producer_id,
                handle.producer_epoch,
                std::slice::from_ref(&tp),
            )
            .await?;
        for (_, r) in added {
            r?;
        }
        let record = Record::new(key, value, self.cluster.clock.now_ms());
        let batch = RecordBatch::new(vec![record])?.with_transactional_id(txn_id);
        let client = (handle.producer_id, handle.producer_epoch);
        let sent = match self.cluster.data().append_on_leader(
            &tp,
            batch,
            AckMode::All,
            Append {
                client_sequence: Some(client),
                ..Append::PLAIN
            },
        ) {
            Ok(pending) => pending.wait().await,
            Err(e) => Err(e),
        };
        match sent {
            Ok(result) => {
                let base = result.base_offset.ok_or_else(|| {
                    ClusterError::InvalidRequest("an acks=all append always has an offset".into())
                })?;
                Ok((partition, base))
            }
            Err(e) => {
                // A client that saw a send fail must not commit the rest;
                // a Kafka client enforces this itself.
                let reason = format!("a send to {tp} failed: {}", e.code());
                if let Ok(mut guard) = self.cluster.txn_coordinator()
                    && let Some(t) = guard.as_mut()
                {
                    t.mark_abort_only(txn_id, handle.producer_epoch, &reason);
                }
                Err(e)
            }
        }
    }

    /// Stages consumer offsets to be stored when the transaction commits
    /// (the teaching model's `txn_send_offsets`): AddOffsetsToTxn and a
    /// TxnOffsetCommit without group membership.
    pub fn send_offsets(
        self,
        handle: &TxnHandle,
        group: &str,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> Result<()> {
        self.cluster.check_running()?;
        for tp in offsets.keys() {
            self.cluster.slot(tp)?;
        }
        self.add_offsets(
            &handle.transactional_id,
            handle.producer_id,
            handle.producer_epoch,
            group,
        )?;
        self.commit_offsets(&TxnOffsetCommit::without_membership(
            &handle.transactional_id,
            group,
            (handle.producer_id, handle.producer_epoch),
            offsets,
        ))
        .map(|_| ())
    }

    /// Commits (the teaching model's `commit_txn`): EndTxn(commit).
    pub async fn commit(self, handle: &TxnHandle) -> Result<()> {
        self.end(
            &handle.transactional_id,
            handle.producer_id,
            handle.producer_epoch,
            true,
        )
        .await
    }

    /// Aborts (the teaching model's `abort_txn`): EndTxn(abort).
    pub async fn abort(self, handle: &TxnHandle) -> Result<()> {
        self.end(
            &handle.transactional_id,
            handle.producer_id,
            handle.producer_epoch,
            false,
        )
        .await
    }

    // ----- steps, views and plan execution -----------------------------------

    /// The timeout step: aborts Ongoing transactions older than their
    /// timeout and fences their epoch (later requests of their producers
    /// are PRODUCER_FENCED / INVALID_PRODUCER_EPOCH), and executes again any
    /// decided transaction whose completion failed earlier. Returns the
    /// transactional ids aborted by the timeout.
    pub async fn expire(self) -> Result<Vec<String>> {
        let mut plans = self.with_txns(|t| t.expire_transactions())?;
        let aborted: Vec<String> = plans
            .iter()
            .map(|p| p.transactional_id().to_string())
            .collect();
        // The expired plans are alive, so they are not pending a second time.
        plans.extend(self.with_txns(|t| Ok(t.pending_completions()))?);
        for plan in plans {
            let txn_id = plan.transactional_id().to_string();
            match self.execute_plan(plan).await {
                Ok(()) => {}
                Err(e) if is_fatal(&e) => return Err(e),
                Err(e) => tracing::warn!(
                    transactional_id = txn_id,
                    error = %e,
                    "a decided transaction could not be completed yet; it is retried"
                ),
            }
        }
        Ok(aborted)
    }

    pub fn describe(self, txn_id: &str) -> Result<Option<TxnDescription>> {
        self.with_txns(|t| Ok(t.describe(txn_id)))
    }

    pub fn list(self) -> Result<Vec<TxnDescription>> {
        self.with_txns(|t| Ok(t.list()))
    }

    /// ListTransactions: the transactions `filter` selects now (Kafka 4.1's
    /// state, producer id, duration and transactional id pattern filters).
    pub fn list_filtered(self, filter: &mk_txn::TxnFilter) -> Result<mk_txn::TxnListing> {
        let now = self.cluster.clock.now_ms();
        self.with_txns(|t| t.list_filtered(filter, now))
    }

    /// Transactions completed since the broker started, oldest first (the
    /// latest `mk_txn::RECENT_COMPLETIONS`).
    pub fn recent(self) -> Result<Vec<mk_txn::CompletedTransaction>> {
        self.with_txns(|t| Ok(t.recent_completions()))
    }

    /// Executes a completion plan: markers with acks=all in partition order,
    /// then the staged offsets, then `complete`. A marker for a partition
    /// that no longer exists counts as written.
    async fn execute_plan(self, mut plan: CompletionPlan) -> Result<()> {
        let markers = plan.unwritten_markers();
        for (tp, batch) in markers {
            let appended =
                match self
                    .cluster
                    .data()
                    .append_on_leader(&tp, batch, AckMode::All, Append::PLAIN)
                {
                    Ok(pending) => pending.wait().await.map(drop),
                    Err(e) => Err(e),
                };
            match appended {
                Ok(()) => {}
                Err(e) if is_gone(&e) => {}
                Err(e) => return Err(e),
            }
            self.cluster.guard(plan.ack_marker(&tp))?;
        }
        self.store_plan_offsets(&mut plan)?;
        self.with_txns(|t| t.complete(plan))?;
        Ok(())
    }

    fn store_plan_offsets(self, plan: &mut CompletionPlan) -> Result<()> {
        let mut by_group: BTreeMap<String, BTreeMap<TopicPartition, OffsetAndMetadata>> =
            BTreeMap::new();
        for o in plan.offsets_to_store() {
            let committed = OffsetAndMetadata {
                offset: o.offset,
                leader_epoch: o.leader_epoch,
                metadata: o.metadata.clone(),
            };
            by_group
                .entry(o.group.clone())
                .or_default()
                .insert(o.tp.clone(), committed);
        }
        for (group, offsets) in by_group {
            self.cluster
                .groups()
                .store_transactional_offsets(&group, &offsets)?;
        }
        plan.ack_offsets_stored();
        Ok(())
    }

    /// Completes, at open, the transactions a crash left in a Prepare
    /// state: missing markers are written on the partition leaders (acks=1:
    /// no replication step runs during open; the markers replicate like any
    /// batch afterwards), staged offsets are stored, the state completes.
    /// Ongoing transactions are left Ongoing (their timeout aborts them).
    pub(crate) fn recover_transactions(self, plans: Vec<CompletionPlan>) -> Result<()> {
        'plans: for mut plan in plans {
            let markers = plan.unwritten_markers();
            for (tp, batch) in markers {
                let appended = self.cluster.with_partition(&tp, |set| {
                    set.append(batch, AckMode::One, None)?;
                    Ok(())
                });
                match appended {
                    Ok(()) => {}
                    Err(e) if is_gone(&e) => {}
                    Err(
                        e @ (ClusterError::PartitionDamaged { .. }
                        | ClusterError::PartitionFailed { .. }),
                    ) => {
                        // The transaction stays prepared; the expiry step
                        // tries its plan again, and the rest of the broker
                        // starts.
                        tracing::error!(
                            transactional_id = plan.transactional_id(),
                            error = %e,
                            "a prepared transaction cannot complete on a damaged partition"
                        );
                        continue 'plans;
                    }
                    Err(e) => return Err(e),
                }
                self.cluster.guard(plan.ack_marker(&tp))?;
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
