//! Consumer groups as Kafka clients drive them: FindCoordinator, JoinGroup,
//! SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups,
//! DescribeGroups, DeleteGroups and OffsetDelete — each message's decode and
//! encode side by side. The consumer protocol's subscription and assignment
//! payloads (`consumer_protocol`) are decoded here only to tell the core
//! which topics a member subscribes to and which partitions it was given;
//! the bytes themselves are handed through verbatim.

use super::{Ctx, Message};
use crate::codec::{DecodeResult, Reader, Writer};
use crate::errors::{self, KafkaCode};
use bytes::Bytes;
use mk_cluster::{ClusterError, GroupJoin, GroupSync, TopicPartition};
use std::collections::BTreeMap;

// ----- FindCoordinator -------------------------------------------------------

/// Coordinator key types.
pub const KEY_TYPE_GROUP: i8 = 0;
pub const KEY_TYPE_TRANSACTION: i8 = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindCoordinatorRequest {
    /// v0-v3: the one key.
    pub key: String,
    /// v1+.
    pub key_type: i8,
    /// v4+: several keys at once.
    pub coordinator_keys: Vec<String>,
}

impl Message for FindCoordinatorRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let key = if v <= 3 { r.string()? } else { String::new() };
        let key_type = if v >= 1 { r.i8()? } else { KEY_TYPE_GROUP };
        let coordinator_keys = if v >= 4 {
            r.array(|r| r.string())?
        } else {
            Vec::new()
        };
        r.skip_tagged_fields()?;
        Ok(Self {
            key,
            key_type,
            coordinator_keys,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        if v <= 3 {
            w.string(&self.key);
        }
        if v >= 1 {
            w.i8(self.key_type);
        }
        if v >= 4 {
            w.array(&self.coordinator_keys, |w, k| w.string(k));
        }
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coordinator {
    pub key: String,
    pub node_id: i32,
    pub host: String,
    pub port: i32,
    pub error_code: KafkaCode,
    pub error_message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindCoordinatorResponse {
    /// v1+.
    pub throttle_time_ms: i32,
    /// v0-v3: the one answer (its `key` is not on the wire).
    pub coordinator: Coordinator,
    /// v4+.
    pub coordinators: Vec<Coordinator>,
}

impl Message for FindCoordinatorResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if v >= 1 { r.i32()? } else { 0 };
        let mut coordinator = Coordinator {
            key: String::new(),
            node_id: -1,
            host: String::new(),
            port: -1,
            error_code: KafkaCode::NONE,
            error_message: None,
        };
        let mut coordinators = Vec::new();
        if v <= 3 {
            coordinator.error_code = KafkaCode(r.i16()?);
            if v >= 1 {
                coordinator.error_message = r.nullable_string()?;
            }
            coordinator.node_id = r.i32()?;
            coordinator.host = r.string()?;
            coordinator.port = r.i32()?;
        } else {
            coordinators = r.array(|r| {
                let c = Coordinator {
                    key: r.string()?,
                    node_id: r.i32()?,
                    host: r.string()?,
                    port: r.i32()?,
                    error_code: KafkaCode(r.i16()?),
                    error_message: r.nullable_string()?,
                };
                r.skip_tagged_fields()?;
                Ok(c)
            })?;
        }
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            coordinator,
            coordinators,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        if v >= 1 {
            w.i32(self.throttle_time_ms);
        }
        if v <= 3 {
            let c = &self.coordinator;
            w.i16(c.error_code.0);
            if v >= 1 {
                w.nullable_string(c.error_message.as_deref());
            }
            w.i32(c.node_id);
            w.string(&c.host);
            w.i32(c.port);
        } else {
            w.array(&self.coordinators, |w, c| {
                w.string(&c.key);
                w.i32(c.node_id);
                w.string(&c.host);
                w.i32(c.port);
                w.i16(c.error_code.0);
                w.nullable_string(c.error_message.as_deref());
                w.no_tagged_fields();
            });
        }
        w.no_tagged_fields();
    }
}

// ----- JoinGroup ---------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupProtocol {
    pub name: String,
    pub metadata: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupRequest {
    pub group_id: String,
    pub session_timeout_ms: i32,
    /// v1+; v0 uses the session timeout.
    pub rebalance_timeout_ms: i32,
    pub member_id: String,
    /// v5+.
    pub group_instance_id: Option<String>,
    pub protocol_type: String,
    pub protocols: Vec<JoinGroupProtocol>,
    /// v8+.
    pub reason: Option<String>,
}

impl Message for JoinGroupRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let group_id = r.string()?;
        let session_timeout_ms = r.i32()?;
        let rebalance_timeout_ms = if v >= 1 { r.i32()? } else { session_timeout_ms };
        let member_id = r.string()?;
        let group_instance_id = if v >= 5 { r.nullable_string()? } else { None };
        let protocol_type = r.string()?;
        let protocols = r.array(|r| {
            let p = JoinGroupProtocol {
                name: r.string()?,
                metadata: r.bytes()?,
            };
            r.skip_tagged_fields()?;
            Ok(p)
        })?;
        let reason = if v >= 8 { r.nullable_string()? } else { None };
        r.skip_tagged_fields()?;
        Ok(Self {
            group_id,
            session_timeout_ms,
            rebalance_timeout_ms,
            member_id,
            group_instance_id,
            protocol_type,
            protocols,
            reason,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.string(&self.group_id);
        w.i32(self.session_timeout_ms);
        if v >= 1 {
            w.i32(self.rebalance_timeout_ms);
        }
        w.string(&self.member_id);
        if v >= 5 {
            w.nullable_string(self.group_instance_id.as_deref());
        }
        w.string(&self.protocol_type);
        w.array(&self.protocols, |w, p| {
            w.string(&p.name);
            w.bytes(&p.metadata);
            w.no_tagged_fields();
        });
        if v >= 8 {
            w.nullable_string(self.reason.as_deref());
        }
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupMember {
    pub member_id: String,
    /// v5+.
    pub group_instance_id: Option<String>,
    pub metadata: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupResponse {
    /// v2+.
    pub throttle_time_ms: i32,
    pub error_code: KafkaCode,
    pub generation_id: i32,
    /// v7+.
    pub protocol_type: Option<String>,
    /// Nullable from v7.
    pub protocol_name: Option<String>,
    pub leader: String,
    /// v9+.
    pub skip_assignment: bool,
    pub member_id: String,
    pub members: Vec<JoinGroupMember>,
}

impl Message for JoinGroupResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if v >= 2 { r.i32()? } else { 0 };
        let error_code = KafkaCode(r.i16()?);
        let generation_id = r.i32()?;
        let protocol_type = if v >= 7 { r.nullable_string()? } else { None };
        let protocol_name = if v >= 7 {
            r.nullable_string()?
        } else {
            Some(r.string()?)
        };
        let leader = r.string()?;
        let skip_assignment = if v >= 9 { r.bool()? } else { false };
        let member_id = r.string()?;
        let members = r.array(|r| {
            let m = JoinGroupMember {
                member_id: r.string()?,
                group_instance_id: if v >= 5 { r.nullable_string()? } else { None },
                metadata: r.bytes()?,
            };
            r.skip_tagged_fields()?;
            Ok(m)
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            error_code,
            generation_id,
            protocol_type,
            protocol_name,
            leader,
            skip_assignment,
            member_id,
            members,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        if v >= 2 {
            w.i32(self.throttle_time_ms);
        }
        w.i16(self.error_code.0);
        w.i32(self.generation_id);
        if v >= 7 {
            w.nullable_string(self.protocol_type.as_deref());
            w.nullable_string(self.protocol_name.as_deref());
        } else {
            w.string(self.protocol_name.as_deref().unwrap_or(""));
        }
        w.string(&self.leader);
        if v >= 9 {
            w.bool(self.skip_assignment);
        }
        w.string(&self.member_id);
        w.array(&self.members, |w, m| {
            w.string(&m.member_id);
            if v >= 5 {
                w.nullable_string(m.group_instance_id.as_deref());
            }
            w.bytes(&m.metadata);
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

// ----- SyncGroup ---------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncGroupAssignment {
    pub member_id: String,
    pub assignment: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncGroupRequest {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    /// v3+.
    pub group_instance_id: Option<String>,
    /// v5+.
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignments: Vec<SyncGroupAssignment>,
}

impl Message for SyncGroupRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let group_id = r.string()?;
        let generation_id = r.i32()?;
        let member_id = r.string()?;
        let group_instance_id = if v >= 3 { r.nullable_string()? } else { None };
        let (protocol_type, protocol_name) = if v >= 5 {
            (r.nullable_string()?, r.nullable_string()?)
        } else {
            (None, None)
        };
        let assignments = r.array(|r| {
            let a = SyncGroupAssignment {
                member_id: r.string()?,
                assignment: r.bytes()?,
            };
            r.skip_tagged_fields()?;
            Ok(a)
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            group_id,
            generation_id,
            member_id,
            group_instance_id,
            protocol_type,
            protocol_name,
            assignments,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.string(&self.group_id);
        w.i32(self.generation_id);
        w.string(&self.member_id);
        if v >= 3 {
            w.nullable_string(self.group_instance_id.as_deref());
        }
        if v >= 5 {
            w.nullable_string(self.protocol_type.as_deref());
            w.nullable_string(self.protocol_name.as_deref());
        }
        w.array(&self.assignments, |w, a| {
            w.string(&a.member_id);
            w.bytes(&a.assignment);
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncGroupResponse {
    /// v1+.
    pub throttle_time_ms: i32,
    pub error_code: KafkaCode,
    /// v5+.
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

impl Message for SyncGroupResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if v >= 1 { r.i32()? } else { 0 };
        let error_code = KafkaCode(r.i16()?);
        let (protocol_type, protocol_name) = if v >= 5 {
            (r.nullable_string()?, r.nullable_string()?)
        } else {
            (None, None)
        };
        let assignment = r.bytes()?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            error_code,
            protocol_type,
            protocol_name,
            assignment,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        if v >= 1 {
            w.i32(self.throttle_time_ms);
        }
        w.i16(self.error_code.0);
        if v >= 5 {
            w.nullable_string(self.protocol_type.as_deref());
            w.nullable_string(self.protocol_name.as_deref());
        }
        w.bytes(&self.assignment);
        w.no_tagged_fields();
    }
}

// ----- Heartbeat ---------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatRequest {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    /// v3+.
    pub group_instance_id: Option<String>,
}

impl Message for HeartbeatRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let req = Self {
            group_id: r.string()?,
            generation_id: r.i32()?,
            member_id: r.string()?,
            group_instance_id: if v >= 3 { r.nullable_string()? } else { None },
        };
        r.skip_tagged_fields()?;
        Ok(req)
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.string(&self.group_id);
        w.i32(self.generation_id);
        w.string(&self.member_id);
        if v >= 3 {
            w.nullable_string(self.group_instance_id.as_deref());
        }
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeartbeatResponse {
    /// v1+.
    pub throttle_time_ms: i32,
    pub error_code: KafkaCode,
}

impl Message for HeartbeatResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if v >= 1 { r.i32()? } else { 0 };
        let error_code = KafkaCode(r.i16()?);
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            error_code,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        if v >= 1 {
            w.i32(self.throttle_time_ms);
        }
        w.i16(self.error_code.0);
        w.no_tagged_fields();
    }
}

// ----- LeaveGroup --------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeavingMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// v5+.
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveGroupRequest {
    pub group_id: String,
    /// v0-v2 name one member; v3+ a batch.
    pub members: Vec<LeavingMember>,
}

impl Message for LeaveGroupRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let group_id = r.string()?;
        let members = if v <= 2 {
            vec![LeavingMember {
                member_id: r.string()?,
                group_instance_id: None,
                reason: None,
            }]
        } else {
            r.array(|r| {
                let m = LeavingMember {
                    member_id: r.string()?,
                    group_instance_id: r.nullable_string()?,
                    reason: if v >= 5 { r.nullable_string()? } else { None },
                };
                r.skip_tagged_fields()?;
                Ok(m)
            })?
        };
        r.skip_tagged_fields()?;
        Ok(Self { group_id, members })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.string(&self.group_id);
        if v <= 2 {
            w.string(self.members.first().map_or("", |m| m.member_id.as_str()));
        } else {
            w.array(&self.members, |w, m| {
                w.string(&m.member_id);
                w.nullable_string(m.group_instance_id.as_deref());
                if v >= 5 {
                    w.nullable_string(m.reason.as_deref());
                }
                w.no_tagged_fields();
            });
        }
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub error_code: KafkaCode,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveGroupResponse {
    /// v1+.
    pub throttle_time_ms: i32,
    pub error_code: KafkaCode,
    /// v3+.
    pub members: Vec<LeftMember>,
}

impl Message for LeaveGroupResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if v >= 1 { r.i32()? } else { 0 };
        let error_code = KafkaCode(r.i16()?);
        let members = if v >= 3 {
            r.array(|r| {
                let m = LeftMember {
                    member_id: r.string()?,
                    group_instance_id: r.nullable_string()?,
                    error_code: KafkaCode(r.i16()?),
                };
                r.skip_tagged_fields()?;
                Ok(m)
            })?
        } else {
            Vec::new()
        };
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            error_code,
            members,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        if v >= 1 {
            w.i32(self.throttle_time_ms);
        }
        w.i16(self.error_code.0);
        if v >= 3 {
            w.array(&self.members, |w, m| {
                w.string(&m.member_id);
                w.nullable_string(m.group_instance_id.as_deref());
                w.i16(m.error_code.0);
                w.no_tagged_fields();
            });
        }
        w.no_tagged_fields();
    }
}

// ----- OffsetCommit ------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitPartition {
    pub partition_index: i32,
    pub committed_offset: i64,
    /// v6+.
    pub committed_leader_epoch: i32,
    pub committed_metadata: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitTopic {
    pub name: String,
    pub partitions: Vec<OffsetCommitPartition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitRequest {
    pub group_id: String,
    /// -1 for a commit outside group membership.
    pub generation_id: i32,
    pub member_id: String,
    /// v7+.
    pub group_instance_id: Option<String>,
    /// v2-v4 (ignored: offsets are kept until deleted).
    pub retention_time_ms: i64,
    pub topics: Vec<OffsetCommitTopic>,
}

impl Message for OffsetCommitRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let group_id = r.string()?;
        let generation_id = r.i32()?;
        let member_id = r.string()?;
        let group_instance_id = if v >= 7 { r.nullable_string()? } else { None };
        let retention_time_ms = if v <= 4 { r.i64()? } else { -1 };
        let topics = r.array(|r| {
            let name = r.string()?;
            let partitions = r.array(|r| {
                let p = OffsetCommitPartition {
                    partition_index: r.i32()?,
                    committed_offset: r.i64()?,
                    committed_leader_epoch: if v >= 6 { r.i32()? } else { -1 },
                    committed_metadata: r.nullable_string()?,
                };
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok(OffsetCommitTopic { name, partitions })
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            group_id,
            generation_id,
            member_id,
            group_instance_id,
            retention_time_ms,
            topics,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.string(&self.group_id);
        w.i32(self.generation_id);
        w.string(&self.member_id);
        if v >= 7 {
            w.nullable_string(self.group_instance_id.as_deref());
        }
        if v <= 4 {
            w.i64(self.retention_time_ms);
        }
        w.array(&self.topics, |w, t| {
            w.string(&t.name);
            w.array(&t.partitions, |w, p| {
                w.i32(p.partition_index);
                w.i64(p.committed_offset);
                if v >= 6 {
                    w.i32(p.committed_leader_epoch);
                }
                w.nullable_string(p.committed_metadata.as_deref());
                w.no_tagged_fields();
            });
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

/// Per-partition error codes of a topic (OffsetCommit and OffsetDelete
/// answers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicPartitionErrors {
    pub name: String,
    pub partitions: Vec<(i32, KafkaCode)>,
}

fn read_topic_errors(r: &mut Reader<'_>) -> DecodeResult<Vec<TopicPartitionErrors>> {
    r.array(|r| {
        let name = r.string()?;
        let partitions = r.array(|r| {
            let p = (r.i32()?, KafkaCode(r.i16()?));
            r.skip_tagged_fields()?;
            Ok(p)
        })?;
        r.skip_tagged_fields()?;
        Ok(TopicPartitionErrors { name, partitions })
    })
}

fn write_topic_errors(w: &mut Writer, topics: &[TopicPartitionErrors]) {
    w.array(topics, |w, t| {
        w.string(&t.name);
        w.array(&t.partitions, |w, (p, code)| {
            w.i32(*p);
            w.i16(code.0);
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    });
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitResponse {
    /// v3+.
    pub throttle_time_ms: i32,
    pub topics: Vec<TopicPartitionErrors>,
}

impl Message for OffsetCommitResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if v >= 3 { r.i32()? } else { 0 };
        let topics = read_topic_errors(r)?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            topics,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        if v >= 3 {
            w.i32(self.throttle_time_ms);
        }
        write_topic_errors(w, &self.topics);
        w.no_tagged_fields();
    }
}

// ----- OffsetFetch -------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchTopic {
    pub name: String,
    pub partition_indexes: Vec<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchGroup {
    pub group_id: String,
    /// `None`: every committed partition of the group.
    pub topics: Option<Vec<OffsetFetchTopic>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchRequest {
    /// v1-v7 ask for one group; v8 for several. Both are one list here.
    pub groups: Vec<OffsetFetchGroup>,
    /// v7+.
    pub require_stable: bool,
}

fn read_fetch_topics(
    r: &mut Reader<'_>,
    nullable: bool,
) -> DecodeResult<Option<Vec<OffsetFetchTopic>>> {
    let topic = |r: &mut Reader<'_>| {
        let t = OffsetFetchTopic {
            name: r.string()?,
            partition_indexes: r.array(|r| r.i32())?,
        };
        r.skip_tagged_fields()?;
        Ok(t)
    };
    if nullable {
        r.nullable_array(topic)
    } else {
        r.array(topic).map(Some)
    }
}

fn write_fetch_topics(w: &mut Writer, topics: Option<&[OffsetFetchTopic]>) {
    w.nullable_array(topics, |w, t| {
        w.string(&t.name);
        w.array(&t.partition_indexes, |w, p| w.i32(*p));
        w.no_tagged_fields();
    });
}

impl Message for OffsetFetchRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let groups = if v <= 7 {
            let group_id = r.string()?;
            // Null (every partition) is allowed from v2.
            let topics = read_fetch_topics(r, v >= 2)?;
            vec![OffsetFetchGroup { group_id, topics }]
        } else {
            r.array(|r| {
                let g = OffsetFetchGroup {
                    group_id: r.string()?,
                    topics: read_fetch_topics(r, true)?,
                };
                r.skip_tagged_fields()?;
                Ok(g)
            })?
        };
        let require_stable = if v >= 7 { r.bool()? } else { false };
        r.skip_tagged_fields()?;
        Ok(Self {
            groups,
            require_stable,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        if v <= 7 {
            let g = self.groups.first();
            w.string(g.map_or("", |g| g.group_id.as_str()));
            write_fetch_topics(w, g.and_then(|g| g.topics.as_deref()));
        } else {
            w.array(&self.groups, |w, g| {
                w.string(&g.group_id);
                write_fetch_topics(w, g.topics.as_deref());
                w.no_tagged_fields();
            });
        }
        if v >= 7 {
            w.bool(self.require_stable);
        }
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedOffset {
    pub partition_index: i32,
    /// -1 when nothing is committed.
    pub committed_offset: i64,
    /// v5+.
    pub committed_leader_epoch: i32,
    pub metadata: Option<String>,
    pub error_code: KafkaCode,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedTopic {
    pub name: String,
    pub partitions: Vec<FetchedOffset>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedGroup {
    pub group_id: String,
    pub topics: Vec<FetchedTopic>,
    /// v2+ (a group-level error).
    pub error_code: KafkaCode,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchResponse {
    /// v3+.
    pub throttle_time_ms: i32,
    /// One group for v1-v7 (its id is not on the wire), several for v8.
    pub groups: Vec<FetchedGroup>,
}

fn read_fetched_topics(r: &mut Reader<'_>, v: i16) -> DecodeResult<Vec<FetchedTopic>> {
    r.array(|r| {
        let name = r.string()?;
        let partitions = r.array(|r| {
            let p = FetchedOffset {
                partition_index: r.i32()?,
                committed_offset: r.i64()?,
                committed_leader_epoch: if v >= 5 { r.i32()? } else { -1 },
                metadata: r.nullable_string()?,
                error_code: KafkaCode(r.i16()?),
            };
            r.skip_tagged_fields()?;
            Ok(p)
        })?;
        r.skip_tagged_fields()?;
        Ok(FetchedTopic { name, partitions })
    })
}

fn write_fetched_topics(w: &mut Writer, v: i16, topics: &[FetchedTopic]) {
    w.array(topics, |w, t| {
        w.string(&t.name);
        w.array(&t.partitions, |w, p| {
            w.i32(p.partition_index);
            w.i64(p.committed_offset);
            if v >= 5 {
                w.i32(p.committed_leader_epoch);
            }
            w.nullable_string(p.metadata.as_deref());
            w.i16(p.error_code.0);
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    });
}

impl Message for OffsetFetchResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if v >= 3 { r.i32()? } else { 0 };
        let groups = if v <= 7 {
            let topics = read_fetched_topics(r, v)?;
            let error_code = if v >= 2 {
                KafkaCode(r.i16()?)
            } else {
                KafkaCode::NONE
            };
            vec![FetchedGroup {
                group_id: String::new(),
                topics,
                error_code,
            }]
        } else {
            r.array(|r| {
                let group_id = r.string()?;
                let topics = read_fetched_topics(r, v)?;
                let error_code = KafkaCode(r.i16()?);
                r.skip_tagged_fields()?;
                Ok(FetchedGroup {
                    group_id,
                    topics,
                    error_code,
                })
            })?
        };
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            groups,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        if v >= 3 {
            w.i32(self.throttle_time_ms);
        }
        if v <= 7 {
            let empty = Vec::new();
            let g = self.groups.first();
            write_fetched_topics(w, v, g.map_or(&empty, |g| &g.topics));
            if v >= 2 {
                w.i16(g.map_or(KafkaCode::NONE, |g| g.error_code).0);
            }
        } else {
            w.array(&self.groups, |w, g| {
                w.string(&g.group_id);
                write_fetched_topics(w, v, &g.topics);
                w.i16(g.error_code.0);
                w.no_tagged_fields();
            });
        }
        w.no_tagged_fields();
    }
}

// ----- ListGroups --------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListGroupsRequest {
    /// v4+: only groups in these states (empty: all).
    pub states_filter: Vec<String>,
}

impl Message for ListGroupsRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let states_filter = if v >= 4 {
            r.array(|r| r.string())?
        } else {
            Vec::new()
        };
        r.skip_tagged_fields()?;
        Ok(Self { states_filter })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        if v >= 4 {
            w.array(&self.states_filter, |w, s| w.string(s));
        }
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedGroup {
    pub group_id: String,
    pub protocol_type: String,
    /// v4+.
    pub group_state: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListGroupsResponse {
    /// v1+.
    pub throttle_time_ms: i32,
    pub error_code: KafkaCode,
    pub groups: Vec<ListedGroup>,
}

impl Message for ListGroupsResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if v >= 1 { r.i32()? } else { 0 };
        let error_code = KafkaCode(r.i16()?);
        let groups = r.array(|r| {
            let g = ListedGroup {
                group_id: r.string()?,
                protocol_type: r.string()?,
                group_state: if v >= 4 { r.string()? } else { String::new() },
            };
            r.skip_tagged_fields()?;
            Ok(g)
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            error_code,
            groups,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        if v >= 1 {
            w.i32(self.throttle_time_ms);
        }
        w.i16(self.error_code.0);
        w.array(&self.groups, |w, g| {
            w.string(&g.group_id);
            w.string(&g.protocol_type);
            if v >= 4 {
                w.string(&g.group_state);
            }
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

// ----- DescribeGroups ----------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeGroupsRequest {
    pub groups: Vec<String>,
    /// v3+.
    pub include_authorized_operations: bool,
}

impl Message for DescribeGroupsRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let groups = r.array(|r| r.string())?;
        let include_authorized_operations = if v >= 3 { r.bool()? } else { false };
        r.skip_tagged_fields()?;
        Ok(Self {
            groups,
            include_authorized_operations,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.array(&self.groups, |w, g| w.string(g));
        if v >= 3 {
            w.bool(self.include_authorized_operations);
        }
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedMember {
    pub member_id: String,
    /// v4+.
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub member_metadata: Bytes,
    pub member_assignment: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedGroup {
    pub error_code: KafkaCode,
    pub group_id: String,
    pub group_state: String,
    pub protocol_type: String,
    /// The chosen protocol's name (the assignor), empty if none.
    pub protocol_data: String,
    pub members: Vec<DescribedMember>,
    /// v3+.
    pub authorized_operations: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeGroupsResponse {
    /// v1+.
    pub throttle_time_ms: i32,
    pub groups: Vec<DescribedGroup>,
}

impl Message for DescribeGroupsResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if v >= 1 { r.i32()? } else { 0 };
        let groups = r.array(|r| {
            let error_code = KafkaCode(r.i16()?);
            let group_id = r.string()?;
            let group_state = r.string()?;
            let protocol_type = r.string()?;
            let protocol_data = r.string()?;
            let members = r.array(|r| {
                let m = DescribedMember {
                    member_id: r.string()?,
                    group_instance_id: if v >= 4 { r.nullable_string()? } else { None },
                    client_id: r.string()?,
                    client_host: r.string()?,
                    member_metadata: r.bytes()?,
                    member_assignment: r.bytes()?,
                };
                r.skip_tagged_fields()?;
                Ok(m)
            })?;
            let authorized_operations = if v >= 3 { r.i32()? } else { i32::MIN };
            r.skip_tagged_fields()?;
            Ok(DescribedGroup {
                error_code,
                group_id,
                group_state,
                protocol_type,
                protocol_data,
                members,
                authorized_operations,
            })
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            groups,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        if v >= 1 {
            w.i32(self.throttle_time_ms);
        }
        w.array(&self.groups, |w, g| {
            w.i16(g.error_code.0);
            w.string(&g.group_id);
            w.string(&g.group_state);
            w.string(&g.protocol_type);
            w.string(&g.protocol_data);
            w.array(&g.members, |w, m| {
                w.string(&m.member_id);
                if v >= 4 {
                    w.nullable_string(m.group_instance_id.as_deref());
                }
                w.string(&m.client_id);
                w.string(&m.client_host);
                w.bytes(&m.member_metadata);
                w.bytes(&m.member_assignment);
                w.no_tagged_fields();
            });
            if v >= 3 {
                w.i32(g.authorized_operations);
            }
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

// ----- DeleteGroups ------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteGroupsRequest {
    pub groups_names: Vec<String>,
}

impl Message for DeleteGroupsRequest {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        let groups_names = r.array(|r| r.string())?;
        r.skip_tagged_fields()?;
        Ok(Self { groups_names })
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        w.array(&self.groups_names, |w, g| w.string(g));
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteGroupsResponse {
    pub throttle_time_ms: i32,
    pub results: Vec<(String, KafkaCode)>,
}

impl Message for DeleteGroupsResponse {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = r.i32()?;
        let results = r.array(|r| {
            let g = (r.string()?, KafkaCode(r.i16()?));
            r.skip_tagged_fields()?;
            Ok(g)
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            results,
        })
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        w.i32(self.throttle_time_ms);
        w.array(&self.results, |w, (g, code)| {
            w.string(g);
            w.i16(code.0);
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

// ----- OffsetDelete (v0 only, classic) -----------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetDeleteRequest {
    pub group_id: String,
    pub topics: Vec<(String, Vec<i32>)>,
}

impl Message for OffsetDeleteRequest {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        Ok(Self {
            group_id: r.string()?,
            topics: r.array(|r| Ok((r.string()?, r.array(|r| r.i32())?)))?,
        })
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        w.string(&self.group_id);
        w.array(&self.topics, |w, (name, partitions)| {
            w.string(name);
            w.array(partitions, |w, p| w.i32(*p));
        });
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetDeleteResponse {
    pub error_code: KafkaCode,
    pub throttle_time_ms: i32,
    pub topics: Vec<TopicPartitionErrors>,
}

impl Message for OffsetDeleteResponse {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        Ok(Self {
            error_code: KafkaCode(r.i16()?),
            throttle_time_ms: r.i32()?,
            topics: read_topic_errors(r)?,
        })
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        w.i16(self.error_code.0);
        w.i32(self.throttle_time_ms);
        write_topic_errors(w, &self.topics);
    }
}

/// The consumer protocol's payloads (protocol type "consumer"): a member's
/// subscription in JoinGroup metadata and its assignment in SyncGroup.
/// Always classic encodings (not flexible), versioned by their own first
/// int16; newer versions append fields, which are ignored here.
pub mod consumer_protocol {
    use crate::codec::{DecodeResult, Reader};
    use bytes::Bytes;

    /// The topics of a subscription (version 0+: version i16, topics
    /// [string], user_data bytes, then fields of later versions).
    pub fn subscribed_topics(metadata: &Bytes) -> DecodeResult<Vec<String>> {
        let mut r = Reader::new(metadata, false);
        let _version = r.i16()?;
        r.array(|r| r.string())
    }

    /// The partitions of an assignment (version i16, [topic, [partition]],
    /// user_data bytes).
    pub fn assigned_partitions(assignment: &Bytes) -> DecodeResult<Vec<(String, Vec<i32>)>> {
        if assignment.is_empty() {
            // A member given nothing may get empty bytes.
            return Ok(Vec::new());
        }
        let mut r = Reader::new(assignment, false);
        let _version = r.i16()?;
        r.array(|r| Ok((r.string()?, r.array(|r| r.i32())?)))
    }
}

// ----- handlers ----------------------------------------------------------------

const CONSUMER: &str = mk_cluster::CONSUMER_PROTOCOL_TYPE;

fn code_of(e: &ClusterError) -> KafkaCode {
    errors::kafka_code(e.code())
}

/// The coordinator of every group and transactional id is the broker that
/// was asked (one process hosts the one coordinator), as long as it is
/// online; otherwise the lowest online broker.
fn coordinator_for(ctx: &Ctx<'_>, key: &str) -> Coordinator {
    let online = ctx.cluster.brokers().online();
    let id = if online.contains(&ctx.broker_id) {
        Some(ctx.broker_id)
    } else {
        online.first().copied()
    };
    match id.and_then(|id| ctx.endpoints.iter().find(|e| e.broker_id == id)) {
        Some(e) => Coordinator {
            key: key.to_string(),
            node_id: e.broker_id,
            host: e.host.clone(),
            port: i32::from(e.port),
            error_code: KafkaCode::NONE,
            error_message: None,
        },
        None => Coordinator {
            key: key.to_string(),
            node_id: -1,
            host: String::new(),
            port: -1,
            error_code: KafkaCode::COORDINATOR_NOT_AVAILABLE,
            error_message: Some("no broker is online".into()),
        },
    }
}

pub async fn handle_find_coordinator(
    ctx: &Ctx<'_>,
    req: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let valid_type = req.key_type == KEY_TYPE_GROUP || req.key_type == KEY_TYPE_TRANSACTION;
    let answer = |key: &str| {
        if valid_type {
            coordinator_for(ctx, key)
        } else {
            Coordinator {
                key: key.to_string(),
                node_id: -1,
                host: String::new(),
                port: -1,
                error_code: KafkaCode::INVALID_REQUEST,
                error_message: Some(format!("unknown coordinator key type {}", req.key_type)),
            }
        }
    };
    FindCoordinatorResponse {
        throttle_time_ms: 0,
        coordinator: answer(&req.key),
        coordinators: req.coordinator_keys.iter().map(|k| answer(k)).collect(),
    }
}

/// The topics a consumer-protocol member subscribes to (from its first
/// protocol's metadata; every protocol of a member carries the same
/// subscription). Unknown protocol types and undecodable metadata give
/// none: the bytes are still handed through.
fn subscribed_topics(protocol_type: &str, protocols: &[JoinGroupProtocol]) -> Vec<String> {
    if protocol_type != CONSUMER {
        return Vec::new();
    }
    protocols
        .first()
        .and_then(|p| consumer_protocol::subscribed_topics(&p.metadata).ok())
        .unwrap_or_default()
}

pub async fn handle_join_group(ctx: &Ctx<'_>, req: JoinGroupRequest) -> JoinGroupResponse {
    let v = ctx.version();
    let join = GroupJoin {
        group_id: req.group_id.clone(),
        member_id: req.member_id.clone(),
        group_instance_id: req.group_instance_id.clone(),
        client_id: ctx.header.client_id.clone().unwrap_or_default(),
        client_host: ctx
            .peer
            .map_or_else(String::new, |p| format!("/{}", p.ip())),
        session_timeout_ms: req.session_timeout_ms,
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        subscribed_topics: subscribed_topics(&req.protocol_type, &req.protocols),
        protocol_type: req.protocol_type.clone(),
        protocols: req
            .protocols
            .iter()
            .map(|p| (p.name.clone(), p.metadata.clone()))
            .collect(),
        require_known_member_id: v >= 4,
    };
    let joined = tokio::select! {
        r = ctx.cluster.groups().join_member(join) => r,
        _ = ctx.shutdown.cancelled() => Err(ClusterError::Closed),
    };
    match joined {
        Ok(j) => JoinGroupResponse {
            throttle_time_ms: 0,
            error_code: KafkaCode::NONE,
            generation_id: j.generation_id,
            protocol_type: Some(j.protocol_type),
            protocol_name: Some(j.protocol_name),
            leader: j.leader_id,
            skip_assignment: false,
            member_id: j.member_id,
            members: j
                .members
                .into_iter()
                .map(|m| JoinGroupMember {
                    member_id: m.member_id,
                    group_instance_id: m.group_instance_id,
                    metadata: m.metadata,
                })
                .collect(),
        },
        Err(e) => JoinGroupResponse {
            throttle_time_ms: 0,
            error_code: code_of(&e),
            generation_id: -1,
            protocol_type: None,
            protocol_name: if v >= 7 { None } else { Some(String::new()) },
            leader: String::new(),
            skip_assignment: false,
            member_id: e
                .member_id_required()
                .map_or_else(|| req.member_id.clone(), str::to_string),
            members: Vec::new(),
        },
    }
}

pub async fn handle_sync_group(ctx: &Ctx<'_>, req: SyncGroupRequest) -> SyncGroupResponse {
    let assigned_partitions = req
        .assignments
        .iter()
        .map(|a| {
            let partitions = consumer_protocol::assigned_partitions(&a.assignment)
                .unwrap_or_default()
                .into_iter()
                .flat_map(|(topic, ps)| {
                    ps.into_iter().filter_map(move |p| {
                        u32::try_from(p)
                            .ok()
                            .map(|p| TopicPartition::new(&topic, p))
                    })
                })
                .collect();
            (a.member_id.clone(), partitions)
        })
        .collect();
    let sync = GroupSync {
        group_id: req.group_id,
        generation_id: req.generation_id,
        member_id: req.member_id,
        group_instance_id: req.group_instance_id,
        protocol_type: req.protocol_type,
        protocol_name: req.protocol_name,
        assignments: req
            .assignments
            .into_iter()
            .map(|a| (a.member_id, a.assignment))
            .collect(),
        assigned_partitions,
    };
    let synced = tokio::select! {
        r = ctx.cluster.groups().sync_member(sync) => r,
        _ = ctx.shutdown.cancelled() => Err(ClusterError::Closed),
    };
    match synced {
        Ok(s) => SyncGroupResponse {
            throttle_time_ms: 0,
            error_code: KafkaCode::NONE,
            protocol_type: Some(s.protocol_type),
            protocol_name: Some(s.protocol_name),
            assignment: s.assignment,
        },
        Err(e) => SyncGroupResponse {
            throttle_time_ms: 0,
            error_code: code_of(&e),
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        },
    }
}

pub async fn handle_heartbeat(ctx: &Ctx<'_>, req: HeartbeatRequest) -> HeartbeatResponse {
    let r = ctx.cluster.groups().heartbeat_member(
        &req.group_id,
        &req.member_id,
        req.generation_id,
        req.group_instance_id.as_deref(),
    );
    HeartbeatResponse {
        throttle_time_ms: 0,
        error_code: r.err().map_or(KafkaCode::NONE, |e| code_of(&e)),
    }
}

pub async fn handle_leave_group(ctx: &Ctx<'_>, req: LeaveGroupRequest) -> LeaveGroupResponse {
    let v = ctx.version();
    let members: Vec<(String, Option<String>)> = req
        .members
        .iter()
        .map(|m| (m.member_id.clone(), m.group_instance_id.clone()))
        .collect();
    match ctx.cluster.groups().leave_members(&req.group_id, &members) {
        Err(e) => LeaveGroupResponse {
            throttle_time_ms: 0,
            error_code: code_of(&e),
            members: Vec::new(),
        },
        Ok(results) => {
            let left: Vec<LeftMember> = req
                .members
                .iter()
                .zip(&results)
                .map(|(m, r)| LeftMember {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    error_code: r.as_ref().err().map_or(KafkaCode::NONE, code_of),
                })
                .collect();
            // Before batching (v0-v2) the one member's error is the answer's.
            let error_code = if v <= 2 {
                left.first().map_or(KafkaCode::NONE, |m| m.error_code)
            } else {
                KafkaCode::NONE
            };
            LeaveGroupResponse {
                throttle_time_ms: 0,
                error_code,
                members: if v >= 3 { left } else { Vec::new() },
            }
        }
    }
}

/// The partitions of a request that can be committed or deleted: real
/// topic partitions; others are answered UNKNOWN_TOPIC_OR_PARTITION.
fn known_partition(ctx: &Ctx<'_>, topic: &str, partition: i32) -> Option<TopicPartition> {
    let p = u32::try_from(partition).ok()?;
    let count = ctx.cluster.topics().partition_count(topic).ok()?;
    (p < count).then(|| TopicPartition::new(topic, p))
}

pub async fn handle_offset_commit(ctx: &Ctx<'_>, req: OffsetCommitRequest) -> OffsetCommitResponse {
    let mut offsets = BTreeMap::new();
    for t in &req.topics {
        for p in &t.partitions {
            if let Some(tp) = known_partition(ctx, &t.name, p.partition_index) {
                offsets.insert(tp, p.committed_offset);
            }
        }
    }
    let result = if offsets.is_empty() {
        Ok(())
    } else {
        ctx.cluster.groups().commit(
            &req.group_id,
            req.generation_id,
            &req.member_id,
            req.group_instance_id.as_deref(),
            &offsets,
        )
    };
    let code = result.err().map_or(KafkaCode::NONE, |e| code_of(&e));
    OffsetCommitResponse {
        throttle_time_ms: 0,
        topics: req
            .topics
            .iter()
            .map(|t| TopicPartitionErrors {
                name: t.name.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| {
                        let known = known_partition(ctx, &t.name, p.partition_index).is_some();
                        (
                            p.partition_index,
                            if known {
                                code
                            } else {
                                KafkaCode::UNKNOWN_TOPIC_OR_PARTITION
                            },
                        )
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn fetched(partition: i32, offset: Option<i64>, code: KafkaCode) -> FetchedOffset {
    FetchedOffset {
        partition_index: partition,
        committed_offset: offset.unwrap_or(-1),
        committed_leader_epoch: -1,
        metadata: Some(String::new()),
        error_code: code,
    }
}

fn fetch_group(ctx: &Ctx<'_>, g: &OffsetFetchGroup) -> FetchedGroup {
    let c = ctx.cluster;
    let topics = match &g.topics {
        None => match c.groups().committed(&g.group_id) {
            Ok(all) => {
                let mut by_topic: BTreeMap<String, Vec<FetchedOffset>> = BTreeMap::new();
                for (tp, o) in all {
                    by_topic.entry(tp.topic.clone()).or_default().push(fetched(
                        tp.partition as i32,
                        Some(o),
                        KafkaCode::NONE,
                    ));
                }
                by_topic
                    .into_iter()
                    .map(|(name, partitions)| FetchedTopic { name, partitions })
                    .collect()
            }
            Err(e) => {
                return FetchedGroup {
                    group_id: g.group_id.clone(),
                    topics: Vec::new(),
                    error_code: code_of(&e),
                };
            }
        },
        Some(topics) => topics
            .iter()
            .map(|t| FetchedTopic {
                name: t.name.clone(),
                partitions: t
                    .partition_indexes
                    .iter()
                    .map(|p| match u32::try_from(*p) {
                        Err(_) => fetched(*p, None, KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
                        Ok(index) => match c
                            .groups()
                            .fetch_committed(&g.group_id, &TopicPartition::new(&t.name, index))
                        {
                            Ok(o) => fetched(*p, o, KafkaCode::NONE),
                            Err(e) => fetched(*p, None, code_of(&e)),
                        },
                    })
                    .collect(),
            })
            .collect(),
    };
    FetchedGroup {
        group_id: g.group_id.clone(),
        topics,
        error_code: KafkaCode::NONE,
    }
}

pub async fn handle_offset_fetch(ctx: &Ctx<'_>, req: OffsetFetchRequest) -> OffsetFetchResponse {
    OffsetFetchResponse {
        throttle_time_ms: 0,
        groups: req.groups.iter().map(|g| fetch_group(ctx, g)).collect(),
    }
}

pub async fn handle_list_groups(ctx: &Ctx<'_>, req: ListGroupsRequest) -> ListGroupsResponse {
    match ctx.cluster.groups().listings() {
        Err(e) => ListGroupsResponse {
            throttle_time_ms: 0,
            error_code: code_of(&e),
            groups: Vec::new(),
        },
        Ok(listings) => ListGroupsResponse {
            throttle_time_ms: 0,
            error_code: KafkaCode::NONE,
            groups: listings
                .into_iter()
                .filter(|l| {
                    req.states_filter.is_empty()
                        || req
                            .states_filter
                            .iter()
                            .any(|s| s.eq_ignore_ascii_case(l.state.as_str()))
                })
                .map(|l| ListedGroup {
                    group_id: l.group_id,
                    protocol_type: l.protocol_type,
                    group_state: l.state.as_str().to_string(),
                })
                .collect(),
        },
    }
}

pub async fn handle_describe_groups(
    ctx: &Ctx<'_>,
    req: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let groups = req
        .groups
        .iter()
        .map(|id| match ctx.cluster.groups().describe(id) {
            Err(e) => DescribedGroup {
                error_code: code_of(&e),
                group_id: id.clone(),
                group_state: String::new(),
                protocol_type: String::new(),
                protocol_data: String::new(),
                members: Vec::new(),
                authorized_operations: i32::MIN,
            },
            // Kafka describes a group it does not know as Dead, without an
            // error.
            Ok(None) => DescribedGroup {
                error_code: KafkaCode::NONE,
                group_id: id.clone(),
                group_state: "Dead".into(),
                protocol_type: String::new(),
                protocol_data: String::new(),
                members: Vec::new(),
                authorized_operations: i32::MIN,
            },
            Ok(Some(d)) => DescribedGroup {
                error_code: KafkaCode::NONE,
                group_id: d.group_id.clone(),
                group_state: d.state.as_str().to_string(),
                protocol_type: d.protocol_type.clone(),
                protocol_data: d.protocol_name.clone(),
                members: d
                    .members
                    .iter()
                    .map(|m| DescribedMember {
                        member_id: m.member_id.clone(),
                        group_instance_id: m.group_instance_id.clone(),
                        client_id: m.client_id.clone(),
                        client_host: m.client_host.clone(),
                        member_metadata: m.metadata.clone(),
                        member_assignment: m.assignment_bytes.clone(),
                    })
                    .collect(),
                authorized_operations: if req.include_authorized_operations {
                    // READ, DESCRIBE, DELETE: everything a group has.
                    (1 << 3) | (1 << 6) | (1 << 8)
                } else {
                    i32::MIN
                },
            },
        })
        .collect();
    DescribeGroupsResponse {
        throttle_time_ms: 0,
        groups,
    }
}

pub async fn handle_delete_groups(ctx: &Ctx<'_>, req: DeleteGroupsRequest) -> DeleteGroupsResponse {
    let results = match ctx.cluster.groups().delete(&req.groups_names) {
        Ok(r) => req
            .groups_names
            .iter()
            .zip(r)
            .map(|(g, r)| (g.clone(), r.err().map_or(KafkaCode::NONE, |e| code_of(&e))))
            .collect(),
        Err(e) => req
            .groups_names
            .iter()
            .map(|g| (g.clone(), code_of(&e)))
            .collect(),
    };
    DeleteGroupsResponse {
        throttle_time_ms: 0,
        results,
    }
}

pub async fn handle_offset_delete(ctx: &Ctx<'_>, req: OffsetDeleteRequest) -> OffsetDeleteResponse {
    let mut partitions = Vec::new();
    for (topic, ps) in &req.topics {
        for p in ps {
            if let Some(tp) = known_partition(ctx, topic, *p) {
                partitions.push(tp);
            }
        }
    }
    let results = ctx
        .cluster
        .groups()
        .delete_offsets(&req.group_id, &partitions);
    let (error_code, by_tp): (KafkaCode, BTreeMap<TopicPartition, KafkaCode>) = match results {
        Err(e) => (code_of(&e), BTreeMap::new()),
        Ok(r) => (
            KafkaCode::NONE,
            r.into_iter()
                .map(|(tp, r)| (tp, r.err().map_or(KafkaCode::NONE, |e| code_of(&e))))
                .collect(),
        ),
    };
    OffsetDeleteResponse {
        error_code,
        throttle_time_ms: 0,
        topics: req
            .topics
            .iter()
            .map(|(topic, ps)| TopicPartitionErrors {
                name: topic.clone(),
                partitions: ps
                    .iter()
                    .map(|p| {
                        let code = known_partition(ctx, topic, *p)
                            .map_or(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION, |tp| {
                                by_tp.get(&tp).copied().unwrap_or(error_code)
                            });
                        (*p, code)
                    })
                    .collect(),
            })
            .collect(),
    }
}
