//! `bench --simulate`: what simulating a proposal's execution costs an ingestion run (issue 47).
//!
//! Starts anvil from `tests/chain/` (its lockfile pins it; `npm ci` there first) on a free
//! loopback port, sets up the governor tests' OpenZeppelin scenario with `governance.mjs`
//! (a Governor, its TimelockController holding 20,000 GOV, and proposal C's five calls), then
//! simulates, at the head block, the cases the issue names, each many times:
//!
//! - (a) the treasury transfer alone (C's first call);
//! - (b) the transfer, the quorum-numerator update and the role grant (C's first three calls);
//! - C whole (also an unknown selector, and a contract only the registry's ABI knows);
//! - D, a transfer above the treasury's balance (as the scenario's proposal D), which reverts
//!   with the token's error.
//!
//! Each simulation is what a run pays per due proposal (`GovernorConnector::simulate_prepared`):
//! a new, empty state cache, every account, code and slot read from the node over loopback
//! JSON-RPC, the EVM's execution, and the answer's decoding. The executor and the block header are
//! read once per run, outside the timing, as a run reads them once.
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256, hex};
use anyhow::{Context, bail, ensure};
use govdata::ingest::governor::GovernorConnector;
use govdata::ingest::http::{RetryPolicy, Upstream};
use govdata::ingest::registry::OnchainSource;
use govdata::rules::actions::ProposedAction;
use govdata::rules::actions::simulation::Outcome;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

/// How long each case is repeated, at least.
const PER_CASE: Duration = Duration::from_secs(3);
/// The chain id `governance.mjs` is run on in the tests.
const CHAIN_ID: u64 = 84532;

/// A proposal as `governance.mjs` prints it.
#[derive(Deserialize)]
struct Proposal {
    targets: Vec<String>,
    values: Vec<String>,
    calldatas: Vec<String>,
}

impl Proposal {
    fn actions(&self, first: usize) -> anyhow::Result<Vec<ProposedAction>> {
        (0..first.min(self.targets.len()))
            .map(|i| {
                Ok(ProposedAction {
                    target: self.targets[i].parse::<Address>()?,
                    value: U256::from_str_radix(&self.values[i], 10)?,
                    signature: None,
                    calldata: hex::decode(&self.calldatas[i])?,
                })
            })
            .collect()
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Scenario {
    governor: String,
    token: String,
    deploy_block: u64,
    head: u64,
    proposal_c: Proposal,
    proposal_d: Overdraft,
}

/// Proposal D as `governance.mjs` prints it: a transfer of `needed` of `token`, more than the
/// treasury holds.
#[derive(Deserialize)]
struct Overdraft {
    token: String,
    needed: String,
}

impl Overdraft {
    fn actions(&self) -> anyhow::Result<Vec<ProposedAction>> {
        let transfer = alloy_json_abi::Function::parse("transfer(address,uint256)")?;
        let to = alloy_primitives::address!("0x00000000000000000000000000000000000000A1");
        let amount = U256::from_str_radix(&self.needed, 10)?;
        let calldata = alloy_dyn_abi::JsonAbiExt::abi_encode_input(
            &transfer,
            &[alloy_dyn_abi::DynSolValue::Address(to), alloy_dyn_abi::DynSolValue::Uint(amount, 256)],
        )?;
        Ok(vec![ProposedAction { target: self.token.parse()?, value: U256::ZERO, signature: None, calldata }])
    }
}

fn toolkit() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/chain")
}

/// The anvil binary the lockfile installs (not its npm wrapper, which would outlive a kill), or
/// `GOVDATA_TEST_ANVIL`, as the tests find it.
fn anvil_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("GOVDATA_TEST_ANVIL") {
        return path.into();
    }
    let os = if std::env::consts::OS == "macos" { "darwin" } else { std::env::consts::OS };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    toolkit().join(format!("node_modules/@foundry-rs/anvil-{os}-{arch}/bin/anvil"))
}

async fn start_anvil() -> anyhow::Result<(Child, String)> {
    let anvil = anvil_binary();
    if !anvil.exists() {
        bail!("no anvil at {}: run `npm ci` in tests/chain first", anvil.display());
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let child = Command::new(&anvil)
        .args(["--chain-id", &CHAIN_ID.to_string(), "--host", "127.0.0.1", "--port", &port.to_string(), "--silent"])
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", anvil.display()))?;
    let rpc = format!("http://127.0.0.1:{port}");
    let ask = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []});
    let client = reqwest::Client::new();
    for _ in 0..200 {
        if let Ok(answer) = client.post(&rpc).json(&ask).send().await
            && answer.json::<Value>().await.is_ok()
        {
            return Ok((child, rpc));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    bail!("anvil did not answer on {rpc} within 10 s")
}

async fn scenario(rpc: &str) -> anyhow::Result<Scenario> {
    let out = Command::new("node")
        .arg("governance.mjs")
        .args(["--rpc", rpc])
        .current_dir(toolkit())
        .stderr(Stdio::inherit())
        .output()
        .await
        .context("running node tests/chain/governance.mjs")?;
    ensure!(out.status.success(), "governance.mjs failed ({})", out.status);
    serde_json::from_slice(&out.stdout).context("governance.mjs's output")
}

pub async fn run() -> anyhow::Result<()> {
    let (_anvil, rpc) = start_anvil().await?;
    println!("setting up the governance scenario on anvil ({rpc}) …");
    let s = scenario(&rpc).await?;
    let source = OnchainSource {
        chain_id: CHAIN_ID,
        rpc_url: rpc.clone(),
        governor: s.governor.clone(),
        token: s.token.clone(),
        start_block: s.deploy_block,
        confirmations: 0,
        block_range: 10_000,
        token_decimals: 18,
        abis: Vec::new(),
    };
    // The store is only written when decoding learns about contracts, which simulating does not.
    let db = sea_orm::Database::connect("sqlite::memory:").await?;
    let connector = GovernorConnector {
        upstream: Upstream::new(RetryPolicy::default()),
        dao_id: "bench".into(),
        source,
        db,
        sourcify: None,
    };
    let prepared = connector.prepare_simulation(s.head).await?;
    let cases = [
        ("(a) the treasury transfer", s.proposal_c.actions(1)?, Outcome::Success),
        ("(b) transfer, quorum update, role grant", s.proposal_c.actions(3)?, Outcome::Success),
        ("C: five calls", s.proposal_c.actions(usize::MAX)?, Outcome::Success),
        ("D: a transfer that reverts", s.proposal_d.actions()?, Outcome::Reverted),
    ];
    println!("simulations at block {} (each with an empty state cache, read over loopback JSON-RPC):", s.head);
    for (name, actions, expected) in cases {
        let mut times = Vec::new();
        let started = Instant::now();
        let mut last = None;
        while started.elapsed() < PER_CASE || times.len() < 10 {
            let t = Instant::now();
            let simulation = connector.simulate_prepared(&prepared, actions.clone()).await?;
            times.push(t.elapsed());
            last = Some(simulation);
        }
        let simulation = last.expect("at least one simulation");
        ensure!(
            simulation.outcome == expected,
            "{name}: {:?} ({:?}), not {:?}",
            simulation.outcome,
            simulation.failure,
            expected
        );
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "  {name}: {} actions, {} state reads, gas {}, {} logs; median {:.2} ms, p90 {:.2} ms ({} runs, {:.0} per second)",
            actions.len(),
            simulation.state_reads,
            simulation.gas_used.unwrap_or(0),
            simulation.logs.len(),
            ms(times[times.len() / 2]),
            ms(times[times.len() * 9 / 10]),
            times.len(),
            times.len() as f64 / times.iter().sum::<Duration>().as_secs_f64()
        );
    }
    Ok(())
}
