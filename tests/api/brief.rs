//! `GET /v1/daos/{daoId}/brief`: every number checked against the sample CSV files.
use std::collections::{BTreeMap, HashMap};

use bigdecimal::{BigDecimal, RoundingMode, Zero};
use serde_json::Value;

use crate::{
    daos::assert_no_floats,
    fixtures::sample::{SAMPLE_END_MS, dao_of_symbol, date_ms, dec, rfc, sample_proposals, sample_votes},
    helpers::{fresh_database, snapshot_settings, spawn_app_on},
    on_both_backends,
};

fn share(part: &BigDecimal, whole: &BigDecimal) -> String {
    let s = (part / whole).with_scale_round(10, RoundingMode::HalfEven).normalized().to_plain_string();
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_owned() } else { s }
}

/// Checks each proposal standing of a brief against the CSV: vote count, upstream total,
/// per-choice sums and shares (basic and single-choice votes name one choice), quorum status.
fn check_standings(list: &Value, state: &str) {
    let proposals = sample_proposals();
    let votes = sample_votes();
    for s in list.as_array().unwrap() {
        let id = s["proposal"]["externalId"].as_str().unwrap();
        let p = proposals.iter().find(|p| p["proposal_id"] == id).expect("proposal in the sample");
        assert_eq!(s["state"], state);
        assert_eq!(s["votingType"], p["type"].as_str());
        assert_eq!(s["startAt"], rfc(date_ms(&p["start"])));
        assert_eq!(s["endAt"], rfc(date_ms(&p["end"])));
        assert_eq!(s["scoresTotal"], p["scores_total"].as_str());
        assert_eq!(s["quorum"], p["quorum"].as_str());
        assert_eq!(s["upstreamTopChoicePct"], p["top_choice_pct"].as_str());
        let (total, quorum) = (dec(&p["scores_total"]), dec(&p["quorum"]));
        let status = if quorum.is_zero() {
            "no_quorum"
        } else if total >= quorum {
            "reached"
        } else {
            "not_reached"
        };
        assert_eq!(s["quorumStatus"], status, "{id}");
        let mine: Vec<_> = votes.iter().filter(|v| v["proposal_id"] == id).collect();
        let t = &s["tally"];
        assert_eq!(t["ingestedVotes"], mine.len().to_string());
        assert_eq!(t["upstreamVotes"], p["votes"].as_str());
        assert_eq!(t["coverage"], format!("covers {} ingested of {} upstream votes", mine.len(), p["votes"]));
        assert_eq!(t["countedVotes"], mine.len().to_string());
        assert_eq!(t["unreadableVotes"], "0");
        let power: BigDecimal = mine.iter().map(|v| dec(&v["voting_power"])).sum();
        assert_eq!(dec(t["countedPower"].as_str().unwrap()), power, "{id}");
        if matches!(p["type"].as_str(), "basic" | "single-choice") {
            let mut by_choice: BTreeMap<u32, BigDecimal> = BTreeMap::new();
            for v in &mine {
                *by_choice.entry(v["choice"].parse().unwrap()).or_default() += dec(&v["voting_power"]);
            }
            let served = t["choices"].as_array().unwrap();
            assert_eq!(served.len(), by_choice.len());
            for c in served {
                let want = &by_choice[&c["choice"].as_str().unwrap().parse::<u32>().unwrap()];
                assert_eq!(dec(c["score"].as_str().unwrap()), *want);
                assert_eq!(c["share"], share(want, &power));
            }
            let leader = by_choice.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)));
            match leader {
                Some((c, score)) => {
                    assert_eq!(s["leadingChoice"], c.to_string());
                    assert_eq!(s["leadingShare"], share(score, &power));
                }
                None => assert!(s.get("leadingChoice").is_none() && s.get("leadingShare").is_none()),
            }
        }
    }
}

/// The end dates of the DAO's latest closed proposals, latest first, from the CSV.
fn latest_closed_ends(dao: &str, n: usize) -> Vec<String> {
    let mut ends: Vec<i64> = sample_proposals()
        .iter()
        .filter(|p| dao_of_symbol(&p["symbol"]) == dao && p["state"] == "closed")
        .map(|p| date_ms(&p["end"]))
        .collect();
    ends.sort_unstable_by(|a, b| b.cmp(a));
    ends.into_iter().take(n).map(rfc).collect()
}

fn ends(list: &Value) -> Vec<String> {
    list.as_array().unwrap().iter().map(|s| s["endAt"].as_str().unwrap().to_owned()).collect()
}

on_both_backends!(v1_brief_arbitrum_matches_the_sample, |app: TestApp| async move {
    let (status, body) = app.get_json("/v1/daos/arbitrum/brief").await;
    assert_eq!(status, 200, "{body}");
    assert_no_floats(&body, "$");
    assert_eq!(body["freshness"]["cacheStatus"], "fresh");
    let data = &body["data"];
    assert_eq!(data["dao"]["daoId"], "arbitrum");
    assert_eq!(data["dao"]["counts"]["ingestedVotes"], "16969");
    // Both active arbitrum proposals, with the tallies of their (zero) ingested votes.
    let active = data["activeProposals"].as_array().unwrap();
    assert_eq!(active.len(), 2);
    check_standings(&data["activeProposals"], "active");
    assert_eq!(active[0]["tally"]["coverage"], "covers 0 ingested of 1196 upstream votes");
    assert_eq!(active[0]["tally"]["countedPower"], "0");
    check_standings(&data["recentlyClosed"], "closed");
    assert_eq!(ends(&data["recentlyClosed"]), latest_closed_ends("arbitrum", 5));

    // Top voters: the power of each voter's latest vote in the DAO (ties: the larger power), from the CSV.
    let mut latest: HashMap<String, (i64, BigDecimal, String, u64)> = HashMap::new();
    for v in sample_votes().iter().filter(|v| v["symbol"] == "ARB") {
        let (ms, vp) = (date_ms(&v["created"]), dec(&v["voting_power"]));
        let e = latest.entry(v["voter"].to_ascii_lowercase()).or_insert((ms, vp.clone(), v["voting_power"].clone(), 0));
        e.3 += 1;
        if (ms, &vp) > (e.0, &e.1) {
            (e.0, e.1, e.2) = (ms, vp, v["voting_power"].clone());
        }
    }
    let mut ranked: Vec<_> = latest.into_iter().collect();
    ranked.sort_by(|a, b| b.1.1.cmp(&a.1.1).then(a.0.cmp(&b.0)));
    let voters = data["topVoters"].as_array().unwrap();
    assert_eq!(voters.len(), 10);
    for (served, (voter, (ms, _, text, n))) in voters.iter().zip(&ranked) {
        assert_eq!(served["voterIdentity"], voter.as_str());
        assert_eq!(served["votingPower"], text.as_str(), "exact text as received");
        assert_eq!(served["votesCast"], n.to_string());
        assert_eq!(served["lastVoteAt"], rfc(*ms));
    }

    // Top delegates: the Tally export's ARB rows by exact wei power.
    let mut reader =
        csv::Reader::from_path(format!("{}/data/sample/tally_delegates.csv", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let mut delegates: Vec<(BigDecimal, String, String, String)> = reader
        .records()
        .map(|r| r.unwrap())
        .filter(|r| &r[0] == "ARB")
        .map(|r| (dec(&r[4]), r[1].to_ascii_lowercase(), r[4].to_owned(), r[5].to_owned()))
        .collect();
    delegates.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let served = data["topDelegates"].as_array().unwrap();
    assert_eq!(served.len(), 10);
    for (s, (raw, address, raw_text, delegators)) in served.iter().zip(&delegates) {
        assert_eq!(s["address"], address.as_str());
        assert_eq!(s["votingPowerRaw"], raw_text.as_str());
        assert_eq!(s["decimals"], 18);
        assert_eq!(dec(s["votingPower"].as_str().unwrap()), raw / BigDecimal::from(10u64.pow(18)));
        assert_eq!(s["delegatorsCount"], delegators.as_str());
    }

    // Recent activity: the DAO's ten latest events, as the events endpoint lists them.
    let (_, events) = app
        .get_json(&format!(
            "/v1/governance-events?start_ms={}&end_ms={SAMPLE_END_MS}&daoId=arbitrum&limit=10",
            SAMPLE_END_MS - 90 * 86_400_000
        ))
        .await;
    assert_eq!(data["recentActivity"], events["data"]["items"]);
    assert!(data["signals"].as_array().unwrap().iter().all(|s| s["subject"]["daoId"] == "arbitrum"));
});

on_both_backends!(v1_brief_tallies_and_quorum_match_the_sample, |app: TestApp| async move {
    for dao in ["weatherxm", "uniswap", "compound"] {
        let (status, body) = app.get_json(&format!("/v1/daos/{dao}/brief")).await;
        assert_eq!(status, 200);
        let data = &body["data"];
        assert_eq!(data["activeProposals"], serde_json::json!([]));
        check_standings(&data["recentlyClosed"], "closed");
        assert_eq!(ends(&data["recentlyClosed"]), latest_closed_ends(dao, 5));
    }
    // weatherxm: every closed proposal has votes; quorum 150000 reached, missed, and absent.
    let (_, body) = app.get_json("/v1/daos/weatherxm/brief").await;
    let statuses: Vec<&str> = body["data"]["recentlyClosed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["quorumStatus"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["reached", "not_reached", "reached", "no_quorum"]);
    let first = &body["data"]["recentlyClosed"][0];
    assert_eq!(first["tally"]["ingestedVotes"], "26");
});

on_both_backends!(v1_brief_unknown_and_malformed_dao, |app: TestApp| async move {
    let (status, body) = app.get_json("/v1/daos/nosuchdao/brief").await;
    assert_eq!(status, 404);
    assert_eq!(body["code"], "NOT_FOUND");
    let (status, body) = app.get_json("/v1/daos/Not%20A%20Slug/brief").await;
    assert_eq!(status, 400);
    assert_eq!(body["code"], "VALIDATION_ERROR");
    assert_eq!(body["errors"][0]["name"], "daoId");
    assert_eq!(body["errors"][0]["in"], "path");
});

on_both_backends!(v1_brief_get_snapshot, |app: TestApp| async move {
    let (_, body) = app.get_json("/v1/daos/weatherxm/brief").await;
    snapshot_settings().bind(|| insta::assert_json_snapshot!("v1_brief_get_weatherxm", body));
});

on_both_backends!(v1_brief_registry_only, |backend: Backend| async move {
    use govdata::store::entities::dao;
    use sea_orm::{ActiveModelTrait, ActiveValue::Set};
    let url = fresh_database(backend).await;
    let db = govdata::store::connect(&url).await.expect("connect");
    dao::ActiveModel {
        id: Set("newdao".to_owned()),
        name: Set("New DAO".to_owned()),
        symbol: Set(Some("NEW".to_owned())),
        snapshot_space: Set(None),
        discourse_url: Set(None),
        chain_id: Set(None),
        governor: Set(None),
        token: Set(None),
        registered_ms: Set(SAMPLE_END_MS),
    }
    .insert(&db)
    .await
    .expect("insert a bare DAO");
    db.close().await.ok();
    let app = spawn_app_on(url).await;
    let (status, body) = app.get_json("/v1/daos/newdao/brief").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["freshness"]["cacheStatus"], "registry_only");
    assert!(body["freshness"].get("dataAsOf").is_none());
    let data = body["data"].as_object().unwrap();
    assert_eq!(data.keys().collect::<Vec<_>>(), ["dao"], "only registry fields");
    assert_eq!(data["dao"]["status"], "registry_only");
    assert_eq!(data["dao"]["name"], "New DAO");
    assert!(data["dao"].get("counts").is_none());
});

on_both_backends!(v1_brief_echoes_a_normalized_dao_id, |app: TestApp| async move {
    let (status, body) = app.get_json("/v1/daos/Arbitrum/brief").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["dao"]["daoId"], "arbitrum");
    assert_eq!(
        body["request"]["adjustments"],
        serde_json::json!([{"param": "daoId", "received": "Arbitrum", "applied": "arbitrum", "reason": "normalized"}])
    );
});
