//! Group commit seen from a client: a pipelined run of produce lines is
//! answered line for line exactly as the same lines sent one at a time —
//! offsets, acks, idempotence, and each refused line's own error while its
//! neighbours are written.

mod common;

use common::{Harness, within};
use mk_adapter_jsontcp::ServerOptions;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The request lines: plain produces with refusals of every kind between
/// them, then a non-produce line that ends the run.
fn pipeline(producer_id: i64) -> Vec<String> {
    let produce = |partition: u32, value: &str, extra: &str, id: usize| {
        format!(
            r#"{{"operation":"produce","topic":"t","partition":{partition},"value_b64":"{value}"{extra},"id":{id}}}"#
        )
    };
    let idem = |seq: i32| {
        format!(r#","producer_id":{producer_id},"producer_epoch":0,"base_sequence":{seq}"#)
    };
    let keyed: Vec<String> = ["YQ==", "Yg==", "Yw==", "ZA==", "ZQ==", "Zg=="]
        .iter()
        .map(|k| format!(r#"{{"key_b64":"{k}","value_b64":"eA=="}}"#))
        .collect();
    vec![
        produce(0, "YQ==", "", 0),
        produce(0, "Yg==", r#","acks":0"#, 1),
        produce(0, "%%%", "", 2),
        produce(0, "Yw==", "", 3),
        r#"{"operation":"produce","topic":"missing","value_b64":"eA==","id":4}"#.into(),
        produce(0, "ZA==", "", 5),
        produce(0, "aTA=", &idem(0), 6),
        produce(0, "aTU=", &idem(5), 7),
        produce(0, "ZQ==", r#","acks":0"#, 8),
        format!(
            r#"{{"operation":"produce","topic":"t","records":[{}],"id":9}}"#,
            keyed.join(",")
        ),
        produce(1, "Zg==", "", 10),
        produce(0, "Zw==", r#","acks":"all""#, 11),
        r#"{"operation":"list_offsets","topic":"t","partition":0,"at":"latest","id":12}"#.into(),
        produce(0, "aA==", "", 13),
    ]
}

async fn broker() -> (Harness, i64) {
    let h = Harness::single(ServerOptions::default()).await;
    h.cluster.topics().create("t", 2, 1).unwrap();
    let id = h.cluster.transactions().init_producer(None).unwrap();
    (h, id.producer_id)
}

/// The answers when every line is written in one go (pipelined) or each
/// only after the previous answer arrived.
async fn answers(h: &Harness, lines: &[String], pipelined: bool) -> Vec<String> {
    let (rd, mut wr) = h.raw().await;
    let mut rd = BufReader::new(rd);
    let mut out = Vec::new();
    let read_one = async |rd: &mut BufReader<_>| {
        let mut line = String::new();
        within(rd.read_line(&mut line)).await.unwrap();
        line
    };
    if pipelined {
        let all: String = lines.iter().map(|l| format!("{l}\n")).collect();
        wr.write_all(all.as_bytes()).await.unwrap();
        for _ in lines {
            out.push(read_one(&mut rd).await);
        }
    } else {
        for l in lines {
            wr.write_all(format!("{l}\n").as_bytes()).await.unwrap();
            out.push(read_one(&mut rd).await);
        }
    }
    out
}

#[tokio::test]
async fn a_pipelined_run_of_produces_is_answered_as_lines_sent_one_at_a_time() {
    let (one, id1) = broker().await;
    let (grouped, id2) = broker().await;
    assert_eq!(
        id1, id2,
        "fresh brokers hand out the same first producer id"
    );
    let singly = answers(&one, &pipeline(id1), false).await;
    let together = answers(&grouped, &pipeline(id2), true).await;
    assert_eq!(together, singly);

    let ok = |partition: u32, offset: i64, id: usize| {
        format!("{{\"ok\":true,\"partition\":{partition},\"offset\":{offset},\"id\":{id}}}\n")
    };
    let code = |line: &str| {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        v["code"].as_str().unwrap_or("none").to_string()
    };
    assert_eq!(together[0], ok(0, 0, 0));
    assert_eq!(
        together[1],
        "{\"ok\":true,\"partition\":0,\"offset\":null,\"id\":1}\n"
    );
    assert_eq!(code(&together[2]), "INVALID_REQUEST");
    assert_eq!(together[3], ok(0, 2, 3));
    assert_eq!(code(&together[4]), "UNKNOWN_TOPIC");
    assert_eq!(together[5], ok(0, 3, 5));
    assert_eq!(together[6], ok(0, 4, 6));
    assert_eq!(code(&together[7]), "OUT_OF_ORDER_SEQUENCE");
    assert_eq!(
        together[8],
        "{\"ok\":true,\"partition\":0,\"offset\":null,\"id\":8}\n"
    );
    assert_eq!(code(&together[9]), "INVALID_REQUEST", "{}", together[9]);
    assert_eq!(together[10], ok(1, 0, 10));
    assert_eq!(together[11], ok(0, 6, 11));
    assert_eq!(together[12], "{\"ok\":true,\"offset\":7,\"id\":12}\n");
    assert_eq!(together[13], ok(0, 7, 13));

    let values = |h: &Harness| {
        let f = h
            .cluster
            .data()
            .fetch(&mk_adapter_jsontcp::mk_cluster::FetchRequest::new(
                mk_adapter_jsontcp::mk_cluster::TopicPartition::new("t", 0),
                0,
                100,
            ))
            .unwrap();
        f.records
            .into_iter()
            .map(|r| String::from_utf8(r.value.unwrap().to_vec()).unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(values(&grouped), ["a", "b", "c", "d", "i0", "e", "g", "h"]);
    assert_eq!(values(&grouped), values(&one));
    one.stop().await;
    grouped.stop().await;
}
