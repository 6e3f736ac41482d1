//! Publication: turns what the writers stored into a new serving revision.
//!
//! Everything a list reads pre-aggregated (per-voter stats, per-proposal vote counts, per-DAO
//! summaries) is recomputed here from the base tables, in one transaction together with the new
//! `data_revisions` row, so a reader sees either the old revision with its aggregates or the new
//! one with its aggregates, never a mix.
//!
//! All statements are set-based and written in the SQL subset SQLite and PostgreSQL share.
//! Parameters use `$n` on both backends (sqlx binds SQLite's `$n` by number as well).
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ConnectionTrait, DbErr, Statement, TransactionSession, TransactionTrait, Value,
};

use super::entities::data_revision;

/// Each voter's activity per DAO. The power shown is that of the voter's most recent vote in the
/// DAO; on the same timestamp the larger power wins, then the later row, so the choice is total.
const CLEAR_VOTER_STATS: &str = "DELETE FROM voter_dao_stats";
const RECOMPUTE_VOTER_STATS: &str = "INSERT INTO voter_dao_stats (dao_id, voter, votes_cast, voting_power, vp_sort, first_vote_ms, last_vote_ms)
     SELECT dao_id, voter, votes_cast, voting_power, vp_sort, first_vote_ms, last_vote_ms
     FROM (
         SELECT dao_id, voter, voting_power, vp_sort,
                COUNT(*) OVER (PARTITION BY dao_id, voter) AS votes_cast,
                MIN(created_ms) OVER (PARTITION BY dao_id, voter) AS first_vote_ms,
                MAX(created_ms) OVER (PARTITION BY dao_id, voter) AS last_vote_ms,
                ROW_NUMBER() OVER (PARTITION BY dao_id, voter ORDER BY created_ms DESC, vp_sort DESC, id DESC) AS recency
         FROM votes
     ) ranked
     WHERE recency = 1";

/// Only rows whose count moved are rewritten.
const RECOMPUTE_PROPOSAL_COUNTS: &str = "UPDATE proposals
     SET ingested_vote_count = (SELECT COUNT(*) FROM votes WHERE votes.proposal_id = proposals.id)
     WHERE ingested_vote_count <> (SELECT COUNT(*) FROM votes WHERE votes.proposal_id = proposals.id)";

/// One summary per registered DAO, stamped with the new revision (`$1`). Runs after the voter
/// stats, whose row count per DAO is the number of distinct voters. PostgreSQL's SUM over BIGINT
/// is NUMERIC, hence the cast.
const CLEAR_SUMMARIES: &str = "DELETE FROM dao_summaries";
const RECOMPUTE_SUMMARIES: &str = "INSERT INTO dao_summaries
         (dao_id, proposals, active_proposals, upstream_votes, ingested_votes, voters, delegates, forum_topics,
          data_as_of_ms, revision_id)
     SELECT d.id,
            (SELECT COUNT(*) FROM proposals p WHERE p.dao_id = d.id),
            (SELECT COUNT(*) FROM proposals p WHERE p.dao_id = d.id AND p.state = 'active'),
            (SELECT CAST(COALESCE(SUM(p.upstream_vote_count), 0) AS BIGINT) FROM proposals p WHERE p.dao_id = d.id),
            (SELECT COUNT(*) FROM votes v WHERE v.dao_id = d.id),
            (SELECT COUNT(*) FROM voter_dao_stats s WHERE s.dao_id = d.id),
            (SELECT COUNT(*) FROM delegates g WHERE g.dao_id = d.id),
            (SELECT COUNT(*) FROM forum_topics t WHERE t.dao_id = d.id),
            (SELECT MAX(w.data_as_of_ms) FROM source_watermarks w WHERE w.dao_id = d.id),
            $1
     FROM daos d";

const LINK_RUN: &str = "UPDATE ingestion_runs SET revision_id = $1 WHERE id = $2";

/// Recomputes the aggregates and publishes a new revision for run `run_id`, atomically.
///
/// Called with a connection it opens its own transaction; called inside a writer's transaction
/// it nests (a savepoint), so the writer's rows and the revision commit together.
pub async fn publish<C>(db: &C, run_id: i64, summary: &str) -> Result<data_revision::Model, DbErr>
where
    C: ConnectionTrait + TransactionTrait,
{
    let txn = db.begin().await?;
    exec(&txn, CLEAR_VOTER_STATS, []).await?;
    exec(&txn, RECOMPUTE_VOTER_STATS, []).await?;
    exec(&txn, RECOMPUTE_PROPOSAL_COUNTS, []).await?;
    super::events::derive(&txn, now_ms()).await?;
    let now = now_ms();
    let revision = data_revision::ActiveModel {
        published_ms: Set(now),
        data_as_of_ms: Set(newest_watermark(&txn).await?.unwrap_or(now)),
        run_id: Set(Some(run_id)),
        summary: Set(summary.to_owned()),
        ..Default::default()
    }
    .insert(&txn)
    .await?;
    exec(&txn, CLEAR_SUMMARIES, []).await?;
    exec(&txn, RECOMPUTE_SUMMARIES, [revision.id.into()]).await?;
    super::signals::compute(&txn, &revision).await?;
    exec(&txn, LINK_RUN, [revision.id.into(), run_id.into()]).await?;
    txn.commit().await?;
    Ok(revision)
}

pub use super::freshness::current_revision;
pub use crate::contract::time::now_ms;

/// The newest `data_as_of_ms` over every DAO and source.
async fn newest_watermark<C: ConnectionTrait>(db: &C) -> Result<Option<i64>, DbErr> {
    let stmt =
        Statement::from_string(db.get_database_backend(), "SELECT MAX(data_as_of_ms) AS newest FROM source_watermarks");
    match db.query_one_raw(stmt).await? {
        Some(row) => row.try_get::<Option<i64>>("", "newest"),
        None => Ok(None),
    }
}

async fn exec<C: ConnectionTrait, const N: usize>(db: &C, sql: &str, values: [Value; N]) -> Result<(), DbErr> {
    let stmt = Statement::from_sql_and_values(db.get_database_backend(), sql, values);
    db.execute_raw(stmt).await?;
    Ok(())
}
