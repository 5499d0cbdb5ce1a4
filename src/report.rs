//! Campaign figures: `shardsim fuzz --report DIR` draws SVG figures of the campaign with
//! plotters' SVG backend and writes `DIR/index.md` linking them:
//!
//! - `failures-per-invariant.svg`: failing seeds per invariant (and determinism failures);
//! - `failures-over-schedules.svg`: failing seeds found so far against the seeds run, one line
//!   per invariant (a line that keeps rising at the same slope is a steady rate; one that
//!   flattens is a rare failure the early seeds found);
//! - `throughput.svg`: schedules per second over the campaign's wall-clock time (samples the
//!   command line took while the campaign ran; never read inside the simulation);
//! - `shards-per-node.svg`, when the campaign rebalanced (its totals count hand-offs): the
//!   shards each node hosts over simulated time in one run, the campaign's first seed, from its
//!   `ShardHosted`/`ShardUnhosted` facts (a node that goes down hosts nothing) — the rebalance
//!   snapshot of the smoke scenario as a picture.
//!
//! Everything here is plain data in, files out: the figures of one summary and one set of
//! samples are the same bytes on every machine.

use crate::campaign::{self, FailureKind, Summary};
use plotters::prelude::*;
use shardsim_core::ids::{NodeId, ShardId};
use shardsim_core::time::Instant;
use shardsim_harness::scenario::Scenario;
use shardsim_harness::trace::{TraceEvent, TraceMode};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One throughput sample of a campaign: wall-clock seconds since its start, schedules done and
/// failures found by then.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    /// Seconds since the campaign started (wall clock, taken by the command line).
    pub secs: f64,
    /// Schedules done.
    pub done: u64,
    /// Failures found so far.
    pub failures: u64,
}

/// A figure that could not be drawn or a file that could not be written.
#[derive(Debug)]
pub struct ReportError(pub String);

impl std::fmt::Display for ReportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReportError {}

fn draw_err<E: std::fmt::Debug>(e: E) -> ReportError {
    ReportError(format!("cannot draw: {e:?}"))
}

const SIZE: (u32, u32) = (800, 420);
const FONT: &str = "sans-serif";

/// The name a failure is counted under: the invariant, or `determinism`.
fn label(f: &campaign::Failure) -> &'static str {
    f.label()
}

/// Failing seeds per invariant, in the order of first appearance by name.
pub fn failures_per_invariant(sum: &Summary) -> Vec<(&'static str, u64)> {
    let mut m: BTreeMap<&'static str, u64> = BTreeMap::new();
    for f in &sum.failures {
        *m.entry(label(f)).or_default() += 1;
    }
    m.into_iter().collect()
}

fn bar_chart(sum: &Summary) -> Result<String, ReportError> {
    let counts = failures_per_invariant(sum);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let n = counts.len().max(3) as u32;
        let top = counts.iter().map(|c| c.1).max().unwrap_or(0).max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "{}: failing seeds per invariant ({} schedules)",
                    sum.scenario, sum.schedules
                ),
                (FONT, 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d((0u32..n - 1).into_segmented(), 0u64..top + top / 10 + 1)
            .map_err(draw_err)?;
        let names: Vec<&str> = counts.iter().map(|c| c.0).collect();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(names.len().max(1))
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => names
                    .get(*i as usize)
                    .map(|s| s.to_string())
                    .unwrap_or_default(),
                _ => String::new(),
            })
            .y_desc("failing seeds")
            .draw()
            .map_err(draw_err)?;
        chart
            .draw_series(
                Histogram::vertical(&chart)
                    .style(RGBColor(200, 60, 60).filled())
                    .margin(24)
                    .data(counts.iter().enumerate().map(|(i, c)| (i as u32, c.1))),
            )
            .map_err(draw_err)?;
        if counts.is_empty() {
            root.draw(&Text::new(
                "no failing seed",
                (SIZE.0 as i32 / 2 - 60, SIZE.1 as i32 / 2),
                (FONT, 20),
            ))
            .map_err(draw_err)?;
        }
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// Per failure label: (seed offset + 1, failing seeds so far) at each failing seed, starting at
/// (0, 0) and ending at the last seed.
pub fn failures_over_schedules(sum: &Summary) -> BTreeMap<&'static str, Vec<(u64, u64)>> {
    let mut lines: BTreeMap<&'static str, Vec<(u64, u64)>> = BTreeMap::new();
    for f in &sum.failures {
        let pts = lines.entry(label(f)).or_insert_with(|| vec![(0, 0)]);
        let x = f.seed.wrapping_sub(sum.seed_start) + 1;
        let y = pts.last().map(|p| p.1).unwrap_or(0) + 1;
        pts.push((x, y));
    }
    for pts in lines.values_mut() {
        let y = pts.last().map(|p| p.1).unwrap_or(0);
        pts.push((sum.schedules, y));
    }
    lines
}

fn color(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(200, 60, 60),
        RGBColor(40, 100, 200),
        RGBColor(40, 150, 70),
        RGBColor(220, 140, 20),
        RGBColor(130, 60, 170),
        RGBColor(20, 160, 170),
        RGBColor(120, 120, 120),
        RGBColor(180, 80, 140),
    ];
    C[i % C.len()]
}

fn failure_lines(sum: &Summary) -> Result<String, ReportError> {
    let lines = failures_over_schedules(sum);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let top = lines
            .values()
            .filter_map(|p| p.last().map(|x| x.1))
            .max()
            .unwrap_or(0)
            .max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "{}: failing seeds over schedules (seeds {}..{})",
                    sum.scenario,
                    sum.seed_start,
                    sum.seed_end()
                ),
                (FONT, 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0u64..sum.schedules.max(1), 0u64..top + top / 10 + 1)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("schedules run")
            .y_desc("failing seeds so far")
            .draw()
            .map_err(draw_err)?;
        for (i, (name, pts)) in lines.iter().enumerate() {
            let c = color(i);
            // A step line: the count rises at each failing seed.
            let mut step = Vec::with_capacity(pts.len() * 2);
            for w in pts.windows(2) {
                step.push(w[0]);
                step.push((w[1].0, w[0].1));
            }
            if let Some(l) = pts.last() {
                step.push(*l);
            }
            chart
                .draw_series(LineSeries::new(step, c.stroke_width(2)))
                .map_err(draw_err)?
                .label(format!("{name} ({})", pts.last().map(|p| p.1).unwrap_or(0)))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c));
        }
        if lines.is_empty() {
            root.draw(&Text::new(
                format!("no failing seed in {} schedules", sum.schedules),
                (SIZE.0 as i32 / 2 - 120, SIZE.1 as i32 / 2),
                (FONT, 20),
            ))
            .map_err(draw_err)?;
        } else {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(draw_err)?;
        }
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// Schedules per second between consecutive samples, at the end of each interval.
pub fn throughput(samples: &[Sample]) -> Vec<(f64, f64)> {
    samples
        .windows(2)
        .filter(|w| w[1].secs > w[0].secs)
        .map(|w| {
            (
                w[1].secs,
                (w[1].done.saturating_sub(w[0].done)) as f64 / (w[1].secs - w[0].secs),
            )
        })
        .collect()
}

fn throughput_chart(sum: &Summary, samples: &[Sample], jobs: usize) -> Result<String, ReportError> {
    let pts = throughput(samples);
    let end = samples.last().map(|s| s.secs).unwrap_or(0.0).max(1e-3);
    let mean = samples.last().map(|s| s.done as f64 / end).unwrap_or(0.0);
    let top = pts.iter().map(|p| p.1).fold(mean, f64::max).max(1.0);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "{}: throughput, {} schedules on {jobs} jobs in {end:.1} s (mean {mean:.0}/s)",
                    sum.scenario, sum.schedules
                ),
                (FONT, 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..end, 0f64..top * 1.1)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("wall-clock seconds")
            .y_desc("schedules / s")
            .draw()
            .map_err(draw_err)?;
        chart
            .draw_series(LineSeries::new(pts, color(1).stroke_width(2)))
            .map_err(draw_err)?
            .label("schedules/s over each interval")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color(1)));
        chart
            .draw_series(LineSeries::new(
                vec![(0.0, mean), (end, mean)],
                color(6).stroke_width(1),
            ))
            .map_err(draw_err)?
            .label("campaign mean")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color(6)));
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// Shards each node hosts over simulated time in one trace: per node, (µs, count) at the
/// start and at every change, from `ShardHosted`/`ShardUnhosted` (a `NodeDown` empties the
/// node), ending at `end`.
pub fn shards_per_node(
    events: &[(Instant, TraceEvent)],
    end: Instant,
) -> BTreeMap<NodeId, Vec<(u64, usize)>> {
    let mut hosted: BTreeMap<NodeId, BTreeSet<ShardId>> = BTreeMap::new();
    let mut lines: BTreeMap<NodeId, Vec<(u64, usize)>> = BTreeMap::new();
    for (t, e) in events {
        let node = match e {
            TraceEvent::ShardHosted { shard, node } => {
                hosted.entry(*node).or_default().insert(*shard);
                *node
            }
            TraceEvent::ShardUnhosted { shard, node } => {
                hosted.entry(*node).or_default().remove(shard);
                *node
            }
            TraceEvent::NodeDown { node, .. } => {
                hosted.entry(*node).or_default().clear();
                *node
            }
            _ => continue,
        };
        let n = hosted.get(&node).map(BTreeSet::len).unwrap_or(0);
        let pts = lines.entry(node).or_insert_with(|| vec![(0, 0)]);
        if pts.last().map(|p| p.1) != Some(n) {
            pts.push((t.0, n));
        }
    }
    for pts in lines.values_mut() {
        let n = pts.last().map(|p| p.1).unwrap_or(0);
        pts.push((end.0.max(pts.last().map(|p| p.0).unwrap_or(0)), n));
    }
    lines
}

fn shards_chart(
    sum: &Summary,
    seed: u64,
    lines: &BTreeMap<NodeId, Vec<(u64, usize)>>,
    rebalances: &[u64],
) -> Result<String, ReportError> {
    let end = lines
        .values()
        .filter_map(|p| p.last().map(|x| x.0))
        .max()
        .unwrap_or(0) as f64
        / 1e6;
    let top = lines
        .values()
        .flat_map(|p| p.iter().map(|x| x.1))
        .max()
        .unwrap_or(0)
        .max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "{} seed {seed}: shards hosted per node ({} hand-offs)",
                    sum.scenario,
                    rebalances.len()
                ),
                (FONT, 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(48)
            .build_cartesian_2d(0f64..end.max(1e-3), 0f64..top as f64 + 1.0)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("simulated seconds")
            .y_desc("shards hosted")
            .y_labels(top + 2)
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(draw_err)?;
        // Hand-offs begin: thin grey marks at the top.
        chart
            .draw_series(rebalances.iter().map(|t| {
                let x = *t as f64 / 1e6;
                PathElement::new(
                    vec![(x, top as f64 + 0.6), (x, top as f64 + 1.0)],
                    color(6).stroke_width(1),
                )
            }))
            .map_err(draw_err)?;
        for (i, (node, pts)) in lines.iter().enumerate() {
            let c = color(i);
            let mut step = Vec::with_capacity(pts.len() * 2);
            for w in pts.windows(2) {
                step.push((w[0].0 as f64 / 1e6, w[0].1 as f64));
                step.push((w[1].0 as f64 / 1e6, w[0].1 as f64));
            }
            if let Some(l) = pts.last() {
                step.push((l.0 as f64 / 1e6, l.1 as f64));
            }
            chart
                .draw_series(LineSeries::new(step, c.stroke_width(2)))
                .map_err(draw_err)?
                .label(format!("node {}", node.0))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// What `fuzz --report` needs besides the summary.
pub struct ReportInput<'a> {
    /// The scenario the campaign ran.
    pub scenario: &'a Arc<Scenario>,
    /// Its file (for the replay command in the index).
    pub scenario_path: &'a Path,
    /// The campaign's (or slice's) summary.
    pub summary: &'a Summary,
    /// Throughput samples taken while it ran.
    pub samples: &'a [Sample],
    /// Worker threads it ran on.
    pub jobs: usize,
}

/// The figure files of a report and the index, as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// Every file written, the index last.
    pub files: Vec<PathBuf>,
}

/// Draw the figures of a campaign into `dir` (created if needed), each written atomically, and
/// `dir/index.md` linking them.
pub fn write_report(dir: &Path, input: &ReportInput<'_>) -> Result<Written, ReportError> {
    let sum = input.summary;
    let mut figures: Vec<(&str, String, String)> = vec![
        (
            "failures-per-invariant.svg",
            "Failing seeds per invariant".into(),
            bar_chart(sum)?,
        ),
        (
            "failures-over-schedules.svg",
            "Failing seeds over schedules".into(),
            failure_lines(sum)?,
        ),
        (
            "throughput.svg",
            "Throughput over the campaign (wall clock)".into(),
            throughput_chart(sum, input.samples, input.jobs)?,
        ),
    ];
    let mut shards_note = String::new();
    if sum.totals.rebalances > 0 && sum.schedules > 0 {
        let seed = sum.seed_start;
        let (r, tracer) = campaign::run_seed(input.scenario, seed, TraceMode::Full);
        let lines = shards_per_node(tracer.events(), r.end);
        let rebalances: Vec<u64> = tracer
            .events()
            .iter()
            .filter(|(_, e)| matches!(e, TraceEvent::RebalanceStarted { .. }))
            .map(|(t, _)| t.0)
            .collect();
        figures.push((
            "shards-per-node.svg",
            format!("Shards per node over simulated time, seed {seed}"),
            shards_chart(sum, seed, &lines, &rebalances)?,
        ));
        let _ = write!(
            shards_note,
            "\nThe shards-per-node figure is one run, seed {seed} (replay: `{}`): the shards each \
             node's region hosts (`ShardHosted`/`ShardUnhosted`; a node that goes down hosts \
             none), with the start of each hand-off marked at the top.\n",
            campaign::replay_command(input.scenario_path, seed)
        );
    }
    let mut out = Written::default();
    for (file, _, svg) in &figures {
        let p = dir.join(file);
        campaign::write_atomic(&p, svg.as_bytes())
            .map_err(|e| ReportError(format!("{}: cannot write: {e}", p.display())))?;
        out.files.push(p);
    }
    let mut md = String::new();
    let _ = writeln!(md, "# Campaign figures: {}\n", sum.scenario);
    let _ = writeln!(
        md,
        "`shardsim fuzz {} --seed-start {} --schedules {} --jobs {}`; behaviour: {}.\n",
        input.scenario_path.display(),
        sum.seed_start,
        sum.schedules,
        input.jobs,
        sum.behaviour
    );
    let t = &sum.totals;
    let _ = writeln!(
        md,
        "Seeds {}..{}: {} failing seeds ({} of them the scenario's expected outcome, {} \
         determinism); {} events, {} deliveries, {} drops, {} hand-offs.\n",
        sum.seed_start,
        sum.seed_end(),
        sum.failures.len(),
        sum.expected_found,
        sum.failures
            .iter()
            .filter(|f| f.kind == FailureKind::Determinism)
            .count(),
        t.events,
        t.deliveries,
        t.drops,
        t.rebalances
    );
    for (name, n) in failures_per_invariant(sum) {
        let _ = writeln!(md, "- {name}: {n}");
    }
    if !sum.failures.is_empty() {
        md.push('\n');
    }
    for (file, title, _) in &figures {
        let _ = writeln!(md, "## {title}\n\n![{title}]({file})\n");
    }
    md.push_str(&shards_note);
    let p = dir.join("index.md");
    campaign::write_atomic(&p, md.as_bytes())
        .map_err(|e| ReportError(format!("{}: cannot write: {e}", p.display())))?;
    out.files.push(p);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::Failure;
    use shardsim_harness::scenario::Outcome;

    fn fail(seed: u64, invariant: Outcome) -> Failure {
        Failure {
            seed,
            kind: FailureKind::Violation,
            invariant,
            t_us: 1,
            detail: String::new(),
            known: None,
        }
    }

    #[test]
    fn failure_series_count_per_invariant() {
        let sum = Summary {
            scenario: "x".into(),
            seed_start: 100,
            schedules: 50,
            failures: vec![
                fail(103, Outcome::AtMostOne),
                fail(110, Outcome::PerSenderOrder),
                fail(120, Outcome::AtMostOne),
            ],
            ..Summary::default()
        };
        assert_eq!(
            failures_per_invariant(&sum),
            vec![("at-most-one", 2), ("per-sender-order", 1)]
        );
        let l = failures_over_schedules(&sum);
        assert_eq!(l["at-most-one"], vec![(0, 0), (4, 1), (21, 2), (50, 2)]);
        assert_eq!(l["per-sender-order"], vec![(0, 0), (11, 1), (50, 1)]);
    }

    #[test]
    fn throughput_between_samples() {
        let s = |secs, done| Sample {
            secs,
            done,
            failures: 0,
        };
        assert_eq!(
            throughput(&[s(0.0, 0), s(1.0, 100), s(1.0, 120), s(3.0, 320)]),
            vec![(1.0, 100.0), (3.0, 100.0)]
        );
    }

    #[test]
    fn shards_per_node_steps() {
        let ev = |t: u64, e| (Instant(t), e);
        let (s, n) = (ShardId, NodeId);
        let events = vec![
            ev(
                5,
                TraceEvent::ShardHosted {
                    shard: s(1),
                    node: n(0),
                },
            ),
            ev(
                6,
                TraceEvent::ShardHosted {
                    shard: s(2),
                    node: n(0),
                },
            ),
            ev(
                9,
                TraceEvent::ShardUnhosted {
                    shard: s(1),
                    node: n(0),
                },
            ),
            ev(
                9,
                TraceEvent::ShardHosted {
                    shard: s(1),
                    node: n(1),
                },
            ),
            ev(
                12,
                TraceEvent::NodeDown {
                    node: n(1),
                    incarnation: 1,
                    reason: "crash".into(),
                },
            ),
        ];
        let l = shards_per_node(&events, Instant(20));
        assert_eq!(l[&n(0)], vec![(0, 0), (5, 1), (6, 2), (9, 1), (20, 1)]);
        assert_eq!(l[&n(1)], vec![(0, 0), (9, 1), (12, 0), (20, 0)]);
    }
}
