//! `GET /v1/daos` and `GET /v2/daos/{daoId}` on the real sample.
use serde_json::Value;

use crate::{helpers::snapshot_settings, on_both_backends};

fn dao<'a>(list: &'a Value, id: &str) -> &'a Value {
    list["data"]["items"].as_array().unwrap().iter().find(|d| d["daoId"] == id).unwrap_or_else(|| panic!("{id} listed"))
}

/// No JSON floats anywhere: exact numbers travel as strings.
pub fn assert_no_floats(v: &Value, at: &str) {
    match v {
        Value::Number(n) => assert!(n.is_i64() || n.is_u64(), "float at {at}: {n}"),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| assert_no_floats(x, &format!("{at}[{i}]"))),
        Value::Object(o) => o.iter().for_each(|(k, x)| assert_no_floats(x, &format!("{at}.{k}"))),
        Value::Null => panic!("null at {at}: absent fields are omitted"),
        _ => {}
    }
}

on_both_backends!(v1_lists_the_sample_daos_with_real_counts, |app: TestApp| async move {
    let (status, body) = app.get_json("/v1/daos").await;
    assert_eq!(status, 200);
    assert_no_floats(&body, "$");
    let data = &body["data"];
    assert_eq!(data["total"], 8);
    assert_eq!(data["limit"], 25);
    assert_eq!(data["offset"], 0);
    let ids: Vec<&str> = data["items"].as_array().unwrap().iter().map(|d| d["daoId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["aave", "arbitrum", "compound", "dimo", "lido", "optimism", "uniswap", "weatherxm"]);
    let arbitrum = dao(&body, "arbitrum");
    assert_eq!(arbitrum["counts"]["proposals"], "43");
    assert_eq!(arbitrum["counts"]["ingestedVotes"], "16969");
    assert_eq!(arbitrum["counts"]["delegates"], "100");
    assert_eq!(arbitrum["status"], "ingested");
    let upstream: u64 = arbitrum["counts"]["upstreamVotes"].as_str().unwrap().parse().unwrap();
    assert!(upstream >= 16969, "upstream totals are kept apart from ingested votes");
    let sources: Vec<&str> =
        arbitrum["sources"].as_array().unwrap().iter().map(|s| s["source"].as_str().unwrap()).collect();
    assert_eq!(sources, ["snapshot", "tally"]);
    assert_eq!(arbitrum["sources"][0]["locator"], "arbitrumfoundation.eth");
    // aave and optimism come only from the Tally export: delegates, no proposals.
    let aave = dao(&body, "aave");
    assert_eq!(aave["counts"]["proposals"], "0");
    assert_eq!(aave["counts"]["delegates"], "100");
    // Envelope: request echo and freshness.
    assert_eq!(body["request"]["method"], "GET");
    assert_eq!(body["request"]["path"], "/v1/daos");
    assert_eq!(body["request"]["applied"]["limit"], "25");
    assert_eq!(body["request"]["adjustments"], serde_json::json!([]));
    assert_eq!(body["freshness"]["cacheStatus"], "fresh");
    assert!(body["freshness"]["dataAsOf"].as_str().unwrap().ends_with(".000Z"));
});

on_both_backends!(v1_daos_snapshot, |app: TestApp| async move {
    let (_, body) = app.get_json("/v1/daos?limit=3&offset=1").await;
    snapshot_settings().bind(|| insta::assert_json_snapshot!("v1_daos_list_limit3_offset1", body));
});

on_both_backends!(v1_clamps_limit_and_offset, |app: TestApp| async move {
    let (status, body) = app.get_json("/v1/daos?limit=5000&offset=-7").await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["limit"], 100);
    assert_eq!(body["data"]["offset"], 0);
    assert_eq!(body["data"]["items"].as_array().unwrap().len(), 8);
    assert_eq!(body["request"]["params"]["limit"], "5000", "params echo what was received");
    assert_eq!(body["request"]["applied"]["limit"], "100");
    assert_eq!(body["request"]["applied"]["offset"], "0");
    assert_eq!(
        body["request"]["adjustments"],
        serde_json::json!([
            {"param": "limit", "received": "5000", "applied": "100", "reason": "clamped_to_max"},
            {"param": "offset", "received": "-7", "applied": "0", "reason": "clamped_to_min"},
        ])
    );
    let (_, body) = app.get_json("/v1/daos?limit=0").await;
    assert_eq!(body["data"]["limit"], 1);
    assert_eq!(body["data"]["items"].as_array().unwrap().len(), 1);
    assert_eq!(body["request"]["adjustments"][0]["reason"], "clamped_to_min");
    // The document says int64: a value beyond it is not clamped but refused, naming the range.
    let (status, body) = app.get_json("/v1/daos?limit=99999999999999999999999").await;
    assert_eq!(status, 400);
    assert_eq!(body["code"], "VALIDATION_ERROR");
    assert_eq!(body["errors"][0]["name"], "limit");
    assert_eq!(body["errors"][0]["reason"], "`99999999999999999999999` is beyond the int64 range");
    // Exactly at the maximum: no adjustment.
    let (_, body) = app.get_json("/v1/daos?limit=100").await;
    assert_eq!(body["request"]["adjustments"], serde_json::json!([]));
});

on_both_backends!(v1_pages_with_offset, |app: TestApp| async move {
    let (_, page) = app.get_json("/v1/daos?limit=3&offset=6").await;
    let ids: Vec<&str> =
        page["data"]["items"].as_array().unwrap().iter().map(|d| d["daoId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["uniswap", "weatherxm"]);
    assert_eq!(page["data"]["total"], 8);
    let (_, past) = app.get_json("/v1/daos?offset=50").await;
    assert_eq!(past["data"]["items"], serde_json::json!([]));
    assert_eq!(past["data"]["total"], 8);
});

on_both_backends!(v2_gets_one_dao, |app: TestApp| async move {
    let (status, body) = app.get_json("/v2/daos/arbitrum").await;
    assert_eq!(status, 200);
    assert_no_floats(&body, "$");
    assert_eq!(body["data"]["daoId"], "arbitrum");
    assert_eq!(body["data"]["counts"]["ingestedVotes"], "16969");
    assert_eq!(body["meta"]["freshness"]["cacheStatus"], "fresh");
    // v1 and v2 give the same numbers.
    let (_, v1) = app.get_json("/v1/daos").await;
    assert_eq!(dao(&v1, "arbitrum"), &body["data"]);
    snapshot_settings().bind(|| insta::assert_json_snapshot!("v2_daos_get_arbitrum", body));
});
