//! `GET /v2/daos/{daoId}/voters`, `GET /v2/voters/{voterIdentity}`,
//! `GET /v2/voters/{voterIdentity}/votes`.
use poem::web::Data;
use poem_openapi::{
    Object, OpenApi,
    param::{Path, Query},
    payload::Json,
};

use super::{Listing, V2Tag, bound, resolve_voter};
use crate::api::{
    AppState,
    views::{
        item::ItemRef,
        voter::{VoterNames, participation_rate as rate},
    },
};
use crate::contract::params::DaoIdParam;
use crate::contract::time::Timestamp;
use crate::contract::vocabulary::ItemKind;
use crate::contract::vocabulary::SourceKind;
use crate::contract::{
    api_error::ApiError,
    cursor_shape::cursor_shape,
    decimal::DELEGATED_POWER_FROM_FLOAT,
    envelope::{CacheStatus, Freshness, V2List, V2Single},
    errors::{ParamLocation, Problem},
    limits::MostLists,
    operations::{Operation, VoterVotesListV2, VotersGetV2, VotersListV2},
    params::{DAO_ID_PARAM, DaoFilter, DaoScope, V2Limit, V2Timestamp, resolve_v2_window},
};
use crate::store::{
    self,
    keysets::{RankAfter, TimeAfter},
};

/// A voter's place in one DAO's ranking.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct RankedVoter {
    /// 1 for the largest voting power; continues across pages.
    pub rank: String,
    #[oai(flatten)]
    pub voter: VoterNames,
    /// Voting power of the voter's most recent vote in the DAO, exact.
    pub voting_power: String,
    /// {{VOTING_POWER_FROM_FLOAT}}
    pub voting_power_from_float: bool,
    pub votes_cast: String,
    /// Votes cast ÷ the DAO's proposals held here, exact to {{SHARE_DECIMALS}} decimals.
    pub participation_rate: String,
    pub first_vote_at: Timestamp,
    pub last_vote_at: Timestamp,
}

impl poem_openapi::types::Example for RankedVoter {
    fn example() -> Self {
        Self {
            rank: "1".to_owned(),
            voter: gauntlet(),
            voting_power: "2755022.0714428956".to_owned(),
            voting_power_from_float: true,
            votes_cast: "17".to_owned(),
            participation_rate: "0.68".to_owned(),
            first_vote_at: Timestamp::known("2025-03-04T00:00:00.000Z"),
            last_vote_at: Timestamp::known("2025-12-03T00:00:00.000Z"),
        }
    }
}

/// Delegated on-chain voting power.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct Delegation {
    /// Token units, exact.
    pub voting_power: String,
    /// {{VOTING_POWER_FROM_FLOAT}}
    pub voting_power_from_float: bool,
    /// The raw integer in the token's smallest unit.
    pub voting_power_raw: String,
    pub decimals: i32,
    pub delegators: Option<String>,
    pub as_of: Timestamp,
}

/// A voter's standing in one DAO.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct VoterInDao {
    pub dao_id: String,
    /// Voting power of the most recent vote in the DAO, exact; absent without votes.
    pub voting_power: Option<String>,
    /// {{VOTING_POWER_FROM_FLOAT}} Present exactly when `votingPower` is.
    pub voting_power_from_float: Option<bool>,
    pub votes_cast: String,
    /// Votes cast ÷ the DAO's proposals held here, exact to {{SHARE_DECIMALS}} decimals.
    pub participation_rate: String,
    pub first_vote_at: Option<Timestamp>,
    pub last_vote_at: Option<Timestamp>,
    /// Delegated power and delegators, where known.
    pub delegation: Option<Delegation>,
}

/// A voter across DAOs.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct VoterProfile {
    #[oai(flatten)]
    pub voter: VoterNames,
    /// The voter's display name, when the store knows one.
    pub name: Option<String>,
    pub daos: Vec<VoterInDao>,
}

impl poem_openapi::types::Example for VoterProfile {
    fn example() -> Self {
        Self {
            voter: gauntlet(),
            name: Some("Gauntlet".to_owned()),
            daos: vec![VoterInDao {
                dao_id: "uniswap".to_owned(),
                voting_power: Some("2755022.0714428956".to_owned()),
                voting_power_from_float: Some(true),
                votes_cast: "17".to_owned(),
                participation_rate: "0.68".to_owned(),
                first_vote_at: Some(Timestamp::known("2025-03-04T00:00:00.000Z")),
                last_vote_at: Some(Timestamp::known("2025-12-03T00:00:00.000Z")),
                delegation: None,
            }],
        }
    }
}

/// One vote of a voter's history.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct VoterVote {
    #[oai(flatten)]
    pub voter: VoterNames,
    pub proposal: ItemRef,
    /// The choice exactly as recorded.
    pub choice: String,
    /// Exact voting power as received.
    pub voting_power: String,
    /// {{VOTING_POWER_FROM_FLOAT}}
    pub voting_power_from_float: bool,
    pub created_at: Timestamp,
    /// Where the voting power was read: the proposal's snapshot (a block number, or a time in
    /// seconds on a governor whose clock is `mode=timestamp`), when the upstream gave one.
    pub voting_power_at: Option<String>,
}

impl poem_openapi::types::Example for VoterVote {
    fn example() -> Self {
        Self {
            voter: gauntlet(),
            proposal: ItemRef {
                kind: ItemKind::Proposal,
                dao_id: "uniswap".to_owned(),
                source: SourceKind::Snapshot.as_str().to_owned(),
                external_id: "0x1086839122667be04c0eec25ba224fe4ac1b990383ddfe05b80ce201a06b4abf".to_owned(),
                key: Some("p_3q2-7wAAAAAAAAAAAAAAAA".to_owned()),
                title: Some("Strategic Renewal of Gnosis, Linea, and Mantle Deployments".to_owned()),
                url: None,
            },
            choice: "3".to_owned(),
            voting_power: "2755022.0714428956".to_owned(),
            voting_power_from_float: true,
            created_at: Timestamp::known("2025-12-03T00:00:00.000Z"),
            voting_power_at: Some("21000000".to_owned()),
        }
    }
}

/// The examples' voter, as the bundled sample names it.
fn gauntlet() -> VoterNames {
    VoterNames {
        voter_identity: "0x683a4f9915d6216f73d6df50151725036bd26c02".to_owned(),
        address: "0x683a4F9915D6216f73d6Df50151725036bD26C02".to_owned(),
        ens: Some("gauntletgov.eth".to_owned()),
    }
}

fn not_found_voter(v: &str) -> Problem {
    Problem::not_found(format!("No votes or delegation are held for the voter `{v}`."))
}

cursor_shape! {
    /// What a cursor of `GET /v2/daos/{daoId}/voters` is bound to: the DAO's id.
    VotersShape<'a> for VotersListV2 { dao: &'a str => DAO_ID_PARAM }
}

cursor_shape! {
    /// What a cursor of `GET /v2/voters/{voterIdentity}/votes` is bound to: the voter's canonical
    /// address and the filters.
    VoterVotesShape<'a> for VoterVotesListV2 {
        voter: &'a str => "voter",
        dao: &'a DaoScope => DAO_ID_PARAM,
        window: Option<(i64, i64)> => "window",
    }
}

pub struct Api;

#[OpenApi(prefix_path = "/v2", tag = "V2Tag::Voters")]
impl Api {
    /// Rank a DAO's voters
    ///
    /// The voters of one DAO by voting power (the power of each voter's most recent vote in the
    /// DAO), largest first, with votes cast and participation rate, all exact. The cursor is
    /// rank-oriented (voting power, then address): a deep page costs what the first one costs.
    #[oai(path = "/daos/:daoId/voters", method = "get", operation_id = "v2_voters_list")]
    async fn voters_list(
        &self,
        state: Data<&AppState>,
        /// The DAO's slug.
        #[oai(name = "daoId")]
        dao_id: Path<DaoIdParam>,
        /// Rows per page.
        limit: Query<Option<V2Limit<MostLists>>>,
        /// `meta.page.nextCursor` of the previous page, unchanged.
        cursor: Query<Option<String>>,
    ) -> Result<Json<V2List<RankedVoter>>, ApiError<VotersListV2>> {
        let limit = V2Limit::resolve(limit.0);
        // This operation's 404 has always been worded without the pointer to the list.
        let no_dao = |id: &str| Problem::not_found(format!("No DAO has the id `{id}`."));
        let dao = dao_id.0.parse().map_err(|received| no_dao(&received))?;
        let dao = store::daos::get(&state.reads(), dao.as_str()).await?.ok_or_else(|| no_dao(dao.as_str()))?;
        let proposals = dao.summary.as_ref().map(|s| s.proposals);
        let list = Listing::<VotersListV2, RankAfter>::new(&state, Some(&dao.dao.id), limit)
            .filtered(VotersShape { dao: &dao.dao.id });
        let after = list.after(cursor.0.as_deref())?;
        let rows = store::voters::ranking(&state.reads(), &dao.dao.id, after.as_ref(), list.rows_to_read()).await?;
        Ok(list.page(
            super::ranked(after.as_ref(), rows),
            |(rank, (s, _))| s.keyset(*rank),
            |(rank, (s, v))| RankedVoter {
                rank: rank.to_string(),
                participation_rate: rate(s.votes_cast, proposals),
                voter: VoterNames::new(s.voter, v),
                voting_power: s.voting_power,
                voting_power_from_float: s.vp_from_float,
                votes_cast: s.votes_cast.to_string(),
                first_vote_at: Timestamp::from_ms(s.first_vote_ms),
                last_vote_at: Timestamp::from_ms(s.last_vote_ms),
            },
        ))
    }

    /// Get a voter's cross-DAO profile
    ///
    /// One voter across every covered DAO: per DAO the voting power, votes cast, participation
    /// rate, first and last vote, and delegated power with delegators where known. Name the voter
    /// by a 0x address in any letter case, a CAIP-10 account (`eip155:1:0x…` for 20-byte EVM accounts,
    /// `starknet:SN_MAIN:0x…` for 32-byte Starknet ones, each checked against its namespace) or a known ENS
    /// name (an unknown one is a 404).
    #[oai(path = "/voters/:voterIdentity", method = "get", operation_id = "v2_voters_get")]
    async fn voters_get(
        &self,
        state: Data<&AppState>,
        /// An address, CAIP-10 account or ENS name.
        #[oai(name = "voterIdentity")]
        voter_identity: Path<String>,
    ) -> Result<Json<V2Single<VoterProfile>>, ApiError<VotersGetV2>> {
        let addr = resolve_voter(&state, &voter_identity.0, "voterIdentity", ParamLocation::Path).await?;
        let voter =
            store::voters::get(&state.reads(), &addr).await?.ok_or_else(|| not_found_voter(&voter_identity.0))?;
        let standing = store::voters::standing(&state.reads(), &addr).await?;
        let mut daos: Vec<String> = standing
            .stats
            .iter()
            .map(|s| s.dao_id.clone())
            .chain(standing.delegations.iter().map(|d| d.dao_id.clone()))
            .collect();
        daos.sort();
        daos.dedup();
        let profile = VoterProfile {
            voter: VoterNames::new(voter.address, voter.ens),
            name: voter.name,
            daos: daos
                .into_iter()
                .map(|dao| {
                    let s = standing.stats.iter().find(|s| s.dao_id == dao);
                    let d = standing.delegations.iter().find(|d| d.dao_id == dao);
                    VoterInDao {
                        voting_power: s.map(|s| s.voting_power.clone()),
                        voting_power_from_float: s.map(|s| s.vp_from_float),
                        votes_cast: s.map_or(0, |s| s.votes_cast).to_string(),
                        participation_rate: rate(
                            s.map_or(0, |s| s.votes_cast),
                            standing.proposals_per_dao.get(&dao).copied(),
                        ),
                        first_vote_at: s.map(|s| Timestamp::from_ms(s.first_vote_ms)),
                        last_vote_at: s.map(|s| Timestamp::from_ms(s.last_vote_ms)),
                        delegation: d.map(|d| Delegation {
                            voting_power: d.voting_power.clone(),
                            voting_power_from_float: DELEGATED_POWER_FROM_FLOAT,
                            voting_power_raw: d.voting_power_raw.clone(),
                            decimals: d.decimals,
                            delegators: d.delegators_count.map(|n| n.to_string()),
                            as_of: Timestamp::from_ms(d.as_of_ms),
                        }),
                        dao_id: dao,
                    }
                })
                .collect(),
        };
        let serving = bound(&state, None);
        Ok(Json(V2Single::new(profile, Freshness::new(serving.data_as_of_ms, CacheStatus::Fresh))))
    }

    /// List a voter's votes
    ///
    /// One voter's voting history across DAOs, newest first: each vote with its proposal, the
    /// choice as recorded and the exact voting power. Filter by `daoId` and a window of at most
    /// {{PROPOSALS_AND_HISTORY_WINDOW_DAYS}} days (`from`/`to`, RFC 3339, on the vote's time). Keyset-paginated with `cursor`.
    #[oai(path = "/voters/:voterIdentity/votes", method = "get", operation_id = "v2_voter_votes_list")]
    #[allow(clippy::too_many_arguments)]
    async fn voter_votes_list(
        &self,
        state: Data<&AppState>,
        /// An address, CAIP-10 account or ENS name.
        #[oai(name = "voterIdentity")]
        voter_identity: Path<String>,
        /// Only votes in this DAO.
        #[oai(name = "daoId")]
        dao_id: Query<Option<DaoFilter>>,
        /// Window start (inclusive).
        from: Query<Option<V2Timestamp>>,
        /// Window end (inclusive).
        to: Query<Option<V2Timestamp>>,
        /// Rows per page.
        limit: Query<Option<V2Limit<MostLists>>>,
        /// `meta.page.nextCursor` of the previous page, unchanged.
        cursor: Query<Option<String>>,
    ) -> Result<Json<V2List<VoterVote>>, ApiError<VoterVotesListV2>> {
        let limit = V2Limit::resolve(limit.0);
        // As released, an empty `daoId` is a filter (matching nothing), not its absence.
        let dao = DaoFilter::resolve_keeping_empty(dao_id.0);
        let window = resolve_v2_window(from.0, to.0, <VoterVotesListV2 as Operation>::WINDOW)?;
        let addr = resolve_voter(&state, &voter_identity.0, "voterIdentity", ParamLocation::Path).await?;
        let voter =
            store::voters::get(&state.reads(), &addr).await?.ok_or_else(|| not_found_voter(&voter_identity.0))?;
        // Every row names the same voter: the one just read (no further query).
        let names = VoterNames::new(voter.address, voter.ens);
        let list = Listing::<VoterVotesListV2, TimeAfter>::new(&state, dao.received(), limit)
            .filtered(VoterVotesShape { voter: &addr, dao: &dao, window });
        let after = list.after(cursor.0.as_deref())?;
        let rows = match dao.store_filter() {
            Some(dao_id) => {
                store::voters::history(&state.reads(), &addr, dao_id, window, after, list.rows_to_read()).await?
            }
            None => Vec::new(),
        };
        Ok(list.page(
            rows,
            |(v, _)| v.keyset(),
            |(v, p)| VoterVote {
                voter: names.clone(),
                proposal: ItemRef {
                    kind: ItemKind::Proposal,
                    dao_id: p.dao_id,
                    source: p.source.as_str().to_owned(),
                    external_id: p.external_id,
                    key: Some(p.proposal_key),
                    title: Some(p.title),
                    url: p.url,
                },
                choice: v.choice,
                voting_power: v.voting_power,
                voting_power_from_float: v.vp_from_float,
                created_at: Timestamp::from_ms(v.created_ms),
                voting_power_at: p.snapshot_block,
            },
        ))
    }
}
