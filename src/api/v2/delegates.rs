//! The on-chain delegation Tally's users lost (issue 29): `GET /v2/daos/{daoId}/delegates`,
//! `GET /v2/voters/{voterIdentity}/delegations` and `GET /v2/voters/{voterIdentity}/power`,
//! served from the token's own logs (`ingest::governor`): every `DelegateChanged` and every
//! `DelegateVotesChanged`, exact in the token's smallest unit.
use poem::web::Data;
use poem_openapi::{
    Enum, Object, OpenApi,
    param::{Path, Query},
    payload::Json,
};

use super::{Listing, V2Tag, resolve_voter};
use crate::api::{
    AppState,
    views::{
        delegation::{DelegationChange, change_item, units},
        voter::{VoterNames, participation_rate as rate},
    },
};
use crate::contract::{
    api_error::ApiError,
    cursor_shape::{ShapeText, cursor_shape},
    decimal::{self, DELEGATED_POWER_FROM_FLOAT},
    envelope::V2List,
    errors::{ParamLocation, Problem},
    limits::MostLists,
    operations::{DelegatesListV2, NotableDelegationsListV2, Operation, VoterDelegationsListV2, VoterPowerListV2},
    params::{DAO_ID_PARAM, DaoFilter, DaoIdParam, DaoScope, V2Limit, V2Timestamp, resolve_v2_window},
    time::Timestamp,
    vocabulary::PowerCause,
};
use crate::store::{
    self,
    entities::{delegation_change, power_checkpoint},
    governor::{RankedDelegate, Side},
    keysets::{LogAfter, RankAfter},
};

/// A delegate of one DAO, ranked by delegated voting power.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct DelegateRank {
    /// 1 for the largest delegated power; continues across pages.
    pub rank: String,
    #[oai(flatten)]
    pub voter: VoterNames,
    /// Delegated voting power in token units, exact.
    pub voting_power: String,
    /// {{VOTING_POWER_FROM_FLOAT}}
    pub voting_power_from_float: bool,
    /// The same power as the raw integer in the token's smallest unit (`getVotes`).
    pub voting_power_raw: String,
    pub decimals: i32,
    /// Holders whose current delegate this is, where known.
    pub delegators_count: Option<String>,
    /// Votes the delegate cast in the DAO.
    pub votes_cast: String,
    /// Votes cast ÷ the DAO's proposals held here, exact to {{SHARE_DECIMALS}} decimals.
    pub participation_rate: String,
    /// The delegate's most recent vote in the DAO; absent when it never voted.
    pub last_vote_at: Option<Timestamp>,
    /// When the power was read (the newest block read from the token).
    pub as_of: Timestamp,
}

impl poem_openapi::types::Example for DelegateRank {
    fn example() -> Self {
        Self {
            rank: "1".to_owned(),
            voter: VoterNames::new("0x683a4f9915d6216f73d6df50151725036bd26c02".to_owned(), None),
            voting_power: "345043.375299837213698988".to_owned(),
            voting_power_from_float: false,
            voting_power_raw: "345043375299837213698988".to_owned(),
            decimals: 18,
            delegators_count: Some("151".to_owned()),
            votes_cast: "17".to_owned(),
            participation_rate: "0.68".to_owned(),
            last_vote_at: Some(Timestamp::known("2025-12-03T00:00:00.000Z")),
            as_of: Timestamp::known("2026-03-01T12:00:00.000Z"),
        }
    }
}

/// Why a voting power changed, and who made it change.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct PowerChangeCause {
    pub kind: PowerCause,
    /// For a delegation: the holder who delegated to the voter or moved away.
    pub delegator: Option<String>,
}

/// One change of a voter's delegated voting power (a checkpoint of the token).
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct PowerChange {
    pub dao_id: String,
    /// The power after the change, in token units, exact: what `getPastVotes(voter, blockNumber)`
    /// returns once the block is past, for the last change of its block.
    pub voting_power: String,
    /// {{VOTING_POWER_FROM_FLOAT}}
    pub voting_power_from_float: bool,
    /// The same power as the raw integer in the token's smallest unit.
    pub voting_power_raw: String,
    /// The power before the change, in token units, exact.
    pub previous_voting_power: String,
    pub previous_voting_power_raw: String,
    /// `votingPower - previousVotingPower`, signed, in token units, exact.
    pub change: String,
    pub decimals: i32,
    pub cause: PowerChangeCause,
    pub block_number: String,
    pub log_index: String,
    pub transaction_hash: String,
    pub at: Timestamp,
}

impl poem_openapi::types::Example for PowerChange {
    fn example() -> Self {
        Self {
            dao_id: "uniswap".to_owned(),
            voting_power: "352821.153077615000476765".to_owned(),
            voting_power_from_float: false,
            voting_power_raw: "352821153077615000476765".to_owned(),
            previous_voting_power: "345043.375299837213698988".to_owned(),
            previous_voting_power_raw: "345043375299837213698988".to_owned(),
            change: "7777.777777777777777777".to_owned(),
            decimals: 18,
            cause: PowerChangeCause {
                kind: PowerCause::Delegation,
                delegator: Some("0x70997970c51812dc3a010c7d01b50e0d17dc79c8".to_owned()),
            },
            block_number: "19000012".to_owned(),
            log_index: "42".to_owned(),
            transaction_hash: "0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060".to_owned(),
            at: Timestamp::known("2026-03-01T12:00:00.000Z"),
        }
    }
}

/// Which side of a delegation change a voter is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum DelegationSide {
    /// Changes the voter made as a holder.
    Delegator,
    /// Changes that moved a holder's votes to the voter or away from it.
    Delegate,
}

/// `after - before` in token units, signed, exact.
fn difference(after: &str, before: &str, decimals: i32) -> String {
    let scale = decimals.max(0) as u32;
    match (decimal::scale_down(after, scale), decimal::scale_down(before, scale)) {
        (Ok(a), Ok(b)) => decimal::plain(&(a - b)),
        _ => "0".to_owned(),
    }
}

fn power_item(p: power_checkpoint::Model) -> PowerChange {
    PowerChange {
        voting_power: units(&p.power_raw, p.decimals),
        previous_voting_power: units(&p.previous_raw, p.decimals),
        change: difference(&p.power_raw, &p.previous_raw, p.decimals),
        voting_power_from_float: DELEGATED_POWER_FROM_FLOAT,
        voting_power_raw: p.power_raw,
        previous_voting_power_raw: p.previous_raw,
        decimals: p.decimals,
        cause: PowerChangeCause { kind: p.cause, delegator: p.cause_delegator.map(|d| d.lower()) },
        dao_id: p.dao_id,
        block_number: p.block_number.to_string(),
        log_index: p.log_index.to_string(),
        transaction_hash: p.tx_hash,
        at: Timestamp::from_ms(p.at_ms),
    }
}

cursor_shape! {
    /// What a cursor of `GET /v2/daos/{daoId}/delegates` is bound to: the DAO's id.
    DelegatesShape<'a> for DelegatesListV2 { dao: &'a str => DAO_ID_PARAM }
}

cursor_shape! {
    /// What a cursor of `GET /v2/daos/{daoId}/notable-delegations` is bound to.
    NotableDelegationsShape<'a> for NotableDelegationsListV2 {
        dao: &'a str => DAO_ID_PARAM,
        window: Option<(i64, i64)> => "window",
    }
}

cursor_shape! {
    /// What a cursor of `GET /v2/voters/{voterIdentity}/delegations` is bound to: the voter's
    /// canonical address and the filters.
    VoterDelegationsShape<'a> for VoterDelegationsListV2 {
        voter: &'a str => "voter",
        dao: &'a DaoScope => DAO_ID_PARAM,
        side: Option<Side> => "side",
        window: Option<(i64, i64)> => "window",
    }
}

cursor_shape! {
    /// What a cursor of `GET /v2/voters/{voterIdentity}/power` is bound to.
    VoterPowerShape<'a> for VoterPowerListV2 {
        voter: &'a str => "voter",
        dao: &'a DaoScope => DAO_ID_PARAM,
        window: Option<(i64, i64)> => "window",
    }
}

/// A side as the delegation list's cursors have always carried it (the variant's name), written
/// out so that renaming a variant does not refuse the cursors in flight.
impl ShapeText for Side {
    fn shape_text(&self) -> String {
        match self {
            Self::Delegator => "Delegator",
            Self::Delegate => "Delegate",
        }
        .to_owned()
    }
}

pub struct Api;

#[OpenApi(prefix_path = "/v2", tag = "V2Tag::Delegates")]
impl Api {
    /// Rank a DAO's delegates
    ///
    /// The delegates of one DAO's governance token by delegated voting power (the token's
    /// `getVotes`), largest first, exact in token units and in the raw integer, with how many
    /// holders delegate to each and how each delegate votes (votes cast, participation rate, last
    /// vote). The cursor is rank-oriented (power, then address): a deep page costs what the first
    /// one costs.
    #[oai(path = "/daos/:daoId/delegates", method = "get", operation_id = "v2_delegates_list")]
    async fn delegates_list(
        &self,
        state: Data<&AppState>,
        /// The DAO's slug.
        #[oai(name = "daoId")]
        dao_id: Path<DaoIdParam>,
        /// Rows per page.
        limit: Query<Option<V2Limit<MostLists>>>,
        /// `meta.page.nextCursor` of the previous page, unchanged.
        cursor: Query<Option<String>>,
    ) -> Result<Json<V2List<DelegateRank>>, ApiError<DelegatesListV2>> {
        let limit = V2Limit::resolve(limit.0);
        let no_dao = |id: &str| Problem::not_found(format!("No DAO has the id `{id}`. `GET /v2/daos` lists them."));
        let dao = dao_id.0.parse().map_err(|received| no_dao(&received))?;
        let dao = store::daos::get(&state.reads(), dao.as_str()).await?.ok_or_else(|| no_dao(dao.as_str()))?;
        let proposals = dao.summary.as_ref().map(|s| s.proposals);
        let list = Listing::<DelegatesListV2, RankAfter>::new(&state, Some(&dao.dao.id), limit)
            .filtered(DelegatesShape { dao: &dao.dao.id });
        let after = list.after(cursor.0.as_deref())?;
        let rows = store::governor::delegates(&state.reads(), &dao.dao.id, after.as_ref(), list.rows_to_read()).await?;
        Ok(list.page(
            super::ranked(after.as_ref(), rows),
            |(rank, r)| r.delegate.keyset(*rank),
            |(rank, RankedDelegate { delegate: d, ens, stats })| DelegateRank {
                rank: rank.to_string(),
                voter: VoterNames::new(d.address, ens),
                voting_power: d.voting_power,
                voting_power_from_float: DELEGATED_POWER_FROM_FLOAT,
                voting_power_raw: d.voting_power_raw,
                decimals: d.decimals,
                delegators_count: d.delegators_count.map(|n| n.to_string()),
                votes_cast: stats.as_ref().map_or(0, |s| s.votes_cast).to_string(),
                participation_rate: rate(stats.as_ref().map_or(0, |s| s.votes_cast), proposals),
                last_vote_at: stats.map(|s| Timestamp::from_ms(s.last_vote_ms)),
                as_of: Timestamp::from_ms(d.as_of_ms),
            },
        ))
    }

    /// List a DAO's notable delegation changes
    ///
    /// The on-chain delegation changes of one DAO's token that moved at least
    /// {{NOTABLE_DELEGATION_PERCENT}}% of its total supply at their block (the holder's balance,
    /// compared exactly with `totalSupply()` as of the block), newest first: who moved how much
    /// from which delegate to which, the supply and the share, with block, log index,
    /// transaction and time. The feed, its stream and webhooks carry each as a
    /// `delegation_changed` entry as it is published. Filter by a window of at most
    /// {{PROPOSALS_AND_HISTORY_WINDOW_DAYS}} days (`from`/`to`, RFC 3339, on the block's time).
    /// Keyset-paginated with `cursor`; the history only grows, so a cursor stays valid.
    #[oai(path = "/daos/:daoId/notable-delegations", method = "get", operation_id = "v2_notable_delegations_list")]
    async fn notable_delegations_list(
        &self,
        state: Data<&AppState>,
        /// The DAO's slug.
        #[oai(name = "daoId")]
        dao_id: Path<DaoIdParam>,
        /// Window start (inclusive).
        from: Query<Option<V2Timestamp>>,
        /// Window end (inclusive).
        to: Query<Option<V2Timestamp>>,
        /// Rows per page.
        limit: Query<Option<V2Limit<MostLists>>>,
        /// `meta.page.nextCursor` of the previous page, unchanged.
        cursor: Query<Option<String>>,
    ) -> Result<Json<V2List<DelegationChange>>, ApiError<NotableDelegationsListV2>> {
        let limit = V2Limit::resolve(limit.0);
        let window = resolve_v2_window(from.0, to.0, <NotableDelegationsListV2 as Operation>::WINDOW)?;
        let no_dao = |id: &str| Problem::not_found(format!("No DAO has the id `{id}`. `GET /v2/daos` lists them."));
        let dao_id = dao_id.0.parse().map_err(|received| no_dao(&received))?;
        let dao = store::daos::get(&state.reads(), dao_id.as_str()).await?.ok_or_else(|| no_dao(dao_id.as_str()))?;
        let list = Listing::<NotableDelegationsListV2, LogAfter>::append_only(&state, limit)
            .filtered(NotableDelegationsShape { dao: &dao.dao.id, window });
        let after = list.after(cursor.0.as_deref())?;
        let rows =
            store::governor::notable_delegations(&state.reads(), &dao_id, window, after, list.rows_to_read()).await?;
        Ok(list.page(rows, delegation_change::Model::keyset, change_item))
    }

    /// List a voter's delegation changes
    ///
    /// Every on-chain delegation change that involves the voter, newest first: those it made as a
    /// holder (`side=delegator`) and those that moved a holder's votes to it or away from it
    /// (`side=delegate`); both without `side`. Each with the delegates left and chosen, the power
    /// that moved, and its block, log index, transaction and time. Filter by `daoId` and a window of
    /// at most {{PROPOSALS_AND_HISTORY_WINDOW_DAYS}} days (`from`/`to`, RFC 3339, on the block's
    /// time). Keyset-paginated with `cursor`; the history only grows, so a cursor stays valid.
    #[oai(path = "/voters/:voterIdentity/delegations", method = "get", operation_id = "v2_voter_delegations_list")]
    #[allow(clippy::too_many_arguments)]
    async fn voter_delegations_list(
        &self,
        state: Data<&AppState>,
        /// An address, CAIP-10 account or ENS name.
        #[oai(name = "voterIdentity")]
        voter_identity: Path<String>,
        /// Only changes in this DAO.
        #[oai(name = "daoId")]
        dao_id: Query<Option<DaoFilter>>,
        /// Only the changes where the voter is on this side.
        side: Query<Option<DelegationSide>>,
        /// Window start (inclusive).
        from: Query<Option<V2Timestamp>>,
        /// Window end (inclusive).
        to: Query<Option<V2Timestamp>>,
        /// Rows per page.
        limit: Query<Option<V2Limit<MostLists>>>,
        /// `meta.page.nextCursor` of the previous page, unchanged.
        cursor: Query<Option<String>>,
    ) -> Result<Json<V2List<DelegationChange>>, ApiError<VoterDelegationsListV2>> {
        let limit = V2Limit::resolve(limit.0);
        let dao = DaoFilter::resolve(dao_id.0);
        let window = resolve_v2_window(from.0, to.0, <VoterDelegationsListV2 as Operation>::WINDOW)?;
        let addr = resolve_voter(&state, &voter_identity.0, "voterIdentity", ParamLocation::Path).await?;
        let side = side.0.map(|s| match s {
            DelegationSide::Delegator => Side::Delegator,
            DelegationSide::Delegate => Side::Delegate,
        });
        let list = Listing::<VoterDelegationsListV2, LogAfter>::append_only(&state, limit)
            .filtered(VoterDelegationsShape { voter: &addr, dao: &dao, side, window });
        let after = list.after(cursor.0.as_deref())?;
        let rows = match dao.store_filter() {
            Some(dao_id) => {
                store::governor::delegations(&state.reads(), &addr, dao_id, side, window, after, list.rows_to_read())
                    .await?
            }
            None => Vec::new(),
        };
        Ok(list.page(rows, delegation_change::Model::keyset, change_item))
    }

    /// List a voter's voting power over time
    ///
    /// Every change of the voter's delegated on-chain voting power, newest first, as the token
    /// checkpointed it (`DelegateVotesChanged`): the power before and after, exact in token units
    /// and in the raw integer, and its cause: a delegation (naming the holder) or a token transfer
    /// (also a mint or a burn). The power after the last change of a block is what the token's
    /// `getPastVotes(voter, block)` returns. Filter by `daoId` and a window of at most
    /// {{PROPOSALS_AND_HISTORY_WINDOW_DAYS}} days (`from`/`to`, RFC 3339, on the block's time).
    /// Keyset-paginated with `cursor`; the history only grows, so a cursor stays valid.
    #[oai(path = "/voters/:voterIdentity/power", method = "get", operation_id = "v2_voter_power_list")]
    #[allow(clippy::too_many_arguments)]
    async fn voter_power_list(
        &self,
        state: Data<&AppState>,
        /// An address, CAIP-10 account or ENS name.
        #[oai(name = "voterIdentity")]
        voter_identity: Path<String>,
        /// Only the voter's power in this DAO.
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
    ) -> Result<Json<V2List<PowerChange>>, ApiError<VoterPowerListV2>> {
        let limit = V2Limit::resolve(limit.0);
        let dao = DaoFilter::resolve(dao_id.0);
        let window = resolve_v2_window(from.0, to.0, <VoterPowerListV2 as Operation>::WINDOW)?;
        let addr = resolve_voter(&state, &voter_identity.0, "voterIdentity", ParamLocation::Path).await?;
        let list = Listing::<VoterPowerListV2, LogAfter>::append_only(&state, limit).filtered(VoterPowerShape {
            voter: &addr,
            dao: &dao,
            window,
        });
        let after = list.after(cursor.0.as_deref())?;
        let rows = match dao.store_filter() {
            Some(dao_id) => {
                store::governor::power(&state.reads(), &addr, dao_id, window, after, list.rows_to_read()).await?
            }
            None => Vec::new(),
        };
        Ok(list.page(rows, power_checkpoint::Model::keyset, power_item))
    }
}
