//! Domain rules: pure functions over facts, no database, no HTTP.
//!
//! Nothing here reads the store or answers a request: callers load the facts (`store`), hand
//! them over, and keep what comes back. Numbers stay exact (`store::decimal`, moving to
//! `contract` later); times are data times, passed in, never the wall clock.
pub mod signals;
pub mod tally;
