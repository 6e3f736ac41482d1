//! Calls that carry calls, decoded recursively to `ACTION_NESTING_DEPTH`.
//!
//! A decoded call is a wrapper when its canonical signature is one of these (whichever source
//! decoded it: the selector fixes the layout):
//! - TimelockController `schedule`/`execute` (one call) and `scheduleBatch`/`executeBatch`
//!   (parallel arrays of targets, values and payloads): the timelock makes the calls;
//! - the Governor's `relay(target, value, data)`: the Governor makes the call;
//! - Safe `execTransaction` and `execTransactionFromModule`: the Safe makes the call, with the
//!   operation given (0 call, 1 delegatecall);
//! - `multiSend(bytes)` (MultiSend and MultiSendCallOnly alike): the packed entries
//!   `operation (1) | to (20) | value (32) | dataLength (32) | data`. Delegatecalled, as a Safe
//!   uses it, its calls are the Safe's own; called, they come from the MultiSend contract.
//!
//! Each inner call is an action of its own, decoded like any other (with the ABIs the caller
//! gave for its target). Safe 1.5.0's MultiSend reads `to = 0` as the Safe itself; older ones do
//! not, and the calldata does not say which version runs, so `to` is shown as it is encoded.
use alloy_dyn_abi::DynSolValue;
use alloy_primitives::{Address, U256};

use super::decode::{Decoding, decode_function};
use super::{Action, Call, Inner, Known, Operation, ProposedAction, summary};
use crate::contract::limits::ACTION_NESTING_DEPTH;

/// The actions of a proposal, decoded; `executor` makes them (the timelock, or the Governor
/// where there is none; the Safe for a Snapshot oSnap proposal).
pub fn decode_actions(known: &Known, executor: &Address, actions: &[ProposedAction]) -> Vec<Action> {
    actions
        .iter()
        .map(|a| {
            let call = Carried { target: a.target, value: a.value, operation: None, data: a.calldata.clone() };
            action(known, *executor, call, a.signature.as_deref(), 0)
        })
        .collect()
}

/// A call as a wrapper carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Carried {
    target: Address,
    value: U256,
    operation: Option<Operation>,
    data: Vec<u8>,
}

fn action(known: &Known, sender: Address, carried: Carried, signature: Option<&str>, depth: usize) -> Action {
    let signature = signature.filter(|s| !s.is_empty());
    let call = match decode_function(known, &carried.target, signature, &carried.data) {
        Decoding::NativeTransfer => Call::NativeTransfer,
        Decoding::Undecoded(u) => Call::Undecoded(u),
        Decoding::Decoded(mut call, values) => {
            call.inner = inner(known, sender, &carried, &call.signature, &values, depth);
            Call::Decoded(call)
        }
    };
    let mut action = Action {
        target: carried.target,
        value: carried.value,
        operation: carried.operation,
        signature: signature.map(str::to_owned),
        calldata: carried.data,
        sender,
        call,
        summary: String::new(),
    };
    action.summary = summary::summarize(known, &action);
    action
}

/// The inner calls of a wrapper (`None` for any other call).
fn inner(
    known: &Known,
    sender: Address,
    outer: &Carried,
    signature: &str,
    values: &[DynSolValue],
    depth: usize,
) -> Option<Inner> {
    let (carried, delegated) = match signature {
        "schedule(address,uint256,bytes,bytes32,bytes32,uint256)"
        | "execute(address,uint256,bytes,bytes32,bytes32)"
        | "relay(address,uint256,bytes)" => (one(values, None), false),
        "scheduleBatch(address[],uint256[],bytes[],bytes32,bytes32,uint256)"
        | "executeBatch(address[],uint256[],bytes[],bytes32,bytes32)" => (batch(values), false),
        "execTransaction(address,uint256,bytes,uint8,uint256,uint256,uint256,address,address,bytes)"
        | "execTransactionFromModule(address,uint256,bytes,uint8)" => {
            (operation(values.get(3)).and_then(|op| one(values, Some(op))), false)
        }
        "multiSend(bytes)" => match values.first() {
            Some(DynSolValue::Bytes(packed)) => (unpack_multisend(packed), true),
            _ => (Err(unexpected()), true),
        },
        _ => return None,
    };
    let calls = match carried {
        Err(message) => return Some(Inner::Malformed { message }),
        Ok(_) if depth >= ACTION_NESTING_DEPTH => return Some(Inner::DepthLimit { limit: ACTION_NESTING_DEPTH }),
        Ok(calls) => calls,
    };
    // Who makes the inner calls: the wrapper, unless it runs by delegatecall in its caller's
    // context (MultiSend under a Safe), where its caller does.
    let inner_sender =
        if delegated && outer.operation == Some(Operation::DelegateCall) { sender } else { outer.target };
    let calls = calls.into_iter().map(|c| action(known, inner_sender, c, None, depth + 1)).collect();
    Some(Inner::Decoded { calls })
}

fn unexpected() -> String {
    "the wrapper's arguments are not of the types its signature names".to_owned()
}

/// `(target, value, data, …)` as one call.
fn one(values: &[DynSolValue], operation: Option<Operation>) -> Result<Vec<Carried>, String> {
    match values {
        [DynSolValue::Address(target), DynSolValue::Uint(value, _), DynSolValue::Bytes(data), ..] => {
            Ok(vec![Carried { target: *target, value: *value, operation, data: data.clone() }])
        }
        _ => Err(unexpected()),
    }
}

/// `(targets[], values[], payloads[], …)` as calls, the arrays of one length.
fn batch(values: &[DynSolValue]) -> Result<Vec<Carried>, String> {
    let [DynSolValue::Array(targets), DynSolValue::Array(amounts), DynSolValue::Array(payloads), ..] = values else {
        return Err(unexpected());
    };
    if targets.len() != amounts.len() || targets.len() != payloads.len() {
        return Err(format!(
            "{} targets, {} values and {} payloads: the timelock reverts on arrays of different lengths",
            targets.len(),
            amounts.len(),
            payloads.len()
        ));
    }
    targets
        .iter()
        .zip(amounts)
        .zip(payloads)
        .map(|((t, v), p)| match (t, v, p) {
            (DynSolValue::Address(target), DynSolValue::Uint(value, _), DynSolValue::Bytes(data)) => {
                Ok(Carried { target: *target, value: *value, operation: None, data: data.clone() })
            }
            _ => Err(unexpected()),
        })
        .collect()
}

/// A Safe `Enum.Operation`.
fn operation(value: Option<&DynSolValue>) -> Result<Operation, String> {
    match value {
        Some(DynSolValue::Uint(op, _)) => operation_code(*op),
        _ => Err(unexpected()),
    }
}

fn operation_code(op: U256) -> Result<Operation, String> {
    if op == U256::ZERO {
        Ok(Operation::Call)
    } else if op == U256::from(1) {
        Ok(Operation::DelegateCall)
    } else {
        Err(format!("operation {op} is neither call (0) nor delegatecall (1)"))
    }
}

/// The entries of MultiSend's packed `transactions` (Safe contracts/libraries/MultiSend.sol).
fn unpack_multisend(mut packed: &[u8]) -> Result<Vec<Carried>, String> {
    /// operation (1) + to (20) + value (32) + dataLength (32).
    const HEAD: usize = 85;
    let mut calls = Vec::new();
    while !packed.is_empty() {
        let at = calls.len();
        if packed.len() < HEAD {
            return Err(format!("entry {at}: {} bytes, shorter than an entry's 85-byte head", packed.len()));
        }
        let end = usize::try_from(U256::from_be_slice(&packed[53..HEAD]))
            .ok()
            .and_then(|n| n.checked_add(HEAD))
            .filter(|end| *end <= packed.len())
            .ok_or_else(|| format!("entry {at}: its data length runs past the end of the transactions"))?;
        calls.push(Carried {
            operation: Some(operation_code(U256::from(packed[0])).map_err(|e| format!("entry {at}: {e}"))?),
            target: Address::from_slice(&packed[1..21]),
            value: U256::from_be_slice(&packed[21..53]),
            data: packed[HEAD..end].to_vec(),
        });
        packed = &packed[end..];
    }
    Ok(calls)
}

#[cfg(test)]
mod tests {
    use alloy_dyn_abi::JsonAbiExt;
    use alloy_json_abi::Function;
    use alloy_primitives::{B256, address, keccak256};

    use super::*;
    use crate::rules::actions::{DecodedCall, Token};

    const GOVERNOR: Address = address!("0x408ED6354d4973f66138C91495F2f2FCbd8724C3");
    const TIMELOCK: Address = address!("0x1a9C8182C09F50C8318d769245beA52c32BE35BC");
    const TOKEN: Address = address!("0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984");
    const USDC: Address = address!("0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48");
    const SAFE: Address = address!("0x00000000000000000000000000000000000005AF");
    const MULTISEND: Address = address!("0x218543288004CD07832472D464648173c77D7eB7");
    const TO: Address = address!("0x00000000000000000000000000000000000000A1");

    fn encode(signature: &str, values: &[DynSolValue]) -> Vec<u8> {
        Function::parse(signature).unwrap().abi_encode_input(values).unwrap()
    }

    fn uint(n: u128) -> DynSolValue {
        DynSolValue::Uint(U256::from(n), 256)
    }

    fn transfer(to: Address, amount: u128) -> Vec<u8> {
        encode("transfer(address,uint256)", &[DynSolValue::Address(to), uint(amount)])
    }

    fn known() -> Known {
        let mut known = Known::default();
        known.tokens.insert(TOKEN, Token { symbol: "UNI".into(), decimals: 18 });
        known.tokens.insert(USDC, Token { symbol: "USDC".into(), decimals: 6 });
        known.labels.insert(TIMELOCK, "the timelock".into());
        known.labels.insert(SAFE, "the treasury Safe".into());
        known
    }

    fn proposed(target: Address, calldata: Vec<u8>) -> ProposedAction {
        ProposedAction { target, value: U256::ZERO, signature: None, calldata }
    }

    fn decoded(action: &Action) -> &DecodedCall {
        match &action.call {
            Call::Decoded(d) => d,
            other => panic!("not decoded: {other:?}"),
        }
    }

    fn inner_calls(action: &Action) -> &[Action] {
        match decoded(action).inner.as_ref() {
            Some(Inner::Decoded { calls }) => calls,
            other => panic!("no inner calls: {other:?}"),
        }
    }

    #[test]
    fn a_timelock_batch_of_three_calls_decodes_each() {
        let role = keccak256("PROPOSER_ROLE");
        let payloads = [
            transfer(TO, 1_000 * 10u128.pow(18)),
            encode("updateQuorumNumerator(uint256)", &[uint(5)]),
            encode("grantRole(bytes32,address)", &[DynSolValue::FixedBytes(role, 32), DynSolValue::Address(TO)]),
        ];
        let calldata = encode(
            "scheduleBatch(address[],uint256[],bytes[],bytes32,bytes32,uint256)",
            &[
                DynSolValue::Array([TOKEN, GOVERNOR, TIMELOCK].map(DynSolValue::Address).to_vec()),
                DynSolValue::Array(vec![uint(0), uint(0), uint(0)]),
                DynSolValue::Array(payloads.iter().cloned().map(DynSolValue::Bytes).collect()),
                DynSolValue::FixedBytes(B256::ZERO, 32),
                DynSolValue::FixedBytes(B256::repeat_byte(7), 32),
                uint(172_800),
            ],
        );
        let actions = decode_actions(&known(), &GOVERNOR, &[proposed(TIMELOCK, calldata)]);
        let [batch] = actions.as_slice() else { panic!("one action") };
        assert_eq!(batch.sender, GOVERNOR);
        assert_eq!(decoded(batch).function, "scheduleBatch");
        assert_eq!(batch.summary, "schedule 3 calls on the timelock (delay 172800 seconds)");
        let calls = inner_calls(batch);
        assert_eq!(calls.len(), 3);
        for (call, (target, payload)) in calls.iter().zip([TOKEN, GOVERNOR, TIMELOCK].iter().zip(&payloads)) {
            assert_eq!((call.target, call.sender, &call.calldata), (*target, TIMELOCK, payload));
            assert_eq!(call.operation, None);
        }
        let names: Vec<_> = calls.iter().map(|c| decoded(c).function.as_str()).collect();
        assert_eq!(names, ["transfer", "updateQuorumNumerator", "grantRole"]);
        let amount = decoded(&calls[0]).arguments[1].token_amount.as_ref().expect("a known token");
        assert_eq!((amount.amount.as_str(), amount.symbol.as_str()), ("1000", "UNI"));
        assert_eq!(calls[0].summary, format!("transfer 1,000 UNI from the timelock to {}", TO.to_checksum(None)));
        assert_eq!(
            calls[1].summary,
            format!("call updateQuorumNumerator(newQuorumNumerator: 5) on {}", GOVERNOR.to_checksum(None))
        );
        assert_eq!(
            calls[2].summary,
            format!(
                "call grantRole(role: {}, account: {}) on the timelock",
                crate::rules::actions::hex(role.as_slice()),
                TO.to_checksum(None)
            )
        );
    }

    /// One MultiSend entry, packed as Safe's MultiSend reads it.
    fn entry(operation: u8, to: Address, value: u128, data: &[u8]) -> Vec<u8> {
        let mut out = vec![operation];
        out.extend_from_slice(to.as_slice());
        out.extend_from_slice(&U256::from(value).to_be_bytes::<32>());
        out.extend_from_slice(&U256::from(data.len()).to_be_bytes::<32>());
        out.extend_from_slice(data);
        out
    }

    fn exec_transaction(to: Address, data: Vec<u8>, operation: u128) -> Vec<u8> {
        encode(
            "execTransaction(address,uint256,bytes,uint8,uint256,uint256,uint256,address,address,bytes)",
            &[
                DynSolValue::Address(to),
                uint(0),
                DynSolValue::Bytes(data),
                DynSolValue::Uint(U256::from(operation), 8),
                uint(0),
                uint(0),
                uint(0),
                DynSolValue::Address(Address::ZERO),
                DynSolValue::Address(Address::ZERO),
                DynSolValue::Bytes(vec![0xaa; 65]),
            ],
        )
    }

    #[test]
    fn a_safe_transaction_of_a_multisend_of_two_calls_decodes_each() {
        let add_owner = encode("addOwnerWithThreshold(address,uint256)", &[DynSolValue::Address(TO), uint(2)]);
        let usdc = transfer(TO, 1_500_000);
        let packed = [entry(0, USDC, 0, &usdc), entry(0, SAFE, 0, &add_owner)].concat();
        let multisend = encode("multiSend(bytes)", &[DynSolValue::Bytes(packed)]);
        let actions = decode_actions(&known(), &TIMELOCK, &[proposed(SAFE, exec_transaction(MULTISEND, multisend, 1))]);
        let exec = &actions[0];
        assert_eq!(exec.summary, "have the treasury Safe make 1 delegatecall");
        let [batch] = inner_calls(exec) else { panic!("one inner call") };
        assert_eq!((batch.target, batch.sender, batch.operation), (MULTISEND, SAFE, Some(Operation::DelegateCall)));
        assert_eq!(batch.summary, format!("batch 2 calls through MultiSend {}", MULTISEND.to_checksum(None)));
        let calls = inner_calls(batch);
        // Delegatecalled, MultiSend's calls are the Safe's own.
        assert!(calls.iter().all(|c| c.sender == SAFE && c.operation == Some(Operation::Call)));
        assert_eq!((calls[0].target, &calls[0].calldata), (USDC, &usdc));
        assert_eq!(calls[0].summary, format!("transfer 1.5 USDC from the treasury Safe to {}", TO.to_checksum(None)));
        assert_eq!(decoded(&calls[1]).function, "addOwnerWithThreshold");
        assert_eq!(
            calls[1].summary,
            format!("call addOwnerWithThreshold(owner: {}, _threshold: 2) on the treasury Safe", TO.to_checksum(None))
        );
        let json = serde_json::to_value(exec).unwrap();
        assert_eq!(json["call"]["inner"]["status"], "decoded");
        assert_eq!(json["call"]["inner"]["calls"][0]["operation"], "delegate_call");
        assert_eq!(json["call"]["inner"]["calls"][0]["call"]["inner"]["calls"][1]["call"]["kind"], "decoded");
        assert!(json.get("operation").is_none());

        // Called rather than delegatecalled, the calls come from the MultiSend contract.
        let packed = entry(0, USDC, 0, &usdc);
        let direct = decode_actions(
            &known(),
            &TIMELOCK,
            &[proposed(MULTISEND, encode("multiSend(bytes)", &[DynSolValue::Bytes(packed)]))],
        );
        assert_eq!(inner_calls(&direct[0])[0].sender, MULTISEND);
    }

    #[test]
    fn nesting_stops_at_the_declared_depth_and_says_so() {
        let mut data = transfer(TO, 1);
        for _ in 0..ACTION_NESTING_DEPTH + 3 {
            data = encode(
                "relay(address,uint256,bytes)",
                &[DynSolValue::Address(GOVERNOR), uint(0), DynSolValue::Bytes(data)],
            );
        }
        let actions = decode_actions(&known(), &TIMELOCK, &[proposed(GOVERNOR, data)]);
        let mut action = &actions[0];
        for depth in 0..ACTION_NESTING_DEPTH {
            assert_eq!(decoded(action).function, "relay", "depth {depth}");
            action = &inner_calls(action)[0];
            assert_eq!(action.sender, GOVERNOR);
        }
        assert_eq!(decoded(action).inner, Some(Inner::DepthLimit { limit: ACTION_NESTING_DEPTH }));
        assert_eq!(
            action.summary,
            format!(
                "relay (inner calls not decoded: depth limit {ACTION_NESTING_DEPTH}) through {}",
                GOVERNOR.to_checksum(None)
            )
        );
    }

    #[test]
    fn wrappers_that_do_not_describe_calls_say_why() {
        let malformed = |target: Address, calldata: Vec<u8>| {
            let actions = decode_actions(&known(), &TIMELOCK, &[proposed(target, calldata)]);
            match decoded(&actions[0]).inner.clone() {
                Some(Inner::Malformed { message }) => message,
                other => panic!("{other:?}"),
            }
        };
        let usdc = transfer(TO, 1);
        let mut cut = entry(0, USDC, 0, &usdc);
        cut.truncate(cut.len() - 1);
        let message = malformed(MULTISEND, encode("multiSend(bytes)", &[DynSolValue::Bytes(cut)]));
        assert_eq!(message, "entry 0: its data length runs past the end of the transactions");
        let message = malformed(MULTISEND, encode("multiSend(bytes)", &[DynSolValue::Bytes(vec![0; 40])]));
        assert_eq!(message, "entry 0: 40 bytes, shorter than an entry's 85-byte head");
        let packed = [entry(0, USDC, 0, &usdc), entry(2, USDC, 0, &usdc)].concat();
        let message = malformed(MULTISEND, encode("multiSend(bytes)", &[DynSolValue::Bytes(packed)]));
        assert_eq!(message, "entry 1: operation 2 is neither call (0) nor delegatecall (1)");
        let message = malformed(SAFE, exec_transaction(USDC, usdc.clone(), 3));
        assert_eq!(message, "operation 3 is neither call (0) nor delegatecall (1)");
        let uneven = encode(
            "executeBatch(address[],uint256[],bytes[],bytes32,bytes32)",
            &[
                DynSolValue::Array(vec![DynSolValue::Address(USDC)]),
                DynSolValue::Array(vec![]),
                DynSolValue::Array(vec![DynSolValue::Bytes(usdc)]),
                DynSolValue::FixedBytes(B256::ZERO, 32),
                DynSolValue::FixedBytes(B256::ZERO, 32),
            ],
        );
        assert_eq!(
            malformed(TIMELOCK, uneven),
            "1 targets, 0 values and 1 payloads: the timelock reverts on arrays of different lengths"
        );
    }

    #[test]
    fn a_proposal_action_serializes_as_proposed_and_decoded() {
        let mut action = proposed(TOKEN, transfer(TO, 5));
        action.value = U256::from(3);
        let json = serde_json::to_value(decode_actions(&Known::default(), &TIMELOCK, &[action])).unwrap();
        let a = &json[0];
        assert_eq!(a["target"], TOKEN.to_checksum(None));
        assert_eq!(a["value"], "3");
        assert_eq!(a["sender"], TIMELOCK.to_checksum(None));
        assert_eq!(a["calldata"], crate::rules::actions::hex(&transfer(TO, 5)));
        assert_eq!(a["call"]["kind"], "decoded");
        assert!(a.get("signature").is_none() && a.get("operation").is_none());
        assert_eq!(
            a["summary"],
            format!(
                "transfer 5 of token {} from {} to {}, sending 3 wei",
                TOKEN.to_checksum(None),
                TIMELOCK.to_checksum(None),
                TO.to_checksum(None)
            )
        );
    }

    #[test]
    fn a_call_through_a_proxy_names_its_implementation_and_the_contracts_called_are_listed_once() {
        let proxy = address!("0x2279B7A0a67DB372996a5FaB50D91eAA73d2eBe6");
        let implementation = address!("0xa513E6E4b8f2a923D98304ec87F64353C4D5C853");
        let set = encode("setRate(uint256,address)", &[uint(250), DynSolValue::Address(TO)]);
        let batch = encode(
            "executeBatch(address[],uint256[],bytes[],bytes32,bytes32)",
            &[
                DynSolValue::Array([proxy, TOKEN, proxy].map(DynSolValue::Address).to_vec()),
                DynSolValue::Array(vec![uint(0), uint(0), uint(0)]),
                DynSolValue::Array(vec![
                    DynSolValue::Bytes(set.clone()),
                    DynSolValue::Bytes(transfer(TO, 10u128.pow(18))),
                    DynSolValue::Bytes(set.clone()),
                ]),
                DynSolValue::FixedBytes(B256::ZERO, 32),
                DynSolValue::FixedBytes(B256::ZERO, 32),
            ],
        );
        let proposed = [proposed(TIMELOCK, batch), proposed(proxy, set)];

        // Without the implementation's ABI: undecoded, and the proxy is among the contracts to
        // learn about; the token is the one to ask for its decimals.
        let bare = decode_actions(&known(), &TIMELOCK, &proposed);
        assert!(matches!(bare[1].call, Call::Undecoded(_)));
        let called = crate::rules::actions::Called::of(&bare);
        assert_eq!(called.targets, [TIMELOCK, proxy, TOKEN]);
        assert_eq!(called.tokens, [TOKEN]);

        let mut known = known();
        let abi =
            alloy_json_abi::JsonAbi::parse(["function setRate(uint256 newRate, address newBeneficiary)"]).unwrap();
        known.abis.insert(proxy, vec![(crate::rules::actions::AbiSource::SourcifyImplementation, abi)]);
        known.implementations.insert(proxy, implementation);
        let actions = decode_actions(&known, &TIMELOCK, &proposed);
        let json = serde_json::to_value(&actions[1].call).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "kind": "decoded",
                "function": "setRate",
                "signature": "setRate(uint256,address)",
                "selector": "0x91d93077",
                "source": "sourcify_implementation",
                "implementation": "0xa513E6E4b8f2a923D98304ec87F64353C4D5C853",
                "arguments": [
                    {"name": "newRate", "type": "uint256", "value": "250"},
                    {"name": "newBeneficiary", "type": "address", "value": TO.to_checksum(None)},
                ],
            })
        );
        let inner = inner_calls(&actions[0]);
        assert_eq!(decoded(&inner[0]).implementation, Some(implementation));
        assert_eq!(decoded(&inner[1]).implementation, None, "a bundled decoding names no implementation");
        assert_eq!(inner[1].summary, format!("transfer 1 UNI from the timelock to {}", TO.to_checksum(None)));
    }
}
