//! The YAML form of the published documents: block style, every string double-quoted.
//!
//! serde_yaml leaves some strings plain that YAML readers then type otherwise: a 0x address too
//! long for a u64 (`0xa6e8…`) becomes a number and an RFC 3339 timestamp a date in js-yaml and
//! PyYAML, so the document's examples no longer match their schemas. A JSON string literal is a
//! valid YAML double-quoted scalar with the same escapes, so quoting every string that way keeps
//! the YAML exactly the JSON document.
use serde_json::Value;

/// `value` as YAML 1.2.
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    if inline(value) {
        out.push_str(&scalar(value));
        out.push('\n');
    } else {
        block(value, 0, &mut out);
    }
    out
}

/// Scalars and empty collections are written on the line of their key.
fn inline(value: &Value) -> bool {
    match value {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => true,
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::Object(_) => "{}".to_owned(),
        Value::Array(_) => "[]".to_owned(),
        // serde_json writes strings as JSON literals: valid YAML double-quoted scalars.
        other => other.to_string(),
    }
}

/// A mapping key: plain when no YAML reader could take it for anything but that string.
fn key(text: &str) -> String {
    let plain = text.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$' || c == '/')
        && text.chars().all(|c| c.is_ascii_alphanumeric() || "_$./-{}".contains(c))
        && !text.contains("{{")
        && !matches!(
            text.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n" | "~"
        );
    if plain { text.to_owned() } else { Value::String(text.to_owned()).to_string() }
}

fn block(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    let child = |v: &Value, out: &mut String| {
        if inline(v) {
            out.push(' ');
            out.push_str(&scalar(v));
            out.push('\n');
        } else {
            out.push('\n');
            block(v, indent + 2, out);
        }
    };
    match value {
        Value::Object(members) => {
            for (k, v) in members {
                out.push_str(&pad);
                out.push_str(&key(k));
                out.push(':');
                child(v, out);
            }
        }
        Value::Array(items) => {
            for v in items {
                out.push_str(&pad);
                out.push('-');
                child(v, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_stay_strings_and_the_structure_survives() {
        let doc = json!({
            "paths": { "/v1/daos/{daoId}": { "get": { "operationId": "x" } } },
            "200": "ok",
            "example": {
                "author": "0xa6e8772af29b29b9202a073f8e36f447689beef6aaaaaaaaaaaaaaaa",
                "at": "2026-04-02T00:00:00.000Z",
                "n": 25, "f": 0.5, "yes": true, "none": null,
                "text": "line one\nline \"two\": #not a comment",
                "list": [{"a": 1, "b": [1, 2]}, [], {}, "s"],
            },
        });
        let text = to_yaml(&doc);
        assert!(text.contains("author: \"0xa6e8"), "{text}");
        assert!(text.contains("\"200\": \"ok\""), "{text}");
        assert!(text.contains("\"yes\": true"), "{text}");
        assert!(text.contains("/v1/daos/{daoId}:"), "{text}");
        // serde_yaml reads it back as the same JSON value (its reader is YAML 1.2 core).
        let back: Value = serde_yaml::from_str(&text).expect("valid YAML");
        assert_eq!(back, doc);
    }
}
