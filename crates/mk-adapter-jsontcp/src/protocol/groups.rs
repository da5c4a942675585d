//! Consumer groups on the wire: `join_group`, `heartbeat`, `commit_offsets`,
//! `leave_group`, `fetch_offsets`, `describe_group`, and the operator's
//! `list_groups`, `delete_group` and `alter_group_offsets`. Each operation is a
//! module with its four directions side by side, as in `topics.rs`.

use super::common::{
    commit_answer_of, commits_of, members_of, objects, offsets_of, one_string_request,
    partitions_of, tp_of, write_commit, write_commits, write_offsets, write_strings, write_tp,
    write_tp_object,
};
use super::{Request, Response, modern_groups};
use crate::wire::{DecodeError, Decoded, Fields, ObjWriter, bad, push_array};
use mk_cluster::{
    AnyGroupDescription, AssignorKind, Bytes, GroupDescription, GroupListing, GroupState,
    GroupType, MemberAssignment, MemberDescription, OffsetAndMetadata, TopicPartition,
};
use std::collections::BTreeMap;

/// `join_group`: group_id, member_id, topics, optional assignor ->
/// generation, assignment.
pub(super) mod join_group {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::JoinGroup {
            group_id: f.string("group_id")?,
            member_id: f.string("member_id")?,
            topics: f.strings("topics")?,
            assignor: match f.opt_str("assignor")? {
                None => None,
                Some(s) => Some(AssignorKind::parse(s).ok_or_else(|| {
                    DecodeError(format!(
                        "field \"assignor\" must be \"roundrobin\", \"range\" or \"sticky\", got {s:?}"
                    ))
                })?),
            },
        })
    }

    pub fn encode(
        w: &mut ObjWriter<'_>,
        group_id: &str,
        member_id: &str,
        topics: &[String],
        assignor: Option<AssignorKind>,
    ) {
        w.str("group_id", group_id)
            .str("member_id", member_id)
            .with("topics", |out| write_strings(out, topics));
        if let Some(a) = assignor {
            w.str("assignor", a.name());
        }
    }

    pub fn encode_response(w: &mut ObjWriter<'_>, a: &MemberAssignment) {
        w.int("generation", i64::from(a.generation))
            .with("assignment", |out| {
                push_array(out, &a.partitions, write_tp_object)
            });
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::JoinGroup(MemberAssignment {
            generation: f.i32("generation")?,
            partitions: partitions_of(f.array("assignment")?, "assignment")?,
        }))
    }
}

/// `heartbeat`: group_id, member_id, generation -> nothing.
pub(super) mod heartbeat {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::Heartbeat {
            group_id: f.string("group_id")?,
            member_id: f.string("member_id")?,
            generation: f.i32("generation")?,
        })
    }

    pub fn encode(w: &mut ObjWriter<'_>, group_id: &str, member_id: &str, generation: i32) {
        w.str("group_id", group_id)
            .str("member_id", member_id)
            .int("generation", i64::from(generation));
    }
}

/// `commit_offsets`: group_id, member_id, generation, offsets [{topic,
/// partition, offset, leader_epoch?, metadata?}] -> nothing.
pub(super) mod commit_offsets {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::CommitOffsets {
            group_id: f.string("group_id")?,
            member_id: f.string("member_id")?,
            generation: f.i32("generation")?,
            offsets: commits_of(f, "offsets")?,
        })
    }

    pub fn encode(
        w: &mut ObjWriter<'_>,
        group_id: &str,
        member_id: &str,
        generation: i32,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
    ) {
        w.str("group_id", group_id)
            .str("member_id", member_id)
            .int("generation", i64::from(generation))
            .with("offsets", |out| write_commits(out, offsets));
    }
}

/// `leave_group`: group_id, member_id -> left (false if the member was not
/// in the group).
pub(super) mod leave_group {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::LeaveGroup {
            group_id: f.string("group_id")?,
            member_id: f.string("member_id")?,
        })
    }

    pub fn encode(w: &mut ObjWriter<'_>, group_id: &str, member_id: &str) {
        w.str("group_id", group_id).str("member_id", member_id);
    }

    pub fn encode_response(w: &mut ObjWriter<'_>, left: bool) {
        w.bool("left", left);
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::LeaveGroup {
            left: f.bool("left")?,
        })
    }
}

/// `fetch_offsets`: group_id, optional partitions [{topic, partition}] ->
/// offsets [{topic, partition, offset, leader_epoch?, metadata?}] (offset
/// null where nothing is committed; the other two only where committed).
pub(super) mod fetch_offsets {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::FetchOffsets {
            group_id: f.string("group_id")?,
            partitions: match f.opt_array("partitions")? {
                None => None,
                Some(items) => Some(partitions_of(items, "partitions")?),
            },
        })
    }

    pub fn encode(w: &mut ObjWriter<'_>, group_id: &str, partitions: Option<&[TopicPartition]>) {
        w.str("group_id", group_id);
        if let Some(ps) = partitions {
            w.with("partitions", |out| push_array(out, ps, write_tp_object));
        }
    }

    pub fn encode_response(
        w: &mut ObjWriter<'_>,
        offsets: &[(TopicPartition, Option<OffsetAndMetadata>)],
    ) {
        w.with("offsets", |out| {
            push_array(out, offsets, |out, (tp, o)| {
                let mut w = ObjWriter::new(out);
                write_tp(&mut w, tp);
                match o {
                    Some(committed) => write_commit(&mut w, committed),
                    None => {
                        w.opt_int("offset", None);
                    }
                }
                w.end();
            })
        });
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::FetchOffsets(objects(f, "offsets", |o| {
            Ok((tp_of(o)?, commit_answer_of(o)?))
        })?))
    }
}

/// `describe_group`: group_id -> group_id, group_type, then the type's
/// description: for a classic group state, generation, assignor,
/// protocol_type, protocol, members [{member_id, topics, assignment,
/// deadline_ms}]; for a KIP-848 consumer group and a share group see
/// `modern_groups`. A group the coordinator does not know is state "Dead"
/// with generation 0, assignor null, no members and no group_type. A
/// classic group's `assignor` is what the coordinator assigns JSON-TCP
/// members with; `protocol` is what the current generation uses (for a
/// Kafka consumer group, the client-side assignor its members agreed on,
/// e.g. "range"), "" unless Stable.
pub(super) mod describe_group {
    use super::*;

    one_string_request!(DescribeGroup, group_id);

    pub fn encode_response(
        w: &mut ObjWriter<'_>,
        group_id: &str,
        description: Option<&AnyGroupDescription>,
    ) {
        w.str("group_id", group_id);
        let Some(d) = description else {
            w.str("state", "Dead")
                .int("generation", 0)
                .raw("assignor", b"null")
                .raw("members", b"[]");
            return;
        };
        w.str("group_type", d.group_type().as_str());
        match d {
            AnyGroupDescription::Classic(d) => encode_classic(w, d),
            AnyGroupDescription::Consumer(d) => modern_groups::encode_consumer(w, d),
            AnyGroupDescription::Share(d) => modern_groups::encode_share(w, d),
        }
    }

    fn encode_classic(w: &mut ObjWriter<'_>, d: &GroupDescription) {
        w.str("state", d.state.as_str())
            .int("generation", i64::from(d.generation))
            .str("assignor", d.assignor.name())
            .str("protocol_type", &d.protocol_type)
            .str("protocol", &d.protocol_name)
            .with("members", |out| {
                push_array(out, &d.members, |out, m| {
                    let mut w = ObjWriter::new(out);
                    w.str("member_id", &m.member_id)
                        .with("topics", |out| write_strings(out, &m.topics))
                        .with("assignment", |out| {
                            push_array(out, &m.assignment, write_tp_object)
                        })
                        .int("deadline_ms", m.deadline_ms);
                    w.end();
                })
            });
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        let group_id = f.string("group_id")?;
        let description = match (f.opt_str("group_type")?, f.str("state")?) {
            // A server of an earlier version sends no group_type: classic.
            (None, "Dead") => None,
            (None | Some("classic"), _) => Some(AnyGroupDescription::Classic(decode_classic(
                f,
                group_id.clone(),
            )?)),
            (Some("consumer"), _) => Some(AnyGroupDescription::Consumer(
                modern_groups::decode_consumer(f, group_id.clone())?,
            )),
            (Some("share"), _) => Some(AnyGroupDescription::Share(modern_groups::decode_share(
                f,
                group_id.clone(),
            )?)),
            (Some(other), _) => return bad(format!("unknown group type {other:?}")),
        };
        Ok(Response::DescribeGroup {
            group_id,
            description,
        })
    }

    fn decode_classic(f: &Fields<'_>, group_id: String) -> Decoded<GroupDescription> {
        let state = f.str("state")?;
        // The classic protocol's client ids, metadata and assignment bytes
        // are not on the JSON wire; a decoded description has them empty.
        // A server of an earlier version sends no protocol type or name.
        Ok(GroupDescription {
            group_id,
            state: match GroupState::parse(state) {
                Some(s) => s,
                None => return bad(format!("unknown group state {state:?}")),
            },
            protocol_type: f.opt_str("protocol_type")?.unwrap_or_default().to_owned(),
            protocol_name: f.opt_str("protocol")?.unwrap_or_default().to_owned(),
            generation: f.i32("generation")?,
            assignor: AssignorKind::parse(f.str("assignor")?)
                .ok_or_else(|| DecodeError("unknown assignor".into()))?,
            members: members_of(f, |m, ctx| {
                Ok(MemberDescription {
                    member_id: m.string("member_id")?,
                    topics: m.strings("topics")?,
                    assignment: partitions_of(m.array("assignment")?, ctx)?,
                    deadline_ms: m.i64("deadline_ms")?,
                    client_id: String::new(),
                    client_host: String::new(),
                    group_instance_id: None,
                    metadata: Bytes::new(),
                    assignment_bytes: Bytes::new(),
                })
            })?,
        })
    }
}

/// `list_groups`: nothing -> groups [{group_id, protocol_type, state,
/// group_type}] (every group the coordinator knows, Kafka and JSON-TCP
/// members alike; protocol_type is "" for a group that only stores
/// offsets; group_type is "classic", "consumer" (KIP-848) or "share").
pub(super) mod list_groups {
    use super::*;

    pub fn encode_response(w: &mut ObjWriter<'_>, groups: &[GroupListing]) {
        w.with("groups", |out| {
            push_array(out, groups, |out, g| {
                let mut m = ObjWriter::new(out);
                m.str("group_id", &g.group_id)
                    .str("protocol_type", &g.protocol_type)
                    .str("state", g.state.as_str())
                    .str("group_type", g.group_type.as_str());
                m.end();
            })
        });
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::ListGroups(objects(f, "groups", |g| {
            let state = g.str("state")?;
            // Servers before KIP-848 groups sent no type: all were classic.
            let group_type = match g.opt_str("group_type")? {
                None => GroupType::Classic,
                Some(t) => GroupType::parse(t)
                    .ok_or_else(|| DecodeError(format!("unknown group type {t:?}")))?,
            };
            Ok(GroupListing {
                group_id: g.string("group_id")?,
                protocol_type: g.string("protocol_type")?,
                state: GroupState::parse(state)
                    .ok_or_else(|| DecodeError(format!("unknown group state {state:?}")))?,
                group_type,
            })
        })?))
    }
}

/// `delete_group`: group_id -> nothing. A group with members is
/// NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND (Kafka's
/// DeleteGroups for one group).
pub(super) mod delete_group {
    use super::*;

    one_string_request!(DeleteGroup, group_id);
}

/// `alter_group_offsets`: group_id, offsets [{topic, partition, offset}] ->
/// nothing. Kafka's commit for a group without members (generation -1, no
/// member id): what `kafka-consumer-groups --reset-offsets` sends. A group
/// with members refuses it, as Kafka does.
pub(super) mod alter_group_offsets {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::AlterGroupOffsets {
            group_id: f.string("group_id")?,
            offsets: offsets_of(f, "offsets")?,
        })
    }

    pub fn encode(w: &mut ObjWriter<'_>, group_id: &str, offsets: &BTreeMap<TopicPartition, i64>) {
        w.str("group_id", group_id)
            .with("offsets", |out| write_offsets(out, offsets));
    }
}
