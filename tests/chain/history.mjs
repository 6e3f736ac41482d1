#!/usr/bin/env node
// Scripts a random delegation history on a running anvil, for tests that ingest it and compare
// every served figure with what the token's own view functions return. Compiles
// contracts/GovToken.sol (OpenZeppelin ERC20Votes) and contracts/GovFractional.sol (a Governor
// with GovernorCountingFractional) with the bundled solc-js, deploys both, then runs `--steps`
// random steps drawn from `--seed` (the same seed scripts the same history):
//   - a transfer of part of a holder's balance to another account (moving delegated votes when
//     the two have different delegates), sometimes to an account that never held tokens;
//   - a delegation to oneself or another account, a re-delegation, or a withdrawal (delegating
//     to the zero address);
//   - now and then two of these in one block (automine paused), so logs share a block;
//   - empty blocks between steps.
// After every step it records the block, and once the chain has moved past it, reads back
// `delegates(a)` and `getPastVotes(a, block)` for every account at that block.
// stdout: {"chainId":…,"token":"0x…","governor":"0x…","deployBlock":…,"head":…,"decimals":18,
//          "accounts":["0x…",…],"steps":[{"block":…,"label":"…","delegates":{a:d},"pastVotes":{a:"…"}}],
//          "final":{"votes":{a:"…"},"delegates":{a:d}},"events":{"DelegateChanged":n,"DelegateVotesChanged":n}}
import { POLLING_INTERVAL_MS, args, checkUrl, emit, localChain, log, required, run, solcInput } from "./lib/common.mjs";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createPublicClient, createWalletClient, decodeEventLog, http, toHex, zeroAddress } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import solc from "solc";

const USAGE = `usage: history.mjs --rpc URL [--seed N] [--steps N]
  --rpc    a running anvil (it must accept anvil_mine and evm_setAutomine)
  --seed   the random history to script (default 1)
  --steps  how many steps (default 40)`;

const NODE_MODULES_DIR = new URL("./node_modules/", import.meta.url);
const OZ_PREFIX = "@openzeppelin/contracts/";
const MNEMONIC = "test test test test test test test test test test test junk"; // anvil's default
// Odd amounts beyond 2^64 and beyond f64's exact integers, for #1..#4; #5 and #6 start empty.
const AMOUNTS = [345043375299837213698988n, 120000000000000000000001n, 7777777777777777777777n, 1n, 0n, 0n];

/** mulberry32: a small seeded generator, so a seed always scripts the same history. */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function compile() {
  const files = ["GovToken.sol", "GovFractional.sol"];
  const input = solcInput(files, {
    "GovToken.sol": { GovToken: ["abi", "evm.bytecode.object"] },
    "GovFractional.sol": { GovFractional: ["abi", "evm.bytecode.object"] },
  });
  const findImports = (path) => {
    if (!path.startsWith(OZ_PREFIX) || path.includes("..")) return { error: `import not allowed: ${path}` };
    try {
      return { contents: readFileSync(fileURLToPath(new URL(path, NODE_MODULES_DIR)), "utf8") };
    } catch (err) {
      return { error: `cannot read ${path} (run npm install in tests/chain): ${err.message}` };
    }
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports }));
  const errors = (output.errors ?? []).filter((d) => d.severity === "error");
  for (const e of errors) log(`solc error: ${e.formattedMessage ?? e.message}`);
  if (errors.length) throw new Error("the contracts do not compile");
  const pick = (file, name) => {
    const c = output.contracts?.[file]?.[name];
    if (!c?.evm?.bytecode?.object) throw new Error(`solc produced no bytecode for ${name}`);
    return { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
  };
  return { token: pick("GovToken.sol", "GovToken"), governor: pick("GovFractional.sol", "GovFractional") };
}

run(async () => {
  const started = Date.now();
  const opts = args({ rpc: { type: "string" }, seed: { type: "string" }, steps: { type: "string" } }, USAGE);
  const rpc = checkUrl(required(opts, "rpc", USAGE), "rpc");
  const seed = Number(opts.seed ?? "1");
  const steps = Number(opts.steps ?? "40");
  if (!Number.isInteger(seed) || !Number.isInteger(steps) || steps < 1) throw new Error(USAGE);
  const rand = random(seed);
  const pick = (list) => list[Math.floor(rand() * list.length)];

  const probe = createPublicClient({ transport: http(rpc) });
  const chainId = await probe.getChainId();
  const chain = localChain(rpc, chainId);
  const transport = http(rpc);
  const client = createPublicClient({ chain, transport, pollingInterval: POLLING_INTERVAL_MS });
  const deployer = mnemonicToAccount(MNEMONIC, { addressIndex: 0 });
  const holders = AMOUNTS.map((_, i) => mnemonicToAccount(MNEMONIC, { addressIndex: i + 1 }));
  const wallet = (account) => createWalletClient({ account, chain, transport, pollingInterval: POLLING_INTERVAL_MS });
  const artifacts = compile();
  const counts = { DelegateChanged: 0, DelegateVotesChanged: 0 };

  const head = () => client.getBlockNumber({ cacheTime: 0 });
  const mine = (n) => (n > 0 ? client.request({ method: "anvil_mine", params: [toHex(n)] }) : null);
  const automine = (on) => client.request({ method: "evm_setAutomine", params: [on] });

  let token;
  const count = (receipt) => {
    for (const l of receipt.logs) {
      if (l.address.toLowerCase() !== token?.address) continue;
      try {
        const e = decodeEventLog({ abi: artifacts.token.abi, data: l.data, topics: l.topics });
        if (e.eventName in counts) counts[e.eventName] += 1;
      } catch {}
    }
  };
  async function deploy(label, { abi, bytecode }, ctorArgs) {
    const hash = await wallet(deployer).deployContract({ abi, bytecode, args: ctorArgs });
    const receipt = await client.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`${label} reverted`);
    return { receipt, address: receipt.contractAddress.toLowerCase(), abi };
  }
  const minted = holders.map((h, i) => [h.address, AMOUNTS[i]]).filter(([, a]) => a > 0n);
  const tokenDeploy = await deploy("GovToken", artifacts.token, [minted.map(([h]) => h), minted.map(([, a]) => a)]);
  token = tokenDeploy;
  count(tokenDeploy.receipt);
  const governor = await deploy("GovFractional", artifacts.governor, [token.address]);
  const read = (fn, a) => client.readContract({ address: token.address, abi: token.abi, functionName: fn, args: a });

  /** Sends the token calls `calls` ([account, functionName, args]) in one block. */
  async function block(label, calls) {
    if (calls.length > 1) await automine(false);
    const hashes = [];
    for (const [account, functionName, a] of calls) {
      hashes.push(await wallet(account).writeContract({ address: token.address, abi: token.abi, functionName, args: a }));
    }
    if (calls.length > 1) {
      await mine(1);
      await automine(true);
    }
    let at = null;
    for (const hash of hashes) {
      const receipt = await client.waitForTransactionReceipt({ hash });
      if (receipt.status !== "success") throw new Error(`${label}: reverted (tx ${hash})`);
      if (at !== null && receipt.blockNumber !== at) throw new Error(`${label}: the calls landed in different blocks`);
      at = receipt.blockNumber;
      count(receipt);
    }
    log(`${label}: block ${at}`);
    return at;
  }

  const balances = new Map(holders.map((h, i) => [h.address, AMOUNTS[i]]));
  const everyone = [...holders.map((h) => h.address), zeroAddress];
  /** One random call, sent by anyone but `busy` (already sending in this block). */
  function action(busy) {
    const senders = holders.filter((h) => h.address !== busy);
    const funded = senders.filter((h) => balances.get(h.address) > 0n);
    const kind = rand();
    if (kind < 0.45 && funded.length > 0) {
      const from = pick(funded);
      const to = pick(holders.filter((h) => h.address !== from.address));
      const balance = balances.get(from.address);
      // A random share of the balance, and now and then all of it.
      const amount = rand() < 0.15 ? balance : (balance * BigInt(Math.floor(rand() * 1000) + 1)) / 1000n;
      balances.set(from.address, balance - amount);
      balances.set(to.address, balances.get(to.address) + amount);
      return [from, "transfer", [to.address, amount], `#${holders.indexOf(from) + 1} sends ${amount} to #${holders.indexOf(to) + 1}`];
    }
    const who = pick(senders);
    const to = rand() < 0.12 ? zeroAddress : pick(everyone.filter((a) => a !== zeroAddress));
    return [who, "delegate", [to], `#${holders.indexOf(who) + 1} delegates to ${to === zeroAddress ? "nobody" : `#${holders.findIndex((h) => h.address === to) + 1}`}`];
  }

  const timeline = [];
  for (let i = 0; i < steps; i++) {
    const first = action(null);
    const calls = [first];
    // Now and then a second call in the same block, from another sender (each sender's nonce
    // stays simple).
    if (rand() < 0.2) calls.push(action(first[0].address));
    const at = await block(calls.map((c) => c[3]).join("; "), calls.map(([a, f, x]) => [a, f, x]));
    timeline.push({ block: at, label: calls.map((c) => c[3]).join("; ") });
    await mine(Math.floor(rand() * 3));
  }
  await mine(1); // every step's block is now in the past, where getPastVotes can read it

  const accounts = holders.map((h) => h.address);
  for (const step of timeline) {
    step.delegates = {};
    step.pastVotes = {};
    for (const a of accounts) {
      step.pastVotes[a.toLowerCase()] = (await read("getPastVotes", [a, step.block])).toString();
    }
  }
  // `delegates` has no past form: read it as the history stands at each step by replaying the
  // DelegateChanged logs, and check the replay against the current view at the end.
  const changes = await client.getContractEvents({
    address: token.address,
    abi: token.abi,
    eventName: "DelegateChanged",
    fromBlock: tokenDeploy.receipt.blockNumber,
    toBlock: "latest",
  });
  for (const step of timeline) {
    for (const a of accounts) {
      const mine = changes.filter((c) => c.args.delegator.toLowerCase() === a.toLowerCase() && c.blockNumber <= step.block);
      step.delegates[a.toLowerCase()] = (mine.at(-1)?.args.toDelegate ?? zeroAddress).toLowerCase();
    }
    step.block = Number(step.block);
  }
  const final = { votes: {}, delegates: {}, balances: {} };
  for (const a of accounts) {
    const k = a.toLowerCase();
    final.votes[k] = (await read("getVotes", [a])).toString();
    final.delegates[k] = (await read("delegates", [a])).toLowerCase();
    final.balances[k] = (await read("balanceOf", [a])).toString();
    if (final.delegates[k] !== timeline.at(-1).delegates[k]) throw new Error(`replayed delegate of ${k} differs`);
    if (BigInt(final.balances[k]) !== balances.get(a)) throw new Error(`balance of ${k} differs from the script's`);
  }
  const out = {
    chainId,
    token: token.address,
    governor: governor.address,
    deployBlock: Number(tokenDeploy.receipt.blockNumber),
    head: Number(await head()),
    decimals: Number(await read("decimals", [])),
    accounts: accounts.map((a) => a.toLowerCase()),
    steps: timeline,
    final,
    events: counts,
  };
  log(`seed ${seed}: ${steps} steps, ${counts.DelegateChanged} DelegateChanged, ${counts.DelegateVotesChanged} DelegateVotesChanged, head ${out.head}, ${Date.now() - started} ms`);
  emit(out);
});
