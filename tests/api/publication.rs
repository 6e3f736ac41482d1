//! Incremental publication: a run recomputes only what it touched, a run that changes nothing
//! publishes nothing (cursors and caches stay valid), and after any sequence of runs a full
//! recomputation changes nothing: the incremental result is the full one.
use std::collections::BTreeMap;

use govdata::contract::decimal;
use govdata::ingest::run_once;
use govdata::rules::signals::{ProposalInput, VoteInput, analyse_votes};
use govdata::store::entities::{
    dao_summary, data_revision, governance_event, proposal, proposal_fact, signal, vote, voter_dao_stat,
};
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, Statement};

use crate::fixtures::testgov::{BASE, DAO, big, options, world};
use crate::fixtures::upstreams::HubVote;
use crate::on_both_backends;

/// Everything publication derives, in a comparable form (voter stats are rewritten with new ids,
/// so they are compared by content).
async fn derived(db: &DatabaseConnection) -> String {
    let facts = proposal_fact::Entity::find().order_by_asc(proposal_fact::Column::ProposalId).all(db).await.unwrap();
    let stats: Vec<_> = voter_dao_stat::Entity::find()
        .order_by_asc(voter_dao_stat::Column::DaoId)
        .order_by_asc(voter_dao_stat::Column::Voter)
        .all(db)
        .await
        .unwrap()
        .into_iter()
        .map(|s| (s.dao_id, s.voter, s.votes_cast, s.voting_power, s.vp_sort, s.first_vote_ms, s.last_vote_ms))
        .collect();
    let summaries = dao_summary::Entity::find().order_by_asc(dao_summary::Column::DaoId).all(db).await.unwrap();
    let counts: Vec<(i64, i64)> = proposal::Entity::find()
        .order_by_asc(proposal::Column::Id)
        .all(db)
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.id, p.ingested_vote_count))
        .collect();
    let events = governance_event::Entity::find().order_by_asc(governance_event::Column::Id).all(db).await.unwrap();
    let signals = signal::Entity::find().order_by_asc(signal::Column::Id).all(db).await.unwrap();
    // Each revision's row counts: the voters count is folded by incremental publications.
    let revisions: Vec<_> = data_revision::Entity::find()
        .order_by_asc(data_revision::Column::Id)
        .all(db)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.id, r.voters, r.forum_topics, r.governance_events, r.signals))
        .collect();
    format!("{facts:#?}\n{stats:#?}\n{summaries:#?}\n{counts:?}\n{events:#?}\n{signals:#?}\n{revisions:?}")
}

/// The rules' reference analysis of a proposal, from all its votes in memory.
async fn reference_facts(db: &DatabaseConnection, p: &proposal::Model) -> govdata::rules::signals::VoteFacts {
    let votes: Vec<VoteInput> = vote::Entity::find()
        .filter(vote::Column::ProposalId.eq(p.id))
        .order_by_asc(vote::Column::CreatedMs)
        .order_by_asc(vote::Column::Id)
        .all(db)
        .await
        .unwrap()
        .into_iter()
        .map(VoteInput::from)
        .collect();
    let row = ProposalInput {
        id: p.id,
        dao_id: p.dao_id.clone(),
        source: p.source,
        external_id: p.external_id.clone(),
        title: p.title.clone(),
        author: p.author.clone(),
        voting_type: p.voting_type.clone(),
        state: p.state,
        choices: p.choices.clone().map(|c| c.0),
        scores_total: p.scores_total.clone(),
        quorum: p.quorum.clone(),
        start_ms: p.start_ms,
        end_ms: p.end_ms,
        created_ms: p.created_ms,
        upstream_vote_count: p.upstream_vote_count,
        ingested_vote_count: p.ingested_vote_count,
        url: p.url.clone(),
        ipfs: p.ipfs.clone(),
        tx_hash: p.tx_hash.clone(),
        block_number: p.block_number,
    };
    analyse_votes(&row, &votes)
}

async fn serving_revision(db: &DatabaseConnection) -> i64 {
    govdata::store::publish::current_revision(db).await.unwrap().map_or(0, |r| r.id)
}

on_both_backends!(replica: incremental_publication, |backend: Backend| async move {
    let w = world(backend).await;
    let first = run_once(&w.db, &w.registry, &options()).await.expect("first run");
    let r1 = first.published.revision_id.expect("the first run publishes");
    let big_row = proposal::Entity::find()
        .filter(proposal::Column::ExternalId.eq(big()))
        .one(&w.db)
        .await
        .unwrap()
        .expect("the big proposal is stored");
    let votes_path = format!("/v2/proposals/{}/votes?limit=100", big_row.proposal_key);
    let (status, page) = w.app.get_json(&votes_path).await;
    assert_eq!(status, 200, "{page}");
    let cursor = page["meta"]["page"]["nextCursor"].as_str().expect("more than one page").to_owned();
    let second_page = format!("{votes_path}&cursor={cursor}");

    // Nothing new upstream: freshness moves, nothing is published, the cursor stays valid.
    let (_, before) = w.app.get_json("/v1/system/freshness").await;
    let quiet = run_once(&w.db, &w.registry, &options()).await.expect("quiet run");
    assert_eq!(quiet.published.rows_written(), 0, "{quiet}");
    assert_eq!(quiet.published.revision_id, None, "{quiet}");
    assert!(quiet.published.touched.is_empty(), "{:?}", quiet.published.touched);
    assert_eq!(serving_revision(&w.db).await, r1);
    let (status, body) = w.app.get_json(&second_page).await;
    assert_eq!(status, 200, "a cursor outlives a run that changed nothing: {body}");
    let (_, after) = w.app.get_json("/v1/system/freshness").await;
    assert_ne!(after["data"]["lastRun"]["id"], before["data"]["lastRun"]["id"], "the run is recorded");
    assert_eq!(after["data"]["lastRun"]["status"], "succeeded");
    assert_eq!(after["data"]["revision"], before["data"]["revision"], "{after}");

    // Upstream: 1000 more votes on the big proposal, one voter changes their vote, the hub's
    // count follows.
    {
        let mut hub = w.hub_data.lock().unwrap();
        for i in 0..1000 {
            hub.votes.push(HubVote {
                id: format!("0x{:064x}", 5_000_000 + i),
                proposal: big(),
                voter: format!("0x{:040x}", 0xdef000 + i),
                created: BASE + 50_000 + i as i64,
                choice: ["2", "1", "3", "2"][i % 4].to_owned(),
                vp: format!("{}.{:03}", 7 + i, i % 1000),
            });
        }
        let revote = hub.votes.iter_mut().find(|v| v.voter == format!("0x{:040x}", 0xabc000 + 5)).unwrap();
        revote.id = format!("0x{:064x}", 6_000_000);
        revote.choice = "1".to_owned();
        revote.created = BASE + 60_000;
        hub.proposals[0].votes += 1000;
    }
    let third = run_once(&w.db, &w.registry, &options()).await.expect("third run");
    let r3 = third.published.revision_id.expect("new votes are published");
    assert!(r3 > r1);
    let touched = &third.published.touched;
    assert_eq!(touched.voted, [big_row.id].into(), "only the big proposal's votes changed");
    assert_eq!(touched.voters.len(), 1001, "the 1000 new voters and the one who changed their vote");
    assert_eq!(touched.daos, [DAO.to_owned()].into());
    // The revision's row counts (counted at publication, not per request) follow.
    let (_, published) = w.app.get_json("/v1/system/freshness").await;
    let voters = |body: &serde_json::Value| body["data"]["counts"]["voters"].as_str().unwrap().parse::<u64>().unwrap();
    assert_eq!(voters(&published), voters(&before) + 1000, "{published}");
    assert_eq!(published["data"]["revision"]["id"], r3.to_string());

    // The stored facts are what the rules' reference analysis of all the votes says.
    let big_row = proposal::Entity::find_by_id(big_row.id).one(&w.db).await.unwrap().unwrap();
    assert_eq!(big_row.ingested_vote_count, 3500);
    let stored = govdata::store::facts::get(&w.db, big_row.id).await.unwrap().expect("facts stored");
    let stored = stored.facts(big_row.voting_type.as_deref(), big_row.upstream_vote_count);
    assert_eq!(stored, reference_facts(&w.db, &big_row).await);
    let (status, evidence) = w.app.get_json(&format!("/v1/daos/{DAO}/proposals/snapshot/{}/evidence", big())).await;
    assert_eq!(status, 200, "{evidence}");
    assert_eq!(evidence["data"]["turnout"]["ingestedVotes"], "3500");
    assert_eq!(evidence["data"]["turnout"]["votesCounted"], "3500");

    // The incremental result is the full one: recomputing everything in place changes nothing.
    let incremental = derived(&w.db).await;
    govdata::store::publish::recompute_in_place(&w.db).await.expect("full recomputation");
    let full = derived(&w.db).await;
    if incremental != full {
        let diff: Vec<_> = incremental.lines().zip(full.lines()).filter(|(a, b)| a != b).take(10).collect();
        panic!("a full recomputation changed what incremental publication derived: {diff:#?}");
    }
});

// `proposal_facts.scores` keeps the text publication has always written (existing stores hold
// it): a compact JSON object whose keys are choice numbers in text order, each `[exact plain
// score, votes]`; read typed, it writes back the same text.
on_both_backends!(replica: stored_tallies_keep_their_text, |app: TestApp| async move {
    let db = govdata::store::connect(&app.database_url).await.expect("connect");
    let sql = "SELECT proposal_id, scores FROM proposal_facts ORDER BY proposal_id";
    let rows = db.query_all_raw(Statement::from_string(db.get_database_backend(), sql)).await.unwrap();
    let stored: Vec<(i64, String)> =
        rows.iter().map(|r| (r.try_get("", "proposal_id").unwrap(), r.try_get("", "scores").unwrap())).collect();
    assert!(!stored.is_empty(), "the sample has votes");
    for (id, text) in &stored {
        let written: BTreeMap<String, (String, u64)> = serde_json::from_str(text).expect(text);
        assert_eq!(&serde_json::to_string(&written).unwrap(), text, "proposal {id}");
        for (choice, (score, _)) in &written {
            assert_eq!(&choice.parse::<u32>().unwrap().to_string(), choice, "proposal {id}: {text}");
            assert_eq!(&decimal::plain(&decimal::parse(score).unwrap()), score, "proposal {id}: {text}");
        }
    }
    // Read typed (`store::stored::TallyScores`), each writes back the very text it was read from.
    let typed = proposal_fact::Entity::find().order_by_asc(proposal_fact::Column::ProposalId).all(&db).await.unwrap();
    let rewritten: Vec<(i64, String)> = typed.iter().map(|f| (f.proposal_id, f.scores.to_json())).collect();
    assert_eq!(rewritten, stored);
});

// A publication opened on a bare SQLite connection takes the write lock as it begins. One that
// read first could not write once another connection had taken the lock (SQLITE_BUSY, or
// SQLITE_BUSY_SNAPSHOT once that one committed), whatever the busy timeout. Here another
// connection holds the lock with a write not yet committed while the publication begins, and
// commits a moment later: the publication waits for it, then publishes.
#[tokio::test]
async fn a_publication_waits_for_a_writer_holding_the_sqlite_lock() {
    use govdata::store::publish::{Scope, Touched, publish};
    use sea_orm::TransactionTrait;
    let url = crate::helpers::fresh_sample_database(crate::helpers::Backend::Sqlite).await;
    let db = govdata::store::connect(&url).await.expect("connect");
    let before = serving_revision(&db).await;
    let other = govdata::store::connect(&url).await.expect("connect");
    let writer = other.begin().await.unwrap();
    let write = "INSERT INTO settings (key, value) VALUES ('another_writer', 'holds the lock')";
    writer.execute_unprepared(write).await.unwrap();
    let commit_later = async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        writer.commit().await.unwrap();
    };
    // One DAO touched, as a writer publishing what it changed: such a publication reads first.
    let lido = Scope::Touched(Touched { daos: ["lido".to_owned()].into(), ..Touched::default() });
    let (published, ()) = tokio::join!(publish(&db, 0, "beside another writer", &lido), commit_later);
    let published = published.expect("the publication waits for the lock, then publishes");
    assert!(published.id > before, "{published:?}");
    assert_eq!(serving_revision(&db).await, published.id);
}
