//! SASL listeners against the real server: SaslHandshake and
//! SaslAuthenticate with PLAIN and SCRAM-SHA-256/512 (over SASL_PLAINTEXT
//! and SASL_SSL), handshake v0's raw tokens, the failures (wrong password
//! and unknown user answered alike, then closed), requests before
//! authentication, and hostile SASL frames — each closed while another
//! client keeps being served.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

mod common;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use bytes::Bytes;
use common::certs::{Pki, tls_connect};
use common::*;
use hmac::{Hmac, Mac};
use mk_adapter_kafka::api::key;
use mk_adapter_kafka::api::sasl::SaslOptions;
use mk_adapter_kafka::errors::KafkaCode;
use mk_adapter_kafka::messages::metadata::MetadataResponse;
use mk_adapter_kafka::messages::sasl_authenticate::SaslAuthenticateRequest;
use mk_adapter_kafka::mk_cluster::{
    BrokerCluster, ManualClock, MiniKafkaConfig, PlainUsers, SaslMechanism, ScramMechanism,
    ScramUpsertion,
};
use mk_adapter_kafka::{KafkaOptions, SecurityProtocol};
use sha2::Digest;
use std::net::SocketAddr;
use std::sync::Arc;

struct Sasl {
    net: Listeners,
    pki: Pki,
}

impl Sasl {
    /// One broker with SASL_PLAINTEXT and SASL_SSL listeners; PLAIN user
    /// alice, SCRAM-SHA-512 and SCRAM-SHA-256 user bob.
    async fn start(tune: impl FnOnce(&mut KafkaOptions)) -> Sasl {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::new(dir.path(), false);
        let config = MiniKafkaConfig::new(dir.path().join("data"));
        let cluster =
            BrokerCluster::open_with_clock(config, Arc::new(ManualClock::new(1_000))).unwrap();
        for m in [ScramMechanism::Sha512, ScramMechanism::Sha256] {
            let salt = cluster.security().new_salt();
            let answers = cluster
                .security()
                .alter_scram(
                    &[],
                    &[ScramUpsertion {
                        user: "bob".into(),
                        mechanism: m.code(),
                        iterations: 4096,
                        salted_password: m.salted_password(b"bob-secret", &salt, 4096),
                        salt,
                    }],
                )
                .unwrap();
            assert!(answers[0].1.is_ok());
        }
        let mut options = KafkaOptions {
            tls: Some(mk_adapter_kafka::tls::server_config(&pki.files).unwrap()),
            sasl: SaslOptions {
                mechanisms: SaslMechanism::ALL.to_vec(),
                plain_users: Some(Arc::new(PlainUsers::parse("alice:alice-secret\n").unwrap())),
            },
            ..KafkaOptions::default()
        };
        tune(&mut options);
        let protocols = [SecurityProtocol::SaslPlaintext, SecurityProtocol::SaslSsl];
        let net = Listeners::start(dir, cluster, &protocols, &[1], options).await;
        Sasl { net, pki }
    }

    fn addr(&self, protocol: SecurityProtocol) -> SocketAddr {
        self.net.addr(protocol, 1)
    }

    async fn plain(&self) -> Conn {
        Conn::connect(self.addr(SecurityProtocol::SaslPlaintext)).await
    }

    async fn tls(&self) -> Conn {
        let config = self.pki.client_config(&[&rustls::version::TLS13], None);
        Conn::over(
            within(tls_connect(self.addr(SecurityProtocol::SaslSsl), config))
                .await
                .unwrap(),
        )
    }

    async fn stop(self) {
        self.net.stop().await;
    }
}

async fn served(conn: &mut Conn) -> bool {
    let id = conn.send(key::METADATA, 9, &brokers_metadata()).await;
    match conn.read_frame().await {
        None => false,
        Some(_) => {
            let _ = id;
            true
        }
    }
}

/// A SCRAM client from RFC 5802's formulas (SHA-512 or SHA-256); returns
/// the final answer's error code and whether the server's signature
/// verified.
async fn scram(
    conn: &mut Conn,
    m: ScramMechanism,
    user: &str,
    password: &str,
) -> (KafkaCode, bool) {
    assert_eq!(
        handshake(conn, 1, m.name()).await.error_code,
        KafkaCode::NONE
    );
    let bare = format!("n={user},r=fyko+d2lbbFgONRv9qkxdawL");
    let first = authenticate(conn, format!("n,,{bare}").as_bytes()).await;
    assert_eq!(first.error_code, KafkaCode::NONE);
    let server_first = String::from_utf8(first.auth_bytes.to_vec()).unwrap();
    let attrs: Vec<&str> = server_first.split(',').collect();
    let nonce = attrs[0].strip_prefix("r=").unwrap();
    assert!(nonce.starts_with("fyko+d2lbbFgONRv9qkxdawL") && nonce.len() > 30);
    let salt = B64.decode(attrs[1].strip_prefix("s=").unwrap()).unwrap();
    let iterations: u32 = attrs[2].strip_prefix("i=").unwrap().parse().unwrap();
    let salted = m.salted_password(password.as_bytes(), &salt, iterations);
    let mac = |k: &[u8], d: &[u8]| -> Vec<u8> {
        match m {
            ScramMechanism::Sha512 => {
                let mut h = <Hmac<sha2::Sha512> as Mac>::new_from_slice(k).unwrap();
                h.update(d);
                h.finalize().into_bytes().to_vec()
            }
            ScramMechanism::Sha256 => {
                let mut h = <Hmac<sha2::Sha256> as Mac>::new_from_slice(k).unwrap();
                h.update(d);
                h.finalize().into_bytes().to_vec()
            }
        }
    };
    let client_key = mac(&salted, b"Client Key");
    let stored_key = match m {
        ScramMechanism::Sha512 => sha2::Sha512::digest(&client_key).to_vec(),
        ScramMechanism::Sha256 => sha2::Sha256::digest(&client_key).to_vec(),
    };
    let without_proof = format!("c=biws,r={nonce}");
    let auth = format!("{bare},{server_first},{without_proof}");
    let signature = mac(&stored_key, auth.as_bytes());
    let proof: Vec<u8> = client_key
        .iter()
        .zip(&signature)
        .map(|(a, b)| a ^ b)
        .collect();
    let last = authenticate(
        conn,
        format!("{without_proof},p={}", B64.encode(proof)).as_bytes(),
    )
    .await;
    let server_key = mac(&salted, b"Server Key");
    let expected = format!("v={}", B64.encode(mac(&server_key, auth.as_bytes())));
    (last.error_code, last.auth_bytes == expected.as_bytes())
}

#[tokio::test]
async fn plain_and_scram_authenticate_then_requests_are_served() {
    let s = Sasl::start(|_| {}).await;
    let mut alice = s.plain().await;
    // ApiVersions is answered before authenticating and lists the SASL APIs.
    let v = alice.api_versions().await;
    assert!(
        v.api_keys
            .iter()
            .any(|k| k.api_key == key::SASL_AUTHENTICATE && k.max_version == 2)
    );
    let h = handshake(&mut alice, 1, "PLAIN").await;
    assert_eq!(h.error_code, KafkaCode::NONE);
    assert_eq!(h.mechanisms, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]);
    let a = authenticate(&mut alice, b"\0alice\0alice-secret").await;
    assert_eq!(a.error_code, KafkaCode::NONE);
    assert!(served(&mut alice).await);
    // SCRAM over TLS, both hashes.
    for m in [ScramMechanism::Sha512, ScramMechanism::Sha256] {
        let mut bob = s.tls().await;
        assert_eq!(
            scram(&mut bob, m, "bob", "bob-secret").await,
            (KafkaCode::NONE, true)
        );
        let md: MetadataResponse = bob.call(key::METADATA, 9, &brokers_metadata()).await;
        assert_eq!(
            md.brokers[0].port,
            i32::from(s.addr(SecurityProtocol::SaslSsl).port())
        );
    }
    s.stop().await;
}

#[tokio::test]
async fn wrong_password_and_unknown_user_fail_alike_and_close_the_connection() {
    let s = Sasl::start(|_| {}).await;
    let mut messages = Vec::new();
    for token in [&b"\0alice\0wrong"[..], b"\0mallory\0alice-secret"] {
        let mut c = s.plain().await;
        handshake(&mut c, 1, "PLAIN").await;
        let a = authenticate(&mut c, token).await;
        assert_eq!(a.error_code, KafkaCode::SASL_AUTHENTICATION_FAILED);
        messages.push(a.error_message.unwrap());
        assert!(c.is_closed().await);
    }
    for (user, password) in [("bob", "wrong"), ("mallory", "bob-secret")] {
        let mut c = s.tls().await;
        let (code, _) = scram(&mut c, ScramMechanism::Sha512, user, password).await;
        assert_eq!(code, KafkaCode::SASL_AUTHENTICATION_FAILED);
        assert!(c.is_closed().await);
    }
    assert_eq!(messages[0], messages[1]);
    assert!(!messages[0].contains("alice") && !messages[0].contains("mallory"));
    s.stop().await;
}

#[tokio::test]
async fn only_offered_mechanisms_and_no_requests_before_authentication() {
    let s = Sasl::start(|o| o.sasl.mechanisms = vec![SaslMechanism::Scram(ScramMechanism::Sha512)])
        .await;
    let mut c = s.plain().await;
    let h = handshake(&mut c, 1, "PLAIN").await;
    assert_eq!(h.error_code, KafkaCode::UNSUPPORTED_SASL_MECHANISM);
    assert_eq!(h.mechanisms, ["SCRAM-SHA-512"]);
    assert!(c.is_closed().await);
    // Metadata before authenticating closes the connection, on both
    // listeners; a client that authenticates is still served.
    let mut early = s.plain().await;
    assert!(!served(&mut early).await);
    let mut early = s.tls().await;
    assert!(!served(&mut early).await);
    let mut bob = s.plain().await;
    assert_eq!(
        scram(&mut bob, ScramMechanism::Sha512, "bob", "bob-secret")
            .await
            .0,
        KafkaCode::NONE
    );
    // A second handshake after authenticating is an illegal state.
    let again = handshake(&mut bob, 1, "SCRAM-SHA-512").await;
    assert_eq!(again.error_code, KafkaCode::ILLEGAL_SASL_STATE);
    s.stop().await;
}

#[tokio::test]
async fn handshake_v0_switches_to_raw_tokens() {
    let s = Sasl::start(|_| {}).await;
    let mut c = s.plain().await;
    assert_eq!(
        handshake(&mut c, 0, "PLAIN").await.error_code,
        KafkaCode::NONE
    );
    let token = b"\0alice\0alice-secret";
    let mut raw = u32::try_from(token.len()).unwrap().to_be_bytes().to_vec();
    raw.extend_from_slice(token);
    c.write_raw(&raw).await;
    assert_eq!(
        c.read_frame().await.unwrap().len(),
        0,
        "PLAIN's empty token"
    );
    assert!(served(&mut c).await);
    // A wrong raw token closes the connection: the framing has no error.
    let mut bad = s.plain().await;
    handshake(&mut bad, 0, "PLAIN").await;
    bad.write_raw(&[0, 0, 0, 3, 0, b'x', 0]).await;
    assert!(bad.is_closed().await);
    s.stop().await;
}

#[tokio::test]
async fn hostile_sasl_frames_are_closed_and_others_keep_being_served() {
    let s = Sasl::start(|o| o.max_request_bytes = 4096).await;
    let mut bystander = s.plain().await;
    handshake(&mut bystander, 1, "PLAIN").await;
    authenticate(&mut bystander, b"\0alice\0alice-secret").await;
    // Oversized: a SaslAuthenticate whose size prefix exceeds the limit.
    let mut big = s.plain().await;
    handshake(&mut big, 1, "PLAIN").await;
    let (_, mut frame) = big.frame(
        key::SASL_AUTHENTICATE,
        2,
        &SaslAuthenticateRequest {
            auth_bytes: Bytes::from(vec![b'a'; 8192]),
        },
    );
    frame.truncate(4096);
    big.write_raw(&frame).await;
    assert!(big.is_closed().await);
    // Truncated: the auth bytes claim more than the frame holds.
    let mut cut = s.plain().await;
    handshake(&mut cut, 1, "PLAIN").await;
    let (_, frame) = cut.frame(
        key::SASL_AUTHENTICATE,
        2,
        &SaslAuthenticateRequest {
            auth_bytes: Bytes::from_static(b"\0alice\0alice-secret"),
        },
    );
    let mut short = frame[..frame.len() - 5].to_vec();
    let len = u32::try_from(short.len() - 4).unwrap();
    short[..4].copy_from_slice(&len.to_be_bytes());
    cut.write_raw(&short).await;
    assert!(cut.is_closed().await);
    // Garbage after authenticating: not a request, closed.
    let mut garbage = s.plain().await;
    handshake(&mut garbage, 1, "PLAIN").await;
    authenticate(&mut garbage, b"\0alice\0alice-secret").await;
    garbage
        .write_raw(&[0, 0, 0, 12, 0xff, 0x7f, 0x13, 0x37, 1, 2, 3, 4, 5, 6, 7, 8])
        .await;
    assert!(garbage.is_closed().await);
    assert!(served(&mut bystander).await);
    s.stop().await;
}

#[tokio::test]
async fn scram_users_made_with_alter_user_scram_credentials_can_log_in() {
    use mk_adapter_kafka::messages::alter_user_scram_credentials::{
        AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
        ScramCredentialDeletion, ScramCredentialUpsertion,
    };
    use mk_adapter_kafka::messages::describe_user_scram_credentials::{
        DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
    };
    let s = Sasl::start(|_| {}).await;
    let mut admin = s.plain().await;
    handshake(&mut admin, 1, "PLAIN").await;
    authenticate(&mut admin, b"\0alice\0alice-secret").await;
    let m = ScramMechanism::Sha512;
    let salt = b"carol's salt".to_vec();
    let upsert = AlterUserScramCredentialsRequest {
        deletions: vec![ScramCredentialDeletion {
            name: "dave".into(),
            mechanism: m.code(),
        }],
        upsertions: vec![ScramCredentialUpsertion {
            name: "carol".into(),
            mechanism: m.code(),
            iterations: 8192,
            salted_password: Bytes::from(m.salted_password(b"carol-secret", &salt, 8192)),
            salt: Bytes::from(salt),
        }],
    };
    // As librdkafka sends it: with a second empty tagged-field section.
    let (id, mut frame) = admin.frame(key::ALTER_USER_SCRAM_CREDENTIALS, 0, &upsert);
    frame.push(0);
    let len = u32::try_from(frame.len() - 4).unwrap();
    frame[..4].copy_from_slice(&len.to_be_bytes());
    admin.write_raw(&frame).await;
    let r: AlterUserScramCredentialsResponse =
        admin.recv(key::ALTER_USER_SCRAM_CREDENTIALS, 0, id).await;
    let codes: Vec<(&str, KafkaCode)> = r
        .results
        .iter()
        .map(|x| (x.user.as_str(), x.error_code))
        .collect();
    assert_eq!(
        codes,
        [
            ("dave", KafkaCode::RESOURCE_NOT_FOUND),
            ("carol", KafkaCode::NONE)
        ]
    );
    let d: DescribeUserScramCredentialsResponse = admin
        .call(
            key::DESCRIBE_USER_SCRAM_CREDENTIALS,
            0,
            &DescribeUserScramCredentialsRequest { users: None },
        )
        .await;
    let users: Vec<(&str, usize)> = d
        .results
        .iter()
        .map(|x| (x.user.as_str(), x.credential_infos.len()))
        .collect();
    assert_eq!(users, [("bob", 2), ("carol", 1)]);
    let mut carol = s.tls().await;
    assert_eq!(
        scram(&mut carol, m, "carol", "carol-secret").await,
        (KafkaCode::NONE, true)
    );
    // Deleted, the credential no longer logs in.
    let delete = AlterUserScramCredentialsRequest {
        deletions: vec![ScramCredentialDeletion {
            name: "carol".into(),
            mechanism: m.code(),
        }],
        upsertions: Vec::new(),
    };
    let r: AlterUserScramCredentialsResponse = admin
        .call(key::ALTER_USER_SCRAM_CREDENTIALS, 0, &delete)
        .await;
    assert_eq!(r.results[0].error_code, KafkaCode::NONE);
    let mut again = s.tls().await;
    assert_eq!(
        scram(&mut again, m, "carol", "carol-secret").await.0,
        KafkaCode::SASL_AUTHENTICATION_FAILED
    );
    s.stop().await;
}
