//! Kafka's ACL model and the authorizer's decision, with the semantics of
//! Kafka's `StandardAuthorizer`: an ACL binds a resource pattern (type,
//! name, LITERAL or PREFIXED) to an entry (principal, host, operation,
//! ALLOW or DENY). A request is allowed when an ALLOW ACL matches and no
//! DENY ACL does; super users are always allowed; a resource no ACL names
//! at all is allowed only with `allow.everyone.if.no.acl.found`.
//!
//! The numeric codes are Kafka's (they travel in Create/Describe/DeleteAcls
//! and in the persisted store).

use crate::error::AuthError;
use crate::principal::Principal;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::net::IpAddr;

/// The only name of the CLUSTER resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// A LITERAL pattern with this name matches every resource of its type,
/// and an entry with this host matches every host.
pub const WILDCARD: &str = "*";
/// An entry with this principal matches every user.
pub const WILDCARD_PRINCIPAL: &str = "User:*";

macro_rules! coded_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $code:literal, $text:literal;)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
        pub enum $name { $($variant,)* }

        impl $name {
            /// Kafka's code.
            pub fn code(self) -> i8 {
                match self { $($name::$variant => $code,)* }
            }

            /// The value of a Kafka code; `None` for UNKNOWN (0) and codes
            /// Kafka does not define.
            pub fn from_code(code: i8) -> Option<Self> {
                match code { $($code => Some($name::$variant),)* _ => None }
            }

            /// Kafka's name (`TOPIC`, `PREFIXED`, `DESCRIBE_CONFIGS`, ...).
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text,)* }
            }

            /// Parses Kafka's name, case-insensitively.
            pub fn parse(s: &str) -> Option<Self> {
                $(if s.eq_ignore_ascii_case($text) { return Some($name::$variant); })*
                None
            }
        }
    };
}

coded_enum!(
    /// What kind of resource an ACL protects (`Any` only in filters).
    ResourceType {
        Any = 1, "ANY";
        Topic = 2, "TOPIC";
        Group = 3, "GROUP";
        Cluster = 4, "CLUSTER";
        TransactionalId = 5, "TRANSACTIONAL_ID";
        DelegationToken = 6, "DELEGATION_TOKEN";
        User = 7, "USER";
    }
);

coded_enum!(
    /// How an ACL's resource name matches (`Any` and `Match` only in
    /// filters).
    PatternType {
        Any = 1, "ANY";
        Match = 2, "MATCH";
        Literal = 3, "LITERAL";
        Prefixed = 4, "PREFIXED";
    }
);

coded_enum!(
    /// What a request does to a resource (`Any` only in filters).
    Operation {
        Any = 1, "ANY";
        All = 2, "ALL";
        Read = 3, "READ";
        Write = 4, "WRITE";
        Create = 5, "CREATE";
        Delete = 6, "DELETE";
        Alter = 7, "ALTER";
        Describe = 8, "DESCRIBE";
        ClusterAction = 9, "CLUSTER_ACTION";
        DescribeConfigs = 10, "DESCRIBE_CONFIGS";
        AlterConfigs = 11, "ALTER_CONFIGS";
        IdempotentWrite = 12, "IDEMPOTENT_WRITE";
        CreateTokens = 13, "CREATE_TOKENS";
        DescribeTokens = 14, "DESCRIBE_TOKENS";
    }
);

coded_enum!(
    /// Whether an ACL allows or denies (`Any` only in filters).
    Permission {
        Any = 1, "ANY";
        Deny = 2, "DENY";
        Allow = 3, "ALLOW";
    }
);

impl Operation {
    /// Whether an ALLOW ACL for `self` grants `wanted`: ALL grants
    /// everything, READ, WRITE, DELETE and ALTER imply DESCRIBE, and
    /// ALTER_CONFIGS implies DESCRIBE_CONFIGS. (A DENY ACL denies only its
    /// own operation, or everything for ALL.)
    pub fn allow_grants(self, wanted: Operation) -> bool {
        use Operation::*;
        self == All
            || self == wanted
            || (wanted == Describe && matches!(self, Read | Write | Delete | Alter))
            || (wanted == DescribeConfigs && self == AlterConfigs)
    }

    /// The operations Kafka reports as "authorized operations" of a
    /// resource type (KIP-430), in code order.
    pub fn supported_by(resource_type: ResourceType) -> &'static [Operation] {
        use Operation::*;
        match resource_type {
            ResourceType::Topic => &[
                Read,
                Write,
                Create,
                Delete,
                Alter,
                Describe,
                DescribeConfigs,
                AlterConfigs,
            ],
            ResourceType::Group => &[Read, Delete, Describe, DescribeConfigs, AlterConfigs],
            ResourceType::Cluster => &[
                Create,
                Alter,
                Describe,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
            ],
            ResourceType::TransactionalId => &[Write, Describe],
            ResourceType::DelegationToken => &[Describe],
            ResourceType::User => &[CreateTokens, DescribeTokens],
            ResourceType::Any => &[],
        }
    }
}

/// What an ACL protects.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ResourcePattern {
    pub resource_type: ResourceType,
    pub name: String,
    pub pattern_type: PatternType,
}

impl ResourcePattern {
    /// Whether this pattern covers the resource `name` (of its type).
    fn covers(&self, name: &str) -> bool {
        match self.pattern_type {
            PatternType::Literal => self.name == name || self.name == WILDCARD,
            PatternType::Prefixed => name.starts_with(&self.name),
            PatternType::Any | PatternType::Match => false,
        }
    }
}

/// Who may (or may not) do what from where.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AccessControlEntry {
    /// `Type:name`, or `User:*` for everyone.
    pub principal: String,
    /// An IP address, or `*` for every host.
    pub host: String,
    pub operation: Operation,
    pub permission: Permission,
}

/// One ACL.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AclBinding {
    pub pattern: ResourcePattern,
    pub entry: AccessControlEntry,
}

impl AclBinding {
    /// Kafka's checks on a new ACL (CreateAcls): definite types, a
    /// non-empty name, `kafka-cluster` for CLUSTER, a `Type:name`
    /// principal, and a host that is `*` or an IP address.
    pub fn validate(&self) -> Result<(), AuthError> {
        let invalid = |m: String| Err(AuthError::InvalidAcl(m));
        let p = &self.pattern;
        let e = &self.entry;
        if p.resource_type == ResourceType::Any {
            return invalid("invalid resource type ANY".into());
        }
        if !matches!(p.pattern_type, PatternType::Literal | PatternType::Prefixed) {
            return invalid(format!("invalid pattern type {}", p.pattern_type.name()));
        }
        if e.operation == Operation::Any {
            return invalid("invalid operation ANY".into());
        }
        if e.permission == Permission::Any {
            return invalid("invalid permission type ANY".into());
        }
        if p.name.is_empty() {
            return invalid("resource name should not be empty".into());
        }
        if p.resource_type == ResourceType::Cluster && p.name != CLUSTER_NAME {
            return invalid(format!(
                "the only valid name for the CLUSTER resource is {CLUSTER_NAME}"
            ));
        }
        Principal::parse(&e.principal)?;
        if e.host != WILDCARD && e.host.parse::<IpAddr>().is_err() {
            return invalid(format!("host {:?} is neither * nor an IP address", e.host));
        }
        Ok(())
    }

    /// Whether this ACL's entry applies to `principal` connecting from
    /// `host` (`None`: the host is unknown and only `*` matches).
    fn applies_to(&self, principal: &str, host: Option<IpAddr>) -> bool {
        let e = &self.entry;
        (e.principal == principal || e.principal == WILDCARD_PRINCIPAL)
            && (e.host == WILDCARD || host.is_some_and(|h| e.host.parse() == Ok(h)))
    }
}

/// A filter over ACLs (DescribeAcls, DeleteAcls): `None` fields and ANY
/// match everything; pattern type MATCH selects the patterns that would
/// apply to the named resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclBindingFilter {
    pub resource_type: ResourceType,
    pub name: Option<String>,
    pub pattern_type: PatternType,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: Operation,
    pub permission: Permission,
}

impl AclBindingFilter {
    /// The filter matching every ACL.
    pub fn any() -> AclBindingFilter {
        AclBindingFilter {
            resource_type: ResourceType::Any,
            name: None,
            pattern_type: PatternType::Any,
            principal: None,
            host: None,
            operation: Operation::Any,
            permission: Permission::Any,
        }
    }

    /// Whether `acl` passes this filter (Kafka's `AclBindingFilter.matches`).
    pub fn matches(&self, acl: &AclBinding) -> bool {
        self.matches_pattern(&acl.pattern) && self.matches_entry(&acl.entry)
    }

    fn matches_pattern(&self, p: &ResourcePattern) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != p.resource_type {
            return false;
        }
        let exact = self.pattern_type == PatternType::Any || self.pattern_type == p.pattern_type;
        if !exact && self.pattern_type != PatternType::Match {
            return false;
        }
        match &self.name {
            None => true,
            Some(name) if exact => *name == p.name,
            Some(name) => p.covers(name),
        }
    }

    fn matches_entry(&self, e: &AccessControlEntry) -> bool {
        self.principal.as_ref().is_none_or(|p| *p == e.principal)
            && self.host.as_ref().is_none_or(|h| *h == e.host)
            && (self.operation == Operation::Any || self.operation == e.operation)
            && (self.permission == Permission::Any || self.permission == e.permission)
    }
}

/// The authorizer's settings (`--super-users`,
/// `--allow-everyone-if-no-acl-found`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizerConfig {
    /// Principals allowed everything, as `Type:name` strings.
    pub super_users: BTreeSet<String>,
    /// Allow a request on a resource that no ACL names at all.
    pub allow_everyone_if_no_acl_found: bool,
}

impl AuthorizerConfig {
    /// Parses `--super-users`: `User:a;User:b` (empty parts ignored).
    pub fn parse_super_users(s: &str) -> Result<BTreeSet<String>, AuthError> {
        s.split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| Principal::parse(p).map(|p| p.to_string()))
            .collect()
    }
}

/// One authorization question: may the principal do `operation` on the
/// resource `(resource_type, name)`?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action<'a> {
    pub operation: Operation,
    pub resource_type: ResourceType,
    pub name: &'a str,
}

/// The answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    Denied,
}

impl Decision {
    pub fn allowed(self) -> bool {
        self == Decision::Allowed
    }
}

/// Every ACL, ordered and without duplicates, with the decision function.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AclSet {
    acls: BTreeSet<AclBinding>,
}

impl AclSet {
    pub fn new() -> AclSet {
        AclSet::default()
    }

    /// Builds a set from stored ACLs, validating each.
    pub fn from_bindings(
        bindings: impl IntoIterator<Item = AclBinding>,
    ) -> Result<AclSet, AuthError> {
        let mut set = AclSet::new();
        for b in bindings {
            set.add(b)?;
        }
        Ok(set)
    }

    /// Adds an ACL after Kafka's validation; adding one already present
    /// succeeds and changes nothing (as in Kafka).
    pub fn add(&mut self, acl: AclBinding) -> Result<(), AuthError> {
        acl.validate()?;
        self.acls.insert(acl);
        Ok(())
    }

    /// Removes and returns every ACL the filter matches.
    pub fn remove_matching(&mut self, filter: &AclBindingFilter) -> Vec<AclBinding> {
        let gone: Vec<AclBinding> = self.matching(filter).cloned().collect();
        for g in &gone {
            self.acls.remove(g);
        }
        gone
    }

    /// The ACLs the filter matches, in order.
    pub fn matching<'a>(
        &'a self,
        filter: &'a AclBindingFilter,
    ) -> impl Iterator<Item = &'a AclBinding> + 'a {
        self.acls.iter().filter(|a| filter.matches(a))
    }

    pub fn iter(&self) -> impl Iterator<Item = &AclBinding> {
        self.acls.iter()
    }

    pub fn len(&self) -> usize {
        self.acls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.acls.is_empty()
    }

    /// StandardAuthorizer's decision for one action: super users are
    /// allowed; otherwise a matching DENY ACL denies, a matching ALLOW ACL
    /// allows, and with no match the answer is deny when any ACL names the
    /// resource and the no-ACL default otherwise.
    pub fn authorize(
        &self,
        config: &AuthorizerConfig,
        principal: &Principal,
        host: Option<IpAddr>,
        action: Action<'_>,
    ) -> Decision {
        let principal = principal.to_string();
        if config.super_users.contains(&principal) {
            return Decision::Allowed;
        }
        let mut named = false;
        let mut allowed = false;
        for acl in self.acls.iter().filter(|a| {
            a.pattern.resource_type == action.resource_type && a.pattern.covers(action.name)
        }) {
            named = true;
            if !acl.applies_to(&principal, host) {
                continue;
            }
            let (op, wanted) = (acl.entry.operation, action.operation);
            match acl.entry.permission {
                Permission::Deny if op == Operation::All || op == wanted => {
                    return Decision::Denied;
                }
                Permission::Allow if op.allow_grants(wanted) => allowed = true,
                _ => {}
            }
        }
        match (allowed, named) {
            (true, _) => Decision::Allowed,
            (false, false) if config.allow_everyone_if_no_acl_found => Decision::Allowed,
            _ => Decision::Denied,
        }
    }

    /// Kafka's `authorizeByResourceType`: may the principal do `operation`
    /// on at least one resource of the type? Allowed when the action on a
    /// resource no ACL could name is allowed (super users, the no-ACL
    /// default), or when some ALLOW pattern is not wholly covered by a DENY.
    pub fn authorize_by_resource_type(
        &self,
        config: &AuthorizerConfig,
        principal: &Principal,
        host: Option<IpAddr>,
        operation: Operation,
        resource_type: ResourceType,
    ) -> Decision {
        let probe = Action {
            operation,
            resource_type,
            name: "hardcode",
        };
        if self.authorize(config, principal, host, probe).allowed() {
            return Decision::Allowed;
        }
        let who = principal.to_string();
        let relevant = self.acls.iter().filter(|a| {
            a.pattern.resource_type == resource_type
                && a.applies_to(&who, host)
                && (a.entry.operation == operation || a.entry.operation == Operation::All)
        });
        let (mut deny_literal, mut deny_prefix) = (BTreeSet::new(), BTreeSet::new());
        let mut allows = Vec::new();
        for a in relevant {
            let p = &a.pattern;
            match (a.entry.permission, p.pattern_type) {
                (Permission::Deny, PatternType::Literal) if p.name == WILDCARD => {
                    return Decision::Denied;
                }
                (Permission::Deny, PatternType::Literal) => {
                    deny_literal.insert(p.name.as_str());
                }
                (Permission::Deny, _) => {
                    deny_prefix.insert(p.name.as_str());
                }
                (Permission::Allow, _) => allows.push(p),
                _ => {}
            }
        }
        if allows
            .iter()
            .any(|p| p.pattern_type == PatternType::Literal && p.name == WILDCARD)
        {
            return Decision::Allowed;
        }
        let undenied = allows.iter().any(|p| {
            let literal_denied =
                p.pattern_type == PatternType::Literal && deny_literal.contains(p.name.as_str());
            let prefix_denied = p
                .name
                .char_indices()
                .map(|(i, c)| &p.name[..i + c.len_utf8()])
                .any(|prefix| deny_prefix.contains(prefix));
            !literal_denied && !prefix_denied
        });
        if undenied {
            Decision::Allowed
        } else {
            Decision::Denied
        }
    }

    /// The operations of `resource_type` the principal may do on the
    /// resource, as KIP-430's bit field (bit `code` set per operation).
    pub fn authorized_operations(
        &self,
        config: &AuthorizerConfig,
        principal: &Principal,
        host: Option<IpAddr>,
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        Operation::supported_by(resource_type)
            .iter()
            .filter(|op| {
                let action = Action {
                    operation: **op,
                    resource_type,
                    name,
                };
                self.authorize(config, principal, host, action).allowed()
            })
            .fold(0, |bits, op| bits | (1 << op.code()))
    }
}
