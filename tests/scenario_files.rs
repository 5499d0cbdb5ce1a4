//! Every scenario file under `sim-scenarios/`, found by itself, fuzzed over many seeds against
//! its declaration (`[expect]`: the outcome, its rate band, the known hazards): a new file is
//! tested without editing Rust. Each file is its own test, named by its path, so
//! `cargo test --test scenario_files hazards/reorder` runs the matching ones.
//!
//! - `SHARDSIM_SEEDS=N`: seeds per file (default 800; the long files are capped below).
//! - `SHARDSIM_SCENARIO=FILE SHARDSIM_SEED=N`: run that one seed of that file and nothing else,
//!   as madsim's `MADSIM_TEST_SEED` does; the test prints the run and the replay, shrink and
//!   explain commands, and fails when the seed breaks the declaration.
//!
//! A failure prints its kind, seed, simulated time and the commands that replay, shrink and
//! explain it.

use libtest_mimic::{Arguments, Failed, Trial};
use shardsim::campaign::{self, Campaign, Failure};
use shardsim_harness::scenario::{Outcome, Scenario};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod common;
use common::{root, toml_files};

/// Files with a test of their own in `tests/scenarios.rs` (the swarms, whose every seed must
/// keep every invariant and draw faults).
const OWN_TESTS: &[&str] = &[
    "faults/swarm-keep-majority.toml",
    "faults/swarm-remember-ddata.toml",
    "faults/swarm-remember-eventsourced.toml",
];

fn seeds() -> u64 {
    std::env::var("SHARDSIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(800)
}

/// The few scenario files whose schedules are long (Akka's specs with long runs, the
/// ddata store's replicators) get fewer seeds, to keep `cargo test` within its time budget;
/// `shardsim fuzz` runs them at any length.
fn seed_cap(path: &Path) -> u64 {
    let p = path.to_string_lossy();
    if p.ends_with("specs/passivation-buffering-remember-ddata.toml") {
        150
    } else if p.ends_with("/scale-50.toml") || p.ends_with("/scale-100.toml") {
        // 50 and 100 nodes: a few seeds keep them fast.
        4
    } else if p.contains("/specs/")
        || p.contains("rolling-update")
        || p.contains("swarm-graceful")
        || p.contains("swarm-rolling")
    {
        300
    } else if p.contains("faults/swarm-") {
        // The swarm files draw long fault plans; their campaigns run in reports/.
        500
    } else if p.contains("hazards/remember-")
        || p.contains("hazards/restart-")
        || p.contains("hazards/handoff-empty-stopper")
        || p.contains("hazards/self-stop-")
    {
        400
    } else {
        u64::MAX
    }
}

/// How many seeds a file runs.
fn schedules(path: &Path) -> u64 {
    if path
        .to_string_lossy()
        .ends_with("specs/remember-entities-store-failure-eventsourced.toml")
    {
        seeds().max(1_000) // its Akka stall shows in 2 seeds of 1,000
    } else {
        seeds().min(seed_cap(path))
    }
}

/// A file's path as the repository names it (the commands run from its root).
fn rel(path: &Path) -> &Path {
    path.strip_prefix(root()).unwrap_or(path)
}

/// The commands that replay, shrink and explain one seed of a file.
fn commands(path: &Path, seed: u64) -> String {
    let path = rel(path);
    format!(
        "replay:  {}\nshrink:  {}\nexplain: {}",
        campaign::replay_command(path, seed),
        campaign::shrink_command(path, seed),
        campaign::explain_command(path, seed)
    )
}

fn failed(path: &Path, f: &Failure) -> Failed {
    format!(
        "{}: unexpected {} at seed {} t={}us: {}\n{}",
        rel(path).display(),
        f.invariant,
        f.seed,
        f.t_us,
        f.detail,
        commands(path, f.seed)
    )
    .into()
}

/// Fuzz one file over its seeds against its declaration.
fn check_scenario(path: &Path) -> Result<(), Failed> {
    let sc = Arc::new(Scenario::load(path).map_err(|e| e.to_string())?);
    let n = schedules(path);
    let sum = Campaign::new(&sc, 0, n).jobs(2).run();
    let expected = sc.expect.outcome;
    if let Some(f) = sum.unexpected(expected).next() {
        return Err(failed(path, f));
    }
    if expected != Outcome::None && sum.expected_found == 0 {
        return Err(format!(
            "{}: expected {expected} in {n} seeds, never found",
            rel(path).display()
        )
        .into());
    }
    // `[expect] rate`: the share of failing seeds is not far outside the declared band.
    if let Some(band) = sc.expect.rate_band() {
        let check = campaign::rate_check(sum.expected_found, n, band);
        if !check.ok() {
            return Err(format!(
                "{}: `{expected}` {}: far outside it",
                rel(path).display(),
                check.describe()
            )
            .into());
        }
    }
    // `[[expect.known]]`: a known hazard's share is not far outside its band.
    for (name, _, check) in campaign::known_found(&sc, &sum, n) {
        if let Some(c) = check.filter(|c| !c.ok()) {
            return Err(format!(
                "{}: known hazard `{name}` {}: far outside it",
                rel(path).display(),
                c.describe()
            )
            .into());
        }
    }
    if sum.totals.deliveries == 0 {
        return Err(format!("{}: nothing delivered", rel(path).display()).into());
    }
    Ok(())
}

/// `SHARDSIM_SCENARIO=FILE SHARDSIM_SEED=N`: one seed of one file.
fn one_seed(file: &str, seed: u64) -> Result<(), Failed> {
    let path = if Path::new(file).is_absolute() {
        PathBuf::from(file)
    } else {
        root().join(file)
    };
    let sc = Arc::new(Scenario::load(&path).map_err(|e| e.to_string())?);
    let sum = Campaign::new(&sc, seed, 1).run();
    println!("{} seed {seed}:", rel(&path).display());
    match sum.failures.first() {
        None => println!("no violation"),
        Some(f) => println!(
            "{} at t={}us: {}{}",
            f.invariant,
            f.t_us,
            f.detail,
            if f.is_expected(sc.expect.outcome) || f.is_known() {
                " (declared)"
            } else {
                ""
            }
        ),
    }
    println!("{}", commands(&path, seed));
    let bad = sum
        .unexpected(sc.expect.outcome)
        .next()
        .map(|f| failed(&path, f));
    bad.map_or(Ok(()), Err)
}

fn main() {
    let args = Arguments::from_args();
    let trials = match (
        std::env::var("SHARDSIM_SCENARIO"),
        std::env::var("SHARDSIM_SEED"),
    ) {
        (Ok(file), Ok(seed)) => {
            let seed: u64 = seed
                .parse()
                .unwrap_or_else(|_| panic!("SHARDSIM_SEED={seed}: not a seed"));
            vec![Trial::test(format!("{file} seed {seed}"), move || {
                one_seed(&file, seed)
            })]
        }
        (Ok(_), Err(_)) | (Err(_), Ok(_)) => {
            panic!("set both SHARDSIM_SCENARIO=FILE and SHARDSIM_SEED=N to run one seed")
        }
        _ => {
            let dir = root().join("sim-scenarios");
            toml_files(&dir)
                .into_iter()
                .filter(|p| !OWN_TESTS.iter().any(|o| p.ends_with(o)))
                .map(|p| {
                    let name = p.strip_prefix(&dir).unwrap().to_string_lossy().into_owned();
                    Trial::test(name, move || check_scenario(&p))
                })
                .collect()
        }
    };
    libtest_mimic::run(&args, trials).exit();
}
