//! Campaign features: merging slice summaries, independence from the number of jobs,
//! until-failure, determinism checks, and their command-line faces.
//!
//! Failing seeds come from `tests/data/fast-reorder.toml`, a compressed copy of the
//! reorder-across-handoff hazard (about 3 ms a seed, one seed in six fails), and from the hazard
//! itself where a few seeds suffice.

mod common;
use common::*;

use shardsim::campaign::{self, Campaign, Failure, FailureKind, FuzzOptions, Summary};
use shardsim_harness::scenario::{Outcome, Scenario};
use std::path::Path;
use std::sync::Arc;

const FAST: &str = "tests/data/fast-reorder.toml";
const HAZARD: &str = "sim-scenarios/hazards/reorder-across-handoff.toml";

fn until(sc: &Arc<Scenario>, start: u64, cap: u64, jobs: usize) -> Summary {
    let opts = FuzzOptions {
        check_determinism: None,
        until_failure: true,
    };
    Campaign::new(sc, start, cap).jobs(jobs).options(opts).run()
}

#[test]
fn one_run_equals_the_merge_of_its_slices() {
    let sc = load(FAST);
    let whole = Campaign::new(&sc, 0, 400).jobs(2).run();
    assert!(
        whole.failures.len() > 10,
        "the fast hazard should fail often"
    );
    // The slices through the command line: fuzz --summary twice, then merge.
    let d = tmp("merge");
    let (a, b, out) = (d.join("a.json"), d.join("b.json"), d.join("all.json"));
    for (start, file) in [("0", &a), ("200", &b)] {
        let (code, so, se) = shardsim(&[
            "fuzz",
            FAST,
            "--seed-start",
            start,
            "--schedules",
            "200",
            "--jobs",
            "1",
            "--quiet",
            "--summary",
            file.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{so}{se}");
    }
    // Inputs in either order give the same merge.
    let (code, so, se) = shardsim(&[
        "merge",
        out.to_str().unwrap(),
        b.to_str().unwrap(),
        a.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{so}{se}");
    assert!(so.contains("merged 2 summaries"), "{so}");
    let merged = campaign::read_summary(&out).unwrap();
    assert_eq!(merged.totals, whole.totals);
    assert_eq!(merged.failures, whole.failures);
    assert_eq!(merged, whole);
    // And the library merge agrees.
    let slices = vec![
        (a.clone(), campaign::read_summary(&a).unwrap()),
        (b.clone(), campaign::read_summary(&b).unwrap()),
    ];
    assert_eq!(campaign::merge(&slices).unwrap(), whole);
}

#[test]
fn summaries_do_not_depend_on_the_number_of_jobs() {
    let sc = load(FAST);
    let one = Campaign::new(&sc, 1000, 150).jobs(1).run();
    let two = Campaign::new(&sc, 1000, 150).jobs(2).run();
    assert!(!one.failures.is_empty());
    assert_eq!(one, two);
    // The real hazard, a few seeds.
    let sc = load(HAZARD);
    let one = Campaign::new(&sc, 0, 24).jobs(1).run();
    let two = Campaign::new(&sc, 0, 24).jobs(2).run();
    assert_eq!(one, two);
}

#[test]
fn until_failure_finds_the_same_lowest_seed_with_any_number_of_jobs() {
    let sc = load(HAZARD);
    let a = until(&sc, 0, 1000, 1);
    let b = until(&sc, 0, 1000, 2);
    assert_eq!(a, b);
    let first = a.failures[0].seed;
    assert_eq!(a.schedules, first + 1);
    assert_eq!(a.expected_found, 1);
    // Equal to a plain campaign over exactly those seeds.
    assert_eq!(a, Campaign::new(&sc, 0, first + 1).run());

    let sc = load(FAST);
    for start in [0, 137, 5000] {
        let plain = Campaign::new(&sc, start, 120).run();
        let first = plain.failures[0].seed;
        let runs: Vec<Summary> = [1, 2, 3]
            .iter()
            .map(|&j| until(&sc, start, 120, j))
            .collect();
        for r in &runs {
            assert_eq!(r, &runs[0], "start {start}");
        }
        assert_eq!(runs[0].failures.len(), 1);
        assert_eq!(runs[0].failures[0].seed, first, "start {start}");
        assert_eq!(runs[0].schedules, first - start + 1);
    }
    // A cap below the first failure: nothing found, every seed up to the cap run.
    let first = until(&sc, 0, 120, 1).failures[0].seed;
    if first > 0 {
        let none = until(&sc, 0, first, 2);
        assert!(none.failures.is_empty());
        assert_eq!(none, Campaign::new(&sc, 0, first).run());
    }
}

#[test]
fn check_determinism_runs_clean_and_changes_nothing_else() {
    let sc = load("sim-scenarios/two-nodes.toml");
    let plain = Campaign::new(&sc, 0, 60).jobs(2).run();
    for k in [1, 7] {
        let opts = FuzzOptions {
            check_determinism: Some(k),
            until_failure: false,
        };
        let checked = Campaign::new(&sc, 0, 60).jobs(2).options(opts).run();
        assert!(checked.failures.is_empty(), "{:?}", checked.failures);
        assert_eq!(checked, plain);
    }
    // On a failing scenario, the violations are the same with or without the check.
    let sc = load(FAST);
    let opts = FuzzOptions {
        check_determinism: Some(1),
        until_failure: false,
    };
    let checked = Campaign::new(&sc, 0, 60).jobs(2).options(opts).run();
    assert_eq!(checked, Campaign::new(&sc, 0, 60).jobs(2).run());
    assert!(checked
        .failures
        .iter()
        .all(|f| f.kind == FailureKind::Violation));
}

#[test]
fn failure_kind_serializes() {
    let f = Failure {
        seed: 3,
        kind: FailureKind::Determinism,
        invariant: Outcome::None,
        t_us: 12,
        detail: "two runs differ".into(),
        known: None,
    };
    let json = serde_json::to_string(&f).unwrap();
    assert!(json.contains(r#""kind":"determinism""#), "{json}");
    assert_eq!(serde_json::from_str::<Failure>(&json).unwrap(), f);
    // Summaries written before `kind` existed still read, as violations.
    let old = r#"{"seed":3,"invariant":"per-sender-order","t_us":12,"detail":"x"}"#;
    assert_eq!(
        serde_json::from_str::<Failure>(old).unwrap().kind,
        FailureKind::Violation
    );
    // A determinism failure is never expected, whatever the scenario expects.
    let sum = Summary {
        failures: vec![f],
        ..Summary::default()
    };
    assert_eq!(sum.unexpected(Outcome::None).count(), 1);
    assert_eq!(sum.unexpected(Outcome::PerSenderOrder).count(), 1);
}

fn write_summary(path: &Path, scenario: &str, seed_start: u64, schedules: u64) {
    let s = Summary {
        scenario: scenario.into(),
        seed_start,
        schedules,
        ..Summary::default()
    };
    std::fs::write(path, serde_json::to_vec_pretty(&s).unwrap()).unwrap();
}

#[test]
fn cli_merge_rejects_overlaps_gaps_other_scenarios_and_bad_files() {
    let d = tmp("merge-bad");
    let (a, b, c, out) = (
        d.join("slice-a.json"),
        d.join("slice-b.json"),
        d.join("slice-c.json"),
        d.join("out.json"),
    );
    // `shardsim merge OUT IN1 IN2`.
    let merge = |out: &Path, a: &Path, b: &Path| {
        shardsim(&[
            "merge",
            out.to_str().unwrap(),
            a.to_str().unwrap(),
            b.to_str().unwrap(),
        ])
    };
    write_summary(&a, "fast-reorder", 0, 200);
    write_summary(&b, "fast-reorder", 100, 200);
    write_summary(&c, "smoke", 500, 10);
    let (code, _, err) = merge(&out, &a, &b);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("slice-a.json") && err.contains("slice-b.json"),
        "{err}"
    );
    assert!(err.contains("overlap"), "{err}");
    assert!(!out.exists(), "nothing written on error");
    let (code, _, err) = merge(&out, &a, &c);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("slice-a.json") && err.contains("slice-c.json"),
        "{err}"
    );
    assert!(err.contains("different scenarios"), "{err}");
    // A summary with a wrong type: file, line and field.
    let text = std::fs::read_to_string(&a)
        .unwrap()
        .replace("\"schedules\": 200", "\"schedules\": \"many\"");
    std::fs::write(&b, text).unwrap();
    let (code, _, err) = merge(&out, &a, &b);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("slice-b.json:5: field `schedules`"), "{err}");
    // Adjacent ranges merge.
    write_summary(&b, "fast-reorder", 200, 50);
    let (code, so, err) = merge(&out, &a, &b);
    assert_eq!(code, 0, "{so}{err}");
    let m = campaign::read_summary(&out).unwrap();
    assert_eq!((m.seed_start, m.schedules), (0, 250));
    // A gap between the ranges (0..200, then 300..350): refused, naming both and the seeds left
    // out, rather than labelled as 250 schedules from seed 0.
    write_summary(&b, "fast-reorder", 300, 50);
    std::fs::remove_file(&out).unwrap();
    let (code, _, err) = merge(&out, &a, &b);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("slice-a.json") && err.contains("slice-b.json"),
        "{err}"
    );
    assert!(err.contains("gap") && err.contains("200..300"), "{err}");
    assert!(!out.exists(), "nothing written on error");
    // The output among the inputs (named first by mistake): refused, the input untouched.
    let before = std::fs::read(&a).unwrap();
    let (code, _, err) = merge(&a, &a, &b);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the output is also an input"), "{err}");
    assert_eq!(std::fs::read(&a).unwrap(), before);
}

#[test]
fn cli_bad_check_determinism_exits_2() {
    let (code, _, err) = shardsim(&[
        "fuzz",
        "sim-scenarios/one-node.toml",
        "--schedules",
        "5",
        "--check-determinism",
        "0",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--check-determinism"), "{err}");
    let (code, _, err) = shardsim(&[
        "fuzz",
        "sim-scenarios/one-node.toml",
        "--check-determinism",
        "every",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--check-determinism"), "{err}");
}

#[test]
fn cli_until_failure_and_check_determinism() {
    let first = until(&load(HAZARD), 0, 200, 2).failures[0].seed;
    let mut outs = Vec::new();
    for jobs in ["1", "2"] {
        let (code, out, err) = shardsim(&[
            "fuzz",
            HAZARD,
            "--until-failure",
            "--schedules",
            "200",
            "--jobs",
            jobs,
            "--quiet",
        ]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(
            out.contains(&format!(
                "until-failure: first failure after {} schedules: seed {first}",
                first + 1
            )),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "replay: {}",
                campaign::replay_command(Path::new(HAZARD), first)
            )),
            "{out}"
        );
        outs.push(
            out.lines()
                .filter(|l| !l.contains("schedules/s"))
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
    assert_eq!(outs[0], outs[1]);
    let (code, out, err) = shardsim(&[
        "fuzz",
        "sim-scenarios/one-node.toml",
        "--schedules",
        "20",
        "--check-determinism",
        "4",
        "--quiet",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("determinism: 5 seeds run twice (every 4), 0 with different traces"),
        "{out}"
    );
}

/// The buffer high-water mark is the most any region buffered at once: the run and campaign
/// summaries show it, a campaign and a merge take the maximum over schedules, not the sum.
#[test]
fn the_buffer_high_water_mark_is_shown_and_merged_by_max() {
    let mut acc = shardsim_harness::sim::Stats {
        sends: 4,
        buffer_high_water: 7,
        ..Default::default()
    };
    let other = shardsim_harness::sim::Stats {
        sends: 5,
        buffer_high_water: 3,
        ..Default::default()
    };
    campaign::add(&mut acc, &other);
    assert_eq!((acc.sends, acc.buffer_high_water), (9, 7));

    let file = "sim-scenarios/buffer-full.toml";
    let (code, so, se) = shardsim(&["run", file, "--seed", "0"]);
    assert_eq!(code, 0, "{so}{se}");
    assert!(so.contains("buffer high-water mark: 30 messages"), "{so}");
    // Every drop has its reason in the summary: here all are buffer_full.
    let drops: u64 = so
        .split("drops ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("a drops count");
    assert!(drops > 0, "{so}");
    assert!(
        so.contains(&format!("drops by reason: buffer_full {drops}\n")),
        "{so}"
    );
    let d = tmp("high-water");
    let (a, b, out) = (d.join("a.json"), d.join("b.json"), d.join("all.json"));
    for (start, f) in [("0", &a), ("5", &b)] {
        let (code, so, se) = shardsim(&[
            "fuzz",
            file,
            "--seed-start",
            start,
            "--schedules",
            "5",
            "--jobs",
            "1",
            "--quiet",
            "--summary",
            f.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{so}{se}");
        assert!(so.contains("buffer high-water mark: 30 messages"), "{so}");
    }
    let (code, so, se) = shardsim(&[
        "merge",
        out.to_str().unwrap(),
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{so}{se}");
    let merged = campaign::read_summary(&out).unwrap();
    assert_eq!(merged.totals.buffer_high_water, 30);
    let whole = Campaign::new(&load(file), 0, 10).jobs(2).run();
    assert_eq!(merged, whole);
}

#[test]
fn n_slices_merged_equal_one_campaign_for_1_3_and_7() {
    // An odd campaign size and a seed start, so the slices differ in size; determinism checks
    // every 4th seed counted from the campaign's start, also inside a slice.
    let (start, total) = (106u64, 200u64);
    let sc = load(FAST);
    let opts = FuzzOptions {
        check_determinism: Some(4),
        until_failure: false,
    };
    let whole = Campaign::new(&sc, start, total).jobs(2).options(opts).run();
    assert!(whole.failures.len() > 5, "the fast hazard fails often");
    let d = tmp("slices");
    for n in [1u64, 3, 7] {
        let mut files = Vec::new();
        let mut covered = 0;
        for i in 0..n {
            let f = d.join(format!("n{n}-slice{i}.json"));
            // Slice 0 through the Kubernetes variable, the last through a Slurm array counted
            // from 1, the others explicitly.
            let (spec, env): (String, Vec<(&str, String)>) = if i == 0 {
                (
                    format!("auto/{n}"),
                    vec![("JOB_COMPLETION_INDEX", "0".into())],
                )
            } else if i == n - 1 {
                (
                    format!("auto/{n}"),
                    vec![
                        ("SLURM_ARRAY_TASK_ID", n.to_string()),
                        ("SLURM_ARRAY_TASK_MIN", "1".into()),
                        ("SLURM_ARRAY_TASK_COUNT", n.to_string()),
                    ],
                )
            } else {
                (format!("{i}/{n}"), vec![])
            };
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let (code, out, err) = shardsim_env(
                &[
                    "fuzz",
                    FAST,
                    "--seed-start",
                    &start.to_string(),
                    "--schedules",
                    &total.to_string(),
                    "--slice",
                    &spec,
                    "--check-determinism",
                    "4",
                    "--jobs",
                    "1",
                    "--quiet",
                    "--summary",
                    f.to_str().unwrap(),
                ],
                &env,
            );
            assert_eq!(code, 0, "{spec}: {out}{err}");
            assert!(
                out.contains(&format!("slice {i}/{n} of seeds 106..306")),
                "{out}"
            );
            let s = campaign::read_summary(&f).unwrap();
            assert_eq!(s.seed_start, start + i * total / n, "slice {i}/{n}");
            assert_eq!(s.schedules, (i + 1) * total / n - i * total / n);
            covered += s.schedules;
            files.push(f);
        }
        assert_eq!(covered, total);
        let out = d.join(format!("n{n}-merged.json"));
        let mut args = vec!["merge".to_string(), out.to_str().unwrap().to_string()];
        // Inputs in reverse order: merge sorts them by seed.
        args.extend(files.iter().rev().map(|f| f.to_str().unwrap().to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, so, se) = shardsim(&args);
        assert_eq!(code, 0, "{so}{se}");
        let merged = campaign::read_summary(&out).unwrap();
        // Everything a summary holds (no wall time in it): counts, failures, totals.
        assert_eq!(merged.schedules, whole.schedules, "n = {n}");
        assert_eq!(merged.totals, whole.totals, "n = {n}");
        assert_eq!(merged.failures, whole.failures, "n = {n}");
        assert_eq!(merged.expected_found, whole.expected_found, "n = {n}");
        assert_eq!(merged, whole, "n = {n}");
    }
    // The library agrees: the slices of a `Campaign` merge to the whole.
    let slices: Vec<_> = (0..7)
        .map(|i| {
            let s = campaign::Slice { index: i, count: 7 };
            (
                d.join(format!("lib{i}")),
                Campaign::new(&sc, start, total)
                    .slice(s)
                    .options(opts)
                    .run(),
            )
        })
        .collect();
    assert_eq!(campaign::merge(&slices).unwrap(), whole);
}

#[test]
fn fuzz_report_writes_figures_that_parse_as_svg() {
    let d = tmp("report");
    // A rebalancing scenario with failures: every figure, the shards-per-node one included.
    let (code, out, err) = shardsim(&[
        "fuzz",
        FAST,
        "--schedules",
        "120",
        "--jobs",
        "1",
        "--quiet",
        "--report",
        d.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("report: 4 figures"), "{out}");
    let index = std::fs::read_to_string(d.join("index.md")).unwrap();
    for f in [
        "failures-per-invariant.svg",
        "failures-over-schedules.svg",
        "throughput.svg",
        "shards-per-node.svg",
    ] {
        assert!(
            index.contains(&format!("]({f})")),
            "{f} not linked: {index}"
        );
        let text = std::fs::read_to_string(d.join(f)).unwrap();
        let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert_eq!(doc.root_element().tag_name().name(), "svg", "{f}");
        let texts: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .map(str::trim)
            .collect();
        assert!(
            texts.iter().any(|t| t.contains("fast-reorder")),
            "{f}: {texts:?}"
        );
        if f.starts_with("failures") {
            assert!(
                texts.iter().any(|t| t.contains("per-sender-order")),
                "{f}: {texts:?}"
            );
        }
        if f == "shards-per-node.svg" {
            assert!(texts.contains(&"node 0"), "{texts:?}");
        }
        let lines = doc
            .descendants()
            .filter(|n| n.has_tag_name("polyline") || n.has_tag_name("rect"))
            .count();
        assert!(lines > 0, "{f}: nothing drawn");
    }
    assert!(index.contains("per-sender-order:"), "{index}");
    // Without rebalances, no shards-per-node figure.
    let d2 = tmp("report-one-node");
    let (code, out, err) = shardsim(&[
        "fuzz",
        "sim-scenarios/one-node.toml",
        "--schedules",
        "20",
        "--quiet",
        "--report",
        d2.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("report: 3 figures"), "{out}");
    assert!(!d2.join("shards-per-node.svg").exists());
    for f in [
        "failures-per-invariant.svg",
        "failures-over-schedules.svg",
        "throughput.svg",
    ] {
        let text = std::fs::read_to_string(d2.join(f)).unwrap();
        roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
}

#[test]
fn progress_lines_when_stderr_is_not_a_terminal() {
    // Every 0 s (the test's setting): a line per chunk of seeds, on stderr; none with --quiet.
    let args = [
        "fuzz",
        "sim-scenarios/one-node.toml",
        "--schedules",
        "200",
        "--jobs",
        "1",
    ];
    let (code, out, err) = shardsim_env(&args, &[("SHARDSIM_PROGRESS_SECS", "0")]);
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("fuzz one-node: "))
        .collect();
    assert!(lines.len() >= 3, "{err}");
    assert!(lines[0].contains("/200 schedules ("), "{err}");
    assert!(lines[0].contains("schedules/s, 0 unexpected, "), "{err}");
    assert!(lines[0].contains(" s left"), "{err}");
    assert!(
        !out.contains("/200 schedules ("),
        "progress goes to stderr: {out}"
    );
    // The count is of unexpected failures only: a hazard's declared outcome is not one.
    let hazard = [
        "fuzz",
        "sim-scenarios/hazards/reorder-across-handoff.toml",
        "--schedules",
        "40",
        "--jobs",
        "1",
    ];
    let (code, out, err) = shardsim_env(&hazard, &[("SHARDSIM_PROGRESS_SECS", "0")]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("expected per-sender-order seed 2"), "{out}");
    let last = err
        .lines()
        .rfind(|l| l.starts_with("fuzz reorder-across-handoff: "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(last.contains(" 0 unexpected"), "{last}");
    let mut quiet = args.to_vec();
    quiet.push("--quiet");
    let (_, _, err) = shardsim_env(&quiet, &[("SHARDSIM_PROGRESS_SECS", "0")]);
    assert!(!err.contains("fuzz one-node: "), "{err}");
    // Shrink shows its replays.
    let d = tmp("progress-shrink");
    let (code, out, err) = shardsim_env(
        &[
            "shrink",
            "sim-scenarios/shrunk/swarm-auto-down-seed260.toml",
            "--seed",
            "260",
            "--out",
            d.join("s.toml").to_str().unwrap(),
        ],
        &[("SHARDSIM_PROGRESS_SECS", "0")],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.lines().any(|l| l.starts_with("shrink ")
            && l.contains(" replays (")
            && l.contains("reductions kept")
            && l.contains("at most")),
        "{err}"
    );
}

/// `[[expect.known]]`: a failure of a known hazard's invariant that the same
/// seed does not show with the hazard's fix on is reported as known, not failed, and does not
/// stop `--until-failure`; one that persists under the declared "fix" stays unexpected.
#[test]
fn known_hazards_are_reported_not_failed() {
    use shardsim_harness::scenario::KnownHazard;
    let mut sc = (*load(FAST)).clone();
    sc.expect.outcome = Outcome::None;
    sc.expect.rate = None;
    sc.expect.known = vec![KnownHazard {
        name: "reorder-across-handoff".into(),
        invariant: Outcome::PerSenderOrder,
        fixed_by: Some("handoff-ack-via-owner".into()),
        rate: None,
        about: String::new(),
    }];
    let known = Arc::new(sc.clone());
    let sum = Campaign::new(&known, 0, 60).jobs(2).run();
    assert!(sum.failures.len() > 3, "{:?}", sum.failures);
    for f in &sum.failures {
        assert_eq!(f.known.as_deref(), Some("reorder-across-handoff"), "{f:?}");
    }
    assert_eq!(sum.unexpected(Outcome::None).count(), 0);
    let counted = campaign::known_found(&sc, &sum, 60);
    assert_eq!(counted[0].1, sum.failures.len() as u64);
    // --until-failure runs on past known hazards.
    assert_eq!(until(&known, 0, 60, 2).schedules, 60);
    // A "fix" that does not remove it: the failures stay unexpected.
    sc.expect.known[0].fixed_by = Some("rebalance-skips-shutting-down-regions".into());
    let wrong = Campaign::new(&Arc::new(sc), 0, 60).jobs(2).run();
    assert_eq!(wrong.failures.len(), sum.failures.len());
    assert_eq!(
        wrong.unexpected(Outcome::None).count(),
        wrong.failures.len()
    );
}

/// `shardsim sweep`: every file of a folder judged against its declaration,
/// each result kept and reused by a later sweep with the same plan and model, a file whose campaign does
/// not match its declaration named in the report and exit 1, bad input exit 2.
#[test]
fn sweep_judges_every_file_and_resumes() {
    let d = tmp("sweep");
    let files = d.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let fast = std::fs::read_to_string(root().join(FAST)).unwrap();
    std::fs::write(files.join("reorder.toml"), &fast).unwrap();
    // The same file declaring a clean run: its reorders are unexpected.
    let clean = fast.replace("outcome = \"per-sender-order\"", "outcome = \"none\"");
    std::fs::write(files.join("clean.toml"), clean).unwrap();
    let (sums, out) = (d.join("kept"), d.join("report.md"));
    let args = |only: &str| {
        vec![
            "sweep".to_string(),
            files.display().to_string(),
            "--schedules".into(),
            "40".into(),
            "--jobs".into(),
            "2".into(),
            "--summaries".into(),
            sums.display().to_string(),
            "--out".into(),
            out.display().to_string(),
            "--only".into(),
            only.into(),
        ]
    };
    let run = |a: Vec<String>| shardsim(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let (code, stdout, err) = run(args("reorder"));
    assert_eq!(code, 0, "{stdout}{err}");
    assert!(
        stdout.contains("reorder.toml: 40 seeds, matches"),
        "{stdout}"
    );
    let report = std::fs::read_to_string(&out).unwrap();
    assert!(report.contains("expected per-sender-order: "), "{report}");
    // Again: the kept result is reused, not re-run.
    let (code, stdout, _) = run(args("reorder"));
    assert_eq!(code, 0);
    assert!(stdout.contains("(kept from an earlier sweep)"), "{stdout}");
    // A kept result from another model (its fingerprint, seeds 0-2's trace hashes, differs)
    // is run again.
    let kept = std::fs::read_dir(&sums)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(&kept).unwrap();
    let print = text.split("\"fingerprint\": \"").nth(1).unwrap();
    let print = &print[..print.find('"').unwrap()];
    assert_eq!(print.split(' ').count(), 3, "{text}");
    std::fs::write(&kept, text.replace(print, "0 0 0")).unwrap();
    let (code, stdout, _) = run(args("reorder"));
    assert_eq!(code, 0);
    assert!(!stdout.contains("(kept from an earlier sweep)"), "{stdout}");
    assert!(std::fs::read_to_string(&kept).unwrap().contains(print));
    // Both files: the clean declaration does not match.
    let (code, stdout, _) = run(args(".toml"));
    assert_eq!(code, 1, "{stdout}");
    let report = std::fs::read_to_string(&out).unwrap();
    assert!(report.contains("UNEXPECTED per-sender-order: "), "{report}");
    assert!(report.contains("**DOES NOT MATCH**: "), "{report}");
    assert!(
        report.contains("2 of 2 files run, 1 match their declaration"),
        "{report}"
    );
    // Report only: nothing runs, the kept results are listed and the rest "not run yet".
    std::fs::write(files.join("new.toml"), &fast).unwrap();
    let report_only = || {
        let mut a = args(".toml");
        a.push("--report-only".into());
        let (code, stdout, _) = run(a);
        (code, stdout, std::fs::read_to_string(&out).unwrap())
    };
    let (code, stdout, report) = report_only();
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("2 of 3 files kept with this plan, 1 match their declaration, 1 do not, model not checked"),
        "{stdout}"
    );
    assert!(report.contains("new.toml` | | | | not run yet"), "{report}");
    assert!(report.contains("fingerprint was not checked"), "{report}");
    // Declaring the reorder a known hazard: report-only judges the stored classification
    // against the file as it is now, so the reorders stay unexpected until a sweep reuses the
    // kept result and classifies its failing seeds afresh (re-run with the fix on).
    let text = std::fs::read_to_string(files.join("clean.toml")).unwrap();
    let known = "\n[[expect.known]]\nname = \"reorder\"\ninvariant = \"per-sender-order\"\nfixed-by = \"handoff-ack-via-owner\"\n";
    std::fs::write(files.join("clean.toml"), format!("{text}{known}")).unwrap();
    let (code, stdout, _) = report_only();
    assert_eq!(code, 1, "{stdout}");
    let (code, stdout, _) = run(args("clean"));
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("(kept from an earlier sweep)"), "{stdout}");
    let report = std::fs::read_to_string(&out).unwrap();
    assert!(
        report.contains("known reorder (per-sender-order): "),
        "{report}"
    );
    // Report only reads a kept result of another model as it is, and marks it only when
    // asked to check the fingerprint.
    let reorder = sums.join(
        std::fs::read_dir(&sums)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .find(|n| n.to_string_lossy().ends_with("_reorder.json"))
            .unwrap(),
    );
    let text = std::fs::read_to_string(&reorder).unwrap();
    std::fs::write(&reorder, text.replace(print, "0 0 0")).unwrap();
    let (code, stdout, report) = report_only();
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains("2 of 3 files kept with this plan, 2 match"),
        "{stdout}"
    );
    assert!(!report.contains("another model"), "{report}");
    let mut a = args(".toml");
    a.extend(["--report-only".into(), "--check-fingerprint".into()]);
    let (code, stdout, _) = run(a);
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains("1 kept by another model (run again)"),
        "{stdout}"
    );
    let report = std::fs::read_to_string(&out).unwrap();
    assert!(
        report.contains("reorder.toml` | | | | *another model*: run it again")
            || report.contains("| *another model*: run it again |"),
        "{report}"
    );
    // --check-fingerprint needs --report-only.
    let mut a = args(".toml");
    a.push("--check-fingerprint".into());
    let (code, _, err) = run(a);
    assert_eq!(code, 2, "{err}");
    // Bad input.
    let (code, _, err) = shardsim(&["sweep", "no/such/folder"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no/such/folder"), "{err}");
    let (code, _, err) = run(args("matches-nothing"));
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = shardsim(&["sweep", "--schedules", "0"]);
    assert_eq!(code, 2, "{err}");
}

/// A sweep stopped in the middle of a file resumes from its last kept part, not from seed 0,
/// and the resumed result equals the uninterrupted one (the parts' summaries merge exactly).
/// `--report-only` lists the stopped file as in progress.
#[test]
fn sweep_resumes_a_stopped_file_from_its_last_part() {
    let d = tmp("sweep-resume");
    let files = d.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let fast = std::fs::read_to_string(root().join(FAST)).unwrap();
    std::fs::write(files.join("reorder.toml"), &fast).unwrap();
    let args = |kept: &Path, schedules: &str, extra: &[&str]| {
        let mut a = vec![
            "sweep".to_string(),
            files.display().to_string(),
            "--schedules".into(),
            schedules.into(),
            "--jobs".into(),
            "2".into(),
            "--summaries".into(),
            kept.display().to_string(),
            "--out".into(),
            d.join("report.md").display().to_string(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = |a: Vec<String>| shardsim(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let entry = |kept: &Path| -> shardsim::sweep::Entry {
        let text = std::fs::read_to_string(kept.join(format!(
            "{}_reorder.json",
            files.display().to_string().replace('/', "_")
        )))
        .unwrap();
        serde_json::from_str(&text).unwrap()
    };
    // The whole campaign, uninterrupted.
    let whole = d.join("whole");
    let (code, stdout, err) = run(args(&whole, "40", &[]));
    assert_eq!(code, 0, "{stdout}{err}");
    // A stopped one: its first 20 seeds kept as the partial result of a 40-seed plan.
    let first = d.join("first");
    let (code, _, _) = run(args(&first, "20", &[]));
    assert_eq!(code, 0);
    let stopped = d.join("stopped");
    std::fs::create_dir_all(&stopped).unwrap();
    let name = std::fs::read_dir(&first)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    let partial = stopped.join(
        Path::new(&name)
            .with_extension("partial.json")
            .file_name()
            .unwrap(),
    );
    std::fs::copy(first.join(&name), &partial).unwrap();
    let (code, stdout, _) = run(args(&stopped, "40", &["--report-only"]));
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains("0 of 1 files kept with this plan"),
        "{stdout}"
    );
    let report = std::fs::read_to_string(d.join("report.md")).unwrap();
    assert!(
        report.contains("| 20 of 40 | in progress (resumes from seed 20)"),
        "{report}"
    );
    let (code, stdout, err) = run(args(&stopped, "40", &[]));
    assert_eq!(code, 0, "{stdout}{err}");
    assert!(stdout.contains("resuming from seed 20 of 40"), "{stdout}");
    assert!(
        stdout.contains("reorder.toml: 40 seeds, matches"),
        "{stdout}"
    );
    assert!(!partial.exists(), "the partial result is removed when done");
    let (a, b) = (entry(&whole), entry(&stopped));
    assert_eq!(a.summary, b.summary);
    assert_eq!(a.verdict, b.verdict);
    // (The probe, min(100, seeds) seeds, is the partial run's: 20 seeds here.)
    assert_eq!((a.fingerprint, a.slow), (b.fingerprint, b.slow));
    // A partial result of another model is not resumed: the file runs from seed 0.
    let other = d.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let text = std::fs::read_to_string(first.join(&name)).unwrap();
    let print = text.split("\"fingerprint\": \"").nth(1).unwrap();
    let print = &print[..print.find('"').unwrap()];
    std::fs::write(
        other.join(partial.file_name().unwrap()),
        text.replace(print, "0 0 0"),
    )
    .unwrap();
    let (code, stdout, _) = run(args(&other, "40", &[]));
    assert_eq!(code, 0);
    assert!(!stdout.contains("resuming"), "{stdout}");
    assert_eq!(entry(&other).summary, a.summary);
}

/// A compacted summary lists every failure that is not the declared outcome and the first few
/// seeds of it, and counts the rest: counts, the verdict and merges are as for the whole list,
/// and a declaration that changed since makes the counted failures unexpected.
#[test]
fn compacting_a_summary_keeps_its_counts_verdict_and_merges() {
    let sc = load(FAST);
    let expected = sc.expect.outcome;
    let whole = Campaign::new(&sc, 0, 400).jobs(2).run();
    let n = whole.failures.len();
    assert!(n > 10, "the fast hazard should fail often");
    let mut small = whole.clone();
    small.compact(expected, 5);
    assert_eq!(small.failures.len(), 5);
    assert_eq!(small.failures[..], whole.failures[..5]);
    assert_eq!(small.elided_of(expected), n as u64 - 5);
    assert_eq!(small.failure_count(), n as u64);
    assert_eq!(small.expected_found, whole.expected_found);
    assert_eq!(
        campaign::judge(&sc, &small, 400, false),
        campaign::judge(&sc, &whole, 400, false)
    );
    // Compacting again changes nothing.
    let mut again = small.clone();
    again.compact(expected, 5);
    assert_eq!(again, small);
    // The merge of compacted slices, compacted, is the whole compacted.
    let (mut a, mut b) = (
        Campaign::new(&sc, 0, 200).run(),
        Campaign::new(&sc, 200, 200).run(),
    );
    a.compact(expected, 5);
    b.compact(expected, 5);
    let mut merged = campaign::merge(&[("a".into(), a), ("b".into(), b)]).unwrap();
    merged.compact(expected, 5);
    assert_eq!(merged, small);
    // Recounting against the same declaration keeps the count; against another one the
    // counted failures are unexpected, and the verdict says so.
    let mut same = small.clone();
    campaign::rejudge_stored(&sc, &mut same);
    assert_eq!(same.expected_found, whole.expected_found);
    let mut clean = (*sc).clone();
    clean.expect.outcome = Outcome::None;
    clean.expect.rate = None;
    let mut other = small.clone();
    campaign::rejudge_stored(&clean, &mut other);
    assert_eq!(other.expected_found, 0);
    assert_eq!(other.unexpected_count(Outcome::None), n as u64);
    let why = campaign::judge(&clean, &other, 400, false).unwrap_err();
    assert!(why.starts_with(&format!("{n} schedules failed")), "{why}");
}

/// `sweep --compact` rewrites a kept result of the older, whole form in place, running
/// nothing, and `--report-only` judges it as before.
#[test]
fn sweep_compact_rewrites_kept_results_in_place() {
    let d = tmp("sweep-compact");
    let files = d.join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::copy(root().join(FAST), files.join("reorder.toml")).unwrap();
    let sc = load(FAST);
    let file = files.join("reorder.toml").display().to_string();
    let sums = d.join("kept");
    std::fs::create_dir_all(&sums).unwrap();
    let whole = Campaign::new(&sc, 0, 300).jobs(2).run();
    let n = whole.failures.len();
    assert!(n > campaign::KEEP_EXPECTED, "{n} failures");
    let entry = shardsim::sweep::Entry {
        file: file.clone(),
        slow: false,
        probe_events: 1,
        secs: 1.0,
        jobs: 2,
        verdict: campaign::judge(&sc, &whole, 300, false),
        fingerprint: "0 0 0".into(),
        summary: whole.clone(),
    };
    let kept = shardsim::sweep::entry_path(&sums, &file);
    std::fs::write(&kept, serde_json::to_vec_pretty(&entry).unwrap()).unwrap();
    let before = std::fs::metadata(&kept).unwrap().len();
    let report_md = d.join("report.md");
    let common = |extra: &str| {
        let args = [
            "sweep",
            files.to_str().unwrap(),
            "--schedules",
            "300",
            "--summaries",
            sums.to_str().unwrap(),
            "--out",
            report_md.to_str().unwrap(),
            extra,
        ];
        shardsim(&args)
    };
    let (code, stdout, err) = common("--report-only");
    assert_eq!(code, 0, "{stdout}{err}");
    let report = std::fs::read_to_string(d.join("report.md")).unwrap();
    let (code, stdout, err) = common("--compact");
    assert_eq!(code, 0, "{stdout}{err}");
    assert!(
        stdout.contains("sweep --compact: 1 kept results"),
        "{stdout}"
    );
    let after = std::fs::metadata(&kept).unwrap().len();
    assert!(after < before, "{before} -> {after}");
    let e: shardsim::sweep::Entry =
        serde_json::from_str(&std::fs::read_to_string(&kept).unwrap()).unwrap();
    assert_eq!(e.summary.failures.len(), campaign::KEEP_EXPECTED);
    assert_eq!(e.summary.failure_count(), n as u64);
    assert_eq!(e.verdict, entry.verdict);
    let (code, stdout, err) = common("--report-only");
    assert_eq!(code, 0, "{stdout}{err}");
    assert_eq!(
        std::fs::read_to_string(d.join("report.md")).unwrap(),
        report,
        "the report is the same from the compact form"
    );
    // --compact and --report-only together are refused.
    let (code, _, err) = shardsim(&["sweep", "--compact", "--report-only"]);
    assert_eq!(code, 2, "{err}");
}
