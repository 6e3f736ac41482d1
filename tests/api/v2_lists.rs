//! v2 proposals, votes and voters: every list walked to its end with cursors and compared with a
//! count taken directly from the store, on both backends; limits and windows at and past their
//! bounds; cursors refused when reused elsewhere.
use std::str::FromStr;

use bigdecimal::BigDecimal;
use govdata::store::entities::{proposal, vote, voter_dao_stat};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};
use serde_json::Value;

use crate::{helpers::TestApp, on_both_backends};

/// Walks a list to its end; returns every item.
async fn walk(app: &TestApp, first: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut path = first.to_owned();
    for _ in 0..10_000 {
        let (status, body) = app.get_json(&path).await;
        assert_eq!(status, 200, "{path}: {body}");
        items.extend(body["data"]["items"].as_array().unwrap().iter().cloned());
        let page = &body["meta"]["page"];
        if page["hasMore"] == false {
            return items;
        }
        let sep = if first.contains('?') { '&' } else { '?' };
        path = format!("{first}{sep}cursor={}", page["nextCursor"].as_str().unwrap());
    }
    panic!("{first} did not end");
}

async fn store(app: &TestApp) -> sea_orm::DatabaseConnection {
    let (_, ready) = app.get_json("/readyz").await;
    assert_eq!(ready["status"], "ready");
    govdata::store::connect(&app.database_url).await.unwrap()
}

fn dec(v: &Value) -> BigDecimal {
    BigDecimal::from_str(v.as_str().unwrap()).unwrap()
}

on_both_backends!(replica: proposals_walk_to_the_store_count, |app: TestApp| async move {
    let db = store(&app).await;
    let all = walk(&app, "/v2/proposals?limit=7").await;
    assert_eq!(all.len() as u64, proposal::Entity::find().count(&db).await.unwrap());
    let arbitrum = walk(&app, "/v2/proposals?daoId=arbitrum&limit=10").await;
    assert_eq!(arbitrum.len(), 43);
    let closed = walk(&app, "/v2/proposals?state=closed&sort=end_time&limit=50").await;
    assert_eq!(
        closed.len() as u64,
        proposal::Entity::find().filter(proposal::Column::State.eq("closed")).count(&db).await.unwrap()
    );
    let ends: Vec<&str> = closed.iter().map(|p| p["endAt"].as_str().unwrap()).collect();
    assert!(ends.windows(2).all(|w| w[0] >= w[1]), "latest end first");
    let created: Vec<&str> = all.iter().map(|p| p["createdAt"].as_str().unwrap()).collect();
    assert!(created.windows(2).all(|w| w[0] >= w[1]), "newest first");
    crate::daos::assert_no_floats(&serde_json::json!(all), "$");
});

on_both_backends!(replica: proposal_windows_and_limits_at_their_bounds, |app: TestApp| async move {
    assert_eq!(app.get("/v2/proposals?limit=100").await.status(), 200);
    assert_eq!(app.get("/v2/proposals?limit=101").await.status(), 400);
    let ok = "/v2/proposals?from=2025-01-01T00:00:00Z&to=2026-01-01T00:00:00Z";
    assert_eq!(app.get(ok).await.status(), 200, "exactly 365 days passes");
    let (status, body) = app.get_json("/v2/proposals?from=2025-01-01T00:00:00Z&to=2026-01-01T00:00:00.001Z").await;
    assert_eq!(status, 400, "one millisecond over fails");
    assert_eq!(body["code"], "VALIDATION_ERROR");
    assert_eq!(body["errors"][0]["name"], "to");
    let (status, _) = app.get_json("/v2/proposals?from=2026-01-01T00:00:00%2B02:00&to=2025-06-01T00:00:00Z").await;
    assert_eq!(status, 400, "from after to");
    let (status, body) = app.get_json("/v2/proposals?from=yesterday").await;
    assert_eq!(status, 400);
    assert_eq!(body["errors"][0]["name"], "from");
    assert_eq!(body["errors"][0]["expected"], "an RFC 3339 timestamp");
    let (status, body) = app.get_json("/v2/proposals?state=sleeping").await;
    assert_eq!(status, 400);
    assert_eq!(body["errors"][0]["name"], "state");
    // A window keeps only proposals created inside it.
    let in_2025 = walk(&app, "/v2/proposals?from=2025-01-01T00:00:00Z&to=2025-12-31T23:59:59.999Z&limit=100").await;
    assert!(!in_2025.is_empty() && in_2025.iter().all(|p| p["createdAt"].as_str().unwrap().starts_with("2025")));
});

on_both_backends!(replica: proposal_votes_walk_in_power_order, |app: TestApp| async move {
    let db = store(&app).await;
    let busiest =
        proposal::Entity::find().order_by_desc(proposal::Column::IngestedVoteCount).one(&db).await.unwrap().unwrap();
    let key = &busiest.proposal_key;
    let (status, detail) = app.get_json(&format!("/v2/proposals/{key}")).await;
    assert_eq!(status, 200);
    assert_eq!(detail["data"]["votes"]["ingested"], busiest.ingested_vote_count.to_string());
    assert_eq!(detail["data"]["votes"]["upstream"], busiest.upstream_vote_count.unwrap().to_string());
    assert!(detail["data"].get("items").is_none(), "the proposal comes without its votes");

    let votes = walk(&app, &format!("/v2/proposals/{key}/votes?limit=500")).await;
    let stored = vote::Entity::find().filter(vote::Column::ProposalId.eq(busiest.id)).count(&db).await.unwrap();
    assert_eq!(votes.len() as u64, stored);
    assert!(votes.windows(2).all(|w| dec(&w[0]["votingPower"]) >= dec(&w[1]["votingPower"])), "largest power first");
    let by_time = walk(&app, &format!("/v2/proposals/{key}/votes?limit=333&sort=time")).await;
    assert_eq!(by_time.len() as u64, stored);

    let top = &votes[0];
    let mixed = top["address"].as_str().unwrap();
    let (_, one) = app.get_json(&format!("/v2/proposals/{key}/votes?voter={mixed}")).await;
    assert_eq!(one["data"]["items"].as_array().unwrap().len(), 1);
    assert_eq!(one["data"]["items"][0], *top);
    let choice = top["choice"].as_str().unwrap();
    let same_choice = walk(&app, &format!("/v2/proposals/{key}/votes?limit=500&choice={choice}")).await;
    assert!(!same_choice.is_empty() && same_choice.iter().all(|v| v["choice"] == choice));

    assert_eq!(app.get(&format!("/v2/proposals/{key}/votes?limit=500")).await.status(), 200);
    let (status, body) = app.get_json(&format!("/v2/proposals/{key}/votes?limit=501")).await;
    assert_eq!(status, 400);
    assert_eq!(body["errors"][0]["expected"], "an integer from 1 to 500");

    // A cursor is refused with another sort, another limit, or on another endpoint.
    let (_, first) = app.get_json(&format!("/v2/proposals/{key}/votes?limit=5")).await;
    let cursor = first["meta"]["page"]["nextCursor"].as_str().unwrap();
    for path in [
        format!("/v2/proposals/{key}/votes?limit=5&sort=time&cursor={cursor}"),
        format!("/v2/proposals/{key}/votes?limit=6&cursor={cursor}"),
        format!("/v2/proposals?limit=5&cursor={cursor}"),
        format!("/v2/daos?limit=5&cursor={cursor}"),
    ] {
        let (status, body) = app.get_json(&path).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("INVALID_CURSOR")), "{path}");
    }
    assert_eq!(app.get("/v2/proposals/p_AAAAAAAAAAAAAAAAAAAAAA").await.status(), 404);
    let (status, body) = app.get_json("/v2/proposals/not-a-key").await;
    assert_eq!(status, 400);
    assert_eq!(body["errors"][0]["name"], "proposalKey");
});

on_both_backends!(replica: voter_ranking_walks_every_voter_in_rank_order, |app: TestApp| async move {
    let db = store(&app).await;
    let ranked = walk(&app, "/v2/daos/uniswap/voters?limit=100").await;
    let stored =
        voter_dao_stat::Entity::find().filter(voter_dao_stat::Column::DaoId.eq("uniswap")).count(&db).await.unwrap();
    assert_eq!(ranked.len() as u64, stored);
    for (i, v) in ranked.iter().enumerate() {
        assert_eq!(v["rank"], (i + 1).to_string(), "ranks continue across pages");
    }
    assert!(ranked.windows(2).all(|w| dec(&w[0]["votingPower"]) >= dec(&w[1]["votingPower"])));
    let (_, dao) = app.get_json("/v2/daos/uniswap").await;
    assert_eq!(dao["data"]["counts"]["voters"], stored.to_string());
    assert_eq!(app.get("/v2/daos/nope/voters").await.status(), 404);
    assert_eq!(app.get("/v2/daos/uniswap/voters?limit=101").await.status(), 400);
});

on_both_backends!(replica: voter_profiles_and_histories, |app: TestApp| async move {
    let db = store(&app).await;
    let lower = "0x683a4f9915d6216f73d6df50151725036bd26c02";
    let forms = [
        "0x683a4F9915D6216f73d6Df50151725036bD26C02".to_owned(),
        lower.to_owned(),
        format!("eip155:1:{}", lower.to_uppercase().replace("0X", "0x")),
    ];
    let (status, profile) = app.get_json(&format!("/v2/voters/{}", forms[0])).await;
    assert_eq!(status, 200, "{profile}");
    assert_eq!(profile["data"]["voterIdentity"], lower);
    assert_eq!(profile["data"]["address"], forms[0]);
    for form in &forms[1..] {
        let (_, other) = app.get_json(&format!("/v2/voters/{form}")).await;
        assert_eq!(other["data"], profile["data"], "{form}");
    }
    let stats = voter_dao_stat::Entity::find().filter(voter_dao_stat::Column::Voter.eq(lower)).all(&db).await.unwrap();
    for s in &stats {
        let row = profile["data"]["daos"].as_array().unwrap().iter().find(|d| d["daoId"] == s.dao_id.as_str()).unwrap();
        assert_eq!(row["votesCast"], s.votes_cast.to_string());
        assert_eq!(row["votingPower"], s.voting_power.as_str());
    }
    let history = walk(&app, &format!("/v2/voters/{lower}/votes?limit=3")).await;
    assert_eq!(
        history.len() as u64,
        vote::Entity::find()
            .filter(vote::Column::Voter.eq(govdata::store::address::AccountBytes::parse(lower).unwrap()))
            .count(&db)
            .await
            .unwrap()
    );
    assert!(history.windows(2).all(|w| w[0]["createdAt"].as_str() >= w[1]["createdAt"].as_str()));
    let dao = stats[0].dao_id.as_str();
    let in_dao = walk(&app, &format!("/v2/voters/{lower}/votes?daoId={dao}&limit=2")).await;
    assert_eq!(in_dao.len() as i64, stats[0].votes_cast);
    assert!(in_dao.iter().all(|v| v["proposal"]["daoId"] == dao));
    assert_eq!(
        app.get(&format!("/v2/voters/{lower}/votes?from=2024-01-01T00:00:00Z&to=2025-01-01T00:00:00.001Z"))
            .await
            .status(),
        400
    );
    assert_eq!(app.get(&format!("/v2/voters/0x{}", "1".repeat(40))).await.status(), 404);
    let (status, body) = app.get_json("/v2/voters/not-an-address").await;
    assert_eq!(status, 400);
    assert_eq!(body["errors"][0]["name"], "voterIdentity");
    assert_eq!(body["errors"][0]["in"], "path");
});

// A voter's history merges the voter's DAOs (`store::voters::history`): walked in pages smaller
// than any DAO's run, it is the store's votes of the voter newest first (time, then id), each
// DAO's walk is that DAO's part of it, and a window keeps exactly the votes inside it.
on_both_backends!(replica: voter_history_merges_daos_in_order, |app: TestApp| async move {
    let db = store(&app).await;
    let voter = "0x3fb19771947072629c8eee7995a2ef23b72d4c8a";
    let bytes = govdata::store::address::AccountBytes::parse(voter).unwrap();
    let votes = vote::Entity::find()
        .filter(vote::Column::Voter.eq(bytes))
        .order_by_desc(vote::Column::CreatedMs)
        .order_by_desc(vote::Column::Id)
        .all(&db)
        .await
        .unwrap();
    let proposals: std::collections::HashMap<i64, proposal::Model> =
        proposal::Entity::find().all(&db).await.unwrap().into_iter().map(|p| (p.id, p)).collect();
    let expected = |keep: &dyn Fn(&vote::Model) -> bool| -> Vec<(String, String)> {
        votes
            .iter()
            .filter(|v| keep(v))
            .map(|v| (proposals[&v.proposal_id].external_id.clone(), v.dao_id.clone()))
            .collect()
    };
    let seen = |items: Vec<Value>| -> Vec<(String, String)> {
        items
            .iter()
            .map(|v| {
                (
                    v["proposal"]["externalId"].as_str().unwrap().to_owned(),
                    v["proposal"]["daoId"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let daos: std::collections::BTreeSet<&str> = votes.iter().map(|v| v.dao_id.as_str()).collect();
    assert!(daos.len() >= 2, "the voter votes in several DAOs: {daos:?}");
    let all = seen(walk(&app, &format!("/v2/voters/{voter}/votes?limit=2")).await);
    assert_eq!(all, expected(&|_| true));
    for dao in daos {
        let in_dao = seen(walk(&app, &format!("/v2/voters/{voter}/votes?daoId={dao}&limit=1")).await);
        assert_eq!(in_dao, expected(&|v| v.dao_id == dao), "{dao}");
    }
    // A window through the middle of the history (of at most 90 days, well inside the bound).
    let to = votes[votes.len() / 4].created_ms;
    let from = votes[votes.len() - 1].created_ms.max(to - 90 * 86_400_000);
    let iso = govdata::contract::time::rfc3339_ms;
    let windowed =
        seen(walk(&app, &format!("/v2/voters/{voter}/votes?from={}&to={}&limit=2", iso(from), iso(to))).await);
    assert_eq!(windowed, expected(&|v| v.created_ms >= from && v.created_ms <= to));
    assert!(!windowed.is_empty() && windowed.len() < all.len());
});

on_both_backends!(replica: signals_walk_matches_v1, |app: TestApp| async move {
    let (status, v1) = app.get_json("/v1/governance-signals?limit=100").await;
    assert_eq!(status, 200);
    let total = v1["data"]["total"].as_u64().unwrap();
    assert!(total > 0, "the sample produces signals");
    let v2 = walk(&app, "/v2/signals?limit=3").await;
    assert_eq!(v2.len() as u64, total, "the same default window as v1");
    assert_eq!(serde_json::json!(v2), v1["data"]["items"], "the same signals, in the same order");
    let start = &v1["request"]["applied"]["start_ms"];
    let end: i64 = v1["request"]["applied"]["end_ms"].as_str().unwrap().parse().unwrap();
    let iso = |ms: i64| govdata::contract::time::rfc3339_ms(ms);
    let exact = format!("/v2/signals?from={}&to={}", iso(end - 90 * 86_400_000), iso(end));
    assert_eq!(app.get(&exact).await.status(), 200, "exactly 90 days passes ({start})");
    let over = format!("/v2/signals?from={}&to={}", iso(end - 90 * 86_400_000 - 1), iso(end));
    let (status, body) = app.get_json(&over).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("VALIDATION_ERROR")), "one millisecond over fails");
    assert_eq!(app.get("/v2/signals?kind=moon_phase").await.status(), 400);
    assert_eq!(app.get("/v2/signals?limit=101").await.status(), 400);
});

on_both_backends!(replica: events_walk_matches_v1, |app: TestApp| async move {
    let (_, v1) = app.get_json("/v1/daos").await;
    let as_of = v1["freshness"]["dataAsOf"].as_str().unwrap();
    let end = time::OffsetDateTime::parse(as_of, &time::format_description::well_known::Rfc3339).unwrap();
    let end_ms = (end.unix_timestamp_nanos() / 1_000_000) as i64;
    let start_ms = end_ms - 90 * 86_400_000;
    let (status, v1) =
        app.get_json(&format!("/v1/governance-events?start_ms={start_ms}&end_ms={end_ms}&limit=200")).await;
    assert_eq!(status, 200);
    let total = v1["data"]["total"].as_u64().unwrap();
    assert!(total > 0 && total <= 200, "{total}");
    let v2 = walk(&app, "/v2/events?limit=7").await;
    assert_eq!(serde_json::json!(v2), v1["data"]["items"], "the same events, in the same order, by default window");
    let arbitrum_votes = walk(&app, "/v2/events?daoId=arbitrum&kind=vote_cast&limit=200").await;
    assert!(arbitrum_votes.iter().all(|e| e["daoId"] == "arbitrum" && e["kind"] == "vote_cast"));
    assert_eq!(app.get("/v2/events?limit=200").await.status(), 200);
    assert_eq!(app.get("/v2/events?limit=201").await.status(), 400);
    assert_eq!(app.get("/v2/events?kind=eclipse").await.status(), 400);
    let iso = govdata::contract::time::rfc3339_ms;
    assert_eq!(app.get(&format!("/v2/events?from={}&to={}", iso(start_ms), iso(end_ms))).await.status(), 200);
    assert_eq!(app.get(&format!("/v2/events?from={}&to={}", iso(start_ms - 1), iso(end_ms))).await.status(), 400);
});

on_both_backends!(replica: activity_walk_matches_v1, |app: TestApp| async move {
    let (_, v1) = app.get_json("/v1/activity?daoId=uniswap&limit=100").await;
    let total = v1["data"]["total"].as_u64().unwrap();
    let mut v1_items: Vec<Value> = v1["data"]["items"].as_array().unwrap().clone();
    let mut offset = 100;
    while (v1_items.len() as u64) < total {
        let (_, more) = app.get_json(&format!("/v1/activity?daoId=uniswap&limit=100&offset={offset}")).await;
        v1_items.extend(more["data"]["items"].as_array().unwrap().iter().cloned());
        offset += 100;
    }
    let v2 = walk(&app, "/v2/activity?daoId=uniswap&limit=9").await;
    assert_eq!(v2.len() as u64, total);
    assert_eq!(v2, v1_items, "the same entries in the same order, events and signals interleaved");
    assert!(v2.iter().any(|e| e["kind"] == "signal") && v2.iter().any(|e| e["kind"] != "signal"));
    let signals = walk(&app, "/v2/activity?kind=signal&limit=50").await;
    assert!(signals.iter().all(|e| e["kind"] == "signal"));
    let since = walk(&app, "/v2/activity?since=2026-01-01T00:00:00Z&limit=100").await;
    assert!(since.iter().all(|e| e["occurredAt"].as_str().unwrap() >= "2026-01-01"));
    assert_eq!(app.get("/v2/activity?limit=101").await.status(), 400);
});

on_both_backends!(replica: the_same_proposal_reads_the_same_through_v1_and_v2, |app: TestApp| async move {
    let proposals = walk(&app, "/v2/proposals?daoId=uniswap&limit=100").await;
    assert_eq!(proposals.len(), 25);
    for p in proposals.iter().take(5) {
        let external = p["externalId"].as_str().unwrap();
        let (status, v1) = app.get_json(&format!("/v1/items/proposal/{external}?daoId=uniswap")).await;
        assert_eq!(status, 200, "{v1}");
        let v1 = &v1["data"]["proposal"];
        let key = p["proposalKey"].as_str().unwrap();
        let (_, v2) = app.get_json(&format!("/v2/proposals/{key}")).await;
        let v2 = &v2["data"];
        assert_eq!(v1["proposalKey"], v2["proposalKey"]);
        assert_eq!(v1["upstreamVotes"], v2["votes"]["upstream"], "{external}");
        assert_eq!(v1["ingestedVotes"], v2["votes"]["ingested"], "{external}");
        for field in
            ["scoresTotal", "quorum", "state", "title", "createdAt", "startAt", "endAt", "author", "votingType", "url"]
        {
            assert_eq!(v1[field], v2[field], "{external}: {field}");
        }
        // The v1 evidence tally and the v2 vote list agree on the ingested votes.
        let votes = walk(&app, &format!("/v2/proposals/{key}/votes?limit=500")).await;
        assert_eq!(votes.len().to_string(), v2["votes"]["ingested"].as_str().unwrap());
        let sum: BigDecimal = votes.iter().map(|v| dec(&v["votingPower"])).sum();
        let (_, evidence) = app.get_json(&format!("/v1/daos/uniswap/proposals/snapshot/{external}/evidence")).await;
        let counted = &evidence["data"];
        let counted_text = serde_json::to_string(counted).unwrap();
        assert!(
            counted_text.contains(&govdata::contract::decimal::plain(&sum)) || votes.is_empty(),
            "{external}: evidence carries the ingested power total {sum}"
        );
    }
});

on_both_backends!(replica: voter_identities_as_callers_hold_them, |app: TestApp| async move {
    let lower = "0x683a4f9915d6216f73d6df50151725036bd26c02";
    // A CAIP-10 account is checked against the namespace it claims.
    let (status, body) = app.get_json(&format!("/v2/voters/starknet:SN_MAIN:{lower}")).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["errors"][0]["reason"], "is not an account of the starknet namespace");
    let (status, body) = app.get_json(&format!("/v2/voters/cosmos:hub:{lower}")).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["errors"][0]["name"], "voterIdentity");
    let (status, _) = app.get_json(&format!("/v2/voters/eip155:10:{lower}")).await;
    assert_eq!(status, 200);
    // An ENS name the store does not know is a 404 that says which names are known.
    for name in ["nobody-here.eth", "nobody.xyz"] {
        let (status, body) = app.get_json(&format!("/v2/voters/{name}")).await;
        assert_eq!(status, 404, "{name}: {body}");
        assert_eq!(body["code"], "NOT_FOUND");
        assert!(body["detail"].as_str().unwrap().contains("known only for voters an upstream reported"), "{body}");
    }
});
