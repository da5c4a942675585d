//! `mk-kafka-load`: drives a Kafka-protocol broker with librdkafka, the
//! client library most Kafka users run (kcat, confluent-kafka, ...), so the
//! Kafka benchmark measures the broker the way real clients load it, with
//! librdkafka's own batching, and a load generator cheaper per record than
//! kcat's line reading and printing.
//!
//! Usage:
//!   mk-kafka-load produce BROKERS TOPIC RECORDS SIZE ACKS [KEY=VALUE ...]
//!   mk-kafka-load consume BROKERS TOPIC RECORDS [KEY=VALUE ...]
//! Prints one JSON object: {"records": N, "secs": S}. The topic's partition
//! 0 is written and read. Trailing `KEY=VALUE` pairs are librdkafka
//! settings applied after the defaults here (the request-rate benchmark
//! uses them to send one record per request, the codec figures to set
//! `compression.type`); `mk.values=json` makes the producer send small
//! JSON events, different in every record, instead of SIZE-byte values.

use rdkafka::ClientConfig;
use rdkafka::Offset;
use rdkafka::TopicPartitionList;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

struct Counting {
    failed: Arc<AtomicU64>,
}

impl rdkafka::ClientContext for Counting {}

impl rdkafka::producer::ProducerContext for Counting {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &rdkafka::message::DeliveryResult<'_>, _: ()) {
        if result.is_err() {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The librdkafka settings given as trailing `KEY=VALUE` arguments; keys
/// starting with `mk.` are this tool's own and are left out.
fn overrides(config: &mut ClientConfig, pairs: &[String]) -> Result<(), String> {
    for pair in pairs {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("{pair:?} is not KEY=VALUE"))?;
        if !key.starts_with("mk.") {
            config.set(key, value);
        }
    }
    Ok(())
}

/// Record `i` of the `mk.values=json` workload: a small JSON event (about
/// 130 B) whose fields repeat across records the way application events
/// do, so it compresses as such data does (SIZE is then ignored).
fn json_value(i: u64) -> Vec<u8> {
    const EVENTS: [&str; 4] = ["click", "view", "add_to_cart", "purchase"];
    let session = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16;
    format!(
        r#"{{"id":{i},"user":"user-{:05}","event":"{}","page":"/products/{}","ts":{},"session":"{session:012x}"}}"#,
        i.wrapping_mul(7919) % 5000,
        EVENTS[(i % 4) as usize],
        i.wrapping_mul(31) % 997,
        1_700_000_000_000u64 + i * 13,
    )
    .into_bytes()
}

fn produce(
    brokers: &str,
    topic: &str,
    records: u64,
    size: usize,
    acks: &str,
    extra: &[String],
) -> Result<f64, String> {
    let failed = Arc::new(AtomicU64::new(0));
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", brokers)
        .set("acks", acks)
        .set(
            "enable.idempotence",
            if acks == "all" { "true" } else { "false" },
        )
        // The local queue holds the run, so the producer never stalls on
        // its own buffer; batching stays librdkafka's default.
        .set("queue.buffering.max.messages", "2000000")
        .set("queue.buffering.max.kbytes", "2097151");
    overrides(&mut config, extra)?;
    let producer: ThreadedProducer<Counting> = config
        .create_with_context(Counting {
            failed: failed.clone(),
        })
        .map_err(|e| format!("producer: {e}"))?;
    let value: Vec<u8> = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
    let json = extra.iter().any(|p| p == "mk.values=json");
    let start = Instant::now();
    for i in 0..records {
        let event;
        let payload: &[u8] = if json {
            event = json_value(i);
            &event
        } else {
            &value
        };
        let mut record = BaseRecord::<(), [u8]>::to(topic)
            .payload(payload)
            .partition(0);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    record = r;
                    std::thread::sleep(Duration::from_micros(100));
                }
                Err((e, _)) => return Err(format!("send: {e}")),
            }
        }
    }
    producer
        .flush(Duration::from_secs(120))
        .map_err(|e| format!("flush: {e}"))?;
    let secs = start.elapsed().as_secs_f64();
    let failed = failed.load(Ordering::Relaxed);
    if failed > 0 {
        return Err(format!("{failed} deliveries failed"));
    }
    Ok(secs)
}

fn consume(brokers: &str, topic: &str, records: u64, extra: &[String]) -> Result<f64, String> {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", brokers)
        .set("group.id", "mk-kafka-load")
        .set("enable.auto.commit", "false");
    overrides(&mut config, extra)?;
    let consumer: BaseConsumer = config.create().map_err(|e| format!("consumer: {e}"))?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)
        .map_err(|e| format!("assign: {e}"))?;
    consumer.assign(&tpl).map_err(|e| format!("assign: {e}"))?;
    let start = Instant::now();
    let mut seen = 0u64;
    let mut next = 0i64;
    let deadline = start + Duration::from_secs(300);
    while seen < records {
        if Instant::now() > deadline {
            return Err(format!("only {seen} of {records} records arrived"));
        }
        match consumer.poll(Duration::from_millis(100)) {
            None => {}
            Some(Err(e)) => return Err(format!("poll: {e}")),
            Some(Ok(m)) => {
                if m.offset() != next {
                    return Err(format!("offset {} arrived, {next} expected", m.offset()));
                }
                next += 1;
                seen += 1;
            }
        }
    }
    Ok(start.elapsed().as_secs_f64())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok());
    let result = match args.first().map(String::as_str) {
        Some("produce") if args.len() >= 6 => match (parsed(3), parsed(4)) {
            (Some(n), Some(size)) => produce(&args[1], &args[2], n, size as usize, &args[5], &args[6..]).map(|s| (n, s)),
            _ => Err("RECORDS and SIZE are numbers".into()),
        },
        Some("consume") if args.len() >= 4 => match parsed(3) {
            Some(n) => consume(&args[1], &args[2], n, &args[4..]).map(|s| (n, s)),
            None => Err("RECORDS is a number".into()),
        },
        _ => Err("usage: mk-kafka-load produce BROKERS TOPIC RECORDS SIZE ACKS [KEY=VALUE ...] | consume BROKERS TOPIC RECORDS [KEY=VALUE ...]".into()),
    };
    match result {
        Ok((records, secs)) => {
            println!("{}", serde_json::json!({"records": records, "secs": secs}));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mk-kafka-load: {e}");
            ExitCode::FAILURE
        }
    }
}
