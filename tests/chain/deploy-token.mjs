#!/usr/bin/env node
// Compiles contracts/TestUSDC.sol with the bundled solc-js (no network), deploys it from the
// given key (anvil account #0 by default) and mints 1000 USDC to the payer (anvil account #1).
// Also installs contracts/Multicall3Lite.sol at Multicall3's canonical address (anvil_setCode)
// so the facilitator's failure diagnostics work as on a public chain.
// stdout: {"asset":"0x…","name":"USDC","version":"2","decimals":6,"chainId":84532}
import { ANVIL_ADDR_1, ANVIL_KEY_0, POLLING_INTERVAL_MS, args, checkUrl, emit, localChain, log, normalizeAddress, normalizeKey, required, run, solcInput, compileSolidity } from "./lib/common.mjs";
import { createPublicClient, createWalletClient, getAddress, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";

const USAGE = `usage: deploy-token.mjs --rpc URL [--key HEX] [--payer ADDR] [--amount ATOMIC] [--name NAME] [--token-version VERSION]
  --key            deployer key (default: anvil account #0)
  --payer          receives the minted tokens (default: anvil account #1 ${ANVIL_ADDR_1})
  --amount         atomic units to mint (default: 1000000000 = 1000 USDC)
  --name           EIP-712 domain name (default: USDC)
  --token-version  EIP-712 domain version (default: 2)`;

// Canonical Multicall3 address (present on Base Sepolia; absent on a fresh anvil).
const MULTICALL3_ADDRESS = "0xcA11bde05977b3631167028862bE2a173976CA11";

async function compile() {
  const files = ["TestUSDC.sol", "Multicall3Lite.sol"];
  const input = solcInput(files, {
    "TestUSDC.sol": { TestUSDC: ["abi", "evm.bytecode.object"] },
    "Multicall3Lite.sol": { Multicall3Lite: ["evm.deployedBytecode.object"] },
  });

  const t0 = Date.now();
  const { output, version, cached } = await compileSolidity(input);
  const diagnostics = output.errors ?? [];
  for (const d of diagnostics) log(`solc ${d.severity}: ${d.formattedMessage ?? d.message}`);
  if (diagnostics.some((d) => d.severity === "error")) throw new Error("the contracts do not compile");
  const token = output.contracts?.["TestUSDC.sol"]?.TestUSDC;
  const multicall = output.contracts?.["Multicall3Lite.sol"]?.Multicall3Lite;
  if (!token?.evm?.bytecode?.object) throw new Error("solc produced no bytecode for TestUSDC");
  if (!multicall?.evm?.deployedBytecode?.object) throw new Error("solc produced no bytecode for Multicall3Lite");
  log(`compiled ${files.join(", ")} with solc ${version} ${cached ? "(kept from an earlier run) " : ""}in ${Date.now() - t0} ms`);
  return {
    abi: token.abi,
    bytecode: `0x${token.evm.bytecode.object}`,
    multicallRuntime: `0x${multicall.evm.deployedBytecode.object}`,
  };
}

/** Gives the local chain a Multicall3 (only `tryAggregate`), as Base Sepolia has one. Best effort. */
async function ensureMulticall3(publicClient, runtimeCode) {
  const code = await publicClient.getCode({ address: MULTICALL3_ADDRESS });
  if (code && code !== "0x") return;
  try {
    await publicClient.request({ method: "anvil_setCode", params: [MULTICALL3_ADDRESS, runtimeCode] });
    log(`installed Multicall3Lite at ${MULTICALL3_ADDRESS}`);
  } catch (err) {
    log(`warning: could not install Multicall3 (not anvil?): ${err.shortMessage ?? err.message}`);
  }
}

run(async () => {
  const opts = args(
    {
      rpc: { type: "string" },
      key: { type: "string" },
      payer: { type: "string" },
      amount: { type: "string" },
      name: { type: "string" },
      "token-version": { type: "string" },
    },
    USAGE,
  );
  const rpc = checkUrl(required(opts, "rpc", USAGE), "rpc");
  const key = normalizeKey(opts.key ?? ANVIL_KEY_0);
  const payer = normalizeAddress(opts.payer ?? ANVIL_ADDR_1, "payer");
  if (opts.amount !== undefined && !/^[0-9]+$/.test(opts.amount)) throw new Error("--amount must be a decimal integer");
  const amount = BigInt(opts.amount ?? "1000000000");
  const name = opts.name ?? "USDC";
  const version = opts["token-version"] ?? "2";

  const { abi, bytecode, multicallRuntime } = await compile();

  const probe = createPublicClient({ transport: http(rpc) });
  const chainId = await probe.getChainId();
  const chain = localChain(rpc, chainId);
  const transport = http(rpc);
  const publicClient = createPublicClient({ chain, transport, pollingInterval: POLLING_INTERVAL_MS });
  const account = privateKeyToAccount(key);
  const wallet = createWalletClient({ account, chain, transport, pollingInterval: POLLING_INTERVAL_MS });
  await ensureMulticall3(publicClient, multicallRuntime);

  const deployHash = await wallet.deployContract({ abi, bytecode, args: [name, version] });
  const deployReceipt = await publicClient.waitForTransactionReceipt({ hash: deployHash });
  if (deployReceipt.status !== "success" || !deployReceipt.contractAddress) {
    throw new Error(`deployment reverted (tx ${deployHash})`);
  }
  const asset = getAddress(deployReceipt.contractAddress); // EIP-55 checksummed
  log(`deployed TestUSDC at ${asset} (tx ${deployHash}, chain ${chainId}, deployer ${account.address})`);

  const mintHash = await wallet.writeContract({ address: asset, abi, functionName: "mint", args: [payer, amount] });
  const mintReceipt = await publicClient.waitForTransactionReceipt({ hash: mintHash });
  if (mintReceipt.status !== "success") throw new Error(`mint reverted (tx ${mintHash})`);

  // Read back what the clients and the facilitator will rely on.
  const read = (functionName, a = []) => publicClient.readContract({ address: asset, abi, functionName, args: a });
  const [onName, onVersion, decimals, balance] = await Promise.all([
    read("name"),
    read("version"),
    read("decimals"),
    read("balanceOf", [payer]),
  ]);
  if (onName !== name || onVersion !== version) throw new Error(`token reports name/version ${onName}/${onVersion}`);
  if (balance < amount) throw new Error(`payer balance ${balance} < minted ${amount}`);
  log(`minted ${amount} to ${payer} (tx ${mintHash}); payer balance ${balance}`);

  emit({ asset, name: onName, version: onVersion, decimals: Number(decimals), chainId });
});
