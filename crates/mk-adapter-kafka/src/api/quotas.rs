//! Client quotas: DescribeClientQuotas and AlterClientQuotas, onto the
//! core's `quotas()` (validated with Kafka's rules, persisted, described;
//! stored without effect: nothing is throttled).

use super::Ctx;
use crate::errors::{self, KafkaCode};
use crate::messages::alter_client_quotas::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, EntryResult,
};
use crate::messages::describe_client_quotas::{
    self as described, DescribeClientQuotasRequest, DescribeClientQuotasResponse, ValueData,
};
use mk_cluster::{ClusterError, QuotaFilter, QuotaMatch, QuotaOp};

pub async fn handle_alter_client_quotas(
    ctx: &Ctx<'_>,
    req: AlterClientQuotasRequest,
) -> AlterClientQuotasResponse {
    let entries = req
        .entries
        .into_iter()
        .map(|e| {
            let entity: Vec<(String, Option<String>)> = e
                .entity
                .iter()
                .map(|d| (d.entity_type.clone(), d.entity_name.clone()))
                .collect();
            let ops: Vec<QuotaOp> = e
                .ops
                .iter()
                .map(|o| QuotaOp {
                    key: o.key.clone(),
                    value: o.value,
                    remove: o.remove,
                })
                .collect();
            let (error_code, error_message) =
                match ctx.cluster.quotas().alter(&entity, &ops, req.validate_only) {
                    Ok(()) => (KafkaCode::NONE, None),
                    Err(e) => {
                        let (code, message) = errors::from_cluster(&e);
                        (code, Some(message))
                    }
                };
            EntryResult {
                error_code,
                error_message,
                entity: e.entity,
            }
        })
        .collect();
    AlterClientQuotasResponse {
        throttle_time_ms: 0,
        entries,
    }
}

/// A filter component as the core takes it; an unknown match type is
/// Kafka's UNSUPPORTED_VERSION, a name where none belongs (or none where
/// one does) INVALID_REQUEST.
fn filter(c: &described::ComponentData) -> Result<QuotaFilter, (KafkaCode, String)> {
    let matching = match (c.match_type, &c.r#match) {
        (0, Some(name)) => QuotaMatch::Exact(name.clone()),
        (1, None) => QuotaMatch::Default,
        (2, None) => QuotaMatch::Specified,
        (0..=2, _) => {
            let e = ClusterError::InvalidRequest(format!(
                "match type {} {} a match string",
                c.match_type,
                if c.match_type == 0 {
                    "needs"
                } else {
                    "takes no"
                }
            ));
            return Err(errors::from_cluster(&e));
        }
        (other, _) => {
            return Err((
                KafkaCode::UNSUPPORTED_VERSION,
                format!("unsupported match type {other}"),
            ));
        }
    };
    Ok(QuotaFilter {
        entity_type: c.entity_type.clone(),
        matching,
    })
}

pub async fn handle_describe_client_quotas(
    ctx: &Ctx<'_>,
    req: DescribeClientQuotasRequest,
) -> DescribeClientQuotasResponse {
    let found = req
        .components
        .iter()
        .map(filter)
        .collect::<Result<Vec<_>, _>>()
        .and_then(|filters| {
            ctx.cluster
                .quotas()
                .describe(&filters, req.strict)
                .map_err(|e| errors::from_cluster(&e))
        });
    match found {
        Ok(entries) => DescribeClientQuotasResponse {
            throttle_time_ms: 0,
            error_code: KafkaCode::NONE,
            error_message: None,
            entries: Some(
                entries
                    .into_iter()
                    .map(|e| described::EntryData {
                        entity: e
                            .entity
                            .into_iter()
                            .map(|(entity_type, entity_name)| described::EntityData {
                                entity_type,
                                entity_name,
                            })
                            .collect(),
                        values: e
                            .values
                            .into_iter()
                            .map(|(key, value)| ValueData { key, value })
                            .collect(),
                    })
                    .collect(),
            ),
        },
        Err((error_code, message)) => DescribeClientQuotasResponse {
            throttle_time_ms: 0,
            error_code,
            error_message: Some(message),
            entries: None,
        },
    }
}
