//! The MCP tools: one per operation of both finished documents (streams, file downloads and webhook management excepted), made from the same declarations
//! as the documents and never written by hand. A tool is named by the operation's surface and
//! local id (`v1_daos_list`, `v2_proposals_list`: `OperationDecl::qualified_id`, unique across
//! the surfaces); its description is the operation's summary and description (access and price
//! included); its `inputSchema` holds the operation's parameters and its `outputSchema` the
//! envelope of its 200 answer, both JSON Schema 2020-12 read from the OpenAPI 3.1 rendition
//! (`super::openapi31`). `edge::mcp` serves them; `openapi/mcp-tools.json` is what `tools/list`
//! answers, committed so a reviewer sees the MCP surface change in the same diff as the documents.
//!
//! The resources are some of those tools again: a v2 operation that reads one thing named by its
//! one path parameter (a DAO, a proposal, a voter) is a resource template, its URI the operation's
//! path after `/v2/` under `govdata://` ([`resources`]); reading one is calling its tool.
//! `openapi/mcp-resources.json` is what `resources/templates/list` answers, committed likewise.
use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::document::Published;
use super::errors::ParamLocation;
use super::operations::{self, OperationDecl};

/// Where the MCP endpoint is mounted (`edge::mcp` serves it; `/llms.txt` links it).
pub const MCP_PATH: &str = "/mcp";

/// One tool: what `tools/list` shows and what a call is dispatched to.
#[derive(Debug, Clone)]
pub struct ToolDecl {
    /// `<surface>_<resource>_<verb>`.
    pub name: String,
    pub decl: &'static OperationDecl,
    /// The operation's summary.
    pub title: String,
    /// The summary, then the operation's description (which states access and price).
    pub description: String,
    /// The document's path template the call is made to, e.g. `/v2/proposals/{proposalKey}`.
    pub template: String,
    /// The operation's parameters, in document order: the tool's arguments.
    pub params: Vec<ToolParam>,
    /// A self-contained JSON Schema object: every parameter inlined, nothing else accepted.
    pub input_schema: Map<String, Value>,
    /// The 200 answer's schema, its root inlined and the rest under `$defs`.
    pub output_schema: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolParam {
    pub name: String,
    pub location: ParamLocation,
    pub required: bool,
}

impl ToolDecl {
    /// The tool as `tools/list` shows it (MCP's `Tool`).
    pub fn listed(&self) -> Value {
        let mut tool = json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            // Every operation reads; calling it twice changes nothing; it reads govdata's store,
            // not the open world.
            "annotations": {
                "title": self.title,
                "readOnlyHint": true,
                "destructiveHint": false,
                "idempotentHint": true,
                "openWorldHint": false,
            },
        });
        if let Some(output) = &self.output_schema {
            tool["outputSchema"] = Value::Object(output.clone());
        }
        tool
    }
}

/// The tools of both surfaces, in document order (v1 first): one per operation that answers
/// (a stream never does, and `GET /v2/feed` serves its entries as a list).
pub fn tools(surfaces: [&Published; 2]) -> Vec<ToolDecl> {
    let mut all = Vec::new();
    for published in surfaces {
        let doc: Value = serde_json::from_str(&published.json31_text).expect("the 3.1 rendition is JSON");
        for (method, template, id) in published.operations() {
            let decl = operations::find(published.version, id)
                .unwrap_or_else(|| panic!("{id}: a documented operation has a declaration"));
            // A stream never answers; managing a partner's webhooks is no read a tool makes.
            if decl.streams || decl.downloads || decl.partner_tier().is_some() {
                continue;
            }
            let op = &doc["paths"][template][method];
            all.push(tool(decl, template, op, &doc));
        }
    }
    all
}

/// What a resource is: one DAO, one proposal, one voter. Also what a subscription watches and a
/// feed entry changes (`edge::mcp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ResourceKind {
    Dao,
    Proposal,
    Voter,
}

/// The resources: each kind, its title and the v2 operation whose answer a read is. Declared here
/// once; the URI template, the description and the read come from the operation's tool.
pub const RESOURCES: [(ResourceKind, &str, &str); 3] = [
    (ResourceKind::Dao, "DAO", "v2_daos_get"),
    (ResourceKind::Proposal, "Proposal", "v2_proposals_get"),
    (ResourceKind::Voter, "Voter", "v2_voters_get"),
];

/// Where every resource URI starts.
pub const RESOURCE_SCHEME: &str = "govdata://";
/// What a read answers: the operation's JSON envelope.
pub const RESOURCE_MIME_TYPE: &str = "application/json";
/// Resources one subscriber watches at most: a session's `resources/subscribe` calls together,
/// or one `subscriptions/listen` stream's filter (the rest of a longer filter is not accepted).
pub const MAX_WATCHED_RESOURCES: usize = 100;

/// One resource template.
#[derive(Debug, Clone)]
pub struct ResourceDecl {
    pub kind: ResourceKind,
    /// `dao`, `proposal`, `voter`: the template's programmatic name.
    pub name: &'static str,
    pub title: &'static str,
    /// The operation's tool: a read is its call, with the URI's parameter as its one argument.
    pub tool: ToolDecl,
    /// `govdata://proposals/{proposalKey}` (RFC 6570, one variable).
    pub uri_template: String,
    /// The template up to its variable: `govdata://proposals/`.
    pub prefix: String,
    /// The variable: the operation's path parameter.
    pub param: String,
}

impl ResourceDecl {
    /// The template as `resources/templates/list` shows it (MCP's `ResourceTemplate`).
    pub fn listed(&self) -> Value {
        json!({
            "uriTemplate": self.uri_template,
            "name": self.name,
            "title": self.title,
            "description": format!("{}\n\nReading one answers what the tool `{}` answers.", self.tool.description, self.tool.name),
            "mimeType": RESOURCE_MIME_TYPE,
        })
    }

    /// The parameter `uri` names when it is one of this template's URIs: one non-empty segment
    /// after the prefix, percent-decoded (no query, fragment or further segment).
    pub fn matches(&self, uri: &str) -> Option<String> {
        let segment = uri.strip_prefix(&self.prefix)?;
        if segment.is_empty() || segment.contains(['/', '?', '#']) {
            return None;
        }
        let value = percent_encoding::percent_decode_str(segment).decode_utf8().ok()?.into_owned();
        (!value.is_empty()).then_some(value)
    }
}

/// The resource templates of [`RESOURCES`], made from their operations' tools.
pub fn resources(tools: &[ToolDecl]) -> Vec<ResourceDecl> {
    RESOURCES
        .iter()
        .map(|&(kind, title, operation)| {
            let tool = tools
                .iter()
                .find(|t| t.name == operation)
                .unwrap_or_else(|| panic!("{operation}: a resource's operation is a tool"))
                .clone();
            let path = tool.template.strip_prefix("/v2/").expect("a resource's operation is of v2");
            let (fixed, variable) =
                path.rsplit_once('/').expect("a resource's path names one thing under a collection");
            let param = variable.strip_prefix('{').and_then(|v| v.strip_suffix('}'));
            let param = param.filter(|p| !fixed.contains('{') && tool.params.iter().any(|t| t.name == *p));
            let param = param.unwrap_or_else(|| panic!("{operation}: a resource's path ends in its one parameter"));
            let name = match kind {
                ResourceKind::Dao => "dao",
                ResourceKind::Proposal => "proposal",
                ResourceKind::Voter => "voter",
            };
            ResourceDecl {
                kind,
                name,
                title,
                uri_template: format!("{RESOURCE_SCHEME}{path}"),
                prefix: format!("{RESOURCE_SCHEME}{fixed}/"),
                param: param.to_owned(),
                tool,
            }
        })
        .collect()
}

/// `resources/templates/list`'s answer for `resources`, as committed under `openapi/`.
pub fn resource_listing(resources: &[ResourceDecl]) -> String {
    let listed: Vec<Value> = resources.iter().map(ResourceDecl::listed).collect();
    serde_json::to_string_pretty(&json!({ "resourceTemplates": listed })).expect("a JSON value serialises") + "\n"
}

/// `tools/list`'s answer for `tools`, as committed under `openapi/`.
pub fn listing(tools: &[ToolDecl]) -> String {
    let listed: Vec<Value> = tools.iter().map(ToolDecl::listed).collect();
    serde_json::to_string_pretty(&json!({ "tools": listed })).expect("a JSON value serialises") + "\n"
}

fn tool(decl: &'static OperationDecl, template: &str, op: &Value, doc: &Value) -> ToolDecl {
    let title = op["summary"].as_str().unwrap_or(decl.id).to_owned();
    let description = match op["description"].as_str() {
        Some(text) => format!("{title}.\n\n{}", text.trim()),
        None => format!("{title}."),
    };
    let mut params = Vec::new();
    let mut properties = Map::new();
    for param in op["parameters"].as_array().into_iter().flatten() {
        let name = param["name"].as_str().expect("a parameter has a name");
        let location = match param["in"].as_str() {
            Some("path") => ParamLocation::Path,
            Some("query") => ParamLocation::Query,
            // Headers carry credentials; a tool call carries them on its own HTTP request.
            _ => continue,
        };
        let required = location == ParamLocation::Path || param["required"].as_bool() == Some(true);
        // Inlined: tool-calling clients are most at home with flat argument schemas, and a
        // parameter's schema is small (a pattern, an enum, bounds).
        let mut schema = inlined(&param["schema"], doc);
        if let (Some(text), Some(s)) = (param["description"].as_str(), schema.as_object_mut()) {
            s.entry("description").or_insert_with(|| json!(text));
        }
        properties.insert(name.to_owned(), schema);
        params.push(ToolParam { name: name.to_owned(), location, required });
    }
    let mut input_schema = Map::new();
    input_schema.insert("type".to_owned(), json!("object"));
    input_schema.insert("properties".to_owned(), Value::Object(properties));
    let required: Vec<&str> = params.iter().filter(|p| p.required).map(|p| p.name.as_str()).collect();
    if !required.is_empty() {
        input_schema.insert("required".to_owned(), json!(required));
    }
    input_schema.insert("additionalProperties".to_owned(), json!(false));
    let response = &op["responses"]["200"]["content"]["application/json"]["schema"];
    let output_schema = (!response.is_null()).then(|| standalone(response, doc));
    ToolDecl {
        name: decl.qualified_id(),
        decl,
        title,
        description,
        template: template.to_owned(),
        params,
        input_schema,
        output_schema,
    }
}

const COMPONENT: &str = "#/components/schemas/";
/// Components are not recursive; this only guards the inlining.
const MAX_DEPTH: usize = 32;

/// `schema` with every component reference replaced by the component.
fn inlined(schema: &Value, doc: &Value) -> Value {
    fn go(value: &Value, doc: &Value, depth: usize) -> Value {
        match value {
            Value::Object(o) => {
                if let Some(name) = o.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix(COMPONENT))
                    && depth < MAX_DEPTH
                {
                    let mut target = go(&doc["components"]["schemas"][name], doc, depth + 1);
                    // 2020-12 applies a reference's siblings too: keep them.
                    if let Some(t) = target.as_object_mut() {
                        for (k, v) in o.iter().filter(|(k, _)| *k != "$ref") {
                            t.insert(k.clone(), v.clone());
                        }
                    }
                    return target;
                }
                Value::Object(o.iter().map(|(k, v)| (k.clone(), go(v, doc, depth))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| go(v, doc, depth)).collect()),
            other => other.clone(),
        }
    }
    go(schema, doc, 0)
}

/// `schema` as a self-contained JSON Schema object: a root reference is replaced by its component
/// (MCP wants `type: object` at the root), and every component it reaches is copied under
/// `$defs`, its references pointing there.
fn standalone(schema: &Value, doc: &Value) -> Map<String, Value> {
    let mut root = schema.clone();
    for _ in 0..MAX_DEPTH {
        match root.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix(COMPONENT)) {
            Some(name) => root = doc["components"]["schemas"][name].clone(),
            None => break,
        }
    }
    let mut reached = BTreeSet::new();
    let mut pending = references(&root);
    while let Some(name) = pending.pop() {
        if reached.insert(name.clone()) {
            pending.extend(references(&doc["components"]["schemas"][&name]));
        }
    }
    let mut out = match repointed(&root) {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    if !reached.is_empty() {
        let defs: Map<String, Value> =
            reached.into_iter().map(|n| (n.clone(), repointed(&doc["components"]["schemas"][&n]))).collect();
        out.insert("$defs".to_owned(), Value::Object(defs));
    }
    out
}

/// The component names `value` refers to.
fn references(value: &Value) -> Vec<String> {
    match value {
        Value::Object(o) => {
            let own = o.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix(COMPONENT)).map(str::to_owned);
            own.into_iter().chain(o.values().flat_map(references)).collect()
        }
        Value::Array(items) => items.iter().flat_map(references).collect(),
        _ => Vec::new(),
    }
}

/// `value` with component references pointing into `$defs`.
fn repointed(value: &Value) -> Value {
    match value {
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| match (k.as_str(), v.as_str().and_then(|r| r.strip_prefix(COMPONENT))) {
                    ("$ref", Some(name)) => (k.clone(), json!(format!("#/$defs/{name}"))),
                    _ => (k.clone(), repointed(v)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(repointed).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tool of `operation` at `template`, as far as a resource needs it.
    fn tool(operation: &str, template: &str, param: &str) -> ToolDecl {
        ToolDecl {
            name: operation.to_owned(),
            decl: operations::find(super::super::access::Version::V2, operation).expect("declared"),
            title: operation.to_owned(),
            description: format!("{operation}."),
            template: template.to_owned(),
            params: vec![ToolParam { name: param.to_owned(), location: ParamLocation::Path, required: true }],
            input_schema: Map::new(),
            output_schema: None,
        }
    }

    #[test]
    fn a_resource_uri_names_one_thing() {
        let tools = [
            tool("v2_daos_get", "/v2/daos/{daoId}", "daoId"),
            tool("v2_proposals_get", "/v2/proposals/{proposalKey}", "proposalKey"),
            tool("v2_voters_get", "/v2/voters/{voterIdentity}", "voterIdentity"),
        ];
        let resources = resources(&tools);
        let [dao, proposal, voter] = [&resources[0], &resources[1], &resources[2]];
        assert_eq!(proposal.uri_template, "govdata://proposals/{proposalKey}");
        assert_eq!((proposal.kind, proposal.param.as_str()), (ResourceKind::Proposal, "proposalKey"));
        assert_eq!(proposal.matches("govdata://proposals/p_x").as_deref(), Some("p_x"));
        assert_eq!(voter.matches("govdata://voters/eip155%3A1%3A0xAb").as_deref(), Some("eip155:1:0xAb"));
        assert_eq!(voter.matches("govdata://voters/eip155:1:0xAb").as_deref(), Some("eip155:1:0xAb"));
        for uri in [
            "govdata://daos/",
            "govdata://daos/a/b",
            "govdata://daos/a?x=1",
            "govdata://daos/a#f",
            "govdata://proposals/p_x",
            "https://daos/a",
            "govdata://daos/%FF",
        ] {
            assert_eq!(dao.matches(uri), None, "{uri}");
        }
        assert_eq!(dao.listed()["mimeType"], RESOURCE_MIME_TYPE);
        assert!(dao.listed()["description"].as_str().unwrap().ends_with("the tool `v2_daos_get` answers."));
    }

    #[test]
    fn a_schema_stands_alone() {
        let doc = json!({"components": {"schemas": {
            "Page": {"type": "object", "properties": {"data": {"type": "array", "items": {"$ref": "#/components/schemas/Row"}}}},
            "Row": {"type": "object", "properties": {"kind": {"$ref": "#/components/schemas/Kind"}}},
            "Kind": {"type": "string", "enum": ["a", "b"]},
            "Unused": {"type": "string"},
        }}});
        let out = standalone(&json!({"$ref": "#/components/schemas/Page"}), &doc);
        assert_eq!(out["type"], "object");
        assert_eq!(out["properties"]["data"]["items"]["$ref"], "#/$defs/Row");
        assert_eq!(out["$defs"]["Row"]["properties"]["kind"]["$ref"], "#/$defs/Kind");
        assert_eq!(out["$defs"].as_object().unwrap().len(), 2, "only what the root reaches");
        let param = inlined(&json!({"$ref": "#/components/schemas/Kind", "description": "Which."}), &doc);
        assert_eq!(param, json!({"type": "string", "enum": ["a", "b"], "description": "Which."}));
    }
}
