//! Insta snapshots that freeze every JSON wire shape of spec 06: each
//! operation's success response and every error a client can provoke,
//! recorded as raw request/response transcripts over a live socket.

mod common;

use common::{Harness, fresh_transcript, transcript, within};
use mk_adapter_jsontcp::ServerOptions;
use mk_adapter_jsontcp::mk_cluster::share::ShareFetchRequest;
use mk_adapter_jsontcp::mk_cluster::{
    ConsumerHeartbeat, GroupSettings, ShareAutoOffsetReset, ShareFetchLimits, ShareHeartbeat,
    TopicPartition,
};
use std::time::Duration;

/// `fresh_transcript` of `lines` on one broker with the default options.
async fn single_transcript(lines: &[&str]) -> String {
    fresh_transcript(Harness::single(ServerOptions::default()).await, lines).await
}

#[tokio::test]
async fn snapshot_core_operations() {
    let t = single_transcript(&[
        r#"{"operation":"create_topic","topic":"events","partitions":2,"replication_factor":1,"id":1}"#,
        r#"{"operation":"metadata","topic":"events"}"#,
        r#"{"operation":"metadata","topic":"auto","allow_auto_create":true}"#,
        r#"{"operation":"produce","topic":"events","partition":0,"value_b64":"aGVsbG8=","acks":"1"}"#,
        r#"{"operation":"produce","topic":"events","partition":0,"key_b64":"aw==","value_b64":"","acks":1,"id":"two"}"#,
        r#"{"operation":"produce","topic":"events","value_b64":null,"acks":"all"}"#,
        r#"{"operation":"produce","topic":"events","partition":1,"value_b64":"eA==","acks":"0"}"#,
        r#"{"operation":"produce","topic":"events","partition":1,"value_b64":"eQ==","acks":-1}"#,
        r#"{"operation":"fetch","topic":"events","partition":0,"offset":0}"#,
        r#"{"operation":"fetch","topic":"events","partition":1,"offset":0,"max_records":1,"id":{"nested":[1,2]}}"#,
        r#"{"operation":"join_group","group_id":"g","member_id":"m1","topics":["events"]}"#,
        r#"{"operation":"heartbeat","group_id":"g","member_id":"m1","generation":1}"#,
        r#"{"operation":"commit_offsets","group_id":"g","member_id":"m1","generation":1,"offsets":[{"topic":"events","partition":0,"offset":2}],"id":null}"#,
    ])
    .await;
    insta::assert_snapshot!(t);
}

#[tokio::test]
async fn snapshot_extended_operations() {
    let t = single_transcript(&[
        r#"{"operation":"create_topic","topic":"orders","partitions":1,"replication_factor":1,"config":{"cleanup.policy":"compact","retention.ms":null,"segment.bytes":4096}}"#,
        r#"{"operation":"create_topic","topic":"audit","partitions":1,"replication_factor":1}"#,
        r#"{"operation":"list_topics"}"#,
        r#"{"operation":"produce","topic":"orders","partition":0,"acks":"all","records":[{"key_b64":"azE=","value_b64":"djE=","headers":[{"key":"h","value_b64":"eA=="},{"key":"n","value_b64":null}],"timestamp_ms":1000},{"key_b64":"azI=","value_b64":"djI=","headers":[]}]}"#,
        r#"{"operation":"init_producer","name":"p1"}"#,
        r#"{"operation":"produce","topic":"orders","partition":0,"acks":"all","records":[{"key_b64":"aWQ=","value_b64":"aWQ="}],"producer_id":1,"producer_epoch":0,"base_sequence":0}"#,
        r#"{"operation":"produce","topic":"orders","partition":0,"acks":"all","records":[{"key_b64":"aWQ=","value_b64":"aWQ="}],"producer_id":1,"producer_epoch":0,"base_sequence":0}"#,
        r#"{"operation":"produce","topic":"orders","partition":0,"records":[{"key_b64":"aw==","value_b64":"YQ=="},{"value_b64":"bm8ga2V5"}]}"#,
        r#"{"operation":"fetch","topic":"orders","partition":0,"offset":0,"max_records":10,"max_bytes":1,"isolation":"read_committed"}"#,
        r#"{"operation":"fetch","topic":"orders","partition":0,"offset":0,"max_wait_ms":1000}"#,
        r#"{"operation":"list_offsets","topic":"orders","partition":0,"at":"earliest"}"#,
        r#"{"operation":"list_offsets","topic":"orders","partition":0,"at":"latest"}"#,
        r#"{"operation":"list_offsets","topic":"orders","partition":0,"at":1000}"#,
        r#"{"operation":"list_offsets","topic":"orders","partition":0,"at":99999999999999}"#,
        r#"{"operation":"join_group","group_id":"g","member_id":"m1","topics":["orders","audit"],"assignor":"range"}"#,
        r#"{"operation":"commit_offsets","group_id":"g","member_id":"m1","generation":1,"offsets":[{"topic":"orders","partition":0,"offset":3}]}"#,
        r#"{"operation":"fetch_offsets","group_id":"g"}"#,
        r#"{"operation":"fetch_offsets","group_id":"g","partitions":[{"topic":"orders","partition":0},{"topic":"audit","partition":0}]}"#,
        r#"{"operation":"describe_group","group_id":"g"}"#,
        r#"{"operation":"leave_group","group_id":"g","member_id":"m1"}"#,
        r#"{"operation":"leave_group","group_id":"g","member_id":"m1"}"#,
        r#"{"operation":"describe_group","group_id":"nobody"}"#,
        r#"{"operation":"begin_txn","transactional_id":"tx"}"#,
        r#"{"operation":"txn_produce","transactional_id":"tx","producer_epoch":0,"topic":"audit","key_b64":"YQ==","value_b64":"Yg=="}"#,
        r#"{"operation":"txn_send_offsets","transactional_id":"tx","producer_epoch":0,"group_id":"g","offsets":[{"topic":"orders","partition":0,"offset":4}]}"#,
        r#"{"operation":"commit_txn","transactional_id":"tx","producer_epoch":0}"#,
        r#"{"operation":"begin_txn","transactional_id":"tx"}"#,
        r#"{"operation":"txn_produce","transactional_id":"tx","producer_epoch":1,"topic":"audit","partition":0,"value_b64":"Yw=="}"#,
        r#"{"operation":"abort_txn","transactional_id":"tx","producer_epoch":1}"#,
        r#"{"operation":"fetch","topic":"audit","partition":0,"offset":0,"isolation":"read_committed"}"#,
        r#"{"operation":"describe_cluster"}"#,
        "# advance 5000",
        r#"{"operation":"stats"}"#,
    ])
    .await;
    insta::assert_snapshot!(t);
}

/// A KIP-848 member joining: topic list, range assignor, nothing owned.
fn consumer_join(member: &str) -> ConsumerHeartbeat {
    ConsumerHeartbeat {
        group_id: "kip-848".into(),
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 60_000,
        subscribed_topic_names: Some(vec!["orders".into()]),
        server_assignor: Some("range".into()),
        owned_partitions: Some(Vec::new()),
        client_id: "app".into(),
        client_host: "/127.0.0.1".into(),
        ..ConsumerHeartbeat::default()
    }
}

/// "kip-848": m1 joins and gets both partitions, m2 joins, and m1's next
/// heartbeat learns it must give up partition 1 before m2 gets it.
fn consumer_group_reconciling(h: &Harness) {
    let groups = h.cluster.groups();
    let first = groups.consumer_heartbeat(consumer_join("m1")).unwrap();
    assert_eq!(first.assignment.map(|a| a.len()), Some(2));
    groups.consumer_heartbeat(consumer_join("m2")).unwrap();
    let again = ConsumerHeartbeat {
        group_id: "kip-848".into(),
        member_id: "m1".into(),
        member_epoch: 1,
        rebalance_timeout_ms: -1,
        owned_partitions: Some(vec![
            TopicPartition::new("orders", 0),
            TopicPartition::new("orders", 1),
        ]),
        client_id: "app".into(),
        client_host: "/127.0.0.1".into(),
        ..ConsumerHeartbeat::default()
    };
    let revoking = groups.consumer_heartbeat(again).unwrap();
    assert_eq!(
        revoking.assignment,
        Some(vec![TopicPartition::new("orders", 0)])
    );
}

/// "queue": one share member that acquired two records of partition 0.
async fn share_group_in_flight(h: &Harness) {
    let groups = h.cluster.groups();
    let settings = GroupSettings {
        share_auto_offset_reset: Some(ShareAutoOffsetReset::Earliest),
        ..GroupSettings::default()
    };
    groups.set_settings("queue", settings).unwrap();
    groups
        .share_heartbeat(ShareHeartbeat {
            group_id: "queue".into(),
            member_id: "q1".into(),
            subscribed_topic_names: Some(vec!["orders".into()]),
            client_id: "worker".into(),
            client_host: "/127.0.0.1".into(),
            ..ShareHeartbeat::default()
        })
        .unwrap();
    let fetch = ShareFetchRequest {
        group_id: "queue".into(),
        member_id: "q1".into(),
        session_epoch: 0,
        partitions: vec![TopicPartition::new("orders", 0)],
        forgotten: Vec::new(),
        acks: Vec::new(),
    };
    let limits = ShareFetchLimits {
        max_wait: Duration::ZERO,
        max_records: 2,
        max_bytes: 1 << 20,
        broker: None,
    };
    let fetched = groups.share_fetch(&fetch, limits).await.unwrap();
    assert_eq!(fetched.partitions[0].acquired.len(), 1);
}

/// `describe_group` of the three group types: a classic (JSON-TCP) group,
/// a KIP-848 consumer group mid-reconciliation (its first member is giving
/// up the partition the second member's target names) and a share group
/// with records in flight. The KIP-848 and share members join through the
/// core, as the Kafka adapter's handlers do.
#[tokio::test]
async fn snapshot_describe_group_of_every_type() {
    let h = Harness::single(ServerOptions::default()).await;
    let mut c = h.client().await;
    let mut t = transcript(
        &h,
        &mut c,
        &[
            r#"{"operation":"create_topic","topic":"orders","partitions":2,"replication_factor":1}"#,
            r#"{"operation":"produce","topic":"orders","partition":0,"acks":"all","records":[{"value_b64":"YQ=="},{"value_b64":"Yg=="},{"value_b64":"Yw=="}]}"#,
            r#"{"operation":"join_group","group_id":"classic","member_id":"m1","topics":["orders"]}"#,
        ],
    )
    .await;
    consumer_group_reconciling(&h);
    share_group_in_flight(&h).await;
    t.push_str(
        &transcript(
            &h,
            &mut c,
            &[
                r#"{"operation":"describe_group","group_id":"classic"}"#,
                r#"{"operation":"describe_group","group_id":"kip-848"}"#,
                r#"{"operation":"describe_group","group_id":"queue"}"#,
                r#"{"operation":"list_groups"}"#,
            ],
        )
        .await,
    );
    insta::assert_snapshot!(t);
    h.stop().await;
}

/// Commits that carry a leader epoch and a metadata string (Kafka's
/// OffsetCommit fields): stored, answered back by `fetch_offsets`, and a
/// metadata string longer than Kafka's 4096-character bound refused for
/// its partition while the other partitions are stored.
#[tokio::test]
async fn snapshot_commit_metadata() {
    let h = Harness::single(ServerOptions::default()).await;
    let mut c = h.client().await;
    let too_long = "m".repeat(4097);
    let oversized = format!(
        r#"{{"operation":"commit_offsets","group_id":"g","member_id":"","generation":-1,"offsets":[{{"topic":"orders","partition":0,"offset":9,"metadata":"{too_long}"}},{{"topic":"orders","partition":1,"offset":4}}]}}"#
    );
    let t = transcript(
        &h,
        &mut c,
        &[
            r#"{"operation":"create_topic","topic":"orders","partitions":2,"replication_factor":1}"#,
            r#"{"operation":"commit_offsets","group_id":"g","member_id":"","generation":-1,"offsets":[{"topic":"orders","partition":0,"offset":3,"leader_epoch":0,"metadata":"batch-17"},{"topic":"orders","partition":1,"offset":2,"leader_epoch":null,"metadata":null}]}"#,
            r#"{"operation":"fetch_offsets","group_id":"g"}"#,
            &oversized,
            r#"{"operation":"fetch_offsets","group_id":"g","partitions":[{"topic":"orders","partition":0},{"topic":"orders","partition":1}]}"#,
            r#"{"operation":"commit_offsets","group_id":"g","member_id":"","generation":-1,"offsets":[{"topic":"orders","partition":0,"offset":3,"leader_epoch":-1}]}"#,
        ],
    )
    .await;
    insta::assert_snapshot!(t);
    h.stop().await;
}

/// The administration operations of issue 14 and the keyed routing of
/// `produce` and `txn_produce` without a partition (murmur2, as Kafka's
/// default partitioner; both paths agree).
#[tokio::test]
async fn snapshot_admin_operations() {
    let t = single_transcript(&[
        r#"{"operation":"create_topic","topic":"events","partitions":2,"replication_factor":1,"config":{"retention.ms":-1}}"#,
        r#"{"operation":"produce","topic":"events","key_b64":"dXNlci0x","value_b64":"c2lnbmVkIHVw"}"#,
        r#"{"operation":"produce","topic":"events","acks":"1","records":[{"key_b64":"dXNlci0x","value_b64":"YQ=="},{"value_b64":"Yg=="}]}"#,
        r#"{"operation":"produce","topic":"events","key_b64":"dXNlci0z","value_b64":"c2lnbmVkIHVw"}"#,
        r#"{"operation":"produce","topic":"events","records":[{"key_b64":"dXNlci0x","value_b64":"YQ=="},{"key_b64":"dXNlci0z","value_b64":"Yg=="}]}"#,
        r#"{"operation":"produce","topic":"events","value_b64":"bm8ga2V5"}"#,
        r#"{"operation":"begin_txn","transactional_id":"tx"}"#,
        r#"{"operation":"txn_produce","transactional_id":"tx","producer_epoch":0,"topic":"events","key_b64":"dXNlci0z","value_b64":"dA=="}"#,
        r#"{"operation":"commit_txn","transactional_id":"tx","producer_epoch":0}"#,
        r#"{"operation":"describe_topic_config","topic":"events"}"#,
        r#"{"operation":"alter_topic_config","topic":"events","set":{"retention.ms":"3600000","segment.bytes":2048}}"#,
        r#"{"operation":"alter_topic_config","topic":"events","set":{"segment.bytes":"10"}}"#,
        r#"{"operation":"alter_topic_config","topic":"events","delete":["segment.bytes"],"validate_only":true}"#,
        r#"{"operation":"alter_topic_config","topic":"events","set":{"retention.hours":"1"}}"#,
        r#"{"operation":"alter_topic_config","topic":"events","set":{"retention.ms":true}}"#,
        r#"{"operation":"describe_topic_config","topic":"events"}"#,
        r#"{"operation":"create_partitions","topic":"events","partitions":3}"#,
        r#"{"operation":"create_partitions","topic":"events","partitions":2}"#,
        r#"{"operation":"create_topic","topic":"tiny","partitions":1,"replication_factor":1,"config":{"segment.bytes":10}}"#,
        r#"{"operation":"create_topic","topic":"zipped","partitions":1,"replication_factor":1,"config":{"compression.type":"zstd","max.message.bytes":2048,"retention.ms":-1}}"#,
        r#"{"operation":"describe_topic_config","topic":"zipped"}"#,
        r#"{"operation":"create_topic","topic":"zapped","partitions":1,"replication_factor":1,"config":{"compression.type":"brotli"}}"#,
        r#"{"operation":"metadata","topic":"zapped"}"#,
        r#"{"operation":"join_group","group_id":"readers","member_id":"m1","topics":["events"]}"#,
        r#"{"operation":"list_groups"}"#,
        r#"{"operation":"alter_group_offsets","group_id":"readers","offsets":[{"topic":"events","partition":0,"offset":0}]}"#,
        r#"{"operation":"delete_group","group_id":"readers"}"#,
        r#"{"operation":"leave_group","group_id":"readers","member_id":"m1"}"#,
        r#"{"operation":"alter_group_offsets","group_id":"readers","offsets":[{"topic":"events","partition":0,"offset":1},{"topic":"events","partition":1,"offset":0}]}"#,
        r#"{"operation":"fetch_offsets","group_id":"readers"}"#,
        r#"{"operation":"delete_group","group_id":"readers"}"#,
        r#"{"operation":"delete_group","group_id":"readers"}"#,
        r#"{"operation":"delete_topic","topic":"events"}"#,
        r#"{"operation":"delete_topic","topic":"events"}"#,
        r#"{"operation":"delete_topic","topic":"__consumer_offsets"}"#,
        r#"{"operation":"list_topics"}"#,
    ])
    .await;
    insta::assert_snapshot!(t);
}

/// The transcript of `requests` sent to a fresh server hosting brokers 1,
/// 2 and 3 (not in lab mode).
async fn three_brokers_transcript(requests: &[&str]) -> String {
    let h = Harness::start(vec![1, 2, 3], 1, ServerOptions::default()).await;
    let mut c = h.client().await;
    let t = transcript(&h, &mut c, requests).await;
    h.stop().await;
    t
}

/// `broker_offline` and `broker_online`, which work outside lab mode.
#[tokio::test]
async fn snapshot_broker_operations() {
    let t = three_brokers_transcript(&[
        r#"{"operation":"create_topic","topic":"f","partitions":1,"replication_factor":3}"#,
        r#"{"operation":"broker_offline","broker_id":1}"#,
        r#"{"operation":"broker_offline","broker_id":7}"#,
        r#"{"operation":"broker_online","broker_id":1}"#,
        r#"{"operation":"broker_online","broker_id":1}"#,
    ])
    .await;
    insta::assert_snapshot!(t);
}

/// The partition moves of `mk-server partition` (issue 21), outside lab
/// mode: broker 3 offline keeps a move to it pending, so every answer is
/// deterministic.
#[tokio::test]
async fn snapshot_reassignment_operations() {
    let t = three_brokers_transcript(&[
        r#"{"operation":"create_topic","topic":"m","partitions":1,"replication_factor":2}"#,
        r#"{"operation":"broker_offline","broker_id":3}"#,
        r#"{"operation":"alter_partition_reassignment","topic":"m","partition":0,"replicas":[3,2]}"#,
        r#"{"operation":"metadata","topic":"m"}"#,
        r#"{"operation":"list_partition_reassignments"}"#,
        r#"{"operation":"list_partition_reassignments","topic":"nope"}"#,
        r#"{"operation":"alter_partition_reassignment","topic":"m","partition":0,"replicas":[1,9]}"#,
        r#"{"operation":"alter_partition_reassignment","topic":"m","partition":0,"replicas":[1,2,3],"allow_replication_factor_change":false}"#,
        r#"{"operation":"alter_partition_reassignment","topic":"m","partition":0,"replicas":null}"#,
        r#"{"operation":"alter_partition_reassignment","topic":"m","partition":0}"#,
        r#"{"operation":"alter_partition_reassignment","topic":"m","partition":0,"replicas":[2,1]}"#,
        r#"{"operation":"list_partition_reassignments","topic":"m"}"#,
    ])
    .await;
    insta::assert_snapshot!(t);
}

/// The SCRAM users of `mk-server user` (issue 25): no response carries a
/// password, a salt or a key.
#[tokio::test]
async fn snapshot_scram_user_operations() {
    let t = single_transcript(&[
        r#"{"operation":"upsert_scram_credential","user":"alice","mechanism":"SCRAM-SHA-512","password":"alice-secret"}"#,
        r#"{"operation":"upsert_scram_credential","user":"alice","mechanism":"SCRAM-SHA-256","password":"alice-secret","iterations":8192}"#,
        r#"{"operation":"upsert_scram_credential","user":"bob","mechanism":"SCRAM-SHA-512","password":"bob-secret","iterations":1000}"#,
        r#"{"operation":"upsert_scram_credential","user":"bob","mechanism":"SCRAM-SHA-1","password":"bob-secret"}"#,
        r#"{"operation":"describe_scram_credentials"}"#,
        r#"{"operation":"describe_scram_credentials","user":"bob"}"#,
        r#"{"operation":"delete_scram_credential","user":"alice","mechanism":"SCRAM-SHA-256"}"#,
        r#"{"operation":"delete_scram_credential","user":"alice","mechanism":"SCRAM-SHA-256"}"#,
        r#"{"operation":"delete_scram_credential","user":"alice"}"#,
        r#"{"operation":"describe_scram_credentials"}"#,
    ])
    .await;
    assert!(!t.contains("\"salt") && !t.contains("key"), "{t}");
    insta::assert_snapshot!(t);
}

#[tokio::test]
async fn snapshot_lab_operations() {
    let h = Harness::lab().await;
    let t = fresh_transcript(
        h,
        &[
            r#"{"operation":"create_topic","topic":"lab","partitions":1,"replication_factor":3,"config":{"segment.bytes":1024}}"#,
            r#"{"operation":"produce","topic":"lab","partition":0,"key_b64":"aw==","value_b64":"djE=","acks":"1"}"#,
            r#"{"operation":"produce","topic":"lab","partition":0,"key_b64":"aw==","value_b64":"djI=","acks":"1"}"#,
            r#"{"operation":"replicate_once"}"#,
            r#"{"operation":"describe_cluster"}"#,
            r#"{"operation":"remove_from_isr","topic":"lab","partition":0,"broker_id":3}"#,
            r#"{"operation":"promote","topic":"lab","partition":0,"broker_id":2}"#,
            r#"{"operation":"rejoin","topic":"lab","partition":0,"broker_id":1}"#,
            r#"{"operation":"replicate_once"}"#,
            r#"{"operation":"roll","topic":"lab","partition":0}"#,
            r#"{"operation":"compact","topic":"lab","delete_retention_ms":0}"#,
            r#"{"operation":"apply_retention","topic":"lab","retention_bytes":1}"#,
            r#"{"operation":"apply_retention","topic":"lab"}"#,
            r#"{"operation":"join_group","group_id":"g","member_id":"m1","topics":["lab"]}"#,
            "# advance 60000",
            r#"{"operation":"expire_group_members"}"#,
            r#"{"operation":"begin_txn","transactional_id":"slow"}"#,
            "# advance 120000",
            r#"{"operation":"expire_transactions"}"#,
            r#"{"operation":"flush_cycle"}"#,
            r#"{"operation":"metadata","topic":"lab"}"#,
        ],
    )
    .await;
    insta::assert_snapshot!(t);
}

#[tokio::test]
async fn snapshot_decoding_errors() {
    let t = single_transcript(&[
        "",
        "   ",
        "not json",
        r#"{"operation":"list_topics""#,
        "[1,2,3]",
        "42",
        r#""a string""#,
        r#"{"id":7}"#,
        r#"{"operation":7,"id":8}"#,
        r#"{"operation":"frobnicate","id":"x"}"#,
        r#"{"operation":"create_topic","topic":"t","partitions":1}"#,
        r#"{"operation":"create_topic","topic":"t","partitions":"1","replication_factor":1}"#,
        r#"{"operation":"create_topic","topic":"t","partitions":1.0,"replication_factor":1}"#,
        r#"{"operation":"create_topic","topic":"t","partitions":true,"replication_factor":1}"#,
        r#"{"operation":"create_topic","topic":"t","partitions":1180591620717411303424,"replication_factor":1}"#,
        r#"{"operation":"create_topic","topic":"t","partitions":-1,"replication_factor":1}"#,
        r#"{"operation":"create_topic","topic":"t","partitions":1,"replication_factor":1,"config":{"retention.hours":1}}"#,
        r#"{"operation":"create_topic","topic":7,"partitions":1,"replication_factor":1}"#,
        r#"{"operation":"produce","topic":"t","partition":-1,"value_b64":"eA=="}"#,
        r#"{"operation":"produce","topic":"t","partition":4294967296,"value_b64":"eA=="}"#,
        r#"{"operation":"produce","topic":"t","value_b64":"eA"}"#,
        r#"{"operation":"produce","topic":"t","value_b64":"e A=="}"#,
        r#"{"operation":"produce","topic":"t","value_b64":"_-8="}"#,
        r#"{"operation":"produce","topic":"t","value_b64":5}"#,
        r#"{"operation":"produce","topic":"t","value_b64":"eA==","acks":"2"}"#,
        r#"{"operation":"produce","topic":"t","value_b64":"eA==","acks":2}"#,
        r#"{"operation":"produce","topic":"t","value_b64":"eA==","acks":true}"#,
        r#"{"operation":"produce","topic":"t","records":[{"value_b64":"eA=="}],"value_b64":"eA=="}"#,
        r#"{"operation":"produce","topic":"t","records":[5]}"#,
        r#"{"operation":"produce","topic":"t","records":[{"headers":[{"value_b64":"eA=="}]}]}"#,
        r#"{"operation":"produce","topic":"t","records":[{"value_b64":"eA=="}],"producer_id":1}"#,
        r#"{"operation":"fetch","topic":"t","partition":0}"#,
        r#"{"operation":"fetch","topic":"t","partition":0,"offset":0,"isolation":"read_all"}"#,
        r#"{"operation":"fetch","topic":"t","partition":0,"offset":0,"max_bytes":-1}"#,
        r#"{"operation":"fetch","topic":"t","partition":0,"offset":0,"max_wait_ms":9999999999}"#,
        r#"{"operation":"join_group","group_id":"g","member_id":"m","topics":"t"}"#,
        r#"{"operation":"join_group","group_id":"g","member_id":"m","topics":[1]}"#,
        r#"{"operation":"join_group","group_id":"g","member_id":"m","topics":["t"],"assignor":"best"}"#,
        r#"{"operation":"commit_offsets","group_id":"g","member_id":"m","generation":1,"offsets":[{"topic":"t","partition":0,"offset":1},{"topic":"t","partition":0,"offset":2}]}"#,
        r#"{"operation":"list_offsets","topic":"t","partition":0,"at":"middle"}"#,
        r#"{"operation":"list_offsets","topic":"t","partition":0}"#,
        r#"{"operation":"txn_produce","transactional_id":"x","producer_epoch":2147483648,"topic":"t"}"#,
        r#"{"operation":"replicate_once","id":1}"#,
        r#"{"operation":"promote","topic":"t","partition":0,"broker_id":1}"#,
    ])
    .await;
    insta::assert_snapshot!(t);
}

#[tokio::test]
async fn snapshot_domain_errors() {
    let h = Harness::lab().await;
    let mut c = h.client().await;
    let t = transcript(
        &h,
        &mut c,
        &[
            r#"{"operation":"metadata","topic":"missing"}"#,
            r#"{"operation":"create_topic","topic":"bad/name","partitions":1,"replication_factor":1}"#,
            r#"{"operation":"create_topic","topic":"t","partitions":0,"replication_factor":1}"#,
            r#"{"operation":"create_topic","topic":"t","partitions":1,"replication_factor":4}"#,
            r#"{"operation":"create_topic","topic":"t","partitions":1,"replication_factor":3}"#,
            r#"{"operation":"create_topic","topic":"t","partitions":1,"replication_factor":3}"#,
            r#"{"operation":"create_topic","topic":"one","partitions":1,"replication_factor":1}"#,
            r#"{"operation":"produce","topic":"t","partition":5,"value_b64":"eA=="}"#,
            r#"{"operation":"produce","topic":"__consumer_offsets","value_b64":"eA=="}"#,
            r#"{"operation":"produce","topic":"t","records":[]}"#,
            r#"{"operation":"fetch","topic":"t","partition":0,"offset":5}"#,
            r#"{"operation":"fetch","topic":"t","partition":0,"offset":0,"max_records":-1}"#,
            r#"{"operation":"remove_from_isr","topic":"t","partition":0,"broker_id":2}"#,
            r#"{"operation":"remove_from_isr","topic":"t","partition":0,"broker_id":3}"#,
            r#"{"operation":"produce","topic":"t","value_b64":"eA==","acks":"all"}"#,
            r#"{"operation":"promote","topic":"t","partition":0,"broker_id":3}"#,
            r#"{"operation":"promote","topic":"t","partition":0,"broker_id":9}"#,
            r#"{"operation":"join_group","group_id":"g","member_id":"m1","topics":["one"]}"#,
            r#"{"operation":"heartbeat","group_id":"g","member_id":"m1","generation":7}"#,
            r#"{"operation":"heartbeat","group_id":"g","member_id":"ghost","generation":1}"#,
            r#"{"operation":"commit_offsets","group_id":"g","member_id":"m1","generation":1,"offsets":[{"topic":"t","partition":0,"offset":0}]}"#,
            r#"{"operation":"init_producer","name":"p"}"#,
            r#"{"operation":"produce","topic":"one","records":[{"value_b64":"eA=="}],"producer_id":1,"producer_epoch":0,"base_sequence":5}"#,
            r#"{"operation":"init_producer","name":"p"}"#,
            r#"{"operation":"produce","topic":"one","records":[{"value_b64":"eA=="}],"producer_id":1,"producer_epoch":0,"base_sequence":0}"#,
            r#"{"operation":"commit_txn","transactional_id":"nobody","producer_epoch":0}"#,
            r#"{"operation":"begin_txn","transactional_id":"tx"}"#,
            r#"{"operation":"begin_txn","transactional_id":"tx"}"#,
            r#"{"operation":"txn_produce","transactional_id":"tx","producer_epoch":0,"topic":"one","value_b64":"eA=="}"#,
        ],
    )
    .await;
    insta::assert_snapshot!(t);
    // A failed flush makes the cluster terminally FAILED; afterwards every
    // call is CLUSTER_FAILED with the original cause.
    h.cluster.failure_injector().fail_syncs(true);
    let t = transcript(
        &h,
        &mut c,
        &[
            r#"{"operation":"produce","topic":"one","value_b64":"eA=="}"#,
            r#"{"operation":"flush_cycle"}"#,
        ],
    )
    .await;
    let failed = transcript(&h, &mut c, &[r#"{"operation":"list_topics"}"#]).await;
    assert!(
        failed.contains(r#""code":"CLUSTER_FAILED""#),
        "after a failed flush: {failed}"
    );
    let dir = h.dir.path().display().to_string();
    insta::assert_snapshot!(t.replace(&dir, "<data_dir>"));
    within(h.server.shutdown()).await;
    let _ = h.cluster.lifecycle().close().await;
}

#[tokio::test]
async fn snapshot_closed_cluster_and_lab_disabled() {
    let h = Harness::single(ServerOptions::default()).await;
    let mut c = h.client().await;
    let mut t = transcript(
        &h,
        &mut c,
        &[
            r#"{"operation":"replicate_once"}"#,
            r#"{"operation":"flush_cycle","id":3}"#,
        ],
    )
    .await;
    h.cluster.lifecycle().close().await.unwrap();
    t.push_str(&transcript(&h, &mut c, &[r#"{"operation":"list_topics"}"#]).await);
    insta::assert_snapshot!(t);
    within(h.server.shutdown()).await;
}
