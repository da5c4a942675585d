//! The data path: appending batches (all ack modes), fetching with
//! isolation, long-poll fetches, and offset queries.

use crate::cluster::{BrokerCluster, INTERNAL_TOPICS};
use crate::config::{BrokerId, FlushPolicy};
use crate::error::{ClusterError, LeaderError, Result};
use crate::slot::{PartitionSlot, Topic};
use bytes::Bytes;
use mk_core::TopicPartition;
use mk_log::{Header, LogRecord, ProducerInfo, RecordBatch};
use mk_replication::{AckMode, AppendOutcome, ProduceResult};
use mk_txn::TxnVersion;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

/// The data path: produce, fetch, offsets: `cluster.data().produce(..)`.
#[derive(Debug, Clone, Copy)]
pub struct DataPath<'a> {
    pub(crate) cluster: &'a BrokerCluster,
}

impl BrokerCluster {
    /// The data role (see [`DataPath`]).
    pub fn data(&self) -> DataPath<'_> {
        DataPath { cluster: self }
    }
}

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
    /// one record is returned if any is visible). The cluster's
    /// `fetch_max_bytes` caps it, also when it is `None`: every answer is
    /// bounded whatever the client asks.
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
    log_append_time_ms: Option<i64>,
}

impl PendingAppend {
    /// The broker time stamped into the batch when its topic's
    /// `message.timestamp.type` is LogAppendTime (Produce answers it as
    /// `log_append_time_ms`); `None` for CreateTime topics.
    pub fn log_append_time_ms(&self) -> Option<i64> {
        self.log_append_time_ms
    }

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

    /// Like `wait`, but gives up after `timeout` with REQUEST_TIMED_OUT
    /// (Kafka's produce `timeout_ms`). The batch stays in the log: an
    /// acks=all write that times out may still commit later, exactly as in
    /// Kafka, which is why clients retry with idempotence.
    pub async fn wait_timeout(self, timeout: Duration) -> Result<ProduceResult> {
        match tokio::time::timeout(timeout, self.wait()).await {
            Ok(r) => r,
            Err(_) => Err(ClusterError::RequestTimedOut {
                timeout_ms: timeout.as_millis(),
            }),
        }
    }
}

/// What a topic's settings decided about one append.
#[derive(Debug, Clone, Copy)]
struct TopicAppend {
    /// The topic's `min.insync.replicas` (its own, else the broker's).
    min_insync_replicas: usize,
    /// The age past which an append rolls the active segment (its own
    /// `segment.ms`, else the broker's `log.roll.ms`; see `roll_ms`).
    roll_ms: i64,
    /// How much earlier than that a segment may roll (`segment.jitter.ms`).
    roll_jitter_ms: i64,
    /// Bytes between sparse index entries (`index.interval.bytes`).
    index_interval_bytes: u64,
    /// When an append fsyncs the partition: the topic's `flush.messages`
    /// and `flush.ms`, else the broker's `--flush-messages` and
    /// `--flush-interval-ms`.
    flush: FlushPolicy,
    /// The broker time stamped into the batch of a LogAppendTime topic.
    log_append_time_ms: Option<i64>,
}

impl TopicAppend {
    /// Gives the partition's logs the topic's settings they act on at
    /// append (the ISR minimum, the roll age and its jitter, the index
    /// interval).
    fn apply_to(&self, set: &mut mk_replication::PartitionReplicaSet) -> Result<()> {
        set.set_min_insync_replicas(self.min_insync_replicas);
        set.set_segment_ms(Some(self.roll_ms))?;
        set.set_segment_jitter_ms(self.roll_jitter_ms)?;
        set.set_index_interval_bytes(self.index_interval_bytes)?;
        Ok(())
    }
}

/// What a topic's configs, over the broker defaults, decide for an append
/// (resolved once per config and defaults: resolving them on every append
/// took about a tenth of a one-record Produce request's broker CPU).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AppendSettings {
    min_insync_replicas: usize,
    roll_ms: i64,
    roll_jitter_ms: i64,
    index_interval_bytes: u64,
    flush: FlushPolicy,
    max_message_bytes: i64,
    compacts: bool,
    compression: Option<mk_log::block::Compression>,
    log_append_time: bool,
    timestamp_before_max_ms: i64,
    timestamp_after_max_ms: i64,
}

impl AppendSettings {
    fn resolve(
        config: &crate::config::TopicConfig,
        broker: &crate::topic_configs::BrokerDefaults,
    ) -> Self {
        let min_isr = config.effective_i64("min.insync.replicas", broker);
        Self {
            min_insync_replicas: usize::try_from(min_isr).unwrap_or(1).max(1),
            roll_ms: config.roll_ms(broker),
            roll_jitter_ms: config.effective_i64("segment.jitter.ms", broker),
            index_interval_bytes: index_interval(config, broker),
            flush: flush_policy(config, broker),
            max_message_bytes: config.effective_i64("max.message.bytes", broker),
            compacts: config.cleanup_policy.compacts(),
            compression: config.compression(broker),
            log_append_time: config.effective_str("message.timestamp.type", broker)
                == "LogAppendTime",
            timestamp_before_max_ms: config
                .effective_i64("message.timestamp.before.max.ms", broker),
            timestamp_after_max_ms: config.effective_i64("message.timestamp.after.max.ms", broker),
        }
    }
}

/// A topic's `index.interval.bytes` over the broker's; 0 (Kafka: an entry
/// for every batch) is 1.
pub(crate) fn index_interval(
    config: &crate::config::TopicConfig,
    broker: &crate::topic_configs::BrokerDefaults,
) -> u64 {
    u64::try_from(config.effective_i64("index.interval.bytes", broker))
        .unwrap_or(4_096)
        .max(1)
}

/// A topic's `flush.messages` and `flush.ms` over the broker's
/// `log.flush.interval.*` (Kafka's defaults, `Long.MAX_VALUE`, mean never).
fn flush_policy(
    config: &crate::config::TopicConfig,
    broker: &crate::topic_configs::BrokerDefaults,
) -> FlushPolicy {
    let set = |key: &str| Some(config.effective_i64(key, broker)).filter(|&v| v != i64::MAX);
    FlushPolicy {
        messages: set("flush.messages").and_then(|n| u64::try_from(n).ok()),
        interval_ms: set("flush.ms"),
    }
}

/// How `append_on_leader` appends, beyond the batch and the ack mode.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Append {
    /// The leader epoch the client expects (FENCED_LEADER_EPOCH if stale).
    pub expected_leader_epoch: Option<i32>,
    /// `(producer id, epoch)` when the core acts as the producer and picks
    /// the sequence (the teaching model's sends).
    pub client_sequence: Option<(i64, i32)>,
    /// The producer's transaction protocol (V2 adds partitions implicitly).
    pub txn_version: TxnVersion,
}

impl Append {
    /// A coordinator's marker, or a plain append on the leader.
    pub(crate) const PLAIN: Append = Append {
        expected_leader_epoch: None,
        client_sequence: None,
        txn_version: TxnVersion::V1,
    };
}

/// The batch of a produce request's records; a record without a timestamp
/// gets `now`.
fn batch_of(
    entries: Vec<ProduceEntry>,
    producer: Option<ProducerInfo>,
    now: i64,
) -> Result<RecordBatch> {
    let records = entries
        .into_iter()
        .map(|e| {
            mk_log::Record::new(e.key, e.value, e.timestamp_ms.unwrap_or(now))
                .with_headers(e.headers)
        })
        .collect();
    let batch = RecordBatch::new(records)?;
    Ok(match producer {
        Some(p) => batch.with_producer(p),
        None => batch,
    })
}

pub(crate) fn check_user_topic(tp: &TopicPartition) -> Result<()> {
    if INTERNAL_TOPICS.contains(&tp.topic.as_str()) {
        return Err(ClusterError::InvalidRequest(format!(
            "{:?} is an internal topic; users cannot produce to it",
            tp.topic
        )));
    }
    Ok(())
}

impl DataPath<'_> {
    /// Appends a batch on the partition's leader (spec 02 order of checks)
    /// and returns without waiting for replication. Order within a partition
    /// is the order of these calls. A transactional batch (one carrying a
    /// transactional id) is first verified against its producer's Ongoing
    /// transaction, under the same partition lock as the append (see
    /// `verify_append` in mk-txn): INVALID_PRODUCER_EPOCH,
    /// INVALID_PRODUCER_ID_MAPPING or INVALID_TXN_STATE, and nothing is
    /// written. Control batches (transaction markers) are only written by
    /// the transaction coordinator's plans: INVALID_RECORD here.
    pub fn submit_append(
        self,
        tp: &TopicPartition,
        batch: RecordBatch,
        acks: AckMode,
        expected_leader_epoch: Option<i32>,
    ) -> Result<PendingAppend> {
        self.submit_append_as(tp, batch, acks, expected_leader_epoch, TxnVersion::V1)
    }

    /// `submit_append` for a producer of transactions v2 (Produce v12+,
    /// KIP-890 part 2) when `txn_version` is V2: a transactional batch for
    /// a partition not yet in its producer's transaction adds it (and
    /// begins the transaction if none is open) instead of being refused;
    /// a transaction being decided is CONCURRENT_TRANSACTIONS. Fencing is
    /// the same.
    pub fn submit_append_as(
        self,
        tp: &TopicPartition,
        batch: RecordBatch,
        acks: AckMode,
        expected_leader_epoch: Option<i32>,
        txn_version: TxnVersion,
    ) -> Result<PendingAppend> {
        if batch.control().is_some() {
            return Err(mk_log::LogError::InvalidRecord(
                "clients may not produce control batches; markers are written by EndTxn".into(),
            )
            .into());
        }
        let how = Append {
            expected_leader_epoch,
            client_sequence: None,
            txn_version,
        };
        self.append_on_leader(tp, batch, acks, how)
    }

    /// The append behind `submit_append` and the coordinator's markers.
    /// With `client_sequence` = `(producer id, epoch)` the core acts as the
    /// producer (the teaching model's transactional sends): the batch gets
    /// that identity and the sequence the leader expects next, chosen under
    /// the partition lock so concurrent sends cannot pick the same one.
    pub(crate) fn append_on_leader(
        self,
        tp: &TopicPartition,
        mut batch: RecordBatch,
        acks: AckMode,
        how: Append,
    ) -> Result<PendingAppend> {
        let Append {
            expected_leader_epoch,
            client_sequence,
            txn_version,
        } = how;
        self.cluster.check_running()?;
        check_user_topic(tp)?;
        let slot = self.cluster.slot(tp)?;
        let topic = self.check_against_topic(tp, &mut batch)?;
        let records = batch.record_count() as u64;
        let outcome = self.cluster.with_slot(&slot, |set| {
            topic.apply_to(set)?;
            if let Some((producer_id, producer_epoch)) = client_sequence {
                batch = batch.with_producer(ProducerInfo {
                    producer_id,
                    producer_epoch,
                    base_sequence: set.next_sequence(producer_id, producer_epoch),
                });
            }
            // Verifying under the partition lock keeps a marker of this
            // transaction (which needs the lock too) from landing between
            // the check and the append.
            if batch.control().is_none()
                && let Some(txn_id) = batch.transactional_id()
            {
                self.cluster.transactions().verify_txn_append(
                    txn_id,
                    batch.producer(),
                    tp,
                    txn_version,
                )?;
            }
            Ok(set.append(batch, acks, expected_leader_epoch)?)
        })?;
        self.cluster.note_write_succeeded();
        self.after_append(&slot, records, topic.flush)?;
        Ok(PendingAppend {
            outcome,
            log_append_time_ms: topic.log_append_time_ms,
        })
    }

    /// What the topic's settings refuse or change before anything is
    /// written (the checks of Kafka's `LogValidator` that depend on the
    /// topic): a batch over `max.message.bytes` as stored is
    /// MESSAGE_TOO_LARGE; a compacted topic refuses a batch with records
    /// without a key, with INVALID_RECORD naming each of them (mk-log's
    /// validator); a LogAppendTime topic stamps the broker's clock into the
    /// batch; a CreateTime topic refuses timestamps outside
    /// `message.timestamp.before.max.ms` / `after.max.ms` of now
    /// (INVALID_TIMESTAMP; a kept block is judged by its first and max
    /// timestamps). A topic whose `compression.type` is a codec
    /// recompresses a producer's block of another codec (mk-log, bounded
    /// as every decompression), and the recompressed batch must fit
    /// `max.message.bytes` too, as in Kafka. This runs before the
    /// partition lock is taken. Markers are the coordinator's and pass.
    /// Every append, markers too, needs the topic's `min.insync.replicas`
    /// for acks=all.
    fn check_against_topic(
        self,
        tp: &TopicPartition,
        batch: &mut RecordBatch,
    ) -> Result<TopicAppend> {
        let topic = self.cluster.topic(&tp.topic)?;
        let s = self.append_settings(&topic);
        let mut checked = TopicAppend {
            min_insync_replicas: s.min_insync_replicas,
            roll_ms: s.roll_ms,
            roll_jitter_ms: s.roll_jitter_ms,
            index_interval_bytes: s.index_interval_bytes,
            flush: s.flush,
            log_append_time_ms: None,
        };
        if batch.control().is_some() {
            return Ok(checked);
        }
        check_batch_size(tp, batch, s.max_message_bytes)?;
        if s.compacts {
            mk_log::validator::check_keys_for_compaction(batch, tp)?;
        }
        if let Some(to) = s.compression
            && batch.recompress(to, mk_log::codec::MAX_UNCOMPRESSED_READ_BYTES)?
        {
            check_batch_size(tp, batch, s.max_message_bytes)?;
        }
        let now = self.cluster.clock.now_ms();
        if s.log_append_time {
            batch.stamp_log_append_time(now);
            checked.log_append_time_ms = Some(now);
            return Ok(checked);
        }
        if batch.record_count() == 0 {
            return Ok(checked);
        }
        let (before, after) = (s.timestamp_before_max_ms, s.timestamp_after_max_ms);
        let (lo, hi) = (batch.min_timestamp_ms(), batch.max_timestamp_ms());
        if now.saturating_sub(lo) > before {
            return Err(ClusterError::InvalidTimestamp(format!(
                "timestamp {lo} of a record to {tp} is more than message.timestamp.before.max.ms \
                 ({before}) before the broker's time {now}"
            )));
        }
        if hi.saturating_sub(now) > after {
            return Err(ClusterError::InvalidTimestamp(format!(
                "timestamp {hi} of a record to {tp} is more than message.timestamp.after.max.ms \
                 ({after}) after the broker's time {now}"
            )));
        }
        Ok(checked)
    }

    /// `topic`'s append settings over the current broker defaults,
    /// resolved again only when either changed.
    fn append_settings(self, topic: &Topic) -> AppendSettings {
        let broker = self.cluster.broker_defaults();
        let mut cached = crate::locks::plain(&topic.append_settings);
        if let Some((with, settings)) = cached.as_ref()
            && Arc::ptr_eq(with, &broker)
        {
            return *settings;
        }
        let settings = AppendSettings::resolve(&topic.meta.config, &broker);
        *cached = Some((broker, settings));
        settings
    }

    /// `submit_append` for consecutive batches to one partition with one
    /// ack mode, answered one each, in order, exactly as consecutive
    /// `submit_append` calls would answer them — a refused batch is refused
    /// alone — but appended under one partition lock, the plain ones (no
    /// producer id) in one write (`PartitionReplicaSet::append_group`).
    /// Transactional batches and markers take the lone path.
    pub fn submit_append_group(
        self,
        tp: &TopicPartition,
        mut batches: Vec<RecordBatch>,
        acks: AckMode,
    ) -> Vec<Result<PendingAppend>> {
        let lone = |batches: Vec<RecordBatch>| -> Vec<Result<PendingAppend>> {
            batches
                .into_iter()
                .map(|b| self.submit_append(tp, b, acks, None))
                .collect()
        };
        // A batch the topic refuses is refused alone, on the lone path.
        let mut checked = Vec::with_capacity(batches.len());
        let groupable = batches.len() > 1
            && batches.iter_mut().all(|b| {
                if b.transactional_id().is_some() || b.control().is_some() {
                    return false;
                }
                match self.check_against_topic(tp, b) {
                    Ok(c) => {
                        checked.push(c);
                        true
                    }
                    Err(_) => false,
                }
            });
        // What refuses a whole group (a stopped broker, an internal topic,
        // an unknown or offline partition) each lone append finds again,
        // with an error of its own.
        let slot = self
            .cluster
            .check_running()
            .and_then(|()| check_user_topic(tp))
            .and_then(|()| self.cluster.slot(tp));
        let (true, Ok(slot)) = (groupable, slot) else {
            return lone(batches);
        };
        let counts: Vec<u64> = batches.iter().map(|b| b.record_count() as u64).collect();
        let mut batches = Some(batches);
        let appended = self.cluster.with_slot(&slot, |set| {
            let batches = batches.take().expect("taken once");
            if let Some(c) = checked.first() {
                c.apply_to(set)?;
            }
            Ok(set.append_group(batches, acks, None))
        });
        let Ok(appended) = appended else {
            return lone(batches.unwrap_or_default());
        };
        let mut answers: Vec<Result<PendingAppend>> = appended
            .into_iter()
            .zip(&checked)
            .map(|(r, c)| {
                let r = r.map_err(ClusterError::from);
                let outcome = self
                    .cluster
                    .settle(&slot, crate::health::Access::Write, r)?;
                Ok(PendingAppend {
                    outcome,
                    log_append_time_ms: c.log_append_time_ms,
                })
            })
            .collect();
        let records = answers
            .iter()
            .zip(counts)
            .filter_map(|(a, n)| a.is_ok().then_some(n))
            .sum();
        if answers.iter().any(Result::is_ok) {
            self.cluster.note_write_succeeded();
            // The flush policy's write (if one is due) belongs to the last
            // append, the one that made it due.
            // One partition, so one topic's flush policy for the group.
            let flush = checked.first().map(|c| c.flush).unwrap_or_default();
            if let Err(e) = self.after_append(&slot, records, flush)
                && let Some(last) = answers.iter_mut().rev().find(|a| a.is_ok())
            {
                *last = Err(e);
            }
        }
        answers
    }

    /// Appends a batch and waits for its acknowledgement.
    pub async fn append_batch(
        self,
        tp: &TopicPartition,
        batch: RecordBatch,
        acks: AckMode,
    ) -> Result<ProduceResult> {
        self.submit_append(tp, batch, acks, None)?.wait().await
    }

    /// Counts the records, wakes whoever waits for data and applies the
    /// topic's flush policy.
    fn after_append(self, slot: &PartitionSlot, records: u64, policy: FlushPolicy) -> Result<()> {
        slot.traffic.produced(records);
        if slot.is_replicated() {
            self.cluster.appended.notify_one();
        }
        slot.hw_moved.notify_waiters();
        if policy.messages.is_none() && policy.interval_ms.is_none() {
            return Ok(());
        }
        let due = slot
            .unflushed()
            .note_appended(records, self.cluster.clock.now_ms(), policy);
        if due {
            self.cluster.with_slot(slot, |set| Ok(set.flush()?))?;
        }
        Ok(())
    }

    /// Reads from the leader, bounded by the HW (read_uncommitted) or the
    /// LSO (read_committed). An offset outside `[log_start, LEO]` is
    /// OFFSET_OUT_OF_RANGE; between the visible end and the LEO it is empty.
    pub fn fetch(self, req: &FetchRequest) -> Result<FetchResult> {
        self.cluster.check_running()?;
        if req.max_records < 0 {
            return Err(ClusterError::InvalidRequest(format!(
                "max_records must be >= 0, got {}",
                req.max_records
            )));
        }
        let slot = self.cluster.slot(&req.tp)?;
        self.cluster.read_slot(&slot, |set| {
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
            let max_bytes = self.fetch_byte_limit(req.max_bytes);
            let (raw, limited) = if req.offset >= bound || max == 0 {
                (Vec::new(), false)
            } else {
                read_records(log, req.offset, max, max_bytes, bound, req.isolation)?
            };
            let bytes: usize = raw.iter().map(|r| r.record.payload_bytes()).sum();
            slot.traffic.fetched(raw.len() as u64, bytes as u64);
            let records: Vec<ConsumerRecord> =
                raw.into_iter().map(ConsumerRecord::from_log).collect();
            let next_offset = match records.last() {
                Some(last) if limited => last.offset + 1,
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

    /// The record bytes one JSON fetch answer may carry: the client's
    /// `max_bytes` if it gave one, never more than the cluster's
    /// `fetch_max_bytes` (Kafka's broker-side `fetch.max.bytes`), so no
    /// request can make an answer as large as the partition.
    pub(crate) fn fetch_byte_limit(self, asked: Option<usize>) -> usize {
        let cap = usize::try_from(self.cluster.config.fetch_max_bytes).unwrap_or(usize::MAX);
        asked.map_or(cap, |a| a.min(cap))
    }

    /// Resolves after the next append to a replicated partition (at once if
    /// one happened since the last wait ended): what wakes the replication
    /// driver, so followers copy a write without waiting for a tick.
    pub async fn until_appended(self) {
        self.cluster.appended.notified().await;
    }

    /// A long-poll fetch: if nothing is visible at the offset yet, waits up
    /// to `max_wait` for the partition's visible end to move (woken by the
    /// append or replication step that moves it; no busy loop).
    pub async fn fetch_wait(self, req: &FetchRequest, max_wait: Duration) -> Result<FetchResult> {
        let slot = self.cluster.slot(&req.tp)?;
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
                _ = self.cluster.shutdown.cancelled() => return Err(ClusterError::Closed),
            }
        }
    }

    /// The high watermark (end of what read_uncommitted consumers see).
    pub fn visible_end(self, tp: &TopicPartition) -> Result<i64> {
        self.cluster
            .read_partition(tp, |set| Ok(set.high_watermark()))
    }

    /// The last stable offset (end of what read_committed consumers see).
    pub fn last_stable_offset(self, tp: &TopicPartition) -> Result<i64> {
        self.cluster.read_partition(tp, |set| {
            Ok(mk_txn::last_stable_offset(
                set.high_watermark(),
                set.leader_log().first_unstable_offset(),
            ))
        })
    }

    pub fn log_start_offset(self, tp: &TopicPartition) -> Result<i64> {
        self.cluster
            .read_partition(tp, |set| Ok(set.log_start_offset()))
    }

    /// DeleteRecords: moves the partition's log start forward to `offset`
    /// on every replica (-1: to the high watermark) and returns the new log
    /// start (Kafka's low watermark). Above the high watermark, or below
    /// -1, is OFFSET_OUT_OF_RANGE; at or below the current start it changes
    /// nothing. Durable before it returns (mk-log's `log-start-offset`).
    pub fn delete_records(self, tp: &TopicPartition, offset: i64) -> Result<i64> {
        self.cluster.check_running()?;
        let slot = self.cluster.slot(tp)?;
        self.cluster
            .with_slot(&slot, |set| Ok(set.delete_records(offset)?))
    }

    /// The partition's producers as its leader's state holds them
    /// (DescribeProducers), by producer id.
    pub fn active_producers(
        self,
        tp: &TopicPartition,
    ) -> Result<Vec<mk_replication::ActiveProducer>> {
        self.cluster
            .read_partition(tp, |set| Ok(set.active_producers()))
    }

    /// The leader's log end offset.
    pub fn log_end_offset(self, tp: &TopicPartition) -> Result<i64> {
        self.cluster
            .read_partition(tp, |set| Ok(set.log_end_offset()))
    }

    /// The first committed (below HW) offset whose timestamp is >= `ts`
    /// (Kafka's ListOffsets by time), `None` if there is none yet.
    pub fn offset_for_timestamp(
        self,
        tp: &TopicPartition,
        timestamp_ms: i64,
    ) -> Result<Option<i64>> {
        self.cluster.read_partition(tp, |set| {
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
    /// The committed record with the largest timestamp (Kafka's
    /// MAX_TIMESTAMP).
    MaxTimestamp,
}

/// An answer of `list_offset`: the offset, the timestamp of the record
/// found (-1 for earliest/latest), and the leader epoch of that offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedOffset {
    pub offset: i64,
    pub timestamp_ms: i64,
    pub leader_epoch: i32,
}

/// One partition of a batch fetch (what Kafka consumers send).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionFetch {
    pub tp: TopicPartition,
    pub offset: i64,
    /// The most batch bytes for this partition; one batch is returned even
    /// if it is larger, when it is the first data of the answer.
    pub max_bytes: usize,
    /// The leader epoch the client believes current (KIP-320): older is
    /// FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH. `None` skips it.
    pub current_leader_epoch: Option<i32>,
}

/// A fetch of whole batches over several partitions, with Kafka's long
/// poll: answer once `min_bytes` are available or `max_wait` has passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchFetch {
    pub partitions: Vec<PartitionFetch>,
    pub isolation: Isolation,
    /// The client's cap on the whole answer; the cluster's
    /// `fetch_max_bytes` caps it further.
    pub max_bytes: usize,
    pub min_bytes: usize,
    pub max_wait: Duration,
    /// The broker the request was addressed to: partitions it does not
    /// lead answer NOT_LEADER_OR_FOLLOWER. `None` reads from the leader.
    pub broker: Option<BrokerId>,
}

/// One whole batch of a fetch answer, as the log stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchedBatch {
    /// A producer's batch kept as produced (an MKB1 version 2 frame): its
    /// header fields and its record block, compressed or not, as stored.
    /// Nothing of the block was decompressed or decoded: a Kafka fetch sends
    /// it behind a header built from these fields.
    Block(mk_log::block::BlockBatch),
    /// A batch whose records the broker built itself (an MKB1 version 1
    /// frame: JSON-TCP produce, transaction markers, compaction survivors),
    /// decoded so an adapter can encode it.
    Records {
        header: mk_log::BatchHeader,
        batch: RecordBatch,
    },
}

impl FetchedBatch {
    /// Reads a located frame outside the partition lock: a version 2 frame
    /// is only sliced, a version 1 frame decoded.
    pub(crate) fn of(stored: &mk_log::StoredBatch) -> Result<Self> {
        Ok(match stored.block()? {
            Some(block) => FetchedBatch::Block(block),
            None => FetchedBatch::Records {
                header: stored.header,
                batch: stored.decode()?,
            },
        })
    }

    pub fn base_offset(&self) -> i64 {
        self.header().base_offset
    }
    pub fn next_offset(&self) -> i64 {
        self.header().next_offset()
    }
    pub fn control(&self) -> Option<mk_log::ControlType> {
        self.header().control
    }
    pub fn is_control(&self) -> bool {
        self.control().is_some()
    }

    /// The stored header fields every version shares.
    pub fn header(&self) -> mk_log::BatchHeader {
        match self {
            FetchedBatch::Block(b) => b.header(),
            FetchedBatch::Records { header, .. } => *header,
        }
    }

    /// The number of data records (0 for a transaction marker), from the
    /// header.
    pub fn data_records(&self) -> u64 {
        match self {
            _ if self.is_control() => 0,
            FetchedBatch::Block(b) => u64::from(b.header().record_count),
            FetchedBatch::Records { batch, .. } => batch.records().len() as u64,
        }
    }

    /// The batch's records, decoding (and decompressing, bounded) a block:
    /// for readers that need records, not for the Kafka fetch path.
    pub fn records(&self) -> Result<RecordBatch> {
        match self {
            FetchedBatch::Block(b) => Ok(b.records(mk_log::codec::MAX_UNCOMPRESSED_READ_BYTES)?),
            FetchedBatch::Records { batch, .. } => Ok(batch.clone()),
        }
    }
}

/// The answer for one partition of a batch fetch. On error the offsets are
/// what is known (-1 when the partition could not be read at all).
#[derive(Debug)]
pub struct PartitionBatches {
    pub tp: TopicPartition,
    pub error: Option<ClusterError>,
    /// Whole batches in offset order: data batches visible under the
    /// isolation level, and transaction markers (so a reader's position
    /// always moves past them). The first batch may start before the
    /// fetch offset; readers skip records below it.
    pub batches: Vec<FetchedBatch>,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    /// Stored size of the batches returned.
    pub bytes: usize,
}

impl PartitionBatches {
    fn failed(tp: TopicPartition, e: ClusterError) -> Self {
        let log_start = match &e {
            ClusterError::OffsetOutOfRange { log_start, .. } => *log_start,
            _ => -1,
        };
        Self {
            tp,
            error: Some(e),
            batches: Vec::new(),
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: log_start,
            bytes: 0,
        }
    }
}

impl DataPath<'_> {
    /// The partition a produce request without an explicit partition goes
    /// to: the one `partitioner::partition_for` gives its keyed records
    /// (keyless records travel with them), or 0 when no record has a key.
    /// A batch is appended whole to one partition, so a batch whose keys
    /// map to different partitions is INVALID_REQUEST rather than split
    /// behind the client's back: it must name a partition or send one
    /// request per partition. The partition count is only looked up when
    /// some record has a key, so a keyless request fails exactly as it did
    /// before routing existed.
    pub fn route_produce(
        self,
        topic: &str,
        partition: Option<u32>,
        records: &[ProduceEntry],
    ) -> Result<TopicPartition> {
        let mut keys = records.iter().filter_map(|r| r.key.as_deref()).peekable();
        let chosen = match (partition, keys.peek()) {
            (Some(p), _) => p,
            (None, None) => crate::partitioner::partition_for(None, None, 1),
            (None, Some(_)) => {
                let count = self.cluster.topics().partition_count(topic)?;
                let mut chosen: Option<u32> = None;
                for key in keys {
                    let p = crate::partitioner::partition_for(None, Some(key), count);
                    match chosen {
                        Some(c) if c != p => {
                            return Err(ClusterError::InvalidRequest(format!(
                                "the keys of this batch map to partitions {c} and {p} of \
                                 {topic:?}; a batch goes to one partition, so name a \
                                 partition or send one request per partition"
                            )));
                        }
                        _ => chosen = Some(p),
                    }
                }
                chosen.unwrap_or(0)
            }
        };
        Ok(TopicPartition::new(topic, chosen))
    }

    /// Appends the request's records as one batch and waits for its ack mode.
    pub async fn produce(self, req: ProduceRequest) -> Result<ProduceResponse> {
        let mut answers = self.produce_group(vec![req]).await;
        answers.pop().expect("one answer per request")
    }

    /// Produce requests that arrived together on one connection (a
    /// pipelined client), answered one each, in order, exactly as
    /// consecutive `produce` calls would answer them. Consecutive requests
    /// to one partition with one ack mode and no producer id are appended
    /// under one partition lock in one write (`submit_append_group`), and
    /// only then are the acknowledgements awaited.
    pub async fn produce_group(self, reqs: Vec<ProduceRequest>) -> Vec<Result<ProduceResponse>> {
        let now = self.cluster.clock.now_ms();
        let mut submitted: Vec<(u32, usize, Option<Result<PendingAppend>>)> =
            Vec::with_capacity(reqs.len());
        let mut reqs = reqs.into_iter().peekable();
        while let Some(first) = reqs.next() {
            let (tp, acks) = (first.tp.clone(), first.acks);
            let mut run = vec![first];
            if run[0].producer.is_none() {
                while let Some(next) =
                    reqs.next_if(|r| r.producer.is_none() && r.tp == tp && r.acks == acks)
                {
                    run.push(next);
                }
            }
            let mut batches = Vec::with_capacity(run.len());
            let mut places = Vec::with_capacity(run.len());
            for req in run {
                let count = req.records.len();
                match batch_of(req.records, req.producer, now) {
                    Ok(b) => {
                        places.push(submitted.len());
                        batches.push(b);
                        submitted.push((tp.partition, count, None));
                    }
                    Err(e) => submitted.push((tp.partition, count, Some(Err(e)))),
                }
            }
            for (i, p) in places
                .into_iter()
                .zip(self.submit_append_group(&tp, batches, acks))
            {
                submitted[i].2 = Some(p);
            }
        }
        let mut answers = Vec::with_capacity(submitted.len());
        for (partition, count, pending) in submitted {
            let pending = pending.expect("every request is submitted or refused");
            answers.push(match pending {
                Ok(p) => p.wait().await.map(|r| ProduceResponse {
                    partition,
                    base_offset: r.base_offset,
                    count,
                    duplicate: r.duplicate,
                }),
                Err(e) => Err(e),
            });
        }
        answers
    }

    /// ListOffsets: earliest, latest (HW) or by timestamp.
    pub fn list_offsets(self, tp: &TopicPartition, spec: OffsetSpec) -> Result<Option<i64>> {
        Ok(self
            .list_offset(tp, spec, Isolation::ReadUncommitted)?
            .map(|l| l.offset))
    }

    /// ListOffsets as Kafka answers it: earliest (log start), latest (the
    /// HW, or the LSO for read_committed), the first record at or after a
    /// timestamp, or the record with the largest timestamp — searches see
    /// only what the isolation level makes visible. `None` when no record
    /// matches.
    pub fn list_offset(
        self,
        tp: &TopicPartition,
        spec: OffsetSpec,
        isolation: Isolation,
    ) -> Result<Option<ListedOffset>> {
        self.cluster.read_partition(tp, |set| {
            let log = set.leader_log();
            let hw = set.high_watermark();
            let end = match isolation {
                Isolation::ReadUncommitted => hw,
                Isolation::ReadCommitted => {
                    mk_txn::last_stable_offset(hw, log.first_unstable_offset())
                }
            };
            let found = match spec {
                OffsetSpec::Earliest => Some((log.log_start_offset(), -1)),
                OffsetSpec::Latest => Some((end, -1)),
                OffsetSpec::Timestamp(ts) => {
                    log.record_for_timestamp(ts)?.filter(|(o, _)| *o < end)
                }
                OffsetSpec::MaxTimestamp => log.max_timestamp_record(end)?,
            };
            Ok(found.map(|(offset, timestamp_ms)| ListedOffset {
                offset,
                timestamp_ms,
                leader_epoch: epoch_of(set, offset),
            }))
        })
    }

    /// KIP-279's question, asked by Kafka clients after a leader change
    /// (KIP-320): the largest epoch <= `epoch` the leader knows and the end
    /// offset of that epoch. `None` if the leader knows no such epoch.
    /// `current_leader_epoch` is checked like a fetch's.
    pub fn end_offset_for_epoch(
        self,
        tp: &TopicPartition,
        epoch: i32,
        current_leader_epoch: Option<i32>,
    ) -> Result<Option<mk_replication::EpochEndOffset>> {
        self.cluster.read_partition(tp, |set| {
            check_epoch(set, current_leader_epoch)?;
            Ok(set.end_offset_for_epoch(epoch))
        })
    }

    /// A fetch of whole batches over several partitions with Kafka's long
    /// poll (see [`BatchFetch`]). Waiting is woken by whatever moves a
    /// partition's visible end; an error on any partition answers at once.
    pub async fn fetch_batches(self, req: &BatchFetch) -> Result<Vec<PartitionBatches>> {
        self.cluster.check_running()?;
        let start = tokio::time::Instant::now();
        let deadline = start
            .checked_add(req.max_wait)
            .unwrap_or_else(|| start + Duration::from_secs(365 * 24 * 3600));
        let budget = req
            .max_bytes
            .min(usize::try_from(self.cluster.config.fetch_max_bytes).unwrap_or(usize::MAX))
            .max(1);
        loop {
            let slots: Vec<Arc<PartitionSlot>> = req
                .partitions
                .iter()
                .filter_map(|p| self.cluster.slot(&p.tp).ok())
                .collect();
            // Listen before reading, so a move between the read and the
            // wait is not missed.
            let mut waits: Vec<Pin<Box<tokio::sync::futures::Notified<'_>>>> = slots
                .iter()
                .map(|s| Box::pin(s.hw_moved.notified()))
                .collect();
            for w in &mut waits {
                w.as_mut().enable();
            }
            let results = self.read_batches_once(req, budget)?;
            let bytes: usize = results.iter().map(|r| r.bytes).sum();
            let errored = results.iter().any(|r| r.error.is_some());
            if bytes >= req.min_bytes.max(1)
                || errored
                || waits.is_empty()
                || tokio::time::Instant::now() >= deadline
            {
                return Ok(results);
            }
            let any_moved = std::future::poll_fn(|cx| {
                for w in waits.iter_mut() {
                    if w.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(());
                    }
                }
                Poll::Pending
            });
            tokio::select! {
                _ = any_moved => {}
                _ = tokio::time::sleep_until(deadline) => return self.read_batches_once(req, budget),
                _ = self.cluster.shutdown.cancelled() => return self.read_batches_once(req, budget),
            }
        }
    }

    /// One pass over the partitions of a batch fetch, in request order,
    /// sharing the byte budget (Kafka's KIP-74 rule: the first batch of the
    /// first partition with data is returned even if it exceeds a limit).
    fn read_batches_once(self, req: &BatchFetch, budget: usize) -> Result<Vec<PartitionBatches>> {
        self.cluster.check_running()?;
        let mut left = budget;
        let mut out = Vec::with_capacity(req.partitions.len());
        for p in &req.partitions {
            let first = left == budget;
            let r = self
                .read_partition_batches(p, req.isolation, left, first, req.broker)
                .unwrap_or_else(|e| PartitionBatches::failed(p.tp.clone(), e));
            left = left.saturating_sub(r.bytes);
            out.push(r);
        }
        Ok(out)
    }

    fn read_partition_batches(
        self,
        p: &PartitionFetch,
        isolation: Isolation,
        budget: usize,
        first: bool,
        broker: Option<BrokerId>,
    ) -> Result<PartitionBatches> {
        if let Some(b) = broker {
            self.cluster.brokers().check_leader(&p.tp, b)?;
        }
        let slot = self.cluster.slot(&p.tp)?;
        // Under the partition lock the stored frames are only located and
        // copied, their headers read. Outside it each frame's CRC is
        // checked once, unless this process wrote it or a fetch checked it
        // before (damage takes the partition offline as a read under the
        // lock would), a producer's batch (version 2) is only sliced into
        // header fields and block: no record is decompressed or decoded.
        // Version 1 frames, whose records the broker encoded, are decoded
        // there.
        let located = self.cluster.read_slot(&slot, |set| {
            check_epoch(set, p.current_leader_epoch)?;
            locate_batches(set, p, isolation, budget, first)
        })?;
        for b in &located.stored {
            let checked = b.check_once().map_err(ClusterError::from);
            self.cluster
                .settle(&slot, crate::health::Access::Read, checked)?;
        }
        let batches = located
            .stored
            .iter()
            .map(FetchedBatch::of)
            .collect::<Result<Vec<_>>>()?;
        let records: u64 = batches.iter().map(FetchedBatch::data_records).sum();
        slot.traffic.fetched(records, located.bytes as u64);
        Ok(PartitionBatches {
            tp: p.tp.clone(),
            error: None,
            batches,
            high_watermark: located.high_watermark,
            last_stable_offset: located.last_stable_offset,
            log_start_offset: located.log_start_offset,
            bytes: located.bytes,
        })
    }
}

/// The stored batches one partition's fetch answers with, located under
/// the partition lock, and the offsets the answer reports.
struct LocatedBatches {
    stored: Vec<mk_log::StoredBatch>,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
    bytes: usize,
}

/// Finds the whole batches a fetch of `p` returns, within `budget` bytes
/// (the first batch of the answer always goes out, KIP-74), skipping the
/// batches of aborted transactions for read_committed readers.
fn locate_batches(
    set: &mk_replication::PartitionReplicaSet,
    p: &PartitionFetch,
    isolation: Isolation,
    budget: usize,
    first: bool,
) -> Result<LocatedBatches> {
    let log = set.leader_log();
    let hw = set.high_watermark();
    let lso = mk_txn::last_stable_offset(hw, log.first_unstable_offset());
    let (log_start, leo) = (log.log_start_offset(), log.leo());
    if p.offset < log_start || p.offset > leo {
        return Err(ClusterError::OffsetOutOfRange {
            offset: p.offset,
            log_start,
            log_end: leo,
        });
    }
    let bound = match isolation {
        Isolation::ReadUncommitted => hw,
        Isolation::ReadCommitted => lso,
    };
    let limit = p.max_bytes.min(budget);
    let mut batches = Vec::new();
    let mut bytes = 0usize;
    let mut next = p.offset;
    // Aborted batches are dropped and do not count; reading goes on past
    // them until something visible is found, so a reader can never be stuck
    // in front of a large aborted transaction. Every round moves `next`
    // forward, so the loop ends at the bound.
    while next < bound {
        let stored = log.locate_batches(next, limit.saturating_sub(bytes).max(1), Some(bound))?;
        let Some(last) = stored.last() else { break };
        next = last.next_offset();
        let aborted = match isolation {
            Isolation::ReadCommitted => log.aborted_transactions(stored[0].base_offset(), next),
            Isolation::ReadUncommitted => Vec::new(),
        };
        let mut kept_any = false;
        for b in stored {
            if mk_txn::is_batch_aborted(&b.header, &aborted) {
                continue;
            }
            let fits = bytes + b.size() <= limit || (first && batches.is_empty());
            if !fits {
                next = bound; // the budget is spent
                break;
            }
            bytes += b.size();
            batches.push(b);
            kept_any = true;
        }
        if kept_any || bytes >= limit {
            break;
        }
    }
    Ok(LocatedBatches {
        stored: batches,
        high_watermark: hw,
        last_stable_offset: lso,
        log_start_offset: log_start,
        bytes,
    })
}

/// Up to `max` records from `offset` below `bound` whose payload bytes stay
/// within `max_bytes` (at least one record), read_committed without the
/// records of aborted transactions. True when a limit stopped the read
/// before the bound. Reading is bounded round by round, so neither a huge
/// `max` nor a long run of aborted records makes one answer large.
fn read_records(
    log: &mk_log::PartitionLog,
    offset: i64,
    max: usize,
    max_bytes: usize,
    bound: i64,
    isolation: Isolation,
) -> Result<(Vec<LogRecord>, bool)> {
    let mut out: Vec<LogRecord> = Vec::new();
    let mut bytes = 0usize;
    let mut next = offset;
    loop {
        let left = max_bytes.saturating_sub(bytes);
        let read = log.fetch_bounded(next, max - out.len(), left.max(1), Some(bound))?;
        let Some(last) = read.records.last().map(|r| r.offset) else {
            return Ok((out, false));
        };
        let kept = match isolation {
            Isolation::ReadUncommitted => read.records,
            Isolation::ReadCommitted => {
                let aborted = log.aborted_transactions(next, last + 1);
                mk_txn::read_committed(read.records, &aborted)
            }
        };
        for r in kept {
            let size = r.record.payload_bytes();
            // The first record of the answer always goes out, so a record
            // larger than the limit cannot stall a reader.
            if !out.is_empty() && bytes.saturating_add(size) > max_bytes {
                return Ok((out, true));
            }
            bytes += size;
            out.push(r);
        }
        next = last + 1;
        if out.len() >= max {
            return Ok((out, true));
        }
        if !read.limited || next >= bound {
            return Ok((out, false));
        }
    }
}

/// KIP-320's check of the leader epoch a client believes current.
fn check_epoch(set: &mk_replication::PartitionReplicaSet, expected: Option<i32>) -> Result<()> {
    let Some(e) = expected.filter(|e| *e >= 0) else {
        return Ok(());
    };
    let current = set.leader_epoch();
    if e < current {
        return Err(LeaderError::FencedEpoch {
            partition: set.topic_partition().clone(),
            requested: e,
            current,
        }
        .into());
    }
    if e > current {
        return Err(LeaderError::UnknownEpoch {
            partition: set.topic_partition().clone(),
            requested: e,
            current,
        }
        .into());
    }
    Ok(())
}

/// The leader epoch under which `offset` was written, from the leader's
/// epoch cache (the current epoch for the log end).
fn epoch_of(set: &mk_replication::PartitionReplicaSet, offset: i64) -> i32 {
    set.epoch_entries(set.leader_id())
        .ok()
        .and_then(|entries| {
            entries
                .iter()
                .rev()
                .find(|e| e.start_offset <= offset)
                .map(|e| e.epoch)
        })
        .unwrap_or_else(|| set.leader_epoch())
}

/// MESSAGE_TOO_LARGE for a batch over the topic's `max.message.bytes`, as
/// Kafka measures it (`RecordBatch::kafka_size_bytes`).
fn check_batch_size(tp: &TopicPartition, batch: &RecordBatch, max_bytes: i64) -> Result<()> {
    let size = batch.kafka_size_bytes();
    if i64::try_from(size).unwrap_or(i64::MAX) > max_bytes {
        return Err(ClusterError::MessageTooLarge(format!(
            "a batch of {size} bytes to {tp} is over the topic's max.message.bytes ({max_bytes})"
        )));
    }
    Ok(())
}
