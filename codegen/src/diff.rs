//! Breaking-change detection between two OpenAPI 3.0 documents.
//!
//! The rules are the error categories of the oasdiff catalogue that can occur in our documents
//! (`../shared/reference/tooling.md`), with two departures. An operationId is an SDK method name,
//! so renaming one breaks them (our users asked for it). A new value in a response enum is
//! breaking, not oasdiff's warning: Optic (which CI runs against the released document) refuses
//! it and strict generated clients fail to decode it, so the guard rates it as the tools downstream
//! do and a change that would fail in CI fails here first. A new value in a request enum stays
//! harmless: every client that sent the old values is still served. Every `$ref` is followed; the
//! `allOf: [{$ref}, {description}]` wrapper poem-openapi writes around a described reference is
//! read as the reference itself.
//!
//! A schema is compared in the direction its data travels. In a request, the server must go on
//! accepting everything it accepted (constraints may only loosen). In a response, clients must go
//! on finding everything they found (members may not disappear, become optional or null, or
//! change type).
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write as _;

use openapiv3::{
    AdditionalProperties, Header, MediaType, OpenAPI, Operation, Parameter, ParameterData, ParameterSchemaOrContent,
    ReferenceOr, RequestBody, Response, Schema, SchemaKind, SecurityRequirement, StatusCode, Type,
};
use serde_json::Value;

/// How a change affects a client written against the old document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// A client of the old document can fail.
    Breaking,
    /// A client may notice (generated code changes, a value it has not seen).
    Warning,
    /// Additive or cosmetic.
    Harmless,
}

impl Class {
    pub const fn label(self) -> &'static str {
        match self {
            Self::Breaking => "breaking",
            Self::Warning => "warning",
            Self::Harmless => "harmless",
        }
    }
}

macro_rules! rules {
    ($($rule:ident = $id:literal, $class:ident;)*) => {
        /// Every kind of change the diff reports, with its id and class (declared once, here).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Rule { $($rule),* }

        impl Rule {
            pub const ALL: &[Rule] = &[$(Rule::$rule),*];

            pub const fn id(self) -> &'static str {
                match self { $(Rule::$rule => $id),* }
            }

            pub const fn class(self) -> Class {
                match self { $(Rule::$rule => Class::$class),* }
            }
        }
    };
}

rules! {
    PathRemoved = "path-removed", Breaking;
    OperationRemoved = "operation-removed", Breaking;
    OperationIdChanged = "operation-id-changed", Breaking;
    SuccessStatusRemoved = "response-success-status-removed", Breaking;
    ResponseMediaTypeRemoved = "response-media-type-removed", Breaking;
    RequestMediaTypeRemoved = "request-media-type-removed", Breaking;
    NewRequiredParameter = "new-required-request-parameter", Breaking;
    ParameterBecameRequired = "request-parameter-became-required", Breaking;
    NewRequiredRequestBody = "new-required-request-body", Breaking;
    RequestBodyBecameRequired = "request-body-became-required", Breaking;
    NewRequiredRequestProperty = "new-required-request-property", Breaking;
    RequestPropertyBecameRequired = "request-property-became-required", Breaking;
    RequestEnumValueRemoved = "request-enum-value-removed", Breaking;
    RequestMaximumDecreased = "request-maximum-decreased", Breaking;
    RequestMinimumIncreased = "request-minimum-increased", Breaking;
    RequestMaxLengthDecreased = "request-max-length-decreased", Breaking;
    RequestMinLengthIncreased = "request-min-length-increased", Breaking;
    RequestMaxItemsDecreased = "request-max-items-decreased", Breaking;
    RequestMinItemsIncreased = "request-min-items-increased", Breaking;
    RequestPatternChanged = "request-pattern-added-or-changed", Breaking;
    RequestTypeChanged = "request-type-changed", Breaking;
    RequestFormatChanged = "request-format-changed", Breaking;
    RequestDefaultChanged = "request-default-changed", Breaking;
    RequestBecameNotNullable = "request-became-not-nullable", Breaking;
    ResponsePropertyRemoved = "response-property-removed", Breaking;
    ResponsePropertyBecameOptional = "response-property-became-optional", Breaking;
    ResponseBecameNullable = "response-became-nullable", Breaking;
    ResponseTypeChanged = "response-type-changed", Breaking;
    ResponseFormatChanged = "response-format-changed", Breaking;
    ResponseRequiredHeaderRemoved = "response-required-header-removed", Breaking;
    SecurityAdded = "security-added", Breaking;
    SecurityAlternativeRemoved = "security-alternative-removed", Breaking;
    ResponseEnumValueAdded = "response-enum-value-added", Breaking;
    ExtensibleEnumValueRemoved = "extensible-enum-value-removed", Breaking;
    ResponseFormatAdded = "response-format-added", Warning;
    ResponseHeaderRemoved = "response-optional-header-removed", Warning;
    ErrorStatusRemoved = "response-error-status-removed", Warning;
    ErrorMediaTypeRemoved = "response-error-media-type-removed", Warning;
    ParameterRemoved = "request-parameter-removed", Warning;
    RequestPropertyRemoved = "request-property-removed", Warning;
    SchemaRenamed = "schema-renamed", Warning;
    TagsChanged = "operation-tags-changed", Warning;
    OperationDeprecated = "operation-deprecated", Warning;
    AccessChanged = "access-changed", Warning;
    IntegerFormatRenamed = "integer-format-renamed", Harmless;
    PathAdded = "path-added", Harmless;
    OperationAdded = "operation-added", Harmless;
    OptionalParameterAdded = "optional-request-parameter-added", Harmless;
    ParameterBecameOptional = "request-parameter-became-optional", Harmless;
    ResponsePropertyAdded = "response-property-added", Harmless;
    OptionalRequestPropertyAdded = "optional-request-property-added", Harmless;
    RequestEnumValueAdded = "request-enum-value-added", Harmless;
    ExtensibleEnumValueAdded = "extensible-enum-value-added", Harmless;
    ResponseEnumValueRemoved = "response-enum-value-removed", Harmless;
    RequestConstraintLoosened = "request-constraint-loosened", Harmless;
    StatusAdded = "response-status-added", Harmless;
    ResponseHeaderAdded = "response-header-added", Harmless;
    SecurityAlternativeAdded = "security-alternative-added", Harmless;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub rule: Rule,
    /// Where: `GET /v1/daos › response 200 application/json › data.items[].daoId`.
    pub at: String,
    pub detail: String,
}

impl Change {
    pub fn class(&self) -> Class {
        self.rule.class()
    }
}

#[derive(Debug, Clone, Default)]
pub struct Report {
    pub changes: Vec<Change>,
}

impl Report {
    pub fn breaking(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.class() == Class::Breaking)
    }

    pub fn is_breaking(&self) -> bool {
        self.breaking().next().is_some()
    }

    /// The report a reviewer reads: counts, then a table per class, most serious first.
    pub fn markdown(&self, old_name: &str, new_name: &str) -> String {
        let count = |class| self.changes.iter().filter(|c| c.class() == class).count();
        let mut out = format!("# API changes: `{old_name}` → `{new_name}`\n\n");
        let _ = writeln!(
            out,
            "{} breaking, {} warning(s), {} harmless.",
            count(Class::Breaking),
            count(Class::Warning),
            count(Class::Harmless)
        );
        if self.changes.is_empty() {
            out.push_str("\nNo changes to the contract.\n");
        }
        for class in [Class::Breaking, Class::Warning, Class::Harmless] {
            let mut rows: Vec<&Change> = self.changes.iter().filter(|c| c.class() == class).collect();
            if rows.is_empty() {
                continue;
            }
            rows.sort_by(|a, b| (&a.at, a.rule).cmp(&(&b.at, b.rule)));
            let _ = write!(out, "\n## {}\n\n| rule | where | change |\n|---|---|---|\n", class.label());
            for c in rows {
                let _ = writeln!(out, "| `{}` | {} | {} |", c.rule.id(), cell(&c.at), cell(&c.detail));
            }
        }
        out
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Compares `old` with `new`.
pub fn diff(old: &OpenAPI, new: &OpenAPI) -> Report {
    let mut d = Differ { old, new, changes: Vec::new(), seen: HashSet::new(), renamed: HashSet::new() };
    d.paths();
    Report { changes: d.changes }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Dir {
    Request,
    Response,
}

struct Differ<'a> {
    old: &'a OpenAPI,
    new: &'a OpenAPI,
    changes: Vec<Change>,
    /// Named schema pairs already compared at a location-independent level, per direction: a
    /// recursive schema ends, and a shared schema is reported once.
    seen: HashSet<(String, String, Dir)>,
    renamed: HashSet<(String, String)>,
}

/// A path template with its parameter names blanked: `/v1/daos/{daoId}` and `/v1/daos/{id}` are
/// one path to a client.
fn path_key(path: &str) -> String {
    let mut key = String::with_capacity(path.len());
    let mut depth = 0;
    for ch in path.chars() {
        match ch {
            '{' => {
                depth += 1;
                key.push('{');
            }
            '}' => {
                depth -= 1;
                key.push('}');
            }
            _ if depth > 0 => {}
            _ => key.push(ch),
        }
    }
    key
}

fn operations(doc: &OpenAPI) -> BTreeMap<String, (String, BTreeMap<&'static str, &Operation>)> {
    let mut out = BTreeMap::new();
    for (path, item) in doc.paths.iter() {
        let Some(item) = item.as_item() else { continue };
        let ops = [
            ("GET", &item.get),
            ("PUT", &item.put),
            ("POST", &item.post),
            ("DELETE", &item.delete),
            ("OPTIONS", &item.options),
            ("HEAD", &item.head),
            ("PATCH", &item.patch),
            ("TRACE", &item.trace),
        ]
        .into_iter()
        .filter_map(|(m, op)| op.as_ref().map(|op| (m, op)))
        .collect();
        out.insert(path_key(path), (path.clone(), ops));
    }
    out
}

impl<'a> Differ<'a> {
    fn report(&mut self, rule: Rule, at: &str, detail: impl Into<String>) {
        self.changes.push(Change { rule, at: at.trim_end_matches(" ›").to_owned(), detail: detail.into() });
    }

    fn paths(&mut self) {
        let old = operations(self.old);
        let new = operations(self.new);
        for (key, (path, old_ops)) in &old {
            let Some((_, new_ops)) = new.get(key) else {
                self.report(
                    Rule::PathRemoved,
                    path,
                    format!("`{path}` and its {} operation(s) are gone", old_ops.len()),
                );
                continue;
            };
            for (method, old_op) in old_ops {
                let at = format!("{method} {path}");
                match new_ops.get(method) {
                    None => self.report(Rule::OperationRemoved, &at, "the operation is gone"),
                    Some(new_op) => self.operation(&at, old_op, new_op),
                }
            }
            for method in new_ops.keys().filter(|m| !old_ops.contains_key(*m)) {
                self.report(Rule::OperationAdded, &format!("{method} {path}"), "a new operation");
            }
        }
        for (key, (path, _)) in &new {
            if !old.contains_key(key) {
                self.report(Rule::PathAdded, path, "a new path");
            }
        }
    }

    fn operation(&mut self, at: &str, old: &'a Operation, new: &'a Operation) {
        if old.operation_id != new.operation_id {
            self.report(
                Rule::OperationIdChanged,
                at,
                format!(
                    "operationId `{}` became `{}`: generated SDKs rename the method",
                    old.operation_id.as_deref().unwrap_or("(none)"),
                    new.operation_id.as_deref().unwrap_or("(none)")
                ),
            );
        }
        if old.tags != new.tags {
            self.report(Rule::TagsChanged, at, format!("tags {:?} became {:?}", old.tags, new.tags));
        }
        if !old.deprecated && new.deprecated {
            self.report(Rule::OperationDeprecated, at, "the operation is now deprecated");
        }
        let access = "x-govdata-access";
        if old.extensions.get(access) != new.extensions.get(access) {
            self.report(
                Rule::AccessChanged,
                at,
                format!(
                    "access terms `{}` became `{}`",
                    old.extensions.get(access).map(Value::to_string).unwrap_or_default(),
                    new.extensions.get(access).map(Value::to_string).unwrap_or_default()
                ),
            );
        }
        self.security(at, old, new);
        self.parameters(at, old, new);
        self.request_body(at, old, new);
        self.responses(at, old, new);
    }

    fn security(&mut self, at: &str, old: &'a Operation, new: &'a Operation) {
        fn alternatives(doc: &OpenAPI, op: &Operation) -> BTreeSet<BTreeSet<String>> {
            let requirements: &[SecurityRequirement] =
                op.security.as_deref().or(doc.security.as_deref()).unwrap_or(&[]);
            if requirements.is_empty() {
                return BTreeSet::from([BTreeSet::new()]);
            }
            requirements.iter().map(|r| r.keys().cloned().collect()).collect()
        }
        let show = |s: &BTreeSet<String>| {
            if s.is_empty() { "no credentials".to_owned() } else { s.iter().cloned().collect::<Vec<_>>().join(" + ") }
        };
        let (old_alts, new_alts) = (alternatives(self.old, old), alternatives(self.new, new));
        let anonymous = BTreeSet::new();
        for alt in old_alts.difference(&new_alts) {
            if alt == &anonymous {
                self.report(Rule::SecurityAdded, at, "callers without credentials are now refused");
            } else if !new_alts.contains(&anonymous) {
                self.report(Rule::SecurityAlternativeRemoved, at, format!("`{}` is no longer accepted", show(alt)));
            }
        }
        for alt in new_alts.difference(&old_alts) {
            self.report(Rule::SecurityAlternativeAdded, at, format!("`{}` is now accepted too", show(alt)));
        }
    }

    fn parameters(&mut self, at: &str, old: &'a Operation, new: &'a Operation) {
        let collect = |doc: &'a OpenAPI, op: &'a Operation| -> BTreeMap<(String, String), &'a ParameterData> {
            op.parameters
                .iter()
                .filter_map(|p| resolve_parameter(doc, p))
                .map(|p| {
                    let (location, data) = match p {
                        Parameter::Query { parameter_data, .. } => ("query", parameter_data),
                        Parameter::Header { parameter_data, .. } => ("header", parameter_data),
                        Parameter::Path { parameter_data, .. } => ("path", parameter_data),
                        Parameter::Cookie { parameter_data, .. } => ("cookie", parameter_data),
                    };
                    let name = if location == "header" { data.name.to_ascii_lowercase() } else { data.name.clone() };
                    ((location.to_owned(), name), data)
                })
                .collect()
        };
        let (old_params, new_params) = (collect(self.old, old), collect(self.new, new));
        // Path parameters are matched by position: a rename of `{daoId}` is not a client change.
        let path_names = |params: &BTreeMap<(String, String), &ParameterData>| -> Vec<(String, String)> {
            params.keys().filter(|(l, _)| l == "path").cloned().collect()
        };
        let path_renames: BTreeMap<(String, String), (String, String)> =
            if path_names(&old_params).len() == path_names(&new_params).len() {
                let old_order = path_order(old, &old_params);
                let new_order = path_order(new, &new_params);
                old_order.into_iter().zip(new_order).collect()
            } else {
                BTreeMap::new()
            };
        for (key, old_p) in &old_params {
            let new_key = path_renames.get(key).unwrap_or(key);
            let where_ = format!("{at} › {} parameter `{}`", key.0, old_p.name);
            match new_params.get(new_key) {
                None => self.report(
                    Rule::ParameterRemoved,
                    &where_,
                    "the parameter is gone; clients still sending it are ignored",
                ),
                Some(new_p) => {
                    if !old_p.required && new_p.required {
                        self.report(Rule::ParameterBecameRequired, &where_, "the parameter became required");
                    } else if old_p.required && !new_p.required {
                        self.report(Rule::ParameterBecameOptional, &where_, "the parameter became optional");
                    }
                    if let (ParameterSchemaOrContent::Schema(o), ParameterSchemaOrContent::Schema(n)) =
                        (&old_p.format, &new_p.format)
                    {
                        self.schema(&where_, o, n, Dir::Request);
                    }
                }
            }
        }
        let renamed_to: BTreeSet<&(String, String)> = path_renames.values().collect();
        for (key, new_p) in &new_params {
            if old_params.contains_key(key) || renamed_to.contains(key) {
                continue;
            }
            let where_ = format!("{at} › {} parameter `{}`", key.0, new_p.name);
            if new_p.required {
                self.report(Rule::NewRequiredParameter, &where_, "a new required parameter");
            } else {
                self.report(Rule::OptionalParameterAdded, &where_, "a new optional parameter");
            }
        }
    }

    fn request_body(&mut self, at: &str, old: &'a Operation, new: &'a Operation) {
        let old_body = old.request_body.as_ref().and_then(|b| resolve_body(self.old, b));
        let new_body = new.request_body.as_ref().and_then(|b| resolve_body(self.new, b));
        let at = format!("{at} › request body");
        match (old_body, new_body) {
            (None, Some(n)) if n.required => {
                self.report(Rule::NewRequiredRequestBody, &at, "a request body is now required")
            }
            (Some(o), Some(n)) => {
                if !o.required && n.required {
                    self.report(Rule::RequestBodyBecameRequired, &at, "the request body became required");
                }
                for (media, old_media) in &o.content {
                    match n.content.get(media) {
                        None => {
                            self.report(Rule::RequestMediaTypeRemoved, &at, format!("`{media}` is no longer accepted"))
                        }
                        Some(new_media) => self.media(&format!("{at} {media} ›"), old_media, new_media, Dir::Request),
                    }
                }
            }
            _ => {}
        }
    }

    fn responses(&mut self, at: &str, old: &'a Operation, new: &'a Operation) {
        let collect = |doc: &'a OpenAPI, op: &'a Operation| -> BTreeMap<String, &'a Response> {
            let mut out: BTreeMap<String, &Response> = op
                .responses
                .responses
                .iter()
                .filter_map(|(code, r)| Some((status_text(code), resolve_response(doc, r)?)))
                .collect();
            if let Some(r) = op.responses.default.as_ref().and_then(|r| resolve_response(doc, r)) {
                out.insert("default".to_owned(), r);
            }
            out
        };
        let (old_rs, new_rs) = (collect(self.old, old), collect(self.new, new));
        for (status, old_r) in &old_rs {
            let success = status.starts_with('2');
            let where_ = format!("{at} › response {status}");
            let Some(new_r) = new_rs.get(status) else {
                let rule = if success { Rule::SuccessStatusRemoved } else { Rule::ErrorStatusRemoved };
                self.report(rule, &where_, format!("status {status} is no longer documented"));
                continue;
            };
            for (media, old_media) in &old_r.content {
                match new_r.content.get(media) {
                    None => {
                        let rule = if success { Rule::ResponseMediaTypeRemoved } else { Rule::ErrorMediaTypeRemoved };
                        self.report(rule, &where_, format!("`{media}` is no longer answered"));
                    }
                    Some(new_media) => self.media(&format!("{where_} {media} ›"), old_media, new_media, Dir::Response),
                }
            }
            self.headers(&where_, old_r, new_r);
        }
        for status in new_rs.keys().filter(|s| !old_rs.contains_key(*s)) {
            self.report(
                Rule::StatusAdded,
                &format!("{at} › response {status}"),
                format!("status {status} is documented"),
            );
        }
    }

    fn headers(&mut self, at: &str, old: &'a Response, new: &'a Response) {
        let collect = |doc: &'a OpenAPI, r: &'a Response| -> BTreeMap<String, &'a Header> {
            r.headers
                .iter()
                .filter_map(|(name, h)| Some((name.to_ascii_lowercase(), resolve_header(doc, h)?)))
                .collect()
        };
        let (old_hs, new_hs) = (collect(self.old, old), collect(self.new, new));
        for (name, old_h) in &old_hs {
            let where_ = format!("{at} › header `{name}`");
            match new_hs.get(name) {
                None if old_h.required => {
                    self.report(Rule::ResponseRequiredHeaderRemoved, &where_, "a required header is gone")
                }
                None => self.report(Rule::ResponseHeaderRemoved, &where_, "an optional header is gone"),
                Some(new_h) => {
                    if old_h.required && !new_h.required {
                        self.report(
                            Rule::ResponsePropertyBecameOptional,
                            &where_,
                            "the header is no longer always sent",
                        );
                    }
                    if let (ParameterSchemaOrContent::Schema(o), ParameterSchemaOrContent::Schema(n)) =
                        (&old_h.format, &new_h.format)
                    {
                        self.schema(&where_, o, n, Dir::Response);
                    }
                }
            }
        }
        for name in new_hs.keys().filter(|n| !old_hs.contains_key(*n)) {
            self.report(Rule::ResponseHeaderAdded, &format!("{at} › header `{name}`"), "a new header");
        }
    }

    fn media(&mut self, at: &str, old: &MediaType, new: &MediaType, dir: Dir) {
        if let (Some(o), Some(n)) = (&old.schema, &new.schema) {
            self.schema(at, o, n, dir);
        }
    }

    fn schema(&mut self, at: &str, old: &ReferenceOr<Schema>, new: &ReferenceOr<Schema>, dir: Dir) {
        let (Some(o), Some(n)) = (Shape::of(self.old, old), Shape::of(self.new, new)) else { return };
        if let (Some(on), Some(nn)) = (&o.name, &n.name) {
            if on != nn && self.renamed.insert((on.clone(), nn.clone())) {
                self.report(
                    Rule::SchemaRenamed,
                    at,
                    format!("schema `{on}` is now `{nn}`: generated SDKs rename the type"),
                );
            }
            // A named pair is compared once per direction: recursion ends, a shared schema's
            // change is reported once (where it is first met).
            if !self.seen.insert((on.clone(), nn.clone(), dir)) {
                return;
            }
        }
        self.shape(at, &o, &n, dir);
    }

    fn shape(&mut self, at: &str, o: &Shape, n: &Shape, dir: Dir) {
        let request = dir == Dir::Request;
        if o.kind != n.kind {
            let widening = o.kind == "integer" && n.kind == "number";
            if request && !widening {
                self.report(Rule::RequestTypeChanged, at, format!("type `{}` became `{}`", o.kind, n.kind));
            } else if !request {
                self.report(Rule::ResponseTypeChanged, at, format!("type `{}` became `{}`", o.kind, n.kind));
            }
            return;
        }
        let renamed = o.kind == "integer" && {
            // A format is an integer's range; a new name for the same values (or, in an answer,
            // fewer of them; in a request, more) breaks no client.
            let (old_range, new_range) = (integer_range(o), integer_range(n));
            if request { contains(new_range, old_range) } else { contains(old_range, new_range) }
        };
        if o.format != n.format && renamed {
            self.report(
                Rule::IntegerFormatRenamed,
                at,
                format!(
                    "format `{}` became `{}` over the values it held",
                    o.format.as_deref().unwrap_or("(none)"),
                    n.format.as_deref().unwrap_or("(none)")
                ),
            );
        } else if !request && o.format.is_none() && n.format.is_some() {
            // The same values, now with their form named (`date-time`): no answer changes, but
            // an SDK that maps formats to types generates a different type for the member.
            self.report(
                Rule::ResponseFormatAdded,
                at,
                format!("format `{}` now states the form of the values", n.format.as_deref().unwrap_or_default()),
            );
        } else if o.format != n.format {
            let rule = if request { Rule::RequestFormatChanged } else { Rule::ResponseFormatChanged };
            self.report(
                rule,
                at,
                format!(
                    "format `{}` became `{}`",
                    o.format.as_deref().unwrap_or("(none)"),
                    n.format.as_deref().unwrap_or("(none)")
                ),
            );
        }
        if request && o.nullable && !n.nullable {
            self.report(Rule::RequestBecameNotNullable, at, "`null` is no longer accepted");
        }
        if !request && !o.nullable && n.nullable {
            self.report(Rule::ResponseBecameNullable, at, "the value may now be `null`");
        }
        if request && o.default != n.default {
            self.report(
                Rule::RequestDefaultChanged,
                at,
                format!("default {} became {}", show(o.default.as_ref()), show(n.default.as_ref())),
            );
        }
        self.enumeration(at, o, n, dir);
        if request {
            self.request_constraints(at, o, n);
        }
        self.members(at, o, n, dir);
        if let (Some(oi), Some(ni)) = (&o.items, &n.items) {
            self.schema(&format!("{at}[]"), oi, ni, dir);
        }
        if let (Some(oa), Some(na)) = (&o.additional, &n.additional) {
            self.schema(&format!("{at}.*"), oa, na, dir);
        }
        for (i, (ob, nb)) in o.branches.iter().zip(&n.branches).enumerate() {
            self.schema(&format!("{at} (variant {i})"), ob, nb, dir);
        }
    }

    fn enumeration(&mut self, at: &str, o: &Shape, n: &Shape, dir: Dir) {
        let list = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(", ");
        // An open list (`x-extensible-enum`) promises its known values, in both directions: a
        // client may rely on each to keep its meaning. A value added to it is what the list is
        // for; one removed (or a closed list that drops a value the open one promised) breaks.
        if let Some(old) = &o.extensible {
            let now: Option<&BTreeSet<String>> = n.extensible.as_ref().or(n.enumeration.as_ref());
            let removed: BTreeSet<String> = match now {
                Some(now) => old.difference(now).cloned().collect(),
                None => BTreeSet::new(),
            };
            if !removed.is_empty() {
                self.report(
                    Rule::ExtensibleEnumValueRemoved,
                    at,
                    format!("no longer a known value: {}", list(&removed)),
                );
            }
        }
        if let (Some(old), Some(new)) = (&o.extensible, &n.extensible) {
            let added: BTreeSet<String> = new.difference(old).cloned().collect();
            if !added.is_empty() {
                self.report(
                    Rule::ExtensibleEnumValueAdded,
                    at,
                    format!("known values added to the open list: {}", list(&added)),
                );
            }
            return;
        }
        if let (Dir::Response, Some(old), None, Some(new)) = (dir, &o.enumeration, &n.enumeration, &n.extensible) {
            // The one deliberate release that opens a closed list: every value may now be
            // answered, which a strict client of the closed list refuses (breaking, accepted on
            // purpose by `codegen release`).
            let added: BTreeSet<String> = new.difference(old).cloned().collect();
            let removed: BTreeSet<String> = old.difference(new).cloned().collect();
            self.report(
                Rule::ResponseEnumValueAdded,
                at,
                format!(
                    "the closed list {} became an open list (x-extensible-enum): any value may be answered",
                    list(old)
                ),
            );
            if !added.is_empty() {
                self.report(
                    Rule::ExtensibleEnumValueAdded,
                    at,
                    format!("known values added to the open list: {}", list(&added)),
                );
            }
            if !removed.is_empty() {
                self.report(
                    Rule::ExtensibleEnumValueRemoved,
                    at,
                    format!("no longer a known value: {}", list(&removed)),
                );
            }
            return;
        }
        match (dir, &o.enumeration, &n.enumeration) {
            (Dir::Request, None, Some(new)) => self.report(
                Rule::RequestEnumValueRemoved,
                at,
                format!("any value was accepted; now only {}", list(new)),
            ),
            (Dir::Request, Some(old), Some(new)) => {
                let removed: BTreeSet<String> = old.difference(new).cloned().collect();
                let added: BTreeSet<String> = new.difference(old).cloned().collect();
                if !removed.is_empty() {
                    self.report(Rule::RequestEnumValueRemoved, at, format!("no longer accepted: {}", list(&removed)));
                }
                if !added.is_empty() {
                    self.report(Rule::RequestEnumValueAdded, at, format!("now accepted too: {}", list(&added)));
                }
            }
            (Dir::Request, Some(_), None) => {
                self.report(Rule::RequestConstraintLoosened, at, "the value is no longer restricted to a list");
            }
            (Dir::Response, Some(old), Some(new)) => {
                let added: BTreeSet<String> = new.difference(old).cloned().collect();
                let removed: BTreeSet<String> = old.difference(new).cloned().collect();
                if !added.is_empty() {
                    self.report(
                        Rule::ResponseEnumValueAdded,
                        at,
                        format!("new values may be answered: {}", list(&added)),
                    );
                }
                if !removed.is_empty() {
                    self.report(Rule::ResponseEnumValueRemoved, at, format!("no longer answered: {}", list(&removed)));
                }
            }
            (Dir::Response, Some(old), None) => self.report(
                Rule::ResponseEnumValueAdded,
                at,
                format!("any value may be answered, not only {}", list(old)),
            ),
            _ => {}
        }
    }

    /// Request constraints may loosen, never tighten.
    fn request_constraints(&mut self, at: &str, o: &Shape, n: &Shape) {
        let f = |v: Option<f64>| v.map_or("none".to_owned(), |v| v.to_string());
        let u = |v: Option<usize>| v.map_or("none".to_owned(), |v| v.to_string());
        let tighter_max = |old: Option<f64>, new: Option<f64>| new.is_some_and(|n| old.is_none_or(|o| n < o));
        let tighter_min = |old: Option<f64>, new: Option<f64>| new.is_some_and(|n| old.is_none_or(|o| n > o));
        let uf = |v: Option<usize>| v.map(|v| v as f64);
        if tighter_max(o.maximum, n.maximum) || (n.maximum == o.maximum && n.exclusive_maximum && !o.exclusive_maximum)
        {
            self.report(Rule::RequestMaximumDecreased, at, format!("maximum {} became {}", f(o.maximum), f(n.maximum)));
        } else if tighter_max(n.maximum, o.maximum) {
            self.report(
                Rule::RequestConstraintLoosened,
                at,
                format!("maximum {} became {}", f(o.maximum), f(n.maximum)),
            );
        }
        if tighter_min(o.minimum, n.minimum) || (n.minimum == o.minimum && n.exclusive_minimum && !o.exclusive_minimum)
        {
            self.report(Rule::RequestMinimumIncreased, at, format!("minimum {} became {}", f(o.minimum), f(n.minimum)));
        } else if tighter_min(n.minimum, o.minimum) {
            self.report(
                Rule::RequestConstraintLoosened,
                at,
                format!("minimum {} became {}", f(o.minimum), f(n.minimum)),
            );
        }
        if tighter_max(uf(o.max_length), uf(n.max_length)) {
            self.report(
                Rule::RequestMaxLengthDecreased,
                at,
                format!("maxLength {} became {}", u(o.max_length), u(n.max_length)),
            );
        }
        if tighter_min(uf(o.min_length), uf(n.min_length)) {
            self.report(
                Rule::RequestMinLengthIncreased,
                at,
                format!("minLength {} became {}", u(o.min_length), u(n.min_length)),
            );
        }
        if tighter_max(uf(o.max_items), uf(n.max_items)) {
            self.report(
                Rule::RequestMaxItemsDecreased,
                at,
                format!("maxItems {} became {}", u(o.max_items), u(n.max_items)),
            );
        }
        if tighter_min(uf(o.min_items), uf(n.min_items)) {
            self.report(
                Rule::RequestMinItemsIncreased,
                at,
                format!("minItems {} became {}", u(o.min_items), u(n.min_items)),
            );
        }
        if n.pattern.is_some() && o.pattern != n.pattern {
            self.report(
                Rule::RequestPatternChanged,
                at,
                format!(
                    "pattern {} became {}",
                    o.pattern.as_deref().unwrap_or("(none)"),
                    n.pattern.as_deref().unwrap_or("")
                ),
            );
        }
    }

    fn members(&mut self, at: &str, o: &Shape, n: &Shape, dir: Dir) {
        let request = dir == Dir::Request;
        // The first member of a body reads `… application/json › data`, deeper ones `data.items`.
        let member = |name: &str| if at.ends_with('›') { format!("{at} {name}") } else { format!("{at}.{name}") };
        for (name, old_s) in &o.properties {
            let where_ = member(name);
            let Some(new_s) = n.properties.get(name) else {
                if request {
                    self.report(Rule::RequestPropertyRemoved, &where_, "the member is no longer read");
                } else {
                    self.report(Rule::ResponsePropertyRemoved, &where_, "the member is no longer answered");
                }
                continue;
            };
            let (was, is) = (o.required.contains(name), n.required.contains(name));
            if request && !was && is {
                self.report(Rule::RequestPropertyBecameRequired, &where_, "the member became required");
            }
            if !request && was && !is {
                self.report(Rule::ResponsePropertyBecameOptional, &where_, "the member may now be absent");
            }
            self.schema(&where_, old_s, new_s, dir);
        }
        for name in n.properties.keys().filter(|k| !o.properties.contains_key(*k)) {
            let where_ = member(name);
            match (request, n.required.contains(name)) {
                (true, true) => self.report(Rule::NewRequiredRequestProperty, &where_, "a new required member"),
                (true, false) => self.report(Rule::OptionalRequestPropertyAdded, &where_, "a new optional member"),
                (false, _) => self.report(Rule::ResponsePropertyAdded, &where_, "a new member"),
            }
        }
    }
}

/// The values an integer schema holds: its format's range, narrowed by `minimum`/`maximum`.
fn integer_range(s: &Shape) -> (i128, i128) {
    let (low, high): (i128, i128) = match s.format.as_deref() {
        Some("int32") => (i32::MIN.into(), i32::MAX.into()),
        Some("int64") => (i64::MIN.into(), i64::MAX.into()),
        Some("uint8") => (0, u8::MAX.into()),
        Some("uint16") => (0, u16::MAX.into()),
        Some("uint32") => (0, u32::MAX.into()),
        Some("uint64") => (0, u64::MAX.into()),
        Some("int8") => (i8::MIN.into(), i8::MAX.into()),
        Some("int16") => (i16::MIN.into(), i16::MAX.into()),
        _ => (i128::MIN, i128::MAX),
    };
    // Bounds are whole numbers here; a fractional one rounds inwards.
    let low = s.minimum.map_or(low, |m| low.max(m.ceil() as i128));
    let high = s.maximum.map_or(high, |m| high.min(m.floor() as i128));
    (low, high)
}

/// Whether `outer` holds every value of `inner`.
fn contains(outer: (i128, i128), inner: (i128, i128)) -> bool {
    outer.0 <= inner.0 && inner.1 <= outer.1
}

fn show(value: Option<&Value>) -> String {
    value.map_or("(none)".to_owned(), |v| format!("`{v}`"))
}

fn status_text(code: &StatusCode) -> String {
    match code {
        StatusCode::Code(n) => n.to_string(),
        StatusCode::Range(n) => format!("{n}XX"),
    }
}

/// The path parameters of `op` in the order they appear in the operation's parameter list.
fn path_order(op: &Operation, params: &BTreeMap<(String, String), &ParameterData>) -> Vec<(String, String)> {
    let mut names: Vec<(String, String)> = Vec::new();
    for p in &op.parameters {
        if let ReferenceOr::Item(Parameter::Path { parameter_data, .. }) = p {
            names.push(("path".to_owned(), parameter_data.name.clone()));
        }
    }
    names.retain(|k| params.contains_key(k));
    names
}

fn component_name(reference: &str, kind: &str) -> Option<String> {
    reference.strip_prefix(&format!("#/components/{kind}/")).map(str::to_owned)
}

fn resolve_parameter<'d>(doc: &'d OpenAPI, p: &'d ReferenceOr<Parameter>) -> Option<&'d Parameter> {
    match p {
        ReferenceOr::Item(p) => Some(p),
        ReferenceOr::Reference { reference } => {
            let name = component_name(reference, "parameters")?;
            resolve_parameter(doc, doc.components.as_ref()?.parameters.get(&name)?)
        }
    }
}

fn resolve_body<'d>(doc: &'d OpenAPI, b: &'d ReferenceOr<RequestBody>) -> Option<&'d RequestBody> {
    match b {
        ReferenceOr::Item(b) => Some(b),
        ReferenceOr::Reference { reference } => {
            let name = component_name(reference, "requestBodies")?;
            resolve_body(doc, doc.components.as_ref()?.request_bodies.get(&name)?)
        }
    }
}

fn resolve_response<'d>(doc: &'d OpenAPI, r: &'d ReferenceOr<Response>) -> Option<&'d Response> {
    match r {
        ReferenceOr::Item(r) => Some(r),
        ReferenceOr::Reference { reference } => {
            let name = component_name(reference, "responses")?;
            resolve_response(doc, doc.components.as_ref()?.responses.get(&name)?)
        }
    }
}

fn resolve_header<'d>(doc: &'d OpenAPI, h: &'d ReferenceOr<Header>) -> Option<&'d Header> {
    match h {
        ReferenceOr::Item(h) => Some(h),
        ReferenceOr::Reference { reference } => {
            let name = component_name(reference, "headers")?;
            resolve_header(doc, doc.components.as_ref()?.headers.get(&name)?)
        }
    }
}

/// A schema with its references followed and its kind flattened into the members the rules read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shape {
    /// The component it was reached through, if any.
    pub(crate) name: Option<String>,
    /// `string`, `integer`, `number`, `boolean`, `object`, `array`, `oneOf`, `anyOf`, `not`, `any`.
    pub(crate) kind: &'static str,
    pub(crate) format: Option<String>,
    pub(crate) nullable: bool,
    pub(crate) default: Option<Value>,
    /// JSON texts of the allowed values.
    pub(crate) enumeration: Option<BTreeSet<String>>,
    /// JSON texts of the known values of an open list (`x-extensible-enum`): any string is
    /// valid, and these are the values a release promises to keep.
    pub(crate) extensible: Option<BTreeSet<String>>,
    pub(crate) pattern: Option<String>,
    pub(crate) min_length: Option<usize>,
    pub(crate) max_length: Option<usize>,
    pub(crate) minimum: Option<f64>,
    pub(crate) maximum: Option<f64>,
    exclusive_minimum: bool,
    exclusive_maximum: bool,
    min_items: Option<usize>,
    max_items: Option<usize>,
    properties: BTreeMap<String, ReferenceOr<Schema>>,
    required: BTreeSet<String>,
    items: Option<ReferenceOr<Schema>>,
    additional: Option<ReferenceOr<Schema>>,
    branches: Vec<ReferenceOr<Schema>>,
}

pub(crate) fn unbox(r: &ReferenceOr<Box<Schema>>) -> ReferenceOr<Schema> {
    match r {
        ReferenceOr::Reference { reference } => ReferenceOr::Reference { reference: reference.clone() },
        ReferenceOr::Item(s) => ReferenceOr::Item((**s).clone()),
    }
}

fn texts<T: serde::Serialize>(values: &[T]) -> Option<BTreeSet<String>> {
    (!values.is_empty()).then(|| values.iter().map(|v| serde_json::to_string(v).unwrap_or_default()).collect())
}

fn format_text<T: serde::Serialize>(format: &T) -> Option<String> {
    match serde_json::to_value(format).ok()? {
        Value::String(s) if !s.is_empty() => Some(s),
        _ => None,
    }
}

/// Only annotations (`{description: …}`): what poem-openapi puts beside a `$ref` in `allOf`.
fn is_annotation(s: &ReferenceOr<Schema>) -> bool {
    matches!(s, ReferenceOr::Item(Schema { schema_kind: SchemaKind::Any(any), .. }) if *any == Default::default())
}

impl Shape {
    pub(crate) fn of(doc: &OpenAPI, schema: &ReferenceOr<Schema>) -> Option<Shape> {
        Self::walk(doc, schema, 0)
    }

    fn walk(doc: &OpenAPI, schema: &ReferenceOr<Schema>, depth: usize) -> Option<Shape> {
        if depth > 32 {
            return None;
        }
        let schema = match schema {
            ReferenceOr::Reference { reference } => {
                let name = component_name(reference, "schemas")?;
                let target = doc.components.as_ref()?.schemas.get(&name)?;
                let mut shape = Self::walk(doc, target, depth + 1)?;
                shape.name.get_or_insert(name);
                return Some(shape);
            }
            ReferenceOr::Item(schema) => schema,
        };
        let data = &schema.schema_data;
        let mut shape = match &schema.schema_kind {
            SchemaKind::AllOf { all_of } => {
                let structural: Vec<&ReferenceOr<Schema>> = all_of.iter().filter(|s| !is_annotation(s)).collect();
                if let [only] = structural.as_slice() {
                    Self::walk(doc, only, depth + 1)?
                } else {
                    // Merge the members of every part, as a validator would require them all.
                    let mut merged = Shape { kind: "object", ..Shape::default() };
                    for part in structural {
                        let part = Self::walk(doc, part, depth + 1)?;
                        merged.properties.extend(part.properties);
                        merged.required.extend(part.required);
                    }
                    merged
                }
            }
            SchemaKind::OneOf { one_of } => Shape { kind: "oneOf", branches: one_of.clone(), ..Shape::default() },
            SchemaKind::AnyOf { any_of } => Shape { kind: "anyOf", branches: any_of.clone(), ..Shape::default() },
            SchemaKind::Not { not } => Shape { kind: "not", branches: vec![(**not).clone()], ..Shape::default() },
            // openapiv3 reads a schema it cannot type exactly (an integer bound written `100.0`,
            // as poem-openapi writes them) as `Any`; its `type` still says what it is.
            SchemaKind::Any(any) => Shape {
                kind: match any.typ.as_deref() {
                    Some("string") => "string",
                    Some("integer") => "integer",
                    Some("number") => "number",
                    Some("boolean") => "boolean",
                    Some("object") => "object",
                    Some("array") => "array",
                    _ if !any.properties.is_empty() => "object",
                    _ => "any",
                },
                exclusive_minimum: any.exclusive_minimum.unwrap_or(false),
                exclusive_maximum: any.exclusive_maximum.unwrap_or(false),
                min_items: any.min_items,
                max_items: any.max_items,
                additional: match &any.additional_properties {
                    Some(AdditionalProperties::Schema(s)) => Some((**s).clone()),
                    _ => None,
                },
                pattern: any.pattern.clone(),
                min_length: any.min_length,
                max_length: any.max_length,
                minimum: any.minimum,
                maximum: any.maximum,
                properties: any.properties.iter().map(|(k, v)| (k.clone(), unbox(v))).collect(),
                required: any.required.iter().cloned().collect(),
                items: any.items.as_ref().map(unbox),
                enumeration: texts(&any.enumeration),
                format: any.format.clone(),
                ..Shape::default()
            },
            SchemaKind::Type(t) => match t {
                Type::String(s) => Shape {
                    kind: "string",
                    format: format_text(&s.format),
                    pattern: s.pattern.clone(),
                    enumeration: texts(&s.enumeration),
                    min_length: s.min_length,
                    max_length: s.max_length,
                    ..Shape::default()
                },
                Type::Integer(i) => Shape {
                    kind: "integer",
                    format: format_text(&i.format),
                    minimum: i.minimum.map(|v| v as f64),
                    maximum: i.maximum.map(|v| v as f64),
                    exclusive_minimum: i.exclusive_minimum,
                    exclusive_maximum: i.exclusive_maximum,
                    enumeration: texts(&i.enumeration),
                    ..Shape::default()
                },
                Type::Number(n) => Shape {
                    kind: "number",
                    format: format_text(&n.format),
                    minimum: n.minimum,
                    maximum: n.maximum,
                    exclusive_minimum: n.exclusive_minimum,
                    exclusive_maximum: n.exclusive_maximum,
                    enumeration: texts(&n.enumeration),
                    ..Shape::default()
                },
                Type::Boolean(b) => Shape { kind: "boolean", enumeration: texts(&b.enumeration), ..Shape::default() },
                Type::Object(o) => Shape {
                    kind: "object",
                    properties: o.properties.iter().map(|(k, v)| (k.clone(), unbox(v))).collect(),
                    required: o.required.iter().cloned().collect(),
                    additional: match &o.additional_properties {
                        Some(AdditionalProperties::Schema(s)) => Some((**s).clone()),
                        _ => None,
                    },
                    ..Shape::default()
                },
                Type::Array(a) => Shape {
                    kind: "array",
                    items: a.items.as_ref().map(unbox),
                    min_items: a.min_items,
                    max_items: a.max_items,
                    ..Shape::default()
                },
            },
        };
        shape.nullable |= data.nullable;
        if let Some(Value::Array(known)) = data.extensions.get("x-extensible-enum") {
            shape.extensible = texts(known);
        }
        if data.default.is_some() {
            shape.default.clone_from(&data.default);
        }
        Some(shape)
    }
}
