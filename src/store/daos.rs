//! Read queries: the DAO registry with its sources, counts and watermarks.
//! A page costs a fixed number of queries whatever its size (no per-row queries).
use std::collections::HashMap;

use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, FromQueryResult, PaginatorTrait, QueryFilter, QueryOrder,
    QuerySelect,
};

use super::entities::{dao, dao_summary, data_source, source_watermark};

/// A DAO with everything a listing shows about it.
#[derive(Debug, Clone)]
pub struct DaoRecord {
    pub dao: dao::Model,
    /// `None` while nothing has been ingested for the DAO (registry only): no publication has
    /// counted it yet, or no source of it has completed (publication counts every registered
    /// DAO, with zeros, as soon as it is registered).
    pub summary: Option<dao_summary::Model>,
    pub sources: Vec<data_source::Model>,
    pub watermarks: Vec<source_watermark::Model>,
}

impl DaoRecord {
    /// Where the DAO list (by id) resumes after this DAO.
    pub fn keyset(&self) -> super::keysets::DaoAfter {
        super::keysets::DaoAfter(self.dao.id.clone())
    }
}

/// One page of DAOs ordered by id, and the total.
pub async fn list(db: &impl ConnectionTrait, limit: u64, offset: u64) -> Result<(Vec<DaoRecord>, u64), DbErr> {
    let total = dao::Entity::find().count(db).await?;
    let daos = dao::Entity::find().order_by_asc(dao::Column::Id).limit(limit).offset(offset).all(db).await?;
    Ok((attach(db, daos).await?, total))
}

/// Up to `limit` DAOs ordered by id, after `after` (keyset: page 1,000 costs what page 1 costs).
pub async fn list_after(
    db: &impl ConnectionTrait,
    after: Option<&super::keysets::DaoAfter>,
    limit: u64,
) -> Result<Vec<DaoRecord>, DbErr> {
    let statement = list_after_statement(db.get_database_backend(), after, limit);
    attach(db, dao::Model::find_by_statement(statement).all(db).await?).await
}

/// The statement [`list_after`] runs.
pub fn list_after_statement(
    backend: sea_orm::DbBackend,
    after: Option<&super::keysets::DaoAfter>,
    limit: u64,
) -> sea_orm::Statement {
    let mut query = dao::Entity::find().order_by_asc(dao::Column::Id);
    if let Some(after) = after {
        query = query.filter(dao::Column::Id.gt(&after.0));
    }
    super::plans::page(backend, query, limit)
}

/// One DAO by its slug.
pub async fn get(db: &impl ConnectionTrait, id: &str) -> Result<Option<DaoRecord>, DbErr> {
    let Some(dao) = dao::Entity::find_by_id(id.to_owned()).one(db).await? else {
        return Ok(None);
    };
    Ok(attach(db, vec![dao]).await?.pop())
}

/// Loads summaries, sources and watermarks of all `daos` in three queries.
async fn attach(db: &impl ConnectionTrait, daos: Vec<dao::Model>) -> Result<Vec<DaoRecord>, DbErr> {
    if daos.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<String> = daos.iter().map(|d| d.id.clone()).collect();
    let mut summaries: HashMap<String, dao_summary::Model> = dao_summary::Entity::find()
        .filter(dao_summary::Column::DaoId.is_in(ids.clone()))
        .all(db)
        .await?
        .into_iter()
        .map(|s| (s.dao_id.clone(), s))
        .collect();
    let mut sources = group(
        data_source::Entity::find()
            .filter(data_source::Column::DaoId.is_in(ids.clone()))
            .order_by_asc(data_source::Column::Kind)
            .all(db)
            .await?,
        |s| s.dao_id.clone(),
    );
    let mut watermarks = group(
        source_watermark::Entity::find()
            .filter(source_watermark::Column::DaoId.is_in(ids))
            .order_by_asc(source_watermark::Column::Source)
            .all(db)
            .await?,
        |w| w.dao_id.clone(),
    );
    Ok(daos
        .into_iter()
        .map(|dao| DaoRecord {
            summary: summaries.remove(&dao.id).filter(|s| s.data_as_of_ms.is_some()),
            sources: sources.remove(&dao.id).unwrap_or_default(),
            watermarks: watermarks.remove(&dao.id).unwrap_or_default(),
            dao,
        })
        .collect())
}

fn group<T>(rows: Vec<T>, key: impl Fn(&T) -> String) -> HashMap<String, Vec<T>> {
    let mut map: HashMap<String, Vec<T>> = HashMap::new();
    for row in rows {
        map.entry(key(&row)).or_default().push(row);
    }
    map
}
