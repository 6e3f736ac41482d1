//! Read queries: voters, their per-DAO standing and their voting history.
use std::collections::HashMap;

use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use super::entities::{dao_summary, delegate, proposal, vote, voter, voter_dao_stat};

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

/// One DAO's voters by voting power (then address), after a keyset position.
pub async fn ranking(
    db: &impl ConnectionTrait,
    dao_id: &str,
    after: Option<(String, String)>,
    limit: u64,
) -> Result<Vec<(voter_dao_stat::Model, Option<voter::Model>)>, DbErr> {
    use voter_dao_stat::Column as C;
    let mut q = voter_dao_stat::Entity::find().filter(C::DaoId.eq(dao_id));
    if let Some((vp_sort, voter)) = after {
        q = q.filter(super::after_desc_asc(C::VpSort, C::Voter, (vp_sort, voter)));
    }
    let rows = q.order_by_desc(C::VpSort).order_by_asc(C::Voter).limit(limit).all(db).await?;
    let voters = by_address(db, rows.iter().map(|r| r.voter.clone())).await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let v = voters.get(&r.voter).cloned();
            (r, v)
        })
        .collect())
}

/// The stored voters among `addresses` (canonical lowercase), by address: one `IN` query
/// whatever the number (a page is at most a few hundred rows), none for an empty list. Every
/// answer that names several voters reads their ENS names through this, once per request.
pub async fn by_address(
    db: &impl ConnectionTrait,
    addresses: impl IntoIterator<Item = String>,
) -> Result<HashMap<String, voter::Model>, DbErr> {
    let mut addresses: Vec<String> = addresses.into_iter().collect();
    addresses.sort();
    addresses.dedup();
    if addresses.is_empty() {
        return Ok(HashMap::new());
    }
    Ok(voter::Entity::find()
        .filter(voter::Column::Address.is_in(addresses))
        .all(db)
        .await?
        .into_iter()
        .map(|v| (v.address.clone(), v))
        .collect())
}

/// A voter's votes newest first, with their proposals (two queries).
pub async fn history(
    db: &impl ConnectionTrait,
    address: &str,
    dao_id: Option<&str>,
    window: Option<(i64, i64)>,
    after: Option<(i64, i64)>,
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
    if let Some((t, id)) = after {
        q = q.filter(super::after_desc(C::CreatedMs, C::Id, (t, id)));
    }
    let votes = q.order_by_desc(C::CreatedMs).order_by_desc(C::Id).limit(limit).all(db).await?;
    let ids: Vec<i64> = votes.iter().map(|v| v.proposal_id).collect();
    let proposals: HashMap<i64, proposal::Model> =
        super::items::proposals_by_ids(db, &ids).await?.into_iter().map(|p| (p.id, p)).collect();
    Ok(votes.into_iter().filter_map(|v| proposals.get(&v.proposal_id).cloned().map(|p| (v, p))).collect())
}
