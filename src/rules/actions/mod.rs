//! What a proposal would do: its actions decoded into named, typed calls (issue 47).
//!
//! Pure: the caller hands over the actions as proposed and what it knows (ABIs per contract,
//! tagged with their source; ERC-20 decimals and symbols; labels such as "the timelock"), and
//! keeps the answer. Nothing here fetches an ABI, reads a chain or stores a row: ingestion does
//! that once per action, so decoding costs no request anything.
//!
//! The raw values stay the truth: integers are exact decimal text, addresses EIP-55 checksummed,
//! bytes 0x-hex; whole-token amounts and summaries sit next to them, never instead of them.
//! Calldata that does not decode exactly (unknown or ambiguous selector, malformed, trailing or
//! non-canonical bytes) is answered undecoded with its reason, never guessed and never a panic.
//!
//! - `bundled`: the standard interfaces governance calls most, with their events and errors;
//! - `decode`: one call, log or revert against the caller's ABIs and the bundled table;
//! - `nested`: calls that carry calls (timelock, Safe, MultiSend, the Governor's `relay`);
//! - `summary`: the one-line deterministic summary of each action;
//! - `simulation`: a proposal's simulated execution as kept and served (the EVM runs in ingestion).
use std::collections::BTreeMap;

use alloy_json_abi::JsonAbi;
use alloy_primitives::{Address, U256};
use serde::{Serialize, Serializer};

pub mod bundled;
pub mod decode;
pub mod nested;
pub mod simulation;
pub mod summary;

pub use decode::{decode_call, decode_log, decode_revert};
pub use nested::decode_actions;

/// The version of this decoder's answers, stored with each decoded action: raised when the
/// answer for the same calldata and ABIs changes (the bundled table's changes included), so that
/// stored answers can be redone.
///
/// 2: ingestion gives the decoder ERC-20 metadata (`tokenAmount`, summaries in whole tokens),
/// Sourcify ABIs and the implementation behind an EIP-1967 proxy (`implementation`), so the
/// same calldata may decode differently from a version 1 row.
pub const DECODER_VERSION: i32 = 2;

/// Where the ABI that decoded an item came from, in the order sources are consulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AbiSource {
    /// An ABI file the DAO registry names for the contract.
    Registry,
    /// The contract's verified ABI on Sourcify.
    Sourcify,
    /// The verified ABI of the implementation behind a proxy, on Sourcify.
    SourcifyImplementation,
    /// The bundled table of standard interfaces (`bundled`).
    Bundled,
    /// The signature string the proposer gave (Compound Bravo): types only, no parameter names.
    Signature,
}

/// An ERC-20 as the store reads it once per token (`decimals()`, `symbol()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub symbol: String,
    pub decimals: u8,
}

/// What the caller knows about the contracts a proposal touches.
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// ABIs per contract, each tagged with its source, in the caller's order (registry first,
    /// then Sourcify, then the implementation behind a proxy); the bundled table comes after.
    pub abis: BTreeMap<Address, Vec<(AbiSource, JsonAbi)>>,
    /// ERC-20 tokens by contract address: their amounts are also given in whole tokens.
    pub tokens: BTreeMap<Address, Token>,
    /// Names summaries use for addresses ("the timelock", "the treasury Safe").
    pub labels: BTreeMap<Address, String>,
    /// The chain's native currency (symbol, 18 decimals on EVM chains), for summaries of value sent.
    pub native: Option<Token>,
    /// The implementation behind each proxy whose ABI is given as `SourcifyImplementation`
    /// (EIP-1967 implementation slot, or the beacon's `implementation()`): named in the answer.
    pub implementations: BTreeMap<Address, Address>,
}

impl Known {
    /// The caller's ABIs for one contract, in order.
    pub fn abis_of(&self, address: &Address) -> &[(AbiSource, JsonAbi)] {
        self.abis.get(address).map_or(&[], Vec::as_slice)
    }
}

/// An action as proposed: what the proposal's creation log carries for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProposedAction {
    #[serde(serialize_with = "checksummed")]
    pub target: Address,
    /// Wei sent with the call.
    #[serde(serialize_with = "decimal")]
    pub value: U256,
    /// The signature string where the proposer gave one (Compound Bravo): then `calldata` holds
    /// the arguments only, and the selector is `keccak256(signature)[0..4]` (§1.5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    #[serde(serialize_with = "hex_bytes")]
    pub calldata: Vec<u8>,
}

/// How a Safe makes an inner call (`Enum.Operation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Call,
    /// The target's code runs in the caller's context (MultiSend is used this way).
    DelegateCall,
}

/// One action decoded: as proposed, what it calls, and its summary. Inner calls of a wrapper
/// (timelock batch, Safe transaction, MultiSend, `relay`) are actions of their own, under `call`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    #[serde(serialize_with = "checksummed")]
    pub target: Address,
    #[serde(serialize_with = "decimal")]
    pub value: U256,
    /// Call or delegatecall, where a Safe gives one (inner calls of `execTransaction`, MultiSend).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<Operation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    #[serde(serialize_with = "hex_bytes")]
    pub calldata: Vec<u8>,
    /// The account making the call: the executor for a proposal's own actions, the wrapping
    /// contract for inner calls, and the wrapper's own sender for calls a delegatecall makes.
    #[serde(serialize_with = "checksummed")]
    pub sender: Address,
    pub call: Call,
    pub summary: String,
}

/// What the calldata of an action is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Call {
    /// Empty calldata: the value is sent (or the target's fallback runs).
    NativeTransfer,
    Decoded(DecodedCall),
    Undecoded(Undecoded),
}

/// A call decoded by one ABI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecodedCall {
    pub function: String,
    /// The canonical signature (`transfer(address,uint256)`), the selector's preimage.
    pub signature: String,
    /// 0x and 8 hex digits.
    pub selector: String,
    pub source: AbiSource,
    /// The implementation contract whose ABI decoded the call, where the target is a proxy
    /// (`source` is `sourcify_implementation`): EIP-55 checksummed.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "checksummed_opt")]
    pub implementation: Option<Address>,
    pub arguments: Vec<Argument>,
    /// The calls this call carries, where it is a known wrapper (`nested`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inner: Option<Inner>,
}

/// The calls a wrapper carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Inner {
    Decoded {
        calls: Vec<Action>,
    },
    /// Not decoded: the wrapper sits at the declared depth (`contract::limits::ACTION_NESTING_DEPTH`).
    DepthLimit {
        limit: usize,
    },
    /// The wrapper's arguments do not describe calls (MultiSend bytes cut short, batch arrays of
    /// different lengths, an operation that is neither call nor delegatecall).
    Malformed {
        message: String,
    },
}

/// A call, log or revert that did not decode, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Undecoded {
    /// The selector (0x + 8 hex digits; for a log its topic0, 0x + 64), where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    pub reason: Reason,
    /// The decoder's message, or what was wrong, where there is more to say than the reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Every known signature with this selector: several when it is ambiguous (never resolved
    /// silently), the one that failed when the arguments are malformed, none when unknown.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<String>,
}

/// Why an item did not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// 1 to 3 bytes of calldata or revert data: no selector (a log without topics: no topic0).
    TooShort,
    /// No known ABI has the selector (or topic0 with this many topics).
    UnknownSelector,
    /// More than one known signature has the selector: `candidates` lists them.
    AmbiguousSelector,
    /// The arguments do not decode as the signature's types (too short, an offset past the end).
    MalformedArguments,
    /// The arguments decode, and bytes follow them that no parameter reads.
    TrailingBytes,
    /// The arguments decode but are not in the canonical encoding (dirty padding, unusual
    /// offsets): another decoder may read other values from them, so none are shown.
    NonCanonical,
}

/// One argument of a call, log or error, or one member of a tuple.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Argument {
    /// The name the ABI gives it (none in a bare signature).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The canonical Solidity type (`uint256`, `(address,uint256)[]`).
    #[serde(rename = "type")]
    pub ty: String,
    pub value: Value,
    /// An event parameter in a topic. An indexed string, bytes, array or tuple is its keccak-256
    /// hash there (what the chain keeps), given as 0x-hex.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub indexed: bool,
    /// The amount in whole tokens, where this is the amount of a known ERC-20's call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_amount: Option<TokenAmount>,
}

/// An argument's value as JSON: integers as exact decimal text, addresses checksummed, bytes and
/// fixed bytes 0x-hex, strings as they are; arrays as lists; tuples as lists of members.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Value {
    Bool(bool),
    Text(String),
    List(Vec<Value>),
    Members(Vec<Argument>),
}

/// A raw token amount in whole tokens: `raw / 10^decimals`, exact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenAmount {
    /// Plain decimal text without trailing zeros (`1250000.5`).
    pub amount: String,
    pub symbol: String,
    pub decimals: u8,
}

/// A log decoded by one event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecodedLog {
    pub event: String,
    pub signature: String,
    /// 0x and 64 hex digits.
    pub topic0: String,
    pub source: AbiSource,
    /// In the event's parameter order, indexed ones marked.
    pub arguments: Vec<Argument>,
}

/// What a log is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Log {
    Decoded(DecodedLog),
    Undecoded(Undecoded),
}

/// Revert data decoded by one error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecodedRevert {
    pub error: String,
    pub signature: String,
    pub selector: String,
    pub source: AbiSource,
    pub arguments: Vec<Argument>,
    /// `Error(string)`'s message, or what a `Panic(uint256)` code means (Solidity's list).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What revert data is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Revert {
    /// No data: `revert()`, a failed `require` without a message, or out of gas.
    Empty,
    Decoded(DecodedRevert),
    Undecoded(Undecoded),
}

/// The contracts a proposal's decoded actions call, inner calls included, each once in the order
/// first met: what ingestion asks about before decoding them again (their ABIs on Sourcify, a
/// proxy's implementation). `tokens` are the targets of calls that move or allow an amount of
/// the called contract (ERC-20 `transfer`, `approve`, `transferFrom` and the allowance calls, as
/// any ABI or the bundled table identifies them): the contracts worth asking `decimals()` and
/// `symbol()`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Called {
    pub targets: Vec<Address>,
    pub tokens: Vec<Address>,
}

impl Called {
    pub fn of(actions: &[Action]) -> Self {
        let mut called = Self::default();
        called.walk(actions);
        called
    }

    fn walk(&mut self, actions: &[Action]) {
        for a in actions {
            if !self.targets.contains(&a.target) {
                self.targets.push(a.target);
            }
            if let Call::Decoded(call) = &a.call {
                if decode::amount_argument(&call.signature).is_some() && !self.tokens.contains(&a.target) {
                    self.tokens.push(a.target);
                }
                if let Some(Inner::Decoded { calls }) = &call.inner {
                    self.walk(calls);
                }
            }
        }
    }
}

/// 0x-hex, lower case.
pub fn hex(bytes: &[u8]) -> String {
    alloy_primitives::hex::encode_prefixed(bytes)
}

fn checksummed<S: Serializer>(address: &Address, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&address.to_checksum(None))
}

fn checksummed_opt<S: Serializer>(address: &Option<Address>, s: S) -> Result<S::Ok, S::Error> {
    match address {
        Some(a) => checksummed(a, s),
        None => s.serialize_none(),
    }
}

fn decimal<S: Serializer>(value: &U256, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&value.to_string())
}

fn hex_bytes<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&hex(bytes))
}
