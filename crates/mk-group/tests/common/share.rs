//! Share-group helpers: a stand-in for the data path (a partition's batches
//! as spans, read from an offset the way mk-cluster reads them) and the
//! calls of a share consumer.

use super::Fixture;
use mk_core::TopicPartition;
use mk_group::share::{
    AckBatch, AckType, FetchedSpan, PartitionRead, ShareBounds, ShareFetchPlan, ShareFetchRequest,
    ShareFetched,
};
use mk_group::{ShareHeartbeat, ShareHeartbeatAnswer};
use std::collections::BTreeMap;

/// The batches of some partitions, as the data path would read them.
#[derive(Debug, Clone, Default)]
pub struct FakeLog {
    pub batches: BTreeMap<TopicPartition, Vec<FetchedSpan>>,
    /// How many batches one read returns at most.
    pub batches_per_read: usize,
}

impl FakeLog {
    pub fn new() -> Self {
        Self {
            batches: BTreeMap::new(),
            batches_per_read: 1000,
        }
    }

    /// Appends a batch of `n` records (deliverable or not) to `tp`.
    pub fn append(&mut self, tp: &TopicPartition, n: i64, deliverable: bool) {
        let spans = self.batches.entry(tp.clone()).or_default();
        let first = spans.last().map_or(0, |s| s.last + 1);
        spans.push(FetchedSpan {
            first,
            last: first + n - 1,
            deliverable,
        });
    }

    /// Appends records after a gap of `gap` offsets (compaction removed
    /// them).
    pub fn append_after_gap(&mut self, tp: &TopicPartition, gap: i64, n: i64) {
        let spans = self.batches.entry(tp.clone()).or_default();
        let first = spans.last().map_or(0, |s| s.last + 1) + gap;
        spans.push(FetchedSpan {
            first,
            last: first + n - 1,
            deliverable: true,
        });
    }

    pub fn end(&self, tp: &TopicPartition) -> i64 {
        self.batches
            .get(tp)
            .and_then(|s| s.last())
            .map_or(0, |s| s.last + 1)
    }

    /// Log start 0 and the fetchable end of every partition.
    pub fn bounds(&self) -> BTreeMap<TopicPartition, ShareBounds> {
        self.batches
            .keys()
            .map(|tp| (tp.clone(), ShareBounds::new(0, self.end(tp))))
            .collect()
    }

    /// Reads a plan's partitions, each from its offset.
    pub fn read(&self, plan: &ShareFetchPlan) -> Vec<PartitionRead> {
        plan.reads
            .iter()
            .map(|(tp, from)| {
                let spans: Vec<FetchedSpan> = self.batches[tp]
                    .iter()
                    .filter(|s| s.last >= *from)
                    .take(self.batches_per_read)
                    .copied()
                    .collect();
                let read_end = spans.last().map_or(*from, |s| s.last + 1);
                PartitionRead {
                    partition: tp.clone(),
                    spans,
                    read_end,
                }
            })
            .collect()
    }
}

pub fn share_join(
    f: &mut Fixture,
    group: &str,
    member: &str,
    topics: &[&str],
) -> ShareHeartbeatAnswer {
    let hb = ShareHeartbeat {
        group_id: group.into(),
        member_id: member.into(),
        member_epoch: 0,
        subscribed_topic_names: Some(topics.iter().map(|t| t.to_string()).collect()),
        client_id: "share-client".into(),
        client_host: "/127.0.0.1".into(),
        ..ShareHeartbeat::default()
    };
    let (c, meta) = f.parts();
    c.share_heartbeat(hb, meta).expect("share join")
}

/// `member` leaves share group `group`: the final heartbeat epoch, -1.
pub fn share_leave(
    f: &mut Fixture,
    group: &str,
    member: &str,
) -> mk_group::Result<ShareHeartbeatAnswer> {
    let hb = ShareHeartbeat {
        group_id: group.into(),
        member_id: member.into(),
        member_epoch: -1,
        ..ShareHeartbeat::default()
    };
    let (c, meta) = f.parts();
    c.share_heartbeat(hb, meta)
}

/// One accept/release/reject for a whole range.
pub fn ack(first: i64, last: i64, ty: AckType) -> AckBatch {
    AckBatch {
        first,
        last,
        types: vec![ty],
    }
}

/// A share consumer: its member id and share session epoch.
pub struct ShareClient {
    pub group: String,
    pub member: String,
    pub epoch: i32,
}

impl ShareClient {
    pub fn new(group: &str, member: &str) -> Self {
        Self {
            group: group.into(),
            member: member.into(),
            epoch: 0,
        }
    }

    fn request(
        &self,
        partitions: &[TopicPartition],
        acks: Vec<(TopicPartition, Vec<AckBatch>)>,
    ) -> ShareFetchRequest {
        ShareFetchRequest {
            group_id: self.group.clone(),
            member_id: self.member.clone(),
            session_epoch: self.epoch,
            partitions: partitions.to_vec(),
            forgotten: Vec::new(),
            acks,
        }
    }

    fn next_epoch(&mut self) {
        self.epoch = if self.epoch < 0 { 0 } else { self.epoch + 1 };
    }

    /// A ShareFetch: plan, read, acquire. Returns the plan (with the
    /// acknowledgement results) and what was acquired.
    pub fn fetch(
        &mut self,
        f: &mut Fixture,
        log: &FakeLog,
        partitions: &[TopicPartition],
        acks: Vec<(TopicPartition, Vec<AckBatch>)>,
        max_records: usize,
    ) -> mk_group::Result<(ShareFetchPlan, Vec<ShareFetched>)> {
        let req = self.request(partitions, acks);
        let plan = f.c().share_fetch_plan(&req, &log.bounds())?;
        self.next_epoch();
        let reads = log.read(&plan);
        let got = f
            .c()
            .share_fetch_acquire(&self.group, &self.member, &reads, max_records)?;
        Ok((plan, got))
    }

    /// A ShareAcknowledge.
    pub fn acknowledge(
        &mut self,
        f: &mut Fixture,
        acks: Vec<(TopicPartition, Vec<AckBatch>)>,
    ) -> mk_group::Result<Vec<(TopicPartition, mk_group::Result<()>)>> {
        let req = self.request(&[], acks);
        let r = f.c().share_acknowledge(&req)?;
        self.next_epoch();
        Ok(r)
    }

    /// The last request: acknowledges and closes the session.
    pub fn close(
        &mut self,
        f: &mut Fixture,
        acks: Vec<(TopicPartition, Vec<AckBatch>)>,
    ) -> mk_group::Result<Vec<(TopicPartition, mk_group::Result<()>)>> {
        self.epoch = -1;
        let req = self.request(&[], acks);
        f.c().share_acknowledge(&req)
    }
}
