//! `GET /v1/daos/{daoId}/proposals/{source}/{externalId}/evidence` on the real sample, with the
//! per-choice scores checked against sums computed here from `data/sample/snapshot_votes.csv`,
//! and on the synthetic fixture (upstream scores, on-chain citations, events, linked topics).
use std::collections::BTreeMap;
use std::str::FromStr;

use bigdecimal::BigDecimal;
use serde_json::{Value, json};

use crate::daos::assert_no_floats;
use crate::fixtures::sample::RFC_ID;
use crate::fixtures::stores::synthetic_database;
use crate::helpers::{snapshot_settings, spawn_app_on};
use crate::on_both_backends;

/// "Trial run a Technical Advisory Board (TAB)": basic voting, all 333 upstream votes in the sample.
const TAB_ID: &str = "0x5915e661808f896203ff5759e737e04861bf8fa09525972d481cbccf7776f485";

fn dec(v: &Value) -> BigDecimal {
    BigDecimal::from_str(v.as_str().unwrap_or_else(|| panic!("a decimal string: {v}"))).unwrap()
}

/// Per-choice sums and vote powers of one proposal, read straight from the CSV.
fn from_csv(proposal_id: &str) -> (BTreeMap<u32, BigDecimal>, Vec<BigDecimal>) {
    let mut reader = csv::Reader::from_path(concat!(env!("CARGO_MANIFEST_DIR"), "/data/sample/snapshot_votes.csv"))
        .expect("the sample votes");
    let mut sums: BTreeMap<u32, BigDecimal> = BTreeMap::new();
    let mut powers = Vec::new();
    for row in reader.records() {
        let row = row.unwrap();
        if &row[1] != proposal_id {
            continue;
        }
        let power = BigDecimal::from_str(&row[3]).unwrap();
        let choice: u32 = row[4].parse().expect("basic voting: one integer choice");
        *sums.entry(choice).or_default() += power.clone();
        powers.push(power);
    }
    (sums, powers)
}

fn path(dao: &str, source: &str, id: &str) -> String {
    format!("/v1/daos/{dao}/proposals/{source}/{id}/evidence")
}

on_both_backends!(evidence_scores_match_the_csv, |app: TestApp| async move {
    let (status, body) = app.get_json(&path("uniswap", "snapshot", TAB_ID)).await;
    assert_eq!(status, 200, "{body}");
    assert_no_floats(&body, "$");
    let data = &body["data"];
    assert_eq!(data["proposal"]["title"], "Trial run a Technical Advisory Board (TAB)");
    assert_eq!(data["scoresFrom"], "ingested_votes");
    assert_eq!(data["scoresTotal"], "26545729.025454085");
    assert_eq!(data["quorum"], json!({"required": "10000000", "scoresTotal": "26545729.025454085", "reached": true}));
    assert_eq!(data["turnout"]["upstreamVotes"], "333");
    assert_eq!(data["turnout"]["ingestedVotes"], "333");
    assert_eq!(data["turnout"]["coverage"], "1");
    assert_eq!(data["turnout"]["votesCounted"], "333");
    assert_eq!(data["turnout"]["votesUnreadable"], "0");

    let (sums, mut powers) = from_csv(TAB_ID);
    assert_eq!(powers.len(), 333);
    let choices = data["choices"].as_array().unwrap();
    let served: BTreeMap<u32, BigDecimal> =
        choices.iter().map(|c| (c["choice"].as_u64().unwrap() as u32, dec(&c["score"]))).collect();
    assert_eq!(served, sums, "exact per-choice sums");
    let total: BigDecimal = powers.iter().sum();
    assert_eq!(dec(&data["turnout"]["ingestedVotingPower"]), total);
    let share_sum: BigDecimal = choices.iter().map(|c| dec(&c["share"])).sum();
    let off = (share_sum - BigDecimal::from(1)).abs();
    assert!(off <= BigDecimal::from_str("0.000000001").unwrap(), "shares sum to 1 within rounding: {off}");

    // The ten largest votes, largest first, the first being the CSV's largest.
    powers.sort_by(|a, b| b.cmp(a));
    let largest = data["largestVotes"].as_array().unwrap();
    assert_eq!(largest.len(), 10);
    let served: Vec<BigDecimal> = largest.iter().map(|v| dec(&v["votingPower"])).collect();
    assert_eq!(served, powers[..10].to_vec());
    assert_eq!(largest[0]["votingPowerFromFloat"], true);
    assert_eq!(largest[0]["voter"].as_str().unwrap(), largest[0]["address"].as_str().unwrap().to_lowercase());

    let citations = data["citations"].as_array().unwrap();
    let datasets: Vec<&str> = citations.iter().filter_map(|c| c["dataset"].as_str()).collect();
    assert_eq!(datasets, ["data/sample/snapshot_proposals.csv", "data/sample/snapshot_votes.csv"]);
    let votes_citation = citations.iter().find(|c| c["dataset"] == "data/sample/snapshot_votes.csv").unwrap();
    let supports = votes_citation["supports"].as_array().unwrap();
    assert!(supports.contains(&json!("choices[].score")) && supports.contains(&json!("largestVotes[]")));
    assert_eq!(
        citations[0]["url"],
        format!("https://snapshot.box/#/s:uniswapgovernance.eth/proposal/{TAB_ID}"),
        "the Snapshot page cites the upstream fields"
    );
    snapshot_settings().bind(|| insta::assert_json_snapshot!("v1_evidence_get_uniswap_tab", body));
});

on_both_backends!(evidence_without_ingested_votes, |app: TestApp| async move {
    let (status, body) = app.get_json(&path("uniswap", "snapshot", RFC_ID)).await;
    assert_eq!(status, 200);
    let data = &body["data"];
    assert_eq!(data["choices"], json!([]));
    assert_eq!(data["turnout"]["coverage"], "0");
    assert_eq!(data["turnout"]["ingestedVotingPower"], "0");
    assert_eq!(data["largestVotes"], json!([]));
    assert_eq!(data["quorum"]["reached"], false, "5753874.47 < 10000000");
    assert_eq!(data["citations"].as_array().unwrap().len(), 2, "no votes, nothing computed to cite");
});

on_both_backends!(evidence_rejects_and_misses, |app: TestApp| async move {
    let (status, body) = app.get_json(&path("uniswap", "tally", TAB_ID)).await;
    assert_eq!(status, 400);
    assert_eq!(body["code"], "VALIDATION_ERROR");
    assert_eq!(body["errors"][0]["name"], "source");
    assert_eq!(body["errors"][0]["in"], "path");
    let (status, body) = app.get_json(&path("nodao", "snapshot", TAB_ID)).await;
    assert_eq!(status, 404);
    assert!(body["detail"].as_str().unwrap().contains("No DAO"), "{body}");
    let (status, body) = app.get_json(&path("arbitrum", "snapshot", TAB_ID)).await;
    assert_eq!(status, 404, "the proposal belongs to uniswap");
    assert!(body["detail"].as_str().unwrap().contains("has no snapshot proposal"), "{body}");
    let (status, _) = app.get_json(&path("uniswap", "onchain", TAB_ID)).await;
    assert_eq!(status, 404);
});

on_both_backends!(evidence_onchain_with_upstream_scores, |backend: Backend| async move {
    let app = spawn_app_on(synthetic_database(backend)).await;
    let (status, body) = app.get_json(&path("uniswap", "onchain", "77")).await;
    assert_eq!(status, 200, "{body}");
    assert_no_floats(&body, "$");
    let data = &body["data"];
    assert_eq!(data["scoresFrom"], "upstream");
    assert_eq!(
        data["choices"],
        json!([
            {"choice": 1, "label": "Against", "score": "100.5", "share": "0.0386464142"},
            {"choice": 2, "label": "For", "score": "2500", "share": "0.9613535858"},
            {"choice": 3, "label": "Abstain", "score": "0", "share": "0"},
        ])
    );
    assert_eq!(data["body"], "[synthetic] Body text of the on-chain proposal.");
    assert_eq!(data["quorum"], json!({"required": "1000", "scoresTotal": "2600.5", "reached": true}));
    assert_eq!(data["turnout"]["coverage"], "0.6666666667");
    assert_eq!(data["turnout"]["ingestedVotingPower"], "2600.5");
    assert_eq!(data["timeline"]["events"][0]["kind"], "proposal_executed");
    assert_eq!(data["timeline"]["events"][0]["blockNumber"], "21050000");
    let largest = data["largestVotes"].as_array().unwrap();
    assert_eq!(largest[0]["votingPower"], "2500");
    assert_eq!(largest[0]["reason"], "[synthetic] Strongly in favour.");
    assert_eq!(largest[0]["shareOfIngestedPower"], "0.9613535858");
    let citations = data["citations"].as_array().unwrap();
    assert_eq!(citations[0]["source"], "onchain");
    assert_eq!(citations[0]["txHash"], format!("0x{}", "ab".repeat(32)));
    let for_vote = citations.iter().find(|c| c["supports"] == json!(["largestVotes[0]"])).unwrap();
    assert_eq!(for_vote["blockNumber"], "21000100");
    let event = citations.iter().find(|c| c["supports"] == json!(["timeline.events[0]"])).unwrap();
    assert_eq!(event["txHash"], format!("0x{}", "cd".repeat(32)));
    assert!(citations.iter().all(|c| c.get("dataset").is_none()), "not from the sample");

    // The RFC has a linked (synthetic) forum topic.
    let (_, body) = app.get_json(&path("uniswap", "snapshot", RFC_ID)).await;
    let topics = body["data"]["linkedTopics"].as_array().unwrap();
    assert_eq!(topics.len(), 1);
    assert_eq!(topics[0]["url"], "https://forum.example/t/synthetic-zebra-statute/4242");
    assert_eq!(topics[0]["kind"], "forum_topic");
    let cited = body["data"]["citations"].as_array().unwrap().iter().any(|c| {
        c["source"] == "discourse" && c["url"] == topics[0]["url"] && c["supports"] == json!(["linkedTopics[0]"])
    });
    assert!(cited);
});

on_both_backends!(evidence_echoes_normalized_path_values, |app: TestApp| async move {
    // A DAO slug or a 0x id in another letter case is served under its canonical form, and the
    // echo says what was changed.
    let upper = format!("0x{}", TAB_ID[2..].to_ascii_uppercase());
    let (status, body) = app.get_json(&path("Uniswap", "snapshot", &upper)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["proposal"]["externalId"], TAB_ID);
    assert_eq!(
        body["request"]["adjustments"],
        json!([
            {"param": "daoId", "received": "Uniswap", "applied": "uniswap", "reason": "normalized"},
            {"param": "externalId", "received": upper, "applied": TAB_ID, "reason": "normalized"},
        ])
    );
    let (_, canonical) = app.get_json(&path("uniswap", "snapshot", TAB_ID)).await;
    assert_eq!(canonical["request"]["adjustments"], json!([]));
    assert_eq!(canonical["data"], body["data"]);
});
