//! Whole-table exports (issue 30), the writers: a DAO's votes written as Parquet, CSV and NDJSON
//! from the real store, read back by a Parquet reader (arrow-rs), a CSV reader and a JSON parser,
//! and compared value by value with the store. Typed columns survive (a wei integer as
//! `DECIMAL(38,0)`, instants as UTC milliseconds), the schema travels in the file, and the same
//! votes write the same bytes.
//!
//! Then every declared table of a DAO, in every format, through `exports::read_table` (so a
//! declared table without a reader fails here): as many rows as the store holds for the DAO,
//! each row once (its identity is distinct), the Parquet schema as declared, and the proposals'
//! keys in their declared order as `/v2/proposals` serves them.
use std::collections::{BTreeMap, BTreeSet};

use arrow_array::{Array, Decimal128Array, StringArray};
use arrow_schema::{DataType, TimeUnit};
use govdata::contract::exports::{ColumnType, ExportFormat, ExportTable, TABLES, VOTES, schema_json};
use govdata::exports::writer::WEI_DIGITS;
use govdata::exports::{export, export_here, read_table, votes};
use govdata::store::entities as e;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
};
use serde_json::{Value, json};

use crate::on_both_backends;

const DAO: &str = "uniswap";

on_both_backends!(replica: votes_export_in_every_format_equals_the_store, |app: TestApp| async move {
    let db = govdata::store::connect(&app.database_url).await.unwrap();
    let stored = govdata::store::entities::vote::Entity::find()
        .filter(govdata::store::entities::vote::Column::DaoId.eq(DAO))
        .all(&db)
        .await
        .unwrap();
    assert!(stored.len() > 1000, "the sample holds the DAO's votes");
    let proposals: BTreeMap<i64, String> = govdata::store::entities::proposal::Entity::find()
        .filter(govdata::store::entities::proposal::Column::DaoId.eq(DAO))
        .all(&db)
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.id, p.external_id))
        .collect();
    // (proposal, voter) is a vote's natural key.
    let power: BTreeMap<(String, String), (i64, String)> = stored
        .iter()
        .map(|v| ((proposals[&v.proposal_id].clone(), v.voter.lower()), (v.created_ms, v.voting_power.clone())))
        .collect();
    assert_eq!(power.len(), stored.len());
    let dir = tempfile::tempdir().unwrap();
    let mut written = BTreeMap::new();
    for format in ExportFormat::ALL {
        let path = dir.path().join(format!("votes.{}", format.as_str()));
        let w = export(&path, &VOTES, *format, |out| votes::read(&db, None, DAO, out)).await.unwrap();
        assert_eq!(w.rows, stored.len() as u64, "{format:?}");
        assert_eq!(w.bytes, std::fs::metadata(&path).unwrap().len());
        written.insert(*format, (path, w));
    }

    // Parquet: typed columns, the schema in the file's metadata, every power exact.
    let (path, _) = &written[&ExportFormat::Parquet];
    let builder = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap()).unwrap();
    let meta = builder.metadata().file_metadata().key_value_metadata().unwrap();
    let schema_doc = meta.iter().find(|kv| kv.key == "govdata.schema").and_then(|kv| kv.value.clone()).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&schema_doc).unwrap();
    assert_eq!(doc["columns"].as_array().unwrap().len(), VOTES.columns.len());
    let schema = builder.schema().clone();
    assert_eq!(schema.field_with_name("voting_power_wei").unwrap().data_type(), &DataType::Decimal128(WEI_DIGITS, 0));
    assert_eq!(
        schema.field_with_name("created_at").unwrap().data_type(),
        &DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
    );
    let mut rows = 0;
    for batch in builder.build().unwrap() {
        let batch = batch.unwrap();
        let string =
            |name: &str| batch.column_by_name(name).unwrap().as_any().downcast_ref::<StringArray>().unwrap().clone();
        let (proposal, voter, vp) = (string("proposal_external_id"), string("voter"), string("voting_power"));
        let created = batch
            .column_by_name("created_at")
            .unwrap()
            .as_any()
            .downcast_ref::<arrow_array::TimestampMillisecondArray>()
            .unwrap()
            .clone();
        for i in 0..batch.num_rows() {
            let key = (proposal.value(i).to_owned(), voter.value(i).to_owned());
            let (ms, exact) = &power[&key];
            assert_eq!((created.value(i), vp.value(i)), (*ms, exact.as_str()), "{key:?}");
        }
        rows += batch.num_rows();
    }
    assert_eq!(rows, stored.len());

    // CSV: RFC 4180 with a header of the declared names and CRLF line ends.
    let (path, _) = &written[&ExportFormat::Csv];
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains("\r\n"));
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_owned).collect();
    assert_eq!(header, VOTES.columns.iter().map(|c| c.name).collect::<Vec<_>>());
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), stored.len());
    for r in &records {
        let created =
            time::OffsetDateTime::parse(&r[at("created_at")], &time::format_description::well_known::Rfc3339).unwrap();
        let key = (r[at("proposal_external_id")].to_owned(), r[at("voter")].to_owned());
        let (ms, exact) = &power[&key];
        assert_eq!(
            ((created.unix_timestamp_nanos() / 1_000_000) as i64, &r[at("voting_power")]),
            (*ms, exact.as_str())
        );
        assert!(r[at("created_at")].ends_with('Z') && r[at("created_at")].len() == 24, "ms, UTC");
    }

    // NDJSON: one object a line, exact values as strings.
    let (path, _) = &written[&ExportFormat::Ndjson];
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), stored.len());
    assert!(lines.iter().all(|l| l["voting_power"].is_string() && l["dao_id"] == DAO));

    // The same votes write the same bytes, also written on the reading thread (`export_here`,
    // what `bench --costs` counts), and also read as a build reads them, in one view of the store
    // (the votes on a connection of their own: by `COPY` on PostgreSQL, on one thread on SQLite;
    // `replicas.rs` has a build read a replica's view).
    for format in ExportFormat::ALL {
        let view = govdata::exports::view::View::begin(&db, true).await.unwrap();
        assert!(view.snapshot().is_some(), "a view of its own connection for the votes");
        let viewed = dir.path().join(format!("viewed.{}", format.as_str()));
        let w = export(&viewed, &VOTES, *format, |out| votes::read(&view.txn, view.snapshot(), DAO, out))
            .await
            .unwrap();
        view.end().await.unwrap();
        assert_eq!(w, written[format].1, "{format:?}, read in one view");
        let again = dir.path().join(format!("again.{}", format.as_str()));
        let w = export(&again, &VOTES, *format, |out| votes::read(&db, None, DAO, out)).await.unwrap();
        assert_eq!(w, written[format].1, "{format:?}");
        let here = export_here(&again, &VOTES, *format, |out| votes::read(&db, None, DAO, out)).await.unwrap();
        assert_eq!(here, written[format].1, "{format:?}, written on the reading thread");
    }
});

/// A store of its own holding one `synth` DAO: `votes` votes, each by its own voter, over
/// `proposals` proposals.
async fn synth_store(
    backend: crate::helpers::Backend,
    dao: &str,
    votes: u64,
    proposals: u64,
) -> sea_orm::DatabaseConnection {
    let db = govdata::store::connect(&crate::helpers::fresh_database(backend).await).await.unwrap();
    let spec = govdata::sample::synth::SynthSpec {
        votes,
        voters: votes,
        proposals,
        dao_id: dao.to_owned(),
        ..Default::default()
    };
    govdata::sample::synth::synth(&db, &spec).await.unwrap();
    db
}

// A proposal of more votes than one of the reader's pages holds: the next page resumes after the
// last voter read, so every vote is written once, in voter order. Pages of 1,000 end on a short
// page; pages of 500 divide the votes exactly, so the last query reads nothing. (`read` is
// `read_in_pages` with `PAGE_ROWS`: the same code, without writing 65,536 votes per backend.)
// It writes, so on a store of its own: the shared sample store is every read-only test's.
on_both_backends!(votes_export_resumes_a_proposal_past_a_page, |backend: Backend| async move {
    let (dao, votes) = ("paged", 2_500);
    let db = synth_store(backend, dao, votes, 1).await;
    let stored = e::vote::Entity::find().filter(e::vote::Column::DaoId.eq(dao)).count(&db).await.unwrap();
    assert_eq!(stored, votes, "one proposal");
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.csv");
    let w = export(&whole, &VOTES, ExportFormat::Csv, |out| votes::read(&db, None, dao, out)).await.unwrap();
    assert_eq!(w.rows, votes, "in one page of PAGE_ROWS");
    for page_rows in [1_000, 500] {
        let path = dir.path().join(format!("paged-{page_rows}.csv"));
        let paged = export(&path, &VOTES, ExportFormat::Csv, |out| votes::read_in_pages(&db, dao, out, page_rows))
            .await
            .unwrap();
        assert_eq!(paged.rows, votes, "pages of {page_rows}");
        let mut reader = csv::Reader::from_path(&path).unwrap();
        let at = reader.headers().unwrap().iter().position(|h| h == "voter").unwrap();
        let voters: Vec<String> = reader.records().map(|r| r.unwrap()[at].to_owned()).collect();
        assert_eq!(voters.len() as u64, votes);
        assert!(voters.windows(2).all(|w| w[0] < w[1]), "each voter once, in order, across pages of {page_rows}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            std::fs::read(&whole).unwrap(),
            "pages of {page_rows}: the same file"
        );
    }
    match backend {
        crate::helpers::Backend::Sqlite => sqlite_chunks_write_the_pages_file(&db, dao, &whole).await,
        _ => pg_chunks_write_the_pages_file(&db, dao, &whole).await,
    }
});

/// `dao`'s votes written to `path` as a build reads them, in one view of the store, on its own
/// connection (SQLite's, or PostgreSQL's snapshot), in chunks of `chunk_rows`.
async fn export_in_chunks(
    db: &DatabaseConnection,
    dao: &str,
    path: &std::path::Path,
    format: ExportFormat,
    chunk_rows: usize,
) -> govdata::exports::writer::Written {
    use govdata::exports::view::{Snapshot, View};
    let view = View::begin(db, true).await.unwrap();
    let w = export(path, &VOTES, format, |out| async {
        match view.snapshot() {
            Some(Snapshot::Sqlite(conn)) => votes::read_sqlite_in_chunks(conn, dao, out, chunk_rows).await,
            Some(Snapshot::Postgres(snapshot)) => {
                votes::read_pg_in_chunks(&view.txn, snapshot, dao, out, chunk_rows).await
            }
            None => panic!("a view with a snapshot for the votes"),
        }
    })
    .await
    .unwrap();
    view.end().await.unwrap();
    w
}

/// Each size of `chunks` writes the CSV file of `dao`'s `rows` votes that the pages wrote (`pages`).
async fn chunks_write_the_pages_file<const N: usize>(
    db: &DatabaseConnection,
    dao: &str,
    pages: &std::path::Path,
    rows: usize,
    chunks: [usize; N],
) {
    let dir = tempfile::tempdir().unwrap();
    for chunk_rows in chunks {
        let path = dir.path().join(format!("chunks-{chunk_rows}.csv"));
        let w = export_in_chunks(db, dao, &path, ExportFormat::Csv, chunk_rows).await;
        assert_eq!(w.rows, rows as u64);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            std::fs::read(pages).unwrap(),
            "chunks of {chunk_rows}: the same file"
        );
    }
}

/// The id of `dao`'s one proposal, and its votes' ids in voter order, which `synth` did not write
/// them in: the order a chunk must restore.
async fn one_proposal_in_voter_order(db: &DatabaseConnection, dao: &str) -> (i64, Vec<i64>) {
    use sea_orm::QuerySelect;
    let proposal: i64 = e::proposal::Entity::find()
        .select_only()
        .column(e::proposal::Column::Id)
        .filter(e::proposal::Column::DaoId.eq(dao))
        .into_tuple()
        .one(db)
        .await
        .unwrap()
        .unwrap();
    let ids: Vec<i64> = votes::voter_ordered_ids(proposal).into_tuple().all(db).await.unwrap();
    assert!(ids.windows(2).any(|w| w[0] > w[1]), "voter order is not the table's order");
    (proposal, ids)
}

/// On SQLite a build reads the votes in chunks ([`votes::read_sqlite_in_chunks`]): each chunk's
/// ids from the natural key's index in voter order (its plan reads that index alone, no sort),
/// their rows in id order, handed back in voter order. `synth` writes a proposal's votes in random
/// voter order, one after the other, so a chunk reorders, and its rows are read by walking its id
/// range when that holds at most two and a half times its votes, else one by one. The proposal's
/// 2,500 votes in one chunk (a walk), in chunks of 1,300 (the first walks its range past the
/// other chunk's votes, at most 2,500 ids for 1,300), of 1,000 (the first two walk ranges of at
/// most 2,500 ids, the last, of 500 votes, seeks), of 500 (each seeks its rows: ranges of about
/// 2,500 ids), and of one vote each (a walk of one id) all write the file the pages wrote
/// (`pages`).
async fn sqlite_chunks_write_the_pages_file(db: &DatabaseConnection, dao: &str, pages: &std::path::Path) {
    use sea_orm::QueryTrait;
    let (proposal, ids) = one_proposal_in_voter_order(db, dao).await;
    let plan =
        crate::vote_lists::sqlite_plan(db, votes::voter_ordered_ids(proposal).build(db.get_database_backend())).await;
    assert_eq!(plan, "SEARCH votes USING COVERING INDEX idx-votes-vote_natural (proposal_id=?)");
    chunks_write_the_pages_file(db, dao, pages, ids.len(), [2_500, 1_300, 1_000, 500, 1]).await;
}

/// On PostgreSQL a build copies the votes in chunks ([`votes::read_pg_in_chunks`]): a proposal
/// whose vote count fits a chunk in one `COPY`, a larger one in ranges of voters, each ending at the
/// voter an index-only scan finds the chunk's count of votes on. Each chunk is copied in the
/// table's order (a bitmap scan of an index: each table page once, nothing sorted by the
/// server) and put in voter order by the reader. `synth` writes a proposal's votes in random
/// voter order, so every chunk is reordered. The proposal's 2,500 votes in one chunk (its count
/// fits: no range), in chunks of 1,300 (two ranges), of 1,000 (the last of 500), of 500 (dividing
/// the votes exactly: the last range is empty) and of 7 all write the file the pages wrote.
async fn pg_chunks_write_the_pages_file(db: &DatabaseConnection, dao: &str, pages: &std::path::Path) {
    use sea_orm::{ConnectionTrait, DbBackend, QueryTrait, Statement, TransactionTrait};
    let (proposal, ids) = one_proposal_in_voter_order(db, dao).await;

    // The plans, with the settings the votes' connection is given: a chunk's rows by a bitmap
    // scan of an index (the table's pages in their order), a chunk's end by an index-only scan of
    // the natural key's index; nothing sorted.
    let txn = db.begin().await.unwrap();
    for set in votes::IN_TABLE_ORDER.split(';') {
        txn.execute_unprepared(set).await.unwrap();
    }
    let explain = |select: sea_orm::Select<e::vote::Entity>| {
        let sql = format!("EXPLAIN {}", select.build(DbBackend::Postgres));
        let txn = &txn;
        async move {
            let rows = txn.query_all_raw(Statement::from_string(DbBackend::Postgres, sql)).await.unwrap();
            rows.iter().map(|r| r.try_get::<String>("", "QUERY PLAN").unwrap()).collect::<Vec<_>>().join("\n")
        }
    };
    let chunk = explain(votes::in_voter_range(proposal, Some(vec![0x40]), Some(vec![0xc0]))).await;
    assert!(chunk.contains("Bitmap Heap Scan on votes"), "{chunk}");
    assert!(chunk.contains("Bitmap Index Scan on"), "{chunk}");
    assert!(!chunk.contains("Sort") && !chunk.contains("Seq Scan"), "{chunk}");
    txn.execute_unprepared("SET enable_indexscan = on").await.unwrap();
    let end = explain(votes::chunk_end(proposal, Some(&[0x40]), 500)).await;
    assert!(end.contains(r#"Index Only Scan using "idx-votes-vote_natural" on votes"#), "{end}");
    assert!(!end.contains("Sort"), "{end}");
    txn.rollback().await.unwrap();

    chunks_write_the_pages_file(db, dao, pages, ids.len(), [2_500, 1_300, 1_000, 500, 7]).await;
}

// A chunk keeps each vote's values in the order it reads them (the table's) and hands them back
// in voter order. Votes with every optional column set (a reason, an IPFS hash, a transaction and
// its block, a multiple choice), with an empty reason, and with none, read in one chunk, in chunks
// of 500 and of 7 (on SQLite: a walk of the range, then seeks of each row; on PostgreSQL: one
// `COPY`, then ranges of voters), write the Parquet file the pages write, byte for byte: each value
// in its vote's row, each null a null and each empty text empty.
on_both_backends!(chunks_keep_every_column_of_each_vote, |backend: Backend| async move {
    use arrow_array::Int64Array;
    use sea_orm::ConnectionTrait;
    let (dao, votes) = ("kept", 1_200u64);
    let db = synth_store(backend, dao, votes, 1).await;
    let tx_hash = match backend {
        crate::helpers::Backend::Sqlite => "printf('0x%064x', id)",
        _ => "'0x' || lpad(to_hex(id), 64, '0')",
    };
    for sql in [
        format!(
            "UPDATE votes SET reason = 'because ' || id, ipfs = 'bafy' || id, tx_hash = {tx_hash}, \
             block_number = 1000 + id, choice = '1,2' WHERE id % 3 = 0"
        ),
        "UPDATE votes SET reason = '' WHERE id % 3 = 1".to_owned(),
    ] {
        db.execute_unprepared(&sql).await.unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("pages.parquet");
    let w = export(&pages, &VOTES, ExportFormat::Parquet, |out| votes::read(&db, None, dao, out)).await.unwrap();
    assert_eq!(w.rows, votes);

    // The pages' file holds set, empty and null values where the store does.
    let file = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&pages).unwrap()).unwrap();
    let (mut set, mut empty, mut null, mut blocks) = ([0; 3], 0, [0; 3], 0);
    for batch in file.build().unwrap() {
        let batch = batch.unwrap();
        for (i, name) in ["reason", "ipfs", "tx_hash"].into_iter().enumerate() {
            let a = batch.column_by_name(name).unwrap().as_any().downcast_ref::<StringArray>().unwrap();
            null[i] += a.null_count();
            set[i] += a.iter().flatten().filter(|v| !v.is_empty()).count();
            if name == "reason" {
                empty += a.iter().flatten().filter(|v| v.is_empty()).count();
            }
        }
        let b = batch.column_by_name("block_number").unwrap().as_any().downcast_ref::<Int64Array>().unwrap();
        blocks += b.iter().flatten().filter(|&n| n > 1000).count();
    }
    assert_eq!((set, empty, null, blocks), ([400; 3], 400, [400, 800, 800], 400));

    for chunk_rows in [votes as usize, 500, 7] {
        let path = dir.path().join(format!("chunks-{chunk_rows}.parquet"));
        let w = export_in_chunks(&db, dao, &path, ExportFormat::Parquet, chunk_rows).await;
        assert_eq!(w.rows, votes);
        assert_eq!(std::fs::read(&path).unwrap(), std::fs::read(&pages).unwrap(), "chunks of {chunk_rows}");
    }
});

// On SQLite the votes are read on one thread and put in batches on another: when the writer
// stops (here on the first batch, which does not fit the table it writes), the reader returns
// the writer's error, not one of its own, and both threads end, the view's connection free
// again. The votes fill seven batches, so sends go on after the writer stopped, whatever the
// timing: the channel holds two.
#[tokio::test]
async fn sqlite_votes_reader_stops_with_the_writer() {
    use govdata::contract::exports::DAOS;
    use govdata::exports::view::{Snapshot, View};
    let dao = "stopped";
    let db = synth_store(crate::helpers::Backend::Sqlite, dao, 50_000, 2).await;
    let view = View::begin(&db, true).await.unwrap();
    let Some(Snapshot::Sqlite(conn)) = view.snapshot() else { panic!("a SQLite view of its own connection") };
    let dir = tempfile::tempdir().unwrap();
    let read = std::sync::Arc::new(std::sync::Mutex::new(None));
    let written = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        export(&dir.path().join("votes.csv"), &DAOS, ExportFormat::Csv, |out| {
            let read = read.clone();
            async move {
                let result = votes::read_sqlite_in_chunks(conn, dao, out, 1_000).await;
                *read.lock().unwrap() = Some(result);
                Ok(())
            }
        }),
    )
    .await
    .expect("the export ends");
    let error = written.expect_err("the writer refused the votes' batch").to_string();
    assert!(error.contains("columns, not the"), "{error}");
    let read = read.lock().unwrap().take().expect("the reader returned");
    assert_eq!(read.expect_err("the reader stops").to_string(), "the export's writer stopped");
    assert!(conn.try_lock().is_ok(), "both threads let go of the view's connection");
    view.end().await.unwrap();
}

// A build reads one view of the store (`exports::view::View`): the votes come on a connection of
// their own on the view's snapshot (by `COPY` on PostgreSQL, which imports it; on one thread on
// SQLite, whose connection began on the same one), so votes deleted after the view began are
// still in its file, as in the pages read through the view's transaction, and the file is the
// very one the pages write. A view begun after the change has them gone.
on_both_backends!(votes_export_reads_one_view_while_votes_change, |backend: Backend| async move {
    use govdata::exports::view::{Snapshot, View};
    use sea_orm::{ConnectionTrait, Statement};
    let (dao, votes) = ("viewed", 3_000);
    let db = synth_store(backend, dao, votes, 3).await;
    let dir = tempfile::tempdir().unwrap();
    let view = View::begin(&db, true).await.unwrap();
    match (backend, view.snapshot()) {
        (crate::helpers::Backend::Sqlite, Some(Snapshot::Sqlite(_))) => {}
        (crate::helpers::Backend::Postgres | crate::helpers::Backend::Replica, Some(Snapshot::Postgres(_))) => {}
        _ => panic!("{backend:?}: the view has no connection of its own for the votes"),
    }
    // A view not asked for one has none on SQLite (PostgreSQL exports its snapshot on demand).
    let plain = View::begin(&db, false).await.unwrap();
    assert_eq!(plain.snapshot().is_some(), backend != crate::helpers::Backend::Sqlite);
    plain.end().await.unwrap();
    // The view's first read fixes what it sees (SQLite's read transaction begins there).
    let in_view = e::vote::Entity::find().filter(e::vote::Column::DaoId.eq(dao)).count(&view.txn).await.unwrap();
    assert_eq!(in_view, votes);
    let deleted = db
        .execute_raw(Statement::from_string(
            db.get_database_backend(),
            format!("DELETE FROM votes WHERE dao_id = '{dao}' AND id % 7 = 0"),
        ))
        .await
        .unwrap()
        .rows_affected();
    assert!(deleted > 100, "{deleted}");
    let viewed = dir.path().join("viewed.parquet");
    let w = export(&viewed, &VOTES, ExportFormat::Parquet, |out| votes::read(&view.txn, view.snapshot(), dao, out))
        .await
        .unwrap();
    assert_eq!(w.rows, votes, "the view's votes, deleted ones too");
    let paged = dir.path().join("paged.parquet");
    let p = export(&paged, &VOTES, ExportFormat::Parquet, |out| votes::read(&view.txn, None, dao, out)).await.unwrap();
    assert_eq!(p, w, "read by pages of the view's transaction: the same file");
    view.end().await.unwrap();
    let after = View::begin(&db, true).await.unwrap();
    let now = dir.path().join("now.parquet");
    let n = export(&now, &VOTES, ExportFormat::Parquet, |out| votes::read(&after.txn, after.snapshot(), dao, out))
        .await
        .unwrap();
    // A DAO of no proposals: a file of no rows, the one the pages write.
    let none = dir.path().join("none.parquet");
    let copied =
        export(&none, &VOTES, ExportFormat::Parquet, |out| votes::read(&after.txn, after.snapshot(), "none", out))
            .await
            .unwrap();
    let paged = export(&none, &VOTES, ExportFormat::Parquet, |out| votes::read(&after.txn, None, "none", out)).await;
    assert_eq!((copied.rows, Some(copied.clone())), (0, paged.ok()));
    after.end().await.unwrap();
    assert_eq!(n.rows, votes - deleted, "a later view");
    assert_ne!(n.sha256, w.sha256);
});

// On SQLite the view's own connection is matched with its transaction by the store's version
// (`PRAGMA data_version`, which moves when another connection commits): `same_snapshot` says the
// two began on one snapshot when nothing committed between the connection's two reads of it, and
// not when a write did (the view then tries again).
#[tokio::test]
async fn sqlite_own_connection_sees_a_commit_between_its_versions() {
    use govdata::exports::view::same_snapshot;
    use sea_orm::ConnectionTrait;
    let db = synth_store(crate::helpers::Backend::Sqlite, "versions", 20, 1).await;
    let path = db.get_sqlite_connection_pool().connect_options().get_filename().to_owned();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version = || conn.query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0)).unwrap();
    let before = version();
    assert!(same_snapshot(&conn, before).unwrap(), "nothing committed");
    conn.execute_batch("ROLLBACK").unwrap();
    let before = version();
    let deleted = db.execute_unprepared("DELETE FROM votes WHERE id % 2 = 0").await.unwrap().rows_affected();
    assert!(deleted > 0);
    assert!(!same_snapshot(&conn, before).unwrap(), "a commit between the two versions");
    conn.execute_batch("ROLLBACK").unwrap();
}

/// The rows the store holds for `DAO` in `table`, counted with sea-orm.
async fn stored_rows(db: &DatabaseConnection, table: &str) -> u64 {
    macro_rules! count {
        ($entity:ident) => {
            e::$entity::Entity::find().filter(e::$entity::Column::DaoId.eq(DAO)).count(db).await.unwrap()
        };
    }
    match table {
        "daos" => e::dao::Entity::find_by_id(DAO).count(db).await.unwrap(),
        "proposals" => count!(proposal),
        "votes" => count!(vote),
        "voters" => count!(voter_dao_stat),
        "delegates" => count!(delegate),
        "delegations" => count!(delegation),
        "delegation_changes" => count!(delegation_change),
        "power_checkpoints" => count!(power_checkpoint),
        "governance_events" => count!(governance_event),
        "signals" => count!(signal),
        "forum_topics" => count!(forum_topic),
        "proposal_actions" => count!(proposal_action),
        other => panic!("no store count for the export table `{other}`: add it here"),
    }
}

/// The columns that identify a row of `table`: each row's values are distinct.
fn identity(table: &str) -> &'static [&'static str] {
    match table {
        "daos" => &["dao_id"],
        "proposals" => &["proposal_key"],
        "votes" => &["proposal_key", "voter"],
        "voters" => &["voter"],
        "delegates" => &["address"],
        "delegations" => &["delegator"],
        "delegation_changes" => &["delegation_id"],
        "power_checkpoints" => &["block_number", "log_index"],
        "governance_events" => &["event_id"],
        "signals" => &["signal_id"],
        "forum_topics" => &["topic_key"],
        "proposal_actions" => &["proposal_key", "position"],
        other => panic!("no identity for the export table `{other}`: add it here"),
    }
}

/// The Arrow type a column of `ty` must have, written out here rather than read from the writer
/// (only the wei precision is the writer's, and the schema document must name the same).
fn arrow_type(ty: ColumnType) -> DataType {
    assert_eq!(ColumnType::Wei.as_str(), format!("decimal({WEI_DIGITS},0)"));
    match ty {
        ColumnType::Text | ColumnType::DecimalText => DataType::Utf8,
        ColumnType::Integer => DataType::Int64,
        ColumnType::Boolean => DataType::Boolean,
        ColumnType::Timestamp => DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
        ColumnType::Wei => DataType::Decimal128(WEI_DIGITS, 0),
    }
}

/// Checks the Parquet file of `table` at `path` and returns its rows' values of `column`, as
/// text (wei as its digits).
fn parquet_column(path: &std::path::Path, table: &ExportTable, column: &str) -> (u64, Vec<String>) {
    let builder = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap()).unwrap();
    let meta = builder.metadata().file_metadata().key_value_metadata().unwrap();
    let doc = meta.iter().find(|kv| kv.key == "govdata.schema").and_then(|kv| kv.value.clone()).unwrap();
    assert_eq!(serde_json::from_str::<serde_json::Value>(&doc).unwrap(), schema_json(table), "{}", table.name);
    let schema = builder.schema().clone();
    let fields: Vec<(&str, DataType, bool)> =
        schema.fields().iter().map(|f| (f.name().as_str(), f.data_type().clone(), f.is_nullable())).collect();
    let declared: Vec<(&str, DataType, bool)> =
        table.columns.iter().map(|c| (c.name, arrow_type(c.ty), c.nullable)).collect();
    assert_eq!(fields, declared, "{}", table.name);
    let mut rows = 0;
    let mut values = Vec::new();
    for batch in builder.build().unwrap() {
        let batch = batch.unwrap();
        rows += batch.num_rows() as u64;
        let array = batch.column_by_name(column).unwrap();
        for i in 0..array.len() {
            values.push(if let Some(s) = array.as_any().downcast_ref::<StringArray>() {
                s.value(i).to_owned()
            } else if let Some(d) = array.as_any().downcast_ref::<Decimal128Array>() {
                d.value_as_string(i)
            } else {
                panic!("{}.{column} is neither text nor wei", table.name)
            });
        }
    }
    (rows, values)
}

on_both_backends!(replica: every_table_exports_the_daos_rows_in_every_format, |app: TestApp| async move {
    let db = govdata::store::connect(&app.database_url).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut non_empty = BTreeSet::new();
    for table in TABLES {
        let stored = stored_rows(&db, table.name).await;
        if stored > 0 {
            non_empty.insert(table.name);
        }
        let names: Vec<&str> = table.columns.iter().map(|c| c.name).collect();
        for format in ExportFormat::ALL {
            let path = dir.path().join(format!("{}.{}", table.name, format.as_str()));
            let w = export(&path, table, *format, |out| read_table(&db, None, table, DAO, out)).await.unwrap();
            assert_eq!(w.rows, stored, "{} {format:?}", table.name);
            assert_eq!(w.bytes, std::fs::metadata(&path).unwrap().len());
            match format {
                ExportFormat::Parquet => {
                    let (rows, dao_ids) = parquet_column(&path, table, "dao_id");
                    assert_eq!(rows, stored, "{}", table.name);
                    assert!(dao_ids.iter().all(|d| d == DAO), "{}: only the DAO's rows", table.name);
                }
                ExportFormat::Csv => {
                    let mut reader = csv::Reader::from_path(&path).unwrap();
                    assert_eq!(reader.headers().unwrap().iter().collect::<Vec<_>>(), names, "{}", table.name);
                    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
                    assert_eq!(records.len() as u64, stored, "{}", table.name);
                    let at: Vec<usize> = identity(table.name)
                        .iter()
                        .map(|c| names.iter().position(|n| n == c).unwrap_or_else(|| panic!("{}.{c}", table.name)))
                        .collect();
                    let distinct: BTreeSet<Vec<&str>> =
                        records.iter().map(|r| at.iter().map(|i| &r[*i]).collect()).collect();
                    assert_eq!(distinct.len(), records.len(), "{}: each row once", table.name);
                }
                ExportFormat::Ndjson => {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let lines: Vec<serde_json::Map<String, serde_json::Value>> =
                        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
                    assert_eq!(lines.len() as u64, stored, "{}", table.name);
                    for l in &lines {
                        assert_eq!(
                            l.keys().map(String::as_str).collect::<BTreeSet<_>>(),
                            names.iter().copied().collect()
                        );
                        assert_eq!(l["dao_id"], DAO);
                    }
                }
            }
        }
    }
    // The sample holds these for the DAO (the tables it has none of are still written, as a
    // header or a schema alone, above).
    for t in ["daos", "proposals", "votes", "voters", "delegates"] {
        assert!(non_empty.contains(t), "the sample holds the DAO's {t}");
    }

    // The proposals: in the declared order (oldest first, then row order), each under the key
    // `/v2/proposals` serves, derived from the natural key.
    let proposals = e::proposal::Entity::find()
        .filter(e::proposal::Column::DaoId.eq(DAO))
        .order_by_asc(e::proposal::Column::CreatedMs)
        .order_by_asc(e::proposal::Column::Id)
        .all(&db)
        .await
        .unwrap();
    let expected: Vec<String> =
        proposals.iter().map(|p| govdata::store::keys::proposal_key(DAO, p.source.as_str(), &p.external_id)).collect();
    let (_, keys) =
        parquet_column(&dir.path().join("proposals.parquet"), &govdata::contract::exports::PROPOSALS, "proposal_key");
    assert_eq!(keys, expected);
    // And exactly the keys `/v2/proposals` serves for the DAO, page after page.
    let mut served = BTreeSet::new();
    let mut path = format!("/v2/proposals?daoId={DAO}&limit=100");
    loop {
        let (status, body) = app.get_json(&path).await;
        assert_eq!(status, 200, "{body}");
        served.extend(
            body["data"]["items"].as_array().unwrap().iter().map(|p| p["proposalKey"].as_str().unwrap().to_owned()),
        );
        match body["meta"]["page"]["nextCursor"].as_str() {
            Some(cursor) => path = format!("/v2/proposals?daoId={DAO}&limit=100&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(served, keys.iter().cloned().collect::<BTreeSet<_>>());

    // The delegates' raw power survives as a Parquet DECIMAL, digit for digit.
    let mut raw: Vec<(String, String)> = e::delegate::Entity::find()
        .filter(e::delegate::Column::DaoId.eq(DAO))
        .all(&db)
        .await
        .unwrap()
        .into_iter()
        .map(|d| (d.address, d.voting_power_raw))
        .collect();
    raw.sort();
    let path = dir.path().join("delegates.parquet");
    let (_, addresses) = parquet_column(&path, &govdata::contract::exports::DELEGATES, "address");
    let (_, powers) = parquet_column(&path, &govdata::contract::exports::DELEGATES, "voting_power_raw");
    assert_eq!(addresses.into_iter().zip(powers).collect::<Vec<_>>(), raw, "by address, exact");
});

/// The NDJSON export of `table` for `dao`, line by line.
async fn ndjson(db: &DatabaseConnection, dir: &std::path::Path, table: &'static ExportTable, dao: &str) -> Vec<Value> {
    let path = dir.join(format!("{dao}-{}.ndjson", table.name));
    export(&path, table, ExportFormat::Ndjson, |out| read_table(db, None, table, dao, out)).await.unwrap();
    std::fs::read_to_string(&path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

// The tables the sample leaves empty, with rows: exact values, public ids, "no delegate" as null,
// chain order, the linked proposal's key, and only the DAO's rows.
on_both_backends!(replica: governor_and_forum_tables_export_their_rows, |backend: Backend| async move {
    use govdata::contract::exports::{DELEGATION_CHANGES, DELEGATIONS, FORUM_TOPICS, POWER_CHECKPOINTS};
    use govdata::contract::vocabulary::{PowerCause, ProposalSource, ProposalState};
    use govdata::store::address::AccountBytes;
    use govdata::store::keys;
    use sea_orm::ActiveValue::Set;

    let db = govdata::store::connect(&crate::helpers::fresh_database(backend).await).await.unwrap();
    let zero = "0x0000000000000000000000000000000000000000";
    let (alice, bob, carol) = (
        "0x70997970c51812dc3a010c7d01b50e0d17dc79c8",
        "0x683a4f9915d6216f73d6df50151725036bd26c02",
        "0x3fb19771947072629c8eee7995a2ef23b72d4c8a",
    );
    let bytes = |a: &str| AccountBytes::parse(a).unwrap();
    for (dao, delegator, delegate, block) in [(DAO, bob, zero, 9), (DAO, alice, carol, 7), ("other", alice, bob, 1)] {
        e::delegation::ActiveModel {
            dao_id: Set(dao.to_owned()),
            delegator: Set(delegator.to_owned()),
            delegate: Set(delegate.to_owned()),
            block_number: Set(block),
            ..Default::default()
        }
        .insert(&db)
        .await
        .unwrap();
    }
    // Inserted out of chain order: the export is in chain order.
    let big = "123456789012345678901234567890123456"; // 36 digits
    for (dao, from, to, moved, supply, block, log) in [
        (DAO, carol, alice, "5", None, 20, 3),
        (DAO, zero, carol, big, Some("1000000000000000000000000000"), 20, 1),
        (DAO, alice, zero, "0", None, 11, 40),
        ("other", zero, bob, "1", None, 1, 1),
    ] {
        e::delegation_change::ActiveModel {
            dao_id: Set(dao.to_owned()),
            delegator: Set(bytes(bob)),
            from_delegate: Set(bytes(from)),
            to_delegate: Set(bytes(to)),
            power_moved_raw: Set(moved.to_owned()),
            decimals: Set(18),
            block_number: Set(block),
            log_index: Set(log),
            tx_hash: Set(format!("0x{block:064x}")),
            at_ms: Set(block * 12_000),
            supply_raw: Set(supply.map(str::to_owned)),
            ..Default::default()
        }
        .insert(&db)
        .await
        .unwrap();
    }
    for (dao, cause, by, block, log) in
        [(DAO, PowerCause::Transfer, None, 30, 2), (DAO, PowerCause::Delegation, Some(alice), 30, 1)]
    {
        e::power_checkpoint::ActiveModel {
            dao_id: Set(dao.to_owned()),
            delegate: Set(bytes(carol)),
            previous_raw: Set("10".to_owned()),
            power_raw: Set(big.to_owned()),
            decimals: Set(18),
            cause: Set(cause),
            cause_delegator: Set(by.map(bytes)),
            block_number: Set(block),
            log_index: Set(log),
            tx_hash: Set("0xabc".to_owned()),
            at_ms: Set(1_700_000_000_000),
            ..Default::default()
        }
        .insert(&db)
        .await
        .unwrap();
    }
    let proposal_key = keys::proposal_key(DAO, "snapshot", "0xp1");
    let p = e::proposal::ActiveModel {
        dao_id: Set(DAO.to_owned()),
        source: Set(ProposalSource::Snapshot),
        external_id: Set("0xp1".to_owned()),
        proposal_key: Set(proposal_key.clone()),
        title: Set("A proposal".to_owned()),
        author: Set(alice.to_owned()),
        state: Set(ProposalState::Closed),
        created_ms: Set(1_000),
        ingested_vote_count: Set(0),
        origin: Set("snapshot-hub".to_owned()),
        updated_ms: Set(1_000),
        ..Default::default()
    }
    .insert(&db)
    .await
    .unwrap();
    for (external_id, created_ms, linked) in [("2", 2_000, Some(p.id)), ("1", 1_000, None)] {
        e::forum_topic::ActiveModel {
            dao_id: Set(DAO.to_owned()),
            external_id: Set(external_id.to_owned()),
            topic_key: Set(keys::topic_key(DAO, external_id)),
            title: Set(format!("Topic {external_id}")),
            slug: Set(format!("topic-{external_id}")),
            url: Set(format!("https://gov.example/t/{external_id}")),
            posts_count: Set(3),
            reply_count: Set(2),
            views: Set(10),
            like_count: Set(1),
            created_ms: Set(created_ms),
            closed: Set(false),
            archived: Set(true),
            linked_proposal_id: Set(linked),
            updated_ms: Set(created_ms),
            ..Default::default()
        }
        .insert(&db)
        .await
        .unwrap();
    }

    let dir = tempfile::tempdir().unwrap();
    let rows = ndjson(&db, dir.path(), &DELEGATIONS, DAO).await;
    assert_eq!(
        rows,
        [
            json!({"dao_id": DAO, "delegator": bob, "delegate": null, "block_number": 9}),
            json!({"dao_id": DAO, "delegator": alice, "delegate": carol, "block_number": 7}),
        ],
        "by holder address; a withdrawn delegation has no delegate"
    );
    let rows = ndjson(&db, dir.path(), &DELEGATION_CHANGES, DAO).await;
    let places: Vec<(i64, i64)> =
        rows.iter().map(|r| (r["block_number"].as_i64().unwrap(), r["log_index"].as_i64().unwrap())).collect();
    assert_eq!(places, [(11, 40), (20, 1), (20, 3)], "chain order");
    assert_eq!(rows[0]["delegation_id"], keys::delegation_id(DAO, 11, 40));
    assert_eq!((&rows[0]["from_delegate"], &rows[0]["to_delegate"]), (&json!(alice), &Value::Null));
    assert_eq!((&rows[1]["from_delegate"], &rows[1]["to_delegate"]), (&Value::Null, &json!(carol)));
    assert_eq!(
        (&rows[1]["power_moved_raw"], &rows[1]["supply_raw"]),
        (&json!(big), &json!("1000000000000000000000000000"))
    );
    assert_eq!(
        (&rows[2]["delegator"], &rows[2]["supply_raw"], &rows[2]["at"]),
        (&json!(bob), &Value::Null, &json!("1970-01-01T00:04:00.000Z"))
    );
    let path = dir.path().join("changes.parquet");
    export(&path, &DELEGATION_CHANGES, ExportFormat::Parquet, |out| read_table(&db, None, &DELEGATION_CHANGES, DAO, out))
        .await
        .unwrap();
    assert_eq!(parquet_column(&path, &DELEGATION_CHANGES, "power_moved_raw").1, ["0", big, "5"], "wei, exact");
    let rows = ndjson(&db, dir.path(), &POWER_CHECKPOINTS, DAO).await;
    assert_eq!(
        rows.iter()
            .map(|r| (r["log_index"].as_i64().unwrap(), r["cause"].as_str().unwrap(), r["cause_delegator"].clone()))
            .collect::<Vec<_>>(),
        [(1, "delegation", json!(alice)), (2, "transfer", Value::Null)]
    );
    assert_eq!(
        (&rows[0]["delegate"], &rows[0]["previous_power_raw"], &rows[0]["power_raw"]),
        (&json!(carol), &json!("10"), &json!(big))
    );
    let rows = ndjson(&db, dir.path(), &FORUM_TOPICS, DAO).await;
    assert_eq!(
        rows.iter().map(|r| (r["external_id"].as_str().unwrap(), r["linked_proposal_key"].clone())).collect::<Vec<_>>(),
        [("1", Value::Null), ("2", json!(proposal_key))],
        "oldest first, the linked proposal by its public key"
    );
    assert_eq!(rows[0]["topic_key"], keys::topic_key(DAO, "1"));
    for table in [&DELEGATIONS, &DELEGATION_CHANGES] {
        assert_eq!(ndjson(&db, dir.path(), table, "other").await.len(), 1, "{}: only the DAO's rows", table.name);
    }
});
