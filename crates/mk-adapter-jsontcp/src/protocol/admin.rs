//! Operator views and actions on the wire: `describe_cluster` and `stats`
//! (no request fields, so their modules hold only the response directions;
//! the request directions are spelled out in the dispatchers of `mod.rs`),
//! and `broker_offline` / `broker_online`, which take a broker out of
//! service and back outside lab mode.

use super::Response;
use super::common::{
    ids_of, item_ctx, object_item, partition_infos_of, write_ids, write_partition_infos,
};
use crate::wire::{Decoded, Fields, ObjWriter, push_array};
use mk_cluster::{BrokerId, ClusterDescription, ClusterStats, LeaderAndEpoch, TopicPartition};

/// The core counters plus the adapter's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStats {
    pub cluster: ClusterStats,
    /// Connections open right now.
    pub connections: u64,
    /// Requests answered since the server started.
    pub requests: u64,
    /// Requests being executed right now (this one included).
    pub in_flight: u64,
}

/// `describe_cluster`: nothing -> brokers, partitions [{topic, partition,
/// leader_id, leader_epoch, replicas, isr, high_watermark,
/// last_stable_offset, log_start_offset, log_end_offsets, log_end_offset}].
pub(super) mod describe_cluster {
    use super::*;

    pub fn encode_response(w: &mut ObjWriter<'_>, d: &ClusterDescription) {
        w.with("brokers", |o| write_ids(o, &d.brokers));
        write_partition_infos(w, &d.partitions, true);
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::DescribeCluster(ClusterDescription {
            brokers: ids_of(f.array("brokers")?)?,
            partitions: partition_infos_of(f, None)?,
        }))
    }
}

/// `stats`: nothing -> uptime_ms, connections, requests, topics,
/// partitions, groups, transactions, records, log_bytes, owned_tasks,
/// in_flight.
pub(super) mod stats {
    use super::*;

    pub fn encode_response(w: &mut ObjWriter<'_>, s: &ServerStats) {
        let c = &s.cluster;
        w.int("uptime_ms", c.uptime_ms)
            .int("connections", s.connections as i64)
            .int("requests", s.requests as i64)
            .int("topics", c.topics as i64)
            .int("partitions", c.partitions as i64)
            .int("groups", c.groups as i64)
            .int("transactions", c.transactions as i64)
            .int("records", c.records)
            .int("log_bytes", c.log_bytes as i64)
            .int("owned_tasks", c.owned_tasks as i64)
            .int("in_flight", s.in_flight as i64);
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        let n = |name: &str| f.int(name, 0, i64::MAX);
        Ok(Response::Stats(ServerStats {
            cluster: ClusterStats {
                uptime_ms: f.i64("uptime_ms")?,
                topics: n("topics")? as usize,
                partitions: n("partitions")? as usize,
                groups: n("groups")? as usize,
                transactions: n("transactions")? as usize,
                records: f.i64("records")?,
                log_bytes: n("log_bytes")? as u64,
                owned_tasks: n("owned_tasks")? as usize,
            },
            connections: n("connections")? as u64,
            requests: n("requests")? as u64,
            in_flight: n("in_flight")? as u64,
        }))
    }
}

/// `broker_offline`: broker_id -> moved [{topic, partition, leader_id,
/// leader_epoch}]; `broker_online`: broker_id -> nothing.
pub(super) mod broker {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<BrokerId> {
        f.i32("broker_id")
    }

    pub fn encode(w: &mut ObjWriter<'_>, broker_id: BrokerId) {
        w.int("broker_id", i64::from(broker_id));
    }

    pub fn encode_response(w: &mut ObjWriter<'_>, moved: &[(TopicPartition, LeaderAndEpoch)]) {
        w.with("moved", |out| {
            push_array(out, moved, |o, (tp, le)| {
                let mut m = ObjWriter::new(o);
                m.str("topic", &tp.topic)
                    .int("partition", i64::from(tp.partition))
                    .int("leader_id", i64::from(le.leader_id))
                    .int("leader_epoch", i64::from(le.leader_epoch));
                m.end();
            })
        });
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        let moved = f
            .array("moved")?
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let ctx = item_ctx("moved", i);
                let o = Fields::new(object_item(v, &ctx)?, &ctx);
                Ok((
                    TopicPartition::new(o.string("topic")?, o.u32("partition")?),
                    LeaderAndEpoch {
                        leader_id: o.i32("leader_id")?,
                        leader_epoch: o.i32("leader_epoch")?,
                    },
                ))
            })
            .collect::<Decoded<Vec<_>>>()?;
        Ok(Response::BrokerOffline(moved))
    }
}
