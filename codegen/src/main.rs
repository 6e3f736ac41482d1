//! `codegen` — the contract tooling of govdata.
//!
//! - `codegen` / `codegen generate`: writes `openapi/v1.{json,yaml}`, `v2.{json,yaml}` and
//!   `operations.md` from the typed endpoint declarations.
//! - `codegen check`: fails when a written file is stale, a document fails the lint, or v1
//!   breaks the released baseline `openapi/released/v1.json`.
//! - `codegen diff OLD.json NEW.json`: a markdown report of every change and its class; exits 1
//!   when NEW breaks a client of OLD.
//! - `codegen lint [DOC.json…]`: the lint alone (default: the committed documents).
//! - `codegen release`: moves the released v1 baseline to the current v1, refusing when that
//!   would be a breaking change.
use std::process::ExitCode;

use codegen::{RELEASED_V1, Release, check, diff, generated, lint, load, openapi_dir, release};

fn main() -> anyhow::Result<ExitCode> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = openapi_dir();
    match args.first().map(String::as_str).unwrap_or("generate") {
        "generate" => {
            std::fs::create_dir_all(&dir)?;
            for (name, content) in generated()? {
                let path = dir.join(&name);
                if std::fs::read_to_string(&path).ok().as_deref() == Some(content.as_str()) {
                    println!("openapi/{name} is up to date");
                } else {
                    std::fs::write(&path, content)?;
                    println!("wrote openapi/{name}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        "check" => {
            let problems = check(&dir)?;
            if problems.is_empty() {
                println!("openapi/ is up to date, lints clean, and v1 keeps every promise of openapi/{RELEASED_V1}");
                Ok(ExitCode::SUCCESS)
            } else {
                for p in &problems {
                    eprintln!("{p}");
                }
                Ok(ExitCode::FAILURE)
            }
        }
        "diff" => {
            let [_, old, new] = args.as_slice() else {
                eprintln!("usage: codegen diff OLD.json NEW.json");
                return Ok(ExitCode::from(2));
            };
            let report = diff::diff(&load(old.as_ref())?.0, &load(new.as_ref())?.0);
            print!("{}", report.markdown(old, new));
            Ok(if report.is_breaking() { ExitCode::FAILURE } else { ExitCode::SUCCESS })
        }
        "lint" => {
            let paths: Vec<std::path::PathBuf> = if args.len() > 1 {
                args[1..].iter().map(Into::into).collect()
            } else {
                vec![dir.join("v1.json"), dir.join("v2.json")]
            };
            let mut clean = true;
            for path in paths {
                let (doc, raw) = load(&path)?;
                for finding in lint::lint(&doc, &raw) {
                    clean = false;
                    println!("{}: {finding}", path.display());
                }
            }
            Ok(if clean { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        "release" => {
            let current = generated()?.into_iter().find(|(n, _)| n == "v1.json").expect("generated").1;
            match release(&dir, &current)? {
                Release::Moved(report) => {
                    print!("{}", report.markdown(&format!("openapi/{RELEASED_V1} (before)"), "v1 (current)"));
                    println!("\nopenapi/{RELEASED_V1} is now the current v1; commit it with the changes above");
                    Ok(ExitCode::SUCCESS)
                }
                Release::Refused(report) => {
                    print!("{}", report.markdown(&format!("openapi/{RELEASED_V1}"), "v1 (current)"));
                    eprintln!("refusing to release: the current v1 breaks clients of the released one");
                    Ok(ExitCode::FAILURE)
                }
            }
        }
        other => {
            eprintln!("unknown command `{other}`; use generate (default), check, diff OLD NEW, lint [DOC…] or release");
            Ok(ExitCode::from(2))
        }
    }
}
