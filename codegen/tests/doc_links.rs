//! The README is the front door and `docs/` its rooms: every link in them must lead somewhere.
//! A relative link must name a file or directory of the repository, and a `#fragment` a heading
//! of the Markdown file it points into (GitHub's anchor rule); every page in `docs/` must be
//! reachable from the README. Links to other sites are not followed (no test leaves the machine).
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("codegen sits in the repository").to_owned()
}

/// The pages checked: the README and every Markdown file in `docs/`.
fn pages() -> Vec<PathBuf> {
    let root = repository();
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The prose of a page: fenced code blocks and inline code spans blanked out, so a `](` inside
/// code is not read as a link.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push('\n');
            continue;
        }
        if !fenced {
            let mut in_code = false;
            for c in line.chars() {
                if c == '`' {
                    in_code = !in_code;
                }
                out.push(if in_code || c == '`' { ' ' } else { c });
            }
        }
        out.push('\n');
    }
    out
}

/// The targets of the inline links `[text](target)` of a page's prose.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut out = Vec::new();
    let mut rest = prose.as_str();
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let end = after.find([')', ' ', '\n']).unwrap_or(after.len());
        out.push(after[..end].to_owned());
        rest = &after[end..];
    }
    out
}

/// GitHub's anchor of a heading: lowercase, punctuation dropped (but `-` and `_`), spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings, numbered as GitHub numbers repeats (`x`, `x-1`).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let base = anchor(line.trim_start_matches('#'));
        let mut name = base.clone();
        let mut n = 0;
        while out.contains(&name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        out.insert(name);
    }
    out
}

#[test]
fn every_link_of_the_readme_and_docs_leads_somewhere() {
    let root = repository();
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("readable page");
        let dir = page.parent().expect("a page sits in a directory");
        let name = page.strip_prefix(&root).expect("inside the repository").display().to_string();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = target.split_once('#').map_or((target.as_str(), None), |(p, f)| (p, Some(f)));
            let file = if path.is_empty() { page.clone() } else { dir.join(path) };
            if !file.exists() {
                broken.push(format!("{name}: {target}: no such file"));
                continue;
            }
            if let Some(fragment) = fragment {
                let is_markdown = file.extension().is_some_and(|e| e == "md");
                let headings = anchors(&std::fs::read_to_string(&file).unwrap_or_default());
                if !is_markdown || !headings.contains(fragment) {
                    broken.push(format!("{name}: {target}: no heading #{fragment} there"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_page_of_the_docs_is_linked_from_the_readme() {
    let root = repository();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let linked: BTreeSet<String> =
        links(&readme).into_iter().map(|t| t.split('#').next().unwrap_or_default().to_owned()).collect();
    for page in pages().into_iter().skip(1) {
        let relative = page.strip_prefix(&root).expect("inside the repository").display().to_string();
        assert!(linked.contains(&relative), "{relative} is not linked from README.md");
    }
}

#[test]
fn the_readme_stays_a_front_door() {
    // About 300 lines at most: what govdata is, how to run it and test it, where to read on.
    let lines = std::fs::read_to_string(repository().join("README.md")).expect("README.md").lines().count();
    assert!(lines <= 300, "README.md has {lines} lines: move the detail to docs/");
}

#[test]
fn anchors_follow_githubs_rule() {
    assert_eq!(anchor(" The synthetic store and `bench`"), "the-synthetic-store-and-bench");
    assert_eq!(anchor(" Push: the feed, the stream and webhooks"), "push-the-feed-the-stream-and-webhooks");
    assert_eq!(anchors("# A\n## A\n```\n# not a heading\n```\n"), BTreeSet::from(["a".to_owned(), "a-1".to_owned()]));
    assert_eq!(links("see [x](a.md#b) and `[y](code)`\n```\n[z](fenced)\n```\n"), ["a.md#b"]);
}
