//! `shardsim run`: one schedule and its summary; on a violation, the trace around it and the
//! replay command.

use crate::args::RunArgs;
use crate::common::load_on;
use crate::exit::Exit;
use shardsim::campaign::{self, write_atomic};
use shardsim_harness::host::{self, Host};
use shardsim_harness::options::OptionsByName;
use shardsim_harness::scenario::Outcome;
use shardsim_harness::trace::TraceMode;
use std::path::Path;

pub fn run(args: RunArgs) -> Exit {
    let RunArgs {
        scenario,
        seed,
        trace,
        context,
        host,
        perfetto,
    } = args;
    let path: &Path = &scenario;
    let host = host.host();
    let sc = match load_on(path, host) {
        Ok(s) => s,
        Err(c) => return c,
    };
    if let Err(code) = crate::common::check_outputs(&[
        ("--trace", trace.as_deref()),
        ("--perfetto", perfetto.as_deref()),
    ]) {
        return code;
    }
    // With --trace, the causal recorder runs beside the trace (its `step` lines are what
    // `explain TRACE` reads); with --perfetto, the run also records send times for the flows.
    // The trace and its hash are the same without either. Both are the own world's.
    let (r, tracer, causal) = if host != Host::Own {
        let (r, t) = host::run_seed(host, &sc, seed, TraceMode::Full);
        (r, t, Default::default())
    } else {
        let mut w = shardsim_harness::sim::World::new(sc.clone(), seed, TraceMode::Full);
        if trace.is_some() {
            w = w.with_causal();
        }
        if perfetto.is_some() {
            w = w.record_flows();
        }
        let (r, t, c) = w.run_recorded();
        (r, t, c.unwrap_or_default())
    };
    let s = &r.stats;
    println!("scenario {} seed {seed}: simulated {}", sc.name, r.end);
    println!("behaviour: {}", sc.options.behaviour());
    println!(
        "events {}  messages {}  sends {}  deliveries {}  drops {}  rebalances {} ({} done)  entity starts {}",
        s.events, s.messages, s.sends, s.deliveries, s.drops, s.rebalances, s.rebalances_done, s.entity_starts
    );
    println!(
        "buffer high-water mark: {} messages (the most a region buffered at once)",
        s.buffer_high_water
    );
    if s.drops > 0 {
        println!("drops by reason: {}", s.drops_by_reason_line());
    }
    println!("trace hash {:016x}", r.trace_hash);
    if let Some(p) = &trace {
        let text = shardsim::explain::jsonl_with_steps(&tracer, &causal);
        if let Err(e) = write_atomic(p, text.as_bytes()) {
            eprintln!("error: {}: cannot write trace: {e}", p.display());
            return Exit::BadInput;
        }
        println!("trace written to {}", p.display());
    }
    if let Some(p) = &perfetto {
        let meta = [
            ("scenario", sc.name.clone()),
            ("scenario_file", path.display().to_string()),
            ("seed", seed.to_string()),
            ("behaviour", sc.options.behaviour()),
            ("trace_hash", format!("{:016x}", r.trace_hash)),
            ("ts", "simulated microseconds".to_string()),
        ];
        let (json, st) = shardsim::perfetto::export(tracer.events(), tracer.flows(), &meta);
        if let Err(e) = write_atomic(p, json.as_bytes()) {
            eprintln!("error: {}: cannot write Perfetto trace: {e}", p.display());
            return Exit::BadInput;
        }
        println!(
            "perfetto trace written to {} ({} slices, {} message flows, {} instants, {} messages lost in flight); open it in ui.perfetto.dev or chrome://tracing",
            p.display(),
            st.slices,
            st.flows,
            st.instants,
            st.lost
        );
    }
    match &r.violation {
        None => {
            println!("outcome: none");
            if sc.expect.outcome != Outcome::None {
                println!(
                    "(this scenario expects `{}` in some seed; this seed did not show it)",
                    sc.expect.outcome
                );
            }
            Exit::Ok
        }
        Some(v) => {
            println!(
                "\nVIOLATION {} (seed {seed}) at t={}: {}",
                v.invariant, v.t, v.detail
            );
            println!("\ntrace before the violation (last {context} events):");
            let ev = tracer.events();
            let from = ev.len().saturating_sub(context + 1);
            for (t, e) in &ev[from..] {
                println!("  {}", e.to_json(*t));
            }
            println!(
                "\nreplay: {}",
                campaign::replay_command_on(path, seed, host.name())
            );
            let known =
                campaign::known_hazard(&sc, seed, v, &|s, n, m| host::run_seed(host, s, n, m).0);
            if v.invariant == sc.expect.outcome {
                println!("outcome: {} (expected by the scenario)", v.invariant);
                Exit::Ok
            } else if let Some(k) = known {
                let fix = sc.expect.known.iter().find(|h| h.name == k);
                let fix = fix.and_then(|h| h.fixed_by.as_deref());
                match fix {
                    Some(f) => println!(
                        "outcome: {} (the scenario's known hazard `{k}`: this seed is clean with `{f}` on)",
                        v.invariant
                    ),
                    None => println!("outcome: {} (the scenario's known hazard `{k}`)", v.invariant),
                }
                Exit::Ok
            } else {
                // The shrinker replays on the own world only.
                if host == Host::Own {
                    println!("shrink: {}", campaign::shrink_command(path, seed));
                    println!("explain: {}", campaign::explain_command(path, seed));
                }
                println!("outcome: {} (UNEXPECTED)", v.invariant);
                Exit::Failed
            }
        }
    }
}
