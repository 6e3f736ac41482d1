//! Compare-then-write upserts shared by every writer (the sample importer, ingestion's
//! publication): read what is stored under the rows' natural keys, keep only rows that are new
//! or different, and write those in batched `INSERT … ON CONFLICT DO UPDATE`. Comparing first
//! gives exact insert/update counts and makes a repeated write a true no-op.
use std::collections::HashMap;
use std::hash::Hash;

use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseTransaction, DbErr, EntityTrait, IdenStatic, IntoActiveModel, Iterable,
    QueryFilter, Value,
};

/// Rows one import wrote to one table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableCounts {
    pub inserted: u64,
    pub updated: u64,
}

impl TableCounts {
    pub fn written(&self) -> u64 {
        self.inserted + self.updated
    }
}

/// `name +inserted ~updated` for each table a write changed, for a revision's summary line.
pub(crate) fn describe(tables: &[(&str, TableCounts)]) -> Vec<String> {
    tables
        .iter()
        .filter(|(_, c)| c.written() > 0)
        .map(|(name, c)| format!("{name} +{} ~{}", c.inserted, c.updated))
        .collect()
}

/// Rows per INSERT: 500 rows of the widest table (proposals) stay well below both backends'
/// bind-parameter limits.
pub(crate) const BATCH: usize = 500;

/// A column the writer does not carry keeps its stored value (`None` for a new row).
macro_rules! kept {
    ($stored:expr, $field:ident) => {
        $stored.and_then(|s| s.$field.clone())
    };
}
pub(crate) use kept;

/// The rows to write and how many of them are new or changed.
pub(crate) struct Changes<M> {
    pub rows: Vec<M>,
    pub counts: TableCounts,
}

impl<M> Default for Changes<M> {
    fn default() -> Self {
        Self { rows: Vec::new(), counts: TableCounts::default() }
    }
}

impl<M: PartialEq> Changes<M> {
    /// Keeps `desired` if it is new or differs from `stored`; `touch` then stamps bookkeeping
    /// columns (such as `updated_ms`) that must not by themselves count as a change.
    pub fn offer(&mut self, stored: Option<&M>, mut desired: M, touch: impl FnOnce(&mut M)) {
        match stored {
            Some(s) if *s == desired => return,
            Some(_) => self.counts.updated += 1,
            None => self.counts.inserted += 1,
        }
        touch(&mut desired);
        self.rows.push(desired);
    }
}

pub(crate) fn by_key<M, K: Eq + Hash>(models: Vec<M>, key: impl Fn(&M) -> K) -> HashMap<K, M> {
    models.into_iter().map(|m| (key(&m), m)).collect()
}

/// The stored rows whose `column` is one of `values`, looked up in batches.
pub(crate) async fn stored<E, V>(
    txn: &DatabaseTransaction,
    column: E::Column,
    values: impl IntoIterator<Item = V>,
) -> Result<Vec<E::Model>, DbErr>
where
    E: EntityTrait,
    V: Into<Value> + Clone,
{
    let values: Vec<V> = values.into_iter().collect();
    let mut found = Vec::new();
    for chunk in values.chunks(BATCH) {
        found.extend(E::find().filter(column.is_in(chunk.iter().cloned())).all(txn).await?);
    }
    Ok(found)
}

/// Inserts `rows` in batches; a row whose natural key exists updates every other column.
/// `generated_id` names an auto-increment id, left to the database on insert and never updated.
pub(crate) async fn upsert<E>(
    txn: &DatabaseTransaction,
    rows: Vec<E::Model>,
    natural_key: &[E::Column],
    generated_id: Option<E::Column>,
) -> Result<(), DbErr>
where
    E: EntityTrait,
    E::Model: IntoActiveModel<E::ActiveModel>,
    E::ActiveModel: ActiveModelTrait<Entity = E> + Send,
{
    let fixed: Vec<&str> = natural_key.iter().chain(generated_id.iter()).map(|c| c.as_str()).collect();
    let updated = E::Column::iter().filter(|c| !fixed.contains(&c.as_str()));
    let conflict = OnConflict::columns(natural_key.iter().copied()).update_columns(updated).to_owned();
    let mut rows = rows;
    while !rows.is_empty() {
        let rest = rows.split_off(rows.len().min(BATCH));
        let batch = std::mem::replace(&mut rows, rest).into_iter().map(|m| {
            let mut active = m.into_active_model();
            if let Some(id) = generated_id {
                active.not_set(id);
            }
            active
        });
        E::insert_many(batch).on_conflict(conflict.clone()).exec_without_returning(txn).await?;
    }
    Ok(())
}
