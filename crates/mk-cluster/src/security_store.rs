//! The security store, `<data_dir>/security.json`: the ACLs and the SCRAM
//! credentials (salt, iterations, StoredKey, ServerKey — never a password).
//! A file of its own beside metadata.json, so the topic store's frequent
//! writes never carry key material and the file can be readable by the
//! broker's user only (mode 0600). Written atomically like every store
//! (temp file, fsync, rename, directory fsync); a file that cannot be
//! parsed is STORAGE_ERROR at open, never silently reset.

use crate::error::{ClusterError, Result};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use mk_auth::{AclBinding, AclSet, ScramCredential, ScramMechanism};
use mk_storage::{FaultInjector, StorageError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const FILE_NAME: &str = "security.json";
const FORMAT_VERSION: u32 = 1;

/// What the store holds.
#[derive(Debug, Clone, Default)]
pub(crate) struct SecurityData {
    pub acls: AclSet,
    pub scram: BTreeMap<(String, ScramMechanism), ScramCredential>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileV1 {
    version: u32,
    acls: Vec<AclBinding>,
    scram: Vec<ScramV1>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScramV1 {
    user: String,
    mechanism: ScramMechanism,
    iterations: u32,
    salt: String,
    stored_key: String,
    server_key: String,
}

/// The store on disk and its current contents.
#[derive(Debug)]
pub(crate) struct SecurityStore {
    path: PathBuf,
    faults: Arc<FaultInjector>,
    pub data: SecurityData,
}

impl SecurityStore {
    /// Reads the store of `data_dir` (empty when the file does not exist).
    pub fn load(data_dir: &Path, faults: Arc<FaultInjector>) -> Result<SecurityStore> {
        let path = data_dir.join(FILE_NAME);
        let data = match mk_storage::fsutil::read_optional(&path)? {
            None => SecurityData::default(),
            Some(bytes) => parse(&path, &bytes)?,
        };
        Ok(SecurityStore { path, faults, data })
    }

    /// Replaces the contents with `data`, durably; on failure nothing
    /// changes.
    pub fn save(&mut self, data: SecurityData) -> Result<()> {
        let file = FileV1 {
            version: FORMAT_VERSION,
            acls: data.acls.iter().cloned().collect(),
            scram: data
                .scram
                .iter()
                .map(|((user, mechanism), c)| ScramV1 {
                    user: user.clone(),
                    mechanism: *mechanism,
                    iterations: c.iterations,
                    salt: B64.encode(&c.salt),
                    stored_key: B64.encode(&c.stored_key),
                    server_key: B64.encode(&c.server_key),
                })
                .collect(),
        };
        let bytes = serde_json::to_vec_pretty(&file)
            .map_err(|e| StorageError::unusable(&self.path, format!("cannot encode: {e}")))?;
        mk_storage::fsutil::write_atomic_with(&self.faults, &self.path, &bytes)?;
        restrict(&self.path);
        self.data = data;
        Ok(())
    }
}

/// Makes the file readable by its owner only (best effort: a filesystem
/// without Unix permissions keeps what it has).
fn restrict(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
    #[cfg(not(unix))]
    let _ = path;
}

fn parse(path: &Path, bytes: &[u8]) -> Result<SecurityData> {
    let bad = |m: String| ClusterError::Storage(StorageError::unusable(path, m));
    let file: FileV1 =
        serde_json::from_slice(bytes).map_err(|e| bad(format!("cannot parse: {e}")))?;
    if file.version != FORMAT_VERSION {
        return Err(bad(format!("unknown version {}", file.version)));
    }
    let acls = AclSet::from_bindings(file.acls).map_err(|e| bad(e.to_string()))?;
    let mut scram = BTreeMap::new();
    for s in file.scram {
        let decode = |v: &str| B64.decode(v).map_err(|e| bad(format!("{}: {e}", s.user)));
        let credential = ScramCredential {
            mechanism: s.mechanism,
            salt: decode(&s.salt)?,
            stored_key: decode(&s.stored_key)?,
            server_key: decode(&s.server_key)?,
            iterations: s.iterations,
        };
        scram.insert((s.user, s.mechanism), credential);
    }
    Ok(SecurityData { acls, scram })
}
