//! `/llms.txt` (https://llmstxt.org): what an agent reads first, made from the same declarations
//! as the documents: each operation of both finished documents in one line, with its summary,
//! its access (free, or its tier and price) and the link to its reference section.
use std::fmt::Write as _;

use super::access::{Access, PARTNER_TOKEN_HEADER, Prices, Scope, Version};
use super::document::Published;
use super::operations;
use super::paths::{self, Format, PathKind};
use super::x402::Generation;

/// The text, with links under `base` (the public URL when the operator named one; otherwise
/// links are relative to the server the file was read from).
pub fn llms_txt(surfaces: [&Published; 2], prices: Prices, base: Option<&str>) -> String {
    let base = base.unwrap_or("");
    let mut out = String::new();
    out.push_str(
        "# govdata\n\n> Read-only DAO governance data for software agents: DAOs, proposals, votes, voters, forum \
         topics, governance events and curated signals, each answer with its freshness and the sources it cites. \
         Voting power, amounts and scores are exact decimal strings.\n\n",
    );
    let scopes: Vec<String> = Scope::ALL.iter().map(|s| format!("`{}`", s.as_str())).collect();
    let _ = write!(
        out,
        "## Access\n\n\
         - Free operations need nothing.\n\
         - A paid operation opens to a partner token in `{PARTNER_TOKEN_HEADER}` (scopes {}; a tier's scope opens \
         the tiers below it), or to one x402 payment per call: an unpaid call answers 402 with the challenge (x402 \
         v2 in the `{}` header, v1 in the body's `accepts`); sign one of its requirements and repeat the call with \
         `{}` (v2) or `{}` (v1). Prices below are in atomic units of the x402 asset; [pricing]({base}/v1/meta/pricing) \
         names the asset, its network and decimals.\n\
         - Errors are RFC 9457 problem documents (`application/problem+json`) with a stable `code`.\n\n",
        scopes.join(", "),
        super::x402::PAYMENT_REQUIRED_HEADER,
        Generation::V2.request_header(),
        Generation::V1.request_header(),
    );
    let _ = write!(
        out,
        "## Documents\n\n\
         - [v1 OpenAPI]({base}{}): the stable surface; `{{request, freshness, data}}` answers, \
         out-of-range values clamped and reported.\n\
         - [v2 OpenAPI]({base}{}): the additive surface; keyset cursors, out-of-range values \
         rejected.\n\
         - [Reference]({base}{}): both documents, browsable.\n",
        paths::document(Version::V1, Format::Json),
        paths::document(Version::V2, Format::Json),
        paths::of(PathKind::Docs(None)),
    );
    let _ = writeln!(
        out,
        "- Kinds in v2 are open lists (`x-extensible-enum`): a feed entry's, a governance event's and an activity \
         entry's `kind`. {}",
        super::document::OPEN_LIST_RULE
    );
    let resources = super::mcp::resources(&super::mcp::tools(surfaces));
    let templates: Vec<String> =
        resources.iter().map(|r| format!("`{}` (`{}`)", r.uri_template, r.tool.name)).collect();
    let _ = write!(
        out,
        "\n## MCP\n\n\
         - [MCP endpoint]({base}{}): Model Context Protocol over Streamable HTTP (answers are JSON). \
         One tool per operation below (the stream excepted: its entries are `v2_feed_list`'s), named `<surface>_<resource>_<verb>` (`v1_daos_list`, `v2_proposals_list`); a \
         tool's `structuredContent` is the operation's answer. A paid tool takes the partner token header on the MCP \
         request, or x402 at the HTTP layer: an unpaid call answers HTTP 402 with the challenge; pay it and send the \
         same request again. A refused call is a tool error whose text is the problem document.\n\
         - MCP resources: {}; a read answers what its tool answers and is paid as it is. Subscribe to one \
         (`resources/subscribe` in the session `initialize` opens, protocol 2025-11-25; `subscriptions/listen`, \
         2026-07-28) to be sent `notifications/resources/updated` when a publication changes it.\n",
        paths::of(PathKind::Mcp),
        templates.join(", "),
    );
    for published in surfaces {
        let surface = &published.version.prefix()[1..];
        let reference = paths::of(PathKind::Docs(Some(published.version)));
        let _ = write!(out, "\n## {surface} operations\n\n");
        for (method, template, id) in published.operations() {
            let Some(decl) = operations::find(published.version, id) else { continue };
            let summary = published.summary(template, method).unwrap_or(id);
            let access = match decl.access {
                Access::Free => "free".to_owned(),
                Access::Paid(tier) if decl.streams => format!(
                    "paid, tier `{}`, {} {}; Server-Sent Events, resumable with `Last-Event-ID`",
                    tier.as_str(),
                    prices.of(tier),
                    prices.per_stream_payment()
                ),
                Access::Paid(tier) if decl.downloads => format!(
                    "paid, tier `{}`, {} per file; a file (Parquet, CSV or NDJSON) with HTTP ranges, `ETag` and a \
                     grant for its range requests",
                    tier.as_str(),
                    prices.of(tier)
                ),
                Access::Paid(tier) => format!("paid, tier `{}`, {} per call", tier.as_str(), prices.of(tier)),
                Access::Partner(tier) => format!(
                    "partner token only, a scope opening tier `{}`; Standard Webhooks, Slack or Discord deliveries",
                    tier.as_str()
                ),
            };
            let _ = writeln!(
                out,
                "- [{} {template}]({base}{reference}#operation/{id}): {summary} ({access}).",
                method.to_ascii_uppercase()
            );
        }
    }
    out
}
