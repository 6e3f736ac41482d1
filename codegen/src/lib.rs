//! The contract tooling of govdata: writes the published OpenAPI documents and the operation
//! table, lints the documents, and guards v1 against breaking changes (`diff`, the released
//! baseline). `main.rs` is the command line; the tests in `tests/` run the same checks.
pub mod diff;
pub mod lint;
pub mod table;

use std::path::{Path, PathBuf};

use anyhow::Context;
use govdata::api::Documents;
use govdata::contract::access::{Prices, Version};
use openapiv3::OpenAPI;

/// The released v1 document, the baseline no later v1 may break.
pub const RELEASED_V1: &str = "released/v1.json";
/// The operation table.
pub const OPERATIONS: &str = "operations.md";

pub fn openapi_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("openapi")
}

/// Parses an OpenAPI 3.0 document, as the typed model and as raw JSON.
pub fn parse(text: &str, name: &str) -> anyhow::Result<(OpenAPI, serde_json::Value)> {
    let raw: serde_json::Value = serde_json::from_str(text).with_context(|| format!("{name} is not JSON"))?;
    let doc: OpenAPI =
        serde_json::from_value(raw.clone()).with_context(|| format!("{name} is not an OpenAPI 3.0 document"))?;
    Ok((doc, raw))
}

pub fn load(path: &Path) -> anyhow::Result<(OpenAPI, serde_json::Value)> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse(&text, &path.display().to_string())
}

/// Every file codegen writes under `openapi/`, with its content, from the code as it is. The
/// committed documents show the default prices; a deployment serves its configured ones.
pub fn generated() -> anyhow::Result<Vec<(String, String)>> {
    let documents = Documents::build(Prices::default());
    let mut files: Vec<(String, String)> =
        documents.files().into_iter().map(|(name, content)| (name.to_owned(), content.to_owned())).collect();
    let text = |name: &str| files.iter().find(|(n, _)| n == name).map(|(_, c)| c.clone()).expect("generated");
    let (v1, _) = parse(&text("v1.json"), "v1.json")?;
    let (v2, _) = parse(&text("v2.json"), "v2.json")?;
    files.push((OPERATIONS.to_owned(), table::markdown(&[("v1", Version::V1, &v1), ("v2", Version::V2, &v2)])));
    Ok(files)
}

/// What `codegen check` finds wrong, one line each (empty: all good).
pub fn check(dir: &Path) -> anyhow::Result<Vec<String>> {
    let mut problems = Vec::new();
    let files = generated()?;
    for (name, content) in &files {
        if std::fs::read_to_string(dir.join(name)).ok().as_deref() != Some(content.as_str()) {
            problems.push(format!("openapi/{name} is stale: run `cargo run -p codegen` and review the diff"));
        }
    }
    for name in ["v1.json", "v2.json"] {
        let content = &files.iter().find(|(n, _)| n == name).expect("generated").1;
        let (doc, raw) = parse(content, name)?;
        problems.extend(lint::lint(&doc, &raw).into_iter().map(|f| format!("lint {name}: {f}")));
    }
    let current = parse(&files.iter().find(|(n, _)| n == "v1.json").expect("generated").1, "v1.json")?.0;
    let (released, _) = load(&dir.join(RELEASED_V1))?;
    let report = diff::diff(&released, &current);
    for change in report.breaking() {
        problems.push(format!(
            "v1 breaks the released baseline openapi/{RELEASED_V1}: [{}] {}: {}",
            change.rule.id(),
            change.at,
            change.detail
        ));
    }
    Ok(problems)
}

/// What `codegen release` did.
#[derive(Debug)]
pub enum Release {
    /// The baseline now is the current v1; the report says what changed since the last one.
    Moved(diff::Report),
    /// The current v1 breaks clients of the released one; nothing was written.
    Refused(diff::Report),
}

/// Moves the released v1 baseline under `dir` to `current_v1` (the document's text), unless
/// that would break a client of the released one.
pub fn release(dir: &Path, current_v1: &str) -> anyhow::Result<Release> {
    let path = dir.join(RELEASED_V1);
    let current = parse(current_v1, "v1.json")?.0;
    let report = if path.exists() { diff::diff(&load(&path)?.0, &current) } else { diff::Report::default() };
    if report.is_breaking() {
        return Ok(Release::Refused(report));
    }
    std::fs::create_dir_all(path.parent().expect("a parent"))?;
    std::fs::write(&path, current_v1)?;
    Ok(Release::Moved(report))
}
