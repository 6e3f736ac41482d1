//! Governor history (issue 29): `delegation_changes` keeps every `DelegateChanged` and
//! `power_checkpoints` every `DelegateVotesChanged`, where `delegations` and `delegates` keep only
//! the latest of each.
//!
//! Indexes and the queries that use them (each list seeks its voter's rows in time order, with
//! the log's place on chain as the tiebreak, so a window and a cursor are both range bounds):
//! - the natural keys (`dao_id`, `block_number`, `log_index`): idempotent appends;
//! - `ix_delegation_changes_delegator`, `_from`, `_to` (address, `at_ms`, block, log): a voter's
//!   changes as the delegator, as the delegate left and as the delegate chosen, merged
//!   (`store::governor::delegations`);
//! - `ix_power_checkpoints_delegate` (`delegate`, `at_ms`, block, log): a voter's power over time;
//! - `ix_power_checkpoints_dao_delegate` (`dao_id`, `delegate`, `at_ms`, block, log): the same in one
//!   DAO, so a `daoId` filter never walks the voter's other DAOs.
use sea_orm::{EntityTrait, Schema};
use sea_orm_migration::prelude::*;

use crate::store::entities::{delegation_change, power_checkpoint};

#[derive(DeriveMigrationName)]
pub struct Migration;

const INDEXES: &[(&str, &str, &[&str])] = &[
    ("delegation_changes", "ix_delegation_changes_delegator", &["delegator", "at_ms", "block_number", "log_index"]),
    ("delegation_changes", "ix_delegation_changes_from", &["from_delegate", "at_ms", "block_number", "log_index"]),
    ("delegation_changes", "ix_delegation_changes_to", &["to_delegate", "at_ms", "block_number", "log_index"]),
    ("power_checkpoints", "ix_power_checkpoints_delegate", &["delegate", "at_ms", "block_number", "log_index"]),
    (
        "power_checkpoints",
        "ix_power_checkpoints_dao_delegate",
        &["dao_id", "delegate", "at_ms", "block_number", "log_index"],
    ),
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let schema = Schema::new(manager.get_database_backend());
        create(manager, &schema, delegation_change::Entity).await?;
        create(manager, &schema, power_checkpoint::Entity).await?;
        for (table, name, columns) in INDEXES {
            let mut index = Index::create();
            index.if_not_exists().name(*name).table(Alias::new(*table));
            for column in *columns {
                index.col(Alias::new(*column));
            }
            manager.create_index(index).await?;
        }
        Ok(())
    }
}

async fn create<E: EntityTrait>(manager: &SchemaManager<'_>, schema: &Schema, entity: E) -> Result<(), DbErr> {
    manager.create_table(schema.create_table_from_entity(entity).if_not_exists().to_owned()).await?;
    for mut index in schema.create_index_from_entity(entity) {
        manager.create_index(index.if_not_exists().to_owned()).await?;
    }
    Ok(())
}
