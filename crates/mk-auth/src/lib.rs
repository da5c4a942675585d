//! The security core (spec 09): who a client is (`principal`), what it may
//! do (`acl`: Kafka's ACL model and StandardAuthorizer's decision), and how
//! it proves who it is (`plain` and `scram`: the SASL mechanisms, as
//! server-side state machines).
//!
//! Sans-IO like every crate below mk-cluster: no sockets, files, clocks or
//! randomness of its own. The caller hands in what would be I/O (the ACLs,
//! a stored credential, a fresh nonce) and gets decisions and bytes back,
//! so every rule is a plain, exact test. The cryptography is RustCrypto's
//! (hmac, sha2, pbkdf2, subtle); nothing here implements a primitive.

pub mod acl;
mod error;
pub mod plain;
pub mod principal;
pub mod sasl;
pub mod scram;

pub use acl::{
    AccessControlEntry, AclBinding, AclBindingFilter, AclSet, Action, AuthorizerConfig,
    CLUSTER_NAME, Decision, Operation, PatternType, Permission, ResourcePattern, ResourceType,
};
pub use error::AuthError;
pub use plain::PlainUsers;
pub use principal::{Principal, ssl_principal};
pub use sasl::{SaslMechanism, parse_mechanisms};
pub use scram::{ScramCredential, ScramMechanism, ScramServer};
