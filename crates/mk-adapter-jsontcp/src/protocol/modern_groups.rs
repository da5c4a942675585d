//! The KIP-848 consumer group and the KIP-932 share group halves of
//! `describe_group`'s answer, in both directions: the classic half stays in
//! `groups.rs`, which picks the half by `group_type`.

use super::common::{members_of, partitions_of, write_strings, write_tp_object};
use crate::wire::{DecodeError, Decoded, Fields, ObjWriter, bad, push_array};
use mk_cluster::{
    ConsumerGroupDescription, ConsumerMemberDescription, GroupState, MemberState, ServerAssignor,
    ShareGroupDescription, ShareMemberDescription, TopicPartition,
};

fn write_opt_str(w: &mut ObjWriter<'_>, name: &str, s: Option<&str>) {
    match s {
        Some(s) => w.str(name, s),
        None => w.raw(name, b"null"),
    };
}

fn write_partitions(w: &mut ObjWriter<'_>, name: &str, partitions: &[TopicPartition]) {
    w.with(name, |out| push_array(out, partitions, write_tp_object));
}

fn state_of(f: &Fields<'_>) -> Decoded<GroupState> {
    let state = f.str("state")?;
    GroupState::parse(state).map_or_else(|| bad(format!("unknown group state {state:?}")), Ok)
}

/// `state, epoch, assignment_epoch, assignor, members [{member_id,
/// instance_id, member_epoch, member_state, client_id, client_host, topics,
/// regex, assignment, revoking, target, deadline_ms}]`.
pub(super) fn encode_consumer(w: &mut ObjWriter<'_>, d: &ConsumerGroupDescription) {
    w.str("state", d.state.as_str())
        .int("epoch", i64::from(d.epoch))
        .int("assignment_epoch", i64::from(d.assignment_epoch))
        .str("assignor", d.assignor.name())
        .with("members", |out| {
            push_array(out, &d.members, |out, m| {
                let mut w = ObjWriter::new(out);
                w.str("member_id", &m.member_id);
                write_opt_str(&mut w, "instance_id", m.instance_id.as_deref());
                w.int("member_epoch", i64::from(m.member_epoch))
                    .str("member_state", m.state.as_str())
                    .str("client_id", &m.client_id)
                    .str("client_host", &m.client_host)
                    .with("topics", |out| write_strings(out, &m.topics));
                write_opt_str(&mut w, "regex", m.regex.as_deref());
                write_partitions(&mut w, "assignment", &m.assignment);
                write_partitions(&mut w, "revoking", &m.revoking);
                write_partitions(&mut w, "target", &m.target);
                w.int("deadline_ms", m.session_deadline_ms);
                w.end();
            })
        });
}

pub(super) fn decode_consumer(
    f: &Fields<'_>,
    group_id: String,
) -> Decoded<ConsumerGroupDescription> {
    let assignor = f.str("assignor")?;
    Ok(ConsumerGroupDescription {
        group_id,
        state: state_of(f)?,
        epoch: f.i32("epoch")?,
        assignment_epoch: f.i32("assignment_epoch")?,
        assignor: ServerAssignor::parse(assignor)
            .ok_or_else(|| DecodeError(format!("unknown assignor {assignor:?}")))?,
        members: members_of(f, consumer_member_of)?,
    })
}

fn consumer_member_of(m: &Fields<'_>, ctx: &str) -> Decoded<ConsumerMemberDescription> {
    let state = m.str("member_state")?;
    Ok(ConsumerMemberDescription {
        member_id: m.string("member_id")?,
        instance_id: m.opt_str("instance_id")?.map(str::to_string),
        // Not on the JSON wire.
        rack_id: None,
        member_epoch: m.i32("member_epoch")?,
        state: MemberState::parse(state)
            .ok_or_else(|| DecodeError(format!("{ctx}: unknown member state {state:?}")))?,
        client_id: m.string("client_id")?,
        client_host: m.string("client_host")?,
        topics: m.strings("topics")?,
        regex: m.opt_str("regex")?.map(str::to_string),
        assignment: partitions_of(m.array("assignment")?, ctx)?,
        revoking: partitions_of(m.array("revoking")?, ctx)?,
        target: partitions_of(m.array("target")?, ctx)?,
        session_deadline_ms: m.i64("deadline_ms")?,
    })
}

/// `state, epoch, assignment_epoch, members [{member_id, member_epoch,
/// client_id, client_host, topics, assignment, deadline_ms}], partitions
/// [{topic, partition, start_offset, end_offset}]` (every share partition
/// with state, and its in-flight window).
pub(super) fn encode_share(w: &mut ObjWriter<'_>, d: &ShareGroupDescription) {
    w.str("state", d.state.as_str())
        .int("epoch", i64::from(d.epoch))
        .int("assignment_epoch", i64::from(d.assignment_epoch))
        .with("members", |out| {
            push_array(out, &d.members, |out, m| {
                let mut w = ObjWriter::new(out);
                w.str("member_id", &m.member_id)
                    .int("member_epoch", i64::from(m.member_epoch))
                    .str("client_id", &m.client_id)
                    .str("client_host", &m.client_host)
                    .with("topics", |out| write_strings(out, &m.topics));
                write_partitions(&mut w, "assignment", &m.assignment);
                w.int("deadline_ms", m.session_deadline_ms);
                w.end();
            })
        })
        .with("partitions", |out| {
            push_array(out, &d.partitions, |out, (tp, start, end)| {
                let mut w = ObjWriter::new(out);
                w.str("topic", &tp.topic)
                    .int("partition", i64::from(tp.partition))
                    .int("start_offset", *start)
                    .int("end_offset", *end);
                w.end();
            })
        });
}

pub(super) fn decode_share(f: &Fields<'_>, group_id: String) -> Decoded<ShareGroupDescription> {
    let partitions = f
        .array("partitions")?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let p = Fields::item(v, "partitions", i)?;
            let tp = TopicPartition::new(p.string("topic")?, p.u32("partition")?);
            Ok((tp, p.i64("start_offset")?, p.i64("end_offset")?))
        })
        .collect::<Decoded<Vec<_>>>()?;
    Ok(ShareGroupDescription {
        group_id,
        state: state_of(f)?,
        epoch: f.i32("epoch")?,
        assignment_epoch: f.i32("assignment_epoch")?,
        members: members_of(f, |m, ctx| {
            Ok(ShareMemberDescription {
                member_id: m.string("member_id")?,
                // Not on the JSON wire.
                rack_id: None,
                member_epoch: m.i32("member_epoch")?,
                client_id: m.string("client_id")?,
                client_host: m.string("client_host")?,
                topics: m.strings("topics")?,
                assignment: partitions_of(m.array("assignment")?, ctx)?,
                session_deadline_ms: m.i64("deadline_ms")?,
            })
        })?,
        partitions,
    })
}
