//! `ProducerIdentityStore`: the broker's durable map from producer name to
//! `(producer_id, epoch)` (KIP-98's `InitProducerId`, keyed by name). A new
//! name gets the next id (1, 2, ...) and epoch 0; a known name keeps its id
//! and gets the next epoch, which fences every older instance.
//!
//! Stored in `<data_dir>/producer-identities.json`, replaced atomically on
//! every allocation before the allocation is returned:
//!
//! ```json
//! {"version":1,"next_producer_id":3,"producers":{"a":{"producer_id":1,"epoch":0}}}
//! ```

use crate::error::{ReplicationError, Result};
use mk_storage::{FaultInjector, StorageError, fsutil};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// File name of the store inside the data directory.
pub const IDENTITY_FILE: &str = "producer-identities.json";

const VERSION: u32 = 1;

/// The identity handed to one producer instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerIdentity {
    pub producer_id: i64,
    pub epoch: i32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreFile {
    version: u32,
    next_producer_id: i64,
    producers: BTreeMap<String, ProducerIdentity>,
}

/// The durable name -> identity map of one data directory.
#[derive(Debug)]
pub struct ProducerIdentityStore {
    path: PathBuf,
    file: StoreFile,
    faults: std::sync::Arc<FaultInjector>,
}

impl ProducerIdentityStore {
    /// Opens the store of `data_dir` (an absent file is an empty store). A
    /// file that cannot be parsed or breaks the store's rules is
    /// STORAGE_ERROR; it is never silently reset, because that would hand
    /// out producer ids a second time.
    pub fn open(data_dir: &Path) -> Result<Self> {
        let path = data_dir.join(IDENTITY_FILE);
        let file = match fsutil::read_optional(&path)? {
            None => StoreFile {
                version: VERSION,
                next_producer_id: 1,
                producers: BTreeMap::new(),
            },
            Some(bytes) => {
                let file: StoreFile = serde_json::from_slice(&bytes).map_err(|e| {
                    StorageError::unusable(&path, format!("unparsable identity store: {e}"))
                })?;
                check(&path, &file)?;
                file
            }
        };
        Ok(Self {
            path,
            file,
            faults: std::sync::Arc::new(FaultInjector::new()),
        })
    }

    /// Makes the store's writes pass `faults` (the broker's one fault
    /// seam).
    pub fn with_faults(mut self, faults: std::sync::Arc<FaultInjector>) -> Self {
        self.faults = faults;
        self
    }

    /// The path of the store file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Allocates the identity of a producer instance named `name` and
    /// persists it before returning. Epochs that would overflow move the
    /// name to a fresh producer id with epoch 0, like Kafka.
    pub fn allocate(&mut self, name: &str) -> Result<ProducerIdentity> {
        if name.is_empty() {
            return Err(ReplicationError::InvalidRequest(
                "a producer name must not be empty".into(),
            ));
        }
        let mut next = self.file.clone();
        let identity = match next.producers.get(name) {
            Some(known) if known.epoch < i32::MAX => ProducerIdentity {
                producer_id: known.producer_id,
                epoch: known.epoch + 1,
            },
            _ => {
                let id = next.next_producer_id;
                next.next_producer_id = id_after(id)?;
                ProducerIdentity {
                    producer_id: id,
                    epoch: 0,
                }
            }
        };
        next.producers.insert(name.to_string(), identity);
        self.persist(next)?;
        Ok(identity)
    }

    /// Makes sure the store never hands out an identity the logs already
    /// hold: `seen` is every producer id found in the logs (and the
    /// transaction journal) with its highest epoch. The next new id goes
    /// above every seen one, and a known name's next epoch above the epoch
    /// seen for its id. A store that was deleted, or restored from an older
    /// backup, is so rebuilt safely instead of handing the same id and
    /// epoch to a second producer (whose first records would then be
    /// answered as duplicates and never stored). Persists and returns true
    /// when something had to change.
    pub fn respect_seen(&mut self, seen: &BTreeMap<i64, i32>) -> Result<bool> {
        let mut next = self.file.clone();
        let max_id = seen
            .keys()
            .copied()
            .chain(next.producers.values().map(|i| i.producer_id))
            .max();
        if let Some(max_id) = max_id
            && max_id >= next.next_producer_id
        {
            next.next_producer_id = id_after(max_id)?;
        }
        for identity in next.producers.values_mut() {
            if let Some(&epoch) = seen.get(&identity.producer_id) {
                identity.epoch = identity.epoch.max(epoch);
            }
        }
        if next.next_producer_id == self.file.next_producer_id
            && next.producers == self.file.producers
        {
            return Ok(false);
        }
        tracing::warn!(
            path = %self.path.display(),
            next_producer_id = next.next_producer_id,
            was = self.file.next_producer_id,
            "the producer identity store is behind the logs (deleted or restored from an older copy); \
             it now continues above every producer id and epoch the logs hold"
        );
        self.persist(next)?;
        Ok(true)
    }

    /// Allocates a producer id that belongs to no name (the transaction
    /// coordinator owns the epochs of transactional ids and asks only for
    /// their ids) and persists the store before returning it.
    pub fn allocate_id(&mut self) -> Result<i64> {
        let mut next = self.file.clone();
        let id = next.next_producer_id;
        next.next_producer_id = id_after(id)?;
        self.persist(next)?;
        Ok(id)
    }

    /// Writes `next` to the store file (atomically, through the fault
    /// seam) and then makes it the store's state.
    fn persist(&mut self, next: StoreFile) -> Result<()> {
        let bytes = serde_json::to_vec(&next).map_err(|e| {
            StorageError::unusable(&self.path, format!("cannot encode identity store: {e}"))
        })?;
        fsutil::write_atomic_with(&self.faults, &self.path, &bytes)?;
        self.file = next;
        Ok(())
    }

    /// The current identity of `name`, if it was ever allocated.
    pub fn get(&self, name: &str) -> Option<ProducerIdentity> {
        self.file.producers.get(name).copied()
    }

    /// Every allocated identity by name (e.g. to register the current epochs
    /// on every partition after a restart).
    pub fn identities(&self) -> impl Iterator<Item = (&str, ProducerIdentity)> {
        self.file
            .producers
            .iter()
            .map(|(name, id)| (name.as_str(), *id))
    }
}

/// The producer id handed out after `id`.
fn id_after(id: i64) -> Result<i64> {
    id.checked_add(1)
        .ok_or_else(|| ReplicationError::InvalidRequest("producer ids are exhausted".into()))
}

fn check(path: &Path, file: &StoreFile) -> Result<()> {
    let bad = |reason: String| Err(StorageError::unusable(path, reason).into());
    if file.version != VERSION {
        return bad(format!(
            "expected identity store version {VERSION}, found {}",
            file.version
        ));
    }
    if file.next_producer_id < 1 {
        return bad(format!(
            "next_producer_id must be >= 1, found {}",
            file.next_producer_id
        ));
    }
    let mut seen = BTreeMap::new();
    for (name, id) in &file.producers {
        if name.is_empty() || id.producer_id < 1 || id.epoch < 0 {
            return bad(format!(
                "invalid entry {name:?}: producer id {} epoch {}",
                id.producer_id, id.epoch
            ));
        }
        if id.producer_id >= file.next_producer_id {
            return bad(format!(
                "producer {name:?} has id {} but next_producer_id is {}",
                id.producer_id, file.next_producer_id
            ));
        }
        if let Some(other) = seen.insert(id.producer_id, name) {
            return bad(format!(
                "producer id {} is used by both {other:?} and {name:?}",
                id.producer_id
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mk_core::ErrorCode;

    fn id(producer_id: i64, epoch: i32) -> ProducerIdentity {
        ProducerIdentity { producer_id, epoch }
    }

    /// A new store in a fresh directory whose first name, "a", got id 1 at
    /// epoch 0 (checked).
    fn store_with_a() -> (tempfile::TempDir, ProducerIdentityStore) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = ProducerIdentityStore::open(dir.path()).unwrap();
        assert_eq!(store.allocate("a").unwrap(), id(1, 0));
        (dir, store)
    }

    #[test]
    fn identity_store_allocates_and_bumps() {
        let (dir, mut store) = store_with_a();
        assert_eq!(store.allocate("b").unwrap(), id(2, 0));
        assert_eq!(store.allocate("a").unwrap(), id(1, 1));
        assert_eq!(store.get("a"), Some(id(1, 1)));
        assert_eq!(store.get("zzz"), None);
        assert_eq!(
            store.allocate("").unwrap_err().code(),
            ErrorCode::InvalidRequest
        );
        drop(store);
        let mut reopened = ProducerIdentityStore::open(dir.path()).unwrap();
        assert_eq!(reopened.allocate("a").unwrap(), id(1, 2));
        assert_eq!(reopened.allocate("c").unwrap(), id(3, 0));
        // An id without a name is never handed out again, also after a reopen.
        assert_eq!(reopened.allocate_id().unwrap(), 4);
        drop(reopened);
        let mut reopened = ProducerIdentityStore::open(dir.path()).unwrap();
        assert_eq!(reopened.allocate("d").unwrap(), id(5, 0));
        let names: Vec<&str> = reopened.identities().map(|(n, _)| n).collect();
        assert_eq!(names, ["a", "b", "c", "d"]);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp file left"
        );
    }

    #[test]
    fn the_store_continues_above_every_id_and_epoch_the_logs_hold() {
        let (dir, mut store) = store_with_a();
        // The logs know id 1 at epoch 4 and id 7: "a" continues at epoch 5
        // and a new name gets 8, as does a nameless id after it.
        let seen = BTreeMap::from([(1, 4), (7, 0)]);
        assert!(store.respect_seen(&seen).unwrap());
        assert!(
            !store.respect_seen(&seen).unwrap(),
            "nothing left to change"
        );
        drop(store);
        let mut store = ProducerIdentityStore::open(dir.path()).unwrap();
        assert_eq!(store.allocate("a").unwrap(), id(1, 5));
        assert_eq!(store.allocate("b").unwrap(), id(8, 0));
        assert_eq!(store.allocate_id().unwrap(), 9);
        assert!(!store.respect_seen(&BTreeMap::new()).unwrap());
    }

    #[test]
    fn exhausted_epoch_moves_the_name_to_a_new_id() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(IDENTITY_FILE),
            format!(
                r#"{{"version":1,"next_producer_id":2,"producers":{{"a":{{"producer_id":1,"epoch":{}}}}}}}"#,
                i32::MAX
            ),
        )
        .unwrap();
        let mut store = ProducerIdentityStore::open(dir.path()).unwrap();
        assert_eq!(store.allocate("a").unwrap(), id(2, 0));
    }

    #[test]
    fn unparsable_or_inconsistent_identity_store_is_storage_error() {
        let dir = tempfile::tempdir().unwrap();
        for bad in [
            "{",
            "[]",
            r#"{"version":2,"next_producer_id":1,"producers":{}}"#,
            r#"{"version":1,"next_producer_id":0,"producers":{}}"#,
            r#"{"version":1,"next_producer_id":2,"producers":{"a":{"producer_id":2,"epoch":0}}}"#,
            r#"{"version":1,"next_producer_id":3,"producers":{"a":{"producer_id":1,"epoch":0},"b":{"producer_id":1,"epoch":0}}}"#,
            r#"{"version":1,"next_producer_id":3,"producers":{"a":{"producer_id":1,"epoch":-1}}}"#,
            r#"{"version":1,"next_producer_id":3,"producers":{},"extra":1}"#,
        ] {
            std::fs::write(dir.path().join(IDENTITY_FILE), bad).unwrap();
            let err = ProducerIdentityStore::open(dir.path()).unwrap_err();
            assert_eq!(err.code(), ErrorCode::StorageError, "{bad}");
            assert!(err.is_storage_failure());
            assert_eq!(
                std::fs::read_to_string(dir.path().join(IDENTITY_FILE)).unwrap(),
                bad,
                "a bad store is left untouched"
            );
        }
    }
}
