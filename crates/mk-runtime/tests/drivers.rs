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

/// A JoinGroup of a new member (no id yet, none required) whose rebalance
/// timeout is 50 ms, so a barrier it waits at ends quickly.
fn join_briefly() -> GroupJoin {
    GroupJoin {
        group_id: "g".into(),
        member_id: String::new(),
        group_instance_id: None,
        client_id: "rdkafka".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 50,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), Bytes::from_static(b"orders"))],
        require_known_member_id: false,
        subscribed_topics: vec!["orders".into()],
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
    let ja = c.groups().join_member(join_briefly()).await.unwrap();
    assert_eq!(ja.generation_id, 1);
    // a, the leader, assigns nothing.
    let sync = GroupSync {
        group_id: "g".into(),
        generation_id: ja.generation_id,
        member_id: ja.member_id.clone(),
        group_instance_id: None,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assigned_partitions: Vec::new(),
        assignments: Vec::new(),
    };
    c.groups().sync_member(sync).await.unwrap();
    // a never rejoins; only the drivers' time step can answer b.
    let jb = tokio::time::timeout(PATIENCE, c.groups().join_member(join_briefly()))
        .await
        .expect("the drivers completed the rebalance")
        .unwrap();
    assert_eq!((jb.generation_id, jb.members.len()), (2, 1));
    assert_eq!(jb.leader_id, jb.member_id);
    c.lifecycle().close().await.unwrap();
}
