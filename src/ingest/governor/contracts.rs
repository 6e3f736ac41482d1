//! What decoding learns about the contracts a proposal calls, before it decodes the actions:
//! - the contract's verified ABI on Sourcify, when Sourcify is configured;
//! - for an EIP-1967 proxy (the implementation slot, or the beacon slot and the beacon's
//!   `implementation()`, read with `eth_getStorageAt` at the latest block), the verified ABI of
//!   its implementation, which decodes the call as `sourcify_implementation` and is named in
//!   the answer;
//! - for the targets of ERC-20 `transfer`/`approve`/`transferFrom`-like calls, `decimals()` and
//!   `symbol()`, so that amounts read in whole tokens.
//!
//! Sourcify's answers and the tokens' metadata are kept per (chain, address) in the store,
//! negative ones too, and asked again only when due (`store::contracts`): each is asked once,
//! not once per run. A Sourcify that fails (down, slow, 5xx) never fails the run: the answer is
//! kept as a failure, due again soon, the run asks Sourcify nothing more (a Sourcify down costs
//! a run one lookup's bounded timeout), and the actions are decoded with what else is known. A
//! node that cannot be asked fails the run, as for the timelock: actions are stored once, and
//! must not be decoded with a guess of what the chain holds. Contracts the registry gives an
//! ABI for are asked nothing. A run examines at most `CONTRACT_LOOKUPS_PER_RUN` contracts and
//! `TOKEN_LOOKUPS_PER_RUN` tokens; those beyond are decoded with what is known already.
use std::collections::{BTreeMap, BTreeSet};

use alloy_json_abi::JsonAbi;
use alloy_primitives::{Address, B256, Bytes, U256, b256};
use alloy_sol_types::SolCall;
use serde_json::json;

use super::GovernorConnector;
use super::abi::{decimalsCall, implementationCall, symbolCall};
use super::actions::reverted;
use crate::contract::limits::{CONTRACT_LOOKUPS_PER_RUN, TOKEN_LOOKUPS_PER_RUN};
use crate::ingest::Sink;
use crate::rules::actions::{self, AbiSource, Called, Known, ProposedAction, Token};
use crate::store::contracts::{self as kept, AbiAnswer};

/// `bytes32(uint256(keccak256('eip1967.proxy.implementation')) - 1)`.
pub(super) const IMPLEMENTATION_SLOT: B256 =
    b256!("0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc");
/// `bytes32(uint256(keccak256('eip1967.proxy.beacon')) - 1)`.
pub(super) const BEACON_SLOT: B256 = b256!("0xa3f0ad74e5423aebfd80d3ef4346578335a9a72aeaee59ff6cb3582b35133d50");

/// The longest token symbol kept, in characters (longer ones are cut): a symbol is the token's
/// own text, and summaries quote it.
const SYMBOL_MAX_CHARS: usize = 32;

/// What one run has learned so far.
#[derive(Default)]
pub(super) struct Learned {
    /// Contracts examined (proxy slots read, Sourcify asked or its kept answer read).
    contracts: BTreeSet<Address>,
    /// Tokens examined.
    tokens: BTreeSet<Address>,
    /// Sourcify's ABIs by address, as read this run (`None`: none usable).
    abis: BTreeMap<Address, Option<JsonAbi>>,
    /// Whether the run has said that it stopped examining contracts (or tokens).
    told: (bool, bool),
    /// Whether a Sourcify lookup failed in this run: then no other is made before the next run,
    /// so that a Sourcify down or hanging costs a run one lookup's timeout, not one per contract.
    sourcify_down: bool,
}

/// The address an EIP-1967 slot holds: its low 20 bytes, when it holds one (a zero word means
/// "not this kind of proxy"; a word with its high 12 bytes set holds no address).
pub(super) fn slot_address(word: B256) -> Option<Address> {
    (word != B256::ZERO && word[..12].iter().all(|b| *b == 0)).then(|| Address::from_slice(&word[12..]))
}

/// A token's `symbol()` answer: a string, or (older tokens such as MKR) a bytes32 padded with
/// zeros; kept without control characters, at most `SYMBOL_MAX_CHARS`.
pub(super) fn symbol_of(out: &[u8]) -> Option<String> {
    let text = match symbolCall::abi_decode_returns(out) {
        Ok(text) => text,
        Err(_) if out.len() == 32 => {
            let end = out.iter().position(|b| *b == 0).unwrap_or(32);
            String::from_utf8(out[..end].to_vec()).ok()?
        }
        Err(_) => return None,
    };
    let clean: String = text.chars().filter(|c| !c.is_control()).take(SYMBOL_MAX_CHARS).collect();
    let clean = clean.trim().to_owned();
    (!clean.is_empty()).then_some(clean)
}

impl GovernorConnector {
    /// Learns what `proposed` calls need (see the module's doc) into `known`.
    pub(super) async fn learn(
        &self,
        proposed: &[ProposedAction],
        executor: &Address,
        known: &mut Known,
        learned: &mut Learned,
        sink: &mut Sink<'_>,
    ) -> anyhow::Result<()> {
        // A first decoding with what is known names the contracts called, inner calls included.
        let called = Called::of(&actions::decode_actions(known, executor, proposed));
        let mut more = false;
        if self.sourcify.is_some() {
            for target in called.targets {
                if learned.contracts.contains(&target) {
                    continue;
                }
                if learned.contracts.len() >= CONTRACT_LOOKUPS_PER_RUN {
                    if !learned.told.0 {
                        learned.told.0 = true;
                        sink.skip(format!(
                            "{}: more than {CONTRACT_LOOKUPS_PER_RUN} contracts called in one run; the others' \
                             actions are decoded without Sourcify",
                            self.dao_id
                        ));
                    }
                    break;
                }
                learned.contracts.insert(target);
                more |= self.learn_contract(target, known, learned, sink).await?;
            }
        }
        // A proxy's implementation may have made a call an ERC-20 transfer: name the tokens again.
        let tokens =
            if more { Called::of(&actions::decode_actions(known, executor, proposed)).tokens } else { called.tokens };
        for token in tokens {
            if known.tokens.contains_key(&token) || learned.tokens.contains(&token) {
                continue;
            }
            if learned.tokens.len() >= TOKEN_LOOKUPS_PER_RUN {
                if !learned.told.1 {
                    learned.told.1 = true;
                    sink.skip(format!(
                        "{}: more than {TOKEN_LOOKUPS_PER_RUN} tokens moved in one run; the others' amounts are \
                         given without their decimals",
                        self.dao_id
                    ));
                }
                break;
            }
            learned.tokens.insert(token);
            if let Some(t) = self.token(token).await? {
                known.tokens.insert(token, t);
            }
        }
        Ok(())
    }

    /// Sourcify's ABI of `target` and, behind a proxy, of its implementation; whether any was
    /// added to `known`.
    async fn learn_contract(
        &self,
        target: Address,
        known: &mut Known,
        learned: &mut Learned,
        sink: &mut Sink<'_>,
    ) -> anyhow::Result<bool> {
        if known.abis_of(&target).iter().any(|(source, _)| *source == AbiSource::Registry) {
            return Ok(false);
        }
        let mut added = Vec::new();
        if let Some(abi) = self.sourcify_abi(target, learned, sink).await? {
            added.push((AbiSource::Sourcify, abi));
        }
        if let Some(implementation) = self.implementation(target).await?
            && let Some(abi) = self.sourcify_abi(implementation, learned, sink).await?
        {
            added.push((AbiSource::SourcifyImplementation, abi));
            known.implementations.insert(target, implementation);
        }
        let any = !added.is_empty();
        let abis = known.abis.entry(target).or_default();
        abis.extend(added);
        abis.sort_by_key(|(source, _)| *source);
        Ok(any)
    }

    /// Sourcify's verified ABI of `address`: read this run, else kept in the store and not due,
    /// else asked (and kept, whatever the answer).
    async fn sourcify_abi(
        &self,
        address: Address,
        learned: &mut Learned,
        sink: &mut Sink<'_>,
    ) -> anyhow::Result<Option<JsonAbi>> {
        let Some(sourcify) = &self.sourcify else { return Ok(None) };
        if let Some(abi) = learned.abis.get(&address) {
            return Ok(abi.clone());
        }
        let chain = self.source.chain_id as i64;
        let lower = super::lower(address);
        let now = crate::contract::time::now_ms();
        let answer = match kept::abi(&self.db, chain, &lower).await? {
            Some(row) if !kept::due(row.retry_ms, now) => match (row.status.as_str(), row.abi, row.match_kind) {
                ("verified", Some(abi), Some(match_kind)) => AbiAnswer::Verified { abi, match_kind },
                ("failed", _, _) => AbiAnswer::Failed(row.message.unwrap_or_default()),
                _ => AbiAnswer::NotVerified,
            },
            // Sourcify failed earlier in this run: nothing is asked, nothing kept (the contract
            // is asked on the next run that decodes a call to it).
            _ if learned.sourcify_down => return Ok(None),
            _ => {
                let answer = sourcify.lookup(self.source.chain_id, &address).await;
                kept::keep_abi(&self.db, chain, &lower, &answer, now).await?;
                if let AbiAnswer::Failed(why) = &answer {
                    learned.sourcify_down = true;
                    sink.skip(format!(
                        "{}: Sourcify could not be asked about {lower} ({why}); this run asks it nothing more and \
                         decodes without it, and the contract is asked again later",
                        self.dao_id
                    ));
                }
                answer
            }
        };
        let abi = match answer {
            AbiAnswer::Verified { abi, .. } => serde_json::from_str::<JsonAbi>(&abi).ok(),
            _ => None,
        };
        learned.abis.insert(address, abi.clone());
        Ok(abi)
    }

    /// The implementation behind `target` where it is an EIP-1967 proxy: the implementation
    /// slot, else the beacon slot and the beacon's `implementation()`.
    async fn implementation(&self, target: Address) -> anyhow::Result<Option<Address>> {
        if let Some(implementation) = self.slot(target, IMPLEMENTATION_SLOT).await? {
            return Ok(Some(implementation));
        }
        let Some(beacon) = self.slot(target, BEACON_SLOT).await? else { return Ok(None) };
        match self.call_to(&super::lower(beacon), implementationCall {}, json!("latest")).await {
            Ok(implementation) if implementation != Address::ZERO => Ok(Some(implementation)),
            Ok(_) => Ok(None),
            Err(e) if reverted(&e) => Ok(None),
            Err(e) => Err(e.context("beacon.implementation")),
        }
    }

    /// The address in storage slot `slot` of `target`, if it holds one.
    async fn slot(&self, target: Address, slot: B256) -> anyhow::Result<Option<Address>> {
        match self.rpc::<U256>("eth_getStorageAt", json!([target, slot, "latest"])).await {
            Ok(word) => Ok(slot_address(B256::from(word))),
            Err(e) if reverted(&e) => Ok(None),
            Err(e) => Err(e.context("eth_getStorageAt")),
        }
    }

    /// `token`'s ERC-20 metadata: kept in the store and not due, else read and kept.
    async fn token(&self, token: Address) -> anyhow::Result<Option<Token>> {
        let chain = self.source.chain_id as i64;
        let lower = super::lower(token);
        let now = crate::contract::time::now_ms();
        if let Some(row) = kept::token(&self.db, chain, &lower).await?
            && !kept::due(row.retry_ms, now)
        {
            return Ok(match (row.symbol, row.decimals.and_then(|d| u8::try_from(d).ok())) {
                (Some(symbol), Some(decimals)) => Some(Token { symbol, decimals }),
                _ => None,
            });
        }
        let decimals = match self.call_to(&lower, decimalsCall {}, json!("latest")).await {
            Ok(decimals) => Some(decimals),
            Err(e) if reverted(&e) => None,
            Err(e) => return Err(e.context("token.decimals")),
        };
        let symbol = match decimals {
            None => None,
            Some(_) => {
                let tx = json!({"to": lower, "data": Bytes::from(symbolCall {}.abi_encode())});
                match self.rpc::<Bytes>("eth_call", json!([tx, "latest"])).await {
                    Ok(out) => symbol_of(&out),
                    Err(e) if reverted(&e) => None,
                    Err(e) => return Err(e.context("token.symbol")),
                }
            }
        };
        let erc20 = symbol.zip(decimals);
        kept::keep_token(&self.db, chain, &lower, erc20.as_ref().map(|(s, d)| (s.as_str(), *d)), now).await?;
        Ok(erc20.map(|(symbol, decimals)| Token { symbol, decimals }))
    }
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{address, keccak256};
    use alloy_sol_types::SolValue;

    use super::*;

    #[test]
    fn the_slots_are_the_eip1967_preimages_less_one() {
        for (slot, preimage) in
            [(IMPLEMENTATION_SLOT, "eip1967.proxy.implementation"), (BEACON_SLOT, "eip1967.proxy.beacon")]
        {
            let word = U256::from_be_bytes(keccak256(preimage).0) - U256::from(1);
            assert_eq!(B256::from(word), slot, "{preimage}");
        }
    }

    #[test]
    fn a_slot_holds_an_address_in_its_low_bytes_or_none() {
        let a = address!("0x5FbDB2315678afecb367f032d93F642f64180aa3");
        assert_eq!(slot_address(a.into_word()), Some(a));
        assert_eq!(slot_address(B256::ZERO), None, "empty: not this kind of proxy");
        let mut dirty = a.into_word();
        dirty[0] = 1;
        assert_eq!(slot_address(dirty), None, "a word with high bytes set is no address");
        // As a node answers it (hex of a U256), read back to the same word.
        let node: U256 = serde_json::from_value(json!(format!("{:#x}", U256::from_be_bytes(a.into_word().0)))).unwrap();
        assert_eq!(slot_address(B256::from(node)), Some(a));
    }

    #[test]
    fn symbols_are_strings_or_bytes32_cleaned() {
        assert_eq!(symbol_of(&"GOV".to_string().abi_encode()), Some("GOV".into()));
        let mut mkr = [0u8; 32];
        mkr[..3].copy_from_slice(b"MKR");
        assert_eq!(symbol_of(&mkr), Some("MKR".into()));
        assert_eq!(symbol_of(&"A\nB\u{7}".to_string().abi_encode()), Some("AB".into()));
        assert_eq!(symbol_of(&"x".repeat(100).abi_encode()).map(|s| s.chars().count()), Some(SYMBOL_MAX_CHARS));
        assert_eq!(symbol_of(&"".to_string().abi_encode()), None);
        assert_eq!(symbol_of(&[1, 2, 3]), None);
    }
}
