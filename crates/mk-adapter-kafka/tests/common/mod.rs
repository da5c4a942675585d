//! Shared harness of the Kafka adapter's integration tests: a cluster on a
//! temp dir with a manual clock, served by live Kafka listeners on loopback
//! (one per broker), and a raw connection that speaks the protocol with
//! the crate's own codec — so tests can also send what no client would.

#![allow(dead_code)]

pub mod certs;

use bytes::{Buf, Bytes, BytesMut};
use mk_adapter_kafka::api::{self, Message};
use mk_adapter_kafka::codec::{Reader, Writer};
use mk_adapter_kafka::errors::KafkaCode;
use mk_adapter_kafka::frame::{RequestHeader, split_response};
use mk_adapter_kafka::messages::api_versions::{ApiVersionsRequest, ApiVersionsResponse};
use mk_adapter_kafka::messages::metadata::MetadataRequest;
use mk_adapter_kafka::messages::produce::{
    PartitionProduceData, ProduceRequest, ProduceResponse, TopicProduceData,
};
use mk_adapter_kafka::messages::sasl_authenticate::{
    SaslAuthenticateRequest, SaslAuthenticateResponse,
};
use mk_adapter_kafka::messages::sasl_handshake::{SaslHandshakeRequest, SaslHandshakeResponse};
use mk_adapter_kafka::mk_cluster::{BrokerCluster, ManualClock, MiniKafkaConfig, ProducerInfo};
use mk_adapter_kafka::{
    BrokerEndpoint, KafkaListener, KafkaOptions, KafkaServer, SecurityProtocol,
};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A bound on awaits that must complete; never a synchronization device.
pub const PATIENCE: Duration = Duration::from_secs(20);

pub async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, f)
        .await
        .expect("the operation did not complete in time")
}

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub clock: ManualClock,
    pub cluster: Arc<BrokerCluster>,
    pub server: KafkaServer,
}

impl Harness {
    pub async fn start(brokers: Vec<i32>, options: KafkaOptions) -> Harness {
        Self::start_with(brokers, options, |c| c).await
    }

    pub async fn start_with(
        brokers: Vec<i32>,
        options: KafkaOptions,
        configure: impl FnOnce(MiniKafkaConfig) -> MiniKafkaConfig,
    ) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        Self::open(dir, brokers, options, configure).await
    }

    /// Opens a cluster on an existing (possibly prepared) directory.
    pub async fn open(
        dir: tempfile::TempDir,
        brokers: Vec<i32>,
        options: KafkaOptions,
        configure: impl FnOnce(MiniKafkaConfig) -> MiniKafkaConfig,
    ) -> Harness {
        let clock = ManualClock::new(1_700_000_000_000);
        let config = configure(MiniKafkaConfig::new(dir.path()).with_brokers(brokers));
        let cluster = BrokerCluster::open_with_clock(config, Arc::new(clock.clone())).unwrap();
        let server = KafkaServer::start(cluster.clone(), "127.0.0.1:0".parse().unwrap(), options)
            .await
            .unwrap();
        Harness {
            dir,
            clock,
            cluster,
            server,
        }
    }

    pub async fn one() -> Harness {
        Harness::start(vec![1], KafkaOptions::default()).await
    }

    /// The listener address of a broker.
    /// One broker with topic `topic` (`partitions` partitions) and a
    /// connection to it.
    pub async fn one_with_topic(topic: &str, partitions: u32) -> (Harness, Conn) {
        let h = Harness::one().await;
        h.cluster.topics().create(topic, partitions, 1).unwrap();
        let c = h.conn(1).await;
        (h, c)
    }

    /// Brokers 1, 2 and 3 with topic `topic` (`partitions` partitions of
    /// three replicas).
    pub async fn three_with_topic(topic: &str, partitions: u32) -> Harness {
        let h = Harness::start(vec![1, 2, 3], KafkaOptions::default()).await;
        h.cluster.topics().create(topic, partitions, 3).unwrap();
        h
    }

    pub fn addr(&self, broker: i32) -> SocketAddr {
        endpoint_addr(self.server.endpoints(), broker)
    }

    pub async fn conn(&self, broker: i32) -> Conn {
        Conn::connect(self.addr(broker)).await
    }

    pub async fn stop(self) {
        within(self.server.shutdown()).await;
        self.cluster.lifecycle().close().await.unwrap();
    }
}

/// A byte stream a raw connection speaks over: TCP or TLS over TCP.
pub trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Stream for T {}

/// A raw Kafka connection.
pub struct Conn {
    pub stream: Box<dyn Stream>,
    next_correlation: i32,
    buf: BytesMut,
}

impl Conn {
    pub async fn connect(addr: SocketAddr) -> Conn {
        Conn::over(within(TcpStream::connect(addr)).await.unwrap())
    }

    /// A connection over an established stream (e.g. after a TLS handshake).
    pub fn over(stream: impl Stream + 'static) -> Conn {
        Conn {
            stream: Box::new(stream),
            next_correlation: 1,
            buf: BytesMut::new(),
        }
    }

    /// Encodes a request frame (size prefix included).
    pub fn frame<M: Message>(&mut self, api_key: i16, version: i16, body: &M) -> (i32, Vec<u8>) {
        let flexible = api::spec(api_key).is_some_and(|s| s.is_flexible(version));
        let correlation_id = self.next_correlation;
        self.next_correlation += 1;
        let mut w = Writer::new(false);
        RequestHeader {
            api_key,
            api_version: version,
            correlation_id,
            client_id: Some("mk-test".into()),
        }
        .write(&mut w, flexible);
        w.flexible = flexible;
        body.write(&mut w, version);
        (correlation_id, framed(&w.into_bytes()))
    }

    pub async fn send<M: Message>(&mut self, api_key: i16, version: i16, body: &M) -> i32 {
        let (id, bytes) = self.frame(api_key, version, body);
        self.write_raw(&bytes).await;
        id
    }

    pub async fn write_raw(&mut self, bytes: &[u8]) {
        within(self.stream.write_all(bytes)).await.unwrap();
    }

    /// Reads one response frame (without the size prefix); `None` on EOF.
    pub async fn read_frame(&mut self) -> Option<Bytes> {
        loop {
            if self.buf.len() >= 4 {
                let n = i32::from_be_bytes(self.buf[..4].try_into().unwrap()) as usize;
                if self.buf.len() >= 4 + n {
                    self.buf.advance(4);
                    return Some(self.buf.split_to(n).freeze());
                }
            }
            let read = within(self.stream.read_buf(&mut self.buf)).await;
            match read {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }

    /// Reads the next response and decodes it as `R` at `version`,
    /// checking its correlation id.
    pub async fn recv<R: Message>(&mut self, api_key: i16, version: i16, correlation_id: i32) -> R {
        let flexible = api::spec(api_key).is_some_and(|s| s.is_flexible(version));
        let tagged = flexible && api_key != api::key::API_VERSIONS;
        let frame = self.read_frame().await.expect("a response");
        let (id, body) = split_response(&frame, tagged).unwrap();
        assert_eq!(id, correlation_id, "responses come back in request order");
        let mut r = Reader::new(&body, flexible);
        let resp = R::read(&mut r, version).unwrap();
        r.finish("response").unwrap();
        resp
    }

    /// ApiVersions v3, as a client opens a connection.
    pub async fn api_versions(&mut self) -> ApiVersionsResponse {
        self.call(api::key::API_VERSIONS, 3, &ApiVersionsRequest::default())
            .await
    }

    pub async fn call<M: Message, R: Message>(
        &mut self,
        api_key: i16,
        version: i16,
        body: &M,
    ) -> R {
        let id = self.send(api_key, version, body).await;
        self.recv(api_key, version, id).await
    }

    /// Sends Produce `req` at `version`; returns the code its first
    /// partition is answered with.
    pub async fn produce_code(&mut self, version: i16, req: &ProduceRequest) -> KafkaCode {
        let r: ProduceResponse = self.call(api::key::PRODUCE, version, req).await;
        produced_code(&r)
    }

    /// True once the server has closed the connection.
    pub async fn is_closed(&mut self) -> bool {
        self.read_frame().await.is_none()
    }
}

/// A frame as it goes on the wire: `payload` behind its size prefix.
pub fn framed(payload: &[u8]) -> Vec<u8> {
    let mut out = i32::try_from(payload.len()).unwrap().to_be_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

/// The code a Produce answer gives its first partition.
pub fn produced_code(r: &ProduceResponse) -> KafkaCode {
    r.responses[0].partition_responses[0].error_code
}

/// The records of one produced v2 batch, as a producer would send them.
pub fn batch_bytes(
    records: Vec<mk_adapter_kafka::mk_cluster::Record>,
    producer: mk_adapter_kafka::mk_cluster::ProducerInfo,
) -> Bytes {
    let mut batch = mk_adapter_kafka::mk_cluster::RecordBatch::new(records)
        .unwrap()
        .with_producer(producer);
    batch.assign(0, 0).unwrap();
    let mut out = BytesMut::new();
    mk_adapter_kafka::records::encode_batch(&batch, &mut out);
    out.freeze()
}

pub fn value_records(values: &[&str]) -> Vec<mk_adapter_kafka::mk_cluster::Record> {
    values
        .iter()
        .map(|v| {
            mk_adapter_kafka::mk_cluster::Record::new(
                None,
                Some(Bytes::copy_from_slice(v.as_bytes())),
                1_700_000_000_000,
            )
        })
        .collect()
}

/// A Produce of `records` to one partition (no transactional id).
pub fn produce_request(topic: &str, partition: i32, acks: i16, records: Bytes) -> ProduceRequest {
    ProduceRequest {
        transactional_id: None,
        acks,
        timeout_ms: 5_000,
        topic_data: vec![TopicProduceData {
            name: topic.into(),
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(records),
            }],
            ..TopicProduceData::default()
        }],
    }
}

/// A Produce of `values` as one batch without a producer id to one
/// partition.
pub fn values_request(topic: &str, partition: i32, acks: i16, values: &[&str]) -> ProduceRequest {
    produce_request(
        topic,
        partition,
        acks,
        batch_bytes(value_records(values), ProducerInfo::NONE),
    )
}

/// A cluster served on listeners of given security protocols (the TLS,
/// SASL and ACL tests), with the directory it lives in.
pub struct Listeners {
    pub dir: tempfile::TempDir,
    pub cluster: Arc<BrokerCluster>,
    pub server: KafkaServer,
}

impl Listeners {
    /// Serves `cluster` (living in `dir`) on one listener per protocol,
    /// each with a loopback socket per broker.
    pub async fn start(
        dir: tempfile::TempDir,
        cluster: Arc<BrokerCluster>,
        protocols: &[SecurityProtocol],
        brokers: &[i32],
        options: KafkaOptions,
    ) -> Listeners {
        let mut listeners = Vec::new();
        for &protocol in protocols {
            let sockets =
                mk_adapter_kafka::bind_consecutive("127.0.0.1:0".parse().unwrap(), brokers)
                    .await
                    .unwrap();
            listeners.push(KafkaListener { protocol, sockets });
        }
        let server = KafkaServer::start_listeners(cluster.clone(), listeners, options).unwrap();
        Listeners {
            dir,
            cluster,
            server,
        }
    }

    /// The address of `broker` on the listener of `protocol`.
    pub fn addr(&self, protocol: SecurityProtocol, broker: i32) -> SocketAddr {
        let l = self
            .server
            .listeners()
            .iter()
            .find(|l| l.protocol == protocol);
        endpoint_addr(&l.unwrap().endpoints, broker)
    }

    pub async fn stop(self) {
        within(self.server.shutdown()).await;
        self.cluster.lifecycle().close().await.unwrap();
    }
}

/// SaslHandshake at `version` asking for `mechanism`.
pub async fn handshake(conn: &mut Conn, version: i16, mechanism: &str) -> SaslHandshakeResponse {
    let req = SaslHandshakeRequest {
        mechanism: mechanism.into(),
    };
    conn.call(api::key::SASL_HANDSHAKE, version, &req).await
}

/// SaslAuthenticate v2 carrying `token`.
pub async fn authenticate(conn: &mut Conn, token: &[u8]) -> SaslAuthenticateResponse {
    let req = SaslAuthenticateRequest {
        auth_bytes: Bytes::copy_from_slice(token),
    };
    conn.call(api::key::SASL_AUTHENTICATE, 2, &req).await
}

/// A Metadata request for no topic: the brokers only.
pub fn brokers_metadata() -> MetadataRequest {
    MetadataRequest {
        topics: Some(Vec::new()),
        allow_auto_topic_creation: false,
        include_cluster_authorized_operations: false,
        include_topic_authorized_operations: false,
    }
}

/// The address `broker` has among `endpoints`.
fn endpoint_addr(endpoints: &[BrokerEndpoint], broker: i32) -> SocketAddr {
    let e = endpoints.iter().find(|e| e.broker_id == broker).unwrap();
    format!("{}:{}", e.host, e.port).parse().unwrap()
}
