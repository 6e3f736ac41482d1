//! The x402 facilitator client: `POST /verify` and `POST /settle`, always with our own
//! requirement. A facilitator may answer 200 with `success: false`, or a 4xx with a
//! well-formed verdict: the body decides, not the status.
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::wire::{FacilitatorRequest, PaymentPayload, SettleResponse, VerifyResponse};

/// Verification is a read; settlement waits for a transaction, so it gets longer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const VERIFY_TIMEOUT: Duration = Duration::from_secs(15);
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
pub struct Facilitator {
    base: reqwest::Url,
    client: reqwest::Client,
}

/// Why the facilitator gave no verdict. Either way the caller answers 502 `UPSTREAM_ERROR`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FacilitatorError {
    #[error("the payment facilitator is unreachable: {0}")]
    Unreachable(String),
    #[error("the payment facilitator answered something that is not an x402 verdict: {0}")]
    Malformed(String),
}

impl Facilitator {
    pub fn new(base: reqwest::Url) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("govdata/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self { base, client })
    }

    pub fn url(&self) -> &reqwest::Url {
        &self.base
    }

    pub async fn verify(
        &self,
        payload: &PaymentPayload,
        requirement: serde_json::Value,
    ) -> Result<VerifyResponse, FacilitatorError> {
        self.post("verify", payload, requirement, VERIFY_TIMEOUT).await
    }

    pub async fn settle(
        &self,
        payload: &PaymentPayload,
        requirement: serde_json::Value,
    ) -> Result<SettleResponse, FacilitatorError> {
        self.post("settle", payload, requirement, SETTLE_TIMEOUT).await
    }

    async fn post<T: DeserializeOwned>(
        &self,
        action: &str,
        payload: &PaymentPayload,
        requirement: serde_json::Value,
        timeout: Duration,
    ) -> Result<T, FacilitatorError> {
        let url = self.endpoint(action);
        let body = FacilitatorRequest {
            x402_version: payload.x402_version,
            payment_payload: payload,
            payment_requirements: requirement,
        };
        let response = self
            .client
            .post(url)
            .timeout(timeout)
            .json(&body)
            .send()
            .await
            .map_err(|e| FacilitatorError::Unreachable(format!("{action}: {e}")))?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| FacilitatorError::Unreachable(format!("{action}: {e}")))?;
        serde_json::from_slice(&bytes).map_err(|e| {
            let start = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
            FacilitatorError::Malformed(format!("{action} answered {status}: {e}; body starts {start:?}"))
        })
    }

    fn endpoint(&self, action: &str) -> reqwest::Url {
        let mut url = self.base.clone();
        let path = format!("{}/{action}", url.path().trim_end_matches('/'));
        url.set_path(&path);
        url
    }
}
