//! Invariant checkers, applied after every event. They consume the same [`TraceEvent`]s that
//! the trace writes, so re-checking a trace file ([`recheck_file`]) reaches the same verdict as
//! the live run.
//!
//! - **at-most-one**: never two live incarnations of one entity (live = started, not stopped,
//!   its node not down), and never one shard hosted by two regions at once;
//! - **per-sender-order**: for every (sender, entity) the delivered seqs strictly increase
//!   (gaps are allowed: delivery is at-most-once);
//! - **no-duplicate**: no (sender, entity, seq) delivered twice; every delivery was sent, and
//!   reached an incarnation of the entity it was addressed to.

use crate::ids::{EntityId, NodeId, SenderId, ShardId};
use crate::scenario::Outcome;
use crate::time::Instant;
use crate::trace::TraceEvent;
use std::collections::BTreeMap;
use std::fmt;

/// A broken invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which invariant.
    pub invariant: Outcome,
    /// When (simulated).
    pub t: Instant,
    /// What happened, for a person.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at t={}: {}", self.invariant, self.t, self.detail)
    }
}

/// Per (sender, entity) delivery record.
#[derive(Clone, Debug, Default)]
struct Pair {
    sent_max: u64,
    last_delivered: u64,
    /// Bitmap of delivered seqs 0..64 (bit seq), kept inline: most pairs never need more.
    first: u64,
    /// Bitmap of delivered seqs from 64 on (bit seq - 64).
    more: Vec<u64>,
}

impl Pair {
    fn was_delivered(&self, seq: u64) -> bool {
        if seq < 64 {
            return self.first & (1 << seq) != 0;
        }
        let (w, b) = (((seq - 64) / 64) as usize, seq % 64);
        self.more.get(w).is_some_and(|x| x & (1 << b) != 0)
    }
    fn mark(&mut self, seq: u64) {
        if seq < 64 {
            self.first |= 1 << seq;
            return;
        }
        let (w, b) = (((seq - 64) / 64) as usize, seq % 64);
        if self.more.len() <= w {
            self.more.resize(w + 1, 0);
        }
        self.more[w] |= 1 << b;
    }
}

/// The safety checker. Ids index dense vectors that grow on demand.
#[derive(Debug, Default)]
pub struct Checker {
    /// entity → live incarnations (node, incarnation).
    live: Vec<Vec<(NodeId, u64)>>,
    /// shard → hosting nodes.
    hosts: Vec<Vec<NodeId>>,
    /// (sender, entity) → record.
    pairs: BTreeMap<(SenderId, EntityId), Pair>,
    /// Dense fast path for pairs: sender → entity → record.
    dense: Vec<Vec<Pair>>,
}

fn slot<T: Default>(v: &mut Vec<T>, i: usize) -> &mut T {
    if v.len() <= i {
        v.resize_with(i + 1, T::default);
    }
    &mut v[i]
}

impl Checker {
    /// A fresh checker.
    pub fn new() -> Self {
        Checker::default()
    }

    #[inline]
    fn pair(&mut self, sender: SenderId, entity: EntityId) -> &mut Pair {
        let (s, e) = (sender.0 as usize, entity.0 as usize);
        if s < self.dense.len() && e < self.dense[s].len() {
            return &mut self.dense[s][e];
        }
        self.pair_slow(sender, entity)
    }

    fn pair_slow(&mut self, sender: SenderId, entity: EntityId) -> &mut Pair {
        if sender.0 < 4096 && entity.0 < 1 << 20 {
            let row = slot(&mut self.dense, sender.0 as usize);
            return slot(row, entity.0 as usize);
        }
        self.pairs.entry((sender, entity)).or_default()
    }

    /// Apply one event; the first violation is returned.
    pub fn on_event(&mut self, t: Instant, ev: &TraceEvent) -> Option<Violation> {
        let v = |invariant, detail: String| {
            Some(Violation {
                invariant,
                t,
                detail,
            })
        };
        match ev {
            TraceEvent::EntityStarted {
                entity,
                node,
                incarnation,
                ..
            } => {
                let live = slot(&mut self.live, entity.0 as usize);
                if let Some((other_node, other_inc)) = live.first().copied() {
                    live.push((*node, *incarnation));
                    return v(
                        Outcome::AtMostOne,
                        format!(
                            "entity {entity} started as incarnation {incarnation} on node {node} while incarnation {other_inc} is alive on node {other_node}"
                        ),
                    );
                }
                live.push((*node, *incarnation));
            }
            TraceEvent::EntityStopped {
                entity,
                incarnation,
                ..
            } => {
                let live = slot(&mut self.live, entity.0 as usize);
                live.retain(|(_, i)| i != incarnation);
            }
            TraceEvent::NodeDown { node, .. } => {
                for l in &mut self.live {
                    l.retain(|(n, _)| n != node);
                }
                for h in &mut self.hosts {
                    h.retain(|n| n != node);
                }
            }
            TraceEvent::ShardHosted { shard, node } => {
                let hosts = slot(&mut self.hosts, shard.0 as usize);
                if let Some(other) = hosts.iter().find(|n| *n != node).copied() {
                    hosts.push(*node);
                    return v(
                        Outcome::AtMostOne,
                        format!(
                            "shard {shard} hosted on node {node} while node {other} still hosts it"
                        ),
                    );
                }
                if !hosts.contains(node) {
                    hosts.push(*node);
                }
            }
            TraceEvent::ShardUnhosted { shard, node } => {
                slot(&mut self.hosts, shard.0 as usize).retain(|n| n != node);
            }
            TraceEvent::Send {
                sender,
                entity,
                seq,
                ..
            } => self.on_send(*sender, *entity, *seq),
            TraceEvent::Deliver {
                sender,
                entity,
                seq,
                node,
                incarnation,
            } => return self.on_deliver(t, *sender, *entity, *seq, *node, *incarnation),
            _ => {}
        }
        None
    }

    /// A [`TraceEvent::Send`]: what [`Checker::on_event`] does with it, as a direct call (the
    /// simulator's hot path).
    #[inline]
    pub fn on_send(&mut self, sender: SenderId, entity: EntityId, seq: u64) {
        let p = self.pair(sender, entity);
        p.sent_max = p.sent_max.max(seq);
    }

    /// A [`TraceEvent::Deliver`]: what [`Checker::on_event`] does with it, as a direct call.
    pub fn on_deliver(
        &mut self,
        t: Instant,
        sender: SenderId,
        entity: EntityId,
        seq: u64,
        node: NodeId,
        incarnation: u64,
    ) -> Option<Violation> {
        let v = |invariant, detail: String| {
            Some(Violation {
                invariant,
                t,
                detail,
            })
        };
        let live_here = self
            .live
            .get(entity.0 as usize)
            .is_some_and(|l| l.iter().any(|(n, i)| *n == node && *i == incarnation));
        if !live_here {
            return v(
                Outcome::NoDuplicate,
                format!(
                    "{sender}→{entity} seq {seq} delivered on node {node} to incarnation {incarnation}, which is not a live incarnation of {entity}"
                ),
            );
        }
        let p = self.pair(sender, entity);
        if seq == 0 || seq > p.sent_max {
            return v(
                Outcome::NoDuplicate,
                format!(
                    "{sender}→{entity} seq {seq} delivered but never sent (sent up to {})",
                    p.sent_max
                ),
            );
        }
        if p.was_delivered(seq) {
            return v(
                Outcome::NoDuplicate,
                format!("{sender}→{entity} seq {seq} delivered twice (now on node {node}, incarnation {incarnation})"),
            );
        }
        let last = p.last_delivered;
        p.mark(seq);
        if seq < last {
            return v(
                Outcome::PerSenderOrder,
                format!(
                    "{sender}→{entity} seq {seq} delivered after seq {last} (node {node}, incarnation {incarnation})"
                ),
            );
        }
        p.last_delivered = seq;
        None
    }

    /// Live incarnations of `entity`.
    pub fn live_incarnations(&self, entity: EntityId) -> &[(NodeId, u64)] {
        self.live
            .get(entity.0 as usize)
            .map(|v| v.as_slice())
            .unwrap_or(&[])
    }

    /// Nodes hosting `shard`.
    pub fn hosts(&self, shard: ShardId) -> &[NodeId] {
        self.hosts
            .get(shard.0 as usize)
            .map(|v| v.as_slice())
            .unwrap_or(&[])
    }
}

/// A trace file that could not be read.
#[derive(Debug)]
pub struct TraceFileError {
    /// 1-based line.
    pub line: usize,
    /// The field at fault, if one.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for TraceFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}", self.line)?;
        if let Some(fl) = &self.field {
            write!(f, ": field `{fl}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Parse one trace line into the events the checker needs (others are skipped: `None`).
pub fn parse_trace_line(
    line: &str,
    lineno: usize,
) -> Result<Option<(Instant, TraceEvent)>, TraceFileError> {
    use crate::protocol::StopReason;
    let err = |field: &str, message: String| TraceFileError {
        line: lineno,
        field: Some(field.to_string()),
        message,
    };
    let v: serde_json::Value = serde_json::from_str(line).map_err(|e| TraceFileError {
        line: lineno,
        field: None,
        message: format!("not JSON: {e}"),
    })?;
    let t = v
        .get("t")
        .and_then(|x| x.as_u64())
        .ok_or_else(|| err("t", "missing or not an integer".into()))?;
    let ev = v
        .get("ev")
        .and_then(|x| x.as_str())
        .ok_or_else(|| err("ev", "missing or not a string".into()))?;
    let num = |k: &str| {
        v.get(k)
            .and_then(|x| x.as_u64())
            .ok_or_else(|| err(k, "missing or not an integer".into()))
    };
    let id = |k: &str, prefix: &str| -> Result<u32, TraceFileError> {
        let s = v
            .get(k)
            .and_then(|x| x.as_str())
            .ok_or_else(|| err(k, "missing or not a string".into()))?;
        s.strip_prefix(prefix)
            .and_then(|x| x.parse().ok())
            .ok_or_else(|| {
                err(
                    k,
                    format!("`{s}` is not an id of the form {prefix}<number>"),
                )
            })
    };
    let node = |k: &str| num(k).map(|n| NodeId(n as u32));
    let e = match ev {
        "entity_started" => TraceEvent::EntityStarted {
            entity: EntityId(id("entity", "e")?),
            shard: ShardId(id("shard", "")?),
            node: node("node")?,
            incarnation: num("incarnation")?,
        },
        "entity_stopped" => TraceEvent::EntityStopped {
            entity: EntityId(id("entity", "e")?),
            node: node("node")?,
            incarnation: num("incarnation")?,
            reason: StopReason::HandOff,
        },
        "node_down" => TraceEvent::NodeDown {
            node: node("node")?,
            incarnation: num("incarnation")? as u32,
            reason: String::new(),
        },
        "shard_hosted" => TraceEvent::ShardHosted {
            shard: ShardId(id("shard", "")?),
            node: node("node")?,
        },
        "shard_unhosted" => TraceEvent::ShardUnhosted {
            shard: ShardId(id("shard", "")?),
            node: node("node")?,
        },
        "send" => TraceEvent::Send {
            sender: SenderId(id("sender", "c")?),
            entity: EntityId(id("entity", "e")?),
            seq: num("seq")?,
            node: node("node")?,
        },
        "deliver" => TraceEvent::Deliver {
            sender: SenderId(id("sender", "c")?),
            entity: EntityId(id("entity", "e")?),
            seq: num("seq")?,
            node: node("node")?,
            incarnation: num("incarnation")?,
        },
        _ => return Ok(None),
    };
    Ok(Some((Instant(t), e)))
}

/// Re-check a whole JSON Lines trace from its text alone. Returns the first violation.
pub fn recheck(text: &str) -> Result<Option<Violation>, TraceFileError> {
    let mut c = Checker::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if let Some((t, ev)) = parse_trace_line(line, i + 1)? {
            if let Some(v) = c.on_event(t, &ev) {
                return Ok(Some(v));
            }
        }
    }
    Ok(None)
}

/// Re-check a trace file; errors name the file and line.
pub fn recheck_file(path: &std::path::Path) -> Result<Option<Violation>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    recheck(&text).map_err(|e| format!("{}:{e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(e: u32, node: u32, inc: u64) -> TraceEvent {
        TraceEvent::EntityStarted {
            entity: EntityId(e),
            shard: ShardId(0),
            node: NodeId(node),
            incarnation: inc,
        }
    }
    fn send(seq: u64) -> TraceEvent {
        TraceEvent::Send {
            sender: SenderId(0),
            entity: EntityId(1),
            seq,
            node: NodeId(0),
        }
    }
    fn deliver(seq: u64) -> TraceEvent {
        TraceEvent::Deliver {
            sender: SenderId(0),
            entity: EntityId(1),
            seq,
            node: NodeId(0),
            incarnation: 1,
        }
    }

    #[test]
    fn two_live_incarnations_break_at_most_one() {
        let mut c = Checker::new();
        assert!(c.on_event(Instant(0), &started(1, 0, 1)).is_none());
        let v = c.on_event(Instant(5), &started(1, 1, 2)).unwrap();
        assert_eq!(v.invariant, Outcome::AtMostOne);
    }

    #[test]
    fn node_down_kills_entities() {
        let mut c = Checker::new();
        c.on_event(Instant(0), &started(1, 0, 1));
        c.on_event(
            Instant(1),
            &TraceEvent::NodeDown {
                node: NodeId(0),
                incarnation: 1,
                reason: "crash".into(),
            },
        );
        assert!(c.on_event(Instant(2), &started(1, 1, 2)).is_none());
    }

    #[test]
    fn order_duplicate_and_unsent() {
        let mut c = Checker::new();
        c.on_event(Instant(0), &started(1, 0, 1));
        for s in 1..=3 {
            c.on_event(Instant(0), &send(s));
        }
        assert!(c.on_event(Instant(1), &deliver(2)).is_none());
        assert_eq!(
            c.on_event(Instant(2), &deliver(1)).unwrap().invariant,
            Outcome::PerSenderOrder
        );
        let mut c2 = Checker::new();
        c2.on_event(Instant(0), &started(1, 0, 1));
        c2.on_event(Instant(0), &send(1));
        assert!(c2.on_event(Instant(1), &deliver(1)).is_none());
        assert_eq!(
            c2.on_event(Instant(2), &deliver(1)).unwrap().invariant,
            Outcome::NoDuplicate
        );
        assert_eq!(
            c2.on_event(Instant(2), &deliver(9)).unwrap().invariant,
            Outcome::NoDuplicate
        );
    }

    #[test]
    fn long_pairs_past_the_inline_bitmap() {
        // Seqs from 64 on live in the overflow bitmap: duplicates and reorders are still told
        // apart there, and across the boundary.
        let mut c = Checker::new();
        c.on_event(Instant(0), &started(1, 0, 1));
        for s in 1..=300 {
            c.on_event(Instant(0), &send(s));
        }
        for s in (1..=200).filter(|s| s % 7 != 0) {
            assert!(c.on_event(Instant(1), &deliver(s)).is_none(), "seq {s}");
        }
        for (seq, inv) in [
            (130, Outcome::NoDuplicate),
            (62, Outcome::NoDuplicate),
            (64, Outcome::NoDuplicate),
            (140, Outcome::PerSenderOrder),
            (63 - 7, Outcome::PerSenderOrder),
        ] {
            let mut c2 = Checker::new();
            c2.on_event(Instant(0), &started(1, 0, 1));
            for s in 1..=300 {
                c2.on_event(Instant(0), &send(s));
            }
            for s in (1..=200).filter(|s| s % 7 != 0) {
                c2.on_event(Instant(1), &deliver(s));
            }
            let v = c2.on_event(Instant(2), &deliver(seq)).unwrap();
            assert_eq!(v.invariant, inv, "seq {seq}");
        }
        assert!(c.on_event(Instant(3), &deliver(250)).is_none());
    }

    #[test]
    fn recheck_reads_json_lines() {
        let text = format!(
            "{}\n{}\n",
            started(3, 0, 1).to_json(Instant(1)),
            started(3, 1, 2).to_json(Instant(2))
        );
        let v = recheck(&text).unwrap().unwrap();
        assert_eq!(v.invariant, Outcome::AtMostOne);
        let e = recheck("{\"t\":1,\"ev\":\"deliver\",\"sender\":\"x\"}").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("sender"));
    }
}
