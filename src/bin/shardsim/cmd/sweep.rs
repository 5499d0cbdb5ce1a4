//! `shardsim sweep`: every scenario file at campaign scale, each judged as `fuzz` judges it,
//! kept per file, and a Markdown report; `--report-only` and `--compact` run nothing.

use crate::args::SweepArgs;
use crate::common::scenario_files;
use crate::exit::Exit;
use shardsim::campaign::write_atomic;
use shardsim_harness::scenario::Scenario;
use std::path::{Path, PathBuf};

/// What `sweep` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SweepMode {
    /// Run every file not kept with this plan and model.
    Run,
    /// `--report-only`, `check`: `--check-fingerprint`.
    Report { check: bool },
    /// `--compact`.
    Compact,
}

pub fn run(args: SweepArgs) -> Exit {
    let SweepArgs {
        dir,
        schedules,
        slow_schedules,
        slow_after_events,
        only,
        jobs,
        summaries,
        report_only,
        check_fingerprint,
        compact,
        out,
    } = args;
    let plan = &shardsim::sweep::Plan {
        schedules,
        slow_schedules,
        slow_after_events,
        jobs: crate::common::jobs_or_cores(jobs),
        summaries,
    };
    let mode = match (report_only, check_fingerprint, compact) {
        (_, _, true) => SweepMode::Compact,
        (true, false, _) => SweepMode::Report { check: false },
        (true, true, _) => SweepMode::Report { check: true },
        _ => SweepMode::Run,
    };
    let dir: &Path = &dir;
    let out: &Path = &out;
    if !dir.is_dir() {
        eprintln!("error: {}: not a folder of scenario files", dir.display());
        return Exit::BadInput;
    }
    if let Err(code) = crate::common::check_outputs(&[("--out", Some(out))]) {
        return code;
    }
    let files: Vec<PathBuf> = scenario_files(dir)
        .into_iter()
        .filter(|f| {
            only.is_empty()
                || only
                    .iter()
                    .any(|o| f.to_string_lossy().contains(o.as_str()))
        })
        .collect();
    if files.is_empty() {
        eprintln!("error: {}: no scenario file matches", dir.display());
        return Exit::BadInput;
    }
    // Load every file first: a bad one stops the sweep before hours are spent.
    let mut scenarios = Vec::new();
    for f in &files {
        match Scenario::load(f) {
            Ok(sc) => scenarios.push(sc),
            Err(e) => {
                eprintln!("error: {e}");
                return Exit::BadInput;
            }
        }
    }
    if mode == SweepMode::Compact {
        return sweep_compact(&files, &scenarios, plan);
    }
    if let SweepMode::Report { check } = mode {
        return sweep_report(&files, &scenarios, plan, check, out);
    }
    let prints: Vec<String> = scenarios
        .iter()
        .map(|sc| shardsim::sweep::fingerprint(&std::sync::Arc::new(sc.clone())))
        .collect();
    let mut rows: Vec<(PathBuf, Option<(Scenario, shardsim::sweep::Entry)>)> = files
        .iter()
        .zip(&scenarios)
        .zip(&prints)
        .map(|((f, sc), print)| {
            let file = f.to_string_lossy();
            let kept = shardsim::sweep::reuse(&plan.summaries, &file, sc, plan, print)
                .or_else(|| shardsim::sweep::resume(&plan.summaries, &file, sc, plan, print));
            (f.clone(), kept.map(|e| (sc.clone(), e)))
        })
        .collect();
    let mut mismatched = 0;
    for i in 0..rows.len() {
        let (f, row) = &rows[i];
        let (kept, resumed) = match row {
            Some((_, e)) if e.is_done(plan) => (Some(e), None),
            Some((_, e)) => {
                println!(
                    "[{}/{}] {}: resuming from seed {} of {}",
                    i + 1,
                    rows.len(),
                    f.display(),
                    e.summary.schedules,
                    shardsim::sweep::planned(plan, e.slow)
                );
                (None, Some(e.clone()))
            }
            None => (None, None),
        };
        let e = match kept {
            Some(e) => e.clone(),
            None => match shardsim::sweep::sweep_file(
                f,
                &scenarios[i],
                prints[i].clone(),
                plan,
                resumed,
                &|_| {},
            ) {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("error: {e}");
                    return Exit::BadInput;
                }
            },
        };
        let verdict = match &e.verdict {
            Ok(_) => "matches".to_string(),
            Err(why) => {
                mismatched += 1;
                format!("DOES NOT MATCH: {why}")
            }
        };
        println!(
            "[{}/{}] {}: {} seeds{}, {}, {:.0}s{}",
            i + 1,
            rows.len(),
            f.display(),
            e.summary.schedules,
            if e.slow { " (slow)" } else { "" },
            verdict,
            e.secs,
            if kept.is_some() {
                " (kept from an earlier sweep)"
            } else {
                ""
            }
        );
        rows[i].1 = Some((scenarios[i].clone(), e));
        // The report after every file, so a stopped sweep leaves what it found.
        if let Err(e) = write_atomic(
            out,
            shardsim::sweep::report(&rows, plan, &shardsim::sweep::Model::Current).as_bytes(),
        ) {
            eprintln!("error: {}: cannot write: {e}", out.display());
            return Exit::BadInput;
        }
    }
    println!(
        "sweep: {} files, {} match their declaration, {mismatched} do not; report {}",
        rows.len(),
        rows.len() - mismatched,
        out.display()
    );
    if mismatched > 0 {
        Exit::Failed
    } else {
        Exit::Ok
    }
}

/// `sweep --report-only`: the report from the kept results, running nothing (but seeds 0-2
/// of each file with `check`).
fn sweep_report(
    files: &[PathBuf],
    scenarios: &[Scenario],
    plan: &shardsim::sweep::Plan,
    check: bool,
    out: &Path,
) -> Exit {
    use shardsim::sweep::{self, Model};
    let rows: Vec<(PathBuf, Option<(Scenario, sweep::Entry)>)> = files
        .iter()
        .zip(scenarios)
        .map(|(f, sc)| {
            let kept = sweep::read_kept(&plan.summaries, &f.to_string_lossy(), sc, plan);
            (f.clone(), kept.map(|e| (sc.clone(), e)))
        })
        .collect();
    let model = if check {
        Model::Checked(
            rows.iter()
                .filter_map(|(f, r)| {
                    let (sc, e) = r.as_ref()?;
                    let print = sweep::fingerprint(&std::sync::Arc::new(sc.clone()));
                    (print != e.fingerprint).then(|| f.clone())
                })
                .collect(),
        )
    } else {
        Model::Unchecked
    };
    let done: Vec<&sweep::Entry> = rows
        .iter()
        .filter_map(|(_, r)| r.as_ref().map(|(_, e)| e))
        .filter(|e| e.is_done(plan))
        .collect();
    let mismatched = done.iter().filter(|e| e.verdict.is_err()).count();
    if let Err(e) = write_atomic(out, sweep::report(&rows, plan, &model).as_bytes()) {
        eprintln!("error: {}: cannot write: {e}", out.display());
        return Exit::BadInput;
    }
    let stale = match &model {
        Model::Checked(s) => format!(", {} kept by another model (run again)", s.len()),
        _ => ", model not checked (--check-fingerprint)".to_string(),
    };
    println!(
        "sweep (report only): {} of {} files kept with this plan, {} match their declaration, \
         {mismatched} do not{stale}; report {}",
        done.len(),
        rows.len(),
        done.len() - mismatched,
        out.display()
    );
    if mismatched > 0 {
        Exit::Failed
    } else {
        Exit::Ok
    }
}

/// `sweep --compact`: every kept result rewritten in the compact form, running nothing.
fn sweep_compact(files: &[PathBuf], scenarios: &[Scenario], plan: &shardsim::sweep::Plan) -> Exit {
    let (mut n, mut before, mut after) = (0, 0u64, 0u64);
    for (f, sc) in files.iter().zip(scenarios) {
        match shardsim::sweep::compact_kept(&plan.summaries, &f.to_string_lossy(), sc) {
            Ok(Some((b, a))) => {
                n += 1;
                before += b;
                after += a;
                println!("{}: {b} -> {a} bytes", f.display());
            }
            Ok(None) => {}
            Err(e) => {
                eprintln!("error: {e}");
                return Exit::BadInput;
            }
        }
    }
    println!("sweep --compact: {n} kept results, {before} -> {after} bytes");
    Exit::Ok
}
