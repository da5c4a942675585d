//! The in-process adapter (book chapter 10): `DirectAdmin` for topics,
//! cluster views and the lab steps, `DirectClient` for produce, fetch,
//! groups and transactions. Each method is one call of one `BrokerCluster`
//! operation — the adapter is transparent and has no semantics of its own,
//! which is what lets the parity suite hold it against the JSON-TCP adapter.
//!
//! It must never implement topics, offsets, fencing or visibility itself.

use mk_cluster::{
    AnyGroupDescription, AssignorKind, BrokerCluster, BrokerId, ClusterDescription, ClusterStats,
    CompactionSummary, ConfigChange, FetchRequest, FetchResult, GroupDescription, GroupListing,
    LeaderAndEpoch, MemberAssignment, OffsetAndMetadata, OffsetSpec, ProduceEntry, ProduceRequest,
    ProduceResponse, ProducerIdentity, Result, RetentionPolicy, ScramMechanism, ScramUserInfo,
    TopicConfig, TopicConfigEntry, TopicConfigOverrides, TopicDescription, TopicPartition,
    TxnHandle,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

pub use mk_cluster;

/// Topic administration, cluster views and the explicit (lab) steps.
#[derive(Debug, Clone)]
pub struct DirectAdmin {
    cluster: Arc<BrokerCluster>,
}

impl DirectAdmin {
    pub fn new(cluster: Arc<BrokerCluster>) -> Self {
        Self { cluster }
    }

    pub fn cluster(&self) -> &Arc<BrokerCluster> {
        &self.cluster
    }

    pub fn create_topic(
        &self,
        topic: &str,
        partitions: u32,
        replication_factor: usize,
    ) -> Result<()> {
        self.cluster
            .topics()
            .create(topic, partitions, replication_factor)
    }

    pub fn create_topic_with_config(
        &self,
        topic: &str,
        partitions: u32,
        replication_factor: usize,
        config: TopicConfig,
    ) -> Result<()> {
        self.cluster
            .topics()
            .create_with_config(topic, partitions, replication_factor, config)
    }

    pub fn create_topic_with_overrides(
        &self,
        topic: &str,
        partitions: u32,
        replication_factor: usize,
        overrides: &TopicConfigOverrides,
    ) -> Result<()> {
        self.cluster.topics().create_with_overrides(
            topic,
            partitions,
            replication_factor,
            overrides,
        )
    }

    pub fn describe_topic(&self, topic: &str) -> Result<TopicDescription> {
        self.cluster.topics().describe(topic)
    }

    /// The topic, created first when it is missing, `allow` says so and
    /// the broker auto-creates topics (as a Kafka producer's Metadata).
    pub fn describe_or_auto_create(&self, topic: &str, allow: bool) -> Result<TopicDescription> {
        self.cluster.topics().describe_or_auto_create(topic, allow)
    }

    pub fn list_topics(&self) -> Result<Vec<String>> {
        self.cluster.topics().list()
    }

    pub fn describe_cluster(&self) -> Result<ClusterDescription> {
        self.cluster.views().describe_cluster()
    }

    pub fn stats(&self) -> Result<ClusterStats> {
        self.cluster.views().stats()
    }

    /// Takes a broker offline; returns the partitions whose leader moved.
    pub fn broker_offline(
        &self,
        broker: BrokerId,
    ) -> Result<Vec<(TopicPartition, LeaderAndEpoch)>> {
        self.cluster.brokers().take_offline(broker)
    }

    /// Whether the broker was offline.
    pub fn broker_online(&self, broker: BrokerId) -> Result<bool> {
        self.cluster.brokers().bring_online(broker)
    }

    /// Sets a user's SCRAM credential from a password (the core salts
    /// and hashes it); returns the iteration count stored.
    pub fn upsert_scram_credential(
        &self,
        user: &str,
        mechanism: ScramMechanism,
        password: &str,
        iterations: Option<u32>,
    ) -> Result<u32> {
        self.cluster
            .security()
            .upsert_scram_password(user, mechanism, password, iterations)
    }

    /// Removes a user's credential for one mechanism, or all of them.
    pub fn delete_scram_credential(
        &self,
        user: &str,
        mechanism: Option<ScramMechanism>,
    ) -> Result<Vec<ScramMechanism>> {
        self.cluster
            .security()
            .delete_scram_credentials(user, mechanism)
    }

    /// Every SCRAM user or the named ones, each with its answer.
    pub fn describe_scram_credentials(
        &self,
        users: Option<&[String]>,
    ) -> Vec<(String, Result<ScramUserInfo>)> {
        self.cluster.security().describe_scram(users)
    }

    pub fn promote(&self, tp: &TopicPartition, broker: BrokerId) -> Result<LeaderAndEpoch> {
        self.cluster.steps().promote(tp, broker)
    }

    pub fn rejoin(&self, tp: &TopicPartition, broker: BrokerId) -> Result<()> {
        self.cluster.steps().rejoin(tp, broker)
    }

    pub fn remove_from_isr(&self, tp: &TopicPartition, broker: BrokerId) -> Result<()> {
        self.cluster.steps().remove_from_isr(tp, broker)
    }

    pub fn replicate_once(&self) -> Result<()> {
        self.cluster.steps().replicate_all_once()
    }

    pub fn expire_group_members(&self) -> Result<Vec<(String, String)>> {
        self.cluster.groups().expire_members()
    }

    pub fn roll(&self, tp: &TopicPartition) -> Result<()> {
        self.cluster.steps().roll(tp)
    }

    pub fn apply_retention(
        &self,
        topic: &str,
        overrides: Option<RetentionPolicy>,
    ) -> Result<BTreeMap<u32, Vec<i64>>> {
        self.cluster.steps().apply_retention(topic, overrides)
    }

    pub fn compact(
        &self,
        topic: &str,
        delete_retention_ms: Option<i64>,
    ) -> Result<CompactionSummary> {
        self.cluster.steps().compact(topic, delete_retention_ms)
    }

    pub async fn expire_transactions(&self) -> Result<Vec<String>> {
        self.cluster.transactions().expire().await
    }

    pub fn flush_cycle(&self) -> Result<()> {
        self.cluster.steps().run_flush_cycle()
    }

    pub fn delete_topic(&self, topic: &str) -> Result<()> {
        self.cluster.topics().delete(topic)
    }

    /// Grows a topic to `total` partitions.
    pub fn create_partitions(&self, topic: &str, total: u32) -> Result<()> {
        self.cluster.topics().create_partitions(topic, total)
    }

    pub fn alter_topic_config(
        &self,
        topic: &str,
        changes: &[ConfigChange],
        validate_only: bool,
    ) -> Result<TopicConfig> {
        self.cluster
            .topics()
            .alter_config(topic, changes, validate_only)
    }

    pub fn describe_topic_config(&self, topic: &str) -> Result<Vec<TopicConfigEntry>> {
        self.cluster.topics().describe_config(topic)
    }

    pub fn list_groups(&self) -> Result<Vec<GroupListing>> {
        self.cluster.groups().listings()
    }

    pub fn delete_group(&self, group: &str) -> Result<()> {
        self.cluster.groups().delete_one(group)
    }

    pub fn alter_group_offsets(
        &self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> Result<()> {
        self.cluster.groups().alter_offsets(group, offsets)
    }
}

/// Produce, fetch, consumer groups and transactions.
#[derive(Debug, Clone)]
pub struct DirectClient {
    cluster: Arc<BrokerCluster>,
}

impl DirectClient {
    pub fn new(cluster: Arc<BrokerCluster>) -> Self {
        Self { cluster }
    }

    pub async fn produce(&self, req: ProduceRequest) -> Result<ProduceResponse> {
        self.cluster.data().produce(req).await
    }

    /// The partition a produce request without an explicit one goes to.
    pub fn route_produce(
        &self,
        topic: &str,
        partition: Option<u32>,
        records: &[ProduceEntry],
    ) -> Result<TopicPartition> {
        self.cluster.data().route_produce(topic, partition, records)
    }

    pub fn fetch(&self, req: &FetchRequest) -> Result<FetchResult> {
        self.cluster.data().fetch(req)
    }

    pub async fn fetch_wait(&self, req: &FetchRequest, max_wait: Duration) -> Result<FetchResult> {
        self.cluster.data().fetch_wait(req, max_wait).await
    }

    pub fn list_offsets(&self, tp: &TopicPartition, spec: OffsetSpec) -> Result<Option<i64>> {
        self.cluster.data().list_offsets(tp, spec)
    }

    pub fn join_group(
        &self,
        group: &str,
        member: &str,
        topics: &[String],
    ) -> Result<MemberAssignment> {
        self.cluster.groups().join(group, member, topics)
    }

    pub fn join_group_with_assignor(
        &self,
        group: &str,
        member: &str,
        topics: &[String],
        assignor: Option<AssignorKind>,
    ) -> Result<MemberAssignment> {
        self.cluster
            .groups()
            .join_with_assignor(group, member, topics, assignor)
    }

    pub fn heartbeat(&self, group: &str, member: &str, generation: i32) -> Result<()> {
        self.cluster.groups().heartbeat(group, member, generation)
    }

    pub fn leave_group(&self, group: &str, member: &str) -> Result<bool> {
        self.cluster.groups().leave(group, member)
    }

    pub fn commit_offsets(
        &self,
        group: &str,
        member: &str,
        generation: i32,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> Result<()> {
        self.cluster
            .groups()
            .commit_offsets(group, member, generation, offsets)
    }

    /// A commit whose offsets carry leader epochs and metadata: one answer
    /// per partition.
    pub fn commit_offsets_with_metadata(
        &self,
        group: &str,
        member: &str,
        generation: i32,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
    ) -> Result<Vec<(TopicPartition, Result<()>)>> {
        self.cluster
            .groups()
            .commit_with_metadata(group, generation, member, None, offsets)
    }

    pub fn fetch_offsets(&self, group: &str) -> Result<BTreeMap<TopicPartition, i64>> {
        self.cluster.groups().committed(group)
    }

    pub fn committed_offsets_for(
        &self,
        group: &str,
        partitions: Option<&[TopicPartition]>,
    ) -> Result<Vec<(TopicPartition, Option<OffsetAndMetadata>)>> {
        self.cluster.groups().committed_for(group, partitions)
    }

    pub fn describe_group(&self, group: &str) -> Result<Option<GroupDescription>> {
        self.cluster.groups().describe(group)
    }

    /// A group of any type: classic, KIP-848 consumer or share.
    pub fn describe_any_group(&self, group: &str) -> Result<Option<AnyGroupDescription>> {
        self.cluster.groups().describe_any(group)
    }

    pub fn init_producer(&self, name: Option<&str>) -> Result<ProducerIdentity> {
        self.cluster.transactions().init_producer(name)
    }

    pub async fn begin_txn(&self, transactional_id: &str) -> Result<TxnHandle> {
        self.cluster.transactions().begin(transactional_id).await
    }

    pub fn transaction_handle_at(&self, transactional_id: &str, epoch: i32) -> Result<TxnHandle> {
        self.cluster
            .transactions()
            .handle_at(transactional_id, epoch)
    }

    pub async fn txn_produce(
        &self,
        handle: &TxnHandle,
        topic: &str,
        key: Option<mk_cluster::Bytes>,
        value: Option<mk_cluster::Bytes>,
        partition: Option<u32>,
    ) -> Result<(u32, i64)> {
        self.cluster
            .transactions()
            .send(handle, topic, key, value, partition)
            .await
    }

    pub fn txn_send_offsets(
        &self,
        handle: &TxnHandle,
        group: &str,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> Result<()> {
        self.cluster
            .transactions()
            .send_offsets(handle, group, offsets)
    }

    pub async fn commit_txn(&self, handle: &TxnHandle) -> Result<()> {
        self.cluster.transactions().commit(handle).await
    }

    pub async fn abort_txn(&self, handle: &TxnHandle) -> Result<()> {
        self.cluster.transactions().abort(handle).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mk_cluster::{AckMode, ErrorCode, ManualClock, MiniKafkaConfig, ProduceEntry};

    #[tokio::test]
    async fn direct_adapter_passes_operations_and_errors_through_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let cluster = BrokerCluster::open_with_clock(
            MiniKafkaConfig::new(dir.path()),
            Arc::new(ManualClock::new(5)),
        )
        .unwrap();
        let admin = DirectAdmin::new(cluster.clone());
        let client = DirectClient::new(cluster.clone());
        admin.create_topic("t", 1, 1).unwrap();
        assert_eq!(
            admin.create_topic("t", 1, 1).unwrap_err().code(),
            ErrorCode::TopicAlreadyExists
        );
        let tp = TopicPartition::new("t", 0);
        let r = client
            .produce(ProduceRequest {
                tp: tp.clone(),
                records: vec![ProduceEntry {
                    value: Some(mk_cluster::Bytes::from_static(b"v")),
                    ..ProduceEntry::default()
                }],
                acks: AckMode::One,
                producer: None,
            })
            .await
            .unwrap();
        assert_eq!((r.partition, r.base_offset, r.count), (0, Some(0), 1));
        let f = client.fetch(&FetchRequest::new(tp.clone(), 0, 10)).unwrap();
        assert_eq!(
            f.records[0].timestamp_ms, 5,
            "timestamp is the cluster clock's now"
        );
        assert_eq!(
            client.list_offsets(&tp, OffsetSpec::Latest).unwrap(),
            Some(1)
        );
        assert_eq!(
            client
                .fetch(&FetchRequest::new(TopicPartition::new("nope", 0), 0, 1))
                .unwrap_err()
                .code(),
            ErrorCode::UnknownTopic
        );
        cluster.lifecycle().close().await.unwrap();
    }
}
