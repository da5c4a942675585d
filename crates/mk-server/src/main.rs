//! The MiniKafka broker binary. With no subcommand it serves the JSON-TCP
//! protocol over a `BrokerCluster` with the background drivers running; its
//! subcommands are clients of a running broker (topic, produce, consume,
//! group) or run a narrated lab in-process.
//!
//! It must never implement broker semantics itself: serving is
//! `BrokerCluster` + `JsonTcpServer`, and every client subcommand is one or
//! more `JsonTcpClient` calls.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod commands;
mod serve;
mod settings;

use clap::{Parser, Subcommand};
use mk_cluster::{AckMode, Isolation};
use settings::ServeArgs;
use std::process::ExitCode;

/// MiniKafka: a small, single-binary broker with Kafka's data-plane
/// semantics. Without a subcommand, serves the Kafka protocol on
/// 127.0.0.1:9092 and JSON-TCP on 127.0.0.1:9192 with data in ./data.
#[derive(Debug, Parser)]
#[command(name = "mk-server", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(flatten)]
    serve: ServeArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

/// Options shared by the client subcommands.
#[derive(Debug, Clone, clap::Args)]
struct ClientArgs {
    /// Address of a running mk-server.
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:9192",
        global = true
    )]
    server: String,
    /// Print one JSON object per line instead of human-readable text.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve (the default when no subcommand is given).
    Serve(Box<ServeArgs>),
    /// Create, list or describe topics.
    Topic {
        #[command(subcommand)]
        command: TopicCommand,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Produce every line of stdin as one record.
    Produce {
        topic: String,
        /// Partition to write to.
        #[arg(long, default_value_t = 0)]
        partition: u32,
        /// Lines are `key<TAB>value`.
        #[arg(long)]
        keyed: bool,
        /// Acknowledgement: 0, 1, all or -1.
        #[arg(long, default_value = "1")]
        acks: String,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Print records of a topic; --follow keeps waiting for new ones.
    Consume {
        topic: String,
        /// Partition to read (without --group) [default: 0].
        #[arg(long)]
        partition: Option<u32>,
        /// Where to start without a committed offset: earliest, latest or
        /// an offset.
        #[arg(long, default_value = "earliest")]
        from: commands::From,
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
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Describe consumer groups.
    Group {
        #[command(subcommand)]
        command: GroupCommand,
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
    /// Run a narrated lab in-process on a temporary data directory:
    /// leader_failure, rebalance, divergent_tail or exactly_once.
    Lab {
        name: String,
        /// Print the report as one JSON object.
        #[arg(long)]
        json: bool,
    },
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
        /// Topic setting as key=value (cleanup.policy, retention.ms,
        /// retention.bytes, segment.bytes, delete.retention.ms); repeatable.
        #[arg(long = "config", value_name = "KEY=VALUE")]
        config: Vec<String>,
    },
    /// List topics.
    List,
    /// Show a topic's partitions: leader, epoch, replicas, ISR, offsets.
    Describe { name: String },
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
    /// Show a group's state, members, committed offsets and lag.
    Describe { group: String },
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
        Some(other) => {
            init_tracing("warn");
            return match run_client(other).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("mk-server: {e}");
                    ExitCode::FAILURE
                }
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
    serve::run(settings).await
}

async fn run_client(command: Command) -> commands::CmdResult {
    match command {
        Command::Serve(_) => unreachable!("handled by main"),
        Command::Lab { name, json } => commands::lab(&name, json).await,
        Command::Topic { command, client } => {
            let mut c = commands::connect(&client.server).await?;
            match command {
                TopicCommand::Create {
                    name,
                    partitions,
                    replication_factor,
                    config,
                } => {
                    commands::topic_create(
                        &mut c,
                        &name,
                        partitions,
                        replication_factor,
                        &config,
                        client.json,
                    )
                    .await
                }
                TopicCommand::List => commands::topic_list(&mut c, client.json).await,
                TopicCommand::Describe { name } => {
                    commands::topic_describe(&mut c, &name, client.json).await
                }
            }
        }
        Command::Produce {
            topic,
            partition,
            keyed,
            acks,
            client,
        } => {
            let acks = acks.parse::<AckMode>().map_err(|e| e.to_string())?;
            let mut c = commands::connect(&client.server).await?;
            commands::produce(&mut c, &topic, partition, keyed, acks, client.json).await
        }
        Command::Consume {
            topic,
            partition,
            from,
            group,
            follow,
            max_records,
            isolation,
            client,
        } => {
            if group.is_some() && partition.is_some() {
                return Err(
                    "--partition and --group exclude each other: a group assigns partitions".into(),
                );
            }
            let isolation = Isolation::parse(&isolation).map_err(|e| e.to_string())?;
            let mut c = commands::connect(&client.server).await?;
            commands::consume(
                &mut c,
                commands::ConsumeOptions {
                    topic,
                    partition,
                    from,
                    group,
                    follow,
                    max_records,
                    isolation,
                    as_json: client.json,
                },
            )
            .await
        }
        Command::Broker { command, client } => {
            let mut c = commands::connect(&client.server).await?;
            match command {
                BrokerCommand::Offline { broker_id } => {
                    commands::broker_offline(&mut c, broker_id, client.json).await
                }
                BrokerCommand::Online { broker_id } => {
                    commands::broker_online(&mut c, broker_id, client.json).await
                }
            }
        }
        Command::Group { command, client } => {
            let mut c = commands::connect(&client.server).await?;
            match command {
                GroupCommand::Describe { group } => {
                    commands::group_describe(&mut c, &group, client.json).await
                }
            }
        }
    }
}
