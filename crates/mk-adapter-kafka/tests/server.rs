//! The Kafka listeners over real sockets: version negotiation, in-order
//! pipelining, acks=0, per-broker leadership, long polls, offline brokers,
//! and hostile input — each bad request closes (only) its own connection or
//! is answered with a typed error, and other clients keep being served.

mod common;

use bytes::Bytes;
use common::*;
use mk_adapter_kafka::api::{key, offsets, versions};
use mk_adapter_kafka::errors::KafkaCode;
use mk_adapter_kafka::messages::api_versions::{ApiVersionsRequest, ApiVersionsResponse};
use mk_adapter_kafka::messages::fetch::{FetchPartition, FetchRequest, FetchResponse, FetchTopic};
use mk_adapter_kafka::messages::list_offsets::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsResponse, ListOffsetsTopic,
};
use mk_adapter_kafka::messages::metadata::{MetadataRequest, MetadataResponse};
use mk_adapter_kafka::messages::produce::ProduceResponse;
use mk_adapter_kafka::mk_cluster::{ProducerInfo, TopicPartition};

fn metadata_all() -> MetadataRequest {
    MetadataRequest {
        topics: None,
        allow_auto_topic_creation: true,
        include_cluster_authorized_operations: false,
        include_topic_authorized_operations: false,
    }
}

fn fetch_req(topic: &str, partition: i32, offset: i64, max_wait_ms: i32) -> FetchRequest {
    FetchRequest {
        max_wait_ms,
        min_bytes: 1,
        max_bytes: 1 << 20,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: vec![FetchPartition {
                partition,
                fetch_offset: offset,
                partition_max_bytes: 1 << 20,
                ..FetchPartition::default()
            }],
            ..FetchTopic::default()
        }],
        ..FetchRequest::default()
    }
}

/// `c` was closed, yet the broker serves a new connection; then it stops.
async fn closed_yet_serving(h: Harness, c: &mut Conn) {
    assert!(c.is_closed().await);
    still_serves(&h).await;
    h.stop().await;
}

/// A working connection still gets answers: the server was not harmed.
async fn still_serves(h: &Harness) {
    let mut c = h.conn(1).await;
    let r = c.api_versions().await;
    assert_eq!(r.error_code, KafkaCode::NONE);
}

#[tokio::test]
async fn api_versions_advertises_the_table_and_answers_newer_versions_with_v0() {
    let h = Harness::one().await;
    let mut c = h.conn(1).await;
    let r = c.api_versions().await;
    assert_eq!(r.api_keys, versions::table());
    // A version above ours: UNSUPPORTED_VERSION and our table, in a v0 body
    // with a v0 header; the connection stays open for the retry.
    let id = c
        .send(key::API_VERSIONS, 9, &ApiVersionsRequest::default())
        .await;
    let r: ApiVersionsResponse = c.recv(key::API_VERSIONS, 0, id).await;
    assert_eq!(r.error_code, KafkaCode::UNSUPPORTED_VERSION);
    assert_eq!(r.api_keys, versions::table());
    let r: ApiVersionsResponse = c
        .call(key::API_VERSIONS, 0, &ApiVersionsRequest::default())
        .await;
    assert_eq!(r.error_code, KafkaCode::NONE);
    h.stop().await;
}

#[tokio::test]
async fn an_unsupported_api_or_version_closes_only_that_connection() {
    let h = Harness::one().await;
    for (api_key, version) in [(1000, 0), (key::METADATA, 99), (key::PRODUCE, 2)] {
        let mut c = h.conn(1).await;
        c.send(api_key, version, &ApiVersionsRequest::default())
            .await;
        assert!(c.is_closed().await, "API {api_key} v{version}");
    }
    still_serves(&h).await;
    h.stop().await;
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    pipelined_requests_answered_in_order("x").await;
}

/// Produce requests larger than one read of the server (64 KiB), each
/// written right behind the one before it: each is taken whole, over
/// several reads, and the next one starts where it ends.
#[tokio::test]
async fn pipelined_requests_larger_than_a_read_are_answered_in_order() {
    pipelined_requests_answered_in_order(&"v".repeat(100 * 1024 + 3)).await;
}

async fn pipelined_requests_answered_in_order(value: &str) {
    let (h, mut c) = Harness::one_with_topic("p", 1).await;
    let mut sent = Vec::new();
    let mut bytes = Vec::new();
    for i in 0..40 {
        let (id, frame) = if i % 2 == 0 {
            let req = values_request("p", 0, 1, &[value]);
            let (id, f) = c.frame(key::PRODUCE, 9, &req);
            (id, f)
        } else {
            c.frame(key::METADATA, 12, &metadata_all())
        };
        sent.push((i, id));
        bytes.extend_from_slice(&frame);
    }
    // Everything goes out in one write before anything is read.
    c.write_raw(&bytes).await;
    for (i, id) in sent {
        if i % 2 == 0 {
            let r: ProduceResponse = c.recv(key::PRODUCE, 9, id).await;
            let p = &r.responses[0].partition_responses[0];
            assert_eq!(p.error_code, KafkaCode::NONE);
            assert_eq!(
                p.base_offset,
                i64::from(i / 2),
                "appends keep request order"
            );
        } else {
            let r: MetadataResponse = c.recv(key::METADATA, 12, id).await;
            assert_eq!(r.topics.len(), 1);
        }
    }
    h.stop().await;
}

#[tokio::test]
async fn acks_zero_gets_no_answer_but_is_written() {
    let (h, mut c) = Harness::one_with_topic("z", 1).await;
    let req = values_request("z", 0, 0, &["a", "b"]);
    c.send(key::PRODUCE, 9, &req).await;
    // The next answer is the metadata's: the produce had none.
    let r: MetadataResponse = c.call(key::METADATA, 12, &metadata_all()).await;
    assert_eq!(r.topics[0].name.as_deref(), Some("z"));
    assert_eq!(
        h.cluster
            .data()
            .log_end_offset(&TopicPartition::new("z", 0))
            .unwrap(),
        2
    );
    h.stop().await;
}

#[tokio::test]
async fn a_broker_that_does_not_lead_answers_not_leader_and_metadata_routes_clients() {
    // Partition 1 of a three-broker topic is led by broker 2.
    let h = Harness::three_with_topic("r", 3).await;
    let mut c = h.conn(1).await;
    let req = values_request("r", 1, 1, &["x"]);
    assert_eq!(
        c.produce_code(9, &req).await,
        KafkaCode::NOT_LEADER_OR_FOLLOWER
    );
    let m: MetadataResponse = c.call(key::METADATA, 12, &metadata_all()).await;
    let brokers: Vec<(i32, i32)> = m.brokers.iter().map(|b| (b.node_id, b.port)).collect();
    assert_eq!(brokers.len(), 3);
    for (id, port) in &brokers {
        assert_eq!(
            *port,
            i32::from(h.addr(*id).port()),
            "each broker at its own listener"
        );
    }
    let p1 = &m.topics[0].partitions[1];
    assert_eq!(p1.leader_id, 2);
    let mut leader = h.conn(2).await;
    assert_eq!(leader.produce_code(9, &req).await, KafkaCode::NONE);
    h.stop().await;
}

#[tokio::test]
async fn an_offline_broker_closes_its_connections_and_leadership_moves() {
    let h = Harness::three_with_topic("f", 1).await;
    let mut on_1 = h.conn(1).await;
    let _: MetadataResponse = on_1.call(key::METADATA, 12, &metadata_all()).await;
    let moved = h.cluster.brokers().take_offline(1).unwrap();
    assert_eq!(moved.len(), 1);
    assert!(
        on_1.is_closed().await,
        "the offline broker's connection is closed"
    );
    let mut refused = h.conn(1).await;
    assert!(
        refused.is_closed().await,
        "new connections to it are refused"
    );
    let mut on_2 = h.conn(2).await;
    let m: MetadataResponse = on_2.call(key::METADATA, 12, &metadata_all()).await;
    assert!(m.brokers.iter().all(|b| b.node_id != 1));
    assert_eq!(m.topics[0].partitions[0].leader_id, 2);
    assert_eq!(m.topics[0].partitions[0].leader_epoch, 1);
    assert_eq!(m.topics[0].partitions[0].offline_replicas, vec![1]);
    h.cluster.brokers().bring_online(1).unwrap();
    let mut back = h.conn(1).await;
    let m: MetadataResponse = back.call(key::METADATA, 12, &metadata_all()).await;
    assert_eq!(m.brokers.len(), 3);
    h.stop().await;
}

#[tokio::test]
async fn a_long_poll_is_woken_by_the_append_that_makes_data_visible() {
    let (h, mut reader) = Harness::one_with_topic("w", 1).await;
    let started = std::time::Instant::now();
    let id = reader
        .send(key::FETCH, 12, &fetch_req("w", 0, 0, 15_000))
        .await;
    let mut writer = h.conn(1).await;
    let req = values_request("w", 0, 1, &["late"]);
    assert_eq!(writer.produce_code(9, &req).await, KafkaCode::NONE);
    let f: FetchResponse = reader.recv(key::FETCH, 12, id).await;
    let p = &f.responses[0].partitions[0];
    assert_eq!(p.high_watermark, 1);
    assert!(
        !p.records.as_ref().unwrap().is_empty(),
        "the record arrived"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(14),
        "answered by the append, not by the 15 s deadline"
    );
    h.stop().await;
}

/// A fetch answer whose stored blocks go out as parts of their own (a
/// vectored write, not one buffer) arrives as one frame holding each batch
/// exactly as produced, only the base offset and leader epoch being the
/// broker's; a pipelined request behind it is answered after it.
#[tokio::test]
async fn stored_blocks_sent_as_parts_arrive_byte_for_byte_as_produced() {
    let h = Harness::one().await;
    h.cluster.topics().create("big", 1, 1).unwrap();
    let mut c = h.conn(1).await;
    let mut produced = Vec::new();
    for i in 0..3u8 {
        let value = String::from(char::from(b'a' + i)).repeat(3_000 + usize::from(i));
        let batch = batch_bytes(value_records(&[&value, "small"]), ProducerInfo::NONE);
        let r: ProduceResponse = c
            .call(
                key::PRODUCE,
                9,
                &produce_request("big", 0, 1, batch.clone()),
            )
            .await;
        assert_eq!(
            r.responses[0].partition_responses[0].error_code,
            KafkaCode::NONE
        );
        produced.push(batch);
    }
    let fetch = c.send(key::FETCH, 12, &fetch_req("big", 0, 0, 0)).await;
    let versions = c
        .send(key::API_VERSIONS, 3, &ApiVersionsRequest::default())
        .await;
    let f: FetchResponse = c.recv(key::FETCH, 12, fetch).await;
    let records = f.responses[0].partitions[0]
        .records
        .as_ref()
        .unwrap()
        .to_bytes();
    let mut at = 0;
    for (i, batch) in produced.iter().enumerate() {
        let got = &records[at..at + batch.len()];
        let base = i64::try_from(2 * i).unwrap();
        assert_eq!(got[..8], base.to_be_bytes(), "batch {i}: its offset");
        assert_eq!(got[8..12], batch[8..12], "batch {i}: its length");
        assert_eq!(
            got[16..],
            batch[16..],
            "batch {i}: CRC, header and block as produced"
        );
        at += batch.len();
    }
    assert_eq!(at, records.len(), "nothing else in the record set");
    let v: ApiVersionsResponse = c.recv(key::API_VERSIONS, 3, versions).await;
    assert_eq!(v.error_code, KafkaCode::NONE);
    h.stop().await;
}

#[tokio::test]
async fn an_offset_out_of_range_and_an_unknown_topic_are_typed_partition_errors() {
    let (h, mut c) = Harness::one_with_topic("o", 1).await;
    let f: FetchResponse = c.call(key::FETCH, 12, &fetch_req("o", 0, 99, 0)).await;
    assert_eq!(
        f.responses[0].partitions[0].error_code,
        KafkaCode::OFFSET_OUT_OF_RANGE
    );
    assert_eq!(f.responses[0].partitions[0].log_start_offset, 0);
    let f: FetchResponse = c.call(key::FETCH, 12, &fetch_req("nope", 0, 0, 0)).await;
    assert_eq!(
        f.responses[0].partitions[0].error_code,
        KafkaCode::UNKNOWN_TOPIC_OR_PARTITION
    );
    let l: ListOffsetsResponse = c
        .call(
            key::LIST_OFFSETS,
            7,
            &ListOffsetsRequest {
                replica_id: -1,
                topics: vec![ListOffsetsTopic {
                    name: "o".into(),
                    partitions: vec![ListOffsetsPartition {
                        partition_index: 5,
                        current_leader_epoch: -1,
                        timestamp: offsets::LATEST_TIMESTAMP,
                    }],
                }],
                ..ListOffsetsRequest::default()
            },
        )
        .await;
    assert_eq!(
        l.topics[0].partitions[0].error_code,
        KafkaCode::UNKNOWN_TOPIC_OR_PARTITION
    );
    h.stop().await;
}

// ----- hostile input -------------------------------------------------------

#[tokio::test]
async fn a_huge_or_negative_size_prefix_closes_the_connection_before_allocating() {
    let h = Harness::one().await;
    for size in [i32::MAX, 0x7fff_0000, -1, i32::MIN, 3] {
        let mut c = h.conn(1).await;
        c.write_raw(&size.to_be_bytes()).await;
        c.write_raw(&[0u8; 64]).await;
        assert!(c.is_closed().await, "size prefix {size}");
    }
    assert!(
        h.server.peak_request_buffer_bytes() < 1 << 20,
        "no buffer was sized from a claimed length: {}",
        h.server.peak_request_buffer_bytes()
    );
    still_serves(&h).await;
    h.stop().await;
}

#[tokio::test]
async fn a_frame_claiming_more_than_it_sends_only_holds_what_arrived() {
    let h = Harness::one().await;
    let mut c = h.conn(1).await;
    // 16 MiB claimed (the limit), a few bytes sent, then the client stops.
    c.write_raw(&(16 * 1024 * 1024i32).to_be_bytes()).await;
    c.write_raw(&[0, 3, 0, 12]).await;
    still_serves(&h).await;
    assert!(h.server.peak_request_buffer_bytes() < 1 << 20);
    drop(c);
    still_serves(&h).await;
    h.stop().await;
}

/// A frame with a valid v12 Metadata header and then `body`.
fn metadata_frame(body: &[u8]) -> Vec<u8> {
    let mut payload = vec![0, 3, 0, 12, 0, 0, 0, 7, 0xff, 0xff, 0];
    payload.extend_from_slice(body);
    framed(&payload)
}

#[tokio::test]
async fn counts_of_two_billion_truncated_bodies_and_garbage_close_the_connection() {
    let h = Harness::one().await;
    let bodies: Vec<Vec<u8>> = vec![
        // A compact array claiming u32::MAX - 1 topics.
        vec![0xff, 0xff, 0xff, 0xff, 0x0f],
        // One topic whose compact name claims 2 GiB.
        vec![
            2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x07,
        ],
        // Truncated in the middle of the topic id.
        vec![2, 1, 2, 3],
        // Garbage after a complete body.
        vec![0, 1, 0, 0, 0xde, 0xad, 0xbe, 0xef],
        // Random bytes.
        (0..200u32).map(|i| (i * 37 % 251) as u8).collect(),
    ];
    for body in &bodies {
        let mut c = h.conn(1).await;
        c.write_raw(&metadata_frame(body)).await;
        assert!(c.is_closed().await, "body {body:?}");
    }
    // A classic (v8) Metadata with an array count of 2^31 - 1.
    let mut c = h.conn(1).await;
    let mut payload = vec![0, 3, 0, 8, 0, 0, 0, 7, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff];
    payload.extend_from_slice(&[0; 16]);
    c.write_raw(&framed(&payload)).await;
    closed_yet_serving(h, &mut c).await;
}

/// confluent-kafka 2.16.1's `AdminClient.list_topics()` sends this v12
/// Metadata request for all topics (bytes captured from the client): the
/// null topic array keeps librdkafka's 4-byte count placeholder (librdkafka
/// issue 5049), so 3 zero bytes precede the real fields. Kafka answers it;
/// so must we. The same shape with other bytes in the pad still closes.
#[tokio::test]
async fn librdkafkas_all_topics_metadata_with_a_stray_count_pad_is_answered() {
    let (h, mut c) = Harness::one_with_topic("listed", 1).await;
    let captured = "0003000c00000003000772646b61666b610000000000010000";
    let payload: Vec<u8> = (0..captured.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&captured[i..i + 2], 16).unwrap())
        .collect();
    c.write_raw(&framed(&payload)).await;
    let r: MetadataResponse = c.recv(key::METADATA, 12, 3).await;
    let names: Vec<_> = r.topics.iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, vec![Some("listed".to_string())]);
    // A pad that is not zeros is garbage.
    let mut c = h.conn(1).await;
    c.write_raw(&metadata_frame(&[0, 0, 7, 0, 1, 0, 0])).await;
    closed_yet_serving(h, &mut c).await;
}

#[tokio::test]
async fn a_corrupt_or_lying_record_batch_is_a_partition_error_and_the_connection_stays() {
    let (h, mut c) = Harness::one_with_topic("c", 1).await;
    let good = batch_bytes(value_records(&["a"]), ProducerInfo::NONE);
    let mut flipped = good.to_vec();
    let last = flipped.len() - 1;
    flipped[last] ^= 0xff;
    let mut counted = good.to_vec();
    counted[57..61].copy_from_slice(&i32::MAX.to_be_bytes());
    let crc = crc32c::crc32c(&counted[21..]);
    counted[17..21].copy_from_slice(&crc.to_be_bytes());
    for (bad, want) in [
        (flipped, KafkaCode::CORRUPT_MESSAGE),
        (counted, KafkaCode::CORRUPT_MESSAGE),
        // All zeroes reads as magic 0, a format this broker does not take.
        (vec![0u8; 70], KafkaCode::UNSUPPORTED_VERSION),
        (good[..30].to_vec(), KafkaCode::CORRUPT_MESSAGE),
    ] {
        let req = produce_request("c", 0, 1, Bytes::from(bad));
        let r: ProduceResponse = c.call(key::PRODUCE, 9, &req).await;
        let p = &r.responses[0].partition_responses[0];
        assert_eq!(p.error_code, want, "{:?}", p.error_message);
        assert!(p.error_message.is_some());
    }
    assert_eq!(
        h.cluster
            .data()
            .log_end_offset(&TopicPartition::new("c", 0))
            .unwrap(),
        0
    );
    let r: ProduceResponse = c
        .call(key::PRODUCE, 9, &produce_request("c", 0, 1, good))
        .await;
    assert_eq!(r.responses[0].partition_responses[0].base_offset, 0);
    h.stop().await;
}
