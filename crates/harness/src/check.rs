//! The invariant checker: one [`Checker`] applies every rule to the [`TraceEvent`]s the trace
//! writes, after every event. It consumes nothing else, so re-checking a trace file
//! ([`recheck_file`]) reaches the same verdict as the live run. Its configuration (which rules
//! are on) is itself an event, [`TraceEvent::CheckConfig`], recorded first.
//!
//! - `safety`: at-most-one, per-sender-order, no-duplicate;
//! - `oracles`: journal-single-writer, allocation-to-downed;
//! - `liveness`: liveness, judged at [`TraceEvent::RunEnd`];
//! - `graceful`: graceful-leave-loss, for drops on a graceful leave;
//! - `coordinators`: one-coordinator, when a coordinator starts;
//! - `hosting`: hosting-ack, when an acknowledged shard's Shard stops;
//! - `conservation`: message-lost, at [`TraceEvent::RunEnd`]: every message sent was
//!   delivered, dropped with a named reason, or is still on its way ([`TraceEvent::Pending`]),
//!   each once; with a liveness phase, none sent before the window closed is still pending.
//! - `quiescence`: rebalance-quiescence, at every rebalance round;

mod conservation;
mod coordinators;
mod graceful;
mod hosting;
mod liveness;
mod oracles;
mod quiescence;
mod safety;

use crate::trace::{Subject, TraceEvent};
use serde::{Deserialize, Serialize};
use shardsim_core::ids::{EntityId, NodeId, SenderId, ShardId};
use shardsim_core::time::Instant;
use std::fmt;

/// The invariants, by name (`none`: no violation; a scenario's expected outcome).
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Invariant {
    /// No violation.
    #[default]
    None,
    /// Two live incarnations of one entity, or one shard hosted twice.
    AtMostOne,
    /// A (sender, entity) pair saw its seqs out of order.
    PerSenderOrder,
    /// A message delivered twice, never sent, or to the wrong entity.
    NoDuplicate,
    /// Two coordinators wrote to the journal: a write from a second writer while the first
    /// was still running (§12 B5, B6).
    JournalSingleWriter,
    /// A shard allocated to a region the coordinator knew was downed or removed (§12 B10).
    AllocationToDowned,
    /// Something was still pending after every fault healed and the quiet period ended.
    Liveness,
    /// A role broke a rule of its own state (`Region::check_invariants`,
    /// `Coordinator::check_invariants`), checked after every input it handles.
    RoleInvariant,
    /// At the end of the run, a user message was neither delivered, nor dropped with a named
    /// reason, nor still on its way: it vanished (no silent loss).
    MessageLost,
    /// A Shard threw an `IllegalStateException` (or an invalid actor name) that the modelled
    /// Akka version has as a bug (§12 B33, B34, B35): every entity of the shard is killed.
    ShardIllegalState,
    /// A region's graceful shutdown gave up at `GracefulShutdownTimeout` (SR:1026-1033,
    /// "Graceful shutdown of shard region timed out"): what it still hosted or buffered was
    /// stopped or dropped without a hand-off (§12 B17, B18).
    GracefulShutdownTimeout,
    /// A node leaving gracefully lost a message the way a crash does (its region stopped with
    /// messages left, or a message was addressed to it after it stopped), with no crash,
    /// down, cut or journal fault to explain it (`check/graceful.rs`).
    GracefulLeaveLoss,
    /// Two coordinators ran at once on nodes that could reach each other over the network,
    /// outside the windows Akka documents (take-over after removal, hand-over on a leave;
    /// `check/coordinators.rs`).
    OneCoordinator,
    /// A region that acknowledged a shard with `ShardStarted` stopped hosting it without a
    /// `HandOff`, while it and its node stayed up (`check/hosting.rs`).
    HostingAck,
    /// A calm cluster (no membership, region or allocation change, every member Up on one app
    /// version) kept rebalancing: a rebalance round did not lower Σ shards² over the regions,
    /// as every round of Akka's algorithms does (§10.3, §10.4; `check/quiescence.rs`).
    RebalanceQuiescence,
}

impl Invariant {
    /// The kebab-case name used in files and output.
    pub fn name(self) -> &'static str {
        match self {
            Invariant::None => "none",
            Invariant::AtMostOne => "at-most-one",
            Invariant::PerSenderOrder => "per-sender-order",
            Invariant::NoDuplicate => "no-duplicate",
            Invariant::JournalSingleWriter => "journal-single-writer",
            Invariant::AllocationToDowned => "allocation-to-downed",
            Invariant::Liveness => "liveness",
            Invariant::RoleInvariant => "role-invariant",
            Invariant::MessageLost => "message-lost",
            Invariant::ShardIllegalState => "shard-illegal-state",
            Invariant::GracefulShutdownTimeout => "graceful-shutdown-timeout",
            Invariant::GracefulLeaveLoss => "graceful-leave-loss",
            Invariant::OneCoordinator => "one-coordinator",
            Invariant::HostingAck => "hosting-ack",
            Invariant::RebalanceQuiescence => "rebalance-quiescence",
        }
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A broken invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which invariant.
    pub invariant: Invariant,
    /// When (simulated).
    pub t: Instant,
    /// What happened, for a person.
    pub detail: String,
    /// What it names, typed, in the detail's order (for tools: `explain` follows these).
    pub about: Vec<Subject>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at t={}: {}", self.invariant, self.t, self.detail)
    }
}

/// Every rule, over one stream of events. Until a [`TraceEvent::CheckConfig`] turns them on,
/// journal-single-writer and liveness are off.
#[derive(Debug, Default)]
pub struct Checker {
    /// User messages sent and delivered (by an entity), for the message-lost rule at
    /// [`TraceEvent::RunEnd`] (drops are counted by reason in `conservation`).
    sent: u64,
    delivered: u64,
    safety: safety::Safety,
    conservation: conservation::Conservation,
    one_coordinator: coordinators::OneCoordinator,
    hosting: hosting::HostingAck,
    oracles: oracles::Oracles,
    liveness: liveness::Liveness,
    graceful: graceful::Graceful,
    quiescence: quiescence::Quiescence,
    /// shard → the entities its remember-entities store holds, from the store's writes
    /// ([`TraceEvent::StoreWrite`]): for remembered-entity liveness at the end.
    remembered: std::collections::BTreeMap<ShardId, std::collections::BTreeSet<EntityId>>,
    /// With remember-entities on ([`TraceEvent::RememberConfig`]): how long (µs) a remembered
    /// entity may be down after its last stop, and each entity's last stop.
    remember_slack_us: Option<u64>,
    last_stop: Vec<u64>,
}

impl Checker {
    /// A fresh checker.
    pub fn new() -> Self {
        Checker::default()
    }

    /// Time has moved on to `t` (a line of a trace file the checker does not read): the rules
    /// judged once an instant is over (hosting-ack) judge the instants before `t`, as the live
    /// run does at its next event.
    pub fn advance(&mut self, t: Instant) -> Option<Violation> {
        if self.hosting.waiting() {
            return self.hosting.judge(Some(t));
        }
        None
    }

    /// Apply one event; the first violation is returned.
    pub fn on_event(&mut self, t: Instant, ev: &TraceEvent) -> Option<Violation> {
        if self.hosting.waiting() {
            let until = match ev {
                TraceEvent::RunEnd { .. } => None,
                _ => Some(t),
            };
            if let Some(v) = self.hosting.judge(until) {
                return Some(v);
            }
        }
        self.hosting.on_event(t, ev);
        match ev {
            TraceEvent::CheckConfig {
                single_writer,
                liveness,
                handoff_timeout_ms,
            } => {
                self.oracles.single_writer = *single_writer;
                self.liveness.on = *liveness;
                self.conservation.liveness = *liveness;
                self.liveness.handoff_timeout_us = handoff_timeout_ms.saturating_mul(1000);
                None
            }
            TraceEvent::Send {
                sender,
                entity,
                seq,
                shard,
                ..
            } => {
                self.on_send(t, *sender, *entity, *seq, *shard);
                None
            }
            TraceEvent::Deliver {
                sender,
                entity,
                seq,
                node,
                incarnation,
            } => self.on_deliver(t, *sender, *entity, *seq, *node, *incarnation),
            TraceEvent::Drop {
                sender,
                entity,
                seq,
                reason,
                ..
            } => {
                self.conservation
                    .on_drop(&self.safety, (*sender, *entity, *seq), *reason);
                self.safety
                    .on_event(t, ev)
                    .or_else(|| self.oracles.on_event(t, ev))
                    .or_else(|| self.liveness.on_event(t, ev))
                    .or_else(|| self.graceful.on_event(t, ev))
            }
            TraceEvent::Pending {
                sender,
                entity,
                seq,
                node,
                place,
            } => {
                self.conservation
                    .on_pending(&self.safety, (*sender, *entity, *seq), *node, *place);
                None
            }
            TraceEvent::LivenessPhase { to, .. } => {
                self.conservation.on_liveness_phase(*to);
                self.one_coordinator.on_event(t, ev);
                self.safety
                    .on_event(t, ev)
                    .or_else(|| self.oracles.on_event(t, ev))
                    .or_else(|| self.liveness.on_event(t, ev))
                    .or_else(|| self.graceful.on_event(t, ev))
            }
            TraceEvent::RunEnd { in_flight } => {
                if let Some(v) = self.conservation.balance(
                    t,
                    &self.safety,
                    self.sent,
                    self.delivered,
                    *in_flight,
                ) {
                    return Some(v);
                }
                self.graceful
                    .on_event(t, ev)
                    .or_else(|| self.liveness.on_event(t, ev))
                    .or_else(|| self.conservation.stuck(t))
                    .or_else(|| self.remembered_entities_run(t))
            }
            TraceEvent::RememberConfig { slack_ms } => {
                self.remember_slack_us = Some(slack_ms.saturating_mul(1000));
                None
            }
            TraceEvent::GracefulShutdownCheck => {
                self.oracles.graceful_in_time = true;
                None
            }
            TraceEvent::EntityStopped { entity, .. } if self.remember_slack_us.is_some() => {
                *safety::slot(&mut self.last_stop, entity.0 as usize) = t.0;
                self.safety.on_event(t, ev)
            }
            TraceEvent::StoreWrite {
                shard,
                started,
                stopped,
                ..
            } => {
                let set = self.remembered.entry(*shard).or_default();
                set.extend(started.iter().copied());
                for e in stopped {
                    set.remove(e);
                }
                None
            }
            TraceEvent::ShardFailed {
                node,
                shard,
                cause,
                illegal: true,
            } => Some(Violation {
                invariant: Invariant::ShardIllegalState,
                t,
                detail: format!(
                    "shard {shard} on node {node} threw: {cause}; the Shard restarts and every entity in it is killed"
                ),
                about: vec![Subject::Shard { shard: *shard }, Subject::Node { node: *node }],
            }),
            TraceEvent::RoleBreach {
                node,
                role,
                rule,
                detail,
            } => Some(Violation {
                invariant: Invariant::RoleInvariant,
                t,
                detail: format!("{role} on node {node}: {rule}: {detail}"),
                about: vec![Subject::Node { node: *node }],
            }),
            _ => self
                .safety
                .on_event(t, ev)
                .or_else(|| self.oracles.on_event(t, ev))
                .or_else(|| self.liveness.on_event(t, ev))
                .or_else(|| self.graceful.on_event(t, ev))
                .or_else(|| self.one_coordinator.on_event(t, ev))
                .or_else(|| self.quiescence.on_event(t, ev)),
        }
    }

    /// A [`TraceEvent::Send`]: what [`Checker::on_event`] does with it, as a direct call (the
    /// simulator's hot path).
    #[inline]
    pub fn on_send(
        &mut self,
        t: Instant,
        sender: SenderId,
        entity: EntityId,
        seq: u64,
        shard: ShardId,
    ) {
        self.sent += 1;
        self.safety.on_send(sender, entity, seq);
        self.conservation.on_send(t, sender, entity, seq);
        self.liveness.on_send(t, sender, entity, seq, shard);
    }

    /// A [`TraceEvent::Deliver`]: what [`Checker::on_event`] does with it, as a direct call.
    #[inline]
    pub fn on_deliver(
        &mut self,
        t: Instant,
        sender: SenderId,
        entity: EntityId,
        seq: u64,
        node: NodeId,
        incarnation: u64,
    ) -> Option<Violation> {
        self.delivered += 1;
        self.liveness.settled(sender, entity, seq);
        self.safety
            .on_deliver(t, sender, entity, seq, node, incarnation)
    }

    /// Remembered-entity liveness (§2.6): with the liveness rule on, at the end of
    /// the run every entity a remember store holds runs somewhere (its shard started again
    /// after every fault healed, and its starter started it).
    fn remembered_entities_run(&self, t: Instant) -> Option<Violation> {
        if !self.liveness.on {
            return None;
        }
        let slack = self.remember_slack_us.unwrap_or(0);
        for (shard, set) in &self.remembered {
            for e in set {
                let last_stop = self.last_stop.get(e.0 as usize).copied().unwrap_or(0);
                let recent = last_stop > 0 && last_stop.saturating_add(slack) > t.0;
                if !recent && self.safety.live_incarnations(*e).is_empty() {
                    return Some(Violation {
                        invariant: Invariant::Liveness,
                        t,
                        detail: format!(
                            "remembered entity {e} (shard {shard}) runs nowhere at the end of the run"
                        ),
                        about: vec![Subject::Entity { entity: *e }, Subject::Shard { shard: *shard }],
                    });
                }
            }
        }
        None
    }

    /// Live incarnations of `entity`.
    pub fn live_incarnations(&self, entity: EntityId) -> &[(NodeId, u64)] {
        self.safety.live_incarnations(entity)
    }

    /// Nodes hosting `shard`.
    pub fn hosts(&self, shard: ShardId) -> &[NodeId] {
        self.safety.hosts(shard)
    }
}

pub use crate::trace::{TraceFileError, TRACE_ID_BOUND};

/// Re-check a whole JSON Lines trace from its text alone. Returns the first violation. A
/// trace ends with its `run_end` line, or with the `violation` that stopped the run: a file
/// that ends otherwise was cut short, and is an error naming its last line.
pub fn recheck(text: &str) -> Result<Option<Violation>, TraceFileError> {
    let mut c = Checker::new();
    let mut last = (0, false);
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match crate::trace::read_line(line, i + 1)? {
            crate::trace::Line::Event(t, ev) => {
                last = (
                    i + 1,
                    matches!(ev, TraceEvent::RunEnd { .. } | TraceEvent::Violation { .. }),
                );
                if let TraceEvent::Send {
                    sender,
                    entity,
                    seq,
                    ..
                } = &ev
                {
                    // The workload numbers each pair's messages 1, 2, 3, ... in order, and
                    // message conservation walks those seqs, so a file's sends must follow
                    // that numbering.
                    let last = c.safety.sent_max(*sender, *entity);
                    if *seq != last + 1 {
                        return Err(TraceFileError {
                            line: i + 1,
                            field: Some("seq".into()),
                            message: format!(
                                "seq {seq} of {sender}→{entity} follows seq {last}: a pair's sends are numbered 1, 2, 3, ... in order"
                            ),
                        });
                    }
                }
                if let Some(v) = c.on_event(t, &ev) {
                    return Ok(Some(v));
                }
            }
            // A causal step line says that time moved on (a file written up to a violation
            // may end with such lines).
            crate::trace::Line::Step(s) => {
                if let Some(v) = c.advance(Instant(s.t)) {
                    return Ok(Some(v));
                }
            }
        }
    }
    match last {
        (_, true) => Ok(None),
        (line, false) => Err(TraceFileError {
            line: line.max(1),
            field: None,
            message: "the trace ends without its `run_end` or `violation` line: cut short?".into(),
        }),
    }
}

/// Re-check a trace file; errors name the file and line.
pub fn recheck_file(path: &std::path::Path) -> Result<Option<Violation>, String> {
    let text = crate::input::read_text(path).map_err(|e| match e.line() {
        Some(l) => format!("{}:{l}: {}", path.display(), e.message()),
        None => format!("{}: {}", path.display(), e.message()),
    })?;
    recheck(&text).map_err(|e| format!("{}:{e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Invariant as Outcome;

    fn started(e: u32, node: u32, inc: u64) -> TraceEvent {
        TraceEvent::EntityStarted {
            entity: EntityId(e),
            shard: ShardId(0),
            node: NodeId(node),
            incarnation: inc,
        }
    }
    pub(super) fn send(seq: u64) -> TraceEvent {
        TraceEvent::Send {
            sender: SenderId(0),
            entity: EntityId(1),
            seq,
            node: NodeId(0),
            shard: ShardId(0),
        }
    }
    pub(super) fn deliver(seq: u64) -> TraceEvent {
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

    /// A file's sends must be numbered 1, 2, 3, ... per pair, and its ids stay below
    /// [`TRACE_ID_BOUND`]: a line claiming seq u64::MAX or shard 4294967295 is an error naming
    /// the line and field, not a walk over 2^64 seqs or a table of 2^32 slots (the parsers
    /// fuzz test hung on the first before this rule).
    #[test]
    fn recheck_holds_sends_to_their_numbering_and_ids_to_a_bound() {
        let send = |seq: u64| {
            format!(
            "{{\"t\":1,\"ev\":\"send\",\"sender\":\"c1\",\"entity\":\"e9\",\"seq\":{seq},\"node\":0,\"shard\":\"8\"}}\n"
        )
        };
        let pending = |seq: u64| {
            format!(
            "{{\"t\":2,\"ev\":\"pending\",\"sender\":\"c1\",\"entity\":\"e9\",\"seq\":{seq},\"node\":0,\"place\":\"network\"}}\n"
        )
        };
        let end = "{\"t\":2,\"ev\":\"run_end\",\"in_flight\":2}\n";
        let ok = send(1) + &send(2) + &pending(1) + &pending(2) + end;
        assert!(recheck(&ok).unwrap().is_none());
        // Without its end the file was cut short.
        let e = recheck(&(send(1) + &send(2))).unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (2, None), "{e}");
        for bad in [send(1) + &send(u64::MAX), send(2), send(1) + &send(1)] {
            let e = recheck(&bad).unwrap_err();
            assert_eq!(e.field.as_deref(), Some("seq"), "{e}");
            assert_eq!(e.line, bad.lines().count(), "{e}");
        }
        let huge = send(1).replace("\"shard\":\"8\"", "\"shard\":\"4294967295\"");
        let e = recheck(&huge).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("shard"), "{e}");
        assert!(e.message.contains("bound"), "{e}");
    }

    #[test]
    fn checked_events_round_trip_through_json() {
        use shardsim_core::ids::{NodeInc, RegionRef};
        use shardsim_core::protocol::{
            CoordinatorEvent, DropReason, Member, MemberStatus, StopReason,
        };
        let region = RegionRef {
            node: NodeId(2),
            inc: NodeInc(7),
        };
        let events = vec![
            TraceEvent::CheckConfig {
                single_writer: true,
                liveness: true,
                handoff_timeout_ms: 60_000,
            },
            TraceEvent::GracefulShutdownCheck,
            TraceEvent::NodeUp {
                node: NodeId(1),
                incarnation: 3,
            },
            TraceEvent::NodeDown {
                node: NodeId(1),
                incarnation: 3,
                reason: "crash".into(),
            },
            started(4, 1, 9),
            TraceEvent::EntityStopped {
                entity: EntityId(4),
                node: NodeId(1),
                incarnation: 9,
                reason: StopReason::RegionRestart,
            },
            TraceEvent::ShardHosted {
                shard: ShardId(5),
                node: NodeId(1),
            },
            TraceEvent::ShardUnhosted {
                shard: ShardId(5),
                node: NodeId(1),
            },
            send(3),
            deliver(3),
            TraceEvent::Drop {
                sender: SenderId(2),
                entity: EntityId(3),
                seq: 4,
                reason: DropReason::HandOffBuffer,
                node: NodeId(0),
            },
            TraceEvent::Persisted {
                node: NodeId(1),
                incarnation: 3,
                generation: 2,
                event: CoordinatorEvent::ShardHomeAllocated {
                    shard: ShardId(5),
                    region,
                },
            },
            TraceEvent::PersistAcked {
                node: NodeId(1),
                incarnation: 3,
                generation: 2,
            },
            TraceEvent::CoordinatorStarted {
                node: NodeId(1),
                incarnation: 3,
                generation: 2,
                replayed: 17,
            },
            TraceEvent::CoordinatorStopped {
                node: NodeId(1),
                reason: "hand-over".into(),
            },
            TraceEvent::RebalanceStarted {
                shard: ShardId(5),
                from: NodeId(2),
                coordinator: NodeId(0),
            },
            TraceEvent::RebalanceDone {
                shard: ShardId(5),
                ok: false,
                coordinator: NodeId(0),
            },
            TraceEvent::AllocationDecided {
                node: NodeId(0),
                shard: ShardId(5),
                region,
            },
            TraceEvent::MemberView {
                node: NodeId(0),
                members: vec![
                    Member {
                        node: NodeId(2),
                        inc: NodeInc(7),
                        up_number: 4,
                        status: MemberStatus::Leaving,
                        hosting: false,
                        app_version: 0,
                    },
                    Member {
                        node: NodeId(3),
                        inc: NodeInc(8),
                        up_number: 5,
                        status: MemberStatus::Up,
                        hosting: true,
                        app_version: 2,
                    },
                ],
            },
            TraceEvent::RegionCoordinator {
                node: NodeId(2),
                coordinator: Some(region),
            },
            TraceEvent::RegionCoordinator {
                node: NodeId(2),
                coordinator: None,
            },
            TraceEvent::RegionStopped {
                node: NodeId(2),
                reason: "removed".into(),
            },
            TraceEvent::RoleBreach {
                node: NodeId(1),
                role: "region".into(),
                rule: "buffered-total-within-buffer-size".into(),
                detail: "51 buffered, buffer-size 50".into(),
            },
            TraceEvent::LivenessPhase {
                from: Instant(5),
                to: Instant(9),
            },
            TraceEvent::Fault {
                fault: crate::fault::Fault::Pause {
                    node: NodeId(2),
                    duration_ms: 750,
                },
            },
            TraceEvent::GracefulLeave {
                node: NodeId(2),
                incarnation: 7,
                settle_ms: 12_000,
            },
            TraceEvent::Pending {
                sender: SenderId(2),
                entity: EntityId(3),
                seq: 5,
                node: NodeId(1),
                place: crate::trace::Place::ShardBuffer,
            },
            TraceEvent::ShardLoadFailed {
                node: NodeId(1),
                shard: ShardId(5),
            },
            TraceEvent::RegionRestarted { node: NodeId(1) },
            TraceEvent::Msg {
                from: NodeId(1),
                to: NodeId(0),
                actor: shardsim_core::protocol::Role::Coordinator,
                msg: shardsim_core::protocol::Msg::ShardStarted { shard: ShardId(5) },
            },
            TraceEvent::Msg {
                from: NodeId(0),
                to: NodeId(1),
                actor: shardsim_core::protocol::Role::Region,
                msg: shardsim_core::protocol::Msg::HandOff { shard: ShardId(5) },
            },
            TraceEvent::RunEnd { in_flight: 3 },
        ];
        for e in events {
            let line = e.to_json(Instant(42));
            let back =
                crate::trace::read_line(&line, 1).unwrap_or_else(|err| panic!("{line}: {err}"));
            assert_eq!(back, crate::trace::Line::Event(Instant(42), e), "{line}");
        }
    }

    #[test]
    fn graceful_leave_loss_counts_crash_like_drops_of_an_undisturbed_leave() {
        use shardsim_core::protocol::DropReason;
        let leave = TraceEvent::GracefulLeave {
            node: NodeId(2),
            incarnation: 3,
            settle_ms: 10_000,
        };
        let drop = |reason| TraceEvent::Drop {
            sender: SenderId(0),
            entity: EntityId(1),
            seq: 4,
            reason,
            node: NodeId(2),
        };
        let down = |reason: &str| TraceEvent::NodeDown {
            node: NodeId(2),
            incarnation: 3,
            reason: reason.into(),
        };
        let fault = |fault: crate::fault::Fault| TraceEvent::Fault { fault };
        let s = |x: u64| Instant(x * 1_000_000);
        let up = |n: u32| TraceEvent::NodeUp {
            node: NodeId(n),
            incarnation: n + 1,
        };
        // Node 0 as an Up member: the new home.
        let view0 = TraceEvent::MemberView {
            node: NodeId(0),
            members: vec![shardsim_core::protocol::Member {
                node: NodeId(0),
                inc: shardsim_core::ids::NodeInc(1),
                up_number: 1,
                status: shardsim_core::protocol::MemberStatus::Up,
                hosting: true,
                app_version: 0,
            }],
        };
        // Alone, a leaving node has no new home to hand off to: nothing counts; nor with
        // another node that is up but not yet an Up member.
        let mut c = Checker::new();
        c.on_event(s(0), &up(2));
        c.on_event(s(0), &up(0));
        c.on_event(s(20), &leave);
        c.on_event(s(21), &drop(DropReason::RegionStopped));
        assert!(c.on_event(s(22), &down("left")).is_none());
        // Nor with one that became an Up member less than 2 s before the drop (a replacement
        // arriving during the leave: its region is not registered yet).
        let mut c = Checker::new();
        c.on_event(s(0), &up(2));
        c.on_event(s(0), &up(0));
        c.on_event(s(20), &leave);
        c.on_event(s(20), &view0);
        c.on_event(s(21), &drop(DropReason::RegionStopped));
        assert!(c.on_event(s(22), &down("left")).is_none());
        // Held during the leave, reported when the node has left.
        let mut c = Checker::new();
        c.on_event(s(0), &up(0));
        c.on_event(s(0), &view0);
        c.on_event(s(20), &leave);
        assert!(c
            .on_event(s(21), &drop(DropReason::RegionStopped))
            .is_none());
        let v = c.on_event(s(22), &down("left")).unwrap();
        assert_eq!(v.invariant, Outcome::GracefulLeaveLoss);
        assert!(
            v.detail.contains("(region_stopped) at node 2"),
            "{}",
            v.detail
        );
        // A dead letter after the node left counts at once; the next incarnation ends it.
        let mut c = Checker::new();
        c.on_event(s(0), &up(0));
        c.on_event(s(0), &view0);
        c.on_event(s(20), &leave);
        c.on_event(s(22), &down("left"));
        let v = c.on_event(s(23), &drop(DropReason::DeadLetter)).unwrap();
        assert_eq!(v.invariant, Outcome::GracefulLeaveLoss);
        let mut c = Checker::new();
        c.on_event(s(0), &up(0));
        c.on_event(s(0), &view0);
        c.on_event(s(20), &leave);
        c.on_event(s(22), &down("left"));
        let next = TraceEvent::NodeUp {
            node: NodeId(2),
            incarnation: 4,
        };
        c.on_event(s(25), &next);
        assert!(c.on_event(s(26), &drop(DropReason::DeadLetter)).is_none());
        // Drops every hand-off has do not count.
        let mut c = Checker::new();
        c.on_event(s(0), &up(0));
        c.on_event(s(0), &view0);
        c.on_event(s(20), &leave);
        for r in [
            DropReason::HandOffBuffer,
            DropReason::EntityStopped,
            DropReason::BufferFull,
            DropReason::HandingOffShard,
        ] {
            assert!(c.on_event(s(21), &drop(r)).is_none());
        }
        assert!(c.on_event(s(22), &down("left")).is_none());
        // A crash during the leave excuses its drops; so does a cut, a pause, a journal fault.
        let mut c = Checker::new();
        c.on_event(s(0), &up(0));
        c.on_event(s(0), &view0);
        c.on_event(s(20), &leave);
        c.on_event(s(21), &drop(DropReason::RegionStopped));
        assert!(c.on_event(s(22), &down("crash")).is_none());
        use crate::fault::Fault as F;
        for f in [
            F::Partition {
                sides: [vec![NodeId(0)], vec![NodeId(1), NodeId(2)]],
            },
            F::Pause {
                node: NodeId(0),
                duration_ms: 500,
            },
            F::JournalSlow {
                extra_latency_ms: 100,
            },
            F::Down {
                node: NodeId(1),
                by: None,
            },
        ] {
            let kind = f.kind_name();
            let mut c = Checker::new();
            c.on_event(s(0), &up(0));
            c.on_event(s(0), &view0);
            c.on_event(s(20), &leave);
            c.on_event(s(21), &drop(DropReason::NodeDown));
            c.on_event(s(21), &fault(f));
            assert!(c.on_event(s(22), &down("left")).is_none(), "{kind}");
        }
        // A leave soon after a fault healed is not graceful; one after the settling time is.
        for (heal_at, caught) in [(15, false), (5, true)] {
            let mut c = Checker::new();
            c.on_event(s(0), &up(0));
            c.on_event(s(0), &view0);
            c.on_event(
                s(1),
                &fault(crate::fault::Fault::Isolate { node: NodeId(0) }),
            );
            c.on_event(s(heal_at), &fault(crate::fault::Fault::Heal));
            c.on_event(s(20), &leave);
            c.on_event(s(21), &drop(DropReason::RegionStopped));
            assert_eq!(
                c.on_event(s(22), &down("left")).is_some(),
                caught,
                "{heal_at}"
            );
        }
        // A leave still under way at the end counts its drops then.
        let mut c = Checker::new();
        c.on_event(s(0), &up(0));
        c.on_event(s(0), &view0);
        c.on_event(s(19), &send(4));
        c.on_event(s(20), &leave);
        c.on_event(s(21), &drop(DropReason::RegionStopped));
        let v = c.on_event(s(30), &TraceEvent::RunEnd { in_flight: 0 });
        assert_eq!(v.map(|v| v.invariant), Some(Outcome::GracefulLeaveLoss));
    }

    #[test]
    fn single_writer_and_allocation_oracles() {
        use shardsim_core::ids::{NodeInc, RegionRef};
        use shardsim_core::protocol::{CoordinatorEvent, Member, MemberStatus};
        let coord = |node: u32, generation: u32| TraceEvent::CoordinatorStarted {
            node: NodeId(node),
            incarnation: node + 1,
            generation,
            replayed: 0,
        };
        let write = |node: u32, generation: u32| TraceEvent::Persisted {
            node: NodeId(node),
            incarnation: node + 1,
            generation,
            event: CoordinatorEvent::ShardHomeDeallocated { shard: ShardId(1) },
        };
        let config = |single_writer| TraceEvent::CheckConfig {
            single_writer,
            liveness: false,
            handoff_timeout_ms: 1,
        };
        for on in [false, true] {
            let mut c = Checker::new();
            c.on_event(Instant(0), &config(on));
            c.on_event(Instant(0), &coord(0, 1));
            assert!(c.on_event(Instant(1), &write(0, 1)).is_none());
            c.on_event(Instant(2), &coord(1, 1));
            let v = c.on_event(Instant(3), &write(1, 1));
            assert_eq!(
                v.map(|v| v.invariant),
                on.then_some(Outcome::JournalSingleWriter)
            );
        }
        let region = RegionRef {
            node: NodeId(1),
            inc: NodeInc(2),
        };
        let view = |status| TraceEvent::MemberView {
            node: NodeId(0),
            members: vec![Member {
                node: NodeId(1),
                inc: NodeInc(2),
                up_number: 2,
                status,
                hosting: true,
                app_version: 0,
            }],
        };
        let decided = TraceEvent::AllocationDecided {
            node: NodeId(0),
            shard: ShardId(3),
            region,
        };
        let mut c = Checker::new();
        c.on_event(Instant(0), &view(MemberStatus::Up));
        assert!(c.on_event(Instant(1), &decided).is_none());
        c.on_event(Instant(2), &view(MemberStatus::Down));
        let v = c.on_event(Instant(3), &decided).unwrap();
        assert_eq!(v.invariant, Outcome::AllocationToDowned);
        assert!(
            v.detail.ends_with("which its view shows as Down"),
            "{}",
            v.detail
        );
    }
}
