//! The whole domain: registry, sources, runs and watermarks, revisions, proposals, votes, voters,
//! delegates, forum, events, signals, partner tokens, x402 payments, settings.
use sea_orm::{EntityTrait, Schema};
use sea_orm_migration::prelude::*;

use crate::store::entities::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// One secondary index: table, name, columns (a leading `-` marks a descending column).
struct Ix(&'static str, &'static str, &'static [&'static str]);

/// Every list's filter and order, and every lookup the specification names, has an index here.
/// Natural keys (unique constraints) come from the entities themselves.
const INDEXES: &[Ix] = &[
    // proposals: by DAO newest first, by end time, global newest first, lookup by external id
    Ix("proposals", "ix_proposals_dao_created", &["dao_id", "-created_ms", "-id"]),
    Ix("proposals", "ix_proposals_dao_end", &["dao_id", "-end_ms", "-id"]),
    Ix("proposals", "ix_proposals_created", &["-created_ms", "-id"]),
    Ix("proposals", "ix_proposals_end", &["-end_ms", "-id"]),
    Ix("proposals", "ix_proposals_state", &["state", "-end_ms"]),
    Ix("proposals", "ix_proposals_external", &["external_id"]),
    // votes: per proposal by power (ranking) and by time; per voter history; per DAO voter
    Ix("votes", "ix_votes_proposal_power", &["proposal_id", "-vp_sort", "voter"]),
    Ix("votes", "ix_votes_proposal_time", &["proposal_id", "-created_ms", "-id"]),
    Ix("votes", "ix_votes_voter_time", &["voter", "-created_ms", "-id"]),
    Ix("votes", "ix_votes_dao_voter", &["dao_id", "voter"]),
    // voter ranking inside one DAO
    Ix("voter_dao_stats", "ix_voter_stats_rank", &["dao_id", "-vp_sort", "voter"]),
    Ix("voter_dao_stats", "ix_voter_stats_voter", &["voter"]),
    Ix("delegates", "ix_delegates_rank", &["dao_id", "-vp_sort", "address"]),
    Ix("delegates", "ix_delegates_address", &["address"]),
    Ix("forum_topics", "ix_topics_dao_created", &["dao_id", "-created_ms", "-id"]),
    Ix("forum_topics", "ix_topics_created", &["-created_ms", "-id"]),
    Ix("forum_topics", "ix_topics_external", &["external_id"]),
    Ix("forum_topics", "ix_topics_proposal", &["linked_proposal_id"]),
    Ix("forum_posts", "ix_posts_topic_time", &["topic_id", "created_ms"]),
    Ix("governance_events", "ix_events_time", &["-occurred_ms", "-id"]),
    Ix("governance_events", "ix_events_dao_time", &["dao_id", "-occurred_ms", "-id"]),
    Ix("governance_events", "ix_events_kind_time", &["kind", "-occurred_ms", "-id"]),
    Ix("governance_events", "ix_events_proposal", &["proposal_id"]),
    Ix("signals", "ix_signals_time", &["-detected_ms", "-id"]),
    Ix("signals", "ix_signals_dao_time", &["dao_id", "-detected_ms", "-id"]),
    Ix("signals", "ix_signals_proposal", &["proposal_id"]),
    Ix("ingestion_runs", "ix_runs_started", &["-started_ms"]),
    Ix("x402_payments", "ix_payments_created", &["-created_ms"]),
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let schema = Schema::new(manager.get_database_backend());
        macro_rules! tables {
            ($($entity:path),* $(,)?) => {$(
                create(manager, &schema, $entity).await?;
            )*};
        }
        tables!(
            dao::Entity,
            data_source::Entity,
            ingestion_run::Entity,
            source_watermark::Entity,
            data_revision::Entity,
            dao_summary::Entity,
            proposal::Entity,
            vote::Entity,
            voter::Entity,
            voter_dao_stat::Entity,
            delegate::Entity,
            forum_topic::Entity,
            forum_post::Entity,
            governance_event::Entity,
            signal::Entity,
            partner_token::Entity,
            x402_payment::Entity,
            setting::Entity,
        );
        for Ix(table, name, columns) in INDEXES {
            let mut index = Index::create();
            index.name(*name).table(Alias::new(*table));
            for column in *columns {
                match column.strip_prefix('-') {
                    Some(c) => index.col((Alias::new(c), IndexOrder::Desc)),
                    None => index.col(Alias::new(*column)),
                };
            }
            manager.create_index(index).await?;
        }
        Ok(())
    }
}

async fn create<E: EntityTrait>(manager: &SchemaManager<'_>, schema: &Schema, entity: E) -> Result<(), DbErr> {
    manager.create_table(schema.create_table_from_entity(entity)).await?;
    for index in schema.create_index_from_entity(entity) {
        manager.create_index(index).await?;
    }
    Ok(())
}
