//! `GET /v1/meta/pricing`: what each paid endpoint costs and which credentials open it,
//! generated from the operation table and the documents (the same declarations the gate reads).
use poem::web::Data;
use poem_openapi::{Object, OpenApi, payload::Json};

use super::V1Tag;
use crate::api::AppState;
use crate::contract::{
    access::{
        DEFAULT_ASSET_DECIMALS, PARTNER_TOKEN_HEADER, Scope, Tier, Version, X402_SCHEME, X402_VERSIONS, v1_network_name,
    },
    api_error::ApiError,
    decimal,
    envelope::{CacheStatus, Freshness, V1Envelope, V1Request},
    operations::{self, PricingGetV1 as Op},
};

/// How to pay with x402.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct X402Terms {
    /// Accepted x402 protocol versions (v1: `X-PAYMENT`; v2: `PAYMENT-SIGNATURE`).
    pub versions: Vec<u8>,
    pub scheme: String,
    /// CAIP-2 network (x402 v2).
    pub network: String,
    /// The same network's x402 v1 name, when it has one.
    pub network_v1: Option<String>,
    /// Token contract address.
    pub asset: String,
    /// EIP-712 domain name of the token.
    pub asset_name: String,
    /// EIP-712 domain version of the token.
    pub asset_version: String,
    /// Decimals of the asset: prices are in its smallest unit.
    pub asset_decimals: u32,
    /// Receiving address; absent when the operator has not configured payments.
    pub pay_to: Option<String>,
    /// Whether payments can be settled now. When false, paid endpoints still answer 402 with the
    /// challenge, and only partner tokens open them.
    pub payments_enabled: bool,
}

/// A scope and what it opens.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
pub struct ScopeGrant {
    pub scope: Scope,
    pub version: Version,
    /// Tiers this scope opens.
    pub tiers: Vec<Tier>,
}

/// Partner-token access.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
pub struct PartnerTokenTerms {
    /// Request header carrying the token.
    pub header: String,
    pub scopes: Vec<ScopeGrant>,
}

/// The price of a tier.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase")]
pub struct TierPrice {
    pub tier: Tier,
    /// Atomic units of the asset, exact.
    pub price: String,
    /// The same price in whole asset units, exact (`0.001`).
    pub price_decimal: String,
}

/// One paid endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct PricedEndpoint {
    pub method: String,
    /// Path template, as in the surface's OpenAPI document.
    pub path: String,
    pub operation_id: String,
    pub version: Version,
    pub tier: Tier,
    /// Atomic units of the asset, exact: of one call, or of `paidSeconds` of a stream.
    pub price: String,
    /// For an endpoint that streams (`text/event-stream`): how long one x402 payment holds the
    /// stream open, in seconds; it then ends with a `stream_ended` event saying to pay again and
    /// resume. A partner token holds it as long as it likes. Absent: a payment buys one call.
    pub paid_seconds: Option<u64>,
    /// Partner-token scopes that open this endpoint.
    pub scopes: Vec<Scope>,
}

/// Prices and terms of every paid endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", example)]
pub struct Pricing {
    pub x402: X402Terms,
    pub partner_token: PartnerTokenTerms,
    pub tiers: Vec<TierPrice>,
    /// Every paid endpoint of v1 and v2.
    pub endpoints: Vec<PricedEndpoint>,
}

impl poem_openapi::types::Example for Pricing {
    fn example() -> Self {
        use crate::contract::access::{DEFAULT_PRICE_STANDARD, DEFAULT_X402_ASSET, DEFAULT_X402_NETWORK};
        Pricing {
            x402: X402Terms {
                versions: X402_VERSIONS.to_vec(),
                scheme: X402_SCHEME.to_owned(),
                network: DEFAULT_X402_NETWORK.to_owned(),
                network_v1: v1_network_name(DEFAULT_X402_NETWORK).map(str::to_owned),
                asset: DEFAULT_X402_ASSET.to_owned(),
                asset_name: "USDC".to_owned(),
                asset_version: "2".to_owned(),
                asset_decimals: DEFAULT_ASSET_DECIMALS,
                pay_to: Some("0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC".to_owned()),
                payments_enabled: true,
            },
            partner_token: PartnerTokenTerms {
                header: PARTNER_TOKEN_HEADER.to_owned(),
                scopes: vec![ScopeGrant {
                    scope: Scope::V1Standard,
                    version: Version::V1,
                    tiers: vec![Tier::Standard],
                }],
            },
            tiers: vec![TierPrice {
                tier: Tier::Standard,
                price: DEFAULT_PRICE_STANDARD.to_string(),
                price_decimal: "0.001".to_owned(),
            }],
            endpoints: vec![PricedEndpoint {
                method: "GET".to_owned(),
                path: "/v1/system/freshness".to_owned(),
                operation_id: "freshness_get".to_owned(),
                version: Version::V1,
                tier: Tier::Standard,
                price: DEFAULT_PRICE_STANDARD.to_string(),
                paid_seconds: None,
                scopes: Scope::accepted(Version::V1, Tier::Standard),
            }],
        }
    }
}

pub struct Api;

#[OpenApi(prefix_path = "/v1", tag = "V1Tag::Pricing")]
impl Api {
    /// Prices and access terms
    ///
    /// Read this before calling a paid endpoint: it lists every paid endpoint of v1 and v2 with
    /// its tier and price, the x402 terms (protocol versions, network, asset and its EIP-712
    /// domain, receiving address), and the partner-token header with the scopes and the tiers each
    /// opens. Free; no credentials needed.
    #[oai(path = "/meta/pricing", method = "get", operation_id = "pricing_get")]
    async fn pricing_get(
        &self,
        state: Data<&AppState>,
        req: V1Request,
    ) -> Result<Json<V1Envelope<Pricing>>, ApiError<Op>> {
        Ok(Json(req.respond(Freshness::new(None, CacheStatus::Fresh), pricing(&state))))
    }
}

fn pricing(state: &AppState) -> Pricing {
    let payments = &state.settings.payments;
    let prices = state.settings.prices();
    let endpoints = [Version::V1, Version::V2]
        .into_iter()
        .flat_map(|version| {
            state.documents.get(version).operations().filter_map(move |(method, path, id)| {
                let decl = operations::find(version, id)?;
                let tier = decl.tier()?;
                Some(PricedEndpoint {
                    method: method.to_ascii_uppercase(),
                    path: path.to_owned(),
                    operation_id: id.to_owned(),
                    version,
                    tier,
                    price: prices.of(tier).to_string(),
                    paid_seconds: decl.streams.then_some(prices.stream_seconds),
                    scopes: Scope::accepted(version, tier),
                })
            })
        })
        .collect();
    Pricing {
        x402: X402Terms {
            versions: X402_VERSIONS.to_vec(),
            scheme: X402_SCHEME.to_owned(),
            network: payments.network.clone(),
            network_v1: v1_network_name(&payments.network).map(str::to_owned),
            asset: payments.asset.clone(),
            asset_name: payments.asset_name.clone(),
            asset_version: payments.asset_version.clone(),
            asset_decimals: payments.asset_decimals,
            pay_to: payments.pay_to.clone(),
            payments_enabled: state.payments.enabled(),
        },
        partner_token: PartnerTokenTerms {
            header: PARTNER_TOKEN_HEADER.to_owned(),
            scopes: Scope::ALL
                .into_iter()
                .map(|scope| ScopeGrant {
                    scope,
                    version: scope.version(),
                    tiers: Tier::ALL.into_iter().filter(|t| scope.grants(scope.version(), *t)).collect(),
                })
                .collect(),
        },
        tiers: Tier::ALL
            .into_iter()
            .map(|tier| TierPrice {
                tier,
                price: prices.of(tier).to_string(),
                price_decimal: decimal::plain(
                    &decimal::scale_down(&prices.of(tier).to_string(), payments.asset_decimals).unwrap_or_default(),
                ),
            })
            .collect(),
        endpoints,
    }
}
