//! `shardsim merge`: slice summaries written by `fuzz --summary` merged into one.

use crate::args::MergeArgs;
use crate::exit::Exit;
use shardsim::campaign::{self, write_atomic, Summary};
use std::path::{Path, PathBuf};

pub fn run(args: MergeArgs) -> Exit {
    let MergeArgs { out, inputs } = args;
    let out: &Path = &out;
    let inputs: &[PathBuf] = &inputs;
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
