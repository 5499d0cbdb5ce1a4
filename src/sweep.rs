//! `shardsim sweep`: every scenario file at campaign scale, judged against its declaration.
//! Each file runs `schedules` seeds from 0 (`slow_schedules` when the file is slow: its first
//! [`PROBE`] seeds average more than `slow_after_events` events per schedule, a count, so the
//! plan is the same on any machine under any load), on all the jobs given, with the same
//! verdict as `fuzz` ([`campaign::judge`]). Each file's result is written atomically as it
//! finishes (`<summaries>/<file path with / as __>.json`), and a later sweep with the same plan
//! reuses it, so a sweep of many CPU-hours can be stopped and resumed. A kept result is
//! compacted ([`Summary::compact`]): it lists every failure that is not the file's declared
//! outcome and the first [`KEEP_EXPECTED`] seeds of that outcome, and counts the rest, so a
//! result of 100,000 seeds stays a few kilobytes. The Markdown report lists, per file, the
//! seeds run, each outcome's count (clean schedules, the expected outcome, every known hazard,
//! anything unexpected), the protocol options on and the verdict.

use crate::campaign::{self, write_atomic, Campaign, Summary, KEEP_EXPECTED};
use serde::{Deserialize, Serialize};
use shardsim_harness::options::OptionsByName;
use shardsim_harness::scenario::{Outcome, Scenario};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a sweep runs.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Seeds per file.
    pub schedules: u64,
    /// Seeds per slow file.
    pub slow_schedules: u64,
    /// A file is slow when its first [`PROBE`] seeds average more than this many events per
    /// schedule.
    pub slow_after_events: u64,
    /// Worker threads.
    pub jobs: usize,
    /// Where each file's result is kept.
    pub summaries: PathBuf,
}

/// Seeds whose events decide whether a file is slow (they are run again in the campaign).
pub const PROBE: u64 = 100;

/// One file's result, as kept in `<summaries>/`.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
pub struct Entry {
    /// The file, relative to the swept folder's parent (as given on the command line).
    pub file: String,
    /// Whether it was judged slow.
    pub slow: bool,
    /// The probe's mean events per schedule (what `slow` was judged by).
    pub probe_events: u64,
    /// Wall-clock seconds of the campaign.
    pub secs: f64,
    /// Jobs it ran on.
    pub jobs: usize,
    /// The verdict against the declaration: `Ok(lines)` or `Err(why)` ([`campaign::judge`]).
    pub verdict: Result<Vec<String>, String>,
    /// The model's fingerprint for this file: the trace hashes of seeds 0, 1 and 2
    /// ([`fingerprint`]). A kept result is reused only by a binary whose model gives the
    /// same schedules; a change to the protocol, the membership or the world re-runs it.
    #[serde(default)]
    pub fingerprint: String,
    /// The campaign's summary.
    pub summary: Summary,
}

/// The seeds whose trace hashes make a file's [`Entry::fingerprint`] (the same seeds
/// `tests/data/trace-hashes.txt` pins).
pub const FINGERPRINT_SEEDS: std::ops::Range<u64> = 0..3;

/// The model's fingerprint for a scenario: its trace hashes on [`FINGERPRINT_SEEDS`].
pub fn fingerprint(sc: &Arc<Scenario>) -> String {
    FINGERPRINT_SEEDS
        .map(|seed| {
            let (r, _) = campaign::run_seed(sc, seed, shardsim_harness::trace::TraceMode::Hash);
            format!("{:016x}", r.trace_hash)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Entry {
    /// Whether it is a whole result of `plan` (not a stopped file's partial one, [`resume`]).
    pub fn is_done(&self, plan: &Plan) -> bool {
        self.summary.schedules >= planned(plan, self.slow)
    }

    /// Each outcome's count, by label: `clean`, then every failing label (the invariant, with
    /// `known:` and the hazard's name for a known hazard, `UNEXPECTED:` for a failure the file
    /// neither expects nor declares).
    pub fn counts(&self, expected: Outcome) -> BTreeMap<String, u64> {
        let s = &self.summary;
        let mut m = BTreeMap::new();
        m.insert(
            "clean".to_string(),
            s.schedules.saturating_sub(s.failure_count()),
        );
        for e in &s.elided {
            let label = if e.invariant == expected {
                format!("expected {}", e.invariant.name())
            } else {
                format!(
                    "UNEXPECTED {} (counted, not listed: run again)",
                    e.invariant.name()
                )
            };
            *m.entry(label).or_default() += e.count;
        }
        for f in &s.failures {
            let label = if f.is_expected(expected) {
                format!("expected {}", f.label())
            } else if let Some(k) = &f.known {
                format!("known {k} ({})", f.label())
            } else {
                format!("UNEXPECTED {}", f.label())
            };
            *m.entry(label).or_default() += 1;
        }
        m
    }
}

/// The file name of `file`'s result in `dir`.
pub fn entry_path(dir: &Path, file: &str) -> PathBuf {
    let flat: String = file
        .trim_start_matches("./")
        .chars()
        .map(|c| if c == '/' || c == '\\' { '_' } else { c })
        .collect();
    dir.join(format!("{}.json", flat.trim_end_matches(".toml")))
}

/// A kept result, if it answers the same plan with the same model: same scenario name and
/// behaviour, the seed count this plan gives the file, and the same [`fingerprint`]. Its
/// failures are classified and judged again against the file's declaration as it is now
/// ([`campaign::reclassify`]), so editing `[expect]` or `[[expect.known]]` needs no re-run,
/// and kept again, compacted, when that changed it.
pub fn reuse(
    dir: &Path,
    file: &str,
    sc: &Scenario,
    plan: &Plan,
    fingerprint: &str,
) -> Option<Entry> {
    let path = entry_path(dir, file);
    let mut e = kept(&path, sc, fingerprint)?;
    if e.summary.schedules != planned(plan, e.slow) {
        return None;
    }
    let before = e.clone();
    campaign::reclassify(sc, &mut e.summary);
    e.verdict = campaign::judge(sc, &e.summary, e.summary.schedules, false);
    e.summary.compact(sc.expect.outcome, KEEP_EXPECTED);
    if e != before {
        // Kept as classified now, so `--report-only` shows it; a failed write only means the
        // next sweep classifies it again.
        if let Ok(json) = to_json(&e) {
            let _ = write_atomic(&path, &json);
        }
    }
    Some(e)
}

/// Parts a file's campaign runs in: after each, the seeds done so far are kept in the file's
/// partial result ([`partial_path`]), so a sweep stopped in the middle of a long file (a
/// killed process, the end of a session) resumes from its last part instead of seed 0. The
/// parts' summaries merge into exactly the whole campaign's ([`campaign::merge`]).
pub const PARTS: u64 = 20;

/// Where a file's partial result is kept while its campaign runs (removed when it is done).
pub fn partial_path(dir: &Path, file: &str) -> PathBuf {
    entry_path(dir, file).with_extension("partial.json")
}

/// The seeds `plan` gives a file judged `slow`.
pub fn planned(plan: &Plan, slow: bool) -> u64 {
    if slow {
        plan.slow_schedules
    } else {
        plan.schedules
    }
}

/// A kept whole or partial result of `file` for this scenario (name and behaviour, seeds
/// from 0), whatever model wrote it, judged against the file's declaration as it is now from
/// its stored classification ([`campaign::rejudge_stored`]): nothing runs. What `sweep
/// --report-only` shows; [`fingerprint`] tells whether the model that wrote it is this one.
pub fn read_kept(dir: &Path, file: &str, sc: &Scenario, plan: &Plan) -> Option<Entry> {
    let whole = read(&entry_path(dir, file), sc).filter(|e| e.is_done(plan));
    let mut e = whole.or_else(|| {
        read(&partial_path(dir, file), sc).filter(|e| e.summary.schedules < planned(plan, e.slow))
    })?;
    if e.is_done(plan) {
        campaign::rejudge_stored(sc, &mut e.summary);
        e.verdict = campaign::judge(sc, &e.summary, e.summary.schedules, false);
    }
    Some(e)
}

/// Rewrite `file`'s kept whole result in the compact form ([`Summary::compact`]), running
/// nothing: `Ok(Some((before, after)))` in bytes, `Ok(None)` when there is no kept result of
/// this scenario.
pub fn compact_kept(dir: &Path, file: &str, sc: &Scenario) -> Result<Option<(u64, u64)>, String> {
    let path = entry_path(dir, file);
    let Some(mut e) = read(&path, sc) else {
        return Ok(None);
    };
    let before = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    e.summary.compact(sc.expect.outcome, KEEP_EXPECTED);
    let json = to_json(&e)?;
    write_atomic(&path, &json).map_err(|x| format!("{}: {x}", path.display()))?;
    Ok(Some((before, json.len() as u64)))
}

/// A kept result's JSON, as a sweep writes it.
fn to_json(e: &Entry) -> Result<Vec<u8>, String> {
    let mut json = serde_json::to_vec_pretty(e).map_err(|x| x.to_string())?;
    json.push(b'\n');
    Ok(json)
}

/// The result kept at `path`, if it is of this scenario (name and behaviour), with seeds
/// from 0.
fn read(path: &Path, sc: &Scenario) -> Option<Entry> {
    let text = std::fs::read_to_string(path).ok()?;
    let e: Entry = serde_json::from_str(&text).ok()?;
    let same = e.summary.scenario == sc.name
        && e.summary.behaviour == sc.options.behaviour()
        && e.summary.seed_start == 0;
    same.then_some(e)
}

/// A stopped file's partial result, if it belongs to the same campaign: same scenario name,
/// behaviour and [`fingerprint`], seeds from 0, fewer than the plan gives it.
pub fn resume(
    dir: &Path,
    file: &str,
    sc: &Scenario,
    plan: &Plan,
    fingerprint: &str,
) -> Option<Entry> {
    let e = kept(&partial_path(dir, file), sc, fingerprint)?;
    (e.summary.schedules < planned(plan, e.slow)).then_some(e)
}

/// The result kept at `path`, if it is of this scenario (name and behaviour) and model
/// ([`fingerprint`]), with seeds from 0.
fn kept(path: &Path, sc: &Scenario, fingerprint: &str) -> Option<Entry> {
    read(path, sc).filter(|e| e.fingerprint == fingerprint)
}

/// Run one file by the plan and keep the result (the caller asked [`reuse`] first, with the
/// file's [`fingerprint`] `print`, and [`resume`] for `resumed`). The campaign runs in
/// [`PARTS`] parts, each kept as it finishes, and starts from `resumed`, a kept partial result
/// of the same campaign, when there is one. `progress` gets the seeds done, counted from 0.
pub fn sweep_file(
    path: &Path,
    sc: &Scenario,
    print: String,
    plan: &Plan,
    resumed: Option<Entry>,
    progress: campaign::Progress<'_>,
) -> Result<Entry, String> {
    let sc = Arc::new(sc.clone());
    let file = path.to_string_lossy().into_owned();
    let mut e = match resumed {
        Some(e) => e,
        None => {
            let probe = PROBE.min(plan.schedules);
            let probed = Campaign::new(&sc, 0, probe).jobs(plan.jobs).run();
            let probe_events = probed.totals.events / probe.max(1);
            let slow =
                probe_events > plan.slow_after_events && plan.slow_schedules < plan.schedules;
            Entry {
                file: file.clone(),
                slow,
                probe_events,
                secs: 0.0,
                jobs: plan.jobs,
                verdict: Err("in progress".into()),
                fingerprint: print,
                summary: Summary {
                    scenario: sc.name.clone(),
                    behaviour: sc.options.behaviour(),
                    ..Summary::default()
                },
            }
        }
    };
    let n = planned(plan, e.slow);
    let part = n.div_ceil(PARTS).max(1);
    std::fs::create_dir_all(&plan.summaries)
        .map_err(|x| format!("{}: {x}", plan.summaries.display()))?;
    let expected = sc.expect.outcome;
    let keep = |e: &mut Entry, out: &Path| -> Result<(), String> {
        e.summary.compact(expected, KEEP_EXPECTED);
        write_atomic(out, &to_json(e)?).map_err(|x| format!("{}: {x}", out.display()))
    };
    let partial = partial_path(&plan.summaries, &file);
    while e.summary.schedules < n {
        let start = e.summary.schedules;
        let len = part.min(n - start);
        let clock = std::time::Instant::now(); // determinism-ok: the CLI's wall clock, outside any simulation
        let done = Campaign::new(&sc, start, len)
            .jobs(plan.jobs)
            .progress(&|d| progress(start + d))
            .run();
        e.secs += clock.elapsed().as_secs_f64();
        e.summary = if start == 0 {
            done
        } else {
            let so_far = std::mem::take(&mut e.summary);
            campaign::merge(&[(partial.clone(), so_far), (partial.clone(), done)])
                .map_err(|x| x.to_string())?
        };
        e.jobs = plan.jobs;
        if e.summary.schedules < n {
            e.verdict = Err(format!("in progress: {} of {n} seeds", e.summary.schedules));
            keep(&mut e, &partial)?;
        }
    }
    e.verdict = campaign::judge(&sc, &e.summary, n, false);
    keep(&mut e, &entry_path(&plan.summaries, &file))?;
    // The whole result is kept: the partial one is no longer needed (a leftover would only
    // be ignored, as its seed count is the plan's).
    let _ = std::fs::remove_file(&partial);
    Ok(e)
}

/// Which model the rows of a [`report`] are known to be from.
#[derive(Clone, Debug)]
pub enum Model {
    /// A sweep: every row was reused or run with this binary's fingerprint.
    Current,
    /// `--report-only`: kept results as they are, fingerprints not checked.
    Unchecked,
    /// `--report-only --check-fingerprint`: these files' kept results are another model's.
    Checked(std::collections::BTreeSet<PathBuf>),
}

/// The report: one row per file (`None`: not run yet; a partial result: in progress), then
/// the plan and the totals.
pub fn report(rows: &[(PathBuf, Option<(Scenario, Entry)>)], plan: &Plan, model: &Model) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Every scenario file at campaign scale\n");
    let _ = writeln!(
        s,
        "Written by `shardsim sweep`: each file under `sim-scenarios/` runs \
         {} seeds from 0 ({} for a slow file: one whose first {PROBE} seeds average more than \
         {} events per schedule), judged as `fuzz` judges it against the file's \
         `[expect]` outcome, rate band and `[[expect.known]]` hazards. Counts are schedules; \
         `known X (inv)` is a known hazard whose seeds are clean with its fix option on. A \
         file's kept result is reused only while its seeds 0-2 keep their trace hashes (the \
         model's fingerprint).\n",
        plan.schedules, plan.slow_schedules, plan.slow_after_events
    );
    let _ = writeln!(
        s,
        "{}\n",
        match model {
            Model::Current => "Every row is the current model's.",
            Model::Unchecked =>
                "Written from the kept results alone (`--report-only`): the model's fingerprint \
                 was not checked, so a row may be an earlier model's (`--check-fingerprint` \
                 marks those).",
            Model::Checked(_) =>
                "Written from the kept results alone (`--report-only --check-fingerprint`): a \
                 row marked *another model* was kept by a binary whose seeds 0-2 trace \
                 differently, and runs again at the next sweep.",
        }
    );
    let _ = writeln!(
        s,
        "| file | options | declared | seeds | outcomes | verdict | time |\n|---|---|---|---|---|---|---|"
    );
    let (mut done, mut ok, mut seeds) = (0, 0, 0u64);
    for (path, row) in rows {
        let Some((sc, e)) = row else {
            let _ = writeln!(s, "| `{}` | | | | not run yet | | |", path.display());
            continue;
        };
        if !e.is_done(plan) {
            let _ = writeln!(
                s,
                "| `{}` | | | {} of {} | in progress (resumes from seed {}) | | {:.0} s so far |",
                path.display(),
                e.summary.schedules,
                planned(plan, e.slow),
                e.summary.schedules,
                e.secs
            );
            continue;
        }
        let stale = matches!(model, Model::Checked(files) if files.contains(path));
        let mut declared = sc.expect.outcome.to_string();
        if let Some((lo, hi)) = sc.expect.rate_band() {
            let _ = write!(declared, " at [{lo}, {hi}]");
        }
        for k in &sc.expect.known {
            let _ = write!(declared, "; known {} ({})", k.name, k.invariant);
        }
        let outcomes: Vec<String> = e
            .counts(sc.expect.outcome)
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        let verdict = match &e.verdict {
            _ if stale => "*another model*: run it again".to_string(),
            Ok(_) => {
                ok += 1;
                "matches".to_string()
            }
            Err(why) => format!("**DOES NOT MATCH**: {why}"),
        };
        if !stale {
            done += 1;
            seeds += e.summary.schedules;
        }
        let options = e
            .summary
            .behaviour
            .trim_start_matches("Akka's behaviour except ")
            .replace('|', "/");
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {}{} | {} | {} | {:.0} s on {} job{} |",
            e.file,
            options,
            declared,
            e.summary.schedules,
            if e.slow { " (slow)" } else { "" },
            outcomes.join(", "),
            verdict,
            e.secs,
            e.jobs,
            if e.jobs == 1 { "" } else { "s" }
        );
    }
    let _ = writeln!(
        s,
        "\n{done} of {} files run, {ok} match their declaration; {seeds} schedules in all.",
        rows.len()
    );
    s
}
