//! Read queries: voters, their per-DAO standing and their voting history.
use std::collections::HashMap;

use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, FromQueryResult, QueryFilter, QueryOrder, QueryResult,
    QuerySelect, sea_query::Expr,
};

use super::entities::{dao_summary, delegate, proposal, vote, voter, voter_dao_stat};
use crate::contract::vocabulary::DaoId;

/// The canonical address of an ENS name the store knows.
pub async fn address_of_ens(db: &impl ConnectionTrait, ens: &str) -> Result<Option<String>, DbErr> {
    Ok(voter::Entity::find().filter(voter::Column::Ens.eq(ens)).one(db).await?.map(|v| v.address))
}

pub async fn get(db: &impl ConnectionTrait, address: &str) -> Result<Option<voter::Model>, DbErr> {
    voter::Entity::find_by_id(address.to_owned()).one(db).await
}

/// A voter's standing in each DAO: stats, delegation, and the DAO's proposal count (for the
/// participation rate). Four queries whatever the number of DAOs.
pub struct Standing {
    pub stats: Vec<voter_dao_stat::Model>,
    pub delegations: Vec<delegate::Model>,
    pub proposals_per_dao: HashMap<String, i64>,
}

pub async fn standing(db: &impl ConnectionTrait, address: &str) -> Result<Standing, DbErr> {
    let stats = voter_dao_stat::Entity::find()
        .filter(voter_dao_stat::Column::Voter.eq(address))
        .order_by_asc(voter_dao_stat::Column::DaoId)
        .all(db)
        .await?;
    let delegations = delegate::Entity::find()
        .filter(delegate::Column::Address.eq(address))
        .order_by_asc(delegate::Column::DaoId)
        .all(db)
        .await?;
    let mut daos: Vec<String> =
        stats.iter().map(|s| s.dao_id.clone()).chain(delegations.iter().map(|d| d.dao_id.clone())).collect();
    daos.sort();
    daos.dedup();
    let proposals_per_dao = dao_summary::Entity::find()
        .filter(dao_summary::Column::DaoId.is_in(daos))
        .all(db)
        .await?
        .into_iter()
        .map(|s| (s.dao_id, s.proposals))
        .collect();
    Ok(Standing { stats, delegations, proposals_per_dao })
}

/// One DAO's voters by voting power (then address), after a keyset position, each with the ENS name
/// the store knows for the voter (one statement: see [`ens_sql`]).
pub async fn ranking(
    db: &impl ConnectionTrait,
    dao_id: &str,
    after: Option<&super::keysets::RankAfter>,
    limit: u64,
) -> Result<Vec<(voter_dao_stat::Model, Option<String>)>, DbErr> {
    use voter_dao_stat::Column as C;
    let mut q = voter_dao_stat::Entity::find().filter(C::DaoId.eq(dao_id));
    if let Some(after) = after {
        q = q.filter(super::after_desc_asc(C::VpSort, C::Voter, (after.power.sort.clone(), after.voter.clone())));
    }
    q.column_as(Expr::cust(ens_sql(r#""voter_dao_stats"."voter""#)), VOTER_ENS)
        .order_by_desc(C::VpSort)
        .order_by_asc(C::Voter)
        .limit(limit)
        .into_model::<RankedRow>()
        .all(db)
        .await
        .map(|rows| rows.into_iter().map(|r| (r.stats, r.ens)).collect())
}

/// A voter's standing in a DAO with the voter's ENS name, read in one statement.
struct RankedRow {
    stats: voter_dao_stat::Model,
    ens: Option<String>,
}

impl FromQueryResult for RankedRow {
    fn from_query_result(res: &QueryResult, pre: &str) -> Result<Self, DbErr> {
        Ok(Self { stats: voter_dao_stat::Model::from_query_result(res, pre)?, ens: res.try_get(pre, VOTER_ENS)? })
    }
}

/// The alias of the ENS name [`ens_sql`] selects beside a row.
pub const VOTER_ENS: &str = "voter_ens";

/// SQL for the ENS name the store knows for the canonical address `address_sql` (NULL when it
/// knows none): a lookup by the voters' primary key, made for each row a statement returns.
pub fn ens_sql(address_sql: &str) -> String {
    format!(r#"(SELECT "ens" FROM "voters" WHERE "voters"."address" = {address_sql})"#)
}

/// The ENS names the store knows for `addresses` (canonical lowercase), by address: one `IN`
/// query whatever the number (a page is at most a few hundred rows), none for an empty list.
/// Every answer that names several voters reads their ENS names through this, once per request.
/// Only named voters come back, two columns each: most voters have no ENS name, and on SQLite
/// every row returned is a hop between the database thread and the request (a page of 100 votes
/// read 100 more rows when this returned every voter whole; see issue 18's measurements).
pub async fn ens_names(
    db: &impl ConnectionTrait,
    addresses: impl IntoIterator<Item = String>,
) -> Result<HashMap<String, String>, DbErr> {
    let mut addresses: Vec<String> = addresses.into_iter().collect();
    addresses.sort();
    addresses.dedup();
    if addresses.is_empty() {
        return Ok(HashMap::new());
    }
    voter::Entity::find()
        .select_only()
        .column(voter::Column::Address)
        .column(voter::Column::Ens)
        .filter(voter::Column::Address.is_in(addresses))
        .filter(voter::Column::Ens.is_not_null())
        .into_tuple::<(String, String)>()
        .all(db)
        .await
        .map(HashMap::from_iter)
}

/// A voter's votes newest first, with their proposals (two queries).
pub async fn history(
    db: &impl ConnectionTrait,
    address: &str,
    dao_id: Option<&DaoId>,
    window: Option<(i64, i64)>,
    after: Option<super::keysets::TimeAfter>,
    limit: u64,
) -> Result<Vec<(vote::Model, proposal::Model)>, DbErr> {
    use vote::Column as C;
    let voter = super::address::AccountBytes::parse(address).map_err(|e| DbErr::Custom(e.to_string()))?;
    let mut q = vote::Entity::find().filter(C::Voter.eq(voter));
    if let Some(d) = dao_id {
        q = q.filter(C::DaoId.eq(d));
    }
    if let Some((from, to)) = window {
        q = q.filter(C::CreatedMs.gte(from)).filter(C::CreatedMs.lte(to));
    }
    if let Some(after) = after {
        q = q.filter(super::after_desc(C::CreatedMs, C::Id, (after.ms, after.id)));
    }
    let votes = q.order_by_desc(C::CreatedMs).order_by_desc(C::Id).limit(limit).all(db).await?;
    let ids: Vec<i64> = votes.iter().map(|v| v.proposal_id).collect();
    let proposals: HashMap<i64, proposal::Model> =
        super::items::proposals_by_ids(db, &ids).await?.into_iter().map(|p| (p.id, p)).collect();
    Ok(votes.into_iter().filter_map(|v| proposals.get(&v.proposal_id).cloned().map(|p| (v, p))).collect())
}
