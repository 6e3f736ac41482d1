//! The export catalogue (`export_files`): which file of a DAO's table holds which revision, and
//! the build claim that keeps several processes from building the same file at once.
//!
//! A claim is one conditional statement, so two processes racing for a file cannot both win on
//! either backend: the first `INSERT … ON CONFLICT DO NOTHING` of a new file, or the `UPDATE`
//! that moves an outdated (or abandoned) row to `building`, affects one row for exactly one of
//! them. The winner builds and publishes the row `ready` ([`finish`]); the others wait for it.
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, Statement, Value};

pub use super::entities::export_file::ExportState;
use super::entities::export_file::{self, Column, Entity, Model};
use crate::contract::time::now_ms;

/// A file of the catalogue, by its key.
#[derive(Debug, Clone, Copy)]
pub struct FileKey<'a> {
    pub dao_id: &'a str,
    pub table: &'a str,
    pub format: &'a str,
}

impl FileKey<'_> {
    fn values(&self) -> Vec<Value> {
        vec![self.dao_id.into(), self.table.into(), self.format.into()]
    }
}

/// What a finished build publishes.
#[derive(Debug, Clone)]
pub struct Built {
    pub revision_id: i64,
    pub data_as_of_ms: Option<i64>,
    pub file_name: String,
    pub rows: i64,
    pub bytes: i64,
    pub sha256: String,
    pub gzip_bytes: Option<i64>,
}

async fn exec<C: ConnectionTrait>(db: &C, sql: &str, values: Vec<Value>) -> Result<u64, DbErr> {
    let stmt = Statement::from_sql_and_values(db.get_database_backend(), sql, values);
    Ok(db.execute_raw(stmt).await?.rows_affected())
}

/// The catalogue row of `key`, if any.
pub async fn get<C: ConnectionTrait>(db: &C, key: FileKey<'_>) -> Result<Option<Model>, DbErr> {
    Entity::find_by_id((key.dao_id.to_owned(), key.table.to_owned(), key.format.to_owned())).one(db).await
}

/// Every catalogue row of `dao_id` (or of every DAO), in key order.
pub async fn list<C: ConnectionTrait>(db: &C, dao_id: Option<&str>) -> Result<Vec<Model>, DbErr> {
    let mut q = Entity::find();
    if let Some(dao) = dao_id {
        q = q.filter(Column::DaoId.eq(dao));
    }
    q.order_by_asc(Column::DaoId).order_by_asc(Column::TableName).order_by_asc(Column::Format).all(db).await
}

/// Claims the build of `key` for `builder`, for the DAO revision `revision`: true when this
/// call won it. A row already `ready` at `revision` or later is not claimed (there is nothing to
/// build), nor one whose builder's heartbeat ([`heartbeat`]) moved after `stale_before_ms` (it
/// is at work).
pub async fn claim<C: ConnectionTrait>(
    db: &C,
    key: FileKey<'_>,
    builder: &str,
    revision: i64,
    stale_before_ms: i64,
) -> Result<bool, DbErr> {
    let now = now_ms();
    let mut values = key.values();
    values.extend([ExportState::Building.into(), builder.into(), now.into()]);
    let inserted = exec(
        db,
        "INSERT INTO export_files (dao_id, table_name, format, state, builder, claimed_ms, revision_id, \
         changed_revision_id, rows, bytes, built_ms, requested_ms) VALUES ($1, $2, $3, $4, $5, $6, 0, 0, 0, 0, 0, $6) \
         ON CONFLICT (dao_id, table_name, format) DO NOTHING",
        values,
    )
    .await?;
    if inserted == 1 {
        return Ok(true);
    }
    let mut values = key.values();
    values.extend([
        ExportState::Building.into(),
        builder.into(),
        now.into(),
        ExportState::Ready.into(),
        revision.into(),
        stale_before_ms.into(),
    ]);
    let claimed = exec(
        db,
        "UPDATE export_files SET state = $4, builder = $5, claimed_ms = $6 \
         WHERE dao_id = $1 AND table_name = $2 AND format = $3 \
         AND ((state = $7 AND revision_id < $8) OR (state = $4 AND claimed_ms < $9))",
        values,
    )
    .await?;
    Ok(claimed == 1)
}

/// Publishes `builder`'s finished file of `key`: the row becomes `ready`. Its
/// `changed_revision_id` moves only when the bytes changed. Returns the row as it was before
/// (the file it replaces), or `None` when the claim was lost meanwhile (another builder took
/// over an abandoned claim): the caller then removes what it built.
pub async fn finish<C: ConnectionTrait>(
    db: &C,
    key: FileKey<'_>,
    builder: &str,
    built: &Built,
) -> Result<Option<Model>, DbErr> {
    let before = get(db, key).await?;
    let Some(before) = before.filter(|r| r.state == ExportState::Building && r.builder.as_deref() == Some(builder))
    else {
        return Ok(None);
    };
    let unchanged = before.sha256.as_deref() == Some(built.sha256.as_str());
    let changed_revision = if unchanged { before.changed_revision_id } else { built.revision_id };
    let now = now_ms();
    let mut values = key.values();
    values.extend([
        ExportState::Ready.into(),
        ExportState::Building.into(),
        builder.into(),
        built.revision_id.into(),
        changed_revision.into(),
        built.data_as_of_ms.into(),
        built.file_name.clone().into(),
        built.rows.into(),
        built.bytes.into(),
        built.sha256.clone().into(),
        built.gzip_bytes.into(),
        now.into(),
    ]);
    let done = exec(
        db,
        "UPDATE export_files SET state = $4, builder = NULL, revision_id = $7, changed_revision_id = $8, \
         data_as_of_ms = $9, file_name = $10, rows = $11, bytes = $12, sha256 = $13, gzip_bytes = $14, \
         built_ms = $15, requested_ms = $15 \
         WHERE dao_id = $1 AND table_name = $2 AND format = $3 AND state = $5 AND builder = $6",
        values,
    )
    .await?;
    Ok((done == 1).then_some(before))
}

/// Moves the heartbeat of `builder`'s claim on `key` (its `claimed_ms`) to now: false when the
/// claim is no longer `builder`'s (it was taken over, or the build was published).
pub async fn heartbeat<C: ConnectionTrait>(db: &C, key: FileKey<'_>, builder: &str) -> Result<bool, DbErr> {
    let mut values = key.values();
    values.extend([ExportState::Building.into(), builder.into(), now_ms().into()]);
    let held = exec(
        db,
        "UPDATE export_files SET claimed_ms = $6 WHERE dao_id = $1 AND table_name = $2 AND format = $3 \
         AND state = $4 AND builder = $5",
        values,
    )
    .await?;
    Ok(held == 1)
}

/// Gives up `builder`'s claim on `key` (the build failed): the next request claims it again.
pub async fn release<C: ConnectionTrait>(db: &C, key: FileKey<'_>, builder: &str) -> Result<(), DbErr> {
    let mut values = key.values();
    values.extend([ExportState::Building.into(), builder.into()]);
    exec(
        db,
        "UPDATE export_files SET claimed_ms = 0 WHERE dao_id = $1 AND table_name = $2 AND format = $3 \
         AND state = $4 AND builder = $5",
        values,
    )
    .await?;
    Ok(())
}

/// Notes that `key`'s file was served (bookkeeping for the disk budget).
pub async fn touch<C: ConnectionTrait>(db: &C, key: FileKey<'_>) -> Result<(), DbErr> {
    let mut values = key.values();
    values.push(now_ms().into());
    exec(db, "UPDATE export_files SET requested_ms = $4 WHERE dao_id = $1 AND table_name = $2 AND format = $3", values)
        .await?;
    Ok(())
}

/// Ready files, least recently served first: what the disk budget removes first.
pub async fn ready_by_use<C: ConnectionTrait>(db: &C) -> Result<Vec<Model>, DbErr> {
    Entity::find()
        .filter(Column::State.eq(ExportState::Ready))
        .order_by_asc(Column::RequestedMs)
        .order_by_asc(Column::DaoId)
        .all(db)
        .await
}

/// Removes the catalogue row of a ready file, if it still names `file_name` (a rebuild may have
/// replaced it meanwhile): true when this call removed it.
pub async fn forget<C: ConnectionTrait>(db: &C, key: FileKey<'_>, file_name: &str) -> Result<bool, DbErr> {
    let mut values = key.values();
    values.extend([ExportState::Ready.into(), file_name.into()]);
    let n = exec(
        db,
        "DELETE FROM export_files WHERE dao_id = $1 AND table_name = $2 AND format = $3 AND state = $4 \
         AND file_name = $5",
        values,
    )
    .await?;
    Ok(n == 1)
}

/// The revision that last changed `dao_id`, with its `dataAsOf`, as the store holds it now.
pub async fn dao_revision<C: ConnectionTrait>(db: &C, dao_id: &str) -> Result<Option<(i64, Option<i64>)>, DbErr> {
    let stmt = Statement::from_sql_and_values(
        db.get_database_backend(),
        "SELECT s.revision_id, r.data_as_of_ms FROM dao_summaries s LEFT JOIN data_revisions r ON r.id = s.revision_id \
         WHERE s.dao_id = $1",
        vec![dao_id.into()],
    );
    let Some(row) = db.query_one_raw(stmt).await? else {
        return Ok(None);
    };
    Ok(Some((row.try_get::<i64>("", "revision_id")?, row.try_get::<Option<i64>>("", "data_as_of_ms")?)))
}

pub use export_file::Model as ExportFileRow;

/// A DAO of the export list: its id, the revision that last changed it and that revision's
/// `dataAsOf` (none before anything was published for it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportDao {
    pub dao_id: String,
    pub revision_id: Option<i64>,
    pub data_as_of_ms: Option<i64>,
}

/// Up to `limit` DAOs from `from` on (inclusive), by id, or the one DAO `only`: two index
/// seeks (the DAOs' and their summaries' primary keys).
pub async fn daos_from<C: ConnectionTrait>(
    db: &C,
    only: Option<&str>,
    from: Option<&str>,
    limit: u64,
) -> Result<Vec<ExportDao>, DbErr> {
    let (filter, values): (&str, Vec<Value>) = match (only, from) {
        (Some(dao), _) => ("WHERE d.id = $1", vec![dao.into()]),
        (None, Some(from)) => ("WHERE d.id >= $1", vec![from.into()]),
        (None, None) => ("", vec![]),
    };
    let sql = format!(
        "SELECT d.id, s.revision_id, r.data_as_of_ms FROM daos d LEFT JOIN dao_summaries s ON s.dao_id = d.id \
         LEFT JOIN data_revisions r ON r.id = s.revision_id {filter} ORDER BY d.id LIMIT {limit}"
    );
    let rows = db.query_all_raw(Statement::from_sql_and_values(db.get_database_backend(), sql, values)).await?;
    rows.iter()
        .map(|r| {
            Ok(ExportDao {
                dao_id: r.try_get("", "id")?,
                revision_id: r.try_get("", "revision_id")?,
                data_as_of_ms: r.try_get("", "data_as_of_ms")?,
            })
        })
        .collect()
}

/// The catalogue rows of the DAOs from `first` to `last` (inclusive), in key order.
pub async fn between<C: ConnectionTrait>(db: &C, first: &str, last: &str) -> Result<Vec<Model>, DbErr> {
    Entity::find()
        .filter(Column::DaoId.gte(first))
        .filter(Column::DaoId.lte(last))
        .order_by_asc(Column::DaoId)
        .order_by_asc(Column::TableName)
        .order_by_asc(Column::Format)
        .all(db)
        .await
}
