#!/usr/bin/env node
// One GET of --url through a real x402 client, paying from --key when the server answers 402.
//   --client v2: @x402/fetch (x402 v2: reads the PAYMENT-REQUIRED header, sends PAYMENT-SIGNATURE)
//                with @x402/evm's exact client scheme registered for eip155:84532 only.
//   --client v1: x402-fetch 1.x (x402 v1: reads the JSON body, sends X-PAYMENT) with a viem
//                wallet client on chain id 84532 ("base-sepolia").
// stdout: {"status":N,"body":<JSON or text>,"paymentResponseHeader":"PAYMENT-RESPONSE"|"X-PAYMENT-RESPONSE"|null,
//          "paymentResponse":<decoded header JSON>|null,"sentPaymentHeader":{"name","value"}|null}
//   or, when the client throws: {"error":"message"} and exit code 1.
// A non-2xx final status is not an error here: it is reported in "status" (exit 0).
import { POLLING_INTERVAL_MS, args, checkUrl, emit, fail, localChain, log, normalizeKey, parseHeaders, required, run } from "./lib/common.mjs";
import { createWalletClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";

const USAGE = `usage: pay.mjs --client v1|v2 --url URL --key HEX [--header NAME:VALUE]... [--max-amount ATOMIC] [--rpc URL] [--timeout-ms N]
  --header      extra request header (repeatable)
  --max-amount  refuse to pay more than this many atomic units (default 100000 = 0.10 USDC)
  --rpc         RPC URL for the v1 viem wallet client (never contacted to sign; default http://127.0.0.1:8545)
  --timeout-ms  overall request timeout (default 60000)`;

const PAYMENT_HEADERS = ["PAYMENT-SIGNATURE", "X-PAYMENT"];

function decodeBase64Json(value) {
  try {
    return JSON.parse(Buffer.from(value, "base64").toString("utf8"));
  } catch (err) {
    log(`could not decode payment response header: ${err.message}`);
    return null;
  }
}

run(async () => {
  const opts = args(
    {
      client: { type: "string" },
      url: { type: "string" },
      key: { type: "string" },
      header: { type: "string", multiple: true },
      "max-amount": { type: "string" },
      rpc: { type: "string" },
      "timeout-ms": { type: "string" },
    },
    USAGE,
  );
  const which = required(opts, "client", USAGE);
  if (which !== "v1" && which !== "v2") fail("--client must be v1 or v2", 2);
  const url = checkUrl(required(opts, "url", USAGE), "url");
  const account = privateKeyToAccount(normalizeKey(required(opts, "key", USAGE)));
  const headers = parseHeaders(opts.header);
  if (opts["max-amount"] !== undefined && !/^[0-9]+$/.test(opts["max-amount"])) fail("--max-amount must be a decimal integer", 2);
  const maxAmount = BigInt(opts["max-amount"] ?? "100000");
  const rpc = checkUrl(opts.rpc ?? "http://127.0.0.1:8545", "rpc");
  const timeoutMs = Number(opts["timeout-ms"] ?? "60000");
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) fail("--timeout-ms must be a positive integer", 2);

  // Wraps the real fetch so we see exactly what the x402 wrapper sends; the last request that
  // carries a payment header is the paid retry.
  let sentPaymentHeader = null;
  const recordingFetch = async (input, init) => {
    const seen = new Headers(input instanceof Request ? input.headers : undefined);
    if (init?.headers) new Headers(init.headers).forEach((v, k) => seen.set(k, v));
    const paidWith = PAYMENT_HEADERS.find((name) => seen.get(name));
    if (paidWith) sentPaymentHeader = { name: paidWith, value: seen.get(paidWith) };
    const method = input instanceof Request ? input.method : (init?.method ?? "GET");
    const target = input instanceof Request ? input.url : String(input);
    log(`${method} ${target}${paidWith ? ` with ${paidWith}` : ""}`);
    const res = await fetch(input, init);
    log(`<- ${res.status}`);
    return res;
  };

  let payingFetch;
  if (which === "v2") {
    const { wrapFetchWithPayment, x402Client } = await import("@x402/fetch");
    const { ExactEvmScheme } = await import("@x402/evm/exact/client");
    const client = new x402Client()
      .register("eip155:84532", new ExactEvmScheme(account))
      // The local token is not one of @x402/evm's default assets: allow any asset, and apply
      // our own cap instead of the USD cap that only covers default assets.
      .setSpendControls({ allowedAssets: true })
      .registerPolicy((_version, reqs) => reqs.filter((r) => BigInt(r.amount ?? r.maxAmountRequired) <= maxAmount));
    payingFetch = wrapFetchWithPayment(recordingFetch, client);
  } else {
    const { wrapFetchWithPayment } = await import("x402-fetch");
    // x402-fetch derives the network from wallet.chain.id (84532 -> "base-sepolia").
    const wallet = createWalletClient({ account, chain: localChain(rpc), transport: http(rpc), pollingInterval: POLLING_INTERVAL_MS });
    payingFetch = wrapFetchWithPayment(recordingFetch, wallet, maxAmount);
  }

  let response;
  let text;
  try {
    response = await payingFetch(url, { method: "GET", headers, signal: AbortSignal.timeout(timeoutMs) });
    text = await response.text();
  } catch (err) {
    let message = err instanceof Error ? err.message : String(err);
    if (err instanceof Error && err.cause) message += `: ${err.cause instanceof Error ? err.cause.message : String(err.cause)}`;
    log(`client error: ${err instanceof Error && err.stack ? err.stack : message}`);
    emit({ error: message });
    process.exit(1);
  }

  let body = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: report the text as is
  }
  const order = which === "v2" ? ["PAYMENT-RESPONSE", "X-PAYMENT-RESPONSE"] : ["X-PAYMENT-RESPONSE", "PAYMENT-RESPONSE"];
  const paymentResponseHeader = order.find((name) => response.headers.get(name)) ?? null;
  const paymentResponse = paymentResponseHeader ? decodeBase64Json(response.headers.get(paymentResponseHeader)) : null;

  emit({ status: response.status, body, paymentResponseHeader, paymentResponse, sentPaymentHeader });
});
