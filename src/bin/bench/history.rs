//! Issue 29's history at scale: synthesises delegation changes and voting power checkpoints for
//! the DAO until the store holds `events` of them (deterministic: the same count always makes the
//! same history), reports rows and bytes per event, times an ingestion run that appends 1,000 more
//! through the publication path, and names the busiest delegate for the page timings.
use std::time::Instant;

use anyhow::Context;
use govdata::contract::vocabulary::{PowerCause, SourceKind};
use govdata::store::address::AccountBytes;
use govdata::store::entities::{delegation_change, power_checkpoint};
use rand::{Rng, SeedableRng, rngs::StdRng};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbBackend, EntityTrait, PaginatorTrait,
    QueryFilter, Statement, TransactionTrait,
};

/// Holders that delegate, and delegates they choose among (the first one is chosen most).
const HOLDERS: u64 = 50_000;
const DELEGATES: u64 = 1_000;
/// Rows per INSERT (12-13 columns each: under SQLite's 32,766 bind parameters).
const BATCH: usize = 2_000;
const FIRST_BLOCK: i64 = 18_000_000;
/// 2023-08-26, about when block 18,000,000 was mined, and 12 s a block.
const FIRST_BLOCK_MS: i64 = 1_693_000_000_000;

pub struct History {
    pub changes: u64,
    pub checkpoints: u64,
    /// The delegate with the most checkpoints.
    pub busiest: String,
}

fn address(kind: u8, n: u64) -> String {
    format!("0x{kind:02x}{:038x}", n)
}

fn account(kind: u8, n: u64) -> AccountBytes {
    AccountBytes::parse(&address(kind, n)).expect("an address")
}

/// The store's history for `dao`, grown to at least `events` rows if it holds fewer.
pub async fn ensure(db: &DatabaseConnection, dao: &str, events: u64) -> anyhow::Result<History> {
    let (changes, checkpoints) = count(db, dao).await?;
    if changes + checkpoints < events {
        let started = Instant::now();
        synthesise(db, dao, events).await?;
        println!("history: synthesised {events} events in {:.1} s", started.elapsed().as_secs_f64());
    }
    let (changes, checkpoints) = count(db, dao).await?;
    Ok(History { changes, checkpoints, busiest: address(0xde, 0) })
}

/// The DAO's delegation changes and checkpoints.
async fn count(db: &DatabaseConnection, dao: &str) -> anyhow::Result<(u64, u64)> {
    let changes = delegation_change::Entity::find().filter(delegation_change::Column::DaoId.eq(dao)).count(db).await?;
    let checkpoints =
        power_checkpoint::Entity::find().filter(power_checkpoint::Column::DaoId.eq(dao)).count(db).await?;
    Ok((changes, checkpoints))
}

/// Writes a fresh history of `events` rows for `dao`, replacing any: holders delegate, move and
/// withdraw; each change moves the holder's balance from one delegate to another (two
/// checkpoints, one when either side is nobody); a fifth of the checkpoints are transfers.
async fn synthesise(db: &DatabaseConnection, dao: &str, events: u64) -> anyhow::Result<()> {
    let txn = db.begin().await?;
    delegation_change::Entity::delete_many().filter(delegation_change::Column::DaoId.eq(dao)).exec(&txn).await?;
    power_checkpoint::Entity::delete_many().filter(power_checkpoint::Column::DaoId.eq(dao)).exec(&txn).await?;
    let mut rng = StdRng::seed_from_u64(29);
    let balances: Vec<u128> = (0..HOLDERS).map(|_| rng.random_range(1..1_000_000u128) * 10u128.pow(15)).collect();
    let mut delegate_of: Vec<Option<u64>> = vec![None; HOLDERS as usize];
    let mut power: Vec<u128> = vec![0; DELEGATES as usize];
    let (mut changes, mut checkpoints) = (Vec::with_capacity(BATCH), Vec::with_capacity(BATCH));
    let (mut written, mut block, mut log) = (0u64, FIRST_BLOCK, 0i64);
    let zero = AccountBytes(vec![0; 20]);
    while written < events {
        if rng.random_range(0..4) == 0 {
            block += 1;
            log = 0;
        }
        let at_ms = FIRST_BLOCK_MS + (block - FIRST_BLOCK) * 12_000;
        let tx = format!("0x{:064x}", written);
        let checkpoint = |delegate: u64, before: u128, after: u128, cause: PowerCause, by: Option<String>, log: i64| {
            power_checkpoint::ActiveModel {
                dao_id: Set(dao.to_owned()),
                delegate: Set(account(0xde, delegate)),
                previous_raw: Set(before.to_string()),
                power_raw: Set(after.to_string()),
                decimals: Set(18),
                cause: Set(cause),
                cause_delegator: Set(by.as_deref().map(|a| AccountBytes::parse(a).expect("an address"))),
                block_number: Set(block),
                log_index: Set(log),
                tx_hash: Set(tx.clone()),
                at_ms: Set(at_ms),
                ..Default::default()
            }
        };
        let holder = rng.random_range(0..HOLDERS);
        if rng.random_range(0..5) == 0 {
            // A transfer between two holders' delegates (only the receiving side, for brevity).
            if let Some(d) = delegate_of[holder as usize] {
                let amount = balances[holder as usize] / 10;
                let before = power[d as usize];
                power[d as usize] += amount;
                checkpoints.push(checkpoint(d, before, power[d as usize], PowerCause::Transfer, None, log));
                log += 1;
                written += 1;
            }
        } else {
            let to = match rng.random_range(0..10) {
                0 => None,
                1..=3 => Some(0),
                _ => Some(rng.random_range(0..DELEGATES)),
            };
            let from = delegate_of[holder as usize];
            if from != to {
                let units = balances[holder as usize];
                let by = Some(address(0xa0, holder));
                changes.push(delegation_change::ActiveModel {
                    dao_id: Set(dao.to_owned()),
                    delegator: Set(account(0xa0, holder)),
                    from_delegate: Set(from.map_or(zero.clone(), |d| account(0xde, d))),
                    to_delegate: Set(to.map_or(zero.clone(), |d| account(0xde, d))),
                    power_moved_raw: Set(units.to_string()),
                    decimals: Set(18),
                    block_number: Set(block),
                    log_index: Set(log),
                    tx_hash: Set(tx.clone()),
                    at_ms: Set(at_ms),
                    ..Default::default()
                });
                log += 1;
                written += 1;
                if let Some(f) = from {
                    let before = power[f as usize];
                    power[f as usize] = before.saturating_sub(units);
                    checkpoints.push(checkpoint(f, before, power[f as usize], PowerCause::Delegation, by.clone(), log));
                    log += 1;
                    written += 1;
                }
                if let Some(t) = to {
                    let before = power[t as usize];
                    power[t as usize] += units;
                    checkpoints.push(checkpoint(t, before, power[t as usize], PowerCause::Delegation, by, log));
                    log += 1;
                    written += 1;
                }
                delegate_of[holder as usize] = to;
            }
        }
        if changes.len() >= BATCH {
            delegation_change::Entity::insert_many(std::mem::take(&mut changes)).exec_without_returning(&txn).await?;
        }
        if checkpoints.len() >= BATCH {
            power_checkpoint::Entity::insert_many(std::mem::take(&mut checkpoints))
                .exec_without_returning(&txn)
                .await?;
        }
    }
    if !changes.is_empty() {
        delegation_change::Entity::insert_many(changes).exec_without_returning(&txn).await?;
    }
    if !checkpoints.is_empty() {
        power_checkpoint::Entity::insert_many(checkpoints).exec_without_returning(&txn).await?;
    }
    txn.commit().await?;
    if db.get_database_backend() == DbBackend::Postgres {
        db.execute_unprepared("ANALYZE delegation_changes; ANALYZE power_checkpoints").await?;
    }
    Ok(())
}

/// Bytes of a table and of its indexes.
pub async fn bytes(db: &DatabaseConnection, table: &str) -> anyhow::Result<(i64, i64)> {
    let backend = db.get_database_backend();
    let (table_sql, all_sql) = match backend {
        DbBackend::Sqlite => (
            format!("SELECT SUM(pgsize) AS n FROM dbstat WHERE name = '{table}'"),
            format!(
                "SELECT SUM(pgsize) AS n FROM dbstat WHERE name = '{table}'
                   OR name IN (SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = '{table}')"
            ),
        ),
        _ => {
            (format!("SELECT pg_table_size('{table}') AS n"), format!("SELECT pg_total_relation_size('{table}') AS n"))
        }
    };
    let get = |row: Option<sea_orm::QueryResult>| -> anyhow::Result<i64> {
        Ok(row.context("no row")?.try_get::<Option<i64>>("", "n")?.unwrap_or(0))
    };
    let t = get(db.query_one_raw(Statement::from_string(backend, table_sql)).await?)?;
    let all = get(db.query_one_raw(Statement::from_string(backend, all_sql)).await?)?;
    Ok((t, all - t))
}

/// Prints the history's size per event.
pub async fn report(db: &DatabaseConnection, h: &History) -> anyhow::Result<()> {
    let (ct, ci) = bytes(db, "delegation_changes").await?;
    let (pt, pi) = bytes(db, "power_checkpoints").await?;
    let events = (h.changes + h.checkpoints).max(1);
    println!(
        "history: {} delegation changes + {} checkpoints = {events} events; tables {:.1} MB + indexes {:.1} MB = {:.0} bytes per event",
        h.changes,
        h.checkpoints,
        (ct + pt) as f64 / 1e6,
        (ci + pi) as f64 / 1e6,
        (ct + ci + pt + pi) as f64 / events as f64
    );
    Ok(())
}

/// An ingestion run that appends 1,000 events (500 changes, 500 checkpoints) through the
/// publication path, then the same records again (nothing new).
pub async fn publication(db: &DatabaseConnection, dao: &str) -> anyhow::Result<()> {
    use govdata::store::apply::{SourceOutcome, Watermark, publish_run};
    use govdata::store::staging::{self, DelegationChangeRecord, PowerCheckpointRecord, Record};
    let now = govdata::contract::time::now_ms();
    let block = FIRST_BLOCK + 10_000_000 + (now / 1000 % 1_000_000);
    let records: Vec<Record> = (0..500i64)
        .flat_map(|i| {
            let tx = format!("0x{:064x}", now as u128 * 1000 + i as u128);
            [
                Record::DelegationChange(DelegationChangeRecord {
                    dao_id: dao.to_owned(),
                    delegator: address(0xbe, (now as u64) * 1000 + i as u64),
                    from_delegate: "0x0000000000000000000000000000000000000000".to_owned(),
                    to_delegate: address(0xde, 0),
                    power_moved_raw: "1000000000000000000".to_owned(),
                    decimals: 18,
                    block_number: block,
                    log_index: 2 * i,
                    tx_hash: tx.clone(),
                    at_ms: now,
                    supply_raw: None,
                }),
                Record::PowerCheckpoint(PowerCheckpointRecord {
                    dao_id: dao.to_owned(),
                    delegate: address(0xde, 0),
                    previous_raw: "0".to_owned(),
                    power_raw: "1000000000000000000".to_owned(),
                    decimals: 18,
                    cause: PowerCause::Delegation,
                    cause_delegator: Some(address(0xbe, (now as u64) * 1000 + i as u64)),
                    block_number: block,
                    log_index: 2 * i + 1,
                    tx_hash: tx,
                    at_ms: now,
                }),
            ]
        })
        .collect();
    for label in ["1,000 new history events", "the same 1,000 events again (nothing new)"] {
        let run = crate::manual_run(db, dao).await?;
        staging::append(db, run.id, SourceKind::Onchain, &records).await?;
        let outcome = SourceOutcome {
            dao_id: dao.to_owned(),
            source: SourceKind::Onchain,
            result: Ok(Watermark { data_as_of_ms: now, position: None }),
            skipped: Vec::new(),
        };
        let started = Instant::now();
        let report = publish_run(db, run.id, &[outcome], None).await?;
        println!(
            "publication, {label}: {:.3} s ({} changes and {} checkpoints appended, revision {:?})",
            started.elapsed().as_secs_f64(),
            report.delegation_changes.inserted,
            report.power_checkpoints.inserted,
            report.revision_id
        );
    }
    Ok(())
}
