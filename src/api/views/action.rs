//! A proposal's actions as v2 serves them (issue 47): each action as proposed, with the answer
//! `rules::actions` decoded for it at ingestion.
//!
//! The decoded answer is stored as the serde JSON of [`rules::actions::Action`] (the
//! `proposal_actions.decoded` column); these types mirror that JSON exactly, member for member,
//! and are read from it with poem-openapi's [`ParseFromJSON`]: a request parses stored JSON and
//! decodes nothing. A variant of the stored shape (the call's `kind`, the inner calls' `status`)
//! is one object with a discriminating member and the members of every variant optional, each
//! documented with the variant it belongs to: what the JSON holds, and what SDK generators read
//! best. A unit test holds the mirror: rich answers serialised by serde, parsed here and written
//! again come out equal, so a member added to the rules' types without its view fails it.
//!
//! [`rules::actions::Action`]: crate::rules::actions::Action
use std::borrow::Cow;

use poem_openapi::{
    Enum, Object,
    registry::{MetaSchema, MetaSchemaRef, Registry},
    types::{ParseError, ParseFromJSON, ParseResult, ToJSON, Type},
};
use serde_json::Value;

use crate::store::entities::proposal_action;

/// One action of a proposal: as the proposal proposed it, and what it calls.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct ProposalAction {
    /// The action's place in the proposal's arrays, from 0: the order in which it executes.
    pub position: i32,
    /// How the proposal executes its actions: `governor` (by the on-chain governor, through its
    /// timelock where it has one, else itself) or `safe_module` (a Snapshot proposal's oSnap
    /// transactions, executed from the Safe by UMA's Optimistic Governor module after the
    /// oracle's challenge period; `decoded.sender` is the Safe). An open set, not an enum: read a
    /// value you do not know as "another executor".
    pub execution_path: String,
    /// The target as proposed: a lowercase 0x address.
    pub target: String,
    /// The wei the call sends, as proposed: exact decimal text.
    pub value_wei: String,
    /// The signature string the proposer gave (Compound Bravo), when it gave one: `calldata` then
    /// holds the arguments only. Absent when none was given (OpenZeppelin governors).
    pub signature: Option<String>,
    /// The calldata as proposed: 0x-hex, lower case.
    pub calldata: String,
    /// What the action calls, decoded when it was ingested (never at request time). Absent only
    /// when the stored answer cannot be read by this server: then `decodedUnreadable` says so,
    /// and the raw values above stay the truth.
    pub decoded: Option<Action>,
    /// Why `decoded` is absent: the decoded answer stored for this action could not be read
    /// (written by another version of the decoder). The action is still served with its raw
    /// values; nothing is guessed. Absent whenever `decoded` is given.
    pub decoded_unreadable: Option<String>,
}

/// The first actions of a proposal, inline in its detail: how many it has, and where to read the
/// rest.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct ProposalActionsInline {
    /// How many actions the proposal has, exact decimal text.
    pub total: String,
    /// The first actions in position order: all of them when the proposal has at most
    /// {{PROPOSAL_DETAIL_ACTIONS}}, else the first {{PROPOSAL_DETAIL_ACTIONS}}.
    pub items: Vec<ProposalAction>,
    /// True when the proposal has more actions than `items` holds: `next` reads the rest.
    pub has_more: bool,
    /// When `hasMore`: the `cursor` of `GET /v2/proposals/{proposalKey}/actions` that continues
    /// after the last of `items`. It is bound to that list's default page size
    /// ({{PROPOSAL_ACTIONS_DEFAULT}}): send it without `limit`.
    pub next_cursor: Option<String>,
    /// When `hasMore`: that request as a path and query,
    /// `/v2/proposals/{proposalKey}/actions?cursor=…`, ready to follow.
    pub next: Option<String>,
}

/// An action decoded: the call as made (a proposal's own action, or an inner call of a wrapper),
/// what it calls, and a one-line summary. Integers are exact decimal text, addresses EIP-55
/// checksummed, bytes 0x-hex.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct Action {
    /// The contract called, EIP-55 checksummed.
    pub target: String,
    /// Wei sent with the call, exact decimal text.
    pub value: String,
    /// Call or delegatecall, where a Safe gives one (inner calls of `execTransaction` and
    /// MultiSend); absent otherwise.
    pub operation: Option<ActionOperation>,
    /// The signature string the proposer gave (Compound Bravo), when it gave one.
    pub signature: Option<String>,
    /// The calldata, 0x-hex.
    pub calldata: String,
    /// The account making the call: the executor (the timelock, or the governor where there is
    /// none) for a proposal's own actions, the wrapping contract for inner calls.
    pub sender: String,
    pub call: ActionCall,
    /// One deterministic line saying what the action does (`transfer 1,250,000 UNI from the
    /// timelock to 0x…`); the values above stay the truth.
    pub summary: String,
}

/// Call or delegatecall (Safe's `Enum.Operation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum ActionOperation {
    Call,
    /// The target's code runs in the caller's context (MultiSend is used this way).
    DelegateCall,
}

/// What an action's calldata is. `kind` says which members are present: `native_transfer`
/// (empty calldata: the value is sent, or the target's fallback runs) has none; `decoded` has
/// `function`, `signature`, `selector`, `source`, `arguments` and, for a known wrapper, `inner`;
/// `undecoded` has `reason`, and `selector`, `message` and `candidates` where there are some.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct ActionCall {
    pub kind: ActionCallKind,
    /// `decoded`: the function's name.
    pub function: Option<String>,
    /// `decoded`: the canonical signature (`transfer(address,uint256)`), the selector's preimage.
    pub signature: Option<String>,
    /// `decoded`: the selector, 0x and 8 hex digits. `undecoded`: the same, when the calldata has
    /// one (4 bytes or more).
    pub selector: Option<String>,
    /// `decoded`: where the ABI that decoded the call came from.
    pub source: Option<ActionAbiSource>,
    /// `decoded` with `source` `sourcify_implementation`: the implementation contract (EIP-55)
    /// whose ABI decoded the call, behind the proxy the action calls (its EIP-1967 implementation
    /// slot, or its beacon's `implementation()`).
    pub implementation: Option<String>,
    /// `decoded`: the arguments, in the function's order.
    pub arguments: Option<Vec<ActionArgument>>,
    /// `decoded`, for a call that carries calls (TimelockController `schedule`, `scheduleBatch`,
    /// `execute`, `executeBatch`; Safe `execTransaction`; MultiSend; the Governor's `relay`): the
    /// calls it carries, decoded recursively to a depth of {{ACTION_NESTING_DEPTH}}.
    pub inner: Option<ActionInner>,
    /// `undecoded`: why the calldata was not decoded.
    pub reason: Option<ActionUndecodedReason>,
    /// `undecoded`: the decoder's message, where there is more to say than the reason.
    pub message: Option<String>,
    /// `undecoded`: every known signature with this selector: several when it is ambiguous
    /// (never resolved silently), the one that failed when the arguments are malformed; absent
    /// when the selector is unknown.
    pub candidates: Option<Vec<String>>,
}

/// The kinds of calldata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum ActionCallKind {
    /// Empty calldata: the value is sent (or the target's fallback runs).
    NativeTransfer,
    /// Decoded by one ABI.
    Decoded,
    /// Not decoded: `reason` says why.
    Undecoded,
}

/// Where the ABI that decoded a call came from, in the order the sources are consulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum ActionAbiSource {
    /// An ABI file the DAO registry names for the contract.
    Registry,
    /// The contract's verified ABI on Sourcify.
    Sourcify,
    /// The verified ABI of the implementation behind a proxy, on Sourcify.
    SourcifyImplementation,
    /// The bundled table of standard interfaces (ERC-20, ERC-721, ERC-1155, Governor,
    /// TimelockController, Safe).
    Bundled,
    /// The signature string the proposer gave (Compound Bravo): types only, no parameter names.
    Signature,
}

/// Why calldata did not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum ActionUndecodedReason {
    /// 1 to 3 bytes of calldata: no selector.
    TooShort,
    /// No known ABI has the selector.
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

/// The calls a wrapper carries. `status` says which member is present: `decoded` has `calls`;
/// `depth_limit` has `limit` (the wrapper sits at the declared depth, its calls are not
/// decoded); `malformed` has `message` (the wrapper's arguments do not describe calls).
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct ActionInner {
    pub status: ActionInnerStatus,
    /// `decoded`: the inner calls, in order, each an action of its own.
    pub calls: Option<Vec<Action>>,
    /// `depth_limit`: the declared depth ({{ACTION_NESTING_DEPTH}}).
    pub limit: Option<i64>,
    /// `malformed`: what is wrong (MultiSend bytes cut short, batch arrays of different lengths,
    /// an operation that is neither call nor delegatecall).
    pub message: Option<String>,
}

/// What became of a wrapper's inner calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum ActionInnerStatus {
    /// Decoded: `calls`.
    Decoded,
    /// Not decoded: the wrapper sits at the declared depth.
    DepthLimit,
    /// Not decoded: the wrapper's arguments do not describe calls.
    Malformed,
}

/// One argument of a call, or one member of a tuple.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct ActionArgument {
    /// The name the ABI gives it; absent in a bare signature.
    pub name: Option<String>,
    /// The canonical Solidity type (`uint256`, `(address,uint256)[]`).
    #[oai(rename = "type")]
    pub ty: String,
    pub value: ActionArgumentValue,
    /// Present (and true) for an event parameter in a topic: an indexed string, bytes, array or
    /// tuple is its keccak-256 hash there, given as 0x-hex.
    pub indexed: Option<bool>,
    /// The amount in whole tokens, where this is the amount of a known ERC-20's call.
    pub token_amount: Option<ActionTokenAmount>,
}

/// A raw token amount in whole tokens: `raw ÷ 10^decimals`, exact.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase")]
pub struct ActionTokenAmount {
    /// Plain decimal text without trailing zeros (`1250000.5`).
    pub amount: String,
    pub symbol: String,
    pub decimals: i32,
}

/// An argument's value: a boolean (`bool`); a string (integers as exact decimal text, addresses
/// EIP-55 checksummed, bytes and fixed bytes 0x-hex, strings as they are); a list of values (an
/// array); or a list of arguments (a tuple's members, each with its name, type and value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionArgumentValue {
    Bool(bool),
    Text(String),
    List(Vec<ActionArgumentValue>),
    Members(Vec<ActionArgument>),
}

const ARGUMENT_VALUE: &str = "ActionArgumentValue";
/// Levels of nested lists the published schema of a value spells out (`uint256[][][][]`; a
/// tuple's members are objects at any level).
const ARGUMENT_VALUE_LEVELS: usize = 4;

/// The forms of a value with `levels` levels of lists below it: a boolean, a string, and (when a
/// level is left) a list whose elements are values of one level fewer or tuple members (objects).
fn value_forms(levels: usize) -> Vec<MetaSchemaRef> {
    let inline = |schema: MetaSchema| MetaSchemaRef::Inline(Box::new(schema));
    let mut forms = vec![
        inline(MetaSchema { description: Some("A `bool`."), ..MetaSchema::new("boolean") }),
        inline(MetaSchema {
            description: Some(
                "An integer as exact decimal text, an address EIP-55 checksummed, bytes 0x-hex, or a string.",
            ),
            ..MetaSchema::new("string")
        }),
    ];
    if let Some(below) = levels.checked_sub(1) {
        let mut element = value_forms(below);
        element.push(inline(MetaSchema {
            description: Some("A tuple member: an `ActionArgument`."),
            ..MetaSchema::new("object")
        }));
        forms.push(inline(MetaSchema {
            description: Some("An array's elements, or a tuple's members."),
            items: Some(Box::new(inline(MetaSchema { any_of: element, ..MetaSchema::ANY }))),
            ..MetaSchema::new("array")
        }));
    }
    forms
}

impl Type for ActionArgumentValue {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> Cow<'static, str> {
        Cow::Borrowed(ARGUMENT_VALUE)
    }

    fn schema_ref() -> MetaSchemaRef {
        MetaSchemaRef::Reference(ARGUMENT_VALUE.to_owned())
    }

    // Published unrolled, not recursive: a union that names itself (or names `ActionArgument`,
    // which names it) defeats SDK generators (openapi-typescript's alias refers to itself, TS2502;
    // openapi-python-client drops every model that reaches it), and the typed 3.1 model and
    // Spectral want every schema typed and every array's `items`. So the schema spells out
    // ARGUMENT_VALUE_LEVELS levels of lists, a tuple's members as objects; the description says
    // what they are, and the server reads and writes them strictly (`ParseFromJSON` below).
    fn register(registry: &mut Registry) {
        registry.create_schema::<Self, _>(ARGUMENT_VALUE.to_owned(), |_| MetaSchema {
            description: Some(
                "An argument's value: a boolean (`bool`); a string (integers as exact decimal text, addresses \
                 EIP-55 checksummed, bytes and fixed bytes 0x-hex, strings as they are); or a list: an array's \
                 elements, each a value of this form, or a tuple's members, each an `ActionArgument` (an object with \
                 its `name`, `type` and `value`). The schema spells out four levels of nested lists.",
            ),
            any_of: value_forms(ARGUMENT_VALUE_LEVELS),
            ..MetaSchema::ANY
        });
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        Box::new(self.as_raw_value().into_iter())
    }
}

impl ParseFromJSON for ActionArgumentValue {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        match value.unwrap_or_default() {
            Value::Bool(b) => Ok(Self::Bool(b)),
            Value::String(s) => Ok(Self::Text(s)),
            // A tuple's members are objects; an array's elements never are (a value is a bool, a
            // string or a list): a non-empty list of objects is a tuple.
            Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object) => {
                Vec::<ActionArgument>::parse_from_json(Some(Value::Array(items)))
                    .map(Self::Members)
                    .map_err(ParseError::propagate)
            }
            Value::Array(items) => {
                items.into_iter().map(|i| Self::parse_from_json(Some(i))).collect::<Result<Vec<_>, _>>().map(Self::List)
            }
            other => Err(ParseError::expected_type(other)),
        }
    }
}

impl ToJSON for ActionArgumentValue {
    fn to_json(&self) -> Option<Value> {
        match self {
            Self::Bool(b) => Some(Value::Bool(*b)),
            Self::Text(s) => Some(Value::String(s.clone())),
            Self::List(items) => items.to_json(),
            Self::Members(members) => members.to_json(),
        }
    }
}

/// What [`ProposalAction::decoded_unreadable`] says of a stored answer that does not parse.
pub const UNREADABLE: &str = "The decoded answer stored for this action could not be read by this server (it was \
                              written by another version of the decoder); the raw values are served as proposed.";

impl ProposalAction {
    /// The action a stored row holds, its decoded answer read from the stored JSON. A stored
    /// answer that does not parse is logged and served as absent, with the raw values and
    /// `decodedUnreadable`: one such row never fails the answer about the others.
    pub fn from_model(row: proposal_action::Model) -> Self {
        use sea_orm::ActiveEnum;
        let decoded = serde_json::from_str::<Value>(&row.decoded)
            .map_err(|e| e.to_string())
            .and_then(|json| Action::parse_from_json(Some(json)).map_err(|e| e.into_message()));
        let (decoded, decoded_unreadable) = match decoded {
            Ok(action) => (Some(action), None),
            Err(error) => {
                tracing::error!(
                    proposal_id = row.proposal_id,
                    position = row.position,
                    decoder_version = row.decoder_version,
                    %error,
                    "a stored decoded action does not read as the served shape"
                );
                (None, Some(UNREADABLE.to_owned()))
            }
        };
        Self {
            position: row.position,
            execution_path: row.execution_path.to_value(),
            target: row.target,
            value_wei: row.value_wei,
            signature: row.signature,
            calldata: row.calldata,
            decoded,
            decoded_unreadable,
        }
    }
}

impl poem_openapi::types::Example for ProposalAction {
    fn example() -> Self {
        let token = "0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984";
        let to = "0x683a4F9915D6216f73d6Df50151725036bD26C02";
        let calldata = "0xa9059cbb000000000000000000000000683a4f9915d6216f73d6df50151725036bd26c02\
                        0000000000000000000000000000000000000000000108b2a2c2802909400000";
        let text = |s: &str| ActionArgumentValue::Text(s.to_owned());
        Self {
            position: 0,
            execution_path: "governor".to_owned(),
            target: token.to_lowercase(),
            value_wei: "0".to_owned(),
            signature: None,
            calldata: calldata.to_owned(),
            decoded: Some(Action {
                target: token.to_owned(),
                value: "0".to_owned(),
                operation: None,
                signature: None,
                calldata: calldata.to_owned(),
                sender: "0x1a9C8182C09F50C8318d769245beA52c32BE35BC".to_owned(),
                call: ActionCall {
                    kind: ActionCallKind::Decoded,
                    function: Some("transfer".to_owned()),
                    signature: Some("transfer(address,uint256)".to_owned()),
                    selector: Some("0xa9059cbb".to_owned()),
                    source: Some(ActionAbiSource::Bundled),
                    implementation: None,
                    arguments: Some(vec![
                        ActionArgument {
                            name: Some("to".to_owned()),
                            ty: "address".to_owned(),
                            value: text(to),
                            indexed: None,
                            token_amount: None,
                        },
                        ActionArgument {
                            name: Some("value".to_owned()),
                            ty: "uint256".to_owned(),
                            value: text("1250000000000000000000000"),
                            indexed: None,
                            token_amount: Some(ActionTokenAmount {
                                amount: "1250000".to_owned(),
                                symbol: "UNI".to_owned(),
                                decimals: 18,
                            }),
                        },
                    ]),
                    inner: None,
                    reason: None,
                    message: None,
                    candidates: None,
                },
                summary: format!("transfer 1,250,000 UNI from the timelock to {to}"),
            }),
            decoded_unreadable: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use alloy_dyn_abi::DynSolValue;
    use alloy_primitives::{Address, B256, U256, address, keccak256};

    use super::*;
    use crate::rules::actions::{
        self as rules, AbiSource, Argument, Call, DecodedCall, Inner, Known, Operation, ProposedAction, Reason, Token,
        TokenAmount, Undecoded,
    };
    use crate::store::entities::proposal_action::ExecutionPath;

    const TIMELOCK: Address = address!("0x1a9C8182C09F50C8318d769245beA52c32BE35BC");
    const TOKEN: Address = address!("0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984");
    const TO: Address = address!("0x683a4F9915D6216f73d6Df50151725036bD26C02");
    const SAFE: Address = address!("0x00000000000000000000000000000000000005af");

    fn encode(signature: &str, args: &[DynSolValue]) -> Vec<u8> {
        let mut out = keccak256(signature.as_bytes())[..4].to_vec();
        out.extend(DynSolValue::Tuple(args.to_vec()).abi_encode_params());
        out
    }

    fn uint(n: u128) -> DynSolValue {
        DynSolValue::Uint(U256::from(n), 256)
    }

    fn text(s: &str) -> rules::Value {
        rules::Value::Text(s.to_owned())
    }

    fn argument(name: Option<&str>, ty: &str, value: rules::Value) -> Argument {
        Argument { name: name.map(str::to_owned), ty: ty.to_owned(), value, indexed: false, token_amount: None }
    }

    /// A timelock batch decoded by the real decoder: a token transfer (with its amount in whole
    /// tokens), a native transfer, and an unknown selector, each an inner call.
    fn decoded_batch() -> rules::Action {
        let mut known = Known::default();
        known.tokens.insert(TOKEN, Token { symbol: "UNI".into(), decimals: 18 });
        known.labels.insert(TIMELOCK, "the timelock".into());
        let transfer = encode(
            "transfer(address,uint256)",
            &[DynSolValue::Address(TO), uint(1_250_000 * 10u128.pow(18) + 5 * 10u128.pow(17))],
        );
        let unknown = [vec![0xde, 0xad, 0xbe, 0xef], vec![0; 32]].concat();
        let calldata = encode(
            "scheduleBatch(address[],uint256[],bytes[],bytes32,bytes32,uint256)",
            &[
                DynSolValue::Array([TOKEN, TO, SAFE].map(DynSolValue::Address).to_vec()),
                DynSolValue::Array(vec![uint(0), uint(7), uint(0)]),
                DynSolValue::Array([transfer, vec![], unknown].map(DynSolValue::Bytes).to_vec()),
                DynSolValue::FixedBytes(B256::ZERO, 32),
                DynSolValue::FixedBytes(B256::repeat_byte(7), 32),
                uint(172_800),
            ],
        );
        let proposed = ProposedAction { target: TIMELOCK, value: U256::ZERO, signature: None, calldata };
        let [batch] = <[rules::Action; 1]>::try_from(rules::decode_actions(&known, &TIMELOCK, &[proposed])).unwrap();
        batch
    }

    /// An answer built by hand with what the decoder gives more rarely: a tuple argument (and a
    /// list of tuples), a boolean, an indexed parameter, an ambiguous selector, a wrapper at the
    /// depth limit and a malformed one, a delegatecall, a proposer's signature string.
    fn handmade() -> rules::Action {
        let tuple = rules::Value::Members(vec![
            argument(Some("to"), "address", text(&TO.to_checksum(None))),
            argument(Some("ok"), "bool", rules::Value::Bool(true)),
            argument(None, "uint256[]", rules::Value::List(vec![text("1"), text("2")])),
        ]);
        let mut amount = argument(Some("amount"), "uint256", text("1500000"));
        amount.token_amount = Some(TokenAmount { amount: "1.5".into(), symbol: "USDC".into(), decimals: 6 });
        let mut indexed = argument(Some("topic"), "bytes32", text(&format!("0x{}", "ab".repeat(32))));
        indexed.indexed = true;
        let inner_call = |call: Call, operation: Option<Operation>| rules::Action {
            target: SAFE,
            value: U256::from(1u8),
            operation,
            signature: None,
            calldata: vec![0x12, 0x34, 0x56, 0x78],
            sender: SAFE,
            call,
            summary: "an inner call".into(),
        };
        let ambiguous = Call::Undecoded(Undecoded {
            selector: Some("0x12345678".into()),
            reason: Reason::AmbiguousSelector,
            message: None,
            candidates: vec!["a(uint256)".into(), "b(address)".into()],
        });
        let wrapper = |inner: Inner| {
            Call::Decoded(DecodedCall {
                function: "relay".into(),
                signature: "relay(address,uint256,bytes)".into(),
                selector: "0xc28bc2fa".into(),
                source: AbiSource::SourcifyImplementation,
                implementation: Some(TIMELOCK),
                arguments: vec![],
                inner: Some(inner),
            })
        };
        let calls = vec![
            inner_call(ambiguous, Some(Operation::DelegateCall)),
            inner_call(wrapper(Inner::DepthLimit { limit: 4 }), Some(Operation::Call)),
            inner_call(wrapper(Inner::Malformed { message: "entry 0: cut short".into() }), None),
            inner_call(Call::NativeTransfer, None),
            inner_call(
                Call::Undecoded(Undecoded {
                    selector: None,
                    reason: Reason::TooShort,
                    message: Some("3 bytes".into()),
                    candidates: vec![],
                }),
                None,
            ),
        ];
        rules::Action {
            target: SAFE,
            value: U256::MAX,
            operation: None,
            signature: Some("execute((address,bool,uint256[]),(address,bool,uint256[])[],uint256,bytes32)".into()),
            calldata: vec![0xff; 40],
            sender: TIMELOCK,
            call: Call::Decoded(DecodedCall {
                function: "execute".into(),
                signature: "execute((address,bool,uint256[]),(address,bool,uint256[])[],uint256,bytes32)".into(),
                selector: "0x9abcdef0".into(),
                source: AbiSource::Signature,
                implementation: None,
                arguments: vec![
                    argument(Some("first"), "(address,bool,uint256[])", tuple.clone()),
                    argument(None, "(address,bool,uint256[])[]", rules::Value::List(vec![tuple.clone(), tuple])),
                    amount,
                    indexed,
                    argument(Some("none"), "uint256[]", rules::Value::List(vec![])),
                ],
                inner: Some(Inner::Decoded { calls }),
            }),
            summary: "execute a batch".into(),
        }
    }

    /// The stored JSON of `action`, read into the view and written again.
    fn round_trip(action: &rules::Action) -> (Value, Value) {
        let stored = serde_json::to_string(action).unwrap();
        let json: Value = serde_json::from_str(&stored).unwrap();
        let view = Action::parse_from_json(Some(json.clone())).unwrap_or_else(|e| panic!("{}: {json}", e.message()));
        (json, view.to_json().unwrap())
    }

    #[test]
    fn the_view_mirrors_the_stored_answer_member_for_member() {
        let batch = decoded_batch();
        // The decoder's answer holds what the test means it to.
        let Call::Decoded(call) = &batch.call else { panic!("{batch:?}") };
        let Some(Inner::Decoded { calls }) = &call.inner else { panic!("{call:?}") };
        assert_eq!(calls.len(), 3);
        assert!(matches!(calls[1].call, Call::NativeTransfer));
        assert!(matches!(&calls[2].call, Call::Undecoded(u) if u.reason == Reason::UnknownSelector));
        let Call::Decoded(transfer) = &calls[0].call else { panic!("{calls:?}") };
        assert_eq!(transfer.arguments[1].token_amount.as_ref().map(|t| t.amount.as_str()), Some("1250000.5"));

        for action in [batch, handmade()] {
            let (stored, served) = round_trip(&action);
            assert_eq!(served, stored, "the view serves exactly what was stored");
        }
        // Every variant of the stored shape went through the view.
        let text = format!("{}{}", round_trip(&decoded_batch()).1, round_trip(&handmade()).1);
        for needle in [
            r#""kind":"native_transfer""#,
            r#""kind":"decoded""#,
            r#""kind":"undecoded""#,
            r#""status":"decoded""#,
            r#""status":"depth_limit""#,
            r#""implementation":"0x1a9C8182C09F50C8318d769245beA52c32BE35BC""#,
            r#""source":"sourcify_implementation""#,
            r#""status":"malformed""#,
            r#""reason":"ambiguous_selector""#,
            r#""candidates":["a(uint256)","b(address)"]"#,
            r#""operation":"delegate_call""#,
            r#""indexed":true"#,
            r#""tokenAmount":{"#,
            r#""value":true"#,
            r#""value":[]"#,
            r#""source":"signature""#,
        ] {
            assert!(text.contains(needle), "{needle} in {text}");
        }
    }

    fn row(decoded: String) -> proposal_action::Model {
        proposal_action::Model {
            proposal_id: 1,
            position: 3,
            dao_id: "govtest".into(),
            execution_path: ExecutionPath::Governor,
            target: "0x00000000000000000000000000000000deadbeef".into(),
            value_wei: "7".into(),
            signature: None,
            calldata: "0xdeadbeef".into(),
            decoded,
            decoder_version: 1,
        }
    }

    #[test]
    fn a_stored_answer_that_does_not_read_is_served_with_the_raw_values_and_says_so() {
        let good = ProposalAction::from_model(row(serde_json::to_string(&decoded_batch()).unwrap()));
        assert!(good.decoded.is_some() && good.decoded_unreadable.is_none());
        assert_eq!(good.execution_path, "governor");

        // Not JSON, JSON of another shape, a kind this server does not know.
        let mut other_kind = serde_json::to_value(decoded_batch()).unwrap();
        other_kind["call"]["kind"] = "simulated".into();
        for stored in ["{not json".to_owned(), "[1,2]".to_owned(), other_kind.to_string()] {
            let served = ProposalAction::from_model(row(stored.clone()));
            assert_eq!(served.decoded, None, "{stored}");
            assert_eq!(served.decoded_unreadable.as_deref(), Some(UNREADABLE));
            assert_eq!(
                (served.position, served.target.as_str(), served.value_wei.as_str(), served.calldata.as_str()),
                (3, "0x00000000000000000000000000000000deadbeef", "7", "0xdeadbeef"),
                "the raw values as proposed"
            );
            let json = served.to_json().unwrap();
            assert!(json.get("decoded").is_none() && json["decodedUnreadable"].is_string(), "{json}");
        }
    }

    #[test]
    fn the_example_reads_as_a_stored_answer_would() {
        let example = <ProposalAction as poem_openapi::types::Example>::example();
        let json = example.decoded.to_json().unwrap();
        assert_eq!(Action::parse_from_json(Some(json)).ok(), example.decoded);
    }
}
