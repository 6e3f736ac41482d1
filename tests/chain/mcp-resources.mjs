#!/usr/bin/env node
// govdata's MCP resources through the official TypeScript SDK, in either protocol generation:
//   --sdk v1   @modelcontextprotocol/sdk 1.x (`Client` over `StreamableHTTPClientTransport`):
//              protocol 2025-11-25, a session, `resources/subscribe`, the update on its GET stream
//   --sdk v2   @modelcontextprotocol/client 2.x pinned to protocol 2026-07-28 (no session):
//              `subscriptions/listen`, the update on the listen request's own stream
// It lists the resource templates, reads --read (if given), subscribes to --subscribe, says so on
// stderr (`subscribed`), and waits up to --wait-ms for `notifications/resources/updated` naming
// that URI; it says `updated <uri>` on stderr the moment one arrives.
//   --header NAME:VALUE  sent on every MCP request (a partner token, say)
// stdout: {"protocolVersion","templates":[…],"read":<ReadResourceResult>|{"error","code"},
//          "subscribed":<ack or {}>,"updates":[uri…]}
import { args, checkUrl, emit, fail, log, parseHeaders, required, run } from "./lib/common.mjs";

const USAGE =
  "usage: mcp-resources.mjs --sdk v1|v2 --url URL [--header NAME:VALUE]... [--read URI] [--subscribe URI] [--wait-ms N]";

run(async () => {
  const opts = args(
    {
      sdk: { type: "string" },
      url: { type: "string" },
      header: { type: "string", multiple: true },
      read: { type: "string" },
      subscribe: { type: "string" },
      "wait-ms": { type: "string" },
    },
    USAGE,
  );
  const sdk = required(opts, "sdk", USAGE);
  const url = new URL(checkUrl(required(opts, "url", USAGE), "url"));
  const headers = parseHeaders(opts.header);
  const waitMs = Number(opts["wait-ms"] ?? "0");

  let client;
  if (sdk === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    const { ResourceUpdatedNotificationSchema } = await import("@modelcontextprotocol/sdk/types.js");
    client = new Client({ name: "govdata-tests", version: "0.0.0" });
    client.onUpdate = (handler) =>
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => handler(n.params.uri));
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  } else if (sdk === "v2") {
    const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
    client = new Client(
      { name: "govdata-tests", version: "0.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    client.onUpdate = (handler) =>
      client.setNotificationHandler("notifications/resources/updated", (n) => handler(n.params.uri));
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  } else {
    fail(`--sdk must be v1 or v2, not ${sdk}`, 2);
  }
  const protocolVersion = client.getNegotiatedProtocolVersion?.() ?? client.transport?.protocolVersion ?? null;

  const updates = [];
  let updated;
  const arrived = new Promise((resolve) => (updated = resolve));
  client.onUpdate((uri) => {
    log(`updated ${uri}`);
    updates.push(uri);
    if (uri === opts.subscribe) updated();
  });

  const { resourceTemplates } = await client.listResourceTemplates();
  let read = null;
  if (opts.read) {
    try {
      read = await client.readResource({ uri: opts.read });
    } catch (err) {
      log(`read: ${err instanceof Error ? err.stack : String(err)}`);
      read = { error: err instanceof Error ? err.message : String(err), code: err?.code ?? null, data: err?.data ?? null };
    }
  }
  let subscribed = null;
  let subscription;
  if (opts.subscribe) {
    if (sdk === "v1") {
      subscribed = await client.subscribeResource({ uri: opts.subscribe });
    } else {
      subscription = await client.listen({ resourceSubscriptions: [opts.subscribe] });
      subscribed = subscription.honoredFilter;
    }
    log("subscribed");
    if (waitMs > 0) {
      const timedOut = await Promise.race([
        arrived.then(() => false),
        new Promise((resolve) => setTimeout(() => resolve(true), waitMs)),
      ]);
      if (timedOut) log(`no update for ${opts.subscribe} within ${waitMs} ms`);
    }
  }
  await subscription?.close();
  await client.close();
  emit({ protocolVersion, templates: resourceTemplates, read, subscribed, updates });
});
