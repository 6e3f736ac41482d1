//! The paths that are not operations, declared once: the documents, `/llms.txt`, the reference
//! pages, the root index, liveness, readiness, metrics and MCP. Routing mounts them from this
//! table (`server::routes`, through `edge::paths::mount`), the gate reads their access, the
//! metrics and the access log their label (`edge::route::Route::label`), and what the documents,
//! `/llms.txt`, `/docs` and the 404 say about them reads their paths from here.
use super::access::Version;
use super::mcp::MCP_PATH;

/// A published document's rendition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenAPI 3.0, JSON (`openapi.json`).
    Json,
    /// OpenAPI 3.0, YAML (`openapi.yaml`).
    Yaml,
    /// OpenAPI 3.1, JSON (`openapi.3.1.json`).
    Json31,
}

/// What a path serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    /// `/`: where everything else is.
    Root,
    /// Liveness: the process answers.
    Health,
    /// Readiness: the store answers and the process is not draining.
    Readiness,
    /// Prometheus metrics for the operator.
    Metrics,
    /// `/llms.txt`.
    Llms,
    /// A surface's published document in one rendition.
    Document(Version, Format),
    /// The documentation index (`None`) or a surface's Redoc reference.
    Docs(Option<Version>),
    /// The MCP endpoint (Streamable HTTP).
    Mcp,
}

/// Who a path answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathAccess {
    /// Anyone; the request counts against the client address's rate limit.
    Free,
    /// Anyone, never rate limited: the probes an orchestrator polls.
    Probe,
    /// Only the internal token; to anyone else the path does not exist (404).
    Internal,
}

/// One path that is not an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathDecl {
    pub path: &'static str,
    pub kind: PathKind,
    /// Its `operation` label in the metrics and the access log.
    pub label: &'static str,
    pub access: PathAccess,
    /// The methods it answers (HEAD mirrors GET and is not listed).
    pub methods: &'static [&'static str],
}

const GET: &[&str] = &["GET"];

const fn path(path: &'static str, kind: PathKind, label: &'static str, access: PathAccess) -> PathDecl {
    PathDecl { path, kind, label, access, methods: GET }
}

/// Every path that is not an operation, in the order the root index and `/docs` name them.
pub const PATHS: &[PathDecl] = {
    use self::{Format::*, PathAccess::*, PathKind::*};
    use super::access::Version::{V1, V2};
    &[
        path("/", Root, "docs", Free),
        path("/v1/openapi.json", Document(V1, Json), "document", Free),
        path("/v1/openapi.yaml", Document(V1, Yaml), "document", Free),
        path("/v1/openapi.3.1.json", Document(V1, Json31), "document", Free),
        path("/v2/openapi.json", Document(V2, Json), "document", Free),
        path("/v2/openapi.yaml", Document(V2, Yaml), "document", Free),
        path("/v2/openapi.3.1.json", Document(V2, Json31), "document", Free),
        path("/docs", Docs(None), "docs", Free),
        path("/docs/v1", Docs(Some(V1)), "docs", Free),
        path("/docs/v2", Docs(Some(V2)), "docs", Free),
        path("/llms.txt", Llms, "llms", Free),
        PathDecl { methods: &["POST"], ..path(MCP_PATH, Mcp, "mcp", Free) },
        path("/healthz", Health, "health", Probe),
        path("/readyz", Readiness, "health", Probe),
        path("/metrics", Metrics, "metrics", Internal),
    ]
};

/// The declaration of `path`, if it is one of these.
pub fn find(path: &str) -> Option<&'static PathDecl> {
    PATHS.iter().find(|p| p.path == path)
}

/// The path that serves `kind`.
pub fn of(kind: PathKind) -> &'static str {
    PATHS.iter().find(|p| p.kind == kind).map(|p| p.path).expect("every kind named is declared in PATHS")
}

/// The path of a surface's document in a rendition: `/v1/openapi.json`.
pub fn document(version: Version, format: Format) -> &'static str {
    of(PathKind::Document(version, format))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn each_path_and_each_kind_is_declared_once() {
        let paths: BTreeSet<_> = PATHS.iter().map(|p| p.path).collect();
        assert_eq!(paths.len(), PATHS.len(), "a path declared twice");
        for p in PATHS {
            assert_eq!(PATHS.iter().filter(|q| q.kind == p.kind).count(), 1, "{:?} is served twice", p.kind);
            assert!(p.path.starts_with('/') && !p.methods.is_empty(), "{p:?}");
            assert!(!p.label.is_empty() && p.label != "unmatched", "{p:?}");
        }
    }

    #[test]
    fn a_document_path_names_its_surface_and_rendition() {
        assert_eq!(document(Version::V1, Format::Json), "/v1/openapi.json");
        assert_eq!(document(Version::V2, Format::Yaml), "/v2/openapi.yaml");
        assert_eq!(document(Version::V2, Format::Json31), "/v2/openapi.3.1.json");
        for p in PATHS {
            if let PathKind::Document(version, _) = p.kind {
                assert!(p.path.starts_with(&format!("{}/", version.prefix())), "{p:?}");
            }
        }
    }
}
