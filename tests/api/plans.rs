//! PostgreSQL keeps each list's plan (issue 49, item 3). Every list statement is built by the
//! store function its handler calls (`…_statement`, `vote_arms::statement`) with realistic
//! parameters from the sample, and must
//!
//! - carry its page bound as a literal (a `LIMIT $n` makes PostgreSQL plan every call again);
//! - be kept as a generic plan: executed as the server executes it (sqlx's prepared statement on
//!   one connection) and as `PREPARE` / `EXPLAIN EXECUTE`, [`EXECUTIONS`] times each, the first
//!   five are custom plans and every later one the generic plan (`pg_prepared_statements`);
//! - walk its index in the list's order: the generic plan reads each expected index, with no
//!   sequential scan and no sort (planned with both priced out, as the sample's tables are tiny).
//!
//! v1's pages past the first keep their offset a parameter (it is unbounded), and keep the plan
//! too. The feed's reads are checked for the rarest value of each filter as well as the
//! commonest: a generic plan that walked the whole feed filtered by a value would read the whole
//! feed for a rare one.
use govdata::contract::vocabulary::DaoId;
use govdata::store::entities::{dao, forum_topic, proposal, vote};
use govdata::store::events::EventFilter;
use govdata::store::keys;
use govdata::store::keysets::{DaoAfter, RankAfter, TimeAfter};
use govdata::store::proposals::{ProposalFilter, ProposalOrder, VoteOrder};
use govdata::store::signals::SignalFilter;
use govdata::store::{self, activity, vote_arms};
use sea_orm::sea_query::{PostgresQueryBuilder, QueryBuilder};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbBackend, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
    Statement, TransactionTrait, Value,
};

use crate::fixtures::stores::{MINUTE, insert_mixed_choices};
use crate::helpers::{Backend, fresh_sample_database, require};

/// Executions of each statement per way of running it: PostgreSQL custom-plans the first
/// [`CUSTOM_PLANS`], then keeps the generic plan when it costs no more.
const EXECUTIONS: i64 = 8;
const CUSTOM_PLANS: i64 = 5;
/// Rows a page of the default size reads (the page and the row that says whether there is more).
const DEFAULT_ROWS: u64 = 26;
/// Rows a 100-row page reads (the votes page of `scripts/bench-capacity.py`).
const HUNDRED_ROWS: u64 = 101;
/// A window wide enough for every row of the sample.
const ALL_TIME: (i64, i64) = (0, i64::MAX / 2);

/// A list statement and the indexes its plan must walk.
struct Case {
    name: String,
    statement: Statement,
    indexes: Vec<&'static str>,
    /// The plan may sort: activity merges two bounded reads, each cut to a page, in one small
    /// sort; a voter's vote of a proposal is one row.
    sorts: bool,
    /// v1's legacy pagination past its first page: the offset stays a parameter (unbounded).
    offset: bool,
}

fn case(name: impl Into<String>, statement: Statement, indexes: &[&'static str]) -> Case {
    Case { name: name.into(), statement, indexes: indexes.to_vec(), sorts: false, offset: false }
}

/// Runs `sql` on `txn` and returns its rows' first column as text.
async fn texts(txn: &impl ConnectionTrait, sql: String) -> Vec<String> {
    let rows = txn.query_all_raw(Statement::from_string(DbBackend::Postgres, sql)).await.unwrap();
    rows.iter().map(|r| r.try_get_by_index::<String>(0).unwrap()).collect()
}

/// `(generic_plans, custom_plans, parameter types)` of the session's prepared statement `which`
/// (a condition on `pg_prepared_statements`).
async fn plan_counts(txn: &impl ConnectionTrait, which: &str, value: &str) -> (i64, i64, Vec<String>) {
    let stmt = Statement::from_sql_and_values(
        DbBackend::Postgres,
        format!(
            "SELECT generic_plans, custom_plans, parameter_types::text[] AS types FROM pg_prepared_statements WHERE {which} = $1"
        ),
        [Value::from(value)],
    );
    let row = txn.query_one_raw(stmt).await.unwrap().unwrap_or_else(|| panic!("no prepared statement {value}"));
    (
        row.try_get("", "generic_plans").unwrap(),
        row.try_get("", "custom_plans").unwrap(),
        row.try_get("", "types").unwrap(),
    )
}

async fn check(db: &DatabaseConnection, case: &Case) {
    let Case { name, statement, indexes, sorts, offset } = case;
    let sql = &statement.sql;
    let upper = sql.to_uppercase();
    assert!(!upper.contains("LIMIT $"), "{name}: a parameterised page bound: {sql}");
    assert_eq!(upper.contains("OFFSET $"), *offset, "{name}: the offset: {sql}");
    assert!(upper.contains("LIMIT "), "{name}: no page bound: {sql}");
    let values = statement.values.clone().map(|v| v.0).unwrap_or_default();
    // A statement without parameters has one plan from the start.
    let kept = if values.is_empty() { (0, EXECUTIONS) } else { (CUSTOM_PLANS, EXECUTIONS - CUSTOM_PLANS) };

    let txn = db.begin().await.unwrap();
    txn.execute_unprepared("SET LOCAL enable_seqscan = off").await.unwrap();
    txn.execute_unprepared("SET LOCAL enable_sort = off").await.unwrap();
    // As the server runs it: sqlx prepares it once on the connection and binds each call.
    for _ in 0..EXECUTIONS {
        txn.query_all_raw(statement.clone()).await.unwrap();
    }
    let (generic, custom, types) = plan_counts(&txn, "statement", sql).await;
    // A statement of an earlier case (the same list with other values) is the same prepared
    // statement: its later executions add generic plans only.
    assert!(
        custom == kept.0 && generic >= kept.1,
        "{name}: planned per call ({custom} custom, {generic} generic): {sql}"
    );

    // As PREPARE and EXPLAIN EXECUTE, with the parameter types sqlx gave it.
    let types = if types.is_empty() { String::new() } else { format!("({})", types.join(", ")) };
    txn.execute_unprepared(&format!("PREPARE plan_case {types} AS {sql}")).await.unwrap();
    let args: Vec<String> = values.iter().map(|v| PostgresQueryBuilder.value_to_string(v)).collect();
    let args = if args.is_empty() { String::new() } else { format!("({})", args.join(", ")) };
    let mut plan = Vec::new();
    for _ in 0..EXECUTIONS {
        plan = texts(&txn, format!("EXPLAIN EXECUTE plan_case{args}")).await;
    }
    let (generic, custom, _) = plan_counts(&txn, "name", "plan_case").await;
    txn.execute_unprepared("DEALLOCATE plan_case").await.unwrap();
    txn.rollback().await.unwrap();
    let plan = plan.join("\n");
    assert_eq!((custom, generic), kept, "{name}: planned per call:\n{plan}");
    for index in indexes {
        // PostgreSQL quotes a name that is not a plain identifier.
        // Forwards or backwards (the history lists read their ascending indexes newest first).
        let walks = [format!("using {index} on"), format!("using \"{index}\" on")].iter().any(|w| {
            ["Index Scan", "Index Only Scan", "Index Scan Backward", "Index Only Scan Backward"]
                .iter()
                .any(|scan| plan.contains(&format!("{scan} {w}")))
        });
        assert!(walks, "{name}: does not walk {index}:\n{plan}");
    }
    assert!(!plan.contains("Seq Scan"), "{name}: scans a table whole:\n{plan}");
    assert!(*sorts || !plan.contains("Sort  ("), "{name}: sorts:\n{plan}");
}

/// Every list the API serves from the store with a page of rows.
async fn cases(db: &DatabaseConnection) -> Vec<Case> {
    let pg = DbBackend::Postgres;
    let mut cases = Vec::new();

    // A proposal's votes: the proposal with the most, a position deep in each order, one voter
    // and one choice of it.
    let proposal_id: i64 = vote::Entity::find()
        .select_only()
        .column(vote::Column::ProposalId)
        .group_by(vote::Column::ProposalId)
        .order_by_desc(vote::Column::Id.count())
        .into_tuple()
        .one(db)
        .await
        .unwrap()
        .unwrap();
    let votes = vote::Entity::find().filter(vote::Column::ProposalId.eq(proposal_id));
    let deep = votes
        .clone()
        .order_by_desc(vote::Column::VpSort)
        .order_by_asc(vote::Column::Voter)
        .offset(3)
        .one(db)
        .await
        .unwrap()
        .expect("the busiest proposal has votes");
    let positions = [
        (VoteOrder::Power, vote_arms::Position::Power(deep.vp_sort.clone(), deep.voter.clone())),
        (VoteOrder::Time, vote_arms::Position::Time(TimeAfter { ms: deep.created_ms, id: deep.id })),
    ];
    for (order, position) in positions {
        let (by_power, suffix) = match order {
            VoteOrder::Power => (true, "power"),
            VoteOrder::Time => (false, "time"),
        };
        let (whole, choice_ix) = if by_power {
            ("ix_votes_proposal_power", "ix_votes_proposal_choice_power")
        } else {
            ("ix_votes_proposal_time", "ix_votes_proposal_choice_time")
        };
        for (after, at) in [(None, "first"), (Some(position), "deep")] {
            for rows in [DEFAULT_ROWS, HUNDRED_ROWS] {
                let statement = vote_arms::statement(
                    pg,
                    proposal_id,
                    Default::default(),
                    order,
                    after.clone(),
                    rows,
                    vote_arms::Read::Page,
                );
                // Every merged choice's arm walks the choice index, the others their partial index.
                cases.push(case(format!("votes by {suffix}, {at} page of {rows}"), statement, &[whole, choice_ix]));
            }
            let choice = vote_arms::Filter { voter: None, choice: Some(deep.choice.as_str()) };
            let statement = vote_arms::statement(
                pg,
                proposal_id,
                choice,
                order,
                after.clone(),
                DEFAULT_ROWS,
                vote_arms::Read::Page,
            );
            cases.push(case(format!("votes of a choice by {suffix}, {at} page"), statement, &[choice_ix]));
        }
    }
    let one_voter = vote_arms::Filter { voter: Some(&deep.voter), choice: None };
    let statement =
        vote_arms::statement(pg, proposal_id, one_voter, VoteOrder::Power, None, DEFAULT_ROWS, vote_arms::Read::Page);
    // At most one row (the natural key): its sort is of that row.
    let mut of_voter = case("votes of a voter", statement, &["idx-votes-vote_natural"]);
    of_voter.sorts = true;
    cases.push(of_voter);

    // Proposals, of every DAO and of the DAO with the most, in each order, first and deep.
    let busiest: String = proposal::Entity::find()
        .select_only()
        .column(proposal::Column::DaoId)
        .group_by(proposal::Column::DaoId)
        .order_by_desc(proposal::Column::Id.count())
        .into_tuple()
        .one(db)
        .await
        .unwrap()
        .unwrap();
    let dao_id = DaoId::parse(&busiest).unwrap();
    let some = proposal::Entity::find()
        .filter(proposal::Column::DaoId.eq(&busiest))
        .filter(proposal::Column::EndMs.is_not_null())
        .order_by_desc(proposal::Column::CreatedMs)
        .offset(2)
        .one(db)
        .await
        .unwrap()
        .expect("the busiest DAO has proposals");
    for (order, all_ix, dao_ix) in [
        (ProposalOrder::Newest, "ix_proposals_created", "ix_proposals_dao_created"),
        (ProposalOrder::EndTime, "ix_proposals_end", "ix_proposals_dao_end"),
    ] {
        for (filter, ix, of) in [
            (ProposalFilter::default(), all_ix, "every DAO"),
            (ProposalFilter { dao_id: Some(&dao_id), ..Default::default() }, dao_ix, "a DAO"),
        ] {
            for (after, at) in [(None, "first"), (Some(some.keyset(order)), "deep")] {
                let statement = store::proposals::list_statement(pg, &filter, order, after, DEFAULT_ROWS);
                cases.push(case(format!("proposals of {of} by {order:?}, {at} page"), statement, &[ix]));
            }
        }
    }
    let statement = store::proposals::actions_statement(pg, some.id, None, DEFAULT_ROWS);
    cases.push(case("a proposal's actions", statement, &["proposal_actions_pkey"]));

    // DAOs.
    let first: dao::Model = dao::Entity::find().order_by_asc(dao::Column::Id).one(db).await.unwrap().unwrap();
    for (after, at) in [(None, "first"), (Some(DaoAfter(first.id.clone())), "deep")] {
        let statement = store::daos::list_after_statement(pg, after.as_ref(), DEFAULT_ROWS);
        cases.push(case(format!("DAOs, {at} page"), statement, &["daos_pkey"]));
    }

    // A DAO's voters by power.
    let top = store::voters::ranking(db, &busiest, None, 3).await.unwrap();
    let (third, _) = top.last().expect("the busiest DAO has voters");
    let after: RankAfter = third.keyset(3);
    for (after, at) in [(None, "first"), (Some(&after), "deep")] {
        let statement = store::voters::ranking_statement(pg, &busiest, after, DEFAULT_ROWS);
        cases.push(case(format!("a DAO's voters, {at} page"), statement, &["ix_voter_stats_rank_covering"]));
    }

    // A DAO's events, signals, topics and activity, in the widest window.
    let at = TimeAfter { ms: some.created_ms, id: i64::MAX / 2 };
    for (after, page) in [(None, "first"), (Some(at), "deep")] {
        let filter = EventFilter {
            dao_id: Some(dao_id.clone()),
            kind: None,
            from_ms: Some(ALL_TIME.0),
            to_ms: Some(ALL_TIME.1),
            after,
        };
        let statement = store::events::list_statement(pg, &filter, DEFAULT_ROWS, 0);
        cases.push(case(format!("a DAO's events, {page} page"), statement, &["ix_events_dao_time"]));
        // v1's second page by offset.
        let statement = store::events::list_statement(pg, &filter, DEFAULT_ROWS, DEFAULT_ROWS - 1);
        let mut by_offset = case(format!("a DAO's events, {page} page, offset"), statement, &["ix_events_dao_time"]);
        by_offset.offset = true;
        cases.push(by_offset);

        let filter = SignalFilter {
            dao_id: Some(dao_id.clone()),
            kind: None,
            severity: None,
            start_ms: ALL_TIME.0,
            end_ms: ALL_TIME.1,
        };
        let statement = store::signals::list_after_statement(pg, &filter, after, DEFAULT_ROWS);
        cases.push(case(format!("a DAO's signals, {page} page"), statement, &["ix_signals_dao_time"]));

        // Forum topics: the sample has none; `postgres_lists_keep_a_generic_plan_on_their_index`
        // gives every DAO some ([`insert_topics`]).
        let topic_after = after.map(|_| TimeAfter { ms: TOPICS_FROM + TOPICS as i64 * MINUTE, id: i64::MAX / 2 });
        for (dao, ix, of) in
            [(Some(&dao_id), "ix_topics_dao_created", "a DAO"), (None, "ix_topics_created", "every DAO")]
        {
            let statement = store::topics::list_statement(pg, dao, Some(ALL_TIME), topic_after, DEFAULT_ROWS);
            cases.push(case(format!("forum topics of {of}, {page} page"), statement, &[ix]));
        }

        let filter = activity::ActivityFilter {
            dao_id: Some(dao_id.clone()),
            kind: None,
            since_ms: Some(ALL_TIME.0),
            after: after.map(|t| store::keysets::ActivityAfter {
                ms: t.ms,
                entry: activity::ENTRY_EVENT.to_owned(),
                id: t.id,
            }),
        };
        for offset in [0, DEFAULT_ROWS - 1] {
            let statement = activity::list_statement(pg, &filter, DEFAULT_ROWS, offset);
            let name = format!("a DAO's activity, {page} page, offset {offset}");
            let mut activity = case(name, statement, &["ix_events_dao_time", "ix_signals_dao_time"]);
            activity.sorts = true;
            activity.offset = offset > 0;
            cases.push(activity);
        }
    }
    cases.extend(governor_cases(&dao_id));
    cases.extend(feed_cases(db).await);
    cases
}

/// The values of `column` in the feed (`table`), commonest first.
async fn by_count(db: &DatabaseConnection, table: &str, column: &str) -> Vec<String> {
    let sql = format!(
        "SELECT {column}::text FROM {table} WHERE {column} IS NOT NULL GROUP BY {column} ORDER BY count(*) DESC, {column}"
    );
    let values = texts(db, sql).await;
    assert!(values.len() > 1, "the sample's feed has {} values of {column}", values.len());
    values
}

/// The feed's reads (`store::feed::after_statement`): the whole feed, and each filter that drives
/// a read with its commonest and its rarest value, alone and with the other filters, first and
/// deep pages.
async fn feed_cases(db: &DatabaseConnection) -> Vec<Case> {
    use govdata::contract::feed::FeedKind;
    use govdata::store::feed::{FeedFilter, after_statement};
    let pg = DbBackend::Postgres;
    let daos = by_count(db, "feed_entries", "dao_id").await;
    let kinds = by_count(db, "feed_entries", "kind").await;
    let keys = by_count(db, "feed_entries", "proposal_key").await;
    let voters = by_count(db, "feed_entry_voters", "voter").await;
    let middle: i64 = texts(db, "SELECT (max(seq) / 2)::text FROM feed_entries".to_owned()).await[0].parse().unwrap();
    let dao = |d: &String| Some(DaoId::parse(d).unwrap());
    let kind = |k: &String| serde_json::from_value::<FeedKind>(serde_json::Value::String(k.clone())).unwrap();
    let common: fn(&[String]) -> String = |v| v[0].clone();
    let rare: fn(&[String]) -> String = |v| v[v.len() - 1].clone();
    let mut filters: Vec<(String, FeedFilter, Vec<&'static str>, bool)> =
        vec![("the whole feed".into(), FeedFilter::default(), vec!["feed_entries_pkey"], false)];
    for (which, pick) in [("commonest", common), ("rarest", rare)] {
        let one = |list: &[String]| vec![pick(list)];
        filters.extend([
            (
                format!("the {which} DAO's feed"),
                FeedFilter { dao_id: dao(&pick(&daos)), ..Default::default() },
                vec!["ix_feed_dao_seq"],
                false,
            ),
            (
                format!("the {which} kind's feed"),
                FeedFilter { kinds: vec![kind(&pick(&kinds))], ..Default::default() },
                vec!["ix_feed_kind_seq"],
                false,
            ),
            (
                format!("the {which} kind of the {which} DAO's feed"),
                FeedFilter { dao_id: dao(&pick(&daos)), kinds: vec![kind(&pick(&kinds))], ..Default::default() },
                vec!["ix_feed_dao_kind_seq"],
                false,
            ),
            (
                format!("the {which} proposal's feed"),
                FeedFilter { proposal_keys: one(&keys), ..Default::default() },
                vec!["ix_feed_proposal_seq"],
                false,
            ),
            (
                format!("the {which} voter's feed"),
                FeedFilter { voters: one(&voters), ..Default::default() },
                vec!["ix_feed_voters_voter_seq", "feed_entries_pkey"],
                false,
            ),
        ]);
    }
    // Several values, merged in one sort of a page per value.
    let both = |list: &[String]| vec![common(list), rare(list)];
    let two_kinds: Vec<FeedKind> = both(&kinds).iter().map(kind).collect();
    filters.extend([
        (
            "two kinds' feed".to_owned(),
            FeedFilter { kinds: two_kinds.clone(), ..Default::default() },
            vec!["ix_feed_kind_seq"],
            true,
        ),
        (
            "two kinds of a DAO's feed".to_owned(),
            FeedFilter { dao_id: dao(&daos[0]), kinds: two_kinds.clone(), ..Default::default() },
            vec!["ix_feed_dao_kind_seq"],
            true,
        ),
        (
            "two proposals' feed, of two kinds".to_owned(),
            FeedFilter { proposal_keys: both(&keys), kinds: two_kinds.clone(), ..Default::default() },
            vec!["ix_feed_proposal_seq"],
            true,
        ),
        (
            "two voters' feed, of two kinds of a DAO".to_owned(),
            FeedFilter { dao_id: dao(&daos[0]), kinds: two_kinds, voters: both(&voters), proposal_keys: vec![] },
            // Each entry found by its key or, as here, by its DAO and key.
            vec!["ix_feed_voters_voter_seq"],
            true,
        ),
    ]);
    let mut cases = Vec::new();
    for (name, filter, indexes, sorts) in filters {
        for (after, at) in [(0, "first"), (middle, "deep")] {
            let statement = after_statement(pg, &filter, after, DEFAULT_ROWS);
            let mut case = case(format!("{name}, {at} page"), statement, &indexes);
            case.sorts = sorts;
            cases.push(case);
        }
    }
    cases
}

/// The governor history's lists: a voter's delegation changes (each side's index, in every DAO
/// and in one), its power over time, a DAO's notable changes and its delegates. Their values
/// are hidden from the planner, so any address plans as a stored one.
fn governor_cases(dao_id: &DaoId) -> Vec<Case> {
    use govdata::store::address::AccountBytes;
    use govdata::store::governor::{self, Side};
    use govdata::store::keysets::LogAfter;
    let pg = DbBackend::Postgres;
    let address = AccountBytes::parse("0x00000000000000000000000000000000000000a1").unwrap();
    let position = LogAfter { ms: ALL_TIME.1 / 2, block: 20_000_000, log: 3 };
    let mut cases = Vec::new();
    for (after, at) in [(None, "first"), (Some(position), "deep")] {
        for (dao, of, prefix) in
            [(None, "every DAO", "ix_delegation_changes_"), (Some(dao_id), "a DAO", "ix_delegation_changes_dao_")]
        {
            let sides = [(Side::Delegator, vec!["delegator"]), (Side::Delegate, vec!["from", "to"])];
            for (side, indexes) in sides {
                let statements = governor::delegations_statements(
                    pg,
                    &address,
                    dao,
                    Some(side),
                    Some(ALL_TIME),
                    after,
                    DEFAULT_ROWS,
                );
                assert_eq!(statements.len(), indexes.len());
                for (statement, ix) in statements.into_iter().zip(indexes) {
                    let index: &'static str = Box::leak(format!("{prefix}{ix}").into_boxed_str());
                    cases.push(case(format!("delegation changes of {ix} in {of}, {at} page"), statement, &[index]));
                }
            }
            let index =
                if dao.is_some() { "ix_power_checkpoints_dao_delegate" } else { "ix_power_checkpoints_delegate" };
            let statement = governor::power_statement(pg, &address, dao, Some(ALL_TIME), after, DEFAULT_ROWS);
            cases.push(case(format!("power checkpoints in {of}, {at} page"), statement, &[index]));
        }
        let statement = governor::notable_delegations_statement(pg, dao_id, Some(ALL_TIME), after, DEFAULT_ROWS);
        cases.push(case(
            format!("a DAO's notable delegation changes, {at} page"),
            statement,
            &["ix_delegation_changes_notable"],
        ));
    }
    let (value, sort) = govdata::store::sort_keys::parse_amount("1000").unwrap();
    let rank = RankAfter {
        power: govdata::store::keysets::PowerKey { value, sort },
        voter: "0x00000000000000000000000000000000000000a1".to_owned(),
        rank: 3,
    };
    for (after, at) in [(None, "first"), (Some(&rank), "deep")] {
        let statement = governor::delegates_statement(pg, dao_id.as_str(), after, DEFAULT_ROWS);
        cases.push(case(format!("a DAO's delegates, {at} page"), statement, &["ix_delegates_rank"]));
    }
    cases
}

/// Forum topics per DAO ([`insert_topics`]), half a minute apart from [`TOPICS_FROM`].
const TOPICS: usize = 200;
const TOPICS_FROM: i64 = 1_700_000_000_000;

/// [`TOPICS`] forum topics of each of the sample's DAOs, interleaved in time, one statement per
/// DAO. With 20 per DAO the generic plan of a DAO's page walked the all-DAO index and filtered
/// (the two tied on so small a table); with this many it walks the DAO's, as on a forum of many.
async fn insert_topics(db: &DatabaseConnection) {
    use sea_orm::ActiveValue::Set;
    let daos: Vec<String> =
        dao::Entity::find().order_by_asc(dao::Column::Id).all(db).await.unwrap().into_iter().map(|d| d.id).collect();
    assert!(daos.len() > 2, "the sample has {} DAOs", daos.len());
    for (n, dao) in daos.iter().enumerate() {
        let topics = (0..TOPICS).map(|i| {
            let at = TOPICS_FROM + ((i * daos.len() + n) as i64) * MINUTE / 2;
            let external_id = format!("plans-{i}");
            forum_topic::ActiveModel {
                dao_id: Set(dao.clone()),
                topic_key: Set(keys::topic_key(dao, &external_id)),
                url: Set(format!("https://forum.example/t/{external_id}")),
                slug: Set(external_id.clone()),
                title: Set(format!("[synthetic] {external_id}")),
                external_id: Set(external_id),
                author: Set(None),
                category_id: Set(None),
                tags: Set(None),
                posts_count: Set(1),
                reply_count: Set(0),
                views: Set(0),
                like_count: Set(0),
                excerpt: Set(None),
                created_ms: Set(at),
                last_posted_ms: Set(Some(at)),
                closed: Set(false),
                archived: Set(false),
                linked_proposal_id: Set(None),
                updated_ms: Set(at),
                ..Default::default()
            }
        });
        forum_topic::Entity::insert_many(topics).exec(db).await.unwrap();
    }
}

#[tokio::test]
async fn postgres_lists_keep_a_generic_plan_on_their_index() {
    if !require(Backend::Postgres) {
        return;
    }
    let url = fresh_sample_database(Backend::Postgres).await;
    let db = store::connect(&url).await.unwrap();
    // Votes of choices in and out of the merged set, so that every arm has rows.
    insert_mixed_choices(&db).await;
    insert_topics(&db).await;
    db.execute_unprepared("ANALYZE").await.unwrap();
    let cases = cases(&db).await;
    assert!(cases.len() > 30, "{} cases", cases.len());
    for case in &cases {
        check(&db, case).await;
    }
    db.close().await.ok();
}
