//! `GET /v1/governance-events`: dated governance events inside a window, for timelines and alerting.
use std::collections::BTreeMap;

use poem::web::Data;
use poem_openapi::{Object, OpenApi, param::Query, payload::Json};

use super::V1Tag;
use crate::api::{
    AppState,
    model::{Citation, ItemKind, ItemRef},
};
use crate::contract::{
    envelope::{V1Envelope, V1Page, V1Request},
    errors::ApiError,
    events::EventKind,
    limits::Events,
    operations::{EventsListV1 as Op, Operation},
    params::{V1EpochMs, V1Limit, V1Offset, resolve_v1_window},
    time::rfc3339_ms,
};
use crate::store::{
    self,
    events::{EventFilter, EventRow},
};

/// A dated governance event: what happened, to which item, by whom, and where it is recorded.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct GovernanceEvent {
    /// The event's id (a decimal string), stable across publications.
    pub id: String,
    pub kind: EventKind,
    pub dao_id: String,
    /// When it happened (RFC 3339 UTC, milliseconds).
    pub occurred_at: String,
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
            id: "1042".to_owned(),
            kind: EventKind::VoteCast,
            dao_id: "arbitrum".to_owned(),
            occurred_at: "2026-03-27T00:00:00.000Z".to_owned(),
            subject: ItemRef {
                kind: ItemKind::Proposal,
                dao_id: "arbitrum".to_owned(),
                source: "snapshot".to_owned(),
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
                supports: vec!["occurredAt".to_owned(), "actor".to_owned(), "details".to_owned()],
                source: "snapshot".to_owned(),
                url: Some(url),
                snapshot_id: Some(id.to_owned()),
                ipfs: None,
                tx_hash: None,
                block_number: None,
                dataset: None,
            },
            details,
        }
    }
}

/// The subject of an event or signal row. `None` for a subject kind items cannot address yet.
pub(crate) fn item_ref(
    subject_kind: &str,
    dao_id: &str,
    source: &str,
    external_id: &str,
    key: Option<String>,
    title: Option<String>,
    url: Option<String>,
) -> Option<ItemRef> {
    let kind = match subject_kind {
        "proposal" => ItemKind::Proposal,
        "forum_topic" => ItemKind::ForumTopic,
        _ => return None,
    };
    Some(ItemRef {
        kind,
        dao_id: dao_id.to_owned(),
        source: source.to_owned(),
        external_id: external_id.to_owned(),
        key,
        title,
        url,
    })
}

/// The citation of an event: the upstream record it was derived from.
pub(crate) fn event_citation(
    source: &str,
    url: Option<String>,
    snapshot_id: Option<String>,
    tx_hash: Option<String>,
    block_number: Option<i64>,
    has_actor: bool,
    has_details: bool,
) -> Citation {
    let mut supports = vec!["occurredAt".to_owned()];
    if has_actor {
        supports.push("actor".to_owned());
    }
    if has_details {
        supports.push("details".to_owned());
    }
    Citation {
        supports,
        source: source.to_owned(),
        url,
        snapshot_id,
        ipfs: None,
        tx_hash,
        block_number: block_number.map(|b| b.to_string()),
        dataset: None,
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

/// A stored event as served; `None` (logged) for a row the contract cannot describe.
pub(crate) fn event_from_row(r: EventRow) -> Option<GovernanceEvent> {
    let Some(kind) = EventKind::parse(&r.kind) else {
        tracing::warn!(id = r.id, kind = %r.kind, "governance event of an undeclared kind skipped");
        return None;
    };
    let details = r.details_map();
    let Some(subject) = item_ref(
        &r.subject_kind,
        &r.dao_id,
        &r.subject_source,
        &r.subject_external_id,
        r.subject_key,
        r.subject_title,
        r.subject_url,
    ) else {
        tracing::warn!(id = r.id, subject = %r.subject_kind, "governance event about an unaddressable subject skipped");
        return None;
    };
    Some(GovernanceEvent {
        id: r.id.to_string(),
        kind,
        summary: event_summary(kind, subject.title.as_deref(), r.actor.as_deref(), &details),
        dao_id: r.dao_id,
        occurred_at: rfc3339_ms(r.occurred_ms),
        citation: event_citation(
            &r.subject_source,
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
    })
}

pub struct Api;

#[OpenApi(prefix_path = "/v1", tag = "V1Tag::Events")]
impl Api {
    /// Governance events in a time window
    ///
    /// Dated governance events of every covered DAO between `start_ms` and `end_ms` (both
    /// required, inclusive), newest first: proposals created, voting started and closed
    /// (with the final upstream numbers), on-chain proposals queued, executed or canceled, notable
    /// votes (`vote_cast`: a vote whose power is at least {{NOTABLE_VOTE_PERCENT}}% of its proposal's upstream score
    /// total, with the exact power in `details`), and forum topics opened. Each event names its
    /// subject item and cites its source (URL, Snapshot id, transaction hash, block). Use it for
    /// timelines and alerting; use `/v1/activity` for a feed that also carries signals.
    /// A window longer than {{EVENTS_AND_SIGNALS_WINDOW_DAYS}} days keeps its end and is shortened; `limit` above {{EVENTS_MAX}} is clamped
    /// to {{EVENTS_MAX}}; both are recorded in `request.adjustments`. An unknown `daoId` matches nothing
    /// (an empty page with `total` 0); `/v1/daos` lists the valid ones.
    #[oai(path = "/governance-events", method = "get", operation_id = "events_list")]
    #[allow(clippy::too_many_arguments)]
    async fn events_list(
        &self,
        state: Data<&AppState>,
        req: V1Request,
        /// Window start, epoch milliseconds UTC (inclusive). Required.
        start_ms: Query<V1EpochMs>,
        /// Window end, epoch milliseconds UTC (inclusive). Required. A window over {{EVENTS_AND_SIGNALS_WINDOW_DAYS}} days is
        /// clamped by moving its start forward.
        end_ms: Query<V1EpochMs>,
        /// Only events of this DAO.
        #[oai(name = "daoId")]
        dao_id: Query<Option<String>>,
        /// Only events of this kind.
        kind: Query<Option<EventKind>>,
        /// Rows per page.
        limit: Query<Option<V1Limit<Events>>>,
        /// Rows to skip.
        offset: Query<Option<V1Offset>>,
    ) -> Result<Json<V1Envelope<V1Page<GovernanceEvent>>>, ApiError<Op>> {
        let mut req = req;
        let (from, to) =
            resolve_v1_window(("start_ms", start_ms.0.0), ("end_ms", end_ms.0.0), <Op as Operation>::WINDOW, &mut req);
        let limit = V1Limit::resolve(limit.0, "limit", &mut req);
        let offset = V1Offset::resolve(offset.0, "offset", &mut req);
        if let Some(dao) = &dao_id.0 {
            req.applied("daoId", dao);
        }
        if let Some(k) = kind.0 {
            req.applied("kind", k.as_str());
        }
        let filter = EventFilter { dao_id: dao_id.0, kind: kind.0, from_ms: Some(from), to_ms: Some(to), after: None };
        let (rows, total) = store::events::list(&state.db, &filter, u64::from(limit), offset, true).await?;
        let data = V1Page { items: rows.into_iter().filter_map(event_from_row).collect(), total, limit, offset };
        Ok(Json(req.respond(super::fresh(&state), data)))
    }
}
