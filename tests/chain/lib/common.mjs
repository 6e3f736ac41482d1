// Shared helpers for the chain test scripts. Contract of every script:
//   - exactly ONE line of JSON on stdout, written with `emit()` when the result is known;
//   - every log line goes to stderr (console.log/info/debug are redirected there, because
//     some libraries log with console.log and would otherwise corrupt stdout);
//   - on failure: a message on stderr and a non-zero exit code (`fail()`).
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { defineChain } from "viem";

// Must run before any library gets a chance to log.
console.log = (...args) => console.error(...args);
console.info = (...args) => console.error(...args);
console.debug = (...args) => console.error(...args);

// Anvil's default mnemonic, account #0: deployer and facilitator signer.
export const ANVIL_KEY_0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
// Account #1: the payer.
export const ANVIL_ADDR_1 = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

export const LOCAL_CHAIN_ID = 84532; // same id as Base Sepolia: the x402 clients map it to "base-sepolia"
export const NETWORK_V1 = "base-sepolia";
export const NETWORK_V2 = `eip155:${LOCAL_CHAIN_ID}`;

const scriptName = process.argv[1]?.split("/").pop() ?? "script";

export function log(...args) {
  console.error(`[${scriptName}]`, ...args);
}

let emitted = false;
/** Prints the single JSON result line on stdout (bigints become decimal strings). */
export function emit(obj) {
  if (emitted) throw new Error("emit() called twice");
  emitted = true;
  process.stdout.write(JSON.stringify(obj, jsonReplacer) + "\n");
}

export function jsonReplacer(_key, value) {
  return typeof value === "bigint" ? value.toString() : value;
}

export function fail(message, code = 1) {
  console.error(`[${scriptName}] error: ${message}`);
  process.exit(code);
}

/** Runs `main`, turning any throw/rejection into `fail()`. */
export function run(main) {
  Promise.resolve()
    .then(main)
    .catch((err) => fail(err instanceof Error ? err.stack || err.message : String(err)));
}

/** node:util parseArgs with errors reported through fail(). `options` as for parseArgs. */
export function args(options, usage) {
  try {
    const { values } = parseArgs({ options: { help: { type: "boolean" }, ...options }, strict: true });
    if (values.help) {
      console.error(usage);
      process.exit(0);
    }
    return values;
  } catch (err) {
    fail(`${err.message}\n${usage}`, 2);
  }
}

export function required(values, name, usage) {
  const v = values[name];
  if (v === undefined || v === "") fail(`missing --${name}\n${usage}`, 2);
  return v;
}

/** Accepts a 32-byte private key with or without 0x. */
export function normalizeKey(key) {
  const k = key.startsWith("0x") || key.startsWith("0X") ? key.slice(2) : key;
  if (!/^[0-9a-fA-F]{64}$/.test(k)) fail("--key must be a 32-byte hex private key", 2);
  return `0x${k.toLowerCase()}`;
}

export function normalizeAddress(addr, flag) {
  if (!/^0x[0-9a-fA-F]{40}$/.test(addr)) fail(`--${flag} must be a 0x-prefixed 20-byte hex address`, 2);
  return addr;
}

export function checkUrl(url, flag) {
  try {
    const u = new URL(url);
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("not http(s)");
    return url;
  } catch {
    fail(`--${flag} must be an http(s) URL, got ${JSON.stringify(url)}`, 2);
  }
}

/**
 * A viem chain for the local anvil node. Deliberately NOT viem's `baseSepolia`: that one carries
 * OP-stack formatters and a public RPC URL. Same id, so the x402 packages treat it as Base Sepolia.
 */
export function localChain(rpcUrl, id = LOCAL_CHAIN_ID) {
  return defineChain({
    id,
    name: `Local anvil (chain id ${id})`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
    testnet: true,
  });
}

/** Anvil mines on submission; poll receipts fast instead of viem's 4 s default. */
export const POLLING_INTERVAL_MS = 50;

/** The project's own contracts (tests/chain/contracts/). */
export const CONTRACTS_DIR = new URL("../contracts/", import.meta.url);

/**
 * solc standard-JSON input for `files` of contracts/, with the settings every script compiles
 * with: optimizer on, and the EVM version pinned so the bytecode runs on any anvil hardfork
 * from cancun on.
 */
export function solcInput(files, outputSelection) {
  return {
    language: "Solidity",
    sources: Object.fromEntries(
      files.map((f) => [f, { content: readFileSync(fileURLToPath(new URL(f, CONTRACTS_DIR)), "utf8") }]),
    ),
    settings: { optimizer: { enabled: true, runs: 200 }, evmVersion: "cancun", outputSelection },
  };
}

/** `--header NAME:VALUE` values as a plain object (x402-fetch spreads init.headers, which loses a
 * Headers instance). */
export function parseHeaders(list) {
  const headers = {};
  for (const h of list ?? []) {
    const i = h.indexOf(":");
    if (i <= 0) fail(`--header must be NAME:VALUE, got ${JSON.stringify(h)}`, 2);
    headers[h.slice(0, i).trim()] = h.slice(i + 1).trim();
  }
  return headers;
}

/** tests/chain/node_modules/ (the packages pinned by package-lock.json). */
export const NODE_MODULES_DIR = new URL("../node_modules/", import.meta.url);
/** Where compiled contracts are kept between scripts: the repository's target/ (never committed). */
const SOLC_CACHE_DIR = new URL("../../../target/solc-cache/", import.meta.url);

const sha256 = (text) => createHash("sha256").update(text).digest("hex");

/**
 * solc's standard-JSON output for `input`, its imports resolved by `findImports` (none when
 * absent): `{ output, version, cached }`. Compiled once, then read from target/solc-cache/
 * (tests/chain/README.md, "Compiled once", says why and what it cost). An entry is named by the
 * hash of the solc package's version and the input (the project's contracts are in it), and
 * holds the hash of every file the compile imported: when one of them reads back different
 * (another OpenZeppelin), the sources are compiled anew. Entries are written whole (a temporary
 * file, then a rename), so scripts running side by side never read half of one; a compile with
 * errors is not kept.
 */
export async function compileSolidity(input, findImports) {
  const solcPackage = JSON.parse(readFileSync(fileURLToPath(new URL("solc/package.json", NODE_MODULES_DIR)), "utf8"));
  const text = JSON.stringify(input);
  const entryFile = fileURLToPath(new URL(`${sha256(`solc ${solcPackage.version}\n${text}`)}.json`, SOLC_CACHE_DIR));
  const importedHash = (path) => {
    const found = findImports?.(path);
    return found?.contents === undefined ? null : sha256(found.contents);
  };
  try {
    const entry = JSON.parse(readFileSync(entryFile, "utf8"));
    if (Object.entries(entry.imports).every(([path, hash]) => importedHash(path) === hash)) {
      return { output: entry.output, version: entry.version, cached: true };
    }
  } catch {
    // No entry yet (or an unreadable one): compiled below.
  }
  const { default: solc } = await import("solc");
  const imports = {};
  const recording = (path) => {
    const found = findImports(path);
    if (found.contents !== undefined) imports[path] = sha256(found.contents);
    return found;
  };
  const output = JSON.parse(solc.compile(text, findImports ? { import: recording } : undefined));
  const version = solc.version();
  if (!(output.errors ?? []).some((d) => d.severity === "error")) {
    mkdirSync(fileURLToPath(SOLC_CACHE_DIR), { recursive: true });
    const partial = `${entryFile}.${process.pid}.tmp`;
    writeFileSync(partial, JSON.stringify({ version, imports, output }));
    renameSync(partial, entryFile);
  }
  return { output, version, cached: false };
}

/** The pinned OpenZeppelin package's sources, for solc's import callback: only
 * `@openzeppelin/contracts/…` imports are resolved, from tests/chain/node_modules (no network). */
export function openZeppelinImports() {
  const prefix = "@openzeppelin/contracts/";
  return (path) => {
    if (!path.startsWith(prefix) || path.includes("..")) return { error: `import not allowed: ${path}` };
    try {
      return { contents: readFileSync(fileURLToPath(new URL(path, NODE_MODULES_DIR)), "utf8") };
    } catch (err) {
      return { error: `cannot read ${path} (run npm install in tests/chain): ${err.message}` };
    }
  };
}
