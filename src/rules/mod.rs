//! Domain rules: pure functions over facts, no database, no HTTP.
//!
//! Nothing here reads the store or answers a request: callers load the facts (`store`), hand
//! them over, and keep what comes back. Numbers stay exact (`contract::decimal`); times are data
//! times, passed in, never the wall clock. Which modules and crates rules may name is held
//! by `layers` (`ALLOWED`: contract only; `KEPT_OUT`: no database, HTTP or runtime crates).
pub mod actions;
pub mod evidence;
pub mod lookup;
pub mod signals;
pub mod tally;
