//! An evaluation of `GET /v1/proposals/lookup` on the bundled sample, against the real server on
//! both backends: what agents hold when they look a proposal up (its id, its URL as a browser
//! shows it, its title whole, in part, with typos) must resolve to that proposal, and nonsense
//! must not resolve to anything (404 with the closest `candidates`, never a guess).
//!
//! The cases are made from the sample's CSV file, so every proposal is asked for in every way:
//! - `externalId`: the Snapshot id;
//! - `url`: Snapshot URLs as the address bar shows them (snapshot.org and snapshot.box, with and
//!   without the scheme, with a tab or query after the id);
//! - `title`: the whole title; a partial title (its longest words, in title order, as few as make
//!   it unique among the sample's titles); the partial title with a typo (two neighbours swapped
//!   or a letter dropped in its longest word), or in its two longest; the partial title's words cut
//!   to their first five letters; the whole title with typos in its two longest words, or in every
//!   word of five letters or more.
//!
//! A title case is right when the best match has the title asked for (the sample holds a few
//! proposals with identical titles, which no title can tell apart). A title lookup never guesses:
//! when its words fit several titles alike (a five-letter beginning shared by two titles' words),
//! the answer is 404 with `candidates`, a miss here but never a wrong match; a wrong match fails.
//!
//! Words common to many titles identify none: the sample's most common title words and phrases
//! (computed here from the titles, plus the examples) must not resolve; nor, for every DAO
//! of the sample, its name with each word more than `COMMON_WORD_SHARE` of its titles hold. Tally and Discourse URLs are
//! not in the sample; `lookup_tally_and_discourse_urls` (lookup.rs) covers them on the synthetic
//! store, and the URL forms here repeat its browser variants on that store.
use std::collections::BTreeMap;

use govdata::rules::lookup::words;
use serde_json::Value;

use crate::fixtures::sample::sample_proposals;
use crate::fixtures::stores::synthetic_database;
use crate::helpers::{TestApp, spawn_app_on};
use crate::lookup::encode;
use crate::on_both_backends;

/// Top-1 accuracy each kind of case must reach. Nonsense may match nothing (no false match).
const MIN_ACCURACY: &[(&str, f64)] = &[
    ("externalId", 1.0),
    ("url", 1.0),
    ("title", 1.0),
    ("title_partial", 0.95),
    ("title_partial_typo", 0.95),
    ("title_partial_two_typos", 0.9),
    ("title_partial_beginnings", 0.95),
    ("title_typos", 0.95),
    ("title_typos_everywhere", 0.9),
];
const MIN_ACCURACY_OVERALL: f64 = 0.97;
/// The cases answered right on the sample, of 1310: every id, URL and whole title; the misses are
/// five-letter beginnings that fit two titles alike (answered 404 with the asked-for proposal
/// among the `candidates`).
const MIN_RIGHT: usize = 1305;

/// Common title words and phrases: those in at least this many distinct titles of the sample.
const COMMON_MIN_TITLES: usize = 3;
/// How many of the most common words, two-word and three-word phrases are asked.
const COMMON_WORDS: usize = 40;
const COMMON_BIGRAMS: usize = 20;
const COMMON_TRIGRAMS: usize = 5;
/// The examples, asked besides the computed ones: each fits several titles alike.
const COMMON_BY_HAND: &[&str] = &[
    "vote",
    "dao vote",
    "successful dao vote",
    "proposal",
    "governance",
    "temp check",
    "treasury delegation round 2",
    "uniswap proposal",
];

/// Queries no proposal answers: each must be 404, never a match.
const NONSENSE: &[&str] = &[
    "zzzz qqqq no such proposal xkcd",
    "qwxzzy",
    "asdf jkl",
    "xyzzy plugh",
    "aaaa bbbb cccc",
    "12345 67890",
    "lorem ipsum dolor sit amet",
    "the quick brown fox jumps over the lazy dog",
    "recipe for banana bread",
    "weather in paris tomorrow",
    "how do i reset my password",
    "buy cheap sneakers online",
    "football world cup final",
    "kubernetes ingress controller",
    "moon landing conspiracy",
    "pizza topping election",
    "proposal xkcd",
    "dao vote zzzz",
    "zzzz governance qqqq xxxx",
    "the of and",
    "qqqq uniswap zzzz wwww",
    "treasury xkcd qwerty asdfgh",
    "compound interest calculator",
    "lido birthday cake recipe",
    "uniswap pizza party",
    "treasury of the dragon king",
    "delegate lunch menu for friday",
    "Proposl to buy a yacht for the councl",
];

/// Identifiers no proposal has: each must be 404.
fn unknown_identifiers() -> Vec<String> {
    let unknown = "0x1111111111111111111111111111111111111111111111111111111111111111";
    vec![
        format!("externalId={unknown}"),
        format!("url={}", encode(&format!("https://snapshot.org/#/uniswapgovernance.eth/proposal/{unknown}"))),
    ]
}

/// The most common words and phrases of `titles` (`n` words long), each counted once per distinct
/// title (a title posted twice counts once), in at least [`COMMON_MIN_TITLES`] titles: the
/// `top` most common, most common first, then alphabetically.
fn common_phrases(titles: &[String], n: usize, top: usize) -> Vec<(String, usize)> {
    let mut seen = std::collections::BTreeSet::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for t in titles.iter().filter(|t| seen.insert(words(t))) {
        let all: Vec<String> =
            t.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
        let phrases: std::collections::BTreeSet<String> = all.windows(n).map(|w| w.join(" ")).collect();
        for p in phrases {
            *counts.entry(p).or_default() += 1;
        }
    }
    let mut ranked: Vec<(String, usize)> = counts.into_iter().filter(|(_, c)| *c >= COMMON_MIN_TITLES).collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(top);
    ranked
}

/// For every DAO of the sample, its name followed by each word of its titles that is common in
/// them (held by more than `COMMON_WORD_SHARE` of the DAO's titles, and by more than one), the
/// DAO's own name words aside: none names one proposal.
fn dao_common_phrases() -> Vec<String> {
    use govdata::contract::limits::lookup::COMMON_WORD_SHARE;
    let share = govdata::contract::decimal::parse(COMMON_WORD_SHARE).expect("a decimal share");
    let mut by_space: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in sample_proposals() {
        by_space.entry(p["space_id"].clone()).or_default().push(p["title"].clone());
    }
    let mut out = Vec::new();
    for (space, titles) in &by_space {
        let dao = govdata::sample::registry::by_space(space).expect("a sample DAO");
        let names: Vec<String> = [dao.id, dao.name, dao.symbol].iter().flat_map(|n| words(n)).collect();
        let mut held: BTreeMap<String, u64> = BTreeMap::new();
        for title in titles {
            for w in words(title) {
                *held.entry(w).or_default() += 1;
            }
        }
        let bar = share.clone() * bigdecimal::BigDecimal::from(titles.len() as u64);
        let common: Vec<String> = held
            .into_iter()
            .filter(|(w, n)| {
                let held = bigdecimal::BigDecimal::from(*n);
                !names.contains(w) && *n > 1 && held > bar
            })
            .map(|(w, _)| format!("{} {w}", dao.name))
            .collect();
        assert!(!common.is_empty(), "{space}: no word of its titles is common");
        out.extend(common);
    }
    out
}

#[derive(Debug)]
struct Case {
    kind: &'static str,
    query: String,
    /// The proposal asked for (`externalId`) and its title.
    id: String,
    title: String,
}

/// Whether `query` (words) names another of `titles` as well as this one: every query word
/// begins a word of it.
fn names_another(query: &[String], title: &str, titles: &[String]) -> bool {
    titles.iter().filter(|t| words(t) != words(title)).any(|t| {
        let w = words(t);
        query.iter().all(|q| w.iter().any(|x| x.starts_with(q.as_str())))
    })
}

/// The partial title: the longest words, as few as name this title alone (at least two when the
/// title has two), in title order.
fn partial(title: &str, titles: &[String]) -> Vec<String> {
    let all = words(title);
    let mut by_length = all.clone();
    by_length.sort_by_key(|w| std::cmp::Reverse(w.chars().count()));
    let mut chosen: Vec<String> = Vec::new();
    for w in by_length {
        chosen.push(w);
        if chosen.len() >= 2.min(all.len()) && !names_another(&chosen, title, titles) {
            break;
        }
    }
    all.into_iter().filter(|w| chosen.contains(w)).collect()
}

/// A typo in `word` (of five characters or more): `n` even swaps two neighbours, odd drops one,
/// in the middle of the word.
fn typo(word: &str, n: usize) -> String {
    let mut c: Vec<char> = word.chars().collect();
    if c.len() < 5 {
        return word.to_owned();
    }
    let i = 1 + n % (c.len() - 3);
    if n.is_multiple_of(2) {
        c.swap(i, i + 1);
    } else {
        c.remove(i);
    }
    c.into_iter().collect()
}

/// `words` with a typo in each of the `k` longest (of five characters or more).
fn with_typos(words: &[String], k: usize, n: usize) -> Vec<String> {
    let mut by_length: Vec<&String> = words.iter().filter(|w| w.chars().count() >= 5).collect();
    by_length.sort_by_key(|w| std::cmp::Reverse(w.chars().count()));
    let targets: Vec<&String> = by_length.into_iter().take(k).collect();
    words.iter().enumerate().map(|(i, w)| if targets.contains(&w) { typo(w, n + i) } else { w.clone() }).collect()
}

fn cases() -> Vec<Case> {
    let proposals = sample_proposals();
    let titles: Vec<String> = proposals.iter().map(|p| p["title"].clone()).collect();
    let mut out = Vec::new();
    for (n, p) in proposals.iter().enumerate() {
        let (id, space, title) = (&p["proposal_id"], &p["space_id"], &p["title"]);
        let case = |kind, query: String| Case { kind, query, id: id.clone(), title: title.clone() };
        out.push(case("externalId", format!("externalId={id}")));
        let urls = [
            format!("https://snapshot.org/#/{space}/proposal/{id}"),
            format!("https://snapshot.box/#/s:{space}/proposal/{id}"),
            format!("snapshot.box/#/s:{space}/proposal/{id}"),
            format!("https://snapshot.box/#/s:{space}/proposal/{id}/votes"),
            format!("http://www.snapshot.org/#/{space}/proposal/{id}?tab=votes"),
        ];
        // Two forms per proposal, turn by turn, so every form is asked for.
        for url in [&urls[n % urls.len()], &urls[(n + 1) % urls.len()]] {
            out.push(case("url", format!("url={}", encode(url))));
        }
        out.push(case("title", format!("title={}", encode(title))));
        let part = partial(title, &titles);
        out.push(case("title_partial", format!("title={}", encode(&part.join(" ")))));
        out.push(case("title_partial_typo", format!("title={}", encode(&with_typos(&part, 1, n).join(" ")))));
        out.push(case("title_partial_two_typos", format!("title={}", encode(&with_typos(&part, 2, n).join(" ")))));
        let beginnings: Vec<String> = part.iter().map(|w| w.chars().take(5).collect()).collect();
        out.push(case("title_partial_beginnings", format!("title={}", encode(&beginnings.join(" ")))));
        out.push(case("title_typos", format!("title={}", encode(&with_typos(&words(title), 2, n).join(" ")))));
        let everywhere = with_typos(&words(title), usize::MAX, n);
        out.push(case("title_typos_everywhere", format!("title={}", encode(&everywhere.join(" ")))));
    }
    out
}

async fn lookup(app: &TestApp, query: &str) -> (u16, Value) {
    app.get_json(&format!("/v1/proposals/lookup?{query}")).await
}

on_both_backends!(lookup_evaluation_on_the_sample, |app: TestApp| async move {
    let cases = cases();
    // kind → (right, asked)
    let mut tally: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut misses = Vec::new();
    let mut wrong = Vec::new();
    for case in &cases {
        let (status, body) = lookup(&app, &case.query).await;
        assert!(status == 200 || status == 404, "{}: {status} {body}", case.query);
        let proposal = &body["data"]["proposal"];
        let right = status == 200
            && if case.kind.starts_with("title") {
                proposal["title"].as_str().is_some_and(|t| words(t) == words(&case.title))
            } else {
                proposal["externalId"] == case.id.as_str()
            };
        let entry = tally.entry(case.kind).or_default();
        entry.1 += 1;
        if right {
            entry.0 += 1;
        } else {
            let got = match status {
                200 => format!("{} ({})", proposal["title"], body["data"]["match"]["confidence"]),
                _ => format!("404, closest {}", body["candidates"][0]["title"]),
            };
            let miss = format!("{} {}: got {got}; wanted {:?}", case.kind, case.query, case.title);
            if status == 200 {
                wrong.push(miss.clone());
            } else if case.kind.starts_with("title") {
                let candidates = body["candidates"].as_array().expect("a title lookup's 404 lists candidates");
                assert!(
                    candidates.iter().any(|c| c["title"].as_str().is_some_and(|t| words(t) == words(&case.title))),
                    "a title missed is among the candidates: {miss}: {body}"
                );
            }
            misses.push(miss);
        }
    }

    let mut false_matches = Vec::new();
    let nonsense: Vec<String> =
        NONSENSE.iter().map(|q| format!("title={}", encode(q))).chain(unknown_identifiers()).collect();
    for query in &nonsense {
        let (status, body) = lookup(&app, query).await;
        match status {
            404 => {
                assert_eq!(body["code"], "NOT_FOUND", "{query}: {body}");
                if query.starts_with("title=") {
                    assert!(body["candidates"].is_array(), "a title lookup's 404 lists candidates: {body}");
                }
            }
            200 => false_matches.push(format!(
                "{query}: {} ({})",
                body["data"]["proposal"]["title"], body["data"]["match"]["confidence"]
            )),
            other => panic!("{query}: {other} {body}"),
        }
    }

    // Common words and phrases fit many titles alike: none may resolve.
    let titles: Vec<String> = sample_proposals().iter().map(|p| p["title"].clone()).collect();
    let common: Vec<String> = [(1, COMMON_WORDS), (2, COMMON_BIGRAMS), (3, COMMON_TRIGRAMS)]
        .into_iter()
        .flat_map(|(n, top)| {
            let phrases = common_phrases(&titles, n, top);
            assert_eq!(phrases.len(), top, "the sample has {top} phrases of {n} words in {COMMON_MIN_TITLES}+ titles");
            phrases.into_iter().map(|(p, _)| p)
        })
        .chain(COMMON_BY_HAND.iter().map(|p| (*p).to_owned()))
        .collect();
    let dao_common = dao_common_phrases();
    let common: Vec<String> = common.into_iter().chain(dao_common.iter().cloned()).collect();
    let mut common_matches = Vec::new();
    for phrase in &common {
        let (status, body) = lookup(&app, &format!("title={}", encode(phrase))).await;
        match status {
            404 => {
                assert_eq!(body["code"], "NOT_FOUND", "{phrase}: {body}");
                assert!(body["candidates"].is_array(), "{phrase}: a title lookup's 404 lists candidates: {body}");
            }
            200 => common_matches.push(format!(
                "common {phrase:?}: {} ({})",
                body["data"]["proposal"]["title"], body["data"]["match"]["confidence"]
            )),
            other => panic!("{phrase}: {other} {body}"),
        }
    }

    let (right, asked) = tally.values().fold((0, 0), |(r, a), (r2, a2)| (r + r2, a + a2));
    let overall = right as f64 / asked as f64;
    let mut report = String::from("lookup evaluation (top-1 accuracy):\n");
    for (kind, (r, a)) in &tally {
        let example = cases.iter().find(|c| c.kind == *kind).map_or("", |c| c.query.as_str());
        report.push_str(&format!("  {kind:<26} {r:>4}/{a:<4} {:.3}   e.g. {example}\n", *r as f64 / *a as f64));
    }
    report.push_str(&format!("  {:<26} {right:>4}/{asked:<4} {overall:.3}\n", "overall"));
    report.push_str(&format!("  wrong matches (a 200 for another title): {}\n", wrong.len()));
    report.push_str(&format!("  false matches on nonsense: {}/{}\n", false_matches.len(), nonsense.len()));
    report.push_str(&format!(
        "  matches on common words and phrases: {}/{} (e.g. {})\n",
        common_matches.len(),
        common.len(),
        common.iter().take(3).chain(common.get(COMMON_WORDS)).map(|p| format!("{p:?}")).collect::<Vec<_>>().join(", ")
    ));
    report.push_str(&format!(
        "  of which a DAO's name and a word common in its titles: {} phrases, {} DAOs (e.g. {})\n",
        dao_common.len(),
        dao_common
            .iter()
            .map(|p| p.split(' ').next().unwrap_or_default())
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        dao_common.iter().take(3).map(|p| format!("{p:?}")).collect::<Vec<_>>().join(", ")
    ));
    for m in misses.iter().chain(&false_matches).chain(&common_matches) {
        report.push_str(&format!("  miss: {m}\n"));
    }
    println!("{report}");

    for (kind, min) in MIN_ACCURACY {
        let (r, a) = tally.get(kind).copied().unwrap_or_default();
        assert!(a > 0, "no {kind} cases");
        assert!(r as f64 / a as f64 >= *min, "{kind} below {min}:\n{report}");
    }
    assert!(overall >= MIN_ACCURACY_OVERALL, "overall below {MIN_ACCURACY_OVERALL}:\n{report}");
    assert!(right >= MIN_RIGHT, "fewer than {MIN_RIGHT} right:\n{report}");
    assert!(wrong.is_empty(), "wrong matches:\n{report}");
    assert!(false_matches.is_empty(), "false matches:\n{report}");
    assert!(common_matches.is_empty(), "common words or phrases resolved:\n{report}");
});

// The Tally and Discourse URL forms a browser shows, on the synthetic store (the sample has no
// on-chain proposals and no forum).
on_both_backends!(lookup_evaluation_of_tally_and_forum_urls, |backend: Backend| async move {
    let app = spawn_app_on(synthetic_database(backend)).await;
    let rfc = crate::fixtures::sample::RFC_ID;
    let resolve: &[(&str, &str, &str)] = &[
        ("https://www.tally.xyz/gov/uniswap/proposal/77", "uniswap", "77"),
        (
            "https://tally.xyz/gov/uniswap/proposal/77?govId=eip155:1:0x408ED6354d4973f66138C91495F2f2FCbd8724C3",
            "uniswap",
            "77",
        ),
        ("www.tally.xyz/gov/uniswap/proposal/77/", "uniswap", "77"),
        ("https://forum.example/t/synthetic-zebra-statute/4242", "uniswap", rfc),
        ("https://forum.example/t/synthetic-zebra-statute/4242/3", "uniswap", rfc),
        ("https://forum.example/t/synthetic-zebra-statute/4242?u=someone", "uniswap", rfc),
        ("forum.example/t/4242", "uniswap", rfc),
    ];
    for (url, dao, id) in resolve {
        let (status, body) = lookup(&app, &format!("url={}&daoId={dao}", encode(url))).await;
        assert_eq!(status, 200, "{url}: {body}");
        assert_eq!(body["data"]["proposal"]["externalId"], *id, "{url}");
        assert_eq!(body["data"]["match"]["by"], "url");
    }
    for url in ["https://www.tally.xyz/gov/uniswap/proposal/999999", "https://forum.example/t/no-such-topic/999999"] {
        let (status, body) = lookup(&app, &format!("url={}", encode(url))).await;
        assert_eq!(status, 404, "{url}: {body}");
    }
});
