//! The operation table: every operation of both surfaces on one line (method, path,
//! operationId, tier, price, parameter limits), written from the published documents so a
//! reviewer sees a contract change as a one-line diff.
use std::fmt::Write as _;

use openapiv3::{OpenAPI, ParameterSchemaOrContent, ReferenceOr, Schema};
use serde_json::Value;

use govdata::contract::{access::Version, operations};

use crate::{diff::Shape, lint::ACCESS_EXTENSION};

/// The table in markdown, for the documents in `docs` (name, document).
pub fn markdown(docs: &[(&str, Version, &OpenAPI)]) -> String {
    let mut out = String::from(
        "# Operations\n\n\
         Written by `cargo run -p codegen` from the published documents; `codegen check` fails when it is \
         stale. Prices are in atomic units of the x402 asset (the defaults; a deployment may configure \
         others, and `GET /v1/meta/pricing` tells). Limits come from the operation declarations \
         (`src/contract/operations.rs`): rows per page and the longest time window; v1 clamps values \
         beyond them (and says so in `request.adjustments`), v2 rejects them. Parameters show what their \
         schemas state; `*` marks a required one.\n",
    );
    for (name, version, doc) in docs {
        let _ = write!(
            out,
            "\n## {name}\n\n| method | path | operationId | tier | price | limits | parameters |\n|---|---|---|---|---|---|---|\n"
        );
        for (path, method, op) in doc.operations() {
            let access = op.extensions.get(ACCESS_EXTENSION);
            let field = |k: &str| access.and_then(|a| a.get(k)).and_then(Value::as_str).unwrap_or("").to_owned();
            let parameters: Vec<String> = op
                .parameters
                .iter()
                .filter_map(ReferenceOr::as_item)
                .map(|p| {
                    let data = p.parameter_data_ref();
                    let mark = if data.required { "*" } else { "" };
                    let limits = match &data.format {
                        ParameterSchemaOrContent::Schema(s) => limits(doc, s),
                        ParameterSchemaOrContent::Content(_) => String::new(),
                    };
                    if limits.is_empty() {
                        format!("`{}`{mark}", data.name)
                    } else {
                        format!("`{}`{mark} {limits}", data.name)
                    }
                })
                .collect();
            let price = field("price");
            let id = op.operation_id.as_deref().unwrap_or("");
            let decl = operations::find(*version, id);
            let mut limits = Vec::new();
            if let Some(page) = decl.and_then(|d| d.page) {
                limits.push(format!("page 1..={} (default {})", page.max, page.default));
            }
            if let Some(window) = decl.and_then(|d| d.window) {
                limits.push(format!("window ≤ {} days", window.max_days));
            }
            let _ = writeln!(
                out,
                "| {} | `{path}` | `{id}` | {} | {} | {} | {} |",
                method.to_ascii_uppercase(),
                field("tier"),
                if price.is_empty() { "–".to_owned() } else { price },
                if limits.is_empty() { "–".to_owned() } else { limits.join("; ") },
                parameters.join("; ").replace('|', "\\|"),
            );
        }
    }
    out
}

/// A parameter schema's constraints, compactly: `1..=100 (default 25)`, `one of a, b`.
fn limits(doc: &OpenAPI, schema: &ReferenceOr<Schema>) -> String {
    let Some(shape) = Shape::of(doc, schema) else { return String::new() };
    let number = |v: f64| if v.fract() == 0.0 { format!("{}", v as i64) } else { v.to_string() };
    let mut parts = Vec::new();
    match (shape.minimum, shape.maximum) {
        (Some(lo), Some(hi)) => parts.push(format!("{}..={}", number(lo), number(hi))),
        (Some(lo), None) => parts.push(format!("≥ {}", number(lo))),
        (None, Some(hi)) => parts.push(format!("≤ {}", number(hi))),
        (None, None) => {}
    }
    if let Some(values) = &shape.enumeration {
        let values: Vec<&str> = values.iter().map(|v| v.trim_matches('"')).collect();
        parts.push(format!("one of {}", values.join(", ")));
    }
    match (shape.min_length, shape.max_length) {
        (Some(lo), Some(hi)) => parts.push(format!("length {lo}..={hi}")),
        (None, Some(hi)) => parts.push(format!("length ≤ {hi}")),
        (Some(lo), None) => parts.push(format!("length ≥ {lo}")),
        (None, None) => {}
    }
    if let Some(pattern) = &shape.pattern {
        parts.push(format!("pattern `{pattern}`"));
    }
    if let Some(default) = &shape.default {
        parts.push(format!("(default {default})"));
    }
    parts.join(" ")
}
