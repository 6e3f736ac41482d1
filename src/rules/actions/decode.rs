//! One call, log or revert decoded against the caller's ABIs and the bundled table.
//!
//! Sources are consulted in order (the caller's, as tagged; then `bundled`; then, for a call,
//! the signature string its proposer gave). Every signature any of them knows for the selector
//! is a candidate: one candidate decodes, named by the first source that has it; two or more
//! different signatures are answered `ambiguous_selector` with all of them, never resolved.
//!
//! Exactness: alloy's dynamic decoder (`abi_decode_sequence`) reads the arguments without
//! validating them, so it ignores bytes after the last argument and accepts dirty padding and
//! offsets pointing anywhere. Solidity ignores trailing bytes too, but such calldata is not what
//! any encoder writes, and calldata shaped to read one way here and another way elsewhere must
//! not be shown as decoded. So the decoded values are encoded again and must give back exactly
//! the bytes received: a strict prefix is `trailing_bytes`, anything else `non_canonical`.
use alloy_dyn_abi::{DynSolType, DynSolValue, EventExt, Specifier};
use alloy_json_abi::{Event, Function, Param};
use alloy_primitives::{Address, B256, Selector, U256, keccak256};

use super::bundled::{TABLE, event_key};
use super::{
    AbiSource, Argument, Call, DecodedCall, DecodedLog, DecodedRevert, Known, Log, Reason, Revert, TokenAmount,
    Undecoded, Value, hex,
};
use crate::contract::decimal;

/// A call decoded, with the values nested decoding reads its inner calls from.
pub(crate) enum Decoding {
    NativeTransfer,
    Decoded(DecodedCall, Vec<DynSolValue>),
    Undecoded(Undecoded),
}

/// Decodes one call to `target`. With a non-empty `signature` (Compound Bravo), `calldata` is
/// the arguments only and the selector is `keccak256(signature)[0..4]`, as the timelock builds
/// it from the text as given (§1.5).
pub fn decode_call(known: &Known, target: &Address, signature: Option<&str>, calldata: &[u8]) -> Call {
    match decode_function(known, target, signature, calldata) {
        Decoding::NativeTransfer => Call::NativeTransfer,
        Decoding::Decoded(call, _) => Call::Decoded(call),
        Decoding::Undecoded(u) => Call::Undecoded(u),
    }
}

pub(crate) fn decode_function(known: &Known, target: &Address, signature: Option<&str>, calldata: &[u8]) -> Decoding {
    let (selector, args, proposed) = match signature.filter(|s| !s.is_empty()) {
        Some(text) => {
            let selector = Selector::from_slice(&keccak256(text.as_bytes())[..4]);
            // A signature written other than canonically (`f(uint)`, spaces) hashes to another
            // selector than the function it names: the call reaches that other selector, so the
            // text only describes the call when its canonical form is the text itself.
            let proposed = Function::parse(text).ok().filter(|f| f.selector() == selector);
            (selector, calldata, proposed)
        }
        None if calldata.is_empty() => return Decoding::NativeTransfer,
        None if calldata.len() < 4 => {
            return Decoding::Undecoded(undecoded(None, Reason::TooShort, None, Vec::new()));
        }
        None => (Selector::from_slice(&calldata[..4]), &calldata[4..], None),
    };
    let mut candidates: Vec<(AbiSource, &Function)> = Vec::new();
    for (source, abi) in known.abis_of(target) {
        candidates.extend(abi.functions().filter(|f| f.selector() == selector).map(|f| (*source, f)));
    }
    candidates.extend(TABLE.functions(&selector).iter().map(|f| (AbiSource::Bundled, f)));
    candidates.extend(proposed.as_ref().map(|f| (AbiSource::Signature, f)));
    let signatures = distinct(candidates.iter().map(|(_, f)| f.signature()));
    let selector_text = Some(hex(selector.as_slice()));
    let (source, function) = match choose(&candidates, &signatures, &selector_text) {
        Ok(chosen) => chosen,
        Err(u) => return Decoding::Undecoded(u),
    };
    let values = match decode_exact(&function.inputs, args) {
        Ok(values) => values,
        Err((reason, message)) => {
            return Decoding::Undecoded(undecoded(selector_text, reason, Some(message), signatures));
        }
    };
    let mut arguments = arguments(&function.inputs, &values);
    if let Some(token) = known.tokens.get(target)
        && let Some(i) = amount_argument(&function.signature())
        && let (Some(arg), Some(DynSolValue::Uint(raw, _))) = (arguments.get_mut(i), values.get(i))
    {
        let amount = whole_tokens(raw, token.decimals);
        arg.token_amount = Some(TokenAmount { amount, symbol: token.symbol.clone(), decimals: token.decimals });
    }
    let call = DecodedCall {
        function: function.name.clone(),
        signature: function.signature(),
        selector: hex(selector.as_slice()),
        source,
        implementation: match source {
            AbiSource::SourcifyImplementation => known.implementations.get(target).copied(),
            _ => None,
        },
        arguments,
        inner: None,
    };
    Decoding::Decoded(call, values)
}

/// The ERC-20 calls whose argument at this index is an amount of the called token.
pub(crate) fn amount_argument(signature: &str) -> Option<usize> {
    match signature {
        "transfer(address,uint256)"
        | "approve(address,uint256)"
        | "increaseAllowance(address,uint256)"
        | "decreaseAllowance(address,uint256)" => Some(1),
        "transferFrom(address,address,uint256)" => Some(2),
        _ => None,
    }
}

/// `raw / 10^decimals` as plain decimal text, exact (`1250000.5`).
pub(crate) fn whole_tokens(raw: &U256, decimals: u8) -> String {
    match decimal::scale_down(&raw.to_string(), u32::from(decimals)) {
        Ok(amount) => decimal::plain(&amount),
        // Unreachable: a U256 prints as digits only.
        Err(_) => raw.to_string(),
    }
}

/// Decodes one log emitted by `emitter`: `topics[0]` names the event, and only events with as
/// many indexed parameters as the log has further topics are candidates (ERC-20's and ERC-721's
/// `Transfer` share a topic0 and differ there).
pub fn decode_log(known: &Known, emitter: &Address, topics: &[B256], data: &[u8]) -> Log {
    let Some(topic0) = topics.first() else {
        let message = "a log without topics (an anonymous event) names no event".to_owned();
        return Log::Undecoded(undecoded(None, Reason::TooShort, Some(message), Vec::new()));
    };
    let mut candidates: Vec<(AbiSource, &Event)> = Vec::new();
    for (source, abi) in known.abis_of(emitter) {
        candidates.extend(abi.events().filter(|e| !e.anonymous && e.selector() == *topic0).map(|e| (*source, e)));
    }
    candidates.extend(TABLE.events(topic0).iter().map(|e| (AbiSource::Bundled, e)));
    let known_keys = distinct(candidates.iter().map(|(_, e)| event_key(e)));
    candidates.retain(|(_, e)| e.inputs.iter().filter(|p| p.indexed).count() == topics.len() - 1);
    let keys = distinct(candidates.iter().map(|(_, e)| event_key(e)));
    let selector = Some(hex(topic0.as_slice()));
    let (source, event) = match (keys.len(), candidates.first()) {
        (1, Some(first)) => *first,
        (0, _) | (_, None) => {
            let message = (!known_keys.is_empty())
                .then(|| format!("no known event with this topic0 has {} indexed parameters", topics.len() - 1));
            return Log::Undecoded(undecoded(selector, Reason::UnknownSelector, message, known_keys));
        }
        _ => return Log::Undecoded(undecoded(selector, Reason::AmbiguousSelector, None, keys)),
    };
    let decoded = match event.decode_log_parts(topics.iter().copied(), data) {
        Ok(decoded) => decoded,
        Err(e) => return Log::Undecoded(undecoded(selector, Reason::MalformedArguments, Some(e.to_string()), keys)),
    };
    if let Err((reason, message)) = canonical(&DynSolValue::Tuple(decoded.body.clone()), data) {
        return Log::Undecoded(undecoded(selector, reason, Some(message), keys));
    }
    let (mut indexed, mut body) = (decoded.indexed.iter(), decoded.body.iter());
    let arguments = event
        .inputs
        .iter()
        .filter_map(|p| {
            let value = if p.indexed { indexed.next() } else { body.next() }?;
            let mut arg = argument(&p.name, p.selector_type().into_owned(), &p.components, value);
            arg.indexed = p.indexed;
            Some(arg)
        })
        .collect();
    Log::Decoded(DecodedLog {
        event: event.name.clone(),
        signature: event.signature(),
        topic0: hex(topic0.as_slice()),
        source,
        arguments,
    })
}

/// Decodes the data a call reverted with, against the errors of the contract that reverted
/// (where the caller knows which) and the bundled errors (`Error(string)`, `Panic(uint256)`,
/// ERC-6093, OpenZeppelin's access and timelock errors).
pub fn decode_revert(known: &Known, address: Option<&Address>, data: &[u8]) -> Revert {
    if data.is_empty() {
        return Revert::Empty;
    }
    if data.len() < 4 {
        return Revert::Undecoded(undecoded(None, Reason::TooShort, None, Vec::new()));
    }
    let selector = Selector::from_slice(&data[..4]);
    let mut candidates: Vec<(AbiSource, &alloy_json_abi::Error)> = Vec::new();
    for (source, abi) in address.map_or(&[][..], |a| known.abis_of(a)) {
        candidates.extend(abi.errors().filter(|e| e.selector() == selector).map(|e| (*source, e)));
    }
    candidates.extend(TABLE.errors(&selector).iter().map(|e| (AbiSource::Bundled, e)));
    let signatures = distinct(candidates.iter().map(|(_, e)| e.signature()));
    let selector_text = Some(hex(selector.as_slice()));
    let (source, error) = match choose(&candidates, &signatures, &selector_text) {
        Ok(chosen) => chosen,
        Err(u) => return Revert::Undecoded(u),
    };
    let values = match decode_exact(&error.inputs, &data[4..]) {
        Ok(values) => values,
        Err((reason, message)) => {
            return Revert::Undecoded(undecoded(selector_text, reason, Some(message), signatures));
        }
    };
    let signature = error.signature();
    let reason = match (signature.as_str(), values.first()) {
        ("Error(string)", Some(DynSolValue::String(message))) => Some(message.clone()),
        ("Panic(uint256)", Some(DynSolValue::Uint(code, _))) => Some(panic_meaning(code)),
        _ => None,
    };
    Revert::Decoded(DecodedRevert {
        error: error.name.clone(),
        signature,
        selector: hex(selector.as_slice()),
        source,
        arguments: arguments(&error.inputs, &values),
        reason,
    })
}

/// What a `Panic(uint256)` code means, as Solidity's documentation lists them.
fn panic_meaning(code: &U256) -> String {
    let meaning = match u64::try_from(*code) {
        Ok(0x00) => "generic compiler-inserted panic",
        Ok(0x01) => "assertion failed",
        Ok(0x11) => "arithmetic overflow or underflow",
        Ok(0x12) => "division or modulo by zero",
        Ok(0x21) => "conversion to an enum out of its range",
        Ok(0x22) => "incorrectly encoded storage byte array",
        Ok(0x31) => "pop() on an empty array",
        Ok(0x32) => "array index out of bounds",
        Ok(0x41) => "too much memory allocated",
        Ok(0x51) => "call to a zero-initialized internal function",
        _ => "unknown panic code",
    };
    format!("{meaning} (panic code {code:#x})")
}

/// Decodes `data` as the parameters' types, exactly (the module's doc says why).
fn decode_exact(params: &[Param], data: &[u8]) -> Result<Vec<DynSolValue>, (Reason, String)> {
    let types = params
        .iter()
        .map(Specifier::<DynSolType>::resolve)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| (Reason::MalformedArguments, e.to_string()))?;
    let decoded =
        DynSolType::Tuple(types).abi_decode_sequence(data).map_err(|e| (Reason::MalformedArguments, e.to_string()))?;
    canonical(&decoded, data)?;
    match decoded {
        DynSolValue::Tuple(values) => Ok(values),
        other => Ok(vec![other]),
    }
}

/// Whether a decoded parameter tuple encodes back to exactly `data`.
fn canonical(tuple: &DynSolValue, data: &[u8]) -> Result<(), (Reason, String)> {
    let again = tuple.abi_encode_sequence().unwrap_or_default();
    if again == data {
        Ok(())
    } else if data.starts_with(&again) {
        Err((Reason::TrailingBytes, format!("{} bytes follow the encoded arguments", data.len() - again.len())))
    } else {
        Err((
            Reason::NonCanonical,
            "the arguments decode, but not from their canonical encoding (dirty padding or unusual offsets)".to_owned(),
        ))
    }
}

/// The arguments of a function or error, named and typed as its ABI declares them.
pub(crate) fn arguments(params: &[Param], values: &[DynSolValue]) -> Vec<Argument> {
    params
        .iter()
        .zip(values)
        .map(|(p, v)| argument(&p.name, p.selector_type().into_owned(), &p.components, v))
        .collect()
}

fn argument(name: &str, ty: String, components: &[Param], v: &DynSolValue) -> Argument {
    Argument {
        name: (!name.is_empty()).then(|| name.to_owned()),
        ty,
        value: value(v, components),
        indexed: false,
        token_amount: None,
    }
}

/// A value as served; `components` name a tuple's members (and those of an array's tuples).
fn value(v: &DynSolValue, components: &[Param]) -> Value {
    match v {
        DynSolValue::Bool(b) => Value::Bool(*b),
        DynSolValue::Int(i, _) => Value::Text(i.to_string()),
        DynSolValue::Uint(u, _) => Value::Text(u.to_string()),
        DynSolValue::FixedBytes(word, size) => Value::Text(hex(&word[..(*size).min(32)])),
        DynSolValue::Address(a) => Value::Text(a.to_checksum(None)),
        DynSolValue::Function(f) => Value::Text(hex(f.as_slice())),
        DynSolValue::Bytes(b) => Value::Text(hex(b)),
        DynSolValue::String(s) => Value::Text(s.clone()),
        DynSolValue::Array(items) | DynSolValue::FixedArray(items) => {
            Value::List(items.iter().map(|x| value(x, components)).collect())
        }
        DynSolValue::Tuple(members) => Value::Members(
            members
                .iter()
                .enumerate()
                .map(|(i, x)| match components.get(i) {
                    Some(p) => argument(&p.name, p.selector_type().into_owned(), &p.components, x),
                    None => argument("", x.sol_type_name().map(|t| t.into_owned()).unwrap_or_default(), &[], x),
                })
                .collect(),
        ),
    }
}

/// The one signature the candidates agree on, named by the first source that has it; or why
/// there is none: no candidate, or several signatures (ambiguous, all of them listed).
fn choose<T: Copy>(
    candidates: &[(AbiSource, T)],
    signatures: &[String],
    selector: &Option<String>,
) -> Result<(AbiSource, T), Undecoded> {
    match (signatures.len(), candidates.first()) {
        (1, Some(first)) => Ok(*first),
        (0, _) | (_, None) => Err(undecoded(selector.clone(), Reason::UnknownSelector, None, Vec::new())),
        _ => Err(undecoded(selector.clone(), Reason::AmbiguousSelector, None, signatures.to_vec())),
    }
}

fn undecoded(selector: Option<String>, reason: Reason, message: Option<String>, candidates: Vec<String>) -> Undecoded {
    Undecoded { selector, reason, message, candidates }
}

/// The items in first-seen order, each once.
fn distinct(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use alloy_dyn_abi::JsonAbiExt;
    use alloy_json_abi::JsonAbi;
    use alloy_primitives::{FixedBytes, I256, address};

    use super::*;
    use crate::rules::actions::Token;

    const TOKEN: Address = address!("0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984");
    const TO: Address = address!("0x00000000000000000000000000000000000000A1");

    /// A value of `ty` made from `seed`, and how it must be served.
    fn sample(ty: &DynSolType, seed: u8) -> (DynSolValue, Value) {
        match ty {
            DynSolType::Address => {
                let a = Address::repeat_byte(seed);
                (DynSolValue::Address(a), Value::Text(a.to_checksum(None)))
            }
            DynSolType::Uint(bits) => {
                let n = u64::from(seed) * 1_000 + 7;
                (DynSolValue::Uint(U256::from(n), *bits), Value::Text(n.to_string()))
            }
            DynSolType::Int(bits) => {
                let n = -i64::from(seed) - 1;
                (DynSolValue::Int(I256::try_from(n).unwrap(), *bits), Value::Text(n.to_string()))
            }
            DynSolType::Bool => (DynSolValue::Bool(seed.is_multiple_of(2)), Value::Bool(seed.is_multiple_of(2))),
            DynSolType::FixedBytes(size) => {
                let mut word = FixedBytes::<32>::ZERO;
                word[..*size].fill(seed);
                (
                    DynSolValue::FixedBytes(word, *size),
                    Value::Text(format!("0x{}", format!("{seed:02x}").repeat(*size))),
                )
            }
            DynSolType::Bytes => {
                (DynSolValue::Bytes(vec![seed; 5]), Value::Text(format!("0x{}", format!("{seed:02x}").repeat(5))))
            }
            DynSolType::String => (DynSolValue::String(format!("s{seed}")), Value::Text(format!("s{seed}"))),
            DynSolType::Array(inner) => {
                let (a, ea) = sample(inner, seed);
                let (b, eb) = sample(inner, seed.wrapping_add(1));
                (DynSolValue::Array(vec![a, b]), Value::List(vec![ea, eb]))
            }
            other => panic!("no sample for {other:?} (the bundled table has none)"),
        }
    }

    fn decoded(call: Call) -> DecodedCall {
        match call {
            Call::Decoded(d) => d,
            other => panic!("not decoded: {other:?}"),
        }
    }

    fn undecoded_call(call: Call) -> Undecoded {
        match call {
            Call::Undecoded(u) => u,
            other => panic!("decoded: {other:?}"),
        }
    }

    #[test]
    fn every_bundled_function_decodes_with_names_types_and_values_exactly() {
        let known = Known::default();
        let mut count = 0;
        for (interface, abi) in &TABLE.interfaces {
            for f in abi.functions() {
                let types: Vec<DynSolType> = f.inputs.iter().map(|p| p.resolve().unwrap()).collect();
                let (values, expected): (Vec<_>, Vec<_>) =
                    types.iter().enumerate().map(|(i, ty)| sample(ty, 0x11 + i as u8)).unzip();
                let calldata = f.abi_encode_input(&values).unwrap();
                let call = decoded(decode_call(&known, &TO, None, &calldata));
                // A signature two interfaces declare is named as the first one names it.
                let named = &TABLE.functions(&f.selector())[0];
                assert_eq!(call.signature, f.signature(), "{interface}");
                assert_eq!(call.function, f.name);
                assert_eq!(call.selector, hex(f.selector().as_slice()));
                assert_eq!(call.source, AbiSource::Bundled);
                assert_eq!(call.arguments.len(), f.inputs.len());
                for ((arg, param), value) in call.arguments.iter().zip(&named.inputs).zip(expected) {
                    assert_eq!(arg.name.as_deref(), Some(param.name.as_str()), "{}", f.signature());
                    assert_eq!(arg.ty, param.selector_type());
                    assert_eq!(arg.value, value, "{}", f.signature());
                    assert_eq!(arg.token_amount, None);
                }
                count += 1;
            }
        }
        assert!(count > 40, "{count} bundled functions");
    }

    #[test]
    fn a_transfer_reads_exactly_with_its_amount_in_whole_tokens() {
        let mut known = Known::default();
        known.tokens.insert(TOKEN, Token { symbol: "UNI".into(), decimals: 18 });
        let f = Function::parse("transfer(address,uint256)").unwrap();
        let raw = U256::from(1_250_000_500_000_000_000_000_000u128);
        let calldata = f.abi_encode_input(&[DynSolValue::Address(TO), DynSolValue::Uint(raw, 256)]).unwrap();
        let call = decoded(decode_call(&known, &TOKEN, None, &calldata));
        let json = serde_json::to_value(&call).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "function": "transfer",
                "signature": "transfer(address,uint256)",
                "selector": "0xa9059cbb",
                "source": "bundled",
                "arguments": [
                    {"name": "to", "type": "address", "value": "0x00000000000000000000000000000000000000A1"},
                    {"name": "value", "type": "uint256", "value": "1250000500000000000000000",
                     "tokenAmount": {"amount": "1250000.5", "symbol": "UNI", "decimals": 18}},
                ],
            })
        );
    }

    #[test]
    fn tuples_and_arrays_of_tuples_keep_their_member_names() {
        // As Sourcify serves ABIs: JSON, with the tuples' member names in `components`.
        let leg = r#"{"name": "NAME", "type": "TYPE", "components": [
            {"name": "to", "type": "address"}, {"name": "amount", "type": "uint256"}]}"#;
        let json = format!(
            r#"[{{"type": "function", "name": "pay", "stateMutability": "nonpayable", "outputs": [], "inputs": [
                {}, {}, {{"name": "tick", "type": "int24"}}, {{"name": "tag", "type": "bytes32"}}]}}]"#,
            leg.replace("NAME", "leg").replace("TYPE", "tuple"),
            leg.replace("NAME", "legs").replace("TYPE", "tuple[]"),
        );
        let abi: JsonAbi = serde_json::from_str(&json).unwrap();
        let f = abi.functions().next().unwrap().clone();
        let leg = |n: u64| DynSolValue::Tuple(vec![DynSolValue::Address(TO), DynSolValue::Uint(U256::from(n), 256)]);
        let calldata = f
            .abi_encode_input(&[
                leg(1),
                DynSolValue::Array(vec![leg(2), leg(3)]),
                DynSolValue::Int(I256::try_from(-5).unwrap(), 24),
                DynSolValue::FixedBytes(FixedBytes::repeat_byte(0xab), 32),
            ])
            .unwrap();
        let mut known = Known::default();
        known.abis.insert(TOKEN, vec![(AbiSource::Sourcify, abi)]);
        let call = decoded(decode_call(&known, &TOKEN, None, &calldata));
        assert_eq!(call.source, AbiSource::Sourcify);
        assert_eq!(call.signature, "pay((address,uint256),(address,uint256)[],int24,bytes32)");
        let json = serde_json::to_value(&call.arguments).unwrap();
        let member = |n: &str| {
            serde_json::json!([
                {"name": "to", "type": "address", "value": "0x00000000000000000000000000000000000000A1"},
                {"name": "amount", "type": "uint256", "value": n},
            ])
        };
        assert_eq!(
            json,
            serde_json::json!([
                {"name": "leg", "type": "(address,uint256)", "value": member("1")},
                {"name": "legs", "type": "(address,uint256)[]", "value": [member("2"), member("3")]},
                {"name": "tick", "type": "int24", "value": "-5"},
                {"name": "tag", "type": "bytes32", "value": format!("0x{}", "ab".repeat(32))},
            ])
        );
    }

    #[test]
    fn a_bravo_signature_makes_the_calldata_its_arguments() {
        let known = Known::default();
        let args = DynSolValue::Tuple(vec![DynSolValue::Address(TO), DynSolValue::Uint(U256::from(9), 256)])
            .abi_encode_params();
        // Known to the bundled table: its names.
        let call = decoded(decode_call(&known, &TOKEN, Some("transfer(address,uint256)"), &args));
        assert_eq!((call.selector.as_str(), call.source), ("0xa9059cbb", AbiSource::Bundled));
        assert_eq!(call.arguments[0].name.as_deref(), Some("to"));
        // Known to no ABI: decoded by the signature itself, without names.
        let call = decoded(decode_call(&known, &TOKEN, Some("_setPayee(address,uint256)"), &args));
        assert_eq!(call.source, AbiSource::Signature);
        assert_eq!(call.function, "_setPayee");
        assert_eq!(call.arguments[1].name, None);
        assert_eq!(call.arguments[1].value, Value::Text("9".into()));
        // Not canonical text: the timelock hashes the text as given, so another selector is called.
        let u = undecoded_call(decode_call(&known, &TOKEN, Some("transfer(address, uint256)"), &args));
        assert_eq!(u.reason, Reason::UnknownSelector);
        assert_ne!(u.selector.as_deref(), Some("0xa9059cbb"));
    }

    #[test]
    fn an_ambiguous_selector_lists_every_candidate() {
        // A real collision: both hash to 0xa9059cbb.
        let babbage = Function::parse("many_msg_babbage(bytes1 b)").unwrap();
        assert_eq!(babbage.selector(), Function::parse("transfer(address,uint256)").unwrap().selector());
        let mut known = Known::default();
        known.abis.insert(
            TOKEN,
            vec![(AbiSource::Registry, JsonAbi::parse(["function many_msg_babbage(bytes1 b)"]).unwrap())],
        );
        let f = Function::parse("transfer(address,uint256)").unwrap();
        let calldata = f.abi_encode_input(&[DynSolValue::Address(TO), DynSolValue::Uint(U256::from(1), 256)]).unwrap();
        let u = undecoded_call(decode_call(&known, &TOKEN, None, &calldata));
        assert_eq!(u.reason, Reason::AmbiguousSelector);
        assert_eq!(u.selector.as_deref(), Some("0xa9059cbb"));
        assert_eq!(u.candidates, ["many_msg_babbage(bytes1)", "transfer(address,uint256)"]);
        // Two sources naming one signature are one candidate: the first source names it.
        known.abis.insert(
            TOKEN,
            vec![(AbiSource::Sourcify, JsonAbi::parse(["function transfer(address dst, uint256 wad)"]).unwrap())],
        );
        let call = decoded(decode_call(&known, &TOKEN, None, &calldata));
        assert_eq!(call.source, AbiSource::Sourcify);
        assert_eq!(call.arguments[0].name.as_deref(), Some("dst"));
    }

    #[test]
    fn malformed_calldata_is_undecoded_with_its_reason() {
        let known = Known::default();
        let reason = |calldata: &[u8]| {
            let u = undecoded_call(decode_call(&known, &TOKEN, None, calldata));
            (u.reason, u.message)
        };
        assert_eq!(decode_call(&known, &TOKEN, None, &[]), Call::NativeTransfer);
        for short in [&[0xa9][..], &[0xa9, 0x05], &[0xa9, 0x05, 0x9c]] {
            assert_eq!(reason(short), (Reason::TooShort, None));
        }
        assert_eq!(reason(&[0xde, 0xad, 0xbe, 0xef, 0, 0]), (Reason::UnknownSelector, None));

        let transfer = Function::parse("transfer(address,uint256)").unwrap();
        let good =
            transfer.abi_encode_input(&[DynSolValue::Address(TO), DynSolValue::Uint(U256::from(5), 256)]).unwrap();
        let (r, message) = reason(&good[..4 + 32]);
        assert_eq!(r, Reason::MalformedArguments);
        assert!(message.is_some_and(|m| !m.is_empty()));

        let mut trailing = good.clone();
        trailing.extend_from_slice(&[0u8; 3]);
        assert_eq!(reason(&trailing), (Reason::TrailingBytes, Some("3 bytes follow the encoded arguments".into())));

        // An address word with its high bytes set: the decoder keeps the low 20 bytes.
        let mut dirty = good.clone();
        dirty[4] = 0xff;
        assert_eq!(reason(&dirty).0, Reason::NonCanonical);

        // relay(address,uint256,bytes) whose `data` offset points past the end.
        let relay = Function::parse("relay(address,uint256,bytes)").unwrap();
        let mut past = relay
            .abi_encode_input(&[
                DynSolValue::Address(TO),
                DynSolValue::Uint(U256::ZERO, 256),
                DynSolValue::Bytes(vec![1, 2]),
            ])
            .unwrap();
        past[4 + 64 + 30] = 0x10;
        let (r, message) = reason(&past);
        assert_eq!(r, Reason::MalformedArguments);
        assert!(message.is_some());
        let json = serde_json::to_value(undecoded_call(decode_call(&known, &TOKEN, None, &past))).unwrap();
        assert_eq!(json["candidates"], serde_json::json!(["relay(address,uint256,bytes)"]));
    }

    fn topic(address: Address) -> B256 {
        address.into_word()
    }

    #[test]
    fn transfer_and_role_granted_logs_decode() {
        let known = Known::default();
        let transfer = Event::parse("event Transfer(address indexed from, address indexed to, uint256 value)").unwrap();
        let data = DynSolValue::Uint(U256::from(42), 256).abi_encode();
        let log = decode_log(&known, &TOKEN, &[transfer.selector(), topic(TOKEN), topic(TO)], &data);
        let json = serde_json::to_value(&log).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "kind": "decoded",
                "event": "Transfer",
                "signature": "Transfer(address,address,uint256)",
                "topic0": "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
                "source": "bundled",
                "arguments": [
                    {"name": "from", "type": "address", "value": TOKEN.to_checksum(None), "indexed": true},
                    {"name": "to", "type": "address", "value": TO.to_checksum(None), "indexed": true},
                    {"name": "value", "type": "uint256", "value": "42"},
                ],
            })
        );
        // ERC-721's Transfer: one topic more, no data.
        let log =
            decode_log(&known, &TOKEN, &[transfer.selector(), topic(TOKEN), topic(TO), B256::with_last_byte(7)], &[]);
        let Log::Decoded(log) = log else { panic!("{log:?}") };
        assert_eq!(log.arguments[2].name.as_deref(), Some("tokenId"));
        assert_eq!(log.arguments[2].value, Value::Text("7".into()));
        assert!(log.arguments[2].indexed);
        // Two topics fit neither.
        let Log::Undecoded(u) = decode_log(&known, &TOKEN, &[transfer.selector(), topic(TOKEN)], &data) else {
            panic!("decoded")
        };
        assert_eq!(u.reason, Reason::UnknownSelector);
        assert_eq!(u.candidates.len(), 2);

        let granted =
            Event::parse("event RoleGranted(bytes32 indexed role, address indexed account, address indexed sender)")
                .unwrap();
        let role = keccak256("PROPOSER_ROLE");
        let log = decode_log(&known, &TO, &[granted.selector(), role, topic(TOKEN), topic(TO)], &[]);
        let Log::Decoded(log) = log else { panic!("{log:?}") };
        assert_eq!(log.event, "RoleGranted");
        let names: Vec<_> = log.arguments.iter().map(|a| a.name.clone().unwrap()).collect();
        assert_eq!(names, ["role", "account", "sender"]);
        assert_eq!(log.arguments[0].value, Value::Text(hex(role.as_slice())));
        assert_eq!(log.arguments[1].value, Value::Text(TOKEN.to_checksum(None)));
        assert!(matches!(
            decode_log(&known, &TO, &[], &[]),
            Log::Undecoded(Undecoded { reason: Reason::TooShort, .. })
        ));
    }

    #[test]
    fn reverts_decode_with_their_reason() {
        let known = Known::default();
        let encode = |sig: &str, values: &[DynSolValue]| {
            alloy_json_abi::Error::parse(sig).unwrap().abi_encode_input(values).unwrap()
        };
        let data = encode("Error(string)", &[DynSolValue::String("Ownable: caller is not the owner".into())]);
        assert_eq!(hex(&data[..4]), "0x08c379a0");
        let Revert::Decoded(r) = decode_revert(&known, None, &data) else { panic!("undecoded") };
        assert_eq!((r.error.as_str(), r.reason.as_deref()), ("Error", Some("Ownable: caller is not the owner")));

        let data = encode("Panic(uint256)", &[DynSolValue::Uint(U256::from(0x11), 256)]);
        assert_eq!(hex(&data[..4]), "0x4e487b71");
        let Revert::Decoded(r) = decode_revert(&known, None, &data) else { panic!("undecoded") };
        assert_eq!(r.reason.as_deref(), Some("arithmetic overflow or underflow (panic code 0x11)"));
        assert_eq!(r.arguments[0].value, Value::Text("17".into()));

        let data = encode(
            "ERC20InsufficientBalance(address,uint256,uint256)",
            &[DynSolValue::Address(TO), DynSolValue::Uint(U256::from(5), 256), DynSolValue::Uint(U256::from(9), 256)],
        );
        let json = serde_json::to_value(decode_revert(&known, Some(&TOKEN), &data)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "kind": "decoded",
                "error": "ERC20InsufficientBalance",
                "signature": "ERC20InsufficientBalance(address,uint256,uint256)",
                "selector": "0xe450d38c",
                "source": "bundled",
                "arguments": [
                    {"name": "sender", "type": "address", "value": TO.to_checksum(None)},
                    {"name": "balance", "type": "uint256", "value": "5"},
                    {"name": "needed", "type": "uint256", "value": "9"},
                ],
            })
        );
        assert_eq!(decode_revert(&known, None, &[]), Revert::Empty);
        assert!(matches!(
            decode_revert(&known, None, &[1, 2]),
            Revert::Undecoded(Undecoded { reason: Reason::TooShort, .. })
        ));
    }
}
