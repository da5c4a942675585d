//! Transactions v2 (KIP-890 part 2) over the wire, as the Java client 4.x
//! speaks them once ApiVersions finalizes `transaction.version` 2:
//! InitProducerId v5, Produce v12 without AddPartitionsToTxn,
//! TxnOffsetCommit v5 without AddOffsetsToTxn, EndTxn v5 answering the
//! bumped epoch; the old epoch fenced; AddPartitionsToTxn v4's batched and
//! verify-only forms; and the first protocol (v3 and below) unchanged.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

mod common;

use bytes::{Bytes, BytesMut};
use common::*;
use mk_adapter_kafka::api::key;
use mk_adapter_kafka::errors::KafkaCode;
use mk_adapter_kafka::messages::add_partitions_to_txn::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
};
use mk_adapter_kafka::messages::end_txn::{EndTxnRequest, EndTxnResponse};
use mk_adapter_kafka::messages::init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
use mk_adapter_kafka::messages::produce::{ProduceRequest, ProduceResponse};
use mk_adapter_kafka::messages::txn_offset_commit::{
    TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
};
use mk_adapter_kafka::mk_cluster::{
    FetchRequest, Isolation, ProducerInfo, RecordBatch, TopicPartition,
};

const TXN: &str = "tx-v2";

fn txn_batch(pid: i64, epoch: i16, seq: i32, value: &str) -> Bytes {
    let mut batch = RecordBatch::new(value_records(&[value]))
        .unwrap()
        .with_producer(ProducerInfo {
            producer_id: pid,
            producer_epoch: i32::from(epoch),
            base_sequence: seq,
        })
        .with_transactional_id(TXN);
    batch.assign(0, 0).unwrap();
    let mut out = BytesMut::new();
    mk_adapter_kafka::records::encode_batch(&batch, &mut out);
    out.freeze()
}

fn produce(pid: i64, epoch: i16, seq: i32, partition: i32, value: &str) -> ProduceRequest {
    ProduceRequest {
        transactional_id: Some(TXN.into()),
        ..produce_request("out", partition, -1, txn_batch(pid, epoch, seq, value))
    }
}

fn end(pid: i64, epoch: i16, committed: bool) -> EndTxnRequest {
    EndTxnRequest {
        transactional_id: TXN.into(),
        producer_id: pid,
        producer_epoch: epoch,
        committed,
    }
}

fn read_committed(h: &Harness, partition: u32) -> Vec<String> {
    let req = FetchRequest::new(TopicPartition::new("out", partition), 0, i64::MAX)
        .with_isolation(Isolation::ReadCommitted);
    h.cluster
        .data()
        .fetch(&req)
        .unwrap()
        .records
        .into_iter()
        .map(|r| String::from_utf8(r.value.unwrap().to_vec()).unwrap())
        .collect()
}

async fn init(c: &mut Conn) -> (i64, i16) {
    let init = InitProducerIdRequest {
        transactional_id: Some(TXN.into()),
        transaction_timeout_ms: 60_000,
        ..InitProducerIdRequest::default()
    };
    let r: InitProducerIdResponse = c.call(key::INIT_PRODUCER_ID, 5, &init).await;
    assert_eq!(r.error_code, KafkaCode::NONE);
    (r.producer_id, r.producer_epoch)
}

/// One broker with topic "out" of `partitions`, a connection, and the
/// transactional id initialized on it.
async fn started(partitions: u32) -> (Harness, Conn, (i64, i16)) {
    let h = Harness::one().await;
    h.cluster.topics().create("out", partitions, 1).unwrap();
    let mut c = h.conn(1).await;
    let identity = init(&mut c).await;
    (h, c, identity)
}

#[tokio::test]
async fn api_versions_finalizes_transaction_version_2() {
    let h = Harness::one().await;
    let mut c = h.conn(1).await;
    let r = c.api_versions().await;
    let supported = r
        .supported_features
        .iter()
        .find(|f| f.name == "transaction.version")
        .expect("transaction.version is supported");
    assert_eq!((supported.min_version, supported.max_version), (0, 2));
    let finalized = r
        .finalized_features
        .iter()
        .find(|f| f.name == "transaction.version")
        .expect("transaction.version is finalized");
    assert_eq!(finalized.max_version_level, 2);
}

#[tokio::test]
async fn a_v2_producer_commits_and_aborts_without_add_requests_and_every_end_bumps_the_epoch() {
    let h = Harness::one().await;
    h.cluster.topics().create("out", 2, 1).unwrap();
    h.cluster.topics().create("in", 1, 1).unwrap();
    let mut c = h.conn(1).await;
    let (pid, epoch) = init(&mut c).await;
    // The first protocol still needs AddPartitionsToTxn.
    let r: ProduceResponse = c
        .call(key::PRODUCE, 11, &produce(pid, epoch, 0, 0, "v1"))
        .await;
    assert_eq!(produced_code(&r), KafkaCode::TRANSACTION_ABORTABLE);
    // Produce v12 adds the partition; TxnOffsetCommit v5 adds the group.
    let r: ProduceResponse = c
        .call(key::PRODUCE, 12, &produce(pid, epoch, 0, 0, "a"))
        .await;
    assert_eq!(produced_code(&r), KafkaCode::NONE);
    let r: ProduceResponse = c
        .call(key::PRODUCE, 12, &produce(pid, epoch, 0, 1, "b"))
        .await;
    assert_eq!(produced_code(&r), KafkaCode::NONE);
    let offsets = txn_offsets(pid, epoch, 7);
    let r: TxnOffsetCommitResponse = c.call(key::TXN_OFFSET_COMMIT, 5, &offsets).await;
    assert_eq!(r.topics[0].partitions[0].error_code, KafkaCode::NONE);
    // The broker-side verify-only form sees both partitions in the
    // transaction, and a third not.
    let verify = AddPartitionsToTxnRequest {
        transactions: vec![AddPartitionsToTxnTransaction {
            transactional_id: TXN.into(),
            producer_id: pid,
            producer_epoch: epoch,
            verify_only: true,
            topics: vec![AddPartitionsToTxnTopic {
                name: "out".into(),
                partitions: vec![0, 1, 5],
            }],
        }],
        ..AddPartitionsToTxnRequest::default()
    };
    let r: AddPartitionsToTxnResponse = c.call(key::ADD_PARTITIONS_TO_TXN, 5, &verify).await;
    let codes: Vec<KafkaCode> = r.results_by_transaction[0].topic_results[0]
        .results_by_partition
        .iter()
        .map(|p| p.partition_error_code)
        .collect();
    assert_eq!(
        codes,
        vec![
            KafkaCode::NONE,
            KafkaCode::NONE,
            KafkaCode::TRANSACTION_ABORTABLE
        ]
    );
    assert!(read_committed(&h, 0).is_empty());

    let r: EndTxnResponse = c.call(key::END_TXN, 5, &end(pid, epoch, true)).await;
    assert_eq!(r.error_code, KafkaCode::NONE);
    assert_eq!((r.producer_id, r.producer_epoch), (pid, epoch + 1));
    assert_eq!(read_committed(&h, 0), vec!["a"]);
    assert_eq!(read_committed(&h, 1), vec!["b"]);
    let committed = h
        .cluster
        .groups()
        .fetch_committed("g", &TopicPartition::new("in", 0))
        .unwrap();
    assert_eq!(committed, Some(7));
    // A lost answer: the retry with the old epoch gets the same one.
    let r: EndTxnResponse = c.call(key::END_TXN, 5, &end(pid, epoch, true)).await;
    assert_eq!(
        (r.error_code, r.producer_id, r.producer_epoch),
        (KafkaCode::NONE, pid, epoch + 1)
    );
    // A late batch of the old epoch is fenced.
    let r: ProduceResponse = c
        .call(key::PRODUCE, 12, &produce(pid, epoch, 1, 0, "late"))
        .await;
    assert_eq!(produced_code(&r), KafkaCode::INVALID_PRODUCER_EPOCH);
    // The next transaction, sequences from 0 under the new epoch, aborted.
    let next = epoch + 1;
    let r: ProduceResponse = c
        .call(key::PRODUCE, 12, &produce(pid, next, 0, 0, "c"))
        .await;
    assert_eq!(produced_code(&r), KafkaCode::NONE);
    let r: EndTxnResponse = c.call(key::END_TXN, 5, &end(pid, next, false)).await;
    assert_eq!(
        (r.error_code, r.producer_id, r.producer_epoch),
        (KafkaCode::NONE, pid, next + 1)
    );
    assert_eq!(read_committed(&h, 0), vec!["a"]);
    // EndTxn v4 (first protocol) answers no identity and bumps nothing: an
    // abort of the completed abort is a retry of it.
    let r: EndTxnResponse = c.call(key::END_TXN, 4, &end(pid, next + 1, false)).await;
    assert_eq!(r.error_code, KafkaCode::NONE);
    assert_eq!((r.producer_id, r.producer_epoch), (-1, -1));
    let d = h.cluster.transactions().describe(TXN).unwrap().unwrap();
    assert_eq!(d.producer_epoch, i32::from(next + 1));
}

#[tokio::test]
async fn add_partitions_v4_adds_each_transaction_of_a_batch_on_its_own() {
    let (h, mut c, (pid, epoch)) = started(2).await;
    let add = AddPartitionsToTxnRequest {
        transactions: vec![
            AddPartitionsToTxnTransaction {
                transactional_id: TXN.into(),
                producer_id: pid,
                producer_epoch: epoch,
                verify_only: false,
                topics: vec![AddPartitionsToTxnTopic {
                    name: "out".into(),
                    partitions: vec![1],
                }],
            },
            AddPartitionsToTxnTransaction {
                transactional_id: "never-initialized".into(),
                producer_id: 99,
                producer_epoch: 0,
                verify_only: false,
                topics: vec![AddPartitionsToTxnTopic {
                    name: "out".into(),
                    partitions: vec![0],
                }],
            },
        ],
        ..AddPartitionsToTxnRequest::default()
    };
    let r: AddPartitionsToTxnResponse = c.call(key::ADD_PARTITIONS_TO_TXN, 4, &add).await;
    assert_eq!(r.error_code, KafkaCode::NONE);
    let code = |i: usize| {
        r.results_by_transaction[i].topic_results[0].results_by_partition[0].partition_error_code
    };
    assert_eq!(code(0), KafkaCode::NONE);
    assert_eq!(code(1), KafkaCode::INVALID_PRODUCER_ID_MAPPING);
    let d = h.cluster.transactions().describe(TXN).unwrap().unwrap();
    assert_eq!(d.partitions, vec![TopicPartition::new("out", 1)]);
    // A Produce v11 to the added partition is accepted.
    let r: ProduceResponse = c
        .call(key::PRODUCE, 11, &produce(pid, epoch, 0, 1, "x"))
        .await;
    assert_eq!(produced_code(&r), KafkaCode::NONE);
}

/// One producer session over EndTxn v5: the identity it speaks for.
struct V2Producer {
    pid: i64,
    epoch: i16,
}

impl V2Producer {
    async fn produce(&self, c: &mut Conn, seq: i32, value: &str) -> KafkaCode {
        let req = produce(self.pid, self.epoch, seq, 0, value);
        let r: ProduceResponse = c.call(key::PRODUCE, 12, &req).await;
        produced_code(&r)
    }

    /// EndTxn v5 with this identity: the error and the identity answered.
    async fn end(&self, c: &mut Conn, committed: bool) -> (KafkaCode, i64, i16) {
        let r: EndTxnResponse = c
            .call(key::END_TXN, 5, &end(self.pid, self.epoch, committed))
            .await;
        (r.error_code, r.producer_id, r.producer_epoch)
    }
}

#[tokio::test]
async fn a_retried_end_txn_v5_after_the_move_to_a_fresh_producer_id_gets_the_same_answer() {
    // The id's journal leaves it one epoch: its next end moves it on.
    let dir = tempfile::tempdir().unwrap();
    let last = i16::MAX - 1;
    let json = format!(
        r#"{{"id":"{TXN}","state":"CompleteCommit","producer_id":1000,"producer_epoch":{},"last_producer_epoch":-1,"timeout_ms":60000,"start_ms":0,"partitions":[],"groups":[],"offsets":[]}}"#,
        last - 1
    );
    let line = format!("{:08x} {json}\n", crc32c::crc32c(json.as_bytes()));
    std::fs::write(dir.path().join("transactions.journal"), line).unwrap();
    let h = Harness::open(dir, vec![1], Default::default(), |c| c).await;
    h.cluster.topics().create("out", 1, 1).unwrap();
    let mut c = h.conn(1).await;
    assert_eq!(init(&mut c).await, (1000, last));
    let old = V2Producer {
        pid: 1000,
        epoch: last,
    };
    assert_eq!(old.produce(&mut c, 0, "last").await, KafkaCode::NONE);
    let (code, fresh, epoch) = old.end(&mut c, true).await;
    assert_eq!((code, epoch), (KafkaCode::NONE, 0));
    assert_ne!(fresh, 1000);
    // The answer was lost: the retry with the previous identity gets it.
    assert_eq!(old.end(&mut c, true).await, (KafkaCode::NONE, fresh, 0));
    let r: EndTxnResponse = c.call(key::END_TXN, 5, &end(1000, last - 1, true)).await;
    assert_eq!(r.error_code, KafkaCode::INVALID_PRODUCER_ID_MAPPING);
    assert_eq!(read_committed(&h, 0), vec!["last"]);
    let new = V2Producer {
        pid: fresh,
        epoch: 0,
    };
    assert_eq!(new.produce(&mut c, 0, "fresh").await, KafkaCode::NONE);
    assert_eq!(new.end(&mut c, true).await, (KafkaCode::NONE, fresh, 1));
    assert_eq!(read_committed(&h, 0), vec!["last", "fresh"]);
}

#[tokio::test]
async fn a_v2_producer_whose_transaction_timed_out_aborts_with_its_old_epoch_and_goes_on() {
    let (h, mut c, (pid, epoch)) = started(1).await;
    let slow = V2Producer { pid, epoch };
    assert_eq!(slow.produce(&mut c, 0, "slow").await, KafkaCode::NONE);
    h.clock.advance(60_001);
    let aborted = h.cluster.transactions().expire().await.unwrap();
    assert_eq!(aborted, vec![TXN.to_string()]);
    // Its batches are fenced; its abort (not its commit) is answered as a
    // retry of the timeout's, with the epoch to go on with; EndTxn v4 of
    // the old epoch stays fenced.
    assert_eq!(
        slow.produce(&mut c, 1, "late").await,
        KafkaCode::INVALID_PRODUCER_EPOCH
    );
    assert_eq!(slow.end(&mut c, true).await.0, KafkaCode::INVALID_TXN_STATE);
    let r: EndTxnResponse = c.call(key::END_TXN, 4, &end(pid, epoch, false)).await;
    assert_eq!(r.error_code, KafkaCode::PRODUCER_FENCED);
    assert_eq!(
        slow.end(&mut c, false).await,
        (KafkaCode::NONE, pid, epoch + 1)
    );
    let next = V2Producer {
        pid,
        epoch: epoch + 1,
    };
    assert_eq!(next.produce(&mut c, 0, "again").await, KafkaCode::NONE);
    assert_eq!(
        next.end(&mut c, true).await,
        (KafkaCode::NONE, pid, epoch + 2)
    );
    assert_eq!(read_committed(&h, 0), vec!["again"]);
}

/// TxnOffsetCommit of `offset` for group "g" on in-0, as the producer
/// `(pid, epoch)` sends it.
fn txn_offsets(pid: i64, epoch: i16, offset: i64) -> TxnOffsetCommitRequest {
    TxnOffsetCommitRequest {
        transactional_id: TXN.into(),
        group_id: "g".into(),
        producer_id: pid,
        producer_epoch: epoch,
        topics: vec![TxnOffsetCommitRequestTopic {
            name: "in".into(),
            partitions: vec![TxnOffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: offset,
                ..TxnOffsetCommitRequestPartition::default()
            }],
        }],
        ..TxnOffsetCommitRequest::default()
    }
}

#[tokio::test]
async fn transaction_abortable_is_answered_from_the_versions_that_know_it() {
    let (h, mut c, (pid, epoch)) = started(1).await;
    h.cluster.topics().create("in", 1, 1).unwrap();
    // A first-protocol batch for a partition the transaction does not have:
    // the producer can abort and go on (KIP-890); before Produce v11 the
    // code did not exist and the same refusal is INVALID_TXN_STATE.
    for (version, expected) in [
        (10, KafkaCode::INVALID_TXN_STATE),
        (11, KafkaCode::TRANSACTION_ABORTABLE),
    ] {
        let r: ProduceResponse = c
            .call(key::PRODUCE, version, &produce(pid, epoch, 0, 0, "x"))
            .await;
        assert_eq!(produced_code(&r), expected, "Produce v{version}");
    }
    // Offsets of a group that was never added: the same, from
    // TxnOffsetCommit v4.
    for (version, expected) in [
        (3, KafkaCode::INVALID_TXN_STATE),
        (4, KafkaCode::TRANSACTION_ABORTABLE),
    ] {
        let r: TxnOffsetCommitResponse = c
            .call(key::TXN_OFFSET_COMMIT, version, &txn_offsets(pid, epoch, 3))
            .await;
        let code = r.topics[0].partitions[0].error_code;
        assert_eq!(code, expected, "TxnOffsetCommit v{version}");
    }
    assert!(
        h.cluster
            .data()
            .fetch(&FetchRequest::new(
                TopicPartition::new("out", 0),
                0,
                i64::MAX
            ))
            .unwrap()
            .records
            .is_empty()
    );
    // Nothing was begun by the refusals: the id is still idle.
    let d = h.cluster.transactions().describe(TXN).unwrap().unwrap();
    assert!(d.partitions.is_empty() && d.groups.is_empty());
}
