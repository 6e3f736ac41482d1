//! On-chain governors over Ethereum JSON-RPC: OpenZeppelin Governor and Compound GovernorBravo
//! (which share every event signature read here), and the governance token's delegation events.
//!
//! Logs are read with `eth_getLogs` in bounded block ranges (halved when a node refuses a range)
//! up to `head - confirmations`, so a reorg cannot rewrite what was stored; the next run resumes
//! after the last block read. Events are decoded by ABI types. Amounts are uint256 and stay
//! exact: decimal text of the integer in the token's smallest unit (wei).
//!
//! The proposal state, the tallies and the quorum come from the governor itself (`state`,
//! `proposalVotes`, `quorum`), read for every proposal the run saw and every stored one that can
//! still change.
//!
//! The files: `abi` (the events and functions), `rpc` (the JSON-RPC client and block times),
//! `block_ranges` (the ranges `eth_getLogs` is asked for), `actions` (each proposal's actions,
//! decoded), `simulate` (what the active, succeeded and queued ones would do, run with revm), `votes` (casts decoded and summed),
//! `delegation_history` (delegation changes and power checkpoints), `proposals` (the governor's
//! view of each proposal), `actions` (each proposal's actions, decoded), `contracts` (what
//! decoding learns about the contracts they call: Sourcify ABIs, proxies, ERC-20 metadata),
//! `lifecycle` (each proposal's queue, execution and cancellation) and `connector` (one run,
//! which ties them together).
use alloy_primitives::Address;

mod abi;
mod actions;
mod block_ranges;
mod connector;
mod contracts;
mod delegation_history;
mod lifecycle;
mod proposals;
mod rpc;
mod simulate;
mod votes;

pub use connector::GovernorConnector;
pub use proposals::{CHOICES, ORIGIN};
pub use simulate::PreparedSimulation;

/// An address as records hold it: lowercase 0x hex.
fn lower(a: Address) -> String {
    format!("{a:#x}")
}
