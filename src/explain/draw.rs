//! Pictures of an explanation's slice: a Mermaid sequence diagram (it renders
//! in GitHub Markdown) and a self-contained SVG timeline: a lane per node and actor, the focus
//! shards' ownership as bars over time, the story's messages as arrows (lost ones dashed), and
//! faults as shaded bands.

use super::{Explanation, StepInfo};
use std::collections::BTreeMap;
use std::fmt::Write;

/// A lane: (node, actor); `None` is the world (journal, faults).
type Lane = (Option<u32>, String);

fn lane_of(s: &StepInfo) -> Lane {
    (s.node, s.actor.clone())
}

fn lane_label(l: &Lane) -> String {
    match l.0 {
        Some(n) => format!("node {n} {}", l.1),
        None => l.1.clone(),
    }
}

fn lane_id(l: &Lane) -> String {
    match l.0 {
        Some(n) => format!("n{n}_{}", l.1),
        None => format!("w_{}", l.1),
    }
}

/// One drawn item: a story step (its first step), with the lane it came from when it is a
/// message from another lane.
struct Item {
    num: usize,
    step: usize,
    count: usize,
    from: Option<Lane>,
    to: Lane,
    label: String,
    lost: bool,
}

fn items(e: &Explanation) -> Vec<Item> {
    let mut by_num: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &(s, n) in &e.shown {
        by_num.entry(n).or_default().push(s);
    }
    let mut out = Vec::new();
    for (num, steps) in by_num {
        let i = steps[0];
        let s = &e.steps[i];
        let to = lane_of(s);
        let from = s
            .cause
            .map(|c| lane_of(&e.steps[c]))
            .filter(|l| *l != to && l.1 != "sender")
            .or_else(|| {
                s.from
                    .filter(|f| Some(*f) != s.node)
                    .map(|f| (Some(f), "region".to_string()))
            });
        let mut label = s.what.clone();
        if let Some(sh) = s.shard {
            if !label.contains('(') {
                label = format!("{label}({sh})");
            }
        }
        if s.user.is_some() || s.what == "user message" {
            label = "user traffic".into();
        }
        if let Some(x) = e.effects.get(&i) {
            let x: String = x.chars().take(60).collect();
            label = if s.actor == "faults" {
                x
            } else {
                format!("{label}: {x}")
            };
        }
        out.push(Item {
            num,
            step: i,
            count: steps.len(),
            from,
            to,
            label,
            lost: s.cut,
        });
    }
    out
}

fn mermaid_text(s: &str) -> String {
    s.replace([';', '#', ':'], ",")
}

/// The Mermaid sequence diagram (a Markdown file with the story above it).
pub fn mermaid(e: &Explanation, title: &str) -> String {
    let its = items(e);
    let mut lanes: Vec<Lane> = Vec::new();
    for it in &its {
        for l in it.from.iter().chain(std::iter::once(&it.to)) {
            if !lanes.contains(l) {
                lanes.push(l.clone());
            }
        }
    }
    lanes.sort();
    let mut s = String::new();
    let _ = writeln!(s, "# {title}\n");
    s.push_str("```text\n");
    for l in &e.lines {
        s.push_str(l);
        s.push('\n');
    }
    s.push_str("```\n\n```mermaid\nsequenceDiagram\n");
    for l in &lanes {
        let _ = writeln!(s, "    participant {} as {}", lane_id(l), lane_label(l));
    }
    let first = lanes.first().map(lane_id).unwrap_or_default();
    let last = lanes.last().map(lane_id).unwrap_or_default();
    for it in &its {
        let times = if it.count > 1 {
            format!(" ×{}", it.count)
        } else {
            String::new()
        };
        let lost = if it.lost { " LOST" } else { "" };
        let text = mermaid_text(&format!("{}. {}{times}{lost}", it.num, it.label));
        if it.to.1 == "faults" {
            let _ = writeln!(s, "    Note over {first},{last}: {text}");
            continue;
        }
        match &it.from {
            Some(f) => {
                let arrow = if it.lost { "--x" } else { "->>" };
                let _ = writeln!(s, "    {}{arrow}{}: {text}", lane_id(f), lane_id(&it.to));
            }
            None => {
                let _ = writeln!(s, "    Note over {}: {text}", lane_id(&it.to));
            }
        }
    }
    let _ = writeln!(
        s,
        "    Note over {first},{last}: {}",
        mermaid_text(&format!("{} at t={}", e.violation.invariant, e.violation.t))
    );
    s.push_str("```\n");
    s
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The SVG timeline.
pub fn svg(e: &Explanation, title: &str) -> String {
    let its = items(e);
    let mut lanes: Vec<Lane> = Vec::new();
    let add = |l: &Lane, lanes: &mut Vec<Lane>| {
        if !lanes.contains(l) {
            lanes.push(l.clone());
        }
    };
    for it in &its {
        if it.to.1 == "faults" {
            continue;
        }
        if let Some(f) = &it.from {
            add(f, &mut lanes);
        }
        add(&it.to, &mut lanes);
    }
    for o in &e.ownership {
        add(&(Some(o.1), "region".into()), &mut lanes);
    }
    lanes.sort();
    let row = 30.0;
    let left = 190.0;
    let width = 1000.0;
    let top = 50.0;
    let height = top + row * lanes.len() as f64 + 40.0;
    let t0 = its
        .iter()
        .map(|i| e.steps[i.step].t)
        .chain(e.ownership.iter().map(|o| o.2))
        .min()
        .unwrap_or(0);
    let t1 = e.t_end.max(t0 + 1);
    // The axis spaces the story's moments evenly (piecewise linear in time between them), so
    // the steps of one millisecond are as readable as the seconds between them.
    let mut ticks: Vec<u64> = its
        .iter()
        .flat_map(|i| {
            let st = &e.steps[i.step];
            [Some(st.t), st.cause.map(|c| e.steps[c].t)]
        })
        .flatten()
        .chain(e.ownership.iter().flat_map(|o| [Some(o.2), o.3]).flatten())
        .chain(e.faults.iter().flat_map(|f| [Some(f.3), f.4]).flatten())
        .chain([t0, t1])
        .filter(|t| (t0..=t1).contains(t))
        .collect();
    ticks.sort_unstable();
    ticks.dedup();
    let span = (ticks.len().max(2) - 1) as f64;
    let x = |t: u64| {
        let t = t.clamp(t0, t1);
        let i = ticks.partition_point(|&k| k <= t).saturating_sub(1);
        let frac = match ticks.get(i + 1) {
            Some(&next) if next > ticks[i] => (t - ticks[i]) as f64 / (next - ticks[i]) as f64,
            _ => 0.0,
        };
        left + (i as f64 + frac) / span * width
    };
    let y = |l: &Lane| {
        let i = lanes.iter().position(|x| x == l).unwrap_or(0);
        top + row * i as f64 + row / 2.0
    };
    let total_w = left + width + 30.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{height}" viewBox="0 0 {total_w} {height}" font-family="monospace" font-size="11">"#
    );
    s.push_str(r##"<defs><marker id="head" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#333"/></marker></defs>"##);
    s.push('\n');
    let _ = writeln!(
        s,
        r#"<rect x="0" y="0" width="{total_w}" height="{height}" fill="white"/><text x="10" y="20" font-size="13" font-weight="bold">{}</text><text x="10" y="36">{}</text>"#,
        esc(title),
        esc(&format!(
            "{} at t={}: {}",
            e.violation.invariant, e.violation.t, e.violation.detail
        ))
    );
    // Fault bands, under everything.
    for (kind, detail, node, from, to) in &e.faults {
        if *from > t1 {
            continue;
        }
        let x0 = x(*from);
        let x1 = x(to.unwrap_or(t1)).max(x0 + 2.0);
        let (y0, h) = match node {
            Some(n) => {
                let mine: Vec<f64> = lanes.iter().filter(|l| l.0 == Some(*n)).map(&y).collect();
                match (
                    mine.iter().cloned().fold(f64::NAN, f64::min),
                    mine.iter().cloned().fold(f64::NAN, f64::max),
                ) {
                    (a, b) if a.is_finite() => (a - row / 2.0, b - a + row),
                    _ => (top, row * lanes.len() as f64),
                }
            }
            None => (top, row * lanes.len() as f64),
        };
        let _ = writeln!(
            s,
            r##"<rect class="fault" data-fault="{}" x="{x0:.1}" y="{y0:.1}" width="{:.1}" height="{h:.1}" fill="#f4a0a0" fill-opacity="0.35"><title>{}</title></rect>"##,
            esc(kind),
            x1 - x0,
            esc(&format!("{kind} {detail}"))
        );
    }
    // Lanes.
    for l in &lanes {
        let yy = y(l);
        let _ = writeln!(
            s,
            r##"<g class="lane" data-lane="{0}"><text x="10" y="{1:.1}">{0}</text><line x1="{left}" y1="{2:.1}" x2="{3}" y2="{2:.1}" stroke="#bbb"/></g>"##,
            esc(&lane_label(l)),
            yy + 4.0,
            yy,
            left + width
        );
    }
    // Shard ownership bars.
    for (shard, node, from, to) in &e.ownership {
        let l: Lane = (Some(*node), "region".into());
        let x0 = x(*from);
        let x1 = x(to.unwrap_or(t1)).max(x0 + 2.0);
        let yy = y(&l);
        let _ = writeln!(
            s,
            r##"<rect class="ownership" data-shard="{shard}" data-node="{node}" x="{x0:.1}" y="{:.1}" width="{:.1}" height="8" fill="#7fb3e0" fill-opacity="0.8"><title>shard {shard} hosted on node {node}</title></rect>"##,
            yy + 3.0,
            x1 - x0
        );
    }
    // Messages and events.
    for it in &its {
        let st = &e.steps[it.step];
        if it.to.1 == "faults" {
            let xx = x(st.t);
            let _ = writeln!(
                s,
                r##"<text class="step" data-step="{}" x="{xx:.1}" y="{:.1}" fill="#a00">{}</text>"##,
                it.num,
                top - 2.0,
                it.num
            );
            continue;
        }
        let x1 = x(st.t);
        let y1 = y(&it.to);
        match &it.from {
            Some(f) => {
                let sent = st.cause.map(|c| e.steps[c].t).unwrap_or(st.t);
                let x0 = x(sent);
                let y0 = y(f);
                let (cls, dash, color) = if it.lost {
                    ("arrow lost", r#" stroke-dasharray="4 3""#, "#c00")
                } else {
                    ("arrow", "", "#333")
                };
                let _ = writeln!(
                    s,
                    r##"<line class="{cls}" data-step="{}" x1="{x0:.1}" y1="{y0:.1}" x2="{x1:.1}" y2="{y1:.1}" stroke="{color}"{dash} marker-end="url(#head)"><title>{}</title></line>"##,
                    it.num,
                    esc(&format!("{}. {}", it.num, it.label))
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    r##"<circle class="event" data-step="{}" cx="{x1:.1}" cy="{y1:.1}" r="3" fill="#333"><title>{}</title></circle>"##,
                    it.num,
                    esc(&format!("{}. {}", it.num, it.label))
                );
            }
        }
        let _ = writeln!(
            s,
            r#"<text class="step" data-step="{}" x="{:.1}" y="{:.1}">{}</text>"#,
            it.num,
            x1 + 2.0,
            y1 - 4.0,
            it.num
        );
    }
    // The conflict.
    let xe = x(t1);
    let _ = writeln!(
        s,
        r##"<line class="conflict" x1="{xe:.1}" y1="{top}" x2="{xe:.1}" y2="{:.1}" stroke="#c00" stroke-width="2"/>"##,
        top + row * lanes.len() as f64
    );
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="{:.1}">t={} … t={} (the violation); the axis spaces the story's moments evenly</text>"#,
        height - 12.0,
        shardsim_core::time::Instant(t0),
        shardsim_core::time::Instant(t1)
    );
    s.push_str("</svg>\n");
    s
}
