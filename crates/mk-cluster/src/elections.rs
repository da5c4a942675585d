//! Leader elections an operator asks for (Kafka's ElectLeaders):
//! preferred — leadership goes back to the first replica of the replica
//! list when it is online and in sync — and unclean, which acts only when
//! the leader is offline: an online in-sync replica if there is one, else
//! (as Kafka, KIP-460, whatever `unclean.leader.election.enable` says) the
//! first online replica of the replica list even though it is out of
//! sync; records above its log end are then lost.
//!
//! An election is the core's promotion (`steps().promote`, or
//! `promote_unclean`): epoch + 1, persisted before it is used; the new
//! leader's ISR starts as itself and the other replicas re-enter as they
//! catch up (truncating to the new leader's log first). The former leader,
//! when online, becomes a follower again at once.

use crate::brokers::Brokers;
use crate::error::ClusterError;
use mk_core::TopicPartition;
use mk_replication::LeaderAndEpoch;

/// Which election (Kafka's election types 0 and 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionType {
    Preferred,
    Unclean,
}

/// Why a partition got no new leader.
#[derive(Debug)]
pub enum ElectionRefusal {
    /// The partition already has the leader the election would give it
    /// (ELECTION_NOT_NEEDED).
    NotNeeded,
    /// The preferred replica is offline or not in sync
    /// (PREFERRED_LEADER_NOT_AVAILABLE); the message says which.
    PreferredNotAvailable(String),
    /// No online in-sync replica could lead (ELIGIBLE_LEADERS_NOT_AVAILABLE).
    NoEligibleLeader(String),
    /// The partition does not exist, or the cluster cannot act.
    Cluster(ClusterError),
}

impl From<ClusterError> for ElectionRefusal {
    fn from(e: ClusterError) -> Self {
        ElectionRefusal::Cluster(e)
    }
}

impl Brokers<'_> {
    /// Runs one election for `tp`; the new leader and epoch, or why not.
    pub fn elect_leader(
        self,
        tp: &TopicPartition,
        kind: ElectionType,
    ) -> std::result::Result<LeaderAndEpoch, ElectionRefusal> {
        self.cluster.check_running()?;
        let slot = self.cluster.slot(tp)?;
        if slot.damage().is_some() {
            return Err(ElectionRefusal::Cluster(slot.damaged_error()));
        }
        let (leader, isr, replicas) = self.cluster.read_slot(&slot, |set| {
            Ok((set.leader_id(), set.isr(), set.replicas().to_vec()))
        })?;
        let online = self.online();
        let eligible = |b: &i32| online.contains(b) && isr.contains(b);
        let chosen = match kind {
            ElectionType::Preferred => {
                let preferred = replicas[0];
                if leader == preferred {
                    return Err(ElectionRefusal::NotNeeded);
                }
                if !eligible(&preferred) {
                    return Err(ElectionRefusal::PreferredNotAvailable(format!(
                        "the preferred replica {preferred} of {tp} is {}",
                        if online.contains(&preferred) {
                            "not in sync"
                        } else {
                            "offline"
                        }
                    )));
                }
                preferred
            }
            ElectionType::Unclean => {
                if online.contains(&leader) {
                    return Err(ElectionRefusal::NotNeeded);
                }
                if let Some(b) = replicas.iter().copied().find(eligible) {
                    b
                } else {
                    return self.elect_out_of_sync(tp, &replicas, &online);
                }
            }
        };
        let elected = self.cluster.steps().promote(tp, chosen)?;
        if online.contains(&leader) {
            self.cluster.steps().rejoin(tp, leader)?;
            self.cluster.appended.notify_one();
        }
        tracing::info!(%tp, leader = chosen, epoch = elected.leader_epoch, ?kind, "leader elected");
        Ok(elected)
    }

    /// ElectLeaders UNCLEAN with no online in-sync replica: the first
    /// online replica leads though out of sync (data above its LEO lost).
    fn elect_out_of_sync(
        self,
        tp: &TopicPartition,
        replicas: &[i32],
        online: &[i32],
    ) -> std::result::Result<LeaderAndEpoch, ElectionRefusal> {
        let chosen = replicas
            .iter()
            .copied()
            .find(|b| online.contains(b))
            .ok_or_else(|| {
                ElectionRefusal::NoEligibleLeader(format!("no replica of {tp} is online"))
            })?;
        let elected = self.cluster.steps().promote_unclean(tp, chosen)?;
        tracing::warn!(%tp, leader = chosen, epoch = elected.leader_epoch, "unclean leader elected on request: records above its LEO are lost");
        Ok(elected)
    }
}
