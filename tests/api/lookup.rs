//! `GET /v1/proposals/lookup` on the real sample (Snapshot URLs, ids, titles) and on the
//! synthetic fixture (Tally URLs, Discourse topic URLs, titles of linked topics).
use serde_json::Value;

use crate::daos::assert_no_floats;
use crate::fixtures::sample::{RFC_ID, RFC_TITLE};
use crate::fixtures::stores::synthetic_database;
use crate::helpers::{TestApp, snapshot_settings, spawn_app_on};
use crate::on_both_backends;

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn lookup(app: &TestApp, query: &str) -> (u16, Value) {
    app.get_json(&format!("/v1/proposals/lookup?{query}")).await
}

fn titles(body: &Value) -> Vec<String> {
    std::iter::once(&body["data"]["proposal"])
        .chain(body["data"]["alternatives"].as_array().unwrap().iter().map(|a| &a["proposal"]))
        .map(|p| p["title"].as_str().unwrap().to_owned())
        .collect()
}

on_both_backends!(lookup_by_snapshot_urls_and_external_id, |app: TestApp| async move {
    for url in [
        format!("https://snapshot.org/#/uniswapgovernance.eth/proposal/{RFC_ID}"),
        format!("https://snapshot.box/#/s:uniswapgovernance.eth/proposal/{RFC_ID}"),
        format!("snapshot.box/#/s:uniswapgovernance.eth/proposal/{RFC_ID}?tab=votes"),
    ] {
        let (status, body) = lookup(&app, &format!("url={}", encode(&url))).await;
        assert_eq!(status, 200, "{url}: {body}");
        assert_no_floats(&body, "$");
        let data = &body["data"];
        assert_eq!(data["match"], serde_json::json!({"by": "url", "confidence": "1"}));
        assert_eq!(data["proposal"]["externalId"], RFC_ID);
        assert_eq!(data["proposal"]["daoId"], "uniswap");
        assert_eq!(data["proposal"]["title"], RFC_TITLE);
        assert_eq!(data["proposal"]["upstreamVotes"], "133");
        assert_eq!(data["proposal"]["ingestedVotes"], "0");
        assert_eq!(data["alternatives"], serde_json::json!([]));
        assert_eq!(body["request"]["params"]["url"], url);
        assert_eq!(body["request"]["applied"]["by"], "url");
    }
    // A Snapshot URL whose space does not govern the proposal does not match.
    let url = format!("https://snapshot.org/#/arbitrumfoundation.eth/proposal/{RFC_ID}");
    let (status, body) = lookup(&app, &format!("url={}", encode(&url))).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["code"], "NOT_FOUND");

    let (status, body) = lookup(&app, &format!("externalId={RFC_ID}")).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["match"], serde_json::json!({"by": "externalId", "confidence": "1"}));
    assert_eq!(body["data"]["proposal"]["title"], RFC_TITLE);
    let (status, body) = lookup(&app, &format!("externalId={RFC_ID}&daoId=lido")).await;
    assert_eq!(status, 404, "daoId filters: {body}");
    let url = format!("https://snapshot.org/#/uniswapgovernance.eth/proposal/{RFC_ID}");
    let (_, body) = lookup(&app, &format!("url={}", encode(&url))).await;
    snapshot_settings().bind(|| insta::assert_json_snapshot!("v1_proposals_lookup_snapshot_url", body));
});

on_both_backends!(lookup_by_title_partial_and_reordered, |app: TestApp| async move {
    for query in ["Statute Limitations", "limitations statute", "statut limit", "LIMITATIONS, Statute!"] {
        let (status, body) = lookup(&app, &format!("title={}", encode(query))).await;
        assert_eq!(status, 200, "{query}: {body}");
        let data = &body["data"];
        assert_eq!(data["proposal"]["externalId"], RFC_ID, "{query}");
        assert_eq!(data["match"]["by"], "title");
        // 0.8 × 2/2 + 0.2 × 2/12
        assert_eq!(data["match"]["confidence"], "0.8333", "{query}");
    }
    // The full title is a certain match.
    let (_, body) = lookup(&app, &format!("title={}", encode(RFC_TITLE))).await;
    assert_eq!(body["data"]["match"]["confidence"], "1");
    // No title has both words: falls back to any word, at a lower confidence (0.8 × 1/2 + 0.2 × 1/12).
    let (status, body) = lookup(&app, &format!("title={}", encode("statute zebra"))).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["proposal"]["externalId"], RFC_ID);
    assert_eq!(body["data"]["match"]["confidence"], "0.4167");
});

on_both_backends!(lookup_by_title_ranks_and_filters, |app: TestApp| async move {
    let (status, body) = lookup(&app, "title=treasury%20delegation%20round%202").await;
    assert_eq!(status, 200);
    assert_no_floats(&body, "$");
    assert_eq!(
        titles(&body),
        [
            " Treasury Delegation Round 2 Elections",
            "GLI — Treasury delegation Round 2",
            "[Temp Check] Treasury Delegation Round 2",
            "[Temp Check/Revised] Treasury Delegation Round 2",
        ]
    );
    let confidences: Vec<&str> = std::iter::once(&body["data"]["match"]["confidence"])
        .chain(body["data"]["alternatives"].as_array().unwrap().iter().map(|a| &a["confidence"]))
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(confidences, ["0.96", "0.96", "0.9333", "0.9143"]);
    snapshot_settings().bind(|| insta::assert_json_snapshot!("v1_proposals_lookup_title_treasury_delegation", body));

    // The same words in two DAOs; daoId keeps one.
    let (_, body) = lookup(&app, "title=delegate%20incentiv%20program").await;
    let daos: Vec<String> = std::iter::once(&body["data"]["proposal"])
        .chain(body["data"]["alternatives"].as_array().unwrap().iter().map(|a| &a["proposal"]))
        .map(|p| p["daoId"].as_str().unwrap().to_owned())
        .collect();
    assert!(daos.contains(&"lido".to_owned()) && daos.contains(&"arbitrum".to_owned()), "{daos:?}");
    let (status, body) = lookup(&app, "title=delegate%20incentiv%20program&daoId=lido").await;
    assert_eq!(status, 200);
    assert_eq!(
        titles(&body),
        ["Delegate Incentivization Program 2.0", "Extend Delegate Incentivization Program through 2025"]
    );
    assert_eq!(body["data"]["match"]["confidence"], "0.92");
    assert_eq!(body["data"]["alternatives"][0]["confidence"], "0.9");
    assert_eq!(body["request"]["applied"]["daoId"], "lido");

    // At most five alternatives.
    let (_, body) = lookup(&app, "title=adopt%20oev").await;
    assert_eq!(body["data"]["alternatives"].as_array().unwrap().len(), 5);
});

on_both_backends!(lookup_rejects_and_misses, |app: TestApp| async move {
    let (status, body) = lookup(&app, "").await;
    assert_eq!(status, 400);
    assert_eq!(body["code"], "VALIDATION_ERROR");
    let names: Vec<&str> = body["errors"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["url", "externalId", "title"]);

    let (status, body) = lookup(&app, "title=x&externalId=y").await;
    assert_eq!(status, 400);
    let names: Vec<&str> = body["errors"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["externalId", "title"]);

    let (status, body) = lookup(&app, "url=https%3A%2F%2Fexample.com%2Fproposal%2F1").await;
    assert_eq!(status, 400);
    assert_eq!(body["errors"][0]["name"], "url");
    assert_eq!(body["errors"][0]["received"], "https://example.com/proposal/1");

    let (status, body) = lookup(&app, "title=%21%21%21").await;
    assert_eq!(status, 400);
    assert_eq!(body["errors"][0]["name"], "title");

    // Words beyond the search's limit are dropped, and the echo says which were used.
    let words: Vec<String> = std::iter::once("statute".to_owned()).chain((2..=20).map(|i| format!("w{i}"))).collect();
    let (_, body) = lookup(&app, &format!("title={}", words.join("+"))).await;
    assert_eq!(
        body["request"]["adjustments"],
        serde_json::json!([{
            "param": "title",
            "received": words.join(" "),
            "applied": words[..16].join(" "),
            "reason": "truncated_to_max_words",
        }]),
        "{body}"
    );

    for query in ["title=qwxzzy", "externalId=0xnothing", "title=statute&daoId=arbitrum"] {
        let (status, body) = lookup(&app, query).await;
        assert_eq!(status, 404, "{query}: {body}");
        assert_eq!(body["code"], "NOT_FOUND");
    }
});

on_both_backends!(lookup_tally_and_discourse_urls, |backend: Backend| async move {
    let app = spawn_app_on(synthetic_database(backend)).await;
    // Tally: the organisation slug names the DAO among governors sharing the id.
    let (status, body) = lookup(&app, "url=https%3A%2F%2Fwww.tally.xyz%2Fgov%2Funiswap%2Fproposal%2F77").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["match"], serde_json::json!({"by": "url", "confidence": "1"}));
    assert_eq!(body["data"]["proposal"]["daoId"], "uniswap");
    assert_eq!(body["data"]["proposal"]["source"], "onchain");
    assert_eq!(body["data"]["proposal"]["ingestedVotes"], "2");
    // An organisation that names no DAO: both candidates, each 1/2.
    let (_, body) = lookup(&app, "url=https%3A%2F%2Fwww.tally.xyz%2Fgov%2Fsomeorg%2Fproposal%2F77").await;
    assert_eq!(body["data"]["match"]["confidence"], "0.5");
    assert_eq!(body["data"]["proposal"]["daoId"], "compound");
    assert_eq!(body["data"]["alternatives"][0]["proposal"]["daoId"], "uniswap");
    assert_eq!(body["data"]["alternatives"][0]["confidence"], "0.5");
    let (_, body) = lookup(&app, "externalId=77").await;
    assert_eq!(body["data"]["match"], serde_json::json!({"by": "externalId", "confidence": "0.5"}));

    // Discourse: the topic's linked proposal.
    let (status, body) = lookup(&app, "url=https%3A%2F%2Fforum.example%2Ft%2Fsynthetic-zebra-statute%2F4242%2F3").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["match"], serde_json::json!({"by": "url", "confidence": "1"}));
    assert_eq!(body["data"]["proposal"]["externalId"], RFC_ID);
    // Same topic id on another forum host: no match.
    let (status, _) = lookup(&app, "url=https%3A%2F%2Fother.example%2Ft%2Fx%2F4242").await;
    assert_eq!(status, 404);
    // A known topic without a linked proposal.
    let (status, body) = lookup(&app, "url=https%3A%2F%2Fforum.example%2Ft%2Fsynthetic-unlinked%2F4343").await;
    assert_eq!(status, 404);
    assert!(body["detail"].as_str().unwrap().contains("not linked"), "{body}");

    // Titles of linked forum topics lead to their proposal.
    let (status, body) = lookup(&app, "title=zebra").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["proposal"]["externalId"], RFC_ID);
    assert_eq!(body["data"]["match"]["by"], "title");
    // Topic title words: synthetic zebra discussion of the statute limitations (7): 0.8 + 0.2 × 1/7.
    assert_eq!(body["data"]["match"]["confidence"], "0.8286");
});
