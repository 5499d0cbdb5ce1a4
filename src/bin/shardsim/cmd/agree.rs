//! `shardsim agree`: agreement between the own world and the madsim host on scenario files,
//! as a Markdown table.

use crate::args::AgreeArgs;
use crate::common::scenario_files;
use crate::exit::Exit;
use shardsim::campaign::write_atomic;

pub fn run(args: AgreeArgs) -> Exit {
    let AgreeArgs {
        files,
        clean_seeds: clean,
        violation_seeds: violation,
        jobs,
        out,
    } = args;
    let root = std::env::current_dir().unwrap_or_default();
    let files = if files.is_empty() {
        scenario_files(&root.join("sim-scenarios"))
    } else {
        files
    };
    let mut rows = Vec::new();
    for f in &files {
        match shardsim::agree::agree_file(f, clean, violation, jobs.max(1)) {
            Ok(r) => {
                println!("{}: {} ({:.1}s)", f.display(), r.verdict(), r.secs);
                rows.push(r);
            }
            Err(e) => {
                eprintln!("error: {e}");
                return Exit::BadInput;
            }
        }
    }
    let table = shardsim::agree::markdown(&rows, &root);
    let bad = rows.iter().filter(|r| r.agrees() == Some(false)).count();
    let ran = rows.iter().filter(|r| r.agrees().is_some()).count();
    println!(
        "agreement: {} of {ran} files agree, {bad} disagree, {} not run",
        ran - bad,
        rows.len() - ran
    );
    if let Some(p) = &out {
        if let Err(e) = write_atomic(p, table.as_bytes()) {
            eprintln!("error: {}: cannot write: {e}", p.display());
            return Exit::BadInput;
        }
    }
    if bad > 0 {
        Exit::Failed
    } else {
        Exit::Ok
    }
}
