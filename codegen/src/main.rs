//! Writes and checks the published OpenAPI documents of govdata.
//!
//! `cargo run -p codegen` (or `codegen generate`) writes `openapi/v1.json`, `v1.yaml`, `v2.json`
//! and `v2.yaml` from the typed endpoint declarations. `codegen check` exits non-zero when a
//! committed document differs from what the code generates.
use std::{path::PathBuf, process::ExitCode};

use govdata::api::Documents;
use govdata::contract::access::Prices;

fn openapi_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("openapi")
}

fn main() -> anyhow::Result<ExitCode> {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "generate".to_owned());
    // The committed documents show the default prices; a deployment serves its configured ones.
    let documents = Documents::build(Prices::default());
    let dir = openapi_dir();
    match mode.as_str() {
        "generate" => {
            std::fs::create_dir_all(&dir)?;
            for (name, content) in documents.files() {
                let path = dir.join(name);
                let old = std::fs::read_to_string(&path).unwrap_or_default();
                if old != content {
                    std::fs::write(&path, content)?;
                    println!("wrote openapi/{name}");
                } else {
                    println!("openapi/{name} is up to date");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        "check" => {
            let stale: Vec<&str> = documents
                .files()
                .into_iter()
                .filter(|(name, content)| std::fs::read_to_string(dir.join(name)).ok().as_deref() != Some(*content))
                .map(|(name, _)| name)
                .collect();
            if stale.is_empty() {
                println!("openapi/ is up to date");
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!("stale documents: {}; run `cargo run -p codegen` and review the diff", stale.join(", "));
                Ok(ExitCode::FAILURE)
            }
        }
        other => {
            eprintln!("unknown command `{other}`; use `generate` (default) or `check`");
            Ok(ExitCode::from(2))
        }
    }
}
