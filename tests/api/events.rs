//! `GET /v1/governance-events` on the real sample, and derivation on fixtures.
use serde_json::{Value, json};

use crate::{
    daos::assert_no_floats,
    fixtures::sample::{ACTIVE_ARB, Expected, SAMPLE_END_MS, date_ms, dec, expected_events, rfc, sample_votes},
    fixtures::stores::topic_and_signal_database,
    helpers::{TestApp, snapshot_settings, spawn_app_on},
    on_both_backends,
};

const DAY_MS: i64 = 86_400_000;
fn in_window(e: &Expected, from: i64, to: i64) -> bool {
    e.ms >= from && e.ms <= to
}

fn items(body: &Value) -> &Vec<Value> {
    body["data"]["items"].as_array().expect("items")
}

on_both_backends!(v1_events_cover_the_sample_exactly, |app: TestApp| async move {
    let expected = expected_events();
    assert_eq!(expected.iter().filter(|e| e.kind == "vote_cast").count(), 380, "the notable-vote rule on the sample");
    let (from, to) = (SAMPLE_END_MS - 90 * DAY_MS, SAMPLE_END_MS);
    let want = expected.iter().filter(|e| in_window(e, from, to)).count();
    let (status, body) = app.get_json(&format!("/v1/governance-events?start_ms={from}&end_ms={to}&limit=200")).await;
    assert_eq!(status, 200, "{body}");
    assert_no_floats(&body, "$");
    assert_eq!(body["data"]["total"], want as u64);
    assert_eq!(body["request"]["adjustments"], json!([]));
    assert_eq!(body["request"]["applied"]["start_ms"], from.to_string());
    assert_eq!(body["request"]["applied"]["end_ms"], to.to_string());
    assert_eq!(body["freshness"]["cacheStatus"], "fresh");
    let page = items(&body);
    assert_eq!(page.len(), want.min(200));
    // Newest first, each inside the window, each citing its source.
    let mut last = String::from("9999");
    let mut seen = std::collections::HashSet::new();
    for e in page {
        let at = e["occurredAt"].as_str().unwrap().to_owned();
        assert!(at <= last, "order at {e}");
        last = at;
        assert!(seen.insert(e["id"].as_str().unwrap().to_owned()), "ids are unique: {e}");
        assert_eq!(e["subject"]["kind"], "proposal");
        assert_eq!(e["subject"]["source"], "snapshot");
        assert!(e["subject"]["key"].as_str().unwrap().starts_with("p_"));
        assert_eq!(e["citation"]["source"], "snapshot");
        assert_eq!(e["citation"]["snapshotId"], e["subject"]["externalId"]);
        assert!(e["citation"]["url"].as_str().unwrap().starts_with("https://snapshot.box/#/s:"));
        assert!(!e["summary"].as_str().unwrap().is_empty());
    }
    // Per kind and DAO, the totals match the independent computation.
    for (dao, kind) in [("arbitrum", "vote_cast"), ("arbitrum", "proposal_closed"), ("uniswap", "proposal_created")] {
        let want = expected.iter().filter(|e| e.dao == dao && e.kind == kind && in_window(e, from, to)).count();
        let (status, body) =
            app.get_json(&format!("/v1/governance-events?start_ms={from}&end_ms={to}&daoId={dao}&kind={kind}")).await;
        assert_eq!(status, 200);
        assert_eq!(body["data"]["total"], want as u64, "{dao} {kind}");
        assert!(items(&body).iter().all(|e| e["daoId"] == dao && e["kind"] == kind));
        assert_eq!(body["request"]["applied"]["daoId"], dao);
        assert_eq!(body["request"]["applied"]["kind"], kind);
    }
});

on_both_backends!(v1_vote_events_carry_the_exact_power, |app: TestApp| async move {
    // The largest arbitrum votes: compare the served power with the CSV text.
    let votes = sample_votes();
    let (from, to) = (SAMPLE_END_MS - 90 * DAY_MS, SAMPLE_END_MS);
    let (_, body) =
        app.get_json(&format!("/v1/governance-events?start_ms={from}&end_ms={to}&kind=vote_cast&limit=200")).await;
    let page = items(&body);
    assert!(!page.is_empty());
    for e in page {
        let voter = e["actor"].as_str().unwrap();
        let proposal = e["subject"]["externalId"].as_str().unwrap();
        let row = votes
            .iter()
            .find(|v| v["proposal_id"] == proposal && v["voter"].to_ascii_lowercase() == voter)
            .unwrap_or_else(|| panic!("vote of {voter} on {proposal} is in the sample"));
        assert_eq!(e["details"]["votingPower"], row["voting_power"].as_str(), "exact text as received");
        assert_eq!(e["details"]["choice"], row["choice"].as_str());
        assert_eq!(e["occurredAt"], rfc(date_ms(&row["created"])));
        let share = dec(&row["voting_power"]) / dec(e["details"]["scoresTotal"].as_str().unwrap());
        assert!(share >= dec("0.01"), "{voter}: {share}");
    }
});

on_both_backends!(v1_events_clamp_window_and_limit, |app: TestApp| async move {
    // The sample's busiest 90 days end on 2025-08-02: more than 200 events.
    let to = date_ms("2025-08-03");
    let from = to - 91 * DAY_MS;
    let (status, body) = app.get_json(&format!("/v1/governance-events?start_ms={from}&end_ms={to}&limit=500")).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["limit"], 200);
    assert_eq!(items(&body).len(), 200);
    assert_eq!(
        body["request"]["adjustments"],
        json!([
            {"param": "start_ms", "received": from.to_string(), "applied": (to - 90 * DAY_MS).to_string(), "reason": "window_clamped_to_max"},
            {"param": "limit", "received": "500", "applied": "200", "reason": "clamped_to_max"},
        ])
    );
    assert_eq!(body["request"]["params"]["start_ms"], from.to_string());
    assert_eq!(body["request"]["applied"]["start_ms"], (to - 90 * DAY_MS).to_string());
    // The clamped window answers like the 90-day window.
    let (_, exact) = app.get_json(&format!("/v1/governance-events?start_ms={}&end_ms={to}", to - 90 * DAY_MS)).await;
    assert_eq!(body["data"]["total"], exact["data"]["total"]);
    // A start after the end is moved to the end; a negative offset to 0; limit 0 to 1.
    let (_, body) = app.get_json(&format!("/v1/governance-events?start_ms={to}&end_ms={from}&offset=-1&limit=0")).await;
    assert_eq!(body["data"]["offset"], 0);
    assert_eq!(body["data"]["limit"], 1);
    let reasons: Vec<&str> =
        body["request"]["adjustments"].as_array().unwrap().iter().map(|a| a["reason"].as_str().unwrap()).collect();
    assert_eq!(reasons, ["start_after_end", "clamped_to_min", "clamped_to_min"]);
});

async fn assert_validation(app: &TestApp, path: &str, name: &str) -> Value {
    let response = app.get(path).await;
    assert_eq!(response.status().as_u16(), 400, "{path}");
    assert_eq!(response.headers()["content-type"], "application/problem+json");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["code"], "VALIDATION_ERROR", "{path}");
    assert_eq!(body["errors"][0]["name"], name, "{path}: {body}");
    body
}

on_both_backends!(v1_events_reject_missing_and_unparseable_values, |app: TestApp| async move {
    let body = assert_validation(&app, "/v1/governance-events?end_ms=1775174400000", "start_ms").await;
    assert_eq!(body["errors"][0]["reason"], "is required");
    assert_validation(&app, "/v1/governance-events?start_ms=1775174400000", "end_ms").await;
    assert_validation(&app, "/v1/governance-events", "start_ms").await;
    let body = assert_validation(&app, "/v1/governance-events?start_ms=abc&end_ms=1775174400000", "start_ms").await;
    assert_eq!(body["errors"][0]["received"], "abc");
    assert_validation(&app, "/v1/governance-events?start_ms=1&end_ms=1.5", "end_ms").await;
    let body = assert_validation(&app, "/v1/governance-events?start_ms=1&end_ms=2&kind=vote", "kind").await;
    assert_eq!(body["errors"][0]["received"], "vote");
    assert_validation(&app, "/v1/governance-events?start_ms=1&end_ms=2&limit=ten", "limit").await;
    assert_validation(&app, "/v1/governance-events?start_ms=1&end_ms=2&offset=x", "offset").await;
});

on_both_backends!(v1_events_unknown_dao_is_an_empty_page, |app: TestApp| async move {
    let (status, body) =
        app.get_json(&format!("/v1/governance-events?start_ms=0&end_ms={SAMPLE_END_MS}&daoId=nosuchdao")).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["total"], 0);
    assert_eq!(body["data"]["items"], json!([]));
});

on_both_backends!(v1_events_list_snapshot, |app: TestApp| async move {
    // The close of an arbitrum vote with its notable votes.
    let to = date_ms("2025-08-01");
    let from = to - 2 * DAY_MS;
    let (_, body) =
        app.get_json(&format!("/v1/governance-events?start_ms={from}&end_ms={to}&daoId=arbitrum&limit=6")).await;
    snapshot_settings().bind(|| insta::assert_json_snapshot!("v1_events_list_arbitrum", body));
});

on_both_backends!(forum_topic_becomes_an_event, |backend: Backend| async move {
    let url = topic_and_signal_database(backend).await;
    let app = spawn_app_on(url.clone()).await;
    let (from, to) = (SAMPLE_END_MS - 90 * DAY_MS, SAMPLE_END_MS);
    let (status, body) =
        app.get_json(&format!("/v1/governance-events?start_ms={from}&end_ms={to}&kind=forum_topic_created")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["total"], 1);
    let e = &items(&body)[0];
    assert_eq!(e["kind"], "forum_topic_created");
    assert_eq!(e["daoId"], "arbitrum");
    assert_eq!(e["occurredAt"], rfc(SAMPLE_END_MS - DAY_MS / 2));
    assert_eq!(e["actor"], "synthetic-author");
    assert_eq!(e["subject"]["kind"], "forum_topic");
    assert_eq!(e["subject"]["source"], "discourse");
    assert_eq!(e["subject"]["externalId"], "90001");
    assert_eq!(e["subject"]["title"], "[synthetic] Discussion: ArbOS 60 Elara");
    assert_eq!(e["subject"]["key"], govdata::store::keys::topic_key("arbitrum", "90001"));
    assert_eq!(e["citation"]["source"], "discourse");
    assert_eq!(e["citation"]["url"], "https://forum.example/t/synthetic-discussion-arbos-60-elara/90001");
    assert_eq!(e["details"], json!({"linkedProposalSource": "snapshot", "linkedProposalExternalId": ACTIVE_ARB}));
    // Two more publications added no event: the total is the sample's plus the topic.
    let want = expected_events().iter().filter(|e| in_window(e, from, to)).count() + 1;
    let (_, all) = app.get_json(&format!("/v1/governance-events?start_ms={from}&end_ms={to}")).await;
    assert_eq!(all["data"]["total"], want as u64);
    // The natural keys written by the set-based SQL are the ones the contract declares.
    use govdata::contract::events::{EventKind, proposal_event_key, topic_event_key, vote_event_key};
    use govdata::store::entities::governance_event as ge;
    use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
    let db = govdata::store::connect(&url).await.expect("connect");
    let keys: Vec<String> = ge::Entity::find()
        .filter(ge::Column::SubjectExternalId.is_in([ACTIVE_ARB, "90001"]))
        .all(&db)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.natural_key)
        .collect();
    db.close().await.ok();
    assert!(keys.contains(&topic_event_key("arbitrum", "90001")), "{keys:?}");
    let created = proposal_event_key("arbitrum", "snapshot", ACTIVE_ARB, EventKind::ProposalCreated);
    assert!(keys.contains(&created), "{keys:?}");
    assert!(keys.contains(&proposal_event_key("arbitrum", "snapshot", ACTIVE_ARB, EventKind::VotingStarted)));
    let vote = vote_event_key("arbitrum", "snapshot", ACTIVE_ARB, "");
    assert!(keys.iter().all(|k| !k.starts_with(&vote)), "the active proposal has no ingested votes");
    let (_, votes) =
        app.get_json(&format!("/v1/governance-events?start_ms={from}&end_ms={to}&kind=vote_cast&limit=1")).await;
    let v = &items(&votes)[0];
    // The public id is derived from the event's natural key, which names the vote.
    let key = vote_event_key(
        v["daoId"].as_str().unwrap(),
        "snapshot",
        v["subject"]["externalId"].as_str().unwrap(),
        v["actor"].as_str().unwrap(),
    );
    assert_eq!(v["id"], govdata::store::keys::event_id(&key));
    let db = govdata::store::connect(&url).await.expect("connect");
    let stored = ge::Entity::find().filter(ge::Column::NaturalKey.eq(key.as_str())).count(&db).await.unwrap();
    db.close().await.ok();
    assert_eq!(stored, 1, "{key}");
});
