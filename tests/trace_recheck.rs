//! Each trace can be re-checked from the file alone, and reaches the live verdict: the same
//! invariant, at the same time, with the same detail.

mod common;

use shardsim::campaign::run_seed;
use shardsim_core::protocol::settings::Mutation;
use shardsim_harness::check::{recheck, Violation};
use shardsim_harness::scenario::{Outcome, Scenario};
use shardsim_harness::trace::{read_line, Line, TraceMode, Tracer};
use std::sync::Arc;

fn verdict(v: &Option<Violation>) -> Option<(Outcome, u64, &str)> {
    v.as_ref().map(|v| (v.invariant, v.t.0, v.detail.as_str()))
}

/// Run every seed with a full trace and re-check the trace text; returns how many violated.
fn live_and_file_agree(sc: Scenario, seeds: std::ops::Range<u64>) -> usize {
    let name = sc.name.clone();
    let sc = Arc::new(sc);
    let mut violations = 0;
    for seed in seeds {
        let (r, tracer) = run_seed(&sc, seed, TraceMode::Full);
        if seed == 0 {
            reads_back_as_written(&name, &tracer);
        }
        let from_file = recheck(&tracer.to_jsonl())
            .unwrap_or_else(|e| panic!("{name} seed {seed}: trace does not parse: {e}"));
        assert_eq!(
            verdict(&r.violation),
            verdict(&from_file),
            "{name} seed {seed}: live verdict, then the file's"
        );
        violations += usize::from(r.violation.is_some());
    }
    violations
}

/// The file is the trace: each line reads back as the event that was written (the schema is
/// one type, so writer and reader cannot drift apart), and a line written again is the same
/// text.
fn reads_back_as_written(name: &str, tracer: &Tracer) {
    for (i, (t, ev)) in tracer.events().iter().enumerate() {
        let text = ev.to_json(*t);
        match read_line(&text, i + 1) {
            Ok(Line::Event(t2, ev2)) => {
                assert_eq!((*t, ev), (t2, &ev2), "{name}: {text}");
                assert_eq!(ev2.to_json(t2), text, "{name}");
            }
            other => panic!("{name}: {text} reads as {other:?}"),
        }
    }
}

/// Every scenario under sim-scenarios/, 12 seeds each (4 for the long ones), on two threads
/// (the files split between them).
#[test]
fn every_scenario_rechecks_to_the_live_verdict() {
    let dir = common::root().join("sim-scenarios");
    let files = common::toml_files(&dir);
    std::thread::scope(|scope| {
        for half in files.chunks(files.len().div_ceil(2)) {
            scope.spawn(move || {
                for path in half {
                    // Long schedules (Akka's specs, the swarms) with fewer seeds: every line
                    // of a full trace is re-parsed, and the test has a time budget.
                    let p = path.to_string_lossy();
                    let n = if p.contains("/scale-") {
                        // 50 and 100 nodes: one seed (their full traces are the longest).
                        1
                    } else if p.contains("/specs/") || p.contains("swarm") {
                        4
                    } else {
                        12
                    };
                    live_and_file_agree(Scenario::load(path).unwrap(), 0..n);
                }
            });
        }
    });
}

#[test]
fn hazard_trace_recheck_finds_the_reordering() {
    // Seed 2 is the README's and docs/debugging.md's example of the §11.3 reorder.
    let n = live_and_file_agree(
        common::scenario("hazards/reorder-across-handoff.toml"),
        0..5,
    );
    assert!(n > 0, "no violation among these seeds");
}

/// A scenario, its mutation, and the invariant the mutation breaks.
fn cases() -> Vec<(Scenario, Outcome)> {
    let fixed = || common::scenario("hazards/reorder-across-handoff-fixed.toml");
    let mutated = |mut sc: Scenario, m: Mutation| {
        sc.options.mutation = m;
        sc
    };
    // Node 2 joins late, crashes and is downed; during the long down-removal-margin the broken
    // coordinator allocates to it (as in tests/mutations.rs).
    let downed = common::data_scenario("allocate-to-downed.toml");
    // The journal is unreachable for 4 s, so messages buffer past a small buffer-size (as in
    // tests/mutations.rs): the broken region keeps them, and its own rule reports it.
    let overflow = common::data_scenario("buffer-overflow.toml");
    vec![
        (
            mutated(fixed(), Mutation::CoordinatorSkipsShardStopped),
            Outcome::AtMostOne,
        ),
        (
            mutated(fixed(), Mutation::BufferOutOfOrder),
            Outcome::PerSenderOrder,
        ),
        (
            mutated(fixed(), Mutation::BufferDuplicate),
            Outcome::NoDuplicate,
        ),
        (
            common::scenario("faults/split-brain-journal.toml"),
            Outcome::JournalSingleWriter,
        ),
        (
            mutated(downed, Mutation::AllocateToDowned),
            Outcome::AllocationToDowned,
        ),
        (
            mutated(
                common::scenario("faults/journal-blackhole.toml"),
                Mutation::RegionNeverReasks,
            ),
            Outcome::Liveness,
        ),
        (
            mutated(overflow, Mutation::RegionIgnoresBufferSize),
            Outcome::RoleInvariant,
        ),
        (
            mutated(
                common::scenario("handoff-while-passivating.toml"),
                Mutation::ShardForgetsPassivationBuffer,
            ),
            Outcome::MessageLost,
        ),
        (
            common::scenario("hazards/restart-timer-not-cancelled.toml"),
            Outcome::ShardIllegalState,
        ),
        // Remembered-entity liveness: the idle starter leaves a crashed node's remembered
        // entities unstarted (the store writes in the trace say which are remembered).
        (
            mutated(
                common::scenario("specs/remember-entities-node-crash-eventsourced.toml"),
                Mutation::StarterNeverStarts,
            ),
            Outcome::Liveness,
        ),
        // The youngest node leaves gracefully, and its broken region stops at once without
        // hand-off (as in tests/mutations.rs).
        (
            mutated(
                common::scenario("specs/graceful-shutdown.toml"),
                Mutation::GracefulShutdownWithoutHandOff,
            ),
            Outcome::GracefulLeaveLoss,
        ),
        // The new allocation algorithm rounding optimal down: shards move for ever.
        (
            mutated(
                common::scenario("allocation-new.toml"),
                Mutation::NewAllocationRoundsDown,
            ),
            Outcome::RebalanceQuiescence,
        ),
    ]
}

#[test]
fn every_invariant_is_found_in_the_file() {
    let cases = cases();
    let found: Vec<Outcome> = cases.iter().map(|(_, inv)| *inv).collect();
    assert_eq!(
        found.len(),
        12,
        "one case per invariant (liveness twice: messages, remembered entities)"
    );
    for (sc, inv) in cases {
        let sc = Arc::new(sc);
        let seed = (0..100)
            .find(|s| {
                run_seed(&sc, *s, TraceMode::Off)
                    .0
                    .violation
                    .is_some_and(|v| v.invariant == inv)
            })
            .unwrap_or_else(|| panic!("{inv}: never caught"));
        let (r, tracer) = run_seed(&sc, seed, TraceMode::Full);
        let v = recheck(&tracer.to_jsonl())
            .unwrap()
            .unwrap_or_else(|| panic!("{inv}: the file does not show the violation"));
        assert_eq!(v.invariant, inv);
        assert_eq!(
            verdict(&Some(v)),
            verdict(&r.violation),
            "{inv} seed {seed}"
        );
    }
}

/// The oracles message conservation, one-coordinator and hosting-ack, each broken by its
/// mutation on the smoke scenario, are found again in the trace file.
#[test]
fn the_conservation_coordinator_and_hosting_oracles_are_found_in_the_file() {
    for (m, inv) in [
        (
            Mutation::RegionDiscardsBufferOnHostShard,
            Outcome::MessageLost,
        ),
        (Mutation::SingletonReversedAgeOrder, Outcome::OneCoordinator),
        (
            Mutation::RegionForgetsAcknowledgedShard,
            Outcome::HostingAck,
        ),
    ] {
        let mut sc = common::scenario("smoke.toml");
        sc.options.mutation = m;
        let sc = Arc::new(sc);
        // The first of the first 40 seeds whose live run breaks the mutation's invariant.
        let (r, tracer) = (0..40)
            .map(|seed| run_seed(&sc, seed, TraceMode::Full))
            .find(|(r, _)| r.violation.as_ref().map(|v| v.invariant) == Some(inv))
            .unwrap_or_else(|| panic!("{m:?}: no {inv} in 40 seeds"));
        let v = recheck(&tracer.to_jsonl()).unwrap();
        assert_eq!(verdict(&v), verdict(&r.violation), "{m:?}");
    }
}

/// The end-of-run pending messages are in the file: a run cut off mid-traffic balances from
/// its lines alone, and a file with one line too few does not.
#[test]
fn the_message_balance_is_rechecked_from_the_pending_lines() {
    let mut sc = common::scenario("smoke.toml");
    sc.workload.stop_ms = sc.run.duration_ms; // messages still on their way at the end
    sc.network.latency_ms = [50, 100];
    let (r, tracer) = run_seed(&Arc::new(sc), 0, TraceMode::Full);
    assert_eq!(r.violation, None);
    let text = tracer.to_jsonl();
    let pending = text
        .lines()
        .filter(|l| l.contains("\"ev\":\"pending\""))
        .count();
    assert!(pending > 0, "nothing pending at the end");
    assert!(
        text.contains(&format!("\"ev\":\"run_end\",\"in_flight\":{pending}")),
        "the end counts the pending lines"
    );
    assert_eq!(recheck(&text).unwrap(), None);
    for (what, ev) in [("pending", "pending"), ("delivery", "deliver")] {
        let mut dropped = false;
        let cut: String = text
            .lines()
            .filter(|l| {
                let skip = !dropped && l.contains(&format!("\"ev\":\"{ev}\""));
                dropped |= skip;
                !skip
            })
            .map(|l| format!("{l}\n"))
            .collect();
        let v = recheck(&cut)
            .unwrap()
            .unwrap_or_else(|| panic!("a {what} less"));
        assert_eq!(v.invariant, Outcome::MessageLost, "a {what} less: {v:?}");
    }
}
