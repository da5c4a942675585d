//! The in-process Producer (chapter 4): Kafka's default partitioner
//! (murmur2 for keys, a sticky partition for keyless records), a
//! per-partition accumulator bounded by `batch_size`, `linger_ms` and
//! `max_buffer_bytes`, and optional idempotence with per-partition
//! sequences. Order within a partition is the order of `send` calls: a
//! batch is appended synchronously when it is sent, and only the wait for
//! its acknowledgement runs in the background.

use bytes::Bytes;
use mk_cluster::partitioner::partition_for_key;
use mk_cluster::{
    AckMode, AttachedClient, BrokerCluster, Cancelled, ClientError, ClusterError, Header,
    PendingAppend, ProducerIdentity, ProducerInfo, Record, RecordBatch, Result, TopicPartition,
};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::sync::{Notify, oneshot};

/// Producer settings (spec 05).
#[derive(Debug, Clone)]
pub struct ProducerOptions {
    /// A partition's queue is sent once it holds this many bytes.
    pub batch_size: usize,
    /// How long a record may wait for companions before `run_due_flushes`
    /// sends it.
    pub linger_ms: i64,
    /// Budget of queued bytes (estimated as 39 + key + value per record).
    pub max_buffer_bytes: usize,
    pub acks: AckMode,
    /// Idempotent producers get a producer id and stamp sequences; they
    /// require `acks=all`.
    pub idempotent: bool,
    /// The identity name of an idempotent producer: the same name keeps its
    /// id and gets a newer epoch, fencing the previous instance.
    pub name: Option<String>,
}

impl Default for ProducerOptions {
    fn default() -> Self {
        Self {
            batch_size: 16_384,
            linger_ms: 0,
            max_buffer_bytes: 1_048_576,
            acks: AckMode::One,
            idempotent: false,
            name: None,
        }
    }
}

/// Where a sent record landed. Offsets are `None` for acks=0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordMetadata {
    pub topic: String,
    pub partition: u32,
    pub offset: Option<i64>,
    pub base_offset: Option<i64>,
    pub timestamp_ms: i64,
}

/// A record to send.
#[derive(Debug, Clone, Default)]
pub struct ProducerRecord {
    pub topic: String,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<Header>,
    pub timestamp_ms: Option<i64>,
    pub partition: Option<u32>,
}

impl ProducerRecord {
    pub fn new(topic: impl Into<String>, key: Option<Bytes>, value: Option<Bytes>) -> Self {
        Self {
            topic: topic.into(),
            key,
            value,
            ..Self::default()
        }
    }

    pub fn with_partition(mut self, partition: u32) -> Self {
        self.partition = Some(partition);
        self
    }

    pub fn with_headers(mut self, headers: Vec<Header>) -> Self {
        self.headers = headers;
        self
    }

    pub fn with_timestamp(mut self, timestamp_ms: i64) -> Self {
        self.timestamp_ms = Some(timestamp_ms);
        self
    }
}

/// The future of one sent record.
#[derive(Debug)]
pub struct RecordFuture {
    rx: oneshot::Receiver<Result<RecordMetadata>>,
}

impl Future for RecordFuture {
    type Output = Result<RecordMetadata>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx).poll(cx).map(|r| {
            r.unwrap_or_else(|_| {
                Err(ClientError::Cancelled(Cancelled::BeforeAcknowledgement).into())
            })
        })
    }
}

impl RecordFuture {
    /// The outcome if it is already known.
    pub fn try_result(&mut self) -> Option<Result<RecordMetadata>> {
        match self.rx.try_recv() {
            Ok(r) => Some(r),
            Err(oneshot::error::TryRecvError::Empty) => None,
            Err(oneshot::error::TryRecvError::Closed) => {
                Some(Err(ClientError::Cancelled(Cancelled::BeforeSend).into()))
            }
        }
    }
}

type Waiter = oneshot::Sender<Result<RecordMetadata>>;

#[derive(Debug, Default)]
struct Queue {
    records: Vec<Record>,
    waiters: Vec<Waiter>,
    bytes: usize,
    first_enqueued_ms: i64,
    keyless: bool,
}

#[derive(Debug, Default)]
struct State {
    queues: BTreeMap<TopicPartition, Queue>,
    buffered_bytes: usize,
    /// Sticky partition per partition count.
    sticky: HashMap<u32, u32>,
    sequences: HashMap<TopicPartition, i32>,
    registered: std::collections::HashSet<TopicPartition>,
    closed: bool,
}

#[derive(Debug)]
pub(crate) struct ProducerShared {
    cluster: Arc<BrokerCluster>,
    options: ProducerOptions,
    identity: Option<ProducerIdentity>,
    state: Mutex<State>,
    in_flight: AtomicUsize,
    drained: Notify,
}

/// The in-process producer. Cheap to clone; clones share the accumulator.
#[derive(Debug, Clone)]
pub struct Producer {
    shared: Arc<ProducerShared>,
}

/// Bytes a record is charged against the buffer budget (spec 05).
pub fn estimated_size(key: Option<&Bytes>, value: Option<&Bytes>) -> usize {
    39 + key.map_or(0, Bytes::len) + value.map_or(0, Bytes::len)
}

impl Producer {
    pub(crate) fn new(cluster: Arc<BrokerCluster>, options: ProducerOptions) -> Result<Self> {
        cluster.lifecycle().check_running()?;
        if options.batch_size == 0 || options.max_buffer_bytes == 0 {
            return Err(ClusterError::InvalidRequest(
                "batch_size and max_buffer_bytes must be > 0".into(),
            ));
        }
        if options.linger_ms < 0 {
            return Err(ClusterError::InvalidRequest(format!(
                "linger_ms must be >= 0, got {}",
                options.linger_ms
            )));
        }
        if options.idempotent && options.acks != AckMode::All {
            return Err(ClusterError::InvalidRequest(
                "an idempotent producer requires acks=all".into(),
            ));
        }
        let identity = if options.idempotent {
            Some(
                cluster
                    .transactions()
                    .init_producer(options.name.as_deref())?,
            )
        } else {
            None
        };
        let shared = Arc::new(ProducerShared {
            cluster: cluster.clone(),
            options,
            identity,
            state: Mutex::new(State::default()),
            in_flight: AtomicUsize::new(0),
            drained: Notify::new(),
        });
        let attached: Arc<dyn AttachedClient> = shared.clone();
        cluster
            .lifecycle()
            .attach_producer(Arc::downgrade(&attached));
        Ok(Self { shared })
    }

    /// The producer id and epoch of an idempotent producer.
    pub fn identity(&self) -> Option<ProducerIdentity> {
        self.shared.identity
    }

    /// Queues a record and returns the future of its metadata. Fails at once
    /// with UNKNOWN_TOPIC, UNKNOWN_PARTITION or PRODUCER_BUFFER_FULL, or
    /// after close.
    pub fn send(&self, record: ProducerRecord) -> Result<RecordFuture> {
        self.shared.send(record)
    }

    /// Sends every queue whose linger has expired (the explicit step of
    /// spec 00; the server has no in-process producers).
    pub fn run_due_flushes(&self) -> Result<usize> {
        let now = self.shared.cluster.clock().now_ms();
        let linger = self.shared.options.linger_ms;
        self.shared
            .send_where(|q| now - q.first_enqueued_ms >= linger)
    }

    /// Sends everything queued and waits until every sent batch is
    /// acknowledged (or failed).
    pub async fn flush(&self) -> Result<()> {
        self.shared.send_where(|_| true)?;
        self.shared.wait_drained().await;
        Ok(())
    }

    /// Flushes, then refuses further sends.
    pub async fn close(&self) -> Result<()> {
        let r = self.flush().await;
        self.shared.state.lock().expect("producer lock").closed = true;
        r
    }

    /// Simulates a crash: queued records are dropped (their futures report
    /// cancellation) and the producer refuses further sends.
    pub fn crash(&self) {
        self.shared.crash();
    }

    /// Bytes currently queued.
    pub fn buffered_bytes(&self) -> usize {
        self.shared
            .state
            .lock()
            .expect("producer lock")
            .buffered_bytes
    }
}

impl ProducerShared {
    fn send(self: &Arc<Self>, record: ProducerRecord) -> Result<RecordFuture> {
        let cluster = &self.cluster;
        cluster.lifecycle().check_running()?;
        let count = cluster.topics().partition_count(&record.topic)?;
        if let Some(p) = record.partition
            && p >= count
        {
            return Err(ClusterError::UnknownPartition {
                partition: TopicPartition::new(&record.topic, p),
                partitions: count,
            });
        }
        let size = estimated_size(record.key.as_ref(), record.value.as_ref());
        let now = cluster.clock().now_ms();
        let (tx, rx) = oneshot::channel();
        let full = {
            let mut st = self.state.lock().expect("producer lock");
            if st.closed {
                return Err(ClusterError::InvalidRequest(
                    "the producer is closed".into(),
                ));
            }
            if st.buffered_bytes + size > self.options.max_buffer_bytes {
                return Err(ClientError::BufferFull {
                    queued: st.buffered_bytes,
                    size,
                    max: self.options.max_buffer_bytes,
                }
                .into());
            }
            let partition = match (record.partition, &record.key) {
                (Some(p), _) => p,
                (None, Some(k)) => partition_for_key(k, count),
                (None, None) => *st.sticky.entry(count).or_insert(0),
            };
            let tp = TopicPartition::new(record.topic.clone(), partition);
            st.buffered_bytes += size;
            let q = st.queues.entry(tp.clone()).or_default();
            if q.records.is_empty() {
                q.first_enqueued_ms = now;
            }
            q.keyless |= record.key.is_none() && record.partition.is_none();
            q.records.push(
                Record::new(record.key, record.value, record.timestamp_ms.unwrap_or(now))
                    .with_headers(record.headers),
            );
            q.waiters.push(tx);
            q.bytes += size;
            (q.bytes >= self.options.batch_size).then_some(tp)
        };
        if let Some(tp) = full {
            self.send_partition(&tp)?;
        }
        Ok(RecordFuture { rx })
    }

    fn send_where(self: &Arc<Self>, due: impl Fn(&Queue) -> bool) -> Result<usize> {
        let ready: Vec<TopicPartition> = {
            let st = self.state.lock().expect("producer lock");
            st.queues
                .iter()
                .filter(|(_, q)| !q.records.is_empty() && due(q))
                .map(|(tp, _)| tp.clone())
                .collect()
        };
        for tp in &ready {
            self.send_partition(tp)?;
        }
        Ok(ready.len())
    }

    /// Takes one partition's queue and appends it as one batch. The append
    /// happens under the producer lock, so two senders cannot reorder
    /// batches of one partition.
    fn send_partition(self: &Arc<Self>, tp: &TopicPartition) -> Result<()> {
        let mut st = self.state.lock().expect("producer lock");
        let Some(q) = st.queues.remove(tp) else {
            return Ok(());
        };
        if q.records.is_empty() {
            return Ok(());
        }
        st.buffered_bytes -= q.bytes;
        if q.keyless {
            let count = self
                .cluster
                .topics()
                .partition_count(&tp.topic)
                .unwrap_or(1)
                .max(1);
            let s = st.sticky.entry(count).or_insert(0);
            *s = (*s + 1) % count;
        }
        // A queue is bounded by the batch size in bytes, far below 2^31 records.
        let n = i32::try_from(q.records.len()).expect("a batch holds fewer than 2^31 records");
        let timestamps: Vec<i64> = q.records.iter().map(|r| r.timestamp_ms).collect();
        let mut batch = match RecordBatch::new(q.records) {
            Ok(b) => b,
            Err(e) => {
                let e = ClusterError::from(e);
                fail_all(q.waiters, &e);
                return Err(e);
            }
        };
        if let Some(id) = self.identity {
            if let Err(e) = self.register(&mut st, tp, id) {
                fail_all(q.waiters, &e);
                return Err(e);
            }
            let seq = *st.sequences.get(tp).unwrap_or(&0);
            batch = batch.with_producer(ProducerInfo {
                producer_id: id.producer_id,
                producer_epoch: id.epoch,
                base_sequence: seq,
            });
        }
        let pending = match self
            .cluster
            .data()
            .submit_append(tp, batch, self.options.acks, None)
        {
            Ok(p) => p,
            Err(e) => {
                let msg = e.to_string();
                let code = e.code();
                for w in q.waiters {
                    let _ = w.send(Err(clone_error(code, &msg)));
                }
                return Err(e);
            }
        };
        if self.identity.is_some() {
            let seq = st.sequences.entry(tp.clone()).or_insert(0);
            *seq = seq.wrapping_add(n) & i32::MAX;
        }
        drop(st);
        self.finish(tp.clone(), q.waiters, timestamps, pending)
    }

    /// Registers the producer's identity for `tp` the first time it writes
    /// there (the core's transaction coordinator checks appends against it).
    fn register(&self, st: &mut State, tp: &TopicPartition, id: ProducerIdentity) -> Result<()> {
        if st.registered.insert(tp.clone())
            && let Err(e) =
                self.cluster
                    .transactions()
                    .register_producer(tp, id.producer_id, id.epoch)
        {
            st.registered.remove(tp);
            return Err(e);
        }
        Ok(())
    }

    /// Answers the batch's waiters once the append completes: in a task of
    /// the cluster's for acks=all, at once for acks 0/1.
    fn finish(
        self: &Arc<Self>,
        tp: TopicPartition,
        waiters: Vec<Waiter>,
        timestamps: Vec<i64>,
        pending: PendingAppend,
    ) -> Result<()> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let this = self.clone();
        let finish = async move {
            let result = pending.wait().await;
            resolve(&tp, waiters, &timestamps, result);
            this.in_flight.fetch_sub(1, Ordering::SeqCst);
            this.drained.notify_waiters();
        };
        if self.options.acks == AckMode::All {
            let spawned = self.cluster.lifecycle().spawn_owned(finish);
            if let Err(e) = spawned {
                self.in_flight.fetch_sub(1, Ordering::SeqCst);
                return Err(e);
            }
        } else {
            // acks 0/1 are already complete: resolve inline.
            futures_now(finish);
        }
        Ok(())
    }

    async fn wait_drained(&self) {
        loop {
            let notified = self.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.in_flight.load(Ordering::SeqCst) == 0 {
                return;
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = self.cluster.lifecycle().closing() => return,
            }
        }
    }

    pub(crate) fn crash(&self) {
        let mut st = self.state.lock().expect("producer lock");
        st.closed = true;
        st.queues.clear();
        st.buffered_bytes = 0;
    }
}

impl AttachedClient for ProducerShared {
    /// Close as part of the cluster's close: send what is queued.
    fn close_with_cluster(self: Arc<Self>) {
        let _ = self.send_where(|_| true);
        self.state.lock().expect("producer lock").closed = true;
    }

    fn crash_with_cluster(&self) {
        self.crash();
    }
}

/// Polls a future that is known to be ready (an acks=0/1 completion).
fn futures_now(fut: impl Future<Output = ()>) {
    let waker = std::task::Waker::noop();
    let mut cx = Context::from_waker(waker);
    let mut fut = std::pin::pin!(fut);
    let polled = fut.as_mut().poll(&mut cx);
    debug_assert!(polled.is_ready(), "acks 0/1 completions are immediate");
}

fn resolve(
    tp: &TopicPartition,
    waiters: Vec<Waiter>,
    timestamps: &[i64],
    result: Result<mk_cluster::ProduceResult>,
) {
    match result {
        Ok(r) => {
            for (i, w) in waiters.into_iter().enumerate() {
                let _ = w.send(Ok(RecordMetadata {
                    topic: tp.topic.clone(),
                    partition: tp.partition,
                    offset: r.base_offset.map(|b| b + i as i64),
                    base_offset: r.base_offset,
                    timestamp_ms: timestamps[i],
                }));
            }
        }
        Err(e) => fail_all(waiters, &e),
    }
}

fn fail_all(waiters: Vec<Waiter>, e: &ClusterError) {
    let (code, msg) = (e.code(), e.to_string());
    for w in waiters {
        let _ = w.send(Err(clone_error(code, &msg)));
    }
}

/// Every record of a failed batch gets "the same error": same code, same
/// message.
fn clone_error(code: mk_cluster::ErrorCode, msg: &str) -> ClusterError {
    ClusterError::Replayed {
        code,
        message: msg.to_string(),
    }
}
