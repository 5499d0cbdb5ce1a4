//! `shardsim explain`: why a run broke an invariant, as a causal story.
//!
//! The run's happens-before graph is built with petgraph over its steps (each event the world
//! applied: a message handled by an actor, a timer fired, a journal write served, a fault
//! injected; see [`shardsim_harness::sim::causal`]). Its edges: the step that scheduled an event to the
//! event (a send to its receipt, a timer's setting to its firing, a journal write to its
//! acknowledgement, a local message between a region, its Shards and their entities); program
//! order per actor (node, actor, and the shard or entity of a Shard's or an entity's lane); and
//! a fault to what it cut (a message lost on a cut link or to a stopped node). The violation's
//! conflicting facts (at-most-one: both entity starts or both hostings of the shard;
//! per-sender-order and no-duplicate: both deliveries; liveness: the pending item; any other
//! kind: the violation's own step) are sliced backwards, and the story prints the steps of the
//! slice that concern the conflict: the message chains that lead to each fact, what happened
//! to its shard, faults, membership changes and singleton moves, in time order, with repetition
//! (heartbeats, gossip, user traffic, periodic timers) collapsed, in at most [`MAX_LINES`]
//! lines, ending with the conflict.
//!
//! Input: a re-run of `SCENARIO --seed N` with the causal recorder on, or a trace written by
//! `run --trace`, whose `step` lines carry the causal facts. Both go through the same JSON
//! Lines text ([`jsonl_with_steps`]): the `step` lines are not [`TraceEvent`]s, so neither the
//! trace hash nor `check-trace` sees them.

pub mod draw;

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{Dfs, Reversed};
use serde_json::Value;
use shardsim_core::membership::{MemberStatus, MembershipEvent};
use shardsim_core::time::Instant;
use shardsim_harness::check::{Checker, TraceFileError, Violation};
use shardsim_harness::fault::Fault;
use shardsim_harness::sim::causal::CausalLog;
use shardsim_harness::trace::{read_line, Line as TraceLine, Subject, TraceEvent, Tracer};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// The most lines a story has.
pub const MAX_LINES: usize = 40;

/// The trace as JSON Lines with the causal log's `step` lines, each before the events of its
/// step (what `run --trace` writes).
pub fn jsonl_with_steps(tracer: &Tracer, causal: &CausalLog) -> String {
    let events = tracer.events();
    let mut s = String::with_capacity((events.len() + causal.steps.len()) * 100);
    let mut next = 0usize;
    let mut lost = causal.lost.iter().peekable();
    let mut step_line = |s: &mut String, i: usize| {
        s.push_str(&causal.steps[i].line(Some(i)).to_json());
        s.push('\n');
        while let Some(l) = lost.next_if(|l| l.cause as usize == i) {
            s.push_str(&l.line(None).to_json());
            s.push('\n');
        }
    };
    for (i, (t, e)) in events.iter().enumerate() {
        while next < causal.steps.len() && causal.steps[next].first_event as usize <= i {
            step_line(&mut s, next);
            next += 1;
        }
        s.push_str(&e.to_json(*t));
        s.push('\n');
    }
    while next < causal.steps.len() {
        step_line(&mut s, next);
        next += 1;
    }
    s
}

/// Why there is nothing to explain.
#[derive(Debug)]
pub enum ExplainError {
    /// The trace could not be read (the line and field at fault).
    Trace(TraceFileError),
    /// The run broke no invariant.
    NoViolation,
    /// The trace has no `step` lines (written without the causal facts).
    NoSteps,
    /// The trace ends (at this line) with neither a violation nor the run's end.
    Truncated(usize),
}

impl std::fmt::Display for ExplainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExplainError::Trace(e) => write!(f, "{e}"),
            ExplainError::NoViolation => write!(f, "the run breaks no invariant: nothing to explain"),
            ExplainError::Truncated(l) => write!(
                f,
                "line {l}: the trace ends without its `run_end` or `violation` line: truncated?"
            ),
            ExplainError::NoSteps => write!(
                f,
                "the trace has no causal `step` lines: write it with `shardsim run --trace`, or explain the scenario and seed"
            ),
        }
    }
}

/// One line of the trace, read.
#[derive(Clone, Debug)]
struct Line {
    t: u64,
    v: Value,
    e: TraceEvent,
}

impl Line {
    /// The membership event of a `cluster` line.
    fn cluster(&self) -> Option<&MembershipEvent> {
        match &self.e {
            TraceEvent::Cluster { event, .. } => Some(event),
            _ => None,
        }
    }
    fn ev(&self) -> &str {
        self.v.get("ev").and_then(Value::as_str).unwrap_or("")
    }
    fn s(&self, k: &str) -> Option<&str> {
        self.v.get(k).and_then(Value::as_str)
    }
    fn n(&self, k: &str) -> Option<u64> {
        self.v.get(k).and_then(Value::as_u64)
    }
}

/// A step of the run as the explainer reads it.
#[derive(Clone, Debug, Default)]
pub struct StepInfo {
    /// Simulated µs.
    pub t: u64,
    /// The step that scheduled it.
    pub cause: Option<usize>,
    /// The handling node (`None`: the journal or the fault injector).
    pub node: Option<u32>,
    /// The handling actor.
    pub actor: String,
    /// What it handled.
    pub what: String,
    /// The shard of its lane or message.
    pub shard: Option<u32>,
    /// The entity of its lane.
    pub entity: Option<u32>,
    /// The sending node.
    pub from: Option<u32>,
    /// The user message it carries.
    pub user: Option<(u32, u32, u64)>,
    /// Lost to a fault.
    pub cut: bool,
    /// Its trace lines (indices into the events).
    events: Vec<usize>,
}

/// An edge of the happens-before graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Edge {
    /// A step scheduled the next: a send, a timer set, a journal write, a local message.
    Cause,
    /// Program order within one actor.
    Program,
    /// A fault cut this message or stopped its receiver.
    Fault,
}

/// A fault band of the pictures: kind, detail, the node it is on (`None`: the network or
/// the journal), from and to (µs; `None`: until the end).
pub type FaultBand = (String, String, Option<u32>, u64, Option<u64>);

/// A shard ownership bar of the pictures: shard, node, from and to (µs; `None`: to the end).
pub type OwnershipBar = (u32, u32, u64, Option<u64>);

/// What [`read`] returns: the steps, the trace lines, and the checker's events by line.
type Read = (Vec<StepInfo>, Vec<Line>, Vec<(usize, TraceEvent)>);

/// A lane of program order: node, actor, and the shard and entity of a Shard's or an
/// entity's lane.
type LaneKey<'a> = (Option<u32>, &'a str, Option<u32>, Option<u32>);

/// The story of one violation.
#[derive(Clone, Debug)]
pub struct Explanation {
    /// The violation the story explains, as the checker reported it.
    pub violation: Violation,
    /// The story, one line each (at most [`MAX_LINES`]).
    pub lines: Vec<String>,
    /// The steps the story shows, with their story numbers, in time order.
    pub shown: Vec<(usize, usize)>,
    /// Every step of the run.
    pub steps: Vec<StepInfo>,
    /// The size of the happens-before graph (steps up to the violation) and of the slice.
    pub graph_steps: usize,
    /// The backward slice's size.
    pub slice_steps: usize,
    /// The focus shards.
    pub shards: BTreeSet<u32>,
    /// Shard ownership (shard, node, from, to µs) over the run, for the pictures.
    pub ownership: Vec<OwnershipBar>,
    /// Faults (kind, detail, node, from, to µs), for the pictures.
    pub faults: Vec<FaultBand>,
    /// The violation's time (µs).
    pub t_end: u64,
    /// The first effect of each shown step (`hosts shard 0`, `FAULT OneWay 1 -> 0`), for the
    /// pictures' labels.
    pub effects: BTreeMap<usize, String>,
}

/// Read a trace with `step` lines: the steps, the lines, and the checker's events.
fn read(text: &str) -> Result<Read, ExplainError> {
    let mut steps: Vec<StepInfo> = Vec::new();
    let mut lines: Vec<Line> = Vec::new();
    let mut checked: Vec<(usize, TraceEvent)> = Vec::new();
    // The index in `steps` of each numbered step (lost messages sit between them).
    let mut real: Vec<usize> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let err = |field: &str, message: &str| {
            ExplainError::Trace(TraceFileError {
                line: lineno,
                field: Some(field.into()),
                message: message.into(),
            })
        };
        match read_line(raw, lineno).map_err(ExplainError::Trace)? {
            TraceLine::Step(s) => {
                let lost = s.ev == "lost";
                if let Some(step) = s.step.filter(|_| !lost) {
                    if step as usize != real.len() {
                        return Err(err(
                            "step",
                            &format!("step {step} where step {} was due", real.len()),
                        ));
                    }
                }
                let cause =
                    match s.cause {
                        None => None,
                        Some(c) => Some(*real.get(c as usize).ok_or_else(|| {
                            err("cause", "names a step that has not happened yet")
                        })?),
                    };
                steps.push(StepInfo {
                    t: s.t,
                    cause,
                    node: s.node,
                    actor: s.actor,
                    what: s.what,
                    shard: s.shard.map(|x| x.0),
                    entity: s.entity.map(|x| x.0),
                    from: s.from,
                    user: s.user,
                    cut: lost || s.cut,
                    events: Vec::new(),
                });
                if !lost {
                    real.push(steps.len() - 1);
                }
            }
            TraceLine::Event(t, ev) => {
                let idx = lines.len();
                if let Some(&s) = real.last() {
                    steps[s].events.push(idx);
                }
                // The story reads the line's fields by name, as the file has them.
                let v = ev.to_value(t);
                lines.push(Line {
                    t: t.0,
                    v,
                    e: ev.clone(),
                });
                checked.push((idx, ev));
            }
        }
    }
    Ok((steps, lines, checked))
}

/// The step of each line (`None`: before the first step).
fn step_of_lines(steps: &[StepInfo], n: usize) -> Vec<Option<usize>> {
    let mut out = vec![None; n];
    for (i, s) in steps.iter().enumerate() {
        for &e in &s.events {
            out[e] = Some(i);
        }
    }
    out
}

/// The conflicting facts: the lines of the violation's facts, and the focus shards/entities.
struct Facts {
    lines: Vec<usize>,
    trigger: usize,
    shards: BTreeSet<u32>,
    entities: BTreeSet<u32>,
    /// A pending user message (liveness).
    pending: Option<(u32, u32, u64)>,
}

fn find_violation(
    lines: &[Line],
    checked: &[(usize, TraceEvent)],
) -> Result<(Violation, Facts), ExplainError> {
    let mut c = Checker::new();
    // The last delivery of each (sender, entity): seq and line.
    let mut delivered: BTreeMap<(u32, u32), Vec<(u64, usize)>> = BTreeMap::new();
    let mut started: BTreeMap<(u32, u64), usize> = BTreeMap::new();
    let mut hosted: BTreeMap<(u32, u32), usize> = BTreeMap::new();
    let mut sent: BTreeMap<(u32, u32, u64), usize> = BTreeMap::new();
    for (idx, ev) in checked {
        let idx = *idx;
        let prior_live: Vec<(u32, u64)> = match ev {
            TraceEvent::EntityStarted { entity, .. } => c
                .live_incarnations(*entity)
                .iter()
                .map(|(n, i)| (n.0, *i))
                .collect(),
            _ => Vec::new(),
        };
        let prior_hosts: Vec<u32> = match ev {
            TraceEvent::ShardHosted { shard, .. } => c.hosts(*shard).iter().map(|n| n.0).collect(),
            _ => Vec::new(),
        };
        let v = c.on_event(Instant(lines[idx].t), ev);
        if let Some(v) = v {
            let mut f = Facts {
                lines: vec![idx],
                trigger: idx,
                shards: BTreeSet::new(),
                entities: BTreeSet::new(),
                pending: None,
            };
            use shardsim_harness::check::Invariant as I;
            match (v.invariant, ev) {
                (I::AtMostOne, TraceEvent::EntityStarted { entity, shard, .. }) => {
                    f.entities.insert(entity.0);
                    f.shards.insert(shard.0);
                    for (_, inc) in prior_live {
                        if let Some(&l) = started.get(&(entity.0, inc)) {
                            f.lines.push(l);
                            if let Some(s) = lines[l].s("shard").and_then(|s| s.parse().ok()) {
                                f.shards.insert(s);
                            }
                        }
                    }
                }
                (I::AtMostOne, TraceEvent::ShardHosted { shard, .. }) => {
                    f.shards.insert(shard.0);
                    for n in prior_hosts {
                        if let Some(&l) = hosted.get(&(shard.0, n)) {
                            f.lines.push(l);
                        }
                    }
                }
                (
                    I::PerSenderOrder | I::NoDuplicate,
                    TraceEvent::Deliver {
                        sender,
                        entity,
                        seq,
                        ..
                    },
                ) => {
                    f.entities.insert(entity.0);
                    let earlier = delivered.get(&(sender.0, entity.0));
                    let other = earlier.and_then(|d| {
                        d.iter().rev().find(|(s, _)| {
                            if v.invariant == I::NoDuplicate {
                                s == seq
                            } else {
                                s > seq
                            }
                        })
                    });
                    if let Some((_, l)) = other {
                        f.lines.push(*l);
                    }
                    if let Some(&l) = sent.get(&(sender.0, entity.0, *seq)) {
                        if let Some(s) = lines[l].s("shard").and_then(|s| s.parse().ok()) {
                            f.shards.insert(s);
                        }
                    }
                }
                (I::Liveness, _) => liveness_facts(&v.about, lines, &sent, &mut f),
                (I::JournalSingleWriter, _) => {
                    // The other writer: the last start of the coordinator the violation names.
                    let other = v.about.iter().find_map(|s| match s {
                        Subject::Coordinator { node } => Some(u64::from(node.0)),
                        _ => None,
                    });
                    if let Some(other) = other {
                        if let Some(l) = (0..idx).rev().find(|&l| {
                            lines[l].ev() == "coordinator_started"
                                && lines[l].n("node") == Some(other)
                        }) {
                            f.lines.push(l);
                        }
                    }
                    for s in &v.about {
                        if let Subject::Shard { shard } = s {
                            f.shards.insert(shard.0);
                        }
                    }
                }
                (I::GracefulLeaveLoss | I::GracefulShutdownTimeout | I::MessageLost, _) => {
                    // The message lost, named by the detail or the first dropped at the
                    // violation's step: its path, and its shard as the focus.
                    let key = first_message(&v.about).or_else(|| {
                        (idx.saturating_sub(400)..=idx).find_map(|l| {
                            (lines[l].ev() == "drop" && lines[l].t == lines[idx].t)
                                .then(|| user_key_of_line(&lines[l]))
                                .flatten()
                        })
                    });
                    if let Some(key) = key {
                        f.pending = Some(key);
                        if let Some(&l) = sent.get(&key) {
                            if let Some(s) = lines[l].s("shard").and_then(|s| s.parse().ok()) {
                                f.shards.insert(s);
                            }
                        }
                        if let Some(l) = (0..=idx).rev().find(|&l| {
                            lines[l].ev() == "drop" && user_key_of_line(&lines[l]) == Some(key)
                        }) {
                            f.lines.push(l);
                        }
                    }
                }
                _ => {
                    for k in ["shard"] {
                        if let Some(s) = lines[idx].s(k).and_then(|s| s.parse().ok()) {
                            f.shards.insert(s);
                        }
                    }
                    if let Some(e) = lines[idx]
                        .s("entity")
                        .and_then(|s| s.strip_prefix('e'))
                        .and_then(|s| s.parse().ok())
                    {
                        f.entities.insert(e);
                    }
                }
            }
            // The run's end is no fact of its own when the pending item is named.
            if lines[idx].ev() == "run_end" && f.lines.len() > 1 {
                f.lines.retain(|&l| l != idx);
            }
            f.lines.sort_unstable();
            f.lines.dedup();
            return Ok((v, f));
        }
        match ev {
            TraceEvent::Deliver {
                sender,
                entity,
                seq,
                ..
            } => delivered
                .entry((sender.0, entity.0))
                .or_default()
                .push((*seq, idx)),
            TraceEvent::EntityStarted {
                entity,
                incarnation,
                ..
            } => {
                started.insert((entity.0, *incarnation), idx);
            }
            TraceEvent::ShardHosted { shard, node } => {
                hosted.insert((shard.0, node.0), idx);
            }
            TraceEvent::Send {
                sender,
                entity,
                seq,
                ..
            } => {
                sent.insert((sender.0, entity.0, *seq), idx);
            }
            _ => {}
        }
    }
    Err(ExplainError::NoViolation)
}

/// The (sender, entity, seq) of a trace line.
fn user_key_of_line(l: &Line) -> Option<(u32, u32, u64)> {
    let c = l.s("sender")?.strip_prefix('c')?.parse().ok()?;
    let e = l.s("entity")?.strip_prefix('e')?.parse().ok()?;
    Some((c, e, l.n("seq")?))
}

/// The first user message a violation names: (sender, entity, seq).
fn first_message(about: &[Subject]) -> Option<(u32, u32, u64)> {
    about.iter().find_map(|s| match s {
        Subject::Message {
            sender,
            entity,
            seq,
        } => Some((sender.0, entity.0, *seq)),
        _ => None,
    })
}

/// Liveness: the pending item the violation names (a message, an unregistered region, a
/// homeless shard, a hand-off).
fn liveness_facts(
    about: &[Subject],
    lines: &[Line],
    sent: &BTreeMap<(u32, u32, u64), usize>,
    f: &mut Facts,
) {
    let unregistered = about.iter().find_map(|s| match s {
        Subject::Unregistered { node } => Some(u64::from(node.0)),
        _ => None,
    });
    if let Some(n) = unregistered {
        // A region that never registered: the facts are when its node (re)started and when
        // the coordinator's node saw the node's old incarnation Removed and the new one Up,
        // since a coordinator answers Register only from a member it sees Up (a stalled
        // convergence shows as a late Removed and Up there).
        {
            let coord = (0..f.trigger)
                .rev()
                .find(|&l| lines[l].ev() == "coordinator_started")
                .and_then(|l| lines[l].n("node"));
            let mut seen = BTreeSet::new();
            for l in (0..f.trigger).rev() {
                let line = &lines[l];
                let key = match line.ev() {
                    "node_up" if line.n("node") == Some(n) => line.ev().to_string(),
                    "cluster" if coord.is_some() && line.n("node") == coord => {
                        let Some(seen_as) = line.cluster().map(pretty_cluster) else {
                            continue;
                        };
                        if seen_as != format!("sees node {n} Up")
                            && seen_as != format!("sees node {n} Removed")
                        {
                            continue;
                        }
                        seen_as
                    }
                    _ => continue,
                };
                if seen.insert(key) {
                    f.lines.push(l);
                }
            }
        }
        if let Some(key) = first_message(about) {
            f.pending = Some(key);
            f.entities.insert(key.1);
        }
        return;
    }
    if let Some(key) = first_message(about) {
        f.pending = Some(key);
        f.entities.insert(key.1);
        if let Some(&l) = sent.get(&key) {
            f.lines.push(l);
            if let Some(s) = lines[l].s("shard").and_then(|s| s.parse().ok()) {
                f.shards.insert(s);
            }
        }
        return;
    }
    if about.contains(&Subject::NoCoordinator) {
        // No coordinator: every node that could host it is gone. The facts are why each
        // went: the last `node_down` of each node, and the downing decisions behind them.
        let mut seen = BTreeSet::new();
        for l in (0..f.trigger).rev() {
            let down = lines[l].ev() == "node_down";
            let decision = matches!(
                lines[l].cluster(),
                Some(MembershipEvent::DowningDecision { .. })
            );
            if (down || decision) && seen.insert((down, lines[l].n("node"))) {
                f.lines.push(l);
            }
        }
        return;
    }
    let shard = about.iter().find_map(|s| match s {
        Subject::Shard { shard } | Subject::HandOff { shard } => Some(shard.0),
        _ => None,
    });
    if let Some(s) = shard {
        f.shards.insert(s);
        // Its last trace line before the end.
        let key = s.to_string();
        if let Some(l) = (0..f.trigger)
            .rev()
            .find(|&l| lines[l].s("shard") == Some(key.as_str()))
        {
            f.lines.push(l);
        }
    }
}

/// What to call a node in the story.
fn node_name(n: Option<u32>) -> String {
    match n {
        Some(n) => format!("node {n}"),
        None => "world".into(),
    }
}

/// A membership event, shortened: `node 1 Up`, `sees node 2 unreachable`, `leader is node 0`.
fn pretty_cluster(e: &MembershipEvent) -> String {
    match e {
        MembershipEvent::StatusChanged { node, status } => {
            format!("sees node {} {status:?}", node.node.0)
        }
        MembershipEvent::Unreachable { subject, .. } => {
            format!("sees node {} unreachable", subject.node.0)
        }
        MembershipEvent::Reachable { subject, .. } => {
            format!("sees node {} reachable", subject.node.0)
        }
        MembershipEvent::LeaderChanged { leader } => match leader {
            Some(n) => format!("leader is node {}", n.node.0),
            None => "no leader".into(),
        },
        MembershipEvent::DowningDecision { downed, .. } => {
            let downed: Vec<String> = downed.iter().map(|n| n.node.0.to_string()).collect();
            format!("downing decision: down nodes {}", downed.join(", "))
        }
    }
}

/// What one trace line adds to its step's story line (`None`: nothing worth a word).
fn effect(l: &Line) -> Option<String> {
    let shard = l.s("shard").unwrap_or("?");
    let node = l.n("node").unwrap_or(0);
    Some(match l.ev() {
        "shard_hosted" => format!("hosts shard {shard}"),
        "shard_unhosted" => format!("shard {shard} stopped"),
        "entity_started" => format!(
            "starts {} (incarnation {})",
            l.s("entity").unwrap_or("?"),
            l.n("incarnation").unwrap_or(0)
        ),
        "entity_stopped" => format!("{} stopped", l.s("entity").unwrap_or("?")),
        "shard_allocated" => format!("ShardHomeAllocated: shard {shard} -> node {node}"),
        "allocation_decided" => format!(
            "allocates shard {shard} to node {}",
            l.n("region").unwrap_or(0)
        ),
        "rebalance_started" => format!(
            "rebalance: shard {shard} hand-off from node {}",
            l.n("from").unwrap_or(0)
        ),
        "rebalance_done" => {
            if l.v.get("ok").and_then(Value::as_bool) == Some(true) {
                format!("hand-off of shard {shard} done")
            } else {
                format!("hand-off of shard {shard} timed out")
            }
        }
        "persisted" => {
            let e = l.v.get("event");
            let name = e
                .and_then(|e| e.get("event"))
                .and_then(Value::as_str)
                .unwrap_or("?");
            match e.and_then(|e| e.get("shard")).and_then(Value::as_u64) {
                Some(s) => format!("journal appends {name}(shard {s})"),
                None => format!("journal appends {name}"),
            }
        }
        "coordinator_state_updated" => {
            let name =
                l.v.get("event")
                    .and_then(|e| e.get("event"))
                    .and_then(Value::as_str)
                    .unwrap_or("?");
            format!("state updated: {name}")
        }
        "coordinator_started" => format!(
            "ShardCoordinator starts (replayed {} events)",
            l.n("replayed").unwrap_or(0)
        ),
        "coordinator_state_loaded" => "ShardCoordinator read its state".into(),
        "coordinator_stopped" => {
            format!("ShardCoordinator stops: {}", l.s("reason").unwrap_or(""))
        }
        "region_stopped" => format!("ShardRegion stops: {}", l.s("reason").unwrap_or("")),
        "region_restarted" => "ShardRegion restarts".into(),
        "dead_letter" => format!("dead letter: {}", l.s("msg").unwrap_or("?")),
        "drop" => format!(
            "drops {}→{} seq {} ({})",
            l.s("sender").unwrap_or("?"),
            l.s("entity").unwrap_or("?"),
            l.n("seq").unwrap_or(0),
            l.s("reason").unwrap_or("?")
        ),
        "deliver" => format!(
            "{} processes {} seq {}",
            l.s("entity").unwrap_or("?"),
            l.s("sender").unwrap_or("?"),
            l.n("seq").unwrap_or(0)
        ),
        "send" => format!(
            "{} sends {} seq {}",
            l.s("sender").unwrap_or("?"),
            l.s("entity").unwrap_or("?"),
            l.n("seq").unwrap_or(0)
        ),
        "fault" => format!(
            "FAULT {} {}",
            l.s("fault").unwrap_or("?"),
            l.s("detail").unwrap_or("")
        )
        .trim_end()
        .to_string(),
        "node_down" => format!("node {node} down: {}", l.s("reason").unwrap_or("")),
        "node_up" => format!(
            "node {node} up (incarnation {})",
            l.n("incarnation").unwrap_or(0)
        ),
        "graceful_leave" => format!("node {node} leaves gracefully"),
        "cluster" => pretty_cluster(l.cluster()?),
        "join_again" => match &l.e {
            TraceEvent::JoinAgain { seeds, .. } => format!("join again via {seeds:?}")
                .chars()
                .take(60)
                .collect(),
            _ => return None,
        },
        "shard_failed" => format!("Shard {shard} throws: {}", l.s("cause").unwrap_or("")),
        "store_write" => format!("remember store writes shard {shard}"),
        "store_read" => format!("remember store read for shard {shard}"),
        "role_breach" => format!(
            "{} breaks {}",
            l.s("role").unwrap_or("?"),
            l.s("rule").unwrap_or("?")
        ),
        "liveness_phase" => "liveness phase: every fault healed".into(),
        "region_coordinator" => match l.v.get("coordinator").and_then(|c| c.get("node")) {
            Some(n) => format!("region registered with the coordinator on node {n}"),
            None => "region lost its coordinator".into(),
        },
        _ => return None,
    })
}

/// How much a step matters to the story: 5 a conflicting fact; 4 a fault, a node's start or
/// stop, a singleton move, a message about the focus lost; 3 a protocol step about the focus
/// shard or entity; 2 a step about an entity of the focus shard; 1 another step of the
/// chains; 0 repetition (user traffic, heartbeats, gossip).
fn priority(s: &StepInfo, lines: &[Line], facts: &BTreeSet<usize>, i: usize, f: &Facts) -> u8 {
    if facts.contains(&i) {
        return 5;
    }
    let focus_entity = s.entity.is_some_and(|x| f.entities.contains(&x));
    let focus_shard = s.shard.is_some_and(|x| f.shards.contains(&x));
    let milestone = s.events.iter().any(|&e| {
        matches!(
            lines[e].cluster(),
            Some(
                MembershipEvent::DowningDecision { .. }
                    | MembershipEvent::StatusChanged {
                        status: MemberStatus::Down,
                        ..
                    }
                    | MembershipEvent::Unreachable { .. }
            )
        ) || matches!(
            lines[e].ev(),
            "fault"
                | "node_down"
                | "node_up"
                | "graceful_leave"
                | "coordinator_started"
                | "coordinator_stopped"
                | "region_stopped"
                | "liveness_phase"
                | "shard_failed"
        )
    });
    if s.what == "node starts and joins" && s.t == 0 {
        return 2;
    }
    if milestone || (s.cut && (focus_shard || focus_entity)) {
        return 4;
    }
    let shard_event = s.events.iter().any(|&e| {
        lines[e]
            .s("shard")
            .and_then(|x| x.parse::<u32>().ok())
            .is_some_and(|x| f.shards.contains(&x))
            && matches!(
                lines[e].ev(),
                "shard_hosted"
                    | "shard_unhosted"
                    | "shard_allocated"
                    | "allocation_decided"
                    | "rebalance_started"
                    | "rebalance_done"
                    | "entity_started"
            )
    });
    if s.user.is_some() && s.user == f.pending {
        return 3;
    }
    if s.user.is_some() || s.what == "user message" {
        return if focus_entity { 2 } else { 0 };
    }
    if shard_event {
        return 3;
    }
    // Steps every hand-off and every buffered message repeats: the line after them (the
    // journal's acknowledgement, the HandOff) tells what they did.
    if s.actor == "journal"
        || matches!(
            s.what.as_str(),
            "GetShardHome" | "BeginHandOff" | "BeginHandOffAck" | "RegisterAck" | "Register"
        )
    {
        return if focus_shard { 2 } else { 1 };
    }
    if s.actor == "entity" || s.entity.is_some() {
        return if focus_entity {
            3
        } else if focus_shard {
            1
        } else {
            0
        };
    }
    if focus_shard || focus_entity {
        return 3;
    }
    if s.actor == "membership" || s.actor == "replicator" {
        return 0;
    }
    1
}

/// A story line's repetition class: consecutive steps of one class fold into one line.
fn class(s: &StepInfo, keyed: &BTreeSet<(u32, u32, u64)>) -> String {
    if let Some(k) = s.user.filter(|k| keyed.contains(k)) {
        return format!("{k:?}|{}|{}|{:?}", s.actor, s.what, s.node);
    }
    if s.user.is_some() || s.what == "user message" {
        return "user traffic".into();
    }
    // The same message to (or from) several nodes in a row folds too.
    format!("{}|{}|{:?}|{}", s.actor, s.what, s.shard, s.cut)
}

/// Explain the trace `text` (JSON Lines with `step` lines).
pub fn explain_text(text: &str) -> Result<Explanation, ExplainError> {
    let (steps, lines, checked) = read(text)?;
    let (violation, facts) = match find_violation(&lines, &checked) {
        Err(ExplainError::NoViolation)
            if !lines
                .last()
                .is_some_and(|l| matches!(l.ev(), "run_end" | "violation")) =>
        {
            return Err(ExplainError::Truncated(text.lines().count()));
        }
        x => x?,
    };
    if steps.is_empty() {
        return Err(ExplainError::NoSteps);
    }
    let line_step = step_of_lines(&steps, lines.len());
    // The graph: every step up to the violation's (filtered: nothing after it matters).
    let last = line_step[facts.trigger].unwrap_or(steps.len() - 1);
    let n = last + 1;
    let mut g: DiGraph<usize, Edge> = DiGraph::with_capacity(n, n * 2);
    let idx: Vec<NodeIndex> = (0..n).map(|i| g.add_node(i)).collect();
    let mut lane_last: BTreeMap<LaneKey, usize> = BTreeMap::new();
    let mut last_fault: Option<usize> = None;
    for (i, s) in steps.iter().enumerate().take(n) {
        if let Some(c) = s.cause {
            g.add_edge(idx[c], idx[i], Edge::Cause);
        }
        let lane_shard = if s.actor == "shard" || s.actor == "entity" {
            s.shard
        } else {
            None
        };
        let lane_entity = if s.actor == "entity" { s.entity } else { None };
        let key = (s.node, s.actor.as_str(), lane_shard, lane_entity);
        if let Some(p) = lane_last.insert(key, i) {
            g.add_edge(idx[p], idx[i], Edge::Program);
        }
        if s.cut {
            if let Some(fs) = last_fault {
                g.add_edge(idx[fs], idx[i], Edge::Fault);
            }
        }
        if s.actor == "faults" {
            last_fault = Some(i);
        }
    }
    // The backward slice of the facts.
    let mut fact_steps: BTreeSet<usize> = facts
        .lines
        .iter()
        .filter_map(|&l| line_step[l])
        .filter(|&s| s < n)
        .collect();
    // A pending message's fact is where it got stuck: the last step that carried it (a
    // Shard or a region buffering it), rather than its send.
    if let Some(key) = facts.pending {
        if let Some(last) = (0..n).rev().find(|&i| steps[i].user == Some(key)) {
            fact_steps.retain(|&i| steps[i].actor != "sender");
            fact_steps.insert(last);
        }
    }
    let mut slice: BTreeSet<usize> = BTreeSet::new();
    let rev = Reversed(&g);
    for &fs in &fact_steps {
        let mut dfs = Dfs::new(rev, idx[fs]);
        while let Some(x) = dfs.next(rev) {
            slice.insert(g[x]);
        }
    }
    // The chains: the causes of each fact, back to the start.
    let mut chain: BTreeSet<usize> = BTreeSet::new();
    for &fs in &fact_steps {
        let mut x = Some(fs);
        while let Some(i) = x {
            if !chain.insert(i) {
                break;
            }
            x = steps[i].cause;
        }
    }
    // The user messages of the facts (the pending one, both deliveries): every step that
    // carried them, and the send that began each.
    let mut keyed: BTreeSet<(u32, u32, u64)> = facts.pending.into_iter().collect();
    for &fs in &fact_steps {
        if let Some(k) = steps[fs].user {
            keyed.insert(k);
        }
        // The deliveries of the facts (the drops of a region that gave up are many: only
        // the one the violation names, the pending one).
        for &l in &steps[fs].events {
            if lines[l].ev() == "deliver" && facts.pending.is_none() {
                if let Some(k) = user_key_of_line(&lines[l]) {
                    keyed.insert(k);
                }
            }
        }
    }
    for (i, s) in steps.iter().enumerate().take(n) {
        let sends = s.actor == "sender"
            && s.events.iter().any(|&l| {
                lines[l].ev() == "send"
                    && user_key_of_line(&lines[l]).is_some_and(|k| keyed.contains(&k))
            });
        if s.user.is_some_and(|k| keyed.contains(&k)) || sends {
            chain.insert(i);
            slice.insert(i);
        }
    }
    // Lost messages about the focus whose sender is in the slice.
    let mut chosen: BTreeMap<usize, u8> = BTreeMap::new();
    for (i, s) in steps.iter().enumerate().take(n) {
        let in_slice = slice.contains(&i) || chain.contains(&i);
        let lost_focus = s.cut
            && s.shard.is_some_and(|x| facts.shards.contains(&x))
            && s.cause.is_some_and(|c| slice.contains(&c));
        if !(in_slice || lost_focus) {
            continue;
        }
        let mut p = priority(s, &lines, &fact_steps, i, &facts);
        if p < 4 && s.user.is_some_and(|k| keyed.contains(&k)) {
            p = 4;
        }
        if p < 4
            && s.actor == "sender"
            && s.events.iter().any(|&l| {
                lines[l].ev() == "send"
                    && user_key_of_line(&lines[l]).is_some_and(|k| keyed.contains(&k))
            })
        {
            p = 4;
        }
        // A chain runs back through periodic ticks (heartbeats, gossip) to the start: only
        // the protocol's steps on it count.
        let ticking = matches!(s.actor.as_str(), "membership" | "replicator" | "sender");
        if chain.contains(&i) && p < 2 && !ticking && s.user.is_none() {
            p = if s.actor == "journal" { 1 } else { 2 };
        }
        if lost_focus {
            p = 4;
        }
        // Skip timers of stopped incarnations and untraced noise outside the chains.
        if s.cut && !lost_focus && !chain.contains(&i) {
            continue;
        }
        if p == 0 && !chain.contains(&i) {
            continue;
        }
        if p == 1 && !chain.contains(&i) {
            continue;
        }
        chosen.insert(i, p);
    }
    // Fold repetition: runs of one class become one entry.
    let mut entries: Vec<Entry> = Vec::new();
    for (&i, &p) in &chosen {
        let c = class(&steps[i], &keyed);
        if let Some(e) = entries.last_mut() {
            // Milestones stay lines of their own, except faults injected together and the
            // same membership step or node start on many nodes in a row (nodes joining together,
            // a partition detected by every heartbeat sender, a Down spreading by gossip).
            let together = ["faults|", "membership|", "node|"]
                .iter()
                .any(|k| c.starts_with(k));
            let foldable = (p < 4 && e.prio < 4) || (p == 4 && e.prio == 4 && together);
            if e.class == c && foldable {
                e.steps.push(i);
                e.prio = e.prio.max(p);
                continue;
            }
        }
        entries.push(Entry {
            class: c,
            steps: vec![i],
            prio: p,
        });
    }
    // Fit the budget: the header (2 lines), the conflict (1 line) and at most one line per
    // elided run.
    let budget = MAX_LINES - 3;
    let mut keep = vec![true; entries.len()];
    // Lines now: one per kept entry and one per run of elided ones (kept up to date as
    // entries go, so fitting is linear in the entries).
    let mut count = entries.len();
    'fit: for level in 0..5u8 {
        for j in 0..entries.len() {
            if count <= budget {
                break 'fit;
            }
            if keep[j] && entries[j].prio <= level {
                keep[j] = false;
                let prev_gap = j > 0 && !keep[j - 1];
                let next_gap = j + 1 < keep.len() && !keep[j + 1];
                count -= usize::from(prev_gap) + usize::from(next_gap);
            }
        }
    }
    let mut out: Vec<String> = Vec::new();
    let _ = violation_header(&mut out, &violation, n, slice.len());
    let mut shown = Vec::new();
    let mut effects = BTreeMap::new();
    let mut num = 0usize;
    let mut elided = 0usize;
    for (j, e) in entries.iter().enumerate() {
        if !keep[j] {
            elided += e.steps.len();
            continue;
        }
        if elided > 0 {
            out.push(format!("     … {elided} more steps of the slice"));
            elided = 0;
        }
        num += 1;
        for &s in &e.steps {
            shown.push((s, num));
        }
        if let Some(x) = steps[e.steps[0]]
            .events
            .iter()
            .filter(|&&l| !matches!(lines[l].ev(), "send" | "deliver" | "drop" | "cluster"))
            .find_map(|&l| effect(&lines[l]))
        {
            effects.insert(e.steps[0], x);
        }
        let mut l = story_line(num, &steps, &lines, e, &keyed);
        if e.prio == 5 {
            l.push_str("  ◀ conflict");
        }
        out.push(l);
    }
    if elided > 0 {
        out.push(format!("     … {elided} more steps of the slice"));
    }
    out.push(format!(
        "  => {} at t={}: {}",
        violation.invariant, violation.t, violation.detail
    ));
    let (ownership, faults) = timelines(&lines, &facts.shards, lines[facts.trigger].t);
    Ok(Explanation {
        t_end: lines[facts.trigger].t,
        violation,
        lines: out,
        shown,
        steps,
        graph_steps: n,
        slice_steps: slice.len(),
        shards: facts.shards,
        ownership,
        faults,
        effects,
    })
}

struct Entry {
    class: String,
    steps: Vec<usize>,
    prio: u8,
}

fn violation_header(out: &mut Vec<String>, v: &Violation, n: usize, slice: usize) -> Option<()> {
    out.push(format!("{} at t={}: {}", v.invariant, v.t, v.detail));
    out.push(format!(
        "causal slice: {slice} of {n} steps before it; the steps that lead to the conflict:"
    ));
    Some(())
}

fn secs(t: u64) -> String {
    format!("{}", Instant(t))
}

fn story_line(
    num: usize,
    steps: &[StepInfo],
    lines: &[Line],
    e: &Entry,
    keyed: &BTreeSet<(u32, u32, u64)>,
) -> String {
    let s = &steps[e.steps[0]];
    let lastt = steps[*e.steps.last().unwrap_or(&e.steps[0])].t;
    let mut text = String::new();
    let send_key = s
        .events
        .iter()
        .filter(|&&l| lines[l].ev() == "send")
        .find_map(|&l| user_key_of_line(&lines[l]).filter(|k| keyed.contains(k)));
    let what = if let Some((c, en, q)) = s.user.filter(|k| keyed.contains(k)).or(send_key) {
        if s.actor == "sender" {
            let shard = s
                .events
                .iter()
                .find(|&&l| {
                    lines[l].ev() == "send" && user_key_of_line(&lines[l]) == Some((c, en, q))
                })
                .and_then(|&l| lines[l].s("shard"))
                .map(|x| format!(" for shard {x}"))
                .unwrap_or_default();
            format!("c{c} sends User(c{c}→e{en} seq {q}){shard}")
        } else {
            format!("User(c{c}→e{en} seq {q})")
        }
    } else if e.class == "user traffic" {
        "user traffic".to_string()
    } else {
        let mut w = s.what.clone();
        if let Some(sh) = s.shard {
            if !w.contains('(') || w.starts_with("write") {
                w = format!("{w}(shard {sh})");
            }
        }
        w
    };
    let arrow = if s.cut { "✗ " } else { "" };
    let from = match s.from {
        Some(f) if Some(f) != s.node && e.class != "user traffic" => format!(" from node {f}"),
        _ => String::new(),
    };
    let mut nodes: Vec<Option<u32>> = e.steps.iter().map(|&i| steps[i].node).collect();
    nodes.dedup();
    let node = if nodes.len() > 1 && e.class != "user traffic" {
        let mut ns: Vec<u32> = nodes.iter().flatten().copied().collect();
        ns.sort_unstable();
        ns.dedup();
        format!(
            "nodes {}",
            ns.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
        )
    } else {
        node_name(s.node)
    };
    let mut froms: Vec<u32> = e.steps.iter().filter_map(|&i| steps[i].from).collect();
    froms.sort_unstable();
    froms.dedup();
    let from = if froms.len() > 1 && e.class != "user traffic" {
        format!(
            " from nodes {}",
            froms
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        )
    } else {
        from
    };
    let _ = write!(
        text,
        "{num:>3}. {:>11} {:<7} {:<11} {arrow}{what}{from}",
        secs(s.t),
        node,
        if e.class == "user traffic" && send_key.is_none() {
            "senders"
        } else {
            s.actor.as_str()
        }
    );
    if s.cut {
        text.push_str(" LOST (cut by a fault, or its receiver is gone)");
    }
    if e.steps.len() > 1 {
        let _ = write!(text, " ×{} until {}", e.steps.len(), secs(lastt));
    }
    // Effects of the first step (and, for a folded run, of none else).
    let mut effects: Vec<String> = Vec::new();
    if e.class != "user traffic" && send_key.is_none() {
        for &l in &s.events {
            if let Some(x) = effect(&lines[l]) {
                if matches!(lines[l].ev(), "send" | "deliver") {
                    continue;
                }
                if !effects.contains(&x) {
                    effects.push(x);
                }
            }
        }
        // A lone fact's delivery.
        if effects.is_empty() {
            for &l in &s.events {
                if let Some(x) = effect(&lines[l]) {
                    effects.push(x);
                    break;
                }
            }
        }
    }
    if effects.len() > 3 {
        let more = effects.len() - 3;
        effects.truncate(3);
        effects.push(format!("+{more}"));
    }
    if !effects.is_empty() {
        let _ = write!(text, ": {}", effects.join("; "));
    }
    text
}

/// Shard ownership bars (from hosting to stop or the node's end) of the focus shards, and the
/// fault bands, up to `end`.
fn timelines(
    lines: &[Line],
    shards: &BTreeSet<u32>,
    end: u64,
) -> (Vec<OwnershipBar>, Vec<FaultBand>) {
    let mut own: Vec<OwnershipBar> = Vec::new();
    let mut faults: Vec<FaultBand> = Vec::new();
    let close = |own: &mut Vec<OwnershipBar>, sh: Option<u32>, node: u32, t: u64| {
        for o in own.iter_mut() {
            if o.3.is_none() && o.1 == node && sh.is_none_or(|s| s == o.0) {
                o.3 = Some(t);
            }
        }
    };
    for l in lines {
        if l.t > end {
            break;
        }
        let node = l.n("node").map(|n| n as u32);
        let shard = l.s("shard").and_then(|s| s.parse::<u32>().ok());
        match l.ev() {
            "shard_hosted" => {
                if let (Some(s), Some(n)) = (shard, node) {
                    if shards.contains(&s) {
                        close(&mut own, Some(s), n, l.t);
                        own.push((s, n, l.t, None));
                    }
                }
            }
            "shard_unhosted" => {
                if let (Some(s), Some(n)) = (shard, node) {
                    close(&mut own, Some(s), n, l.t);
                }
            }
            "node_down" => {
                if let Some(n) = node {
                    close(&mut own, None, n, l.t);
                    faults.push((
                        "node down".into(),
                        l.s("reason").unwrap_or("").into(),
                        Some(n),
                        l.t,
                        None,
                    ));
                }
            }
            "node_up" => {
                if let Some(n) = node {
                    for f in faults.iter_mut() {
                        if f.4.is_none() && f.2 == Some(n) {
                            f.4 = Some(l.t);
                        }
                    }
                }
            }
            "fault" => {
                let kind = l.s("fault").unwrap_or("").to_string();
                let detail = l.s("detail").unwrap_or("").to_string();
                let heals = |f: &FaultBand| match kind.as_str() {
                    "Heal" => matches!(f.0.as_str(), "Partition" | "Isolate" | "OneWay" | "Bridge"),
                    "JournalAvailable" => f.0.starts_with("Journal"),
                    _ => false,
                };
                for f in faults.iter_mut() {
                    if f.4.is_none() && heals(f) {
                        f.4 = Some(l.t);
                    }
                }
                match kind.as_str() {
                    "Heal" | "JournalAvailable" | "Crash" | "Down" | "Restart" | "Leave" => {}
                    "Pause" => {
                        if let TraceEvent::Fault {
                            fault: Fault::Pause { node, duration_ms },
                        } = &l.e
                        {
                            let until = l.t + duration_ms * 1000;
                            faults.push((kind, detail, Some(node.0), l.t, Some(until)));
                        }
                    }
                    _ => faults.push((kind, detail, None, l.t, None)),
                }
            }
            "liveness_phase" => {
                for f in faults.iter_mut() {
                    if f.4.is_none() && f.2.is_none() {
                        f.4 = Some(l.t);
                    }
                }
            }
            _ => {}
        }
    }
    (own, faults)
}

/// Re-run `sc` at `seed` with the causal recorder: the trace with `step` lines.
pub fn rerun(sc: &std::sync::Arc<shardsim_harness::scenario::Scenario>, seed: u64) -> String {
    let w = shardsim_harness::sim::World::new(
        sc.clone(),
        seed,
        shardsim_harness::trace::TraceMode::Full,
    )
    .with_causal();
    let (_, tracer, causal) = w.run_recorded();
    jsonl_with_steps(&tracer, &causal.unwrap_or_default())
}

/// The story as text (one line each, newline-terminated).
pub fn story(e: &Explanation) -> String {
    let mut s = String::new();
    for l in &e.lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

/// Run `sc` at `seed` with the trace and the causal recorder.
pub fn run_recorded(
    sc: &std::sync::Arc<shardsim_harness::scenario::Scenario>,
    seed: u64,
) -> (shardsim_harness::sim::RunResult, Tracer, CausalLog) {
    let w = shardsim_harness::sim::World::new(
        sc.clone(),
        seed,
        shardsim_harness::trace::TraceMode::Full,
    )
    .with_causal();
    let (r, tracer, causal) = w.run_recorded();
    (r, tracer, causal.unwrap_or_default())
}
