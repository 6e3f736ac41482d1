//! The contract tooling of govdata: writes the published OpenAPI documents and the operation
//! table, lints the documents, and guards each released surface against breaking changes
//! (`diff`, the released baselines under `openapi/released/`). `main.rs` is the command line; the tests in `tests/` run the same checks.
pub mod diff;
pub mod lint;
pub mod table;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::Context;
use govdata::api;
use govdata::contract::access::{Prices, Version};
use openapiv3::OpenAPI;

/// The released v1 document, the baseline no later v1 may break.
pub const RELEASED_V1: &str = "released/v1.json";
/// The released v2 document, the same for v2.
pub const RELEASED_V2: &str = "released/v2.json";
/// Every surface with its released baseline, in release order.
pub const RELEASED: [(&str, &str); 2] = [("v1", RELEASED_V1), ("v2", RELEASED_V2)];
/// What each release moved, and why any breaking change in it was accepted.
pub const RELEASE_LOG: &str = "released/CHANGELOG.md";
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
    let documents = api::documents(Prices::default());
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
    let ids = |name: &str| -> anyhow::Result<BTreeSet<String>> {
        let (doc, _) = parse(&files.iter().find(|(n, _)| n == name).expect("generated").1, name)?;
        Ok(doc.operations().filter_map(|(_, _, op)| op.operation_id.clone()).collect())
    };
    for shared in ids("v1.json")?.intersection(&ids("v2.json")?) {
        problems.push(format!(
            "operationId `{shared}` is in both documents: a generator that merges them sees one operation"
        ));
    }
    for (surface, baseline) in RELEASED {
        let name = format!("{surface}.json");
        let current = parse(&files.iter().find(|(n, _)| *n == name).expect("generated").1, &name)?.0;
        let path = dir.join(baseline);
        if !path.exists() {
            continue;
        }
        let (released, _) = load(&path)?;
        for change in diff::diff(&released, &current).breaking() {
            problems.push(format!(
                "{surface} breaks the released baseline openapi/{baseline}: [{}] {}: {}",
                change.rule.id(),
                change.at,
                change.detail
            ));
        }
    }
    Ok(problems)
}

/// What `codegen release` did.
#[derive(Debug)]
pub enum Release {
    /// The baseline now is the current document; the report says what changed since the last one.
    Moved(diff::Report),
    /// The current document breaks clients of the released one in ways not accepted; nothing
    /// was written. The report lists every change; the unaccepted breaking ones refused it.
    Refused(diff::Report),
}

/// A breaking change released on purpose: where it is (`Change::at`, exactly as a refused
/// release reports it) and why it is right to release (written to the release log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acceptance {
    pub at: String,
    pub reason: String,
}

/// Moves the released baseline of `surface` (`v1`, `v2`) under `dir` to `current` (the
/// document's text), unless that would break a client of the released one in a way `accepted`
/// does not name. A first release has nothing to break. Each release adds an entry to the
/// release log: its date, the reasons for what it accepted, and the full change report.
pub fn release(
    dir: &Path,
    surface: &str,
    current: &str,
    accepted: &[Acceptance],
    date: &str,
) -> anyhow::Result<Release> {
    let baseline = RELEASED
        .iter()
        .find(|(s, _)| *s == surface)
        .with_context(|| format!("no surface `{surface}`; surfaces are v1 and v2"))?
        .1;
    let path = dir.join(baseline);
    let current_doc = parse(current, &format!("{surface}.json"))?.0;
    let first = !path.exists();
    let report = if first { diff::Report::default() } else { diff::diff(&load(&path)?.0, &current_doc) };
    let unaccepted = report.breaking().any(|c| !accepted.iter().any(|a| a.at == c.at));
    if unaccepted {
        return Ok(Release::Refused(report));
    }
    let used: Vec<&Acceptance> = accepted.iter().filter(|a| report.breaking().any(|c| c.at == a.at)).collect();
    std::fs::create_dir_all(path.parent().expect("a parent"))?;
    std::fs::write(&path, current)?;
    let log = dir.join(RELEASE_LOG);
    let mut text = std::fs::read_to_string(&log).unwrap_or_else(|_| {
        "# Releases\n\nWritten by `codegen release`: what each release of a surface changed against the one \
         before, and why any breaking change in it was released on purpose.\n"
            .to_owned()
    });
    text.push_str(&format!("\n## {surface}, {date}\n\n"));
    if first {
        text.push_str(
            "The first release of the surface: from now on `codegen check` refuses any change that breaks it.\n",
        );
    } else if report.changes.is_empty() {
        text.push_str("No changes to the contract since the last release.\n");
    }
    for a in &used {
        text.push_str(&format!("- Accepted at {}: {}\n", a.at, a.reason));
    }
    if !report.changes.is_empty() {
        let body = report.markdown(&format!("openapi/{baseline} (before)"), &format!("{surface} (released)"));
        // The report's own heading becomes a paragraph under the release's.
        text.push('\n');
        text.push_str(&body.trim_start_matches("# ").replace("\n## ", "\n### "));
    }
    std::fs::write(&log, text)?;
    Ok(Release::Moved(report))
}
