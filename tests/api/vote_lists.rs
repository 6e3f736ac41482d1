//! A proposal's votes in power and time order, unfiltered and by choice. On PostgreSQL the
//! unfiltered orders are merged from one walk per choice (`store::vote_arms`, migration 23): every
//! page must still be exactly the proposal's order, across choices in and out of the merged set,
//! with ties broken by voter across arms.
use govdata::contract::decimal;
use govdata::store::{self, vote_arms};
use sea_orm::{ConnectionTrait, DbBackend, Statement, TransactionTrait};

use crate::fixtures::stores::insert_mixed_choices;
use crate::helpers::{Backend, TestApp, fresh_database, spawn_app_on};
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
    let url = fresh_database(backend).await;
    let db = store::connect(&url).await.unwrap();
    govdata::sample::import_if_empty(&db).await.unwrap();
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
    let url = fresh_database(Backend::Postgres).await;
    let db = store::connect(&url).await.unwrap();
    govdata::sample::import_if_empty(&db).await.unwrap();
    for (order, partial) in [
        (store::proposals::VoteOrder::Power, "ix_votes_proposal_power"),
        (store::proposals::VoteOrder::Time, "ix_votes_proposal_time"),
    ] {
        let statement = vote_arms::statement(DbBackend::Postgres, 1, Default::default(), order, None, 101, true);
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
