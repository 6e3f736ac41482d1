//! The `voters` table of a DAO: its `voter_dao_stats` rows by voter address, read in keyset pages
//! of the natural key's unique index (`voter_dao_natural`: `dao_id, voter`), never a sort; each
//! page's names (`voters`: ENS, display name) in one batched look-up by primary key.
use std::collections::HashMap;

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use super::writer::Cell;
use super::{BATCH_ROWS, Batches, text};
use crate::store::address;
use crate::store::entities::{voter, voter_dao_stat};

/// Sends every voter of `dao_id` as rows of `contract::exports::VOTERS`.
pub async fn read(db: &impl ConnectionTrait, dao_id: &str, out: Batches) -> anyhow::Result<()> {
    use voter_dao_stat::Column as S;
    let mut after: Option<String> = None;
    loop {
        let mut q = voter_dao_stat::Entity::find().filter(S::DaoId.eq(dao_id));
        if let Some(v) = after.take() {
            q = q.filter(S::Voter.gt(v));
        }
        let page = q.order_by_asc(S::Voter).limit(BATCH_ROWS).all(db).await?;
        let full = page.len() as u64 == BATCH_ROWS;
        after = page.last().map(|s| s.voter.clone());
        let names: HashMap<String, (Option<String>, Option<String>)> = if page.is_empty() {
            HashMap::new()
        } else {
            voter::Entity::find()
                .select_only()
                .columns([voter::Column::Address, voter::Column::Ens, voter::Column::Name])
                .filter(voter::Column::Address.is_in(page.iter().map(|s| s.voter.clone())))
                .into_tuple::<(String, Option<String>, Option<String>)>()
                .all(db)
                .await?
                .into_iter()
                .map(|(a, ens, name)| (a, (ens, name)))
                .collect()
        };
        let rows = page
            .into_iter()
            .map(|s| {
                let (ens, name) = names.get(&s.voter).cloned().unwrap_or_default();
                // The display form as every API row computes it from the canonical address.
                let display = address::display(&s.voter);
                vec![
                    Cell::Text(s.dao_id),
                    Cell::Text(s.voter),
                    Cell::Text(display),
                    text(ens),
                    text(name),
                    Cell::Integer(s.votes_cast),
                    Cell::Text(s.voting_power),
                    Cell::Boolean(s.vp_from_float),
                    Cell::Timestamp(s.first_vote_ms),
                    Cell::Timestamp(s.last_vote_ms),
                ]
            })
            .collect();
        out.send(rows).await?;
        if !full {
            return Ok(());
        }
    }
}
