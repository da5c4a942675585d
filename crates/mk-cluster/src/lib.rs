//! The semantic core (book chapters 1, 4 and 9): `BrokerCluster` composes the
//! log, replication, group and transaction crates behind one API, grouped by
//! role (`topics()`, `brokers()`, `data()`, `groups()`, `transactions()`,
//! `steps()`, `lifecycle()`, `views()`). The in-process clients (mk-client),
//! the labs (mk-labs) and the drivers of a running broker (mk-runtime) sit
//! above it.
//!
//! It must never know JSON wire shapes, sockets or command-line flags;
//! adapters translate into its operations. Adapters depend on this crate
//! only, so it re-exports the domain types they need.

mod attached;
mod broker_configs;
mod brokers;
mod cluster;
pub mod config;
mod connection_stats;
mod consumer_groups;
mod data;
mod elections;
mod error;
mod group_offsets;
mod groups;
mod health;
mod inspect;
mod life;
mod lifecycle;
mod locks;
mod log_dirs;
pub mod metadata;
mod open;
pub mod partitioner;
mod quotas;
mod reassignments;
mod resources;
mod security;
mod security_scram;
mod security_store;
mod share_groups;
mod slot;
mod stats;
mod steps;
mod telemetry;
pub mod topic_configs;
mod topic_id;
mod topic_pages;
mod topics;
mod traffic;
mod transactions;
mod txn_repair;

pub use attached::AttachedClient;
pub use broker_configs::is_dynamic as is_dynamic_broker_config;
pub use brokers::{
    Brokers, COORDINATOR_PARTITIONS, COORDINATOR_REPLICATION, CoordinatorKey,
    coordinator_partition, java_string_hash,
};
pub use cluster::{BrokerCluster, INTERNAL_TOPICS, OFFSETS_TOPIC};
pub use config::{
    BrokerId, CleanupPolicy, ConfigChange, FlushPolicy, IncrementalChange, IncrementalOp,
    MIN_SEGMENT_BYTES, MiniKafkaConfig, TOPIC_CONFIG_KEYS, TopicConfig, TopicConfigEntry,
    TopicConfigOverrides, kafka_limit,
};
pub use connection_stats::{ConnectionStats, Counted, Protocol, ProtocolStats};
pub use consumer_groups::{FetchedPartition, FetchedTopic, PartitionAnswers};
pub use data::{
    BatchFetch, ConsumerRecord, DataPath, FetchRequest, FetchResult, FetchedBatch, Isolation,
    ListedOffset, OffsetSpec, PartitionBatches, PartitionFetch, PendingAppend, ProduceEntry,
    ProduceRequest, ProduceResponse,
};
pub use elections::{ElectionRefusal, ElectionType};
pub use error::{Cancelled, ClientError, ClusterError, LeaderError, Result, TopicError};
pub use group_offsets::{PartitionLag, PlannedReset, ResetTarget};
pub use groups::Groups;
pub use health::{ClusterHealth, DiskFull};
pub use inspect::{
    BrowseFrom, BrowsedRecord, BrowsedRecords, ClusterOverview, DiskSpace, MAX_BROWSE_RECORDS,
    PartitionCounts, PartitionHealth, PartitionInternals,
};
pub use life::LifecycleState;
pub use lifecycle::Lifecycle;
pub use log_dirs::{LogDir, LogDirReplica};
pub use metadata::TopicId;
pub use quotas::{
    QUOTA_CLIENT_ID, QUOTA_IP, QUOTA_USER, QuotaEntity, QuotaEntry, QuotaFilter, QuotaMatch,
    QuotaOp, Quotas,
};
pub use reassignments::{OngoingReassignment, ReassignmentRefusal, Reassignments};
pub use security::{
    DEFAULT_SCRAM_ITERATIONS, Identity, ScramDeletion, ScramUpsertion, ScramUserInfo, Security,
};
pub use share_groups::{ShareFetchAnswer, ShareFetchLimits, ShareFetchPartition};
pub use stats::{ClusterDescription, ClusterStats, OperatorViews};
pub use steps::{CompactionSummary, Steps};
pub use telemetry::{
    EMPTY_SUBSCRIPTION_ID, TELEMETRY_MAX_BYTES, TELEMETRY_PUSH_INTERVAL_MS, Telemetry,
    TelemetryPush, TelemetryRefusal, TelemetrySubscription,
};
pub use topic_configs::{
    BrokerDefaults, ConfigSource, ConfigSynonym, ConfigType, DescribedConfig, Effect,
    TOPIC_CONFIGS, TopicConfigDef,
};
pub use topic_pages::{MAX_PAGE_PARTITIONS, PagedTopic, TopicCursor, TopicPage};
pub use topics::{MAX_PARTITIONS, PartitionInfo, TopicDescription, Topics};
pub use traffic::Traffic;
pub use transactions::{Transactions, TxnHandle, TxnOffsetCommit};

/// Types of the domain crates that adapters need, re-exported so adapters
/// depend on mk-cluster only.
pub use bytes::Bytes;
/// The security vocabulary (principals, ACLs, SASL mechanisms), for
/// adapters and the server.
pub use mk_auth::{
    AccessControlEntry, AclBinding, AclBindingFilter, AuthError, AuthorizerConfig, CLUSTER_NAME,
    Operation, PatternType, Permission, PlainUsers, Principal, ResourcePattern, ResourceType,
    SaslMechanism, ScramCredential, ScramMechanism, ScramServer, parse_mechanisms, ssl_principal,
};
pub use mk_core::{
    ByteReader, Clock, ErrorCode, ManualClock, SharedClock, SystemClock, TopicNameError,
    TopicPartition, Truncated,
};
/// KIP-932's share-partition vocabulary (acknowledgement types, acquired
/// ranges, the ShareFetch request), for adapters.
pub use mk_group::share;
pub use mk_group::{
    AnyGroupDescription, AssignorKind, CONSUMER_PROTOCOL_TYPE, CommitRequest,
    ConsumerGroupDescription, ConsumerHeartbeat, ConsumerHeartbeatAnswer,
    ConsumerMemberDescription, GROUP_CONFIGS, GroupConfigEntry, GroupDescription, GroupJoin,
    GroupJoined, GroupListing, GroupSettings, GroupState, GroupSync, GroupSynced, GroupType,
    JoinedMember, MemberAssignment, MemberDescription, MemberState, OffsetAndMetadata,
    ServerAssignor, ShareAutoOffsetReset, ShareGroupDescription, ShareHeartbeat,
    ShareHeartbeatAnswer, ShareIsolation, ShareMemberDescription,
};
/// MKB1 version 2: a producer's record block kept as produced.
pub use mk_log::block;
pub use mk_log::{
    ControlType, Header, LogError, ProducerInfo, Record, RecordBatch, RecordError, RetentionPolicy,
    SegmentInfo,
};
pub use mk_replication::{
    AckMode, ActiveProducer, EpochEndOffset, EpochEntry, LeaderAndEpoch, ProduceResult,
    ProducerIdentity,
};
pub use mk_storage::{Fault, FaultInjector, StorageError};
pub use mk_txn::{
    CompletedTransaction, TxnDescription, TxnFilter, TxnListing, TxnState, TxnVersion,
};
