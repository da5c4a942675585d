//! Topics described a page at a time (Kafka's DescribeTopicPartitions,
//! KIP-966): the topics asked for (or all of them) in name order, their
//! partitions from a cursor on, until a budget of partitions is spent; the
//! page ends with the cursor of the next partition when any is left.

use crate::error::{ClusterError, Result, TopicError};
use crate::metadata::TopicId;
use crate::topics::{PartitionInfo, Topics};
use mk_core::ErrorCode;

/// The most partitions one page holds, whatever the client asks (Kafka's
/// `max.request.partition.size.limit` default).
pub const MAX_PAGE_PARTITIONS: usize = 2000;

/// Where a page starts or the next one would: a topic and a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicCursor {
    pub topic: String,
    pub partition: u32,
}

/// One topic of a page.
#[derive(Debug)]
pub enum PagedTopic {
    /// An existing topic with the page's share of its partitions
    /// (ascending; possibly none, when the cursor is past its last one).
    Found {
        name: String,
        topic_id: TopicId,
        partitions: Vec<PartitionInfo>,
    },
    /// A topic asked for by name that cannot be described (unknown, or an
    /// invalid name).
    Failed { name: String, error: ClusterError },
}

/// A page of topics.
#[derive(Debug)]
pub struct TopicPage {
    pub topics: Vec<PagedTopic>,
    /// Where the next page starts; `None` when this one ends the listing.
    pub next: Option<TopicCursor>,
}

impl Topics<'_> {
    /// The names a page may hold, sorted and once each: `names` (or every
    /// topic) from the cursor's topic on.
    fn page_topics(
        self,
        names: Option<&[String]>,
        cursor: Option<&TopicCursor>,
    ) -> Result<Vec<String>> {
        let from = cursor.map_or("", |c| c.topic.as_str());
        let mut wanted: Vec<String> = match names {
            None => self.list()?,
            Some(names) => {
                if let Some(c) = cursor
                    && !names.contains(&c.topic)
                {
                    return Err(ClusterError::InvalidRequest(format!(
                        "the cursor's topic {:?} is not among the topics asked for",
                        c.topic
                    )));
                }
                names.to_vec()
            }
        };
        wanted.retain(|n| n.as_str() >= from);
        wanted.sort();
        wanted.dedup();
        Ok(wanted)
    }

    /// One page: the topics `names` (all existing ones when `None`, the
    /// missing ones then silently left out), in name order, from `cursor`
    /// on (topics before its topic are skipped; its topic starts at its
    /// partition), holding at most `limit` partitions (clamped to
    /// 1..=`MAX_PAGE_PARTITIONS`). A cursor whose topic is not among
    /// `names` is INVALID_REQUEST.
    pub fn describe_page(
        self,
        names: Option<&[String]>,
        cursor: Option<&TopicCursor>,
        limit: i64,
    ) -> Result<TopicPage> {
        let wanted = self.page_topics(names, cursor)?;
        let mut remaining = usize::try_from(limit)
            .unwrap_or(1)
            .clamp(1, MAX_PAGE_PARTITIONS);
        let mut page = TopicPage {
            topics: Vec::new(),
            next: None,
        };
        for name in wanted {
            if remaining == 0 {
                page.next = Some(TopicCursor {
                    topic: name,
                    partition: 0,
                });
                break;
            }
            let described = mk_core::validate_topic_name(&name)
                .map_err(|e| ClusterError::from(TopicError::InvalidName(e)))
                .and_then(|()| Ok((self.describe(&name)?, self.id(&name)?)));
            let (d, topic_id) = match described {
                Ok(found) => found,
                Err(error) if !is_topic_error(&error) => return Err(error),
                Err(error) if names.is_some() => {
                    page.topics.push(PagedTopic::Failed { name, error });
                    continue;
                }
                // Deleted since the listing: left out.
                Err(_) => continue,
            };
            let start = match cursor {
                Some(c) if c.topic == name => c.partition,
                _ => 0,
            };
            let partitions: Vec<PartitionInfo> = d
                .partitions
                .into_iter()
                .filter(|p| p.partition >= start)
                .collect();
            let total = partitions.len();
            let partitions: Vec<PartitionInfo> = partitions.into_iter().take(remaining).collect();
            remaining -= partitions.len();
            let next = (partitions.len() < total).then(|| TopicCursor {
                topic: name.clone(),
                partition: partitions.last().map_or(start, |p| p.partition + 1),
            });
            page.topics.push(PagedTopic::Found {
                name,
                topic_id,
                partitions,
            });
            if next.is_some() {
                page.next = next;
                break;
            }
        }
        Ok(page)
    }
}

/// An error about the one topic (it does not exist, or cannot), not about
/// the cluster.
fn is_topic_error(e: &ClusterError) -> bool {
    matches!(e.code(), ErrorCode::UnknownTopic | ErrorCode::InvalidTopic)
}
