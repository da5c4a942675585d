//! The in-process Consumer (chapters 1 and 7): manual assignment or group
//! subscription, positions, committed offsets, `auto_offset_reset`, seek,
//! commit fenced by generation, lag, heartbeat and leave on close.

use mk_cluster::{
    AttachedClient, BrokerCluster, ClusterError, ConsumerRecord, ErrorCode, FetchRequest,
    Isolation, Result, TopicPartition,
};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Where a consumer starts when it has neither a position nor a committed
/// offset, and what it does when its position falls out of range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OffsetReset {
    /// The log start offset.
    #[default]
    Earliest,
    /// The high watermark.
    Latest,
    /// Fail with OFFSET_OUT_OF_RANGE.
    Error,
}

impl OffsetReset {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "earliest" => Ok(OffsetReset::Earliest),
            "latest" => Ok(OffsetReset::Latest),
            "error" | "none" => Ok(OffsetReset::Error),
            other => Err(ClusterError::InvalidRequest(format!(
                "auto_offset_reset must be earliest, latest or error, got {other:?}"
            ))),
        }
    }
}

/// Consumer settings.
#[derive(Debug, Clone, Default)]
pub struct ConsumerOptions {
    pub auto_offset_reset: OffsetReset,
    pub isolation: Isolation,
    /// The member id used when subscribing; generated if absent.
    pub member_id: Option<String>,
}

/// A record together with the partition it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolledRecord {
    pub tp: TopicPartition,
    pub record: ConsumerRecord,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    None,
    Assigned,
    Subscribed {
        topics: Vec<String>,
        generation: i32,
    },
}

#[derive(Debug)]
pub(crate) struct ConsumerState {
    mode: Mode,
    assignment: Vec<TopicPartition>,
    positions: BTreeMap<TopicPartition, i64>,
    closed: bool,
}

#[derive(Debug)]
pub(crate) struct ConsumerShared {
    cluster: Arc<BrokerCluster>,
    group_id: String,
    member_id: String,
    options: ConsumerOptions,
    pub(crate) state: Mutex<ConsumerState>,
}

/// The in-process consumer.
#[derive(Debug)]
pub struct Consumer {
    shared: Arc<ConsumerShared>,
}

impl Consumer {
    pub(crate) fn new(
        cluster: Arc<BrokerCluster>,
        group_id: &str,
        options: ConsumerOptions,
    ) -> Result<Self> {
        cluster.lifecycle().check_running()?;
        if group_id.is_empty() {
            return Err(ClusterError::InvalidRequest(
                "group_id must not be empty".into(),
            ));
        }
        let member_id = options.member_id.clone().unwrap_or_else(|| {
            format!(
                "{group_id}-member-{}",
                cluster.groups().next_member_number()
            )
        });
        let shared = Arc::new(ConsumerShared {
            cluster: cluster.clone(),
            group_id: group_id.to_string(),
            member_id,
            options,
            state: Mutex::new(ConsumerState {
                mode: Mode::None,
                assignment: Vec::new(),
                positions: BTreeMap::new(),
                closed: false,
            }),
        });
        let attached: Arc<dyn AttachedClient> = shared.clone();
        cluster
            .lifecycle()
            .attach_consumer(Arc::downgrade(&attached));
        Ok(Self { shared })
    }

    pub fn group_id(&self) -> &str {
        &self.shared.group_id
    }

    pub fn member_id(&self) -> &str {
        &self.shared.member_id
    }

    fn state(&self) -> Result<std::sync::MutexGuard<'_, ConsumerState>> {
        let st = self.shared.state.lock().expect("consumer lock");
        if st.closed {
            return Err(ClusterError::InvalidRequest(
                "the consumer is closed".into(),
            ));
        }
        Ok(st)
    }

    fn cluster(&self) -> &BrokerCluster {
        &self.shared.cluster
    }

    /// Assigns partitions by hand (not allowed after subscribe).
    pub fn assign(&self, partitions: &[TopicPartition]) -> Result<()> {
        let mut st = self.state()?;
        if matches!(st.mode, Mode::Subscribed { .. }) {
            return Err(ClusterError::InvalidRequest(
                "assign is not allowed after subscribe".into(),
            ));
        }
        for tp in partitions {
            self.cluster().topics().check_partition(tp)?;
        }
        st.mode = Mode::Assigned;
        st.assignment = partitions.to_vec();
        st.assignment.sort();
        st.assignment.dedup();
        let keep = st.assignment.clone();
        st.positions.retain(|tp, _| keep.contains(tp));
        Ok(())
    }

    /// Subscribes through the group: joins as a member whose partitions the
    /// coordinator assigns (a new generation, unless the member re-joins
    /// with unchanged topics) and takes the assignment of this member.
    pub fn subscribe(&self, topics: &[&str]) -> Result<Vec<TopicPartition>> {
        let mut st = self.state()?;
        if st.mode == Mode::Assigned {
            return Err(ClusterError::InvalidRequest(
                "subscribe is not allowed after assign".into(),
            ));
        }
        let topics: Vec<String> = topics.iter().map(|t| t.to_string()).collect();
        let a =
            self.cluster()
                .groups()
                .join(&self.shared.group_id, &self.shared.member_id, &topics)?;
        st.mode = Mode::Subscribed {
            topics,
            generation: a.generation,
        };
        apply_assignment(&mut st, a.partitions.clone());
        Ok(a.partitions)
    }

    /// Picks up a newer generation's assignment. Until this is called a
    /// member keeps its old local view (the model has no revoke barrier);
    /// its stale commits are fenced by generation.
    pub fn refresh_assignment(&self) -> Result<Vec<TopicPartition>> {
        let mut st = self.state()?;
        let Mode::Subscribed { topics, generation } = st.mode.clone() else {
            return Ok(st.assignment.clone());
        };
        let a = match self
            .cluster()
            .groups()
            .assignment(&self.shared.group_id, &self.shared.member_id)
        {
            Ok(a) => a,
            Err(e) if e.code() == ErrorCode::UnknownMember => {
                // Expired or removed: join again, like a Kafka consumer.
                self.cluster().groups().join(
                    &self.shared.group_id,
                    &self.shared.member_id,
                    &topics,
                )?
            }
            Err(e) => return Err(e),
        };
        if a.generation != generation {
            st.mode = Mode::Subscribed {
                topics,
                generation: a.generation,
            };
            apply_assignment(&mut st, a.partitions);
        }
        Ok(st.assignment.clone())
    }

    /// The generation this consumer believes in (subscribed only).
    pub fn generation(&self) -> Option<i32> {
        match self.shared.state.lock().expect("consumer lock").mode {
            Mode::Subscribed { generation, .. } => Some(generation),
            _ => None,
        }
    }

    pub fn assignment(&self) -> Vec<TopicPartition> {
        self.shared
            .state
            .lock()
            .expect("consumer lock")
            .assignment
            .clone()
    }

    /// Up to `max_records` records, partition by partition in assignment
    /// order, from each partition's position (else committed offset, else
    /// the reset policy).
    pub fn poll(&self, max_records: usize) -> Result<Vec<PolledRecord>> {
        let mut st = self.state()?;
        let mut out = Vec::new();
        for tp in st.assignment.clone() {
            if out.len() >= max_records {
                break;
            }
            let position = self.resolve_position(&mut st, &tp)?;
            let req = FetchRequest::new(tp.clone(), position, (max_records - out.len()) as i64)
                .with_isolation(self.shared.options.isolation);
            let result = match self.cluster().data().fetch(&req) {
                Ok(r) => r,
                Err(e) if e.code() == ErrorCode::OffsetOutOfRange => {
                    let reset = self.reset_offset(&tp)?;
                    st.positions.insert(tp.clone(), reset);
                    self.cluster().data().fetch(&FetchRequest {
                        offset: reset,
                        ..req
                    })?
                }
                Err(e) => return Err(e),
            };
            st.positions.insert(tp.clone(), result.next_offset);
            out.extend(result.records.into_iter().map(|record| PolledRecord {
                tp: tp.clone(),
                record,
            }));
        }
        Ok(out)
    }

    fn resolve_position(&self, st: &mut ConsumerState, tp: &TopicPartition) -> Result<i64> {
        if let Some(p) = st.positions.get(tp) {
            return Ok(*p);
        }
        let p = match self
            .cluster()
            .groups()
            .fetch_committed(&self.shared.group_id, tp)?
        {
            Some(c) => c,
            None => self.reset_offset(tp)?,
        };
        st.positions.insert(tp.clone(), p);
        Ok(p)
    }

    fn reset_offset(&self, tp: &TopicPartition) -> Result<i64> {
        match self.shared.options.auto_offset_reset {
            OffsetReset::Earliest => self.cluster().data().log_start_offset(tp),
            OffsetReset::Latest => self.cluster().data().visible_end(tp),
            OffsetReset::Error => Err(ClusterError::OffsetOutOfRange {
                offset: -1,
                log_start: self.cluster().data().log_start_offset(tp)?,
                log_end: self.cluster().data().log_end_offset(tp)?,
            }),
        }
    }

    /// The next offset this consumer will read from `tp`.
    pub fn position(&self, tp: &TopicPartition) -> Result<i64> {
        let mut st = self.state()?;
        if !st.assignment.contains(tp) {
            return Err(not_assigned(tp));
        }
        self.resolve_position(&mut st, tp)
    }

    /// Moves the position (the partition must be assigned; offset >= 0).
    pub fn seek(&self, tp: &TopicPartition, offset: i64) -> Result<()> {
        let mut st = self.state()?;
        if !st.assignment.contains(tp) {
            return Err(not_assigned(tp));
        }
        if offset < 0 {
            return Err(ClusterError::InvalidRequest(format!(
                "seek offset must be >= 0, got {offset}"
            )));
        }
        st.positions.insert(tp.clone(), offset);
        Ok(())
    }

    pub fn committed(&self, tp: &TopicPartition) -> Result<Option<i64>> {
        self.cluster()
            .groups()
            .fetch_committed(&self.shared.group_id, tp)
    }

    /// Commits the positions of the assigned partitions: with the
    /// generation when subscribed, plainly when assigned by hand.
    pub fn commit(&self) -> Result<()> {
        let st = self.state()?;
        let offsets: BTreeMap<TopicPartition, i64> = st
            .assignment
            .iter()
            .filter_map(|tp| st.positions.get(tp).map(|p| (tp.clone(), *p)))
            .collect();
        match &st.mode {
            Mode::Subscribed { generation, .. } => self.cluster().groups().commit_offsets(
                &self.shared.group_id,
                &self.shared.member_id,
                *generation,
                &offsets,
            ),
            _ => self
                .cluster()
                .groups()
                .commit_direct(&self.shared.group_id, &offsets),
        }
    }

    /// `max(0, HW - position)`.
    pub fn lag(&self, tp: &TopicPartition) -> Result<i64> {
        let position = self.position(tp)?;
        Ok((self.cluster().data().visible_end(tp)? - position).max(0))
    }

    /// Extends the session (subscribed only).
    pub fn heartbeat(&self) -> Result<()> {
        let st = self.state()?;
        match &st.mode {
            Mode::Subscribed { generation, .. } => self.cluster().groups().heartbeat(
                &self.shared.group_id,
                &self.shared.member_id,
                *generation,
            ),
            _ => Err(ClusterError::InvalidRequest(
                "heartbeat needs a subscribed consumer".into(),
            )),
        }
    }

    /// Leaves the group (if subscribed); the consumer is unusable after.
    pub fn close(&self) -> Result<()> {
        self.shared.leave()
    }
}

impl ConsumerShared {
    pub(crate) fn leave(&self) -> Result<()> {
        let mut st = self.state.lock().expect("consumer lock");
        if st.closed {
            return Ok(());
        }
        st.closed = true;
        if matches!(st.mode, Mode::Subscribed { .. }) {
            self.cluster
                .groups()
                .leave(&self.group_id, &self.member_id)?;
        }
        Ok(())
    }
}

impl AttachedClient for ConsumerShared {
    fn close_with_cluster(self: Arc<Self>) {
        // A consumer whose group call fails still counts as closed.
        let _ = self.leave();
    }

    /// A crash leaves the group as the broker sees it: the member expires.
    fn crash_with_cluster(&self) {}
}

fn apply_assignment(st: &mut ConsumerState, partitions: Vec<TopicPartition>) {
    st.positions.retain(|tp, _| partitions.contains(tp));
    st.assignment = partitions;
}

fn not_assigned(tp: &TopicPartition) -> ClusterError {
    ClusterError::InvalidRequest(format!("{tp} is not assigned to this consumer"))
}
