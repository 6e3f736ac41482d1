//! Domain rules: pure functions over facts, no database, no HTTP.
//!
//! Nothing here reads the store or answers a request: callers load the facts (`store`), hand
//! them over, and keep what comes back. Numbers stay exact (`contract::decimal`); times are data
//! times, passed in, never the wall clock. Which modules of the crate rules may import is held
//! by `layers` (contract only); the test here keeps the database and HTTP crates out.
pub mod evidence;
pub mod lookup;
pub mod signals;
pub mod tally;

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// The rules stay pure: no database, HTTP, store (but its decimals), API or ingestion code.
    /// This file names what it forbids, so it is not read.
    #[test]
    fn rules_use_no_io_layer() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rules");
        let mut files = Vec::new();
        sources(&root, &mut files);
        files.retain(|f| *f != root.join("mod.rs"));
        assert!(files.len() > 10, "{files:?}");
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for forbidden in ["sea_orm", "sqlx", "poem", "tokio"] {
                assert!(!text.contains(forbidden), "{} uses {forbidden}", file.display());
            }
        }
    }
}
