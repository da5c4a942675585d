//! CreateAcls, DescribeAcls and DeleteAcls: the ACLs the core's security
//! role keeps (validation, matching, persistence and the decision are the
//! core's and mk-auth's). This module only translates Kafka's numeric
//! codes both ways and answers with Kafka's errors: SECURITY_DISABLED while
//! the authorizer is off, INVALID_REQUEST for a binding or filter Kafka
//! refuses, CLUSTER_AUTHORIZATION_FAILED without ALTER (create, delete) or
//! DESCRIBE (describe) on the cluster.

use crate::api::Ctx;
use crate::errors::{KafkaCode, kafka_code};
use crate::messages::create_acls::{
    AclCreation, AclCreationResult, CreateAclsRequest, CreateAclsResponse,
};
use crate::messages::delete_acls::{
    DeleteAclsFilter, DeleteAclsFilterResult, DeleteAclsMatchingAcl, DeleteAclsRequest,
    DeleteAclsResponse,
};
use crate::messages::describe_acls::{
    AclDescription, DescribeAclsRequest, DescribeAclsResource, DescribeAclsResponse,
};
use mk_cluster::{
    AccessControlEntry, AclBinding, AclBindingFilter, Operation, PatternType, Permission,
    ResourcePattern, ResourceType,
};
use std::collections::BTreeMap;

const DISABLED: &str = "no authorizer is configured on the broker (--authorizer acl)";

/// Why an ACL request is refused as a whole, if it is: no authorizer, or
/// the principal may not `operation` the cluster.
fn refusal(ctx: &Ctx<'_>, operation: Operation) -> Option<(KafkaCode, String)> {
    let authz = ctx.authz();
    if !authz.on() {
        return Some((KafkaCode::SECURITY_DISABLED, DISABLED.to_string()));
    }
    (!authz.cluster(operation)).then(|| {
        (
            KafkaCode::CLUSTER_AUTHORIZATION_FAILED,
            format!("{} on the cluster is not authorized", operation.name()),
        )
    })
}

/// The four codes of a binding or filter in the core's terms; an unknown
/// code is Kafka's INVALID_REQUEST (the core validates the rest).
fn decoded(
    resource_type: i8,
    pattern_type: i8,
    operation: i8,
    permission: i8,
) -> Result<(ResourceType, PatternType, Operation, Permission), String> {
    fn known<T>(value: Option<T>, what: &str, raw: i8) -> Result<T, String> {
        value.ok_or_else(|| format!("unknown {what} {raw}"))
    }
    Ok((
        known(
            ResourceType::from_code(resource_type),
            "resource type",
            resource_type,
        )?,
        known(
            PatternType::from_code(pattern_type),
            "pattern type",
            pattern_type,
        )?,
        known(Operation::from_code(operation), "operation", operation)?,
        known(
            Permission::from_code(permission),
            "permission type",
            permission,
        )?,
    ))
}

/// One binding of CreateAcls in the core's terms.
fn binding(c: &AclCreation) -> Result<AclBinding, String> {
    let (resource_type, pattern_type, operation, permission) = decoded(
        c.resource_type,
        c.resource_pattern_type,
        c.operation,
        c.permission_type,
    )?;
    Ok(AclBinding {
        pattern: ResourcePattern {
            resource_type,
            name: c.resource_name.clone(),
            pattern_type,
        },
        entry: AccessControlEntry {
            principal: c.principal.clone(),
            host: c.host.clone(),
            operation,
            permission,
        },
    })
}

/// A Describe/DeleteAcls filter (DescribeAcls's is the request itself)
/// in the core's terms.
trait KafkaFilter {
    fn filter(&self) -> Result<AclBindingFilter, String>;
}

macro_rules! kafka_filter {
    ($($t:ty),*) => {$(
        impl KafkaFilter for $t {
            fn filter(&self) -> Result<AclBindingFilter, String> {
                let (resource_type, pattern_type, operation, permission) = decoded(
                    self.resource_type_filter,
                    self.pattern_type_filter,
                    self.operation,
                    self.permission_type,
                )?;
                Ok(AclBindingFilter {
                    resource_type,
                    name: self.resource_name_filter.clone(),
                    pattern_type,
                    principal: self.principal_filter.clone(),
                    host: self.host_filter.clone(),
                    operation,
                    permission,
                })
            }
        }
    )*};
}

kafka_filter!(DescribeAclsRequest, DeleteAclsFilter);

/// Adds each valid binding; one result per creation, in order.
pub async fn handle_create_acls(ctx: &Ctx<'_>, req: CreateAclsRequest) -> CreateAclsResponse {
    let failed = |code: KafkaCode, message: String| AclCreationResult {
        error_code: code,
        error_message: Some(message),
    };
    let parsed = req.creations.iter().map(binding).collect();
    let results = answer_each(
        refusal(ctx, Operation::Alter),
        parsed,
        |valid| ctx.cluster.security().create_acls(valid),
        failed,
        |stored| match stored {
            Some(Ok(())) => AclCreationResult {
                error_code: KafkaCode::NONE,
                error_message: None,
            },
            Some(Err(e)) => failed(kafka_code(e.code()), e.to_string()),
            None => failed(KafkaCode::UNKNOWN_SERVER_ERROR, "no answer".into()),
        },
    );
    CreateAclsResponse {
        throttle_time_ms: 0,
        results,
    }
}

/// One result per item of a CreateAcls or DeleteAcls, in order: each
/// `failed` when the request is refused as a whole or the core's `apply`
/// fails; an item that did not parse INVALID_REQUEST; each valid one
/// `done` with the core's answer to it (all valid ones go in one `apply`).
fn answer_each<T: Clone, A, R>(
    refused: Option<(KafkaCode, String)>,
    parsed: Vec<Result<T, String>>,
    apply: impl FnOnce(Vec<T>) -> Result<Vec<A>, mk_cluster::ClusterError>,
    failed: impl Fn(KafkaCode, String) -> R,
    done: impl Fn(Option<A>) -> R,
) -> Vec<R> {
    let fail_all = |code: KafkaCode, message: String| {
        parsed
            .iter()
            .map(|_| failed(code, message.clone()))
            .collect()
    };
    if let Some((code, message)) = refused {
        return fail_all(code, message);
    }
    let valid: Vec<T> = parsed
        .iter()
        .filter_map(|p| p.as_ref().ok().cloned())
        .collect();
    let mut answers = match apply(valid) {
        Ok(answers) => answers.into_iter(),
        Err(e) => return fail_all(kafka_code(e.code()), e.to_string()),
    };
    parsed
        .into_iter()
        .map(|p| match p {
            Err(message) => failed(KafkaCode::INVALID_REQUEST, message),
            Ok(_) => done(answers.next()),
        })
        .collect()
}

/// The matching ACLs grouped by resource pattern, as Kafka answers.
pub async fn handle_describe_acls(ctx: &Ctx<'_>, req: DescribeAclsRequest) -> DescribeAclsResponse {
    let answer = |code: KafkaCode, message: Option<String>, resources| DescribeAclsResponse {
        throttle_time_ms: 0,
        error_code: code,
        error_message: message,
        resources,
    };
    if let Some((code, message)) = refusal(ctx, Operation::Describe) {
        return answer(code, Some(message), Vec::new());
    }
    let f = match req.filter() {
        Ok(f) => f,
        Err(message) => return answer(KafkaCode::INVALID_REQUEST, Some(message), Vec::new()),
    };
    let mut by_pattern: BTreeMap<ResourcePattern, Vec<AclDescription>> = BTreeMap::new();
    for acl in ctx.cluster.security().describe_acls(&f) {
        by_pattern
            .entry(acl.pattern)
            .or_default()
            .push(AclDescription {
                principal: acl.entry.principal,
                host: acl.entry.host,
                operation: acl.entry.operation.code(),
                permission_type: acl.entry.permission.code(),
            });
    }
    let resources = by_pattern
        .into_iter()
        .map(|(p, acls)| DescribeAclsResource {
            resource_type: p.resource_type.code(),
            resource_name: p.name,
            pattern_type: p.pattern_type.code(),
            acls,
        })
        .collect();
    answer(KafkaCode::NONE, None, resources)
}

/// One ACL a filter removed, as DeleteAcls lists it.
fn removed_acl(acl: AclBinding) -> DeleteAclsMatchingAcl {
    DeleteAclsMatchingAcl {
        error_code: KafkaCode::NONE,
        error_message: None,
        resource_type: acl.pattern.resource_type.code(),
        resource_name: acl.pattern.name,
        pattern_type: acl.pattern.pattern_type.code(),
        principal: acl.entry.principal,
        host: acl.entry.host,
        operation: acl.entry.operation.code(),
        permission_type: acl.entry.permission.code(),
    }
}

/// Removes what each filter matches; one result per filter, listing the
/// ACLs it removed.
pub async fn handle_delete_acls(ctx: &Ctx<'_>, req: DeleteAclsRequest) -> DeleteAclsResponse {
    let parsed = req.filters.iter().map(KafkaFilter::filter).collect();
    let filter_results = answer_each(
        refusal(ctx, Operation::Alter),
        parsed,
        |valid| ctx.cluster.security().delete_acls(&valid),
        |code, message| DeleteAclsFilterResult {
            error_code: code,
            error_message: Some(message),
            matching_acls: Vec::new(),
        },
        |removed| DeleteAclsFilterResult {
            error_code: KafkaCode::NONE,
            error_message: None,
            matching_acls: removed
                .unwrap_or_default()
                .into_iter()
                .map(removed_acl)
                .collect(),
        },
    );
    DeleteAclsResponse {
        throttle_time_ms: 0,
        filter_results,
    }
}
