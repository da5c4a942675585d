//! `TransactionCoordinator`: the sans-IO state machine of every
//! transactional id — begin, send bookkeeping, staged offsets, commit,
//! abort, completion, timeout expiry, recovery and the clean-close
//! snapshot. Every state change is journaled before it takes effect; side
//! effects on partitions leave as `CompletionPlan`s and `PendingSend`s.

use crate::error::{Result, TxnError};
use crate::journal::{Journal, JournalFaults};
use crate::plan::CompletionPlan;
use crate::state::{Outcome, StagedOffset, TxnMetadata, TxnState};
use mk_core::{SharedClock, TopicPartition};
use mk_log::{ProducerInfo, Record, RecordBatch, StorageError};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Settings of the coordinator.
#[derive(Debug, Clone)]
pub struct TxnConfig {
    /// An Ongoing transaction older than this is aborted by
    /// `expire_transactions`.
    pub transaction_timeout_ms: i64,
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
            journal_compaction_lines: 10_000,
            faults: Arc::new(JournalFaults::new()),
        }
    }
}

impl TxnConfig {
    /// Checks every rule: the timeout and the compaction threshold are > 0.
    pub fn validate(&self) -> Result<()> {
        if self.transaction_timeout_ms <= 0 {
            return Err(TxnError::InvalidRequest(format!(
                "transaction_timeout_ms must be > 0, got {}",
                self.transaction_timeout_ms
            )));
        }
        if self.journal_compaction_lines == 0 {
            return Err(TxnError::InvalidRequest(
                "journal_compaction_lines must be > 0".into(),
            ));
        }
        Ok(())
    }
}

/// The outcome of `begin`.
#[must_use = "a CompletePriorFirst plan must be executed and completed before begin is retried"]
#[derive(Debug)]
pub enum Begin {
    /// The transaction is Ongoing; sends may start.
    Started,
    /// An earlier instance of the id left a transaction unfinished (Ongoing:
    /// it is now PrepareAbort; or already Prepare*). The caller's epoch is
    /// registered, so the older instance is fenced already. Execute the
    /// plan, `complete` it, then call `begin` again with the same epoch.
    CompletePriorFirst(CompletionPlan),
}

/// What `append` must do with a send: append `batch()` (one record, the
/// transactional id and the producer id / epoch / sequence) to `tp()` with
/// acks=all, then report the outcome with `send_appended` or `send_failed`.
/// While it exists the send counts as in flight: the transaction cannot
/// commit, abort or expire under it. Dropping it unreported releases that
/// hold but leaves the sequence consumed.
#[must_use = "append the batch, then report it with send_appended or send_failed"]
#[derive(Debug)]
pub struct PendingSend {
    txn_id: String,
    tp: TopicPartition,
    batch: RecordBatch,
    token: Arc<()>,
}

impl PendingSend {
    pub fn transactional_id(&self) -> &str {
        &self.txn_id
    }

    /// The partition chosen by the caller.
    pub fn tp(&self) -> &TopicPartition {
        &self.tp
    }

    /// The batch to append (clone it per attempt; a retry with the same
    /// sequence is deduplicated by the idempotent-producer state).
    pub fn batch(&self) -> &RecordBatch {
        &self.batch
    }

    pub fn producer(&self) -> ProducerInfo {
        self.batch.producer()
    }
}

/// How a failed send ended, as far as the caller knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendFate {
    /// Refused before anything was written (e.g. NOT_ENOUGH_REPLICAS): the
    /// sequence can be reused.
    NotAppended,
    /// It may be in the log (e.g. NOT_ENOUGH_REPLICAS_AFTER_APPEND, timeout).
    MaybeAppended,
}

/// A read-only view of one transactional id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnDescription {
    pub transactional_id: String,
    pub state: TxnState,
    pub producer_id: i64,
    pub producer_epoch: i32,
    pub start_ms: i64,
    /// Touched partitions and the offset of their first record (`None`
    /// until the append is reported).
    pub partitions: Vec<(TopicPartition, Option<i64>)>,
    pub staged_offsets: Vec<StagedOffset>,
    pub in_flight_sends: usize,
    /// Why only abort is allowed, if so.
    pub abort_only: Option<String>,
}

/// What opening the coordinator found. The plans are those of every
/// `Prepare*` transaction in the journal: execute each (write missing
/// markers, store offsets), then `complete` it.
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
    /// Shared with every `PendingSend` of the current transaction; its
    /// strong count minus one is the number of sends in flight. Replaced
    /// when a transaction begins or an instance is fenced, which orphans
    /// older tickets.
    in_flight: Arc<()>,
    abort_only: Option<String>,
    /// False when the sequences may be stale (recovered from an unclean
    /// journal): sends of that epoch are fenced.
    sequences_trusted: bool,
}

impl Entry {
    fn new(meta: TxnMetadata) -> Self {
        Self {
            meta,
            in_flight: Arc::new(()),
            abort_only: None,
            sequences_trusted: true,
        }
    }

    fn in_flight_sends(&self) -> usize {
        Arc::strong_count(&self.in_flight) - 1
    }

    fn describe(&self) -> TxnDescription {
        TxnDescription {
            transactional_id: self.meta.id.clone(),
            state: self.meta.state,
            producer_id: self.meta.producer_id,
            producer_epoch: self.meta.producer_epoch,
            start_ms: self.meta.start_ms,
            partitions: self
                .meta
                .partitions
                .iter()
                .map(|(tp, f)| (tp.clone(), *f))
                .collect(),
            staged_offsets: self.meta.staged_offsets(),
            in_flight_sends: self.in_flight_sends(),
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
}

impl TransactionCoordinator {
    /// Opens (or creates) the journal at `journal_path` and recovers: the
    /// journal is cut after its last valid line, the last state per id is
    /// kept, and the journal is rewritten compactly. After an unclean
    /// shutdown every Ongoing transaction becomes abort-only and every
    /// recovered producer epoch is fenced for sends (its sequence numbers
    /// may be stale); `Prepare*` transactions come back as plans.
    pub fn open(journal_path: &Path, config: TxnConfig, clock: SharedClock) -> Result<Recovered> {
        config.validate()?;
        let opened = Journal::open(journal_path, config.faults.clone())?;
        let mut txns = BTreeMap::new();
        for (id, mut meta) in opened.states {
            let clean = meta.clean;
            // The snapshot's promise holds only until the next write, so the
            // flag is never carried into memory.
            meta.clean = false;
            let mut entry = Entry::new(meta);
            entry.sequences_trusted = clean;
            if !clean && entry.meta.state == TxnState::Ongoing {
                entry.abort_only = Some(
                    "the coordinator restarted without a clean shutdown while it was open"
                        .to_string(),
                );
            }
            txns.insert(id, entry);
        }
        let mut coordinator = Self {
            journal: opened.journal,
            config,
            clock,
            txns,
            failed: None,
        };
        // Rewriting consumes the clean flags (sends after this point are not
        // journaled one by one) and compacts whatever a crash left behind.
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

    // ----- operations ------------------------------------------------------

    /// Begins a transaction for `txn_id` as the instance `(producer_id,
    /// producer_epoch)` allocated by the caller's identity store.
    ///
    /// - Same epoch: INVALID_TXN_STATE unless the previous transaction is
    ///   complete.
    /// - Older epoch: PRODUCER_FENCED.
    /// - Newer epoch: the older instance is fenced from now on; a transaction
    ///   it left Ongoing is moved to PrepareAbort and returned as
    ///   `CompletePriorFirst`, as is one already in Prepare*.
    /// - A producer id other than the one the id is registered with:
    ///   INVALID_REQUEST (identities of an id never change in this model).
    pub fn begin(&mut self, txn_id: &str, producer_id: i64, producer_epoch: i32) -> Result<Begin> {
        self.check_running()?;
        validate_id(txn_id)?;
        if producer_id < 0 || producer_epoch < 0 {
            return Err(TxnError::InvalidRequest(format!(
                "producer id and epoch must be >= 0, got {producer_id} / {producer_epoch}"
            )));
        }
        let now_ms = self.clock.now_ms();
        let Some(entry) = self.txns.get(txn_id) else {
            let meta = fresh_txn(txn_id, producer_id, producer_epoch, now_ms, BTreeMap::new());
            self.store(meta)?;
            return Ok(Begin::Started);
        };
        let current = &entry.meta;
        if current.producer_id != producer_id {
            return Err(TxnError::InvalidRequest(format!(
                "transactional id {txn_id:?} belongs to producer id {}, got {producer_id}",
                current.producer_id
            )));
        }
        if producer_epoch < current.producer_epoch {
            return Err(older_epoch(txn_id, producer_epoch, current.producer_epoch));
        }
        if producer_epoch == current.producer_epoch {
            if !current.state.is_complete() {
                return Err(TxnError::state(
                    txn_id,
                    "CompleteCommit or CompleteAbort (no open transaction)",
                    current.state.as_str(),
                ));
            }
            if !entry.sequences_trusted {
                return Err(untrusted(txn_id, producer_epoch));
            }
            let sequences = current.sequences.clone();
            let meta = fresh_txn(txn_id, producer_id, producer_epoch, now_ms, sequences);
            self.store(meta)?;
            self.reset_runtime(txn_id);
            return Ok(Begin::Started);
        }
        // A newer instance: it fences the older one, whose sequences die
        // with it.
        let outcome = match current.state {
            TxnState::Ongoing => Some(Outcome::Abort),
            s => s.prepared(),
        };
        let Some(outcome) = outcome else {
            let meta = fresh_txn(txn_id, producer_id, producer_epoch, now_ms, BTreeMap::new());
            self.store(meta)?;
            self.reset_runtime(txn_id);
            return Ok(Begin::Started);
        };
        let mut meta = current.clone();
        meta.producer_epoch = producer_epoch;
        meta.sequences.clear();
        meta.state = outcome.prepare_state();
        if outcome == Outcome::Abort {
            meta.offsets.clear();
        }
        self.store(meta)?;
        self.reset_runtime(txn_id);
        let entry = self.entry(txn_id)?;
        Ok(Begin::CompletePriorFirst(CompletionPlan::for_txn(
            &entry.meta,
            outcome,
        )))
    }

    /// Prepares a transactional send of `record` to `tp` (chosen by the
    /// caller). Ongoing only. The partition is journaled as part of the
    /// transaction before the batch is handed out, so a crash after the
    /// append can never leave data the coordinator does not know to mark.
    pub fn send(
        &mut self,
        txn_id: &str,
        producer_epoch: i32,
        tp: TopicPartition,
        record: Record,
    ) -> Result<PendingSend> {
        self.check_running()?;
        let entry = self.ongoing(txn_id, producer_epoch)?;
        // An instance whose sequences were lost is told to re-initialize
        // before it is told that its transaction can only abort.
        if !entry.sequences_trusted {
            return Err(untrusted(txn_id, producer_epoch));
        }
        check_not_abort_only(entry)?;
        let meta = &entry.meta;
        let sequence = meta.sequences.get(&tp).copied().unwrap_or(0);
        let producer = ProducerInfo {
            producer_id: meta.producer_id,
            producer_epoch: meta.producer_epoch,
            base_sequence: sequence,
        };
        let batch = RecordBatch::new(vec![record])
            .map_err(|e| TxnError::InvalidRequest(e.to_string()))?
            .with_producer(producer)
            .with_transactional_id(txn_id);
        if !meta.partitions.contains_key(&tp) {
            let mut next = meta.clone();
            next.partitions.insert(tp.clone(), None);
            self.store(next)?;
        }
        let entry = self.entry_mut(txn_id)?;
        entry
            .meta
            .sequences
            .insert(tp.clone(), next_sequence(sequence));
        Ok(PendingSend {
            txn_id: txn_id.to_string(),
            tp,
            batch,
            token: entry.in_flight.clone(),
        })
    }

    /// Records that `pending` was appended at `base_offset`; the earliest
    /// append to a partition journals its first offset.
    pub fn send_appended(&mut self, pending: PendingSend, base_offset: i64) -> Result<()> {
        self.check_running()?;
        if base_offset < 0 {
            return Err(TxnError::InvalidRequest(format!(
                "base offset must be >= 0, got {base_offset}"
            )));
        }
        let entry = self.entry_of(&pending)?;
        // Two sends to one partition may be reported out of order; the
        // transaction starts at the smaller offset.
        let earlier = match entry.meta.partitions.get(&pending.tp) {
            Some(None) => true,
            Some(Some(first)) => base_offset < *first,
            None => false,
        };
        if !earlier {
            return Ok(());
        }
        let mut next = entry.meta.clone();
        next.partitions
            .insert(pending.tp.clone(), Some(base_offset));
        drop(pending);
        self.store(next)
    }

    /// Records that `pending` failed. The transaction becomes abort-only
    /// (its outcome can no longer be all of what the producer sent); a
    /// sequence that was never appended is released for reuse.
    pub fn send_failed(&mut self, pending: PendingSend, fate: AppendFate) -> Result<()> {
        self.check_running()?;
        let sequence = pending.producer().base_sequence;
        if self.entry_of(&pending).is_err() {
            // The transaction it belonged to is over; nothing to record.
            return Ok(());
        }
        let entry = self.entry_mut(&pending.txn_id)?;
        entry.abort_only = Some(format!("a send to {} failed", pending.tp));
        let reserved = entry.meta.sequences.get(&pending.tp).copied();
        if fate == AppendFate::NotAppended && reserved == Some(next_sequence(sequence)) {
            entry.meta.sequences.insert(pending.tp.clone(), sequence);
        }
        Ok(())
    }

    /// Stages consumer offsets of `group`, stored only if the transaction
    /// commits (a later value for the same partition replaces an earlier
    /// one). Ongoing only.
    pub fn send_offsets(
        &mut self,
        txn_id: &str,
        producer_epoch: i32,
        group: &str,
        offsets: impl IntoIterator<Item = (TopicPartition, i64)>,
    ) -> Result<()> {
        self.check_running()?;
        if group.is_empty() {
            return Err(TxnError::InvalidRequest(
                "group id must not be empty".into(),
            ));
        }
        let offsets: Vec<(TopicPartition, i64)> = offsets.into_iter().collect();
        if let Some((tp, o)) = offsets.iter().find(|(_, o)| *o < 0) {
            return Err(TxnError::InvalidRequest(format!(
                "offset for {tp} must be >= 0, got {o}"
            )));
        }
        let entry = self.ongoing(txn_id, producer_epoch)?;
        check_not_abort_only(entry)?;
        if offsets.is_empty() {
            return Ok(());
        }
        let mut next = entry.meta.clone();
        for (tp, offset) in offsets {
            next.offsets.insert((group.to_string(), tp), offset);
        }
        self.store(next)
    }

    /// Decides to commit: journals PrepareCommit and returns the plan that
    /// writes the COMMIT markers and stores the staged offsets. Ongoing only,
    /// with no send in flight and no failed send.
    pub fn commit(&mut self, txn_id: &str, producer_epoch: i32) -> Result<CompletionPlan> {
        self.end(txn_id, producer_epoch, Outcome::Commit)
    }

    /// Decides to abort: journals PrepareAbort (staged offsets dropped) and
    /// returns the plan that writes the ABORT markers. Ongoing only, with no
    /// send in flight.
    pub fn abort(&mut self, txn_id: &str, producer_epoch: i32) -> Result<CompletionPlan> {
        self.end(txn_id, producer_epoch, Outcome::Abort)
    }

    fn end(
        &mut self,
        txn_id: &str,
        producer_epoch: i32,
        outcome: Outcome,
    ) -> Result<CompletionPlan> {
        self.check_running()?;
        let entry = self.ongoing(txn_id, producer_epoch)?;
        if outcome == Outcome::Commit {
            check_not_abort_only(entry)?;
        }
        let in_flight = entry.in_flight_sends();
        if in_flight > 0 {
            return Err(TxnError::state(
                txn_id,
                "Ongoing with no send in flight",
                format!("Ongoing with {in_flight} sends in flight"),
            ));
        }
        self.prepare(txn_id, outcome)
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
        Ok(CompletionPlan::for_txn(&entry.meta, outcome))
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
            || producer.producer_epoch > entry.meta.producer_epoch
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
        self.store(next)?;
        Ok(plan.outcome().complete_state())
    }

    /// Plans of every Prepare* transaction: after recovery, or to retry a
    /// plan whose execution failed. Writing a marker twice is harmless.
    pub fn pending_completions(&self) -> Vec<CompletionPlan> {
        self.txns
            .values()
            .filter_map(|e| {
                e.meta
                    .state
                    .prepared()
                    .map(|o| CompletionPlan::for_txn(&e.meta, o))
            })
            .collect()
    }

    /// The timeout step: every Ongoing transaction that began more than
    /// `transaction_timeout_ms` ago (and has no send in flight) moves to
    /// PrepareAbort; their plans are returned for execution. The producer
    /// then finds its transaction aborted (INVALID_TXN_STATE on send or
    /// commit) and may begin a new one.
    pub fn expire_transactions(&mut self) -> Result<Vec<CompletionPlan>> {
        self.check_running()?;
        let now_ms = self.clock.now_ms();
        let timeout_ms = self.config.transaction_timeout_ms;
        let expired: Vec<String> = self
            .txns
            .values()
            .filter(|e| {
                e.meta.state == TxnState::Ongoing
                    && e.in_flight_sends() == 0
                    && now_ms.saturating_sub(e.meta.start_ms) > timeout_ms
            })
            .map(|e| e.meta.id.clone())
            .collect();
        let mut plans = Vec::with_capacity(expired.len());
        for id in expired {
            plans.push(self.prepare(&id, Outcome::Abort)?);
        }
        Ok(plans)
    }

    /// A view of one transactional id, `None` if it never began.
    pub fn describe(&self, txn_id: &str) -> Option<TxnDescription> {
        self.txns.get(txn_id).map(Entry::describe)
    }

    /// Every known transactional id, sorted.
    pub fn list(&self) -> Vec<TxnDescription> {
        self.txns.values().map(Entry::describe).collect()
    }

    /// Clean close: rewrites the journal as one line per id, marked clean
    /// where the id's sequences are exact, so a reopen trusts them.
    pub fn close(mut self) -> Result<()> {
        self.check_running()?;
        let snapshot: Vec<TxnMetadata> = self
            .txns
            .values()
            .map(|e| {
                let mut meta = e.meta.clone();
                meta.clean =
                    e.sequences_trusted && e.in_flight_sends() == 0 && e.abort_only.is_none();
                meta
            })
            .collect();
        self.journal.rewrite(&snapshot)
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

    fn entry(&self, txn_id: &str) -> Result<&Entry> {
        self.txns
            .get(txn_id)
            .ok_or_else(|| TxnError::state(txn_id, "a begun transaction", "unknown id"))
    }

    fn entry_mut(&mut self, txn_id: &str) -> Result<&mut Entry> {
        self.txns
            .get_mut(txn_id)
            .ok_or_else(|| TxnError::state(txn_id, "a begun transaction", "unknown id"))
    }

    /// The entry of an Ongoing transaction spoken for by `producer_epoch`.
    fn ongoing(&self, txn_id: &str, producer_epoch: i32) -> Result<&Entry> {
        let entry = self.entry(txn_id)?;
        let current = entry.meta.producer_epoch;
        if producer_epoch < current {
            return Err(older_epoch(txn_id, producer_epoch, current));
        }
        if producer_epoch > current {
            return Err(TxnError::state(
                txn_id,
                format!("a transaction begun by producer epoch {producer_epoch}"),
                format!("{} of producer epoch {current}", entry.meta.state),
            ));
        }
        if entry.meta.state != TxnState::Ongoing {
            return Err(TxnError::state(
                txn_id,
                TxnState::Ongoing.as_str(),
                entry.meta.state.as_str(),
            ));
        }
        Ok(entry)
    }

    /// The entry whose current transaction issued `pending`.
    fn entry_of(&self, pending: &PendingSend) -> Result<&Entry> {
        let txn_id = &pending.txn_id;
        let entry = self.entry(txn_id)?;
        let epoch = pending.producer().producer_epoch;
        if epoch < entry.meta.producer_epoch {
            return Err(older_epoch(txn_id, epoch, entry.meta.producer_epoch));
        }
        if !Arc::ptr_eq(&entry.in_flight, &pending.token) || entry.meta.state != TxnState::Ongoing {
            return Err(TxnError::state(
                txn_id,
                "the Ongoing transaction that issued the send",
                format!("{} of a later transaction", entry.meta.state),
            ));
        }
        Ok(entry)
    }

    /// A new transaction or a new instance: older tickets are orphaned and
    /// the new epoch's sequences (reset or kept) are exact.
    fn reset_runtime(&mut self, txn_id: &str) {
        if let Some(entry) = self.txns.get_mut(txn_id) {
            entry.in_flight = Arc::new(());
            entry.abort_only = None;
            entry.sequences_trusted = true;
        }
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

fn fresh_txn(
    txn_id: &str,
    producer_id: i64,
    producer_epoch: i32,
    now_ms: i64,
    sequences: BTreeMap<TopicPartition, i32>,
) -> TxnMetadata {
    TxnMetadata {
        id: txn_id.to_string(),
        state: TxnState::Ongoing,
        producer_id,
        producer_epoch,
        start_ms: now_ms,
        partitions: BTreeMap::new(),
        offsets: BTreeMap::new(),
        sequences,
        clean: false,
    }
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

fn older_epoch(txn_id: &str, epoch: i32, current: i32) -> TxnError {
    TxnError::fenced(
        txn_id,
        format!("producer epoch {epoch} is older than the current epoch {current}"),
    )
}

fn untrusted(txn_id: &str, epoch: i32) -> TxnError {
    TxnError::fenced(
        txn_id,
        format!(
            "producer epoch {epoch} was not closed cleanly before the coordinator restarted, \
             so its sequence numbers are unknown; begin with a newer epoch"
        ),
    )
}

/// Sequences wrap like Kafka's: after `i32::MAX` comes 0.
fn next_sequence(sequence: i32) -> i32 {
    if sequence == i32::MAX {
        0
    } else {
        sequence + 1
    }
}
