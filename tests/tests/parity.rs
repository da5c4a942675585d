//! Parity of the two adapters (spec 06): every scenario of the corpus in
//! `tests/parity/*.json` runs against the in-process Direct adapter and
//! against a live JsonTcpServer on loopback (through JsonTcpClient). Each
//! step must give the same observable result on both sides (success value
//! or error code and message), match the corpus's expected outcome, and the
//! final cluster state (topics, partitions with LEOs, HWs, ISR and epochs,
//! every record's bytes, committed offsets) must be identical.
//!
//! The corpus is data: each file is `{"name", "brokers", "min_insync_replicas",
//! "steps": [...]}` where a step is `{"request": <wire request>, "expect":
//! <subset of the wire response>}`, `{"request": .., "expect_error": CODE}`
//! or `{"advance_ms": N}` (moves both manual clocks). Both sides run in lab
//! mode with the background drivers paused, so every step is explicit.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

use mk_adapter_direct::{DirectAdmin, DirectClient};
use mk_adapter_jsontcp::json_code;
use mk_adapter_jsontcp::mk_cluster::{
    BrokerCluster, ClusterError, ErrorCode, FetchRequest, ManualClock, MiniKafkaConfig,
    ProducerIdentity, TopicPartition,
};
use mk_adapter_jsontcp::{
    ClientError, JsonTcpClient, JsonTcpServer, Request, Response, ServerOptions,
    decode_request_line,
};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

const PATIENCE: Duration = Duration::from_secs(20);
const START_MS: i64 = 1_700_000_000_000;

type Outcome = Result<Response, (ErrorCode, String)>;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("parity")
}

fn scenarios() -> Vec<(String, Value)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let v: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: invalid JSON: {e}", p.display()));
            (p.file_name().unwrap().to_string_lossy().into_owned(), v)
        })
        .collect()
}

fn open(dir: &Path, scenario: &Value, clock: &ManualClock) -> Arc<BrokerCluster> {
    let brokers: Vec<i32> = scenario["brokers"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|b| i32::try_from(b.as_i64().unwrap()).unwrap())
                .collect()
        })
        .unwrap_or_else(|| vec![1]);
    let min_isr = usize::try_from(scenario["min_insync_replicas"].as_u64().unwrap_or(1)).unwrap();
    let config = MiniKafkaConfig::new(dir)
        .with_brokers(brokers)
        .with_min_insync_replicas(min_isr);
    BrokerCluster::open_with_clock(config, Arc::new(clock.clone())).unwrap()
}

/// A core error as the JSON protocol reports it: through the protocol's
/// own code table (the finer codes for invalid topic arguments are
/// INVALID_REQUEST there), so the comparison is of what a client sees.
fn core_err(e: ClusterError) -> (ErrorCode, String) {
    (json_code(e.code()), e.to_string())
}

/// A Direct outcome as a JSON client would see it: the success value
/// through the wire's encoder and decoder, so values the JSON protocol does
/// not carry (e.g. a group's Kafka protocol details) are compared as the
/// empty values a JSON client decodes, like errors go through `json_code`.
fn as_seen_on_the_wire(request: &Request, outcome: Outcome) -> Outcome {
    outcome.map(|response| {
        let wire = match serde_json::from_slice::<Value>(&response.encode(None)) {
            Ok(Value::Object(map)) => map,
            other => panic!("a response encodes to a JSON object, got {other:?}"),
        };
        Response::decode(request, &wire)
            .unwrap_or_else(|e| panic!("an encoded response decodes again: {e:?}"))
    })
}

/// One request through the Direct adapter: each arm is one DirectAdmin or
/// DirectClient call (the arguments unpacked from the wire model, nothing
/// decided here), its result put in the wire model's `Response`. Every
/// decision the JSON dispatcher relies on is a core operation both adapters
/// call, so the suite compares two translations of one core.
async fn direct(admin: &DirectAdmin, client: &DirectClient, request: &Request) -> Outcome {
    let r: Result<Response, ClusterError> = async {
        Ok(match request.clone() {
            Request::CreateTopic {
                topic,
                partitions,
                replication_factor,
                config,
            } => {
                let overrides = config.unwrap_or_default();
                admin.create_topic_with_overrides(
                    &topic,
                    partitions,
                    replication_factor,
                    &overrides,
                )?;
                Response::CreateTopic { topic }
            }
            Request::Metadata {
                topic,
                allow_auto_create,
            } => Response::Metadata(admin.describe_or_auto_create(&topic, allow_auto_create)?),
            Request::Produce(spec) => Response::Produce {
                batch: spec.is_batch(),
                response: client
                    .produce(spec.into_core(|topic, partition, records| {
                        client.route_produce(topic, partition, records)
                    })?)
                    .await?,
            },
            Request::Fetch {
                request,
                max_wait_ms,
            } => Response::Fetch(match max_wait_ms {
                None | Some(0) => client.fetch(&request)?,
                Some(ms) => {
                    client
                        .fetch_wait(&request, Duration::from_millis(u64::from(ms)))
                        .await?
                }
            }),
            Request::JoinGroup {
                group_id,
                member_id,
                topics,
                assignor,
            } => Response::JoinGroup(match assignor {
                None => client.join_group(&group_id, &member_id, &topics)?,
                Some(a) => {
                    client.join_group_with_assignor(&group_id, &member_id, &topics, Some(a))?
                }
            }),
            Request::Heartbeat {
                group_id,
                member_id,
                generation,
            } => {
                client.heartbeat(&group_id, &member_id, generation)?;
                Response::Heartbeat
            }
            Request::CommitOffsets {
                group_id,
                member_id,
                generation,
                offsets,
            } => {
                client
                    .commit_offsets_with_metadata(&group_id, &member_id, generation, &offsets)?
                    .into_iter()
                    .try_for_each(|(_, r)| r)?;
                Response::CommitOffsets
            }
            Request::ListTopics => Response::ListTopics(admin.list_topics()?),
            Request::DeleteTopic { topic } => {
                admin.delete_topic(&topic)?;
                Response::DeleteTopic
            }
            Request::CreatePartitions { topic, partitions } => {
                admin.create_partitions(&topic, partitions)?;
                Response::CreatePartitions
            }
            Request::AlterTopicConfig {
                topic,
                changes,
                validate_only,
            } => Response::AlterTopicConfig(admin.alter_topic_config(
                &topic,
                &changes,
                validate_only,
            )?),
            Request::DescribeTopicConfig { topic } => {
                Response::DescribeTopicConfig(admin.describe_topic_config(&topic)?)
            }
            Request::ListGroups => Response::ListGroups(admin.list_groups()?),
            Request::DeleteGroup { group_id } => {
                admin.delete_group(&group_id)?;
                Response::DeleteGroup
            }
            Request::AlterGroupOffsets { group_id, offsets } => {
                admin.alter_group_offsets(&group_id, &offsets)?;
                Response::AlterGroupOffsets
            }
            Request::ListOffsets { tp, at } => Response::ListOffsets(client.list_offsets(&tp, at)?),
            Request::LeaveGroup {
                group_id,
                member_id,
            } => Response::LeaveGroup {
                left: client.leave_group(&group_id, &member_id)?,
            },
            Request::FetchOffsets {
                group_id,
                partitions,
            } => Response::FetchOffsets(
                client.committed_offsets_for(&group_id, partitions.as_deref())?,
            ),
            Request::DescribeGroup { group_id } => Response::DescribeGroup {
                description: client.describe_any_group(&group_id)?,
                group_id,
            },
            Request::InitProducer { name } => {
                Response::InitProducer(client.init_producer(name.as_deref())?)
            }
            Request::BeginTxn { transactional_id } => {
                let h = client.begin_txn(&transactional_id).await?;
                Response::BeginTxn(ProducerIdentity {
                    producer_id: h.producer_id,
                    epoch: h.producer_epoch,
                })
            }
            Request::TxnProduce {
                txn,
                topic,
                partition,
                key,
                value,
            } => {
                let h = client.transaction_handle_at(&txn.transactional_id, txn.producer_epoch)?;
                let (partition, offset) = client
                    .txn_produce(&h, &topic, key, value, partition)
                    .await?;
                Response::TxnProduce { partition, offset }
            }
            Request::TxnSendOffsets {
                txn,
                group_id,
                offsets,
            } => {
                let h = client.transaction_handle_at(&txn.transactional_id, txn.producer_epoch)?;
                client.txn_send_offsets(&h, &group_id, &offsets)?;
                Response::TxnSendOffsets
            }
            Request::CommitTxn { txn } => {
                let h = client.transaction_handle_at(&txn.transactional_id, txn.producer_epoch)?;
                client.commit_txn(&h).await?;
                Response::CommitTxn
            }
            Request::AbortTxn { txn } => {
                let h = client.transaction_handle_at(&txn.transactional_id, txn.producer_epoch)?;
                client.abort_txn(&h).await?;
                Response::AbortTxn
            }
            Request::DescribeCluster => Response::DescribeCluster(admin.describe_cluster()?),
            Request::Stats => panic!(
                "stats is not part of the parity corpus: uptime and connection counts differ by design"
            ),
            Request::BrokerOffline { broker_id } => {
                Response::BrokerOffline(admin.broker_offline(broker_id)?)
            }
            Request::BrokerOnline { broker_id } => Response::BrokerOnline {
                was_offline: admin.broker_online(broker_id)?,
            },
            Request::UpsertScramCredential {
                user,
                mechanism,
                password,
                iterations,
            } => Response::UpsertScramCredential {
                iterations: admin.upsert_scram_credential(
                    &user,
                    mechanism,
                    password.expose(),
                    iterations,
                )?,
                user,
                mechanism,
            },
            Request::DeleteScramCredential { user, mechanism } => {
                Response::DeleteScramCredential {
                    deleted: admin.delete_scram_credential(&user, mechanism)?,
                    user,
                }
            }
            Request::DescribeScramCredentials { user } => {
                let named = user.map(|u| vec![u]);
                Response::DescribeScramCredentials(
                    admin
                        .describe_scram_credentials(named.as_deref())
                        .into_iter()
                        .map(|(u, info)| info.map(|info| (u, info)))
                        .collect::<Result<Vec<_>, ClusterError>>()?,
                )
            }
            Request::Promote { tp, broker_id } => Response::Promote(admin.promote(&tp, broker_id)?),
            Request::Rejoin { tp, broker_id } => {
                admin.rejoin(&tp, broker_id)?;
                Response::Rejoin
            }
            Request::RemoveFromIsr { tp, broker_id } => {
                admin.remove_from_isr(&tp, broker_id)?;
                Response::RemoveFromIsr
            }
            Request::ReplicateOnce => {
                admin.replicate_once()?;
                Response::ReplicateOnce
            }
            Request::ExpireGroupMembers => {
                Response::ExpireGroupMembers(admin.expire_group_members()?)
            }
            Request::Roll { tp } => {
                admin.roll(&tp)?;
                Response::Roll
            }
            Request::ApplyRetention { topic, overrides } => {
                Response::ApplyRetention(admin.apply_retention(&topic, overrides)?)
            }
            Request::Compact {
                topic,
                delete_retention_ms,
            } => Response::Compact(admin.compact(&topic, delete_retention_ms)?),
            Request::ExpireTransactions => {
                Response::ExpireTransactions(admin.expire_transactions().await?)
            }
            Request::FlushCycle => {
                admin.flush_cycle()?;
                Response::FlushCycle
            }
        })
    }
    .await;
    r.map_err(core_err)
}

async fn tcp(client: &mut JsonTcpClient, request: &Request) -> Outcome {
    match tokio::time::timeout(PATIENCE, client.call(request))
        .await
        .expect("a TCP call did not complete")
    {
        Ok(r) => Ok(r),
        Err(ClientError::Server(e)) => Err((e.code, e.message)),
        Err(other) => panic!("transport failure: {other}"),
    }
}

/// True if every field of `expected` is in `actual` with a matching value:
/// objects match as subsets, arrays element by element with equal lengths,
/// scalars exactly.
fn subset(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|av| subset(v, av))),
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(ev, av)| subset(ev, av))
        }
        _ => expected == actual,
    }
}

/// Everything observable about a cluster's final state.
#[derive(Debug, PartialEq)]
struct FinalState {
    topics: Vec<String>,
    partitions: Vec<mk_adapter_jsontcp::mk_cluster::PartitionInfo>,
    records: Vec<(
        TopicPartition,
        Vec<mk_adapter_jsontcp::mk_cluster::ConsumerRecord>,
    )>,
    committed: Vec<(String, Vec<(TopicPartition, i64)>)>,
}

fn final_state(cluster: &BrokerCluster, groups: &BTreeSet<String>) -> FinalState {
    let description = cluster.views().describe_cluster().unwrap();
    let mut records = Vec::new();
    for p in &description.partitions {
        let tp = TopicPartition::new(&p.topic, p.partition);
        let f = cluster
            .data()
            .fetch(&FetchRequest::new(tp.clone(), p.log_start_offset, i64::MAX))
            .unwrap();
        records.push((tp, f.records));
    }
    FinalState {
        topics: cluster.topics().list().unwrap(),
        partitions: description.partitions,
        records,
        committed: groups
            .iter()
            .map(|g| {
                (
                    g.clone(),
                    cluster.groups().committed(g).unwrap().into_iter().collect(),
                )
            })
            .collect(),
    }
}

async fn run_scenario(file: &str, scenario: &Value) -> usize {
    let direct_dir = tempfile::tempdir().unwrap();
    let tcp_dir = tempfile::tempdir().unwrap();
    let direct_clock = ManualClock::new(START_MS);
    let tcp_clock = ManualClock::new(START_MS);
    let direct_cluster = open(direct_dir.path(), scenario, &direct_clock);
    let tcp_cluster = open(tcp_dir.path(), scenario, &tcp_clock);
    let admin = DirectAdmin::new(direct_cluster.clone());
    let client = DirectClient::new(direct_cluster.clone());
    let server = JsonTcpServer::start(
        tcp_cluster.clone(),
        "127.0.0.1:0",
        ServerOptions {
            lab: true,
            ..ServerOptions::default()
        },
    )
    .await
    .unwrap();
    let mut remote = JsonTcpClient::connect(server.local_addr()).await.unwrap();
    let mut groups = BTreeSet::new();
    let steps = scenario["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("{file}: no steps"));
    let mut checked = 0;
    for (i, step) in steps.iter().enumerate() {
        let at = format!("{file} step {i}");
        if let Some(ms) = step.get("advance_ms") {
            let ms = ms.as_i64().unwrap();
            direct_clock.advance(ms);
            tcp_clock.advance(ms);
            continue;
        }
        let line = step["request"].to_string();
        let request = decode_request_line(line.as_bytes())
            .request
            .unwrap_or_else(|e| panic!("{at}: the corpus request does not decode: {e}"));
        if let Some(g) = step["request"]["group_id"].as_str() {
            groups.insert(g.to_string());
        }
        let d = as_seen_on_the_wire(&request, direct(&admin, &client, &request).await);
        let t = tcp(&mut remote, &request).await;
        assert_eq!(d, t, "{at}: Direct and JSON-TCP disagree on {line}");
        match (step.get("expect"), step.get("expect_error")) {
            (Some(expected), None) => {
                let response = d.unwrap_or_else(|e| panic!("{at}: expected success, got {e:?}"));
                let wire: Value = serde_json::from_slice(&response.encode(None)).unwrap();
                assert!(
                    subset(expected, &wire),
                    "{at}: {line}\n expected (subset) {expected}\n got {wire}"
                );
            }
            (None, Some(code)) => {
                let code = code.as_str().unwrap();
                match d {
                    Err((c, _)) => assert_eq!(c.as_str(), code, "{at}: {line}"),
                    Ok(r) => panic!("{at}: expected {code}, got {r:?}"),
                }
            }
            _ => panic!("{at}: a request step needs exactly one of expect / expect_error"),
        }
        checked += 1;
    }
    let d_state = final_state(&direct_cluster, &groups);
    let t_state = final_state(&tcp_cluster, &groups);
    assert_eq!(d_state, t_state, "{file}: final cluster states differ");
    drop(remote);
    tokio::time::timeout(PATIENCE, server.shutdown())
        .await
        .unwrap();
    direct_cluster.lifecycle().close().await.unwrap();
    tcp_cluster.lifecycle().close().await.unwrap();
    checked
}

#[tokio::test]
async fn parity_direct_and_jsontcp_agree_on_the_whole_corpus() {
    let all = scenarios();
    assert!(all.len() >= 6, "the corpus has {} scenarios", all.len());
    let mut steps = 0;
    let mut operations = BTreeSet::new();
    for (file, scenario) in &all {
        for step in scenario["steps"].as_array().unwrap() {
            if let Some(op) = step["request"]["operation"].as_str() {
                operations.insert(op.to_string());
            }
        }
        steps += run_scenario(file, scenario).await;
    }
    assert!(steps > 100, "only {steps} checked steps");
    let missing: Vec<&str> = mk_adapter_jsontcp::Operation::ALL
        .iter()
        .map(|o| o.name())
        .filter(|n| *n != "stats" && !operations.contains(*n))
        .collect();
    assert!(
        missing.is_empty(),
        "operations the corpus never exercises: {missing:?}"
    );
}

#[test]
fn parity_subset_matching_is_strict_where_it_must_be() {
    let actual: Value =
        serde_json::from_str(r#"{"ok":true,"records":[{"offset":0}],"high_watermark":1}"#).unwrap();
    assert!(subset(&serde_json::json!({"high_watermark": 1}), &actual));
    assert!(!subset(&serde_json::json!({"high_watermark": 2}), &actual));
    assert!(!subset(&serde_json::json!({"missing": 1}), &actual));
    assert!(!subset(&serde_json::json!({"records": []}), &actual));
    assert!(subset(&serde_json::json!({"records": [{}]}), &actual));
    assert!(!subset(
        &serde_json::json!({"records": [{"offset": 1}]}),
        &actual
    ));
}
