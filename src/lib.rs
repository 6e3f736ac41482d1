//! govdata: a read-only HTTP API serving DAO governance data to software agents.
//!
//! Where things live:
//! - `contract`: every public fact, declared once and importing nothing of the crate: the
//!   operation table (ids, tiers, errors), limits, error codes and problem bodies, envelopes,
//!   parameter types, the vocabulary (sources, states, kinds, key prefixes), exact decimals,
//!   the published documents.
//! - `rules`: domain rules as pure functions over facts (signals, one file per rule; tallies;
//!   lookup ranking; evidence; decoding proposal actions).
//! - `store`: the database: entities, migrations, domain queries; it runs the rules over the
//!   facts it loads and publishes revisions atomically.
//! - `sample` and `ingest`: the only writers (the bundled sample; Snapshot, Discourse and
//!   on-chain connectors), writing through `store`.
//! - `api`: the HTTP surfaces, reading only: one controller per resource in `api/v1` and
//!   `api/v2`, shared response types in `api::views`, the documents made from them.
//! - `edge`: everything around the surfaces: the request id and problem bodies, routing to an
//!   operation, the access gate, payment, rate limits, the response cache and live refresh, the
//!   serving watch, query bounds, store errors, MCP, and the paths that are not operations.
//! - `push`: the feed pushed out: the webhook delivery queue, sender, signatures and address
//!   guard, the event-stream hub, and the operators' `govdata webhooks` commands.
//! - `exports`: whole tables as Parquet, CSV and NDJSON files, streamed from `store`.
//! - `x402`: the payment protocol the gate speaks; `config`: plain settings from flags;
//!   `connections` serves the app (caps, timeouts, drain); `server` only wires: binds, assembles
//!   the state, builds the route tree, and adapts live refresh (`edge::live::Refresh`) to
//!   `ingest`.
//!
//! `layers` holds which module may import which, and a test keeps the code to it.

// `Problem` (the RFC 9457 body) is the error of every handler; it is built only on the error
// path and turned into a response at once, so boxing it would buy nothing.
#![allow(clippy::result_large_err)]

pub mod allocator;
pub mod api;
pub mod config;
pub mod connections;
pub mod contract;
pub mod edge;
pub mod exports;
pub mod ingest;
pub mod layers;
pub mod metrics;
pub mod push;
pub mod rules;
pub mod sample;
pub mod server;
pub mod store;
pub mod x402;
