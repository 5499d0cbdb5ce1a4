//! Targeted delays: `[[delays]]` in scenario files and `[swarm] delays`.

use shardsim::campaign::run_seed;
use shardsim::shrink::materialise;
use shardsim_harness::scenario::Scenario;
use shardsim_harness::trace::{TraceEvent, TraceMode};
use std::path::Path;
use std::sync::Arc;

const SMOKE: &str = "name = \"d\"\n[cluster]\nnodes = 4\njoin-at-ms = [0, 0, 0, 3000]\n\
[entities]\ncount = 40\nshards = 12\n[workload]\ninterval-ms = [10, 30]\nstop-ms = 7000\n\
[settings]\nrebalance-interval-ms = 2000\n[run]\nduration-ms = 8000\n";

fn parse(t: &str) -> Arc<Scenario> {
    Arc::new(Scenario::parse(t, Path::new("d.toml")).unwrap())
}

#[test]
fn a_delay_changes_the_schedule_and_replays() {
    let plain = parse(SMOKE);
    let held = parse(&format!(
        "{SMOKE}[[delays]]\nmessage = \"User\"\nfrom = 1\nto = 2\nat-ms = 3000\nuntil-ms = 6000\nhold-ms = 1000\n"
    ));
    let (a, _) = run_seed(&plain, 2, TraceMode::Hash);
    let (b, _) = run_seed(&held, 2, TraceMode::Hash);
    let (c, _) = run_seed(&held, 2, TraceMode::Hash);
    assert_ne!(a.trace_hash, b.trace_hash, "the hold moves arrivals");
    assert_eq!(b.trace_hash, c.trace_hash, "and replays");
    // A delay whose window opens after the run changes nothing: no draw is made for it.
    let late = parse(&format!("{SMOKE}[[delays]]\nat-ms = 9000\nhold-ms = 50\n"));
    let (d, _) = run_seed(&late, 2, TraceMode::Hash);
    assert_eq!(a.trace_hash, d.trace_hash);
}

#[test]
fn the_swarm_draws_delays_only_when_asked_and_shrink_writes_them_out() {
    let base = format!("{SMOKE}[swarm]\nenabled = true\nstart-ms = 2000\nkinds = [\"pause\"]\n");
    let without = parse(&base);
    let with = parse(&format!("{base}delays = true\nmax-hold-ms = 800\n"));
    for seed in 0..4 {
        let (r, t) = run_seed(&with, seed, TraceMode::Full);
        let profile = t
            .events()
            .iter()
            .find_map(|(_, e)| match e {
                TraceEvent::SwarmProfile { profile } => Some(profile.clone()),
                _ => None,
            })
            .unwrap();
        assert!(profile.contains("delays ["), "{profile}");
        let explicit = materialise(&with, seed);
        assert!(!explicit.swarm.enabled);
        assert!(!explicit.delays.is_empty());
        assert!(explicit.delays.iter().all(|d| d.hold_ms <= 800));
        let (m, _) = run_seed(&Arc::new(explicit.clone()), seed, TraceMode::Off);
        assert_eq!(
            r.stats, m.stats,
            "seed {seed}: the written-out delays replay the draw"
        );
        // The written scenario reads back equal.
        let text = explicit.to_toml().unwrap();
        assert!(text.contains("[[delays]]"), "{text}");
        assert_eq!(
            Scenario::parse(&text, Path::new("x.toml")).unwrap(),
            explicit
        );
        // Without `delays = true` nothing is drawn.
        assert!(materialise(&without, seed).delays.is_empty());
    }
}
