//! The failing-seed corpus, `tests/corpus.jsonl`: every recorded seed still fails with the
//! recorded invariant at the recorded simulated time; appending keeps what is there.

mod common;
use common::*;

use shardsim::campaign::{self, Campaign, CorpusEntry, CORPUS_CAP};
use shardsim_harness::scenario::{Outcome, Scenario};
use shardsim_harness::trace::TraceMode;
use std::path::Path;
use std::sync::Arc;

#[test]
fn every_corpus_entry_replays() {
    let file = root().join("tests/corpus.jsonl");
    let corpus = campaign::read_corpus(&file).unwrap_or_else(|e| panic!("{e}"));
    assert!(corpus.entries.len() >= 3, "the corpus lost entries");
    let mut stale = Vec::new();
    for (line, e) in &corpus.entries {
        let path = root().join(&e.scenario);
        let sc = Arc::new(Scenario::load(&path).unwrap_or_else(|err| panic!("line {line}: {err}")));
        let (r, _) = campaign::run_seed(&sc, e.seed, TraceMode::Off);
        let got = r.violation.as_ref().map(|v| (v.invariant, v.t.0));
        if got != Some((e.invariant, e.t_us)) {
            stale.push(format!(
                "tests/corpus.jsonl:{line}: {} seed {}: recorded {} at {}us, got {}\n  replay: {}",
                e.scenario,
                e.seed,
                e.invariant,
                e.t_us,
                match &r.violation {
                    Some(v) => format!("{} at {}us: {}", v.invariant, v.t.0, v.detail),
                    None => "no violation".into(),
                },
                campaign::replay_command(Path::new(&e.scenario), e.seed)
            ));
        }
    }
    assert!(
        stale.is_empty(),
        "{} of {} corpus entries no longer replay:\n{}\n(if a change to the simulator moved every \
         schedule on purpose, rebuild the corpus: see reports/README.md)",
        stale.len(),
        corpus.entries.len(),
        stale.join("\n")
    );
}

fn entry(scenario: &str, seed: u64) -> CorpusEntry {
    CorpusEntry {
        scenario: scenario.into(),
        seed,
        invariant: Outcome::PerSenderOrder,
        t_us: 1000 + seed,
    }
}

#[test]
fn appending_keeps_earlier_lines_dedups_and_caps() {
    let file = tmp("append").join("corpus.jsonl");
    // Hand-written lines, spaced differently from what shardsim writes, and a blank line.
    let before = "{\"scenario\": \"a.toml\", \"seed\": 1, \"invariant\": \"per-sender-order\", \"t_us\": 5}\n\n\
{\"scenario\": \"b.toml\", \"seed\": 1, \"invariant\": \"at-most-one\", \"t_us\": 6}\n";
    std::fs::write(&file, before).unwrap();
    let added = campaign::append_corpus(
        &file,
        &[
            entry("a.toml", 1),
            entry("a.toml", 2),
            entry("b.toml", 2),
            entry("a.toml", 2),
        ],
    )
    .unwrap();
    assert_eq!(added, vec![entry("a.toml", 2), entry("b.toml", 2)]);
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(after.starts_with(before), "{after}");
    assert_eq!(after.lines().count(), 5);
    // Nothing new: the file is not touched.
    assert!(campaign::append_corpus(&file, &[entry("a.toml", 2)])
        .unwrap()
        .is_empty());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), after);
    // At most CORPUS_CAP new entries per campaign.
    let many: Vec<CorpusEntry> = (100..130).map(|s| entry("c.toml", s)).collect();
    let added = campaign::append_corpus(&file, &many).unwrap();
    assert_eq!(added, many[..CORPUS_CAP].to_vec());
    let last = std::fs::read_to_string(&file).unwrap();
    assert!(last.starts_with(&after));
    let c = campaign::read_corpus(&file).unwrap();
    assert_eq!(c.entries.len(), 4 + CORPUS_CAP);
    assert_eq!(c.entries[0].0, 1);
    assert_eq!(c.entries[1].0, 3, "line numbers count the blank line");
    // A missing file is an empty corpus, created on the first append.
    let fresh = tmp("fresh").join("new.jsonl");
    let _ = std::fs::remove_file(&fresh);
    assert_eq!(
        campaign::append_corpus(&fresh, &[entry("a.toml", 9)])
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        std::fs::read_to_string(&fresh).unwrap(),
        format!("{}\n", entry("a.toml", 9).to_line())
    );
}

#[test]
fn cli_fuzz_appends_to_a_corpus() {
    let file = tmp("cli").join("corpus.jsonl");
    let kept = "{\"scenario\": \"elsewhere.toml\", \"seed\": 7, \"invariant\": \"no-duplicate\", \"t_us\": 1}\n";
    std::fs::write(&file, kept).unwrap();
    let args = [
        "fuzz",
        "tests/data/fast-reorder.toml",
        "--schedules",
        "30",
        "--jobs",
        "2",
        "--quiet",
        "--corpus",
        file.to_str().unwrap(),
    ];
    let (code, out, err) = shardsim(&args);
    assert_eq!(code, 0, "{out}{err}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with(kept));
    // The failing seeds among 0..30, in seed order; outside the repository, names are relative
    // to the current directory (the repository here).
    let sc = common::load("tests/data/fast-reorder.toml");
    let sum = Campaign::new(&sc, 0, 30).run();
    let want = campaign::corpus_entries("tests/data/fast-reorder.toml", &sum);
    assert!(!want.is_empty(), "no failing seed in 0..30");
    assert!(
        out.contains(&format!("{} new entries", want.len())),
        "{out}"
    );
    let c = campaign::read_corpus(&file).unwrap();
    let got: Vec<CorpusEntry> = c.entries[1..].iter().map(|(_, e)| e.clone()).collect();
    assert_eq!(got, want);
    let (code, out, _) = shardsim(&args);
    assert_eq!(code, 0);
    assert!(out.contains("0 new entries"), "{out}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

#[test]
fn a_bad_corpus_line_names_file_line_and_field() {
    let file = tmp("bad").join("corpus.jsonl");
    let good = "{\"scenario\":\"a.toml\",\"seed\":1,\"invariant\":\"per-sender-order\",\"t_us\":5}";
    for (bad, field) in [
        (good.replace("\"seed\":1", "\"seed\":-1"), "seed"),
        (good.replace("per-sender-order", "reorder"), "invariant"),
        (good.replace(",\"t_us\":5", ""), "t_us"),
        (good.replace("\"scenario\"", "\"scenari\""), "scenari"),
    ] {
        std::fs::write(&file, format!("{good}\n{bad}\n")).unwrap();
        let (code, _, err) = shardsim(&[
            "fuzz",
            "sim-scenarios/one-node.toml",
            "--schedules",
            "1",
            "--quiet",
            "--corpus",
            file.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(&format!("corpus.jsonl:2: field `{field}`")),
            "{field}: {err}"
        );
        // Never rewritten on error.
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            format!("{good}\n{bad}\n")
        );
    }
    std::fs::write(&file, "{not json\n").unwrap();
    let (code, _, err) = shardsim(&[
        "fuzz",
        "sim-scenarios/one-node.toml",
        "--schedules",
        "1",
        "--corpus",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("corpus.jsonl:1: not valid JSON"), "{err}");
}
