//! `MK_KAFKA_BENCH=security`: what SASL_SSL costs. One broker serves a
//! PLAINTEXT and a SASL_SSL listener side by side (TLS 1.3 from rustls,
//! SCRAM-SHA-512 logins); the same librdkafka load runs over each in turn
//! in one run, on the same broker and data directory: records of 100 B
//! and of 1 KiB produced (acks=1, default batching) and consumed back.
//! Reported per listener: records/s, MB/s and the broker's CPU per record
//! (user + system, from /proc), then SASL_SSL over PLAINTEXT for each.
//! The certificates (a CA and the broker's, for 127.0.0.1) are made here
//! with openssl; the SCRAM user is added with `mk-server user add`.

use super::{BIN, Spawned, cpu_secs, figure, load, report};
use mk_server::Listening;
use std::path::{Path, PathBuf};
use std::process::Command;

const USER: &str = "bench";
const PASSWORD: &str = "bench-password";

/// The broker child process, killed when dropped.
struct Broker {
    child: Spawned,
    listening: Listening,
}

/// A CA, and a certificate for 127.0.0.1 it signed (openssl, as the
/// interop suite makes them: librdkafka's OpenSSL verifies the chain and
/// the address); returns the CA's PEM file and the broker's certificate
/// and key files.
fn certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl runs");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let mut ca = vec![
        "req",
        "-x509",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-subj",
        "/CN=mk-bench-ca",
    ];
    ca.extend(ec);
    ca.extend(["-days", "1", "-addext", "basicConstraints=critical,CA:TRUE"]);
    openssl(&ca);
    let mut csr = vec![
        "req",
        "-keyout",
        "broker.key",
        "-out",
        "broker.csr",
        "-subj",
        "/CN=localhost",
    ];
    csr.extend(ec);
    openssl(&csr);
    std::fs::write(dir.join("broker.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "broker.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        "broker.ext",
        "-out",
        "broker.pem",
    ]);
    (
        dir.join("ca.pem"),
        dir.join("broker.pem"),
        dir.join("broker.key"),
    )
}

fn start(dir: &Path, cert: &Path, key: &Path) -> Broker {
    let (child, line) = Spawned::spawn(
        Command::new(BIN)
            .args([
                "--kafka-listen",
                "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            ])
            .args(["--sasl-mechanisms", "SCRAM-SHA-512"])
            .arg("--tls-cert")
            .arg(cert)
            .arg("--tls-key")
            .arg(key)
            .args(["--listen", "127.0.0.1:0", "--console-listen", "off"])
            .arg("--data-dir")
            .arg(dir.join("data-security"))
            .env("RUST_LOG", "warn"),
        "mk-server",
    );
    let listening = Listening::parse(&line).unwrap_or_else(|| panic!("no banner: {line:?}"));
    Broker { child, listening }
}

/// `mk-server user add`, the password from a file.
fn add_user(dir: &Path, json: &str) {
    let file = dir.join("bench.password");
    std::fs::write(&file, PASSWORD).unwrap();
    let out = Command::new(BIN)
        .args([
            "user",
            "add",
            USER,
            "--mechanism",
            "SCRAM-SHA-512",
            "--server",
            json,
        ])
        .arg("--password-file")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mk-server user add: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One listener's address and the librdkafka settings its clients need.
struct Listener {
    name: &'static str,
    bootstrap: String,
    settings: Vec<String>,
}

/// Runs one produce or consume over `l`; returns (seconds, broker CPU
/// seconds, load generator CPU seconds).
fn run(pid: u32, l: &Listener, args: &[&str]) -> (f64, f64, f64) {
    let mut all: Vec<&str> = vec![args[0], &l.bootstrap];
    all.extend(&args[1..]);
    all.extend(l.settings.iter().map(String::as_str));
    let before = cpu_secs(pid);
    let (secs, load_cpu) = load(&all);
    (secs, cpu_secs(pid) - before, load_cpu)
}

pub fn security(dir: &Path) {
    let (ca, cert, key) = certificates(dir);
    let broker = start(dir, &cert, &key);
    let pid = broker.child.id();
    add_user(dir, &broker.listening.json.to_string());
    let sasl_ssl = broker.listening.other_listeners[0]
        .strip_prefix("SASL_SSL://")
        .expect("the second listener is SASL_SSL")
        .to_string();
    let listeners = [
        Listener {
            name: "plaintext",
            bootstrap: broker.listening.kafka[0].clone(),
            settings: Vec::new(),
        },
        Listener {
            name: "sasl_ssl",
            bootstrap: sasl_ssl,
            settings: vec![
                "security.protocol=SASL_SSL".into(),
                "sasl.mechanisms=SCRAM-SHA-512".into(),
                format!("sasl.username={USER}"),
                format!("sasl.password={PASSWORD}"),
                format!("ssl.ca.location={}", ca.display()),
            ],
        },
    ];
    for l in &listeners {
        // Warm-up: topic creation, the first allocations and logins.
        run(
            pid,
            l,
            &[
                "produce",
                &format!("warmup-{}", l.name),
                "100000",
                "1024",
                "1",
            ],
        );
    }
    for (size, n) in [(100usize, 1_000_000usize), (1024, 200_000)] {
        let mut per_listener = Vec::new();
        for l in &listeners {
            let topic = format!("{}-{size}", l.name);
            let (n_s, size_s) = (n.to_string(), size.to_string());
            let produced = run(pid, l, &["produce", &topic, &n_s, &size_s, "1"]);
            let consumed = run(pid, l, &["consume", &topic, &n_s]);
            for (what, (secs, cpu, load_cpu)) in [("produce", produced), ("consume", consumed)] {
                let workload = format!(
                    "librdkafka 2.12 {what}, {n} records of {size} B, one partition, acks=1, default batching, over {}, 1 broker",
                    if l.name == "plaintext" {
                        "PLAINTEXT"
                    } else {
                        "SASL_SSL (TLS 1.3, SCRAM-SHA-512)"
                    }
                );
                let name = format!("kafka.security.{what}.{size}B.{}", l.name);
                report(&name, n, size, secs, cpu, load_cpu, &workload);
            }
            per_listener.push((produced, consumed));
        }
        let ((p_plain, c_plain), (p_ssl, c_ssl)) = (per_listener[0], per_listener[1]);
        for (what, plain, ssl) in [("produce", p_plain, p_ssl), ("consume", c_plain, c_ssl)] {
            let name = format!("kafka.security.{what}.{size}B.sasl_ssl_over_plaintext");
            figure(
                &format!("{name}.throughput"),
                plain.0 / ssl.0,
                "ratio",
                "SASL_SSL records/s over PLAINTEXT records/s, same run (1 = free)",
            );
            figure(
                &format!("{name}.server_cpu_per_record"),
                ssl.1 / plain.1,
                "ratio",
                "broker CPU per record over SASL_SSL over that over PLAINTEXT, same run",
            );
        }
    }
}
