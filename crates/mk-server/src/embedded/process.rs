//! The child-process mode of the test broker: the `mk-server` binary
//! started with the builder's flags, ready when it has printed its
//! startup line, stopped with SIGTERM (gracefully) when dropped.
//!
//! Ports: JSON-TCP starts on port 0 and a single broker's Kafka listener
//! too; a restart passes the ports the first start got. Several brokers
//! take consecutive Kafka ports from one `--kafka-listen` port, so those
//! are chosen here (bind-then-close), and a start that loses one to
//! another process in between is retried on other ports.

use super::{BrokerBuilder, DataDir, StartError, create_topic};
use crate::listening::Listening;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a SIGTERM may take before the process is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);
/// How much of stderr is kept for [`BrokerProcess::stderr`] and for the
/// message of a refused start.
const STDERR_KEPT: usize = 1 << 20;
/// Starts retried after losing a chosen port to another process.
const PORT_ATTEMPTS: usize = 5;

/// A broker running as a child process of the `mk-server` binary.
/// Dropping it sends SIGTERM, waits for the graceful shutdown (killing it
/// after 20 s) and removes a temporary data directory.
#[derive(Debug)]
pub struct BrokerProcess {
    builder: BrokerBuilder,
    binary: PathBuf,
    child: Child,
    listening: Listening,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_thread: Option<JoinHandle<()>>,
    // Declared last: removed after the process is gone (see Drop).
    data: DataDir,
}

impl BrokerProcess {
    pub(super) fn spawn(
        builder: BrokerBuilder,
        binary: &Path,
    ) -> Result<BrokerProcess, StartError> {
        let data = DataDir::new(builder.data_dir.as_deref())?;
        let multi = builder.kafka && builder.brokers.len() > 1;
        let mut last = None;
        for _ in 0..PORT_ATTEMPTS {
            let kafka = match (builder.kafka, multi) {
                (false, _) => None,
                (true, false) => Some("127.0.0.1:0".to_string()),
                (true, true) => Some(format!(
                    "127.0.0.1:{}",
                    consecutive_free_ports(builder.brokers.len())?
                )),
            };
            let argv = builder.argv(
                data.path(),
                "127.0.0.1:0",
                kafka.as_deref(),
                builder.free_console(),
            );
            match Started::start(&builder, binary, &argv) {
                Ok(s) => return Ok(s.into_process(builder, binary, data)),
                Err(e @ StartError::Refused(_)) if multi && lost_a_port(&e) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or(StartError::Timeout(builder.start_timeout)))
    }

    /// Where it listens (every Kafka listener, JSON-TCP, metrics, the
    /// console).
    pub fn listening(&self) -> &Listening {
        &self.listening
    }

    /// `bootstrap.servers` for a Kafka client: every broker's listener,
    /// comma separated.
    pub fn bootstrap(&self) -> String {
        self.listening.bootstrap()
    }

    /// The JSON-TCP address (what `mk-server --server` takes).
    pub fn json_addr(&self) -> SocketAddr {
        self.listening.json
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        self.data.path()
    }

    /// The process id (of the wrapper, which becomes the broker once it
    /// has exec'ed it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Creates a topic over JSON-TCP.
    pub fn create_topic(
        &self,
        name: &str,
        partitions: u32,
        replication_factor: usize,
    ) -> Result<(), String> {
        create_topic(self.json_addr(), name, partitions, replication_factor)
    }

    /// What the broker wrote on stderr so far (the last MiB), complete
    /// once it has exited (it is passed through to this process's stderr
    /// too unless started with [`BrokerBuilder::capture_stderr`]).
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap_or_else(PoisonError::into_inner))
            .into_owned()
    }

    /// SIGKILL, as a crash: nothing is checkpointed; a restart recovers.
    pub fn kill(&mut self) -> std::io::Result<()> {
        if self.child.try_wait()?.is_none() {
            self.child.kill()?;
        }
        self.child.wait()?;
        self.join_stderr();
        Ok(())
    }

    /// SIGTERM and the wait for the graceful shutdown; its exit status
    /// (success after a clean shutdown). After 20 s it is killed and this
    /// is an error.
    pub fn terminate(&mut self) -> std::io::Result<ExitStatus> {
        if self.child.try_wait()?.is_none() {
            let pid = rustix::process::Pid::from_child(&self.child);
            rustix::process::kill_process(pid, rustix::process::Signal::TERM)?;
        }
        match self.wait_exit(STOP_TIMEOUT)? {
            Some(status) => Ok(status),
            None => {
                self.kill()?;
                Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("mk-server did not stop within {STOP_TIMEOUT:?} of SIGTERM (killed)"),
                ))
            }
        }
    }

    /// Waits up to `timeout` for the process to exit by itself; `None` if
    /// it is still running.
    pub fn wait_exit(&mut self, timeout: Duration) -> std::io::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                self.join_stderr();
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops the broker gracefully if it runs (it must exit 0), or takes
    /// it as it is if it already exited (killed, or stopped by the
    /// supervision rule), and starts it again on the same data directory
    /// and the same ports.
    pub fn restart(&mut self) -> Result<(), StartError> {
        if self.child.try_wait()?.is_none() {
            let status = self.terminate()?;
            if !status.success() {
                return Err(StartError::Refused(format!(
                    "stopping for the restart: exited with {status}; stderr:\n{}",
                    self.stderr()
                )));
            }
        }
        let kafka = self
            .listening
            .kafka_ports()
            .first()
            .map(|p| format!("127.0.0.1:{p}"));
        let console = self.listening.console.map(|a| a.to_string());
        let argv = self.builder.argv(
            self.data.path(),
            &self.listening.json.to_string(),
            kafka.as_deref(),
            console.as_deref(),
        );
        let started = Started::start(&self.builder, &self.binary, &argv)?;
        if started.listening.kafka != self.listening.kafka {
            return Err(StartError::Refused(format!(
                "restarted on other ports: {}",
                started.listening
            )));
        }
        self.child = started.child;
        self.listening = started.listening;
        self.stderr = started.stderr;
        self.stderr_thread = started.stderr_thread;
        Ok(())
    }

    fn join_stderr(&mut self) {
        if let Some(t) = self.stderr_thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for BrokerProcess {
    fn drop(&mut self) {
        let _ = self.terminate();
    }
}

/// One started process, before it becomes (or replaces) a `BrokerProcess`.
struct Started {
    child: Child,
    listening: Listening,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_thread: Option<JoinHandle<()>>,
}

impl Started {
    fn start(
        builder: &BrokerBuilder,
        binary: &Path,
        argv: &[OsString],
    ) -> Result<Started, StartError> {
        let mut command = match builder.wrapper.split_first() {
            None => Command::new(binary),
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(binary);
                c
            }
        };
        if std::env::var_os("RUST_LOG").is_none() {
            command.env("RUST_LOG", "warn");
        }
        let mut child = command
            .args(argv)
            .envs(builder.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let stderr_thread = child
            .stderr
            .take()
            .map(|s| keep_stderr(s, stderr.clone(), !builder.capture_stderr));
        let (line, timed_out) = match child.stdout.take().map(first_line_then_drain) {
            None => (None, false),
            Some(rx) => match rx.recv_timeout(builder.start_timeout) {
                Ok(line) => (Some(line), false),
                Err(e) => (None, e == mpsc::RecvTimeoutError::Timeout),
            },
        };
        match line.as_deref().and_then(Listening::parse) {
            Some(listening) => Ok(Started {
                child,
                listening,
                stderr,
                stderr_thread,
            }),
            None if timed_out => {
                stop_and_reap(child, stderr_thread);
                Err(StartError::Timeout(builder.start_timeout))
            }
            None => {
                let status = stop_and_reap(child, stderr_thread);
                let stderr = stderr.lock().unwrap_or_else(PoisonError::into_inner);
                Err(StartError::Refused(format!(
                    "first line {line:?}, exit {status}, stderr:\n{}",
                    String::from_utf8_lossy(&stderr)
                )))
            }
        }
    }

    fn into_process(self, builder: BrokerBuilder, binary: &Path, data: DataDir) -> BrokerProcess {
        BrokerProcess {
            builder,
            binary: binary.to_path_buf(),
            child: self.child,
            listening: self.listening,
            stderr: self.stderr,
            stderr_thread: self.stderr_thread,
            data,
        }
    }
}

/// Kills the process if it still runs, reaps it and waits for the rest of
/// its stderr; its exit status as text.
fn stop_and_reap(mut child: Child, stderr_thread: Option<JoinHandle<()>>) -> String {
    let _ = child.kill();
    let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
    if let Some(t) = stderr_thread {
        let _ = t.join();
    }
    status
}

/// Sends the first stdout line (or nothing at EOF), then keeps reading so
/// the broker never blocks on a full pipe.
fn first_line_then_drain(stdout: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        if matches!(reader.read_line(&mut line), Ok(n) if n > 0) {
            let _ = tx.send(line);
        }
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    rx
}

/// Keeps the last `STDERR_KEPT` bytes of stderr, passing them through to
/// this process's stderr when `echo`.
fn keep_stderr(
    mut stderr: impl Read + Send + 'static,
    kept: Arc<Mutex<Vec<u8>>>,
    echo: bool,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        while let Ok(n) = stderr.read(&mut chunk) {
            if n == 0 {
                return;
            }
            if echo {
                let _ = std::io::stderr().write_all(&chunk[..n]);
            }
            let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
            kept.extend_from_slice(&chunk[..n]);
            if kept.len() > STDERR_KEPT {
                let cut = kept.len() - STDERR_KEPT;
                kept.drain(..cut);
            }
        }
    })
}

/// `count` consecutive loopback ports that were free a moment ago: the
/// kernel picks the first (it hands out ports in a rotating order, so it
/// is not handed out again at once), the others are checked.
fn consecutive_free_ports(count: usize) -> std::io::Result<u16> {
    for _ in 0..100 {
        let first = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let all_free = (1..count).all(|i| {
            u16::try_from(usize::from(first) + i)
                .is_ok_and(|p| TcpListener::bind(("127.0.0.1", p)).is_ok())
        });
        if all_free {
            return Ok(first);
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AddrInUse,
        format!("found no {count} consecutive free ports on 127.0.0.1"),
    ))
}

fn lost_a_port(e: &StartError) -> bool {
    let text = e.to_string();
    text.contains("cannot listen") || text.contains("Address already in use")
}
