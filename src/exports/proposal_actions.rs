//! The `proposal_actions` table of a DAO: its proposals oldest first (as the `proposals` and
//! `votes` tables walk them), each proposal's actions by position: one range of the actions'
//! primary key (`proposal_id, position`) per proposal, never a sort, and the same bytes for the
//! same actions.
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde_json::Value;

use super::writer::Cell;
use super::{BATCH_ROWS, Batches, text};
use crate::contract::vocabulary::ProposalSource;
use crate::store::entities::{proposal, proposal_action};
use crate::store::keys;

/// Sends every action of `dao_id`'s proposals as rows of `contract::exports::PROPOSAL_ACTIONS`.
pub async fn read(db: &impl ConnectionTrait, dao_id: &str, out: Batches) -> anyhow::Result<()> {
    use sea_orm::ActiveEnum;
    let proposals: Vec<(i64, ProposalSource, String)> = proposal::Entity::find()
        .select_only()
        .columns([proposal::Column::Id, proposal::Column::Source, proposal::Column::ExternalId])
        .filter(proposal::Column::DaoId.eq(dao_id))
        .order_by_asc(proposal::Column::CreatedMs)
        .order_by_asc(proposal::Column::Id)
        .into_tuple()
        .all(db)
        .await?;
    let mut rows: Vec<Vec<Cell>> = Vec::with_capacity(BATCH_ROWS as usize);
    for (id, source, external_id) in proposals {
        // A proposal has a handful of actions: one read takes them all.
        let actions = proposal_action::Entity::find()
            .filter(proposal_action::Column::ProposalId.eq(id))
            .order_by_asc(proposal_action::Column::Position)
            .all(db)
            .await?;
        if actions.is_empty() {
            continue;
        }
        let key = keys::proposal_key(dao_id, source.as_str(), &external_id);
        for a in actions {
            // The stored answer's own members; a row whose answer does not read keeps it whole
            // in `decoded` and has neither.
            let decoded: Option<Value> = serde_json::from_str(&a.decoded).ok();
            let member = |path: &[&str]| {
                let mut v = decoded.as_ref()?;
                for p in path {
                    v = v.get(p)?;
                }
                v.as_str().map(str::to_owned)
            };
            rows.push(vec![
                Cell::Text(dao_id.to_owned()),
                Cell::Text(key.clone()),
                Cell::Text(source.as_str().to_owned()),
                Cell::Text(external_id.clone()),
                Cell::Integer(i64::from(a.position)),
                Cell::Text(a.execution_path.to_value()),
                Cell::Text(a.target),
                Cell::Text(a.value_wei),
                text(a.signature),
                Cell::Text(a.calldata),
                text(member(&["call", "signature"])),
                text(member(&["summary"])),
                Cell::Text(a.decoded),
            ]);
            if rows.len() as u64 == BATCH_ROWS {
                out.send(std::mem::take(&mut rows)).await?;
            }
        }
    }
    out.send(rows).await
}
