//! `TransactionCoordinator`: the sans-IO state machine of every
//! transactional id, in Kafka's transaction flow — InitProducerId (one
//! producer id per transactional id, one epoch bump per producer session),
//! AddPartitionsToTxn and AddOffsetsToTxn, staging of TxnOffsetCommit
//! offsets, the verification of transactional batches before they are
//! appended, EndTxn, completion, timeout expiry that fences the epoch,
//! recovery and the clean-close snapshot. Every state change is journaled
//! before it takes effect; side effects on partitions and groups leave as
//! `CompletionPlan`s.

mod tv2;

pub use tv2::{EndTxnV2, TxnVersion};

use crate::error::{Result, TxnError};
use crate::journal::{Journal, JournalFaults};
use crate::plan::CompletionPlan;
use crate::state::{NO_EPOCH, Outcome, StagedCommit, StagedOffset, TxnMetadata, TxnState};
use mk_core::{SharedClock, TopicPartition};
use mk_log::ProducerInfo;
use mk_storage::StorageError;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;
use std::sync::Arc;

/// The largest producer epoch: Kafka's epochs are `int16` on the wire.
/// InitProducerId hands out at most `MAX_PRODUCER_EPOCH - 1`, so the bump of
/// a timeout's fence always fits; after that the id gets a new producer id
/// with epoch 0, as in Kafka.
pub const MAX_PRODUCER_EPOCH: i32 = i16::MAX as i32;

/// Kafka's default `transaction.max.timeout.ms` (15 minutes).
pub const DEFAULT_MAX_TRANSACTION_TIMEOUT_MS: i64 = 900_000;

/// Settings of the coordinator.
#[derive(Debug, Clone)]
pub struct TxnConfig {
    /// The timeout of ids whose journal line names none (lines written
    /// before timeouts were per producer). Producers name their own in
    /// InitProducerId.
    pub transaction_timeout_ms: i64,
    /// The largest timeout a producer may ask for (Kafka's
    /// `transaction.max.timeout.ms`); a larger one is
    /// INVALID_TRANSACTION_TIMEOUT.
    pub max_transaction_timeout_ms: i64,
    /// The journal is rewritten as a compact snapshot once it holds more
    /// than `max(journal_compaction_lines, 2 * ids)` lines, so a broker that
    /// never closes cleanly does not grow it without bound either.
    pub journal_compaction_lines: usize,
    /// Fault-injection switches of the journal (never fire unless a test
    /// turns them on).
    pub faults: Arc<JournalFaults>,
}

impl Default for TxnConfig {
    fn default() -> Self {
        Self {
            transaction_timeout_ms: 60_000,
            max_transaction_timeout_ms: DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
            journal_compaction_lines: 10_000,
            faults: Arc::new(JournalFaults::new()),
        }
    }
}

impl TxnConfig {
    /// Checks every rule: both timeouts and the compaction threshold are > 0.
    pub fn validate(&self) -> Result<()> {
        for (name, v) in [
            ("transaction_timeout_ms", self.transaction_timeout_ms),
            (
                "max_transaction_timeout_ms",
                self.max_transaction_timeout_ms,
            ),
        ] {
            if v <= 0 {
                return Err(TxnError::InvalidRequest(format!(
                    "{name} must be > 0, got {v}"
                )));
            }
        }
        if self.journal_compaction_lines == 0 {
            return Err(TxnError::InvalidRequest(
                "journal_compaction_lines must be > 0".into(),
            ));
        }
        Ok(())
    }
}

/// The outcome of `init_producer`.
#[must_use = "a NeedsProducerId or CompletePriorFirst answer must be acted on and init_producer called again"]
#[derive(Debug)]
pub enum InitProducer {
    /// The id is Empty under this producer id and epoch; every older epoch
    /// is fenced.
    Ready {
        producer_id: i64,
        producer_epoch: i32,
    },
    /// The id needs a producer id the coordinator cannot allocate itself (a
    /// new transactional id, or its epochs are exhausted): allocate one and
    /// call again with it as `fresh_producer_id`.
    NeedsProducerId,
    /// The previous epoch left a transaction unfinished (Ongoing: it is now
    /// PrepareAbort under a bumped epoch that fences its producer; or
    /// already Prepare*). Execute the plan, `complete` it, call again.
    CompletePriorFirst(CompletionPlan),
}

/// The outcome of `end_txn`.
#[must_use = "an Execute plan must be executed and passed to complete()"]
#[derive(Debug)]
pub enum EndTxn {
    /// The decision is journaled: execute the plan, then `complete` it.
    Execute(CompletionPlan),
    /// A retry of an EndTxn whose outcome is already complete: nothing to do.
    AlreadyComplete,
}

/// A read-only view of one transactional id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnDescription {
    pub transactional_id: String,
    pub state: TxnState,
    pub producer_id: i64,
    pub producer_epoch: i32,
    pub timeout_ms: i64,
    pub start_ms: i64,
    /// Partitions added to the current transaction, sorted.
    pub partitions: Vec<TopicPartition>,
    /// Groups added with AddOffsetsToTxn, sorted.
    pub groups: Vec<String>,
    pub staged_offsets: Vec<StagedOffset>,
    /// True while a plan of the current Prepare* state is being executed.
    pub completing: bool,
    /// Why only abort is allowed, if so (set by `mark_abort_only`).
    pub abort_only: Option<String>,
}

/// How many completed transactions `recent_completions` remembers.
pub const RECENT_COMPLETIONS: usize = 64;

/// A transaction that completed while this coordinator ran: what an
/// operator looks at after the fact (which partitions got a marker, how
/// it ended, how long it was open). Kept in memory only, newest last, at
/// most `RECENT_COMPLETIONS` of them; the journal keeps only the latest
/// state of each id, which is all recovery needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedTransaction {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i32,
    /// `CompleteCommit` or `CompleteAbort`.
    pub state: TxnState,
    /// The partitions that got a marker, sorted.
    pub partitions: Vec<TopicPartition>,
    /// The groups whose staged offsets were stored (commit) or dropped.
    pub groups: Vec<String>,
    /// When the transaction began, by the coordinator's clock.
    pub start_ms: i64,
    /// When it completed, by the coordinator's clock.
    pub completed_ms: i64,
}

/// What opening the coordinator found. The plans are those of every
/// `Prepare*` transaction in the journal: execute each (write missing
/// markers, store offsets), then `complete` it. Ongoing transactions stay
/// Ongoing: their producers may go on, and their timeout aborts them if
/// nobody does.
#[must_use = "recovery plans must be executed and completed"]
#[derive(Debug)]
pub struct Recovered {
    pub coordinator: TransactionCoordinator,
    pub plans: Vec<CompletionPlan>,
    /// Bytes of torn or corrupt journal tail that were cut off.
    pub truncated_bytes: u64,
}

#[derive(Debug)]
struct Entry {
    meta: TxnMetadata,
    /// Shared with the plan handed out for the current Prepare* state: its
    /// strong count above one means the completion is in progress.
    completing: Arc<()>,
    abort_only: Option<String>,
    /// The epoch an InitProducerId fenced an Ongoing transaction with: once
    /// that abort is complete, the next InitProducerId hands this epoch out
    /// instead of bumping again, so a new session costs one bump even when
    /// it had to abort its predecessor (Kafka bumps twice there, because
    /// its client retries after CONCURRENT_TRANSACTIONS). Not journaled: a
    /// crash in between only costs one more bump.
    session_epoch: Option<i32>,
}

impl Entry {
    fn new(meta: TxnMetadata) -> Self {
        Self {
            meta,
            completing: Arc::new(()),
            abort_only: None,
            session_epoch: None,
        }
    }

    fn is_completing(&self) -> bool {
        Arc::strong_count(&self.completing) > 1
    }

    fn plan(&self, outcome: Outcome) -> CompletionPlan {
        CompletionPlan::for_txn(&self.meta, outcome, self.completing.clone())
    }

    fn describe(&self) -> TxnDescription {
        TxnDescription {
            transactional_id: self.meta.id.clone(),
            state: self.meta.state,
            producer_id: self.meta.producer_id,
            producer_epoch: self.meta.producer_epoch,
            timeout_ms: self.meta.timeout_ms,
            start_ms: self.meta.start_ms,
            partitions: self.meta.partitions.iter().cloned().collect(),
            groups: self.meta.groups.iter().cloned().collect(),
            staged_offsets: self.meta.staged_offsets(),
            completing: self.is_completing(),
            abort_only: self.abort_only.clone(),
        }
    }
}

/// The transaction coordinator of one broker (or cluster). Synchronous and
/// deterministic: time comes from the injected clock, files only from the
/// journal, partitions never (see the crate docs for the seam).
#[derive(Debug)]
pub struct TransactionCoordinator {
    journal: Journal,
    config: TxnConfig,
    clock: SharedClock,
    txns: BTreeMap<String, Entry>,
    /// Set by the first journal failure; every later operation is refused.
    failed: Option<String>,
    /// The latest completions, oldest first (see `CompletedTransaction`).
    recent: VecDeque<CompletedTransaction>,
}

impl TransactionCoordinator {
    /// Opens (or creates) the journal at `journal_path` and recovers: the
    /// journal is cut after its last valid line, the last state per id is
    /// kept, and the journal is rewritten compactly. `Prepare*`
    /// transactions come back as plans; Ongoing ones stay Ongoing.
    pub fn open(journal_path: &Path, config: TxnConfig, clock: SharedClock) -> Result<Recovered> {
        config.validate()?;
        let opened = Journal::open(
            journal_path,
            config.faults.clone(),
            config.transaction_timeout_ms,
        )?;
        let txns = opened
            .states
            .into_iter()
            .map(|(id, meta)| (id, Entry::new(meta)))
            .collect();
        let mut coordinator = Self {
            journal: opened.journal,
            config,
            clock,
            txns,
            failed: None,
            recent: VecDeque::new(),
        };
        // Compacts whatever a crash left behind before anything new is
        // appended after it.
        coordinator.rewrite_journal()?;
        let plans = coordinator.pending_completions();
        Ok(Recovered {
            coordinator,
            plans,
            truncated_bytes: opened.truncated_bytes,
        })
    }

    pub fn config(&self) -> &TxnConfig {
        &self.config
    }

    pub fn journal_path(&self) -> &Path {
        self.journal.path()
    }

    /// True after a journal failure; the coordinator then refuses
    /// everything with STORAGE_ERROR.
    pub fn is_failed(&self) -> bool {
        self.failed.is_some()
    }

    // ----- InitProducerId --------------------------------------------------

    /// InitProducerId for `txn_id` with the producer's
    /// `transaction.timeout.ms` and, for KIP-360, the producer's current
    /// `(producer_id, epoch)` (`None` for a producer starting afresh).
    ///
    /// - Timeout outside `1..=max_transaction_timeout_ms`:
    ///   INVALID_TRANSACTION_TIMEOUT.
    /// - A new id: `NeedsProducerId` until called with `fresh_producer_id`,
    ///   then Empty at epoch 0.
    /// - `current` naming another producer id or epoch: PRODUCER_FENCED,
    ///   except a retry of the bump that `current` asked for, which gets the
    ///   same answer again.
    /// - Prepare*: CONCURRENT_TRANSACTIONS while its plan is being executed,
    ///   else `CompletePriorFirst` with the plan (a decision is never
    ///   reversed).
    /// - Ongoing: the epoch is bumped to fence the producer, the
    ///   transaction moves to PrepareAbort and comes back as
    ///   `CompletePriorFirst` (Kafka's epoch fence); the call after its
    ///   completion hands that fenced epoch out as the new session's.
    /// - Empty or Complete*: the epoch is bumped once and the id is Empty;
    ///   with the epochs exhausted, the id moves to `fresh_producer_id` at
    ///   epoch 0 (`NeedsProducerId` until given).
    pub fn init_producer(
        &mut self,
        txn_id: &str,
        timeout_ms: i64,
        current: Option<(i64, i32)>,
        fresh_producer_id: Option<i64>,
    ) -> Result<InitProducer> {
        self.check_running()?;
        self.validate_init(txn_id, timeout_ms, current, fresh_producer_id)?;
        let now_ms = self.clock.now_ms();
        let Some(entry) = self.txns.get(txn_id) else {
            // A producer that names an identity the coordinator never gave
            // out (e.g. a data directory wiped under it) starts afresh.
            let Some(producer_id) = fresh_producer_id else {
                return Ok(InitProducer::NeedsProducerId);
            };
            let meta = idle_txn(txn_id, producer_id, 0, NO_EPOCH, timeout_ms, now_ms);
            self.store(meta)?;
            return Ok(InitProducer::Ready {
                producer_id,
                producer_epoch: 0,
            });
        };
        if let Some((pid, epoch)) = current
            && let Some(same) = bump_retry(&entry.meta, pid, epoch)?
        {
            return Ok(same);
        }
        if let Some(prior) = self.finish_prior_first(txn_id)? {
            return Ok(prior);
        }
        let entry = self.entry_mut(txn_id)?;
        let session_epoch = entry.session_epoch.take();
        let asked = current.map_or(NO_EPOCH, |(_, e)| e);
        let Some(next) = next_session(
            &entry.meta,
            session_epoch,
            asked,
            fresh_producer_id,
            timeout_ms,
            now_ms,
        ) else {
            return Ok(InitProducer::NeedsProducerId);
        };
        let (producer_id, producer_epoch) = (next.producer_id, next.producer_epoch);
        self.store(next)?;
        self.entry_mut(txn_id)?.abort_only = None;
        Ok(InitProducer::Ready {
            producer_id,
            producer_epoch,
        })
    }

    /// The argument rules of `init_producer`.
    fn validate_init(
        &self,
        txn_id: &str,
        timeout_ms: i64,
        current: Option<(i64, i32)>,
        fresh_producer_id: Option<i64>,
    ) -> Result<()> {
        validate_id(txn_id)?;
        self.validate_timeout(timeout_ms)?;
        if let Some((pid, epoch)) = current
            && (pid < 0 || epoch < 0)
        {
            return Err(TxnError::InvalidRequest(format!(
                "the current producer id and epoch must be >= 0 when given, got {pid} / {epoch}"
            )));
        }
        if fresh_producer_id.is_some_and(|p| p < 0) {
            return Err(TxnError::InvalidRequest(
                "a fresh producer id must be >= 0".into(),
            ));
        }
        Ok(())
    }

    /// What the previous epoch left unfinished must end before a new
    /// session: a Prepare* transaction's plan (CONCURRENT_TRANSACTIONS while
    /// it executes), or an Ongoing one fenced into PrepareAbort under the
    /// next epoch (whose plan comes back; its epoch becomes the new
    /// session's once the abort is complete). `None` when the id is idle.
    fn finish_prior_first(&mut self, txn_id: &str) -> Result<Option<InitProducer>> {
        let entry = self.entry(txn_id)?;
        let meta = &entry.meta;
        if let Some(outcome) = meta.state.prepared() {
            if entry.is_completing() {
                return Err(completing(txn_id, meta.state));
            }
            return Ok(Some(InitProducer::CompletePriorFirst(entry.plan(outcome))));
        }
        if meta.state != TxnState::Ongoing {
            return Ok(None);
        }
        let fenced = fenced_abort(meta);
        // The fence's epoch becomes the new session's only if a later
        // timeout fence still fits.
        let session_epoch = Some(fenced.producer_epoch)
            .filter(|e| *e < MAX_PRODUCER_EPOCH && *e > meta.producer_epoch);
        self.store(fenced)?;
        let entry = self.entry_mut(txn_id)?;
        entry.abort_only = None;
        entry.session_epoch = session_epoch;
        Ok(Some(InitProducer::CompletePriorFirst(
            entry.plan(Outcome::Abort),
        )))
    }

    // ----- the transaction -------------------------------------------------

    /// Begins a transaction explicitly (the teaching model's `begin`; Kafka
    /// clients begin implicitly with their first AddPartitionsToTxn or
    /// AddOffsetsToTxn). Empty or Complete* only: an open transaction is
    /// INVALID_TXN_STATE, a completing one CONCURRENT_TRANSACTIONS. The
    /// timeout counts from here.
    pub fn begin(&mut self, txn_id: &str, producer_id: i64, producer_epoch: i32) -> Result<()> {
        self.check_running()?;
        let entry = self.checked(txn_id, producer_id, producer_epoch)?;
        let meta = &entry.meta;
        if meta.state.prepared().is_some() {
            return Err(completing(txn_id, meta.state));
        }
        if meta.state == TxnState::Ongoing {
            return Err(TxnError::state(
                txn_id,
                "Empty, CompleteCommit or CompleteAbort (no open transaction)",
                meta.state.as_str(),
            ));
        }
        let next = begun(meta, self.clock.now_ms());
        self.store(next)
    }

    /// AddPartitionsToTxn: adds `partitions` to the transaction, beginning
    /// it if the id is Empty or Complete* (the timeout counts from then).
    /// Errors in Kafka's order: unknown id or another producer id ->
    /// INVALID_PRODUCER_ID_MAPPING; another epoch -> PRODUCER_FENCED;
    /// Prepare* -> CONCURRENT_TRANSACTIONS; an abort-only transaction ->
    /// INVALID_TXN_STATE. Partitions already added change nothing.
    pub fn add_partitions(
        &mut self,
        txn_id: &str,
        producer_id: i64,
        producer_epoch: i32,
        partitions: &[TopicPartition],
    ) -> Result<()> {
        self.check_running()?;
        let now_ms = self.clock.now_ms();
        let entry = self.writable(txn_id, producer_id, producer_epoch)?;
        let meta = &entry.meta;
        if meta.state == TxnState::Ongoing
            && partitions.iter().all(|tp| meta.partitions.contains(tp))
        {
            return Ok(());
        }
        let mut next = if meta.state == TxnState::Ongoing {
            meta.clone()
        } else {
            begun(meta, now_ms)
        };
        next.partitions.extend(partitions.iter().cloned());
        self.store(next)
    }

    /// AddOffsetsToTxn: lets `group` stage offsets in the transaction,
    /// beginning it like `add_partitions` (same errors; an empty group id is
    /// INVALID_REQUEST).
    pub fn add_offsets(
        &mut self,
        txn_id: &str,
        producer_id: i64,
        producer_epoch: i32,
        group: &str,
    ) -> Result<()> {
        self.check_running()?;
        validate_group(group)?;
        let now_ms = self.clock.now_ms();
        let entry = self.writable(txn_id, producer_id, producer_epoch)?;
        let meta = &entry.meta;
        if meta.state == TxnState::Ongoing && meta.groups.contains(group) {
            return Ok(());
        }
        let mut next = if meta.state == TxnState::Ongoing {
            meta.clone()
        } else {
            begun(meta, now_ms)
        };
        next.groups.insert(group.to_string());
        self.store(next)
    }

    /// TxnOffsetCommit: stages `offsets` of `group`, stored only if the
    /// transaction commits (a later value for a partition replaces an
    /// earlier one). The group must have been added with `add_offsets` to
    /// the Ongoing transaction (else TRANSACTION_ABORTABLE); otherwise the
    /// errors of `add_partitions`. A negative offset or an empty group id
    /// is INVALID_REQUEST. The group's own fencing (generation, member) is
    /// the caller's, through the group coordinator.
    pub fn stage_offsets(
        &mut self,
        txn_id: &str,
        producer_id: i64,
        producer_epoch: i32,
        group: &str,
        offsets: impl IntoIterator<Item = (TopicPartition, impl Into<StagedCommit>)>,
    ) -> Result<()> {
        self.check_running()?;
        validate_group(group)?;
        let offsets: Vec<(TopicPartition, StagedCommit)> =
            offsets.into_iter().map(|(tp, o)| (tp, o.into())).collect();
        if let Some((tp, o)) = offsets.iter().find(|(_, o)| o.offset < 0) {
            return Err(TxnError::InvalidRequest(format!(
                "offset for {tp} must be >= 0, got {}",
                o.offset
            )));
        }
        let entry = self.writable(txn_id, producer_id, producer_epoch)?;
        let meta = &entry.meta;
        if meta.state != TxnState::Ongoing || !meta.groups.contains(group) {
            return Err(TxnError::abortable(
                txn_id,
                format!(
                    "group {group:?} was not added to an Ongoing transaction by AddOffsetsToTxn \
                     (found {} with groups [{}])",
                    meta.state,
                    meta.groups.iter().cloned().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        if offsets.is_empty() {
            return Ok(());
        }
        let mut next = meta.clone();
        for (tp, offset) in offsets {
            next.offsets.insert((group.to_string(), tp), offset);
        }
        self.store(next)
    }

    /// The verification of a transactional data batch before it is
    /// appended to `tp` (KIP-890's check, made on every batch): the id must
    /// be Ongoing under the batch's producer id and epoch with `tp` added.
    /// Unknown id or another producer id -> INVALID_PRODUCER_ID_MAPPING;
    /// another epoch -> INVALID_PRODUCER_EPOCH (what Kafka answers a
    /// zombie's Produce); Prepare* -> INVALID_TXN_STATE; otherwise not
    /// Ongoing or `tp` not added -> TRANSACTION_ABORTABLE (the producer
    /// can abort and go on).
    /// The caller holds the partition's lock across this check and the
    /// append, so no marker can land between them.
    pub fn verify_append(
        &self,
        txn_id: &str,
        producer: ProducerInfo,
        tp: &TopicPartition,
    ) -> Result<()> {
        let entry = self.batch_entry(txn_id, producer)?;
        let meta = &entry.meta;
        if meta.state.prepared().is_some() {
            // Decided: no batch may follow the marker (the partition lock
            // orders them), and none may begin a transaction.
            return Err(TxnError::state(
                txn_id,
                format!("an Ongoing transaction with {tp} added by AddPartitionsToTxn"),
                meta.state.as_str(),
            ));
        }
        if meta.state != TxnState::Ongoing || !meta.partitions.contains(tp) {
            return Err(TxnError::abortable(
                txn_id,
                format!(
                    "{tp} was not added to an Ongoing transaction by AddPartitionsToTxn \
                     (found {} with partitions [{}])",
                    meta.state,
                    meta.partitions
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        Ok(())
    }

    /// Makes the Ongoing transaction of `(txn_id, producer_epoch)`
    /// abort-only: adding to it and committing it are INVALID_TXN_STATE
    /// until it is aborted. The teaching model's sends use it when an append
    /// failed (a Kafka client keeps this state itself). Not journaled: it
    /// protects a client that is still connected. Does nothing for any
    /// other state or epoch.
    pub fn mark_abort_only(&mut self, txn_id: &str, producer_epoch: i32, reason: &str) {
        if let Some(entry) = self.txns.get_mut(txn_id)
            && entry.meta.producer_epoch == producer_epoch
            && entry.meta.state == TxnState::Ongoing
        {
            entry.abort_only = Some(reason.to_string());
        }
    }

    /// EndTxn: decides the transaction. Errors in Kafka's order: unknown id
    /// or another producer id -> INVALID_PRODUCER_ID_MAPPING; another epoch
    /// -> PRODUCER_FENCED; then by state:
    ///
    /// - Ongoing: journals PrepareCommit / PrepareAbort (staged offsets
    ///   dropped on abort) and returns the plan (commit of an abort-only
    ///   transaction: INVALID_TXN_STATE);
    /// - Prepare* of the same outcome: CONCURRENT_TRANSACTIONS while its
    ///   plan is executed, else the plan again (a retry that finishes it);
    /// - Complete* of the same outcome: `AlreadyComplete` (a retry);
    /// - Empty, or the other outcome's Prepare* / Complete*:
    ///   INVALID_TXN_STATE.
    pub fn end_txn(
        &mut self,
        txn_id: &str,
        producer_id: i64,
        producer_epoch: i32,
        outcome: Outcome,
    ) -> Result<EndTxn> {
        self.check_running()?;
        let entry = self.checked(txn_id, producer_id, producer_epoch)?;
        let state = entry.meta.state;
        if state == TxnState::Ongoing {
            if outcome == Outcome::Commit {
                check_not_abort_only(entry)?;
            }
            return self.prepare(txn_id, outcome).map(EndTxn::Execute);
        }
        if state == outcome.prepare_state() {
            if entry.is_completing() {
                return Err(completing(txn_id, state));
            }
            return Ok(EndTxn::Execute(entry.plan(outcome)));
        }
        if state == outcome.complete_state() {
            return Ok(EndTxn::AlreadyComplete);
        }
        Err(TxnError::state(
            txn_id,
            format!(
                "Ongoing, {} or {} to end it with {outcome:?}",
                outcome.prepare_state(),
                outcome.complete_state()
            ),
            state.as_str(),
        ))
    }

    /// Journals the Prepare* state of `outcome` and returns its plan.
    fn prepare(&mut self, txn_id: &str, outcome: Outcome) -> Result<CompletionPlan> {
        let mut next = self.entry(txn_id)?.meta.clone();
        next.state = outcome.prepare_state();
        if outcome == Outcome::Abort {
            next.offsets.clear();
        }
        self.store(next)?;
        let entry = self.entry_mut(txn_id)?;
        entry.abort_only = None;
        Ok(entry.plan(outcome))
    }

    /// Accepts an executed plan: journals CompleteCommit / CompleteAbort.
    /// INVALID_TXN_STATE if the transaction is not in the plan's Prepare*
    /// state (e.g. completed already) or a piece of the plan was not
    /// acknowledged.
    pub fn complete(&mut self, plan: CompletionPlan) -> Result<TxnState> {
        self.check_running()?;
        let txn_id = plan.transactional_id();
        let entry = self.entry(txn_id)?;
        let expected = plan.outcome().prepare_state();
        if entry.meta.state != expected {
            return Err(TxnError::state(
                txn_id,
                expected.as_str(),
                entry.meta.state.as_str(),
            ));
        }
        let producer = plan.producer();
        if producer.producer_id != entry.meta.producer_id
            || producer.producer_epoch != entry.meta.producer_epoch
        {
            return Err(TxnError::InvalidRequest(format!(
                "the plan of {txn_id:?} is for producer {}/{}, the id is at {}/{}",
                producer.producer_id,
                producer.producer_epoch,
                entry.meta.producer_id,
                entry.meta.producer_epoch
            )));
        }
        if !plan.is_executed() {
            return Err(TxnError::state(
                txn_id,
                "every marker and offset of the plan acknowledged",
                plan.missing_description(),
            ));
        }
        let mut next = entry.meta.clone();
        next.state = plan.outcome().complete_state();
        let marked = next.clone();
        if let Some(fresh) = next.next_producer_id.take() {
            // A transactions-v2 end that exhausted the epochs: the markers
            // closed the old producer id, the producer goes on with the new.
            // The old id and the epoch the end came with stay as the
            // identity a retry of the end names (Kafka's previous producer
            // id), until the next transaction begins.
            next.previous_producer_id = Some(next.producer_id);
            next.producer_id = fresh;
            next.producer_epoch = 0;
        }
        let completed = CompletedTransaction {
            transactional_id: marked.id,
            producer_id: marked.producer_id,
            producer_epoch: marked.producer_epoch,
            state: marked.state,
            partitions: marked.partitions.into_iter().collect(),
            groups: marked.groups.into_iter().collect(),
            start_ms: marked.start_ms,
            completed_ms: self.clock.now_ms(),
        };
        self.store(next)?;
        if self.recent.len() == RECENT_COMPLETIONS {
            self.recent.pop_front();
        }
        self.recent.push_back(completed);
        Ok(plan.outcome().complete_state())
    }

    /// Plans of every Prepare* transaction whose completion is not in
    /// progress: after recovery, or to retry a plan whose execution failed.
    /// Writing a marker twice is harmless.
    pub fn pending_completions(&self) -> Vec<CompletionPlan> {
        self.txns
            .values()
            .filter(|e| !e.is_completing())
            .filter_map(|e| e.meta.state.prepared().map(|o| e.plan(o)))
            .collect()
    }

    /// The plan of `txn_id`'s Prepare* state if its completion is not in
    /// progress.
    pub fn pending_completion(&self, txn_id: &str) -> Option<CompletionPlan> {
        let e = self.txns.get(txn_id).filter(|e| !e.is_completing())?;
        e.meta.state.prepared().map(|o| e.plan(o))
    }

    /// The timeout step: every Ongoing transaction that began more than its
    /// timeout ago moves to PrepareAbort under a bumped epoch (Kafka's
    /// epoch fence), so its producer's later requests are PRODUCER_FENCED
    /// at the coordinator and INVALID_PRODUCER_EPOCH on the partitions,
    /// whose ABORT markers carry the new epoch — except a transactions-v2
    /// EndTxn(abort) with the timed-out epoch, which is answered as a retry
    /// of this abort (`end_txn_v2`). The plans are returned for execution.
    pub fn expire_transactions(&mut self) -> Result<Vec<CompletionPlan>> {
        self.check_running()?;
        let now_ms = self.clock.now_ms();
        let expired: Vec<String> = self
            .txns
            .values()
            .filter(|e| {
                e.meta.state == TxnState::Ongoing
                    && now_ms.saturating_sub(e.meta.start_ms) > e.meta.timeout_ms
            })
            .map(|e| e.meta.id.clone())
            .collect();
        let mut plans = Vec::with_capacity(expired.len());
        for id in expired {
            let meta = &self.entry(&id)?.meta;
            let mut fenced = fenced_abort(meta);
            if fenced.producer_epoch < MAX_PRODUCER_EPOCH {
                // As Kafka's abort of a timed-out transaction under
                // transactions v2: the producer's own EndTxn(abort) with the
                // timed-out epoch counts as a retry of this end and learns
                // the fence's epoch, so it goes on without a new session.
                // Never at the last epoch: a producer holding it could not be
                // fenced by the next timeout. First-protocol requests of the
                // old epoch stay PRODUCER_FENCED.
                fenced.last_producer_epoch = meta.producer_epoch;
            }
            self.store(fenced)?;
            let entry = self.entry_mut(&id)?;
            entry.abort_only = None;
            entry.session_epoch = None;
            plans.push(entry.plan(Outcome::Abort));
        }
        Ok(plans)
    }

    /// A view of one transactional id, `None` if it was never initialized.
    pub fn describe(&self, txn_id: &str) -> Option<TxnDescription> {
        self.txns.get(txn_id).map(Entry::describe)
    }

    /// Every known transactional id, sorted.
    pub fn list(&self) -> Vec<TxnDescription> {
        self.txns.values().map(Entry::describe).collect()
    }

    /// The transactions completed since this coordinator opened, oldest
    /// first, at most `RECENT_COMPLETIONS` (older ones are forgotten).
    pub fn recent_completions(&self) -> Vec<CompletedTransaction> {
        self.recent.iter().cloned().collect()
    }

    /// Clean close: rewrites the journal as one line per id.
    pub fn close(mut self) -> Result<()> {
        self.check_running()?;
        self.rewrite_journal()
    }

    /// Drops the coordinator without a snapshot, as a process kill would.
    /// Everything journaled stays; reopening recovers from it.
    pub fn crash(self) {}

    // ----- internals -----------------------------------------------------

    fn check_running(&self) -> Result<()> {
        match &self.failed {
            None => Ok(()),
            Some(cause) => Err(StorageError::unusable(
                self.journal.path(),
                format!("coordinator refuses operations after a journal failure: {cause}"),
            )
            .into()),
        }
    }

    fn validate_timeout(&self, timeout_ms: i64) -> Result<()> {
        let max = self.config.max_transaction_timeout_ms;
        if timeout_ms <= 0 || timeout_ms > max {
            return Err(TxnError::InvalidTransactionTimeout(format!(
                "transaction timeout must be in 1..={max} ms, got {timeout_ms}"
            )));
        }
        Ok(())
    }

    fn entry(&self, txn_id: &str) -> Result<&Entry> {
        self.txns
            .get(txn_id)
            .ok_or_else(|| TxnError::state(txn_id, "an initialized id", "unknown id"))
    }

    fn entry_mut(&mut self, txn_id: &str) -> Result<&mut Entry> {
        self.txns
            .get_mut(txn_id)
            .ok_or_else(|| TxnError::state(txn_id, "an initialized id", "unknown id"))
    }

    /// The entry of `txn_id` if it belongs to `producer_id`.
    /// The entry a transactional batch of `producer` writes under: the
    /// coordinator running, the id known under the batch's producer id
    /// (INVALID_PRODUCER_ID_MAPPING) and at its epoch
    /// (INVALID_PRODUCER_EPOCH). Both protocols' append checks start here.
    fn batch_entry(&self, txn_id: &str, producer: ProducerInfo) -> Result<&Entry> {
        self.check_running()?;
        let entry = self.known(txn_id, producer.producer_id)?;
        let epoch = entry.meta.producer_epoch;
        if producer.producer_epoch != epoch {
            let reason = epoch_mismatch_reason(producer.producer_epoch, epoch);
            return Err(TxnError::bad_epoch(txn_id, reason));
        }
        Ok(entry)
    }

    fn known(&self, txn_id: &str, producer_id: i64) -> Result<&Entry> {
        let entry = self.txns.get(txn_id).ok_or_else(|| {
            TxnError::mapping(
                txn_id,
                "the transactional id is unknown (it needs an InitProducerId or begin_txn first)",
            )
        })?;
        if entry.meta.producer_id != producer_id {
            return Err(TxnError::mapping(
                txn_id,
                format!(
                    "producer id {producer_id} is not the id's producer id {}",
                    entry.meta.producer_id
                ),
            ));
        }
        Ok(entry)
    }

    /// The entry spoken for by `(producer_id, producer_epoch)`.
    fn checked(&self, txn_id: &str, producer_id: i64, producer_epoch: i32) -> Result<&Entry> {
        let entry = self.known(txn_id, producer_id)?;
        let current = entry.meta.producer_epoch;
        if producer_epoch != current {
            return Err(epoch_mismatch(txn_id, producer_epoch, current));
        }
        Ok(entry)
    }

    /// Like `checked`, for operations that add to a transaction: not while
    /// one completes, not to an abort-only one.
    fn writable(&self, txn_id: &str, producer_id: i64, producer_epoch: i32) -> Result<&Entry> {
        let entry = self.checked(txn_id, producer_id, producer_epoch)?;
        if entry.meta.state.prepared().is_some() {
            return Err(completing(txn_id, entry.meta.state));
        }
        check_not_abort_only(entry)?;
        Ok(entry)
    }

    /// Journals `meta` (fsynced), then makes it the id's state: write-ahead.
    /// A journal failure leaves the state untouched and fails the
    /// coordinator, because the file may now end in a torn line.
    fn store(&mut self, meta: TxnMetadata) -> Result<()> {
        if let Err(e) = self.journal.append(&meta) {
            self.failed = Some(e.to_string());
            return Err(e);
        }
        match self.txns.get_mut(&meta.id) {
            Some(entry) => entry.meta = meta,
            None => {
                self.txns.insert(meta.id.clone(), Entry::new(meta));
            }
        }
        let limit = self
            .config
            .journal_compaction_lines
            .max(self.txns.len().saturating_mul(2));
        if self.journal.lines() > limit {
            self.rewrite_journal()?;
        }
        Ok(())
    }

    fn rewrite_journal(&mut self) -> Result<()> {
        let metas: Vec<&TxnMetadata> = self.txns.values().map(|e| &e.meta).collect();
        if let Err(e) = self.journal.rewrite(metas) {
            self.failed = Some(e.to_string());
            return Err(e);
        }
        Ok(())
    }
}

fn validate_id(txn_id: &str) -> Result<()> {
    if txn_id.is_empty() {
        return Err(TxnError::InvalidRequest(
            "transactional id must not be empty".into(),
        ));
    }
    Ok(())
}

fn validate_group(group: &str) -> Result<()> {
    if group.is_empty() {
        return Err(TxnError::InvalidRequest(
            "group id must not be empty".into(),
        ));
    }
    Ok(())
}

/// An id with no transaction under a (new) identity.
fn idle_txn(
    txn_id: &str,
    producer_id: i64,
    producer_epoch: i32,
    last_producer_epoch: i32,
    timeout_ms: i64,
    now_ms: i64,
) -> TxnMetadata {
    TxnMetadata {
        id: txn_id.to_string(),
        state: TxnState::Empty,
        producer_id,
        producer_epoch,
        last_producer_epoch,
        timeout_ms,
        start_ms: now_ms,
        partitions: BTreeSet::new(),
        groups: BTreeSet::new(),
        offsets: BTreeMap::new(),
        next_producer_id: None,
        previous_producer_id: None,
    }
}

/// KIP-360: InitProducerId naming the producer's `(pid, epoch)`. Another
/// producer id or epoch is PRODUCER_FENCED, except the epoch before the
/// bump this producer asked for (its answer was lost), which gets the same
/// answer again (`Some`). `None`: the current identity, go on.
fn bump_retry(meta: &TxnMetadata, pid: i64, epoch: i32) -> Result<Option<InitProducer>> {
    if pid != meta.producer_id {
        return Err(TxnError::fenced(
            &meta.id,
            format!(
                "producer id {pid} is not the id's current producer id {}",
                meta.producer_id
            ),
        ));
    }
    if meta.state == TxnState::Empty
        && meta.last_producer_epoch != NO_EPOCH
        && epoch == meta.last_producer_epoch
    {
        return Ok(Some(InitProducer::Ready {
            producer_id: meta.producer_id,
            producer_epoch: meta.producer_epoch,
        }));
    }
    if epoch != meta.producer_epoch {
        return Err(epoch_mismatch(&meta.id, epoch, meta.producer_epoch));
    }
    Ok(None)
}

/// The identity of a new session of an idle id: the epoch its first round
/// fenced an Ongoing transaction with (`session_epoch`, once that abort is
/// complete), else the next epoch, remembering the epoch the producer
/// `asked` from for a retry; with the epochs exhausted, `fresh_producer_id`
/// at epoch 0 (`None` until one is given).
fn next_session(
    meta: &TxnMetadata,
    session_epoch: Option<i32>,
    asked: i32,
    fresh_producer_id: Option<i64>,
    timeout_ms: i64,
    now_ms: i64,
) -> Option<TxnMetadata> {
    let (pid, epoch) = (meta.producer_id, meta.producer_epoch);
    if meta.state == TxnState::CompleteAbort && session_epoch == Some(epoch) {
        return Some(idle_txn(&meta.id, pid, epoch, NO_EPOCH, timeout_ms, now_ms));
    }
    if epoch + 1 >= MAX_PRODUCER_EPOCH {
        let fresh = fresh_producer_id.filter(|p| *p != pid)?;
        return Some(idle_txn(&meta.id, fresh, 0, NO_EPOCH, timeout_ms, now_ms));
    }
    Some(idle_txn(
        &meta.id,
        pid,
        epoch + 1,
        asked,
        timeout_ms,
        now_ms,
    ))
}

/// The next transaction of an idle id: Ongoing from `now_ms`, nothing added.
fn begun(meta: &TxnMetadata, now_ms: i64) -> TxnMetadata {
    TxnMetadata {
        state: TxnState::Ongoing,
        start_ms: now_ms,
        // The answer an InitProducerId or EndTxn retry would get is
        // superseded by the new transaction.
        last_producer_epoch: NO_EPOCH,
        previous_producer_id: None,
        partitions: BTreeSet::new(),
        groups: BTreeSet::new(),
        offsets: BTreeMap::new(),
        ..meta.clone()
    }
}

/// Kafka's epoch fence of an Ongoing transaction: PrepareAbort under the
/// next epoch, so the markers and every later check refuse the producer.
/// An epoch already at the maximum (only possible in journals written
/// before epochs were bounded) stays, and the abort happens without the
/// fence.
fn fenced_abort(meta: &TxnMetadata) -> TxnMetadata {
    let mut next = meta.clone();
    if next.producer_epoch < MAX_PRODUCER_EPOCH {
        next.producer_epoch += 1;
    }
    next.last_producer_epoch = NO_EPOCH;
    next.state = TxnState::PrepareAbort;
    next.offsets.clear();
    next
}

fn check_not_abort_only(entry: &Entry) -> Result<()> {
    match &entry.abort_only {
        None => Ok(()),
        Some(reason) => Err(TxnError::state(
            &entry.meta.id,
            "Ongoing (not abort-only)",
            format!("Ongoing, abort-only because {reason}"),
        )),
    }
}

fn completing(txn_id: &str, state: TxnState) -> TxnError {
    TxnError::concurrent(
        txn_id,
        format!("the previous transaction is being completed ({state}); retry"),
    )
}

fn epoch_mismatch_reason(epoch: i32, current: i32) -> String {
    let relation = if epoch < current { "older" } else { "newer" };
    format!("producer epoch {epoch} is {relation} than the current epoch {current}")
}

fn epoch_mismatch(txn_id: &str, epoch: i32, current: i32) -> TxnError {
    TxnError::fenced(txn_id, epoch_mismatch_reason(epoch, current))
}
