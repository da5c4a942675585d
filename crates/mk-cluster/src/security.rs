//! The security role, `cluster.security()`: the one place every adapter
//! asks "may this principal do that?" (Kafka's StandardAuthorizer semantics
//! from mk-auth over the persisted ACLs; everything is allowed while the
//! authorizer is off, today's behaviour), the ACLs themselves
//! (Create/Describe/DeleteAcls), and the SCRAM credentials
//! (Describe/AlterUserScramCredentials, `mk-server user`), persisted in
//! `security_store.rs`. It also hands out what SASL exchanges need from the
//! outside world: fresh nonces and salts, and the broker's decoy secret.

use crate::cluster::BrokerCluster;
use crate::error::{ClusterError, Result};
use crate::security_store::{SecurityData, SecurityStore};
use base64::Engine;
use mk_auth::{
    AclBinding, AclBindingFilter, Action, AuthError, AuthorizerConfig, Operation, Principal,
    ResourceType, ScramCredential, ScramMechanism,
};
use rand::RngCore;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::RwLock;

/// Who sent a request: the authenticated principal and the client's
/// address (ACL hosts match it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub principal: Principal,
    pub host: Option<IpAddr>,
}

impl Identity {
    /// `User:ANONYMOUS` from `host`.
    pub fn anonymous(host: Option<IpAddr>) -> Identity {
        Identity {
            principal: Principal::anonymous(),
            host,
        }
    }
}

/// The shared state behind the role.
#[derive(Debug)]
pub(crate) struct SecurityState {
    store: RwLock<SecurityStore>,
    /// Derives unknown users' decoy SCRAM credentials; fresh per open.
    decoy_secret: [u8; 32],
}

impl SecurityState {
    pub fn new(store: SecurityStore) -> SecurityState {
        let mut decoy_secret = [0; 32];
        rand::rngs::OsRng.fill_bytes(&mut decoy_secret);
        SecurityState {
            store: RwLock::new(store),
            decoy_secret,
        }
    }
}

/// One SCRAM credential to remove (AlterUserScramCredentials).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramDeletion {
    pub user: String,
    /// Kafka's mechanism code (1 = SHA-256, 2 = SHA-512).
    pub mechanism: i8,
}

/// One SCRAM credential to set, as the client computed it.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramUpsertion {
    pub user: String,
    pub mechanism: i8,
    pub iterations: i32,
    pub salt: Vec<u8>,
    pub salted_password: Vec<u8>,
}

impl std::fmt::Debug for ScramUpsertion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramUpsertion")
            .field("user", &self.user)
            .field("mechanism", &self.mechanism)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

/// The iteration count of a credential set from a password when none is
/// given: Kafka's (`kafka-configs.sh` uses the same default).
pub const DEFAULT_SCRAM_ITERATIONS: u32 = 4096;

/// The answer of a change that named one user.
fn only_answer(answers: Vec<(String, std::result::Result<(), ClusterError>)>) -> Result<()> {
    answers.into_iter().try_for_each(|(_, answer)| answer)
}

/// The mechanisms and iteration counts a user has credentials for.
pub type ScramUserInfo = Vec<(ScramMechanism, u32)>;

/// The security role (see the module documentation).
#[derive(Debug, Clone, Copy)]
pub struct Security<'a> {
    pub(crate) cluster: &'a BrokerCluster,
}

impl BrokerCluster {
    /// The security role (see [`Security`]).
    pub fn security(&self) -> Security<'_> {
        Security { cluster: self }
    }
}

impl<'a> Security<'a> {
    fn config(self) -> Option<&'a AuthorizerConfig> {
        self.cluster.config.authorizer.as_ref()
    }

    fn read(self) -> std::sync::RwLockReadGuard<'a, SecurityStore> {
        // Changes are saved first and only then replace what the store
        // holds (`change` below), so poison cannot have broken it.
        crate::locks::plain_read(&self.cluster.security.store)
    }

    /// Whether the ACL authorizer is on (`--authorizer acl`).
    pub fn authorizer_enabled(self) -> bool {
        self.config().is_some()
    }

    /// May `who` do `operation` on the resource? Always yes while the
    /// authorizer is off.
    pub fn authorize(
        self,
        who: &Identity,
        operation: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        let Some(config) = self.config() else {
            return true;
        };
        let action = Action {
            operation,
            resource_type,
            name,
        };
        let allowed = self
            .read()
            .data
            .acls
            .authorize(config, &who.principal, who.host, action)
            .allowed();
        if !allowed {
            tracing::debug!(principal = %who.principal, host = ?who.host, operation = operation.name(),
                resource_type = resource_type.name(), name, "denied");
        }
        allowed
    }

    /// May `who` do `operation` on the cluster resource?
    pub fn authorize_cluster(self, who: &Identity, operation: Operation) -> bool {
        self.authorize(who, operation, ResourceType::Cluster, mk_auth::CLUSTER_NAME)
    }

    /// May `who` do `operation` on at least one resource of the type
    /// (Kafka's `authorizeByResourceType`)?
    pub fn authorize_by_resource_type(
        self,
        who: &Identity,
        operation: Operation,
        resource_type: ResourceType,
    ) -> bool {
        let Some(config) = self.config() else {
            return true;
        };
        self.read()
            .data
            .acls
            .authorize_by_resource_type(config, &who.principal, who.host, operation, resource_type)
            .allowed()
    }

    /// KIP-430's authorized operations of a resource for `who` (every
    /// operation of the type while the authorizer is off).
    pub fn authorized_operations(
        self,
        who: &Identity,
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        match self.config() {
            None => Operation::supported_by(resource_type)
                .iter()
                .fold(0, |bits, op| bits | (1 << op.code())),
            Some(config) => self.read().data.acls.authorized_operations(
                config,
                &who.principal,
                who.host,
                resource_type,
                name,
            ),
        }
    }

    /// Adds ACLs (CreateAcls): each is validated on its own; the valid
    /// ones are persisted in one atomic write. The outer error is a
    /// storage failure (nothing was added).
    pub fn create_acls(
        self,
        acls: Vec<AclBinding>,
    ) -> Result<Vec<std::result::Result<(), AuthError>>> {
        self.update(|data| {
            acls.into_iter()
                .map(|acl| data.acls.add(acl))
                .collect::<Vec<_>>()
        })
    }

    /// The ACLs a filter matches (DescribeAcls).
    pub fn describe_acls(self, filter: &AclBindingFilter) -> Vec<AclBinding> {
        self.read().data.acls.matching(filter).cloned().collect()
    }

    /// Removes the ACLs each filter matches, in one atomic write
    /// (DeleteAcls); returns what each filter removed.
    pub fn delete_acls(self, filters: &[AclBindingFilter]) -> Result<Vec<Vec<AclBinding>>> {
        self.update(|data| {
            filters
                .iter()
                .map(|f| data.acls.remove_matching(f))
                .collect::<Vec<_>>()
        })
    }

    /// The stored credential of a user for a mechanism.
    pub fn scram_credential(
        self,
        user: &str,
        mechanism: ScramMechanism,
    ) -> Option<ScramCredential> {
        self.read()
            .data
            .scram
            .get(&(user.to_string(), mechanism))
            .cloned()
    }

    /// Kafka's DescribeUserScramCredentials: every user with credentials
    /// (`None`), or the named ones — RESOURCE_NOT_FOUND for a user without
    /// any, DUPLICATE_RESOURCE for a name asked twice.
    pub fn describe_scram(
        self,
        users: Option<&[String]>,
    ) -> Vec<(String, std::result::Result<ScramUserInfo, ClusterError>)> {
        let store = self.read();
        let mut all: BTreeMap<&str, ScramUserInfo> = BTreeMap::new();
        for ((user, mechanism), c) in &store.data.scram {
            all.entry(user)
                .or_default()
                .push((*mechanism, c.iterations));
        }
        let Some(users) = users else {
            return all
                .into_iter()
                .map(|(u, info)| (u.to_string(), Ok(info)))
                .collect();
        };
        users
            .iter()
            .map(|u| {
                let answer = if users.iter().filter(|x| *x == u).count() > 1 {
                    Err(ClusterError::DuplicateResource(format!(
                        "user {u:?} is named more than once"
                    )))
                } else {
                    all.get(u.as_str()).cloned().ok_or_else(|| {
                        ClusterError::ResourceNotFound(format!(
                            "attempt to describe a user credential that does not exist: {u:?}"
                        ))
                    })
                };
                (u.clone(), answer)
            })
            .collect()
    }

    /// Kafka's AlterUserScramCredentials: per user, either all of its
    /// changes apply or none (the first refusal is its answer); all
    /// accepted changes are persisted in one atomic write. The outer error
    /// is a storage failure (nothing changed).
    pub fn alter_scram(
        self,
        deletions: &[ScramDeletion],
        upsertions: &[ScramUpsertion],
    ) -> Result<Vec<(String, std::result::Result<(), ClusterError>)>> {
        self.update(|data| crate::security_scram::alter(data, deletions, upsertions))
    }

    /// Sets `user`'s credential for `mechanism` from a password (JSON-TCP's
    /// `upsert_scram_credential`, `mk-server user add`): a fresh random
    /// salt, PBKDF2 here in the core, then AlterUserScramCredentials' own
    /// rules. The password is used once; it is neither stored nor logged.
    /// Returns the iteration count stored.
    pub fn upsert_scram_password(
        self,
        user: &str,
        mechanism: ScramMechanism,
        password: &str,
        iterations: Option<u32>,
    ) -> Result<u32> {
        let iterations = iterations.unwrap_or(DEFAULT_SCRAM_ITERATIONS);
        let salt = self.new_salt();
        // Bounds first: PBKDF2 must not run an oversized iteration count.
        mk_auth::scram::check_bounds(&salt, iterations)?;
        if password.is_empty() {
            return Err(AuthError::UnacceptableCredential("the password is empty".into()).into());
        }
        let upsertion = ScramUpsertion {
            user: user.to_string(),
            mechanism: mechanism.code(),
            // Within MAX_ITERATIONS, checked above.
            iterations: i32::try_from(iterations).unwrap_or(i32::MAX),
            salted_password: mechanism.salted_password(password.as_bytes(), &salt, iterations),
            salt,
        };
        self.try_update(|data| only_answer(crate::security_scram::alter(data, &[], &[upsertion])))?;
        Ok(iterations)
    }

    /// Removes `user`'s credential for `mechanism`, or every credential
    /// of the user (JSON-TCP's `delete_scram_credential`, `mk-server user
    /// delete`), with AlterUserScramCredentials' rules: RESOURCE_NOT_FOUND
    /// when there is nothing to delete. Returns the mechanisms removed.
    pub fn delete_scram_credentials(
        self,
        user: &str,
        mechanism: Option<ScramMechanism>,
    ) -> Result<Vec<ScramMechanism>> {
        self.try_update(|data| {
            let mechanisms: Vec<ScramMechanism> = match mechanism {
                Some(m) => vec![m],
                None => data
                    .scram
                    .keys()
                    .filter(|(u, _)| u == user)
                    .map(|(_, m)| *m)
                    .collect(),
            };
            if mechanisms.is_empty() {
                return Err(ClusterError::ResourceNotFound(format!(
                    "attempt to delete a user credential that does not exist: {user:?} has none"
                )));
            }
            let deletions: Vec<ScramDeletion> = mechanisms
                .iter()
                .map(|m| ScramDeletion {
                    user: user.to_string(),
                    mechanism: m.code(),
                })
                .collect();
            only_answer(crate::security_scram::alter(data, &deletions, &[]))?;
            Ok(mechanisms)
        })
    }

    /// A fresh server nonce for a SCRAM exchange (24 random bytes, base64:
    /// printable and without commas).
    pub fn new_nonce(self) -> String {
        let mut bytes = [0; 24];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// A fresh random salt for a new credential.
    pub fn new_salt(self) -> Vec<u8> {
        let mut bytes = vec![0; 24];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        bytes
    }

    /// The secret unknown users' decoy SCRAM credentials derive from.
    pub fn decoy_secret(self) -> &'a [u8] {
        &self.cluster.security.decoy_secret
    }

    /// Like `update`, for a change that may be refused as a whole: a
    /// refused change leaves the store as it was and writes nothing.
    fn try_update<T>(self, change: impl FnOnce(&mut SecurityData) -> Result<T>) -> Result<T> {
        self.cluster.check_running()?;
        let mut store = crate::locks::plain_write(&self.cluster.security.store);
        let mut data = store.data.clone();
        let out = change(&mut data)?;
        self.cluster.guard(store.save(data))?;
        Ok(out)
    }

    /// Applies `change` to a copy of the data and persists it; the copy
    /// replaces the live data only once it is on disk.
    fn update<T>(self, change: impl FnOnce(&mut SecurityData) -> T) -> Result<T> {
        self.try_update(|data| Ok(change(data)))
    }
}
