//! The on-chain governor connector against a real local chain: anvil with an OpenZeppelin 5
//! Governor (timelock, simple counting, 4% quorum) and an ERC20Votes token, set up by
//! `tests/chain/governance.mjs` (delegate, propose, vote, queue). govdata then reads the logs,
//! and the proposals, votes and voting power are served through v1 and v2 in exact wei.
use govdata::ingest::{Registry, RunOptions, run_once};
use govdata::store::entities::source_watermark;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

use crate::fixtures::chain::{require_toolkit, script, start_chain};
use crate::fixtures::testgov::quick;
use crate::helpers::{Backend, TestApp, fresh_database, spawn_app_with};
use crate::on_both_backends;

const DAO: &str = "govtest";
/// The same governor, read with a confirmation depth deeper than the chain.
const DEEP: &str = "govtest-deep";

fn registry(rpc: &str, scenario: &Value) -> Registry {
    // The ABI the registry names for proposal C's made-up contract, written where the test runs.
    let custom = &scenario["customAbi"];
    // One file per call: the backends' tests run at once in this binary and each writes its own.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = std::env::temp_dir().join(format!("govdata-custom-abi-{}-{call}.json", std::process::id()));
    std::fs::write(&file, custom["abi"].to_string()).unwrap();
    let dao = |id: &str, confirmations: u64| {
        format!(
            "[[dao]]\nid = \"{id}\"\nname = \"Gov Test\"\nsymbol = \"GOV\"\n[dao.onchain]\nchain_id = {}\n\
             rpc_url = \"{rpc}\"\ngovernor = \"{}\"\ntoken = \"{}\"\nstart_block = {}\nconfirmations = {confirmations}\n\
             block_range = 7\nabis = [{{ address = \"{}\", file = \"{}\" }}]\n",
            scenario["chainId"],
            scenario["governor"].as_str().unwrap(),
            scenario["token"].as_str().unwrap(),
            scenario["deployBlock"],
            custom["address"].as_str().unwrap(),
            file.display()
        )
    };
    Registry::parse(&format!("{}{}", dao(DAO, 0), dao(DEEP, 1000)), "governor test registry").unwrap()
}

fn key(id: &str) -> String {
    govdata::store::keys::proposal_key(DAO, "onchain", id)
}

async fn rpc(url: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    reqwest::Client::new().post(url).json(&body).send().await.unwrap().json::<Value>().await.unwrap()
}

/// Checks what `app` serves of the scenario's proposal `p` with its `state`.
async fn assert_served(app: &TestApp, p: &Value, state: &str) {
    let id = p["id"].as_str().unwrap();
    let (status, detail) = app.get_json(&format!("/v2/proposals/{}", key(id))).await;
    assert_eq!(status, 200, "{detail}");
    let d = &detail["data"];
    assert_eq!(d["state"], state, "{d}");
    assert_eq!(d["source"], "onchain");
    assert_eq!(d["externalId"], id);
    assert_eq!(d["author"], p["proposer"]);
    assert_eq!(d["votingType"], "governor");
    assert_eq!(d["body"], p["description"]);
    assert_eq!(d["choices"], json!(["Against", "For", "Abstain"]));
    let tally = &p["tally"];
    assert_eq!(d["scores"], json!([tally["against"], tally["for"], tally["abstain"]]), "exact wei per choice");
    let total: u128 =
        ["against", "for", "abstain"].iter().map(|c| tally[c].as_str().unwrap().parse::<u128>().unwrap()).sum();
    assert_eq!(d["scoresTotal"], total.to_string());
    assert_eq!(d["quorum"], p["quorum"]);
    assert_eq!(d["votes"]["ingested"], p["votes"].as_array().unwrap().len().to_string());

    let (status, votes) = app.get_json(&format!("/v2/proposals/{}/votes?limit=10", key(id))).await;
    assert_eq!(status, 200, "{votes}");
    let served = votes["data"]["items"].as_array().unwrap();
    for v in p["votes"].as_array().unwrap() {
        let s = served.iter().find(|s| s["voterIdentity"] == v["voter"]).unwrap_or_else(|| panic!("{v} served"));
        assert_eq!(s["votingPower"], v["weight"], "wei exactly: {s}");
        assert_eq!(s["votingPowerFromFloat"], false);
        assert_eq!(s["choice"], (v["support"].as_u64().unwrap() + 1).to_string(), "support + 1 indexes the choices");
        let reason = v["reason"].as_str().unwrap();
        assert_eq!(s["reason"].as_str().unwrap_or_default(), reason);
    }

    // v1 resolves the same proposal by its external id.
    let (status, item) = app.get_json(&format!("/v1/items/proposal/{id}?daoId={DAO}")).await;
    assert_eq!(status, 200, "{item}");
    assert_eq!(item["data"]["proposal"]["scoresTotal"], total.to_string(), "{item}");
}

async fn governor_on(backend: Backend, rpc_url: &str, scenario: &Value) {
    let url = fresh_database(backend).await;
    let db = govdata::store::connect(&url).await.unwrap();
    let registry = registry(rpc_url, scenario);
    let options = RunOptions { policy: quick(), ..RunOptions::default() };
    let report = run_once(&db, &registry, &options).await.unwrap();
    for o in &report.outcomes {
        assert!(o.result.is_ok(), "{o:?}");
    }
    // A and B, and C and D (never voted on: their actions and simulations are checked).
    assert_eq!(report.published.proposals.inserted, 4, "{report}");
    // A (queued), B, C and D (active): each one's execution is simulated once.
    assert_eq!(report.published.proposal_simulations.inserted, 4, "{report}");
    assert_eq!(report.published.votes.inserted, 3);
    assert_eq!(report.published.delegates.inserted, 2);
    assert_eq!(report.published.delegations.inserted, 3);
    let app = spawn_app_with(url.clone(), |_| {}).await;
    let proposals = scenario["proposals"].as_array().unwrap();
    assert_served(&app, &proposals[0], "queued").await;
    assert_served(&app, &proposals[1], "active").await;
    assert_simulated(&app, scenario).await;

    // v1 brief: the delegates' voting power in wei and in tokens, exact.
    let (status, brief) = app.get_json(&format!("/v1/daos/{DAO}/brief")).await;
    assert_eq!(status, 200, "{brief}");
    let delegates = brief["data"]["topDelegates"].as_array().expect("delegates");
    for d in scenario["delegates"].as_array().unwrap() {
        let s = delegates.iter().find(|s| s["address"] == d["address"]).unwrap_or_else(|| panic!("{d} served"));
        assert_eq!(s["votingPowerRaw"], d["votes"]);
        assert_eq!(s["decimals"], 18);
        // #1 holds its own votes and #3's; #2 only its own.
        let holders = scenario["holders"].as_array().unwrap();
        let delegators = holders.iter().filter(|h| h["delegate"] == d["address"]).count();
        assert_eq!(s["delegatorsCount"], delegators.to_string(), "{s}");
        let raw = d["votes"].as_str().unwrap();
        let (int, frac) = raw.split_at(raw.len() - 18);
        assert_eq!(s["votingPower"], format!("{int}.{}", frac.trim_end_matches('0')).trim_end_matches('.'));
        assert_eq!(s["votingPowerFromFloat"], false, "delegated power is exact: {s}");
        assert_eq!(s["voterIdentity"], d["address"], "{s}");
    }

    // Every on-chain power is exact wherever a voter's power is served: the brief's top voters, the
    // ranking, each profile (per DAO and delegation) and each voter's history.
    let voters: Vec<&str> =
        proposals.iter().flat_map(|p| p["votes"].as_array().unwrap()).map(|v| v["voter"].as_str().unwrap()).collect();
    let top = brief["data"]["topVoters"].as_array().expect("top voters");
    assert!(!top.is_empty(), "{brief}");
    for t in top {
        assert!(voters.contains(&t["voterIdentity"].as_str().unwrap()), "{t}");
        assert_eq!(t["votingPowerFromFloat"], false, "{t}");
        assert_eq!(t["address"], govdata::store::address::display(t["voterIdentity"].as_str().unwrap()));
    }
    let (_, ranking) = app.get_json(&format!("/v2/daos/{DAO}/voters")).await;
    let ranked = ranking["data"]["items"].as_array().expect("ranking");
    assert_eq!(ranked.len(), top.len(), "{ranking}");
    assert!(ranked.iter().all(|r| r["votingPowerFromFloat"] == false), "{ranking}");
    for voter in &voters {
        let (status, profile) = app.get_json(&format!("/v2/voters/{voter}")).await;
        assert_eq!(status, 200, "{profile}");
        let here = profile["data"]["daos"].as_array().unwrap().iter().find(|d| d["daoId"] == DAO).expect("the DAO");
        assert_eq!(here["votingPowerFromFloat"], false, "{profile}");
        if let Some(delegation) = here.get("delegation") {
            assert_eq!(delegation["votingPowerFromFloat"], false, "{profile}");
        }
        let (_, history) = app.get_json(&format!("/v2/voters/{voter}/votes")).await;
        let rows = history["data"]["items"].as_array().unwrap();
        assert!(!rows.is_empty() && rows.iter().all(|r| r["votingPowerFromFloat"] == false), "{history}");
    }

    // Read with a confirmation depth beyond the chain's height: nothing yet, and nothing lost.
    let deep = source_watermark::Entity::find()
        .filter(source_watermark::Column::DaoId.eq(DEEP))
        .one(&db)
        .await
        .unwrap()
        .expect("the deep source has its watermark");
    assert_eq!(deep.position, Some((scenario["deployBlock"].as_u64().unwrap() - 1).to_string()));
    let (status, _) = app
        .get_json(&format!(
            "/v2/proposals/{}",
            govdata::store::keys::proposal_key(DEEP, "onchain", proposals[0]["id"].as_str().unwrap())
        ))
        .await;
    assert_eq!(status, 404);

    // Again at the same height: nothing new.
    let again = run_once(&db, &registry, &options).await.unwrap();
    assert_eq!(again.published.rows_written(), 0, "{again}");

    assert_actions_stored(&db, scenario).await;
    backfill(&db, &registry, &options, scenario).await;
}

/// The simulations served with C and D: C's transfer moves exactly its amount from the timelock
/// to #3 (its Transfer log and the two balance changes), its quorum update and role grant emit
/// their events, its value reaches the unknown target; D reverts with the token's
/// ERC20InsufficientBalance, decoded.
async fn assert_simulated(app: &TestApp, scenario: &Value) {
    let lower = |v: &Value| v.as_str().unwrap_or_default().to_lowercase();
    let c = &scenario["proposalC"];
    let (status, detail) = app.get_json(&format!("/v2/proposals/{}", key(c["id"].as_str().unwrap()))).await;
    assert_eq!(status, 200, "{detail}");
    let sim = &detail["data"]["simulation"];
    assert_eq!(sim["outcome"], "success", "{sim}");
    assert_eq!(sim["proposalState"], "active");
    assert_eq!(lower(&sim["executor"]), scenario["timelock"].as_str().unwrap(), "{sim}");
    assert!(sim["gasUsed"].as_i64().unwrap() > 0, "{sim}");
    let runs = sim["actions"].as_array().unwrap();
    assert_eq!(runs.len(), 5, "every action ran: {sim}");
    assert!(runs.iter().all(|r| r["success"] == true), "{sim}");
    let logs = sim["logs"].as_array().unwrap();
    let event = |name: &str| {
        logs.iter().find(|l| l["event"] == name).unwrap_or_else(|| panic!("a {name} log in {sim}")).clone()
    };
    let arg = |log: &Value, name: &str| {
        log["arguments"].as_array().unwrap().iter().find(|a| a["name"] == name).unwrap()["value"].clone()
    };
    let t = &c["transfer"];
    let transfer = event("Transfer");
    assert_eq!(transfer["position"], 0, "{transfer}");
    assert_eq!(lower(&transfer["address"]), t["token"].as_str().unwrap());
    assert_eq!(lower(&arg(&transfer, "from")), t["from"].as_str().unwrap(), "{transfer}");
    assert_eq!(lower(&arg(&transfer, "to")), t["to"].as_str().unwrap(), "{transfer}");
    assert_eq!(arg(&transfer, "value"), t["amount"], "exact: {transfer}");
    let quorum = event("QuorumNumeratorUpdated");
    assert_eq!(quorum["position"], 1, "{quorum}");
    assert_eq!(lower(&quorum["address"]), scenario["governor"].as_str().unwrap());
    assert_eq!(arg(&quorum, "oldQuorumNumerator"), "4", "{quorum}");
    assert_eq!(arg(&quorum, "newQuorumNumerator"), c["quorumNumerator"], "{quorum}");
    let granted = event("RoleGranted");
    assert_eq!(granted["position"], 2, "{granted}");
    assert_eq!(lower(&granted["address"]), scenario["timelock"].as_str().unwrap());
    assert_eq!(arg(&granted, "role"), c["proposerRole"], "{granted}");
    assert_eq!(lower(&arg(&granted, "account")), c["grantee"].as_str().unwrap(), "{granted}");
    assert_eq!(lower(&arg(&granted, "sender")), scenario["timelock"].as_str().unwrap(), "{granted}");
    // Exactly the transfer's two changes, exact and signed.
    let tokens = sim["tokenChanges"].as_array().unwrap();
    assert_eq!(tokens.len(), 2, "{sim}");
    let amount = t["amount"].as_str().unwrap();
    for (holder, change) in [(&t["from"], format!("-{amount}")), (&t["to"], amount.to_owned())] {
        let row =
            tokens.iter().find(|r| lower(&r["address"]) == holder.as_str().unwrap()).expect("the holder's change");
        assert_eq!(lower(&row["token"]), t["token"].as_str().unwrap(), "{row}");
        assert_eq!(row["change"], change, "{row}");
    }
    // The 7 wei sent to the codeless target arrive there (a call to no code succeeds); the
    // timelock only passes on what the execution brings.
    let native = sim["nativeChanges"].as_array().unwrap();
    assert_eq!(native.len(), 1, "{sim}");
    assert_eq!(lower(&native[0]["address"]), c["unknownTarget"].as_str().unwrap(), "{sim}");
    assert_eq!((&native[0]["before"], &native[0]["after"]), (&json!("0"), &c["unknownValue"]), "{sim}");

    let d = &scenario["proposalD"];
    let (status, detail) = app.get_json(&format!("/v2/proposals/{}", key(d["id"].as_str().unwrap()))).await;
    assert_eq!(status, 200, "{detail}");
    let sim = &detail["data"]["simulation"];
    assert_eq!(sim["outcome"], "reverted", "{sim}");
    assert!(sim["logs"].as_array().unwrap().is_empty(), "a reverted execution emits nothing: {sim}");
    assert!(sim["tokenChanges"].as_array().unwrap().is_empty(), "{sim}");
    let revert = &sim["revert"];
    assert_eq!(revert["position"], 0, "{revert}");
    assert_eq!(revert["error"], "ERC20InsufficientBalance", "{revert}");
    assert_eq!(revert["signature"], "ERC20InsufficientBalance(address,uint256,uint256)");
    let args = revert["arguments"].as_array().unwrap();
    assert_eq!(lower(&args[0]["value"]), d["sender"].as_str().unwrap(), "{revert}");
    assert_eq!(args[1]["value"], d["balance"], "{revert}");
    assert_eq!(args[2]["value"], d["needed"], "{revert}");
}

/// The stored actions of the DAO's proposal `id`, in order.
async fn stored_actions(
    db: &sea_orm::DatabaseConnection,
    id: &str,
) -> Vec<govdata::store::entities::proposal_action::Model> {
    use govdata::store::entities::{proposal, proposal_action};
    use sea_orm::QueryOrder;
    let stored = proposal::Entity::find()
        .filter(proposal::Column::DaoId.eq(DAO))
        .filter(proposal::Column::ExternalId.eq(id))
        .one(db)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("proposal {id} stored"));
    proposal_action::Entity::find()
        .filter(proposal_action::Column::ProposalId.eq(stored.id))
        .order_by_asc(proposal_action::Column::Position)
        .all(db)
        .await
        .unwrap()
}

/// Each proposal's actions are stored as the script proposed them, decoded at ingestion.
async fn assert_actions_stored(db: &sea_orm::DatabaseConnection, scenario: &Value) {
    let c = &scenario["proposalC"];
    let actions = stored_actions(db, c["id"].as_str().unwrap()).await;
    assert_eq!(actions.len(), 5);
    let checksummed = |a: &str| a.parse::<alloy_primitives::Address>().unwrap().to_checksum(None);
    for (i, a) in actions.iter().enumerate() {
        assert_eq!(a.target, c["targets"][i].as_str().unwrap());
        assert_eq!(a.value_wei, c["values"][i].as_str().unwrap());
        assert_eq!(a.calldata, c["calldatas"][i].as_str().unwrap());
        let decoded: Value = serde_json::from_str(&a.decoded).unwrap();
        assert_eq!(decoded["target"], checksummed(a.target.as_str()));
        assert_eq!(decoded["value"], a.value_wei);
        assert_eq!(decoded["calldata"], a.calldata);
        let call = &decoded["call"];
        match c["encoded"][i].as_object() {
            Some(encoded) => {
                assert_eq!(call["kind"], "decoded", "{decoded}");
                assert_eq!(call["function"], encoded["function"]);
                assert_eq!(call["signature"], encoded["signature"]);
                assert_eq!(call["selector"], a.calldata[..10]);
                // The registry's ABI for the made-up contract; the standard interfaces elsewhere.
                let source = if i == 4 { "registry" } else { "bundled" };
                assert_eq!(call["source"], source, "{decoded}");
                let args = call["arguments"].as_array().unwrap();
                let expected = encoded["arguments"].as_array().unwrap();
                assert_eq!(args.len(), expected.len());
                for (got, want) in args.iter().zip(expected) {
                    assert_eq!(got["name"], want["name"], "{got}");
                    assert_eq!(got["type"], want["type"], "{got}");
                    // viem gives addresses checksummed, as the answer does.
                    assert_eq!(got["value"], want["value"], "{got}");
                }
            }
            None => {
                assert_eq!(call["kind"], "undecoded", "{decoded}");
                assert_eq!(call["selector"], "0xdeadbeef");
                assert_eq!(call["reason"], "unknown_selector");
            }
        }
    }
    for p in scenario["proposals"].as_array().unwrap() {
        let actions = stored_actions(db, p["id"].as_str().unwrap()).await;
        assert_eq!(actions.len(), p["targets"].as_array().unwrap().len(), "{p}");
        for (i, a) in actions.iter().enumerate() {
            assert_eq!(a.position, i as i32);
            assert_eq!(a.execution_path, govdata::store::entities::proposal_action::ExecutionPath::Governor);
            assert_eq!(a.target, p["targets"][i].as_str().unwrap());
            assert_eq!(a.value_wei, p["values"][i].as_str().unwrap());
            assert_eq!(a.calldata, p["calldatas"][i].as_str().unwrap());
            assert_eq!(a.signature, None, "OpenZeppelin proposes no signature strings");
            let decoded: Value = serde_json::from_str(&a.decoded).unwrap();
            assert_eq!(decoded["call"]["kind"], "decoded", "{decoded}");
            assert_eq!(decoded["call"]["source"], "bundled", "{decoded}");
            // The timelock executes the governor's proposals.
            assert_eq!(decoded["sender"].as_str().unwrap().to_lowercase(), scenario["timelock"].as_str().unwrap());
        }
    }
}

/// A store made before actions were kept (one proposal's actions gone) gets them on the next
/// run, read from the creation log by its block, and publishes nothing.
async fn backfill(db: &sea_orm::DatabaseConnection, registry: &Registry, options: &RunOptions, scenario: &Value) {
    use govdata::store::entities::{feed_entry, proposal, proposal_action};
    use sea_orm::{PaginatorTrait, QuerySelect};
    let a = proposal::Entity::find()
        .filter(proposal::Column::DaoId.eq(DAO))
        .filter(proposal::Column::ExternalId.eq(scenario["proposals"][0]["id"].as_str().unwrap()))
        .one(db)
        .await
        .unwrap()
        .expect("proposal A");
    let before: Vec<proposal_action::Model> =
        proposal_action::Entity::find().filter(proposal_action::Column::ProposalId.eq(a.id)).all(db).await.unwrap();
    assert!(!before.is_empty());
    proposal_action::Entity::delete_many().filter(proposal_action::Column::ProposalId.eq(a.id)).exec(db).await.unwrap();
    let revision = govdata::store::freshness::current_revision(db).await.unwrap().map(|r| r.id);
    let feed = feed_entry::Entity::find().count(db).await.unwrap();
    let last_feed =
        feed_entry::Entity::find().select_only().column(feed_entry::Column::Seq).into_tuple::<i64>().all(db);
    let last_feed = last_feed.await.unwrap().into_iter().max();

    let report = run_once(db, registry, options).await.unwrap();
    assert_eq!(report.published.proposal_actions.inserted, before.len() as u64, "{report}");
    assert_eq!(report.published.revision_id, None, "a backfill publishes nothing: {report}");
    assert_eq!(govdata::store::freshness::current_revision(db).await.unwrap().map(|r| r.id), revision);
    assert_eq!(feed_entry::Entity::find().count(db).await.unwrap(), feed);
    let now = feed_entry::Entity::find().select_only().column(feed_entry::Column::Seq).into_tuple::<i64>().all(db);
    assert_eq!(now.await.unwrap().into_iter().max(), last_feed);
    let after: Vec<proposal_action::Model> =
        proposal_action::Entity::find().filter(proposal_action::Column::ProposalId.eq(a.id)).all(db).await.unwrap();
    let key = |m: &proposal_action::Model| m.position;
    let (mut before, mut after) = (before, after);
    before.sort_by_key(key);
    after.sort_by_key(key);
    assert_eq!(after, before, "the same actions, decoded the same");

    // And once filled, nothing more.
    let again = run_once(db, registry, options).await.unwrap();
    assert_eq!(again.published.rows_written(), 0, "{again}");

    // A proposal whose creation log cannot be found (here: no block stored) is noted as a miss,
    // publishes nothing, and is not looked for again on the next run.
    use govdata::store::entities::proposal_action_miss;
    use sea_orm::{ActiveModelTrait, IntoActiveModel, Set};
    let b = proposal::Entity::find()
        .filter(proposal::Column::DaoId.eq(DAO))
        .filter(proposal::Column::ExternalId.eq(scenario["proposals"][1]["id"].as_str().unwrap()))
        .one(db)
        .await
        .unwrap()
        .expect("proposal B");
    proposal_action::Entity::delete_many().filter(proposal_action::Column::ProposalId.eq(b.id)).exec(db).await.unwrap();
    let mut unblocked = b.clone().into_active_model();
    unblocked.block_number = Set(None);
    unblocked.update(db).await.unwrap();
    let missed = run_once(db, registry, options).await.unwrap();
    assert_eq!(missed.published.revision_id, None, "a miss publishes nothing: {missed}");
    let miss = proposal_action_miss::Entity::find_by_id(b.id).one(db).await.unwrap().expect("B noted as a miss");
    let none = proposal_action::Entity::find().filter(proposal_action::Column::ProposalId.eq(b.id)).count(db);
    assert_eq!(none.await.unwrap(), 0);
    run_once(db, registry, options).await.unwrap();
    let still = proposal_action_miss::Entity::find_by_id(b.id).one(db).await.unwrap().expect("B still a miss");
    assert_eq!(still.checked_ms, miss.checked_ms, "a miss is not looked for again before it is due");
}

// One chain per backend: the test moves its chain on.
on_both_backends!(governor_proposals_votes_and_voting_power_are_ingested_exactly, |backend: Backend| async move {
    if !require_toolkit().await {
        return;
    }
    let (_anvil, rpc_url) = start_chain().await;
    let scenario = script("governance.mjs", &["--rpc", &rpc_url]).await;
    governor_on(backend, &rpc_url, &scenario).await;

    // The chain moves on: B's voting period ends with only an abstention, so the governor
    // defeats it; the next run reads the new state of a proposal stored earlier.
    let url = fresh_database(backend).await;
    let db = govdata::store::connect(&url).await.unwrap();
    let registry = registry(&rpc_url, &scenario);
    let options = RunOptions { policy: quick(), ..RunOptions::default() };
    run_once(&db, &registry, &options).await.unwrap();
    rpc(&rpc_url, "anvil_mine", json!(["0x20"])).await;
    let report = run_once(&db, &registry, &options).await.unwrap();
    // B, and C and D (active, now past their voting period without votes: defeated too).
    assert_eq!(report.published.proposals.updated, 3, "{report}");
    let app = spawn_app_with(url, |_| {}).await;
    let b = &scenario["proposals"][1];
    let (_, detail) = app.get_json(&format!("/v2/proposals/{}", key(b["id"].as_str().unwrap()))).await;
    assert_eq!(detail["data"]["state"], "defeated", "{detail}");
    assert!(detail["data"]["endAt"].is_string(), "the end is known once its block is mined: {detail}");
    assert!(detail["data"].get("simulation").is_none(), "a defeated proposal shows no simulation: {detail}");
    // A is still queued: its simulation is kept (the chain moved fewer blocks than the redo age)
    // and served.
    let a = &scenario["proposals"][0];
    let (_, detail) = app.get_json(&format!("/v2/proposals/{}", key(a["id"].as_str().unwrap()))).await;
    assert_eq!(detail["data"]["simulation"]["outcome"], "success", "{detail}");
    assert_eq!(detail["data"]["simulation"]["proposalState"], "queued", "{detail}");
});

/// A JSON-RPC node of 100 empty blocks that refuses `eth_getLogs` over more than 10 blocks, as
/// public nodes do, and answers one malformed body first.
#[tokio::test]
async fn log_ranges_are_halved_when_a_node_refuses_them_and_stop_short_of_the_confirmation_depth() {
    use crate::fixtures::upstreams::{Fake, Fault, Seen};
    use std::sync::Arc;
    let node = Fake::start(Arc::new(|req: &Seen| {
        let hex = |n: u64| format!("{n:#x}");
        let parse = |v: &Value| u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        let result = match req.body["method"].as_str().unwrap() {
            "eth_chainId" => json!("0x1"),
            "eth_blockNumber" => json!(hex(100)),
            "eth_getBlockByNumber" => json!({"number": req.body["params"][0], "timestamp": hex(1_700_000_000)}),
            "eth_getLogs" => {
                let filter = &req.body["params"][0];
                if parse(&filter["toBlock"]) - parse(&filter["fromBlock"]) + 1 > 10 {
                    let error = json!({"code": -32005, "message": "query exceeds max block range 10"});
                    return (200, json!({"jsonrpc": "2.0", "id": 1, "error": error}).to_string());
                }
                json!([])
            }
            other => panic!("unexpected {other}"),
        };
        (200, json!({"jsonrpc": "2.0", "id": 1, "result": result}).to_string())
    }))
    .await;
    node.fault(Fault::Status(503, None));
    let text = format!(
        "[[dao]]\nid = \"{DAO}\"\nname = \"Gov Test\"\n[dao.onchain]\nchain_id = 1\nrpc_url = \"{}\"\n\
         governor = \"0x408ED6354d4973f66138C91495F2f2FCbd8724C3\"\ntoken = \"0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984\"\n\
         start_block = 11\nconfirmations = 12\nblock_range = 40\n",
        node.url
    );
    let registry = Registry::parse(&text, "node test").unwrap();
    let db = govdata::store::connect(&fresh_database(Backend::Sqlite).await).await.unwrap();
    let options = RunOptions { policy: quick(), ..RunOptions::default() };
    let report = run_once(&db, &registry, &options).await.unwrap();
    assert!(report.outcomes[0].result.is_ok(), "{report}");

    // Blocks 11..=88 (head 100 less 12 confirmations), each exactly once, in ranges the node took.
    let read: Vec<(u64, u64)> = node
        .requests()
        .iter()
        .filter(|r| r.body["method"] == "eth_getLogs")
        .map(|r| {
            let f = &r.body["params"][0];
            let n = |k: &str| u64::from_str_radix(f[k].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
            (n("fromBlock"), n("toBlock"))
        })
        .collect();
    let accepted: Vec<&(u64, u64)> = read.iter().filter(|(a, b)| b - a < 10).collect();
    assert_eq!(accepted.first().map(|r| r.0), Some(11), "{read:?}");
    assert_eq!(accepted.last().map(|r| r.1), Some(88), "{read:?}");
    assert!(accepted.windows(2).all(|w| w[1].0 == w[0].1 + 1), "contiguous: {read:?}");
    assert_eq!(read[..3].iter().map(|(a, b)| b - a + 1).collect::<Vec<_>>(), [40, 20, 10], "halved: {read:?}");
    let watermark = source_watermark::Entity::find().one(&db).await.unwrap().unwrap();
    assert_eq!(watermark.position.as_deref(), Some("88"));

    // The next run starts after the last block read.
    node.clear();
    run_once(&db, &registry, &options).await.unwrap();
    let first = node.requests().into_iter().find(|r| r.body["method"] == "eth_getLogs");
    assert!(first.is_none(), "nothing new below the confirmation depth: the head has not moved");
}

/// `body` posted to the JSON-RPC node at `url` (plain HTTP/1.1 on loopback, blocking), its
/// answer's body.
fn forward(url: &str, body: &Value) -> String {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let payload = body.to_string();
    write!(
        stream,
        "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{payload}",
        payload.len()
    )
    .unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let (head, mut rest) = answer.split_once("\r\n\r\n").unwrap();
    if !head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        return rest.to_owned();
    }
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").unwrap();
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
}

/// A node that refuses `eth_getStorageAt` (a method some nodes do not serve): every simulation
/// needs a storage slot, so each is kept as failed with the node's reason and served so: no
/// outcome, logs or changes are shown, never a guess.
#[tokio::test]
async fn a_simulation_the_node_cannot_serve_is_kept_as_failed_with_the_reason() {
    use crate::fixtures::upstreams::{Fake, Seen};
    use std::sync::Arc;
    if !require_toolkit().await {
        return;
    }
    let (_anvil, rpc_url) = start_chain().await;
    let scenario = script("governance.mjs", &["--rpc", &rpc_url]).await;
    let upstream = rpc_url.clone();
    let node = Fake::start(Arc::new(move |req: &Seen| {
        if req.body["method"] == "eth_getStorageAt" {
            let error =
                json!({"code": -32601, "message": "the method eth_getStorageAt does not exist/is not available"});
            return (200, json!({"jsonrpc": "2.0", "id": req.body["id"], "error": error}).to_string());
        }
        (200, forward(&upstream, &req.body))
    }))
    .await;
    let url = fresh_database(Backend::Sqlite).await;
    let db = govdata::store::connect(&url).await.unwrap();
    let options = RunOptions { policy: quick(), ..RunOptions::default() };
    let report = run_once(&db, &registry(&node.url, &scenario), &options).await.unwrap();
    assert!(report.outcomes.iter().all(|o| o.result.is_ok()), "{report}");
    assert_eq!(report.published.proposal_simulations.inserted, 4, "kept, as failed: {report}");
    let app = spawn_app_with(url, |_| {}).await;
    for id in [&scenario["proposalC"]["id"], &scenario["proposalD"]["id"]] {
        let (status, detail) = app.get_json(&format!("/v2/proposals/{}", key(id.as_str().unwrap()))).await;
        assert_eq!(status, 200, "{detail}");
        let sim = &detail["data"]["simulation"];
        assert_eq!(sim["outcome"], "failed", "{sim}");
        let failure = sim["failure"].as_str().unwrap();
        assert!(failure.contains("eth_getStorageAt") && failure.contains("does not exist"), "{sim}");
        assert!(sim.get("gasUsed").is_none() && sim.get("revert").is_none(), "{sim}");
        assert!(sim["logs"].as_array().unwrap().is_empty() && sim["tokenChanges"].as_array().unwrap().is_empty());
    }
}
