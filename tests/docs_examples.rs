//! The commands shown in the README and in `docs/` run here, and their output is compared with
//! the text, so a guide cannot drift from the binary. An example is a line `$ shardsim ...` in
//! an indented or fenced block; the lines after it, to the block's end, are what it prints. A
//! line `...` stands for any number of lines; the campaign header's wall-clock figures (jobs,
//! seconds, schedules and events per second) are the only text compared loosely. The commands
//! run as an installed `shardsim` would, on the PATH and in a scratch folder outside the checkout
//! that sees the repository's `sim-scenarios/`, so files they write (`--trace t.jsonl`) land
//! there and the commands they print start with `shardsim`.

mod common;
use common::*;
use std::path::Path;
use std::process::Command;

/// One example: where it is, the command's words, the lines it shows.
struct Example {
    at: String,
    args: Vec<String>,
    expected: Vec<String>,
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// Every `$ shardsim` example of a Markdown file.
fn examples(rel: &str) -> Vec<Example> {
    let text = std::fs::read_to_string(root().join(rel)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(command) = line.trim_start().strip_prefix("$ shardsim ") else {
            continue;
        };
        let depth = indent(line);
        let mut expected: Vec<String> = Vec::new();
        for next in &lines[i + 1..] {
            let blank = next.trim().is_empty();
            if next.trim_start().starts_with("```")
                || (!blank && indent(next) < depth)
                || next.trim_start().starts_with("$ ")
            {
                break;
            }
            expected.push(if blank {
                String::new()
            } else {
                next[depth..].to_string()
            });
        }
        while expected.last().is_some_and(|l| l.is_empty()) {
            expected.pop();
        }
        out.push(Example {
            at: format!("{rel}:{}", i + 1),
            args: command.split_whitespace().map(str::to_string).collect(),
            expected,
        });
    }
    out
}

/// The campaign header's wall-clock part (`on 2 jobs in 4.9s: 41 schedules/s, 14.91 M
/// events/s`) as a placeholder; every other character is compared.
fn normalise(line: &str) -> String {
    let Some(on) = line.find(" on ") else {
        return line.to_string();
    };
    if !line.starts_with("scenario ") || !line.ends_with(" M events/s") {
        return line.to_string();
    }
    format!("{} on <jobs, time and rates>", &line[..on])
}

/// Whether `actual` fits `expected`, where an expected `...` line matches any run of lines.
fn fits(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((e, rest)) if e.trim() == "..." => {
            (0..=actual.len()).any(|skip| fits(rest, &actual[skip..]))
        }
        Some((e, rest)) => actual
            .split_first()
            .is_some_and(|(a, more)| normalise(e) == normalise(a) && fits(rest, more)),
    }
}

#[test]
fn every_shown_command_prints_what_the_docs_show() {
    let mut files = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| format!("docs/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    docs.sort();
    files.extend(docs);
    let scratch = tmp("docs-examples");
    let link = scratch.join("sim-scenarios");
    if !link.exists() {
        #[cfg(unix)]
        std::os::unix::fs::symlink(root().join("sim-scenarios"), &link).unwrap();
        #[cfg(not(unix))]
        panic!("the docs examples need a symbolic link to sim-scenarios/");
    }
    // As a user who installed it: `shardsim` on the PATH, run outside the checkout, so the
    // replay lines it prints name `shardsim`.
    let bin = Path::new(env!("CARGO_BIN_EXE_shardsim")).parent().unwrap();
    let mut dirs = vec![bin.to_path_buf()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let path = std::env::join_paths(dirs).unwrap();
    let mut run = 0;
    let mut stale = Vec::new();
    for file in &files {
        for ex in examples(file) {
            let out = Command::new(env!("CARGO_BIN_EXE_shardsim"))
                .args(&ex.args)
                .current_dir(&scratch)
                .env("PATH", &path)
                .output()
                .expect("runs");
            let actual: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(|l| l.trim_end().to_string())
                .collect();
            run += 1;
            if !fits(&ex.expected, &actual) {
                stale.push(format!(
                    "{}: `shardsim {}` (exit {:?}) prints:\n{}\nwhere the docs show:\n{}",
                    ex.at,
                    ex.args.join(" "),
                    out.status.code(),
                    actual.join("\n"),
                    ex.expected.join("\n")
                ));
            }
        }
    }
    assert!(run >= 5, "ran {run} examples");
    assert!(stale.is_empty(), "{}", stale.join("\n\n"));
    assert!(Path::new(&scratch.join("t.jsonl")).exists());
}

#[test]
fn the_matcher_takes_gaps_and_only_the_header_loosely() {
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert!(fits(&v(&["a", "...", "d"]), &v(&["a", "b", "c", "d"])));
    assert!(fits(&v(&["a", "...", "d"]), &v(&["a", "d"])));
    assert!(!fits(&v(&["a", "...", "d"]), &v(&["a", "b"])));
    assert!(!fits(&v(&["a", "b"]), &v(&["a", "b", "c"])));
    assert!(fits(
        &v(&["scenario x: 200 schedules (seeds 0..200) on 2 jobs in 4.9s: 41 schedules/s, 14.91 M events/s"]),
        &v(&["scenario x: 200 schedules (seeds 0..200) on 1 jobs in 9.1s: 22 schedules/s, 7.00 M events/s"])
    ));
    assert!(!fits(
        &v(&["scenario x: 200 schedules (seeds 0..200) on 2 jobs in 4.9s: 41 schedules/s, 14.91 M events/s"]),
        &v(&["scenario x: 300 schedules (seeds 0..300) on 2 jobs in 4.9s: 41 schedules/s, 14.91 M events/s"])
    ));
}
