//! Kafka's default SSL principal: `User:` + the certificate's subject DN
//! in RFC 2253 form, most significant RDN last.

use mk_auth::ssl_principal;
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};

#[test]
fn the_subject_dn_prints_as_java_prints_it() {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    // rcgen starts with a CN of its own; the subject is built in DER order.
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CountryName, "US");
    params
        .distinguished_name
        .push(DnType::OrganizationName, "Acme, Inc.");
    params
        .distinguished_name
        .push(DnType::OrganizationalUnitName, "eng");
    params.distinguished_name.push(DnType::CommonName, "client");
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let p = ssl_principal(cert.der()).unwrap();
    assert_eq!(p.to_string(), "User:CN=client,OU=eng,O=Acme\\, Inc.,C=US");
}

#[test]
fn garbage_is_not_a_certificate() {
    assert!(ssl_principal(b"not a certificate").is_err());
}
