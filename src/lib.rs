//! govdata: a read-only HTTP API serving DAO governance data to software agents.
//!
//! Layers go one way: `api` (HTTP, thin handlers) → `store` (domain queries) → database.
//! `rules` holds the domain rules as pure functions; `store` runs them over the facts it loads.
//! `contract` declares everything public once; `sample` and `ingest` are the only writers.
//! `x402` is the payment protocol the access gate (`api::gate`) speaks. `server` builds the app
//! and `connections` serves it (caps, timeouts, graceful drain).

// `Problem` (the RFC 9457 body) is the error of every handler; it is built only on the error
// path and turned into a response at once, so boxing it would buy nothing.
#![allow(clippy::result_large_err)]
pub mod api;
pub mod config;
pub mod connections;
pub mod contract;
pub mod ingest;
pub mod metrics;
pub mod rules;
pub mod sample;
pub mod server;
pub mod store;
pub mod x402;
