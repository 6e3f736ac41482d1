//! Feed entries as `/v2/feed` shows them: the event, signal, delegation change or proposal
//! moment as the revision that changed it published it.
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use poem_openapi::{Object, types::ToJSON};
use sea_orm::{ConnectionTrait, DatabaseConnection};

use crate::api::views::{
    delegation::{DelegationChange, change_item},
    event::{GovernanceEvent, event_from_row},
    signal::Signal,
};
use crate::contract::errors::Problem;
use crate::contract::feed::{FeedKind, horizon_text};
use crate::contract::time::Timestamp;
use crate::contract::vocabulary::ProposalSource;
use crate::push::dispatch::RenderEntries;
use crate::push::hub::{Frame, RenderFrames};
use crate::store::feed::{FeedBody, FeedRecord};
use crate::store::moments::MomentRecord;

/// One change, as published: a governance event (new, or corrected upstream), a signal raised,
/// changed or cleared, a notable delegation change, or a proposal's moment (a voting deadline
/// near or passed, its quorum reached, its ETA passed).
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
    /// The proposal and the moment the entry marks, for `voting_ends_soon`, `voting_ended`,
    /// `quorum_reached` and `proposal_executable`.
    pub moment: Option<ProposalMoment>,
}

/// A proposal's moment: a voting deadline near or passed, its quorum reached, its ETA passed.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct ProposalMoment {
    /// The proposal (`GET /v2/proposals/{proposalKey}`).
    pub proposal_key: String,
    pub source: ProposalSource,
    /// The proposal's id at its source (a Snapshot id, or the governor's proposal id).
    pub external_id: String,
    pub title: String,
    /// The proposal at its source (Snapshot, Tally, a block explorer), where known.
    pub url: Option<String>,
    /// The moment the entry marks (RFC 3339 UTC): the voting end minus the horizon (not before
    /// the voting start), the voting end, the publication that counted the quorum reached, or the
    /// ETA.
    pub at: Timestamp,
    /// When voting ends (RFC 3339 UTC).
    pub voting_ends_at: Option<Timestamp>,
    /// `voting_ends_soon`: how long before the end the entry is due (ISO 8601: {{VOTING_ENDS_SOON_HORIZONS}}).
    pub horizon: Option<String>,
    /// `quorum_reached`: the quorum, exact, in the proposal's voting-power unit.
    pub quorum: Option<String>,
    /// `quorum_reached`: the votes that count toward the quorum as the counting mode counts, exact.
    pub quorum_votes: Option<String>,
    /// `proposal_executable`: the ETA as the governor's `ProposalQueued` carried it (seconds, exact).
    pub eta: Option<String>,
    /// `proposal_executable`: from when it can be executed (RFC 3339 UTC).
    pub executable_at: Option<Timestamp>,
}

impl ProposalMoment {
    fn of(kind: FeedKind, m: MomentRecord) -> Self {
        Self {
            proposal_key: m.proposal_key,
            source: m.source,
            external_id: m.external_id,
            title: m.title,
            url: m.url,
            at: Timestamp::from_ms(m.at_ms),
            voting_ends_at: m.end_ms.map(Timestamp::from_ms),
            horizon: m.horizon_s.and_then(|s| u64::try_from(s).ok()).map(|s| horizon_text(Duration::from_secs(s))),
            quorum: m.quorum,
            quorum_votes: m.quorum_votes,
            eta: m.eta,
            executable_at: (kind == FeedKind::ProposalExecutable).then(|| Timestamp::from_ms(m.at_ms)),
        }
    }
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
                moment: None,
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
                FeedBody::Moment { moment } => {
                    heads.push(Self { moment: Some(ProposalMoment::of(r.kind, moment)), ..head });
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
            let heads: Vec<(i64, _)> = records.iter().map(|r| (r.seq, r.subjects.clone())).collect();
            let entries = FeedEntry::from_records(&db, records).await?;
            Ok(heads
                .into_iter()
                .zip(entries)
                .map(|((seq, subjects), e)| Frame::new(seq, e.dao_id.clone(), e.kind, subjects, &e.to_json_string()))
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
            moment: None,
        }
    }
}
