//! The wire model of spec 06: every operation as a typed `Request` and
//! `Response` built from the core's own types, with strict decoding and
//! deliberately ordered encoding in both directions (the server decodes
//! requests and encodes responses; the client does the opposite).
//!
//! Nothing here decides anything about topics, offsets or fencing: values
//! are carried through unchanged and the core validates them.

use crate::wire::{
    DecodeError, Decoded, Fields, ObjWriter, bad, push_array, push_int, push_str, type_name,
};
use mk_cluster::{
    AckMode, AssignorKind, BrokerId, Bytes, CleanupPolicy, ClusterDescription, ClusterStats,
    CompactionSummary, ConsumerRecord, ErrorCode, FetchRequest, FetchResult, GroupDescription,
    GroupState, Header, Isolation, LeaderAndEpoch, MemberAssignment, MemberDescription, OffsetSpec,
    PartitionInfo, ProduceEntry, ProduceRequest, ProduceResponse, ProducerIdentity, ProducerInfo,
    RetentionPolicy, TopicConfig, TopicDescription, TopicPartition,
};

/// Topic settings of `create_topic`; the core merges them with its defaults.
pub use mk_cluster::TopicConfigOverrides;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::str::FromStr;

/// Every operation name of spec 06 (core, extended and lab tables), plus
/// `describe_group`, which the CLI's `group describe` needs.
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
    ListOffsets,
    LeaveGroup,
    FetchOffsets,
    DescribeGroup,
    InitProducer,
    BeginTxn,
    TxnProduce,
    TxnSendOffsets,
    CommitTxn,
    AbortTxn,
    DescribeCluster,
    Stats,
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
    pub const ALL: [Operation; 30] = [
        Operation::CreateTopic,
        Operation::Metadata,
        Operation::Produce,
        Operation::Fetch,
        Operation::JoinGroup,
        Operation::Heartbeat,
        Operation::CommitOffsets,
        Operation::ListTopics,
        Operation::ListOffsets,
        Operation::LeaveGroup,
        Operation::FetchOffsets,
        Operation::DescribeGroup,
        Operation::InitProducer,
        Operation::BeginTxn,
        Operation::TxnProduce,
        Operation::TxnSendOffsets,
        Operation::CommitTxn,
        Operation::AbortTxn,
        Operation::DescribeCluster,
        Operation::Stats,
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
            Operation::ListOffsets => "list_offsets",
            Operation::LeaveGroup => "leave_group",
            Operation::FetchOffsets => "fetch_offsets",
            Operation::DescribeGroup => "describe_group",
            Operation::InitProducer => "init_producer",
            Operation::BeginTxn => "begin_txn",
            Operation::TxnProduce => "txn_produce",
            Operation::TxnSendOffsets => "txn_send_offsets",
            Operation::CommitTxn => "commit_txn",
            Operation::AbortTxn => "abort_txn",
            Operation::DescribeCluster => "describe_cluster",
            Operation::Stats => "stats",
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

/// The records of a produce request: the core table's single record
/// (`key_b64` / `value_b64`) or the extended table's `records` batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProduceRecords {
    Single {
        key: Option<Bytes>,
        value: Option<Bytes>,
    },
    Batch(Vec<ProduceEntry>),
}

/// A produce request as it travels on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceSpec {
    pub tp: TopicPartition,
    pub acks: AckMode,
    pub producer: Option<ProducerInfo>,
    pub records: ProduceRecords,
}

impl ProduceSpec {
    /// The core request (one batch).
    pub fn to_core(&self) -> ProduceRequest {
        self.clone().into_core()
    }

    /// The core request (one batch), without copying the records.
    pub fn into_core(self) -> ProduceRequest {
        let records = match self.records {
            ProduceRecords::Single { key, value } => vec![ProduceEntry {
                key,
                value,
                ..ProduceEntry::default()
            }],
            ProduceRecords::Batch(entries) => entries,
        };
        ProduceRequest {
            tp: self.tp,
            records,
            acks: self.acks,
            producer: self.producer,
        }
    }

    pub fn is_batch(&self) -> bool {
        matches!(self.records, ProduceRecords::Batch(_))
    }
}

/// Identifies one instance of a transactional producer on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnRef {
    pub transactional_id: String,
    pub producer_epoch: i32,
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
        offsets: BTreeMap<TopicPartition, i64>,
    },
    ListTopics,
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
    if let Some(decoded) = crate::fast::decode_batched_produce(line) {
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
    let value: Value = match serde_json::from_slice(line) {
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

fn tp_of(f: &Fields<'_>) -> Decoded<TopicPartition> {
    Ok(TopicPartition::new(f.string("topic")?, f.u32("partition")?))
}

fn txn_of(f: &Fields<'_>) -> Decoded<TxnRef> {
    Ok(TxnRef {
        transactional_id: f.string("transactional_id")?,
        producer_epoch: f.i32("producer_epoch")?,
    })
}

fn item_ctx(name: &str, i: usize) -> String {
    format!("{name}[{i}]")
}

fn object_item<'a>(v: &'a Value, ctx: &str) -> Decoded<&'a Map<String, Value>> {
    v.as_object().map_or_else(
        || bad(format!("{ctx} must be an object, got {}", type_name(v))),
        Ok,
    )
}

/// `[{topic, partition, offset}]` into a map; a partition listed twice is
/// refused rather than silently keeping one of the values.
fn offsets_of(f: &Fields<'_>, name: &str) -> Decoded<BTreeMap<TopicPartition, i64>> {
    let mut out = BTreeMap::new();
    for (i, v) in f.array(name)?.iter().enumerate() {
        let item = Fields::item(v, name, i)?;
        let tp = tp_of(&item)?;
        let offset = item.i64("offset")?;
        if out.insert(tp.clone(), offset).is_some() {
            return bad(format!("{name} lists {tp} more than once"));
        }
    }
    Ok(out)
}

fn partitions_of(items: &[Value], name: &str) -> Decoded<Vec<TopicPartition>> {
    items
        .iter()
        .enumerate()
        .map(|(i, v)| tp_of(&Fields::item(v, name, i)?))
        .collect()
}

fn acks_of(f: &Fields<'_>) -> Decoded<AckMode> {
    match f.get("acks") {
        None => Ok(AckMode::One),
        Some(Value::String(s)) => AckMode::from_str(s).map_err(|e| DecodeError(e.to_string())),
        Some(v @ Value::Number(_)) => {
            let n = crate::wire::int_value(v, -1, 1)
                .map_err(|why| DecodeError(format!("field \"acks\" {why}")))?;
            AckMode::try_from(n).map_err(|e| DecodeError(e.to_string()))
        }
        Some(v) => bad(format!(
            "field \"acks\" must be \"0\", \"1\", \"all\", \"-1\" or 0, 1, -1; got {}",
            type_name(v)
        )),
    }
}

fn producer_of(f: &Fields<'_>) -> Decoded<Option<ProducerInfo>> {
    let present = ["producer_id", "producer_epoch", "base_sequence"]
        .iter()
        .filter(|n| f.get(n).is_some())
        .count();
    match present {
        0 => Ok(None),
        3 => Ok(Some(ProducerInfo {
            producer_id: f.i64("producer_id")?,
            producer_epoch: f.i32("producer_epoch")?,
            base_sequence: f.i32("base_sequence")?,
        })),
        _ => bad("idempotent produce needs all of producer_id, producer_epoch and base_sequence"),
    }
}

fn headers_of(f: &Fields<'_>) -> Decoded<Vec<Header>> {
    let Some(items) = f.opt_array("headers")? else {
        return Ok(Vec::new());
    };
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let h = Fields::item(v, "headers", i)?;
            Ok(Header::new(h.string("key")?, h.opt_b64("value_b64")?))
        })
        .collect()
}

fn records_of(items: &[Value]) -> Decoded<Vec<ProduceEntry>> {
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let r = Fields::item(v, "records", i)?;
            Ok(ProduceEntry {
                key: r.opt_b64("key_b64")?,
                value: r.opt_b64("value_b64")?,
                headers: headers_of(&r)?,
                timestamp_ms: r.opt_i64("timestamp_ms")?,
            })
        })
        .collect()
}

fn topic_config_of(map: &Map<String, Value>) -> Decoded<TopicConfigOverrides> {
    let f = Fields::new(map, "config");
    let mut o = TopicConfigOverrides::default();
    for (key, v) in map {
        let nullable = |f: &Fields<'_>, min: i64| -> Decoded<Option<i64>> {
            if v.is_null() {
                Ok(None)
            } else {
                f.int(key, min, i64::MAX).map(Some)
            }
        };
        match key.as_str() {
            "cleanup.policy" => {
                o.cleanup_policy = Some(
                    CleanupPolicy::parse(f.str(key)?).map_err(|e| DecodeError(e.to_string()))?,
                )
            }
            "retention.ms" => o.retention_ms = Some(nullable(&f, i64::MIN)?),
            "retention.bytes" => o.retention_bytes = Some(nullable(&f, i64::MIN)?),
            "segment.bytes" => o.segment_bytes = Some(nullable(&f, 0)?.map(|n| n as u64)),
            "delete.retention.ms" => o.delete_retention_ms = Some(f.i64(key)?),
            other => {
                return bad(format!(
                    "unknown topic setting {other:?}; known: cleanup.policy, retention.ms, \
                     retention.bytes, segment.bytes, delete.retention.ms"
                ));
            }
        }
    }
    Ok(o)
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
            Request::ListOffsets { .. } => Operation::ListOffsets,
            Request::LeaveGroup { .. } => Operation::LeaveGroup,
            Request::FetchOffsets { .. } => Operation::FetchOffsets,
            Request::DescribeGroup { .. } => Operation::DescribeGroup,
            Request::InitProducer { .. } => Operation::InitProducer,
            Request::BeginTxn { .. } => Operation::BeginTxn,
            Request::TxnProduce { .. } => Operation::TxnProduce,
            Request::TxnSendOffsets { .. } => Operation::TxnSendOffsets,
            Request::CommitTxn { .. } => Operation::CommitTxn,
            Request::AbortTxn { .. } => Operation::AbortTxn,
            Request::DescribeCluster => Operation::DescribeCluster,
            Request::Stats => Operation::Stats,
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
        Ok(match op {
            Operation::CreateTopic => Request::CreateTopic {
                topic: f.string("topic")?,
                partitions: f.u32("partitions")?,
                replication_factor: f.int("replication_factor", 0, i64::from(i32::MAX))? as usize,
                config: match f.get("config") {
                    None => None,
                    Some(_) => Some(topic_config_of(f.object("config")?)?),
                },
            },
            Operation::Metadata => Request::Metadata {
                topic: f.string("topic")?,
            },
            Operation::Produce => {
                let tp = TopicPartition::new(
                    f.string("topic")?,
                    f.opt_u32("partition")?.unwrap_or(0),
                );
                let records = match f.opt_array("records")? {
                    Some(items) => {
                        if f.get("key_b64").is_some() || f.get("value_b64").is_some() {
                            return bad(
                                "a produce request has either \"records\" or key_b64/value_b64, not both",
                            );
                        }
                        ProduceRecords::Batch(records_of(items)?)
                    }
                    None => ProduceRecords::Single {
                        key: f.opt_b64("key_b64")?,
                        value: f.opt_b64("value_b64")?,
                    },
                };
                Request::Produce(ProduceSpec {
                    tp,
                    acks: acks_of(&f)?,
                    producer: producer_of(&f)?,
                    records,
                })
            }
            Operation::Fetch => {
                let isolation = match f.opt_str("isolation")? {
                    None => Isolation::ReadUncommitted,
                    Some(s) => Isolation::parse(s).map_err(|e| DecodeError(e.to_string()))?,
                };
                Request::Fetch {
                    request: FetchRequest {
                        tp: tp_of(&f)?,
                        offset: f.i64("offset")?,
                        max_records: f.opt_i64("max_records")?.unwrap_or(100),
                        max_bytes: f
                            .opt_int("max_bytes", 0, i64::MAX)?
                            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                        isolation,
                    },
                    max_wait_ms: f
                        .opt_int("max_wait_ms", 0, i64::from(i32::MAX))?
                        .map(|n| n as u32),
                }
            }
            Operation::JoinGroup => Request::JoinGroup {
                group_id: f.string("group_id")?,
                member_id: f.string("member_id")?,
                topics: f.strings("topics")?,
                assignor: match f.opt_str("assignor")? {
                    None => None,
                    Some(s) => Some(AssignorKind::parse(s).ok_or_else(|| {
                        DecodeError(format!(
                            "field \"assignor\" must be \"roundrobin\", \"range\" or \"sticky\", got {s:?}"
                        ))
                    })?),
                },
            },
            Operation::Heartbeat => Request::Heartbeat {
                group_id: f.string("group_id")?,
                member_id: f.string("member_id")?,
                generation: f.i32("generation")?,
            },
            Operation::CommitOffsets => Request::CommitOffsets {
                group_id: f.string("group_id")?,
                member_id: f.string("member_id")?,
                generation: f.i32("generation")?,
                offsets: offsets_of(&f, "offsets")?,
            },
            Operation::ListTopics => Request::ListTopics,
            Operation::ListOffsets => {
                let at = match f.require("at")? {
                    Value::String(s) if s == "earliest" => OffsetSpec::Earliest,
                    Value::String(s) if s == "latest" => OffsetSpec::Latest,
                    Value::String(s) => {
                        return bad(format!(
                            "field \"at\" must be \"earliest\", \"latest\" or a timestamp in ms, got {s:?}"
                        ));
                    }
                    _ => OffsetSpec::Timestamp(f.i64("at")?),
                };
                Request::ListOffsets { tp: tp_of(&f)?, at }
            }
            Operation::LeaveGroup => Request::LeaveGroup {
                group_id: f.string("group_id")?,
                member_id: f.string("member_id")?,
            },
            Operation::FetchOffsets => Request::FetchOffsets {
                group_id: f.string("group_id")?,
                partitions: match f.opt_array("partitions")? {
                    None => None,
                    Some(items) => Some(partitions_of(items, "partitions")?),
                },
            },
            Operation::DescribeGroup => Request::DescribeGroup {
                group_id: f.string("group_id")?,
            },
            Operation::InitProducer => Request::InitProducer {
                name: f.opt_str("name")?.map(str::to_string),
            },
            Operation::BeginTxn => Request::BeginTxn {
                transactional_id: f.string("transactional_id")?,
            },
            Operation::TxnProduce => Request::TxnProduce {
                txn: txn_of(&f)?,
                topic: f.string("topic")?,
                partition: f.opt_u32("partition")?,
                key: f.opt_b64("key_b64")?,
                value: f.opt_b64("value_b64")?,
            },
            Operation::TxnSendOffsets => Request::TxnSendOffsets {
                txn: txn_of(&f)?,
                group_id: f.string("group_id")?,
                offsets: offsets_of(&f, "offsets")?,
            },
            Operation::CommitTxn => Request::CommitTxn { txn: txn_of(&f)? },
            Operation::AbortTxn => Request::AbortTxn { txn: txn_of(&f)? },
            Operation::DescribeCluster => Request::DescribeCluster,
            Operation::Stats => Request::Stats,
            Operation::Promote => Request::Promote {
                tp: tp_of(&f)?,
                broker_id: f.i32("broker_id")?,
            },
            Operation::Rejoin => Request::Rejoin {
                tp: tp_of(&f)?,
                broker_id: f.i32("broker_id")?,
            },
            Operation::RemoveFromIsr => Request::RemoveFromIsr {
                tp: tp_of(&f)?,
                broker_id: f.i32("broker_id")?,
            },
            Operation::ReplicateOnce => Request::ReplicateOnce,
            Operation::ExpireGroupMembers => Request::ExpireGroupMembers,
            Operation::Roll => Request::Roll { tp: tp_of(&f)? },
            Operation::ApplyRetention => {
                let retention_ms = f.opt_i64("retention_ms")?;
                let retention_bytes = f.opt_i64("retention_bytes")?;
                Request::ApplyRetention {
                    topic: f.string("topic")?,
                    overrides: (retention_ms.is_some() || retention_bytes.is_some()).then_some(
                        RetentionPolicy {
                            retention_ms,
                            retention_bytes,
                        },
                    ),
                }
            }
            Operation::Compact => Request::Compact {
                topic: f.string("topic")?,
                delete_retention_ms: f.opt_i64("delete_retention_ms")?,
            },
            Operation::ExpireTransactions => Request::ExpireTransactions,
            Operation::FlushCycle => Request::FlushCycle,
        })
    }

    /// The request as one wire line (with `\n`), `operation` first and the
    /// optional `id` last.
    pub fn encode(&self, id: Option<&Value>) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        let mut w = ObjWriter::new(&mut out);
        w.str("operation", self.operation().name());
        match self {
            Request::CreateTopic {
                topic,
                partitions,
                replication_factor,
                config,
            } => {
                w.str("topic", topic)
                    .int("partitions", i64::from(*partitions))
                    .int("replication_factor", *replication_factor as i64);
                if let Some(c) = config {
                    w.with("config", |out| write_config_overrides(out, c));
                }
            }
            Request::Metadata { topic } => {
                w.str("topic", topic);
            }
            Request::Produce(p) => {
                w.str("topic", &p.tp.topic)
                    .int("partition", i64::from(p.tp.partition))
                    .str("acks", p.acks.as_str());
                match &p.records {
                    ProduceRecords::Single { key, value } => {
                        w.b64("key_b64", key.as_deref())
                            .b64("value_b64", value.as_deref());
                    }
                    ProduceRecords::Batch(entries) => {
                        w.with("records", |out| {
                            push_array(out, entries, |out, e| {
                                let mut r = ObjWriter::new(out);
                                r.b64("key_b64", e.key.as_deref())
                                    .b64("value_b64", e.value.as_deref())
                                    .with("headers", |out| write_headers(out, &e.headers));
                                if let Some(ts) = e.timestamp_ms {
                                    r.int("timestamp_ms", ts);
                                }
                                r.end();
                            })
                        });
                    }
                }
                if let Some(pi) = p.producer {
                    w.int("producer_id", pi.producer_id)
                        .int("producer_epoch", i64::from(pi.producer_epoch))
                        .int("base_sequence", i64::from(pi.base_sequence));
                }
            }
            Request::Fetch {
                request,
                max_wait_ms,
            } => {
                w.str("topic", &request.tp.topic)
                    .int("partition", i64::from(request.tp.partition))
                    .int("offset", request.offset)
                    .int("max_records", request.max_records)
                    .str("isolation", request.isolation.as_str());
                if let Some(b) = request.max_bytes {
                    w.int("max_bytes", i64::try_from(b).unwrap_or(i64::MAX));
                }
                if let Some(ms) = max_wait_ms {
                    w.int("max_wait_ms", i64::from(*ms));
                }
            }
            Request::JoinGroup {
                group_id,
                member_id,
                topics,
                assignor,
            } => {
                w.str("group_id", group_id)
                    .str("member_id", member_id)
                    .with("topics", |out| {
                        push_array(out, topics, |o, t| push_str(o, t))
                    });
                if let Some(a) = assignor {
                    w.str("assignor", a.name());
                }
            }
            Request::Heartbeat {
                group_id,
                member_id,
                generation,
            } => {
                w.str("group_id", group_id)
                    .str("member_id", member_id)
                    .int("generation", i64::from(*generation));
            }
            Request::CommitOffsets {
                group_id,
                member_id,
                generation,
                offsets,
            } => {
                w.str("group_id", group_id)
                    .str("member_id", member_id)
                    .int("generation", i64::from(*generation))
                    .with("offsets", |out| write_offsets(out, offsets));
            }
            Request::ListTopics
            | Request::DescribeCluster
            | Request::Stats
            | Request::ReplicateOnce
            | Request::ExpireGroupMembers
            | Request::ExpireTransactions
            | Request::FlushCycle => {}
            Request::ListOffsets { tp, at } => {
                write_tp(&mut w, tp);
                match at {
                    OffsetSpec::Earliest => w.str("at", "earliest"),
                    OffsetSpec::Latest => w.str("at", "latest"),
                    OffsetSpec::Timestamp(ts) => w.int("at", *ts),
                };
            }
            Request::LeaveGroup {
                group_id,
                member_id,
            } => {
                w.str("group_id", group_id).str("member_id", member_id);
            }
            Request::FetchOffsets {
                group_id,
                partitions,
            } => {
                w.str("group_id", group_id);
                if let Some(ps) = partitions {
                    w.with("partitions", |out| push_array(out, ps, write_tp_object));
                }
            }
            Request::DescribeGroup { group_id } => {
                w.str("group_id", group_id);
            }
            Request::InitProducer { name } => {
                if let Some(n) = name {
                    w.str("name", n);
                }
            }
            Request::BeginTxn { transactional_id } => {
                w.str("transactional_id", transactional_id);
            }
            Request::TxnProduce {
                txn,
                topic,
                partition,
                key,
                value,
            } => {
                write_txn(&mut w, txn);
                w.str("topic", topic);
                if let Some(p) = partition {
                    w.int("partition", i64::from(*p));
                }
                w.b64("key_b64", key.as_deref())
                    .b64("value_b64", value.as_deref());
            }
            Request::TxnSendOffsets {
                txn,
                group_id,
                offsets,
            } => {
                write_txn(&mut w, txn);
                w.str("group_id", group_id)
                    .with("offsets", |out| write_offsets(out, offsets));
            }
            Request::CommitTxn { txn } | Request::AbortTxn { txn } => write_txn(&mut w, txn),
            Request::Promote { tp, broker_id }
            | Request::Rejoin { tp, broker_id }
            | Request::RemoveFromIsr { tp, broker_id } => {
                write_tp(&mut w, tp);
                w.int("broker_id", i64::from(*broker_id));
            }
            Request::Roll { tp } => write_tp(&mut w, tp),
            Request::ApplyRetention { topic, overrides } => {
                w.str("topic", topic);
                if let Some(p) = overrides {
                    if let Some(ms) = p.retention_ms {
                        w.int("retention_ms", ms);
                    }
                    if let Some(b) = p.retention_bytes {
                        w.int("retention_bytes", b);
                    }
                }
            }
            Request::Compact {
                topic,
                delete_retention_ms,
            } => {
                w.str("topic", topic);
                if let Some(ms) = delete_retention_ms {
                    w.int("delete_retention_ms", *ms);
                }
            }
        }
        if let Some(id) = id {
            w.value("id", id);
        }
        w.end();
        out.push(b'\n');
        out
    }
}

fn write_tp(w: &mut ObjWriter<'_>, tp: &TopicPartition) {
    w.str("topic", &tp.topic)
        .int("partition", i64::from(tp.partition));
}

fn write_tp_object(out: &mut Vec<u8>, tp: &TopicPartition) {
    let mut w = ObjWriter::new(out);
    write_tp(&mut w, tp);
    w.end();
}

fn write_txn(w: &mut ObjWriter<'_>, txn: &TxnRef) {
    w.str("transactional_id", &txn.transactional_id)
        .int("producer_epoch", i64::from(txn.producer_epoch));
}

fn write_offsets<'a>(
    out: &mut Vec<u8>,
    offsets: impl IntoIterator<Item = (&'a TopicPartition, &'a i64)>,
) {
    push_array(out, offsets, |out, (tp, offset)| {
        let mut w = ObjWriter::new(out);
        write_tp(&mut w, tp);
        w.int("offset", *offset);
        w.end();
    });
}

fn write_headers(out: &mut Vec<u8>, headers: &[Header]) {
    push_array(out, headers, |out, h| {
        let mut w = ObjWriter::new(out);
        w.str("key", &h.key).b64("value_b64", h.value.as_deref());
        w.end();
    });
}

fn write_config_overrides(out: &mut Vec<u8>, c: &TopicConfigOverrides) {
    let mut w = ObjWriter::new(out);
    if let Some(p) = c.cleanup_policy {
        w.str("cleanup.policy", p.as_str());
    }
    if let Some(v) = c.retention_ms {
        w.opt_int("retention.ms", v);
    }
    if let Some(v) = c.retention_bytes {
        w.opt_int("retention.bytes", v);
    }
    if let Some(v) = c.segment_bytes {
        w.opt_int("segment.bytes", v.map(|n| n as i64));
    }
    if let Some(v) = c.delete_retention_ms {
        w.int("delete.retention.ms", v);
    }
    w.end();
}

fn write_config(out: &mut Vec<u8>, c: &TopicConfig) {
    let mut w = ObjWriter::new(out);
    w.str("cleanup.policy", c.cleanup_policy.as_str())
        .opt_int("retention.ms", c.retention_ms)
        .opt_int("retention.bytes", c.retention_bytes)
        .opt_int("segment.bytes", c.segment_bytes.map(|n| n as i64))
        .int("delete.retention.ms", c.delete_retention_ms);
    w.end();
}

/// The core counters plus the adapter's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStats {
    pub cluster: ClusterStats,
    /// Connections open right now.
    pub connections: u64,
    /// Requests answered since the server started.
    pub requests: u64,
    /// Requests being executed right now (this one included).
    pub in_flight: u64,
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
    ListOffsets(Option<i64>),
    LeaveGroup {
        left: bool,
    },
    /// Committed offsets; `None` for a requested partition without one.
    FetchOffsets(Vec<(TopicPartition, Option<i64>)>),
    /// `None` for a group the coordinator does not know (wire state "Dead").
    DescribeGroup {
        group_id: String,
        description: Option<GroupDescription>,
    },
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

fn write_partition_info(out: &mut Vec<u8>, p: &PartitionInfo, with_topic: bool) {
    let mut w = ObjWriter::new(out);
    if with_topic {
        w.str("topic", &p.topic);
    }
    w.int("partition", i64::from(p.partition))
        .int("leader_id", i64::from(p.leader_id))
        .int("leader_epoch", i64::from(p.leader_epoch))
        .with("replicas", |o| write_ids(o, &p.replicas))
        .with("isr", |o| write_ids(o, &p.isr))
        .int("high_watermark", p.high_watermark)
        .int("last_stable_offset", p.last_stable_offset)
        .int("log_start_offset", p.log_start_offset)
        .with("log_end_offsets", |out| {
            let mut m = ObjWriter::new(out);
            for (b, leo) in &p.log_end_offsets {
                m.int(&b.to_string(), *leo);
            }
            m.end();
        })
        .int("log_end_offset", p.log_end_offset);
    w.end();
}

fn write_ids(out: &mut Vec<u8>, ids: &[BrokerId]) {
    push_array(out, ids, |o, b| push_int(o, i64::from(*b)));
}

fn write_record(out: &mut Vec<u8>, r: &ConsumerRecord) {
    let mut w = ObjWriter::new(out);
    w.int("offset", r.offset)
        .b64("key_b64", r.key.as_deref())
        .b64("value_b64", r.value.as_deref())
        .int("timestamp_ms", r.timestamp_ms)
        .with("headers", |out| write_headers(out, &r.headers));
    w.end();
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
        match self {
            Response::CreateTopic { topic } => {
                w.str("topic", topic);
            }
            Response::Metadata(d) => {
                w.str("topic", &d.name)
                    .with("partitions", |out| {
                        push_array(out, &d.partitions, |o, p| write_partition_info(o, p, false))
                    })
                    .with("config", |out| write_config(out, &d.config));
            }
            Response::Produce { response, batch } => {
                w.int("partition", i64::from(response.partition))
                    .opt_int("offset", response.base_offset);
                if *batch {
                    w.int("count", response.count as i64);
                }
                if response.duplicate {
                    w.bool("duplicate", true);
                }
            }
            Response::Fetch(f) => {
                w.with("records", |out| push_array(out, &f.records, write_record))
                    .int("high_watermark", f.high_watermark)
                    .int("last_stable_offset", f.last_stable_offset)
                    .int("log_start_offset", f.log_start_offset)
                    .int("next_offset", f.next_offset);
            }
            Response::JoinGroup(a) => {
                w.int("generation", i64::from(a.generation))
                    .with("assignment", |out| {
                        push_array(out, &a.partitions, write_tp_object)
                    });
            }
            Response::Heartbeat
            | Response::CommitOffsets
            | Response::TxnSendOffsets
            | Response::CommitTxn
            | Response::AbortTxn
            | Response::Rejoin
            | Response::RemoveFromIsr
            | Response::ReplicateOnce
            | Response::Roll
            | Response::FlushCycle => {}
            Response::ListTopics(topics) => {
                w.with("topics", |out| {
                    push_array(out, topics, |o, t| push_str(o, t))
                });
            }
            Response::ListOffsets(offset) => {
                w.opt_int("offset", *offset);
            }
            Response::LeaveGroup { left } => {
                w.bool("left", *left);
            }
            Response::FetchOffsets(offsets) => {
                w.with("offsets", |out| {
                    push_array(out, offsets, |out, (tp, o)| {
                        let mut w = ObjWriter::new(out);
                        write_tp(&mut w, tp);
                        w.opt_int("offset", *o);
                        w.end();
                    })
                });
            }
            Response::DescribeGroup {
                group_id,
                description,
            } => {
                w.str("group_id", group_id);
                match description {
                    None => {
                        w.str("state", "Dead")
                            .int("generation", 0)
                            .raw("assignor", b"null")
                            .raw("members", b"[]");
                    }
                    Some(d) => {
                        w.str("state", d.state.as_str())
                            .int("generation", i64::from(d.generation))
                            .str("assignor", d.assignor.name())
                            .with("members", |out| {
                                push_array(out, &d.members, |out, m| {
                                    let mut w = ObjWriter::new(out);
                                    w.str("member_id", &m.member_id)
                                        .with("topics", |out| {
                                            push_array(out, &m.topics, |o, t| push_str(o, t))
                                        })
                                        .with("assignment", |out| {
                                            push_array(out, &m.assignment, write_tp_object)
                                        })
                                        .int("deadline_ms", m.deadline_ms);
                                    w.end();
                                })
                            });
                    }
                }
            }
            Response::InitProducer(i) | Response::BeginTxn(i) => {
                w.int("producer_id", i.producer_id)
                    .int("producer_epoch", i64::from(i.epoch));
            }
            Response::TxnProduce { partition, offset } => {
                w.int("partition", i64::from(*partition))
                    .int("offset", *offset);
            }
            Response::DescribeCluster(d) => {
                w.with("brokers", |o| write_ids(o, &d.brokers))
                    .with("partitions", |out| {
                        push_array(out, &d.partitions, |o, p| write_partition_info(o, p, true))
                    });
            }
            Response::Stats(s) => {
                let c = &s.cluster;
                w.int("uptime_ms", c.uptime_ms)
                    .int("connections", s.connections as i64)
                    .int("requests", s.requests as i64)
                    .int("topics", c.topics as i64)
                    .int("partitions", c.partitions as i64)
                    .int("groups", c.groups as i64)
                    .int("transactions", c.transactions as i64)
                    .int("records", c.records)
                    .int("log_bytes", c.log_bytes as i64)
                    .int("owned_tasks", c.owned_tasks as i64)
                    .int("in_flight", s.in_flight as i64);
            }
            Response::Promote(le) => {
                w.int("leader_id", i64::from(le.leader_id))
                    .int("leader_epoch", i64::from(le.leader_epoch));
            }
            Response::ExpireGroupMembers(expired) => {
                w.with("expired", |out| {
                    push_array(out, expired, |out, (g, m)| {
                        let mut w = ObjWriter::new(out);
                        w.str("group_id", g).str("member_id", m);
                        w.end();
                    })
                });
            }
            Response::ApplyRetention(by_partition) => {
                w.with("deleted_segments", |out| {
                    push_array(out, by_partition.values().flatten(), |o, b| push_int(o, *b))
                })
                .with("partitions", |out| {
                    push_array(out, by_partition, |out, (p, bases)| {
                        let mut w = ObjWriter::new(out);
                        w.int("partition", i64::from(*p))
                            .with("deleted_segments", |out| {
                                push_array(out, bases, |o, b| push_int(o, *b))
                            });
                        w.end();
                    })
                });
            }
            Response::Compact(c) => {
                w.int("records_before", c.records_before as i64)
                    .int("records_after", c.records_after as i64);
            }
            Response::ExpireTransactions(ids) => {
                w.with("aborted", |out| push_array(out, ids, |o, t| push_str(o, t)));
            }
        }
        if let Some(id) = id {
            w.value("id", id);
        }
        w.end();
        out.push(b'\n');
    }

    /// Decodes a success response to `request` (the client side). Fails
    /// with a message when the server's answer does not have the shape of
    /// spec 06.
    pub fn decode(request: &Request, map: &Map<String, Value>) -> Result<Response, DecodeError> {
        let f = Fields::new(map, "response");
        Ok(match request {
            Request::CreateTopic { .. } => Response::CreateTopic {
                topic: f.string("topic")?,
            },
            Request::Metadata { .. } => {
                let name = f.string("topic")?;
                let partitions = f
                    .array("partitions")?
                    .iter()
                    .enumerate()
                    .map(|(i, v)| partition_info_of(v, &item_ctx("partitions", i), Some(&name)))
                    .collect::<Decoded<Vec<_>>>()?;
                Response::Metadata(TopicDescription {
                    config: topic_config_full_of(f.object("config")?)?,
                    name,
                    partitions,
                })
            }
            Request::Produce(p) => Response::Produce {
                response: ProduceResponse {
                    partition: f.u32("partition")?,
                    base_offset: f.opt_i64("offset")?,
                    count: if p.is_batch() {
                        f.int("count", 0, i64::MAX)? as usize
                    } else {
                        1
                    },
                    duplicate: f.get("duplicate").is_some() && f.bool("duplicate")?,
                },
                batch: p.is_batch(),
            },
            Request::Fetch { .. } => Response::Fetch(FetchResult {
                records: f
                    .array("records")?
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let ctx = item_ctx("records", i);
                        let r = Fields::new(object_item(v, &ctx)?, &ctx);
                        Ok(ConsumerRecord {
                            offset: r.i64("offset")?,
                            key: r.opt_b64("key_b64")?,
                            value: r.opt_b64("value_b64")?,
                            timestamp_ms: r.i64("timestamp_ms")?,
                            headers: headers_of(&r)?,
                        })
                    })
                    .collect::<Decoded<Vec<_>>>()?,
                high_watermark: f.i64("high_watermark")?,
                last_stable_offset: f.i64("last_stable_offset")?,
                log_start_offset: f.i64("log_start_offset")?,
                next_offset: f.i64("next_offset")?,
            }),
            Request::JoinGroup { .. } => Response::JoinGroup(MemberAssignment {
                generation: f.i32("generation")?,
                partitions: partitions_of(f.array("assignment")?, "assignment")?,
            }),
            Request::Heartbeat { .. } => Response::Heartbeat,
            Request::CommitOffsets { .. } => Response::CommitOffsets,
            Request::ListTopics => Response::ListTopics(f.strings("topics")?),
            Request::ListOffsets { .. } => Response::ListOffsets(f.opt_i64("offset")?),
            Request::LeaveGroup { .. } => Response::LeaveGroup {
                left: f.bool("left")?,
            },
            Request::FetchOffsets { .. } => Response::FetchOffsets(
                f.array("offsets")?
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let ctx = item_ctx("offsets", i);
                        let o = Fields::new(object_item(v, &ctx)?, &ctx);
                        Ok((tp_of(&o)?, o.opt_i64("offset")?))
                    })
                    .collect::<Decoded<Vec<_>>>()?,
            ),
            Request::DescribeGroup { .. } => {
                let group_id = f.string("group_id")?;
                let state = f.str("state")?;
                let description = match state {
                    "Dead" => None,
                    _ => Some(GroupDescription {
                        group_id: group_id.clone(),
                        state: match state {
                            "Empty" => GroupState::Empty,
                            "PreparingRebalance" => GroupState::PreparingRebalance,
                            "Stable" => GroupState::Stable,
                            other => return bad(format!("unknown group state {other:?}")),
                        },
                        generation: f.i32("generation")?,
                        assignor: AssignorKind::parse(f.str("assignor")?)
                            .ok_or_else(|| DecodeError("unknown assignor".into()))?,
                        members: f
                            .array("members")?
                            .iter()
                            .enumerate()
                            .map(|(i, v)| {
                                let ctx = item_ctx("members", i);
                                let m = Fields::new(object_item(v, &ctx)?, &ctx);
                                Ok(MemberDescription {
                                    member_id: m.string("member_id")?,
                                    topics: m.strings("topics")?,
                                    assignment: partitions_of(m.array("assignment")?, &ctx)?,
                                    deadline_ms: m.i64("deadline_ms")?,
                                })
                            })
                            .collect::<Decoded<Vec<_>>>()?,
                    }),
                };
                Response::DescribeGroup {
                    group_id,
                    description,
                }
            }
            Request::InitProducer { .. } => Response::InitProducer(identity_of(&f)?),
            Request::BeginTxn { .. } => Response::BeginTxn(identity_of(&f)?),
            Request::TxnProduce { .. } => Response::TxnProduce {
                partition: f.u32("partition")?,
                offset: f.i64("offset")?,
            },
            Request::TxnSendOffsets { .. } => Response::TxnSendOffsets,
            Request::CommitTxn { .. } => Response::CommitTxn,
            Request::AbortTxn { .. } => Response::AbortTxn,
            Request::DescribeCluster => Response::DescribeCluster(ClusterDescription {
                brokers: ids_of(f.array("brokers")?)?,
                partitions: f
                    .array("partitions")?
                    .iter()
                    .enumerate()
                    .map(|(i, v)| partition_info_of(v, &item_ctx("partitions", i), None))
                    .collect::<Decoded<Vec<_>>>()?,
            }),
            Request::Stats => {
                let n = |name: &str| f.int(name, 0, i64::MAX);
                Response::Stats(ServerStats {
                    cluster: ClusterStats {
                        uptime_ms: f.i64("uptime_ms")?,
                        topics: n("topics")? as usize,
                        partitions: n("partitions")? as usize,
                        groups: n("groups")? as usize,
                        transactions: n("transactions")? as usize,
                        records: f.i64("records")?,
                        log_bytes: n("log_bytes")? as u64,
                        owned_tasks: n("owned_tasks")? as usize,
                    },
                    connections: n("connections")? as u64,
                    requests: n("requests")? as u64,
                    in_flight: n("in_flight")? as u64,
                })
            }
            Request::Promote { .. } => Response::Promote(LeaderAndEpoch {
                leader_id: f.i32("leader_id")?,
                leader_epoch: f.i32("leader_epoch")?,
            }),
            Request::Rejoin { .. } => Response::Rejoin,
            Request::RemoveFromIsr { .. } => Response::RemoveFromIsr,
            Request::ReplicateOnce => Response::ReplicateOnce,
            Request::ExpireGroupMembers => Response::ExpireGroupMembers(
                f.array("expired")?
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let ctx = item_ctx("expired", i);
                        let e = Fields::new(object_item(v, &ctx)?, &ctx);
                        Ok((e.string("group_id")?, e.string("member_id")?))
                    })
                    .collect::<Decoded<Vec<_>>>()?,
            ),
            Request::Roll { .. } => Response::Roll,
            Request::ApplyRetention { .. } => {
                let mut out = BTreeMap::new();
                for (i, v) in f.array("partitions")?.iter().enumerate() {
                    let ctx = item_ctx("partitions", i);
                    let p = Fields::new(object_item(v, &ctx)?, &ctx);
                    let bases = p
                        .array("deleted_segments")?
                        .iter()
                        .map(|b| crate::wire::int_value(b, i64::MIN, i64::MAX).map_err(DecodeError))
                        .collect::<Decoded<Vec<_>>>()?;
                    out.insert(p.u32("partition")?, bases);
                }
                Response::ApplyRetention(out)
            }
            Request::Compact { .. } => Response::Compact(CompactionSummary {
                records_before: f.int("records_before", 0, i64::MAX)? as u64,
                records_after: f.int("records_after", 0, i64::MAX)? as u64,
            }),
            Request::ExpireTransactions => Response::ExpireTransactions(f.strings("aborted")?),
            Request::FlushCycle => Response::FlushCycle,
        })
    }
}

fn identity_of(f: &Fields<'_>) -> Decoded<ProducerIdentity> {
    Ok(ProducerIdentity {
        producer_id: f.i64("producer_id")?,
        epoch: f.i32("producer_epoch")?,
    })
}

fn ids_of(items: &[Value]) -> Decoded<Vec<BrokerId>> {
    items
        .iter()
        .map(|v| {
            crate::wire::int_value(v, i64::from(i32::MIN), i64::from(i32::MAX))
                .map(|n| n as i32)
                .map_err(DecodeError)
        })
        .collect()
}

fn partition_info_of(v: &Value, ctx: &str, topic: Option<&str>) -> Decoded<PartitionInfo> {
    let p = Fields::new(object_item(v, ctx)?, ctx);
    let mut log_end_offsets = BTreeMap::new();
    for (b, leo) in p.object("log_end_offsets")? {
        let broker = b
            .parse::<BrokerId>()
            .map_err(|_| DecodeError(format!("{ctx}: broker id {b:?} is not a number")))?;
        let leo = crate::wire::int_value(leo, i64::MIN, i64::MAX).map_err(DecodeError)?;
        log_end_offsets.insert(broker, leo);
    }
    Ok(PartitionInfo {
        topic: match topic {
            Some(t) => t.to_string(),
            None => p.string("topic")?,
        },
        partition: p.u32("partition")?,
        leader_id: p.i32("leader_id")?,
        leader_epoch: p.i32("leader_epoch")?,
        replicas: ids_of(p.array("replicas")?)?,
        isr: ids_of(p.array("isr")?)?,
        high_watermark: p.i64("high_watermark")?,
        last_stable_offset: p.i64("last_stable_offset")?,
        log_start_offset: p.i64("log_start_offset")?,
        log_end_offset: p.i64("log_end_offset")?,
        log_end_offsets,
    })
}

fn topic_config_full_of(map: &Map<String, Value>) -> Decoded<TopicConfig> {
    let o = topic_config_of(map)?;
    let missing = || DecodeError("config lacks a setting".into());
    Ok(TopicConfig {
        cleanup_policy: o.cleanup_policy.ok_or_else(missing)?,
        retention_ms: o.retention_ms.ok_or_else(missing)?,
        retention_bytes: o.retention_bytes.ok_or_else(missing)?,
        segment_bytes: o.segment_bytes.ok_or_else(missing)?,
        delete_retention_ms: o.delete_retention_ms.ok_or_else(missing)?,
    })
}
