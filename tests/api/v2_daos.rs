//! `GET /v2/daos`: keyset pages with signed cursors bound to the serving revision.
use serde_json::Value;

use crate::{helpers::TestApp, on_both_backends};

async fn walk(app: &TestApp, limit: u32) -> Vec<String> {
    let mut ids = Vec::new();
    let mut path = format!("/v2/daos?limit={limit}");
    loop {
        let (status, body) = app.get_json(&path).await;
        assert_eq!(status, 200, "{body}");
        let page = &body["meta"]["page"];
        assert_eq!(page["limit"], limit);
        let items = body["data"]["items"].as_array().unwrap();
        assert!(items.len() <= limit as usize);
        ids.extend(items.iter().map(|d| d["daoId"].as_str().unwrap().to_owned()));
        assert!(body.get("total").is_none() && body["data"].get("total").is_none(), "v2 lists carry no totals");
        if page["hasMore"] == false {
            assert!(page.get("nextCursor").is_none(), "nextCursor is absent on the last page");
            return ids;
        }
        let cursor = page["nextCursor"].as_str().unwrap();
        assert!(cursor.len() <= 512 && cursor.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        path = format!("/v2/daos?limit={limit}&cursor={cursor}");
    }
}

on_both_backends!(walking_every_page_lists_every_dao_once, |app: TestApp| async move {
    let all = walk(&app, 100).await;
    assert_eq!(all.len(), 8);
    for limit in [1, 3, 7] {
        assert_eq!(walk(&app, limit).await, all, "limit {limit}");
    }
    let (_, v1) = app.get_json("/v1/daos?limit=100").await;
    assert_eq!(v1["data"]["total"], all.len(), "the same DAOs as v1");
});

async fn problem(app: &TestApp, path: &str) -> Value {
    let r = app.get(path).await;
    let (status, content_type) = (r.status(), r.headers()["content-type"].clone());
    let body = r.text().await.unwrap();
    assert_eq!(status, 400, "{path}: {body}");
    assert_eq!(content_type, "application/problem+json");
    serde_json::from_str(&body).unwrap()
}

on_both_backends!(out_of_range_limits_are_rejected, |app: TestApp| async move {
    assert_eq!(app.get("/v2/daos?limit=100").await.status(), 200, "the maximum passes");
    for (limit, received) in [("101", "101"), ("0", "0"), ("-1", "-1"), ("ten", "ten")] {
        let body = problem(&app, &format!("/v2/daos?limit={limit}")).await;
        assert_eq!(body["code"], "VALIDATION_ERROR");
        assert_eq!(body["errors"][0]["name"], "limit");
        assert_eq!(body["errors"][0]["received"], received);
        assert_eq!(body["errors"][0]["expected"], "an integer from 1 to 100", "the bound comes from the document");
    }
});

on_both_backends!(bad_cursors_are_invalid_cursor, |app: TestApp| async move {
    let (_, first) = app.get_json("/v2/daos?limit=2").await;
    let cursor = first["meta"]["page"]["nextCursor"].as_str().unwrap().to_owned();
    assert_eq!(app.get(&format!("/v2/daos?limit=2&cursor={cursor}")).await.status(), 200);
    let mut flipped = cursor.clone().into_bytes();
    flipped[10] = if flipped[10] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).unwrap();
    for path in [
        format!("/v2/daos?limit=2&cursor={flipped}"),
        format!("/v2/daos?limit=3&cursor={cursor}"),
        "/v2/daos?limit=2&cursor=not-a-cursor".to_owned(),
    ] {
        let body = problem(&app, &path).await;
        assert_eq!(body["code"], "INVALID_CURSOR", "{path}");
        assert_eq!(body["errors"][0]["name"], "cursor");
    }
});

// A cursor is bound to the data it pages: a publication that changes DAO X makes the cursors
// over X and over every DAO stale, and leaves those paging another DAO valid.
on_both_backends!(cursors_go_stale_when_a_publication_changes_what_they_page, |backend: Backend| async move {
    use govdata::store::publish::{Scope, Touched, publish};
    let url = crate::helpers::fresh_sample_database(backend).await;
    let db = govdata::store::connect(&url).await.unwrap();
    let app = crate::helpers::spawn_app_on(url).await;
    let mut cursors = Vec::new();
    for list in ["/v2/daos?limit=2", "/v2/proposals?daoId=uniswap&limit=2", "/v2/proposals?daoId=lido&limit=2"] {
        let (_, first) = app.get_json(list).await;
        let cursor =
            first["meta"]["page"]["nextCursor"].as_str().unwrap_or_else(|| panic!("{list}: {first}")).to_owned();
        let next = format!("{list}&cursor={cursor}");
        let (status, body) = app.get_json(&next).await;
        assert_eq!(status, 200, "{next}: {body}");
        cursors.push(next);
    }
    let [every_dao, uniswap, lido] = cursors.try_into().unwrap();

    let only_lido = Touched { daos: ["lido".to_owned()].into(), ..Touched::default() };
    publish(&db, 0, "lido changed", &Scope::Touched(only_lido)).await.unwrap();
    for stale in [&every_dao, &lido] {
        let body = problem(&app, stale).await;
        assert_eq!(body["code"], "INVALID_CURSOR", "{stale}");
        assert!(body["detail"].as_str().unwrap().contains("republished"), "{body}");
    }
    let (status, body) = app.get_json(&uniswap).await;
    assert_eq!(status, 200, "a publication that leaves uniswap alone: {body}");

    publish(&db, 0, "everything recomputed", &Scope::All).await.unwrap();
    assert_eq!(problem(&app, &uniswap).await["code"], "INVALID_CURSOR");
});
