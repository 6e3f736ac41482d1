#!/usr/bin/env node
// An MCP session with govdata through the official TypeScript SDK (@modelcontextprotocol/sdk):
// `Client` over `StreamableHTTPClientTransport`. It initializes, lists the tools and makes each
// --call in order. The SDK checks every answer against the tool's outputSchema (Ajv), so a
// served answer that strays from its declared schema fails the call.
//   --header NAME:VALUE  sent on every MCP request (a partner token, say)
//   --key HEX            pay paid calls with x402: @x402/fetch (exact EVM scheme on eip155:84532)
//                        is the transport's fetch, so a 402 is paid and the request sent again
//   --call 'NAME JSON'   a tool call: the name, a space, the arguments as a JSON object (optional)
// stdout: {"server":{name,version},"instructions":…,"tools":[…],
//          "calls":[{"name","result":<CallToolResult>} | {"name","error":"…","code":<HTTP status>|null}],
//          "payments":[{"status","paymentResponse"}]}   (payments: every answer with a PAYMENT-RESPONSE)
import { args, checkUrl, emit, fail, log, normalizeKey, parseHeaders, required, run } from "./lib/common.mjs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { privateKeyToAccount } from "viem/accounts";

const USAGE = "usage: mcp.mjs --url URL [--header NAME:VALUE]... [--key HEX] [--call 'NAME {JSON}']...";

function parseCall(text) {
  const i = text.indexOf(" ");
  const name = i < 0 ? text : text.slice(0, i);
  const json = i < 0 ? "" : text.slice(i + 1).trim();
  try {
    return { name, arguments: json ? JSON.parse(json) : {} };
  } catch (err) {
    fail(`--call ${JSON.stringify(text)}: the arguments are not JSON (${err.message})`, 2);
  }
}

run(async () => {
  const opts = args(
    {
      url: { type: "string" },
      header: { type: "string", multiple: true },
      key: { type: "string" },
      call: { type: "string", multiple: true },
    },
    USAGE,
  );
  const url = checkUrl(required(opts, "url", USAGE), "url");
  const headers = parseHeaders(opts.header);
  const calls = (opts.call ?? []).map(parseCall);

  // Every answer that carries a payment receipt, as the client saw it.
  const payments = [];
  const recordingFetch = async (input, init) => {
    const res = await fetch(input, init);
    log(`${input instanceof Request ? input.method : (init?.method ?? "GET")} -> ${res.status}`);
    const receipt = res.headers.get("PAYMENT-RESPONSE");
    if (receipt) {
      payments.push({ status: res.status, paymentResponse: JSON.parse(Buffer.from(receipt, "base64").toString("utf8")) });
    }
    return res;
  };
  let transportFetch = recordingFetch;
  if (opts.key) {
    const { wrapFetchWithPayment, x402Client } = await import("@x402/fetch");
    const { ExactEvmScheme } = await import("@x402/evm/exact/client");
    const account = privateKeyToAccount(normalizeKey(opts.key));
    const client = new x402Client()
      .register("eip155:84532", new ExactEvmScheme(account))
      // The local token is not one of @x402/evm's default assets.
      .setSpendControls({ allowedAssets: true })
      .registerPolicy((_version, reqs) => reqs.filter((r) => BigInt(r.amount ?? r.maxAmountRequired) <= 100000n));
    transportFetch = wrapFetchWithPayment(recordingFetch, client);
  }

  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: transportFetch, requestInit: { headers } });
  const client = new Client({ name: "govdata-tests", version: "0.0.0" });
  await client.connect(transport);
  const server = client.getServerVersion();
  const instructions = client.getInstructions() ?? null;
  const { tools } = await client.listTools();
  const results = [];
  for (const call of calls) {
    try {
      const result = await client.callTool(call);
      results.push({ name: call.name, result });
    } catch (err) {
      log(`${call.name}: ${err instanceof Error ? err.stack : String(err)}`);
      results.push({ name: call.name, error: err instanceof Error ? err.message : String(err), code: err?.code ?? null });
    }
  }
  await client.close();
  emit({ server, instructions, tools, calls: results, payments });
});
