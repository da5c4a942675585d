//! A miniature single-replica "cluster" for the tests: real mk-log partition
//! logs in a temporary directory, a committed-offsets map, and a
//! coordinator whose plans it executes the way mk-cluster is meant to.

#![allow(dead_code)]

use bytes::Bytes;
use mk_core::{ManualClock, SharedClock, TopicPartition};
use mk_log::{LogConfig, PartitionLog, ProducerInfo, Record, RecordBatch};
use mk_txn::{
    Begin, CompletionPlan, Recovered, TransactionCoordinator, TxnConfig, TxnState, fetch_committed,
    read_uncommitted,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

pub fn tp(topic: &str, partition: u32) -> TopicPartition {
    TopicPartition::new(topic, partition)
}

pub fn record(value: &str) -> Record {
    Record::new(None, Some(Bytes::copy_from_slice(value.as_bytes())), 1_000)
}

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub clock: ManualClock,
    pub config: TxnConfig,
    pub logs: BTreeMap<TopicPartition, PartitionLog>,
    /// (group, partition) -> committed offset, as mk-group would store it.
    pub committed: BTreeMap<(String, TopicPartition), i64>,
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

    pub fn begin(&mut self, id: &str, pid: i64, epoch: i32) {
        match self.coord().begin(id, pid, epoch).unwrap() {
            Begin::Started => {}
            Begin::CompletePriorFirst(plan) => panic!("unexpected prior plan {plan:?}"),
        }
    }

    /// A transactional send, appended and reported; returns the offset.
    /// Begins "tx" (producer 1, epoch 0) and sends `value` to out-0, which
    /// it returns: a transaction Ongoing in one partition.
    pub fn ongoing(&mut self, value: &str) -> TopicPartition {
        let out = tp("out", 0);
        self.begin("tx", 1, 0);
        self.send("tx", 0, &out, value);
        out
    }

    /// The usual open transaction of these tests: "tx" (producer 1, epoch
    /// 0) has written `a1` to out-0 and `b1` to out-1 and staged `offset`
    /// for group "g" on in-0. Returns (out-0, out-1, in-0).
    pub fn two_partition_txn(
        &mut self,
        offset: i64,
    ) -> (TopicPartition, TopicPartition, TopicPartition) {
        let (a, b, input) = (tp("out", 0), tp("out", 1), tp("in", 0));
        self.begin("tx", 1, 0);
        self.send("tx", 0, &a, "a1");
        self.send("tx", 0, &b, "b1");
        self.coord()
            .send_offsets("tx", 0, "g", [(input.clone(), offset)])
            .unwrap();
        (a, b, input)
    }

    pub fn send(&mut self, id: &str, epoch: i32, tp: &TopicPartition, value: &str) -> i64 {
        let pending = self
            .coord()
            .send(id, epoch, tp.clone(), record(value))
            .unwrap();
        let info = self.log(tp).append(pending.batch().clone()).unwrap();
        self.coord()
            .send_appended(pending, info.base_offset)
            .unwrap();
        info.base_offset
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

    pub fn commit(&mut self, id: &str, epoch: i32) -> TxnState {
        let plan = self.coord().commit(id, epoch).unwrap();
        self.finish(plan)
    }

    pub fn abort(&mut self, id: &str, epoch: i32) -> TxnState {
        let plan = self.coord().abort(id, epoch).unwrap();
        self.finish(plan)
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
