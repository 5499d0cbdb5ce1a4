//! The scenarios with checks of their own: the swarms (every seed keeps every invariant and the
//! swarm draws faults) and the known hazards that must stay reproducible at their seeds. Every
//! scenario file is also fuzzed against its declaration by `tests/scenario_files.rs`, which
//! finds the files by itself.

use shardsim::campaign::{self, Campaign};
use shardsim_core::ids::NodeId;
use shardsim_core::membership::MembershipEvent;
use shardsim_harness::scenario::{Outcome, Scenario};
use shardsim_harness::trace::{TraceEvent, TraceMode};
use std::path::Path;
use std::sync::Arc;

mod common;
use common::root;

fn seeds() -> u64 {
    std::env::var("SHARDSIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(800)
}

/// The swarm scenario: every seed keeps every invariant, liveness included.
#[test]
fn swarm_keep_majority() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("sim-scenarios/faults/swarm-keep-majority.toml");
    let sc = Arc::new(Scenario::load(&path).unwrap());
    let sum = Campaign::new(&sc, 0, seeds().min(400)).jobs(2).run();
    if let Some(f) = sum.failures.first() {
        panic!(
            "{} at seed {}: {}\nreplay: {}",
            f.invariant,
            f.seed,
            f.detail,
            campaign::replay_command(&path, f.seed)
        );
    }
    assert!(sum.totals.faults > 0, "the swarm drew no faults");
}

/// The remember-entities swarms, one per store: every seed keeps every invariant, liveness and
/// remembered-entity liveness included (the long campaigns are in reports/).
#[test]
fn swarm_remember() {
    for store in ["ddata", "eventsourced"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("sim-scenarios/faults/swarm-remember-{store}.toml"));
        let sc = Arc::new(Scenario::load(&path).unwrap());
        let sum = Campaign::new(&sc, 0, seeds().min(150)).jobs(2).run();
        if let Some(f) = sum.failures.first() {
            panic!(
                "{} at seed {}: {}\nreplay: {}",
                f.invariant,
                f.seed,
                f.detail,
                campaign::replay_command(&path, f.seed)
            );
        }
        assert!(sum.totals.faults > 0, "{store}: the swarm drew no faults");
    }
}

/// scale-100's known hazard stays reproducible: seed 76 stalls convergence on Akka's gossip
/// (dead Down members stay preferred gossip targets) and fails liveness, and the same seed is
/// clean with `gossip-skips-unreachable-members`, so the campaign classifies it as known.
#[test]
fn scale_100_convergence_stall_is_the_known_hazard() {
    let path = root().join("sim-scenarios/scale-100.toml");
    let sc = Arc::new(Scenario::load(&path).unwrap());
    let sum = Campaign::new(&sc, 76, 1).run();
    let f = sum.failures.first().expect("seed 76 fails liveness");
    assert_eq!(f.invariant, Outcome::Liveness, "{f:?}");
    assert!(
        f.detail.contains("is not registered with a coordinator"),
        "{}",
        f.detail
    );
    assert_eq!(
        f.known.as_deref(),
        Some("convergence-stalled-by-dead-members"),
        "{f:?}"
    );
    assert!(sum.unexpected(sc.expect.outcome).next().is_none());
}

/// The seed of swarm-graceful where the heal race was found (17230) now shows Akka's
/// indirectly-connected rule end to end: a [3, 4] | [0, 1, 2, 5] partition heals just before
/// node 3's keep-majority resolver decides; node 0 has seen node 3's gossip, so the seen rule
/// (DowningStrategy `indirectlyConnectedFromSeenCurrentGossip`) makes 0 and 3 indirectly
/// connected, and the second pass without their records counts 0 on node 3's side: 3 of 6, a
/// tie the lowest address (0) wins, so node 3 downs 1, 2 and 5 with 0 and itself. Node 4 is
/// left, and the cluster lives on. The hazard itself (both sides downed) stays reproducible in
/// its shrunk file, `hazards/sbr-heal-race-downs-all.toml`.
#[test]
fn swarm_graceful_heal_race_seed_decides_through_the_seen_rule() {
    let path = root().join("sim-scenarios/faults/swarm-graceful.toml");
    let sc = Arc::new(Scenario::load(&path).unwrap());
    let (_, tracer) = campaign::run_seed(&sc, 17230, TraceMode::Full);
    let decisions: Vec<(NodeId, String, String, Vec<u32>)> = tracer
        .events()
        .iter()
        .filter_map(|(_, ev)| match ev {
            TraceEvent::Cluster {
                node,
                event:
                    MembershipEvent::DowningDecision {
                        provider,
                        decision,
                        downed,
                    },
            } => Some((
                *node,
                provider.clone(),
                decision.clone(),
                downed.iter().map(|a| a.node.0).collect(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(decisions.len(), 1, "{decisions:#?}");
    let (node, provider, decision, downed) = &decisions[0];
    assert_eq!(
        (*node, provider.as_str()),
        (NodeId(3), "sbr-indirectly-connected")
    );
    assert!(
        decision.ends_with("without their records, 3 of 6 on this side: down unreachable side"),
        "{decision}"
    );
    assert_eq!(downed, &[0, 1, 2, 3, 5]);
    let sum = Campaign::new(&sc, 17230, 1).run();
    assert!(sum.failures.is_empty(), "{:?}", sum.failures);
}
