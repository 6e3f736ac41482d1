//! A compact store: short sort keys and no unused vote index.
//!
//! - Sort keys (`votes.vp_sort`, `voter_dao_stats.vp_sort`, `delegates.vp_sort`) become the short
//!   form of `store::sort_keys::sort_key` (exponent, then significant digits: 10 to 25 bytes for
//!   typical powers instead of 109). The old fixed-width keys (78 integer digits, a point, 30
//!   fraction digits) are rewritten in place by one set-based statement per table; a key already
//!   in the short form (it has no point) is left alone. The exact voting power text is untouched.
//! - `ix_votes_dao_voter` is dropped: no query needs it since publication stopped counting votes
//!   per DAO (the summaries sum the proposals' counts) and voter stats are recomputed per voter
//!   through `ix_votes_voter_time`.
//!
//! Every index left on `votes` serves a named query:
//! - `vote_natural` (unique `proposal_id, voter`): publication's upserts and their look-up of the
//!   votes a page replaces (`store::apply`), the v2 votes `voter` filter (`store::proposals::votes`);
//! - `ix_votes_proposal_power` (`proposal_id, vp_sort DESC, voter`): v2 votes by power, evidence's
//!   largest votes (`store::evidence::vote_summary`), the stored facts' walk (`store::facts`),
//!   notable-vote events (`store::events`);
//! - `ix_votes_proposal_time` (`proposal_id, created_ms DESC, id DESC`): v2 votes by time, and a
//!   proposal's votes for its tally (`store::facts::compute`);
//! - `ix_votes_voter_time` (`voter, created_ms DESC, id DESC`): a voter's history
//!   (`store::voters::history`) and the voter stats publication recomputes (`store::publish`).
//!
//! On SQLite the freed pages are reused by later writes; `VACUUM` returns them to the file system.
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The short key of an old fixed-width key `k`, in the SQL both backends share. Written out as
/// `store::sort_keys::sort_key` computes it (a unit test there pins examples).
fn short_key(k: &str) -> String {
    let int = format!("LTRIM(SUBSTR({k}, 1, 78), '0')");
    let frac = format!("SUBSTR({k}, 80, 30)");
    let frac_digits = format!("LTRIM({frac}, '0')");
    format!(
        "CASE WHEN {int} <> '' THEN CAST(LENGTH({int}) + 200 AS TEXT) || RTRIM({int} || {frac}, '0') \
              WHEN {frac_digits} = '' THEN '000' \
              ELSE CAST(200 - (30 - LENGTH({frac_digits})) AS TEXT) || RTRIM({frac_digits}, '0') END"
    )
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for table in ["votes", "voter_dao_stats", "delegates"] {
            let sql = format!(
                "UPDATE {table} SET vp_sort = {} WHERE vp_sort LIKE '%.%' AND LENGTH(vp_sort) = 109",
                short_key("vp_sort")
            );
            db.execute_unprepared(&sql).await?;
        }
        manager.drop_index(Index::drop().name("ix_votes_dao_voter").table(Alias::new("votes")).to_owned()).await
    }
}

#[cfg(test)]
mod tests {
    use sea_orm::{ConnectionTrait, Database, DbBackend, Statement};

    use crate::{contract::decimal::parse, store::sort_keys::sort_key};

    /// The fixed-width key of migration 1.
    fn old_key(value: &str) -> String {
        let s = parse(value).unwrap().with_scale_round(30, bigdecimal::RoundingMode::Down).to_plain_string();
        let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
        format!("{int:0>78}.{frac:0<30}")
    }

    /// On both backends (the PostgreSQL the tests use; it only runs a SELECT).
    #[tokio::test]
    async fn the_sql_rewrite_gives_the_keys_sort_key_gives() {
        let pg = std::env::var("GOVDATA_TEST_PG_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into());
        for (url, backend) in
            [("sqlite::memory:".to_owned(), DbBackend::Sqlite), (format!("{pg}/postgres"), DbBackend::Postgres)]
        {
            let db = Database::connect(&url).await.unwrap_or_else(|e| panic!("{url}: {e}"));
            for value in ["0", "1", "100", "1234.5", "0.05", "2.11e-16", "1e-30", "345043375299837213698988.000001"] {
                let sql = format!("SELECT {} AS k", super::short_key(&format!("CAST('{}' AS TEXT)", old_key(value))));
                let row = db.query_one_raw(Statement::from_string(backend, sql)).await.unwrap().unwrap();
                let rewritten: String = row.try_get("", "k").unwrap();
                assert_eq!(rewritten, sort_key(&parse(value).unwrap()).unwrap(), "{value} on {url}");
            }
        }
    }
}
