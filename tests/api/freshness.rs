use crate::{helpers::snapshot_settings, on_both_backends};

on_both_backends!(replica: system_freshness_reports_the_dataset, |app: TestApp| async move {
    let (status, body) = app.get_json("/v1/system/freshness").await;
    assert_eq!(status, 200);
    crate::daos::assert_no_floats(&body, "$");
    let data = &body["data"];
    assert_eq!(data["revision"]["id"], "1");
    assert_eq!(data["revision"]["dataAsOf"], body["freshness"]["dataAsOf"]);
    assert_eq!(data["lastRun"]["status"], "succeeded");
    assert_eq!(data["lastRun"]["rowsSkipped"], "0");
    let counts = &data["counts"];
    assert_eq!(counts["daos"], "8");
    assert_eq!(counts["proposals"], "131");
    assert_eq!(counts["ingestedVotes"], "19970");
    assert_eq!(counts["delegates"], "500");
    let sources = data["sources"].as_array().unwrap();
    assert!(sources.iter().any(|s| s["daoId"] == "arbitrum" && s["source"] == "snapshot"));
    for s in sources {
        let lag = s["lagSeconds"].as_str().unwrap();
        assert!(lag.chars().all(|c| c.is_ascii_digit() || c == '.'), "{lag}");
    }
    // The nodes read from: the primary, and the replica when there is one, each showing the
    // serving revision (the harness waits for the replica to replay it).
    let nodes = data["storeNodes"].as_array().unwrap();
    let replicated = app.serving.nodes().has_replicas();
    assert_eq!(nodes.len(), if replicated { 2 } else { 1 }, "{nodes:?}");
    for (node, name, role) in
        nodes.iter().zip([("primary", "primary"), ("replica-1", "replica")]).map(|(n, (a, b))| (n, a, b))
    {
        assert_eq!((node["name"].as_str(), node["role"].as_str()), (Some(name), Some(role)), "{node}");
        assert_eq!(node["state"], "serving", "{node}");
        assert_eq!(node["revision"], "1", "{node}");
        assert!(node.get("error").is_none(), "{node}");
        let lag = node["lagSeconds"].as_str().unwrap();
        assert!(lag.chars().all(|c| c.is_ascii_digit() || c == '.'), "{lag}");
    }
    // The snapshot is the same on every backend: the primary's line.
    let mut body = body;
    body["data"]["storeNodes"].as_array_mut().unwrap().truncate(1);
    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!("v1_freshness_get_sample", body, {
            ".data.revision.publishedAt" => "[publishedAt]",
            ".data.lastRun.startedAt" => "[startedAt]",
            ".data.lastRun.finishedAt" => "[finishedAt]",
            ".data.lastRun.id" => "[runId]",
            ".data.sources[].updatedAt" => "[updatedAt]",
            ".data.sources[].lagSeconds" => "[lagSeconds]",
        })
    });
});
