//! Campaigns: many seeds of one scenario, in parallel. Results never depend on the number of
//! jobs or on how seeds are split: each seed is an independent, deterministic schedule, and the
//! summary is assembled in seed order.

use crate::check::Violation;
use crate::scenario::{Outcome, Scenario};
use crate::sim::{RunResult, Stats, World};
use crate::trace::{TraceMode, Tracer};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Run one seed.
pub fn run_seed(sc: &Arc<Scenario>, seed: u64, mode: TraceMode) -> (RunResult, Tracer) {
    World::new(sc.clone(), seed, mode).run()
}

/// One failing seed of a campaign.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
pub struct Failure {
    /// The seed.
    pub seed: u64,
    /// The invariant.
    pub invariant: Outcome,
    /// Simulated time of the violation, µs.
    pub t_us: u64,
    /// What happened.
    pub detail: String,
}

impl Failure {
    fn from(seed: u64, v: &Violation) -> Self {
        Failure {
            seed,
            invariant: v.invariant,
            t_us: v.t.0,
            detail: v.detail.clone(),
        }
    }
}

/// The summary of a campaign (or of one slice of it).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// First seed.
    pub seed_start: u64,
    /// Number of schedules.
    pub schedules: u64,
    /// Counters summed over every schedule.
    pub totals: Stats,
    /// Schedules per invariant broken (seed order).
    pub failures: Vec<Failure>,
    /// Schedules whose violation was the expected one.
    pub expected_found: u64,
}

/// Progress callback: called with the number of schedules done so far.
pub type Progress<'a> = &'a (dyn Fn(u64) + Sync);

/// Run `schedules` seeds from `seed_start` on `jobs` threads.
pub fn fuzz(
    sc: &Arc<Scenario>,
    seed_start: u64,
    schedules: u64,
    jobs: usize,
    progress: Progress<'_>,
) -> Summary {
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let results: Mutex<Vec<(u64, Stats, Option<Violation>)>> = Mutex::new(Vec::new());
    const CHUNK: u64 = 64;
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| {
                let mut local_totals: Vec<(u64, Stats, Option<Violation>)> = Vec::new();
                let mut acc = Stats::default();
                loop {
                    let i = next.fetch_add(CHUNK, Ordering::Relaxed);
                    if i >= schedules {
                        break;
                    }
                    let hi = (i + CHUNK).min(schedules);
                    for k in i..hi {
                        let seed = seed_start.wrapping_add(k);
                        let (r, _) = run_seed(sc, seed, TraceMode::Off);
                        add(&mut acc, &r.stats);
                        if let Some(v) = r.violation {
                            local_totals.push((seed, Stats::default(), Some(v)));
                        }
                    }
                    progress(done.fetch_add(hi - i, Ordering::Relaxed) + (hi - i));
                }
                local_totals.push((u64::MAX, acc, None));
                results
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend(local_totals);
            });
        }
    });
    let mut all = results.into_inner().unwrap_or_else(|e| e.into_inner());
    all.sort_by_key(|(seed, _, _)| *seed);
    let mut summary = Summary {
        scenario: sc.name.clone(),
        seed_start,
        schedules,
        ..Summary::default()
    };
    for (seed, stats, v) in all {
        add(&mut summary.totals, &stats);
        if let Some(v) = v {
            if v.invariant == sc.expect.outcome {
                summary.expected_found += 1;
            }
            summary.failures.push(Failure::from(seed, &v));
        }
    }
    summary
}

/// Add counters.
pub fn add(acc: &mut Stats, s: &Stats) {
    acc.events += s.events;
    acc.messages += s.messages;
    acc.sends += s.sends;
    acc.deliveries += s.deliveries;
    acc.drops += s.drops;
    acc.rebalances += s.rebalances;
    acc.rebalances_done += s.rebalances_done;
    acc.entity_starts += s.entity_starts;
}

impl Summary {
    /// Failures that the scenario did not declare.
    pub fn unexpected(&self, expected: Outcome) -> impl Iterator<Item = &Failure> {
        self.failures
            .iter()
            .filter(move |f| f.invariant != expected)
    }
}

/// The exact command that replays one seed of a scenario file.
pub fn replay_command(scenario_path: &Path, seed: u64) -> String {
    format!(
        "cargo run --release -- run {} --seed {seed} --trace shardsim-{seed}.jsonl",
        scenario_path.display()
    )
}

/// Write `contents` to `path` atomically (temporary file in the same folder, then rename).
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, path)
}
