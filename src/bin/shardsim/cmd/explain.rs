//! `shardsim explain`: the causal chains that lead to a violation, as numbered steps, with a
//! Mermaid sequence diagram and an SVG timeline of them.

use crate::args::ExplainArgs;
use crate::common::load;
use crate::exit::Exit;
use shardsim::campaign::write_atomic;
use std::path::Path;

pub fn run(args: ExplainArgs) -> Exit {
    let ExplainArgs {
        input,
        seed,
        pictures,
        no_pictures,
    } = args;
    let input: &Path = &input;
    let pictures = (!no_pictures).then_some(pictures);
    let is_scenario = seed.is_some() || input.extension().is_some_and(|e| e == "toml");
    let (text, name) = if is_scenario {
        let Some(seed) = seed else {
            eprintln!(
                "error: {}: explain a scenario with --seed N",
                input.display()
            );
            return Exit::BadInput;
        };
        let sc = match load(input) {
            Ok(s) => s,
            Err(c) => return c,
        };
        (
            shardsim::explain::rerun(&sc, seed),
            format!("{}-seed{seed}", sc.name),
        )
    } else {
        match std::fs::read_to_string(input) {
            Ok(t) => (
                t,
                input
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "trace".into()),
            ),
            Err(e) => {
                eprintln!("error: {}: cannot read: {e}", input.display());
                return Exit::BadInput;
            }
        }
    };
    let e = match shardsim::explain::explain_text(&text) {
        Ok(e) => e,
        Err(shardsim::explain::ExplainError::NoViolation) => {
            match seed {
                Some(s) => eprintln!(
                    "error: {} seed {s}: the run breaks no invariant: nothing to explain (find a failing seed with `shardsim fuzz {} --until-failure`)",
                    input.display(),
                    input.display()
                ),
                None => eprintln!(
                    "error: {}: the trace breaks no invariant: nothing to explain",
                    input.display()
                ),
            }
            return Exit::BadInput;
        }
        Err(err) => {
            eprintln!("error: {}:{err}", input.display());
            return Exit::BadInput;
        }
    };
    print!("{}", shardsim::explain::story(&e));
    if let Some(dir) = pictures {
        for (ext, body) in [
            ("md", shardsim::explain::draw::mermaid(&e, &name)),
            ("svg", shardsim::explain::draw::svg(&e, &name)),
        ] {
            let p = dir.join(format!("{name}.{ext}"));
            if let Err(err) = write_atomic(&p, body.as_bytes()) {
                eprintln!("error: {}: cannot write: {err}", p.display());
                return Exit::BadInput;
            }
            println!("wrote {}", p.display());
        }
    }
    Exit::Ok
}
