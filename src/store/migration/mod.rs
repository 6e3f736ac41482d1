//! Schema migrations. Applied on every start (`govdata migrate` runs them alone).
//!
//! Migration 1 builds the tables from the entities. Later schema changes go in new migrations
//! with explicit DDL, and since migration 1 follows the entities, a fresh store already has the
//! new shape when a later migration runs: a migration that changes a column checks the column
//! first (migration 7 does), so it upgrades an old store and leaves a new one as it is.
use sea_orm_migration::prelude::*;

mod m0001_initial;
mod m0002_search;
mod m0003_staging;
mod m0004_delegations;
mod m0005_proposal_facts;
mod m0006_compact_keys;
mod m0007_voter_bytes;
mod m0008_revision_counts;
mod m0009_ranking_covers;
mod m0010_rate_limits;
mod m0011_run_heartbeat;
mod m0012_voter_stats_float;
mod m0013_trigram_search;
mod m0014_feed;
mod m0015_webhooks;
mod m0016_governor_history;
mod m0017_counting;
mod m0018_privacy;
mod m0019_notable_delegations;
mod m0020_copeland_facts;
mod m0021_export_files;
mod m0022_voter_dao_history;
mod m0023_vote_arms;
mod m0024_index_packing;
mod m0025_title_vocabulary;
mod m0026_proposal_actions;
mod m0027_action_misses;
mod m0028_proposal_executions;
mod m0029_contract_lookups;
mod m0031_proposal_simulations;
mod m0032_subscription_filters;
mod m0033_subscription_formats;
mod m0034_feed_moments;
mod m0035_sqlite_time_orders;

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
            Box::new(m0007_voter_bytes::Migration),
            Box::new(m0008_revision_counts::Migration),
            Box::new(m0009_ranking_covers::Migration),
            Box::new(m0010_rate_limits::Migration),
            Box::new(m0011_run_heartbeat::Migration),
            Box::new(m0012_voter_stats_float::Migration),
            Box::new(m0013_trigram_search::Migration),
            Box::new(m0014_feed::Migration),
            Box::new(m0015_webhooks::Migration),
            Box::new(m0016_governor_history::Migration),
            Box::new(m0017_counting::Migration),
            Box::new(m0018_privacy::Migration),
            Box::new(m0019_notable_delegations::Migration),
            Box::new(m0020_copeland_facts::Migration),
            Box::new(m0021_export_files::Migration),
            Box::new(m0022_voter_dao_history::Migration),
            Box::new(m0023_vote_arms::Migration),
            Box::new(m0024_index_packing::Migration),
            Box::new(m0025_title_vocabulary::Migration),
            Box::new(m0026_proposal_actions::Migration),
            Box::new(m0027_action_misses::Migration),
            Box::new(m0028_proposal_executions::Migration),
            Box::new(m0029_contract_lookups::Migration),
            Box::new(m0031_proposal_simulations::Migration),
            Box::new(m0032_subscription_filters::Migration),
            Box::new(m0033_subscription_formats::Migration),
            Box::new(m0034_feed_moments::Migration),
            Box::new(m0035_sqlite_time_orders::Migration),
        ]
    }
}
