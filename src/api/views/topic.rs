//! Forum topics as both surfaces serve them.
use poem_openapi::Object;

use crate::api::views::{
    citation::Citation,
    item::{ItemRef, proposal_ref},
};
use crate::contract::limits::lookup::EXCERPT_CHARS;
use crate::contract::time::Timestamp;
use crate::contract::vocabulary::SourceKind;
use crate::store::entities::{forum_post, forum_topic, proposal};

/// A Discourse forum topic.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct ForumTopicItem {
    pub dao_id: String,
    /// Always `discourse`.
    pub source: String,
    /// The Discourse topic id.
    pub external_id: String,
    /// The opaque v2 key.
    pub topic_key: String,
    pub title: String,
    pub slug: String,
    pub url: String,
    /// Username of the author, when known.
    pub author: Option<String>,
    pub category_id: Option<String>,
    pub tags: Vec<String>,
    pub posts_count: String,
    pub reply_count: String,
    pub views: String,
    pub like_count: String,
    pub created_at: Timestamp,
    pub last_posted_at: Option<Timestamp>,
    pub closed: bool,
    pub archived: bool,
    /// The proposal the topic discusses, when linked.
    pub linked_proposal: Option<ItemRef>,
    /// The beginning of the opening post (at most {{EXCERPT_CHARS}} characters; `…` marks a cut).
    pub excerpt: Option<String>,
    /// Where each field comes from; `supports` names fields of this object.
    pub citations: Vec<Citation>,
}

impl poem_openapi::types::Example for ForumTopicItem {
    fn example() -> Self {
        let url = "https://gov.uniswap.org/t/temperature-check-protocol-fee-expansion/25000".to_owned();
        Self {
            dao_id: "uniswap".to_owned(),
            source: SourceKind::Discourse.as_str().to_owned(),
            external_id: "25000".to_owned(),
            topic_key: "t_Qm9yZ2VkRXhhbXBsZUtleQ".to_owned(),
            title: "Temperature Check: Protocol Fee Expansion".to_owned(),
            slug: "temperature-check-protocol-fee-expansion".to_owned(),
            url: url.clone(),
            author: Some("gfxlabs".to_owned()),
            category_id: Some("5".to_owned()),
            tags: vec!["fee-switch".to_owned()],
            posts_count: "42".to_owned(),
            reply_count: "40".to_owned(),
            views: "3100".to_owned(),
            like_count: "120".to_owned(),
            created_at: Timestamp::known("2026-02-10T15:04:05.000Z"),
            last_posted_at: Some(Timestamp::known("2026-02-18T09:00:00.000Z")),
            closed: false,
            archived: false,
            linked_proposal: None,
            excerpt: Some("This proposal extends the protocol fee to eight more chains…".to_owned()),
            citations: vec![Citation {
                supports: vec!["title".to_owned(), "postsCount".to_owned()],
                source: SourceKind::Discourse.as_str().to_owned(),
                url: Some(url),
                snapshot_id: None,
                ipfs: None,
                tx_hash: None,
                block_number: None,
                dataset: None,
            }],
        }
    }
}

/// The first `EXCERPT_CHARS` characters of `text`, `…` appended when cut.
fn excerpt(text: &str) -> String {
    let mut chars = text.trim().char_indices();
    match chars.nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", text.trim()[..cut].trim_end()),
        None => text.trim().to_owned(),
    }
}

impl ForumTopicItem {
    pub fn build(
        t: &forum_topic::Model,
        first_post: Option<&forum_post::Model>,
        linked: Option<&proposal::Model>,
    ) -> Self {
        let excerpt = first_post.map(|p| excerpt(&p.body)).or_else(|| t.excerpt.as_deref().map(excerpt));
        let fields = [
            ("title", true),
            ("slug", true),
            ("url", true),
            ("author", t.author.is_some()),
            ("categoryId", t.category_id.is_some()),
            ("tags", true),
            ("postsCount", true),
            ("replyCount", true),
            ("views", true),
            ("likeCount", true),
            ("createdAt", true),
            ("lastPostedAt", t.last_posted_ms.is_some()),
            ("closed", true),
            ("archived", true),
            ("excerpt", excerpt.is_some()),
            ("linkedProposal", linked.is_some()),
        ];
        let supports = fields.iter().filter(|(_, on)| *on).map(|(f, _)| (*f).to_owned()).collect();
        Self {
            dao_id: t.dao_id.clone(),
            source: SourceKind::Discourse.as_str().to_owned(),
            external_id: t.external_id.clone(),
            topic_key: t.topic_key.clone(),
            title: t.title.clone(),
            slug: t.slug.clone(),
            url: t.url.clone(),
            author: t.author.clone(),
            category_id: t.category_id.map(|c| c.to_string()),
            tags: t.tags.clone().unwrap_or_default().0,
            posts_count: t.posts_count.to_string(),
            reply_count: t.reply_count.to_string(),
            views: t.views.to_string(),
            like_count: t.like_count.to_string(),
            created_at: Timestamp::from_ms(t.created_ms),
            last_posted_at: t.last_posted_ms.map(Timestamp::from_ms),
            closed: t.closed,
            archived: t.archived,
            linked_proposal: linked.map(proposal_ref),
            excerpt,
            citations: vec![Citation {
                supports,
                source: SourceKind::Discourse.as_str().to_owned(),
                url: Some(t.url.clone()),
                snapshot_id: None,
                ipfs: None,
                tx_hash: None,
                block_number: None,
                dataset: None,
            }],
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn excerpts_cut_on_characters() {
        let long = "é".repeat(600);
        let e = super::excerpt(&long);
        assert_eq!(e.chars().count(), 501);
        assert!(e.ends_with('…'));
        assert_eq!(super::excerpt("  short  "), "short");
    }
}
