//! x402 discovery: the `bazaar` extension of a v2 challenge (`extensions.bazaar`), in the shape
//! the reference package `@x402/extensions` declares and validates (`declareDiscoveryExtension`
//! after `bazaarResourceServerExtension.enrichDeclaration`, checked by
//! `validateDiscoveryExtension`): `info` holds the method, an input example (`queryParams`,
//! `pathParams`) and an output example; `schema` is a JSON Schema (draft 2020-12) that `info`
//! validates against; `routeTemplate` names the path with `:param` segments.
//!
//! Everything is derived from a finished OpenAPI document, once per paid operation at start-up:
//! the method from the operation; each required parameter's example from its `example`, `default`
//! or `enum` (else a value made from its schema: a pattern's first match, a minimum, a format), an
//! optional one only with its `default`; the
//! output example from the 200 response's schema the same way; and the schema from the
//! parameter and response schemas, references inlined (the response as deep as fits a header).
use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

/// The key of the extension in a challenge's `extensions`.
pub const BAZAAR: &str = "bazaar";
const JSON_SCHEMA_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";
/// How deep an example follows references (the schemas are not recursive; this is a guard).
const MAX_DEPTH: usize = 24;

/// The `bazaar` extension of every paid operation of some documents, by operationId.
#[derive(Debug, Clone, Default)]
pub struct Catalog(HashMap<String, Arc<Value>>);

impl Catalog {
    /// The extension of every paid operation (`x-govdata-access.tier` other than `free`) of `docs`.
    pub fn of<'a>(docs: impl IntoIterator<Item = &'a Value>) -> Self {
        let mut all = HashMap::new();
        for doc in docs {
            let Some(paths) = doc["paths"].as_object() else { continue };
            for (template, item) in paths {
                let Some(item) = item.as_object() else { continue };
                for (method, op) in item {
                    // What x402 buys: the paid tiers (not the free operations, nor those only a
                    // partner token opens).
                    let paid = op["x-govdata-access"]["tier"].as_str().is_some_and(|t| t != "free" && t != "partner");
                    if let (true, Some(id)) = (paid, op["operationId"].as_str())
                        && let Some(ext) = extension(doc, template, method)
                    {
                        all.insert(id.to_owned(), Arc::new(ext));
                    }
                }
            }
        }
        Self(all)
    }

    /// The extension of operation `id`.
    pub fn get(&self, id: &str) -> Option<Arc<Value>> {
        self.0.get(id).cloned()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The `bazaar` extension of the operation `method` on `template` in `doc` (a GET, HEAD or
/// DELETE: the query-parameter shape; govdata serves no body methods). The challenge travels in
/// a header, so the output schema goes as deep into the response as [`HEADER_BUDGET`] allows.
pub fn extension(doc: &Value, template: &str, method: &str) -> Option<Value> {
    let mut fitting = None;
    for depth in (1..=MAX_OUTPUT_DEPTH).rev() {
        let ext = extension_at(doc, template, method, depth)?;
        let fits = ext.to_string().len() <= HEADER_BUDGET;
        fitting = Some(ext);
        if fits {
            break;
        }
    }
    fitting
}

/// Bytes of JSON an extension may take: base64 makes a third more, and Node's HTTP client
/// refuses a response whose headers pass 16 KiB in all.
pub const HEADER_BUDGET: usize = 6 * 1024;
/// The deepest level of the response the output schema describes.
const MAX_OUTPUT_DEPTH: usize = 12;

fn extension_at(doc: &Value, template: &str, method: &str, output_depth: usize) -> Option<Value> {
    let op = doc["paths"][template].get(method.to_ascii_lowercase())?;
    let method = method.to_ascii_uppercase();
    if !["GET", "HEAD", "DELETE"].contains(&method.as_str()) {
        return None;
    }
    let (mut query, mut path) = (Params::default(), Params::default());
    for param in op["parameters"].as_array().into_iter().flatten() {
        let (Some(name), Some(place)) = (param["name"].as_str(), param["in"].as_str()) else { continue };
        let into = match place {
            "query" => &mut query,
            "path" => &mut path,
            _ => continue,
        };
        let mut schema = inline(&param["schema"], doc, MAX_DEPTH, true);
        if let (Some(d), Some(s)) = (param["description"].as_str(), schema.as_object_mut()) {
            s.entry("description").or_insert_with(|| json!(d));
        }
        let required = param["required"].as_bool().unwrap_or(false) || place == "path";
        // An optional parameter appears in the example only with the default the server applies
        // anyway (an example value of a filter could narrow the answer to nothing).
        let example = if required {
            Some(
                param
                    .get("example")
                    .cloned()
                    .or_else(|| declared_example(&param["schema"], doc))
                    .unwrap_or_else(|| example_of(&param["schema"], doc, 0)),
            )
        } else {
            // An empty list (`kinds`) is the same as no parameter: left out.
            resolve(&param["schema"], doc)
                .get("default")
                .filter(|d| d.as_array().is_none_or(|a| !a.is_empty()))
                .cloned()
        };
        into.add(name, schema, required, example);
    }

    // A JSON answer, or a file's (an export: its media types share one example schema); a
    // stream's events are no one answer and have none.
    let content = &op["responses"]["200"]["content"];
    let (response, output_type) = match content.get("application/json") {
        Some(json) => (&json["schema"], "json"),
        None if content.get("text/event-stream").is_some() => (&Value::Null, "json"),
        None => (content.as_object().and_then(|c| c.values().next()).map_or(&Value::Null, |m| &m["schema"]), "binary"),
    };
    let output_example = (!response.is_null()).then(|| example_of(response, doc, 0));

    let mut input_properties = json!({
        "type": { "type": "string", "const": "http" },
        "method": { "type": "string", "enum": [method] },
    });
    let mut input_required = vec![json!("type"), json!("method")];
    let mut info_input = json!({ "type": "http", "method": method });
    // The reference declares `queryParams` always (an empty map when there are none).
    input_properties["queryParams"] = query.schema();
    info_input["queryParams"] = Value::Object(query.examples);
    if !path.names.is_empty() {
        input_properties["pathParams"] = path.schema();
        input_required.push(json!("pathParams"));
        info_input["pathParams"] = Value::Object(path.examples);
    }

    let mut schema = json!({
        "$schema": JSON_SCHEMA_2020_12,
        "type": "object",
        "properties": {
            "input": {
                "type": "object",
                "properties": input_properties,
                "required": input_required,
                "additionalProperties": false,
            },
        },
        "required": ["input"],
    });
    let mut info = json!({ "input": info_input });
    if let Some(example) = output_example {
        schema["properties"]["output"] = json!({
            "type": "object",
            "properties": {
                "type": { "type": "string" },
                "example": inline(response, doc, output_depth, false),
            },
            "required": ["type", "example"],
        });
        info["output"] = json!({ "type": output_type, "example": example });
    }
    let mut ext = json!({ "info": info, "schema": schema });
    if !path.names.is_empty() {
        ext["routeTemplate"] = json!(route_template(template));
    }
    Some(ext)
}

/// `/v2/proposals/{proposalKey}` → `/v2/proposals/:proposalKey`, the form the reference uses.
pub fn route_template(template: &str) -> String {
    template
        .split('/')
        .map(|s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(name) => format!(":{name}"),
            None => s.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[derive(Default)]
struct Params {
    names: Vec<String>,
    properties: Map<String, Value>,
    required: Vec<String>,
    examples: Map<String, Value>,
}

impl Params {
    fn add(&mut self, name: &str, schema: Value, required: bool, example: Option<Value>) {
        self.names.push(name.to_owned());
        self.properties.insert(name.to_owned(), schema);
        if required {
            self.required.push(name.to_owned());
        }
        if let Some(example) = example {
            self.examples.insert(name.to_owned(), example);
        }
    }

    fn schema(&self) -> Value {
        let mut schema = json!({
            "type": "object",
            "properties": self.properties,
            "additionalProperties": false,
        });
        if !self.required.is_empty() {
            schema["required"] = json!(self.required);
        }
        schema
    }
}

/// An OpenAPI 3.0 schema as a self-contained JSON Schema 2020-12: references to
/// `#/components/schemas/X` are inlined, `depth` levels of members deep (deeper members keep only
/// their `type`); `example` becomes `examples`; OpenAPI's own integer and number formats and
/// annotations are left out; `docs` keeps descriptions and examples.
fn inline(schema: &Value, doc: &Value, depth: usize, docs: bool) -> Value {
    let schema = resolve(schema, doc);
    let Some(o) = schema.as_object() else { return schema.clone() };
    if depth == 0 {
        return match o.get("type") {
            Some(t) => json!({ "type": t }),
            None => json!({}),
        };
    }
    let mut out = Map::new();
    for (k, v) in o {
        match k.as_str() {
            "properties" => {
                let props = v
                    .as_object()
                    .map(|p| p.iter().map(|(n, s)| (n.clone(), inline(s, doc, depth - 1, docs))).collect())
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Object(props));
            }
            "items" | "additionalProperties" if v.is_object() => {
                out.insert(k.clone(), inline(v, doc, depth - 1, docs));
            }
            "allOf" | "oneOf" | "anyOf" => {
                let parts = v.as_array().into_iter().flatten().map(|p| inline(p, doc, depth, docs)).collect();
                out.insert(k.clone(), Value::Array(parts));
            }
            "format" if matches!(v.as_str(), Some("int32" | "int64" | "float" | "double" | "byte" | "binary")) => {}
            "example" if docs => {
                out.insert("examples".to_owned(), json!([v]));
            }
            "description" | "default" if docs => {
                out.insert(k.clone(), v.clone());
            }
            "example" | "description" | "title" | "default" | "discriminator" | "xml" | "externalDocs" | "nullable"
            | "readOnly" | "writeOnly" | "deprecated" => {}
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    if o.get("nullable").and_then(Value::as_bool) == Some(true) {
        return json!({ "anyOf": [Value::Object(out), { "type": "null" }] });
    }
    Value::Object(out)
}

fn resolve<'a>(schema: &'a Value, doc: &'a Value) -> &'a Value {
    let mut schema = schema;
    for _ in 0..MAX_DEPTH {
        match schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/")) {
            Some(name) => schema = &doc["components"]["schemas"][name],
            None => break,
        }
    }
    schema
}

/// The value a schema itself suggests: its `example`, `default` or first `enum` member.
fn declared_example(schema: &Value, doc: &Value) -> Option<Value> {
    let schema = resolve(schema, doc);
    ["example", "default"]
        .iter()
        .find_map(|k| schema.get(*k).filter(|v| !v.is_null()).cloned())
        .or_else(|| schema["enum"].as_array().and_then(|e| e.first()).cloned())
}

/// An example value of `schema`: what it declares, else a plausible value built from its type.
fn example_of(schema: &Value, doc: &Value, depth: usize) -> Value {
    let schema = resolve(schema, doc);
    if let Some(declared) = declared_example(schema, doc) {
        return declared;
    }
    if depth > MAX_DEPTH {
        return json!({});
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(first) = schema[key].as_array().and_then(|a| a.first()) {
            return example_of(first, doc, depth + 1);
        }
    }
    if let Some(parts) = schema["allOf"].as_array() {
        let mut merged = Map::new();
        for part in parts {
            match example_of(part, doc, depth + 1) {
                Value::Object(o) => merged.extend(o),
                other if parts.len() == 1 => return other,
                _ => {}
            }
        }
        return Value::Object(merged);
    }
    let kind = match &schema["type"] {
        Value::String(t) => t.as_str(),
        Value::Array(types) => types.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null"),
        _ if schema["properties"].is_object() => "object",
        _ => "",
    };
    match kind {
        "object" => {
            let mut out = Map::new();
            for (name, member) in schema["properties"].as_object().into_iter().flatten() {
                out.insert(name.clone(), example_of(member, doc, depth + 1));
            }
            Value::Object(out)
        }
        "array" => {
            let n = schema["minItems"].as_u64().unwrap_or(1).max(1);
            Value::Array((0..n).map(|_| example_of(&schema["items"], doc, depth + 1)).collect())
        }
        "integer" => json!(schema["minimum"].as_f64().map_or(0, |m| m.ceil() as i64)),
        "number" => json!(schema["minimum"].as_f64().unwrap_or(0.0)),
        "boolean" => json!(false),
        "string" => json!(string_example(schema)),
        _ => json!({}),
    }
}

fn string_example(schema: &Value) -> String {
    if let Some(pattern) = schema["pattern"].as_str() {
        return pattern_example(pattern);
    }
    let text = match schema["format"].as_str() {
        Some("date-time") => "2026-01-01T00:00:00.000Z",
        Some("date") => "2026-01-01",
        Some("uri" | "url") => "https://example.org/",
        Some("email") => "agent@example.org",
        Some("uuid") => "00000000-0000-4000-8000-000000000000",
        Some("byte") => "AA==",
        _ => "string",
    };
    let mut text = text.to_owned();
    if let Some(max) = schema["maxLength"].as_u64() {
        text.truncate(max as usize);
    }
    if let Some(min) = schema["minLength"].as_u64() {
        while (text.chars().count() as u64) < min {
            text.push('a');
        }
    }
    text
}

/// A string a regular expression matches, built from its first alternatives: literals, escapes,
/// classes (their first member), groups (their first alternative) and quantifiers (their least
/// count, one for `+`). Enough for the patterns the documents use; a test checks each result
/// with the pattern itself.
pub fn pattern_example(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut pos = 0;
    alternatives(&chars, &mut pos)
}

/// Parses alternatives up to a closing `)` (consumed by the caller) and returns the first.
fn alternatives(chars: &[char], pos: &mut usize) -> String {
    let mut first: Option<String> = None;
    let mut current = String::new();
    while *pos < chars.len() {
        let c = chars[*pos];
        match c {
            ')' => break,
            '|' => {
                *pos += 1;
                first.get_or_insert(std::mem::take(&mut current));
                current.clear();
            }
            _ => {
                let atom = atom(chars, pos);
                let (least, _) = quantifier(chars, pos);
                for _ in 0..least {
                    current.push_str(&atom);
                }
            }
        }
    }
    first.unwrap_or(current)
}

/// One atom at `pos`, as the text it contributes once.
fn atom(chars: &[char], pos: &mut usize) -> String {
    let c = chars[*pos];
    *pos += 1;
    match c {
        '^' | '$' => String::new(),
        '(' => {
            if chars.get(*pos) == Some(&'?') {
                // `(?:`, `(?i)`…: skip to the group's body.
                while *pos < chars.len() && chars[*pos] != ':' && chars[*pos] != ')' {
                    *pos += 1;
                }
                if chars.get(*pos) == Some(&':') {
                    *pos += 1;
                }
            }
            let inner = alternatives(chars, pos);
            *pos += 1; // `)`
            inner
        }
        '[' => {
            let negated = chars.get(*pos) == Some(&'^');
            if negated {
                *pos += 1;
            }
            let mut first: Option<char> = None;
            let mut i = 0;
            while *pos < chars.len() && (chars[*pos] != ']' || i == 0) {
                let mut ch = chars[*pos];
                if ch == '\\' {
                    *pos += 1;
                    ch = escaped(chars.get(*pos).copied().unwrap_or('a'));
                }
                first.get_or_insert(ch);
                *pos += 1;
                i += 1;
            }
            *pos += 1; // `]`
            if negated { "a".to_owned() } else { first.unwrap_or('a').to_string() }
        }
        '\\' => {
            let e = chars.get(*pos).copied().unwrap_or('a');
            *pos += 1;
            escaped(e).to_string()
        }
        '.' => "a".to_owned(),
        other => other.to_string(),
    }
}

fn escaped(c: char) -> char {
    match c {
        'd' => '0',
        'w' => 'a',
        's' => ' ',
        'D' | 'W' | 'S' => 'a',
        other => other,
    }
}

/// The quantifier at `pos`, if any, as (least, most); an atom without one counts once.
fn quantifier(chars: &[char], pos: &mut usize) -> (usize, Option<usize>) {
    let q = match chars.get(*pos) {
        Some('*') => (0, None),
        Some('+') => (1, None),
        Some('?') => (0, Some(1)),
        Some('{') => {
            let end = chars[*pos..].iter().position(|c| *c == '}').map(|e| *pos + e);
            let Some(end) = end else { return (1, Some(1)) };
            let body: String = chars[*pos + 1..end].iter().collect();
            let mut parts = body.split(',');
            let least = parts.next().and_then(|n| n.trim().parse().ok()).unwrap_or(1);
            let most = parts.next().map(|m| m.trim().parse().ok()).unwrap_or(Some(least));
            *pos = end;
            (least, most)
        }
        _ => return (1, Some(1)),
    };
    *pos += 1;
    // A lazy or possessive marker.
    if matches!(chars.get(*pos), Some('?' | '+')) {
        *pos += 1;
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_examples_match_their_patterns() {
        for pattern in [
            "^p_[A-Za-z0-9_-]{22}$",
            "^[A-Za-z0-9_-]+$",
            r"^\s*(?:0[xX](?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})|eip155:[0-9]+:0[xX][0-9a-fA-F]{40})\s*$|^\s*[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+\s*$",
            "^a(b|c)?d{2,3}e*$",
        ] {
            let example = pattern_example(pattern);
            assert!(regex::Regex::new(pattern).unwrap().is_match(&example), "{pattern}: {example:?}");
        }
        assert_eq!(pattern_example("^p_[A-Z]{3}$"), "p_AAA");
    }

    #[test]
    fn route_templates_use_colon_segments() {
        assert_eq!(route_template("/v2/proposals/{proposalKey}/votes"), "/v2/proposals/:proposalKey/votes");
        assert_eq!(route_template("/v2/daos"), "/v2/daos");
    }
}
