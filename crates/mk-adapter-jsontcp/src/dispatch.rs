//! Executes one decoded request: exactly one `BrokerCluster` operation per
//! request, its result wrapped in the matching `Response`. This is the only
//! place the server touches the core.

use crate::protocol::{ProduceSpec, Request, Response, ServerStats, TxnRef};
use mk_cluster::{BrokerCluster, ClusterError};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What the dispatcher needs besides the cluster.
pub(crate) struct DispatchContext<'a> {
    pub cluster: &'a BrokerCluster,
    /// Cancelled when the server shuts down: a waiting long poll then
    /// answers at once with what is visible.
    pub shutdown: &'a CancellationToken,
    pub in_flight: u64,
}

/// Produce requests that arrived together (a pipelined run of lines),
/// answered one each, in order, as `execute` answers each alone: the core
/// routes each, then appends them with `produce_group` (group commit).
pub(crate) async fn execute_produces(
    c: &BrokerCluster,
    specs: Vec<ProduceSpec>,
) -> Vec<Result<Response, ClusterError>> {
    let mut answers: Vec<Option<Result<Response, ClusterError>>> = Vec::with_capacity(specs.len());
    let mut routed = Vec::with_capacity(specs.len());
    let mut places = Vec::with_capacity(specs.len());
    for spec in specs {
        let batch = spec.is_batch();
        match spec.into_core(|topic, partition, records| {
            c.data().route_produce(topic, partition, records)
        }) {
            Ok(request) => {
                places.push((answers.len(), batch));
                routed.push(request);
                answers.push(None);
            }
            Err(e) => answers.push(Some(Err(e))),
        }
    }
    for ((i, batch), r) in places.into_iter().zip(c.data().produce_group(routed).await) {
        answers[i] = Some(r.map(|response| Response::Produce { response, batch }));
    }
    answers
        .into_iter()
        .map(|a| a.expect("every request is answered"))
        .collect()
}

/// Executes one operation of the wire model in process, against `cluster`:
/// what the server's dispatch runs for each request, and what the parity
/// suite runs on its in-process side, so the mapping from an operation to
/// its core call exists once. No shutdown cancels a long poll here, and
/// `stats` reports no requests in flight.
pub async fn execute(cluster: &BrokerCluster, request: Request) -> Result<Response, ClusterError> {
    let never = CancellationToken::new();
    let ctx = DispatchContext {
        cluster,
        shutdown: &never,
        in_flight: 0,
    };
    execute_in(&ctx, request).await
}

/// The table from an operation to its one core call. Arms that take more
/// than a call and a wrap have a function of their own below.
#[allow(
    clippy::too_many_lines,
    reason = "one arm per operation: the table reads best whole, and split by family it would \
              need a second match per family that cannot be exhaustive"
)]
pub(crate) async fn execute_in(
    ctx: &DispatchContext<'_>,
    request: Request,
) -> Result<Response, ClusterError> {
    let c = ctx.cluster;
    Ok(match request {
        Request::CreateTopic {
            topic,
            partitions,
            replication_factor,
            config,
        } => {
            let overrides = config.unwrap_or_default();
            c.topics()
                .create_with_overrides(&topic, partitions, replication_factor, &overrides)?;
            Response::CreateTopic { topic }
        }
        Request::Metadata {
            topic,
            allow_auto_create,
        } => Response::Metadata(
            c.topics()
                .describe_or_auto_create(&topic, allow_auto_create)?,
        ),
        Request::Produce(spec) => {
            let mut answers = execute_produces(c, vec![spec]).await;
            answers.pop().expect("one answer per request")?
        }
        Request::Fetch {
            request,
            max_wait_ms,
        } => Response::Fetch(fetch(ctx, &request, max_wait_ms).await?),
        Request::JoinGroup {
            group_id,
            member_id,
            topics,
            assignor,
        } => Response::JoinGroup(
            c.groups()
                .join_with_assignor(&group_id, &member_id, &topics, assignor)?,
        ),
        Request::Heartbeat {
            group_id,
            member_id,
            generation,
        } => {
            c.groups().heartbeat(&group_id, &member_id, generation)?;
            Response::Heartbeat
        }
        Request::CommitOffsets {
            group_id,
            member_id,
            generation,
            offsets,
        } => {
            // A partition refused on its own (metadata too long) is the
            // answer; the others are stored, as Kafka stores them.
            let answers = c
                .groups()
                .commit_with_metadata(&group_id, generation, &member_id, None, &offsets)?;
            answers.into_iter().try_for_each(|(_, r)| r)?;
            Response::CommitOffsets
        }
        Request::ListTopics => Response::ListTopics(c.topics().list()?),
        Request::DeleteTopic { topic } => {
            c.topics().delete(&topic)?;
            Response::DeleteTopic
        }
        Request::CreatePartitions { topic, partitions } => {
            c.topics().create_partitions(&topic, partitions)?;
            Response::CreatePartitions
        }
        Request::AlterTopicConfig {
            topic,
            changes,
            validate_only,
        } => {
            Response::AlterTopicConfig(c.topics().alter_config(&topic, &changes, validate_only)?)
        }
        Request::DescribeTopicConfig { topic } => {
            Response::DescribeTopicConfig(c.topics().describe_config(&topic)?)
        }
        Request::ListGroups => Response::ListGroups(c.groups().listings()?),
        Request::DeleteGroup { group_id } => {
            c.groups().delete_one(&group_id)?;
            Response::DeleteGroup
        }
        Request::AlterGroupOffsets { group_id, offsets } => {
            c.groups().alter_offsets(&group_id, &offsets)?;
            Response::AlterGroupOffsets
        }
        Request::ListOffsets { tp, at } => Response::ListOffsets(c.data().list_offsets(&tp, at)?),
        Request::LeaveGroup {
            group_id,
            member_id,
        } => Response::LeaveGroup {
            left: c.groups().leave(&group_id, &member_id)?,
        },
        Request::FetchOffsets {
            group_id,
            partitions,
        } => Response::FetchOffsets(c.groups().committed_for(&group_id, partitions.as_deref())?),
        Request::DescribeGroup { group_id } => Response::DescribeGroup {
            description: c.groups().describe_any(&group_id)?,
            group_id,
        },
        Request::InitProducer { name } => {
            Response::InitProducer(c.transactions().init_producer(name.as_deref())?)
        }
        Request::BeginTxn { transactional_id } => {
            let h = c.transactions().begin(&transactional_id).await?;
            Response::BeginTxn(mk_cluster::ProducerIdentity {
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
            let h = handle(c, &txn)?;
            let (partition, offset) = c
                .transactions()
                .send(&h, &topic, key, value, partition)
                .await?;
            Response::TxnProduce { partition, offset }
        }
        Request::TxnSendOffsets {
            txn,
            group_id,
            offsets,
        } => {
            c.transactions()
                .send_offsets(&handle(c, &txn)?, &group_id, &offsets)?;
            Response::TxnSendOffsets
        }
        Request::CommitTxn { txn } => {
            c.transactions().commit(&handle(c, &txn)?).await?;
            Response::CommitTxn
        }
        Request::AbortTxn { txn } => {
            c.transactions().abort(&handle(c, &txn)?).await?;
            Response::AbortTxn
        }
        Request::DescribeCluster => Response::DescribeCluster(c.views().describe_cluster()?),
        Request::BrokerOffline { broker_id } => {
            Response::BrokerOffline(c.brokers().take_offline(broker_id)?)
        }
        Request::BrokerOnline { broker_id } => Response::BrokerOnline {
            was_offline: c.brokers().bring_online(broker_id)?,
        },
        Request::UpsertScramCredential {
            user,
            mechanism,
            password,
            iterations,
        } => Response::UpsertScramCredential {
            iterations: c.security().upsert_scram_password(
                &user,
                mechanism,
                password.expose(),
                iterations,
            )?,
            user,
            mechanism,
        },
        Request::DeleteScramCredential { user, mechanism } => Response::DeleteScramCredential {
            deleted: c.security().delete_scram_credentials(&user, mechanism)?,
            user,
        },
        Request::DescribeScramCredentials { user } => {
            Response::DescribeScramCredentials(describe_scram_users(c, user)?)
        }
        Request::AlterPartitionReassignment {
            tp,
            replicas,
            allow_replication_factor_change,
        } => {
            c.reassignments()
                .alter(&tp, replicas.as_deref(), allow_replication_factor_change)
                .map_err(mk_cluster::ReassignmentRefusal::into_cluster_error)?;
            Response::AlterPartitionReassignment(
                c.reassignments().list(Some(std::slice::from_ref(&tp)))?,
            )
        }
        Request::ListPartitionReassignments { topic } => {
            Response::ListPartitionReassignments(match topic {
                Some(t) => c.reassignments().list_topic(&t)?,
                None => c.reassignments().list(None)?,
            })
        }
        Request::Stats => Response::Stats(ServerStats {
            cluster: c.views().stats()?,
            in_flight: ctx.in_flight,
        }),
        Request::Promote { tp, broker_id } => Response::Promote(c.steps().promote(&tp, broker_id)?),
        Request::Rejoin { tp, broker_id } => {
            c.steps().rejoin(&tp, broker_id)?;
            Response::Rejoin
        }
        Request::RemoveFromIsr { tp, broker_id } => {
            c.steps().remove_from_isr(&tp, broker_id)?;
            Response::RemoveFromIsr
        }
        Request::ReplicateOnce => {
            c.steps().replicate_all_once()?;
            Response::ReplicateOnce
        }
        Request::ExpireGroupMembers => Response::ExpireGroupMembers(c.groups().expire_members()?),
        Request::Roll { tp } => {
            c.steps().roll(&tp)?;
            Response::Roll
        }
        Request::ApplyRetention { topic, overrides } => {
            Response::ApplyRetention(c.steps().apply_retention(&topic, overrides)?)
        }
        Request::Compact {
            topic,
            delete_retention_ms,
        } => Response::Compact(c.steps().compact(&topic, delete_retention_ms)?),
        Request::ExpireTransactions => {
            Response::ExpireTransactions(c.transactions().expire().await?)
        }
        Request::FlushCycle => {
            c.steps().run_flush_cycle()?;
            Response::FlushCycle
        }
    })
}

/// A fetch, long-polling up to `max_wait_ms` for new records; shutdown
/// answers a waiting poll at once with what is visible.
async fn fetch(
    ctx: &DispatchContext<'_>,
    request: &mk_cluster::FetchRequest,
    max_wait_ms: Option<u32>,
) -> Result<mk_cluster::FetchResult, ClusterError> {
    let data = ctx.cluster.data();
    match max_wait_ms {
        None | Some(0) => data.fetch(request),
        Some(ms) => {
            tokio::select! {
                r = data.fetch_wait(request, Duration::from_millis(u64::from(ms))) => r,
                _ = ctx.shutdown.cancelled() => data.fetch(request),
            }
        }
    }
}

/// The transaction a request names, at the epoch it names (fenced when
/// the producer has moved on).
fn handle(c: &BrokerCluster, txn: &TxnRef) -> Result<mk_cluster::TxnHandle, ClusterError> {
    c.transactions()
        .handle_at(&txn.transactional_id, txn.producer_epoch)
}

/// Every user with a credential, or the one named (RESOURCE_NOT_FOUND when
/// it has none).
fn describe_scram_users(
    c: &BrokerCluster,
    user: Option<String>,
) -> Result<Vec<(String, mk_cluster::ScramUserInfo)>, ClusterError> {
    let named = user.map(|u| vec![u]);
    c.security()
        .describe_scram(named.as_deref())
        .into_iter()
        .map(|(user, info)| info.map(|info| (user, info)))
        .collect()
}
