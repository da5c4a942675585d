//! The handlers, one module per API family, each turning its generated
//! request into core operations and their results into its generated
//! response:
//!
//! - `versions`: ApiVersions
//! - `metadata`: Metadata, DescribeTopicPartitions, DescribeCluster
//! - `produce`: Produce, InitProducerId
//! - `fetch`: Fetch
//! - `offsets`: ListOffsets, OffsetForLeaderEpoch
//! - `groups`: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//!   OffsetCommit, OffsetFetch, ListGroups, DescribeGroups, DeleteGroups,
//!   OffsetDelete
//! - `consumer_groups`: ConsumerGroupHeartbeat, ConsumerGroupDescribe
//!   (KIP-848)
//! - `share_groups`: ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch,
//!   ShareAcknowledge (KIP-932)
//! - `share_offsets`: DescribeShareGroupOffsets, AlterShareGroupOffsets,
//!   DeleteShareGroupOffsets
//! - `txn`: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit
//! - `sasl`: SaslHandshake, SaslAuthenticate (and the connection's
//!   `Session`)
//! - `scram_users`: DescribeUserScramCredentials,
//!   AlterUserScramCredentials
//! - `admin`: CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
//!   AlterConfigs, IncrementalAlterConfigs
//! - `log_admin`: DeleteRecords, DescribeLogDirs, DescribeProducers
//! - `txn_admin`: ListTransactions, DescribeTransactions
//! - `quotas`: DescribeClientQuotas, AlterClientQuotas
//! - `elections`: ElectLeaders
//! - `reassignments`: AlterPartitionReassignments, ListPartitionReassignments
//! - `telemetry`: GetTelemetrySubscriptions, PushTelemetry (KIP-714)
//! - `acls`: CreateAcls, DescribeAcls, DeleteAcls
//!
//! Every request passes its guard in `authz` first (served.list's `guard`
//! column): the core decides, the guard maps the request's resources to
//! (operation, resource) pairs and the denials to Kafka's codes.
//!
//! The messages are generated from the schemas (`crate::messages`), and
//! so are the API table and the router (`messages/served.rs`, from
//! schema/served.list): a handler takes its generated request and returns
//! its generated response. ApiVersions advertises exactly the table, and
//! tests/oracle.rs checks every (API, version) pair in it against Kafka.

pub mod acls;
pub mod admin;
pub mod authz;
pub mod consumer_groups;
pub mod elections;
pub mod fetch;
pub mod group_configs;
pub mod groups;
pub mod log_admin;
pub mod metadata;
pub mod offsets;
pub mod produce;
pub mod quotas;
pub mod reassignments;
pub mod sasl;
pub mod scram_users;
pub mod share_groups;
pub mod share_offsets;
pub mod telemetry;
pub mod txn;
pub mod txn_admin;
pub mod versions;

use crate::codec::Writer;
use crate::frame::RequestHeader;
use crate::server::{BrokerEndpoint, KafkaOptions};
use mk_cluster::{BrokerCluster, BrokerId};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What a handler knows besides its request: the core, which broker the
/// connection reached, what to advertise, and the request's header.
pub struct Ctx<'a> {
    pub cluster: &'a Arc<BrokerCluster>,
    /// The broker whose listener received the request.
    pub broker_id: BrokerId,
    pub endpoints: &'a [BrokerEndpoint],
    pub options: &'a KafkaOptions,
    /// Cancelled on shutdown: long polls answer at once.
    pub shutdown: &'a CancellationToken,
    pub header: &'a RequestHeader,
    /// The client's address (group member descriptions show its host).
    pub peer: Option<std::net::SocketAddr>,
    /// The connection's identity and SASL state (`sasl.rs`).
    pub session: &'a std::sync::Mutex<sasl::Session>,
}

impl Ctx<'_> {
    pub fn version(&self) -> i16 {
        self.header.api_version
    }
}

pub use crate::codec::Message;
use crate::errors::KafkaCode;

/// A response that answers a whole request with one error (Kafka's error
/// response: a refused request, a core error): the code, the message where
/// the response carries one and Kafka sends it, every other field its
/// default.
pub(crate) trait ErrorAnswer: Sized {
    fn error(code: KafkaCode, message: String) -> Self;

    /// The answer of a core error.
    fn from_cluster(e: &mk_cluster::ClusterError) -> Self {
        let (code, message) = crate::errors::from_cluster(e);
        Self::error(code, message)
    }
}

macro_rules! error_answers {
    (code and message: $($m:ty),*; code only: $($c:ty),* $(,)?) => {
        $(impl ErrorAnswer for $m {
            fn error(code: KafkaCode, message: String) -> Self {
                Self {
                    error_code: code,
                    error_message: Some(message),
                    ..Default::default()
                }
            }
        })*
        $(impl ErrorAnswer for $c {
            fn error(code: KafkaCode, _message: String) -> Self {
                Self {
                    error_code: code,
                    ..Default::default()
                }
            }
        })*
    };
}

use crate::messages::{
    add_offsets_to_txn, add_partitions_to_txn, alter_share_group_offsets, consumer_group_heartbeat,
    delete_share_group_offsets, describe_client_quotas, describe_cluster, describe_log_dirs,
    describe_user_scram_credentials, end_txn, heartbeat, init_producer_id, leave_group,
    list_partition_reassignments, offset_delete, share_acknowledge, share_fetch,
    share_group_heartbeat, sync_group,
};

error_answers! {
    code and message:
        describe_cluster::DescribeClusterResponse,
        describe_user_scram_credentials::DescribeUserScramCredentialsResponse,
        list_partition_reassignments::ListPartitionReassignmentsResponse,
        consumer_group_heartbeat::ConsumerGroupHeartbeatResponse,
        share_group_heartbeat::ShareGroupHeartbeatResponse,
        share_fetch::ShareFetchResponse,
        share_acknowledge::ShareAcknowledgeResponse,
        alter_share_group_offsets::AlterShareGroupOffsetsResponse,
        delete_share_group_offsets::DeleteShareGroupOffsetsResponse;
    code only:
        sync_group::SyncGroupResponse,
        heartbeat::HeartbeatResponse,
        leave_group::LeaveGroupResponse,
        describe_log_dirs::DescribeLogDirsResponse,
        end_txn::EndTxnResponse,
        add_offsets_to_txn::AddOffsetsToTxnResponse,
        add_partitions_to_txn::AddPartitionsToTxnResponse,
        offset_delete::OffsetDeleteResponse,
}

impl ErrorAnswer for describe_client_quotas::DescribeClientQuotasResponse {
    /// No entries at all (null), not an empty list.
    fn error(code: KafkaCode, message: String) -> Self {
        Self {
            error_code: code,
            error_message: Some(message),
            entries: None,
            ..Default::default()
        }
    }
}

impl ErrorAnswer for init_producer_id::InitProducerIdResponse {
    /// No producer id and no epoch (-1 both; the epoch's default is 0).
    fn error(code: KafkaCode, _message: String) -> Self {
        Self {
            error_code: code,
            producer_epoch: -1,
            ..Default::default()
        }
    }
}

impl Ctx<'_> {
    /// The core's answer, or CLOSED once the broker shuts down: a request
    /// the core parks (a join, a sync, a share fetch's long poll, a
    /// transaction's end) is answered at once.
    pub async fn until_shutdown<T>(
        &self,
        answer: impl std::future::Future<Output = Result<T, mk_cluster::ClusterError>>,
    ) -> Result<T, mk_cluster::ClusterError> {
        tokio::select! {
            r = answer => r,
            _ = self.shutdown.cancelled() => Err(mk_cluster::ClusterError::Closed),
        }
    }
}

/// The partitions a request names by index, as the core names them; a
/// negative index names none.
pub(crate) fn partitions_of<'a>(
    topic: &'a str,
    indexes: &'a [i32],
) -> impl Iterator<Item = mk_cluster::TopicPartition> + 'a {
    indexes
        .iter()
        .filter_map(|&p| u32::try_from(p).ok())
        .map(move |p| mk_cluster::TopicPartition::new(topic, p))
}
pub use crate::messages::served::{APIS, GUARDED, decode_request, dispatch, spec};
pub use crate::messages::{ApiSpec, key};

/// What a handler answers with: a response, or (Produce with acks=0)
/// maybe none. The generated router writes it.
pub trait Answer {
    /// Writes the answer at version `v`; false if there is none.
    fn answer(self, w: &mut Writer, v: i16) -> bool;
}

impl<T: Message> Answer for T {
    fn answer(self, w: &mut Writer, v: i16) -> bool {
        self.write(w, v);
        true
    }
}

impl<T: Message> Answer for Option<T> {
    fn answer(self, w: &mut Writer, v: i16) -> bool {
        match self {
            Some(m) => m.answer(w, v),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_unique_and_within_client_minimums() {
        for w in APIS.windows(2) {
            assert!(w[0].key < w[1].key, "{} before {}", w[0].name, w[1].name);
        }
        for a in APIS {
            assert!(a.min_version <= a.max_version, "{}", a.name);
        }
        // librdkafka's feature gates (spec 08).
        assert!(spec(key::PRODUCE).unwrap().supports(3));
        assert!(spec(key::FETCH).unwrap().supports(4));
        assert!(spec(key::LIST_OFFSETS).unwrap().supports(1));
        assert!(spec(key::INIT_PRODUCER_ID).unwrap().supports(0));
        // kafka-python needs Metadata v4+ to enable idempotence.
        assert!(spec(key::METADATA).unwrap().supports(4));
    }
}
