//! A broker for tests, started from Rust: [`BrokerBuilder`] takes the
//! binary's own flags and starts one process's worth of brokers (`--brokers
//! 1,2,3` hosts three) on free loopback ports with a temporary data
//! directory, either inside the test process ([`EmbeddedBroker`], its own
//! tokio runtime on its own thread, so it works from plain and from async
//! tests) or as a child process of the `mk-server` binary
//! ([`BrokerProcess`], for tests of the binary itself: signals, exit codes,
//! stderr). Both wait for the startup line, hand out the bootstrap and
//! JSON-TCP addresses, restart on the same data directory and ports, and
//! stop and clean up when dropped.
//!
//! The builder owns `--listen`, `--kafka-listen`, `--console-listen`,
//! `--data-dir` and `--brokers` (so it can choose free ports and keep them
//! across a restart); every other flag of `mk-server --help` goes through
//! [`BrokerBuilder::arg`]. The console is off unless asked for.

mod process;

pub use process::BrokerProcess;

use crate::listening::Listening;
use crate::serve::{ServeError, serve};
use crate::settings::{ServeArgs, Settings};
use clap::Parser;
use std::ffi::OsString;
use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a start may take before it is given up [default of
/// [`BrokerBuilder::start_timeout`]].
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(30);

/// Configures and starts a test broker. Defaults: one broker (id 1), the
/// Kafka protocol and JSON-TCP on free `127.0.0.1` ports, a fresh temporary
/// data directory removed on drop, every other setting the binary's default.
#[derive(Debug, Clone)]
#[must_use]
pub struct BrokerBuilder {
    brokers: Vec<i32>,
    kafka: bool,
    console: bool,
    data_dir: Option<PathBuf>,
    args: Vec<OsString>,
    start_timeout: Duration,
    wrapper: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    capture_stderr: bool,
}

impl Default for BrokerBuilder {
    fn default() -> Self {
        BrokerBuilder {
            brokers: vec![1],
            kafka: true,
            console: false,
            data_dir: None,
            args: Vec::new(),
            start_timeout: DEFAULT_START_TIMEOUT,
            wrapper: Vec::new(),
            env: Vec::new(),
            capture_stderr: false,
        }
    }
}

impl BrokerBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The broker ids the process hosts (`--brokers`), e.g. `[1, 2, 3]`:
    /// each gets its own Kafka listener.
    pub fn brokers(mut self, ids: impl IntoIterator<Item = i32>) -> Self {
        self.brokers = ids.into_iter().collect();
        self
    }

    /// `--min-insync-replicas N`.
    pub fn min_insync_replicas(self, n: usize) -> Self {
        self.arg("--min-insync-replicas").arg(n.to_string())
    }

    /// Serve JSON-TCP only (`--kafka-listen off`).
    pub fn kafka_off(mut self) -> Self {
        self.kafka = false;
        self
    }

    /// Serve the web console too, on a free loopback port
    /// (`listening().console`).
    pub fn console(mut self) -> Self {
        self.console = true;
        self
    }

    /// Keep the data in `dir` (created if missing, left in place after the
    /// broker stops) instead of a temporary directory: to start a broker on
    /// an existing data directory, or to look at it afterwards.
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    /// Any other flag of `mk-server`, e.g. `.arg("--segment-bytes")
    /// .arg("1048576")` or `.arg("--lab")`.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Several flags at once, e.g. `.args(["--num-partitions", "3"])`.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// How long to wait for the startup line.
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// Child process only: run the binary through this command (which
    /// runs the next one, e.g. `["prlimit", "--nofile=100:100"]`).
    pub fn wrapper<I, S>(mut self, command: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.wrapper = command.into_iter().map(Into::into).collect();
        self
    }

    /// Child process only: an environment variable. `RUST_LOG` is
    /// inherited when set and `warn` otherwise.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Child process only: keep the broker's stderr for
    /// [`BrokerProcess::stderr`] instead of passing it through to this
    /// process's stderr.
    pub fn capture_stderr(mut self) -> Self {
        self.capture_stderr = true;
        self
    }

    /// Starts the broker inside this process and waits until it listens.
    pub fn start(self) -> Result<EmbeddedBroker, StartError> {
        self.check_args()?;
        let data = DataDir::new(self.data_dir.as_deref())?;
        let kafka = self.kafka.then(|| "127.0.0.1:0".to_string());
        let argv = self.argv(
            data.path(),
            "127.0.0.1:0",
            kafka.as_deref(),
            self.free_console(),
        );
        let settings = resolve(argv)?;
        let running = Launched::launch(settings.clone(), None, self.start_timeout)?;
        Ok(EmbeddedBroker {
            running: Some(running),
            settings,
            start_timeout: self.start_timeout,
            data,
        })
    }

    /// Starts `binary` (the `mk-server` executable, e.g.
    /// `env!("CARGO_BIN_EXE_mk-server")` in the tests of a crate that
    /// builds it) as a child process and waits until it listens.
    pub fn spawn(self, binary: impl AsRef<Path>) -> Result<BrokerProcess, StartError> {
        self.check_args()?;
        BrokerProcess::spawn(self, binary.as_ref())
    }

    /// Refuses the flags the builder sets itself, with the method to use
    /// instead (clap would only say that a flag repeats).
    fn check_args(&self) -> Result<(), StartError> {
        for arg in &self.args {
            let arg = arg.to_string_lossy();
            let name = arg.split('=').next().unwrap_or_default();
            let instead = match name {
                "--listen" | "--kafka-listen" => {
                    "the builder picks free ports (.kafka_off() turns Kafka off)"
                }
                "--console-listen" => "use .console()",
                "--data-dir" => "use .data_dir()",
                "--brokers" => "use .brokers()",
                _ => continue,
            };
            return Err(StartError::InvalidFlags(format!(
                "{name} is set by the builder: {instead}"
            )));
        }
        Ok(())
    }

    /// Where a first start puts the console: a free loopback port, if on.
    fn free_console(&self) -> Option<&'static str> {
        self.console.then_some("127.0.0.1:0")
    }

    /// The command line after the program name.
    fn argv(
        &self,
        data_dir: &Path,
        json: &str,
        kafka: Option<&str>,
        console: Option<&str>,
    ) -> Vec<OsString> {
        let ids: Vec<String> = self.brokers.iter().map(i32::to_string).collect();
        let mut argv: Vec<OsString> = vec![
            "--listen".into(),
            json.into(),
            "--kafka-listen".into(),
            kafka.unwrap_or("off").into(),
            "--console-listen".into(),
            console.unwrap_or("off").into(),
            "--data-dir".into(),
            data_dir.into(),
            "--brokers".into(),
            ids.join(",").into(),
        ];
        argv.extend(self.args.iter().cloned());
        argv
    }
}

/// Why a test broker did not start.
#[derive(Debug)]
pub enum StartError {
    /// The flags do not parse or are invalid (the binary would refuse
    /// them the same way).
    InvalidFlags(String),
    /// The broker refused to start or stopped before it listened: its
    /// message, and for a child process its exit status and stderr.
    Refused(String),
    /// No startup line within the start timeout.
    Timeout(Duration),
    /// The data directory, thread or process could not be created.
    Io(std::io::Error),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::InvalidFlags(e) => write!(f, "invalid mk-server flags: {e}"),
            StartError::Refused(e) => write!(f, "mk-server did not start: {e}"),
            StartError::Timeout(t) => write!(f, "mk-server did not listen within {t:?}"),
            StartError::Io(e) => write!(f, "cannot start mk-server: {e}"),
        }
    }
}

impl std::error::Error for StartError {}

impl From<std::io::Error> for StartError {
    fn from(e: std::io::Error) -> Self {
        StartError::Io(e)
    }
}

/// The data directory: a temporary one removed on drop, or the caller's.
#[derive(Debug)]
enum DataDir {
    Temp(tempfile::TempDir),
    Given(PathBuf),
}

impl DataDir {
    fn new(given: Option<&Path>) -> std::io::Result<DataDir> {
        Ok(match given {
            Some(dir) => DataDir::Given(dir.to_path_buf()),
            None => DataDir::Temp(tempfile::Builder::new().prefix("mk-server-").tempdir()?),
        })
    }

    fn path(&self) -> &Path {
        match self {
            DataDir::Temp(t) => t.path(),
            DataDir::Given(p) => p,
        }
    }
}

/// The binary's own flag parser, so an embedded broker takes exactly what
/// `mk-server` takes.
#[derive(Debug, Parser)]
#[command(name = "mk-server")]
struct Flags {
    #[command(flatten)]
    serve: ServeArgs,
}

fn resolve(argv: Vec<OsString>) -> Result<Settings, StartError> {
    let flags = Flags::try_parse_from(std::iter::once(OsString::from("mk-server")).chain(argv))
        .map_err(|e| StartError::InvalidFlags(e.to_string()))?;
    flags.serve.resolve().map_err(StartError::InvalidFlags)
}

/// A broker running inside this process: its own multi-threaded tokio
/// runtime on its own thread. Dropping it shuts the broker down gracefully
/// (connections closed, data checkpointed) and removes a temporary data
/// directory.
#[derive(Debug)]
pub struct EmbeddedBroker {
    running: Option<Launched>,
    settings: Settings,
    start_timeout: Duration,
    // Declared last: removed after the broker stopped (see Drop).
    data: DataDir,
}

impl EmbeddedBroker {
    /// Starts a single broker with every default: `BrokerBuilder::new().start()`.
    pub fn start() -> Result<EmbeddedBroker, StartError> {
        BrokerBuilder::new().start()
    }

    /// Where it listens (every Kafka listener, JSON-TCP, metrics, the
    /// console).
    ///
    /// # Panics
    ///
    /// After a failed [`restart`](Self::restart), which leaves no broker.
    pub fn listening(&self) -> &Listening {
        &self
            .running
            .as_ref()
            .expect("the broker is not running (a restart failed)")
            .listening
    }

    /// `bootstrap.servers` for a Kafka client: every broker's listener,
    /// comma separated (`127.0.0.1:PORT` for one broker).
    pub fn bootstrap(&self) -> String {
        self.listening().bootstrap()
    }

    /// The JSON-TCP address (what `mk-server --server` takes).
    pub fn json_addr(&self) -> SocketAddr {
        self.listening().json
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        self.data.path()
    }

    /// Creates a topic over JSON-TCP (a Kafka client's admin API works
    /// too).
    pub fn create_topic(
        &self,
        name: &str,
        partitions: u32,
        replication_factor: usize,
    ) -> Result<(), String> {
        create_topic(self.json_addr(), name, partitions, replication_factor)
    }

    /// Shuts down gracefully and starts again on the same data directory
    /// and the same ports, so clients reconnect to the same addresses and
    /// find every acknowledged record.
    pub fn restart(&mut self) -> Result<(), StartError> {
        let previous = self
            .running
            .take()
            .ok_or_else(|| StartError::Refused("the broker is not running".to_string()))?;
        let listening = previous.listening.clone();
        previous
            .stop()
            .map_err(|e| StartError::Refused(format!("stopping for the restart: {e}")))?;
        let mut settings = self.settings.clone();
        settings.listen = listening.json.to_string();
        settings.metrics_listen = listening.metrics;
        settings.console_listen = listening.console;
        let ports = settings
            .kafka_listen
            .as_ref()
            .map(|_| listening.kafka_ports());
        self.running = Some(Launched::launch(settings, ports, self.start_timeout)?);
        Ok(())
    }

    /// Shuts down gracefully and says how serving ended (a broker the
    /// supervision rule stopped, or a failed close, is an error).
    pub fn stop(mut self) -> Result<(), ServeError> {
        self.running.take().map_or(Ok(()), Launched::stop)
    }
}

impl Drop for EmbeddedBroker {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            let _ = running.stop();
        }
    }
}

/// One start of an in-process broker: the serving thread and the handle
/// that stops it.
#[derive(Debug)]
struct Launched {
    listening: Listening,
    stop: tokio::sync::oneshot::Sender<()>,
    thread: JoinHandle<Result<(), ServeError>>,
}

impl Launched {
    fn launch(
        settings: Settings,
        kafka_ports: Option<Vec<u16>>,
        timeout: Duration,
    ) -> Result<Launched, StartError> {
        let (ready_tx, ready_rx) = mpsc::channel::<Result<Listening, ServeError>>();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("mk-server".to_string())
            .spawn(move || serve_on_own_runtime(settings, kafka_ports, stopped, ready_tx))?;
        match ready_rx.recv_timeout(timeout) {
            Ok(Ok(listening)) => Ok(Launched {
                listening,
                stop,
                thread,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(StartError::Refused(e.to_string()))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // The thread stops once the broker has opened; it is not
                // waited for, the caller has waited long enough.
                drop(stop);
                Err(StartError::Timeout(timeout))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let why = match thread.join() {
                    Err(_) => "the broker thread panicked".to_string(),
                    Ok(r) => format!("the broker thread ended: {r:?}"),
                };
                Err(StartError::Refused(why))
            }
        }
    }

    fn stop(self) -> Result<(), ServeError> {
        let _ = self.stop.send(());
        self.thread
            .join()
            .unwrap_or_else(|_| Err(ServeError::Failed("the broker thread panicked".into())))
    }
}

fn serve_on_own_runtime(
    settings: Settings,
    kafka_ports: Option<Vec<u16>>,
    stopped: tokio::sync::oneshot::Receiver<()>,
    ready: mpsc::Sender<Result<Listening, ServeError>>,
) -> Result<(), ServeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("mk-server-worker")
        .enable_all()
        .build()
        .map_err(|e| ServeError::Failed(format!("cannot start a tokio runtime: {e}")))?;
    let on_ready = ready.clone();
    let result = runtime.block_on(serve(
        settings,
        kafka_ports,
        async {
            let _ = stopped.await;
            "the embedded broker's handle stopped it"
        },
        move |l| {
            let _ = on_ready.send(Ok(l.clone()));
        },
    ));
    if let Err(e) = &result {
        // Seen only by a start still waiting: a refused start.
        let _ = ready.send(Err(e.clone()));
    }
    result
}

/// One `create_topic` request over a fresh JSON-TCP connection.
pub(crate) fn create_topic(
    json: SocketAddr,
    name: &str,
    partitions: u32,
    replication_factor: usize,
) -> Result<(), String> {
    let request = serde_json::json!({
        "operation": "create_topic",
        "topic": name,
        "partitions": partitions,
        "replication_factor": replication_factor,
    });
    let answer = json_call(json, &request).map_err(|e| format!("create_topic {name}: {e}"))?;
    if answer["ok"] == true {
        return Ok(());
    }
    Err(format!(
        "create_topic {name}: {} {}",
        answer["code"].as_str().unwrap_or("?"),
        answer["message"].as_str().unwrap_or("")
    ))
}

fn json_call(addr: SocketAddr, request: &serde_json::Value) -> std::io::Result<serde_json::Value> {
    let mut stream = TcpStream::connect_timeout(&addr, DEFAULT_START_TIMEOUT)?;
    stream.set_read_timeout(Some(DEFAULT_START_TIMEOUT))?;
    stream.write_all(format!("{request}\n").as_bytes())?;
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line)?;
    serde_json::from_str(&line).map_err(std::io::Error::other)
}
