//! References to items (proposals and forum topics) that events, signals and other items name.
use poem_openapi::Object;

use crate::contract::vocabulary::{ItemKind, SourceKind};
use crate::store::entities::{forum_topic, proposal};

/// The item an event, signal or activity entry is about.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct ItemRef {
    pub kind: ItemKind,
    pub dao_id: String,
    /// `snapshot` or `onchain` for proposals, `discourse` for forum topics.
    pub source: String,
    /// The upstream id (v1 addresses items by kind + externalId).
    pub external_id: String,
    /// The opaque v2 key (`proposalKey` or `topicKey`).
    pub key: Option<String>,
    pub title: Option<String>,
    /// Where a person or agent can open the item upstream.
    pub url: Option<String>,
}

/// The subject of an event or signal row.
pub(crate) fn item_ref(
    kind: ItemKind,
    dao_id: &str,
    source: SourceKind,
    external_id: &str,
    key: Option<String>,
    title: Option<String>,
    url: Option<String>,
) -> ItemRef {
    ItemRef {
        kind,
        dao_id: dao_id.to_owned(),
        source: source.as_str().to_owned(),
        external_id: external_id.to_owned(),
        key,
        title,
        url,
    }
}

/// A reference to a proposal.
pub fn proposal_ref(p: &proposal::Model) -> ItemRef {
    ItemRef {
        kind: ItemKind::Proposal,
        dao_id: p.dao_id.clone(),
        source: p.source.as_str().to_owned(),
        external_id: p.external_id.clone(),
        key: Some(p.proposal_key.clone()),
        title: Some(p.title.clone()),
        url: p.url.clone(),
    }
}

/// A reference to a forum topic.
pub fn topic_ref(t: &forum_topic::Model) -> ItemRef {
    ItemRef {
        kind: ItemKind::ForumTopic,
        dao_id: t.dao_id.clone(),
        source: SourceKind::Discourse.as_str().to_owned(),
        external_id: t.external_id.clone(),
        key: Some(t.topic_key.clone()),
        title: Some(t.title.clone()),
        url: Some(t.url.clone()),
    }
}
