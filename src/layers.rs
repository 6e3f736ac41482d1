//! Which module may use which: the one-way flow of data, as a table a test holds the code to.
//!
//! Served data flows `sample`/`ingest` (writers) → `store` (database) → `api` (HTTP readers).
//! `contract` declares the public facts and depends on nothing of the crate; `rules` are pure
//! domain rules over facts (signals, lookup ranking, evidence assembly) that `store` and `api`
//! apply; `config` is plain data read from flags; `server` wires everything (live refresh
//! reaches `ingest` only through the `edge::live::Refresh` trait it implements there).
//!
//! A request meets the `edge` before the surfaces (`api`): the edge routes, gates, caches and
//! answers errors, and holds the state the handlers are handed (`edge::AppState`). So `api`
//! may import `edge`, and `edge` never imports `api`: it finds operations through the published
//! documents and `contract`, and is handed the surfaces' documents as text (`api::documents`).
//!
//! Push (`push`) sends the feed to those who asked for it as it is published: the webhook
//! delivery queue, its dispatcher and the operators' `govdata webhooks`, and the stream hub the
//! event streams read. It reads the store and writes its own bookkeeping tables through sea-orm
//! (the queue), as the edge writes payments: `store` → `push` → `edge`/`api`, never back. The
//! subscriptions themselves are a store module (`store::webhooks`) that push and `api` use alike.
//! The edge imports push, not the other way round, because the edge holds the process's stream
//! hub in `edge::AppState` for the handlers; what the hub needs of the edge (the serving
//! revision it follows, the query slots a catch-up reads within) it declares as traits
//! (`push::hub::Revision`, `push::hub::ReadSlots`) that the edge implements. A trait for the
//! hub in the edge would have made push import the edge instead: the hub is push's, so the
//! edge names it.
//!
//! `allocator` is a leaf, like `contract`: the store asks it to hand SQLite's allocations to the
//! process's allocator before it opens SQLite's first connection.
//!
//! How a store failure is answered (503 or 500, `store::failures`) lives with the store: every
//! layer that reads it (`edge`, `push`, `api`) may import it, and it names what it does besides
//! answering (it marks the running read failed, so that `edge::retry` reads again elsewhere).
//!
//! Inside `api`, a controller (`api/v1/<resource>.rs`, `api/v2/<resource>.rs`) never imports
//! another controller: what two of them share (response types, request plumbing) lives in
//! `api::views` or in the surface's `mod.rs`.
//!
//! Inside `store`, no two modules import each other, directly or around a loop: what both need
//! moves to one side, or down to a leaf (`store::keysets` names no row type, so every list may
//! import it). A reader can then take the store one module at a time, from the leaves up.

/// Each top-level module and the top-level modules it may import (`crate::<module>`).
pub const ALLOWED: &[(&str, &[&str])] = &[
    ("contract", &[]),
    ("metrics", &[]),
    ("allocator", &[]),
    ("config", &["contract"]),
    ("rules", &["contract"]),
    ("store", &["contract", "rules", "allocator"]),
    ("x402", &["contract", "config"]),
    ("connections", &["contract", "metrics"]),
    ("sample", &["contract", "rules", "store"]),
    ("ingest", &["contract", "rules", "store", "sample", "metrics", "connections", "config"]),
    ("push", &["contract", "store", "metrics", "connections", "config"]),
    ("edge", &["contract", "store", "x402", "config", "metrics", "connections", "exports", "push"]),
    ("exports", &["contract", "store"]),
    ("api", &["contract", "rules", "store", "edge", "push", "exports"]),
    (
        "server",
        &["contract", "store", "x402", "config", "connections", "edge", "api", "ingest", "push", "exports", "metrics"],
    ),
];

/// External crates a module must not name: the contract and the settings know no database, and
/// the rules neither the database nor HTTP nor the runtime.
pub const KEPT_OUT: &[(&str, &[&str])] = &[
    ("contract", &["sea_orm", "sqlx"]),
    ("config", &["sea_orm", "sqlx"]),
    ("rules", &["sea_orm", "sqlx", "poem", "tokio"]),
];

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::{Path, PathBuf};

    use super::{ALLOWED, KEPT_OUT};

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("readable source tree") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// The code of a file without its comments (doc comments name modules freely).
    fn code(text: &str) -> String {
        text.lines().map(|l| l.split_once("//").map_or(l, |(code, _)| code)).collect::<Vec<_>>().join("\n")
    }

    /// Every path a file names below `prefix` (`crate::`, `super::`), each as its segments up to
    /// the first non-module segment: `use crate::{store::{self, keys}, contract::time}` gives
    /// `store`, `store::keys`, `contract::time`.
    fn paths_after(code: &str, prefix: &str) -> Vec<String> {
        fn group(text: &str, base: &str, out: &mut Vec<String>) {
            // `text` starts after the `{`; split its top-level items.
            let mut depth = 0;
            let mut item = String::new();
            for c in text.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        item.push(c);
                    }
                    '}' if depth == 0 => break,
                    '}' => {
                        depth -= 1;
                        item.push(c);
                    }
                    ',' if depth == 0 => {
                        one(item.trim(), base, out);
                        item.clear();
                    }
                    _ => item.push(c),
                }
            }
            one(item.trim(), base, out);
        }
        fn one(item: &str, base: &str, out: &mut Vec<String>) {
            if item.is_empty() || item == "self" {
                return;
            }
            let mut path = base.to_owned();
            let mut rest = item;
            loop {
                if let Some(inner) = rest.strip_prefix('{') {
                    group(inner, &path, out);
                    return;
                }
                let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
                let segment = &rest[..end];
                if segment.is_empty() {
                    break;
                }
                if !path.is_empty() {
                    path.push_str("::");
                }
                path.push_str(segment);
                match rest[end..].strip_prefix("::") {
                    Some(next) => rest = next,
                    None => break,
                }
            }
            if !path.is_empty() {
                out.push(path);
            }
        }
        let mut out = Vec::new();
        for (i, _) in code.match_indices(prefix) {
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            one(&code[i + prefix.len()..], "", &mut out);
        }
        out
    }

    fn sources() -> Vec<(String, String)> {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        files
            .into_iter()
            .map(|f| {
                let rel = f.strip_prefix(&src).expect("under src").to_string_lossy().replace('\\', "/");
                (rel, code(&std::fs::read_to_string(&f).expect("readable source")))
            })
            .collect()
    }

    /// The top-level module a file belongs to (`None` for the crate root and the binaries).
    fn top_module(rel: &str) -> Option<&str> {
        let first = rel.split('/').next()?;
        let name = first.strip_suffix(".rs").unwrap_or(first);
        (!matches!(name, "lib" | "main" | "bin")).then_some(name)
    }

    #[test]
    fn modules_import_only_what_their_layer_allows() {
        let mut violations = BTreeSet::new();
        let mut seen = BTreeSet::new();
        for (rel, code) in sources() {
            // The checker itself quotes paths in its tests.
            let Some(module) = top_module(&rel).filter(|m| *m != "layers") else { continue };
            let allowed = ALLOWED
                .iter()
                .find(|(m, _)| *m == module)
                .unwrap_or_else(|| panic!("src/{rel}: the module `{module}` is missing from layers::ALLOWED"))
                .1;
            seen.insert(module.to_owned());
            for path in paths_after(&code, "crate::") {
                let target = path.split("::").next().unwrap_or_default();
                if target != module && !allowed.contains(&target) {
                    violations.insert(format!("src/{rel} imports crate::{path}"));
                }
            }
        }
        assert!(violations.is_empty(), "imports against the layers (see src/layers.rs):\n{violations:#?}");
        // Every declared module exists, so the table cannot silently describe a tree that is gone.
        for (module, _) in ALLOWED {
            assert!(seen.contains(*module), "layers::ALLOWED names `{module}`, which has no source");
        }
    }

    #[test]
    fn modules_name_no_crate_kept_out_of_them() {
        for (rel, code) in sources() {
            let Some(kept_out) = top_module(&rel).and_then(|m| KEPT_OUT.iter().find(|(k, _)| *k == m)) else {
                continue;
            };
            for krate in kept_out.1 {
                assert!(!code.contains(krate), "src/{rel} names {krate}, which layers::KEPT_OUT keeps out of it");
            }
        }
    }

    #[test]
    fn controllers_never_import_each_other() {
        let all = sources();
        let controllers: Vec<(String, String)> = all
            .iter()
            .filter_map(|(rel, _)| {
                let rest = rel.strip_prefix("api/")?;
                let (surface, file) = rest.split_once('/')?;
                let name = file.strip_suffix(".rs")?;
                (matches!(surface, "v1" | "v2") && name != "mod").then(|| (surface.to_owned(), name.to_owned()))
            })
            .collect();
        assert!(controllers.len() > 10, "the controllers were not found");
        let mut violations = Vec::new();
        for (rel, code) in &all {
            let Some((surface, name)) = controllers.iter().find(|(s, n)| *rel == format!("api/{s}/{n}.rs")) else {
                continue;
            };
            let named = paths_after(code, "crate::")
                .into_iter()
                .filter_map(|p| p.strip_prefix("api::").map(str::to_owned))
                .chain(paths_after(code, "super::").into_iter().map(|p| format!("{surface}::{p}")));
            for path in named {
                let mut segments = path.split("::");
                let (Some(s), Some(m)) = (segments.next(), segments.next()) else { continue };
                let other = controllers.iter().any(|(cs, cn)| cs == s && cn == m);
                if other && !(s == surface && m == name) {
                    violations.push(format!("src/{rel} imports the controller api::{s}::{m}"));
                }
            }
        }
        assert!(
            violations.is_empty(),
            "controllers importing controllers (share through api::views):\n{violations:#?}"
        );
    }

    /// What the direct submodules of `src/<dir>` import of each other: for each one (a file, or
    /// a subdirectory counted as one), the siblings it names through `super::x` (resolved from
    /// where the file sits: `super::super::x` in `<dir>/sub/file.rs` is `x`) or
    /// `crate::<dir>::x`, grouped imports included. `<dir>/mod.rs` is the parent, not a sibling.
    /// A file's inline `mod tests`, which the house puts at a file's end, is read one module
    /// deeper, so its `use super::*` is the file itself.
    fn sibling_imports(dir: &str, files: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
        let inside: Vec<(Vec<&str>, &str)> = files
            .iter()
            .filter_map(|(rel, code)| {
                let rest = rel.strip_prefix(dir)?.strip_prefix('/')?.strip_suffix(".rs")?;
                let mut module: Vec<&str> = rest.split('/').collect();
                if module.last() == Some(&"mod") {
                    module.pop();
                }
                (!module.is_empty()).then_some((module, code.as_str()))
            })
            .collect();
        let mut graph: BTreeMap<String, BTreeSet<String>> =
            inside.iter().map(|(module, _)| (module[0].to_owned(), BTreeSet::new())).collect();
        // What the parent re-exports (`pub use x::{A, B}` in `<dir>/mod.rs`): a sibling naming
        // `super::A` or `crate::<dir>::A` imports `x`.
        let parent =
            files.iter().find(|(rel, _)| *rel == format!("{dir}/mod.rs")).map_or("", |(_, code)| code.as_str());
        let reexported: BTreeMap<String, String> = paths_after(parent, "pub use ")
            .into_iter()
            .filter_map(|path| {
                let mut segments = path.split("::");
                let (first, last) = (segments.next()?, path.rsplit("::").next()?);
                (first != last && graph.contains_key(first)).then(|| (last.to_owned(), first.to_owned()))
            })
            .collect();
        let resolve = |name: &str| reexported.get(name).cloned().unwrap_or_else(|| name.to_owned());
        for (module, code) in &inside {
            let (body, tests) = code.split_at(code.find("mod tests {").unwrap_or(code.len()));
            let in_tests: Vec<&str> = module.iter().copied().chain(["tests"]).collect();
            let mut named = Vec::new();
            for (text, at) in [(body, module.as_slice()), (tests, in_tests.as_slice())] {
                for path in paths_after(text, "super::") {
                    // `super` is the parent of where the text sits; each further `super` one up.
                    let mut base = at[..at.len() - 1].to_vec();
                    let mut segments = path.split("::").peekable();
                    let mut outside = false;
                    while segments.next_if_eq(&"super").is_some() {
                        outside |= base.pop().is_none();
                    }
                    if !outside && let Some(first) = base.first().copied().or_else(|| segments.next()) {
                        named.push(resolve(first));
                    }
                }
                let prefix = format!("{dir}::");
                for path in paths_after(text, "crate::") {
                    if let Some(rest) = path.strip_prefix(&prefix) {
                        named.extend(rest.split("::").next().map(resolve));
                    }
                }
            }
            let siblings: BTreeSet<String> =
                named.into_iter().filter(|n| n != module[0] && graph.contains_key(n)).collect();
            graph.get_mut(module[0]).expect("every module is a node").extend(siblings);
        }
        graph
    }

    /// The loops of a directed graph: its strongly connected parts of more than one node
    /// (Tarjan's algorithm), each sorted, in order.
    fn loops(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
        struct Walk<'g> {
            graph: &'g BTreeMap<String, BTreeSet<String>>,
            index: BTreeMap<&'g str, usize>,
            low: BTreeMap<&'g str, usize>,
            stack: Vec<&'g str>,
            found: Vec<Vec<String>>,
        }
        impl<'g> Walk<'g> {
            fn visit(&mut self, v: &'g str) {
                let i = self.index.len();
                self.index.insert(v, i);
                self.low.insert(v, i);
                self.stack.push(v);
                let graph = self.graph;
                for w in graph.get(v).into_iter().flatten().map(String::as_str) {
                    let reached = match self.index.get(w) {
                        None => {
                            self.visit(w);
                            Some(self.low[w])
                        }
                        Some(&iw) => self.stack.contains(&w).then_some(iw),
                    };
                    if let Some(reached) = reached {
                        let low = self.low.get_mut(v).expect("visited");
                        *low = (*low).min(reached);
                    }
                }
                if self.low[v] == self.index[v] {
                    let mut part = Vec::new();
                    while let Some(w) = self.stack.pop() {
                        part.push(w.to_owned());
                        if w == v {
                            break;
                        }
                    }
                    if part.len() > 1 {
                        part.sort();
                        self.found.push(part);
                    }
                }
            }
        }
        let mut walk =
            Walk { graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
        for v in graph.keys() {
            if !walk.index.contains_key(v.as_str()) {
                walk.visit(v);
            }
        }
        walk.found.sort();
        walk.found
    }

    #[test]
    fn store_modules_import_each_other_in_no_loop() {
        let graph = sibling_imports("store", &sources());
        // The reader must see the store's imports, or no loop would be found for want of edges.
        assert!(graph.len() > 30 && graph["publish"].contains("facts"), "store's imports were not read: {graph:#?}");
        let loops = loops(&graph);
        assert!(
            loops.is_empty(),
            "modules of src/store importing each other in a loop (move what they share to one side, or \
             down to a leaf):\n{loops:#?}"
        );
    }

    #[test]
    fn modules_of_every_other_room_import_each_other_in_no_loop() {
        // Every module of the layer table that is a directory (`store` has its own test above).
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let files = sources();
        let rooms: Vec<&str> =
            ALLOWED.iter().map(|(m, _)| *m).filter(|m| *m != "store" && src.join(m).is_dir()).collect();
        assert!(rooms.len() >= 10, "the rooms were not found: {rooms:?}");
        for dir in rooms {
            let loops = loops(&sibling_imports(dir, &files));
            assert!(loops.is_empty(), "modules of src/{dir} importing each other in a loop:\n{loops:#?}");
        }
    }

    #[test]
    fn the_loop_finder_finds_loops_and_only_loops() {
        let graph: BTreeMap<String, BTreeSet<String>> = [
            ("a", &["b"][..]),
            ("b", &["c"]),
            ("c", &["a", "d"]),
            ("d", &["e"]),
            ("e", &["d", "f"]),
            ("f", &[]),
            ("g", &["a", "f"]),
            ("h", &["h"]),
        ]
        .into_iter()
        .map(|(v, ws)| (v.to_owned(), ws.iter().map(|w| (*w).to_owned()).collect()))
        .collect();
        assert_eq!(loops(&graph), [vec!["a", "b", "c"], vec!["d", "e"]]);
        let no_loop: BTreeMap<String, BTreeSet<String>> =
            graph.into_iter().map(|(v, ws)| (v.clone(), ws.into_iter().filter(|w| *w > v).collect())).collect();
        assert!(loops(&no_loop).is_empty());
    }

    #[test]
    fn the_sibling_reader_resolves_super_and_crate_paths() {
        let files: Vec<(String, String)> = [
            ("shop/mod.rs", "pub mod cart;\nuse cart::Cart;\nuse crate::shop::price;\npub use tax::{Rate, Bracket};"),
            // Names the parent re-exports lead to the sibling that declares them.
            ("shop/till.rs", "use super::Bracket;\nfn f() -> crate::shop::Rate { todo!() }"),
            ("shop/cart.rs", "use super::{price, stock::Level};\nmod tests {\n    use super::super::tax;\n}"),
            (
                "shop/price.rs",
                "use super::cart::Cart;\nfn f() { super::placeholders(); }\nmod tests {\n    use super::tax;\n}",
            ),
            ("shop/tax.rs", "use crate::{shop::self_check, contract::time};"),
            ("shop/stock/mod.rs", "pub use super::price::Price;"),
            (
                "shop/stock/level.rs",
                "use super::super::tax::Rate;\nuse super::Level;\nuse super::super::super::other::X;",
            ),
            ("other/x.rs", "use crate::shop::cart;"),
        ]
        .into_iter()
        .map(|(rel, code)| (rel.to_owned(), code.to_owned()))
        .collect();
        let graph = sibling_imports("shop", &files);
        let edges: Vec<(&str, Vec<&str>)> =
            graph.iter().map(|(v, ws)| (v.as_str(), ws.iter().map(String::as_str).collect())).collect();
        assert_eq!(
            edges,
            [
                ("cart", vec!["price", "stock", "tax"]),
                ("price", vec!["cart"]),
                ("stock", vec!["price", "tax"]),
                ("tax", vec![]),
                ("till", vec!["tax"]),
            ]
        );
        assert_eq!(loops(&graph), [vec!["cart", "price", "stock"]], "cart → stock → price → cart");
    }

    #[test]
    fn the_path_reader_reads_nested_groups() {
        let code = "use crate::{store::{self, keys::{a, b}}, contract::time};\nlet x = crate::api::v1::fresh(s);";
        assert_eq!(
            paths_after(code, "crate::"),
            ["store::keys::a", "store::keys::b", "contract::time", "api::v1::fresh"]
        );
    }
}
