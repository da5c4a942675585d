//! The authorizer's rules, each as Kafka's StandardAuthorizer states it:
//! literal, wildcard and prefixed patterns, DENY over ALLOW, implied
//! DESCRIBE and DESCRIBE_CONFIGS (for ALLOW only), principals and hosts,
//! super users, the no-ACL default, by-resource-type checks, filters and
//! validation.

use mk_auth::{
    AccessControlEntry, AclBinding, AclBindingFilter, AclSet, Action, AuthorizerConfig, Decision,
    Operation, PatternType, Permission, Principal, ResourcePattern, ResourceType,
};
use std::net::IpAddr;

fn acl(
    rt: ResourceType,
    name: &str,
    pt: PatternType,
    principal: &str,
    op: Operation,
    perm: Permission,
) -> AclBinding {
    AclBinding {
        pattern: ResourcePattern {
            resource_type: rt,
            name: name.into(),
            pattern_type: pt,
        },
        entry: AccessControlEntry {
            principal: principal.into(),
            host: "*".into(),
            operation: op,
            permission: perm,
        },
    }
}

fn allow(rt: ResourceType, name: &str, pt: PatternType, op: Operation) -> AclBinding {
    acl(rt, name, pt, "User:alice", op, Permission::Allow)
}

fn set(acls: Vec<AclBinding>) -> AclSet {
    AclSet::from_bindings(acls).unwrap()
}

fn may(s: &AclSet, who: &str, op: Operation, rt: ResourceType, name: &str) -> bool {
    may_with(s, &AuthorizerConfig::default(), who, op, rt, name)
}

fn may_with(
    s: &AclSet,
    config: &AuthorizerConfig,
    who: &str,
    op: Operation,
    rt: ResourceType,
    name: &str,
) -> bool {
    let p = Principal::parse(who).unwrap();
    let host: IpAddr = "10.0.0.1".parse().unwrap();
    let action = Action {
        operation: op,
        resource_type: rt,
        name,
    };
    s.authorize(config, &p, Some(host), action) == Decision::Allowed
}

use Operation::*;
use PatternType::{Literal, Prefixed};
use ResourceType::{Cluster, Group, Topic, TransactionalId};

#[test]
fn literal_acls_allow_their_resource_and_operation_only() {
    let s = set(vec![allow(Topic, "orders", Literal, Read)]);
    assert!(may(&s, "User:alice", Read, Topic, "orders"));
    assert!(!may(&s, "User:alice", Write, Topic, "orders"));
    assert!(!may(&s, "User:alice", Read, Topic, "orders2"));
    assert!(!may(&s, "User:alice", Read, Group, "orders"));
    assert!(!may(&s, "User:bob", Read, Topic, "orders"));
}

#[test]
fn prefixed_and_wildcard_patterns_cover_names() {
    let s = set(vec![
        allow(Topic, "logs-", Prefixed, Write),
        allow(Group, "*", Literal, Read),
    ]);
    assert!(may(&s, "User:alice", Write, Topic, "logs-a"));
    assert!(may(&s, "User:alice", Write, Topic, "logs-"));
    assert!(!may(&s, "User:alice", Write, Topic, "log"));
    assert!(may(&s, "User:alice", Read, Group, "anything"));
    // A prefixed "*" is a prefix, not a wildcard.
    let s = set(vec![allow(Topic, "*", Prefixed, Read)]);
    assert!(!may(&s, "User:alice", Read, Topic, "orders"));
    assert!(may(&s, "User:alice", Read, Topic, "*x"));
}

#[test]
fn deny_wins_over_allow() {
    let s = set(vec![
        allow(Topic, "*", Literal, All),
        acl(
            Topic,
            "secret-",
            Prefixed,
            "User:alice",
            Read,
            Permission::Deny,
        ),
    ]);
    assert!(!may(&s, "User:alice", Read, Topic, "secret-1"));
    assert!(may(&s, "User:alice", Write, Topic, "secret-1"));
    assert!(may(&s, "User:alice", Read, Topic, "public"));
    // A wildcard-principal DENY applies to everyone.
    let s = set(vec![
        allow(Topic, "t", Literal, Write),
        acl(Topic, "t", Literal, "User:*", All, Permission::Deny),
    ]);
    assert!(!may(&s, "User:alice", Write, Topic, "t"));
}

#[test]
fn allow_implies_describe_but_deny_does_not() {
    for op in [Read, Write, Delete, Alter] {
        let s = set(vec![allow(Topic, "t", Literal, op)]);
        assert!(may(&s, "User:alice", Describe, Topic, "t"), "{op:?}");
    }
    for op in [Create, AlterConfigs, DescribeConfigs] {
        let s = set(vec![allow(Topic, "t", Literal, op)]);
        assert!(!may(&s, "User:alice", Describe, Topic, "t"), "{op:?}");
    }
    let s = set(vec![allow(Topic, "t", Literal, AlterConfigs)]);
    assert!(may(&s, "User:alice", DescribeConfigs, Topic, "t"));
    // DENY READ does not deny DESCRIBE.
    let s = set(vec![
        allow(Topic, "t", Literal, Describe),
        acl(Topic, "t", Literal, "User:alice", Read, Permission::Deny),
    ]);
    assert!(may(&s, "User:alice", Describe, Topic, "t"));
    assert!(!may(&s, "User:alice", Read, Topic, "t"));
}

#[test]
fn hosts_match_exactly_or_by_wildcard() {
    let mut a = allow(Topic, "t", Literal, Read);
    a.entry.host = "10.0.0.1".into();
    let mut b = allow(Topic, "u", Literal, Read);
    b.entry.host = "10.0.0.2".into();
    let s = set(vec![a, b]);
    assert!(may(&s, "User:alice", Read, Topic, "t"));
    assert!(!may(&s, "User:alice", Read, Topic, "u"));
    // IPv6 written two ways is one address.
    let mut c = allow(Topic, "v", Literal, Read);
    c.entry.host = "0:0:0:0:0:0:0:1".into();
    let s = set(vec![c]);
    let p = Principal::user("alice");
    let action = Action {
        operation: Read,
        resource_type: Topic,
        name: "v",
    };
    let cfg = AuthorizerConfig::default();
    assert!(s.authorize(&cfg, &p, "::1".parse().ok(), action).allowed());
    assert!(!s.authorize(&cfg, &p, None, action).allowed());
}

#[test]
fn super_users_and_the_no_acl_default() {
    let s = set(vec![acl(
        Topic,
        "*",
        Literal,
        "User:*",
        All,
        Permission::Deny,
    )]);
    let cfg = AuthorizerConfig {
        super_users: AuthorizerConfig::parse_super_users("User:admin; User:ops").unwrap(),
        allow_everyone_if_no_acl_found: false,
    };
    assert!(may_with(&s, &cfg, "User:admin", Delete, Topic, "x"));
    assert!(!may_with(&s, &cfg, "User:alice", Read, Topic, "x"));
    // Nothing names the group: denied by default, allowed when configured.
    assert!(!may_with(&s, &cfg, "User:alice", Read, Group, "g"));
    let open = AuthorizerConfig {
        allow_everyone_if_no_acl_found: true,
        ..cfg.clone()
    };
    assert!(may_with(&s, &open, "User:alice", Read, Group, "g"));
    // ... but not when some ACL names the resource (even for someone else).
    let s = set(vec![acl(
        Group,
        "g",
        Literal,
        "User:bob",
        Read,
        Permission::Allow,
    )]);
    assert!(!may_with(&s, &open, "User:alice", Read, Group, "g"));
    assert!(AuthorizerConfig::parse_super_users("admin").is_err());
}

#[test]
fn by_resource_type_needs_one_undenied_allow() {
    let cfg = AuthorizerConfig::default();
    let p = Principal::user("alice");
    let check = |s: &AclSet| {
        s.authorize_by_resource_type(&cfg, &p, None, Write, Topic)
            .allowed()
    };
    assert!(!check(&set(vec![])));
    assert!(check(&set(vec![allow(Topic, "t", Literal, Write)])));
    assert!(!check(&set(vec![
        allow(Topic, "t", Literal, Write),
        acl(Topic, "t", Literal, "User:alice", Write, Permission::Deny),
    ])));
    assert!(!check(&set(vec![
        allow(Topic, "abc", Prefixed, Write),
        acl(Topic, "ab", Prefixed, "User:alice", Write, Permission::Deny),
    ])));
    assert!(check(&set(vec![
        allow(Topic, "ab", Prefixed, Write),
        acl(
            Topic,
            "abc",
            Prefixed,
            "User:alice",
            Write,
            Permission::Deny
        ),
    ])));
    assert!(!check(&set(vec![
        allow(Topic, "t", Literal, Write),
        acl(Topic, "*", Literal, "User:alice", Write, Permission::Deny),
    ])));
}

#[test]
fn filters_select_as_kafka_filters_do() {
    let s = set(vec![
        allow(Topic, "orders", Literal, Read),
        allow(Topic, "ord", Prefixed, Write),
        allow(Topic, "*", Literal, Describe),
        allow(Group, "g", Literal, Read),
    ]);
    let count = |f: &AclBindingFilter| s.matching(f).count();
    assert_eq!(count(&AclBindingFilter::any()), 4);
    let topics = AclBindingFilter {
        resource_type: Topic,
        ..AclBindingFilter::any()
    };
    assert_eq!(count(&topics), 3);
    let matching = AclBindingFilter {
        name: Some("orders".into()),
        pattern_type: PatternType::Match,
        ..topics.clone()
    };
    assert_eq!(count(&matching), 3);
    let exact = AclBindingFilter {
        name: Some("orders".into()),
        ..topics.clone()
    };
    assert_eq!(count(&exact), 1);
    let prefixed = AclBindingFilter {
        pattern_type: Prefixed,
        ..topics
    };
    assert_eq!(count(&prefixed), 1);
    let mut s = s;
    let gone = s.remove_matching(&AclBindingFilter {
        operation: Read,
        ..AclBindingFilter::any()
    });
    assert_eq!(gone.len(), 2);
    assert_eq!(s.len(), 2);
}

#[test]
fn invalid_acls_are_refused() {
    let ok = allow(Topic, "t", Literal, Read);
    assert!(ok.validate().is_ok());
    // Each way to spoil a valid binding, one field at a time.
    let spoilers: [fn(&mut AclBinding); 7] = [
        |a| a.pattern.resource_type = ResourceType::Any,
        |a| a.pattern.pattern_type = PatternType::Match,
        |a| a.entry.operation = Operation::Any,
        |a| a.entry.permission = Permission::Any,
        |a| a.pattern.name = String::new(),
        |a| a.entry.principal = "alice".into(),
        |a| a.entry.host = "example.com".into(),
    ];
    let mut bad: Vec<AclBinding> = spoilers
        .iter()
        .map(|spoil| {
            let mut a = ok.clone();
            spoil(&mut a);
            a
        })
        .collect();
    bad.push(allow(Cluster, "other", Literal, Alter));
    for b in bad {
        assert_eq!(
            b.validate().unwrap_err().code().as_str(),
            "INVALID_REQUEST",
            "{b:?}"
        );
    }
    assert!(
        allow(Cluster, "kafka-cluster", Literal, IdempotentWrite)
            .validate()
            .is_ok()
    );
    assert!(
        allow(TransactionalId, "tx-", Prefixed, Write)
            .validate()
            .is_ok()
    );
}

#[test]
fn codes_and_names_round_trip() {
    for code in 1..=14 {
        let op = Operation::from_code(code).unwrap();
        assert_eq!(op.code(), code);
        assert_eq!(Operation::parse(op.name()), Some(op));
    }
    assert_eq!(Operation::from_code(0), None);
    assert_eq!(ResourceType::from_code(2), Some(Topic));
    assert_eq!(PatternType::parse("prefixed"), Some(Prefixed));
    assert_eq!(Permission::from_code(3), Some(Permission::Allow));
}

#[test]
fn authorized_operations_are_a_bit_field_of_codes() {
    let s = set(vec![allow(Topic, "t", Literal, Read)]);
    let bits = s.authorized_operations(
        &AuthorizerConfig::default(),
        &Principal::user("alice"),
        None,
        Topic,
        "t",
    );
    assert_eq!(bits, (1 << 3) | (1 << 8));
}
