//! How `GET /v1/proposals/lookup` judges candidates: the words of a title, the confidence that a
//! title is what the caller named, whether it is sure enough to answer, and the order of the
//! candidates. The store finds them (full-text and trigram indexes on both backends); these rules
//! rank them, identically on both.
use std::collections::HashMap;

use bigdecimal::{BigDecimal, RoundingMode, Zero, num_bigint::BigInt};

use super::tally;
use crate::contract::decimal;
use crate::contract::limits::lookup::{
    COMMON_WORD_SHARE, CONFIDENCE_DECIMALS, CONFIDENCE_FLOOR, CONFIDENCE_QUERY_WEIGHT, CONFIDENCE_TITLE_WEIGHT,
    TITLE_MARGIN, TITLE_MAX_TRIGRAMS, TITLE_MAX_WORDS, TYPO_EDITS,
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

/// An exact fraction, positive denominator.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Share {
    num: BigInt,
    den: BigInt,
}

impl Share {
    fn zero() -> Self {
        Self { num: BigInt::from(0), den: BigInt::from(1) }
    }

    /// `self - other ≥ at_least`, exactly.
    fn exceeds(&self, other: &Self, at_least: &BigDecimal) -> bool {
        let diff = BigDecimal::from(&self.num * &other.den - &other.num * &self.den);
        diff >= at_least * BigDecimal::from(&self.den * &other.den)
    }
}

/// How one title fits a query: the two shares the confidence weighs, exactly, and whether the
/// query names every word of the title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fit {
    /// Query words found in the title (each counting its credit) ÷ query words.
    found: Share,
    /// Title words matched by a query word (each counting its best credit) ÷ title words.
    covered: Share,
    /// Every word of the title is matched by a query word (typos within their allowance count).
    named_in_full: bool,
}

impl Fit {
    /// How `title` fits `query` (its words); see [`confidence`].
    pub fn of(query: &[String], title: &str) -> Self {
        let title_words: Vec<Vec<char>> = words(title).iter().map(|w| w.chars().collect()).collect();
        let query_words: Vec<Vec<char>> = query.iter().map(|w| w.chars().collect()).collect();
        if query_words.is_empty() || title_words.is_empty() {
            return Self { found: Share::zero(), covered: Share::zero(), named_in_full: false };
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
        let mut named_in_full = true;
        for j in 0..title_words.len() {
            match credits.iter().map(|row| row[j]).fold(None, better) {
                Some(c) => covered.add(c),
                None => named_in_full = false,
            }
        }
        let (nq, nt) = (BigInt::from(query_words.len()), BigInt::from(title_words.len()));
        Self {
            found: Share { num: found.num, den: found.den * nq },
            covered: Share { num: covered.num, den: covered.den * nt },
            named_in_full,
        }
    }

    /// The confidence: `wq × found + wt × covered`, computed exactly, then rounded half-even to
    /// [`CONFIDENCE_DECIMALS`].
    pub fn confidence(&self) -> String {
        let weight = |w: &str| decimal::parse(w).unwrap_or_else(|_| BigDecimal::zero());
        let (f, c) = (&self.found, &self.covered);
        // wq × Fn/Fd + wt × Cn/Cd over one denominator: a single (exact where it ends) division.
        let numerator = weight(CONFIDENCE_QUERY_WEIGHT) * BigDecimal::from(&f.num * &c.den)
            + weight(CONFIDENCE_TITLE_WEIGHT) * BigDecimal::from(&c.num * &f.den);
        let value = numerator / BigDecimal::from(&f.den * &c.den);
        decimal::plain(&value.with_scale_round(CONFIDENCE_DECIMALS, RoundingMode::HalfEven))
    }

    /// Whether the query names every word of the title.
    pub fn named_in_full(&self) -> bool {
        self.named_in_full
    }

    /// Whether a title that fits like `self` stands clearly above one that fits like `other`
    /// ([`TITLE_MARGIN`]): the query's words fit it at least the margin better (query words
    /// found ÷ query words), or at least as well while the query names every word of this title
    /// and not every word of the other.
    pub fn stands_above(&self, other: &Fit) -> bool {
        let margin = decimal::parse(TITLE_MARGIN).unwrap_or_else(|_| BigDecimal::zero());
        self.found.exceeds(&other.found, &margin)
            || (self.named_in_full && !other.named_in_full && self.found.exceeds(&other.found, &BigDecimal::zero()))
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
    Fit::of(query, title).confidence()
}

/// How common the words of one DAO's titles are ([`COMMON_WORD_SHARE`]): a word held by more
/// than that share of the DAO's titles, and by more than one, is common; so are the words every
/// title of the DAO stands for without holding them: the DAO's id, names and ticker (each title
/// is the DAO's) and the kind of item titled (each is a `proposal`). Common words identify no
/// title.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vocabulary {
    /// The DAO's titles.
    titles: u64,
    /// How many of them hold each word; a word not listed is held by none.
    holding: HashMap<String, u64>,
    /// The words every title stands for: the DAO's id, names and ticker, the kind of item.
    names: Vec<String>,
}

impl Vocabulary {
    /// The DAO with `titles` titles, `holding` (word, titles holding it) and `names` (its id,
    /// name, ticker, the kind of item titled: each cut into [`words`]).
    pub fn new<'n>(
        titles: u64,
        holding: impl IntoIterator<Item = (String, u64)>,
        names: impl IntoIterator<Item = &'n str>,
    ) -> Self {
        Self { titles, holding: holding.into_iter().collect(), names: names.into_iter().flat_map(words).collect() }
    }

    /// Whether title word `word` (lowercase) is common in the DAO.
    pub fn is_common(&self, word: &str) -> bool {
        if self.names.iter().any(|n| n == word) {
            return true;
        }
        let held = self.holding.get(word).copied().unwrap_or(0);
        let share = decimal::parse(COMMON_WORD_SHARE).unwrap_or_else(|_| BigDecimal::zero());
        let (held_by, bar) = (BigDecimal::from(held), share * BigDecimal::from(self.titles));
        held > 1 && held_by > bar
    }
}

/// The words of a title (`title`, cut by [`words`]) that some word of `query` matches, as the
/// confidence matches them (a prefix, or a beginning reached within the typo allowance): the
/// words whose commonness [`identification`] asks for.
pub fn matched_words(query: &[String], title: &[String]) -> Vec<String> {
    let query: Vec<Vec<char>> = query.iter().map(|q| q.chars().collect()).collect();
    title
        .iter()
        .filter(|t| {
            let t: Vec<char> = t.chars().collect();
            query.iter().any(|q| credit(q, &t).is_some())
        })
        .cloned()
        .collect()
}

/// The query words a title is named by, split by what they can say about it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identification {
    /// Words matching only words of the title that are not common: they tell it apart.
    pub identifying: Vec<String>,
    /// Words matching a common word of the title: they tell nothing apart, since a query word
    /// is held by at least the titles holding any word it matches.
    pub common: Vec<String>,
}

/// Which words of `query` identify the title of words `title` in a DAO of `vocabulary`; query
/// words matching no word of the title are in neither list.
pub fn identification(query: &[String], title: &[String], vocabulary: &Vocabulary) -> Identification {
    let mut out = Identification::default();
    for q in query {
        let matched = matched_words(std::slice::from_ref(q), title);
        if matched.is_empty() {
            continue;
        }
        if matched.iter().any(|t| vocabulary.is_common(t)) {
            out.common.push(q.clone());
        } else {
            out.identifying.push(q.clone());
        }
    }
    out
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
pub trait Rankable {
    fn id(&self) -> i64;
    fn created_ms(&self) -> i64;
    /// `(daoId, source, externalId)`: the last tie-break, so the order is total.
    fn identity(&self) -> (&str, &str, &str);
}

/// What a candidate's best title scored.
#[derive(Debug, Clone)]
struct Scored {
    value: BigDecimal,
    text: String,
    fit: Fit,
    /// The words of the title that scored it.
    title: Vec<String>,
}

/// The best title confidence of each candidate: a proposal is scored against its own title and
/// the titles of the forum topics linked to it, and the best counts.
pub struct TitleScores<'w> {
    words: &'w [String],
    best: HashMap<i64, Scored>,
}

impl<'w> TitleScores<'w> {
    pub fn new(words: &'w [String]) -> Self {
        Self { words, best: HashMap::new() }
    }

    /// Scores proposal `id` against `title`, keeping its best score.
    pub fn offer(&mut self, id: i64, title: &str) {
        let fit = Fit::of(self.words, title);
        let text = fit.confidence();
        let value = decimal::parse(&text).unwrap_or_default();
        let scored = Scored { value, text, fit, title: words(title) };
        match self.best.get_mut(&id) {
            Some(entry) if scored.value > entry.value => *entry = scored,
            Some(_) => {}
            None => {
                self.best.insert(id, scored);
            }
        }
    }

    /// The proposals scored so far.
    pub fn ids(&self) -> impl Iterator<Item = i64> + '_ {
        self.best.keys().copied()
    }

    /// The scored `candidates` with their confidence, best first, then newest, then by
    /// identity; candidates never offered, and those no query word matches, are left out.
    pub fn rank<P: Rankable>(self, candidates: Vec<P>) -> Vec<Ranked<P>> {
        let mut best = self.best;
        let mut ranked: Vec<(BigDecimal, Ranked<P>)> = candidates
            .into_iter()
            .filter_map(|p| {
                best.remove(&p.id())
                    .map(|s| (s.value, Ranked { confidence: s.text, fit: s.fit, title: s.title, proposal: p }))
            })
            .filter(|(value, _)| !value.is_zero())
            .collect();
        ranked.sort_by(|(a, ra), (b, rb)| {
            b.cmp(a)
                .then(rb.proposal.created_ms().cmp(&ra.proposal.created_ms()))
                .then_with(|| ra.proposal.identity().cmp(&rb.proposal.identity()))
        });
        ranked.into_iter().map(|(_, r)| r).collect()
    }
}

/// A ranked candidate of a title lookup.
#[derive(Debug, Clone)]
pub struct Ranked<P> {
    /// [`confidence`] of its best title.
    pub confidence: String,
    fit: Fit,
    title: Vec<String>,
    pub proposal: P,
}

impl<P: Rankable> Ranked<P> {
    /// `(confidence, proposal)`.
    pub fn into_pair(self) -> (String, P) {
        (self.confidence, self.proposal)
    }

    /// The words of the title it was scored by.
    pub fn title_words(&self) -> &[String] {
        &self.title
    }

    /// The same title (its words) in the same DAO: a proposal posted twice, or in two sources,
    /// which no title can tell apart.
    fn same_title(&self, other: &Self) -> bool {
        self.title == other.title && self.proposal.identity().0 == other.proposal.identity().0
    }
}

/// Whether a title lookup answers its best candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The best is sure enough and stands clearly above every other title.
    Match,
    /// Nothing was found, or the best is below [`CONFIDENCE_FLOOR`].
    BelowFloor,
    /// The best is above the floor but does not stand clearly above `rivals` other proposals
    /// ([`Fit::stands_above`], [`TITLE_MARGIN`]).
    Ambiguous { rivals: usize },
}

/// Judges `ranked` (best first, as [`TitleScores::rank`] orders them): the best is answered only
/// at or above the floor and when it stands clearly above every other candidate, the same title
/// in the same DAO excepted.
pub fn verdict<P: Rankable>(ranked: &[Ranked<P>]) -> Verdict {
    let Some((best, others)) = ranked.split_first() else {
        return Verdict::BelowFloor;
    };
    if !meets_floor(&best.confidence) {
        return Verdict::BelowFloor;
    }
    let rivals = others.iter().filter(|o| !best.same_title(o) && !best.fit.stands_above(&o.fit)).count();
    if rivals == 0 { Verdict::Match } else { Verdict::Ambiguous { rivals } }
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

    impl Rankable for P {
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
        let order: Vec<_> = ranked.iter().map(|r| (r.confidence.as_str(), r.proposal.0)).collect();
        // 3 and 2 tie on score and time: identity decides; 5 was never offered; 6 matches no word.
        assert_eq!(order, [("0.9333", 3), ("0.9333", 2), ("0.9333", 1), ("0.6", 4)]);
    }

    /// A candidate in a DAO, for the same-title rule.
    struct D(i64, &'static str);

    impl Rankable for D {
        fn id(&self) -> i64 {
            self.0
        }
        fn created_ms(&self) -> i64 {
            self.0
        }
        fn identity(&self) -> (&str, &str, &str) {
            (self.1, "snapshot", "x")
        }
    }

    /// Ranks `titles` (`(id, dao, title)`, newest last) for `query` and judges the best.
    fn judge(query: &str, titles: &[(i64, &'static str, &str)]) -> (Verdict, Vec<(String, i64)>) {
        let q = w(query);
        let mut scores = TitleScores::new(&q);
        for (id, _, title) in titles {
            scores.offer(*id, title);
        }
        let ranked = scores.rank(titles.iter().map(|(id, dao, _)| D(*id, dao)).collect());
        (verdict(&ranked), ranked.into_iter().map(|r| (r.confidence, r.proposal.0)).collect())
    }

    const PHASE: &str = "Phase 1 of the $COMP Distribution is Live Following a Successful DAO Vote!";
    const AFTER: &str = "After a Successful DAO Vote, Compound decided to Launch the 1 Phase of the $COMP Distribution";

    #[test]
    fn a_common_word_identifies_nothing() {
        // The example: `vote` is in four titles (three the same re-posted one); the
        // shortest title wins on confidence by 0.0021, but the word fits every title alike.
        let titles = [(1, "compound", AFTER), (2, "compound", AFTER), (3, "compound", AFTER), (4, "compound", PHASE)];
        let (v, order) = judge("vote", &titles);
        assert_eq!(order[0], ("0.8154".to_owned(), 4));
        assert_eq!(order[1].0, "0.8133");
        assert_eq!(v, Verdict::Ambiguous { rivals: 3 });
        assert!(!Fit::of(&w("vote"), PHASE).stands_above(&Fit::of(&w("vote"), AFTER)));
        // Both fit every word of `successful dao vote`: still a tie on the words.
        assert_eq!(judge("successful dao vote", &titles).0, Verdict::Ambiguous { rivals: 3 });
        // Words only the re-posted title holds: the copies do not compete with each other.
        assert_eq!(judge("compound decided launch", &titles).0, Verdict::Match);
        // One title alone: nothing to stand above.
        assert_eq!(judge("vote", &[(4, "compound", PHASE)]).0, Verdict::Match);
    }

    #[test]
    fn the_same_title_competes_only_in_another_dao() {
        let title = "Treasury Report";
        assert_eq!(judge("treasury report", &[(1, "lido", title), (2, "lido", title)]).0, Verdict::Match);
        // The same title in two DAOs: which DAO is meant is not said.
        let (v, _) = judge("treasury report", &[(1, "lido", title), (2, "uniswap", title)]);
        assert_eq!(v, Verdict::Ambiguous { rivals: 1 });
    }

    #[test]
    fn a_whole_title_stands_above_a_longer_one_holding_its_words() {
        let short = "[Temp Check] Treasury Delegation Round 2";
        let long = "[Temp Check/Revised] Treasury Delegation Round 2";
        // Every query word is in both (1 vs 0.9714): the query names all of the first only.
        let (v, order) = judge(short, &[(1, "arbitrum", short), (2, "arbitrum", long)]);
        assert_eq!(order, [("1".to_owned(), 1), ("0.9714".to_owned(), 2)]);
        assert_eq!(v, Verdict::Match);
        // With typos too: each word still matches within its allowance.
        assert_eq!(judge("temp chck traesury delegaton ruond 2", &[(1, "a", short), (2, "a", long)]).0, Verdict::Match);
        // Part of the title fits both alike, whatever their lengths.
        let (v, _) = judge("treasury delegation round 2", &[(1, "arbitrum", short), (2, "arbitrum", long)]);
        assert_eq!(v, Verdict::Ambiguous { rivals: 1 });
    }

    #[test]
    fn a_query_fitting_one_title_better_by_the_margin_stands_above() {
        // `cnosolidation` reaches `consolidation` in one edit (12/13), `consolidating` in two
        // (11/13): the words fit the first 1/26 better, though its longer title gives it only
        // 0.0077 more confidence.
        let first = "Automate the Consolidation of Idle Funds into the Treasury Management Portfolio";
        let second = "Arbitrum Treasury Management Council - Consolidating Efforts";
        let (v, order) = judge("cnosolidation management", &[(1, "arbitrum", first), (2, "arbitrum", second)]);
        assert_eq!(order, [("0.8077".to_owned(), 1), ("0.8".to_owned(), 2)]);
        assert_eq!(v, Verdict::Match);
        // Cut to their beginnings, the words fit both alike: no answer, either way round.
        assert!(matches!(judge("conso manag", &[(1, "a", first), (2, "a", second)]).0, Verdict::Ambiguous { .. }));
    }

    #[test]
    fn the_margin_is_inclusive_and_declared_once() {
        let fit = |num: u32, den: u32, named_in_full| Fit {
            found: Share { num: num.into(), den: den.into() },
            covered: Share::zero(),
            named_in_full,
        };
        assert_eq!(TITLE_MARGIN, "0.02");
        assert!(fit(1, 1, false).stands_above(&fit(49, 50, false)));
        assert!(!fit(1, 1, false).stands_above(&fit(9801, 10000, false)));
        assert!(!fit(1, 1, false).stands_above(&fit(1, 1, false)));
        // Named in full: at least as good on the words is enough, against a title not named in full.
        assert!(fit(1, 1, true).stands_above(&fit(1, 1, false)));
        assert!(!fit(1, 1, true).stands_above(&fit(1, 1, true)));
        assert!(!fit(99, 100, true).stands_above(&fit(1, 1, false)));
    }

    #[test]
    fn below_the_floor_is_judged_before_the_margin() {
        assert_eq!(judge("banana", &[]).0, Verdict::BelowFloor);
        let title = "[RFC] Governance Process Upgrade: Establishing a Statute of Limitations for Temperature Checks";
        assert_eq!(judge("statute zebra", &[(1, "uniswap", title)]).0, Verdict::BelowFloor);
        assert_eq!(judge("statute limitations", &[(1, "uniswap", title)]).0, Verdict::Match);
    }

    /// A DAO of 25 titles, as the sample's Uniswap: `temp` and `check` in 8, `delegation` in 5,
    /// `proposal` in 2 (common all the same: every title is a proposal's), `statute` in 1.
    fn uniswap() -> Vocabulary {
        let held = [("temp", 8), ("check", 8), ("delegation", 5), ("proposal", 2), ("statute", 1)];
        Vocabulary::new(25, held.map(|(w, n)| (w.to_owned(), n)), ["uniswap", "Uniswap", "UNI", "proposal"])
    }

    #[test]
    fn common_words_are_the_daos_names_and_words_of_more_than_the_share_of_its_titles() {
        assert_eq!(COMMON_WORD_SHARE, "0.2");
        let v = uniswap();
        assert!(v.is_common("uniswap") && v.is_common("uni") && v.is_common("proposal"));
        // 8 of 25 is more than a fifth; 5 of 25 is a fifth, not more.
        assert!(v.is_common("temp") && v.is_common("check"));
        assert!(!v.is_common("delegation") && !v.is_common("statute"));
        assert!(!v.is_common("zebra"));
        // Names are cut into words: `Lido DAO` makes `dao` common.
        let lido = Vocabulary::new(33, [], ["lido", "Lido DAO", "LDO"]);
        assert!(lido.is_common("dao") && lido.is_common("ldo") && !lido.is_common("goose"));
        // A word of one title names it alone, however few titles the DAO has; two of two do not.
        let tiny = Vocabulary::new(2, [("japan".to_owned(), 1), ("dip".to_owned(), 2)], ["dimo", "DIMO"]);
        assert!(!tiny.is_common("japan") && tiny.is_common("dip"));
        // A DAO without titles counted yet: only its names are common.
        assert!(!Vocabulary::new(0, [], ["dimo"]).is_common("japan"));
    }

    #[test]
    fn a_query_word_is_as_common_as_any_title_word_it_matches() {
        let v = uniswap();
        let title = words("[Temp Check] Uniswap Statute Proposal Tempo");
        // The example: the DAO's name and the kind of item say nothing of which is meant.
        let said = identification(&w("uniswap proposal"), &title, &v);
        assert_eq!((said.identifying.len(), said.common), (0, vec!["uniswap".to_owned(), "proposal".to_owned()]));
        // `zebra` names no word of the title: neither.
        let said = identification(&w("statute zebra"), &title, &v);
        assert_eq!((said.identifying, said.common), (vec!["statute".to_owned()], vec![]));
        // `tem` begins `temp` (common) and `tempo` (not): it is held by every title holding `temp`.
        assert_eq!(matched_words(&w("tem zebra"), &title), ["temp", "tempo"]);
        let said = identification(&w("tem statute"), &title, &v);
        assert_eq!((said.identifying, said.common), (vec!["statute".to_owned()], vec!["tem".to_owned()]));
        // A typo reaching a common word is common: `chekc` reaches `check` in one edit.
        assert_eq!(identification(&w("chekc uni"), &title, &v).common, ["chekc", "uni"]);
        assert!(identification(&w("chekc uni"), &title, &v).identifying.is_empty());
    }
}
