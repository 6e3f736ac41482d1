//! `GET /v1/daos/{daoId}/brief`: a compact summary of one DAO, read in one call.
use poem::web::Data;
use poem_openapi::{Enum, Object, OpenApi, param::Path, payload::Json};

use super::V1Tag;
use crate::api::{
    AppState,
    views::{
        dao::Dao,
        event::{GovernanceEvent, event_from_row},
        item::{ItemRef, item_ref},
        voter::{KnownVoters, VoterNames},
    },
};
use crate::contract::params::{DAO_ID_PARAM, DaoIdParam};
use crate::contract::time::Timestamp;
use crate::contract::vocabulary::ItemKind;
use crate::contract::vocabulary::SourceKind;
use crate::contract::voting::{TallyMethod, tally_method};
use crate::contract::{
    api_error::ApiError,
    decimal::DELEGATED_POWER_FROM_FLOAT,
    envelope::{CacheStatus, Freshness, V1Envelope, V1Request},
    errors::{FieldError, ParamLocation, Problem},
    operations::BriefGetV1 as Op,
    signals::{Severity, SignalKind},
};
use crate::rules::evidence::{self, Quorum};
use crate::rules::tally::{self, Tally};
use crate::store::keys;
use crate::store::{
    self,
    brief::{BriefData, SignalRow, TalliedProposal},
    entities::{delegate, voter_dao_stat},
};

/// Whether the votes that count toward a proposal's quorum reached it: the upstream score total,
/// or, for an on-chain governor that declares its counting, the supports it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum QuorumStatus {
    /// The counted votes (the upstream `scoresTotal`, or For and Abstain on an OpenZeppelin
    /// governor) are at least the quorum.
    Reached,
    /// The counted votes are below the quorum.
    NotReached,
    /// The proposal has no quorum (zero).
    NoQuorum,
    /// The quorum or the total is not known.
    Unknown,
}

/// One choice of a tally, exact.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct BriefChoiceScore {
    /// The choice's 1-based index, as Snapshot numbers them.
    pub choice: String,
    /// The choice's label, when the upstream gave the labels.
    pub label: Option<String>,
    /// Voting power credited to the choice, exact decimal.
    pub score: String,
    /// `score / countedPower`, rounded half-even to {{SHARE_DECIMALS}} decimals.
    pub share: String,
}

/// Per-choice totals computed from the votes held in this store.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct BriefTally {
    /// What the tally covers, in words: "covers N ingested of M upstream votes".
    pub coverage: String,
    /// Votes held in this store for the proposal.
    pub ingested_votes: String,
    /// The upstream vote total (Snapshot `votes`), when known. May exceed `ingestedVotes`.
    pub upstream_votes: Option<String>,
    /// Votes counted (ingested votes whose choice could be read).
    pub counted_votes: String,
    /// Ingested votes whose choice could not be read; reported, never guessed.
    pub unreadable_votes: String,
    /// Sum of the counted votes' voting power, exact.
    pub counted_power: String,
    /// What each choice's score is for this voting type: `sum` (the result, exactly),
    /// `first_preferences` (ranked-choice, copeland) or `allocated_power` (quadratic); only a
    /// `sum` decides the outcome, the others are what the ballots gave outright, and the outcome
    /// is the upstream's scores.
    pub method: TallyMethod,
    /// Choices by score, highest first.
    pub choices: Vec<BriefChoiceScore>,
}

/// A proposal with where it stands (active) or how it ended (closed).
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct BriefProposal {
    pub proposal: ItemRef,
    /// `active`, `closed`, or an on-chain state.
    pub state: String,
    pub voting_type: Option<String>,
    pub start_at: Option<Timestamp>,
    pub end_at: Option<Timestamp>,
    /// The leading choice of the ingested tally (index), absent when no vote was counted.
    pub leading_choice: Option<String>,
    pub leading_label: Option<String>,
    /// The leading choice's share of the counted power in the ingested tally.
    pub leading_share: Option<String>,
    /// The leading choice's share in percent as the upstream reported it (covers every upstream vote).
    pub upstream_top_choice_pct: Option<String>,
    /// The upstream total voting power (Snapshot `scores_total`), exact text.
    pub scores_total: Option<String>,
    /// The upstream quorum, exact text.
    pub quorum: Option<String>,
    /// The votes that count toward `quorum` against it, compared exactly: `scoresTotal`, or for an
    /// on-chain governor the supports its `COUNTING_MODE()` counts (For and Abstain).
    pub quorum_status: QuorumStatus,
    /// The tally of the votes held in this store.
    pub tally: BriefTally,
}

/// A voter ranked by voting power in the DAO.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct BriefVoter {
    #[oai(flatten)]
    pub names: VoterNames,
    /// Voting power of the voter's most recent vote in the DAO, exact text as received.
    pub voting_power: String,
    /// {{VOTING_POWER_FROM_FLOAT}}
    pub voting_power_from_float: bool,
    /// Ingested votes cast in the DAO.
    pub votes_cast: String,
    pub last_vote_at: Timestamp,
}

/// A delegate ranked by delegated voting power.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct BriefDelegate {
    // Unlike `address` on the rows that name a voter (EIP-55), this one stays lowercase: the
    // released v1 document states it so, and a client may compare it as text. `voterIdentity`
    // carries the same canonical form under the name every voter row uses.
    /// Lowercase 0x address (the same as `voterIdentity`).
    pub address: String,
    /// The delegate's canonical handle: the lowercase 0x address. Every `voterIdentity` parameter
    /// accepts it.
    pub voter_identity: String,
    /// The delegate's ENS name, when the store knows it; absent otherwise.
    pub ens: Option<String>,
    /// Delegated voting power in tokens, exact.
    pub voting_power: String,
    /// {{VOTING_POWER_FROM_FLOAT}}
    pub voting_power_from_float: bool,
    /// The same in the token's smallest unit.
    pub voting_power_raw: String,
    pub decimals: i32,
    pub delegators_count: Option<String>,
    /// When the power was recorded.
    pub as_of: Timestamp,
}

/// A signal, in brief; `/v1/governance-signals` has its evidence.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase")]
pub struct BriefSignal {
    /// The id of `/v1/governance-signals`.
    pub id: String,
    pub kind: SignalKind,
    pub severity: Severity,
    pub detected_at: Timestamp,
    pub summary: String,
    pub subject: ItemRef,
}

/// One DAO in brief. When nothing has been ingested for the DAO (`cacheStatus` `registry_only`),
/// only `dao` is present.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct DaoBrief {
    pub dao: Dao,
    /// Proposals open for voting, soonest deadline first, with their current tallies.
    pub active_proposals: Option<Vec<BriefProposal>>,
    /// The latest closed proposals latest end first, with their outcomes.
    pub recently_closed: Option<Vec<BriefProposal>>,
    /// Voters by the power of their latest vote in the DAO, highest first.
    pub top_voters: Option<Vec<BriefVoter>>,
    /// Delegates by delegated power, highest first.
    pub top_delegates: Option<Vec<BriefDelegate>>,
    /// The latest governance events, newest first.
    pub recent_activity: Option<Vec<GovernanceEvent>>,
    /// The latest signals, newest first.
    pub signals: Option<Vec<BriefSignal>>,
}

impl poem_openapi::types::Example for DaoBrief {
    fn example() -> Self {
        let id = "0x04d6219c392f3f6187779f609d6cad21e3b3d6091809355ad12ba6bb39b55834";
        let entropy = "0xb4c064f466931b8d0f637654c916e3f203c46f13";
        Self {
            dao: Dao::example(),
            active_proposals: Some(vec![BriefProposal {
                proposal: ItemRef {
                    kind: ItemKind::Proposal,
                    dao_id: "arbitrum".to_owned(),
                    source: SourceKind::Snapshot.as_str().to_owned(),
                    external_id: id.to_owned(),
                    key: Some("p_jBoe944IRWGAxKmax-bd0Q".to_owned()),
                    title: Some("[Constitutional] AIP: ArbOS 60 Elara".to_owned()),
                    url: Some(format!("https://snapshot.box/#/s:arbitrumfoundation.eth/proposal/{id}")),
                },
                state: "active".to_owned(),
                voting_type: Some("basic".to_owned()),
                start_at: Some(Timestamp::known("2026-03-26T00:00:00.000Z")),
                end_at: Some(Timestamp::known("2026-04-02T00:00:00.000Z")),
                leading_choice: Some("1".to_owned()),
                leading_label: Some("For".to_owned()),
                leading_share: Some("0.9999264647".to_owned()),
                upstream_top_choice_pct: Some("100.0".to_owned()),
                scores_total: Some("64266592.58089078".to_owned()),
                quorum: Some("0".to_owned()),
                quorum_status: QuorumStatus::NoQuorum,
                tally: BriefTally {
                    coverage: "covers 2 ingested of 1196 upstream votes".to_owned(),
                    ingested_votes: "2".to_owned(),
                    upstream_votes: Some("1196".to_owned()),
                    counted_votes: "2".to_owned(),
                    unreadable_votes: "0".to_owned(),
                    counted_power: "25024703.3752255581".to_owned(),
                    method: TallyMethod::Sum,
                    choices: vec![
                        BriefChoiceScore {
                            choice: "1".to_owned(),
                            label: Some("For".to_owned()),
                            score: "25022863.177013237".to_owned(),
                            share: "0.9999264647".to_owned(),
                        },
                        BriefChoiceScore {
                            choice: "2".to_owned(),
                            label: Some("Against".to_owned()),
                            score: "1840.1982123211".to_owned(),
                            share: "0.0000735353".to_owned(),
                        },
                    ],
                },
            }]),
            recently_closed: Some(vec![]),
            top_voters: Some(vec![BriefVoter {
                names: VoterNames::new(entropy.to_owned(), None),
                voting_power: "25022863.177013237".to_owned(),
                voting_power_from_float: true,
                votes_cast: "5".to_owned(),
                last_vote_at: Timestamp::known("2025-07-31T00:00:00.000Z"),
            }]),
            top_delegates: Some(vec![BriefDelegate {
                address: entropy.to_owned(),
                voter_identity: entropy.to_owned(),
                ens: None,
                voting_power: "32356232.635466191207258781".to_owned(),
                voting_power_from_float: DELEGATED_POWER_FROM_FLOAT,
                voting_power_raw: "32356232635466191207258781".to_owned(),
                decimals: 18,
                delegators_count: Some("151".to_owned()),
                as_of: Timestamp::known("2026-04-02T00:00:00.000Z"),
            }]),
            recent_activity: Some(vec![GovernanceEvent::example()]),
            signals: Some(vec![]),
        }
    }
}

fn quorum_status(scores_total: Option<&str>, quorum: Option<&str>) -> QuorumStatus {
    match evidence::quorum(quorum, scores_total) {
        Quorum::Reached => QuorumStatus::Reached,
        Quorum::NotReached => QuorumStatus::NotReached,
        Quorum::NoQuorum => QuorumStatus::NoQuorum,
        Quorum::Unknown => QuorumStatus::Unknown,
    }
}

fn ingested_tally(
    t: &Tally,
    voting_type: Option<&str>,
    ingested: i64,
    upstream: Option<i64>,
    labels: &[String],
) -> BriefTally {
    let label = |c: u32| labels.get(c.checked_sub(1)? as usize).cloned();
    BriefTally {
        method: tally_method(voting_type),
        coverage: match upstream {
            Some(m) => format!("covers {ingested} ingested of {m} upstream votes"),
            None => format!("covers {ingested} ingested votes; the upstream total is not known"),
        },
        ingested_votes: ingested.to_string(),
        upstream_votes: upstream.map(|m| m.to_string()),
        counted_votes: t.votes_counted.to_string(),
        unreadable_votes: t.votes_unreadable.to_string(),
        counted_power: tally::score_text(&t.total_power),
        choices: t
            .ranked()
            .into_iter()
            .map(|(c, score)| BriefChoiceScore {
                choice: c.to_string(),
                label: label(c),
                share: tally::share(&score, &t.total_power),
                score: tally::score_text(&score),
            })
            .collect(),
    }
}

fn standing(tp: TalliedProposal) -> BriefProposal {
    let TalliedProposal { proposal: p, tally: t } = tp;
    let labels = p.choices.clone().unwrap_or_default().0;
    let tally = ingested_tally(&t, p.voting_type.as_deref(), p.ingested_vote_count, p.upstream_vote_count, &labels);
    let leader = tally.choices.first().cloned();
    BriefProposal {
        proposal: ItemRef {
            kind: ItemKind::Proposal,
            dao_id: p.dao_id,
            source: p.source.as_str().to_owned(),
            external_id: p.external_id,
            key: Some(p.proposal_key),
            title: Some(p.title),
            url: p.url,
        },
        state: p.state.as_str().to_owned(),
        voting_type: p.voting_type,
        start_at: p.start_ms.map(Timestamp::from_ms),
        end_at: p.end_ms.map(Timestamp::from_ms),
        leading_choice: leader.as_ref().map(|c| c.choice.clone()),
        leading_label: leader.as_ref().and_then(|c| c.label.clone()),
        leading_share: leader.map(|c| c.share),
        upstream_top_choice_pct: p.top_choice_pct,
        quorum_status: quorum_status(
            evidence::quorum_votes(
                p.counting_mode.as_deref(),
                p.scores.as_ref().map(|s| s.0.as_slice()),
                p.scores_total.as_deref(),
            )
            .as_deref(),
            p.quorum.as_deref(),
        ),
        scores_total: p.scores_total,
        quorum: p.quorum,
        tally,
    }
}

fn top_voter(s: voter_dao_stat::Model, known: &KnownVoters) -> BriefVoter {
    BriefVoter {
        names: known.names(&s.voter),
        voting_power: s.voting_power,
        voting_power_from_float: s.vp_from_float,
        votes_cast: s.votes_cast.to_string(),
        last_vote_at: Timestamp::from_ms(s.last_vote_ms),
    }
}

fn top_delegate(d: delegate::Model, known: &KnownVoters) -> BriefDelegate {
    BriefDelegate {
        ens: known.names(&d.address).ens,
        voter_identity: d.address.clone(),
        address: d.address,
        voting_power: d.voting_power,
        voting_power_from_float: DELEGATED_POWER_FROM_FLOAT,
        voting_power_raw: d.voting_power_raw,
        decimals: d.decimals,
        delegators_count: d.delegators_count.map(|n| n.to_string()),
        as_of: Timestamp::from_ms(d.as_of_ms),
    }
}

fn brief_signal(s: SignalRow) -> BriefSignal {
    let subject = item_ref(
        s.subject_kind,
        &s.dao_id,
        s.subject_source,
        &s.subject_external_id,
        s.subject_key,
        s.subject_title,
        s.subject_url,
    );
    BriefSignal {
        id: keys::signal_id(&s.natural_key),
        kind: s.kind,
        severity: s.severity,
        detected_at: Timestamp::from_ms(s.detected_ms),
        summary: s.summary,
        subject,
    }
}

pub struct Api;

#[OpenApi(prefix_path = "/v1", tag = "V1Tag::Daos")]
impl Api {
    /// A DAO in brief
    ///
    /// Everything an agent needs about one DAO in one call: the DAO with its sources, counts and
    /// freshness; the proposals open for voting with their current exact per-choice tallies; the
    /// latest closed proposals with their outcomes (leading choice and share, upstream score total
    /// against quorum); the top voters and delegates by voting power; the latest governance events;
    /// and the latest signals. Tallies are computed exactly from the votes held in this store and
    /// say how many of the upstream votes they cover; the upstream totals (`scoresTotal`,
    /// `upstreamTopChoicePct`) are given beside them. `cacheStatus` is `registry_only`, with only
    /// `dao`, when nothing has been ingested for the DAO yet. Unknown `daoId` → 404.
    #[oai(path = "/daos/:daoId/brief", method = "get", operation_id = "brief_get")]
    async fn brief_get(
        &self,
        state: Data<&AppState>,
        req: V1Request,
        /// The DAO's slug, as `GET /v1/daos` lists it (`uniswap`, `arbitrum`, …); another letter case
        /// is served under the lowercase slug and recorded (`normalized`).
        #[oai(name = "daoId")]
        dao_id: Path<DaoIdParam>,
    ) -> Result<Json<V1Envelope<DaoBrief>>, ApiError<Op>> {
        let mut req = req;
        let dao = dao_id.0.resolve_v1(&mut req).map_err(|received| {
            Problem::validation(FieldError {
                location: ParamLocation::Path,
                name: DAO_ID_PARAM.to_owned(),
                reason: "is not a DAO slug".to_owned(),
                expected: Some("a lowercase slug such as `arbitrum`".to_owned()),
                received: Some(received),
            })
        })?;
        let (record, data) =
            store::brief::get(&state.reads(), &dao).await?.ok_or_else(|| Problem::unknown_dao(dao.as_str()))?;
        let as_of = record.summary.as_ref().and_then(|s| s.data_as_of_ms);
        let status = if data.is_some() { CacheStatus::Fresh } else { CacheStatus::RegistryOnly };
        let dao = Dao::from_record(record)?;
        let brief = match data {
            None => DaoBrief {
                dao,
                active_proposals: None,
                recently_closed: None,
                top_voters: None,
                top_delegates: None,
                recent_activity: None,
                signals: None,
            },
            Some(BriefData {
                active,
                recently_closed,
                top_voters,
                top_delegates,
                known_voters,
                recent_events,
                signals,
            }) => {
                let known = KnownVoters::from(known_voters);
                DaoBrief {
                    dao,
                    active_proposals: Some(active.into_iter().map(standing).collect()),
                    recently_closed: Some(recently_closed.into_iter().map(standing).collect()),
                    top_voters: Some(top_voters.into_iter().map(|v| top_voter(v, &known)).collect()),
                    top_delegates: Some(top_delegates.into_iter().map(|d| top_delegate(d, &known)).collect()),
                    recent_activity: Some(recent_events.into_iter().map(event_from_row).collect()),
                    signals: Some(signals.into_iter().map(brief_signal).collect()),
                }
            }
        };
        Ok(Json(req.respond(Freshness::new(as_of, status), brief)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quorum_is_compared_exactly() {
        assert_eq!(quorum_status(Some("10000000"), Some("10000000")), QuorumStatus::Reached);
        assert_eq!(quorum_status(Some("9999999.9999999999"), Some("10000000")), QuorumStatus::NotReached);
        assert_eq!(quorum_status(Some("5"), Some("0")), QuorumStatus::NoQuorum);
        assert_eq!(quorum_status(None, Some("1")), QuorumStatus::Unknown);
        assert_eq!(quorum_status(Some("x"), Some("1")), QuorumStatus::Unknown);
    }
}
