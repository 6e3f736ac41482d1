//! `GET /v1/governance-signals` on the real sample, plus synthetic fixtures for the rules the
//! sample cannot trigger (forum spikes, an active close race with its quorum at risk).
use sea_orm::{DatabaseConnection, EntityTrait, QueryOrder};
use serde_json::{Value, json};
use time::macros::datetime;

use crate::{
    daos::assert_no_floats,
    fixtures::sample::SAMPLE_AS_OF,
    fixtures::stores::{
        CLOSE_CALL_DECIDER, CLOSE_CALL_DECIDER_ENS, MINUTE, ONCHAIN_DECIDER, SPIKE_DAY, SYNTHETIC_PROPOSAL,
        insert_close_call, insert_forum_topic, insert_onchain_decided,
    },
    helpers::{Backend, TestApp, fresh_sample_database, snapshot_settings, spawn_app_on},
    on_both_backends,
};
use govdata::store::{entities, keys};

const DAY_MS: i64 = 86_400_000;

fn ms(t: time::OffsetDateTime) -> i64 {
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

fn items(body: &Value) -> &Vec<Value> {
    body["data"]["items"].as_array().expect("items")
}

fn find<'a>(body: &'a Value, key: &str) -> &'a Value {
    items(body).iter().find(|s| s["key"] == key).unwrap_or_else(|| panic!("{key} listed in {body:#}"))
}

on_both_backends!(v1_signals_on_the_sample_are_real, |app: TestApp| async move {
    // quorum_reached: Uniswap "Strategic Renewal of Gnosis, Linea, and Mantle Deployments".
    let id = "0x1086839122667be04c0eec25ba224fe4ac1b990383ddfe05b80ce201a06b4abf";
    let window =
        format!("start_ms={}&end_ms={}", ms(datetime!(2025-12-01 0:00 UTC)), ms(datetime!(2025-12-31 0:00 UTC)));
    let (status, body) = app.get_json(&format!("/v1/governance-signals?daoId=uniswap&{window}")).await;
    assert_eq!(status, 200, "{body:#}");
    assert_no_floats(&body, "$");
    let s = find(&body, &format!("quorum_reached:uniswap:snapshot:{id}"));
    assert_eq!(s["kind"], "quorum_reached");
    assert_eq!(s["severity"], "info");
    assert_eq!(s["daoId"], "uniswap");
    assert_eq!(s["detectedAt"], "2025-12-07T00:00:00.000Z");
    assert_eq!(s["rule"]["name"], "quorum_reached");
    assert_eq!(s["subject"]["kind"], "proposal");
    assert_eq!(s["subject"]["externalId"], id);
    assert_eq!(s["subject"]["key"], keys::proposal_key("uniswap", "snapshot", id));
    assert_eq!(s["subject"]["title"], "Strategic Renewal of Gnosis, Linea, and Mantle Deployments");
    let e = &s["evidence"];
    assert_eq!(e["scoresTotal"], "13713881.867694754");
    assert_eq!(e["quorum"], "10000000");
    assert_eq!(e["quorumShare"], "1.3713881868");
    assert_eq!(e["upstreamVotes"], "449");
    assert_eq!(e["ingestedVotes"], "449");
    assert_eq!(e["citations"][0]["snapshotId"], id);
    assert_eq!(e["citations"][0]["url"], format!("https://snapshot.box/#/s:uniswapgovernance.eth/proposal/{id}"));
    assert!(s["summary"].as_str().unwrap().contains("scores_total 13713881.867694754 ≥ quorum 10000000"));
    // The same proposal passed: For 10958834.521048307546060732 vs Against 0, Abstain 2755047.34664644728926.
    let s = find(&body, &format!("proposal_passed:uniswap:snapshot:{id}"));
    let tally = &s["evidence"]["tally"];
    assert_eq!(
        tally,
        &json!([
            {"choice": "1", "label": "For", "score": "10958834.521048307546060732"},
            {"choice": "3", "label": "Abstain", "score": "2755047.34664644728926"},
        ])
    );
    assert_eq!(s["evidence"]["outcomeBasis"], "tally");

    // proposal_failed by quorum: WeatherXM WIP-003, 65632.51114425325 of 150000.
    let id = "0x706c570aff12bfc8443a5a32eae1e36f533a264451b56b28005de00b95e13a37";
    let window =
        format!("start_ms={}&end_ms={}", ms(datetime!(2025-11-01 0:00 UTC)), ms(datetime!(2025-11-30 0:00 UTC)));
    let (_, body) = app.get_json(&format!("/v1/governance-signals?daoId=weatherxm&{window}")).await;
    let s = find(&body, &format!("proposal_failed:weatherxm:snapshot:{id}"));
    assert_eq!(s["severity"], "notice");
    assert_eq!(s["detectedAt"], "2025-11-03T00:00:00.000Z");
    assert_eq!(s["evidence"]["outcomeBasis"], "quorum_not_reached");
    assert_eq!(s["evidence"]["scoresTotal"], "65632.51114425325");
    assert_eq!(s["evidence"]["quorumShare"], "0.4375500743");
    assert!(items(&body).iter().all(|s| s["kind"] != "quorum_reached"), "{body:#}");

    // single_voter_decisive by quorum: WeatherXM WIP-004; one 883840.08 vote, 1013434.1904418343 in all.
    let id = "0x12f2a954126c1ce10816843162354539dd684f5e902ea463aa0b05bc221e566d";
    let window =
        format!("start_ms={}&end_ms={}", ms(datetime!(2026-02-01 0:00 UTC)), ms(datetime!(2026-02-28 0:00 UTC)));
    let (_, body) = app.get_json(&format!("/v1/governance-signals?kind=single_voter_decisive&{window}")).await;
    let s = find(&body, &format!("single_voter_decisive:weatherxm:snapshot:{id}"));
    assert_eq!(s["severity"], "warning");
    let e = &s["evidence"];
    assert_eq!(e["decidedBy"], json!(["quorum"]));
    assert_eq!(e["decidingVote"]["voter"], "0x96d8901a27f153ad83385c0e642a15291de9fa29");
    assert_eq!(e["decidingVote"]["votingPower"], "883840.08");
    assert_eq!(e["decidingVote"]["choice"], "1");
    assert_eq!(e["scoresTotalWithoutVote"], "129594.1104418343");
    assert_eq!(e["quorum"], "150000");
    assert_eq!(e["citations"].as_array().unwrap().len(), 2);

    // proposal_failed by tally: Arbitrum, Against 96607005.155383333175709964 ≥ For 42075203.140295012352404525.
    let id = "0x38663c36b26252acff6c6ca43663167858f51f960235dc0441bd2ad4a8f66fb1";
    let window =
        format!("start_ms={}&end_ms={}", ms(datetime!(2025-06-01 0:00 UTC)), ms(datetime!(2025-06-30 0:00 UTC)));
    let (_, body) = app.get_json(&format!("/v1/governance-signals?daoId=arbitrum&kind=proposal_failed&{window}")).await;
    assert_eq!(body["data"]["total"], 1, "{body:#}");
    let s = find(&body, &format!("proposal_failed:arbitrum:snapshot:{id}"));
    let e = &s["evidence"];
    assert_eq!(e["outcomeBasis"], "tally");
    assert_eq!(e["leadingChoice"], "2");
    assert_eq!(e["margin"], "54531802.015088320823305439");
    assert_eq!(e["countedPower"], "138682208.295678345528114489");
    assert!(
        s["summary"]
            .as_str()
            .unwrap()
            .contains("Against 96607005.155383333175709964 ≥ For 42075203.140295012352404525")
    );

    // Lido, March 2026: one vote against a median of 80 (unusual_turnout) by a first-time author.
    let id = "0x0b429993f28a10915f8b233293f29cef37f8b27aa158e1348ae1d0b387c493e7";
    let (_, body) = app.get_json("/v1/governance-signals?daoId=lido").await;
    let s = find(&body, &format!("unusual_turnout:lido:snapshot:{id}"));
    assert_eq!(s["evidence"]["upstreamVotes"], "1");
    assert_eq!(s["evidence"]["medianUpstreamVotes"], "80");
    assert_eq!(s["evidence"]["historyProposals"], "32");
    assert_eq!(s["evidence"]["turnoutRatio"], "0.0125");
    assert_eq!(s["detectedAt"], "2026-03-15T00:00:00.000Z");
    let s = find(&body, &format!("new_author:lido:snapshot:{id}"));
    assert_eq!(s["evidence"]["author"], "0x1d1b8c01b347664347621e96849a334fd6eff61c");
    assert_eq!(s["detectedAt"], "2026-03-12T00:00:00.000Z");
});

on_both_backends!(v1_signals_default_window_ends_at_data_as_of, |app: TestApp| async move {
    let (status, body) = app.get_json("/v1/governance-signals").await;
    assert_eq!(status, 200);
    assert_no_floats(&body, "$");
    assert_eq!(body["freshness"]["dataAsOf"], "2026-03-26T00:00:00.000Z");
    assert_eq!(body["request"]["applied"]["end_ms"], SAMPLE_AS_OF.to_string());
    assert_eq!(body["request"]["applied"]["start_ms"], (SAMPLE_AS_OF - 90 * DAY_MS).to_string());
    assert_eq!(body["request"]["adjustments"], json!([]));
    let list = items(&body);
    assert!(!list.is_empty());
    assert_eq!(body["data"]["limit"], 25);
    // Newest first, all inside the window.
    let times: Vec<&str> = list.iter().map(|s| s["detectedAt"].as_str().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
    assert!(times.iter().all(|t| *t <= "2026-03-26T00:00:00.000Z" && *t >= "2025-12-26T00:00:00.000Z"));
    // Several kinds in the sample.
    let mut all = Vec::new();
    for k in [
        "quorum_reached",
        "proposal_passed",
        "proposal_failed",
        "single_voter_decisive",
        "unusual_turnout",
        "new_author",
    ] {
        let (_, b) = app.get_json(&format!("/v1/governance-signals?kind={k}&start_ms=0&end_ms={SAMPLE_AS_OF}")).await;
        all.push((k, b["data"]["total"].as_u64().unwrap()));
    }
    assert!(all.iter().filter(|(_, n)| *n > 0).count() >= 4, "{all:?}");
});

on_both_backends!(v1_signals_filters, |app: TestApp| async move {
    let year = format!("start_ms={}&end_ms={SAMPLE_AS_OF}", SAMPLE_AS_OF - 90 * DAY_MS);
    let (_, all) = app.get_json(&format!("/v1/governance-signals?limit=100&{year}")).await;
    let total = all["data"]["total"].as_u64().unwrap();
    assert!(total > 0);
    let (_, body) = app.get_json(&format!("/v1/governance-signals?limit=100&kind=quorum_reached&{year}")).await;
    assert!(items(&body).iter().all(|s| s["kind"] == "quorum_reached" && s["rule"]["name"] == "quorum_reached"));
    assert_eq!(body["request"]["applied"]["kind"], "quorum_reached");
    let (_, body) = app.get_json(&format!("/v1/governance-signals?limit=100&severity=notice&{year}")).await;
    assert!(!items(&body).is_empty());
    assert!(items(&body).iter().all(|s| s["severity"] == "notice"));
    let (_, body) = app.get_json(&format!("/v1/governance-signals?limit=100&daoId=uniswap&{year}")).await;
    assert!(!items(&body).is_empty());
    assert!(items(&body).iter().all(|s| s["daoId"] == "uniswap" && s["subject"]["daoId"] == "uniswap"));
    // The filters partition the list.
    let mut by_severity = 0;
    for s in ["info", "notice", "warning", "critical"] {
        let (_, b) = app.get_json(&format!("/v1/governance-signals?severity={s}&{year}")).await;
        by_severity += b["data"]["total"].as_u64().unwrap();
    }
    assert_eq!(by_severity, total);
    // A DAO with no proposals has no signals; an empty window has none either.
    let (status, body) = app.get_json("/v1/governance-signals?daoId=aave").await;
    assert_eq!((status, body["data"]["total"].clone()), (200, json!(0)));
    let (_, body) = app.get_json("/v1/governance-signals?start_ms=0&end_ms=1000").await;
    assert_eq!(body["data"]["total"], 0);
    // Paging: offset continues where the first page stopped.
    let (_, p1) = app.get_json(&format!("/v1/governance-signals?limit=2&{year}")).await;
    let (_, p2) = app.get_json(&format!("/v1/governance-signals?limit=2&offset=2&{year}")).await;
    assert_eq!(items(&p1)[..], items(&all)[..2]);
    assert_eq!(items(&p2)[..], items(&all)[2..4]);
});

on_both_backends!(v1_signals_clamps_window_limit_and_offset, |app: TestApp| async move {
    let (status, body) = app.get_json(&format!("/v1/governance-signals?start_ms=0&end_ms={SAMPLE_AS_OF}")).await;
    assert_eq!(status, 200);
    let start = SAMPLE_AS_OF - 90 * DAY_MS;
    assert_eq!(
        body["request"]["adjustments"],
        json!([{"param": "start_ms", "received": "0", "applied": start.to_string(), "reason": "window_clamped_to_max"}])
    );
    assert_eq!(body["request"]["applied"]["start_ms"], start.to_string());
    // A start after the end is moved to the end.
    let (_, body) =
        app.get_json(&format!("/v1/governance-signals?start_ms={}&end_ms={SAMPLE_AS_OF}", SAMPLE_AS_OF + 1)).await;
    assert_eq!(body["request"]["adjustments"][0]["reason"], "start_after_end");
    assert_eq!(body["request"]["applied"]["start_ms"], SAMPLE_AS_OF.to_string());
    let (status, body) = app.get_json("/v1/governance-signals?limit=5000&offset=-3").await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["limit"], 100);
    assert_eq!(body["data"]["offset"], 0);
    assert_eq!(
        body["request"]["adjustments"],
        json!([
            {"param": "limit", "received": "5000", "applied": "100", "reason": "clamped_to_max"},
            {"param": "offset", "received": "-3", "applied": "0", "reason": "clamped_to_min"},
        ])
    );
    let (_, body) = app.get_json("/v1/governance-signals?limit=0").await;
    assert_eq!(body["data"]["limit"], 1);
    assert_eq!(items(&body).len(), 1);
});

on_both_backends!(v1_signals_rejects_unparseable_values, |app: TestApp| async move {
    for (query, name, received) in [
        ("kind=close-race", "kind", "close-race"),
        ("kind=", "kind", ""),
        ("severity=urgent", "severity", "urgent"),
        ("start_ms=yesterday", "start_ms", "yesterday"),
        ("end_ms=1.5", "end_ms", "1.5"),
        ("limit=ten", "limit", "ten"),
    ] {
        let (status, body) = app.get_json(&format!("/v1/governance-signals?{query}")).await;
        assert_eq!(status, 400, "{query}: {body:#}");
        assert_eq!(body["code"], "VALIDATION_ERROR", "{query}");
        assert_eq!(body["errors"][0]["name"], name, "{query}");
        assert_eq!(body["errors"][0]["in"], "query", "{query}");
        assert_eq!(body["errors"][0]["received"], received, "{query}: {body:#}");
    }
    let (status, body) = app.get_json("/v1/governance-signals?daoId=nosuchdao").await;
    assert_eq!(status, 200, "an unknown DAO matches nothing, as in every v1 filter");
    assert_eq!(body["data"]["total"], 0);
    let (_, body) = app.get_json("/v1/governance-signals?kind=close-race").await;
    let expected = body["errors"][0]["expected"].as_str().unwrap();
    assert!(expected.contains("close_race") && expected.contains("forum_discussion_spike"), "{expected}");
});

on_both_backends!(v1_signals_snapshot, |app: TestApp| async move {
    let (_, body) = app.get_json("/v1/governance-signals?limit=4").await;
    snapshot_settings().bind(|| insta::assert_json_snapshot!("v1_signals_list_default_limit4", body));
});

// ---------------------------------------------------------------------------------------------
// Fixtures: a fresh store with the sample plus synthetic rows.
// ---------------------------------------------------------------------------------------------

async fn signal_rows(db: &DatabaseConnection) -> Vec<entities::signal::Model> {
    entities::signal::Entity::find().order_by_asc(entities::signal::Column::Id).all(db).await.unwrap()
}

async fn fixture_app(backend: Backend) -> (TestApp, DatabaseConnection) {
    let url = fresh_sample_database(backend).await;
    let db = govdata::store::connect(&url).await.expect("connect");
    let sample_signals = signal_rows(&db).await;
    assert!(!sample_signals.is_empty());
    // A spike: 25 posts 30 minutes apart (the 20th lands 9.5 hours in). Not spikes: 19 posts in
    // an hour, and 20 posts 2 hours apart (38 hours).
    insert_forum_topic(&db, "9001", &(0..25).map(|i| SPIKE_DAY + i * 30 * MINUTE).collect::<Vec<_>>()).await;
    insert_forum_topic(&db, "9002", &(0..19).map(|i| SPIKE_DAY + i * 3 * MINUTE).collect::<Vec<_>>()).await;
    insert_forum_topic(&db, "9003", &(0..20).map(|i| SPIKE_DAY + i * 120 * MINUTE).collect::<Vec<_>>()).await;
    insert_close_call(&db).await;
    insert_onchain_decided(&db).await;
    let run_id = govdata::store::publish::current_revision(&db).await.unwrap().unwrap().run_id.unwrap();
    govdata::store::publish::publish(&db, run_id, "synthetic fixtures", &govdata::store::publish::Scope::All)
        .await
        .expect("publish");
    // Re-publishing the same data changes no signal (same ids, same revision stamps).
    let first = signal_rows(&db).await;
    assert!(first.len() > sample_signals.len());
    govdata::store::publish::publish(&db, run_id, "again", &govdata::store::publish::Scope::All)
        .await
        .expect("publish again");
    assert_eq!(signal_rows(&db).await, first, "re-publishing is idempotent");
    // Sample signals kept their rows too.
    for s in &sample_signals {
        assert!(first.iter().any(|f| f == s), "{} untouched", s.natural_key);
    }
    (spawn_app_on(url).await, db)
}

on_both_backends!(v1_signals_fixtures, |backend: Backend| async move {
    let (app, _db) = fixture_app(backend).await;
    let (status, body) = app.get_json("/v1/governance-signals?kind=forum_discussion_spike").await;
    assert_eq!(status, 200, "{body:#}");
    assert_no_floats(&body, "$");
    assert_eq!(body["data"]["total"], 1, "{body:#}");
    let s = &items(&body)[0];
    assert_eq!(s["key"], "forum_discussion_spike:uniswap:discourse:9001");
    assert_eq!(s["severity"], "notice");
    assert_eq!(s["detectedAt"], "2026-03-20T09:30:00.000Z");
    assert_eq!(s["subject"]["kind"], "forum_topic");
    assert_eq!(s["subject"]["source"], "discourse");
    assert_eq!(s["subject"]["title"], "[synthetic] Discussion 9001");
    assert_eq!(s["subject"]["key"], keys::topic_key("uniswap", "9001"));
    assert_eq!(s["subject"]["url"], "https://forum.example/t/synthetic-topic-9001/9001");
    let e = &s["evidence"];
    assert_eq!(e["postsInWindow"], "20");
    assert_eq!(e["topicPosts"], "25");
    assert_eq!(e["windowStart"], "2026-03-20T00:00:00.000Z");
    assert_eq!(e["windowEnd"], "2026-03-20T09:30:00.000Z");
    assert_eq!(e["citations"][1]["url"], "https://forum.example/t/synthetic-topic-9001/9001/20");
    assert_eq!(
        s["rule"]["thresholds"],
        json!([{"name": "minPosts", "value": "20"}, {"name": "windowMs", "value": "86400000"}])
    );

    // The synthetic active proposal: close race, quorum at risk, a decisive voter; detected at dataAsOf.
    let (_, body) =
        app.get_json("/v1/governance-signals?daoId=uniswap&start_ms=1774483200000&end_ms=1774483200000").await;
    let kinds: Vec<&str> = items(&body).iter().map(|s| s["kind"].as_str().unwrap()).collect();
    assert_eq!(body["data"]["total"], 3, "{kinds:?}");
    let race = find(&body, &format!("close_race:uniswap:snapshot:{SYNTHETIC_PROPOSAL}"));
    assert_eq!(race["severity"], "warning");
    assert_eq!(race["detectedAt"], "2026-03-26T00:00:00.000Z");
    assert_eq!(race["evidence"]["margin"], "20");
    assert_eq!(race["evidence"]["marginShare"], "0.02");
    assert_eq!(race["evidence"]["countedPower"], "1000");
    assert_eq!(race["evidence"]["timeLeftMs"], "86400000");
    assert_eq!(race["evidence"]["asOf"], "2026-03-26T00:00:00.000Z");
    let risk = find(&body, &format!("quorum_at_risk:uniswap:snapshot:{SYNTHETIC_PROPOSAL}"));
    assert_eq!(risk["severity"], "critical");
    assert_eq!(risk["evidence"]["quorumShare"], "0.0001");
    assert!(risk["summary"].as_str().unwrap().contains("with 24 hours of voting left"));
    let decisive = find(&body, &format!("single_voter_decisive:uniswap:snapshot:{SYNTHETIC_PROPOSAL}"));
    assert_eq!(decisive["evidence"]["decidedBy"], json!(["margin"]));
    let vote = &decisive["evidence"]["decidingVote"];
    assert_eq!(vote["voter"], CLOSE_CALL_DECIDER);
    assert_eq!(vote["effect"], "510");
    // The deciding voter is named as every voter row names one, and its power is flagged as its
    // proposal's source serves it: a Snapshot float.
    assert_eq!(vote["voterIdentity"], CLOSE_CALL_DECIDER);
    assert_eq!(vote["address"], govdata::store::address::display(CLOSE_CALL_DECIDER));
    assert_eq!(vote["ens"], CLOSE_CALL_DECIDER_ENS);
    assert_eq!(vote["votingPowerFromFloat"], true);
    let (status, v2) = app
        .get_json(
            "/v2/signals?daoId=uniswap&kind=single_voter_decisive&from=2026-03-26T00:00:00Z&to=2026-03-26T00:00:00Z",
        )
        .await;
    assert_eq!(status, 200, "{v2:#}");
    assert_eq!(&items(&v2)[0]["evidence"]["decidingVote"], vote, "v2 serves the same deciding vote");
    // An on-chain proposal decided by one vote: its power is an exact integer weight.
    let (_, body) = app.get_json("/v1/governance-signals?daoId=compound&kind=single_voter_decisive").await;
    let onchain = find(&body, "single_voter_decisive:compound:onchain:88");
    let vote = &onchain["evidence"]["decidingVote"];
    assert_eq!(vote["voterIdentity"], ONCHAIN_DECIDER, "{onchain:#}");
    assert_eq!(vote["votingPower"], "1000");
    assert_eq!(vote["votingPowerFromFloat"], false);
    assert!(vote.get("ens").is_none(), "no ENS name is known for it: {vote}");
    let (_, body) = app.get_json("/v1/governance-signals?severity=critical").await;
    assert_eq!(body["data"]["total"], 1);
});
