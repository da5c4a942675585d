//! The guards of the group, offset and transaction APIs.

use super::{
    Authz, CLUSTER, GROUP, Gate, OPERATIONS_OMITTED, TOPIC, TXN, denied, narrow, split,
    unless_refused,
};
use crate::errors::KafkaCode;
use mk_cluster::{Operation, ResourceType};

type Op = Operation;

fn group_denied(operation: Operation, group: &str) -> String {
    denied(operation, ResourceType::Group, group)
}

// ----- FindCoordinator -------------------------------------------------------

use crate::messages::find_coordinator::{FindCoordinatorRequest, FindCoordinatorResponse};

/// DESCRIBE on the group (key type 0) or transactional id (key type 1) of
/// each key.
pub fn find_coordinator(
    authz: &Authz<'_>,
    req: FindCoordinatorRequest,
) -> Gate<FindCoordinatorRequest, FindCoordinatorResponse> {
    let verdict = |key: &str| -> Option<(KafkaCode, String)> {
        match req.key_type {
            0 if !authz.group(Op::Describe, key) => Some((GROUP, group_denied(Op::Describe, key))),
            1 if !authz.transactional_id(Op::Describe, key) => Some((
                TXN,
                denied(Op::Describe, ResourceType::TransactionalId, key),
            )),
            _ => None,
        }
    };
    let batched = authz.ctx.version() >= 4;
    let single = (!batched).then(|| verdict(&req.key)).flatten();
    let per_key: Vec<(String, (KafkaCode, String))> = if batched {
        req.coordinator_keys
            .iter()
            .filter_map(|k| verdict(k).map(|v| (k.clone(), v)))
            .collect()
    } else {
        Vec::new()
    };
    if single.is_none() && per_key.is_empty() {
        return Gate::pass(req);
    }
    // The lookup has no effect, so the handler runs and the refused keys'
    // answers are replaced.
    Gate::patched(req, move |r: &mut FindCoordinatorResponse| {
        if let Some((code, message)) = single {
            r.error_code = code;
            r.error_message = Some(message);
            r.node_id = -1;
            r.host = String::new();
            r.port = -1;
        }
        for c in &mut r.coordinators {
            if let Some((_, (code, message))) = per_key.iter().find(|(k, _)| *k == c.key) {
                c.error_code = *code;
                c.error_message = Some(message.clone());
                c.node_id = -1;
                c.host = String::new();
                c.port = -1;
            }
        }
    })
}

// ----- The classic group protocol ---------------------------------------------

use crate::messages::heartbeat::{HeartbeatRequest, HeartbeatResponse};
use crate::messages::join_group::{JoinGroupRequest, JoinGroupResponse};
use crate::messages::leave_group::{LeaveGroupRequest, LeaveGroupResponse};
use crate::messages::sync_group::{SyncGroupRequest, SyncGroupResponse};

/// READ on the group.
pub fn join_group(
    authz: &Authz<'_>,
    req: JoinGroupRequest,
) -> Gate<JoinGroupRequest, JoinGroupResponse> {
    if authz.group(Op::Read, &req.group_id) {
        return Gate::pass(req);
    }
    Gate::Answer(JoinGroupResponse {
        error_code: GROUP,
        generation_id: -1,
        member_id: req.member_id,
        ..Default::default()
    })
}

/// READ on the group.
pub fn sync_group(
    authz: &Authz<'_>,
    req: SyncGroupRequest,
) -> Gate<SyncGroupRequest, SyncGroupResponse> {
    if authz.group(Op::Read, &req.group_id) {
        return Gate::pass(req);
    }
    Gate::Answer(SyncGroupResponse {
        error_code: GROUP,
        ..Default::default()
    })
}

/// READ on the group.
pub fn heartbeat(
    authz: &Authz<'_>,
    req: HeartbeatRequest,
) -> Gate<HeartbeatRequest, HeartbeatResponse> {
    if authz.group(Op::Read, &req.group_id) {
        return Gate::pass(req);
    }
    Gate::Answer(HeartbeatResponse {
        throttle_time_ms: 0,
        error_code: GROUP,
    })
}

/// READ on the group.
pub fn leave_group(
    authz: &Authz<'_>,
    req: LeaveGroupRequest,
) -> Gate<LeaveGroupRequest, LeaveGroupResponse> {
    if authz.group(Op::Read, &req.group_id) {
        return Gate::pass(req);
    }
    Gate::Answer(LeaveGroupResponse {
        error_code: GROUP,
        ..Default::default()
    })
}

// ----- Offsets ------------------------------------------------------------------

use crate::api::consumer_groups::GroupAnswer;
use crate::api::groups::commit_answer;
use crate::messages::offset_commit::{OffsetCommitRequest, OffsetCommitResponse};

/// READ on the group (else every partition is GROUP_AUTHORIZATION_FAILED)
/// and on each topic.
pub fn offset_commit(
    authz: &Authz<'_>,
    req: OffsetCommitRequest,
) -> Gate<OffsetCommitRequest, OffsetCommitResponse> {
    let failed = |t: &_, code| commit_answer(t, || code);
    if !authz.group(Op::Read, &req.group_id) {
        return Gate::Answer(OffsetCommitResponse {
            throttle_time_ms: 0,
            topics: req.topics.iter().map(|t| failed(t, GROUP)).collect(),
        });
    }
    narrow(
        req,
        |q| &mut q.topics,
        |t| (!authz.topic(Op::Read, &t.name)).then(|| failed(t, TOPIC)),
        |r: &mut OffsetCommitResponse| &mut r.topics,
    )
}

use crate::messages::offset_fetch::{
    OffsetFetchRequest, OffsetFetchResponse, OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use std::collections::BTreeSet;

/// DESCRIBE on each group; DESCRIBE on each topic: named topics refused
/// are TOPIC_AUTHORIZATION_FAILED, a listing of all leaves them out.
pub fn offset_fetch(
    authz: &Authz<'_>,
    req: OffsetFetchRequest,
) -> Gate<OffsetFetchRequest, OffsetFetchResponse> {
    // The handler only reads, so it runs on the whole request and its
    // answer is narrowed; the verdicts are taken now.
    let topics_denied = fetched_topics_denied(authz, &req);
    if authz.ctx.version() < 8 {
        let group_refused = !authz.group(Op::Describe, &req.group_id);
        let listed_all = req.topics.is_none();
        return Gate::patched(req, move |r: &mut OffsetFetchResponse| {
            if group_refused {
                r.error_code = GROUP;
                r.topics.clear();
            } else {
                hide_offsets(&mut r.topics, listed_all, &topics_denied);
            }
        });
    }
    let mut groups: Vec<String> = req.groups.iter().map(|g| g.group_id.clone()).collect();
    groups.push(req.group_id.clone());
    groups.retain(|g| !authz.group(Op::Describe, g));
    let groups_listing_all: Vec<String> = req
        .groups
        .iter()
        .filter(|g| g.topics.is_none())
        .map(|g| g.group_id.clone())
        .collect();
    Gate::patched(req, move |r: &mut OffsetFetchResponse| {
        for g in &mut r.groups {
            if groups.contains(&g.group_id) {
                g.error_code = GROUP;
                g.topics.clear();
            } else {
                let listed_all = groups_listing_all.contains(&g.group_id);
                hide_offsets(&mut g.topics, listed_all, &topics_denied);
            }
        }
    })
}

/// The topics an OffsetFetch may touch (every topic of the cluster and
/// each one named) that the principal may not DESCRIBE.
fn fetched_topics_denied(authz: &Authz<'_>, req: &OffsetFetchRequest) -> BTreeSet<String> {
    let mut topics: BTreeSet<String> = authz.all_topics().into_iter().collect();
    let named = req.groups.iter().flat_map(|g| g.topics.iter().flatten());
    for t in named {
        topics.insert(t.name.clone());
    }
    for t in req.topics.iter().flatten() {
        topics.insert(t.name.clone());
    }
    topics.retain(|t| !authz.topic(Op::Describe, t));
    topics
}

/// A topic of an OffsetFetch answer (v0-7 and v8+ spell it apart).
trait FetchedTopic {
    fn name(&self) -> &str;
    /// Every partition TOPIC_AUTHORIZATION_FAILED, its offset unknown.
    fn deny(&mut self);
}

macro_rules! fetched_topic {
    ($($t:ty),*) => {$(
        impl FetchedTopic for $t {
            fn name(&self) -> &str {
                &self.name
            }
            fn deny(&mut self) {
                for p in &mut self.partitions {
                    p.error_code = TOPIC;
                    p.committed_offset = -1;
                    p.metadata = None;
                }
            }
        }
    )*};
}

fetched_topic!(OffsetFetchResponseTopic, OffsetFetchResponseTopics);

/// A listing of every topic leaves the denied ones out; a denied named
/// topic has its partitions refused.
fn hide_offsets<T: FetchedTopic>(topics: &mut Vec<T>, listed_all: bool, denied: &BTreeSet<String>) {
    if listed_all {
        topics.retain(|t| !denied.contains(t.name()));
    }
    for t in topics.iter_mut().filter(|t| denied.contains(t.name())) {
        t.deny();
    }
}

use crate::messages::offset_delete::{
    OffsetDeleteRequest, OffsetDeleteResponse, OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
};

/// DELETE on the group, READ on each topic.
pub fn offset_delete(
    authz: &Authz<'_>,
    req: OffsetDeleteRequest,
) -> Gate<OffsetDeleteRequest, OffsetDeleteResponse> {
    if !authz.group(Op::Delete, &req.group_id) {
        return Gate::Answer(OffsetDeleteResponse {
            error_code: GROUP,
            ..Default::default()
        });
    }
    narrow(
        req,
        |q| &mut q.topics,
        |t| {
            (!authz.topic(Op::Read, &t.name)).then(|| OffsetDeleteResponseTopic {
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| OffsetDeleteResponsePartition {
                        partition_index: p.partition_index,
                        error_code: TOPIC,
                    })
                    .collect(),
                name: t.name.clone(),
            })
        },
        |r: &mut OffsetDeleteResponse| &mut r.topics,
    )
}

// ----- Group administration -----------------------------------------------------

use crate::messages::delete_groups::{
    DeletableGroupResult, DeleteGroupsRequest, DeleteGroupsResponse,
};
use crate::messages::describe_groups::{DescribeGroupsRequest, DescribeGroupsResponse};
use crate::messages::list_groups::{ListGroupsRequest, ListGroupsResponse};

/// DESCRIBE on the cluster lists every group; otherwise only the groups
/// the principal may DESCRIBE.
pub fn list_groups(
    authz: &Authz<'_>,
    req: ListGroupsRequest,
) -> Gate<ListGroupsRequest, ListGroupsResponse> {
    if authz.cluster(Op::Describe) {
        return Gate::pass(req);
    }
    // The groups are judged as the handler lists them (every type).
    let who = authz.ctx.identity();
    let cluster = std::sync::Arc::clone(authz.ctx.cluster);
    Gate::patched(req, move |r: &mut ListGroupsResponse| {
        r.groups.retain(|g| {
            cluster
                .security()
                .authorize(&who, Op::Describe, ResourceType::Group, &g.group_id)
        })
    })
}

/// DESCRIBE on each group; the authorized operations are the principal's.
pub fn describe_groups(
    authz: &Authz<'_>,
    req: DescribeGroupsRequest,
) -> Gate<DescribeGroupsRequest, DescribeGroupsResponse> {
    let verdicts = group_verdicts(authz, &req.groups, req.include_authorized_operations);
    Gate::patched(req, move |r: &mut DescribeGroupsResponse| {
        apply_verdicts(&mut r.groups, &verdicts)
    })
}

/// DELETE on each group.
pub fn delete_groups(
    authz: &Authz<'_>,
    req: DeleteGroupsRequest,
) -> Gate<DeleteGroupsRequest, DeleteGroupsResponse> {
    narrow(
        req,
        |q| &mut q.groups_names,
        |g| {
            (!authz.group(Op::Delete, g)).then(|| DeletableGroupResult {
                group_id: g.clone(),
                error_code: GROUP,
            })
        },
        |r: &mut DeleteGroupsResponse| &mut r.results,
    )
}

// ----- KIP-848 consumer groups and KIP-932 share groups ----------------------------

use crate::messages::consumer_group_describe as cg_describe;
use crate::messages::consumer_group_heartbeat as cg_heartbeat;
use crate::messages::share_group_describe as sg_describe;
use crate::messages::share_group_heartbeat as sg_heartbeat;

/// READ on the group, DESCRIBE on every subscribed topic.
pub fn consumer_group_heartbeat(
    authz: &Authz<'_>,
    req: cg_heartbeat::ConsumerGroupHeartbeatRequest,
) -> Gate<cg_heartbeat::ConsumerGroupHeartbeatRequest, cg_heartbeat::ConsumerGroupHeartbeatResponse>
{
    let refusal = heartbeat_refusal(authz, &req.group_id, req.subscribed_topic_names.as_deref());
    unless_refused!(req, refusal, cg_heartbeat::ConsumerGroupHeartbeatResponse)
}

/// READ on the group, DESCRIBE on every subscribed topic.
pub fn share_group_heartbeat(
    authz: &Authz<'_>,
    req: sg_heartbeat::ShareGroupHeartbeatRequest,
) -> Gate<sg_heartbeat::ShareGroupHeartbeatRequest, sg_heartbeat::ShareGroupHeartbeatResponse> {
    let refusal = heartbeat_refusal(authz, &req.group_id, req.subscribed_topic_names.as_deref());
    unless_refused!(req, refusal, sg_heartbeat::ShareGroupHeartbeatResponse)
}

/// READ on the group, then DESCRIBE on each subscribed topic: the first
/// denial, if any (both heartbeats).
fn heartbeat_refusal(
    authz: &Authz<'_>,
    group: &str,
    topics: Option<&[String]>,
) -> Option<(KafkaCode, String)> {
    if !authz.group(Op::Read, group) {
        return Some((GROUP, group_denied(Op::Read, group)));
    }
    topics
        .into_iter()
        .flatten()
        .find(|t| !authz.topic(Op::Describe, t))
        .map(|t| (TOPIC, denied(Op::Describe, ResourceType::Topic, t)))
}

/// DESCRIBE on each group (ConsumerGroupDescribe).
pub fn consumer_group_describe(
    authz: &Authz<'_>,
    req: cg_describe::ConsumerGroupDescribeRequest,
) -> Gate<cg_describe::ConsumerGroupDescribeRequest, cg_describe::ConsumerGroupDescribeResponse> {
    let verdicts = group_verdicts(authz, &req.group_ids, req.include_authorized_operations);
    Gate::patched(
        req,
        move |r: &mut cg_describe::ConsumerGroupDescribeResponse| {
            apply_verdicts(&mut r.groups, &verdicts)
        },
    )
}

/// DESCRIBE on each group (ShareGroupDescribe).
pub fn share_group_describe(
    authz: &Authz<'_>,
    req: sg_describe::ShareGroupDescribeRequest,
) -> Gate<sg_describe::ShareGroupDescribeRequest, sg_describe::ShareGroupDescribeResponse> {
    let verdicts = group_verdicts(authz, &req.group_ids, req.include_authorized_operations);
    Gate::patched(
        req,
        move |r: &mut sg_describe::ShareGroupDescribeResponse| {
            apply_verdicts(&mut r.groups, &verdicts)
        },
    )
}

/// Each described group the principal may DESCRIBE gets its authorized
/// operations; each other one only GROUP_AUTHORIZATION_FAILED.
fn apply_verdicts<G: GroupAnswer>(groups: &mut [G], verdicts: &[(String, bool, i32)]) {
    for g in groups {
        match verdicts.iter().find(|(n, ..)| n == g.group_id()) {
            Some((_, true, bits)) => *g.authorized_operations() = *bits,
            Some((_, false, _)) => {
                let id = std::mem::take(g.group_id());
                let message = group_denied(Op::Describe, &id);
                *g = G::failed(id, GROUP, message);
            }
            None => {}
        }
    }
}

/// Per group asked for: its name, whether the principal may DESCRIBE it
/// and its authorized operations (when asked for).
fn group_verdicts(
    authz: &Authz<'_>,
    groups: &[String],
    with_operations: bool,
) -> Vec<(String, bool, i32)> {
    groups
        .iter()
        .map(|g| {
            let bits = if with_operations {
                authz.operations(ResourceType::Group, g)
            } else {
                OPERATIONS_OMITTED
            };
            (g.clone(), authz.group(Op::Describe, g), bits)
        })
        .collect()
}

use crate::messages::share_acknowledge::{ShareAcknowledgeRequest, ShareAcknowledgeResponse};
use crate::messages::share_fetch::{ShareFetchRequest, ShareFetchResponse};

/// READ on the group and on each topic: the whole request is refused when
/// any topic is (share sessions keep their partitions between requests).
pub fn share_fetch(
    authz: &Authz<'_>,
    req: ShareFetchRequest,
) -> Gate<ShareFetchRequest, ShareFetchResponse> {
    let ids: Vec<crate::codec::Uuid> = req.topics.iter().map(|t| t.topic_id).collect();
    let refusal = share_refusal(authz, req.group_id.as_deref(), &ids);
    unless_refused!(req, refusal, ShareFetchResponse)
}

/// READ on the group and on each topic, as ShareFetch.
pub fn share_acknowledge(
    authz: &Authz<'_>,
    req: ShareAcknowledgeRequest,
) -> Gate<ShareAcknowledgeRequest, ShareAcknowledgeResponse> {
    let ids: Vec<crate::codec::Uuid> = req.topics.iter().map(|t| t.topic_id).collect();
    let refusal = share_refusal(authz, req.group_id.as_deref(), &ids);
    unless_refused!(req, refusal, ShareAcknowledgeResponse)
}

fn share_refusal(
    authz: &Authz<'_>,
    group: Option<&str>,
    topic_ids: &[crate::codec::Uuid],
) -> Option<(KafkaCode, String)> {
    let group = group.unwrap_or("");
    if !authz.group(Op::Read, group) {
        return Some((GROUP, group_denied(Op::Read, group)));
    }
    topic_ids.iter().find_map(|id| {
        let name = authz.topic_name(*id)?;
        (!authz.topic(Op::Read, &name))
            .then(|| (TOPIC, denied(Op::Read, ResourceType::Topic, &name)))
    })
}

use crate::messages::alter_share_group_offsets as sg_alter;
use crate::messages::delete_share_group_offsets as sg_delete;
use crate::messages::describe_share_group_offsets as sg_offsets;

/// DESCRIBE on each group; topics the principal may not DESCRIBE are left
/// out.
pub fn describe_share_group_offsets(
    authz: &Authz<'_>,
    req: sg_offsets::DescribeShareGroupOffsetsRequest,
) -> Gate<sg_offsets::DescribeShareGroupOffsetsRequest, sg_offsets::DescribeShareGroupOffsetsResponse>
{
    let groups_denied: Vec<String> = req
        .groups
        .iter()
        .map(|g| g.group_id.clone())
        .filter(|g| !authz.group(Op::Describe, g))
        .collect();
    let mut topics_denied = authz.all_topics();
    topics_denied.retain(|t| !authz.topic(Op::Describe, t));
    Gate::patched(
        req,
        move |r: &mut sg_offsets::DescribeShareGroupOffsetsResponse| {
            for g in &mut r.groups {
                if groups_denied.contains(&g.group_id) {
                    g.error_code = GROUP;
                    g.error_message = Some(group_denied(Op::Describe, &g.group_id));
                    g.topics.clear();
                } else {
                    g.topics.retain(|t| !topics_denied.contains(&t.topic_name));
                }
            }
        },
    )
}

/// READ on the group and on each topic; the whole request is refused when
/// any is.
pub fn alter_share_group_offsets(
    authz: &Authz<'_>,
    req: sg_alter::AlterShareGroupOffsetsRequest,
) -> Gate<sg_alter::AlterShareGroupOffsetsRequest, sg_alter::AlterShareGroupOffsetsResponse> {
    let refusal = if !authz.group(Op::Read, &req.group_id) {
        Some((GROUP, group_denied(Op::Read, &req.group_id)))
    } else {
        req.topics
            .iter()
            .find(|t| !authz.topic(Op::Read, &t.topic_name))
            .map(|t| (TOPIC, denied(Op::Read, ResourceType::Topic, &t.topic_name)))
    };
    match refusal {
        None => Gate::pass(req),
        Some((code, message)) => Gate::Answer(sg_alter::AlterShareGroupOffsetsResponse {
            error_code: code,
            error_message: Some(message),
            ..Default::default()
        }),
    }
}

/// DELETE on the group, READ on each topic; the whole request is refused
/// when any is.
pub fn delete_share_group_offsets(
    authz: &Authz<'_>,
    req: sg_delete::DeleteShareGroupOffsetsRequest,
) -> Gate<sg_delete::DeleteShareGroupOffsetsRequest, sg_delete::DeleteShareGroupOffsetsResponse> {
    let refusal = if !authz.group(Op::Delete, &req.group_id) {
        Some((GROUP, group_denied(Op::Delete, &req.group_id)))
    } else {
        req.topics
            .iter()
            .find(|t| !authz.topic(Op::Read, &t.topic_name))
            .map(|t| (TOPIC, denied(Op::Read, ResourceType::Topic, &t.topic_name)))
    };
    match refusal {
        None => Gate::pass(req),
        Some((code, message)) => Gate::Answer(sg_delete::DeleteShareGroupOffsetsResponse {
            error_code: code,
            error_message: Some(message),
            ..Default::default()
        }),
    }
}

// ----- Transactions ----------------------------------------------------------------

use crate::messages::add_offsets_to_txn::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};
use crate::messages::add_partitions_to_txn::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopicResult,
};
use crate::messages::end_txn::{EndTxnRequest, EndTxnResponse};
use crate::messages::init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
use crate::messages::txn_offset_commit::{
    TxnOffsetCommitRequest, TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
};

/// WRITE on the transactional id; without one (an idempotent producer),
/// IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
pub fn init_producer_id(
    authz: &Authz<'_>,
    req: InitProducerIdRequest,
) -> Gate<InitProducerIdRequest, InitProducerIdResponse> {
    let code = match req.transactional_id.as_deref() {
        Some(id) if !authz.transactional_id(Op::Write, id) => TXN,
        Some(_) => return Gate::pass(req),
        None if authz.cluster(Op::IdempotentWrite) || authz.any(Op::Write, ResourceType::Topic) => {
            return Gate::pass(req);
        }
        None => CLUSTER,
    };
    Gate::Answer(InitProducerIdResponse {
        throttle_time_ms: 0,
        error_code: code,
        producer_id: -1,
        producer_epoch: -1,
    })
}

/// WRITE on the transactional id and on each topic; when any topic is
/// refused nothing is added (the others are OPERATION_NOT_ATTEMPTED).
/// v4+ (the batched form brokers send each other) needs CLUSTER_ACTION on
/// the cluster instead, as in Kafka.
pub fn add_partitions_to_txn(
    authz: &Authz<'_>,
    req: AddPartitionsToTxnRequest,
) -> Gate<AddPartitionsToTxnRequest, AddPartitionsToTxnResponse> {
    if authz.ctx.version() >= 4 {
        if authz.cluster(Op::ClusterAction) {
            return Gate::pass(req);
        }
        return Gate::Answer(AddPartitionsToTxnResponse {
            error_code: CLUSTER,
            ..Default::default()
        });
    }
    let id = &req.v3_and_below_transactional_id;
    let txn_ok = authz.transactional_id(Op::Write, id);
    let topic_ok = |t: &str| authz.topic(Op::Write, t);
    if txn_ok && req.v3_and_below_topics.iter().all(|t| topic_ok(&t.name)) {
        return Gate::pass(req);
    }
    let results = req
        .v3_and_below_topics
        .iter()
        .map(|t| {
            let code = if !txn_ok {
                TXN
            } else if !topic_ok(&t.name) {
                TOPIC
            } else {
                KafkaCode::OPERATION_NOT_ATTEMPTED
            };
            AddPartitionsToTxnTopicResult {
                name: t.name.clone(),
                results_by_partition: t
                    .partitions
                    .iter()
                    .map(|p| AddPartitionsToTxnPartitionResult {
                        partition_index: *p,
                        partition_error_code: code,
                    })
                    .collect(),
            }
        })
        .collect();
    Gate::Answer(AddPartitionsToTxnResponse {
        results_by_topic_v3_and_below: results,
        ..Default::default()
    })
}

/// WRITE on the transactional id, READ on the group.
pub fn add_offsets_to_txn(
    authz: &Authz<'_>,
    req: AddOffsetsToTxnRequest,
) -> Gate<AddOffsetsToTxnRequest, AddOffsetsToTxnResponse> {
    let code = if !authz.transactional_id(Op::Write, &req.transactional_id) {
        TXN
    } else if !authz.group(Op::Read, &req.group_id) {
        GROUP
    } else {
        return Gate::pass(req);
    };
    Gate::Answer(AddOffsetsToTxnResponse {
        throttle_time_ms: 0,
        error_code: code,
    })
}

/// WRITE on the transactional id.
pub fn end_txn(authz: &Authz<'_>, req: EndTxnRequest) -> Gate<EndTxnRequest, EndTxnResponse> {
    if authz.transactional_id(Op::Write, &req.transactional_id) {
        return Gate::pass(req);
    }
    Gate::Answer(EndTxnResponse {
        error_code: TXN,
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    })
}

/// WRITE on the transactional id, READ on the group (both refuse every
/// partition), READ on each topic.
pub fn txn_offset_commit(
    authz: &Authz<'_>,
    mut req: TxnOffsetCommitRequest,
) -> Gate<TxnOffsetCommitRequest, TxnOffsetCommitResponse> {
    let failed = |t: &crate::messages::txn_offset_commit::TxnOffsetCommitRequestTopic, code| {
        TxnOffsetCommitResponseTopic {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| TxnOffsetCommitResponsePartition {
                    partition_index: p.partition_index,
                    error_code: code,
                })
                .collect(),
        }
    };
    let whole = if !authz.transactional_id(Op::Write, &req.transactional_id) {
        Some(TXN)
    } else if !authz.group(Op::Read, &req.group_id) {
        Some(GROUP)
    } else {
        None
    };
    if let Some(code) = whole {
        return Gate::Answer(TxnOffsetCommitResponse {
            throttle_time_ms: 0,
            topics: req.topics.iter().map(|t| failed(t, code)).collect(),
        });
    }
    let (allowed, refused) = split(std::mem::take(&mut req.topics), |t| {
        authz.topic(Op::Read, &t.name)
    });
    req.topics = allowed;
    let refused: Vec<_> = refused.iter().map(|t| failed(t, TOPIC)).collect();
    Gate::patched(req, move |r: &mut TxnOffsetCommitResponse| {
        r.topics.extend(refused)
    })
}

use crate::messages::describe_transactions::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, TransactionState,
};
use crate::messages::list_transactions::{ListTransactionsRequest, ListTransactionsResponse};

/// DESCRIBE on each transactional id.
pub fn describe_transactions(
    authz: &Authz<'_>,
    mut req: DescribeTransactionsRequest,
) -> Gate<DescribeTransactionsRequest, DescribeTransactionsResponse> {
    let (allowed, refused) = split(std::mem::take(&mut req.transactional_ids), |id| {
        authz.transactional_id(Op::Describe, id)
    });
    req.transactional_ids = allowed;
    let refused: Vec<TransactionState> = refused
        .into_iter()
        .map(|transactional_id| TransactionState {
            error_code: TXN,
            transactional_id,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        })
        .collect();
    Gate::patched(req, move |r: &mut DescribeTransactionsResponse| {
        r.transaction_states.extend(refused)
    })
}

/// Lists only the transactional ids the principal may DESCRIBE.
pub fn list_transactions(
    authz: &Authz<'_>,
    req: ListTransactionsRequest,
) -> Gate<ListTransactionsRequest, ListTransactionsResponse> {
    // The ids are judged after the handler listed them; the verdict needs
    // the request's identity, captured here.
    let who = authz.ctx.identity();
    let cluster = std::sync::Arc::clone(authz.ctx.cluster);
    Gate::patched(req, move |r: &mut ListTransactionsResponse| {
        r.transaction_states.retain(|t| {
            cluster.security().authorize(
                &who,
                Op::Describe,
                ResourceType::TransactionalId,
                &t.transactional_id,
            )
        })
    })
}
