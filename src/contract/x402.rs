//! The parts of x402 that are public contract: the payment headers every paid operation
//! documents and the v1 payment requirement a 402 body lists (`accepts`). The protocol itself
//! (verification, settlement, the v2 wire types) lives in `crate::x402`.
use serde::{Deserialize, Serialize};

/// The payment generation a request used, by its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// `X-PAYMENT`, answered with `X-PAYMENT-RESPONSE`.
    V1,
    /// `PAYMENT-SIGNATURE`, answered with `PAYMENT-RESPONSE`.
    V2,
}

impl Generation {
    pub const fn number(self) -> u8 {
        match self {
            Self::V1 => 1,
            Self::V2 => 2,
        }
    }

    pub const fn request_header(self) -> &'static str {
        match self {
            Self::V1 => "X-PAYMENT",
            Self::V2 => "PAYMENT-SIGNATURE",
        }
    }

    pub const fn response_header(self) -> &'static str {
        match self {
            Self::V1 => "X-PAYMENT-RESPONSE",
            Self::V2 => "PAYMENT-RESPONSE",
        }
    }
}

/// The v2 challenge header of a 402.
pub const PAYMENT_REQUIRED_HEADER: &str = "PAYMENT-REQUIRED";

/// The token's EIP-712 domain name and version, which clients need to sign.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, poem_openapi::Object)]
#[oai(rename = "X402AssetDomain")]
pub struct AssetDomain {
    /// EIP-712 domain name of the token (`USDC`).
    pub name: String,
    /// EIP-712 domain version of the token (`2`).
    pub version: String,
}

/// A v1 payment requirement (an entry of the 402 body's `accepts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, poem_openapi::Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename = "X402PaymentRequirement", rename_all = "camelCase")]
pub struct RequirementV1 {
    /// The payment scheme (`exact`: an EIP-3009 transfer authorization).
    pub scheme: String,
    /// The x402 v1 network name (`base-sepolia`, `base`).
    pub network: String,
    /// The price in atomic units of `asset`, as a decimal string.
    pub max_amount_required: String,
    /// Absolute URL of the resource being paid for.
    pub resource: String,
    /// What the payment buys.
    pub description: String,
    /// Media type of the paid response.
    pub mime_type: String,
    /// The address that receives the payment.
    pub pay_to: String,
    /// Seconds the authorization must stay valid for settlement.
    pub max_timeout_seconds: u64,
    /// The token contract address.
    pub asset: String,
    /// The token's EIP-712 domain, needed to sign the authorization.
    pub extra: AssetDomain,
}
