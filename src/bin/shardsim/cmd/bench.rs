//! `shardsim bench`: the simulator against a bare event loop, the own world against madsim
//! (`--host madsim`), or the scale grid (`--scale`).

use crate::args::{BenchArgs, HostArg};
use crate::common::{load, load_on};
use crate::exit::Exit;
use shardsim::campaign::Campaign;
use shardsim_harness::host::Host;
use std::path::Path;
use std::time::Instant as WallClock; // the CLI may read the wall clock to report throughput

/// `bench --scale` and its hidden `--scale-cell`: [`shardsim::scale::main`], whose exit code
/// (0, 1 or 2) the command ends with as it is.
pub fn scale(args: BenchArgs) -> u8 {
    let BenchArgs {
        nodes,
        entities,
        sim_ms,
        min_secs,
        max_rss_mb,
        scale_cell,
        ..
    } = args;
    let flags = shardsim::scale::Flags {
        nodes,
        entities,
        sim_ms,
        min_secs,
        max_rss_mb,
    };
    shardsim::scale::main(flags, scale_cell)
}

pub fn run(args: BenchArgs) -> Exit {
    if args.host == Some(HostArg::Madsim) {
        return hosts(args);
    }
    let BenchArgs {
        scenario,
        schedules,
        jobs,
        rounds,
        ..
    } = args;
    let path: &Path = &scenario;
    let sc = match load(path) {
        Ok(s) => s,
        Err(c) => return c,
    };
    if schedules == 0 || jobs == 0 || rounds == 0 {
        eprintln!("error: --schedules, --jobs and --rounds must be at least 1");
        return Exit::BadInput;
    }
    let mut ratios = Vec::new();
    for round in 1..=rounds {
        if rounds > 1 {
            println!("round {round} of {rounds}:");
        }
        let started = WallClock::now();
        let sum = Campaign::new(&sc, 0, schedules).jobs(jobs).run();
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        let events = sum.totals.events;
        println!(
            "bench {}: {} schedules on {} jobs in {:.2}s: {:.1} schedules/s, {:.2} M events/s, {:.0} deliveries/schedule",
            sc.name,
            schedules,
            jobs,
            secs,
            schedules as f64 / secs,
            events as f64 / secs / 1e6,
            sum.totals.deliveries as f64 / schedules as f64
        );
        let per_core = events as f64 / secs / jobs as f64;
        println!(
            "per core: {:.1} schedules/s, {:.2} M events/s ({} events/schedule)",
            schedules as f64 / secs / jobs as f64,
            per_core / 1e6,
            events / schedules
        );
        let started = WallClock::now();
        let checksum = shardsim_harness::bare::bare_loop(events, 0);
        let bare_secs = started.elapsed().as_secs_f64().max(1e-9);
        let bare = events as f64 / bare_secs;
        println!(
            "bare event loop (the same event queue and event size, ChaCha8 latencies, 1 core): {events} events in {bare_secs:.2}s: {:.2} M events/s (checksum {checksum:016x})",
            bare / 1e6
        );
        let ratio = 100.0 * per_core / bare;
        println!("full simulator with checkers = {ratio:.1}% of the bare loop (per core)");
        ratios.push(ratio);
    }
    if rounds > 1 {
        ratios.sort_by(f64::total_cmp);
        println!(
            "median over {rounds} rounds: full simulator with checkers = {:.1}% of the bare loop (per core; lowest {:.1}%, highest {:.1}%)",
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1]
        );
    }
    Exit::Ok
}

/// `bench --host madsim`: the own world and the madsim host on the same scenario and seeds,
/// alternating per round, one job each; events/s of each and the ratio of their speeds.
fn hosts(args: BenchArgs) -> Exit {
    let BenchArgs {
        scenario,
        schedules,
        rounds,
        ..
    } = args;
    let path: &Path = &scenario;
    let sc = match load_on(path, Host::Madsim) {
        Ok(s) => s,
        Err(c) => return c,
    };
    if schedules == 0 || rounds == 0 {
        eprintln!("error: --schedules and --rounds must be at least 1");
        return Exit::BadInput;
    }
    let mut ratios = Vec::new();
    for round in 1..=rounds {
        if rounds > 1 {
            println!("round {round} of {rounds}:");
        }
        let mut speed = Vec::new();
        for h in [Host::Own, Host::Madsim] {
            let started = WallClock::now();
            let sum = Campaign::new(&sc, 0, schedules).host(h).run();
            let secs = started.elapsed().as_secs_f64().max(1e-9);
            let t = &sum.totals;
            println!(
                "bench {} on {:>6}: {} schedules in {:.2}s: {:.2} schedules/s, {:.3} M events/s ({} events, {} deliveries/schedule, {} failing)",
                sc.name,
                h.name(),
                schedules,
                secs,
                schedules as f64 / secs,
                t.events as f64 / secs / 1e6,
                t.events / schedules,
                t.deliveries / schedules,
                sum.failures.len()
            );
            speed.push((schedules as f64 / secs, t.events as f64 / secs));
        }
        let ratio = speed[0].0 / speed[1].0;
        println!(
            "own world / madsim: {ratio:.1}x schedules/s, {:.1}x events/s (1 core each)",
            speed[0].1 / speed[1].1
        );
        ratios.push(ratio);
    }
    if rounds > 1 {
        ratios.sort_by(f64::total_cmp);
        println!(
            "median over {rounds} rounds: own world {:.1}x madsim in schedules/s (lowest {:.1}x, highest {:.1}x)",
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1]
        );
    }
    Exit::Ok
}
