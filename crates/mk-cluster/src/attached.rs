//! The in-process clients attached to a cluster, so that `close()` can have
//! producers send what they queued and consumers leave their groups, and
//! `crash()` can drop the producers' queues. The cluster knows them only
//! through `AttachedClient`: the client library sits above the core.

use std::sync::{Arc, Weak};

/// What the cluster's close and crash do to an attached client.
pub trait AttachedClient: std::fmt::Debug + Send + Sync {
    /// Part of the cluster's close, before any partition closes: a
    /// producer sends what it queued, a consumer leaves its group. Errors
    /// are the client's own; the close goes on.
    fn close_with_cluster(self: Arc<Self>);

    /// Part of the cluster's crash: queued work is dropped.
    fn crash_with_cluster(&self);
}

/// Producers and consumers attached to the cluster, held weakly: a dropped
/// client simply disappears from the registry.
#[derive(Debug, Default)]
pub(crate) struct ClientRegistry {
    pub producers: Vec<Weak<dyn AttachedClient>>,
    pub consumers: Vec<Weak<dyn AttachedClient>>,
}

/// The live clients taken out of the registry, producers first.
pub(crate) struct LiveClients {
    pub producers: Vec<Arc<dyn AttachedClient>>,
    pub consumers: Vec<Arc<dyn AttachedClient>>,
}

impl ClientRegistry {
    pub fn take_live(&mut self) -> LiveClients {
        let live = |v: &mut Vec<Weak<dyn AttachedClient>>| {
            v.drain(..).filter_map(|w| w.upgrade()).collect::<Vec<_>>()
        };
        LiveClients {
            producers: live(&mut self.producers),
            consumers: live(&mut self.consumers),
        }
    }
}
