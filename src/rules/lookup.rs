//! How `GET /v1/proposals/lookup` judges candidates: the words of a title, the confidence that a
//! title is what the caller named, whether it is sure enough to answer, and the order of the
//! candidates. The store finds them (full-text and trigram indexes on both backends); these rules
//! rank them, identically on both.
use std::collections::HashMap;

use bigdecimal::{BigDecimal, RoundingMode, Zero, num_bigint::BigInt};

use super::tally;
use crate::contract::decimal;
use crate::contract::limits::lookup::{
    CONFIDENCE_DECIMALS, CONFIDENCE_FLOOR, CONFIDENCE_QUERY_WEIGHT, CONFIDENCE_TITLE_WEIGHT, TITLE_MAX_TRIGRAMS,
    TITLE_MAX_WORDS, TYPO_EDITS,
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

/// The distinct three-character pieces of `words` (each word's own, none across words), in order
/// of first appearance, at most [`TITLE_MAX_TRIGRAMS`]: what the trigram indexes are asked for.
/// Words shorter than three characters have none.
pub fn trigrams(words: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in words {
        let chars: Vec<char> = w.chars().collect();
        for piece in chars.windows(3) {
            let piece: String = piece.iter().collect();
            if out.len() == TITLE_MAX_TRIGRAMS {
                return out;
            }
            if !out.contains(&piece) {
                out.push(piece);
            }
        }
    }
    out
}

/// The edits a query word of `len` characters may carry ([`TYPO_EDITS`]).
pub fn typo_allowance(len: usize) -> usize {
    TYPO_EDITS.iter().find(|(min, _)| len >= *min).map_or(0, |(_, edits)| *edits)
}

/// The fewest edits (a character substituted, inserted or dropped, two neighbours swapped) that
/// turn `query` into a non-empty beginning of `word`, when at most `max`; `Some(0)` when `word`
/// starts with `query`.
fn prefix_edits(query: &[char], word: &[char], max: usize) -> Option<usize> {
    if word.starts_with(query) {
        return Some(0);
    }
    // Every beginning of `word` is at least `query.len() - word.len()` edits away.
    if max == 0 || query.is_empty() || word.is_empty() || query.len() > word.len() + max {
        return None;
    }
    // Optimal string alignment distance from `query` to each beginning of `word` (the last row).
    let (n, m) = (query.len(), word.len());
    let mut d = vec![vec![0usize; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=n {
        for j in 1..=m {
            let cost = usize::from(query[i - 1] != word[j - 1]);
            let mut best = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && query[i - 1] == word[j - 2] && query[i - 2] == word[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[n][1..].iter().copied().min().filter(|e| *e <= max)
}

/// How much query word `query` counts for title word `word`: `(numerator, denominator)` of
/// `1 - edits / query characters` when it reaches the word's beginning within its typo
/// allowance, `None` otherwise.
fn credit(query: &[char], word: &[char]) -> Option<(usize, usize)> {
    let edits = prefix_edits(query, word, typo_allowance(query.len()))?;
    Some((query.len() - edits, query.len()))
}

/// The larger of two credits (fractions compared exactly).
fn better(a: Option<(usize, usize)>, b: Option<(usize, usize)>) -> Option<(usize, usize)> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.0 * x.1 > x.0 * y.1 { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// An exact sum of fractions.
struct Sum {
    num: BigInt,
    den: BigInt,
}

impl Sum {
    fn new() -> Self {
        Self { num: BigInt::from(0), den: BigInt::from(1) }
    }

    fn add(&mut self, (num, den): (usize, usize)) {
        let (num, den) = (BigInt::from(num), BigInt::from(den));
        self.num = &self.num * &den + num * &self.den;
        self.den = &self.den * den;
    }
}

/// Confidence that `title` is what `query` (its words) names, in [0, 1], as a plain decimal:
/// `0.8 × (query words found in the title ÷ query words) + 0.2 × (title words matched by a
/// query word ÷ title words)` (weights in `contract::limits::lookup`), a query word matching the
/// title words it is a prefix of. A query word with typos matches a title word whose beginning it
/// reaches within its allowance of edits ([`typo_allowance`]) and counts `1 - edits ÷ its
/// characters` on both sides (each word counts its best match). Computed exactly, then rounded
/// half-even to 4 decimals. Same words → `1`.
pub fn confidence(query: &[String], title: &str) -> String {
    let title_words: Vec<Vec<char>> = words(title).iter().map(|w| w.chars().collect()).collect();
    let query_words: Vec<Vec<char>> = query.iter().map(|w| w.chars().collect()).collect();
    if query_words.is_empty() || title_words.is_empty() {
        return "0".to_owned();
    }
    let credits: Vec<Vec<Option<(usize, usize)>>> =
        query_words.iter().map(|q| title_words.iter().map(|t| credit(q, t)).collect()).collect();
    let mut found = Sum::new();
    for row in &credits {
        if let Some(c) = row.iter().copied().fold(None, better) {
            found.add(c);
        }
    }
    let mut covered = Sum::new();
    for j in 0..title_words.len() {
        if let Some(c) = credits.iter().map(|row| row[j]).fold(None, better) {
            covered.add(c);
        }
    }
    let weight = |w: &str| decimal::parse(w).unwrap_or_else(|_| BigDecimal::zero());
    let (nq, nt) = (BigInt::from(query_words.len()), BigInt::from(title_words.len()));
    // wq × F/nq + wt × C/nt over one denominator: a single (exact where it ends) division.
    let numerator = weight(CONFIDENCE_QUERY_WEIGHT) * BigDecimal::from(&found.num * &nt * &covered.den)
        + weight(CONFIDENCE_TITLE_WEIGHT) * BigDecimal::from(&covered.num * &nq * &found.den);
    let denominator = BigDecimal::from(found.den * nq * covered.den * nt);
    let value = numerator / denominator;
    decimal::plain(&value.with_scale_round(CONFIDENCE_DECIMALS, RoundingMode::HalfEven))
}

/// Whether a title match of `confidence` is sure enough to answer ([`CONFIDENCE_FLOOR`]).
pub fn meets_floor(confidence: &str) -> bool {
    match (decimal::parse(confidence), decimal::parse(CONFIDENCE_FLOOR)) {
        (Ok(c), Ok(floor)) => c >= floor,
        _ => false,
    }
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
    /// identity; candidates never offered, and those no query word matches, are left out.
    pub fn rank<P: Candidate>(self, candidates: Vec<P>) -> Vec<(String, P)> {
        let mut best = self.best;
        let mut ranked: Vec<(BigDecimal, String, P)> = candidates
            .into_iter()
            .filter_map(|p| best.remove(&p.id()).map(|(value, text)| (value, text, p)))
            .filter(|(value, _, _)| !value.is_zero())
            .collect();
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
    fn typos_count_less_than_the_word() {
        let title = "[RFC] Governance Process Upgrade: Establishing a Statute of Limitations for Temperature Checks";
        // `statue` reaches `statut` (or `statu`) in one edit: 5/6; `limitaions` reaches
        // `limitations` in one: 9/10. 0.8 × (5/6 + 9/10)/2 + 0.2 × (5/6 + 9/10)/12.
        assert_eq!(confidence(&w("statue limitaions"), title), "0.7222");
        // A swap of neighbours is one edit; words of eight letters or more may carry two.
        assert_eq!(confidence(&w("temperatrue"), title), confidence(&w("temperatuer"), title));
        assert_eq!(confidence(&w("tmperatrue"), title), "0.6533");
        assert_eq!(confidence(&w("tmpratrue"), title), "0");
        // Words under four letters match only exactly.
        assert_eq!(confidence(&w("rcf"), title), "0");
        assert_eq!(typo_allowance(3), 0);
        assert_eq!(typo_allowance(4), 1);
        assert_eq!(typo_allowance(7), 1);
        assert_eq!(typo_allowance(8), 2);
        // Each word counts its best match: `check` is `check` (1), and `chuck` one edit away (4/5).
        assert_eq!(confidence(&w("check"), "Chuck Check"), "0.98");
    }

    #[test]
    fn prefix_edits_reach_the_closest_beginning() {
        let c = |s: &str| s.chars().collect::<Vec<_>>();
        assert_eq!(prefix_edits(&c("stat"), &c("statute"), 0), Some(0));
        assert_eq!(prefix_edits(&c("sttau"), &c("statute"), 1), Some(1));
        assert_eq!(prefix_edits(&c("statutes"), &c("statute"), 1), Some(1));
        assert_eq!(prefix_edits(&c("statutess"), &c("statute"), 1), None);
        assert_eq!(prefix_edits(&c("zebra"), &c("statute"), 2), None);
    }

    #[test]
    fn the_floor_is_inclusive() {
        assert!(meets_floor(CONFIDENCE_FLOOR));
        assert!(meets_floor("1"));
        assert!(!meets_floor("0.5999"));
        assert!(!meets_floor("not a number"));
        // The example: one word of six, at 0.8 × 1/6 + 0.2 × 1/4.
        let lido = "Proposal for Updating Lido on Ethereum Validator Exits SNOP to v3";
        assert!(!meets_floor(&confidence(&w("zzzz qqqq no such proposal xkcd"), lido)));
    }

    #[test]
    fn trigrams_are_each_words_own_and_bounded() {
        assert_eq!(trigrams(&w("Statue of DAOs")), ["sta", "tat", "atu", "tue", "dao", "aos"]);
        assert_eq!(trigrams(&w("aaaa")), ["aaa"]);
        // A long word of pseudo-random letters: far more distinct pieces than are looked up.
        let mut x: u32 = 7;
        let long: Vec<String> = vec![
            (0..400)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    char::from(b'a' + ((x >> 16) % 26) as u8)
                })
                .collect(),
        ];
        assert_eq!(trigrams(&long).len(), TITLE_MAX_TRIGRAMS);
        assert!(trigrams(&w("v3 of 智猛")).is_empty());
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
        scores.offer(6, "Nothing in common");
        let ranked =
            scores.rank(vec![P(1, 10, "a"), P(2, 20, "b"), P(3, 20, "a"), P(4, 99, "z"), P(5, 99, "x"), P(6, 99, "y")]);
        let order: Vec<_> = ranked.iter().map(|(c, p)| (c.as_str(), p.0)).collect();
        // 3 and 2 tie on score and time: identity decides; 5 was never offered; 6 matches no word.
        assert_eq!(order, [("0.9333", 3), ("0.9333", 2), ("0.9333", 1), ("0.6", 4)]);
    }
}
