//! The command line as a user meets it: exit codes, error messages naming file, line and field.

mod common;
use common::*;

#[test]
fn bad_scenario_files_name_file_line_and_field() {
    for (file, line, field) in [
        ("tests/data/bad/unknown-field.toml", 6, "senders-per-nod"),
        ("tests/data/bad/latency-range.toml", 6, "network.latency-ms"),
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
        "137",
    ]);
    assert_eq!(code, 0, "an expected violation is not a failure: {out}");
    assert!(
        out.contains("VIOLATION per-sender-order (seed 137) at t="),
        "{out}"
    );
    assert!(out.contains("replay: cargo run --release -- run sim-scenarios/hazards/reorder-across-handoff.toml --seed 137"), "{out}");
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
        "137",
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
