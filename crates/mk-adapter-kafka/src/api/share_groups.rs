//! KIP-932 share groups as Kafka clients drive them: ShareGroupHeartbeat,
//! ShareGroupDescribe, ShareFetch, ShareAcknowledge and the share-group
//! offset admin APIs, over mk-group's `share` machines and the core's
//! ShareFetch. Topic ids become names and back; acknowledge types and
//! records are translated; every decision is the core's.

use super::consumer_groups::{by_id, by_name, describe_each, heartbeat_response};
use super::groups::{client_host, coordinated_here};
use super::{Ctx, ErrorAnswer};
use crate::codec::Uuid;
use crate::errors::{self, KafkaCode};
use crate::messages::share_acknowledge::{
    self as ack_msg, ShareAcknowledgeRequest, ShareAcknowledgeResponse,
};
use crate::messages::share_fetch::{
    AcknowledgementBatch, AcquiredRecords, PartitionData, ShareFetchRequest, ShareFetchResponse,
    ShareFetchableTopicResponse,
};
use crate::messages::share_group_describe::{
    self as describe, DescribedGroup, ShareGroupDescribeRequest, ShareGroupDescribeResponse,
};
use crate::messages::share_group_heartbeat::{
    ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
};
use crate::records;
use mk_cluster::share::{AckBatch, AckType, SHARE_ASSIGNOR, ShareFetchRequest as CoreFetch};
use mk_cluster::{
    BrokerCluster, CoordinatorKey, GroupType, ShareFetchLimits, ShareFetchPartition,
    ShareHeartbeat, TopicPartition,
};
use std::collections::BTreeMap;
use std::time::Duration;

/// The longest long poll a share consumer may ask for.
const MAX_WAIT_MS: i32 = 30_000;
/// The most records one ShareFetch acquires when the client names no
/// limit (Kafka's `max.poll.records` default).
const DEFAULT_MAX_RECORDS: usize = 500;

pub async fn handle_share_group_heartbeat(
    ctx: &Ctx<'_>,
    req: ShareGroupHeartbeatRequest,
) -> ShareGroupHeartbeatResponse {
    let hb = ShareHeartbeat {
        group_id: req.group_id,
        member_id: req.member_id,
        member_epoch: req.member_epoch,
        rack_id: req.rack_id,
        subscribed_topic_names: req.subscribed_topic_names,
        client_id: ctx.header.client_id.clone().unwrap_or_default(),
        client_host: client_host(ctx),
    };
    let answer = coordinated_here(ctx, CoordinatorKey::Group(&hb.group_id))
        .and_then(|()| ctx.cluster.groups().share_heartbeat(hb));
    heartbeat_response!(
        ctx,
        answer,
        share_group_heartbeat::ShareGroupHeartbeatResponse
    )
}

pub async fn handle_share_group_describe(
    ctx: &Ctx<'_>,
    req: ShareGroupDescribeRequest,
) -> ShareGroupDescribeResponse {
    let groups = describe_each(
        ctx,
        &req.group_ids,
        GroupType::Share,
        |id| ctx.cluster.groups().describe_share(id),
        |d| described(ctx.cluster, d),
    );
    ShareGroupDescribeResponse {
        groups,
        ..ShareGroupDescribeResponse::default()
    }
}

fn described(c: &BrokerCluster, d: mk_cluster::ShareGroupDescription) -> DescribedGroup {
    DescribedGroup {
        group_id: d.group_id,
        group_state: d.state.as_str().to_string(),
        group_epoch: d.epoch,
        assignment_epoch: d.assignment_epoch,
        assignor_name: SHARE_ASSIGNOR.to_string(),
        members: d
            .members
            .into_iter()
            .map(|m| describe::Member {
                assignment: describe::Assignment {
                    topic_partitions: by_id(c, &m.assignment)
                        .into_iter()
                        .map(
                            |(topic_id, topic_name, partitions)| describe::TopicPartitions {
                                topic_id,
                                topic_name,
                                partitions,
                            },
                        )
                        .collect(),
                },
                member_id: m.member_id,
                rack_id: m.rack_id,
                member_epoch: m.member_epoch,
                client_id: m.client_id,
                client_host: m.client_host,
                subscribed_topic_names: m.topics,
            })
            .collect(),
        ..DescribedGroup::default()
    }
}

/// The acknowledgement batches of one partition, as `(first, last,
/// types)`; `None` if a type is not one of Kafka's four.
fn ack_batches<'a>(batches: impl Iterator<Item = (i64, i64, &'a [i8])>) -> Option<Vec<AckBatch>> {
    batches
        .map(|(first, last, types)| {
            let types = types
                .iter()
                .map(|t| AckType::from_wire(*t))
                .collect::<Option<Vec<_>>>()?;
            Some(AckBatch { first, last, types })
        })
        .collect()
}

fn fetch_acks(batches: &[AcknowledgementBatch]) -> Option<Vec<AckBatch>> {
    ack_batches(batches.iter().map(|b| {
        (
            b.first_offset,
            b.last_offset,
            b.acknowledge_types.as_slice(),
        )
    }))
}

/// One topic id's partitions by name, or nothing for an unknown id.
fn partitions_of(
    c: &BrokerCluster,
    id: Uuid,
    partitions: impl Iterator<Item = i32>,
) -> Vec<TopicPartition> {
    let ps: Vec<i32> = partitions.collect();
    by_name(c, &[(id, ps.as_slice())])
}

/// The core's request of a share session (nothing to fetch or acknowledge
/// yet), or INVALID_REQUEST's message when `api`'s request names no group
/// or member.
fn session(
    api: &str,
    group_id: &Option<String>,
    member_id: &Option<String>,
    session_epoch: i32,
) -> Result<CoreFetch, String> {
    let (Some(group_id), Some(member_id)) = (group_id.clone(), member_id.clone()) else {
        return Err(format!("{api} needs a group id and a member id"));
    };
    Ok(CoreFetch {
        group_id,
        member_id,
        session_epoch,
        ..CoreFetch::default()
    })
}

/// The core's ShareFetch request, or INVALID_REQUEST's message.
fn core_fetch(c: &BrokerCluster, req: &ShareFetchRequest) -> Result<CoreFetch, String> {
    let mut fetch = session(
        "ShareFetch",
        &req.group_id,
        &req.member_id,
        req.share_session_epoch,
    )?;
    for t in &req.topics {
        for p in &t.partitions {
            let tp = partitions_of(c, t.topic_id, std::iter::once(p.partition_index));
            fetch.partitions.extend(tp.iter().cloned());
            if p.acknowledgement_batches.is_empty() {
                continue;
            }
            let batches = fetch_acks(&p.acknowledgement_batches).ok_or_else(|| {
                format!(
                    "an acknowledge type of partition {} is not 0 to 3",
                    p.partition_index
                )
            })?;
            fetch
                .acks
                .extend(tp.into_iter().map(|tp| (tp, batches.clone())));
        }
    }
    for t in &req.forgotten_topics_data {
        fetch
            .forgotten
            .extend(partitions_of(c, t.topic_id, t.partitions.iter().copied()));
    }
    Ok(fetch)
}

pub async fn handle_share_fetch(ctx: &Ctx<'_>, req: ShareFetchRequest) -> ShareFetchResponse {
    let fetch = match core_fetch(ctx.cluster, &req) {
        Ok(f) => f,
        Err(message) => return ShareFetchResponse::error(KafkaCode::INVALID_REQUEST, message),
    };
    let limits = ShareFetchLimits {
        max_wait: Duration::from_millis(
            u64::try_from(req.max_wait_ms.clamp(0, MAX_WAIT_MS)).unwrap_or(0),
        ),
        max_records: usize::try_from(req.max_records)
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or(DEFAULT_MAX_RECORDS),
        max_bytes: usize::try_from(req.max_bytes)
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or(usize::MAX),
        broker: Some(ctx.broker_id),
    };
    let answer = ctx
        .until_shutdown(ctx.cluster.groups().share_fetch(&fetch, limits))
        .await;
    match answer {
        Err(e) => {
            let (code, message) = errors::from_cluster(&e);
            ShareFetchResponse::error(code, message)
        }
        Ok(a) => ShareFetchResponse {
            acquisition_lock_timeout_ms: a.lock_duration_ms,
            responses: fetch_topics(ctx.cluster, &fetch, a.acks, a.partitions),
            ..ShareFetchResponse::default()
        },
    }
}

/// Every partition the request named, acknowledged or fetched, by topic id.
fn fetch_topics(
    c: &BrokerCluster,
    fetch: &CoreFetch,
    acks: Vec<(TopicPartition, mk_cluster::Result<()>)>,
    partitions: Vec<ShareFetchPartition>,
) -> Vec<ShareFetchableTopicResponse> {
    let mut by_tp: BTreeMap<TopicPartition, PartitionData> = fetch
        .partitions
        .iter()
        .map(|tp| (tp.clone(), partition_data(tp)))
        .collect();
    for (tp, r) in acks {
        let p = by_tp
            .entry(tp.clone())
            .or_insert_with(|| partition_data(&tp));
        if let Err(e) = r {
            let (code, message) = errors::from_cluster(&e);
            p.acknowledge_error_code = code;
            p.acknowledge_error_message = Some(message);
        }
    }
    for part in partitions {
        let p = by_tp
            .entry(part.tp.clone())
            .or_insert_with(|| partition_data(&part.tp));
        fill(p, part);
    }
    group_by_topic_id(c, by_tp)
}

fn partition_data(tp: &TopicPartition) -> PartitionData {
    PartitionData {
        partition_index: i32::try_from(tp.partition).unwrap_or(-1),
        current_leader: crate::messages::share_fetch::LeaderIdAndEpoch {
            leader_id: -1,
            leader_epoch: -1,
        },
        ..PartitionData::default()
    }
}

/// Puts one fetched partition's records, acquired ranges or error in.
fn fill(p: &mut PartitionData, part: ShareFetchPartition) {
    if let Some(e) = part.error {
        let (code, message) = errors::from_cluster(&e);
        p.error_code = code;
        p.error_message = Some(message);
        return;
    }
    p.records = Some(records::fetched_record_set(&part.batches));
    p.acquired_records = part
        .acquired
        .iter()
        .map(|r| AcquiredRecords {
            first_offset: r.first,
            last_offset: r.last,
            delivery_count: i16::try_from(r.delivery_count).unwrap_or(i16::MAX),
        })
        .collect();
}

fn group_by_topic_id(
    c: &BrokerCluster,
    by_tp: BTreeMap<TopicPartition, PartitionData>,
) -> Vec<ShareFetchableTopicResponse> {
    let mut out: Vec<ShareFetchableTopicResponse> = Vec::new();
    for (tp, p) in by_tp {
        let Ok(id) = c.topics().id(&tp.topic) else {
            continue;
        };
        match out.last_mut() {
            Some(t) if t.topic_id == Uuid(id.0) => t.partitions.push(p),
            _ => out.push(ShareFetchableTopicResponse {
                topic_id: Uuid(id.0),
                partitions: vec![p],
            }),
        }
    }
    out
}

pub async fn handle_share_acknowledge(
    ctx: &Ctx<'_>,
    req: ShareAcknowledgeRequest,
) -> ShareAcknowledgeResponse {
    let error = ShareAcknowledgeResponse::error;
    let session = session(
        "ShareAcknowledge",
        &req.group_id,
        &req.member_id,
        req.share_session_epoch,
    );
    let mut core = match session {
        Ok(core) => core,
        Err(message) => return error(KafkaCode::INVALID_REQUEST, message),
    };
    for t in &req.topics {
        for p in &t.partitions {
            let batches = p.acknowledgement_batches.iter().map(|b| {
                (
                    b.first_offset,
                    b.last_offset,
                    b.acknowledge_types.as_slice(),
                )
            });
            let Some(batches) = ack_batches(batches) else {
                return error(
                    KafkaCode::INVALID_REQUEST,
                    "an acknowledge type is not 0 to 3".into(),
                );
            };
            for tp in partitions_of(ctx.cluster, t.topic_id, std::iter::once(p.partition_index)) {
                core.acks.push((tp, batches.clone()));
            }
        }
    }
    match ctx.cluster.groups().share_acknowledge(&core) {
        Err(e) => {
            let (code, message) = errors::from_cluster(&e);
            error(code, message)
        }
        Ok(results) => ShareAcknowledgeResponse {
            responses: ack_topics(ctx.cluster, results),
            ..ShareAcknowledgeResponse::default()
        },
    }
}

fn ack_topics(
    c: &BrokerCluster,
    results: Vec<(TopicPartition, mk_cluster::Result<()>)>,
) -> Vec<ack_msg::ShareAcknowledgeTopicResponse> {
    let mut out: Vec<ack_msg::ShareAcknowledgeTopicResponse> = Vec::new();
    for (tp, r) in results {
        let Ok(id) = c.topics().id(&tp.topic) else {
            continue;
        };
        let (error_code, error_message) = match r {
            Ok(()) => (KafkaCode::NONE, None),
            Err(e) => {
                let (code, message) = errors::from_cluster(&e);
                (code, Some(message))
            }
        };
        let p = ack_msg::PartitionData {
            partition_index: i32::try_from(tp.partition).unwrap_or(-1),
            error_code,
            error_message,
            current_leader: ack_msg::LeaderIdAndEpoch {
                leader_id: -1,
                leader_epoch: -1,
            },
        };
        match out.iter_mut().find(|t| t.topic_id == Uuid(id.0)) {
            Some(t) => t.partitions.push(p),
            None => out.push(ack_msg::ShareAcknowledgeTopicResponse {
                topic_id: Uuid(id.0),
                partitions: vec![p],
            }),
        }
    }
    out
}
