//! Governance events and cross-DAO activity, declared once: the event kinds, the activity kinds,
//! the rule that makes a vote notable enough to be an event, the proposal states each event is
//! derived from, the natural keys that make derivation idempotent, and the sizes of a DAO brief.
//!
//! `store::events` derives events from these declarations at every publication;
//! `/v1/governance-events`, `/v1/activity` and `/v1/daos/{daoId}/brief` serve them.
use bigdecimal::BigDecimal;
use poem_openapi::Enum;

use super::vocabulary::{ProposalState, vocabulary};

vocabulary! {
    /// What happened. Every governance event has exactly one kind.
    #[derive(Enum)]
    #[oai(rename_all = "snake_case")]
    EventKind ("event kind") {
        /// A proposal was created (`occurredAt`: its creation time; for the bundled Snapshot sample,
        /// which has no creation time, its voting start). `actor` is the author.
        ProposalCreated = "proposal_created",
        /// Voting on a proposal opened (`occurredAt`: its voting start).
        VotingStarted = "voting_started",
        /// A notable vote was cast: its voting power is at least `NOTABLE_VOTE_MIN_SHARE` of the
        /// proposal's upstream total (`scores_total`). `actor` is the voter; `details.votingPower` is the
        /// exact power as received, `details.choice` the choice as received.
        VoteCast = "vote_cast",
        /// Voting on a proposal ended (`occurredAt`: its voting end); `details.state` is the final state.
        ProposalClosed = "proposal_closed",
        /// An on-chain proposal was queued in the timelock.
        ProposalQueued = "proposal_queued",
        /// An on-chain proposal was executed.
        ProposalExecuted = "proposal_executed",
        /// A proposal was canceled.
        ProposalCanceled = "proposal_canceled",
        /// A forum topic was opened (`actor`: its author).
        ForumTopicCreated = "forum_topic_created",
        /// A holder moved at least {{NOTABLE_DELEGATION_PERCENT}}% of the token's supply to another delegate
        /// (on-chain `DelegateChanged`). Its subject is a delegation, not a proposal or a forum topic, so
        /// it is not listed with these events: `GET /v2/daos/{daoId}/notable-delegations` lists them,
        /// and the feed, its stream and webhooks carry each as a `delegation_changed` entry.
        DelegationChanged = "delegation_changed",
    }
}

vocabulary! {
    /// What an activity entry is: one of the event kinds, or a curated signal.
    #[derive(Enum)]
    #[oai(rename_all = "snake_case")]
    ActivityKind ("activity kind") {
        /// A proposal was created.
        ProposalCreated = "proposal_created",
        /// Voting on a proposal opened.
        VotingStarted = "voting_started",
        /// A notable vote was cast (see the `vote_cast` event kind for the rule).
        VoteCast = "vote_cast",
        /// Voting on a proposal ended.
        ProposalClosed = "proposal_closed",
        /// An on-chain proposal was queued.
        ProposalQueued = "proposal_queued",
        /// An on-chain proposal was executed.
        ProposalExecuted = "proposal_executed",
        /// A proposal was canceled.
        ProposalCanceled = "proposal_canceled",
        /// A forum topic was opened.
        ForumTopicCreated = "forum_topic_created",
        /// A delegation changed.
        DelegationChanged = "delegation_changed",
        /// A curated signal fired (close race, quorum at risk, ...); `signalKind` and `severity` say which.
        Signal = "signal",
    }
}

impl ActivityKind {
    pub const fn from_event(kind: EventKind) -> Self {
        match kind {
            EventKind::ProposalCreated => Self::ProposalCreated,
            EventKind::VotingStarted => Self::VotingStarted,
            EventKind::VoteCast => Self::VoteCast,
            EventKind::ProposalClosed => Self::ProposalClosed,
            EventKind::ProposalQueued => Self::ProposalQueued,
            EventKind::ProposalExecuted => Self::ProposalExecuted,
            EventKind::ProposalCanceled => Self::ProposalCanceled,
            EventKind::ForumTopicCreated => Self::ForumTopicCreated,
            EventKind::DelegationChanged => Self::DelegationChanged,
        }
    }

    /// The event kind behind this activity kind; `None` for `signal`.
    pub fn event_kind(self) -> Option<EventKind> {
        EventKind::ALL.iter().copied().find(|k| Self::from_event(*k) == self)
    }
}

/// The notable-vote rule: a vote becomes a `vote_cast` event when its voting power is at least
/// this share of its proposal's upstream total (`scores_total`), compared exactly in decimal.
///
/// Why a share of the upstream total and not "the top N votes": the store may hold only part of a
/// proposal's votes (the bundled sample holds 19,970 of far more), and a top-N of the ingested
/// votes would change as more votes arrive, making events appear and vanish. A share of the
/// upstream total depends only on the vote and the proposal, so the event set is stable and
/// derivation stays idempotent. 1% keeps the voters who can move an outcome (at most 100 per
/// proposal by construction; 380 of the sample's 19,970 votes) and drops the long tail. A
/// proposal without an upstream total (or a zero one) yields no vote events.
pub const NOTABLE_VOTE_MIN_SHARE: &str = "0.01";

/// The notable-delegation rule: a delegation change is notable when the voting units it moved
/// (the delegator's balance) are at least this share of the token's total supply at its block,
/// compared exactly in integers.
///
/// Why the total supply: it is what `GovernorVotesQuorumFraction` takes its quorum from, it is
/// one exact figure the token itself answers at any block (`totalSupply`, `getPastTotalSupply`),
/// and it does not move with who else delegated, so a change is judged once, for good. 0.5 %
/// of the supply is an eighth of the usual 4 % quorum: enough to swing a vote, and rare (most
/// changes move a few tokens; a holder delegating a first time moves nothing).
pub const NOTABLE_DELEGATION_MIN_SHARE: &str = "0.005";

/// How long before an on-chain proposal's snapshot a notable delegation change is a shift of
/// power for it (`delegationShift` on `GET /v2/proposals/{proposalKey}`). A governor weighs each
/// vote at `proposalSnapshot` (`getPastVotes`), so power moved after it cannot count on the
/// proposal, and power moved just before it (borrowed tokens, a holder re-delegating once the
/// proposal is known) is what a delegate dashboard flags. Three days cover the usual voting
/// delays (Compound's and Uniswap's are two days).
pub const DELEGATION_SHIFT_WINDOW_MS: i64 = 72 * 3_600_000;

/// The changes a proposal's `delegationShift` cites at most (newest first; `more` says when there
/// were others).
pub const DELEGATION_SHIFT_CITED: u64 = 20;

/// Whether `moved` voting units out of a `supply` are a notable delegation change (exact: both
/// integers in the token's smallest unit).
pub fn notable_delegation(moved: &BigDecimal, supply: &BigDecimal) -> bool {
    let share = super::decimal::parse(NOTABLE_DELEGATION_MIN_SHARE).expect("the share is a decimal");
    moved.sign() == bigdecimal::num_bigint::Sign::Plus && *moved >= share * supply
}

/// Proposal states that are themselves events, derived from the state when no connector wrote
/// the exact on-chain event (with its transaction) first.
pub const STATE_EVENTS: &[(ProposalState, EventKind)] = &[
    (ProposalState::Queued, EventKind::ProposalQueued),
    (ProposalState::Executed, EventKind::ProposalExecuted),
    (ProposalState::Canceled, EventKind::ProposalCanceled),
];

/// `governance_events.natural_key` of an event about a proposal:
/// `<daoId>:<source>:<externalId>:<kind>`, e.g. `arbitrum:snapshot:0x04d6…:proposal_created`.
/// The same upstream fact always gets the same key, whoever writes it (derivation at publication
/// or a connector reading the exact on-chain event), so writes are idempotent upserts.
pub fn proposal_event_key(dao_id: &str, source: &str, external_id: &str, kind: EventKind) -> String {
    format!("{dao_id}:{source}:{external_id}:{}", kind.as_str())
}

/// Natural key of a `vote_cast` event: `<daoId>:<source>:<proposal externalId>:vote_cast:<voter>`.
pub fn vote_event_key(dao_id: &str, source: &str, proposal_external_id: &str, voter: &str) -> String {
    format!("{dao_id}:{source}:{proposal_external_id}:{}:{voter}", EventKind::VoteCast.as_str())
}

/// Natural key of a `forum_topic_created` event: `<daoId>:discourse:<topic id>:forum_topic_created`.
pub fn topic_event_key(dao_id: &str, topic_external_id: &str) -> String {
    format!("{dao_id}:discourse:{topic_external_id}:{}", EventKind::ForumTopicCreated.as_str())
}

/// How much a DAO brief (`/v1/daos/{daoId}/brief`) holds of each part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BriefSizes {
    /// Active proposals with tallies (soonest deadline first).
    pub active_proposals: u64,
    /// Recently closed proposals with outcomes (latest end first).
    pub recently_closed: u64,
    /// Top voters by voting power.
    pub top_voters: u64,
    /// Top delegates by delegated voting power.
    pub top_delegates: u64,
    /// Latest governance events.
    pub recent_activity: u64,
    /// Latest signals.
    pub open_signals: u64,
}

pub const BRIEF: BriefSizes = BriefSizes {
    active_proposals: 20,
    recently_closed: 5,
    top_voters: 10,
    top_delegates: 10,
    recent_activity: 10,
    open_signals: 10,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_activity_covers_every_event_kind() {
        for &k in EventKind::ALL {
            assert_eq!(EventKind::parse(k.as_str()), Ok(k));
            assert_eq!(ActivityKind::from_event(k).event_kind(), Some(k));
        }
        assert_eq!(ActivityKind::Signal.event_kind(), None);
        assert!(EventKind::parse("nope").is_err());
    }

    #[test]
    fn notable_delegations_are_judged_exactly() {
        let d = |s: &str| super::super::decimal::parse(s).unwrap();
        let supply = d("1000000000000000000000");
        assert!(notable_delegation(&d("5000000000000000000"), &supply), "exactly 0.5%");
        assert!(!notable_delegation(&d("4999999999999999999"), &supply), "one unit short");
        assert!(!notable_delegation(&d("0"), &d("0")), "nothing moved is never notable");
    }

    #[test]
    fn natural_keys() {
        assert_eq!(
            proposal_event_key("arbitrum", "snapshot", "0xab", EventKind::ProposalClosed),
            "arbitrum:snapshot:0xab:proposal_closed"
        );
        assert_eq!(vote_event_key("arbitrum", "snapshot", "0xab", "0xcd"), "arbitrum:snapshot:0xab:vote_cast:0xcd");
        assert_eq!(topic_event_key("uniswap", "42"), "uniswap:discourse:42:forum_topic_created");
    }
}
