//! The guards of the group, offset and transaction APIs.

use super::{Authz, GROUP, Gate, OPERATIONS_OMITTED, On, Refusal, TOPIC, TXN, Whole};
use super::{narrow, unless_refused, whole_requests};
use crate::api::ErrorAnswer;
use crate::errors::KafkaCode;
use mk_cluster::{Operation, ResourceType};

type Op = Operation;

// ----- FindCoordinator -------------------------------------------------------

use crate::messages::find_coordinator::{FindCoordinatorRequest, FindCoordinatorResponse};

/// DESCRIBE on the group (key type 0) or transactional id (key type 1) of
/// each key.
pub fn find_coordinator(
    authz: &Authz<'_>,
    req: FindCoordinatorRequest,
) -> Gate<FindCoordinatorRequest, FindCoordinatorResponse> {
    let verdict = |key: &str| match req.key_type {
        0 => authz.refusal(Op::Describe, On::Group(key)),
        1 => authz.refusal(Op::Describe, On::TransactionalId(key)),
        _ => None,
    };
    let batched = authz.ctx.version() >= 4;
    let single = (!batched).then(|| verdict(&req.key)).flatten();
    let per_key: Vec<(String, Refusal)> = if batched {
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
        if let Some(refusal) = single {
            r.error_code = refusal.code;
            r.error_message = Some(refusal.message);
            (r.node_id, r.host, r.port) = (-1, String::new(), -1);
        }
        for c in &mut r.coordinators {
            if let Some((_, refusal)) = per_key.iter().find(|(k, _)| *k == c.key) {
                c.error_code = refusal.code;
                c.error_message = Some(refusal.message.clone());
                (c.node_id, c.host, c.port) = (-1, String::new(), -1);
            }
        }
    })
}

// ----- The classic group protocol ---------------------------------------------

use crate::messages::join_group::{JoinGroupRequest, JoinGroupResponse};
use crate::messages::{end_txn, heartbeat, leave_group, sync_group};

/// READ on the group; the member id is echoed.
pub fn join_group(
    authz: &Authz<'_>,
    req: JoinGroupRequest,
) -> Gate<JoinGroupRequest, JoinGroupResponse> {
    if authz.group(Op::Read, &req.group_id) {
        return Gate::pass(req);
    }
    Gate::Answer(JoinGroupResponse {
        error_code: GROUP,
        member_id: req.member_id,
        ..Default::default()
    })
}

// SyncGroup, Heartbeat and LeaveGroup need READ on the group, EndTxn WRITE
// on the transactional id, and nothing else (served.list's `authz::whole`).
whole_requests! {
    sync_group::SyncGroupRequest => sync_group::SyncGroupResponse: Read on Group(group_id);
    heartbeat::HeartbeatRequest => heartbeat::HeartbeatResponse: Read on Group(group_id);
    leave_group::LeaveGroupRequest => leave_group::LeaveGroupResponse: Read on Group(group_id);
    end_txn::EndTxnRequest => end_txn::EndTxnResponse: Write on TransactionalId(transactional_id);
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
    if let Some(refusal) = authz.refusal(Op::Delete, On::Group(&req.group_id)) {
        return Gate::Answer(OffsetDeleteResponse::error(refusal.code, refusal.message));
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
    let allowed = authz.judge_later(Op::Describe, ResourceType::Group);
    Gate::patched(req, move |r: &mut ListGroupsResponse| {
        r.groups.retain(|g| allowed(&g.group_id));
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

use crate::messages::consumer_group_describe as cg_describe;
use crate::messages::describe_groups;
use crate::messages::share_group_describe as sg_describe;

/// A request describing groups (DescribeGroups, ConsumerGroupDescribe,
/// ShareGroupDescribe): the groups asked for and whether their authorized
/// operations are; the described groups of its response.
pub(crate) trait DescribesGroups {
    type Response;
    type Group: GroupAnswer;
    fn asked(&self) -> (&[String], bool);
    fn described(response: &mut Self::Response) -> &mut [Self::Group];
}

macro_rules! describes_groups {
    ($($req:ty { $ids:ident } => $response:ty { $group:ty };)*) => {$(
        impl DescribesGroups for $req {
            type Response = $response;
            type Group = $group;
            fn asked(&self) -> (&[String], bool) {
                (&self.$ids, self.include_authorized_operations)
            }
            fn described(response: &mut $response) -> &mut [$group] {
                &mut response.groups
            }
        }
    )*};
}

describes_groups! {
    describe_groups::DescribeGroupsRequest { groups } =>
        describe_groups::DescribeGroupsResponse { describe_groups::DescribedGroup };
    cg_describe::ConsumerGroupDescribeRequest { group_ids } =>
        cg_describe::ConsumerGroupDescribeResponse { cg_describe::DescribedGroup };
    sg_describe::ShareGroupDescribeRequest { group_ids } =>
        sg_describe::ShareGroupDescribeResponse { sg_describe::DescribedGroup };
}

/// DESCRIBE on each group: each group the principal may DESCRIBE gets its
/// authorized operations (when asked for), each other one only
/// GROUP_AUTHORIZATION_FAILED.
pub(crate) fn describe_groups<Req>(authz: &Authz<'_>, req: Req) -> Gate<Req, Req::Response>
where
    Req: DescribesGroups + 'static,
{
    let (ids, with_operations) = req.asked();
    let verdicts: Vec<(String, bool, i32)> = ids
        .iter()
        .map(|g| {
            let bits = if with_operations {
                authz.operations(ResourceType::Group, g)
            } else {
                OPERATIONS_OMITTED
            };
            (g.clone(), authz.group(Op::Describe, g), bits)
        })
        .collect();
    Gate::patched(req, move |r: &mut Req::Response| {
        for g in Req::described(r) {
            match verdicts.iter().find(|(n, ..)| n == g.group_id()) {
                Some((_, true, bits)) => *g.authorized_operations() = *bits,
                Some((_, false, _)) => {
                    let id = std::mem::take(g.group_id());
                    let message = super::denied(Op::Describe, ResourceType::Group, &id);
                    *g = Req::Group::failed(id, GROUP, message);
                }
                None => {}
            }
        }
    })
}

// ----- KIP-848 and KIP-932 heartbeats, share fetches and share offsets -----------

use crate::messages::alter_share_group_offsets as sg_alter;
use crate::messages::consumer_group_heartbeat as cg_heartbeat;
use crate::messages::delete_share_group_offsets as sg_delete;
use crate::messages::share_acknowledge::{ShareAcknowledgeRequest, ShareAcknowledgeResponse};
use crate::messages::share_fetch::{ShareFetchRequest, ShareFetchResponse};
use crate::messages::share_group_heartbeat as sg_heartbeat;

/// `group_operation` on the group, then `topic_operation` on each topic:
/// the first denial, if any.
fn group_then_topics<'t>(
    authz: &Authz<'_>,
    (group_operation, group): (Operation, &str),
    (topic_operation, topics): (Operation, impl IntoIterator<Item = &'t str>),
) -> Option<Refusal> {
    let topics = topics.into_iter().map(|t| (topic_operation, On::Topic(t)));
    authz.first_refusal(std::iter::once((group_operation, On::Group(group))).chain(topics))
}

impl Whole for cg_heartbeat::ConsumerGroupHeartbeatRequest {
    type Response = cg_heartbeat::ConsumerGroupHeartbeatResponse;
    fn refusal(&self, authz: &Authz<'_>) -> Option<Refusal> {
        let topics = self.subscribed_topic_names.as_deref();
        heartbeat_refusal(authz, &self.group_id, topics)
    }
}

impl Whole for sg_alter::AlterShareGroupOffsetsRequest {
    type Response = sg_alter::AlterShareGroupOffsetsResponse;
    /// READ on the group and on each topic; the whole request is refused
    /// when any is.
    fn refusal(&self, authz: &Authz<'_>) -> Option<Refusal> {
        let topics = self.topics.iter().map(|t| t.topic_name.as_str());
        group_then_topics(authz, (Op::Read, &self.group_id), (Op::Read, topics))
    }
}

impl Whole for sg_delete::DeleteShareGroupOffsetsRequest {
    type Response = sg_delete::DeleteShareGroupOffsetsResponse;
    /// DELETE on the group, READ on each topic; the whole request is
    /// refused when any is.
    fn refusal(&self, authz: &Authz<'_>) -> Option<Refusal> {
        let group = (Op::Delete, self.group_id.as_str());
        let topics = self.topics.iter().map(|t| t.topic_name.as_str());
        group_then_topics(authz, group, (Op::Read, topics))
    }
}

impl Whole for ShareFetchRequest {
    type Response = ShareFetchResponse;
    /// READ on the group and on each topic (unknown ids are the handler's):
    /// the whole request is refused when any topic is (share sessions keep
    /// their partitions between requests).
    fn refusal(&self, authz: &Authz<'_>) -> Option<Refusal> {
        let ids = self.topics.iter().map(|t| t.topic_id);
        share_refusal(authz, self.group_id.as_deref(), ids)
    }
}

impl Whole for sg_heartbeat::ShareGroupHeartbeatRequest {
    type Response = sg_heartbeat::ShareGroupHeartbeatResponse;
    fn refusal(&self, authz: &Authz<'_>) -> Option<Refusal> {
        let topics = self.subscribed_topic_names.as_deref();
        heartbeat_refusal(authz, &self.group_id, topics)
    }
}

/// READ on the group, DESCRIBE on every subscribed topic (both
/// heartbeats).
fn heartbeat_refusal(authz: &Authz<'_>, group: &str, topics: Option<&[String]>) -> Option<Refusal> {
    let topics = topics.unwrap_or_default().iter().map(String::as_str);
    group_then_topics(authz, (Op::Read, group), (Op::Describe, topics))
}

/// READ on a share group and on each topic id the cluster knows.
fn share_refusal(
    authz: &Authz<'_>,
    group: Option<&str>,
    topic_ids: impl IntoIterator<Item = crate::codec::Uuid>,
) -> Option<Refusal> {
    let names: Vec<String> = topic_ids
        .into_iter()
        .filter_map(|id| authz.topic_name(id))
        .collect();
    let group = (Op::Read, group.unwrap_or(""));
    group_then_topics(authz, group, (Op::Read, names.iter().map(String::as_str)))
}

impl Whole for ShareAcknowledgeRequest {
    type Response = ShareAcknowledgeResponse;
    /// READ on the group and on each topic, as ShareFetch.
    fn refusal(&self, authz: &Authz<'_>) -> Option<Refusal> {
        let ids = self.topics.iter().map(|t| t.topic_id);
        share_refusal(authz, self.group_id.as_deref(), ids)
    }
}

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
                    g.error_message = Some(super::denied(
                        Op::Describe,
                        ResourceType::Group,
                        &g.group_id,
                    ));
                    g.topics.clear();
                } else {
                    g.topics.retain(|t| !topics_denied.contains(&t.topic_name));
                }
            }
        },
    )
}

// ----- Transactions ----------------------------------------------------------------

use crate::api::txn::txn_commit_answer;
use crate::messages::add_offsets_to_txn::AddOffsetsToTxnRequest;
use crate::messages::add_partitions_to_txn::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopicResult,
};
use crate::messages::init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
use crate::messages::txn_offset_commit::{TxnOffsetCommitRequest, TxnOffsetCommitResponse};

/// WRITE on the transactional id; without one (an idempotent producer),
/// IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
pub fn init_producer_id(
    authz: &Authz<'_>,
    req: InitProducerIdRequest,
) -> Gate<InitProducerIdRequest, InitProducerIdResponse> {
    let refusal = match req.transactional_id.as_deref() {
        Some(id) => authz.refusal(Op::Write, On::TransactionalId(id)),
        None if authz.any(Op::Write, ResourceType::Topic) => None,
        None => authz.refusal(Op::IdempotentWrite, On::Cluster),
    };
    unless_refused(refusal, req)
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
        let refusal = authz.refusal(Op::ClusterAction, On::Cluster);
        return unless_refused(refusal, req);
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

impl Whole for AddOffsetsToTxnRequest {
    type Response = crate::messages::add_offsets_to_txn::AddOffsetsToTxnResponse;
    /// WRITE on the transactional id, READ on the group.
    fn refusal(&self, authz: &Authz<'_>) -> Option<Refusal> {
        authz.first_refusal([
            (Op::Write, On::TransactionalId(&self.transactional_id)),
            (Op::Read, On::Group(&self.group_id)),
        ])
    }
}

/// WRITE on the transactional id, READ on the group (both refuse every
/// partition), READ on each topic.
pub fn txn_offset_commit(
    authz: &Authz<'_>,
    req: TxnOffsetCommitRequest,
) -> Gate<TxnOffsetCommitRequest, TxnOffsetCommitResponse> {
    let whole = authz.first_refusal([
        (Op::Write, On::TransactionalId(&req.transactional_id)),
        (Op::Read, On::Group(&req.group_id)),
    ]);
    if let Some(Refusal { code, .. }) = whole {
        return Gate::Answer(TxnOffsetCommitResponse {
            throttle_time_ms: 0,
            topics: req
                .topics
                .iter()
                .map(|t| txn_commit_answer(t, |_| code))
                .collect(),
        });
    }
    narrow(
        req,
        |q| &mut q.topics,
        |t| (!authz.topic(Op::Read, &t.name)).then(|| txn_commit_answer(t, |_| TOPIC)),
        |r: &mut TxnOffsetCommitResponse| &mut r.topics,
    )
}

use crate::messages::describe_transactions::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, TransactionState,
};
use crate::messages::list_transactions::{ListTransactionsRequest, ListTransactionsResponse};

/// DESCRIBE on each transactional id.
pub fn describe_transactions(
    authz: &Authz<'_>,
    req: DescribeTransactionsRequest,
) -> Gate<DescribeTransactionsRequest, DescribeTransactionsResponse> {
    narrow(
        req,
        |q| &mut q.transactional_ids,
        |id| {
            (!authz.transactional_id(Op::Describe, id)).then(|| TransactionState {
                error_code: TXN,
                transactional_id: id.clone(),
                producer_id: -1,
                producer_epoch: -1,
                ..Default::default()
            })
        },
        |r: &mut DescribeTransactionsResponse| &mut r.transaction_states,
    )
}

/// Lists only the transactional ids the principal may DESCRIBE.
pub fn list_transactions(
    authz: &Authz<'_>,
    req: ListTransactionsRequest,
) -> Gate<ListTransactionsRequest, ListTransactionsResponse> {
    // The ids are judged after the handler listed them.
    let allowed = authz.judge_later(Op::Describe, ResourceType::TransactionalId);
    Gate::patched(req, move |r: &mut ListTransactionsResponse| {
        r.transaction_states
            .retain(|t| allowed(&t.transactional_id));
    })
}
