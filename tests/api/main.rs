//! One integration-test binary: a real server, a real store, over HTTP. A module per area.
mod helpers;

mod access;
mod activity;
mod brief;
mod chain;
mod cli;
mod daos;
mod documents;
mod errors;
mod events;
mod evidence;
mod freshness;
mod governor;
mod health;
mod import;
mod ingest;
mod items;
mod lookup;
mod payments;
mod pricing;
mod publication;
mod signals;
mod upstreams;
mod v2_daos;
mod v2_lists;
mod v2_topics;
