//! ShardCoordinator (docs/akka-reference.md §3.2, §3.3, §4, §7): the cluster singleton that decides
//! where shards live, makes its decisions durable before answering, and drives rebalancing
//! through one hand-off worker per shard.
//!
//! Two modes share the state machine, the handlers and `CoordinatorState::updated`; they differ
//! only in how an event becomes durable and how the state is loaded (`state-store-mode`):
//! - persistence (`PersistentShardCoordinator`, §3.2): [`Coordinator::recover`] replays the
//!   journal; `Output::Persist` asks the host to write an event; until the host answers
//!   `Input::Persisted` every other input is stashed (Akka's `persist`), then the stash is
//!   replayed in order.
//! - ddata (`DDataShardCoordinator`, SC:1658-2108, §3.3): [`Coordinator::start_ddata`] reads
//!   the state register (`Output::StateRead`, retried on `GetFailure`, `Register` dropped
//!   meanwhile); every event becomes `Output::StateWrite` of the whole `state.updated(evt)`
//!   (`waitingForUpdate`): `GetShardHome` for a known shard is answered at once (akka#24064),
//!   others wait in a set of pending requests (akka#25444) unstashed one at a time, `Terminate`
//!   is stashed and marks the coordinator terminating, an `UpdateTimeout` resends the update
//!   (or stops, if terminating).
//!
//! Sans-IO: call [`Coordinator::handle`] with the time and one input.

use crate::ids::{RegionRef, ShardId};
use crate::protocol::allocation::{
    is_a_good_time_to_rebalance, ClusterHealth, RegionEntry, ShardAllocationStrategy,
};
use crate::protocol::settings::{Mutation, ProtocolOptions, Settings};
use crate::protocol::{
    Addr, CoordinatorEvent, Input, Member, MemberStatus, Msg, Observation, Outbox, Output, Role,
    RoleBreach, Timer,
};
use crate::time::{Duration, Instant};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The coordinator's durable state (§3.1, SC:524-598).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
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
    /// Events that rebuild this state from empty with [`CoordinatorState::updated`]: every
    /// region, every proxy, every allocation in its region's order (`unallocated` is left out:
    /// no event sequence from empty produces it alone). For the trace of a ddata load.
    pub fn as_events(&self) -> Vec<CoordinatorEvent> {
        let mut v: Vec<CoordinatorEvent> = self
            .regions
            .keys()
            .map(|r| CoordinatorEvent::ShardRegionRegistered { region: *r })
            .collect();
        v.extend(
            self.proxies
                .iter()
                .map(|p| CoordinatorEvent::ShardRegionProxyRegistered { proxy: *p }),
        );
        for (region, shards) in &self.regions {
            v.extend(shards.iter().map(|s| CoordinatorEvent::ShardHomeAllocated {
                shard: *s,
                region: *region,
            }));
        }
        v
    }

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

/// The answer to a ddata coordinator's state read (`GetSuccess`, `NotFound`, `GetFailure`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateReadResult {
    /// `GetSuccess`: the register's value.
    Found(Box<CoordinatorState>),
    /// `NotFound`: no replica read has the key; the coordinator starts empty.
    NotFound,
    /// `GetFailure`: not enough replicas answered within `waiting-for-state-timeout`.
    Failure,
}

/// The answer to a ddata coordinator's state write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateWriteResult {
    /// `UpdateSuccess`.
    Success,
    /// `UpdateTimeout`: too few replicas acked within `updating-state-timeout`.
    Timeout,
    /// `ModifyFailure`.
    ModifyFailure,
}

/// `coordinator-state.read-majority-plus` (5, §9.1).
pub const STATE_READ_MAJORITY_PLUS: usize = 5;
/// `coordinator-state.write-majority-plus` (3, §9.1).
pub const STATE_WRITE_MAJORITY_PLUS: usize = 3;

/// What only the ddata coordinator has (`DDataShardCoordinator`, SC:1658-2108).
#[derive(Clone, Debug, Default)]
struct Ddata {
    /// `terminating`: `Terminate` arrived while an update was in flight.
    terminating: bool,
    /// `getShardHomeRequests`: `GetShardHome` requests (shard, sender) deferred while the
    /// state loads or an update is in flight; a set, so one per shard and requester
    /// (akka#25444).
    pending: BTreeSet<(ShardId, Addr)>,
    /// With remember-entities: the shards the coordinator's remember store (`shard-<type>-all`)
    /// returned while the state was loading (`waitingForInitialState(rememberedShards)`).
    remembered: BTreeSet<ShardId>,
    /// With remember-entities: the new allocation whose `AddShard` is in flight beside the
    /// state write (`waitingForRememberShard`).
    adding_shard: Option<ShardId>,
    /// The state write of the update in flight succeeded; the `AddShard` has not yet
    /// (`waitingForStateWrite = false`).
    state_written: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// ddata mode: `waitingForInitialState`, the state read is in flight; `Register` and
    /// `RegisterProxy` are dropped (the regions retry).
    WaitingForInitialState,
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
    /// The members its node's view shows as unreachable (`clusterState.unreachable`).
    unreachable: Vec<RegionRef>,
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
    /// `state-store-mode = ddata`; `None` in persistence mode.
    ddata: Option<Ddata>,
    /// `waitingForLocalRegionToTerminate` (SC:1148-1177): `Terminate` arrived while the local
    /// region was alive; the coordinator stops once its termination is processed.
    waiting_for_local_region: bool,
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
        Ok(Coordinator::with_state(
            me, settings, options, strategy, state, phase, None,
        ))
    }

    /// A coordinator of either mode with its loaded `state`, nothing in flight.
    fn with_state(
        me: Addr,
        settings: Settings,
        options: ProtocolOptions,
        strategy: Box<dyn ShardAllocationStrategy>,
        state: CoordinatorState,
        phase: Phase,
        ddata: Option<Ddata>,
    ) -> Self {
        Coordinator {
            me,
            settings,
            options,
            strategy,
            state,
            phase,
            members: Vec::new(),
            unreachable: Vec::new(),
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
            ddata,
            waiting_for_local_region: false,
        }
    }

    /// Start a ddata-mode coordinator (`DDataShardCoordinator`, §3.3): it reads the state
    /// register first (`getCoordinatorState()` in the constructor) and waits in
    /// `waitingForInitialState` for the answer ([`Input::StateRead`]).
    pub fn start_ddata(
        me: Addr,
        settings: Settings,
        options: ProtocolOptions,
        strategy: Box<dyn ShardAllocationStrategy>,
        out: &mut Outbox,
    ) -> Self {
        let state = CoordinatorState {
            remember_entities: settings.remember_entities,
            ..CoordinatorState::default()
        };
        // The base constructor schedules the rebalance tick (SC:850).
        out.set_timer(Timer::RebalanceTick, settings.rebalance_interval());
        let c = Coordinator::with_state(
            me,
            settings,
            options,
            strategy,
            state,
            Phase::WaitingForInitialState,
            Some(Ddata::default()),
        );
        c.read_state(out);
        if c.settings.remember_entities {
            // getAllRememberedShards(): the coordinator's remember store loads the set.
            c.read_remembered_shards(out);
        }
        c
    }

    /// The coordinator remember store's `Get(shard-<type>-all, ReadMajorityPlus(waiting-for-
    /// state-timeout, 5, min-cap))` (`DDataRememberEntitiesCoordinatorStore`, §3.3).
    fn read_remembered_shards(&self, out: &mut Outbox) {
        out.0.push(Output::RememberedShardsRead {
            additional: self.read_additional(),
            timeout: Duration::from_millis(self.settings.waiting_for_state_timeout_ms),
        });
    }

    /// `AddShard(shard)` to the coordinator's remember store: `Update(shard-<type>-all,
    /// WriteMajorityPlus(updating-state-timeout, 3, min-cap))(_ + shard)`.
    fn add_remembered_shard(&self, shard: ShardId, out: &mut Outbox) {
        out.0.push(Output::RememberShardAdd {
            shard,
            additional: self.write_additional(),
            timeout: Duration::from_millis(self.settings.updating_state_timeout_ms),
        });
    }

    fn read_additional(&self) -> usize {
        if self.options.coordinator_plain_majority {
            0
        } else {
            STATE_READ_MAJORITY_PLUS
        }
    }

    fn write_additional(&self) -> usize {
        if self.options.coordinator_plain_majority {
            0
        } else {
            STATE_WRITE_MAJORITY_PLUS
        }
    }

    /// The coordinator's remember store answered its load: the remembered shards, or `None`
    /// (`GetFailure`: the store retries until it has them).
    fn on_remembered_shards(&mut self, ids: Option<Vec<ShardId>>, out: &mut Outbox) {
        let Some(ids) = ids else {
            return self.read_remembered_shards(out);
        };
        if self.ddata.is_none() || !self.settings.remember_entities {
            return;
        }
        if self.persisting.is_some() {
            // waitingForUpdate: "Late arrival of remembered shards ..., stashing".
            self.stash.push_back(Input::RememberedShards(Some(ids)));
            return;
        }
        match self.phase {
            Phase::WaitingForInitialState => {
                if let Some(d) = self.ddata.as_mut() {
                    d.remembered = ids.into_iter().collect();
                }
            }
            // Akka's `waitingForStateInitialized` computes the union with `state.copy(...)`
            // and drops the result (SC:1765-1772): the shards are not added.
            Phase::WaitingForStateInitialized => {}
            // receiveLateRememberedEntities: add them, then allocate them eagerly.
            Phase::Active => {
                if !ids.is_empty() {
                    for s in ids {
                        if !self.state.shards.contains_key(&s) {
                            self.state.unallocated.insert(s);
                        }
                    }
                    self.allocate_shard_homes_for_remember_entities();
                }
            }
        }
    }

    /// The remember store answered the `AddShard` of the update in flight.
    fn on_remember_shard_added(&mut self, ok: bool, out: &mut Outbox) {
        let Some(d) = self.ddata.as_mut() else {
            return;
        };
        let Some(shard) = d.adding_shard else {
            return;
        };
        if !ok {
            // onRememberEntitiesUpdateFailed: stop if terminating, else retry.
            if d.terminating {
                self.stopped = true;
                out.0.push(Output::Stop {
                    reason: "terminating: the remember store update failed",
                });
            } else {
                self.add_remembered_shard(shard, out);
            }
            return;
        }
        d.adding_shard = None;
        if d.state_written {
            d.state_written = false;
            self.update_done(out);
        }
    }

    /// Both writes of the update in flight are done (`unbecomeAfterUpdate`): the continuation,
    /// one pending GetShardHome, then unstashAll (the caller's loop).
    fn update_done(&mut self, out: &mut Outbox) {
        if let Some((evt, _)) = self.persisting {
            out.observe(Observation::CoordinatorStateUpdated { event: evt });
        }
        self.on_persisted(out);
        self.unstash_one_get_shard_home();
    }

    /// Whether this coordinator keeps its state in Distributed Data.
    pub fn is_ddata(&self) -> bool {
        self.ddata.is_some()
    }

    /// Whether it is still reading its state (`waitingForInitialState`).
    pub fn is_loading(&self) -> bool {
        self.phase == Phase::WaitingForInitialState
    }

    /// The event being made durable, if any.
    pub fn in_flight(&self) -> Option<CoordinatorEvent> {
        self.persisting.map(|(e, _)| e)
    }

    /// ddata: the deferred `GetShardHome` requests (shard, requester), in order.
    pub fn pending_get_shard_homes(&self) -> Vec<(ShardId, Addr)> {
        self.ddata
            .as_ref()
            .map(|d| d.pending.iter().copied().collect())
            .unwrap_or_default()
    }

    /// `getCoordinatorState()`: `Get(key, ReadMajorityPlus(waiting-for-state-timeout, 5,
    /// min-cap))` (§3.3); plain majority with the B4 pre-fix option.
    fn read_state(&self, out: &mut Outbox) {
        out.0.push(Output::StateRead {
            additional: self.read_additional(),
            timeout: Duration::from_millis(self.settings.waiting_for_state_timeout_ms),
        });
    }

    /// `sendCoordinatorStateUpdate(evt)`: `Update(key, WriteMajorityPlus(updating-state-timeout,
    /// 3, min-cap))` with `reg.withValueOf(state.updated(evt))` (§3.3); plain majority with the
    /// B4 pre-fix option.
    fn write_state(&self, evt: &CoordinatorEvent, out: &mut Outbox) {
        let mut next = self.state.clone();
        // Our handlers only update with events the state accepts (as in persistence mode).
        let _ = next.updated(evt);
        out.0.push(Output::StateWrite {
            state: Box::new(next),
            additional: self.write_additional(),
            timeout: Duration::from_millis(self.settings.updating_state_timeout_ms),
        });
    }

    /// ddata: `waitingForStateInitialized` stashes everything but `StateInitialized`,
    /// `GetShardHome` (pending) and `Terminate` (SC:1749-1760); persistence mode drops
    /// `Register` and `GetShardHome` there instead.
    fn holds_stash(&self) -> bool {
        self.ddata.is_some() && self.phase == Phase::WaitingForStateInitialized
    }

    /// The answer to the state read (`waitingForInitialState`, SC:1700-1745).
    fn on_state_read(&mut self, result: StateReadResult, out: &mut Outbox) {
        if self.ddata.is_none() || self.phase != Phase::WaitingForInitialState {
            return;
        }
        let loaded = match result {
            // "repeat until GetSuccess"
            StateReadResult::Failure => return self.read_state(out),
            StateReadResult::NotFound => self.state.clone(),
            StateReadResult::Found(s) => CoordinatorState {
                remember_entities: self.settings.remember_entities,
                ..*s
            },
        };
        // `onInitialState`: with remember-entities, the remembered shards that have no home
        // join the unallocated ones.
        self.state = loaded;
        if let Some(d) = self.ddata.as_mut() {
            let remembered = std::mem::take(&mut d.remembered);
            if self.settings.remember_entities {
                for s in remembered {
                    if !self.state.shards.contains_key(&s) {
                        self.state.unallocated.insert(s);
                    }
                }
            }
        }
        out.observe(Observation::CoordinatorStateLoaded {
            state: Box::new(self.state.clone()),
        });
        if self.state.regions.is_empty()
            && self.state.proxies.is_empty()
            && self.state.shards.is_empty()
        {
            self.phase = Phase::Active; // empty state: activate at once
        } else {
            // watchStateActors() (the member view is looked at next), StateInitialized after
            // 500 ms (SC:1294-1322).
            self.phase = Phase::WaitingForStateInitialized;
            self.members_dirty = true;
            out.set_timer(Timer::StateInitialized, Duration::from_millis(500));
        }
    }

    /// The answer to the update in flight (`waitingForUpdate`, SC:1775-1860).
    fn on_state_written(&mut self, result: StateWriteResult, out: &mut Outbox) {
        let (Some(d), Some((evt, _))) = (self.ddata.as_ref(), self.persisting) else {
            return;
        };
        let terminating = d.terminating;
        match result {
            StateWriteResult::Success => {
                // With a remember store AddShard in flight, wait for it too.
                if let Some(d) = self.ddata.as_mut().filter(|d| d.adding_shard.is_some()) {
                    d.state_written = true;
                    return;
                }
                self.update_done(out);
            }
            StateWriteResult::Timeout if terminating => {
                self.stopped = true;
                out.0.push(Output::Stop {
                    reason: "terminating: the state update timed out",
                });
            }
            // "repeat until UpdateSuccess"
            StateWriteResult::Timeout => self.write_state(&evt, out),
            // `throw cause` (restart; here a stop and the singleton's back-off), or stop when
            // terminating.
            StateWriteResult::ModifyFailure => {
                self.stopped = true;
                out.0.push(Output::Stop {
                    reason: "the state update failed (ModifyFailure)",
                });
            }
        }
    }

    /// `unstashOneGetShardHomeRequest` (SC:1885-1893): one deferred request back to the
    /// mailbox, after whatever is stashed. Akka takes `getShardHomeRequests.head` of a hash
    /// set; here the first by (shard, requester). A no-op in persistence mode.
    fn unstash_one_get_shard_home(&mut self) {
        let Some(d) = self.ddata.as_mut() else {
            return;
        };
        if let Some((shard, from)) = d.pending.pop_first() {
            self.stash.push_back(Input::Deliver {
                from,
                msg: Msg::GetShardHome { shard },
            });
        }
    }

    /// An input while the ddata state read is in flight (`waitingForInitialState`).
    fn while_loading(&mut self, input: Input, out: &mut Outbox) {
        match input {
            Input::Terminate => {
                self.stopped = true;
                out.0.push(Output::Stop {
                    reason: "Terminate while waiting for the state",
                });
            }
            // The fixed-delay tick keeps coming; unhandled now.
            Input::Timeout(Timer::RebalanceTick) => {
                out.set_timer(Timer::RebalanceTick, self.settings.rebalance_interval())
            }
            // Register, RegisterProxy ("not initialized yet"), GetShardHome and the rest:
            // unhandled, the regions retry.
            _ => {}
        }
    }

    /// An input during `waitingForStateInitialized` in ddata mode (SC:1749-1760).
    fn while_initializing(&mut self, now: Instant, input: Input, out: &mut Outbox) {
        match input {
            Input::Timeout(Timer::StateInitialized) => {
                self.unstash_one_get_shard_home();
                self.dispatch(now, input, out);
            }
            Input::Deliver {
                from,
                msg: Msg::GetShardHome { shard },
            } => {
                if let Some(d) = self.ddata.as_mut() {
                    d.pending.insert((shard, from));
                }
            }
            Input::Terminate => self.dispatch(now, input, out),
            input => self.stash.push_back(input),
        }
    }

    /// An input while the ddata update is in flight (`waitingForUpdate`).
    fn while_updating(&mut self, input: Input, out: &mut Outbox) {
        match input {
            Input::Deliver {
                from,
                msg: Msg::GetShardHome { shard },
            } => {
                let requester = if from == self.me { None } else { Some(from) };
                if !self.handle_get_shard_home(shard, requester, out) {
                    // must wait for the update in progress
                    if let Some(d) = self.ddata.as_mut() {
                        d.pending.insert((shard, from));
                    }
                }
            }
            Input::Terminate => {
                if let Some(d) = self.ddata.as_mut() {
                    d.terminating = true;
                }
                self.stash.push_back(input);
            }
            input => self.stash.push_back(input),
        }
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
            Input::Unreachable(unreachable) => {
                // Read only by the rebalance gate; nothing to do now.
                self.unreachable = unreachable;
                return;
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
            Input::Persisted if self.persisting.is_some() && self.ddata.is_none() => {
                self.on_persisted(out)
            }
            Input::StateRead(r) => self.on_state_read(r, out),
            Input::StateWritten(r) => self.on_state_written(r, out),
            Input::RememberShardAdded(ok) => self.on_remember_shard_added(ok, out),
            Input::RememberedShards(ids) => self.on_remembered_shards(ids, out),
            input if self.phase == Phase::WaitingForInitialState => self.while_loading(input, out),
            input if self.persisting.is_some() && self.ddata.is_some() => {
                self.while_updating(input, out)
            }
            input if self.persisting.is_some() => self.stash.push_back(input),
            input if self.holds_stash() => self.while_initializing(now, input, out),
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
            if self.holds_stash() {
                break;
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
    /// ShardCoordinator (docs/akka-reference.md, sections cited per rule); the first broken one, as
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
            if !self.stash.is_empty() && !self.holds_stash() {
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
            Input::Request(_)
            | Input::MembersChanged(_)
            | Input::Persisted
            | Input::Unreachable(_)
            | Input::StateRead(_)
            | Input::StateWritten(_)
            | Input::RememberedShards(_)
            | Input::RememberShardAdded(_) => {}
            Input::Terminate => self.terminate(out),
        }
    }

    /// This node's own region.
    fn local_region(&self) -> RegionRef {
        self.me.region_ref()
    }

    /// `terminate()` (SC:1148-1177, §4.5, the fix of §12 B17, akka#28917/PR #30338): the
    /// singleton's `Terminate`. If the local region is alive here, or handing off its shards
    /// (`gracefulShutdownInProgress`), the coordinator tells it `GracefulShutdown` and stops only
    /// once that region's termination has been processed (`waitingForLocalRegionToTerminate`,
    /// then `terminate()` again from `regionTerminated`); otherwise it stops at once.
    /// Akka HEAD does this on every hand-over, also one that is not a shutdown of this node,
    /// and the region it stops is never started again (§12 B11, akka.net#8583). Options:
    /// `coordinator-stops-before-local-region` (Akka before 2.6.16) stops at once;
    /// `hand-over-keeps-local-region` (the fix of akka.net PR #8586) shuts the region down only
    /// if it is already handing off or this node is Leaving, Exiting or Down.
    fn terminate(&mut self, out: &mut Outbox) {
        let local = self.local_region();
        let alive = self.alive_regions.contains(&local);
        let handing_off = self.graceful.contains(&local);
        let node_leaving = self.members.iter().any(|m| {
            m.region() == local
                && matches!(
                    m.status,
                    MemberStatus::Leaving | MemberStatus::Exiting | MemberStatus::Down
                )
        });
        let wait = (alive || handing_off)
            && !self.options.coordinator_stops_before_local_region
            && (!self.options.hand_over_keeps_local_region || handing_off || node_leaving);
        if wait {
            if alive {
                // "region will get this from taking part in coordinated shutdown, but for good
                // measure"
                out.send(Addr::region(local), Msg::GracefulShutdown);
            }
            self.waiting_for_local_region = true;
            return;
        }
        self.stopped = true;
        out.0.push(Output::Stop {
            reason: "handed over to the new oldest (Terminate)",
        });
    }

    fn persist(&mut self, evt: CoordinatorEvent, then: AfterPersist, out: &mut Outbox) {
        self.persisting = Some((evt, then));
        if self.ddata.is_some() {
            // `update(evt)`: the whole new state to the replicator, `waitingForUpdate`; with
            // remember-entities a new allocation is also added to the remember store.
            self.write_state(&evt, out);
            if let CoordinatorEvent::ShardHomeAllocated { shard, .. } = evt {
                if self.settings.remember_entities && !self.state.shards.contains_key(&shard) {
                    if let Some(d) = self.ddata.as_mut() {
                        d.adding_shard = Some(shard);
                        d.state_written = false;
                    }
                    self.add_remembered_shard(shard, out);
                }
            }
            return;
        }
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
        if self.ddata.is_none() {
            out.cancel_timer(Timer::PersistTimeout);
        }
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
                if region == self.local_region() && self.waiting_for_local_region {
                    // "Local region stopped, terminating coordinator" (SC:1343-1348).
                    self.terminate(out);
                }
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
            | Msg::HandOverDone
            | Msg::GracefulShutdown => {}
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
        if self.graceful.contains(&region)
            || self.options.mutation == Mutation::CoordinatorIgnoresGracefulShutdownReq
        {
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
        // isMember (akka#18287): the local node, or an Up member of the current view. Before
        // the fix (§12 B3) any region registered.
        if self.options.register_from_non_up_members {
            return true;
        }
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
                        app_version: 0,
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
                app_version: m.app_version,
                shards: shards.clone(),
            });
        }
        v
    }

    /// `handleGetShardHome` (SC:1240-1270): true when the request is dealt with (deferred
    /// behind a rebalance, ignored before enough regions registered, or answered with the known
    /// home), false when the shard must be allocated. In ddata mode a request dealt with lets
    /// the next deferred one in ("continue unstash").
    fn handle_get_shard_home(
        &mut self,
        shard: ShardId,
        requester: Option<Addr>,
        out: &mut Outbox,
    ) -> bool {
        if let Some(waiting) = self.rebalance_in_progress.get_mut(&shard) {
            if let Some(r) = requester {
                waiting.insert(r);
            }
            self.unstash_one_get_shard_home();
            return true;
        }
        if self.phase != Phase::Active {
            // Persistence mode drops it; ddata mode defers it (an update stacked on
            // `waitingForStateInitialized`).
            return self.ddata.is_none();
        }
        if !self.all_regions_registered {
            return true;
        }
        if let Some(region) = self.state.shards.get(&shard).copied() {
            if self.termination_in_progress.contains(&region) {
                // B10 fix (akka#18314): never answer with a terminating region
            } else if let Some(r) = requester {
                out.send(r, Msg::ShardHome { shard, region });
            }
            self.unstash_one_get_shard_home();
            return true;
        }
        false
    }

    /// GetShardHome decision tree (§4.2).
    fn on_get_shard_home(&mut self, shard: ShardId, requester: Option<Addr>, out: &mut Outbox) {
        if self.handle_get_shard_home(shard, requester, out) {
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
        if self.options.mutation == Mutation::CoordinatorAnswersBeforeWrite {
            // Broken on purpose: Akka answers only once the write is durable (SC:1396-1441).
            if let Some(r) = requester {
                out.send(r, Msg::ShardHome { shard, region });
            }
        }
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
        // `isAGoodTimeToRebalance` (MIX, 2.6.10, §12 B38): the regions on one app version, no
        // member unreachable, none joining. Before 2.6.10 (`rebalance-during-rolling-update`)
        // there was no such check: a rebalance ran whenever the strategy asked for one.
        let health = ClusterHealth {
            good_time_to_rebalance: self.options.rebalance_during_rolling_update
                || is_a_good_time_to_rebalance(&entries, &self.members, &self.unreachable),
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

    /// The coordinator of [`coordinator`] with `options`, node 0's own region registered and
    /// alive, and node 0's member `status` in its view.
    fn with_local_region(options: ProtocolOptions, status: MemberStatus) -> Coordinator {
        let mut c = coordinator();
        c.options = options;
        let mut out = Outbox::default();
        let member = |n: u32, status| Member {
            node: NodeId(n),
            inc: NodeInc(1),
            up_number: n + 1,
            status,
            hosting: true,
            app_version: 0,
        };
        let view = vec![
            member(0, status),
            member(1, MemberStatus::Up),
            member(2, MemberStatus::Up),
        ];
        c.handle(Instant::ZERO, Input::MembersChanged(view), &mut out);
        c.handle(
            Instant::ZERO,
            Input::Deliver {
                from: Addr::region(rref(0)),
                msg: Msg::Register { region: rref(0) },
            },
            &mut out,
        );
        c.handle(Instant::ZERO, Input::Persisted, &mut out);
        assert!(c.alive_regions.contains(&rref(0)) && !c.stopped);
        c
    }

    fn stops(out: &Outbox) -> bool {
        out.0.iter().any(|o| matches!(o, Output::Stop { .. }))
    }

    fn tells_local_region_to_shut_down(out: &Outbox) -> bool {
        out.0.iter().any(|o| {
            matches!(o, Output::Send { to, msg: Msg::GracefulShutdown } if *to == Addr::region(rref(0)))
        })
    }

    /// `terminate()` (SC:1148-1177, §12 B17's fix): with its local region alive the coordinator
    /// tells it `GracefulShutdown` and stops only once that region's termination is written.
    #[test]
    fn terminate_waits_for_the_local_region() {
        let mut c = with_local_region(ProtocolOptions::default(), MemberStatus::Exiting);
        let mut out = Outbox::default();
        c.handle(Instant::ZERO, Input::Terminate, &mut out);
        assert!(tells_local_region_to_shut_down(&out) && !stops(&out) && !c.stopped);
        let mut out = Outbox::default();
        c.handle(
            Instant::ZERO,
            Input::Deliver {
                from: Addr::region(rref(0)),
                msg: Msg::RegionStopped { region: rref(0) },
            },
            &mut out,
        );
        assert!(!stops(&out), "the region's termination is persisted first");
        let mut out = Outbox::default();
        c.handle(Instant::ZERO, Input::Persisted, &mut out);
        assert!(stops(&out) && c.stopped);
        assert_eq!(broken(&c), None);
    }

    /// §12 B17 before Akka 2.6.16: `Terminate` stops the coordinator at once.
    #[test]
    fn pre_fix_terminate_stops_at_once() {
        let options = ProtocolOptions {
            coordinator_stops_before_local_region: true,
            ..Default::default()
        };
        let mut c = with_local_region(options, MemberStatus::Exiting);
        let mut out = Outbox::default();
        c.handle(Instant::ZERO, Input::Terminate, &mut out);
        assert!(stops(&out) && !tells_local_region_to_shut_down(&out));
    }

    /// §12 B11: Akka's `terminate()` shuts the local region down on a hand-over also while its
    /// node stays Up; the fix option (akka.net PR #8586) stops only the coordinator then, and
    /// still waits for the region on a node that is leaving.
    #[test]
    fn hand_over_of_a_staying_node_and_the_local_region() {
        let mut c = with_local_region(ProtocolOptions::default(), MemberStatus::Up);
        let mut out = Outbox::default();
        c.handle(Instant::ZERO, Input::Terminate, &mut out);
        assert!(tells_local_region_to_shut_down(&out) && !stops(&out));
        let fix = ProtocolOptions {
            hand_over_keeps_local_region: true,
            ..Default::default()
        };
        let mut c = with_local_region(fix.clone(), MemberStatus::Up);
        let mut out = Outbox::default();
        c.handle(Instant::ZERO, Input::Terminate, &mut out);
        assert!(stops(&out) && !tells_local_region_to_shut_down(&out));
        let mut c = with_local_region(fix, MemberStatus::Leaving);
        let mut out = Outbox::default();
        c.handle(Instant::ZERO, Input::Terminate, &mut out);
        assert!(tells_local_region_to_shut_down(&out) && !stops(&out));
    }
}
