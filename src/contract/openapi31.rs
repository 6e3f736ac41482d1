//! The OpenAPI 3.1 rendition of a finished document. 3.1's schemas are JSON Schema 2020-12, the
//! dialect MCP tool schemas and x402 discovery schemas speak, so this rendition is where those
//! read a schema from.
//!
//! poem-openapi writes 3.0. The rendition states the same contract in 3.1's terms (schema
//! `example` becomes 2020-12's `examples`, `nullable` a `null` type, boolean exclusive bounds
//! numeric ones), and every schema in it (components, parameters, bodies, headers) is passed
//! through utoipa's typed 3.1 model, `utoipa::openapi::RefOr<Schema>`: a schema that model cannot
//! hold exactly fails the build of the documents, so a schema is only published in a form a typed
//! 3.1 reader holds as written. The document around the schemas is not passed through utoipa's
//! `OpenApi`: its header model has no `required` (utoipa 5.5 `Header` keeps only `schema` and
//! `description`), and our `RateLimit`, `RateLimit-Policy` and `Retry-After` headers are required.
use serde_json::{Value, json};

/// The 3.1 rendition of `doc` (a finished 3.0 document).
pub fn rendition(doc: &Value) -> Value {
    let mut out = doc.clone();
    out["openapi"] = json!("3.1.0");
    out["jsonSchemaDialect"] = json!("https://spec.openapis.org/oas/3.1/dialect/base");
    if let Some(schemas) = out.pointer_mut("/components/schemas").and_then(Value::as_object_mut) {
        for (name, schema) in schemas.iter_mut() {
            *schema = typed(schema, &format!("components.schemas.{name}"));
        }
    }
    // `get_mut` throughout: indexing a `Value` mutably would add the members it looks for.
    for (path, item) in out.get_mut("paths").and_then(Value::as_object_mut).into_iter().flatten() {
        for (method, op) in item.as_object_mut().into_iter().flatten() {
            let at = format!("{method} {path}");
            for p in op.get_mut("parameters").and_then(Value::as_array_mut).into_iter().flatten() {
                let name = p["name"].as_str().unwrap_or_default().to_owned();
                if let Some(schema) = p.get_mut("schema") {
                    *schema = typed(schema, &format!("{at} parameter {name}"));
                }
            }
            for (status, response) in op.get_mut("responses").and_then(Value::as_object_mut).into_iter().flatten() {
                rendition_of_response(response, &format!("{at} {status}"));
            }
        }
    }
    for (name, response) in
        out.pointer_mut("/components/responses").and_then(Value::as_object_mut).into_iter().flatten()
    {
        rendition_of_response(response, &format!("components.responses.{name}"));
    }
    out
}

fn rendition_of_response(response: &mut Value, at: &str) {
    for (media, body) in response.get_mut("content").and_then(Value::as_object_mut).into_iter().flatten() {
        if let Some(schema) = body.get_mut("schema") {
            *schema = typed(schema, &format!("{at} {media}"));
        }
    }
    for (name, header) in response.get_mut("headers").and_then(Value::as_object_mut).into_iter().flatten() {
        if let Some(schema) = header.get_mut("schema") {
            *schema = typed(schema, &format!("{at} header {name}"));
        }
    }
}

/// `schema` in 2020-12 terms, as utoipa's typed 3.1 schema holds it.
fn typed(schema: &Value, at: &str) -> Value {
    let mut schema = schema.clone();
    to_2020_12(&mut schema);
    whole_numbers(&mut schema);
    let model: utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> = serde_json::from_value(schema.clone())
        .unwrap_or_else(|e| panic!("{at}: utoipa's 3.1 model does not read the schema: {e}"));
    let mut back = serde_json::to_value(&model).expect("a typed schema serialises");
    whole_numbers(&mut back);
    assert_eq!(back, schema, "{at}: utoipa's 3.1 model does not hold the schema as written");
    back
}

/// 3.0 schema keywords in their 2020-12 form. Only subschemas are visited: member names
/// (`properties`) and values (`examples`, `enum`, `default`) are data and stay as they are.
fn to_2020_12(schema: &mut Value) {
    let Some(o) = schema.as_object_mut() else { return };
    if let Some(example) = o.remove("example") {
        o.insert("examples".to_owned(), json!([example]));
    }
    if o.remove("nullable") == Some(Value::Bool(true))
        && let Some(ty) = o.get("type").cloned()
    {
        o.insert("type".to_owned(), json!([ty, "null"]));
    }
    for (bound, exclusive) in [("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")] {
        match o.remove(exclusive) {
            Some(Value::Bool(true)) => {
                if let Some(limit) = o.remove(bound) {
                    o.insert(exclusive.to_owned(), limit);
                }
            }
            Some(Value::Bool(false)) | None => {}
            Some(numeric) => {
                o.insert(exclusive.to_owned(), numeric);
            }
        }
    }
    for (key, value) in o.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" | "$defs" => {
                value.as_object_mut().into_iter().flatten().for_each(|(_, s)| to_2020_12(s));
            }
            "allOf" | "oneOf" | "anyOf" | "prefixItems" => {
                value.as_array_mut().into_iter().flatten().for_each(to_2020_12);
            }
            "items" | "additionalProperties" | "not" | "contains" | "propertyNames" => to_2020_12(value),
            _ => {}
        }
    }
}

/// poem-openapi writes bounds as floats (`100.0`); JSON Schema compares numbers by value, and the
/// rendition writes a whole bound as an integer, as utoipa does.
fn whole_numbers(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64()
                && n.is_f64()
                && f.fract() == 0.0
                && f.abs() < 9.0e15
            {
                *value = Value::from(f as i64);
            }
        }
        Value::Object(o) => o.values_mut().for_each(whole_numbers),
        Value::Array(items) => items.iter_mut().for_each(whole_numbers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_3_0_schema_becomes_its_2020_12_form() {
        let mut s = json!({"type": "object", "nullable": true, "example": {"example": 1, "nullable": true},
            "properties": {"example": {"type": "integer", "minimum": 1.0, "exclusiveMaximum": true,
            "maximum": 10.0, "example": 3}}});
        to_2020_12(&mut s);
        whole_numbers(&mut s);
        // Keywords change; member names and example values do not.
        assert_eq!(
            s,
            json!({"type": ["object", "null"], "examples": [{"example": 1, "nullable": true}],
                "properties": {"example": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10, "examples": [3]}}})
        );
    }
}
