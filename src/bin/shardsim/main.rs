//! The `shardsim` command: run one seed, fuzz a campaign, merge campaign slices, benchmark,
//! re-check a trace.

mod args;
mod cmd;
mod common;
mod exit;
mod progress;

use crate::args::{Cli, Cmd};
use clap::Parser;
use std::process::ExitCode;

/// mimalloc instead of the system allocator: the same schedules (nothing in the simulation
/// depends on an address), fewer instructions per event (`reports/bench.md`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // Piped into `head` or a pager that quits early: end quietly, as other command-line tools
    // do, instead of panicking on the closed pipe.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let exit = match cli.cmd {
        Cmd::Run(args) => cmd::run::run(args),
        Cmd::Fuzz(args) => cmd::fuzz::run(args),
        Cmd::Merge(args) => cmd::merge::run(args),
        // The scale benchmark ends with its own exit code (0, 1 or 2), as it is.
        Cmd::Bench(args) if args.scale || args.scale_cell.is_some() => {
            return ExitCode::from(cmd::bench::scale(args));
        }
        Cmd::Bench(args) => cmd::bench::run(args),
        Cmd::Shrink(args) => cmd::shrink::run(args),
        Cmd::Agree(args) => cmd::agree::run(args),
        Cmd::Sweep(args) => cmd::sweep::run(args),
        Cmd::Explain(args) => cmd::explain::run(args),
        Cmd::CheckTrace(args) => cmd::check_trace::run(args),
    };
    exit.into()
}
