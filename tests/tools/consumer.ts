// A TypeScript consumer of govdata's published documents, the way an agent's client code would
// use them. The types come from openapi-typescript (generated/v1.d.ts and generated/v2.d.ts,
// generated at run time from openapi/v1.json and openapi/v2.json by .ci/contract-tools) and this
// file is only type-checked: `tsc --noEmit --strict -p tsconfig.json`.
//
// It fails to compile when a field it reads disappears, becomes optional, or changes type, and
// when an enum it switches over exhaustively gains or loses a value (the `never` checks below):
// that is what a breaking change of the documents looks like to a typed client.

import type { components as C1, paths as P1 } from "./generated/v1";
import type { components as C2, operations as O2, paths as P2 } from "./generated/v2";

// ---- type-level helpers ------------------------------------------------------------------------

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | void {}
function unreachable(x: never): never {
  throw new Error(`unexpected value ${String(x)}`);
}

// ---- v1 ----------------------------------------------------------------------------------------

type V1DaoList = P1["/v1/daos"]["get"]["responses"][200]["content"]["application/json"];
type V1Problem = C1["schemas"]["Problem"];
type V1Dao = C1["schemas"]["Dao"];

// The list response is the v1 envelope {request, freshness, data} with legacy pagination.
assertType<Equal<V1DaoList, C1["schemas"]["V1Envelope_V1Page_Dao"]>>();
assertType<Equal<V1DaoList["data"]["total"], number>>();
assertType<
  Equal<
    V1DaoList["request"]["adjustments"][number]["reason"],
    "clamped_to_max" | "clamped_to_min" | "window_clamped_to_max" | "start_after_end" | "truncated_to_max_words" | "normalized"
  >
>();
// v1 query parameters are optional numbers.
type V1DaoListQuery = NonNullable<P1["/v1/daos"]["get"]["parameters"]["query"]>;
assertType<Equal<V1DaoListQuery, { limit?: number; offset?: number }>>();

/** Walk v1 pages by offset, as an agent would, and total the exact (decimal-string) counts. */
export function v1Summarize(page: V1DaoList): { names: string[]; proposals: bigint; next: number | null } {
  let proposals = 0n;
  const names: string[] = [];
  for (const dao of page.data.items) {
    names.push(`${dao.daoId}: ${dao.name}${dao.symbol ? ` (${dao.symbol})` : ""}`);
    // counts is absent for registry-only DAOs; counts are exact decimal strings, not numbers.
    if (dao.counts) proposals += BigInt(dao.counts.proposals) + BigInt(dao.counts.activeProposals) * 0n;
    for (const source of dao.sources) names.push(`  ${source.source} ${source.locator} ${source.dataAsOf ?? "-"}`);
    ingestion(dao.status);
  }
  for (const adj of page.request.adjustments) names.push(`${adj.param}: ${adj.received} -> ${adj.applied} (${adj.reason})`);
  const { limit, offset, total } = page.data;
  const next = offset + limit < total ? offset + limit : null;
  cache(page.freshness.cacheStatus);
  const generated: Date = new Date(page.freshness.generatedAt);
  names.push(generated.toISOString());
  return { names, proposals, next };
}

function ingestion(status: V1Dao["status"]): boolean {
  switch (status) {
    case "ingested":
      return true;
    case "registry_only":
      return false;
    default:
      return unreachable(status);
  }
}

function cache(status: C1["schemas"]["CacheStatus"]): string {
  switch (status) {
    case "memory_cache":
    case "fresh":
    case "cached_live":
    case "refreshed_live":
    case "registry_only":
      return status;
    default:
      return unreachable(status);
  }
}

// ---- v2 ----------------------------------------------------------------------------------------

type V2ProposalList = P2["/v2/proposals"]["get"]["responses"][200]["content"]["application/json"];
type V2ProposalQuery = NonNullable<O2["v2_proposals_list"]["parameters"]["query"]>;
type V2Proposal = C2["schemas"]["ProposalDetail"];
type V2Dao = P2["/v2/daos/{daoId}"]["get"]["responses"][200]["content"]["application/json"];
type V2Problem = C2["schemas"]["Problem"];
type V2ErrorCode = C2["schemas"]["ErrorCode"];

// Pagination: an opaque cursor in meta.page, passed back as the `cursor` query parameter.
assertType<Equal<V2ProposalList["meta"]["page"]["nextCursor"], string | undefined>>();
assertType<Equal<V2ProposalList["meta"]["page"]["hasMore"], boolean>>();
assertType<Equal<V2ProposalQuery["cursor"], string | undefined>>();
assertType<Equal<V2ProposalQuery["sort"], "newest" | "end_time" | undefined>>();
assertType<Equal<V2ProposalQuery["state"], C2["schemas"]["ProposalState"] | undefined>>();
// Every error response of every v2 operation is the same Problem document.
assertType<Equal<P2["/v2/proposals/{proposalKey}"]["get"]["responses"][404]["content"]["application/problem+json"], V2Problem>>();
assertType<Equal<O2["v2_daos_get"]["responses"][400]["content"]["application/problem+json"], V2Problem>>();
assertType<Equal<O2["v2_voters_get"]["parameters"]["path"], { voterIdentity: string }>>();

/** Build the query for the next page, or null at the end. */
export function nextPageQuery(prev: V2ProposalQuery, page: V2ProposalList): V2ProposalQuery | null {
  const { hasMore, nextCursor, limit } = page.meta.page;
  if (!hasMore || nextCursor === undefined) return null;
  const cursor: string = nextCursor;
  return { ...prev, limit, cursor };
}

/** What an agent reads off a proposal list page. */
export function describeProposals(page: V2ProposalList): string[] {
  const lines: string[] = [];
  for (const p of page.data.items) {
    const key: string = p.proposalKey;
    const ingested: bigint = BigInt(p.votes.ingested);
    const upstream: bigint | undefined = p.votes.upstream === undefined ? undefined : BigInt(p.votes.upstream);
    const ends: Date | undefined = p.endAt === undefined ? undefined : new Date(p.endAt);
    lines.push(`${p.daoId}/${key} [${p.source}/${p.state}] ${p.title} by ${p.author.toLowerCase()}`);
    lines.push(`  votes ${ingested}/${upstream ?? "?"} total ${p.scoresTotal ?? "?"} quorum ${p.quorum ?? "-"} ends ${ends?.toISOString() ?? "-"}`);
  }
  lines.push(`as of ${page.meta.freshness.dataAsOf ?? "never"} (${page.meta.freshness.cacheStatus})`);
  return lines;
}

/** One proposal with its text. */
export function describeProposal(p: V2Proposal): string {
  const choices: string[] = p.choices ?? [];
  const scores: string[] = p.scores ?? [];
  const rows = choices.map((label, i) => `${label}: ${scores[i] ?? "?"}`);
  return [p.title, p.body ?? "", `${p.externalId} ${p.url ?? ""} ${p.discussionUrl ?? ""}`, ...rows].join("\n");
}

/** A DAO, from GET /v2/daos/{daoId}. */
export function describeDao(res: V2Dao): string {
  const d = res.data;
  const counts = d.counts;
  const exact = counts ? `${counts.proposals} proposals, ${counts.voters} voters, ${counts.ingestedVotes}/${counts.upstreamVotes} votes` : "nothing ingested";
  return `${d.daoId} ${d.name} (${d.status}): ${exact}; fresh as of ${res.meta.freshness.generatedAt}`;
}

/** How an agent branches on an error: by `code`, exhaustively. */
export function onProblem(problem: V2Problem): "retry" | "restart-pagination" | "pay" | "fix-request" | "give-up" {
  const fields = (problem.errors ?? []).map((e) => `${e.in}:${e.name} ${e.reason} (${e.expected ?? ""}, got ${e.received ?? ""})`);
  const status: number = problem.status;
  const requestId: string = problem.requestId;
  void [fields, status, requestId, problem.type, problem.title, problem.detail];
  const code: V2ErrorCode = problem.code;
  switch (code) {
    case "INVALID_CURSOR":
      return "restart-pagination";
    case "PAYMENT_REQUIRED": {
      const accepts = problem.accepts ?? [];
      return accepts.length > 0 && problem.x402Version === 1 ? "pay" : "give-up";
    }
    case "RATE_LIMITED":
    case "UNAVAILABLE":
    case "UPSTREAM_ERROR":
    case "INTERNAL_ERROR":
      return "retry";
    case "VALIDATION_ERROR":
    case "AMBIGUOUS_IDENTIFIER":
    case "METHOD_NOT_ALLOWED":
    case "NOT_FOUND":
      return "fix-request";
    case "UNAUTHORIZED":
    case "FORBIDDEN":
      return "give-up";
    default:
      return unreachable(code);
  }
}

// v1 and v2 share the Problem document and its codes.
assertType<Equal<V1Problem["code"], V2Problem["code"]>>();
assertType<Equal<V1Problem, V2Problem>>();

/** A typed fetch of one v2 page with a partner token (not run here; it must type-check). */
export async function fetchProposals(base: string, token: string, query: V2ProposalQuery): Promise<V2ProposalList | V2Problem> {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
  const res = await fetch(`${base}/v2/proposals?${params}`, { headers: { "x-service-api-token": token } });
  return res.ok ? ((await res.json()) as V2ProposalList) : ((await res.json()) as V2Problem);
}
