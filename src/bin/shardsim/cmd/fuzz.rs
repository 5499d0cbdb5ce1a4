//! `shardsim fuzz`: many seeds in parallel, the failures and the campaign's verdict; with
//! `--coverage` or `--guided`, a campaign that collects behaviour coverage or is guided by it.

use crate::args::FuzzArgs;
use crate::common::load_on;
use crate::exit::Exit;
use crate::progress;
use shardsim::campaign::{self, write_atomic, Campaign, FuzzOptions};
use shardsim::slice::Slice;
use shardsim_harness::host::Host;
use shardsim_harness::scenario::Outcome;
use std::path::Path;
use std::time::Instant as WallClock; // the CLI may read the wall clock to report throughput

pub fn run(args: FuzzArgs) -> Exit {
    if args.coverage || args.guided {
        return coverage_or_guided(args);
    }
    let FuzzArgs {
        scenario,
        schedules,
        seed_start,
        jobs,
        summary,
        quiet,
        check_determinism,
        until_failure,
        corpus,
        host,
        slice: slice_spec,
        report,
        ..
    } = args;
    let path: &Path = &scenario;
    let host = host.host();
    let opts = FuzzOptions {
        check_determinism,
        until_failure,
    };
    let sc = match load_on(path, host) {
        Ok(s) => s,
        Err(c) => return c,
    };
    if schedules == 0 {
        eprintln!("error: --schedules must be at least 1");
        return Exit::BadInput;
    }
    if seed_start.checked_add(schedules).is_none() {
        eprintln!(
            "error: --seed-start {seed_start} with --schedules {schedules} runs past the last seed ({})",
            u64::MAX
        );
        return Exit::BadInput;
    }
    if opts.check_determinism == Some(0) {
        eprintln!(
            "error: --check-determinism must be at least 1 (1 checks every seed, K every K-th)"
        );
        return Exit::BadInput;
    }
    // Output paths that cannot be written: say so before the campaign, not after.
    if let Err(code) = crate::common::check_outputs(&[("--summary", summary.as_deref())]) {
        return code;
    }
    // A corpus that does not parse is bad input: say so before the campaign, not after.
    if let Some(c) = &corpus {
        if let Err(e) = campaign::read_corpus(c) {
            eprintln!("error: {e}");
            return Exit::BadInput;
        }
    }
    let slice = match slice_spec {
        None => Slice::WHOLE,
        Some(spec) => match spec.resolve(&|k| std::env::var(k).ok()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: --slice {e}");
                return Exit::BadInput;
            }
        },
    };
    if slice_spec.is_some() && opts.until_failure {
        eprintln!(
            "error: --slice and --until-failure do not go together (each slice would stop at its own first failure; the slices would not merge into one campaign)"
        );
        return Exit::BadInput;
    }
    let jobs = crate::common::jobs_or_cores(jobs);
    let (slice_start, slice_len) = slice.range(seed_start, schedules);
    if slice_spec.is_some() {
        println!(
            "slice {slice} of seeds {seed_start}..{}: seeds {slice_start}..{} ({slice_len} schedules)",
            seed_start.saturating_add(schedules),
            slice_start.saturating_add(slice_len)
        );
    }
    let reporter = progress::Reporter::new(
        format!("fuzz {}", sc.name),
        slice_len,
        "schedules",
        "unexpected",
        quiet,
        opts.until_failure,
    );
    let started = WallClock::now();
    let observe = |t: campaign::Tick| reporter.tick(t.done, t.failures);
    let sum = Campaign::new(&sc, seed_start, schedules)
        .slice(slice)
        .jobs(jobs)
        .options(opts)
        .observe(&observe)
        .host(host)
        .run();
    reporter.finish(sum.schedules, sum.unexpected_count(sc.expect.outcome));
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let ran = sum.schedules;
    let seed_start = sum.seed_start;
    println!(
        "scenario {}: {} schedules (seeds {}..{}) on {} jobs in {:.1}s: {:.0} schedules/s, {:.2} M events/s",
        sc.name,
        ran,
        seed_start,
        sum.seed_end(),
        jobs,
        secs,
        ran as f64 / secs,
        sum.totals.events as f64 / secs / 1e6
    );
    println!("behaviour: {}", sum.behaviour);
    let t = &sum.totals;
    println!(
        "totals: events {}  sends {}  deliveries {}  drops {}  rebalances {}",
        t.events, t.sends, t.deliveries, t.drops, t.rebalances
    );
    if t.drops > 0 {
        println!("drops by reason: {}", t.drops_by_reason_line());
    }
    println!(
        "buffer high-water mark: {} messages (the most a region buffered at once, in any schedule)",
        t.buffer_high_water
    );
    if let Some(k) = opts.check_determinism {
        // Counted from the campaign's first seed, also in a slice.
        let base = slice.offset(schedules);
        let checked = (base + ran).div_ceil(k) - base.div_ceil(k);
        let bad = sum
            .failures
            .iter()
            .filter(|f| f.kind == campaign::FailureKind::Determinism)
            .count();
        println!("determinism: {checked} seeds run twice (every {k}), {bad} with different traces");
    }
    if let Some(p) = &summary {
        let json = serde_json::to_vec_pretty(&sum).unwrap_or_default();
        if let Err(e) = write_atomic(p, &json) {
            eprintln!("error: {}: cannot write summary: {e}", p.display());
            return Exit::BadInput;
        }
    }
    if let Some(dir) = &report {
        let input = shardsim::report::ReportInput {
            scenario: &sc,
            scenario_path: path,
            summary: &sum,
            samples: &reporter.samples(),
            jobs,
        };
        match shardsim::report::write_report(dir, &input) {
            Ok(w) => println!(
                "report: {} figures and {}",
                w.files.len() - 1,
                dir.join("index.md").display()
            ),
            Err(e) => {
                eprintln!("error: --report {}: {e}", dir.display());
                return Exit::BadInput;
            }
        }
    }
    if let Some(c) = &corpus {
        let name = campaign::corpus_scenario_name(path, &campaign::corpus_root(c));
        let found = campaign::corpus_entries(&name, &sum);
        match campaign::append_corpus(c, &found) {
            Ok(added) => println!(
                "corpus {}: {} new entries ({} failing seeds found, at most {} added per campaign)",
                c.display(),
                added.len(),
                found.len(),
                campaign::CORPUS_CAP
            ),
            Err(e) => {
                eprintln!("error: {e}");
                return Exit::BadInput;
            }
        }
    }
    let expected = sc.expect.outcome;
    let mut code = Exit::Ok;
    if opts.until_failure {
        match sum.failures.first() {
            Some(f) => println!(
                "until-failure: first failure after {ran} schedules: seed {}",
                f.seed
            ),
            None => println!(
                "until-failure: no failure in {ran} schedules (seeds {seed_start}..{})",
                sum.seed_end()
            ),
        }
    }
    for f in sum.failures.iter().take(20) {
        print_failure(path, f, expected, host);
    }
    if sum.failures.len() > 20 {
        println!("... and {} more failing seeds", sum.failures.len() - 20);
    }
    // `[[expect.known]]`: known hazards are reported with their counts, not failed.
    for (name, n, _) in campaign::known_found(&sc, &sum, ran) {
        let fix = sc
            .expect
            .known
            .iter()
            .find(|k| k.name == name)
            .and_then(|k| k.fixed_by.clone());
        let how = match fix {
            Some(f) => format!("each such seed is clean with `{f}` on"),
            None => "no fix option declared".into(),
        };
        println!("known hazard `{name}`: {n} of {ran} schedules ({how})");
    }
    match campaign::judge(&sc, &sum, ran, opts.until_failure) {
        Ok(lines) => {
            for l in lines {
                println!("ok: {l}");
            }
        }
        Err(why) => {
            println!("FAILED: {why}");
            code = Exit::Failed;
        }
    }
    code
}

/// One failure: tag, kind (the invariant for a violation), seed, simulated time, detail and
/// the replay command; for an unexpected violation also the command that shrinks it.
fn print_failure(path: &Path, f: &campaign::Failure, expected: Outcome, host: Host) {
    let tag = if f.is_expected(expected) {
        "expected".to_string()
    } else if let Some(k) = &f.known {
        format!("known hazard {k}:")
    } else {
        "UNEXPECTED".to_string()
    };
    println!(
        "{tag} {} seed {} at t={}.{:06}s: {}\n  replay: {}",
        f.label(),
        f.seed,
        f.t_us / 1_000_000,
        f.t_us % 1_000_000,
        f.detail,
        campaign::replay_command_on(path, f.seed, host.name())
    );
    // The shrinker replays on the own world only.
    if !f.is_expected(expected)
        && !f.is_known()
        && f.kind == campaign::FailureKind::Violation
        && host == Host::Own
    {
        println!("  shrink: {}", campaign::shrink_command(path, f.seed));
        println!("  explain: {}", campaign::explain_command(path, f.seed));
    }
}

/// `fuzz --coverage` (a uniform campaign with coverage collected) and `fuzz --guided`.
fn coverage_or_guided(args: FuzzArgs) -> Exit {
    let FuzzArgs {
        scenario,
        schedules,
        seed_start,
        jobs,
        quiet,
        until_failure,
        host,
        guided,
        guided_out,
        batch,
        ..
    } = args;
    let path: &Path = &scenario;
    let host = host.host();
    let guided = guided.then_some((guided_out, batch));
    let mut opts = shardsim::guided::GuidedOptions {
        seed_start,
        schedules,
        jobs: crate::common::jobs_or_cores(jobs),
        until_failure,
        batch: 0,
    };
    let sc = match load_on(path, host) {
        Ok(s) => s,
        Err(c) => return c,
    };
    if host != Host::Own {
        eprintln!("error: --coverage and --guided run on the own world only (leave out --host)");
        return Exit::BadInput;
    }
    if opts.schedules == 0 {
        eprintln!("error: --schedules must be at least 1");
        return Exit::BadInput;
    }
    if opts.seed_start.checked_add(opts.schedules).is_none() {
        eprintln!(
            "error: --seed-start {} with --schedules {} runs past the last seed ({})",
            opts.seed_start,
            opts.schedules,
            u64::MAX
        );
        return Exit::BadInput;
    }
    let what = if guided.is_some() {
        "guided"
    } else {
        "coverage"
    };
    let reporter = progress::Reporter::new(
        format!("fuzz --{what} {}", sc.name),
        opts.schedules,
        "schedules",
        "unexpected",
        quiet,
        opts.until_failure,
    );
    let started = WallClock::now();
    let expected = sc.expect.outcome;
    let Some((dir, batch)) = guided else {
        let rep =
            shardsim::coverage::campaign(&sc, opts.seed_start, opts.schedules, opts.jobs, &|d| {
                reporter.tick(d, 0)
            });
        reporter.finish(rep.schedules, rep.failing);
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        println!(
            "scenario {}: {} schedules (seeds {}..{}) on {} jobs in {:.1}s, coverage on",
            sc.name,
            rep.schedules,
            rep.seed_start,
            rep.seed_start + rep.schedules,
            opts.jobs,
            secs
        );
        println!(
            "coverage: {} features reached (of {} bits); the last new one after schedule {} (seed {})",
            rep.features,
            shardsim::coverage::BITS,
            rep.last_new_at,
            rep.seed_start + rep.last_new_at.saturating_sub(1)
        );
        let g: Vec<String> = rep.growth.iter().map(|(n, f)| format!("{n}:{f}")).collect();
        println!("growth (schedules:features): {}", g.join(" "));
        match &rep.first_failure {
            Some((seed, inv, t)) => println!(
                "failing schedules: {} (first: seed {seed}, {inv} at t={})",
                rep.failing,
                shardsim::shrink::secs(*t)
            ),
            None => println!("failing schedules: 0"),
        }
        return Exit::Ok;
    };
    opts.batch = batch;
    let rep = shardsim::guided::guided(&sc, opts, &|d| reporter.tick(d, 0));
    reporter.finish(rep.schedules, rep.failures.len() as u64);
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    println!(
        "guided {}: {} schedules (--seed-start {}, generations of {}) on {} jobs in {:.1}s: {:.0} schedules/s",
        sc.name,
        rep.schedules,
        opts.seed_start,
        batch,
        opts.jobs,
        secs,
        rep.schedules as f64 / secs
    );
    if rep.families.is_empty() {
        println!("perturbations: nothing to perturb (one node, one entity, no faults): seed-only");
    } else {
        println!("perturbations: {} and the seed", rep.families.join(", "));
    }
    println!(
        "coverage: {} features reached; corpus {} inputs; the last new feature after schedule {}",
        rep.features, rep.corpus, rep.last_new_at
    );
    if opts.until_failure {
        match rep.failures.first() {
            Some(f) => println!(
                "until-failure: first failure after {} schedules: seed {}",
                f.at, f.seed
            ),
            None => println!("until-failure: no failure in {} schedules", rep.schedules),
        }
    }
    let mut code = Exit::Ok;
    let unexpected = rep
        .failures
        .iter()
        .filter(|f| !f.failure.is_expected(expected) && !f.failure.is_known())
        .count();
    if unexpected > 0 {
        code = Exit::Failed;
    }
    for f in rep.failures.iter().take(20) {
        let tag = if f.failure.is_expected(expected) {
            "expected".to_string()
        } else if let Some(k) = &f.failure.known {
            format!("known hazard {k}:")
        } else {
            "UNEXPECTED".to_string()
        };
        println!(
            "{tag} {} seed {} (schedule {}) at t={}: {}",
            f.failure.label(),
            f.seed,
            f.at,
            shardsim::shrink::secs(f.failure.t_us),
            f.failure.detail
        );
        if !f.mutations.is_empty() {
            println!("  perturbations: {}", f.mutations.join("; "));
        }
        match shardsim::guided::write_found(&dir, path, &sc.name, f) {
            Ok(p) => {
                println!("  written to {}", p.display());
                println!("  replay: {}", campaign::replay_command(&p, f.seed));
                println!("  shrink: {}", campaign::shrink_command(&p, f.seed));
                println!("  explain: {}", campaign::explain_command(&p, f.seed));
            }
            Err(e) => {
                eprintln!("error: {e}");
                return Exit::BadInput;
            }
        }
    }
    if rep.failures.len() > 20 {
        println!(
            "... and {} more failing inputs (not written)",
            rep.failures.len() - 20
        );
    }
    let found = rep
        .failures
        .iter()
        .filter(|f| f.failure.is_expected(expected))
        .count();
    let known = rep.failures.iter().filter(|f| f.failure.is_known()).count();
    if known > 0 {
        println!("known hazards: {known} inputs showed a hazard the scenario declares known");
    }
    if code != Exit::Ok {
        println!("FAILED: {unexpected} inputs failed in a way the scenario does not expect");
    } else if expected != Outcome::None && found == 0 {
        println!("FAILED: the scenario expects `{expected}`, but no input showed it");
        code = Exit::Failed;
    } else if expected != Outcome::None {
        println!(
            "ok: expected `{expected}` found in {found} of {} inputs",
            rep.schedules
        );
    } else {
        println!("ok: no violation");
    }
    code
}
