//! Every family the endpoint serves, with its type and help text: the one
//! list docs/metrics.md documents (a test scrapes a live broker and holds
//! the page to it).

use super::exposition::{Exposition, Kind};

/// (name, type, help) of each family, sorted by name.
pub const FAMILIES: &[(&str, Kind, &str)] = &[
    (
        "kafka_consumergroup_current_offset",
        Kind::Gauge,
        "A group's committed offset of a partition (kafka-exporter's name).",
    ),
    (
        "kafka_consumergroup_current_offset_sum",
        Kind::Gauge,
        "Sum of a group's committed offsets over a topic's partitions.",
    ),
    (
        "kafka_consumergroup_lag",
        Kind::Gauge,
        "High watermark minus the group's committed offset, per partition the group committed (never below 0).",
    ),
    (
        "kafka_consumergroup_lag_sum",
        Kind::Gauge,
        "Sum of a group's lag over a topic's partitions.",
    ),
    (
        "kafka_consumergroup_members",
        Kind::Gauge,
        "Members of a group now (classic, consumer or share).",
    ),
    (
        "mk_broker_online",
        Kind::Gauge,
        "1 while a hosted broker is online, 0 while an operator has taken it offline.",
    ),
    (
        "mk_build_info",
        Kind::Gauge,
        "Always 1; the version label names the running mk-server.",
    ),
    (
        "mk_connections",
        Kind::Gauge,
        "Client connections open now, per protocol.",
    ),
    (
        "mk_connections_accepted_total",
        Kind::Counter,
        "Connections accepted since the start (refused ones included), per protocol.",
    ),
    (
        "mk_disk_available_bytes",
        Kind::Gauge,
        "Bytes available to the broker on the data directory's file system.",
    ),
    (
        "mk_disk_full",
        Kind::Gauge,
        "1 while writes fail because the disk is full (until a write succeeds again).",
    ),
    (
        "mk_disk_total_bytes",
        Kind::Gauge,
        "Size of the data directory's file system.",
    ),
    (
        "mk_fetched_bytes_total",
        Kind::Counter,
        "Bytes of records that fetch answers carried since the start.",
    ),
    (
        "mk_fetched_records_total",
        Kind::Counter,
        "Records clients fetched since the start.",
    ),
    (
        "mk_groups",
        Kind::Gauge,
        "Groups the coordinator knows (every type).",
    ),
    (
        "mk_listeners",
        Kind::Gauge,
        "Accept loops running now, per protocol (one per hosted broker for Kafka).",
    ),
    (
        "mk_log_bytes",
        Kind::Gauge,
        "Bytes of every replica's logs and indexes.",
    ),
    (
        "mk_partition_high_watermark",
        Kind::Gauge,
        "A partition's high watermark: the end of what consumers can read.",
    ),
    (
        "mk_partition_isr_size",
        Kind::Gauge,
        "Replicas in a partition's in-sync replica set.",
    ),
    (
        "mk_partition_last_stable_offset",
        Kind::Gauge,
        "A partition's last stable offset: the end of what read_committed consumers can read.",
    ),
    (
        "mk_partition_leader",
        Kind::Gauge,
        "The broker id leading a partition.",
    ),
    (
        "mk_partition_log_end_offset",
        Kind::Gauge,
        "A partition leader's log end offset.",
    ),
    (
        "mk_partition_log_start_offset",
        Kind::Gauge,
        "A partition's log start offset (moves with retention and deletes).",
    ),
    (
        "mk_partition_replicas",
        Kind::Gauge,
        "Replicas assigned to a partition.",
    ),
    (
        "mk_partition_size_bytes",
        Kind::Gauge,
        "Bytes of a partition leader's log and indexes.",
    ),
    (
        "mk_partitions",
        Kind::Gauge,
        "Partitions of every user topic.",
    ),
    (
        "mk_partitions_damaged",
        Kind::Gauge,
        "Partitions taken offline by damage (bad bytes or missing files) or a failure (a failed invariant, a poisoned lock); they answer STORAGE_ERROR.",
    ),
    (
        "mk_partitions_offline",
        Kind::Gauge,
        "Partitions whose leader's broker is offline with no in-sync replica to take over.",
    ),
    (
        "mk_partitions_under_replicated",
        Kind::Gauge,
        "Partitions with fewer replicas in sync than assigned.",
    ),
    (
        "mk_produced_records_total",
        Kind::Counter,
        "Records clients produced since the start.",
    ),
    (
        "mk_ready",
        Kind::Gauge,
        "1 when /readyz answers 200: recovery done, every listener accepting, the broker running.",
    ),
    (
        "mk_received_bytes_total",
        Kind::Counter,
        "Request bytes received, per protocol.",
    ),
    (
        "mk_request_duration_seconds",
        Kind::Histogram,
        "Time from a request's arrival to its answer, per protocol and API.",
    ),
    (
        "mk_request_errors_total",
        Kind::Counter,
        "JSON-TCP requests answered with an error, per operation.",
    ),
    (
        "mk_requests_total",
        Kind::Counter,
        "Requests answered, per protocol and API (JSON-TCP operation or Kafka API name).",
    ),
    (
        "mk_sent_bytes_total",
        Kind::Counter,
        "Response bytes sent, per protocol.",
    ),
    (
        "mk_topics",
        Kind::Gauge,
        "User topics (the internal ones are not counted).",
    ),
    (
        "mk_transactional_ids",
        Kind::Gauge,
        "Transactional ids the transaction coordinator knows.",
    ),
    (
        "process_cpu_seconds_total",
        Kind::Counter,
        "User and system CPU time the process spent, in seconds.",
    ),
    (
        "process_max_fds",
        Kind::Gauge,
        "The process's limit on open file descriptors (the soft limit).",
    ),
    (
        "process_open_fds",
        Kind::Gauge,
        "File descriptors the process has open.",
    ),
    (
        "process_resident_memory_bytes",
        Kind::Gauge,
        "Resident memory of the process.",
    ),
    (
        "process_start_time_seconds",
        Kind::Gauge,
        "When the process started, in seconds since the Unix epoch.",
    ),
    (
        "process_virtual_memory_bytes",
        Kind::Gauge,
        "Virtual memory of the process.",
    ),
];

/// Declares every family.
pub fn declare(e: &mut Exposition) {
    for (name, kind, help) in FAMILIES {
        e.declare(name, *kind, help);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_is_sorted_without_duplicates_and_counters_end_in_total() {
        for w in FAMILIES.windows(2) {
            assert!(w[0].0 < w[1].0, "{} before {}", w[0].0, w[1].0);
        }
        for (name, kind, help) in FAMILIES {
            assert_eq!(
                *kind == Kind::Counter,
                name.ends_with("_total"),
                "{name}: counters and only counters end in _total"
            );
            assert!(help.ends_with('.'), "{name}");
        }
    }
}
