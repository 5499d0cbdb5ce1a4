//! The `shardsim` command: run one seed, fuzz a campaign, merge campaign slices, benchmark,
//! re-check a trace.

#[path = "shardsim/progress.rs"]
mod progress;

use clap::{Parser, Subcommand};
use shardsim::campaign::{self, replay_command, write_atomic, FuzzOptions, Summary};
use shardsim::slice::{Slice, SliceSpec};
use shardsim_harness::host::{self, Host};
use shardsim_harness::options::OptionsByName;
use shardsim_harness::scenario::{Outcome, Scenario};
use shardsim_harness::trace::TraceMode;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant as WallClock; // the CLI may read the wall clock to report throughput

/// mimalloc instead of the system allocator: the same schedules (nothing in the simulation
/// depends on an address), fewer instructions per event (`reports/bench.md`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
        /// The host: the own world, or madsim (the same node state machine on madsim).
        #[arg(long, value_enum, default_value_t = HostArg::Own)]
        host: HostArg,
        /// Write the schedule as Chrome trace-event JSON here (opens in ui.perfetto.dev and
        /// chrome://tracing): a process per node, a track per actor, a flow per message.
        #[arg(long, value_name = "FILE")]
        perfetto: Option<PathBuf>,
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
        /// Worker threads, at least 1 (default: all cores).
        #[arg(long, value_parser = at_least_one)]
        jobs: Option<usize>,
        /// Write the JSON summary here.
        #[arg(long)]
        summary: Option<PathBuf>,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
        /// Run every K-th seed (K >= 1, counted from --seed-start) twice with trace hashing
        /// and report different traces as a `determinism` failure.
        #[arg(long, value_name = "K")]
        check_determinism: Option<u64>,
        /// Stop at the lowest failing seed (--schedules is then the cap); the result does not
        /// depend on --jobs.
        #[arg(long)]
        until_failure: bool,
        /// Append the failing seeds found (at most 20 new, deduplicated) to this JSON Lines
        /// corpus, e.g. tests/corpus.jsonl.
        #[arg(long, value_name = "FILE")]
        corpus: Option<PathBuf>,
        /// The host: the own world, or madsim (the same node state machine on madsim).
        #[arg(long, value_enum, default_value_t = HostArg::Own)]
        host: HostArg,
        /// Run only slice I of N (from 0) of the seeds [seed-start, seed-start + schedules):
        /// seeds seed-start + floor(I*schedules/N) up to seed-start +
        /// floor((I+1)*schedules/N). `auto/N` takes I from JOB_COMPLETION_INDEX (Kubernetes
        /// Indexed Job) or SLURM_ARRAY_TASK_ID minus SLURM_ARRAY_TASK_MIN (Slurm array).
        /// Write each slice's --summary and combine them with `shardsim merge`.
        #[arg(long, value_name = "I/N")]
        slice: Option<SliceSpec>,
        /// Draw the campaign's figures (SVG) into this folder, with an index.md linking them.
        #[arg(long, value_name = "DIR")]
        report: Option<PathBuf>,
        /// Collect behaviour coverage: print the features the campaign reached and the
        /// schedule after which no new one appeared.
        #[arg(long, conflicts_with_all = ["slice", "corpus", "report", "summary", "check_determinism"])]
        coverage: bool,
        /// Coverage-guided exploration: inputs (seed + fault plan edits, targeted delays,
        /// workload focus) that reach new coverage are kept and mutated; deterministic given
        /// --seed-start, independent of --jobs. Failures are written as scenario files.
        #[arg(long, conflicts_with_all = ["slice", "corpus", "report", "summary", "check_determinism"])]
        guided: bool,
        /// With --guided: where the failing inputs are written as scenario files.
        #[arg(long, value_name = "DIR", default_value = "reports/guided")]
        guided_out: PathBuf,
        /// With --guided: inputs per generation (the answer depends on it, not on --jobs).
        #[arg(long, default_value_t = shardsim::guided::DEFAULT_BATCH, value_parser = at_least_one)]
        batch: usize,
    },
    /// Merge slice summaries written by `fuzz --summary` (same scenario, disjoint seed ranges).
    Merge {
        /// The merged summary to write.
        out: PathBuf,
        /// The slice summaries.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
    },
    /// Benchmark: a fixed scenario, printing schedules/s and events/s, against a bare event loop
    /// running as many events.
    Bench {
        /// Scenario file (default: sim-scenarios/bench.toml).
        #[arg(long, default_value = "sim-scenarios/bench.toml")]
        scenario: PathBuf,
        /// Schedules to run.
        #[arg(long, default_value_t = 2_000)]
        schedules: u64,
        /// Worker threads, at least 1.
        #[arg(long, default_value_t = 1, value_parser = at_least_one)]
        jobs: usize,
        /// Measure this many times, alternating simulator and bare loop, and report the median
        /// ratio (the machine's load drifts; alternating exposes both sides to it alike).
        #[arg(long, default_value_t = 3)]
        rounds: u32,
        /// `madsim`: run the own world and the madsim host on the scenario, one after the
        /// other, and print the events/s of each and their ratio (instead of the bare loop).
        #[arg(long, value_enum)]
        host: Option<HostArg>,
        /// The scale benchmark: the grid of nodes 3, 10, 30, 100 x entities 100,
        /// 10,000, 1,000,000, each cell a child process (its own peak RSS); prints events per
        /// schedule, events/s, ns/event relative to the 3-node/100-entity cell, and max RSS.
        #[arg(long)]
        scale: bool,
        /// With --scale: only these node counts (comma-separated).
        #[arg(long, value_name = "LIST", requires = "scale")]
        nodes: Option<String>,
        /// With --scale: only these entity counts (comma-separated).
        #[arg(long, value_name = "LIST", requires = "scale")]
        entities: Option<String>,
        /// With --scale: simulated time per schedule, ms (default 20,000).
        #[arg(long, value_name = "MS", requires = "scale")]
        sim_ms: Option<u64>,
        /// With --scale: each cell repeats seeds until it has run this long (wall clock, s).
        #[arg(long, value_name = "S", requires = "scale")]
        min_secs: Option<f64>,
        /// With --scale: a cell's address-space cap, MB (default 6,000): a cell that needs
        /// more aborts and is reported as over the cap.
        #[arg(long, value_name = "MB", requires = "scale")]
        max_rss_mb: Option<u64>,
        /// One cell of --scale, in this process (what --scale runs as a child).
        #[arg(long, hide = true, num_args = 2, value_names = ["NODES", "ENTITIES"])]
        scale_cell: Option<Vec<u32>>,
    },
    /// Shrink a failing seed to a minimal scenario (fewer faults, nodes, entities, senders, an
    /// earlier end) that still breaks the same invariant, and write it as a scenario file.
    Shrink {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// The failing seed.
        #[arg(long)]
        seed: u64,
        /// Where to write the shrunk scenario (default:
        /// reports/shrunk/<scenario name>-seed<N>.toml).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// At most this many replays.
        #[arg(long, default_value_t = shardsim::shrink::DEFAULT_MAX_RUNS)]
        max_runs: u64,
        /// Seed freedom: a reduction that no longer fails with the current seed is also tried
        /// with the next K seeds, and kept with the first that breaks the same invariant. Lets
        /// a failure no fault causes (a protocol race) shrink beyond its end time; the result
        /// names its own seed. 0 keeps the original seed.
        #[arg(long, value_name = "K", default_value_t = 0)]
        seed_tries: u64,
        /// No progress bar or progress lines.
        #[arg(long)]
        quiet: bool,
    },
    /// Agreement between hosts: run scenario files on the madsim host, each clean file on
    /// --clean-seeds seeds, each violation file until its invariant shows (at most
    /// --violation-seeds), and write the table.
    Agree {
        /// Scenario files (default: every file under sim-scenarios/).
        files: Vec<PathBuf>,
        /// Seeds per file that expects `none`.
        #[arg(long, default_value_t = 200)]
        clean_seeds: u64,
        /// At most this many seeds per file that expects a violation.
        #[arg(long, default_value_t = 2_000)]
        violation_seeds: u64,
        /// Worker threads, at least 1.
        #[arg(long, default_value_t = 1, value_parser = at_least_one)]
        jobs: usize,
        /// Write the Markdown table here.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Every scenario file at campaign scale: each file's campaign judged as `fuzz` judges
    /// it, kept per file in a compact form (a stopped sweep resumes), and a Markdown report of
    /// seeds, outcome counts, options and verdicts.
    Sweep {
        /// The folder of scenario files (searched recursively).
        #[arg(default_value = "sim-scenarios")]
        dir: PathBuf,
        /// Seeds per file, from 0.
        #[arg(long, default_value_t = 100_000, value_parser = at_least_one_u64)]
        schedules: u64,
        /// Seeds per slow file (one whose first 100 seeds average more than
        /// --slow-after-events events per schedule).
        #[arg(long, default_value_t = 20_000, value_parser = at_least_one_u64)]
        slow_schedules: u64,
        /// Events per schedule (the mean over a file's first 100 seeds) above which a file is
        /// slow. Counted, not timed, so the plan does not depend on the machine or its load;
        /// the default is about 15 minutes of 2 cores for 100,000 schedules.
        #[arg(long, value_name = "EVENTS", default_value_t = 100_000)]
        slow_after_events: u64,
        /// Only the files whose path contains one of these (repeatable).
        #[arg(long, value_name = "TEXT")]
        only: Vec<String>,
        /// Worker threads, at least 1 (default: all cores).
        #[arg(long, value_parser = at_least_one)]
        jobs: Option<usize>,
        /// Where each file's result is kept (and reused by a later sweep with the same plan).
        #[arg(long, value_name = "DIR", default_value = "reports/at-scale")]
        summaries: PathBuf,
        /// Run nothing: write the report from the kept results as they are (the other files
        /// "not run yet"), judged against each file's declaration as it is now, to see how far
        /// a sweep spread over several runs has come. It only reads: seconds, not minutes.
        #[arg(long, conflicts_with = "compact")]
        report_only: bool,
        /// With --report-only: also run seeds 0-2 of every file (the model's fingerprint) and
        /// mark the kept results another model wrote, which the next sweep runs again.
        #[arg(long, requires = "report_only")]
        check_fingerprint: bool,
        /// Run nothing: rewrite every kept result in the compact form (each failure that is
        /// not the file's declared outcome, the first 20 seeds of that outcome, a count of the
        /// rest), as a sweep now keeps them.
        #[arg(long)]
        compact: bool,
        /// The Markdown report to write.
        #[arg(
            long,
            value_name = "FILE",
            default_value = "reports/scenarios-at-scale.md"
        )]
        out: PathBuf,
    },
    /// Re-check the invariants of a trace file from the file alone.
    CheckTrace {
        /// A JSON Lines trace written by `run --trace`.
        trace: PathBuf,
    },
    /// Explain a failing seed: the causal chains that lead to the violation, as numbered
    /// steps, with a Mermaid sequence diagram and an SVG timeline of them.
    Explain {
        /// A scenario file (TOML, with --seed), or a trace written by `run --trace`.
        input: PathBuf,
        /// The failing seed (for a scenario).
        #[arg(long)]
        seed: Option<u64>,
        /// Write the pictures (`<scenario>-seed<N>.md` and `.svg`) into this folder.
        #[arg(long, default_value = "reports/explain")]
        pictures: PathBuf,
        /// Print the story only.
        #[arg(long)]
        no_pictures: bool,
    },
}

/// `--host`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum HostArg {
    /// The own discrete-event world.
    Own,
    /// The madsim host.
    Madsim,
}

impl HostArg {
    fn host(self) -> Host {
        match self {
            HostArg::Own => Host::Own,
            HostArg::Madsim => Host::Madsim,
        }
    }
}

/// Load a scenario the host can run (else exit 2 naming the field).
fn load_on(path: &Path, host: Host) -> Result<Arc<Scenario>, ExitCode> {
    let sc = load(path)?;
    host::validate(host, &sc, path).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })?;
    Ok(sc)
}

/// `--jobs`: a whole number of threads, at least 1 (0 is not "all cores": leave the flag out
/// for that). clap exits 2 naming the flag otherwise.
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1 (leave --jobs out to use every core)".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a whole number: {e}")),
    }
}

fn at_least_one_u64(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a whole number: {e}")),
    }
}

fn load(path: &Path) -> Result<Arc<Scenario>, ExitCode> {
    Scenario::load(path).map(Arc::new).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })
}

fn main() -> ExitCode {
    // Piped into `head` or a pager that quits early: end quietly, as other command-line tools
    // do, instead of panicking on the closed pipe.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Run {
            scenario,
            seed,
            trace,
            context,
            host,
            perfetto,
        } => cmd_run(&scenario, seed, trace, context, host.host(), perfetto),
        Cmd::Fuzz {
            scenario,
            schedules,
            seed_start,
            jobs,
            quiet,
            until_failure,
            host,
            coverage,
            guided,
            guided_out,
            batch,
            ..
        } if coverage || guided => cmd_guided(
            &scenario,
            host.host(),
            guided.then_some((guided_out, batch)),
            shardsim::guided::GuidedOptions {
                seed_start,
                schedules,
                jobs: jobs.unwrap_or_else(|| {
                    std::thread::available_parallelism()
                        .map(|n| n.get())
                        .unwrap_or(1)
                }),
                until_failure,
                batch: 0,
            },
            quiet,
        ),
        Cmd::Fuzz {
            scenario,
            schedules,
            seed_start,
            jobs,
            summary,
            quiet,
            check_determinism,
            until_failure,
            corpus,
            host,
            slice,
            report,
            ..
        } => cmd_fuzz(
            &scenario,
            schedules,
            seed_start,
            jobs,
            summary,
            quiet,
            FuzzOptions {
                check_determinism,
                until_failure,
            },
            corpus,
            FuzzOut { slice, report },
            host.host(),
        ),
        Cmd::Merge { out, inputs } => cmd_merge(&out, &inputs),
        Cmd::Bench {
            scale,
            nodes,
            entities,
            sim_ms,
            min_secs,
            max_rss_mb,
            scale_cell,
            ..
        } if scale || scale_cell.is_some() => {
            let flags = shardsim::scale::Flags {
                nodes,
                entities,
                sim_ms,
                min_secs,
                max_rss_mb,
            };
            ExitCode::from(shardsim::scale::main(flags, scale_cell))
        }
        Cmd::Bench {
            scenario,
            schedules,
            jobs: _,
            rounds,
            host: Some(HostArg::Madsim),
            ..
        } => cmd_bench_hosts(&scenario, schedules, rounds),
        Cmd::Bench {
            scenario,
            schedules,
            jobs,
            rounds,
            host: _,
            ..
        } => cmd_bench(&scenario, schedules, jobs, rounds),
        Cmd::Shrink {
            scenario,
            seed,
            out,
            max_runs,
            seed_tries,
            quiet,
        } => cmd_shrink(&scenario, seed, out, max_runs, seed_tries, quiet),
        Cmd::Agree {
            files,
            clean_seeds,
            violation_seeds,
            jobs,
            out,
        } => cmd_agree(files, clean_seeds, violation_seeds, jobs, out),
        Cmd::Sweep {
            dir,
            schedules,
            slow_schedules,
            slow_after_events,
            only,
            jobs,
            summaries,
            report_only,
            check_fingerprint,
            compact,
            out,
        } => {
            let plan = shardsim::sweep::Plan {
                schedules,
                slow_schedules,
                slow_after_events,
                jobs: jobs.unwrap_or_else(|| {
                    std::thread::available_parallelism()
                        .map(|n| n.get())
                        .unwrap_or(1)
                }),
                summaries,
            };
            let mode = match (report_only, check_fingerprint, compact) {
                (_, _, true) => SweepMode::Compact,
                (true, false, _) => SweepMode::Report { check: false },
                (true, true, _) => SweepMode::Report { check: true },
                _ => SweepMode::Run,
            };
            cmd_sweep(&dir, &only, &plan, mode, &out)
        }
        Cmd::Explain {
            input,
            seed,
            pictures,
            no_pictures,
        } => cmd_explain(&input, seed, (!no_pictures).then_some(pictures)),
        Cmd::CheckTrace { trace } => match shardsim_harness::check::recheck_file(&trace) {
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

fn cmd_run(
    path: &Path,
    seed: u64,
    trace: Option<PathBuf>,
    context: usize,
    host: Host,
    perfetto: Option<PathBuf>,
) -> ExitCode {
    let sc = match load_on(path, host) {
        Ok(s) => s,
        Err(c) => return c,
    };
    // With --trace, the causal recorder runs beside the trace (its `step` lines are what
    // `explain TRACE` reads); with --perfetto, the run also records send times for the flows.
    // The trace and its hash are the same without either. Both are the own world's.
    let (r, tracer, causal) = if host != Host::Own {
        let (r, t) = host::run_seed(host, &sc, seed, TraceMode::Full);
        (r, t, Default::default())
    } else {
        let mut w = shardsim_harness::sim::World::new(sc.clone(), seed, TraceMode::Full);
        if trace.is_some() {
            w = w.with_causal();
        }
        if perfetto.is_some() {
            w = w.record_flows();
        }
        let (r, t, c) = w.run_recorded();
        (r, t, c.unwrap_or_default())
    };
    let s = &r.stats;
    println!("scenario {} seed {seed}: simulated {}", sc.name, r.end);
    println!("behaviour: {}", sc.options.behaviour());
    println!(
        "events {}  messages {}  sends {}  deliveries {}  drops {}  rebalances {} ({} done)  entity starts {}",
        s.events, s.messages, s.sends, s.deliveries, s.drops, s.rebalances, s.rebalances_done, s.entity_starts
    );
    println!(
        "buffer high-water mark: {} messages (the most a region buffered at once)",
        s.buffer_high_water
    );
    if s.drops > 0 {
        println!("drops by reason: {}", s.drops_by_reason_line());
    }
    println!("trace hash {:016x}", r.trace_hash);
    if let Some(p) = &trace {
        let text = shardsim::explain::jsonl_with_steps(&tracer, &causal);
        if let Err(e) = write_atomic(p, text.as_bytes()) {
            eprintln!("error: {}: cannot write trace: {e}", p.display());
            return ExitCode::from(2);
        }
        println!("trace written to {}", p.display());
    }
    if let Some(p) = &perfetto {
        let meta = [
            ("scenario", sc.name.clone()),
            ("scenario_file", path.display().to_string()),
            ("seed", seed.to_string()),
            ("behaviour", sc.options.behaviour()),
            ("trace_hash", format!("{:016x}", r.trace_hash)),
            ("ts", "simulated microseconds".to_string()),
        ];
        let (json, st) = shardsim::perfetto::export(tracer.events(), tracer.flows(), &meta);
        if let Err(e) = write_atomic(p, json.as_bytes()) {
            eprintln!("error: {}: cannot write Perfetto trace: {e}", p.display());
            return ExitCode::from(2);
        }
        println!(
            "perfetto trace written to {} ({} slices, {} message flows, {} instants, {} messages lost in flight); open it in ui.perfetto.dev or chrome://tracing",
            p.display(),
            st.slices,
            st.flows,
            st.instants,
            st.lost
        );
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
            println!(
                "\nreplay: {}",
                campaign::replay_command_on(path, seed, host.name())
            );
            let known =
                campaign::known_hazard(&sc, seed, v, &|s, n, m| host::run_seed(host, s, n, m).0);
            if v.invariant == sc.expect.outcome {
                println!("outcome: {} (expected by the scenario)", v.invariant);
                ExitCode::SUCCESS
            } else if let Some(k) = known {
                let fix = sc.expect.known.iter().find(|h| h.name == k);
                let fix = fix.and_then(|h| h.fixed_by.as_deref());
                match fix {
                    Some(f) => println!(
                        "outcome: {} (the scenario's known hazard `{k}`: this seed is clean with `{f}` on)",
                        v.invariant
                    ),
                    None => println!("outcome: {} (the scenario's known hazard `{k}`)", v.invariant),
                }
                ExitCode::SUCCESS
            } else {
                // The shrinker replays on the own world only.
                if host == Host::Own {
                    println!("shrink: {}", campaign::shrink_command(path, seed));
                }
                println!("outcome: {} (UNEXPECTED)", v.invariant);
                ExitCode::from(1)
            }
        }
    }
}

/// `fuzz --slice` and `fuzz --report`.
struct FuzzOut {
    slice: Option<SliceSpec>,
    report: Option<PathBuf>,
}

#[allow(clippy::too_many_arguments)]
fn cmd_fuzz(
    path: &Path,
    schedules: u64,
    seed_start: u64,
    jobs: Option<usize>,
    summary: Option<PathBuf>,
    quiet: bool,
    opts: FuzzOptions,
    corpus: Option<PathBuf>,
    out: FuzzOut,
    host: Host,
) -> ExitCode {
    let sc = match load_on(path, host) {
        Ok(s) => s,
        Err(c) => return c,
    };
    if schedules == 0 {
        eprintln!("error: --schedules must be at least 1");
        return ExitCode::from(2);
    }
    if seed_start.checked_add(schedules).is_none() {
        eprintln!(
            "error: --seed-start {seed_start} with --schedules {schedules} runs past the last seed ({})",
            u64::MAX
        );
        return ExitCode::from(2);
    }
    if opts.check_determinism == Some(0) {
        eprintln!(
            "error: --check-determinism must be at least 1 (1 checks every seed, K every K-th)"
        );
        return ExitCode::from(2);
    }
    // A corpus that does not parse is bad input: say so before the campaign, not after.
    if let Some(c) = &corpus {
        if let Err(e) = campaign::read_corpus(c) {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    }
    let slice = match out.slice {
        None => Slice::WHOLE,
        Some(spec) => match spec.resolve(&|k| std::env::var(k).ok()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: --slice {e}");
                return ExitCode::from(2);
            }
        },
    };
    if out.slice.is_some() && opts.until_failure {
        eprintln!(
            "error: --slice and --until-failure do not go together (each slice would stop at its own first failure; the slices would not merge into one campaign)"
        );
        return ExitCode::from(2);
    }
    let jobs = jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let (slice_start, slice_len) = slice.range(seed_start, schedules);
    if out.slice.is_some() {
        println!(
            "slice {slice} of seeds {seed_start}..{}: seeds {slice_start}..{} ({slice_len} schedules)",
            seed_start.saturating_add(schedules),
            slice_start.saturating_add(slice_len)
        );
    }
    let reporter = progress::Reporter::new(
        format!("fuzz {}", sc.name),
        slice_len,
        "schedules",
        "failures",
        quiet,
        opts.until_failure,
    );
    let started = WallClock::now();
    let observe = |t: campaign::Tick| reporter.tick(t.done, t.failures);
    let run = |sc: &Arc<Scenario>, seed, mode| host::run_seed(host, sc, seed, mode).0;
    let sum = campaign::fuzz_observed_on(
        &sc, seed_start, schedules, slice, jobs, opts, &observe, &run,
    );
    reporter.finish(sum.schedules, sum.failures.len() as u64);
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let ran = sum.schedules;
    let seed_start = sum.seed_start;
    println!(
        "scenario {}: {} schedules (seeds {}..{}) on {} jobs in {:.1}s: {:.0} schedules/s, {:.2} M events/s",
        sc.name,
        ran,
        seed_start,
        sum.seed_end(),
        jobs,
        secs,
        ran as f64 / secs,
        sum.totals.events as f64 / secs / 1e6
    );
    println!("behaviour: {}", sum.behaviour);
    let t = &sum.totals;
    println!(
        "totals: events {}  sends {}  deliveries {}  drops {}  rebalances {}",
        t.events, t.sends, t.deliveries, t.drops, t.rebalances
    );
    if t.drops > 0 {
        println!("drops by reason: {}", t.drops_by_reason_line());
    }
    println!(
        "buffer high-water mark: {} messages (the most a region buffered at once, in any schedule)",
        t.buffer_high_water
    );
    if let Some(k) = opts.check_determinism {
        // Counted from the campaign's first seed, also in a slice.
        let base = slice.offset(schedules);
        let checked = (base + ran).div_ceil(k) - base.div_ceil(k);
        let bad = sum
            .failures
            .iter()
            .filter(|f| f.kind == campaign::FailureKind::Determinism)
            .count();
        println!("determinism: {checked} seeds run twice (every {k}), {bad} with different traces");
    }
    if let Some(p) = &summary {
        let json = serde_json::to_vec_pretty(&sum).unwrap_or_default();
        if let Err(e) = write_atomic(p, &json) {
            eprintln!("error: {}: cannot write summary: {e}", p.display());
            return ExitCode::from(2);
        }
    }
    if let Some(dir) = &out.report {
        let input = shardsim::report::ReportInput {
            scenario: &sc,
            scenario_path: path,
            summary: &sum,
            samples: &reporter.samples(),
            jobs,
        };
        match shardsim::report::write_report(dir, &input) {
            Ok(w) => println!(
                "report: {} figures and {}",
                w.files.len() - 1,
                dir.join("index.md").display()
            ),
            Err(e) => {
                eprintln!("error: --report {}: {e}", dir.display());
                return ExitCode::from(2);
            }
        }
    }
    if let Some(c) = &corpus {
        let name = campaign::corpus_scenario_name(path, &campaign::corpus_root(c));
        let found = campaign::corpus_entries(&name, &sum);
        match campaign::append_corpus(c, &found) {
            Ok(added) => println!(
                "corpus {}: {} new entries ({} failing seeds found, at most {} added per campaign)",
                c.display(),
                added.len(),
                found.len(),
                campaign::CORPUS_CAP
            ),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let expected = sc.expect.outcome;
    let mut code = ExitCode::SUCCESS;
    if opts.until_failure {
        match sum.failures.first() {
            Some(f) => println!(
                "until-failure: first failure after {ran} schedules: seed {}",
                f.seed
            ),
            None => println!(
                "until-failure: no failure in {ran} schedules (seeds {seed_start}..{})",
                sum.seed_end()
            ),
        }
    }
    for f in sum.failures.iter().take(20) {
        print_failure(path, f, expected, host);
    }
    if sum.failures.len() > 20 {
        println!("... and {} more failing seeds", sum.failures.len() - 20);
    }
    // `[[expect.known]]`: known hazards are reported with their counts, not failed.
    for (name, n, _) in campaign::known_found(&sc, &sum, ran) {
        let fix = sc
            .expect
            .known
            .iter()
            .find(|k| k.name == name)
            .and_then(|k| k.fixed_by.clone());
        let how = match fix {
            Some(f) => format!("each such seed is clean with `{f}` on"),
            None => "no fix option declared".into(),
        };
        println!("known hazard `{name}`: {n} of {ran} schedules ({how})");
    }
    match campaign::judge(&sc, &sum, ran, opts.until_failure) {
        Ok(lines) => {
            for l in lines {
                println!("ok: {l}");
            }
        }
        Err(why) => {
            println!("FAILED: {why}");
            code = ExitCode::from(1);
        }
    }
    code
}

/// One failure: tag, kind (the invariant for a violation), seed, simulated time, detail and
/// the replay command; for an unexpected violation also the command that shrinks it.
fn print_failure(path: &Path, f: &campaign::Failure, expected: Outcome, host: Host) {
    let tag = if f.is_expected(expected) {
        "expected".to_string()
    } else if let Some(k) = &f.known {
        format!("known hazard {k}:")
    } else {
        "UNEXPECTED".to_string()
    };
    println!(
        "{tag} {} seed {} at t={}.{:06}s: {}\n  replay: {}",
        f.label(),
        f.seed,
        f.t_us / 1_000_000,
        f.t_us % 1_000_000,
        f.detail,
        campaign::replay_command_on(path, f.seed, host.name())
    );
    // The shrinker replays on the own world only.
    if !f.is_expected(expected)
        && !f.is_known()
        && f.kind == campaign::FailureKind::Violation
        && host == Host::Own
    {
        println!("  shrink: {}", campaign::shrink_command(path, f.seed));
    }
}

fn cmd_merge(out: &Path, inputs: &[PathBuf]) -> ExitCode {
    let mut slices: Vec<(PathBuf, Summary)> = Vec::new();
    for p in inputs {
        match campaign::read_summary(p) {
            Ok(s) => slices.push((p.clone(), s)),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let merged = match campaign::merge(&slices) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let json = serde_json::to_vec_pretty(&merged).unwrap_or_default();
    if let Err(e) = write_atomic(out, &json) {
        eprintln!("error: {}: cannot write merged summary: {e}", out.display());
        return ExitCode::from(2);
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
    ExitCode::SUCCESS
}

fn cmd_bench(path: &Path, schedules: u64, jobs: usize, rounds: u32) -> ExitCode {
    let sc = match load(path) {
        Ok(s) => s,
        Err(c) => return c,
    };
    if schedules == 0 || jobs == 0 || rounds == 0 {
        eprintln!("error: --schedules, --jobs and --rounds must be at least 1");
        return ExitCode::from(2);
    }
    let mut ratios = Vec::new();
    for round in 1..=rounds {
        if rounds > 1 {
            println!("round {round} of {rounds}:");
        }
        let started = WallClock::now();
        let sum = campaign::fuzz(&sc, 0, schedules, jobs, &|_| {});
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        let events = sum.totals.events;
        println!(
            "bench {}: {} schedules on {} jobs in {:.2}s: {:.1} schedules/s, {:.2} M events/s, {:.0} deliveries/schedule",
            sc.name,
            schedules,
            jobs,
            secs,
            schedules as f64 / secs,
            events as f64 / secs / 1e6,
            sum.totals.deliveries as f64 / schedules as f64
        );
        let per_core = events as f64 / secs / jobs as f64;
        println!(
            "per core: {:.1} schedules/s, {:.2} M events/s ({} events/schedule)",
            schedules as f64 / secs / jobs as f64,
            per_core / 1e6,
            events / schedules
        );
        let started = WallClock::now();
        let checksum = shardsim_harness::bare::bare_loop(events, 0);
        let bare_secs = started.elapsed().as_secs_f64().max(1e-9);
        let bare = events as f64 / bare_secs;
        println!(
            "bare event loop (the same event queue and event size, ChaCha8 latencies, 1 core): {events} events in {bare_secs:.2}s: {:.2} M events/s (checksum {checksum:016x})",
            bare / 1e6
        );
        let ratio = 100.0 * per_core / bare;
        println!("full simulator with checkers = {ratio:.1}% of the bare loop (per core)");
        ratios.push(ratio);
    }
    if rounds > 1 {
        ratios.sort_by(f64::total_cmp);
        println!(
            "median over {rounds} rounds: full simulator with checkers = {:.1}% of the bare loop (per core; lowest {:.1}%, highest {:.1}%)",
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1]
        );
    }
    ExitCode::SUCCESS
}

/// `bench --host madsim`: the own world and the madsim host on the same scenario and seeds,
/// alternating per round, one job each; events/s of each and the ratio of their speeds.
fn cmd_bench_hosts(path: &Path, schedules: u64, rounds: u32) -> ExitCode {
    let sc = match load_on(path, Host::Madsim) {
        Ok(s) => s,
        Err(c) => return c,
    };
    if schedules == 0 || rounds == 0 {
        eprintln!("error: --schedules and --rounds must be at least 1");
        return ExitCode::from(2);
    }
    let mut ratios = Vec::new();
    for round in 1..=rounds {
        if rounds > 1 {
            println!("round {round} of {rounds}:");
        }
        let mut speed = Vec::new();
        for h in [Host::Own, Host::Madsim] {
            let run = |sc: &Arc<Scenario>, seed, mode| host::run_seed(h, sc, seed, mode).0;
            let started = WallClock::now();
            let opts = FuzzOptions::default();
            let sum = campaign::fuzz_with_runner(&sc, 0, schedules, 1, opts, &|_| {}, &run);
            let secs = started.elapsed().as_secs_f64().max(1e-9);
            let t = &sum.totals;
            println!(
                "bench {} on {:>6}: {} schedules in {:.2}s: {:.2} schedules/s, {:.3} M events/s ({} events, {} deliveries/schedule, {} failing)",
                sc.name,
                h.name(),
                schedules,
                secs,
                schedules as f64 / secs,
                t.events as f64 / secs / 1e6,
                t.events / schedules,
                t.deliveries / schedules,
                sum.failures.len()
            );
            speed.push((schedules as f64 / secs, t.events as f64 / secs));
        }
        let ratio = speed[0].0 / speed[1].0;
        println!(
            "own world / madsim: {ratio:.1}x schedules/s, {:.1}x events/s (1 core each)",
            speed[0].1 / speed[1].1
        );
        ratios.push(ratio);
    }
    if rounds > 1 {
        ratios.sort_by(f64::total_cmp);
        println!(
            "median over {rounds} rounds: own world {:.1}x madsim in schedules/s (lowest {:.1}x, highest {:.1}x)",
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1]
        );
    }
    ExitCode::SUCCESS
}

/// What `sweep` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SweepMode {
    /// Run every file not kept with this plan and model.
    Run,
    /// `--report-only`, `check`: `--check-fingerprint`.
    Report { check: bool },
    /// `--compact`.
    Compact,
}

fn cmd_sweep(
    dir: &Path,
    only: &[String],
    plan: &shardsim::sweep::Plan,
    mode: SweepMode,
    out: &Path,
) -> ExitCode {
    if !dir.is_dir() {
        eprintln!("error: {}: not a folder of scenario files", dir.display());
        return ExitCode::from(2);
    }
    let files: Vec<PathBuf> = scenario_files(dir)
        .into_iter()
        .filter(|f| {
            only.is_empty()
                || only
                    .iter()
                    .any(|o| f.to_string_lossy().contains(o.as_str()))
        })
        .collect();
    if files.is_empty() {
        eprintln!("error: {}: no scenario file matches", dir.display());
        return ExitCode::from(2);
    }
    // Load every file first: a bad one stops the sweep before hours are spent.
    let mut scenarios = Vec::new();
    for f in &files {
        match Scenario::load(f) {
            Ok(sc) => scenarios.push(sc),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if mode == SweepMode::Compact {
        return sweep_compact(&files, &scenarios, plan);
    }
    if let SweepMode::Report { check } = mode {
        return sweep_report(&files, &scenarios, plan, check, out);
    }
    let prints: Vec<String> = scenarios
        .iter()
        .map(|sc| shardsim::sweep::fingerprint(&std::sync::Arc::new(sc.clone())))
        .collect();
    let mut rows: Vec<(PathBuf, Option<(Scenario, shardsim::sweep::Entry)>)> = files
        .iter()
        .zip(&scenarios)
        .zip(&prints)
        .map(|((f, sc), print)| {
            let file = f.to_string_lossy();
            let kept = shardsim::sweep::reuse(&plan.summaries, &file, sc, plan, print)
                .or_else(|| shardsim::sweep::resume(&plan.summaries, &file, sc, plan, print));
            (f.clone(), kept.map(|e| (sc.clone(), e)))
        })
        .collect();
    let mut mismatched = 0;
    for i in 0..rows.len() {
        let (f, row) = &rows[i];
        let (kept, resumed) = match row {
            Some((_, e)) if e.is_done(plan) => (Some(e), None),
            Some((_, e)) => {
                println!(
                    "[{}/{}] {}: resuming from seed {} of {}",
                    i + 1,
                    rows.len(),
                    f.display(),
                    e.summary.schedules,
                    shardsim::sweep::planned(plan, e.slow)
                );
                (None, Some(e.clone()))
            }
            None => (None, None),
        };
        let e = match kept {
            Some(e) => e.clone(),
            None => match shardsim::sweep::sweep_file(
                f,
                &scenarios[i],
                prints[i].clone(),
                plan,
                resumed,
                &|_| {},
            ) {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            },
        };
        let verdict = match &e.verdict {
            Ok(_) => "matches".to_string(),
            Err(why) => {
                mismatched += 1;
                format!("DOES NOT MATCH: {why}")
            }
        };
        println!(
            "[{}/{}] {}: {} seeds{}, {}, {:.0}s{}",
            i + 1,
            rows.len(),
            f.display(),
            e.summary.schedules,
            if e.slow { " (slow)" } else { "" },
            verdict,
            e.secs,
            if kept.is_some() {
                " (kept from an earlier sweep)"
            } else {
                ""
            }
        );
        rows[i].1 = Some((scenarios[i].clone(), e));
        // The report after every file, so a stopped sweep leaves what it found.
        if let Err(e) = write_atomic(
            out,
            shardsim::sweep::report(&rows, plan, &shardsim::sweep::Model::Current).as_bytes(),
        ) {
            eprintln!("error: {}: cannot write: {e}", out.display());
            return ExitCode::from(2);
        }
    }
    println!(
        "sweep: {} files, {} match their declaration, {mismatched} do not; report {}",
        rows.len(),
        rows.len() - mismatched,
        out.display()
    );
    if mismatched > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `sweep --report-only`: the report from the kept results, running nothing (but seeds 0-2
/// of each file with `check`).
fn sweep_report(
    files: &[PathBuf],
    scenarios: &[Scenario],
    plan: &shardsim::sweep::Plan,
    check: bool,
    out: &Path,
) -> ExitCode {
    use shardsim::sweep::{self, Model};
    let rows: Vec<(PathBuf, Option<(Scenario, sweep::Entry)>)> = files
        .iter()
        .zip(scenarios)
        .map(|(f, sc)| {
            let kept = sweep::read_kept(&plan.summaries, &f.to_string_lossy(), sc, plan);
            (f.clone(), kept.map(|e| (sc.clone(), e)))
        })
        .collect();
    let model = if check {
        Model::Checked(
            rows.iter()
                .filter_map(|(f, r)| {
                    let (sc, e) = r.as_ref()?;
                    let print = sweep::fingerprint(&std::sync::Arc::new(sc.clone()));
                    (print != e.fingerprint).then(|| f.clone())
                })
                .collect(),
        )
    } else {
        Model::Unchecked
    };
    let done: Vec<&sweep::Entry> = rows
        .iter()
        .filter_map(|(_, r)| r.as_ref().map(|(_, e)| e))
        .filter(|e| e.is_done(plan))
        .collect();
    let mismatched = done.iter().filter(|e| e.verdict.is_err()).count();
    if let Err(e) = write_atomic(out, sweep::report(&rows, plan, &model).as_bytes()) {
        eprintln!("error: {}: cannot write: {e}", out.display());
        return ExitCode::from(2);
    }
    let stale = match &model {
        Model::Checked(s) => format!(", {} kept by another model (run again)", s.len()),
        _ => ", model not checked (--check-fingerprint)".to_string(),
    };
    println!(
        "sweep (report only): {} of {} files kept with this plan, {} match their declaration, \
         {mismatched} do not{stale}; report {}",
        done.len(),
        rows.len(),
        done.len() - mismatched,
        out.display()
    );
    if mismatched > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `sweep --compact`: every kept result rewritten in the compact form, running nothing.
fn sweep_compact(
    files: &[PathBuf],
    scenarios: &[Scenario],
    plan: &shardsim::sweep::Plan,
) -> ExitCode {
    let (mut n, mut before, mut after) = (0, 0u64, 0u64);
    for (f, sc) in files.iter().zip(scenarios) {
        match shardsim::sweep::compact_kept(&plan.summaries, &f.to_string_lossy(), sc) {
            Ok(Some((b, a))) => {
                n += 1;
                before += b;
                after += a;
                println!("{}: {b} -> {a} bytes", f.display());
            }
            Ok(None) => {}
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    println!("sweep --compact: {n} kept results, {before} -> {after} bytes");
    ExitCode::SUCCESS
}

fn cmd_agree(
    files: Vec<PathBuf>,
    clean: u64,
    violation: u64,
    jobs: usize,
    out: Option<PathBuf>,
) -> ExitCode {
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
                return ExitCode::from(2);
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
            return ExitCode::from(2);
        }
    }
    if bad > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Every `.toml` file under `dir`, recursively, in path order.
fn scenario_files(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    entries.sort();
    let mut out = Vec::new();
    for p in entries {
        if p.is_dir() {
            out.extend(scenario_files(&p));
        } else if p.extension().is_some_and(|e| e == "toml") {
            out.push(p);
        }
    }
    out
}

fn cmd_shrink(
    path: &Path,
    seed: u64,
    out: Option<PathBuf>,
    max_runs: u64,
    seed_tries: u64,
    quiet: bool,
) -> ExitCode {
    use shardsim::shrink::{self, secs, ShrinkError, ShrinkOptions};
    let sc = match load(path) {
        Ok(s) => s,
        Err(c) => return c,
    };
    if max_runs < 2 {
        eprintln!("error: --max-runs must be at least 2 (the seed, then its explicit plan)");
        return ExitCode::from(2);
    }
    let out = out.unwrap_or_else(|| {
        PathBuf::from("reports/shrunk").join(format!("{}-seed{seed}.toml", sc.name))
    });
    let opts = ShrinkOptions {
        max_runs,
        seed_tries,
    };
    let reporter = progress::Reporter::new(
        format!("shrink {} seed {seed}", sc.name),
        max_runs,
        "replays",
        "reductions kept",
        quiet,
        true,
    );
    let res = shrink::shrink_observed(&sc, seed, opts, &|runs, kept| reporter.tick(runs, kept));
    reporter.finish(0, 0);
    let res = match res {
        Ok(r) => r,
        Err(e @ ShrinkError::NoFailure { .. }) => {
            eprintln!("error: {}: {e}", path.display());
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            return ExitCode::from(1);
        }
    };
    let o = &res.original;
    println!(
        "failure: {} {} seed {seed} at t={}: {}\n  replay: {}",
        o.kind,
        o.label(),
        secs(o.t_us),
        o.detail,
        replay_command(path, seed)
    );
    println!("shrinking ({} replays at most):", max_runs);
    for s in &res.steps {
        println!("  {s}");
    }
    let (b, a) = (&res.before, &res.after);
    println!(
        "replays: {}{}",
        res.runs,
        if res.budget_exhausted {
            " (budget spent before a fixed point; --max-runs for more)"
        } else {
            " (fixed point)"
        }
    );
    println!(
        "faults {} → {} ({} of them before the violation)",
        b.faults, a.faults, b.faults_before_violation
    );
    println!("nodes {} → {}", b.nodes, a.nodes);
    println!(
        "messages sent before the violation {} → {}",
        b.messages, a.messages
    );
    println!("end {} ms → {} ms", b.end_ms, a.end_ms);
    println!(
        "entities {} → {}, shards {} → {}, senders per node {} → {}, focus {} → {}, send interval {:?} → {:?} ms, workload stop {} ms → {} ms",
        b.entities,
        a.entities,
        b.shards,
        a.shards,
        b.senders_per_node,
        a.senders_per_node,
        b.focus,
        a.focus,
        b.interval_ms,
        a.interval_ms,
        b.stop_ms,
        a.stop_ms
    );
    let mut minimal = res.scenario.clone();
    minimal.description = shrink::describe(&res, path, &out);
    if let Err(e) = shrink::write_scenario(&out, &minimal) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    let f = &res.failure;
    println!(
        "shrunk: {} {} seed {} at t={}: {}",
        f.kind,
        f.label(),
        res.seed,
        secs(f.t_us),
        f.detail
    );
    println!("written to {}", out.display());
    println!("  replay: {}", replay_command(&out, res.seed));
    ExitCode::SUCCESS
}

// ---------------------------------------------------------------------------------------------
// explain

fn cmd_explain(input: &Path, seed: Option<u64>, pictures: Option<PathBuf>) -> ExitCode {
    let is_scenario = seed.is_some() || input.extension().is_some_and(|e| e == "toml");
    let (text, name) = if is_scenario {
        let Some(seed) = seed else {
            eprintln!(
                "error: {}: explain a scenario with --seed N",
                input.display()
            );
            return ExitCode::from(2);
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
                return ExitCode::from(2);
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
            return ExitCode::from(2);
        }
        Err(err) => {
            eprintln!("error: {}:{err}", input.display());
            return ExitCode::from(2);
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
                return ExitCode::from(2);
            }
            println!("wrote {}", p.display());
        }
    }
    ExitCode::SUCCESS
}

/// `fuzz --coverage` (a uniform campaign with coverage collected) and `fuzz --guided`.
fn cmd_guided(
    path: &Path,
    host: Host,
    guided: Option<(PathBuf, usize)>,
    mut opts: shardsim::guided::GuidedOptions,
    quiet: bool,
) -> ExitCode {
    let sc = match load_on(path, host) {
        Ok(s) => s,
        Err(c) => return c,
    };
    if host != Host::Own {
        eprintln!("error: --coverage and --guided run on the own world only (leave out --host)");
        return ExitCode::from(2);
    }
    if opts.schedules == 0 {
        eprintln!("error: --schedules must be at least 1");
        return ExitCode::from(2);
    }
    if opts.seed_start.checked_add(opts.schedules).is_none() {
        eprintln!(
            "error: --seed-start {} with --schedules {} runs past the last seed ({})",
            opts.seed_start,
            opts.schedules,
            u64::MAX
        );
        return ExitCode::from(2);
    }
    let what = if guided.is_some() {
        "guided"
    } else {
        "coverage"
    };
    let reporter = progress::Reporter::new(
        format!("fuzz --{what} {}", sc.name),
        opts.schedules,
        "schedules",
        "failures",
        quiet,
        opts.until_failure,
    );
    let started = WallClock::now();
    let expected = sc.expect.outcome;
    let Some((dir, batch)) = guided else {
        let rep =
            shardsim::coverage::campaign(&sc, opts.seed_start, opts.schedules, opts.jobs, &|d| {
                reporter.tick(d, 0)
            });
        reporter.finish(rep.schedules, rep.failing);
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        println!(
            "scenario {}: {} schedules (seeds {}..{}) on {} jobs in {:.1}s, coverage on",
            sc.name,
            rep.schedules,
            rep.seed_start,
            rep.seed_start + rep.schedules,
            opts.jobs,
            secs
        );
        println!(
            "coverage: {} features reached (of {} bits); the last new one after schedule {} (seed {})",
            rep.features,
            shardsim::coverage::BITS,
            rep.last_new_at,
            rep.seed_start + rep.last_new_at.saturating_sub(1)
        );
        let g: Vec<String> = rep.growth.iter().map(|(n, f)| format!("{n}:{f}")).collect();
        println!("growth (schedules:features): {}", g.join(" "));
        match &rep.first_failure {
            Some((seed, inv, t)) => println!(
                "failing schedules: {} (first: seed {seed}, {inv} at t={})",
                rep.failing,
                shardsim::shrink::secs(*t)
            ),
            None => println!("failing schedules: 0"),
        }
        return ExitCode::SUCCESS;
    };
    opts.batch = batch;
    let rep = shardsim::guided::guided(&sc, opts, &|d| reporter.tick(d, 0));
    reporter.finish(rep.schedules, rep.failures.len() as u64);
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    println!(
        "guided {}: {} schedules (--seed-start {}, generations of {}) on {} jobs in {:.1}s: {:.0} schedules/s",
        sc.name,
        rep.schedules,
        opts.seed_start,
        batch,
        opts.jobs,
        secs,
        rep.schedules as f64 / secs
    );
    if rep.families.is_empty() {
        println!("perturbations: nothing to perturb (one node, one entity, no faults): seed-only");
    } else {
        println!("perturbations: {} and the seed", rep.families.join(", "));
    }
    println!(
        "coverage: {} features reached; corpus {} inputs; the last new feature after schedule {}",
        rep.features, rep.corpus, rep.last_new_at
    );
    if opts.until_failure {
        match rep.failures.first() {
            Some(f) => println!(
                "until-failure: first failure after {} schedules: seed {}",
                f.at, f.seed
            ),
            None => println!("until-failure: no failure in {} schedules", rep.schedules),
        }
    }
    let mut code = ExitCode::SUCCESS;
    let unexpected = rep
        .failures
        .iter()
        .filter(|f| !f.failure.is_expected(expected) && !f.failure.is_known())
        .count();
    if unexpected > 0 {
        code = ExitCode::from(1);
    }
    for f in rep.failures.iter().take(20) {
        let tag = if f.failure.is_expected(expected) {
            "expected".to_string()
        } else if let Some(k) = &f.failure.known {
            format!("known hazard {k}:")
        } else {
            "UNEXPECTED".to_string()
        };
        println!(
            "{tag} {} seed {} (schedule {}) at t={}: {}",
            f.failure.label(),
            f.seed,
            f.at,
            shardsim::shrink::secs(f.failure.t_us),
            f.failure.detail
        );
        if !f.mutations.is_empty() {
            println!("  perturbations: {}", f.mutations.join("; "));
        }
        match shardsim::guided::write_found(&dir, path, &sc.name, f) {
            Ok(p) => {
                println!("  written to {}", p.display());
                println!("  replay: {}", campaign::replay_command(&p, f.seed));
                println!("  shrink: {}", campaign::shrink_command(&p, f.seed));
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if rep.failures.len() > 20 {
        println!(
            "... and {} more failing inputs (not written)",
            rep.failures.len() - 20
        );
    }
    let found = rep
        .failures
        .iter()
        .filter(|f| f.failure.is_expected(expected))
        .count();
    let known = rep.failures.iter().filter(|f| f.failure.is_known()).count();
    if known > 0 {
        println!("known hazards: {known} inputs showed a hazard the scenario declares known");
    }
    if code != ExitCode::SUCCESS {
        println!("FAILED: {unexpected} inputs failed in a way the scenario does not expect");
    } else if expected != Outcome::None && found == 0 {
        println!("FAILED: the scenario expects `{expected}`, but no input showed it");
        code = ExitCode::from(1);
    } else if expected != Outcome::None {
        println!(
            "ok: expected `{expected}` found in {found} of {} inputs",
            rep.schedules
        );
    } else {
        println!("ok: no violation");
    }
    code
}
