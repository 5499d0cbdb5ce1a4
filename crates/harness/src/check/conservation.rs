//! **Message conservation**, every run: at the end, every user message sent
//! was delivered, dropped with a named reason, or is still on its way, each exactly once.
//! The messages on their way are written to the trace ([`TraceEvent::Pending`], one line per
//! message, just before [`TraceEvent::RunEnd`]), so `check-trace` re-checks the balance from
//! the file alone.
//!
//! - a message that is none of the three vanished (kind `message-lost`), in any run;
//! - a message accounted twice (dropped after it was delivered or dropped, listed as pending
//!   after either) is reported the same way: the balance hides a loss behind it;
//! - with a liveness phase, a message still pending at the end that was sent before the
//!   liveness window closed is stuck (kind `liveness`; Akka's I4, §11.1: a buffered message
//!   is eventually delivered or dropped). Messages sent after the window closed may still be
//!   on the network legitimately.
//!
//! Cost: deliveries are only counted (the safety rule's bitmap says which were delivered);
//! a drop is one set insertion; the per-message balance walks the sends once, at the end.

use super::safety::Safety;
use super::{Invariant, Violation};
use crate::trace::{Place, Subject};
use shardsim_core::ids::{EntityId, NodeId, SenderId};
use shardsim_core::protocol::DropReason;
use shardsim_core::time::Instant;
use std::collections::{BTreeMap, BTreeSet};

type Key = (SenderId, EntityId, u64);

/// The state of the conservation rule.
#[derive(Debug, Default)]
pub(super) struct Conservation {
    /// Whether the run has a liveness phase (its pending messages must be settled).
    pub(super) liveness: bool,
    /// The liveness window's end (µs), once the phase began.
    window_to: Option<u64>,
    /// (sender, entity) → the first seq sent after the liveness window closed.
    late: BTreeMap<(SenderId, EntityId), u64>,
    /// Drops, by reason.
    drops: BTreeMap<DropReason, u64>,
    /// Every dropped message.
    dropped: BTreeSet<Key>,
    /// The messages pending at the end, with where they are.
    pending: BTreeMap<Key, (NodeId, Place)>,
    /// Messages accounted more than once (how many, and the first few).
    twice: u64,
    twice_first: Vec<(Key, String)>,
}

fn subject(k: &Key) -> Subject {
    Subject::Message {
        sender: k.0,
        entity: k.1,
        seq: k.2,
    }
}

fn msg(k: &Key) -> String {
    format!("{}→{} seq {}", k.0, k.1, k.2)
}

fn reason_name(r: DropReason) -> String {
    serde_json::to_value(r)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn place_text(node: NodeId, place: Place) -> String {
    match place {
        Place::Network => format!("on the network to node {node}"),
        Place::Local => format!("between the actors of node {node}"),
        Place::Deferred => format!("deferred by the pause of node {node}"),
        Place::RegionBuffer => format!("in the region's buffer on node {node}"),
        Place::ShardBuffer => format!("in a Shard's buffer on node {node}"),
    }
}

impl Conservation {
    /// The liveness phase's window.
    pub(super) fn on_liveness_phase(&mut self, to: Instant) {
        self.window_to = Some(to.0);
    }

    /// A send: after the liveness window closed, the pair's first late seq.
    #[inline]
    pub(super) fn on_send(&mut self, t: Instant, sender: SenderId, entity: EntityId, seq: u64) {
        if let Some(to) = self.window_to {
            if t.0 > to {
                self.late.entry((sender, entity)).or_insert(seq);
            }
        }
    }

    fn accounted_twice(&mut self, k: &Key, how: &str) {
        self.twice += 1;
        if self.twice_first.len() < 3 {
            self.twice_first.push((*k, format!("{} {how}", msg(k))));
        }
    }

    /// A drop with its reason.
    pub(super) fn on_drop(&mut self, safety: &Safety, k: Key, reason: DropReason) {
        *self.drops.entry(reason).or_default() += 1;
        if safety.was_delivered(k.0, k.1, k.2) {
            self.accounted_twice(&k, &format!("dropped ({reason:?}) after it was delivered"));
        } else if !self.dropped.insert(k) {
            self.accounted_twice(&k, &format!("dropped twice (now {reason:?})"));
        }
    }

    /// A message listed as pending at the end.
    pub(super) fn on_pending(&mut self, safety: &Safety, k: Key, node: NodeId, place: Place) {
        if safety.was_delivered(k.0, k.1, k.2) {
            self.accounted_twice(&k, "pending at the end after it was delivered");
        } else if self.dropped.contains(&k) {
            self.accounted_twice(&k, "pending at the end after it was dropped");
        } else if self.pending.insert(k, (node, place)).is_some() {
            self.accounted_twice(&k, "listed twice as pending");
        }
    }

    /// The balance at the end: `sent`, `delivered` are the checker's counts, `in_flight` the
    /// count [`crate::trace::TraceEvent::RunEnd`] carries.
    pub(super) fn balance(
        &self,
        t: Instant,
        safety: &Safety,
        sent: u64,
        delivered: u64,
        in_flight: u64,
    ) -> Option<Violation> {
        let dropped: u64 = self.drops.values().sum();
        let reasons = if self.drops.is_empty() {
            String::new()
        } else {
            let by: Vec<String> = self
                .drops
                .iter()
                .map(|(r, n)| format!("{n} {}", reason_name(*r)))
                .collect();
            format!(" ({})", by.join(", "))
        };
        let summary = format!(
            "{sent} messages sent; {delivered} delivered, {dropped} dropped with a reason{reasons}, {} still on their way",
            self.pending.len()
        );
        if in_flight != self.pending.len() as u64 {
            return Some(Violation {
                invariant: Invariant::MessageLost,
                t,
                detail: format!(
                    "{summary}: the run's end counts {in_flight} on their way but lists {}",
                    self.pending.len()
                ),
                about: Vec::new(),
            });
        }
        if self.twice == 0 && delivered + dropped + in_flight == sent {
            // Each message accounted at most once, and as many as were sent: all of them.
            return None;
        }
        // Name the vanished ones: every seq 1..=max of a pair was sent (the workload counts
        // per pair), so the walk is over the sends, once, and only when the balance fails.
        let mut vanished = 0u64;
        let mut first: Vec<Key> = Vec::new();
        for (s, e, max) in safety.sent_pairs() {
            for seq in 1..=max {
                let k = (s, e, seq);
                if !safety.was_delivered(s, e, seq)
                    && !self.dropped.contains(&k)
                    && !self.pending.contains_key(&k)
                {
                    vanished += 1;
                    if first.len() < 3 {
                        first.push(k);
                    }
                }
            }
        }
        let mut parts = Vec::new();
        if vanished > 0 {
            parts.push(format!(
                "{vanished} vanished without a reason ({}{})",
                first.iter().map(msg).collect::<Vec<_>>().join(", "),
                if vanished > 3 { ", ..." } else { "" }
            ));
        }
        if self.twice > 0 {
            parts.push(format!(
                "{} accounted twice ({}{})",
                self.twice,
                self.twice_first
                    .iter()
                    .map(|(_, s)| s.as_str())
                    .collect::<Vec<_>>()
                    .join("; "),
                if self.twice > 3 { "; ..." } else { "" }
            ));
        }
        if parts.is_empty() {
            // The per-message walk agrees but the counts do not (a delivery the safety rule
            // did not record): report the difference as the counts show it.
            let accounted = delivered + dropped + in_flight;
            parts.push(format!(
                "{} {}",
                sent.abs_diff(accounted),
                if accounted < sent {
                    "vanished without a reason"
                } else {
                    "accounted twice"
                }
            ));
        }
        Some(Violation {
            invariant: Invariant::MessageLost,
            t,
            detail: format!("{summary}: {}", parts.join("; ")),
            about: first
                .iter()
                .chain(self.twice_first.iter().map(|(k, _)| k))
                .map(subject)
                .collect(),
        })
    }

    /// With a liveness phase: a message pending at the end that was sent before the window
    /// closed is stuck.
    pub(super) fn stuck(&self, t: Instant) -> Option<Violation> {
        if !self.liveness {
            return None;
        }
        let stuck: Vec<(&Key, &(NodeId, Place))> = self
            .pending
            .iter()
            .filter(|((s, e, seq), _)| self.late.get(&(*s, *e)).is_none_or(|late| seq < late))
            .collect();
        if stuck.is_empty() {
            return None;
        }
        let mut parts: Vec<String> = stuck
            .iter()
            .take(3)
            .map(|(k, (node, place))| {
                format!(
                    "{} is still {} at the end",
                    msg(k),
                    place_text(*node, *place)
                )
            })
            .collect();
        if stuck.len() > 3 {
            parts.push(format!("and {} more", stuck.len() - 3));
        }
        Some(Violation {
            invariant: Invariant::Liveness,
            t,
            detail: format!(
                "{} (sent before the liveness window closed, neither delivered nor dropped)",
                parts.join("; ")
            ),
            about: stuck.iter().take(3).map(|(k, _)| subject(k)).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::check::{Checker, Invariant};
    use crate::trace::{Place, TraceEvent};
    use shardsim_core::ids::{EntityId, NodeId, SenderId, ShardId};
    use shardsim_core::protocol::DropReason;
    use shardsim_core::time::Instant;

    use crate::check::tests::{deliver, send};
    fn drop(seq: u64) -> TraceEvent {
        TraceEvent::Drop {
            sender: SenderId(0),
            entity: EntityId(1),
            seq,
            reason: DropReason::BufferFull,
            node: NodeId(0),
        }
    }
    fn pending(seq: u64) -> TraceEvent {
        TraceEvent::Pending {
            sender: SenderId(0),
            entity: EntityId(1),
            seq,
            node: NodeId(2),
            place: Place::RegionBuffer,
        }
    }
    fn end(in_flight: u64) -> TraceEvent {
        TraceEvent::RunEnd { in_flight }
    }
    /// Four sends: 1 delivered, 2 dropped, then `rest` for 3 and 4; the verdict at the end.
    fn run(liveness: bool, rest: &[TraceEvent]) -> Option<crate::check::Violation> {
        let mut c = Checker::new();
        c.on_event(
            Instant(0),
            &TraceEvent::CheckConfig {
                single_writer: false,
                liveness,
                handoff_timeout_ms: 1,
            },
        );
        c.on_event(
            Instant(0),
            &TraceEvent::EntityStarted {
                entity: EntityId(1),
                shard: ShardId(0),
                node: NodeId(0),
                incarnation: 1,
            },
        );
        if liveness {
            // A coordinator runs; the window opens after the first three sends.
            let coordinator = TraceEvent::CoordinatorStarted {
                node: NodeId(0),
                incarnation: 1,
                generation: 1,
                replayed: 0,
            };
            c.on_event(Instant(0), &coordinator);
            let w = TraceEvent::LivenessPhase {
                from: Instant(5),
                to: Instant(20),
            };
            c.on_event(Instant(1), &w);
        }
        for s in 1..=3 {
            c.on_event(Instant(2), &send(s));
        }
        c.on_event(Instant(30), &send(4)); // after the liveness window closed
        assert!(c.on_event(Instant(31), &deliver(1)).is_none());
        assert!(c.on_event(Instant(31), &drop(2)).is_none());
        for e in rest {
            if let Some(v) = c.on_event(Instant(40), e) {
                return Some(v);
            }
        }
        None
    }

    #[test]
    fn every_message_is_delivered_dropped_or_pending_once() {
        // Balanced: 3 delivered, 4 pending.
        assert_eq!(run(false, &[deliver(3), pending(4), end(1)]), None);
        // Seq 3 vanished: named, with the drops by reason.
        let v = run(false, &[pending(4), end(1)]).unwrap();
        assert_eq!(v.invariant, Invariant::MessageLost);
        assert!(
            v.detail.contains("1 dropped with a reason (1 buffer_full)")
                && v.detail
                    .ends_with("1 vanished without a reason (c0→e1 seq 3)"),
            "{}",
            v.detail
        );
        // A loss hidden by a message accounted twice: the counts balance, the messages do not.
        let v = run(false, &[drop(1), pending(4), end(1)]).unwrap();
        assert_eq!(v.invariant, Invariant::MessageLost);
        assert!(
            v.detail.contains("c0→e1 seq 3") && v.detail.contains("seq 1 dropped"),
            "{}",
            v.detail
        );
        // The end's count must match the lines.
        let v = run(false, &[deliver(3), pending(4), end(2)]).unwrap();
        assert!(
            v.detail.contains("counts 2 on their way but lists 1"),
            "{}",
            v.detail
        );
    }

    #[test]
    fn with_liveness_a_message_sent_before_the_window_closed_must_not_be_pending() {
        // Seq 4, sent after the window closed, may still be on its way; seq 3, sent before
        // the window opened (the liveness rule's own per-message watch misses it), may not.
        assert_eq!(run(true, &[deliver(3), pending(4), end(1)]), None);
        let v = run(true, &[pending(3), pending(4), end(2)]).unwrap();
        assert_eq!(v.invariant, Invariant::Liveness);
        assert!(
            v.detail
                .starts_with("c0→e1 seq 3 is still in the region's buffer on node 2 at the end"),
            "{}",
            v.detail
        );
        // Without a liveness phase it is only on its way.
        assert_eq!(run(false, &[pending(3), pending(4), end(2)]), None);
    }
}

#[cfg(test)]
mod file_tests {
    #[test]
    fn a_pending_line_names_its_bad_field() {
        let line = r#"{"t":1,"ev":"pending","sender":"c0","entity":"e1","seq":2,"node":0,"place":"attic"}"#;
        let e = crate::check::recheck(line).unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (1, Some("place")), "{e}");
        let line = r#"{"t":1,"ev":"pending","sender":"c0","entity":"e1","node":0,"place":"local"}"#;
        let e = crate::check::recheck(line).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("seq"), "{e}");
    }
}
