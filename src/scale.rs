//! The scale benchmark (`shardsim bench --scale`): a grid of cluster sizes
//! and entity counts, one child process per cell so that each cell's peak RSS is its own.
//!
//! A cell is one scenario built here ([`cell_scenario`]): `nodes` nodes joining at 0, one
//! sender per node, `entities` entities in `min(1000, entities)` shards, the split-brain
//! resolver with keep-majority, no faults, a short simulated time. The child
//! (`bench --scale-cell N E`) runs seed 0, then more seeds until it has run for at least
//! `min_secs` of wall-clock time (so a small cell is timed over many events), and prints one
//! line `scale-cell {json}` with its counts, its wall time and its peak RSS (`VmHWM` of
//! `/proc/self/status`). The parent prints the table, with each cell's nanoseconds per event
//! relative to the 3-node/100-entity cell of the same run (always run, first).
//!
//! Wall-clock reads here time the benchmark only; no simulation reads them.

use crate::campaign;
use serde::{Deserialize, Serialize};
use shardsim_harness::scenario::Scenario;
use shardsim_harness::trace::TraceMode;
use std::path::Path;
use std::sync::Arc;

/// The grid's node counts.
pub const NODES: [u32; 4] = [3, 10, 30, 100];
/// The grid's entity counts.
pub const ENTITIES: [u32; 3] = [100, 10_000, 1_000_000];
/// The reference cell: every other cell's cost per event is relative to it.
pub const REFERENCE: (u32, u32) = (3, 100);
/// Shards per cell, where the entities allow.
pub const SHARDS: u32 = 1_000;
/// Default simulated time of a cell, ms.
pub const DEFAULT_SIM_MS: u64 = 20_000;

/// The scenario of one cell.
pub fn cell_scenario(nodes: u32, entities: u32, sim_ms: u64) -> Result<Scenario, String> {
    let text = format!(
        r#"name = "scale-{nodes}x{entities}"
description = "scale benchmark cell: {nodes} nodes, {entities} entities"

[cluster]
nodes = {nodes}

[entities]
count = {entities}
shards = {shards}

[workload]
senders-per-node = 1
stop-ms = {sim_ms}

[membership.downing]
provider = "split-brain-resolver"
strategy = "keep-majority"

[run]
duration-ms = {sim_ms}
"#,
        shards = SHARDS.min(entities),
    );
    Scenario::parse(&text, Path::new("<bench --scale cell>")).map_err(|e| e.to_string())
}

/// What a cell's child process reports.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
pub struct CellResult {
    /// The cell's cluster size (`cluster.nodes` of its scenario).
    pub nodes: u32,
    /// The cell's entity count (`entities.count` of its scenario).
    pub entities: u32,
    /// Simulated time per schedule, ms.
    pub sim_ms: u64,
    /// Events of seed 0 (deterministic).
    pub events_per_schedule: u64,
    /// User messages delivered in seed 0.
    pub deliveries_per_schedule: u64,
    /// Entity incarnations started in seed 0 (the live state the memory target is about).
    pub entity_starts_per_schedule: u64,
    /// Schedules run (seeds 0..schedules).
    pub schedules: u64,
    /// Events over all of them.
    pub events: u64,
    /// Wall time over all of them, s.
    pub secs: f64,
    /// Peak resident set of the child process, KiB (`VmHWM`; 0 where unknown).
    pub max_rss_kb: u64,
    /// Schedules that found a violation (expected: none).
    pub failing: u64,
}

impl CellResult {
    /// Wall-clock nanoseconds per event.
    pub fn ns_per_event(&self) -> f64 {
        self.secs * 1e9 / self.events.max(1) as f64
    }
}

/// The peak resident set size of this process in KiB (`VmHWM` in `/proc/self/status`).
pub fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Run one cell in this process (the child's side).
pub fn run_cell(
    nodes: u32,
    entities: u32,
    sim_ms: u64,
    min_secs: f64,
) -> Result<CellResult, String> {
    let sc = Arc::new(cell_scenario(nodes, entities, sim_ms)?);
    let started = std::time::Instant::now(); // determinism-ok: the bench's wall clock, outside any simulation
    let mut res = CellResult {
        nodes,
        entities,
        sim_ms,
        events_per_schedule: 0,
        deliveries_per_schedule: 0,
        entity_starts_per_schedule: 0,
        schedules: 0,
        events: 0,
        secs: 0.0,
        max_rss_kb: 0,
        failing: 0,
    };
    loop {
        let (r, _) = campaign::run_seed(&sc, res.schedules, TraceMode::Off);
        if res.schedules == 0 {
            res.events_per_schedule = r.stats.events;
            res.deliveries_per_schedule = r.stats.deliveries;
            res.entity_starts_per_schedule = r.stats.entity_starts;
        }
        res.schedules += 1;
        res.events += r.stats.events;
        res.failing += u64::from(r.violation.is_some());
        res.secs = started.elapsed().as_secs_f64();
        if res.secs >= min_secs || res.schedules >= 10_000 {
            break;
        }
    }
    res.max_rss_kb = peak_rss_kb().unwrap_or(0);
    Ok(res)
}

/// The line a child prints.
pub fn cell_line(r: &CellResult) -> String {
    format!(
        "scale-cell {}",
        serde_json::to_string(r).unwrap_or_default()
    )
}

/// Parse a child's output: the `scale-cell` line.
pub fn parse_cell_output(stdout: &str) -> Option<CellResult> {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("scale-cell "))
        .and_then(|j| serde_json::from_str(j).ok())
}

/// Parse a comma-separated list of counts (`--nodes 3,10`), each in `lo..=hi`.
pub fn parse_list(flag: &str, s: &str, lo: u32, hi: u32) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim().replace('_', "");
        let v: u32 = part
            .parse()
            .map_err(|e| format!("{flag}: `{part}` is not a whole number: {e}"))?;
        if !(lo..=hi).contains(&v) {
            return Err(format!("{flag}: {v} is out of range {lo}..={hi}"));
        }
        if !out.contains(&v) {
            out.push(v);
        }
    }
    Ok(out)
}

/// The table's header.
pub fn table_header() -> String {
    "| nodes | entities | shards | events/schedule | deliveries/schedule | entities started | schedules | events/s | ns/event | ns/event ratio | max RSS | RSS above the 3x100 cell per entity started |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|".to_string()
}

/// One row of the table, against the reference cell: its ns/event and its RSS (the
/// constant the per-entity figure leaves out).
pub fn table_row(r: &CellResult, reference: &CellResult) -> String {
    let ns = r.ns_per_event();
    let above = r.max_rss_kb.saturating_sub(reference.max_rss_kb) as f64 * 1024.0;
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {:.2} M | {:.0} | {:.2}x | {:.1} MB | {:.0} B |",
        r.nodes,
        r.entities,
        SHARDS.min(r.entities),
        r.events_per_schedule,
        r.deliveries_per_schedule,
        r.entity_starts_per_schedule,
        r.schedules,
        r.events as f64 / r.secs.max(1e-9) / 1e6,
        ns,
        ns / reference.ns_per_event().max(1e-9),
        r.max_rss_kb as f64 / 1024.0,
        above / r.entity_starts_per_schedule.max(1) as f64,
    )
}

/// The flags of `bench --scale` (unset: the defaults).
#[derive(Clone, Debug, Default)]
pub struct Flags {
    /// `--nodes`: a comma-separated list.
    pub nodes: Option<String>,
    /// `--entities`: a comma-separated list.
    pub entities: Option<String>,
    /// `--sim-ms`.
    pub sim_ms: Option<u64>,
    /// `--min-secs`.
    pub min_secs: Option<f64>,
    /// `--max-rss-mb`.
    pub max_rss_mb: Option<u64>,
}

/// Default address-space cap of a cell, MB.
pub const DEFAULT_MAX_MB: u64 = 6_000;

/// Cap this process's address space (`RLIMIT_AS`) at `mb` MB, so that a cell too large for
/// the machine aborts on allocation instead of pushing its neighbours out.
fn cap_address_space(mb: u64) {
    #[cfg(unix)]
    {
        let bytes = mb.saturating_mul(1 << 20) as libc::rlim_t;
        let lim = libc::rlimit {
            rlim_cur: bytes,
            rlim_max: bytes,
        };
        // SAFETY: setrlimit with a valid struct; failure leaves the limit as it was.
        unsafe {
            libc::setrlimit(libc::RLIMIT_AS, &lim);
        }
    }
}

/// `bench --scale` (the grid, each cell a child process of this binary) and its hidden
/// `--scale-cell N E` (one cell, in this process). Returns the exit code: 2 on bad flags, 1 when
/// a cell failed or found a violation.
pub fn main(flags: Flags, cell: Option<Vec<u32>>) -> u8 {
    let bad = |m: String| {
        eprintln!("error: {m}");
        2
    };
    let sim_ms = flags.sim_ms.unwrap_or(DEFAULT_SIM_MS);
    if sim_ms == 0 {
        return bad("--sim-ms must be at least 1".into());
    }
    let min_secs = flags.min_secs.unwrap_or(1.0);
    if !(0.0..=3600.0).contains(&min_secs) {
        return bad(format!("--min-secs must be in 0..=3600, got {min_secs}"));
    }
    let max_mb = flags.max_rss_mb.unwrap_or(DEFAULT_MAX_MB);
    if max_mb < 64 {
        return bad(format!("--max-rss-mb must be at least 64, got {max_mb}"));
    }
    if let Some(c) = cell {
        cap_address_space(max_mb);
        return match run_cell(c[0], c[1], sim_ms, min_secs) {
            Ok(r) => {
                println!("{}", cell_line(&r));
                0
            }
            Err(e) => bad(e),
        };
    }
    let list = |flag: &str, v: &Option<String>, all: &[u32], hi: u32| match v {
        None => Ok(all.to_vec()),
        Some(s) => parse_list(flag, s, 1, hi),
    };
    let nodes = match list("--nodes", &flags.nodes, &NODES, 1_000) {
        Ok(v) => v,
        Err(e) => return bad(e),
    };
    let entities = match list("--entities", &flags.entities, &ENTITIES, 1 << 24) {
        Ok(v) => v,
        Err(e) => return bad(e),
    };
    for &n in &nodes {
        for &e in &entities {
            if let Err(m) = cell_scenario(n, e, sim_ms) {
                return bad(format!("cell {n} x {e}: {m}"));
            }
        }
    }
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => return bad(format!("cannot find this binary to run the cells: {e}")),
    };
    let run = |n: u32, e: u32| {
        let out = std::process::Command::new(&exe)
            .args([
                "bench",
                "--scale",
                "--scale-cell",
                &n.to_string(),
                &e.to_string(),
            ])
            .args([
                "--sim-ms",
                &sim_ms.to_string(),
                "--min-secs",
                &min_secs.to_string(),
            ])
            .args(["--max-rss-mb", &max_mb.to_string()])
            .output()
            .map_err(|err| format!("cannot start: {err}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        parse_cell_output(&stdout).ok_or_else(|| {
            let err = String::from_utf8_lossy(&out.stderr);
            if err.contains("memory allocation of") {
                return format!(
                    "over the {max_mb} MB cap (an allocation failed; {})",
                    out.status
                );
            }
            let first = err.lines().next().unwrap_or("").trim().to_string();
            format!("no result ({}): {first}", out.status)
        })
    };
    println!(
        "scale bench: {sim_ms} simulated ms per schedule, keep-majority, one sender per node, no \
         faults; each cell a child process repeating seeds for at least {min_secs} s, capped \
         at {max_mb} MB of address space"
    );
    let (rn, re) = REFERENCE;
    let reference = match run(rn, re) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: reference cell {rn} x {re}: {e}");
            return 1;
        }
    };
    println!("{}", table_header());
    let mut code = 0;
    for &n in &nodes {
        for &e in &entities {
            let r = if (n, e) == (rn, re) {
                Ok(reference.clone())
            } else {
                run(n, e)
            };
            match r {
                Ok(r) => {
                    if r.failing > 0 {
                        code = 1;
                    }
                    println!("{}", table_row(&r, &reference));
                    if r.failing > 0 {
                        println!(
                            "(cell {n} x {e}: {} schedules found a violation, expected none)",
                            r.failing
                        );
                    }
                }
                Err(m) => {
                    code = 1;
                    println!("| {n} | {e} | {} | {m} |", SHARDS.min(e));
                }
            }
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_grid_cell_is_a_valid_scenario() {
        for n in NODES {
            for e in ENTITIES {
                let sc = cell_scenario(n, e, DEFAULT_SIM_MS).unwrap();
                assert_eq!(sc.cluster.nodes, n);
                assert_eq!(sc.entities.shards, SHARDS.min(e));
            }
        }
    }

    #[test]
    fn lists_parse_and_reject_nonsense() {
        assert_eq!(
            parse_list("--nodes", "3,10,3", 1, 100).unwrap(),
            vec![3, 10]
        );
        assert_eq!(
            parse_list("--e", "1_000_000", 1, 2_000_000).unwrap(),
            vec![1_000_000]
        );
        assert!(parse_list("--nodes", "0", 1, 100).is_err());
        assert!(parse_list("--nodes", "3,x", 1, 100).is_err());
        assert!(parse_list("--nodes", "", 1, 100).is_err());
    }

    #[test]
    fn a_cell_line_round_trips() {
        let r = run_cell(3, 100, 2_000, 0.0).unwrap();
        assert_eq!(r.schedules, 1);
        assert!(r.events > 0);
        assert_eq!(
            parse_cell_output(&format!("x\n{}\n", cell_line(&r))),
            Some(r)
        );
    }
}
