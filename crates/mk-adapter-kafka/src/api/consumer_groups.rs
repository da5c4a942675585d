//! KIP-848 consumer groups as Kafka clients drive them:
//! ConsumerGroupHeartbeat and ConsumerGroupDescribe over mk-group's
//! `consumer` machines. The wire names topics by id; the core by name: the
//! translation is all that happens here.

use super::Ctx;
use super::groups::{client_host, coordinated_here};
use crate::codec::Uuid;
use crate::errors::{self, KafkaCode};
use crate::messages::consumer_group_describe::{
    self as describe, ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, DescribedGroup,
};
use crate::messages::consumer_group_heartbeat::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
};
use mk_cluster::{
    BrokerCluster, ClusterError, ConsumerGroupDescription, ConsumerHeartbeat, CoordinatorKey,
    GroupType, TopicId, TopicPartition,
};
use std::collections::BTreeMap;

/// A described group of one of the three describe APIs (classic, KIP-848,
/// share): what a failure or a denial sets, the rest its default.
pub(crate) trait GroupAnswer: Default {
    fn group_id(&mut self) -> &mut String;
    fn authorized_operations(&mut self) -> &mut i32;
    /// The group answered with an error (its authorized operations
    /// omitted, as every other field).
    fn failed(group_id: String, code: KafkaCode, message: String) -> Self;
}

macro_rules! group_answer {
    ($($t:ty),*) => {$(
        impl GroupAnswer for $t {
            fn group_id(&mut self) -> &mut String {
                &mut self.group_id
            }
            fn authorized_operations(&mut self) -> &mut i32 {
                &mut self.authorized_operations
            }
            fn failed(group_id: String, code: KafkaCode, message: String) -> Self {
                Self {
                    error_code: code,
                    error_message: Some(message),
                    group_id,
                    ..Default::default()
                }
            }
        }
    )*};
}

group_answer!(
    crate::messages::describe_groups::DescribedGroup,
    DescribedGroup,
    crate::messages::share_group_describe::DescribedGroup
);

/// Each group asked for: `described` where this broker coordinates it and
/// `describe` finds it, else its error (a group of another `kind` is not
/// found).
pub(crate) fn describe_each<D, G: GroupAnswer>(
    ctx: &Ctx<'_>,
    ids: &[String],
    kind: GroupType,
    describe: impl Fn(&str) -> Result<Option<D>, ClusterError>,
    described: impl Fn(D) -> G,
) -> Vec<G> {
    ids.iter()
        .map(|id| {
            let answer =
                coordinated_here(ctx, CoordinatorKey::Group(id)).and_then(|()| describe(id));
            let (error_code, message) = match answer {
                Ok(Some(d)) => return described(d),
                Ok(None) => not_found(ctx.cluster, id, kind),
                Err(e) => errors::from_cluster(&e),
            };
            G::failed(id.clone(), error_code, message)
        })
        .collect()
}

/// `member_type` of a described member that uses the consumer protocol.
const CONSUMER_MEMBER_TYPE: i8 = 1;

/// The partitions of ids the cluster knows (an unknown id names nothing a
/// member can hold).
pub(crate) fn by_name(c: &BrokerCluster, ids: &[(Uuid, &[i32])]) -> Vec<TopicPartition> {
    let mut out = Vec::new();
    for (id, partitions) in ids {
        let Ok(name) = c.topics().name_by_id(TopicId(id.0)) else {
            continue;
        };
        out.extend(super::partitions_of(&name, partitions));
    }
    out
}

/// Partitions grouped by topic, with the topic's id (topics deleted since
/// are left out) and name.
pub(crate) fn by_id(
    c: &BrokerCluster,
    partitions: &[TopicPartition],
) -> Vec<(Uuid, String, Vec<i32>)> {
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for tp in partitions {
        if let Ok(p) = i32::try_from(tp.partition) {
            topics.entry(tp.topic.as_str()).or_default().push(p);
        }
    }
    topics
        .into_iter()
        .filter_map(|(name, ps)| {
            let id = c.topics().id(name).ok()?;
            Some((Uuid(id.0), name.to_string(), ps))
        })
        .collect()
}

pub async fn handle_consumer_group_heartbeat(
    ctx: &Ctx<'_>,
    req: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    let owned = req.topic_partitions.as_ref().map(|tps| {
        let ids: Vec<(Uuid, &[i32])> = tps
            .iter()
            .map(|t| (t.topic_id, t.partitions.as_slice()))
            .collect();
        by_name(ctx.cluster, &ids)
    });
    let hb = ConsumerHeartbeat {
        group_id: req.group_id,
        member_id: req.member_id,
        member_epoch: req.member_epoch,
        instance_id: req.instance_id,
        rack_id: req.rack_id,
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        subscribed_topic_names: req.subscribed_topic_names,
        subscribed_topic_regex: req.subscribed_topic_regex,
        server_assignor: req.server_assignor,
        owned_partitions: owned,
        client_id: ctx.header.client_id.clone().unwrap_or_default(),
        client_host: client_host(ctx),
        member_id_optional: ctx.version() == 0,
    };
    let answer = coordinated_here(ctx, CoordinatorKey::Group(&hb.group_id))
        .and_then(|()| ctx.cluster.groups().consumer_heartbeat(hb));
    heartbeat_response!(
        ctx,
        answer,
        consumer_group_heartbeat::ConsumerGroupHeartbeatResponse
    )
}

/// A heartbeat's answer (KIP-848's and KIP-932's have the same fields) as
/// the response `$response` of message module `$m`: the member's epoch and
/// its assignment by topic id, or the error's code and message.
macro_rules! heartbeat_response {
    ($ctx:expr, $answer:expr, $m:ident :: $response:ident) => {{
        use crate::messages::$m::{Assignment, TopicPartitions, $response};
        match $answer {
            Ok(a) => $response {
                member_id: Some(a.member_id),
                member_epoch: a.member_epoch,
                heartbeat_interval_ms: a.heartbeat_interval_ms,
                assignment: a.assignment.map(|ps| Assignment {
                    topic_partitions: $crate::api::consumer_groups::by_id($ctx.cluster, &ps)
                        .into_iter()
                        .map(|(topic_id, _, partitions)| TopicPartitions {
                            topic_id,
                            partitions,
                        })
                        .collect(),
                }),
                ..$response::default()
            },
            Err(e) => <$response as $crate::api::ErrorAnswer>::from_cluster(&e),
        }
    }};
}
pub(crate) use heartbeat_response;

fn described_assignment(c: &BrokerCluster, partitions: &[TopicPartition]) -> describe::Assignment {
    describe::Assignment {
        topic_partitions: by_id(c, partitions)
            .into_iter()
            .map(
                |(topic_id, topic_name, partitions)| describe::TopicPartitions {
                    topic_id,
                    topic_name,
                    partitions,
                },
            )
            .collect(),
    }
}

fn described(c: &BrokerCluster, d: ConsumerGroupDescription) -> DescribedGroup {
    DescribedGroup {
        group_id: d.group_id,
        group_state: d.state.as_str().to_string(),
        group_epoch: d.epoch,
        assignment_epoch: d.assignment_epoch,
        assignor_name: d.assignor.name().to_string(),
        members: d
            .members
            .into_iter()
            .map(|m| describe::Member {
                assignment: described_assignment(c, &m.assignment),
                target_assignment: described_assignment(c, &m.target),
                member_id: m.member_id,
                instance_id: m.instance_id,
                rack_id: m.rack_id,
                member_epoch: m.member_epoch,
                client_id: m.client_id,
                client_host: m.client_host,
                subscribed_topic_names: m.topics,
                subscribed_topic_regex: m.regex,
                member_type: CONSUMER_MEMBER_TYPE,
            })
            .collect(),
        ..DescribedGroup::default()
    }
}

/// The answer for a group id that is no consumer group, as Kafka words it.
pub(crate) fn not_found(c: &BrokerCluster, group: &str, kind: GroupType) -> (KafkaCode, String) {
    let message = match c.groups().group_type(group) {
        Ok(Some(t)) if t != kind => format!("Group {group} is not a {kind} group."),
        Ok(_) => format!("Group {group} not found."),
        Err(e) => return errors::from_cluster(&e),
    };
    (KafkaCode::GROUP_ID_NOT_FOUND, message)
}

pub async fn handle_consumer_group_describe(
    ctx: &Ctx<'_>,
    req: ConsumerGroupDescribeRequest,
) -> ConsumerGroupDescribeResponse {
    let groups = describe_each(
        ctx,
        &req.group_ids,
        GroupType::Consumer,
        |id| ctx.cluster.groups().describe_consumer(id),
        |d| described(ctx.cluster, d),
    );
    ConsumerGroupDescribeResponse {
        groups,
        ..ConsumerGroupDescribeResponse::default()
    }
}
