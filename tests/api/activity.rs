//! `GET /v1/activity` on the real sample and on a fixture with a forum topic and a signal.
use serde_json::{Value, json};

use crate::{
    daos::assert_no_floats,
    fixtures::sample::{ACTIVE_ARB, SAMPLE_AS_OF, SAMPLE_END_MS, expected_events, rfc},
    fixtures::stores::topic_and_signal_database,
    helpers::{sample_database, snapshot_settings, spawn_app, spawn_app_on},
    on_both_backends,
};

const DAY_MS: i64 = 86_400_000;
/// The feed reaches 90 days back from the sample's `dataAsOf`.
const FLOOR: i64 = SAMPLE_AS_OF - 90 * DAY_MS;

fn items(body: &Value) -> &Vec<Value> {
    body["data"]["items"].as_array().expect("items")
}

/// Signals the rule engine wrote into a store, counted with SQL (optionally for one DAO, since a time).
async fn signal_count(url: &str, dao: Option<&str>, since: Option<i64>) -> u64 {
    use govdata::store::entities::signal;
    use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
    let db = govdata::store::connect(url).await.expect("connect");
    let mut q = signal::Entity::find();
    if let Some(dao) = dao {
        q = q.filter(signal::Column::DaoId.eq(dao));
    }
    if let Some(since) = since {
        q = q.filter(signal::Column::DetectedMs.gte(since));
    }
    let n = q.count(&db).await.expect("count");
    db.close().await.ok();
    n
}

on_both_backends!(v1_activity_merges_events_and_signals, |backend: Backend| async move {
    let app = spawn_app(backend).await;
    let url = sample_database(backend);
    let expected = expected_events();
    let signals = signal_count(&url, None, Some(FLOOR)).await;
    let (status, body) = app.get_json("/v1/activity?limit=100").await;
    assert_eq!(status, 200, "{body}");
    assert_no_floats(&body, "$");
    // No since_ms: the feed starts 90 days before the newest data, and says so.
    let in_window = expected.iter().filter(|e| e.ms >= FLOOR).count() as u64;
    assert!(in_window > 0 && (in_window as usize) < expected.len(), "the window cuts the sample: {in_window}");
    assert_eq!(body["data"]["total"], in_window + signals);
    assert_eq!(body["request"]["applied"]["since_ms"], FLOOR.to_string());
    assert_eq!(body["request"]["adjustments"], json!([]));
    assert_eq!(body["data"]["limit"], 100);
    assert_eq!(body["request"]["applied"]["limit"], "100");
    let page = items(&body);
    assert_eq!(page.len() as u64, (in_window + signals).min(100));
    let mut last = String::from("9999");
    for e in page {
        let at = e["occurredAt"].as_str().unwrap().to_owned();
        assert!(at <= last, "newest first at {e}");
        last = at;
        let id = e["id"].as_str().unwrap();
        if e["kind"] == "signal" {
            assert!(id.starts_with("sg_") && id.len() == 25, "{id}");
            assert!(e["signalKind"].is_string() && e["severity"].is_string());
        } else {
            assert!(id.starts_with("ev_") && id.len() == 25, "{id}");
            assert!(e["citation"]["source"].is_string());
        }
        assert!(!e["summary"].as_str().unwrap().is_empty());
    }
    // Filters: kind, daoId, since_ms; each total matches the independent count.
    let (_, body) = app.get_json("/v1/activity?kind=vote_cast&limit=3").await;
    let votes_in_window = expected.iter().filter(|e| e.kind == "vote_cast" && e.ms >= FLOOR).count() as u64;
    assert_eq!(body["data"]["total"], votes_in_window);
    // An entry's id is the event's own public id.
    let (_, events) = app
        .get_json(&format!("/v1/governance-events?kind=vote_cast&limit=3&start_ms={FLOOR}&end_ms={SAMPLE_END_MS}"))
        .await;
    let ids = |b: &Value| items(b).iter().map(|e| e["id"].clone()).collect::<Vec<_>>();
    assert_eq!(ids(&events), ids(&body));
    // Reaching further back than the window is moved up to it and recorded.
    let (_, all) = app.get_json("/v1/activity?kind=vote_cast&limit=3&since_ms=0").await;
    assert_eq!(all["data"]["total"], votes_in_window);
    assert_eq!(
        all["request"]["adjustments"],
        json!([{"param": "since_ms", "received": "0", "applied": FLOOR.to_string(), "reason": "window_clamped_to_max"}])
    );
    // Exactly the floor is inside the window; a millisecond earlier is moved up.
    let (_, at) = app.get_json(&format!("/v1/activity?kind=vote_cast&limit=3&since_ms={FLOOR}")).await;
    assert_eq!(
        (at["data"]["total"].clone(), at["request"]["adjustments"].clone()),
        (json!(votes_in_window), json!([]))
    );
    let (_, before) = app.get_json(&format!("/v1/activity?kind=vote_cast&limit=3&since_ms={}", FLOOR - 1)).await;
    assert_eq!(before["request"]["adjustments"][0]["applied"], FLOOR.to_string());
    assert!(items(&body).iter().all(|e| e["kind"] == "vote_cast" && e["details"]["votingPower"].is_string()));
    let (_, body) = app.get_json("/v1/activity?kind=signal").await;
    assert_eq!(body["data"]["total"], signals);
    assert!(items(&body).iter().all(|e| e["kind"] == "signal"));
    let since = SAMPLE_END_MS - 30 * DAY_MS;
    let (_, body) = app.get_json(&format!("/v1/activity?daoId=arbitrum&since_ms={since}&limit=100")).await;
    let want = expected.iter().filter(|e| e.dao == "arbitrum" && e.ms >= since).count() as u64
        + signal_count(&url, Some("arbitrum"), Some(since)).await;
    assert_eq!(body["data"]["total"], want);
    assert!(
        items(&body)
            .iter()
            .all(|e| e["daoId"] == "arbitrum" && e["occurredAt"].as_str().unwrap() >= rfc(since).as_str())
    );
    assert_eq!(body["request"]["applied"]["since_ms"], since.to_string());
    assert_eq!(body["request"]["applied"]["daoId"], "arbitrum");
    let (_, body) = app.get_json("/v1/activity?daoId=nosuchdao").await;
    assert_eq!(body["data"]["total"], 0);
    // Offsets page through the same order.
    let (_, first) = app.get_json("/v1/activity?limit=10").await;
    let (_, second) = app.get_json("/v1/activity?limit=5&offset=5").await;
    assert_eq!(items(&first)[5..], items(&second)[..]);
});

on_both_backends!(v1_activity_clamps_and_rejects, |app: TestApp| async move {
    let (status, body) = app.get_json("/v1/activity?limit=500&offset=-3").await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["limit"], 100);
    assert_eq!(
        body["request"]["adjustments"],
        json!([
            {"param": "limit", "received": "500", "applied": "100", "reason": "clamped_to_max"},
            {"param": "offset", "received": "-3", "applied": "0", "reason": "clamped_to_min"},
        ])
    );
    for (path, name) in [
        ("/v1/activity?since_ms=abc", "since_ms"),
        ("/v1/activity?kind=vote", "kind"),
        ("/v1/activity?limit=many", "limit"),
    ] {
        let (status, body) = app.get_json(path).await;
        assert_eq!(status, 400, "{path}");
        assert_eq!(body["code"], "VALIDATION_ERROR");
        assert_eq!(body["errors"][0]["name"], name, "{path}");
    }
});

on_both_backends!(v1_activity_list_snapshot, |app: TestApp| async move {
    let (_, body) = app.get_json("/v1/activity?daoId=weatherxm&limit=8").await;
    snapshot_settings().bind(|| insta::assert_json_snapshot!("v1_activity_list_weatherxm", body));
});

on_both_backends!(v1_activity_fixture, |backend: Backend| async move {
    let app = spawn_app_on(topic_and_signal_database(backend).await).await;
    let (status, body) = app.get_json("/v1/activity?kind=forum_topic_created").await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["total"], 1);
    let topic = &items(&body)[0];
    assert_eq!(topic["kind"], "forum_topic_created");
    assert_eq!(topic["subject"]["kind"], "forum_topic");
    assert_eq!(topic["subject"]["url"], "https://forum.example/t/synthetic-discussion-arbos-60-elara/90001");
    assert_eq!(topic["summary"], "Forum topic \"[synthetic] Discussion: ArbOS 60 Elara\" opened by synthetic-author");
    // Newest first: the topic (end - 12h) and the synthetic signal (end - 8h) lead arbitrum's feed.
    let (_, body) = app.get_json(&format!("/v1/activity?daoId=arbitrum&since_ms={}", SAMPLE_END_MS - DAY_MS)).await;
    let page = items(&body);
    let signal = page.iter().find(|e| e["summary"] == "[synthetic] close race").expect("the synthetic signal");
    assert_eq!(signal["kind"], "signal");
    assert_eq!(signal["signalKind"], "close_race");
    assert_eq!(signal["severity"], "warning");
    assert_eq!(signal["occurredAt"], rfc(SAMPLE_END_MS - DAY_MS / 3));
    assert_eq!(signal["subject"]["externalId"], ACTIVE_ARB);
    assert_eq!(signal["subject"]["title"], "[Constitutional] AIP: ArbOS 60 Elara");
    assert!(signal.get("citation").is_none() && signal.get("actor").is_none());
    let pos = |id: &Value| page.iter().position(|e| e["id"] == *id).unwrap();
    assert!(pos(&signal["id"]) < pos(&topic["id"]), "the later entry comes first");
});

on_both_backends!(v2_activity_since_reaches_at_most_the_window, |app: TestApp| async move {
    // The window's first day is served; a day before it is refused, not clamped.
    let floor = rfc(FLOOR);
    let (status, body) = app.get_json(&format!("/v2/activity?since={floor}&limit=5")).await;
    assert_eq!(status, 200, "{body}");
    let too_early = rfc(FLOOR - DAY_MS);
    let (status, body) = app.get_json(&format!("/v2/activity?since={too_early}")).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "VALIDATION_ERROR");
    assert_eq!(body["errors"][0]["name"], "since");
    assert_eq!(body["errors"][0]["expected"], format!("at or after {floor}"));
    // Without since the feed starts at the same floor as v1's.
    let (_, v2) = app.get_json("/v2/activity?limit=100").await;
    let oldest = v2["data"]["items"].as_array().unwrap().iter().map(|e| e["occurredAt"].as_str().unwrap()).min();
    assert!(oldest.is_some_and(|t| t >= floor.as_str()), "{oldest:?}");
});
