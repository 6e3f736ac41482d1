//! The formats a subscription's messages are written in besides Standard Webhooks: Slack
//! incoming-webhook messages and Discord webhook messages, each rendered from the same feed
//! entry a Standard Webhooks message carries (`facts`), within the service's documented limits
//! (`contract::webhooks::{SLACK_LIMITS, DISCORD_LIMITS}`), and what those services answer
//! (`answer`). The sender (`dispatch`) is the same for every format: the queue, leases, retry
//! schedule and address guard do not know which format a message is in.
pub mod answer;
mod discord;
pub mod facts;
mod slack;
pub mod text;

use serde_json::Value;

use crate::contract::webhooks::WebhookFormat;

pub use answer::{Answer, Judged, judge};
pub use facts::{Context, Facts, proposal_key};

/// A chat service's format: a message for people, rendered from an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Chat {
    Slack,
    Discord,
}

impl Chat {
    /// The chat service `format` posts to (`None`: Standard Webhooks, the entry itself).
    pub const fn of(format: WebhookFormat) -> Option<Self> {
        match format {
            WebhookFormat::StandardWebhooks => None,
            WebhookFormat::Slack => Some(Self::Slack),
            WebhookFormat::Discord => Some(Self::Discord),
        }
    }

    fn render(self, facts: &Facts) -> Value {
        match self {
            Self::Slack => slack::message(facts),
            Self::Discord => discord::message(facts),
        }
    }
}

/// The message of `entry` (its JSON text, as `/v2/feed` shows it) for `chat`.
pub fn entry_message(chat: Chat, entry: &str, context: Context<'_>) -> Result<String, String> {
    Ok(chat.render(&Facts::read(entry, context)?).to_string())
}

/// A test message for `chat`, from its Standard Webhooks body `payload` (`{type, timestamp,
/// data: {webhookId, message}}`, as the queue keeps it).
pub fn test_message(chat: Chat, payload: &str) -> String {
    let value: Value = serde_json::from_str(payload).unwrap_or(Value::Null);
    let data = &value["data"];
    let webhook = data["webhookId"].as_str().unwrap_or("this webhook");
    let note = data["message"].as_str().unwrap_or("A test message from govdata.");
    match chat {
        Chat::Slack => slack::test(webhook, note),
        Chat::Discord => discord::test(webhook, note),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_message_names_its_webhook() {
        let payload = r#"{"type":"webhook.test","timestamp":"2026-01-01T00:00:00.000Z","data":{"webhookId":"wh_ab","message":"hi"}}"#;
        let slack: Value = serde_json::from_str(&test_message(Chat::Slack, payload)).unwrap();
        assert_eq!(slack["text"], "govdata test message for wh_ab: hi");
        let discord: Value = serde_json::from_str(&test_message(Chat::Discord, payload)).unwrap();
        assert_eq!(discord["content"], "govdata test message for wh_ab");
        assert_eq!(Chat::of(WebhookFormat::StandardWebhooks), None);
    }
}
