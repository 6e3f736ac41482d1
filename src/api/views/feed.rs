//! Feed entries as `/v2/feed` shows them: the event or signal as the revision that changed it
//! published it.
use std::sync::Arc;

use futures_util::future::BoxFuture;
use poem_openapi::{Object, types::ToJSON};
use sea_orm::{ConnectionTrait, DatabaseConnection};

use crate::api::views::{
    delegation::{DelegationChange, change_item},
    event::{GovernanceEvent, event_from_row},
    signal::Signal,
};
use crate::contract::errors::Problem;
use crate::contract::feed::FeedKind;
use crate::contract::time::Timestamp;
use crate::push::dispatch::RenderEntries;
use crate::push::hub::{Frame, RenderFrames};
use crate::store::feed::{FeedBody, FeedRecord};

/// One change, as published: a governance event (new, or corrected upstream) or a signal raised,
/// changed or cleared.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct FeedEntry {
    /// The entry's place in the feed, as an opaque string of digits that only grows: resume after
    /// it with `after`. Compare entries by it; do no arithmetic on it (sequences may skip numbers).
    pub sequence: String,
    pub kind: FeedKind,
    pub dao_id: String,
    /// The data revision that published the change.
    pub revision: i64,
    /// When that revision was published (RFC 3339 UTC, milliseconds).
    pub published_at: Timestamp,
    /// True when the event had been fed before and its facts were corrected upstream (a
    /// proposal's end moved, its final numbers changed): the same event `id` with new values.
    pub correction: bool,
    /// The event, for an event kind: as `/v2/events` shows it.
    pub event: Option<GovernanceEvent>,
    /// The signal, for `signal_raised`, `signal_changed` and `signal_cleared`: as `/v2/signals`
    /// shows it (a cleared signal as it last stood).
    pub signal: Option<Signal>,
    /// The delegation change, for `delegation_changed`: a holder moved at least
    /// {{NOTABLE_DELEGATION_PERCENT}}% of the token's supply, as
    /// `/v2/daos/{daoId}/notable-delegations` shows it.
    pub delegation: Option<DelegationChange>,
}

impl FeedEntry {
    /// The entries of `records`, in order. The signals' deciding voters are named at once.
    pub async fn from_records(db: &impl ConnectionTrait, records: Vec<FeedRecord>) -> Result<Vec<Self>, Problem> {
        let mut heads = Vec::with_capacity(records.len());
        let mut signals = Vec::new();
        let mut at = Vec::new();
        for r in records {
            let head = Self {
                sequence: r.seq.to_string(),
                kind: r.kind,
                dao_id: r.dao_id,
                revision: r.revision_id,
                published_at: Timestamp::from_ms(r.published_ms),
                correction: false,
                event: None,
                signal: None,
                delegation: None,
            };
            match r.body {
                FeedBody::Event { event, correction } => {
                    heads.push(Self { correction, event: Some(event_from_row(event)), ..head });
                }
                FeedBody::Signal { record } => {
                    signals.push(record);
                    at.push(heads.len());
                    heads.push(head);
                }
                FeedBody::Delegation { change } => {
                    heads.push(Self { delegation: Some(change_item(change)), ..head });
                }
            }
        }
        for (i, signal) in at.into_iter().zip(Signal::from_records(db, signals).await?) {
            heads[i].signal = Some(signal);
        }
        Ok(heads)
    }
}

/// Entries as the stream sends them: each an SSE frame whose `data` is the entry as `/v2/feed`
/// shows it.
struct StreamFrames;

impl RenderFrames for StreamFrames {
    fn render(
        &self,
        db: DatabaseConnection,
        records: Vec<FeedRecord>,
    ) -> BoxFuture<'static, Result<Vec<Frame>, Problem>> {
        Box::pin(async move {
            let seqs: Vec<i64> = records.iter().map(|r| r.seq).collect();
            let entries = FeedEntry::from_records(&db, records).await?;
            Ok(seqs
                .into_iter()
                .zip(entries)
                .map(|(seq, e)| Frame::new(seq, e.dao_id.clone(), e.kind, &e.to_json_string()))
                .collect())
        })
    }
}

/// How the edge's stream hub renders entries (`server` hands it over).
pub fn stream_frames() -> Arc<dyn RenderFrames> {
    Arc::new(StreamFrames)
}

/// Entries as webhooks deliver them: each the entry as `/v2/feed` shows it, as compact JSON.
struct WebhookEntries;

impl RenderEntries for WebhookEntries {
    fn render(
        &self,
        db: DatabaseConnection,
        records: Vec<FeedRecord>,
    ) -> BoxFuture<'static, Result<Vec<String>, Problem>> {
        Box::pin(async move {
            Ok(FeedEntry::from_records(&db, records).await?.iter().map(ToJSON::to_json_string).collect())
        })
    }
}

/// How the webhook sender renders entries (`server` hands it over).
pub fn webhook_entries() -> Arc<dyn RenderEntries> {
    Arc::new(WebhookEntries)
}

impl poem_openapi::types::Example for FeedEntry {
    fn example() -> Self {
        let event = <GovernanceEvent as poem_openapi::types::Example>::example();
        Self {
            sequence: "48213".to_owned(),
            kind: FeedKind::of_event(event.kind),
            dao_id: event.dao_id.clone(),
            revision: 912,
            published_at: Timestamp::known("2026-03-27T00:05:12.345Z"),
            correction: false,
            event: Some(event),
            signal: None,
            delegation: None,
        }
    }
}
