//! Read queries over the governor history (migration 16): a voter's delegation changes and
//! voting power checkpoints, and a DAO's delegates by delegated power.
//!
//! Every list reads at most one page per index it seeks (`limit` rows), whatever the voter's
//! history or the store holds: the window and the cursor are range bounds of the index order.
use std::collections::HashMap;

use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DbBackend, DbErr, EntityTrait, FromQueryResult, QueryFilter, QueryOrder,
    QuerySelect, Select, Statement,
    sea_query::{Expr, ExprTrait},
};

use super::address::AccountBytes;
use super::entities::{delegate, delegation_change, power_checkpoint, voter_dao_stat};
use super::keysets::{LogAfter, PowerKey, RankAfter};
use crate::contract::vocabulary::DaoId;

/// Which side of a delegation change a voter is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The holder who delegated.
    Delegator,
    /// The delegate the holder left or chose.
    Delegate,
}

/// `(at_ms, block_number, log_index) < after`, with a leading bound an index can seek.
fn before<C: ColumnTrait>(ms: C, block: C, log: C, after: LogAfter) -> Condition {
    Condition::all().add(ms.lte(after.ms)).add(
        Condition::any().add(ms.lt(after.ms)).add(
            Condition::all().add(ms.eq(after.ms)).add(
                Condition::any()
                    .add(block.lt(after.block))
                    .add(Condition::all().add(block.eq(after.block)).add(log.lt(after.log))),
            ),
        ),
    )
}

impl delegation_change::Model {
    pub fn keyset(&self) -> LogAfter {
        LogAfter { ms: self.at_ms, block: self.block_number, log: self.log_index }
    }
}

impl power_checkpoint::Model {
    pub fn keyset(&self) -> LogAfter {
        LogAfter { ms: self.at_ms, block: self.block_number, log: self.log_index }
    }
}

/// A voter's delegation changes, newest first: those it made as a delegator and those that
/// moved votes to or from it as a delegate, or only one side.
pub async fn delegations(
    db: &impl ConnectionTrait,
    address: &str,
    dao_id: Option<&DaoId>,
    side: Option<Side>,
    window: Option<(i64, i64)>,
    after: Option<LogAfter>,
    limit: u64,
) -> Result<Vec<delegation_change::Model>, DbErr> {
    let address = AccountBytes::parse(address).map_err(|e| DbErr::Custom(e.to_string()))?;
    let backend = db.get_database_backend();
    let mut rows: Vec<delegation_change::Model> = Vec::new();
    for statement in delegations_statements(backend, &address, dao_id, side, window, after, limit) {
        rows.extend(delegation_change::Model::find_by_statement(statement).all(db).await?);
    }
    // A self-delegation names the voter twice; the merged page keeps each change once.
    rows.sort_by(|a, b| {
        (b.at_ms, b.block_number, b.log_index, b.id).cmp(&(a.at_ms, a.block_number, a.log_index, a.id))
    });
    rows.dedup_by_key(|r| r.id);
    rows.truncate(limit as usize);
    Ok(rows)
}

/// [`delegations`]' statements: one seek per address column the side reads, each a range of its
/// own index, newest first.
pub fn delegations_statements(
    backend: DbBackend,
    address: &AccountBytes,
    dao_id: Option<&DaoId>,
    side: Option<Side>,
    window: Option<(i64, i64)>,
    after: Option<LogAfter>,
    limit: u64,
) -> Vec<Statement> {
    use delegation_change::Column as C;
    let columns: &[C] = match side {
        Some(Side::Delegator) => &[C::Delegator],
        Some(Side::Delegate) => &[C::FromDelegate, C::ToDelegate],
        None => &[C::Delegator, C::FromDelegate, C::ToDelegate],
    };
    let keyed = Keyed { dao: C::DaoId, ms: C::AtMs, block: C::BlockNumber, log: C::LogIndex };
    columns
        .iter()
        .map(|column| {
            let q = delegation_change::Entity::find().filter(column.eq(address.clone()));
            newest_first(backend, q, &keyed, dao_id, window, after, limit)
        })
        .collect()
}

/// A DAO's notable delegation changes (those that moved at least
/// `contract::events::NOTABLE_DELEGATION_MIN_SHARE` of the token's supply), newest first: a
/// range of the partial index `ix_delegation_changes_notable`, which holds only them.
pub async fn notable_delegations(
    db: &impl ConnectionTrait,
    dao_id: &DaoId,
    window: Option<(i64, i64)>,
    after: Option<LogAfter>,
    limit: u64,
) -> Result<Vec<delegation_change::Model>, DbErr> {
    let statement = notable_delegations_statement(db.get_database_backend(), dao_id, window, after, limit);
    delegation_change::Model::find_by_statement(statement).all(db).await
}

/// [`notable_delegations`]' statement.
pub fn notable_delegations_statement(
    backend: DbBackend,
    dao_id: &DaoId,
    window: Option<(i64, i64)>,
    after: Option<LogAfter>,
    limit: u64,
) -> Statement {
    use delegation_change::Column as C;
    let q = delegation_change::Entity::find().filter(C::SupplyRaw.is_not_null());
    let keyed = Keyed { dao: C::DaoId, ms: C::AtMs, block: C::BlockNumber, log: C::LogIndex };
    newest_first(backend, q, &keyed, Some(dao_id), window, after, limit)
}

/// The notable delegation changes a publication appended: those with an id above `above` (ids
/// only grow, and publications take the writer's turn one at a time), in chain order.
pub async fn notable_since(db: &impl ConnectionTrait, above: i64) -> Result<Vec<delegation_change::Model>, DbErr> {
    use delegation_change::Column as C;
    delegation_change::Entity::find()
        .filter(C::Id.gt(above))
        .filter(C::SupplyRaw.is_not_null())
        .order_by_asc(C::DaoId)
        .order_by_asc(C::BlockNumber)
        .order_by_asc(C::LogIndex)
        .all(db)
        .await
}

/// The largest delegation change id stored (0 for none).
pub async fn last_change_id(db: &impl ConnectionTrait) -> Result<i64, DbErr> {
    use delegation_change::Column as C;
    let max: Option<Option<i64>> = delegation_change::Entity::find()
        .select_only()
        .column_as(Expr::col(C::Id).max(), "m")
        .into_tuple()
        .one(db)
        .await?;
    Ok(max.flatten().unwrap_or(0))
}

/// A voter's voting power checkpoints, newest first.
pub async fn power(
    db: &impl ConnectionTrait,
    address: &str,
    dao_id: Option<&DaoId>,
    window: Option<(i64, i64)>,
    after: Option<LogAfter>,
    limit: u64,
) -> Result<Vec<power_checkpoint::Model>, DbErr> {
    let address = AccountBytes::parse(address).map_err(|e| DbErr::Custom(e.to_string()))?;
    let statement = power_statement(db.get_database_backend(), &address, dao_id, window, after, limit);
    power_checkpoint::Model::find_by_statement(statement).all(db).await
}

/// [`power`]'s statement.
pub fn power_statement(
    backend: DbBackend,
    address: &AccountBytes,
    dao_id: Option<&DaoId>,
    window: Option<(i64, i64)>,
    after: Option<LogAfter>,
    limit: u64,
) -> Statement {
    use power_checkpoint::Column as C;
    let q = power_checkpoint::Entity::find().filter(C::Delegate.eq(address.clone()));
    let keyed = Keyed { dao: C::DaoId, ms: C::AtMs, block: C::BlockNumber, log: C::LogIndex };
    newest_first(backend, q, &keyed, dao_id, window, after, limit)
}

/// The columns a history table is filtered and ordered by.
struct Keyed<C> {
    dao: C,
    ms: C,
    block: C,
    log: C,
}

/// The statement of one page of `q` (a history table's rows of one address) in `dao_id` and the
/// window, after the position, newest first by time, block and log index: a range of the
/// address's index.
fn newest_first<E: EntityTrait>(
    backend: DbBackend,
    mut q: Select<E>,
    c: &Keyed<E::Column>,
    dao_id: Option<&DaoId>,
    window: Option<(i64, i64)>,
    after: Option<LogAfter>,
    limit: u64,
) -> Statement {
    if let Some(d) = dao_id {
        q = q.filter(c.dao.eq(d));
    }
    if let Some((from, to)) = window {
        q = q.filter(c.ms.gte(from)).filter(c.ms.lte(to));
    }
    if let Some(after) = after {
        q = q.filter(before(c.ms, c.block, c.log, after));
    }
    let q = q.order_by_desc(c.ms).order_by_desc(c.block).order_by_desc(c.log);
    super::plans::page(backend, q, limit)
}

/// A delegate of a DAO with what the store knows of the delegate as a voter there.
pub struct RankedDelegate {
    pub delegate: delegate::Model,
    pub ens: Option<String>,
    pub stats: Option<voter_dao_stat::Model>,
}

impl delegate::Model {
    /// Where a DAO's delegates resume after this one, served at `rank`.
    pub fn keyset(&self, rank: u64) -> RankAfter {
        RankAfter { power: PowerKey::of(&self.voting_power, &self.vp_sort), voter: self.address.clone(), rank }
    }
}

/// A DAO's delegates by delegated power (then address), after a keyset position: one seek of
/// the ranking index and one read of the page's voting stats.
pub async fn delegates(
    db: &impl ConnectionTrait,
    dao_id: &str,
    after: Option<&RankAfter>,
    limit: u64,
) -> Result<Vec<RankedDelegate>, DbErr> {
    let statement = delegates_statement(db.get_database_backend(), dao_id, after, limit);
    let rows: Vec<(delegate::Model, Option<String>)> =
        DelegateWithEns::find_by_statement(statement).all(db).await?.into_iter().map(|r| (r.delegate, r.ens)).collect();
    let mut stats: HashMap<String, voter_dao_stat::Model> = HashMap::new();
    if !rows.is_empty() {
        let found = voter_dao_stat::Entity::find()
            .filter(voter_dao_stat::Column::DaoId.eq(dao_id))
            .filter(voter_dao_stat::Column::Voter.is_in(rows.iter().map(|(d, _)| d.address.clone())))
            .all(db)
            .await?;
        stats.extend(found.into_iter().map(|s| (s.voter.clone(), s)));
    }
    Ok(rows
        .into_iter()
        .map(|(delegate, ens)| {
            let stats = stats.remove(&delegate.address);
            RankedDelegate { delegate, ens, stats }
        })
        .collect())
}

/// [`delegates`]' statement of the page (with each delegate's ENS name).
pub fn delegates_statement(backend: DbBackend, dao_id: &str, after: Option<&RankAfter>, limit: u64) -> Statement {
    use delegate::Column as C;
    let mut q = delegate::Entity::find().filter(C::DaoId.eq(dao_id));
    if let Some(after) = after {
        q = q.filter(super::after_desc_asc(C::VpSort, C::Address, (after.power.sort.clone(), after.voter.clone())));
    }
    let q = q
        .column_as(Expr::cust(super::voters::ens_sql(r#""delegates"."address""#)), super::voters::VOTER_ENS)
        .order_by_desc(C::VpSort)
        .order_by_asc(C::Address);
    super::plans::page(backend, q, limit)
}

struct DelegateWithEns {
    delegate: delegate::Model,
    ens: Option<String>,
}

impl FromQueryResult for DelegateWithEns {
    fn from_query_result(res: &sea_orm::QueryResult, pre: &str) -> Result<Self, DbErr> {
        Ok(Self {
            delegate: delegate::Model::from_query_result(res, pre)?,
            ens: res.try_get(pre, super::voters::VOTER_ENS)?,
        })
    }
}
