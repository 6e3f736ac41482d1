//! Every public operation, declared once: its operationId, surface, access (free or a paid tier)
//! and the error codes its handler can produce. Handlers name their declaration in their error
//! type (`ApiError<op::DaosListV1>`); the document, `/v1/meta/pricing` and the access gate read
//! this table. A test checks that the table and the served documents list the same operations.
use super::access::{Access, Tier, Version};
use super::errors::{ErrorCode, ErrorNote, Problem};
use super::limits::{
    EVENTS, EVENTS_AND_SIGNALS_WINDOW, MOST_LISTS, PROPOSAL_ACTIONS, PROPOSAL_VOTES, PROPOSALS_AND_HISTORY_WINDOW,
    PageSize, Window,
};

/// A declared operation.
pub trait Operation: Send + Sync + 'static {
    const DECL: OperationDecl;

    /// The longest time window the operation accepts; using it on an operation that declares
    /// none fails to compile.
    const WINDOW: Window = match Self::DECL.window {
        Some(window) => window,
        None => panic!("the operation declares no window"),
    };

    /// The error responses the document lists for the operation, in status order.
    fn error_codes() -> Vec<ErrorCode> {
        Self::DECL.error_codes()
    }
}

/// The data of one declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperationDecl {
    /// The operationId: `<resource>_<verb>` on v1 (as released), `v2_<resource>_<verb>` on v2,
    /// so the ids stay unique when a generator merges the two documents.
    pub id: &'static str,
    pub version: Version,
    pub access: Access,
    /// Codes the handler itself returns (beyond those that access and the store imply).
    pub errors: &'static [ErrorCode],
    /// Rows per page of a list (its `limit` parameter's type carries the same size; a test
    /// compares them with the documents).
    pub page: Option<PageSize>,
    /// The longest time window, for operations that take one (handlers read [`Operation::WINDOW`]).
    pub window: Option<Window>,
    /// What an error response of this operation says beyond its code's usual text (its
    /// description and an example body in the document).
    pub notes: &'static [ErrorNote],
    /// The operation answers a `text/event-stream` that stays open: one payment buys
    /// [`super::access::Prices::stream_seconds`] of it, and it is no MCP tool (a tool call
    /// returns).
    pub streams: bool,
    /// The operation answers a file (`GET /v2/exports/{daoId}/{file}`), not JSON: one payment
    /// buys the file and a grant for its range requests, and it is no MCP tool.
    pub downloads: bool,
}

impl OperationDecl {
    /// `<resource>_<verb>`, without a surface prefix.
    pub fn local_id(&self) -> &'static str {
        self.id.strip_prefix(self.version.id_prefix()).unwrap_or(self.id)
    }

    /// The name unique across both surfaces, `<surface>_<resource>_<verb>` (`v1_daos_list`,
    /// `v2_daos_list`): v2's operationId itself, v1's with its surface in front.
    pub fn qualified_id(&self) -> String {
        format!("{}{}", self.version.id_prefix(), self.local_id())
    }

    /// The tier a payment or a partner token opens (`None`: free, or a partner token only).
    pub fn tier(&self) -> Option<Tier> {
        match self.access {
            Access::Free | Access::Partner(_) => None,
            Access::Paid(tier) => Some(tier),
        }
    }

    /// The tier a partner token's scopes must open, for an operation only a token may call.
    pub fn partner_tier(&self) -> Option<Tier> {
        match self.access {
            Access::Partner(tier) => Some(tier),
            _ => None,
        }
    }

    /// The note on `code`'s response, when the operation declares one.
    pub fn note(&self, code: ErrorCode) -> Option<&'static ErrorNote> {
        self.notes.iter().find(|n| n.code == code)
    }

    pub fn error_codes(&self) -> Vec<ErrorCode> {
        let mut codes: Vec<ErrorCode> = self.errors.to_vec();
        match self.access {
            // No credentials → 402 with the challenge; bad token → 401; missing scope → 403;
            // the payment facilitator failing → 502.
            Access::Paid(_) => codes.extend([
                ErrorCode::Unauthorized,
                ErrorCode::PaymentRequired,
                ErrorCode::Forbidden,
                ErrorCode::UpstreamError,
            ]),
            // No token, or a bad one → 401; missing scope → 403.
            Access::Partner(_) => codes.extend([ErrorCode::Unauthorized, ErrorCode::Forbidden]),
            Access::Free => {}
        }
        // Every operation is rate-limited (`access::RatePolicy`) and reads the store.
        codes.extend([ErrorCode::RateLimited, ErrorCode::InternalError, ErrorCode::Unavailable]);
        codes.sort_by_key(|c| (c.status(), *c as u8));
        codes.dedup();
        codes
    }
}

macro_rules! optional {
    () => {
        None
    };
    ($value:expr) => {
        Some($value)
    };
}

macro_rules! flag {
    () => {
        false
    };
    ($value:literal) => {
        $value
    };
}

macro_rules! notes {
    () => {
        &[]
    };
    ($notes:ident) => {
        $notes
    };
}

macro_rules! operations {
    ($($(#[$doc:meta])* $name:ident = $id:literal, $version:ident, $access:expr, [$($err:ident),*]
        $(, page $page:ident)? $(, window $window:ident)? $(, notes $notes:ident)? $(, streams $streams:literal)?
        $(, downloads $downloads:literal)?;)*) => {
        $(
            $(#[$doc])*
            pub struct $name;
            impl Operation for $name {
                const DECL: OperationDecl = OperationDecl {
                    id: $id,
                    version: Version::$version,
                    access: $access,
                    errors: &[$(ErrorCode::$err),*],
                    page: optional!($($page)?),
                    window: optional!($($window)?),
                    notes: notes!($($notes)?),
                    streams: flag!($($streams)?),
                    downloads: flag!($($downloads)?),
                };
            }
        )*
        /// Every operation of both surfaces.
        pub const ALL: &[OperationDecl] = &[$(<$name as Operation>::DECL),*];
    };
}

/// A title lookup sure of nothing, or of no single title, answers 404 with the closest candidates.
const LOOKUP_NOTES: &[ErrorNote] = &[ErrorNote {
    code: ErrorCode::NotFound,
    text: "NOT_FOUND: nothing has this URL or external id; or no title matches with a confidence of at least \
           {{LOOKUP_CONFIDENCE_FLOOR}}, or the best title does not stand clearly above the next ones (the query's \
           words must fit it at least {{LOOKUP_TITLE_MARGIN}} better, as query words found ÷ query words, or name \
           its whole title; a word common to many titles identifies none), and `candidates` lists up to \
           {{LOOKUP_CLOSEST_CANDIDATES_WORD}} of the closest proposals, closest first, each with its `confidence` \
           (an empty list when no title comes close).",
    example: Problem::lookup_not_found_example,
}];

/// A feed position older than the retention answers INVALID_CURSOR, with how to resynchronise.
const FEED_NOTES: &[ErrorNote] = &[ErrorNote {
    code: ErrorCode::InvalidCursor,
    text: "INVALID_CURSOR: the cursor cannot be used (restart without it), or `after` is older than the feed \
           keeps ({{FEED_RETENTION_DAYS}} days): entries after it were pruned. Resynchronise from `GET /v2/events` \
           and `GET /v2/signals`, then resume from the newest entry.",
    example: || super::feed::expired(3, 120, "after", super::errors::ParamLocation::Query),
}];

/// A stream's resume point older than the retention is refused the same way, naming
/// `Last-Event-ID` or `after`, whichever was sent.
const STREAM_NOTES: &[ErrorNote] = &[ErrorNote {
    code: ErrorCode::InvalidCursor,
    text: "INVALID_CURSOR: `Last-Event-ID` (or `after`) is older than the feed keeps ({{FEED_RETENTION_DAYS}} \
           days): entries after it were pruned. Resynchronise from `GET /v2/events` and `GET /v2/signals`, then \
           open the stream again without a resume point.",
    example: || super::feed::expired(3, 120, "Last-Event-ID", super::errors::ParamLocation::Header),
}];

/// A replay from a pruned position is refused as a feed reader's would be.
const REPLAY_NOTES: &[ErrorNote] = &[ErrorNote {
    code: ErrorCode::InvalidCursor,
    text: "INVALID_CURSOR: `after` is older than the feed keeps ({{FEED_RETENTION_DAYS}} days): entries after it \
           were pruned. Replay from a later position, or resynchronise from `GET /v2/events` and `GET /v2/signals`.",
    example: || super::feed::expired(3, 120, "after", super::errors::ParamLocation::Body),
}];

/// A file not built yet answers 503 while it is built, with when to ask again.
const EXPORT_NOTES: &[ErrorNote] = &[ErrorNote {
    code: ErrorCode::Unavailable,
    text: "UNAVAILABLE: the file is being built for the DAO's serving revision (it was not asked for since the \
           revision changed it) and was not ready within {{EXPORT_BUILD_WAIT_SECONDS}} s; the build goes on, and \
           the file is served after `Retry-After`. Nothing is charged for this answer. Also when the store is \
           unreachable or the server at a limit.",
    example: super::exports::being_built_example,
}];

use Access::{Free, Paid, Partner};
use Tier::{Plus, Standard};

operations! {
    /// `GET /v1/meta/pricing`
    PricingGetV1 = "pricing_get", V1, Free, [];
    /// `GET /v1/daos`
    DaosListV1 = "daos_list", V1, Free, [ValidationError], page MOST_LISTS;
    /// `GET /v1/activity`
    ActivityListV1 = "activity_list", V1, Paid(Standard), [ValidationError], page MOST_LISTS, window EVENTS_AND_SIGNALS_WINDOW;
    /// `GET /v1/governance-events`
    EventsListV1 = "events_list", V1, Paid(Standard), [ValidationError], page EVENTS, window EVENTS_AND_SIGNALS_WINDOW;
    /// `GET /v1/governance-signals`
    SignalsListV1 = "signals_list", V1, Paid(Standard), [ValidationError], page MOST_LISTS, window EVENTS_AND_SIGNALS_WINDOW;
    /// `GET /v1/proposals/lookup`
    ProposalsLookupV1 = "proposals_lookup", V1, Paid(Standard), [ValidationError, NotFound], notes LOOKUP_NOTES;
    /// `GET /v1/system/freshness`
    FreshnessGetV1 = "freshness_get", V1, Paid(Standard), [];
    /// `GET /v1/daos/{daoId}/brief`
    BriefGetV1 = "brief_get", V1, Paid(Standard), [ValidationError, NotFound];
    /// `GET /v1/daos/{daoId}/proposals/{source}/{externalId}/evidence`
    EvidenceGetV1 = "evidence_get", V1, Paid(Plus), [ValidationError, NotFound];
    /// `GET /v1/items/{kind}/{externalId}`
    ItemsGetV1 = "items_get", V1, Paid(Standard), [ValidationError, NotFound, AmbiguousIdentifier];
    /// `GET /v2/daos`
    DaosListV2 = "v2_daos_list", V2, Paid(Standard), [ValidationError, InvalidCursor], page MOST_LISTS;
    /// `GET /v2/daos/{daoId}`
    DaosGetV2 = "v2_daos_get", V2, Paid(Standard), [ValidationError, NotFound];
    /// `GET /v2/topics`
    TopicsListV2 = "v2_topics_list", V2, Paid(Standard), [ValidationError, InvalidCursor], page MOST_LISTS, window PROPOSALS_AND_HISTORY_WINDOW;
    /// `GET /v2/topics/{topicKey}`
    TopicsGetV2 = "v2_topics_get", V2, Paid(Standard), [ValidationError, NotFound];
    /// `GET /v2/activity`
    ActivityListV2 = "v2_activity_list", V2, Paid(Standard), [ValidationError, InvalidCursor], page MOST_LISTS, window EVENTS_AND_SIGNALS_WINDOW;
    /// `GET /v2/events`
    EventsListV2 = "v2_events_list", V2, Paid(Standard), [ValidationError, InvalidCursor], page EVENTS, window EVENTS_AND_SIGNALS_WINDOW;
    /// `GET /v2/feed`
    FeedListV2 = "v2_feed_list", V2, Paid(Standard), [ValidationError, InvalidCursor], page EVENTS, notes FEED_NOTES;
    /// `GET /v2/stream`
    FeedStreamV2 = "v2_feed_stream", V2, Paid(Plus), [ValidationError, InvalidCursor], notes STREAM_NOTES, streams true;
    /// `POST /v2/webhooks`
    WebhooksCreateV2 = "v2_webhooks_create", V2, Partner(Standard), [ValidationError];
    /// `GET /v2/webhooks`
    WebhooksListV2 = "v2_webhooks_list", V2, Partner(Standard), [ValidationError, InvalidCursor], page MOST_LISTS;
    /// `GET /v2/webhooks/{webhookId}`
    WebhooksGetV2 = "v2_webhooks_get", V2, Partner(Standard), [ValidationError, NotFound];
    /// `PATCH /v2/webhooks/{webhookId}`
    WebhooksUpdateV2 = "v2_webhooks_update", V2, Partner(Standard), [ValidationError, NotFound];
    /// `DELETE /v2/webhooks/{webhookId}`
    WebhooksDeleteV2 = "v2_webhooks_delete", V2, Partner(Standard), [ValidationError, NotFound];
    /// `POST /v2/webhooks/{webhookId}/rotate-secret`
    WebhookSecretRotateV2 = "v2_webhook_secret_rotate", V2, Partner(Standard), [ValidationError, NotFound];
    /// `POST /v2/webhooks/{webhookId}/test`
    WebhookTestSendV2 = "v2_webhook_test_send", V2, Partner(Standard), [ValidationError, NotFound];
    /// `GET /v2/webhooks/{webhookId}/deliveries`
    WebhookDeliveriesListV2 = "v2_webhook_deliveries_list", V2, Partner(Standard), [ValidationError, InvalidCursor, NotFound], page MOST_LISTS;
    /// `POST /v2/webhooks/{webhookId}/replay`
    WebhooksReplayV2 = "v2_webhooks_replay", V2, Partner(Standard), [ValidationError, InvalidCursor, NotFound], notes REPLAY_NOTES;
    /// `GET /v2/signals`
    SignalsListV2 = "v2_signals_list", V2, Paid(Standard), [ValidationError, InvalidCursor], page MOST_LISTS, window EVENTS_AND_SIGNALS_WINDOW;
    /// `GET /v2/proposals`
    ProposalsListV2 = "v2_proposals_list", V2, Paid(Standard), [ValidationError, InvalidCursor], page MOST_LISTS, window PROPOSALS_AND_HISTORY_WINDOW;
    /// `GET /v2/proposals/{proposalKey}`
    ProposalsGetV2 = "v2_proposals_get", V2, Paid(Standard), [ValidationError, NotFound];
    /// `GET /v2/proposals/{proposalKey}/votes`
    ProposalVotesListV2 = "v2_proposal_votes_list", V2, Paid(Plus), [ValidationError, InvalidCursor, NotFound], page PROPOSAL_VOTES;
    /// `GET /v2/proposals/{proposalKey}/actions`
    ProposalActionsListV2 = "v2_proposal_actions_list", V2, Paid(Standard), [ValidationError, InvalidCursor, NotFound], page PROPOSAL_ACTIONS;
    /// `GET /v2/daos/{daoId}/voters`
    VotersListV2 = "v2_voters_list", V2, Paid(Plus), [ValidationError, InvalidCursor, NotFound], page MOST_LISTS;
    /// `GET /v2/voters/{voterIdentity}`
    VotersGetV2 = "v2_voters_get", V2, Paid(Plus), [ValidationError, NotFound];
    /// `GET /v2/daos/{daoId}/delegates`
    DelegatesListV2 = "v2_delegates_list", V2, Paid(Plus), [ValidationError, InvalidCursor, NotFound], page MOST_LISTS;
    /// `GET /v2/daos/{daoId}/notable-delegations`
    NotableDelegationsListV2 = "v2_notable_delegations_list", V2, Paid(Plus), [ValidationError, InvalidCursor, NotFound], page MOST_LISTS, window PROPOSALS_AND_HISTORY_WINDOW;
    /// `GET /v2/voters/{voterIdentity}/delegations`
    VoterDelegationsListV2 = "v2_voter_delegations_list", V2, Paid(Plus), [ValidationError, InvalidCursor, NotFound], page MOST_LISTS, window PROPOSALS_AND_HISTORY_WINDOW;
    /// `GET /v2/voters/{voterIdentity}/power`
    VoterPowerListV2 = "v2_voter_power_list", V2, Paid(Plus), [ValidationError, InvalidCursor, NotFound], page MOST_LISTS, window PROPOSALS_AND_HISTORY_WINDOW;
    /// `GET /v2/exports`
    ExportsListV2 = "v2_exports_list", V2, Free, [ValidationError, InvalidCursor, NotFound], page MOST_LISTS;
    /// `GET /v2/export-tables`
    ExportTablesListV2 = "v2_export_tables_list", V2, Free, [];
    /// `GET /v2/exports/{daoId}/{file}`
    ExportsGetV2 = "v2_exports_get", V2, Paid(Plus), [ValidationError, NotFound], notes EXPORT_NOTES, downloads true;
    /// `GET /v2/voters/{voterIdentity}/votes`
    VoterVotesListV2 = "v2_voter_votes_list", V2, Paid(Plus), [ValidationError, InvalidCursor, NotFound], page MOST_LISTS, window PROPOSALS_AND_HISTORY_WINDOW;
}

/// The declaration of `id` on `version`.
pub fn find(version: Version, id: &str) -> Option<&'static OperationDecl> {
    ALL.iter().find(|d| d.version == version && d.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_across_surfaces_and_well_formed() {
        for (i, a) in ALL.iter().enumerate() {
            let local = a.local_id();
            assert!(local.split_once('_').is_some_and(|(r, v)| !r.is_empty() && !v.is_empty()), "{}", a.id);
            assert!(local.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{}", a.id);
            match a.version {
                // v1's ids are released as they are; every later surface names itself.
                Version::V1 => assert_eq!(a.id, local),
                Version::V2 => assert_eq!(a.id, format!("v2_{local}")),
            }
            assert!(a.qualified_id().starts_with(&a.version.prefix()[1..]), "{}", a.id);
            for b in &ALL[i + 1..] {
                assert_ne!(a.id, b.id, "an operationId is used twice across the surfaces");
            }
        }
    }

    #[test]
    fn paid_operations_document_the_access_errors() {
        let codes = FreshnessGetV1::error_codes();
        for c in [ErrorCode::Unauthorized, ErrorCode::PaymentRequired, ErrorCode::Forbidden] {
            assert!(codes.contains(&c));
        }
        assert!(!PricingGetV1::error_codes().contains(&ErrorCode::PaymentRequired));
    }
}
