//! The share-group offset admin APIs of Kafka's Admin client:
//! DescribeShareGroupOffsets (each partition's share-partition start
//! offset), AlterShareGroupOffsets and DeleteShareGroupOffsets (of a share
//! group without members).

use super::groups::coordinated_here;
use super::{Ctx, ErrorAnswer};
use crate::codec::Uuid;
use crate::errors::{self, KafkaCode};
use crate::messages::alter_share_group_offsets::{
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse,
    AlterShareGroupOffsetsResponsePartition, AlterShareGroupOffsetsResponseTopic,
};
use crate::messages::delete_share_group_offsets::{
    DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponseTopic,
};
use crate::messages::describe_share_group_offsets::{
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsResponse, DescribeShareGroupOffsetsResponseGroup,
    DescribeShareGroupOffsetsResponsePartition, DescribeShareGroupOffsetsResponseTopic,
};
use mk_cluster::{BrokerCluster, CoordinatorKey, TopicPartition};
use std::collections::BTreeMap;

fn topic_id(c: &BrokerCluster, topic: &str) -> Uuid {
    c.topics()
        .id(topic)
        .map_or_else(|_| Uuid::default(), |id| Uuid(id.0))
}

/// Per topic, in the order given, the partitions that can be one.
fn by_topic<T>(items: impl Iterator<Item = (TopicPartition, T)>) -> Vec<(String, Vec<(u32, T)>)> {
    let mut out: Vec<(String, Vec<(u32, T)>)> = Vec::new();
    for (tp, v) in items {
        match out.iter_mut().find(|(t, _)| *t == tp.topic) {
            Some((_, ps)) => ps.push((tp.partition, v)),
            None => out.push((tp.topic, vec![(tp.partition, v)])),
        }
    }
    out
}

fn describe_group(
    ctx: &Ctx<'_>,
    g: &DescribeShareGroupOffsetsRequestGroup,
) -> DescribeShareGroupOffsetsResponseGroup {
    let c = ctx.cluster;
    let asked: Option<Vec<TopicPartition>> = g.topics.as_ref().map(|ts| {
        ts.iter()
            .flat_map(|t| super::partitions_of(&t.topic_name, &t.partitions))
            .collect()
    });
    let described = coordinated_here(ctx, CoordinatorKey::Group(&g.group_id)).and_then(|()| {
        c.groups()
            .describe_share_offsets(&g.group_id, asked.as_deref())
    });
    match described {
        Err(e) => {
            let (error_code, message) = errors::from_cluster(&e);
            DescribeShareGroupOffsetsResponseGroup {
                group_id: g.group_id.clone(),
                error_code,
                error_message: Some(message),
                ..DescribeShareGroupOffsetsResponseGroup::default()
            }
        }
        Ok(offsets) => DescribeShareGroupOffsetsResponseGroup {
            group_id: g.group_id.clone(),
            topics: by_topic(offsets.into_iter())
                .into_iter()
                .map(|(topic, ps)| DescribeShareGroupOffsetsResponseTopic {
                    topic_id: topic_id(c, &topic),
                    topic_name: topic,
                    partitions: ps
                        .into_iter()
                        .map(|(p, start)| DescribeShareGroupOffsetsResponsePartition {
                            partition_index: i32::try_from(p).unwrap_or(-1),
                            start_offset: start.unwrap_or(-1),
                            leader_epoch: -1,
                            ..DescribeShareGroupOffsetsResponsePartition::default()
                        })
                        .collect(),
                })
                .collect(),
            ..DescribeShareGroupOffsetsResponseGroup::default()
        },
    }
}

pub async fn handle_describe_share_group_offsets(
    ctx: &Ctx<'_>,
    req: DescribeShareGroupOffsetsRequest,
) -> DescribeShareGroupOffsetsResponse {
    DescribeShareGroupOffsetsResponse {
        groups: req.groups.iter().map(|g| describe_group(ctx, g)).collect(),
        ..DescribeShareGroupOffsetsResponse::default()
    }
}

pub async fn handle_alter_share_group_offsets(
    ctx: &Ctx<'_>,
    req: AlterShareGroupOffsetsRequest,
) -> AlterShareGroupOffsetsResponse {
    let offsets: BTreeMap<TopicPartition, i64> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().filter_map(|p| {
                let index = u32::try_from(p.partition_index).ok()?;
                Some((TopicPartition::new(&t.topic_name, index), p.start_offset))
            })
        })
        .collect();
    let altered = coordinated_here(ctx, CoordinatorKey::Group(&req.group_id)).and_then(|()| {
        ctx.cluster
            .groups()
            .alter_share_offsets(&req.group_id, &offsets)
    });
    match altered {
        Err(e) => AlterShareGroupOffsetsResponse::from_cluster(&e),
        Ok(results) => AlterShareGroupOffsetsResponse {
            responses: by_topic(results.into_iter())
                .into_iter()
                .map(|(topic, ps)| AlterShareGroupOffsetsResponseTopic {
                    topic_id: topic_id(ctx.cluster, &topic),
                    topic_name: topic,
                    partitions: ps
                        .into_iter()
                        .map(|(p, r)| {
                            let (error_code, error_message) = match r {
                                Ok(()) => (KafkaCode::NONE, None),
                                Err(e) => {
                                    let (c, m) = errors::from_cluster(&e);
                                    (c, Some(m))
                                }
                            };
                            AlterShareGroupOffsetsResponsePartition {
                                partition_index: i32::try_from(p).unwrap_or(-1),
                                error_code,
                                error_message,
                            }
                        })
                        .collect(),
                })
                .collect(),
            ..AlterShareGroupOffsetsResponse::default()
        },
    }
}

pub async fn handle_delete_share_group_offsets(
    ctx: &Ctx<'_>,
    req: DeleteShareGroupOffsetsRequest,
) -> DeleteShareGroupOffsetsResponse {
    let topics: Vec<String> = req.topics.iter().map(|t| t.topic_name.clone()).collect();
    let deleted = coordinated_here(ctx, CoordinatorKey::Group(&req.group_id)).and_then(|()| {
        ctx.cluster
            .groups()
            .delete_share_offsets(&req.group_id, &topics)
    });
    match deleted {
        Err(e) => DeleteShareGroupOffsetsResponse::from_cluster(&e),
        Ok(results) => DeleteShareGroupOffsetsResponse {
            responses: results
                .into_iter()
                .map(|(topic, _had_state)| {
                    // A topic the cluster does not have is Kafka's
                    // UNKNOWN_TOPIC_OR_PARTITION; one without state is fine.
                    let known = ctx.cluster.topics().id(&topic).is_ok();
                    DeleteShareGroupOffsetsResponseTopic {
                        topic_id: topic_id(ctx.cluster, &topic),
                        error_code: if known {
                            KafkaCode::NONE
                        } else {
                            KafkaCode::UNKNOWN_TOPIC_OR_PARTITION
                        },
                        error_message: (!known).then(|| format!("topic {topic} does not exist")),
                        topic_name: topic,
                    }
                })
                .collect(),
            ..DeleteShareGroupOffsetsResponse::default()
        },
    }
}
