//! A proposal's votes in power and time order, unfiltered and by choice. On PostgreSQL the
//! unfiltered orders are merged from one walk per choice (`store::vote_arms`, migration 23): every
//! page must still be exactly the proposal's order, across choices in and out of the merged set,
//! with ties broken by voter across arms.
use govdata::contract::decimal;
use govdata::store::address::AccountBytes;
use govdata::store::keysets::TimeAfter;
use govdata::store::proposals::VoteOrder;
use govdata::store::{self, vote_arms};
use sea_orm::{ConnectionTrait, DbBackend, Statement, TransactionTrait};

use crate::fixtures::stores::{insert_mixed_choices, insert_tied_times};
use crate::helpers::{Backend, TestApp, fresh_sample_database, spawn_app_on};
use crate::on_both_backends;

/// `(voter, choice, power, created_ms)`.
type Vote = (String, String, String, i64);

/// Every row of `path` (a list of the proposal's votes), page by page, as `(voter, choice)`.
async fn walk(app: &TestApp, path: &str) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page_path = match &cursor {
            Some(c) => format!("{path}&cursor={c}"),
            None => path.to_owned(),
        };
        let (status, body) = app.get_json(&page_path).await;
        assert_eq!(status, 200, "{page_path}: {body:#}");
        for v in body["data"]["items"].as_array().unwrap() {
            rows.push((v["voterIdentity"].as_str().unwrap().to_owned(), v["choice"].as_str().unwrap().to_owned()));
        }
        match body["meta"]["page"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return rows,
        }
    }
}

/// The votes in the API's power order (exact power descending, then voter) or time order
/// (newest first; the fixture's times are distinct).
fn expected(votes: &[Vote], by_power: bool) -> Vec<(String, String)> {
    let mut sorted = votes.to_vec();
    if by_power {
        sorted.sort_by(|a, b| {
            decimal::parse(&b.2).unwrap().cmp(&decimal::parse(&a.2).unwrap()).then_with(|| a.0.cmp(&b.0))
        });
    } else {
        sorted.sort_by_key(|v| std::cmp::Reverse(v.3));
    }
    sorted.into_iter().map(|(voter, choice, _, _)| (voter, choice)).collect()
}

on_both_backends!(pages_keep_the_order_across_every_choice, |backend: Backend| async move {
    let url = fresh_sample_database(backend).await;
    let db = store::connect(&url).await.unwrap();
    let (key, votes) = insert_mixed_choices(&db).await;
    db.close().await.ok();
    let app = spawn_app_on(url).await;

    for (sort, by_power) in [("power", true), ("time", false)] {
        let want = expected(&votes, by_power);
        for limit in [1, 4, 7, 100] {
            let got = walk(&app, &format!("/v2/proposals/{key}/votes?sort={sort}&limit={limit}")).await;
            assert_eq!(got, want, "sort={sort}, limit={limit}");
        }
        for choice in ["1", "5", "6", "12", "[1,2]", "{'1': 1, '2': 3}"] {
            let want: Vec<_> = want.iter().filter(|(_, c)| c == choice).cloned().collect();
            assert!(!want.is_empty(), "the fixture votes {choice}");
            let encoded = percent_encoding::utf8_percent_encode(choice, percent_encoding::NON_ALPHANUMERIC).to_string();
            let got = walk(&app, &format!("/v2/proposals/{key}/votes?sort={sort}&choice={encoded}&limit=2")).await;
            assert_eq!(got, want, "sort={sort}, choice={choice}");
        }
    }

    // v1 evidence's largest votes are the head of the power order.
    let (status, body) = app.get_json("/v1/daos/uniswap/proposals/onchain/4141/evidence").await;
    assert_eq!(status, 200, "{body:#}");
    let largest: Vec<(String, String)> = body["data"]["largestVotes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["voterIdentity"].as_str().unwrap().to_owned(), v["choice"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(largest, expected(&votes, true)[..largest.len()], "{body:#}");
    assert_eq!(largest.len(), 10);
});

// Votes cast at the same time come newest id first, across the arms of the merged time order
// and inside one choice's walk (SQLite's time indexes end with the row id, migration 35).
on_both_backends!(equal_times_follow_the_id_across_every_choice, |backend: Backend| async move {
    let url = fresh_sample_database(backend).await;
    let db = store::connect(&url).await.unwrap();
    let (key, mut votes) = insert_tied_times(&db).await;
    db.close().await.ok();
    let app = spawn_app_on(url).await;

    votes.sort_by_key(|v| std::cmp::Reverse((v.2, v.3)));
    let want: Vec<(String, String)> = votes.iter().map(|v| (v.0.clone(), v.1.clone())).collect();
    assert_ne!(
        want,
        {
            let mut by_insertion = votes.clone();
            by_insertion.sort_by_key(|v| std::cmp::Reverse(v.3));
            by_insertion.into_iter().map(|v| (v.0, v.1)).collect::<Vec<_>>()
        },
        "the times, not the ids alone, decide the order"
    );
    for limit in [1, 3, 7, 100] {
        let got = walk(&app, &format!("/v2/proposals/{key}/votes?sort=time&limit={limit}")).await;
        assert_eq!(got, want, "limit={limit}");
    }
    for choice in ["1", "6", "[1,2]"] {
        let want: Vec<_> = want.iter().filter(|(_, c)| c == choice).cloned().collect();
        assert!(want.len() > 3, "the fixture votes {choice} at every time");
        let encoded = percent_encoding::utf8_percent_encode(choice, percent_encoding::NON_ALPHANUMERIC).to_string();
        let got = walk(&app, &format!("/v2/proposals/{key}/votes?sort=time&choice={encoded}&limit=2")).await;
        assert_eq!(got, want, "choice={choice}");
    }
});

/// SQLite's plan of `statement` (`EXPLAIN QUERY PLAN`), one step a line.
pub(crate) async fn sqlite_plan(db: &sea_orm::DatabaseConnection, statement: Statement) -> String {
    let explain = Statement::from_sql_and_values(
        DbBackend::Sqlite,
        format!("EXPLAIN QUERY PLAN {}", statement.sql),
        statement.values.map(|v| v.0).unwrap_or_default(),
    );
    let rows = db.query_all_raw(explain).await.unwrap();
    rows.iter().map(|r| r.try_get::<String>("", "detail").unwrap()).collect::<Vec<_>>().join("\n")
}

// Every walk of a proposal's votes and of a voter's history on SQLite reads its rows in the
// list's order from indexes: nothing sorts a page (no temp B-tree) and nothing scans the votes,
// whatever the order, the filter or the position. The unfiltered time order is a merge of the
// choice + time index's walks and the others' partial index (migration 35); the history merges
// its DAOs' runs of the voter index.
#[tokio::test]
async fn sqlite_walks_read_indexes_in_order() {
    let url = fresh_sample_database(Backend::Sqlite).await;
    let db = store::connect(&url).await.unwrap();
    let voter = AccountBytes::parse("0x683a4F9915D6216f73d6Df50151725036bD26C02").unwrap();
    let time = vote_arms::Position::Time(TimeAfter { ms: 1_700_000_000_000, id: 5_000 });
    let power = vote_arms::Position::Power("2015".to_owned(), voter.clone());
    let filters = [
        vote_arms::Filter::default(),
        vote_arms::Filter { choice: Some("1"), voter: None },
        vote_arms::Filter { choice: Some("[1,2]"), voter: None },
        vote_arms::Filter { choice: None, voter: Some(&voter) },
    ];
    let sorted = |plan: &str| plan.contains("TEMP B-TREE") || plan.contains("SCAN votes");
    for (order, position) in [(VoteOrder::Power, power), (VoteOrder::Time, time)] {
        for filter in filters {
            for after in [None, Some(position.clone())] {
                let statement = vote_arms::statement(
                    DbBackend::Sqlite,
                    1,
                    filter,
                    order,
                    after.clone(),
                    101,
                    vote_arms::Read::Page,
                );
                let plan = sqlite_plan(&db, statement).await;
                assert!(!sorted(&plan), "{order:?}, {filter:?}, {after:?}:\n{plan}");
            }
        }
        let plan = sqlite_plan(
            &db,
            vote_arms::statement(
                DbBackend::Sqlite,
                1,
                Default::default(),
                order,
                Some(position),
                101,
                vote_arms::Read::Page,
            ),
        )
        .await;
        match order {
            VoteOrder::Time => {
                assert!(plan.contains("MERGE (UNION ALL)"), "{plan}");
                let arms = plan.matches("USING INDEX ix_votes_proposal_choice_time (").count();
                assert_eq!(arms, vote_arms::MERGED_CHOICES.len(), "{plan}");
                assert!(plan.contains("USING INDEX ix_votes_proposal_time ("), "{plan}");
            }
            VoteOrder::Power => assert!(plan.contains("USING INDEX ix_votes_proposal_power ("), "{plan}"),
        }
    }

    let daos = ["uniswap", "aave", "arbitrum"].map(str::to_owned);
    for arms in [&daos[..1], &daos[..]] {
        for after in [None, Some(TimeAfter { ms: 1_700_000_000_000, id: 5_000 })] {
            for window in [None, Some((1_600_000_000_000, 1_800_000_000_000))] {
                let statement =
                    store::voters::newest_keys_statement(DbBackend::Sqlite, &voter, arms, window, after.as_ref(), 21);
                let plan = sqlite_plan(&db, statement).await;
                assert!(!sorted(&plan), "{} DAOs, {after:?}, {window:?}:\n{plan}", arms.len());
                let walks = plan.matches("USING COVERING INDEX ix_votes_voter_dao_time (").count();
                assert_eq!(walks, arms.len(), "{plan}");
            }
        }
    }
    db.close().await.ok();
}

/// The plan of `statement` (planned with sequential scans and sorts priced out, so that each
/// arm takes the index that can serve it when there is one), as text.
async fn plan(db: &sea_orm::DatabaseConnection, statement: Statement) -> String {
    let txn = db.begin().await.unwrap();
    txn.execute_unprepared("SET LOCAL enable_seqscan = off").await.unwrap();
    txn.execute_unprepared("SET LOCAL enable_sort = off").await.unwrap();
    let explain = Statement::from_sql_and_values(
        DbBackend::Postgres,
        format!("EXPLAIN {}", statement.sql),
        statement.values.map(|v| v.0).unwrap_or_default(),
    );
    let rows = txn.query_all_raw(explain).await.unwrap();
    txn.rollback().await.unwrap();
    rows.iter().map(|r| r.try_get::<String>("", "QUERY PLAN").unwrap()).collect::<Vec<_>>().join("\n")
}

// Migration 23's partial indexes are declared with `vote_arms::others_sql()`, and the arm that
// reads them must prove their predicate: each order is one ordered merge of index walks, the
// others' arm on its partial index, nothing sorted and nothing scanned whole.
#[tokio::test]
async fn postgres_pages_read_each_arm_by_its_index() {
    if !crate::helpers::require(Backend::Postgres) {
        return;
    }
    let url = fresh_sample_database(Backend::Postgres).await;
    let db = store::connect(&url).await.unwrap();
    for (order, partial) in [(VoteOrder::Power, "ix_votes_proposal_power"), (VoteOrder::Time, "ix_votes_proposal_time")]
    {
        let statement =
            vote_arms::statement(DbBackend::Postgres, 1, Default::default(), order, None, 101, vote_arms::Read::Page);
        let plan = plan(&db, statement).await;
        assert!(plan.contains("Merge Append"), "{order:?}: {plan}");
        assert!(plan.contains(&format!("Index Scan using {partial} on votes")), "{order:?}: {plan}");
        assert!(!plan.contains("Seq Scan") && !plan.contains("Sort  "), "{order:?}: {plan}");
        let arms = plan.matches("Index Scan using ix_votes_proposal_choice_").count();
        assert_eq!(arms, vote_arms::MERGED_CHOICES.len(), "{order:?}: {plan}");
    }
    // Nothing reads votes by id on PostgreSQL any more, and the id index is gone.
    let row = db
        .query_one_raw(Statement::from_string(
            DbBackend::Postgres,
            "SELECT COUNT(*) AS n FROM pg_indexes WHERE tablename = 'votes' AND indexdef LIKE '%(id)'",
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.try_get::<i64>("", "n").unwrap(), 0);
    db.close().await.ok();
}

// On SQLite the votes page runs on the store's rusqlite reader (`store::sqlite_reader`): for every
// order, filter and position, it reads exactly what sea-orm reads through the pool, every column
// the page reads (`vote_arms::PAGE_COLUMNS`) and the voter's stored names included (a voter with a
// row and an ENS name, voters without rows).
#[tokio::test]
async fn sqlite_reader_reads_what_the_pool_reads() {
    let url = fresh_sample_database(Backend::Sqlite).await;
    let db = store::connect(&url).await.unwrap();
    let (key, votes) = insert_mixed_choices(&db).await;
    let named = &votes[3].0;
    db.execute_unprepared(&format!(
        "INSERT INTO voters (address, address_display, ens, first_seen_ms) VALUES ('{named}', '{named}', 'named.eth', 1)"
    ))
    .await
    .unwrap();
    db.execute_unprepared(
        "UPDATE votes SET reason = 'because ' || id, ipfs = 'bafy' || id, tx_hash = '0x' || id, block_number = id * 7, \
         vp_from_float = TRUE WHERE id % 3 = 0",
    )
    .await
    .unwrap();
    let reader = store::sqlite_reader::SqliteReader::of(&db).expect("a SQLite file has a reader");
    let proposal = store::proposals::by_key(&db, &key).await.unwrap().unwrap();
    let voter = AccountBytes::parse(named).unwrap();
    for filter in [(None, None), (None, Some("1")), (None, Some("[1,2]")), (Some(&voter), None)] {
        let pooled = every_page(&db, None, proposal.id, filter).await;
        let direct = every_page(&db, Some(&reader), proposal.id, filter).await;
        assert_eq!(direct, pooled, "{filter:?}");
        let rows: Vec<_> = pooled.iter().flatten().collect();
        assert!(!rows.is_empty(), "{filter:?}");
        if filter.1.is_none() {
            // The display form is the voter row's own (written lowercase above), not one made.
            let stored =
                Some(store::voters::StoredNames { display: named.to_owned(), ens: Some("named.eth".to_owned()) });
            assert!(rows.iter().any(|(_, names)| *names == stored), "{filter:?}");
        }
        if filter == (None, None) {
            assert!(rows.iter().any(|(_, names)| names.is_none()), "{filter:?}");
            assert!(rows.iter().any(|(v, _)| v.reason.is_some()), "{filter:?}");
            assert!(rows.iter().any(|(v, _)| v.reason.is_none()), "{filter:?}");
            assert!(rows.iter().any(|(v, _)| v.vp_from_float) && rows.iter().any(|(v, _)| !v.vp_from_float));
        }
    }
    db.close().await.ok();
}

/// Every page of 4 rows, in both orders, of a proposal's votes with `filter` (voter, choice), each
/// page resuming after its third row; through `reader` when given, else through the pool.
async fn every_page(
    db: &sea_orm::DatabaseConnection,
    reader: Option<&store::sqlite_reader::SqliteReader>,
    proposal_id: i64,
    filter: (Option<&AccountBytes>, Option<&str>),
) -> Vec<Vec<(store::proposals::PageVote, Option<store::voters::StoredNames>)>> {
    let mut pages = Vec::new();
    for order in [VoteOrder::Power, VoteOrder::Time] {
        let mut after = None;
        loop {
            let rows = store::proposals::votes(db, reader, proposal_id, filter.0, filter.1, order, after, 4);
            let rows = rows.await.unwrap();
            after = (rows.len() == 4).then(|| rows[2].keyset(order));
            pages.push(rows.into_iter().map(|r| (r.vote, r.names)).collect());
            if after.is_none() {
                break;
            }
        }
    }
    pages
}
