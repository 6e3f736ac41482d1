//! The x402 wire formats, v1 and v2, as hand-written serde types: camelCase members, absent
//! optional members omitted (real clients reject `null`), unknown members ignored.
//! See `../shared/reference/x402.md`; the published specification is the authority.
use base64::Engine;
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::contract::x402::AssetDomain;

/// Standard base64 with padding: the v2 decoder of the reference clients rejects URL-safe base64.
const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

pub fn encode_header<T: Serialize>(value: &T) -> String {
    B64.encode(serde_json::to_vec(value).expect("x402 wire types serialise"))
}

/// Decodes a payment header: base64 (standard alphabet; padding optional) of a JSON document.
pub fn decode_header<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let text = text.trim();
    let bytes = B64
        .decode(text)
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(text))
        .map_err(|e| format!("the payment header is not base64: {e}"))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("the payment header is not a valid x402 payment payload: {e}"))
}

/// A v2 payment requirement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequirementV2 {
    pub scheme: String,
    /// CAIP-2 (`eip155:84532`).
    pub network: String,
    /// Exact amount in atomic units.
    pub amount: String,
    pub asset: String,
    pub pay_to: String,
    pub max_timeout_seconds: u64,
    pub extra: AssetDomain,
}

/// What a v2 challenge says about the resource being sold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInfo {
    pub url: String,
    pub description: String,
    pub mime_type: String,
}

/// The v2 challenge, carried base64-encoded in `PAYMENT-REQUIRED`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChallengeV2 {
    pub x402_version: u8,
    pub error: String,
    pub resource: ResourceInfo,
    pub accepts: Vec<RequirementV2>,
    /// Extensions by key; `bazaar` is discovery (`x402::bazaar`). Omitted when empty.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extensions: serde_json::Map<String, serde_json::Value>,
}

/// EIP-3009 `TransferWithAuthorization` as the client signed it; numbers are decimal strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Authorization {
    pub from: String,
    pub to: String,
    pub value: String,
    pub valid_after: String,
    pub valid_before: String,
    /// 32 bytes, 0x-hex.
    pub nonce: String,
}

/// The `exact` EVM scheme's payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExactEvmPayload {
    pub signature: String,
    pub authorization: Authorization,
}

/// `X-PAYMENT` (v1) or `PAYMENT-SIGNATURE` (v2), decoded. v1 names `scheme` and `network`; v2
/// repeats the requirement it accepted. Other members are kept so the facilitator sees what
/// the client sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentPayload {
    pub x402_version: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted: Option<serde_json::Value>,
    pub payload: ExactEvmPayload,
    #[serde(flatten)]
    pub rest: serde_json::Map<String, serde_json::Value>,
}

/// The body of `POST /verify` and `POST /settle`: our own requirement, never the client's copy.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FacilitatorRequest<'a> {
    pub x402_version: u8,
    pub payment_payload: &'a PaymentPayload,
    pub payment_requirements: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyResponse {
    pub is_valid: bool,
    #[serde(default)]
    pub invalid_reason: Option<String>,
    #[serde(default)]
    pub payer: Option<String>,
}

/// `/settle`'s answer; also what `X-PAYMENT-RESPONSE` / `PAYMENT-RESPONSE` carry, re-encoded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SettleResponse {
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    #[serde(default)]
    pub transaction: String,
    #[serde(default)]
    pub network: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payment_headers_round_trip_and_reject_garbage() {
        let text = r#"{"x402Version":2,"accepted":{"scheme":"exact"},"payload":{"signature":"0x00","authorization":{"from":"0x1","to":"0x2","value":"1000","validAfter":"0","validBefore":"9","nonce":"0x3"}},"resource":{"url":"u"}}"#;
        let encoded = B64.encode(text);
        let payload: PaymentPayload = decode_header(&encoded).expect("decodes");
        assert_eq!(payload.x402_version, 2);
        assert!(payload.rest.contains_key("resource"), "unknown members are kept for the facilitator");
        assert!(decode_header::<PaymentPayload>("not base64!").unwrap_err().contains("not base64"));
        assert!(decode_header::<PaymentPayload>(&B64.encode("{}")).unwrap_err().contains("payment payload"));
        let settle = SettleResponse {
            success: true,
            error_reason: None,
            transaction: "0xab".into(),
            network: "eip155:84532".into(),
            payer: None,
        };
        assert!(!serde_json::to_string(&settle).unwrap().contains("null"), "absent members are omitted");
    }
}
