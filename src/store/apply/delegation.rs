//! Governor delegates, each holder's delegation, and the append-only delegation history
//! (`DelegateChanged` and `DelegateVotesChanged` logs).
use std::collections::BTreeSet;

use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveModelTrait,
    ActiveValue::{NotSet, Set},
    ConnectionTrait, DatabaseTransaction, DbErr, EntityTrait, Statement,
};

use super::Applier;
use crate::contract::decimal;
use crate::store::address::AccountBytes;
use crate::store::entities::{delegate, delegation, delegation_change, power_checkpoint};
use crate::store::publish::Touched;
use crate::store::sort_keys;
use crate::store::staging::{DelegateRecord, DelegationChangeRecord, DelegationRecord, PowerCheckpointRecord};
use crate::store::upsert::{Changes, TableCounts, by_key, stored, upsert};

impl Applier<'_> {
    pub(super) async fn delegates(
        &self,
        rows: &[DelegateRecord],
        skipped: &mut Vec<String>,
        touched: &mut Touched,
    ) -> Result<TableCounts, DbErr> {
        if rows.is_empty() {
            return Ok(TableCounts::default());
        }
        let addresses: BTreeSet<String> = rows.iter().map(|r| r.address.clone()).collect();
        let stored = stored::<delegate::Entity, _>(self.txn, delegate::Column::Address, addresses).await?;
        let stored = by_key(stored, |m| (m.dao_id.clone(), m.address.clone()));
        let mut changes = Changes::default();
        for r in rows {
            let scaled = match decimal::scale_down(&r.voting_power_raw, r.decimals)
                .and_then(|v| Ok((sort_keys::sort_key(&v)?, v)))
            {
                Ok((sort, value)) => (sort, decimal::plain(&value)),
                Err(e) => {
                    skipped.push(format!("delegate {}: {e}", r.address));
                    continue;
                }
            };
            let old = stored.get(&(r.dao_id.clone(), r.address.clone()));
            let desired = delegate::Model {
                id: old.map_or(0, |s| s.id),
                dao_id: r.dao_id.clone(),
                address: r.address.clone(),
                voting_power_raw: r.voting_power_raw.clone(),
                decimals: r.decimals as i32,
                voting_power: scaled.1,
                vp_sort: scaled.0,
                delegators_count: r.delegators_count.or_else(|| old.and_then(|s| s.delegators_count)),
                origin: GOVERNOR_ORIGIN.to_owned(),
                as_of_ms: old.map_or(r.as_of_ms, |s| s.as_of_ms),
            };
            let as_of = r.as_of_ms;
            changes.offer(old, desired, |m| m.as_of_ms = as_of);
        }
        touched.daos.extend(changes.rows.iter().map(|d| d.dao_id.clone()));
        let natural = [delegate::Column::DaoId, delegate::Column::Address];
        upsert::<delegate::Entity>(self.txn, changes.rows, &natural, Some(delegate::Column::Id)).await?;
        Ok(changes.counts)
    }

    /// Each holder's delegate; an event older than the stored one is ignored.
    pub(super) async fn delegations(
        &self,
        rows: &[DelegationRecord],
        touched: &mut Touched,
    ) -> Result<TableCounts, DbErr> {
        if rows.is_empty() {
            return Ok(TableCounts::default());
        }
        let holders: BTreeSet<String> = rows.iter().map(|r| r.delegator.clone()).collect();
        let stored = stored::<delegation::Entity, _>(self.txn, delegation::Column::Delegator, holders).await?;
        let stored = by_key(stored, |m| (m.dao_id.clone(), m.delegator.clone()));
        let mut changes = Changes::default();
        for r in rows {
            let old = stored.get(&(r.dao_id.clone(), r.delegator.clone()));
            if old.is_some_and(|o| o.block_number > r.block_number) {
                continue;
            }
            let desired = delegation::Model {
                id: old.map_or(0, |s| s.id),
                dao_id: r.dao_id.clone(),
                delegator: r.delegator.clone(),
                delegate: r.delegate.clone(),
                block_number: r.block_number,
            };
            changes.offer(old, desired, |_| {});
        }
        touched.daos.extend(changes.rows.iter().map(|d| d.dao_id.clone()));
        let natural = [delegation::Column::DaoId, delegation::Column::Delegator];
        upsert::<delegation::Entity>(self.txn, changes.rows, &natural, Some(delegation::Column::Id)).await?;
        Ok(changes.counts)
    }

    /// Sets each governor delegate's `delegators_count` of the DAOs in `daos` from the stored
    /// delegations, rewriting only the counts that moved. Returns how many moved, and where.
    pub(super) async fn count_delegators(&self, daos: &BTreeSet<String>) -> Result<(u64, BTreeSet<String>), DbErr> {
        let (mut moved, mut touched) = (0, BTreeSet::new());
        for dao in daos {
            let stmt = Statement::from_sql_and_values(
                self.txn.get_database_backend(),
                COUNT_DELEGATORS,
                [dao.clone().into(), GOVERNOR_ORIGIN.into()],
            );
            let n = self.txn.execute_raw(stmt).await?.rows_affected();
            if n > 0 {
                touched.insert(dao.clone());
            }
            moved += n;
        }
        Ok((moved, touched))
    }

    /// Appends delegation changes; one already stored (the same log, read again) is kept as it is.
    pub(super) async fn delegation_changes(
        &self,
        rows: Vec<DelegationChangeRecord>,
        touched: &mut Touched,
    ) -> Result<TableCounts, DbErr> {
        use delegation_change::Column as C;
        if !rows.is_empty() && touched.delegation_changes_above.is_none() {
            touched.delegation_changes_above = Some(crate::store::governor::last_change_id(self.txn).await?);
        }
        let models = rows
            .into_iter()
            .map(|r| {
                Ok(delegation_change::ActiveModel {
                    id: NotSet,
                    delegator: Set(account(&r.delegator)?),
                    from_delegate: Set(account(&r.from_delegate)?),
                    to_delegate: Set(account(&r.to_delegate)?),
                    dao_id: Set(r.dao_id),
                    power_moved_raw: Set(r.power_moved_raw),
                    decimals: Set(r.decimals as i32),
                    block_number: Set(r.block_number),
                    log_index: Set(r.log_index),
                    tx_hash: Set(r.tx_hash),
                    at_ms: Set(r.at_ms),
                    supply_raw: Set(r.supply_raw),
                })
            })
            .collect::<Result<Vec<_>, DbErr>>()?;
        append::<delegation_change::Entity>(self.txn, models, &[C::DaoId, C::BlockNumber, C::LogIndex], touched, |m| {
            m.dao_id.clone().unwrap()
        })
        .await
    }

    /// Appends voting power checkpoints, as [`Self::delegation_changes`] does.
    pub(super) async fn power_checkpoints(
        &self,
        rows: Vec<PowerCheckpointRecord>,
        touched: &mut Touched,
    ) -> Result<TableCounts, DbErr> {
        use power_checkpoint::Column as C;
        let models = rows
            .into_iter()
            .map(|r| {
                Ok(power_checkpoint::ActiveModel {
                    id: NotSet,
                    delegate: Set(account(&r.delegate)?),
                    cause_delegator: Set(r.cause_delegator.as_deref().map(account).transpose()?),
                    dao_id: Set(r.dao_id),
                    previous_raw: Set(r.previous_raw),
                    power_raw: Set(r.power_raw),
                    decimals: Set(r.decimals as i32),
                    cause: Set(r.cause),
                    block_number: Set(r.block_number),
                    log_index: Set(r.log_index),
                    tx_hash: Set(r.tx_hash),
                    at_ms: Set(r.at_ms),
                })
            })
            .collect::<Result<Vec<_>, DbErr>>()?;
        append::<power_checkpoint::Entity>(self.txn, models, &[C::DaoId, C::BlockNumber, C::LogIndex], touched, |m| {
            m.dao_id.clone().unwrap()
        })
        .await
    }
}

/// Counts, per governor delegate of DAO `$1`, the holders whose current delegate it is.
const COUNT_DELEGATORS: &str = "UPDATE delegates
     SET delegators_count = (SELECT COUNT(*) FROM delegations g WHERE g.dao_id = delegates.dao_id AND g.delegate = delegates.address)
     WHERE dao_id = $1 AND origin = $2
       AND COALESCE(delegators_count, -1) <> (SELECT COUNT(*) FROM delegations g WHERE g.dao_id = delegates.dao_id AND g.delegate = delegates.address)";

/// `origin` of delegates read from a governor token's events.
pub const GOVERNOR_ORIGIN: &str = "governor-logs";

/// The bytes of an address a connector wrote (lowercase hex from the chain: always valid).
fn account(text: &str) -> Result<AccountBytes, DbErr> {
    AccountBytes::parse(text).map_err(|e| DbErr::Custom(format!("a token log's address: {e}")))
}

/// Inserts append-only rows, skipping those whose natural key is stored (a log read twice), and
/// counts what was new; a DAO that gained a row is touched.
async fn append<E>(
    txn: &DatabaseTransaction,
    rows: Vec<E::ActiveModel>,
    natural_key: &[E::Column],
    touched: &mut Touched,
    dao_of: impl Fn(&E::ActiveModel) -> String,
) -> Result<TableCounts, DbErr>
where
    E: EntityTrait,
    E::ActiveModel: ActiveModelTrait<Entity = E> + Send,
{
    let mut counts = TableCounts::default();
    let conflict = OnConflict::columns(natural_key.iter().copied()).do_nothing().to_owned();
    let mut rows = rows;
    while !rows.is_empty() {
        let rest = rows.split_off(rows.len().min(crate::store::upsert::BATCH));
        let batch = std::mem::replace(&mut rows, rest);
        let daos: BTreeSet<String> = batch.iter().map(&dao_of).collect();
        let inserted = E::insert_many(batch).on_conflict(conflict.clone()).exec_without_returning(txn).await?;
        if inserted > 0 {
            touched.daos.extend(daos);
        }
        counts.inserted += inserted;
    }
    Ok(counts)
}
