//! Producer identities and transactions on the wire: `init_producer`,
//! `begin_txn`, `txn_produce`, `txn_send_offsets`, `commit_txn` and
//! `abort_txn`. Each operation is a module with its four directions side by
//! side, as in `topics.rs`. A transactional client names itself by
//! [`TxnRef`] (transactional id and epoch); which handle that is, is the
//! core's decision (`cluster.transactions().handle_at`).

use super::common::{offsets_of, one_string_request, write_offsets};
use super::{Request, Response};
use crate::wire::{Decoded, Fields, ObjWriter};
use mk_cluster::{ProducerIdentity, TopicPartition};
use std::collections::BTreeMap;

/// Identifies one instance of a transactional producer on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnRef {
    pub transactional_id: String,
    pub producer_epoch: i32,
}

impl TxnRef {
    fn decode(f: &Fields<'_>) -> Decoded<Self> {
        Ok(TxnRef {
            transactional_id: f.string("transactional_id")?,
            producer_epoch: f.i32("producer_epoch")?,
        })
    }

    fn encode(&self, w: &mut ObjWriter<'_>) {
        w.str("transactional_id", &self.transactional_id)
            .int("producer_epoch", i64::from(self.producer_epoch));
    }
}

/// producer_id, producer_epoch: the answer of both `init_producer` and
/// `begin_txn`.
pub(super) mod identity {
    use super::*;

    pub fn encode_response(w: &mut ObjWriter<'_>, i: &ProducerIdentity) {
        w.int("producer_id", i.producer_id)
            .int("producer_epoch", i64::from(i.epoch));
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<ProducerIdentity> {
        Ok(ProducerIdentity {
            producer_id: f.i64("producer_id")?,
            epoch: f.i32("producer_epoch")?,
        })
    }
}

/// `init_producer`: optional name -> an [`identity`] (a known name keeps
/// its id and bumps the epoch).
pub(super) mod init_producer {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::InitProducer {
            name: f.opt_string("name")?,
        })
    }

    pub fn encode(w: &mut ObjWriter<'_>, name: Option<&str>) {
        w.str_if_some("name", name);
    }
}

/// `begin_txn`: transactional_id -> an [`identity`].
pub(super) mod begin_txn {
    use super::*;

    one_string_request!(BeginTxn, transactional_id);
}

/// `txn_produce`: transactional_id, producer_epoch, topic, optional
/// partition, key_b64, value_b64 -> partition, offset.
pub(super) mod txn_produce {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::TxnProduce {
            txn: TxnRef::decode(f)?,
            topic: f.string("topic")?,
            partition: f.opt_u32("partition")?,
            key: f.opt_b64("key_b64")?,
            value: f.opt_b64("value_b64")?,
        })
    }

    pub fn encode(
        w: &mut ObjWriter<'_>,
        txn: &TxnRef,
        topic: &str,
        partition: Option<u32>,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) {
        txn.encode(w);
        w.str("topic", topic);
        if let Some(p) = partition {
            w.int("partition", i64::from(p));
        }
        w.b64("key_b64", key).b64("value_b64", value);
    }

    pub fn encode_response(w: &mut ObjWriter<'_>, partition: u32, offset: i64) {
        w.int("partition", i64::from(partition))
            .int("offset", offset);
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::TxnProduce {
            partition: f.u32("partition")?,
            offset: f.i64("offset")?,
        })
    }
}

/// `txn_send_offsets`: transactional_id, producer_epoch, group_id, offsets
/// [{topic, partition, offset}] -> nothing (stored when the transaction
/// commits).
pub(super) mod txn_send_offsets {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::TxnSendOffsets {
            txn: TxnRef::decode(f)?,
            group_id: f.string("group_id")?,
            offsets: offsets_of(f, "offsets")?,
        })
    }

    pub fn encode(
        w: &mut ObjWriter<'_>,
        txn: &TxnRef,
        group_id: &str,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) {
        txn.encode(w);
        w.str("group_id", group_id)
            .with("offsets", |out| write_offsets(out, offsets));
    }
}

/// `commit_txn` and `abort_txn`: transactional_id, producer_epoch ->
/// nothing.
pub(super) mod end_txn {
    use super::*;

    pub fn decode(f: &Fields<'_>, commit: bool) -> Decoded<Request> {
        let txn = TxnRef::decode(f)?;
        Ok(if commit {
            Request::CommitTxn { txn }
        } else {
            Request::AbortTxn { txn }
        })
    }

    pub fn encode(w: &mut ObjWriter<'_>, txn: &TxnRef) {
        txn.encode(w);
    }
}
