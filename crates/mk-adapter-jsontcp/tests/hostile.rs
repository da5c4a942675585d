//! Hostile and slow clients over a real socket: every one is answered with a
//! typed error or cut off, while a healthy client keeps getting prompt
//! answers and the data stays intact. Awaits are bounded by `within`; no
//! assertion depends on timing.

mod common;

use common::{Harness, within};
use mk_adapter_jsontcp::mk_cluster::{AckMode, Bytes, FetchRequest, TopicPartition};
use mk_adapter_jsontcp::{JsonTcpClient, ServerOptions};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Writes `records` values to `t-0` and returns them.
async fn seed(c: &mut JsonTcpClient, records: usize) -> Vec<Bytes> {
    c.create_topic("t", 1, 1).await.unwrap();
    let tp = TopicPartition::new("t", 0);
    let mut values = Vec::new();
    for i in 0..records {
        let v = Bytes::from(format!("value-{i}"));
        let offset = c
            .produce_one(&tp, None, Some(v.clone()), AckMode::One)
            .await
            .unwrap();
        assert_eq!(offset, Some(i as i64));
        values.push(v);
    }
    values
}

/// One broker (default options) with `records` values in `t-0` (see
/// `seed`).
async fn seeded(records: usize) -> (Harness, Vec<Bytes>) {
    let h = Harness::single(ServerOptions::default()).await;
    let values = seed(&mut h.client().await, records).await;
    (h, values)
}

/// The healthy client still answers, and the log still holds `values`.
async fn healthy_and_intact(h: &Harness, values: &[Bytes]) {
    let mut c = within(h.client()).await;
    let f = within(c.fetch(
        &FetchRequest::new(TopicPartition::new("t", 0), 0, 10_000),
        None,
    ))
    .await
    .unwrap();
    let got: Vec<Bytes> = f.records.into_iter().filter_map(|r| r.value).collect();
    assert_eq!(got, values, "the data is intact");
}

async fn read_line(r: &mut BufReader<tokio::net::tcp::OwnedReadHalf>) -> String {
    let mut line = String::new();
    within(r.read_line(&mut line)).await.unwrap();
    line
}

/// Reads until the server closes the connection (EOF or reset).
async fn closed_by_server(r: &mut (impl AsyncReadExt + Unpin)) -> Vec<u8> {
    let mut rest = Vec::new();
    match within(r.read_to_end(&mut rest)).await {
        Ok(_) => {}
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
    }
    rest
}

/// On one connection to a broker seeded with `records` values, each of
/// `lines` is answered INVALID_REQUEST with a message containing `says`;
/// the connection stays open (a `list_topics` sent as `list_line` finds
/// only `t`: nothing was created) and the data is intact.
async fn each_line_is_invalid_request(
    records: usize,
    lines: &[&[u8]],
    says: &str,
    list_line: &[u8],
) {
    let (h, values) = seeded(records).await;
    let (rd, mut wr) = h.raw().await;
    let mut rd = BufReader::new(rd);
    for line in lines {
        wr.write_all(line).await.unwrap();
        wr.write_all(b"\n").await.unwrap();
        let answer = read_line(&mut rd).await;
        assert!(
            answer.starts_with(r#"{"ok":false,"code":"INVALID_REQUEST","message":"#)
                && answer.contains(says),
            "{answer}"
        );
    }
    wr.write_all(list_line).await.unwrap();
    assert_eq!(
        read_line(&mut rd).await,
        "{\"ok\":true,\"topics\":[\"t\"]}\n",
        "no topic was created"
    );
    healthy_and_intact(&h, &values).await;
    h.stop().await;
}

#[tokio::test]
async fn garbage_bytes_get_invalid_request_per_line_and_the_connection_stays_open() {
    let garbage: [&[u8]; 7] = [
        b"\x00\x01\x02\xff\xfe",
        b"\xc3\x28 invalid utf-8",
        b"{\"operation\":\"list_topics\",\"x\":\"\xff\"}",
        b"}}}}{{{{",
        b"\r",
        b"{\"operation\":\"produce\",\"topic\":\"t\",\"value_b64\":\"!!!!\"}",
        b"{\"operation\":\"fetch\",\"topic\":\"t\",\"partition\":0,\"offset\":1180591620717411303424}",
    ];
    // The list ends with CRLF: a `\r` before the newline is accepted.
    let list = b"{\"operation\":\"list_topics\"}\r\n";
    each_line_is_invalid_request(3, &garbage, "", list).await;
}

#[tokio::test]
async fn a_request_with_a_duplicate_key_is_invalid_request_and_changes_nothing() {
    let duplicated: [&[u8]; 3] = [
        // With the last value winning this would produce a record.
        br#"{"operation":"list_topics","operation":"produce","topic":"t","value_b64":"aGk="}"#,
        br#"{"operation":"produce","topic":"t","records":[{"value_b64":"aGk=","value_b64":"aGk="}]}"#,
        br#"{"operation":"create_topic","topic":"u","topic":"v","partitions":1,"replication_factor":1}"#,
    ];
    let list = b"{\"operation\":\"list_topics\"}\n";
    each_line_is_invalid_request(2, &duplicated, "duplicate key", list).await;
}

#[tokio::test]
async fn deep_nesting_is_refused_without_overflowing_the_stack() {
    let (h, values) = seeded(2).await;
    let mut c = h.client().await;
    let depth = 100_000;
    let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let objects = format!(
        "{{\"operation\":\"list_topics\",\"id\":{}1{}}}",
        "{\"a\":".repeat(depth),
        "}".repeat(depth)
    );
    let unclosed = "[".repeat(depth);
    for line in [arrays, objects, unclosed] {
        let answer = within(c.call_raw(line.as_bytes())).await.unwrap();
        let answer = String::from_utf8(answer).unwrap();
        assert!(
            answer.starts_with(r#"{"ok":false,"code":"INVALID_REQUEST","message":"invalid JSON: recursion limit exceeded"#),
            "{answer}"
        );
    }
    assert_eq!(
        within(c.list_topics()).await.unwrap(),
        vec!["t".to_string()]
    );
    healthy_and_intact(&h, &values).await;
    h.stop().await;
}

#[tokio::test]
async fn a_3_mib_line_without_newline_gets_one_frame_too_large_and_is_closed() {
    let (h, values) = seeded(2).await;
    let (rd, mut wr) = h.raw().await;
    // The server stops reading after the limit, so the rest of the write may
    // block or fail; it runs beside the reader.
    let writer = tokio::spawn(async move {
        let chunk = vec![b'a'; 64 * 1024];
        for _ in 0..48 {
            if wr.write_all(&chunk).await.is_err() {
                break;
            }
        }
        wr
    });
    let mut rd = BufReader::new(rd);
    let line = read_line(&mut rd).await;
    assert!(
        line.starts_with(r#"{"ok":false,"code":"FRAME_TOO_LARGE","message":"request line exceeds max_frame_bytes (1048576 bytes"#),
        "{line}"
    );
    assert!(
        closed_by_server(&mut rd).await.is_empty(),
        "exactly one response, then the connection is closed"
    );
    drop(within(writer).await.unwrap());
    assert!(
        h.server.peak_read_buffer_bytes() <= 1_048_576 + 64 * 1024,
        "the server buffered {} bytes for one line",
        h.server.peak_read_buffer_bytes()
    );
    healthy_and_intact(&h, &values).await;
    h.stop().await;
}

#[tokio::test]
async fn a_line_of_exactly_the_limit_is_accepted_and_one_byte_more_is_not() {
    let limit = 256;
    let h = Harness::tuned(|o| o.max_frame_bytes = limit).await;
    let base = r#"{"operation":"list_topics","pad":""}"#;
    let fits = base.replace(
        "\"\"",
        &format!("\"{}\"", "x".repeat(limit - base.len() - 1)),
    );
    assert_eq!(fits.len() + 1, limit);
    let mut c = h.client().await;
    let ok = within(c.call_raw(fits.as_bytes())).await.unwrap();
    assert_eq!(ok, br#"{"ok":true,"topics":[]}"#);
    let too_long = fits.replace("\"x", "\"xx");
    let err = within(c.call_raw(too_long.as_bytes())).await.unwrap();
    assert!(String::from_utf8(err).unwrap().contains("FRAME_TOO_LARGE"));
    assert!(
        within(c.list_topics()).await.is_err(),
        "the connection is closed after FRAME_TOO_LARGE"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_client_sending_one_byte_at_a_time_is_answered_and_blocks_nobody() {
    let (h, values) = seeded(2).await;
    let (rd, mut wr) = h.raw().await;
    let request = b"{\"operation\":\"metadata\",\"topic\":\"t\",\"id\":\"slow\"}\n";
    let (first, rest) = request.split_at(20);
    for b in first {
        wr.write_all(&[*b]).await.unwrap();
        wr.flush().await.unwrap();
    }
    // Halfway through the slow request, others are served at once.
    healthy_and_intact(&h, &values).await;
    for b in rest {
        wr.write_all(&[*b]).await.unwrap();
        wr.flush().await.unwrap();
    }
    let line = read_line(&mut BufReader::new(rd)).await;
    assert!(
        line.starts_with(r#"{"ok":true,"topic":"t","partitions":["#),
        "{line}"
    );
    assert!(line.ends_with(",\"id\":\"slow\"}\n"), "{line}");
    h.stop().await;
}

#[tokio::test]
async fn a_client_that_trickles_bytes_without_a_newline_is_cut_off_at_the_idle_timeout() {
    let h = Harness::tuned(|o| o.idle_timeout = Duration::from_millis(300)).await;
    let values = seed(&mut h.client().await, 1).await;
    let mut slow = TcpStream::connect(h.server.local_addr()).await.unwrap();
    // The pause paces a slow client; nothing waits on it for correctness.
    let trickle = async {
        loop {
            if slow.write_all(b" ").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    within(trickle).await;
    healthy_and_intact(&h, &values).await;
    h.stop().await;
}

#[tokio::test]
async fn a_client_that_never_reads_is_dropped_and_never_blocks_others() {
    let h = Harness::tuned(|o| {
        o.write_timeout = Duration::from_millis(300);
        o.write_queue_bytes = 64 * 1024;
    })
    .await;
    let mut c = h.client().await;
    let values = seed(&mut c, 200).await;
    let mut deaf = TcpStream::connect(h.server.local_addr()).await.unwrap();
    let fetch_all = b"{\"operation\":\"fetch\",\"topic\":\"t\",\"partition\":0,\"offset\":0,\"max_records\":1000}\n";
    // Keep asking for the whole log without reading an answer: buffers
    // fill, the server stops reading, and after write_timeout drops us.
    let flood = async {
        let mut sent = 0u64;
        while deaf.write_all(fetch_all).await.is_ok() {
            sent += 1;
        }
        sent
    };
    let healthy = async {
        for _ in 0..20 {
            healthy_and_intact(&h, &values).await;
        }
    };
    let (sent, ()) = within(async { tokio::join!(flood, healthy) }).await;
    assert!(sent > 0);
    assert_eq!(
        within(c.list_topics()).await.unwrap(),
        vec!["t".to_string()]
    );
    h.stop().await;
}

#[tokio::test]
async fn three_hundred_idle_connections_do_not_slow_a_healthy_client() {
    let (h, values) = seeded(5).await;
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.push(TcpStream::connect(h.server.local_addr()).await.unwrap());
    }
    for _ in 0..10 {
        healthy_and_intact(&h, &values).await;
    }
    assert!(h.server.connections() >= 300);
    drop(idle);
    h.stop().await;
}

#[tokio::test]
async fn connections_beyond_the_limit_are_closed_at_once() {
    let h = Harness::tuned(|o| o.max_connections = 2).await;
    let mut a = h.client().await;
    let mut b = h.client().await;
    assert!(within(a.list_topics()).await.is_ok());
    assert!(within(b.list_topics()).await.is_ok());
    let mut third = TcpStream::connect(h.server.local_addr()).await.unwrap();
    assert!(closed_by_server(&mut third).await.is_empty());
    drop(b);
    // The freed slot is usable again once the server has seen the close;
    // retry connecting until it has (bounded by `within`).
    let again = within(async {
        loop {
            let mut c = JsonTcpClient::connect(h.server.local_addr()).await.unwrap();
            if c.list_topics().await.is_ok() {
                return c;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    drop(again);
    assert!(within(a.list_topics()).await.is_ok());
    h.stop().await;
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let h = Harness::tuned(|o| o.max_in_flight = 8).await;
    let mut c = h.client().await;
    c.create_topic("t", 1, 1).await.unwrap();
    let (rd, mut wr) = h.raw().await;
    let n = 2_000;
    let mut batch = Vec::new();
    for i in 0..n {
        if i % 3 == 2 {
            batch.extend_from_slice(
                format!("{{\"operation\":\"list_offsets\",\"topic\":\"t\",\"partition\":0,\"at\":\"latest\",\"id\":{i}}}\n")
                    .as_bytes(),
            );
        } else {
            batch.extend_from_slice(
                format!("{{\"operation\":\"produce\",\"topic\":\"t\",\"value_b64\":\"eA==\",\"id\":{i}}}\n")
                    .as_bytes(),
            );
        }
    }
    let writer = tokio::spawn(async move {
        wr.write_all(&batch).await.unwrap();
        wr
    });
    let mut rd = BufReader::new(rd);
    let mut produced = 0;
    for i in 0..n {
        let line = read_line(&mut rd).await;
        assert!(line.ends_with(&format!(",\"id\":{i}}}\n")), "{line}");
        if i % 3 == 2 {
            assert_eq!(
                line,
                format!("{{\"ok\":true,\"offset\":{produced},\"id\":{i}}}\n")
            );
        } else {
            assert_eq!(
                line,
                format!("{{\"ok\":true,\"partition\":0,\"offset\":{produced},\"id\":{i}}}\n")
            );
            produced += 1;
        }
    }
    drop(within(writer).await.unwrap());
    h.stop().await;
}

#[tokio::test]
async fn a_long_poll_is_woken_by_a_produce_on_another_connection() {
    let h = Harness::single(ServerOptions::default()).await;
    let mut waiter = h.client().await;
    let mut producer = h.client().await;
    producer.create_topic("t", 1, 1).await.unwrap();
    let tp = TopicPartition::new("t", 0);
    let request = FetchRequest::new(tp.clone(), 0, 10);
    let poll = waiter.fetch(&request, Some(60_000));
    let produce = async {
        producer
            .produce_one(&tp, None, Some(Bytes::from_static(b"late")), AckMode::One)
            .await
            .unwrap()
    };
    let (polled, offset) = within(async { tokio::join!(poll, produce) }).await;
    assert_eq!(offset, Some(0));
    let polled = polled.unwrap();
    assert_eq!(polled.records.len(), 1);
    assert_eq!(polled.records[0].value.as_deref(), Some(&b"late"[..]));
    // A long poll with nothing to read returns empty when its wait is over.
    let empty = within(waiter.fetch(&FetchRequest::new(tp, 1, 10), Some(20)))
        .await
        .unwrap();
    assert!(empty.records.is_empty());
    assert_eq!(empty.high_watermark, 1);
    h.stop().await;
}

#[tokio::test]
async fn shutdown_answers_a_waiting_long_poll_and_closes_connections() {
    let h = Harness::single(ServerOptions::default()).await;
    let mut c = h.client().await;
    c.create_topic("t", 1, 1).await.unwrap();
    let (rd, mut wr) = h.raw().await;
    wr.write_all(b"{\"operation\":\"fetch\",\"topic\":\"t\",\"partition\":0,\"offset\":0,\"max_wait_ms\":600000}\n{\"operation\":\"list_topics\"}\n")
        .await
        .unwrap();
    // Stats from another connection counts itself and the long poll once
    // the long poll is being executed.
    within(async {
        while c.stats().await.unwrap().in_flight < 2 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    let mut rd = BufReader::new(rd);
    let shutdown = h.server.shutdown();
    let reading = async {
        let first = read_line(&mut rd).await;
        let rest = closed_by_server(&mut rd).await;
        (first, rest)
    };
    let ((), (first, rest)) = within(async { tokio::join!(shutdown, reading) }).await;
    assert!(first.starts_with(r#"{"ok":true,"records":[]"#), "{first}");
    assert!(
        rest.is_empty() || rest.starts_with(b"{\"ok\":true,\"topics\""),
        "a request read before shutdown may still be answered, nothing else"
    );
    assert!(
        within(c.list_topics()).await.is_err(),
        "connections are closed"
    );
    h.cluster.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_final_line_without_newline_is_answered_at_eof() {
    let h = Harness::single(ServerOptions::default()).await;
    let (rd, mut wr) = h.raw().await;
    wr.write_all(
        b"{\"operation\":\"list_topics\",\"id\":1}\r\n{\"operation\":\"list_topics\",\"id\":2}",
    )
    .await
    .unwrap();
    wr.shutdown().await.unwrap();
    let mut rd = BufReader::new(rd);
    assert_eq!(
        read_line(&mut rd).await,
        "{\"ok\":true,\"topics\":[],\"id\":1}\n"
    );
    assert_eq!(
        read_line(&mut rd).await,
        "{\"ok\":true,\"topics\":[],\"id\":2}\n"
    );
    assert!(closed_by_server(&mut rd).await.is_empty());
    h.stop().await;
}
