//! The one timestamp format of every response: RFC 3339 UTC with milliseconds and `Z`.
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
