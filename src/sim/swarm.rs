//! Swarm testing (TigerBeetle's VOPR): each seed draws which fault kinds are on and how many
//! of each, and the fault plan follows from the draw. The profile is recorded in the trace.

use crate::rng::{Rng, Stream};
use crate::scenario::{FaultKind, FaultSpec, Scenario};

fn blank(at_ms: u64, kind: FaultKind) -> FaultSpec {
    FaultSpec {
        at_ms,
        kind,
        node: None,
        sides: None,
        from: None,
        to: None,
        bridge: None,
        duration_ms: None,
        by: None,
        extra_latency_ms: None,
    }
}

/// The faults of one seed, and a one-line description of the drawn profile.
pub fn draw(sc: &Scenario, seed: u64) -> (Vec<FaultSpec>, String) {
    let mut rng = Rng::fork(seed, Stream::Faults);
    let n = u64::from(sc.cluster.nodes);
    let sw = &sc.swarm;
    let end = if sc.liveness.enabled {
        sc.run.duration_ms - sc.liveness.quiet_ms
    } else {
        sc.run.duration_ms
    };
    let lo = sw.start_ms.min(end);
    let mut plan = Vec::new();
    let mut profile = Vec::new();
    for kind in &sw.kinds {
        if !rng.chance(0.5) {
            continue;
        }
        let count = rng.range(1, u64::from(sw.max_per_kind.max(1)));
        profile.push(format!("{kind:?}x{count}"));
        for _ in 0..count {
            let at = rng.range(lo, end.saturating_sub(1000).max(lo));
            let node = rng.range(0, n - 1) as u32;
            let mut f = blank(at, *kind);
            match kind {
                FaultKind::Partition if n >= 2 => {
                    let mut a = Vec::new();
                    let mut b = Vec::new();
                    for i in 0..n as u32 {
                        if rng.chance(0.5) {
                            a.push(i)
                        } else {
                            b.push(i)
                        }
                    }
                    if a.is_empty() {
                        a.push(b.remove(0));
                    } else if b.is_empty() {
                        b.push(a.remove(0));
                    }
                    f.sides = Some([a, b]);
                    let d = rng.range(1000, sw.max_partition_ms.max(1000));
                    plan.push(blank((at + d).min(end), FaultKind::Heal));
                }
                FaultKind::Isolate => {
                    f.node = Some(node);
                    let d = rng.range(1000, sw.max_partition_ms.max(1000));
                    plan.push(blank((at + d).min(end), FaultKind::Heal));
                }
                FaultKind::OneWay if n >= 2 => {
                    let to = (node + 1 + rng.range(0, n - 2) as u32) % n as u32;
                    f.from = Some(node);
                    f.to = Some(to);
                    let d = rng.range(1000, sw.max_partition_ms.max(1000));
                    plan.push(blank((at + d).min(end), FaultKind::Heal));
                }
                FaultKind::Bridge if n >= 3 => {
                    let a = node;
                    let b = (a + 1) % n as u32;
                    let c = (a + 2) % n as u32;
                    f.bridge = Some([a, b, c]);
                    let d = rng.range(1000, sw.max_partition_ms.max(1000));
                    plan.push(blank((at + d).min(end), FaultKind::Heal));
                }
                FaultKind::Crash => {
                    f.node = Some(node);
                    let d = rng.range(1000, sw.max_down_ms.max(1000));
                    let mut r = blank((at + d).min(end), FaultKind::Restart);
                    r.node = Some(node);
                    plan.push(r);
                }
                FaultKind::Pause => {
                    f.node = Some(node);
                    f.duration_ms = Some(rng.range(100, sw.max_pause_ms.max(100)));
                }
                FaultKind::Down | FaultKind::Leave | FaultKind::Restart => f.node = Some(node),
                FaultKind::JournalUnavailable | FaultKind::JournalFailing => {
                    let d = rng.range(1000, sw.max_partition_ms.max(1000));
                    plan.push(blank((at + d).min(end), FaultKind::JournalAvailable));
                }
                FaultKind::JournalSlow => {
                    f.extra_latency_ms = Some(rng.range(50, 2000));
                    let d = rng.range(1000, sw.max_partition_ms.max(1000));
                    plan.push(blank((at + d).min(end), FaultKind::JournalAvailable));
                }
                _ => continue,
            }
            plan.push(f);
        }
    }
    let profile = if profile.is_empty() {
        "no faults".to_string()
    } else {
        profile.join(" ")
    };
    (plan, profile)
}
