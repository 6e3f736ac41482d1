//! The governor history (issue 29) against a real chain: `tests/chain/history.mjs` scripts a
//! random history of transfers, delegations, re-delegations and withdrawals on an OpenZeppelin
//! ERC20Votes token on anvil (some in shared blocks), govdata ingests the token's logs, and every
//! served figure equals what the token's view functions return at that block: the power after
//! the last checkpoint at or before a block is `getPastVotes(voter, block)`, the delegate after
//! the last change is `delegates(holder)`, and the ranking holds `getVotes`. Several seeds make it
//! a property test over histories; re-reading the chain changes nothing.
//!
//! The same chain carries a governor with `GovernorCountingFractional`: a vote split across
//! supports and completed later, a quorum numerator raised by an executed proposal, a proposal
//! defeated for lack of quorum and one canceled. Its counting mode, clock, quorum, what counts
//! toward it, the tallies, each voter's summed casts and each state are served as the governor's
//! views return them, on v2 and in v1 evidence.
use std::collections::BTreeMap;

use govdata::ingest::{Registry, RunOptions, run_once};
use govdata::store::apply::PublishReport;
use govdata::store::entities::source_watermark;
use sea_orm::EntityTrait;
use serde_json::Value;

use crate::fixtures::chain::{require_toolkit, script, start_chain};
use crate::fixtures::testgov::quick;
use crate::helpers::{Backend, TestApp, fresh_database, spawn_app_with};
use crate::on_both_backends;

const DAO: &str = "govhistory";
const ZERO: &str = "0x0000000000000000000000000000000000000000";

/// The scenario's chain as a source, read up to `confirmations` blocks before the head.
fn registry(rpc: &str, scenario: &Value, confirmations: u64) -> Registry {
    let text = format!(
        "[[dao]]\nid = \"{DAO}\"\nname = \"Gov History\"\nsymbol = \"GOV\"\n[dao.onchain]\nchain_id = {}\n\
         rpc_url = \"{rpc}\"\ngovernor = \"{}\"\ntoken = \"{}\"\nstart_block = {}\nconfirmations = {confirmations}\n\
         block_range = 5\n",
        scenario["chainId"],
        scenario["governor"].as_str().unwrap(),
        scenario["token"].as_str().unwrap(),
        scenario["deployBlock"]
    );
    Registry::parse(&text, "governor history registry").unwrap()
}

/// Every item of a v2 list, page by page (`limit` rows a page), checking each page's order.
async fn all_pages(app: &TestApp, path: &str, limit: u32) -> Vec<Value> {
    let mut items: Vec<Value> = Vec::new();
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut url = format!("{path}{sep}limit={limit}");
    loop {
        let (status, page) = app.get_json(&url).await;
        assert_eq!(status, 200, "{url}: {page}");
        items.extend(page["data"]["items"].as_array().unwrap().iter().cloned());
        match page["meta"]["page"]["nextCursor"].as_str() {
            Some(cursor) => url = format!("{path}{sep}limit={limit}&cursor={cursor}"),
            None => break,
        }
    }
    items
}

/// The token's total supply: minted at the deploy, only transferred after.
fn supply(scenario: &Value) -> u128 {
    let balances = scenario["final"]["balances"].as_object().unwrap();
    balances.values().map(|b| b.as_str().unwrap().parse::<u128>().unwrap()).sum()
}

fn place(item: &Value) -> (u64, u64) {
    let n = |k: &str| item[k].as_str().unwrap().parse::<u64>().unwrap();
    (n("blockNumber"), n("logIndex"))
}

/// The governor's proposals, served as its views return them.
async fn assert_governance(app: &TestApp, scenario: &Value) {
    let mode = scenario["countingMode"].as_str().unwrap();
    assert_eq!(mode, "support=bravo,fractional&quorum=for,abstain&params=fractional");
    for p in scenario["proposals"].as_array().unwrap() {
        let id = p["id"].as_str().unwrap();
        let key = govdata::store::keys::proposal_key(DAO, "onchain", id);
        let (status, detail) = app.get_json(&format!("/v2/proposals/{key}")).await;
        assert_eq!(status, 200, "{detail}");
        let d = &detail["data"];
        let label = p["label"].as_str().unwrap();
        assert_eq!(d["state"], p["state"].as_str().unwrap().to_lowercase(), "{label}: {d}");
        let tally = &p["tally"];
        let wei = |k: &str| tally[k].as_str().unwrap().parse::<u128>().unwrap();
        if label != "D" {
            assert_eq!(d["scores"], serde_json::json!([tally["against"], tally["for"], tally["abstain"]]), "{label}");
        }
        let counting = &d["counting"];
        assert_eq!(counting["mode"], mode, "{label}: {d}");
        assert_eq!(counting["module"], "fractional");
        assert_eq!(counting["clock"], scenario["clockMode"]);
        assert_eq!(counting["snapshot"], p["snapshot"].to_string(), "{label}: the timepoint weights are taken at");
        assert_eq!(counting["quorumCounts"], serde_json::json!(["for", "abstain"]));
        assert_eq!(counting["quorum"], p["quorum"], "{label}: quorum(proposalSnapshot)");
        assert_eq!(d["quorum"], p["quorum"]);
        if label != "D" {
            let counted = wei("for") + wei("abstain");
            assert_eq!(counting["quorumVotes"], counted.to_string(), "{label}: For + Abstain, never Against");
            let quorum: u128 = p["quorum"].as_str().unwrap().parse().unwrap();
            assert_eq!(counting["quorumReached"], quorum <= counted, "{label}: as _quorumReached");
            let (status, evidence) = app.get_json(&format!("/v1/daos/{DAO}/proposals/onchain/{id}/evidence")).await;
            assert_eq!(status, 200, "{evidence}");
            let q = &evidence["data"]["quorum"];
            assert_eq!(q["counted"], counted.to_string(), "{label}: {q}");
            assert_eq!(q["reached"], quorum <= counted, "{label}: {q}");
            assert_eq!(q["countingMode"], mode);
            let at = &evidence["data"]["votingPowerAt"];
            assert_eq!(at["timepoint"], p["snapshot"].to_string(), "{label}: weights read at the snapshot");
            assert_eq!(at["clock"], "blocknumber", "ERC20Votes' default clock");
        }
        match label {
            // The quorum numerator went from 4% to 10% with B: quorum(snapshot) is the
            // numerator at each snapshot times the supply, rounded down.
            "C" => {
                let supply = supply(scenario);
                let quorum = |p: &Value| p["quorum"].as_str().unwrap().parse::<u128>().unwrap();
                assert_eq!(quorum(&scenario["proposals"][0]), supply * 4 / 100, "A: 4%");
                assert_eq!(quorum(p), supply * 10 / 100, "C: 10%");
                assert_eq!(counting["quorumReached"], false);
                assert_eq!(d["state"], "defeated");
            }
            "B" => assert_eq!(d["state"], "executed"),
            "D" => assert_eq!(d["state"], "canceled"),
            _ => {}
        }
        let (_, votes) = app.get_json(&format!("/v2/proposals/{key}/votes?limit=100")).await;
        let served = votes["data"]["items"].as_array().unwrap();
        assert_eq!(served.len(), p["votes"].as_array().unwrap().len(), "{label}: one vote per voter: {votes}");
        for v in p["votes"].as_array().unwrap() {
            let s = served.iter().find(|s| s["voterIdentity"] == v["voter"]).expect("the voter's vote");
            assert_eq!(s["votingPower"], v["weight"], "{label}: the sum of the voter's casts");
            assert_eq!(s["votingPowerAt"], p["snapshot"].to_string(), "{label}: getPastVotes(voter, snapshot)");
            let parts = &v["parts"];
            let used: Vec<(usize, &str)> = ["against", "for", "abstain"]
                .iter()
                .enumerate()
                .map(|(i, k)| (i + 1, parts[*k].as_str().unwrap()))
                .filter(|(_, w)| *w != "0")
                .collect();
            let choice = match used.as_slice() {
                [(c, _)] => c.to_string(),
                _ => format!("{{{}}}", used.iter().map(|(c, w)| format!("\"{c}\":{w}")).collect::<Vec<_>>().join(",")),
            };
            assert_eq!(s["choice"], choice, "{label}: {s}");
        }
    }
}

async fn history_on(backend: Backend, seed: u32) {
    let (_anvil, rpc_url) = start_chain().await;
    let scenario = script("history.mjs", &["--rpc", &rpc_url, "--seed", &seed.to_string(), "--steps", "30"]).await;
    let url = fresh_database(backend).await;
    let db = govdata::store::connect(&url).await.unwrap();
    let options = RunOptions { policy: quick(), ..RunOptions::default() };
    // Two runs, the first ending at the first part of a split vote: the second must sum the
    // voter's casts of both runs, not replace the stored vote with its own part.
    let split = &scenario["splitAt"];
    let (head, split_at) = (scenario["head"].as_u64().unwrap(), split["block"].as_u64().unwrap());
    let first = run_once(&db, &registry(&rpc_url, &scenario, head - split_at), &options).await.unwrap();
    assert!(first.outcomes.iter().all(|o| o.result.is_ok()), "{first}");
    let app = spawn_app_with(url.clone(), |_| {}).await;
    let a = govdata::store::keys::proposal_key(DAO, "onchain", scenario["proposals"][0]["id"].as_str().unwrap());
    let (_, votes) = app.get_json(&format!("/v2/proposals/{a}/votes?limit=100")).await;
    let partial = votes["data"]["items"].as_array().unwrap().iter().find(|v| v["voterIdentity"] == split["voter"]);
    assert_eq!(partial.expect("the first part is served")["votingPower"], split["weight"], "{votes}");
    let registry = registry(&rpc_url, &scenario, 0);
    let report = run_once(&db, &registry, &options).await.unwrap();
    assert!(report.outcomes.iter().all(|o| o.result.is_ok()), "{report}");
    let events = &scenario["events"];
    let inserted = |f: fn(&PublishReport) -> u64| f(&first.published) + f(&report.published);
    assert_eq!(inserted(|p| p.delegation_changes.inserted), events["DelegateChanged"].as_u64().unwrap(), "{report}");
    assert_eq!(inserted(|p| p.power_checkpoints.inserted), events["DelegateVotesChanged"].as_u64().unwrap());

    assert_governance(&app, &scenario).await;

    // Reading the whole chain again (the watermark forgotten) appends nothing: the history is
    // keyed by each log's place on chain.
    source_watermark::Entity::delete_many().exec(&db).await.unwrap();
    let again = run_once(&db, &registry, &options).await.unwrap();
    assert_eq!(again.published.delegation_changes.inserted, 0, "{again}");
    assert_eq!(again.published.power_checkpoints.inserted, 0, "{again}");

    assert_governance(&app, &scenario).await;
    let accounts: Vec<&str> = scenario["accounts"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    let steps = scenario["steps"].as_array().unwrap();
    let mut checkpoints = 0;
    let mut as_delegator: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for a in &accounts {
        // Small pages: the walk crosses many cursors, and each page must continue the last.
        let power = all_pages(&app, &format!("/v2/voters/{a}/power?daoId={DAO}"), 3).await;
        checkpoints += power.len();
        let places: Vec<(u64, u64)> = power.iter().map(place).collect();
        assert!(places.windows(2).all(|w| w[0] > w[1]), "newest first, each once: {places:?}");
        for p in &power {
            assert_eq!(p["daoId"], DAO);
            assert_eq!(p["votingPowerFromFloat"], false);
            assert_eq!(p["decimals"], 18);
            let cause = &p["cause"];
            match cause["kind"].as_str().unwrap() {
                "delegation" => assert!(cause["delegator"].is_string(), "{p}"),
                "transfer" => assert!(cause.get("delegator").is_none(), "{p}"),
                other => panic!("cause {other}"),
            }
            let (new, old) = (p["votingPowerRaw"].as_str().unwrap(), p["previousVotingPowerRaw"].as_str().unwrap());
            let (new, old): (u128, u128) = (new.parse().unwrap(), old.parse().unwrap());
            let change = p["change"].as_str().unwrap();
            assert_eq!(change.starts_with('-'), new < old, "{p}");
        }
        // Consecutive checkpoints chain: each starts where the one before ended.
        for w in power.windows(2) {
            assert_eq!(w[0]["previousVotingPowerRaw"], w[1]["votingPowerRaw"], "{w:?}");
        }
        for step in steps {
            let block = step["block"].as_u64().unwrap();
            let served =
                power.iter().find(|p| place(p).0 <= block).map_or("0", |p| p["votingPowerRaw"].as_str().unwrap());
            assert_eq!(served, step["pastVotes"][a], "power of {a} at block {block} ({})", step["label"]);
        }

        let changes = all_pages(&app, &format!("/v2/voters/{a}/delegations?daoId={DAO}&side=delegator"), 4).await;
        assert!(changes.iter().all(|c| c["delegator"] == *a), "{changes:?}");
        for step in steps {
            let block = step["block"].as_u64().unwrap();
            let served =
                changes.iter().find(|c| place(c).0 <= block).map_or(ZERO, |c| c["toDelegate"].as_str().unwrap_or(ZERO));
            assert_eq!(served, step["delegates"][a], "delegate of {a} at block {block} ({})", step["label"]);
        }
        // A change's `fromDelegate` is the delegate of the change before it.
        for w in changes.windows(2) {
            assert_eq!(w[0].get("fromDelegate"), w[1].get("toDelegate"), "{w:?}");
        }
        as_delegator.insert(a, changes);

        // As a delegate: exactly the changes that moved a holder's votes to or from it.
        let as_delegate = all_pages(&app, &format!("/v2/voters/{a}/delegations?daoId={DAO}&side=delegate"), 5).await;
        assert!(as_delegate.iter().all(|c| c["toDelegate"] == *a || c["fromDelegate"] == *a), "{as_delegate:?}");
        let both = all_pages(&app, &format!("/v2/voters/{a}/delegations"), 7).await;
        let mut expected: Vec<(u64, u64)> = as_delegator[a]
            .iter()
            .chain(&as_delegate)
            .map(place)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        expected.reverse();
        assert_eq!(both.iter().map(place).collect::<Vec<_>>(), expected, "both sides, each change once");
    }
    assert_eq!(checkpoints as u64, events["DelegateVotesChanged"].as_u64().unwrap(), "every checkpoint served");
    let delegations: usize = as_delegator.values().map(Vec::len).sum();
    assert_eq!(delegations as u64, events["DelegateChanged"].as_u64().unwrap(), "every change served");

    assert_notable(&app, &scenario, as_delegator.values().flatten().cloned().collect()).await;

    // The ranking: `getVotes` of every delegate, largest first, and its delegators counted from
    // `delegates`.
    let ranking = all_pages(&app, &format!("/v2/daos/{DAO}/delegates"), 2).await;
    let fin = &scenario["final"];
    let ranks: Vec<u64> = ranking.iter().map(|r| r["rank"].as_str().unwrap().parse().unwrap()).collect();
    assert_eq!(ranks, (1..=ranking.len() as u64).collect::<Vec<_>>(), "ranks continue across pages");
    let powers: Vec<u128> = ranking.iter().map(|r| r["votingPowerRaw"].as_str().unwrap().parse().unwrap()).collect();
    assert!(powers.windows(2).all(|w| w[0] >= w[1]), "largest first: {powers:?}");
    for r in &ranking {
        let a = r["voterIdentity"].as_str().unwrap();
        assert_eq!(r["votingPowerRaw"], fin["votes"][a], "getVotes({a})");
        let delegators = accounts.iter().filter(|h| fin["delegates"][**h] == a).count();
        assert_eq!(r["delegatorsCount"], delegators.to_string(), "delegators of {a}");
        let cast = scenario["proposals"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["votes"].as_array().unwrap().iter().any(|v| v["voter"] == a))
            .count();
        assert_eq!(r["votesCast"], cast.to_string(), "votes of {a}");
    }
    for a in &accounts {
        if fin["votes"][*a] != "0" {
            assert!(ranking.iter().any(|r| r["voterIdentity"] == *a), "{a} holds votes and is ranked");
        }
    }
}

/// Notable delegation changes: exactly those that moved at least 0.5% of the token's supply
/// (`totalSupply` is constant after the deploy here: transfers only), listed by the DAO, fed once
/// each, and cited as a `delegationShift` by every proposal whose snapshot follows them.
async fn assert_notable(app: &TestApp, scenario: &Value, changes: Vec<Value>) {
    let supply = supply(scenario);
    let share = govdata::contract::events::NOTABLE_DELEGATION_MIN_SHARE;
    assert_eq!(share, "0.005", "the expectations below are written for 0.5%");
    let mut expected: Vec<(u64, u64)> = Vec::new();
    for c in &changes {
        let moved: u128 = c["votingPowerMovedRaw"].as_str().unwrap().parse().unwrap();
        let notable = moved > 0 && moved * 200 >= supply;
        assert_eq!(c.get("totalSupplyRaw").is_some(), notable, "moved {moved} of {supply}: {c}");
        if notable {
            assert_eq!(c["totalSupplyRaw"], supply.to_string(), "totalSupply() at the block");
            let share: f64 = c["shareOfSupply"].as_str().unwrap().parse().unwrap();
            assert!(share >= 0.005, "{c}");
            expected.push(place(c));
        }
    }
    expected.sort_unstable_by(|a, b| b.cmp(a));
    assert!(!expected.is_empty(), "the self-delegations before the proposals move whole balances");

    let listed = all_pages(app, &format!("/v2/daos/{DAO}/notable-delegations"), 2).await;
    assert_eq!(listed.iter().map(place).collect::<Vec<_>>(), expected, "every notable change, newest first");

    // Fed once each (the re-read of the whole chain appended nothing, so fed nothing), with the
    // change as the list shows it.
    let fed = all_pages(app, &format!("/v2/feed?daoId={DAO}&kinds=delegation_changed"), 3).await;
    assert_eq!(fed.len(), expected.len(), "{fed:?}");
    for entry in &fed {
        assert_eq!(entry["kind"], "delegation_changed");
        assert!(entry.get("event").is_none() && entry.get("signal").is_none(), "{entry}");
        let change = &entry["delegation"];
        let same = listed.iter().find(|l| place(l) == place(change)).expect("a listed change");
        assert_eq!(change, same);
    }

    // Every proposal's snapshot follows every change here (the changes all come before the
    // proposals, seconds apart): each proposal's `delegationShift` cites them, newest first, at
    // most DELEGATION_SHIFT_CITED.
    let cited_max = govdata::contract::events::DELEGATION_SHIFT_CITED as usize;
    for p in scenario["proposals"].as_array().unwrap() {
        let key = govdata::store::keys::proposal_key(DAO, "onchain", p["id"].as_str().unwrap());
        let (status, detail) = app.get_json(&format!("/v2/proposals/{key}")).await;
        assert_eq!(status, 200, "{detail}");
        let shift = &detail["data"]["delegationShift"];
        let cited: Vec<(u64, u64)> = shift["changes"].as_array().unwrap().iter().map(place).collect();
        assert_eq!(cited, expected[..expected.len().min(cited_max)], "{}: {shift}", p["label"]);
        assert_eq!(shift["more"], expected.len() > cited_max);
        assert_eq!(shift["windowEnd"], detail["data"]["startAt"], "the window ends at the snapshot");
    }
}

on_both_backends!(replica: delegation_history_and_power_equal_the_token_at_every_block, |backend: Backend| async move {
    if !require_toolkit().await {
        return;
    }
    // Three random histories per backend (a property over histories; a failing seed replays
    // with `node tests/chain/history.mjs --rpc … --seed N`).
    let first = match backend {
        Backend::Sqlite => 1,
        Backend::Postgres | Backend::Replica => 101,
    };
    for seed in first..first + 3 {
        history_on(backend, seed).await;
    }
});

#[tokio::test]
async fn history_parameters_are_checked() {
    let app = crate::helpers::spawn_app(Backend::Sqlite).await;
    let voter = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
    let (status, body) = app.get_json(&format!("/v2/voters/{voter}/delegations?side=holder")).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["errors"][0]["name"], "side", "{body}");
    let (status, body) = app.get_json(&format!("/v2/voters/{voter}/power?from=yesterday")).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = app.get_json("/v2/voters/not-a-voter/power").await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = app.get_json("/v2/daos/no-such-dao/delegates").await;
    assert_eq!(status, 404, "{body}");
    // A voter without history: an empty list, not an error.
    let (status, body) = app.get_json(&format!("/v2/voters/{voter}/power")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["items"], serde_json::json!([]));
    // A cursor of one list is refused by the other.
    let (status, body) = app.get_json(&format!("/v2/voters/{voter}/delegations?cursor=abc")).await;
    assert_eq!(status, 400, "{body}");
}
