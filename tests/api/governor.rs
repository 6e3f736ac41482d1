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
    let sourcify = sources::FakeSourcify::start(scenario).await;
    let options = RunOptions { policy: quick(), sourcify: Some(sourcify.settings()), ..RunOptions::default() };
    let report = run_once(&db, &registry, &options).await.unwrap();
    for o in &report.outcomes {
        assert!(o.result.is_ok(), "{o:?}");
    }
    // A and B; C and D (active: their actions and simulations are checked); E (pending, never
    // voted on: its calls through proxies are decoded).
    assert_eq!(report.published.proposals.inserted, 5, "{report}");
    // A (queued), B, C and D (active): each one's execution is simulated once; E is pending.
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
    sources::assert_token_amounts(&db, scenario).await;
    sources::assert_proxied(&db, scenario, sources::Expect::Implementation).await;
    let tokens = sources::token_rows(&db).await;
    assert_actions_served(&app, &db, &url, scenario).await;
    backfill(&db, &registry, &options, scenario).await;
    // Across the runs (the backfill decoded A again, calling the token again): Sourcify was
    // asked once about each contract, the ones it does not verify included, and the token's
    // metadata was read once.
    sourcify.assert_asked_once_each(scenario);
    assert_eq!(sources::token_rows(&db).await, tokens, "the token's decimals and symbol are read once");
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

/// Proposal C's actions as v2 serves them: in its detail (the first ones, with the total and
/// where to read the rest) and paged by `/v2/proposals/{proposalKey}/actions`, each as proposed
/// and decoded as the script encoded it; the refusals of the list; and the `proposal_actions`
/// export table.
async fn assert_actions_served(app: &TestApp, db: &sea_orm::DatabaseConnection, url: &str, scenario: &Value) {
    use govdata::contract::limits::{PROPOSAL_ACTIONS, PROPOSAL_DETAIL_ACTIONS};
    let c = &scenario["proposalC"];
    let c_key = key(c["id"].as_str().unwrap());
    let checksummed = |a: &str| a.parse::<alloy_primitives::Address>().unwrap().to_checksum(None);

    // The detail carries all five (fewer than it carries at most), and says there are no more.
    let (status, detail) = app.get_json(&format!("/v2/proposals/{c_key}")).await;
    assert_eq!(status, 200, "{detail}");
    let inline = &detail["data"]["actions"];
    assert_eq!(inline["total"], "5", "{inline}");
    assert_eq!(inline["hasMore"], false);
    assert!(inline.get("nextCursor").is_none() && inline.get("next").is_none(), "{inline}");
    let items = inline["items"].as_array().unwrap();
    assert_eq!(items.len(), 5);
    for (i, a) in items.iter().enumerate() {
        assert_eq!(a["position"], i, "{a}");
        assert_eq!(a["executionPath"], "governor");
        assert_eq!(a["target"], c["targets"][i], "as proposed: {a}");
        assert_eq!(a["valueWei"], c["values"][i]);
        assert_eq!(a["calldata"], c["calldatas"][i]);
        assert!(a.get("signature").is_none() && a.get("decodedUnreadable").is_none(), "{a}");
        let decoded = &a["decoded"];
        assert_eq!(decoded["target"], checksummed(c["targets"][i].as_str().unwrap()));
        assert_eq!(decoded["value"], c["values"][i]);
        assert_eq!(decoded["calldata"], c["calldatas"][i]);
        assert_eq!(decoded["sender"].as_str().unwrap().to_lowercase(), scenario["timelock"].as_str().unwrap());
        assert!(!decoded["summary"].as_str().unwrap().is_empty(), "{a}");
        let call = &decoded["call"];
        match c["encoded"][i].as_object() {
            Some(encoded) => {
                assert_eq!(call["kind"], "decoded", "{a}");
                assert_eq!(call["function"], encoded["function"]);
                assert_eq!(call["signature"], encoded["signature"]);
                assert_eq!(call["selector"], c["calldatas"][i].as_str().unwrap()[..10]);
                // Only the registry's ABI knows the made-up contract's function.
                assert_eq!(call["source"], if i == 4 { "registry" } else { "bundled" }, "{a}");
                let expected = encoded["arguments"].as_array().unwrap();
                let served = call["arguments"].as_array().unwrap();
                assert_eq!(served.len(), expected.len(), "{a}");
                for (got, want) in served.iter().zip(expected) {
                    assert_eq!(
                        (&got["name"], &got["type"], &got["value"]),
                        (&want["name"], &want["type"], &want["value"])
                    );
                }
            }
            None => {
                assert_eq!(call["kind"], "undecoded", "{a}");
                assert_eq!(call["selector"], "0xdeadbeef");
                assert_eq!(call["reason"], "unknown_selector");
                assert!(call.get("function").is_none() && call.get("arguments").is_none(), "{a}");
            }
        }
    }

    // The list walks the same five in position order, two a page, with its cursors.
    let mut walked = Vec::new();
    let mut pages = 0;
    let mut path = format!("/v2/proposals/{c_key}/actions?limit=2");
    let first_cursor = loop {
        let (status, page) = app.get_json(&path).await;
        assert_eq!(status, 200, "{page}");
        pages += 1;
        walked.extend(page["data"]["items"].as_array().unwrap().iter().cloned());
        assert_eq!(page["meta"]["page"]["limit"], 2);
        match page["meta"]["page"]["nextCursor"].as_str() {
            Some(cursor) => {
                assert_eq!(page["meta"]["page"]["hasMore"], true);
                path = format!("/v2/proposals/{c_key}/actions?limit=2&cursor={cursor}");
            }
            None => break path,
        }
    };
    assert_eq!(pages, 3);
    assert_eq!(&walked, items, "the list serves what the detail carries");

    // Refusals: an unknown proposal, a cursor that is not one, a cursor used with another limit,
    // a limit past the list's largest page.
    let refused = |path: String, status: u16, code: &'static str| async move {
        let response = app.get(&path).await;
        assert_eq!(response.status().as_u16(), status, "{path}");
        assert_eq!(response.headers()["content-type"], "application/problem+json", "{path}");
        let problem: Value = response.json().await.unwrap();
        assert_eq!(problem["code"], code, "{path}: {problem}");
        assert_eq!(problem["status"], status);
    };
    refused("/v2/proposals/p_AAAAAAAAAAAAAAAAAAAAAA/actions".into(), 404, "NOT_FOUND").await;
    refused(format!("/v2/proposals/{c_key}/actions?cursor=not-a-cursor"), 400, "INVALID_CURSOR").await;
    refused(first_cursor.replace("limit=2", "limit=3"), 400, "INVALID_CURSOR").await;
    let past = PROPOSAL_ACTIONS.max + 1;
    refused(format!("/v2/proposals/{c_key}/actions?limit={past}"), 400, "VALIDATION_ERROR").await;

    // The export table: one row per stored action of the DAO, C's as the API serves them.
    use govdata::contract::exports::{ExportFormat, PROPOSAL_ACTIONS as TABLE};
    use govdata::store::entities::proposal_action;
    use sea_orm::PaginatorTrait;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proposal_actions.ndjson");
    let written = govdata::exports::export(&file, &TABLE, ExportFormat::Ndjson, |out| {
        govdata::exports::read_table(db, None, &TABLE, DAO, out)
    })
    .await
    .unwrap();
    let stored = proposal_action::Entity::find().filter(proposal_action::Column::DaoId.eq(DAO)).count(db).await;
    assert_eq!(written.rows, stored.unwrap());
    let rows: Vec<Value> =
        std::fs::read_to_string(&file).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let c_rows: Vec<&Value> = rows.iter().filter(|r| r["proposal_key"] == c_key.as_str()).collect();
    assert_eq!(c_rows.len(), 5);
    for (i, (row, served)) in c_rows.iter().zip(items).enumerate() {
        assert_eq!(row["position"], i);
        assert_eq!(
            (&row["target"], &row["value_wei"], &row["calldata"]),
            (&c["targets"][i], &c["values"][i], &c["calldatas"][i])
        );
        assert_eq!(row["function_signature"], c["encoded"][i]["signature"], "null when undecoded: {row}");
        assert_eq!(row["summary"], served["decoded"]["summary"]);
        let decoded: Value = serde_json::from_str(row["decoded"].as_str().unwrap()).unwrap();
        assert_eq!(decoded, served["decoded"], "the export's answer is the one served");
    }

    // With more actions than the detail carries (C's five, and copies at the next positions), the
    // detail carries the first ones, the total, and the request that reads the rest. Read by a
    // server of its own: the first one keeps its answers about C until the next publication.
    let extra = PROPOSAL_DETAIL_ACTIONS as i32 + 2 - 5;
    let originals =
        proposal_action::Entity::find().filter(proposal_action::Column::DaoId.eq(DAO)).all(db).await.unwrap();
    let originals: Vec<proposal_action::Model> = {
        let c_id = originals.iter().find(|o| o.calldata == c["calldatas"][3].as_str().unwrap()).unwrap().proposal_id;
        let mut mine: Vec<_> = originals.into_iter().filter(|o| o.proposal_id == c_id).collect();
        mine.sort_by_key(|o| o.position);
        mine
    };
    // The last copy's stored answer is not one this server reads: it is served with its raw
    // values and says so, and the others around it are served whole.
    let copies: Vec<proposal_action::ActiveModel> = (0..extra)
        .map(|n| {
            let mut copy = originals[n as usize % originals.len()].clone();
            copy.position = 5 + n;
            if n == extra - 1 {
                copy.decoded = r#"{"target":"0x00","call":{"kind":"simulated"}}"#.to_owned();
            }
            sea_orm::IntoActiveModel::into_active_model(copy)
        })
        .collect();
    proposal_action::Entity::insert_many(copies).exec_without_returning(db).await.unwrap();
    let many = spawn_app_with(url.to_owned(), |_| {}).await;
    let (status, detail) = many.get_json(&format!("/v2/proposals/{c_key}")).await;
    assert_eq!(status, 200, "{detail}");
    let inline = &detail["data"]["actions"];
    let total = 5 + extra as usize;
    assert_eq!(inline["total"], total.to_string(), "{inline}");
    assert_eq!(inline["hasMore"], true);
    let carried = inline["items"].as_array().unwrap();
    assert_eq!(carried.len(), PROPOSAL_DETAIL_ACTIONS as usize);
    assert_eq!(&carried[..5], items.as_slice());
    let cursor = inline["nextCursor"].as_str().unwrap();
    assert_eq!(inline["next"], format!("/v2/proposals/{c_key}/actions?cursor={cursor}"));
    let (status, rest) = many.get_json(inline["next"].as_str().unwrap()).await;
    assert_eq!(status, 200, "{rest}");
    let positions: Vec<u64> =
        rest["data"]["items"].as_array().unwrap().iter().map(|a| a["position"].as_u64().unwrap()).collect();
    assert_eq!(positions, (PROPOSAL_DETAIL_ACTIONS..total as u64).collect::<Vec<_>>());
    assert_eq!(rest["meta"]["page"]["hasMore"], false, "{rest}");
    let rest = rest["data"]["items"].as_array().unwrap();
    let (whole, unreadable) = (&rest[rest.len() - 2], &rest[rest.len() - 1]);
    assert!(whole["decoded"].is_object() && whole.get("decodedUnreadable").is_none(), "{whole}");
    assert!(unreadable.get("decoded").is_none(), "{unreadable}");
    assert!(unreadable["decodedUnreadable"].as_str().unwrap().contains("could not be read"), "{unreadable}");
    let copied = &originals[(extra as usize - 1) % originals.len()];
    assert_eq!((&unreadable["target"], &unreadable["calldata"]), (&json!(copied.target), &json!(copied.calldata)));
    proposal_action::Entity::delete_many()
        .filter(proposal_action::Column::ProposalId.eq(originals[0].proposal_id))
        .filter(proposal_action::Column::Position.gte(5))
        .exec(db)
        .await
        .unwrap();
}

/// A store made before actions were kept (one proposal's actions gone) gets them on the next
/// run, read from the creation log by its block, in a revision that carries nothing else.
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
    // Actions are served, and answers are cached per revision: the backfill publishes one,
    // which carries them and nothing else (no feed entry).
    let published = report.published.revision_id.expect("a backfill that wrote actions publishes a revision");
    assert!(Some(published) > revision, "{report}");
    assert_eq!(govdata::store::freshness::current_revision(db).await.unwrap().map(|r| r.id), Some(published));
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

    // Answers an older decoder stored are decoded anew from the creation log, once: the rows
    // are replaced (the same raw values, this decoder's answer), and the next run is quiet.
    use sea_orm::sea_query::Expr;
    let older = govdata::rules::actions::DECODER_VERSION - 1;
    proposal_action::Entity::update_many()
        .col_expr(proposal_action::Column::DecoderVersion, Expr::value(older))
        .col_expr(proposal_action::Column::Decoded, Expr::value("{}"))
        .filter(proposal_action::Column::ProposalId.eq(a.id))
        .exec(db)
        .await
        .unwrap();
    let redone = run_once(db, registry, options).await.unwrap();
    assert_eq!(redone.published.proposal_actions.updated, before.len() as u64, "{redone}");
    assert_eq!(redone.published.proposal_actions.inserted, 0, "{redone}");
    let mut again_after: Vec<proposal_action::Model> =
        proposal_action::Entity::find().filter(proposal_action::Column::ProposalId.eq(a.id)).all(db).await.unwrap();
    again_after.sort_by_key(key);
    assert_eq!(again_after, before, "the older answers replaced by this decoder's");
    let quiet = run_once(db, registry, options).await.unwrap();
    assert_eq!(quiet.published.rows_written(), 0, "{quiet}");

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
    // B, C, D and E (now past their voting period without votes: defeated too).
    assert_eq!(report.published.proposals.updated, 4, "{report}");
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

    // Sourcify was not configured for these runs: E's calls through the proxies are undecoded.
    sources::assert_proxied(&db, &scenario, sources::Expect::Undecoded).await;

    use sea_orm::PaginatorTrait;
    let kept = govdata::store::entities::contract_abi::Entity::find().count(&db).await.unwrap();
    assert_eq!(kept, 0, "Sourcify unconfigured: nothing asked, nothing kept");

    sources::sourcify_down_or_slow(backend, &scenario, registry).await;
});

/// Proposal E (calls through proxies), ERC-20 amounts, and Sourcify, fake and real-shaped.
mod sources {
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU16, Ordering};
    use std::time::Duration;

    use govdata::config::SourcifySettings;
    use govdata::ingest::{Registry, RunOptions, run_once};
    use govdata::store::entities::{contract_abi, proposal, proposal_action, token_metadata};
    use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, Set};
    use serde_json::{Value, json};

    use super::{DAO, stored_actions};
    use crate::fixtures::testgov::quick;
    use crate::fixtures::upstreams::{Fake, Fault, Seen};
    use crate::helpers::{Backend, fresh_database};

    /// A Sourcify on 127.0.0.1 that verifies only GovVault (the implementation behind E's
    /// proxies), answers 404 with Sourcify's minimal body for every other contract, and answers
    /// 500 to everything while `status` is set to it.
    pub struct FakeSourcify {
        fake: Fake,
        status: Arc<AtomicU16>,
        timeout: Duration,
    }

    impl FakeSourcify {
        pub async fn start(scenario: &Value) -> Self {
            let chain = scenario["chainId"].to_string();
            let implementation = scenario["proposalE"]["implementation"].as_str().unwrap().to_owned();
            let abi = scenario["vaultAbi"].clone();
            let status = Arc::new(AtomicU16::new(200));
            let answer = status.clone();
            let fake = Fake::start(Arc::new(move |req: &Seen| {
                let status = answer.load(Ordering::SeqCst);
                if status != 200 {
                    let body = json!({"customCode": "internal_error", "message": "down", "errorId": "e"});
                    return (status, body.to_string());
                }
                let parts: Vec<&str> = req.path.trim_start_matches('/').split('/').collect();
                let ["v2", "contract", c, address] = parts[..] else { return (404, "{}".to_owned()) };
                let minimal = json!({"match": null, "creationMatch": null, "runtimeMatch": null, "chainId": c, "address": address});
                if c != chain || address.to_lowercase() != implementation || req.query != "fields=abi" {
                    return (404, minimal.to_string());
                }
                let body = json!({"match": "exact_match", "creationMatch": "exact_match", "runtimeMatch": "exact_match",
                    "chainId": c, "address": address, "verifiedAt": "2026-11-01T00:00:00Z", "matchId": "1", "abi": abi});
                (200, body.to_string())
            }))
            .await;
            Self { fake, status, timeout: Duration::from_secs(2) }
        }

        pub fn settings(&self) -> SourcifySettings {
            SourcifySettings { url: format!("{}/", self.fake.url), timeout: self.timeout }
        }

        /// The contracts asked about, each with its number of requests.
        fn asked(&self) -> BTreeMap<String, usize> {
            let mut asked = BTreeMap::new();
            for r in self.fake.requests() {
                *asked.entry(r.path.rsplit('/').next().unwrap().to_lowercase()).or_insert(0) += 1;
            }
            asked
        }

        /// Every contract the scenario's proposals call, but the one the registry has an ABI for,
        /// and the implementation behind E's proxies, each asked exactly once.
        pub fn assert_asked_once_each(&self, scenario: &Value) {
            let mut expected: BTreeMap<String, usize> = BTreeMap::new();
            let proposals = scenario["proposals"].as_array().unwrap().iter();
            for p in proposals.chain([&scenario["proposalC"], &scenario["proposalE"]]) {
                for t in p["targets"].as_array().unwrap() {
                    expected.insert(t.as_str().unwrap().to_owned(), 1);
                }
            }
            expected.remove(scenario["customAbi"]["address"].as_str().unwrap());
            expected.insert(scenario["proposalE"]["implementation"].as_str().unwrap().to_owned(), 1);
            assert_eq!(self.asked(), expected);
            assert!(
                self.fake
                    .requests()
                    .iter()
                    .all(|r| r.path.starts_with(&format!("/v2/contract/{}/", scenario["chainId"])))
            );
        }
    }

    pub enum Expect {
        /// Decoded with GovVault's verified ABI, found behind each proxy.
        Implementation,
        /// Undecoded: no source knows `setRate`.
        Undecoded,
    }

    /// E's two calls, through a TransparentUpgradeableProxy and a BeaconProxy.
    pub async fn assert_proxied(db: &DatabaseConnection, scenario: &Value, expect: Expect) {
        let d = &scenario["proposalE"];
        let actions = stored_actions(db, d["id"].as_str().unwrap()).await;
        assert_eq!(actions.len(), 2);
        let implementation = d["implementation"].as_str().unwrap().parse::<alloy_primitives::Address>().unwrap();
        for (i, a) in actions.iter().enumerate() {
            assert_eq!(a.target, d["targets"][i].as_str().unwrap());
            assert_eq!(a.calldata, d["calldatas"][i].as_str().unwrap());
            let decoded: Value = serde_json::from_str(&a.decoded).unwrap();
            let call = &decoded["call"];
            match expect {
                Expect::Implementation => {
                    let encoded = &d["encoded"][i];
                    assert_eq!(call["kind"], "decoded", "{decoded}");
                    assert_eq!(call["source"], "sourcify_implementation", "{decoded}");
                    assert_eq!(call["implementation"], implementation.to_checksum(None), "{decoded}");
                    assert_eq!(call["function"], encoded["function"]);
                    assert_eq!(call["signature"], encoded["signature"]);
                    assert_eq!(call["arguments"], encoded["arguments"], "names, types and values exactly");
                    let rate = &encoded["arguments"][0]["value"];
                    let to = encoded["arguments"][1]["value"].as_str().unwrap();
                    let target = a.target.parse::<alloy_primitives::Address>().unwrap().to_checksum(None);
                    assert_eq!(
                        decoded["summary"],
                        format!("call setRate(newRate: {}, newBeneficiary: {to}) on {target}", rate.as_str().unwrap())
                    );
                }
                Expect::Undecoded => {
                    assert_eq!(call["kind"], "undecoded", "{decoded}");
                    assert_eq!(call["reason"], "unknown_selector", "{decoded}");
                    assert_eq!(call["selector"], a.calldata[..10]);
                    assert!(call.get("implementation").is_none(), "{decoded}");
                }
            }
        }
    }

    /// `1234567.5` as summaries write it: `1,234,567.5`.
    fn grouped(plain: &str) -> String {
        let (int, fraction) = plain.split_once('.').map_or((plain, None), |(i, f)| (i, Some(f)));
        let digits: Vec<char> = int.chars().collect();
        let mut out = String::new();
        for (i, c) in digits.iter().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(*c);
        }
        fraction.map_or(out.clone(), |f| format!("{out}.{f}"))
    }

    /// C's transfer of the governance token from the timelock: the amount in whole tokens next
    /// to the raw integer, with the token's own symbol and decimals, and a summary in tokens.
    pub async fn assert_token_amounts(db: &DatabaseConnection, scenario: &Value) {
        let c = &scenario["proposalC"];
        let info = &scenario["tokenInfo"];
        let decimals = info["decimals"].as_u64().unwrap() as usize;
        let actions = stored_actions(db, c["id"].as_str().unwrap()).await;
        let decoded: Value = serde_json::from_str(&actions[0].decoded).unwrap();
        let raw = c["encoded"][0]["arguments"][1]["value"].as_str().unwrap();
        let to = c["encoded"][0]["arguments"][0]["value"].as_str().unwrap();
        assert!(raw.len() > decimals);
        let (int, fraction) = raw.split_at(raw.len() - decimals);
        let fraction = fraction.trim_end_matches('0');
        let whole = if fraction.is_empty() { int.to_owned() } else { format!("{int}.{fraction}") };
        let amount = &decoded["call"]["arguments"][1];
        assert_eq!(amount["value"], raw, "the raw integer stays: {decoded}");
        assert_eq!(amount["tokenAmount"], json!({"amount": whole, "symbol": info["symbol"], "decimals": decimals}));
        let symbol = info["symbol"].as_str().unwrap();
        assert_eq!(decoded["summary"], format!("transfer {} {symbol} from the timelock to {to}", grouped(&whole)));
        // A's transfer of 0 reads in tokens too.
        let a = &scenario["proposals"][0];
        let decoded: Value =
            serde_json::from_str(&stored_actions(db, a["id"].as_str().unwrap()).await[0].decoded).unwrap();
        assert_eq!(decoded["call"]["arguments"][1]["tokenAmount"]["amount"], "0", "{decoded}");
        // Kept, for good (no retry time): only the token was asked (the only target of transfers
        // and approvals).
        let rows = token_rows(db).await;
        let token = rows.iter().find(|r| r.address == scenario["token"].as_str().unwrap()).expect("the token kept");
        assert_eq!(
            (token.symbol.as_deref(), token.decimals, token.retry_ms),
            (Some(symbol), Some(decimals as i32), None)
        );
        assert_eq!(rows.len(), 1, "{rows:?}");
    }

    pub async fn token_rows(db: &DatabaseConnection) -> Vec<token_metadata::Model> {
        token_metadata::Entity::find().all(db).await.unwrap()
    }

    /// Forgets the stored actions of proposal `id`: the next run decodes them again (the backfill).
    async fn forget(db: &DatabaseConnection, id: &Value) {
        let p = proposal::Entity::find()
            .filter(proposal::Column::DaoId.eq(DAO))
            .filter(proposal::Column::ExternalId.eq(id.as_str().unwrap()))
            .one(db)
            .await
            .unwrap()
            .unwrap();
        proposal_action::Entity::delete_many()
            .filter(proposal_action::Column::ProposalId.eq(p.id))
            .exec(db)
            .await
            .unwrap();
    }

    /// Makes every kept Sourcify answer due, as if its retry time had passed.
    async fn make_due(db: &DatabaseConnection) {
        contract_abi::Entity::update_many()
            .set(contract_abi::ActiveModel { retry_ms: Set(Some(0)), ..Default::default() })
            .exec(db)
            .await
            .unwrap();
    }

    async fn kept(db: &DatabaseConnection) -> Vec<contract_abi::Model> {
        contract_abi::Entity::find().all(db).await.unwrap()
    }

    /// A Sourcify that hangs, then answers 500: the runs succeed, each asks Sourcify once (its
    /// first lookup fails, and the run asks nothing more), E is decoded with what else is known
    /// (undecoded), the failure is kept and not asked again before its retry time; after it,
    /// Sourcify is asked again and, answering, E's calls decode through the proxies.
    pub async fn sourcify_down_or_slow(backend: Backend, scenario: &Value, registry: Registry) {
        let db = govdata::store::connect(&fresh_database(backend).await).await.unwrap();
        let mut sourcify = FakeSourcify::start(scenario).await;
        sourcify.timeout = Duration::from_millis(300);
        let options = RunOptions { policy: quick(), sourcify: Some(sourcify.settings()), ..RunOptions::default() };
        let run = |what: &'static str| {
            let (db, registry, options) = (&db, &registry, &options);
            async move {
                let report = run_once(db, registry, options).await.unwrap();
                assert!(report.outcomes.iter().all(|o| o.result.is_ok()), "{what}: {report}");
                report
            }
        };
        let (a, d) = (&scenario["proposals"][0], &scenario["proposalE"]);
        let token = scenario["token"].as_str().unwrap();

        // Hanging past the timeout: the first contract asked (the token, A's target) fails after
        // two attempts, and nothing else is asked this run.
        for _ in 0..8 {
            sourcify.fake.fault(Fault::Stall(Duration::from_secs(3)));
        }
        let started = std::time::Instant::now();
        run("Sourcify hangs").await;
        sourcify.fake.clear_faults();
        assert!(started.elapsed() < Duration::from_secs(30), "bounded: {:?}", started.elapsed());
        assert_eq!(sourcify.asked(), BTreeMap::from([(token.to_owned(), 2)]), "one lookup, two attempts");
        assert_proxied(&db, scenario, Expect::Undecoded).await;
        let failed = kept(&db).await;
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert_eq!((failed[0].address.as_str(), failed[0].status.as_str()), (token, "failed"));
        assert!(failed[0].message.as_deref().is_some_and(|m| m.contains("timed out")), "{failed:?}");
        assert_eq!(failed[0].retry_ms, Some(failed[0].checked_ms + 3_600_000));

        // Not due yet: A decoded again (its actions forgotten) does not ask about the token.
        sourcify.fake.clear();
        forget(&db, &a["id"]).await;
        run("the failure is not due").await;
        assert!(sourcify.fake.requests().is_empty(), "a kept failure is not asked again before its time");
        assert_eq!(kept(&db).await, failed);

        // Answering 500: E decoded again asks about its first proxy, which fails; the run is fine.
        sourcify.status.store(500, Ordering::SeqCst);
        forget(&db, &d["id"]).await;
        run("Sourcify answers 500").await;
        let transparent = d["targets"][0].as_str().unwrap();
        assert_eq!(sourcify.asked(), BTreeMap::from([(transparent.to_owned(), 2)]));
        assert_proxied(&db, scenario, Expect::Undecoded).await;
        let row = kept(&db).await.into_iter().find(|r| r.address == transparent).expect("kept");
        assert!(row.status == "failed" && row.message.as_deref().is_some_and(|m| m.contains("500")), "{row:?}");

        // Due, and answering: E decodes through its proxies, and the answers are kept.
        make_due(&db).await;
        sourcify.status.store(200, Ordering::SeqCst);
        sourcify.fake.clear();
        forget(&db, &d["id"]).await;
        run("Sourcify is back").await;
        assert_proxied(&db, scenario, Expect::Implementation).await;
        let implementation = d["implementation"].as_str().unwrap();
        let mut of_d: Vec<String> =
            d["targets"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().into()).collect();
        of_d.push(implementation.to_owned());
        assert_eq!(sourcify.asked(), of_d.iter().map(|a| (a.clone(), 1)).collect::<BTreeMap<_, _>>());
        for row in kept(&db).await.into_iter().filter(|r| of_d.contains(&r.address)) {
            let (status, retry) = if row.address == implementation {
                ("verified", None)
            } else {
                ("not_verified", Some(row.checked_ms + 7 * 24 * 3_600_000))
            };
            assert_eq!((row.status.as_str(), row.retry_ms), (status, retry), "{row:?}");
        }
    }
}

/// A JSON-RPC node of 100 empty blocks that refuses `eth_getLogs` over more than 10 blocks, as
/// public nodes do, and answers one malformed body first.
#[tokio::test]
async fn log_ranges_are_halved_when_a_node_refuses_them_and_stop_short_of_the_confirmation_depth() {
    use crate::fixtures::upstreams::{Fake, Fault, Seen, call_reverted};
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
            // The governor's modes (`COUNTING_MODE()`, `CLOCK_MODE()`), which GovernorBravo does
            // not declare.
            "eth_call" => return call_reverted(req),
            other => panic!("unexpected {other}: {}", req.body),
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
