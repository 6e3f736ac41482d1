//! A DAO id is read in any letter case, in a path or a `daoId` filter, on both surfaces
//! (`DaoId::from_request`): `Uniswap` names `uniswap`.
//!
//! A `daoId` query filter that is no DAO id (a malformed slug, or an empty value where a list
//! reads it as a filter) matches nothing. The handlers answer it without
//! asking the store (`DaoScope::store_filter`), and the answer is exactly the one a well-formed
//! DAO id that names no DAO gets from the store: the same status, page, total, freshness and
//! 404 text, with the value echoed as received.
use serde_json::Value;

use crate::fixtures::sample::{RFC_ID, SAMPLE_END_MS};
use crate::helpers::TestApp;
use crate::lookup::encode;
use crate::on_both_backends;

/// A well-formed DAO id that no DAO has: the store is asked and finds nothing.
const UNKNOWN: &str = "nosuchdao";

/// The answer to `path` with `daoId` appended, its per-answer fields (request id, generation
/// time) cleared, as text.
async fn answer(app: &TestApp, path: &str, dao: &str) -> (u16, String) {
    let sep = if path.contains('?') { '&' } else { '?' };
    let (status, mut body) = app.get_json(&format!("{path}{sep}daoId={dao}")).await;
    for volatile in ["/requestId", "/request/requestId", "/freshness/generatedAt", "/meta/freshness/generatedAt"] {
        if let Some(v) = body.pointer_mut(volatile) {
            *v = Value::Null;
        }
    }
    (status, body.to_string())
}

/// `path` answers each of `daos` as it answers [`UNKNOWN`], but for the value echoed (each URL
/// asked once, so that every answer is freshly made).
async fn answers_as_unknown(app: &TestApp, path: &str, daos: &[&str]) {
    let (want_status, want) = answer(app, path, UNKNOWN).await;
    for dao in daos {
        let (status, got) = answer(app, path, dao).await;
        assert_eq!((status, got), (want_status, want.replace(UNKNOWN, dao)), "{path} with daoId={dao:?}");
    }
}

on_both_backends!(dao_filters_that_name_no_dao_match_nothing, |app: TestApp| async move {
    let (_, votes) = app.get_json("/v2/daos/uniswap/voters?limit=1").await;
    let voter = votes["data"]["items"][0]["voterIdentity"].as_str().expect("the sample has voters");
    let rfc_url = encode(&format!("https://snapshot.org/#/uniswapgovernance.eth/proposal/{RFC_ID}"));
    let topic_url = encode("https://gov.uniswap.org/t/some-topic/4242");
    // Lists that read an empty value as no filter, and lookups.
    let paths = [
        "/v1/governance-signals?limit=5&offset=10".to_owned(),
        "/v1/proposals/lookup?title=statute%20limitations".to_owned(),
        format!("/v1/proposals/lookup?externalId={RFC_ID}"),
        format!("/v1/proposals/lookup?url={rfc_url}"),
        format!("/v1/proposals/lookup?url={topic_url}"),
        format!("/v1/items/proposal/{RFC_ID}"),
        "/v1/items/forum_topic/4242".to_owned(),
        "/v2/events?limit=5".to_owned(),
        "/v2/signals".to_owned(),
        "/v2/activity".to_owned(),
        "/v2/feed?limit=5".to_owned(),
    ];
    // Lists that read an empty value as a filter matching nothing.
    let keeping_empty = [
        format!("/v1/governance-events?start_ms=0&end_ms={SAMPLE_END_MS}&limit=5&offset=10"),
        "/v1/activity?limit=3".to_owned(),
        "/v2/proposals?sort=end_time".to_owned(),
        "/v2/topics?limit=2".to_owned(),
        format!("/v2/voters/{voter}/votes"),
    ];
    for path in &paths {
        answers_as_unknown(&app, path, &["no.such", "Nosuch.Dao"]).await;
    }
    for path in &keeping_empty {
        answers_as_unknown(&app, path, &["no.such", "Nosuch.Dao", ""]).await;
    }
    // A cursor of another list shape is refused alike.
    let (_, first) = app.get_json("/v2/proposals?limit=1").await;
    let cursor = first["meta"]["page"]["nextCursor"].as_str().expect("more than one proposal");
    answers_as_unknown(&app, &format!("/v2/proposals?limit=1&cursor={cursor}"), &["no.such"]).await;
});

/// The answer to `path` without what belongs to one answer (request id, generation time) and,
/// on v1, without the echo of the request (`request`: what was received differs).
async fn data_of(app: &TestApp, path: &str) -> (u16, Value) {
    let (status, mut body) = app.get_json(path).await;
    for volatile in ["/requestId", "/freshness/generatedAt", "/meta/freshness/generatedAt", "/meta/requestId"] {
        if let Some(v) = body.pointer_mut(volatile) {
            *v = Value::Null;
        }
    }
    if let Some(request) = body.as_object_mut().and_then(|o| o.remove("request")) {
        body["adjusted"] = request["adjustments"].clone();
        body["applied"] = request["applied"]["daoId"].clone();
    }
    (status, body)
}

on_both_backends!(a_dao_id_in_another_letter_case_names_the_same_dao, |app: TestApp| async move {
    // Each path with `{dao}` where the DAO is named: in a path, or as a filter.
    let paths = [
        "/v1/daos/{dao}/brief",
        "/v1/governance-signals?limit=5&daoId={dao}",
        "/v1/proposals/lookup?title=statute%20limitations&daoId={dao}",
        "/v1/activity?limit=3&daoId={dao}",
        "/v2/daos/{dao}",
        "/v2/daos/{dao}/voters?limit=3",
        "/v2/daos/{dao}/delegates?limit=3",
        "/v2/proposals?limit=3&daoId={dao}",
        "/v2/events?limit=3&daoId={dao}",
        "/v2/feed?limit=3&daoId={dao}",
    ];
    for path in paths {
        let (status, want) = data_of(&app, &path.replace("{dao}", "uniswap")).await;
        assert_eq!(status, 200, "{path}: {want}");
        for other in ["Uniswap", "UNISWAP"] {
            let (status, mut got) = data_of(&app, &path.replace("{dao}", other)).await;
            assert_eq!(status, 200, "{path} with {other}: {got}");
            if path.starts_with("/v1/") {
                // v1 records the normalisation, as it records every other one.
                let adjusted = got["adjusted"].as_array().cloned().unwrap_or_default();
                let normalized = adjusted.iter().find(|a| a["param"] == "daoId").unwrap_or_else(|| panic!("{got}"));
                assert_eq!(normalized["received"], other, "{got}");
                assert_eq!(normalized["applied"], "uniswap", "{got}");
                assert_eq!(normalized["reason"], "normalized", "{got}");
                assert_eq!(got["applied"], want["applied"], "{path}");
                got["adjusted"] = want["adjusted"].clone();
            }
            assert_eq!(got, want, "{path} with {other}");
        }
    }
    // The cursor of a page asked with one case serves the next page asked with the other.
    let (_, first) = app.get_json("/v2/proposals?limit=1&daoId=uniswap").await;
    let cursor = first["meta"]["page"]["nextCursor"].as_str().expect("more than one proposal");
    let (status, next) = app.get_json(&format!("/v2/proposals?limit=1&daoId=Uniswap&cursor={cursor}")).await;
    assert_eq!(status, 200, "{next}");
});
