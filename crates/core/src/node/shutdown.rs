//! Coordinated shutdown and leaving (Akka's `CoordinatedShutdown` phases
//! `cluster-sharding-shutdown-region`, `cluster-leave` and `cluster-exiting`), and the stop of
//! the node.

use super::*;

impl Node {
    /// `CoordinatedShutdown` for a graceful leave (Akka `reference.conf` phases): first
    /// `cluster-sharding-shutdown-region` (the region's `GracefulShutdown`, which hands off
    /// its shards and stops, or gives up after the phase timeout), then `cluster-leave`
    /// (Leaving), then exiting and removal by the leader.
    pub(super) fn coordinated_shutdown(&mut self, now: Instant, out: &mut impl NodeHost) {
        if self.leaving {
            return;
        }
        self.leaving = true;
        if self.region.is_some() {
            self.in_region(now, out, true, |r, o| r.graceful_shutdown(o));
        } else {
            self.region_phase_done(now, out);
        }
    }

    /// `cluster-sharding-shutdown-region` is done: next `cluster-leave` (Leaving), or, when
    /// coordinated shutdown started at Exiting, `cluster-exiting` at once.
    pub(super) fn region_phase_done(&mut self, now: Instant, out: &mut impl NodeHost) {
        if self.exiting_first {
            self.self_exiting(now, out);
        } else {
            self.membership_input(now, MInput::Leave, out);
        }
    }

    /// The region here stopped: a coordinator here that had not heard it through
    /// `RegionStopped` (the region was not registered with it) learns it by death watch, which
    /// for a local actor is immediate (`Terminated`, SC:1316-1327).
    pub(super) fn local_region_terminated(
        &mut self,
        now: Instant,
        region: Option<Region>,
        out: &mut impl NodeHost,
    ) {
        let Some(region) = region else { return };
        let Some(c) = self.coordinator.as_ref().map(Coordinator::addr) else {
            return;
        };
        if region.coordinator() == Some(c) {
            return; // its postStop's RegionStopped is on its way
        }
        let me = region.me();
        self.coordinator_input(
            now,
            Input::Deliver {
                from: Addr::region(me),
                msg: Msg::RegionStopped { region: me },
            },
            out,
        );
    }

    /// The membership says this node is Exiting: coordinated shutdown's `cluster-exiting`
    /// phase. With the coordinator here it waits for the new oldest's `HandOverToMe` (up to
    /// the phase timeout, 10 s); otherwise it is done at once.
    pub(super) fn self_exiting(&mut self, now: Instant, out: &mut impl NodeHost) {
        self.exiting = true;
        match (self.coordinator.is_some(), self.handing_over_to.is_some()) {
            // Oldest: wait for the new oldest's HandOverToMe.
            (true, false) => self.set_timer(NodeTimer::ExitingTimeout, EXITING_TIMEOUT, out),
            // Handing over, the coordinator still stopping (a write in flight, or its local
            // region's termination): `finish_hand_over` completes, within the phase timeout.
            (true, true) => self.set_timer(NodeTimer::ExitingTimeout, EXITING_TIMEOUT, out),
            // No singleton here, or it was handed over already.
            (false, _) => self.exiting_completed(now, out),
        }
    }

    /// `cluster-exiting-done`: confirm to the leader, and stop.
    pub(super) fn exiting_completed(&mut self, now: Instant, out: &mut impl NodeHost) {
        self.timers.remove(&NodeTimer::ExitingTimeout);
        self.membership_input(now, MInput::ExitingCompleted, out);
    }

    /// The cluster of this node shuts down (it was downed, or removed after leaving). Akka
    /// publishes `ClusterShuttingDown` and then `MemberRemoved` for every other member; since
    /// 2.4.0 the coordinator ignores everything after the first (`shuttingDown`, SC:1104-1108,
    /// akka#17200), so here it hears nothing more and stops with the node. With the pre-fix
    /// option `coordinator-persists-shutdown-removals` (§12 B2) a coordinator still running
    /// takes those removals as its regions' `Terminated` and persists `ShardRegionTerminated`
    /// for a region that lives on: its first write leaves for the journal before the node stops
    /// (the later ones would wait behind it, and the node is gone by then).
    pub(super) fn final_member_removals(&mut self, now: Instant, out: &mut impl NodeHost) {
        if !self
            .cfg
            .region
            .options
            .coordinator_persists_shutdown_removals
            || self.coordinator.is_none()
        {
            return;
        }
        let (node, inc) = (self.me.node, self.me.inc);
        let view: Vec<Member> = self
            .view
            .iter()
            .map(|m| {
                let mut m = *m;
                if (m.node, m.inc) != (node, inc) {
                    m.status = MemberStatus::Removed;
                }
                m
            })
            .collect();
        self.coordinator_input(now, Input::MembersChanged(view), out);
    }

    /// The node stops: crash, or shutdown after being downed, removed or leaving. Messages
    /// buffered in its region are lost.
    pub(super) fn shutdown(&mut self, reason: String, out: &mut impl NodeHost) {
        if self.stopped {
            return;
        }
        if let Some(r) = self.region.as_ref() {
            for env in r.all_buffered_messages() {
                out.output(NodeOutput::Fact(Fact::Observe {
                    obs: Observation::Dropped {
                        env,
                        reason: DropReason::NodeDown,
                    },
                    incarnation: 0,
                }));
            }
        }
        self.stopped = true;
        self.stopped_region_high_water = self.buffer_high_water();
        self.region = None;
        self.stores = None;
        self.coordinator = None;
        self.view.clear();
        self.timers.clear();
        out.output(NodeOutput::Effect(Effect::Shutdown { reason }));
    }
}
