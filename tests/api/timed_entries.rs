//! Timed and threshold feed entries (issue 48): `voting_ends_soon` at each horizon,
//! `voting_ended`, `voting_started` at the start, `quorum_reached` once, each exactly once
//! whatever the restarts and processes, and caught up in order after a process was down.
//!
//! The moments are published by `store::moments::publish_due`, what the scheduler inside `serve`
//! calls every tick; these tests call it with a controlled clock (and one lets the real scheduler
//! of a running server publish a voting start a few seconds ahead).
use std::time::Duration;

use govdata::ingest::run_once;
use govdata::store::timed::publish_due;
use serde_json::Value;

use crate::fixtures::testgov::{DAO, World, options, world};
use crate::fixtures::upstreams::{HubData, HubProposal};
use crate::helpers::{TestApp, eventually, spawn_app_on};
use crate::on_both_backends;

const HOUR: i64 = 3_600_000;
const MINUTE: i64 = 60_000;
/// The fixture hub's proposals vote from `created + 60 s` to `created + 3 days`.
const VOTING: i64 = 3 * 86_400;

fn proposal(id: u64, created_s: i64, state: &'static str, title: &str, scores_total: &'static str) -> HubProposal {
    HubProposal {
        id: format!("0x{id:064x}"),
        created: created_s,
        state,
        scores: vec![scores_total, "0", "0"],
        scores_total,
        scores_state: "pending",
        title: title.to_owned(),
        votes: 0,
    }
}

/// The world's hub serving only `proposals`, with no votes.
fn serve_only(w: &World, proposals: Vec<HubProposal>) {
    let mut data = w.hub_data.lock().unwrap();
    *data = HubData { space: data.space.clone(), proposals, votes: Vec::new() };
}

/// The feed's entries of `kinds` (comma-separated), oldest first.
async fn entries(app: &TestApp, kinds: &str) -> Vec<Value> {
    app.sync().await;
    let (status, page) = app.get_json(&format!("/v2/feed?kinds={kinds}&limit=200")).await;
    assert_eq!(status, 200, "{page}");
    page["data"]["items"].as_array().unwrap().clone()
}

/// `(kind, proposal title, horizon, moment)` of each moment entry.
fn moments(entries: &[Value]) -> Vec<(String, String, Option<String>, String)> {
    entries
        .iter()
        .map(|e| {
            let m = &e["moment"];
            (
                e["kind"].as_str().unwrap().to_owned(),
                m["title"].as_str().unwrap().to_owned(),
                m["horizon"].as_str().map(str::to_owned),
                m["at"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn at(ms: i64) -> String {
    govdata::contract::time::rfc3339_ms(ms)
}

fn moment(kind: &str, title: &str, horizon: Option<&str>, at_ms: i64) -> (String, String, Option<String>, String) {
    (kind.to_owned(), title.to_owned(), horizon.map(str::to_owned), at(at_ms))
}

// A proposal ending in 25 h gets one `voting_ends_soon` per horizon at its moment and one
// `voting_ended` at its end: none twice after a restart, none twice with two processes
// publishing at once, and what came due while every process was down is caught up in order.
on_both_backends!(replica: deadlines_are_fed_once_at_their_moments, |backend: Backend| async move {
    let mut w = world(backend).await;
    // P ends at E, Q half an hour later; both open. Their times are in the fixture's past (2023),
    // so the running server's own scheduler, on the wall clock, never finds them due.
    let e_s = 1_700_300_000;
    let (e, q_end) = (e_s * 1000, e_s * 1000 + 30 * MINUTE);
    serve_only(
        &w,
        vec![proposal(1, e_s - VOTING, "active", "P", "1"), proposal(2, e_s + 1800 - VOTING, "active", "Q", "1")],
    );
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let kinds = "voting_ends_soon,voting_ended";
    assert_eq!(entries(&w.app, kinds).await, Vec::<Value>::new(), "no moment is due on the wall clock");

    assert_eq!(publish_due(&w.db, e - 25 * HOUR).await.unwrap(), None, "25 h before: nothing due");
    assert!(publish_due(&w.db, e - 24 * HOUR + 1000).await.unwrap().is_some(), "24 h before P's end");
    assert_eq!(publish_due(&w.db, e - 24 * HOUR + 30_000).await.unwrap(), None, "fed once");
    let first = entries(&w.app, kinds).await;
    assert_eq!(moments(&first), vec![moment("voting_ends_soon", "P", Some("PT24H"), e - 24 * HOUR)]);
    let m = &first[0]["moment"];
    assert_eq!(m["votingEndsAt"], at(e), "{m}");
    assert_eq!(m["source"], "snapshot");
    assert_eq!(first[0]["daoId"], DAO);
    let key = m["proposalKey"].as_str().unwrap();
    let (status, detail) = w.app.get_json(&format!("/v2/proposals/{key}")).await;
    assert_eq!((status, detail["data"]["title"].as_str()), (200, Some("P")), "the key names the proposal");

    // A restart: a new process on the same store.
    let url = w.app.database_url.clone();
    w.app = spawn_app_on(url.clone()).await;
    // Down from 24 h before P's end until half an hour before it: the look catches up, in order.
    assert!(publish_due(&w.db, e - 30 * MINUTE).await.unwrap().is_some());
    let caught_up = entries(&w.app, kinds).await;
    assert_eq!(
        moments(&caught_up[1..]),
        vec![
            moment("voting_ends_soon", "Q", Some("PT24H"), q_end - 24 * HOUR),
            moment("voting_ends_soon", "P", Some("PT1H"), e - HOUR),
            moment("voting_ends_soon", "Q", Some("PT1H"), q_end - HOUR),
        ]
    );

    // Two processes look at the same moment: one publishes both ends, the other nothing.
    let (one, two) = (govdata::store::connect(&url).await.unwrap(), govdata::store::connect(&url).await.unwrap());
    let now = q_end + MINUTE;
    let (a, b) = tokio::join!(publish_due(&one, now), publish_due(&two, now));
    let published: Vec<_> = [a.unwrap(), b.unwrap()].into_iter().flatten().collect();
    assert_eq!(published.len(), 1, "one of the two publishes");
    assert_eq!(publish_due(&w.db, q_end + 2 * HOUR).await.unwrap(), None);
    let all = entries(&w.app, kinds).await;
    assert_eq!(
        moments(&all[4..]),
        vec![moment("voting_ended", "P", None, e), moment("voting_ended", "Q", None, q_end)]
    );
    assert_eq!(all.len(), 6, "each moment once: {all:#?}");
    let sequences: Vec<u64> = all.iter().map(|e| e["sequence"].as_str().unwrap().parse().unwrap()).collect();
    assert!(sequences.windows(2).all(|w| w[0] < w[1]), "in feed order: {sequences:?}");
});

// The scheduler inside `serve` publishes a voting start at the start, not at the next run.
on_both_backends!(replica: voting_starts_at_its_start, |backend: Backend| async move {
    let w = world(backend).await;
    let now_s = govdata::contract::time::now_ms() / 1000;
    // Voting starts 60 s after creation: 4 s from now.
    serve_only(&w, vec![proposal(1, now_s - 56, "pending", "Starting soon", "0")]);
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    assert_eq!(entries(&w.app, "voting_started").await, Vec::<Value>::new(), "not started yet");
    eventually("the voting start is fed at the start", || async {
        let started = entries(&w.app, "voting_started").await;
        started.len() == 1 && started[0]["event"]["kind"] == "voting_started"
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(entries(&w.app, "voting_started").await.len(), 1, "and once");
});

// `quorum_reached` is fed by the first publication whose counted votes reach the quorum, once.
on_both_backends!(replica: quorum_reached_is_fed_once, |backend: Backend| async move {
    let w = world(backend).await;
    let created = govdata::contract::time::now_ms() / 1000 - 3600;
    serve_only(&w, vec![proposal(1, created, "active", "Quorum of a hundred", "99.999999999999999999")]);
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    assert_eq!(entries(&w.app, "quorum_reached").await, Vec::<Value>::new(), "just below the quorum");

    serve_only(&w, vec![proposal(1, created, "active", "Quorum of a hundred", "100.000000000000000001")]);
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let reached = entries(&w.app, "quorum_reached").await;
    assert_eq!(reached.len(), 1, "{reached:#?}");
    let m = &reached[0]["moment"];
    assert_eq!((m["quorum"].as_str(), m["quorumVotes"].as_str()), (Some("100"), Some("100.000000000000000001")));

    serve_only(&w, vec![proposal(1, created, "active", "Quorum of a hundred", "250")]);
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    assert_eq!(entries(&w.app, "quorum_reached").await.len(), 1, "fed once");
});

// "Tell me 24 h before it closes about the proposals this delegate has not voted on": a webhook
// watching delegate D gets P's 24 h reminder, D then votes, and the 1 h reminder does not come;
// a webhook watching A, who never votes, gets both (each reminder was fed), and one watching no
// voter gets every moment.
on_both_backends!(
    replica: a_delegate_who_votes_between_the_horizons_gets_the_first_reminder_not_the_second,
    |backend: Backend| async move {
        use crate::access::partner_token;
        use crate::fixtures::receiver::Receiver;
        use crate::fixtures::upstreams::HubVote;
        use serde_json::json;

        let w = world(backend).await;
        let e_s = 1_700_300_000;
        let e = e_s * 1000;
        let p = proposal(1, e_s - VOTING, "active", "P", "1");
        serve_only(&w, vec![p.clone()]);
        run_once(&w.db, &w.registry, &options()).await.expect("run");
        let (_, token) = partner_token(&w.app, &["v2:paid:standard"]).await;
        let (delegate, absent) = (format!("0x{:040x}", 0xd1_u64), format!("0x{:040x}", 0xa1_u64));
        let (for_d, for_a, for_all) = (Receiver::start().await, Receiver::start().await, Receiver::start().await);
        for (receiver, body) in [
            (&for_d, json!({ "url": for_d.url, "voters": [delegate] })),
            (&for_a, json!({ "url": for_a.url, "voters": [absent] })),
            (&for_all, json!({ "url": for_all.url, "kinds": ["voting_ends_soon", "vote_cast"] })),
        ] {
            let response = w
                .app
                .anonymous
                .post(w.app.url("/v2/webhooks"))
                .header("x-service-api-token", &token)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 201, "{}", receiver.url);
        }
        let kinds = |r: &Receiver| -> Vec<(String, Option<String>)> {
            r.received()
                .iter()
                .map(|d| {
                    let data = &d.json()["data"];
                    (data["kind"].as_str().unwrap().to_owned(), data["moment"]["horizon"].as_str().map(str::to_owned))
                })
                .collect()
        };
        let reminder = |horizon: &str| ("voting_ends_soon".to_owned(), Some(horizon.to_owned()));

        assert!(publish_due(&w.db, e - 24 * HOUR + 1000).await.unwrap().is_some(), "24 h before P's end");
        for_all.wait_for(1, Duration::from_secs(30)).await;
        for_d.wait_for(1, Duration::from_secs(30)).await;
        for_a.wait_for(1, Duration::from_secs(30)).await;
        assert_eq!(kinds(&for_d), [reminder("PT24H")], "D has not voted yet");

        // D votes on P, with all of its tally: a notable vote, fed as `vote_cast`.
        {
            let mut hub = w.hub_data.lock().unwrap();
            hub.proposals[0].votes = 1;
            hub.votes = vec![HubVote {
                id: format!("0x{:064x}", 0xd1_u64),
                proposal: p.id.clone(),
                voter: delegate.clone(),
                created: e_s - 2 * 3600,
                choice: "1".to_owned(),
                vp: "1".to_owned(),
            }];
        }
        run_once(&w.db, &w.registry, &options()).await.expect("run");
        for_d.wait_for(2, Duration::from_secs(30)).await;
        assert_eq!(kinds(&for_d)[1].0, "vote_cast", "D's own vote");

        assert!(publish_due(&w.db, e - HOUR + 1000).await.unwrap().is_some(), "1 h before P's end");
        for_a.wait_for(2, Duration::from_secs(30)).await;
        for_all.wait_for(3, Duration::from_secs(30)).await;
        assert_eq!(kinds(&for_a), [reminder("PT24H"), reminder("PT1H")], "A never voted: both reminders");
        assert_eq!(
            kinds(&for_all),
            [reminder("PT24H"), ("vote_cast".to_owned(), None), reminder("PT1H")],
            "every moment to a webhook watching no voter"
        );
        // The 1 h reminder went out to the others before this look: D's webhook had it to send too.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(kinds(&for_d), [reminder("PT24H"), ("vote_cast".to_owned(), None)], "D voted: no second reminder");
    }
);
