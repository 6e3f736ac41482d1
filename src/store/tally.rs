//! Exact per-choice tallies computed from ingested votes, for every Snapshot voting type.
//!
//! Used where the upstream did not give per-choice scores (the bundled sample has only
//! `scores_total`) and by the signal rules. The result covers the ingested votes only; callers
//! say so next to it (ingested count vs the upstream total).
use std::collections::BTreeMap;

use bigdecimal::{BigDecimal, RoundingMode, Zero};

use super::decimal;

/// Digits after the point in a share (a ratio is rarely a finite decimal): rounded half-even.
pub const SHARE_DECIMALS: i64 = 10;

/// How a vote's choice text distributes its voting power.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allocation {
    /// All power to one choice (single-choice, basic, and the first preference of ranked-choice).
    Single(u32),
    /// All power to each listed choice (approval).
    Each(Vec<u32>),
    /// Power split by weights (weighted, quadratic): `{'2': 1, '3': 3}`.
    Weighted(Vec<(u32, BigDecimal)>),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unreadable choice `{0}`")]
pub struct ChoiceError(pub String);

/// Reads a choice as Snapshot records it: `3`, `[1,3]`, `{'2': 1}` / `{"2": 1}`.
pub fn parse_choice(voting_type: Option<&str>, text: &str) -> Result<Allocation, ChoiceError> {
    let t = text.trim();
    let err = || ChoiceError(text.to_owned());
    let index = |s: &str| s.trim().trim_matches(['\'', '"']).parse::<u32>().map_err(|_| err());
    if let Some(inner) = t.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
        let mut parts = Vec::new();
        for pair in inner.split(',').filter(|p| !p.trim().is_empty()) {
            let (k, v) = pair.split_once(':').ok_or_else(err)?;
            let w = decimal::parse(v.trim()).map_err(|_| err())?;
            parts.push((index(k)?, w));
        }
        return if parts.is_empty() { Err(err()) } else { Ok(Allocation::Weighted(parts)) };
    }
    if let Some(inner) = t.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        let list = inner.split(',').filter(|p| !p.trim().is_empty()).map(index).collect::<Result<Vec<_>, _>>()?;
        let first = *list.first().ok_or_else(err)?;
        return Ok(match voting_type {
            Some("ranked-choice") => Allocation::Single(first),
            _ => Allocation::Each(list),
        });
    }
    Ok(Allocation::Single(index(t)?))
}

/// Running per-choice totals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Choice index (1-based, as Snapshot numbers them) → power.
    pub scores: BTreeMap<u32, BigDecimal>,
    /// Sum of the voting power of the counted votes (not of `scores`: approval counts a vote for
    /// each choice it approves).
    pub total_power: BigDecimal,
    pub votes_counted: u64,
    /// Votes whose choice could not be read; reported, never guessed.
    pub votes_unreadable: u64,
}

impl Tally {
    pub fn add(&mut self, voting_type: Option<&str>, choice: &str, voting_power: &str) {
        let (Ok(allocation), Ok(power)) = (parse_choice(voting_type, choice), decimal::parse(voting_power)) else {
            self.votes_unreadable += 1;
            return;
        };
        match allocation {
            Allocation::Single(c) => self.credit(c, power.clone()),
            Allocation::Each(cs) => cs.into_iter().for_each(|c| self.credit(c, power.clone())),
            Allocation::Weighted(parts) => {
                let sum: BigDecimal = parts.iter().map(|(_, w)| w.clone()).sum();
                if sum.is_zero() {
                    self.votes_unreadable += 1;
                    return;
                }
                for (c, w) in parts {
                    self.credit(c, &power * w / &sum);
                }
            }
        }
        self.total_power += power;
        self.votes_counted += 1;
    }

    fn credit(&mut self, choice: u32, power: BigDecimal) {
        *self.scores.entry(choice).or_insert_with(BigDecimal::zero) += power;
    }

    /// Sum of the per-choice scores.
    pub fn scores_sum(&self) -> BigDecimal {
        self.scores.values().sum()
    }

    /// Choices ordered by score, highest first (ties: lower index first).
    pub fn ranked(&self) -> Vec<(u32, BigDecimal)> {
        let mut v: Vec<(u32, BigDecimal)> = self.scores.iter().map(|(c, s)| (*c, s.clone())).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }
}

/// `part / whole` rounded half-even to [`SHARE_DECIMALS`], as a plain decimal string; `0` when
/// `whole` is zero.
pub fn share(part: &BigDecimal, whole: &BigDecimal) -> String {
    if whole.is_zero() {
        return "0".to_owned();
    }
    decimal::plain(&(part / whole).with_scale_round(SHARE_DECIMALS, RoundingMode::HalfEven))
}

/// Exact plain text of a score: weighted splits can produce long fractions; the division is
/// carried to BigDecimal's precision and trailing zeros dropped.
pub fn score_text(score: &BigDecimal) -> String {
    decimal::plain(score)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> BigDecimal {
        decimal::parse(s).unwrap()
    }

    #[test]
    fn reads_every_choice_shape() {
        assert_eq!(parse_choice(Some("basic"), "3").unwrap(), Allocation::Single(3));
        assert_eq!(parse_choice(Some("approval"), "[1,3]").unwrap(), Allocation::Each(vec![1, 3]));
        assert_eq!(parse_choice(Some("ranked-choice"), "[2,1,3]").unwrap(), Allocation::Single(2));
        assert_eq!(parse_choice(Some("weighted"), "{'2': 1}").unwrap(), Allocation::Weighted(vec![(2, d("1"))]));
        assert_eq!(
            parse_choice(Some("weighted"), r#"{"1": 250, "2": 16350}"#).unwrap(),
            Allocation::Weighted(vec![(1, d("250")), (2, d("16350"))])
        );
        for bad in ["", "x", "[]", "{}", "{'a': 1}", "{'1': x}"] {
            assert!(parse_choice(Some("weighted"), bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn tallies_are_exact() {
        let mut t = Tally::default();
        t.add(Some("weighted"), "{'1': 1, '2': 3}", "2.0");
        t.add(Some("weighted"), "{'2': 1}", "2.11e-16");
        t.add(Some("weighted"), "garbage", "5");
        assert_eq!(t.scores[&1], d("0.5"));
        assert_eq!(t.scores[&2], d("1.500000000000000211"));
        assert_eq!(t.total_power, d("2.000000000000000211"));
        assert_eq!(t.votes_counted, 2);
        assert_eq!(t.votes_unreadable, 1);
        assert_eq!(t.ranked()[0].0, 2);
        assert_eq!(share(&t.scores[&1], &t.total_power), "0.25");
        assert_eq!(share(&d("1"), &d("3")), "0.3333333333");
        assert_eq!(share(&d("1"), &d("0")), "0");
    }

    #[test]
    fn approval_counts_power_once_in_the_total() {
        let mut t = Tally::default();
        t.add(Some("approval"), "[1,2]", "10");
        assert_eq!(t.total_power, d("10"));
        assert_eq!(t.scores_sum(), d("20"));
    }
}
