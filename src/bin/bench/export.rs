//! `bench --export`: the whole-table export of a DAO's votes (issue 30), measured.
//!
//! 1. govdata's export of the DAO's votes to Parquet, and to CSV, read as a build reads them (in
//!    one view of the store, the votes on a connection of their own, in chunks read in the
//!    table's order on one side and put in batches on another: by `COPY` on PostgreSQL, stepped
//!    on one thread on SQLite; and to Parquet by
//!    keyset pages through the view's transaction too, the reader those replaced, for the
//!    difference in one run): time, MB/s, bytes per vote, and the process's peak RSS right after
//!    (the export streams; the goal is under 200 MB);
//! 2. the floor: arrow-rs alone writing the same rows with the same writer properties, timed over
//!    its `write` and `close` calls only (the rows are read back from govdata's file first, in
//!    batches of the same size), so the ratio is what the store read and the pipeline cost; run
//!    right after the Parquet export, so the two are timed within seconds of each other;
//! 3. a read of one column of the file (`voting_power`): the bytes of its column chunks against
//!    the file's, and the time to read them, as a range-reading client (pyarrow over HTTP) would.
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use govdata::contract::exports::{ExportFormat, VOTES};
use govdata::exports::{export, view::View, votes, writer::parquet_properties};
use parquet::arrow::{ArrowWriter, ProjectionMask, arrow_reader::ParquetRecordBatchReaderBuilder};
use sea_orm::{DatabaseConnection, DbBackend};

/// The process's peak resident memory so far (`VmHWM`), in MB.
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// With `pages`, the keyset pages' Parquet export too.
pub async fn run(db: &DatabaseConnection, dao: &str, dir: &Path, pages: bool) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let rss_before = peak_rss_mb();
    // As a build reads: in one view of the store, the votes on a connection of their own (issue
    // 49: in chunks, by `COPY` on PostgreSQL); the keyset pages through
    // the view's transaction they replaced are measured first, in the same run, for the
    // difference.
    let apart_how = match db.get_database_backend() {
        DbBackend::Postgres => "in chunks by COPY",
        _ => "in chunks",
    };
    let runs = [(ExportFormat::Parquet, false), (ExportFormat::Parquet, true), (ExportFormat::Csv, true)];
    let mut parquet_runs = Vec::new();
    let mut writing = Duration::ZERO;
    for (format, apart) in runs.into_iter().filter(|&(_, apart)| apart || pages) {
        let path = dir.join(format!("votes.{}", format.as_str()));
        let started = Instant::now();
        let view = View::begin(db, apart).await?;
        let snapshot = view.snapshot().filter(|_| apart);
        anyhow::ensure!(snapshot.is_some() == apart, "the view has no connection of its own for the votes");
        let written = export(&path, &VOTES, format, |out| votes::read(&view.txn, snapshot, dao, out)).await?;
        view.end().await?;
        let secs = started.elapsed().as_secs_f64();
        let how = if apart { apart_how } else { "by keyset pages" };
        if format == ExportFormat::Parquet {
            parquet_runs.push((how, secs, written.sha256.clone()));
        }
        println!(
            "export {} {how}: {} votes, {:.1} MB in {:.1} s = {:.1} MB/s, {:.0} k votes/s, {:.1} bytes per vote; \
             peak RSS {:.0} MB (before: {:.0} MB); sha256 {}",
            format.as_str(),
            written.rows,
            written.bytes as f64 / 1e6,
            secs,
            written.bytes as f64 / 1e6 / secs,
            written.rows as f64 / secs / 1e3,
            written.bytes as f64 / written.rows.max(1) as f64,
            peak_rss_mb(),
            rss_before,
            written.sha256,
        );
        // The floor right after the export it is read against, before the CSV export: this
        // machine's speed drifts over a minute (docs/benchmarks.md), and the pair is its ratio.
        if format == ExportFormat::Parquet && apart {
            writing = floor(dir)?;
        }
    }
    anyhow::ensure!(parquet_runs.windows(2).all(|w| w[0].2 == w[1].2), "the two readers wrote different files");

    for (how, secs, _) in &parquet_runs {
        println!(
            "govdata's Parquet export {how} takes {:.2}× arrow-rs's time ({:.2}× its throughput)",
            secs / writing.as_secs_f64(),
            writing.as_secs_f64() / secs,
        );
    }

    // One column, as a range reader fetches it: its chunks' bytes, read and decoded.
    let parquet = dir.join("votes.parquet");
    let file_bytes = std::fs::metadata(&parquet)?.len();
    let builder = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&parquet)?)?;
    let index = builder
        .parquet_schema()
        .columns()
        .iter()
        .position(|c| c.name() == "voting_power")
        .context("the file has a voting_power column")?;
    let chunk_bytes: i64 = builder.metadata().row_groups().iter().map(|rg| rg.column(index).compressed_size()).sum();
    let mask = ProjectionMask::leaves(builder.parquet_schema(), [index]);
    let t = Instant::now();
    let mut rows = 0;
    for batch in builder.with_projection(mask).build()? {
        rows += batch?.num_rows();
    }
    println!(
        "one column (voting_power): {rows} values from {:.1} MB of column chunks ({:.1} % of the file's {:.1} MB) in {:.2} s",
        chunk_bytes as f64 / 1e6,
        chunk_bytes as f64 * 100.0 / file_bytes as f64,
        file_bytes as f64 / 1e6,
        t.elapsed().as_secs_f64(),
    );
    for name in ["votes.parquet", "votes.csv", "bare.parquet"] {
        std::fs::remove_file(dir.join(name)).ok();
    }
    Ok(())
}

/// The floor: arrow-rs alone writing the rows of `dir`'s `votes.parquet` again, with the same
/// properties, timed over its `write` and `close` calls only.
fn floor(dir: &Path) -> anyhow::Result<Duration> {
    let parquet = dir.join("votes.parquet");
    let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&parquet)?)?
        .with_batch_size(govdata::exports::BATCH_ROWS as usize)
        .build()?;
    let bare_path = dir.join("bare.parquet");
    let schema = arrow_array::RecordBatchReader::schema(&reader);
    let mut writer =
        ArrowWriter::try_new(std::fs::File::create(&bare_path)?, schema, Some(parquet_properties(&VOTES)))?;
    let mut writing = Duration::ZERO;
    for batch in reader {
        let batch = batch?;
        let t = Instant::now();
        writer.write(&batch)?;
        writing += t.elapsed();
    }
    let t = Instant::now();
    writer.close()?;
    writing += t.elapsed();
    let bare_bytes = std::fs::metadata(&bare_path)?.len();
    println!(
        "floor (arrow-rs alone, same rows and properties): {:.1} MB in {:.1} s = {:.1} MB/s",
        bare_bytes as f64 / 1e6,
        writing.as_secs_f64(),
        bare_bytes as f64 / 1e6 / writing.as_secs_f64(),
    );
    Ok(writing)
}
