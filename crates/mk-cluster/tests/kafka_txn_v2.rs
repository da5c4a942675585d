//! Transactions v2 (KIP-890 part 2) through the core, as a Kafka 4 client
//! drives it with Produce v12, TxnOffsetCommit v5 and EndTxn v5: no
//! AddPartitionsToTxn or AddOffsetsToTxn, an epoch bump at every end (the
//! markers carry it, sequences start again at 0 under it, late batches of
//! the ended transaction are fenced), and retries of a lost EndTxn answer.

mod common;

use common::*;
use mk_cluster::*;

/// A Produce v12 of `values` to `tp` (acks=all).
async fn produce_v2(
    client: &mut Client,
    c: &BrokerCluster,
    tp: &TopicPartition,
    values: &[&str],
) -> Result<ProduceResult> {
    client.produce_as(c, tp, values, TxnVersion::V2).await
}

/// EndTxn v5; the client goes on with the answer, its sequences from 0.
async fn end_v2(client: &mut Client, c: &BrokerCluster, commit: bool) -> Result<()> {
    let (pid, epoch) = c
        .transactions()
        .end_v2(&client.id, client.pid, client.epoch, commit)
        .await?;
    client.pid = pid;
    client.epoch = epoch;
    client.seqs.clear();
    Ok(())
}

#[tokio::test]
async fn batches_join_the_transaction_by_themselves_and_every_end_bumps_the_epoch() {
    let (node, mut p) = single_with_tx().await;
    let c = node.c();
    let (o0, o1) = (tp("out", 0), tp("out", 1));
    let first_epoch = p.epoch;
    // A first-protocol batch still needs AddPartitionsToTxn.
    assert_eq!(
        code(p.produce(c, &o0, &["v1"]).await),
        ErrorCode::TransactionAbortable
    );
    produce_v2(&mut p, c, &o0, &["a", "b"]).await.unwrap();
    produce_v2(&mut p, c, &o1, &["c"]).await.unwrap();
    let d = c.transactions().describe("tx").unwrap().unwrap();
    assert_eq!(d.state, TxnState::Ongoing);
    assert_eq!(d.partitions, vec![o0.clone(), o1.clone()]);
    assert!(!lso_is_free(c, &o0));
    assert!(read_committed(c, &o0).is_empty());

    let zombie = p.clone();
    end_v2(&mut p, c, true).await.unwrap();
    assert_eq!(p.epoch, first_epoch + 1);
    assert_eq!(read_committed(c, &o0), vec!["a", "b"]);
    assert_eq!(read_committed(c, &o1), vec!["c"]);
    assert!(lso_is_free(c, &o0) && lso_is_free(c, &o1));
    // A late batch of the ended transaction: fenced by the marker's epoch,
    // nothing written, no transaction begun.
    let mut zombie = zombie;
    let leo = c.data().log_end_offset(&o0).unwrap();
    assert_eq!(
        code(produce_v2(&mut zombie, c, &o0, &["late"]).await),
        ErrorCode::InvalidProducerEpoch
    );
    assert_eq!(c.data().log_end_offset(&o0).unwrap(), leo);
    assert_eq!(txn_state(c, "tx"), TxnState::CompleteCommit);
    // The next transaction: sequences start again at 0 under the new epoch.
    produce_v2(&mut p, c, &o0, &["d"]).await.unwrap();
    end_v2(&mut p, c, false).await.unwrap();
    assert_eq!(p.epoch, first_epoch + 2);
    assert_eq!(read_committed(c, &o0), vec!["a", "b"]);
    assert_eq!(read_uncommitted(c, &o0), vec!["a", "b", "d"]);
    // A new session still bumps once, and fences the previous one.
    let fresh = Client::init(c, "tx", TIMEOUT_MS).await.unwrap();
    assert_eq!(fresh.epoch, first_epoch + 3);
    assert_eq!(
        code(end_v2(&mut p, c, false).await),
        ErrorCode::ProducerFenced
    );
}

#[tokio::test]
async fn offsets_join_the_transaction_without_add_offsets_and_are_stored_on_commit() {
    // The first protocol needs AddOffsetsToTxn.
    let (node, mut p, out, input) = offsets_need_add_offsets(4).await;
    let c = node.c();
    // TxnOffsetCommit v5 begins the transaction by itself.
    let answers = c
        .transactions()
        .commit_offsets_as(&p.offset_commit("g", &[(input.clone(), 4)]), TxnVersion::V2)
        .unwrap();
    assert!(answers.iter().all(|(_, r)| r.is_ok()));
    let d = c.transactions().describe("tx").unwrap().unwrap();
    assert_eq!(
        (d.state, d.groups),
        (TxnState::Ongoing, vec!["g".to_string()])
    );
    produce_v2(&mut p, c, &out, &["x"]).await.unwrap();
    assert_eq!(c.groups().fetch_committed("g", &input).unwrap(), None);
    end_v2(&mut p, c, true).await.unwrap();
    assert_eq!(c.groups().fetch_committed("g", &input).unwrap(), Some(4));
    // Aborted offsets are dropped.
    c.transactions()
        .commit_offsets_as(&p.offset_commit("g", &[(input.clone(), 9)]), TxnVersion::V2)
        .unwrap();
    end_v2(&mut p, c, false).await.unwrap();
    assert_eq!(c.groups().fetch_committed("g", &input).unwrap(), Some(4));
}

#[tokio::test]
async fn a_lost_end_answer_is_answered_again_and_survives_a_restart() {
    let mut node = single();
    let out = tp("out", 0);
    let mut p = Client::init(node.c(), "tx", TIMEOUT_MS).await.unwrap();
    produce_v2(&mut p, node.c(), &out, &["x"]).await.unwrap();
    let before = p.clone();
    end_v2(&mut p, node.c(), true).await.unwrap();
    node.crash_and_reopen();
    let c = node.c();
    // The retry carries the epoch before the bump.
    let again = c
        .transactions()
        .end_v2(&before.id, before.pid, before.epoch, true)
        .await
        .unwrap();
    assert_eq!(again, (p.pid, p.epoch));
    assert_eq!(
        code(
            c.transactions()
                .end_v2(&before.id, before.pid, before.epoch, false)
                .await
        ),
        ErrorCode::InvalidTxnState
    );
    // An abort with nothing open just bumps the epoch and marks nothing.
    let leo = c.data().log_end_offset(&out).unwrap();
    end_v2(&mut p, c, false).await.unwrap();
    assert_eq!(p.epoch, before.epoch + 2);
    assert_eq!(c.data().log_end_offset(&out).unwrap(), leo);
    assert_eq!(read_committed(c, &out), vec!["x"]);
}
