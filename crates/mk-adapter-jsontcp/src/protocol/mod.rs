//! The wire model of spec 06: every operation as a typed `Request` and
//! `Response` built from the core's own types, with strict decoding and
//! deliberately ordered encoding in both directions (the server decodes
//! requests and encodes responses; the client does the opposite).
//!
//! This module holds the types and the four dispatchers (`Request::
//! from_object`, `Request::encode`, `Response::encode_into`,
//! `Response::decode`), each an exhaustive match whose arms call into the
//! family modules. There every operation is a small module with its four
//! directions side by side: `topics`, `data`, `groups` (with
//! `modern_groups` for the KIP-848 and share halves of `describe_group`),
//! `transactions`, `admin`, `users` (SCRAM credentials), `reassignments`
//! (partition moves) and `lab`;
//! `common` holds the pieces several
//! families share.
//! Adding an operation means a variant in `Operation`, `Request` and
//! `Response`, one arm per dispatcher (the compiler lists them) and one
//! module in its family.
//!
//! Nothing here decides anything about topics, offsets or fencing: values
//! are carried through unchanged and the core validates them.

mod admin;
mod common;
mod data;
mod groups;
mod lab;
mod modern_groups;
mod reassignments;
mod topics;
mod transactions;
mod users;

use reassignments::{alter_partition_reassignment, list_partition_reassignments};

pub use admin::ServerStats;
pub use data::{ProduceRecords, ProduceSpec};
/// Topic settings of `create_topic`; the core merges them with its defaults.
pub use mk_cluster::TopicConfigOverrides;
pub use transactions::TxnRef;
pub use users::Password;

use crate::wire::{DecodeError, Fields, ObjWriter, bad, type_name};
use mk_cluster::{
    AnyGroupDescription, AssignorKind, BrokerId, Bytes, ClusterDescription, CompactionSummary,
    ConfigChange, ErrorCode, FetchRequest, FetchResult, GroupListing, LeaderAndEpoch,
    MemberAssignment, OffsetAndMetadata, OffsetSpec, OngoingReassignment, ProduceResponse,
    ProducerIdentity, RetentionPolicy, ScramMechanism, ScramUserInfo, TopicConfig,
    TopicConfigEntry, TopicDescription, TopicPartition,
};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Every operation name of spec 06 (core, extended and lab tables), plus
/// `describe_group`, which the CLI's `group describe` needs, and the
/// administration the CLI's `topic` and `group` commands need (issue 14):
/// `delete_topic`, `create_partitions`, `alter_topic_config`,
/// `describe_topic_config`, `list_groups`, `delete_group` and
/// `alter_group_offsets`; and the SCRAM users of `mk-server user` (issue
/// 25): `upsert_scram_credential`, `delete_scram_credential` and
/// `describe_scram_credentials`; and the partition moves of `mk-server
/// partition` (issue 21): `alter_partition_reassignment` and
/// `list_partition_reassignments`. docs/json-protocol.md describes every one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    CreateTopic,
    Metadata,
    Produce,
    Fetch,
    JoinGroup,
    Heartbeat,
    CommitOffsets,
    ListTopics,
    DeleteTopic,
    CreatePartitions,
    AlterTopicConfig,
    DescribeTopicConfig,
    ListOffsets,
    LeaveGroup,
    FetchOffsets,
    DescribeGroup,
    ListGroups,
    DeleteGroup,
    AlterGroupOffsets,
    InitProducer,
    BeginTxn,
    TxnProduce,
    TxnSendOffsets,
    CommitTxn,
    AbortTxn,
    DescribeCluster,
    Stats,
    BrokerOffline,
    BrokerOnline,
    UpsertScramCredential,
    DeleteScramCredential,
    DescribeScramCredentials,
    AlterPartitionReassignment,
    ListPartitionReassignments,
    Promote,
    Rejoin,
    RemoveFromIsr,
    ReplicateOnce,
    ExpireGroupMembers,
    Roll,
    ApplyRetention,
    Compact,
    ExpireTransactions,
    FlushCycle,
}

impl Operation {
    pub const ALL: [Operation; 44] = [
        Operation::CreateTopic,
        Operation::Metadata,
        Operation::Produce,
        Operation::Fetch,
        Operation::JoinGroup,
        Operation::Heartbeat,
        Operation::CommitOffsets,
        Operation::ListTopics,
        Operation::DeleteTopic,
        Operation::CreatePartitions,
        Operation::AlterTopicConfig,
        Operation::DescribeTopicConfig,
        Operation::ListOffsets,
        Operation::LeaveGroup,
        Operation::FetchOffsets,
        Operation::DescribeGroup,
        Operation::ListGroups,
        Operation::DeleteGroup,
        Operation::AlterGroupOffsets,
        Operation::InitProducer,
        Operation::BeginTxn,
        Operation::TxnProduce,
        Operation::TxnSendOffsets,
        Operation::CommitTxn,
        Operation::AbortTxn,
        Operation::DescribeCluster,
        Operation::Stats,
        Operation::BrokerOffline,
        Operation::BrokerOnline,
        Operation::UpsertScramCredential,
        Operation::DeleteScramCredential,
        Operation::DescribeScramCredentials,
        Operation::AlterPartitionReassignment,
        Operation::ListPartitionReassignments,
        Operation::Promote,
        Operation::Rejoin,
        Operation::RemoveFromIsr,
        Operation::ReplicateOnce,
        Operation::ExpireGroupMembers,
        Operation::Roll,
        Operation::ApplyRetention,
        Operation::Compact,
        Operation::ExpireTransactions,
        Operation::FlushCycle,
    ];

    /// The wire name.
    pub const fn name(self) -> &'static str {
        match self {
            Operation::CreateTopic => "create_topic",
            Operation::Metadata => "metadata",
            Operation::Produce => "produce",
            Operation::Fetch => "fetch",
            Operation::JoinGroup => "join_group",
            Operation::Heartbeat => "heartbeat",
            Operation::CommitOffsets => "commit_offsets",
            Operation::ListTopics => "list_topics",
            Operation::DeleteTopic => "delete_topic",
            Operation::CreatePartitions => "create_partitions",
            Operation::AlterTopicConfig => "alter_topic_config",
            Operation::DescribeTopicConfig => "describe_topic_config",
            Operation::ListOffsets => "list_offsets",
            Operation::LeaveGroup => "leave_group",
            Operation::FetchOffsets => "fetch_offsets",
            Operation::DescribeGroup => "describe_group",
            Operation::ListGroups => "list_groups",
            Operation::DeleteGroup => "delete_group",
            Operation::AlterGroupOffsets => "alter_group_offsets",
            Operation::InitProducer => "init_producer",
            Operation::BeginTxn => "begin_txn",
            Operation::TxnProduce => "txn_produce",
            Operation::TxnSendOffsets => "txn_send_offsets",
            Operation::CommitTxn => "commit_txn",
            Operation::AbortTxn => "abort_txn",
            Operation::DescribeCluster => "describe_cluster",
            Operation::Stats => "stats",
            Operation::BrokerOffline => "broker_offline",
            Operation::BrokerOnline => "broker_online",
            Operation::UpsertScramCredential => "upsert_scram_credential",
            Operation::DeleteScramCredential => "delete_scram_credential",
            Operation::DescribeScramCredentials => "describe_scram_credentials",
            Operation::AlterPartitionReassignment => "alter_partition_reassignment",
            Operation::ListPartitionReassignments => "list_partition_reassignments",
            Operation::Promote => "promote",
            Operation::Rejoin => "rejoin",
            Operation::RemoveFromIsr => "remove_from_isr",
            Operation::ReplicateOnce => "replicate_once",
            Operation::ExpireGroupMembers => "expire_group_members",
            Operation::Roll => "roll",
            Operation::ApplyRetention => "apply_retention",
            Operation::Compact => "compact",
            Operation::ExpireTransactions => "expire_transactions",
            Operation::FlushCycle => "flush_cycle",
        }
    }

    pub fn parse(name: &str) -> Option<Operation> {
        Operation::ALL.into_iter().find(|o| o.name() == name)
    }

    /// Lab operations exist only when the server runs with `--lab`.
    pub const fn is_lab(self) -> bool {
        matches!(
            self,
            Operation::Promote
                | Operation::Rejoin
                | Operation::RemoveFromIsr
                | Operation::ReplicateOnce
                | Operation::ExpireGroupMembers
                | Operation::Roll
                | Operation::ApplyRetention
                | Operation::Compact
                | Operation::ExpireTransactions
                | Operation::FlushCycle
        )
    }
}

/// One request of spec 06.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    CreateTopic {
        topic: String,
        partitions: u32,
        replication_factor: usize,
        config: Option<TopicConfigOverrides>,
    },
    Metadata {
        topic: String,
        /// Create the topic when it is missing and the broker auto-creates
        /// topics (Kafka's `allow_auto_topic_creation` of Metadata).
        allow_auto_create: bool,
    },
    Produce(ProduceSpec),
    Fetch {
        request: FetchRequest,
        /// Long poll: wait up to this long for data at the offset.
        max_wait_ms: Option<u32>,
    },
    JoinGroup {
        group_id: String,
        member_id: String,
        topics: Vec<String>,
        assignor: Option<AssignorKind>,
    },
    Heartbeat {
        group_id: String,
        member_id: String,
        generation: i32,
    },
    CommitOffsets {
        group_id: String,
        member_id: String,
        generation: i32,
        offsets: BTreeMap<TopicPartition, OffsetAndMetadata>,
    },
    ListTopics,
    DeleteTopic {
        topic: String,
    },
    CreatePartitions {
        topic: String,
        /// The new total.
        partitions: u32,
    },
    AlterTopicConfig {
        topic: String,
        changes: Vec<ConfigChange>,
        validate_only: bool,
    },
    DescribeTopicConfig {
        topic: String,
    },
    ListOffsets {
        tp: TopicPartition,
        at: OffsetSpec,
    },
    LeaveGroup {
        group_id: String,
        member_id: String,
    },
    FetchOffsets {
        group_id: String,
        partitions: Option<Vec<TopicPartition>>,
    },
    DescribeGroup {
        group_id: String,
    },
    ListGroups,
    DeleteGroup {
        group_id: String,
    },
    AlterGroupOffsets {
        group_id: String,
        offsets: BTreeMap<TopicPartition, i64>,
    },
    InitProducer {
        name: Option<String>,
    },
    BeginTxn {
        transactional_id: String,
    },
    TxnProduce {
        txn: TxnRef,
        topic: String,
        partition: Option<u32>,
        key: Option<Bytes>,
        value: Option<Bytes>,
    },
    TxnSendOffsets {
        txn: TxnRef,
        group_id: String,
        offsets: BTreeMap<TopicPartition, i64>,
    },
    CommitTxn {
        txn: TxnRef,
    },
    AbortTxn {
        txn: TxnRef,
    },
    DescribeCluster,
    Stats,
    BrokerOffline {
        broker_id: BrokerId,
    },
    BrokerOnline {
        broker_id: BrokerId,
    },
    UpsertScramCredential {
        user: String,
        mechanism: ScramMechanism,
        password: Password,
        /// The core's default (Kafka's 4096) when absent.
        iterations: Option<u32>,
    },
    DeleteScramCredential {
        user: String,
        /// Every mechanism the user has when absent.
        mechanism: Option<ScramMechanism>,
    },
    DescribeScramCredentials {
        /// Every user with a credential when absent.
        user: Option<String>,
    },
    AlterPartitionReassignment {
        tp: TopicPartition,
        /// The target replicas; `None` cancels the move in progress.
        replicas: Option<Vec<BrokerId>>,
        /// False refuses a target whose size differs from the original
        /// replica count (true when absent on the wire).
        allow_replication_factor_change: bool,
    },
    ListPartitionReassignments {
        /// Every topic when absent.
        topic: Option<String>,
    },
    Promote {
        tp: TopicPartition,
        broker_id: BrokerId,
    },
    Rejoin {
        tp: TopicPartition,
        broker_id: BrokerId,
    },
    RemoveFromIsr {
        tp: TopicPartition,
        broker_id: BrokerId,
    },
    ReplicateOnce,
    ExpireGroupMembers,
    Roll {
        tp: TopicPartition,
    },
    ApplyRetention {
        topic: String,
        overrides: Option<RetentionPolicy>,
    },
    Compact {
        topic: String,
        delete_retention_ms: Option<i64>,
    },
    ExpireTransactions,
    FlushCycle,
}

/// What a request line decoded into: the echoed `id` (if the line was an
/// object carrying one) and the request or the reason it is invalid.
#[derive(Debug, Clone)]
pub struct DecodedLine {
    pub id: Option<Value>,
    pub request: Result<Request, DecodeError>,
}

/// Decodes one request line (without its `\n`; a trailing `\r` is
/// tolerated). Every failure is a readable INVALID_REQUEST message.
pub fn decode_request_line(line: &[u8]) -> DecodedLine {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let fail = |msg: String| DecodedLine {
        id: None,
        request: Err(DecodeError(msg)),
    };
    if line.iter().all(u8::is_ascii_whitespace) {
        return fail("empty request line; expected one JSON object".into());
    }
    if let Some(decoded) = crate::fast::decode_produce(line) {
        return decoded;
    }
    decode_strict(line)
}

/// The strict decoder alone, without the fast path: a `Value` tree, then
/// typed field access with a precise message for every failure. The fast
/// path's test holds it against this.
pub(crate) fn decode_strict(line: &[u8]) -> DecodedLine {
    let fail = |msg: String| DecodedLine {
        id: None,
        request: Err(DecodeError(msg)),
    };
    // serde_json validates UTF-8 itself and refuses nesting deeper than 128
    // levels, so hostile input cannot exhaust the stack. The separate UTF-8
    // check only runs on failure, to name the real problem.
    let value: Value = match crate::wire::parse_strict(line) {
        Ok(v) => v,
        Err(e) => {
            return fail(match std::str::from_utf8(line) {
                Err(u) => format!("request is not valid UTF-8: {u}"),
                Ok(_) => format!("invalid JSON: {e}"),
            });
        }
    };
    let Value::Object(map) = value else {
        return fail(format!(
            "a request must be a JSON object, got {}",
            type_name(&value)
        ));
    };
    DecodedLine {
        id: map.get("id").cloned(),
        request: Request::from_object(&map),
    }
}

impl Request {
    /// The operation of this request.
    pub fn operation(&self) -> Operation {
        match self {
            Request::CreateTopic { .. } => Operation::CreateTopic,
            Request::Metadata { .. } => Operation::Metadata,
            Request::Produce(_) => Operation::Produce,
            Request::Fetch { .. } => Operation::Fetch,
            Request::JoinGroup { .. } => Operation::JoinGroup,
            Request::Heartbeat { .. } => Operation::Heartbeat,
            Request::CommitOffsets { .. } => Operation::CommitOffsets,
            Request::ListTopics => Operation::ListTopics,
            Request::DeleteTopic { .. } => Operation::DeleteTopic,
            Request::CreatePartitions { .. } => Operation::CreatePartitions,
            Request::AlterTopicConfig { .. } => Operation::AlterTopicConfig,
            Request::DescribeTopicConfig { .. } => Operation::DescribeTopicConfig,
            Request::ListOffsets { .. } => Operation::ListOffsets,
            Request::LeaveGroup { .. } => Operation::LeaveGroup,
            Request::FetchOffsets { .. } => Operation::FetchOffsets,
            Request::DescribeGroup { .. } => Operation::DescribeGroup,
            Request::ListGroups => Operation::ListGroups,
            Request::DeleteGroup { .. } => Operation::DeleteGroup,
            Request::AlterGroupOffsets { .. } => Operation::AlterGroupOffsets,
            Request::InitProducer { .. } => Operation::InitProducer,
            Request::BeginTxn { .. } => Operation::BeginTxn,
            Request::TxnProduce { .. } => Operation::TxnProduce,
            Request::TxnSendOffsets { .. } => Operation::TxnSendOffsets,
            Request::CommitTxn { .. } => Operation::CommitTxn,
            Request::AbortTxn { .. } => Operation::AbortTxn,
            Request::DescribeCluster => Operation::DescribeCluster,
            Request::BrokerOffline { .. } => Operation::BrokerOffline,
            Request::BrokerOnline { .. } => Operation::BrokerOnline,
            Request::Stats => Operation::Stats,
            Request::UpsertScramCredential { .. } => Operation::UpsertScramCredential,
            Request::DeleteScramCredential { .. } => Operation::DeleteScramCredential,
            Request::DescribeScramCredentials { .. } => Operation::DescribeScramCredentials,
            Request::AlterPartitionReassignment { .. } => Operation::AlterPartitionReassignment,
            Request::ListPartitionReassignments { .. } => Operation::ListPartitionReassignments,
            Request::Promote { .. } => Operation::Promote,
            Request::Rejoin { .. } => Operation::Rejoin,
            Request::RemoveFromIsr { .. } => Operation::RemoveFromIsr,
            Request::ReplicateOnce => Operation::ReplicateOnce,
            Request::ExpireGroupMembers => Operation::ExpireGroupMembers,
            Request::Roll { .. } => Operation::Roll,
            Request::ApplyRetention { .. } => Operation::ApplyRetention,
            Request::Compact { .. } => Operation::Compact,
            Request::ExpireTransactions => Operation::ExpireTransactions,
            Request::FlushCycle => Operation::FlushCycle,
        }
    }

    /// Decodes the fields of a request object.
    pub fn from_object(map: &Map<String, Value>) -> Result<Request, DecodeError> {
        let op = match map.get("operation") {
            None | Some(Value::Null) => {
                return bad("unknown operation: the request has no \"operation\" field");
            }
            Some(Value::String(name)) => Operation::parse(name)
                .ok_or_else(|| DecodeError(format!("unknown operation {name:?}")))?,
            Some(v) => {
                return bad(format!(
                    "unknown operation: \"operation\" must be a string, got {}",
                    type_name(v)
                ));
            }
        };
        let f = Fields::new(map, "");
        match op {
            Operation::CreateTopic => topics::create_topic::decode(&f),
            Operation::Metadata => topics::metadata::decode(&f),
            Operation::ListTopics => Ok(Request::ListTopics),
            Operation::DeleteTopic => topics::delete_topic::decode(&f),
            Operation::CreatePartitions => topics::create_partitions::decode(&f),
            Operation::AlterTopicConfig => topics::alter_topic_config::decode(&f),
            Operation::DescribeTopicConfig => topics::describe_topic_config::decode(&f),
            Operation::Produce => data::produce::decode(&f),
            Operation::Fetch => data::fetch::decode(&f),
            Operation::ListOffsets => data::list_offsets::decode(&f),
            Operation::JoinGroup => groups::join_group::decode(&f),
            Operation::Heartbeat => groups::heartbeat::decode(&f),
            Operation::CommitOffsets => groups::commit_offsets::decode(&f),
            Operation::LeaveGroup => groups::leave_group::decode(&f),
            Operation::FetchOffsets => groups::fetch_offsets::decode(&f),
            Operation::DescribeGroup => groups::describe_group::decode(&f),
            Operation::ListGroups => Ok(Request::ListGroups),
            Operation::DeleteGroup => groups::delete_group::decode(&f),
            Operation::AlterGroupOffsets => groups::alter_group_offsets::decode(&f),
            Operation::InitProducer => transactions::init_producer::decode(&f),
            Operation::BeginTxn => transactions::begin_txn::decode(&f),
            Operation::TxnProduce => transactions::txn_produce::decode(&f),
            Operation::TxnSendOffsets => transactions::txn_send_offsets::decode(&f),
            Operation::CommitTxn => transactions::end_txn::decode(&f, true),
            Operation::AbortTxn => transactions::end_txn::decode(&f, false),
            Operation::DescribeCluster => Ok(Request::DescribeCluster),
            Operation::Stats => Ok(Request::Stats),
            Operation::BrokerOffline => {
                admin::broker::decode(&f).map(|broker_id| Request::BrokerOffline { broker_id })
            }
            Operation::BrokerOnline => {
                admin::broker::decode(&f).map(|broker_id| Request::BrokerOnline { broker_id })
            }
            Operation::UpsertScramCredential => users::upsert_scram_credential::decode(&f),
            Operation::DeleteScramCredential => users::delete_scram_credential::decode(&f),
            Operation::DescribeScramCredentials => users::describe_scram_credentials::decode(&f),
            Operation::AlterPartitionReassignment => alter_partition_reassignment::decode(&f),
            Operation::ListPartitionReassignments => list_partition_reassignments::decode(&f),
            Operation::Promote | Operation::Rejoin | Operation::RemoveFromIsr => {
                let (tp, broker_id) = lab::replica::decode(&f)?;
                Ok(match op {
                    Operation::Promote => Request::Promote { tp, broker_id },
                    Operation::Rejoin => Request::Rejoin { tp, broker_id },
                    // The arm's pattern leaves only this one.
                    _ => Request::RemoveFromIsr { tp, broker_id },
                })
            }
            Operation::ReplicateOnce => Ok(Request::ReplicateOnce),
            Operation::ExpireGroupMembers => Ok(Request::ExpireGroupMembers),
            Operation::Roll => lab::roll::decode(&f),
            Operation::ApplyRetention => lab::apply_retention::decode(&f),
            Operation::Compact => lab::compact::decode(&f),
            Operation::ExpireTransactions => Ok(Request::ExpireTransactions),
            Operation::FlushCycle => Ok(Request::FlushCycle),
        }
    }

    /// The request as one wire line (with `\n`), `operation` first and the
    /// optional `id` last.
    #[allow(
        clippy::too_many_lines,
        reason = "one arm per operation, each handing its fields to the operation's module: \
                  the table reads best whole"
    )]
    pub fn encode(&self, id: Option<&Value>) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        let mut w = ObjWriter::new(&mut out);
        w.str("operation", self.operation().name());
        let w = &mut w;
        match self {
            Request::CreateTopic {
                topic,
                partitions,
                replication_factor,
                config,
            } => topics::create_topic::encode(
                w,
                topic,
                *partitions,
                *replication_factor,
                config.as_ref(),
            ),
            Request::Metadata {
                topic,
                allow_auto_create,
            } => topics::metadata::encode(w, topic, *allow_auto_create),
            Request::ListTopics | Request::ListGroups => {}
            Request::DeleteTopic { topic } => topics::delete_topic::encode(w, topic),
            Request::CreatePartitions { topic, partitions } => {
                topics::create_partitions::encode(w, topic, *partitions)
            }
            Request::AlterTopicConfig {
                topic,
                changes,
                validate_only,
            } => topics::alter_topic_config::encode(w, topic, changes, *validate_only),
            Request::DescribeTopicConfig { topic } => {
                topics::describe_topic_config::encode(w, topic)
            }
            Request::DeleteGroup { group_id } => groups::delete_group::encode(w, group_id),
            Request::AlterGroupOffsets { group_id, offsets } => {
                groups::alter_group_offsets::encode(w, group_id, offsets)
            }
            Request::Produce(p) => data::produce::encode(w, p),
            Request::Fetch {
                request,
                max_wait_ms,
            } => data::fetch::encode(w, request, *max_wait_ms),
            Request::ListOffsets { tp, at } => data::list_offsets::encode(w, tp, *at),
            Request::JoinGroup {
                group_id,
                member_id,
                topics,
                assignor,
            } => groups::join_group::encode(w, group_id, member_id, topics, *assignor),
            Request::Heartbeat {
                group_id,
                member_id,
                generation,
            } => groups::heartbeat::encode(w, group_id, member_id, *generation),
            Request::CommitOffsets {
                group_id,
                member_id,
                generation,
                offsets,
            } => groups::commit_offsets::encode(w, group_id, member_id, *generation, offsets),
            Request::LeaveGroup {
                group_id,
                member_id,
            } => groups::leave_group::encode(w, group_id, member_id),
            Request::FetchOffsets {
                group_id,
                partitions,
            } => groups::fetch_offsets::encode(w, group_id, partitions.as_deref()),
            Request::DescribeGroup { group_id } => groups::describe_group::encode(w, group_id),
            Request::InitProducer { name } => {
                transactions::init_producer::encode(w, name.as_deref())
            }
            Request::BeginTxn { transactional_id } => {
                transactions::begin_txn::encode(w, transactional_id)
            }
            Request::TxnProduce {
                txn,
                topic,
                partition,
                key,
                value,
            } => transactions::txn_produce::encode(
                w,
                txn,
                topic,
                *partition,
                key.as_deref(),
                value.as_deref(),
            ),
            Request::TxnSendOffsets {
                txn,
                group_id,
                offsets,
            } => transactions::txn_send_offsets::encode(w, txn, group_id, offsets),
            Request::CommitTxn { txn } | Request::AbortTxn { txn } => {
                transactions::end_txn::encode(w, txn)
            }
            Request::DescribeCluster | Request::Stats => {}
            Request::BrokerOffline { broker_id } | Request::BrokerOnline { broker_id } => {
                admin::broker::encode(w, *broker_id)
            }
            Request::UpsertScramCredential {
                user,
                mechanism,
                password,
                iterations,
            } => users::upsert_scram_credential::encode(w, user, *mechanism, password, *iterations),
            Request::DeleteScramCredential { user, mechanism } => {
                users::delete_scram_credential::encode(w, user, *mechanism)
            }
            Request::DescribeScramCredentials { user } => {
                users::describe_scram_credentials::encode(w, user.as_deref())
            }
            Request::AlterPartitionReassignment {
                tp,
                replicas,
                allow_replication_factor_change,
            } => alter_partition_reassignment::encode(
                w,
                tp,
                replicas.as_deref(),
                *allow_replication_factor_change,
            ),
            Request::ListPartitionReassignments { topic } => {
                list_partition_reassignments::encode(w, topic.as_deref())
            }
            Request::Promote { tp, broker_id }
            | Request::Rejoin { tp, broker_id }
            | Request::RemoveFromIsr { tp, broker_id } => lab::replica::encode(w, tp, *broker_id),
            Request::ReplicateOnce | Request::ExpireGroupMembers => {}
            Request::Roll { tp } => lab::roll::encode(w, tp),
            Request::ApplyRetention { topic, overrides } => {
                lab::apply_retention::encode(w, topic, overrides.as_ref())
            }
            Request::Compact {
                topic,
                delete_retention_ms,
            } => lab::compact::encode(w, topic, *delete_retention_ms),
            Request::ExpireTransactions | Request::FlushCycle => {}
        }
        if let Some(id) = id {
            w.value("id", id);
        }
        w.end();
        out.push(b'\n');
        out
    }
}

/// One successful response of spec 06.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    CreateTopic {
        topic: String,
    },
    Metadata(TopicDescription),
    Produce {
        response: ProduceResponse,
        batch: bool,
    },
    Fetch(FetchResult),
    JoinGroup(MemberAssignment),
    Heartbeat,
    CommitOffsets,
    ListTopics(Vec<String>),
    DeleteTopic,
    CreatePartitions,
    /// The resulting config.
    AlterTopicConfig(TopicConfig),
    DescribeTopicConfig(Vec<TopicConfigEntry>),
    ListOffsets(Option<i64>),
    LeaveGroup {
        left: bool,
    },
    /// Committed offsets; `None` for a requested partition without one.
    FetchOffsets(Vec<(TopicPartition, Option<OffsetAndMetadata>)>),
    /// `None` for a group the coordinator does not know (wire state "Dead").
    DescribeGroup {
        group_id: String,
        description: Option<AnyGroupDescription>,
    },
    ListGroups(Vec<GroupListing>),
    DeleteGroup,
    AlterGroupOffsets,
    InitProducer(ProducerIdentity),
    BeginTxn(ProducerIdentity),
    TxnProduce {
        partition: u32,
        offset: i64,
    },
    TxnSendOffsets,
    CommitTxn,
    AbortTxn,
    DescribeCluster(ClusterDescription),
    Stats(ServerStats),
    /// The partitions whose leadership moved, with the new leader and epoch.
    BrokerOffline(Vec<(TopicPartition, LeaderAndEpoch)>),
    BrokerOnline {
        /// False when the broker was online already.
        was_offline: bool,
    },
    UpsertScramCredential {
        user: String,
        mechanism: ScramMechanism,
        /// The iteration count stored.
        iterations: u32,
    },
    DeleteScramCredential {
        user: String,
        /// The mechanisms whose credentials were removed.
        deleted: Vec<ScramMechanism>,
    },
    /// Each user with the mechanisms and iteration counts it has, by name.
    DescribeScramCredentials(Vec<(String, ScramUserInfo)>),
    /// The partition's move still in progress (none when it completed at
    /// once or was cancelled).
    AlterPartitionReassignment(Vec<OngoingReassignment>),
    ListPartitionReassignments(Vec<OngoingReassignment>),
    Promote(LeaderAndEpoch),
    Rejoin,
    RemoveFromIsr,
    ReplicateOnce,
    ExpireGroupMembers(Vec<(String, String)>),
    Roll,
    ApplyRetention(BTreeMap<u32, Vec<i64>>),
    Compact(CompactionSummary),
    ExpireTransactions(Vec<String>),
    FlushCycle,
}

/// An error response: the stable code and a human message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorResponse {
    pub code: ErrorCode,
    pub message: String,
}

impl ErrorResponse {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// `{"ok":false,"code":..,"message":..[,"id":..]}` and `\n`.
    pub fn encode(&self, id: Option<&Value>) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.message.len());
        let mut w = ObjWriter::new(&mut out);
        w.raw("ok", b"false")
            .str("code", self.code.as_str())
            .str("message", &self.message);
        if let Some(id) = id {
            w.value("id", id);
        }
        w.end();
        out.push(b'\n');
        out
    }
}

impl Response {
    /// The response as one wire line (with `\n`): `"ok":true` first, the
    /// fields in the order of spec 06, then the echoed `id`.
    pub fn encode(&self, id: Option<&Value>) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        self.encode_into(&mut out, id);
        out
    }

    pub fn encode_into(&self, out: &mut Vec<u8>, id: Option<&Value>) {
        let mut w = ObjWriter::ok(out);
        self.encode_fields(&mut w);
        if let Some(id) = id {
            w.value("id", id);
        }
        w.end();
        out.push(b'\n');
    }

    /// The fields after `"ok":true`, by the operation's family module.
    fn encode_fields(&self, w: &mut ObjWriter<'_>) {
        match self {
            Response::CreateTopic { topic } => topics::create_topic::encode_response(w, topic),
            Response::Metadata(d) => topics::metadata::encode_response(w, d),
            Response::ListTopics(topics) => topics::list_topics::encode_response(w, topics),
            Response::AlterTopicConfig(c) => topics::alter_topic_config::encode_response(w, c),
            Response::DescribeTopicConfig(entries) => {
                topics::describe_topic_config::encode_response(w, entries)
            }
            Response::ListGroups(groups) => groups::list_groups::encode_response(w, groups),
            Response::Produce { response, batch } => {
                data::produce::encode_response(w, response, *batch)
            }
            Response::Fetch(f) => data::fetch::encode_response(w, f),
            Response::ListOffsets(offset) => data::list_offsets::encode_response(w, *offset),
            Response::JoinGroup(a) => groups::join_group::encode_response(w, a),
            Response::LeaveGroup { left } => groups::leave_group::encode_response(w, *left),
            Response::FetchOffsets(offsets) => groups::fetch_offsets::encode_response(w, offsets),
            Response::DescribeGroup {
                group_id,
                description,
            } => groups::describe_group::encode_response(w, group_id, description.as_ref()),
            Response::InitProducer(i) | Response::BeginTxn(i) => {
                transactions::identity::encode_response(w, i)
            }
            Response::TxnProduce { partition, offset } => {
                transactions::txn_produce::encode_response(w, *partition, *offset)
            }
            Response::DescribeCluster(d) => admin::describe_cluster::encode_response(w, d),
            Response::Stats(s) => admin::stats::encode_response(w, s),
            Response::BrokerOffline(moved) => admin::broker::encode_response(w, moved),
            Response::BrokerOnline { was_offline } => {
                admin::broker::encode_online_response(w, *was_offline);
            }
            Response::UpsertScramCredential {
                user,
                mechanism,
                iterations,
            } => users::upsert_scram_credential::encode_response(w, user, *mechanism, *iterations),
            Response::DeleteScramCredential { user, deleted } => {
                users::delete_scram_credential::encode_response(w, user, deleted)
            }
            Response::DescribeScramCredentials(all) => {
                users::describe_scram_credentials::encode_response(w, all)
            }
            Response::AlterPartitionReassignment(ongoing)
            | Response::ListPartitionReassignments(ongoing) => reassignments::encode(w, ongoing),
            Response::Promote(le) => lab::promote::encode_response(w, le),
            Response::ExpireGroupMembers(expired) => {
                lab::expire_group_members::encode_response(w, expired)
            }
            Response::ApplyRetention(by_partition) => {
                lab::apply_retention::encode_response(w, by_partition)
            }
            Response::Compact(c) => lab::compact::encode_response(w, c),
            Response::ExpireTransactions(ids) => lab::expire_transactions::encode_response(w, ids),
            Response::Heartbeat
            | Response::DeleteTopic
            | Response::CreatePartitions
            | Response::DeleteGroup
            | Response::AlterGroupOffsets
            | Response::CommitOffsets
            | Response::TxnSendOffsets
            | Response::CommitTxn
            | Response::AbortTxn
            | Response::Rejoin
            | Response::RemoveFromIsr
            | Response::ReplicateOnce
            | Response::Roll
            | Response::FlushCycle => {}
        }
    }

    /// Decodes a success response to `request` (the client side). Fails
    /// with a message when the server's answer does not have the shape of
    /// spec 06.
    pub fn decode(request: &Request, map: &Map<String, Value>) -> Result<Response, DecodeError> {
        let f = Fields::new(map, "response");
        let f = &f;
        match request {
            Request::CreateTopic { .. } => topics::create_topic::decode_response(f),
            Request::Metadata { .. } => topics::metadata::decode_response(f),
            Request::ListTopics => topics::list_topics::decode_response(f),
            Request::DeleteTopic { .. } => Ok(Response::DeleteTopic),
            Request::CreatePartitions { .. } => Ok(Response::CreatePartitions),
            Request::AlterTopicConfig { .. } => topics::alter_topic_config::decode_response(f),
            Request::DescribeTopicConfig { .. } => {
                topics::describe_topic_config::decode_response(f)
            }
            Request::ListGroups => groups::list_groups::decode_response(f),
            Request::DeleteGroup { .. } => Ok(Response::DeleteGroup),
            Request::AlterGroupOffsets { .. } => Ok(Response::AlterGroupOffsets),
            Request::Produce(p) => data::produce::decode_response(f, p.is_batch()),
            Request::Fetch { .. } => data::fetch::decode_response(f),
            Request::ListOffsets { .. } => data::list_offsets::decode_response(f),
            Request::JoinGroup { .. } => groups::join_group::decode_response(f),
            Request::Heartbeat { .. } => Ok(Response::Heartbeat),
            Request::CommitOffsets { .. } => Ok(Response::CommitOffsets),
            Request::LeaveGroup { .. } => groups::leave_group::decode_response(f),
            Request::FetchOffsets { .. } => groups::fetch_offsets::decode_response(f),
            Request::DescribeGroup { .. } => groups::describe_group::decode_response(f),
            Request::InitProducer { .. } => {
                transactions::identity::decode_response(f).map(Response::InitProducer)
            }
            Request::BeginTxn { .. } => {
                transactions::identity::decode_response(f).map(Response::BeginTxn)
            }
            Request::TxnProduce { .. } => transactions::txn_produce::decode_response(f),
            Request::TxnSendOffsets { .. } => Ok(Response::TxnSendOffsets),
            Request::CommitTxn { .. } => Ok(Response::CommitTxn),
            Request::AbortTxn { .. } => Ok(Response::AbortTxn),
            Request::DescribeCluster => admin::describe_cluster::decode_response(f),
            Request::Stats => admin::stats::decode_response(f),
            Request::BrokerOffline { .. } => admin::broker::decode_response(f),
            Request::BrokerOnline { .. } => admin::broker::decode_online_response(f),
            Request::UpsertScramCredential { .. } => {
                users::upsert_scram_credential::decode_response(f)
            }
            Request::DeleteScramCredential { .. } => {
                users::delete_scram_credential::decode_response(f)
            }
            Request::DescribeScramCredentials { .. } => {
                users::describe_scram_credentials::decode_response(f)
            }
            Request::AlterPartitionReassignment { .. } => {
                alter_partition_reassignment::decode_response(f)
            }
            Request::ListPartitionReassignments { .. } => {
                list_partition_reassignments::decode_response(f)
            }
            Request::Promote { .. } => lab::promote::decode_response(f),
            Request::Rejoin { .. } => Ok(Response::Rejoin),
            Request::RemoveFromIsr { .. } => Ok(Response::RemoveFromIsr),
            Request::ReplicateOnce => Ok(Response::ReplicateOnce),
            Request::ExpireGroupMembers => lab::expire_group_members::decode_response(f),
            Request::Roll { .. } => Ok(Response::Roll),
            Request::ApplyRetention { .. } => lab::apply_retention::decode_response(f),
            Request::Compact { .. } => lab::compact::decode_response(f),
            Request::ExpireTransactions => lab::expire_transactions::decode_response(f),
            Request::FlushCycle => Ok(Response::FlushCycle),
        }
    }
}
