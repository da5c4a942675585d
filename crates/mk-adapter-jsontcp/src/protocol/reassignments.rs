//! Partition reassignments on the wire (what `mk-server partition
//! reassign|reassignments` sends): `alter_partition_reassignment` starts,
//! replaces or (with `replicas` null or absent, as Kafka's
//! AlterPartitionReassignments) cancels one partition's move, and
//! `list_partition_reassignments` lists the moves in progress. Both answer
//! `reassignments`, the moves in progress they concern (one encoder,
//! [`encode`]). Operator actions:
//! they work outside lab mode.

use super::common::{ids_of, objects, tp_of, write_ids, write_tp};
use super::{Request, Response};
use crate::wire::{Decoded, Fields, ObjWriter, push_array};
use mk_cluster::{OngoingReassignment, TopicPartition};

/// The response direction both operations share: `reassignments`.
pub(super) fn encode(w: &mut ObjWriter<'_>, ongoing: &[OngoingReassignment]) {
    w.with("reassignments", |out| {
        push_array(out, ongoing, |o, r| {
            let mut m = ObjWriter::new(o);
            write_tp(&mut m, &r.partition);
            m.with("replicas", |o| write_ids(o, &r.replicas))
                .with("adding_replicas", |o| write_ids(o, &r.adding))
                .with("removing_replicas", |o| write_ids(o, &r.removing));
            m.end();
        });
    });
}

fn reassignments_of(f: &Fields<'_>) -> Decoded<Vec<OngoingReassignment>> {
    objects(f, "reassignments", |r| {
        Ok(OngoingReassignment {
            partition: tp_of(r)?,
            replicas: ids_of(r.array("replicas")?)?,
            adding: ids_of(r.array("adding_replicas")?)?,
            removing: ids_of(r.array("removing_replicas")?)?,
        })
    })
}

/// `alter_partition_reassignment`: topic, partition, replicas (the target;
/// null or absent cancels the move in progress), optional
/// allow_replication_factor_change (default true) -> reassignments (the
/// partition's move still in progress: empty when it completed at once or
/// was cancelled).
pub(super) mod alter_partition_reassignment {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::AlterPartitionReassignment {
            tp: tp_of(f)?,
            replicas: f.opt_array("replicas")?.map(|r| ids_of(r)).transpose()?,
            allow_replication_factor_change: match f.get("allow_replication_factor_change") {
                None => true,
                Some(_) => f.bool("allow_replication_factor_change")?,
            },
        })
    }

    pub fn encode(
        w: &mut ObjWriter<'_>,
        tp: &TopicPartition,
        replicas: Option<&[i32]>,
        allow_replication_factor_change: bool,
    ) {
        write_tp(w, tp);
        if let Some(r) = replicas {
            w.with("replicas", |o| write_ids(o, r));
        }
        if !allow_replication_factor_change {
            w.bool("allow_replication_factor_change", false);
        }
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        reassignments_of(f).map(Response::AlterPartitionReassignment)
    }
}

/// `list_partition_reassignments`: optional topic (default: every topic)
/// -> reassignments [{topic, partition, replicas, adding_replicas,
/// removing_replicas}], by topic and partition.
pub(super) mod list_partition_reassignments {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        let topic = f.opt_string("topic")?;
        Ok(Request::ListPartitionReassignments { topic })
    }

    pub fn encode(w: &mut ObjWriter<'_>, topic: Option<&str>) {
        w.str_if_some("topic", topic);
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        reassignments_of(f).map(Response::ListPartitionReassignments)
    }
}
