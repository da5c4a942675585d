//! Consumer groups as Kafka clients drive them: FindCoordinator, JoinGroup,
//! SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups,
//! DescribeGroups, DeleteGroups and OffsetDelete. The consumer protocol's
//! subscription and assignment payloads (`consumer_protocol`) are decoded
//! here only to tell the core which topics a member subscribes to and
//! which partitions it was given; the bytes themselves are handed through
//! verbatim.

use super::Ctx;
use crate::errors::{self, KafkaCode};
use crate::messages::delete_groups::{
    DeletableGroupResult, DeleteGroupsRequest, DeleteGroupsResponse,
};
use crate::messages::describe_groups::{
    DescribeGroupsRequest, DescribeGroupsResponse, DescribedGroup, DescribedGroupMember,
};
use crate::messages::find_coordinator::{
    Coordinator, FindCoordinatorRequest, FindCoordinatorResponse,
};
use crate::messages::heartbeat::{HeartbeatRequest, HeartbeatResponse};
use crate::messages::join_group::{
    JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse, JoinGroupResponseMember,
};
use crate::messages::leave_group::{LeaveGroupRequest, LeaveGroupResponse, MemberResponse};
use crate::messages::list_groups::{ListGroupsRequest, ListGroupsResponse, ListedGroup};
use crate::messages::offset_commit::{
    OffsetCommitRequest, OffsetCommitRequestTopic, OffsetCommitResponse,
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use crate::messages::offset_delete::{
    OffsetDeleteRequest, OffsetDeleteResponse, OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
};
use crate::messages::offset_fetch::{
    OffsetFetchRequest, OffsetFetchResponse, OffsetFetchResponseGroup,
    OffsetFetchResponsePartition, OffsetFetchResponsePartitions, OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
};
use crate::messages::sync_group::{SyncGroupRequest, SyncGroupResponse};
use bytes::Bytes;
use mk_cluster::{
    ClusterError, CommitRequest, CoordinatorKey, GroupJoin, GroupSync, GroupType,
    OffsetAndMetadata, TopicPartition,
};
use std::collections::BTreeMap;

/// Coordinator key types. Kafka's third, 2 (a share-partition key, which
/// brokers ask of each other for share-group state), is not served.
pub const KEY_TYPE_GROUP: i8 = 0;
pub const KEY_TYPE_TRANSACTION: i8 = 1;

/// The consumer protocol's payloads (protocol type "consumer"): a member's
/// subscription in JoinGroup metadata and its assignment in SyncGroup.
/// Always classic encodings (not flexible), versioned by their own first
/// int16; newer versions append fields, which are ignored here.
pub mod consumer_protocol {
    use crate::codec::{DecodeResult, Reader};
    use bytes::Bytes;

    /// The topics of a subscription (version 0+: version i16, topics
    /// [string], user_data bytes, then fields of later versions).
    pub fn subscribed_topics(metadata: &Bytes) -> DecodeResult<Vec<String>> {
        let mut r = Reader::new(metadata, false);
        let _version = r.i16()?;
        r.array(|r| r.string())
    }

    /// The partitions of an assignment (version i16, [topic, [partition]],
    /// user_data bytes).
    pub fn assigned_partitions(assignment: &Bytes) -> DecodeResult<Vec<(String, Vec<i32>)>> {
        if assignment.is_empty() {
            // A member given nothing may get empty bytes.
            return Ok(Vec::new());
        }
        let mut r = Reader::new(assignment, false);
        let _version = r.i16()?;
        r.array(|r| Ok((r.string()?, r.array(|r| r.i32())?)))
    }
}

// ----- handlers ----------------------------------------------------------------

const CONSUMER: &str = mk_cluster::CONSUMER_PROTOCOL_TYPE;

/// The client's host as Kafka reports it in group descriptions ("/ip").
pub(crate) fn client_host(ctx: &Ctx<'_>) -> String {
    ctx.peer
        .map_or_else(String::new, |p| format!("/{}", p.ip()))
}

fn code_of(e: &ClusterError) -> KafkaCode {
    errors::kafka_code(e.code())
}

/// The code to answer when the broker that received a request does not
/// coordinate its group or transactional id (NOT_COORDINATOR, or
/// COORDINATOR_NOT_AVAILABLE); `None` when it does. The core places
/// coordinators (`brokers().coordinator`).
pub(crate) fn not_coordinator(ctx: &Ctx<'_>, key: CoordinatorKey<'_>) -> Option<KafkaCode> {
    coordinated_here(ctx, key).err().map(|e| code_of(&e))
}

/// Ok when the broker that received a request coordinates `key`; the
/// core's NOT_COORDINATOR (or COORDINATOR_NOT_AVAILABLE) otherwise, for
/// answers that carry a message too.
pub(crate) fn coordinated_here(ctx: &Ctx<'_>, key: CoordinatorKey<'_>) -> Result<(), ClusterError> {
    ctx.cluster.brokers().check_coordinator(key, ctx.broker_id)
}

/// FindCoordinator's answer for one key: the broker the core places its
/// coordinator on, whichever broker was asked.
fn coordinator_for(ctx: &Ctx<'_>, key: CoordinatorKey<'_>) -> Coordinator {
    let id = key.as_str().to_string();
    match ctx.cluster.brokers().coordinator(key) {
        Err(e) => unavailable(&id, code_of(&e), &e.to_string()),
        Ok(b) => match ctx.endpoints.iter().find(|e| e.broker_id == b) {
            Some(e) => Coordinator {
                key: id,
                node_id: e.broker_id,
                host: e.host.clone(),
                port: i32::from(e.port),
                error_code: KafkaCode::NONE,
                error_message: None,
            },
            None => unavailable(
                &id,
                KafkaCode::COORDINATOR_NOT_AVAILABLE,
                &format!("broker {b} has no Kafka listener"),
            ),
        },
    }
}

fn unavailable(key: &str, code: KafkaCode, message: &str) -> Coordinator {
    Coordinator {
        key: key.to_string(),
        node_id: -1,
        host: String::new(),
        port: -1,
        error_code: code,
        error_message: Some(message.to_string()),
    }
}

pub async fn handle_find_coordinator(
    ctx: &Ctx<'_>,
    req: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let answer = |key: &str| match req.key_type {
        KEY_TYPE_GROUP => coordinator_for(ctx, CoordinatorKey::Group(key)),
        KEY_TYPE_TRANSACTION => coordinator_for(ctx, CoordinatorKey::Transaction(key)),
        other => {
            let message = format!("unknown coordinator key type {other}");
            unavailable(key, KafkaCode::INVALID_REQUEST, &message)
        }
    };
    if ctx.version() >= 4 {
        // v4+ asks for several keys at once.
        return FindCoordinatorResponse {
            coordinators: req.coordinator_keys.iter().map(|k| answer(k)).collect(),
            ..FindCoordinatorResponse::default()
        };
    }
    let c = answer(&req.key);
    FindCoordinatorResponse {
        throttle_time_ms: 0,
        error_code: c.error_code,
        error_message: c.error_message,
        node_id: c.node_id,
        host: c.host,
        port: c.port,
        coordinators: Vec::new(),
    }
}

/// The topics a consumer-protocol member subscribes to (from its first
/// protocol's metadata; every protocol of a member carries the same
/// subscription). Unknown protocol types and undecodable metadata give
/// none: the bytes are still handed through.
fn subscribed_topics(protocol_type: &str, protocols: &[JoinGroupRequestProtocol]) -> Vec<String> {
    if protocol_type != CONSUMER {
        return Vec::new();
    }
    protocols
        .first()
        .and_then(|p| consumer_protocol::subscribed_topics(&p.metadata).ok())
        .unwrap_or_default()
}

pub async fn handle_join_group(ctx: &Ctx<'_>, req: JoinGroupRequest) -> JoinGroupResponse {
    let v = ctx.version();
    if let Some(code) = not_coordinator(ctx, CoordinatorKey::Group(&req.group_id)) {
        return join_failed(v, code, req.member_id);
    }
    let join = GroupJoin {
        group_id: req.group_id.clone(),
        member_id: req.member_id.clone(),
        group_instance_id: req.group_instance_id.clone(),
        client_id: ctx.header.client_id.clone().unwrap_or_default(),
        client_host: client_host(ctx),
        session_timeout_ms: req.session_timeout_ms,
        // v0 has no rebalance timeout: the session timeout is both.
        rebalance_timeout_ms: if v == 0 {
            req.session_timeout_ms
        } else {
            req.rebalance_timeout_ms
        },
        subscribed_topics: subscribed_topics(&req.protocol_type, &req.protocols),
        protocol_type: req.protocol_type.clone(),
        protocols: req
            .protocols
            .iter()
            .map(|p| (p.name.clone(), p.metadata.clone()))
            .collect(),
        require_known_member_id: v >= 4,
    };
    let joining = ctx.cluster.groups().join_member(join);
    match ctx.until_shutdown(joining).await {
        Ok(j) => JoinGroupResponse {
            throttle_time_ms: 0,
            error_code: KafkaCode::NONE,
            generation_id: j.generation_id,
            protocol_type: Some(j.protocol_type),
            protocol_name: Some(j.protocol_name),
            leader: j.leader_id,
            skip_assignment: false,
            member_id: j.member_id,
            members: j
                .members
                .into_iter()
                .map(|m| JoinGroupResponseMember {
                    member_id: m.member_id,
                    group_instance_id: m.group_instance_id,
                    metadata: m.metadata,
                })
                .collect(),
        },
        Err(e) => {
            let member_id = e
                .member_id_required()
                .map_or_else(|| req.member_id.clone(), str::to_string);
            join_failed(v, code_of(&e), member_id)
        }
    }
}

fn join_failed(v: i16, code: KafkaCode, member_id: String) -> JoinGroupResponse {
    JoinGroupResponse {
        throttle_time_ms: 0,
        error_code: code,
        generation_id: -1,
        protocol_type: None,
        protocol_name: if v >= 7 { None } else { Some(String::new()) },
        leader: String::new(),
        skip_assignment: false,
        member_id,
        members: Vec::new(),
    }
}

pub async fn handle_sync_group(ctx: &Ctx<'_>, req: SyncGroupRequest) -> SyncGroupResponse {
    if let Some(code) = not_coordinator(ctx, CoordinatorKey::Group(&req.group_id)) {
        return sync_failed(code);
    }
    let assigned_partitions = req
        .assignments
        .iter()
        .map(|a| {
            let partitions = consumer_protocol::assigned_partitions(&a.assignment)
                .unwrap_or_default()
                .into_iter()
                .flat_map(|(topic, ps)| {
                    ps.into_iter().filter_map(move |p| {
                        u32::try_from(p)
                            .ok()
                            .map(|p| TopicPartition::new(&topic, p))
                    })
                })
                .collect();
            (a.member_id.clone(), partitions)
        })
        .collect();
    let sync = GroupSync {
        group_id: req.group_id,
        generation_id: req.generation_id,
        member_id: req.member_id,
        group_instance_id: req.group_instance_id,
        protocol_type: req.protocol_type,
        protocol_name: req.protocol_name,
        assignments: req
            .assignments
            .into_iter()
            .map(|a| (a.member_id, a.assignment))
            .collect(),
        assigned_partitions,
    };
    let syncing = ctx.cluster.groups().sync_member(sync);
    match ctx.until_shutdown(syncing).await {
        Ok(s) => SyncGroupResponse {
            throttle_time_ms: 0,
            error_code: KafkaCode::NONE,
            protocol_type: Some(s.protocol_type),
            protocol_name: Some(s.protocol_name),
            assignment: s.assignment,
        },
        Err(e) => sync_failed(code_of(&e)),
    }
}

fn sync_failed(code: KafkaCode) -> SyncGroupResponse {
    SyncGroupResponse {
        throttle_time_ms: 0,
        error_code: code,
        protocol_type: None,
        protocol_name: None,
        assignment: Bytes::new(),
    }
}

pub async fn handle_heartbeat(ctx: &Ctx<'_>, req: HeartbeatRequest) -> HeartbeatResponse {
    let beat = coordinated_here(ctx, CoordinatorKey::Group(&req.group_id)).and_then(|()| {
        ctx.cluster.groups().heartbeat_member(
            &req.group_id,
            &req.member_id,
            req.generation_id,
            req.group_instance_id.as_deref(),
        )
    });
    HeartbeatResponse {
        throttle_time_ms: 0,
        error_code: beat.err().map_or(KafkaCode::NONE, |e| code_of(&e)),
    }
}

pub async fn handle_leave_group(ctx: &Ctx<'_>, req: LeaveGroupRequest) -> LeaveGroupResponse {
    let v = ctx.version();
    if let Some(code) = not_coordinator(ctx, CoordinatorKey::Group(&req.group_id)) {
        return LeaveGroupResponse {
            throttle_time_ms: 0,
            error_code: code,
            members: Vec::new(),
        };
    }
    // v0-v2 name one member; v3+ a batch.
    let members: Vec<(String, Option<String>)> = if v <= 2 {
        vec![(req.member_id.clone(), None)]
    } else {
        req.members
            .iter()
            .map(|m| (m.member_id.clone(), m.group_instance_id.clone()))
            .collect()
    };
    match ctx.cluster.groups().leave_members(&req.group_id, &members) {
        Err(e) => LeaveGroupResponse {
            throttle_time_ms: 0,
            error_code: code_of(&e),
            members: Vec::new(),
        },
        Ok(results) => {
            let left: Vec<MemberResponse> = members
                .iter()
                .zip(&results)
                .map(|((member_id, group_instance_id), r)| MemberResponse {
                    member_id: member_id.clone(),
                    group_instance_id: group_instance_id.clone(),
                    error_code: r.as_ref().err().map_or(KafkaCode::NONE, code_of),
                })
                .collect();
            // Before batching (v0-v2) the one member's error is the answer's.
            let error_code = if v <= 2 {
                left.first().map_or(KafkaCode::NONE, |m| m.error_code)
            } else {
                KafkaCode::NONE
            };
            LeaveGroupResponse {
                throttle_time_ms: 0,
                error_code,
                members: if v >= 3 { left } else { Vec::new() },
            }
        }
    }
}

pub async fn handle_offset_commit(ctx: &Ctx<'_>, req: OffsetCommitRequest) -> OffsetCommitResponse {
    // The core answers each partition as named (one that does not exist on
    // its own); at a broker that does not coordinate the group, every
    // partition is answered NOT_COORDINATOR.
    let named: Vec<(&str, i32, OffsetAndMetadata)> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                let committed = OffsetAndMetadata::from_wire(
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.committed_metadata.clone(),
                );
                (t.name.as_str(), p.partition_index, committed)
            })
        })
        .collect();
    let codes: Vec<KafkaCode> = match not_coordinator(ctx, CoordinatorKey::Group(&req.group_id)) {
        Some(code) => vec![code; named.len()],
        None => {
            // The version decides two answers (see `commit_request`): v9+
            // is what KIP-848 members must send.
            let request = CommitRequest {
                group: &req.group_id,
                generation: req.generation_id_or_member_epoch,
                member: &req.member_id,
                instance: req.group_instance_id.as_deref(),
                version: Some(ctx.version()),
            };
            let answers = ctx.cluster.groups().commit_each(&request, &named);
            answers
                .partitions
                .iter()
                .map(|r| r.as_ref().err().map_or(KafkaCode::NONE, code_of))
                .collect()
        }
    };
    let mut codes = codes.into_iter();
    OffsetCommitResponse {
        throttle_time_ms: 0,
        topics: req
            .topics
            .iter()
            .map(|t| commit_answer(t, || codes.next().unwrap_or(KafkaCode::NONE)))
            .collect(),
    }
}

/// A committed topic's answer: each partition's code, in order.
pub(crate) fn commit_answer(
    t: &OffsetCommitRequestTopic,
    mut code: impl FnMut() -> KafkaCode,
) -> OffsetCommitResponseTopic {
    OffsetCommitResponseTopic {
        name: t.name.clone(),
        partitions: t
            .partitions
            .iter()
            .map(|p| OffsetCommitResponsePartition {
                partition_index: p.partition_index,
                error_code: code(),
            })
            .collect(),
    }
}

/// One group of an OffsetFetch request: its id, the partitions asked for
/// (`None`: every partition the group has committed), and (v9+) the
/// member asking, checked against a KIP-848 group.
struct FetchGroup<'a> {
    group_id: &'a str,
    topics: Option<Vec<(&'a str, &'a [i32])>>,
    member: Option<(Option<&'a str>, i32)>,
    /// v0-v1 have no group-level error: a refused group answers it on every
    /// partition asked.
    errors_per_partition: bool,
}

/// An OffsetFetch group refused whole: the group's error and no
/// partitions, or (v0-v1) each asked partition with the error, as Kafka's
/// `OffsetFetchRequest.getErrorResponse` answers.
fn fetch_group_failed(g: &FetchGroup<'_>, code: KafkaCode) -> OffsetFetchResponseGroup {
    let topics = g
        .topics
        .iter()
        .filter(|_| g.errors_per_partition)
        .flatten()
        .map(|(name, partitions)| OffsetFetchResponseTopics {
            name: name.to_string(),
            partitions: partitions.iter().map(|p| fetched(*p, None, code)).collect(),
        });
    OffsetFetchResponseGroup {
        group_id: g.group_id.to_string(),
        topics: topics.collect(),
        error_code: code,
    }
}

/// One partition of an OffsetFetch answer: Kafka answers offset -1, epoch
/// -1 and metadata "" where nothing is committed.
fn fetched(
    partition: i32,
    committed: Option<OffsetAndMetadata>,
    code: KafkaCode,
) -> OffsetFetchResponsePartitions {
    let committed = committed.unwrap_or_else(|| OffsetAndMetadata::new(-1));
    OffsetFetchResponsePartitions {
        partition_index: partition,
        committed_offset: committed.offset,
        committed_leader_epoch: committed.leader_epoch_or_none(),
        metadata: Some(committed.metadata),
        error_code: code,
    }
}

fn fetch_group(ctx: &Ctx<'_>, g: &FetchGroup<'_>) -> OffsetFetchResponseGroup {
    if let Some(code) = not_coordinator(ctx, CoordinatorKey::Group(g.group_id)) {
        return fetch_group_failed(g, code);
    }
    let answer = ctx
        .cluster
        .groups()
        .fetch_offsets(g.group_id, g.member, g.topics.as_deref());
    let topics = match answer {
        Ok(topics) => topics,
        Err(e) => return fetch_group_failed(g, code_of(&e)),
    };
    OffsetFetchResponseGroup {
        group_id: g.group_id.to_string(),
        topics: topics
            .into_iter()
            .map(|t| OffsetFetchResponseTopics {
                name: t.name,
                partitions: t
                    .partitions
                    .into_iter()
                    .map(|(index, answer)| match answer {
                        Ok(committed) => fetched(index, committed, KafkaCode::NONE),
                        Err(e) => fetched(index, None, code_of(&e)),
                    })
                    .collect(),
            })
            .collect(),
        error_code: KafkaCode::NONE,
    }
}

pub async fn handle_offset_fetch(ctx: &Ctx<'_>, req: OffsetFetchRequest) -> OffsetFetchResponse {
    if ctx.version() >= 8 {
        // v8+ asks for several groups at once.
        let groups = req.groups.iter().map(|g| FetchGroup {
            group_id: &g.group_id,
            member: (ctx.version() >= 9).then_some((g.member_id.as_deref(), g.member_epoch)),
            errors_per_partition: false,
            topics: g.topics.as_ref().map(|ts| {
                ts.iter()
                    .map(|t| (t.name.as_str(), t.partition_indexes.as_slice()))
                    .collect()
            }),
        });
        return OffsetFetchResponse {
            groups: groups.map(|g| fetch_group(ctx, &g)).collect(),
            ..OffsetFetchResponse::default()
        };
    }
    // v1-v7: one group, answered without its id.
    let group = FetchGroup {
        group_id: &req.group_id,
        member: None,
        errors_per_partition: ctx.version() < 2,
        topics: req.topics.as_ref().map(|ts| {
            ts.iter()
                .map(|t| (t.name.as_str(), t.partition_indexes.as_slice()))
                .collect()
        }),
    };
    let g = fetch_group(ctx, &group);
    OffsetFetchResponse {
        topics: g
            .topics
            .into_iter()
            .map(|t| OffsetFetchResponseTopic {
                name: t.name,
                partitions: t
                    .partitions
                    .into_iter()
                    .map(|p| OffsetFetchResponsePartition {
                        partition_index: p.partition_index,
                        committed_offset: p.committed_offset,
                        committed_leader_epoch: p.committed_leader_epoch,
                        metadata: p.metadata,
                        error_code: p.error_code,
                    })
                    .collect(),
            })
            .collect(),
        error_code: g.error_code,
        ..OffsetFetchResponse::default()
    }
}

pub async fn handle_list_groups(ctx: &Ctx<'_>, req: ListGroupsRequest) -> ListGroupsResponse {
    let listed = ctx
        .cluster
        .groups()
        .listings_filtered(&req.states_filter, &req.types_filter);
    match listed {
        Err(e) => ListGroupsResponse {
            throttle_time_ms: 0,
            error_code: code_of(&e),
            groups: Vec::new(),
        },
        Ok(listings) => ListGroupsResponse {
            throttle_time_ms: 0,
            error_code: KafkaCode::NONE,
            // Each broker lists the groups it coordinates, as in Kafka
            // (admin clients ask every broker and merge).
            groups: listings
                .into_iter()
                .filter(|l| not_coordinator(ctx, CoordinatorKey::Group(&l.group_id)).is_none())
                .map(|l| ListedGroup {
                    group_id: l.group_id,
                    protocol_type: l.protocol_type,
                    group_state: l.state.as_str().to_string(),
                    group_type: l.group_type.as_str().to_string(),
                })
                .collect(),
        },
    }
}

pub async fn handle_describe_groups(
    ctx: &Ctx<'_>,
    req: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let groups = req
        .groups
        .iter()
        .map(|id| match not_coordinator(ctx, CoordinatorKey::Group(id)) {
            Some(code) => Err(code),
            None => ctx.cluster.groups().describe(id).map_err(|e| code_of(&e)),
        })
        .zip(&req.groups)
        .map(|(described, id)| match described {
            Err(code) => DescribedGroup {
                error_code: code,
                group_id: id.clone(),
                ..DescribedGroup::default()
            },
            // Kafka describes a group that is not a classic one (unknown, or
            // a KIP-848 or share group) as Dead; from v6 with
            // GROUP_ID_NOT_FOUND and a message saying which.
            Ok(None) => {
                let (error_code, message) =
                    super::consumer_groups::not_found(ctx.cluster, id, GroupType::Classic);
                let v6 = ctx.version() >= 6;
                DescribedGroup {
                    group_id: id.clone(),
                    group_state: "Dead".into(),
                    error_code: if v6 { error_code } else { KafkaCode::NONE },
                    error_message: v6.then_some(message),
                    ..DescribedGroup::default()
                }
            }
            Ok(Some(d)) => DescribedGroup {
                error_code: KafkaCode::NONE,
                error_message: None,
                group_id: d.group_id.clone(),
                group_state: d.state.as_str().to_string(),
                protocol_type: d.protocol_type.clone(),
                protocol_data: d.protocol_name.clone(),
                members: d
                    .members
                    .iter()
                    .map(|m| DescribedGroupMember {
                        member_id: m.member_id.clone(),
                        group_instance_id: m.group_instance_id.clone(),
                        client_id: m.client_id.clone(),
                        client_host: m.client_host.clone(),
                        member_metadata: m.metadata.clone(),
                        member_assignment: m.assignment_bytes.clone(),
                    })
                    .collect(),
                authorized_operations: if req.include_authorized_operations {
                    // READ, DESCRIBE, DELETE: everything a group has.
                    (1 << 3) | (1 << 6) | (1 << 8)
                } else {
                    i32::MIN
                },
            },
        })
        .collect();
    DescribeGroupsResponse {
        throttle_time_ms: 0,
        groups,
    }
}

pub async fn handle_delete_groups(ctx: &Ctx<'_>, req: DeleteGroupsRequest) -> DeleteGroupsResponse {
    // Groups coordinated elsewhere are answered NOT_COORDINATOR; the core
    // deletes the others.
    let misdirected: BTreeMap<&str, KafkaCode> = req
        .groups_names
        .iter()
        .filter_map(|g| not_coordinator(ctx, CoordinatorKey::Group(g)).map(|c| (g.as_str(), c)))
        .collect();
    let here: Vec<String> = req
        .groups_names
        .iter()
        .filter(|g| !misdirected.contains_key(g.as_str()))
        .cloned()
        .collect();
    let mut answers = match ctx.cluster.groups().delete(&here) {
        Ok(r) => r
            .into_iter()
            .map(|r| r.err().map_or(KafkaCode::NONE, |e| code_of(&e)))
            .collect(),
        Err(e) => vec![code_of(&e); here.len()],
    }
    .into_iter();
    let results = req
        .groups_names
        .iter()
        .map(|g| DeletableGroupResult {
            group_id: g.clone(),
            error_code: match misdirected.get(g.as_str()) {
                Some(code) => *code,
                None => answers.next().unwrap_or(KafkaCode::NONE),
            },
        })
        .collect();
    DeleteGroupsResponse {
        throttle_time_ms: 0,
        results,
    }
}

pub async fn handle_offset_delete(ctx: &Ctx<'_>, req: OffsetDeleteRequest) -> OffsetDeleteResponse {
    let named: Vec<(&str, i32)> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.as_str(), p.partition_index))
        })
        .collect();
    let (error_code, codes) = match not_coordinator(ctx, CoordinatorKey::Group(&req.group_id)) {
        Some(code) => (code, vec![code; named.len()]),
        None => {
            let answers = ctx
                .cluster
                .groups()
                .delete_offsets_each(&req.group_id, &named);
            let codes = answers
                .partitions
                .iter()
                .map(|r| r.as_ref().err().map_or(KafkaCode::NONE, code_of))
                .collect();
            (
                answers
                    .request
                    .err()
                    .map_or(KafkaCode::NONE, |e| code_of(&e)),
                codes,
            )
        }
    };
    let mut codes = codes.into_iter();
    OffsetDeleteResponse {
        error_code,
        throttle_time_ms: 0,
        topics: req
            .topics
            .iter()
            .map(|t| OffsetDeleteResponseTopic {
                name: t.name.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| OffsetDeleteResponsePartition {
                        partition_index: p.partition_index,
                        error_code: codes.next().unwrap_or(error_code),
                    })
                    .collect(),
            })
            .collect(),
    }
}
