//! Exact decimals, as the API writes them. Voting power and amounts arrive as text (Snapshot
//! floats, wei integers) and stay text end to end; arithmetic uses `BigDecimal`, never `f64`.
use std::str::FromStr;

use bigdecimal::{BigDecimal, Zero};

/// Digits after the point in a share (a ratio is rarely a finite decimal): rounded half-even.
/// Published prose quotes it as `{{SHARE_DECIMALS}}`.
pub const SHARE_DECIMALS: i64 = 10;

/// What `votingPowerFromFloat` means, stated once: every such member's description is this
/// text (doc comments quote it as `{{VOTING_POWER_FROM_FLOAT}}`).
pub const FROM_FLOAT_TEXT: &str = "True when the upstream served this voting power as a binary \
    floating-point number (Snapshot's `vp`); false when it arrived exact (an on-chain weight or \
    delegated balance). Either way `votingPower` is exactly the text received, never re-rounded \
    here, but a float-origin value may already have been rounded upstream and may come in exponent \
    form: `2.11e-16` means 2.11 × 10^-16. Parse it as a decimal (Python `decimal.Decimal`, \
    JavaScript big.js), never as a binary float.";

/// The sentence the documents' introductions say about float-origin powers.
pub const FROM_FLOAT_SUMMARY: &str = "A voting power that arrived as a float upstream (Snapshot's \
    `vp`) is kept as the exact text received and flagged by `votingPowerFromFloat` on every row that \
    carries one; it may be in exponent form (`2.11e-16` is 2.11 × 10^-16): parse it as a decimal, \
    never as a binary float.";

/// Delegated power is the raw on-chain integer (`votingPowerRaw`) scaled by the token's decimals,
/// here, exactly: it never arrives as a float, so its `votingPowerFromFloat` is always this.
pub const DELEGATED_POWER_FROM_FLOAT: bool = false;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecimalError {
    #[error("`{0}` is not a decimal number")]
    NotANumber(String),
    #[error("`{0}` is negative")]
    Negative(String),
    #[error("`{0}` is too large")]
    TooLarge(String),
}

/// Parses plain or scientific decimal text exactly (`2.11e-16`, `345043375299837213698988`).
pub fn parse(text: &str) -> Result<BigDecimal, DecimalError> {
    let t = text.trim();
    let ok_chars = !t.is_empty()
        && t.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        && t.chars().any(|c| c.is_ascii_digit());
    if !ok_chars || t != text {
        return Err(DecimalError::NotANumber(text.to_owned()));
    }
    BigDecimal::from_str(t).map_err(|_| DecimalError::NotANumber(text.to_owned()))
}

/// The plain decimal form without exponent or trailing fractional zeros: `2.11e-16` →
/// `0.000000000000000211`, `2.0` → `2`.
pub fn plain(value: &BigDecimal) -> String {
    if value.is_zero() {
        return "0".to_owned();
    }
    let s = value.normalized().to_plain_string();
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_owned() } else { s }
}

/// `raw / 10^decimals`, exact: a wei integer as a token amount.
pub fn scale_down(raw: &str, decimals: u32) -> Result<BigDecimal, DecimalError> {
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(DecimalError::NotANumber(raw.to_owned()));
    }
    let int = bigdecimal::num_bigint::BigInt::from_str(raw).map_err(|_| DecimalError::NotANumber(raw.to_owned()))?;
    Ok(BigDecimal::new(int, i64::from(decimals)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scientific_notation_is_exact() {
        assert_eq!(plain(&parse("2.11e-16").unwrap()), "0.000000000000000211");
        assert_eq!(plain(&parse("5.71815875e-05").unwrap()), "0.0000571815875");
        assert_eq!(plain(&parse("2.0").unwrap()), "2");
        assert_eq!(plain(&parse("2755022.0714428956").unwrap()), "2755022.0714428956");
    }

    #[test]
    fn wei_integers_survive() {
        let v = parse("345043375299837213698988").unwrap();
        assert_eq!(plain(&v), "345043375299837213698988");
        assert_eq!(plain(&scale_down("345043375299837213698988", 18).unwrap()), "345043.375299837213698988");
        assert!(scale_down("12a", 18).is_err());
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "abc", "1,5", "NaN", "inf", " 1", "0x10"] {
            assert!(parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }
}
