//! The feed of changes, declared once: what an entry can be, how long entries are kept, and how
//! they are pruned.
//!
//! Every publication appends what it changed to the feed in its own transaction (an outbox,
//! `store::feed`): each governance event it wrote (new, or corrected upstream), and each signal it
//! raised, changed or cleared. An entry's sequence only grows; `GET /v2/feed` serves the entries in
//! sequence order, and the stream and webhooks carry the same entries.
//!
//! Which votes are fed is the notable-vote rule of the events ([`super::events::NOTABLE_VOTE_MIN_SHARE`]):
//! a vote matters when it is a `vote_cast` event, declared there once.
use std::borrow::Cow;

use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseError, ParseFromParameter, ParseResult, ToJSON, Type};
use poem_openapi::{Enum, Object};

use super::errors::{ErrorCode, FieldError, ParamLocation, Problem};
use super::events::EventKind;
use super::limits::{EVENTS_AND_SIGNALS_WINDOW, Window};
use super::vocabulary::vocabulary;

vocabulary! {
    /// What a feed entry reports: a governance event (new, or its facts corrected upstream, then
    /// `correction` is true), a curated signal raised, changed or cleared, a notable delegation
    /// change, or a proposal's moment (`moment`: a voting deadline near or passed, its quorum
    /// reached, its ETA passed), the timed ones written at their moment.
    #[derive(Enum)]
    #[oai(rename_all = "snake_case")]
    FeedKind ("feed kind") {
        /// A proposal was created.
        ProposalCreated = "proposal_created",
        /// Voting on a proposal opened.
        VotingStarted = "voting_started",
        /// A notable vote was cast (the `vote_cast` event rule: at least {{NOTABLE_VOTE_PERCENT}}% of
        /// the proposal's upstream total).
        VoteCast = "vote_cast",
        /// Voting on a proposal ended; the event's `details` carry the final tally.
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
        /// A signal's rule started to hold for its subject.
        SignalRaised = "signal_raised",
        /// A signal that holds changed (its evidence, severity or summary).
        SignalChanged = "signal_changed",
        /// A signal's rule stopped holding; the entry shows the signal as it last stood.
        SignalCleared = "signal_cleared",
        /// Voting on a proposal ends within `moment.horizon` ({{VOTING_ENDS_SOON_HORIZONS}} before
        /// `moment.votingEndsAt`): written at that moment, while voting is still open.
        VotingEndsSoon = "voting_ends_soon",
        /// A proposal's voting end (`moment.votingEndsAt`) passed: written at that moment. The final
        /// tally follows as `proposal_closed` once the source reports it.
        VotingEnded = "voting_ended",
        /// An open proposal's counted votes reached its quorum, counted as its counting mode counts
        /// (`moment.quorum`, `moment.quorumVotes`): written by the first publication that shows it.
        QuorumReached = "quorum_reached",
        /// A queued proposal's ETA passed (`moment.executableAt`): it can be executed now. For
        /// governors with a timelock.
        ProposalExecutable = "proposal_executable",
    }
}

/// The horizons of `voting_ends_soon`: an entry when this long is left before a proposal's
/// voting end, one per horizon, longest first.
pub const VOTING_ENDS_SOON_HORIZONS: [std::time::Duration; 2] =
    [std::time::Duration::from_secs(24 * 3_600), std::time::Duration::from_secs(3_600)];

/// A timed entry (`voting_started`, `voting_ends_soon`, `voting_ended`, `proposal_executable`)
/// is written at most this long after its moment: the scheduler inside `serve` looks for due
/// moments this often, and sooner when it knows the next one is nearer.
pub const TIMED_ENTRY_TICK: std::time::Duration = std::time::Duration::from_secs(30);

/// How far back a moment that was missed (every process down, or a proposal stored after its
/// moment passed) is still written: a process that comes back catches up on the moments of the
/// last day, in order; an older moment is history, not an alert, and is not fed.
pub const TIMED_ENTRY_CATCH_UP: std::time::Duration = std::time::Duration::from_secs(24 * 3_600);

/// `PT24H`, `PT1H`: a horizon as the entries show it (ISO 8601).
pub fn horizon_text(horizon: std::time::Duration) -> String {
    let s = horizon.as_secs();
    match (s / 3_600, s % 3_600 / 60, s % 60) {
        (h, 0, 0) => format!("PT{h}H"),
        (0, m, 0) => format!("PT{m}M"),
        _ => format!("PT{s}S"),
    }
}

impl FeedKind {
    /// The kinds of a proposal's moments (`moment`): made by time or a threshold, not by an
    /// event or a signal.
    pub const MOMENTS: &'static [Self] =
        &[Self::VotingEndsSoon, Self::VotingEnded, Self::QuorumReached, Self::ProposalExecutable];

    /// The kind of an entry reporting an event of `kind`.
    pub const fn of_event(kind: EventKind) -> Self {
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
}

/// `kinds` in a query string: feed kinds, comma-separated, published as an array sent
/// `explode: false`. Empty members are no kind (`kinds=` is the empty list, every kind), so
/// every form a client may serialise an empty list in is accepted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeedKinds(pub Vec<FeedKind>);

impl Type for FeedKinds {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = FeedKind;

    fn name() -> Cow<'static, str> {
        <Vec<FeedKind> as Type>::name()
    }

    fn schema_ref() -> MetaSchemaRef {
        <Vec<FeedKind> as Type>::schema_ref()
    }

    fn register(registry: &mut Registry) {
        <Vec<FeedKind> as Type>::register(registry);
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        Box::new(self.0.iter())
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The document's `default` (`[]`).
impl ToJSON for FeedKinds {
    fn to_json(&self) -> Option<serde_json::Value> {
        self.0.to_json()
    }
}

impl ParseFromParameter for FeedKinds {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        Self::parse_from_parameters(value.split(','))
    }

    /// poem-openapi hands an `explode: false` list over already split at its commas.
    fn parse_from_parameters<I: IntoIterator<Item = A>, A: AsRef<str>>(iter: I) -> ParseResult<Self> {
        let mut kinds = Vec::new();
        for member in iter {
            let member = member.as_ref().trim();
            if member.is_empty() {
                continue;
            }
            let kind = FeedKind::parse(member).map_err(|_| {
                ParseError::custom(format!("`{member}` is not a feed kind; one of {}", FeedKind::choices()))
            })?;
            kinds.push(kind);
        }
        kinds.sort();
        kinds.dedup();
        Ok(Self(kinds))
    }
}

/// How long an entry is kept: the window of events and signals, so that a client that fell
/// further behind than the feed reaches can resynchronise from those lists.
pub const FEED_RETENTION: Window = EVENTS_AND_SIGNALS_WINDOW;

/// Entries pruned per publication at most: pruning is spread over publications so that none of
/// them waits on a large delete.
pub const FEED_PRUNE_BATCH: u64 = 10_000;

/// What a sequence looks like, as the documents publish it ([`FeedPosition::parse`] holds text
/// to the same rule).
pub const SEQUENCE_PATTERN: &str = "^[0-9]{1,18}$";

/// Where a reader resumes (`after`): after the entry with this sequence; `0`, before the oldest
/// entry kept. Published as a string matching [`SEQUENCE_PATTERN`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedPosition(pub i64);

impl FeedPosition {
    /// The position `text` names: 1 to 18 decimal digits (every such text fits an `i64`).
    pub fn parse(text: &str) -> Option<Self> {
        let digits = (1..=18).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit());
        digits.then(|| text.parse().ok().map(Self)).flatten()
    }
}

impl Type for FeedPosition {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> Cow<'static, str> {
        Cow::Borrowed("feed_sequence")
    }

    fn schema_ref() -> MetaSchemaRef {
        MetaSchemaRef::Inline(Box::new(MetaSchema {
            pattern: Some(SEQUENCE_PATTERN.to_owned()),
            ..MetaSchema::new("string")
        }))
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        Box::new(self.as_raw_value().into_iter())
    }
}

impl ParseFromParameter for FeedPosition {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        Self::parse(value).ok_or_else(|| {
            ParseError::custom("is not a feed sequence: an entry's `sequence`, or 0 for the oldest entry kept")
        })
    }
}

/// The answer to a resume point older than the feed reaches: entries after it were pruned, so
/// resuming there would skip them. The client resynchronises from the lists (`/v2/events`,
/// `/v2/signals`), then starts again as `start_over` says.
pub fn expired(position: i64, pruned_through: i64, name: &str, location: ParamLocation) -> Problem {
    let start_over = match location {
        ParamLocation::Header => "open the stream again without `Last-Event-ID` or `after` (it then starts from now)",
        _ => "resume from the newest entry (`after=0`, or no `after`, reads the oldest kept)",
    };
    let reason = format!(
        "entries up to sequence {pruned_through} are older than the feed keeps ({} days) and were pruned",
        FEED_RETENTION.max_days
    );
    let mut p = Problem::new(
        ErrorCode::InvalidCursor,
        format!(
            "Resuming after sequence {position} would skip entries: {reason}. Resynchronise from GET /v2/events and \
             GET /v2/signals, then {start_over}."
        ),
    );
    p.errors = Some(vec![FieldError {
        location,
        name: name.to_owned(),
        reason,
        expected: Some(format!("a sequence of at least {pruned_through}")),
        received: Some(position.to_string()),
    }]);
    p
}

/// The reconnection delay a stream asks of its client (its first line, `retry:`), in milliseconds.
pub const STREAM_RETRY_MS: u64 = 3_000;

/// The event type of the last event of a stream the server ends (its data a [`StreamEnded`]).
pub const STREAM_ENDED_EVENT: &str = "stream_ended";

vocabulary! {
    /// Why the server ended a stream. Every reason but `expired` is resumed by reconnecting with
    /// `Last-Event-ID` (an `EventSource` does so by itself after the `retry:` delay).
    #[derive(Enum)]
    #[oai(rename_all = "snake_case")]
    StreamEndReason ("stream end reason") {
        /// The time one x402 payment bought is over: the reconnection is answered 402; pay again
        /// and the stream resumes after the last entry sent.
        PaymentExpired = "payment_expired",
        /// The stream reached the longest time this server holds one open: reconnect and resume.
        MaxDuration = "max_duration",
        /// The server is shutting down: reconnect (another process answers) and resume.
        ShuttingDown = "shutting_down",
        /// The store could not be read: reconnect after the retry delay and resume.
        Unavailable = "unavailable",
        /// The stream fell so far behind that entries after its position were pruned: resynchronise
        /// from `/v2/events` and `/v2/signals`, then open it again without a resume point.
        Expired = "expired",
    }
}

impl StreamEndReason {
    /// What happened and what the client does now: the `detail` of the `stream_ended` event.
    pub const fn detail(self) -> &'static str {
        match self {
            Self::PaymentExpired => {
                "The time this stream's payment bought is over. Reconnect with `Last-Event-ID`: the answer is a 402; \
                 pay it and the stream resumes after the last entry sent."
            }
            Self::MaxDuration => {
                "This stream reached the longest time the server holds one open. Reconnect with `Last-Event-ID` to \
                 resume after the last entry sent."
            }
            Self::ShuttingDown => {
                "The server is shutting down. Reconnect with `Last-Event-ID` (another process answers) to resume \
                 after the last entry sent."
            }
            Self::Unavailable => {
                "The store could not be read. Reconnect with `Last-Event-ID` after the retry delay to resume after \
                 the last entry sent."
            }
            Self::Expired => {
                "Entries after this stream's position were pruned (the feed keeps a limited window). Resynchronise \
                 from GET /v2/events and GET /v2/signals, then open the stream again without a resume point."
            }
        }
    }
}

/// The data of the `stream_ended` event.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct StreamEnded {
    pub reason: StreamEndReason,
    /// What happened and what to do, in words.
    pub detail: String,
    /// The `sequence` of the last entry this stream sent (what a reconnection sends as
    /// `Last-Event-ID`); absent when it sent none.
    pub last_sequence: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_lists() {
        let parse = |members: &[&str]| FeedKinds::parse_from_parameters(members.iter()).map(|k| k.0);
        assert_eq!(parse(&[""]).unwrap(), vec![]);
        assert_eq!(parse(&[]).unwrap(), vec![]);
        assert_eq!(
            parse(&["signal_raised", " vote_cast", "", "vote_cast"]).unwrap(),
            vec![FeedKind::VoteCast, FeedKind::SignalRaised]
        );
        let err = parse(&["vote_cast", "nope"]).unwrap_err().into_message();
        assert!(err.contains("`nope` is not a feed kind"), "{err}");
    }

    #[test]
    fn positions() {
        assert_eq!(FeedPosition::parse("0"), Some(FeedPosition(0)));
        assert_eq!(FeedPosition::parse("123"), Some(FeedPosition(123)));
        assert_eq!(FeedPosition::parse("999999999999999999"), Some(FeedPosition(999_999_999_999_999_999)));
        for bad in ["", "-1", "+1", "1.0", "abc", "1234567890123456789", " 1"] {
            assert_eq!(FeedPosition::parse(bad), None, "{bad}");
        }
        let p = expired(3, 10, "Last-Event-ID", ParamLocation::Header);
        assert_eq!(p.code, ErrorCode::InvalidCursor);
        assert!(p.detail.contains("sequence 3"), "{}", p.detail);
    }

    #[test]
    fn every_event_kind_is_a_feed_kind_of_the_same_name() {
        for &k in EventKind::ALL {
            assert_eq!(FeedKind::of_event(k).as_str(), k.as_str());
        }
        let signals = [FeedKind::SignalRaised, FeedKind::SignalChanged, FeedKind::SignalCleared];
        assert_eq!(FeedKind::ALL.len(), EventKind::ALL.len() + signals.len() + FeedKind::MOMENTS.len());
        assert!(signals.iter().all(|k| k.as_str().starts_with("signal_")));
    }
}
