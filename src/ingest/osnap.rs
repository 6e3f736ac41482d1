//! The transactions a Snapshot proposal carries for execution by a Safe (issue 47): the oSnap
//! plugin's data, as the hub returns it in the proposal's `plugins`.
//!
//! oSnap (UMA's Optimistic Governor, a Safe module) executes a passed proposal's transactions
//! from the Safe after the oracle's challenge period. The plugin stores, per proposal,
//! `{"oSnap": {"safe": {"safeAddress", "network", "moduleAddress", "transactions": [...]}}}`;
//! each transaction has `to`, `value`, `data` and `formatted` = `[to, operation, value, data]`,
//! the tuple the plugin submits to the module (so it is what would execute, and is read first).
//! The plugin only makes calls (`operation` 0); anything else is refused, not guessed.
//!
//! The legacy SafeSnap plugin (Reality module) names the module but not the Safe that would
//! make the calls, so its transactions are not read: their sender cannot be stated.
use alloy_primitives::{Address, U256, hex};
use serde_json::Value;

use crate::rules::actions::ProposedAction;

/// A Safe's transactions for one proposal, as the oSnap plugin stores them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SafeTransactions {
    /// The Safe that makes the calls.
    pub safe: Address,
    /// The Optimistic Governor module that executes them through the Safe.
    pub module: Option<Address>,
    /// The chain id the plugin names (text, as the hub gives it).
    pub network: Option<String>,
    pub actions: Vec<ProposedAction>,
}

/// Reads `plugins`: `None` when the proposal carries no oSnap transactions, an error (with what
/// is wrong) when it carries some that cannot be read exactly.
pub fn read(plugins: &Value) -> Option<Result<SafeTransactions, String>> {
    let safe = plugins.get("oSnap")?.get("safe")?;
    let transactions = safe.get("transactions")?.as_array()?;
    if transactions.is_empty() {
        return None;
    }
    Some(read_safe(safe, transactions))
}

fn read_safe(safe: &Value, transactions: &[Value]) -> Result<SafeTransactions, String> {
    let address = |v: Option<&Value>, what: &str| -> Result<Address, String> {
        let text = v.and_then(Value::as_str).ok_or_else(|| format!("no {what}"))?;
        text.parse::<Address>().map_err(|e| format!("{what} `{text}`: {e}"))
    };
    let actions = transactions
        .iter()
        .enumerate()
        .map(|(i, t)| transaction(t).map_err(|e| format!("transaction {i}: {e}")))
        .collect::<Result<_, _>>()?;
    Ok(SafeTransactions {
        safe: address(safe.get("safeAddress"), "safeAddress")?,
        module: safe.get("moduleAddress").and_then(Value::as_str).and_then(|m| m.parse().ok()),
        network: safe.get("network").and_then(|n| n.as_str().map(str::to_owned).or_else(|| Some(n.to_string()))),
        actions,
    })
}

/// One transaction: `formatted` where the plugin wrote it, else `to`, `value` and `data`.
fn transaction(t: &Value) -> Result<ProposedAction, String> {
    let (to, operation, value, data) = match t.get("formatted").and_then(Value::as_array) {
        Some(f) if f.len() == 4 => (&f[0], Some(&f[1]), &f[2], &f[3]),
        Some(f) => return Err(format!("`formatted` has {} members, not 4", f.len())),
        None => (
            t.get("to").unwrap_or(&Value::Null),
            None,
            t.get("value").unwrap_or(&Value::Null),
            t.get("data").unwrap_or(&Value::Null),
        ),
    };
    if let Some(op) = operation {
        let call = op.as_u64() == Some(0) || op.as_str() == Some("0");
        if !call {
            return Err(format!("operation {op}: the oSnap plugin makes calls only"));
        }
    }
    let to = to.as_str().ok_or("no `to`")?;
    let target = to.parse::<Address>().map_err(|e| format!("to `{to}`: {e}"))?;
    // Wei as decimal text (a JSON number only if it is an exact integer).
    let value = match value {
        Value::String(s) => s.parse::<U256>().map_err(|e| format!("value `{s}`: {e}"))?,
        Value::Number(n) => n.as_u64().map(U256::from).ok_or_else(|| format!("value {n}: not a whole number"))?,
        other => return Err(format!("value {other}: not a number")),
    };
    let data = data.as_str().ok_or("no `data`")?;
    let calldata = hex::decode(data).map_err(|e| format!("data: {e}"))?;
    Ok(ProposedAction { target, value, signature: None, calldata })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const SAFE: &str = "0x00000000000000000000000000000000000005aF";
    const TOKEN: &str = "0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984";

    fn plugins(transactions: Value) -> Value {
        json!({"oSnap": {"safe": {
            "safeName": "Treasury",
            "safeAddress": SAFE,
            "network": "1",
            "moduleAddress": "0x0000000000000000000000000000000000000A0d",
            "transactions": transactions,
        }}})
    }

    #[test]
    fn formatted_is_what_executes_and_is_read_first() {
        let read = read(&plugins(json!([
            {"type": "raw", "to": TOKEN, "value": "5", "data": "0x",
             "formatted": [TOKEN, 0, "1000000000000000000000000", "0xa9059cbb"]},
            {"type": "raw", "to": SAFE, "value": "7", "data": "0x"},
        ])))
        .expect("oSnap data")
        .expect("readable");
        assert_eq!(read.safe, SAFE.parse::<Address>().unwrap());
        assert_eq!(read.network.as_deref(), Some("1"));
        assert!(read.module.is_some());
        assert_eq!(read.actions.len(), 2);
        assert_eq!(read.actions[0].value, U256::from(10u128.pow(24)));
        assert_eq!(read.actions[0].calldata, vec![0xa9, 0x05, 0x9c, 0xbb]);
        assert_eq!((read.actions[1].value, read.actions[1].calldata.len()), (U256::from(7), 0));
    }

    #[test]
    fn no_plugin_or_no_transactions_is_no_actions() {
        for plugins in [json!({}), json!({"oSnap": {"safe": null}}), self::plugins(json!([])), json!(null)] {
            assert_eq!(read(&plugins), None, "{plugins}");
        }
        let safesnap = json!({"safeSnap": {"safes": [{"network": "1", "realityAddress": SAFE, "txs": []}]}});
        assert_eq!(read(&safesnap), None);
    }

    #[test]
    fn what_cannot_be_read_exactly_is_refused_with_the_reason() {
        let cases = [
            (json!([{"formatted": [TOKEN, 1, "0", "0x"]}]), "operation 1"),
            (json!([{"formatted": [TOKEN, 0, "0"]}]), "3 members"),
            (json!([{"to": "0x12", "value": "0", "data": "0x"}]), "to `0x12`"),
            (json!([{"to": TOKEN, "value": "1.5", "data": "0x"}]), "value `1.5`"),
            (json!([{"to": TOKEN, "value": 1.5, "data": "0x"}]), "not a whole number"),
            (json!([{"to": TOKEN, "value": "0", "data": "0xzz"}]), "data"),
        ];
        for (transactions, expected) in cases {
            let error = read(&plugins(transactions.clone())).expect("oSnap data").expect_err("refused");
            assert!(error.contains(expected) && error.starts_with("transaction 0"), "{transactions}: {error}");
        }
        let mut bad_safe = plugins(json!([{"to": TOKEN, "value": "0", "data": "0x"}]));
        bad_safe["oSnap"]["safe"]["safeAddress"] = json!("nope");
        assert!(read(&bad_safe).unwrap().unwrap_err().contains("safeAddress"));
    }
}
