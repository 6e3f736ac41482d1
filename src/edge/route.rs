//! The operation a request is for, found once per request by the edge (`edge::front`) and read
//! by the access gate, the response cache and the handlers: the path is matched once.
use std::sync::Arc;

use poem::{Request, http::Method};

use super::Documents;
use crate::contract::{
    access::Version,
    operations::{self, OperationDecl},
    paths,
};

#[derive(Debug, Clone)]
pub struct Route {
    pub version: Version,
    /// The document's path template, e.g. `/v1/daos/{daoId}/brief`.
    pub template: Arc<str>,
    /// The declaration of the operation the request's method names (HEAD names the GET it
    /// mirrors); `None` when the path serves other methods only.
    pub decl: Option<&'static OperationDecl>,
    /// The operation's document declares a request body: the edge reads it whole, within its
    /// cap and its time, before the request takes a slot (`edge::body`).
    pub takes_body: bool,
}

/// Marks a request the MCP endpoint (`edge::mcp`) makes to the application for a tool call. The
/// MCP request it came on was counted against the client address already; partner and payer
/// limits still apply to the call. Only the server sets it: a client cannot send an extension.
#[derive(Debug, Clone, Copy)]
pub struct ToolCall;

/// What the layers inside the edge learn about a request, for its access-log line and metrics:
/// set once by whoever knows (the gate: the credential).
#[derive(Debug, Default)]
pub struct AccessNote {
    /// `none`, `internal`, `partner` or `x402`.
    pub credential: std::sync::OnceLock<&'static str>,
}

impl AccessNote {
    /// Notes the credential `req` was served with (first call wins).
    pub fn credential(req: &Request, kind: &'static str) {
        if let Some(note) = req.extensions().get::<Arc<Self>>() {
            let _ = note.credential.set(kind);
        }
    }
}

impl Route {
    /// The metrics and log label of a route: `v1.daos_list`; a path of no operation is named
    /// by its declaration in `contract::paths` (`document`, `health`…), any other `unmatched`.
    pub fn label(route: Option<&Self>, path: &str) -> String {
        match route.and_then(|r| r.decl.map(|d| (r.version, d))) {
            Some((version, decl)) => format!("{}.{}", &version.prefix()[1..], decl.local_id()),
            None => paths::find(path).map_or("unmatched", |p| p.label).to_owned(),
        }
    }

    /// The route of `req` in the published documents, if any.
    pub fn find(documents: &Documents, req: &Request) -> Option<Self> {
        let path = req.uri().path();
        let version = [Version::V1, Version::V2]
            .into_iter()
            .find(|v| path.strip_prefix(v.prefix()).is_some_and(|rest| rest.starts_with('/')))?;
        let method = if req.method() == Method::HEAD { "get" } else { req.method().as_str() };
        let (template, operation_id) = documents.get(version).route(path, method)?;
        let decl = operation_id.and_then(|id| operations::find(version, id));
        // Reads have no body: only other methods look in the document.
        let takes_body = decl.is_some()
            && !matches!(*req.method(), Method::GET | Method::HEAD)
            && documents.get(version).json["paths"][&*template][method.to_ascii_lowercase()]
                .get("requestBody")
                .is_some();
        Some(Self { version, template, decl, takes_body })
    }

    /// The route the edge found for `req`.
    pub fn of(req: &Request) -> Option<&Self> {
        req.extensions().get::<Self>()
    }
}
