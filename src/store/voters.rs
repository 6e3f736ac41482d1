//! Read queries: voters, their per-DAO standing and their voting history.
use std::collections::HashMap;

use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, FromQueryResult, QueryFilter, QueryOrder, QueryResult,
    QuerySelect, Statement, sea_query::Expr,
};

use super::address::AccountBytes;
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

impl voter_dao_stat::Model {
    /// Where a DAO's ranking resumes after this voter, served at `rank`.
    pub fn keyset(&self, rank: u64) -> super::keysets::RankAfter {
        let power = super::keysets::PowerKey::of(&self.voting_power, &self.vp_sort);
        super::keysets::RankAfter { power, voter: self.voter.clone(), rank }
    }
}

/// One DAO's voters by voting power (then address), after a keyset position, each with the ENS name
/// the store knows for the voter (one statement: see [`ens_sql`]).
pub async fn ranking(
    db: &impl ConnectionTrait,
    dao_id: &str,
    after: Option<&super::keysets::RankAfter>,
    limit: u64,
) -> Result<Vec<(voter_dao_stat::Model, Option<String>)>, DbErr> {
    RankedRow::find_by_statement(ranking_statement(db.get_database_backend(), dao_id, after, limit))
        .all(db)
        .await
        .map(|rows| rows.into_iter().map(|r| (r.stats, r.ens)).collect())
}

/// The statement [`ranking`] runs.
pub fn ranking_statement(
    backend: sea_orm::DbBackend,
    dao_id: &str,
    after: Option<&super::keysets::RankAfter>,
    limit: u64,
) -> sea_orm::Statement {
    use voter_dao_stat::Column as C;
    let mut q = voter_dao_stat::Entity::find().filter(C::DaoId.eq(dao_id));
    if let Some(after) = after {
        q = q.filter(super::after_desc_asc(C::VpSort, C::Voter, (after.power.sort.clone(), after.voter.clone())));
    }
    let q = q
        .column_as(Expr::cust(ens_sql(r#""voter_dao_stats"."voter""#)), VOTER_ENS)
        .order_by_desc(C::VpSort)
        .order_by_asc(C::Voter);
    super::plans::page(backend, q, limit)
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

/// The alias of the names [`names_sql`] selects beside a row.
pub const VOTER_NAMES: &str = "voter_names";

/// SQL for the stored names of the canonical address `address_sql`, in one lookup by the voters'
/// primary key: its display form (EIP-55, stored when the voter was) followed by its ENS name, if
/// any, as one text (a scalar subquery returns one column); NULL for an address the store has no
/// voter for. [`split_names`] takes it apart.
///
/// Why: a page of votes showed each voter's display form by hashing its address (Keccak-256,
/// EIP-55), 8.5 % of the uncached votes page's CPU in a release build, while the voter's row,
/// read for its ENS name anyway, holds that form already.
pub fn names_sql(address_sql: &str) -> String {
    format!(
        r#"(SELECT "address_display" || COALESCE("ens", '') FROM "voters" WHERE "voters"."address" = {address_sql})"#
    )
}

/// A voter's names as its row holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredNames {
    /// The display form (`voters.address_display`).
    pub display: String,
    /// The ENS name, when the store knows one.
    pub ens: Option<String>,
}

/// The names in `packed` ([`names_sql`]'s text for the voter `voter`): the display form is as
/// long as the canonical text (`0x` and two digits a byte), and the ENS name, when there is one,
/// is the rest. `None` for no voter row, or for a text of another shape (the caller then makes
/// the display form itself).
pub fn split_names(packed: Option<String>, voter: &AccountBytes) -> Option<StoredNames> {
    let mut display = packed?;
    let at = 2 + 2 * voter.0.len();
    if display.len() < at || !display.is_char_boundary(at) {
        return None;
    }
    let ens = display.split_off(at);
    Some(StoredNames { display, ens: (!ens.is_empty()).then_some(ens) })
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

/// A voter's votes newest first, with their proposals.
///
/// `ix_votes_voter_dao_time` (`voter, dao_id, created_ms DESC, id DESC`, migration 22; on SQLite
/// `voter, dao_id, created_ms` walked backwards, its row id last, migration 35) holds a
/// voter's votes DAO by DAO, so a `daoId` page reads just its rows whatever the voter did
/// elsewhere. The unfiltered history is a merge of the voter's DAOs (their `voter_dao_stats`
/// rows): each DAO gives at most a page of keys from its run of the index, the newest `limit` of
/// them are kept, and those votes are read by their keys. A page costs one index descent per DAO the
/// voter voted in and at most `limit` rows from each, whatever the store holds.
pub async fn history(
    db: &impl ConnectionTrait,
    address: &str,
    dao_id: Option<&DaoId>,
    window: Option<(i64, i64)>,
    after: Option<super::keysets::TimeAfter>,
    limit: u64,
) -> Result<Vec<(vote::Model, proposal::Model)>, DbErr> {
    let voter = super::address::AccountBytes::parse(address).map_err(|e| DbErr::Custom(e.to_string()))?;
    let daos: Vec<String> = match dao_id {
        Some(d) => vec![d.to_string()],
        None => {
            voter_dao_stat::Entity::find()
                .select_only()
                .column(voter_dao_stat::Column::DaoId)
                .filter(voter_dao_stat::Column::Voter.eq(address))
                .into_tuple::<String>()
                .all(db)
                .await?
        }
    };
    let mut keys: Vec<VoteKey> = Vec::new();
    for chunk in daos.chunks(MERGE_ARMS_MAX) {
        keys.extend(newest_keys(db, &voter, chunk, window, after.as_ref(), limit).await?);
    }
    keys.sort_unstable_by_key(|k| std::cmp::Reverse((k.created_ms, k.id)));
    keys.truncate(limit as usize);
    let mut votes = if keys.is_empty() { Vec::new() } else { by_keys(db, &voter, keys).await? };
    votes.sort_unstable_by_key(|v| std::cmp::Reverse((v.created_ms, v.id)));
    let ids: Vec<i64> = votes.iter().map(|v| v.proposal_id).collect();
    let proposals: HashMap<i64, proposal::Model> =
        super::items::proposals_by_ids(db, &ids).await?.into_iter().map(|p| (p.id, p)).collect();
    Ok(votes.into_iter().filter_map(|v| proposals.get(&v.proposal_id).cloned().map(|p| (v, p))).collect())
}

/// A vote's entry in `ix_votes_voter_dao_time` (with the voter's address).
#[derive(Debug, FromQueryResult)]
struct VoteKey {
    dao_id: String,
    created_ms: i64,
    id: i64,
}

/// The votes of `keys`, all the voter's. SQLite reads them by id (its rowid). PostgreSQL has no
/// index on the id (migration 23: it was 22 bytes of every vote, for this read only) and reads
/// each by its full entry in `ix_votes_voter_dao_time` instead, one index probe per vote.
async fn by_keys(
    db: &impl ConnectionTrait,
    voter: &super::address::AccountBytes,
    keys: Vec<VoteKey>,
) -> Result<Vec<vote::Model>, DbErr> {
    use sea_orm::Condition;
    use vote::Column as C;
    let find = vote::Entity::find();
    let find = if db.get_database_backend() == sea_orm::DbBackend::Postgres {
        // The DAOs and the time span of the page bound the walk should the planner take one
        // index scan over the voter's run instead of a probe per entry (it may, for a voter it
        // believes has few votes): a whale's run is then read only across the page's span.
        let (oldest, newest) =
            keys.iter().fold((i64::MAX, i64::MIN), |(lo, hi), k| (lo.min(k.created_ms), hi.max(k.created_ms)));
        let daos: std::collections::BTreeSet<String> = keys.iter().map(|k| k.dao_id.clone()).collect();
        let entries = keys.into_iter().fold(Condition::any(), |any, k| {
            any.add(Condition::all().add(C::DaoId.eq(k.dao_id)).add(C::CreatedMs.eq(k.created_ms)).add(C::Id.eq(k.id)))
        });
        find.filter(C::Voter.eq(voter.clone()))
            .filter(C::DaoId.is_in(daos))
            .filter(C::CreatedMs.between(oldest, newest))
            .filter(entries)
    } else {
        find.filter(C::Id.is_in(keys.into_iter().map(|k| k.id)))
    };
    find.all(db).await
}

/// DAOs merged by one statement: far below SQLite's 500 terms of a compound select.
const MERGE_ARMS_MAX: usize = 100;

/// The keys of the voter's newest `limit` votes in each of `daos` within `window`
/// and after `after`, newest first ([`newest_keys_statement`]).
async fn newest_keys(
    db: &impl ConnectionTrait,
    voter: &super::address::AccountBytes,
    daos: &[String],
    window: Option<(i64, i64)>,
    after: Option<&super::keysets::TimeAfter>,
    limit: u64,
) -> Result<Vec<VoteKey>, DbErr> {
    let statement = newest_keys_statement(db.get_database_backend(), voter, daos, window, after, limit);
    VoteKey::find_by_statement(statement).all(db).await
}

/// The statement of [`newest_keys`]: one `UNION ALL` arm per DAO, each a walk of its run of
/// `ix_votes_voter_dao_time`. On PostgreSQL an arm is a subquery with its own order and limit
/// (bounded), and the arms' rows are sorted; SQLite runs the compound, ordered as a whole, as a
/// lazy merge of the arms (a compound's arm there may carry no order or limit, and needs none).
pub fn newest_keys_statement(
    backend: sea_orm::DbBackend,
    voter: &super::address::AccountBytes,
    daos: &[String],
    window: Option<(i64, i64)>,
    after: Option<&super::keysets::TimeAfter>,
    limit: u64,
) -> Statement {
    let bounded = backend == sea_orm::DbBackend::Postgres;
    let mut values: Vec<sea_orm::Value> = Vec::new();
    let mut bind = |v: sea_orm::Value| {
        values.push(v);
        format!("${}", values.len())
    };
    let mut arms = Vec::with_capacity(daos.len());
    for (i, dao) in daos.iter().enumerate() {
        let mut sql = format!(
            "SELECT dao_id, created_ms, id FROM votes WHERE voter = {} AND dao_id = {}",
            bind(voter.clone().into()),
            bind(dao.as_str().into())
        );
        if let Some((from, to)) = window {
            sql += &format!(" AND created_ms >= {} AND created_ms <= {}", bind(from.into()), bind(to.into()));
        }
        if let Some(a) = after {
            let (ms, ms_again, ms_equal, id) =
                (bind(a.ms.into()), bind(a.ms.into()), bind(a.ms.into()), bind(a.id.into()));
            sql += &format!(
                " AND created_ms <= {ms} AND (created_ms < {ms_again} OR (created_ms = {ms_equal} AND id < {id}))"
            );
        }
        if bounded {
            sql = format!("SELECT * FROM ({sql} ORDER BY created_ms DESC, id DESC LIMIT {limit}) arm{i}");
        }
        arms.push(sql);
    }
    let sql = if bounded {
        format!(
            "SELECT dao_id, created_ms, id FROM ({}) merged ORDER BY created_ms DESC, id DESC LIMIT {limit}",
            arms.join(" UNION ALL ")
        )
    } else {
        format!("{} ORDER BY created_ms DESC, id DESC LIMIT {limit}", arms.join(" UNION ALL "))
    };
    Statement::from_sql_and_values(backend, sql, values)
}

#[cfg(test)]
mod tests {
    use super::{AccountBytes, StoredNames, split_names};

    fn names(display: &str, ens: Option<&str>) -> Option<StoredNames> {
        Some(StoredNames { display: display.to_owned(), ens: ens.map(str::to_owned) })
    }

    #[test]
    fn names_split_at_the_display_forms_length() {
        let evm = AccountBytes::parse("0x683a4f9915d6216f73d6df50151725036bd26c02").unwrap();
        let display = "0x683a4F9915D6216f73d6Df50151725036bD26C02";
        assert_eq!(
            split_names(Some(format!("{display}gauntletgov.eth")), &evm),
            names(display, Some("gauntletgov.eth"))
        );
        assert_eq!(split_names(Some(display.to_owned()), &evm), names(display, None));
        // A 32-byte (Starknet) address's display form is its lowercase text, 66 characters.
        let starknet = AccountBytes(vec![0xab; 32]);
        let lower = starknet.lower();
        assert_eq!(split_names(Some(format!("{lower}x.stark")), &starknet), names(&lower, Some("x.stark")));
        // No voter row, or a text too short to hold the display form: the caller makes it.
        assert_eq!(split_names(None, &evm), None);
        assert_eq!(split_names(Some("0x683a".to_owned()), &evm), None);
        assert_eq!(split_names(Some(format!("0x{}é", "a".repeat(39))), &evm), None);
    }
}
