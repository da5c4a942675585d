//! `JsonTcpClient`: a typed async client for every operation of spec 06,
//! over one connection, one request at a time or several pipelined
//! (`call_many`). Errors carry the server's stable code and message; an
//! optional request timeout bounds every call.

use crate::protocol::{
    ErrorResponse, Password, ProduceRecords, ProduceSpec, Request, Response, ServerStats,
    TopicConfigOverrides, TxnRef,
};
use crate::wire::type_name;
use mk_cluster::{
    AckMode, AnyGroupDescription, AssignorKind, BrokerId, Bytes, ClusterDescription,
    CompactionSummary, ConfigChange, ErrorCode, FetchRequest, FetchResult, GroupListing,
    LeaderAndEpoch, MemberAssignment, OffsetAndMetadata, OffsetSpec, OngoingReassignment,
    ProduceResponse, ProducerIdentity, RetentionPolicy, ScramMechanism, ScramUserInfo, TopicConfig,
    TopicConfigEntry, TopicDescription, TopicPartition, TxnHandle,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpStream, ToSocketAddrs};

/// The longest response line the client accepts.
pub const MAX_RESPONSE_BYTES: u64 = 256 * 1_048_576;

/// What can go wrong with a call.
#[derive(Debug)]
pub enum ClientError {
    /// The server answered with an error.
    Server(ErrorResponse),
    /// The connection failed or was closed.
    Io(io::Error),
    /// The server's answer is not what spec 06 describes.
    Protocol(String),
    /// No answer within the request timeout. The connection is abandoned
    /// (a late answer would be taken for the next request's).
    TimedOut(std::time::Duration),
}

impl ClientError {
    /// The server's error code, if the server answered with one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Server(e) => Some(e.code),
            _ => None,
        }
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Server(e) => write!(f, "{}: {}", e.code, e.message),
            ClientError::Io(e) => write!(f, "connection error: {e}"),
            ClientError::Protocol(m) => write!(f, "protocol error: {m}"),
            ClientError::TimedOut(d) => write!(
                f,
                "no answer from the server within {} ms (the request timeout)",
                d.as_millis()
            ),
        }
    }
}

impl std::error::Error for ClientError {}

impl From<io::Error> for ClientError {
    fn from(e: io::Error) -> Self {
        ClientError::Io(e)
    }
}

pub type ClientResult<T> = Result<T, ClientError>;

/// One connection to a JSON-TCP server.
#[derive(Debug)]
pub struct JsonTcpClient {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    line: Vec<u8>,
    timeout: Option<Duration>,
    /// Set after a timeout: the stream may still carry a late answer.
    abandoned: bool,
}

macro_rules! expect {
    ($call:expr, $pat:pat => $out:expr) => {
        match $call {
            $pat => Ok($out),
            other => Err(ClientError::Protocol(format!(
                "unexpected response {other:?}"
            ))),
        }
    };
}

impl JsonTcpClient {
    pub async fn connect(addr: impl ToSocketAddrs) -> io::Result<JsonTcpClient> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (rd, wr) = stream.into_split();
        Ok(JsonTcpClient {
            reader: BufReader::new(rd),
            writer: wr,
            line: Vec::new(),
            timeout: None,
            abandoned: false,
        })
    }

    /// Bounds every later call (`None`: wait as long as the server takes).
    /// A long poll's `max_wait_ms` comes on top of it, so a fetch that
    /// waits on purpose does not time out.
    pub fn set_request_timeout(&mut self, timeout: Option<Duration>) {
        self.timeout = timeout;
    }

    /// Sends one raw line (a `\n` is added if missing) and returns the raw
    /// response line without its `\n`.
    pub async fn call_raw(&mut self, line: &[u8]) -> ClientResult<Vec<u8>> {
        self.writer.write_all(line).await?;
        if !line.ends_with(b"\n") {
            self.writer.write_all(b"\n").await?;
        }
        read_line(&mut self.reader, &mut self.line).await
    }

    /// Sends a request and decodes its response.
    pub async fn call(&mut self, request: &Request) -> ClientResult<Response> {
        let line = request.encode(None);
        let extra = long_poll(request);
        let (reader, writer, buf) = (&mut self.reader, &mut self.writer, &mut self.line);
        let exchange = async move {
            writer.write_all(&line).await?;
            let answer = read_line(reader, buf).await?;
            decode_answer(request, &answer)
        };
        // The halves are borrowed by `exchange`; `timed` only needs the
        // timeout settings, so they are copied out first.
        let (timeout, abandoned) = (self.timeout, self.abandoned);
        let result = Self::timed_with(timeout, abandoned, extra, exchange).await;
        if matches!(result, Err(ClientError::TimedOut(_))) {
            self.abandoned = true;
        }
        result
    }

    /// Pipelines `requests`: writes them all while reading the answers, so
    /// the server works on the next request while this one's answer
    /// travels. One result per request, in order; the outer error is a
    /// broken connection or a timeout.
    pub async fn call_many(
        &mut self,
        requests: &[Request],
    ) -> ClientResult<Vec<ClientResult<Response>>> {
        let mut bytes = Vec::new();
        for r in requests {
            bytes.extend_from_slice(&r.encode(None));
        }
        let extra = requests.iter().map(long_poll).sum();
        let (reader, writer, buf) = (&mut self.reader, &mut self.writer, &mut self.line);
        let exchange = async move {
            let write = async { writer.write_all(&bytes).await.map_err(ClientError::Io) };
            let read = async {
                let mut answers = Vec::with_capacity(requests.len());
                for r in requests {
                    let line = read_line(reader, buf).await?;
                    answers.push(decode_answer(r, &line));
                }
                Ok(answers)
            };
            let (written, answers) = tokio::join!(write, read);
            written?;
            answers
        };
        let (timeout, abandoned) = (self.timeout, self.abandoned);
        let result = Self::timed_with(timeout, abandoned, extra, exchange).await;
        if matches!(result, Err(ClientError::TimedOut(_))) {
            self.abandoned = true;
        }
        result
    }

    async fn timed_with<T>(
        timeout: Option<Duration>,
        abandoned: bool,
        extra: Duration,
        fut: impl std::future::Future<Output = ClientResult<T>>,
    ) -> ClientResult<T> {
        if abandoned {
            return Err(ClientError::Io(io::Error::other(
                "the connection was abandoned after a request timed out",
            )));
        }
        let Some(limit) = timeout else {
            return fut.await;
        };
        match tokio::time::timeout(limit + extra, fut).await {
            Ok(r) => r,
            Err(_) => Err(ClientError::TimedOut(limit)),
        }
    }

    pub async fn create_topic(
        &mut self,
        topic: &str,
        partitions: u32,
        replication_factor: usize,
    ) -> ClientResult<()> {
        self.create_topic_with_config(topic, partitions, replication_factor, None)
            .await
    }

    pub async fn create_topic_with_config(
        &mut self,
        topic: &str,
        partitions: u32,
        replication_factor: usize,
        config: Option<TopicConfigOverrides>,
    ) -> ClientResult<()> {
        let r = self
            .call(&Request::CreateTopic {
                topic: topic.into(),
                partitions,
                replication_factor,
                config,
            })
            .await?;
        expect!(r, Response::CreateTopic { .. } => ())
    }

    pub async fn metadata(&mut self, topic: &str) -> ClientResult<TopicDescription> {
        self.metadata_with(topic, false).await
    }

    /// The topic's metadata; a missing topic is created first when
    /// `allow_auto_create` and the broker auto-creates topics, as for a
    /// Kafka producer (otherwise UNKNOWN_TOPIC).
    pub async fn metadata_with(
        &mut self,
        topic: &str,
        allow_auto_create: bool,
    ) -> ClientResult<TopicDescription> {
        let r = self
            .call(&Request::Metadata {
                topic: topic.into(),
                allow_auto_create,
            })
            .await?;
        expect!(r, Response::Metadata(d) => d)
    }

    pub async fn produce(&mut self, spec: ProduceSpec) -> ClientResult<ProduceResponse> {
        let r = self.call(&Request::Produce(spec)).await?;
        expect!(r, Response::Produce { response, .. } => response)
    }

    /// The core table's single-record produce; the offset is `None` for
    /// acks=0.
    pub async fn produce_one(
        &mut self,
        tp: &TopicPartition,
        key: Option<Bytes>,
        value: Option<Bytes>,
        acks: AckMode,
    ) -> ClientResult<Option<i64>> {
        let r = self
            .produce(ProduceSpec::to_partition(
                tp,
                acks,
                None,
                ProduceRecords::Single { key, value },
            ))
            .await?;
        Ok(r.base_offset)
    }

    /// A fetch; with `max_wait_ms`, a long poll.
    pub async fn fetch(
        &mut self,
        request: &FetchRequest,
        max_wait_ms: Option<u32>,
    ) -> ClientResult<FetchResult> {
        let r = self
            .call(&Request::Fetch {
                request: request.clone(),
                max_wait_ms,
            })
            .await?;
        expect!(r, Response::Fetch(f) => f)
    }

    pub async fn list_topics(&mut self) -> ClientResult<Vec<String>> {
        let r = self.call(&Request::ListTopics).await?;
        expect!(r, Response::ListTopics(t) => t)
    }

    /// Deletes a topic with its records and committed offsets.
    pub async fn delete_topic(&mut self, topic: &str) -> ClientResult<()> {
        let r = self
            .call(&Request::DeleteTopic {
                topic: topic.into(),
            })
            .await?;
        expect!(r, Response::DeleteTopic => ())
    }

    /// Grows a topic to `partitions` in total.
    pub async fn create_partitions(&mut self, topic: &str, partitions: u32) -> ClientResult<()> {
        let r = self
            .call(&Request::CreatePartitions {
                topic: topic.into(),
                partitions,
            })
            .await?;
        expect!(r, Response::CreatePartitions => ())
    }

    /// Sets and resets topic settings (Kafka's names and spellings);
    /// returns the resulting config.
    pub async fn alter_topic_config(
        &mut self,
        topic: &str,
        changes: Vec<ConfigChange>,
        validate_only: bool,
    ) -> ClientResult<TopicConfig> {
        let r = self
            .call(&Request::AlterTopicConfig {
                topic: topic.into(),
                changes,
                validate_only,
            })
            .await?;
        expect!(r, Response::AlterTopicConfig(c) => c)
    }

    /// Every setting of a topic with the value in force.
    pub async fn describe_topic_config(
        &mut self,
        topic: &str,
    ) -> ClientResult<Vec<TopicConfigEntry>> {
        let r = self
            .call(&Request::DescribeTopicConfig {
                topic: topic.into(),
            })
            .await?;
        expect!(r, Response::DescribeTopicConfig(e) => e)
    }

    pub async fn list_groups(&mut self) -> ClientResult<Vec<GroupListing>> {
        let r = self.call(&Request::ListGroups).await?;
        expect!(r, Response::ListGroups(g) => g)
    }

    pub async fn delete_group(&mut self, group_id: &str) -> ClientResult<()> {
        let r = self
            .call(&Request::DeleteGroup {
                group_id: group_id.into(),
            })
            .await?;
        expect!(r, Response::DeleteGroup => ())
    }

    /// Sets a group's committed offsets from outside (the group must have
    /// no members).
    pub async fn alter_group_offsets(
        &mut self,
        group_id: &str,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> ClientResult<()> {
        let r = self
            .call(&Request::AlterGroupOffsets {
                group_id: group_id.into(),
                offsets: offsets.clone(),
            })
            .await?;
        expect!(r, Response::AlterGroupOffsets => ())
    }

    pub async fn list_offsets(
        &mut self,
        tp: &TopicPartition,
        at: OffsetSpec,
    ) -> ClientResult<Option<i64>> {
        let r = self
            .call(&Request::ListOffsets { tp: tp.clone(), at })
            .await?;
        expect!(r, Response::ListOffsets(o) => o)
    }

    pub async fn join_group(
        &mut self,
        group_id: &str,
        member_id: &str,
        topics: &[String],
        assignor: Option<AssignorKind>,
    ) -> ClientResult<MemberAssignment> {
        let r = self
            .call(&Request::JoinGroup {
                group_id: group_id.into(),
                member_id: member_id.into(),
                topics: topics.to_vec(),
                assignor,
            })
            .await?;
        expect!(r, Response::JoinGroup(a) => a)
    }

    pub async fn heartbeat(
        &mut self,
        group_id: &str,
        member_id: &str,
        generation: i32,
    ) -> ClientResult<()> {
        let r = self
            .call(&Request::Heartbeat {
                group_id: group_id.into(),
                member_id: member_id.into(),
                generation,
            })
            .await?;
        expect!(r, Response::Heartbeat => ())
    }

    pub async fn commit_offsets(
        &mut self,
        group_id: &str,
        member_id: &str,
        generation: i32,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> ClientResult<()> {
        let offsets = offsets
            .iter()
            .map(|(tp, o)| (tp.clone(), OffsetAndMetadata::new(*o)))
            .collect();
        self.commit_offsets_with_metadata(group_id, member_id, generation, &offsets)
            .await
    }

    /// A commit whose offsets carry a leader epoch and metadata, which
    /// `fetch_offsets` answers back.
    pub async fn commit_offsets_with_metadata(
        &mut self,
        group_id: &str,
        member_id: &str,
        generation: i32,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
    ) -> ClientResult<()> {
        let r = self
            .call(&Request::CommitOffsets {
                group_id: group_id.into(),
                member_id: member_id.into(),
                generation,
                offsets: offsets.clone(),
            })
            .await?;
        expect!(r, Response::CommitOffsets => ())
    }

    /// Leaves a group; false if the member was not in it.
    pub async fn leave_group(&mut self, group_id: &str, member_id: &str) -> ClientResult<bool> {
        let r = self
            .call(&Request::LeaveGroup {
                group_id: group_id.into(),
                member_id: member_id.into(),
            })
            .await?;
        expect!(r, Response::LeaveGroup { left } => left)
    }

    /// Committed offsets with their leader epochs and metadata: every one
    /// of the group (`partitions = None`) or the listed partitions (`None`
    /// where nothing is committed).
    pub async fn fetch_offsets(
        &mut self,
        group_id: &str,
        partitions: Option<Vec<TopicPartition>>,
    ) -> ClientResult<Vec<(TopicPartition, Option<OffsetAndMetadata>)>> {
        let r = self
            .call(&Request::FetchOffsets {
                group_id: group_id.into(),
                partitions,
            })
            .await?;
        expect!(r, Response::FetchOffsets(o) => o)
    }

    /// A group of any type (classic, KIP-848 consumer or share); `None`
    /// for a group the broker does not know.
    pub async fn describe_group(
        &mut self,
        group_id: &str,
    ) -> ClientResult<Option<AnyGroupDescription>> {
        let r = self
            .call(&Request::DescribeGroup {
                group_id: group_id.into(),
            })
            .await?;
        expect!(r, Response::DescribeGroup { description, .. } => description)
    }

    pub async fn init_producer(&mut self, name: Option<&str>) -> ClientResult<ProducerIdentity> {
        let r = self
            .call(&Request::InitProducer {
                name: name.map(str::to_string),
            })
            .await?;
        expect!(r, Response::InitProducer(i) => i)
    }

    pub async fn begin_txn(&mut self, transactional_id: &str) -> ClientResult<TxnHandle> {
        let r = self
            .call(&Request::BeginTxn {
                transactional_id: transactional_id.into(),
            })
            .await?;
        expect!(r, Response::BeginTxn(i) => TxnHandle {
            transactional_id: transactional_id.to_string(),
            producer_id: i.producer_id,
            producer_epoch: i.epoch,
        })
    }

    pub async fn txn_produce(
        &mut self,
        handle: &TxnHandle,
        topic: &str,
        key: Option<Bytes>,
        value: Option<Bytes>,
        partition: Option<u32>,
    ) -> ClientResult<(u32, i64)> {
        let r = self
            .call(&Request::TxnProduce {
                txn: txn_ref(handle),
                topic: topic.into(),
                partition,
                key,
                value,
            })
            .await?;
        expect!(r, Response::TxnProduce { partition, offset } => (partition, offset))
    }

    pub async fn txn_send_offsets(
        &mut self,
        handle: &TxnHandle,
        group_id: &str,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> ClientResult<()> {
        let r = self
            .call(&Request::TxnSendOffsets {
                txn: txn_ref(handle),
                group_id: group_id.into(),
                offsets: offsets.clone(),
            })
            .await?;
        expect!(r, Response::TxnSendOffsets => ())
    }

    pub async fn commit_txn(&mut self, handle: &TxnHandle) -> ClientResult<()> {
        let r = self
            .call(&Request::CommitTxn {
                txn: txn_ref(handle),
            })
            .await?;
        expect!(r, Response::CommitTxn => ())
    }

    pub async fn abort_txn(&mut self, handle: &TxnHandle) -> ClientResult<()> {
        let r = self
            .call(&Request::AbortTxn {
                txn: txn_ref(handle),
            })
            .await?;
        expect!(r, Response::AbortTxn => ())
    }

    pub async fn describe_cluster(&mut self) -> ClientResult<ClusterDescription> {
        let r = self.call(&Request::DescribeCluster).await?;
        expect!(r, Response::DescribeCluster(d) => d)
    }

    /// Takes a broker offline (leadership moves to in-sync replicas);
    /// returns the partitions that moved.
    pub async fn broker_offline(
        &mut self,
        broker_id: BrokerId,
    ) -> ClientResult<Vec<(TopicPartition, LeaderAndEpoch)>> {
        let r = self.call(&Request::BrokerOffline { broker_id }).await?;
        expect!(r, Response::BrokerOffline(moved) => moved)
    }

    /// Brings an offline broker back; its replicas catch up as followers.
    /// Brings a broker back; answers whether it was offline.
    pub async fn broker_online(&mut self, broker_id: BrokerId) -> ClientResult<bool> {
        let r = self.call(&Request::BrokerOnline { broker_id }).await?;
        expect!(r, Response::BrokerOnline { was_offline } => was_offline)
    }

    /// Sets a user's SCRAM credential from a password (the broker salts
    /// and hashes it); returns the iteration count stored.
    pub async fn upsert_scram_credential(
        &mut self,
        user: &str,
        mechanism: ScramMechanism,
        password: Password,
        iterations: Option<u32>,
    ) -> ClientResult<u32> {
        let r = self
            .call(&Request::UpsertScramCredential {
                user: user.into(),
                mechanism,
                password,
                iterations,
            })
            .await?;
        expect!(r, Response::UpsertScramCredential { iterations, .. } => iterations)
    }

    /// Removes a user's credential for one mechanism, or all of them;
    /// returns the mechanisms removed.
    pub async fn delete_scram_credential(
        &mut self,
        user: &str,
        mechanism: Option<ScramMechanism>,
    ) -> ClientResult<Vec<ScramMechanism>> {
        let r = self
            .call(&Request::DeleteScramCredential {
                user: user.into(),
                mechanism,
            })
            .await?;
        expect!(r, Response::DeleteScramCredential { deleted, .. } => deleted)
    }

    /// Every SCRAM user (or the one named) with its mechanisms and
    /// iteration counts; never a salt or a key.
    pub async fn describe_scram_credentials(
        &mut self,
        user: Option<&str>,
    ) -> ClientResult<Vec<(String, ScramUserInfo)>> {
        let r = self
            .call(&Request::DescribeScramCredentials {
                user: user.map(str::to_string),
            })
            .await?;
        expect!(r, Response::DescribeScramCredentials(users) => users)
    }

    /// Moves `tp`'s replicas to `replicas`, or with `None` cancels its
    /// move in progress; returns the move still in progress, if any.
    pub async fn alter_partition_reassignment(
        &mut self,
        tp: &TopicPartition,
        replicas: Option<&[BrokerId]>,
        allow_replication_factor_change: bool,
    ) -> ClientResult<Vec<OngoingReassignment>> {
        let r = self
            .call(&Request::AlterPartitionReassignment {
                tp: tp.clone(),
                replicas: replicas.map(<[BrokerId]>::to_vec),
                allow_replication_factor_change,
            })
            .await?;
        expect!(r, Response::AlterPartitionReassignment(ongoing) => ongoing)
    }

    /// The moves in progress (of one topic's partitions, or all).
    pub async fn list_partition_reassignments(
        &mut self,
        topic: Option<&str>,
    ) -> ClientResult<Vec<OngoingReassignment>> {
        let r = self
            .call(&Request::ListPartitionReassignments {
                topic: topic.map(str::to_string),
            })
            .await?;
        expect!(r, Response::ListPartitionReassignments(ongoing) => ongoing)
    }

    pub async fn stats(&mut self) -> ClientResult<ServerStats> {
        let r = self.call(&Request::Stats).await?;
        expect!(r, Response::Stats(s) => s)
    }

    pub async fn promote(
        &mut self,
        tp: &TopicPartition,
        broker_id: BrokerId,
    ) -> ClientResult<LeaderAndEpoch> {
        let r = self
            .call(&Request::Promote {
                tp: tp.clone(),
                broker_id,
            })
            .await?;
        expect!(r, Response::Promote(le) => le)
    }

    pub async fn rejoin(&mut self, tp: &TopicPartition, broker_id: BrokerId) -> ClientResult<()> {
        let r = self
            .call(&Request::Rejoin {
                tp: tp.clone(),
                broker_id,
            })
            .await?;
        expect!(r, Response::Rejoin => ())
    }

    pub async fn remove_from_isr(
        &mut self,
        tp: &TopicPartition,
        broker_id: BrokerId,
    ) -> ClientResult<()> {
        let r = self
            .call(&Request::RemoveFromIsr {
                tp: tp.clone(),
                broker_id,
            })
            .await?;
        expect!(r, Response::RemoveFromIsr => ())
    }

    pub async fn replicate_once(&mut self) -> ClientResult<()> {
        let r = self.call(&Request::ReplicateOnce).await?;
        expect!(r, Response::ReplicateOnce => ())
    }

    pub async fn expire_group_members(&mut self) -> ClientResult<Vec<(String, String)>> {
        let r = self.call(&Request::ExpireGroupMembers).await?;
        expect!(r, Response::ExpireGroupMembers(e) => e)
    }

    pub async fn roll(&mut self, tp: &TopicPartition) -> ClientResult<()> {
        let r = self.call(&Request::Roll { tp: tp.clone() }).await?;
        expect!(r, Response::Roll => ())
    }

    /// Deleted segment base offsets per partition.
    pub async fn apply_retention(
        &mut self,
        topic: &str,
        overrides: Option<RetentionPolicy>,
    ) -> ClientResult<BTreeMap<u32, Vec<i64>>> {
        let r = self
            .call(&Request::ApplyRetention {
                topic: topic.into(),
                overrides,
            })
            .await?;
        expect!(r, Response::ApplyRetention(d) => d)
    }

    pub async fn compact(
        &mut self,
        topic: &str,
        delete_retention_ms: Option<i64>,
    ) -> ClientResult<CompactionSummary> {
        let r = self
            .call(&Request::Compact {
                topic: topic.into(),
                delete_retention_ms,
            })
            .await?;
        expect!(r, Response::Compact(c) => c)
    }

    pub async fn expire_transactions(&mut self) -> ClientResult<Vec<String>> {
        let r = self.call(&Request::ExpireTransactions).await?;
        expect!(r, Response::ExpireTransactions(a) => a)
    }

    pub async fn flush_cycle(&mut self) -> ClientResult<()> {
        let r = self.call(&Request::FlushCycle).await?;
        expect!(r, Response::FlushCycle => ())
    }
}

/// How long a request may wait on purpose (a fetch's long poll).
fn long_poll(request: &Request) -> Duration {
    match request {
        Request::Fetch {
            max_wait_ms: Some(ms),
            ..
        } => Duration::from_millis(u64::from(*ms)),
        _ => Duration::ZERO,
    }
}

/// Reads one response line (without its `\n`), bounded by
/// `MAX_RESPONSE_BYTES`.
async fn read_line(
    reader: &mut BufReader<OwnedReadHalf>,
    line: &mut Vec<u8>,
) -> ClientResult<Vec<u8>> {
    line.clear();
    let n = reader
        .take(MAX_RESPONSE_BYTES)
        .read_until(b'\n', line)
        .await?;
    if n == 0 {
        return Err(ClientError::Io(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the server closed the connection",
        )));
    }
    if line.last() != Some(&b'\n') {
        return Err(ClientError::Protocol(
            "response line is incomplete or too long".into(),
        ));
    }
    line.pop();
    Ok(std::mem::take(line))
}

fn txn_ref(handle: &TxnHandle) -> TxnRef {
    TxnRef {
        transactional_id: handle.transactional_id.clone(),
        producer_epoch: handle.producer_epoch,
    }
}

/// Decodes a response line to `request`: an error object becomes
/// `ClientError::Server`.
pub fn decode_answer(request: &Request, line: &[u8]) -> ClientResult<Response> {
    let value: Value = serde_json::from_slice(line)
        .map_err(|e| ClientError::Protocol(format!("response is not JSON: {e}")))?;
    let Value::Object(map) = value else {
        return Err(ClientError::Protocol(format!(
            "response must be an object, got {}",
            type_name(&value)
        )));
    };
    match map.get("ok") {
        Some(Value::Bool(true)) => {
            Response::decode(request, &map).map_err(|e| ClientError::Protocol(e.0))
        }
        Some(Value::Bool(false)) => {
            let code = map
                .get("code")
                .and_then(Value::as_str)
                .and_then(ErrorCode::parse)
                .ok_or_else(|| {
                    ClientError::Protocol("error response without a known code".into())
                })?;
            let message = map
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            Err(ClientError::Server(ErrorResponse { code, message }))
        }
        _ => Err(ClientError::Protocol(
            "response lacks a boolean \"ok\" field".into(),
        )),
    }
}
