//! Webhooks, declared once: Standard Webhooks v1.0.0 deliveries of the feed's entries to the
//! URLs partners subscribe, with the standard's retry schedule.
//!
//! A delivery is a `POST` of `{type, timestamp, data}` (`data`: the feed entry as `/v2/feed`
//! shows it) with `webhook-id` (the same on every attempt and replay of one entry to one
//! subscription: the receiver's idempotency key), `webhook-timestamp` (the attempt's time, in
//! seconds) and `webhook-signature` (`v1,` + base64 HMAC-SHA256 of `id.timestamp.body` under
//! the subscription's `whsec_` secret; during a rotation's overlap, one signature per secret,
//! space-separated). Deliveries are at least once: a receiver dedupes on `webhook-id`.
use std::time::Duration;

use poem_openapi::Enum;

use super::vocabulary::vocabulary;

vocabulary! {
    /// How a subscription's messages are written (`standard_webhooks` when a subscription names
    /// none): `standard_webhooks`, the entry in a Standard Webhooks message signed with the
    /// `whsec_` secret; `slack`, a Slack incoming-webhook message (a `text` fallback and Block
    /// Kit `blocks`); `discord`, a Discord webhook message with one embed and no mention parsed.
    /// A Slack or Discord message says what happened, the DAO, the proposal with its link here
    /// and upstream, when voting ends (UTC) and the entry's exact figures, within the service's
    /// documented length limits (a longer text is cut, with an ellipsis); it is not signed (the
    /// service's URL is the secret). Every format carries the same entries, with the same
    /// retries, leases and address guard.
    #[derive(Enum)]
    #[oai(rename_all = "snake_case")]
    WebhookFormat ("webhook format") {
        /// Standard Webhooks v1.0.0: `{type, timestamp, data}`, `data` the entry as `/v2/feed`
        /// shows it, signed with the subscription's `whsec_` secret.
        StandardWebhooks = "standard_webhooks",
        /// A Slack incoming-webhook message: a `text` fallback and Block Kit `blocks` saying
        /// what happened, the DAO, the proposal with its links, the voting deadline in UTC and
        /// the exact figures. Unsigned: the incoming webhook's URL is its secret.
        Slack = "slack",
        /// A Discord webhook message: one embed with the same facts, sent with
        /// `allowed_mentions: {"parse": []}` so no text in it pings anyone. Unsigned: the
        /// webhook's URL is its secret.
        Discord = "discord",
    }
}

impl WebhookFormat {
    /// What a subscription is written in when it names no format.
    pub const DEFAULT: Self = Self::StandardWebhooks;

    /// Whether messages carry the Standard Webhooks headers (`webhook-id`, `-timestamp`,
    /// `-signature`). Slack and Discord take none: their URL is the secret.
    pub const fn signed(self) -> bool {
        matches!(self, Self::StandardWebhooks)
    }
}

/// Slack's documented limits for an incoming-webhook message (the service truncates or refuses
/// past them; a message is rendered within them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlackLimits {
    /// `text`, in characters (longer text is truncated by Slack: changelog 2018-04).
    pub text_chars: usize,
    /// Blocks in one message.
    pub blocks: usize,
    /// A section block's `text`, in characters.
    pub section_text_chars: usize,
    /// Text objects in a section's `fields`.
    pub section_fields: usize,
    /// One of those fields, in characters.
    pub section_field_chars: usize,
}

/// Slack's limits: text 40,000 characters, 50 blocks, a section's text 3,000, its fields 10 of
/// 2,000 each (docs.slack.dev Block Kit reference).
pub const SLACK_LIMITS: SlackLimits = SlackLimits {
    text_chars: 40_000,
    blocks: 50,
    section_text_chars: 3_000,
    section_fields: 10,
    section_field_chars: 2_000,
};

/// Discord's documented limits for a webhook message with an embed (a message past any of
/// them is refused with 400).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscordLimits {
    /// `content`, in characters.
    pub content_chars: usize,
    pub title_chars: usize,
    pub description_chars: usize,
    /// Fields in one embed.
    pub fields: usize,
    pub field_name_chars: usize,
    pub field_value_chars: usize,
    pub footer_chars: usize,
    pub author_name_chars: usize,
    /// Title, description, field names and values, footer and author name together, across
    /// every embed of the message.
    pub embed_total_chars: usize,
}

/// Discord's limits (discord-api-docs, resources/message: embed limits).
pub const DISCORD_LIMITS: DiscordLimits = DiscordLimits {
    content_chars: 2_000,
    title_chars: 256,
    description_chars: 4_096,
    fields: 25,
    field_name_chars: 256,
    field_value_chars: 1_024,
    footer_chars: 2_048,
    author_name_chars: 256,
    embed_total_chars: 6_000,
};

/// Discord's JSON error code for a deleted webhook (`404 {"message": "Unknown Webhook", "code":
/// 10015}`): the destination is gone, and the subscription is disabled.
pub const DISCORD_UNKNOWN_WEBHOOK: i64 = 10_015;
/// Discord's JSON error code for a webhook token that is not (or no longer) valid: also gone.
pub const DISCORD_INVALID_WEBHOOK_TOKEN: i64 = 50_027;

/// Slack's plain-text answers that say an incoming webhook is gone for good, whatever the status
/// that carries them: removed or disabled (`no_service`, observed), its channel archived
/// (`channel_is_archived`, 410), its token revoked or posting to it prohibited (`invalid_token`,
/// `action_prohibited`, 403). A 404 or a 410 from Slack is gone too, whatever its body.
pub const SLACK_GONE_ANSWERS: &[&str] = &["no_service", "channel_is_archived", "invalid_token", "action_prohibited"];

/// The standard's retry schedule: the delay before each attempt after the previous one failed
/// (the first attempt goes at once). After the last, the delivery is `failed` and kept; a
/// replay sends it again.
pub const RETRY_SCHEDULE: [Duration; 10] = [
    Duration::ZERO,
    Duration::from_secs(5),
    Duration::from_secs(5 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(2 * 3_600),
    Duration::from_secs(5 * 3_600),
    Duration::from_secs(10 * 3_600),
    Duration::from_secs(14 * 3_600),
    Duration::from_secs(20 * 3_600),
    Duration::from_secs(24 * 3_600),
];

/// How long one attempt may take, connection included.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(15);

/// A `Retry-After` (429, 503) is honoured up to this long.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3_600);

/// A payload larger than this is sent thin: the entry's identity and the URL that serves it.
pub const THIN_PAYLOAD_BYTES: usize = 20_000;

/// An endpoint that has failed every attempt for this long is disabled, with the reason shown.
pub const DISABLE_AFTER_FAILING: Duration = Duration::from_secs(5 * 24 * 3_600);

/// Attempts in flight to one subscription at most: a slow receiver holds only its own slots.
pub const ENDPOINT_CONCURRENCY: usize = 4;

/// How long a process holds the attempts it claimed; a process killed meanwhile leaves them to
/// be claimed again after it (longer than an attempt may take).
pub const CLAIM_LEASE: Duration = Duration::from_secs(60);

/// After a secret is rotated, the previous one still signs (beside the new one) this long.
pub const ROTATION_OVERLAP: Duration = Duration::from_secs(24 * 3_600);

/// Subscriptions one partner token may hold.
pub const MAX_SUBSCRIPTIONS_PER_TOKEN: u64 = 100;

/// The longest subscribed URL, in bytes.
pub const MAX_URL_BYTES: usize = 2_048;

/// The longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 500;

/// The most DAOs one subscription may name.
pub const MAX_DAO_IDS: usize = 100;

/// The most proposals one subscription, or one stream (`proposalKeys`), may name.
pub const MAX_PROPOSAL_KEYS: usize = 100;

/// The most voters one subscription, or one stream (`voters`), may watch.
pub const MAX_VOTERS: usize = 100;

/// The longest text a subscription's `voters` member may be (an ENS name is the long one).
pub const MAX_VOTER_CHARS: usize = 256;

/// The prefix of a subscription's secret (the standard's), and of its public id.
pub const SECRET_PREFIX: &str = "whsec_";
pub const SUBSCRIPTION_ID_PREFIX: &str = "wh_";
pub const MESSAGE_ID_PREFIX: &str = "msg_";

/// Random bytes of a subscription's public id, written after [`SUBSCRIPTION_ID_PREFIX`] as
/// lowercase hex (80 bits: unguessable enough for an id that grants nothing alone).
pub const SUBSCRIPTION_ID_BYTES: usize = 10;

/// A subscription's public id (`wh_` and its bytes in lowercase hex), read once where it
/// arrives: text of another form names no webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookId(String);

impl WebhookId {
    /// The id of a new subscription, from its random bytes.
    pub fn of_bytes(bytes: &[u8; SUBSCRIPTION_ID_BYTES]) -> Self {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Self(format!("{SUBSCRIPTION_ID_PREFIX}{hex}"))
    }

    /// `text` as a webhook id, when it has the form every id has.
    pub fn parse(text: &str) -> Option<Self> {
        let hex = text.strip_prefix(SUBSCRIPTION_ID_PREFIX)?;
        let lower_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        (hex.len() == 2 * SUBSCRIPTION_ID_BYTES && hex.bytes().all(lower_hex)).then(|| Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The `type` of the message `POST /v2/webhooks/{id}/test` sends (never a feed kind).
pub const TEST_MESSAGE_TYPE: &str = "webhook.test";

/// The headers of a delivery (Standard Webhooks).
pub const ID_HEADER: &str = "webhook-id";
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
pub const SIGNATURE_HEADER: &str = "webhook-signature";

/// The environment variable that lets subscriptions reach loopback and private addresses, and
/// plain `http` (tests, private deployments).
pub const ALLOW_PRIVATE_ENV: &str = "GOVDATA_WEBHOOK_ALLOW_PRIVATE";

/// The message id of feed entry `seq` sent to subscription `subscription` (its public id):
/// the same on every attempt and every replay.
pub fn message_id(subscription: &str, seq: i64) -> String {
    format!("{MESSAGE_ID_PREFIX}{}_{seq}", subscription.trim_start_matches(SUBSCRIPTION_ID_PREFIX))
}

/// The delay before attempt `next` (1-based: attempt 2 is the first retry), or `None` when
/// the schedule is over.
pub fn retry_delay(next: usize) -> Option<Duration> {
    next.checked_sub(1).and_then(|i| RETRY_SCHEDULE.get(i)).copied()
}

/// The schedule in words: `at once, then after 5 s, 5 min, 30 min, 2 h, …`.
pub fn schedule_text() -> String {
    let words: Vec<String> = RETRY_SCHEDULE[1..]
        .iter()
        .map(|d| match d.as_secs() {
            s if s % 3_600 == 0 => format!("{} h", s / 3_600),
            s if s % 60 == 0 => format!("{} min", s / 60),
            s => format!("{s} s"),
        })
        .collect();
    format!("at once, then after {}", words.join(", "))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_webhook_id_reads_only_the_form_every_id_has() {
        let id = super::WebhookId::of_bytes(&[0xab; super::SUBSCRIPTION_ID_BYTES]);
        assert_eq!(id.as_str(), "wh_abababababababababab");
        assert_eq!(super::WebhookId::parse(id.as_str()), Some(id));
        for other in ["wh_ABABABABABABABABABAB", "wh_abab", "ab_abababababababababab", "wh_abababababababababag"] {
            assert_eq!(super::WebhookId::parse(other), None, "{other}");
        }
    }

    use super::*;

    #[test]
    fn the_schedule_is_the_standards() {
        assert_eq!(retry_delay(1), Some(Duration::ZERO));
        assert_eq!(retry_delay(2), Some(Duration::from_secs(5)));
        assert_eq!(retry_delay(10), Some(Duration::from_secs(86_400)));
        assert_eq!(retry_delay(11), None);
        assert_eq!(retry_delay(0), None);
        let total: Duration = RETRY_SCHEDULE.iter().sum();
        // About 3.15 days: an endpoint down a day gets every entry, and one down past
        // DISABLE_AFTER_FAILING is disabled.
        assert_eq!(total.as_secs(), 5 + 300 + 1_800 + 3_600 * (2 + 5 + 10 + 14 + 20 + 24));
        assert!(ATTEMPT_TIMEOUT < CLAIM_LEASE);
        assert_eq!(schedule_text(), "at once, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h");
    }

    #[test]
    fn a_message_id_is_stable_per_entry_and_subscription() {
        assert_eq!(message_id("wh_abc", 42), "msg_abc_42");
        assert_ne!(message_id("wh_abc", 42), message_id("wh_abd", 42));
    }
}
