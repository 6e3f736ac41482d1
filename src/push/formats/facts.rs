//! What a chat message says of a feed entry, read from the entry exactly as `/v2/feed` shows it
//! (the `data` of its Standard Webhooks message): what happened, the DAO, the item with its
//! links, the voting deadline, and the exact figures, as the decimal strings the entry carries.
//!
//! The entry is read as JSON, member by member, rather than as the API's types: push renders
//! what the surfaces published without importing them, and an entry of a kind this build does
//! not know (a newer writer's) still reads, from the members every kind shares.
use serde_json::{Map, Value};

use crate::contract::time::rfc3339_ms;

use super::text::words;

/// The paths of the v2 resources a message links to (under the server's public URL).
const PROPOSAL_PATH: &str = "/v2/proposals/";
const TOPIC_PATH: &str = "/v2/topics/";
const VOTER_PATH: &str = "/v2/voters/";

/// An entry's facts, each as the entry states it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Facts {
    /// The entry's kind (`vote_cast`, or a kind of a newer build).
    pub kind: String,
    /// What happened, in words: `Vote cast`, `Signal raised: quorum reached`.
    pub what: String,
    pub dao: String,
    /// The proposal's (or topic's) title.
    pub title: Option<String>,
    /// One line for a reader: the event's or signal's `summary`.
    pub summary: Option<String>,
    /// The v2 resource the entry concerns on this server (the proposal, the topic, the
    /// delegator), else the entry itself in the feed.
    pub link: String,
    /// Where the item is upstream (Snapshot, Tally, the forum), when the entry has it.
    pub upstream: Option<String>,
    /// When voting ends (or ended), when the entry concerns a proposal with an end.
    pub deadline_ms: Option<i64>,
    /// When the entry was published.
    pub published_ms: Option<i64>,
    /// Exact figures, each with its name in words, in the entry's order.
    pub figures: Vec<(String, String)>,
    pub sequence: String,
    /// The entry corrects an event fed before.
    pub correction: bool,
}

/// What a message is rendered with besides its entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context<'a> {
    /// The server's public URL (links start with it).
    pub public_url: &'a str,
    /// When voting ends on the entry's proposal (`store::proposals::voting_ends`).
    pub deadline_ms: Option<i64>,
}

/// The member of an entry that carries what it reports: `event`, `signal`, `delegation`, or for
/// a kind of a newer build, its one object member.
fn body(entry: &Map<String, Value>) -> Option<(&str, &Map<String, Value>)> {
    const HEAD: &[&str] = &["sequence", "kind", "daoId", "revision", "publishedAt", "correction"];
    entry.iter().find_map(|(name, value)| match value {
        Value::Object(map) if !HEAD.contains(&name.as_str()) => Some((name.as_str(), map)),
        _ => None,
    })
}

fn text<'a>(map: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    map.get(name).and_then(Value::as_str).filter(|t| !t.is_empty())
}

/// The key of the proposal `entry` (its JSON text) concerns, if it concerns one: what the
/// deadline is looked up by.
pub fn proposal_key(entry: &str) -> Option<String> {
    let entry: Value = serde_json::from_str(entry).ok()?;
    let (_, body) = body(entry.as_object()?)?;
    let subject = body.get("subject")?.as_object()?;
    (text(subject, "kind") == Some("proposal")).then(|| text(subject, "key").map(str::to_owned)).flatten()
}

/// An absolute `http(s)` URL, the only links a message carries (an upstream's text could be
/// anything).
fn web_url(url: &str) -> Option<String> {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    let ok = (lower.starts_with("https://") || lower.starts_with("http://"))
        && !url.chars().any(|c| c.is_whitespace() || c.is_control());
    ok.then(|| url.to_owned())
}

/// An entry's time, as the message states it: `2026-03-27 00:05:12 UTC`.
pub fn utc(ms: i64) -> String {
    let stamp = rfc3339_ms(ms);
    // `2026-03-27T00:05:12.345Z`: the date, the time to the second, and the zone in words.
    match (stamp.get(..10), stamp.get(11..19)) {
        (Some(date), Some(time)) => format!("{date} {time} UTC"),
        _ => stamp,
    }
}

impl Facts {
    /// The facts of `entry` (an entry's JSON text as `/v2/feed` shows it).
    pub fn read(entry: &str, context: Context<'_>) -> Result<Self, String> {
        let value: Value = serde_json::from_str(entry).map_err(|e| format!("the entry is not JSON: {e}"))?;
        let entry = value.as_object().ok_or("the entry is not a JSON object")?;
        let kind = text(entry, "kind").unwrap_or("entry").to_owned();
        let dao = text(entry, "daoId").unwrap_or_default().to_owned();
        let sequence = text(entry, "sequence").unwrap_or_default().to_owned();
        let public = context.public_url.trim_end_matches('/');
        let feed_link = match sequence.parse::<i64>() {
            Ok(seq) => format!("{public}/v2/feed?after={}&limit=1", seq - 1),
            Err(_) => format!("{public}/v2/feed"),
        };
        let mut facts = Self {
            what: words(&kind),
            dao,
            link: feed_link,
            published_ms: text(entry, "publishedAt").and_then(crate::contract::time::parse_rfc3339_ms),
            correction: entry.get("correction").and_then(Value::as_bool).unwrap_or(false),
            sequence,
            kind,
            ..Self::default()
        };
        let Some((member, body)) = body(entry) else { return Ok(facts) };
        facts.summary = text(body, "summary").map(str::to_owned);
        if let Some(subject) = body.get("subject").and_then(Value::as_object) {
            facts.title = text(subject, "title").map(str::to_owned);
            facts.upstream = text(subject, "url").and_then(web_url);
            let path = match text(subject, "kind") {
                Some("proposal") => Some(PROPOSAL_PATH),
                Some("forum_topic") => Some(TOPIC_PATH),
                _ => None,
            };
            if let (Some(path), Some(key)) = (path, text(subject, "key")) {
                facts.link = format!("{public}{path}{key}");
            }
            if path == Some(PROPOSAL_PATH) {
                facts.deadline_ms = context.deadline_ms;
            }
        }
        if facts.upstream.is_none() {
            facts.upstream =
                body.get("citation").and_then(Value::as_object).and_then(|c| text(c, "url")).and_then(web_url);
        }
        match member {
            "event" => facts.event(body),
            "signal" => facts.signal(body),
            "delegation" => facts.delegation(body, public),
            "moment" => facts.moment(body, public),
            _ => facts.strings(body, &["summary"]),
        }
        Ok(facts)
    }

    /// An event: who acted, and its details (`votingPower`, `choice`, the final tally...).
    fn event(&mut self, event: &Map<String, Value>) {
        if let Some(actor) = text(event, "actor") {
            self.figures.push(("Actor".to_owned(), actor.to_owned()));
        }
        if let Some(details) = event.get("details").and_then(Value::as_object) {
            self.strings(details, &[]);
        }
    }

    /// A signal: its rule and severity, then the exact numbers of its evidence.
    fn signal(&mut self, signal: &Map<String, Value>) {
        if let Some(kind) = text(signal, "kind") {
            self.what = format!("{}: {}", self.what, words(kind).to_lowercase());
        }
        if let Some(severity) = text(signal, "severity") {
            self.figures.push(("Severity".to_owned(), severity.to_owned()));
        }
        let Some(evidence) = signal.get("evidence").and_then(Value::as_object) else { return };
        for (name, value) in evidence {
            match (name.as_str(), value) {
                // Times of the rule's evaluation, not figures; the citations are the links.
                ("asOf" | "citations" | "windowStart" | "windowEnd", _) => {}
                ("tally", Value::Array(choices)) => {
                    for choice in choices.iter().filter_map(Value::as_object) {
                        let (Some(number), Some(score)) = (text(choice, "choice"), text(choice, "score")) else {
                            continue;
                        };
                        let name = match text(choice, "label") {
                            Some(label) => format!("Choice {number} ({label})"),
                            None => format!("Choice {number}"),
                        };
                        self.figures.push((name, score.to_owned()));
                    }
                }
                ("decidingVote", Value::Object(vote)) => {
                    if let (Some(voter), Some(power)) = (text(vote, "voter"), text(vote, "votingPower")) {
                        self.figures.push(("Deciding vote".to_owned(), format!("{voter}: {power}")));
                    }
                }
                (_, Value::String(v)) if !v.is_empty() => self.figures.push((words(name), v.clone())),
                (_, Value::Array(items)) => {
                    let items: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                    if !items.is_empty() {
                        self.figures.push((words(name), items.join(", ")));
                    }
                }
                _ => {}
            }
        }
    }

    /// A delegation change: who moved how much power from whom to whom.
    fn delegation(&mut self, change: &Map<String, Value>, public: &str) {
        let delegator = text(change, "delegator").unwrap_or("a holder");
        let to = text(change, "toDelegate").unwrap_or("no delegate");
        let from = text(change, "fromDelegate").unwrap_or("no delegate");
        if let Some(power) = text(change, "votingPowerMoved") {
            self.summary = Some(format!("{delegator} moved {power} voting power from {from} to {to}"));
        }
        if text(change, "delegator").is_some() {
            self.link = format!("{public}{VOTER_PATH}{delegator}/delegations");
        }
        for (name, label) in [
            ("votingPowerMoved", "Voting power moved"),
            ("shareOfSupply", "Share of supply"),
            ("fromDelegate", "From"),
            ("toDelegate", "To"),
            ("blockNumber", "Block"),
            ("transactionHash", "Transaction"),
        ] {
            if let Some(value) = text(change, name) {
                self.figures.push((label.to_owned(), value.to_owned()));
            }
        }
    }

    /// A proposal's moment (a deadline near or passed, its quorum reached, its ETA passed): the
    /// proposal with its links and deadline, and the moment's exact figures.
    fn moment(&mut self, moment: &Map<String, Value>, public: &str) {
        self.title = text(moment, "title").map(str::to_owned);
        self.upstream = text(moment, "url").and_then(web_url);
        if let Some(key) = text(moment, "proposalKey") {
            self.link = format!("{public}{PROPOSAL_PATH}{key}");
        }
        if let Some(end) = text(moment, "votingEndsAt").and_then(crate::contract::time::parse_rfc3339_ms) {
            self.deadline_ms = Some(end);
        }
        for (name, label) in [
            ("horizon", "Within"),
            ("quorum", "Quorum"),
            ("quorumVotes", "Votes counted toward the quorum"),
            ("eta", "ETA"),
            ("executableAt", "Executable from"),
        ] {
            if let Some(value) = text(moment, name) {
                self.figures.push((label.to_owned(), value.to_owned()));
            }
        }
    }

    /// Every string member of `map` but `skip`, as a figure named in words.
    fn strings(&mut self, map: &Map<String, Value>, skip: &[&str]) {
        for (name, value) in map {
            if let Value::String(v) = value
                && !v.is_empty()
                && !skip.contains(&name.as_str())
            {
                self.figures.push((words(name), v.clone()));
            }
        }
    }

    /// The headline: what happened, corrected or not.
    pub fn headline(&self) -> String {
        if self.correction { format!("{} (corrected)", self.what) } else { self.what.clone() }
    }

    /// The deadline as a figure: `Voting ends` (or `Voting ended`, once past at publication) and
    /// the time in UTC.
    pub fn deadline(&self) -> Option<(String, String)> {
        let end = self.deadline_ms?;
        let past = self.published_ms.is_some_and(|p| end <= p);
        let name = if past { "Voting ended" } else { "Voting ends" };
        Some((name.to_owned(), utc(end)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PUBLIC: &str = "https://api.example";

    fn vote() -> String {
        serde_json::json!({
            "sequence": "42",
            "kind": "vote_cast",
            "daoId": "arbitrum",
            "revision": 7,
            "publishedAt": "2026-03-27T00:05:12.345Z",
            "correction": false,
            "event": {
                "id": "ev_x",
                "kind": "vote_cast",
                "daoId": "arbitrum",
                "occurredAt": "2026-03-27T00:00:00.000Z",
                "subject": {
                    "kind": "proposal", "daoId": "arbitrum", "source": "snapshot", "externalId": "0x04",
                    "key": "p_3Zb1X9kq0m4V2nR7sT8uWw", "title": "[Constitutional] AIP: ArbOS 60 Elara",
                    "url": "https://snapshot.box/#/s:arbitrumfoundation.eth/proposal/0x04"
                },
                "actor": "0xb4c064f466931b8d0f637654c916e3f203c46f13",
                "summary": "Notable vote by 0xb4c0 with 2755022.0714428956 voting power",
                "citation": { "source": "snapshot", "url": "https://snapshot.box/#/s:a/proposal/0x04" },
                "details": { "choice": "1", "scoresTotal": "64266592.58089078", "votingPower": "2755022.0714428956" }
            }
        })
        .to_string()
    }

    #[test]
    fn an_event_reads_with_its_links_deadline_and_exact_figures() {
        assert_eq!(proposal_key(&vote()).as_deref(), Some("p_3Zb1X9kq0m4V2nR7sT8uWw"));
        let end = crate::contract::time::parse_rfc3339_ms("2026-03-30T12:00:00.000Z").unwrap();
        let facts = Facts::read(&vote(), Context { public_url: PUBLIC, deadline_ms: Some(end) }).unwrap();
        assert_eq!(facts.what, "Vote cast");
        assert_eq!(facts.dao, "arbitrum");
        assert_eq!(facts.title.as_deref(), Some("[Constitutional] AIP: ArbOS 60 Elara"));
        assert_eq!(facts.link, "https://api.example/v2/proposals/p_3Zb1X9kq0m4V2nR7sT8uWw");
        assert_eq!(facts.upstream.as_deref(), Some("https://snapshot.box/#/s:arbitrumfoundation.eth/proposal/0x04"));
        assert_eq!(facts.deadline(), Some(("Voting ends".to_owned(), "2026-03-30 12:00:00 UTC".to_owned())));
        assert_eq!(
            facts.figures,
            [
                ("Actor", "0xb4c064f466931b8d0f637654c916e3f203c46f13"),
                ("Choice", "1"),
                ("Scores total", "64266592.58089078"),
                ("Voting power", "2755022.0714428956"),
            ]
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
        );
        // Past at publication: it ended.
        let early = crate::contract::time::parse_rfc3339_ms("2026-03-01T00:00:00.000Z");
        let facts = Facts::read(&vote(), Context { public_url: PUBLIC, deadline_ms: early }).unwrap();
        assert_eq!(facts.deadline().unwrap().0, "Voting ended");
    }

    #[test]
    fn an_entry_of_an_unknown_kind_reads_from_what_every_kind_shares() {
        let entry = serde_json::json!({
            "sequence": "9", "kind": "voting_ends_soon", "daoId": "uniswap", "revision": 3,
            "publishedAt": "2026-03-27T00:05:12.345Z", "correction": false,
            "reminder": { "summary": "Voting ends in 24 h", "subject": { "kind": "proposal", "key": "p_k", "title": "T" },
                          "hoursLeft": "24" }
        })
        .to_string();
        let facts = Facts::read(&entry, Context { public_url: PUBLIC, deadline_ms: Some(0) }).unwrap();
        assert_eq!(facts.what, "Voting ends soon");
        assert_eq!(facts.summary.as_deref(), Some("Voting ends in 24 h"));
        assert_eq!(facts.link, "https://api.example/v2/proposals/p_k");
        assert_eq!(facts.figures, [("Hours left".to_owned(), "24".to_owned())]);
        // Nothing but the head: the entry's own place in the feed is the link.
        let bare = r#"{"sequence":"10","kind":"something_new","daoId":"uniswap"}"#;
        let facts = Facts::read(bare, Context { public_url: PUBLIC, deadline_ms: None }).unwrap();
        assert_eq!(facts.what, "Something new");
        assert_eq!(facts.link, "https://api.example/v2/feed?after=9&limit=1");
        assert!(Facts::read("[1]", Context { public_url: PUBLIC, deadline_ms: None }).is_err());
    }

    #[test]
    fn a_moment_reads_with_its_proposal_deadline_and_figures() {
        let entry = r#"{"sequence":"12","kind":"voting_ends_soon","daoId":"uniswap","revision":4,
            "publishedAt":"2026-11-27T12:00:00.000Z","correction":false,
            "moment":{"proposalKey":"p_k","source":"snapshot","externalId":"0x01","title":"Fund it",
                      "url":"https://snapshot.box/#/s:u/proposal/0x01","at":"2026-11-27T12:00:00.000Z",
                      "votingEndsAt":"2026-11-28T12:00:00.000Z","horizon":"PT24H"}}"#;
        let facts = Facts::read(entry, Context { public_url: PUBLIC, deadline_ms: None }).unwrap();
        assert_eq!(facts.title.as_deref(), Some("Fund it"));
        assert_eq!(facts.link, format!("{PUBLIC}/v2/proposals/p_k"));
        assert_eq!(facts.upstream.as_deref(), Some("https://snapshot.box/#/s:u/proposal/0x01"));
        assert_eq!(facts.deadline(), Some(("Voting ends".to_owned(), utc(1_795_867_200_000))));
        assert_eq!(facts.figures, vec![("Within".to_owned(), "PT24H".to_owned())]);
    }

    #[test]
    fn only_web_urls_are_links() {
        assert_eq!(web_url("https://snapshot.box/#/x").as_deref(), Some("https://snapshot.box/#/x"));
        assert_eq!(web_url("HTTP://forum.example/t/1").as_deref(), Some("HTTP://forum.example/t/1"));
        assert_eq!(web_url("javascript:alert(1)"), None);
        assert_eq!(web_url("https://x.example/a b"), None);
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
    }
}
