//! One integration-test binary: a real server, a real store, over HTTP. A module per area.
mod helpers;

mod cli;
mod daos;
mod documents;
mod errors;
mod freshness;
mod health;
mod import;
mod pricing;
