//! A proposal's votes in power or time order, read without proposal-wide indexes of their own
//! (migration 23 on PostgreSQL, migration 35 for the time order on SQLite).
//!
//! Every vote is in the choice indexes (`ix_votes_proposal_choice_power`, `…_time`), which
//! order a proposal's votes choice by choice. The proposal-wide indexes (`ix_votes_proposal_power`,
//! `…_time`) hold only the votes whose recorded choice is outside [`MERGED_CHOICES`] where the
//! order is read by arms: almost every vote is a single choice `1` to `5` (on-chain governors
//! always are), so those indexes are nearly empty, and they were a fifth of the bytes of a vote.
//! An unfiltered list is then one statement: an arm per merged choice and one for the others,
//! each a walk of its index from the keyset position, merged in order (a page reads about `limit`
//! rows in all, whatever the proposal's size). PostgreSQL merges the arms with `Merge Append`,
//! each arm bounded by its own `LIMIT`; SQLite runs a compound `SELECT` ordered as a whole as a
//! merge of lazy co-routines (`MERGE (UNION ALL)` in its plan), which stops after `limit` rows.
//!
//! SQLite keeps `ix_votes_proposal_power` whole: evidence's largest votes, the facts' walk and the
//! notable-vote thresholds read it too, and it is the time order's index SQLite gave up.
use sea_orm::sea_query::{Alias, Asterisk, Expr, Order, Query, SelectStatement, UnionType};
use sea_orm::{
    ColumnTrait, DbBackend, EntityTrait, IdenStatic, QueryFilter, QueryOrder, QuerySelect, QueryTrait, Statement,
};

use super::address::AccountBytes;
use super::entities::vote;
use super::keysets::{TimeAfter, VoteAfter, VoteOrder};
use super::plans::list;
use super::voters::{VOTER_NAMES, names_sql};

/// The recorded choices whose votes PostgreSQL orders through the choice indexes alone: the
/// single choices of nearly every proposal (the governance sample: 99.4 % of its votes). Each one
/// is an arm of every unfiltered list, so the set stays short. Migration 23's partial indexes
/// hold the votes outside it; changing it needs a migration that rebuilds them with
/// [`others_sql`] (the plan test `vote_lists::postgres_pages_read_each_arm_by_its_index` fails
/// while they differ).
pub const MERGED_CHOICES: [&str; 5] = ["1", "2", "3", "4", "5"];

/// The votes outside [`MERGED_CHOICES`], as PostgreSQL with the choices inlined: the predicate
/// of migration 23's partial indexes, and of the arm that reads them (a bound parameter would not
/// prove the partial index's predicate, and the planner would walk the choice indexes instead).
/// Written as PostgreSQL prints it back (`pg_indexes`), so that an index rebuilt from its printed
/// definition (`synth --defer-indexes`) is the same index.
pub fn others_sql() -> String {
    format!("((choice)::text <> ALL ('{{{}}}'::text[]))", MERGED_CHOICES.join(","))
}

/// The votes outside [`MERGED_CHOICES`], as SQLite with the choices inlined: the predicate of
/// migration 35's partial index, and of the arm that reads it (SQLite uses a partial index only
/// for a statement that repeats its predicate, so this text is the one both are written with).
pub fn sqlite_others_sql() -> String {
    let quoted: Vec<String> = MERGED_CHOICES.iter().map(|c| format!("'{c}'")).collect();
    format!("choice NOT IN ({})", quoted.join(", "))
}

/// The votes outside [`MERGED_CHOICES`], as `backend` writes it.
fn others_for(backend: DbBackend) -> String {
    match backend {
        DbBackend::Postgres => others_sql(),
        _ => sqlite_others_sql(),
    }
}

/// The votes of [`MERGED_CHOICES`], as PostgreSQL with the choices inlined.
fn merged_sql() -> String {
    format!("((choice)::text = ANY ('{{{}}}'::text[]))", MERGED_CHOICES.join(","))
}

/// A `FROM` item `v`: every vote at or above its proposal's threshold in a table (or CTE)
/// `thresholds (proposal_id, min_vp_sort)`, each proposal's read from the top of its power order.
/// On PostgreSQL that is two walks per proposal (the merged choices' indexes, one descent per
/// choice, and the others' partial index), since no one index orders all of a proposal's votes.
pub fn above_thresholds_sql(backend: DbBackend) -> String {
    if !by_arms(backend, VoteOrder::Power) {
        return "votes v JOIN thresholds th ON th.proposal_id = v.proposal_id AND v.vp_sort >= th.min_vp_sort"
            .to_owned();
    }
    format!(
        "thresholds th CROSS JOIN LATERAL (
           SELECT * FROM votes WHERE proposal_id = th.proposal_id AND {merged} AND vp_sort >= th.min_vp_sort
           UNION ALL
           SELECT * FROM votes WHERE proposal_id = th.proposal_id AND {others} AND vp_sort >= th.min_vp_sort
         ) v",
        merged = merged_sql(),
        others = others_sql(),
    )
}

/// Whether `backend` reads a proposal's unfiltered votes in `order` by arms: PostgreSQL in both
/// orders (migration 23), SQLite in time order (migration 35).
pub fn by_arms(backend: DbBackend, order: VoteOrder) -> bool {
    backend == DbBackend::Postgres || order == VoteOrder::Time
}

/// Whether the list of `filter` in `order` on `backend` is merged from arms: one statement of
/// six walks.
fn merges(backend: DbBackend, filter: Filter<'_>, order: VoteOrder) -> bool {
    by_arms(backend, order) && filter.voter.is_none() && filter.choice.is_none()
}

/// A keyset position in one of [`VoteOrder`]'s orders.
#[derive(Debug, Clone)]
pub enum Position {
    /// After `(vp_sort, voter)`: power descending, voter ascending.
    Power(String, AccountBytes),
    /// After `(created_ms, id)`, both descending.
    Time(TimeAfter),
}

impl From<VoteAfter> for Position {
    fn from(after: VoteAfter) -> Self {
        match after {
            VoteAfter::Power { power, voter } => Self::Power(power.sort, voter),
            VoteAfter::Time(t) => Self::Time(t),
        }
    }
}

/// Which of a proposal's votes a list reads: all of them (the default), one voter's, one
/// choice's, or both.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filter<'a> {
    pub voter: Option<&'a AccountBytes>,
    pub choice: Option<&'a str>,
}

/// What a list reads of each vote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// Every column (`vote::Model`).
    Votes,
    /// What a votes page shows and resumes after ([`PAGE_COLUMNS`]), and the voter's stored names
    /// (column [`VOTER_NAMES`]: display form and ENS name), looked up for the rows returned only.
    Page,
}

impl Read {
    /// Whether each row carries its voter's stored names (column [`VOTER_NAMES`]).
    fn names(self) -> bool {
        self == Self::Page
    }
}

/// The columns a votes page reads: not the vote's provenance (`ipfs`, `tx_hash`,
/// `block_number`), which it does not show, nor its proposal and DAO, which it knows. Each one
/// left out is a value less to decode, and for text an allocation less, per row.
pub const PAGE_COLUMNS: [vote::Column; 8] = [
    vote::Column::Id,
    vote::Column::Voter,
    vote::Column::Choice,
    vote::Column::VotingPower,
    vote::Column::VpSort,
    vote::Column::VpFromFloat,
    vote::Column::Reason,
    vote::Column::CreatedMs,
];

/// Up to `limit` of a proposal's votes of `filter` in `order` after `after`, each as `read`
/// says.
/// A filtered list is one walk (a voter has one vote per proposal; a choice has its index), as is
/// every list in an order the backend does not read by arms. Its page bounds are literals and
/// its values hidden from the planner (`store::plans::list`): PostgreSQL planned the merged
/// statement again on every call, which cost about what executing it did.
pub fn statement(
    backend: DbBackend,
    proposal_id: i64,
    filter: Filter<'_>,
    order: VoteOrder,
    after: Option<Position>,
    limit: u64,
    read: Read,
) -> Statement {
    if !merges(backend, filter, order) {
        let mut q = walk(backend, proposal_id, filter.voter, filter.choice.map(Arm::Choice), order, after, limit, read);
        if read.names() {
            q.expr_as(voter_names(backend, r#""votes"."voter""#), Alias::new(VOTER_NAMES));
        }
        return list(backend.build(&q));
    }
    if backend != DbBackend::Postgres {
        return compound(backend, proposal_id, order, after, limit, read);
    }
    let mut arms = arms().enumerate().map(|(i, arm)| {
        let walk = walk(backend, proposal_id, None, Some(arm), order, after.clone(), limit, read);
        Query::select().column(Asterisk).from_subquery(walk, Alias::new(format!("arm{i}"))).to_owned()
    });
    let mut union = arms.next().expect("at least one arm");
    union.unions(arms.map(|arm| (UnionType::All, arm)));
    let merged = Alias::new("merged");
    let mut q = Query::select();
    q.column((merged.clone(), Asterisk)).from_subquery(union, merged.clone());
    if read.names() {
        q.expr_as(voter_names(backend, r#""merged"."voter""#), Alias::new(VOTER_NAMES));
    }
    for (column, direction) in order_columns(order) {
        q.order_by((merged.clone(), column), direction);
    }
    list(backend.build(q.limit(limit)))
}

/// The arms of an unfiltered list: one per merged choice, then the others.
fn arms() -> impl Iterator<Item = Arm<'static>> {
    MERGED_CHOICES.iter().map(|c| Arm::Choice(c)).chain([Arm::Others])
}

/// The arms as one compound `SELECT` ordered as a whole (SQLite): SQLite runs it as a merge of
/// the arms, each a co-routine walking its index in the compound's order and read only as far as
/// the merge takes it. An arm carries no `ORDER BY` or `LIMIT` of its own (a compound's arm may
/// not, and the merge needs neither). The order's columns are named as the result names them.
fn compound(
    backend: DbBackend,
    proposal_id: i64,
    order: VoteOrder,
    after: Option<Position>,
    limit: u64,
    read: Read,
) -> Statement {
    let mut sql = Vec::new();
    let mut values = Vec::new();
    for arm in arms() {
        let mut q = seek(backend, proposal_id, None, Some(arm), after.clone(), read).into_query();
        if read.names() {
            q.expr_as(voter_names(backend, r#""votes"."voter""#), Alias::new(VOTER_NAMES));
        }
        let built = backend.build(&q);
        sql.push(built.sql);
        values.extend(built.values.map(|v| v.0).unwrap_or_default());
    }
    let order_by: Vec<String> = order_columns(order)
        .iter()
        .map(|(column, direction)| {
            format!(r#""{}" {}"#, column.as_str(), if matches!(direction, Order::Desc) { "DESC" } else { "ASC" })
        })
        .collect();
    let sql = format!("{} ORDER BY {} LIMIT {limit}", sql.join(" UNION ALL "), order_by.join(", "));
    Statement::from_sql_and_values(backend, sql, values)
}

fn voter_names(backend: DbBackend, voter_column: &str) -> Expr {
    Expr::cust(names_sql(&super::address::lower_sql(backend, voter_column)))
}

/// Which votes of the proposal an arm walks.
enum Arm<'a> {
    Choice(&'a str),
    /// Those outside [`MERGED_CHOICES`] (migration 23's partial indexes).
    Others,
}

/// The proposal's votes of `voter` (any voter's for `None`) and `arm` (every choice for `None`),
/// walked down their index from `after`.
#[allow(clippy::too_many_arguments)]
fn walk(
    backend: DbBackend,
    proposal_id: i64,
    voter: Option<&AccountBytes>,
    arm: Option<Arm<'_>>,
    order: VoteOrder,
    after: Option<Position>,
    limit: u64,
    read: Read,
) -> SelectStatement {
    let mut q = seek(backend, proposal_id, voter, arm, after, read);
    for (column, direction) in order_columns(order) {
        q = q.order_by(column, direction);
    }
    q.limit(limit).into_query()
}

/// The proposal's votes of `voter` and `arm` after `after`, in no order.
fn seek(
    backend: DbBackend,
    proposal_id: i64,
    voter: Option<&AccountBytes>,
    arm: Option<Arm<'_>>,
    after: Option<Position>,
    read: Read,
) -> sea_orm::Select<vote::Entity> {
    use vote::Column as C;
    let mut q = vote::Entity::find().filter(C::ProposalId.eq(proposal_id));
    if read == Read::Page {
        // The page's own columns; the names are added where the statement is finished.
        q = q.select_only().columns(PAGE_COLUMNS);
    }
    if let Some(v) = voter {
        q = q.filter(C::Voter.eq(v.clone()));
    }
    q = match arm {
        Some(Arm::Choice(c)) => q.filter(C::Choice.eq(c)),
        Some(Arm::Others) => q.filter(Expr::cust(others_for(backend))),
        None => q,
    };
    match after {
        Some(Position::Power(sort, voter)) => q.filter(super::after_desc_asc(C::VpSort, C::Voter, (sort, voter))),
        Some(Position::Time(TimeAfter { ms, id })) => q.filter(super::after_desc(C::CreatedMs, C::Id, (ms, id))),
        None => q,
    }
}

/// The columns of `order`, each with its direction.
fn order_columns(order: VoteOrder) -> [(vote::Column, Order); 2] {
    match order {
        VoteOrder::Power => [(vote::Column::VpSort, Order::Desc), (vote::Column::Voter, Order::Asc)],
        VoteOrder::Time => [(vote::Column::CreatedMs, Order::Desc), (vote::Column::Id, Order::Desc)],
    }
}
