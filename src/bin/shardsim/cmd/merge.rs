//! `shardsim merge`: slice summaries written by `fuzz --summary` merged into one.

use crate::args::MergeArgs;
use crate::exit::Exit;
use shardsim::campaign::{self, write_atomic, Summary};
use std::path::{Path, PathBuf};

pub fn run(args: MergeArgs) -> Exit {
    let MergeArgs { out, inputs } = args;
    let out: &Path = &out;
    let inputs: &[PathBuf] = &inputs;
    // The merged file never replaces one of its inputs (an output named first among the
    // positionals by mistake).
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    };
    if let Some(p) = inputs.iter().find(|p| same(p, out)) {
        eprintln!(
            "error: {}: the output is also an input; the merged summary goes to the first path \
             (`shardsim merge OUT IN...`)",
            p.display()
        );
        return Exit::BadInput;
    }
    let mut slices: Vec<(PathBuf, Summary)> = Vec::new();
    for p in inputs {
        match campaign::read_summary(p) {
            Ok(s) => slices.push((p.clone(), s)),
            Err(e) => {
                eprintln!("error: {e}");
                return Exit::BadInput;
            }
        }
    }
    let merged = match campaign::merge(&slices) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::BadInput;
        }
    };
    let json = serde_json::to_vec_pretty(&merged).unwrap_or_default();
    if let Err(e) = write_atomic(out, &json) {
        eprintln!("error: {}: cannot write merged summary: {e}", out.display());
        return Exit::BadInput;
    }
    println!(
        "merged {} summaries of scenario {} into {}: {} schedules from seed {}, {} failing seeds ({} expected), {} events",
        slices.len(),
        merged.scenario,
        out.display(),
        merged.schedules,
        merged.seed_start,
        merged.failures.len(),
        merged.expected_found,
        merged.totals.events
    );
    Exit::Ok
}
