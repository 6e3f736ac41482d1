//! The JSON-RPC client a governor connector reads the chain with: raw requests, `eth_getLogs`,
//! `eth_call` of the ABI's functions, and block times read once per block.
use std::collections::HashMap;

use alloy_primitives::{Address, B256, Bytes, U256};
use alloy_sol_types::{SolCall, SolEvent};
use anyhow::Context;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::GovernorConnector;
use super::abi::*;
use crate::ingest::UpstreamError;

#[derive(Debug, Deserialize)]
struct RpcResponse<T> {
    result: Option<T>,
    error: Option<RpcError>,
}

#[derive(Debug, Deserialize)]
struct RpcError {
    code: i64,
    message: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Log {
    pub(super) address: Address,
    pub(super) topics: Vec<B256>,
    pub(super) data: Bytes,
    pub(super) block_number: U256,
    #[serde(default)]
    pub(super) log_index: Option<U256>,
    /// The block's time, which recent nodes (geth, reth, anvil) put in each log: when present, no
    /// `eth_getBlockByNumber` is needed for it.
    #[serde(default)]
    pub(super) block_timestamp: Option<U256>,
    pub(super) transaction_hash: Option<B256>,
    #[serde(default)]
    pub(super) removed: bool,
}

#[derive(Debug, Deserialize)]
struct Block {
    timestamp: U256,
}

impl GovernorConnector {
    pub(super) async fn rpc<T: DeserializeOwned>(&self, method: &str, params: serde_json::Value) -> anyhow::Result<T> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let response: RpcResponse<T> = self.upstream.post_json(&self.source.rpc_url, &body).await?;
        if let Some(e) = response.error {
            return Err(UpstreamError::Protocol {
                url: self.source.rpc_url.clone(),
                reason: format!("{method}: JSON-RPC error {}: {}", e.code, e.message),
            }
            .into());
        }
        response.result.ok_or_else(|| {
            UpstreamError::Malformed { url: self.source.rpc_url.clone(), reason: format!("{method}: no `result`") }
                .into()
        })
    }

    pub(super) async fn logs(&self, governor: Address, token: Address, from: u64, to: u64) -> anyhow::Result<Vec<Log>> {
        let topics = [
            ProposalCreated::SIGNATURE_HASH,
            VoteCast::SIGNATURE_HASH,
            VoteCastWithParams::SIGNATURE_HASH,
            ProposalQueued::SIGNATURE_HASH,
            ProposalExecuted::SIGNATURE_HASH,
            ProposalCanceled::SIGNATURE_HASH,
            DelegateVotesChanged::SIGNATURE_HASH,
            DelegateChanged::SIGNATURE_HASH,
        ];
        self.logs_of(&[governor, token], &topics, from, to).await
    }

    /// `eth_getLogs` of `addresses` with any of `topics` first, over blocks `from..=to`.
    pub(super) async fn logs_of(
        &self,
        addresses: &[Address],
        topics: &[B256],
        from: u64,
        to: u64,
    ) -> anyhow::Result<Vec<Log>> {
        let filter = json!([{
            "fromBlock": format!("{from:#x}"),
            "toBlock": format!("{to:#x}"),
            "address": addresses,
            "topics": [topics],
        }]);
        self.rpc("eth_getLogs", filter).await
    }

    pub(super) async fn call<C: SolCall>(&self, call: C) -> anyhow::Result<C::Return> {
        self.call_at(call, json!("latest")).await
    }

    /// `call` as the governor answered at `block` (a number or a tag).
    pub(super) async fn call_at<C: SolCall>(&self, call: C, block: serde_json::Value) -> anyhow::Result<C::Return> {
        self.call_to(&self.source.governor, call, block).await
    }

    /// `call` to the contract at `to`, as it answered at `block`.
    pub(super) async fn call_to<C: SolCall>(
        &self,
        to: &str,
        call: C,
        block: serde_json::Value,
    ) -> anyhow::Result<C::Return> {
        let tx = json!({"to": to, "data": Bytes::from(call.abi_encode())});
        let out: Bytes = self.rpc("eth_call", json!([tx, block])).await?;
        Ok(C::abi_decode_returns(&out)?)
    }
}

/// Block timestamps, read once per block.
#[derive(Default)]
pub(super) struct BlockTimes(HashMap<u64, i64>);

impl BlockTimes {
    /// Keeps the time of `block` a log carried.
    pub(super) fn note(&mut self, block: u64, seconds: U256) -> anyhow::Result<()> {
        let ms = i64::try_from(u64_of(seconds)?).context("block timestamp")?.saturating_mul(1000);
        self.0.insert(block, ms);
        Ok(())
    }

    pub(super) async fn get(&mut self, c: &GovernorConnector, block: u64) -> anyhow::Result<i64> {
        if let Some(ms) = self.0.get(&block) {
            return Ok(*ms);
        }
        let b: Option<Block> = c.rpc("eth_getBlockByNumber", json!([format!("{block:#x}"), false])).await?;
        let b = b.with_context(|| format!("block {block} is unknown to the node"))?;
        self.note(block, b.timestamp)?;
        Ok(self.0[&block])
    }
}

pub(super) fn u64_of(v: U256) -> anyhow::Result<u64> {
    u64::try_from(v).map_err(|_| anyhow::anyhow!("{v} does not fit a block number"))
}
