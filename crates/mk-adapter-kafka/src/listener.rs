//! Kafka's listener syntax (`PROTOCOL://HOST:PORT`, several comma
//! separated; a bare `HOST:PORT` is PLAINTEXT) and the security protocols a
//! listener speaks: whether a connection starts with a TLS handshake and
//! whether it must authenticate with SASL before anything else.

use std::fmt;
use std::net::SocketAddr;

/// Kafka's `SecurityProtocol` (the names and ids are Kafka's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    /// Every protocol, in Kafka's id order.
    pub const ALL: [SecurityProtocol; 4] = [
        SecurityProtocol::Plaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::SaslSsl,
    ];

    /// Kafka's name, as in listener URLs.
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// Kafka's id (DescribeCluster and UpdateMetadata carry it).
    pub fn id(self) -> i16 {
        match self {
            SecurityProtocol::Plaintext => 0,
            SecurityProtocol::Ssl => 1,
            SecurityProtocol::SaslPlaintext => 2,
            SecurityProtocol::SaslSsl => 3,
        }
    }

    /// Whether connections start with a TLS handshake.
    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// Whether clients must authenticate with SASL first.
    pub fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }

    fn parse(name: &str) -> Option<SecurityProtocol> {
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One listener of `--kafka-listen`: a protocol and the address of the
/// first hosted broker (the others get the next ports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenerSpec {
    pub protocol: SecurityProtocol,
    pub addr: SocketAddr,
}

impl fmt::Display for ListenerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.protocol, self.addr)
    }
}

/// Parses `--kafka-listen`: listeners comma separated, each
/// `PROTOCOL://IP:PORT` or a bare `IP:PORT` (PLAINTEXT). Two listeners may
/// not share a protocol (Metadata advertises one address per protocol) nor
/// an address.
pub fn parse_listeners(s: &str) -> Result<Vec<ListenerSpec>, String> {
    let mut out: Vec<ListenerSpec> = Vec::new();
    for part in s.split(',').map(str::trim) {
        let (protocol, addr) = match part.split_once("://") {
            Some((p, a)) => (
                SecurityProtocol::parse(p).ok_or_else(|| {
                    format!(
                        "unknown security protocol {p:?} in {part:?} \
                         (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)"
                    )
                })?,
                a,
            ),
            None => (SecurityProtocol::Plaintext, part),
        };
        let addr: SocketAddr = addr
            .parse()
            .map_err(|e| format!("{part:?} is not PROTOCOL://IP:PORT: {e}"))?;
        if let Some(other) = out
            .iter()
            .find(|o| o.protocol == protocol || (o.addr == addr && addr.port() != 0))
        {
            return Err(format!(
                "listeners {other} and {part} collide: one listener per protocol, \
                 each on its own port"
            ));
        }
        out.push(ListenerSpec { protocol, addr });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listener_urls_parse_with_bare_addresses_as_plaintext() {
        let l = parse_listeners("127.0.0.1:9092, sasl_ssl://127.0.0.1:9094,SSL://[::1]:0").unwrap();
        let protocols: Vec<_> = l.iter().map(|l| l.protocol).collect();
        assert_eq!(
            protocols,
            [
                SecurityProtocol::Plaintext,
                SecurityProtocol::SaslSsl,
                SecurityProtocol::Ssl
            ]
        );
        assert_eq!(l[1].addr.port(), 9094);
        assert_eq!(l[1].to_string(), "SASL_SSL://127.0.0.1:9094");
        assert!(l[1].protocol.uses_tls() && l[1].protocol.uses_sasl());
        assert!(!l[0].protocol.uses_tls() && !l[0].protocol.uses_sasl());
        for bad in [
            "GSSAPI://127.0.0.1:1",
            "SSL://localhost",
            "",
            "SSL://127.0.0.1:1,SSL://127.0.0.1:2",
            "PLAINTEXT://127.0.0.1:1,SSL://127.0.0.1:1",
        ] {
            assert!(parse_listeners(bad).is_err(), "{bad:?}");
        }
    }
}
