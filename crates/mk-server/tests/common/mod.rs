//! What the tests of the real `mk-server` binary share: a server process
//! (the embedded broker's child-process mode) and its addresses, running a
//! client subcommand to completion, a raw JSON-TCP connection (`Wire`), a
//! small disk of its own (`SmallDisk`), a one-shot HTTP GET and one raw
//! Kafka request (ApiVersions).

#![allow(dead_code)]

use mk_server::embedded::{BrokerBuilder, BrokerProcess};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub const BIN: &str = env!("CARGO_BIN_EXE_mk-server");
pub const PATIENCE: Duration = Duration::from_secs(30);

/// A running server (the embedded broker's child-process mode: stopped
/// with SIGTERM when dropped) and its JSON-TCP address as text, which most
/// tests pass around.
pub struct ServerProcess {
    pub broker: BrokerProcess,
    /// The JSON-TCP address.
    pub addr: String,
}

pub fn start(data_dir: &Path, extra: &[&str]) -> ServerProcess {
    spawn(BrokerBuilder::new().args(extra), data_dir)
}

/// Like `start`, with the server run by `wrapper` (a command that runs the
/// next one, e.g. `prlimit --nofile=...`); the child's pid is the server's
/// once the wrapper has exec'ed it.
/// A server on a data directory of its own, which lives as long as the
/// returned `TempDir` (keep it bound for the test's length).
pub fn start_fresh() -> (tempfile::TempDir, ServerProcess) {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir.path().join("data"), &[]);
    (dir, server)
}

/// `start_fresh` with one topic, made by `topic create` with `args` (its
/// name, then any flags).
pub fn start_with_topic(args: &[&str]) -> (tempfile::TempDir, ServerProcess) {
    let (dir, server) = start_fresh();
    let mut create = vec!["topic", "create"];
    create.extend(args);
    ok_at(&server.addr, &create, b"");
    (dir, server)
}

pub fn start_wrapped(wrapper: &[&str], data_dir: &Path, extra: &[&str]) -> ServerProcess {
    spawn(BrokerBuilder::new().wrapper(wrapper).args(extra), data_dir)
}

/// Starts the binary on free ports with its data in `data_dir`.
pub fn spawn(builder: BrokerBuilder, data_dir: &Path) -> ServerProcess {
    let broker = builder
        .data_dir(data_dir)
        .start_timeout(PATIENCE)
        .spawn(BIN)
        .expect("mk-server starts");
    assert_eq!(broker.listening().data_dir, data_dir);
    let addr = broker.json_addr().to_string();
    ServerProcess { broker, addr }
}

/// Starts the binary with `args` and `env`, its stdin as given, its stdout
/// and stderr piped.
pub fn spawn_piped(args: &[&str], env: &[(&str, &str)], stdin: Stdio) -> Child {
    Command::new(BIN)
        .args(args)
        .envs(env.iter().copied())
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs the binary to completion; returns (success, stdout, stderr).
pub fn run(args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut child = spawn_piped(args, &[], Stdio::piped());
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A small disk: a tmpfs of a fixed size mounted in a user and mount
/// namespace of its own (util-linux `unshare`, no privileges needed), held
/// by a child process. Servers run inside it through `nsenter`; the test
/// reaches its files through the holder's `/proc/<pid>/root`.
pub struct SmallDisk {
    pub holder: Child,
    pub mount: tempfile::TempDir,
}

impl SmallDisk {
    pub fn new(size: &str) -> SmallDisk {
        let mount = tempfile::tempdir().unwrap();
        let script = format!(
            "mount -t tmpfs -o size={size} tmpfs {} && echo mounted && exec cat",
            mount.path().display()
        );
        let mut holder = Command::new("unshare")
            .args(["--user", "--map-root-user", "--mount", "sh", "-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("util-linux unshare runs");
        let stdout = holder.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(PATIENCE).unwrap();
        assert_eq!(line.trim(), "mounted", "a tmpfs in a user namespace");
        SmallDisk { holder, mount }
    }

    /// Where `rel` inside the small disk is, as the server sees it.
    pub fn inside(&self, rel: &str) -> std::path::PathBuf {
        self.mount.path().join(rel)
    }

    /// The same file seen from this process.
    pub fn outside(&self, rel: &str) -> std::path::PathBuf {
        Path::new(&format!("/proc/{}/root", self.holder.id()))
            .join(self.mount.path().strip_prefix("/").unwrap())
            .join(rel)
    }

    /// The command prefix that runs a program inside.
    pub fn enter(&self) -> Vec<String> {
        [
            "nsenter",
            "-t",
            &self.holder.id().to_string(),
            "-U",
            "-m",
            "--preserve-credentials",
        ]
        .map(String::from)
        .to_vec()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

/// A blocking JSON-TCP connection that sends raw request lines.
pub struct Wire {
    reader: BufReader<std::net::TcpStream>,
    writer: std::net::TcpStream,
}

impl Wire {
    pub fn connect(addr: &str) -> Wire {
        let s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        Wire {
            reader: BufReader::new(s.try_clone().unwrap()),
            writer: s,
        }
    }

    /// Sends one request; returns the response, which must succeed.
    pub fn ok(&mut self, request: serde_json::Value) -> serde_json::Value {
        let v = self.call(&request);
        assert_eq!(v["ok"], true, "{request} -> {v}");
        v
    }

    pub fn call(&mut self, request: &serde_json::Value) -> serde_json::Value {
        writeln!(self.writer, "{request}").unwrap();
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    }

    /// Produces `values` to one partition in batches of up to 1000.
    pub fn produce(&mut self, topic: &str, partition: u32, values: &[String]) {
        use base64::Engine;
        for chunk in values.chunks(1000) {
            let records: Vec<_> = chunk
                .iter()
                .map(|v| {
                    serde_json::json!({"value_b64": base64::engine::general_purpose::STANDARD.encode(v)})
                })
                .collect();
            self.ok(serde_json::json!({"operation": "produce", "topic": topic,
                "partition": partition, "records": records}));
        }
    }

    pub fn committed(&mut self, group: &str) -> Vec<(String, u64, i64)> {
        let v = self.ok(serde_json::json!({"operation": "fetch_offsets", "group_id": group}));
        v["offsets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                (
                    o["topic"].as_str().unwrap().to_string(),
                    o["partition"].as_u64().unwrap(),
                    o["offset"].as_i64().unwrap(),
                )
            })
            .collect()
    }
}

/// Runs the binary against `server` with the given environment; returns
/// (exit code, stdout bytes, stderr). Fails the test if it does not finish
/// within `PATIENCE` (it is killed then).
pub fn run_full(
    args: &[&str],
    stdin: &[u8],
    env: &[(&str, &str)],
) -> (Option<i32>, Vec<u8>, String) {
    let mut child = spawn_piped(args, env, Stdio::piped());
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let (tx, rx) = mpsc::channel();
    let pid = child.id();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(PATIENCE) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("{args:?} did not finish within {PATIENCE:?}");
        }
    };
    feeder.join().unwrap();
    (
        out.status.code(),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `run_full` with `--server` and no environment; the command must succeed.
pub fn ok_at(server: &str, args: &[&str], stdin: &[u8]) -> String {
    let mut all = args.to_vec();
    all.extend(["--server", server]);
    let (code, out, err) = run_full(&all, stdin, &[]);
    assert_eq!(code, Some(0), "{all:?} failed: {err}");
    String::from_utf8(out).unwrap()
}

/// `run_full` with `--server`; returns (exit code, stdout, stderr).
pub fn fails_at(server: &str, args: &[&str], stdin: &[u8]) -> (Option<i32>, String, String) {
    let mut all = args.to_vec();
    all.extend(["--server", server]);
    let (code, out, err) = run_full(&all, stdin, &[]);
    assert_ne!(code, Some(0), "{all:?} should fail");
    (code, String::from_utf8_lossy(&out).into_owned(), err)
}

/// Waits (polling with a deadline) until `child` exits.
pub fn exits_within(child: &mut Child, what: &str) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(std::time::Instant::now() < deadline, "{what} kept running");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn http_get(addr: &str, path: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut s, &mut out).unwrap();
    out
}

/// Sends one Kafka request with a version 1 request header (client id
/// "mk") and reads the whole answer: its correlation id and the body after
/// it.
pub fn kafka_call(
    s: &mut (impl std::io::Read + Write),
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    body: &[u8],
) -> (i32, Vec<u8>) {
    let request: Vec<u8> = [
        &api_key.to_be_bytes()[..],
        &api_version.to_be_bytes(),
        &correlation_id.to_be_bytes(),
        &2i16.to_be_bytes(),
        b"mk",
        body,
    ]
    .concat();
    s.write_all(&i32::try_from(request.len()).unwrap().to_be_bytes())
        .unwrap();
    s.write_all(&request).unwrap();
    s.flush().unwrap();
    let mut size = [0u8; 4];
    s.read_exact(&mut size).unwrap();
    let mut answer = vec![0u8; usize::try_from(i32::from_be_bytes(size)).unwrap()];
    s.read_exact(&mut answer).unwrap();
    let body = answer.split_off(4);
    (i32::from_be_bytes(answer.try_into().unwrap()), body)
}

/// Sends ApiVersions v0 with correlation id 7 and returns the answer's
/// correlation id.
pub fn api_versions_correlation(s: &mut (impl std::io::Read + Write)) -> i32 {
    kafka_call(s, 18, 0, 7, &[]).0
}
