//! The one timestamp format of every response: RFC 3339 UTC with milliseconds and `Z`.
use std::borrow::Cow;

use poem_openapi::registry::{MetaSchema, MetaSchemaRef};
use poem_openapi::types::{ParseError, ParseFromJSON, ParseResult, ToJSON, Type};
use serde::Serialize;
use serde_json::Value;
use time::{OffsetDateTime, format_description::FormatItem, macros::format_description};

const FORMAT: &[FormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

/// Epoch milliseconds → `2026-11-22T10:00:00.000Z`.
pub fn rfc3339_ms(epoch_ms: i64) -> String {
    let nanos = i128::from(epoch_ms) * 1_000_000;
    OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.format(FORMAT).ok())
        // Out of the representable range: only reachable with corrupted data; keep it visible.
        .unwrap_or_else(|| format!("invalid-timestamp({epoch_ms})"))
}

/// An RFC 3339 timestamp (any offset, any precision) → epoch milliseconds.
pub fn parse_rfc3339_ms(text: &str) -> Option<i64> {
    let t = OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

/// A timestamp as every answer carries it (`2026-11-22T10:00:00.000Z`), documented as a string
/// of `format: date-time` so SDKs generate a date type for it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Timestamp(String);

impl Timestamp {
    pub fn from_ms(epoch_ms: i64) -> Self {
        Self(rfc3339_ms(epoch_ms))
    }

    /// A timestamp written in the code (documentation examples), checked to be one.
    pub fn known(text: &'static str) -> Self {
        debug_assert!(parse_rfc3339_ms(text).is_some(), "`{text}` is not RFC 3339");
        Self(text.to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Type for Timestamp {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> Cow<'static, str> {
        "string_date-time".into()
    }

    fn schema_ref() -> MetaSchemaRef {
        MetaSchemaRef::Inline(Box::new(MetaSchema::new_with_format("string", "date-time")))
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        Box::new(self.as_raw_value().into_iter())
    }
}

impl ToJSON for Timestamp {
    fn to_json(&self) -> Option<Value> {
        Some(Value::String(self.0.clone()))
    }
}

impl ParseFromJSON for Timestamp {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        match value {
            Some(Value::String(text)) => match parse_rfc3339_ms(&text) {
                Some(ms) => Ok(Self::from_ms(ms)),
                None => Err(ParseError::custom(format!("`{text}` is not an RFC 3339 timestamp"))),
            },
            other => Err(ParseError::expected_type(other.unwrap_or_default())),
        }
    }
}

pub fn now_ms() -> i64 {
    let now = OffsetDateTime::now_utc();
    (now.unix_timestamp_nanos() / 1_000_000) as i64
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_with_millis_and_z() {
        assert_eq!(super::rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::rfc3339_ms(1_795_860_000_123), "2026-11-28T10:00:00.123Z");
    }
}
