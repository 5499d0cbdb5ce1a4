//! The `shardsim` command: run one seed, fuzz a campaign, benchmark, re-check a trace.

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use shardsim::campaign::{self, replay_command, write_atomic};
use shardsim::scenario::{Outcome, Scenario};
use shardsim::trace::TraceMode;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant as WallClock; // the CLI may read the wall clock to report throughput

#[derive(Parser)]
#[command(
    name = "shardsim",
    version,
    about = "Deterministic simulation testbed for Akka-style cluster sharding"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run one schedule and print its summary; on a violation, the trace around it and the
    /// replay command.
    Run {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// The schedule's seed.
        #[arg(long)]
        seed: u64,
        /// Write the full trace (JSON Lines) here.
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Events of context to print before a violation.
        #[arg(long, default_value_t = 25)]
        context: usize,
    },
    /// Run many seeds in parallel and report failures.
    Fuzz {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// Number of schedules.
        #[arg(long, default_value_t = 10_000)]
        schedules: u64,
        /// First seed.
        #[arg(long, default_value_t = 0)]
        seed_start: u64,
        /// Worker threads (default: all cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// Write the JSON summary here.
        #[arg(long)]
        summary: Option<PathBuf>,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Benchmark: a fixed scenario, printing schedules/s and events/s.
    Bench {
        /// Scenario file (default: sim-scenarios/bench.toml).
        #[arg(long, default_value = "sim-scenarios/bench.toml")]
        scenario: PathBuf,
        /// Schedules to run.
        #[arg(long, default_value_t = 2_000)]
        schedules: u64,
        /// Worker threads.
        #[arg(long, default_value_t = 1)]
        jobs: usize,
    },
    /// Re-check the invariants of a trace file from the file alone.
    CheckTrace {
        /// A JSON Lines trace written by `run --trace`.
        trace: PathBuf,
    },
}

fn load(path: &Path) -> Result<Arc<Scenario>, ExitCode> {
    Scenario::load(path).map(Arc::new).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Run {
            scenario,
            seed,
            trace,
            context,
        } => cmd_run(&scenario, seed, trace, context),
        Cmd::Fuzz {
            scenario,
            schedules,
            seed_start,
            jobs,
            summary,
            quiet,
        } => cmd_fuzz(&scenario, schedules, seed_start, jobs, summary, quiet),
        Cmd::Bench {
            scenario,
            schedules,
            jobs,
        } => cmd_bench(&scenario, schedules, jobs),
        Cmd::CheckTrace { trace } => match shardsim::check::recheck_file(&trace) {
            Ok(None) => {
                println!("{}: no violation", trace.display());
                ExitCode::SUCCESS
            }
            Ok(Some(v)) => {
                println!("{}: VIOLATION {v}", trace.display());
                ExitCode::from(1)
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
    }
}

fn cmd_run(path: &Path, seed: u64, trace: Option<PathBuf>, context: usize) -> ExitCode {
    let sc = match load(path) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let (r, tracer) = campaign::run_seed(&sc, seed, TraceMode::Full);
    let s = &r.stats;
    println!("scenario {} seed {seed}: simulated {}", sc.name, r.end);
    println!(
        "events {}  messages {}  sends {}  deliveries {}  drops {}  rebalances {} ({} done)  entity starts {}",
        s.events, s.messages, s.sends, s.deliveries, s.drops, s.rebalances, s.rebalances_done, s.entity_starts
    );
    println!("trace hash {:016x}", r.trace_hash);
    if let Some(p) = &trace {
        if let Err(e) = write_atomic(p, tracer.to_jsonl().as_bytes()) {
            eprintln!("error: {}: cannot write trace: {e}", p.display());
            return ExitCode::from(2);
        }
        println!("trace written to {}", p.display());
    }
    match &r.violation {
        None => {
            println!("outcome: none");
            if sc.expect.outcome != Outcome::None {
                println!(
                    "(this scenario expects `{}` in some seed; this seed did not show it)",
                    sc.expect.outcome
                );
            }
            ExitCode::SUCCESS
        }
        Some(v) => {
            println!(
                "\nVIOLATION {} (seed {seed}) at t={}: {}",
                v.invariant, v.t, v.detail
            );
            println!("\ntrace before the violation (last {context} events):");
            let ev = tracer.events();
            let from = ev.len().saturating_sub(context + 1);
            for (t, e) in &ev[from..] {
                println!("  {}", e.to_json(*t));
            }
            println!("\nreplay: {}", replay_command(path, seed));
            if v.invariant == sc.expect.outcome {
                println!("outcome: {} (expected by the scenario)", v.invariant);
                ExitCode::SUCCESS
            } else {
                println!("outcome: {} (UNEXPECTED)", v.invariant);
                ExitCode::from(1)
            }
        }
    }
}

fn cmd_fuzz(
    path: &Path,
    schedules: u64,
    seed_start: u64,
    jobs: Option<usize>,
    summary: Option<PathBuf>,
    quiet: bool,
) -> ExitCode {
    let sc = match load(path) {
        Ok(s) => s,
        Err(c) => return c,
    };
    if schedules == 0 {
        eprintln!("error: --schedules must be at least 1");
        return ExitCode::from(2);
    }
    let jobs = jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(schedules)
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} schedules  {per_sec}  eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let started = WallClock::now();
    let progress = |n: u64| bar.set_position(n);
    let sum = campaign::fuzz(&sc, seed_start, schedules, jobs, &progress);
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    println!(
        "scenario {}: {} schedules (seeds {}..{}) on {} jobs in {:.1}s: {:.0} schedules/s, {:.2} M events/s",
        sc.name,
        schedules,
        seed_start,
        seed_start + schedules,
        jobs,
        secs,
        schedules as f64 / secs,
        sum.totals.events as f64 / secs / 1e6
    );
    let t = &sum.totals;
    println!(
        "totals: events {}  sends {}  deliveries {}  drops {}  rebalances {}",
        t.events, t.sends, t.deliveries, t.drops, t.rebalances
    );
    if let Some(p) = &summary {
        let json = serde_json::to_vec_pretty(&sum).unwrap_or_default();
        if let Err(e) = write_atomic(p, &json) {
            eprintln!("error: {}: cannot write summary: {e}", p.display());
            return ExitCode::from(2);
        }
    }
    let expected = sc.expect.outcome;
    let mut code = ExitCode::SUCCESS;
    for f in sum.failures.iter().take(20) {
        let tag = if f.invariant == expected {
            "expected"
        } else {
            "UNEXPECTED"
        };
        println!(
            "{tag} {} seed {} at t={}.{:06}s: {}\n  replay: {}",
            f.invariant,
            f.seed,
            f.t_us / 1_000_000,
            f.t_us % 1_000_000,
            f.detail,
            replay_command(path, f.seed)
        );
    }
    if sum.failures.len() > 20 {
        println!("... and {} more failing seeds", sum.failures.len() - 20);
    }
    let unexpected = sum.unexpected(expected).count();
    if unexpected > 0 {
        println!("FAILED: {unexpected} schedules broke an invariant the scenario does not expect");
        code = ExitCode::from(1);
    } else if expected != Outcome::None && sum.expected_found == 0 {
        println!("FAILED: the scenario expects `{expected}`, but no schedule showed it");
        code = ExitCode::from(1);
    } else if expected != Outcome::None {
        println!(
            "ok: expected `{expected}` found in {} of {} schedules",
            sum.expected_found, schedules
        );
    } else {
        println!("ok: no violation");
    }
    code
}

fn cmd_bench(path: &Path, schedules: u64, jobs: usize) -> ExitCode {
    let sc = match load(path) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let started = WallClock::now();
    let sum = campaign::fuzz(&sc, 0, schedules, jobs, &|_| {});
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    println!(
        "bench {}: {} schedules on {} jobs in {:.2}s: {:.1} schedules/s, {:.2} M events/s, {:.0} deliveries/schedule",
        sc.name,
        schedules,
        jobs,
        secs,
        schedules as f64 / secs,
        sum.totals.events as f64 / secs / 1e6,
        sum.totals.deliveries as f64 / schedules as f64
    );
    ExitCode::SUCCESS
}
