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
//!
//! Coordinators: Kafka places the coordinator of a group (or transactional
//! id) at the leader of one partition of `__consumer_offsets` (or
//! `__transaction_state`): `abs(javaHashCode(key)) % 50`, 50 being both
//! topics' default partition count. We have one offsets log and one
//! journal, so these partitions are virtual: partition p is "replicated" on
//! `min(3, brokers)` brokers placed as every topic is (spec 00:
//! `B[(p + i) % len(B)]`, 3 being Kafka's default replication factor of
//! both topics), and its leader is the first of them that is online. Every
//! broker therefore names the same coordinator for a key, the coordinator
//! moves deterministically when its broker goes offline (and back when it
//! returns), and a request for the key at any other broker is
//! NOT_COORDINATOR.

use crate::cluster::BrokerCluster;
use crate::config::BrokerId;
use crate::error::{ClusterError, LeaderError, Result};
use mk_core::TopicPartition;
use mk_replication::LeaderAndEpoch;
use std::collections::BTreeSet;

/// Partitions of Kafka's `__consumer_offsets` and `__transaction_state`
/// (`offsets.topic.num.partitions`, `transaction.state.log.num.partitions`
/// defaults): the virtual partitions that place coordinators.
pub const COORDINATOR_PARTITIONS: u32 = 50;

/// Replicas of a virtual coordinator partition (Kafka's default
/// `offsets.topic.replication.factor` and
/// `transaction.state.log.replication.factor`), at most the broker count.
pub const COORDINATOR_REPLICATION: usize = 3;

/// What a coordinator is looked up for (Kafka's FindCoordinator key types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoordinatorKey<'a> {
    /// A consumer group id (`__consumer_offsets`).
    Group(&'a str),
    /// A transactional id (`__transaction_state`).
    Transaction(&'a str),
}

impl<'a> CoordinatorKey<'a> {
    /// The key itself.
    pub fn as_str(self) -> &'a str {
        match self {
            CoordinatorKey::Group(k) | CoordinatorKey::Transaction(k) => k,
        }
    }

    /// How messages name the key: `group "g"`, `transactional id "t"`.
    fn describe(self) -> String {
        match self {
            CoordinatorKey::Group(k) => format!("group {k:?}"),
            CoordinatorKey::Transaction(k) => format!("transactional id {k:?}"),
        }
    }
}

/// Java's `String.hashCode` (31 * h + each UTF-16 code unit, wrapping):
/// the hash Kafka's coordinators place keys with.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// The virtual partition of a coordinator key: Kafka's
/// `Utils.abs(key.hashCode()) % partitions` (`Utils.abs(i32::MIN)` is 0).
pub fn coordinator_partition(key: &str) -> u32 {
    let hash = java_string_hash(key);
    let abs = if hash == i32::MIN {
        0
    } else {
        hash.unsigned_abs()
    };
    abs % COORDINATOR_PARTITIONS
}

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

    /// The broker that coordinates `key` (see the module docs): the first
    /// online broker of its virtual partition's replicas.
    /// COORDINATOR_NOT_AVAILABLE when all of them are offline.
    pub fn coordinator(self, key: CoordinatorKey<'_>) -> Result<BrokerId> {
        let mut brokers = self.cluster.config.broker_ids.clone();
        brokers.sort_unstable();
        let n = brokers.len();
        let p = usize::try_from(coordinator_partition(key.as_str())).unwrap_or(0);
        (0..n.min(COORDINATOR_REPLICATION))
            .map(|i| brokers[(p + i) % n])
            .find(|b| self.is_online(*b))
            .ok_or_else(|| {
                LeaderError::CoordinatorNotAvailable {
                    key: key.describe(),
                }
                .into()
            })
    }

    /// Ok if `broker` coordinates `key`; NOT_COORDINATOR (naming the one
    /// that does) otherwise, or COORDINATOR_NOT_AVAILABLE. Adapters ask it
    /// before every group or transactional request a client addressed to
    /// one broker.
    pub fn check_coordinator(self, key: CoordinatorKey<'_>, broker: BrokerId) -> Result<()> {
        let coordinator = self.coordinator(key)?;
        if coordinator != broker {
            return Err(LeaderError::NotCoordinator {
                key: key.describe(),
                broker,
                coordinator,
            }
            .into());
        }
        Ok(())
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
                    None => moved.extend(self.elect_unclean_if_allowed(&tp, &replicas)?),
                }
            } else {
                self.cluster.steps().remove_from_isr(&tp, broker)?;
            }
        }
        tracing::warn!(broker, moved = moved.len(), "broker taken offline");
        Ok(moved)
    }

    /// Brings an offline broker back: its replicas that do not lead become
    /// followers again and catch up through replication. Returns whether
    /// the broker was offline (bringing an online broker online changes
    /// nothing, and an operator should be told so).
    pub fn bring_online(self, broker: BrokerId) -> Result<bool> {
        self.cluster.check_running()?;
        self.check_hosted(broker)?;
        if self.is_online(broker) {
            return Ok(false);
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
        // A partition left without a leader may now elect this broker's
        // out-of-sync replica, if its topic allows unclean elections.
        self.elect_offline_uncleanly(None)?;
        self.cluster.appended.notify_one();
        tracing::info!(broker, "broker back online");
        Ok(true)
    }

    /// Whether `tp`'s topic allows an unclean election: its own
    /// `unclean.leader.election.enable`, else the broker default (false).
    pub fn unclean_allowed(self, tp: &TopicPartition) -> Result<bool> {
        let topic = self.cluster.topic(&tp.topic)?;
        let broker = self.cluster.broker_defaults();
        Ok(topic
            .meta
            .config
            .effective_str("unclean.leader.election.enable", &broker)
            == "true")
    }

    /// Every partition (of `topic`, or all) whose leader is offline gets
    /// an unclean leader where its topic allows it: run when a broker
    /// returns and when `unclean.leader.election.enable` is turned on.
    /// Returns the partitions that got a leader.
    pub fn elect_offline_uncleanly(
        self,
        topic: Option<&str>,
    ) -> Result<Vec<(TopicPartition, LeaderAndEpoch)>> {
        let mut elected = Vec::new();
        for slot in self.cluster.healthy_slots() {
            if topic.is_some_and(|t| t != slot.tp.topic) {
                continue;
            }
            let (leader, replicas) = self
                .cluster
                .read_slot(&slot, |set| Ok((set.leader_id(), set.replicas().to_vec())))?;
            if !self.is_online(leader) {
                elected.extend(self.elect_unclean_if_allowed(&slot.tp, &replicas)?);
            }
        }
        Ok(elected)
    }

    /// The leader of `tp` is offline and no in-sync replica is online:
    /// when the topic allows it, the first online replica of the replica
    /// list leads (epoch + 1, records above its LEO lost — Kafka's
    /// trade-off); otherwise the partition stays without a leader until
    /// an in-sync replica returns.
    fn elect_unclean_if_allowed(
        self,
        tp: &TopicPartition,
        replicas: &[BrokerId],
    ) -> Result<Option<(TopicPartition, LeaderAndEpoch)>> {
        let next = if self.unclean_allowed(tp)? {
            replicas.iter().copied().find(|b| self.is_online(*b))
        } else {
            None
        };
        let Some(next) = next else {
            tracing::warn!(
                %tp,
                "no in-sync replica can take over and unclean election is off or impossible; the partition has no leader"
            );
            return Ok(None);
        };
        let le = self.cluster.steps().promote_unclean(tp, next)?;
        tracing::warn!(%tp, leader = next, epoch = le.leader_epoch, "unclean leader election: records above the new leader's LEO are lost");
        Ok(Some((tp.clone(), le)))
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
