//! `forum_discussion_spike`: many posts on one forum topic within a sliding window. Detected at
//! the first moment the window holds enough posts.
use std::collections::VecDeque;

use super::{CitationRecord, Desired, Evidence, TopicInput, short_title};
use crate::contract::vocabulary::{ItemKind, SourceKind};
use crate::contract::{
    signals::{self as contract, SignalKind},
    time::rfc3339_ms,
};

/// The first moment a topic's posts (time, post number; in time order) reach the threshold
/// within the window: the indices of the window's first and last posts.
pub fn first_spike(posts: &[(i64, i64)]) -> Option<(usize, usize)> {
    let mut window: VecDeque<usize> = VecDeque::new();
    for (i, (t, _)) in posts.iter().enumerate() {
        window.push_back(i);
        while window.front().is_some_and(|&f| posts[f].0 < t - contract::FORUM_SPIKE_WINDOW_MS) {
            window.pop_front();
        }
        if window.len() as u64 >= contract::FORUM_SPIKE_MIN_POSTS {
            return Some((*window.front()?, i));
        }
    }
    None
}

/// The spike signal of `topic`, given all its posts (time, post number; in time order).
pub fn evaluate(topic: &TopicInput, posts: &[(i64, i64)]) -> Option<Desired> {
    let (first, last) = first_spike(posts)?;
    let (start_ms, end_ms) = (posts[first].0, posts[last].0);
    let in_window = last - first + 1;
    let hours = contract::FORUM_SPIKE_WINDOW_MS / 3_600_000;
    let evidence = Evidence {
        posts_in_window: Some(in_window.to_string()),
        window_start_ms: Some(start_ms),
        window_end_ms: Some(end_ms),
        topic_posts: Some(posts.len().to_string()),
        citations: vec![
            CitationRecord {
                supports: vec!["topicPosts".to_owned()],
                source: SourceKind::Discourse.as_str().to_owned(),
                url: Some(topic.url.clone()),
                snapshot_id: None,
                ipfs: None,
                tx_hash: None,
                block_number: None,
            },
            CitationRecord {
                supports: vec!["windowStart".to_owned(), "windowEnd".to_owned(), "postsInWindow".to_owned()],
                source: SourceKind::Discourse.as_str().to_owned(),
                url: Some(format!("{}/{}", topic.url.trim_end_matches('/'), posts[last].1)),
                snapshot_id: None,
                ipfs: None,
                tx_hash: None,
                block_number: None,
            },
        ],
        ..Default::default()
    };
    Some(Desired {
        natural_key: format!(
            "{}:{}:{}:{}",
            SignalKind::ForumDiscussionSpike.as_str(),
            topic.dao_id,
            SourceKind::Discourse.as_str(),
            topic.external_id
        ),
        kind: SignalKind::ForumDiscussionSpike,
        dao_id: topic.dao_id.clone(),
        subject_kind: ItemKind::ForumTopic,
        subject_source: SourceKind::Discourse,
        subject_external_id: topic.external_id.clone(),
        proposal_id: None,
        topic_id: Some(topic.id),
        detected_ms: end_ms,
        summary: format!(
            "Discussion spike on \"{}\": {in_window} posts within {hours} hours, from {} to {} (posts #{} to #{}).",
            short_title(&topic.title),
            rfc3339_ms(start_ms),
            rfc3339_ms(end_ms),
            posts[first].1,
            posts[last].1
        ),
        evidence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: i64 = contract::FORUM_SPIKE_WINDOW_MS;
    const N: i64 = contract::FORUM_SPIKE_MIN_POSTS as i64;

    /// `n` posts spread evenly over `span` ms from time 0, numbered from 1.
    fn spread(n: i64, span: i64) -> Vec<(i64, i64)> {
        (0..n).map(|i| (i * span / (n - 1), i + 1)).collect()
    }

    fn topic() -> TopicInput {
        TopicInput {
            id: 7,
            dao_id: "testdao".to_owned(),
            external_id: "123".to_owned(),
            title: "[synthetic] T".to_owned(),
            url: "https://forum.example/t/t/123".to_owned(),
        }
    }

    #[test]
    fn post_count_boundary() {
        // Exactly the threshold over exactly the window: fires at the last post.
        let posts = spread(N, WINDOW);
        assert_eq!(first_spike(&posts), Some((0, N as usize - 1)));
        // One post fewer: nothing.
        assert_eq!(first_spike(&posts[1..]), None);
        // One post more: fires at the threshold's post, not the last.
        assert_eq!(first_spike(&spread(N + 1, WINDOW)), Some((0, N as usize - 1)));
    }

    #[test]
    fn window_boundary() {
        // The same posts spread over the window plus 1 ms: nothing.
        let mut wide = spread(N, WINDOW);
        wide[N as usize - 1].0 = WINDOW + 1;
        assert_eq!(first_spike(&wide), None);
        // ...over the window less 1 ms: a spike.
        wide[N as usize - 1].0 = WINDOW - 1;
        assert_eq!(first_spike(&wide), Some((0, N as usize - 1)));
    }

    #[test]
    fn signal() {
        let posts = spread(N, WINDOW);
        let d = evaluate(&topic(), &posts).unwrap();
        assert_eq!(d.natural_key, "forum_discussion_spike:testdao:discourse:123");
        assert_eq!(d.detected_ms, WINDOW);
        assert_eq!(d.evidence.posts_in_window.as_deref(), Some("20"));
        assert_eq!(d.evidence.citations[1].url.as_deref(), Some("https://forum.example/t/t/123/20"));
        assert!(evaluate(&topic(), &posts[1..]).is_none());
    }
}
