//! Read queries: proposals and their votes, keyset-paginated (no OFFSET: a deep page costs what
//! the first one costs, each served by an index of migration 1).
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, FromQueryResult, IdenStatic, QueryFilter, QueryOrder,
    QueryResult, QuerySelect, QueryTrait, Statement,
};

use super::address::AccountBytes;
use super::entities::{proposal, proposal_action, vote};
use super::keysets::{PositionAfter, PowerKey, TimeAfter, VoteAfter};
use super::sqlite_reader::{FromSqliteRow, SqliteReader};
use super::vote_arms::{PAGE_COLUMNS, Read};
use super::voters::{StoredNames, VOTER_NAMES, split_names};
use crate::contract::vocabulary::DaoId;

/// Proposal list orders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProposalOrder {
    /// Newest first: `created_ms` desc, id desc (`ix_proposals_created`, `ix_proposals_dao_created`).
    Newest,
    /// Latest end first: `end_ms` desc, id desc (`ix_proposals_end`, `ix_proposals_dao_end`);
    /// proposals without an end time are not in this order.
    EndTime,
}

#[derive(Debug, Clone, Default)]
pub struct ProposalFilter<'a> {
    pub dao_id: Option<&'a DaoId>,
    pub source: Option<&'a str>,
    pub state: Option<&'a str>,
    /// Inclusive window on the order's time column.
    pub window: Option<(i64, i64)>,
}

impl proposal::Model {
    /// Where a proposal list in `order` resumes after this proposal (a proposal without an end
    /// time is not in the end-time order).
    pub fn keyset(&self, order: ProposalOrder) -> TimeAfter {
        let ms = match order {
            ProposalOrder::Newest => self.created_ms,
            ProposalOrder::EndTime => self.end_ms.unwrap_or_default(),
        };
        TimeAfter { ms, id: self.id }
    }
}

/// Up to `limit` proposals after the keyset position `(time, id)` (`proposal::Model::keyset`).
pub async fn list(
    db: &impl ConnectionTrait,
    filter: &ProposalFilter<'_>,
    order: ProposalOrder,
    after: Option<TimeAfter>,
    limit: u64,
) -> Result<Vec<proposal::Model>, DbErr> {
    proposal::Model::find_by_statement(list_statement(db.get_database_backend(), filter, order, after, limit))
        .all(db)
        .await
}

/// The statement [`list`] runs.
pub fn list_statement(
    backend: DbBackend,
    filter: &ProposalFilter<'_>,
    order: ProposalOrder,
    after: Option<TimeAfter>,
    limit: u64,
) -> Statement {
    let time = match order {
        ProposalOrder::Newest => proposal::Column::CreatedMs,
        ProposalOrder::EndTime => proposal::Column::EndMs,
    };
    let mut q = proposal::Entity::find();
    if order == ProposalOrder::EndTime {
        q = q.filter(proposal::Column::EndMs.is_not_null());
    }
    if let Some(d) = filter.dao_id {
        q = q.filter(proposal::Column::DaoId.eq(d));
    }
    if let Some(s) = filter.source {
        q = q.filter(proposal::Column::Source.eq(s));
    }
    if let Some(s) = filter.state {
        q = q.filter(proposal::Column::State.eq(s));
    }
    if let Some((from, to)) = filter.window {
        q = q.filter(time.gte(from)).filter(time.lte(to));
    }
    if let Some(TimeAfter { ms, id }) = after {
        q = q.filter(super::after_desc(time, proposal::Column::Id, (ms, id)));
    }
    super::plans::page(backend, q.order_by_desc(time).order_by_desc(proposal::Column::Id), limit)
}

pub async fn by_key(db: &impl ConnectionTrait, key: &str) -> Result<Option<proposal::Model>, DbErr> {
    proposal::Entity::find().filter(proposal::Column::ProposalKey.eq(key)).one(db).await
}

/// What a list of a proposal's rows needs of the proposal: not its text, choices or scores.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct ProposalHead {
    pub id: i64,
    pub dao_id: String,
    pub proposal_key: String,
    pub snapshot_block: Option<String>,
}

impl FromSqliteRow for ProposalHead {
    fn columns() -> Vec<&'static str> {
        HEAD.iter().map(|c| c.as_str()).collect()
    }

    fn from_row(row: &rusqlite::Row<'_>, at: &[usize]) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(at[0])?,
            dao_id: row.get(at[1])?,
            proposal_key: row.get(at[2])?,
            snapshot_block: row.get(at[3])?,
        })
    }
}

/// [`ProposalHead`]'s columns, in its fields' order.
const HEAD: [proposal::Column; 4] =
    [proposal::Column::Id, proposal::Column::DaoId, proposal::Column::ProposalKey, proposal::Column::SnapshotBlock];

/// The head of the proposal with `key`: by the unique key, on SQLite with a `reader` there.
pub async fn head_by_key(
    db: &impl ConnectionTrait,
    reader: Option<&SqliteReader>,
    key: &str,
) -> Result<Option<ProposalHead>, DbErr> {
    let query = proposal::Entity::find().select_only().columns(HEAD).filter(proposal::Column::ProposalKey.eq(key));
    let statement = query.limit(1).build(db.get_database_backend());
    match reader {
        Some(reader) => Ok(reader.all(statement).await?.pop()),
        None => ProposalHead::find_by_statement(statement).one(db).await,
    }
}

/// When voting ends on each proposal of `keys` that has an end time, by proposal key (one query on
/// the unique key; at most a message batch of keys). What a chat message states as the deadline.
pub async fn voting_ends(db: &impl ConnectionTrait, keys: &[String]) -> Result<Vec<(String, i64)>, DbErr> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<(String, Option<i64>)> = proposal::Entity::find()
        .select_only()
        .column(proposal::Column::ProposalKey)
        .column(proposal::Column::EndMs)
        .filter(proposal::Column::ProposalKey.is_in(keys.iter().map(String::as_str)))
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows.into_iter().filter_map(|(key, end)| Some((key, end?))).collect())
}

/// The latest kept simulation of proposal `proposal_id` (one primary-key range; the latest
/// block's row, older ones being removed when a newer one is kept).
pub async fn simulation(
    db: &impl ConnectionTrait,
    proposal_id: i64,
) -> Result<Option<super::entities::proposal_simulation::Model>, DbErr> {
    use super::entities::proposal_simulation::{Column, Entity};
    Entity::find().filter(Column::ProposalId.eq(proposal_id)).order_by_desc(Column::BlockNumber).one(db).await
}

// The vote list's orders live with its positions in `keysets` (a `VoteAfter` is read in one),
// so `vote_arms`, which this module calls, need not import this module back. Callers find them
// here, with the list.
pub use super::keysets::VoteOrder;

/// A vote as a votes page shows it and resumes after it: the columns
/// [`vote_arms::PAGE_COLUMNS`](super::vote_arms::PAGE_COLUMNS) names.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct PageVote {
    pub id: i64,
    pub voter: AccountBytes,
    pub choice: String,
    pub voting_power: String,
    pub vp_sort: String,
    pub vp_from_float: bool,
    pub reason: Option<String>,
    pub created_ms: i64,
}

/// A vote with its voter's stored names: the display form and the ENS name, when the store
/// holds the voter (`names` is `None` otherwise: the display form is then made from the address).
#[derive(Debug, Clone)]
pub struct VoteWithNames {
    pub vote: PageVote,
    pub names: Option<StoredNames>,
}

impl VoteWithNames {
    fn new(vote: PageVote, packed: Option<String>) -> Self {
        let names = split_names(packed, &vote.voter);
        Self { vote, names }
    }
}

impl FromQueryResult for VoteWithNames {
    fn from_query_result(res: &QueryResult, pre: &str) -> Result<Self, DbErr> {
        Ok(Self::new(PageVote::from_query_result(res, pre)?, res.try_get(pre, VOTER_NAMES)?))
    }
}

impl FromSqliteRow for VoteWithNames {
    fn columns() -> Vec<&'static str> {
        PAGE_COLUMNS.iter().map(|c| c.as_str()).chain([VOTER_NAMES]).collect()
    }

    fn from_row(row: &rusqlite::Row<'_>, at: &[usize]) -> rusqlite::Result<Self> {
        // `at` follows `columns()`: PAGE_COLUMNS' order, then the names.
        let vote = PageVote {
            id: row.get(at[0])?,
            voter: AccountBytes(row.get(at[1])?),
            choice: row.get(at[2])?,
            voting_power: row.get(at[3])?,
            vp_sort: row.get(at[4])?,
            vp_from_float: row.get(at[5])?,
            reason: row.get(at[6])?,
            created_ms: row.get(at[7])?,
        };
        Ok(Self::new(vote, row.get(at[PAGE_COLUMNS.len()])?))
    }
}

impl VoteWithNames {
    pub fn keyset(&self, order: VoteOrder) -> VoteAfter {
        let v = &self.vote;
        match order {
            VoteOrder::Power => {
                VoteAfter::Power { power: PowerKey::of(&v.voting_power, &v.vp_sort), voter: v.voter.clone() }
            }
            VoteOrder::Time => VoteAfter::Time(TimeAfter { ms: v.created_ms, id: v.id }),
        }
    }
}

impl vote::Model {
    /// Where a list of votes newest first resumes after this vote.
    pub fn keyset(&self) -> TimeAfter {
        TimeAfter { ms: self.created_ms, id: self.id }
    }
}

/// Up to `limit` votes of a proposal after `after`, optionally of one voter or with one recorded
/// choice. Each shape has its index (migration 7): a rare choice costs what a common one costs;
/// an unfiltered list is read by `store::vote_arms` (on PostgreSQL, merged over the choices).
/// Each comes with its voter's stored names (display form and ENS name): one statement, the names
/// looked up by the voters' primary key for each row returned (no second query binding every
/// address of the page: that cost a third of the page's throughput). On SQLite with a `reader`,
/// the statement runs there (one hand-off, not one per row).
#[allow(clippy::too_many_arguments)]
pub async fn votes(
    db: &impl ConnectionTrait,
    reader: Option<&SqliteReader>,
    proposal_id: i64,
    voter: Option<&AccountBytes>,
    choice: Option<&str>,
    order: VoteOrder,
    after: Option<VoteAfter>,
    limit: u64,
) -> Result<Vec<VoteWithNames>, DbErr> {
    let backend = db.get_database_backend();
    let filter = super::vote_arms::Filter { voter, choice };
    let statement =
        super::vote_arms::statement(backend, proposal_id, filter, order, after.map(Into::into), limit, Read::Page);
    match reader {
        Some(reader) => reader.all(statement).await,
        None => VoteWithNames::find_by_statement(statement).all(db).await,
    }
}

impl proposal_action::Model {
    /// Where a list of a proposal's actions resumes after this action.
    pub fn keyset(&self) -> PositionAfter {
        PositionAfter(self.position)
    }
}

/// Up to `limit` actions of a proposal in position order, after `after`: one range of the
/// primary key `(proposal_id, position)`, each row as stored (its decoded answer included: no
/// request decodes anything).
pub async fn actions(
    db: &impl ConnectionTrait,
    proposal_id: i64,
    after: Option<PositionAfter>,
    limit: u64,
) -> Result<Vec<proposal_action::Model>, DbErr> {
    proposal_action::Model::find_by_statement(actions_statement(db.get_database_backend(), proposal_id, after, limit))
        .all(db)
        .await
}

/// The statement [`actions`] runs.
pub fn actions_statement(backend: DbBackend, proposal_id: i64, after: Option<PositionAfter>, limit: u64) -> Statement {
    let mut q = proposal_action::Entity::find().filter(proposal_action::Column::ProposalId.eq(proposal_id));
    if let Some(PositionAfter(position)) = after {
        q = q.filter(proposal_action::Column::Position.gt(position));
    }
    super::plans::page(backend, q.order_by_asc(proposal_action::Column::Position), limit)
}

/// How many actions a proposal has: a count over its primary-key range.
pub async fn action_count(db: &impl ConnectionTrait, proposal_id: i64) -> Result<u64, DbErr> {
    use sea_orm::PaginatorTrait;
    proposal_action::Entity::find().filter(proposal_action::Column::ProposalId.eq(proposal_id)).count(db).await
}
