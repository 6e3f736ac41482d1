//! A compact `votes` table: the voter is kept as its 20 (or 32) bytes instead of 42 (or 66)
//! characters of hex, in the table and in the three indexes that hold it; and a proposal's votes
//! can be filtered by choice through an index.
//!
//! Bytes compare as the lowercase hex did, so every order by voter is unchanged. SQLite cannot
//! change a column's type: the table is rebuilt (same columns, same `AUTOINCREMENT` ids) and its
//! indexes created anew. PostgreSQL converts the column in place (`USING decode(…)`), rebuilding
//! the indexes itself.
//!
//! Every index on `votes` after this migration serves a named query:
//! - `idx-votes-vote_natural` (unique `proposal_id, voter`): publication's upserts and their
//!   look-up of the votes a page replaces (`store::apply::Applier::stored_votes`), the v2 votes
//!   `voter` filter (`store::proposals::votes`);
//! - `ix_votes_proposal_power` (`proposal_id, vp_sort DESC, voter`): v2 votes by power
//!   (`store::proposals::votes`), evidence's largest votes (`store::evidence::vote_summary`), the
//!   stored facts' walk (`store::facts::weightiest`), notable-vote events
//!   (`store::events::derive_vote_events`);
//! - `ix_votes_proposal_time` (`proposal_id, created_ms DESC, id DESC`): v2 votes by time, and a
//!   proposal's votes for its tally (`store::facts::compute`);
//! - `ix_votes_voter_time` (`voter, created_ms DESC, id DESC`): a voter's history
//!   (`store::voters::history`) and the voter stats publication recomputes
//!   (`store::publish::voter_stats`);
//! - `ix_votes_proposal_choice_power` (`proposal_id, choice, vp_sort DESC, voter`) and
//!   `ix_votes_proposal_choice_time` (`proposal_id, choice, created_ms DESC, id DESC`): v2 votes
//!   filtered by `choice`, in either order (`store::proposals::votes`), so a rare choice costs
//!   what a common one costs.
use sea_orm::DbBackend;
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Columns of `votes`, in order, as migration 1 made them.
const COLUMNS: &str = "id, proposal_id, dao_id, voter, choice, voting_power, vp_sort, vp_from_float, reason, created_ms, ipfs, tx_hash, block_number";

const SQLITE_TABLE: &str = r#"CREATE TABLE "votes_next" ( "id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "proposal_id" integer NOT NULL, "dao_id" varchar NOT NULL, "voter" blob NOT NULL, "choice" varchar NOT NULL, "voting_power" varchar NOT NULL, "vp_sort" varchar NOT NULL, "vp_from_float" boolean NOT NULL, "reason" varchar, "created_ms" integer NOT NULL, "ipfs" varchar, "tx_hash" varchar, "block_number" integer )"#;

/// The indexes SQLite's rebuilt table needs again (PostgreSQL keeps its own through the change).
const REBUILT_INDEXES: &[&str] = &[
    r#"CREATE UNIQUE INDEX "idx-votes-vote_natural" ON "votes" ("proposal_id", "voter")"#,
    r#"CREATE INDEX "ix_votes_proposal_power" ON "votes" ("proposal_id", "vp_sort" DESC, "voter")"#,
    r#"CREATE INDEX "ix_votes_proposal_time" ON "votes" ("proposal_id", "created_ms" DESC, "id" DESC)"#,
    r#"CREATE INDEX "ix_votes_voter_time" ON "votes" ("voter", "created_ms" DESC, "id" DESC)"#,
];

const CHOICE_INDEXES: &[&str] = &[
    r#"CREATE INDEX "ix_votes_proposal_choice_power" ON "votes" ("proposal_id", "choice", "vp_sort" DESC, "voter")"#,
    r#"CREATE INDEX "ix_votes_proposal_choice_time" ON "votes" ("proposal_id", "choice", "created_ms" DESC, "id" DESC)"#,
];

/// The declared type of `votes.voter`, lowercase: migration 1 builds the tables from the live
/// entities, so a store created after this migration was written already has the byte column.
async fn voter_type(manager: &SchemaManager<'_>) -> Result<String, DbErr> {
    let sql = match manager.get_database_backend() {
        DbBackend::Sqlite => "SELECT lower(type) AS t FROM pragma_table_info('votes') WHERE name = 'voter'",
        _ => {
            "SELECT lower(data_type) AS t FROM information_schema.columns WHERE table_name = 'votes' AND column_name = 'voter' AND table_schema = current_schema()"
        }
    };
    let stmt = sea_orm::Statement::from_string(manager.get_database_backend(), sql);
    let row = manager.get_connection().query_one_raw(stmt).await?;
    Ok(row.map(|r| r.try_get::<String>("", "t")).transpose()?.unwrap_or_default())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let converted = matches!(voter_type(manager).await?.as_str(), "blob" | "bytea");
        match manager.get_database_backend() {
            _ if converted => {
                for sql in CHOICE_INDEXES {
                    db.execute_unprepared(sql).await?;
                }
            }
            DbBackend::Sqlite => {
                // One script on one connection, in one transaction: the rebuild is whole or absent.
                let select = COLUMNS.replace(", voter,", ", unhex(substr(voter, 3)),");
                let mut script = vec![
                    "BEGIN IMMEDIATE".to_owned(),
                    SQLITE_TABLE.to_owned(),
                    format!("INSERT INTO votes_next ({COLUMNS}) SELECT {select} FROM votes"),
                    "DROP TABLE votes".to_owned(),
                    "ALTER TABLE votes_next RENAME TO votes".to_owned(),
                ];
                script.extend(REBUILT_INDEXES.iter().chain(CHOICE_INDEXES).map(|s| (*s).to_owned()));
                script.push("COMMIT".to_owned());
                db.execute_unprepared(&script.join(";\n")).await?;
            }
            _ => {
                let mut script = vec![
                    "BEGIN".to_owned(),
                    "ALTER TABLE votes ALTER COLUMN voter TYPE bytea USING decode(substr(voter, 3), 'hex')".to_owned(),
                ];
                script.extend(CHOICE_INDEXES.iter().map(|s| (*s).to_owned()));
                script.push("COMMIT".to_owned());
                db.execute_unprepared(&script.join(";\n")).await?;
            }
        }
        Ok(())
    }
}
