//! The API table and the router: which (API key, version) pairs this
//! broker implements, and which family module translates each. One module
//! per API family holds each message's request and response side by side
//! with the handler that turns it into core operations:
//!
//! - `versions`: ApiVersions
//! - `metadata`: Metadata, DescribeCluster
//! - `produce`: Produce, InitProducerId
//! - `fetch`: Fetch
//! - `offsets`: ListOffsets, OffsetForLeaderEpoch
//! - `groups`: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//!   OffsetCommit, OffsetFetch, ListGroups, DescribeGroups, DeleteGroups,
//!   OffsetDelete
//! - `txn`: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit
//! - `admin`: CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
//!   AlterConfigs, IncrementalAlterConfigs
//!
//! ApiVersions advertises exactly this table, and the conformance tests
//! exercise every (API, version) pair in it.

pub mod admin;
pub mod fetch;
pub mod groups;
pub mod metadata;
pub mod offsets;
pub mod produce;
pub mod txn;
pub mod versions;

use crate::codec::{DecodeResult, Reader, Writer};
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
}

impl Ctx<'_> {
    pub fn version(&self) -> i16 {
        self.header.api_version
    }
}

/// Decodes the body of a supported request, runs its family's handler and
/// encodes the answer into `w`. Returns false for a request that has no
/// answer (Produce with acks=0). A body that cannot be decoded, or bytes
/// left after it, is an error: the connection is closed.
pub async fn dispatch(
    ctx: &Ctx<'_>,
    spec: &ApiSpec,
    r: &mut Reader<'_>,
    w: &mut Writer,
) -> DecodeResult<bool> {
    let v = ctx.version();
    macro_rules! route {
        ($req:ty, $handler:path) => {{
            let req = <$req as Message>::read(r, v)?;
            r.finish("request")?;
            let resp = $handler(ctx, req).await;
            resp.write(w, v);
            Ok(true)
        }};
    }
    match spec.key {
        key::API_VERSIONS => route!(versions::ApiVersionsRequest, versions::handle),
        key::METADATA => route!(metadata::MetadataRequest, metadata::handle),
        key::DESCRIBE_CLUSTER => {
            route!(
                metadata::DescribeClusterRequest,
                metadata::handle_describe_cluster
            )
        }
        key::PRODUCE => {
            let req = produce::ProduceRequest::read(r, v)?;
            r.finish("request")?;
            match produce::handle(ctx, req).await {
                Some(resp) => {
                    resp.write(w, v);
                    Ok(true)
                }
                None => Ok(false),
            }
        }
        key::INIT_PRODUCER_ID => {
            route!(
                produce::InitProducerIdRequest,
                produce::handle_init_producer_id
            )
        }
        key::FETCH => route!(fetch::FetchRequest, fetch::handle),
        key::LIST_OFFSETS => route!(offsets::ListOffsetsRequest, offsets::handle_list_offsets),
        key::OFFSET_FOR_LEADER_EPOCH => route!(
            offsets::OffsetForLeaderEpochRequest,
            offsets::handle_offset_for_leader_epoch
        ),
        key::FIND_COORDINATOR => route!(
            groups::FindCoordinatorRequest,
            groups::handle_find_coordinator
        ),
        key::JOIN_GROUP => route!(groups::JoinGroupRequest, groups::handle_join_group),
        key::SYNC_GROUP => route!(groups::SyncGroupRequest, groups::handle_sync_group),
        key::HEARTBEAT => route!(groups::HeartbeatRequest, groups::handle_heartbeat),
        key::LEAVE_GROUP => route!(groups::LeaveGroupRequest, groups::handle_leave_group),
        key::OFFSET_COMMIT => route!(groups::OffsetCommitRequest, groups::handle_offset_commit),
        key::OFFSET_FETCH => route!(groups::OffsetFetchRequest, groups::handle_offset_fetch),
        key::LIST_GROUPS => route!(groups::ListGroupsRequest, groups::handle_list_groups),
        key::DESCRIBE_GROUPS => route!(
            groups::DescribeGroupsRequest,
            groups::handle_describe_groups
        ),
        key::DELETE_GROUPS => route!(groups::DeleteGroupsRequest, groups::handle_delete_groups),
        key::OFFSET_DELETE => route!(groups::OffsetDeleteRequest, groups::handle_offset_delete),
        key::ADD_PARTITIONS_TO_TXN => route!(
            txn::AddPartitionsToTxnRequest,
            txn::handle_add_partitions_to_txn
        ),
        key::ADD_OFFSETS_TO_TXN => {
            route!(txn::AddOffsetsToTxnRequest, txn::handle_add_offsets_to_txn)
        }
        key::END_TXN => route!(txn::EndTxnRequest, txn::handle_end_txn),
        key::TXN_OFFSET_COMMIT => {
            route!(txn::TxnOffsetCommitRequest, txn::handle_txn_offset_commit)
        }
        key::CREATE_TOPICS => route!(admin::CreateTopicsRequest, admin::handle_create_topics),
        key::DELETE_TOPICS => route!(admin::DeleteTopicsRequest, admin::handle_delete_topics),
        key::CREATE_PARTITIONS => route!(
            admin::CreatePartitionsRequest,
            admin::handle_create_partitions
        ),
        key::DESCRIBE_CONFIGS => route!(
            admin::DescribeConfigsRequest,
            admin::handle_describe_configs
        ),
        key::ALTER_CONFIGS => route!(admin::AlterConfigsRequest, admin::handle_alter_configs),
        key::INCREMENTAL_ALTER_CONFIGS => route!(
            admin::IncrementalAlterConfigsRequest,
            admin::handle_incremental_alter_configs
        ),
        other => Err(crate::codec::DecodeError::Invalid(format!(
            "API key {other} is in the table but has no route"
        ))),
    }
}

pub use crate::codec::Message;

/// One API of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiSpec {
    pub key: i16,
    pub name: &'static str,
    pub min_version: i16,
    pub max_version: i16,
    /// The first flexible version (KIP-482); `i16::MAX` if none is served.
    pub flexible_from: i16,
}

impl ApiSpec {
    pub fn supports(&self, version: i16) -> bool {
        (self.min_version..=self.max_version).contains(&version)
    }

    pub fn is_flexible(&self, version: i16) -> bool {
        version >= self.flexible_from
    }
}

/// API keys.
pub mod key {
    pub const PRODUCE: i16 = 0;
    pub const FETCH: i16 = 1;
    pub const LIST_OFFSETS: i16 = 2;
    pub const METADATA: i16 = 3;
    pub const OFFSET_COMMIT: i16 = 8;
    pub const OFFSET_FETCH: i16 = 9;
    pub const FIND_COORDINATOR: i16 = 10;
    pub const JOIN_GROUP: i16 = 11;
    pub const HEARTBEAT: i16 = 12;
    pub const LEAVE_GROUP: i16 = 13;
    pub const SYNC_GROUP: i16 = 14;
    pub const DESCRIBE_GROUPS: i16 = 15;
    pub const LIST_GROUPS: i16 = 16;
    pub const API_VERSIONS: i16 = 18;
    pub const CREATE_TOPICS: i16 = 19;
    pub const DELETE_TOPICS: i16 = 20;
    pub const INIT_PRODUCER_ID: i16 = 22;
    pub const OFFSET_FOR_LEADER_EPOCH: i16 = 23;
    pub const ADD_PARTITIONS_TO_TXN: i16 = 24;
    pub const ADD_OFFSETS_TO_TXN: i16 = 25;
    pub const END_TXN: i16 = 26;
    pub const TXN_OFFSET_COMMIT: i16 = 28;
    pub const DESCRIBE_CONFIGS: i16 = 32;
    pub const ALTER_CONFIGS: i16 = 33;
    pub const CREATE_PARTITIONS: i16 = 37;
    pub const DELETE_GROUPS: i16 = 42;
    pub const INCREMENTAL_ALTER_CONFIGS: i16 = 44;
    pub const OFFSET_DELETE: i16 = 47;
    pub const DESCRIBE_CLUSTER: i16 = 60;
}

const fn api(key: i16, name: &'static str, min: i16, max: i16, flexible_from: i16) -> ApiSpec {
    ApiSpec {
        key,
        name,
        min_version: min,
        max_version: max,
        flexible_from,
    }
}

/// Every API this broker serves, by key. Versions below a client
/// library's minimum or above what is implemented and tested are never
/// advertised (see docs/kafka-wire.md for why each range is what it is).
pub const APIS: &[ApiSpec] = &[
    api(key::PRODUCE, "Produce", 3, 9, 9),
    api(key::FETCH, "Fetch", 4, 12, 12),
    api(key::LIST_OFFSETS, "ListOffsets", 1, 7, 6),
    api(key::METADATA, "Metadata", 0, 12, 9),
    api(key::OFFSET_COMMIT, "OffsetCommit", 2, 8, 8),
    api(key::OFFSET_FETCH, "OffsetFetch", 1, 8, 6),
    api(key::FIND_COORDINATOR, "FindCoordinator", 0, 4, 3),
    api(key::JOIN_GROUP, "JoinGroup", 0, 9, 6),
    api(key::HEARTBEAT, "Heartbeat", 0, 4, 4),
    api(key::LEAVE_GROUP, "LeaveGroup", 0, 5, 4),
    api(key::SYNC_GROUP, "SyncGroup", 0, 5, 4),
    api(key::DESCRIBE_GROUPS, "DescribeGroups", 0, 5, 5),
    api(key::LIST_GROUPS, "ListGroups", 0, 4, 3),
    api(key::API_VERSIONS, "ApiVersions", 0, 3, 3),
    api(key::CREATE_TOPICS, "CreateTopics", 2, 7, 5),
    api(key::DELETE_TOPICS, "DeleteTopics", 1, 6, 4),
    api(key::INIT_PRODUCER_ID, "InitProducerId", 0, 4, 2),
    api(
        key::OFFSET_FOR_LEADER_EPOCH,
        "OffsetForLeaderEpoch",
        2,
        4,
        4,
    ),
    api(key::ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxn", 0, 3, 3),
    api(key::ADD_OFFSETS_TO_TXN, "AddOffsetsToTxn", 0, 3, 3),
    api(key::END_TXN, "EndTxn", 0, 3, 3),
    api(key::TXN_OFFSET_COMMIT, "TxnOffsetCommit", 0, 3, 3),
    api(key::DESCRIBE_CONFIGS, "DescribeConfigs", 1, 4, 4),
    api(key::ALTER_CONFIGS, "AlterConfigs", 0, 2, 2),
    api(key::CREATE_PARTITIONS, "CreatePartitions", 0, 3, 2),
    api(key::DELETE_GROUPS, "DeleteGroups", 0, 2, 2),
    api(
        key::INCREMENTAL_ALTER_CONFIGS,
        "IncrementalAlterConfigs",
        0,
        1,
        1,
    ),
    api(key::OFFSET_DELETE, "OffsetDelete", 0, 0, i16::MAX),
    api(key::DESCRIBE_CLUSTER, "DescribeCluster", 0, 1, 0),
];

/// Decodes a whole request frame (header and body) without executing it:
/// what the fuzz target and the hostile-input tests drive. Unsupported
/// (API, version) pairs are an error, as on a connection.
pub fn decode_request(frame: &bytes::Bytes) -> DecodeResult<RequestHeader> {
    use crate::codec::DecodeError;
    let peek = crate::frame::peek_header(frame)?;
    let spec = spec(peek.api_key)
        .filter(|s| s.supports(peek.api_version))
        .ok_or_else(|| {
            DecodeError::Invalid(format!(
                "unsupported API {} version {}",
                peek.api_key, peek.api_version
            ))
        })?;
    let flexible = spec.is_flexible(peek.api_version);
    let mut r = Reader::new(frame, false);
    let header = RequestHeader::read(&mut r, flexible)?;
    r.flexible = flexible;
    let v = header.api_version;
    macro_rules! body {
        ($req:ty) => {{
            <$req as Message>::read(&mut r, v)?;
        }};
    }
    match spec.key {
        key::API_VERSIONS => body!(versions::ApiVersionsRequest),
        key::METADATA => body!(metadata::MetadataRequest),
        key::DESCRIBE_CLUSTER => body!(metadata::DescribeClusterRequest),
        key::PRODUCE => body!(produce::ProduceRequest),
        key::INIT_PRODUCER_ID => body!(produce::InitProducerIdRequest),
        key::FETCH => body!(fetch::FetchRequest),
        key::LIST_OFFSETS => body!(offsets::ListOffsetsRequest),
        key::OFFSET_FOR_LEADER_EPOCH => body!(offsets::OffsetForLeaderEpochRequest),
        key::FIND_COORDINATOR => body!(groups::FindCoordinatorRequest),
        key::JOIN_GROUP => body!(groups::JoinGroupRequest),
        key::SYNC_GROUP => body!(groups::SyncGroupRequest),
        key::HEARTBEAT => body!(groups::HeartbeatRequest),
        key::LEAVE_GROUP => body!(groups::LeaveGroupRequest),
        key::OFFSET_COMMIT => body!(groups::OffsetCommitRequest),
        key::OFFSET_FETCH => body!(groups::OffsetFetchRequest),
        key::LIST_GROUPS => body!(groups::ListGroupsRequest),
        key::DESCRIBE_GROUPS => body!(groups::DescribeGroupsRequest),
        key::DELETE_GROUPS => body!(groups::DeleteGroupsRequest),
        key::OFFSET_DELETE => body!(groups::OffsetDeleteRequest),
        key::ADD_PARTITIONS_TO_TXN => body!(txn::AddPartitionsToTxnRequest),
        key::ADD_OFFSETS_TO_TXN => body!(txn::AddOffsetsToTxnRequest),
        key::END_TXN => body!(txn::EndTxnRequest),
        key::TXN_OFFSET_COMMIT => body!(txn::TxnOffsetCommitRequest),
        key::CREATE_TOPICS => body!(admin::CreateTopicsRequest),
        key::DELETE_TOPICS => body!(admin::DeleteTopicsRequest),
        key::CREATE_PARTITIONS => body!(admin::CreatePartitionsRequest),
        key::DESCRIBE_CONFIGS => body!(admin::DescribeConfigsRequest),
        key::ALTER_CONFIGS => body!(admin::AlterConfigsRequest),
        key::INCREMENTAL_ALTER_CONFIGS => body!(admin::IncrementalAlterConfigsRequest),
        other => {
            return Err(DecodeError::Invalid(format!(
                "API key {other} is in the table but has no decoder"
            )));
        }
    }
    r.finish("request")?;
    Ok(header)
}

/// The table entry of an API key.
pub fn spec(key: i16) -> Option<&'static ApiSpec> {
    APIS.iter().find(|a| a.key == key)
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
