//! The conformance report shared by the Akka spec ports (`sbr_spec.rs`, `allocation_spec.rs`):
//! each reads its ported cases from its own test headers and writes its section of
//! `reports/conformance/`, one file per port, and fails when the file is stale.
#![allow(dead_code)]

/// One ported case as its test states it: suite, Akka's spec line, case, and the departure's
/// reason when the test is ignored.
pub struct Case {
    pub suite: String,
    pub line: String,
    pub case: String,
    pub departure: Option<String>,
}

/// The ported cases of a spec port's source: each test's doc opens with
/// `Suite, Tag:N: "case".` (its first paragraph, lines joined), and a departure carries
/// `#[ignore = "departure: ..."]`.
pub fn ported_cases(src: &str) -> Vec<Case> {
    let lines: Vec<&str> = src.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if *l != "#[test]" {
            continue;
        }
        let mut start = i;
        while start > 0 && lines[start - 1].starts_with("///") {
            start -= 1;
        }
        let para: Vec<&str> = lines[start..i]
            .iter()
            .map(|d| d.trim_start_matches("///").trim())
            .take_while(|d| !d.is_empty())
            .collect();
        let head = para.join(" ");
        // `Suite, Tag:N: "case"`: the tag is a word ending in `Spec`.
        let Some((suite, rest)) = head.split_once(", ") else {
            continue;
        };
        let Some((line, quoted)) = rest.split_once(": \"") else {
            continue;
        };
        if !line
            .split_once(':')
            .is_some_and(|(tag, n)| tag.ends_with("Spec") && n.parse::<u32>().is_ok())
        {
            continue; // not a ported case (the catalogue checks)
        }
        let case = &quoted[..quoted.rfind('"').unwrap_or_else(|| panic!("{head}"))];
        let departure = lines[i + 1]
            .strip_prefix("#[ignore = \"departure: ")
            .map(|r| r.trim_end_matches("\"]").to_string());
        out.push(Case {
            suite: suite.to_string(),
            line: line.to_string(),
            case: case.to_string(),
            departure,
        });
    }
    out
}

/// The catalogue is whole: every case of every suite is listed once, ported or not
/// expressible, each suite has its count, and every reason names an Akka line (`...Spec:N`).
pub fn check_catalogue(
    suites: &[(&str, usize)],
    ported: &[(&str, &str)],
    not_expressible: &[(&str, &str, &str)],
) {
    use std::collections::BTreeSet;
    let mut cases = BTreeSet::new();
    let departures = not_expressible
        .iter()
        .map(|(suite, case, _)| (*suite, *case));
    for (suite, case) in ported.iter().copied().chain(departures) {
        assert!(
            suites.iter().any(|(s, _)| *s == suite),
            "unknown suite {suite:?}"
        );
        assert!(
            cases.insert((suite, case)),
            "{suite}: {case:?} listed twice"
        );
    }
    for (suite, total) in suites {
        let n = cases.iter().filter(|(s, _)| s == suite).count();
        assert_eq!(n, *total, "{suite}: {n} cases listed, the spec has {total}");
    }
    for (suite, case, why) in not_expressible {
        assert!(
            why.contains("Spec:"),
            "{suite}: {case:?}: the reason names no Akka line"
        );
    }
}

/// A case name with its whitespace made single (the lists wrap long names).
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What a port is, for its report.
pub struct Port<'a> {
    /// The report's title.
    pub title: &'a str,
    /// What was ported, from where, against what (one paragraph).
    pub about: &'a str,
    /// The test file, under `crates/core/tests/`.
    pub file: &'a str,
    /// The suites with their case counts.
    pub suites: &'a [(&'a str, usize)],
    /// The cases as listed (suite, case): checked against the headers.
    pub listed: &'a [(&'a str, &'a str)],
    /// The cases the model cannot express: (suite, case, why, starting with Akka's line).
    pub not_expressible: &'a [(&'a str, &'a str, &'a str)],
}

/// The report of a port: counts by suite, then every case with its result.
pub fn report(p: &Port<'_>, src: &str) -> String {
    use std::collections::BTreeSet;
    let ported = ported_cases(src);
    let listed: BTreeSet<(String, String)> = p
        .listed
        .iter()
        .map(|(s, c)| (s.to_string(), one_line(c)))
        .collect();
    let read: BTreeSet<(String, String)> = ported
        .iter()
        .map(|c| (c.suite.clone(), one_line(&c.case)))
        .collect();
    assert_eq!(
        listed.symmetric_difference(&read).collect::<Vec<_>>(),
        Vec::<&(String, String)>::new(),
        "{}: the tests' doc headers and the list name different cases",
        p.file
    );
    let total: usize = p.suites.iter().map(|(_, n)| n).sum();
    let pass = ported.iter().filter(|c| c.departure.is_none()).count();
    let differ = ported.len() - pass;
    let mut t = format!("# {}\n\n", p.title);
    t.push_str(&format!(
        "Generated by `SHARDSIM_WRITE_REPORTS=1 cargo test -p shardsim-core --test {}`; the \
         same test fails when this file is stale. {}\n\n",
        p.file.trim_end_matches(".rs"),
        p.about
    ));
    t.push_str(&format!(
        "{total} cases: **{pass} pass**, {differ} are ported and answered differently by the \
         model (departures, each test ignored with Akka's line and the model's), {} cannot be \
         expressed by the model. Of the ported cases, {:.0} % pass.\n\n",
        p.not_expressible.len(),
        100.0 * pass as f64 / ported.len().max(1) as f64
    ));
    t.push_str("| suite | cases | pass | departure | not expressible |\n|---|---|---|---|---|\n");
    for (suite, n) in p.suites {
        let of = |c: &&Case| c.suite == *suite;
        let ok = ported
            .iter()
            .filter(of)
            .filter(|c| c.departure.is_none())
            .count();
        let dep = ported.iter().filter(of).count() - ok;
        let none = p.not_expressible.iter().filter(|d| d.0 == *suite).count();
        t.push_str(&format!("| {suite} | {n} | {ok} | {dep} | {none} |\n"));
    }
    t.push_str("\n## Every case\n\n| suite | case | Akka | result |\n|---|---|---|---|\n");
    let cell = |s: &str| one_line(s).replace('|', "\\|");
    for (suite, _) in p.suites {
        for c in ported.iter().filter(|c| c.suite == *suite) {
            let result = match &c.departure {
                None => "pass".to_string(),
                Some(why) => format!("departure: {}", cell(why)),
            };
            t.push_str(&format!(
                "| {suite} | {} | {} | {result} |\n",
                cell(&c.case),
                c.line
            ));
        }
        for (_, case, why) in p.not_expressible.iter().filter(|d| d.0 == *suite) {
            let (line, reason) = why.split_once("; ").unwrap_or(("", why));
            t.push_str(&format!(
                "| {suite} | {} | {} | not expressible: {} |\n",
                cell(case),
                cell(line),
                cell(reason)
            ));
        }
    }
    t
}

/// Write `table` to `reports/conformance/<name>` when `SHARDSIM_WRITE_REPORTS` is set (atomically),
/// and fail when the file differs from it.
pub fn check(name: &str, file: &str, table: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../reports/conformance")
        .join(name);
    if std::env::var_os("SHARDSIM_WRITE_REPORTS").is_some() {
        let tmp = path.with_extension("md.tmp");
        std::fs::write(&tmp, table).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == table,
        "reports/conformance/{name} is stale: regenerate it with `SHARDSIM_WRITE_REPORTS=1 cargo test -p shardsim-core --test {}`",
        file.trim_end_matches(".rs")
    );
}
