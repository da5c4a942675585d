//! The console served by the broker: on when asked (`--console-listen`,
//! the embedded builder's `.console()`), off otherwise for test brokers,
//! answering its page and API, and on the same address after a restart.

use mk_server::embedded::{BrokerBuilder, StartError};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

const BIN: &str = env!("CARGO_BIN_EXE_mk-server");

/// `GET path` on a fresh connection: (status, body).
fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split(' ').nth(1).unwrap().parse().unwrap();
    let body = out.split_once("\r\n\r\n").unwrap().1.to_string();
    (status, body)
}

#[test]
fn the_embedded_broker_serves_the_console_when_asked_and_keeps_its_address() {
    let mut broker = BrokerBuilder::new().console().start().unwrap();
    let addr = broker.listening().console.expect("the console is on");
    assert!(addr.ip().is_loopback());
    let (status, page) = get(addr, "/");
    assert_eq!(status, 200);
    assert!(page.contains("MiniKafka console"), "{page}");
    broker.create_topic("t", 2, 1).unwrap();
    let (status, topics) = get(addr, "/api/topics");
    assert_eq!(status, 200);
    assert!(topics.contains("\"name\":\"t\""), "{topics}");

    broker.restart().unwrap();
    assert_eq!(broker.listening().console, Some(addr));
    let (status, topics) = get(addr, "/api/topics");
    assert_eq!(status, 200);
    assert!(
        topics.contains("\"name\":\"t\""),
        "the data survived: {topics}"
    );
}

#[test]
fn test_brokers_start_without_the_console_and_the_flag_is_the_builders() {
    let broker = BrokerBuilder::new().kafka_off().start().unwrap();
    assert_eq!(broker.listening().console, None);
    let refused = BrokerBuilder::new()
        .args(["--console-listen", "127.0.0.1:0"])
        .start()
        .unwrap_err();
    assert!(
        matches!(&refused, StartError::InvalidFlags(m) if m.contains(".console()")),
        "{refused}"
    );
}

#[test]
fn the_binary_prints_the_console_address_and_refuses_a_bad_one() {
    let process = BrokerBuilder::new().console().spawn(BIN).unwrap();
    let addr = process.listening().console.expect("console on");
    let (status, overview) = get(addr, "/api/overview");
    assert_eq!(status, 200);
    assert!(
        overview.contains("\"brokers\":[{\"id\":1,\"online\":true}]"),
        "{overview}"
    );
    drop(process);

    let out = std::process::Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--kafka-listen", "off"])
        .args(["--console-listen", "localhost"])
        .arg("--data-dir")
        .arg(tempfile::tempdir().unwrap().path().join("d"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--console-listen must be IP:PORT or off"),
        "{stderr}"
    );
}
