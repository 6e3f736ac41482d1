//! `/v2/webhooks`: a partner's own subscriptions to the feed, delivered as Standard Webhooks or
//! as Slack or Discord messages (`push`), managed with its partner token. The request bodies are read member by member
//! (`contract::body`); the subscriptions live in `store::webhooks`, their deliveries and attempts in `push::queue`.
use poem::{Request, web::Data};
use poem_openapi::{ApiResponse, Enum, Object, OpenApi, param::Path, param::Query, payload::Json};
use serde_json::Value;

use super::{JsonBody, Listing, V2Tag, partner_token};
use crate::api::AppState;
use crate::contract::{
    api_error::ApiError,
    body::{self, FromBody, Members, Refusal, refuse_member},
    envelope::{CacheStatus, Freshness, V2List, V2Single},
    errors::{ErrorCode, ParamLocation, Problem},
    feed::{self, FeedKind, FeedPosition},
    ids::{self as public_ids, IssuedKey, ProposalKey, VoterIdentity},
    limits::MostLists,
    operations::{
        WebhookDeliveriesListV2, WebhookSecretRotateV2, WebhookTestSendV2, WebhooksCreateV2, WebhooksDeleteV2,
        WebhooksGetV2, WebhooksListV2, WebhooksReplayV2, WebhooksUpdateV2,
    },
    params::{V2Limit, WebhookIdParam},
    time::{Timestamp, now_ms},
    vocabulary::{DaoId, KeyKind},
    webhooks::{
        MAX_DAO_IDS, MAX_DESCRIPTION_CHARS, MAX_PROPOSAL_KEYS, MAX_SUBSCRIPTIONS_PER_TOKEN, MAX_URL_BYTES,
        MAX_VOTER_CHARS, MAX_VOTERS, WebhookFormat,
    },
};
use crate::push::guard::{self, Reach};
use crate::push::queue;
use crate::store::failures::problem_marking_read_failed;
use crate::store::{
    self,
    entities::webhook_attempt::{self, AttemptOutcome as Stored},
    keysets::IdAfter,
    webhooks::{self as subs, Change, CreateError, Filters, Shown, Subscription, Target},
};

pub struct Api;

/// A subscription as its owner sees it (never its secret: that is shown once, when made).
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct Webhook {
    /// `wh_…`.
    pub id: String,
    /// Where the entries are posted.
    pub url: String,
    /// How each entry is written: `standard_webhooks` (signed), `slack` or `discord`.
    pub format: WebhookFormat,
    /// Only entries of these DAOs (empty: every DAO).
    pub dao_ids: Vec<String>,
    /// Only entries of these kinds (empty: every kind).
    pub kinds: Vec<FeedKind>,
    /// Only entries about these proposals (empty: every entry).
    pub proposal_keys: Vec<String>,
    /// Only entries about these voters or delegates, as lowercase addresses (empty: every entry).
    pub voters: Vec<String>,
    pub description: Option<String>,
    /// False when its owner disabled it, its endpoint said it is gone (410 Gone; for Slack a
    /// 404, a 410 or `no_service`; for Discord a 404 with code 10015, Unknown Webhook), or every
    /// attempt failed for days; `disabledReason` says which, with the answer. Enable it again
    /// with `PATCH`.
    pub enabled: bool,
    pub disabled_reason: Option<String>,
    /// Since when every attempt has failed (absent while attempts succeed).
    pub failing_since: Option<Timestamp>,
    /// During a secret rotation: until when the previous secret still signs beside the new one.
    pub previous_secret_expires_at: Option<Timestamp>,
    /// The feed `sequence` up to which entries were queued for it: an entry after it is
    /// delivered once it is published.
    pub enqueued_through: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Webhook {
    /// `shown` as its owner sees it; a format this build does not know (a newer build's) is a
    /// store defect here, answered as one.
    fn of(shown: &Shown) -> Result<Self, Problem> {
        let now = now_ms();
        let (s, filters) = (&shown.subscription, &shown.filters);
        let format = subs::format_of(s).map_err(|e| {
            tracing::error!(error = %e, webhook = s.public_id, "a stored webhook format this build does not know");
            Problem::internal()
        })?;
        Ok(Self {
            id: s.public_id.clone(),
            url: s.url.clone(),
            format,
            dao_ids: filters.daos.iter().map(|d| d.as_str().to_owned()).collect(),
            kinds: filters.kinds.clone(),
            proposal_keys: filters.proposals.iter().map(|k| k.as_str().to_owned()).collect(),
            voters: filters.voters.clone(),
            description: s.description.clone(),
            enabled: s.enabled,
            disabled_reason: s.disabled_reason.clone(),
            failing_since: s.failing_since_ms.map(Timestamp::from_ms),
            previous_secret_expires_at: s.previous_until_ms.filter(|&u| u > now).map(Timestamp::from_ms),
            enqueued_through: shown.enqueued_through.to_string(),
            created_at: Timestamp::from_ms(s.created_ms),
            updated_at: Timestamp::from_ms(s.updated_ms),
        })
    }
}

/// A subscription with its signing secret, shown this once.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct WebhookWithSecret {
    #[oai(flatten)]
    pub webhook: Webhook,
    /// `whsec_…`: verify each delivery's `webhook-signature` with it (any Standard Webhooks
    /// library does). Shown only now: keep it; rotate it if it is lost. Every webhook has one;
    /// only `standard_webhooks` messages are signed (Slack and Discord take no signature: their
    /// URL is the secret).
    pub secret: String,
}

/// A new subscription.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookCreate {
    /// Where to post the entries: an `https` URL whose host resolves only to public addresses
    /// (for `slack`, the incoming webhook's URL; for `discord`, the webhook's URL).
    pub url: String,
    /// How each entry is written (`standard_webhooks` when absent).
    pub format: Option<WebhookFormat>,
    /// Only entries of these DAOs (every DAO when absent or empty).
    pub dao_ids: Option<Vec<String>>,
    /// Only entries of these kinds (every kind when absent or empty).
    pub kinds: Option<Vec<FeedKind>>,
    /// Only entries about these proposals, by `proposalKey` (`GET /v2/proposals`): their events,
    /// signals and moments (every entry when absent or empty).
    pub proposal_keys: Option<Vec<String>>,
    /// Only entries about these voters or delegates, each a 0x address (any letter case), a
    /// CAIP-10 account or a known ENS name: their notable votes (`vote_cast`) and the delegation
    /// changes they are the delegator, the previous or the new delegate of; and the
    /// `voting_ends_soon` reminders of the proposals one of them has not voted on (every entry
    /// when absent or empty). Shown as lowercase addresses.
    pub voters: Option<Vec<String>>,
    /// A note for yourself.
    pub description: Option<String>,
}

/// A change to a subscription: each member sent is changed, the others stay.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookUpdate {
    pub url: Option<String>,
    /// The new format; what is still pending is sent in it.
    pub format: Option<WebhookFormat>,
    /// The new DAO filter (empty: every DAO).
    pub dao_ids: Option<Vec<String>>,
    /// The new kind filter (empty: every kind).
    pub kinds: Option<Vec<FeedKind>>,
    /// The new proposal filter (empty: every entry).
    pub proposal_keys: Option<Vec<String>>,
    /// The new voter filter (empty: every entry).
    pub voters: Option<Vec<String>>,
    /// The new note; `null` or `""` removes it.
    pub description: Option<String>,
    /// `false` stops deliveries (they are kept, and sent when enabled again); `true` enables a
    /// disabled subscription and sends what is pending at once.
    pub enabled: Option<bool>,
}

/// A replay: the entries after `after` queued again.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookReplay {
    /// Replay the entries after this `sequence` (`0`: from the oldest entry kept), up to the
    /// newest already queued for the subscription. Each goes again with its own `webhook-id`,
    /// so a receiver that processed it already can tell.
    pub after: String,
}

impl poem_openapi::types::Example for Webhook {
    fn example() -> Self {
        Self {
            id: "wh_3f9a1c0b7e5d2a846c1f".to_owned(),
            url: "https://hooks.example.org/govdata".to_owned(),
            format: WebhookFormat::StandardWebhooks,
            dao_ids: vec!["arbitrum".to_owned()],
            kinds: vec![FeedKind::ProposalCreated, FeedKind::ProposalClosed],
            proposal_keys: Vec::new(),
            voters: Vec::new(),
            description: Some("Arbitrum proposals to the delegate bot".to_owned()),
            enabled: true,
            disabled_reason: None,
            failing_since: None,
            previous_secret_expires_at: None,
            enqueued_through: "48213".to_owned(),
            created_at: Timestamp::known("2026-03-20T09:00:00.000Z"),
            updated_at: Timestamp::known("2026-03-20T09:00:00.000Z"),
        }
    }
}

impl poem_openapi::types::Example for WebhookWithSecret {
    fn example() -> Self {
        Self {
            webhook: <Webhook as poem_openapi::types::Example>::example(),
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_owned(),
        }
    }
}

impl poem_openapi::types::Example for WebhookQueued {
    fn example() -> Self {
        Self {
            message_id: Some("msg_3f9a1c0b7e5d2a846c1f_test_8c1d0e7f".to_owned()),
            from: None,
            through: None,
            queued_at: Timestamp::known("2026-03-27T00:05:12.345Z"),
        }
    }
}

impl poem_openapi::types::Example for WebhookAttempt {
    fn example() -> Self {
        Self {
            message_id: "msg_3f9a1c0b7e5d2a846c1f_48213".to_owned(),
            sequence: Some("48213".to_owned()),
            attempt: 2,
            attempted_at: Timestamp::known("2026-03-27T00:05:17.401Z"),
            outcome: AttemptOutcome::Retrying,
            status_code: Some(503),
            duration_ms: 212,
            error: Some("the endpoint answered 503 Service Unavailable".to_owned()),
            next_attempt_at: Some(Timestamp::known("2026-03-27T00:10:17.401Z")),
        }
    }
}

fn dao_id(value: &Value) -> Result<String, Refusal> {
    let text = body::string(DaoId::MAX_LEN)(value)?;
    DaoId::from_request(&text)
        .map(|d| d.as_str().to_owned())
        .ok_or_else(|| Refusal::new("is not a DAO id", "a `daoId` from GET /v1/daos"))
}

fn format(value: &Value) -> Result<WebhookFormat, Refusal> {
    let text = body::string(32)(value)?;
    WebhookFormat::parse(&text).map_err(|_| Refusal::new("is not a webhook format", WebhookFormat::choices()))
}

fn kind(value: &Value) -> Result<FeedKind, Refusal> {
    let text = body::string(64)(value)?;
    FeedKind::parse(&text).map_err(|_| Refusal::new("is not a feed kind", FeedKind::choices()))
}

/// A proposal key, in its canonical text (the form every key has; whether a proposal has it is
/// checked once the body is read).
fn proposal_key(value: &Value) -> Result<String, Refusal> {
    let text = body::string(64)(value)?;
    ProposalKey::parse(&text).map(|k| k.as_str().to_owned()).map_err(|_| {
        Refusal::new(
            "is not a proposal key",
            format!("a `proposalKey` from GET /v2/proposals ({})", public_ids::key_pattern(KeyKind::Proposal)),
        )
    })
}

/// A voter as `voterIdentity` takes one, in its canonical text: the lowercase address, or the
/// lowercase ENS name (resolved once the body is read). Two spellings of one address repeat it.
fn voter(value: &Value) -> Result<String, Refusal> {
    let text = body::string(MAX_VOTER_CHARS)(value)?;
    let identity = public_ids::parse_voter_identity(&text, "voters", ParamLocation::Body).map_err(|problem| {
        let why = problem.errors.into_iter().flatten().next();
        Refusal {
            reason: why.as_ref().map_or("is not a voter identity".to_owned(), |e| e.reason.clone()),
            expected: why.and_then(|e| e.expected),
        }
    })?;
    Ok(match identity {
        VoterIdentity::Address(a) => a,
        VoterIdentity::Ens(name) => name,
    })
}

impl FromBody for WebhookCreate {
    const MEMBERS: &'static [&'static str] =
        &["url", "format", "daoIds", "kinds", "proposalKeys", "voters", "description"];

    fn from_body(m: &mut Members) -> Option<Self> {
        let url = m.required("url", body::string(MAX_URL_BYTES));
        let format = m.optional("format", format);
        let dao_ids = m.each_once("daoIds", MAX_DAO_IDS, dao_id);
        let kinds = m.each_once("kinds", FeedKind::ALL.len(), kind);
        let proposal_keys = m.each_once("proposalKeys", MAX_PROPOSAL_KEYS, proposal_key);
        let voters = m.each_once("voters", MAX_VOTERS, voter);
        let description = m.optional("description", body::string(MAX_DESCRIPTION_CHARS));
        Some(Self {
            url: url?,
            format: format?,
            dao_ids: dao_ids?,
            kinds: kinds?,
            proposal_keys: proposal_keys?,
            voters: voters?,
            description: description?,
        })
    }
}

impl FromBody for WebhookUpdate {
    const MEMBERS: &'static [&'static str] =
        &["url", "format", "daoIds", "kinds", "proposalKeys", "voters", "description", "enabled"];

    fn from_body(m: &mut Members) -> Option<Self> {
        let url = m.optional("url", body::string(MAX_URL_BYTES));
        let format = m.optional("format", format);
        let dao_ids = m.each_once("daoIds", MAX_DAO_IDS, dao_id);
        let kinds = m.each_once("kinds", FeedKind::ALL.len(), kind);
        let proposal_keys = m.each_once("proposalKeys", MAX_PROPOSAL_KEYS, proposal_key);
        let voters = m.each_once("voters", MAX_VOTERS, voter);
        // `null` removes the note as `""` does: both are `Some("")` here.
        let description =
            m.nullable("description", body::string(MAX_DESCRIPTION_CHARS)).map(|d| d.map(Option::unwrap_or_default));
        let enabled = m.optional("enabled", body::boolean);
        Some(Self {
            url: url?,
            format: format?,
            dao_ids: dao_ids?,
            kinds: kinds?,
            proposal_keys: proposal_keys?,
            voters: voters?,
            description: description?,
            enabled: enabled?,
        })
    }
}

impl FromBody for WebhookReplay {
    const MEMBERS: &'static [&'static str] = &["after"];

    fn from_body(m: &mut Members) -> Option<Self> {
        let after = m.required("after", |v| {
            let text = body::string(18)(v)?;
            FeedPosition::parse(&text).map(|_| text).ok_or_else(|| {
                Refusal::new("is not a feed sequence", "an entry's `sequence` (a string of digits), or \"0\"")
            })
        });
        Some(Self { after: after? })
    }
}

/// What a test message or a replay queued.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct WebhookQueued {
    /// The test message's `webhook-id`.
    pub message_id: Option<String>,
    /// A replay: entries after this sequence…
    pub from: Option<String>,
    /// …up to this one are queued again (those the subscription's filters want).
    pub through: Option<String>,
    pub queued_at: Timestamp,
}

/// What an attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum AttemptOutcome {
    /// The endpoint answered 2xx.
    Delivered,
    /// It failed; `nextAttemptAt` says when the next attempt is.
    Retrying,
    /// It failed and no attempt follows (the retry schedule is over, the endpoint said it is
    /// gone, or the entry is no longer kept). A replay sends it again.
    Failed,
}

/// One delivery attempt.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct WebhookAttempt {
    /// The message's `webhook-id` (the same on every attempt of it).
    pub message_id: String,
    /// The feed entry delivered (absent for a test message).
    pub sequence: Option<String>,
    /// 1 for the first attempt of the message.
    pub attempt: i32,
    pub attempted_at: Timestamp,
    pub outcome: AttemptOutcome,
    /// The endpoint's status code (absent when it gave none: refused, timed out…).
    pub status_code: Option<i32>,
    pub duration_ms: i64,
    /// Why the attempt failed.
    pub error: Option<String>,
    pub next_attempt_at: Option<Timestamp>,
}

impl WebhookAttempt {
    fn of(a: webhook_attempt::Model) -> Self {
        let outcome = match a.outcome {
            Stored::Delivered => AttemptOutcome::Delivered,
            Stored::Retrying => AttemptOutcome::Retrying,
            Stored::Failed => AttemptOutcome::Failed,
        };
        Self {
            message_id: a.msg_id,
            sequence: a.seq.map(|s| s.to_string()),
            attempt: a.attempt,
            attempted_at: Timestamp::from_ms(a.attempted_ms),
            outcome,
            status_code: a.status_code,
            duration_ms: a.duration_ms,
            error: a.error,
            next_attempt_at: a.next_attempt_ms.map(Timestamp::from_ms),
        }
    }
}

#[derive(ApiResponse)]
pub enum CreatedResponse {
    /// The subscription, with its secret (shown this once).
    #[oai(status = 201)]
    Created(Json<V2Single<WebhookWithSecret>>, #[oai(header = "location")] String),
}

#[derive(ApiResponse)]
pub enum DeletedResponse {
    /// Deleted, with its pending deliveries and its attempts.
    #[oai(status = 204)]
    Deleted,
}

#[derive(ApiResponse)]
pub enum QueuedResponse {
    /// Queued: it goes at once; `GET /v2/webhooks/{webhookId}/deliveries` shows how it went.
    #[oai(status = 202)]
    Queued(Json<V2Single<WebhookQueued>>),
}

crate::contract::cursor_shape::cursor_shape! {
    /// What a cursor of `GET /v2/webhooks/{webhookId}/deliveries` is bound to: the webhook's id.
    WebhookDeliveriesShape<'a> for WebhookDeliveriesListV2 { webhook_id: &'a str => "webhookId" }
}

fn freshness(state: &AppState) -> Freshness {
    Freshness::new(state.serving.current().data_as_of_ms, CacheStatus::Fresh)
}

fn reach(state: &AppState) -> Reach {
    Reach { allow_private: state.settings.webhooks.webhook_allow_private }
}

/// The subscribed URL, checked: its form, then every address its host resolves to.
async fn checked_url(state: &AppState, url: &str) -> Result<String, Problem> {
    let expected = format!("an {} URL whose host resolves to public addresses", reach(state).schemes().join(" or "));
    let refuse = |reason: String| refuse_member("url", url, Refusal { reason, expected: Some(expected.clone()) });
    let parsed = guard::check_url_text(reach(state), url).map_err(refuse)?;
    let resolver = guard::resolver(state.settings.webhooks.webhook_resolver.0.clone());
    guard::check_url(reach(state), &*resolver, &parsed).await.map_err(refuse)?;
    Ok(parsed.to_string())
}

/// The DAO ids, each a covered DAO (the body's members were read as DAO ids already).
async fn checked_daos(state: &AppState, ids: &[String]) -> Result<Vec<DaoId>, Problem> {
    let ids: Vec<DaoId> = ids.iter().filter_map(|id| DaoId::parse(id)).collect();
    let unknown = subs::unknown_daos(state.primary()?, &ids).await.map_err(|e| problem_marking_read_failed(&e))?;
    let refusal = Refusal::new("is no covered DAO", "a `daoId` from GET /v1/daos");
    refuse_first_unknown("daoIds", ids, &unknown, DaoId::as_str, refusal)
}

/// The proposal keys, each a stored proposal's (the body's members were read as keys already).
async fn checked_proposals(state: &AppState, keys: &[String]) -> Result<Vec<ProposalKey>, Problem> {
    let keys: Vec<ProposalKey> = keys.iter().filter_map(|k| ProposalKey::parse(k).ok()).collect();
    let unknown =
        subs::unknown_proposals(state.primary()?, &keys).await.map_err(|e| problem_marking_read_failed(&e))?;
    let refusal = Refusal::new("is no proposal's key", "a `proposalKey` from GET /v2/proposals");
    refuse_first_unknown("proposalKeys", keys, &unknown, |k: &ProposalKey| k.as_str(), refusal)
}

/// `listed`, or the refusal of its first member the store does not hold (`unknown`), named as
/// the body's `member[i]`.
fn refuse_first_unknown<T: PartialEq>(
    member: &str,
    listed: Vec<T>,
    unknown: &[T],
    text: impl Fn(&T) -> &str,
    refusal: Refusal,
) -> Result<Vec<T>, Problem> {
    match unknown.first() {
        Some(first) => {
            let at = listed.iter().position(|i| i == first).unwrap_or(0);
            Err(refuse_member(&format!("{member}[{at}]"), text(first), refusal))
        }
        None => Ok(listed),
    }
}

/// The voters as lowercase addresses, ENS names resolved from the store (the body's members were
/// read as voter identities already); an address named twice is kept once.
async fn checked_voters(state: &AppState, voters: &[String]) -> Result<Vec<String>, Problem> {
    let mut out: Vec<String> = Vec::with_capacity(voters.len());
    for (at, voter) in voters.iter().enumerate() {
        let address = if voter.starts_with("0x") {
            voter.clone()
        } else {
            store::voters::address_of_ens(state.primary()?, voter)
                .await
                .map_err(|e| problem_marking_read_failed(&e))?
                .ok_or_else(|| {
                refuse_member(
                    &format!("voters[{at}]"),
                    voter,
                    Refusal::new(
                        "is an ENS name no known voter has",
                        "a 0x address, a CAIP-10 account, or the ENS name of a voter GET /v2/voters knows",
                    ),
                )
            })?
        };
        if !out.contains(&address) {
            out.push(address);
        }
    }
    Ok(out)
}

/// `subscriptions` as their owner sees them.
async fn shown(state: &AppState, subscriptions: Vec<Subscription>) -> Result<Vec<Shown>, Problem> {
    subs::shown(state.primary()?, subscriptions).await.map_err(|e| problem_marking_read_failed(&e))
}

/// One subscription as its owner sees it.
async fn shown_one(state: &AppState, subscription: Subscription) -> Result<Webhook, Problem> {
    let mut shown = shown(state, vec![subscription]).await?;
    // `shown` maps each subscription it is given: one in, one out.
    Webhook::of(&shown.pop().ok_or_else(Problem::internal)?)
}

/// Subscription `id` of the calling token, or the 404 (also for an id of no webhook's form).
async fn owned(state: &AppState, req: &Request, id: &WebhookIdParam) -> Result<Subscription, Problem> {
    let token = partner_token(req)?;
    let db = state.primary()?;
    let not_found = |id: &str| {
        Problem::not_found(format!("No webhook `{id}` belongs to this token; GET /v2/webhooks lists yours."))
    };
    match id.parse() {
        Ok(id) => subs::get(db, Some(token.id), &id)
            .await
            .map_err(|e| problem_marking_read_failed(&e))?
            .ok_or_else(|| not_found(id.as_str())),
        Err(text) => Err(not_found(text)),
    }
}

#[OpenApi(prefix_path = "/v2", tag = "V2Tag::Webhooks")]
impl Api {
    /// Subscribe a URL to the feed
    ///
    /// Every entry of the feed (`GET /v2/feed`) published from now on that the filters want is
    /// posted to `url`. Filters combine: an entry is wanted when it matches each filter given
    /// (`daoIds`, `kinds`, `proposalKeys`, `voters`), and it matches a filter when it has any of
    /// its values; at most {{WEBHOOK_MAX_PROPOSAL_KEYS}} proposals and {{WEBHOOK_MAX_VOTERS}}
    /// voters. A `voting_ends_soon` entry reaches a subscription that filters `voters` only while
    /// one of them has not voted on its proposal (a reminder for the delegates who have not voted
    /// yet). Each entry goes as a Standard Webhooks message: `{type, timestamp, data}`, `data` being
    /// the entry, with `webhook-id`, `webhook-timestamp` and `webhook-signature` (`v1,`
    /// HMAC-SHA256 under the `whsec_` secret returned here, once). At least once: a
    /// `webhook-id` seen before is a duplicate. Attempts go {{WEBHOOK_RETRY_SCHEDULE}} (each
    /// at most {{WEBHOOK_TIMEOUT_SECONDS}} s; `Retry-After` is honoured on 429 and 503), up to
    /// {{WEBHOOK_CONCURRENCY}} at a time per webhook, so a retried entry may arrive after later
    /// ones: order by `data.sequence`. A 410 disables the subscription, as do
    /// {{WEBHOOK_DISABLE_DAYS}} days of failures. A message over {{WEBHOOK_THIN_BYTES}} bytes is sent thin: `data` names the entry
    /// and the `url` that serves it. Up to {{WEBHOOK_MAX_PER_TOKEN}} subscriptions per token.
    ///
    /// With `format: slack` or `discord` each entry is posted instead as a message for people
    /// (a Slack incoming webhook's `text` and `blocks`, a Discord embed), unsigned, on the same
    /// schedule; a 429's `Retry-After` (and Discord's `retry_after`) is honoured, and the
    /// services' answers for a deleted hook (Slack 404, 410 or `no_service`; Discord 404 with
    /// code 10015) disable the subscription with the answer as the reason.
    #[oai(path = "/webhooks", method = "post", operation_id = "v2_webhooks_create")]
    async fn webhooks_create(
        &self,
        state: Data<&AppState>,
        req: &Request,
        body: JsonBody<WebhookCreate>,
    ) -> Result<CreatedResponse, ApiError<WebhooksCreateV2>> {
        let token = partner_token(req)?;
        let body = body.0;
        let url = checked_url(&state, &body.url).await?;
        let daos = checked_daos(&state, &body.dao_ids.unwrap_or_default()).await?;
        let proposals = checked_proposals(&state, &body.proposal_keys.unwrap_or_default()).await?;
        let voters = checked_voters(&state, &body.voters.unwrap_or_default()).await?;
        let filters = Filters::new(daos, body.kinds.unwrap_or_default()).with_proposals(proposals).with_voters(voters);
        let target = Target { url, filters, description: body.description, format: body.format };
        let created = subs::create(state.primary()?, token.id, &target, now_ms()).await.map_err(|e| match e {
            CreateError::TooMany => Problem::new(
                ErrorCode::ValidationError,
                format!("This token holds {MAX_SUBSCRIPTIONS_PER_TOKEN} webhooks, the most it may; delete one first."),
            ),
            CreateError::Store(e) => problem_marking_read_failed(&e),
        })?;
        state.webhook_wake.notify_one();
        let location = format!("/v2/webhooks/{}", created.public_id);
        let secret = created.secret.clone();
        let shown = WebhookWithSecret { webhook: shown_one(&state, created).await?, secret };
        Ok(CreatedResponse::Created(Json(V2Single::new(shown, freshness(&state))), location))
    }

    /// List your webhooks
    ///
    /// The subscriptions of the calling partner token, oldest first, without their secrets.
    #[oai(path = "/webhooks", method = "get", operation_id = "v2_webhooks_list")]
    async fn webhooks_list(
        &self,
        state: Data<&AppState>,
        req: &Request,
        /// Subscriptions per page.
        limit: Query<Option<V2Limit<MostLists>>>,
        /// `meta.page.nextCursor` of the previous page, unchanged.
        cursor: Query<Option<String>>,
    ) -> Result<Json<V2List<Webhook>>, ApiError<WebhooksListV2>> {
        let token = partner_token(req)?;
        let list = Listing::<WebhooksListV2, IdAfter>::append_only(&state, V2Limit::resolve(limit.0));
        let after = list.after(cursor.0.as_deref())?.map_or(0, |IdAfter(id)| id);
        let rows = subs::page(state.primary()?, token.id, after, list.rows_to_read()).await?;
        let rows = shown(&state, rows).await?;
        Ok(list.page_filter_map(rows, |s| IdAfter(s.subscription.id), |s| Webhook::of(&s).ok()))
    }

    /// Get a webhook
    #[oai(path = "/webhooks/:webhookId", method = "get", operation_id = "v2_webhooks_get")]
    async fn webhooks_get(
        &self,
        state: Data<&AppState>,
        req: &Request,
        /// The webhook's `id` (`wh_…`).
        #[oai(name = "webhookId")]
        webhook_id: Path<WebhookIdParam>,
    ) -> Result<Json<V2Single<Webhook>>, ApiError<WebhooksGetV2>> {
        let s = owned(&state, req, &webhook_id.0).await?;
        Ok(Json(V2Single::new(shown_one(&state, s).await?, freshness(&state))))
    }

    /// Change a webhook
    ///
    /// Changes the members sent: `url`, `format`, `daoIds`, `kinds`, `proposalKeys`, `voters`,
    /// `description`, `enabled`. Enabling a disabled webhook sends its pending deliveries at once,
    /// and the entries published while it was disabled. A new filter applies to entries queued
    /// from now on; a new format to every message sent from now on, those pending included.
    #[oai(path = "/webhooks/:webhookId", method = "patch", operation_id = "v2_webhooks_update")]
    async fn webhooks_update(
        &self,
        state: Data<&AppState>,
        req: &Request,
        /// The webhook's `id` (`wh_…`).
        #[oai(name = "webhookId")]
        webhook_id: Path<WebhookIdParam>,
        body: JsonBody<WebhookUpdate>,
    ) -> Result<Json<V2Single<Webhook>>, ApiError<WebhooksUpdateV2>> {
        let s = owned(&state, req, &webhook_id.0).await?;
        let body = body.0;
        let url = match &body.url {
            Some(url) => Some(checked_url(&state, url).await?),
            None => None,
        };
        let daos = match &body.dao_ids {
            Some(daos) => Some(checked_daos(&state, daos).await?),
            None => None,
        };
        let proposals = match &body.proposal_keys {
            Some(keys) => Some(checked_proposals(&state, keys).await?),
            None => None,
        };
        let voters = match &body.voters {
            Some(voters) => Some(checked_voters(&state, voters).await?),
            None => None,
        };
        let change = Change {
            url,
            daos,
            kinds: body.kinds,
            proposals,
            voters,
            description: body.description.map(|d| Some(d).filter(|d| !d.is_empty())),
            enabled: body.enabled,
            format: body.format,
        };
        let s = subs::update(state.primary()?, s, &change, now_ms()).await?;
        state.webhook_wake.notify_one();
        Ok(Json(V2Single::new(shown_one(&state, s).await?, freshness(&state))))
    }

    /// Delete a webhook
    ///
    /// Deletes the subscription with its pending deliveries and its attempts.
    #[oai(path = "/webhooks/:webhookId", method = "delete", operation_id = "v2_webhooks_delete")]
    async fn webhooks_delete(
        &self,
        state: Data<&AppState>,
        req: &Request,
        /// The webhook's `id` (`wh_…`).
        #[oai(name = "webhookId")]
        webhook_id: Path<WebhookIdParam>,
    ) -> Result<DeletedResponse, ApiError<WebhooksDeleteV2>> {
        let s = owned(&state, req, &webhook_id.0).await?;
        subs::delete(state.primary()?, &s).await?;
        state.webhook_wake.notify_one();
        Ok(DeletedResponse::Deleted)
    }

    /// Rotate a webhook's secret
    ///
    /// Returns a new `whsec_` secret, shown this once. For {{WEBHOOK_ROTATION_HOURS}} hours each
    /// delivery carries two signatures in `webhook-signature` (space-separated, as the standard
    /// allows): one by the new secret and one by the previous, so the receiver can switch
    /// without losing a message.
    #[oai(path = "/webhooks/:webhookId/rotate-secret", method = "post", operation_id = "v2_webhook_secret_rotate")]
    async fn webhook_secret_rotate(
        &self,
        state: Data<&AppState>,
        req: &Request,
        /// The webhook's `id` (`wh_…`).
        #[oai(name = "webhookId")]
        webhook_id: Path<WebhookIdParam>,
    ) -> Result<Json<V2Single<WebhookWithSecret>>, ApiError<WebhookSecretRotateV2>> {
        let s = owned(&state, req, &webhook_id.0).await?;
        let s = subs::rotate(state.primary()?, s, now_ms()).await?;
        state.webhook_wake.notify_one();
        let secret = s.secret.clone();
        let shown = WebhookWithSecret { webhook: shown_one(&state, s).await?, secret };
        Ok(Json(V2Single::new(shown, freshness(&state))))
    }

    /// Send a test message
    ///
    /// Queues a message of type `webhook.test` to the webhook's URL, signed and retried like
    /// every delivery (for `slack` and `discord`, a test message of that service's shape), and
    /// sent at once while the webhook is enabled. Its attempts appear in
    /// `GET /v2/webhooks/{webhookId}/deliveries`.
    #[oai(path = "/webhooks/:webhookId/test", method = "post", operation_id = "v2_webhook_test_send")]
    async fn webhook_test_send(
        &self,
        state: Data<&AppState>,
        req: &Request,
        /// The webhook's `id` (`wh_…`).
        #[oai(name = "webhookId")]
        webhook_id: Path<WebhookIdParam>,
    ) -> Result<QueuedResponse, ApiError<WebhookTestSendV2>> {
        let s = owned(&state, req, &webhook_id.0).await?;
        let now = now_ms();
        let note = "A test message from govdata: this endpoint receives the feed's entries.";
        let msg_id = queue::queue_test(state.primary()?, &s, note, now).await?;
        state.webhook_wake.notify_one();
        let queued =
            WebhookQueued { message_id: Some(msg_id), from: None, through: None, queued_at: Timestamp::from_ms(now) };
        Ok(QueuedResponse::Queued(Json(V2Single::new(queued, freshness(&state)))))
    }

    /// List a webhook's delivery attempts
    ///
    /// Every attempt, newest first: when, the outcome, the endpoint's status code, how long it
    /// took, why it failed, and when the next attempt is due. Attempts are kept
    /// {{FEED_RETENTION_DAYS}} days.
    #[oai(path = "/webhooks/:webhookId/deliveries", method = "get", operation_id = "v2_webhook_deliveries_list")]
    async fn webhook_deliveries_list(
        &self,
        state: Data<&AppState>,
        req: &Request,
        /// The webhook's `id` (`wh_…`).
        #[oai(name = "webhookId")]
        webhook_id: Path<WebhookIdParam>,
        /// Attempts per page.
        limit: Query<Option<V2Limit<MostLists>>>,
        /// `meta.page.nextCursor` of the previous page, unchanged.
        cursor: Query<Option<String>>,
    ) -> Result<Json<V2List<WebhookAttempt>>, ApiError<WebhookDeliveriesListV2>> {
        let s = owned(&state, req, &webhook_id.0).await?;
        let list = Listing::<WebhookDeliveriesListV2, IdAfter>::append_only(&state, V2Limit::resolve(limit.0))
            .filtered(WebhookDeliveriesShape { webhook_id: &s.public_id });
        let before = list.after(cursor.0.as_deref())?.map(|IdAfter(id)| id);
        let rows = queue::attempts(state.primary()?, s.id, before, list.rows_to_read()).await?;
        Ok(list.page(rows, |a| IdAfter(a.id), WebhookAttempt::of))
    }

    /// Replay a webhook's entries
    ///
    /// Queues again the entries after `after` up to the newest already queued, those the
    /// filters want: for a receiver that lost what it had received, or after a disabled spell.
    /// Entries are kept {{FEED_RETENTION_DAYS}} days; an older `after` is refused with
    /// INVALID_CURSOR.
    #[oai(path = "/webhooks/:webhookId/replay", method = "post", operation_id = "v2_webhooks_replay")]
    async fn webhooks_replay(
        &self,
        state: Data<&AppState>,
        req: &Request,
        /// The webhook's `id` (`wh_…`).
        #[oai(name = "webhookId")]
        webhook_id: Path<WebhookIdParam>,
        body: JsonBody<WebhookReplay>,
    ) -> Result<QueuedResponse, ApiError<WebhooksReplayV2>> {
        let s = owned(&state, req, &webhook_id.0).await?;
        let after = FeedPosition::parse(&body.0.after).map_or(0, |p| p.0);
        if let Some(pruned) = store::feed::pruned_past(state.primary()?, after).await? {
            return Err(feed::expired(after, pruned, "after", ParamLocation::Body).into());
        }
        let now = now_ms();
        let (from, through) = queue::replay(state.primary()?, s, after, now).await?;
        state.webhook_wake.notify_one();
        let queued = WebhookQueued {
            message_id: None,
            from: Some(from.to_string()),
            through: Some(through.to_string()),
            queued_at: Timestamp::from_ms(now),
        };
        Ok(QueuedResponse::Queued(Json(V2Single::new(queued, freshness(&state)))))
    }
}
