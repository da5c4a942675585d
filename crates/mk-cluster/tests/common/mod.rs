//! Shared fixtures of the transaction tests of the core: a broker on a
//! temporary directory with a manual clock that can crash and reopen, and a
//! Kafka transactional producer as the core sees it (its identity and its
//! own sequence numbers, sending its own batches). Also the small helpers
//! every core test file shares.

#![allow(dead_code)]

use bytes::Bytes;
use mk_cluster::*;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

pub fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

pub fn tp(t: &str, p: u32) -> TopicPartition {
    TopicPartition::new(t, p)
}

/// A topic config change setting `key` to `value`.
pub fn set(key: &str, value: &str) -> ConfigChange {
    ConfigChange::Set {
        key: key.into(),
        value: value.into(),
    }
}

/// Sets `changes` (key, value) on `topic`'s config; they must be taken.
pub fn alter_topic(c: &BrokerCluster, topic: &str, changes: &[(&str, &str)]) {
    let changes: Vec<ConfigChange> = changes.iter().map(|(k, v)| set(k, v)).collect();
    c.topics().alter_config(topic, &changes, false).unwrap();
}

/// The transaction timeout the transaction tests' producers ask for.
pub const TIMEOUT_MS: i32 = 60_000;

/// The code of the error `r` must be.
pub fn code<T: std::fmt::Debug>(r: Result<T>) -> ErrorCode {
    r.unwrap_err().code()
}

/// Appends each of `values` to `p` as a batch of its own (acks=1).
pub async fn append_each(c: &BrokerCluster, p: &TopicPartition, values: &[&str]) {
    for v in values {
        let batch = RecordBatch::new(vec![Record::new(None, Some(b(v)), 1_000)]).unwrap();
        c.data().append_batch(p, batch, AckMode::One).await.unwrap();
    }
}

/// Brokers 1, 2 and 3 and topic `t` (`partitions` of `rf` replicas), with
/// `values` appended one by one to `t-0`, which is returned.
pub async fn three_brokers(partitions: u32, rf: usize, values: &[&str]) -> (Node, TopicPartition) {
    let node = Node::new(|c| c.broker_ids = vec![1, 2, 3]);
    let p0 = tp("t", 0);
    node.c().topics().create("t", partitions, rf).unwrap();
    append_each(node.c(), &p0, values).await;
    (node, p0)
}

/// `single()` and a first session of transactional id `tx`.
pub async fn single_with_tx() -> (Node, Client) {
    let node = single();
    let s = Client::init(node.c(), "tx", TIMEOUT_MS).await.unwrap();
    (node, s)
}

/// `single_with_tx()` and partitions `out-0` and `in-0`, after a
/// TxnOffsetCommit of the first protocol (`in-0` at `offset`) before
/// AddOffsetsToTxn is refused as abortable (TRANSACTION_ABORTABLE).
pub async fn offsets_need_add_offsets(
    offset: i64,
) -> (Node, Client, TopicPartition, TopicPartition) {
    let (node, s) = single_with_tx().await;
    let (out, input) = (tp("out", 0), tp("in", 0));
    let commit = s.offset_commit("g", &[(input.clone(), offset)]);
    assert_eq!(
        code(node.c().transactions().commit_offsets(&commit)),
        ErrorCode::TransactionAbortable
    );
    (node, s, out, input)
}

/// The state of transactional id `id`, which must exist.
pub fn txn_state(c: &BrokerCluster, id: &str) -> TxnState {
    c.transactions().describe(id).unwrap().unwrap().state
}

/// A producer whose session was fenced appends nothing to `tp` and can
/// neither add it to a transaction nor end one.
pub async fn assert_fenced(c: &BrokerCluster, zombie: &mut Client, tp: &TopicPartition) {
    let leo = c.data().log_end_offset(tp).unwrap();
    assert_eq!(
        code(zombie.produce(c, tp, &["late"]).await),
        ErrorCode::InvalidProducerEpoch
    );
    assert_eq!(
        code(zombie.add(c, std::slice::from_ref(tp)).await),
        ErrorCode::ProducerFenced
    );
    assert_eq!(code(zombie.end(c, true).await), ErrorCode::ProducerFenced);
    assert_eq!(c.data().log_end_offset(tp).unwrap(), leo);
}

/// One broker with `out` (3 partitions) and `in` (1 partition).
pub fn single() -> Node {
    let node = Node::new(|_| {});
    node.c().topics().create("out", 3, 1).unwrap();
    node.c().topics().create("in", 1, 1).unwrap();
    node
}

/// A producer's block of `records` compressed with `codec`.
pub fn produced_block(records: &[Record], codec: block::Codec) -> block::BlockBatch {
    let deltas: Vec<i32> = (0..i32::try_from(records.len()).unwrap()).collect();
    let first = records[0].timestamp_ms;
    let body = mk_log::block_records::encode_records(records, &deltas, first);
    kept_block(
        codec,
        u32::try_from(records.len()).unwrap(),
        (first, records.iter().map(|r| r.timestamp_ms).max().unwrap()),
        mk_log::block_records::compress(block::Compression::of(codec), &body).unwrap(),
    )
}

/// A kept block of `record_count` records in `codec` (base offset 0, no
/// producer), with its first and max timestamps, holding `block` as is.
pub fn kept_block(
    codec: block::Codec,
    record_count: u32,
    (first_timestamp, max_timestamp): (i64, i64),
    block: bytes::Bytes,
) -> block::BlockBatch {
    block::BlockBatch::new(block::BlockParts {
        base_offset: 0,
        leader_epoch: 0,
        producer: ProducerInfo::NONE,
        transactional_id: None,
        control: None,
        last_offset_delta: i32::try_from(record_count).unwrap() - 1,
        record_count,
        codec,
        timestamp_type: block::TimestampType::CreateTime,
        first_timestamp,
        max_timestamp,
        block,
    })
    .unwrap()
}

/// A cluster on `dir` with `clock`, its configuration changed by `f`.
pub fn open_with(
    dir: &std::path::Path,
    clock: &ManualClock,
    f: impl FnOnce(MiniKafkaConfig) -> MiniKafkaConfig,
) -> Arc<BrokerCluster> {
    BrokerCluster::open_with_clock(f(MiniKafkaConfig::new(dir)), Arc::new(clock.clone())).unwrap()
}

/// A temporary directory and a manual clock at 1000 ms: a broker process
/// before it opens.
pub fn dir_and_clock() -> (tempfile::TempDir, ManualClock) {
    (tempfile::tempdir().unwrap(), ManualClock::new(1_000))
}

/// `dir_and_clock` with the default cluster open on them.
pub fn fresh_cluster() -> (tempfile::TempDir, ManualClock, Arc<BrokerCluster>) {
    let (dir, clock) = dir_and_clock();
    let c = open(dir.path(), &clock);
    (dir, clock, c)
}

/// A temporary directory, a manual clock at 1000 ms and a cluster opened on
/// them with the config `f` makes.
pub fn fresh_cluster_with(
    f: impl FnOnce(MiniKafkaConfig) -> MiniKafkaConfig,
) -> (tempfile::TempDir, ManualClock, Arc<BrokerCluster>) {
    let (dir, clock) = dir_and_clock();
    let c = open_with(dir.path(), &clock, f);
    (dir, clock, c)
}

/// `fresh_cluster` with topic `topic` (one partition, one replica); its
/// partition is returned too.
pub fn fresh_topic(
    topic: &str,
) -> (
    tempfile::TempDir,
    ManualClock,
    Arc<BrokerCluster>,
    TopicPartition,
) {
    let (dir, clock, c) = fresh_cluster();
    c.topics().create(topic, 1, 1).unwrap();
    (dir, clock, c, tp(topic, 0))
}

/// Closes `c` cleanly and opens its directory again with the config `f`
/// makes: a restart.
pub async fn restart_with(
    c: Arc<BrokerCluster>,
    dir: &std::path::Path,
    clock: &ManualClock,
    f: impl FnOnce(MiniKafkaConfig) -> MiniKafkaConfig,
) -> Arc<BrokerCluster> {
    c.lifecycle().close().await.unwrap();
    drop(c);
    open_with(dir, clock, f)
}

/// A cluster on a temporary directory whose manual clock stands at
/// 10,000,000 ms, with topic `topic` (one partition) configured by
/// `changes`; its partition is returned too.
pub fn configured_topic(
    topic: &str,
    changes: &[(&str, &str)],
) -> (
    tempfile::TempDir,
    ManualClock,
    Arc<BrokerCluster>,
    TopicPartition,
) {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(10_000_000);
    let c = open(dir.path(), &clock);
    c.topics().create(topic, 1, 1).unwrap();
    alter_topic(&c, topic, changes);
    (dir, clock, c, tp(topic, 0))
}

/// Appends stored block `b` to `p` (acks=1).
pub async fn append_block(
    c: &BrokerCluster,
    p: &TopicPartition,
    b: block::BlockBatch,
) -> Result<ProduceResult> {
    c.data()
        .append_batch(p, RecordBatch::from_block(b).unwrap(), AckMode::One)
        .await
}

/// Appends `value` (timestamp `ts`) to `p` as a batch of its own, acks=1.
pub async fn append_value(
    c: &BrokerCluster,
    p: &TopicPartition,
    value: &str,
    ts: i64,
) -> Result<ProduceResult> {
    let batch = RecordBatch::new(vec![Record::new(None, Some(b(value)), ts)]).unwrap();
    c.data().append_batch(p, batch, AckMode::One).await
}

/// The teaching API's send of `value` to partition 0 of `topic` in the
/// transaction `h`.
pub async fn send_value(c: &BrokerCluster, h: &TxnHandle, topic: &str, value: &str) {
    c.transactions()
        .send(h, topic, None, Some(b(value)), Some(0))
        .await
        .unwrap();
}

/// One committed transaction of `tx` holding `value` in partition 0 of
/// `topic`; returns its handle.
pub async fn commit_value(c: &BrokerCluster, topic: &str, value: &str) -> TxnHandle {
    let h = c.transactions().begin("tx").await.unwrap();
    send_value(c, &h, topic, value).await;
    c.transactions().commit(&h).await.unwrap();
    h
}

/// A cluster on `dir` with `clock` and the default configuration.
pub fn open(dir: &std::path::Path, clock: &ManualClock) -> Arc<BrokerCluster> {
    open_with(dir, clock, |c| c)
}

/// One broker process: its directory, clock and configuration survive a
/// crash; the cluster object does not.
pub struct Node {
    pub dir: tempfile::TempDir,
    pub clock: ManualClock,
    pub config: MiniKafkaConfig,
    cluster: Option<Arc<BrokerCluster>>,
}

impl Node {
    pub fn new(f: impl FnOnce(&mut MiniKafkaConfig)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut config = MiniKafkaConfig::new(dir.path());
        f(&mut config);
        let mut node = Self {
            dir,
            clock: ManualClock::new(1_000_000),
            config,
            cluster: None,
        };
        node.open();
        node
    }

    pub fn open(&mut self) {
        let c = BrokerCluster::open_with_clock(self.config.clone(), Arc::new(self.clock.clone()))
            .unwrap();
        self.cluster = Some(c);
    }

    pub fn c(&self) -> &Arc<BrokerCluster> {
        self.cluster.as_ref().expect("the broker is open")
    }

    /// Kills the process (no checkpoint, no snapshot) and starts it again.
    pub fn crash_and_reopen(&mut self) {
        let c = self.cluster.take().expect("the broker is open");
        c.lifecycle().crash();
        drop(c);
        self.open();
    }

    /// Kills the process, runs `meddle` (a change to the files a crash
    /// could leave), and starts it again.
    pub fn crash_and_reopen_with(&mut self, meddle: impl FnOnce()) {
        let c = self.cluster.take().expect("the broker is open");
        c.lifecycle().crash();
        drop(c);
        meddle();
        self.open();
    }

    pub async fn close_and_reopen(&mut self) {
        let c = self.cluster.take().expect("the broker is open");
        c.lifecycle().close().await.unwrap();
        drop(c);
        self.open();
    }
}

/// Polls `fut` to completion while running a replication step between
/// polls, so acks=all waits of a replicated partition resolve (what the
/// server's replication driver does) without sleeping.
pub async fn replicating<T>(c: &BrokerCluster, fut: impl Future<Output = T>) -> T {
    tokio::pin!(fut);
    loop {
        tokio::select! {
            biased;
            r = &mut fut => return r,
            () = tokio::task::yield_now() => c.steps().replicate_all_once().unwrap(),
        }
    }
}

/// A Kafka transactional producer: what InitProducerId gave it and the
/// next sequence of each partition, as the client keeps them.
#[derive(Debug, Clone)]
pub struct Client {
    pub id: String,
    pub pid: i64,
    pub epoch: i32,
    pub seqs: BTreeMap<TopicPartition, i32>,
}

impl Client {
    pub async fn init(c: &BrokerCluster, id: &str, timeout_ms: i32) -> Result<Client> {
        let identity = c
            .transactions()
            .init_transactional_producer(id, timeout_ms, None)
            .await?;
        Ok(Client {
            id: id.to_string(),
            pid: identity.producer_id,
            epoch: identity.epoch,
            seqs: BTreeMap::new(),
        })
    }

    /// The producer's next batch for `tp`, without reserving its sequence.
    pub fn batch(&self, tp: &TopicPartition, values: &[&str]) -> RecordBatch {
        let seq = self.seqs.get(tp).copied().unwrap_or(0);
        RecordBatch::new(
            values
                .iter()
                .map(|v| Record::new(None, Some(b(v)), 1_000))
                .collect(),
        )
        .unwrap()
        .with_producer(ProducerInfo {
            producer_id: self.pid,
            producer_epoch: self.epoch,
            base_sequence: seq,
        })
        .with_transactional_id(&self.id)
    }

    /// A transactional Produce (acks=all) of `values` to `tp`; the sequence
    /// advances only when the broker took the batch.
    pub async fn produce(
        &mut self,
        c: &BrokerCluster,
        tp: &TopicPartition,
        values: &[&str],
    ) -> Result<ProduceResult> {
        self.produce_as(c, tp, values, TxnVersion::V1).await
    }

    /// `produce` as a client of the transaction protocol `version` sends it
    /// (V2: Produce v12, the batch joins the transaction by itself).
    pub async fn produce_as(
        &mut self,
        c: &BrokerCluster,
        tp: &TopicPartition,
        values: &[&str],
        version: TxnVersion,
    ) -> Result<ProduceResult> {
        let batch = self.batch(tp, values);
        let r = c
            .data()
            .submit_append_as(tp, batch, AckMode::All, None, version)?
            .wait()
            .await?;
        if !r.duplicate {
            *self.seqs.entry(tp.clone()).or_insert(0) += i32::try_from(values.len()).unwrap();
        }
        Ok(r)
    }

    /// AddPartitionsToTxn for `tps`; any per-partition error is returned.
    pub async fn add(&self, c: &BrokerCluster, tps: &[TopicPartition]) -> Result<()> {
        for (_, r) in c
            .transactions()
            .add_partitions(&self.id, self.pid, self.epoch, tps)
            .await?
        {
            r?;
        }
        Ok(())
    }

    /// AddOffsetsToTxn and a TxnOffsetCommit without group membership.
    pub fn stage(
        &self,
        c: &BrokerCluster,
        group: &str,
        offsets: &[(TopicPartition, i64)],
    ) -> Result<()> {
        c.transactions()
            .add_offsets(&self.id, self.pid, self.epoch, group)?;
        c.transactions()
            .commit_offsets(&self.offset_commit(group, offsets))?
            .into_iter()
            .try_for_each(|(_, r)| r)
    }

    pub fn offset_commit(&self, group: &str, offsets: &[(TopicPartition, i64)]) -> TxnOffsetCommit {
        let offsets = offsets.iter().cloned().collect();
        TxnOffsetCommit::without_membership(&self.id, group, (self.pid, self.epoch), &offsets)
    }

    pub async fn end(&self, c: &BrokerCluster, commit: bool) -> Result<()> {
        c.transactions()
            .end(&self.id, self.pid, self.epoch, commit)
            .await
    }
}

fn values(records: Vec<ConsumerRecord>) -> Vec<String> {
    records
        .into_iter()
        .map(|r| String::from_utf8(r.value.unwrap_or_default().to_vec()).unwrap())
        .collect()
}

/// Every value a read_committed reader sees in `tp` from the start.
pub fn read_committed(c: &BrokerCluster, tp: &TopicPartition) -> Vec<String> {
    let req = FetchRequest::new(tp.clone(), 0, i64::MAX).with_isolation(Isolation::ReadCommitted);
    values(c.data().fetch(&req).unwrap().records)
}

/// Every data value below the high watermark of `tp`.
pub fn read_uncommitted(c: &BrokerCluster, tp: &TopicPartition) -> Vec<String> {
    values(
        c.data()
            .fetch(&FetchRequest::new(tp.clone(), 0, i64::MAX))
            .unwrap()
            .records,
    )
}

/// True when nothing holds back read_committed readers of `tp`.
pub fn lso_is_free(c: &BrokerCluster, tp: &TopicPartition) -> bool {
    c.data().last_stable_offset(tp).unwrap() == c.data().visible_end(tp).unwrap()
}
