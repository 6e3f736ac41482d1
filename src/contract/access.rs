//! Access: tiers, scopes, prices, and the credential headers. The gate, `/v1/meta/pricing` and
//! the documents all read these declarations.
use poem_openapi::Enum;
use serde::Serialize;

/// The partner-token header (public).
pub const PARTNER_TOKEN_HEADER: &str = "x-service-api-token";
/// The internal first-party token header: grants everything, appears in no public document.
pub const INTERNAL_TOKEN_HEADER: &str = "x-internal-token";

/// The x402 protocol generations a paid endpoint accepts.
pub const X402_VERSIONS: [u8; 2] = [1, 2];
/// The x402 payment scheme offered.
pub const X402_SCHEME: &str = "exact";

/// How long a payment authorization may take to settle, as offered in every requirement.
pub const X402_MAX_TIMEOUT_SECONDS: u64 = 60;

/// Default prices in atomic units of the asset (USDC has 6 decimals: 1000 = 0.001 USDC).
pub const DEFAULT_PRICE_STANDARD: u64 = 1_000;
pub const DEFAULT_PRICE_PLUS: u64 = 5_000;
/// How long one x402 payment holds a stream open, by default (an operator may change it, as the
/// prices): a stream is priced per this much time, at its tier's price.
pub const DEFAULT_STREAM_PAID_SECONDS: u64 = 3_600;
/// Defaults for the payment asset: USDC on Base Sepolia, with its EIP-712 domain.
pub const DEFAULT_X402_NETWORK: &str = "eip155:84532";
pub const DEFAULT_X402_ASSET: &str = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
pub const DEFAULT_X402_ASSET_NAME: &str = "USDC";
pub const DEFAULT_X402_ASSET_VERSION: &str = "2";
pub const DEFAULT_ASSET_DECIMALS: u32 = 6;

/// x402 v1 names networks by name, v2 by CAIP-2: the v1 name of a CAIP-2 network we can price in.
pub fn v1_network_name(caip2: &str) -> Option<&'static str> {
    match caip2 {
        "eip155:8453" => Some("base"),
        "eip155:84532" => Some("base-sepolia"),
        _ => None,
    }
}

/// The surface an operation belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Enum, Serialize)]
#[oai(rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum Version {
    V1,
    V2,
}

impl Version {
    pub const fn prefix(self) -> &'static str {
        match self {
            Self::V1 => "/v1",
            Self::V2 => "/v2",
        }
    }

    /// What names of the surface's operations start with (`v1_`, `v2_`).
    pub const fn id_prefix(self) -> &'static str {
        match self {
            Self::V1 => "v1_",
            Self::V2 => "v2_",
        }
    }
}

/// Paid tiers, ordered: `plus` includes `standard`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Enum, Serialize)]
#[oai(rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Standard,
    Plus,
}

impl Tier {
    pub const ALL: [Tier; 2] = [Tier::Standard, Tier::Plus];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Standard => "standard",
            Self::Plus => "plus",
        }
    }
}

/// Who may call an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    Free,
    Paid(Tier),
    /// Only a partner token whose scopes open the tier, never an x402 payment: what the
    /// operation manages (webhook subscriptions) belongs to the token, and a payment names no
    /// one who could come back for it.
    Partner(Tier),
}

/// Partner-token scopes. A tier's scope grants that tier and those below it; `*` grants every
/// tier of its version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Enum, Serialize)]
pub enum Scope {
    #[oai(rename = "v1:paid:standard")]
    #[serde(rename = "v1:paid:standard")]
    V1Standard,
    #[oai(rename = "v1:paid:plus")]
    #[serde(rename = "v1:paid:plus")]
    V1Plus,
    #[oai(rename = "v1:paid:*")]
    #[serde(rename = "v1:paid:*")]
    V1All,
    #[oai(rename = "v2:paid:standard")]
    #[serde(rename = "v2:paid:standard")]
    V2Standard,
    #[oai(rename = "v2:paid:plus")]
    #[serde(rename = "v2:paid:plus")]
    V2Plus,
    #[oai(rename = "v2:paid:*")]
    #[serde(rename = "v2:paid:*")]
    V2All,
}

impl Scope {
    pub const ALL: [Scope; 6] =
        [Self::V1Standard, Self::V1Plus, Self::V1All, Self::V2Standard, Self::V2Plus, Self::V2All];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::V1Standard => "v1:paid:standard",
            Self::V1Plus => "v1:paid:plus",
            Self::V1All => "v1:paid:*",
            Self::V2Standard => "v2:paid:standard",
            Self::V2Plus => "v2:paid:plus",
            Self::V2All => "v2:paid:*",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    pub const fn version(self) -> Version {
        match self {
            Self::V1Standard | Self::V1Plus | Self::V1All => Version::V1,
            Self::V2Standard | Self::V2Plus | Self::V2All => Version::V2,
        }
    }

    /// The highest tier this scope opens (`None` for `*`: every tier).
    const fn max_tier(self) -> Option<Tier> {
        match self {
            Self::V1Standard | Self::V2Standard => Some(Tier::Standard),
            Self::V1Plus | Self::V2Plus => Some(Tier::Plus),
            Self::V1All | Self::V2All => None,
        }
    }

    /// Whether this scope opens an operation of `version` in `tier`.
    pub fn grants(self, version: Version, tier: Tier) -> bool {
        self.version() == version && self.max_tier().is_none_or(|max| tier <= max)
    }

    /// The narrowest scope that opens `tier` of `version` (what a 403 names).
    pub const fn needed(version: Version, tier: Tier) -> Self {
        match (version, tier) {
            (Version::V1, Tier::Standard) => Self::V1Standard,
            (Version::V1, Tier::Plus) => Self::V1Plus,
            (Version::V2, Tier::Standard) => Self::V2Standard,
            (Version::V2, Tier::Plus) => Self::V2Plus,
        }
    }

    /// Every scope that opens `tier` of `version`.
    pub fn accepted(version: Version, tier: Tier) -> Vec<Self> {
        Self::ALL.into_iter().filter(|s| s.grants(version, tier)).collect()
    }
}

/// What a payment buys: the price per tier, in atomic units of the payment asset, of one call,
/// or of `stream_seconds` of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prices {
    pub standard: u64,
    pub plus: u64,
    /// How long one payment holds a stream open.
    pub stream_seconds: u64,
}

impl Default for Prices {
    fn default() -> Self {
        Self { standard: DEFAULT_PRICE_STANDARD, plus: DEFAULT_PRICE_PLUS, stream_seconds: DEFAULT_STREAM_PAID_SECONDS }
    }
}

impl Prices {
    /// What one payment of a streaming operation buys, in words: `per 3600 s of stream`.
    pub fn per_stream_payment(self) -> String {
        format!("per {} s of stream", self.stream_seconds)
    }

    pub const fn of(self, tier: Tier) -> u64 {
        match tier {
            Tier::Standard => self.standard,
            Tier::Plus => self.plus,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_follow_tier_order() {
        assert!(Scope::V1Plus.grants(Version::V1, Tier::Standard));
        assert!(Scope::V1Plus.grants(Version::V1, Tier::Plus));
        assert!(!Scope::V1Standard.grants(Version::V1, Tier::Plus));
        assert!(Scope::V1All.grants(Version::V1, Tier::Plus));
        assert!(!Scope::V1All.grants(Version::V2, Tier::Standard));
        assert!(!Scope::V2Plus.grants(Version::V1, Tier::Standard));
        assert_eq!(Scope::accepted(Version::V2, Tier::Plus), vec![Scope::V2Plus, Scope::V2All]);
        for s in Scope::ALL {
            assert_eq!(Scope::parse(s.as_str()), Some(s));
        }
    }
}

/// A rate limit: at most `quota` requests in any `window_s` seconds (a sliding window: the
/// previous window's count, weighted by how much of it still overlaps, plus the current one's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rate {
    pub quota: u32,
    pub window_s: u32,
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}s", self.quota, self.window_s)
    }
}

/// Who a rate limit counts, named as `RateLimit-Policy` names it. Everything a request costs
/// is counted against exactly one policy: the partner token it carries, the x402 payer of its
/// payment, or else its client address (free operations, 402 challenges, refused credentials,
/// documents). The internal token and health probes are not limited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RatePolicy {
    Client,
    Partner,
    Payer,
}

impl RatePolicy {
    pub const ALL: [Self; 3] = [Self::Client, Self::Partner, Self::Payer];

    pub const fn name(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Partner => "partner",
            Self::Payer => "payer",
        }
    }

    /// The defaults (configuration overrides them; `govdata tokens create --rate` overrides
    /// the partner rate per token).
    pub const fn default_rate(self) -> Rate {
        match self {
            // Browsing the free surface and asking for challenges: a few per second.
            Self::Client => Rate { quota: 300, window_s: 60 },
            // A partner's integration: 100 per second sustained over a minute.
            Self::Partner => Rate { quota: 6_000, window_s: 60 },
            // One paying wallet: 20 per second over a minute.
            Self::Payer => Rate { quota: 1_200, window_s: 60 },
        }
    }
}

/// The headers a rate-limited answer carries (draft-ietf-httpapi-ratelimit-headers).
pub const RATE_LIMIT_POLICY_HEADER: &str = "ratelimit-policy";
pub const RATE_LIMIT_HEADER: &str = "ratelimit";
