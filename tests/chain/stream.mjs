#!/usr/bin/env node
// Reads --url (GET /v2/stream) with the `eventsource` package (the WHATWG EventSource for Node),
// as an agent would: it reconnects by itself after the server's `retry:` delay, sending
// `Last-Event-ID`. With --key it pays with @x402/fetch (x402 v2) given as EventSource's `fetch`,
// so every reconnection the server answers 402 is paid.
//   --event       an event type to listen for (repeatable): the feed kinds and `stream_ended`
//   --count N     stop after N entries (events with an id); a line `count N` on stdin sets it too
//   --ended K     and after K `stream_ended` events (default 0)
// stderr: `entries <n> <last id>` after each entry, `ended <reason>`, `request <n> <last-event-id>`
// stdout: {"entries":[{id,type,data}],"ended":[data],"requests":[{lastEventId,paid,status}]}
import { createInterface } from "node:readline";
import { args, checkUrl, emit, fail, log, normalizeKey, parseHeaders, required, run } from "./lib/common.mjs";

const USAGE = `usage: stream.mjs --url URL --event TYPE... [--count N] [--ended K] [--header NAME:VALUE]... [--key HEX] [--timeout-ms N]`;

run(async () => {
  const opts = args(
    {
      url: { type: "string" },
      event: { type: "string", multiple: true },
      count: { type: "string" },
      ended: { type: "string" },
      header: { type: "string", multiple: true },
      key: { type: "string" },
      "timeout-ms": { type: "string" },
    },
    USAGE,
  );
  const url = checkUrl(required(opts, "url", USAGE), "url");
  const extra = parseHeaders(opts.header);
  let count = opts.count === undefined ? Infinity : Number(opts.count);
  const endedWanted = Number(opts.ended ?? "0");
  const timeoutMs = Number(opts["timeout-ms"] ?? "120000");
  const { EventSource } = await import("eventsource");

  const requests = [];
  // The transport EventSource calls for every (re)connection: adds our headers, records what
  // it sent and how it was answered.
  const plainFetch = async (input, init) => {
    // The payment wrapper retries with a Request carrying the payment header: keep its headers.
    const headers = new Headers(input instanceof Request ? input.headers : undefined);
    new Headers(init?.headers).forEach((value, name) => headers.set(name, value));
    for (const [name, value] of Object.entries(extra)) headers.set(name, value);
    const paid = headers.has("PAYMENT-SIGNATURE");
    const response = await fetch(input, { ...init, headers });
    requests.push({ lastEventId: headers.get("Last-Event-ID"), paid, status: response.status });
    log(`request ${requests.length} ${headers.get("Last-Event-ID") ?? "-"} ${paid ? "paid" : "unpaid"} -> ${response.status}`);
    return response;
  };
  let transport = plainFetch;
  if (opts.key !== undefined) {
    const { privateKeyToAccount } = await import("viem/accounts");
    const { wrapFetchWithPayment, x402Client } = await import("@x402/fetch");
    const { ExactEvmScheme } = await import("@x402/evm/exact/client");
    const account = privateKeyToAccount(normalizeKey(opts.key));
    const client = new x402Client().register("eip155:84532", new ExactEvmScheme(account)).setSpendControls({ allowedAssets: true });
    // x402-fetch style wrappers spread init.headers: hand them a plain object.
    const paying = wrapFetchWithPayment(plainFetch, client);
    transport = (input, init) => paying(input, { ...init, headers: Object.fromEntries(new Headers(init?.headers)) });
  }

  const entries = [];
  const ended = [];
  let finish;
  const done = new Promise((resolve) => (finish = resolve));
  const check = () => {
    if (entries.length >= count && ended.length >= endedWanted) finish();
  };
  const instructions = createInterface({ input: process.stdin });
  instructions.on("line", (line) => {
    const m = /^count (\d+)$/.exec(line.trim());
    if (m) {
      count = Number(m[1]);
      check();
    }
  });

  const source = new EventSource(url, { fetch: transport });
  for (const type of opts.event ?? []) {
    source.addEventListener(type, (event) => {
      if (type === "stream_ended") {
        const data = JSON.parse(event.data);
        ended.push(data);
        log(`ended ${data.reason}`);
      } else {
        entries.push({ id: event.lastEventId, type: event.type, data: JSON.parse(event.data) });
        log(`entries ${entries.length} ${event.lastEventId}`);
      }
      check();
    });
  }
  source.onerror = (err) => log(`error (${source.readyState === EventSource.CLOSED ? "closed" : "reconnecting"}): ${err?.message ?? ""}`);

  const timer = setTimeout(() => {
    source.close();
    fail(`timed out with ${entries.length} entries and ${ended.length} ends`);
  }, timeoutMs);
  await done;
  clearTimeout(timer);
  source.close();
  // Nothing left to wait for: the process ends once stdout is flushed (an exit now would cut a
  // large answer short on a pipe).
  instructions.close();
  process.stdin.destroy();
  emit({ entries, ended, requests });
});
