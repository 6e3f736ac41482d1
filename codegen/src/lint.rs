//! What every published operation must carry for agents and SDK generators, checked on the
//! documents as published. The documents are read through `openapiv3`, which parses the 3.0
//! documents poem-openapi writes as they are (utoipa's model refuses `3.0.0` and drops `oneOf`
//! on a round trip); examples are checked on the raw JSON, where a `null` cannot hide.
use std::collections::{BTreeSet, HashSet};

use openapiv3::{OpenAPI, Parameter, ParameterSchemaOrContent, ReferenceOr, Schema, SchemaKind, StatusCode, Type};
use serde_json::Value;

use crate::diff::unbox;

/// The verbs an operationId may end with: `<resource>_<verb>`. `stream`: a resource's changes
/// as Server-Sent Events (`v2_feed_stream`).
pub const VERBS: &[&str] =
    &["list", "get", "lookup", "stream", "create", "update", "delete", "rotate", "send", "replay"];
/// The schema every error response carries.
pub const PROBLEM_REF: &str = "#/components/schemas/Problem";
/// The schema the errors of an operation with a request body carry (`Problem`, whose
/// `errors[].in` may also be `body`).
pub const BODY_PROBLEM_REF: &str = "#/components/schemas/BodyProblem";
pub const PROBLEM_MEDIA_TYPE: &str = "application/problem+json";
/// The extension that states an operation's tier, price and scopes.
pub const ACCESS_EXTENSION: &str = "x-govdata-access";

/// One finding: the rule, where, what.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    pub rule: &'static str,
    pub at: String,
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}: {}", self.rule, self.at, self.message)
    }
}

/// Lints one document; `raw` is the same document as JSON.
pub fn lint(doc: &OpenAPI, raw: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut push = |rule, at: &str, message: String| out.push(Finding { rule, at: at.to_owned(), message });
    let declared_tags: HashSet<&str> = doc.tags.iter().map(|t| t.name.as_str()).collect();
    for tag in &doc.tags {
        if tag.description.as_deref().is_none_or(str::is_empty) {
            push("tag-description", &format!("tag {}", tag.name), "a tag needs a description".into());
        }
    }
    let mut ids = BTreeSet::new();
    for (path, method, op) in doc.operations() {
        let at = format!("{} {path}", method.to_ascii_uppercase());
        match op.operation_id.as_deref() {
            None => push("operation-id", &at, "no operationId".into()),
            Some(id) => {
                if !operation_id_ok(id) {
                    push(
                        "operation-id",
                        &at,
                        format!("`{id}` is not `<resource>_<verb>` in snake_case with a verb of {VERBS:?}"),
                    );
                }
                if !ids.insert(id.to_owned()) {
                    push("operation-id", &at, format!("`{id}` is used twice"));
                }
            }
        }
        match op.tags.as_slice() {
            [tag] if declared_tags.contains(tag.as_str()) => {}
            [tag] => push("one-tag", &at, format!("tag `{tag}` is not declared at the top level")),
            tags => push("one-tag", &at, format!("{} tags; exactly one is required", tags.len())),
        }
        if op.summary.as_deref().is_none_or(str::is_empty) {
            push("description", &at, "no summary".into());
        }
        if op.description.as_deref().is_none_or(|d| d.trim().len() < 20) {
            push("description", &at, "no description (or a stub)".into());
        }
        for p in &op.parameters {
            let ReferenceOr::Item(p) = p else {
                push("description", &at, "a parameter by reference (the lint reads inline ones)".into());
                continue;
            };
            let data = p.parameter_data_ref();
            let schema_description = match &data.format {
                ParameterSchemaOrContent::Schema(ReferenceOr::Item(s)) => s.schema_data.description.clone(),
                _ => None,
            };
            if data.description.as_deref().or(schema_description.as_deref()).is_none_or(str::is_empty) {
                push("description", &format!("{at} › parameter `{}`", data.name), "no description".into());
            }
            if matches!(p, Parameter::Path { .. }) && !data.required {
                push(
                    "path-parameter",
                    &format!("{at} › parameter `{}`", data.name),
                    "path parameters are required".into(),
                );
            }
        }

        let mut statuses = BTreeSet::new();
        for (code, response) in &op.responses.responses {
            let StatusCode::Code(code) = code else {
                push("error-response", &at, "status ranges are not used; name each status".into());
                continue;
            };
            statuses.insert(*code);
            let ReferenceOr::Item(response) = response else { continue };
            let where_ = format!("{at} › response {code}");
            if response.description.trim().is_empty() {
                push("description", &where_, "no description".into());
            }
            if *code >= 400 {
                // An operation with a request body answers `BodyProblem` (its errors may name a
                // body member); every other, `Problem`.
                let expected = if op.request_body.is_some() { BODY_PROBLEM_REF } else { PROBLEM_REF };
                let problem = response
                    .content
                    .get(PROBLEM_MEDIA_TYPE)
                    .and_then(|m| m.schema.as_ref())
                    .is_some_and(|s| matches!(s, ReferenceOr::Reference { reference } if reference == expected));
                if !problem || response.content.len() != 1 {
                    push(
                        "error-response",
                        &where_,
                        format!("an error answers only `{PROBLEM_MEDIA_TYPE}` with {expected}"),
                    );
                }
            } else if (200..300).contains(code) && !response.content.is_empty() {
                let example = response
                    .content
                    .values()
                    .any(|m| m.example.is_some() || m.schema.as_ref().is_some_and(|s| reaches_example(doc, s, 0)));
                if !example {
                    push("examples", &where_, "no example of the answer (on the schema or any it contains)".into());
                }
            }
        }
        if op.responses.default.is_some() {
            push("error-response", &at, "a `default` response hides which errors happen; name each status".into());
        }

        let access = op.extensions.get(ACCESS_EXTENSION);
        let tier = access.and_then(|a| a.get("tier")).and_then(Value::as_str);
        let security = op.security.as_deref().or(doc.security.as_deref()).unwrap_or(&[]);
        let anonymous = security.is_empty() || security.iter().any(|r| r.is_empty());
        match tier {
            None => push("access", &at, format!("no `{ACCESS_EXTENSION}.tier`")),
            Some("free") => {
                if !anonymous {
                    push("access", &at, "a free operation must not require credentials".into());
                }
                if access.and_then(|a| a.get("price")).is_some() {
                    push("access", &at, "a free operation has no price".into());
                }
            }
            Some("standard" | "plus") => {
                let price = access.and_then(|a| a.get("price")).and_then(Value::as_str);
                if !price.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) {
                    push("access", &at, "a paid operation states its price as a decimal string".into());
                }
                if access.and_then(|a| a.get("scopes")).and_then(Value::as_array).is_none_or(Vec::is_empty) {
                    push("access", &at, "a paid operation lists the partner-token scopes that open it".into());
                }
                if anonymous {
                    push("access", &at, "a paid operation must declare its security schemes".into());
                }
                for status in [401, 402, 403] {
                    if !statuses.contains(&status) {
                        push("access", &at, format!("a paid operation documents its {status} response"));
                    }
                }
            }
            Some("partner") => {
                // Only a partner token opens it: no price, no payment challenge.
                if access.and_then(|a| a.get("price")).is_some() || statuses.contains(&402) {
                    push("access", &at, "a partner-token operation has no price and answers no 402".into());
                }
                if access.and_then(|a| a.get("scopes")).and_then(Value::as_array).is_none_or(Vec::is_empty) {
                    push("access", &at, "a partner-token operation lists the scopes that open it".into());
                }
                if anonymous {
                    push("access", &at, "a partner-token operation must declare its security scheme".into());
                }
                for status in [401, 403] {
                    if !statuses.contains(&status) {
                        push("access", &at, format!("a partner-token operation documents its {status} response"));
                    }
                }
            }
            Some(other) => push("access", &at, format!("unknown tier `{other}`")),
        }
    }
    if let Some(problem) = doc.components.as_ref().and_then(|c| c.schemas.get("Problem"))
        && !reaches_example(doc, problem, 0)
    {
        push("examples", "components › Problem", "the problem schema has no example".into());
    }
    null_examples(raw, "#", &mut out);
    integer_formats(raw, "#", &mut out);
    request_ids(raw, &mut out);
    out.sort();
    out
}

/// `<resource>_<verb>`: lowercase snake_case words, the last one a known verb; after a surface
/// prefix (`v2_`) on surfaces later than the released v1, so ids stay unique across documents.
pub fn operation_id_ok(id: &str) -> bool {
    let id = match id.split_once('_') {
        Some((surface, rest))
            if surface.len() > 1 && surface.starts_with('v') && surface[1..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            rest
        }
        _ => id,
    };
    let words: Vec<&str> = id.split('_').collect();
    words.len() >= 2
        && words.iter().all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase()))
        && VERBS.contains(words.last().expect("two words"))
}

/// Whether an example is found on the schema or within it (members, items, `allOf` parts).
fn reaches_example(doc: &OpenAPI, schema: &ReferenceOr<Schema>, depth: usize) -> bool {
    if depth > 6 {
        return false;
    }
    let schema = match schema {
        ReferenceOr::Item(s) => s,
        ReferenceOr::Reference { reference } => {
            let Some(s) = reference
                .strip_prefix("#/components/schemas/")
                .and_then(|name| doc.components.as_ref()?.schemas.get(name))
            else {
                return false;
            };
            return reaches_example(doc, s, depth + 1);
        }
    };
    if schema.schema_data.example.is_some() {
        return true;
    }
    match &schema.schema_kind {
        SchemaKind::Type(Type::Object(o)) => o.properties.values().any(|p| reaches_example(doc, &unbox(p), depth + 1)),
        SchemaKind::Type(Type::Array(a)) => {
            a.items.as_ref().is_some_and(|i| reaches_example(doc, &unbox(i), depth + 1))
        }
        SchemaKind::Any(a) => {
            a.properties.values().any(|p| reaches_example(doc, &unbox(p), depth + 1))
                || a.items.as_ref().is_some_and(|i| reaches_example(doc, &unbox(i), depth + 1))
        }
        SchemaKind::AllOf { all_of: parts }
        | SchemaKind::OneOf { one_of: parts }
        | SchemaKind::AnyOf { any_of: parts } => parts.iter().any(|p| reaches_example(doc, p, depth + 1)),
        _ => false,
    }
}

/// Every `example` (and each value of `examples`) anywhere: no `null`, at any depth. Agents copy
/// examples; our answers never carry `null`.
fn null_examples(value: &Value, at: &str, out: &mut Vec<Finding>) {
    fn has_null(v: &Value) -> bool {
        match v {
            Value::Null => true,
            Value::Array(items) => items.iter().any(has_null),
            Value::Object(members) => members.values().any(has_null),
            _ => false,
        }
    }
    match value {
        Value::Object(members) => {
            for (key, v) in members {
                let here = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                if key == "example" && has_null(v) {
                    out.push(Finding {
                        rule: "null-example",
                        at: here.clone(),
                        message: "an example holds `null`".into(),
                    });
                }
                if key == "examples" && has_null(v) {
                    out.push(Finding {
                        rule: "null-example",
                        at: here.clone(),
                        message: "an example holds `null`".into(),
                    });
                }
                null_examples(v, &here, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                null_examples(v, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Integers carry a format of the OpenAPI registry (`int32`, `int64`): generators guess at
/// others (`uint8`), each differently.
fn integer_formats(value: &Value, at: &str, out: &mut Vec<Finding>) {
    match value {
        Value::Object(members) => {
            if members.get("type").and_then(Value::as_str) == Some("integer")
                && let Some(format) = members.get("format").and_then(Value::as_str)
                && !matches!(format, "int32" | "int64")
            {
                out.push(Finding {
                    rule: "integer-format",
                    at: at.to_owned(),
                    message: format!("integer format `{format}` is not int32 or int64"),
                });
            }
            for (key, v) in members {
                integer_formats(v, &format!("{at}/{}", key.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                integer_formats(v, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Every response of every operation declares `x-request-id`, which the server sets on all.
fn request_ids(raw: &Value, out: &mut Vec<Finding>) {
    for (path, item) in raw["paths"].as_object().into_iter().flatten() {
        for (method, op) in item.as_object().into_iter().flatten() {
            for (status, response) in op["responses"].as_object().into_iter().flatten() {
                if !response["headers"]["x-request-id"].is_object() {
                    out.push(Finding {
                        rule: "request-id",
                        at: format!("{} {path} › response {status}", method.to_ascii_uppercase()),
                        message: "the response does not declare `x-request-id`".into(),
                    });
                }
            }
        }
    }
}
