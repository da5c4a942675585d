//! The transaction coordinator's admin APIs: ListTransactions (Kafka 4.1's
//! filters, applied by mk-txn: `transactions().list_filtered`) and
//! DescribeTransactions (`transactions().describe`). Each broker answers
//! for the transactional ids it coordinates, as Kafka's brokers do (admin
//! clients ask every broker and merge, or each id's coordinator).

use super::Ctx;
use super::groups::not_coordinator;
use crate::errors::{self, KafkaCode};
use crate::messages::describe_transactions::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, TopicData,
    TransactionState as Described,
};
use crate::messages::list_transactions::{
    ListTransactionsRequest, ListTransactionsResponse, TransactionState as Listed,
};
use mk_cluster::{CoordinatorKey, TxnDescription, TxnFilter};
use std::collections::BTreeMap;

pub async fn handle_list_transactions(
    ctx: &Ctx<'_>,
    req: ListTransactionsRequest,
) -> ListTransactionsResponse {
    let filter = TxnFilter {
        states: req.state_filters,
        producer_ids: req.producer_id_filters,
        min_duration_ms: (req.duration_filter >= 0).then_some(req.duration_filter),
        id_pattern: req.transactional_id_pattern,
    };
    match ctx.cluster.transactions().list_filtered(&filter) {
        Ok(listing) => ListTransactionsResponse {
            throttle_time_ms: 0,
            error_code: KafkaCode::NONE,
            unknown_state_filters: listing.unknown_states,
            transaction_states: listing
                .transactions
                .into_iter()
                .filter(|d| {
                    not_coordinator(ctx, CoordinatorKey::Transaction(&d.transactional_id)).is_none()
                })
                .map(|d| Listed {
                    transactional_id: d.transactional_id,
                    producer_id: d.producer_id,
                    transaction_state: d.state.as_str().to_string(),
                })
                .collect(),
        },
        Err(e) => ListTransactionsResponse {
            throttle_time_ms: 0,
            error_code: errors::from_cluster(&e).0,
            unknown_state_filters: Vec::new(),
            transaction_states: Vec::new(),
        },
    }
}

fn failed(id: &str, code: KafkaCode) -> Described {
    Described {
        error_code: code,
        transactional_id: id.to_string(),
        transaction_state: String::new(),
        transaction_timeout_ms: 0,
        transaction_start_time_ms: -1,
        producer_id: -1,
        producer_epoch: -1,
        topics: Vec::new(),
    }
}

fn described(d: TxnDescription) -> Described {
    let mut topics: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for tp in d.partitions_in_flight() {
        let p = i32::try_from(tp.partition).unwrap_or(i32::MAX);
        topics.entry(tp.topic.clone()).or_default().push(p);
    }
    Described {
        error_code: KafkaCode::NONE,
        transaction_state: d.state.as_str().to_string(),
        transaction_timeout_ms: i32::try_from(d.timeout_ms).unwrap_or(i32::MAX),
        transaction_start_time_ms: d.start_ms,
        producer_id: d.producer_id,
        // Epochs are at most Kafka's 32767 (mk-txn's MAX_PRODUCER_EPOCH).
        producer_epoch: i16::try_from(d.producer_epoch).unwrap_or(i16::MAX),
        topics: topics
            .into_iter()
            .map(|(topic, partitions)| TopicData { topic, partitions })
            .collect(),
        transactional_id: d.transactional_id,
    }
}

/// DescribeTransactions: each id at its coordinator (NOT_COORDINATOR
/// elsewhere), TRANSACTIONAL_ID_NOT_FOUND for an id never initialized.
pub async fn handle_describe_transactions(
    ctx: &Ctx<'_>,
    req: DescribeTransactionsRequest,
) -> DescribeTransactionsResponse {
    let transaction_states = req
        .transactional_ids
        .iter()
        .map(|id| {
            if let Some(code) = not_coordinator(ctx, CoordinatorKey::Transaction(id)) {
                return failed(id, code);
            }
            match ctx.cluster.transactions().describe(id) {
                Ok(Some(d)) => described(d),
                Ok(None) => failed(id, KafkaCode::TRANSACTIONAL_ID_NOT_FOUND),
                Err(e) => failed(id, errors::from_cluster(&e).0),
            }
        })
        .collect();
    DescribeTransactionsResponse {
        throttle_time_ms: 0,
        transaction_states,
    }
}
