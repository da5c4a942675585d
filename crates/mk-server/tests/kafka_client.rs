//! The embedded broker as a user's test uses it: a Kafka client (rskafka,
//! pure Rust) against a broker started in-process or as a child process on
//! free ports with a temporary data directory; restarts keep the addresses
//! and every acknowledged record; dropping the handle stops the broker and
//! removes its data; bad flags and a locked data directory refuse the
//! start with the broker's own message.

use mk_server::embedded::{BrokerBuilder, EmbeddedBroker, StartError};
use rskafka::chrono::Utc;
use rskafka::client::partition::{Compression, PartitionClient, UnknownTopicHandling};
use rskafka::client::{Client, ClientBuilder};
use rskafka::record::Record;
use std::collections::BTreeMap;

const BIN: &str = env!("CARGO_BIN_EXE_mk-server");

fn record(value: &str) -> Record {
    Record {
        key: Some(b"key".to_vec()),
        value: Some(value.as_bytes().to_vec()),
        headers: BTreeMap::new(),
        timestamp: Utc::now(),
    }
}

async fn client(bootstrap: &str) -> Client {
    let brokers = bootstrap.split(',').map(str::to_string).collect();
    ClientBuilder::new(brokers)
        .build()
        .await
        .expect("the client connects")
}

async fn partition(client: &Client, topic: &str) -> PartitionClient {
    client
        .partition_client(topic, 0, UnknownTopicHandling::Retry)
        .await
        .expect("the partition has a leader")
}

/// Every value of partition 0 from offset 0.
async fn values(p: &PartitionClient) -> Vec<String> {
    let (records, high_watermark) = p.fetch_records(0, 1..1_000_000, 1_000).await.unwrap();
    assert_eq!(usize::try_from(high_watermark).unwrap(), records.len());
    records
        .into_iter()
        .map(|r| String::from_utf8(r.record.value.unwrap()).unwrap())
        .collect()
}

#[tokio::test]
async fn a_kafka_client_produces_and_consumes_against_an_embedded_broker_across_a_restart() {
    let mut broker = BrokerBuilder::new()
        .brokers([1, 2, 3])
        .min_insync_replicas(2)
        .start()
        .expect("the broker starts");
    let bootstrap = broker.bootstrap();
    assert_eq!(bootstrap.split(',').count(), 3, "{bootstrap}");
    let c = client(&bootstrap).await;
    c.controller_client()
        .unwrap()
        .create_topic("events", 1, 3, 5_000)
        .await
        .expect("CreateTopics");
    let p = partition(&c, "events").await;
    // rskafka produces with acks=all: three replicas, two in sync needed.
    let offsets = p
        .produce(vec![record("a"), record("b")], Compression::NoCompression)
        .await
        .unwrap();
    assert_eq!(offsets, vec![0, 1]);
    assert_eq!(values(&p).await, ["a", "b"]);
    drop(c);

    broker.restart().expect("the broker restarts");
    assert_eq!(
        broker.bootstrap(),
        bootstrap,
        "same addresses after a restart"
    );
    let c = client(&broker.bootstrap()).await;
    let p = partition(&c, "events").await;
    assert_eq!(values(&p).await, ["a", "b"], "acknowledged records survive");
    let offsets = p
        .produce(vec![record("c")], Compression::NoCompression)
        .await
        .unwrap();
    assert_eq!(offsets, vec![2]);
    broker.stop().expect("a clean shutdown");
}

#[tokio::test]
async fn a_child_process_broker_is_killed_and_recovers_on_the_same_ports() {
    let mut broker = BrokerBuilder::new()
        .brokers([1, 2])
        .spawn(BIN)
        .expect("mk-server starts");
    let ports = broker.listening().kafka_ports();
    assert_eq!(ports.len(), 2);
    assert_eq!(
        ports[1],
        ports[0] + 1,
        "one --kafka-listen, consecutive ports"
    );
    broker.create_topic("crash", 1, 2).unwrap();
    let c = client(&broker.bootstrap()).await;
    let p = partition(&c, "crash").await;
    p.produce(vec![record("kept")], Compression::NoCompression)
        .await
        .unwrap();
    drop(c);
    broker.kill().unwrap();
    broker
        .restart()
        .expect("mk-server restarts after a SIGKILL");
    assert_eq!(broker.listening().kafka_ports(), ports);
    let c = client(&broker.bootstrap()).await;
    assert_eq!(values(&partition(&c, "crash").await).await, ["kept"]);
    let status = broker.terminate().unwrap();
    assert!(status.success(), "SIGTERM is a clean shutdown: {status}");
}

#[test]
fn dropping_a_broker_stops_it_and_removes_a_temporary_data_dir_but_not_a_given_one() {
    let broker = EmbeddedBroker::start().unwrap();
    let (json, data) = (broker.json_addr(), broker.data_dir().to_path_buf());
    let files = std::fs::read_dir(&data).unwrap().count();
    assert!(
        files > 0,
        "the broker keeps its files in {}",
        data.display()
    );
    drop(broker);
    assert!(std::net::TcpStream::connect(json).is_err(), "stopped");
    assert!(!data.exists(), "temporary data removed");

    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join("kept");
    let process = BrokerBuilder::new()
        .data_dir(&kept)
        .kafka_off()
        .spawn(BIN)
        .unwrap();
    assert!(process.listening().kafka.is_empty());
    process.create_topic("stays", 3, 1).unwrap();
    let json = process.json_addr();
    drop(process);
    assert!(std::net::TcpStream::connect(json).is_err(), "stopped");
    // A new broker on the kept directory finds the topic.
    let again = BrokerBuilder::new().data_dir(&kept).start().unwrap();
    let e = again.create_topic("stays", 3, 1).unwrap_err();
    assert!(e.contains("TOPIC_ALREADY_EXISTS"), "{e}");
}

/// The message of a start refused for its flags.
fn invalid_flags(e: &StartError) -> Option<&str> {
    match e {
        StartError::InvalidFlags(m) => Some(m),
        _ => None,
    }
}

/// The message of a start the broker itself refused.
fn refused(e: &StartError) -> Option<&str> {
    match e {
        StartError::Refused(m) => Some(m),
        _ => None,
    }
}

#[test]
fn bad_flags_and_a_locked_data_dir_refuse_the_start_with_the_brokers_message() {
    type Kind = fn(&StartError) -> Option<&str>;
    let first = EmbeddedBroker::start().unwrap();
    // Each start, the kind of refusal it must be, and what its message names.
    let starts: [(Option<StartError>, Kind, &str); 5] = [
        (
            BrokerBuilder::new().arg("--no-such-flag").start().err(),
            invalid_flags,
            "--no-such-flag",
        ),
        (
            BrokerBuilder::new()
                .args(["--brokers=1,2"])
                .spawn(BIN)
                .err(),
            invalid_flags,
            "--brokers is set by the builder: use .brokers()",
        ),
        (
            BrokerBuilder::new().min_insync_replicas(0).start().err(),
            invalid_flags,
            "min_insync_replicas",
        ),
        (
            BrokerBuilder::new()
                .data_dir(first.data_dir())
                .start()
                .err(),
            refused,
            "in use by another process",
        ),
        (
            BrokerBuilder::new()
                .data_dir(first.data_dir())
                .capture_stderr()
                .spawn(BIN)
                .err(),
            refused,
            "in use by another process",
        ),
    ];
    for (started, kind, names) in starts {
        let e = started.unwrap_or_else(|| panic!("a start naming {names:?} was not refused"));
        assert!(kind(&e).is_some_and(|m| m.contains(names)), "{e}");
    }
}
