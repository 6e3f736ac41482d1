//! Governance events as both surfaces serve them, built from stored event rows.
use std::collections::BTreeMap;

use poem_openapi::Object;

use crate::api::views::{
    citation::{Citation, citation, event_citation, fields},
    item::{ItemRef, item_ref},
};
use crate::contract::events::EventKind;
use crate::contract::time::Timestamp;
use crate::contract::vocabulary::ItemKind;
use crate::contract::vocabulary::SourceKind;
use crate::store::events::EventRow;
use crate::store::keys;

/// A dated governance event: what happened, to which item, by whom, and where it is recorded.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct GovernanceEvent {
    /// The event's public id: `ev_` and 22 URL-safe characters derived from what the event is (its
    /// DAO, subject and kind, and for a vote its voter), so the same event has the same id across
    /// publications, after a re-import and on every store; deduplicate feeds by it.
    pub id: String,
    pub kind: EventKind,
    pub dao_id: String,
    /// When it happened (RFC 3339 UTC, milliseconds).
    pub occurred_at: Timestamp,
    /// The item the event is about: a proposal or a forum topic.
    pub subject: ItemRef,
    /// Who acted: the author (created), the voter (vote_cast), the topic's author. Lowercase 0x
    /// address for on-chain identities.
    pub actor: Option<String>,
    /// One line for a reader.
    pub summary: String,
    /// Where the event is recorded upstream.
    pub citation: Citation,
    /// Event-specific exact values, all strings: `votingPower` and `choice` (vote_cast, exactly as
    /// received), `state`, `scoresTotal`, `quorum`, `upstreamVotes`, `topChoicePct`
    /// (proposal_closed), `votingType` (proposal_created), `timeBasis` = `state_observed` when the
    /// time is when the state was observed rather than the transaction's.
    pub details: BTreeMap<String, String>,
}

impl poem_openapi::types::Example for GovernanceEvent {
    fn example() -> Self {
        let details = BTreeMap::from([
            ("votingPower".to_owned(), "2755022.0714428956".to_owned()),
            ("choice".to_owned(), "1".to_owned()),
            ("scoresTotal".to_owned(), "64266592.58089078".to_owned()),
        ]);
        let id = "0x04d6219c392f3f6187779f609d6cad21e3b3d6091809355ad12ba6bb39b55834";
        let url = format!("https://snapshot.box/#/s:arbitrumfoundation.eth/proposal/{id}");
        Self {
            id: "ev_3kq9VZrT0bq1yH7mX2cLsw".to_owned(),
            kind: EventKind::VoteCast,
            dao_id: "arbitrum".to_owned(),
            occurred_at: Timestamp::known("2026-03-27T00:00:00.000Z"),
            subject: ItemRef {
                kind: ItemKind::Proposal,
                dao_id: "arbitrum".to_owned(),
                source: SourceKind::Snapshot.as_str().to_owned(),
                external_id: id.to_owned(),
                key: Some("p_3Zb1X9kq0m4V2nR7sT8uWw".to_owned()),
                title: Some("[Constitutional] AIP: ArbOS 60 Elara".to_owned()),
                url: Some(url.clone()),
            },
            actor: Some("0xb4c064f466931b8d0f637654c916e3f203c46f13".to_owned()),
            summary: "Notable vote by 0xb4c064f466931b8d0f637654c916e3f203c46f13 with 2755022.0714428956 voting power \
                      on \"[Constitutional] AIP: ArbOS 60 Elara\""
                .to_owned(),
            citation: Citation {
                url: Some(url),
                snapshot_id: Some(id.to_owned()),
                ..citation(SourceKind::Snapshot.as_str(), fields(&["occurredAt", "actor", "details"]))
            },
            details,
        }
    }
}

/// One line describing an event, for a reader.
pub(crate) fn event_summary(
    kind: EventKind,
    title: Option<&str>,
    actor: Option<&str>,
    details: &BTreeMap<String, String>,
) -> String {
    let subject = title.map_or_else(|| "an item".to_owned(), |t| format!("\"{t}\""));
    let by = actor.map(|a| format!(" by {a}")).unwrap_or_default();
    match kind {
        EventKind::ProposalCreated => format!("Proposal {subject} created{by}"),
        EventKind::VotingStarted => format!("Voting opened on {subject}"),
        EventKind::VoteCast => match details.get("votingPower") {
            Some(vp) => format!("Notable vote{by} with {vp} voting power on {subject}"),
            None => format!("Notable vote{by} on {subject}"),
        },
        EventKind::ProposalClosed => match details.get("state") {
            Some(state) => format!("Voting closed on {subject} (state: {state})"),
            None => format!("Voting closed on {subject}"),
        },
        EventKind::ProposalQueued => format!("Proposal {subject} queued"),
        EventKind::ProposalExecuted => format!("Proposal {subject} executed"),
        EventKind::ProposalCanceled => format!("Proposal {subject} canceled"),
        EventKind::ForumTopicCreated => format!("Forum topic {subject} opened{by}"),
        EventKind::DelegationChanged => format!("Delegation changed{by}"),
    }
}

/// A stored event as served.
pub(crate) fn event_from_row(r: EventRow) -> GovernanceEvent {
    let kind = r.kind;
    let details = r.details_map();
    let subject = item_ref(
        r.subject_kind,
        &r.dao_id,
        r.subject_source,
        &r.subject_external_id,
        r.subject_key,
        r.subject_title,
        r.subject_url,
    );
    GovernanceEvent {
        id: keys::event_id(&r.natural_key),
        kind,
        summary: event_summary(kind, subject.title.as_deref(), r.actor.as_deref(), &details),
        dao_id: r.dao_id,
        occurred_at: Timestamp::from_ms(r.occurred_ms),
        citation: event_citation(
            r.subject_source,
            r.url,
            r.snapshot_id,
            r.tx_hash,
            r.block_number,
            r.actor.is_some(),
            !details.is_empty(),
        ),
        subject,
        actor: r.actor,
        details,
    }
}
