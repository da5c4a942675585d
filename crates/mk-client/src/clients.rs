//! The constructors of the in-process clients on a shared cluster.

use crate::consumer::{Consumer, ConsumerOptions};
use crate::producer::{Producer, ProducerOptions};
use mk_cluster::{BrokerCluster, Result};
use std::sync::Arc;

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
