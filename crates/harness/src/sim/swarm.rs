//! Swarm testing (TigerBeetle's VOPR): each seed draws which fault kinds are on and how many
//! of each, and the fault plan follows from the draw. The profile is recorded in the trace.

use crate::fault::{Fault, TimedFault};
use crate::scenario::{FaultKind, FaultSpec, Scenario, SwarmSpec};
use shardsim_core::ids::NodeId;
use shardsim_core::rng::{Rng, Stream};

/// The fault plan of one schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The faults, ordered by time; at equal times the scenario's explicit faults come first
    /// (in file order), then the swarm's (in draw order).
    pub faults: Vec<TimedFault>,
    /// The drawn swarm profile, if the swarm is on.
    pub profile: Option<String>,
}

/// The fault plan of `sc` run with `seed`: its explicit faults, then the swarm's draw for the
/// seed, sorted stably by time. This is the plan the world runs and the one the shrinker
/// materialises.
///
/// An explicit fault that [`Scenario::validate`] would reject (not a fault of its kind, or
/// naming a node the cluster does not have) is left out: only a scenario that skipped
/// validation has one.
pub fn plan(sc: &Scenario, seed: u64) -> Plan {
    let mut faults: Vec<TimedFault> = sc
        .faults
        .iter()
        .filter_map(|f| TimedFault::try_from(f).ok())
        .filter(|t| t.fault.check(sc.cluster.nodes).is_ok())
        .collect();
    let profile = if sc.swarm.enabled {
        let (drawn, profile) = draw(sc, seed);
        faults.extend(drawn);
        Some(profile)
    } else {
        None
    };
    faults.sort_by_key(|f| f.at_ms);
    Plan { faults, profile }
}

/// How long the cluster takes to settle after a fault (ms): failure detection, stable-after
/// and the removal margin, plus a second of slack. The swarm spaces faults by it when they do
/// not overlap; the graceful-leave-loss rule does not call a leave graceful this soon after a
/// fault.
pub fn settle_ms(sc: &Scenario) -> u64 {
    let m = &sc.membership;
    let (stable, margin) = match &m.downing {
        shardsim_core::membership::DowningProvider::SplitBrainResolver {
            stable_after_ms,
            down_removal_margin_ms,
            ..
        } => (*stable_after_ms, *down_removal_margin_ms),
        shardsim_core::membership::DowningProvider::AutoDown { after_ms } => (*after_ms, 0),
        shardsim_core::membership::DowningProvider::None => (0, 0),
    };
    m.acceptable_heartbeat_pause_ms + stable + margin.max(sc.settings.down_removal_margin_ms) + 1000
}

/// The faults of one seed, and a one-line description of the drawn profile.
pub fn draw(sc: &Scenario, seed: u64) -> (Vec<TimedFault>, String) {
    let mut rng = Rng::fork(seed, Stream::Faults);
    let n = u64::from(sc.cluster.nodes);
    let sw = &sc.swarm;
    let end = if sc.liveness.enabled {
        sc.run.duration_ms - sc.liveness.quiet_ms
    } else {
        sc.run.duration_ms
    };
    let lo = sw.start_ms.min(end);
    // Settling time after each fault when faults do not overlap.
    let settle = settle_ms(sc);
    // Which kinds are on, and how many of each.
    let mut draws: Vec<FaultKind> = Vec::new();
    let mut profile = Vec::new();
    for kind in &sw.kinds {
        if !rng.chance(0.5) {
            continue;
        }
        let count = rng.range(1, u64::from(sw.max_per_kind.max(1)));
        profile.push(format!("{kind:?}x{count}"));
        for _ in 0..count {
            draws.push(*kind);
        }
    }
    // A deterministic shuffle, so kinds interleave.
    for i in (1..draws.len()).rev() {
        let j = rng.range(0, i as u64) as usize;
        draws.swap(i, j);
    }
    let mut plan = Vec::new();
    let mut cursor = lo;
    let mut rolling: Option<String> = None;
    for kind in draws {
        let at = if sw.overlap {
            rng.range(lo, end.saturating_sub(1000).max(lo))
        } else {
            cursor + rng.range(0, 3000)
        };
        if at + 1000 >= end {
            break;
        }
        let node = rng.range(0, n - 1) as u32;
        let x = NodeId(node);
        // The fault after its heal (pushed first: at equal times the heal fires first), and how
        // long the fault lasts before that heal.
        let heal = |plan: &mut Vec<TimedFault>, fault: Fault, d: u64| {
            plan.push(TimedFault {
                at_ms: (at + d).min(end),
                fault,
            });
            d
        };
        let (fault, lasts) = match kind {
            FaultKind::Partition if n >= 2 => {
                let mut a = Vec::new();
                let mut b = Vec::new();
                for i in 0..n as u32 {
                    if rng.chance(0.5) {
                        a.push(NodeId(i))
                    } else {
                        b.push(NodeId(i))
                    }
                }
                if a.is_empty() {
                    a.push(b.remove(0));
                } else if b.is_empty() {
                    b.push(a.remove(0));
                }
                let d = rng.range(1000, sw.max_partition_ms.max(1000));
                let lasts = heal(&mut plan, Fault::Heal, d);
                (Fault::Partition { sides: [a, b] }, lasts)
            }
            FaultKind::Isolate => {
                let d = rng.range(1000, sw.max_partition_ms.max(1000));
                (Fault::Isolate { node: x }, heal(&mut plan, Fault::Heal, d))
            }
            FaultKind::OneWay if n >= 2 => {
                let to = NodeId((node + 1 + rng.range(0, n - 2) as u32) % n as u32);
                let d = rng.range(1000, sw.max_partition_ms.max(1000));
                let lasts = heal(&mut plan, Fault::Heal, d);
                (Fault::OneWay { from: x, to }, lasts)
            }
            FaultKind::Bridge if n >= 3 => {
                let a = node;
                let b = NodeId((a + 1) % n as u32);
                let c = NodeId((a + 2) % n as u32);
                let d = rng.range(1000, sw.max_partition_ms.max(1000));
                let lasts = heal(&mut plan, Fault::Heal, d);
                (Fault::Bridge { a: x, b, c }, lasts)
            }
            FaultKind::Crash => {
                let d = rng.range(1000, sw.max_down_ms.max(1000));
                let lasts = heal(&mut plan, Fault::Restart { node: x }, d);
                (Fault::Crash { node: x }, lasts)
            }
            FaultKind::Pause => {
                let d = rng.range(100, sw.max_pause_ms.max(100));
                (
                    Fault::Pause {
                        node: x,
                        duration_ms: d,
                    },
                    d,
                )
            }
            // An operator downs a live node; it comes back as a new incarnation (a
            // replacement) after a while.
            FaultKind::Down => {
                let d = rng.range(5000, sw.max_down_ms.max(5000));
                let lasts = heal(&mut plan, Fault::Restart { node: x }, d);
                (Fault::Down { node: x, by: None }, lasts)
            }
            // A graceful leave (coordinated shutdown), then a replacement incarnation joins:
            // one step of a rolling update.
            FaultKind::Leave => {
                let d = rng.range(5000, sw.max_down_ms.max(5000));
                let lasts = heal(&mut plan, Fault::Restart { node: x }, d);
                (Fault::Leave { node: x, by: None }, lasts)
            }
            FaultKind::Restart => (Fault::Restart { node: x }, 0),
            // A rolling restart (at most one per schedule): every hosting node in turn leaves
            // gracefully and a new incarnation replaces it, oldest first or youngest first.
            // Its order and timing come from a stream of their own.
            FaultKind::RollingRestart => {
                if rolling.is_some() {
                    continue;
                }
                let Some((steps, lasts, desc)) = rolling_restart(sc, seed, at, end, &plan) else {
                    continue;
                };
                rolling = Some(desc);
                let mut steps = steps.into_iter();
                let Some(first) = steps.next() else {
                    continue;
                };
                plan.extend(steps);
                (first.fault, lasts)
            }
            FaultKind::JournalUnavailable => {
                let d = rng.range(1000, sw.max_partition_ms.max(1000));
                let lasts = heal(&mut plan, Fault::JournalAvailable, d);
                (Fault::JournalUnavailable, lasts)
            }
            FaultKind::JournalFailing => {
                let d = rng.range(1000, sw.max_partition_ms.max(1000));
                let lasts = heal(&mut plan, Fault::JournalAvailable, d);
                (Fault::JournalFailing, lasts)
            }
            FaultKind::JournalSlow => {
                let extra_latency_ms = rng.range(50, 2000);
                let d = rng.range(1000, sw.max_partition_ms.max(1000));
                let lasts = heal(&mut plan, Fault::JournalAvailable, d);
                (Fault::JournalSlow { extra_latency_ms }, lasts)
            }
            // Too few nodes for the cut, or a kind that only ends another fault: nothing drawn.
            FaultKind::Partition
            | FaultKind::OneWay
            | FaultKind::Bridge
            | FaultKind::Heal
            | FaultKind::JournalAvailable => continue,
        };
        plan.push(TimedFault { at_ms: at, fault });
        cursor = at + lasts + settle;
    }
    profile.extend(rolling);
    let profile = if profile.is_empty() {
        "no faults".to_string()
    } else {
        profile.join(" ")
    };
    (plan, profile)
}

/// A rolling restart starting at `at` (ms), its faults ending before `end`: the hosting nodes
/// by age at `at` (their join, or their last restart in `plan`), oldest first or youngest
/// first; each leaves `step` after the previous one and restarts `restart_after` after its own
/// leave (8 to 12 s, time for coordinated shutdown and the exit; the step 5 to 15 s more).
/// Returns the faults in time order (the first is the first leave), how long the whole takes,
/// and a description for the profile; `None` if not even one node fits.
fn rolling_restart(
    sc: &Scenario,
    seed: u64,
    at: u64,
    end: u64,
    plan: &[TimedFault],
) -> Option<(Vec<TimedFault>, u64, String)> {
    let mut rng = Rng::fork(seed, Stream::SwarmRolling);
    let oldest_first = rng.chance(0.5);
    let restart_after = rng.range(8_000, 12_000);
    let step = restart_after + rng.range(5_000, 15_000);
    let mut nodes: Vec<(u64, u32)> = (0..sc.cluster.nodes)
        .filter(|i| !sc.cluster.proxy_nodes.contains(i))
        .map(|i| {
            let restarted = plan
                .iter()
                .filter(|f| f.at_ms <= at && f.fault == Fault::Restart { node: NodeId(i) })
                .map(|f| f.at_ms)
                .max();
            (restarted.unwrap_or(0).max(sc.join_at_ms(i)), i)
        })
        .collect();
    nodes.sort();
    if !oldest_first {
        nodes.reverse();
    }
    let mut faults = Vec::new();
    let mut lasts = 0;
    for (k, (_, i)) in nodes.iter().enumerate() {
        let leave = at + k as u64 * step;
        if leave + restart_after + 1000 >= end {
            break;
        }
        let node = NodeId(*i);
        faults.push(TimedFault {
            at_ms: leave,
            fault: Fault::Leave { node, by: None },
        });
        faults.push(TimedFault {
            at_ms: leave + restart_after,
            fault: Fault::Restart { node },
        });
        lasts = leave + restart_after - at;
    }
    if faults.is_empty() {
        return None;
    }
    let desc = format!(
        "rolling restart of {} nodes {} first, every {:.1} s, each back after {:.1} s",
        faults.len() / 2,
        if oldest_first { "oldest" } else { "youngest" },
        step as f64 / 1000.0,
        restart_after as f64 / 1000.0
    );
    Some((faults, lasts, desc))
}

/// With `swarm.entity-knobs`, the scenario seed `seed` runs: the entity-layer knobs drawn for
/// it (see [`crate::scenario::SwarmSpec::entity_knobs`]) and their one-line description. `None`
/// when the swarm or the knobs are off. Drawn from a stream of its own, so the fault plan of a
/// seed does not depend on it.
pub fn with_entity_knobs(sc: &Scenario, seed: u64) -> Option<(Scenario, String)> {
    if !(sc.swarm.enabled && sc.swarm.entity_knobs) {
        return None;
    }
    let mut rng = Rng::fork(seed, Stream::SwarmEntities);
    let mut out = sc.clone();
    let mut desc = Vec::new();
    let w = &mut out.workload;
    for (name, p) in [
        ("passivate", &mut w.passivate_probability),
        ("ignore-stop", &mut w.ignore_stop_probability),
        ("self-stop", &mut w.self_stop_probability),
        ("crash", &mut w.crash_probability),
        ("shard-failure", &mut w.shard_failure_probability),
    ] {
        let max = *p;
        // Each knob: off, or a value in (0, max] in steps of max/1000.
        let on = max > 0.0 && rng.chance(0.5);
        *p = if on {
            max * rng.range(1, 1000) as f64 / 1000.0
        } else {
            0.0
        };
        if on {
            desc.push(format!("{name} {:.4}", *p));
        }
    }
    let [lo, hi] = out.entities.stop_ms;
    let hi = rng.range(lo, hi);
    out.entities.stop_ms = [lo, hi];
    desc.push(format!("stop {lo}-{hi} ms"));
    Some((out, format!("entities: {}", desc.join(", "))))
}

/// The scenario with the fault plan the world runs with `seed` (its explicit faults and the
/// swarm's draw, ordered by time, stably) written into `faults`, and the swarm off.
pub fn materialise(sc: &Scenario, seed: u64) -> Scenario {
    // The entity knobs the seed drew become the scenario's own.
    let mut out = match with_entity_knobs(sc, seed) {
        Some((knobs, _)) => knobs,
        None => sc.clone(),
    };
    let plan = plan(sc, seed);
    out.faults = plan.faults.iter().map(FaultSpec::from).collect();
    out.delays = crate::sim::delays::plan(sc, seed);
    out.swarm = SwarmSpec::default();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::FaultSpec;

    #[test]
    fn plan_puts_explicit_faults_first_and_materialises_to_itself() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../sim-scenarios/faults/swarm-auto-down.toml");
        let mut sc = Scenario::load(&path).unwrap();
        for seed in 0..20 {
            let p = plan(&sc, seed);
            assert!(p.profile.is_some());
            assert!(p.faults.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
            // An explicit fault at the time of the first drawn one fires before it.
            let Some(first) = p.faults.first().cloned() else {
                continue;
            };
            sc.faults = vec![FaultSpec::new(first.at_ms, FaultKind::JournalFailing)];
            let q = plan(&sc, seed);
            assert_eq!(q.faults[0].fault, Fault::JournalFailing);
            assert_eq!(q.faults[1..], p.faults[..]);
            // The shrinker's materialised scenario runs the same plan, swarm off.
            let m = materialise(&sc, seed);
            let r = plan(&m, seed);
            assert_eq!(r.profile, None);
            assert_eq!(r.faults, q.faults);
            sc.faults.clear();
        }
    }
}
