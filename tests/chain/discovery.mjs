#!/usr/bin/env node
// x402 discovery, judged by the reference package: for each --url, a GET without credentials must
// answer 402 whose PAYMENT-REQUIRED header (decoded by @x402/core's own decoder) carries
// `extensions.bazaar`, and @x402/extensions 2.27.0 must accept it: `validateDiscoveryExtension`
// (info validates against the extension's JSON Schema), `validateDiscoveryExtensionSpec` (protocol
// invariants) and `extractDiscoveryInfo` (what a facilitator catalogues from a payment that echoes
// the challenge's extensions, as @x402/fetch's does).
// stdout: {"results":[{url, status, valid, errors, discovered}]}; exit 1 when any is not valid.
import { args, emit, checkUrl, log, run } from "./lib/common.mjs";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import {
  extractDiscoveryInfo,
  validateDiscoveryExtension,
  validateDiscoveryExtensionSpec,
} from "@x402/extensions/bazaar";

const USAGE = "usage: discovery.mjs --url URL [--url URL]...";

run(async () => {
  const opts = args({ url: { type: "string", multiple: true } }, USAGE);
  const urls = (opts.url ?? []).map((u) => checkUrl(u, "url"));
  if (urls.length === 0) {
    console.error(USAGE);
    process.exit(2);
  }
  const results = [];
  for (const url of urls) {
    const response = await fetch(url);
    const errors = [];
    let discovered = null;
    const header = response.headers.get("PAYMENT-REQUIRED");
    if (response.status !== 402) errors.push(`status ${response.status}, not 402`);
    if (!header) errors.push("no PAYMENT-REQUIRED header");
    if (header) {
      const challenge = decodePaymentRequiredHeader(header);
      const bazaar = challenge.extensions?.bazaar;
      if (!bazaar) errors.push("the challenge carries no extensions.bazaar");
      if (bazaar) {
        const own = validateDiscoveryExtension(bazaar);
        if (!own.valid) errors.push(...own.errors.map((e) => `validateDiscoveryExtension: ${e}`));
        const spec = validateDiscoveryExtensionSpec(bazaar);
        if (!spec.valid) errors.push(...spec.errors.map((e) => `validateDiscoveryExtensionSpec: ${e}`));
        // A v2 payment echoes resource, accepted and extensions from the challenge.
        const payload = {
          x402Version: 2,
          resource: challenge.resource,
          accepted: challenge.accepts[0],
          payload: {},
          extensions: challenge.extensions,
        };
        discovered = extractDiscoveryInfo(payload, challenge.accepts[0], true);
        if (!discovered) errors.push("extractDiscoveryInfo found nothing to catalogue");
      }
    }
    const valid = errors.length === 0;
    log(`${url}: ${valid ? "valid" : errors.join("; ")}`);
    results.push({ url, status: response.status, valid, errors, discovered });
  }
  emit({ results });
  if (results.some((r) => !r.valid)) process.exit(1);
});
