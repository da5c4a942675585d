//! Client quotas, `cluster.quotas()`: Kafka's quota entities (a user, a
//! client id, both, or an IP address; each name possibly the default) with
//! their values, altered and described with Kafka's rules and kept in
//! `<data_dir>/quotas.json` (written atomically like every store; a file
//! that cannot be parsed is STORAGE_ERROR at open). They are stored and
//! described only: no request is throttled by them.

use crate::cluster::BrokerCluster;
use crate::error::{ClusterError, Result};
use mk_storage::{FaultInjector, StorageError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Kafka's entity types.
pub const QUOTA_USER: &str = "user";
pub const QUOTA_CLIENT_ID: &str = "client-id";
pub const QUOTA_IP: &str = "ip";

/// A quota entity: entity type -> name (`None`: the type's default).
pub type QuotaEntity = BTreeMap<String, Option<String>>;

/// A quota key's value type (Kafka's `QuotaConfig`): integral ones refuse
/// fractions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QuotaType {
    Long,
    Int,
    Double,
}

/// The keys of user and client-id entities.
const CLIENT_KEYS: &[(&str, QuotaType)] = &[
    ("producer_byte_rate", QuotaType::Long),
    ("consumer_byte_rate", QuotaType::Long),
    ("request_percentage", QuotaType::Double),
    ("controller_mutation_rate", QuotaType::Double),
];

/// The keys of IP entities.
const IP_KEYS: &[(&str, QuotaType)] = &[("connection_creation_rate", QuotaType::Int)];

/// One change of an alteration: set `key` to `value`, or remove it.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaOp {
    pub key: String,
    pub value: f64,
    pub remove: bool,
}

/// How a describe filter's component matches an entity's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuotaMatch {
    /// Exactly this name.
    Exact(String),
    /// The type's default entity.
    Default,
    /// Any entity of the type, the default included.
    Specified,
}

/// One component of a describe filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaFilter {
    pub entity_type: String,
    pub matching: QuotaMatch,
}

/// A described entity and its values, by key.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaEntry {
    pub entity: QuotaEntity,
    pub values: BTreeMap<String, f64>,
}

/// The client quotas role: `cluster.quotas()`.
#[derive(Debug, Clone, Copy)]
pub struct Quotas<'a> {
    cluster: &'a BrokerCluster,
}

impl BrokerCluster {
    /// The client quotas role (see [`Quotas`]).
    pub fn quotas(&self) -> Quotas<'_> {
        Quotas { cluster: self }
    }
}

fn invalid(m: impl Into<String>) -> ClusterError {
    ClusterError::InvalidRequest(m.into())
}

/// Kafka's entity rules: a known type each at most once, no empty name, an
/// IP entity alone and naming an address.
fn validate_entity(entity: &[(String, Option<String>)]) -> Result<QuotaEntity> {
    if entity.is_empty() {
        return Err(invalid("the client quota entity is empty"));
    }
    let mut out = QuotaEntity::new();
    for (kind, name) in entity {
        if ![QUOTA_USER, QUOTA_CLIENT_ID, QUOTA_IP].contains(&kind.as_str()) {
            return Err(invalid(format!(
                "unknown client quota entity type {kind:?}"
            )));
        }
        if out.insert(kind.clone(), name.clone()).is_some() {
            return Err(invalid(format!(
                "entity type {kind:?} appears more than once"
            )));
        }
        if name.as_deref() == Some("") {
            return Err(invalid(format!("an empty {kind} name is not supported")));
        }
        if kind == QUOTA_IP
            && let Some(ip) = name
            && ip.parse::<std::net::IpAddr>().is_err()
        {
            return Err(invalid(format!("invalid IP address {ip:?}")));
        }
    }
    if out.contains_key(QUOTA_IP) && out.len() > 1 {
        return Err(invalid(
            "an IP entity cannot be combined with a user or client id",
        ));
    }
    Ok(out)
}

/// Kafka's key rules: a key of the entity's kind, and a whole number for
/// the integral ones.
fn validate_op(entity: &QuotaEntity, op: &QuotaOp) -> Result<()> {
    let keys = if entity.contains_key(QUOTA_IP) {
        IP_KEYS
    } else {
        CLIENT_KEYS
    };
    let Some((_, kind)) = keys.iter().find(|(k, _)| *k == op.key) else {
        return Err(invalid(format!("invalid quota key {:?}", op.key)));
    };
    if op.remove {
        return Ok(());
    }
    if !op.value.is_finite() {
        return Err(invalid(format!("{} must be a finite number", op.key)));
    }
    let integral = match kind {
        QuotaType::Double => return Ok(()),
        QuotaType::Long => op.value.fract() == 0.0 && op.value.abs() <= 9.0e18,
        QuotaType::Int => op.value.fract() == 0.0 && op.value.abs() <= f64::from(i32::MAX),
    };
    if integral {
        Ok(())
    } else {
        Err(invalid(format!(
            "an integer value is required for {}, got {}",
            op.key, op.value
        )))
    }
}

fn matches(entity: &QuotaEntity, filters: &[QuotaFilter], strict: bool) -> bool {
    if strict && entity.len() != filters.len() {
        return false;
    }
    filters
        .iter()
        .all(|f| match (&f.matching, entity.get(&f.entity_type)) {
            (_, None) => false,
            (QuotaMatch::Specified, Some(_)) => true,
            (QuotaMatch::Default, Some(name)) => name.is_none(),
            (QuotaMatch::Exact(want), Some(name)) => name.as_deref() == Some(want.as_str()),
        })
}

impl Quotas<'_> {
    /// Applies one alteration of `entity` (Kafka's AlterClientQuotas entry):
    /// all of `ops` or none, persisted before it returns; `validate_only`
    /// checks and changes nothing. INVALID_REQUEST names the broken rule.
    pub fn alter(
        self,
        entity: &[(String, Option<String>)],
        ops: &[QuotaOp],
        validate_only: bool,
    ) -> Result<()> {
        self.cluster.check_running()?;
        let entity = validate_entity(entity)?;
        let mut seen = std::collections::BTreeSet::new();
        for op in ops {
            validate_op(&entity, op)?;
            if !seen.insert(op.key.as_str()) {
                return Err(invalid(format!(
                    "quota key {:?} appears more than once",
                    op.key
                )));
            }
        }
        if validate_only {
            return Ok(());
        }
        let mut store = self.cluster.quotas.lock().expect("quota store lock");
        let mut next = store.data.clone();
        let values = next.entry(entity.clone()).or_default();
        for op in ops {
            if op.remove {
                values.remove(&op.key);
            } else {
                values.insert(op.key.clone(), op.value);
            }
        }
        if values.is_empty() {
            next.remove(&entity);
        }
        let saved = store.save(next);
        drop(store);
        self.cluster.guard(saved)
    }

    /// The entities `filters` match (Kafka's DescribeClientQuotas): each
    /// filter's type must be present and match; `strict` also requires the
    /// entity to have no other type. A type named twice, or IP combined
    /// with a user or client id, is INVALID_REQUEST.
    pub fn describe(self, filters: &[QuotaFilter], strict: bool) -> Result<Vec<QuotaEntry>> {
        self.cluster.check_running()?;
        let mut types = std::collections::BTreeSet::new();
        for f in filters {
            if ![QUOTA_USER, QUOTA_CLIENT_ID, QUOTA_IP].contains(&f.entity_type.as_str()) {
                return Err(invalid(format!(
                    "unknown client quota entity type {:?}",
                    f.entity_type
                )));
            }
            if !types.insert(f.entity_type.as_str()) {
                return Err(invalid(format!(
                    "entity type {:?} appears more than once in the filter",
                    f.entity_type
                )));
            }
        }
        if types.contains(QUOTA_IP) && types.len() > 1 {
            return Err(invalid(
                "an IP filter cannot be combined with a user or client id filter",
            ));
        }
        let store = self.cluster.quotas.lock().expect("quota store lock");
        Ok(store
            .data
            .iter()
            .filter(|(entity, _)| matches(entity, filters, strict))
            .map(|(entity, values)| QuotaEntry {
                entity: entity.clone(),
                values: values.clone(),
            })
            .collect())
    }
}

// ----- the store -------------------------------------------------------------

const FILE_NAME: &str = "quotas.json";
const FORMAT_VERSION: u32 = 1;

type QuotaData = BTreeMap<QuotaEntity, BTreeMap<String, f64>>;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileV1 {
    version: u32,
    entities: Vec<EntityV1>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntityV1 {
    /// Type -> name; null is the default entity.
    entity: BTreeMap<String, Option<String>>,
    values: BTreeMap<String, f64>,
}

/// `quotas.json` and its current contents.
#[derive(Debug)]
pub(crate) struct QuotaStore {
    path: PathBuf,
    faults: Arc<FaultInjector>,
    data: QuotaData,
}

impl QuotaStore {
    /// Reads the store of `data_dir` (empty when the file does not exist).
    pub fn load(data_dir: &Path, faults: Arc<FaultInjector>) -> Result<QuotaStore> {
        let path = data_dir.join(FILE_NAME);
        let bad = |m: String| ClusterError::Storage(StorageError::unusable(&path, m));
        let data = match mk_storage::fsutil::read_optional(&path)? {
            None => QuotaData::new(),
            Some(bytes) => {
                let file: FileV1 = serde_json::from_slice(&bytes)
                    .map_err(|e| bad(format!("cannot parse: {e}")))?;
                if file.version != FORMAT_VERSION {
                    return Err(bad(format!("unknown version {}", file.version)));
                }
                file.entities
                    .into_iter()
                    .map(|e| (e.entity, e.values))
                    .collect()
            }
        };
        Ok(QuotaStore { path, faults, data })
    }

    /// Replaces the contents with `data`, durably; on failure nothing
    /// changes.
    fn save(&mut self, data: QuotaData) -> Result<()> {
        let file = FileV1 {
            version: FORMAT_VERSION,
            entities: data
                .iter()
                .map(|(entity, values)| EntityV1 {
                    entity: entity.clone(),
                    values: values.clone(),
                })
                .collect(),
        };
        let bytes = serde_json::to_vec_pretty(&file)
            .map_err(|e| StorageError::unusable(&self.path, format!("cannot encode: {e}")))?;
        mk_storage::fsutil::write_atomic_with(&self.faults, &self.path, &bytes)?;
        self.data = data;
        Ok(())
    }
}
