//! The error half of an operation's result: a [`Problem`] typed by the operation that answers
//! it, so the operation's document lists exactly the error responses its declaration names.
//!
//! It lives apart from `errors` because it reads the operations' declarations, and those build
//! their example problems from `errors`: kept in `errors`, the two would import each other.
use std::marker::PhantomData;

use poem_openapi::{
    registry::{MetaHeader, MetaMediaType, MetaResponse, MetaResponses, MetaSchemaRef, Registry},
    types::Type,
};

use super::errors::{PROBLEM_CONTENT_TYPE, Problem};
use super::operations::Operation;

/// The error half of an operation's result. `Op` declares which codes the operation documents.
pub struct ApiError<Op> {
    pub problem: Problem,
    op: PhantomData<fn() -> Op>,
}

impl<Op> ApiError<Op> {
    pub fn new(problem: Problem) -> Self {
        Self { problem, op: PhantomData }
    }
}

impl<Op> From<Problem> for ApiError<Op> {
    fn from(problem: Problem) -> Self {
        Self::new(problem)
    }
}

impl<Op> From<ApiError<Op>> for poem::Error {
    fn from(err: ApiError<Op>) -> Self {
        poem::Error::from(err.problem)
    }
}

impl<Op: Operation> poem_openapi::ApiResponse for ApiError<Op> {
    fn meta() -> MetaResponses {
        // One response per status: codes sharing a status (400) share its description.
        let mut by_status: Vec<(u16, Vec<&'static str>)> = Vec::new();
        for code in Op::error_codes() {
            let text = Op::DECL.note(code).map_or(code.when(), |n| n.text);
            match by_status.iter_mut().find(|(s, _)| *s == code.status()) {
                Some((_, texts)) => texts.push(text),
                None => by_status.push((code.status(), vec![text])),
            }
        }
        MetaResponses {
            responses: by_status
                .into_iter()
                .map(|(status, texts)| MetaResponse {
                    description: join_static(&texts),
                    status: Some(status),
                    status_range: None,
                    content: vec![MetaMediaType {
                        content_type: PROBLEM_CONTENT_TYPE,
                        schema: MetaSchemaRef::Reference(Problem::name().into_owned()),
                    }],
                    headers: documented_headers(status),
                })
                .collect(),
        }
    }

    fn register(registry: &mut Registry) {
        Problem::register(registry);
    }
}

/// The headers an error status carries: when to retry (429, 503), and the rate-limit state
/// (429; successful answers carry the same two headers, see `access::RatePolicy`).
fn documented_headers(status: u16) -> Vec<MetaHeader> {
    let header = |name: &str, description: &str, schema: MetaSchemaRef| MetaHeader {
        name: name.to_owned(),
        description: Some(description.to_owned()),
        required: true,
        deprecated: false,
        schema,
    };
    let retry_after =
        || header("Retry-After", "Seconds to wait before retrying.", <u64 as poem_openapi::types::Type>::schema_ref());
    match status {
        429 => vec![
            retry_after(),
            header(
                "RateLimit-Policy",
                "The limit applied, as `\"<policy>\";q=<quota>;w=<window seconds>` (policy `client`, `partner` or \
                 `payer`), as draft-ietf-httpapi-ratelimit-headers names it.",
                String::schema_ref(),
            ),
            header(
                "RateLimit",
                "What is left of it, as `\"<policy>\";r=<remaining>;t=<seconds until the window resets>`.",
                String::schema_ref(),
            ),
        ],
        503 => vec![retry_after()],
        _ => vec![],
    }
}

/// Document metadata wants `&'static str`. The joined texts are built only while a document is
/// generated (once per process and per codegen run), so leaking them is bounded.
fn join_static(texts: &[&'static str]) -> &'static str {
    match texts {
        [one] => one,
        many => Box::leak(many.join(" ").into_boxed_str()),
    }
}
