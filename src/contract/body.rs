//! Request bodies, validated like parameters: member by member, each refusal a [`FieldError`]
//! with `in: body` and the member's name (`daoIds[2]` for an element), in the same 400 problem
//! document a bad parameter gets. The data surfaces take no body; the webhook management
//! operations (`contract::webhooks`) are the first that do.
//!
//! A body type declares its members once ([`FromBody::MEMBERS`]) and reads them from
//! [`Members`]; a member it does not declare is refused by name, as is a wrong type, and every
//! refusal of one body is reported together.
use serde_json::{Map, Value};

use super::errors::{ErrorCode, FieldError, ParamLocation, Problem};

/// The most bytes a request body may have.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// How much of a refused value a problem echoes.
const ECHO_CHARS: usize = 200;

/// The name the whole body goes by in a problem (it is not a member).
pub const WHOLE_BODY: &str = "body";

/// A JSON object body whose members are read one by one.
pub trait FromBody: Sized {
    /// Every member the body may have, as published.
    const MEMBERS: &'static [&'static str];
    /// Reads the body from `members`; `None` when a member was refused (`members` holds why).
    fn from_body(members: &mut Members) -> Option<Self>;
}

/// The members of a JSON object body, and the refusals found while reading them.
#[derive(Debug)]
pub struct Members {
    map: Map<String, Value>,
    errors: Vec<FieldError>,
}

/// Why a member's value was refused: the reason, and what would have been accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: String,
    pub expected: Option<String>,
}

impl Refusal {
    pub fn new(reason: impl Into<String>, expected: impl Into<String>) -> Self {
        Self { reason: reason.into(), expected: Some(expected.into()) }
    }
}

/// A refusal of the body as a whole (not JSON, not an object, too large, wrong content type).
pub fn refuse_body(reason: impl Into<String>, expected: &str) -> Problem {
    let error = FieldError {
        location: ParamLocation::Body,
        name: WHOLE_BODY.to_owned(),
        reason: reason.into(),
        expected: Some(expected.to_owned()),
        received: None,
    };
    Problem { detail: format!("The request body {}", error.reason), ..Problem::validation(error) }
}

/// The 400 refusing member `name` (as `received`) after the body was read: a URL that resolves
/// where webhooks may not go, a DAO id no DAO has.
pub fn refuse_member(name: &str, received: &str, refusal: Refusal) -> Problem {
    let detail = format!("Body member `{name}`: {}", refusal.reason);
    let error = FieldError {
        location: ParamLocation::Body,
        name: name.to_owned(),
        reason: refusal.reason,
        expected: refusal.expected,
        received: Some(received.to_owned()),
    };
    Problem { detail, ..Problem::validation(error) }
}

/// Reads `bytes` (at most [`MAX_BODY_BYTES`], checked by the caller) as the body `T`.
pub fn parse<T: FromBody>(bytes: &[u8]) -> Result<T, Problem> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| refuse_body(format!("is not JSON: {e}"), "a JSON object"))?;
    let Value::Object(map) = value else {
        return Err(refuse_body(format!("is JSON {}, not an object", kind_of(&value)), "a JSON object"));
    };
    let mut members = Members { map, errors: Vec::new() };
    let body = T::from_body(&mut members);
    let unknown: Vec<String> = members.map.keys().filter(|k| !T::MEMBERS.contains(&k.as_str())).cloned().collect();
    for name in unknown {
        let received = members.map.get(&name).map(echo);
        members.errors.push(FieldError {
            location: ParamLocation::Body,
            name,
            reason: "is not a member of this body".to_owned(),
            expected: Some(format!(
                "only {}",
                T::MEMBERS.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")
            )),
            received,
        });
    }
    match (body, members.errors.is_empty()) {
        (Some(body), true) => Ok(body),
        _ => Err(members.problem()),
    }
}

impl Members {
    /// A required member read by `read`.
    pub fn required<T>(&mut self, name: &'static str, read: impl FnOnce(&Value) -> Result<T, Refusal>) -> Option<T> {
        match self.map.get(name) {
            Some(value) => self.read(name, value.clone(), read),
            None => {
                self.errors.push(FieldError {
                    location: ParamLocation::Body,
                    name: name.to_owned(),
                    reason: "is required".to_owned(),
                    expected: None,
                    received: None,
                });
                None
            }
        }
    }

    /// An optional member: `Some(None)` when absent, `None` when refused (`null` included: the
    /// documents do not declare it, so leave the member out instead).
    pub fn optional<T>(
        &mut self,
        name: &'static str,
        read: impl FnOnce(&Value) -> Result<T, Refusal>,
    ) -> Option<Option<T>> {
        match self.map.get(name) {
            None => Some(None),
            Some(value) => self.read(name, value.clone(), read).map(Some),
        }
    }

    /// An optional member that may also be `null` (declared `nullable`): `Some(Some(None))`
    /// for `null`.
    pub fn nullable<T>(
        &mut self,
        name: &'static str,
        read: impl FnOnce(&Value) -> Result<T, Refusal>,
    ) -> Option<Option<Option<T>>> {
        match self.map.get(name) {
            Some(Value::Null) => Some(Some(None)),
            _ => self.optional(name, read).map(|v| v.map(Some)),
        }
    }

    /// Every member of an array read by `read`, each refusal naming its element (`daoIds[2]`).
    pub fn each<T>(
        &mut self,
        name: &'static str,
        max: usize,
        read: impl Fn(&Value) -> Result<T, Refusal>,
    ) -> Option<Option<Vec<T>>> {
        let value = match self.map.get(name) {
            None => return Some(None),
            Some(value) => value.clone(),
        };
        let Value::Array(items) = &value else {
            self.refuse(
                name.to_owned(),
                &value,
                Refusal::new(format!("is {}, not an array", kind_of(&value)), "an array"),
            );
            return None;
        };
        if items.len() > max {
            let refusal = Refusal::new(format!("has {} members", items.len()), format!("at most {max}"));
            self.refuse(name.to_owned(), &value, refusal);
            return None;
        }
        let mut read_all = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match read(item) {
                Ok(v) => read_all.push(v),
                Err(refusal) => {
                    self.refuse(format!("{name}[{i}]"), item, refusal);
                    ok = false;
                }
            }
        }
        ok.then_some(Some(read_all))
    }

    /// Every member of an array read by `read`, each at most once: a repeated one is refused,
    /// naming its element.
    pub fn each_once<T: PartialEq>(
        &mut self,
        name: &'static str,
        max: usize,
        read: impl Fn(&Value) -> Result<T, Refusal>,
    ) -> Option<Option<Vec<T>>> {
        let items = self.each(name, max, read)?;
        let list = self.map.get(name).cloned().unwrap_or(Value::Null);
        for (i, item) in items.iter().flatten().enumerate() {
            if let Some(first) = items.iter().flatten().take(i).position(|earlier| earlier == item) {
                let refusal = Refusal::new(format!("repeats `{name}[{first}]`"), "each value once");
                self.refuse(format!("{name}[{i}]"), &list[i], refusal);
                return None;
            }
        }
        Some(items)
    }

    /// Records a refusal found after reading (a DAO id no DAO has, say).
    pub fn refuse(&mut self, name: String, value: &Value, refusal: Refusal) {
        self.errors.push(FieldError {
            location: ParamLocation::Body,
            name,
            reason: refusal.reason,
            expected: refusal.expected,
            received: Some(echo(value)),
        });
    }

    fn read<T>(
        &mut self,
        name: &'static str,
        value: Value,
        read: impl FnOnce(&Value) -> Result<T, Refusal>,
    ) -> Option<T> {
        match read(&value) {
            Ok(v) => Some(v),
            Err(refusal) => {
                self.refuse(name.to_owned(), &value, refusal);
                None
            }
        }
    }

    fn problem(self) -> Problem {
        let mut errors = self.errors;
        // Member order, as the body type declares it; unknown members last.
        errors.sort_by_key(|e| e.name.clone());
        let detail = match errors.as_slice() {
            [one] => format!("Body member `{}`: {}", one.name, one.reason),
            many => format!(
                "{} body members were refused: {}",
                many.len(),
                many.iter().map(|e| format!("`{}` {}", e.name, e.reason)).collect::<Vec<_>>().join("; ")
            ),
        };
        Problem { errors: Some(errors), ..Problem::new(ErrorCode::ValidationError, detail) }
    }
}

/// A member's value as a problem echoes it: a string as sent, anything else as compact JSON,
/// cut at [`ECHO_CHARS`].
fn echo(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match text.char_indices().nth(ECHO_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// `a string`, `a number`…: what a value is, for a refusal.
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A string member of at most `max` characters.
pub fn string(max: usize) -> impl Fn(&Value) -> Result<String, Refusal> {
    move |value| match value {
        Value::String(s) if s.chars().count() <= max => Ok(s.clone()),
        Value::String(s) => {
            Err(Refusal::new(format!("has {} characters", s.chars().count()), format!("at most {max} characters")))
        }
        other => Err(Refusal::new(format!("is {}, not a string", kind_of(other)), "a string")),
    }
}

/// A boolean member.
pub fn boolean(value: &Value) -> Result<bool, Refusal> {
    value.as_bool().ok_or_else(|| Refusal::new(format!("is {}, not a boolean", kind_of(value)), "true or false"))
}

/// What a refused body looks like, for the documents.
pub fn example_problem() -> Problem {
    let mut problem = refuse_member(
        "url",
        "https://10.0.0.8/hook",
        Refusal::new(
            "resolves to 10.0.0.8, a private address, which webhooks may not reach",
            "an https URL whose host resolves to public addresses",
        ),
    );
    problem.request_id = "01J9Z7Q4T8ZK3M2N5P6R7S8T9V".to_owned();
    problem
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Sample {
        name: String,
        tags: Option<Vec<String>>,
        on: Option<bool>,
    }

    impl FromBody for Sample {
        const MEMBERS: &'static [&'static str] = &["name", "tags", "on"];
        fn from_body(m: &mut Members) -> Option<Self> {
            let name = m.required("name", string(5));
            let tags = m.each_once("tags", 2, string(3));
            let on = m.optional("on", boolean);
            Some(Self { name: name?, tags: tags?, on: on? })
        }
    }

    fn errors(body: &str) -> Vec<(String, String)> {
        let problem = parse::<Sample>(body.as_bytes()).unwrap_err();
        assert_eq!(problem.status, 400);
        problem
            .errors
            .unwrap()
            .into_iter()
            .map(|e| {
                assert_eq!(e.location, ParamLocation::Body);
                (e.name, e.reason)
            })
            .collect()
    }

    #[test]
    fn a_valid_body_reads_every_member() {
        let s = parse::<Sample>(br#"{"name":"ab","tags":["x","yz"]}"#).unwrap();
        assert_eq!(s, Sample { name: "ab".into(), tags: Some(vec!["x".into(), "yz".into()]), on: None });
    }

    #[test]
    fn each_refusal_names_its_member() {
        assert_eq!(errors(r#"{"tags":[]}"#), vec![("name".into(), "is required".into())]);
        assert_eq!(errors(r#"{"name":7}"#), vec![("name".into(), "is a number, not a string".into())]);
        assert_eq!(
            errors(r#"{"name":"a","tags":["ok","long"],"extra":1,"on":"yes"}"#),
            vec![
                ("extra".into(), "is not a member of this body".into()),
                ("on".into(), "is a string, not a boolean".into()),
                ("tags[1]".into(), "has 4 characters".into()),
            ]
        );
        assert_eq!(errors(r#"{"name":"a","tags":["a","b","c"]}"#), vec![("tags".into(), "has 3 members".into())]);
        assert_eq!(errors(r#"{"name":"a","tags":["a","a"]}"#), vec![("tags[1]".into(), "repeats `tags[0]`".into())]);
        // `null` is no value the documents declare for these members.
        assert_eq!(
            errors(r#"{"name":"a","tags":null,"on":null}"#),
            vec![("on".into(), "is null, not a boolean".into()), ("tags".into(), "is null, not an array".into())]
        );
    }

    #[test]
    fn a_body_that_is_no_object_is_refused_whole() {
        for body in ["", "[1]", "{", "\"x\""] {
            let problem = parse::<Sample>(body.as_bytes()).unwrap_err();
            let errors = problem.errors.unwrap();
            assert_eq!(errors[0].name, WHOLE_BODY, "{body}");
            assert_eq!(errors[0].location, ParamLocation::Body);
        }
    }
}
