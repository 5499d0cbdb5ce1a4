//! `shardsim check-trace`: the invariants of a trace file re-checked from the file alone.

use crate::args::CheckTraceArgs;
use crate::exit::Exit;

pub fn run(args: CheckTraceArgs) -> Exit {
    let CheckTraceArgs { trace } = args;
    match shardsim_harness::check::recheck_file(&trace) {
        Ok(None) => {
            println!("{}: no violation", trace.display());
            Exit::Ok
        }
        Ok(Some(v)) => {
            println!("{}: VIOLATION {v}", trace.display());
            Exit::Failed
        }
        Err(e) => {
            eprintln!("error: {e}");
            Exit::BadInput
        }
    }
}
