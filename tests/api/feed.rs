//! The feed of changes (`GET /v2/feed`): written with each publication, it holds exactly what the
//! publication changed (the difference between consecutive published revisions, checked after
//! every run of a random sequence of upstream changes), in sequence order, filtered, paged with
//! `after` or a cursor that outlives publications, and pruned past its retention.
use std::collections::BTreeMap;

use govdata::contract::feed::{FEED_RETENTION, FeedKind};
use govdata::ingest::run_once;
use govdata::store::entities::{governance_event, signal};
use govdata::store::keys;
use sea_orm::{DatabaseConnection, EntityTrait};
use serde_json::Value;

use crate::fixtures::testgov::{BASE, DAO, LINKED_TOPIC, big, forum_time, options, world};
use crate::fixtures::upstreams::{HubProposal, HubVote};
use crate::helpers::TestApp;
use crate::on_both_backends;

/// What the served tables hold, by natural key: the events and signals a revision published.
struct Published {
    events: BTreeMap<String, governance_event::Model>,
    signals: BTreeMap<String, signal::Model>,
}

async fn published(db: &DatabaseConnection) -> Published {
    let events = governance_event::Entity::find().all(db).await.unwrap();
    let signals = signal::Entity::find().all(db).await.unwrap();
    Published {
        events: events.into_iter().map(|e| (e.natural_key.clone(), e)).collect(),
        signals: signals.into_iter().map(|s| (s.natural_key.clone(), s)).collect(),
    }
}

/// What the feed must report between two published states: `(kind, item id, correction)`.
fn difference(before: &Published, after: &Published) -> Vec<(String, String, bool)> {
    let mut expected = Vec::new();
    for (key, e) in &after.events {
        let kind = FeedKind::of_event(e.kind).as_str().to_owned();
        match before.events.get(key) {
            None => expected.push((kind, keys::event_id(key), false)),
            Some(old) if *old != *e => expected.push((kind, keys::event_id(key), true)),
            Some(_) => {}
        }
    }
    let same = |a: &signal::Model, b: &signal::Model| {
        signal::Model { id: 0, revision_id: 0, ..a.clone() } == signal::Model { id: 0, revision_id: 0, ..b.clone() }
    };
    for (key, s) in &after.signals {
        match before.signals.get(key) {
            None => expected.push(("signal_raised".to_owned(), keys::signal_id(key), false)),
            Some(old) if !same(old, s) => expected.push(("signal_changed".to_owned(), keys::signal_id(key), false)),
            Some(_) => {}
        }
    }
    for key in before.signals.keys().filter(|k| !after.signals.contains_key(*k)) {
        expected.push(("signal_cleared".to_owned(), keys::signal_id(key), false));
    }
    expected.sort();
    expected
}

/// Every entry after `after`, walking the pages with `after` (and checking each page's cursor
/// reads the same next page).
pub async fn entries_after(app: &TestApp, after: &str) -> Vec<Value> {
    let mut entries: Vec<Value> = Vec::new();
    let mut from = after.to_owned();
    loop {
        let (status, page) = app.get_json(&format!("/v2/feed?after={from}&limit=200")).await;
        assert_eq!(status, 200, "{page}");
        let items = page["data"]["items"].as_array().unwrap().clone();
        let more = page["meta"]["page"]["hasMore"].as_bool().unwrap();
        if let (true, Some(cursor)) = (more, page["meta"]["page"]["nextCursor"].as_str()) {
            let (status, next) = app.get_json(&format!("/v2/feed?after={from}&limit=200&cursor={cursor}")).await;
            assert_eq!(status, 200, "{next}");
            let last = items.last().unwrap()["sequence"].as_str().unwrap();
            let (_, by_after) = app.get_json(&format!("/v2/feed?after={last}&limit=200")).await;
            assert_eq!(next["data"], by_after["data"], "a cursor continues where `after` would");
        }
        let Some(last) = items.last() else { break };
        from = last["sequence"].as_str().unwrap().to_owned();
        entries.extend(items);
        if !more {
            break;
        }
    }
    entries
}

fn reported(entries: &[Value]) -> Vec<(String, String, bool)> {
    let mut got: Vec<(String, String, bool)> = entries
        .iter()
        .map(|e| {
            let kind = e["kind"].as_str().unwrap().to_owned();
            let body = if kind.starts_with("signal_") { &e["signal"] } else { &e["event"] };
            (kind, body["id"].as_str().unwrap().to_owned(), e["correction"].as_bool().unwrap())
        })
        .collect();
    got.sort();
    got
}

fn seq(entry: &Value) -> u64 {
    entry["sequence"].as_str().unwrap().parse().unwrap()
}

/// A tiny deterministic generator: the same sequence of changes on both backends.
struct Steps(u64);

impl Steps {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

// A property: after every run of a sequence of upstream changes, the entries the run fed are
// exactly the difference between the revisions before and after it. Two sequences per backend:
// a fixed one that is known to reach every path (new events, corrected ones, signals), and one
// drawn from the clock, whose seed a failure prints.
on_both_backends!(replica: feed_is_the_difference_between_revisions, |backend: Backend| async move {
    feed_follows_changes(backend, FIXED_SEED, true).await;
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    feed_follows_changes(backend, seed, false).await;
});

/// The proposal of the close race the fixed sequence raises, then clears.
const CLOSE_RACE: &str = "0x00000000000000000000000000000000000000000000000000000000c105e0ac";

/// The sequence known to reach every path.
const FIXED_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

async fn feed_follows_changes(backend: crate::helpers::Backend, seed: u64, every_path: bool) {
    let w = world(backend).await;
    let (status, empty) = w.app.get_json("/v2/feed").await;
    assert_eq!(status, 200, "{empty}");
    assert_eq!(empty["data"]["items"], serde_json::json!([]), "nothing published, nothing fed");

    let mut before = published(&w.db).await;
    let mut newest = "0".to_owned();
    // The first run loads everything; then changes in a shuffled order while the big proposal
    // is open (so its notable votes exist when its total moves, which corrects them), then it
    // closes and more changes arrive. The fixed seed shuffles every kind of change once or
    // twice; another seed draws 4 to 10 changes of any kind.
    let mut steps = Steps(seed);
    let mut plan = if every_path {
        vec![0, 1, 2, 4, 0, 2, 1, 5]
    } else {
        let n = 4 + steps.next(7) as usize;
        (0..n).map(|_| [0, 1, 2, 4, 5][steps.next(5) as usize]).collect()
    };
    for i in (1..plan.len()).rev() {
        plan.swap(i, steps.next(i as u64 + 1) as usize);
    }
    plan.splice(0..0, [99, 0]);
    plan.extend([3, 0, 2]);
    if every_path {
        plan.extend([6, 7]);
    }
    let mut fed_kinds = std::collections::BTreeSet::new();
    let mut corrections = 0;
    for (step, change) in plan.into_iter().enumerate() {
        {
            let mut hub = w.hub_data.lock().unwrap();
            let n = hub.votes.len();
            match change {
                // More votes on the big proposal, a few of them notable (≥ 1% of its total).
                0 => {
                    for i in 0..20 {
                        hub.votes.push(HubVote {
                            id: format!("0x{:064x}", 8_000_000 + n + i),
                            proposal: big(),
                            voter: format!("0x{:040x}", 0xfeed_0000 + n + i),
                            created: BASE + 200_000 + (n + i) as i64,
                            choice: ["1", "2"][i % 2].to_owned(),
                            vp: if i % 7 == 0 { "5000.5".to_owned() } else { format!("{}.25", i + 1) },
                        });
                    }
                    hub.proposals[0].votes += 20;
                }
                // A new proposal, open for voting.
                1 => {
                    let i = hub.proposals.len();
                    hub.proposals.push(HubProposal {
                        id: format!("0x{:064x}", 0xf00d_0000 + i),
                        created: BASE + 400_000 + i as i64 * 60,
                        state: "active",
                        scores: vec!["1", "0"],
                        scores_total: "1",
                        scores_state: "pending",
                        title: format!("Feed step proposal {i}"),
                        votes: 0,
                    });
                }
                // The big proposal's numbers move upstream.
                2 => {
                    hub.proposals[0].scores_total = ["400000", "500000.5", "345043.3752998372"][step % 3];
                }
                // A closed proposal whose whole tally is held and close (100 to 99): a close race.
                6 => {
                    let created = BASE + 500_000;
                    hub.proposals.push(HubProposal {
                        id: CLOSE_RACE.to_owned(),
                        created,
                        state: "closed",
                        scores: vec!["100", "99", "0"],
                        scores_total: "199",
                        scores_state: "final",
                        title: "A close race".to_owned(),
                        votes: 2,
                    });
                    for (i, (choice, vp)) in [("1", "100"), ("2", "99")].into_iter().enumerate() {
                        hub.votes.push(HubVote {
                            id: format!("0x{:064x}", 9_000_000 + i),
                            proposal: CLOSE_RACE.to_owned(),
                            voter: format!("0x{:040x}", 0xc105e + i),
                            created: created + 60 + i as i64,
                            choice: choice.to_owned(),
                            vp: vp.to_owned(),
                        });
                    }
                }
                // Upstream counts a vote of it that is not held: the tally is no longer complete,
                // and a partial tally says nothing of the race (its signals clear).
                7 => {
                    let p = hub.proposals.iter_mut().find(|p| p.id == CLOSE_RACE).unwrap();
                    p.votes = 3;
                }
                // Another post on the topic whose discussion spiked: the spike signal's evidence
                // (the topic's posts) changes.
                5 => {
                    let mut forum = w.forum_data.lock().unwrap();
                    let topic = forum.topics.iter_mut().find(|t| t.id == LINKED_TOPIC).unwrap();
                    let n = topic.posts.len() as i64 + 1;
                    // Bumped after every topic listed so far: the forum connector reads it again.
                    let at = forum_time(1_000 + n);
                    topic.posts.push((
                        LINKED_TOPIC * 1000 + n,
                        n,
                        "user9".to_owned(),
                        format!("<p>Post {n}.</p>"),
                        at.clone(),
                    ));
                    topic.bumped_at = at;
                }
                // The big proposal closes with final scores.
                3 => {
                    hub.proposals[0].state = "closed";
                    hub.proposals[0].scores_state = "final";
                }
                // Nothing changes upstream.
                _ => {}
            }
        }
        let run = run_once(&w.db, &w.registry, &options()).await.expect("run");
        let after = published(&w.db).await;
        let entries = entries_after(&w.app, &newest).await;
        assert_eq!(
            reported(&entries),
            difference(&before, &after),
            "seed {seed:#x}, step {step} (change {change}): {run}"
        );
        match run.published.revision_id {
            None => assert!(entries.is_empty(), "a run that publishes nothing feeds nothing"),
            Some(revision) => {
                for e in &entries {
                    assert_eq!(e["revision"], revision, "{e}");
                    corrections += usize::from(e["correction"] == true);
                    assert_eq!(e["daoId"], DAO);
                    fed_kinds.insert(e["kind"].as_str().unwrap().to_owned());
                }
            }
        }
        let seqs: Vec<u64> = entries.iter().map(seq).collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "sequences only grow: {seqs:?}");
        if let Some(last) = entries.last() {
            assert!(seq(last) > newest.parse::<u64>().unwrap());
            newest = last["sequence"].as_str().unwrap().to_owned();
        }
        before = after;
    }
    if every_path {
        // The sequence reached every path: new events, corrected ones, signals.
        for kind in
            ["proposal_created", "voting_started", "proposal_closed", "vote_cast", "signal_raised", "signal_changed"]
        {
            assert!(fed_kinds.contains(kind), "{kind} never fed: {fed_kinds:?}");
        }
        assert!(corrections > 0, "no run corrected an event");
    }
}

on_both_backends!(replica: feed_filters_pages_and_refuses, |backend: Backend| async move {
    let w = world(backend).await;
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let all = entries_after(&w.app, "0").await;
    assert!(all.len() > 200, "more than a page: {}", all.len());

    // An event entry shows the event as /v2/events does, a signal entry the signal.
    let event = all.iter().find(|e| e["kind"] == "proposal_created").unwrap();
    assert_eq!(event["correction"], false);
    assert!(event["event"]["id"].as_str().unwrap().starts_with("ev_"), "{event}");
    assert_eq!(event["event"]["kind"], "proposal_created");
    assert!(event.get("signal").is_none(), "{event}");
    let signal = all.iter().find(|e| e["kind"] == "signal_raised").unwrap();
    assert!(signal["signal"]["id"].as_str().unwrap().starts_with("sg_"), "{signal}");
    assert!(signal["signal"]["evidence"].is_object(), "{signal}");

    // Filters: one DAO, kinds (comma-separated, in any order).
    let (_, other) = w.app.get_json("/v2/feed?daoId=uniswap").await;
    assert_eq!(other["data"]["items"], serde_json::json!([]));
    let (_, bad_dao) = w.app.get_json("/v2/feed?daoId=Not%20A%20Dao").await;
    assert_eq!(bad_dao["data"]["items"], serde_json::json!([]));
    let (status, mine) = w.app.get_json(&format!("/v2/feed?daoId={DAO}&limit=200")).await;
    assert_eq!(status, 200);
    assert_eq!(mine["data"]["items"].as_array().unwrap()[..], all[..200]);
    let (status, kinds) = w.app.get_json("/v2/feed?kinds=signal_raised,voting_started&limit=200").await;
    assert_eq!(status, 200, "{kinds}");
    let expected: Vec<&Value> =
        all.iter().filter(|e| e["kind"] == "signal_raised" || e["kind"] == "voting_started").take(200).collect();
    let got: Vec<&Value> = kinds["data"]["items"].as_array().unwrap().iter().collect();
    assert!(!got.is_empty());
    assert_eq!(got, expected, "the kinds filter keeps the feed's order");

    // A cursor outlives publications: the feed only grows.
    let (_, first) = w.app.get_json("/v2/feed?limit=3").await;
    let cursor = first["meta"]["page"]["nextCursor"].as_str().unwrap().to_owned();
    {
        let mut hub = w.hub_data.lock().unwrap();
        hub.proposals[0].scores_total = "999999";
    }
    let run = run_once(&w.db, &w.registry, &options()).await.expect("run");
    assert!(run.published.revision_id.is_some(), "{run}");
    let (status, second) = w.app.get_json(&format!("/v2/feed?limit=3&cursor={cursor}")).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["data"]["items"].as_array().unwrap()[..], all[3..6]);
    // With other filters the cursor is refused, as every list's.
    let (status, body) = w.app.get_json(&format!("/v2/feed?limit=3&kinds=vote_cast&cursor={cursor}")).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("INVALID_CURSOR")), "{body}");

    // An empty list, in any form a client serialises one, is every kind.
    for query in ["kinds=", "kinds=,", "kinds=%20"] {
        let (status, body) = w.app.get_json(&format!("/v2/feed?{query}&limit=3")).await;
        assert_eq!(status, 200, "{query}: {body}");
        assert_eq!(body["data"]["items"].as_array().unwrap()[..], all[..3], "{query}");
    }
    let (_, body) = w.app.get_json("/v2/feed?kinds=vote_cast,nope").await;
    assert_eq!(body["errors"][0]["received"], "vote_cast,nope", "{body}");
    let expected = body["errors"][0]["expected"].as_str().unwrap();
    assert!(expected.starts_with("a comma-separated list of: proposal_created, "), "{body}");
    assert!(body["detail"].as_str().unwrap().contains("`nope` is not a feed kind"), "{body}");

    // Bad input: a clear problem naming the parameter.
    for (query, name) in
        [("after=abc", "after"), ("after=-1", "after"), ("kinds=nope", "kinds"), ("limit=201", "limit")]
    {
        let (status, body) = w.app.get_json(&format!("/v2/feed?{query}")).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert_eq!(body["code"], "VALIDATION_ERROR", "{query}");
        assert_eq!(body["errors"][0]["name"], name, "{query}: {body}");
    }

    // Pruning: entries older than the retention go, oldest first, and a position before them is
    // refused rather than answered with a gap.
    let kept = entries_after(&w.app, "0").await;
    let newest = seq(kept.last().unwrap());
    let later = govdata::contract::time::now_ms() + FEED_RETENTION.max_ms() + 1;
    let removed = govdata::store::feed::prune(&w.db, later).await.unwrap();
    assert_eq!(removed as usize, kept.len());
    let (status, body) = w.app.get_json("/v2/feed?after=1").await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "INVALID_CURSOR");
    assert_eq!(body["errors"][0]["name"], "after");
    assert!(body["detail"].as_str().unwrap().contains("/v2/events"), "{body}");
    for start in ["/v2/feed", "/v2/feed?after=0"] {
        let (status, body) = w.app.get_json(start).await;
        assert_eq!(status, 200, "the start is the oldest entry kept, never refused: {body}");
        assert_eq!(body["data"]["items"], serde_json::json!([]));
    }
    let (status, body) = w.app.get_json(&format!("/v2/feed?after={newest}")).await;
    assert_eq!(status, 200, "resuming from the newest pruned entry skips nothing: {body}");
    assert_eq!(body["data"]["items"], serde_json::json!([]));
});
