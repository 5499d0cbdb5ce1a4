//! The madsim host: the same `Node` on madsim, judged by the same checker.
//!
//! `#[madsim::test]` tests honour madsim's `MADSIM_TEST_SEED` (default: the wall clock, printed
//! on failure), `MADSIM_TEST_NUM` (seeds from it) and `MADSIM_TEST_CHECK_DETERMINISM`; the plain
//! tests loop over fixed seeds with `Runtime::with_seed_and_config`. The agreement with the own
//! world runs a subset here (the whole `cargo test` has a budget); `shardsim agree` runs the
//! full counts (200 seeds per clean file, up to 2,000 per violation), recorded in
//! reports/madsim-agreement.md.

#[cfg(not(madsim))]
compile_error!(
    "tests/madsim.rs needs `--cfg madsim`: the repository's .cargo/config.toml sets it, and a \
     RUSTFLAGS in the environment replaces that setting (add `--cfg madsim` to RUSTFLAGS)"
);

use madsim::runtime::{Handle, Runtime};
use shardsim_harness::host::{self, Host};
use shardsim_harness::scenario::{Outcome, Scenario};
use shardsim_harness::trace::TraceMode;
mod common;
use common::load;
use std::path::{Path, PathBuf};

fn path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sim-scenarios")
        .join(name)
}

fn run(name: &str, seed: u64) -> shardsim_harness::sim::RunResult {
    host::run_seed(Host::Madsim, &load(name), seed, TraceMode::Hash).0
}

/// A madsim test: the seed is madsim's (`MADSIM_TEST_SEED`); the smoke scenario is clean on it.
#[madsim::test]
async fn smoke_is_clean_on_the_madsim_seed() {
    let seed = Handle::current().seed();
    let (r, _) =
        shardsim_harness::host::madsim::supervise(load("smoke.toml"), seed, TraceMode::Hash).await;
    assert!(r.violation.is_none(), "seed {seed}: {:?}", r.violation);
    assert!(r.stats.deliveries > 0, "seed {seed}: {:?}", r.stats);
}

/// A madsim test with faults: the fault zoo (partitions, crashes, restarts, pauses, downing).
#[madsim::test]
async fn fault_zoo_on_the_madsim_seed() {
    let seed = Handle::current().seed();
    let sc = load("faults/fault-zoo.toml");
    let (r, _) = shardsim_harness::host::madsim::supervise(sc.clone(), seed, TraceMode::Hash).await;
    if let Some(v) = &r.violation {
        assert_eq!(v.invariant, sc.expect.outcome, "seed {seed}: {v}");
    }
    assert!(
        r.stats.faults > 0 && r.stats.deliveries > 0,
        "{:?}",
        r.stats
    );
}

/// madsim's own determinism check: the same seed run twice on fresh threads, every random
/// draw compared.
#[test]
fn madsim_check_determinism() {
    Runtime::check_determinism(7, madsim::Config::default(), || async {
        let seed = Handle::current().seed();
        let (r, _) = shardsim_harness::host::madsim::supervise(
            load("scale-out.toml"),
            seed,
            TraceMode::Hash,
        )
        .await;
        assert!(r.stats.deliveries > 0);
    });
}

/// Same seed, same trace, on the same thread and across threads.
#[test]
fn same_seed_same_trace() {
    let a = run("scale-out.toml", 3);
    let b = run("scale-out.toml", 3);
    let c = std::thread::spawn(|| run("scale-out.toml", 3))
        .join()
        .unwrap();
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(a.trace_hash, c.trace_hash);
    assert_eq!(a.stats, c.stats);
    assert_ne!(a.trace_hash, run("scale-out.toml", 4).trace_hash);
}

/// A failing madsim seed replays bit for bit: the first seed that breaks the hazard's
/// invariant gives the same trace hash twice (full trace and hashing alike).
#[test]
fn a_failing_madsim_seed_replays_bit_for_bit() {
    let name = "hazards/passivation-never-stops.toml";
    let sc = load(name);
    let seed = (0..200)
        .find(|s| run(name, *s).violation.is_some())
        .expect("a failing madsim seed within 200");
    let (a, ta) = host::run_seed(Host::Madsim, &sc, seed, TraceMode::Full);
    let (b, tb) = host::run_seed(Host::Madsim, &sc, seed, TraceMode::Full);
    let va = a.violation.expect("fails");
    assert_eq!(va.invariant, sc.expect.outcome);
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(ta.to_jsonl(), tb.to_jsonl());
    assert_eq!(Some(va.t), b.violation.map(|v| v.t));
    // The trace is the own schema: check-trace re-checks it to the same verdict.
    let again = shardsim_harness::check::recheck(&ta.to_jsonl()).expect("parses");
    assert_eq!(again.map(|v| v.invariant), Some(sc.expect.outcome));
}

/// A setting the host cannot express is bad input naming the field.
#[test]
fn unsupported_setting_names_the_field() {
    let p = path("hazards/reorder-across-handoff.toml");
    let sc = Scenario::load(&p).unwrap();
    let e = host::validate(Host::Madsim, &sc, &p).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("network.slow-probability"));
    assert!(e.line.is_some(), "{e}");
    assert!(host::validate(Host::Own, &sc, &p).is_ok());
}

/// The subset of the agreement run in `cargo test` (see the crate doc): clean files clean on
/// a few madsim seeds, violation files showing their invariant.
fn agree(name: &str, seeds: u64) {
    let sc = load(name);
    let expected = sc.expect.outcome;
    let mut found = None;
    for seed in 0..seeds {
        let r = run(name, seed);
        match (&r.violation, expected) {
            (None, _) => {}
            (Some(v), Outcome::None) => panic!("{name} seed {seed} on madsim: {v}"),
            (Some(v), e) if v.invariant == e => {
                found = Some(seed);
                break;
            }
            (Some(v), _) => panic!("{name} seed {seed} on madsim: unexpected {v}"),
        }
    }
    if expected != Outcome::None {
        assert!(
            found.is_some(),
            "{name}: no {expected} in {seeds} madsim seeds"
        );
    }
}

/// Clean files, among them the ones whose first madsim runs disagreed (host errors since fixed,
/// reports/madsim-agreement.md): partitions with keep-majority, a blackholed journal, graceful
/// leaves, the fault zoo's pause.
#[test]
fn agreement_clean_subset() {
    for name in [
        "smoke.toml",
        "two-nodes.toml",
        "scale-out.toml",
        "faults/crash-failover.toml",
        "faults/keep-majority-split.toml",
        "faults/journal-blackhole.toml",
        "faults/swarm-graceful.toml",
        "faults/fault-zoo.toml",
        "hazards/stale-host-shard-resend-fixed.toml",
    ] {
        agree(name, 5);
    }
}

/// Hazards of several invariants, each found within a few madsim seeds, among them the two
/// that need a message lost on a cut link (madsim's clogged channel delays it; the host loses
/// it as the own world does: reports/madsim-agreement.md).
#[test]
fn agreement_violation_subset() {
    for name in [
        "hazards/stale-host-shard-resend.toml",
        "specs/failure-passivate-after-network-fault.toml",
        "hazards/passivation-never-stops.toml",
        "hazards/coordinator-plain-majority.toml",
        "hazards/restart-before-terminated.toml",
        "hazards/two-leave-while-joining.toml",
        "hazards/coordinator-stops-before-local-region.toml",
        "faults/split-brain-journal.toml",
    ] {
        agree(name, 200);
    }
}

/// A partition loses what its cut links carry on madsim as in the own world (madsim's clogged
/// channel would hold it and deliver it after the heal): user messages are dropped with reason
/// `network`, and message conservation balances them (the run is clean).
#[test]
fn a_cut_link_loses_what_it_carries_as_in_the_own_world() {
    use shardsim_core::protocol::DropReason;
    let name = "faults/keep-majority-split.toml";
    let sc = load(name);
    let network = |r: &shardsim_harness::sim::RunResult| {
        r.stats
            .drops_by_reason
            .get(&DropReason::Network)
            .copied()
            .unwrap_or(0)
    };
    let mad = run(name, 0);
    let own = host::run_seed(Host::Own, &sc, 0, TraceMode::Hash).0;
    assert!(mad.violation.is_none(), "{:?}", mad.violation);
    assert!(network(&mad) > 0, "madsim: {:?}", mad.stats);
    assert!(network(&own) > 0, "own: {:?}", own.stats);
}
