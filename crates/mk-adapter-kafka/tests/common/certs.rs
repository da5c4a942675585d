//! Test certificates (rcgen): a CA, a server certificate for 127.0.0.1 and
//! localhost, and client certificates, written as PEM files, plus rustls
//! client configurations and a TLS connect that trust the CA.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

pub struct Pki {
    ca: rcgen::Certificate,
    ca_key: KeyPair,
    pub files: mk_adapter_kafka::TlsFiles,
}

pub struct ClientCert {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

fn leaf(
    dn: &[(DnType, &str)],
    names: Vec<String>,
    usage: ExtendedKeyUsagePurpose,
) -> CertificateParams {
    let mut params = CertificateParams::new(names).unwrap();
    params.distinguished_name = DistinguishedName::new();
    for (t, v) in dn {
        params.distinguished_name.push(t.clone(), *v);
    }
    params.extended_key_usages = vec![usage];
    params
}

impl Pki {
    /// A CA and a server certificate, written under `dir`; clients must
    /// present a certificate when `require_client_cert`.
    pub fn new(dir: &Path, require_client_cert: bool) -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name = DistinguishedName::new();
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "mk test CA");
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let server_key = KeyPair::generate().unwrap();
        let server = leaf(
            &[(DnType::CommonName, "broker")],
            vec!["localhost".into(), "127.0.0.1".into()],
            ExtendedKeyUsagePurpose::ServerAuth,
        )
        .signed_by(&server_key, &ca, &ca_key)
        .unwrap();
        let write = |name: &str, text: String| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let files = mk_adapter_kafka::TlsFiles {
            cert: write("server.pem", server.pem()),
            key: write("server.key", server_key.serialize_pem()),
            client_ca: require_client_cert.then(|| write("ca.pem", ca.pem())),
        };
        Pki { ca, ca_key, files }
    }

    /// A client certificate the CA signed, with subject `dn`.
    pub fn client(&self, dn: &[(DnType, &str)]) -> ClientCert {
        let key = KeyPair::generate().unwrap();
        let cert = leaf(dn, Vec::new(), ExtendedKeyUsagePurpose::ClientAuth)
            .signed_by(&key, &self.ca, &self.ca_key)
            .unwrap();
        ClientCert {
            chain: vec![cert.der().clone()],
            key: PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
        }
    }

    /// A client configuration trusting the CA, at the given TLS versions.
    pub fn client_config(
        &self,
        versions: &[&'static rustls::SupportedProtocolVersion],
        cert: Option<ClientCert>,
    ) -> Arc<rustls::ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca.der().clone()).unwrap();
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots);
        Arc::new(match cert {
            None => builder.with_no_client_auth(),
            Some(c) => builder.with_client_auth_cert(c.chain, c.key).unwrap(),
        })
    }
}

/// Connects to `addr` and completes a TLS handshake as `config`.
pub async fn tls_connect(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name = ServerName::IpAddress(addr.ip().into());
    tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
}
