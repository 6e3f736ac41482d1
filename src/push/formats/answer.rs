//! What a receiver's answer means, as each format's service documents it: success, when to try
//! again, and whether the destination is gone for good (the subscription is then disabled, with
//! the answer as the reason, instead of being retried for days).
//!
//! - Standard Webhooks: any 2xx is delivered; a 410 is gone; a 429 or 503 may say when to retry
//!   (`Retry-After`, whole seconds).
//! - Slack: 200 (`ok`) is delivered; a 429 carries `Retry-After` (seconds); a 404 or 410, and the
//!   answers of [`SLACK_GONE_ANSWERS`] (`no_service`, `channel_is_archived`, ...) are gone. Its
//!   errors are short plain-text codes, kept in the attempt's error.
//! - Discord: 204 (or 200 with `?wait=true`) is delivered; a 429 carries both a `Retry-After`
//!   header and `retry_after` in its JSON body (float seconds): the later of the two is kept; a
//!   404 with code 10015 (Unknown Webhook) and code 50027 (invalid webhook token) are gone.
use std::time::Duration;

use reqwest::StatusCode;

use crate::contract::webhooks::{
    DISCORD_INVALID_WEBHOOK_TOKEN, DISCORD_UNKNOWN_WEBHOOK, SLACK_GONE_ANSWERS, WebhookFormat,
};

/// What an attempt's error adds to a 3xx status.
pub const REDIRECT_NOT_FOLLOWED: &str = "redirects are not followed";

/// The longest part of an answer's body an attempt's error quotes, in characters.
const QUOTED_CHARS: usize = 200;

/// A receiver's answer, as far as it is read.
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    pub status: StatusCode,
    /// The `Retry-After` header's text.
    pub retry_after: Option<&'a str>,
    /// The start of the body.
    pub body: &'a [u8],
}

/// What an answer comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// Why the attempt failed (`None`: delivered).
    pub error: Option<String>,
    /// When the receiver asked to be tried again.
    pub retry_after: Option<Duration>,
    /// The destination is gone for good: disable the subscription.
    pub gone: bool,
}

/// `Retry-After` in whole seconds (the HTTP form).
fn whole_seconds(text: &str) -> Option<Duration> {
    text.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// Seconds that may have a fraction (`1.5`), as Discord writes them.
fn seconds(text: &str) -> Option<Duration> {
    fractional(text.trim().parse().ok()?)
}

fn fractional(seconds: f64) -> Option<Duration> {
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::try_from_secs_f64(seconds).ok()).flatten()
}

/// The body as one line of at most [`QUOTED_CHARS`] characters, or `None` when it says nothing.
fn quoted(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!line.is_empty()).then(|| super::text::clip(&line, QUOTED_CHARS, super::text::Escape::None))
}

/// What `answer` to a message in `format` comes to.
pub fn judge(format: WebhookFormat, answer: Answer<'_>) -> Judged {
    let status = answer.status;
    let said = |detail: Option<String>| match (status, detail) {
        (s, _) if s.is_success() => None,
        (s, _) if s.is_redirection() => Some(format!("the endpoint answered {s}; {REDIRECT_NOT_FOLLOWED}")),
        (s, Some(detail)) => Some(format!("the endpoint answered {s}: {detail}")),
        (s, None) => Some(format!("the endpoint answered {s}")),
    };
    match format {
        WebhookFormat::StandardWebhooks => Judged {
            error: said(None),
            retry_after: answer.retry_after.and_then(whole_seconds),
            gone: status == StatusCode::GONE,
        },
        WebhookFormat::Slack => {
            let body = quoted(answer.body);
            let gone_answer = body.as_deref().is_some_and(|b| SLACK_GONE_ANSWERS.contains(&b));
            let gone =
                !status.is_success() && (status == StatusCode::NOT_FOUND || status == StatusCode::GONE || gone_answer);
            Judged {
                error: said(body.map(|b| if gone { format!("{b} (Slack: the incoming webhook is gone)") } else { b })),
                retry_after: answer.retry_after.and_then(whole_seconds),
                gone,
            }
        }
        WebhookFormat::Discord => {
            let json: Option<serde_json::Value> = serde_json::from_slice(answer.body).ok();
            let field = |name: &str| json.as_ref().and_then(|j| j.get(name).cloned());
            let code = field("code").and_then(|c| c.as_i64());
            let gone = !status.is_success()
                && ((status == StatusCode::NOT_FOUND && code == Some(DISCORD_UNKNOWN_WEBHOOK))
                    || code == Some(DISCORD_INVALID_WEBHOOK_TOKEN));
            let detail = match (field("message").and_then(|m| m.as_str().map(str::to_owned)), code) {
                (Some(message), Some(code)) => quoted(message.as_bytes()).map(|m| format!("{m} (Discord code {code})")),
                (Some(message), None) => quoted(message.as_bytes()),
                (None, _) => quoted(answer.body),
            };
            let detail = detail.map(|d| if gone { format!("{d}: the Discord webhook is gone") } else { d });
            // The header says whole seconds (rounded up), the body the exact time: the later
            // of the two, so the retry is never early.
            let header = answer.retry_after.and_then(seconds);
            let body = field("retry_after").and_then(|r| r.as_f64()).and_then(fractional);
            Judged { error: said(detail), retry_after: header.max(body), gone }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge_of(format: WebhookFormat, status: u16, retry_after: Option<&str>, body: &str) -> Judged {
        let status = StatusCode::from_u16(status).unwrap();
        judge(format, Answer { status, retry_after, body: body.as_bytes() })
    }

    #[test]
    fn standard_webhooks_answers_are_judged_as_before() {
        let s = WebhookFormat::StandardWebhooks;
        assert_eq!(judge_of(s, 204, None, ""), Judged { error: None, retry_after: None, gone: false });
        let failed = judge_of(s, 500, None, "boom");
        assert_eq!(failed.error.as_deref(), Some("the endpoint answered 500 Internal Server Error"));
        assert!(!failed.gone);
        assert!(judge_of(s, 410, None, "").gone);
        assert_eq!(judge_of(s, 429, Some("42"), "").retry_after, Some(Duration::from_secs(42)));
        assert_eq!(judge_of(s, 429, Some("1.5"), "").retry_after, None, "whole seconds, as before");
        assert_eq!(
            judge_of(s, 307, None, "").error.as_deref(),
            Some("the endpoint answered 307 Temporary Redirect; redirects are not followed")
        );
    }

    #[test]
    fn slack_answers() {
        let s = WebhookFormat::Slack;
        assert_eq!(judge_of(s, 200, None, "ok").error, None);
        let limited = judge_of(s, 429, Some("3"), r#"{"count": 7}"#);
        assert_eq!(limited.retry_after, Some(Duration::from_secs(3)));
        assert!(!limited.gone);
        for (status, body) in [(404, "no_service"), (410, "channel_is_archived"), (404, ""), (403, "invalid_token")] {
            let gone = judge_of(s, status, None, body);
            assert!(gone.gone, "{status} {body}");
        }
        assert_eq!(
            judge_of(s, 410, None, "channel_is_archived").error.as_deref(),
            Some("the endpoint answered 410 Gone: channel_is_archived (Slack: the incoming webhook is gone)")
        );
        let bad = judge_of(s, 400, None, "invalid_payload");
        assert!(!bad.gone);
        assert_eq!(bad.error.as_deref(), Some("the endpoint answered 400 Bad Request: invalid_payload"));
        assert!(!judge_of(s, 500, None, "rollup_error").gone);
        let long = judge_of(s, 400, None, &"x ".repeat(1_000)).error.unwrap();
        assert!(long.chars().count() < 260, "{long}");
    }

    #[test]
    fn discord_answers() {
        let d = WebhookFormat::Discord;
        assert_eq!(judge_of(d, 204, None, "").error, None);
        assert_eq!(judge_of(d, 200, None, "{}").error, None);
        // The body's float is later than the header's whole seconds: it is kept.
        let body = r#"{"message": "You are being rate limited.", "retry_after": 1.5, "global": false}"#;
        assert_eq!(judge_of(d, 429, Some("1"), body).retry_after, Some(Duration::from_millis(1_500)));
        assert_eq!(judge_of(d, 429, Some("2"), body).retry_after, Some(Duration::from_secs(2)));
        assert_eq!(judge_of(d, 429, None, body).retry_after, Some(Duration::from_millis(1_500)));
        assert_eq!(judge_of(d, 429, Some("0.25"), "").retry_after, Some(Duration::from_millis(250)));
        let gone = judge_of(d, 404, None, r#"{"message": "Unknown Webhook", "code": 10015}"#);
        assert!(gone.gone);
        assert_eq!(
            gone.error.as_deref(),
            Some(
                "the endpoint answered 404 Not Found: Unknown Webhook (Discord code 10015): the Discord webhook is gone"
            )
        );
        assert!(judge_of(d, 401, None, r#"{"message": "Invalid Webhook Token", "code": 50027}"#).gone);
        // Another 404 (a thread not found) is retried as any failure.
        assert!(!judge_of(d, 404, None, r#"{"message": "Unknown Channel", "code": 10003}"#).gone);
        let invalid = judge_of(d, 400, None, r#"{"message": "Invalid Form Body", "code": 50035}"#);
        assert_eq!(
            invalid.error.as_deref(),
            Some("the endpoint answered 400 Bad Request: Invalid Form Body (Discord code 50035)")
        );
        assert_eq!(judge_of(d, 429, Some("-1"), r#"{"retry_after": "NaN"}"#).retry_after, None);
    }
}
