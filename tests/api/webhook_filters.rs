//! Subscriptions that target (issue 48): webhooks and streams filtered by proposals and by voters
//! besides DAOs and kinds, validated member by member; a fan-out that reads only the
//! subscriptions an entry may concern (10,000 subscriptions of which 10 match: it touches 10,
//! shown by the server's counter); and the reminder rule's query. Real servers on 127.0.0.1,
//! receivers on loopback, both backends.
use std::sync::{Arc, Mutex};
use std::time::Duration;

use govdata::contract::ids::{IssuedKey, ProposalKey};
use govdata::ingest::run_once;
use govdata::store::{self, keys, webhooks as subs};
use sea_orm::{ConnectionTrait, Statement, TransactionTrait};
use serde_json::{Value, json};

use crate::access::partner_token;
use crate::feed::entries_after;
use crate::fixtures::receiver::Receiver;
use crate::fixtures::testgov::{BASE, DAO, big, forum_data, hub_data, options, registry, world, world_with};
use crate::fixtures::upstreams::{HubData, HubVote, discourse, snapshot_hub};
use crate::helpers::{TestApp, fresh_database};
use crate::on_both_backends;
use crate::processes::Server;
use crate::stream::Sse;

const TOKEN: &str = "x-service-api-token";

/// Votes of the targeted run: each by its own voter, each notable (4,000 of the proposal's
/// upstream total of 345,043: above the 1 % rule), so each is a `vote_cast` entry.
const VOTES: usize = 1_000;

/// The voter of vote `i` of the targeted run.
fn voter(i: usize) -> String {
    format!("0x{:040x}", 0xf00000 + i)
}

/// A voter of no vote.
fn absent_voter(i: usize) -> String {
    format!("0x{:040x}", 0xdead0000_u64 + i as u64)
}

fn notable_votes() -> Vec<HubVote> {
    (0..VOTES)
        .map(|i| HubVote {
            id: format!("0x{:064x}", 3_000_000 + i),
            proposal: big(),
            voter: voter(i),
            created: BASE + 120 + i as i64,
            choice: ["1", "2", "3"][i % 3].to_owned(),
            vp: "4000".to_owned(),
        })
        .collect()
}

/// The hub of the targeted run: its proposals, the big one with [`VOTES`] notable votes.
fn hub_with_votes(votes: Vec<HubVote>) -> HubData {
    let mut hub = hub_data();
    hub.proposals[0].votes = votes.len() as i64;
    hub.votes = votes;
    hub
}

fn big_key() -> String {
    keys::proposal_key(DAO, "snapshot", &big())
}

async fn send(app: &TestApp, method: &str, path: &str, token: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = app.anonymous.request(method.parse().unwrap(), app.url(path)).header(TOKEN, token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn subscribe(app: &TestApp, token: &str, body: Value) -> Value {
    let (status, created) = send(app, "POST", "/v2/webhooks", token, Some(body)).await;
    assert_eq!(status, 201, "{created}");
    created["data"].clone()
}

/// The key of the proposal an entry reports (its event's or signal's subject), if it is one.
fn proposal_of(entry: &Value) -> Option<&str> {
    let subject = entry.get("event").or_else(|| entry.get("signal")).map(|item| &item["subject"])?;
    (subject["kind"] == "proposal").then(|| subject["key"].as_str()).flatten()
}

fn sequences(entries: &[Value]) -> Vec<String> {
    let mut seqs: Vec<String> = entries.iter().map(|e| e["sequence"].as_str().unwrap().to_owned()).collect();
    seqs.sort_by_key(|s| s.parse::<i64>().unwrap());
    seqs
}

// A subscription watching one voter receives that voter's vote and nothing else from a
// publication of 1,000 votes; one watching a proposal receives exactly the entries about it; one
// with both filters, only what matches both; an unfiltered one, everything.
on_both_backends!(replica: a_voter_filter_gets_that_voters_vote_and_nothing_else, |backend: Backend| async move {
    let w = world(backend).await;
    {
        // First the proposals without votes: their keys exist to subscribe to.
        let mut hub = w.hub_data.lock().unwrap();
        hub.votes.clear();
        hub.proposals[0].votes = 0;
    }
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let before = entries_after(&w.app, "0").await;
    let position = before.last().unwrap()["sequence"].as_str().unwrap().to_owned();
    let (_, token) = partner_token(&w.app, &["v2:paid:standard"]).await;
    let watched = voter(537);
    let (by_voter, by_proposal, by_both, everything) =
        (Receiver::start().await, Receiver::start().await, Receiver::start().await, Receiver::start().await);
    // Any letter case, or as a CAIP-10 account: the lowercase address is kept.
    let shouting = format!("0x{}", watched[2..].to_uppercase());
    let created = subscribe(&w.app, &token, json!({ "url": by_voter.url, "voters": [shouting] })).await;
    assert_eq!(created["voters"], json!([watched]), "{created}");
    assert_eq!(created["proposalKeys"], json!([]), "{created}");
    let created = subscribe(&w.app, &token, json!({ "url": by_proposal.url, "proposalKeys": [big_key()] })).await;
    assert_eq!(created["proposalKeys"], json!([big_key()]), "{created}");
    let other_key = keys::proposal_key(DAO, "snapshot", &crate::fixtures::testgov::proposal_id(5));
    let both = json!({
        "url": by_both.url,
        "voters": [format!("eip155:1:{watched}"), voter(538)],
        "proposalKeys": [other_key],
    });
    let created = subscribe(&w.app, &token, both).await;
    assert_eq!(created["voters"], json!([watched, voter(538)]), "{created}");
    subscribe(&w.app, &token, json!({ "url": everything.url })).await;

    {
        let mut hub = w.hub_data.lock().unwrap();
        *hub = hub_with_votes(notable_votes());
    }
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let new = entries_after(&w.app, &position).await;
    let votes: Vec<&Value> = new.iter().filter(|e| e["kind"] == "vote_cast").collect();
    assert_eq!(votes.len(), VOTES, "each vote is a notable vote entry");
    everything.wait_for(new.len(), Duration::from_secs(60)).await;
    let about_big: Vec<Value> = new.iter().filter(|e| proposal_of(e) == Some(big_key().as_str())).cloned().collect();
    assert!(about_big.len() >= VOTES, "{}", about_big.len());
    by_proposal.wait_for(about_big.len(), Duration::from_secs(60)).await;
    let got = by_voter.wait_for(1, Duration::from_secs(30)).await;
    // Whatever else there was to send has been sent to the unfiltered receiver by now.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let got_voter: Vec<Value> = by_voter.received().iter().map(|d| d.json()["data"].clone()).collect();
    assert_eq!(got_voter.len(), 1, "that voter's vote and nothing else: {got_voter:?}");
    assert_eq!(got_voter[0]["kind"], "vote_cast");
    assert_eq!(got_voter[0]["event"]["actor"].as_str().map(str::to_lowercase), Some(watched.clone()));
    assert!(got[0].id.ends_with(&format!("_{}", got_voter[0]["sequence"].as_str().unwrap())));
    let got_proposal: Vec<Value> = by_proposal.received().iter().map(|d| d.json()["data"].clone()).collect();
    assert_eq!(sequences(&got_proposal), sequences(&about_big), "exactly the entries about the proposal");
    // The watched voter voted on the big proposal only: no entry is about both.
    assert!(by_both.received().is_empty(), "{:?}", by_both.received().len());
    assert_eq!(everything.received().len(), new.len());

    // A change of filters applies from then on, and is shown.
    let id = created["id"].as_str().unwrap();
    let (status, changed) =
        send(&w.app, "PATCH", &format!("/v2/webhooks/{id}"), &token, Some(json!({ "proposalKeys": [] }))).await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["data"]["proposalKeys"], json!([]));
    assert_eq!(changed["data"]["voters"], json!([watched, voter(538)]));
});

// Each bad member of a filter is refused by name, with what was received.
on_both_backends!(replica: target_filters_are_validated_member_by_member, |backend: Backend| async move {
    let w = world(backend).await;
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let (_, token) = partner_token(&w.app, &["v2:paid:standard"]).await;
    let app = &w.app;
    let refused = |body: Value| {
        let token = token.clone();
        async move {
            let (status, problem) = send(app, "POST", "/v2/webhooks", &token, Some(body)).await;
            assert_eq!(status, 400, "{problem}");
            assert_eq!(problem["code"], "VALIDATION_ERROR");
            problem["errors"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    assert_eq!(e["in"], "body", "{e}");
                    (e["name"].as_str().unwrap().to_owned(), e["received"].as_str().unwrap_or_default().to_owned())
                })
                .collect::<Vec<_>>()
        }
    };
    let url = "http://127.0.0.1:9/x";
    let unknown_key = "p_AAAAAAAAAAAAAAAAAAAAAA";
    let cases: Vec<(Value, Vec<(&str, String)>)> = vec![
        (json!({ "url": url, "proposalKeys": [big_key(), "nope"] }), vec![("proposalKeys[1]", "nope".into())]),
        (
            json!({ "url": url, "proposalKeys": [big_key(), unknown_key] }),
            vec![("proposalKeys[1]", unknown_key.into())],
        ),
        (json!({ "url": url, "proposalKeys": [big_key(), big_key()] }), vec![("proposalKeys[1]", big_key())]),
        (json!({ "url": url, "proposalKeys": "p_x" }), vec![("proposalKeys", "p_x".into())]),
        (json!({ "url": url, "voters": [voter(1), "0x123"] }), vec![("voters[1]", "0x123".into())]),
        (json!({ "url": url, "voters": ["nobody.eth"] }), vec![("voters[0]", "nobody.eth".into())]),
        (json!({ "url": url, "voters": ["cosmos:hub:0xabc"] }), vec![("voters[0]", "cosmos:hub:0xabc".into())]),
        (json!({ "url": url, "voters": [7] }), vec![("voters[0]", "7".into())]),
        // Two spellings of one address repeat it.
        (
            json!({ "url": url, "voters": [voter(1), voter(1).to_uppercase().replacen("0X", "0x", 1)] }),
            vec![("voters[1]", voter(1).to_uppercase().replacen("0X", "0x", 1))],
        ),
        (
            json!({ "url": url, "voters": [voter(2), "0x12", "nope"], "proposalKeys": ["bad"] }),
            vec![("proposalKeys[0]", "bad".into()), ("voters[1]", "0x12".into()), ("voters[2]", "nope".into())],
        ),
    ];
    for (body, expected) in cases {
        let got = refused(body.clone()).await;
        let expected: Vec<(String, String)> = expected.into_iter().map(|(n, r)| (n.to_owned(), r)).collect();
        assert_eq!(got, expected, "{body}");
    }
    // One more than each maximum, named by the list.
    let keys: Vec<String> = (0..=govdata::contract::webhooks::MAX_PROPOSAL_KEYS).map(|_| big_key()).collect();
    assert_eq!(refused(json!({ "url": url, "proposalKeys": keys })).await[0].0, "proposalKeys");
    let many: Vec<String> = (0..=govdata::contract::webhooks::MAX_VOTERS).map(voter).collect();
    assert_eq!(refused(json!({ "url": url, "voters": many })).await[0].0, "voters");
    // A change is read the same way.
    let created = subscribe(app, &token, json!({ "url": url })).await;
    let id = created["id"].as_str().unwrap();
    let (status, problem) =
        send(app, "PATCH", &format!("/v2/webhooks/{id}"), &token, Some(json!({ "voters": ["0xnope"] }))).await;
    assert_eq!((status, problem["errors"][0]["name"].clone()), (400, json!("voters[0]")), "{problem}");
    let (status, problem) =
        send(app, "PATCH", &format!("/v2/webhooks/{id}"), &token, Some(json!({ "proposalKeys": [unknown_key] }))).await;
    assert_eq!((status, problem["errors"][0]["name"].clone()), (400, json!("proposalKeys[0]")), "{problem}");
});

// The stream takes the same filters as query parameters: live and caught up from the store, each
// bad member refused naming the parameter, a value no proposal or voter has matching nothing.
on_both_backends!(replica: the_stream_filters_by_proposals_and_voters, |backend: Backend| async move {
    let w = world_with(backend, |args| {
        args.limits.stream_keep_alive = Duration::from_millis(300);
        args.limits.stream_max_duration = None;
    })
    .await;
    {
        let mut hub = w.hub_data.lock().unwrap();
        hub.votes.clear();
        hub.proposals[0].votes = 0;
    }
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let position = entries_after(&w.app, "0").await.last().unwrap()["sequence"].as_str().unwrap().to_owned();
    let (watched, also) = (voter(10), voter(11));
    let shouting = format!("0x{}", watched[2..].to_uppercase());
    let by_voters = format!("/v2/stream?voters={shouting},eip155:1:{also}");
    let mut live_voters = Sse::open(&w.app, &by_voters, &[]).await;
    live_voters.next(Duration::from_secs(5)).await;
    let by_proposal = format!("/v2/stream?proposalKeys={}&kinds=vote_cast", big_key());
    let mut live_proposal = Sse::open(&w.app, &by_proposal, &[]).await;
    live_proposal.next(Duration::from_secs(5)).await;
    {
        let mut hub = w.hub_data.lock().unwrap();
        *hub = hub_with_votes(notable_votes());
    }
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let new = entries_after(&w.app, &position).await;
    let of_voters: Vec<Value> = new
        .iter()
        .filter(|e| {
            let actor = e["event"]["actor"].as_str().map(str::to_lowercase);
            e["kind"] == "vote_cast" && (actor == Some(watched.clone()) || actor == Some(also.clone()))
        })
        .cloned()
        .collect();
    assert_eq!(of_voters.len(), 2);
    let votes_on_big: Vec<Value> = new
        .iter()
        .filter(|e| e["kind"] == "vote_cast" && proposal_of(e) == Some(big_key().as_str()))
        .cloned()
        .collect();
    assert_eq!(votes_on_big.len(), VOTES);
    let streamed: Vec<Value> = live_voters.entries(2).await.iter().map(|e| e.json()).collect();
    assert_eq!(streamed, of_voters);
    assert!(live_voters.next(Duration::from_secs(5)).await.unwrap().comment, "nothing else");
    let streamed: Vec<Value> = live_proposal.entries(VOTES).await.iter().map(|e| e.json()).collect();
    assert_eq!(streamed, votes_on_big);
    // Caught up from the store (through the voters' and the proposals' indexes), the same.
    let mut resumed = Sse::open(&w.app, &format!("{by_voters}&after={position}"), &[]).await;
    resumed.next(Duration::from_secs(5)).await;
    assert_eq!(resumed.entries(2).await.iter().map(|e| e.json()).collect::<Vec<_>>(), of_voters);
    let mut resumed = Sse::open(&w.app, &format!("{by_proposal}&after={position}"), &[]).await;
    resumed.next(Duration::from_secs(5)).await;
    assert_eq!(resumed.entries(VOTES).await.iter().map(|e| e.json()).collect::<Vec<_>>(), votes_on_big);
    // A key no proposal has matches nothing, as `daoId` does.
    let mut none = Sse::open(&w.app, "/v2/stream?after=0&proposalKeys=p_AAAAAAAAAAAAAAAAAAAAAA", &[]).await;
    none.next(Duration::from_secs(5)).await;
    assert!(none.next(Duration::from_secs(5)).await.unwrap().comment);
    // So does an ENS name no known voter has (it is a well-formed value, not a bad member); beside
    // a known voter, it takes nothing from that voter's entries.
    let mut none = Sse::open(&w.app, "/v2/stream?after=0&voters=nobody.eth", &[]).await;
    none.next(Duration::from_secs(5)).await;
    assert!(none.next(Duration::from_secs(5)).await.unwrap().comment);
    let mut with_known = Sse::open(&w.app, &format!("{by_voters},nobody.eth&after={position}"), &[]).await;
    with_known.next(Duration::from_secs(5)).await;
    assert_eq!(with_known.entries(2).await.iter().map(|e| e.json()).collect::<Vec<_>>(), of_voters);

    // Bad members: a 400 naming the parameter and the member.
    let many = (0..=govdata::contract::webhooks::MAX_VOTERS).map(voter).collect::<Vec<_>>().join(",");
    for (query, name, says) in [
        ("voters=0x123".to_owned(), "voters", "`0x123`"),
        (format!("voters={watched},nope"), "voters", "`nope`"),
        (format!("voters={many}"), "voters", "at most"),
        ("proposalKeys=p_short".to_owned(), "proposalKeys", "`p_short`"),
        (format!("proposalKeys={},t_AAAAAAAAAAAAAAAAAAAAAA", big_key()), "proposalKeys", "t_AAAAAAAAAAAAAAAAAAAAAA"),
    ] {
        let response = Sse::request(&w.app, &format!("/v2/stream?{query}"), &[]).await.response;
        assert_eq!(response.status(), 400, "{query}");
        let problem: Value = response.json().await.unwrap();
        assert_eq!(problem["code"], "VALIDATION_ERROR", "{problem}");
        assert_eq!(problem["errors"][0]["name"], name, "{problem}");
        assert_eq!(problem["errors"][0]["in"], "query", "{problem}");
        assert!(problem.to_string().contains(says), "{query}: {problem}");
    }
});

// 10,000 subscriptions, of which 10 watch the voter of one vote among 1,000: the fan-out of the
// publication touches those 10, and no other (the server's counter, scraped from its /metrics,
// counts every subscription the fan-out read). The server is a process of its own, so that its
// counters are its alone; the subscriptions are made through the store (100 tokens of 100).
on_both_backends!(replica: ten_thousand_subscriptions_of_which_ten_match_touch_ten, |backend: Backend| async move {
    let url = fresh_database(backend).await;
    let db = store::connect(&url).await.expect("connect");
    let hub = snapshot_hub(Arc::new(Mutex::new(hub_with_votes(notable_votes())))).await;
    let forum = discourse(Arc::new(Mutex::new(forum_data()))).await;
    let registry = registry(&hub, &forum);
    let receiver = Receiver::start().await;
    let watched = voter(537);
    let txn = db.begin().await.unwrap();
    for t in 0..100 {
        let (token, _) =
            store::tokens::create(&txn, &format!("partner {t}"), &["v2:paid:standard"], None, 0).await.unwrap();
        for i in 0..100 {
            let n = t * 100 + i;
            let (url, watching) = if n % 1_000 == 0 {
                (receiver.url.clone(), watched.clone())
            } else {
                ("http://127.0.0.1:9/never".to_owned(), absent_voter(n))
            };
            let filters = subs::Filters::default().with_voters(vec![watching]);
            let target = subs::Target { url, filters, ..Default::default() };
            subs::create(&txn, token.id, &target, 0).await.unwrap();
        }
    }
    txn.commit().await.unwrap();
    let env = [
        ("GOVDATA_WEBHOOK_ALLOW_PRIVATE", "1"),
        ("GOVDATA_WEBHOOK_LOOPBACK_ONLY", "1"),
        // Only the publication wakes the sender: no poll of 10,000 idle queues meanwhile.
        ("GOVDATA_WEBHOOK_POLL", "10m"),
    ];
    let server = Server::start_with(&url, "127.0.0.1:0", &env).await;
    let report = run_once(&db, &registry, &options()).await.expect("run");
    assert!(report.published.revision_id.is_some(), "{report}");
    let got = receiver.wait_for(10, Duration::from_secs(120)).await;
    let entries: i64 = db
        .query_one_raw(Statement::from_string(db.get_database_backend(), "SELECT COUNT(*) AS n FROM feed_entries"))
        .await
        .unwrap()
        .unwrap()
        .try_get("", "n")
        .unwrap();
    let counter = |text: &str, name: &str| {
        let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
        scrape.samples.iter().find(|s| s.metric == name).map(|s| match s.value {
            prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
    };
    let metrics = || async {
        let r = server.client.get(format!("{}/metrics", server.base)).send().await.unwrap();
        r.text().await.unwrap()
    };
    crate::helpers::eventually("every entry is fanned out", || async {
        counter(&metrics().await, "govdata_webhook_fanout_entries_total") == Some(entries as f64)
    })
    .await;
    let text = metrics().await;
    assert_eq!(counter(&text, "govdata_webhook_fanout_subscriptions_touched_total"), Some(10.0), "{text}");
    assert!(entries > VOTES as i64, "{entries}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.received().len(), 10);
    for d in &got {
        let data = &d.json()["data"];
        assert_eq!(data["kind"], "vote_cast");
        assert_eq!(data["event"]["actor"].as_str().map(str::to_lowercase), Some(watched.clone()));
    }
    drop(server);
});

// The reminder rule (`voting_ends_soon` goes through it): an entry about a proposal reaches a
// subscription that watches voters only while one of them has not voted on it; one that watches
// no voter gets it as usual, and the other filters still apply. The entry is written with a body
// this build cannot read (as a later build's might be): the queue does not stall on it.
on_both_backends!(replica: the_reminder_rule_reaches_watchers_of_voters_who_have_not_voted, |backend: Backend| async move {
    use govdata::push::queue;
    let url = fresh_database(backend).await;
    let db = store::connect(&url).await.expect("connect");
    let hub = snapshot_hub(Arc::new(Mutex::new(hub_with_votes(notable_votes())))).await;
    let forum = discourse(Arc::new(Mutex::new(forum_data()))).await;
    run_once(&db, &registry(&hub, &forum), &options()).await.expect("run");
    let (token, _) = store::tokens::create(&db, "p", &["v2:paid:standard"], None, 0).await.unwrap();
    let voted = voter(5);
    let make = |filters: subs::Filters| {
        let db = db.clone();
        async move {
            let target = subs::Target { url: "http://127.0.0.1:9/x".into(), filters, ..Default::default() };
            subs::create(&db, token.id, &target, 0).await.unwrap().id
        }
    };
    let big = ProposalKey::parse(&big_key()).unwrap();
    let other =
        ProposalKey::parse(&keys::proposal_key(DAO, "snapshot", &crate::fixtures::testgov::proposal_id(7))).unwrap();
    let dao = govdata::contract::vocabulary::DaoId::parse(DAO).unwrap();
    let only_voted = make(subs::Filters::default().with_voters(vec![voted.clone()])).await;
    let one_absent = make(subs::Filters::default().with_voters(vec![voted.clone(), absent_voter(1)])).await;
    let absent_here = make(subs::Filters::new(vec![dao], vec![]).with_voters(vec![absent_voter(2)])).await;
    let unfiltered = make(subs::Filters::default()).await;
    let elsewhere = make(subs::Filters::default().with_proposals(vec![other])).await;
    let other_kind = make(
        subs::Filters::new(vec![], vec![govdata::contract::feed::FeedKind::ProposalCreated])
            .with_voters(vec![absent_voter(3)]),
    )
    .await;
    let on_big = make(subs::Filters::default().with_proposals(vec![big])).await;
    assert_eq!(
        subs::watching_voters_who_have_not_voted(&db, &big_key()).await.unwrap(),
        [one_absent, absent_here, other_kind],
        "the rule alone: watchers of a voter who has not voted"
    );
    // Nobody has voted on a proposal the store does not hold: every watcher.
    assert_eq!(
        subs::watching_voters_who_have_not_voted(&db, "p_AAAAAAAAAAAAAAAAAAAAAA").await.unwrap(),
        [only_voted, one_absent, absent_here, other_kind]
    );

    // A reminder about the big proposal, with a body this build cannot read.
    let before = store::feed::newest(&db).await.unwrap();
    db.execute_raw(Statement::from_sql_and_values(
        db.get_database_backend(),
        "INSERT INTO feed_entries (revision_id, published_ms, dao_id, kind, item_id, proposal_key, body) \
         VALUES (1, 0, $1, 'voting_ends_soon', 'ev_later', $2, '{}')",
        [DAO.into(), big_key().into()],
    ))
    .await
    .unwrap();
    let entry = store::feed::newest(&db).await.unwrap();
    let wanted = |reminders: &'static [&'static str]| {
        let db = db.clone();
        async move {
            let reached = subs::matches(&db, before, entry, subs::Scope::Following, reminders).await.unwrap();
            let mut ids: Vec<i64> = reached.iter().filter(|m| m.wanted()).map(|m| m.subscription_id).collect();
            ids.sort();
            ids
        }
    };
    // With the rule: the watchers of an absent voter in scope, and those filtering no voter.
    assert_eq!(wanted(&["voting_ends_soon"]).await, [one_absent, absent_here, unfiltered, on_big]);
    // Without it (as for every other kind), an entry about no voter reaches no voter filter.
    assert_eq!(wanted(&[]).await, [unfiltered, on_big]);
    let _ = elsewhere;
    // The queue fans it out (and the publication before it) without stalling.
    loop {
        let done = queue::enqueue(&db, 0).await.unwrap();
        if !done.more {
            break;
        }
    }
    assert_eq!(subs::fanned_through(&db).await.unwrap(), entry);
    let stmt = Statement::from_sql_and_values(
        db.get_database_backend(),
        "SELECT subscription_id FROM webhook_deliveries WHERE seq = $1 ORDER BY subscription_id",
        [entry.into()],
    );
    let delivered: Vec<i64> = db
        .query_all_raw(stmt)
        .await
        .unwrap()
        .iter()
        .map(|r| r.try_get::<i64>("", "subscription_id").unwrap())
        .collect();
    assert_eq!(delivered, [one_absent, absent_here, unfiltered, on_big], "the queue applies the rule");
});
