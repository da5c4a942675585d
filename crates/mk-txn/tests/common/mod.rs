//! A miniature single-replica "cluster" for the tests: real mk-log partition
//! logs in a temporary directory, a committed-offsets map, a producer-id
//! counter, and a coordinator whose plans it executes the way mk-cluster
//! does. It also plays the Kafka client: it keeps each producer's sequence
//! numbers and asks `verify_append` before every transactional append.

#![allow(dead_code)]

use bytes::Bytes;
use mk_core::{ManualClock, SharedClock, TopicPartition};
use mk_log::{LogConfig, PartitionLog, ProducerInfo, Record, RecordBatch};
use mk_txn::{
    CompletionPlan, EndTxn, InitProducer, Outcome, Recovered, TransactionCoordinator, TxnConfig,
    TxnError, TxnState, TxnVersion, fetch_committed, read_uncommitted,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The timeout every harness producer asks for unless a test says otherwise.
pub const TIMEOUT_MS: i64 = 60_000;

/// A fresh harness, partition `out-0` and a first session of `tx`: where
/// most scenarios start.
pub fn tx_on_out0() -> (Harness, TopicPartition, Session) {
    session_on_out0("tx")
}

/// `tx_on_out0` for the transactional id `id`.
pub fn session_on_out0(id: &str) -> (Harness, TopicPartition, Session) {
    let mut h = Harness::new();
    let s = h.init(id);
    (h, tp("out", 0), s)
}

/// A fresh harness whose first session of `tx` wrote `a1` to `out-0` and
/// `b1` to `out-1`, still open: where the two-partition scenarios start.
pub fn tx_on_out0_and_out1() -> (Harness, TopicPartition, TopicPartition, Session) {
    let mut h = Harness::new();
    let (a, b) = (tp("out", 0), tp("out", 1));
    let s = h.init("tx");
    h.send(&s, &a, "a1");
    h.send(&s, &b, "b1");
    (h, a, b, s)
}

/// `tx_on_out0` where the session sent `value` to `out-0`, staged `offset`
/// of `in-0` for group `g` and asked to end with `outcome`: the decision
/// is journaled and its plan lost.
pub fn decided_on_out0(
    value: &str,
    offset: i64,
    outcome: Outcome,
) -> (Harness, TopicPartition, Session) {
    let (mut h, out, s) = tx_on_out0();
    h.send(&s, &out, value);
    h.stage(&s, "g", &[(tp("in", 0), offset)]);
    drop(h.end_plan(&s, outcome));
    (h, out, s)
}

/// The code of the error `r` must be.
pub fn code<T: std::fmt::Debug>(r: Result<T, TxnError>) -> mk_core::ErrorCode {
    r.unwrap_err().code()
}

/// Asserts that `r` failed with `expected` and a message naming `mention`.
#[track_caller]
pub fn assert_refused<T: std::fmt::Debug>(
    r: Result<T, TxnError>,
    expected: mk_core::ErrorCode,
    mention: &str,
) {
    let err = r.unwrap_err();
    assert_eq!(err.code(), expected, "{err}");
    assert!(
        err.to_string().contains(mention),
        "{mention:?} not in {err}"
    );
}

pub fn tp(topic: &str, partition: u32) -> TopicPartition {
    TopicPartition::new(topic, partition)
}

pub fn record(value: &str) -> Record {
    Record::new(None, Some(Bytes::copy_from_slice(value.as_bytes())), 1_000)
}

/// One session of a transactional producer: what InitProducerId gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub id: String,
    pub pid: i64,
    pub epoch: i32,
}

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub clock: ManualClock,
    pub config: TxnConfig,
    pub logs: BTreeMap<TopicPartition, PartitionLog>,
    /// (group, partition) -> committed offset, as mk-group would store it.
    pub committed: BTreeMap<(String, TopicPartition), i64>,
    /// The next producer id to hand out (mk-cluster's identity store).
    pub next_pid: i64,
    /// The clients' next sequence per (producer id, epoch, partition).
    pub sequences: BTreeMap<(i64, i32, TopicPartition), i32>,
    coordinator: Option<TransactionCoordinator>,
}

impl Harness {
    pub fn new() -> Self {
        Self::with_config(TxnConfig::default())
    }

    pub fn with_config(config: TxnConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(1_000_000);
        let mut h = Self {
            dir,
            clock,
            config,
            logs: BTreeMap::new(),
            committed: BTreeMap::new(),
            next_pid: 1,
            sequences: BTreeMap::new(),
            coordinator: None,
        };
        let recovered = h.open_coordinator();
        assert!(recovered.is_empty());
        h
    }

    pub fn journal_path(&self) -> PathBuf {
        self.dir.path().join(mk_txn::JOURNAL_FILE_NAME)
    }

    pub fn journal_text(&self) -> String {
        std::fs::read_to_string(self.journal_path()).unwrap()
    }

    /// Opens the coordinator on the journal and returns its recovery plans.
    pub fn open_coordinator(&mut self) -> Vec<CompletionPlan> {
        let clock: SharedClock = Arc::new(self.clock.clone());
        let Recovered {
            coordinator, plans, ..
        } = TransactionCoordinator::open(&self.journal_path(), self.config.clone(), clock).unwrap();
        self.coordinator = Some(coordinator);
        plans
    }

    pub fn coord(&mut self) -> &mut TransactionCoordinator {
        self.coordinator.as_mut().expect("coordinator is open")
    }

    pub fn coord_ref(&self) -> &TransactionCoordinator {
        self.coordinator.as_ref().expect("coordinator is open")
    }

    /// Drops the coordinator without a snapshot and without reopening it.
    pub fn crash_coordinator(&mut self) {
        if let Some(c) = self.coordinator.take() {
            c.crash();
        }
    }

    /// Kills the process: the coordinator is dropped without a snapshot and
    /// every log is dropped without a clean close, then all reopen.
    pub fn crash_and_reopen(&mut self) -> Vec<CompletionPlan> {
        self.crash_coordinator();
        let tps: Vec<TopicPartition> = self.logs.keys().cloned().collect();
        self.logs.clear();
        for tp in tps {
            self.log(&tp);
        }
        self.open_coordinator()
    }

    /// Closes the coordinator cleanly (snapshot) without reopening it.
    pub fn close_coordinator(&mut self) {
        self.coordinator.take().unwrap().close().unwrap();
    }

    pub fn close_and_reopen(&mut self) -> Vec<CompletionPlan> {
        self.close_coordinator();
        self.open_coordinator()
    }

    pub fn log(&mut self, tp: &TopicPartition) -> &mut PartitionLog {
        let dir = self.dir.path().join("logs").join(tp.dir_name());
        self.logs
            .entry(tp.clone())
            .or_insert_with(|| PartitionLog::open(&dir, LogConfig::default(), 0).unwrap())
    }

    /// High watermark of the single replica: its log end offset.
    pub fn hw(&mut self, tp: &TopicPartition) -> i64 {
        self.log(tp).leo()
    }

    /// One InitProducerId round trip as mk-cluster runs it: a producer id
    /// is allocated when asked for, a prior transaction is completed first.
    pub fn try_init(
        &mut self,
        id: &str,
        timeout_ms: i64,
        current: Option<(i64, i32)>,
    ) -> Result<Session, TxnError> {
        let mut fresh = None;
        let mut current = current;
        for _ in 0..4 {
            match self.coord().init_producer(id, timeout_ms, current, fresh)? {
                InitProducer::Ready {
                    producer_id,
                    producer_epoch,
                } => {
                    return Ok(Session {
                        id: id.to_string(),
                        pid: producer_id,
                        epoch: producer_epoch,
                    });
                }
                InitProducer::NeedsProducerId => {
                    fresh = Some(self.next_pid);
                    self.next_pid += 1;
                }
                InitProducer::CompletePriorFirst(plan) => {
                    self.finish(plan);
                    // The producer's own epoch was checked on the first round.
                    current = None;
                }
            }
        }
        panic!("InitProducerId for {id:?} did not settle");
    }

    /// InitProducerId for a new producer session with the default timeout.
    pub fn init(&mut self, id: &str) -> Session {
        self.try_init(id, TIMEOUT_MS, None).unwrap()
    }

    /// InitProducerId, then the teaching model's explicit begin.
    pub fn init_and_begin(&mut self, id: &str) -> Session {
        let s = self.init(id);
        self.coord().begin(&s.id, s.pid, s.epoch).unwrap();
        s
    }

    pub fn add(&mut self, s: &Session, tp: &TopicPartition) {
        self.coord()
            .add_partitions(&s.id, s.pid, s.epoch, std::slice::from_ref(tp))
            .unwrap();
    }

    /// The producer's next transactional batch for `tp` (one record), with
    /// its sequence reserved.
    pub fn batch(&mut self, s: &Session, tp: &TopicPartition, value: &str) -> RecordBatch {
        let key = (s.pid, s.epoch, tp.clone());
        let seq = self.sequences.get(&key).copied().unwrap_or(0);
        self.sequences.insert(key, seq + 1);
        RecordBatch::new(vec![record(value)])
            .unwrap()
            .with_producer(producer(s.pid, s.epoch, seq))
            .with_transactional_id(&s.id)
    }

    /// A transactional Produce as the broker handles it: verified by the
    /// coordinator, then appended. Returns the offset.
    pub fn produce(
        &mut self,
        s: &Session,
        tp: &TopicPartition,
        value: &str,
    ) -> Result<i64, TxnError> {
        self.produce_as(s, tp, value, TxnVersion::V1)
    }

    /// `produce` as a producer of `version` sends it: V2 (Produce v12)
    /// adds the partition to the transaction (beginning one) if needed
    /// instead of needing AddPartitionsToTxn.
    pub fn produce_as(
        &mut self,
        s: &Session,
        tp: &TopicPartition,
        value: &str,
        version: TxnVersion,
    ) -> Result<i64, TxnError> {
        let batch = self.batch(s, tp, value);
        match version {
            TxnVersion::V1 => self
                .coord_ref()
                .verify_append(&s.id, batch.producer(), tp)?,
            TxnVersion::V2 => self
                .coord()
                .add_partition_on_append(&s.id, batch.producer(), tp)?,
        }
        Ok(self.log(tp).append(batch).unwrap().base_offset)
    }

    /// A harness whose journal holds one line as the coordinator writes
    /// it, read at open: `tx` committed and idle under producer id 1 at
    /// `epoch` (instead of running that many sessions).
    pub fn with_idle_tx_at(epoch: i32) -> Self {
        let mut h = Self::new();
        h.crash_coordinator();
        let json = format!(
            r#"{{"id":"tx","state":"CompleteCommit","producer_id":1,"producer_epoch":{epoch},"last_producer_epoch":-1,"timeout_ms":60000,"start_ms":0,"partitions":[],"groups":[],"offsets":[]}}"#
        );
        let line = format!("{:08x} {json}\n", crc32c::crc32c(json.as_bytes()));
        std::fs::write(h.journal_path(), line).unwrap();
        assert!(h.open_coordinator().is_empty());
        h
    }

    /// AddPartitionsToTxn (if needed) and a transactional Produce.
    pub fn send(&mut self, s: &Session, tp: &TopicPartition, value: &str) -> i64 {
        self.add(s, tp);
        self.produce(s, tp, value).unwrap()
    }

    /// AddOffsetsToTxn and TxnOffsetCommit.
    pub fn stage(&mut self, s: &Session, group: &str, offsets: &[(TopicPartition, i64)]) {
        self.coord()
            .add_offsets(&s.id, s.pid, s.epoch, group)
            .unwrap();
        self.coord()
            .stage_offsets(&s.id, s.pid, s.epoch, group, offsets.iter().cloned())
            .unwrap();
    }

    /// A plain (non-transactional) append; returns the offset.
    pub fn plain(&mut self, tp: &TopicPartition, value: &str) -> i64 {
        let batch = RecordBatch::new(vec![record(value)]).unwrap();
        self.log(tp).append(batch).unwrap().base_offset
    }

    /// Appends a marker the way a plan would, outside of any plan.
    pub fn raw_marker(&mut self, tp: &TopicPartition, plan_marker: &RecordBatch) -> i64 {
        self.log(tp)
            .append(plan_marker.clone())
            .unwrap()
            .base_offset
    }

    /// Executes every piece of the plan and acknowledges it, without
    /// completing.
    pub fn execute(&mut self, plan: &mut CompletionPlan) {
        let markers: Vec<(TopicPartition, RecordBatch)> = plan
            .markers()
            .iter()
            .map(|m| (m.tp().clone(), m.batch().clone()))
            .collect();
        for (tp, batch) in markers {
            self.log(&tp).append(batch).unwrap();
            plan.ack_marker(&tp).unwrap();
        }
        for o in plan.offsets_to_store() {
            self.committed
                .insert((o.group.clone(), o.tp.clone()), o.offset);
        }
        plan.ack_offsets_stored();
    }

    /// Executes and completes the plan.
    pub fn finish(&mut self, mut plan: CompletionPlan) -> TxnState {
        self.execute(&mut plan);
        self.coord().complete(plan).unwrap()
    }

    /// EndTxn, executed to the end.
    pub fn end(&mut self, s: &Session, outcome: Outcome) -> TxnState {
        match self
            .coord()
            .end_txn(&s.id, s.pid, s.epoch, outcome)
            .unwrap()
        {
            EndTxn::Execute(plan) => self.finish(plan),
            EndTxn::AlreadyComplete => outcome.complete_state(),
        }
    }

    pub fn commit(&mut self, s: &Session) -> TxnState {
        self.end(s, Outcome::Commit)
    }

    pub fn abort(&mut self, s: &Session) -> TxnState {
        self.end(s, Outcome::Abort)
    }

    /// EndTxn's plan, not executed.
    pub fn end_plan(&mut self, s: &Session, outcome: Outcome) -> CompletionPlan {
        match self
            .coord()
            .end_txn(&s.id, s.pid, s.epoch, outcome)
            .unwrap()
        {
            EndTxn::Execute(plan) => plan,
            EndTxn::AlreadyComplete => panic!("{} is complete already", s.id),
        }
    }

    pub fn lso(&mut self, tp: &TopicPartition) -> i64 {
        let hw = self.hw(tp);
        mk_txn::last_stable_offset(hw, self.log(tp).first_unstable_offset())
    }

    /// Values visible to a read_committed reader from the log start.
    pub fn read_committed(&mut self, tp: &TopicPartition) -> Vec<String> {
        let hw = self.hw(tp);
        let log = self.log(tp);
        let start = log.log_start_offset();
        values(fetch_committed(log, start, usize::MAX, hw).unwrap())
    }

    /// Values visible to a read_uncommitted reader from the log start.
    pub fn read_uncommitted(&mut self, tp: &TopicPartition) -> Vec<String> {
        let hw = self.hw(tp);
        let log = self.log(tp);
        let start = log.log_start_offset();
        values(read_uncommitted(
            log.fetch(start, usize::MAX, Some(hw)).unwrap(),
        ))
    }

    pub fn committed_offset(&self, group: &str, tp: &TopicPartition) -> Option<i64> {
        self.committed
            .get(&(group.to_string(), tp.clone()))
            .copied()
    }

    pub fn state(&self, id: &str) -> TxnState {
        self.coord_ref().describe(id).unwrap().state
    }

    pub fn epoch(&self, id: &str) -> i32 {
        self.coord_ref().describe(id).unwrap().producer_epoch
    }
}

pub fn values(records: Vec<mk_log::LogRecord>) -> Vec<String> {
    records
        .into_iter()
        .map(|r| String::from_utf8(r.record.value.unwrap().to_vec()).unwrap())
        .collect()
}

pub fn producer(pid: i64, epoch: i32, seq: i32) -> ProducerInfo {
    ProducerInfo {
        producer_id: pid,
        producer_epoch: epoch,
        base_sequence: seq,
    }
}
