//! The published OpenAPI documents. poem-openapi generates each surface's document from the
//! typed endpoint declarations; this module adds what its derive cannot express per operation
//! (poem issue #908): the access declaration of `operations.rs` (tier, price, scopes) as
//! `x-govdata-access`, the partner-token security scheme, and a sentence on access in each
//! description. codegen writes the result to `openapi/`; the server serves the same bytes.
use serde_json::{Map, Value, json};

use super::envelope::REQUEST_ID_HEADER;
use super::vocabulary::KeyKind;
use super::x402::{Generation, PAYMENT_REQUIRED_HEADER};
use super::{
    access::{Access, INTERNAL_TOKEN_HEADER, PARTNER_TOKEN_HEADER, Prices, Scope, Version},
    errors::ParamLocation,
    operations,
};

/// Name of the partner-token security scheme in the documents.
pub const PARTNER_TOKEN_SCHEME: &str = "partnerToken";
/// Names of the x402 payment security schemes (the payment headers of each generation).
pub const X402_SCHEME_V2: &str = "x402Payment";
pub const X402_SCHEME_V1: &str = "x402PaymentV1";

/// A surface's finished document in every served form.
#[derive(Debug, Clone)]
pub struct Published {
    pub version: Version,
    pub json: Value,
    pub json_text: String,
    pub yaml_text: String,
    /// The OpenAPI 3.1 rendition (`super::openapi31`), JSON.
    pub json31_text: String,
    paths: Vec<PathEntry>,
}

#[derive(Debug, Clone)]
struct PathEntry {
    template: std::sync::Arc<str>,
    segments: Vec<Segment>,
    /// (lowercase method, operationId)
    operations: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Param(String),
}

/// What the path of a request matched in a document.
#[derive(Debug, Clone)]
pub struct PathMatch<'a> {
    pub template: &'a str,
    /// Path parameter names in order of appearance.
    pub params: Vec<&'a str>,
    /// Methods served on the path, uppercase.
    pub methods: Vec<String>,
    /// The operationId of the request's method, when served.
    pub operation_id: Option<&'a str>,
}

impl Published {
    /// Finishes the document poem-openapi generated for `version`.
    pub fn new(version: Version, raw_spec: &str, prices: Prices) -> Self {
        let mut json: Value = serde_json::from_str(raw_spec).expect("poem-openapi emits valid JSON");
        finish(version, &mut json, prices);
        let json_text = serde_json::to_string_pretty(&json).expect("a JSON value serialises") + "\n";
        let yaml_text = super::yaml::to_yaml(&json);
        let json31_text = rendition_text(&json);
        let paths = path_entries(&json);
        Self { version, json, json_text, yaml_text, json31_text, paths }
    }

    /// The document as a deployment serves it: `servers` names `url`, the public base URL the
    /// operator configured (`GOVDATA_PUBLIC_URL`). The committed documents have no `servers`, so
    /// they name no host and a client resolves paths against wherever it read the document.
    pub fn served_at(mut self, url: &str) -> Self {
        self.json["servers"] = json!([{ "url": url, "description": "This deployment." }]);
        self.json_text = serde_json::to_string_pretty(&self.json).expect("a JSON value serialises") + "\n";
        self.yaml_text = super::yaml::to_yaml(&self.json);
        self.json31_text = rendition_text(&self.json);
        self
    }

    /// The template a request path (with the surface prefix) matches, and the operationId of
    /// `method` on it when served: what the edge finds once per request.
    pub fn route(&self, path: &str, method: &str) -> Option<(std::sync::Arc<str>, Option<&str>)> {
        let entry = self.entry(path)?;
        let operation_id =
            entry.operations.iter().find(|(m, _)| m.eq_ignore_ascii_case(method)).map(|(_, id)| id.as_str());
        Some((entry.template.clone(), operation_id))
    }

    /// The entry whose template `path` matches. Literal segments win over parameters, as in the
    /// router.
    fn entry(&self, path: &str) -> Option<&PathEntry> {
        let path = path.trim_end_matches('/');
        let n = path.split('/').count();
        self.paths
            .iter()
            .filter(|e| {
                e.segments.len() == n
                    && e.segments.iter().zip(path.split('/')).all(|(s, p)| match s {
                        Segment::Literal(l) => l == p,
                        Segment::Param(_) => !p.is_empty(),
                    })
            })
            .max_by_key(|e| e.segments.iter().filter(|s| matches!(s, Segment::Literal(_))).count())
    }

    /// Matches a request path (with the surface prefix) against the document's templates.
    pub fn match_path(&self, path: &str, method: &str) -> Option<PathMatch<'_>> {
        let entry = self.entry(path)?;
        let method = method.to_ascii_lowercase();
        Some(PathMatch {
            template: &entry.template,
            params: entry
                .segments
                .iter()
                .filter_map(|s| match s {
                    Segment::Param(n) => Some(n.as_str()),
                    Segment::Literal(_) => None,
                })
                .collect(),
            methods: entry.operations.iter().map(|(m, _)| m.to_ascii_uppercase()).collect(),
            operation_id: entry.operations.iter().find(|(m, _)| *m == method).map(|(_, id)| id.as_str()),
        })
    }

    /// What the document accepts for parameter `name` of an operation, in words, for the
    /// `expected` member of a VALIDATION_ERROR (so the bound is read from the declaration).
    pub fn param_expectation(&self, template: &str, method: &str, name: &str) -> Option<String> {
        let params = self.json["paths"][template][method.to_ascii_lowercase()]["parameters"].as_array()?;
        let schema = &params.iter().find(|p| p["name"] == name)?["schema"];
        let resolve = |schema: &'_ Value| -> Option<Value> {
            Some(match schema["$ref"].as_str() {
                Some(r) => self.json["components"]["schemas"][r.rsplit('/').next()?].clone(),
                None => schema.clone(),
            })
        };
        let schema = &resolve(schema)?;
        // A list sent comma-separated (`explode: false`): what each member may be.
        if schema["type"] == "array" {
            let items = resolve(&schema["items"])?;
            let values: Vec<&str> = items["enum"].as_array()?.iter().filter_map(Value::as_str).collect();
            return Some(format!("a comma-separated list of: {}", values.join(", ")));
        }
        if let Some(values) = schema["enum"].as_array() {
            let values: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
            return Some(format!("one of: {}", values.join(", ")));
        }
        let ty = schema["type"].as_str().unwrap_or("string");
        Some(match (ty, schema["format"].as_str(), schema["minimum"].as_f64(), schema["maximum"].as_f64()) {
            ("integer", _, Some(min), Some(max)) => format!("an integer from {min} to {max}"),
            ("integer", _, Some(min), None) => format!("an integer of at least {min}"),
            ("integer", ..) => "an integer".to_owned(),
            ("string", Some("date-time"), ..) => "an RFC 3339 timestamp".to_owned(),
            (ty, ..) => match schema["pattern"].as_str() {
                Some(p) => format!("a {ty} matching `{p}`"),
                None => format!("a {ty}"),
            },
        })
    }

    /// Where parameter `name` of the operation is sent (`in`): query, path or header.
    pub fn param_location(&self, template: &str, method: &str, name: &str) -> Option<ParamLocation> {
        let params = self.json["paths"][template][method.to_ascii_lowercase()]["parameters"].as_array()?;
        match params.iter().find(|p| p["name"] == name)?["in"].as_str()? {
            "query" => Some(ParamLocation::Query),
            "path" => Some(ParamLocation::Path),
            "header" => Some(ParamLocation::Header),
            _ => None,
        }
    }

    /// An operation's summary (what an x402 payment for it buys).
    pub fn summary(&self, template: &str, method: &str) -> Option<&str> {
        self.json["paths"][template][method.to_ascii_lowercase()]["summary"].as_str()
    }

    /// Every (method, path, operationId) of the document, in document order.
    pub fn operations(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.paths.iter().flat_map(|e| e.operations.iter().map(move |(m, id)| (m.as_str(), &*e.template, id.as_str())))
    }
}

fn rendition_text(doc: &Value) -> String {
    serde_json::to_string_pretty(&super::openapi31::rendition(doc)).expect("a JSON value serialises") + "\n"
}

fn path_entries(doc: &Value) -> Vec<PathEntry> {
    let Some(paths) = doc["paths"].as_object() else { return Vec::new() };
    paths
        .iter()
        .map(|(template, item)| PathEntry {
            template: template.as_str().into(),
            segments: template
                .trim_end_matches('/')
                .split('/')
                .map(|s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    Some(name) => Segment::Param(name.to_owned()),
                    None => Segment::Literal(s.to_owned()),
                })
                .collect(),
            operations: item
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(m, op)| Some((m.clone(), op["operationId"].as_str()?.to_owned())))
                .collect(),
        })
        .collect()
}

/// Placeholders that doc comments may use for declared values, so a limit written in prose is
/// still read from its declaration: `{{EVENTS_MAX}}` in a description becomes `200`.
fn placeholders() -> Vec<(&'static str, String)> {
    use super::limits::{self, lookup};
    let percent = |share: &str| {
        crate::contract::decimal::parse(share)
            .map(|d| crate::contract::decimal::plain(&(d * bigdecimal::BigDecimal::from(100))))
            .unwrap_or_else(|_| share.to_owned())
    };
    vec![
        ("{{MOST_LISTS_MAX}}", limits::MOST_LISTS.max.to_string()),
        ("{{EVENTS_MAX}}", limits::EVENTS.max.to_string()),
        ("{{PROPOSAL_VOTES_MAX}}", limits::PROPOSAL_VOTES.max.to_string()),
        ("{{PROPOSAL_ACTIONS_MAX}}", limits::PROPOSAL_ACTIONS.max.to_string()),
        ("{{PROPOSAL_ACTIONS_DEFAULT}}", limits::PROPOSAL_ACTIONS.default.to_string()),
        ("{{PROPOSAL_DETAIL_ACTIONS}}", limits::PROPOSAL_DETAIL_ACTIONS.to_string()),
        ("{{ACTION_NESTING_DEPTH}}", limits::ACTION_NESTING_DEPTH.to_string()),
        ("{{DEFAULT_PAGE_SIZE}}", limits::DEFAULT_PAGE_SIZE.to_string()),
        ("{{EVENTS_AND_SIGNALS_WINDOW_DAYS}}", limits::EVENTS_AND_SIGNALS_WINDOW.max_days.to_string()),
        ("{{PROPOSALS_AND_HISTORY_WINDOW_DAYS}}", limits::PROPOSALS_AND_HISTORY_WINDOW.max_days.to_string()),
        ("{{FEED_RETENTION_DAYS}}", super::feed::FEED_RETENTION.max_days.to_string()),
        (
            "{{VOTING_ENDS_SOON_HORIZONS}}",
            super::feed::VOTING_ENDS_SOON_HORIZONS
                .iter()
                .map(|h| super::feed::horizon_text(*h))
                .collect::<Vec<_>>()
                .join(" or "),
        ),
        ("{{NOTABLE_VOTE_PERCENT}}", percent(super::events::NOTABLE_VOTE_MIN_SHARE)),
        ("{{NOTABLE_DELEGATION_PERCENT}}", percent(super::events::NOTABLE_DELEGATION_MIN_SHARE)),
        ("{{EVIDENCE_EVENTS}}", lookup::EVIDENCE_EVENTS.to_string()),
        ("{{EXCERPT_CHARS}}", lookup::EXCERPT_CHARS.to_string()),
        ("{{TITLE_MAX_WORDS}}", lookup::TITLE_MAX_WORDS.to_string()),
        ("{{EVIDENCE_LARGEST_VOTES_WORD}}", spelled(lookup::EVIDENCE_LARGEST_VOTES)),
        ("{{LOOKUP_ALTERNATIVES_WORD}}", spelled(lookup::ALTERNATIVES)),
        ("{{LOOKUP_CONFIDENCE_FLOOR}}", lookup::CONFIDENCE_FLOOR.to_owned()),
        ("{{LOOKUP_TITLE_MARGIN}}", lookup::TITLE_MARGIN.to_owned()),
        ("{{LOOKUP_CLOSEST_CANDIDATES_WORD}}", spelled(lookup::CLOSEST_CANDIDATES)),
        ("{{LOOKUP_TYPO_EDITS}}", typo_edits()),
        ("{{SHARE_DECIMALS}}", super::decimal::SHARE_DECIMALS.to_string()),
        ("{{VOTING_TYPES}}", super::voting::voting_types_text()),
        ("{{NOTABLE_DELEGATION_SHARE}}", super::events::NOTABLE_DELEGATION_MIN_SHARE.to_owned()),
        ("{{EXPORT_BUILD_WAIT_SECONDS}}", super::exports::BUILD_WAIT_SECONDS.to_string()),
        ("{{EXPORT_GRANT_SECONDS}}", super::exports::GRANT_SECONDS.to_string()),
        ("{{EXPORT_GRANT_HEADER}}", super::exports::GRANT_HEADER.to_owned()),
        ("{{EXPORT_BUDGET_MB}}", super::exports::DEFAULT_BUDGET_MB.to_string()),
        ("{{DELEGATION_SHIFT_HOURS}}", (super::events::DELEGATION_SHIFT_WINDOW_MS / 3_600_000).to_string()),
        ("{{DELEGATION_SHIFT_CITED}}", super::events::DELEGATION_SHIFT_CITED.to_string()),
        ("{{SIMULATION_REDO_BLOCKS}}", limits::SIMULATION_REDO_BLOCKS.to_string()),
        ("{{SIMULATION_STATE_READS}}", limits::SIMULATION_STATE_READS.to_string()),
        ("{{SIMULATION_TIMEOUT_SECS}}", limits::SIMULATION_TIMEOUT_SECS.to_string()),
        ("{{VOTING_POWER_FROM_FLOAT}}", super::decimal::FROM_FLOAT_TEXT.to_owned()),
        ("{{WEBHOOK_RETRY_SCHEDULE}}", super::webhooks::schedule_text()),
        ("{{WEBHOOK_DISABLE_DAYS}}", (super::webhooks::DISABLE_AFTER_FAILING.as_secs() / 86_400).to_string()),
        ("{{WEBHOOK_THIN_BYTES}}", super::webhooks::THIN_PAYLOAD_BYTES.to_string()),
        ("{{WEBHOOK_MAX_PER_TOKEN}}", super::webhooks::MAX_SUBSCRIPTIONS_PER_TOKEN.to_string()),
        ("{{WEBHOOK_MAX_PROPOSAL_KEYS}}", super::webhooks::MAX_PROPOSAL_KEYS.to_string()),
        ("{{WEBHOOK_MAX_VOTERS}}", super::webhooks::MAX_VOTERS.to_string()),
        ("{{WEBHOOK_ROTATION_HOURS}}", (super::webhooks::ROTATION_OVERLAP.as_secs() / 3_600).to_string()),
        ("{{WEBHOOK_CONCURRENCY}}", super::webhooks::ENDPOINT_CONCURRENCY.to_string()),
        ("{{WEBHOOK_TIMEOUT_SECONDS}}", super::webhooks::ATTEMPT_TIMEOUT.as_secs().to_string()),
    ]
}

/// The typo allowance of title lookup in words: `up to one edit in a word of four or more
/// characters, two in one of eight or more`.
fn typo_edits() -> String {
    let mut rules: Vec<(usize, usize)> = super::limits::lookup::TYPO_EDITS.to_vec();
    rules.sort();
    rules
        .iter()
        .enumerate()
        .map(|(i, (min, edits))| match i {
            0 => {
                let unit = if *edits == 1 { "edit" } else { "edits" };
                format!("up to {} {unit} in a word of {} or more characters", spelled(*edits), spelled(*min))
            }
            _ => format!("{} in one of {} or more", spelled(*edits), spelled(*min)),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A small count as prose writes it (`ten largest votes`); digits beyond twelve.
fn spelled(n: usize) -> String {
    const WORDS: [&str; 13] =
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"];
    WORDS.get(n).map_or_else(|| n.to_string(), |w| (*w).to_owned())
}

/// Fills the placeholders in every string of the document.
fn fill_placeholders(value: &mut Value, table: &[(&'static str, String)]) {
    match value {
        Value::String(s) if s.contains("{{") => {
            for (k, v) in table {
                *s = s.replace(k, v);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|v| fill_placeholders(v, table)),
        Value::Object(o) => o.values_mut().for_each(|v| fill_placeholders(v, table)),
        _ => {}
    }
}

fn finish(version: Version, doc: &mut Value, prices: Prices) {
    collapse_described_refs(doc);
    if version == Version::V2 {
        open_vocabularies(doc);
    }
    fill_placeholders(doc, &placeholders());
    assert!(!doc.to_string().contains("{{"), "an unknown placeholder in a {version:?} description");
    doc["info"]["description"] = Value::String(info_description(version));
    if version == Version::V2 {
        constrain_v2_parameters(doc);
        constrain_v2_bodies(doc);
    }
    split_body_problems(doc);
    let mut any_paid = false;
    if let Some(paths) = doc["paths"].as_object_mut() {
        for item in paths.values_mut() {
            for op in item.as_object_mut().into_iter().flat_map(|m| m.values_mut()) {
                let id = op["operationId"].as_str().unwrap_or_default().to_owned();
                let decl = operations::find(version, &id)
                    .unwrap_or_else(|| panic!("operation `{id}` of {version:?} is missing from contract::operations"));
                let access = access_extension(version, decl, prices);
                let sentence = access_sentence(version, decl, prices);
                let description = op["description"].as_str().map(str::to_owned);
                op["description"] = Value::String(match description {
                    Some(d) => format!("{d}\n\n{sentence}"),
                    None => sentence,
                });
                op["x-govdata-access"] = access;
                tidy_success_responses(op);
                document_error_notes(decl, op);
                if let Access::Partner(_) = decl.access {
                    op["security"] = json!([{ PARTNER_TOKEN_SCHEME: [] }]);
                }
                if let Access::Paid(_) = decl.access {
                    any_paid = true;
                    // Alternatives: a partner token, or an x402 payment of either generation.
                    op["security"] = json!([
                        { PARTNER_TOKEN_SCHEME: [] },
                        { X402_SCHEME_V2: [] },
                        { X402_SCHEME_V1: [] },
                    ]);
                    document_payment_headers(op);
                }
                declare_request_id(op);
            }
        }
    }
    if any_paid {
        let components = doc["components"].as_object_mut().map(std::mem::take).unwrap_or_default();
        let mut components: Map<String, Value> = components;
        components.insert(
            "securitySchemes".to_owned(),
            json!({
                X402_SCHEME_V2: {
                    "type": "apiKey",
                    "in": "header",
                    "name": Generation::V2.request_header(),
                    "description": "An x402 v2 payment: base64 of the JSON payment payload, signed for one of the \
                        requirements that a 402 response lists in its `PAYMENT-REQUIRED` header (scheme `exact`, an \
                        EIP-3009 authorization). Each payment pays for one request; the response carries \
                        `PAYMENT-RESPONSE`. See https://x402.org.",
                },
                X402_SCHEME_V1: {
                    "type": "apiKey",
                    "in": "header",
                    "name": Generation::V1.request_header(),
                    "description": "An x402 v1 payment: base64 of the JSON payment payload, signed for one of the \
                        requirements that a 402 response lists in its body's `accepts`. Each payment pays for one \
                        request; the response carries `X-PAYMENT-RESPONSE`.",
                },
                PARTNER_TOKEN_SCHEME: {
                    "type": "apiKey",
                    "in": "header",
                    "name": PARTNER_TOKEN_HEADER,
                    "description": format!(
                        "Partner token issued by the operator. Scopes: {}. A tier's scope grants that tier and the tiers \
                         below it (`plus` includes `standard`); `*` grants every tier of its version. Without a token, a \
                         paid endpoint answers 402 with an x402 payment challenge instead.",
                        Scope::ALL.iter().map(|s| format!("`{}`", s.as_str())).collect::<Vec<_>>().join(", ")
                    ),
                }
            }),
        );
        doc["components"] = Value::Object(components);
    }
    standard_integer_formats(doc);
    declare_method_not_allowed(doc);
    debug_assert!(!doc.to_string().contains(INTERNAL_TOKEN_HEADER), "the internal token header is never published");
}

/// Every response carries `x-request-id` (the edge middleware sets it on all of them, errors
/// included); SDKs read it to quote a request when reporting a problem.
fn declare_request_id(op: &mut Value) {
    let Some(responses) = op["responses"].as_object_mut() else { return };
    for response in responses.values_mut() {
        if !response["headers"].is_object() {
            response["headers"] = json!({});
        }
        response["headers"][REQUEST_ID_HEADER] = request_id_header();
    }
}

fn request_id_header() -> Value {
    json!({
        "description": "The request's id: echoed from the request's own `x-request-id` when that is at most 128 \
            printable ASCII characters, generated otherwise. Problem bodies repeat it as `requestId`.",
        "schema": { "type": "string" },
    })
}

/// A method a path does not serve answers 405 `METHOD_NOT_ALLOWED` with an `Allow` header. An
/// operation lists only the answers of its own method, so the 405 is declared once, as a
/// reusable response, and the description of each document says when it is sent.
fn declare_method_not_allowed(doc: &mut Value) {
    if !doc["components"].is_object() {
        doc["components"] = json!({});
    }
    if !doc["components"]["responses"].is_object() {
        doc["components"]["responses"] = json!({});
    }
    doc["components"]["responses"]["MethodNotAllowed"] = json!({
        "description": "405: the path exists but does not serve the request's method. `Allow` lists the methods \
            it serves; the body is a problem document with code `METHOD_NOT_ALLOWED`.",
        "headers": {
            "Allow": {
                "description": "The methods the path serves, comma-separated (`GET`).",
                "schema": { "type": "string" },
            },
            REQUEST_ID_HEADER: request_id_header(),
        },
        "content": { (super::errors::PROBLEM_CONTENT_TYPE): { "schema": { "$ref": "#/components/schemas/Problem" } } },
    });
}

/// poem-openapi names Rust's unsigned integers `uint8`…`uint64`, which no OpenAPI format
/// registry knows: generators fall back to a guess. Each becomes the standard `int32`/`int64`
/// wide enough for it, with the bounds the Rust type holds the value to.
fn standard_integer_formats(value: &mut Value) {
    match value {
        Value::Object(o) => {
            if o.get("type").and_then(Value::as_str) == Some("integer") {
                let bounds: Option<(&str, Option<u64>)> = match o.get("format").and_then(Value::as_str) {
                    Some("uint8") => Some(("int32", Some(u64::from(u8::MAX)))),
                    Some("uint16") => Some(("int32", Some(u64::from(u16::MAX)))),
                    Some("uint32") => Some(("int64", Some(u64::from(u32::MAX)))),
                    Some("uint64") => Some(("int64", None)),
                    _ => None,
                };
                if let Some((format, max)) = bounds {
                    o.insert("format".to_owned(), json!(format));
                    o.entry("minimum").or_insert(json!(0));
                    if let Some(max) = max {
                        o.entry("maximum").or_insert(json!(max));
                    }
                }
            }
            o.values_mut().for_each(standard_integer_formats);
        }
        Value::Array(a) => a.iter_mut().for_each(standard_integer_formats),
        _ => {}
    }
}

/// An error response an operation declares a note on shows the note's example body.
fn document_error_notes(decl: &operations::OperationDecl, op: &mut Value) {
    for note in decl.notes {
        let status = note.code.status().to_string();
        let media = op
            .get_mut("responses")
            .and_then(|r| r.get_mut(status.as_str()))
            .and_then(|r| r.get_mut("content"))
            .and_then(|c| c.get_mut(super::errors::PROBLEM_CONTENT_TYPE));
        if let (Some(Value::Object(media)), Ok(example)) = (media, serde_json::to_value((note.example)())) {
            media.insert("example".to_owned(), example);
        }
    }
}

/// A paid operation's 402 carries the v2 challenge in a header, and its success response the
/// settlement receipt of the generation the client paid with.
fn document_payment_headers(op: &mut Value) {
    let string = json!({ "type": "string", "format": "byte" });
    if let Some(payment_required) = op["responses"].get_mut("402") {
        payment_required["headers"] = json!({
            PAYMENT_REQUIRED_HEADER: {
                "description": "The x402 v2 challenge: base64 of `{x402Version: 2, error, resource, accepts, extensions}`; \
                    `extensions.bazaar` describes the operation (an example input and output, and their JSON \
                    Schema) for x402 discovery.",
                "schema": string,
            }
        });
    }
    let Some(responses) = op["responses"].as_object_mut() else { return };
    for (_, response) in responses.iter_mut().filter(|(status, _)| status.starts_with('2')) {
        response["headers"] = json!({
            (Generation::V2.response_header()): {
                "description": "When paid with x402 v2: base64 of the settlement `{success, transaction, network, payer}`.",
                "schema": string,
            },
            (Generation::V1.response_header()): {
                "description": "When paid with x402 v1: base64 of the settlement `{success, transaction, network, payer}`.",
                "schema": string,
            },
        });
    }
}

/// poem-openapi leaves success descriptions empty and keys JSON bodies by
/// `application/json; charset=utf-8`; SDK generators match on `application/json` exactly.
/// The shapes of v2's opaque strings, declared beside the checks that enforce them, so SDKs
/// and property-based tests only send what can be valid. (v1 stays as released: a new pattern
/// on its parameters would be a breaking change for the guard in `codegen`.)
fn constrain_v2_parameters(doc: &mut Value) {
    use super::{cursor, ids};
    let voter = || json!({ "pattern": ids::VOTER_IDENTITY_PATTERN });
    let rules: Vec<(&str, Value)> = vec![
        (
            cursor::CURSOR_PARAM,
            json!({ "minLength": 1, "maxLength": cursor::MAX_CURSOR_BYTES, "pattern": cursor::CURSOR_PATTERN }),
        ),
        ("proposalKey", json!({ "pattern": ids::key_pattern(KeyKind::Proposal) })),
        ("topicKey", json!({ "pattern": ids::key_pattern(KeyKind::Topic) })),
        ("voterIdentity", voter()),
        ("voter", voter()),
        ("file", json!({ "pattern": super::exports::ExportFile::pattern() })),
    ];
    let Some(paths) = doc["paths"].as_object_mut() else { return };
    for op in paths.values_mut().filter_map(Value::as_object_mut).flat_map(|m| m.values_mut()) {
        for param in op.get_mut("parameters").and_then(Value::as_array_mut).into_iter().flatten() {
            let name = param["name"].as_str().unwrap_or_default().to_owned();
            if let Some((_, extra)) = rules.iter().find(|(n, _)| *n == name)
                && let (Some(schema), Some(extra)) = (param["schema"].as_object_mut(), extra.as_object())
            {
                schema.extend(extra.clone());
            }
        }
    }
}

/// The limits of the request bodies, declared in `contract::webhooks` and enforced member by
/// member (`contract::body`), published on the bodies' schemas; a body takes no member it does
/// not declare.
fn constrain_v2_bodies(doc: &mut Value) {
    use super::webhooks::{
        MAX_DAO_IDS, MAX_DESCRIPTION_CHARS, MAX_PROPOSAL_KEYS, MAX_URL_BYTES, MAX_VOTER_CHARS, MAX_VOTERS,
    };
    let members = |url_and_filters: bool| {
        if url_and_filters {
            let strings = |pattern: String| json!({ "type": "string", "pattern": pattern });
            vec![
                ("url", json!({ "maxLength": MAX_URL_BYTES, "format": "uri" })),
                ("daoIds", json!({ "maxItems": MAX_DAO_IDS, "uniqueItems": true })),
                ("kinds", json!({ "maxItems": super::feed::FeedKind::ALL.len(), "uniqueItems": true })),
                (
                    "proposalKeys",
                    json!({
                        "maxItems": MAX_PROPOSAL_KEYS,
                        "uniqueItems": true,
                        "items": strings(super::ids::key_pattern(KeyKind::Proposal)),
                    }),
                ),
                (
                    "voters",
                    json!({
                        "maxItems": MAX_VOTERS,
                        "uniqueItems": true,
                        "items": {
                            "type": "string",
                            "pattern": super::ids::VOTER_IDENTITY_PATTERN,
                            "maxLength": MAX_VOTER_CHARS,
                        },
                    }),
                ),
                ("description", json!({ "maxLength": MAX_DESCRIPTION_CHARS })),
            ]
        } else {
            vec![("after", json!({ "pattern": super::feed::SEQUENCE_PATTERN }))]
        }
    };
    if let Some(note) = doc["components"]["schemas"]["WebhookUpdate"]["properties"].get_mut("description") {
        // `null` removes the note.
        note["nullable"] = Value::Bool(true);
    }
    for (name, url_and_filters) in [("WebhookCreate", true), ("WebhookUpdate", true), ("WebhookReplay", false)] {
        let Some(schema) = doc["components"]["schemas"].get_mut(name).and_then(Value::as_object_mut) else { continue };
        schema.insert("additionalProperties".to_owned(), Value::Bool(false));
        for (member, extra) in members(url_and_filters) {
            if let (Some(property), Some(extra)) = (
                schema.get_mut("properties").and_then(|p| p.get_mut(member)).and_then(Value::as_object_mut),
                extra.as_object(),
            ) {
                property.extend(extra.clone());
            }
        }
    }
}

/// The vocabularies v2 publishes open (issue 48): the feed's kinds and the event and activity
/// kinds it mirrors grow with the product, and a new value of a closed response enum breaks
/// strict generated clients. Each becomes a string whose known values are listed
/// (`x-extensible-enum`, the convention of Zalando's API guidelines that SDK generators read as a
/// plain string) and described, with the rule a client follows for a value it does not know.
///
/// What a client sends stays closed: a filter names only the values this release knows, and the
/// server refuses any other with a problem naming it. So parameters and request bodies refer to a
/// closed copy, `<Name>Filter`, and only what the server answers refers to the open list.
fn open_vocabularies(doc: &mut Value) {
    use poem_openapi::types::Type;
    let open: [(String, Vec<(&'static str, String)>); 3] = [
        (super::feed::FeedKind::name().into_owned(), super::feed::FeedKind::described()),
        (super::events::EventKind::name().into_owned(), super::events::EventKind::described()),
        (super::events::ActivityKind::name().into_owned(), super::events::ActivityKind::described()),
    ];
    let request_components = request_body_components(doc);
    for (name, described) in open {
        let filter = format!("{name}Filter");
        let Some(closed) = doc["components"]["schemas"].get(&name).cloned() else { continue };
        let what = closed["description"].as_str().unwrap_or_default().to_owned();
        let mut filter_schema = closed.clone();
        filter_schema["description"] = Value::String(format!(
            "{what}\n\nA value a request may name: the values this release knows (`{name}` lists what each \
             means). Any other value is refused with a problem naming it."
        ));
        let known: Vec<&str> = described.iter().map(|(value, _)| *value).collect();
        let listed: Vec<String> = described
            .iter()
            .map(
                |(value, meaning)| {
                    if meaning.is_empty() { format!("- `{value}`") } else { format!("- `{value}`: {meaning}") }
                },
            )
            .collect();
        doc["components"]["schemas"][&name] = json!({
            "type": "string",
            "description": format!(
                "{what}\n\n{OPEN_LIST_RULE}\n\nKnown values:\n{}",
                listed.join("\n")
            ),
            "x-extensible-enum": known,
        });
        doc["components"]["schemas"][&filter] = filter_schema;
        let (from, to) = (format!("#/components/schemas/{name}"), format!("#/components/schemas/{filter}"));
        if let Some(paths) = doc["paths"].as_object_mut() {
            for op in paths.values_mut().flat_map(|item| item.as_object_mut().into_iter().flat_map(|m| m.values_mut()))
            {
                if let Some(parameters) = op.get_mut("parameters") {
                    retarget(parameters, &from, &to);
                }
            }
        }
        for component in &request_components {
            if let Some(schema) = doc["components"]["schemas"].get_mut(component) {
                retarget(schema, &from, &to);
            }
        }
    }
}

/// The rule an open vocabulary states, in the documents, the CHANGELOG and llms.txt alike.
pub const OPEN_LIST_RULE: &str = "An open list: a later release may add values without notice (never remove one). A \
     client must accept a value it does not know, and ignore the entry it belongs to (or show the value as it \
     is); it must not fail.";

/// The components a request body reaches (through `$ref`s, at any depth): the schemas only
/// requests carry.
fn request_body_components(doc: &Value) -> Vec<String> {
    fn refs(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(members) => {
                if let Some(name) =
                    members.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/components/schemas/"))
                {
                    out.push(name.to_owned());
                }
                members.values().for_each(|v| refs(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    for op in doc["paths"]
        .as_object()
        .into_iter()
        .flat_map(|p| p.values())
        .filter_map(Value::as_object)
        .flat_map(|m| m.values())
    {
        refs(&op["requestBody"], &mut found);
    }
    let mut i = 0;
    while i < found.len() {
        let mut more = Vec::new();
        refs(&doc["components"]["schemas"][&found[i]], &mut more);
        for name in more {
            if !found.contains(&name) {
                found.push(name);
            }
        }
        i += 1;
    }
    found
}

/// Every `$ref` to `from` under `value` points to `to` instead.
fn retarget(value: &mut Value, from: &str, to: &str) {
    match value {
        Value::Object(members) => {
            if members.get("$ref").and_then(Value::as_str) == Some(from) {
                members.insert("$ref".to_owned(), Value::String(to.to_owned()));
            }
            members.values_mut().for_each(|v| retarget(v, from, to));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| retarget(v, from, to)),
        _ => {}
    }
}

/// The problems of an operation that takes a request body may name a member of it (`in: body`);
/// no other operation's can. So `Problem` keeps the locations of parameters only (what the
/// released documents promise every client of the operations without a body), and the
/// operations with a body answer their errors with `BodyProblem`: the same members, whose
/// `errors[].in` may also be `body` (`BodyFieldError`, `BodyParamLocation`).
fn split_body_problems(doc: &mut Value) {
    let Some(schemas) = doc["components"]["schemas"].as_object_mut() else { return };
    let Some(location) = schemas.get_mut("ParamLocation") else { return };
    let with_body = location.clone();
    if let Some(values) = location["enum"].as_array_mut() {
        values.retain(|v| v != "body");
    }
    let mut bodies = false;
    for item in doc["paths"].as_object_mut().into_iter().flat_map(|p| p.values_mut()) {
        for op in item.as_object_mut().into_iter().flat_map(|m| m.values_mut()) {
            if op.get("requestBody").is_none() {
                continue;
            }
            bodies = true;
            let responses = op.get_mut("responses").and_then(Value::as_object_mut);
            for (status, response) in responses.into_iter().flatten() {
                if status.starts_with('4') || status.starts_with('5') {
                    for media in response.get_mut("content").and_then(Value::as_object_mut).into_iter().flatten() {
                        media.1["schema"] = json!({ "$ref": "#/components/schemas/BodyProblem" });
                    }
                }
            }
        }
    }
    if !bodies {
        return;
    }
    let schemas = doc["components"]["schemas"].as_object_mut().expect("read above");
    let mut location = with_body;
    location["title"] = json!("BodyParamLocation");
    location["description"] = json!("Where the invalid input was found: a parameter, or a member of the request body.");
    let mut field = schemas["FieldError"].clone();
    field["title"] = json!("BodyFieldError");
    field["properties"]["in"] = json!({ "$ref": "#/components/schemas/BodyParamLocation" });
    field["properties"]["name"]["description"] =
        json!("The parameter's public name, or the body member's (`daoIds[2]` for an element of an array).");
    let mut problem = schemas["Problem"].clone();
    problem["title"] = json!("BodyProblem");
    problem["description"] = json!(
        "RFC 9457 problem details, as `Problem`, of an operation that takes a request body: an entry of \
         `errors` may name a member of the body (`in: body`)."
    );
    problem["properties"]["errors"]["items"] = json!({ "$ref": "#/components/schemas/BodyFieldError" });
    problem["example"] = serde_json::to_value(super::body::example_problem()).expect("a problem serialises");
    schemas.insert("BodyParamLocation".to_owned(), location);
    schemas.insert("BodyFieldError".to_owned(), field);
    schemas.insert("BodyProblem".to_owned(), problem);
}

/// poem-openapi writes a documented member of a named type as
/// `{"allOf": [{"$ref": X}, {"description": D}], "description": D}`. SDK generators choke on it
/// (openapi-python-client drops every model that holds one: "Cannot take allOf a non-object" for
/// an enum, a duplicate model for an object), and Optic reads an enum behind it as `{}`.
/// OpenAPI 3.0 ignores siblings of `$ref`, so the member becomes the bare reference; the named
/// type carries its own description.
fn collapse_described_refs(value: &mut Value) {
    match value {
        Value::Object(members) => {
            let annotation_only = |v: &Value| v.as_object().is_some_and(|o| o.keys().all(|k| k == "description"));
            let reference = members
                .get("allOf")
                .and_then(Value::as_array)
                .filter(|_| members.keys().all(|k| k == "allOf" || k == "description"))
                .and_then(|parts| {
                    let refs: Vec<&Value> = parts.iter().filter(|p| !annotation_only(p)).collect();
                    match refs.as_slice() {
                        [only] if only.as_object().is_some_and(|o| o.len() == 1 && o.contains_key("$ref")) => {
                            Some((*only).clone())
                        }
                        _ => None,
                    }
                });
            match reference {
                Some(reference) => *value = reference,
                None => members.values_mut().for_each(collapse_described_refs),
            }
        }
        Value::Array(items) => items.iter_mut().for_each(collapse_described_refs),
        _ => {}
    }
}

fn tidy_success_responses(op: &mut Value) {
    let summary = op["summary"].as_str().unwrap_or("Success").to_owned();
    let Some(responses) = op["responses"].as_object_mut() else { return };
    for (status, response) in responses.iter_mut().filter(|(s, _)| s.starts_with('2')) {
        if response["description"].as_str().is_none_or(str::is_empty) {
            response["description"] = Value::String(format!("{status}: {summary}."));
        }
        if let Some(content) = response.get_mut("content").and_then(Value::as_object_mut)
            && let Some(body) = content.remove("application/json; charset=utf-8")
        {
            content.insert("application/json".to_owned(), body);
        }
    }
}

fn info_description(version: Version) -> String {
    let surface = match version {
        Version::V1 => {
            "The stable v1 surface. Every response is `{request, freshness, data}`: `request` echoes the parameters \
             as received, the values applied and every adjustment made (v1 clamps out-of-range values instead of \
             rejecting them); `freshness` says when the data was ingested and how the response was served. Lists \
             carry legacy `limit`/`offset` pagination with `total`."
        }
        Version::V2 => {
            "The additive v2 surface. Lists are `{data: {items}, meta: {page, freshness}}` with opaque keyset cursors \
             and no totals; single resources are `{data, meta}`. Out-of-range values are rejected with \
             `VALIDATION_ERROR`.\n\nA cursor is bound to the data it pages. A cursor over one DAO's data (a list \
             filtered by `daoId`, a DAO's voters, a proposal's votes) stays valid until a data publication changes \
             that DAO; a cursor over every DAO, until any publication changes anything. An ingestion run that \
             changes nothing publishes nothing and leaves every cursor valid. A cursor that is no longer valid is \
             refused with `INVALID_CURSOR`: restart from the first page."
        }
    };
    format!(
        "Read-only DAO governance data for software agents: DAOs, proposals, votes, voters, forum topics, \
         governance events and curated signals, with explicit freshness.\n\n{surface}\n\nErrors are RFC 9457 \
         problem documents (`application/problem+json`) with a stable `code`; a method a path does not serve \
         answers 405 `METHOD_NOT_ALLOWED` with `Allow` (`components.responses.MethodNotAllowed`). Every response, \
         errors included, carries `x-request-id`. Voting power, amounts, scores, counts and rates are exact decimal \
         strings. {from_float} Timestamps are RFC 3339 UTC with milliseconds. Paid endpoints accept a partner token \
         (`{PARTNER_TOKEN_HEADER}`) or an x402 payment; prices are listed by `GET /v1/meta/pricing`.",
        from_float = super::decimal::FROM_FLOAT_SUMMARY,
    )
}

fn access_extension(version: Version, decl: &operations::OperationDecl, prices: Prices) -> Value {
    match decl.access {
        Access::Free => json!({ "tier": "free" }),
        Access::Paid(tier) => {
            let mut access = json!({
                "tier": tier.as_str(),
                "price": prices.of(tier).to_string(),
                "priceUnit": "atomic units of the x402 asset listed by GET /v1/meta/pricing",
                "scopes": Scope::accepted(version, tier).iter().map(|s| s.as_str()).collect::<Vec<_>>(),
            });
            if decl.streams {
                access["paidSeconds"] = json!(prices.stream_seconds);
            }
            if decl.downloads {
                access["grantSeconds"] = json!(super::exports::GRANT_SECONDS);
            }
            access
        }
        Access::Partner(tier) => json!({
            "tier": "partner",
            "scopes": Scope::accepted(version, tier).iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        }),
    }
}

fn access_sentence(version: Version, decl: &operations::OperationDecl, prices: Prices) -> String {
    match decl.access {
        Access::Free => "Access: free; no credentials needed.".to_owned(),
        Access::Paid(tier) => {
            let buys = if decl.streams {
                format!(
                    "{} (the stream then ends with `stream_ended`, reason `payment_expired`: pay again and resume \
                     with `Last-Event-ID`)",
                    prices.per_stream_payment()
                )
            } else if decl.downloads {
                format!(
                    "per file (the answer's `{}` header then opens the same file's range requests and resumed \
                     downloads for {} s without paying again: send it back as a request header)",
                    super::exports::GRANT_HEADER,
                    super::exports::GRANT_SECONDS
                )
            } else {
                "per call".to_owned()
            };
            format!(
                "Access: paid, tier `{}`. Pay {} atomic units of the x402 asset {buys}, or send a partner token in \
                 `{PARTNER_TOKEN_HEADER}` with one of the scopes {}.",
                tier.as_str(),
                prices.of(tier),
                Scope::accepted(version, tier)
                    .iter()
                    .map(|s| format!("`{}`", s.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
        Access::Partner(tier) => format!(
            "Access: a partner token only, in `{PARTNER_TOKEN_HEADER}`, with one of the scopes {} (no x402 payment: \
             what this manages belongs to the token). A token sees and changes only its own webhooks.",
            Scope::accepted(version, tier).iter().map(|s| format!("`{}`", s.as_str())).collect::<Vec<_>>().join(", ")
        ),
    }
}
