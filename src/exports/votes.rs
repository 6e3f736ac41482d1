//! The `votes` table of a DAO: its proposals oldest first, each proposal's votes by voter address,
//! read in keyset pages of the natural key's index (`proposal_id`, `voter`): one index range per
//! proposal, never a sort, and the same order (so the same bytes) for the same votes.
//!
//! The table that grows to millions of rows, so read for speed (issue 49): only the columns the
//! file holds, in pages of [`PAGE_ROWS`] streamed from the store as it sends them, each value
//! borrowed from the driver's row and appended to the batch's Arrow arrays, with no row struct,
//! no cells and no text allocated per value between the store and the file. A build's view
//! lends a connection of its own on its snapshot ([`super::view`]), and the votes come in chunks
//! read in the table's order and handed on in voter order ([`Chunk`]), a whole chunk at a time, to
//! a second thread that fills the batches: on PostgreSQL by `COPY … TO STDOUT (FORMAT binary)`,
//! no typed row per vote on either side of the wire; on SQLite stepped on one blocking thread, no
//! row handed between threads.
use arrow_array::ArrayRef;
use arrow_array::builder::{BooleanBuilder, Int64Builder, StringBuilder, TimestampMillisecondBuilder};
use futures_util::TryStreamExt;
use sea_orm::sqlx::postgres::PgConnection;
use sea_orm::sqlx::{self, Connection, Row};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, QueryFilter, QueryOrder, QueryResult, QuerySelect,
    QueryTrait, Select, StreamTrait,
};
use std::sync::Arc;

use super::binary_copy::{self, Tuples};
use super::view::{PgSnapshot, Snapshot};
use super::writer::{Columns, timestamps};
use super::{BATCH_ROWS, Batches};
use crate::contract::vocabulary::ProposalSource;
use crate::store::address::AccountBytes;
use crate::store::entities::{proposal, vote};
use crate::store::keys;
use crate::store::sqlite_reader::sqlite_values;

/// Votes read per query: a proposal's votes in one page up to this many (most proposals hold
/// fewer), and no more than the driver's stream holds at a time in memory whatever its size.
pub const PAGE_ROWS: u64 = 65_536;

/// The longest voter address: a Starknet account's 32 bytes as `0x` and hex.
const ADDRESS_TEXT: usize = 2 + 2 * 32;

/// Sends every vote of `dao_id` as rows of `contract::exports::VOTES`: on the connection of the
/// view's `snapshot` when there is one, else in keyset pages of [`PAGE_ROWS`] through `db`.
pub async fn read(
    db: &(impl ConnectionTrait + StreamTrait),
    snapshot: Option<Snapshot<'_>>,
    dao_id: &str,
    out: Batches,
) -> anyhow::Result<()> {
    match snapshot {
        Some(Snapshot::Postgres(snapshot)) => read_pg_in_chunks(db, snapshot, dao_id, out, CHUNK_ROWS).await,
        Some(Snapshot::Sqlite(conn)) => read_sqlite_in_chunks(conn, dao_id, out, CHUNK_ROWS).await,
        None => read_in_pages(db, dao_id, out, PAGE_ROWS).await,
    }
}

/// The DAO's proposals oldest first: the export's outer order.
async fn proposals(db: &impl ConnectionTrait, dao_id: &str) -> anyhow::Result<Vec<(i64, ProposalSource, String)>> {
    Ok(proposals_query(dao_id).into_tuple().all(db).await?)
}

/// [`proposals`]' statement.
fn proposals_query(dao_id: &str) -> Select<proposal::Entity> {
    proposal::Entity::find()
        .select_only()
        .columns([proposal::Column::Id, proposal::Column::Source, proposal::Column::ExternalId])
        .filter(proposal::Column::DaoId.eq(dao_id))
        .order_by_asc(proposal::Column::CreatedMs)
        .order_by_asc(proposal::Column::Id)
}

/// The votes of `proposal_id`, in voter order, from `after` on: the exported columns in
/// [`VoteRow::decode`]'s order.
fn select(proposal_id: i64, after: Option<Vec<u8>>) -> Select<vote::Entity> {
    use vote::Column as V;
    let mut q = exported(vote::Entity::find()).filter(V::ProposalId.eq(proposal_id));
    if let Some(voter) = after {
        q = q.filter(V::Voter.gt(AccountBytes(voter)));
    }
    q.order_by_asc(V::Voter)
}

/// The exported columns of `q`'s votes, in [`VoteRow::decode`]'s order.
fn exported(q: Select<vote::Entity>) -> Select<vote::Entity> {
    q.select_only().columns(EXPORTED)
}

/// The columns a vote's row gives the file, in [`VoteRow::decode`]'s order.
const EXPORTED: [vote::Column; 9] = {
    use vote::Column as V;
    [V::Voter, V::Choice, V::VotingPower, V::VpFromFloat, V::Reason, V::CreatedMs, V::TxHash, V::BlockNumber, V::Ipfs]
};

/// [`read`] in keyset pages of `page_rows` votes (a test crosses page boundaries with a few
/// thousand votes instead of writing more than [`PAGE_ROWS`] of them).
pub async fn read_in_pages(
    db: &(impl ConnectionTrait + StreamTrait),
    dao_id: &str,
    out: Batches,
    page_rows: u64,
) -> anyhow::Result<()> {
    let backend = ConnectionTrait::get_database_backend(db);
    let mut batch = Batch::new();
    for (id, source, external_id) in proposals(db, dao_id).await? {
        let proposal = Proposal::new(dao_id, source, &external_id);
        let mut after: Option<Vec<u8>> = None;
        loop {
            let stmt = select(id, after.take()).limit(page_rows).build(backend);
            let mut rows = std::pin::pin!(db.stream_raw(stmt).await?);
            let mut read = 0u64;
            let mut last = Vec::new();
            while let Some(r) = rows.try_next().await? {
                let v = VoteRow::of(&r)?;
                last.clear();
                last.extend_from_slice(v.voter);
                batch.push(&proposal, &v);
                read += 1;
                if batch.rows == BATCH_ROWS as usize {
                    out.send_columns(std::mem::replace(&mut batch, Batch::new()).finish()).await?;
                }
            }
            if read < page_rows {
                break;
            }
            after = Some(last);
        }
    }
    out.send_columns(batch.finish()).await
}

/// [`read`] on PostgreSQL: every proposal's votes on a connection of `snapshot`, by `COPY (SELECT
/// …) TO STDOUT (FORMAT binary)` (each field read where it lies in the copied bytes: no `DataRow`,
/// no typed row per vote), in [`Chunk`]s of at most `chunk_rows` votes ([`CHUNK_ROWS`] as a build
/// reads; a test crosses chunks with a few thousand votes).
///
/// Each chunk is copied in the order the table holds its votes, and put in voter order on a
/// second thread, which then fills the batches, while the next chunk is copied. Read in voter
/// order, through the natural key's index, each vote cost the server a visit of its own to a
/// table page, since a proposal's votes lie in the order they were written: an index scan of
/// the 10M-vote store's largest proposal read 502,664 buffers for its 500,000 votes, a bitmap
/// scan of the same votes 9,865 (docs/benchmarks.md, "Copied in the table's order").
pub async fn read_pg_in_chunks(
    db: &impl ConnectionTrait,
    snapshot: PgSnapshot<'_>,
    dao_id: &str,
    out: Batches,
    chunk_rows: usize,
) -> anyhow::Result<()> {
    anyhow::ensure!(chunk_rows > 0, "a chunk holds at least one vote");
    let listed: Vec<(i64, ProposalSource, String, i64)> =
        proposals_query(dao_id).column(proposal::Column::IngestedVoteCount).into_tuple().all(db).await?;
    if listed.is_empty() {
        // No votes: no connection to open (an empty batch is not sent either way).
        return Ok(());
    }
    let mut conn = snapshot.connect().await?;
    sqlx::raw_sql(IN_TABLE_ORDER).execute(&mut conn).await?;
    let sizes: Vec<(i64, i64)> = listed.iter().map(|&(id, _, _, votes)| (id, votes)).collect();
    let (full, mut filled) = tokio::sync::mpsc::channel::<Filled>(1);
    let (emptied, mut empty) = tokio::sync::mpsc::unbounded_channel::<Chunk>();
    for _ in 0..2 {
        emptied.send(Chunk::default())?;
    }
    let (dao_id, runtime) = (dao_id.to_owned(), tokio::runtime::Handle::current());
    // Ends when the reader does (its end, or its side of the channel dropped): no token needed.
    let handing = tokio::task::spawn_blocking(move || {
        let proposals: Vec<Proposal<'_>> =
            listed.iter().map(|(_, source, external_id, _)| Proposal::new(&dao_id, *source, external_id)).collect();
        hand_on(
            std::iter::from_fn(|| filled.blocking_recv()),
            |chunk| emptied.send(chunk).is_ok(),
            &proposals,
            |batch| runtime.block_on(out.send_columns(batch.finish())),
        )
    });
    let read = copy_chunks(&mut conn, &sizes, chunk_rows, &full, &mut empty).await;
    drop(full);
    let handed = handing.await.map_err(|_| anyhow::anyhow!("the votes export's batches panicked"))?;
    if read.is_ok() {
        conn.close().await?;
    }
    // The reader's own error first: the other thread only saw it stop. The reader stops without
    // one when the other thread did.
    read.and(handed)
}

/// What the votes' connection is told first: no index scan and no table scan, so a chunk's
/// `COPY` reads its votes by a bitmap scan of an index that leads with the proposal (the natural
/// key's, whose voters bound a range), in the table's order, each table page once
/// ([`last_voter_of_chunk`] turns index scans on for its own statement only); and no parallel
/// workers: they passed the same rows through a queue to the backend that sends them, which cost
/// the server about 45 % more CPU for the export, taken from the cores the export's own threads and
/// the other requests use (docs/benchmarks.md, "Copied in the table's order").
pub const IN_TABLE_ORDER: &str =
    "SET enable_indexscan = off; SET enable_seqscan = off; SET max_parallel_workers_per_gather = 0";

/// Copies the votes of `proposals` (each proposal's id and its vote count, in the export's order)
/// into the chunks of `empty`, at most `chunk_rows` votes each, and hands each to `full`; then
/// [`Filled::End`]. A proposal whose count fits the chunk is one `COPY`; a larger one's chunks
/// are ranges of its voters, each ending at the address [`last_voter_of_chunk`] finds (the
/// count only chooses between the two: a chunk holds what its range holds). Returns early, and
/// without an error of its own, when the thread handing the chunks on stopped: its error is the
/// cause.
async fn copy_chunks(
    conn: &mut PgConnection,
    proposals: &[(i64, i64)],
    chunk_rows: usize,
    full: &tokio::sync::mpsc::Sender<Filled>,
    empty: &mut tokio::sync::mpsc::UnboundedReceiver<Chunk>,
) -> anyhow::Result<()> {
    // The first chunk is small: nothing has measured a vote's bytes yet (as `read_chunks`).
    let mut take = chunk_rows.min(FIRST_TAKE);
    for (at, &(id, votes)) in proposals.iter().enumerate() {
        let whole = usize::try_from(votes).is_ok_and(|votes| votes <= take);
        let mut after: Option<Vec<u8>> = None;
        loop {
            let upto = if whole { None } else { last_voter_of_chunk(conn, id, after.as_deref(), take).await? };
            let Some(mut chunk) = empty.recv().await else { return Ok(()) };
            let range = in_voter_range(id, after.take(), upto.clone()).build(DbBackend::Postgres).to_string();
            chunk.copy(conn, &format!("COPY ({range}) TO STDOUT (FORMAT binary)")).await?;
            take = chunk.next_take(chunk_rows, std::mem::size_of::<(u128, u32)>());
            if full.send(Filled::InTableOrder(at, chunk)).await.is_err() {
                return Ok(());
            }
            match upto {
                Some(last) => after = Some(last),
                None => break,
            }
        }
    }
    // Sent or not, the other thread says how the export ended.
    let _ = full.send(Filled::End).await;
    Ok(())
}

/// The address of the `take`th vote of `proposal_id` in voter order after `after`, or `None`
/// when fewer follow: the end of a chunk of [`copy_chunks`]. An index-only scan of the natural
/// key's index (the table's pages already vacuumed are not read), so index scans are turned on
/// for it alone, in the same round trip.
async fn last_voter_of_chunk(
    conn: &mut PgConnection,
    proposal_id: i64,
    after: Option<&[u8]>,
    take: usize,
) -> anyhow::Result<Option<Vec<u8>>> {
    let statement = chunk_end(proposal_id, after, take).build(DbBackend::Postgres).to_string();
    // One statement's rows among the three's: the `SELECT`'s, one or none.
    let rows = sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "SET enable_indexscan = on; {statement}; SET enable_indexscan = off"
    )))
    .fetch_all(conn)
    .await?;
    rows.first().map(|row| row.try_get::<Vec<u8>, _>(0)).transpose().map_err(Into::into)
}

/// [`last_voter_of_chunk`]'s statement: the voter `take` votes of `proposal_id` after `after`, in
/// voter order.
pub fn chunk_end(proposal_id: i64, after: Option<&[u8]>, take: usize) -> Select<vote::Entity> {
    use vote::Column as V;
    let mut q = vote::Entity::find().select_only().column(V::Voter).filter(V::ProposalId.eq(proposal_id));
    if let Some(voter) = after {
        q = q.filter(V::Voter.gt(AccountBytes(voter.to_vec())));
    }
    q.order_by_asc(V::Voter).offset(u64::try_from(take.saturating_sub(1)).unwrap_or(u64::MAX)).limit(1)
}

/// The exported columns of the votes of `proposal_id` whose voter is after `after` and up to
/// `upto`, in no order: [`copy_chunks`]' chunk.
pub fn in_voter_range(proposal_id: i64, after: Option<Vec<u8>>, upto: Option<Vec<u8>>) -> Select<vote::Entity> {
    use vote::Column as V;
    let mut q = exported(vote::Entity::find()).filter(V::ProposalId.eq(proposal_id));
    if let Some(voter) = after {
        q = q.filter(V::Voter.gt(AccountBytes(voter)));
    }
    if let Some(voter) = upto {
        q = q.filter(V::Voter.lte(AccountBytes(voter)));
    }
    q
}

/// [`read`] on SQLite: every proposal's votes on the view's own rusqlite connection (`conn`, on
/// the view's snapshot), stepped on a blocking thread of its own, in [`Chunk`]s of at most
/// `chunk_rows` votes ([`CHUNK_ROWS`] as a build reads; a test crosses chunks with a few thousand
/// votes). A second thread hands each chunk's votes to the batches while the next chunk is read:
/// it took the batches' work off the thread that steps SQLite, whose time bounds the export
/// (docs/benchmarks.md, "Two threads"). Only full batches cross to the async side (the writer's
/// channel and the build's heartbeat, awaited there through the runtime's handle).
pub async fn read_sqlite_in_chunks(
    conn: &Arc<std::sync::Mutex<rusqlite::Connection>>,
    dao_id: &str,
    out: Batches,
    chunk_rows: usize,
) -> anyhow::Result<()> {
    anyhow::ensure!(chunk_rows > 0, "a chunk holds at least one vote");
    let (conn, dao_id) = (conn.clone(), dao_id.to_owned());
    let runtime = tokio::runtime::Handle::current();
    // Cancelled when this future is dropped (a cancelled build, a server shutting down): the
    // thread stops at its next batch instead of reading the DAO to its end, which a runtime
    // shutting down would wait for.
    let stop = tokio_util::sync::CancellationToken::new();
    let dropped = stop.clone().drop_guard();
    let reading = tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        let conn = conn.lock().map_err(|_| anyhow::anyhow!("the export view's SQLite connection was poisoned"))?;
        let send = |batch: Batch| {
            anyhow::ensure!(!stop.is_cancelled(), "the votes export was cancelled");
            runtime.block_on(out.send_columns(batch.finish()))
        };
        let list = proposals_query(&dao_id).build(DbBackend::Sqlite);
        let listed: Vec<(i64, String, String)> = conn
            .prepare(&list.sql)?
            .query_map(rusqlite::params_from_iter(sqlite_values(&list.values).map_err(anyhow::Error::msg)?), |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<Result<_, _>>()?;
        let ids: Vec<i64> = listed.iter().map(|(id, _, _)| *id).collect();
        let proposals: Vec<Proposal<'_>> = listed
            .iter()
            .map(|(_, source, external_id)| Ok(Proposal::new(&dao_id, ProposalSource::parse(source)?, external_id)))
            .collect::<anyhow::Result<_>>()?;
        // Two threads: this one steps SQLite and fills chunks; the other hands each chunk's votes
        // to the batches in voter order and sends them, then gives the chunk back to be filled
        // again. Two chunks, so one is read while the other is handed on.
        let (full, filled) = std::sync::mpsc::sync_channel::<Filled>(1);
        let (emptied, empty) = std::sync::mpsc::channel::<Chunk>();
        for _ in 0..2 {
            emptied.send(Chunk::default())?;
        }
        std::thread::scope(|threads| {
            let handing = threads.spawn(|| {
                let emptied = emptied;
                hand_on(filled, |chunk| emptied.send(chunk).is_ok(), &proposals, send)
            });
            let read = read_chunks(&conn, &ids, chunk_rows, &full, &empty);
            drop(full);
            let handed = handing.join().map_err(|_| anyhow::anyhow!("the votes export's batches panicked"))?;
            // The reader's own error first: the other thread only saw it stop. The reader stops
            // without one when the other thread did.
            read.and(handed)
        })
    });
    let read = reading.await?;
    dropped.disarm();
    read
}

/// What a reader of chunks hands on: a chunk of the votes of the proposal at an index of the
/// export's list, or the end of the votes, after the last chunk.
enum Filled {
    /// In voter order already ([`read_chunks`]).
    Chunk(usize, Chunk),
    /// In the order the table holds them ([`copy_chunks`]), for [`hand_on`] to put in voter order.
    InTableOrder(usize, Chunk),
    End,
}

/// Hands each chunk of `filled` to the batches in voter order, sends each full batch, and gives
/// the chunk back to be filled again; after [`Filled::End`], sends the last batch. Run on a thread
/// of its own beside the reader, which it took this work off (docs/benchmarks.md, "Two threads").
/// Ends with an error when the reader stopped before the end: never a short file.
fn hand_on(
    filled: impl IntoIterator<Item = Filled>,
    give_back: impl Fn(Chunk) -> bool,
    proposals: &[Proposal<'_>],
    send: impl Fn(Batch) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut batch = Batch::new();
    for message in filled {
        let (at, chunk) = match message {
            Filled::Chunk(at, chunk) => (at, chunk),
            Filled::InTableOrder(at, mut chunk) => {
                chunk.order_by_voter();
                (at, chunk)
            }
            Filled::End => return send(batch),
        };
        let proposal = proposals.get(at).ok_or_else(|| anyhow::anyhow!("a chunk of no proposal listed ({at})"))?;
        for vote in 0..chunk.read_at.len() {
            batch.push(proposal, &chunk.vote(vote));
            if batch.rows == BATCH_ROWS as usize {
                send(std::mem::replace(&mut batch, Batch::new()))?;
            }
        }
        // The reader may have stopped already (an error of its own), and with it the way back.
        let _ = give_back(chunk);
    }
    anyhow::bail!("the votes export's reader stopped before its end")
}

/// Fills the chunks of `empty` with the votes of `proposals` (ids, in the export's order), in
/// chunks of at most `chunk_rows`, and hands each to `full`; then [`Filled::End`]. Returns early,
/// and without an error of its own, when the thread handing the chunks on stopped: its error is
/// the cause.
fn read_chunks(
    conn: &rusqlite::Connection,
    proposals: &[i64],
    chunk_rows: usize,
    full: &std::sync::mpsc::SyncSender<Filled>,
    empty: &std::sync::mpsc::Receiver<Chunk>,
) -> anyhow::Result<()> {
    // Prepared once for the whole export: a proposal's ids, and a chunk's rows by id or by range.
    let mut ids = prepared(conn, voter_ordered_ids(0), 1)?;
    let mut rows = Rows { by_id: prepared(conn, by_id(0), 1)?, in_range: prepared(conn, in_id_range(0, 0), 2)? };
    // The first chunk is small: nothing has measured a vote's bytes yet, and a chunk of
    // `chunk_rows` votes with long reasons would hold many times `CHUNK_BYTES`.
    let mut take = chunk_rows.min(FIRST_TAKE);
    for (at, id) in proposals.iter().enumerate() {
        let mut in_voter_order = ids.query([*id])?;
        loop {
            let Ok(mut chunk) = empty.recv() else { return Ok(()) };
            chunk.ids.clear();
            while chunk.ids.len() < take {
                let Some(row) = in_voter_order.next()? else { break };
                chunk.ids.push(row.get(0)?);
            }
            let last = chunk.ids.len() < take;
            chunk.fetch(&mut rows)?;
            take = chunk.next_take(chunk_rows, std::mem::size_of::<(i64, u32)>());
            if full.send(Filled::Chunk(at, chunk)).is_err() {
                return Ok(());
            }
            if last {
                break;
            }
        }
    }
    // Sent or not, the other thread says how the export ended.
    let _ = full.send(Filled::End);
    Ok(())
}

/// The most votes a [`Chunk`] of the SQLite reader holds as a build reads: four pages, so a
/// proposal of up to that many votes is read by one walk of its id range (when its votes were
/// written together), and a larger one's chunks walk while they hold enough of its range
/// ([`RANGE_SPREAD_TENTHS`]). On the 10M-vote `synth` store the 26 proposals past one page held
/// 56 % of the votes, and chunks of one page sought every one of them vote by vote
/// (docs/benchmarks.md, "Chunks of four pages"). Two chunks are held at a time, each at most
/// [`CHUNK_BYTES`] after the first.
pub const CHUNK_ROWS: usize = 4 * PAGE_ROWS as usize;
/// The votes an export's first [`Chunk`] takes, before any chunk has measured a vote's bytes.
const FIRST_TAKE: usize = 4_096;
/// A [`Chunk`] walks its votes' id range instead of seeking each when the range holds at most
/// this many tenths of its votes (its own and others'). On the 10M-vote `synth` store SQLite read
/// a row by walking in about half a seek's time and passed over one in a fifth
/// (docs/benchmarks.md, "What did not move the SQLite export"), so a walk costs less than the seeks up to about 3.6
/// rows of the range per vote kept; 2.5 keeps a margin, and takes both halves of a proposal of
/// two chunks, each of which spans the whole proposal.
const RANGE_SPREAD_TENTHS: u64 = 25;
/// The bytes a [`Chunk`] is sized to hold (its votes' values and its own entries per vote), after
/// the first [`FIRST_TAKE`] votes: a DAO whose votes carry long reasons is read in fewer votes at a
/// time, so the reader's memory stays about twice this. A `synth` vote takes about 125 bytes, so
/// [`CHUNK_ROWS`] of them fit.
const CHUNK_BYTES: usize = 40 << 20;

/// [`read_sqlite_in_chunks`]' statement of a proposal's vote ids, in voter order: the natural
/// key's index alone (it ends with the row id), read in order, with no table read and no sort.
pub fn voter_ordered_ids(proposal_id: i64) -> Select<vote::Entity> {
    vote::Entity::find()
        .select_only()
        .column(vote::Column::Id)
        .filter(vote::Column::ProposalId.eq(proposal_id))
        .order_by_asc(vote::Column::Voter)
}

/// [`read_sqlite_in_chunks`]' statement of one vote's exported columns, by its row id.
fn by_id(id: i64) -> Select<vote::Entity> {
    exported(vote::Entity::find()).filter(vote::Column::Id.eq(id))
}

/// [`read_sqlite_in_chunks`]' statement of the exported columns and the id of every vote whose id
/// is from `first` to `last`, in id order: a walk of the table itself, no index.
fn in_id_range(first: i64, last: i64) -> Select<vote::Entity> {
    use vote::Column as V;
    exported(vote::Entity::find()).column(V::Id).filter(V::Id.between(first, last)).order_by_asc(V::Id)
}

/// The two ways a [`Chunk`] reads its votes' rows, prepared once for the whole export.
struct Rows<'c> {
    /// One vote by its id ([`by_id`]).
    by_id: rusqlite::Statement<'c>,
    /// The votes of an id range, the chunk's among them ([`in_id_range`]).
    in_range: rusqlite::Statement<'c>,
}

/// `select` built for SQLite and prepared on `conn`, checked to bind `values` values.
fn prepared<'c>(
    conn: &'c rusqlite::Connection,
    select: Select<vote::Entity>,
    values: usize,
) -> anyhow::Result<rusqlite::Statement<'c>> {
    let built = select.build(DbBackend::Sqlite);
    let stmt = conn.prepare(&built.sql)?;
    anyhow::ensure!(stmt.parameter_count() == values, "the votes export binds {values} in {}", built.sql);
    Ok(stmt)
}

/// Up to a chunk's worth of one proposal's votes, read as the store reads them fastest.
///
/// A proposal's votes lie in the table in the order they were written and are exported in voter
/// order, so read one by one in that order each vote reads a table page its neighbour did not
/// (issue 49; docs/benchmarks.md, "The votes in chunks"). On SQLite a chunk takes the next ids in
/// voter order from the natural key's index, reads their rows in id order (the table's order:
/// neighbours share pages, each page read once a chunk; a walk of the id range when the chunk's
/// votes were written together), keeps their values in that order, and hands them back in voter
/// order. On PostgreSQL it is a range of voters, copied in the table's order and sorted by voter
/// ([`Chunk::copy`], [`Chunk::order_by_voter`]). The same votes in the same order, so the same
/// file; memory bounded by the chunk, whatever the proposal holds.
#[derive(Default)]
struct Chunk {
    /// The chunk's vote ids, in voter order (SQLite's; a copied chunk has none).
    ids: Vec<i64>,
    /// Each vote's id and its position in `ids`, sorted by id: the order the rows are seeked in.
    by_id: Vec<(i64, u32)>,
    /// Each vote's first bytes of address and its position in `kept`, sorted: the voter order
    /// of votes copied in the table's order ([`Chunk::order_by_voter`]).
    by_voter: Vec<(u128, u32)>,
    /// For each id of the range a walk reads (its first id at 0), the position in `ids` of the
    /// vote of that id, or [`ABSENT`]: a walk keeps the rows whose slot is set, so the ids need no
    /// sort into the table's order.
    slots: Vec<u32>,
    /// Each vote's values, in the order they were read (id order, or a `COPY`'s): written one
    /// after another, so the reading thread writes its memory in order
    /// (docs/benchmarks.md, "Kept in the order read").
    kept: Vec<Kept>,
    /// For each position in voter order, where its vote is in `kept`.
    read_at: Vec<u32>,
    /// The votes' addresses, and their text values, each vote's one after another.
    voters: Vec<u8>,
    text: String,
}

/// A [`Chunk`]'s slot of an id its walk reads but the chunk does not hold.
const ABSENT: u32 = u32::MAX;

/// A text value's length in [`Kept::lens`] when it is null.
const NULL: u32 = u32::MAX;

/// One vote's exported columns: its address at `voter_at` of its [`Chunk`]'s `voters`, and its
/// text values one after another from `text_at` of its `text`, of the lengths of `lens` (choice,
/// voting power, reason, tx hash, IPFS hash; [`NULL`] for a null).
struct Kept {
    voter_at: usize,
    text_at: usize,
    voter_len: u32,
    lens: [u32; 5],
    created_ms: i64,
    /// The block number and whether there is one, rather than an `Option<i64>`: the flag packs
    /// beside `vp_from_float`, so a `Kept` is 64 bytes, not 72.
    block_number: i64,
    has_block_number: bool,
    vp_from_float: bool,
}

const _: () = assert!(std::mem::size_of::<Kept>() == 64);

impl Chunk {
    /// Reads the values of the votes of `ids`, in id order: by walking their id range when it
    /// holds at most [`RANGE_SPREAD_TENTHS`] tenths as many votes as the chunk (a proposal whose votes
    /// were written together: a table walk reads a row for a fraction of a seek's cost), else by
    /// seeking each id.
    fn fetch(&mut self, rows: &mut Rows<'_>) -> anyhow::Result<()> {
        let Self { ids, by_id, slots, kept, read_at, voters, text, .. } = self;
        kept.clear();
        read_at.clear();
        read_at.resize(ids.len(), 0);
        voters.clear();
        text.clear();
        let (Some(&first), Some(&last)) = (ids.iter().min(), ids.iter().max()) else { return Ok(()) };
        let mut keep = |row: &rusqlite::Row<'_>, at: u32| -> anyhow::Result<()> {
            read_at[at as usize] = u32::try_from(kept.len())?;
            kept.push(Kept::of(&VoteRow::stepped(row)?, voters, text)?);
            Ok(())
        };
        let spread = u64::try_from(ids.len()).unwrap_or(u64::MAX).saturating_mul(RANGE_SPREAD_TENTHS) / 10;
        if last.abs_diff(first) < spread {
            // Under `spread`, so the range's slots fit in memory as the chunk's own votes do.
            let slot = |id: i64| usize::try_from(id.abs_diff(first)).ok();
            slots.clear();
            slots.resize(slot(last).map_or(0, |last| last + 1), ABSENT);
            for (&id, at) in ids.iter().zip(0u32..) {
                if let Some(s) = slot(id).and_then(|s| slots.get_mut(s)) {
                    *s = at;
                }
            }
            let mut walked = rows.in_range.query([first, last])?;
            let mut found = 0;
            while let Some(row) = walked.next()? {
                // The id follows the exported columns; the walk holds the range only.
                let id: i64 = row.get(EXPORTED.len())?;
                let Some(s) = slot(id).and_then(|s| slots.get_mut(s)) else { continue };
                if *s != ABSENT {
                    keep(row, std::mem::replace(s, ABSENT))?;
                    found += 1;
                }
            }
            if found != ids.len() {
                // A slot still set is a vote the walk did not find.
                let missing = ids.iter().find(|&&id| slot(id).and_then(|s| slots.get(s)).is_some_and(|&s| s != ABSENT));
                anyhow::bail!("vote {} left the export's view", missing.copied().unwrap_or(first));
            }
            return Ok(());
        }
        by_id.clear();
        by_id.extend(ids.iter().zip(0u32..).map(|(&id, at)| (id, at)));
        by_id.sort_unstable();
        for &(id, at) in by_id.iter() {
            let mut found = rows.by_id.query([id])?;
            let row = found.next()?.ok_or_else(|| anyhow::anyhow!("vote {id} left the export's view"))?;
            keep(row, at)?;
        }
        Ok(())
    }

    /// The vote at position `at` (voter order).
    fn vote(&self, at: usize) -> VoteRow<'_> {
        let k = &self.kept[self.read_at[at] as usize];
        let mut from = k.text_at;
        let mut next = |len: u32| {
            (len != NULL).then(|| {
                let value = &self.text[from..from + len as usize];
                from += len as usize;
                value
            })
        };
        let [choice, voting_power, reason, tx_hash, ipfs] = k.lens.map(&mut next);
        VoteRow {
            voter: &self.voters[k.voter_at..k.voter_at + k.voter_len as usize],
            choice: choice.unwrap_or_default(),
            voting_power: voting_power.unwrap_or_default(),
            vp_from_float: k.vp_from_float,
            reason,
            created_ms: k.created_ms,
            tx_hash,
            block_number: k.has_block_number.then_some(k.block_number),
            ipfs,
        }
    }

    /// How many votes the next chunk takes: as many as [`CHUNK_BYTES`] holds at this chunk's
    /// bytes per vote, at least one and at most `most`. `entry`: the bytes of the entry per vote
    /// the reader orders its votes by (an id's for [`Chunk::fetch`], a voter's for
    /// [`Chunk::order_by_voter`]).
    fn next_take(&self, most: usize, entry: usize) -> usize {
        let Some(per_vote) = (self.voters.len() + self.text.len()).checked_div(self.kept.len()) else {
            return most;
        };
        // Each vote's values, its `Kept`, its ordering entry (for `fetch`, more than a walk's two
        // and a half slots) and its `read_at` entry.
        let per_vote = per_vote + std::mem::size_of::<Kept>() + entry + std::mem::size_of::<u32>();
        (CHUNK_BYTES / per_vote).clamp(1, most)
    }

    /// Keeps the votes of one `COPY` of the table, in the order it sends them, in place of the
    /// chunk's last ones.
    async fn copy(&mut self, conn: &mut PgConnection, statement: &str) -> anyhow::Result<()> {
        let Self { ids, kept, read_at, voters, text, .. } = self;
        ids.clear();
        kept.clear();
        read_at.clear();
        voters.clear();
        text.clear();
        let mut copied = conn.copy_out_raw(statement).await?;
        let mut tuples = Tuples::<{ EXPORTED.len() }>::default();
        while let Some(message) = copied.try_next().await? {
            tuples.feed(&message);
            while let Some(fields) = tuples.next_tuple()? {
                kept.push(Kept::of(&VoteRow::copied(&fields)?, voters, text)?);
            }
        }
        anyhow::ensure!(tuples.ended(), "the votes' COPY ended before its trailer: {statement}");
        Ok(())
    }

    /// Puts the votes kept in voter order ([`Chunk::vote`] reads them so): sorts each vote's
    /// first 16 bytes of address, as a number, and its position, comparing whole addresses only
    /// where those are equal. The order is bytea's in PostgreSQL (and a byte slice's in Rust):
    /// byte by byte, a prefix first, so the natural key's index's, and the file's.
    fn order_by_voter(&mut self) {
        let Self { by_voter, kept, read_at, voters, .. } = self;
        let voter = |at: u32| {
            let k = &kept[at as usize];
            &voters[k.voter_at..k.voter_at + k.voter_len as usize]
        };
        by_voter.clear();
        by_voter.extend((0..kept.len()).map(|at| {
            // Kept's positions fit in u32: `read_at` holds them so.
            let at = at as u32;
            let mut first = [0u8; 16];
            let address = voter(at);
            let n = address.len().min(first.len());
            first[..n].copy_from_slice(&address[..n]);
            (u128::from_be_bytes(first), at)
        }));
        by_voter.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| voter(a.1).cmp(voter(b.1))));
        read_at.clear();
        read_at.extend(by_voter.iter().map(|&(_, at)| at));
    }
}

impl Kept {
    /// `v`'s values appended to `voters` and `text`, and where they are there.
    fn of(v: &VoteRow<'_>, voters: &mut Vec<u8>, text: &mut String) -> anyhow::Result<Self> {
        let (voter_at, text_at) = (voters.len(), text.len());
        voters.extend_from_slice(v.voter);
        let mut keep = |s: Option<&str>| -> anyhow::Result<u32> {
            let Some(s) = s else { return Ok(NULL) };
            text.push_str(s);
            u32::try_from(s.len())
                .ok()
                .filter(|&len| len != NULL)
                .ok_or_else(|| anyhow::anyhow!("a vote's text of {} bytes", s.len()))
        };
        Ok(Self {
            voter_at,
            text_at,
            voter_len: u32::try_from(v.voter.len())?,
            lens: [
                keep(Some(v.choice))?,
                keep(Some(v.voting_power))?,
                keep(v.reason)?,
                keep(v.tx_hash)?,
                keep(v.ipfs)?,
            ],
            created_ms: v.created_ms,
            block_number: v.block_number.unwrap_or_default(),
            has_block_number: v.block_number.is_some(),
            vp_from_float: v.vp_from_float,
        })
    }
}

/// What every vote of one proposal repeats.
struct Proposal<'a> {
    dao_id: &'a str,
    key: String,
    source: &'static str,
    external_id: &'a str,
    onchain: bool,
}

impl<'a> Proposal<'a> {
    fn new(dao_id: &'a str, source: ProposalSource, external_id: &'a str) -> Self {
        Self {
            dao_id,
            key: keys::proposal_key(dao_id, source.as_str(), external_id),
            source: source.as_str(),
            external_id,
            onchain: source == ProposalSource::Onchain,
        }
    }
}

/// One vote's exported columns, borrowed from the driver's row.
struct VoteRow<'r> {
    voter: &'r [u8],
    choice: &'r str,
    voting_power: &'r str,
    vp_from_float: bool,
    reason: Option<&'r str>,
    created_ms: i64,
    tx_hash: Option<&'r str>,
    block_number: Option<i64>,
    ipfs: Option<&'r str>,
}

impl<'r> VoteRow<'r> {
    fn of(r: &'r QueryResult) -> anyhow::Result<Self> {
        if let Some(row) = r.try_as_pg_row() {
            return Ok(Self::decode(row)?);
        }
        if let Some(row) = r.try_as_sqlite_row() {
            return Ok(Self::decode(row)?);
        }
        anyhow::bail!("the votes export reads PostgreSQL and SQLite rows only")
    }

    /// From a tuple of the votes' `COPY`, in [`select`]'s column order.
    fn copied(fields: &binary_copy::Fields<'r, { EXPORTED.len() }>) -> anyhow::Result<Self> {
        let [voter, choice, voting_power, vp_from_float, reason, created_ms, tx_hash, block_number, ipfs] = *fields;
        let required = |f: Option<&'r [u8]>, name: &str| f.ok_or_else(|| anyhow::anyhow!("a vote without {name}"));
        Ok(Self {
            voter: required(voter, "voter")?,
            choice: binary_copy::text(required(choice, "choice")?)?,
            voting_power: binary_copy::text(required(voting_power, "voting_power")?)?,
            vp_from_float: binary_copy::boolean(required(vp_from_float, "vp_from_float")?)?,
            reason: reason.map(binary_copy::text).transpose()?,
            created_ms: binary_copy::int8(required(created_ms, "created_ms")?)?,
            tx_hash: tx_hash.map(binary_copy::text).transpose()?,
            block_number: block_number.map(binary_copy::int8).transpose()?,
            ipfs: ipfs.map(binary_copy::text).transpose()?,
        })
    }

    /// From a row of the votes' statement stepped by rusqlite, in [`select`]'s column order.
    fn stepped(row: &'r rusqlite::Row<'r>) -> rusqlite::Result<Self> {
        let text = |i| row.get_ref(i)?.as_str().map_err(rusqlite::Error::from);
        let text_or_null = |i| row.get_ref(i)?.as_str_or_null().map_err(rusqlite::Error::from);
        Ok(Self {
            voter: row.get_ref(0)?.as_blob()?,
            choice: text(1)?,
            voting_power: text(2)?,
            vp_from_float: row.get(3)?,
            reason: text_or_null(4)?,
            created_ms: row.get(5)?,
            tx_hash: text_or_null(6)?,
            block_number: row.get(7)?,
            ipfs: text_or_null(8)?,
        })
    }

    fn decode<R: Row>(row: &'r R) -> Result<Self, sqlx::Error>
    where
        usize: sqlx::ColumnIndex<R>,
        &'r str: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        &'r [u8]: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        bool: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    {
        Ok(Self {
            voter: row.try_get(0)?,
            choice: row.try_get(1)?,
            voting_power: row.try_get(2)?,
            vp_from_float: row.try_get(3)?,
            reason: row.try_get(4)?,
            created_ms: row.try_get(5)?,
            tx_hash: row.try_get(6)?,
            block_number: row.try_get(7)?,
            ipfs: row.try_get(8)?,
        })
    }
}

/// The votes of one batch, as the Arrow arrays of `VOTES`' columns.
struct Batch {
    rows: usize,
    dao_id: StringBuilder,
    proposal_key: StringBuilder,
    proposal_source: StringBuilder,
    proposal_external_id: StringBuilder,
    voter: StringBuilder,
    choice: StringBuilder,
    voting_power: StringBuilder,
    voting_power_from_float: BooleanBuilder,
    voting_power_wei: StringBuilder,
    reason: StringBuilder,
    created_at: TimestampMillisecondBuilder,
    tx_hash: StringBuilder,
    block_number: Int64Builder,
    ipfs: StringBuilder,
}

fn text() -> StringBuilder {
    StringBuilder::with_capacity(BATCH_ROWS as usize, BATCH_ROWS as usize * ADDRESS_TEXT)
}

impl Batch {
    fn new() -> Self {
        let rows = BATCH_ROWS as usize;
        Self {
            rows: 0,
            dao_id: text(),
            proposal_key: text(),
            proposal_source: text(),
            proposal_external_id: text(),
            voter: text(),
            choice: text(),
            voting_power: text(),
            voting_power_from_float: BooleanBuilder::with_capacity(rows),
            voting_power_wei: text(),
            reason: text(),
            created_at: timestamps(rows),
            tx_hash: text(),
            block_number: Int64Builder::with_capacity(rows),
            ipfs: text(),
        }
    }

    fn push(&mut self, p: &Proposal<'_>, v: &VoteRow<'_>) {
        self.dao_id.append_value(p.dao_id);
        self.proposal_key.append_value(&p.key);
        self.proposal_source.append_value(p.source);
        self.proposal_external_id.append_value(p.external_id);
        let mut address = [0u8; ADDRESS_TEXT];
        match lower(v.voter, &mut address) {
            Some(text) => self.voter.append_value(text),
            None => self.voter.append_value(AccountBytes(v.voter.to_vec()).lower()),
        }
        self.choice.append_value(v.choice);
        self.voting_power.append_value(v.voting_power);
        self.voting_power_from_float.append_value(v.vp_from_float);
        self.voting_power_wei.append_option(p.onchain.then_some(v.voting_power));
        self.reason.append_option(v.reason);
        self.created_at.append_value(v.created_ms);
        self.tx_hash.append_option(v.tx_hash);
        self.block_number.append_option(v.block_number);
        self.ipfs.append_option(v.ipfs);
        self.rows += 1;
    }

    /// The arrays, in `VOTES`' column order.
    fn finish(mut self) -> Columns {
        let arrays: [ArrayRef; 14] = [
            Arc::new(self.dao_id.finish()),
            Arc::new(self.proposal_key.finish()),
            Arc::new(self.proposal_source.finish()),
            Arc::new(self.proposal_external_id.finish()),
            Arc::new(self.voter.finish()),
            Arc::new(self.choice.finish()),
            Arc::new(self.voting_power.finish()),
            Arc::new(self.voting_power_from_float.finish()),
            Arc::new(self.voting_power_wei.finish()),
            Arc::new(self.reason.finish()),
            Arc::new(self.created_at.finish()),
            Arc::new(self.tx_hash.finish()),
            Arc::new(self.block_number.finish()),
            Arc::new(self.ipfs.finish()),
        ];
        arrays.into()
    }
}

/// `bytes` as `AccountBytes::lower` writes them (`0x` and lowercase hex), in `buf`; `None` for
/// more bytes than an account holds.
fn lower<'b>(bytes: &[u8], buf: &'b mut [u8; ADDRESS_TEXT]) -> Option<&'b str> {
    let out = buf.get_mut(..2 + 2 * bytes.len())?;
    out[..2].copy_from_slice(b"0x");
    hex::encode_to_slice(bytes, &mut out[2..]).ok()?;
    std::str::from_utf8(out).ok()
}
