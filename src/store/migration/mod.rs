//! Schema migrations. Applied on every start (`govdata migrate` runs them alone).
//!
//! Migration 1 builds the tables from the entities as they stood when it was written. Once a
//! release has shipped, it is frozen: later schema changes go in new migrations with explicit DDL.
use sea_orm_migration::prelude::*;

mod m0001_initial;
mod m0002_search;
mod m0003_staging;
mod m0004_delegations;
mod m0005_proposal_facts;
mod m0006_compact_keys;

pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m0001_initial::Migration),
            Box::new(m0002_search::Migration),
            Box::new(m0003_staging::Migration),
            Box::new(m0004_delegations::Migration),
            Box::new(m0005_proposal_facts::Migration),
            Box::new(m0006_compact_keys::Migration),
        ]
    }
}
