//! `PartitionReplicaSet`: every replica of one partition in one process
//! (spec 02). It owns the leader, the ISR, the high watermark, `acks`
//! completions, leader epochs with KIP-101/279 reconciliation, promotion
//! and rejoin, and the leader's idempotence checks. It is a synchronous
//! state machine: every background activity of a broker is a method
//! (`replicate_all_once`, `refresh_isr`, `checkpoint`) and time comes from
//! the injected clock.

mod copy;
mod flush;
mod log_start;
mod reassign;

pub use copy::{CheckedCopy, FollowerCopy};
pub use flush::{CheckpointPlan, SyncedCheckpoint};
pub use log_start::DELETE_TO_HIGH_WATERMARK;
pub use reassign::{Reassignment, SettledPlacement, check_target, remove_replica_dirs};

use crate::ack::{AckHandle, AppendOutcome, ProduceResult, Waiter};
use crate::config::{AckMode, ReplicationConfig};
use crate::epoch_cache::{EpochEndOffset, EpochEntry};
use crate::error::{BrokerId, ReplicationError, Result};
use crate::producer_state::{ProducerEntry, Registrations, SequenceCheck};
use crate::replica::{Replica, ReplicaRole, replica_dir};
use mk_core::{SharedClock, TopicPartition};
use mk_log::{CompactionResult, PartitionLog, RecordBatch, RetentionPolicy};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Who leads a partition in which epoch, and where its replicas are: what
/// mk-cluster keeps in `metadata.json` and passes back to `open`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionAssignment {
    /// Broker ids in placement order; the first is the preferred leader.
    pub replicas: Vec<BrokerId>,
    pub leader_id: BrokerId,
    pub leader_epoch: i32,
}

impl PartitionAssignment {
    /// The assignment of a new partition: leader = `replicas[0]`, epoch 0.
    /// An empty list is rejected by `open`.
    pub fn new_partition(replicas: Vec<BrokerId>) -> Self {
        let leader_id = replicas.first().copied().unwrap_or(-1);
        Self {
            replicas,
            leader_id,
            leader_epoch: 0,
        }
    }
}

/// The leader and its epoch after a promotion (to be persisted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderAndEpoch {
    pub leader_id: BrokerId,
    pub leader_epoch: i32,
}

/// What one follower fetch did (for labs and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerFetch {
    pub broker: BrokerId,
    /// The LEO the follower was truncated to by reconciliation, if it was.
    pub truncated_to: Option<i64>,
    /// The offset the follower's log was restarted at because its log
    /// shared no usable prefix with the leader's retained log.
    pub reset_to: Option<i64>,
    /// Batches and bytes copied from the leader.
    pub batches: usize,
    pub bytes: usize,
    /// The follower's LEO after the fetch.
    pub log_end_offset: i64,
}

/// All replicas of one partition (see the module docs and spec 02).
#[derive(Debug)]
pub struct PartitionReplicaSet {
    tp: TopicPartition,
    data_dir: PathBuf,
    config: ReplicationConfig,
    clock: SharedClock,
    /// Placement order, as given at open.
    placement: Vec<BrokerId>,
    replicas: BTreeMap<BrokerId, Replica>,
    leader_id: BrokerId,
    leader_epoch: i32,
    /// Always contains the leader.
    isr: BTreeSet<BrokerId>,
    /// Exclusive: offsets below it are committed and visible.
    high_watermark: i64,
    /// Producer epochs registered with `register_producer` (not in the log).
    registrations: Registrations,
    /// Pending `acks=all` completions, in append order.
    waiters: Vec<Waiter>,
    /// A move of the replicas in progress (`reassign.rs`).
    reassignment: Option<reassign::Reassignment>,
}

impl PartitionReplicaSet {
    /// Creates (or re-creates after an interrupted creation) the replicas of
    /// a new partition: leader = `replicas[0]`, epoch 0, ISR = all, HW = 0.
    pub fn create(
        data_dir: &Path,
        tp: TopicPartition,
        replicas: Vec<BrokerId>,
        config: ReplicationConfig,
        clock: SharedClock,
    ) -> Result<Self> {
        Self::open(
            data_dir,
            tp,
            PartitionAssignment::new_partition(replicas),
            config,
            clock,
        )
    }

    /// Opens the replicas of `tp` under `data_dir` with the assignment kept
    /// in the cluster metadata.
    ///
    /// - Every replica log is recovered by mk-log; its epoch cache comes
    ///   from `leader-epoch-checkpoint` and its producer state from the
    ///   newest snapshot plus the tail after it.
    /// - If some replica's epoch cache already names an epoch above
    ///   `leader_epoch` (a crash after `promote` wrote the new leader's cache
    ///   but before the cluster persisted the epoch), the leader takes a
    ///   fresh epoch above every epoch seen, so no epoch ever has two
    ///   writers. After an unclean shutdown (any replica log opened without
    ///   its clean-shutdown checkpoint) the leader takes a new epoch too, so
    ///   that tails lost differently by different replicas cannot hide as
    ///   equal data of one epoch. `leader_epoch()` then differs from the
    ///   assignment and the caller must persist it.
    /// - ISR = the leader plus every follower whose LEO and epoch cache equal
    ///   the leader's (equal caches are what make equal LEOs mean equal
    ///   data; the others reconcile on their first fetch).
    /// - HW = the newest checkpointed HW clipped to the leader's LEO, never
    ///   lower than the minimum LEO of that ISR; a restart therefore never
    ///   moves visibility backwards. Since every restored ISR member ends
    ///   where the leader ends, that floor is the leader's LEO: all the
    ///   leader holds is committed after a restart, which is safe because
    ///   only ISR members can be promoted and each holds all of it. The
    ///   checkpoint matters when the leader's log ends below it (it lost
    ///   committed data), which is reported.
    pub fn open(
        data_dir: &Path,
        tp: TopicPartition,
        assignment: PartitionAssignment,
        mut config: ReplicationConfig,
        clock: SharedClock,
    ) -> Result<Self> {
        config.validate()?;
        // The logs age their active segments (`segment_ms`) by the set's
        // injected clock unless the caller gave them one.
        if config.log.clock.is_none() {
            config.log.clock = Some(clock.clone());
        }
        check_assignment(&tp, &assignment)?;
        let now = clock.now_ms();
        let mut replicas = BTreeMap::new();
        let mut registrations = Registrations::new();
        for &broker in &assignment.replicas {
            let dir = replica_dir(data_dir, broker, &tp);
            let (replica, regs) =
                Replica::open(dir, &tp, &config.log, assignment.leader_epoch, now)?;
            merge_registrations(&mut registrations, &regs);
            replicas.insert(broker, replica);
        }
        let leader_epoch = fresh_leader_epoch(&tp, &assignment, &replicas)?;
        for r in replicas.values_mut() {
            r.log.set_leader_epoch(leader_epoch)?;
        }
        let leader = replicas
            .get_mut(&assignment.leader_id)
            .expect("checked: the leader is a replica");
        leader.role = ReplicaRole::Leader;
        leader.reconciled_epoch = Some(leader_epoch);
        let leader_leo = leader.leo();
        leader.epochs.assign(leader_epoch, leader_leo)?;
        let isr = restored_isr(assignment.leader_id, leader_epoch, &mut replicas);
        let high_watermark = restored_high_watermark(&tp, assignment.leader_id, &isr, &replicas);
        let set = Self {
            tp,
            data_dir: data_dir.to_path_buf(),
            config,
            clock,
            placement: assignment.replicas,
            replicas,
            leader_id: assignment.leader_id,
            leader_epoch,
            isr,
            high_watermark,
            registrations,
            waiters: Vec::new(),
            reassignment: None,
        };
        set.check_invariants();
        Ok(set)
    }

    // ----- accessors ----------------------------------------------------

    pub fn topic_partition(&self) -> &TopicPartition {
        &self.tp
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    pub fn config(&self) -> &ReplicationConfig {
        &self.config
    }

    /// Sets the in-sync replicas an acks=all append needs from now on (the
    /// topic's `min.insync.replicas`, which may change at run time): below
    /// it a new acks=all append is NOT_ENOUGH_REPLICAS, and a waiting one
    /// whose ISR shrank under it NOT_ENOUGH_REPLICAS_AFTER_APPEND. Zero is
    /// ignored (the config refuses it).
    pub fn set_min_insync_replicas(&mut self, n: usize) {
        if n > 0 {
            self.config.min_insync_replicas = n;
        }
    }

    /// Changes the segment size of every replica's log for future rolls.
    pub fn set_segment_max_bytes(&mut self, bytes: u64) -> Result<()> {
        for r in self.replicas.values_mut() {
            r.log.set_segment_max_bytes(bytes)?;
        }
        self.config.log.segment_max_bytes = bytes;
        Ok(())
    }

    /// Changes `segment.ms` of every replica (see
    /// [`PartitionLog::set_segment_ms`](mk_log::PartitionLog::set_segment_ms)).
    pub fn set_segment_ms(&mut self, segment_ms: Option<i64>) -> Result<()> {
        for r in self.replicas.values_mut() {
            r.log.set_segment_ms(segment_ms)?;
        }
        self.config.log.segment_ms = segment_ms;
        Ok(())
    }

    /// Changes the sparse index interval of every replica (see
    /// [`PartitionLog::set_index_interval_bytes`](mk_log::PartitionLog::set_index_interval_bytes)).
    pub fn set_index_interval_bytes(&mut self, bytes: u64) -> Result<()> {
        for r in self.replicas.values_mut() {
            r.log.set_index_interval_bytes(bytes)?;
        }
        self.config.log.index_interval_bytes = bytes;
        Ok(())
    }

    /// Changes `segment.jitter.ms` of every replica (see
    /// [`PartitionLog::set_segment_jitter_ms`](mk_log::PartitionLog::set_segment_jitter_ms)).
    pub fn set_segment_jitter_ms(&mut self, jitter_ms: i64) -> Result<()> {
        for r in self.replicas.values_mut() {
            r.log.set_segment_jitter_ms(jitter_ms)?;
        }
        self.config.log.segment_jitter_ms = jitter_ms;
        Ok(())
    }

    /// Changes when the cleaner compacts every replica (see
    /// [`PartitionLog::set_cleaner`](mk_log::PartitionLog::set_cleaner)).
    pub fn set_cleaner(&mut self, cleaner: mk_log::CleanerConfig) -> Result<()> {
        for r in self.replicas.values_mut() {
            r.log.set_cleaner(cleaner)?;
        }
        self.config.log.cleaner = cleaner;
        Ok(())
    }

    pub fn leader_id(&self) -> BrokerId {
        self.leader_id
    }

    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch
    }

    pub fn leader_and_epoch(&self) -> LeaderAndEpoch {
        LeaderAndEpoch {
            leader_id: self.leader_id,
            leader_epoch: self.leader_epoch,
        }
    }

    /// The current assignment, as it must be persisted.
    pub fn assignment(&self) -> PartitionAssignment {
        PartitionAssignment {
            replicas: self.placement.clone(),
            leader_id: self.leader_id,
            leader_epoch: self.leader_epoch,
        }
    }

    /// Replica broker ids in placement order.
    pub fn replicas(&self) -> &[BrokerId] {
        &self.placement
    }

    /// The in-sync replicas, sorted by broker id.
    pub fn isr(&self) -> Vec<BrokerId> {
        self.isr.iter().copied().collect()
    }

    /// Exclusive: consumers (read_uncommitted) see offsets below it.
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// The leader's log start offset.
    pub fn log_start_offset(&self) -> i64 {
        self.leader().log.log_start_offset()
    }

    /// The leader's log end offset.
    pub fn log_end_offset(&self) -> i64 {
        self.leader().leo()
    }

    /// The LEO of `broker`'s replica.
    pub fn replica_log_end_offset(&self, broker: BrokerId) -> Result<i64> {
        Ok(self.replica(broker)?.leo())
    }

    /// The leader's log, for consumer fetches (bounded by the HW or LSO),
    /// `read_batches`, `first_unstable_offset` and `aborted_transactions`.
    pub fn leader_log(&self) -> &PartitionLog {
        &self.leader().log
    }

    /// Any replica's log (read-only).
    pub fn replica_log(&self, broker: BrokerId) -> Result<&PartitionLog> {
        Ok(&self.replica(broker)?.log)
    }

    pub fn replica_role(&self, broker: BrokerId) -> Result<ReplicaRole> {
        Ok(self.replica(broker)?.role)
    }

    /// When `broker` last fetched (or the set was opened).
    pub fn last_fetch_ms(&self, broker: BrokerId) -> Result<i64> {
        Ok(self.replica(broker)?.last_fetch_ms)
    }

    /// `broker`'s leader-epoch cache, oldest entry first.
    pub fn epoch_entries(&self, broker: BrokerId) -> Result<Vec<EpochEntry>> {
        Ok(self.replica(broker)?.epochs.entries().to_vec())
    }

    /// The leader's answer to OffsetsForLeaderEpoch (KIP-279): for the
    /// current epoch the LEO; otherwise the largest epoch <= `epoch` and the
    /// start offset of the first epoch after `epoch`; `None` (UNDEFINED)
    /// for an epoch newer than the leader's.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> Option<EpochEndOffset> {
        let leader = self.leader();
        leader.epochs.end_offset_for(epoch, leader.leo())
    }

    /// The leader's idempotence state for `producer_id`.
    pub fn producer_entry(&self, producer_id: i64) -> Option<ProducerEntry> {
        self.leader().producers.get(producer_id).cloned()
    }

    /// The producers the leader's state holds (Kafka's DescribeProducers,
    /// from the partition leader's producer state), by producer id: each
    /// one's epoch, the last sequence of its newest retained batch (-1 when
    /// none is retained, e.g. only markers), the max timestamp of its
    /// newest data batch and the first offset of its open transaction
    /// on this partition.
    pub fn active_producers(&self) -> Vec<ActiveProducer> {
        let leader = self.leader();
        let open: BTreeMap<i64, i64> = leader.log.open_transactions().into_iter().collect();
        leader
            .producers
            .entries()
            .map(|(&producer_id, e)| ActiveProducer {
                producer_id,
                epoch: e.epoch,
                last_sequence: e.batches.back().map_or(-1, |b| b.last_sequence),
                last_timestamp: e.last_timestamp,
                current_txn_start_offset: open.get(&producer_id).copied(),
            })
            .collect()
    }

    /// Every producer id this partition knows — from the state of any
    /// replica's log or a registration — with the highest epoch known for
    /// it. An identity store must never hand these out again.
    pub fn producer_epochs(&self) -> BTreeMap<i64, i32> {
        let mut out = BTreeMap::new();
        let seen = self
            .replicas
            .values()
            .flat_map(|r| r.producers.epochs())
            .chain(self.registrations.iter().map(|(id, e)| (*id, *e)));
        for (id, epoch) in seen {
            let e = out.entry(id).or_insert(epoch);
            *e = (*e).max(epoch);
        }
        out
    }

    /// The base sequence the leader expects from the next new batch of
    /// `(producer_id, epoch)`: 0 for an unknown producer or a newer epoch,
    /// else the one after its last batch. mk-cluster uses it when it acts as
    /// the client of a transactional producer (the teaching model's sends),
    /// under the same partition lock as the append.
    pub fn next_sequence(&self, producer_id: i64, epoch: i32) -> i32 {
        self.leader()
            .producers
            .expected_sequence(producer_id, epoch)
    }

    /// The epoch registered for `producer_id` with `register_producer`.
    pub fn registered_epoch(&self, producer_id: i64) -> Option<i32> {
        self.registrations.get(&producer_id).copied()
    }

    /// How many `acks=all` appends wait for the HW.
    pub fn pending_acks(&self) -> usize {
        self.waiters.len()
    }

    // ----- producing ----------------------------------------------------

    /// Appends a producer batch on the leader, in the order of spec 02:
    /// 1. an `expected_leader_epoch` other than the current one is
    ///    FENCED_LEADER_EPOCH;
    /// 2. the idempotence check: a duplicate answers with the original
    ///    offsets and writes nothing; PRODUCER_FENCED and
    ///    OUT_OF_ORDER_SEQUENCE write nothing;
    /// 3. `acks=all` with |ISR| < min_insync_replicas is
    ///    NOT_ENOUGH_REPLICAS and writes nothing;
    /// 4. append (offsets and epoch assigned), record producer state,
    ///    advance the HW;
    /// 5. `acks=0`: offsets unknown; `acks=1`: offsets now; `acks=all`: a
    ///    handle resolved once HW >= the batch's next offset while the ISR
    ///    is large enough.
    pub fn append(
        &mut self,
        batch: RecordBatch,
        acks: AckMode,
        expected_leader_epoch: Option<i32>,
    ) -> Result<AppendOutcome> {
        if let Admission::Duplicate(result) = self.admit(&batch, acks, expected_leader_epoch)? {
            return Ok(self.complete(result, acks));
        }
        let leader_id = self.leader_id;
        let info = self
            .replicas
            .get_mut(&leader_id)
            .expect("the leader is a replica")
            .append_as_leader(batch)?;
        self.advance_high_watermark();
        self.check_invariants();
        Ok(self.complete(ProduceResult::written(&info), acks))
    }

    /// Appends producer batches exactly as consecutive `append` calls with
    /// the same `acks` and `expected_leader_epoch` would — one answer each,
    /// in order, a refused batch refused alone — but consecutive plain
    /// batches (no producer id: nothing of one's check depends on the one
    /// before) go to the log as one group write (`PartitionLog::append_group`).
    pub fn append_group(
        &mut self,
        batches: Vec<RecordBatch>,
        acks: AckMode,
        expected_leader_epoch: Option<i32>,
    ) -> Vec<Result<AppendOutcome>> {
        let mut answers: Vec<Option<Result<AppendOutcome>>> = Vec::with_capacity(batches.len());
        let mut group: Vec<(usize, RecordBatch)> = Vec::new();
        for batch in batches {
            let plain = batch.producer().producer_id < 0
                && batch.transactional_id().is_none()
                && !batch.is_control();
            if !plain {
                self.write_group(std::mem::take(&mut group), acks, &mut answers);
                answers.push(Some(self.append(batch, acks, expected_leader_epoch)));
                continue;
            }
            match self.admit(&batch, acks, expected_leader_epoch) {
                Ok(Admission::Write) => {
                    group.push((answers.len(), batch));
                    answers.push(None);
                }
                Ok(Admission::Duplicate(_)) => {
                    unreachable!("a batch without a producer id is never a duplicate")
                }
                Err(e) => answers.push(Some(Err(e))),
            }
        }
        self.write_group(group, acks, &mut answers);
        answers
            .into_iter()
            .map(|a| a.expect("every batch of a group is answered"))
            .collect()
    }

    fn write_group(
        &mut self,
        group: Vec<(usize, RecordBatch)>,
        acks: AckMode,
        answers: &mut [Option<Result<AppendOutcome>>],
    ) {
        if group.is_empty() {
            return;
        }
        let (places, batches): (Vec<usize>, Vec<RecordBatch>) = group.into_iter().unzip();
        let leader_id = self.leader_id;
        let written = self
            .replicas
            .get_mut(&leader_id)
            .expect("the leader is a replica")
            .append_group_as_leader(batches);
        self.advance_high_watermark();
        self.check_invariants();
        for (i, w) in places.into_iter().zip(written) {
            answers[i] = Some(
                w.map_err(ReplicationError::from)
                    .map(|info| self.complete(ProduceResult::written(&info), acks)),
            );
        }
    }

    /// The checks of spec 02 before a producer batch is written, in order
    /// (steps 1-3 of `append`): whether it is a duplicate to answer with
    /// its original offsets, or may be written.
    fn admit(
        &self,
        batch: &RecordBatch,
        acks: AckMode,
        expected_leader_epoch: Option<i32>,
    ) -> Result<Admission> {
        if let Some(expected) = expected_leader_epoch
            && expected != self.leader_epoch
        {
            return Err(ReplicationError::FencedLeaderEpoch(format!(
                "the request expected leader epoch {expected}, but {} is in epoch {} (leader broker {})",
                self.tp, self.leader_epoch, self.leader_id
            )));
        }
        batch.validate()?;
        if let Some(base) = batch.base_offset() {
            return Err(mk_log::LogError::InvalidRecord(format!(
                "a producer batch must not carry offsets; this one starts at {base}"
            ))
            .into());
        }
        let producer = batch.producer();
        let check = self.leader().producers.check(
            producer,
            batch.last_sequence(),
            batch.is_control(),
            self.registrations.get(&producer.producer_id).copied(),
        )?;
        if let SequenceCheck::Duplicate(original) = check {
            return Ok(Admission::Duplicate(ProduceResult {
                base_offset: Some(original.base_offset),
                next_offset: Some(original.next_offset),
                leader_epoch: self.leader_epoch,
                duplicate: true,
            }));
        }
        if acks == AckMode::All && self.isr.len() < self.config.min_insync_replicas {
            return Err(ReplicationError::NotEnoughReplicas {
                isr_size: self.isr.len(),
                min_insync_replicas: self.config.min_insync_replicas,
            });
        }
        Ok(Admission::Write)
    }

    fn complete(&mut self, result: ProduceResult, acks: AckMode) -> AppendOutcome {
        match acks {
            AckMode::Zero => AppendOutcome::Done(result.without_offsets()),
            AckMode::One => AppendOutcome::Done(result),
            AckMode::All => {
                let (waiter, handle): (Waiter, AckHandle) = Waiter::new(result);
                self.waiters.push(waiter);
                self.settle_waiters();
                AppendOutcome::Pending(handle)
            }
        }
    }

    /// Registers `(producer_id, epoch)` on this partition: any later batch
    /// with an older epoch is PRODUCER_FENCED, and the new epoch starts at
    /// sequence 0. Registering an epoch older than the known one is itself
    /// PRODUCER_FENCED. Registrations are kept in memory and in the producer
    /// snapshots written by `checkpoint`/`close`; after a crash the cluster
    /// re-registers from its `ProducerIdentityStore`.
    pub fn register_producer(&mut self, producer_id: i64, epoch: i32) -> Result<()> {
        if producer_id < 0 || epoch < 0 {
            return Err(ReplicationError::InvalidRequest(format!(
                "a producer registration needs producer_id >= 0 and epoch >= 0, got ({producer_id}, {epoch})"
            )));
        }
        let current = self
            .leader()
            .producers
            .get(producer_id)
            .map(|e| e.epoch)
            .max(self.registered_epoch(producer_id));
        if let Some(current) = current
            && epoch < current
        {
            return Err(ReplicationError::ProducerFenced {
                producer_id,
                epoch,
                current_epoch: current,
            });
        }
        self.registrations.insert(producer_id, epoch);
        Ok(())
    }

    // ----- replication --------------------------------------------------

    /// One replication step: every online follower, in broker-id order,
    /// reconciles if it has not done so in the current epoch and then
    /// copies whole batches from its LEO (at most `replica_fetch_max_bytes`,
    /// at least one batch); then the ISR and the HW are recomputed.
    /// A broker does the same in three steps, the middle one without the
    /// partition lock (see `copy.rs`).
    pub fn replicate_all_once(&mut self) -> Result<Vec<FollowerFetch>> {
        let copies = self.locate_follower_copies()?;
        let checked = copies
            .into_iter()
            .map(FollowerCopy::check)
            .collect::<Result<Vec<_>>>()?;
        self.apply_follower_copies(checked)
    }

    /// The name spec 02 also uses for [`Self::replicate_all_once`].
    pub fn fetch_followers_once(&mut self) -> Result<Vec<FollowerFetch>> {
        self.replicate_all_once()
    }

    /// One fetch of a single follower, then the ISR refresh (lets tests and
    /// labs starve another follower to show the time-based ISR rule).
    pub fn replicate_follower_once(&mut self, broker: BrokerId) -> Result<FollowerFetch> {
        match self.replica(broker)?.role {
            ReplicaRole::Follower => {}
            ReplicaRole::Leader => {
                return Err(ReplicationError::InvalidRequest(format!(
                    "broker {broker} leads {}; only a follower fetches",
                    self.tp
                )));
            }
            ReplicaRole::Offline => {
                return Err(ReplicationError::InvalidRequest(format!(
                    "broker {broker}'s replica of {} is offline; rejoin it before it fetches",
                    self.tp
                )));
            }
        }
        let copy = self.locate_copy(broker)?.check()?;
        let mut fetches = self.apply_follower_copies(vec![copy])?;
        Ok(fetches.pop().expect("one copy, one fetch"))
    }

    /// Recomputes the ISR: a follower is in sync iff it is online, has
    /// reconciled in the current epoch, lags the leader's LEO by at most
    /// `replica_lag_max_offsets`, fetched within `replica_lag_time_ms`, and
    /// has reached the HW. Then HW = max(HW, min LEO over the ISR) and the
    /// `acks=all` waiters are settled.
    pub fn refresh_isr(&mut self) {
        let now = self.clock.now_ms();
        let leader_leo = self.leader().leo();
        let hw = self.high_watermark;
        let epoch = self.leader_epoch;
        let lag_offsets = self.config.replica_lag_max_offsets;
        let lag_ms = self.config.replica_lag_time_ms;
        for (&broker, r) in &self.replicas {
            if broker == self.leader_id {
                continue;
            }
            let in_sync = r.role == ReplicaRole::Follower
                && r.reconciled_epoch == Some(epoch)
                && leader_leo - r.leo() <= lag_offsets
                && now.saturating_sub(r.last_fetch_ms) <= lag_ms
                && r.leo() >= hw;
            if in_sync {
                self.isr.insert(broker);
            } else {
                self.isr.remove(&broker);
            }
        }
        self.advance_high_watermark();
        self.check_invariants();
    }

    /// The base offset of the leader's batch that holds `offset` (`offset`
    /// itself at the LEO).
    fn leader_batch_start(&self, offset: i64) -> Result<i64> {
        let batches = self.leader().log.read_batches(offset, 1, None)?;
        Ok(batches
            .first()
            .map_or(offset, |b| b.base_offset().min(offset)))
    }

    /// KIP-101/279 reconciliation of one follower with the leader. Each
    /// round asks the leader for the end of the follower's latest epoch and
    /// truncates the follower to the smaller of the leader's and its own end
    /// of the epoch the leader answered with; it finishes once the follower's
    /// latest epoch is one the leader knows with a matching end. Every
    /// unfinished round drops at least one epoch from the follower's cache,
    /// so the loop ends.
    fn reconcile(&mut self, broker: BrokerId, report: &mut FollowerFetch) -> Result<()> {
        loop {
            let follower = self.replica(broker)?;
            let f_leo = follower.leo();
            let Some(latest) = follower.epochs.latest() else {
                // No epoch is known for any batch here; only an empty log can
                // be trusted to be a prefix of the leader's.
                let start = follower.log.log_start_offset();
                if f_leo > start {
                    self.truncate_follower(broker, start, report)?;
                }
                return Ok(());
            };
            match self.end_offset_for_epoch(latest.epoch) {
                None => {
                    // The leader never had this epoch (it is newer than the
                    // leader's latest), so none of its data can be on the
                    // leader: drop it.
                    self.truncate_follower(broker, latest.start_offset.min(f_leo), report)?;
                    self.replica_mut(broker)
                        .epochs
                        .retain_epochs_up_to(latest.epoch - 1)?;
                }
                Some(leader_end) => {
                    let own = follower
                        .epochs
                        .end_offset_for(leader_end.epoch, f_leo)
                        .expect("the follower's cache is not empty and the epoch is <= its latest");
                    if own.epoch == leader_end.epoch {
                        let target = leader_end.end_offset.min(own.end_offset);
                        self.truncate_follower(broker, target, report)?;
                        self.replica_mut(broker)
                            .epochs
                            .retain_epochs_up_to(leader_end.epoch)?;
                        return Ok(());
                    }
                    // The follower does not know the leader's epoch: cut back to
                    // the end of its own largest epoch below it and ask again.
                    self.truncate_follower(broker, own.end_offset.min(f_leo), report)?;
                    self.replica_mut(broker)
                        .epochs
                        .retain_epochs_up_to(own.epoch)?;
                }
            }
        }
    }

    fn truncate_follower(
        &mut self,
        broker: BrokerId,
        target: i64,
        report: &mut FollowerFetch,
    ) -> Result<()> {
        let leader_start = self.leader().log.log_start_offset();
        let follower = self.replica(broker)?;
        if target >= follower.leo() {
            return Ok(());
        }
        if target < follower.log.log_start_offset() {
            let from = self.leader_batch_start(leader_start)?;
            return self.reset_follower(broker, from, report);
        }
        let end = self.replica_mut(broker).truncate_to(target)?;
        report.truncated_to = Some(end);
        Ok(())
    }

    fn reset_follower(
        &mut self,
        broker: BrokerId,
        start_offset: i64,
        report: &mut FollowerFetch,
    ) -> Result<()> {
        let log_config = self.config.log.clone();
        self.replica_mut(broker)
            .reset_to(start_offset, &log_config)?;
        report.reset_to = Some(start_offset);
        Ok(())
    }

    // ----- failure injection, promotion, rejoin ---------------------------

    /// Failure injection: `broker`'s replica fails. It leaves the ISR, stops
    /// fetching until `rejoin`, the HW is recomputed over the smaller ISR
    /// and `acks=all` waiters are settled (they fail if the ISR is now
    /// below the minimum). The leader cannot be removed.
    pub fn remove_from_isr(&mut self, broker: BrokerId) -> Result<()> {
        self.check_not_leader(broker, "the leader cannot be removed from the ISR")?;
        self.isr.remove(&broker);
        self.replica_mut(broker).role = ReplicaRole::Offline;
        self.advance_high_watermark();
        self.check_invariants();
        Ok(())
    }

    /// Makes the in-sync replica `broker` the leader in epoch + 1. The new
    /// leader keeps its whole log (it is never truncated) and starts the
    /// new epoch at its LEO in its epoch cache. ISR = {new leader}; the
    /// former leader goes offline until `rejoin`; other followers must
    /// reconcile and catch up to re-enter. Pending `acks=all` waiters fail
    /// with FENCED_LEADER_EPOCH. HW = max(HW, new leader's LEO), the
    /// minimum LEO of the new ISR. Returns what the cluster must persist.
    pub fn promote(&mut self, broker: BrokerId) -> Result<LeaderAndEpoch> {
        self.replica(broker)?;
        if !self.isr.contains(&broker) {
            return Err(ReplicationError::NotInSyncReplica {
                broker,
                isr: self.isr(),
            });
        }
        self.take_leadership(broker)
    }

    /// Unclean election (Kafka's `unclean.leader.election.enable`, and
    /// ElectLeaders UNCLEAN): makes `broker` the leader in epoch + 1 even
    /// though it is not in the ISR. The trade-off is data loss: the new
    /// leader keeps its log as it is, so records above its LEO — committed
    /// or not — are gone; the HW falls back to that LEO when it was above
    /// it, and every other replica truncates to the new leader's log when
    /// it reconciles (its epoch cache names the divergence). Otherwise as
    /// `promote`. The caller decides that an unclean election is allowed;
    /// an in-sync `broker` is promoted cleanly.
    pub fn promote_unclean(&mut self, broker: BrokerId) -> Result<LeaderAndEpoch> {
        self.replica(broker)?;
        if broker == self.leader_id {
            return Err(ReplicationError::InvalidRequest(format!(
                "broker {broker} already leads {}",
                self.tp
            )));
        }
        self.take_leadership(broker)
    }

    /// `broker` leads in epoch + 1 (both promotions).
    fn take_leadership(&mut self, broker: BrokerId) -> Result<LeaderAndEpoch> {
        let new_epoch = self.leader_epoch.checked_add(1).ok_or_else(|| {
            ReplicationError::InvalidRequest(format!(
                "leader epoch {} of {} cannot grow",
                self.leader_epoch, self.tp
            ))
        })?;
        // The only fallible step comes first, so a failure changes nothing.
        let new_leader = self.replica_mut(broker);
        let leo = new_leader.leo();
        new_leader.epochs.assign(new_epoch, leo)?;
        let old_leader = self.leader_id;
        let now = self.clock.now_ms();
        for (&b, r) in self.replicas.iter_mut() {
            r.log.set_leader_epoch(new_epoch)?;
            if b == broker {
                r.role = ReplicaRole::Leader;
                r.reconciled_epoch = Some(new_epoch);
                r.last_fetch_ms = now;
            } else {
                r.reconciled_epoch = None;
                if b == old_leader {
                    r.role = ReplicaRole::Offline;
                }
            }
        }
        self.leader_id = broker;
        self.leader_epoch = new_epoch;
        self.isr = BTreeSet::from([broker]);
        for w in self.waiters.drain(..) {
            let next = w.next_offset();
            w.fail(ReplicationError::FencedLeaderEpoch(format!(
                "leadership of {} moved to broker {broker} in epoch {new_epoch} before offset {} was committed (HW {})",
                self.tp,
                next - 1,
                self.high_watermark
            )));
        }
        if leo < self.high_watermark {
            // Only an unclean election gets here: an ISR member holds
            // every record below the HW.
            tracing::warn!(
                tp = %self.tp,
                broker,
                lost_from = leo,
                high_watermark = self.high_watermark,
                "unclean election: records from the new leader's LEO up to the HW are lost"
            );
            self.high_watermark = leo;
        }
        self.advance_high_watermark();
        self.check_invariants();
        Ok(self.leader_and_epoch())
    }

    /// A former leader or a failed/lagging replica becomes a follower of the
    /// current epoch, out of the ISR; its next fetch reconciles it.
    pub fn rejoin(&mut self, broker: BrokerId) -> Result<()> {
        self.check_not_leader(broker, "only a follower can rejoin")?;
        let r = self.replica_mut(broker);
        r.role = ReplicaRole::Follower;
        r.reconciled_epoch = None;
        if self.isr.remove(&broker) {
            self.advance_high_watermark();
        }
        self.check_invariants();
        Ok(())
    }

    // ----- log maintenance ------------------------------------------------

    /// Applies retention the Kafka way: the leader deletes the oldest closed
    /// segments that are past `retention_ms` or must go to respect
    /// `retention_bytes`, but never a segment that reaches the HW (log start
    /// offset <= HW); followers then drop their closed segments that end at
    /// or below the leader's new log start. When anything was deleted the
    /// set checkpoints (producer snapshots at the LEO), because replaying
    /// from an older snapshot would now skip the deleted batches. Returns the
    /// leader's deleted segment base offsets.
    pub fn apply_retention(&mut self, now_ms: i64, policy: RetentionPolicy) -> Result<Vec<i64>> {
        let hw = self.high_watermark;
        let leader_id = self.leader_id;
        let leader = self.replica_mut(leader_id);
        let bases = leader.log.retention_candidates(now_ms, policy, Some(hw))?;
        leader.log.delete_closed_segments(&bases)?;
        let new_start = leader.log.log_start_offset();
        let mut deleted_any = !bases.is_empty();
        for (&b, r) in self.replicas.iter_mut() {
            if b == leader_id {
                continue;
            }
            let follower_bases: Vec<i64> = r
                .log
                .closed_segments()
                .iter()
                .take_while(|s| s.next_offset <= new_start)
                .map(|s| s.base_offset)
                .collect();
            deleted_any |= !follower_bases.is_empty();
            r.log.delete_closed_segments(&follower_bases)?;
        }
        if deleted_any {
            // A producer snapshot below the new log start could no longer
            // be completed by replaying the log after it (the batches in
            // between are gone), so take fresh ones at the LEO now.
            self.checkpoint()?;
        }
        self.check_invariants();
        Ok(bases)
    }

    /// Compacts every replica whose closed segments all lie below the HW
    /// (Kafka never cleans above the HW); replicas with uncommitted data in
    /// a closed segment are skipped this time. Compaction is per replica, so
    /// compacted replicas agree on records, not necessarily on bytes.
    pub fn compact(
        &mut self,
        now_ms: i64,
        delete_retention_ms: i64,
    ) -> Result<Vec<(BrokerId, CompactionResult)>> {
        self.compact_replicas(|log| log.compact(now_ms, delete_retention_ms).map(Some))
    }

    /// [`Self::compact`] for the replicas the cleaner finds due
    /// ([`PartitionLog::compact_if_due`](mk_log::PartitionLog::compact_if_due)):
    /// each replica judges its own dirty ratio and compaction lag.
    pub fn compact_if_due(
        &mut self,
        now_ms: i64,
        delete_retention_ms: i64,
    ) -> Result<Vec<(BrokerId, CompactionResult)>> {
        self.compact_replicas(|log| log.compact_if_due(now_ms, delete_retention_ms))
    }

    fn compact_replicas(
        &mut self,
        mut compact: impl FnMut(&mut PartitionLog) -> mk_log::Result<Option<CompactionResult>>,
    ) -> Result<Vec<(BrokerId, CompactionResult)>> {
        let hw = self.high_watermark;
        let mut out = Vec::new();
        for (&b, r) in self.replicas.iter_mut() {
            if r.log.active().base_offset <= hw
                && let Some(result) = compact(&mut r.log)?
            {
                out.push((b, result));
            }
        }
        Ok(out)
    }

    /// Rolls every replica's active segment (if it has data).
    pub fn roll(&mut self) -> Result<()> {
        for r in self.replicas.values_mut() {
            r.log.roll()?;
        }
        Ok(())
    }

    // ----- durability -----------------------------------------------------

    /// Fsyncs every replica log.
    pub fn flush(&mut self) -> Result<()> {
        for r in self.replicas.values_mut() {
            r.log.flush()?;
        }
        Ok(())
    }

    /// The flush-cycle step: fsync every replica log, then write each
    /// replica's producer snapshot (at its LEO) and HW checkpoint (the HW,
    /// capped at the replica's LEO), skipping files that would not change.
    /// Logs go first so that no checkpoint points beyond durable data.
    pub fn checkpoint(&mut self) -> Result<()> {
        // The flush cycle's three steps (flush.rs) back to back, then the
        // directory fsync that makes the renames durable at once.
        let synced = self.plan_checkpoint()?.sync();
        self.finish_checkpoint(synced)?;
        self.flush()
    }

    /// Closes the set: pending `acks=all` waiters fail with CLUSTER_CLOSED,
    /// everything is checkpointed and every log is closed cleanly.
    pub fn close(mut self) -> Result<()> {
        for w in self.waiters.drain(..) {
            let next = w.next_offset();
            w.fail(ReplicationError::Closed(format!(
                "{} closed before offset {} was committed",
                self.tp,
                next - 1
            )));
        }
        self.checkpoint()?;
        for (_, r) in std::mem::take(&mut self.replicas) {
            r.log.close()?;
        }
        Ok(())
    }

    /// Simulates a process kill: everything is dropped without a flush or a
    /// checkpoint (written data stays with the OS, like a killed process).
    /// Pending handles report CLUSTER_CLOSED.
    pub fn crash(self) {
        drop(self);
    }

    // ----- internals ------------------------------------------------------

    fn leader(&self) -> &Replica {
        &self.replicas[&self.leader_id]
    }

    /// `broker` holds a replica and is not the leader (`refusal` says why a
    /// leader may not be the target).
    fn check_not_leader(&self, broker: BrokerId, refusal: &str) -> Result<()> {
        self.replica(broker)?;
        if broker == self.leader_id {
            return Err(ReplicationError::InvalidRequest(format!(
                "broker {broker} leads {}; {refusal}",
                self.tp
            )));
        }
        Ok(())
    }

    fn replica(&self, broker: BrokerId) -> Result<&Replica> {
        self.replicas
            .get(&broker)
            .ok_or_else(|| ReplicationError::UnknownReplica {
                broker,
                partition: self.tp.to_string(),
                replicas: self.placement.clone(),
            })
    }

    fn replica_mut(&mut self, broker: BrokerId) -> &mut Replica {
        self.replicas
            .get_mut(&broker)
            .expect("callers check that the broker holds a replica")
    }

    /// HW = max(HW, min LEO over the ISR), then settles the waiters. The
    /// HW never decreases while the set runs.
    fn advance_high_watermark(&mut self) {
        let min_isr_leo = self
            .isr
            .iter()
            .map(|b| self.replicas[b].leo())
            .min()
            .expect("the ISR always holds the leader");
        let next = self.high_watermark.max(min_isr_leo);
        assert!(
            next >= self.high_watermark && next <= self.leader().leo(),
            "{}: HW must stay monotonic and at most the leader's LEO: {} -> {next}, leader LEO {}",
            self.tp,
            self.high_watermark,
            self.leader().leo()
        );
        self.high_watermark = next;
        self.settle_waiters();
    }

    /// Resolves every waiter whose batch is below the HW, or fails them all
    /// if the ISR is below the minimum (no progress is possible then).
    fn settle_waiters(&mut self) {
        if self.waiters.is_empty() {
            return;
        }
        let isr_size = self.isr.len();
        let min = self.config.min_insync_replicas;
        if isr_size < min {
            for w in self.waiters.drain(..) {
                let next_offset = w.next_offset();
                w.fail(ReplicationError::NotEnoughReplicasAfterAppend {
                    next_offset,
                    isr_size,
                    min_insync_replicas: min,
                });
            }
            return;
        }
        let hw = self.high_watermark;
        let (done, pending): (Vec<Waiter>, Vec<Waiter>) = std::mem::take(&mut self.waiters)
            .into_iter()
            .partition(|w| w.next_offset() <= hw);
        self.waiters = pending;
        for w in done {
            w.succeed();
        }
    }

    /// The structural invariants of the set, checked after every state
    /// transition in release builds too: they cost a few comparisons per
    /// replica, and a set that breaks one must stop before it acknowledges
    /// or serves anything more.
    fn check_invariants(&self) {
        let leader = self.leader();
        assert!(
            self.isr.contains(&self.leader_id),
            "the ISR holds the leader"
        );
        assert_eq!(leader.role, ReplicaRole::Leader);
        assert!(self.high_watermark <= leader.leo());
        assert!(
            leader.log.log_start_offset() <= self.high_watermark,
            "retention never deletes above the HW"
        );
        for (b, r) in &self.replicas {
            if *b != self.leader_id {
                assert_ne!(r.role, ReplicaRole::Leader, "one leader only");
            }
            if self.isr.contains(b) {
                assert_eq!(r.reconciled_epoch, Some(self.leader_epoch), "broker {b}");
                assert!(r.leo() >= self.high_watermark, "ISR member {b} below HW");
            }
            if r.role == ReplicaRole::Offline {
                assert!(!self.isr.contains(b), "offline broker {b} in the ISR");
            }
        }
    }
}

/// One producer of a partition as DescribeProducers shows it
/// ([`PartitionReplicaSet::active_producers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveProducer {
    pub producer_id: i64,
    pub epoch: i32,
    pub last_sequence: i32,
    /// Kafka's `lastTimestamp`: what tools such as `kafka-transactions
    /// find-hanging` age an open transaction by; -1 when unknown.
    pub last_timestamp: i64,
    pub current_txn_start_offset: Option<i64>,
}

/// The epoch the leader runs in after open: the assigned one, unless some
/// replica's cache already names a newer epoch (a crash between `promote`
/// and the cluster persisting its result); then a fresh epoch above every
/// epoch seen, so no epoch ever has two writers.
fn fresh_leader_epoch(
    tp: &TopicPartition,
    assignment: &PartitionAssignment,
    replicas: &BTreeMap<BrokerId, Replica>,
) -> Result<i32> {
    let max_seen = replicas
        .values()
        .filter_map(|r| r.epochs.latest().map(|e| e.epoch))
        .max();
    let after_crash = replicas.values().any(|r| r.log.opened_after_crash());
    let newer_seen = max_seen.filter(|s| *s > assignment.leader_epoch);
    if newer_seen.is_none() && !after_crash {
        return Ok(assignment.leader_epoch);
    }
    // After a crash or power loss each replica may have lost a different
    // unflushed tail of the same epoch; appending in that epoch again
    // would let a follower's divergent tail look like the leader's data.
    // A new epoch makes reconciliation find and cut it (KIP-101).
    let base = newer_seen.unwrap_or(assignment.leader_epoch);
    let fresh = base.checked_add(1).ok_or_else(|| {
        ReplicationError::InvalidRequest(format!("{tp}: leader epoch {base} cannot grow"))
    })?;
    if after_crash {
        tracing::info!(
            partition = %tp,
            old_epoch = base,
            new_epoch = fresh,
            "opened after an unclean shutdown; the leader takes a new epoch"
        );
    } else {
        tracing::warn!(
            partition = %tp,
            metadata_epoch = assignment.leader_epoch,
            seen_epoch = base,
            new_epoch = fresh,
            "a replica knows a newer leader epoch than the metadata; the leader takes a fresh epoch"
        );
    }
    Ok(fresh)
}

/// The ISR after open: the leader plus every follower whose LEO and epoch
/// cache equal the leader's (equal caches are what make equal LEOs mean
/// equal data). Those followers count as reconciled in `leader_epoch`.
fn restored_isr(
    leader_id: BrokerId,
    leader_epoch: i32,
    replicas: &mut BTreeMap<BrokerId, Replica>,
) -> BTreeSet<BrokerId> {
    let leader = &replicas[&leader_id];
    let leader_leo = leader.leo();
    // The leader's entry for the epoch it starts now covers no data yet.
    let leader_entries: Vec<EpochEntry> = leader
        .epochs
        .entries()
        .iter()
        .copied()
        .filter(|e| e.start_offset < leader_leo)
        .collect();
    let mut isr = BTreeSet::from([leader_id]);
    for (&broker, r) in replicas.iter_mut() {
        if broker != leader_id
            && r.leo() == leader_leo
            && r.epochs.entries() == leader_entries.as_slice()
        {
            r.reconciled_epoch = Some(leader_epoch);
            isr.insert(broker);
        }
    }
    isr
}

/// HW after open: the newest checkpointed HW clipped to the leader's LEO,
/// never lower than the minimum LEO of the restored ISR.
fn restored_high_watermark(
    tp: &TopicPartition,
    leader_id: BrokerId,
    isr: &BTreeSet<BrokerId>,
    replicas: &BTreeMap<BrokerId, Replica>,
) -> i64 {
    let leader_leo = replicas[&leader_id].leo();
    let checkpointed = replicas
        .values()
        .filter_map(|r| r.checkpointed_hw)
        .max()
        .unwrap_or(0);
    if checkpointed > leader_leo {
        tracing::warn!(
            partition = %tp,
            checkpointed,
            leader_leo,
            "the leader's log ends below the checkpointed high watermark; it lost committed data"
        );
    }
    let isr_floor = isr
        .iter()
        .map(|b| replicas[b].leo())
        .min()
        .expect("the ISR holds the leader");
    checkpointed.min(leader_leo).max(isr_floor)
}

fn check_assignment(tp: &TopicPartition, a: &PartitionAssignment) -> Result<()> {
    let bad = |reason: String| Err(ReplicationError::InvalidRequest(format!("{tp}: {reason}")));
    if a.replicas.is_empty() {
        return bad("a partition needs at least one replica".into());
    }
    let unique: BTreeSet<BrokerId> = a.replicas.iter().copied().collect();
    if unique.len() != a.replicas.len() {
        return bad(format!("replica list {:?} has duplicates", a.replicas));
    }
    if let Some(neg) = a.replicas.iter().find(|b| **b < 0) {
        return bad(format!("broker ids must be >= 0, got {neg}"));
    }
    if !unique.contains(&a.leader_id) {
        return bad(format!(
            "leader {} is not one of the replicas {:?}",
            a.leader_id, a.replicas
        ));
    }
    if a.leader_epoch < 0 {
        return bad(format!("leader epoch must be >= 0, got {}", a.leader_epoch));
    }
    Ok(())
}

fn merge_registrations(into: &mut Registrations, from: &Registrations) {
    for (&pid, &epoch) in from {
        let e = into.entry(pid).or_insert(epoch);
        *e = (*e).max(epoch);
    }
}
/// What the checks before a producer write decided (`admit`).
enum Admission {
    /// An idempotent retry of a batch in the log: answer with its offsets.
    Duplicate(ProduceResult),
    Write,
}
