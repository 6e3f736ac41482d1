//! `GET /v1/proposals/lookup`: resolve one proposal from a URL, an external id or a title.
use std::collections::HashMap;

use poem::web::Data;
use poem_openapi::{Enum, Object, OpenApi, param::Query, payload::Json};

use super::V1Tag;
use crate::api::{AppState, views::proposal::V1ProposalSummary};
use crate::contract::envelope::AdjustmentReason;
use crate::contract::params::{DaoFilter, DaoScope};
use crate::contract::urls::{ProposalUrl, parse_url, split_host};
use crate::contract::vocabulary::{DaoId, ItemKind, SourceKind};
use crate::contract::{
    api_error::ApiError,
    envelope::{V1Envelope, V1Request},
    errors::{Candidate, ErrorCode, FieldError, ParamLocation, Problem},
    limits::lookup::{
        ALTERNATIVES, CLOSEST_CANDIDATES, COMMON_WORD_SHARE, CONFIDENCE_FLOOR, ITEM_CANDIDATES, TITLE_CANDIDATES,
        TITLE_MARGIN, TITLE_MAX_WORDS,
    },
    operations::ProposalsLookupV1 as Op,
};
use crate::rules::lookup::{self, Ranked, TitleScores, Verdict, identifier_confidence};
use crate::store::failures::problem_marking_read_failed;
use crate::store::{self, entities::proposal, search};

/// Which input the match was made on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "camelCase")]
pub enum MatchBy {
    Url,
    ExternalId,
    Title,
}

/// How the best match was found and how sure it is.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase")]
pub struct LookupMatch {
    pub by: MatchBy,
    /// A decimal in [0, 1]. URL and external-id matches: `1` when the identifier names one
    /// proposal, `1/n` each when it names n proposals (in several DAOs). Title matches:
    /// `0.8 × (query words found in the title ÷ query words) + 0.2 × (title words matched ÷
    /// title words)`, a query word matching the title words it begins. A query word with typos
    /// (characters substituted, inserted or dropped, neighbours swapped: {{LOOKUP_TYPO_EDITS}};
    /// none in shorter words) matches a title word it begins after those edits, and counts
    /// `1 − edits ÷ its characters` instead of 1 on both sides; each word counts its best match.
    /// Rounded half-even to 4 decimals; identical on both store backends. A title match is
    /// answered only at {{LOOKUP_CONFIDENCE_FLOOR}} or above, and only when it stands clearly
    /// above every other title found: the query's words fit it at least {{LOOKUP_TITLE_MARGIN}}
    /// better (query words found ÷ query words), or at least as well while the query names every
    /// word of its title and not every word of the other's. A word common to many titles fits
    /// them all alike and answers none. Otherwise the answer is 404 with the closest
    /// `candidates`. Proposals with the same title in the same DAO (posted twice, or in two
    /// sources) do not compete: the newest is answered, the others are in `alternatives`.
    pub confidence: String,
}

/// Another proposal the input could mean.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase")]
pub struct LookupAlternative {
    /// Same rule as `match.confidence`.
    pub confidence: String,
    pub proposal: V1ProposalSummary,
}

/// The best match and the runners-up.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", example)]
pub struct LookupResult {
    #[oai(rename = "match")]
    pub matched: LookupMatch,
    pub proposal: V1ProposalSummary,
    /// Up to {{LOOKUP_ALTERNATIVES_WORD}} other candidates, most likely first.
    pub alternatives: Vec<LookupAlternative>,
}

impl poem_openapi::types::Example for LookupResult {
    fn example() -> Self {
        Self {
            matched: LookupMatch { by: MatchBy::Title, confidence: "0.8333".to_owned() },
            proposal: V1ProposalSummary::example(),
            alternatives: Vec::new(),
        }
    }
}

const URL_FORMS: &str = "https://snapshot.org/#/<space>/proposal/<id>, https://snapshot.box/#/s:<space>/proposal/<id>, \
     https://www.tally.xyz/gov/<org>/proposal/<id>, or a Discourse topic https://<forum>/t/<slug>/<topicId>";

fn field(name: &str, reason: impl Into<String>, expected: Option<&str>, received: Option<&str>) -> FieldError {
    FieldError {
        location: ParamLocation::Query,
        name: name.to_owned(),
        reason: reason.into(),
        expected: expected.map(str::to_owned),
        received: received.map(str::to_owned),
    }
}

pub struct Api;

#[OpenApi(prefix_path = "/v1", tag = "V1Tag::Proposals")]
impl Api {
    /// Find a proposal by URL, external id or title
    ///
    /// Resolves one proposal from what an agent usually has: a link, an upstream id, or (part
    /// of) a title. Give exactly one of `url`, `externalId` or `title`; `daoId` narrows the
    /// search. Recognised URLs: Snapshot (`https://snapshot.org/#/<space>/proposal/<id>`,
    /// `https://snapshot.box/#/s:<space>/proposal/<id>`), Tally
    /// (`https://www.tally.xyz/gov/<org>/proposal/<id>`) and Discourse topics
    /// (`https://<forum>/t/<slug>/<id>`, resolved through the topic's linked proposal). Titles
    /// are searched in a full-text index of proposal titles and of linked forum-topic titles:
    /// each word matches as a prefix, in any order, and all words must match; when no title has
    /// them all, titles sharing the most three-letter pieces with the words are weighed instead,
    /// so a title with typos still resolves. A title's first {{TITLE_MAX_WORDS}} words are used; the words dropped beyond them are
    /// recorded in `request.adjustments` (`truncated_to_max_words`). Returns the best match with `match.by` and a decimal
    /// `match.confidence`, plus up to {{LOOKUP_ALTERNATIVES_WORD}} `alternatives`. Use the proposal's `daoId`, `source`
    /// and `externalId` with the evidence and item endpoints. No match → 404; a title lookup never guesses: when
    /// no title matches with a confidence of at least {{LOOKUP_CONFIDENCE_FLOOR}}, or the best does not stand
    /// clearly above the next ones (the query's words must fit it at least {{LOOKUP_TITLE_MARGIN}} better, as
    /// query words found ÷ query words, or name its whole title), the 404 lists the closest
    /// proposals in `candidates` (up to {{LOOKUP_CLOSEST_CANDIDATES_WORD}}, each with its `confidence`).
    #[oai(path = "/proposals/lookup", method = "get", operation_id = "proposals_lookup")]
    async fn proposals_lookup(
        &self,
        state: Data<&AppState>,
        req: V1Request,
        /// A Snapshot, Tally or Discourse topic URL.
        url: Query<Option<String>>,
        /// The upstream proposal id (Snapshot id, or on-chain proposal id as a decimal string).
        #[oai(name = "externalId")]
        external_id: Query<Option<String>>,
        /// Words of the title, in any order; each may be the beginning of a word.
        title: Query<Option<String>>,
        /// Only proposals of this DAO.
        #[oai(name = "daoId")]
        dao_id: Query<Option<DaoFilter>>,
    ) -> Result<Json<V1Envelope<LookupResult>>, ApiError<Op>> {
        let mut req = req;
        let (name, value) = exactly_one([("url", url.0), ("externalId", external_id.0), ("title", title.0)])?;
        let dao = DaoFilter::resolve_v1(dao_id.0, &mut req);
        req.applied("by", name);
        let db = &state.reads();
        let (by, ranked): (MatchBy, Vec<(String, proposal::Model)>) = match name {
            "url" => (MatchBy::Url, url_matches(db, &value, &dao).await?),
            "externalId" => (MatchBy::ExternalId, external_id_matches(db, &value, &dao).await?),
            _ => (MatchBy::Title, title_matches(db, &value, &dao, &mut req).await?),
        };
        let mut ranked = ranked.into_iter();
        let Some((confidence, best)) = ranked.next() else {
            let scope = dao.received().map(|d| format!(" in DAO `{d}`")).unwrap_or_default();
            return Err(Problem::not_found(format!("No proposal{scope} matches `{name}` = `{value}`.")).into());
        };
        let alternatives = ranked
            .take(ALTERNATIVES)
            .map(|(confidence, p)| LookupAlternative { confidence, proposal: V1ProposalSummary::from_model(&p) })
            .collect();
        let data = LookupResult {
            matched: LookupMatch { by, confidence },
            proposal: V1ProposalSummary::from_model(&best),
            alternatives,
        };
        super::answer(&state, req, data)
    }
}

/// The one input of `url`, `externalId` and `title` that was given, by name; a 400 naming them
/// when none or several were.
fn exactly_one(inputs: [(&'static str, Option<String>); 3]) -> Result<(&'static str, String), Problem> {
    let given: Vec<(&str, String)> = inputs.into_iter().filter_map(|(n, v)| v.map(|v| (n, v))).collect();
    match given.as_slice() {
        [one] => Ok(one.clone()),
        [] => {
            let errors = ["url", "externalId", "title"]
                .iter()
                .map(|n| field(n, "exactly one of `url`, `externalId`, `title` is required", None, None))
                .collect();
            Err(Problem {
                errors: Some(errors),
                ..Problem::new(ErrorCode::ValidationError, "Give exactly one of `url`, `externalId`, `title`.")
            })
        }
        many => {
            let names: Vec<String> = many.iter().map(|(n, _)| format!("`{n}`")).collect();
            let errors = many
                .iter()
                .map(|(n, v)| field(n, "only one of `url`, `externalId`, `title` may be given", None, Some(v)))
                .collect();
            Err(Problem {
                errors: Some(errors),
                ..Problem::new(
                    ErrorCode::ValidationError,
                    format!("Give exactly one of `url`, `externalId`, `title` (got {}).", names.join(", ")),
                )
            })
        }
    }
}

/// The proposals a `url` names, with their confidence; a 400 when it is no recognised URL.
async fn url_matches(
    db: &sea_orm::DatabaseConnection,
    value: &str,
    dao: &DaoScope,
) -> Result<Vec<(String, proposal::Model)>, ApiError<Op>> {
    let Some(parsed) = parse_url(value) else {
        return Err(Problem::validation(field(
            "url",
            "not a recognised Snapshot, Tally or Discourse topic URL",
            Some(URL_FORMS),
            Some(value),
        ))
        .into());
    };
    Ok(match dao.store_filter() {
        Some(dao_id) => by_url(db, &parsed, dao_id).await?,
        None => Vec::new(),
    })
}

/// The proposals an `externalId` names, with their confidence; a 400 when it is empty.
async fn external_id_matches(
    db: &sea_orm::DatabaseConnection,
    value: &str,
    dao: &DaoScope,
) -> Result<Vec<(String, proposal::Model)>, ApiError<Op>> {
    let id = value.trim();
    if id.is_empty() {
        return Err(Problem::validation(field("externalId", "must not be empty", None, Some(value))).into());
    }
    let rows = match dao.store_filter() {
        Some(dao_id) => store::items::proposals_by_external_id(db, id, None, dao_id, ITEM_CANDIDATES).await?,
        None => Vec::new(),
    };
    Ok(with_identifier_confidence(rows))
}

/// The proposals whose titles match the words of `title`, best first, once the best is judged
/// to answer: a 400 when it has no words, a 404 with the closest candidates when no title is
/// identified, close enough or clearly the best.
async fn title_matches(
    db: &sea_orm::DatabaseConnection,
    value: &str,
    dao: &DaoScope,
    req: &mut V1Request,
) -> Result<Vec<(String, proposal::Model)>, ApiError<Op>> {
    let words = lookup::query_words(value);
    if words.is_empty() {
        return Err(Problem::validation(field(
            "title",
            "contains no words (letters or digits)",
            Some(&format!("one to {TITLE_MAX_WORDS} words")),
            Some(value),
        ))
        .into());
    }
    if lookup::words(value).len() > words.len() {
        // The search uses the first words only: say which.
        req.adjust("title", value, words.join(" "), AdjustmentReason::TruncatedToMaxWords);
    }
    let ranked = match dao.store_filter() {
        Some(dao_id) => by_title(db, &words, dao_id).await?,
        None => Vec::new(),
    };
    if let Some(best) = ranked.first().filter(|b| lookup::meets_floor(&b.confidence)) {
        let said = identification(db, &words, best).await?;
        if said.identifying.is_empty() {
            return Err(not_identified(value, dao.received(), &said.common, ranked).into());
        }
    }
    match lookup::verdict(&ranked) {
        Verdict::Match => {}
        Verdict::BelowFloor => return Err(below_floor(value, dao.received(), ranked).into()),
        Verdict::Ambiguous { rivals } => {
            return Err(ambiguous(value, dao.received(), rivals, ranked).into());
        }
    }
    Ok(ranked.into_iter().map(Ranked::into_pair).collect())
}

/// The closest candidates of a title lookup that does not answer, closest first.
fn closest(ranked: Vec<Ranked<proposal::Model>>) -> Vec<Candidate> {
    ranked
        .into_iter()
        .take(CLOSEST_CANDIDATES)
        .map(|r| Candidate {
            dao_id: r.proposal.dao_id,
            kind: ItemKind::Proposal.as_str().to_owned(),
            source: r.proposal.source.as_str().to_owned(),
            external_id: r.proposal.external_id,
            title: r.proposal.title,
            confidence: Some(r.confidence),
        })
        .collect()
}

/// The 404 of a title lookup whose best match is below the floor: the closest candidates,
/// closest first.
fn below_floor(title: &str, dao: Option<&str>, ranked: Vec<Ranked<proposal::Model>>) -> Problem {
    let scope = dao.map(|d| format!(" in DAO `{d}`")).unwrap_or_default();
    let candidates = closest(ranked);
    let closest = if candidates.is_empty() { "no title comes close" } else { "`candidates` lists the closest" };
    Problem {
        candidates: Some(candidates),
        ..Problem::not_found(format!(
            "No proposal title{scope} matches `title` = `{title}` with a confidence of at least {CONFIDENCE_FLOOR}; \
             {closest}."
        ))
    }
}

/// The 404 of a title lookup whose best match does not stand clearly above `rivals` other
/// proposals ([`lookup::verdict`]): the closest candidates, closest first.
fn ambiguous(title: &str, dao: Option<&str>, rivals: usize, ranked: Vec<Ranked<proposal::Model>>) -> Problem {
    let scope = dao.map(|d| format!(" in DAO `{d}`")).unwrap_or_default();
    let best = ranked.first().map(|r| r.confidence.clone()).unwrap_or_default();
    let others = if rivals == 1 { "1 other proposal".to_owned() } else { format!("{rivals} other proposals") };
    Problem {
        candidates: Some(closest(ranked)),
        ..Problem::not_found(format!(
            "No single proposal title{scope} matches `title` = `{title}`: the best match (confidence {best}) does not \
             stand clearly above the next ones ({others} fit the words about as well). A title is answered only when \
             the words fit it at least {TITLE_MARGIN} better (query words found ÷ query words) than every other title, \
             or name all of its words and not all of the other's; `candidates` lists the closest."
        ))
    }
}

/// The 404 of a title lookup whose words that match its best title are all `common` in the
/// title's DAO ([`lookup::identification`]): the closest candidates, closest first.
fn not_identified(title: &str, dao: Option<&str>, common: &[String], ranked: Vec<Ranked<proposal::Model>>) -> Problem {
    let scope = dao.map(|d| format!(" in DAO `{d}`")).unwrap_or_default();
    Problem {
        candidates: Some(closest(ranked)),
        ..Problem::not_found(format!(
            "No proposal title{scope} is identified by `title` = `{title}`: {} common in the DAO's titles (the DAO's \
             id, names and ticker, the word `{kind}`, and words held by more than {COMMON_WORD_SHARE} of its \
             titles), and common words identify none; `candidates` lists the closest.",
            if common.len() == 1 { format!("{} is", quoted(common)) } else { format!("{} are", quoted(common)) },
            kind = ItemKind::Proposal.as_str(),
        ))
    }
}

/// `` `a`, `b` `` for `words`.
fn quoted(words: &[String]) -> String {
    words.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>().join(", ")
}

/// Which words of the query identify `best` in its DAO: reads how common the words of its title
/// the query matched are (`store::vocabulary`, counted at publication); the kind of item titled
/// is common as the DAO's names are.
async fn identification(
    db: &sea_orm::DatabaseConnection,
    words: &[String],
    best: &Ranked<proposal::Model>,
) -> Result<lookup::Identification, sea_orm::DbErr> {
    let matched = lookup::matched_words(words, best.title_words());
    let kind = ItemKind::Proposal.as_str();
    let vocabulary = store::vocabulary::of_words(db, &best.proposal.dao_id, &matched, kind).await?;
    Ok(lookup::identification(words, best.title_words(), &vocabulary))
}

fn with_identifier_confidence(rows: Vec<proposal::Model>) -> Vec<(String, proposal::Model)> {
    let c = identifier_confidence(rows.len());
    rows.into_iter().map(|p| (c.clone(), p)).collect()
}

/// Resolves a recognised URL: one query for Snapshot and Tally, two for Discourse (the topics,
/// then their linked proposals).
async fn by_url(
    db: &sea_orm::DatabaseConnection,
    url: &ProposalUrl,
    dao: Option<&DaoId>,
) -> Result<Vec<(String, proposal::Model)>, Problem> {
    let store_err = |e: sea_orm::DbErr| problem_marking_read_failed(&e);
    let rows = match url {
        ProposalUrl::Snapshot { space, id } => {
            store::items::snapshot_proposals_in_space(db, space, id, dao, ITEM_CANDIDATES).await.map_err(store_err)?
        }
        ProposalUrl::Tally { org, id } => {
            let rows = store::items::proposals_by_external_id(
                db,
                id,
                Some(SourceKind::Onchain.as_str()),
                dao,
                ITEM_CANDIDATES,
            )
            .await
            .map_err(store_err)?;
            // The Tally organisation slug usually is the daoId: prefer that DAO when it matches.
            let org = org.to_ascii_lowercase();
            if rows.iter().any(|p| p.dao_id == org) {
                rows.into_iter().filter(|p| p.dao_id == org).collect()
            } else {
                rows
            }
        }
        ProposalUrl::Discourse { host, topic_id } => {
            let topics = store::items::topics_by_external_id(db, topic_id, dao, ITEM_CANDIDATES)
                .await
                .map_err(store_err)?
                .into_iter()
                .filter(|t| split_host(&t.url).0 == *host)
                .collect::<Vec<_>>();
            if topics.is_empty() {
                return Ok(Vec::new());
            }
            let ids: Vec<i64> = topics.iter().filter_map(|t| t.linked_proposal_id).collect();
            if ids.is_empty() {
                return Err(Problem::not_found(format!(
                    "The forum topic {host}/t/{topic_id} is known but not linked to any proposal."
                )));
            }
            let mut rows = store::items::proposals_by_ids(db, &ids).await.map_err(store_err)?;
            rows.sort_by(|a, b| (&a.dao_id, &a.source, &a.external_id).cmp(&(&b.dao_id, &b.source, &b.external_id)));
            rows
        }
    };
    Ok(with_identifier_confidence(rows))
}

/// Title search: proposals and linked forum topics whose titles have all the words (falling back
/// to the titles sharing the most of the words' trigrams, for typos), each candidate scored by
/// [`lookup::confidence`] against the title it matched (the best of its own and its topics'),
/// ranked by [`TitleScores::rank`] (judged by [`lookup::verdict`]).
/// Two or four search queries, plus one for proposals found only through a topic.
async fn by_title(
    db: &sea_orm::DatabaseConnection,
    words: &[String],
    dao: Option<&DaoId>,
) -> Result<Vec<Ranked<proposal::Model>>, sea_orm::DbErr> {
    let mut proposals = search::proposals(db, words, dao, TITLE_CANDIDATES).await?;
    let mut topics = search::linked_topics(db, words, dao, TITLE_CANDIDATES).await?;
    if proposals.is_empty() && topics.is_empty() {
        let pieces = lookup::trigrams(words);
        proposals = search::proposals_by_trigrams(db, &pieces, dao, TITLE_CANDIDATES).await?;
        topics = search::linked_topics_by_trigrams(db, &pieces, dao, TITLE_CANDIDATES).await?;
    }
    let mut scores = TitleScores::new(words);
    let mut found: HashMap<i64, proposal::Model> = HashMap::new();
    for p in proposals {
        scores.offer(p.id, &p.title);
        found.insert(p.id, p);
    }
    for t in &topics {
        if let Some(id) = t.linked_proposal_id {
            scores.offer(id, &t.title);
        }
    }
    let missing: Vec<i64> = scores.ids().filter(|id| !found.contains_key(id)).collect();
    found.extend(store::items::proposals_by_ids(db, &missing).await?.into_iter().map(|p| (p.id, p)));
    Ok(scores.rank(found.into_values().collect()))
}
