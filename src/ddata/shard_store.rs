//! The `ddata` remember-entities store (`DDataRememberEntitiesShardStore`, akka-sharding.md
//! §6.4): one store per Shard instance, in front of the node's [`Replicator`].
//!
//! Sans-IO like every role: [`RememberStores::handle`] takes one [`StoreInput`] and appends
//! [`StoreOutput`]s. What it does, after Akka's `DDataRememberEntitiesShardStore.scala`:
//! - a store starts by reading the shard's 5 keys (`ReadMajorityPlus(waiting-for-state-timeout,
//!   coordinator-state.read-majority-plus, majority-min-cap)`), retrying a failed read (15
//!   attempts over all keys, then the store stops: the Shard throws and restarts);
//! - `GetEntities` is answered with the union once every key was read;
//! - `Update(started, stopped)` becomes one replicator `Update` per key touched
//!   (`WriteMajorityPlus(updating-state-timeout / 4, write-majority-plus, min-cap)`), each retried
//!   on `UpdateTimeout` up to 3 attempts (then the store stops); `UpdateDone` when all succeeded;
//! - an `Update` before the load completed, or while one is in flight, is dropped, as Akka does
//!   (logged there; the Shard's own timeout then fires).
//!
//! A Shard instance (region uid, restart count) owns one store; a request from a newer
//! instance of the same shard replaces the old store, whose late answers are then ignored (the
//! old store was the old Shard's child and died with it).

use super::{
    entity_key_part, Data, Key, ReadConsistency, ReplInput, ReplOutput, Replicator, UpdateOp,
    UpdateResult, WriteConsistency, ENTITY_KEYS_PER_SHARD,
};
use crate::ddata::GetResult;
use crate::ids::{EntityId, ShardId};
use crate::protocol::{StoreOp, StoreReply, StoreReplyKind, StoreRequest};
use crate::time::{Duration, Instant};
use std::collections::{BTreeMap, BTreeSet};

/// The settings a store uses (§9.1).
#[derive(Clone, Copy, Debug)]
pub struct StoreSettings {
    /// `waiting-for-state-timeout`: each key read's timeout.
    pub waiting_for_state_timeout: Duration,
    /// `updating-state-timeout`: a write's timeout is a quarter of it (3 attempts and an
    /// answer fit in the Shard's own timeout).
    pub updating_state_timeout: Duration,
    /// `coordinator-state.read-majority-plus` (5).
    pub read_majority_plus: usize,
    /// `coordinator-state.write-majority-plus` (3).
    pub write_majority_plus: usize,
}

impl Default for StoreSettings {
    fn default() -> Self {
        StoreSettings {
            waiting_for_state_timeout: Duration::from_secs(2),
            updating_state_timeout: Duration::from_secs(5),
            read_majority_plus: 5,
            write_majority_plus: 3,
        }
    }
}

/// What the stores are told.
#[derive(Clone, Debug)]
pub enum StoreInput {
    /// A Shard's request.
    Request(StoreRequest),
    /// Something for the replicator (a message, a timer, the members).
    Replicator(ReplInput),
}

/// What the stores ask of the node.
#[derive(Clone, Debug)]
pub enum StoreOutput {
    /// A replicator output other than its answers (send, timer, durable write).
    Replicator(ReplOutput),
    /// An answer for a Shard.
    Reply(StoreReply),
    /// A write completed on a majority: `started` are now remembered, `stopped` no longer.
    Written {
        /// The shard.
        shard: ShardId,
        /// Added.
        started: Vec<EntityId>,
        /// Removed.
        stopped: Vec<EntityId>,
    },
    /// `RememberedEntities` went to the Shard.
    Read {
        /// The shard.
        shard: ShardId,
        /// The entities.
        entities: Vec<EntityId>,
    },
}

#[derive(Clone, Debug)]
enum State {
    /// Reading the keys; `waiting`: the Shard asked already.
    Loading {
        got: BTreeSet<u8>,
        ids: BTreeSet<EntityId>,
        waiting: bool,
    },
    Idle,
    /// Writing: per key part, its op and the attempts left.
    Updating {
        started: Vec<EntityId>,
        stopped: Vec<EntityId>,
        left: BTreeMap<u8, (UpdateOp, u32)>,
    },
    /// Gave up: the Shard was told.
    Stopped,
}

#[derive(Clone, Debug)]
struct ShardStore {
    uid: u32,
    instance: u32,
    state: State,
    reads_left: u32,
}

/// A replicator request in flight: which store and key part it is for.
#[derive(Clone, Copy, Debug)]
struct Pending {
    shard: ShardId,
    uid: u32,
    instance: u32,
    part: u8,
}

/// The node's ddata remember-entities stores and their replicator.
pub struct RememberStores {
    replicator: Replicator,
    settings: StoreSettings,
    stores: BTreeMap<ShardId, ShardStore>,
    pending: BTreeMap<u64, Pending>,
    next_req: u64,
    scratch: Vec<ReplOutput>,
}

const MAX_UPDATE_ATTEMPTS: u32 = 3;
const MAX_READ_ATTEMPTS: u32 = 15;

impl RememberStores {
    /// Stores in front of `replicator`.
    pub fn new(replicator: Replicator, settings: StoreSettings) -> Self {
        RememberStores {
            replicator,
            settings,
            stores: BTreeMap::new(),
            pending: BTreeMap::new(),
            next_req: 0,
            scratch: Vec::new(),
        }
    }

    /// The replicator (for checkers and tests).
    pub fn replicator(&self) -> &Replicator {
        &self.replicator
    }

    /// Handle one input.
    pub fn handle(&mut self, now: Instant, input: StoreInput, out: &mut Vec<StoreOutput>) {
        match input {
            StoreInput::Request(req) => self.request(now, req, out),
            StoreInput::Replicator(i) => self.replicate(now, i, out),
        }
    }

    fn read_consistency(&self) -> ReadConsistency {
        ReadConsistency::Majority {
            additional: self.settings.read_majority_plus,
        }
    }

    fn write_consistency(&self) -> WriteConsistency {
        WriteConsistency::Majority {
            additional: self.settings.write_majority_plus,
        }
    }

    /// Hand one input to the replicator and route its outputs.
    fn replicate(&mut self, now: Instant, input: ReplInput, out: &mut Vec<StoreOutput>) {
        let mut scratch = std::mem::take(&mut self.scratch);
        self.replicator.handle(now, input, &mut scratch);
        for o in scratch.drain(..) {
            match o {
                ReplOutput::GetResponse { req, result, .. } => self.on_get(now, req, result, out),
                ReplOutput::UpdateResponse { req, result, .. } => {
                    self.on_update(now, req, result, out)
                }
                other => out.push(StoreOutput::Replicator(other)),
            }
        }
        self.scratch = scratch;
    }

    fn get(&mut self, now: Instant, p: Pending, out: &mut Vec<StoreOutput>) {
        let req = self.next_req;
        self.next_req += 1;
        self.pending.insert(req, p);
        let input = ReplInput::Get {
            req,
            key: Key::ShardEntities {
                shard: p.shard,
                part: p.part,
            },
            consistency: self.read_consistency(),
            timeout: self.settings.waiting_for_state_timeout,
        };
        self.replicate(now, input, out);
    }

    fn update(&mut self, now: Instant, p: Pending, op: UpdateOp, out: &mut Vec<StoreOutput>) {
        let req = self.next_req;
        self.next_req += 1;
        self.pending.insert(req, p);
        let timeout =
            Duration::from_micros((self.settings.updating_state_timeout.as_micros() / 4).max(1));
        let input = ReplInput::Update {
            req,
            key: Key::ShardEntities {
                shard: p.shard,
                part: p.part,
            },
            consistency: self.write_consistency(),
            timeout,
            op,
        };
        self.replicate(now, input, out);
    }

    fn request(&mut self, now: Instant, req: StoreRequest, out: &mut Vec<StoreOutput>) {
        let current = self
            .stores
            .get(&req.shard)
            .is_some_and(|s| s.uid == req.uid && s.instance == req.instance);
        if !current {
            // A new Shard instance: its own store, which starts by loading every key.
            self.stores.insert(
                req.shard,
                ShardStore {
                    uid: req.uid,
                    instance: req.instance,
                    state: State::Loading {
                        got: BTreeSet::new(),
                        ids: BTreeSet::new(),
                        waiting: false,
                    },
                    reads_left: MAX_READ_ATTEMPTS,
                },
            );
            for part in 0..ENTITY_KEYS_PER_SHARD {
                let p = Pending {
                    shard: req.shard,
                    uid: req.uid,
                    instance: req.instance,
                    part,
                };
                self.get(now, p, out);
            }
        }
        let Some(store) = self.stores.get_mut(&req.shard) else {
            return;
        };
        match (req.op, &mut store.state) {
            (StoreOp::GetEntities, State::Loading { waiting, .. }) => {
                *waiting = true;
                self.maybe_loaded(req.shard, out);
            }
            (StoreOp::GetEntities, _) => {} // "not supported": ignored
            (StoreOp::Update { started, stopped }, State::Idle) => {
                let mut by_part: BTreeMap<u8, (Vec<u32>, Vec<u32>)> = BTreeMap::new();
                for e in &started {
                    by_part.entry(entity_key_part(*e)).or_default().0.push(e.0);
                }
                for e in &stopped {
                    by_part.entry(entity_key_part(*e)).or_default().1.push(e.0);
                }
                let left: BTreeMap<u8, (UpdateOp, u32)> = by_part
                    .into_iter()
                    .map(|(part, (add, remove))| {
                        (
                            part,
                            (
                                UpdateOp::OrSetUpdate { add, remove },
                                MAX_UPDATE_ATTEMPTS - 1,
                            ),
                        )
                    })
                    .collect();
                let (uid, instance) = (store.uid, store.instance);
                let ops: Vec<(u8, UpdateOp)> =
                    left.iter().map(|(p, (op, _))| (*p, op.clone())).collect();
                store.state = State::Updating {
                    started,
                    stopped,
                    left,
                };
                for (part, op) in ops {
                    let p = Pending {
                        shard: req.shard,
                        uid,
                        instance,
                        part,
                    };
                    self.update(now, p, op, out);
                }
                self.maybe_written(req.shard, out);
            }
            // Before the load completed ("dropping update"), or while a write is in flight
            // ("deferred to next write", in fact dropped): Akka logs and drops it.
            (StoreOp::Update { .. }, _) => {}
        }
    }

    /// The store `p` names, if it is still the current one.
    fn store_of(&mut self, p: &Pending) -> Option<&mut ShardStore> {
        self.stores
            .get_mut(&p.shard)
            .filter(|s| s.uid == p.uid && s.instance == p.instance)
    }

    fn on_get(&mut self, now: Instant, req: u64, result: GetResult, out: &mut Vec<StoreOutput>) {
        let Some(p) = self.pending.remove(&req) else {
            return;
        };
        let Some(store) = self.store_of(&p) else {
            return;
        };
        let State::Loading { got, ids, .. } = &mut store.state else {
            return;
        };
        match result {
            GetResult::Success(data) => {
                got.insert(p.part);
                if let Data::OrSet(set) = data {
                    ids.extend(set.elements().map(EntityId));
                }
            }
            GetResult::NotFound => {
                got.insert(p.part);
            }
            GetResult::Failure => {
                store.reads_left = store.reads_left.saturating_sub(1);
                if store.reads_left > 0 {
                    return self.get(now, p, out);
                }
                // "giving up after retrying": the store stops, the Shard throws.
                store.state = State::Stopped;
                return out.push(StoreOutput::Reply(StoreReply {
                    shard: p.shard,
                    uid: p.uid,
                    instance: p.instance,
                    kind: StoreReplyKind::StoreStopped,
                }));
            }
        }
        self.maybe_loaded(p.shard, out);
    }

    fn maybe_loaded(&mut self, shard: ShardId, out: &mut Vec<StoreOutput>) {
        let Some(store) = self.stores.get_mut(&shard) else {
            return;
        };
        let State::Loading { got, ids, waiting } = &mut store.state else {
            return;
        };
        if !*waiting || got.len() < ENTITY_KEYS_PER_SHARD as usize {
            return;
        }
        let entities: Vec<EntityId> = std::mem::take(ids).into_iter().collect();
        let (uid, instance) = (store.uid, store.instance);
        store.state = State::Idle;
        out.push(StoreOutput::Read {
            shard,
            entities: entities.clone(),
        });
        out.push(StoreOutput::Reply(StoreReply {
            shard,
            uid,
            instance,
            kind: StoreReplyKind::Remembered(entities),
        }));
    }

    fn on_update(
        &mut self,
        now: Instant,
        req: u64,
        result: UpdateResult,
        out: &mut Vec<StoreOutput>,
    ) {
        let Some(p) = self.pending.remove(&req) else {
            return;
        };
        let Some(store) = self.store_of(&p) else {
            return;
        };
        let State::Updating { left, .. } = &mut store.state else {
            return;
        };
        match result {
            UpdateResult::Success => {
                left.remove(&p.part);
            }
            UpdateResult::Timeout => {
                let Some((op, attempts)) = left.get_mut(&p.part) else {
                    return;
                };
                if *attempts > 0 {
                    *attempts -= 1;
                    let op = op.clone();
                    return self.update(now, p, op, out);
                }
                store.state = State::Stopped;
                return out.push(StoreOutput::Reply(StoreReply {
                    shard: p.shard,
                    uid: p.uid,
                    instance: p.instance,
                    kind: StoreReplyKind::StoreStopped,
                }));
            }
            UpdateResult::ModifyFailure => {
                store.state = State::Stopped;
                return out.push(StoreOutput::Reply(StoreReply {
                    shard: p.shard,
                    uid: p.uid,
                    instance: p.instance,
                    kind: StoreReplyKind::StoreStopped,
                }));
            }
        }
        self.maybe_written(p.shard, out);
    }

    fn maybe_written(&mut self, shard: ShardId, out: &mut Vec<StoreOutput>) {
        let Some(store) = self.stores.get_mut(&shard) else {
            return;
        };
        let State::Updating { left, .. } = &store.state else {
            return;
        };
        if !left.is_empty() {
            return;
        }
        let State::Updating {
            started, stopped, ..
        } = std::mem::replace(&mut store.state, State::Idle)
        else {
            return;
        };
        out.push(StoreOutput::Written {
            shard,
            started,
            stopped,
        });
        out.push(StoreOutput::Reply(StoreReply {
            shard,
            uid: store.uid,
            instance: store.instance,
            kind: StoreReplyKind::UpdateDone,
        }));
    }
}
