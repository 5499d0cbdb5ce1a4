//! `shardsim shrink`: a failing seed shrunk to a minimal scenario that still breaks the same
//! invariant, written as a scenario file.

use crate::args::ShrinkArgs;
use crate::common::load;
use crate::exit::Exit;
use crate::progress;
use shardsim::campaign::replay_command;
use std::path::{Path, PathBuf};

pub fn run(args: ShrinkArgs) -> Exit {
    use shardsim::shrink::{self, secs, ShrinkError, ShrinkOptions};
    let ShrinkArgs {
        scenario,
        seed,
        out,
        max_runs,
        seed_tries,
        quiet,
    } = args;
    let path: &Path = &scenario;
    let sc = match load(path) {
        Ok(s) => s,
        Err(c) => return c,
    };
    if max_runs < 2 {
        eprintln!("error: --max-runs must be at least 2 (the seed, then its explicit plan)");
        return Exit::BadInput;
    }
    let out = out.unwrap_or_else(|| {
        PathBuf::from("shardsim-out/shrunk").join(format!("{}-seed{seed}.toml", sc.name))
    });
    if let Err(code) = crate::common::check_outputs(&[("--out", Some(&out))]) {
        return code;
    }
    let opts = ShrinkOptions {
        max_runs,
        seed_tries,
    };
    let reporter = progress::Reporter::new(
        format!("shrink {} seed {seed}", sc.name),
        max_runs,
        "replays",
        "reductions kept",
        quiet,
        true,
    );
    let res = shrink::shrink_observed(&sc, seed, opts, &|runs, kept| reporter.tick(runs, kept));
    reporter.finish(0, 0);
    let res = match res {
        Ok(r) => r,
        Err(e @ ShrinkError::NoFailure { .. }) => {
            eprintln!("error: {}: {e}", path.display());
            return Exit::BadInput;
        }
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            return Exit::Failed;
        }
    };
    let o = &res.original;
    println!(
        "failure: {} {} seed {seed} at t={}: {}\n  replay: {}",
        o.kind,
        o.label(),
        secs(o.t_us),
        o.detail,
        replay_command(path, seed)
    );
    println!("shrinking ({} replays at most):", max_runs);
    for s in &res.steps {
        println!("  {s}");
    }
    let (b, a) = (&res.before, &res.after);
    println!(
        "replays: {}{}",
        res.runs,
        if res.budget_exhausted {
            " (budget spent before a fixed point; --max-runs for more)"
        } else {
            " (fixed point)"
        }
    );
    println!(
        "faults {} → {} ({} of them before the violation)",
        b.faults, a.faults, b.faults_before_violation
    );
    println!("nodes {} → {}", b.nodes, a.nodes);
    println!(
        "messages sent before the violation {} → {}",
        b.messages, a.messages
    );
    println!("end {} ms → {} ms", b.end_ms, a.end_ms);
    println!(
        "entities {} → {}, shards {} → {}, senders per node {} → {}, focus {} → {}, send interval {:?} → {:?} ms, workload stop {} ms → {} ms",
        b.entities,
        a.entities,
        b.shards,
        a.shards,
        b.senders_per_node,
        a.senders_per_node,
        b.focus,
        a.focus,
        b.interval_ms,
        a.interval_ms,
        b.stop_ms,
        a.stop_ms
    );
    let mut minimal = res.scenario.clone();
    minimal.description = shrink::describe(&res, path, &out);
    if let Err(e) = shrink::write_scenario(&out, &minimal) {
        eprintln!("error: {e}");
        return Exit::BadInput;
    }
    let f = &res.failure;
    println!(
        "shrunk: {} {} seed {} at t={}: {}",
        f.kind,
        f.label(),
        res.seed,
        secs(f.t_us),
        f.detail
    );
    println!("written to {}", out.display());
    println!("  replay: {}", replay_command(&out, res.seed));
    Exit::Ok
}
