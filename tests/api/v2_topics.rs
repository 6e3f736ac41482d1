//! `GET /v2/topics` on synthetic forum topics (the sample has none).
use govdata::store::entities::{forum_post, forum_topic, proposal};
use govdata::store::stored::Tags;
use sea_orm::{ActiveModelTrait, ActiveValue::Set, EntityTrait};

use crate::helpers::{fresh_sample_database, spawn_app_on};
use crate::on_both_backends;

on_both_backends!(topics_walk_and_resolve, |backend: Backend| async move {
    let url = fresh_sample_database(backend).await;
    let db = govdata::store::connect(&url).await.unwrap();
    let linked = proposal::Entity::find().one(&db).await.unwrap().unwrap();
    let base = 1_767_225_600_000_i64; // 2026-01-01
    for i in 0..5_i64 {
        let dao = if i % 2 == 0 { "uniswap" } else { "arbitrum" };
        let external_id = (9000 + i).to_string();
        let topic = forum_topic::ActiveModel {
            dao_id: Set(dao.to_owned()),
            external_id: Set(external_id.clone()),
            topic_key: Set(govdata::store::keys::topic_key(dao, &external_id)),
            title: Set(format!("[synthetic] topic {i}")),
            slug: Set(format!("synthetic-topic-{i}")),
            url: Set(format!("https://forum.example/t/synthetic-topic-{i}/{external_id}")),
            category_id: Set(Some(7)),
            tags: Set(Some(Tags::from_json(r#"["synthetic"]"#).unwrap())),
            author: Set(Some("synthetic-author".to_owned())),
            posts_count: Set(3),
            reply_count: Set(2),
            views: Set(40 + i),
            like_count: Set(i),
            excerpt: Set(None),
            created_ms: Set(base + i * 3_600_000),
            last_posted_ms: Set(Some(base + i * 3_600_000 + 60_000)),
            closed: Set(false),
            archived: Set(false),
            linked_proposal_id: Set((i == 4).then_some(linked.id)),
            updated_ms: Set(base),
            ..Default::default()
        }
        .insert(&db)
        .await
        .unwrap();
        forum_post::ActiveModel {
            topic_id: Set(topic.id),
            external_id: Set(format!("{external_id}-1")),
            post_number: Set(1),
            author: Set(Some("synthetic-author".to_owned())),
            body: Set(format!("[synthetic] opening post of topic {i}")),
            created_ms: Set(base + i * 3_600_000),
            ..Default::default()
        }
        .insert(&db)
        .await
        .unwrap();
    }
    let app = spawn_app_on(url).await;
    let mut seen = Vec::new();
    let mut path = "/v2/topics?limit=2".to_owned();
    loop {
        let (status, body) = app.get_json(&path).await;
        assert_eq!(status, 200, "{body}");
        seen.extend(body["data"]["items"].as_array().unwrap().iter().cloned());
        match body["meta"]["page"]["nextCursor"].as_str() {
            Some(c) => path = format!("/v2/topics?limit=2&cursor={c}"),
            None => break,
        }
    }
    let titles: Vec<&str> = seen.iter().map(|t| t["title"].as_str().unwrap()).collect();
    assert_eq!(
        titles,
        [
            "[synthetic] topic 4",
            "[synthetic] topic 3",
            "[synthetic] topic 2",
            "[synthetic] topic 1",
            "[synthetic] topic 0"
        ]
    );
    let newest = &seen[0];
    assert_eq!(newest["linkedProposal"]["externalId"], linked.external_id.as_str());
    assert_eq!(newest["excerpt"], "[synthetic] opening post of topic 4");
    assert_eq!(newest["postsCount"], "3");
    let (_, uniswap) = app.get_json("/v2/topics?daoId=uniswap").await;
    assert_eq!(uniswap["data"]["items"].as_array().unwrap().len(), 3);
    let key = newest["topicKey"].as_str().unwrap();
    let (status, one) = app.get_json(&format!("/v2/topics/{key}")).await;
    assert_eq!(status, 200);
    assert_eq!(one["data"], *newest);
    assert_eq!(app.get("/v2/topics/t_AAAAAAAAAAAAAAAAAAAAAA").await.status(), 404);
    let (status, body) = app.get_json("/v2/topics/p_AAAAAAAAAAAAAAAAAAAAAA").await;
    assert_eq!(status, 400, "a proposal key is not a topic key");
    assert_eq!(body["errors"][0]["name"], "topicKey");
    let (_, window) = app.get_json("/v2/topics?from=2026-01-01T01:00:00Z&to=2026-01-01T03:00:00Z").await;
    assert_eq!(window["data"]["items"].as_array().unwrap().len(), 3);
});
