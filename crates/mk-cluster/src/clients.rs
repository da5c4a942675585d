//! The registry of in-process clients, so `close()` can flush producers and
//! make consumers leave their groups, and `crash()` can drop their queues.

use crate::cluster::BrokerCluster;
use crate::consumer::{Consumer, ConsumerOptions, ConsumerShared};
use crate::error::Result;
use crate::producer::{Producer, ProducerOptions, ProducerShared};
use std::sync::{Arc, Weak};

#[derive(Debug, Default)]
pub(crate) struct ClientRegistry {
    pub producers: Vec<Weak<ProducerShared>>,
    pub consumers: Vec<Weak<ConsumerShared>>,
}

impl ClientRegistry {
    pub fn take_live(&mut self) -> (Vec<Arc<ProducerShared>>, Vec<Arc<ConsumerShared>>) {
        let p = self
            .producers
            .drain(..)
            .filter_map(|w| w.upgrade())
            .collect();
        let c = self
            .consumers
            .drain(..)
            .filter_map(|w| w.upgrade())
            .collect();
        (p, c)
    }
}

/// Client constructors.
pub trait ClusterClients {
    /// A new in-process producer.
    fn producer(&self, options: ProducerOptions) -> Result<Producer>;
    /// A new in-process consumer of `group_id`.
    fn consumer(&self, group_id: &str, options: ConsumerOptions) -> Result<Consumer>;
}

impl ClusterClients for Arc<BrokerCluster> {
    fn producer(&self, options: ProducerOptions) -> Result<Producer> {
        Producer::new(self.clone(), options)
    }

    fn consumer(&self, group_id: &str, options: ConsumerOptions) -> Result<Consumer> {
        Consumer::new(self.clone(), group_id, options)
    }
}
