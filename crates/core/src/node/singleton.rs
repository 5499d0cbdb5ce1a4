//! The ShardCoordinator's cluster singleton on this node (Akka's `ClusterSingletonManager` and
//! the back-off supervisor around the coordinator): where it runs, its start and recovery, its
//! hand-over between oldest members, and its stop.

use super::*;

impl Node {
    /// member that is Up or Leaving, or Down but not yet removed (Akka's `OldestChangedBuffer`
    /// drops a member when it is Exiting or removed; a Down one leaves only on removal, then
    /// the new oldest takes over). The coordinator runs here while this node is that oldest
    /// (and, for a start, Up or Leaving: Akka's manager does not look at its own status). When the members older than this node are all Exiting, they
    /// hand the singleton over: this node asks the previous oldest with `HandOverToMe` and
    /// starts the coordinator when it has answered `HandOverDone` (or has been removed).
    pub(super) fn singleton_check(&mut self, now: Instant, out: &mut impl NodeHost) {
        if !self.hosting || self.stopped {
            return;
        }
        let (node, inc) = (self.me.node, self.me.inc);
        let me = self
            .view
            .iter()
            .find(|m| m.node == node && m.inc == inc)
            .copied();
        let Some(me) = me else {
            if self.coordinator.is_some() {
                self.stop_coordinator(now, "no longer a member", out);
            }
            return;
        };
        // `Member.ageOrdering` (lower up-number is older). The pre-fix Akka.NET manager (§12 B7)
        // ordered by `MemberAgeOrdering.DescendingWithAppVersion`: the highest app version
        // first, however young, while the regions locate the coordinator by age.
        let by_version = self.cfg.region.options.singleton_prefers_newest_app_version;
        // (Its `OldestChangedBuffer` holds members from `MemberUp` on: a Joining one is not
        // ahead.)
        // Mutation `singleton-reversed-age-order`: the node with the highest id in its view
        // orders by age backwards.
        let reversed = self.cfg.region.options.mutation
            == crate::protocol::settings::Mutation::SingletonReversedAgeOrder
            && self.view.iter().map(|m| m.node).max() == Some(node);
        let ahead = |m: &Member| {
            if reversed {
                m.up_number > me.up_number
            } else if by_version && m.app_version != me.app_version {
                m.app_version > me.app_version && m.status != MemberStatus::Joining
            } else {
                m.up_number < me.up_number
            }
        };
        let older: Vec<Member> = self
            .view
            .iter()
            .filter(|m| m.hosting && (m.node, m.inc) != (node, inc) && ahead(m))
            .copied()
            .collect();
        let oldest = older.iter().all(|m| m.status == MemberStatus::Exiting);
        if self.coordinator.is_some() {
            // The running coordinator stays through Leaving and Exiting until it is handed
            // over. A member older than this one (a view that merged) makes this node
            // `WasOldest`: the new oldest answers its `TakeOverFromMe` with `HandOverToMe`,
            // and the singleton gets its termination message, `Terminate`, as on a leave
            // (ClusterSingletonManager `WasOldest`, `gotoHandingOver`); with the local region
            // alive Akka's `terminate()` shuts it down too (§12 B11).
            if !oldest && self.handing_over_to.is_none() {
                let new_oldest = older
                    .iter()
                    .filter(|m| m.status != MemberStatus::Exiting)
                    .min_by_key(|m| (m.up_number, m.node))
                    .map(|m| Addr {
                        node: m.node,
                        inc: m.inc,
                        role: Role::SingletonManager,
                    });
                match new_oldest {
                    Some(to) if !self.cfg.region.options.coordinator_stops_during_write => {
                        self.handing_over_to = Some(to);
                        self.coordinator_input(now, Input::Terminate, out);
                    }
                    _ => self.stop_coordinator(now, "no longer the oldest member", out),
                }
            }
            return;
        }
        if self.exiting {
            // `SelfExiting` (the `cluster-exiting` phase) removes this node from the
            // OldestChangedBuffer. Before it, a node whose coordinated shutdown runs is a
            // candidate like any other: Akka's singleton manager takes over (and the back-off
            // supervisor restarts a failed coordinator) whatever the node's own status.
            return;
        }
        // The previous oldest, if it is still Exiting and has not handed over yet: Akka asks
        // `previousOldest.head`, the member that was the oldest before this one; an older
        // member that never was (it left together with the oldest) ignores `HandOverToMe` and
        // is waited out by its removal.
        let previous = older
            .iter()
            .filter(|m| m.status == MemberStatus::Exiting)
            .min_by_key(|m| (m.up_number, m.node))
            .map(|m| NodeAddr {
                node: m.node,
                inc: m.inc,
            });
        self.hand_over_from = previous.filter(|a| !self.hand_over_done.contains(a));
        let member = matches!(me.status, MemberStatus::Up | MemberStatus::Leaving);
        let should_run = oldest && member && self.hand_over_from.is_none();
        if oldest && member && self.hand_over_from.is_some() {
            // BecomingOldest: ask the previous oldest for the singleton.
            if !self.timers.contains_key(&NodeTimer::HandOverRetry) {
                self.ask_hand_over(now, out);
            }
            return;
        }
        if self.coordinator.is_some() || !should_run {
            return;
        }
        if now.0 < self.coord_backoff_until {
            let after = Duration(self.coord_backoff_until - now.0);
            self.set_timer(NodeTimer::SingletonCheck, after, out);
            return;
        }
        // Recovery reads the journal over the network.
        let settings = &self.cfg.region.settings;
        let mut strategy = Box::new(LeastShardAllocationStrategy::new(
            settings.least_shard_allocation_strategy.clone(),
        ));
        strategy.prefers_newest_app_version =
            !self.cfg.region.options.rebalance_during_rolling_update;
        strategy.optimal_rounds_down =
            self.cfg.region.options.mutation == Mutation::NewAllocationRoundsDown;
        if settings.state_store_mode == StateStoreMode::Ddata {
            // DDataShardCoordinator: starts at once and reads its state from the replicator.
            let mut o = std::mem::take(&mut self.out);
            let c = Coordinator::start_ddata(
                Addr {
                    node,
                    inc,
                    role: Role::Coordinator,
                },
                settings.clone(),
                self.cfg.region.options.clone(),
                strategy,
                &mut o,
            );
            self.coordinator = Some(c);
            self.coord_gen += 1;
            out.output(NodeOutput::Fact(Fact::CoordinatorStarted {
                generation: self.coord_gen,
                replayed: 0,
            }));
            let busy = std::mem::replace(&mut self.coord_busy, true);
            self.apply(now, Role::Coordinator, &mut o, out);
            self.restore_outbox(o);
            self.coord_busy = busy;
            let view = self.view.clone();
            self.coordinator_input(now, Input::MembersChanged(view), out);
            return;
        }
        let mut o = std::mem::take(&mut self.out);
        let recovered = out.journal().map(|journal| {
            let c = Coordinator::recover(
                Addr {
                    node,
                    inc,
                    role: Role::Coordinator,
                },
                settings.clone(),
                self.cfg.region.options.clone(),
                strategy,
                journal,
                &mut o,
            );
            (c, journal.len())
        });
        match recovered {
            None => {
                self.restore_outbox(o);
                self.recovery_failed(now, "journal unreachable".to_string(), out);
            }
            Some((Ok(c), replayed)) => {
                self.coordinator = Some(c);
                self.coord_gen += 1;
                out.output(NodeOutput::Fact(Fact::CoordinatorStarted {
                    generation: self.coord_gen,
                    replayed,
                }));
                self.apply(now, Role::Coordinator, &mut o, out);
                self.restore_outbox(o);
                let view = self.view.clone();
                self.coordinator_input(now, Input::MembersChanged(view), out);
                self.tell_unreachable(now, true, out);
            }
            Some((Err(e), _)) => {
                o.0.clear();
                self.restore_outbox(o);
                // Akka: recovery failure stops the coordinator; the back-off supervisor retries.
                self.recovery_failed(now, e.0, out);
            }
        }
    }

    /// `HandOverToMe` to the previous oldest while it has not answered, again after
    /// `hand-over-retry-interval` while this node is still becoming the oldest.
    pub(super) fn ask_hand_over(&mut self, _now: Instant, out: &mut impl NodeHost) {
        let Some(p) = self.hand_over_from else {
            return;
        };
        if self.coordinator.is_some() || self.stopped {
            return;
        }
        out.output(NodeOutput::Effect(Effect::Send {
            from: Role::SingletonManager,
            to: Addr {
                node: p.node,
                inc: p.inc,
                role: Role::SingletonManager,
            },
            msg: Msg::HandOverToMe,
        }));
        self.set_timer(NodeTimer::HandOverRetry, HAND_OVER_RETRY, out);
    }

    /// A message between singleton managers (ClusterSingletonManager `Oldest`/`WasOldest`/
    /// `HandingOver` and `BecomingOldest`).
    pub(super) fn singleton_msg(
        &mut self,
        now: Instant,
        from: Addr,
        msg: Msg,
        out: &mut impl NodeHost,
    ) {
        let peer = NodeAddr {
            node: from.node,
            inc: from.inc,
        };
        match msg {
            Msg::HandOverToMe => {
                if self.handing_over_to.is_some() {
                    // HandingOver: a retry.
                    out.output(NodeOutput::Effect(Effect::Send {
                        from: Role::SingletonManager,
                        to: from,
                        msg: Msg::HandOverInProgress,
                    }));
                    return;
                }
                self.handing_over_to = Some(from);
                // `gotoHandingOver`: the coordinator gets its termination message, `Terminate`,
                // which waits behind a write in flight and what was stashed before it (the fix
                // of §12 B5); its stop then completes the hand-over (`apply`). Pre-fix: a
                // `PoisonPill`, the coordinator stops at once.
                if self.coordinator.is_none()
                    || self.cfg.region.options.coordinator_stops_during_write
                {
                    self.finish_hand_over(now, out);
                } else {
                    self.coordinator_input(now, Input::Terminate, out);
                }
            }
            Msg::HandOverInProgress => {}
            Msg::HandOverDone if self.hand_over_from == Some(peer) => {
                self.hand_over_done.insert(peer);
                self.singleton_check(now, out);
            }
            _ => {}
        }
    }

    /// The coordinator here has stopped (or never ran): `HandOverDone` to the new oldest,
    /// then, if this node is Exiting, the `cluster-exiting` phase is done.
    pub(super) fn finish_hand_over(&mut self, now: Instant, out: &mut impl NodeHost) {
        let Some(to) = self.handing_over_to else {
            return;
        };
        self.stop_coordinator(now, "handed over to the new oldest", out);
        out.output(NodeOutput::Effect(Effect::Send {
            from: Role::SingletonManager,
            to,
            msg: Msg::HandOverDone,
        }));
        if self.exiting {
            self.exiting_completed(now, out);
        }
    }

    fn recovery_failed(&mut self, now: Instant, reason: String, out: &mut impl NodeHost) {
        out.output(NodeOutput::Fact(Fact::RecoveryFailed { reason }));
        self.back_off_singleton(now, out);
    }

    /// The singleton's back-off supervisor (`coordinator-failure-backoff`): no coordinator here
    /// before the back-off ends, then check again.
    fn back_off_singleton(&mut self, now: Instant, out: &mut impl NodeHost) {
        let backoff = self.cfg.region.settings.coordinator_failure_backoff_ms * 1000;
        self.coord_backoff_until = now.0 + backoff;
        self.set_timer(NodeTimer::SingletonCheck, Duration(backoff), out);
    }

    /// Stop the coordinator here; every region learns through death watch.
    pub(super) fn stop_coordinator(
        &mut self,
        now: Instant,
        reason: &'static str,
        out: &mut impl NodeHost,
    ) {
        if self.coordinator.take().is_none() {
            return;
        }
        self.coord_inbox.clear();
        self.timers
            .retain(|t, _| !matches!(t, NodeTimer::Role(t) if t.role() == Role::Coordinator));
        out.output(NodeOutput::Fact(Fact::CoordinatorStopped { reason }));
        out.output(NodeOutput::Effect(Effect::CoordinatorTerminated));
        self.back_off_singleton(now, out);
    }
}
