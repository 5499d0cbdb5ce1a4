//! Swarm testing (TigerBeetle's VOPR): each seed draws which fault kinds are on and how many
//! of each, and the fault plan follows from the draw. The profile is recorded in the trace.

use crate::rng::{Rng, Stream};
use crate::scenario::{FaultKind, FaultSpec, Scenario};

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
    // Settling time after each fault when faults do not overlap: detection, stable-after and
    // the removal margin, plus a second of slack.
    let settle = {
        let m = &sc.membership;
        let (stable, margin) = match &m.downing {
            crate::membership::DowningProvider::SplitBrainResolver {
                stable_after_ms,
                down_removal_margin_ms,
                ..
            } => (*stable_after_ms, *down_removal_margin_ms),
            crate::membership::DowningProvider::AutoDown { after_ms } => (*after_ms, 0),
            crate::membership::DowningProvider::None => (0, 0),
        };
        m.acceptable_heartbeat_pause_ms
            + stable
            + margin.max(sc.settings.down_removal_margin_ms)
            + 1000
    };
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
        let mut f = FaultSpec::new(at, kind);
        // How long the fault lasts before its heal.
        let mut lasts = 0;
        let heal = |plan: &mut Vec<FaultSpec>, k: FaultKind, d: u64, node: Option<u32>| {
            let mut h = FaultSpec::new((at + d).min(end), k);
            h.node = node;
            plan.push(h);
            d
        };
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
                lasts = heal(&mut plan, FaultKind::Heal, d, None);
            }
            FaultKind::Isolate => {
                f.node = Some(node);
                let d = rng.range(1000, sw.max_partition_ms.max(1000));
                lasts = heal(&mut plan, FaultKind::Heal, d, None);
            }
            FaultKind::OneWay if n >= 2 => {
                let to = (node + 1 + rng.range(0, n - 2) as u32) % n as u32;
                f.from = Some(node);
                f.to = Some(to);
                let d = rng.range(1000, sw.max_partition_ms.max(1000));
                lasts = heal(&mut plan, FaultKind::Heal, d, None);
            }
            FaultKind::Bridge if n >= 3 => {
                let a = node;
                let b = (a + 1) % n as u32;
                let c = (a + 2) % n as u32;
                f.bridge = Some([a, b, c]);
                let d = rng.range(1000, sw.max_partition_ms.max(1000));
                lasts = heal(&mut plan, FaultKind::Heal, d, None);
            }
            FaultKind::Crash => {
                f.node = Some(node);
                let d = rng.range(1000, sw.max_down_ms.max(1000));
                lasts = heal(&mut plan, FaultKind::Restart, d, Some(node));
            }
            FaultKind::Pause => {
                f.node = Some(node);
                let d = rng.range(100, sw.max_pause_ms.max(100));
                f.duration_ms = Some(d);
                lasts = d;
            }
            FaultKind::Down | FaultKind::Leave | FaultKind::Restart => f.node = Some(node),
            FaultKind::JournalUnavailable | FaultKind::JournalFailing => {
                let d = rng.range(1000, sw.max_partition_ms.max(1000));
                lasts = heal(&mut plan, FaultKind::JournalAvailable, d, None);
            }
            FaultKind::JournalSlow => {
                f.extra_latency_ms = Some(rng.range(50, 2000));
                let d = rng.range(1000, sw.max_partition_ms.max(1000));
                lasts = heal(&mut plan, FaultKind::JournalAvailable, d, None);
            }
            _ => continue,
        }
        plan.push(f);
        cursor = at + lasts + settle;
    }
    let profile = if profile.is_empty() {
        "no faults".to_string()
    } else {
        profile.join(" ")
    };
    (plan, profile)
}
