#!/usr/bin/env node
// Reads an ERC-20 balance. stdout: {"balance":"<atomic units, decimal string>"}
import { POLLING_INTERVAL_MS, args, checkUrl, emit, normalizeAddress, required, run } from "./lib/common.mjs";
import { createPublicClient, erc20Abi, http } from "viem";

const USAGE = "usage: balance.mjs --rpc URL --asset ADDR --address ADDR";

run(async () => {
  const opts = args({ rpc: { type: "string" }, asset: { type: "string" }, address: { type: "string" } }, USAGE);
  const rpc = checkUrl(required(opts, "rpc", USAGE), "rpc");
  const asset = normalizeAddress(required(opts, "asset", USAGE), "asset");
  const address = normalizeAddress(required(opts, "address", USAGE), "address");
  const client = createPublicClient({ transport: http(rpc), pollingInterval: POLLING_INTERVAL_MS });
  const balance = await client.readContract({ address: asset, abi: erc20Abi, functionName: "balanceOf", args: [address] });
  emit({ balance: balance.toString() });
});
