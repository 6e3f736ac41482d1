//! x402 payments for the paid endpoints: the terms a server offers (from configuration and the
//! tier prices), the challenge of a 402 in both wire generations, and the checks a payment must
//! pass before the facilitator sees it. HTTP plumbing lives in `edge::gate`; this module knows
//! nothing of requests and responses (its v1 requirement derives a document schema, because the
//! 402 problem body carries it).
pub mod bazaar;
pub mod eip3009;
pub mod facilitator;
pub mod wire;

use std::str::FromStr;

use alloy_primitives::{Address, U256};

use crate::config::PaymentArgs;
use crate::contract::access::{Prices, Tier, X402_MAX_TIMEOUT_SECONDS, X402_SCHEME, v1_network_name};
use crate::contract::x402::{AssetDomain, Generation, RequirementV1};
use eip3009::{ParsedAuthorization, SignatureCheck, TokenDomain};
use facilitator::Facilitator;
use wire::{ChallengeV2, PaymentPayload, RequirementV2, ResourceInfo};

/// Chains whose tokens carry no value. A facilitator on loopback is a test rig; pairing one with
/// any other chain (a mainnet) is refused at start-up, so a test setup cannot take real money.
pub const TEST_CHAIN_IDS: &[u64] = &[
    84532,    // Base Sepolia
    11155111, // Sepolia
    11155420, // OP Sepolia
    421614,   // Arbitrum Sepolia
    80002,    // Polygon Amoy
    31337,    // anvil / hardhat default
    1337,     // geth dev
];

/// What this server sells and how it is paid, checked once at start-up.
#[derive(Debug, Clone)]
pub struct PaymentTerms {
    /// CAIP-2.
    pub network: String,
    pub chain_id: u64,
    pub asset: Address,
    pub domain: AssetDomain,
    pub pay_to: Option<Address>,
    pub facilitator: Option<Facilitator>,
    pub prices: Prices,
}

/// A refused payment: an x402 reason code for machines and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: &'static str,
    pub detail: String,
}

impl Refusal {
    fn new(reason: &'static str, detail: impl Into<String>) -> Self {
        Self { reason, detail: detail.into() }
    }
}

/// A payment that passed every local check, with the requirement the facilitator must judge it by.
#[derive(Debug, Clone)]
pub struct CheckedPayment {
    pub generation: Generation,
    pub payload: PaymentPayload,
    pub requirement: serde_json::Value,
    /// Lowercase 0x address of the payer.
    pub payer: String,
    /// Lowercase 0x hex of the EIP-3009 nonce.
    pub nonce: String,
    /// The authorized amount, atomic units.
    pub amount: String,
}

impl PaymentTerms {
    /// Reads and checks the payment configuration; an error stops the server from starting.
    pub fn from_args(args: &PaymentArgs) -> anyhow::Result<Self> {
        use anyhow::{Context, bail};
        let chain_id = args.network.strip_prefix("eip155:").and_then(|n| n.parse::<u64>().ok()).with_context(|| {
            format!("GOVDATA_X402_NETWORK `{}` is not a CAIP-2 EVM network (eip155:<chain id>)", args.network)
        })?;
        let asset = Address::from_str(&args.asset)
            .map_err(|_| anyhow::anyhow!("GOVDATA_X402_ASSET `{}` is not a 0x token address", args.asset))?;
        let pay_to = args
            .pay_to
            .as_deref()
            .map(|p| Address::from_str(p).map_err(|_| anyhow::anyhow!("GOVDATA_X402_PAY_TO `{p}` is not a 0x address")))
            .transpose()?;
        let facilitator = match args.facilitator_url.as_deref() {
            None => None,
            Some(text) => {
                let url = reqwest::Url::parse(text)
                    .with_context(|| format!("GOVDATA_X402_FACILITATOR_URL `{text}` is not a URL"))?;
                if !matches!(url.scheme(), "http" | "https") {
                    bail!("GOVDATA_X402_FACILITATOR_URL `{text}` must be http or https");
                }
                if is_loopback(&url) && !TEST_CHAIN_IDS.contains(&chain_id) {
                    bail!(
                        "refusing to start: the facilitator {text} is on loopback (a test rig) but the network {} is not \
                         a test network; a local facilitator is only allowed with one of the chains {TEST_CHAIN_IDS:?}",
                        args.network
                    );
                }
                if pay_to.is_none() {
                    bail!("GOVDATA_X402_PAY_TO is required when a facilitator is configured");
                }
                Some(Facilitator::new(url)?)
            }
        };
        Ok(Self {
            network: args.network.clone(),
            chain_id,
            asset,
            domain: AssetDomain { name: args.asset_name.clone(), version: args.asset_version.clone() },
            pay_to,
            facilitator,
            prices: args.prices(),
        })
    }

    /// Whether a payment can be verified and settled now.
    pub fn enabled(&self) -> bool {
        self.pay_to.is_some() && self.facilitator.is_some()
    }

    pub fn network_v1(&self) -> Option<&'static str> {
        v1_network_name(&self.network)
    }

    fn price(&self, tier: Tier) -> String {
        self.prices.of(tier).to_string()
    }

    /// The v1 requirement for `tier` (none without a receiving address or a v1 network name).
    pub fn requirement_v1(&self, tier: Tier, resource: &ResourceInfo) -> Option<RequirementV1> {
        Some(RequirementV1 {
            scheme: X402_SCHEME.to_owned(),
            network: self.network_v1()?.to_owned(),
            max_amount_required: self.price(tier),
            resource: resource.url.clone(),
            description: resource.description.clone(),
            mime_type: resource.mime_type.clone(),
            pay_to: self.pay_to?.to_checksum(None),
            max_timeout_seconds: X402_MAX_TIMEOUT_SECONDS,
            asset: self.asset.to_checksum(None),
            extra: self.domain.clone(),
        })
    }

    /// The v2 requirement for `tier` (none without a receiving address).
    pub fn requirement_v2(&self, tier: Tier) -> Option<RequirementV2> {
        Some(RequirementV2 {
            scheme: X402_SCHEME.to_owned(),
            network: self.network.clone(),
            amount: self.price(tier),
            asset: self.asset.to_checksum(None),
            pay_to: self.pay_to?.to_checksum(None),
            max_timeout_seconds: X402_MAX_TIMEOUT_SECONDS,
            extra: self.domain.clone(),
        })
    }

    /// The v2 challenge; `error` says why payment is (still) required; `discovery` is the
    /// operation's `bazaar` extension (`bazaar::Catalog`).
    pub fn challenge_v2(
        &self,
        tier: Tier,
        resource: ResourceInfo,
        error: &str,
        discovery: Option<&serde_json::Value>,
    ) -> ChallengeV2 {
        ChallengeV2 {
            x402_version: 2,
            error: error.to_owned(),
            accepts: self.requirement_v2(tier).into_iter().collect(),
            resource,
            extensions: discovery.map(|d| (bazaar::BAZAAR.to_owned(), d.clone())).into_iter().collect(),
        }
    }

    /// Checks a payment header against our terms for `tier`, locally: generation, scheme,
    /// network, asset, receiver, amount, validity window and the payer's signature.
    pub fn check(
        &self,
        generation: Generation,
        header: &str,
        tier: Tier,
        resource: &ResourceInfo,
        now_secs: u64,
    ) -> Result<CheckedPayment, Refusal> {
        let payload: PaymentPayload =
            wire::decode_header(header).map_err(|e| Refusal::new("invalid_payload", format!("{e}.")))?;
        if payload.x402_version != generation.number() {
            let reason = if [1, 2].contains(&payload.x402_version) {
                format!(
                    "x402Version {} was sent in {}, which carries version {}.",
                    payload.x402_version,
                    generation.request_header(),
                    generation.number()
                )
            } else {
                format!("x402Version {} is not supported; this server speaks versions 1 and 2.", payload.x402_version)
            };
            return Err(Refusal::new("invalid_x402_version", reason));
        }
        let Some(pay_to) = self.pay_to else {
            return Err(Refusal::new(
                "invalid_payment_requirements",
                "This server does not take payments yet; use a partner token.",
            ));
        };
        let requirement = match generation {
            Generation::V1 => {
                let requirement = self.requirement_v1(tier, resource).ok_or_else(|| {
                    Refusal::new(
                        "invalid_network",
                        format!(
                            "The network {} has no x402 v1 name; pay with x402 v2 (PAYMENT-SIGNATURE).",
                            self.network
                        ),
                    )
                })?;
                self.match_v1(&payload, &requirement)?;
                serde_json::to_value(&requirement).expect("serialises")
            }
            Generation::V2 => {
                let requirement = self.requirement_v2(tier).expect("pay_to is set");
                self.match_v2(&payload, &requirement)?;
                serde_json::to_value(&requirement).expect("serialises")
            }
        };
        let authorization = ParsedAuthorization::parse(&payload.payload.authorization)
            .map_err(|e| Refusal::new("invalid_payload", e))?;
        if authorization.to != pay_to {
            return Err(Refusal::new(
                "invalid_exact_evm_payload_recipient_mismatch",
                format!("The authorization pays {}, not our payTo {}.", authorization.to, pay_to),
            ));
        }
        let price = U256::from(self.prices.of(tier));
        let amount_ok = match generation {
            // v1 states a maximum the client may meet or exceed; v2 an exact amount.
            Generation::V1 => authorization.value >= price,
            Generation::V2 => authorization.value == price,
        };
        if !amount_ok {
            return Err(Refusal::new(
                "invalid_exact_evm_payload_authorization_value",
                format!("The authorization is for {} atomic units; this endpoint costs {price}.", authorization.value),
            ));
        }
        let now = U256::from(now_secs);
        if authorization.valid_after > now {
            return Err(Refusal::new(
                "invalid_exact_evm_payload_authorization_valid_after",
                format!("The authorization is not valid before {} (now {now_secs}).", authorization.valid_after),
            ));
        }
        // Settlement takes a few seconds: an authorization about to expire would fail on chain.
        if authorization.valid_before <= now + U256::from(SETTLEMENT_MARGIN_SECS) {
            return Err(Refusal::new(
                "invalid_exact_evm_payload_authorization_valid_before",
                format!(
                    "The authorization expired at {} or expires within {SETTLEMENT_MARGIN_SECS} s (now {now_secs}).",
                    authorization.valid_before
                ),
            ));
        }
        let domain = TokenDomain {
            name: self.domain.name.clone(),
            version: self.domain.version.clone(),
            chain_id: self.chain_id,
            verifying_contract: self.asset,
        };
        if let SignatureCheck::Invalid(why) =
            eip3009::check_signature(&payload.payload.signature, &authorization, &domain)
        {
            return Err(Refusal::new("invalid_exact_evm_payload_signature", format!("{why}.")));
        }
        Ok(CheckedPayment {
            generation,
            payer: format!("{:#x}", authorization.from),
            nonce: format!("{:#x}", authorization.nonce),
            amount: authorization.value.to_string(),
            payload,
            requirement,
        })
    }

    fn match_v1(&self, payload: &PaymentPayload, ours: &RequirementV1) -> Result<(), Refusal> {
        if payload.scheme.as_deref() != Some(X402_SCHEME) {
            return Err(unsupported_scheme(payload.scheme.as_deref()));
        }
        if payload.network.as_deref() != Some(ours.network.as_str()) {
            return Err(wrong_network(payload.network.as_deref(), &ours.network));
        }
        Ok(())
    }

    fn match_v2(&self, payload: &PaymentPayload, ours: &RequirementV2) -> Result<(), Refusal> {
        let Some(accepted) = payload.accepted.as_ref().and_then(|a| a.as_object()) else {
            return Err(Refusal::new(
                "invalid_payload",
                "A v2 payment must carry `accepted`, the requirement it pays.",
            ));
        };
        let text = |name: &str| accepted.get(name).and_then(|v| v.as_str());
        if text("scheme") != Some(X402_SCHEME) {
            return Err(unsupported_scheme(text("scheme")));
        }
        if text("network") != Some(ours.network.as_str()) {
            return Err(wrong_network(text("network"), &ours.network));
        }
        if !text("asset").is_some_and(|a| a.eq_ignore_ascii_case(&ours.asset)) {
            return Err(Refusal::new(
                "invalid_payment_requirements",
                format!(
                    "The payment is in asset {}, but this server accepts {}.",
                    text("asset").unwrap_or("(none)"),
                    ours.asset
                ),
            ));
        }
        if !text("payTo").is_some_and(|a| a.eq_ignore_ascii_case(&ours.pay_to)) {
            return Err(Refusal::new(
                "invalid_exact_evm_payload_recipient_mismatch",
                format!(
                    "The payment accepted payTo {}, but ours is {}.",
                    text("payTo").unwrap_or("(none)"),
                    ours.pay_to
                ),
            ));
        }
        if text("amount") != Some(ours.amount.as_str()) {
            return Err(Refusal::new(
                "invalid_exact_evm_payload_authorization_value",
                format!(
                    "The payment accepted amount {}, but this endpoint costs {}.",
                    text("amount").unwrap_or("(none)"),
                    ours.amount
                ),
            ));
        }
        // Our EIP-712 domain must be what the client signed with.
        let extra = accepted.get("extra");
        let domain_matches = extra.and_then(|e| e.get("name")).and_then(|v| v.as_str())
            == Some(ours.extra.name.as_str())
            && extra.and_then(|e| e.get("version")).and_then(|v| v.as_str()) == Some(ours.extra.version.as_str());
        if !domain_matches {
            return Err(Refusal::new(
                "invalid_payment_requirements",
                format!("The payment's extra.name/version must be {}/{}.", ours.extra.name, ours.extra.version),
            ));
        }
        Ok(())
    }
}

/// Seconds an authorization must stay valid beyond now for settlement to land.
pub const SETTLEMENT_MARGIN_SECS: u64 = 6;

fn unsupported_scheme(sent: Option<&str>) -> Refusal {
    Refusal::new(
        "unsupported_scheme",
        format!("The scheme {} is not offered; pay with `{X402_SCHEME}`.", sent.unwrap_or("(none)")),
    )
}

fn wrong_network(sent: Option<&str>, ours: &str) -> Refusal {
    Refusal::new(
        "invalid_network",
        format!("The payment is on network {}, but this server takes {ours}.", sent.unwrap_or("(none)")),
    )
}

fn is_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.to_ascii_lowercase().ends_with(".localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(network: &str, facilitator: Option<&str>) -> PaymentArgs {
        PaymentArgs {
            network: network.to_owned(),
            facilitator_url: facilitator.map(str::to_owned),
            pay_to: Some("0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC".to_owned()),
            ..crate::config::ServeArgs::default().payments
        }
    }

    #[test]
    fn a_loopback_facilitator_never_meets_a_mainnet() {
        for local in ["http://127.0.0.1:4021", "http://localhost:4021/", "http://[::1]:9/"] {
            let err = PaymentTerms::from_args(&args("eip155:8453", Some(local))).unwrap_err().to_string();
            assert!(err.contains("refusing to start"), "{local}: {err}");
            assert!(PaymentTerms::from_args(&args("eip155:84532", Some(local))).is_ok());
        }
        assert!(PaymentTerms::from_args(&args("eip155:8453", Some("https://x402.example.org"))).is_ok());
        assert!(PaymentTerms::from_args(&args("base", None)).is_err(), "networks are CAIP-2");
        let mut no_pay_to = args("eip155:84532", Some("http://127.0.0.1:1"));
        no_pay_to.pay_to = None;
        assert!(PaymentTerms::from_args(&no_pay_to).unwrap_err().to_string().contains("PAY_TO"));
    }
}
