//! Exact per-choice tallies computed from ingested votes, for every Snapshot voting type.
//!
//! Used where the upstream did not give per-choice scores (the bundled sample has only
//! `scores_total`) and by the signal rules. The result covers the ingested votes only; callers
//! say so next to it (ingested count vs the upstream total).
use std::collections::BTreeMap;

use bigdecimal::{BigDecimal, RoundingMode, Zero};

use crate::contract::decimal::{self, SHARE_DECIMALS};
use crate::contract::voting::{TallyMethod, tally_method};

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
        return Ok(match tally_method(voting_type) {
            // A ranked ballot gives outright only its first preference.
            TallyMethod::FirstPreferences => Allocation::Single(first),
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
    /// How many counted votes gave each choice a share: a choice is in `scores` exactly while
    /// some vote gives it one, which lets a stored tally take votes back out ([`Tally::remove`]).
    pub allocations: BTreeMap<u32, u64>,
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
        *self.allocations.entry(choice).or_default() += 1;
    }

    /// Adds every vote of `other` (a tally of other votes of the same proposal).
    pub fn merge(&mut self, other: &Tally) {
        for (c, s) in &other.scores {
            *self.scores.entry(*c).or_insert_with(BigDecimal::zero) += s;
        }
        for (c, n) in &other.allocations {
            *self.allocations.entry(*c).or_default() += n;
        }
        self.total_power += &other.total_power;
        self.votes_counted += other.votes_counted;
        self.votes_unreadable += other.votes_unreadable;
    }

    /// Takes out every vote of `other`, which must all have been added to this tally (a stored
    /// tally minus the old values of votes that changed). Exact: the shares removed are the very
    /// quotients that were added. `None` when `other` holds votes this tally does not.
    pub fn remove(&mut self, other: &Tally) -> Option<()> {
        for (c, n) in &other.allocations {
            let left = self.allocations.get(c)?.checked_sub(*n)?;
            let score = self.scores.get_mut(c)?;
            *score -= other.scores.get(c)?;
            if left == 0 {
                self.allocations.remove(c);
                self.scores.remove(c);
            } else {
                self.allocations.insert(*c, left);
            }
        }
        self.total_power -= &other.total_power;
        self.votes_counted = self.votes_counted.checked_sub(other.votes_counted)?;
        self.votes_unreadable = self.votes_unreadable.checked_sub(other.votes_unreadable)?;
        Some(())
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
        assert_eq!(parse_choice(Some("copeland"), "[3,1,2]").unwrap(), Allocation::Single(3), "first preference");
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
    fn votes_taken_out_leave_the_tally_of_the_rest() {
        let votes = [
            ("{'1': 1, '2': 3}", "2.0"),
            ("{'2': 1}", "2.11e-16"),
            ("{'3': 7}", "0.333"),
            ("garbage", "5"),
            ("{'1': 2, '3': 1}", "10"),
        ];
        let tally_of = |vs: &[(&str, &str)]| {
            let mut t = Tally::default();
            vs.iter().for_each(|(c, p)| t.add(Some("weighted"), c, p));
            t
        };
        let all = tally_of(&votes);
        // Without the third and fourth votes: choice 3 keeps the share of the fifth.
        let mut rest = all.clone();
        rest.remove(&tally_of(&votes[2..4])).unwrap();
        assert_eq!(rest, tally_of(&[votes[0], votes[1], votes[4]]));
        // Without the last two: choice 3 is no longer given anything and leaves the tally.
        let mut rest = all.clone();
        rest.remove(&tally_of(&votes[3..])).unwrap();
        let expected = tally_of(&votes[..3]);
        assert_eq!(rest.scores.keys().collect::<Vec<_>>(), expected.scores.keys().collect::<Vec<_>>());
        let mut merged = tally_of(&votes[..2]);
        merged.merge(&tally_of(&votes[2..]));
        assert_eq!(merged, all);
        assert!(tally_of(&votes[..1]).remove(&tally_of(&votes[2..3])).is_none(), "nothing to take out");
    }

    #[test]
    fn approval_counts_power_once_in_the_total() {
        let mut t = Tally::default();
        t.add(Some("approval"), "[1,2]", "10");
        assert_eq!(t.total_power, d("10"));
        assert_eq!(t.scores_sum(), d("20"));
    }
}
