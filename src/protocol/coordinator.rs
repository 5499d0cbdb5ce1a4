//! ShardCoordinator in persistent mode (akka-sharding.md §3.2, §4, §7): the cluster singleton
//! that decides where shards live, persists its decisions to a journal before answering, and
//! drives rebalancing through one hand-off worker per shard.
//!
//! Sans-IO: call [`Coordinator::handle`] with the time and one input. `Output::Persist` asks the
//! host to write an event; until the host answers `Input::Persisted` every other input is stashed
//! (Akka's `persist` semantics), then the stash is replayed in order.

use crate::ids::{RegionRef, ShardId};
use crate::protocol::allocation::{ClusterHealth, RegionEntry, ShardAllocationStrategy};
use crate::protocol::settings::{Mutation, ProtocolOptions, Settings};
use crate::protocol::{
    Addr, CoordinatorEvent, Input, Member, MemberStatus, Msg, Observation, Outbox, Output, Role,
    RoleBreach, Timer,
};
use crate::time::{Duration, Instant};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The coordinator's durable state (§3.1, SC:524-598).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoordinatorState {
    /// shard → owning region.
    pub shards: BTreeMap<ShardId, RegionRef>,
    /// region → its shards, in allocation order (the strategy depends on the order).
    pub regions: BTreeMap<RegionRef, Vec<ShardId>>,
    /// Registered proxies.
    pub proxies: BTreeSet<RegionRef>,
    /// With remember-entities: shards that lost their home (their region terminated, or a
    /// hand-off deallocated them) and must be allocated again without waiting for a message
    /// (`State.unallocatedShards`, SC:533-584).
    pub unallocated: BTreeSet<ShardId>,
    /// `State.rememberEntities`: whether `unallocated` is kept.
    pub remember_entities: bool,
}

/// Why replaying or applying an event failed (Akka's `require` in `State.updated`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateError(pub String);

impl CoordinatorState {
    /// `State.updated(evt)` with Akka's preconditions (§3.1). Recovery tolerances of §3.2: an
    /// unknown region or proxy termination is ignored.
    pub fn updated(&mut self, evt: &CoordinatorEvent) -> Result<(), StateError> {
        match *evt {
            CoordinatorEvent::ShardRegionRegistered { region } => {
                if self.regions.contains_key(&region) {
                    return Err(StateError(format!("region {region} already registered")));
                }
                self.regions.insert(region, Vec::new());
            }
            CoordinatorEvent::ShardRegionProxyRegistered { proxy } => {
                if !self.proxies.insert(proxy) {
                    return Err(StateError(format!("proxy {proxy} already registered")));
                }
            }
            CoordinatorEvent::ShardRegionTerminated { region } => {
                if let Some(shards) = self.regions.remove(&region) {
                    for s in shards {
                        self.shards.remove(&s);
                        if self.remember_entities {
                            self.unallocated.insert(s);
                        }
                    }
                }
            }
            CoordinatorEvent::ShardRegionProxyTerminated { proxy } => {
                self.proxies.remove(&proxy);
            }
            CoordinatorEvent::ShardHomeAllocated { shard, region } => {
                if self.shards.contains_key(&shard) {
                    return Err(StateError(format!("shard {shard} already allocated")));
                }
                let Some(list) = self.regions.get_mut(&region) else {
                    return Err(StateError(format!("region {region} not registered")));
                };
                list.push(shard);
                self.shards.insert(shard, region);
                self.unallocated.remove(&shard);
            }
            CoordinatorEvent::ShardHomeDeallocated { shard } => {
                let Some(region) = self.shards.remove(&shard) else {
                    return Err(StateError(format!("shard {shard} not allocated")));
                };
                if self.remember_entities {
                    self.unallocated.insert(shard);
                }
                let Some(list) = self.regions.get_mut(&region) else {
                    return Err(StateError(format!("region {region} not registered")));
                };
                list.retain(|s| *s != shard);
            }
        }
        Ok(())
    }
}

/// One hand-off, as tracked by the coordinator (Akka's `RebalanceWorker`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HandOff {
    /// `BeginHandOff` sent to every region and proxy; waiting for each `BeginHandOffAck`.
    AwaitingAcks {
        /// The owner.
        from: RegionRef,
        /// Regions that have not acked yet.
        pending: BTreeSet<RegionRef>,
    },
    /// `HandOff` sent to the owner; waiting for `ShardStopped`.
    AwaitingStop {
        /// The owner.
        from: RegionRef,
    },
}

/// What to do once the event in flight is persisted.
#[derive(Clone, Copy, Debug)]
enum AfterPersist {
    RegisterAck {
        to: Addr,
    },
    Allocated {
        shard: ShardId,
        region: RegionRef,
        requester: Option<Addr>,
    },
    Deallocated {
        shard: ShardId,
    },
    RegionTerminated {
        region: RegionRef,
    },
    ProxyTerminated,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Recovered a non-empty state; waiting for `StateInitialized` (§3.4). Register is ignored.
    WaitingForStateInitialized,
    Active,
}

/// The ShardCoordinator actor.
pub struct Coordinator {
    me: Addr,
    settings: Settings,
    options: ProtocolOptions,
    strategy: Box<dyn ShardAllocationStrategy>,
    state: CoordinatorState,
    phase: Phase,
    members: Vec<Member>,
    alive_regions: BTreeSet<RegionRef>,
    all_regions_registered: bool,
    /// shard → requesters whose GetShardHome is deferred until the hand-off ends (§4.2).
    rebalance_in_progress: BTreeMap<ShardId, BTreeSet<Addr>>,
    handoffs: BTreeMap<ShardId, HandOff>,
    persisting: Option<(CoordinatorEvent, AfterPersist)>,
    stash: VecDeque<Input>,
    /// Regions whose termination is being processed (`regionTerminationInProgress`, §3.5).
    termination_in_progress: BTreeSet<RegionRef>,
    /// `gracefulShutdownInProgress` (§4.4): regions handing off all their shards; no shard is
    /// allocated to them.
    graceful: BTreeSet<RegionRef>,
    /// The member view changed: look for terminated regions once not persisting.
    members_dirty: bool,
    stopped: bool,
}

impl Coordinator {
    /// Start a coordinator by replaying `journal` (recovery is construction, §3.2). A journal
    /// that violates the state preconditions fails recovery, as Akka's does.
    pub fn recover(
        me: Addr,
        settings: Settings,
        options: ProtocolOptions,
        strategy: Box<dyn ShardAllocationStrategy>,
        journal: &[CoordinatorEvent],
        out: &mut Outbox,
    ) -> Result<Self, StateError> {
        let mut state = CoordinatorState {
            remember_entities: settings.remember_entities,
            ..CoordinatorState::default()
        };
        for (i, evt) in journal.iter().enumerate() {
            state
                .updated(evt)
                .map_err(|e| StateError(format!("event {i}: {}", e.0)))?;
        }
        out.observe(Observation::CoordinatorRecovered {
            events: journal.len(),
        });
        let phase = if state.regions.is_empty() && state.proxies.is_empty() {
            Phase::Active
        } else {
            // watchStateActors(), then StateInitialized after 500 ms (SC:1294-1322)
            out.set_timer(Timer::StateInitialized, Duration::from_millis(500));
            Phase::WaitingForStateInitialized
        };
        out.set_timer(Timer::RebalanceTick, settings.rebalance_interval());
        Ok(Coordinator {
            me,
            settings,
            options,
            strategy,
            state,
            phase,
            members: Vec::new(),
            alive_regions: BTreeSet::new(),
            all_regions_registered: false,
            rebalance_in_progress: BTreeMap::new(),
            handoffs: BTreeMap::new(),
            persisting: None,
            stash: VecDeque::new(),
            termination_in_progress: BTreeSet::new(),
            graceful: BTreeSet::new(),
            members_dirty: false,
            stopped: false,
        })
    }

    /// Handle one input.
    pub fn handle(&mut self, now: Instant, input: Input, out: &mut Outbox) {
        if self.stopped {
            return;
        }
        match input {
            Input::MembersChanged(members) => {
                self.members = members;
                self.members_dirty = true;
            }
            Input::Timeout(Timer::PersistTimeout) => {
                if self.persisting.is_some() {
                    // onPersistFailure: the persistent actor stops; the back-off supervisor
                    // restarts it later, and the new one recovers from the journal (§3.2).
                    self.stopped = true;
                    out.0.push(Output::Stop {
                        reason: "journal write timed out (onPersistFailure)",
                    });
                }
                return;
            }
            Input::Persisted if self.persisting.is_some() => self.on_persisted(out),
            input if self.persisting.is_some() => self.stash.push_back(input),
            input => self.dispatch(now, input, out),
        }
        // unstashAll: stashed inputs and messages sent to self, in order, until the next persist.
        loop {
            if self.persisting.is_some() || self.stopped {
                break;
            }
            if self.members_dirty {
                self.members_dirty = false;
                self.check_terminated_regions(out);
                continue;
            }
            let Some(input) = self.stash.pop_front() else {
                break;
            };
            self.dispatch(now, input, out);
        }
    }

    // ---- getters ----

    /// The current allocations.
    pub fn allocations(&self) -> &BTreeMap<ShardId, RegionRef> {
        &self.state.shards
    }
    /// The whole state.
    pub fn state(&self) -> &CoordinatorState {
        &self.state
    }
    /// Hand-offs in progress.
    pub fn handoffs(&self) -> &BTreeMap<ShardId, HandOff> {
        &self.handoffs
    }
    /// This coordinator's address.
    pub fn addr(&self) -> Addr {
        self.me
    }

    // ---- invariants ----

    /// The rules this coordinator's state keeps after every `handle`, each true of Akka's
    /// ShardCoordinator (akka-sharding.md, sections cited per rule); the first broken one, as
    /// data. The rules over the hand-offs and the stash always run (hand-offs are few); the
    /// walk over every allocation runs only with debug assertions (as under `cargo test`).
    pub fn check_invariants(&self) -> Option<RoleBreach> {
        let breach = |rule: &'static str, detail: String| {
            Some(RoleBreach {
                role: "coordinator",
                rule,
                detail,
            })
        };
        // §3.2: commands are stashed only while a persist is in flight; once it is durable
        // the stash is replayed (unstashAll) until the next persist. Likewise a member change
        // seen while persisting is looked at right after.
        if self.persisting.is_none() && !self.stopped {
            if !self.stash.is_empty() {
                return breach(
                    "stash-only-while-persisting",
                    format!("{} stashed inputs, nothing persisting", self.stash.len()),
                );
            }
            if self.members_dirty {
                return breach(
                    "stash-only-while-persisting",
                    "member change pending, nothing persisting".to_string(),
                );
            }
        }
        let registered =
            |r: &RegionRef| self.state.regions.contains_key(r) || self.state.proxies.contains(r);
        for (shard, h) in &self.handoffs {
            // §4.3, §7 t1: rebalanceInProgress += shard before the RebalanceWorker starts, and
            // it is cleared only after RebalanceDone: every hand-off is a rebalance in progress.
            if !self.rebalance_in_progress.contains_key(shard) {
                return breach(
                    "handoffs-within-rebalances",
                    format!("hand-off of shard {shard} is not a rebalance in progress"),
                );
            }
            let (from, pending) = match h {
                HandOff::AwaitingAcks { from, pending } => (from, Some(pending)),
                HandOff::AwaitingStop { from } => (from, None),
            };
            // §4.3 (the worker's owner is state.shards(shard)), §3.5 step 1 (a terminated
            // owner ends the hand-off before ShardRegionTerminated is written).
            if !self.state.regions.contains_key(from) {
                return breach(
                    "handoff-owner-registered",
                    format!("hand-off of shard {shard} from {from}, not a registered region"),
                );
            }
            // §2.2, §7 t2: BeginHandOff goes to state.regions ∪ state.regionProxies; §3.5
            // step 1 (akka#29463): a terminated region counts as acked before it leaves the
            // state, so every region still awaited is registered.
            if let Some(r) = pending.and_then(|p| p.iter().find(|r| !registered(r))) {
                return breach(
                    "handoff-awaits-registered-regions",
                    format!(
                        "hand-off of shard {shard} awaits {r}, not a registered region or proxy"
                    ),
                );
            }
        }
        if cfg!(debug_assertions) {
            return self.check_state();
        }
        None
    }

    /// The rules of [`Coordinator::check_invariants`] that walk every allocation.
    fn check_state(&self) -> Option<RoleBreach> {
        let breach = |rule: &'static str, detail: String| {
            Some(RoleBreach {
                role: "coordinator",
                rule,
                detail,
            })
        };
        // §3.1: ShardHomeAllocated requires a registered region and ShardRegionTerminated
        // takes a region's shards with it, so every allocated shard's region is registered and
        // lists the shard; the lists hold each shard once and nothing else.
        for (shard, region) in &self.state.shards {
            match self.state.regions.get(region) {
                None => {
                    return breach(
                        "allocated-to-registered-region",
                        format!("shard {shard} allocated to {region}, not a registered region"),
                    )
                }
                Some(list) if !list.contains(shard) => {
                    return breach(
                        "allocations-match-region-lists",
                        format!("shard {shard} allocated to {region}, missing from its list"),
                    )
                }
                Some(_) => {}
            }
        }
        let listed: usize = self.state.regions.values().map(Vec::len).sum();
        if listed != self.state.shards.len() {
            return breach(
                "allocations-match-region-lists",
                format!(
                    "{} shards allocated, region lists hold {listed}",
                    self.state.shards.len()
                ),
            );
        }
        // §5.6: proxies are never chosen by allocation; a node's region is either hosting
        // or proxy-only, so no ref is both.
        if let Some(p) = self
            .state
            .proxies
            .iter()
            .find(|p| self.state.regions.contains_key(p))
        {
            return breach(
                "regions-and-proxies-disjoint",
                format!("{p} is registered as a region and as a proxy"),
            );
        }
        None
    }

    // ---- internals ----

    fn dispatch(&mut self, now: Instant, input: Input, out: &mut Outbox) {
        match input {
            Input::Deliver { from, msg } => self.on_msg(now, from, msg, out),
            Input::Timeout(t) => self.on_timeout(t, out),
            Input::Request(_) | Input::MembersChanged(_) | Input::Persisted => {}
            Input::Terminate => {
                // `terminate()` (SC:1180-1196): no local region is alive by now (coordinated
                // shutdown stopped it first), so the coordinator stops.
                self.stopped = true;
                out.0.push(Output::Stop {
                    reason: "handed over to the new oldest (Terminate)",
                });
            }
        }
    }

    fn persist(&mut self, evt: CoordinatorEvent, then: AfterPersist, out: &mut Outbox) {
        self.persisting = Some((evt, then));
        out.0.push(Output::Persist(evt));
        out.set_timer(
            Timer::PersistTimeout,
            Duration::from_millis(self.settings.journal_call_timeout_ms),
        );
    }

    fn member_alive(&self, r: RegionRef) -> bool {
        self.members
            .iter()
            .any(|m| m.region() == r && m.status != MemberStatus::Removed)
    }

    /// Death watch of regions: a registered region or proxy whose member was removed is
    /// Terminated (§3.5); with `down-removal-margin` the termination is delayed (akka#18314).
    fn check_terminated_regions(&mut self, out: &mut Outbox) {
        let known: Vec<RegionRef> = self
            .state
            .regions
            .keys()
            .chain(self.state.proxies.iter())
            .copied()
            .collect();
        for r in known {
            if self.member_alive(r) || self.termination_in_progress.contains(&r) {
                continue;
            }
            if self.persisting.is_some() {
                self.members_dirty = true;
                return;
            }
            if self.settings.down_removal_margin_ms > 0 && self.alive_regions.contains(&r) {
                self.termination_in_progress.insert(r);
                out.set_timer(
                    Timer::DelayedShardRegionTerminated(r),
                    Duration::from_millis(self.settings.down_removal_margin_ms),
                );
            } else {
                self.region_terminated(r, out);
            }
        }
    }

    /// `regionTerminated` (§3.5): tell the hand-off workers, re-ask homes for its shards, then
    /// persist `ShardRegionTerminated`.
    fn region_terminated(&mut self, r: RegionRef, out: &mut Outbox) {
        let shards: Vec<ShardId> = self.handoffs.keys().copied().collect();
        for shard in shards {
            let done = match self.handoffs.get_mut(&shard) {
                Some(HandOff::AwaitingAcks { from, pending }) => {
                    if *from == r {
                        true
                    } else {
                        pending.remove(&r);
                        if pending.is_empty() {
                            let from = *from;
                            out.send(Addr::region(from), Msg::HandOff { shard });
                            self.handoffs.insert(shard, HandOff::AwaitingStop { from });
                        }
                        false
                    }
                }
                Some(HandOff::AwaitingStop { from }) => *from == r,
                None => false,
            };
            if done {
                // The worker ends with RebalanceDone(ok = true); by the time the coordinator
                // handles it the shard is no longer allocated, so only the deferred requests
                // are released (§4.3).
                self.handoffs.remove(&shard);
                out.cancel_timer(Timer::HandOffTimeout(shard));
                out.observe(Observation::RebalanceDone { shard, ok: true });
                self.clear_rebalance_in_progress(shard);
            }
        }
        self.termination_in_progress.insert(r);
        if let Some(shards) = self.state.regions.get(&r) {
            for s in shards.clone() {
                self.stash.push_back(Input::Deliver {
                    from: self.me,
                    msg: Msg::GetShardHome { shard: s },
                });
            }
            self.persist(
                CoordinatorEvent::ShardRegionTerminated { region: r },
                AfterPersist::RegionTerminated { region: r },
                out,
            );
        } else if self.state.proxies.contains(&r) {
            self.persist(
                CoordinatorEvent::ShardRegionProxyTerminated { proxy: r },
                AfterPersist::ProxyTerminated,
                out,
            );
            self.termination_in_progress.remove(&r);
        } else {
            self.termination_in_progress.remove(&r);
        }
    }

    /// The write is durable: apply the event, run the continuation, then unstash in order
    /// until the next persist (Akka's `persist` + `unstashAll`).
    fn on_persisted(&mut self, out: &mut Outbox) {
        let Some((evt, then)) = self.persisting.take() else {
            return;
        };
        out.cancel_timer(Timer::PersistTimeout);
        if self.state.updated(&evt).is_err() {
            // Akka: `require` throws, the coordinator restarts. Our handlers only persist valid
            // events, so this is unreachable for a faithful protocol; keep going idempotently.
            return;
        }
        match then {
            AfterPersist::RegisterAck { to } => {
                out.send(to, Msg::RegisterAck);
                self.allocate_shard_homes_for_remember_entities();
            }
            AfterPersist::Allocated {
                shard,
                region,
                requester,
            } => {
                out.observe(Observation::ShardAllocated { shard, region });
                // SC:1396-1441: HostShard to the owner FIRST, then the reply to the requester.
                self.send_host_shard(shard, region, out);
                if let Some(r) = requester {
                    out.send(r, Msg::ShardHome { shard, region });
                }
            }
            AfterPersist::RegionTerminated { region } => {
                self.alive_regions.remove(&region);
                self.graceful.remove(&region);
                self.termination_in_progress.remove(&region);
                self.allocate_shard_homes_for_remember_entities();
            }
            AfterPersist::ProxyTerminated => {}
            AfterPersist::Deallocated { shard } => {
                // §4.3 RebalanceDone(ok): release deferred requests, then eager re-allocation.
                self.clear_rebalance_in_progress(shard);
                self.stash.push_back(Input::Deliver {
                    from: self.me,
                    msg: Msg::GetShardHome { shard },
                });
            }
        }
    }

    fn on_msg(&mut self, _now: Instant, from: Addr, msg: Msg, out: &mut Outbox) {
        match msg {
            Msg::Register { region } => self.on_register(from, region, false, out),
            Msg::RegisterProxy { proxy } => self.on_register(from, proxy, true, out),
            Msg::GetShardHome { shard } => {
                let requester = if from == self.me { None } else { Some(from) };
                self.on_get_shard_home(shard, requester, out);
            }
            Msg::ShardStarted { shard } => out.cancel_timer(Timer::ResendShardHost(shard)),
            Msg::BeginHandOffAck { shard, region } => {
                self.on_begin_hand_off_ack(shard, region, out)
            }
            Msg::ShardStopped { shard } => self.on_shard_stopped(from, shard, out),
            Msg::GracefulShutdownReq { region } => self.on_graceful_shutdown_req(region, out),
            // SC:1321-1323 (akka#30402): the region's postStop; its termination at once.
            Msg::RegionStopped { region } => {
                if !self.termination_in_progress.contains(&region) {
                    self.region_terminated(region, out);
                }
            }
            // Messages for a region that reached the coordinator are dead letters.
            Msg::User(_)
            | Msg::RegisterAck
            | Msg::ShardHome { .. }
            | Msg::HostShard { .. }
            | Msg::BeginHandOff { .. }
            | Msg::BeginHandOffAckRelay { .. }
            | Msg::StartEntity { .. }
            | Msg::StartEntityAck { .. }
            | Msg::CoordinatorTerminated
            | Msg::HandOff { .. }
            | Msg::HandOverToMe
            | Msg::HandOverInProgress
            | Msg::HandOverDone => {}
        }
    }

    /// `GracefulShutdownReq` (§4.4, SC:1078-1101): once per shutdown, a hand-off (a
    /// RebalanceWorker with `isRebalance = false`) for every shard of the region; an unknown
    /// region is only logged.
    fn on_graceful_shutdown_req(&mut self, region: RegionRef, out: &mut Outbox) {
        if self.phase != Phase::Active {
            // `PersistentShardCoordinator.waitingForStateInitialized` handles only Terminate,
            // StateInitialized, Register (ignored) and Terminated: the request is unhandled,
            // and the region repeats it on its Retry tick (§5.5 step 3, the B15 fix). Handled
            // here, it started hand-offs that `stateInitialized()`'s HostShard then crossed.
            return;
        }
        if self.graceful.contains(&region) {
            return;
        }
        let Some(shards) = self.state.regions.get(&region) else {
            return;
        };
        let shards: Vec<ShardId> = shards.to_vec();
        self.graceful.insert(region);
        for shard in shards {
            if !self.rebalance_in_progress.contains_key(&shard) {
                self.start_hand_off(shard, region, out);
            }
        }
    }

    fn is_member_up(&self, r: RegionRef) -> bool {
        // isMember (akka#18287): the local node, or an Up member of the current view.
        (r.node == self.me.node && r.inc == self.me.inc)
            || self
                .members
                .iter()
                .any(|m| m.region() == r && m.status == MemberStatus::Up)
    }

    /// Register / RegisterProxy (§4.1).
    /// `allocateShardHomesForRememberEntities` (SC:1432-1437): with remember-entities, a
    /// self-sent `GetShardHome` for every shard that lost its home; called after a region
    /// registers, after a region's termination is persisted, and when the state is
    /// initialised, so remembered shards come back without waiting for a message.
    fn allocate_shard_homes_for_remember_entities(&mut self) {
        if !self.state.remember_entities {
            return;
        }
        let shards: Vec<ShardId> = self.state.unallocated.iter().copied().collect();
        for shard in shards {
            self.stash.push_back(Input::Deliver {
                from: self.me,
                msg: Msg::GetShardHome { shard },
            });
        }
    }

    fn on_register(&mut self, from: Addr, region: RegionRef, proxy: bool, out: &mut Outbox) {
        if self.phase != Phase::Active || !self.is_member_up(region) {
            return; // the region retries
        }
        if proxy {
            if self.state.proxies.contains(&region) {
                out.send(from, Msg::RegisterAck);
            } else {
                self.persist(
                    CoordinatorEvent::ShardRegionProxyRegistered { proxy: region },
                    AfterPersist::RegisterAck { to: from },
                    out,
                );
            }
            return;
        }
        self.alive_regions.insert(region);
        if self.alive_regions.len() >= self.settings.min_nr_of_members {
            self.all_regions_registered = true; // never re-checked (§3.4)
        }
        if self.state.regions.contains_key(&region) {
            out.send(from, Msg::RegisterAck);
            self.allocate_shard_homes_for_remember_entities();
        } else {
            self.graceful.remove(&region);
            self.persist(
                CoordinatorEvent::ShardRegionRegistered { region },
                AfterPersist::RegisterAck { to: from },
                out,
            );
        }
    }

    fn region_entries(&self, exclude_leaving: bool) -> Vec<RegionEntry> {
        // regionEntriesFor (§10.1): drop regions whose member is unknown in the current view.
        let mut v = Vec::with_capacity(self.state.regions.len());
        for (r, shards) in &self.state.regions {
            let Some(m) = self.members.iter().find(|m| m.region() == *r) else {
                if self.options.mutation == Mutation::AllocateToDowned {
                    // Broken variant: a region whose member is gone still counts.
                    v.push(RegionEntry {
                        region: *r,
                        up_number: u32::MAX,
                        leaving: false,
                        shards: shards.clone(),
                    });
                }
                continue;
            };
            let leaving = !matches!(m.status, MemberStatus::Up | MemberStatus::Joining);
            if exclude_leaving
                && self.options.mutation != Mutation::AllocateToDowned
                && matches!(m.status, MemberStatus::Down | MemberStatus::Removed)
            {
                continue;
            }
            v.push(RegionEntry {
                region: *r,
                up_number: m.up_number,
                leaving,
                shards: shards.clone(),
            });
        }
        v
    }

    /// GetShardHome decision tree (§4.2).
    fn on_get_shard_home(&mut self, shard: ShardId, requester: Option<Addr>, out: &mut Outbox) {
        if let Some(waiting) = self.rebalance_in_progress.get_mut(&shard) {
            if let Some(r) = requester {
                waiting.insert(r);
            }
            return;
        }
        if self.phase != Phase::Active || !self.all_regions_registered {
            return;
        }
        if let Some(region) = self.state.shards.get(&shard).copied() {
            if self.termination_in_progress.contains(&region) {
                return; // B10 fix (akka#18314): never answer with a terminating region
            }
            if let Some(r) = requester {
                out.send(r, Msg::ShardHome { shard, region });
            }
            return;
        }
        let mut entries = self.region_entries(true);
        if self.options.mutation != Mutation::AllocateToDowned {
            entries.retain(|e| !self.termination_in_progress.contains(&e.region));
            // akka#29131
        }
        // SC:920: `(state.regions -- gracefulShutdownInProgress) -- regionTerminationInProgress`.
        entries.retain(|e| !self.graceful.contains(&e.region));
        if entries.is_empty() {
            return;
        }
        let requester_region = requester
            .map(|a| a.region_ref())
            .unwrap_or(self.me.region_ref());
        let Some(region) = self
            .strategy
            .allocate_shard(requester_region, shard, &entries)
        else {
            return;
        };
        if !self.state.regions.contains_key(&region) {
            return; // the strategy chose an unknown region: ignore, the requester retries
        }
        out.observe(Observation::AllocationDecided { shard, region });
        self.persist(
            CoordinatorEvent::ShardHomeAllocated { shard, region },
            AfterPersist::Allocated {
                shard,
                region,
                requester,
            },
            out,
        );
    }

    fn send_host_shard(&mut self, shard: ShardId, region: RegionRef, out: &mut Outbox) {
        out.send(Addr::region(region), Msg::HostShard { shard });
        out.set_timer(
            Timer::ResendShardHost(shard),
            self.settings.shard_start_timeout(),
        );
    }

    fn on_timeout(&mut self, t: Timer, out: &mut Outbox) {
        match t {
            Timer::RebalanceTick => {
                self.on_rebalance_tick(out);
                out.set_timer(Timer::RebalanceTick, self.settings.rebalance_interval());
            }
            Timer::ResendShardHost(shard) => {
                // Akka (SC:957-961) resends while the shard is allocated to the region, which
                // includes a hand-off in progress and the write of its deallocation: the
                // stale-host-shard-resend hazard. The fix option skips the resend while the
                // shard is in `rebalanceInProgress`; if the hand-off fails the shard stays with
                // a region that has it (or answered ShardStopped), so nothing is lost.
                if self.options.host_shard_resend_skips_handoff
                    && self.rebalance_in_progress.contains_key(&shard)
                {
                    return;
                }
                if let Some(region) = self.state.shards.get(&shard).copied() {
                    self.send_host_shard(shard, region, out);
                }
            }
            Timer::HandOffTimeout(shard) => {
                if self.handoffs.contains_key(&shard) {
                    self.rebalance_done(shard, false, out);
                }
            }
            Timer::StateInitialized => {
                // stateInitialized(): HostShard to the region of every allocated shard (§3.4).
                self.phase = Phase::Active;
                let allocated: Vec<(ShardId, RegionRef)> =
                    self.state.shards.iter().map(|(s, r)| (*s, *r)).collect();
                for (s, r) in allocated {
                    self.send_host_shard(s, r, out);
                }
                self.allocate_shard_homes_for_remember_entities();
            }
            Timer::DelayedShardRegionTerminated(r) => {
                if self.state.regions.contains_key(&r) || self.state.proxies.contains(&r) {
                    self.region_terminated(r, out);
                } else {
                    self.termination_in_progress.remove(&r);
                }
            }
            Timer::PersistTimeout
            | Timer::RestartShard(_)
            | Timer::StarterRetry(_)
            | Timer::GracefulShutdownTimeout
            | Timer::RegionRetry
            | Timer::RegisterRetry
            | Timer::Shard { .. } => {}
        }
    }

    /// RebalanceTick (§4.3).
    fn on_rebalance_tick(&mut self, out: &mut Outbox) {
        if self.phase != Phase::Active || self.state.regions.is_empty() {
            return;
        }
        let mut entries = self.region_entries(false);
        if self.options.rebalance_skips_shutting_down_regions {
            // Fix option (hazards/two-leave-while-joining.toml): a region in graceful shutdown
            // is no rebalance target, as it is no allocation target (§4.4). Akka passes
            // `state.regions` to the strategy (SC:1005-1007), where the shutting-down region,
            // still Up with no shard, is the most suitable one, so shards keep moving from the
            // others and back to them.
            entries.retain(|e| !self.graceful.contains(&e.region));
        }
        let in_progress: BTreeSet<ShardId> = self.rebalance_in_progress.keys().copied().collect();
        let health = ClusterHealth {
            good_time_to_rebalance: self
                .members
                .iter()
                .all(|m| m.status != MemberStatus::Joining),
        };
        let shards = self.strategy.rebalance(&entries, &in_progress, health);
        for shard in shards {
            if self.rebalance_in_progress.contains_key(&shard) {
                continue;
            }
            let Some(from) = self.state.shards.get(&shard).copied() else {
                continue;
            };
            self.start_hand_off(shard, from, out);
        }
    }

    /// Spawn a RebalanceWorker (§7 t1-t2): BeginHandOff to every region and proxy.
    fn start_hand_off(&mut self, shard: ShardId, from: RegionRef, out: &mut Outbox) {
        self.rebalance_in_progress.insert(shard, BTreeSet::new());
        out.observe(Observation::RebalanceStarted { shard, from });
        let pending: BTreeSet<RegionRef> = self
            .state
            .regions
            .keys()
            .chain(self.state.proxies.iter())
            .copied()
            .collect();
        for r in &pending {
            out.send(Addr::region(*r), Msg::BeginHandOff { shard });
        }
        out.set_timer(
            Timer::HandOffTimeout(shard),
            self.settings.handoff_timeout(),
        );
        if pending.is_empty() {
            self.handoffs.insert(shard, HandOff::AwaitingStop { from });
            out.send(Addr::region(from), Msg::HandOff { shard });
        } else {
            self.handoffs
                .insert(shard, HandOff::AwaitingAcks { from, pending });
        }
    }

    fn on_begin_hand_off_ack(&mut self, shard: ShardId, region: RegionRef, out: &mut Outbox) {
        let Some(HandOff::AwaitingAcks { from, pending }) = self.handoffs.get_mut(&shard) else {
            return; // stale ack
        };
        pending.remove(&region);
        if pending.is_empty() {
            let from = *from;
            // §7 t3: all acked → HandOff to the owner.
            out.send(Addr::region(from), Msg::HandOff { shard });
            if self.options.mutation == Mutation::CoordinatorSkipsShardStopped {
                // Broken variant: treat the hand-off as done without waiting for ShardStopped.
                self.rebalance_done(shard, true, out);
            } else {
                self.handoffs.insert(shard, HandOff::AwaitingStop { from });
            }
        }
    }

    fn on_shard_stopped(&mut self, from: Addr, shard: ShardId, out: &mut Outbox) {
        match self.handoffs.get(&shard) {
            Some(HandOff::AwaitingStop { from: owner })
                if from.role == Role::Region && from.region_ref() == *owner =>
            {
                self.rebalance_done(shard, true, out)
            }
            _ => {} // stale: the worker is gone (Akka: dead letter)
        }
    }

    /// RebalanceDone (§4.3).
    fn rebalance_done(&mut self, shard: ShardId, ok: bool, out: &mut Outbox) {
        self.handoffs.remove(&shard);
        out.cancel_timer(Timer::HandOffTimeout(shard));
        out.observe(Observation::RebalanceDone { shard, ok });
        if ok && self.state.shards.contains_key(&shard) {
            self.persist(
                CoordinatorEvent::ShardHomeDeallocated { shard },
                AfterPersist::Deallocated { shard },
                out,
            );
        } else {
            // Timeout (or the region is gone): the shard stays where it was; release requests.
            // A region shutting down counts as alive again and retries its shutdown later
            // (SC:1066-1070).
            if let Some(r) = self.state.shards.get(&shard) {
                self.graceful.remove(r);
            }
            self.clear_rebalance_in_progress(shard);
        }
    }

    /// Re-send the deferred GetShardHome requests to self, with their original senders.
    fn clear_rebalance_in_progress(&mut self, shard: ShardId) {
        if let Some(waiting) = self.rebalance_in_progress.remove(&shard) {
            for r in waiting {
                self.stash.push_back(Input::Deliver {
                    from: r,
                    msg: Msg::GetShardHome { shard },
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{NodeId, NodeInc};
    use crate::protocol::allocation::LeastShardAllocationStrategy;

    fn rref(n: u32) -> RegionRef {
        RegionRef {
            node: NodeId(n),
            inc: NodeInc(1),
        }
    }

    /// A coordinator on node 0 recovered with regions 1 and 2 registered, shard 7 on region 1.
    fn coordinator() -> Coordinator {
        let settings = Settings::default();
        let strategy = Box::new(LeastShardAllocationStrategy::new(
            settings.least_shard_allocation_strategy.clone(),
        ));
        let journal = [
            CoordinatorEvent::ShardRegionRegistered { region: rref(1) },
            CoordinatorEvent::ShardRegionRegistered { region: rref(2) },
            CoordinatorEvent::ShardHomeAllocated {
                shard: ShardId(7),
                region: rref(1),
            },
        ];
        let mut out = Outbox::default();
        let mut c = Coordinator::recover(
            Addr::coordinator(rref(0)),
            settings,
            ProtocolOptions::default(),
            strategy,
            &journal,
            &mut out,
        )
        .unwrap_or_else(|e| unreachable!("{e:?}"));
        c.handle(
            Instant::ZERO,
            Input::Timeout(Timer::StateInitialized),
            &mut out,
        );
        c
    }

    /// The rule a coordinator breaks, if any.
    fn broken(c: &Coordinator) -> Option<&'static str> {
        c.check_invariants().map(|b| {
            assert_eq!(b.role, "coordinator");
            b.rule
        })
    }

    /// Start a hand-off of shard 7 through the coordinator's own path.
    fn handing_off() -> Coordinator {
        let mut c = coordinator();
        let mut out = Outbox::default();
        c.start_hand_off(ShardId(7), rref(1), &mut out);
        assert_eq!(broken(&c), None);
        c
    }

    #[test]
    fn a_recovered_coordinator_and_a_hand_off_keep_every_rule() {
        let mut c = handing_off();
        let mut out = Outbox::default();
        let ack = |n| Input::Deliver {
            from: Addr::region(rref(n)),
            msg: Msg::BeginHandOffAck {
                shard: ShardId(7),
                region: rref(n),
            },
        };
        c.handle(Instant::ZERO, ack(1), &mut out);
        assert_eq!(broken(&c), None);
        c.handle(Instant::ZERO, ack(2), &mut out);
        assert!(matches!(
            c.handoffs().get(&ShardId(7)),
            Some(HandOff::AwaitingStop { .. })
        ));
        assert_eq!(broken(&c), None);
        c.handle(
            Instant::ZERO,
            Input::Deliver {
                from: Addr::region(rref(1)),
                msg: Msg::ShardStopped { shard: ShardId(7) },
            },
            &mut out,
        );
        // Deallocation persisting: the rebalance is still in progress, its worker is gone.
        assert!(c.handoffs().is_empty() && c.persisting.is_some());
        assert_eq!(broken(&c), None);
        c.handle(Instant::ZERO, Input::Persisted, &mut out);
        assert_eq!(broken(&c), None);
    }

    #[test]
    fn handoffs_within_rebalances() {
        let mut c = handing_off();
        c.rebalance_in_progress.clear();
        assert_eq!(broken(&c), Some("handoffs-within-rebalances"));
    }

    #[test]
    fn handoff_owner_registered() {
        let mut c = handing_off();
        c.handoffs
            .insert(ShardId(7), HandOff::AwaitingStop { from: rref(3) });
        assert_eq!(broken(&c), Some("handoff-owner-registered"));
    }

    #[test]
    fn handoff_awaits_registered_regions() {
        let mut c = handing_off();
        let Some(HandOff::AwaitingAcks { pending, .. }) = c.handoffs.get_mut(&ShardId(7)) else {
            unreachable!("BeginHandOff went to two regions")
        };
        pending.insert(rref(3));
        assert_eq!(broken(&c), Some("handoff-awaits-registered-regions"));
    }

    #[test]
    fn stash_only_while_persisting() {
        let mut c = coordinator();
        c.stash.push_back(Input::Timeout(Timer::RebalanceTick));
        assert_eq!(broken(&c), Some("stash-only-while-persisting"));
        let mut c = coordinator();
        c.members_dirty = true;
        assert_eq!(broken(&c), Some("stash-only-while-persisting"));
    }

    #[cfg(debug_assertions)]
    #[test]
    fn allocated_to_registered_region() {
        let mut c = coordinator();
        c.state.shards.insert(ShardId(8), rref(3));
        assert_eq!(broken(&c), Some("allocated-to-registered-region"));
    }

    #[cfg(debug_assertions)]
    #[test]
    fn allocations_match_region_lists() {
        let mut c = coordinator();
        c.state.shards.insert(ShardId(8), rref(2));
        assert_eq!(broken(&c), Some("allocations-match-region-lists"));
        let mut c = coordinator();
        c.state.regions.insert(rref(2), vec![ShardId(9)]);
        assert_eq!(broken(&c), Some("allocations-match-region-lists"));
    }

    #[cfg(debug_assertions)]
    #[test]
    fn regions_and_proxies_disjoint() {
        let mut c = coordinator();
        c.state.proxies.insert(rref(2));
        assert_eq!(broken(&c), Some("regions-and-proxies-disjoint"));
    }
}
