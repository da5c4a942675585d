//! The data path: appending batches (all ack modes), fetching with
//! isolation, long-poll fetches, and offset queries.

use crate::cluster::{BrokerCluster, INTERNAL_TOPICS, PartitionSlot};
use crate::error::{ClusterError, Result};
use bytes::Bytes;
use mk_core::TopicPartition;
use mk_log::{Header, LogRecord, RecordBatch};
use mk_replication::{AckMode, AppendOutcome, ProduceResult};
use std::time::Duration;

/// Which records a fetch may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// Everything below the high watermark (control batches never appear).
    #[default]
    ReadUncommitted,
    /// Only below the last stable offset, without aborted records.
    ReadCommitted,
}

impl Isolation {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "read_uncommitted" => Ok(Isolation::ReadUncommitted),
            "read_committed" => Ok(Isolation::ReadCommitted),
            other => Err(ClusterError::InvalidRequest(format!(
                "isolation must be \"read_uncommitted\" or \"read_committed\", got {other:?}"
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Isolation::ReadUncommitted => "read_uncommitted",
            Isolation::ReadCommitted => "read_committed",
        }
    }
}

/// A fetch of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    pub tp: TopicPartition,
    pub offset: i64,
    /// Negative is INVALID_REQUEST; 0 returns nothing.
    pub max_records: i64,
    /// Stop before the records' key+value+header bytes exceed this (at least
    /// one record is returned if any is visible).
    pub max_bytes: Option<usize>,
    pub isolation: Isolation,
}

impl FetchRequest {
    pub fn new(tp: TopicPartition, offset: i64, max_records: i64) -> Self {
        Self {
            tp,
            offset,
            max_records,
            max_bytes: None,
            isolation: Isolation::ReadUncommitted,
        }
    }

    pub fn with_isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        self
    }
}

/// One record as a consumer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerRecord {
    pub offset: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub timestamp_ms: i64,
    pub headers: Vec<Header>,
}

impl ConsumerRecord {
    fn from_log(r: LogRecord) -> Self {
        Self {
            offset: r.offset,
            key: r.record.key,
            value: r.record.value,
            timestamp_ms: r.record.timestamp_ms,
            headers: r.record.headers,
        }
    }

    fn size(&self) -> usize {
        self.key.as_ref().map_or(0, Bytes::len)
            + self.value.as_ref().map_or(0, Bytes::len)
            + self
                .headers
                .iter()
                .map(|h| h.key.len() + h.value.as_ref().map_or(0, Bytes::len))
                .sum::<usize>()
    }
}

/// The answer to a fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResult {
    pub records: Vec<ConsumerRecord>,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    /// Where the next fetch should start: after the last returned record,
    /// or past invisible data (control batches, aborted records, compaction
    /// gaps) up to the visible end when everything visible was returned.
    pub next_offset: i64,
}

/// An append that has been written on the leader; `wait` resolves once its
/// ack mode is satisfied (at once for acks 0 and 1).
#[derive(Debug)]
pub struct PendingAppend {
    outcome: AppendOutcome,
}

impl PendingAppend {
    /// The offsets, if already known (acks=1, or acks=all before commit).
    pub fn base_offset(&self) -> Option<i64> {
        match &self.outcome {
            AppendOutcome::Done(r) => r.base_offset,
            AppendOutcome::Pending(h) => Some(h.base_offset()),
        }
    }

    /// Waits for the acknowledgement required by the ack mode.
    pub async fn wait(self) -> Result<ProduceResult> {
        Ok(self.outcome.result().await?)
    }
}

fn check_user_topic(tp: &TopicPartition) -> Result<()> {
    if INTERNAL_TOPICS.contains(&tp.topic.as_str()) {
        return Err(ClusterError::InvalidRequest(format!(
            "{:?} is an internal topic; users cannot produce to it",
            tp.topic
        )));
    }
    Ok(())
}

impl BrokerCluster {
    /// Appends a batch on the partition's leader (spec 02 order of checks)
    /// and returns without waiting for replication. Order within a partition
    /// is the order of these calls.
    pub fn submit_append(
        &self,
        tp: &TopicPartition,
        batch: RecordBatch,
        acks: AckMode,
        expected_leader_epoch: Option<i32>,
    ) -> Result<PendingAppend> {
        self.check_running()?;
        check_user_topic(tp)?;
        let slot = self.slot(tp)?;
        let records = batch.records().len() as u64;
        let outcome = self.with_slot(&slot, |set| {
            Ok(set.append(batch, acks, expected_leader_epoch)?)
        })?;
        self.after_append(&slot, records)?;
        Ok(PendingAppend { outcome })
    }

    /// Appends a batch and waits for its acknowledgement.
    pub async fn append_batch(
        &self,
        tp: &TopicPartition,
        batch: RecordBatch,
        acks: AckMode,
    ) -> Result<ProduceResult> {
        self.submit_append(tp, batch, acks, None)?.wait().await
    }

    /// Wakes whoever waits for data and applies the flush policy.
    fn after_append(&self, slot: &PartitionSlot, records: u64) -> Result<()> {
        self.appended.notify_one();
        slot.hw_moved.notify_waiters();
        let policy = self.config.flush;
        if policy.messages.is_none() && policy.interval_ms.is_none() {
            return Ok(());
        }
        let due = slot.unflushed.lock().expect("flush state").note_appended(
            records,
            self.clock.now_ms(),
            policy,
        );
        if due {
            self.with_slot(slot, |set| Ok(set.flush()?))?;
        }
        Ok(())
    }

    /// Reads from the leader, bounded by the HW (read_uncommitted) or the
    /// LSO (read_committed). An offset outside `[log_start, LEO]` is
    /// OFFSET_OUT_OF_RANGE; between the visible end and the LEO it is empty.
    pub fn fetch(&self, req: &FetchRequest) -> Result<FetchResult> {
        self.check_running()?;
        if req.max_records < 0 {
            return Err(ClusterError::InvalidRequest(format!(
                "max_records must be >= 0, got {}",
                req.max_records
            )));
        }
        let slot = self.slot(&req.tp)?;
        self.read_slot(&slot, |set| {
            let log = set.leader_log();
            let hw = set.high_watermark();
            let lso = mk_txn::last_stable_offset(hw, log.first_unstable_offset());
            let (start, leo) = (log.log_start_offset(), log.leo());
            if req.offset < start || req.offset > leo {
                return Err(ClusterError::OffsetOutOfRange {
                    offset: req.offset,
                    log_start: start,
                    log_end: leo,
                });
            }
            let bound = match req.isolation {
                Isolation::ReadUncommitted => hw,
                Isolation::ReadCommitted => lso,
            };
            let max = usize::try_from(req.max_records).unwrap_or(usize::MAX);
            let raw = if req.offset >= bound || max == 0 {
                Vec::new()
            } else {
                match req.isolation {
                    Isolation::ReadUncommitted => log.fetch(req.offset, max, Some(bound))?,
                    Isolation::ReadCommitted => mk_txn::fetch_committed(log, req.offset, max, hw)?,
                }
            };
            let mut records: Vec<ConsumerRecord> =
                raw.into_iter().map(ConsumerRecord::from_log).collect();
            let mut cut = false;
            if let Some(limit) = req.max_bytes {
                let mut total = 0;
                let keep = records
                    .iter()
                    .take_while(|r| {
                        total += r.size();
                        total <= limit
                    })
                    .count()
                    .max(1);
                cut = keep < records.len();
                records.truncate(keep);
            }
            let next_offset = match records.last() {
                Some(last) if cut || records.len() >= max => last.offset + 1,
                _ => bound.max(req.offset),
            };
            Ok(FetchResult {
                records,
                high_watermark: hw,
                last_stable_offset: lso,
                log_start_offset: start,
                next_offset,
            })
        })
    }

    /// A long-poll fetch: if nothing is visible at the offset yet, waits up
    /// to `max_wait` for the partition's visible end to move (woken by the
    /// append or replication step that moves it; no busy loop).
    pub async fn fetch_wait(&self, req: &FetchRequest, max_wait: Duration) -> Result<FetchResult> {
        let slot = self.slot(&req.tp)?;
        // A huge wait saturates to a year instead of overflowing the clock.
        let now = tokio::time::Instant::now();
        let deadline = now
            .checked_add(max_wait)
            .unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 3600));
        loop {
            let notified = slot.hw_moved.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let result = self.fetch(req)?;
            if !result.records.is_empty() || tokio::time::Instant::now() >= deadline {
                return Ok(result);
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep_until(deadline) => return self.fetch(req),
                _ = self.shutdown.cancelled() => return Err(ClusterError::Closed),
            }
        }
    }

    /// The high watermark (end of what read_uncommitted consumers see).
    pub fn visible_end(&self, tp: &TopicPartition) -> Result<i64> {
        self.read_partition(tp, |set| Ok(set.high_watermark()))
    }

    /// The last stable offset (end of what read_committed consumers see).
    pub fn last_stable_offset(&self, tp: &TopicPartition) -> Result<i64> {
        self.read_partition(tp, |set| {
            Ok(mk_txn::last_stable_offset(
                set.high_watermark(),
                set.leader_log().first_unstable_offset(),
            ))
        })
    }

    pub fn log_start_offset(&self, tp: &TopicPartition) -> Result<i64> {
        self.read_partition(tp, |set| Ok(set.log_start_offset()))
    }

    /// The leader's log end offset.
    pub fn log_end_offset(&self, tp: &TopicPartition) -> Result<i64> {
        self.read_partition(tp, |set| Ok(set.log_end_offset()))
    }

    /// The first committed (below HW) offset whose timestamp is >= `ts`
    /// (Kafka's ListOffsets by time), `None` if there is none yet.
    pub fn offset_for_timestamp(
        &self,
        tp: &TopicPartition,
        timestamp_ms: i64,
    ) -> Result<Option<i64>> {
        self.read_partition(tp, |set| {
            let hw = set.high_watermark();
            Ok(set
                .leader_log()
                .offset_for_timestamp(timestamp_ms)?
                .filter(|o| *o < hw))
        })
    }
}

/// One record of a produce request; a missing timestamp is the cluster
/// clock's now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProduceEntry {
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<Header>,
    pub timestamp_ms: Option<i64>,
}

/// A produce request as adapters receive it: records appended as one batch.
#[derive(Debug, Clone)]
pub struct ProduceRequest {
    pub tp: TopicPartition,
    pub records: Vec<ProduceEntry>,
    pub acks: AckMode,
    /// Idempotent producers send their id, epoch and base sequence.
    pub producer: Option<mk_log::ProducerInfo>,
}

/// The answer to a produce request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProduceResponse {
    pub partition: u32,
    /// `None` for acks=0.
    pub base_offset: Option<i64>,
    pub count: usize,
    /// An idempotent retry: nothing was written, the offsets are the
    /// original ones.
    pub duplicate: bool,
}

/// Which offset `list_offsets` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The log start offset.
    Earliest,
    /// The high watermark (the next offset a consumer will see).
    Latest,
    /// The first committed offset whose timestamp is >= this.
    Timestamp(i64),
}

impl BrokerCluster {
    /// Appends the request's records as one batch and waits for its ack mode.
    pub async fn produce(&self, req: ProduceRequest) -> Result<ProduceResponse> {
        let now = self.clock.now_ms();
        let count = req.records.len();
        let records = req
            .records
            .into_iter()
            .map(|e| {
                mk_log::Record::new(e.key, e.value, e.timestamp_ms.unwrap_or(now))
                    .with_headers(e.headers)
            })
            .collect();
        let mut batch = RecordBatch::new(records)?;
        if let Some(p) = req.producer {
            batch = batch.with_producer(p);
        }
        let r = self
            .submit_append(&req.tp, batch, req.acks, None)?
            .wait()
            .await?;
        Ok(ProduceResponse {
            partition: req.tp.partition,
            base_offset: r.base_offset,
            count,
            duplicate: r.duplicate,
        })
    }

    /// ListOffsets: earliest, latest (HW) or by timestamp.
    pub fn list_offsets(&self, tp: &TopicPartition, spec: OffsetSpec) -> Result<Option<i64>> {
        match spec {
            OffsetSpec::Earliest => self.log_start_offset(tp).map(Some),
            OffsetSpec::Latest => self.visible_end(tp).map(Some),
            OffsetSpec::Timestamp(ts) => self.offset_for_timestamp(tp, ts),
        }
    }
}
