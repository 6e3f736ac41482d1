//! Read queries: dataset state — the serving revision, the last ingestion run, watermarks, totals.
//!
//! Every read here costs what the number of DAOs and sources costs, never what the votes, voters
//! or events cost: totals are sums of the per-DAO summaries and the revision's own row counts,
//! both materialised at publication.
use sea_orm::{
    ConnectionTrait, DbErr, EntityTrait, FromQueryResult, QueryOrder, QuerySelect,
    sea_query::{Expr, ExprTrait, Func, SimpleExpr},
};

use super::entities::{data_revision, ingestion_run, source_watermark};

/// Totals over the published dataset.
#[derive(Debug, Clone, Default, FromQueryResult)]
pub struct Totals {
    pub daos: i64,
    pub proposals: i64,
    pub upstream_votes: i64,
    pub ingested_votes: i64,
    pub delegates: i64,
}

#[derive(Debug, Clone)]
pub struct DatasetState {
    pub revision: Option<data_revision::Model>,
    pub last_run: Option<ingestion_run::Model>,
    pub watermarks: Vec<source_watermark::Model>,
    pub totals: Totals,
}

/// The serving revision: the highest published one.
pub async fn current_revision(db: &impl ConnectionTrait) -> Result<Option<data_revision::Model>, DbErr> {
    data_revision::Entity::find().order_by_desc(data_revision::Column::Id).one(db).await
}

/// `CAST(COALESCE(SUM(col), 0) AS BIGINT)`: PostgreSQL sums bigints as numeric, and an empty
/// table sums to NULL.
fn sum0(col: impl sea_orm::sea_query::IntoColumnRef) -> SimpleExpr {
    Expr::expr(Func::coalesce([Expr::col(col).sum(), Expr::val(0)])).cast_as("bigint")
}

pub async fn dataset_state(db: &impl ConnectionTrait) -> Result<DatasetState, DbErr> {
    use super::entities::dao_summary::{Column as S, Entity as Summaries};
    let revision = current_revision(db).await?;
    let last_run = ingestion_run::Entity::find().order_by_desc(ingestion_run::Column::StartedMs).one(db).await?;
    let watermarks = source_watermark::Entity::find()
        .order_by_asc(source_watermark::Column::DaoId)
        .order_by_asc(source_watermark::Column::Source)
        .all(db)
        .await?;
    // Per-DAO counts are materialised at publication; the totals are their sums.
    let totals = Summaries::find()
        .select_only()
        .column_as(Expr::col(S::DaoId).count(), "daos")
        .column_as(sum0(S::Proposals), "proposals")
        .column_as(sum0(S::UpstreamVotes), "upstream_votes")
        .column_as(sum0(S::IngestedVotes), "ingested_votes")
        .column_as(sum0(S::Delegates), "delegates")
        .into_model::<Totals>()
        .one(db)
        .await?
        .unwrap_or_default();
    Ok(DatasetState { revision, last_run, watermarks, totals })
}

/// The newest `data_as_of` over the sources of `dao_id`; `None` when nothing was ingested.
pub async fn dao_data_as_of(db: &impl ConnectionTrait, dao_id: &str) -> Result<Option<i64>, DbErr> {
    use sea_orm::{ColumnTrait, QueryFilter};
    source_watermark::Entity::find()
        .select_only()
        .column_as(Expr::col(source_watermark::Column::DataAsOfMs).max(), "newest")
        .filter(source_watermark::Column::DaoId.eq(dao_id))
        .into_tuple::<Option<i64>>()
        .one(db)
        .await
        .map(Option::flatten)
}

/// What serving needs to know of the published state, in one small query: the serving revision
/// and the newest watermark (which moves even when a run publishes nothing new).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServingHead {
    /// The serving revision (0 before the first publication).
    pub revision: i64,
    /// The newest `data_as_of` over every source; without any, the serving revision's.
    pub data_as_of_ms: Option<i64>,
}

/// The serving revision and the newest watermark. Both are read through an index (the primary
/// key of `data_revisions`; `source_watermarks` holds one row per DAO and source).
pub async fn serving_head(db: &impl ConnectionTrait) -> Result<ServingHead, DbErr> {
    let sql = "SELECT r.id AS revision, COALESCE((SELECT MAX(w.data_as_of_ms) FROM source_watermarks w), r.data_as_of_ms) AS data_as_of_ms
               FROM data_revisions r ORDER BY r.id DESC LIMIT 1";
    let row = db.query_one_raw(sea_orm::Statement::from_string(db.get_database_backend(), sql)).await?;
    Ok(match row {
        Some(row) => ServingHead {
            revision: row.try_get::<i64>("", "revision")?,
            data_as_of_ms: row.try_get::<Option<i64>>("", "data_as_of_ms")?,
        },
        None => ServingHead::default(),
    })
}

/// The revision that last changed each DAO (`dao_summaries.revision_id`): what a cursor paging
/// one DAO's data is bound to.
pub async fn dao_revisions(db: &impl ConnectionTrait) -> Result<Vec<(String, i64)>, DbErr> {
    use super::entities::dao_summary::{Column as S, Entity as Summaries};
    Summaries::find().select_only().columns([S::DaoId, S::RevisionId]).into_tuple().all(db).await
}
