//! `GET /v1/items/{kind}/{externalId}` on the real sample, and on a synthetic fixture (forum
//! topics, on-chain proposals, identifiers shared by two DAOs) built on a fresh store.
use govdata::store::keys;
use serde_json::{Value, json};

use crate::daos::assert_no_floats;
use crate::fixtures::sample::{RFC_ID, RFC_TITLE};
use crate::fixtures::stores::synthetic_database;
use crate::helpers::{snapshot_settings, spawn_app_on};
use crate::on_both_backends;

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

on_both_backends!(items_forum_topic_synthetic, |backend: Backend| async move {
    let app = spawn_app_on(synthetic_database(backend)).await;
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

on_both_backends!(items_ambiguous_identifiers, |backend: Backend| async move {
    let app = spawn_app_on(synthetic_database(backend)).await;
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
