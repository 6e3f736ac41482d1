//! The contract guard: the committed files are current and lint-clean, v1 keeps the promises
//! of its released baseline, and each breaking-change rule fires on a change to the real v1
//! document (and the class it is declared with decides the verdict).
use std::collections::BTreeSet;

use codegen::{
    Acceptance, Release,
    diff::{Class, Rule, diff},
    openapi_dir, parse, release,
};
use serde_json::{Value, json};

fn real_v1() -> Value {
    let text = std::fs::read_to_string(openapi_dir().join("v1.json")).expect("openapi/v1.json");
    serde_json::from_str(&text).expect("JSON")
}

fn doc(value: &Value) -> openapiv3::OpenAPI {
    parse(&value.to_string(), "test").expect("an OpenAPI document").0
}

/// `codegen check` as a test: the one place that asserts the committed `openapi/` (documents and
/// operation table) equals what the code generates.
#[test]
fn the_committed_files_are_current_lint_clean_and_v1_keeps_its_promises() {
    let problems = codegen::check(&openapi_dir()).expect("check runs");
    assert!(problems.is_empty(), "codegen check:\n{}", problems.join("\n"));
}

#[test]
fn a_document_has_no_changes_against_itself() {
    for name in ["v1.json", "v2.json"] {
        let (d, _) = codegen::load(&openapi_dir().join(name)).unwrap();
        let report = diff(&d, &d);
        assert!(report.changes.is_empty(), "{name}: {:?}", report.changes);
    }
}

fn op<'a>(doc: &'a mut Value, path: &str) -> &'a mut Value {
    &mut doc["paths"][path]["get"]
}

fn param<'a>(doc: &'a mut Value, path: &str, name: &str) -> &'a mut Value {
    let params = op(doc, path)["parameters"].as_array_mut().expect("parameters");
    params.iter_mut().find(|p| p["name"] == name).unwrap_or_else(|| panic!("{path} has a parameter {name}"))
}

fn schema<'a>(doc: &'a mut Value, name: &str) -> &'a mut Value {
    &mut doc["components"]["schemas"][name]
}

/// A `POST /v1/daos` with a JSON body: v1 has no request bodies, so the request-body rules are
/// tested on this addition to both sides.
fn with_body(doc: &mut Value, required: bool, schema: Value) {
    let mut post = op(doc, "/v1/daos").clone();
    post["operationId"] = json!("daos_create");
    post["requestBody"] = json!({ "required": required, "content": { "application/json": { "schema": schema } } });
    doc["paths"]["/v1/daos"]["post"] = post;
}

fn body_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": { "type": "string" },
            "note": { "type": "string" },
            "tags": { "type": "array", "items": { "type": "string" }, "minItems": 0, "maxItems": 10 }
        },
        "required": ["name"]
    })
}

fn body(doc: &mut Value) -> &mut Value {
    &mut doc["paths"]["/v1/daos"]["post"]["requestBody"]["content"]["application/json"]["schema"]
}

/// `GET /v1/activity`'s `kind` parameter with its own copy of `ActivityKind` on both sides (the
/// schema is shared with the answers' `kind`): the new side's values, to edit the request alone.
fn request_only_kind<'a>(old: &mut Value, new: &'a mut Value) -> &'a mut Vec<Value> {
    for d in [&mut *old, &mut *new] {
        let kind = schema(d, "ActivityKind").clone();
        param(d, "/v1/activity", "kind")["schema"] = kind;
    }
    param(new, "/v1/activity", "kind")["schema"]["enum"].as_array_mut().unwrap()
}

type Edit = fn(&mut Value, &mut Value);

/// `IngestionStatus` (answered only) as an open list of its values.
fn open_status(doc: &mut Value) -> &mut Value {
    let status = schema(doc, "IngestionStatus");
    let values = status.as_object_mut().unwrap().remove("enum").unwrap();
    status["x-extensible-enum"] = values;
    status
}

/// `(rule, where it must be reported (a substring), edit of (old, new))`, both starting as the
/// real v1 document.
const CASES: &[(Rule, &str, Edit)] = &[
    (Rule::PathRemoved, "/v1/activity", |_, n| {
        n["paths"].as_object_mut().unwrap().remove("/v1/activity");
    }),
    (Rule::OperationRemoved, "HEAD /v1/daos", |o, _| {
        o["paths"]["/v1/daos"]["head"] = o["paths"]["/v1/daos"]["get"].clone();
    }),
    (Rule::OperationIdChanged, "GET /v1/daos", |_, n| op(n, "/v1/daos")["operationId"] = json!("daos_index")),
    (Rule::SuccessStatusRemoved, "GET /v1/daos › response 200", |_, n| {
        op(n, "/v1/daos")["responses"].as_object_mut().unwrap().remove("200");
    }),
    (Rule::ResponseMediaTypeRemoved, "GET /v1/daos › response 200", |_, n| {
        let content = op(n, "/v1/daos")["responses"]["200"]["content"].as_object_mut().unwrap();
        let json = content.remove("application/json").unwrap();
        content.insert("text/csv".into(), json);
    }),
    (Rule::RequestMediaTypeRemoved, "POST /v1/daos › request body", |o, n| {
        with_body(o, true, body_schema());
        with_body(n, true, body_schema());
        let content = n["paths"]["/v1/daos"]["post"]["requestBody"]["content"].as_object_mut().unwrap();
        let json = content.remove("application/json").unwrap();
        content.insert("application/x-www-form-urlencoded".into(), json);
    }),
    (Rule::NewRequiredParameter, "query parameter `region`", |_, n| {
        op(n, "/v1/daos")["parameters"].as_array_mut().unwrap().push(
            json!({"name": "region", "in": "query", "required": true, "description": "x", "schema": {"type": "string"}}),
        );
    }),
    (Rule::ParameterBecameRequired, "GET /v1/daos › query parameter `limit`", |_, n| {
        param(n, "/v1/daos", "limit")["required"] = json!(true)
    }),
    (Rule::NewRequiredRequestBody, "POST /v1/daos › request body", |o, n| {
        with_body(o, false, body_schema());
        o["paths"]["/v1/daos"]["post"].as_object_mut().unwrap().remove("requestBody");
        with_body(n, true, body_schema());
    }),
    (Rule::RequestBodyBecameRequired, "POST /v1/daos › request body", |o, n| {
        with_body(o, false, body_schema());
        with_body(n, true, body_schema());
    }),
    (Rule::NewRequiredRequestProperty, "application/json › owner", |o, n| {
        with_body(o, true, body_schema());
        with_body(n, true, body_schema());
        body(n)["properties"]["owner"] = json!({"type": "string"});
        body(n)["required"] = json!(["name", "owner"]);
    }),
    (Rule::RequestPropertyBecameRequired, "application/json › note", |o, n| {
        with_body(o, true, body_schema());
        with_body(n, true, body_schema());
        body(n)["required"] = json!(["name", "note"]);
    }),
    (Rule::RequestEnumValueRemoved, "GET /v1/activity › query parameter `kind`", |_, n| {
        let values = schema(n, "ActivityKind")["enum"].as_array_mut().unwrap();
        values.retain(|v| v != "signal");
    }),
    (Rule::RequestMaximumDecreased, "GET /v1/daos › query parameter `limit`", |_, n| {
        param(n, "/v1/daos", "limit")["schema"]["maximum"] = json!(50)
    }),
    (Rule::RequestMinimumIncreased, "GET /v1/daos › query parameter `offset`", |_, n| {
        param(n, "/v1/daos", "offset")["schema"]["minimum"] = json!(0)
    }),
    (Rule::RequestMaxLengthDecreased, "GET /v1/activity › query parameter `daoId`", |o, n| {
        param(o, "/v1/activity", "daoId")["schema"]["maxLength"] = json!(64);
        param(n, "/v1/activity", "daoId")["schema"]["maxLength"] = json!(32);
    }),
    (Rule::RequestMinLengthIncreased, "GET /v1/activity › query parameter `daoId`", |_, n| {
        param(n, "/v1/activity", "daoId")["schema"]["minLength"] = json!(3)
    }),
    (Rule::RequestMaxItemsDecreased, "application/json › tags", |o, n| {
        with_body(o, true, body_schema());
        with_body(n, true, body_schema());
        body(n)["properties"]["tags"]["maxItems"] = json!(5);
    }),
    (Rule::RequestMinItemsIncreased, "application/json › tags", |o, n| {
        with_body(o, true, body_schema());
        with_body(n, true, body_schema());
        body(n)["properties"]["tags"]["minItems"] = json!(1);
    }),
    (Rule::RequestPatternChanged, "GET /v1/activity › query parameter `daoId`", |_, n| {
        param(n, "/v1/activity", "daoId")["schema"]["pattern"] = json!("^[a-z0-9-]+$")
    }),
    (Rule::RequestTypeChanged, "GET /v1/daos › query parameter `limit`", |_, n| {
        param(n, "/v1/daos", "limit")["schema"] = json!({"type": "string", "default": "25"})
    }),
    (Rule::RequestFormatChanged, "GET /v1/daos › query parameter `limit`", |_, n| {
        param(n, "/v1/daos", "limit")["schema"]["format"] = json!("int32")
    }),
    (Rule::RequestDefaultChanged, "GET /v1/daos › query parameter `limit`", |_, n| {
        param(n, "/v1/daos", "limit")["schema"]["default"] = json!(50)
    }),
    (Rule::RequestBecameNotNullable, "GET /v1/daos › query parameter `limit`", |o, _| {
        param(o, "/v1/daos", "limit")["schema"]["nullable"] = json!(true)
    }),
    (Rule::ResponsePropertyRemoved, "data.items[].symbol", |_, n| {
        schema(n, "Dao")["properties"].as_object_mut().unwrap().remove("symbol");
    }),
    (Rule::ResponsePropertyBecameOptional, "data.items[].name", |_, n| {
        schema(n, "Dao")["required"].as_array_mut().unwrap().retain(|r| r != "name")
    }),
    (Rule::ResponseBecameNullable, "data.items[].name", |_, n| {
        schema(n, "Dao")["properties"]["name"]["nullable"] = json!(true)
    }),
    (Rule::ResponseTypeChanged, "data.items[].name", |_, n| {
        schema(n, "Dao")["properties"]["name"] = json!({"type": "object"})
    }),
    (Rule::ResponseFormatChanged, "data.items[].dataAsOf", |_, n| {
        schema(n, "Dao")["properties"]["dataAsOf"]["format"] = json!("date")
    }),
    (Rule::ResponseFormatAdded, "response 200 application/json › freshness.generatedAt", |o, _| {
        o["components"]["schemas"]["Freshness"]["properties"]["generatedAt"].as_object_mut().unwrap().remove("format");
    }),
    // The same values under a standard name: `uint32` is `int64` from 0 to 2³²−1.
    (Rule::IntegerFormatRenamed, "GET /v1/daos › response 200 application/json › data.limit", |o, n| {
        let limit = |d: &mut Value| d["components"]["schemas"]["V1Page_Dao"]["properties"]["limit"].clone();
        let mut old = limit(o);
        old.as_object_mut().unwrap().retain(|k, _| k != "minimum" && k != "maximum");
        old["format"] = json!("uint32");
        o["components"]["schemas"]["V1Page_Dao"]["properties"]["limit"] = old;
        let mut new = limit(n);
        new["format"] = json!("int64");
        new["minimum"] = json!(0);
        new["maximum"] = json!(u32::MAX);
        n["components"]["schemas"]["V1Page_Dao"]["properties"]["limit"] = new;
    }),
    (Rule::ResponseRequiredHeaderRemoved, "GET /v1/daos › response 200 › header `x-trace`", |o, _| {
        op(o, "/v1/daos")["responses"]["200"]["headers"]["x-trace"] =
            json!({"required": true, "description": "x", "schema": {"type": "string"}});
    }),
    (Rule::SecurityAdded, "GET /v1/daos", |_, n| op(n, "/v1/daos")["security"] = json!([{"partnerToken": []}])),
    (Rule::SecurityAlternativeRemoved, "GET /v1/activity", |_, n| {
        op(n, "/v1/activity")["security"].as_array_mut().unwrap().retain(|s| s.get("x402PaymentV1").is_none())
    }),
    (Rule::ResponseEnumValueAdded, "data.items[].status", |_, n| {
        schema(n, "IngestionStatus")["enum"].as_array_mut().unwrap().push(json!("paused"))
    }),
    (Rule::ResponseHeaderRemoved, "GET /v1/daos › response 200 › header `x-request-id`", |_, n| {
        op(n, "/v1/daos")["responses"]["200"]["headers"].as_object_mut().unwrap().remove("x-request-id");
    }),
    (Rule::ErrorStatusRemoved, "GET /v1/daos › response 503", |_, n| {
        op(n, "/v1/daos")["responses"].as_object_mut().unwrap().remove("503");
    }),
    (Rule::ErrorMediaTypeRemoved, "GET /v1/daos › response 503", |_, n| {
        let content = op(n, "/v1/daos")["responses"]["503"]["content"].as_object_mut().unwrap();
        let problem = content.remove("application/problem+json").unwrap();
        content.insert("application/json".into(), problem);
    }),
    (Rule::ParameterRemoved, "GET /v1/daos › query parameter `offset`", |_, n| {
        op(n, "/v1/daos")["parameters"].as_array_mut().unwrap().retain(|p| p["name"] != "offset")
    }),
    (Rule::RequestPropertyRemoved, "application/json › note", |o, n| {
        with_body(o, true, body_schema());
        with_body(n, true, body_schema());
        body(n)["properties"].as_object_mut().unwrap().remove("note");
    }),
    (Rule::SchemaRenamed, "GET /v1/daos", |_, n| {
        let text = n.to_string().replace("\"#/components/schemas/Dao\"", "\"#/components/schemas/CoveredDao\"");
        *n = serde_json::from_str(&text).unwrap();
        let dao = n["components"]["schemas"].as_object_mut().unwrap().remove("Dao").unwrap();
        n["components"]["schemas"]["CoveredDao"] = dao;
    }),
    (Rule::TagsChanged, "GET /v1/daos", |_, n| op(n, "/v1/daos")["tags"] = json!(["Registry"])),
    (Rule::OperationDeprecated, "GET /v1/daos", |_, n| op(n, "/v1/daos")["deprecated"] = json!(true)),
    (Rule::AccessChanged, "GET /v1/activity", |_, n| {
        op(n, "/v1/activity")["x-govdata-access"]["price"] = json!("2000")
    }),
    (Rule::PathAdded, "/v1/votes", |_, n| n["paths"]["/v1/votes"] = n["paths"]["/v1/daos"].clone()),
    (Rule::OperationAdded, "HEAD /v1/daos", |_, n| {
        n["paths"]["/v1/daos"]["head"] = n["paths"]["/v1/daos"]["get"].clone()
    }),
    (Rule::OptionalParameterAdded, "query parameter `region`", |_, n| {
        op(n, "/v1/daos")["parameters"].as_array_mut().unwrap().push(
            json!({"name": "region", "in": "query", "required": false, "description": "x", "schema": {"type": "string"}}),
        );
    }),
    (Rule::ParameterBecameOptional, "GET /v1/governance-events › query parameter `start_ms`", |_, n| {
        param(n, "/v1/governance-events", "start_ms")["required"] = json!(false)
    }),
    (Rule::ResponsePropertyAdded, "data.items[].website", |_, n| {
        schema(n, "Dao")["properties"]["website"] = json!({"type": "string"})
    }),
    (Rule::OptionalRequestPropertyAdded, "application/json › owner", |o, n| {
        with_body(o, true, body_schema());
        with_body(n, true, body_schema());
        body(n)["properties"]["owner"] = json!({"type": "string"});
    }),
    // On the parameter alone: `ActivityKind` is also answered, where a new value breaks.
    (Rule::RequestEnumValueAdded, "GET /v1/activity › query parameter `kind`", |o, n| {
        let values = request_only_kind(o, n);
        values.push(json!("vote_changed"));
    }),
    (Rule::ResponseEnumValueRemoved, "data.items[].status", |_, n| {
        schema(n, "IngestionStatus")["enum"].as_array_mut().unwrap().retain(|v| v != "registry_only")
    }),
    (Rule::ExtensibleEnumValueAdded, "data.items[].status", |o, n| {
        open_status(o);
        open_status(n)["x-extensible-enum"].as_array_mut().unwrap().push(json!("paused"));
    }),
    (Rule::ExtensibleEnumValueRemoved, "data.items[].status", |o, n| {
        open_status(o);
        open_status(n)["x-extensible-enum"].as_array_mut().unwrap().retain(|v| v != "registry_only");
    }),
    (Rule::RequestConstraintLoosened, "GET /v1/activity › query parameter `kind`", |o, n| {
        request_only_kind(o, n);
        param(n, "/v1/activity", "kind")["schema"].as_object_mut().unwrap().remove("enum");
    }),
    // v1 documents 429 since it was released with rate limits: the older document lacks it.
    (Rule::StatusAdded, "GET /v1/daos › response 429", |o, _| {
        op(o, "/v1/daos")["responses"].as_object_mut().unwrap().remove("429");
    }),
    (Rule::ResponseHeaderAdded, "GET /v1/daos › response 200 › header `x-trace`", |_, n| {
        op(n, "/v1/daos")["responses"]["200"]["headers"]["x-trace"] =
            json!({"required": true, "description": "x", "schema": {"type": "string"}});
    }),
    (Rule::SecurityAlternativeAdded, "GET /v1/activity", |_, n| {
        op(n, "/v1/activity")["security"].as_array_mut().unwrap().push(json!({"oauth": []}))
    }),
];

#[test]
fn each_rule_fires_on_a_change_to_the_real_v1_document() {
    let base = real_v1();
    for (rule, at, edit) in CASES {
        let (mut old, mut new) = (base.clone(), base.clone());
        edit(&mut old, &mut new);
        let report = diff(&doc(&old), &doc(&new));
        let found = report.changes.iter().find(|c| c.rule == *rule && c.at.contains(at));
        assert!(found.is_some(), "{} at {at:?} expected; got:\n{}", rule.id(), report.markdown("old", "new"));
        assert_eq!(
            report.is_breaking(),
            rule.class() == Class::Breaking,
            "{}: the verdict follows the class",
            rule.id()
        );
        if rule.class() != Class::Harmless {
            assert!(report.markdown("old", "new").contains(rule.id()), "the report names the rule");
        }
    }
    let covered: BTreeSet<Rule> = CASES.iter().map(|(rule, _, _)| *rule).collect();
    let missing: Vec<&str> = Rule::ALL.iter().filter(|r| !covered.contains(r)).map(|r| r.id()).collect();
    assert!(missing.is_empty(), "rules without a test: {missing:?}");
}

// As Optic and strict generated clients read it: a value a client has never seen in an answer
// breaks it, a value it may now send does not. A schema both sent and answered breaks by its
// answers.
#[test]
fn a_new_response_enum_value_breaks_and_a_new_request_enum_value_does_not() {
    let base = real_v1();
    let verdict = |edit: &dyn Fn(&mut Value, &mut Value)| {
        let (mut old, mut new) = (base.clone(), base.clone());
        edit(&mut old, &mut new);
        let report = diff(&doc(&old), &doc(&new));
        let rules: BTreeSet<Rule> = report.changes.iter().map(|c| c.rule).collect();
        (report.is_breaking(), rules)
    };

    let (breaking, rules) =
        verdict(&|_, n| schema(n, "IngestionStatus")["enum"].as_array_mut().unwrap().push(json!("paused")));
    assert!(breaking, "a new value in an answer breaks");
    assert_eq!(rules, BTreeSet::from([Rule::ResponseEnumValueAdded]));
    assert_eq!(Rule::ResponseEnumValueAdded.class(), Class::Breaking);

    let (breaking, rules) = verdict(&|o, n| request_only_kind(o, n).push(json!("vote_changed")));
    assert!(!breaking, "a new value a client may send breaks nobody");
    assert_eq!(rules, BTreeSet::from([Rule::RequestEnumValueAdded]));
    assert_eq!(Rule::RequestEnumValueAdded.class(), Class::Harmless);

    let (breaking, rules) =
        verdict(&|_, n| schema(n, "ActivityKind")["enum"].as_array_mut().unwrap().push(json!("vote_changed")));
    assert!(breaking, "`ActivityKind` is answered too");
    assert_eq!(rules, BTreeSet::from([Rule::RequestEnumValueAdded, Rule::ResponseEnumValueAdded]));
}

// Issue 48: a closed answered list opened once, on purpose (breaking: accepted by `codegen
// release`), then grows harmlessly; a known value it drops breaks again.
#[test]
fn an_open_list_grows_harmlessly_once_opened() {
    let base = real_v1();
    let report = |old: &Value, new: &Value| {
        let report = diff(&doc(old), &doc(new));
        (report.is_breaking(), report.changes.iter().map(|c| c.rule).collect::<BTreeSet<Rule>>())
    };
    let mut opened = base.clone();
    open_status(&mut opened);
    assert_eq!(report(&base, &opened), (true, BTreeSet::from([Rule::ResponseEnumValueAdded])));
    let mut grown = opened.clone();
    schema(&mut grown, "IngestionStatus")["x-extensible-enum"].as_array_mut().unwrap().push(json!("paused"));
    assert_eq!(report(&opened, &grown), (false, BTreeSet::from([Rule::ExtensibleEnumValueAdded])));
    let mut shrunk = grown.clone();
    schema(&mut shrunk, "IngestionStatus")["x-extensible-enum"].as_array_mut().unwrap().retain(|v| v != "paused");
    assert_eq!(report(&grown, &shrunk), (true, BTreeSet::from([Rule::ExtensibleEnumValueRemoved])));
}

#[test]
fn a_recursive_schema_ends_and_a_path_parameter_rename_is_no_change() {
    let mut old = real_v1();
    // A schema that contains itself.
    old["components"]["schemas"]["Dao"]["properties"]["parent"] = json!({"$ref": "#/components/schemas/Dao"});
    let mut new = old.clone();
    let text = new
        .to_string()
        .replace("{daoId}", "{dao}")
        .replace("\"name\":\"daoId\",\"required\":true", "\"name\":\"dao\",\"required\":true");
    new = serde_json::from_str(&text).unwrap();
    let report = diff(&doc(&old), &doc(&new));
    assert!(!report.is_breaking(), "{}", report.markdown("old", "new"));
}

#[test]
fn the_baseline_moves_only_forward() {
    let dir = tempfile::tempdir().unwrap();
    let current = real_v1();
    let release = |accepted: &[Acceptance]| release(dir.path(), "v1", &current.to_string(), accepted, "2026-11-25");
    // A baseline with one more path than the current v1: releasing would remove it.
    let mut ahead = current.clone();
    ahead["paths"]["/v1/votes"] = ahead["paths"]["/v1/daos"].clone();
    std::fs::create_dir_all(dir.path().join("released")).unwrap();
    let baseline = dir.path().join(codegen::RELEASED_V1);
    let log = dir.path().join(codegen::RELEASE_LOG);
    std::fs::write(&baseline, ahead.to_string()).unwrap();
    let removed = match release(&[]).unwrap() {
        Release::Refused(report) => {
            let c = report.breaking().find(|c| c.rule == Rule::PathRemoved).expect("the removal is reported");
            c.at.clone()
        }
        Release::Moved(_) => panic!("a breaking release must be refused"),
    };
    assert_eq!(std::fs::read_to_string(&baseline).unwrap(), ahead.to_string(), "the baseline is untouched");
    assert!(!log.exists(), "a refused release logs nothing");
    // Accepting another location does not release it.
    let elsewhere = Acceptance { at: "GET /v1/elsewhere".to_owned(), reason: "no".to_owned() };
    assert!(matches!(release(std::slice::from_ref(&elsewhere)).unwrap(), Release::Refused(_)));

    // Accepted by its location, with a reason, it is released and the reason logged.
    let accepted = Acceptance { at: removed.clone(), reason: "never served".to_owned() };
    assert!(matches!(release(&[accepted, elsewhere]).unwrap(), Release::Moved(_)));
    assert_eq!(std::fs::read_to_string(&baseline).unwrap(), current.to_string());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("## v1, 2026-11-25"), "{text}");
    assert!(text.contains(&format!("- Accepted at {removed}: never served")), "{text}");
    assert!(!text.contains("GET /v1/elsewhere"), "an acceptance that matched nothing is not logged: {text}");

    // A baseline with one path fewer: releasing adds it, which is allowed without acceptance.
    let mut behind = current.clone();
    behind["paths"].as_object_mut().unwrap().remove("/v1/activity");
    std::fs::write(&baseline, behind.to_string()).unwrap();
    match release(&[]).unwrap() {
        Release::Moved(report) => assert!(report.changes.iter().any(|c| c.rule == Rule::PathAdded)),
        Release::Refused(report) => panic!("an additive release is allowed: {}", report.markdown("a", "b")),
    }
    assert_eq!(std::fs::read_to_string(&baseline).unwrap(), current.to_string());
    assert_eq!(std::fs::read_to_string(&log).unwrap().matches("## v1, ").count(), 2, "each release is logged");

    // A first release of a surface has nothing to break.
    match codegen::release(dir.path(), "v2", &current.to_string(), &[], "2026-11-25").unwrap() {
        Release::Moved(report) => assert!(report.changes.is_empty()),
        Release::Refused(_) => panic!("a first release is never refused"),
    }
    assert!(dir.path().join(codegen::RELEASED_V2).exists());
    assert!(std::fs::read_to_string(&log).unwrap().contains("The first release of the surface"));
}
