//! Curated signals as both surfaces serve them, with their rule, evidence and citations, and the
//! `kind` filter both surfaces take.
use std::{borrow::Cow, sync::OnceLock};

use poem_openapi::{
    Object,
    registry::{MetaSchema, MetaSchemaRef},
    types::{ParseError, ParseFromParameter, ParseResult, Type},
};
use sea_orm::ConnectionTrait;

use crate::api::views::{
    citation::{self, Citation, fields},
    item::ItemRef,
    voter::{KnownVoters, VoterNames},
};
use crate::contract::time::Timestamp;
use crate::contract::vocabulary::UnknownValue;
use crate::contract::vocabulary::{ItemKind, ProposalSource, SourceKind};
use crate::contract::{
    errors::Problem,
    signals::{Severity, SignalKind, rules_text},
};
use crate::rules::signals::{CitationRecord, Evidence};
use crate::store::failures::problem_marking_read_failed;
use crate::store::keys;
use crate::store::signals::SignalRecord;

/// The `kind` filter: one of the rule names. Its schema lists every rule with its thresholds,
/// built from `contract::signals`, so the document states each rule exactly once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindFilter(pub SignalKind);

impl Type for KindFilter {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> Cow<'static, str> {
        "signal_kind_filter".into()
    }

    fn schema_ref() -> MetaSchemaRef {
        static TEXT: OnceLock<&'static str> = OnceLock::new();
        let text = TEXT.get_or_init(|| {
            Box::leak(format!("A rule name. The rules, each with its severity:\n{}", rules_text()).into_boxed_str())
        });
        let mut s = MetaSchema::new("string");
        s.enum_items = SignalKind::ALL.iter().map(|k| k.as_str().into()).collect();
        s.description = Some(text);
        MetaSchemaRef::Inline(Box::new(s))
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        Box::new(self.as_raw_value().into_iter())
    }
}

impl ParseFromParameter for KindFilter {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        SignalKind::parse(value).map(Self).map_err(|_| ParseError::custom(format!("`{value}` is not a signal kind")))
    }
}

/// A rule's threshold.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
pub struct RuleThreshold {
    /// `maxMarginShare`, `windowMs`, ...: durations are in milliseconds.
    pub name: String,
    /// Exact decimal string.
    pub value: String,
}

/// The rule that produced a signal.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
pub struct SignalRule {
    /// The rule's name (same as the signal's `kind`).
    pub name: String,
    /// The rule in words, with its thresholds.
    pub definition: String,
    /// The thresholds, as exact decimal strings (empty when the rule has none).
    pub thresholds: Vec<RuleThreshold>,
}

impl SignalRule {
    fn of(kind: SignalKind) -> Self {
        Self {
            name: kind.as_str().to_owned(),
            definition: kind.definition(),
            thresholds: kind
                .thresholds()
                .into_iter()
                .map(|t| RuleThreshold { name: t.name.to_owned(), value: t.value })
                .collect(),
        }
    }
}

/// One choice's score computed from the ingested votes.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(skip_serializing_if_is_none)]
pub struct SignalChoiceScore {
    /// 1-based choice number, as Snapshot numbers them.
    pub choice: String,
    /// The choice's label (For/Against/Abstain for `basic` proposals).
    pub label: Option<String>,
    /// Exact decimal string.
    pub score: String,
}

/// The vote that decided an outcome.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct DecidingVote {
    /// Lowercase 0x address (the same as `voterIdentity`).
    pub voter: String,
    #[oai(flatten)]
    pub names: VoterNames,
    /// Exact voting power as received.
    pub voting_power: String,
    /// {{VOTING_POWER_FROM_FLOAT}}
    pub voting_power_from_float: bool,
    /// The choice exactly as the upstream gave it.
    pub choice: String,
    /// What the vote gave the leading choice minus what it gave the runner-up (margin rule).
    pub effect: Option<String>,
    pub created_at: Timestamp,
}

/// The exact numbers that triggered a signal, and their sources. Members that do not apply to
/// the rule are absent. Scores and tallies from ingested votes cover the votes held here
/// (`ingestedVotes`), which the tally rules require to equal the upstream count (`upstreamVotes`).
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct SignalEvidence {
    /// Snapshot voting type (`basic`, `single-choice`, ...).
    pub voting_type: Option<String>,
    /// Proposal state when the signal was computed.
    pub state: Option<String>,
    /// Upstream `scores_total` (exact decimal string).
    pub scores_total: Option<String>,
    /// The proposal's quorum.
    pub quorum: Option<String>,
    /// `scoresTotal / quorum`, rounded half-even to 10 digits.
    pub quorum_share: Option<String>,
    /// Votes cast according to the upstream.
    pub upstream_votes: Option<String>,
    /// Votes held in this store.
    pub ingested_votes: Option<String>,
    /// Per-choice scores computed exactly from the ingested votes.
    pub tally: Option<Vec<SignalChoiceScore>>,
    /// Power the race is measured against: For + Against (`basic`), all choice scores otherwise.
    pub counted_power: Option<String>,
    /// The leading choice's number; absent on a tie.
    pub leading_choice: Option<String>,
    pub runner_up_choice: Option<String>,
    /// Leading score minus runner-up score.
    pub margin: Option<String>,
    /// `margin / countedPower`, rounded half-even to 10 digits.
    pub margin_share: Option<String>,
    /// The data time the rule was evaluated at (the revision's `dataAsOf`), for active proposals.
    pub as_of: Option<Timestamp>,
    /// Voting time left at `asOf`, in milliseconds.
    pub time_left_ms: Option<String>,
    /// `quorum_not_reached` or `tally` (proposal outcomes).
    pub outcome_basis: Option<String>,
    /// `margin` and/or `quorum` (single_voter_decisive).
    pub decided_by: Option<Vec<String>>,
    pub deciding_vote: Option<DecidingVote>,
    /// Upstream `scores_total` minus the deciding vote's power.
    pub scores_total_without_vote: Option<String>,
    /// Median upstream vote count of the DAO's earlier closed proposals.
    pub median_upstream_votes: Option<String>,
    /// How many earlier closed proposals the median covers.
    pub history_proposals: Option<String>,
    /// This proposal's vote count divided by the median, rounded half-even to 10 digits.
    pub turnout_ratio: Option<String>,
    /// The proposal's author (lowercase address).
    pub author: Option<String>,
    /// Earlier proposals of the DAO held.
    pub prior_proposals: Option<String>,
    /// Posts within the spike window.
    pub posts_in_window: Option<String>,
    pub window_start: Option<Timestamp>,
    pub window_end: Option<Timestamp>,
    /// Posts of the topic held.
    pub topic_posts: Option<String>,
    /// Where each number comes from.
    pub citations: Vec<Citation>,
}

impl SignalEvidence {
    /// The stored evidence of a signal about a proposal from `source` (the signal's
    /// `subject_source`), its deciding voter named from `known`.
    fn from_store(e: Evidence, source: SourceKind, known: &KnownVoters) -> Result<Self, UnknownValue> {
        // The stored deciding vote carries no flag (and stored evidence must keep parsing): whether
        // its power arrived as a float is what its proposal's source declares, as for every vote.
        let deciding_vote = e
            .deciding_vote
            .map(|v| {
                Ok::<_, UnknownValue>(DecidingVote {
                    names: known.names(&v.voter),
                    voter: v.voter,
                    voting_power: v.voting_power,
                    voting_power_from_float: ProposalSource::of(source)?.power_from_float(),
                    choice: v.choice,
                    effect: v.effect,
                    created_at: Timestamp::from_ms(v.created_ms),
                })
            })
            .transpose()?;
        Ok(Self {
            voting_type: e.voting_type,
            state: e.state,
            scores_total: e.scores_total,
            quorum: e.quorum,
            quorum_share: e.quorum_share,
            upstream_votes: e.upstream_votes,
            ingested_votes: e.ingested_votes,
            tally: e.tally.map(|t| {
                t.into_iter().map(|c| SignalChoiceScore { choice: c.choice, label: c.label, score: c.score }).collect()
            }),
            counted_power: e.counted_power,
            leading_choice: e.leading_choice,
            runner_up_choice: e.runner_up_choice,
            margin: e.margin,
            margin_share: e.margin_share,
            as_of: e.as_of_ms.map(Timestamp::from_ms),
            time_left_ms: e.time_left_ms,
            outcome_basis: e.outcome_basis,
            decided_by: e.decided_by,
            deciding_vote,
            scores_total_without_vote: e.scores_total_without_vote,
            median_upstream_votes: e.median_upstream_votes,
            history_proposals: e.history_proposals,
            turnout_ratio: e.turnout_ratio,
            author: e.author,
            prior_proposals: e.prior_proposals,
            posts_in_window: e.posts_in_window,
            window_start: e.window_start_ms.map(Timestamp::from_ms),
            window_end: e.window_end_ms.map(Timestamp::from_ms),
            topic_posts: e.topic_posts,
            citations: e.citations.into_iter().map(citation).collect(),
        })
    }
}

fn citation(c: CitationRecord) -> Citation {
    Citation {
        supports: c.supports,
        source: c.source,
        url: c.url,
        snapshot_id: c.snapshot_id,
        ipfs: c.ipfs,
        tx_hash: c.tx_hash,
        block_number: c.block_number,
        dataset: None,
    }
}

/// A curated governance signal.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", example)]
pub struct Signal {
    /// The signal's public id: `sg_` and 22 URL-safe characters derived from its `key`, so it is the
    /// same after a re-import and on every store (`/v1/activity` uses the same id).
    pub id: String,
    /// Stable identity across stores and publications: `<rule>:<daoId>:<source>:<externalId>`.
    pub key: String,
    pub kind: SignalKind,
    pub severity: Severity,
    /// The rule that produced it, with its thresholds.
    pub rule: SignalRule,
    pub dao_id: String,
    /// The proposal or forum topic the signal is about.
    pub subject: ItemRef,
    /// The data time that triggered the signal (a proposal's end, the revision's `dataAsOf` for
    /// active proposals, a proposal's creation, a forum post's time); RFC 3339 UTC, milliseconds.
    pub detected_at: Timestamp,
    /// One line with the exact numbers.
    pub summary: String,
    pub evidence: SignalEvidence,
}

impl Signal {
    /// The signals of `records`, in order. The deciding voters of the page are named from the
    /// store's voters, read at once (one query, none when no signal has a deciding vote).
    pub async fn from_records(db: &impl ConnectionTrait, records: Vec<SignalRecord>) -> Result<Vec<Self>, Problem> {
        let read = records
            .into_iter()
            .map(|r| {
                let evidence = r.evidence().map_err(|e| {
                    tracing::error!(error = %e, key = %r.signal.natural_key, "unreadable signal evidence");
                    Problem::internal()
                })?;
                Ok((r, evidence))
            })
            .collect::<Result<Vec<_>, Problem>>()?;
        let voters = read.iter().filter_map(|(_, e)| Some(e.deciding_vote.as_ref()?.voter.clone()));
        let known = KnownVoters::load(db, voters).await.map_err(|e| problem_marking_read_failed(&e))?;
        read.into_iter().map(|(r, evidence)| Self::from_record(r, evidence, &known)).collect()
    }

    fn from_record(r: SignalRecord, evidence: Evidence, known: &KnownVoters) -> Result<Self, Problem> {
        let s = r.signal;
        let evidence = SignalEvidence::from_store(evidence, s.subject_source, known)?;
        Ok(Self {
            id: keys::signal_id(&s.natural_key),
            key: s.natural_key,
            kind: s.kind,
            severity: s.severity,
            rule: SignalRule::of(s.kind),
            subject: ItemRef {
                kind: s.subject_kind,
                dao_id: s.dao_id.clone(),
                source: s.subject_source.as_str().to_owned(),
                external_id: s.subject_external_id,
                key: r.subject.as_ref().map(|x| x.key.clone()),
                title: r.subject.as_ref().map(|x| x.title.clone()),
                url: r.subject.and_then(|x| x.url),
            },
            dao_id: s.dao_id,
            detected_at: Timestamp::from_ms(s.detected_ms),
            summary: s.summary,
            evidence,
        })
    }
}

impl poem_openapi::types::Example for Signal {
    fn example() -> Self {
        let id = "0x1086839122667be04c0eec25ba224fe4ac1b990383ddfe05b80ce201a06b4abf";
        let url = format!("https://snapshot.box/#/s:uniswapgovernance.eth/proposal/{id}");
        Self {
            id: "sg_J0lZtN4QvX2xW9cKpLr8aQ".to_owned(),
            key: format!("quorum_reached:uniswap:snapshot:{id}"),
            kind: SignalKind::QuorumReached,
            severity: Severity::Info,
            rule: SignalRule::of(SignalKind::QuorumReached),
            dao_id: "uniswap".to_owned(),
            subject: ItemRef {
                kind: ItemKind::Proposal,
                dao_id: "uniswap".to_owned(),
                source: SourceKind::Snapshot.as_str().to_owned(),
                external_id: id.to_owned(),
                key: Some("p_3kq2Xg5t0r8yH1aBcDeFgA".to_owned()),
                title: Some("Uniswap Unleashed: Protocol Fee".to_owned()),
                url: Some(url.clone()),
            },
            detected_at: Timestamp::known("2025-12-07T00:00:00.000Z"),
            summary: "Quorum reached on \"Uniswap Unleashed: Protocol Fee\": scores_total 13713881.867694754 ≥ \
                      quorum 10000000 (1.3713881868 of the quorum)."
                .to_owned(),
            evidence: SignalEvidence {
                voting_type: Some("basic".to_owned()),
                state: Some("closed".to_owned()),
                scores_total: Some("13713881.867694754".to_owned()),
                quorum: Some("10000000".to_owned()),
                quorum_share: Some("1.3713881868".to_owned()),
                upstream_votes: Some("449".to_owned()),
                ingested_votes: Some("449".to_owned()),
                tally: None,
                counted_power: None,
                leading_choice: None,
                runner_up_choice: None,
                margin: None,
                margin_share: None,
                as_of: None,
                time_left_ms: None,
                outcome_basis: None,
                decided_by: None,
                deciding_vote: None,
                scores_total_without_vote: None,
                median_upstream_votes: None,
                history_proposals: None,
                turnout_ratio: None,
                author: None,
                prior_proposals: None,
                posts_in_window: None,
                window_start: None,
                window_end: None,
                topic_posts: None,
                citations: vec![Citation {
                    url: Some(url),
                    snapshot_id: Some(id.to_owned()),
                    ..citation::citation(
                        SourceKind::Snapshot.as_str(),
                        fields(&["scoresTotal", "quorum", "upstreamVotes"]),
                    )
                }],
            },
        }
    }
}
