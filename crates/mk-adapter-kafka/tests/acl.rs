//! ACLs on the real server: Create/Describe/DeleteAcls (SECURITY_DISABLED
//! without the authorizer, INVALID_REQUEST, CLUSTER_AUTHORIZATION_FAILED
//! for a principal without ALTER on the cluster), and the per-API checks
//! over a SASL_PLAINTEXT listener with PLAIN users: topics, groups,
//! transactional ids and the cluster, allowed and denied, LITERAL and
//! PREFIXED patterns, DENY over ALLOW, super users, Metadata's filtering.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

mod common;

use bytes::Bytes;
use common::*;
use mk_adapter_kafka::api::key;
use mk_adapter_kafka::api::sasl::SaslOptions;
use mk_adapter_kafka::errors::KafkaCode;
use mk_adapter_kafka::messages::create_acls::{AclCreation, CreateAclsRequest, CreateAclsResponse};
use mk_adapter_kafka::messages::delete_acls::{
    DeleteAclsFilter, DeleteAclsRequest, DeleteAclsResponse,
};
use mk_adapter_kafka::messages::describe_acls::{DescribeAclsRequest, DescribeAclsResponse};
use mk_adapter_kafka::messages::describe_cluster::{
    DescribeClusterRequest, DescribeClusterResponse,
};
use mk_adapter_kafka::messages::fetch::{FetchPartition, FetchRequest, FetchResponse, FetchTopic};
use mk_adapter_kafka::messages::init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
use mk_adapter_kafka::messages::join_group::{
    JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse,
};
use mk_adapter_kafka::messages::metadata::{
    MetadataRequest, MetadataRequestTopic, MetadataResponse,
};
use mk_adapter_kafka::messages::produce::ProduceRequest;
use mk_adapter_kafka::mk_cluster::{
    AuthorizerConfig, BrokerCluster, ManualClock, MiniKafkaConfig, PlainUsers, SaslMechanism,
};
use mk_adapter_kafka::{KafkaOptions, SecurityProtocol};
use std::sync::Arc;

// Kafka's codes.
const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const CLUSTER: i8 = 4;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
const ALL: i8 = 2;
const READ: i8 = 3;
const WRITE: i8 = 4;
const DESCRIBE: i8 = 8;
const DENY: i8 = 2;
const ALLOW: i8 = 3;
const ANY: i8 = 1;
/// The one name the cluster resource has.
const KAFKA_CLUSTER: &str = "kafka-cluster";

struct Secured {
    net: Listeners,
}

impl Secured {
    /// One broker, a SASL_PLAINTEXT listener with PLAIN users admin (a
    /// super user), alice and bob, and the given authorizer.
    async fn start(authorizer: Option<AuthorizerConfig>) -> Secured {
        let dir = tempfile::tempdir().unwrap();
        let mut config = MiniKafkaConfig::new(dir.path().join("data"));
        config.authorizer = authorizer;
        let cluster =
            BrokerCluster::open_with_clock(config, Arc::new(ManualClock::new(1_700_000_000_000)))
                .unwrap();
        for t in ["alice-orders", "alice-secret", "bob-orders"] {
            cluster.topics().create(t, 1, 1).unwrap();
        }
        let options = KafkaOptions {
            sasl: SaslOptions {
                mechanisms: vec![SaslMechanism::Plain],
                plain_users: Some(Arc::new(
                    PlainUsers::parse("admin:a\nalice:a\nbob:b\n").unwrap(),
                )),
            },
            ..KafkaOptions::default()
        };
        let protocols = [SecurityProtocol::SaslPlaintext];
        let net = Listeners::start(dir, cluster, &protocols, &[1], options).await;
        Secured { net }
    }

    /// The super user admin's connection to a broker whose authorizer
    /// (super user admin) has `acls`, which it created.
    async fn granting(acls: Vec<AclCreation>) -> (Secured, Conn) {
        let s = Secured::start(authorizer("User:admin")).await;
        let mut admin = s.login("admin", "a").await;
        let codes = create(&mut admin, acls).await;
        assert!(codes.iter().all(|c| *c == KafkaCode::NONE), "{codes:?}");
        (s, admin)
    }

    fn cluster(&self) -> &BrokerCluster {
        &self.net.cluster
    }

    /// A connection authenticated as `user`.
    async fn login(&self, user: &str, password: &str) -> Conn {
        let mut c = Conn::connect(self.net.addr(SecurityProtocol::SaslPlaintext, 1)).await;
        let h = handshake(&mut c, 1, "PLAIN").await;
        assert_eq!(h.error_code, KafkaCode::NONE);
        let a = authenticate(&mut c, format!("\0{user}\0{password}").as_bytes()).await;
        assert_eq!(a.error_code, KafkaCode::NONE);
        c
    }

    async fn stop(self) {
        self.net.stop().await;
    }
}

fn acl(rt: i8, name: &str, pattern: i8, principal: &str, op: i8, permission: i8) -> AclCreation {
    AclCreation {
        resource_type: rt,
        resource_name: name.into(),
        resource_pattern_type: pattern,
        principal: principal.into(),
        host: "*".into(),
        operation: op,
        permission_type: permission,
    }
}

async fn create(c: &mut Conn, creations: Vec<AclCreation>) -> Vec<KafkaCode> {
    let r: CreateAclsResponse = c
        .call(key::CREATE_ACLS, 3, &CreateAclsRequest { creations })
        .await;
    r.results.into_iter().map(|r| r.error_code).collect()
}

/// alice logs in; her CreateAcls (of `creation`), DescribeAcls (of every
/// ACL) and DeleteAcls (of a default filter) are all answered `code` as a
/// whole. Returns her connection.
async fn alice_acl_apis_answer(s: &Secured, creation: AclCreation, code: KafkaCode) -> Conn {
    let mut c = s.login("alice", "a").await;
    assert_eq!(create(&mut c, vec![creation]).await, [code]);
    let d: DescribeAclsResponse = c.call(key::DESCRIBE_ACLS, 3, &everything()).await;
    assert_eq!(d.error_code, code);
    let delete = DeleteAclsRequest {
        filters: vec![DeleteAclsFilter::default()],
    };
    let del: DeleteAclsResponse = c.call(key::DELETE_ACLS, 3, &delete).await;
    assert_eq!(del.filter_results[0].error_code, code);
    c
}

fn everything() -> DescribeAclsRequest {
    DescribeAclsRequest {
        resource_type_filter: ANY,
        resource_name_filter: None,
        pattern_type_filter: ANY,
        principal_filter: None,
        host_filter: None,
        operation: ANY,
        permission_type: ANY,
    }
}

fn authorizer(super_users: &str) -> Option<AuthorizerConfig> {
    Some(AuthorizerConfig {
        super_users: AuthorizerConfig::parse_super_users(super_users).unwrap(),
        allow_everyone_if_no_acl_found: false,
    })
}

#[tokio::test]
async fn without_the_authorizer_the_acl_apis_are_security_disabled() {
    let s = Secured::start(None).await;
    let bobs = acl(TOPIC, "t", LITERAL, "User:bob", READ, ALLOW);
    let mut c = alice_acl_apis_answer(&s, bobs, KafkaCode::SECURITY_DISABLED).await;
    // And every request is allowed, as before.
    let m: MetadataResponse = c.call(key::METADATA, 12, &all_topics()).await;
    assert_eq!(m.topics.len(), 3);
    s.stop().await;
}

#[tokio::test]
async fn acls_are_created_described_and_deleted_by_those_allowed_to() {
    let s = Secured::start(authorizer("User:admin")).await;
    let mut admin = s.login("admin", "a").await;
    let codes = create(
        &mut admin,
        vec![
            acl(TOPIC, "alice-", PREFIXED, "User:alice", READ, ALLOW),
            acl(TOPIC, "alice-", PREFIXED, "User:alice", WRITE, ALLOW),
            // Kafka refuses these: CLUSTER has one name, a principal is
            // Type:name, a binding names one operation.
            acl(CLUSTER, "other", LITERAL, "User:alice", ALL, ALLOW),
            acl(TOPIC, "t", LITERAL, "alice", READ, ALLOW),
            acl(TOPIC, "t", LITERAL, "User:alice", ANY, ALLOW),
            acl(TOPIC, "t", 0, "User:alice", READ, ALLOW),
        ],
    )
    .await;
    assert_eq!(
        codes,
        [
            KafkaCode::NONE,
            KafkaCode::NONE,
            KafkaCode::INVALID_REQUEST,
            KafkaCode::INVALID_REQUEST,
            KafkaCode::INVALID_REQUEST,
            KafkaCode::INVALID_REQUEST
        ]
    );
    let d: DescribeAclsResponse = admin.call(key::DESCRIBE_ACLS, 3, &everything()).await;
    assert_eq!(d.error_code, KafkaCode::NONE);
    assert_eq!(d.resources.len(), 1, "grouped by resource pattern");
    assert_eq!(d.resources[0].resource_name, "alice-");
    assert_eq!(d.resources[0].pattern_type, PREFIXED);
    assert_eq!(d.resources[0].acls.len(), 2);
    // A MATCH filter finds the prefixed ACL for a resource it covers.
    let matching: DescribeAclsResponse = admin
        .call(
            key::DESCRIBE_ACLS,
            3,
            &DescribeAclsRequest {
                resource_type_filter: TOPIC,
                resource_name_filter: Some("alice-orders".into()),
                pattern_type_filter: 2,
                ..everything()
            },
        )
        .await;
    assert_eq!(matching.resources.len(), 1);
    // alice may neither change nor see ACLs (no ALTER / DESCRIBE on the
    // cluster); an unknown filter code is INVALID_REQUEST.
    let on_bobs = acl(TOPIC, "bob-", PREFIXED, "User:alice", ALL, ALLOW);
    alice_acl_apis_answer(&s, on_bobs, KafkaCode::CLUSTER_AUTHORIZATION_FAILED).await;
    let bad: DescribeAclsResponse = admin
        .call(
            key::DESCRIBE_ACLS,
            3,
            &DescribeAclsRequest {
                operation: 0,
                ..everything()
            },
        )
        .await;
    assert_eq!(bad.error_code, KafkaCode::INVALID_REQUEST);
    // Deleting: the WRITE ACL goes, the answer names it.
    let del: DeleteAclsResponse = admin
        .call(
            key::DELETE_ACLS,
            3,
            &DeleteAclsRequest {
                filters: vec![DeleteAclsFilter {
                    resource_type_filter: TOPIC,
                    resource_name_filter: None,
                    pattern_type_filter: ANY,
                    principal_filter: Some("User:alice".into()),
                    host_filter: None,
                    operation: WRITE,
                    permission_type: ANY,
                }],
            },
        )
        .await;
    assert_eq!(del.filter_results[0].error_code, KafkaCode::NONE);
    assert_eq!(del.filter_results[0].matching_acls.len(), 1);
    assert_eq!(del.filter_results[0].matching_acls[0].operation, WRITE);
    let d: DescribeAclsResponse = admin.call(key::DESCRIBE_ACLS, 3, &everything()).await;
    assert_eq!(d.resources[0].acls.len(), 1);
    s.stop().await;
}

/// One entry per topic alice's requests name: her own and bob's.
fn both_topics<T>(entry: impl Fn(&str) -> T) -> Vec<T> {
    ["alice-orders", "bob-orders"].map(entry).into()
}

/// What a request for topic `name` is answered when only `allowed` is.
fn only_allowed(allowed: &str, name: &str) -> KafkaCode {
    if name == allowed {
        KafkaCode::NONE
    } else {
        KafkaCode::TOPIC_AUTHORIZATION_FAILED
    }
}

fn all_topics() -> MetadataRequest {
    MetadataRequest {
        topics: None,
        allow_auto_topic_creation: false,
        include_cluster_authorized_operations: false,
        include_topic_authorized_operations: true,
    }
}

fn named(names: &[&str], auto_create: bool) -> MetadataRequest {
    MetadataRequest {
        topics: Some(
            names
                .iter()
                .map(|n| MetadataRequestTopic {
                    name: Some((*n).into()),
                    ..Default::default()
                })
                .collect(),
        ),
        allow_auto_topic_creation: auto_create,
        include_cluster_authorized_operations: true,
        include_topic_authorized_operations: false,
    }
}

fn produce(topic: &str, transactional_id: Option<&str>) -> ProduceRequest {
    ProduceRequest {
        transactional_id: transactional_id.map(str::to_string),
        ..values_request(topic, 0, -1, &["v"])
    }
}

async fn produce_code(c: &mut Conn, topic: &str) -> KafkaCode {
    c.produce_code(9, &produce(topic, None)).await
}

async fn fetch_code(c: &mut Conn, topic: &str) -> KafkaCode {
    let req = FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset: 0,
                partition_max_bytes: 1 << 20,
                current_leader_epoch: -1,
                log_start_offset: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r: FetchResponse = c.call(key::FETCH, 12, &req).await;
    r.responses[0].partitions[0].error_code
}

async fn join_code(c: &mut Conn, group: &str) -> KafkaCode {
    let req = JoinGroupRequest {
        group_id: group.into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        member_id: String::new(),
        group_instance_id: None,
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: Bytes::new(),
        }],
        reason: None,
    };
    let r: JoinGroupResponse = c.call(key::JOIN_GROUP, 5, &req).await;
    r.error_code
}

#[tokio::test]
async fn each_api_is_authorized_as_kafka_authorizes_it() {
    let (s, mut admin) = Secured::granting(vec![
        // alice: everything on her prefix but one topic denied.
        acl(TOPIC, "alice-", PREFIXED, "User:alice", ALL, ALLOW),
        acl(TOPIC, "alice-secret", LITERAL, "User:alice", WRITE, DENY),
        acl(GROUP, "alice-", PREFIXED, "User:alice", READ, ALLOW),
        // bob: may read bob-orders only, and describe the cluster.
        acl(TOPIC, "bob-orders", LITERAL, "User:bob", READ, ALLOW),
        acl(CLUSTER, KAFKA_CLUSTER, LITERAL, "User:bob", DESCRIBE, ALLOW),
    ])
    .await;
    let mut alice = s.login("alice", "a").await;
    let mut bob = s.login("bob", "b").await;

    // (who, API, topic, answer). Produce needs WRITE on the topic: DENY
    // wins over the prefixed ALLOW, READ does not grant WRITE and the super
    // user needs no ACL. Fetch needs READ.
    let (taf, none) = (KafkaCode::TOPIC_AUTHORIZATION_FAILED, KafkaCode::NONE);
    let cases = [
        ("alice", key::PRODUCE, "alice-orders", none),
        ("alice", key::PRODUCE, "alice-secret", taf),
        ("alice", key::PRODUCE, "bob-orders", taf),
        ("bob", key::PRODUCE, "bob-orders", taf),
        ("admin", key::PRODUCE, "bob-orders", none),
        ("bob", key::FETCH, "bob-orders", none),
        ("bob", key::FETCH, "alice-orders", taf),
        ("alice", key::FETCH, "alice-secret", none),
    ];
    for (who, api, topic, expected) in cases {
        let c = match who {
            "alice" => &mut alice,
            "bob" => &mut bob,
            _ => &mut admin,
        };
        let got = if api == key::PRODUCE {
            produce_code(c, topic).await
        } else {
            fetch_code(c, topic).await
        };
        assert_eq!(got, expected, "{who}: API {api} on {topic}");
    }
    // A transactional produce needs WRITE on the transactional id.
    assert_eq!(
        alice
            .produce_code(9, &produce("alice-orders", Some("alice-tx")))
            .await,
        KafkaCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    );

    // Metadata: a listing shows only what the principal may DESCRIBE
    // (READ and WRITE imply it), with its authorized operations; a named
    // topic it may not see is TOPIC_AUTHORIZATION_FAILED.
    let m: MetadataResponse = alice.call(key::METADATA, 12, &all_topics()).await;
    let mut names: Vec<_> = m.topics.iter().filter_map(|t| t.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["alice-orders", "alice-secret"]);
    let bits = m.topics[0].topic_authorized_operations;
    assert!(
        bits & (1 << READ) != 0 && bits & (1 << DESCRIBE) != 0,
        "{bits:b}"
    );
    let m: MetadataResponse = bob.call(key::METADATA, 12, &all_topics()).await;
    assert_eq!(m.topics.len(), 1);
    assert_eq!(m.topics[0].name.as_deref(), Some("bob-orders"));
    let bits = m.topics[0].topic_authorized_operations;
    assert!(
        bits & (1 << READ) != 0 && bits & (1 << WRITE) == 0,
        "{bits:b}"
    );
    let m: MetadataResponse = bob
        .call(
            key::METADATA,
            12,
            &named(&["bob-orders", "alice-orders"], false),
        )
        .await;
    assert_eq!(m.topics.len(), 2);
    let code_of = |name: &str| {
        m.topics
            .iter()
            .find(|t| t.name.as_deref() == Some(name))
            .unwrap()
            .error_code
    };
    assert_eq!(code_of("bob-orders"), KafkaCode::NONE);
    assert_eq!(
        code_of("alice-orders"),
        KafkaCode::TOPIC_AUTHORIZATION_FAILED
    );
    // DescribeCluster: DESCRIBE on the cluster, with its operations.
    let dc = DescribeClusterRequest {
        include_cluster_authorized_operations: true,
        ..Default::default()
    };
    let r: DescribeClusterResponse = bob.call(key::DESCRIBE_CLUSTER, 1, &dc).await;
    assert_eq!(r.error_code, KafkaCode::NONE);
    assert_eq!(r.cluster_authorized_operations, 1 << DESCRIBE);
    let r: DescribeClusterResponse = alice.call(key::DESCRIBE_CLUSTER, 1, &dc).await;
    assert_eq!(r.error_code, KafkaCode::CLUSTER_AUTHORIZATION_FAILED);
    // Auto-creation needs CREATE: alice may (ALL on her prefix), bob not.
    let m: MetadataResponse = bob
        .call(key::METADATA, 12, &named(&["bob-new"], true))
        .await;
    assert_eq!(
        m.topics[0].error_code,
        KafkaCode::TOPIC_AUTHORIZATION_FAILED
    );
    assert!(s.cluster().topics().describe("bob-new").is_err());
    let m: MetadataResponse = alice
        .call(key::METADATA, 12, &named(&["alice-new"], true))
        .await;
    assert_eq!(m.topics[0].error_code, KafkaCode::NONE);
    assert!(s.cluster().topics().describe("alice-new").is_ok());

    // Groups: READ on the group.
    assert_eq!(
        join_code(&mut bob, "alice-group").await,
        KafkaCode::GROUP_AUTHORIZATION_FAILED
    );
    assert_ne!(
        join_code(&mut alice, "alice-group").await,
        KafkaCode::GROUP_AUTHORIZATION_FAILED
    );

    // An idempotent producer needs IDEMPOTENT_WRITE on the cluster or
    // WRITE on some topic: alice has the latter, bob neither.
    let idempotent = InitProducerIdRequest {
        transactional_id: None,
        transaction_timeout_ms: -1,
        producer_id: -1,
        producer_epoch: -1,
    };
    let r: InitProducerIdResponse = alice.call(key::INIT_PRODUCER_ID, 4, &idempotent).await;
    assert_eq!(r.error_code, KafkaCode::NONE);
    let r: InitProducerIdResponse = bob.call(key::INIT_PRODUCER_ID, 4, &idempotent).await;
    assert_eq!(r.error_code, KafkaCode::CLUSTER_AUTHORIZATION_FAILED);
    let r: InitProducerIdResponse = alice
        .call(
            key::INIT_PRODUCER_ID,
            4,
            &InitProducerIdRequest {
                transactional_id: Some("alice-tx".into()),
                transaction_timeout_ms: 60_000,
                ..idempotent
            },
        )
        .await;
    assert_eq!(
        r.error_code,
        KafkaCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    );
    s.stop().await;
}

#[tokio::test]
async fn everyone_is_allowed_where_no_acl_is_found_only_when_configured() {
    for allow in [false, true] {
        let s = Secured::start(Some(AuthorizerConfig {
            super_users: Default::default(),
            allow_everyone_if_no_acl_found: allow,
        }))
        .await;
        let mut bob = s.login("bob", "b").await;
        let expected = if allow {
            KafkaCode::NONE
        } else {
            KafkaCode::TOPIC_AUTHORIZATION_FAILED
        };
        assert_eq!(produce_code(&mut bob, "bob-orders").await, expected);
        s.stop().await;
    }
}

#[tokio::test]
async fn describe_topic_partitions_client_quotas_and_elections_are_authorized_as_kafka_does() {
    use mk_adapter_kafka::messages::alter_client_quotas::{
        AlterClientQuotasRequest, AlterClientQuotasResponse, EntityData, EntryData, OpData,
    };
    use mk_adapter_kafka::messages::describe_client_quotas::{
        DescribeClientQuotasRequest, DescribeClientQuotasResponse,
    };
    use mk_adapter_kafka::messages::describe_topic_partitions::{
        DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, TopicRequest,
    };
    use mk_adapter_kafka::messages::elect_leaders::{
        ElectLeadersRequest, ElectLeadersResponse, TopicPartitions,
    };
    let (s, mut admin) = Secured::granting(vec![acl(
        TOPIC,
        "alice-",
        PREFIXED,
        "User:alice",
        DESCRIBE,
        ALLOW,
    )])
    .await;
    let mut alice = s.login("alice", "a").await;
    let ask = |names: &[&str]| DescribeTopicPartitionsRequest {
        topics: names
            .iter()
            .map(|n| TopicRequest {
                name: n.to_string(),
            })
            .collect(),
        ..Default::default()
    };
    let answered = |r: &DescribeTopicPartitionsResponse| -> Vec<(String, KafkaCode, bool)> {
        let mut v: Vec<_> = r
            .topics
            .iter()
            .map(|t| {
                (
                    t.name.clone().unwrap_or_default(),
                    t.error_code,
                    t.topic_authorized_operations > 0,
                )
            })
            .collect();
        v.sort();
        v
    };
    // All topics: only those alice may describe, with their operations.
    let r: DescribeTopicPartitionsResponse = alice
        .call(key::DESCRIBE_TOPIC_PARTITIONS, 0, &ask(&[]))
        .await;
    assert_eq!(
        answered(&r),
        vec![
            ("alice-orders".into(), KafkaCode::NONE, true),
            ("alice-secret".into(), KafkaCode::NONE, true),
        ]
    );
    // By name: a denied topic is TOPIC_AUTHORIZATION_FAILED, existing or not.
    let r: DescribeTopicPartitionsResponse = alice
        .call(
            key::DESCRIBE_TOPIC_PARTITIONS,
            0,
            &ask(&["bob-orders", "alice-orders", "nobody"]),
        )
        .await;
    assert_eq!(
        answered(&r),
        vec![
            ("alice-orders".into(), KafkaCode::NONE, true),
            (
                "bob-orders".into(),
                KafkaCode::TOPIC_AUTHORIZATION_FAILED,
                false
            ),
            (
                "nobody".into(),
                KafkaCode::TOPIC_AUTHORIZATION_FAILED,
                false
            ),
        ]
    );
    // Quotas: DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster.
    let alter = AlterClientQuotasRequest {
        entries: vec![EntryData {
            entity: vec![EntityData {
                entity_type: "user".into(),
                entity_name: Some("alice".into()),
            }],
            ops: vec![OpData {
                key: "producer_byte_rate".into(),
                value: 10.0,
                remove: false,
            }],
        }],
        validate_only: false,
    };
    let describe = DescribeClientQuotasRequest {
        components: vec![],
        strict: false,
    };
    let r: AlterClientQuotasResponse = alice.call(key::ALTER_CLIENT_QUOTAS, 1, &alter).await;
    assert_eq!(
        r.entries[0].error_code,
        KafkaCode::CLUSTER_AUTHORIZATION_FAILED
    );
    let r: DescribeClientQuotasResponse =
        alice.call(key::DESCRIBE_CLIENT_QUOTAS, 1, &describe).await;
    assert_eq!(r.error_code, KafkaCode::CLUSTER_AUTHORIZATION_FAILED);
    assert!(r.entries.is_none());
    // ElectLeaders: ALTER on the cluster.
    let elect = ElectLeadersRequest {
        election_type: 0,
        topic_partitions: Some(vec![TopicPartitions {
            topic: "alice-orders".into(),
            partitions: vec![0],
        }]),
        timeout_ms: 1000,
    };
    let r: ElectLeadersResponse = alice.call(key::ELECT_LEADERS, 2, &elect).await;
    assert_eq!(r.error_code, KafkaCode::CLUSTER_AUTHORIZATION_FAILED);
    assert_eq!(
        r.replica_election_results[0].partition_result[0].error_code,
        KafkaCode::CLUSTER_AUTHORIZATION_FAILED
    );
    let r: ElectLeadersResponse = admin.call(key::ELECT_LEADERS, 2, &elect).await;
    assert_eq!(
        r.replica_election_results[0].partition_result[0].error_code,
        KafkaCode(84),
        "the one broker already leads: no election needed"
    );
    let r: AlterClientQuotasResponse = admin.call(key::ALTER_CLIENT_QUOTAS, 1, &alter).await;
    assert_eq!(r.entries[0].error_code, KafkaCode::NONE);
    let r: DescribeClientQuotasResponse =
        admin.call(key::DESCRIBE_CLIENT_QUOTAS, 1, &describe).await;
    assert_eq!(r.entries.map(|e| e.len()), Some(1));
    s.stop().await;
}

#[tokio::test]
async fn group_admin_and_config_requests_are_narrowed_to_what_is_allowed() {
    use mk_adapter_kafka::messages::alter_user_scram_credentials::{
        AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
        ScramCredentialDeletion,
    };
    use mk_adapter_kafka::messages::create_topics::{
        CreatableTopic, CreateTopicsRequest, CreateTopicsResponse,
    };
    use mk_adapter_kafka::messages::delete_topics::{DeleteTopicsRequest, DeleteTopicsResponse};
    use mk_adapter_kafka::messages::describe_configs::{
        DescribeConfigsRequest, DescribeConfigsResource, DescribeConfigsResponse,
    };
    use mk_adapter_kafka::messages::list_groups::{ListGroupsRequest, ListGroupsResponse};
    use mk_adapter_kafka::messages::list_offsets::{
        ListOffsetsPartition, ListOffsetsRequest, ListOffsetsResponse, ListOffsetsTopic,
    };
    use mk_adapter_kafka::messages::offset_commit::{
        OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
        OffsetCommitResponse,
    };
    use mk_adapter_kafka::messages::offset_fetch::{OffsetFetchRequest, OffsetFetchResponse};

    let (s, mut admin) = Secured::granting(vec![
        acl(TOPIC, "alice-", PREFIXED, "User:alice", ALL, ALLOW),
        acl(GROUP, "alice-", PREFIXED, "User:alice", ALL, ALLOW),
    ])
    .await;
    let mut alice = s.login("alice", "a").await;

    // OffsetCommit: the allowed topic is committed, the other refused.
    let commit = |group: &str| OffsetCommitRequest {
        group_id: group.into(),
        generation_id_or_member_epoch: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_time_ms: -1,
        topics: both_topics(|name| OffsetCommitRequestTopic {
            name: name.into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 0,
                committed_leader_epoch: -1,
                committed_metadata: None,
            }],
        }),
    };
    let r: OffsetCommitResponse = alice
        .call(key::OFFSET_COMMIT, 8, &commit("alice-group"))
        .await;
    let code =
        |name: &str| r.topics.iter().find(|t| t.name == name).unwrap().partitions[0].error_code;
    assert_eq!(code("alice-orders"), KafkaCode::NONE);
    assert_eq!(code("bob-orders"), KafkaCode::TOPIC_AUTHORIZATION_FAILED);
    // Bob's group refuses alice every partition; the super user commits to
    // it, so there is one to list.
    for (c, expected) in [
        (&mut alice, KafkaCode::GROUP_AUTHORIZATION_FAILED),
        (&mut admin, KafkaCode::NONE),
    ] {
        let r: OffsetCommitResponse = c.call(key::OFFSET_COMMIT, 8, &commit("bob-group")).await;
        let codes: Vec<_> = r
            .topics
            .iter()
            .map(|t| t.partitions[0].error_code)
            .collect();
        assert_eq!(codes, [expected; 2]);
    }

    // OffsetFetch of all topics leaves out the ones alice may not see; of
    // bob's group it is GROUP_AUTHORIZATION_FAILED.
    let fetch = |group: &str| OffsetFetchRequest {
        group_id: group.into(),
        topics: None,
        ..Default::default()
    };
    let r: OffsetFetchResponse = alice
        .call(key::OFFSET_FETCH, 7, &fetch("alice-group"))
        .await;
    assert_eq!(r.error_code, KafkaCode::NONE);
    let names: Vec<_> = r.topics.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["alice-orders"]);
    let r: OffsetFetchResponse = alice.call(key::OFFSET_FETCH, 7, &fetch("bob-group")).await;
    assert_eq!(r.error_code, KafkaCode::GROUP_AUTHORIZATION_FAILED);
    assert!(r.topics.is_empty());

    // ListGroups: only the groups alice may describe.
    let r: ListGroupsResponse = alice
        .call(key::LIST_GROUPS, 4, &ListGroupsRequest::default())
        .await;
    let groups: Vec<_> = r.groups.iter().map(|g| g.group_id.as_str()).collect();
    assert_eq!(groups, ["alice-group"]);
    let r: ListGroupsResponse = admin
        .call(key::LIST_GROUPS, 4, &ListGroupsRequest::default())
        .await;
    assert_eq!(r.groups.len(), 2);

    // ListOffsets: DESCRIBE on the topic.
    let lo = ListOffsetsRequest {
        replica_id: -1,
        topics: both_topics(|name| ListOffsetsTopic {
            name: name.into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                current_leader_epoch: -1,
                timestamp: -1,
            }],
        }),
        ..Default::default()
    };
    let r: ListOffsetsResponse = alice.call(key::LIST_OFFSETS, 7, &lo).await;
    for t in &r.topics {
        let expected = only_allowed("alice-orders", &t.name);
        assert_eq!(t.partitions[0].error_code, expected, "{}", t.name);
    }
    assert_eq!(r.topics.len(), 2);

    // CreateTopics: CREATE on the topic (her prefix) is enough; bob's is refused.
    let ct = CreateTopicsRequest {
        topics: ["alice-new", "bob-new"]
            .iter()
            .map(|t| CreatableTopic {
                name: (*t).into(),
                num_partitions: 1,
                replication_factor: 1,
                ..Default::default()
            })
            .collect(),
        timeout_ms: 5_000,
        validate_only: false,
    };
    let r: CreateTopicsResponse = alice.call(key::CREATE_TOPICS, 5, &ct).await;
    for t in &r.topics {
        assert_eq!(
            t.error_code,
            only_allowed("alice-new", &t.name),
            "{}",
            t.name
        );
    }
    assert!(s.cluster().topics().describe("bob-new").is_err());

    // DeleteTopics: DELETE on each topic.
    let dt = DeleteTopicsRequest {
        topic_names: vec!["alice-new".into(), "bob-orders".into()],
        timeout_ms: 5_000,
        ..Default::default()
    };
    let r: DeleteTopicsResponse = alice.call(key::DELETE_TOPICS, 4, &dt).await;
    for t in &r.responses {
        let name = t.name.as_deref().unwrap_or_default();
        assert_eq!(t.error_code, only_allowed("alice-new", name), "{name}");
    }
    assert!(s.cluster().topics().describe("bob-orders").is_ok());

    // DescribeConfigs: DESCRIBE_CONFIGS on the topic, on the cluster for a broker.
    let dc = DescribeConfigsRequest {
        resources: vec![
            DescribeConfigsResource {
                resource_type: 2,
                resource_name: "alice-orders".into(),
                configuration_keys: None,
            },
            DescribeConfigsResource {
                resource_type: 2,
                resource_name: "bob-orders".into(),
                configuration_keys: None,
            },
            DescribeConfigsResource {
                resource_type: 4,
                resource_name: "1".into(),
                configuration_keys: None,
            },
        ],
        ..Default::default()
    };
    let r: DescribeConfigsResponse = alice.call(key::DESCRIBE_CONFIGS, 4, &dc).await;
    let code = |name: &str| {
        r.results
            .iter()
            .find(|x| x.resource_name == name)
            .unwrap()
            .error_code
    };
    assert_eq!(code("alice-orders"), KafkaCode::NONE);
    assert_eq!(code("bob-orders"), KafkaCode::TOPIC_AUTHORIZATION_FAILED);
    assert_eq!(code("1"), KafkaCode::CLUSTER_AUTHORIZATION_FAILED);

    // SCRAM credentials: ALTER on the cluster.
    let r: AlterUserScramCredentialsResponse = alice
        .call(
            key::ALTER_USER_SCRAM_CREDENTIALS,
            0,
            &AlterUserScramCredentialsRequest {
                deletions: vec![ScramCredentialDeletion {
                    name: "bob".into(),
                    mechanism: 2,
                }],
                upsertions: Vec::new(),
            },
        )
        .await;
    assert_eq!(r.results.len(), 1);
    assert_eq!(
        r.results[0].error_code,
        KafkaCode::CLUSTER_AUTHORIZATION_FAILED
    );
    s.stop().await;
}

#[tokio::test]
async fn partition_reassignments_need_alter_and_describe_on_the_cluster() {
    use mk_adapter_kafka::messages::alter_partition_reassignments::{
        AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
        ReassignablePartition, ReassignableTopic,
    };
    use mk_adapter_kafka::messages::list_partition_reassignments::{
        ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
    };
    let s = Secured::start(authorizer("User:admin")).await;
    let mut admin = s.login("admin", "a").await;
    let mut alice = s.login("alice", "a").await;
    let cancel = AlterPartitionReassignmentsRequest {
        timeout_ms: 1000,
        allow_replication_factor_change: true,
        topics: vec![ReassignableTopic {
            name: "alice-orders".into(),
            partitions: vec![ReassignablePartition {
                partition_index: 0,
                replicas: None,
            }],
        }],
    };
    let list = ListPartitionReassignmentsRequest {
        timeout_ms: 1000,
        topics: None,
    };
    // (who, the answer's code, the partition's, the listing's): alice has
    // neither ALTER nor DESCRIBE on the cluster; the super user is allowed,
    // and there is nothing to cancel.
    let refused = KafkaCode::CLUSTER_AUTHORIZATION_FAILED;
    for (c, alter, partition, listing) in [
        (&mut alice, refused, refused, refused),
        (&mut admin, KafkaCode::NONE, KafkaCode(85), KafkaCode::NONE),
    ] {
        let r: AlterPartitionReassignmentsResponse =
            c.call(key::ALTER_PARTITION_REASSIGNMENTS, 1, &cancel).await;
        assert_eq!(r.error_code, alter);
        assert_eq!(r.responses[0].partitions[0].error_code, partition);
        let r: ListPartitionReassignmentsResponse =
            c.call(key::LIST_PARTITION_REASSIGNMENTS, 0, &list).await;
        assert_eq!((r.error_code, r.topics.len()), (listing, 0));
    }
    s.stop().await;
}
