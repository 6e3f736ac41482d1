#!/usr/bin/env node
// A local x402 facilitator: @x402/core's x402Facilitator with @x402/evm's "exact" EVM schemes,
// x402 v1 on "base-sepolia" and v2 on "eip155:84532", settling on the given (anvil) RPC.
//   POST /verify   {"x402Version":1|2,"paymentPayload":{…},"paymentRequirements":{…}} -> VerifyResponse
//   POST /settle   same body                                                          -> SettleResponse
//   GET  /supported                                                                   -> {kinds,extensions,signers}
//   GET  /health                                                                      -> {"ok":true}
// A refused payment is answered 200 with isValid:false / success:false (as the reference
// facilitators do); a malformed request is answered 400, an internal error 500, both with a JSON
// body that also carries isValid:false / success:false and an "error" message.
// stdout (once listening): {"url":"http://127.0.0.1:PORT"}
import { ANVIL_KEY_0, NETWORK_V1, NETWORK_V2, LOCAL_CHAIN_ID, POLLING_INTERVAL_MS, args, checkUrl, emit, fail, jsonReplacer, localChain, log, normalizeKey, required, run } from "./lib/common.mjs";
import { createServer } from "node:http";
import { createPublicClient, createWalletClient, http, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { x402Facilitator } from "@x402/core/facilitator";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import { ExactEvmSchemeV1 } from "@x402/evm/exact/v1/facilitator";

const USAGE = `usage: facilitator.mjs --rpc URL --key HEX [--port N] [--allow-non-anvil] [--exit-on-stdin-eof]
  --key                facilitator signer, pays the settlement gas (anvil account #0: ${ANVIL_KEY_0})
  --port               port on 127.0.0.1 (default 0: any free port)
  --allow-non-anvil    skip the check that the RPC is an anvil node with chain id ${LOCAL_CHAIN_ID}
  --exit-on-stdin-eof  exit when stdin closes (lets a parent that dies take this process with it)`;

const MAX_BODY_BYTES = 1024 * 1024;

function send(res, status, obj) {
  const body = JSON.stringify(obj, jsonReplacer);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

async function readJson(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, "request body too large");
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new HttpError(400, "request body is not valid JSON");
  }
}

class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v);

/** Shape checks that keep the scheme code from crashing on a malformed request. */
function parseRequest(body) {
  if (!isObject(body)) throw new HttpError(400, "body must be a JSON object");
  const { x402Version, paymentPayload, paymentRequirements } = body;
  if (x402Version !== 1 && x402Version !== 2) throw new HttpError(400, "x402Version must be 1 or 2");
  if (!isObject(paymentPayload)) throw new HttpError(400, "paymentPayload must be an object");
  if (!isObject(paymentRequirements)) throw new HttpError(400, "paymentRequirements must be an object");
  if (paymentPayload.x402Version !== x402Version) {
    throw new HttpError(400, `x402Version (${x402Version}) differs from paymentPayload.x402Version (${paymentPayload.x402Version})`);
  }
  const inner = paymentPayload.payload;
  if (!isObject(inner) || typeof inner.signature !== "string" || !isObject(inner.authorization)) {
    throw new HttpError(400, "paymentPayload.payload must be {signature, authorization}");
  }
  if (x402Version === 2 && !isObject(paymentPayload.accepted)) {
    throw new HttpError(400, "a v2 paymentPayload must carry `accepted`");
  }
  return { x402Version, paymentPayload, paymentRequirements };
}

// ExactEvmSchemeV1.settle puts the raw viem error text (multi-line, kilobytes) in `errorReason`
// when the transaction cannot be sent. Keep `errorReason` a short token, as v2 does, and move the
// text to `errorMessage`. The patterns are @x402/evm's own (parseEip3009TransferError).
function normalizeSettleResponse(result) {
  if (result.success || typeof result.errorReason !== "string" || /^[A-Za-z0-9_]+$/.test(result.errorReason)) {
    return result;
  }
  const msg = result.errorReason;
  let reason = "invalid_exact_evm_transaction_failed";
  if (/authorization.*(expired|valid before)/i.test(msg) || /AuthorizationExpired/i.test(msg)) {
    reason = "invalid_exact_evm_payload_authorization_valid_before";
  } else if (/authorization.*not.*valid|AuthorizationNotYetValid/i.test(msg)) {
    reason = "invalid_exact_evm_payload_authorization_valid_after";
  } else if (/authorization.*used|AuthorizationAlreadyUsed|AuthorizationUsedOrCanceled/i.test(msg)) {
    reason = "invalid_exact_evm_nonce_already_used";
  } else if (/transfer.*exceeds.*balance|insufficient.*balance|ERC20InsufficientBalance/i.test(msg)) {
    reason = "invalid_exact_evm_insufficient_balance";
  } else if (/invalid.*signature|SignerMismatch|InvalidSignatureV|InvalidSignatureS/i.test(msg)) {
    reason = "invalid_exact_evm_signature";
  }
  return { ...result, errorReason: reason, errorMessage: result.errorMessage ?? msg };
}

run(async () => {
  const opts = args(
    {
      rpc: { type: "string" },
      key: { type: "string" },
      port: { type: "string" },
      "allow-non-anvil": { type: "boolean" },
      "exit-on-stdin-eof": { type: "boolean" },
    },
    USAGE,
  );
  const rpc = checkUrl(required(opts, "rpc", USAGE), "rpc");
  const key = normalizeKey(required(opts, "key", USAGE));
  const port = opts.port === undefined ? 0 : Number(opts.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail("--port must be an integer in 0..65535", 2);

  const chain = localChain(rpc);
  const transport = http(rpc);
  const publicClient = createPublicClient({ chain, transport, pollingInterval: POLLING_INTERVAL_MS });

  // Safety: this facilitator signs real transactions; only ever point it at a local anvil.
  const chainId = await publicClient.getChainId();
  if (chainId !== LOCAL_CHAIN_ID) fail(`RPC chain id is ${chainId}, expected ${LOCAL_CHAIN_ID}`);
  if (!opts["allow-non-anvil"]) {
    const client = await publicClient.request({ method: "web3_clientVersion" });
    if (!/anvil/i.test(String(client))) fail(`RPC is not anvil (${client}); pass --allow-non-anvil to override`);
  }

  const account = privateKeyToAccount(key);
  const viemClient = createWalletClient({ account, chain, transport, pollingInterval: POLLING_INTERVAL_MS }).extend(
    publicActions,
  );
  const signer = toFacilitatorEvmSigner(
    {
      address: account.address,
      getCode: (a) => viemClient.getCode(a),
      readContract: (a) => viemClient.readContract({ ...a, args: a.args ?? [] }),
      verifyTypedData: (a) => viemClient.verifyTypedData(a),
      writeContract: (a) => viemClient.writeContract({ ...a, args: a.args ?? [] }),
      sendTransaction: (a) => viemClient.sendTransaction(a),
      waitForTransactionReceipt: (a) => viemClient.waitForTransactionReceipt(a),
    },
    { confirmationTimeoutMs: 30_000 },
  );

  // Register exactly the two local networks (registerExactEvmScheme would also register every
  // v1 mainnet name, e.g. "base": a local facilitator must never claim a mainnet network).
  const facilitator = new x402Facilitator()
    .register(NETWORK_V2, new ExactEvmScheme(signer))
    .registerV1(NETWORK_V1, new ExactEvmSchemeV1(signer));

  // Settlements are serialised: one signer, one nonce sequence, and each settle waits for its
  // receipt (the balance has moved when /settle answers).
  let settleQueue = Promise.resolve();
  const serialSettle = (payload, requirements) => {
    const next = settleQueue.then(() => facilitator.settle(payload, requirements));
    settleQueue = next.catch(() => {});
    return next;
  };

  const server = createServer(async (req, res) => {
    const t0 = Date.now();
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    const route = `${req.method} ${path}`;
    const failKey = path === "/settle" ? "success" : "isValid";
    try {
      if (route === "GET /supported") return send(res, 200, facilitator.getSupported());
      if (route === "GET /health") return send(res, 200, { ok: true });
      if (route !== "POST /verify" && route !== "POST /settle") {
        const known = ["/verify", "/settle", "/supported", "/health"].includes(path);
        return send(res, known ? 405 : 404, { error: known ? "method not allowed" : "not found" });
      }
      const { x402Version, paymentPayload, paymentRequirements } = parseRequest(await readJson(req));
      let result;
      if (path === "/verify") {
        result = await facilitator.verify(paymentPayload, paymentRequirements);
        log(`${route} v${x402Version} -> isValid=${result.isValid}${result.invalidReason ? ` (${result.invalidReason})` : ""} payer=${result.payer ?? "-"} ${Date.now() - t0}ms`);
      } else {
        result = normalizeSettleResponse(await serialSettle(paymentPayload, paymentRequirements));
        log(`${route} v${x402Version} -> success=${result.success}${result.errorReason ? ` (${result.errorReason})` : ""} tx=${result.transaction || "-"} ${Date.now() - t0}ms`);
      }
      return send(res, 200, result);
    } catch (err) {
      // x402Facilitator throws this for a scheme/network it does not serve: a request error.
      if (err instanceof Error && /^No facilitator registered/.test(err.message)) err = new HttpError(400, err.message);
      const status = err instanceof HttpError ? err.status : 500;
      const message = err instanceof Error ? err.message : String(err);
      log(`${route} -> ${status}: ${message}`);
      if (status === 500 && err instanceof Error && err.stack) log(err.stack);
      if (!res.headersSent) {
        const reason = status === 500 ? "unexpected_error" : "invalid_request";
        const body =
          failKey === "success"
            ? { success: false, errorReason: reason, transaction: "", network: "", error: message }
            : { isValid: false, invalidReason: reason, error: message };
        send(res, status, body);
      }
    }
  });

  const shutdown = (why) => {
    log(`shutting down (${why})`);
    server.close(() => process.exit(0));
    server.closeAllConnections?.();
    setTimeout(() => process.exit(0), 1000).unref();
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
  if (opts["exit-on-stdin-eof"]) {
    process.stdin.on("end", () => shutdown("stdin closed"));
    process.stdin.on("error", () => shutdown("stdin error"));
    process.stdin.resume();
  }

  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  const { port: actualPort } = server.address();
  log(`listening; signer ${account.address}; rpc ${rpc}; kinds ${JSON.stringify(facilitator.getSupported().kinds)}`);
  emit({ url: `http://127.0.0.1:${actualPort}` });
});
