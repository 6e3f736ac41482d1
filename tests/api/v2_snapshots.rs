//! One response snapshot per v2 operation, taken on both backends under one name (so the two
//! must answer the same), and the rules every file in `snapshots/` follows:
//!
//! - a response is `<qualified id>_<case>.snap` (`v2_proposals_list_arbitrum`), the qualified id
//!   being the operation's name across both surfaces (`OperationDecl::qualified_id`: v2's
//!   operationId, v1's with `v1_` in front);
//! - a published document is `documents_<surface>_<format>.snap` (`documents_v1_json`).
//!
//! Adding a v2 operation without a snapshot fails `every_v2_operation_has_a_response_snapshot`.
//! A changed v1 snapshot is a changed public contract: review it, never accept it blindly.
use govdata::contract::{access::Version, operations};
use govdata::store::keys;

use crate::fixtures::sample::RFC_ID;
use crate::fixtures::stores::{actions_database, synthetic_database};
use crate::fixtures::token_node;
use crate::helpers::{TestApp, snapshot_settings, spawn_app_on};
use crate::on_both_backends;

/// A proposal of the sample with votes: uniswap's "Strategic Renewal of Gnosis, Linea, and
/// Mantle Deployments" (449 votes).
const VOTED: &str = "0x1086839122667be04c0eec25ba224fe4ac1b990383ddfe05b80ce201a06b4abf";
/// A voter of the sample (pgov.eth) with votes in four DAOs and delegations in three.
const VOTER: &str = "0x3fb19771947072629c8eee7995a2ef23b72d4c8a";

/// GETs `path` as the first-party client, expects 200 and a non-empty answer, and snapshots it
/// as `name` (cursors redacted: they are signed with the server's key).
async fn snapshot(app: &TestApp, name: &str, path: &str) {
    let (status, body) = app.get_json(path).await;
    assert_eq!(status, 200, "{path}: {body}");
    let data = &body["data"];
    let items = data["items"].as_array();
    assert!(items.is_none_or(|items| !items.is_empty()) && data.is_object(), "{path}: real data: {body}");
    let mut settings = snapshot_settings();
    settings.add_redaction(".meta.page.nextCursor", "[nextCursor]");
    settings.bind(|| insta::assert_json_snapshot!(name, body));
}

fn proposal_key(dao: &str, id: &str) -> String {
    keys::proposal_key(dao, "snapshot", id)
}

on_both_backends!(v2_daos_list, |app: TestApp| async move {
    snapshot(&app, "v2_daos_list_first_page", "/v2/daos?limit=3").await;
});

// v2_daos_get: `daos::v2_gets_one_dao` (v2_daos_get_arbitrum).

on_both_backends!(v2_topics_list, |backend: Backend| async move {
    let app = spawn_app_on(synthetic_database(backend)).await;
    snapshot(&app, "v2_topics_list_synthetic_uniswap", "/v2/topics?daoId=uniswap&limit=2").await;
});

on_both_backends!(v2_topics_get, |backend: Backend| async move {
    let app = spawn_app_on(synthetic_database(backend)).await;
    let path = format!("/v2/topics/{}", keys::topic_key("uniswap", "4242"));
    snapshot(&app, "v2_topics_get_synthetic_linked", &path).await;
});

on_both_backends!(v2_activity_list, |app: TestApp| async move {
    snapshot(&app, "v2_activity_list_weatherxm", "/v2/activity?daoId=weatherxm&limit=4").await;
});

on_both_backends!(v2_events_list, |app: TestApp| async move {
    let path = "/v2/events?daoId=arbitrum&from=2025-07-30T00:00:00Z&to=2025-08-01T00:00:00Z&limit=4";
    snapshot(&app, "v2_events_list_arbitrum", path).await;
});

on_both_backends!(v2_signals_list, |app: TestApp| async move {
    snapshot(&app, "v2_signals_list_first_page", "/v2/signals?limit=3").await;
});

on_both_backends!(v2_feed_list, |app: TestApp| async move {
    // The sample's one publication fed every event and signal it published; the time it was
    // published is the test's own.
    let mut settings = snapshot_settings();
    settings.add_redaction(".data.items[].publishedAt", "[publishedAt]");
    let _guard = settings.bind_to_scope();
    snapshot(&app, "v2_feed_list_first_page", "/v2/feed?limit=2").await;
    snapshot(&app, "v2_feed_list_signals", "/v2/feed?kinds=signal_raised&daoId=uniswap&limit=1").await;
});

on_both_backends!(v2_feed_stream, |app: TestApp| async move {
    // The stream of the same entries, read whole: test servers end streams after a second
    // (`stream_ended`, `max_duration`). Each event as `{id, event, data}`, the `retry:` first.
    let response = app.get("/v2/stream?after=0&kinds=proposal_closed&daoId=dimo").await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text = response.text().await.unwrap();
    let events: Vec<serde_json::Value> = text
        .split_terminator("\n\n")
        .map(|block| {
            let mut event = serde_json::Map::new();
            for (field, value) in block.lines().filter_map(|l| l.split_once(": ")) {
                let value = match field {
                    "data" => serde_json::from_str(value).expect("JSON data"),
                    "retry" => serde_json::json!(value.parse::<u64>().expect("a number")),
                    _ => serde_json::json!(value),
                };
                event.insert(field.to_owned(), value);
            }
            serde_json::Value::Object(event)
        })
        .collect();
    assert!(events.len() > 2, "{text}");
    let mut settings = snapshot_settings();
    settings.add_redaction("[].data.publishedAt", "[publishedAt]");
    settings.bind(|| insta::assert_json_snapshot!("v2_feed_stream_dimo_closed", events));
});

on_both_backends!(v2_proposals_list, |app: TestApp| async move {
    snapshot(&app, "v2_proposals_list_arbitrum", "/v2/proposals?daoId=arbitrum&limit=3").await;
});

on_both_backends!(v2_proposal_actions_list, |backend: Backend| async move {
    let (url, key) = actions_database(backend).await;
    let app = spawn_app_on(url).await;
    snapshot(&app, "v2_proposal_actions_list_decoded", &format!("/v2/proposals/{key}/actions?limit=2")).await;
});

on_both_backends!(v2_proposals_get, |app: TestApp| async move {
    let path = format!("/v2/proposals/{}", proposal_key("uniswap", RFC_ID));
    snapshot(&app, "v2_proposals_get_rfc", &path).await;
});

on_both_backends!(v2_proposal_votes_list, |app: TestApp| async move {
    let path = format!("/v2/proposals/{}/votes?limit=3", proposal_key("uniswap", VOTED));
    snapshot(&app, "v2_proposal_votes_list_largest", &path).await;
});

on_both_backends!(v2_voters_list, |app: TestApp| async move {
    snapshot(&app, "v2_voters_list_uniswap", "/v2/daos/uniswap/voters?limit=3").await;
});

on_both_backends!(v2_voters_get, |app: TestApp| async move {
    snapshot(&app, "v2_voters_get_pgov", &format!("/v2/voters/{VOTER}")).await;
});

on_both_backends!(v2_voter_votes_list, |app: TestApp| async move {
    snapshot(&app, "v2_voter_votes_list_latest", &format!("/v2/voters/{VOTER}/votes?limit=3")).await;
});

on_both_backends!(v2_delegates_list, |app: TestApp| async move {
    snapshot(&app, "v2_delegates_list_uniswap", "/v2/daos/uniswap/delegates?limit=3").await;
});

// The bundled sample holds no token logs (its delegates come from a Tally export): the history
// lists are snapshotted over a fixed token history ingested from a node (`token_node`).
on_both_backends!(v2_notable_delegations_list, |backend: Backend| async move {
    let app = spawn_app_on(token_node::store_with_history(backend).await).await;
    let path = format!("/v2/daos/{}/notable-delegations?limit=5", token_node::DAO);
    snapshot(&app, "v2_notable_delegations_list_token_history", &path).await;
});

on_both_backends!(v2_voter_delegations_list, |backend: Backend| async move {
    let app = spawn_app_on(token_node::store_with_history(backend).await).await;
    let path = format!("/v2/voters/{}/delegations?side=delegate&limit=2", token_node::DELEGATE);
    snapshot(&app, "v2_voter_delegations_list_as_delegate", &path).await;
});

on_both_backends!(v2_voter_power_list, |backend: Backend| async move {
    let app = spawn_app_on(token_node::store_with_history(backend).await).await;
    let path = format!("/v2/voters/{}/power?daoId={}&limit=4", token_node::DELEGATE, token_node::DAO);
    snapshot(&app, "v2_voter_power_list_history", &path).await;
});

fn snapshot_names() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").file_name().to_string_lossy().into_owned())
        .filter_map(|file| file.strip_suffix(".snap").map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// The operation `name` (a response snapshot's name) is of, by the naming rule: the operation's
/// name across both surfaces (`OperationDecl::qualified_id`, `v1_daos_list`), then the case.
fn operation_of(name: &str) -> Option<&'static operations::OperationDecl> {
    operations::ALL
        .iter()
        .find(|d| name.strip_prefix(&d.qualified_id()).and_then(|r| r.strip_prefix('_')).is_some_and(|c| !c.is_empty()))
}

#[test]
fn every_v2_operation_has_a_response_snapshot() {
    let names = snapshot_names();
    let missing: Vec<&str> = operations::ALL
        .iter()
        .filter(|d| d.version == Version::V2)
        .filter(|d| !names.iter().any(|n| operation_of(n).is_some_and(|o| (o.version, o.id) == (d.version, d.id))))
        .map(|d| d.id)
        .collect();
    assert!(
        missing.is_empty(),
        "v2 operations without a response snapshot (snapshots/<operationId>_<case>.snap): {missing:?}"
    );
}

#[test]
fn every_snapshot_is_named_by_the_rule() {
    let names = snapshot_names();
    assert!(names.len() > 20, "{names:?}");
    for name in names {
        let document = ["documents_v1_json", "documents_v2_json"].contains(&name.as_str());
        assert!(
            document || operation_of(&name).is_some(),
            "snapshots/{name}.snap: a response is <qualified id>_<case> with the qualified id (`v1_daos_list`, \
             `v2_daos_list`) of an operation of contract::operations, a document is documents_<v1|v2>_json"
        );
    }
}

on_both_backends!(v2_exports_list, |app: TestApp| async move {
    // dimo's files: no other test builds them on the shared sample store, so they stay on request.
    snapshot(&app, "v2_exports_list_dimo_first_page", "/v2/exports?daoId=dimo&limit=3").await;
});

on_both_backends!(v2_export_tables_list, |app: TestApp| async move {
    snapshot(&app, "v2_export_tables_list_every_table", "/v2/export-tables").await;
});

// A file is no JSON: its status, the headers a data tool reads, and its text.
on_both_backends!(v2_exports_get, |app: TestApp| async move {
    let r = app.get("/v2/exports/dimo/daos.ndjson").await;
    assert_eq!(r.status(), 200);
    let headers: serde_json::Map<String, serde_json::Value> =
        ["content-type", "content-length", "etag", "accept-ranges", "cache-control", "content-disposition", "vary"]
            .iter()
            .filter_map(|h| Some((h.to_string(), r.headers().get(*h)?.to_str().ok()?.into())))
            .collect();
    let body = r.text().await.unwrap();
    let lines: Vec<serde_json::Value> = body.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!lines.is_empty());
    let answer = serde_json::json!({ "headers": headers, "rows": lines });
    snapshot_settings().bind(|| insta::assert_json_snapshot!("v2_exports_get_dimo_daos_ndjson", answer));
});
