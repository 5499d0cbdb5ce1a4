//! **Message conservation** (issue 17 item 1), every run: at the end, every user message sent
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
use crate::ids::{EntityId, NodeId, SenderId};
use crate::protocol::DropReason;
use crate::time::Instant;
use crate::trace::Place;
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
    twice_first: Vec<String>,
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
            self.twice_first.push(format!("{} {how}", msg(k)));
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
            });
        }
        let mut vanished = 0u64;
        let mut first: Vec<String> = Vec::new();
        for (s, e, max) in safety.sent_pairs() {
            for seq in 1..=max {
                let k = (s, e, seq);
                if !safety.was_delivered(s, e, seq)
                    && !self.dropped.contains(&k)
                    && !self.pending.contains_key(&k)
                {
                    vanished += 1;
                    if first.len() < 3 {
                        first.push(msg(&k));
                    }
                }
            }
        }
        if vanished == 0 && self.twice == 0 && delivered + dropped + in_flight == sent {
            return None;
        }
        let mut parts = Vec::new();
        if vanished > 0 {
            parts.push(format!(
                "{vanished} vanished without a reason ({}{})",
                first.join(", "),
                if vanished > 3 { ", ..." } else { "" }
            ));
        }
        if self.twice > 0 {
            parts.push(format!(
                "{} accounted twice ({}{})",
                self.twice,
                self.twice_first.join("; "),
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
        })
    }
}
