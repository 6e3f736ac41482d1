//! How `GET /v1/proposals/lookup` judges candidates: the words of a title, the confidence that a
//! title is what the caller named, and the order of the candidates. The store finds them (full-text
//! indexes on both backends); these rules rank them, identically on both.
use std::collections::HashMap;

use bigdecimal::{BigDecimal, RoundingMode, Zero};

use super::tally;
use crate::contract::decimal;
use crate::contract::limits::lookup::{
    CONFIDENCE_DECIMALS, CONFIDENCE_QUERY_WEIGHT, CONFIDENCE_TITLE_WEIGHT, TITLE_MAX_WORDS,
};

/// The distinct lowercase words of `text`, in order of first appearance: maximal runs of letters
/// and digits. Matches how both indexes cut titles.
pub fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let w = w.to_lowercase();
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// The query words used for a title search: at most [`TITLE_MAX_WORDS`].
pub fn query_words(text: &str) -> Vec<String> {
    let mut w = words(text);
    w.truncate(TITLE_MAX_WORDS);
    w
}

/// Confidence that `title` is what `query` (its words) names, in [0, 1], as a plain decimal:
/// `0.8 × (query words found in the title ÷ query words) + 0.2 × (title words matched by a
/// query word ÷ title words)` (weights in `contract::limits::lookup`), a query word matching the
/// title words it is a prefix of; rounded half-even to 4 decimals. Same words → `1`.
pub fn confidence(query: &[String], title: &str) -> String {
    let title_words = words(title);
    if query.is_empty() || title_words.is_empty() {
        return "0".to_owned();
    }
    let found = query.iter().filter(|q| title_words.iter().any(|t| t.starts_with(q.as_str()))).count();
    let covered = title_words.iter().filter(|t| query.iter().any(|q| t.starts_with(q.as_str()))).count();
    let weight = |w: &str| decimal::parse(w).unwrap_or_else(|_| BigDecimal::zero());
    let value = weight(CONFIDENCE_QUERY_WEIGHT) * BigDecimal::from(found as u64) / BigDecimal::from(query.len() as u64)
        + weight(CONFIDENCE_TITLE_WEIGHT) * BigDecimal::from(covered as u64)
            / BigDecimal::from(title_words.len() as u64);
    decimal::plain(&value.with_scale_round(CONFIDENCE_DECIMALS, RoundingMode::HalfEven))
}

/// The confidence of each of `n` proposals an identifier (a URL, an external id) matches equally.
pub fn identifier_confidence(n: usize) -> String {
    tally::share(&1.into(), &(n.max(1) as u64).into())
}

/// What ranking needs to know of a candidate proposal.
pub trait Candidate {
    fn id(&self) -> i64;
    fn created_ms(&self) -> i64;
    /// `(daoId, source, externalId)`: the last tie-break, so the order is total.
    fn identity(&self) -> (&str, &str, &str);
}

/// The best title confidence of each candidate: a proposal is scored against its own title and
/// the titles of the forum topics linked to it, and the best counts.
pub struct TitleScores<'w> {
    words: &'w [String],
    best: HashMap<i64, (BigDecimal, String)>,
}

impl<'w> TitleScores<'w> {
    pub fn new(words: &'w [String]) -> Self {
        Self { words, best: HashMap::new() }
    }

    /// Scores proposal `id` against `title`, keeping its best score.
    pub fn offer(&mut self, id: i64, title: &str) {
        let text = confidence(self.words, title);
        let value = decimal::parse(&text).unwrap_or_default();
        let entry = self.best.entry(id).or_insert_with(|| (value.clone(), text.clone()));
        if value > entry.0 {
            *entry = (value, text);
        }
    }

    /// The proposals scored so far.
    pub fn ids(&self) -> impl Iterator<Item = i64> + '_ {
        self.best.keys().copied()
    }

    /// The scored `candidates` with their confidence, best first, then newest, then by
    /// identity; candidates never offered are left out.
    pub fn rank<P: Candidate>(self, candidates: Vec<P>) -> Vec<(String, P)> {
        let mut best = self.best;
        let mut ranked: Vec<(BigDecimal, String, P)> =
            candidates.into_iter().filter_map(|p| best.remove(&p.id()).map(|(value, text)| (value, text, p))).collect();
        ranked.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then(b.2.created_ms().cmp(&a.2.created_ms()))
                .then_with(|| a.2.identity().cmp(&b.2.identity()))
        });
        ranked.into_iter().map(|(_, text, p)| (text, p)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        query_words(s)
    }

    #[test]
    fn words_are_cut_at_non_alphanumerics() {
        assert_eq!(words("[RFC] Uniswap’s v3 — DIP-11: 智猛"), ["rfc", "uniswap", "s", "v3", "dip", "11", "智猛"]);
        assert_eq!(words("a A a"), ["a"]);
        assert!(words("🚀 -- !").is_empty());
    }

    #[test]
    fn confidence_follows_the_documented_rule() {
        let title = "[RFC] Governance Process Upgrade: Establishing a Statute of Limitations for Temperature Checks";
        // 2 of 2 query words found; 2 of 12 title words covered: 0.8 + 0.2 × 2/12.
        assert_eq!(confidence(&w("Statute Limitations"), title), "0.8333");
        assert_eq!(confidence(&w("limitations statute"), title), "0.8333");
        assert_eq!(confidence(&w(title), title), "1");
        // Prefixes count: `stat` covers `statute`.
        assert_eq!(confidence(&w("stat limit"), title), "0.8333");
        // Half the query words found (an OR match): 0.4 + 0.2 × 1/12.
        assert_eq!(confidence(&w("statute banana"), title), "0.4167");
        assert_eq!(confidence(&w("banana"), title), "0");
        assert_eq!(confidence(&[], title), "0");
    }

    #[test]
    fn identifier_confidence_splits_between_equal_matches() {
        assert_eq!(identifier_confidence(1), "1");
        assert_eq!(identifier_confidence(2), "0.5");
        assert_eq!(identifier_confidence(3), "0.3333333333");
    }

    struct P(i64, i64, &'static str);

    impl Candidate for P {
        fn id(&self) -> i64 {
            self.0
        }
        fn created_ms(&self) -> i64 {
            self.1
        }
        fn identity(&self) -> (&str, &str, &str) {
            ("dao", "snapshot", self.2)
        }
    }

    #[test]
    fn candidates_rank_by_their_best_title_then_newest_then_identity() {
        let q = w("statute limitations");
        let mut scores = TitleScores::new(&q);
        scores.offer(1, "Statute of Limitations");
        scores.offer(2, "Limitations");
        // A linked topic's title lifts proposal 2 to the best score; a worse one does not lower it.
        scores.offer(2, "Statute of Limitations");
        scores.offer(2, "Nothing");
        scores.offer(3, "Statute of Limitations");
        scores.offer(4, "Limitations");
        let ranked = scores.rank(vec![P(1, 10, "a"), P(2, 20, "b"), P(3, 20, "a"), P(4, 99, "z"), P(5, 99, "x")]);
        let order: Vec<_> = ranked.iter().map(|(c, p)| (c.as_str(), p.0)).collect();
        // 3 and 2 tie on score and time: identity decides; 5 was never offered.
        assert_eq!(order, [("0.9333", 3), ("0.9333", 2), ("0.9333", 1), ("0.6", 4)]);
    }
}
