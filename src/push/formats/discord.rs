//! Discord webhook messages: a short `content` line and one embed (title linked to the item on
//! this server, the summary and links, the deadline and figures as fields, a footer naming the
//! entry), within the documented limits (`DISCORD_LIMITS`), the embed's total included, and
//! with `allowed_mentions: {"parse": []}` so that no `@everyone` or user mention in an entry's
//! text pings anyone.
use serde_json::{Value, json};

use crate::contract::webhooks::DISCORD_LIMITS;

use super::facts::Facts;
use super::text::{Escape, Line, chars, clip, compose};

/// A masked link, `[label](url)`, when the URL cannot end it early.
fn link(url: &str, label: &str) -> Option<String> {
    (!url.contains([')', '(', ' '])).then(|| format!("[{label}]({url})"))
}

/// No mention of any kind is parsed from the message's text.
fn no_mentions() -> Value {
    json!({ "parse": [] })
}

/// The embed's parts, before they are fitted to the total.
struct Embed {
    title: String,
    description: Vec<Line>,
    fields: Vec<(String, String)>,
    footer: String,
}

impl Embed {
    /// The embed with its description cut to `description` characters and its first `fields`
    /// fields, and the characters it counts toward the total.
    fn render(&self, url: Option<&str>, description: usize, fields: usize, timestamp: Option<&str>) -> (Value, usize) {
        let l = DISCORD_LIMITS;
        let title = clip(&self.title, l.title_chars, Escape::None);
        let description = compose(&self.description, description.min(l.description_chars), Escape::None);
        let fields: Vec<(String, String)> = self
            .fields
            .iter()
            .take(fields.min(l.fields))
            .map(|(n, v)| (clip(n, l.field_name_chars, Escape::None), clip(v, l.field_value_chars, Escape::None)))
            .collect();
        let footer = clip(&self.footer, l.footer_chars, Escape::None);
        let total = chars(&title)
            + chars(&description)
            + fields.iter().map(|(n, v)| chars(n) + chars(v)).sum::<usize>()
            + chars(&footer);
        let mut embed = json!({
            "type": "rich",
            "title": title,
            "fields": fields.iter().map(|(n, v)| json!({ "name": n, "value": v, "inline": true })).collect::<Vec<_>>(),
            "footer": { "text": footer },
        });
        if !description.is_empty() {
            embed["description"] = json!(description);
        }
        if let Some(url) = url {
            embed["url"] = json!(url);
        }
        if let Some(at) = timestamp {
            embed["timestamp"] = json!(at);
        }
        (embed, total)
    }

    /// The embed within the message total: the description shortened first, then the last
    /// fields left out, until it fits.
    fn fitted(&self, url: Option<&str>, timestamp: Option<&str>) -> Value {
        let l = DISCORD_LIMITS;
        let mut fields = self.fields.len().min(l.fields);
        let (embed, total) = self.render(url, l.description_chars, fields, timestamp);
        if total <= l.embed_total_chars {
            return embed;
        }
        loop {
            let (_, without) = self.render(url, 0, fields, timestamp);
            if without <= l.embed_total_chars || fields == 0 {
                let room = l.embed_total_chars.saturating_sub(without);
                return self.render(url, room, fields, timestamp).0;
            }
            fields -= 1;
        }
    }
}

/// The message of `facts`.
pub fn message(facts: &Facts) -> Value {
    let l = DISCORD_LIMITS;
    let headline = facts.headline();
    let dao = if facts.dao.is_empty() { String::new() } else { format!(" · {}", facts.dao) };
    let title = facts.title.clone().unwrap_or_else(|| headline.clone());
    let mut description = vec![Line::Cut(format!("**{headline}**{dao}"))];
    description.extend(facts.summary.iter().map(|s| Line::Cut(s.clone())));
    if let Some(upstream) = facts.upstream.as_deref().and_then(|u| link(u, "Open upstream")) {
        description.push(Line::Whole(upstream));
    }
    let embed = Embed {
        title,
        description,
        fields: facts.deadline().into_iter().chain(facts.figures.iter().cloned()).collect(),
        footer: format!("govdata{dao} · feed entry {}", facts.sequence),
    };
    let timestamp = facts.published_ms.map(crate::contract::time::rfc3339_ms);
    json!({
        "content": clip(&format!("{headline}{dao}: {}", facts.title.as_deref().unwrap_or("")), l.content_chars, Escape::None)
            .trim_end_matches([':', ' '])
            .to_owned(),
        "embeds": [embed.fitted(Some(&facts.link), timestamp.as_deref())],
        "allowed_mentions": no_mentions(),
    })
}

/// A test message (`POST /v2/webhooks/{webhookId}/test`) saying `note`.
pub fn test(webhook: &str, note: &str) -> Value {
    let embed = Embed {
        title: "govdata test message".to_owned(),
        description: vec![Line::Cut(note.to_owned())],
        fields: Vec::new(),
        footer: format!("govdata · {webhook}"),
    };
    json!({
        "content": clip(&format!("govdata test message for {webhook}"), DISCORD_LIMITS.content_chars, Escape::None),
        "embeds": [embed.fitted(None, None)],
        "allowed_mentions": no_mentions(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Facts {
        Facts {
            kind: "proposal_closed".to_owned(),
            what: "Proposal closed".to_owned(),
            dao: "uniswap".to_owned(),
            title: Some("@everyone Fund the grants program".to_owned()),
            summary: Some("Voting closed on \"Fund the grants program\" (state: closed)".to_owned()),
            link: "https://api.example/v2/proposals/p_1".to_owned(),
            upstream: Some("https://snapshot.box/#/s:u.eth/proposal/0x01".to_owned()),
            deadline_ms: Some(1_700_259_200_000),
            published_ms: Some(1_700_300_000_000),
            figures: vec![
                ("Scores total".to_owned(), "345043.3752998372".to_owned()),
                ("Quorum".to_owned(), "10000000".to_owned()),
            ],
            sequence: "7".to_owned(),
            correction: true,
        }
    }

    /// What Discord counts toward the 6,000 characters of a message's embeds.
    fn total(embed: &Value) -> usize {
        let s = |v: &Value| v.as_str().map_or(0, chars);
        s(&embed["title"])
            + s(&embed["description"])
            + s(&embed["footer"]["text"])
            + s(&embed["author"]["name"])
            + embed["fields"].as_array().map_or(0, |f| f.iter().map(|x| s(&x["name"]) + s(&x["value"])).sum())
    }

    #[test]
    fn a_message_states_the_facts_in_one_embed_and_pings_no_one() {
        let m = message(&facts());
        assert_eq!(m["allowed_mentions"], json!({ "parse": [] }));
        assert_eq!(m["content"], "Proposal closed (corrected) · uniswap: @everyone Fund the grants program");
        let e = &m["embeds"][0];
        assert_eq!(e["title"], "@everyone Fund the grants program");
        assert_eq!(e["url"], "https://api.example/v2/proposals/p_1");
        assert_eq!(
            e["description"],
            "**Proposal closed (corrected)** · uniswap\nVoting closed on \"Fund the grants program\" (state: closed)\n\
             [Open upstream](https://snapshot.box/#/s:u.eth/proposal/0x01)"
        );
        assert_eq!(
            e["fields"][0],
            json!({ "name": "Voting ended", "value": "2023-11-17 22:13:20 UTC", "inline": true })
        );
        assert_eq!(e["fields"][1]["value"], "345043.3752998372");
        assert_eq!(e["footer"]["text"], "govdata · uniswap · feed entry 7");
        assert_eq!(e["timestamp"], "2023-11-18T09:33:20.000Z");
    }

    #[test]
    fn every_part_and_the_total_stay_within_discords_limits() {
        let l = DISCORD_LIMITS;
        let mut f = facts();
        f.title = Some("標題😀".repeat(1_000));
        f.summary = Some("ß".repeat(10_000));
        f.figures = (0..40).map(|i| (format!("{i}{}", "n".repeat(400)), "9".repeat(2_000))).collect();
        let m = message(&f);
        assert!(chars(m["content"].as_str().unwrap()) <= l.content_chars);
        let e = &m["embeds"][0];
        assert_eq!(chars(e["title"].as_str().unwrap()), l.title_chars);
        assert!(e["title"].as_str().unwrap().ends_with('…'));
        let fields = e["fields"].as_array().unwrap();
        assert!(fields.len() <= l.fields);
        for x in fields {
            assert!(chars(x["name"].as_str().unwrap()) <= l.field_name_chars);
            assert!(chars(x["value"].as_str().unwrap()) <= l.field_value_chars);
        }
        assert!(total(e) <= l.embed_total_chars, "{}", total(e));
        // Short fields but a long summary: the description is cut to what the total leaves.
        let mut f = facts();
        f.summary = Some("x".repeat(10_000));
        f.figures = (0..24).map(|i| (format!("Figure {i}"), "1".repeat(150))).collect();
        let e = &message(&f)["embeds"][0];
        assert_eq!(e["fields"].as_array().unwrap().len(), 25);
        assert!(chars(e["description"].as_str().unwrap()) <= l.description_chars);
        assert!(total(e) <= l.embed_total_chars, "{}", total(e));
        assert!(total(e) > l.embed_total_chars - 10, "the room is used: {}", total(e));
    }

    #[test]
    fn a_test_message_is_a_message() {
        let m = test("wh_1", "hello");
        assert_eq!(m["embeds"][0]["description"], "hello");
        assert_eq!(m["allowed_mentions"]["parse"], json!([]));
    }
}
