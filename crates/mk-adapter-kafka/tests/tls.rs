//! SSL listeners against the real server: TLS 1.2 and 1.3 with rustls,
//! per-listener advertised endpoints, client certificates when a client CA
//! is configured, and the hostile cases (a plaintext client on a TLS port,
//! a TLS client on a plaintext port, a handshake that stalls) closed
//! promptly with the broker unharmed and the connection limit respected.

mod common;

use common::certs::{Pki, tls_connect};
use common::*;
use mk_adapter_kafka::api::key;
use mk_adapter_kafka::messages::metadata::MetadataResponse;
use mk_adapter_kafka::mk_cluster::{BrokerCluster, ManualClock, MiniKafkaConfig};
use mk_adapter_kafka::{KafkaOptions, SecurityProtocol};
use rcgen::DnType;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;

struct Tls {
    net: Listeners,
    pki: Pki,
}

impl Tls {
    /// Two brokers, each with a PLAINTEXT and an SSL listener.
    async fn start(require_client_cert: bool, tune: impl FnOnce(&mut KafkaOptions)) -> Tls {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::new(dir.path(), require_client_cert);
        let config = MiniKafkaConfig::new(dir.path().join("data")).with_brokers(vec![1, 2]);
        let cluster =
            BrokerCluster::open_with_clock(config, Arc::new(ManualClock::new(1_000))).unwrap();
        let mut options = KafkaOptions {
            tls: Some(mk_adapter_kafka::tls::server_config(&pki.files).unwrap()),
            ..KafkaOptions::default()
        };
        tune(&mut options);
        let protocols = [SecurityProtocol::Plaintext, SecurityProtocol::Ssl];
        let net = Listeners::start(dir, cluster, &protocols, &[1, 2], options).await;
        Tls { net, pki }
    }

    fn addr(&self, protocol: SecurityProtocol, broker: i32) -> SocketAddr {
        self.net.addr(protocol, broker)
    }

    async fn stop(self) {
        self.net.stop().await;
    }
}

async fn advertised_ports(conn: &mut Conn) -> Vec<(i32, u16)> {
    let m: MetadataResponse = conn.call(key::METADATA, 9, &brokers_metadata()).await;
    m.brokers
        .iter()
        .map(|b| (b.node_id, u16::try_from(b.port).unwrap()))
        .collect()
}

/// True once the peer has closed the stream (EOF or reset).
async fn closed_by_peer(stream: &mut (impl tokio::io::AsyncRead + Unpin)) -> bool {
    let mut buf = [0u8; 256];
    loop {
        match within(stream.read(&mut buf)).await {
            Ok(0) | Err(_) => return true,
            Ok(_) => {}
        }
    }
}

#[tokio::test]
async fn each_listener_advertises_its_own_endpoints_over_tls_12_and_13() {
    let t = Tls::start(false, |_| {}).await;
    for versions in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let config = t.pki.client_config(&[versions], None);
        let stream = within(tls_connect(t.addr(SecurityProtocol::Ssl, 2), config))
            .await
            .unwrap();
        assert_eq!(
            stream.get_ref().1.protocol_version(),
            Some(versions.version)
        );
        let mut conn = Conn::over(stream);
        let ssl: Vec<(i32, u16)> = [1, 2]
            .map(|b| (b, t.addr(SecurityProtocol::Ssl, b).port()))
            .to_vec();
        assert_eq!(advertised_ports(&mut conn).await, ssl);
    }
    let mut plain = Conn::connect(t.addr(SecurityProtocol::Plaintext, 1)).await;
    let plaintext: Vec<(i32, u16)> = [1, 2]
        .map(|b| (b, t.addr(SecurityProtocol::Plaintext, b).port()))
        .to_vec();
    assert_eq!(advertised_ports(&mut plain).await, plaintext);
    t.stop().await;
}

#[tokio::test]
async fn wrong_protocol_clients_are_closed_and_the_broker_is_unharmed() {
    let t = Tls::start(false, |_| {}).await;
    // A Kafka request in the clear on the TLS port: not a ClientHello.
    let mut plain_on_tls = Conn::connect(t.addr(SecurityProtocol::Ssl, 1)).await;
    let (_, bytes) = plain_on_tls.frame(key::METADATA, 9, &brokers_metadata());
    plain_on_tls.write_raw(&bytes).await;
    assert!(closed_by_peer(&mut plain_on_tls.stream).await);
    // A ClientHello on the plaintext port reads as an oversized request.
    let config = t.pki.client_config(&[&rustls::version::TLS13], None);
    let tls_on_plain = within(tls_connect(
        t.addr(SecurityProtocol::Plaintext, 1),
        config.clone(),
    ))
    .await;
    assert!(tls_on_plain.is_err());
    // Both listeners still serve.
    let stream = within(tls_connect(t.addr(SecurityProtocol::Ssl, 1), config))
        .await
        .unwrap();
    assert_eq!(advertised_ports(&mut Conn::over(stream)).await.len(), 2);
    let mut plain = Conn::connect(t.addr(SecurityProtocol::Plaintext, 1)).await;
    assert_eq!(advertised_ports(&mut plain).await.len(), 2);
    t.stop().await;
}

#[tokio::test]
async fn a_stalled_handshake_is_timed_out_and_counts_against_the_connection_limit() {
    let t = Tls::start(false, |o| {
        o.handshake_timeout = Duration::from_millis(300);
        o.max_connections = 1;
    })
    .await;
    let ssl = t.addr(SecurityProtocol::Ssl, 1);
    let started = std::time::Instant::now();
    let mut stalled = within(tokio::net::TcpStream::connect(ssl)).await.unwrap();
    // The stalled handshake holds the only connection slot: a second
    // connection is closed on accept.
    let config = t.pki.client_config(&[&rustls::version::TLS13], None);
    let wait_for = |n: u64| {
        let server = &t.net.server;
        async move {
            while server.connections() != n {
                tokio::task::yield_now().await;
            }
        }
    };
    within(wait_for(1)).await;
    assert!(within(tls_connect(ssl, config.clone())).await.is_err());
    assert!(closed_by_peer(&mut stalled).await);
    assert!(started.elapsed() >= Duration::from_millis(300));
    within(wait_for(0)).await;
    let stream = within(tls_connect(ssl, config)).await.unwrap();
    assert_eq!(advertised_ports(&mut Conn::over(stream)).await.len(), 2);
    t.stop().await;
}

/// The server refuses the TLS session: the handshake fails, or (with TLS
/// 1.3, where the client learns it on its first read) the first request
/// finds the connection closed.
async fn refused(addr: SocketAddr, config: Arc<rustls::ClientConfig>) {
    if let Ok(stream) = within(tls_connect(addr, config)).await {
        let mut conn = Conn::over(stream);
        let (_, bytes) = conn.frame(key::METADATA, 9, &brokers_metadata());
        conn.write_raw(&bytes).await;
        assert!(conn.is_closed().await);
    }
}

#[tokio::test]
async fn with_a_client_ca_only_clients_with_a_certificate_it_signed_are_served() {
    let t = Tls::start(true, |_| {}).await;
    let ssl = t.addr(SecurityProtocol::Ssl, 1);
    // Without a certificate the server refuses the handshake (with TLS 1.3
    // the client learns it on its first read).
    let anonymous = t.pki.client_config(&[&rustls::version::TLS13], None);
    refused(ssl, anonymous).await;
    // A certificate from another CA is refused too.
    let other = Pki::new(tempfile::tempdir().unwrap().path(), true);
    let foreign = other.client(&[(DnType::CommonName, "mallory")]);
    let config = t
        .pki
        .client_config(&[&rustls::version::TLS13], Some(foreign));
    refused(ssl, config).await;
    let alice = t.pki.client(&[
        (DnType::CommonName, "alice"),
        (DnType::OrganizationName, "Acme"),
    ]);
    let config = t.pki.client_config(&[&rustls::version::TLS12], Some(alice));
    let stream = within(tls_connect(ssl, config)).await.unwrap();
    assert_eq!(advertised_ports(&mut Conn::over(stream)).await.len(), 2);
    t.stop().await;
}
