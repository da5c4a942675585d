//! What the process may still open: the soft `RLIMIT_NOFILE`, the file
//! descriptors open now, and the files a new partition keeps open. Topic
//! creation asks here before it touches the disk, so a creation that cannot
//! fit is refused whole instead of failing half-way with "Too many open
//! files".

use crate::error::{Result, TopicError};

/// Descriptors one replica keeps open for its life: its active segment.
/// Everything else a replica opens (closed segments while they are read,
/// index files, atomic store writes) is opened and closed by one call.
pub const FILES_PER_REPLICA: u64 = 1;

/// The soft limit on open files of this process, `None` when unlimited.
pub fn open_file_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

/// Descriptors open in this process right now (Linux `/proc/self/fd`;
/// `None` where that cannot be read).
pub fn open_files() -> Option<u64> {
    std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|d| d.count() as u64)
}

/// How many descriptors must stay free after a creation: for connections,
/// reads of closed segments and store writes. A tenth of the limit, at
/// least 64.
pub fn reserve(limit: u64) -> u64 {
    (limit / 10).max(64)
}

/// Refuses (INVALID_PARTITIONS, before anything is created) a creation of
/// `replicas` new replicas that would leave fewer than [`reserve`]
/// descriptors free under the soft limit.
pub fn check_room_for_replicas(replicas: u64, what: &str) -> Result<()> {
    let Some(limit) = open_file_limit() else {
        return Ok(());
    };
    // Where the count is unknown, a generous guess keeps the check useful.
    let open = open_files().unwrap_or(64);
    let needed = replicas.saturating_mul(FILES_PER_REPLICA);
    let free = limit.saturating_sub(open);
    let room = free.saturating_sub(reserve(limit));
    if needed > room {
        return Err(TopicError::OpenFileLimit {
            what: what.to_string(),
            needed,
            per_replica: FILES_PER_REPLICA,
            room,
            open,
            limit,
            reserved: reserve(limit),
        }
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_a_tenth_of_the_limit_and_at_least_64() {
        assert_eq!(reserve(100), 64);
        assert_eq!(reserve(1_024), 102);
        assert_eq!(reserve(1_000_000), 100_000);
    }

    #[test]
    fn a_creation_larger_than_the_limit_is_refused_and_a_small_one_fits() {
        let limit = open_file_limit().expect("tests run under a finite RLIMIT_NOFILE");
        let e = check_room_for_replicas(limit, "this creation").unwrap_err();
        assert_eq!(e.code(), mk_core::ErrorCode::InvalidPartitions, "{e}");
        assert!(e.to_string().contains("ulimit -n"), "{e}");
        check_room_for_replicas(1, "one replica").unwrap();
    }
}
