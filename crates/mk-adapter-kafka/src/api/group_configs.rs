//! Group configs on Kafka's config APIs: DescribeConfigs and
//! IncrementalAlterConfigs of GROUP resources (type 32), the dynamic
//! configs of KIP-848 and KIP-932 groups (`share.record.lock.duration.ms`,
//! `share.auto.offset.reset`, `share.isolation.level`, ...), kept and
//! checked by mk-group.

use super::Ctx;
use super::admin::ConfigEntry;
use crate::messages::incremental_alter_configs::AlterConfigsResource;
use mk_cluster::ClusterError;

/// Kafka's config sources of a group config.
const SOURCE_GROUP: i8 = 8;
const SOURCE_DEFAULT: i8 = 5;

use super::admin::{OP_DELETE, OP_SET};

/// Every group config of `group`: GROUP_CONFIG where the group set it,
/// DEFAULT_CONFIG otherwise.
pub(crate) fn entries(ctx: &Ctx<'_>, group: &str) -> Result<Vec<ConfigEntry>, ClusterError> {
    Ok(ctx
        .cluster
        .groups()
        .describe_configs(group)?
        .into_iter()
        .map(|e| {
            let source = if e.is_default {
                SOURCE_DEFAULT
            } else {
                SOURCE_GROUP
            };
            ConfigEntry::plain(e.name.to_string(), e.value, source)
        })
        .collect())
}

/// SET and DELETE of a group's configs, all or nothing; APPEND and
/// SUBTRACT have no list config to act on (INVALID_CONFIG).
pub(crate) fn alter(
    ctx: &Ctx<'_>,
    res: &AlterConfigsResource,
    validate_only: bool,
) -> Result<(), ClusterError> {
    let changes = res
        .configs
        .iter()
        .map(|c| match (c.config_operation, &c.value) {
            (OP_SET, Some(v)) => Ok((c.name.clone(), Some(v.clone()))),
            (OP_DELETE, _) => Ok((c.name.clone(), None)),
            (OP_SET, None) => Err(ClusterError::InvalidConfig(format!(
                "SET of {} needs a value",
                c.name
            ))),
            (op, _) => Err(ClusterError::InvalidConfig(format!(
                "operation {op} (APPEND/SUBTRACT) is not supported for group config {}; use SET",
                c.name
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    ctx.cluster
        .groups()
        .alter_configs(&res.resource_name, &changes, validate_only)
}
