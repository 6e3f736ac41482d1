//! Sort keys for exact decimals. Both backends must sort by voting power and amounts, and
//! neither SQLite nor a portable column type holds a 78-digit integer with 30 decimals exactly.
//! So each value is stored twice: the exact text as received (`contract::decimal`), and a short
//! text key that sorts as the number does (`vp_sort`, [`sort_key`]).
use bigdecimal::{BigDecimal, Signed};

use crate::contract::decimal::{DecimalError, parse};

/// Integer digits in a sort key: enough for any uint256 (78 digits).
const SORT_INT_DIGITS: usize = 78;
/// Fraction digits in a sort key: Snapshot keeps DECIMAL(64,30). Digits beyond this affect the
/// order only, never the stored value.
const SORT_FRAC_DIGITS: usize = 30;

/// Parses a non-negative amount and returns it with its sort key.
pub fn parse_amount(text: &str) -> Result<(BigDecimal, String), DecimalError> {
    let value = parse(text)?;
    let key = sort_key(&value)?;
    Ok((value, key))
}

/// Offset of a key's exponent: keeps it three digits wide for every exponent a key can carry
/// (from -29, for 1e-30, up to 78, for a uint256).
const KEY_EXPONENT_OFFSET: usize = 200;

/// A short string whose lexicographic order is the numeric order of non-negative values.
///
/// The value, cut after [`SORT_FRAC_DIGITS`] fraction digits, is written as `0.d₁d₂… × 10^e`
/// with `d₁ ≠ 0`: the key is `e + 200` in three digits, then the significant digits without
/// trailing zeros (`1234.5` → `20412345`, `0.05` → `1995`); zero is `000`. A larger exponent
/// is a larger number, and with equal exponents the digits compare as the numbers do, a prefix
/// being the smaller. Typical voting powers take 10 to 25 bytes (the fixed-width keys of
/// migration 1 took 109; migration 6 rewrote them).
pub fn sort_key(value: &BigDecimal) -> Result<String, DecimalError> {
    if value.is_negative() {
        return Err(DecimalError::Negative(value.to_string()));
    }
    let s = key_floor(value).to_plain_string();
    let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
    if int.len() > SORT_INT_DIGITS {
        return Err(DecimalError::TooLarge(value.to_string()));
    }
    let int = int.trim_start_matches('0');
    let (exponent, digits) = if !int.is_empty() {
        (KEY_EXPONENT_OFFSET + int.len(), format!("{int}{frac}"))
    } else {
        let significant = frac.trim_start_matches('0');
        if significant.is_empty() {
            return Ok("000".to_owned());
        }
        (KEY_EXPONENT_OFFSET - (frac.len() - significant.len()), significant.to_owned())
    };
    Ok(format!("{exponent:03}{}", digits.trim_end_matches('0')))
}

/// The value a sort key stands for: `value` cut after [`SORT_FRAC_DIGITS`] fraction digits.
/// Values with the same key differ by less than 10⁻³⁰.
pub fn key_floor(value: &BigDecimal) -> BigDecimal {
    value.with_scale_round(SORT_FRAC_DIGITS as i64, bigdecimal::RoundingMode::Down)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_keys_sort_like_numbers() {
        let values = [
            "0",
            "2.11e-16",
            "1.6e-17",
            "0.04",
            "2",
            "10",
            "857.9874092673234",
            "2755022.0714428956",
            "345043375299837213698988",
            "0.1",
            "0.101",
            "0.11",
            "1.01",
            "1.1",
            "9.99",
            "99",
            "100",
            "100.5",
            "1e-30",
            "3e-30",
        ];
        let mut by_key: Vec<_> = values.iter().map(|v| (sort_key(&parse(v).unwrap()).unwrap(), *v)).collect();
        by_key.sort();
        let mut by_num: Vec<_> = values.iter().map(|v| (parse(v).unwrap(), *v)).collect();
        by_num.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(by_key.iter().map(|x| x.1).collect::<Vec<_>>(), by_num.iter().map(|x| x.1).collect::<Vec<_>>());
        let key = |v: &str| sort_key(&parse(v).unwrap()).unwrap();
        assert_eq!(key("0"), "000");
        assert_eq!(key("1"), "2011");
        assert_eq!(key("1234.5"), "20412345");
        assert_eq!(key("0.05"), "1995");
        assert_eq!(key("2.11e-16"), "185211");
        assert_eq!(key("1e-30"), "1711");
        assert_eq!(key("1e-31"), "000", "below the key's resolution");
        assert_eq!(key("100"), key("100.000"));
        assert_eq!(key(&"9".repeat(78)).len(), 3 + 78);
        assert!(sort_key(&parse(&"1".repeat(79)).unwrap()).is_err());
        assert_eq!(key_floor(&parse("1.0000000000000000000000000000009").unwrap()), parse("1").unwrap());
    }
}
