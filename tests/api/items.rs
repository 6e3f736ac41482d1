//! `GET /v1/items/{kind}/{externalId}` on the real sample, and on a synthetic fixture (forum
//! topics, on-chain proposals, identifiers shared by two DAOs) built on a fresh store.
use std::sync::OnceLock;

use govdata::store::entities::{forum_post, forum_topic, governance_event, proposal, vote};
use govdata::store::keys;
use sea_orm::{ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

use crate::daos::assert_no_floats;
use crate::helpers::{Backend, TestApp, fresh_database, snapshot_settings};
use crate::on_both_backends;

/// The sample's "Statute of Limitations" RFC (uniswap, Snapshot).
pub const RFC_ID: &str = "0x48e56786fd4ab27c5b089b45be1e914d4a3a0f9d067ac51eff0b26a882e49bde";
pub const RFC_TITLE: &str =
    "[RFC] Governance Process Upgrade: Establishing a Statute of Limitations for Temperature Checks";
/// 2026-01-10T12:00:00.000Z
const T0: i64 = 1_768_046_400_000;

fn onchain_proposal(dao: &str, id: &str) -> proposal::ActiveModel {
    proposal::ActiveModel {
        dao_id: Set(dao.to_owned()),
        source: Set("onchain".to_owned()),
        external_id: Set(id.to_owned()),
        proposal_key: Set(keys::proposal_key(dao, "onchain", id)),
        title: Set(format!("[synthetic] On-chain proposal {id} of {dao}")),
        body: Set(Some("[synthetic] Body text of the on-chain proposal.".to_owned())),
        author: Set("0x1111111111111111111111111111111111111111".to_owned()),
        voting_type: Set(Some("governor".to_owned())),
        state: Set("executed".to_owned()),
        choices: Set(Some(r#"["Against","For","Abstain"]"#.to_owned())),
        scores: Set(Some(r#"["100.5","2500","0"]"#.to_owned())),
        scores_total: Set(Some("2600.5".to_owned())),
        scores_state: Set(Some("final".to_owned())),
        quorum: Set(Some("1000".to_owned())),
        top_choice_pct: Set(None),
        start_ms: Set(Some(T0)),
        end_ms: Set(Some(T0 + 7 * 86_400_000)),
        created_ms: Set(T0 - 86_400_000),
        upstream_vote_count: Set(Some(3)),
        ingested_vote_count: Set(if dao == "uniswap" { 2 } else { 0 }),
        url: Set(Some(format!("https://www.tally.xyz/gov/{dao}/proposal/{id}"))),
        discussion_url: Set(None),
        ipfs: Set(None),
        snapshot_block: Set(None),
        tx_hash: Set(Some(format!("0x{}", "ab".repeat(32)))),
        block_number: Set(Some(21_000_000)),
        origin: Set("synthetic-test".to_owned()),
        updated_ms: Set(T0),
        ..Default::default()
    }
}

fn topic(dao: &str, id: &str, title: &str, url: &str, linked: Option<i64>) -> forum_topic::ActiveModel {
    forum_topic::ActiveModel {
        dao_id: Set(dao.to_owned()),
        external_id: Set(id.to_owned()),
        topic_key: Set(keys::topic_key(dao, id)),
        title: Set(title.to_owned()),
        slug: Set(url.rsplit('/').nth(1).unwrap_or_default().to_owned()),
        url: Set(url.to_owned()),
        category_id: Set(Some(7)),
        tags: Set(Some(r#"["governance","synthetic"]"#.to_owned())),
        author: Set(Some("synthetic-author".to_owned())),
        posts_count: Set(3),
        reply_count: Set(2),
        views: Set(120),
        like_count: Set(9),
        excerpt: Set(None),
        created_ms: Set(T0),
        last_posted_ms: Set(Some(T0 + 3_600_000)),
        closed: Set(false),
        archived: Set(false),
        linked_proposal_id: Set(linked),
        updated_ms: Set(T0),
        ..Default::default()
    }
}

/// A fresh store with the sample and the synthetic rows:
/// - on-chain proposal `77` in both `uniswap` and `compound` (ids collide across governors), the
///   uniswap one with two votes carrying transaction hashes and an execution event;
/// - forum topic `4242` in `uniswap` (linked to the RFC, with an opening post) and in `arbitrum`
///   (a copy, unlinked); topic `4343` in `uniswap`, unlinked.
pub fn synthetic_database(backend: Backend) -> String {
    static SQLITE: OnceLock<String> = OnceLock::new();
    static POSTGRES: OnceLock<String> = OnceLock::new();
    let cell = if backend == Backend::Sqlite { &SQLITE } else { &POSTGRES };
    cell.get_or_init(|| {
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(build_synthetic(backend))
        })
        .join()
        .expect("building the synthetic store")
    })
    .clone()
}

async fn build_synthetic(backend: Backend) -> String {
    let url = fresh_database(backend).await;
    let db = govdata::store::connect(&url).await.expect("connect");
    govdata::sample::import_if_empty(&db).await.expect("import the sample");
    let rfc = proposal::Entity::find()
        .filter(proposal::Column::ExternalId.eq(RFC_ID))
        .one(&db)
        .await
        .expect("query")
        .expect("the RFC is in the sample");
    let uni77 = onchain_proposal("uniswap", "77").insert(&db).await.expect("insert");
    onchain_proposal("compound", "77").insert(&db).await.expect("insert");
    for (voter, choice, power, reason, block) in [
        (
            "0x2222222222222222222222222222222222222222",
            "2",
            "2500",
            Some("[synthetic] Strongly in favour."),
            21_000_100,
        ),
        ("0x3333333333333333333333333333333333333333", "1", "100.5", None, 21_000_200),
    ] {
        let (_, vp_sort) = govdata::store::sort_keys::parse_amount(power).expect("amount");
        vote::ActiveModel {
            proposal_id: Set(uni77.id),
            dao_id: Set("uniswap".to_owned()),
            voter: Set(govdata::store::address::AccountBytes::parse(voter).unwrap()),
            choice: Set(choice.to_owned()),
            voting_power: Set(power.to_owned()),
            vp_sort: Set(vp_sort),
            vp_from_float: Set(false),
            reason: Set(reason.map(str::to_owned)),
            created_ms: Set(T0 + 3_600_000),
            ipfs: Set(None),
            tx_hash: Set(Some(format!("0x{:064x}", block))),
            block_number: Set(Some(block)),
            ..Default::default()
        }
        .insert(&db)
        .await
        .expect("insert vote");
    }
    // The rows are written behind publication's back; compute the vote facts publication would
    // store for them (evidence reads the stored tally, never the votes).
    govdata::store::facts::refresh(&db, &[uni77.id].into(), &Default::default()).await.expect("vote facts");
    governance_event::ActiveModel {
        natural_key: Set("synthetic:uniswap:onchain:77:proposal_executed".to_owned()),
        dao_id: Set("uniswap".to_owned()),
        kind: Set("proposal_executed".to_owned()),
        occurred_ms: Set(T0 + 9 * 86_400_000),
        subject_kind: Set("proposal".to_owned()),
        subject_external_id: Set("77".to_owned()),
        subject_source: Set("onchain".to_owned()),
        proposal_id: Set(Some(uni77.id)),
        topic_id: Set(None),
        actor: Set(Some("0x4444444444444444444444444444444444444444".to_owned())),
        url: Set(None),
        snapshot_id: Set(None),
        tx_hash: Set(Some(format!("0x{}", "cd".repeat(32)))),
        block_number: Set(Some(21_050_000)),
        details: Set(None),
        ..Default::default()
    }
    .insert(&db)
    .await
    .expect("insert event");
    let linked = topic(
        "uniswap",
        "4242",
        "[synthetic] Zebra discussion of the statute of limitations",
        "https://forum.example/t/synthetic-zebra-statute/4242",
        Some(rfc.id),
    )
    .insert(&db)
    .await
    .expect("insert topic");
    forum_post::ActiveModel {
        topic_id: Set(linked.id),
        external_id: Set("90001".to_owned()),
        post_number: Set(1),
        author: Set(Some("synthetic-author".to_owned())),
        body: Set("[synthetic] Opening post: should temperature checks expire?".to_owned()),
        created_ms: Set(T0),
        ..Default::default()
    }
    .insert(&db)
    .await
    .expect("insert post");
    topic(
        "arbitrum",
        "4242",
        "[synthetic] Arbitrum copy",
        "https://forum.example/t/synthetic-arbitrum-copy/4242",
        None,
    )
    .insert(&db)
    .await
    .expect("insert topic");
    topic("uniswap", "4343", "[synthetic] Unlinked topic", "https://forum.example/t/synthetic-unlinked/4343", None)
        .insert(&db)
        .await
        .expect("insert topic");
    db.close().await.ok();
    url
}

/// Runs `$body(app)` on both backends over the synthetic store.
#[macro_export]
macro_rules! on_both_synthetic {
    ($name:ident, $body:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test]
            async fn sqlite() {
                let url = $crate::items::synthetic_database($crate::helpers::Backend::Sqlite);
                ($body)($crate::helpers::spawn_app_on(url).await).await;
            }

            #[tokio::test]
            async fn postgres() {
                let url = $crate::items::synthetic_database($crate::helpers::Backend::Postgres);
                ($body)($crate::helpers::spawn_app_on(url).await).await;
            }
        }
    };
}

fn assert_problem(body: &Value, code: &str, status: u16) {
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["status"], status, "{body}");
}

on_both_backends!(items_proposal_from_the_sample, |app: TestApp| async move {
    let (status, body) = app.get_json(&format!("/v1/items/proposal/{RFC_ID}")).await;
    assert_eq!(status, 200, "{body}");
    assert_no_floats(&body, "$");
    let data = &body["data"];
    assert_eq!(data["kind"], "proposal");
    assert!(data.get("forumTopic").is_none());
    let p = &data["proposal"];
    assert_eq!(p["daoId"], "uniswap");
    assert_eq!(p["source"], "snapshot");
    assert_eq!(p["externalId"], RFC_ID);
    assert_eq!(p["proposalKey"], keys::proposal_key("uniswap", "snapshot", RFC_ID));
    assert_eq!(p["title"], RFC_TITLE);
    assert_eq!(p["state"], "closed");
    assert_eq!(p["votingType"], "single-choice");
    assert_eq!(p["scoresTotal"], "5753874.4708579285");
    assert_eq!(p["quorum"], "10000000");
    assert_eq!(p["upstreamVotes"], "133");
    assert_eq!(p["ingestedVotes"], "0");
    assert_eq!(p["author"], "0x3fb19771947072629c8eee7995a2ef23b72d4c8a");
    assert_eq!(p["startAt"], "2026-03-03T00:00:00.000Z");
    assert_eq!(p["endAt"], "2026-03-08T00:00:00.000Z");
    assert_eq!(p["origin"], "snapshot-sample-csv");
    assert!(p.get("body").is_none(), "the sample has no text");
    let citations = p["citations"].as_array().unwrap();
    assert_eq!(citations.len(), 2);
    assert_eq!(citations[0]["source"], "snapshot");
    assert_eq!(citations[0]["url"], format!("https://snapshot.box/#/s:uniswapgovernance.eth/proposal/{RFC_ID}"));
    assert_eq!(citations[1]["dataset"], "data/sample/snapshot_proposals.csv");
    for c in citations {
        let supports: Vec<&str> = c["supports"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
        for f in ["title", "state", "scoresTotal", "quorum", "upstreamVotes"] {
            assert!(supports.contains(&f), "{f} cited in {c}");
        }
    }
    snapshot_settings().bind(|| insta::assert_json_snapshot!("v1_items_get_proposal_rfc", body));
});

on_both_backends!(items_unknown_and_invalid, |app: TestApp| async move {
    let (status, body) = app.get_json("/v1/items/proposal/0xdoesnotexist").await;
    assert_eq!(status, 404);
    assert_problem(&body, "NOT_FOUND", 404);
    let (status, body) = app.get_json(&format!("/v1/items/proposal/{RFC_ID}?daoId=arbitrum")).await;
    assert_eq!(status, 404, "the daoId filter applies");
    assert_problem(&body, "NOT_FOUND", 404);
    let (status, body) = app.get_json("/v1/items/forum_topic/999").await;
    assert_eq!(status, 404);
    assert_problem(&body, "NOT_FOUND", 404);
    let (status, body) = app.get_json("/v1/items/vote/1").await;
    assert_eq!(status, 400);
    assert_problem(&body, "VALIDATION_ERROR", 400);
    assert_eq!(body["errors"][0]["name"], "kind");
    assert_eq!(body["errors"][0]["in"], "path");
    assert_eq!(body["errors"][0]["received"], "vote");
});

on_both_synthetic!(items_forum_topic_synthetic, |app: TestApp| async move {
    let (status, body) = app.get_json("/v1/items/forum_topic/4242?daoId=uniswap").await;
    assert_eq!(status, 200, "{body}");
    assert_no_floats(&body, "$");
    let data = &body["data"];
    assert_eq!(data["kind"], "forum_topic");
    assert!(data.get("proposal").is_none());
    let t = &data["forumTopic"];
    assert_eq!(t["daoId"], "uniswap");
    assert_eq!(t["source"], "discourse");
    assert_eq!(t["externalId"], "4242");
    assert_eq!(t["topicKey"], keys::topic_key("uniswap", "4242"));
    assert_eq!(t["url"], "https://forum.example/t/synthetic-zebra-statute/4242");
    assert_eq!(t["slug"], "synthetic-zebra-statute");
    assert_eq!(t["tags"], json!(["governance", "synthetic"]));
    assert_eq!(t["postsCount"], "3");
    assert_eq!(t["replyCount"], "2");
    assert_eq!(t["views"], "120");
    assert_eq!(t["likeCount"], "9");
    assert_eq!(t["categoryId"], "7");
    assert_eq!(t["createdAt"], "2026-01-10T12:00:00.000Z");
    assert_eq!(t["lastPostedAt"], "2026-01-10T13:00:00.000Z");
    assert_eq!(t["closed"], false);
    assert_eq!(t["excerpt"], "[synthetic] Opening post: should temperature checks expire?");
    assert_eq!(
        t["linkedProposal"],
        json!({
            "kind": "proposal", "daoId": "uniswap", "source": "snapshot", "externalId": RFC_ID,
            "key": keys::proposal_key("uniswap", "snapshot", RFC_ID), "title": RFC_TITLE,
            "url": format!("https://snapshot.box/#/s:uniswapgovernance.eth/proposal/{RFC_ID}"),
        })
    );
    assert_eq!(t["citations"][0]["source"], "discourse");
    assert_eq!(t["citations"][0]["url"], t["url"]);
    snapshot_settings().bind(|| insta::assert_json_snapshot!("v1_items_get_forum_topic_synthetic", body));

    // An unlinked topic has no linkedProposal and no excerpt.
    let (status, body) = app.get_json("/v1/items/forum_topic/4343").await;
    assert_eq!(status, 200);
    assert!(body["data"]["forumTopic"].get("linkedProposal").is_none());
    assert!(body["data"]["forumTopic"].get("excerpt").is_none());
});

on_both_synthetic!(items_ambiguous_identifiers, |app: TestApp| async move {
    let (status, body) = app.get_json("/v1/items/forum_topic/4242").await;
    assert_eq!(status, 409, "{body}");
    assert_problem(&body, "AMBIGUOUS_IDENTIFIER", 409);
    assert_eq!(
        body["candidates"],
        json!([
            {"daoId": "arbitrum", "kind": "forum_topic", "source": "discourse", "externalId": "4242",
             "title": "[synthetic] Arbitrum copy"},
            {"daoId": "uniswap", "kind": "forum_topic", "source": "discourse", "externalId": "4242",
             "title": "[synthetic] Zebra discussion of the statute of limitations"},
        ])
    );
    let (status, body) = app.get_json("/v1/items/proposal/77").await;
    assert_eq!(status, 409);
    assert_problem(&body, "AMBIGUOUS_IDENTIFIER", 409);
    let daos: Vec<&str> = body["candidates"].as_array().unwrap().iter().map(|c| c["daoId"].as_str().unwrap()).collect();
    assert_eq!(daos, ["compound", "uniswap"]);
    assert_eq!(body["candidates"][0]["source"], "onchain");
    // daoId resolves it.
    let (status, body) = app.get_json("/v1/items/proposal/77?daoId=compound").await;
    assert_eq!(status, 200);
    let p = &body["data"]["proposal"];
    assert_eq!(p["daoId"], "compound");
    assert_eq!(p["choices"], json!(["Against", "For", "Abstain"]));
    assert_eq!(p["scores"], json!(["100.5", "2500", "0"]));
    assert_eq!(p["blockNumber"], "21000000");
    assert_eq!(p["citations"][0]["source"], "onchain");
    assert_eq!(p["citations"][0]["txHash"], format!("0x{}", "ab".repeat(32)));
    assert_eq!(p["citations"][0]["blockNumber"], "21000000");
    assert_eq!(p["citations"].as_array().unwrap().len(), 1, "not from the sample: no dataset citation");
    assert_eq!(body["request"]["applied"]["daoId"], "compound");
});
