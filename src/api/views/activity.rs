//! Activity entries (an event or a signal in one feed) as both surfaces serve them.
use std::collections::BTreeMap;

use poem_openapi::Object;

use crate::api::views::{
    citation::Citation,
    event::event_from_row,
    item::{ItemRef, item_ref},
};
use crate::contract::time::Timestamp;
use crate::contract::{
    events::ActivityKind,
    signals::{Severity, SignalKind},
    vocabulary::{ItemKind, SourceKind},
};
use crate::store::{
    activity::{ActivityRow, EntryKind},
    keys,
};

/// One entry of the activity feed: a governance event or a curated signal.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct ActivityEntry {
    /// The entry's public id: the event's `id` (`ev_…`, as `/v1/governance-events` serves it) or the
    /// signal's (`sg_…`, as `/v1/governance-signals` serves it). Stable: derived from what the entry is,
    /// so it is the same after a re-import and on every store; deduplicate feeds by it.
    pub id: String,
    pub kind: ActivityKind,
    pub dao_id: String,
    /// When it happened (events) or was detected (signals); RFC 3339 UTC, milliseconds.
    pub occurred_at: Timestamp,
    /// The item the entry is about.
    pub subject: ItemRef,
    /// One line for a reader.
    pub summary: String,
    /// Who acted (events only).
    pub actor: Option<String>,
    /// The rule that fired (signals only); `/v1/governance-signals` has its evidence.
    pub signal_kind: Option<SignalKind>,
    /// How much attention the signal deserves (signals only).
    pub severity: Option<Severity>,
    /// Where the event is recorded upstream (events only).
    pub citation: Option<Citation>,
    /// Event-specific exact values as strings (events only; see `/v1/governance-events`).
    pub details: Option<BTreeMap<String, String>>,
}

impl poem_openapi::types::Example for ActivityEntry {
    fn example() -> Self {
        let id = "0xf78c223115031090b918ea09fa585d340718a426a21eb1556d81d19892e10b39";
        Self {
            id: "sg_J0lZtN4QvX2xW9cKpLr8aQ".to_owned(),
            kind: ActivityKind::Signal,
            dao_id: "arbitrum".to_owned(),
            occurred_at: Timestamp::known("2026-04-02T00:00:00.000Z"),
            subject: ItemRef {
                kind: ItemKind::Proposal,
                dao_id: "arbitrum".to_owned(),
                source: SourceKind::Snapshot.as_str().to_owned(),
                external_id: id.to_owned(),
                key: Some("p_Qm1x2y3z4a5b6c7d8e9f0g".to_owned()),
                title: Some("Updating the Code of Conduct & DAO Procedures to Become Living Documents".to_owned()),
                url: Some(format!("https://snapshot.box/#/s:arbitrumfoundation.eth/proposal/{id}")),
            },
            summary: "Proposal passed with 0.999 of the counted voting power".to_owned(),
            actor: None,
            signal_kind: Some(SignalKind::ProposalPassed),
            severity: Some(Severity::Info),
            citation: None,
            details: None,
        }
    }
}

pub(crate) fn entry_from_row(r: ActivityRow) -> ActivityEntry {
    let (signal_kind, severity) = match r.kind {
        EntryKind::Event(kind) => {
            // An event entry is the event `/v1/governance-events` serves, in the feed's shape.
            let e = event_from_row(r.into_event(kind));
            return ActivityEntry {
                id: e.id,
                kind: ActivityKind::from_event(e.kind),
                dao_id: e.dao_id,
                occurred_at: e.occurred_at,
                subject: e.subject,
                summary: e.summary,
                actor: e.actor,
                signal_kind: None,
                severity: None,
                citation: Some(e.citation),
                details: Some(e.details),
            };
        }
        EntryKind::Signal(kind, severity) => (kind, severity),
    };
    let subject = item_ref(
        r.subject_kind,
        &r.dao_id,
        r.subject_source,
        &r.subject_external_id,
        r.subject_key,
        r.subject_title,
        r.subject_url,
    );
    ActivityEntry {
        id: keys::signal_id(&r.natural_key),
        kind: ActivityKind::Signal,
        dao_id: r.dao_id,
        occurred_at: Timestamp::from_ms(r.occurred_ms),
        subject,
        summary: r.summary.unwrap_or_default(),
        actor: None,
        signal_kind: Some(signal_kind),
        severity: Some(severity),
        citation: None,
        details: None,
    }
}
