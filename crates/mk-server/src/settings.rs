//! The broker's settings: command-line flags (clap), an optional TOML file
//! (`--config FILE`) and the defaults, merged in that order of precedence
//! into a `MiniKafkaConfig`, the JSON server's `ServerOptions` and the
//! Kafka listeners' `KafkaOptions`.

use clap::Args;
use mk_adapter_jsontcp::ServerOptions;
use mk_adapter_kafka::{KafkaOptions, ListenerSpec, SecurityProtocol, TlsFiles};
use mk_cluster::{CleanupPolicy, FlushPolicy, MiniKafkaConfig};
use mk_runtime::DriverConfig;
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// Kafka's `group.initial.rebalance.delay.ms`: the product waits as Kafka
/// does (the library's `MiniKafkaConfig::new` forms groups at once).
const DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS: i64 = 3_000;

/// The broker's default `segment.bytes`: 64 MiB. The library's default
/// (1 MiB, spec 00) keeps the chapters' rolls, retention and compaction
/// visible with little data; a broker rolls 64x less often, so the roll and
/// the fsync of each rolled segment's three files are rare (at 200 MB/s
/// about three rolls a second instead of 200), while retention still
/// deletes in steps of at most 64 MiB per partition. Kafka's own default is
/// 1 GiB with a 7-day `segment.ms`; without a time-based roll, a smaller
/// segment bounds how long a quiet partition keeps data past its
/// retention. docs/operations.md explains the choice.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 * 1024 * 1024;

/// Flags of `mk-server` (serving is the default command).
#[derive(Debug, Clone, Default, Args)]
pub struct ServeArgs {
    /// Address to serve JSON-TCP on [default: 127.0.0.1:9192].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Kafka listeners, comma separated, each PROTOCOL://IP:PORT with
    /// PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (a bare IP:PORT is
    /// PLAINTEXT), or `off`. With several brokers each gets its own port
    /// per listener, consecutive (9092, 9093, ...) [default: 127.0.0.1:9092].
    #[arg(long, value_name = "LISTENERS|off")]
    pub kafka_listen: Option<String>,
    /// The certificate chain (PEM) of SSL and SASL_SSL listeners.
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// CA certificates (PEM): SSL and SASL_SSL clients must present a
    /// certificate one of them signed; an SSL client's principal is then
    /// User: + the certificate's subject DN [default: no client
    /// certificates].
    #[arg(long, value_name = "FILE")]
    pub tls_client_ca: Option<PathBuf>,
    /// SASL mechanisms SASL_PLAINTEXT and SASL_SSL listeners offer, comma
    /// separated [default: PLAIN,SCRAM-SHA-256,SCRAM-SHA-512].
    #[arg(long, value_name = "NAMES")]
    pub sasl_mechanisms: Option<String>,
    /// PLAIN's users: a file of `user:password` lines [default: none, every
    /// PLAIN login fails].
    #[arg(long, value_name = "FILE")]
    pub sasl_plain_users: Option<PathBuf>,
    /// `acl` turns on Kafka's ACL authorizer on the Kafka listeners
    /// (StandardAuthorizer semantics), `off` leaves every request allowed
    /// [default: off].
    #[arg(long, value_name = "acl|off")]
    pub authorizer: Option<String>,
    /// Principals the authorizer allows everything, `;` separated, e.g.
    /// `User:admin;User:ops` [default: none].
    #[arg(long, value_name = "PRINCIPALS")]
    pub super_users: Option<String>,
    /// With the authorizer on, allow a request on a resource no ACL names
    /// at all (Kafka's allow.everyone.if.no.acl.found) [default: false].
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub allow_everyone_if_no_acl_found: Option<bool>,
    /// Host that Metadata advertises for every broker [default: the
    /// listener's IP].
    #[arg(long, value_name = "HOST")]
    pub kafka_advertised_host: Option<String>,
    /// Create topics that Kafka clients ask metadata for (Kafka's
    /// auto.create.topics.enable) [default: true].
    #[arg(long, value_name = "BOOL")]
    pub auto_create_topics: Option<bool>,
    /// Partitions of auto-created topics (Kafka's num.partitions) [default: 1].
    #[arg(long, value_name = "N")]
    pub num_partitions: Option<u32>,
    /// The most record bytes one fetch answer carries on either listener,
    /// whatever the client asks for (Kafka's broker-side fetch.max.bytes);
    /// at least one record or batch always goes out [default: 8388608].
    #[arg(long, value_name = "BYTES")]
    pub fetch_max_bytes: Option<u64>,
    /// Largest Kafka request in bytes; a longer size prefix closes the
    /// connection before anything is allocated [default: 16777216].
    #[arg(long, value_name = "BYTES")]
    pub kafka_max_request_bytes: Option<usize>,
    /// Data directory, created if missing [default: ./data].
    #[arg(long, value_name = "PATH")]
    pub data_dir: Option<PathBuf>,
    /// Broker ids hosted by this process, comma separated, e.g. 1,2,3
    /// [default: 1].
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub brokers: Option<Vec<i32>>,
    /// min.insync.replicas for acks=all [default: 1].
    #[arg(long, value_name = "N")]
    pub min_insync_replicas: Option<usize>,
    /// Enable lab operations (promote, replicate_once, ...) and pause the
    /// background drivers so every step is explicit.
    #[arg(long)]
    pub lab: bool,
    /// A TOML file with any of these settings (flag names with `_`, e.g.
    /// `min_insync_replicas = 2`); flags given on the command line win.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Segment size in bytes before a new segment is rolled [default: 67108864, 64 MiB].
    #[arg(long, value_name = "BYTES")]
    pub segment_bytes: Option<u64>,
    /// Bytes between sparse index entries of a partition's log, the
    /// default of a topic's index.interval.bytes (Kafka's
    /// log.index.interval.bytes; a topic may set 0, an entry for every
    /// batch) [default: 4096].
    #[arg(long, value_name = "BYTES")]
    pub index_interval_bytes: Option<u64>,
    /// Default retention.ms of new topics [default: 604800000, 7 days].
    #[arg(long, value_name = "MS")]
    pub retention_ms: Option<i64>,
    /// Default retention.bytes per partition of new topics [default: unlimited].
    #[arg(long, value_name = "BYTES")]
    pub retention_bytes: Option<i64>,
    /// Default cleanup.policy of new topics: delete, compact or compact,delete [default: delete].
    #[arg(long, value_name = "POLICY")]
    pub cleanup_policy: Option<String>,
    /// Default delete.retention.ms (tombstone grace) [default: 86400000].
    #[arg(long, value_name = "MS")]
    pub delete_retention_ms: Option<i64>,
    /// How often the log cleaner looks for compacted partitions due for
    /// cleaning (Kafka's log.cleaner.backoff.ms) [default: 15000].
    #[arg(long, value_name = "MS")]
    pub log_cleaner_backoff_ms: Option<u64>,
    /// Flush policy: fsync a partition after this many messages [default: off].
    #[arg(long, value_name = "N")]
    pub flush_messages: Option<u64>,
    /// Flush policy: fsync a partition when this long has passed since its
    /// last fsync [default: off; flush cycles run every second].
    #[arg(long, value_name = "MS")]
    pub flush_interval_ms: Option<i64>,
    /// Session timeout of JSON-TCP group members (Kafka clients send their own) [default: 10000].
    #[arg(long, value_name = "MS")]
    pub group_session_timeout_ms: Option<i64>,
    /// How long the first rebalance of a new classic group waits for more members; each member joining meanwhile extends it, up to the rebalance timeout (Kafka's group.initial.rebalance.delay.ms) [default: 3000].
    #[arg(long, value_name = "MS")]
    pub group_initial_rebalance_delay_ms: Option<i64>,
    /// A group without members keeps its committed offsets this long after its last commit or member (Kafka's offsets.retention.minutes) [default: 10080, 7 days].
    #[arg(long, value_name = "MIN")]
    pub offsets_retention_minutes: Option<i64>,
    /// JSON-TCP and in-process transactions older than this are aborted (Kafka producers use their own transaction.timeout.ms) [default: 60000].
    #[arg(long, value_name = "MS")]
    pub transaction_timeout_ms: Option<i64>,
    /// Longest JSON-TCP request line in bytes, including the newline [default: 1048576].
    #[arg(long, value_name = "BYTES")]
    pub max_frame_bytes: Option<usize>,
    /// Connections served at once [default: 1024].
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Close connections that send no request for this long [default: 600000].
    #[arg(long, value_name = "MS")]
    pub idle_timeout_ms: Option<u64>,
    /// Pipelined JSON-TCP requests per connection answered but not yet written (Kafka listeners: 64)
    /// [default: 128].
    #[arg(long, value_name = "N")]
    pub max_in_flight: Option<usize>,
    /// Drop a client that accepts no response bytes for this long
    /// [default: 30000].
    #[arg(long, value_name = "MS")]
    pub write_timeout_ms: Option<u64>,
    /// Log filter when RUST_LOG is not set, e.g. info or mk_cluster=debug
    /// [default: info].
    #[arg(long, value_name = "FILTER")]
    pub log_level: Option<String>,
    /// While the disk is full the broker keeps serving reads; if it stays
    /// full this long, the broker exits with code 4 so a supervisor notices
    /// (0 = never exit for a full disk) [default: 300000].
    #[arg(long, value_name = "MS")]
    pub disk_full_exit_after_ms: Option<u64>,
    /// Serve Prometheus metrics on http://ADDR/metrics (docs/metrics.md)
    /// and the probes /healthz and /readyz [default: off].
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// Serve the web console on http://ADDR/, or `off`. It has no
    /// authentication: keep it on a loopback address [default:
    /// 127.0.0.1:9080].
    #[arg(long, value_name = "ADDR|off")]
    pub console_listen: Option<String>,
}

/// The same settings as a TOML file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    listen: Option<String>,
    kafka_listen: Option<String>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    tls_client_ca: Option<PathBuf>,
    sasl_mechanisms: Option<String>,
    sasl_plain_users: Option<PathBuf>,
    authorizer: Option<String>,
    super_users: Option<String>,
    allow_everyone_if_no_acl_found: Option<bool>,
    kafka_advertised_host: Option<String>,
    auto_create_topics: Option<bool>,
    num_partitions: Option<u32>,
    kafka_max_request_bytes: Option<usize>,
    fetch_max_bytes: Option<u64>,
    data_dir: Option<PathBuf>,
    brokers: Option<Vec<i32>>,
    min_insync_replicas: Option<usize>,
    lab: Option<bool>,
    segment_bytes: Option<u64>,
    index_interval_bytes: Option<u64>,
    retention_ms: Option<i64>,
    retention_bytes: Option<i64>,
    cleanup_policy: Option<String>,
    delete_retention_ms: Option<i64>,
    log_cleaner_backoff_ms: Option<u64>,
    flush_messages: Option<u64>,
    flush_interval_ms: Option<i64>,
    group_session_timeout_ms: Option<i64>,
    group_initial_rebalance_delay_ms: Option<i64>,
    offsets_retention_minutes: Option<i64>,
    transaction_timeout_ms: Option<i64>,
    max_frame_bytes: Option<usize>,
    max_connections: Option<usize>,
    idle_timeout_ms: Option<u64>,
    max_in_flight: Option<usize>,
    write_timeout_ms: Option<u64>,
    log_level: Option<String>,
    disk_full_exit_after_ms: Option<u64>,
    metrics_listen: Option<String>,
    console_listen: Option<String>,
}

/// Everything the serve command needs, resolved.
#[derive(Debug, Clone)]
pub struct Settings {
    pub listen: String,
    /// `None` when the Kafka protocol is off; otherwise at least one
    /// listener, the first one's addresses on the startup line's Kafka part.
    pub kafka_listen: Option<Vec<ListenerSpec>>,
    pub kafka: KafkaOptions,
    pub cluster: MiniKafkaConfig,
    pub server: ServerOptions,
    pub log_level: String,
    /// `None` never exits for a full disk (see `supervise.rs`).
    pub disk_full_exit_after: Option<Duration>,
    /// `None` when the metrics endpoint is off.
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// `None` when the console is off.
    pub console_listen: Option<std::net::SocketAddr>,
    /// How often the background drivers run (unless in lab mode).
    pub drivers: DriverConfig,
}

/// A flag when given, else the config file's value.
macro_rules! pick {
    ($args:expr, $file:expr, $field:ident) => {
        $args.$field.clone().or($file.$field.clone())
    };
}

impl ServeArgs {
    /// Merges flags over the config file over the defaults and validates
    /// the result.
    pub fn resolve(&self) -> Result<Settings, String> {
        let file = self.file_settings()?;
        let cluster = self.cluster_config(&file)?;
        let server = self.server_options(&file)?;
        let kafka_listen = self.kafka_listeners(&file)?;
        let kafka = self.kafka_options(&file, &server, kafka_listen.as_deref())?;
        let metrics_listen = match pick!(self, file, metrics_listen) {
            None => None,
            Some(a) => Some(
                a.parse()
                    .map_err(|e| format!("--metrics-listen must be IP:PORT, got {a:?}: {e}"))?,
            ),
        };
        let console_listen = console_listen(pick!(self, file, console_listen).as_deref())?;
        let listen = pick!(self, file, listen).unwrap_or_else(|| "127.0.0.1:9192".to_string());
        let secured = kafka_listen
            .iter()
            .flatten()
            .find(|l| l.protocol != SecurityProtocol::Plaintext);
        let because = match (secured, &cluster.authorizer) {
            (Some(secured), _) => Some(format!("the {secured} listener")),
            (None, Some(_)) => Some("--authorizer acl".to_string()),
            (None, None) => None,
        };
        if let Some(because) = because {
            loopback_only(&because, &listen, metrics_listen, console_listen)?;
        }
        let mut drivers = DriverConfig::default();
        if let Some(ms) = pick!(self, file, log_cleaner_backoff_ms) {
            if ms == 0 {
                return Err("--log-cleaner-backoff-ms must be > 0".to_string());
            }
            drivers.cleaner_backoff = Duration::from_millis(ms);
        }
        Ok(Settings {
            drivers,
            metrics_listen,
            console_listen,
            listen,
            kafka_listen,
            kafka,
            cluster,
            server,
            log_level: pick!(self, file, log_level).unwrap_or_else(|| "info".to_string()),
            disk_full_exit_after: match pick!(self, file, disk_full_exit_after_ms)
                .unwrap_or(300_000)
            {
                0 => None,
                ms => Some(Duration::from_millis(ms)),
            },
        })
    }

    /// The `--config` file, or every setting unset without one.
    fn file_settings(&self) -> Result<FileSettings, String> {
        match &self.config {
            None => Ok(FileSettings::default()),
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
                toml::from_str(&text)
                    .map_err(|e| format!("invalid config file {}: {e}", path.display()))
            }
        }
    }

    /// The core's configuration: storage, groups, transactions, topic
    /// defaults and the authorizer, validated by the core.
    fn cluster_config(&self, file: &FileSettings) -> Result<MiniKafkaConfig, String> {
        let data_dir = pick!(self, file, data_dir).unwrap_or_else(|| PathBuf::from("./data"));
        let mut cluster = MiniKafkaConfig::new(data_dir);
        if let Some(b) = pick!(self, file, brokers) {
            cluster.broker_ids = b;
        }
        if let Some(n) = pick!(self, file, min_insync_replicas) {
            cluster.min_insync_replicas = n;
        }
        let segment_bytes = pick!(self, file, segment_bytes).unwrap_or(DEFAULT_SEGMENT_BYTES);
        if segment_bytes < mk_cluster::MIN_SEGMENT_BYTES {
            return Err(format!(
                "segment_bytes must be >= {}, got {segment_bytes}",
                mk_cluster::MIN_SEGMENT_BYTES
            ));
        }
        cluster.segment_max_bytes = segment_bytes;
        if let Some(bytes) = pick!(self, file, index_interval_bytes) {
            cluster.index_interval_bytes = bytes;
        }
        if let Some(b) = pick!(self, file, auto_create_topics) {
            cluster.auto_create_topics = b;
        }
        if let Some(n) = pick!(self, file, num_partitions) {
            cluster.auto_create_partitions = n;
        }
        if let Some(n) = pick!(self, file, fetch_max_bytes) {
            cluster.fetch_max_bytes = n;
        }
        if let Some(ms) = pick!(self, file, group_session_timeout_ms) {
            cluster.group_session_timeout_ms = ms;
        }
        cluster.group_initial_rebalance_delay_ms =
            pick!(self, file, group_initial_rebalance_delay_ms)
                .unwrap_or(DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS);
        if let Some(min) = pick!(self, file, offsets_retention_minutes) {
            // Out of range either way: the cluster's check says so.
            cluster.offsets_retention_ms = min.checked_mul(60_000).unwrap_or(-1);
        }
        if let Some(ms) = pick!(self, file, transaction_timeout_ms) {
            cluster.transaction_timeout_ms = ms;
        }
        cluster.flush = FlushPolicy {
            messages: pick!(self, file, flush_messages),
            interval_ms: pick!(self, file, flush_interval_ms),
        };
        self.topic_defaults(file, &mut cluster)?;
        cluster.authorizer = authorizer(
            pick!(self, file, authorizer).as_deref(),
            pick!(self, file, super_users).as_deref(),
            pick!(self, file, allow_everyone_if_no_acl_found),
        )?;
        cluster.validate().map_err(|e| e.to_string())?;
        Ok(cluster)
    }

    /// The broker-wide defaults of the topic configs.
    fn topic_defaults(
        &self,
        file: &FileSettings,
        cluster: &mut MiniKafkaConfig,
    ) -> Result<(), String> {
        let topic = &mut cluster.default_topic_config;
        if let Some(ms) = pick!(self, file, retention_ms) {
            topic.retention_ms = Some(ms);
        }
        if let Some(b) = pick!(self, file, retention_bytes) {
            topic.retention_bytes = Some(b);
        }
        if let Some(p) = pick!(self, file, cleanup_policy) {
            topic.cleanup_policy = CleanupPolicy::parse(&p).map_err(|e| e.to_string())?;
        }
        if let Some(ms) = pick!(self, file, delete_retention_ms) {
            topic.delete_retention_ms = ms;
        }
        Ok(())
    }

    /// The JSON-TCP listener's limits (the Kafka listeners share some).
    fn server_options(&self, file: &FileSettings) -> Result<ServerOptions, String> {
        let defaults = ServerOptions::default();
        let server = ServerOptions {
            lab: self.lab || file.lab.unwrap_or(false),
            max_frame_bytes: pick!(self, file, max_frame_bytes).unwrap_or(defaults.max_frame_bytes),
            max_connections: pick!(self, file, max_connections).unwrap_or(defaults.max_connections),
            idle_timeout: pick!(self, file, idle_timeout_ms)
                .map_or(defaults.idle_timeout, Duration::from_millis),
            max_in_flight: pick!(self, file, max_in_flight).unwrap_or(defaults.max_in_flight),
            write_timeout: pick!(self, file, write_timeout_ms)
                .map_or(defaults.write_timeout, Duration::from_millis),
            ..defaults
        };
        if server.max_frame_bytes == 0 || server.max_in_flight == 0 || server.max_connections == 0 {
            return Err(
                "max_frame_bytes, max_in_flight and max_connections must be > 0".to_string(),
            );
        }
        Ok(server)
    }

    /// `--kafka-listen`: `None` for "off", one PLAINTEXT listener on
    /// 127.0.0.1:9092 by default.
    fn kafka_listeners(&self, file: &FileSettings) -> Result<Option<Vec<ListenerSpec>>, String> {
        Ok(match pick!(self, file, kafka_listen).as_deref() {
            Some("off") => None,
            Some(a) => Some(
                mk_adapter_kafka::parse_listeners(a).map_err(|e| format!("--kafka-listen: {e}"))?,
            ),
            None => Some(vec![ListenerSpec {
                protocol: SecurityProtocol::Plaintext,
                addr: std::net::SocketAddr::from(([127, 0, 0, 1], 9092)),
            }]),
        })
    }

    /// The Kafka listeners' options: TLS, SASL and request limits.
    fn kafka_options(
        &self,
        file: &FileSettings,
        server: &ServerOptions,
        kafka_listen: Option<&[ListenerSpec]>,
    ) -> Result<KafkaOptions, String> {
        let tls_files = tls_files(
            pick!(self, file, tls_cert),
            pick!(self, file, tls_key),
            pick!(self, file, tls_client_ca),
            kafka_listen.unwrap_or_default(),
        )?;
        let sasl = sasl_options(
            pick!(self, file, sasl_mechanisms),
            pick!(self, file, sasl_plain_users),
        )?;
        let kafka_defaults = KafkaOptions::default();
        let kafka = KafkaOptions {
            sasl,
            tls: match &tls_files {
                None => None,
                Some(files) => Some(mk_adapter_kafka::tls::server_config(files)?),
            },
            max_request_bytes: pick!(self, file, kafka_max_request_bytes)
                .unwrap_or(kafka_defaults.max_request_bytes),
            advertised_host: pick!(self, file, kafka_advertised_host),
            max_connections: server.max_connections,
            idle_timeout: server.idle_timeout,
            write_timeout: server.write_timeout,
            ..kafka_defaults
        };
        if kafka.max_request_bytes < 1024 {
            return Err(format!(
                "kafka_max_request_bytes must be >= 1024, got {}",
                kafka.max_request_bytes
            ));
        }
        Ok(kafka)
    }
}

/// `--authorizer`, `--super-users` and `--allow-everyone-if-no-acl-found`:
/// the core's authorizer configuration, `None` when it is off. The other
/// two flags without `--authorizer acl` are refused rather than ignored.
fn authorizer(
    kind: Option<&str>,
    super_users: Option<&str>,
    allow_everyone: Option<bool>,
) -> Result<Option<mk_cluster::AuthorizerConfig>, String> {
    match kind.unwrap_or("off") {
        "acl" => Ok(Some(mk_cluster::AuthorizerConfig {
            super_users: match super_users {
                None => Default::default(),
                Some(s) => mk_cluster::AuthorizerConfig::parse_super_users(s)
                    .map_err(|e| format!("--super-users {s:?}: {e}"))?,
            },
            allow_everyone_if_no_acl_found: allow_everyone.unwrap_or(false),
        })),
        "off" if super_users.is_some() || allow_everyone.is_some() => Err(
            "--super-users and --allow-everyone-if-no-acl-found need --authorizer acl".to_string(),
        ),
        "off" => Ok(None),
        other => Err(format!("--authorizer must be acl or off, got {other:?}")),
    }
}

/// `--sasl-mechanisms` and `--sasl-plain-users` (read at start; the file
/// holds passwords, so only its path is ever printed).
fn sasl_options(
    mechanisms: Option<String>,
    plain_users: Option<PathBuf>,
) -> Result<mk_adapter_kafka::api::sasl::SaslOptions, String> {
    let mut sasl = mk_adapter_kafka::api::sasl::SaslOptions::default();
    if let Some(m) = mechanisms {
        sasl.mechanisms = mk_cluster::parse_mechanisms(&m)
            .map_err(|e| format!("--sasl-mechanisms {m:?}: {e}"))?;
    }
    if let Some(path) = plain_users {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("--sasl-plain-users {}: {e}", path.display()))?;
        let users = mk_cluster::PlainUsers::parse(&text)
            .map_err(|e| format!("--sasl-plain-users {}: {e}", path.display()))?;
        sasl.plain_users = Some(std::sync::Arc::new(users));
    }
    Ok(sasl)
}

/// The TLS files, required exactly when a listener uses TLS.
fn tls_files(
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    client_ca: Option<PathBuf>,
    listeners: &[ListenerSpec],
) -> Result<Option<TlsFiles>, String> {
    let tls = listeners.iter().find(|l| l.protocol.uses_tls());
    match (tls, cert, key) {
        (Some(_), Some(cert), Some(key)) => Ok(Some(TlsFiles {
            cert,
            key,
            client_ca,
        })),
        (Some(l), _, _) => Err(format!(
            "the {l} listener needs --tls-cert and --tls-key"
        )),
        (None, None, None) if client_ca.is_none() => Ok(None),
        (None, ..) => Err(
            "--tls-cert, --tls-key and --tls-client-ca need an SSL or SASL_SSL listener in --kafka-listen"
                .to_string(),
        ),
    }
}

/// The loopback rule (spec 09): JSON-TCP, metrics and the console have no
/// authentication, so beside a secured Kafka listener (or the authorizer)
/// they may only listen on loopback, or the broker would hand everyone
/// what the Kafka side protects.
fn loopback_only(
    because: &str,
    listen: &str,
    metrics: Option<std::net::SocketAddr>,
    console: Option<std::net::SocketAddr>,
) -> Result<(), String> {
    let json_loopback = match listen.parse::<std::net::SocketAddr>() {
        Ok(a) => a.ip().is_loopback(),
        Err(_) => listen
            .rsplit_once(':')
            .is_some_and(|(host, _)| host.eq_ignore_ascii_case("localhost")),
    };
    let beyond = [
        (!json_loopback).then(|| ("--listen", listen.to_string(), "JSON-TCP")),
        metrics
            .filter(|a| !a.ip().is_loopback())
            .map(|a| ("--metrics-listen", a.to_string(), "the metrics endpoint")),
        console
            .filter(|a| !a.ip().is_loopback())
            .map(|a| ("--console-listen", a.to_string(), "the console")),
    ];
    match beyond.into_iter().flatten().next() {
        None => Ok(()),
        Some((flag, addr, what)) => Err(format!(
            "{flag} {addr} is not a loopback address: {what} has no authentication, \
             so beside {because} it must listen on 127.0.0.1 or ::1 (or be off)"
        )),
    }
}

/// `--console-listen`: an address, `off`, or the loopback default.
fn console_listen(flag: Option<&str>) -> Result<Option<std::net::SocketAddr>, String> {
    match flag {
        Some("off") => Ok(None),
        Some(a) => a
            .parse()
            .map(Some)
            .map_err(|e| format!("--console-listen must be IP:PORT or off, got {a:?}: {e}")),
        None => Ok(Some(std::net::SocketAddr::from(([127, 0, 0, 1], 9080)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serve arguments that name the config file `mk.toml` holding
    /// `contents`; the file lives as long as the returned directory.
    fn args_with_file(contents: &str) -> (tempfile::TempDir, ServeArgs) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mk.toml");
        std::fs::write(&file, contents).unwrap();
        let args = ServeArgs {
            config: Some(file),
            ..ServeArgs::default()
        };
        (dir, args)
    }

    /// The default serve arguments changed by `set` are refused with a
    /// message that contains `names`.
    fn assert_refused(set: impl FnOnce(&mut ServeArgs), names: &str) {
        let mut args = ServeArgs::default();
        set(&mut args);
        let err = args.resolve().unwrap_err();
        assert!(err.contains(names), "expected {names:?} in: {err}");
    }

    #[test]
    fn the_console_listens_on_loopback_unless_told_otherwise() {
        let defaults = ServeArgs::default().resolve().unwrap();
        assert_eq!(
            defaults.console_listen,
            Some("127.0.0.1:9080".parse().unwrap())
        );
        let off = ServeArgs {
            console_listen: Some("off".into()),
            ..ServeArgs::default()
        };
        assert_eq!(off.resolve().unwrap().console_listen, None);
        let (_dir, from_file) = args_with_file("console_listen = \"127.0.0.1:9999\"\n");
        assert_eq!(
            from_file.resolve().unwrap().console_listen,
            Some("127.0.0.1:9999".parse().unwrap())
        );
    }

    #[test]
    fn flags_win_over_the_file_and_the_file_over_defaults() {
        let (_dir, from_file) = args_with_file(
            "brokers = [1, 2, 3]\nmin_insync_replicas = 2\nlisten = \"127.0.0.1:9999\"\nmax_frame_bytes = 4096\n",
        );
        let args = ServeArgs {
            listen: Some("127.0.0.1:7000".into()),
            ..from_file
        };
        let s = args.resolve().unwrap();
        assert_eq!(s.listen, "127.0.0.1:7000");
        assert_eq!(s.cluster.broker_ids, vec![1, 2, 3]);
        assert_eq!(s.cluster.min_insync_replicas, 2);
        assert_eq!(s.server.max_frame_bytes, 4096);
        assert_eq!(s.cluster.data_dir, PathBuf::from("./data"));
        assert!(!s.server.lab);
    }

    #[test]
    fn the_index_interval_is_the_topics_default() {
        let defaults = ServeArgs::default().resolve().unwrap();
        assert_eq!(defaults.cluster.index_interval_bytes, 4_096);
        let (_dir, from_file) = args_with_file("index_interval_bytes = 1\n");
        assert_eq!(from_file.resolve().unwrap().cluster.index_interval_bytes, 1);
        assert_refused(
            |a| a.index_interval_bytes = Some(0),
            "index_interval_bytes must be > 0",
        );
    }

    #[test]
    fn the_cleaner_backoff_sets_how_often_compaction_runs() {
        let defaults = ServeArgs::default().resolve().unwrap();
        assert_eq!(defaults.drivers.cleaner_backoff, Duration::from_secs(15));
        let (_dir, from_file) = args_with_file("log_cleaner_backoff_ms = 250\n");
        let s = from_file.resolve().unwrap();
        assert_eq!(s.drivers.cleaner_backoff, Duration::from_millis(250));
        assert_refused(|a| a.log_cleaner_backoff_ms = Some(0), "must be > 0");
    }

    #[test]
    fn the_authorizer_flags_reach_the_core_config() {
        assert_eq!(
            ServeArgs::default().resolve().unwrap().cluster.authorizer,
            None
        );
        let on = ServeArgs {
            authorizer: Some("acl".into()),
            super_users: Some("User:admin; User:ops".into()),
            ..ServeArgs::default()
        };
        let config = on.resolve().unwrap().cluster.authorizer.unwrap();
        assert!(
            config.super_users.contains("User:admin") && config.super_users.contains("User:ops")
        );
        assert!(!config.allow_everyone_if_no_acl_found);
        let (_dir, from_file) =
            args_with_file("authorizer = \"acl\"\nallow_everyone_if_no_acl_found = true\n");
        let config = from_file.resolve().unwrap().cluster.authorizer.unwrap();
        assert!(config.allow_everyone_if_no_acl_found && config.super_users.is_empty());
        assert_refused(|a| a.authorizer = Some("simple".into()), "--authorizer");
        assert_refused(
            |a| a.super_users = Some("User:a".into()),
            "--authorizer acl",
        );
        let acl = |a: &mut ServeArgs| a.authorizer = Some("acl".into());
        assert_refused(
            |a| {
                acl(a);
                a.super_users = Some("admin".into());
            },
            "--super-users",
        );
        assert_refused(
            |a| {
                acl(a);
                a.listen = Some("0.0.0.0:0".into());
            },
            "--authorizer acl",
        );
    }

    #[test]
    fn tls_files_go_with_tls_listeners() {
        assert_refused(
            |a| a.kafka_listen = Some("PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0".into()),
            "--tls-cert",
        );
        assert_refused(|a| a.tls_cert = Some("c.pem".into()), "SSL or SASL_SSL");
        let bare = ServeArgs {
            kafka_listen: Some("127.0.0.1:9999".into()),
            ..ServeArgs::default()
        };
        let listeners = bare.resolve().unwrap().kafka_listen.unwrap();
        assert_eq!(listeners[0].to_string(), "PLAINTEXT://127.0.0.1:9999");
        assert!(bare.resolve().unwrap().kafka.tls.is_none());
    }

    #[test]
    fn unknown_file_keys_and_invalid_values_are_refused() {
        let (_dir, args) = args_with_file("listen_on = \"x\"\n");
        assert!(args.resolve().unwrap_err().contains("unknown field"));
        assert_refused(|a| a.min_insync_replicas = Some(0), "min_insync_replicas");
        assert_refused(|a| a.cleanup_policy = Some("both".into()), "cleanup.policy");
        assert_refused(
            |a| a.segment_bytes = Some(10),
            "segment_bytes must be >= 1024",
        );
        assert_refused(
            |a| a.metrics_listen = Some("nowhere".into()),
            "--metrics-listen",
        );
        let args = ServeArgs {
            metrics_listen: Some("127.0.0.1:9464".into()),
            ..ServeArgs::default()
        };
        assert_eq!(
            args.resolve().unwrap().metrics_listen,
            Some("127.0.0.1:9464".parse().unwrap())
        );
    }
}
