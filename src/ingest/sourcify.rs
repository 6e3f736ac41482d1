//! Sourcify's v2 contract API: a contract's verified ABI (`GET {base}/v2/contract/{chainId}/{address}?fields=abi`).
//!
//! Asked only at ingestion, and only when configured (`GOVDATA_SOURCIFY_URL`). Each answer is
//! one of three (`store::contracts::AbiAnswer`): verified, with its ABI (an exact or a partial
//! match alike: a partial match differs only in the metadata hash, the ABI is the contract's);
//! not verified (404, or a chain Sourcify does not support); or failed: Sourcify down, slow past
//! its bounded timeout, 5xx, 429, or a body that is not its API. A failure never fails the run:
//! the caller decodes with what else it knows and asks again after the failure's retry time.
use std::time::Duration;

use alloy_json_abi::JsonAbi;
use alloy_primitives::Address;
use serde_json::Value;

use super::{RetryPolicy, Upstream, UpstreamError};
use crate::config::SourcifySettings;
use crate::store::contracts::AbiAnswer;

/// A Sourcify server, as one run asks it.
#[derive(Clone)]
pub struct Sourcify {
    upstream: Upstream,
    base: String,
}

impl Sourcify {
    pub fn new(settings: &SourcifySettings) -> Self {
        // Two attempts within the timeout each, a short backoff, a `Retry-After` honoured only as
        // long as one attempt: a slow Sourcify costs a run seconds, never minutes.
        let policy = RetryPolicy {
            attempts: 2,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(1),
            max_retry_after: settings.timeout,
            timeout: settings.timeout,
            concurrency: 2,
        };
        Self { upstream: Upstream::new(policy), base: settings.url.trim_end_matches('/').to_owned() }
    }

    /// What Sourcify says of `address` on `chain_id`.
    pub async fn lookup(&self, chain_id: u64, address: &Address) -> AbiAnswer {
        let url = format!("{}/v2/contract/{chain_id}/{address:#x}?fields=abi", self.base);
        answer(self.upstream.get_json::<Value>(&url).await)
    }
}

/// Sourcify's answer, read.
pub fn answer(result: Result<Value, UpstreamError>) -> AbiAnswer {
    match result {
        Ok(body) => verified(&body),
        Err(UpstreamError::Refused { status: 404, .. }) => AbiAnswer::NotVerified,
        Err(UpstreamError::Refused { status: 400, body, .. }) if body.contains("unsupported_chain") => {
            AbiAnswer::NotVerified
        }
        Err(e) => AbiAnswer::Failed(e.to_string()),
    }
}

/// A 200 body: `match` says whether the contract is verified, `abi` is its ABI.
fn verified(body: &Value) -> AbiAnswer {
    let Some(object) = body.as_object() else {
        return AbiAnswer::Failed("Sourcify answered something other than a JSON object".to_owned());
    };
    let match_kind = match object.get("match") {
        Some(Value::String(m)) if m == "exact_match" || m == "match" => m.clone(),
        Some(Value::Null) => return AbiAnswer::NotVerified,
        other => return AbiAnswer::Failed(format!("Sourcify's answer has no readable `match` ({other:?})")),
    };
    let Some(abi) = object.get("abi").filter(|a| a.is_array()) else {
        return AbiAnswer::Failed("Sourcify's answer for a verified contract has no `abi` array".to_owned());
    };
    match serde_json::from_value::<JsonAbi>(abi.clone()) {
        Ok(_) => AbiAnswer::Verified { abi: abi.to_string(), match_kind },
        Err(e) => AbiAnswer::Failed(format!("Sourcify's `abi` is not a readable ABI: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn refused(status: u16, body: &str) -> UpstreamError {
        UpstreamError::Refused { url: "http://127.0.0.1/v2/contract/1/0x00".into(), status, body: body.into() }
    }

    const ABI: &str = r#"[{"type":"function","name":"setRate","stateMutability":"nonpayable",
        "inputs":[{"name":"newRate","type":"uint256"},{"name":"to","type":"address"}],"outputs":[]}]"#;

    #[test]
    fn a_verified_contract_gives_its_abi_exact_or_partial() {
        for kind in ["exact_match", "match"] {
            let body = json!({"match": kind, "creationMatch": kind, "runtimeMatch": kind, "chainId": "1",
                "address": "0x0000000000000000000000000000000000000001", "abi": serde_json::from_str::<Value>(ABI).unwrap()});
            let AbiAnswer::Verified { abi, match_kind } = answer(Ok(body)) else { panic!("not verified") };
            assert_eq!(match_kind, kind);
            let abi: JsonAbi = serde_json::from_str(&abi).unwrap();
            assert_eq!(abi.functions().next().unwrap().signature(), "setRate(uint256,address)");
        }
    }

    #[test]
    fn a_404_is_not_verified_and_kept_as_such() {
        let body = r#"{"match":null,"creationMatch":null,"runtimeMatch":null,"chainId":"1","address":"0x…"}"#;
        assert_eq!(answer(Err(refused(404, body))), AbiAnswer::NotVerified);
        // A 200 that says no match is the same answer.
        assert_eq!(answer(Ok(json!({"match": null, "chainId": "1"}))), AbiAnswer::NotVerified);
        let unsupported = r#"{"customCode":"unsupported_chain","message":"Chain 9 is not supported","errorId":"x"}"#;
        assert_eq!(answer(Err(refused(400, unsupported))), AbiAnswer::NotVerified);
    }

    #[test]
    fn malformed_answers_and_failures_are_failures() {
        let malformed = UpstreamError::Malformed { url: "u".into(), reason: "expected value at line 1".into() };
        assert!(matches!(answer(Err(malformed)), AbiAnswer::Failed(m) if m.contains("not the expected JSON")));
        let down = UpstreamError::Exhausted { url: "u".into(), reason: "HTTP 500".into(), attempts: 2 };
        assert!(matches!(answer(Err(down)), AbiAnswer::Failed(m) if m.contains("HTTP 500")));
        assert!(matches!(answer(Err(refused(400, r#"{"customCode":"invalid_parameter"}"#))), AbiAnswer::Failed(_)));
        for body in [
            json!([1, 2]),
            json!({"chainId": "1"}),
            json!({"match": "perfect", "abi": []}),
            json!({"match": "exact_match"}),
            json!({"match": "exact_match", "abi": {"type": "function"}}),
            json!({"match": "exact_match", "abi": [{"type": "not-an-item", "name": "f"}]}),
        ] {
            assert!(matches!(answer(Ok(body.clone())), AbiAnswer::Failed(_)), "{body}");
        }
    }
}
