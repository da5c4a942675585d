//! The security flags of the binary: Kafka listener syntax with an SSL
//! listener beside PLAINTEXT (both served, the startup line names both), a
//! SASL_PLAINTEXT listener with PLAIN users from --sasl-plain-users, and
//! the loopback rule: with a secured Kafka listener, JSON-TCP, metrics
//! and the console may not listen beyond loopback (exit 1, the flag named);
//! and `mk-server user add|delete|list` managing the SCRAM users a Kafka
//! client then logs in as.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

use mk_server::Listening;
use rcgen::{CertificateParams, KeyPair};
use rustls_pki_types::ServerName;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

mod common;
use common::{BIN, api_versions_correlation, fails_at, ok_at};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `cmd` (its listener flags set) with JSON-TCP on an ephemeral
/// loopback port, no console and its data under `dir`: the running broker,
/// killed on drop, and what its startup line says.
fn serve(mut cmd: Command, dir: &Path) -> (Killed, Listening, String) {
    let mut child = cmd
        .args([
            "--listen",
            "127.0.0.1:0",
            "--console-listen",
            "off",
            "--data-dir",
        ])
        .arg(dir.join("data"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = Killed(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let listening = Listening::parse(&line).unwrap_or_else(|| panic!("{line}"));
    (child, listening, line)
}

/// A self-signed certificate for 127.0.0.1, as PEM files; returns the
/// certificate's DER for a client to trust.
fn certificate(dir: &Path) -> (PathBuf, PathBuf, Vec<u8>) {
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (c, k) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&c, cert.pem()).unwrap();
    std::fs::write(&k, key.serialize_pem()).unwrap();
    (c, k, cert.der().to_vec())
}

fn refused(args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{args:?} must exit 1");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn beside_a_secured_listener_unauthenticated_surfaces_stay_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, _) = certificate(dir.path());
    let data = dir.path().join("data");
    let (cert, key, data) = (
        cert.to_str().unwrap(),
        key.to_str().unwrap(),
        data.to_str().unwrap(),
    );
    let base = [
        "--kafka-listen",
        "SSL://127.0.0.1:0",
        "--tls-cert",
        cert,
        "--tls-key",
        key,
        "--data-dir",
        data,
    ];
    for (flag, beyond) in [
        ("--listen", "0.0.0.0:0"),
        ("--metrics-listen", "0.0.0.0:0"),
        ("--console-listen", "0.0.0.0:0"),
    ] {
        let mut args = base.to_vec();
        args.extend([flag, beyond]);
        let err = refused(&args);
        assert!(
            err.contains(flag) && err.contains("loopback") && err.contains("SSL://127.0.0.1:0"),
            "{flag}: {err}"
        );
    }
    assert!(!Path::new(data).exists(), "a refused start touches nothing");
    // Without a secured listener the rule does not apply (today's
    // behaviour), and an SSL listener without a certificate is refused.
    let err = refused(&["--kafka-listen", "SSL://127.0.0.1:0", "--data-dir", data]);
    assert!(err.contains("--tls-cert"), "{err}");
    let err = refused(&["--kafka-listen", "GSSAPI://127.0.0.1:0", "--data-dir", data]);
    assert!(err.contains("GSSAPI"), "{err}");
    // SASL listeners count as secured too.
    let err = refused(&[
        "--kafka-listen",
        "SASL_PLAINTEXT://127.0.0.1:0",
        "--listen",
        "0.0.0.0:0",
        "--data-dir",
        data,
    ]);
    assert!(
        err.contains("--listen") && err.contains("SASL_PLAINTEXT"),
        "{err}"
    );
    let err = refused(&["--sasl-mechanisms", "PLAIN,GSSAPI", "--data-dir", data]);
    assert!(err.contains("--sasl-mechanisms"), "{err}");
}

#[test]
fn a_sasl_plaintext_listener_admits_plain_users_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("users");
    std::fs::write(&users, "alice:alice-secret\n").unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["--kafka-listen", "SASL_PLAINTEXT://127.0.0.1:0"])
        .arg("--sasl-plain-users")
        .arg(&users);
    let (_child, listening, _line) = serve(cmd, dir.path());
    for (password, ok) in [("alice-secret", true), ("wrong", false)] {
        let mut s = std::net::TcpStream::connect(&listening.kafka[0]).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        // SaslHandshake v1 "PLAIN", then SaslAuthenticate v0 with the token.
        let mut req = Vec::new();
        req.extend_from_slice(&17i16.to_be_bytes());
        req.extend_from_slice(&1i16.to_be_bytes());
        req.extend_from_slice(&1i32.to_be_bytes());
        req.extend_from_slice(&(-1i16).to_be_bytes());
        req.extend_from_slice(&5i16.to_be_bytes());
        req.extend_from_slice(b"PLAIN");
        send(&mut s, &req);
        let answer = receive(&mut s);
        assert_eq!(&answer[4..6], &[0, 0], "handshake error code");
        let token = format!("\0alice\0{password}");
        let mut req = Vec::new();
        req.extend_from_slice(&36i16.to_be_bytes());
        req.extend_from_slice(&0i16.to_be_bytes());
        req.extend_from_slice(&2i32.to_be_bytes());
        req.extend_from_slice(&(-1i16).to_be_bytes());
        req.extend_from_slice(&i32::try_from(token.len()).unwrap().to_be_bytes());
        req.extend_from_slice(token.as_bytes());
        send(&mut s, &req);
        let answer = receive(&mut s);
        let code = i16::from_be_bytes([answer[4], answer[5]]);
        assert_eq!(code, if ok { 0 } else { 58 }, "{password}");
    }
}

fn send(s: &mut impl Write, body: &[u8]) {
    s.write_all(&i32::try_from(body.len()).unwrap().to_be_bytes())
        .unwrap();
    s.write_all(body).unwrap();
}

fn receive(s: &mut impl Read) -> Vec<u8> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; usize::try_from(i32::from_be_bytes(len)).unwrap()];
    s.read_exact(&mut body).unwrap();
    body
}

#[test]
fn an_ssl_listener_serves_beside_plaintext() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, der) = certificate(dir.path());
    let mut cmd = Command::new(BIN);
    cmd.args([
        "--kafka-listen",
        "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
    ])
    .arg("--tls-cert")
    .arg(&cert)
    .arg("--tls-key")
    .arg(&key);
    let (_child, listening, line) = serve(cmd, dir.path());
    assert_eq!(listening.kafka.len(), 1);
    let ssl = listening.other_listeners[0]
        .strip_prefix("SSL://")
        .unwrap_or_else(|| panic!("{line}"));
    // A TLS handshake on the SSL port, then ApiVersions v0 over it.
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der.into()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = std::net::TcpStream::connect(ssl).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    assert_eq!(api_versions_correlation(&mut tls), 7);
    // The plaintext listener answers the same request in the clear.
    let mut plain = std::net::TcpStream::connect(&listening.kafka[0]).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    assert_eq!(api_versions_correlation(&mut plain), 7);
}

/// A Kafka client (rskafka) logged in with SCRAM as `user`: Ok when the
/// broker accepted the login and answered Metadata.
async fn scram_login(
    bootstrap: &str,
    mechanism: &str,
    user: &str,
    password: &str,
) -> Result<Vec<String>, String> {
    use rskafka::BackoffConfig;
    use rskafka::client::{ClientBuilder, Credentials, SaslConfig};
    let credentials = Credentials::new(user.into(), password.into());
    let sasl = match mechanism {
        "SCRAM-SHA-256" => SaslConfig::ScramSha256(credentials),
        _ => SaslConfig::ScramSha512(credentials),
    };
    let login = ClientBuilder::new(vec![bootstrap.to_string()])
        .sasl_config(sasl)
        .backoff_config(BackoffConfig {
            deadline: Some(Duration::from_secs(2)),
            ..BackoffConfig::default()
        })
        .build();
    let client = tokio::time::timeout(Duration::from_secs(30), login)
        .await
        .map_err(|_| "the login did not finish".to_string())?
        .map_err(|e| e.to_string())?;
    let topics = client.list_topics().await.map_err(|e| e.to_string())?;
    Ok(topics.into_iter().map(|t| t.name).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_commands_manage_the_scram_users_a_kafka_client_logs_in_as() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["--kafka-listen", "SASL_PLAINTEXT://127.0.0.1:0"]);
    let (_child, listening, _line) = serve(cmd, dir.path());
    let data = dir.path().join("data");
    let (json, kafka) = (listening.json.to_string(), listening.kafka[0].to_string());

    assert_eq!(
        ok_at(&json, &["user", "list", "--json"], b""),
        "{\"users\":[]}\n"
    );
    let added = ok_at(&json, &["user", "add", "alice"], b"alice-secret\n");
    assert_eq!(
        added,
        "user alice: SCRAM-SHA-512 credential set (4096 iterations)\n"
    );
    let file = dir.path().join("bob.password");
    std::fs::write(&file, "bob, \"the\" = secret\r\n").unwrap();
    let file = file.to_str().unwrap();
    let added = ok_at(
        &json,
        &[
            "user",
            "add",
            "bob",
            "--mechanism",
            "SCRAM-SHA-256",
            "--mechanism",
            "SCRAM-SHA-512",
            "--iterations",
            "8192",
            "--password-file",
            file,
            "--json",
        ],
        b"",
    );
    assert_eq!(
        added,
        "{\"iterations\":8192,\"mechanism\":\"SCRAM-SHA-256\",\"user\":\"bob\"}\n\
         {\"iterations\":8192,\"mechanism\":\"SCRAM-SHA-512\",\"user\":\"bob\"}\n"
    );
    let listed = ok_at(&json, &["user", "list"], b"");
    assert_eq!(
        listed,
        "alice  SCRAM-SHA-512 (4096 iterations)\n\
         bob  SCRAM-SHA-256 (8192 iterations), SCRAM-SHA-512 (8192 iterations)\n"
    );
    let listed = ok_at(&json, &["user", "list", "--json"], b"");
    let v: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(v["users"][1]["credentials"][0]["iterations"], 8192, "{v}");
    for secret in ["secret", "salt", "key"] {
        assert!(!listed.contains(secret), "{listed}");
    }

    // Refusals: an empty password, a mechanism SCRAM does not have and a
    // password on the command line are usage errors (exit 2); the
    // broker's own refusals exit 1 with their code.
    let (code, _, err) = fails_at(&json, &["user", "add", "carol"], b"");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("the password is empty"), "{err}");
    let (code, _, err) = fails_at(
        &json,
        &["user", "add", "carol", "--mechanism", "PLAIN"],
        b"x\n",
    );
    assert_eq!(code, Some(2), "{err}");
    let (code, _, err) = fails_at(&json, &["user", "add", "carol", "--password", "x"], b"");
    assert_eq!(code, Some(2), "{err}");
    let (code, _, err) = fails_at(
        &json,
        &["user", "add", "carol", "--iterations", "100"],
        b"x\n",
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("UNACCEPTABLE_CREDENTIAL"), "{err}");
    let (code, _, err) = fails_at(&json, &["user", "delete", "carol"], b"");
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("RESOURCE_NOT_FOUND"), "{err}");
    let help = ok_at(&json, &["user", "add", "--help"], b"");
    assert!(help.contains("never taken from the command line"), "{help}");

    // The users log in over SCRAM, with the right password only.
    scram_login(&kafka, "SCRAM-SHA-512", "alice", "alice-secret")
        .await
        .unwrap();
    scram_login(&kafka, "SCRAM-SHA-256", "bob", "bob, \"the\" = secret")
        .await
        .unwrap();
    assert!(
        scram_login(&kafka, "SCRAM-SHA-512", "alice", "wrong")
            .await
            .is_err()
    );
    assert!(
        scram_login(&kafka, "SCRAM-SHA-256", "alice", "alice-secret")
            .await
            .is_err()
    );

    let deleted = ok_at(
        &json,
        &["user", "delete", "bob", "--mechanism", "SCRAM-SHA-256"],
        b"",
    );
    assert_eq!(deleted, "user bob: deleted SCRAM-SHA-256\n");
    assert!(
        scram_login(&kafka, "SCRAM-SHA-256", "bob", "bob, \"the\" = secret")
            .await
            .is_err()
    );
    scram_login(&kafka, "SCRAM-SHA-512", "bob", "bob, \"the\" = secret")
        .await
        .unwrap();
    let deleted = ok_at(&json, &["user", "delete", "alice", "--json"], b"");
    assert_eq!(
        deleted,
        "{\"deleted\":[\"SCRAM-SHA-512\"],\"user\":\"alice\"}\n"
    );
    assert!(
        scram_login(&kafka, "SCRAM-SHA-512", "alice", "alice-secret")
            .await
            .is_err()
    );

    let stored = std::fs::read_to_string(data.join("security.json")).unwrap();
    assert!(!stored.contains("secret"), "{stored}");
}
