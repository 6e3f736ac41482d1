//! Issue 17 (1, 2) as served: every row that names a voter carries `voterIdentity` (canonical
//! lowercase), the display `address` and `ens` exactly when the store knows the name, and every
//! voting power says whether it arrived as a float. Checked row type by row type against the
//! bundled sample, whose ENS names (from the Tally export) are read here from the CSV.
use std::collections::HashMap;

use govdata::store::{address, keys};
use serde_json::Value;

use crate::fixtures::stores::synthetic_database;
use crate::helpers::spawn_app_on;
use crate::on_both_backends;

/// Uniswap's "Trial run a Technical Advisory Board (TAB)": 333 Snapshot votes in the sample.
const TAB_ID: &str = "0x5915e661808f896203ff5759e737e04861bf8fa09525972d481cbccf7776f485";
/// Gauntlet: votes in uniswap and compound, and the Tally export names it `gauntletgov.eth`.
const GAUNTLET: &str = "0x683a4f9915d6216f73d6df50151725036bd26c02";
const GAUNTLET_ENS: &str = "gauntletgov.eth";

/// The ENS name of each address in the sample's Tally export: the first row that gives one.
fn sample_ens() -> HashMap<String, String> {
    let path = format!("{}/data/sample/tally_delegates.csv", env!("CARGO_MANIFEST_DIR"));
    let mut reader = csv::Reader::from_path(path).unwrap();
    let mut names = HashMap::new();
    for r in reader.records().map(|r| r.unwrap()) {
        if !r[2].is_empty() {
            names.entry(r[1].to_ascii_lowercase()).or_insert_with(|| r[2].to_owned());
        }
    }
    assert!(names.get(GAUNTLET).is_some_and(|n| n == GAUNTLET_ENS));
    names
}

/// The three names on `row` (`what` says where it was served): the canonical identity, its
/// display form (EIP-55 for 20 bytes), and `ens` exactly when the sample knows one. Returns
/// whether the row carried an ENS name.
fn check_names(row: &Value, ens: &HashMap<String, String>, what: &str) -> bool {
    let id = row["voterIdentity"].as_str().unwrap_or_else(|| panic!("{what}: no voterIdentity in {row}"));
    assert!(
        id.len() == 42 && id.starts_with("0x") && id[2..].bytes().all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()),
        "{what}: {id} is canonical"
    );
    assert_eq!(row["address"], address::display(id), "{what}: the display address of {id}");
    match ens.get(id) {
        Some(name) => assert_eq!(row["ens"], name.as_str(), "{what}: {id}'s ENS name"),
        None => assert!(row.get("ens").is_none(), "{what}: no ENS name is known for {id}: {row}"),
    }
    row.get("ens").is_some()
}

fn items(body: &Value) -> &Vec<Value> {
    body["data"]["items"].as_array().unwrap_or_else(|| panic!("items in {body:#}"))
}

on_both_backends!(every_voter_row_is_named_alike_and_flags_its_power, |app: TestApp| async move {
    let ens = sample_ens();

    // v1 evidence: the largest votes keep `voter` and `address`, and gain `voterIdentity` and `ens`.
    let (status, body) = app.get_json(&format!("/v1/daos/uniswap/proposals/snapshot/{TAB_ID}/evidence")).await;
    assert_eq!(status, 200, "{body:#}");
    let largest = body["data"]["largestVotes"].as_array().unwrap();
    assert_eq!(largest.len(), 10);
    let mut named = 0;
    for v in largest {
        named += usize::from(check_names(v, &ens, "evidence largestVotes"));
        assert_eq!(v["voter"], v["voterIdentity"], "{v}");
        assert_eq!(v["votingPowerFromFloat"], true, "a Snapshot vote: {v}");
    }
    assert!(named > 0, "some of the largest voters have ENS names: {largest:#?}");
    assert!(largest.iter().any(|v| v["voterIdentity"] == GAUNTLET && v["ens"] == GAUNTLET_ENS), "{largest:#?}");

    // v1 brief: top voters gain `address` and `ens`; top delegates keep their lowercase `address`
    // and gain `voterIdentity` and `ens`; every power is flagged.
    let (status, body) = app.get_json("/v1/daos/uniswap/brief").await;
    assert_eq!(status, 200, "{body:#}");
    let top = body["data"]["topVoters"].as_array().unwrap();
    assert_eq!(top.len(), 10);
    let named: usize = top.iter().map(|v| usize::from(check_names(v, &ens, "brief topVoters"))).sum();
    assert!(named > 0, "{top:#?}");
    assert!(top.iter().all(|v| v["votingPowerFromFloat"] == true), "{top:#?}");
    let delegates = body["data"]["topDelegates"].as_array().unwrap();
    assert_eq!(delegates.len(), 10);
    let mut named = 0;
    for d in delegates {
        let id = d["voterIdentity"].as_str().unwrap();
        assert_eq!(d["address"], id, "v1 documents the delegate's address lowercase: {d}");
        assert_eq!(id, id.to_ascii_lowercase());
        match ens.get(id) {
            Some(name) => {
                named += 1;
                assert_eq!(d["ens"], name.as_str(), "{d}");
            }
            None => assert!(d.get("ens").is_none(), "{d}"),
        }
        assert_eq!(d["votingPowerFromFloat"], false, "delegated power is exact: {d}");
    }
    assert!(named > 0, "{delegates:#?}");

    // v2 votes of the same proposal, every page row named.
    let key = keys::proposal_key("uniswap", "snapshot", TAB_ID);
    let (status, body) = app.get_json(&format!("/v2/proposals/{key}/votes?limit=500")).await;
    assert_eq!(status, 200, "{body:#}");
    let votes = items(&body);
    assert_eq!(votes.len(), 333);
    let named: usize = votes.iter().map(|v| usize::from(check_names(v, &ens, "v2 votes"))).sum();
    assert!(named > 1, "{named}");
    assert!(votes.iter().all(|v| v["votingPowerFromFloat"] == true));

    // v2 ranking.
    let (status, body) = app.get_json("/v2/daos/uniswap/voters?limit=100").await;
    assert_eq!(status, 200, "{body:#}");
    let ranked = items(&body);
    let named: usize = ranked.iter().map(|v| usize::from(check_names(v, &ens, "v2 ranking"))).sum();
    assert!(named > 1, "{named}");
    assert!(ranked.iter().all(|v| v["votingPowerFromFloat"] == true));

    // v2 profile, found by its ENS name: per DAO the flag is present exactly when the power is;
    // delegated power is exact.
    let (status, body) = app.get_json(&format!("/v2/voters/{GAUNTLET_ENS}")).await;
    assert_eq!(status, 200, "{body:#}");
    let profile = &body["data"];
    assert!(check_names(profile, &ens, "v2 profile"));
    assert_eq!(profile["voterIdentity"], GAUNTLET);
    let daos = profile["daos"].as_array().unwrap();
    for d in daos {
        match d.get("votingPower") {
            Some(_) => assert_eq!(d["votingPowerFromFloat"], true, "{d}"),
            None => assert!(d.get("votingPowerFromFloat").is_none(), "no power, no flag: {d}"),
        }
        if let Some(delegation) = d.get("delegation") {
            assert_eq!(delegation["votingPowerFromFloat"], false, "{d}");
        }
    }
    assert!(daos.iter().any(|d| d.get("votingPower").is_some()), "{daos:#?}");
    assert!(daos.iter().any(|d| d.get("delegation").is_some()), "{daos:#?}");

    // v2 history: every row names the voter as the profile does.
    let (status, body) = app.get_json(&format!("/v2/voters/{GAUNTLET}/votes?limit=100")).await;
    assert_eq!(status, 200, "{body:#}");
    let history = items(&body);
    assert_eq!(history.len(), 8, "5 uniswap and 3 compound votes");
    for v in history {
        assert!(check_names(v, &ens, "v2 history"));
        assert_eq!(v["voterIdentity"], GAUNTLET);
        assert_eq!(v["votingPowerFromFloat"], true, "{v}");
    }

    // Signals: a deciding vote is named the same way on both surfaces.
    let window = "start_ms=1769904000000&end_ms=1772236800000"; // February 2026
    let (_, v1) = app.get_json(&format!("/v1/governance-signals?kind=single_voter_decisive&{window}")).await;
    let (_, v2) =
        app.get_json("/v2/signals?kind=single_voter_decisive&from=2026-02-01T00:00:00Z&to=2026-02-28T00:00:00Z").await;
    for body in [&v1, &v2] {
        let deciding: Vec<&Value> = items(body).iter().map(|s| &s["evidence"]["decidingVote"]).collect();
        assert!(!deciding.is_empty(), "{body:#}");
        for v in deciding {
            check_names(v, &ens, "decidingVote");
            assert_eq!(v["voter"], v["voterIdentity"], "{v}");
            assert_eq!(v["votingPowerFromFloat"], true, "a Snapshot vote: {v}");
        }
    }
});

// The on-chain votes of the synthetic store: exact integer weights, never flagged as floats.
on_both_backends!(onchain_vote_rows_are_not_from_floats, |backend: Backend| async move {
    let app = spawn_app_on(synthetic_database(backend)).await;
    let ens = sample_ens();
    let key = keys::proposal_key("uniswap", "onchain", "77");
    let (status, body) = app.get_json(&format!("/v2/proposals/{key}/votes")).await;
    assert_eq!(status, 200, "{body:#}");
    let votes = items(&body);
    assert_eq!(votes.len(), 2);
    for v in votes {
        check_names(v, &ens, "v2 on-chain votes");
        assert_eq!(v["votingPowerFromFloat"], false, "{v}");
    }
    let (status, body) = app.get_json("/v1/daos/uniswap/proposals/onchain/77/evidence").await;
    assert_eq!(status, 200, "{body:#}");
    for v in body["data"]["largestVotes"].as_array().unwrap() {
        check_names(v, &ens, "on-chain evidence");
        assert_eq!(v["votingPowerFromFloat"], false, "{v}");
    }
});
