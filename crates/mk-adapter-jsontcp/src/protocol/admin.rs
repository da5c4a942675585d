//! Operator views and actions on the wire: `describe_cluster` and `stats`
//! (no request fields, so their modules hold only the response directions;
//! the request directions are spelled out in the dispatchers of `mod.rs`),
//! and `broker_offline` / `broker_online`, which take a broker out of
//! service and back outside lab mode.

use super::Response;
use super::common::{
    ids_of, object_item, objects, partition_infos_of, write_ids, write_partition_infos,
};
use crate::wire::{Decoded, Fields, ObjWriter, push_array};
use mk_cluster::{
    BrokerId, ClusterDescription, ClusterStats, LeaderAndEpoch, Protocol, ProtocolStats,
    TopicPartition,
};

/// The core counters (with every listener's) plus the adapter's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStats {
    pub cluster: ClusterStats,
    /// JSON-TCP requests being executed right now (this one included).
    pub in_flight: u64,
}

impl ServerStats {
    /// Connections open right now, over both protocols.
    pub fn connections(&self) -> u64 {
        self.cluster.protocols.iter().map(|p| p.connections).sum()
    }

    /// Requests answered since the broker started, over both protocols.
    pub fn requests(&self) -> u64 {
        self.cluster.protocols.iter().map(|p| p.requests).sum()
    }

    /// One protocol's counters (zero when it was never served).
    pub fn protocol(&self, p: Protocol) -> ProtocolStats {
        self.cluster
            .protocols
            .iter()
            .copied()
            .find(|s| s.protocol == p)
            .unwrap_or(ProtocolStats {
                protocol: p,
                listeners: 0,
                connections: 0,
                connections_accepted: 0,
                requests: 0,
            })
    }
}

/// `describe_cluster`: nothing -> brokers, offline_brokers, partitions
/// [{topic, partition, leader_id, leader_epoch, replicas, isr,
/// high_watermark, last_stable_offset, log_start_offset, log_end_offsets,
/// log_end_offset, damaged (only when damaged)}].
pub(super) mod describe_cluster {
    use super::*;

    pub fn encode_response(w: &mut ObjWriter<'_>, d: &ClusterDescription) {
        w.with("brokers", |o| write_ids(o, &d.brokers))
            .with("offline_brokers", |o| write_ids(o, &d.offline_brokers));
        write_partition_infos(w, &d.partitions, true);
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::DescribeCluster(ClusterDescription {
            brokers: ids_of(f.array("brokers")?)?,
            offline_brokers: ids_of(f.array("offline_brokers")?)?,
            partitions: partition_infos_of(f, None)?,
        }))
    }
}

/// `stats`: nothing -> uptime_ms, connections, requests, topics,
/// partitions, groups, transactions, records, log_bytes, owned_tasks,
/// in_flight, damaged_partitions, disk_full, protocols (after spec 06's
/// fields: the broker's health, and per protocol — `kafka`, `json` — its
/// listeners, connections, connections_accepted and requests; the
/// top-level connections and requests are the sums over both).
pub(super) mod stats {
    use super::*;

    pub fn encode_response(w: &mut ObjWriter<'_>, s: &ServerStats) {
        let c = &s.cluster;
        w.int("uptime_ms", c.uptime_ms)
            .int("connections", wide(s.connections()))
            .int("requests", wide(s.requests()))
            .int("topics", c.topics as i64)
            .int("partitions", c.partitions as i64)
            .int("groups", c.groups as i64)
            .int("transactions", c.transactions as i64)
            .int("records", c.records)
            .int("log_bytes", c.log_bytes as i64)
            .int("owned_tasks", c.owned_tasks as i64)
            .int("in_flight", s.in_flight as i64)
            .int("damaged_partitions", c.damaged_partitions as i64)
            .bool("disk_full", c.disk_full)
            .with("protocols", |out| {
                let mut o = ObjWriter::new(out);
                for p in &c.protocols {
                    o.with(p.protocol.name(), |out| {
                        let mut m = ObjWriter::new(out);
                        m.int("listeners", wide(p.listeners))
                            .int("connections", wide(p.connections))
                            .int("connections_accepted", wide(p.connections_accepted))
                            .int("requests", wide(p.requests));
                        m.end();
                    });
                }
                o.end();
            });
    }

    /// A counter on the wire (JSON integers are i64; a counter never gets
    /// near the end of that range, and saturates if it did).
    fn wide(n: u64) -> i64 {
        i64::try_from(n).unwrap_or(i64::MAX)
    }

    fn protocols_of(f: &Fields<'_>) -> Decoded<Vec<ProtocolStats>> {
        let all = f.object("protocols")?;
        let mut out = Vec::new();
        for p in Protocol::ALL {
            let Some(v) = all.get(p.name()) else {
                continue;
            };
            let ctx = format!("protocols.{}", p.name());
            let o = Fields::new(object_item(v, &ctx)?, &ctx);
            let n = |name: &str| o.int(name, 0, i64::MAX).map(|v| v as u64);
            out.push(ProtocolStats {
                protocol: p,
                listeners: n("listeners")?,
                connections: n("connections")?,
                connections_accepted: n("connections_accepted")?,
                requests: n("requests")?,
            });
        }
        Ok(out)
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        let n = |name: &str| f.int(name, 0, i64::MAX);
        let count = |name: &str| f.int_as::<usize>(name, 0, i64::MAX);
        Ok(Response::Stats(ServerStats {
            cluster: ClusterStats {
                uptime_ms: f.i64("uptime_ms")?,
                topics: count("topics")?,
                partitions: count("partitions")?,
                groups: count("groups")?,
                transactions: count("transactions")?,
                records: f.i64("records")?,
                log_bytes: n("log_bytes")? as u64,
                owned_tasks: count("owned_tasks")?,
                damaged_partitions: count("damaged_partitions")?,
                disk_full: f.bool("disk_full")?,
                protocols: protocols_of(f)?,
            },
            in_flight: n("in_flight")? as u64,
        }))
    }
}

/// `broker_offline`: broker_id -> moved [{topic, partition, leader_id,
/// leader_epoch}]; `broker_online`: broker_id -> was_offline (false when
/// the broker was online already and nothing changed).
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
        let moved = objects(f, "moved", |o| {
            Ok((
                TopicPartition::new(o.string("topic")?, o.u32("partition")?),
                LeaderAndEpoch {
                    leader_id: o.i32("leader_id")?,
                    leader_epoch: o.i32("leader_epoch")?,
                },
            ))
        })?;
        Ok(Response::BrokerOffline(moved))
    }

    pub fn encode_online_response(w: &mut ObjWriter<'_>, was_offline: bool) {
        w.bool("was_offline", was_offline);
    }

    pub fn decode_online_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::BrokerOnline {
            was_offline: f.bool("was_offline")?,
        })
    }
}
