//! The SASL mechanisms a listener offers (`--sasl-mechanisms`).

use crate::error::AuthError;
use crate::scram::ScramMechanism;

/// A SASL mechanism this broker implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SaslMechanism {
    Plain,
    Scram(ScramMechanism),
}

impl SaslMechanism {
    /// Every mechanism, in the order SaslHandshake lists them.
    pub const ALL: [SaslMechanism; 3] = [
        SaslMechanism::Plain,
        SaslMechanism::Scram(ScramMechanism::Sha256),
        SaslMechanism::Scram(ScramMechanism::Sha512),
    ];

    /// The IANA name clients send.
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::Scram(m) => m.name(),
        }
    }

    /// The mechanism of a name (exact, as Kafka compares them).
    pub fn parse(name: &str) -> Option<SaslMechanism> {
        SaslMechanism::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// Parses `--sasl-mechanisms`: comma-separated names, at least one.
pub fn parse_mechanisms(s: &str) -> Result<Vec<SaslMechanism>, AuthError> {
    let mut out = Vec::new();
    for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let m = SaslMechanism::parse(name)
            .ok_or_else(|| AuthError::UnsupportedMechanism(name.to_string()))?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    if out.is_empty() {
        return Err(AuthError::UnsupportedMechanism(s.to_string()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mechanism_lists_parse_and_refuse_unknown_names() {
        assert_eq!(
            parse_mechanisms("PLAIN, SCRAM-SHA-512,PLAIN").unwrap(),
            vec![
                SaslMechanism::Plain,
                SaslMechanism::Scram(ScramMechanism::Sha512)
            ]
        );
        assert!(parse_mechanisms("GSSAPI").is_err());
        assert!(parse_mechanisms("").is_err());
        assert!(parse_mechanisms("plain").is_err());
    }
}
