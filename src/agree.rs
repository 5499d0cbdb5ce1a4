//! Agreement between hosts: every scenario file that expects `none` is clean on N
//! madsim seeds, and every file that expects a violation shows the same invariant on the
//! madsim host within M seeds. A declared known hazard (`[[expect.known]]`) counts as it
//! does for `fuzz`: its seeds are classified on the madsim host itself (clean there with the
//! fix on) and do not break agreement. A violation one host shows and the other never does is
//! a modelling artefact to explain. `shardsim agree` runs it and writes the table.

use crate::campaign::{Campaign, FuzzOptions, Summary};
use shardsim_harness::host::{self, Host};
use shardsim_harness::scenario::{Outcome, Scenario};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One file's agreement.
#[derive(Clone, Debug)]
pub struct Row {
    /// The scenario file.
    pub file: PathBuf,
    /// Its declared outcome.
    pub expected: Outcome,
    /// What ran: `Ok(summary)`, or the field the host cannot express.
    pub result: Result<Summary, String>,
    /// Wall-clock seconds.
    pub secs: f64,
}

impl Row {
    /// Whether the madsim host agrees with the file's declared outcome.
    pub fn agrees(&self) -> Option<bool> {
        let s = self.result.as_ref().ok()?;
        Some(if self.expected == Outcome::None {
            s.unexpected(self.expected).next().is_none()
        } else {
            s.expected_found > 0 && s.unexpected(self.expected).next().is_none()
        })
    }

    /// The verdict in words.
    pub fn verdict(&self) -> String {
        match &self.result {
            Err(why) => format!("not run: {why}"),
            Ok(s) if self.expected == Outcome::None => match s.unexpected(self.expected).next() {
                None => format!("clean on {} seeds{}", s.schedules, known_note(s)),
                Some(f) => format!(
                    "DISAGREES: {} at seed {} ({} of {} seeds fail): {}",
                    f.label(),
                    f.seed,
                    s.failures.len(),
                    s.schedules,
                    f.detail
                ),
            },
            Ok(s) => match (s.failures.first(), s.unexpected(self.expected).next()) {
                (_, Some(f)) => format!(
                    "DISAGREES: {} at seed {} instead of {}: {}",
                    f.label(),
                    f.seed,
                    self.expected,
                    f.detail
                ),
                (Some(f), None) => format!(
                    "{} found at seed {} ({} seeds run){}",
                    self.expected,
                    f.seed,
                    s.schedules,
                    known_note(s)
                ),
                (None, None) => format!("DISAGREES: no {} in {} seeds", self.expected, s.schedules),
            },
        }
    }
}

/// The known hazards a run showed (`[[expect.known]]`: the seed breaks the
/// hazard's invariant and is clean, on the same host, with its fix option on), as
/// `"; known NAME at seeds A, B"`, or nothing.
fn known_note(s: &Summary) -> String {
    let mut by: std::collections::BTreeMap<&str, Vec<u64>> = Default::default();
    for f in &s.failures {
        if let Some(k) = &f.known {
            by.entry(k.as_str()).or_default().push(f.seed);
        }
    }
    by.iter()
        .map(|(k, seeds)| {
            let seeds: Vec<String> = seeds.iter().map(u64::to_string).collect();
            format!(
                "; known {k} at seed{} {}",
                if seeds.len() == 1 { "" } else { "s" },
                seeds.join(", ")
            )
        })
        .collect()
}

/// Run one file on the madsim host: `clean` seeds when it expects `none`, else until the
/// first failure within `violation` seeds.
pub fn agree_file(path: &Path, clean: u64, violation: u64, jobs: usize) -> Result<Row, String> {
    let sc = Arc::new(Scenario::load(path).map_err(|e| e.to_string())?);
    let expected = sc.expect.outcome;
    let started = std::time::Instant::now(); // determinism-ok: the CLI's wall clock, outside any simulation
    let result = match host::validate(Host::Madsim, &sc, path) {
        Err(e) => Err(format!(
            "{} ({})",
            e.field.unwrap_or_default(),
            e.message
                .trim_start_matches("not supported by the madsim host: ")
        )),
        Ok(()) => {
            let (n, opts) = if expected == Outcome::None {
                (clean, FuzzOptions::default())
            } else {
                (
                    violation,
                    FuzzOptions {
                        until_failure: true,
                        ..FuzzOptions::default()
                    },
                )
            };
            Ok(Campaign::new(&sc, 0, n)
                .jobs(jobs)
                .options(opts)
                .host(Host::Madsim)
                .run())
        }
    };
    Ok(Row {
        file: path.to_path_buf(),
        expected,
        result,
        secs: started.elapsed().as_secs_f64(),
    })
}

/// The rows as a Markdown table.
pub fn markdown(rows: &[Row], root: &Path) -> String {
    let mut out =
        String::from("| file | expects | madsim host | agrees | s |\n|---|---|---|---|---|\n");
    for r in rows {
        let file = r.file.strip_prefix(root).unwrap_or(&r.file);
        let agrees = match r.agrees() {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "-",
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {:.1} |\n",
            file.display(),
            r.expected,
            r.verdict().replace('|', "\\|"),
            agrees,
            r.secs
        ));
    }
    out
}
