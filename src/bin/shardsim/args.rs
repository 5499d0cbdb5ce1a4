//! The command line: [`Cli`], one [`Cmd`] variant per subcommand, each wrapping the struct of
//! its flags, and the value parsers of those flags.

use clap::{Args, Parser, Subcommand};
use shardsim::slice::SliceSpec;
use shardsim_harness::host::Host;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "shardsim",
    version,
    about = "Deterministic simulation testbed for Akka-style cluster sharding"
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Run one schedule and print its summary; on a violation, the trace around it and the
    /// replay command.
    Run(RunArgs),
    /// Run many seeds in parallel and report failures.
    Fuzz(FuzzArgs),
    /// Merge slice summaries written by `fuzz --summary` (same scenario, disjoint seed ranges).
    Merge(MergeArgs),
    /// Benchmark: a fixed scenario, printing schedules/s and events/s, against a bare event loop
    /// running as many events.
    Bench(BenchArgs),
    /// Shrink a failing seed to a minimal scenario (fewer faults, nodes, entities, senders, an
    /// earlier end) that still breaks the same invariant, and write it as a scenario file.
    Shrink(ShrinkArgs),
    /// Agreement between hosts: run scenario files on the madsim host, each clean file on
    /// --clean-seeds seeds, each violation file until its invariant shows (at most
    /// --violation-seeds), and write the table.
    Agree(AgreeArgs),
    /// Every scenario file at campaign scale: each file's campaign judged as `fuzz` judges
    /// it, kept per file in a compact form (a stopped sweep resumes), and a Markdown report of
    /// seeds, outcome counts, options and verdicts.
    Sweep(SweepArgs),
    /// Re-check the invariants of a trace file from the file alone.
    CheckTrace(CheckTraceArgs),
    /// Explain a failing seed: the causal chains that lead to the violation, as numbered
    /// steps, with a Mermaid sequence diagram and an SVG timeline of them.
    Explain(ExplainArgs),
}

// The flags of each subcommand. These structs carry no doc comment: clap would take it as the
// subcommand's about text, beside the variant's doc comment above, which is the help.

#[derive(Args)]
pub struct RunArgs {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    /// The schedule's seed.
    #[arg(long)]
    pub seed: u64,
    /// Write the full trace (JSON Lines) here.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Events of context to print before a violation.
    #[arg(long, default_value_t = 25)]
    pub context: usize,
    /// The host: the own world, or madsim (the same node state machine on madsim).
    #[arg(long, value_enum, default_value_t = HostArg::Own)]
    pub host: HostArg,
    /// Write the schedule as Chrome trace-event JSON here (opens in ui.perfetto.dev and
    /// chrome://tracing): a process per node, a track per actor, a flow per message.
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
}

#[derive(Args)]
pub struct FuzzArgs {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    /// Number of schedules.
    #[arg(long, default_value_t = 10_000)]
    pub schedules: u64,
    /// First seed.
    #[arg(long, default_value_t = 0)]
    pub seed_start: u64,
    /// Worker threads, at least 1 (default: all cores).
    #[arg(long, value_parser = at_least_one)]
    pub jobs: Option<usize>,
    /// Write the JSON summary here.
    #[arg(long)]
    pub summary: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Run every K-th seed (K >= 1, counted from --seed-start) twice with trace hashing
    /// and report different traces as a `determinism` failure.
    #[arg(long, value_name = "K")]
    pub check_determinism: Option<u64>,
    /// Stop at the lowest failing seed (--schedules is then the cap); the result does not
    /// depend on --jobs.
    #[arg(long)]
    pub until_failure: bool,
    /// Append the failing seeds found (at most 20 new, deduplicated) to this JSON Lines
    /// corpus, e.g. tests/corpus.jsonl.
    #[arg(long, value_name = "FILE")]
    pub corpus: Option<PathBuf>,
    /// The host: the own world, or madsim (the same node state machine on madsim).
    #[arg(long, value_enum, default_value_t = HostArg::Own)]
    pub host: HostArg,
    /// Run only slice I of N (from 0) of the seeds [seed-start, seed-start + schedules):
    /// seeds seed-start + floor(I*schedules/N) up to seed-start +
    /// floor((I+1)*schedules/N). `auto/N` takes I from JOB_COMPLETION_INDEX (Kubernetes
    /// Indexed Job) or SLURM_ARRAY_TASK_ID minus SLURM_ARRAY_TASK_MIN (Slurm array).
    /// Write each slice's --summary and combine them with `shardsim merge`.
    #[arg(long, value_name = "I/N")]
    pub slice: Option<SliceSpec>,
    /// Draw the campaign's figures (SVG) into this folder, with an index.md linking them.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Collect behaviour coverage: print the features the campaign reached and the
    /// schedule after which no new one appeared.
    #[arg(
        long,
        conflicts_with_all = ["slice", "corpus", "report", "summary", "check_determinism"]
    )]
    pub coverage: bool,
    /// Coverage-guided exploration: inputs (seed + fault plan edits, targeted delays,
    /// workload focus) that reach new coverage are kept and mutated; deterministic given
    /// --seed-start, independent of --jobs. Failures are written as scenario files.
    #[arg(
        long,
        conflicts_with_all = ["slice", "corpus", "report", "summary", "check_determinism"]
    )]
    pub guided: bool,
    /// With --guided: where the failing inputs are written as scenario files.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "shardsim-out/guided",
        requires = "guided"
    )]
    pub guided_out: PathBuf,
    /// With --guided: inputs per generation (the answer depends on it, not on --jobs).
    #[arg(
        long,
        default_value_t = shardsim::guided::DEFAULT_BATCH,
        value_parser = at_least_one,
        requires = "guided"
    )]
    pub batch: usize,
}

#[derive(Args)]
pub struct MergeArgs {
    /// The merged summary to write.
    pub out: PathBuf,
    /// The slice summaries.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
}

#[derive(Args)]
pub struct BenchArgs {
    /// Scenario file (default: sim-scenarios/bench.toml).
    #[arg(long, default_value = "sim-scenarios/bench.toml")]
    pub scenario: PathBuf,
    /// Schedules to run.
    #[arg(long, default_value_t = 2_000)]
    pub schedules: u64,
    /// Worker threads, at least 1.
    #[arg(long, default_value_t = 1, value_parser = at_least_one)]
    pub jobs: usize,
    /// Measure this many times, alternating simulator and bare loop, and report the median
    /// ratio (the machine's load drifts; alternating exposes both sides to it alike).
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// `madsim`: run the own world and the madsim host on the scenario, one after the
    /// other, and print the events/s of each and their ratio (instead of the bare loop).
    #[arg(long, value_enum)]
    pub host: Option<HostArg>,
    /// The scale benchmark: the grid of nodes 3, 10, 30, 100 x entities 100,
    /// 10,000, 1,000,000, each cell a child process (its own peak RSS); prints events per
    /// schedule, events/s, ns/event relative to the 3-node/100-entity cell, and max RSS.
    #[arg(long)]
    pub scale: bool,
    /// With --scale: only these node counts (comma-separated).
    #[arg(long, value_name = "LIST", requires = "scale")]
    pub nodes: Option<String>,
    /// With --scale: only these entity counts (comma-separated).
    #[arg(long, value_name = "LIST", requires = "scale")]
    pub entities: Option<String>,
    /// With --scale: simulated time per schedule, ms (default 20,000).
    #[arg(long, value_name = "MS", requires = "scale")]
    pub sim_ms: Option<u64>,
    /// With --scale: each cell repeats seeds until it has run this long (wall clock, s).
    #[arg(long, value_name = "S", requires = "scale")]
    pub min_secs: Option<f64>,
    /// With --scale: a cell's address-space cap, MB (default 6,000): a cell that needs
    /// more aborts and is reported as over the cap.
    #[arg(long, value_name = "MB", requires = "scale")]
    pub max_rss_mb: Option<u64>,
    /// One cell of --scale, in this process (what --scale runs as a child).
    #[arg(long, hide = true, num_args = 2, value_names = ["NODES", "ENTITIES"])]
    pub scale_cell: Option<Vec<u32>>,
}

#[derive(Args)]
pub struct ShrinkArgs {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    /// The failing seed.
    #[arg(long)]
    pub seed: u64,
    /// Where to write the shrunk scenario (default:
    /// shardsim-out/shrunk/<scenario name>-seed<N>.toml).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// At most this many replays.
    #[arg(long, default_value_t = shardsim::shrink::DEFAULT_MAX_RUNS)]
    pub max_runs: u64,
    /// Seed freedom: a reduction that no longer fails with the current seed is also tried
    /// with the next K seeds, and kept with the first that breaks the same invariant. Lets
    /// a failure no fault causes (a protocol race) shrink beyond its end time; the result
    /// names its own seed. 0 keeps the original seed.
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub seed_tries: u64,
    /// No progress bar or progress lines.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Args)]
pub struct AgreeArgs {
    /// Scenario files (default: every file under sim-scenarios/).
    pub files: Vec<PathBuf>,
    /// Seeds per file that expects `none`.
    #[arg(long, default_value_t = 200)]
    pub clean_seeds: u64,
    /// At most this many seeds per file that expects a violation.
    #[arg(long, default_value_t = 2_000)]
    pub violation_seeds: u64,
    /// Worker threads, at least 1.
    #[arg(long, default_value_t = 1, value_parser = at_least_one)]
    pub jobs: usize,
    /// Write the Markdown table here.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Args)]
pub struct SweepArgs {
    /// The folder of scenario files (searched recursively).
    #[arg(default_value = "sim-scenarios")]
    pub dir: PathBuf,
    /// Seeds per file, from 0.
    #[arg(long, default_value_t = 100_000, value_parser = at_least_one_u64)]
    pub schedules: u64,
    /// Seeds per slow file (one whose first 100 seeds average more than
    /// --slow-after-events events per schedule).
    #[arg(long, default_value_t = 20_000, value_parser = at_least_one_u64)]
    pub slow_schedules: u64,
    /// Events per schedule (the mean over a file's first 100 seeds) above which a file is
    /// slow. Counted, not timed, so the plan does not depend on the machine or its load;
    /// the default is about 15 minutes of 2 cores for 100,000 schedules.
    #[arg(long, value_name = "EVENTS", default_value_t = 100_000)]
    pub slow_after_events: u64,
    /// Only the files whose path contains one of these (repeatable).
    #[arg(long, value_name = "TEXT")]
    pub only: Vec<String>,
    /// Worker threads, at least 1 (default: all cores).
    #[arg(long, value_parser = at_least_one)]
    pub jobs: Option<usize>,
    /// Where each file's result is kept (and reused by a later sweep with the same plan).
    #[arg(long, value_name = "DIR", default_value = "shardsim-out/at-scale")]
    pub summaries: PathBuf,
    /// Run nothing: write the report from the kept results as they are (the other files
    /// "not run yet"), judged against each file's declaration as it is now, to see how far
    /// a sweep spread over several runs has come. It only reads: seconds, not minutes.
    #[arg(long, conflicts_with = "compact")]
    pub report_only: bool,
    /// With --report-only: also run seeds 0-2 of every file (the model's fingerprint) and
    /// mark the kept results another model wrote, which the next sweep runs again.
    #[arg(long, requires = "report_only")]
    pub check_fingerprint: bool,
    /// Run nothing: rewrite every kept result in the compact form (each failure that is
    /// not the file's declared outcome, the first 20 seeds of that outcome, a count of the
    /// rest), as a sweep now keeps them.
    #[arg(long)]
    pub compact: bool,
    /// The Markdown report to write.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "shardsim-out/scenarios-at-scale.md"
    )]
    pub out: PathBuf,
}

#[derive(Args)]
pub struct CheckTraceArgs {
    /// A JSON Lines trace written by `run --trace`.
    pub trace: PathBuf,
}

#[derive(Args)]
pub struct ExplainArgs {
    /// A scenario file (TOML, with --seed), or a trace written by `run --trace`.
    pub input: PathBuf,
    /// The failing seed (for a scenario).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the pictures (`<scenario>-seed<N>.md` and `.svg`) into this folder.
    #[arg(
        long,
        default_value = "shardsim-out/explain",
        conflicts_with = "no_pictures"
    )]
    pub pictures: PathBuf,
    /// Print the story only.
    #[arg(long)]
    pub no_pictures: bool,
}

/// `--host`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HostArg {
    /// The own discrete-event world.
    Own,
    /// The madsim host.
    Madsim,
}

impl HostArg {
    pub fn host(self) -> Host {
        match self {
            HostArg::Own => Host::Own,
            HostArg::Madsim => Host::Madsim,
        }
    }
}

/// `--jobs`: a whole number of threads, at least 1 (0 is not "all cores": leave the flag out
/// for that). clap exits 2 naming the flag otherwise.
pub fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1 (leave --jobs out to use every core)".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a whole number: {e}")),
    }
}

pub fn at_least_one_u64(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a whole number: {e}")),
    }
}
