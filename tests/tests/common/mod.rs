//! Helpers for the end-to-end tests: a cluster on a temp dir with a manual
//! clock, reachable through the Direct adapter, that can be closed,
//! crashed and reopened.
#![allow(dead_code)]

use bytes::Bytes;
use mk_adapter_direct::mk_cluster::*;
use mk_adapter_direct::{DirectAdmin, DirectClient};
use mk_client::*;
use std::sync::Arc;

pub fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

pub fn tp(topic: &str, partition: u32) -> TopicPartition {
    TopicPartition::new(topic, partition)
}

/// A request producing `values` (no keys) as one batch, without a producer
/// identity.
pub fn values_request(
    topic: &str,
    partition: u32,
    values: &[&str],
    acks: AckMode,
) -> ProduceRequest {
    ProduceRequest {
        tp: tp(topic, partition),
        records: values
            .iter()
            .map(|v| ProduceEntry {
                value: Some(b(v)),
                ..ProduceEntry::default()
            })
            .collect(),
        acks,
        producer: None,
    }
}

pub struct Env {
    pub dir: tempfile::TempDir,
    pub clock: ManualClock,
    pub config: MiniKafkaConfig,
    pub cluster: Arc<BrokerCluster>,
    pub admin: DirectAdmin,
    pub client: DirectClient,
}

impl Env {
    pub fn new(brokers: Vec<i32>, min_isr: usize) -> Self {
        Self::with(|c| {
            c.broker_ids = brokers.clone();
            c.min_insync_replicas = min_isr;
        })
    }

    /// One broker (min ISR 1) with `topic` of `partitions` partitions.
    pub fn with_topic(topic: &str, partitions: u32) -> Self {
        let env = Self::new(vec![1], 1);
        env.admin.create_topic(topic, partitions, 1).unwrap();
        env
    }

    pub fn with(tweak: impl FnOnce(&mut MiniKafkaConfig)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(1_000_000);
        let mut config = MiniKafkaConfig::new(dir.path());
        tweak(&mut config);
        let cluster =
            BrokerCluster::open_with_clock(config.clone(), Arc::new(clock.clone())).unwrap();
        Self {
            admin: DirectAdmin::new(cluster.clone()),
            client: DirectClient::new(cluster.clone()),
            dir,
            clock,
            config,
            cluster,
        }
    }

    fn reattach(&mut self) {
        self.cluster =
            BrokerCluster::open_with_clock(self.config.clone(), Arc::new(self.clock.clone()))
                .unwrap();
        self.admin = DirectAdmin::new(self.cluster.clone());
        self.client = DirectClient::new(self.cluster.clone());
    }

    /// Graceful close, then open again on the same data dir.
    pub async fn restart(&mut self) {
        self.cluster.lifecycle().close().await.unwrap();
        assert_eq!(
            self.cluster.lifecycle().owned_tasks(),
            0,
            "no task outlives close()"
        );
        self.reattach();
    }

    /// Process kill (no flush, no checkpoint), then open again.
    pub fn crash_restart(&mut self) {
        self.cluster.lifecycle().crash();
        self.reattach();
    }

    pub fn try_reopen(&self) -> Result<Arc<BrokerCluster>> {
        BrokerCluster::open_with_clock(self.config.clone(), Arc::new(self.clock.clone()))
    }

    /// Produces `values` as one batch with `acks`.
    pub async fn produce(
        &self,
        topic: &str,
        partition: u32,
        values: &[&str],
        acks: AckMode,
    ) -> Result<ProduceResponse> {
        self.client
            .produce(values_request(topic, partition, values, acks))
            .await
    }

    /// Produces `{prefix}{i}` for every `i` of `range`, one acks=1 batch
    /// each.
    pub async fn produce_each(
        &self,
        topic: &str,
        partition: u32,
        prefix: &str,
        range: std::ops::Range<usize>,
    ) {
        for i in range {
            self.produce(topic, partition, &[&format!("{prefix}{i}")], AckMode::One)
                .await
                .unwrap();
        }
    }

    /// Submits a one-record batch of `value` to partition 0 of `topic`
    /// (the write path under the produce API), expecting `leader_epoch`
    /// when given.
    pub fn submit(
        &self,
        topic: &str,
        value: &str,
        acks: AckMode,
        leader_epoch: Option<i32>,
    ) -> Result<PendingAppend> {
        self.cluster.data().submit_append(
            &tp(topic, 0),
            RecordBatch::new(vec![Record::new(None, Some(b(value)), 1)]).unwrap(),
            acks,
            leader_epoch,
        )
    }

    /// A consumer in `group` with the member id `member`.
    pub fn member(&self, group: &str, member: &str) -> Consumer {
        self.cluster
            .consumer(
                group,
                ConsumerOptions {
                    member_id: Some(member.into()),
                    ..Default::default()
                },
            )
            .unwrap()
    }

    /// The partition as `describe_partition` reports it.
    pub fn partition(&self, topic: &str, partition: u32) -> PartitionInfo {
        self.cluster
            .topics()
            .describe_partition(&tp(topic, partition))
            .unwrap()
    }

    pub fn producer(&self, options: ProducerOptions) -> Producer {
        self.cluster.producer(options).unwrap()
    }

    /// A producer whose batches wait (practically) forever for their
    /// linger, so records stay queued until close, crash or flush.
    pub fn lingering_producer(&self) -> Producer {
        self.producer(ProducerOptions {
            linger_ms: 1_000_000,
            ..ProducerOptions::default()
        })
    }

    /// Every visible value of a partition from its log start.
    pub fn values(&self, topic: &str, partition: u32) -> Vec<(i64, String)> {
        let t = tp(topic, partition);
        let start = self.cluster.data().log_start_offset(&t).unwrap();
        self.client
            .fetch(&FetchRequest::new(t, start, 100_000))
            .unwrap()
            .records
            .into_iter()
            .map(|r| {
                (
                    r.offset,
                    String::from_utf8_lossy(r.value.as_deref().unwrap_or(b"<none>")).into_owned(),
                )
            })
            .collect()
    }

    /// The partition directory of one replica.
    pub fn replica_dir(&self, broker: i32, topic: &str, partition: u32) -> std::path::PathBuf {
        self.dir
            .path()
            .join(format!("broker-{broker}"))
            .join(format!("{topic}-{partition}"))
    }
}
