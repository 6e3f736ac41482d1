//! Slack incoming-webhook messages: `{"text": <fallback>, "blocks": [...]}`, Block Kit section
//! blocks only (their limits are the documented ones, `SLACK_LIMITS`), every text escaped
//! (`&`, `<`, `>`), so no entry's text can open a link or a mention.
use serde_json::{Value, json};

use crate::contract::webhooks::SLACK_LIMITS;

use super::facts::Facts;
use super::text::{Escape, Line, clip, compose};

/// A link in `mrkdwn`: `<url|label>`, the label escaped and cut to `max_label`. A URL holding
/// what would end the link early (`|`, `>`) or open another is not linked.
fn link(url: &str, label: &str, max_label: usize) -> Option<String> {
    (!url.contains(['|', '<', '>', '&'])).then(|| format!("<{url}|{}>", clip(label, max_label, Escape::Slack)))
}

fn section(text: String) -> Value {
    json!({ "type": "section", "text": { "type": "mrkdwn", "text": text } })
}

/// The message of `facts`.
pub fn message(facts: &Facts) -> Value {
    let l = SLACK_LIMITS;
    let headline = facts.headline();
    let title = facts.title.clone().unwrap_or_else(|| headline.clone());
    let dao = if facts.dao.is_empty() { String::new() } else { format!(" · {}", facts.dao) };

    // The fallback (notifications, clients without blocks): every fact in plain lines.
    let mut plain = vec![Line::Cut(format!("{headline}{dao}: {title}"))];
    plain.extend(facts.summary.iter().map(|s| Line::Cut(s.clone())));
    if let Some((name, at)) = facts.deadline() {
        plain.push(Line::Cut(format!("{name}: {at}")));
    }
    plain.extend(facts.figures.iter().map(|(n, v)| Line::Cut(format!("{n}: {v}"))));
    plain.push(Line::Cut(facts.link.clone()));
    let text = compose(&plain, l.text_chars, Escape::Slack);

    // What happened, to what (linked), and the summary: one section.
    let mut head = vec![Line::Cut(format!("*{headline}*{dao}"))];
    match link(&facts.link, &title, 500) {
        Some(linked) => head.push(Line::Whole(format!("*{linked}*"))),
        None => head.push(Line::Cut(title)),
    }
    head.extend(facts.summary.iter().map(|s| Line::Cut(s.clone())));
    let mut blocks = vec![section(compose(&head, l.section_text_chars, Escape::Slack))];

    // The deadline and the figures as fields, ten to a section, as many sections as leave room
    // for the last one.
    let figures: Vec<(String, String)> = facts.deadline().into_iter().chain(facts.figures.iter().cloned()).collect();
    for chunk in figures.chunks(l.section_fields) {
        let fields: Vec<Value> = chunk
            .iter()
            .map(|(name, value)| {
                let name = clip(name, 100, Escape::Slack);
                let lines = [Line::Whole(format!("*{name}*")), Line::Cut(value.clone())];
                json!({ "type": "mrkdwn", "text": compose(&lines, l.section_field_chars, Escape::Slack) })
            })
            .collect();
        blocks.push(json!({ "type": "section", "fields": fields }));
    }
    blocks.truncate(l.blocks - 1);

    // Where to read more: this server, upstream, and the entry in the feed.
    let mut links: Vec<String> = Vec::new();
    links.extend(link(&facts.link, "Open in govdata", 100));
    if let Some(upstream) = &facts.upstream {
        links.extend(link(upstream, "Open upstream", 100));
    }
    let entry = match &facts.published_ms {
        Some(ms) => format!("Feed entry {} · published {}", facts.sequence, super::facts::utc(*ms)),
        None => format!("Feed entry {}", facts.sequence),
    };
    let tail = [Line::Whole(links.join(" · ")), Line::Cut(entry)];
    blocks.push(section(compose(&tail, l.section_text_chars, Escape::Slack)));
    json!({ "text": text, "blocks": blocks })
}

/// A test message (`POST /v2/webhooks/{webhookId}/test`) saying `note`.
pub fn test(webhook: &str, note: &str) -> Value {
    let l = SLACK_LIMITS;
    let text =
        compose(&[Line::Cut(format!("govdata test message for {webhook}: {note}"))], l.text_chars, Escape::Slack);
    let lines = [Line::Cut("*govdata test message*".to_owned()), Line::Cut(format!("{webhook}: {note}"))];
    json!({ "text": text, "blocks": [section(compose(&lines, l.section_text_chars, Escape::Slack))] })
}

#[cfg(test)]
mod tests {
    use super::super::facts::Facts;
    use super::super::text::chars;
    use super::*;

    fn facts() -> Facts {
        Facts {
            kind: "vote_cast".to_owned(),
            what: "Vote cast".to_owned(),
            dao: "arbitrum".to_owned(),
            title: Some("Fund <grants> & more".to_owned()),
            summary: Some("Notable vote with 2755022.0714428956 voting power".to_owned()),
            link: "https://api.example/v2/proposals/p_1".to_owned(),
            upstream: Some("https://snapshot.box/#/s:arb.eth/proposal/0x04".to_owned()),
            deadline_ms: Some(1_700_259_200_000),
            published_ms: Some(1_700_000_000_000),
            figures: vec![("Voting power".to_owned(), "12345678901234567890.5".to_owned())],
            sequence: "42".to_owned(),
            correction: false,
        }
    }

    #[test]
    fn a_message_states_the_facts_with_links_escaped_text_and_exact_figures() {
        let m = message(&facts());
        let text = m["text"].as_str().unwrap();
        assert!(text.starts_with("Vote cast · arbitrum: Fund &lt;grants&gt; &amp; more\n"), "{text}");
        assert!(text.contains("Voting ends: 2023-11-17 22:13:20 UTC"), "{text}");
        assert!(text.contains("Voting power: 12345678901234567890.5"), "{text}");
        let blocks = m["blocks"].as_array().unwrap();
        assert_eq!(blocks.len(), 3, "{m:#}");
        assert_eq!(
            blocks[0]["text"]["text"],
            "*Vote cast* · arbitrum\n*<https://api.example/v2/proposals/p_1|Fund &lt;grants&gt; &amp; more>*\n\
             Notable vote with 2755022.0714428956 voting power"
        );
        assert_eq!(blocks[1]["fields"][0]["text"], "*Voting ends*\n2023-11-17 22:13:20 UTC");
        assert_eq!(blocks[1]["fields"][1]["text"], "*Voting power*\n12345678901234567890.5");
        let tail = blocks[2]["text"]["text"].as_str().unwrap();
        assert!(tail.contains("<https://snapshot.box/#/s:arb.eth/proposal/0x04|Open upstream>"), "{tail}");
        assert!(tail.ends_with("Feed entry 42 · published 2023-11-14 22:13:20 UTC"), "{tail}");
    }

    #[test]
    fn every_part_stays_within_slacks_limits() {
        let l = SLACK_LIMITS;
        let mut f = facts();
        f.title = Some("T😀&".repeat(20_000));
        f.summary = Some("é<".repeat(30_000));
        f.figures = (0..600).map(|i| (format!("Figure {i} {}", "n".repeat(300)), "9".repeat(5_000))).collect();
        let m = message(&f);
        assert!(chars(m["text"].as_str().unwrap()) <= l.text_chars);
        let blocks = m["blocks"].as_array().unwrap();
        assert_eq!(blocks.len(), l.blocks);
        assert!(blocks[l.blocks - 1]["text"]["text"].as_str().unwrap().contains("Open upstream"), "the links stay");
        for b in blocks {
            if let Some(t) = b["text"]["text"].as_str() {
                assert!(!t.is_empty() && chars(t) <= l.section_text_chars, "{}", chars(t));
            }
            if let Some(fields) = b["fields"].as_array() {
                assert!(!fields.is_empty() && fields.len() <= l.section_fields);
                assert!(fields.iter().all(|x| chars(x["text"].as_str().unwrap()) <= l.section_field_chars));
            }
        }
        // The link survives a title too long for it: its label is cut, never the link.
        let head = blocks[0]["text"]["text"].as_str().unwrap();
        assert!(head.contains("<https://api.example/v2/proposals/p_1|T😀&amp;"), "{}", &head[..200]);
    }

    #[test]
    fn a_test_message_is_a_message() {
        let m = test("wh_1", "a <test>");
        assert_eq!(m["text"], "govdata test message for wh_1: a &lt;test&gt;");
        assert_eq!(m["blocks"][0]["type"], "section");
    }
}
