//! Progress of long `fuzz` and `shrink` runs, on stderr: an indicatif bar on a terminal
//! (done/total, rate, failures so far, time left), plain lines otherwise (a log file, CI, a
//! Kubernetes pod), one every [`LINE_EVERY`]. Also keeps wall-clock throughput samples for
//! `fuzz --report`. Reads the wall clock: command-line side only, never the simulation.

use indicatif::{ProgressBar, ProgressStyle};
use shardsim::report::Sample;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Plain progress lines (stderr not a terminal): at most one this often (the environment
/// variable `SHARDSIM_PROGRESS_SECS` sets another interval, in seconds).
pub const LINE_EVERY: Duration = Duration::from_secs(10);

fn line_every() -> Duration {
    std::env::var("SHARDSIM_PROGRESS_SECS")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
        .unwrap_or(LINE_EVERY)
}
/// Throughput samples: at most one this often.
const SAMPLE_EVERY: Duration = Duration::from_millis(250);

enum Face {
    Quiet,
    Bar(ProgressBar),
    Lines {
        last: Mutex<Instant>,
        every: Duration,
    },
}

/// One run's progress reporter.
pub struct Reporter {
    face: Face,
    what: String,
    unit: &'static str,
    found: &'static str,
    total: u64,
    started: Instant,
    samples: Mutex<(Instant, Vec<Sample>)>,
    /// Time left is an upper bound (a shrink may reach its fixed point before its budget).
    at_most: bool,
}

impl Reporter {
    /// A reporter for `total` units (`schedules`, `replays`) of `what`; `found` names the
    /// count shown beside them (`failures`, `reductions kept`).
    pub fn new(
        what: String,
        total: u64,
        unit: &'static str,
        found: &'static str,
        quiet: bool,
        at_most: bool,
    ) -> Self {
        let face = if quiet {
            Face::Quiet
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template(&format!(
                    "{{bar:40}} {{pos}}/{{len}} {unit}  {{per_sec}}  {{msg}}  {}{{eta}} left",
                    if at_most { "at most " } else { "" }
                ))
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.set_message(format!("0 {found}"));
            Face::Bar(bar)
        } else {
            Face::Lines {
                last: Mutex::new(Instant::now()),
                every: line_every(),
            }
        };
        let now = Instant::now();
        Reporter {
            face,
            what,
            unit,
            found,
            total,
            started: now,
            samples: Mutex::new((
                now,
                vec![Sample {
                    secs: 0.0,
                    done: 0,
                    failures: 0,
                }],
            )),
            at_most,
        }
    }

    /// `done` units so far, `found` failures (or reductions) so far.
    pub fn tick(&self, done: u64, found: u64) {
        let now = Instant::now();
        {
            let mut s = self.samples.lock().unwrap_or_else(|e| e.into_inner());
            if now.duration_since(s.0) >= SAMPLE_EVERY {
                s.0 = now;
                let secs = now.duration_since(self.started).as_secs_f64();
                s.1.push(Sample {
                    secs,
                    done,
                    failures: found,
                });
            }
        }
        match &self.face {
            Face::Quiet => {}
            Face::Bar(bar) => {
                bar.set_position(done);
                bar.set_message(format!("{found} {}", self.found));
            }
            Face::Lines { last, every } => {
                let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
                if now.duration_since(*last) >= *every {
                    *last = now;
                    eprintln!("{}", self.line(done, found, now));
                }
            }
        }
    }

    fn line(&self, done: u64, found: u64, now: Instant) -> String {
        let secs = now.duration_since(self.started).as_secs_f64().max(1e-9);
        let rate = done as f64 / secs;
        let left = if rate > 0.0 {
            format!(
                "{}{:.0} s left",
                if self.at_most { "at most " } else { "" },
                self.total.saturating_sub(done) as f64 / rate
            )
        } else {
            "time left unknown".into()
        };
        format!(
            "{}: {done}/{} {} ({:.0} %), {rate:.0} {}/s, {found} {}, {left}",
            self.what,
            self.total,
            self.unit,
            100.0 * done as f64 / self.total.max(1) as f64,
            self.unit,
            self.found
        )
    }

    /// The run ended: clear the bar; keep a last sample.
    pub fn finish(&self, done: u64, found: u64) {
        if let Face::Bar(bar) = &self.face {
            bar.finish_and_clear();
        }
        let secs = self.started.elapsed().as_secs_f64();
        let mut s = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        s.1.push(Sample {
            secs,
            done,
            failures: found,
        });
    }

    /// The throughput samples: (wall-clock seconds since the start, done, found), in order.
    pub fn samples(&self) -> Vec<Sample> {
        self.samples
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .1
            .clone()
    }
}
