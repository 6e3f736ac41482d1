//! The published documents: what the code generates is what the server serves, parses as OpenAPI
//! 3, and carries on each operation what agents and SDK generators rely on; its insta snapshots
//! (`documents_<surface>_<format>`) guard v1. That the committed `openapi/` equals what the code
//! generates is checked in one place: `codegen check`, run as a test by `codegen/tests/contract.rs`.
use govdata::{
    api,
    contract::{access::Prices, operations},
};
use serde_json::Value;

use crate::helpers::{sample_database, snapshot_settings, spawn_app_with};
use crate::on_both_backends;

/// The documents as the code generates them, with the default prices (what a test server and
/// the committed files show).
fn generated(name: &str) -> String {
    let documents = api::documents(Prices::default());
    let file = documents.files().into_iter().find(|(n, _)| *n == name);
    file.unwrap_or_else(|| panic!("{name} is generated")).1.to_owned()
}

#[test]
fn documents_parse_as_openapi_3() {
    for name in ["v1.json", "v2.json"] {
        let doc: openapiv3::OpenAPI = serde_json::from_str(&generated(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(doc.openapi.starts_with("3."), "{name}");
        assert!(!doc.paths.paths.is_empty(), "{name} has paths");
    }
    for name in ["v1.yaml", "v2.yaml"] {
        let _: openapiv3::OpenAPI = serde_yaml::from_str(&generated(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn every_operation_is_documented_for_agents() {
    let documents = api::documents(Prices::default());
    let mut seen = Vec::new();
    for published in [&documents.v1, &documents.v2] {
        let doc = &published.json;
        for (template, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let id = op["operationId"].as_str().unwrap_or_else(|| panic!("{method} {template} has an operationId"));
                let local = id.strip_prefix(published.version.id_prefix()).unwrap_or(id);
                let (resource, verb) = local.split_once('_').unwrap_or_else(|| panic!("{id} is <resource>_<verb>"));
                assert!(
                    !resource.is_empty()
                        && !verb.is_empty()
                        && local.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                    "{id}"
                );
                assert!(
                    !seen.iter().any(|(_, other)| other == id),
                    "{id}: an operationId is unique across both documents (generators merge them)"
                );
                for (status, response) in op["responses"].as_object().unwrap() {
                    assert_eq!(
                        response["headers"]["x-request-id"]["schema"]["type"], "string",
                        "{id}: the {status} response declares x-request-id"
                    );
                }
                assert_eq!(op["tags"].as_array().map(Vec::len), Some(1), "{id}: exactly one tag");
                assert!(op["summary"].as_str().is_some_and(|s| !s.is_empty()), "{id}: summary");
                assert!(
                    op["description"].as_str().is_some_and(|s| s.len() > 80),
                    "{id}: a description an agent can decide on"
                );
                for p in op["parameters"].as_array().into_iter().flatten() {
                    assert!(
                        p["description"].as_str().is_some_and(|s| !s.is_empty()),
                        "{id}: parameter {} described",
                        p["name"]
                    );
                }
                let decl = operations::find(published.version, id)
                    .unwrap_or_else(|| panic!("{id} declared in contract::operations"));
                let access = &op["x-govdata-access"];
                match decl.tier() {
                    None if decl.partner_tier().is_some() => {
                        // A partner's own webhooks: its token only, no price, no payment.
                        assert_eq!(access["tier"], "partner", "{id}");
                        assert!(access.get("price").is_none() && op["responses"].get("402").is_none(), "{id}");
                        assert_eq!(op["security"], serde_json::json!([{ "partnerToken": [] }]), "{id}: security");
                        for status in ["401", "403"] {
                            assert!(op["responses"][status].is_object(), "{id}: documents {status}");
                        }
                    }
                    None => assert_eq!(access["tier"], "free", "{id}"),
                    Some(tier) => {
                        assert_eq!(access["tier"], tier.as_str(), "{id}");
                        assert!(access["price"].as_str().is_some_and(|p| p.parse::<u64>().is_ok()), "{id}: price");
                        assert_eq!(op["security"][0]["partnerToken"], serde_json::json!([]), "{id}: security");
                        for status in ["401", "402", "403"] {
                            assert!(op["responses"][status].is_object(), "{id}: documents {status}");
                        }
                    }
                }
                // A stream answers Server-Sent Events, and says for how long a payment holds it;
                // every other operation answers JSON.
                assert_eq!(access["paidSeconds"].is_u64(), decl.streams, "{id}");
                let media = if decl.streams {
                    "text/event-stream"
                } else if decl.downloads {
                    "application/vnd.apache.parquet"
                } else {
                    "application/json"
                };
                let mut statuses = 0;
                for (status, response) in op["responses"].as_object().unwrap() {
                    if status.starts_with('4') || status.starts_with('5') {
                        statuses += 1;
                        // An operation with a request body may name a body member in its problems.
                        let problem = if op.get("requestBody").is_some() { "BodyProblem" } else { "Problem" };
                        assert_eq!(
                            response["content"]["application/problem+json"]["schema"]["$ref"],
                            format!("#/components/schemas/{problem}"),
                            "{id}: {status} uses the problem schema"
                        );
                    } else if status != "204" && status != "304" {
                        // Every success with a body has a schema and an example (a 204 and a 304
                        // have neither).
                        let schema = &response["content"][media]["schema"];
                        assert!(schema.is_object(), "{id}: {status} has a schema");
                        assert!(has_example(doc, schema, 0), "{id}: {status} has an example");
                    }
                }
                assert!(statuses >= 2, "{id}: error responses documented");
                seen.push((published.version, id.to_owned()));
            }
        }
        assert!(doc["components"]["schemas"]["Problem"]["example"].is_object(), "the problem schema has an example");
        assert!(!published.json_text.contains("x-internal-token"), "the internal token is never published");
    }
    // The operation table and the documents list the same operations.
    let mut declared: Vec<_> = operations::ALL.iter().map(|d| (d.version, d.id.to_owned())).collect();
    declared.sort_by(|a, b| (a.0 as u8, &a.1).cmp(&(b.0 as u8, &b.1)));
    seen.sort_by(|a, b| (a.0 as u8, &a.1).cmp(&(b.0 as u8, &b.1)));
    assert_eq!(seen, declared);
}

/// Whether the response schema carries an example on it or on the payload it wraps (`data`,
/// `data.items[]`), following `$ref`s.
fn has_example(doc: &Value, schema: &Value, depth: u8) -> bool {
    let schema = match schema["$ref"].as_str() {
        Some(r) => &doc["components"]["schemas"][r.rsplit('/').next().unwrap()],
        None => schema,
    };
    if schema.get("example").is_some() {
        return true;
    }
    depth < 4
        && ["data", "items"].iter().any(|p| {
            let member = &schema["properties"][p];
            has_example(doc, if member["type"] == "array" { &member["items"] } else { member }, depth + 1)
        })
}

/// Issue 17 (1, 2) in the documents: every schema that names a voter (`voter` or
/// `voterIdentity`) carries `voterIdentity` and `address` (required) and `ens` (optional); every
/// schema with a `votingPower` carries `votingPowerFromFloat`, a boolean required exactly when the
/// power is, described by the one declared text. The schemas found are listed, so a walk that
/// finds none fails.
#[test]
fn voters_and_powers_have_one_shape_in_every_schema() {
    let documents = api::documents(Prices::default());
    let text = govdata::contract::decimal::FROM_FLOAT_TEXT;
    let mut found = Vec::new();
    for published in [&documents.v1, &documents.v2] {
        let version = format!("{:?}", published.version);
        for (name, schema) in published.json["components"]["schemas"].as_object().unwrap() {
            let properties = &schema["properties"];
            let required: Vec<&str> =
                schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            let at = format!("{version} {name}");
            if properties.get("voter").is_some() || properties.get("voterIdentity").is_some() {
                found.push(format!("{at}: voter"));
                for member in ["voterIdentity", "address"] {
                    assert_eq!(properties[member]["type"], "string", "{at}.{member}");
                    assert!(required.contains(&member), "{at}.{member} is required");
                }
                assert_eq!(properties["ens"]["type"], "string", "{at}.ens");
                assert!(!required.contains(&"ens"), "{at}.ens is present only when known");
            }
            if properties.get("votingPower").is_some() {
                found.push(format!("{at}: votingPower"));
                let flag = &properties["votingPowerFromFloat"];
                assert_eq!(flag["type"], "boolean", "{at}.votingPowerFromFloat");
                assert_eq!(flag["description"].as_str().map(|d| d.starts_with(text)), Some(true), "{at}: {flag}");
                assert_eq!(
                    required.contains(&"votingPowerFromFloat"),
                    required.contains(&"votingPower"),
                    "{at}: the flag is present exactly when the power is"
                );
            }
        }
    }
    found.sort();
    assert_eq!(
        found,
        [
            "V1 BriefDelegate: voter",
            "V1 BriefDelegate: votingPower",
            "V1 BriefVoter: voter",
            "V1 BriefVoter: votingPower",
            "V1 DecidingVote: voter",
            "V1 DecidingVote: votingPower",
            "V1 EvidenceVote: voter",
            "V1 EvidenceVote: votingPower",
            "V2 DecidingVote: voter",
            "V2 DecidingVote: votingPower",
            "V2 DelegateRank: voter",
            "V2 DelegateRank: votingPower",
            "V2 Delegation: votingPower",
            "V2 PowerChange: votingPower",
            "V2 ProposalVote: voter",
            "V2 ProposalVote: votingPower",
            "V2 RankedVoter: voter",
            "V2 RankedVoter: votingPower",
            "V2 VoterInDao: votingPower",
            "V2 VoterProfile: voter",
            "V2 VoterVote: voter",
            "V2 VoterVote: votingPower",
        ]
    );
}

#[test]
fn document_snapshots() {
    let documents = api::documents(Prices::default());
    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!("documents_v1_json", documents.v1.json);
        insta::assert_json_snapshot!("documents_v2_json", documents.v2.json);
    });
}

on_both_backends!(served_documents_are_the_generated_ones, |app: TestApp| async move {
    for (path, file, content_type) in [
        ("/v1/openapi.json", "v1.json", "application/json"),
        ("/v1/openapi.yaml", "v1.yaml", "application/yaml"),
        ("/v2/openapi.json", "v2.json", "application/json"),
        ("/v2/openapi.yaml", "v2.yaml", "application/yaml"),
        ("/v1/openapi.3.1.json", "v1.3.1.json", "application/json"),
        ("/v2/openapi.3.1.json", "v2.3.1.json", "application/json"),
    ] {
        let r = app.get(path).await;
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(r.headers()["content-type"], content_type, "{path}");
        assert_eq!(r.text().await.unwrap(), generated(file), "{path} serves the generated {file}");
    }
    let docs = app.get("/docs").await.text().await.unwrap();
    assert!(docs.contains("/docs/v1") && docs.contains("/docs/v2"));
    let redoc = app.get("/docs/v1").await.text().await.unwrap();
    assert!(redoc.contains("Redoc.init") && redoc.contains("x-govdata-access"), "the page shows the finished document");
});

/// An operation's declared page size and window are what its published `limit` parameter and
/// description say: the declaration feeds the operation table, the parameter type feeds the
/// document, and this keeps the two one fact.
#[test]
fn declared_limits_match_the_documents() {
    let documents = api::documents(Prices::default());
    for version in [govdata::contract::access::Version::V1, govdata::contract::access::Version::V2] {
        let doc = &documents.get(version).json;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for op in item.as_object().unwrap().values() {
                let id = op["operationId"].as_str().unwrap();
                let decl = operations::find(version, id).unwrap();
                let limit = op["parameters"].as_array().into_iter().flatten().find(|p| p["name"] == "limit");
                match (decl.page, limit) {
                    (None, None) => {}
                    (Some(page), Some(limit)) => {
                        let schema = &limit["schema"];
                        assert_eq!(schema["default"], page.default, "{path}: default");
                        if version == govdata::contract::access::Version::V2 {
                            assert_eq!(schema["maximum"].as_f64(), Some(f64::from(page.max)), "{path}: maximum");
                        } else {
                            let text = schema["description"].as_str().unwrap_or_default();
                            assert!(text.contains(&format!("at most {}", page.max)), "{path}: {text}");
                        }
                    }
                    (page, limit) => panic!("{path}: declared page {page:?}, published limit {limit:?}"),
                }
                let description = op["description"].as_str().unwrap_or_default();
                if let Some(window) = decl.window {
                    assert!(description.contains(&format!("{} days", window.max_days)), "{path}: {description}");
                }
            }
        }
    }
}

// The committed documents name no host; a deployment that states its public URL serves them
// with it as their one server, so a client that reads the document from elsewhere still knows
// where to call.
on_both_backends!(served_documents_name_the_configured_public_url, |backend: Backend| async move {
    let app =
        spawn_app_with(sample_database(backend), |a| a.public_url = Some("https://api.govdata.test/".to_owned())).await;
    for (path, file) in [("/v1/openapi.json", "v1.json"), ("/v2/openapi.json", "v2.json")] {
        let served: Value = app.get(path).await.json().await.unwrap();
        assert_eq!(
            served["servers"],
            serde_json::json!([{"url": "https://api.govdata.test", "description": "This deployment."}])
        );
        let mut committed: Value = serde_json::from_str(&generated(file)).unwrap();
        assert!(committed["servers"].as_array().is_none_or(Vec::is_empty), "{file} stays host-neutral");
        committed["servers"] = served["servers"].clone();
        assert_eq!(served, committed, "{path} is the committed document with its server");
    }
    let yaml = app.get("/v2/openapi.yaml").await.text().await.unwrap();
    assert!(yaml.contains("url: \"https://api.govdata.test\""), "the YAML rendition names it too");
});

// `/llms.txt` is made from the operation table and the documents: one line per operation, with
// its access and price as declared, linking to its reference section; under the public URL when
// the operator named one. The committed `openapi/llms.txt` is the host-neutral rendition.
on_both_backends!(llms_txt_lists_every_operation_from_the_declarations, |backend: Backend| async move {
    let app =
        spawn_app_with(sample_database(backend), |a| a.public_url = Some("https://api.govdata.test".to_owned())).await;
    let response = app.get("/llms.txt").await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/plain; charset=utf-8");
    let text = response.text().await.unwrap();
    assert!(text.starts_with("# govdata\n\n> "), "the llms.txt heading and summary: {text}");
    let prices = Prices::default();
    let documents = api::documents(prices);
    let mut lines = 0;
    for decl in operations::ALL {
        let published = documents.get(decl.version);
        let (method, template, _) = published.operations().find(|(_, _, id)| *id == decl.id).expect("documented");
        let surface = &decl.version.prefix()[1..];
        let access = match decl.tier() {
            None if decl.partner_tier().is_some() => {
                "(partner token only, a scope opening tier `standard`; Standard Webhooks, Slack or Discord deliveries)."
                    .to_owned()
            }
            None => "(free).".to_owned(),
            Some(tier) if decl.streams => format!(
                "(paid, tier `{}`, {} per {} s of stream; Server-Sent Events, resumable with `Last-Event-ID`).",
                tier.as_str(),
                prices.of(tier),
                prices.stream_seconds
            ),
            Some(tier) if decl.downloads => format!(
                "(paid, tier `{}`, {} per file; a file (Parquet, CSV or NDJSON) with HTTP ranges, `ETag` and a grant \
                 for its range requests).",
                tier.as_str(),
                prices.of(tier)
            ),
            Some(tier) => format!("(paid, tier `{}`, {} per call).", tier.as_str(), prices.of(tier)),
        };
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("- [{} {template}](", method.to_ascii_uppercase())))
            .unwrap_or_else(|| panic!("{} has its line in llms.txt", decl.id));
        assert!(line.contains(&format!("(https://api.govdata.test/docs/{surface}#operation/{})", decl.id)), "{line}");
        assert!(line.ends_with(&access), "{line}");
        lines += 1;
    }
    let listed = ["GET", "POST", "PATCH", "DELETE"]
        .iter()
        .map(|m| text.lines().filter(|l| l.starts_with(&format!("- [{m} /v"))).count())
        .sum::<usize>();
    assert_eq!(listed, lines, "no line without an operation");
    assert!(text.contains("(https://api.govdata.test/v1/meta/pricing)"));
    assert!(text.contains(govdata::contract::document::OPEN_LIST_RULE), "llms.txt states the open kinds' rule");
});

// The 3.1 renditions state the same operations as the 3.0 documents, every schema in JSON Schema
// 2020-12 form (no 3.0-only `nullable`, no schema `example`), and the same components.
#[test]
fn the_3_1_renditions_state_the_same_contract() {
    let documents = api::documents(Prices::default());
    for published in [&documents.v1, &documents.v2] {
        let r: Value = serde_json::from_str(&published.json31_text).unwrap();
        assert_eq!(r["openapi"], "3.1.0");
        let ops = |d: &Value| -> Vec<(String, String, String)> {
            d["paths"]
                .as_object()
                .unwrap()
                .iter()
                .flat_map(|(p, i)| {
                    i.as_object()
                        .unwrap()
                        .iter()
                        .map(move |(m, o)| (p.clone(), m.clone(), o["operationId"].to_string()))
                })
                .collect()
        };
        assert_eq!(ops(&r), ops(&published.json));
        let names = |d: &Value| d["components"]["schemas"].as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(names(&r), names(&published.json));
        let text = serde_json::to_string(&r["components"]["schemas"]).unwrap();
        assert!(!text.contains("\"nullable\"") && !text.contains("\"example\":"), "2020-12 keywords only");
        assert!(text.contains("\"examples\":["), "examples carried over");
        // Outside schemas, the paths say the same.
        let (mut same, mut original) = (r["paths"].clone(), published.json["paths"].clone());
        strip_schemas(&mut same);
        strip_schemas(&mut original);
        assert_eq!(same, original, "{:?}: only schemas differ", published.version);
    }
}

fn strip_schemas(v: &mut Value) {
    match v {
        Value::Object(o) => {
            o.remove("schema");
            o.values_mut().for_each(strip_schemas);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_schemas),
        _ => {}
    }
}

// Issue 48, item 0: the kinds a v2 answer carries are open lists (`x-extensible-enum`) that list
// and describe every value this release knows and state the rule for the others; what a request
// names stays a closed enum; v1's enums are untouched.
#[test]
fn v2_answers_carry_open_kinds_and_requests_closed_ones() {
    use govdata::contract::{
        document::OPEN_LIST_RULE,
        events::{ActivityKind, EventKind},
        feed::FeedKind,
    };
    let v2: Value = serde_json::from_str(&generated("v2.json")).unwrap();
    let v1: Value = serde_json::from_str(&generated("v1.json")).unwrap();
    let schemas = &v2["components"]["schemas"];
    let open: [(&str, Vec<(&str, String)>); 3] = [
        ("FeedKind", FeedKind::described()),
        ("EventKind", EventKind::described()),
        ("ActivityKind", ActivityKind::described()),
    ];
    for (name, described) in open {
        let schema = &schemas[name];
        assert_eq!(schema["type"], "string", "{name}: {schema}");
        assert!(schema.get("enum").is_none(), "{name} is open in v2: {schema}");
        let known: Vec<&str> = described.iter().map(|(v, _)| *v).collect();
        assert_eq!(schema["x-extensible-enum"], serde_json::json!(known), "{name}");
        let text = schema["description"].as_str().unwrap();
        assert!(text.contains(OPEN_LIST_RULE), "{name} states the rule: {text}");
        for (value, meaning) in &described {
            assert!(text.contains(&format!("- `{value}`")), "{name} lists `{value}`: {text}");
            assert!(!meaning.is_empty(), "{name}.{value} is described");
        }
        assert!(!text.contains("{{"), "placeholders filled: {text}");
        let filter = &schemas[format!("{name}Filter")];
        assert_eq!(filter["enum"], serde_json::json!(known), "{name}Filter is the closed list");
        // v1 keeps its closed enum.
        if let Some(v1_schema) = v1["components"]["schemas"].get(name) {
            assert!(v1_schema.get("x-extensible-enum").is_none() && v1_schema.get("enum").is_some(), "v1 {name}");
        }
    }
    let feed_kinds = FeedKind::ALL.iter().map(|k| k.as_str()).collect::<Vec<_>>();
    for new in ["voting_ends_soon", "voting_ended", "quorum_reached", "proposal_executable"] {
        assert!(feed_kinds.contains(&new), "{new} is a feed kind");
    }
    // Requests refer to the closed lists, answers to the open ones.
    let param_schema = |path: &str, name: &str| {
        let params = v2["paths"][path]["get"]["parameters"].as_array().unwrap();
        params.iter().find(|p| p["name"] == name).unwrap()["schema"].clone()
    };
    assert_eq!(param_schema("/v2/feed", "kinds")["items"]["$ref"], "#/components/schemas/FeedKindFilter");
    assert_eq!(param_schema("/v2/stream", "kinds")["items"]["$ref"], "#/components/schemas/FeedKindFilter");
    assert_eq!(param_schema("/v2/events", "kind")["$ref"], "#/components/schemas/EventKindFilter");
    assert_eq!(param_schema("/v2/activity", "kind")["$ref"], "#/components/schemas/ActivityKindFilter");
    assert_eq!(schemas["WebhookCreate"]["properties"]["kinds"]["items"]["$ref"], "#/components/schemas/FeedKindFilter");
    assert_eq!(schemas["FeedEntry"]["properties"]["kind"]["$ref"], "#/components/schemas/FeedKind");
    assert_eq!(schemas["GovernanceEvent"]["properties"]["kind"]["$ref"], "#/components/schemas/EventKind");
    assert_eq!(schemas["ActivityEntry"]["properties"]["kind"]["$ref"], "#/components/schemas/ActivityKind");
    assert_eq!(schemas["Webhook"]["properties"]["kinds"]["items"]["$ref"], "#/components/schemas/FeedKind");
}
