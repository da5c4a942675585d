//! The brokers of the process as Kafka clients see them: which are online,
//! leadership checks for requests addressed to one broker (a broker that
//! does not lead a partition answers NOT_LEADER_OR_FOLLOWER, so clients
//! re-route exactly as against a real cluster), and taking a broker offline
//! and back — an operator action that works outside lab mode.
//!
//! Offline means: the broker leads nothing (each partition it led moves to
//! the first in-sync replica of the replica list, with an epoch bump), its
//! replicas leave the ISR and stop fetching, and adapters stop serving on
//! its listener. Back online, its replicas rejoin as followers: they
//! reconcile through the leader epochs (KIP-101/279), catch up and re-enter
//! the ISR. The offline set lives in memory: a restart brings every broker
//! back.

use crate::cluster::BrokerCluster;
use crate::config::BrokerId;
use crate::error::{ClusterError, LeaderError, Result};
use mk_core::TopicPartition;
use mk_replication::LeaderAndEpoch;
use std::collections::BTreeSet;

/// The hosted brokers: which are online, leadership checks, taking one offline: `cluster.brokers().take_offline(..)`.
#[derive(Debug, Clone, Copy)]
pub struct Brokers<'a> {
    pub(crate) cluster: &'a BrokerCluster,
}

impl BrokerCluster {
    /// The brokers role (see [`Brokers`]).
    pub fn brokers(&self) -> Brokers<'_> {
        Brokers { cluster: self }
    }
}

impl Brokers<'_> {
    /// The hosted brokers that are online, ascending.
    pub fn online(self) -> Vec<BrokerId> {
        let offline = self.cluster.offline_brokers.borrow();
        self.cluster
            .config
            .broker_ids
            .iter()
            .copied()
            .filter(|b| !offline.contains(b))
            .collect()
    }

    pub fn is_online(self, broker: BrokerId) -> bool {
        self.cluster.config.broker_ids.contains(&broker)
            && !self.cluster.offline_brokers.borrow().contains(&broker)
    }

    /// A receiver that sees the set of offline brokers every time it
    /// changes (adapters close an offline broker's connections).
    pub fn watch_offline(self) -> tokio::sync::watch::Receiver<BTreeSet<BrokerId>> {
        self.cluster.offline_brokers.subscribe()
    }

    /// The partition's leader as clients should see it: `None` while the
    /// leader's broker is offline (no in-sync replica could take over).
    pub fn available_leader(self, tp: &TopicPartition) -> Result<Option<BrokerId>> {
        let leader = self.cluster.read_partition(tp, |set| Ok(set.leader_id()))?;
        Ok(self.is_online(leader).then_some(leader))
    }

    /// Ok if `broker` may serve leader-only requests (produce, fetch, list
    /// offsets) for `tp`: NOT_LEADER_OR_FOLLOWER if another broker leads
    /// it, LEADER_NOT_AVAILABLE if its leader is offline.
    pub fn check_leader(self, tp: &TopicPartition, broker: BrokerId) -> Result<()> {
        let leader = self.cluster.read_partition(tp, |set| Ok(set.leader_id()))?;
        if !self.is_online(leader) {
            return Err(LeaderError::NotAvailable {
                partition: tp.clone(),
                leader,
            }
            .into());
        }
        if leader != broker {
            return Err(LeaderError::NotLeader {
                partition: tp.clone(),
                broker,
                leader,
            }
            .into());
        }
        Ok(())
    }

    /// Takes a broker offline. Returns the partitions whose leadership
    /// moved and their new leader and epoch. Refused for an unknown broker
    /// and for the last online one (nothing could serve).
    pub fn take_offline(self, broker: BrokerId) -> Result<Vec<(TopicPartition, LeaderAndEpoch)>> {
        self.cluster.check_running()?;
        self.check_hosted(broker)?;
        if !self.is_online(broker) {
            return Ok(Vec::new());
        }
        if self.online().len() == 1 {
            return Err(ClusterError::InvalidRequest(format!(
                "broker {broker} is the last online broker; taking it offline would stop the cluster"
            )));
        }
        self.cluster.offline_brokers.send_modify(|s| {
            s.insert(broker);
        });
        let mut moved = Vec::new();
        for slot in self.cluster.healthy_slots() {
            let tp = slot.tp.clone();
            let (leader, isr, replicas) = self.cluster.read_slot(&slot, |set| {
                Ok((set.leader_id(), set.isr(), set.replicas().to_vec()))
            })?;
            if !replicas.contains(&broker) {
                continue;
            }
            if leader == broker {
                let successor = replicas
                    .iter()
                    .copied()
                    .find(|b| *b != broker && isr.contains(b) && self.is_online(*b));
                match successor {
                    Some(next) => {
                        moved.push((tp.clone(), self.cluster.steps().promote(&tp, next)?))
                    }
                    None => tracing::warn!(
                        %tp,
                        broker,
                        "no in-sync replica can take over; the partition has no leader while the broker is offline"
                    ),
                }
            } else {
                self.cluster.steps().remove_from_isr(&tp, broker)?;
            }
        }
        tracing::warn!(broker, moved = moved.len(), "broker taken offline");
        Ok(moved)
    }

    /// Brings an offline broker back: its replicas that do not lead become
    /// followers again and catch up through replication.
    pub fn bring_online(self, broker: BrokerId) -> Result<()> {
        self.cluster.check_running()?;
        self.check_hosted(broker)?;
        if self.is_online(broker) {
            return Ok(());
        }
        for slot in self.cluster.healthy_slots() {
            let (leader, replicas) = self
                .cluster
                .read_slot(&slot, |set| Ok((set.leader_id(), set.replicas().to_vec())))?;
            if replicas.contains(&broker) && leader != broker {
                self.cluster.steps().rejoin(&slot.tp, broker)?;
            }
        }
        self.cluster.offline_brokers.send_modify(|s| {
            s.remove(&broker);
        });
        self.cluster.appended.notify_one();
        tracing::info!(broker, "broker back online");
        Ok(())
    }

    fn check_hosted(self, broker: BrokerId) -> Result<()> {
        if self.cluster.config.broker_ids.contains(&broker) {
            Ok(())
        } else {
            Err(ClusterError::InvalidRequest(format!(
                "broker {broker} is not hosted here; brokers are {:?}",
                self.cluster.config.broker_ids
            )))
        }
    }
}
