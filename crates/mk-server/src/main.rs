//! The MiniKafka broker binary. With no subcommand it serves the Kafka and
//! JSON-TCP protocols over a `BrokerCluster` with the background drivers
//! running; its subcommands are clients of a running broker (topic,
//! produce, consume, group, user, broker, stats), print shell completions, or run
//! a narrated lab in-process.
//!
//! It must never implement broker semantics itself: serving is
//! `BrokerCluster` + `JsonTcpServer` + `KafkaServer`, and every client
//! subcommand is one or more `JsonTcpClient` calls.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod commands;
mod consume;
mod format;
mod group;
mod partition;
mod produce;
mod topic;
mod user;

use clap::{Args, CommandFactory, Parser, Subcommand};
use commands::{CmdError, CmdResult, usage};
use format::{Encoding, Format, Input, Output};
use mk_cluster::{AckMode, Isolation};
use mk_server::ServeArgs;
use std::process::ExitCode;

/// MiniKafka: a small, single-binary broker with Kafka's data-plane
/// semantics. Without a subcommand, serves the Kafka protocol on
/// 127.0.0.1:9092 and JSON-TCP on 127.0.0.1:9192 with data in ./data.
#[derive(Debug, Parser)]
#[command(
    name = "mk-server",
    version = env!("MK_VERSION"),
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(flatten)]
    serve: ServeArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

/// Options shared by the client subcommands.
#[derive(Debug, Clone, clap::Args)]
struct ClientArgs {
    /// Address of a running mk-server's JSON-TCP listener.
    #[arg(
        long,
        value_name = "ADDR",
        env = "MK_SERVER",
        default_value = "127.0.0.1:9192",
        global = true
    )]
    server: String,
    /// Print one JSON object per line instead of human-readable text
    /// (errors too, on stderr).
    #[arg(long, global = true)]
    json: bool,
    /// Give up on a request the server has not answered after this long
    /// (0 waits forever); a long poll's own wait comes on top.
    #[arg(
        long,
        value_name = "MS",
        env = "MK_TIMEOUT_MS",
        default_value_t = 30_000,
        global = true
    )]
    timeout_ms: u64,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve (the default when no subcommand is given).
    Serve(Box<ServeArgs>),
    /// Create, list, describe, alter or delete topics.
    Topic {
        #[command(subcommand)]
        command: TopicCommand,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Produce every line of stdin as one record.
    Produce(ProduceArgs),
    /// Print the records of every partition of one or more topics;
    /// --follow keeps waiting for new ones.
    Consume(ConsumeArgs),
    /// List, describe, delete consumer groups or reset their offsets.
    Group {
        #[command(subcommand)]
        command: GroupCommand,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Add, delete or list the SCRAM users of SASL listeners (their
    /// credentials live in the broker; see docs/security.md).
    User {
        #[command(subcommand)]
        command: UserCommand,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Take a broker out of service or bring it back (works outside lab
    /// mode): its partitions' leadership moves to in-sync replicas, its
    /// Kafka listener stops serving; back online, its replicas catch up.
    Broker {
        #[command(subcommand)]
        command: BrokerCommand,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Move a partition's replicas between the hosted brokers, cancel a
    /// move, or list the moves in progress (Kafka's partition
    /// reassignments; see docs/operations.md).
    Partition {
        #[command(subcommand)]
        command: PartitionCommand,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// The server's counters (the wire `stats` operation).
    Stats {
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Print a shell completion script, e.g. `mk-server completions bash
    /// > /etc/bash_completion.d/mk-server`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Run a narrated lab in-process on a temporary data directory:
    /// leader_failure, rebalance, divergent_tail or exactly_once.
    Lab {
        name: String,
        /// Print the report as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

/// The flags of `produce`.
#[derive(Debug, Args)]
struct ProduceArgs {
    topic: String,
    /// Partition to write to [default: by key (murmur2, as Kafka's
    /// default partitioner), partition 0 for lines without a key].
    #[arg(long)]
    partition: Option<u32>,
    /// Lines are `key<TAB>value` (see --key-delimiter).
    #[arg(long)]
    keyed: bool,
    /// What separates key and value with --keyed.
    #[arg(long, value_name = "STR", default_value = "\t")]
    key_delimiter: String,
    /// Acknowledgement: 0, 1, all or -1.
    #[arg(long, default_value = "1")]
    acks: String,
    /// How keys and values are written in the input lines.
    #[arg(long, value_enum, default_value_t = Encoding::Text)]
    encoding: Encoding,
    /// A key or value equal to this is null: a value is a tombstone.
    #[arg(long, value_name = "STR")]
    null_value: Option<String>,
    /// Report a bad input line (by number) and go on, instead of
    /// stopping at it.
    #[arg(long)]
    skip_bad_lines: bool,
    /// Print a progress line on stderr (always done when stderr is a
    /// terminal).
    #[arg(long)]
    progress: bool,
    #[command(flatten)]
    client: ClientArgs,
}

/// The flags of `consume`.
#[derive(Debug, Args)]
struct ConsumeArgs {
    #[arg(required = true, value_name = "TOPIC")]
    topics: Vec<String>,
    /// Read only this partition (of a single topic).
    #[arg(long, conflicts_with = "group")]
    partition: Option<u32>,
    /// Where to start without a committed offset: earliest, latest, an
    /// offset (past the end: the end) or -N for the last N records of
    /// each partition, as kcat's -o. Also the reset policy for a
    /// position outside the log (Kafka's auto.offset.reset): latest
    /// resets to the end, anything else to the log start.
    #[arg(long, default_value = "earliest", allow_negative_numbers = true)]
    from: String,
    /// Start at the first record at or after this time: milliseconds
    /// since the epoch or a date-time like 2024-05-01T12:00:00Z.
    #[arg(long, value_name = "TIME", conflicts_with = "from")]
    from_time: Option<String>,
    /// Consume as a member of this group, committing as it goes.
    #[arg(long)]
    group: Option<String>,
    /// Keep long-polling for new records until Ctrl-C.
    #[arg(long)]
    follow: bool,
    /// Stop after this many records.
    #[arg(long, value_name = "N")]
    max_records: Option<u64>,
    /// read_uncommitted or read_committed.
    #[arg(long, default_value = "read_uncommitted")]
    isolation: String,
    /// kcat-like output format: %t topic, %p partition, %o offset, %k
    /// key, %K key length, %s value, %S value length, %T timestamp, %h
    /// headers, \n \t escapes (nothing is added at the end).
    #[arg(long, value_name = "FMT")]
    format: Option<String>,
    /// How keys, values and header values are printed.
    #[arg(long, value_enum, default_value_t = Encoding::Text)]
    encoding: Encoding,
    /// What a null key or value prints as [default: the word tombstone
    /// for a value in the default layout, nothing with --format].
    #[arg(long, value_name = "STR")]
    null_value: Option<String>,
    #[command(flatten)]
    client: ClientArgs,
}

#[derive(Debug, Subcommand)]
enum TopicCommand {
    /// Create a topic.
    Create {
        name: String,
        #[arg(long, default_value_t = 1)]
        partitions: u32,
        #[arg(long, default_value_t = 1)]
        replication_factor: usize,
        /// Topic config as key=value, any of Kafka's (e.g.
        /// cleanup.policy=compact, retention.ms=-1 for no limit,
        /// compression.type=zstd, segment.bytes >= 1024); repeatable. A
        /// config the broker refuses creates nothing.
        #[arg(long = "config", value_name = "KEY=VALUE")]
        config: Vec<String>,
    },
    /// List topics with their partition counts, replication factors and
    /// unhealthy partitions, then a summary.
    List,
    /// Show a topic's settings and partitions (every topic without a
    /// name): leader, epoch, replicas, ISR, offsets and status (ok,
    /// under-replicated, or offline with the reason).
    Describe { name: Option<String> },
    /// Change a topic: grow its partition count, set or reset settings.
    Alter {
        name: String,
        /// The new partition count (it can only grow).
        #[arg(long)]
        partitions: Option<u32>,
        /// Set a setting, e.g. retention.ms=86400000 (-1: forever);
        /// repeatable.
        #[arg(long = "config", value_name = "KEY=VALUE")]
        config: Vec<String>,
        /// Reset a setting to the broker's default; repeatable.
        #[arg(long = "delete-config", value_name = "KEY")]
        delete_config: Vec<String>,
        /// Check the config changes and show the result without applying.
        #[arg(long)]
        validate_only: bool,
    },
    /// Delete a topic, its records and every group's offsets for it.
    Delete { name: String },
}

#[derive(Debug, Subcommand)]
enum UserCommand {
    /// Set a user's SCRAM credential from a password, replacing one it
    /// had. The password is the first line of --password-file or of
    /// stdin (typed twice, unseen, on a terminal); it is never taken from
    /// the command line, where `ps` and the shell history would show it.
    /// The broker salts and hashes it and keeps neither it nor a copy.
    Add {
        name: String,
        /// SCRAM-SHA-256 or SCRAM-SHA-512; repeatable for both.
        #[arg(long, value_name = "MECHANISM", default_value = "SCRAM-SHA-512",
              value_parser = user::parse_mechanism)]
        mechanism: Vec<mk_cluster::ScramMechanism>,
        /// PBKDF2 iterations, 4096 to 16384 [default: 4096, Kafka's].
        #[arg(long, value_name = "N")]
        iterations: Option<u32>,
        /// Read the password from the first line of this file (keep it
        /// readable by you only) instead of stdin.
        #[arg(long, value_name = "FILE")]
        password_file: Option<std::path::PathBuf>,
    },
    /// Delete a user's credential for one mechanism, or all of them.
    Delete {
        name: String,
        /// Only this mechanism [default: every credential of the user].
        #[arg(long, value_name = "MECHANISM", value_parser = user::parse_mechanism)]
        mechanism: Option<mk_cluster::ScramMechanism>,
    },
    /// List the SCRAM users with their mechanisms and iteration counts
    /// (never a salt or a key).
    List,
}

#[derive(Debug, Subcommand)]
enum PartitionCommand {
    /// Move a partition to --replicas (the first is its preferred
    /// leader): the new replicas copy the data as followers and the move
    /// completes by itself once they are in sync; a removed leader hands
    /// over. With --cancel, go back to the original replicas.
    Reassign {
        #[arg(long)]
        topic: String,
        #[arg(long)]
        partition: u32,
        /// The target broker ids, e.g. 1,2,3.
        #[arg(long, value_name = "IDS", value_parser = partition::parse_replicas,
              required_unless_present = "cancel", conflicts_with = "cancel")]
        replicas: Option<partition::ReplicaList>,
        /// Cancel the move in progress instead.
        #[arg(long)]
        cancel: bool,
        /// Refuse a target whose size differs from the original replica
        /// count (Kafka's allowReplicationFactorChange=false).
        #[arg(long, conflicts_with = "cancel")]
        keep_replication_factor: bool,
    },
    /// List the moves in progress: the replica set during each move, with
    /// the replicas it adds and removes.
    Reassignments {
        /// Only this topic's partitions.
        #[arg(long)]
        topic: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum BrokerCommand {
    /// Take a broker offline.
    Offline { broker_id: i32 },
    /// Bring an offline broker back.
    Online { broker_id: i32 },
}

#[derive(Debug, Subcommand)]
enum GroupCommand {
    /// List every group with its state.
    List,
    /// Show a group's state, members, committed offsets and lag.
    Describe { group: String },
    /// Delete a group without members and its committed offsets.
    Delete { group: String },
    /// Plan, and with --execute set, a group's committed offsets (the
    /// group must have no members), like kafka-consumer-groups
    /// --reset-offsets.
    ResetOffsets {
        group: String,
        /// To each partition's log start.
        #[arg(long)]
        to_earliest: bool,
        /// To each partition's end.
        #[arg(long)]
        to_latest: bool,
        /// To this offset, clamped into each partition's range.
        #[arg(long, value_name = "N")]
        to_offset: Option<i64>,
        /// To the first record at or after this time (milliseconds or a
        /// date-time like 2024-05-01T12:00:00Z); the end if none.
        #[arg(long, value_name = "TIME")]
        to_datetime: Option<String>,
        /// Only this topic's partitions (all of them); repeatable
        /// [default: every partition the group has an offset for].
        #[arg(long)]
        topic: Vec<String>,
        /// Apply the plan; without it the command only shows it (as
        /// kafka-consumer-groups does).
        #[arg(long)]
        execute: bool,
        /// Show the plan without changing anything (the default; kept for
        /// scripts that say so).
        #[arg(long, conflicts_with = "execute")]
        dry_run: bool,
    },
}

fn init_tracing(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(default_filter))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let serve_args = match cli.command {
        None => cli.serve,
        Some(Command::Serve(args)) => *args,
        Some(Command::Completions { shell }) => {
            // Rendered first, so a closed stdout is an error to handle,
            // not a panic inside the generator.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "mk-server", &mut script);
            return match commands::write_bytes(&script) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => e.report(false),
            };
        }
        Some(other) => {
            init_tracing("warn");
            let as_json = match &other {
                Command::Topic { client, .. }
                | Command::Produce(ProduceArgs { client, .. })
                | Command::Consume(ConsumeArgs { client, .. })
                | Command::Group { client, .. }
                | Command::User { client, .. }
                | Command::Broker { client, .. }
                | Command::Partition { client, .. }
                | Command::Stats { client } => client.json,
                Command::Lab { json, .. } => *json,
                Command::Serve(_) | Command::Completions { .. } => false,
            };
            return match run_client(other).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => e.report(as_json),
            };
        }
    };
    let settings = match serve_args.resolve() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mk-server: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    init_tracing(&settings.log_level);
    mk_server::run(settings).await
}

fn parse_acks(acks: &str) -> Result<AckMode, CmdError> {
    acks.parse::<AckMode>()
        .or_else(|_| usage(format!("--acks must be 0, 1, all or -1, got {acks:?}")))
}

fn parse_isolation(isolation: &str) -> Result<Isolation, CmdError> {
    Isolation::parse(isolation).or_else(|_| {
        usage(format!(
            "--isolation must be read_uncommitted or read_committed, got {isolation:?}"
        ))
    })
}

async fn connect(client: &ClientArgs) -> Result<mk_adapter_jsontcp::JsonTcpClient, CmdError> {
    commands::connect(&client.server, client.timeout_ms).await
}

async fn run_client(command: Command) -> CmdResult {
    match command {
        Command::Serve(_) | Command::Completions { .. } => {
            unreachable!("handled by main")
        }
        Command::Lab { name, json } => commands::lab(&name, json).await,
        Command::Topic { command, client } => run_topic(command, &client).await,
        Command::Produce(args) => run_produce(args).await,
        Command::Consume(args) => run_consume(args).await,
        Command::User { command, client } => run_user(command, &client).await,
        Command::Broker { command, client } => {
            let mut c = connect(&client).await?;
            match command {
                BrokerCommand::Offline { broker_id } => {
                    commands::broker_offline(&mut c, broker_id, client.json).await
                }
                BrokerCommand::Online { broker_id } => {
                    commands::broker_online(&mut c, broker_id, client.json).await
                }
            }
        }
        Command::Partition { command, client } => run_partition(command, &client).await,
        Command::Stats { client } => {
            let mut c = connect(&client).await?;
            commands::stats(&mut c, client.json).await
        }
        Command::Group { command, client } => run_group(command, &client).await,
    }
}

async fn run_topic(command: TopicCommand, client: &ClientArgs) -> CmdResult {
    let mut c = connect(client).await?;
    let json = client.json;
    match command {
        TopicCommand::Create {
            name,
            partitions,
            replication_factor,
            config,
        } => {
            topic::topic_create(&mut c, &name, partitions, replication_factor, &config, json).await
        }
        TopicCommand::List => topic::topic_list(&mut c, json).await,
        TopicCommand::Describe { name } => {
            topic::topic_describe(&mut c, name.as_deref(), json).await
        }
        TopicCommand::Delete { name } => topic::topic_delete(&mut c, &name, json).await,
        TopicCommand::Alter {
            name,
            partitions,
            config,
            delete_config,
            validate_only,
        } => {
            let alter = topic::TopicAlter {
                name: &name,
                partitions,
                set: &config,
                delete: &delete_config,
                validate_only,
            };
            topic::topic_alter(&mut c, alter, json).await
        }
    }
}

async fn run_produce(args: ProduceArgs) -> CmdResult {
    let acks = parse_acks(&args.acks)?;
    if args.keyed && args.key_delimiter.is_empty() {
        return usage("--key-delimiter must not be empty");
    }
    let mut c = connect(&args.client).await?;
    let options = produce::ProduceOptions {
        topic: args.topic,
        partition: args.partition,
        acks,
        input: Input {
            key_delimiter: args.keyed.then(|| args.key_delimiter.into_bytes()),
            encoding: args.encoding,
            null_value: args.null_value.map(String::into_bytes),
        },
        skip_bad_lines: args.skip_bad_lines,
        progress: args.progress,
        as_json: args.client.json,
    };
    produce::produce(&mut c, options).await
}

async fn run_consume(args: ConsumeArgs) -> CmdResult {
    let isolation = parse_isolation(&args.isolation)?;
    let start = match args.from_time {
        Some(t) => consume::Start::Time(
            format::parse_time(&t).or_else(|e| usage(format!("--from-time: {e}")))?,
        ),
        None => args
            .from
            .parse::<consume::Start>()
            .or_else(|e| usage(format!("--from: {e}")))?,
    };
    let format = match args.format {
        None => None,
        Some(f) => Some(f.parse::<Format>().or_else(usage)?),
    };
    let mut c = connect(&args.client).await?;
    let options = consume::ConsumeOptions {
        topics: args.topics,
        partition: args.partition,
        start,
        group: args.group,
        follow: args.follow,
        max_records: args.max_records,
        isolation,
        output: Output {
            format,
            encoding: args.encoding,
            null_value: args.null_value,
            json: args.client.json,
        },
    };
    consume::consume(&mut c, options).await
}

async fn run_group(command: GroupCommand, client: &ClientArgs) -> CmdResult {
    let json = client.json;
    if let GroupCommand::ResetOffsets {
        to_earliest,
        to_latest,
        to_offset,
        to_datetime,
        ..
    } = &command
    {
        // Usage errors before connecting.
        let time = match to_datetime {
            None => None,
            Some(t) => {
                Some(format::parse_time(t).or_else(|e| usage(format!("--to-datetime: {e}")))?)
            }
        };
        group::ResetTo::from_flags(*to_earliest, *to_latest, *to_offset, time)?;
    }
    let mut c = connect(client).await?;
    match command {
        GroupCommand::List => group::group_list(&mut c, json).await,
        GroupCommand::Describe { group } => group::group_describe(&mut c, &group, json).await,
        GroupCommand::Delete { group } => group::group_delete(&mut c, &group, json).await,
        GroupCommand::ResetOffsets {
            group,
            to_earliest,
            to_latest,
            to_offset,
            to_datetime,
            topic,
            execute,
            dry_run: _,
        } => {
            let time = to_datetime
                .map(|t| format::parse_time(&t))
                .transpose()
                .or_else(usage)?;
            let to = group::ResetTo::from_flags(to_earliest, to_latest, to_offset, time)?;
            group::group_reset_offsets(&mut c, &group, to, &topic, !execute, json).await
        }
    }
}

async fn run_partition(command: PartitionCommand, client: &ClientArgs) -> CmdResult {
    let mut c = connect(client).await?;
    match command {
        PartitionCommand::Reassign {
            topic,
            partition,
            replicas,
            cancel: _,
            keep_replication_factor,
        } => {
            let tp = mk_cluster::TopicPartition::new(topic, partition);
            let target = replicas.as_ref().map(|r| r.0.as_slice());
            partition::reassign(&mut c, &tp, target, !keep_replication_factor, client.json).await
        }
        PartitionCommand::Reassignments { topic } => {
            partition::list(&mut c, topic.as_deref(), client.json).await
        }
    }
}

async fn run_user(command: UserCommand, client: &ClientArgs) -> CmdResult {
    let json = client.json;
    match command {
        UserCommand::Add {
            name,
            mechanism,
            iterations,
            password_file,
        } => {
            // The password first: nothing is sent, and no connection is
            // held open, while someone types it.
            let source = match &password_file {
                Some(path) => user::PasswordSource::File(path),
                None => user::PasswordSource::Stdin,
            };
            let password = user::read_password(source)?;
            let mut c = connect(client).await?;
            user::user_add(&mut c, &name, &mechanism, password, iterations, json).await
        }
        UserCommand::Delete { name, mechanism } => {
            let mut c = connect(client).await?;
            user::user_delete(&mut c, &name, mechanism, json).await
        }
        UserCommand::List => {
            let mut c = connect(client).await?;
            user::user_list(&mut c, json).await
        }
    }
}
