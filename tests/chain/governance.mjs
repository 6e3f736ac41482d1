#!/usr/bin/env node
// Sets up a real OpenZeppelin governance scenario on a running anvil, for tests that ingest it
// with eth_getLogs. Compiles contracts/GovToken.sol, contracts/GovGovernor.sol and OpenZeppelin's
// TimelockController with the bundled solc-js (imports read from node_modules, no network), then:
//   - #0 (--key) deploys GovToken (minting odd, > 2^64 amounts to anvil accounts #1..#4), a
//     TimelockController (min delay 60 s) and GovGovernor; gives the governor PROPOSER_ROLE and
//     CANCELLER_ROLE on the timelock (EXECUTOR_ROLE is held by address(0), i.e. anyone) and
//     renounces its own timelock admin role;
//   - #1 and #2 delegate to themselves, #3 delegates to #1, #4 does not delegate;
//   - #1 proposes A; #1 votes For ("Ship it"), #2 Against (""); A passes and is queued;
//   - #2 proposes B; #2 votes Abstain ("Need more detail"); B is left Active.
//   - #1 funds the timelock (the treasury) with 20,000 GOV;
//   - #1 proposes C, five calls to decode and simulate (a transfer from the timelock,
//     updateQuorumNumerator, grantRole, an unknown selector, a function only a registry ABI has);
//     C is left Active;
//   - #2 proposes D, a transfer of more than the treasury holds; D is left Active.
//   - #0 deploys GovVault behind a TransparentUpgradeableProxy and behind a BeaconProxy; #1
//     proposes E, GovVault's setRate through each proxy (`proposalE`, `vaultAbi`); E is left
//     Pending.
// Every value in the output is read back from the chain (receipts, events, view calls).
// stdout: {"chainId":…,"governor":"0x…","token":"0x…","timelock":"0x…","tokenInfo":{…},"deployBlock":…,"head":…,
//          "proposals":[…],"delegates":[…],"holders":[…],"proposalC":{…},"proposalD":{…},"treasury":"…","proposalE":{…},"vaultAbi":[…],
//          "customAbi":{address,abi}} (addresses lowercase, uint256 as decimal strings,
//          block numbers as JSON numbers)
import { ANVIL_KEY_0, POLLING_INTERVAL_MS, args, checkUrl, emit, localChain, log, normalizeKey, required, run, solcInput, openZeppelinImports, compileSolidity, NODE_MODULES_DIR } from "./lib/common.mjs";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  decodeEventLog,
  encodeFunctionData,
  http,
  keccak256,
  toHex,
  zeroAddress,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";

const USAGE = `usage: governance.mjs --rpc URL [--key HEX]
  --rpc   a running anvil (any chain id; it must accept anvil_mine)
  --key   deployer key (default: anvil account #0); the holders are always anvil accounts #1..#4`;

const OZ_PREFIX = "@openzeppelin/contracts/";
const TIMELOCK_SOURCE = `${OZ_PREFIX}governance/TimelockController.sol`;

// Anvil's default mnemonic, accounts #1..#4: the token holders and voters.
const HOLDER_KEYS = [
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
  "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
];
// Deliberately odd amounts (wei, 18 decimals): beyond 2^64 and beyond f64's exact integers.
const HOLDER_AMOUNTS = [345043375299837213698988n, 120000000000000000000001n, 7777777777777777777777n, 1n];
const TIMELOCK_MIN_DELAY = 60n; // seconds

const DESCRIPTION_A = "# Proposal A\nFund the test grants program.";
const DESCRIPTION_B = "# Proposal B\nRaise the grants budget for next quarter.";
const DESCRIPTION_C = "# Proposal C\nPay the treasury, raise the quorum, add a proposer, and two calls of our own.";
const DESCRIPTION_D = "# Proposal D\nPay more than the treasury holds.";
// Tokens #1 moves to the timelock (the treasury) before C, more than C's transfer.
const TREASURY_FUNDING = 20000000000000000000000n;
// Made-up contracts for proposal C: no code is needed for a call to be proposed.
const UNKNOWN_TARGET = "0x00000000000000000000000000000000deadbeef";
const CUSTOM_TARGET = "0x0000000000000000000000000000000000000b0b";
// The ABI the test's DAO registry names for CUSTOM_TARGET.
const CUSTOM_ABI = [
  {
    type: "function",
    name: "setBudget",
    stateMutability: "nonpayable",
    inputs: [
      { name: "amount", type: "uint256" },
      { name: "memo", type: "string" },
    ],
    outputs: [],
  },
];

// IGovernor.ProposalState, in enum order.
const PROPOSAL_STATES = ["Pending", "Active", "Canceled", "Defeated", "Succeeded", "Queued", "Expired", "Executed"];
const AGAINST = 0;
const FOR = 1;
const ABSTAIN = 2;

async function compile() {
  const files = ["GovToken.sol", "GovGovernor.sol"];
  const input = solcInput(files, {
    "GovToken.sol": { GovToken: ["abi", "evm.bytecode.object"] },
    "GovGovernor.sol": { GovGovernor: ["abi", "evm.bytecode.object"] },
    [TIMELOCK_SOURCE]: { TimelockController: ["abi", "evm.bytecode.object"] },
  });

  // Only OpenZeppelin imports are resolved, from the pinned package in node_modules.
  const findImports = openZeppelinImports();
  const t0 = Date.now();
  const { output, version, cached } = await compileSolidity(input, findImports);
  const diagnostics = output.errors ?? [];
  // solc 0.8.37 warns about OpenZeppelin's own code ("at" becomes a keyword): count, don't print.
  const ozWarnings = diagnostics.filter((d) => d.severity !== "error" && d.sourceLocation?.file?.startsWith(OZ_PREFIX));
  for (const d of diagnostics) {
    if (!ozWarnings.includes(d)) log(`solc ${d.severity}: ${d.formattedMessage ?? d.message}`);
  }
  if (diagnostics.some((d) => d.severity === "error")) throw new Error("the contracts do not compile");
  const pick = (file, name) => {
    const c = output.contracts?.[file]?.[name];
    if (!c?.evm?.bytecode?.object) throw new Error(`solc produced no bytecode for ${name}`);
    return { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
  };
  const ozVersion = JSON.parse(
    readFileSync(fileURLToPath(new URL(`${OZ_PREFIX}package.json`, NODE_MODULES_DIR)), "utf8"),
  ).version;
  log(
    `compiled ${files.join(", ")} and TimelockController (OpenZeppelin ${ozVersion}) with solc ${version} ` +
      `${cached ? "(kept from an earlier run) " : ""}in ${Date.now() - t0} ms (${ozWarnings.length} warnings in OpenZeppelin sources not shown)`,
  );
  return {
    token: pick("GovToken.sol", "GovToken"),
    governor: pick("GovGovernor.sol", "GovGovernor"),
    timelock: pick(TIMELOCK_SOURCE, "TimelockController"),
  };
}

const DESCRIPTION_E = "# Proposal E\nSet the vault's rate, through its two proxies.";
// EIP-1967 slots: bytes32(uint256(keccak256('eip1967.proxy.implementation' | 'eip1967.proxy.beacon')) - 1).
const IMPLEMENTATION_SLOT = "0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc";
const BEACON_SLOT = "0xa3f0ad74e5423aebfd80d3ef4346578335a9a72aeaee59ff6cb3582b35133d50";

/** GovVault and OpenZeppelin's proxies in front of it (proposal D), compiled like `compile()`. */
async function compileProxies() {
  const sources = {
    transparent: [`${OZ_PREFIX}proxy/transparent/TransparentUpgradeableProxy.sol`, "TransparentUpgradeableProxy"],
    beacon: [`${OZ_PREFIX}proxy/beacon/UpgradeableBeacon.sol`, "UpgradeableBeacon"],
    beaconProxy: [`${OZ_PREFIX}proxy/beacon/BeaconProxy.sol`, "BeaconProxy"],
    vault: ["GovVault.sol", "GovVault"],
  };
  const selection = Object.fromEntries(Object.values(sources).map(([file, name]) => [file, { [name]: ["abi", "evm.bytecode.object"] }]));
  const input = solcInput(["GovVault.sol"], selection);
  const { output } = await compileSolidity(input, openZeppelinImports());
  const errors = (output.errors ?? []).filter((d) => d.severity === "error");
  for (const e of errors) log(`solc error: ${e.formattedMessage ?? e.message}`);
  if (errors.length) throw new Error("GovVault and the proxies do not compile");
  return Object.fromEntries(
    Object.entries(sources).map(([key, [file, name]]) => {
      const c = output.contracts?.[file]?.[name];
      if (!c?.evm?.bytecode?.object) throw new Error(`solc produced no bytecode for ${name}`);
      return [key, { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` }];
    }),
  );
}

/** The revert reason / custom error of a failed call or gas estimate, as readable as viem makes it. */
function describeError(err) {
  if (err instanceof BaseError) {
    const revert = err.walk((e) => e instanceof ContractFunctionRevertedError);
    if (revert instanceof ContractFunctionRevertedError) {
      const name = revert.data?.errorName ?? revert.reason ?? "revert";
      const detail = revert.data?.args ? `(${revert.data.args.map(String).join(", ")})` : "";
      return `reverted: ${name}${detail}`;
    }
    return err.shortMessage;
  }
  return err instanceof Error ? err.message : String(err);
}

run(async () => {
  const started = Date.now();
  const opts = args({ rpc: { type: "string" }, key: { type: "string" } }, USAGE);
  const rpc = checkUrl(required(opts, "rpc", USAGE), "rpc");
  const deployer = privateKeyToAccount(normalizeKey(opts.key ?? ANVIL_KEY_0));
  const holders = HOLDER_KEYS.map((k) => privateKeyToAccount(k));
  const [h1, h2, h3] = holders; // #4 holds 1 wei and never delegates

  const probe = createPublicClient({ transport: http(rpc) });
  const chainId = await probe.getChainId().catch((err) => {
    throw new Error(`cannot reach --rpc ${rpc}: ${describeError(err)}`);
  });
  const artifacts = await compile();
  const chain = localChain(rpc, chainId);
  const transport = http(rpc);
  const publicClient = createPublicClient({ chain, transport, pollingInterval: POLLING_INTERVAL_MS });
  const walletOf = (account) => createWalletClient({ account, chain, transport, pollingInterval: POLLING_INTERVAL_MS });
  const wallets = new Map([deployer, ...holders].map((a) => [a.address, walletOf(a)]));

  // Every ABI we know, so any log in any receipt can be named (for the stderr summary) and any
  // custom error decoded.
  const allAbi = [...artifacts.governor.abi, ...artifacts.timelock.abi, ...artifacts.token.abi];
  const receipts = [];

  /** Sends one transaction, waits for its receipt and fails clearly if it reverts. */
  async function send(label, account, request) {
    let hash;
    try {
      hash = request.bytecode
        ? await wallets.get(account.address).deployContract(request)
        : await wallets.get(account.address).writeContract(request);
    } catch (err) {
      throw new Error(`${label}: ${describeError(err)}`);
    }
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`${label}: transaction reverted (tx ${hash})`);
    receipts.push({ label, receipt });
    log(`${label}: block ${receipt.blockNumber}, tx ${hash}`);
    return receipt;
  }
  async function deploy(label, { abi, bytecode }, ctorArgs) {
    const receipt = await send(label, deployer, { abi, bytecode, args: ctorArgs });
    if (!receipt.contractAddress) throw new Error(`${label}: no contract address in the receipt`);
    return { receipt, address: receipt.contractAddress.toLowerCase() };
  }
  /** Mines `n` empty blocks (anvil only). */
  async function mine(n) {
    if (n <= 0n) return;
    try {
      await publicClient.request({ method: "anvil_mine", params: [toHex(n)] });
    } catch (err) {
      throw new Error(`anvil_mine failed (is --rpc an anvil node?): ${describeError(err)}`);
    }
  }
  /** Mines until the next transaction lands in block `target`. */
  async function mineUntilNextTxIn(target) {
    const head = await publicClient.getBlockNumber({ cacheTime: 0 }); // viem caches the head, and anvil_mine moves it
    await mine(target - 1n - head);
  }

  // --- Contracts -------------------------------------------------------------------------------
  const tokenDeploy = await deploy("deploy GovToken", artifacts.token, [holders.map((h) => h.address), HOLDER_AMOUNTS]);
  const token = { address: tokenDeploy.address, abi: artifacts.token.abi };
  const timelockDeploy = await deploy("deploy TimelockController", artifacts.timelock, [
    TIMELOCK_MIN_DELAY,
    [], // proposers: the governor, granted below once it exists
    [zeroAddress], // executors: anyone
    deployer.address, // temporary admin, renounced below
  ]);
  const timelock = { address: timelockDeploy.address, abi: artifacts.timelock.abi };
  const governorDeploy = await deploy("deploy GovGovernor", artifacts.governor, [token.address, timelock.address]);
  const governor = { address: governorDeploy.address, abi: artifacts.governor.abi };

  const read = (contract, functionName, a = []) =>
    publicClient.readContract({ address: contract.address, abi: contract.abi, functionName, args: a });
  const write = (label, account, contract, functionName, a) =>
    send(label, account, { address: contract.address, abi: contract.abi, functionName, args: a });

  const [proposerRole, cancellerRole, adminRole] = await Promise.all([
    read(timelock, "PROPOSER_ROLE"),
    read(timelock, "CANCELLER_ROLE"),
    read(timelock, "DEFAULT_ADMIN_ROLE"),
  ]);
  await write("timelock: grant PROPOSER_ROLE to governor", deployer, timelock, "grantRole", [proposerRole, governor.address]);
  await write("timelock: grant CANCELLER_ROLE to governor", deployer, timelock, "grantRole", [cancellerRole, governor.address]);
  await write("timelock: deployer renounces admin", deployer, timelock, "renounceRole", [adminRole, deployer.address]);

  // --- Delegations -----------------------------------------------------------------------------
  await write("#1 delegates to #1", h1, token, "delegate", [h1.address]);
  await write("#2 delegates to #2", h2, token, "delegate", [h2.address]);
  await write("#3 delegates to #1", h3, token, "delegate", [h1.address]);
  await mine(1n); // the delegations are now in a past block, before any proposal's snapshot

  // --- Proposals -------------------------------------------------------------------------------
  const proposals = [];
  async function propose(label, proposer, description, call) {
    const targets = [token.address];
    const values = [0n];
    const calldatas = [encodeFunctionData({ abi: token.abi, functionName: call.functionName, args: call.args })];
    const receipt = await write(label, proposer, governor, "propose", [targets, values, calldatas, description]);
    const created = decodeLogs(receipt, governor).find((e) => e.eventName === "ProposalCreated");
    if (!created) throw new Error(`${label}: no ProposalCreated event in the receipt`);
    const id = await read(governor, "getProposalId", [targets, values, calldatas, keccak256(toHex(description))]);
    if (created.args.proposalId !== id) throw new Error(`${label}: event id ${created.args.proposalId} != getProposalId ${id}`);
    if (created.args.description !== description) throw new Error(`${label}: event carries another description`);
    const p = { id, description, targets, values, calldatas, created: receipt, votes: [] };
    proposals.push(p);
    // Mine past the voting delay: the first vote lands right after the snapshot block.
    const snapshot = await read(governor, "proposalSnapshot", [id]);
    await mineUntilNextTxIn(snapshot + 1n);
    return p;
  }
  async function vote(label, voter, p, support, reason) {
    const receipt = await write(label, voter, governor, "castVoteWithReason", [p.id, support, reason]);
    const cast = decodeLogs(receipt, governor).find((e) => e.eventName === "VoteCast");
    if (!cast) throw new Error(`${label}: no VoteCast event in the receipt`);
    p.votes.push({ receipt, cast });
  }
  function decodeLogs(receipt, contract) {
    return receipt.logs
      .filter((l) => l.address.toLowerCase() === contract.address)
      .map((l) => {
        try {
          return decodeEventLog({ abi: contract.abi, data: l.data, topics: l.topics });
        } catch {
          return null;
        }
      })
      .filter(Boolean);
  }

  const a = await propose("#1 proposes A", h1, DESCRIPTION_A, { functionName: "transfer", args: [h1.address, 0n] });
  await vote("#1 votes For on A", h1, a, FOR, "Ship it");
  await vote("#2 votes Against on A", h2, a, AGAINST, "");
  // Mine past voteEnd so that a view call at the head already sees the outcome (eth_call runs in
  // the head block's context: at head == voteEnd the proposal is still Active).
  await mineUntilNextTxIn((await read(governor, "proposalDeadline", [a.id])) + 2n);
  const stateBeforeQueue = PROPOSAL_STATES[await read(governor, "state", [a.id])];
  if (stateBeforeQueue !== "Succeeded") throw new Error(`proposal A is ${stateBeforeQueue} after its deadline, not Succeeded`);
  a.queued = await write("queue A", deployer, governor, "queue", [
    a.targets,
    a.values,
    a.calldatas,
    keccak256(toHex(a.description)),
  ]);

  const b = await propose("#2 proposes B", h2, DESCRIPTION_B, { functionName: "approve", args: [h2.address, 0n] });
  await vote("#2 votes Abstain on B", h2, b, ABSTAIN, "Need more detail");

  // The treasury: #1 moves TREASURY_FUNDING of its tokens to the timelock, after A's and B's
  // snapshots (their tallies are fixed), so that C's transfer has something to pay with.
  await write("#1 funds the timelock", h1, token, "transfer", [timelock.address, TREASURY_FUNDING]);
  const treasury = await read(token, "balanceOf", [timelock.address]);
  if (treasury !== TREASURY_FUNDING) throw new Error(`the timelock holds ${treasury}, expected ${TREASURY_FUNDING}`);

  // C: what a proposal would do, decoded and simulated (issue 47). A treasury transfer from the
  // timelock, a quorum update on the governor, a role grant on the timelock, a call no ABI knows,
  // and a call to a contract whose ABI only the DAO registry has (`customAbi`, written by the
  // test). Never voted on: mined past its voting delay, it is left Active.
  const transferAmount = 12345678901234567890123n;
  const batch = [
    { target: token.address, value: 0n, abi: token.abi, functionName: "transfer", args: [h3.address, transferAmount] },
    { target: governor.address, value: 0n, abi: governor.abi, functionName: "updateQuorumNumerator", args: [5n] },
    { target: timelock.address, value: 0n, abi: timelock.abi, functionName: "grantRole", args: [proposerRole, h2.address] },
  ];
  const calls = batch.map((c) => ({ ...c, data: encodeFunctionData(c) }));
  // An unknown selector (no bundled interface has 0xdeadbeef) with one word of arguments.
  calls.push({ target: UNKNOWN_TARGET, value: 7n, data: `0xdeadbeef${"2a".padStart(64, "0")}` });
  const custom = { target: CUSTOM_TARGET, value: 0n, abi: CUSTOM_ABI, functionName: "setBudget", args: [4200000000000000000000n, "Q3 grants"] };
  calls.push({ ...custom, data: encodeFunctionData(custom) });
  const cTargets = calls.map((c) => c.target);
  const cValues = calls.map((c) => c.value);
  const cCalldatas = calls.map((c) => c.data);
  const cReceipt = await write("#1 proposes C", h1, governor, "propose", [cTargets, cValues, cCalldatas, DESCRIPTION_C]);
  const cCreated = decodeLogs(cReceipt, governor).find((e) => e.eventName === "ProposalCreated");
  if (!cCreated) throw new Error("#1 proposes C: no ProposalCreated event in the receipt");
  // What each call encodes, as the served answer should give it (addresses checksummed as viem
  // gives them, integers as decimal text, bytes32 as 0x-hex).
  const encodedOf = (c) => {
    if (!c.abi) return null;
    const fn = c.abi.find((f) => f.type === "function" && f.name === c.functionName);
    return {
      function: c.functionName,
      signature: `${c.functionName}(${fn.inputs.map((i) => i.type).join(",")})`,
      arguments: fn.inputs.map((input, i) => ({
        name: input.name,
        type: input.type,
        value: typeof c.args[i] === "bigint" ? c.args[i].toString() : c.args[i],
      })),
    };
  };
  const proposalC = {
    id: cCreated.args.proposalId.toString(),
    targets: cTargets.map((t) => t.toLowerCase()),
    values: cValues.map((v) => v.toString()),
    calldatas: cCalldatas,
    encoded: calls.map(encodedOf),
    createdBlock: Number(cReceipt.blockNumber),
    // What the simulation should show: the transfer's two balance changes, and the quorum and
    // the role granted.
    transfer: { token: token.address, from: timelock.address, to: h3.address.toLowerCase(), amount: transferAmount.toString() },
    quorumNumerator: "5",
    proposerRole,
    grantee: h2.address.toLowerCase(),
    unknownTarget: UNKNOWN_TARGET,
    unknownValue: "7",
  };
  await mineUntilNextTxIn((await read(governor, "proposalSnapshot", [cCreated.args.proposalId])) + 1n);

  // D: a transfer above the treasury's balance, whose simulation reverts with the token's
  // ERC20InsufficientBalance(timelock, balance, needed). Left Active, like C.
  const overdraft = TREASURY_FUNDING + 1n;
  const dCall = { abi: token.abi, functionName: "transfer", args: [h3.address, overdraft] };
  const dReceipt = await write("#2 proposes D", h2, governor, "propose", [[token.address], [0n], [encodeFunctionData(dCall)], DESCRIPTION_D]);
  const dCreated = decodeLogs(dReceipt, governor).find((e) => e.eventName === "ProposalCreated");
  if (!dCreated) throw new Error("#2 proposes D: no ProposalCreated event in the receipt");
  // Mine past the snapshot: a view call at the head sees Active only once the head is beyond it.
  await mineUntilNextTxIn((await read(governor, "proposalSnapshot", [dCreated.args.proposalId])) + 2n);
  const proposalD = {
    id: dCreated.args.proposalId.toString(),
    token: token.address,
    sender: timelock.address,
    balance: TREASURY_FUNDING.toString(),
    needed: overdraft.toString(),
  };

  // E: calls through proxies (issue 47). GovVault behind an OpenZeppelin
  // TransparentUpgradeableProxy (EIP-1967 implementation slot) and behind a BeaconProxy (EIP-1967
  // beacon slot, then the beacon's implementation()); E calls GovVault's setRate through each.
  // Only GovVault's verified ABI (`vaultAbi`, which the test's fake Sourcify serves for the
  // implementation's address) decodes these calls. Never voted on.
  const proxyArtifacts = await compileProxies();
  const vault = await deploy("deploy GovVault", proxyArtifacts.vault, []);
  // OpenZeppelin 5.7's proxies refuse to be left uninitialised: each starts with a first setRate.
  const init = encodeFunctionData({ abi: proxyArtifacts.vault.abi, functionName: "setRate", args: [1n, deployer.address] });
  const transparent = await deploy("deploy TransparentUpgradeableProxy(GovVault)", proxyArtifacts.transparent, [
    vault.address,
    deployer.address,
    init,
  ]);
  const beacon = await deploy("deploy UpgradeableBeacon(GovVault)", proxyArtifacts.beacon, [vault.address, deployer.address]);
  const beaconProxy = await deploy("deploy BeaconProxy", proxyArtifacts.beaconProxy, [beacon.address, init]);
  const slotAddress = async (address, slot) => {
    const word = await publicClient.getStorageAt({ address, slot });
    return `0x${word.slice(-40)}`;
  };
  if ((await slotAddress(transparent.address, IMPLEMENTATION_SLOT)) !== vault.address) {
    throw new Error("the transparent proxy's implementation slot does not hold GovVault");
  }
  if ((await slotAddress(beaconProxy.address, BEACON_SLOT)) !== beacon.address) {
    throw new Error("the beacon proxy's beacon slot does not hold the beacon");
  }
  const eCalls = [
    { target: transparent.address, value: 0n, abi: proxyArtifacts.vault.abi, functionName: "setRate", args: [250n, h2.address] },
    { target: beaconProxy.address, value: 0n, abi: proxyArtifacts.vault.abi, functionName: "setRate", args: [7n, h3.address] },
  ].map((c) => ({ ...c, data: encodeFunctionData(c) }));
  const eReceipt = await write("#1 proposes E", h1, governor, "propose", [
    eCalls.map((c) => c.target),
    eCalls.map((c) => c.value),
    eCalls.map((c) => c.data),
    DESCRIPTION_E,
  ]);
  const eCreated = decodeLogs(eReceipt, governor).find((e) => e.eventName === "ProposalCreated");
  if (!eCreated) throw new Error("#1 proposes E: no ProposalCreated event in the receipt");
  const proposalE = {
    id: eCreated.args.proposalId.toString(),
    targets: eCalls.map((c) => c.target.toLowerCase()),
    values: eCalls.map((c) => c.value.toString()),
    calldatas: eCalls.map((c) => c.data),
    encoded: eCalls.map(encodedOf),
    implementation: vault.address,
    beacon: beacon.address,
    createdBlock: Number(eReceipt.blockNumber),
  };

  // --- Read everything back ----------------------------------------------------------------------
  const head = await publicClient.getBlockNumber({ cacheTime: 0 }); // viem caches the head, and anvil_mine moves it
  const [tokenName, tokenSymbol, tokenDecimals, totalSupply] = await Promise.all([
    read(token, "name"),
    read(token, "symbol"),
    read(token, "decimals"),
    read(token, "totalSupply"),
  ]);
  const out = {
    chainId,
    governor: governor.address,
    token: token.address,
    timelock: timelock.address,
    tokenInfo: { name: tokenName, symbol: tokenSymbol, decimals: Number(tokenDecimals), totalSupply: totalSupply.toString() },
    deployBlock: Number(tokenDeploy.receipt.blockNumber),
    head: Number(head),
    proposals: [],
    delegates: [],
    holders: [],
    proposalC,
    proposalD,
    treasury: TREASURY_FUNDING.toString(),
    customAbi: { address: CUSTOM_TARGET.toLowerCase(), abi: CUSTOM_ABI },
    proposalE,
    vaultAbi: proxyArtifacts.vault.abi,
  };
  for (const p of proposals) {
    const [proposer, voteStart, voteEnd, stateIdx, eta, tally] = await Promise.all([
      read(governor, "proposalProposer", [p.id]),
      read(governor, "proposalSnapshot", [p.id]),
      read(governor, "proposalDeadline", [p.id]),
      read(governor, "state", [p.id]),
      read(governor, "proposalEta", [p.id]),
      read(governor, "proposalVotes", [p.id]),
    ]);
    const quorum = await read(governor, "quorum", [voteStart]); // 4% of the supply at the snapshot
    const votes = [];
    for (const { receipt, cast } of p.votes) {
      const { voter, proposalId, support, weight, reason } = cast.args;
      if (proposalId !== p.id) throw new Error(`VoteCast for ${proposalId}, expected ${p.id}`);
      const pastVotes = await read(token, "getPastVotes", [voter, voteStart]);
      if (pastVotes !== weight) throw new Error(`VoteCast weight ${weight} != getPastVotes ${pastVotes} for ${voter}`);
      if (!(await read(governor, "hasVoted", [p.id, voter]))) throw new Error(`hasVoted(${voter}) is false`);
      votes.push({
        voter: voter.toLowerCase(),
        support: Number(support),
        weight: weight.toString(),
        reason,
        block: Number(receipt.blockNumber),
        txHash: receipt.transactionHash,
      });
    }
    const [against, forVotes, abstain] = tally;
    out.proposals.push({
      id: p.id.toString(),
      proposer: proposer.toLowerCase(),
      description: p.description,
      voteStart: Number(voteStart),
      voteEnd: Number(voteEnd),
      state: PROPOSAL_STATES[stateIdx] ?? `Unknown(${stateIdx})`,
      targets: p.targets.map((t) => t.toLowerCase()),
      values: p.values.map((v) => v.toString()),
      calldatas: p.calldatas,
      createdBlock: Number(p.created.blockNumber),
      createdTxHash: p.created.transactionHash,
      queuedBlock: p.queued ? Number(p.queued.blockNumber) : null,
      queuedTxHash: p.queued ? p.queued.transactionHash : null,
      eta: eta.toString(), // timelock ready time in seconds (0 when not queued); varies between runs
      quorum: quorum.toString(),
      tally: { against: against.toString(), for: forVotes.toString(), abstain: abstain.toString() },
      votes,
    });
  }
  for (const d of [h1, h2]) {
    out.delegates.push({ address: d.address.toLowerCase(), votes: (await read(token, "getVotes", [d.address])).toString() });
  }
  for (const h of holders) {
    const [balance, delegate, votes] = await Promise.all([
      read(token, "balanceOf", [h.address]),
      read(token, "delegates", [h.address]),
      read(token, "getVotes", [h.address]),
    ]);
    out.holders.push({
      address: h.address.toLowerCase(),
      balance: balance.toString(),
      delegate: delegate.toLowerCase(),
      votes: votes.toString(),
    });
  }

  // Sanity: the scenario the tests rely on.
  const [outA, outB] = out.proposals;
  if (outA.state !== "Queued") throw new Error(`proposal A is ${outA.state}, expected Queued`);
  if (outB.state !== "Active") throw new Error(`proposal B is ${outB.state}, expected Active`);
  HOLDER_AMOUNTS.forEach((amount, i) => {
    const expected = i === 0 ? amount - TREASURY_FUNDING : amount; // #1 funded the timelock
    if (out.holders[i].balance !== expected.toString()) throw new Error(`holder #${i + 1} balance ${out.holders[i].balance} != ${expected}`);
  });
  for (const [label, id] of [["C", proposalC.id], ["D", proposalD.id]]) {
    const state = PROPOSAL_STATES[await read(governor, "state", [BigInt(id)])];
    if (state !== "Active") throw new Error(`proposal ${label} is ${state}, expected Active`);
  }

  // Which events the scenario emitted, by contract and topic0 (for whoever writes the decoder).
  const seen = new Map();
  const names = new Map([
    [token.address, "token"],
    [timelock.address, "timelock"],
    [governor.address, "governor"],
  ]);
  for (const { receipt } of receipts) {
    for (const l of receipt.logs) {
      let name = "?";
      try {
        name = decodeEventLog({ abi: allAbi, data: l.data, topics: l.topics }).eventName;
      } catch {}
      const key = `${names.get(l.address.toLowerCase()) ?? l.address} ${name} ${l.topics[0]}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
  }
  for (const [key, n] of seen) log(`event ${key} x${n}`);
  log(`done in ${Date.now() - started} ms: A ${outA.state}, B ${outB.state}, head ${out.head}`);
  emit(out);
});
