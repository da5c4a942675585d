//! The cluster's state as the core reports it at the moment of a scrape:
//! counts, partition health, the disk, connections, every partition's
//! offsets and replicas, and every group's committed offsets and lag.
//! Series are computed per scrape, so a deleted topic or group leaves the
//! next scrape. Nothing here decides anything: each value is a field of a
//! mk-cluster view.

use super::exposition::{Exposition, Labels, labels};
use mk_cluster::{AnyGroupDescription, BrokerCluster};
use std::collections::BTreeMap;

/// Writes the cluster's series. A closed or failed cluster has no state to
/// show: its families stay empty.
pub fn write(e: &mut Exposition, cluster: &BrokerCluster) {
    let none = Vec::new;
    if let Ok(o) = cluster.views().overview() {
        let s = &o.stats;
        e.sample("mk_topics", none(), s.topics as f64);
        e.sample("mk_partitions", none(), o.partitions.total as f64);
        e.sample("mk_groups", none(), s.groups as f64);
        e.sample("mk_transactional_ids", none(), s.transactions as f64);
        e.sample("mk_log_bytes", none(), s.log_bytes as f64);
        e.sample("mk_partitions_offline", none(), o.partitions.offline as f64);
        e.sample("mk_partitions_damaged", none(), o.partitions.damaged as f64);
        e.sample(
            "mk_partitions_under_replicated",
            none(),
            o.partitions.under_replicated as f64,
        );
        e.sample(
            "mk_disk_full",
            none(),
            f64::from(u8::from(o.disk_full.is_some())),
        );
        if let Some(d) = o.disk {
            e.sample("mk_disk_total_bytes", none(), d.total_bytes as f64);
            e.sample("mk_disk_available_bytes", none(), d.available_bytes as f64);
        }
        for (broker, online) in &o.brokers {
            e.sample(
                "mk_broker_online",
                labels([("broker", &broker.to_string())]),
                f64::from(u8::from(*online)),
            );
        }
        for p in &s.protocols {
            let l = || labels([("protocol", p.protocol.name())]);
            e.sample("mk_listeners", l(), p.listeners as f64);
            e.sample("mk_connections", l(), p.connections as f64);
            e.sample(
                "mk_connections_accepted_total",
                l(),
                p.connections_accepted as f64,
            );
        }
        e.sample(
            "mk_produced_records_total",
            none(),
            o.traffic.produced_records as f64,
        );
        e.sample(
            "mk_fetched_records_total",
            none(),
            o.traffic.fetched_records as f64,
        );
        e.sample(
            "mk_fetched_bytes_total",
            none(),
            o.traffic.fetched_bytes as f64,
        );
    }
    write_partitions(e, cluster);
    write_groups(e, cluster);
}

fn tp_labels(topic: &str, partition: u32) -> Labels {
    labels([("topic", topic), ("partition", &partition.to_string())])
}

fn write_partitions(e: &mut Exposition, cluster: &BrokerCluster) {
    if let Ok(d) = cluster.views().describe_cluster() {
        let mut partitions = d.partitions;
        partitions.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        // One family after the other, each in partition order.
        type Field = fn(&mk_cluster::PartitionInfo) -> f64;
        let fields: [(&str, Field); 7] = [
            ("mk_partition_high_watermark", |p| p.high_watermark as f64),
            ("mk_partition_log_end_offset", |p| p.log_end_offset as f64),
            ("mk_partition_log_start_offset", |p| {
                p.log_start_offset as f64
            }),
            ("mk_partition_last_stable_offset", |p| {
                p.last_stable_offset as f64
            }),
            ("mk_partition_replicas", |p| p.replicas.len() as f64),
            ("mk_partition_isr_size", |p| p.isr.len() as f64),
            ("mk_partition_leader", |p| f64::from(p.leader_id)),
        ];
        for (name, field) in fields {
            for p in &partitions {
                e.sample(name, tp_labels(&p.topic, p.partition), field(p));
            }
        }
    }
    if let Ok(mut sizes) = cluster.views().partition_log_bytes() {
        sizes.sort_by(|a, b| a.0.cmp(&b.0));
        for (tp, bytes) in sizes {
            e.sample(
                "mk_partition_size_bytes",
                tp_labels(&tp.topic, tp.partition),
                bytes as f64,
            );
        }
    }
}

/// Kafka-exporter's consumer-group families: per group and partition the
/// committed offset and the lag, their sums per topic, the members.
fn write_groups(e: &mut Exposition, cluster: &BrokerCluster) {
    let Ok(listings) = cluster.groups().listings() else {
        return;
    };
    let mut groups: Vec<String> = listings.into_iter().map(|l| l.group_id).collect();
    groups.sort();
    for group in groups {
        let members = match cluster.groups().describe_any(&group) {
            Ok(Some(AnyGroupDescription::Classic(d))) => d.members.len(),
            Ok(Some(AnyGroupDescription::Consumer(d))) => d.members.len(),
            Ok(Some(AnyGroupDescription::Share(d))) => d.members.len(),
            Ok(None) | Err(_) => 0,
        };
        e.sample(
            "kafka_consumergroup_members",
            labels([("consumergroup", &group)]),
            members as f64,
        );
        let Ok(lags) = cluster.groups().lag_of(&group) else {
            continue;
        };
        // (offset sum, lag sum) per topic.
        let mut sums: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        for l in lags {
            let (Some(committed), Some(lag)) = (l.committed, l.lag) else {
                continue;
            };
            let part = l.tp.partition.to_string();
            let series = || {
                labels([
                    ("consumergroup", group.as_str()),
                    ("topic", l.tp.topic.as_str()),
                    ("partition", part.as_str()),
                ])
            };
            e.sample(
                "kafka_consumergroup_current_offset",
                series(),
                committed as f64,
            );
            e.sample("kafka_consumergroup_lag", series(), lag as f64);
            let sum = sums.entry(l.tp.topic.clone()).or_default();
            sum.0 += committed;
            sum.1 += lag;
        }
        for (topic, (offsets, lag)) in sums {
            let series = || labels([("consumergroup", group.as_str()), ("topic", topic.as_str())]);
            e.sample(
                "kafka_consumergroup_current_offset_sum",
                series(),
                offsets as f64,
            );
            e.sample("kafka_consumergroup_lag_sum", series(), lag as f64);
        }
    }
}
