//! `fuzz --guided`: coverage-guided exploration of schedules.
//!
//! An input is a seed and a scenario with its perturbations explicit: the fault plan (the
//! swarm's draw materialised, as `shrink` writes it, then edited), targeted delays
//! (`[[delays]]`, [`shardsim_harness::sim::delays`]) and the workload's focus. Inputs that reach behaviour
//! coverage no earlier input reached ([`crate::coverage`]) join the corpus, and the next inputs
//! are mutants of corpus entries, chosen by energy (AFL-style: more for entries that found more
//! new features, less each time one is picked), one to three mutations stacked.
//!
//! Runs go in generations of [`GuidedOptions::batch`] inputs: every input of a generation is
//! drawn before any of them runs (from one ChaCha stream seeded by `--seed-start`,
//! [`Stream::Guided`]), the generation runs on any number of threads, and its results are
//! merged in input order. So the campaign, its corpus and its failures depend on
//! `--seed-start`, `--schedules` and the batch only, never on `--jobs`. A quarter of each
//! generation (all of the first) are fresh seeds of the scenario as written, so a guided
//! campaign also runs what a uniform one would.
//!
//! Every failure comes back with its scenario written out (perturbations explicit, swarm off,
//! [`crate::shrink::materialise`]), so `run FILE --seed N` replays it and `shrink` shrinks it.
//! A scenario with nothing to perturb (one node, one entity, no faults) runs seed-only: every
//! input is a fresh seed.

use crate::campaign::{self, Failure, FailureKind};
use crate::coverage::{run_batch, Bitmap};
use crate::shrink::materialise;
use shardsim_core::rng::{Rng, Stream};
use shardsim_harness::scenario::Scenario;
use shardsim_harness::sim::delays::{random_delay, DRAWN_KINDS};
use shardsim_harness::sim::World;
use shardsim_harness::trace::TraceMode;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Options of [`guided`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuidedOptions {
    /// Seeds the mutator's stream and is the first fresh seed.
    pub seed_start: u64,
    /// Schedules to run at most.
    pub schedules: u64,
    /// Threads (the answer does not depend on it).
    pub jobs: usize,
    /// Stop at the first failure (in input order).
    pub until_failure: bool,
    /// Inputs per generation.
    pub batch: usize,
}

/// The default generation size.
pub const DEFAULT_BATCH: usize = 64;

/// One input: a seed and the scenario it runs (perturbations explicit).
#[derive(Clone, Debug)]
pub struct Input {
    /// The seed to run `sc` with: a fresh one, or its parent's unless a `seed` mutation drew anew.
    pub seed: u64,
    /// The scenario, the base one for a fresh seed.
    pub sc: Arc<Scenario>,
    /// The mutations applied since the fresh seed it descends from.
    pub mutations: Vec<String>,
}

/// A failing input.
#[derive(Clone, Debug)]
pub struct Found {
    /// Schedules run up to and including this one.
    pub at: u64,
    /// The seed that failed, to run `scenario` with.
    pub seed: u64,
    /// The failure as a campaign reports it (invariant, simulated time, detail, known hazard).
    pub failure: Failure,
    /// The scenario with its perturbations explicit (swarm off).
    pub scenario: Scenario,
    /// The mutations that made it (empty: a fresh seed).
    pub mutations: Vec<String>,
}

/// What a guided campaign did.
#[derive(Clone, Debug)]
pub struct GuidedReport {
    /// Schedules run.
    pub schedules: u64,
    /// Features reached.
    pub features: u32,
    /// Inputs kept for new coverage.
    pub corpus: usize,
    /// The schedule after which no new feature appeared.
    pub last_new_at: u64,
    /// The mutation families the scenario allows (empty: seed-only).
    pub families: Vec<&'static str>,
    /// The failing inputs, in input order (with `until_failure`: the first only).
    pub failures: Vec<Found>,
    /// (schedules, features) after each generation.
    pub growth: Vec<(u64, u32)>,
}

/// The mutation families `sc` allows: `delays` (two nodes or more), `faults` (a fault plan or a
/// swarm), `focus` (more than one entity). Reseeding is always possible and not listed.
pub fn families(sc: &Scenario) -> Vec<&'static str> {
    let mut f = Vec::new();
    if sc.cluster.nodes >= 2 {
        f.push("delays");
    }
    if !sc.faults.is_empty() || sc.swarm.enabled {
        f.push("faults");
    }
    if sc.entities.count > 1 {
        f.push("focus");
    }
    f
}

struct Entry {
    input: Input,
    new_features: u32,
    picked: u32,
}

impl Entry {
    fn energy(&self) -> u64 {
        let gain = u64::from(self.new_features.min(63)) + 1;
        gain * 64 / (4 + u64::from(self.picked)) + 1
    }
}

fn pick<'a>(rng: &mut Rng, corpus: &'a mut [Entry]) -> &'a mut Entry {
    let total: u64 = corpus.iter().map(Entry::energy).sum();
    let mut r = rng.range(0, total.saturating_sub(1));
    let mut idx = corpus.len() - 1;
    for (i, e) in corpus.iter().enumerate() {
        let w = e.energy();
        if r < w {
            idx = i;
            break;
        }
        r -= w;
    }
    &mut corpus[idx]
}

/// A mutant of `parent`: one to three mutations of the allowed `families` or of the seed.
fn mutate(rng: &mut Rng, parent: &Input, families: &[&'static str]) -> Input {
    let mut s = materialise(&parent.sc, parent.seed);
    let mut seed = parent.seed;
    let mut muts = parent.mutations.clone();
    let n = s.cluster.nodes;
    let end = s.run.duration_ms;
    let k = rng.range(1, 3);
    for _ in 0..k {
        let f = rng.range(0, families.len() as u64) as usize;
        let family = families.get(f).copied().unwrap_or("seed");
        match family {
            "delays" => {
                let edit = !s.delays.is_empty() && rng.chance(0.5);
                if !edit && s.delays.len() < 8 {
                    let d = random_delay(rng, n, 0, end, 2_000);
                    muts.push(format!(
                        "add delay {}",
                        shardsim_harness::sim::delays::describe(std::slice::from_ref(&d))
                    ));
                    s.delays.push(d);
                } else if !s.delays.is_empty() {
                    let i = rng.range(0, s.delays.len() as u64 - 1) as usize;
                    let d = &mut s.delays[i];
                    match rng.range(0, 4) {
                        0 => {
                            let shift = rng.range(0, 2_000);
                            let until = d.until();
                            if rng.chance(0.5) {
                                d.at_ms = d.at_ms.saturating_sub(shift);
                                d.until_ms = Some(until.saturating_sub(shift));
                            } else {
                                d.at_ms += shift;
                                d.until_ms = Some(until + shift);
                            }
                            muts.push(format!("shift delay {i}"));
                        }
                        1 => {
                            d.hold_ms = if rng.chance(0.5) {
                                (d.hold_ms * 2).min(10_000)
                            } else {
                                (d.hold_ms / 2).max(1)
                            };
                            muts.push(format!("hold delay {i} {} ms", d.hold_ms));
                        }
                        2 => {
                            let kinds = DRAWN_KINDS.len() as u64;
                            d.message = Some(DRAWN_KINDS[rng.range(0, kinds - 1) as usize].into());
                            muts.push(format!("kind delay {i}"));
                        }
                        3 => {
                            d.until_ms = Some(d.until() + rng.range(0, 2_000));
                            muts.push(format!("widen delay {i}"));
                        }
                        _ => {
                            s.delays.remove(i);
                            muts.push(format!("remove delay {i}"));
                        }
                    }
                }
            }
            "faults" if !s.faults.is_empty() => {
                let i = rng.range(0, s.faults.len() as u64 - 1) as usize;
                match rng.range(0, 2) {
                    0 => {
                        s.faults.remove(i);
                        muts.push(format!("remove fault {i}"));
                    }
                    1 => {
                        let shift = rng.range(0, 2_000);
                        let f = &mut s.faults[i];
                        f.at_ms = if rng.chance(0.5) {
                            f.at_ms.saturating_sub(shift)
                        } else {
                            (f.at_ms + shift).min(end)
                        };
                        muts.push(format!("shift fault {i}"));
                    }
                    _ => {
                        if let Some(d) = &mut s.faults[i].duration_ms {
                            *d = if rng.chance(0.5) {
                                *d * 2
                            } else {
                                (*d / 2).max(1)
                            };
                            muts.push(format!("pause {i} {} ms", *d));
                        } else {
                            s.faults.remove(i);
                            muts.push(format!("remove fault {i}"));
                        }
                    }
                }
                s.faults.sort_by_key(|f| f.at_ms);
            }
            "focus" => {
                let max = u64::from(s.entities.count.min(8));
                s.workload.focus = if rng.chance(0.2) {
                    0
                } else {
                    rng.range(1, max) as u32
                };
                muts.push(format!("focus {}", s.workload.focus));
            }
            _ => {
                seed = rng.next_u64() >> 16;
                muts.push("seed".into());
            }
        }
    }
    if s.validate().is_err() {
        // An edit left the scenario invalid (a fault order that no longer makes sense): run the
        // parent's scenario with a new seed instead.
        s = materialise(&parent.sc, parent.seed);
        seed = rng.next_u64() >> 16;
        muts = parent.mutations.clone();
        muts.push("seed".into());
    }
    Input {
        seed,
        sc: Arc::new(s),
        mutations: muts,
    }
}

/// Run a guided campaign of `sc`; `progress(schedules done)` after each generation.
pub fn guided(sc: &Arc<Scenario>, opts: GuidedOptions, progress: &dyn Fn(u64)) -> GuidedReport {
    let fams = families(sc);
    let mut rng = Rng::fork(opts.seed_start, Stream::Guided);
    let mut corpus: Vec<Entry> = Vec::new();
    let mut global = Bitmap::new();
    let mut fresh = opts.seed_start;
    let mut rep = GuidedReport {
        schedules: 0,
        features: 0,
        corpus: 0,
        last_new_at: 0,
        families: fams.clone(),
        failures: Vec::new(),
        growth: Vec::new(),
    };
    let batch = opts.batch.max(1) as u64;
    let mut done = 0u64;
    'gens: while done < opts.schedules {
        let n = batch.min(opts.schedules - done);
        let inputs: Vec<Input> = (0..n)
            .map(|i| {
                if corpus.is_empty() || fams.is_empty() || i % 4 == 0 {
                    let seed = fresh;
                    fresh = fresh.wrapping_add(1);
                    Input {
                        seed,
                        sc: sc.clone(),
                        mutations: Vec::new(),
                    }
                } else {
                    let parent = pick(&mut rng, &mut corpus);
                    parent.picked += 1;
                    let p = parent.input.clone();
                    mutate(&mut rng, &p, &fams)
                }
            })
            .collect();
        let results = run_batch(&inputs, opts.jobs, |inp| {
            World::new(inp.sc.clone(), inp.seed, TraceMode::Off)
                .with_coverage()
                .run()
                .0
        });
        for (inp, r) in inputs.into_iter().zip(results) {
            done += 1;
            let new = r.coverage.as_deref().map_or(0, |m| global.merge(m));
            if let Some(v) = &r.violation {
                // A known hazard (`[[expect.known]]`) of the perturbed scenario: its seed is
                // clean with the hazard's fix on. Reported as known; it does not stop
                // --until-failure, as in `fuzz`.
                let known = campaign::known_hazard(&inp.sc, inp.seed, v, &|s, n, m| {
                    World::new(s.clone(), n, m).run().0
                });
                let is_known = known.is_some();
                rep.failures.push(Found {
                    at: done,
                    seed: inp.seed,
                    failure: Failure {
                        seed: inp.seed,
                        kind: FailureKind::Violation,
                        invariant: v.invariant,
                        t_us: v.t.0,
                        detail: v.detail.clone(),
                        known,
                    },
                    scenario: materialise(&inp.sc, inp.seed),
                    mutations: inp.mutations.clone(),
                });
                if opts.until_failure && !is_known {
                    if new > 0 {
                        rep.last_new_at = done;
                    }
                    break 'gens;
                }
            }
            if new > 0 {
                rep.last_new_at = done;
                corpus.push(Entry {
                    input: inp,
                    new_features: new,
                    picked: 0,
                });
            }
        }
        rep.growth.push((done, global.count()));
        progress(done);
    }
    rep.schedules = done;
    rep.features = global.count();
    rep.corpus = corpus.len();
    rep
}

/// Write a found failure as a scenario file in `dir` (named after the source scenario and the
/// seed), its description saying where it came from and how to replay it. Returns the path.
pub fn write_found(dir: &Path, source: &Path, base: &str, f: &Found) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut sc = f.scenario.clone();
    sc.name = format!("{base}-guided-seed{}", f.seed);
    let path = dir.join(format!("{}.toml", sc.name));
    let how = if f.mutations.is_empty() {
        "a fresh seed, no perturbation".to_string()
    } else {
        f.mutations.join("; ")
    };
    sc.description = format!(
        "Found by `shardsim fuzz --guided` from {} after {} schedules ({how}): {} at t={}. \
         Replay: {}",
        source.display(),
        f.at,
        f.failure.invariant,
        crate::shrink::secs(f.failure.t_us),
        crate::campaign::replay_command(&path, f.seed)
    );
    sc.expect.outcome = f.failure.invariant;
    sc.expect.rate = None;
    crate::shrink::write_scenario(&path, &sc)?;
    Ok(path)
}
