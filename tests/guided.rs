//! Behaviour coverage and `fuzz --guided`: coverage changes no schedule
//! and grows over a campaign; a guided campaign is the same for any number of jobs; its
//! failures are written as scenario files that `run` replays and `shrink` shrinks; a scenario
//! with nothing to perturb runs seed-only.

mod common;
use common::*;
use shardsim::campaign::run_seed;
use shardsim::coverage;
use shardsim::guided::{self, GuidedOptions};
use shardsim::shrink::{self, ShrinkOptions};
use shardsim_harness::scenario::{Outcome, Scenario};
use shardsim_harness::sim::World;
use shardsim_harness::trace::TraceMode;
use std::path::Path;
use std::sync::Arc;

fn smoke() -> Arc<Scenario> {
    common::load("sim-scenarios/smoke.toml")
}

fn opts(seed_start: u64, schedules: u64, jobs: usize, until_failure: bool) -> GuidedOptions {
    GuidedOptions {
        seed_start,
        schedules,
        jobs,
        until_failure,
        batch: 16,
    }
}

#[test]
fn coverage_changes_no_schedule_and_grows() {
    let sc = smoke();
    for seed in 0..3 {
        let (plain, _) = run_seed(&sc, seed, TraceMode::Hash);
        let (cov, _) = World::new(sc.clone(), seed, TraceMode::Hash)
            .with_coverage()
            .run();
        assert_eq!(plain.trace_hash, cov.trace_hash, "seed {seed}");
        assert_eq!(plain.stats, cov.stats);
        assert!(plain.coverage.is_none());
        assert!(cov.coverage.unwrap().count() > 50);
    }
    let one = coverage::campaign(&sc, 0, 1, 1, &|_| {});
    let many = coverage::campaign(&sc, 0, 24, 2, &|_| {});
    assert!(
        many.features > one.features,
        "{} {}",
        many.features,
        one.features
    );
    assert!(many.last_new_at > 1);
    assert_eq!(
        many,
        coverage::campaign(&sc, 0, 24, 1, &|_| {}),
        "independent of jobs"
    );
}

#[test]
fn a_guided_campaign_is_the_same_for_any_number_of_jobs() {
    let sc = smoke();
    let a = guided::guided(&sc, opts(5, 48, 1, false), &|_| {});
    let b = guided::guided(&sc, opts(5, 48, 2, false), &|_| {});
    assert_eq!(a.schedules, 48);
    assert_eq!(
        (a.features, a.corpus, a.last_new_at, &a.growth),
        (b.features, b.corpus, b.last_new_at, &b.growth)
    );
    let seeds = |r: &guided::GuidedReport| r.failures.iter().map(|f| f.seed).collect::<Vec<_>>();
    assert_eq!(seeds(&a), seeds(&b));
    assert!(a.corpus > 1, "inputs with new coverage are kept");
    assert_eq!(a.families, vec!["delays", "focus"]);
    // Another --seed-start is another campaign.
    let c = guided::guided(&sc, opts(6, 48, 1, false), &|_| {});
    assert_ne!(a.growth, c.growth);
}

#[test]
fn a_failure_is_written_replayed_and_shrunk() {
    // fast-reorder with the swarm's faults and delays: the failing input's perturbations (the
    // drawn plan, any edits) must all be in the file.
    let mut base = data_scenario("fast-reorder.toml");
    base.swarm.enabled = true;
    base.swarm.delays = true;
    base.swarm.start_ms = 1_000;
    base.swarm.kinds = vec![shardsim_harness::scenario::FaultKind::Pause];
    let sc = Arc::new(base);
    let rep = guided::guided(&sc, opts(0, 64, 2, true), &|_| {});
    let f = rep
        .failures
        .first()
        .expect("fast-reorder fails within 64 inputs");
    assert_eq!(f.failure.invariant, Outcome::PerSenderOrder);
    assert_eq!(rep.failures.len(), 1, "until-failure keeps the first");
    let dir = tmp("guided-failure");
    let path =
        guided::write_found(&dir, Path::new("fast-reorder.toml"), "fast-reorder", f).unwrap();
    let written = Scenario::load(&path).unwrap();
    assert!(!written.swarm.enabled, "perturbations explicit");
    assert!(
        !written.delays.is_empty(),
        "the drawn delays are written out"
    );
    assert_eq!(written.expect.outcome, Outcome::PerSenderOrder);
    let (again, _) = run_seed(&Arc::new(written.clone()), f.seed, TraceMode::Off);
    let v = again.violation.expect("the file replays the failure");
    assert_eq!((v.invariant, v.t.0), (f.failure.invariant, f.failure.t_us));
    // The command line replays it too, and shrink shrinks it.
    let p = path.to_str().unwrap();
    let seed = f.seed.to_string();
    let (code, out, err) = shardsim(&["run", p, "--seed", &seed]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("per-sender-order"), "{out}");
    let s = shrink::shrink(
        &written,
        f.seed,
        ShrinkOptions {
            max_runs: 40,
            seed_tries: 0,
        },
    )
    .unwrap();
    assert_eq!(s.failure.invariant, Outcome::PerSenderOrder);
}

#[test]
fn the_command_line_writes_what_it_finds_and_runs_seed_only_when_nothing_can_change() {
    let dir = tmp("guided-cli");
    let d = dir.to_str().unwrap();
    let file = root().join("tests/data/fast-reorder.toml");
    let f = file.to_str().unwrap();
    let args = [
        "fuzz",
        f,
        "--guided",
        "--until-failure",
        "--schedules",
        "64",
        "--jobs",
        "2",
    ];
    let (code, out, err) = shardsim(&[&args[..], &["--quiet", "--guided-out", d]].concat());
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("until-failure: first failure after"), "{out}");
    let written = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("written to "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(Scenario::load(Path::new(written)).is_ok());
    // One node, one entity, no faults: nothing to perturb, the campaign still runs.
    let one = dir.join("one.toml");
    std::fs::write(
        &one,
        "name = \"one\"\n[cluster]\nnodes = 1\n[entities]\ncount = 1\nshards = 1\n[run]\nduration-ms = 2000\n",
    )
    .unwrap();
    let o = one.to_str().unwrap();
    let (code, out, err) = shardsim(&[
        "fuzz",
        o,
        "--guided",
        "--schedules",
        "20",
        "--quiet",
        "--guided-out",
        d,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("seed-only"), "{out}");
    assert!(out.contains("guided one: 20 schedules"), "{out}");
    let (code, out, err) = shardsim(&["fuzz", o, "--coverage", "--schedules", "20", "--quiet"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("features reached"), "{out}");
}
