//! The `daos` table of a DAO: its one registry row with its published summary, read by primary
//! key (`daos.id`, then `dao_summaries.dao_id`): two point reads, no order to keep.
use sea_orm::{ConnectionTrait, EntityTrait};

use super::writer::Cell;
use super::{Batches, integer, text, timestamp};
use crate::store::entities::{dao, dao_summary};

/// Sends the DAO `dao_id` as the row of `contract::exports::DAOS` (none for an unknown DAO).
pub async fn read(db: &impl ConnectionTrait, dao_id: &str, out: Batches) -> anyhow::Result<()> {
    let Some(d) = dao::Entity::find_by_id(dao_id).one(db).await? else {
        return Ok(());
    };
    let s = dao_summary::Entity::find_by_id(dao_id).one(db).await?;
    // No summary: nothing published yet, so the counts are unknown rather than zero (as the API's
    // `registry_only` status says).
    let count = |f: fn(&dao_summary::Model) -> i64| integer(s.as_ref().map(f));
    let row = vec![
        Cell::Text(d.id),
        Cell::Text(d.name),
        text(d.symbol),
        text(d.snapshot_space),
        text(d.discourse_url),
        integer(d.chain_id),
        text(d.governor),
        text(d.token),
        Cell::Text(if s.is_some() { "ingested" } else { "registry_only" }.to_owned()),
        count(|s| s.proposals),
        count(|s| s.active_proposals),
        count(|s| s.upstream_votes),
        count(|s| s.ingested_votes),
        count(|s| s.voters),
        count(|s| s.delegates),
        count(|s| s.forum_topics),
        timestamp(s.as_ref().and_then(|s| s.data_as_of_ms)),
    ];
    out.send(vec![row]).await
}
