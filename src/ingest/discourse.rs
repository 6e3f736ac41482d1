//! Discourse forums: the latest topics (of the configured categories, or of the whole forum) and
//! each changed topic with all its posts.
//!
//! Topic lists are read newest-bumped first (`/latest.json?page=N`, `/c/{id}.json?page=N`) until a
//! page holds nothing bumped since the last run. `/t/{id}.json` inlines only the first 20 posts;
//! the rest are fetched by id from `post_stream.stream` (`/t/{id}/posts.json?post_ids[]=…`). A
//! topic is linked to the proposals its posts cite (Snapshot and Tally URLs).
use std::collections::{BTreeMap, HashSet};

use anyhow::Context;
use serde::Deserialize;

use super::registry::DiscourseSource;
use super::{Connector, Resume, Sink, Upstream};
use crate::contract::time::parse_rfc3339_ms;
use crate::contract::urls::{ProposalUrl, parse_url};
use crate::contract::vocabulary::ProposalSource;
use crate::store::apply::Watermark;
use crate::store::publish::now_ms;
use crate::store::staging::{PostRecord, ProposalRef, Record, TopicRecord};

/// Topic-list pages read per category and run at most.
pub const MAX_LIST_PAGES: u32 = 20;
/// Post ids per `/t/{id}/posts.json` request (Discourse's own chunk size).
pub const POSTS_PER_REQUEST: usize = 20;
use crate::contract::limits::lookup::EXCERPT_CHARS;

pub struct DiscourseConnector {
    pub upstream: Upstream,
    pub dao_id: String,
    pub source: DiscourseSource,
}

#[derive(Debug, Deserialize)]
struct TopicList {
    topic_list: TopicListInner,
}

#[derive(Debug, Deserialize)]
struct TopicListInner {
    #[serde(default)]
    topics: Vec<ListedTopic>,
    more_topics_url: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ListedTopic {
    id: i64,
    bumped_at: Option<String>,
    last_posted_at: Option<String>,
    created_at: String,
    #[serde(default)]
    pinned: bool,
}

#[derive(Debug, Deserialize)]
struct Topic {
    id: i64,
    title: String,
    slug: String,
    posts_count: i64,
    #[serde(default)]
    reply_count: i64,
    #[serde(default)]
    views: i64,
    #[serde(default)]
    like_count: i64,
    created_at: String,
    last_posted_at: Option<String>,
    #[serde(default)]
    closed: bool,
    #[serde(default)]
    archived: bool,
    category_id: Option<i64>,
    #[serde(default)]
    tags: Vec<Tag>,
    post_stream: PostStream,
}

/// A tag: a name, or `{name, …}` on newer forums.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Tag {
    Name(String),
    Object { name: String },
}

#[derive(Debug, Deserialize)]
struct PostStream {
    #[serde(default)]
    posts: Vec<Post>,
    #[serde(default)]
    stream: Vec<i64>,
}

#[derive(Debug, Deserialize)]
struct Posts {
    post_stream: PostStream,
}

#[derive(Debug, Clone, Deserialize)]
struct Post {
    id: i64,
    post_number: i64,
    username: Option<String>,
    #[serde(default)]
    cooked: String,
    created_at: String,
}

impl Connector for DiscourseConnector {
    async fn fetch(&self, resume: &Resume, sink: &mut Sink<'_>) -> anyhow::Result<Watermark> {
        let complete_to = now_ms();
        let since: i64 = resume.position.as_deref().and_then(|p| p.parse().ok()).unwrap_or(0);
        let mut newest = since;
        let lists: Vec<String> = if self.source.categories.is_empty() {
            vec![format!("{}/latest.json", self.base())]
        } else {
            self.source.categories.iter().map(|c| format!("{}/c/{c}.json", self.base())).collect()
        };
        let mut changed: Vec<i64> = Vec::new();
        let mut listed = HashSet::new();
        for list in lists {
            for page in 0..MAX_LIST_PAGES {
                let url = format!("{list}?page={page}");
                let body: TopicList = self.upstream.get_json(&url).await?;
                // The list is newest-bumped first: once a page reaches back to the last run, the
                // pages after it hold nothing new.
                let mut all_newer = true;
                for t in &body.topic_list.topics {
                    let bumped = t
                        .bumped_at
                        .as_deref()
                        .or(t.last_posted_at.as_deref())
                        .and_then(parse_rfc3339_ms)
                        .or_else(|| parse_rfc3339_ms(&t.created_at))
                        .with_context(|| format!("{url}: topic {} has no readable time", t.id))?;
                    newest = newest.max(bumped);
                    if bumped >= since && listed.insert(t.id) {
                        changed.push(t.id);
                    }
                    // Pinned topics sit on top whatever their age: they say nothing about the rest.
                    all_newer &= t.pinned || bumped > since;
                }
                let more = body.topic_list.more_topics_url.is_some() && !body.topic_list.topics.is_empty();
                if !more || !all_newer {
                    break;
                }
            }
        }
        for id in changed {
            let (topic, posts) = match self.topic(id, sink).await? {
                Some(read) => read,
                None => continue,
            };
            sink.push(Record::Topic(topic)).await?;
            for post in posts {
                sink.push(Record::Post(post)).await?;
            }
        }
        Ok(Watermark { data_as_of_ms: complete_to, position: Some(newest.to_string()) })
    }
}

impl DiscourseConnector {
    fn base(&self) -> &str {
        self.source.url.trim_end_matches('/')
    }

    /// A topic with every post of its stream; `None` (reported to `sink`) when the topic itself
    /// cannot be read. A post that cannot be read is reported and left out.
    async fn topic(&self, id: i64, sink: &mut Sink<'_>) -> anyhow::Result<Option<(TopicRecord, Vec<PostRecord>)>> {
        let url = format!("{}/t/{id}.json", self.base());
        let topic: Topic = self.upstream.get_json(&url).await?;
        let mut posts: BTreeMap<i64, Post> = topic.post_stream.posts.iter().map(|p| (p.id, p.clone())).collect();
        let missing: Vec<i64> = topic.post_stream.stream.iter().copied().filter(|p| !posts.contains_key(p)).collect();
        for chunk in missing.chunks(POSTS_PER_REQUEST) {
            let ids: Vec<String> = chunk.iter().map(|p| format!("post_ids[]={p}")).collect();
            let url = format!("{}/t/{id}/posts.json?{}", self.base(), ids.join("&"));
            let more: Posts = self.upstream.get_json(&url).await?;
            posts.extend(more.post_stream.posts.into_iter().map(|p| (p.id, p)));
        }
        let mut posts: Vec<Post> = posts.into_values().collect();
        posts.sort_by_key(|p| p.post_number);

        let mut links = Vec::new();
        for p in &posts {
            for href in hrefs(&p.cooked) {
                let link = match parse_url(&href) {
                    Some(ProposalUrl::Snapshot { id, .. }) => {
                        ProposalRef { source: ProposalSource::Snapshot, external_id: id }
                    }
                    Some(ProposalUrl::Tally { id, .. }) => {
                        ProposalRef { source: ProposalSource::Onchain, external_id: id }
                    }
                    _ => continue,
                };
                if !links.contains(&link) {
                    links.push(link);
                }
            }
        }
        let first = posts.iter().find(|p| p.post_number == 1);
        let Some(created_ms) = parse_rfc3339_ms(&topic.created_at) else {
            sink.skip(format!("{url}: created_at {:?} is not an RFC 3339 time", topic.created_at));
            return Ok(None);
        };
        let record = TopicRecord {
            dao_id: self.dao_id.clone(),
            external_id: topic.id.to_string(),
            url: format!("{}/t/{}/{}", self.base(), topic.slug, topic.id),
            title: topic.title,
            slug: topic.slug,
            category_id: topic.category_id,
            tags: Some(
                topic
                    .tags
                    .into_iter()
                    .map(|t| match t {
                        Tag::Name(n) | Tag::Object { name: n } => n,
                    })
                    .collect(),
            ),
            author: first.and_then(|p| p.username.clone()),
            posts_count: topic.posts_count,
            reply_count: topic.reply_count,
            views: topic.views,
            like_count: topic.like_count,
            excerpt: first.map(|p| excerpt(&p.cooked)).filter(|e| !e.is_empty()),
            created_ms,
            last_posted_ms: topic.last_posted_at.as_deref().and_then(parse_rfc3339_ms),
            closed: topic.closed,
            archived: topic.archived,
            proposal_links: links,
        };
        let mut records = Vec::with_capacity(posts.len());
        for p in posts {
            let Some(created_ms) = parse_rfc3339_ms(&p.created_at) else {
                sink.skip(format!("{url}: post {}: created_at {:?} is not an RFC 3339 time", p.id, p.created_at));
                continue;
            };
            records.push(PostRecord {
                dao_id: self.dao_id.clone(),
                topic_external_id: record.external_id.clone(),
                external_id: p.id.to_string(),
                post_number: p.post_number,
                author: p.username,
                created_ms,
                body: p.cooked,
            });
        }
        Ok(Some((record, records)))
    }
}

/// The `href` targets of a post's HTML, in order.
fn hrefs(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find("href=\"") {
        rest = &rest[at + 6..];
        let Some(end) = rest.find('"') else { break };
        found.push(rest[..end].replace("&amp;", "&"));
        rest = &rest[end..];
    }
    found
}

/// The text of the first post without markup or repeated whitespace, cut at the excerpt length
/// the API publishes (`…` marks a cut).
fn excerpt(html: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                text.push(' ');
            }
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    let words: Vec<&str> = text.split_whitespace().collect();
    let joined = words.join(" ").replace(" .", ".").replace(" ,", ",");
    let mut chars = joined.chars();
    let head: String = chars.by_ref().take(EXCERPT_CHARS).collect();
    if chars.next().is_some() { format!("{head}…") } else { head }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_excerpts_come_from_the_cooked_html() {
        let html = r#"<p>See <a href="https://snapshot.org/#/uniswapgovernance.eth/proposal/0xabc">the vote</a> and <a href="https://www.tally.xyz/gov/uniswap/proposal/42?a=1&amp;b=2">Tally</a>.</p>"#;
        assert_eq!(
            hrefs(html),
            vec![
                "https://snapshot.org/#/uniswapgovernance.eth/proposal/0xabc".to_owned(),
                "https://www.tally.xyz/gov/uniswap/proposal/42?a=1&b=2".to_owned()
            ]
        );
        assert_eq!(excerpt(html), "See the vote and Tally.");
        let long = format!("<p>{}</p>", "word ".repeat(200));
        let cut = excerpt(&long);
        assert!(cut.ends_with('…') && cut.chars().count() <= EXCERPT_CHARS + 1, "{cut}");
    }
}
