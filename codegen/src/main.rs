//! `codegen` — the contract tooling of govdata.
//!
//! - `codegen` / `codegen generate`: writes `openapi/v1.{json,yaml}`, `v2.{json,yaml}`,
//!   `llms.txt` and `operations.md` from the typed endpoint declarations.
//! - `codegen check`: fails when a written file is stale, a document fails the lint, an
//!   operationId is in both documents, or a surface breaks its released baseline
//!   (`openapi/released/v1.json`, `v2.json`).
//! - `codegen diff OLD.json NEW.json`: a markdown report of every change and its class; exits 1
//!   when NEW breaks a client of OLD.
//! - `codegen lint [DOC.json…]`: the lint alone (default: the committed documents).
//! - `codegen release [v1|v2] [--accept WHERE --because REASON]...`: moves the released
//!   baselines (both surfaces by default) to the current documents, refusing a breaking change
//!   unless it is accepted by its location (`where`, as the refusal reports it) with a reason;
//!   `openapi/released/CHANGELOG.md` logs each release and its reasons.
use std::process::ExitCode;

use codegen::{Acceptance, RELEASE_LOG, RELEASED, Release, check, diff, generated, lint, load, openapi_dir, release};

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
                println!(
                    "openapi/ is up to date, lints clean, and every released surface keeps its promises (openapi/released/)"
                );
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
            let (surfaces, accepted) = match release_args(&args[1..]) {
                Ok(parsed) => parsed,
                Err(message) => {
                    eprintln!("{message}\nusage: codegen release [v1|v2] [--accept WHERE --because REASON]...");
                    return Ok(ExitCode::from(2));
                }
            };
            let files = generated()?;
            let date = govdata::contract::time::rfc3339_ms(govdata::contract::time::now_ms())[..10].to_owned();
            let mut code = ExitCode::SUCCESS;
            for surface in surfaces {
                let name = format!("{surface}.json");
                let current = &files.iter().find(|(n, _)| *n == name).expect("generated").1;
                let baseline = RELEASED.iter().find(|(s, _)| *s == surface).expect("a surface").1;
                match release(&dir, surface, current, &accepted, &date)? {
                    Release::Moved(report) => {
                        print!(
                            "{}",
                            report.markdown(&format!("openapi/{baseline} (before)"), &format!("{surface} (current)"))
                        );
                        println!(
                            "\nopenapi/{baseline} is now the current {surface} (logged in openapi/{RELEASE_LOG}); commit both"
                        );
                    }
                    Release::Refused(report) => {
                        print!("{}", report.markdown(&format!("openapi/{baseline}"), &format!("{surface} (current)")));
                        eprintln!(
                            "refusing to release {surface}: it breaks clients of the released one. If a break is \
                             deliberate (it states what the server has always enforced, say), name its `where` with \
                             --accept and say why with --because"
                        );
                        code = ExitCode::FAILURE;
                    }
                }
            }
            Ok(code)
        }
        other => {
            eprintln!("unknown command `{other}`; use generate (default), check, diff OLD NEW, lint [DOC…] or release");
            Ok(ExitCode::from(2))
        }
    }
}

/// The surfaces to release and the accepted breaks of `codegen release`'s arguments.
fn release_args(args: &[String]) -> Result<(Vec<&'static str>, Vec<Acceptance>), String> {
    let mut surfaces = Vec::new();
    let mut accepted = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--accept" => {
                let at = rest.next().ok_or("--accept needs the change's location")?;
                match (rest.next().map(String::as_str), rest.next()) {
                    (Some("--because"), Some(reason)) if !reason.trim().is_empty() => {
                        accepted.push(Acceptance { at: at.clone(), reason: reason.clone() });
                    }
                    _ => return Err(format!("--accept `{at}` needs --because REASON right after it")),
                }
            }
            surface => match RELEASED.iter().find(|(s, _)| *s == surface) {
                Some((s, _)) => surfaces.push(*s),
                None => return Err(format!("unknown argument `{surface}`")),
            },
        }
    }
    if surfaces.is_empty() {
        surfaces = RELEASED.iter().map(|(s, _)| *s).collect();
    }
    Ok((surfaces, accepted))
}
