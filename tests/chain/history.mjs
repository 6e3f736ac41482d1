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
// Then the governor's turn: every holder delegates to itself, and four proposals follow:
//   A: the largest holder splits part of its weight (support 255, against/for/abstain in params),
//      then casts the rest For; the second holder votes Against, the third Abstain; A ends.
//   B: raises the quorum numerator from 4% to 10% (`updateQuorumNumerator`), passes and is executed.
//   C: only an Against vote: the quorum (now 10%) is not reached, and C is defeated.
//   D: canceled by its proposer while pending.
// Every figure of each proposal is read back from the governor's views.
// stdout: {"chainId":…,"token":"0x…","governor":"0x…","deployBlock":…,"head":…,"decimals":18,
//          "accounts":["0x…",…],"steps":[{"block":…,"label":"…","delegates":{a:d},"pastVotes":{a:"…"}}],
//          "final":{"votes":{a:"…"},"delegates":{a:d}},"events":{"DelegateChanged":n,"DelegateVotesChanged":n},
//          "countingMode":"…","clockMode":"…","proposals":[{"id":"…","state":"Succeeded","snapshot":n,
//          "quorum":"…","tally":{"against":"…","for":"…","abstain":"…"},"votes":[{"voter":"0x…","weight":"…",
//          "parts":{"against":"…","for":"…","abstain":"…"}}]}]}
import { POLLING_INTERVAL_MS, args, checkUrl, compileSolidity, emit, localChain, log, required, run, solcInput, openZeppelinImports } from "./lib/common.mjs";
import {
  createPublicClient,
  createWalletClient,
  decodeEventLog,
  encodeFunctionData,
  http,
  keccak256,
  toHex,
  zeroAddress,
} from "viem";
import { mnemonicToAccount } from "viem/accounts";

const USAGE = `usage: history.mjs --rpc URL [--seed N] [--steps N]
  --rpc    a running anvil (it must accept anvil_mine and evm_setAutomine)
  --seed   the random history to script (default 1)
  --steps  how many steps (default 40)`;

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

async function compile() {
  const files = ["GovToken.sol", "GovFractional.sol"];
  const input = solcInput(files, {
    "GovToken.sol": { GovToken: ["abi", "evm.bytecode.object"] },
    "GovFractional.sol": { GovFractional: ["abi", "evm.bytecode.object"] },
  });
  const { output } = await compileSolidity(input, openZeppelinImports());
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
  const artifacts = await compile();
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


  // --- The governor ---------------------------------------------------------------------------
  const PROPOSAL_STATES = ["Pending", "Active", "Canceled", "Defeated", "Succeeded", "Queued", "Expired", "Executed"];
  const gov = { address: governor.address, abi: artifacts.governor.abi };
  const greadAt = (fn, a) => client.readContract({ address: gov.address, abi: gov.abi, functionName: fn, args: a });
  async function gsend(label, account, functionName, a) {
    const hash = await wallet(account).writeContract({ address: gov.address, abi: gov.abi, functionName, args: a });
    const receipt = await client.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`${label}: reverted (tx ${hash})`);
    count(receipt);
    log(`${label}: block ${receipt.blockNumber}`);
    return receipt;
  }
  for (const h of holders) {
    const hash = await wallet(h).writeContract({ address: token.address, abi: token.abi, functionName: "delegate", args: [h.address] });
    count(await client.waitForTransactionReceipt({ hash }));
  }
  await mine(1);
  const byBalance = [...holders].filter((h) => balances.get(h.address) > 0n).sort((x, y) => (balances.get(y.address) > balances.get(x.address) ? 1 : -1));
  if (byBalance.length < 3) throw new Error("fewer than three holders hold tokens");
  const [big, second, third] = byBalance;
  const proposals = [];
  const pack = (a, f, x) => `0x${[a, f, x].map((v) => v.toString(16).padStart(32, "0")).join("")}`;
  async function propose(label, description, call) {
    const targets = [call.address];
    const values = [0n];
    const calldatas = [encodeFunctionData({ abi: call.abi, functionName: call.functionName, args: call.args })];
    await gsend(label, big, "propose", [targets, values, calldatas, description]);
    const id = await greadAt("getProposalId", [targets, values, calldatas, keccak256(toHex(description))]);
    const p = { id, label, targets, values, calldatas, description, votes: new Map() };
    proposals.push(p);
    return p;
  }
  async function toVoting(p) {
    const snapshot = await greadAt("proposalSnapshot", [p.id]);
    await mine(Number(snapshot + 1n - (await head())));
  }
  async function toEnd(p) {
    const deadline = await greadAt("proposalDeadline", [p.id]);
    await mine(Number(deadline + 2n - (await head())));
  }
  async function cast(p, voter, fn, a) {
    const receipt = await gsend(`${p.label}: vote ${fn}`, voter, fn, [p.id, ...a]);
    for (const l of receipt.logs) {
      if (l.address.toLowerCase() !== gov.address) continue;
      const e = decodeEventLog({ abi: gov.abi, data: l.data, topics: l.topics });
      if (e.eventName !== "VoteCast" && e.eventName !== "VoteCastWithParams") continue;
      const v = p.votes.get(e.args.voter.toLowerCase()) ?? { weight: 0n, parts: [0n, 0n, 0n] };
      v.weight += e.args.weight;
      if (e.args.support === 255) {
        const hex = e.args.params.slice(2);
        for (let i = 0; i < 3; i++) v.parts[i] += BigInt(`0x${hex.slice(i * 32, i * 32 + 32)}`);
      } else {
        v.parts[e.args.support] += e.args.weight;
      }
      p.votes.set(e.args.voter.toLowerCase(), v);
    }
    return receipt;
  }
  const transferNothing = { address: token.address, abi: token.abi, functionName: "transfer", args: [big.address, 0n] };

  const a = await propose("A", "# Proposal A\nSplit the vote.", transferNothing);
  await toVoting(a);
  const w = balances.get(big.address);
  const split = await cast(a, big, "castVoteWithReasonAndParams", [255, "Split", pack(w / 4n, w / 2n, w / 8n)]);
  // The block of the first part of a split vote: a reader that stops here sees half a vote.
  const splitAt = { block: Number(split.blockNumber), voter: big.address.toLowerCase(), weight: (w / 4n + w / 2n + w / 8n).toString() };
  await cast(a, big, "castVote", [1]);
  await cast(a, second, "castVoteWithReason", [0, "Against"]);
  await cast(a, third, "castVote", [2]);
  await toEnd(a);

  const b = await propose("B", "# Proposal B\nRaise the quorum to 10%.", {
    address: gov.address,
    abi: gov.abi,
    functionName: "updateQuorumNumerator",
    args: [10n],
  });
  await toVoting(b);
  for (const v of byBalance) await cast(b, v, "castVote", [1]);
  await toEnd(b);
  await gsend("B: execute", big, "execute", [b.targets, b.values, b.calldatas, keccak256(toHex(b.description))]);

  const c = await propose("C", "# Proposal C\nOnly against.", transferNothing);
  await toVoting(c);
  await cast(c, third, "castVote", [0]);
  await toEnd(c);

  const d = await propose("D", "# Proposal D\nWithdrawn.", transferNothing);
  await gsend("D: cancel", big, "cancel", [d.targets, d.values, d.calldatas, keccak256(toHex(d.description))]);
  await mine(1);

  const governance = { countingMode: await greadAt("COUNTING_MODE", []), clockMode: await greadAt("CLOCK_MODE", []), proposals: [] };
  for (const p of proposals) {
    const [stateIdx, snapshot, tally] = await Promise.all([
      greadAt("state", [p.id]),
      greadAt("proposalSnapshot", [p.id]),
      greadAt("proposalVotes", [p.id]),
    ]);
    const quorum = await greadAt("quorum", [snapshot]);
    const votes = [];
    for (const [voter, v] of p.votes) {
      const past = await read("getPastVotes", [voter, snapshot]);
      if (past !== v.weight) throw new Error(`${p.label}: ${voter} cast ${v.weight}, getPastVotes says ${past}`);
      const used = await greadAt("usedVotes", [p.id, voter]);
      if (used !== v.weight) throw new Error(`${p.label}: usedVotes ${used} != ${v.weight}`);
      votes.push({ voter, weight: v.weight.toString(), parts: { against: v.parts[0].toString(), for: v.parts[1].toString(), abstain: v.parts[2].toString() } });
    }
    const [against, forVotes, abstain] = tally;
    governance.proposals.push({
      id: p.id.toString(),
      label: p.label,
      state: PROPOSAL_STATES[stateIdx],
      snapshot: Number(snapshot),
      quorum: quorum.toString(),
      tally: { against: against.toString(), for: forVotes.toString(), abstain: abstain.toString() },
      votes,
    });
  }
  const states = governance.proposals.map((p) => p.state).join(",");
  if (states !== "Succeeded,Executed,Defeated,Canceled" && states !== "Defeated,Executed,Defeated,Canceled") {
    throw new Error(`unexpected proposal states ${states}`);
  }
  await mine(1);

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
    const replayed = (changes.filter((c) => c.args.delegator.toLowerCase() === k).at(-1)?.args.toDelegate ?? zeroAddress).toLowerCase();
    if (final.delegates[k] !== replayed) throw new Error(`replayed delegate of ${k} differs`);
    if (BigInt(final.balances[k]) !== balances.get(a)) throw new Error(`balance of ${k} differs from the script's`);
  }
  const out = {
    chainId,
    token: token.address,
    governor: governor.address,
    deployBlock: Number(tokenDeploy.receipt.blockNumber),
    head: Number(await head()),
    decimals: Number(await read("decimals", [])),
    splitAt,
    accounts: accounts.map((a) => a.toLowerCase()),
    steps: timeline,
    final,
    events: counts,
    ...governance,
  };
  log(`seed ${seed}: ${steps} steps, ${counts.DelegateChanged} DelegateChanged, ${counts.DelegateVotesChanged} DelegateVotesChanged, head ${out.head}, ${Date.now() - started} ms`);
  emit(out);
});
