//! The command line as a user meets it: exit codes, error messages naming file, line and field.

mod common;
use common::*;

#[test]
fn bad_scenario_files_name_file_line_and_field() {
    for (file, line, field) in [
        ("tests/data/bad/unknown-field.toml", 6, "senders-per-nod"),
        ("tests/data/bad/latency-range.toml", 6, "network.latency-ms"),
        ("tests/data/bad/too-many-nodes.toml", 3, "cluster.nodes"),
        ("tests/data/bad/wrong-type.toml", 3, "nodes"),
        ("tests/data/bad/bad-outcome.toml", 6, "outcome"),
        (
            "tests/data/bad/state-store-mode.toml",
            7,
            "state-store-mode",
        ),
        ("tests/data/bad/unknown-role.toml", 7, "settings.role"),
        ("tests/data/bad/malformed-roles.toml", 4, "cluster.roles"),
        (
            "tests/data/bad/min-members-above-nodes.toml",
            6,
            "settings.min-nr-of-members",
        ),
        (
            "tests/data/bad/leave-by-unknown-node.toml",
            10,
            "faults[0].by",
        ),
        (
            "tests/data/bad/check-graceful-shutdown-type.toml",
            5,
            "check-graceful-shutdown",
        ),
        ("tests/data/bad/rate-band.toml", 7, "expect.rate"),
        ("tests/data/bad/rate-without-outcome.toml", 6, "expect.rate"),
        (
            "tests/data/bad/known-fixed-by.toml",
            7,
            "expect.known[0].fixed-by",
        ),
        (
            "tests/data/bad/key-space-growth-range.toml",
            6,
            "workload.key-space-growth-ms",
        ),
        (
            "tests/data/bad/delay-unknown-kind.toml",
            7,
            "delays[0].message",
        ),
        ("tests/data/bad/delay-unknown-node.toml", 13, "delays[1].to"),
        ("tests/data/bad/delay-window.toml", 9, "delays[0].until-ms"),
        ("tests/data/bad/delay-no-hold.toml", 6, "hold-ms"),
        (
            "tests/data/bad/swarm-delays-hold.toml",
            9,
            "swarm.max-hold-ms",
        ),
    ] {
        let (code, _, err) = shardsim(&["run", file, "--seed", "1"]);
        assert_eq!(code, 2, "{file}: {err}");
        assert!(
            err.contains(&format!("{file}:{line}")),
            "{file}: no line {line} in: {err}"
        );
        assert!(
            err.contains(&format!("`{field}`")),
            "{file}: no field {field} in: {err}"
        );
    }
    let (code, _, err) = shardsim(&["fuzz", "tests/data/bad/syntax.toml", "--schedules", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("tests/data/bad/syntax.toml:2"), "{err}");
}

/// A `fixed-by` naming no fix option lists the fix options (rule 4: the user picks one of
/// them).
#[test]
fn an_unknown_fixed_by_lists_the_fix_options() {
    let file = "tests/data/bad/known-fixed-by.toml";
    let (code, _, err) = shardsim(&["run", file, "--seed", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "\"handoff-ack-via-ownr\" is not a fix option (one of handoff-ack-via-owner, \
             host-shard-resend-skips-handoff, hand-over-keeps-local-region, \
             rebalance-skips-shutting-down-regions, handoff-during-handoff-answered, \
             gossip-skips-unreachable-members, down-self-gossip-excludes-downed-observers)"
        ),
        "{err}"
    );
}

/// A setting the madsim host cannot express exits 2 naming file, line and field, on `run`,
/// `fuzz` and `agree`; the own world runs the same file.
#[test]
fn a_setting_the_madsim_host_cannot_express_names_file_line_and_field() {
    let file = "tests/data/bad/madsim-slow-path.toml";
    for args in [
        &["run", "--host", "madsim", file, "--seed", "1"][..],
        &["fuzz", "--host", "madsim", file, "--schedules", "1"][..],
    ] {
        let (code, _, err) = shardsim(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(&format!("{file}:6")), "{args:?}: {err}");
        assert!(
            err.contains("`network.slow-probability`"),
            "{args:?}: {err}"
        );
    }
    let (code, out, err) = shardsim(&["run", file, "--seed", "1"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, _) = shardsim(&["agree", file]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("not run: network.slow-probability"), "{out}");
}

/// On the madsim host, a failure's replay line names the host.
#[test]
fn madsim_failures_replay_on_madsim() {
    let file = "sim-scenarios/hazards/passivation-never-stops.toml";
    let (code, out, _) = shardsim(&[
        "fuzz",
        "--host",
        "madsim",
        file,
        "--schedules",
        "200",
        "--until-failure",
        "--quiet",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("expected liveness seed"), "{out}");
    assert!(
        out.contains(
            "-- run --host madsim sim-scenarios/hazards/passivation-never-stops.toml --seed"
        ),
        "{out}"
    );
}

#[test]
fn missing_file_and_bad_arguments_fail_cleanly() {
    let (code, _, err) = shardsim(&["run", "no/such.toml", "--seed", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("no/such.toml"), "{err}");
    let (code, _, err) = shardsim(&["run", "sim-scenarios/one-node.toml", "--seed", "minus-one"]);
    assert_ne!(code, 0);
    assert!(err.contains("--seed"), "{err}");
    let (code, _, _) = shardsim(&["fuzz", "sim-scenarios/one-node.toml", "--schedules", "0"]);
    assert_eq!(code, 2);
}

#[test]
fn run_prints_summary_and_replay_on_violation() {
    let (code, out, _) = shardsim(&[
        "run",
        "sim-scenarios/hazards/reorder-across-handoff.toml",
        "--seed",
        "2",
    ]);
    assert_eq!(code, 0, "an expected violation is not a failure: {out}");
    assert!(
        out.contains("VIOLATION per-sender-order (seed 2) at t="),
        "{out}"
    );
    assert!(out.contains("replay: cargo run --release -- run sim-scenarios/hazards/reorder-across-handoff.toml --seed 2"), "{out}");
    assert!(
        out.contains("\"ev\":\"deliver\""),
        "trace context missing: {out}"
    );
}

#[test]
fn fuzz_exits_nonzero_on_unexpected_violation_and_when_expected_is_missing() {
    // The fixed scenario with a broken region: an unexpected violation.
    let dir = std::env::temp_dir().join(format!("shardsim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("sim-scenarios/hazards/reorder-across-handoff-fixed.toml"),
    )
    .unwrap();
    let broken = dir.join("broken.toml");
    std::fs::write(
        &broken,
        text.replace(
            "handoff-ack-via-owner = true",
            "handoff-ack-via-owner = true\nmutation = \"buffer-duplicate\"",
        ),
    )
    .unwrap();
    let (code, out, _) = shardsim(&[
        "fuzz",
        broken.to_str().unwrap(),
        "--schedules",
        "50",
        "--quiet",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("UNEXPECTED no-duplicate seed"), "{out}");
    assert!(out.contains("replay: cargo run --release -- run"), "{out}");
    assert!(
        out.contains("shrink: cargo run --release -- shrink"),
        "{out}"
    );
    // An expected violation that never shows: also a failure.
    let never = dir.join("never.toml");
    std::fs::write(
        &never,
        text.replace("outcome = \"none\"", "outcome = \"at-most-one\""),
    )
    .unwrap();
    let (code, out, _) = shardsim(&[
        "fuzz",
        never.to_str().unwrap(),
        "--schedules",
        "20",
        "--quiet",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("no schedule showed it"), "{out}");
    // An expected rate far from the measured one: a failure naming rate, schedules and band.
    let hazard = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("sim-scenarios/hazards/reorder-across-handoff.toml"),
    )
    .unwrap();
    let (head, _) = hazard.split_once("[expect]").unwrap();
    let banded = dir.join("banded.toml");
    std::fs::write(
        &banded,
        format!("{head}[expect]\noutcome = \"per-sender-order\"\nrate = [0.9, 1.0]\n"),
    )
    .unwrap();
    let (code, out, _) = shardsim(&[
        "fuzz",
        banded.to_str().unwrap(),
        "--schedules",
        "60",
        "--quiet",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAILED: `per-sender-order` rate 0."), "{out}");
    assert!(out.contains(" of 60 schedules; 99.9 % interval ["), "{out}");
    assert!(
        out.contains("against the declared band [0.9, 1]: far outside it"),
        "{out}"
    );
}

#[test]
fn run_writes_a_trace_that_check_trace_rechecks() {
    let dir = std::env::temp_dir().join(format!("shardsim-cli-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.jsonl");
    let (code, _, err) = shardsim(&[
        "run",
        "sim-scenarios/hazards/reorder-across-handoff.toml",
        "--seed",
        "2",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = shardsim(&["check-trace", trace.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.contains("VIOLATION per-sender-order"), "{out}");
    std::fs::write(
        dir.join("bad.jsonl"),
        "{\"t\":1,\"ev\":\"send\",\"sender\":\"c1\",\"entity\":\"x\",\"seq\":1,\"node\":0}\n",
    )
    .unwrap();
    let (code, _, err) = shardsim(&["check-trace", dir.join("bad.jsonl").to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("bad.jsonl:line 1: field `entity`"), "{err}");
}

#[test]
fn bench_reports_each_round_and_the_median_ratio() {
    let (code, out, err) = shardsim(&["bench", "--schedules", "2", "--rounds", "3"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out.matches("full simulator with checkers = ").count(),
        4,
        "{out}"
    );
    assert!(out.contains("round 3 of 3:"), "{out}");
    assert!(out.contains("median over 3 rounds"), "{out}");
    // The bare loop runs as many events as the simulator did, with a fixed checksum.
    let checksums: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split("(checksum ").nth(1))
        .collect();
    assert_eq!(checksums.len(), 3, "{out}");
    assert!(checksums.iter().all(|c| *c == checksums[0]), "{out}");
    let (code, _, err) = shardsim(&["bench", "--rounds", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--rounds"), "{err}");
}

/// `bench --scale`: a subset of the grid, each cell a child process; bad
/// flags exit 2 naming the flag.
#[test]
fn scale_bench_runs_a_subset_and_rejects_bad_flags() {
    let (code, out, err) = shardsim(&[
        "bench",
        "--scale",
        "--nodes",
        "3",
        "--entities",
        "100,200",
        "--sim-ms",
        "2000",
        "--min-secs",
        "0",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("| 3 | 100 | 100 |"), "{out}");
    assert!(out.contains("| 3 | 200 | 200 |"), "{out}");
    assert!(out.contains(" 1.00x |"), "{out}");
    for (args, names) in [
        (vec!["--scale", "--nodes", "0"], "--nodes"),
        (vec!["--scale", "--nodes", "3,x"], "--nodes"),
        (vec!["--scale", "--entities", "-4"], "-4"),
        (vec!["--scale", "--sim-ms", "0"], "--sim-ms"),
        (vec!["--scale", "--min-secs", "4000"], "--min-secs"),
        (vec!["--scale", "--max-rss-mb", "1"], "--max-rss-mb"),
        (vec!["--nodes", "3"], "--scale"),
    ] {
        let mut a = vec!["bench"];
        a.extend(args.iter());
        let (code, _, err) = shardsim(&a);
        assert_eq!(code, 2, "{a:?}: {err}");
        assert!(err.contains(names), "{a:?}: {err}");
    }
}

#[test]
fn files_that_are_not_utf8_name_their_line() {
    let d = tmp("not-utf8");
    let sc = d.join("bad.toml");
    std::fs::write(&sc, b"name = \"x\"\n[cluster]\nnodes = 3 # \xff\n").unwrap();
    let (code, _, err) = shardsim(&["run", sc.to_str().unwrap(), "--seed", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("{}:3", sc.display())), "{err}");
    assert!(err.contains("not UTF-8"), "{err}");
    let tr = d.join("bad.jsonl");
    std::fs::write(
        &tr,
        b"{\"t\":0,\"kind\":\"run_end\",\"in_flight\":0}\n\xc3\n",
    )
    .unwrap();
    let (code, _, err) = shardsim(&["check-trace", tr.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("{}:2", tr.display())), "{err}");
    let corpus = d.join("corpus.jsonl");
    std::fs::write(&corpus, b"\xfe\n").unwrap();
    let (code, _, err) = shardsim(&[
        "fuzz",
        "sim-scenarios/one-node.toml",
        "--schedules",
        "1",
        "--corpus",
        corpus.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("{}:1", corpus.display())), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// check-trace balances the messages from the file alone: a trace with one delivery line
/// removed shows it vanished.
#[test]
fn check_trace_balances_the_messages_of_the_file() {
    let dir = std::env::temp_dir().join(format!("shardsim-cli-balance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.jsonl");
    let (code, _, err) = shardsim(&[
        "run",
        "sim-scenarios/smoke.toml",
        "--seed",
        "3",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = shardsim(&["check-trace", trace.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let text = std::fs::read_to_string(&trace).unwrap();
    let first = text.find("\"ev\":\"deliver\"").unwrap();
    let start = text[..first].rfind('\n').map_or(0, |i| i + 1);
    let end = first + text[first..].find('\n').unwrap() + 1;
    let cut = dir.join("cut.jsonl");
    std::fs::write(&cut, format!("{}{}", &text[..start], &text[end..])).unwrap();
    let (code, out, _) = shardsim(&["check-trace", cut.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("VIOLATION message-lost"), "{out}");
    assert!(out.contains("1 vanished without a reason (c"), "{out}");
}

#[test]
fn cli_bad_slices_exit_2() {
    let base = [
        "fuzz",
        "sim-scenarios/one-node.toml",
        "--schedules",
        "10",
        "--quiet",
        "--slice",
    ];
    for (spec, env, says) in [
        ("3/3", &[][..], "out of range"),
        ("0/0", &[][..], "at least 1"),
        ("auto/0", &[][..], "at least 1"),
        ("1-3", &[][..], "expected I/N or auto/N"),
        ("one/3", &[][..], "neither a whole number nor `auto`"),
        ("1/3/4", &[][..], "not a whole number"),
        ("auto/3", &[][..], "neither JOB_COMPLETION_INDEX"),
        (
            "auto/3",
            &[("JOB_COMPLETION_INDEX", "3")][..],
            "out of range",
        ),
        (
            "auto/3",
            &[("SLURM_ARRAY_TASK_ID", "3")][..],
            "out of range",
        ),
        (
            "auto/3",
            &[
                ("SLURM_ARRAY_TASK_ID", "2"),
                ("SLURM_ARRAY_TASK_COUNT", "4"),
            ][..],
            "4 tasks, not 3",
        ),
        (
            "auto/3",
            &[("JOB_COMPLETION_INDEX", "first")][..],
            "JOB_COMPLETION_INDEX=`first`",
        ),
    ] {
        let mut args = base.to_vec();
        args.push(spec);
        let (code, _, err) = shardsim_env(&args, env);
        assert_eq!(code, 2, "{spec} {env:?}: {err}");
        assert!(err.contains("--slice"), "{spec}: {err}");
        assert!(err.contains(says), "{spec} {env:?}: {err}");
    }
    let (code, _, err) = shardsim_env(
        &[
            "fuzz",
            "sim-scenarios/one-node.toml",
            "--slice",
            "0/2",
            "--until-failure",
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--until-failure"), "{err}");
}

#[test]
fn explain_tells_a_failing_seed_and_a_trace_and_refuses_bad_input() {
    let dir = std::env::temp_dir().join(format!("shardsim-cli-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pics = dir.join("pics");
    let rel = "sim-scenarios/hazards/stale-host-shard-resend.toml";
    let (code, out, err) = shardsim(&[
        "explain",
        rel,
        "--seed",
        "0",
        "--pictures",
        pics.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("at-most-one at t=16.807964s"), "{out}");
    assert!(out.contains("ResendShardHost(shard 0)"), "{out}");
    for ext in ["md", "svg"] {
        let p = pics.join(format!("stale-host-shard-resend-seed0.{ext}"));
        assert!(p.exists(), "{out}");
    }
    // The same story from a trace that `run --trace` wrote.
    let trace = dir.join("t.jsonl");
    let (code, _, err) = shardsim(&[
        "run",
        rel,
        "--seed",
        "0",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out2, err) = shardsim(&["explain", trace.to_str().unwrap(), "--no-pictures"]);
    assert_eq!(code, 0, "{err}");
    let story = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with("wrote "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(story(&out), story(&out2));
    // A seed that does not fail: said so, exit 2.
    let (code, _, err) = shardsim(&[
        "explain",
        "sim-scenarios/hazards/stale-host-shard-resend-fixed.toml",
        "--seed",
        "0",
        "--no-pictures",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("seed 0: the run breaks no invariant"), "{err}");
    // A truncated trace (cut in the middle of a line), and a garbled one: exit 2 naming the line.
    let text = std::fs::read_to_string(&trace).unwrap();
    let cut = text[..text.len() / 2].rfind('\n').unwrap() + 10;
    let truncated = dir.join("truncated.jsonl");
    std::fs::write(&truncated, &text[..cut]).unwrap();
    let line = text[..cut].lines().count();
    let (code, _, err) = shardsim(&["explain", truncated.to_str().unwrap(), "--no-pictures"]);
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!("truncated.jsonl:line {line}")),
        "{err}"
    );
    let mut lines: Vec<&str> = text.lines().collect();
    lines[6] = "{\"t\":5,\"ev\":\"step\",\"step\":\"six\",\"actor\":\"region\",\"what\":\"x\"}";
    let garbled = dir.join("garbled.jsonl");
    std::fs::write(&garbled, lines.join("\n")).unwrap();
    let (code, _, err) = shardsim(&["explain", garbled.to_str().unwrap(), "--no-pictures"]);
    assert_eq!(code, 2);
    assert!(err.contains("garbled.jsonl:line 7: field `step`"), "{err}");
    // Cut at a line's end: no `run_end`, so truncated.
    let cut = text[..text.len() / 2].rfind('\n').unwrap() + 1;
    std::fs::write(&truncated, &text[..cut]).unwrap();
    let (code, _, err) = shardsim(&["explain", truncated.to_str().unwrap(), "--no-pictures"]);
    assert_eq!(code, 2);
    let line = text[..cut].lines().count();
    assert!(
        err.contains(&format!(
            "truncated.jsonl:line {line}: the trace ends without"
        )),
        "{err}"
    );
    // A trace without step lines.
    let plain = dir.join("plain.jsonl");
    let no_steps: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("\"ev\":\"step\"") && !l.contains("\"ev\":\"lost\""))
        .collect();
    std::fs::write(&plain, no_steps.join("\n")).unwrap();
    let (code, _, err) = shardsim(&["explain", plain.to_str().unwrap(), "--no-pictures"]);
    assert_eq!(code, 2);
    assert!(err.contains("no causal `step` lines"), "{err}");
    // A scenario without --seed.
    let (code, _, err) = shardsim(&["explain", rel, "--no-pictures"]);
    assert_eq!(code, 2);
    assert!(err.contains("--seed"), "{err}");
}

/// Numeric flags reject nonsense with exit 2 naming the flag: `--jobs 0` (leave it out for all
/// cores), negative or non-numeric values, and a seed range past the last seed.
#[test]
fn numeric_flags_reject_nonsense() {
    let sc = "sim-scenarios/one-node.toml";
    for args in [
        vec!["fuzz", sc, "--jobs", "0"],
        vec!["fuzz", sc, "--jobs", "-1"],
        vec!["fuzz", sc, "--jobs", "two"],
        vec!["fuzz", sc, "--schedules", "-5"],
        vec!["fuzz", sc, "--schedules", "1e3"],
        vec!["fuzz", sc, "--seed-start", "18446744073709551616"],
        vec!["bench", "--jobs", "0"],
        vec!["agree", sc, "--jobs", "0"],
        vec!["run", sc, "--seed", "-1"],
        vec!["shrink", sc, "--seed", "1", "--max-runs", "many"],
    ] {
        let (code, _, err) = shardsim(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        // clap names the flag, or (for a value that looks like a flag, `-1`) the value.
        let flag = args.iter().rev().find(|a| a.starts_with("--")).unwrap();
        let value = args.last().unwrap();
        assert!(err.contains(flag) || err.contains(value), "{args:?}: {err}");
    }
    let (code, _, err) = shardsim(&[
        "fuzz",
        sc,
        "--seed-start",
        "18446744073709551610",
        "--schedules",
        "10",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--seed-start"), "{err}");
}

/// A seed that shows a scenario's known hazard (`[[expect.known]]`): `run` names the hazard and
/// its fix and exits 0; `fuzz` reports it as known, not as a failure, and fails when its rate
/// is far outside a declared band.
#[test]
fn a_known_hazard_is_reported_as_known() {
    use shardsim::campaign::Campaign;
    let file = "tests/data/known-reorder.toml";
    let sc = common::load(file);
    let sum = Campaign::new(&sc, 0, 40).jobs(2).run();
    let f = sum
        .failures
        .first()
        .expect("one seed in six shows the reorder");
    assert_eq!(f.known.as_deref(), Some("reorder-across-handoff"), "{f:?}");
    let seed = f.seed.to_string();
    let (code, out, _) = shardsim(&["run", file, "--seed", &seed]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("outcome: per-sender-order (the scenario's known hazard `reorder-across-handoff`: this seed is clean with `handoff-ack-via-owner` on)"),
        "{out}"
    );
    let n = sum.failures.len();
    let (code, out, _) = shardsim(&["fuzz", file, "--schedules", "40", "--jobs", "2"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!(
            "known hazard reorder-across-handoff: per-sender-order seed {seed}"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("known hazard `reorder-across-handoff`: {n} of 40 schedules (each such seed is clean with `handoff-ack-via-owner` on)")),
        "{out}"
    );
    // The same with a band of at most one in ten thousand: far outside it.
    let d = tmp("known-band");
    let banded = d.join("banded.toml");
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    std::fs::write(&banded, format!("{text}rate = [0.0, 0.0001]\n")).unwrap();
    let (code, out, _) = shardsim(&["fuzz", banded.to_str().unwrap(), "--schedules", "40"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAILED: known hazard `reorder-across-handoff` rate "),
        "{out}"
    );
}

/// Flags that mean something only with another are refused without it (exit 2, naming the
/// flag), and `--jobs` above the cores warns but runs.
#[test]
fn dependent_flags_are_refused_without_their_flag() {
    for args in [
        &["fuzz", "sim-scenarios/one-node.toml", "--batch", "8"][..],
        &[
            "fuzz",
            "sim-scenarios/one-node.toml",
            "--guided-out",
            "/tmp/x",
        ][..],
        &[
            "explain",
            "sim-scenarios/one-node.toml",
            "--seed",
            "1",
            "--pictures",
            "/tmp/x",
            "--no-pictures",
        ][..],
    ] {
        let (code, _, err) = shardsim(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("--"), "{args:?}: {err}");
    }
    let (code, _, err) = shardsim(&[
        "fuzz",
        "sim-scenarios/one-node.toml",
        "--schedules",
        "2",
        "--jobs",
        "4096",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: --jobs 4096 is more than the"),
        "{err}"
    );
}

/// No command writes into the checkout's tracked folders unless told to: every default output
/// path is under `shardsim-out/` (ignored by git), never `reports/` or `sim-scenarios/`.
#[test]
fn default_outputs_stay_out_of_the_tracked_folders() {
    let mut defaults = 0;
    for sub in [
        "run",
        "fuzz",
        "sweep",
        "merge",
        "shrink",
        "explain",
        "check-trace",
    ] {
        let (code, out, err) = shardsim(&[sub, "--help"]);
        assert_eq!(code, 0, "{sub} --help: {err}");
        for tracked in ["reports/", "sim-scenarios/"] {
            assert!(
                !out.contains(&format!("default: {tracked}")),
                "`{sub}` writes into {tracked} by default:\n{out}"
            );
        }
        defaults += out.matches("shardsim-out/").count();
    }
    assert!(defaults >= 5, "{defaults} defaults under shardsim-out/");
}

/// An output path that cannot be written fails at once, before the campaign, the run or the
/// shrink, naming the flag; and a write that fails leaves no temporary file behind.
#[test]
fn bad_output_paths_fail_before_the_work() {
    let d = tmp("bad-outputs");
    // A folder where a file's parent should be: nothing can be created under a file.
    let file = d.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let under_file = file.join("out.json");
    let under = under_file.to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "fuzz",
                "sim-scenarios/smoke.toml",
                "--schedules",
                "100000",
                "--summary",
                under,
            ],
            "--summary",
        ),
        (
            &[
                "run",
                "sim-scenarios/smoke.toml",
                "--seed",
                "1",
                "--trace",
                under,
            ],
            "--trace",
        ),
        (
            &[
                "run",
                "sim-scenarios/smoke.toml",
                "--seed",
                "1",
                "--perfetto",
                under,
            ],
            "--perfetto",
        ),
        (
            &[
                "shrink",
                "sim-scenarios/faults/swarm-auto-down.toml",
                "--seed",
                "260",
                "--out",
                under,
            ],
            "--out",
        ),
    ];
    for (args, flag) in cases {
        let started = std::time::Instant::now();
        let (code, out, err) = shardsim(args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(
            err.contains(flag) && err.contains("a-file"),
            "{args:?}: {err}"
        );
        // Refused before the work: a 100,000-schedule campaign would take minutes.
        assert!(started.elapsed().as_secs() < 20, "{args:?}");
    }
    // A trace path that is a folder.
    let (code, _, err) = shardsim(&[
        "run",
        "sim-scenarios/smoke.toml",
        "--seed",
        "1",
        "--trace",
        d.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is a folder"), "{err}");
    // write_atomic onto a folder that holds a file: the rename fails, no temporary file stays.
    let target = d.join("occupied");
    std::fs::create_dir_all(target.join("inside")).unwrap();
    assert!(shardsim::campaign::write_atomic(&target, b"data").is_err());
    let left: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp."))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
