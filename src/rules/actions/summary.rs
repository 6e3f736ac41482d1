//! The one-line summary of an action: deterministic text built from the decoded values alone
//! (no language model), for a reader who wants the gist; the arguments stay the truth.
//!
//! The rules, in order:
//! - An address reads as its label where the caller gives one ("the timelock"), otherwise as
//!   its full EIP-55 checksummed form (never shortened: two addresses must not read alike).
//! - An amount of a known ERC-20 reads in whole tokens with its symbol, the integer part grouped
//!   by thousands with commas, the fraction exact and without trailing zeros
//!   (`1,250,000.5 UNI`); of any other token as `<raw integer> of token <address>`. Native value
//!   reads the same way with the chain's currency (`1.5 ETH`), or as `<wei> wei` when unknown.
//! - Empty calldata: `send <value> from <sender> to <target>`.
//! - ERC-20 `transfer`: `transfer <amount> from <sender> to <to>`; `transferFrom`:
//!   `transfer <amount> from <from> to <to>`; `approve`: `approve <spender> to spend <amount>
//!   of <sender>'s`.
//! - A wrapper: `schedule <n> call(s) on <timelock> (delay <d> seconds)`, `execute <n> call(s)
//!   through <timelock>`, `relay <n> call(s) through <governor>`, `have Safe <safe> make <n>
//!   call(s)` (or `delegatecall(s)`), `batch <n> call(s) through MultiSend <target>`; cut at the
//!   depth limit or malformed, it says `(inner calls not decoded: …)` instead of a count.
//! - Any other decoded call: `call <function>(<name>: <value>, …) on <target>`, with strings
//!   quoted and escaped, byte strings over 32 bytes as `0x<first 4 bytes>… (<n> bytes)`, arrays
//!   in `[…]` and tuples in `(…)`.
//! - Undecoded: `call <selector> on <target> (undecoded: <reason>)`.
//! - Any call that sends value other than a plain send ends with `, sending <value>`.
//! - A summary longer than `contract::limits::ACTION_SUMMARY_MAX_CHARS` characters is cut there,
//!   ending with `…`.
use alloy_primitives::{Address, U256};

use super::decode::{amount_argument, whole_tokens};
use super::{Action, Argument, Call, DecodedCall, Inner, Known, Operation, Reason, Token, Undecoded, Value};
use crate::contract::limits::ACTION_SUMMARY_MAX_CHARS;

/// The summary of one action (inner calls have their own).
pub fn summarize(known: &Known, action: &Action) -> String {
    let target = name(known, &action.target);
    let sender = name(known, &action.sender);
    let text = match &action.call {
        Call::NativeTransfer => return format!("send {} from {sender} to {target}", native(known, &action.value)),
        Call::Undecoded(u) => format!("call {} on {target} (undecoded: {})", selector(u), reason(u)),
        Call::Decoded(call) => decoded(known, action, call, &target, &sender),
    };
    let text = if action.value.is_zero() { text } else { format!("{text}, sending {}", native(known, &action.value)) };
    cut(text)
}

/// `text` within [`ACTION_SUMMARY_MAX_CHARS`], cut at a character and ending with `…` when cut.
fn cut(text: String) -> String {
    match text.char_indices().nth(ACTION_SUMMARY_MAX_CHARS - 1) {
        Some((at, _)) if text[at..].chars().nth(1).is_some() => format!("{}…", &text[..at]),
        _ => text,
    }
}

fn decoded(known: &Known, action: &Action, call: &DecodedCall, target: &str, sender: &str) -> String {
    if let Some(inner) = &call.inner {
        return wrapper(call, inner, target, known.labels.contains_key(&action.target));
    }
    let address = |i: usize| match call.arguments.get(i).map(|a| &a.value) {
        Some(Value::Text(text)) => text.parse::<Address>().map_or_else(|_| text.clone(), |a| name(known, &a)),
        _ => "?".to_owned(),
    };
    let amount = || {
        let raw = amount_argument(&call.signature)
            .and_then(|i| call.arguments.get(i))
            .and_then(|a| match &a.value {
                Value::Text(t) => t.parse::<U256>().ok(),
                _ => None,
            })
            .unwrap_or_default();
        match known.tokens.get(&action.target) {
            Some(token) => in_tokens(&raw, token),
            None => format!("{raw} of token {target}"),
        }
    };
    match call.signature.as_str() {
        "transfer(address,uint256)" => format!("transfer {} from {sender} to {}", amount(), address(0)),
        "transferFrom(address,address,uint256)" => {
            format!("transfer {} from {} to {}", amount(), address(0), address(1))
        }
        "approve(address,uint256)" => format!("approve {} to spend {} of {sender}'s", address(0), amount()),
        _ => {
            let args: Vec<String> = call.arguments.iter().map(argument).collect();
            format!("call {}({}) on {target}", call.function, args.join(", "))
        }
    }
}

fn wrapper(call: &DecodedCall, inner: &Inner, target: &str, labelled: bool) -> String {
    let (count, calls) = match inner {
        Inner::Decoded { calls } => {
            let delegate = calls.iter().all(|c| c.operation == Some(Operation::DelegateCall));
            let noun = match (delegate && !calls.is_empty(), calls.len()) {
                (true, 1) => "delegatecall",
                (true, _) => "delegatecalls",
                (false, 1) => "call",
                (false, _) => "calls",
            };
            (calls.len().to_string(), noun.to_owned())
        }
        Inner::DepthLimit { limit } => (String::new(), format!("(inner calls not decoded: depth limit {limit})")),
        Inner::Malformed { message } => (String::new(), format!("(inner calls not decoded: {message})")),
    };
    let what = if count.is_empty() { calls } else { format!("{count} {calls}") };
    match call.function.as_str() {
        "schedule" | "scheduleBatch" => {
            let delay = call.arguments.last().map(value).unwrap_or_default();
            format!("schedule {what} on {target} (delay {delay} seconds)")
        }
        "execute" | "executeBatch" => format!("execute {what} through {target}"),
        "relay" => format!("relay {what} through {target}"),
        "multiSend" => format!("batch {what} through MultiSend {target}"),
        // A label names the Safe already ("the treasury Safe").
        _ if labelled => format!("have {target} make {what}"),
        _ => format!("have Safe {target} make {what}"),
    }
}

fn argument(a: &Argument) -> String {
    match &a.name {
        Some(n) => format!("{n}: {}", value(a)),
        None => value(a),
    }
}

fn value(a: &Argument) -> String {
    plain(&a.value, &a.ty)
}

fn plain(v: &Value, ty: &str) -> String {
    match v {
        Value::Bool(b) => b.to_string(),
        Value::Text(t) if ty == "string" => format!("\"{}\"", t.escape_default()),
        // Hex is two digits a byte after `0x`.
        Value::Text(t) if ty == "bytes" && t.len() > 2 + 64 => {
            format!("{}… ({} bytes)", &t[..10], (t.len() - 2) / 2)
        }
        Value::Text(t) => t.clone(),
        Value::List(items) => {
            let element = ty.rfind('[').map_or("", |i| &ty[..i]);
            format!("[{}]", items.iter().map(|x| plain(x, element)).collect::<Vec<_>>().join(", "))
        }
        Value::Members(members) => format!("({})", members.iter().map(argument).collect::<Vec<_>>().join(", ")),
    }
}

fn selector(u: &Undecoded) -> String {
    u.selector.clone().unwrap_or_else(|| "no selector".to_owned())
}

fn reason(u: &Undecoded) -> String {
    match u.reason {
        Reason::TooShort => "calldata shorter than a selector".to_owned(),
        Reason::UnknownSelector => "unknown selector".to_owned(),
        Reason::AmbiguousSelector => format!("ambiguous selector: {}", u.candidates.join(" or ")),
        Reason::MalformedArguments => "malformed arguments".to_owned(),
        Reason::TrailingBytes => "trailing bytes after the arguments".to_owned(),
        Reason::NonCanonical => "arguments not canonically encoded".to_owned(),
    }
}

/// An address as summaries name it.
fn name(known: &Known, address: &Address) -> String {
    known.labels.get(address).cloned().unwrap_or_else(|| address.to_checksum(None))
}

fn native(known: &Known, wei: &U256) -> String {
    match &known.native {
        Some(token) => in_tokens(wei, token),
        None => format!("{wei} wei"),
    }
}

/// `1,250,000.5 UNI`.
pub fn in_tokens(raw: &U256, token: &Token) -> String {
    format!("{} {}", grouped(&whole_tokens(raw, token.decimals)), token.symbol)
}

/// Plain decimal text with its integer part grouped by thousands (`1250000.5` → `1,250,000.5`).
pub fn grouped(plain: &str) -> String {
    let (int, fraction) = plain.split_once('.').map_or((plain, None), |(i, f)| (i, Some(f)));
    let mut out = String::with_capacity(plain.len() + int.len() / 3);
    for (i, digit) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    if let Some(f) = fraction {
        out.push('.');
        out.push_str(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use alloy_primitives::address;

    use super::*;
    use crate::rules::actions::{ProposedAction, decode_actions};

    fn token(symbol: &str, decimals: u8) -> Token {
        Token { symbol: symbol.into(), decimals }
    }

    #[test]
    fn amounts_read_in_whole_tokens_exactly() {
        let e18 = U256::from(10).pow(U256::from(18));
        assert_eq!(in_tokens(&(U256::from(1_250_000) * e18), &token("UNI", 18)), "1,250,000 UNI");
        assert_eq!(in_tokens(&U256::from(1_250_000_500_000_000_000_000_000u128), &token("UNI", 18)), "1,250,000.5 UNI");
        assert_eq!(in_tokens(&U256::from(1u8), &token("UNI", 18)), "0.000000000000000001 UNI");
        assert_eq!(in_tokens(&U256::from(1_234_567u32), &token("USDC", 6)), "1.234567 USDC");
        assert_eq!(in_tokens(&U256::from(987_654_321_000_000u64), &token("USDC", 6)), "987,654,321 USDC");
        assert_eq!(in_tokens(&U256::ZERO, &token("USDC", 6)), "0 USDC");
        assert_eq!(in_tokens(&U256::MAX, &token("X", 0)), format!("{} X", grouped(&U256::MAX.to_string())));
        assert_eq!(grouped("999"), "999");
        assert_eq!(grouped("1000"), "1,000");
        assert_eq!(grouped("123456.7890"), "123,456.7890");
    }

    #[test]
    fn plain_sends_and_undecoded_calls_read_plainly() {
        let timelock = address!("0x1a9C8182C09F50C8318d769245beA52c32BE35BC");
        let to = address!("0x00000000000000000000000000000000000000A1");
        let mut known = Known::default();
        known.labels.insert(timelock, "the timelock".into());
        let send = ProposedAction {
            target: to,
            value: U256::from(1_500_000_000_000_000_000u128),
            signature: None,
            calldata: vec![],
        };
        let unknown =
            ProposedAction { target: to, value: U256::ZERO, signature: None, calldata: vec![0xde, 0xad, 0xbe, 0xef] };
        let short = ProposedAction { target: to, value: U256::ZERO, signature: None, calldata: vec![1] };
        let summaries = |known: &Known| -> Vec<String> {
            decode_actions(known, &timelock, &[send.clone(), unknown.clone(), short.clone()])
                .into_iter()
                .map(|a| a.summary)
                .collect()
        };
        let to = to.to_checksum(None);
        assert_eq!(
            summaries(&known),
            [
                format!("send 1500000000000000000 wei from the timelock to {to}"),
                format!("call 0xdeadbeef on {to} (undecoded: unknown selector)"),
                format!("call no selector on {to} (undecoded: calldata shorter than a selector)"),
            ]
        );
        known.native = Some(token("ETH", 18));
        assert_eq!(summaries(&known)[0], format!("send 1.5 ETH from the timelock to {to}"));
    }

    #[test]
    fn a_summary_is_cut_at_its_longest() {
        let fits = "x".repeat(ACTION_SUMMARY_MAX_CHARS);
        assert_eq!(cut(fits.clone()), fits);
        let long = "é".repeat(ACTION_SUMMARY_MAX_CHARS + 1);
        let cut = cut(long);
        assert_eq!(cut.chars().count(), ACTION_SUMMARY_MAX_CHARS);
        assert!(cut.ends_with("é…"));
    }

    #[test]
    fn long_bytes_and_strings_stay_on_one_line() {
        let bytes = Argument {
            name: Some("data".into()),
            ty: "bytes".into(),
            value: Value::Text(format!("0x{}", "ab".repeat(40))),
            indexed: false,
            token_amount: None,
        };
        assert_eq!(argument(&bytes), "data: 0xabababab… (40 bytes)");
        let text =
            Argument { ty: "string".into(), value: Value::Text("two\nlines \"quoted\"".into()), name: None, ..bytes };
        assert_eq!(argument(&text), r#""two\nlines \"quoted\"""#);
    }
}
