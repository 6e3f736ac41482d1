//! govdata: a read-only HTTP API serving DAO governance data to software agents.
//!
//! Layers go one way: `api` (HTTP, thin handlers) → `store` (domain queries) → database.
//! `contract` declares everything public once; `sample` and `ingest` are the only writers.
pub mod api;
pub mod config;
pub mod contract;
pub mod sample;
pub mod server;
pub mod store;
