//! Authorization of every Kafka request, as Kafka's `KafkaApis` does it.
//!
//! The decision is the core's (`cluster.security()`: Kafka's
//! StandardAuthorizer over the persisted ACLs, everything allowed while
//! `--authorizer` is off). What lives here is only the Kafka side of it:
//! which (operation, resource) pairs each request needs, and how a denial
//! reads in each response (TOPIC_AUTHORIZATION_FAILED 29 per partition,
//! GROUP_AUTHORIZATION_FAILED 30, CLUSTER_AUTHORIZATION_FAILED 31,
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED 53, unauthorized topics left out
//! of listings).
//!
//! The table is schema/served.list: an API's `guard <fn>` names its
//! function here. The router runs a guard through [`judge`], only while the
//! authorizer is on (with it off every request is served as it came). A
//! guard takes the decoded request and the request's [`Authz`] and either
//! answers at once ([`Gate::Answer`], the whole request denied) or passes the
//! request, narrowed to what is allowed, to the handler with a [`Patch`]
//! that adds the denied parts to the handler's response. Handlers never
//! check permissions themselves (the ACL APIs excepted: SECURITY_DISABLED
//! is their own answer). A request allowed or refused as a whole has no
//! guard of its own: its [`Whole`] rule (a row of `whole_requests!` where
//! it needs one operation on one resource) feeds the one guard [`whole`],
//! and its error answer is its response's `ErrorAnswer`. With the
//! authorizer on, an API without a guard is
//! neither advertised nor served (fail closed): a new API is served under
//! ACLs once its line names a guard.

pub mod groups;
pub mod surface;
pub mod topics;

use crate::api::{Ctx, ErrorAnswer};
use crate::errors::KafkaCode;
use mk_cluster::{Identity, Operation, ResourceType, Security};

/// The authorizer as one request sees it: the core's decision for this
/// connection's principal and address.
pub struct Authz<'a> {
    /// The request being judged.
    pub ctx: &'a Ctx<'a>,
    security: Security<'a>,
    /// `None` while the authorizer is off: everything is allowed, and the
    /// hot path neither locks the session nor copies its principal.
    who: Option<Identity>,
}

impl Ctx<'_> {
    /// Who sent this request: the connection's principal and address.
    pub fn identity(&self) -> Identity {
        Identity {
            principal: self.session.lock().expect("session").principal.clone(),
            host: self.peer.map(|p| p.ip()),
        }
    }

    /// The authorizer for this request.
    pub fn authz(&self) -> Authz<'_> {
        let security = self.cluster.security();
        Authz {
            ctx: self,
            security,
            who: security.authorizer_enabled().then(|| self.identity()),
        }
    }
}

impl Authz<'_> {
    /// Whether the authorizer is on (`--authorizer acl`).
    pub fn on(&self) -> bool {
        self.who.is_some()
    }

    pub fn allows(&self, operation: Operation, resource_type: ResourceType, name: &str) -> bool {
        match &self.who {
            None => true,
            Some(who) => self.security.authorize(who, operation, resource_type, name),
        }
    }

    pub fn topic(&self, operation: Operation, name: &str) -> bool {
        self.allows(operation, ResourceType::Topic, name)
    }

    pub fn group(&self, operation: Operation, name: &str) -> bool {
        self.allows(operation, ResourceType::Group, name)
    }

    pub fn transactional_id(&self, operation: Operation, id: &str) -> bool {
        self.allows(operation, ResourceType::TransactionalId, id)
    }

    pub fn cluster(&self, operation: Operation) -> bool {
        self.allows(operation, ResourceType::Cluster, mk_cluster::CLUSTER_NAME)
    }

    /// A topic id's name, if the cluster knows the id.
    pub fn topic_name(&self, id: crate::codec::Uuid) -> Option<String> {
        let topics = self.ctx.cluster.topics();
        topics.name_by_id(mk_cluster::TopicId(id.0)).ok()
    }

    /// Every topic's name (none when the catalog cannot be read: nothing
    /// then is judged).
    pub fn all_topics(&self) -> Vec<String> {
        self.ctx.cluster.topics().list().unwrap_or_default()
    }

    /// The verdict on names known only once the handler ran (listings):
    /// the request's identity is taken now, for the patch.
    pub(crate) fn judge_later(
        &self,
        operation: Operation,
        resource_type: ResourceType,
    ) -> impl Fn(&str) -> bool + Send + 'static {
        let who = self.ctx.identity();
        let cluster = std::sync::Arc::clone(self.ctx.cluster);
        move |name| {
            cluster
                .security()
                .authorize(&who, operation, resource_type, name)
        }
    }

    /// Whether `operation` is allowed on at least one resource of the type.
    pub fn any(&self, operation: Operation, resource_type: ResourceType) -> bool {
        match &self.who {
            None => true,
            Some(who) => self
                .security
                .authorize_by_resource_type(who, operation, resource_type),
        }
    }

    /// Each topic's authorized-operations bit set, by name.
    pub fn topic_operations(
        &self,
        names: impl IntoIterator<Item = String>,
    ) -> std::collections::BTreeMap<String, i32> {
        names
            .into_iter()
            .map(|n| {
                let bits = self.operations(ResourceType::Topic, &n);
                (n, bits)
            })
            .collect()
    }

    /// KIP-430's authorized-operations bit set of a resource.
    pub fn operations(&self, resource_type: ResourceType, name: &str) -> i32 {
        let anonymous;
        let who = match &self.who {
            Some(who) => who,
            None => {
                anonymous = Identity::anonymous(None);
                &anonymous
            }
        };
        self.security
            .authorized_operations(who, resource_type, name)
    }
}

/// The bit set a response carries when the client did not ask for
/// authorized operations (Kafka's "omitted" value).
pub const OPERATIONS_OMITTED: i32 = i32::MIN;

/// A change to a handler's response.
type Change<R> = Box<dyn FnOnce(&mut R) + Send>;

/// What the handler's response gets after it ran: the denied parts.
pub struct Patch<R>(Option<Change<R>>);

impl<R> Patch<R> {
    /// Nothing to add.
    pub fn none() -> Patch<R> {
        Patch(None)
    }

    pub fn new(f: impl FnOnce(&mut R) + Send + 'static) -> Patch<R> {
        Patch(Some(Box::new(f)))
    }

    /// The response with the patch applied.
    pub fn apply(self, mut response: R) -> R {
        if let Some(f) = self.0 {
            f(&mut response);
        }
        response
    }
}

/// A guard's verdict.
pub enum Gate<Req, R> {
    /// Serve this (maybe narrowed) request, then apply the patch.
    Serve(Req, Patch<R>),
    /// Denied as a whole: this is the answer.
    Answer(R),
}

impl<Req, R> Gate<Req, R> {
    /// Serve the request as it is.
    pub fn pass(req: Req) -> Gate<Req, R> {
        Gate::Serve(req, Patch::none())
    }

    /// Serve the request, then patch the response.
    pub fn patched(req: Req, f: impl FnOnce(&mut R) + Send + 'static) -> Gate<Req, R> {
        Gate::Serve(req, Patch::new(f))
    }
}

/// The guard of the APIs every client may use, authenticated or not
/// (ApiVersions, SaslHandshake, SaslAuthenticate).
pub fn open<Req, R>(_authz: &Authz<'_>, req: Req) -> Gate<Req, R> {
    Gate::pass(req)
}

/// The guard of APIs whose handler answers a denial itself because the
/// answer depends on more than the decision (Create/Describe/DeleteAcls:
/// SECURITY_DISABLED with the authorizer off).
pub fn in_handler<Req, R>(_authz: &Authz<'_>, req: Req) -> Gate<Req, R> {
    Gate::pass(req)
}

/// Runs the API's `guard` when the authorizer is on; with it off every
/// request is served as it came (the router calls this).
pub fn judge<Req, R>(
    ctx: &Ctx<'_>,
    req: Req,
    guard: impl FnOnce(&Authz<'_>, Req) -> Gate<Req, R>,
) -> Gate<Req, R> {
    let authz = ctx.authz();
    if !authz.on() {
        return Gate::pass(req);
    }
    guard(&authz, req)
}

/// Splits `items` into the allowed and the denied ones.
pub(crate) fn split<T>(items: Vec<T>, mut allowed: impl FnMut(&T) -> bool) -> (Vec<T>, Vec<T>) {
    items.into_iter().partition(|t| allowed(t))
}

/// The shape of most guards: a request judged item by item (topics,
/// groups, config resources). An item `refuse` answers leaves the request
/// (the handler never sees it) and its answer joins the list `answers` of
/// the handler's response.
pub(crate) fn narrow<Req, R, T, A>(
    mut req: Req,
    items: impl FnOnce(&mut Req) -> &mut Vec<T>,
    mut refuse: impl FnMut(&T) -> Option<A>,
    answers: fn(&mut R) -> &mut Vec<A>,
) -> Gate<Req, R>
where
    R: 'static,
    A: Send + 'static,
{
    let mut refused = Vec::new();
    items(&mut req).retain(|t| match refuse(t) {
        None => true,
        Some(answer) => {
            refused.push(answer);
            false
        }
    });
    if refused.is_empty() {
        return Gate::pass(req);
    }
    Gate::patched(req, move |r: &mut R| answers(r).extend(refused))
}

/// A resource a request names, as a guard judges it.
#[derive(Clone, Copy)]
pub(crate) enum On<'r> {
    Cluster,
    Topic(&'r str),
    Group(&'r str),
    TransactionalId(&'r str),
}

/// A denial as a response carries it: Kafka's code for the resource type
/// and the message saying what was refused.
pub(crate) struct Refusal {
    pub code: KafkaCode,
    pub message: String,
}

impl Authz<'_> {
    /// The denial of `operation` on `on`; `None` when it is allowed.
    pub(crate) fn refusal(&self, operation: Operation, on: On<'_>) -> Option<Refusal> {
        let (resource_type, name, code) = match on {
            On::Cluster => (ResourceType::Cluster, mk_cluster::CLUSTER_NAME, CLUSTER),
            On::Topic(name) => (ResourceType::Topic, name, TOPIC),
            On::Group(name) => (ResourceType::Group, name, GROUP),
            On::TransactionalId(id) => (ResourceType::TransactionalId, id, TXN),
        };
        (!self.allows(operation, resource_type, name)).then(|| Refusal {
            code,
            message: denied(operation, resource_type, name),
        })
    }

    /// The first of `needs` denied, in order; `None` when all are allowed.
    pub(crate) fn first_refusal<'r>(
        &self,
        needs: impl IntoIterator<Item = (Operation, On<'r>)>,
    ) -> Option<Refusal> {
        needs
            .into_iter()
            .find_map(|(operation, on)| self.refusal(operation, on))
    }
}

/// Serves `req` when nothing was refused; otherwise answers the whole
/// request with `R`'s error answer.
pub(crate) fn unless_refused<Req, R: ErrorAnswer>(
    refusal: Option<Refusal>,
    req: Req,
) -> Gate<Req, R> {
    match refusal {
        None => Gate::pass(req),
        Some(refusal) => Gate::Answer(R::error(refusal.code, refusal.message)),
    }
}

/// A request allowed or refused as a whole (served.list's `guard
/// authz::whole`): refused, its answer is the response's error answer.
pub(crate) trait Whole {
    type Response: ErrorAnswer;
    /// The first denial of what the request needs, if any.
    fn refusal(&self, authz: &Authz<'_>) -> Option<Refusal>;
}

/// The guard of the [`Whole`] requests.
pub(crate) fn whole<Req: Whole>(authz: &Authz<'_>, req: Req) -> Gate<Req, Req::Response> {
    let refusal = req.refusal(authz);
    unless_refused(refusal, req)
}

/// The table of the [`Whole`] requests that need one operation on one
/// resource: each request, its response, the operation and the resource
/// (with the request's field that names it).
macro_rules! whole_requests {
    ($($req:ty => $resp:ty: $op:ident on $on:ident $(($field:ident))?;)*) => {$(
        impl $crate::api::authz::Whole for $req {
            type Response = $resp;
            fn refusal(
                &self,
                authz: &$crate::api::authz::Authz<'_>,
            ) -> Option<$crate::api::authz::Refusal> {
                use $crate::api::authz::On;
                authz.refusal(mk_cluster::Operation::$op, On::$on $((&self.$field))?)
            }
        }
    )*};
}

pub(crate) use whole_requests;

/// Whether an API is served to this connection: with the authorizer on,
/// only the guarded ones.
pub fn serves(ctx_cluster: &mk_cluster::BrokerCluster, api_key: i16) -> bool {
    !ctx_cluster.security().authorizer_enabled() || crate::api::GUARDED.contains(&api_key)
}

/// The message of a denial.
pub(crate) fn denied(operation: Operation, resource_type: ResourceType, name: &str) -> String {
    format!(
        "not authorized to {} {} {name:?}",
        operation.name(),
        resource_type.name()
    )
}

pub(crate) const TOPIC: KafkaCode = KafkaCode::TOPIC_AUTHORIZATION_FAILED;
pub(crate) const GROUP: KafkaCode = KafkaCode::GROUP_AUTHORIZATION_FAILED;
pub(crate) const CLUSTER: KafkaCode = KafkaCode::CLUSTER_AUTHORIZATION_FAILED;
pub(crate) const TXN: KafkaCode = KafkaCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED;

#[cfg(test)]
mod tests {
    use crate::api::{APIS, GUARDED};

    #[test]
    fn every_served_api_names_its_guard() {
        // An API without a guard would be hidden under ACLs; this lists
        // them so a new API comes with its authorization.
        let unguarded: Vec<&str> = APIS
            .iter()
            .filter(|a| !GUARDED.contains(&a.key))
            .map(|a| a.name)
            .collect();
        assert!(
            unguarded.is_empty(),
            "served.list: give these APIs a `guard` (api/authz/): {unguarded:?}"
        );
    }
}
