//! The error contract: stable codes, their HTTP statuses, and the RFC 9457 problem body.
//!
//! Handlers return `api_error::ApiError<Op>`, which wraps a `Problem` for the operation `Op`.
//! Every error, whoever raises it (handler,
//! parameter parsing, router, access gate), leaves the server through `Problem`, and the
//! middleware at the edge (`edge::front`) stamps the request id on it.
use poem::http::StatusCode;
use poem_openapi::{Enum, Object};
use serde::Serialize;

use super::x402::RequirementV1;

/// The media type of every error body.
pub const PROBLEM_CONTENT_TYPE: &str = "application/problem+json";

/// Stable error codes. Clients branch on `code`, never on `title` or `detail`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Enum, Serialize)]
#[oai(rename_all = "SCREAMING_SNAKE_CASE")]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    ValidationError,
    InvalidCursor,
    Unauthorized,
    PaymentRequired,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    AmbiguousIdentifier,
    RateLimited,
    InternalError,
    UpstreamError,
    Unavailable,
}

impl ErrorCode {
    pub const fn status(self) -> u16 {
        match self {
            Self::ValidationError | Self::InvalidCursor => 400,
            Self::Unauthorized => 401,
            Self::PaymentRequired => 402,
            Self::Forbidden => 403,
            Self::NotFound => 404,
            Self::MethodNotAllowed => 405,
            Self::AmbiguousIdentifier => 409,
            Self::RateLimited => 429,
            Self::InternalError => 500,
            Self::UpstreamError => 502,
            Self::Unavailable => 503,
        }
    }

    pub const fn title(self) -> &'static str {
        match self {
            Self::ValidationError => "A parameter is missing, malformed or out of range",
            Self::InvalidCursor => "The cursor cannot be used; restart from the first page",
            Self::Unauthorized => "The partner token is unknown or revoked",
            Self::PaymentRequired => "Payment or a partner token is required",
            Self::Forbidden => "The partner token lacks the scope this endpoint needs",
            Self::NotFound => "No such resource",
            Self::MethodNotAllowed => "Method not allowed on this path",
            Self::AmbiguousIdentifier => "The identifier matches items in several DAOs",
            Self::RateLimited => "Too many requests",
            Self::InternalError => "Internal error",
            Self::UpstreamError => "An upstream service failed",
            Self::Unavailable => "The service is temporarily unavailable",
        }
    }

    /// A short text for the documented response: when an agent should expect this status.
    pub const fn when(self) -> &'static str {
        match self {
            Self::ValidationError => {
                "VALIDATION_ERROR: a parameter is missing, unparseable, or (v2) out of range; `errors[]` names it."
            }
            Self::InvalidCursor => {
                "INVALID_CURSOR (400): the cursor is malformed, forged, stale or from another query; restart from the first page."
            }
            Self::Unauthorized => "UNAUTHORIZED: the partner token in `x-service-api-token` is unknown or revoked.",
            Self::PaymentRequired => {
                "PAYMENT_REQUIRED: no credentials, or the x402 payment was refused (`error` says why). The body carries \
                 the x402 v1 challenge (`x402Version`, `error`, `accepts`); the `PAYMENT-REQUIRED` header the v2 one."
            }
            Self::Forbidden => "FORBIDDEN: the partner token lacks the scope this endpoint needs; `detail` names it.",
            Self::NotFound => "NOT_FOUND: no resource has this identifier.",
            Self::MethodNotAllowed => "METHOD_NOT_ALLOWED: only GET is served.",
            Self::AmbiguousIdentifier => {
                "AMBIGUOUS_IDENTIFIER: the identifier matches items in several DAOs; `candidates` lists them."
            }
            Self::RateLimited => "RATE_LIMITED: slow down; `Retry-After` says when to retry.",
            Self::InternalError => "INTERNAL_ERROR: a defect on our side; the request id helps us find it.",
            Self::UpstreamError => {
                "UPSTREAM_ERROR: a service we depend on (payment facilitator, data upstream) failed."
            }
            Self::Unavailable => {
                "UNAVAILABLE: the store is unreachable, or the server is at a limit (connections, concurrent queries, the request deadline) or shutting down; retry after `Retry-After`."
            }
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::ValidationError => "VALIDATION_ERROR",
            Self::InvalidCursor => "INVALID_CURSOR",
            Self::Unauthorized => "UNAUTHORIZED",
            Self::PaymentRequired => "PAYMENT_REQUIRED",
            Self::Forbidden => "FORBIDDEN",
            Self::NotFound => "NOT_FOUND",
            Self::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            Self::AmbiguousIdentifier => "AMBIGUOUS_IDENTIFIER",
            Self::RateLimited => "RATE_LIMITED",
            Self::InternalError => "INTERNAL_ERROR",
            Self::UpstreamError => "UPSTREAM_ERROR",
            Self::Unavailable => "UNAVAILABLE",
        }
    }

    /// The problem `type` URI: stable, one per code.
    pub fn type_uri(self) -> String {
        format!("urn:govdata:problem:{}", self.as_str().to_ascii_lowercase().replace('_', "-"))
    }
}

/// Where an invalid input was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum, Serialize)]
#[oai(rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum ParamLocation {
    Query,
    Path,
    Header,
    /// A member of a JSON request body (v2's webhook management; v1 takes no body, and its
    /// document does not list this value).
    Body,
}

/// One invalid input, named by its public name.
#[derive(Debug, Clone, PartialEq, Eq, Object, Serialize)]
#[oai(skip_serializing_if_is_none)]
#[serde(rename_all = "camelCase")]
pub struct FieldError {
    /// Where the parameter travels.
    #[oai(rename = "in")]
    #[serde(rename = "in")]
    pub location: ParamLocation,
    /// The parameter's public name, as written in the document.
    pub name: String,
    /// Why the value was refused.
    pub reason: String,
    /// What would have been accepted (a range, a format, an enum).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// The value received, as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received: Option<String>,
}

/// An item an ambiguous identifier could mean, or a proposal a title lookup found too unsure.
#[derive(Debug, Clone, PartialEq, Eq, Object, Serialize)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct Candidate {
    pub dao_id: String,
    pub kind: String,
    pub source: String,
    pub external_id: String,
    pub title: String,
    /// A title lookup's candidates: how well the title matches, a decimal in [0, 1] by the rule of
    /// the lookup's `match.confidence`: below {{LOOKUP_CONFIDENCE_FLOOR}}, or above it for titles
    /// none of which stands clearly above the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<String>,
}

/// What one operation's error response says beyond its code's usual text ([`ErrorCode::when`]):
/// the description of the response in the document, and an example body.
#[derive(Clone, Copy)]
pub struct ErrorNote {
    pub code: ErrorCode,
    pub text: &'static str,
    pub example: fn() -> Problem,
}

impl std::fmt::Debug for ErrorNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ErrorNote").field("code", &self.code).field("text", &self.text).finish_non_exhaustive()
    }
}

impl PartialEq for ErrorNote {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code && self.text == other.text
    }
}

impl Eq for ErrorNote {}

/// RFC 9457 problem details, the body of every error response.
#[derive(Debug, Clone, PartialEq, Eq, Object, Serialize)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    /// A URI naming the problem type; one per `code`.
    #[oai(rename = "type")]
    #[serde(rename = "type")]
    pub type_uri: String,
    /// A short summary of the problem type.
    pub title: String,
    /// The HTTP status code.
    pub status: u16,
    /// What went wrong with this request, for a reader.
    pub detail: String,
    /// The stable error code to branch on.
    pub code: ErrorCode,
    /// Echo of `x-request-id`; quote it when reporting a problem.
    pub request_id: String,
    /// The invalid inputs, each by its public name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<FieldError>>,
    /// For AMBIGUOUS_IDENTIFIER: the items the identifier matches. For NOT_FOUND of a title
    /// lookup (`GET /v1/proposals/lookup?title=`): the closest proposals, each with its
    /// `confidence`, closest first (an empty list when no title comes close).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidates: Option<Vec<Candidate>>,
    /// For PAYMENT_REQUIRED: the x402 v1 challenge's version (`1`). The v2 challenge travels in
    /// the `PAYMENT-REQUIRED` header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub x402_version: Option<u8>,
    /// For PAYMENT_REQUIRED: why payment is (still) required, as an x402 reason
    /// (`invalid_exact_evm_payload_signature`, …) or a sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For PAYMENT_REQUIRED: the x402 v1 payment requirements this endpoint accepts (empty when
    /// the operator has not configured payments; a partner token still opens it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepts: Option<Vec<RequirementV1>>,
    /// Seconds after which a retry may succeed, sent as `Retry-After` (429, 503); not a member
    /// of the body.
    #[oai(skip)]
    #[serde(skip)]
    pub retry_after_s: Option<u64>,
}

impl Problem {
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> Self {
        Self {
            type_uri: code.type_uri(),
            title: code.title().to_owned(),
            status: code.status(),
            detail: detail.into(),
            code,
            request_id: String::new(),
            errors: None,
            candidates: None,
            x402_version: None,
            error: None,
            accepts: None,
            retry_after_s: (code == ErrorCode::Unavailable).then_some(UNAVAILABLE_RETRY_AFTER_S),
        }
    }

    pub fn validation(error: FieldError) -> Self {
        let detail = format!("Parameter `{}`: {}", error.name, error.reason);
        Self { errors: Some(vec![error]), ..Self::new(ErrorCode::ValidationError, detail) }
    }

    pub fn not_found(what: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, what)
    }

    /// The 500 that says no more than that: what failed is logged, never answered.
    pub fn internal() -> Self {
        Self::new(ErrorCode::InternalError, "The request failed on our side.")
    }

    /// The 404 of a `daoId` no DAO has (a text that is no DAO id included), pointing at the list.
    pub fn unknown_dao(dao_id: &str) -> Self {
        Self::not_found(format!("No DAO has the id `{dao_id}`; GET /v1/daos lists them."))
    }

    /// The documented 404 of a title lookup sure of nothing.
    pub fn lookup_not_found_example() -> Self {
        Self {
            request_id: "01J9Z7Q4T8ZK3M2N5P6R7S8T9V".to_owned(),
            candidates: Some(vec![Candidate {
                dao_id: "uniswap".to_owned(),
                kind: "proposal".to_owned(),
                source: "snapshot".to_owned(),
                external_id: "0x48e56786fd4ab27c5b089b45be1e914d4a3a0f9d067ac51eff0b26a882e49bde".to_owned(),
                title: "[RFC] Governance Process Upgrade: Establishing a Statute of Limitations for Temperature Checks"
                    .to_owned(),
                confidence: Some("0.4167".to_owned()),
            }]),
            ..Self::not_found(format!(
                "No proposal title matches `title` = `statute zebra` with a confidence of at least {}; \
                 `candidates` lists the closest.",
                super::limits::lookup::CONFIDENCE_FLOOR
            ))
        }
    }

    fn example_value() -> Self {
        Self {
            request_id: "01J9Z7Q4T8ZK3M2N5P6R7S8T9V".to_owned(),
            ..Self::validation(FieldError {
                location: ParamLocation::Query,
                name: "limit".to_owned(),
                reason: "must be an integer".to_owned(),
                expected: Some("integer".to_owned()),
                received: Some("ten".to_owned()),
            })
        }
    }

    pub fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    pub fn into_response_with(mut self, request_id: &str) -> poem::Response {
        if self.request_id.is_empty() {
            self.request_id = request_id.to_owned();
        }
        let body = serde_json::to_vec(&self).unwrap_or_default();
        let mut response =
            poem::Response::builder().status(self.status_code()).content_type(PROBLEM_CONTENT_TYPE).body(body);
        if self.code == ErrorCode::PaymentRequired {
            response.headers_mut().insert("cache-control", poem::http::HeaderValue::from_static("no-store"));
        }
        if let Some(seconds) = self.retry_after_s {
            response.headers_mut().insert("retry-after", poem::http::HeaderValue::from(seconds));
        }
        response
    }
}

/// `Retry-After` of a 503: the store or the server is expected back within about this long.
pub const UNAVAILABLE_RETRY_AFTER_S: u64 = 1;

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.detail)
    }
}

impl std::error::Error for Problem {}

impl poem::error::ResponseError for Problem {
    fn status(&self) -> StatusCode {
        self.status_code()
    }

    fn as_response(&self) -> poem::Response {
        self.clone().into_response_with("")
    }
}

impl poem_openapi::types::Example for Problem {
    fn example() -> Self {
        Self::example_value()
    }
}
