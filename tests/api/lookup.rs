//! `GET /v1/proposals/lookup` on the real sample (Snapshot URLs, ids, titles) and on the
//! synthetic fixture (Tally URLs, Discourse topic URLs, titles of linked topics).
use serde_json::Value;

use crate::daos::assert_no_floats;
use crate::fixtures::sample::{RFC_ID, RFC_TITLE};
use crate::fixtures::stores::synthetic_database;
use crate::helpers::{TestApp, snapshot_settings, spawn_app_on};
use crate::on_both_backends;

pub(crate) fn encode(s: &str) -> String {
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

fn titles_of(body: &Value) -> Vec<String> {
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
    // No title has both words: the closest has one, at 0.8 × 1/2 + 0.2 × 1/12, below the floor:
    // no match, and the 404 names it.
    let (status, body) = lookup(&app, &format!("title={}", encode("statute zebra"))).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["candidates"][0]["externalId"], RFC_ID);
    assert_eq!(body["candidates"][0]["confidence"], "0.4167");
    // The documented example of this 404 is this answer.
    let example = serde_json::to_value(govdata::contract::errors::Problem::lookup_not_found_example()).unwrap();
    assert_eq!(body["detail"], example["detail"]);
    assert_eq!(body["candidates"][0], example["candidates"][0]);
});

on_both_backends!(lookup_by_title_with_typos, |app: TestApp| async move {
    // Swapped neighbours, dropped letters: trigrams find the title, the typo allowance scores it.
    for (query, confidence) in [
        // statue → statu(te): 5/6; of: 1; limitaions → limitat(ions): 9/10;
        // 0.8 × (41/15 ÷ 3) + 0.2 × (41/15 ÷ 12).
        ("Statue of Limitaions", "0.7744"),
        ("Establishign a Statute of Limitatoins for Temprature Checks", "0.9013"),
    ] {
        let (status, body) = lookup(&app, &format!("title={}", encode(query))).await;
        assert_eq!(status, 200, "{query}: {body}");
        assert_eq!(body["data"]["proposal"]["externalId"], RFC_ID, "{query}");
        assert_eq!(body["data"]["match"], serde_json::json!({"by": "title", "confidence": confidence}), "{query}");
    }
    let (status, body) = lookup(&app, &format!("title={}", encode("Adopt an OEV Solution on Mantel"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["proposal"]["title"], "Adopt an OEV Solution on Mantle (2025 RFP)");
});

// The example: one common word of six found is no match. The 404 lists the closest.
on_both_backends!(lookup_nonsense_title_is_not_found_with_candidates, |app: TestApp| async move {
    let (status, body) = lookup(&app, &format!("title={}", encode("zzzz qqqq no such proposal xkcd"))).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["code"], "NOT_FOUND");
    let candidates = body["candidates"].as_array().expect("candidates");
    assert!(!candidates.is_empty() && candidates.len() <= 5, "{body}");
    for c in candidates {
        assert_eq!(c["kind"], "proposal");
        let confidence: f64 = c["confidence"].as_str().unwrap().parse().unwrap();
        assert!(confidence > 0.0 && confidence < 0.6, "{c}");
    }
    assert_no_floats(&body, "$");
    let mut settings = snapshot_settings();
    settings.add_redaction(".requestId", "[requestId]");
    settings.bind(|| insta::assert_json_snapshot!("v1_proposals_lookup_nonsense_title", body));

    // Nothing close at all: an empty list.
    let (status, body) = lookup(&app, "title=qwxzzy").await;
    assert_eq!(status, 404);
    assert_eq!(body["candidates"], serde_json::json!([]));
    // Identifiers are exact: no candidates.
    let (status, body) = lookup(&app, "externalId=0xnothing").await;
    assert_eq!(status, 404);
    assert!(body.get("candidates").is_none(), "{body}");
});

fn confidences(items: &[Value]) -> Vec<&str> {
    items.iter().map(|c| c["confidence"].as_str().unwrap()).collect()
}

on_both_backends!(lookup_by_title_ranks_and_filters, |app: TestApp| async move {
    // Four titles hold every word: none stands clearly above the others (two tie at 0.96), so
    // the answer is 404 with the four, ranked.
    let (status, body) = lookup(&app, "title=treasury%20delegation%20round%202").await;
    assert_eq!(status, 404, "{body}");
    let candidates = body["candidates"].as_array().unwrap();
    let titles: Vec<&str> = candidates.iter().map(|c| c["title"].as_str().unwrap()).collect();
    assert_eq!(
        titles,
        [
            " Treasury Delegation Round 2 Elections",
            "GLI — Treasury delegation Round 2",
            "[Temp Check] Treasury Delegation Round 2",
            "[Temp Check/Revised] Treasury Delegation Round 2",
        ]
    );
    assert_eq!(confidences(candidates), ["0.96", "0.96", "0.9333", "0.9143"]);
    // One of them named in full is a match; the longer title holding all its words is the
    // alternative.
    let (status, body) = lookup(&app, &format!("title={}", encode("[Temp Check] Treasury Delegation Round 2"))).await;
    assert_eq!(status, 200, "{body}");
    assert_no_floats(&body, "$");
    assert_eq!(
        titles_of(&body),
        ["[Temp Check] Treasury Delegation Round 2", "[Temp Check/Revised] Treasury Delegation Round 2"]
    );
    assert_eq!(body["data"]["match"]["confidence"], "1");
    assert_eq!(body["data"]["alternatives"][0]["confidence"], "0.9714");
    snapshot_settings().bind(|| insta::assert_json_snapshot!("v1_proposals_lookup_title_treasury_delegation", body));

    // The same words in two DAOs; daoId keeps one.
    let daos = |body: &Value| -> Vec<String> {
        body["candidates"].as_array().unwrap().iter().map(|c| c["daoId"].as_str().unwrap().to_owned()).collect()
    };
    let (status, body) = lookup(&app, "title=delegate%20incentiv%20program").await;
    assert_eq!(status, 404, "{body}");
    let all = daos(&body);
    assert!(all.contains(&"lido".to_owned()) && all.contains(&"arbitrum".to_owned()), "{all:?}");
    // In Lido, two titles still hold every word (0.92 and 0.9): no single one.
    let (status, body) = lookup(&app, "title=delegate%20incentiv%20program&daoId=lido").await;
    assert_eq!(status, 404, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("in DAO `lido`"), "{body}");
    assert_eq!(daos(&body), ["lido", "lido"]);
    let candidates = body["candidates"].as_array().unwrap();
    assert_eq!(confidences(candidates), ["0.92", "0.9"]);
    let (status, body) = lookup(&app, "title=delegate%20incentiv%20program%202.0&daoId=lido").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(titles_of(&body), ["Delegate Incentivization Program 2.0"]);
    assert_eq!(body["request"]["applied"]["daoId"], "lido");

    // At most five alternatives: the misspelt chain is in one title, the rest in nine others.
    let (status, body) = lookup(&app, &format!("title={}", encode("Adopt an OEV Solution on Mantel"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["alternatives"].as_array().unwrap().len(), 5);
});

// Issue 26: a common word fits many titles alike and identifies none. The shortest title has the
// best confidence (0.8154), but the word fits the others as well: 404 with the candidates, the
// detail naming the margin.
on_both_backends!(lookup_common_word_is_not_a_match, |app: TestApp| async move {
    use govdata::contract::limits::lookup::TITLE_MARGIN;
    let phase = "Phase 1 of the $COMP Distribution is Live Following a Successful DAO Vote!";
    let after = "After a Successful DAO Vote, Compound decided to Launch the 1 Phase of the $COMP Distribution";
    for query in ["vote", "Vote", "successful dao vote"] {
        let (status, body) = lookup(&app, &format!("title={}", encode(query))).await;
        assert_eq!(status, 404, "{query}: {body}");
        assert_eq!(body["code"], "NOT_FOUND");
        let detail = body["detail"].as_str().unwrap();
        assert!(detail.contains("does not stand clearly above the next ones"), "{detail}");
        assert!(detail.contains(&format!("at least {TITLE_MARGIN} better")), "{detail}");
        let candidates = body["candidates"].as_array().unwrap();
        let titles: Vec<&str> = candidates.iter().map(|c| c["title"].as_str().unwrap()).collect();
        assert_eq!(titles, [phase, after, after, after], "{query}");
        assert!(candidates.iter().all(|c| c["daoId"] == "compound" && c["kind"] == "proposal"));
        assert_no_floats(&body, "$");
    }
    let (_, body) = lookup(&app, "title=vote").await;
    assert_eq!(confidences(body["candidates"].as_array().unwrap()), ["0.8154", "0.8133", "0.8133", "0.8133"]);
    assert_eq!(
        body["detail"],
        format!(
            "No single proposal title matches `title` = `vote`: the best match (confidence 0.8154) does not stand \
             clearly above the next ones (3 other proposals fit the words about as well). A title is answered only \
             when the words fit it at least {TITLE_MARGIN} better (query words found ÷ query words) than every other \
             title, or name all of its words and not all of the other's; `candidates` lists the closest."
        )
    );
    let mut settings = snapshot_settings();
    settings.add_redaction(".requestId", "[requestId]");
    settings.bind(|| insta::assert_json_snapshot!("v1_proposals_lookup_common_word", body));

    // Named in full, the title is a match.
    let (status, body) = lookup(&app, &format!("title={}", encode(phase))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["proposal"]["title"], phase);
    // A word of one title only is a match, even when that title was posted three times: the
    // copies cannot be told apart by title, and the two older are the alternatives.
    let (status, body) = lookup(&app, "title=decided").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(titles_of(&body), [after, after, after]);
    let c = body["data"]["match"]["confidence"].as_str().unwrap();
    assert_eq!(confidences(body["data"]["alternatives"].as_array().unwrap()), [c, c]);
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

    // Words beyond the search's limit are dropped, and the echo says which were used: the
    // title's twelve words and four others are searched (12 of 16 found: a match).
    let words: Vec<String> =
        govdata::rules::lookup::words(RFC_TITLE).into_iter().chain((13..=20).map(|i| format!("w{i}"))).collect();
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

// The trigram indexes follow what publication writes, in the same transaction as the rows (SQLite
// triggers, a PostgreSQL index): a title published, then renamed upstream, is found with typos
// by its new title (which shares no three-letter piece with the old one, so only an updated index
// finds it), and no longer by the old.
on_both_backends!(lookup_trigram_indexes_follow_publication, |backend: Backend| async move {
    use crate::fixtures::testgov::{big, options, world};
    let w = world(backend).await;
    govdata::ingest::run_once(&w.db, &w.registry, &options()).await.expect("first run");
    let (status, body) = lookup(&w.app, &format!("title={}", encode("Fund the grnats progam"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["proposal"]["externalId"], big());

    w.hub_data.lock().unwrap().proposals[0].title = "Scholarship committee renewal".to_owned();
    let run = govdata::ingest::run_once(&w.db, &w.registry, &options()).await.expect("second run");
    assert!(run.published.revision_id.is_some(), "the new title is published: {run}");
    let (status, body) = lookup(&w.app, &format!("title={}", encode("Scholarhsip comittee renwal"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["proposal"]["externalId"], big());
    assert_eq!(body["data"]["proposal"]["title"], "Scholarship committee renewal");
    let (status, body) = lookup(&w.app, &format!("title={}", encode("grnats progam"))).await;
    assert_eq!(status, 404, "the old title no longer resolves: {body}");
});

// Issue 45: the DAO's own name, the kind of item (`proposal`) and words held by more than a fifth
// of the DAO's titles identify nothing. `uniswap proposal` named the one title holding both words
// (0.9): 404 with it as the closest candidate. One word that tells titles apart identifies.
on_both_backends!(lookup_dao_names_and_common_words_identify_nothing, |app: TestApp| async move {
    use govdata::contract::limits::lookup::COMMON_WORD_SHARE;
    let factory = "Uniswap Community Proposal Factory";
    let etherlink = "[TEMP CHECK] - Etherlink Co-incentives Proposal";
    for query in ["uniswap proposal", "Uniswap Proposal", "uni proposal", "uniswap proposals"] {
        for scope in ["", "&daoId=uniswap"] {
            let (status, body) = lookup(&app, &format!("title={}{scope}", encode(query))).await;
            assert_eq!(status, 404, "{query}{scope}: {body}");
            assert_eq!(body["code"], "NOT_FOUND");
            let detail = body["detail"].as_str().unwrap();
            let [name, kind] = [0, 1].map(|i| query.split(' ').nth(i).unwrap().to_lowercase());
            assert!(detail.contains(&format!("`{name}`, `{kind}` are common in the DAO's titles")), "{detail}");
            assert_eq!(body["candidates"][0]["title"], factory, "{body}");
            assert_no_floats(&body, "$");
        }
    }
    // Only common words: the name and words of more than a fifth of Uniswap's titles.
    // Only common words: the name and words of more than a fifth of Uniswap's titles.
    let (status, body) = lookup(&app, &format!("title={}", encode("uniswap temp check"))).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["code"], "NOT_FOUND");
    assert_eq!(
        body["detail"],
        format!(
            "No proposal title is identified by `title` = `uniswap temp check`: `uniswap`, `temp`, `check` are common \
             in the DAO's titles (the DAO's id, names and ticker, the word `proposal`, and words held by more than \
             {COMMON_WORD_SHARE} of its titles), and common words identify none; `candidates` lists the closest."
        )
    );
    let candidates = body["candidates"].as_array().unwrap();
    assert!(!candidates.is_empty() && candidates.iter().all(|c| c["daoId"] == "uniswap"), "{body}");
    assert_no_floats(&body, "$");
    // One word that tells the titles apart identifies.
    for (query, title, confidence) in [
        ("uniswap proposal factory", factory, "0.95"),
        (factory, factory, "1"),
        ("temp check etherlink", etherlink, "0.9"),
    ] {
        let (status, body) = lookup(&app, &format!("title={}", encode(query))).await;
        assert_eq!(status, 200, "{query}: {body}");
        assert_eq!(body["data"]["proposal"]["title"], title, "{query}");
        assert_eq!(body["data"]["match"]["confidence"], confidence, "{query}");
    }
});

// The counts of title words follow publication: titles ingested make words common, and a title
// renamed upstream gives its words back.
on_both_backends!(lookup_common_words_follow_publication, |backend: Backend| async move {
    use crate::fixtures::testgov::{BASE, PROPOSALS, big, options, proposal_id, world};
    use crate::fixtures::upstreams::HubProposal;
    let w = world(backend).await;
    govdata::ingest::run_once(&w.db, &w.registry, &options()).await.expect("first run");
    let (status, body) = lookup(&w.app, "title=grants%20program").await;
    assert_eq!(status, 200, "one title of 1003 holds the words: {body}");
    assert_eq!(body["data"]["proposal"]["externalId"], big());

    // 250 more titles hold them: 251 of 1253, more than a fifth.
    {
        let mut hub = w.hub_data.lock().unwrap();
        for i in 0..250 {
            hub.proposals.push(HubProposal {
                id: proposal_id(PROPOSALS + 1 + i),
                created: BASE + 400_000 + i as i64 * 60,
                state: "closed",
                scores: vec!["1", "0"],
                scores_total: "1",
                scores_state: "final",
                title: format!("Grants program round {i}"),
                votes: 0,
            });
        }
    }
    let run = govdata::ingest::run_once(&w.db, &w.registry, &options()).await.expect("second run");
    assert!(run.published.revision_id.is_some(), "the new titles are published: {run}");
    let (status, body) = lookup(&w.app, "title=grants%20program").await;
    assert_eq!(status, 404, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("`grants`, `program` are common in the DAO's titles"), "{body}");
    let (status, body) = lookup(&w.app, "title=fund%20grants%20program").await;
    assert_eq!(status, 200, "`fund` identifies: {body}");
    assert_eq!(body["data"]["proposal"]["externalId"], big());

    // Renamed: 250 of 1253 hold the words, a fifth and no more. They tell titles apart again,
    // and fit the 250 alike.
    w.hub_data.lock().unwrap().proposals[0].title = "Scholarship committee renewal".to_owned();
    let run = govdata::ingest::run_once(&w.db, &w.registry, &options()).await.expect("third run");
    assert!(run.published.revision_id.is_some(), "the new title is published: {run}");
    let (status, body) = lookup(&w.app, "title=grants%20program").await;
    assert_eq!(status, 404, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("does not stand clearly above the next ones"), "{body}");
    let (status, body) = lookup(&w.app, "title=grants%20program%20round%20249").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["proposal"]["title"], "Grants program round 249");
});
