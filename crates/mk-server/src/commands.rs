//! The client subcommands' shared pieces — the connection (with its
//! request timeout), the error type and how errors are printed (text or
//! `--json`, exit 2 for usage errors), stdout that ends quietly when its
//! reader goes away — and the small commands: broker offline/online,
//! stats and the in-process labs. Topics, produce, consume and the group
//! commands have their own modules.

use mk_adapter_jsontcp::{ClientError, JsonTcpClient, ServerStats};
use mk_cluster::{ClusterDescription, ErrorCode, Protocol};
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

/// Why a client subcommand failed.
#[derive(Debug)]
pub enum CmdError {
    /// The command line is wrong in a way clap could not see (exit 2, as
    /// clap's own usage errors).
    Usage(String),
    /// The server answered with an error, the connection broke or the
    /// request timed out.
    Client(ClientError),
    /// Something local: stdin, stdout, a bad input line.
    Failed(String),
    /// Whoever read stdout went away (`| head`): the command stops and
    /// exits 0 without a word, as Unix tools do.
    Closed,
}

impl From<ClientError> for CmdError {
    fn from(e: ClientError) -> Self {
        CmdError::Client(e)
    }
}

pub type CmdResult = Result<(), CmdError>;

pub fn usage<T>(msg: impl Into<String>) -> Result<T, CmdError> {
    Err(CmdError::Usage(msg.into()))
}

impl CmdError {
    /// The stable code of the error: the server's, INVALID_REQUEST for a
    /// usage error, REQUEST_TIMED_OUT for the client's timeout, none for a
    /// local failure.
    fn code(&self) -> Option<&'static str> {
        match self {
            CmdError::Usage(_) => Some(ErrorCode::InvalidRequest.as_str()),
            CmdError::Client(ClientError::Server(e)) => Some(e.code.as_str()),
            CmdError::Client(ClientError::TimedOut(_)) => Some(ErrorCode::RequestTimedOut.as_str()),
            CmdError::Client(_) | CmdError::Failed(_) | CmdError::Closed => None,
        }
    }

    /// The message without a prefix that only repeats the code: the core's
    /// messages start with a readable form of their code ("unknown topic:
    /// ..."), which after `UNKNOWN_TOPIC:` says the same thing twice.
    fn message(&self) -> String {
        match self {
            CmdError::Usage(m) | CmdError::Failed(m) => m.clone(),
            CmdError::Closed => String::new(),
            CmdError::Client(ClientError::Server(e)) => {
                let spoken = format!("{}: ", e.code.as_str().to_lowercase().replace('_', " "));
                e.message
                    .strip_prefix(&spoken)
                    .unwrap_or(&e.message)
                    .to_string()
            }
            CmdError::Client(e) => e.to_string(),
        }
    }

    /// Prints the error on stderr (one JSON object with `--json`) and
    /// returns the exit code: 2 for usage errors, 0 without a word for a
    /// closed stdout, 1 otherwise.
    pub fn report(&self, as_json: bool) -> ExitCode {
        if matches!(self, CmdError::Closed) {
            return ExitCode::SUCCESS;
        }
        let (code, message) = (self.code(), self.message());
        if as_json {
            eprintln!("{}", json!({"ok": false, "code": code, "message": message}));
        } else {
            match code {
                Some(c) => eprintln!("mk-server: {c}: {message}"),
                None => eprintln!("mk-server: {message}"),
            }
        }
        match self {
            CmdError::Usage(_) => ExitCode::from(2),
            _ => ExitCode::FAILURE,
        }
    }
}

/// Connects to `server`; every call is bounded by `timeout` (none when 0).
pub async fn connect(server: &str, timeout_ms: u64) -> Result<JsonTcpClient, CmdError> {
    let mut c = JsonTcpClient::connect(server).await.map_err(|e| {
        CmdError::Failed(format!(
            "cannot connect to {server}: {e} (is `mk-server` running? --server or MK_SERVER says where)"
        ))
    })?;
    c.set_request_timeout((timeout_ms > 0).then(|| Duration::from_millis(timeout_ms)));
    Ok(c)
}

/// Writes one line to stdout: `say!("...", args)` in a command returning
/// `CmdResult` (or any `Result<_, CmdError>`), which it leaves with `?`
/// when stdout fails (see [`stdout_failed`]).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::commands::write_line(format_args!($($arg)*))?
    };
}
pub(crate) use say;

/// Says a command's answer: `json` as one line under `--json`, else the
/// sentence `text`.
pub fn answer(as_json: bool, json: &serde_json::Value, text: std::fmt::Arguments<'_>) -> CmdResult {
    if as_json {
        write_line(format_args!("{json}"))
    } else {
        write_line(text)
    }
}

/// The body of `say!`.
pub fn write_line(line: std::fmt::Arguments<'_>) -> CmdResult {
    let mut out = std::io::stdout().lock();
    out.write_fmt(line)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(stdout_failed)
}

/// Writes bytes to stdout as they are (a completion script, rendered
/// records) and flushes them.
pub fn write_bytes(bytes: &[u8]) -> CmdResult {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(stdout_failed)
}

/// A failed write to stdout: a reader that went away is
/// [`CmdError::Closed`] (exit 0, quietly), anything else (a full disk
/// behind a redirect, say) an error.
pub fn stdout_failed(e: std::io::Error) -> CmdError {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        CmdError::Closed
    } else {
        CmdError::Failed(format!("cannot write to stdout: {e}"))
    }
}

pub async fn broker_offline(c: &mut JsonTcpClient, broker_id: i32, as_json: bool) -> CmdResult {
    let moved = c.broker_offline(broker_id).await?;
    if as_json {
        let moved: Vec<_> = moved
            .iter()
            .map(|(tp, le)| {
                json!({"topic": tp.topic, "partition": tp.partition,
                       "leader_id": le.leader_id, "leader_epoch": le.leader_epoch})
            })
            .collect();
        say!("{}", json!({ "broker_id": broker_id, "moved": moved }));
        return Ok(());
    }
    say!("broker {broker_id} is offline");
    for (tp, le) in moved {
        say!(
            "  {tp}: leader now broker {} (epoch {})",
            le.leader_id,
            le.leader_epoch
        );
    }
    Ok(())
}

/// `broker online`: says whether anything changed, since bringing back a
/// broker that was never offline does nothing.
pub async fn broker_online(c: &mut JsonTcpClient, broker_id: i32, as_json: bool) -> CmdResult {
    let was_offline = c.broker_online(broker_id).await?;
    if as_json {
        say!(
            "{}",
            json!({ "broker_id": broker_id, "online": true, "was_offline": was_offline })
        );
    } else if was_offline {
        say!("broker {broker_id} is online again; its replicas catch up as followers");
    } else {
        say!("broker {broker_id} was not offline; nothing changed");
    }
    Ok(())
}

/// `stats`: the wire `stats` operation, with the damaged partitions named
/// (from `describe_cluster`).
pub async fn stats(c: &mut JsonTcpClient, as_json: bool) -> CmdResult {
    let s = c.stats().await?;
    let d = c.describe_cluster().await?;
    let damaged: Vec<(String, String)> = d
        .partitions
        .iter()
        .filter_map(|p| {
            let cause = p.damaged.as_ref()?;
            Some((format!("{}-{}", p.topic, p.partition), cause.clone()))
        })
        .collect();
    if as_json {
        say!("{}", stats_json(&s, &d, &damaged));
    } else {
        stats_text(&s, &d, &damaged)?;
    }
    Ok(())
}

fn stats_json(
    s: &ServerStats,
    d: &ClusterDescription,
    damaged: &[(String, String)],
) -> serde_json::Value {
    let k = &s.cluster;
    let mut protocols = serde_json::Map::new();
    for p in &k.protocols {
        protocols.insert(
            p.protocol.name().to_string(),
            json!({"listeners": p.listeners, "connections": p.connections,
                   "connections_accepted": p.connections_accepted, "requests": p.requests}),
        );
    }
    let damaged: Vec<_> = damaged
        .iter()
        .map(|(p, cause)| json!({"partition": p, "cause": cause}))
        .collect();
    json!({
        "uptime_ms": k.uptime_ms, "connections": s.connections(), "requests": s.requests(),
        "protocols": protocols,
        "topics": k.topics, "partitions": k.partitions, "groups": k.groups,
        "transactions": k.transactions, "records": k.records, "log_bytes": k.log_bytes,
        "owned_tasks": k.owned_tasks, "in_flight": s.in_flight,
        "damaged_partitions": k.damaged_partitions, "damaged": damaged,
        "disk_full": k.disk_full, "offline_brokers": d.offline_brokers,
    })
}

fn stats_text(s: &ServerStats, d: &ClusterDescription, damaged: &[(String, String)]) -> CmdResult {
    let k = &s.cluster;
    let (kafka, json) = (s.protocol(Protocol::Kafka), s.protocol(Protocol::JsonTcp));
    let healthy = damaged.is_empty() && !k.disk_full && d.offline_brokers.is_empty();
    say!("uptime        {} s", k.uptime_ms / 1000);
    say!(
        "health        {}",
        if healthy { "ok" } else { "DEGRADED (below)" }
    );
    say!(
        "connections   {} open (Kafka {}, JSON-TCP {} with this one)",
        s.connections(),
        kafka.connections,
        json.connections
    );
    say!(
        "requests      {} answered (Kafka {}, JSON-TCP {})",
        s.requests(),
        kafka.requests,
        json.requests
    );
    say!(
        "listeners     Kafka {}, JSON-TCP {}",
        kafka.listeners,
        json.listeners
    );
    say!("topics        {}", k.topics);
    say!("partitions    {}", k.partitions);
    say!("groups        {}", k.groups);
    say!("transactions  {}", k.transactions);
    say!("records       {}", k.records);
    say!("log bytes     {}", k.log_bytes);
    say!(
        "disk full     {}",
        if k.disk_full {
            "YES: writes fail with STORAGE_ERROR until space is freed; reads go on"
        } else {
            "no"
        }
    );
    say!("damaged       {} partition(s)", k.damaged_partitions);
    for (p, cause) in damaged {
        say!("  {p} is offline: {cause}");
    }
    if !d.offline_brokers.is_empty() {
        say!("offline       broker(s) {:?}", d.offline_brokers);
    }
    Ok(())
}

pub async fn lab(name: &str, as_json: bool) -> CmdResult {
    if !mk_labs::LAB_NAMES.contains(&name) {
        return usage(format!(
            "unknown lab {name:?}; available: {}",
            mk_labs::LAB_NAMES.join(", ")
        ));
    }
    let dir = tempfile::tempdir()
        .map_err(|e| CmdError::Failed(format!("cannot create a temp dir: {e}")))?;
    let report = mk_labs::run_lab(name, dir.path())
        .await
        .map_err(|e| CmdError::Failed(format!("lab {name} failed: {e}")))?;
    if as_json {
        say!(
            "{}",
            json!({"name": report.name, "steps": report.steps, "facts": report.facts})
        );
        return Ok(());
    }
    say!(
        "lab {} (in-process, on a temporary data directory)",
        report.name
    );
    for step in &report.steps {
        say!("{step}");
    }
    Ok(())
}
