//! `AuthError`: every way authentication or an ACL change can fail, each
//! with one stable code (the Kafka adapter maps it to Kafka's number).

use mk_core::ErrorCode;

/// A security error. Messages never carry a password, a key or a nonce,
/// and a failed login never says whether the user exists.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// Wrong password, unknown user, or a proof that does not verify: the
    /// same answer for all of them.
    #[error("Authentication failed: invalid username or password (SASL mechanism {mechanism})")]
    AuthenticationFailed { mechanism: &'static str },
    /// A SASL message that does not follow its mechanism's grammar.
    #[error("Authentication failed: malformed {mechanism} message: {reason}")]
    Malformed {
        mechanism: &'static str,
        reason: &'static str,
    },
    /// A SASL message after the exchange ended, or out of order.
    #[error("illegal SASL state: {0}")]
    IllegalSaslState(&'static str),
    /// A mechanism this broker does not offer.
    #[error("unsupported SASL mechanism {0:?}")]
    UnsupportedMechanism(String),
    /// A SCRAM credential outside the accepted bounds.
    #[error("unacceptable credential: {0}")]
    UnacceptableCredential(String),
    /// An ACL binding or filter that Kafka refuses.
    #[error("invalid ACL: {0}")]
    InvalidAcl(String),
    /// A principal that is not `Type:name`.
    #[error("invalid principal {0:?}: expected Type:name, e.g. User:alice")]
    InvalidPrincipal(String),
    /// A client certificate whose subject cannot be read.
    #[error("invalid client certificate: {0}")]
    InvalidCertificate(String),
    /// A PLAIN users file that cannot be read as `user:password` lines.
    #[error("invalid PLAIN users file, line {line}: {reason}")]
    InvalidUsersFile { line: usize, reason: &'static str },
}

impl AuthError {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            AuthError::AuthenticationFailed { .. } | AuthError::Malformed { .. } => {
                ErrorCode::SaslAuthenticationFailed
            }
            AuthError::IllegalSaslState(_) => ErrorCode::IllegalSaslState,
            AuthError::UnsupportedMechanism(_) => ErrorCode::UnsupportedSaslMechanism,
            AuthError::UnacceptableCredential(_) => ErrorCode::UnacceptableCredential,
            AuthError::InvalidAcl(_)
            | AuthError::InvalidPrincipal(_)
            | AuthError::InvalidCertificate(_)
            | AuthError::InvalidUsersFile { .. } => ErrorCode::InvalidRequest,
        }
    }
}
