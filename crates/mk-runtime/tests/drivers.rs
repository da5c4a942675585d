//! The drivers of a running broker: the group coordinator's time step runs
//! from a timer, so a JoinGroup waiting at a barrier whose rebalance
//! timeout passed is answered without anyone calling the step.

use bytes::Bytes;
use mk_cluster::*;
use mk_runtime::{DriverConfig, start_drivers};
use std::time::Duration;

/// The most a test waits for a background driver; never a synchronization
/// sleep, only a bound on a wait that resolves by itself.
const PATIENCE: Duration = Duration::from_secs(20);

fn tp(t: &str, p: u32) -> TopicPartition {
    TopicPartition::new(t, p)
}

fn join(member: &str) -> GroupJoin {
    GroupJoin {
        group_id: "g".into(),
        member_id: member.into(),
        group_instance_id: None,
        client_id: "rdkafka".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), Bytes::from_static(b"orders"))],
        require_known_member_id: true,
        subscribed_topics: vec!["orders".into()],
    }
}

fn sync(member: &str, generation: i32, assignments: Vec<(String, Bytes)>) -> GroupSync {
    GroupSync {
        group_id: "g".into(),
        generation_id: generation,
        member_id: member.into(),
        group_instance_id: None,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assigned_partitions: assignments
            .iter()
            .map(|(m, _)| (m.clone(), vec![tp("orders", 0)]))
            .take(1)
            .collect(),
        assignments,
    }
}

#[tokio::test]
async fn a_running_brokers_drivers_end_a_barrier_whose_rebalance_timeout_passed() {
    let dir = tempfile::tempdir().unwrap();
    let c = BrokerCluster::open(MiniKafkaConfig::new(dir.path())).unwrap();
    c.topics().create("orders", 1, 1).unwrap();
    start_drivers(
        &c,
        DriverConfig {
            group_expiry_interval: Duration::from_millis(10),
            ..DriverConfig::default()
        },
    )
    .unwrap();
    let short = |member: &str| GroupJoin {
        rebalance_timeout_ms: 50,
        require_known_member_id: false,
        ..join(member)
    };
    let ja = c.groups().join_member(short("")).await.unwrap();
    c.groups()
        .sync_member(sync(&ja.member_id, 1, vec![]))
        .await
        .unwrap();
    // a never rejoins; only the drivers' time step can answer b.
    let jb = tokio::time::timeout(PATIENCE, c.groups().join_member(short("")))
        .await
        .expect("the drivers completed the rebalance")
        .unwrap();
    assert_eq!((jb.generation_id, jb.members.len()), (2, 1));
    assert_eq!(jb.leader_id, jb.member_id);
    c.lifecycle().close().await.unwrap();
}
