//! Parsers that never panic: proptest feeds the scenario parser, the corpus
//! reader, the trace reader (with the checker that re-checks what it reads) and the summary
//! reader with real files mutated by generated edits: truncation, byte flips, inserted and
//! deleted lines, huge and negative numbers, wrong types, unknown keys, invalid UTF-8. Each
//! input must give `Ok` or an error naming the file (and a line inside the file when it gives
//! one); a panic fails the test with the shrunk input.
//!
//! `SHARDSIM_PARSER_CASES` sets the cases per reader (default 400, a fast subset). The recorded
//! run in `reports/parser-robustness.md` used 250,000 per reader (1,000,000 inputs):
//! `SHARDSIM_PARSER_CASES=250000 cargo test --release --test parsers`.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use shardsim::campaign::{self, Campaign, Summary};
use shardsim_harness::scenario::Scenario;
use shardsim_harness::trace::TraceMode;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

mod common;
use common::{root, toml_files};

fn cases() -> u32 {
    std::env::var("SHARDSIM_PARSER_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400)
}

/// One generated edit of an input's bytes. Positions are taken modulo the input's length.
#[derive(Clone, Debug)]
enum Edit {
    /// Cut the input at this position.
    Truncate(usize),
    /// Replace the byte here.
    SetByte(usize, u8),
    /// Insert these bytes here.
    Insert(usize, Vec<u8>),
    /// Delete line k.
    DeleteLine(usize),
    /// Repeat line k.
    DuplicateLine(usize),
    /// Insert one of the nasty lines before line k.
    InsertLine(usize, usize),
    /// Insert one of the multi-byte texts here.
    InsertText(usize, usize),
    /// Replace the n-th number in the text by one of the nasty numbers.
    ReplaceNumber(usize, usize),
    /// Replace the n-th number by a quoted string, or the n-th string by a number.
    SwapType(usize),
}

const NASTY_NUMBERS: &[&str] = &[
    "0",
    "-1",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "4294967296",
    "-9223372036854775808",
    "1e309",
    "1.5",
    "NaN",
    "inf",
    "0x10",
    "[]",
    "{}",
    "true",
    "null",
];

const NASTY_LINES: &[&str] = &[
    "zzz-unknown = 1",
    "[unknown-table]",
    "[[faults]]",
    "[[delays]]",
    "hold-ms = 0",
    "message = \"NoSuchKind\"",
    "{\"zzz\": 1}",
    "{\"t\": 18446744073709551616, \"kind\": \"deliver\"}",
    "{\"t\": 1, \"kind\": \"no_such_kind\"}",
    "{\"t\": 1, \"kind\": \"entity_started\", \"entity\": \"x\"}",
    "{\"t\": 1, \"kind\": \"deliver\", \"sender\": 4294967295, \"entity\": 4294967295, \"seq\": 18446744073709551615, \"node\": 4294967295, \"incarnation\": 18446744073709551615}",
    "{\"t\": 1, \"kind\": \"entity_started\", \"entity\": 4294967295, \"shard\": 4294967295, \"node\": 4294967295, \"incarnation\": 0}",
    "{\"t\": 0, \"kind\": \"node_up\", \"node\": 4294967295, \"incarnation\": 4294967295}",
    "{\"t\": 0, \"kind\": \"check_config\"}",
    "\"",
    "[",
    "= =",
    "\u{0}",
    "nodes = 100000000000",
    "at-ms = -5",
    "é = \"ü\"",
    "{\"ключ\": \"значение\", \"t\": 1}",
    "😀😀 = 1",
    "[таблица]",
];

/// Multi-byte text inserted inside a line (an error's column may then fall inside a character).
const NASTY_TEXT: &[&str] = &["é", "ключ", "😀", "\u{202e}", "\"😀", "😀\"", ": \"é"];

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<usize>().prop_map(Edit::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Edit::SetByte(p, b)),
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..6))
            .prop_map(|(p, b)| Edit::Insert(p, b)),
        any::<usize>().prop_map(Edit::DeleteLine),
        any::<usize>().prop_map(Edit::DuplicateLine),
        (any::<usize>(), 0..NASTY_LINES.len()).prop_map(|(k, i)| Edit::InsertLine(k, i)),
        (any::<usize>(), 0..NASTY_NUMBERS.len()).prop_map(|(k, i)| Edit::ReplaceNumber(k, i)),
        (any::<usize>(), 0..NASTY_TEXT.len()).prop_map(|(p, i)| Edit::InsertText(p, i)),
        any::<usize>().prop_map(Edit::SwapType),
    ]
}

fn lines_of(b: &[u8]) -> Vec<Vec<u8>> {
    b.split(|&c| c == b'\n').map(<[u8]>::to_vec).collect()
}

/// Byte ranges of the decimal numbers (a run of digits) in `b`.
fn numbers(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let s = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}

/// Byte ranges of the double-quoted strings (quotes included) in `b`.
fn strings(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut open = None;
    for (i, &c) in b.iter().enumerate() {
        if c == b'"' {
            match open.take() {
                None => open = Some(i),
                Some(s) => out.push((s, i + 1)),
            }
        }
    }
    out
}

fn apply(mut b: Vec<u8>, e: &Edit) -> Vec<u8> {
    let at = |p: usize, len: usize| if len == 0 { 0 } else { p % (len + 1) };
    match e {
        Edit::Truncate(p) => {
            let n = at(*p, b.len());
            b.truncate(n);
        }
        Edit::SetByte(p, v) => {
            if !b.is_empty() {
                let n = p % b.len();
                b[n] = *v;
            }
        }
        Edit::Insert(p, bytes) => {
            let n = at(*p, b.len());
            b.splice(n..n, bytes.iter().copied());
        }
        Edit::InsertText(p, i) => {
            let n = at(*p, b.len());
            b.splice(n..n, NASTY_TEXT[*i].bytes());
        }
        Edit::DeleteLine(k) | Edit::DuplicateLine(k) | Edit::InsertLine(k, _) => {
            let mut ls = lines_of(&b);
            let k = k % ls.len();
            match e {
                Edit::DeleteLine(_) => {
                    ls.remove(k);
                }
                Edit::DuplicateLine(_) => {
                    let l = ls[k].clone();
                    ls.insert(k, l);
                }
                Edit::InsertLine(_, i) => ls.insert(k, NASTY_LINES[*i].as_bytes().to_vec()),
                _ => unreachable!(),
            }
            b = ls.join(&b'\n');
        }
        Edit::ReplaceNumber(k, i) => {
            let ns = numbers(&b);
            if !ns.is_empty() {
                let (s, t) = ns[k % ns.len()];
                b.splice(s..t, NASTY_NUMBERS[*i].bytes());
            }
        }
        Edit::SwapType(k) => {
            let ns = numbers(&b);
            let ss = strings(&b);
            if k % 2 == 0 && !ns.is_empty() {
                let (s, t) = ns[(k / 2) % ns.len()];
                let quoted = format!("\"{}\"", String::from_utf8_lossy(&b[s..t]));
                b.splice(s..t, quoted.into_bytes());
            } else if !ss.is_empty() {
                let (s, t) = ss[(k / 2) % ss.len()];
                b.splice(s..t, b"7".iter().copied());
            }
        }
    }
    b
}

/// A base input and up to four edits of it.
fn mutated(bases: &'static [Vec<u8>]) -> impl Strategy<Value = Vec<u8>> {
    (0..bases.len(), proptest::collection::vec(edit(), 1..5))
        .prop_map(move |(i, edits)| edits.iter().fold(bases[i].clone(), apply))
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: cases(),
        // Inputs are generated from the committed files; nothing to persist in the tree.
        failure_persistence: None,
        // A fixed seed (PROPTEST_RNG_SEED=N picks another): the same inputs on every run.
        rng_seed: shardsim::gen::proptest_seed(),
        ..Config::default()
    })
}

/// What one reader's errors pointed at: (accepted, line and field, line only, field only).
#[derive(Default)]
struct Tally([AtomicU64; 4]);

impl Tally {
    fn ok(&self) {
        self.0[0].fetch_add(1, Relaxed);
    }

    fn print(&self, reader: &str) {
        let n: Vec<u64> = self.0.iter().map(|a| a.load(Relaxed)).collect();
        eprintln!(
            "{reader}: {} inputs: {} accepted; errors naming line and field {}, line only {}, field only {}",
            n.iter().sum::<u64>(),
            n[0],
            n[1],
            n[2],
            n[3]
        );
    }
}

/// The error names the file and points somewhere: a line of the input (or the one after
/// it), a field, or both.
fn check_error(
    tally: &Tally,
    shown: &str,
    line: Option<usize>,
    field: Option<&str>,
    path: &Path,
    input: &[u8],
) -> Result<(), TestCaseError> {
    prop_assert!(
        shown.starts_with(&path.display().to_string()),
        "error does not name the file: {shown}"
    );
    if let Some(l) = line {
        let lines = input.iter().filter(|&&c| c == b'\n').count() + 1;
        prop_assert!(
            l >= 1 && l <= lines + 1,
            "line {l} outside 1..={}: {shown}",
            lines + 1
        );
    }
    let k = match (line, field) {
        (Some(_), Some(_)) => 1,
        (Some(_), None) => 2,
        (None, Some(_)) => 3,
        (None, None) => {
            prop_assert!(false, "error names neither line nor field: {shown}");
            0
        }
    };
    tally.0[k].fetch_add(1, Relaxed);
    Ok(())
}

/// The input as text; a non-UTF-8 one must be refused with its line (and is tallied).
fn decoded(tally: &Tally, b: &[u8]) -> Result<Option<String>, TestCaseError> {
    match shardsim_harness::input::decode(b.to_vec()) {
        Ok(t) => Ok(Some(t)),
        Err(e) => {
            prop_assert!(e.line().is_some(), "{e:?}");
            tally.0[2].fetch_add(1, Relaxed);
            Ok(None)
        }
    }
}

fn scenario_bases() -> &'static [Vec<u8>] {
    static B: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    B.get_or_init(|| {
        toml_files(&root().join("sim-scenarios"))
            .iter()
            .map(|p| std::fs::read(p).unwrap())
            .collect()
    })
}

fn corpus_bases() -> &'static [Vec<u8>] {
    static B: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    B.get_or_init(|| vec![std::fs::read(root().join("tests/corpus.jsonl")).unwrap()])
}

/// Short full traces of a few scenarios (the checker re-checks every mutated one).
fn trace_bases() -> &'static [Vec<u8>] {
    static B: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    B.get_or_init(|| {
        [
            "one-node.toml",
            "two-nodes.toml",
            "hazards/reorder-across-handoff.toml",
        ]
        .iter()
        .map(|f| {
            let sc = Arc::new(Scenario::load(&root().join("sim-scenarios").join(f)).unwrap());
            let (_, tr) = campaign::run_seed(&sc, 1, TraceMode::Full);
            let text = tr.to_jsonl();
            // The first 600 lines keep each case fast; the last lines (the run's end)
            // are kept too.
            let ls: Vec<&str> = text.lines().collect();
            let mut keep: Vec<&str> = ls.iter().take(600).copied().collect();
            keep.extend(ls.iter().rev().take(5).rev());
            (keep.join("\n") + "\n").into_bytes()
        })
        .collect()
    })
}

fn summary_bases() -> &'static [Vec<u8>] {
    static B: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    B.get_or_init(|| {
        let sc = Arc::new(
            Scenario::load(&root().join("sim-scenarios/hazards/reorder-across-handoff.toml"))
                .unwrap(),
        );
        let sum: Summary = Campaign::new(&sc, 0, 40).run();
        vec![serde_json::to_vec_pretty(&sum).unwrap()]
    })
}

#[test]
fn the_scenario_parser_never_panics() {
    let path = Path::new("mutated.toml");
    let tally = Tally::default();
    runner()
        .run(&mutated(scenario_bases()), |b| {
            if let Some(text) = decoded(&tally, &b)? {
                match Scenario::parse(&text, path) {
                    Err(e) => {
                        check_error(&tally, &e.to_string(), e.line, e.field.as_deref(), path, &b)?
                    }
                    Ok(_) => tally.ok(),
                }
            }
            Ok(())
        })
        .unwrap();
    tally.print("scenario parser");
}

#[test]
fn the_corpus_reader_never_panics() {
    let path = Path::new("mutated.jsonl");
    let tally = Tally::default();
    runner()
        .run(&mutated(corpus_bases()), |b| {
            if let Some(text) = decoded(&tally, &b)? {
                match campaign::parse_corpus(&text, path) {
                    Err(e) => {
                        check_error(&tally, &e.to_string(), e.line, e.field.as_deref(), path, &b)?
                    }
                    Ok(_) => tally.ok(),
                }
            }
            Ok(())
        })
        .unwrap();
    tally.print("corpus reader");
}

#[test]
fn the_trace_reader_and_its_checker_never_panic() {
    let tally = Tally::default();
    runner()
        .run(&mutated(trace_bases()), |b| {
            if let Some(text) = decoded(&tally, &b)? {
                // `SHARDSIM_PARSER_LAST=FILE`: each input is written there before it is
                // checked, so a run that hangs leaves the input that hung it.
                if let Ok(f) = std::env::var("SHARDSIM_PARSER_LAST") {
                    let _ = std::fs::write(f, &b);
                }
                match shardsim_harness::check::recheck(&text) {
                    Err(e) => {
                        let lines = b.iter().filter(|&&c| c == b'\n').count() + 1;
                        prop_assert!(e.line >= 1 && e.line <= lines, "line {} of {lines}", e.line);
                        tally.0[if e.field.is_some() { 1 } else { 2 }].fetch_add(1, Relaxed);
                    }
                    Ok(_) => tally.ok(),
                }
            }
            Ok(())
        })
        .unwrap();
    tally.print("trace reader");
}

#[test]
fn the_summary_reader_and_merge_never_panic() {
    let path = Path::new("mutated.json");
    let tally = Tally::default();
    runner()
        .run(&mutated(summary_bases()), |b| {
            if let Some(text) = decoded(&tally, &b)? {
                match campaign::parse_summary(&text, path) {
                    Err(e) => {
                        check_error(&tally, &e.to_string(), e.line, e.field.as_deref(), path, &b)?
                    }
                    // A summary that reads is merged with itself shifted and with the
                    // original: merge checks, it must not panic.
                    Ok(s) => {
                        tally.ok();
                        let orig = campaign::parse_summary(
                            std::str::from_utf8(&summary_bases()[0]).unwrap(),
                            path,
                        )
                        .unwrap();
                        let _ = campaign::merge(&[
                            (path.to_path_buf(), s.clone()),
                            (Path::new("orig.json").to_path_buf(), orig),
                        ]);
                        let _ = campaign::merge(&[(path.to_path_buf(), s)]);
                    }
                }
            }
            Ok(())
        })
        .unwrap();
    tally.print("summary reader");
}
