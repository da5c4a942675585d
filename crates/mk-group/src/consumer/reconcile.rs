//! Incremental reconciliation (Kafka's `CurrentAssignmentBuilder`): moves a
//! member's current assignment one safe step towards its target. A
//! partition leaves a member first (the member reports it no longer owns
//! it), and only then can another member get it; until then the new owner
//! waits in UnreleasedPartitions. The epoch of a member that must revoke
//! stays where it is, so its commits of the old epoch stay valid while it
//! finishes its work.

use super::member::{ConsumerMember, MemberState};
use mk_core::TopicPartition;
use std::collections::BTreeSet;

/// What reconciliation works from besides the member itself.
pub(crate) struct Target<'a> {
    pub(crate) epoch: i32,
    pub(crate) partitions: &'a BTreeSet<TopicPartition>,
}

/// The member after one reconciliation step. `owned` is what the member
/// reported it owns (`None` when its heartbeat did not say), `held_by_other`
/// tells whether another member still holds a partition.
pub(crate) fn reconcile(
    member: &ConsumerMember,
    target: &Target<'_>,
    owned: Option<&BTreeSet<TopicPartition>>,
    held_by_other: &dyn Fn(&TopicPartition) -> bool,
) -> ConsumerMember {
    match member.state {
        MemberState::Stable if member.epoch == target.epoch => member.clone(),
        MemberState::Stable | MemberState::UnreleasedPartitions => {
            next_assignment(member, member.epoch, target, owned, held_by_other)
        }
        MemberState::UnrevokedPartitions => {
            if still_owns(owned, &member.revoking) {
                return member.clone();
            }
            next_assignment(member, member.epoch + 1, target, owned, held_by_other)
        }
    }
}

/// True unless the member reported an ownership without any of `revoking`.
fn still_owns(
    owned: Option<&BTreeSet<TopicPartition>>,
    revoking: &BTreeSet<TopicPartition>,
) -> bool {
    owned.is_none_or(|o| !o.is_disjoint(revoking))
}

/// Kafka's `computeNextAssignment`: keep what is in both the current and
/// the target assignment; what is only current must be revoked; what is
/// only in the target is added unless another member still holds it.
fn next_assignment(
    member: &ConsumerMember,
    revoking_epoch: i32,
    target: &Target<'_>,
    owned: Option<&BTreeSet<TopicPartition>>,
    held_by_other: &dyn Fn(&TopicPartition) -> bool,
) -> ConsumerMember {
    let kept: BTreeSet<TopicPartition> = member
        .assigned
        .intersection(target.partitions)
        .cloned()
        .collect();
    let revoking: BTreeSet<TopicPartition> = member.assigned.difference(&kept).cloned().collect();
    let (free, unreleased): (Vec<TopicPartition>, Vec<TopicPartition>) = target
        .partitions
        .difference(&kept)
        .cloned()
        .partition(|tp| !held_by_other(tp));
    let mut next = member.clone();
    next.revoking.clear();
    if !revoking.is_empty() && still_owns(owned, &revoking) {
        next.state = MemberState::UnrevokedPartitions;
        next.set_epoch(revoking_epoch);
        next.assigned = kept;
        next.revoking = revoking;
        return next;
    }
    next.set_epoch(target.epoch);
    next.assigned = kept;
    next.assigned.extend(free);
    next.state = if unreleased.is_empty() {
        MemberState::Stable
    } else {
        MemberState::UnreleasedPartitions
    };
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: u32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    fn set(ps: &[u32]) -> BTreeSet<TopicPartition> {
        ps.iter().map(|p| tp(*p)).collect()
    }

    fn member(epoch: i32, assigned: &[u32]) -> ConsumerMember {
        let mut m = ConsumerMember::new("m".into());
        m.epoch = epoch;
        m.assigned = set(assigned);
        m
    }

    #[test]
    fn a_partition_moving_away_is_revoked_first_at_the_old_epoch() {
        let m = member(3, &[0, 1]);
        let target = set(&[1, 2]);
        let t = Target {
            epoch: 4,
            partitions: &target,
        };
        let owned = set(&[0, 1]);
        let next = reconcile(&m, &t, Some(&owned), &|_| false);
        assert_eq!(next.state, MemberState::UnrevokedPartitions);
        assert_eq!(
            (next.epoch, next.assigned.clone(), next.revoking.clone()),
            (3, set(&[1]), set(&[0]))
        );
        // Still reporting partition 0: nothing moves.
        assert_eq!(reconcile(&next, &t, Some(&owned), &|_| false), next);
        assert_eq!(reconcile(&next, &t, None, &|_| false), next);
        // Partition 0 gone: the member reaches the target epoch; partition 2
        // is still held by another member.
        let after = reconcile(&next, &t, Some(&set(&[1])), &|p| *p == tp(2));
        assert_eq!(after.state, MemberState::UnreleasedPartitions);
        assert_eq!((after.epoch, after.assigned.clone()), (4, set(&[1])));
        assert!(after.revoking.is_empty());
        // Released: the member gets it and is Stable.
        let done = reconcile(&after, &t, Some(&set(&[1])), &|_| false);
        assert_eq!(done.state, MemberState::Stable);
        assert_eq!((done.epoch, done.assigned.clone()), (4, set(&[1, 2])));
        assert_eq!(done.previous_epoch, 3);
    }

    #[test]
    fn a_member_that_no_longer_reports_a_partition_skips_its_revocation() {
        // A rejoining member owns nothing: there is nothing to wait for.
        let m = member(3, &[0, 1]);
        let target = set(&[1]);
        let t = Target {
            epoch: 4,
            partitions: &target,
        };
        let next = reconcile(&m, &t, Some(&BTreeSet::new()), &|_| false);
        assert_eq!(next.state, MemberState::Stable);
        assert_eq!((next.epoch, next.assigned.clone()), (4, set(&[1])));
    }

    #[test]
    fn a_reconciled_member_is_left_alone() {
        let m = member(4, &[1]);
        let target = set(&[1, 2]);
        let t = Target {
            epoch: 4,
            partitions: &target,
        };
        assert_eq!(reconcile(&m, &t, None, &|_| false), m);
    }
}
