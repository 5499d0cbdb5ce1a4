//! Shrinking: a failing seed of a scenario becomes a minimal scenario that, run with the same
//! seed (or, with seed freedom, a nearby one), still breaks the same invariant.
//!
//! proptest shrinks only values it generated itself (it walks its own value trees); it cannot
//! start from a scenario file and a seed given from outside. So this is a hand-written greedy
//! reducer in the delta-debugging style, with the same contract as proptest's shrinking: a
//! reduction is kept only if the replay still fails, and with the same invariant. (Generated
//! scenarios, shrunk by proptest itself, are in [`crate::gen`] and `tests/shrink.rs`.)
//!
//! The steps:
//!
//! 1. **Materialise** the fault plan ([`shardsim_harness::sim::swarm::plan`], the world's) into the explicit
//!    `faults` list, and turn the swarm off. The plan is then
//!    explicit, and this is checked: the materialised scenario must fail exactly as the
//!    original (same invariant, same simulated time).
//! 2. **Reduce**, in rounds until nothing changes (a fixed point) or the replay budget
//!    ([`ShrinkOptions::max_runs`]) is spent:
//!    - end the run just after the violation of the current best, dropping faults that would
//!      only fire after it, and turn the liveness phase off when the target is not liveness;
//!    - remove faults: ddmin (Zeller), chunks of half the list, then quarters, down to single
//!      faults;
//!    - fewer nodes: drop a node no remaining fault names (it is taken out of partition sides
//!      when both sides stay non-empty), highest first; the nodes above it are renumbered;
//!    - fewer entities, shards and senders per node, an earlier workload `stop-ms` and a smaller
//!      `focus` (entities per sender), each by binary search (smallest value that still
//!      fails); then a sparser workload, the send interval doubled while it still fails;
//!    - shorter faults: pauses shortened, heals and restarts moved closer to the fault before
//!      them, and the whole plan shifted earlier.
//!
//! **Seed freedom** ([`ShrinkOptions::seed_tries`], `--seed-tries K`). A failure that no fault
//! causes (a race in the protocol, such as the §11.3 reorder) depends on the exact network and
//! workload draws, and almost any reduction (one entity or node less) changes every draw after
//! it, so with one fixed seed little besides the end time shrinks. With seed freedom, a
//! candidate that does not fail with the current seed is tried with the next K seeds as well,
//! and kept, with its new seed, if one of them breaks the same invariant. The result is then a
//! smaller scenario with its own seed (written in its replay command); what it shows is the
//! same bug, not the same schedule. The default, 0, keeps the original seed.
//!
//! Every replay runs with trace mode off. Same scenario, seed, budget and seed tries: same
//! result, since the replays are deterministic and the reducer is sequential.

use crate::campaign::{self, Failure, FailureKind};
use shardsim_core::ids::NodeId;
use shardsim_harness::fault::{Fault, TimedFault};
use shardsim_harness::scenario::{FaultSpec, Outcome, Scenario};
use shardsim_harness::trace::TraceMode;
use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// Options of [`shrink`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShrinkOptions {
    /// At most this many replays (the original run and the materialisation check included).
    pub max_runs: u64,
    /// Seed freedom: a candidate that no longer fails with the current seed is also tried with
    /// the next `seed_tries` seeds (current + 1, + 2, ...), and kept with the first that fails.
    /// 0 (the default) keeps the original seed throughout.
    pub seed_tries: u64,
}

/// The default replay budget.
pub const DEFAULT_MAX_RUNS: u64 = 2_000;

impl Default for ShrinkOptions {
    fn default() -> Self {
        ShrinkOptions {
            max_runs: DEFAULT_MAX_RUNS,
            seed_tries: 0,
        }
    }
}

/// The size of a plan, before and after shrinking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Nodes in the plan's cluster (`cluster.nodes`).
    pub nodes: u32,
    /// Explicit fault entries (heals and restarts included).
    pub faults: usize,
    /// Of those, the ones at or before the violation.
    pub faults_before_violation: usize,
    /// `run.duration-ms`.
    pub end_ms: u64,
    /// `entities.count`.
    pub entities: u32,
    /// `entities.shards`.
    pub shards: u32,
    /// `workload.senders-per-node`.
    pub senders_per_node: u32,
    /// `workload.stop-ms`.
    pub stop_ms: u64,
    /// `workload.interval-ms`.
    pub interval_ms: [u64; 2],
    /// `workload.focus` (0: every entity).
    pub focus: u32,
    /// Messages the workload sent before the violation (the run stops there).
    pub messages: u64,
}

impl Shape {
    fn of(sc: &Scenario, violation_us: u64, messages: u64) -> Shape {
        Shape {
            nodes: sc.cluster.nodes,
            faults: sc.faults.len(),
            faults_before_violation: sc
                .faults
                .iter()
                .filter(|f| f.at_ms.saturating_mul(1000) <= violation_us)
                .count(),
            end_ms: sc.run.duration_ms,
            entities: sc.entities.count,
            shards: sc.entities.shards,
            senders_per_node: sc.workload.senders_per_node,
            stop_ms: sc.workload.stop_ms,
            interval_ms: sc.workload.interval_ms,
            focus: sc.workload.focus,
            messages,
        }
    }
}

/// A shrunk schedule.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The minimal scenario: swarm off, explicit faults, named `<orig>-shrunk-seed<N>`, expecting
    /// the invariant. Its description is set by [`describe`].
    pub scenario: Scenario,
    /// The seed the minimal scenario fails with: the original one (`original.seed`) unless
    /// [`ShrinkOptions::seed_tries`] let a reduction move to another.
    pub seed: u64,
    /// How the original scenario failed.
    pub original: Failure,
    /// How the shrunk one fails (same invariant).
    pub failure: Failure,
    /// The materialised original plan.
    pub before: Shape,
    /// The shrunk plan.
    pub after: Shape,
    /// Replays run, the original run included.
    pub runs: u64,
    /// The reductions kept, one line per pass that changed something.
    pub steps: Vec<String>,
    /// The budget ran out before a fixed point.
    pub budget_exhausted: bool,
}

/// Why a seed could not be shrunk.
#[derive(Clone, Debug, PartialEq)]
pub enum ShrinkError {
    /// The seed breaks no invariant: nothing to shrink.
    NoFailure {
        /// The seed, which ran to its end without breaking an invariant.
        seed: u64,
        /// Simulated time at which the run ended, µs.
        end_us: u64,
    },
    /// The scenario with the swarm draw written out explicitly does not fail as the original
    /// (a bug in the materialisation; the original failure is reported as is).
    NotReproduced {
        /// The original failure.
        original: Box<Failure>,
        /// What the materialised scenario did instead (`None`: no violation).
        got: Option<Box<Failure>>,
    },
    /// A budget too small to run the seed twice.
    Budget,
}

impl fmt::Display for ShrinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShrinkError::NoFailure { seed, end_us } => write!(
                f,
                "seed {seed} does not fail (no invariant broken by the end, t={}): nothing to shrink",
                secs(*end_us)
            ),
            ShrinkError::NotReproduced { original, got } => write!(
                f,
                "the swarm plan written out explicitly does not reproduce {} at t={} (got {})",
                original.label(),
                secs(original.t_us),
                got.as_ref()
                    .map(|g| format!("{} at t={}", g.label(), secs(g.t_us)))
                    .unwrap_or_else(|| "no violation".into())
            ),
            ShrinkError::Budget => write!(f, "--max-runs must be at least 2"),
        }
    }
}

impl std::error::Error for ShrinkError {}

/// `12.345678s`.
pub fn secs(t_us: u64) -> String {
    format!("{}.{:06}s", t_us / 1_000_000, t_us % 1_000_000)
}

/// Run one seed with trace mode off: its violation as a [`Failure`], if any; and the end, µs.
pub fn run_failure(sc: &Scenario, seed: u64) -> (Option<Failure>, u64) {
    let (f, end, _) = replay(sc, seed);
    (f, end)
}

/// [`run_failure`], and the number of messages the workload sent.
fn replay(sc: &Scenario, seed: u64) -> (Option<Failure>, u64, u64) {
    let (r, _) = campaign::run_seed(&Arc::new(sc.clone()), seed, TraceMode::Off);
    let f = r.violation.as_ref().map(|v| Failure {
        seed,
        kind: FailureKind::Violation,
        invariant: v.invariant,
        t_us: v.t.0,
        detail: v.detail.clone(),
        known: None,
    });
    (f, r.end.0, r.stats.sends)
}

pub use shardsim_harness::sim::swarm::materialise;

/// The name of a shrunk scenario.
pub fn shrunk_name(original: &str, seed: u64) -> String {
    format!("{original}-shrunk-seed{seed}")
}

/// Shrink `seed` of `sc`. Fails if the seed does not fail.
pub fn shrink(sc: &Scenario, seed: u64, opts: ShrinkOptions) -> Result<Shrunk, ShrinkError> {
    shrink_observed(sc, seed, opts, &|_, _| {})
}

/// [`shrink`], calling `progress(replays so far, reductions kept so far)` after every replay
/// (the command line's progress bar).
pub fn shrink_observed(
    sc: &Scenario,
    seed: u64,
    opts: ShrinkOptions,
    progress: &dyn Fn(u64, u64),
) -> Result<Shrunk, ShrinkError> {
    if opts.max_runs < 2 {
        return Err(ShrinkError::Budget);
    }
    let (original, end_us) = run_failure(sc, seed);
    let Some(original) = original else {
        return Err(ShrinkError::NoFailure { seed, end_us });
    };
    let explicit = materialise(sc, seed);
    let (got, _, sends) = replay(&explicit, seed);
    if got
        .as_ref()
        .is_none_or(|g| (g.invariant, g.t_us) != (original.invariant, original.t_us))
    {
        return Err(ShrinkError::NotReproduced {
            original: Box::new(original),
            got: got.map(Box::new),
        });
    }
    let before = Shape::of(&explicit, original.t_us, sends);
    let mut r = Reducer {
        seed,
        seed_tries: opts.seed_tries,
        target: original.invariant,
        max_runs: opts.max_runs,
        runs: 2,
        exhausted: false,
        best: explicit,
        best_fail: original.clone(),
        best_sends: sends,
        rejected: BTreeSet::new(),
        steps: Vec::new(),
        kept: 0,
        progress,
    };
    progress(r.runs, 0);
    loop {
        let start = r.best.clone();
        r.pass_end();
        r.pass_faults();
        r.pass_delays();
        r.pass_nodes();
        r.pass_population();
        r.pass_durations();
        r.pass_shift();
        if r.best == start || r.exhausted {
            break;
        }
    }
    // A last truncation, for the violation time of the final plan.
    r.pass_end();
    let mut scenario = r.best;
    scenario.name = shrunk_name(&sc.name, seed);
    scenario.expect.outcome = original.invariant;
    scenario.expect.rate = None; // the original's failure rate says nothing of this schedule
    let after = Shape::of(&scenario, r.best_fail.t_us, r.best_sends);
    Ok(Shrunk {
        scenario,
        seed: r.seed,
        original,
        failure: r.best_fail,
        before,
        after,
        runs: r.runs,
        steps: r.steps,
        budget_exhausted: r.exhausted,
    })
}

struct Reducer<'a> {
    /// The seed of the current best (it moves only with seed freedom).
    seed: u64,
    seed_tries: u64,
    target: Outcome,
    max_runs: u64,
    runs: u64,
    exhausted: bool,
    best: Scenario,
    best_fail: Failure,
    /// Messages sent in the best's failing run.
    best_sends: u64,
    /// Candidates already run that did not fail as wanted (JSON): never run twice.
    rejected: BTreeSet<String>,
    steps: Vec<String>,
    /// Candidates kept so far (for progress).
    kept: u64,
    progress: &'a dyn Fn(u64, u64),
}

impl Reducer<'_> {
    /// Replay `cand`; keep it as the best if it fails with the target invariant, with the
    /// current seed or (seed freedom) one of the next `seed_tries`.
    fn accept(&mut self, cand: Scenario) -> bool {
        if cand == self.best || cand.validate().is_err() {
            return false;
        }
        let key = format!(
            "{} {}",
            self.seed,
            serde_json::to_string(&cand).unwrap_or_default()
        );
        if self.rejected.contains(&key) {
            return false;
        }
        for i in 0..=self.seed_tries {
            if self.runs >= self.max_runs {
                self.exhausted = true;
                return false;
            }
            self.runs += 1;
            let seed = self.seed.wrapping_add(i);
            let outcome = replay(&cand, seed);
            let kept = matches!(&outcome.0, Some(f) if f.invariant == self.target);
            self.kept += u64::from(kept);
            (self.progress)(self.runs, self.kept);
            match outcome {
                (Some(f), _, sends) if f.invariant == self.target => {
                    self.best = cand;
                    self.best_fail = f;
                    self.best_sends = sends;
                    self.seed = seed;
                    return true;
                }
                _ => {}
            }
        }
        self.rejected.insert(key);
        false
    }

    /// Smallest `x` in `lo..=cur` (found by binary search, first trying `lo`) for which
    /// `make(best, x)` still fails; the best is updated along the way.
    fn min_value(&mut self, lo: u64, cur: u64, make: impl Fn(&Scenario, u64) -> Scenario) -> bool {
        if lo >= cur {
            return false;
        }
        if self.accept(make(&self.best, lo)) {
            return true;
        }
        let (mut lo, mut hi) = (lo + 1, cur);
        let mut changed = false;
        while lo < hi && !self.exhausted {
            let mid = lo + (hi - lo) / 2;
            if self.accept(make(&self.best, mid)) {
                hi = mid;
                changed = true;
            } else {
                lo = mid + 1;
            }
        }
        changed
    }

    fn step(&mut self, what: String) {
        self.steps.push(what);
    }

    /// End just after the violation; faults after it never fire.
    fn pass_end(&mut self) {
        let before = (self.best.run.duration_ms, self.best.faults.len());
        if self.target == Outcome::Liveness {
            // Liveness is judged at the end: search the shortest run that still fails.
            let lo = self.best.liveness.quiet_ms + 1;
            let cur = self.best.run.duration_ms;
            self.min_value(lo, cur, |b, x| {
                let mut c = b.clone();
                c.run.duration_ms = x;
                c
            });
        } else {
            let end = self.best_fail.t_us / 1000 + 1;
            let mut c = self.best.clone();
            c.run.duration_ms = end.min(c.run.duration_ms);
            c.workload.stop_ms = c.workload.stop_ms.min(c.run.duration_ms);
            c.faults.retain(|f| f.at_ms < c.run.duration_ms);
            c.liveness.enabled = false;
            if !self.accept(c.clone()) && self.best.liveness.enabled {
                // The liveness phase mattered (it heals and restarts): keep it, but move it no
                // earlier than it was.
                let mut c2 = self.best.clone();
                c2.run.duration_ms = (end + self.best.liveness.quiet_ms).min(c2.run.duration_ms);
                c2.faults.retain(|f| f.at_ms < c2.run.duration_ms);
                self.accept(c2);
            }
        }
        let after = (self.best.run.duration_ms, self.best.faults.len());
        if after != before {
            let mut line = format!("end {} → {} ms", before.0, after.0);
            if after.1 != before.1 {
                line += &format!(
                    " ({} → {} faults: the rest come after the violation)",
                    before.1, after.1
                );
            }
            self.step(line);
        }
    }

    /// ddmin over the fault list: remove chunks of 1/2, 1/4, ... down to single faults.
    fn pass_faults(&mut self) {
        let before = self.best.faults.len();
        let mut n = 2usize;
        while !self.best.faults.is_empty() && !self.exhausted {
            let len = self.best.faults.len();
            let chunk = len.div_ceil(n);
            let mut removed = false;
            let mut i = 0;
            while i < len {
                let mut c = self.best.clone();
                c.faults.drain(i..(i + chunk).min(len));
                if self.accept(c) {
                    removed = true;
                    break;
                }
                i += chunk;
            }
            if removed {
                n = n.saturating_sub(1).max(2);
            } else if n >= len {
                break;
            } else {
                n = (n * 2).min(len);
            }
        }
        let after = self.best.faults.len();
        if after != before {
            self.step(format!("faults {before} → {after} (ddmin)"));
        }
    }

    /// Remove targeted delays (`[[delays]]`), one at a time, last first; then drop the ones
    /// whose window opens after the run's end.
    fn pass_delays(&mut self) {
        let before = self.best.delays.len();
        let end = self.best.run.duration_ms;
        if self.best.delays.iter().any(|d| d.at_ms >= end) {
            let mut c = self.best.clone();
            c.delays.retain(|d| d.at_ms < end);
            self.accept(c);
        }
        let mut i = self.best.delays.len();
        while i > 0 && !self.exhausted {
            i -= 1;
            let mut c = self.best.clone();
            c.delays.remove(i);
            self.accept(c);
        }
        let after = self.best.delays.len();
        if after != before {
            self.step(format!("delays {before} → {after}"));
        }
    }

    /// Drop nodes no fault names, highest first; the nodes above a dropped one are renumbered
    /// one down (in faults, join times and proxy nodes).
    fn pass_nodes(&mut self) {
        let before = self.best.cluster.nodes;
        let mut k = self.best.cluster.nodes;
        while k > 0 && self.best.cluster.nodes > 1 && !self.exhausted {
            k -= 1;
            if let Some(c) = without_node(&self.best, k) {
                if self.accept(c) {
                    k = self.best.cluster.nodes;
                }
            }
        }
        let after = self.best.cluster.nodes;
        if after != before {
            self.step(format!("nodes {before} → {after}"));
        }
    }

    /// Fewer entities, shards and senders; the workload stops earlier.
    fn pass_population(&mut self) {
        let b = self.best.clone();
        let cur = u64::from(b.entities.count);
        self.min_value(1, cur, |s, x| {
            let mut c = s.clone();
            c.entities.count = x as u32;
            c
        });
        let cur = u64::from(self.best.entities.shards);
        self.min_value(1, cur, |s, x| {
            let mut c = s.clone();
            c.entities.shards = x as u32;
            c
        });
        let cur = u64::from(self.best.workload.senders_per_node);
        self.min_value(1, cur, |s, x| {
            let mut c = s.clone();
            c.workload.senders_per_node = x as u32;
            c
        });
        let (lo, cur) = (self.best.workload.start_ms, self.best.workload.stop_ms);
        self.min_value(lo, cur, |s, x| {
            let mut c = s.clone();
            c.workload.stop_ms = x;
            c
        });
        // Each sender addresses fewer entities (focus 0 is all of them).
        let all = u64::from(self.best.entities.count);
        let cur = match self.best.workload.focus {
            0 => all,
            f => u64::from(f).min(all),
        };
        self.min_value(1, cur, |s, x| {
            let mut c = s.clone();
            c.workload.focus = x as u32;
            c
        });
        // A sparser workload: the send interval doubled while the failure stays (fewer
        // messages for the same schedule length), up to a second between sends.
        while !self.exhausted && self.best.workload.interval_ms[0] < 1_000 {
            let mut c = self.best.clone();
            let [lo, hi] = c.workload.interval_ms;
            c.workload.interval_ms = [(lo * 2).max(1), (hi * 2).max(1)];
            if !self.accept(c) {
                break;
            }
        }
        let a = &self.best;
        let mut parts = Vec::new();
        let (bw, aw) = (&b.workload, &a.workload);
        let focus_before = if bw.focus == 0 {
            b.entities.count
        } else {
            bw.focus
        };
        let n = |x: u32| x.to_string();
        // (changed, what, before, after, unit)
        let changes = [
            (
                a.entities.count != b.entities.count,
                "entities",
                n(b.entities.count),
                n(a.entities.count),
                "",
            ),
            (
                a.entities.shards != b.entities.shards,
                "shards",
                n(b.entities.shards),
                n(a.entities.shards),
                "",
            ),
            (
                aw.senders_per_node != bw.senders_per_node,
                "senders per node",
                n(bw.senders_per_node),
                n(aw.senders_per_node),
                "",
            ),
            (
                aw.focus != bw.focus,
                "focus",
                n(focus_before),
                n(aw.focus),
                " entities per sender",
            ),
            (
                aw.interval_ms != bw.interval_ms,
                "send interval",
                format!("{:?}", bw.interval_ms),
                format!("{:?}", aw.interval_ms),
                " ms",
            ),
            (
                aw.stop_ms != bw.stop_ms,
                "workload stop",
                bw.stop_ms.to_string(),
                aw.stop_ms.to_string(),
                " ms",
            ),
        ];
        for (changed, what, before, after, unit) in changes {
            if changed {
                parts.push(format!("{what} {before} → {after}{unit}"));
            }
        }
        if !parts.is_empty() {
            let line = parts.join(", ");
            self.step(line);
        }
    }

    /// Shorter pauses; heals, restarts and journal recoveries closer to the fault before them.
    fn pass_durations(&mut self) {
        let b = self.best.faults.clone();
        for i in 0..self.best.faults.len() {
            if self.exhausted {
                break;
            }
            let Ok(TimedFault { at_ms, fault }) = TimedFault::try_from(&self.best.faults[i]) else {
                continue;
            };
            match fault {
                Fault::Pause { node, duration_ms } => {
                    self.min_value(1, duration_ms, |s, x| {
                        let mut c = s.clone();
                        let fault = Fault::Pause {
                            node,
                            duration_ms: x,
                        };
                        c.faults[i] = FaultSpec::from(&TimedFault { at_ms, fault });
                        c
                    });
                }
                Fault::Heal | Fault::Restart { .. } | Fault::JournalAvailable => {
                    let lo = if i == 0 {
                        0
                    } else {
                        self.best.faults[i - 1].at_ms
                    };
                    self.min_value(lo, at_ms, |s, x| {
                        let mut c = s.clone();
                        c.faults[i].at_ms = x;
                        c
                    });
                }
                Fault::Partition { .. }
                | Fault::Isolate { .. }
                | Fault::OneWay { .. }
                | Fault::Bridge { .. }
                | Fault::Crash { .. }
                | Fault::Down { .. }
                | Fault::Leave { .. }
                | Fault::JournalUnavailable
                | Fault::JournalSlow { .. }
                | Fault::JournalFailing => {}
            }
        }
        let changed = b
            .iter()
            .zip(&self.best.faults)
            .filter(|(x, y)| x != y)
            .count();
        if changed > 0 {
            self.step(format!("faults shortened or moved earlier: {changed}"));
        }
    }

    /// Shift the whole plan earlier.
    fn pass_shift(&mut self) {
        let Some(first) = self.best.faults.first().map(|f| f.at_ms) else {
            return;
        };
        if self.min_value(0, first, |s, x| {
            let mut c = s.clone();
            let by = c.faults.first().map_or(0, |f| f.at_ms.saturating_sub(x));
            for f in &mut c.faults {
                f.at_ms -= by;
            }
            c
        }) {
            let now = self.best.faults.first().map(|f| f.at_ms).unwrap_or(0);
            self.step(format!("plan shifted {} ms earlier", first - now));
        }
    }
}

/// `sc` without node `k`: the nodes above it are renumbered one down; `None` if a fault names
/// it (other than on a partition side that stays non-empty without it; see
/// [`Fault::renumber_without`]).
fn without_node(sc: &Scenario, k: u32) -> Option<Scenario> {
    let map = |x: u32| if x > k { x - 1 } else { x };
    let mut c = sc.clone();
    c.faults = sc
        .faults
        .iter()
        .map(|f| {
            let t = TimedFault::try_from(f).ok()?;
            let fault = t.fault.renumber_without(NodeId(k))?;
            Some(FaultSpec::from(&TimedFault {
                at_ms: t.at_ms,
                fault,
            }))
        })
        .collect::<Option<Vec<_>>>()?;
    // A delay of the node's own messages goes with it; the nodes above are renumbered.
    if sc
        .delays
        .iter()
        .any(|d| d.from == Some(k) || d.to == Some(k))
    {
        return None;
    }
    for d in &mut c.delays {
        d.from = d.from.map(map);
        d.to = d.to.map(map);
    }
    c.cluster.nodes -= 1;
    if (k as usize) < c.cluster.join_at_ms.len() {
        c.cluster.join_at_ms.remove(k as usize);
    }
    c.cluster.proxy_nodes.retain(|p| *p != k);
    c.cluster.proxy_nodes.iter_mut().for_each(|x| *x = map(*x));
    if (k as usize) < c.cluster.app_version.len() {
        c.cluster.app_version.remove(k as usize);
    }
    if (k as usize) < c.cluster.roles.len() {
        c.cluster.roles.remove(k as usize);
    }
    // A node fewer may leave the sharding role without a node, or min-nr-of-members above
    // the nodes that host shards.
    if (c.settings.role.is_some() || c.settings.min_nr_of_members > 1) && c.check_roles().is_some()
    {
        return None;
    }
    Some(c)
}

/// The description of a shrunk scenario: where it came from, the reduction, and the replay
/// command for the file at `out`.
pub fn describe(s: &Shrunk, source: &Path, out: &Path) -> String {
    let (b, a) = (&s.before, &s.after);
    let n = |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
    format!(
        "Shrunk by `shardsim shrink` ({} replays) from {} seed {}, which breaks {} at t={} with \
{} in its plan ({} before the violation), {} nodes, {} ms, {} messages. Here: {}, {} nodes, {} \
ms, {}, {}, {} per node, {} messages; {} at t={}{}. Replay: {}",
        s.runs,
        source.display(),
        s.original.seed,
        s.original.invariant,
        secs(s.original.t_us),
        n(b.faults, "fault", "faults"),
        b.faults_before_violation,
        b.nodes,
        b.end_ms,
        b.messages,
        n(a.faults, "fault", "faults"),
        a.nodes,
        a.end_ms,
        n(a.entities as usize, "entity", "entities"),
        n(a.shards as usize, "shard", "shards"),
        n(a.senders_per_node as usize, "sender", "senders"),
        a.messages,
        s.failure.invariant,
        secs(s.failure.t_us),
        if s.seed == s.original.seed {
            String::new()
        } else {
            format!(" with seed {} (seed freedom)", s.seed)
        },
        campaign::replay_command(out, s.seed)
    )
}

/// Write `sc` to `path` as TOML, atomically, after checking that the text parses back to an
/// equal scenario. Returns the text.
pub fn write_scenario(path: &Path, sc: &Scenario) -> Result<String, String> {
    let text = sc
        .to_toml()
        .map_err(|e| format!("{}: cannot serialise the scenario: {e}", path.display()))?;
    match Scenario::parse(&text, path) {
        Ok(back) if back == *sc => {}
        Ok(_) => {
            return Err(format!(
                "{}: the written scenario would not read back equal",
                path.display()
            ))
        }
        Err(e) => return Err(format!("the written scenario would not parse: {e}")),
    }
    campaign::write_atomic(path, text.as_bytes())
        .map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
    Ok(text)
}
