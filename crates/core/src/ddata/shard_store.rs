//! The `ddata` remember-entities store (`DDataRememberEntitiesShardStore`, docs/akka-reference.md
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
//!   on `UpdateTimeout` 3 times (then the store stops); `UpdateDone` when all succeeded;
//! - an `Update` before the load completed, or while one is in flight, is dropped, as Akka does
//!   (logged there; the Shard's own timeout then fires).
//!
//! The node's one [`Replicator`] lives here, beside the stores: with `state-store-mode = ddata`
//! the coordinator's requests go through [`StoreInput::Replicator`] too, and the answers for
//! keys ([`Key::CoordinatorState`], and [`Key::AllShards`] of its remember store) come back out
//! as [`StoreOutput::Replicator`].
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
        /// The shard whose remembered entities were written.
        shard: ShardId,
        /// Added.
        started: Vec<EntityId>,
        /// Removed.
        stopped: Vec<EntityId>,
    },
    /// `RememberedEntities` went to the Shard.
    Read {
        /// The shard whose Shard was sent its remembered entities.
        shard: ShardId,
        /// The remembered entities sent, gathered from every one of the shard's keys.
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

/// `maxUpdateAttempts`: each key starts with 3 retries left (4 attempts in all, "3 retries and
/// a response" within the Shard's timeout).
const MAX_UPDATE_ATTEMPTS: u32 = 3;
const MAX_READ_ATTEMPTS: u32 = 15;

/// The store gave up (it stops): the Shard's death watch of it.
fn stopped_reply(p: &Pending) -> StoreOutput {
    StoreOutput::Reply(StoreReply {
        shard: p.shard,
        uid: p.uid,
        instance: p.instance,
        kind: StoreReplyKind::StoreStopped,
    })
}

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
                // The coordinator's register and its remember store share the node's
                // replicator (§3.3): their answers go to the node, which hands them to the
                // coordinator.
                ReplOutput::GetResponse {
                    key: Key::CoordinatorState | Key::AllShards,
                    ..
                }
                | ReplOutput::UpdateResponse {
                    key: Key::CoordinatorState | Key::AllShards,
                    ..
                } => out.push(StoreOutput::Replicator(o)),
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
                            (UpdateOp::OrSetUpdate { add, remove }, MAX_UPDATE_ATTEMPTS),
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
                return out.push(stopped_reply(&p));
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
                return out.push(stopped_reply(&p));
            }
            UpdateResult::ModifyFailure => {
                store.state = State::Stopped;
                return out.push(stopped_reply(&p));
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

/// The store against `DDataRememberEntitiesShardStore.scala` (DDS:n: its lines at akka
/// `9892c5e415`, the same at the mirror's HEAD). Node 0 runs the stores in front of its
/// replicator; nodes 1.. run bare replicators; one FIFO queue of messages delivered only when
/// a test says so, timers in a map, nodes that can be cut off (their messages dropped).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::ddata::{OrSet, ReplMsg, ReplTimer, ReplicatorConfig};
    use crate::ids::{NodeId, NodeInc};
    use crate::membership::NodeAddr;
    use std::collections::VecDeque;

    const S: ShardId = ShardId(1);

    fn addr(i: usize) -> NodeAddr {
        NodeAddr {
            node: NodeId(i as u32),
            inc: NodeInc(1),
        }
    }

    fn ids(v: &[u32]) -> Vec<EntityId> {
        v.iter().map(|e| EntityId(*e)).collect()
    }

    /// A durable map holding `entities` of shard `S` in their keys, as written by `node`.
    fn disk(node: usize, entities: &[u32]) -> BTreeMap<Key, Data> {
        let mut m: BTreeMap<Key, Data> = BTreeMap::new();
        for e in entities {
            let key = Key::for_entity(S, EntityId(*e));
            let entry = m.entry(key).or_insert_with(|| Data::OrSet(OrSet::new()));
            if let Data::OrSet(set) = entry {
                set.add(addr(node), *e);
            }
        }
        m
    }

    struct Net {
        now: Instant,
        stores: RememberStores,
        /// Node i (i >= 1) is `others[i - 1]`.
        others: Vec<Replicator>,
        queue: VecDeque<(usize, usize, ReplMsg)>,
        timers: BTreeMap<(usize, ReplTimer), Instant>,
        cut: BTreeSet<usize>,
        /// The stores' answers to Shards, in order.
        replies: Vec<StoreReply>,
        /// The stores' `Written` outputs: (started, stopped).
        written: Vec<(Vec<EntityId>, Vec<EntityId>)>,
        /// Every message node 0 sent (cut or not): (to, message).
        sent: Vec<(usize, ReplMsg)>,
    }

    impl Net {
        /// `n` nodes, each told the others are its members; node `i` starts from `disks[i]`.
        fn new(n: usize, mut disks: Vec<BTreeMap<Key, Data>>) -> Net {
            disks.resize(n, BTreeMap::new());
            let mut disks = disks.into_iter();
            let cfg = ReplicatorConfig::default();
            let r0 = Replicator::new(addr(0), cfg.clone(), disks.next().unwrap());
            let mut net = Net {
                now: Instant::ZERO,
                stores: RememberStores::new(r0, StoreSettings::default()),
                others: (1..n)
                    .map(|i| Replicator::new(addr(i), cfg.clone(), disks.next().unwrap()))
                    .collect(),
                queue: VecDeque::new(),
                timers: BTreeMap::new(),
                cut: BTreeSet::new(),
                replies: Vec::new(),
                written: Vec::new(),
                sent: Vec::new(),
            };
            for i in 0..n {
                let others = (0..n).filter(|j| *j != i).map(addr).collect();
                net.input(i, ReplInput::Members(others));
            }
            net
        }

        fn input(&mut self, i: usize, input: ReplInput) {
            if i == 0 {
                return self.store_input(StoreInput::Replicator(input));
            }
            let mut out = Vec::new();
            self.others[i - 1].handle(self.now, input, &mut out);
            for o in out {
                self.repl_output(i, o);
            }
        }

        fn store_input(&mut self, input: StoreInput) {
            let mut out = Vec::new();
            self.stores.handle(self.now, input, &mut out);
            for o in out {
                match o {
                    StoreOutput::Replicator(o) => self.repl_output(0, o),
                    StoreOutput::Reply(r) => self.replies.push(r),
                    StoreOutput::Written {
                        shard,
                        started,
                        stopped,
                    } => {
                        assert_eq!(shard, S);
                        self.written.push((started, stopped));
                    }
                    StoreOutput::Read { .. } => {}
                }
            }
        }

        fn repl_output(&mut self, i: usize, o: ReplOutput) {
            match o {
                ReplOutput::Send { to, msg } => {
                    let j = to.node.0 as usize;
                    if i == 0 {
                        self.sent.push((j, msg.clone()));
                    }
                    self.queue.push_back((i, j, msg));
                }
                ReplOutput::SetTimer { timer, after } => {
                    self.timers.insert((i, timer), self.now + after);
                }
                ReplOutput::CancelTimer(timer) => {
                    self.timers.remove(&(i, timer));
                }
                ReplOutput::Durable { .. } => {}
                other => panic!("a bare replicator answered nobody's request: {other:?}"),
            }
        }

        /// The Shard (actor `uid`, instance `instance`) asks.
        fn request(&mut self, uid: u32, instance: u32, op: StoreOp) {
            self.store_input(StoreInput::Request(StoreRequest {
                shard: S,
                uid,
                instance,
                op,
            }));
        }

        fn update(&mut self, instance: u32, started: &[u32], stopped: &[u32]) {
            let op = StoreOp::Update {
                started: ids(started),
                stopped: ids(stopped),
            };
            self.request(0, instance, op);
        }

        /// Deliver the oldest queued message (dropped if either end is cut). False if none.
        fn step(&mut self) -> bool {
            let Some((i, j, msg)) = self.queue.pop_front() else {
                return false;
            };
            if !self.cut.contains(&i) && !self.cut.contains(&j) {
                self.input(j, ReplInput::Msg { from: addr(i), msg });
            }
            true
        }

        /// Deliver every queued message (and what they cause) without moving time.
        fn settle(&mut self) {
            while self.step() {}
        }

        /// Move time forward by `d`, firing due timers in (time, node, timer) order. Gossip
        /// timers are left out: the tests look at requests only.
        fn advance(&mut self, d: Duration) {
            let end = self.now + d;
            loop {
                self.settle();
                let next = self
                    .timers
                    .iter()
                    .filter(|((_, t), &at)| at <= end && *t != ReplTimer::Gossip)
                    .min_by_key(|((i, t), &at)| (at, *i, *t))
                    .map(|(&k, &at)| (k, at));
                let Some(((i, timer), at)) = next else { break };
                self.timers.remove(&(i, timer));
                self.now = at;
                self.input(i, ReplInput::Timeout(timer));
            }
            self.now = end;
        }

        /// Messages node 0 sent to node `j` that `pick` accepts.
        fn sent_to(&self, j: usize, pick: impl Fn(&ReplMsg) -> bool) -> usize {
            self.sent
                .iter()
                .filter(|(to, m)| *to == j && pick(m))
                .count()
        }

        /// The kinds of the replies, for short assertions.
        fn kinds(&self) -> Vec<(u32, StoreReplyKind)> {
            self.replies
                .iter()
                .map(|r| (r.instance, r.kind.clone()))
                .collect()
        }

        fn local_ids(&self, node: usize, key: Key) -> Vec<u32> {
            let r = if node == 0 {
                self.stores.replicator()
            } else {
                &self.others[node - 1]
            };
            r.local(&key).map(Data::elements).unwrap_or_default()
        }
    }

    fn is_read(m: &ReplMsg) -> bool {
        matches!(m, ReplMsg::Read { .. })
    }

    fn is_write(m: &ReplMsg) -> bool {
        matches!(m, ReplMsg::Write { .. })
    }

    fn remembered(v: &[u32]) -> StoreReplyKind {
        StoreReplyKind::Remembered(ids(v))
    }

    /// The write timeout: `updating-state-timeout / 4` (DDS:95-99).
    const WRITE_TIMEOUT: Duration = Duration::from_micros(1_250_000);
    /// The read timeout: `waiting-for-state-timeout` (DDS:91-94).
    const READ_TIMEOUT: Duration = Duration::from_secs(2);

    #[test]
    fn single_replica_loads_all_five_keys_and_answers_remembered() {
        // Entities 1..=5 fall in the 5 different keys (abs(hashCode % 5), DDS:114-117).
        let parts: BTreeSet<u8> = (1..=5).map(|e| entity_key_part(EntityId(e))).collect();
        assert_eq!(parts.len(), ENTITY_KEYS_PER_SHARD as usize);
        let mut net = Net::new(1, vec![disk(0, &[1, 2, 3, 4, 5, 6])]);
        // No other member: a majority is this node alone, so the reads answer at once
        // (DDS:112, 283-288: a Get per key at start; DDS:131-150, 181-193: the union once all
        // 5 are in).
        net.request(0, 0, StoreOp::GetEntities);
        assert_eq!(net.kinds(), vec![(0, remembered(&[1, 2, 3, 4, 5, 6]))]);
        assert!(net.sent.is_empty());
        // A second GetEntities is ignored (DDS:124-127).
        net.request(0, 0, StoreOp::GetEntities);
        assert_eq!(net.replies.len(), 1);
    }

    #[test]
    fn single_replica_update_is_split_by_key_part_and_done_at_once() {
        let mut net = Net::new(1, vec![]);
        net.request(0, 0, StoreOp::GetEntities);
        assert_eq!(net.kinds(), vec![(0, remembered(&[]))]);
        // 1 and 6 share a key ("1".hashCode = 49, "6".hashCode = 54: both 4 mod 5).
        assert_eq!(entity_key_part(EntityId(1)), entity_key_part(EntityId(6)));
        // DDS:201-221: one replicator Update per key touched, each applying its starts and
        // stops; DDS:230-235: UpdateDone when every key succeeded.
        net.update(0, &[1, 2, 6], &[]);
        assert_eq!(
            net.kinds(),
            vec![(0, remembered(&[])), (0, StoreReplyKind::UpdateDone)]
        );
        assert_eq!(net.written, vec![(ids(&[1, 2, 6]), vec![])]);
        let k1 = Key::for_entity(S, EntityId(1));
        let k2 = Key::for_entity(S, EntityId(2));
        assert_ne!(k1, k2);
        assert_eq!(net.local_ids(0, k1), vec![1, 6]);
        assert_eq!(net.local_ids(0, k2), vec![2]);
        net.update(0, &[], &[6]);
        assert_eq!(net.local_ids(0, k1), vec![1]);
        assert_eq!(net.replies.len(), 3);
    }

    #[test]
    fn three_replicas_load_merges_every_replica_of_every_key() {
        // Majority-plus of 3 with min-cap 5 is all 3 (calculateMajority): each key is read
        // from both other replicas.
        let mut net = Net::new(3, vec![disk(0, &[1]), BTreeMap::new(), disk(2, &[2, 7])]);
        net.request(0, 0, StoreOp::GetEntities);
        assert!(net.replies.is_empty());
        assert_eq!(net.sent_to(1, is_read), 5);
        assert_eq!(net.sent_to(2, is_read), 5);
        net.settle();
        assert_eq!(net.kinds(), vec![(0, remembered(&[1, 2, 7]))]);
    }

    #[test]
    fn three_replicas_update_done_only_after_every_key_part_is_written() {
        let mut net = Net::new(3, vec![]);
        net.request(0, 0, StoreOp::GetEntities);
        net.settle();
        net.replies.clear();
        net.update(0, &[1, 2, 6], &[]);
        // Two keys, each written to both other replicas.
        assert_eq!(net.sent_to(1, is_write), 2);
        assert_eq!(net.sent_to(2, is_write), 2);
        let mut keys: Vec<Key> = net
            .sent
            .iter()
            .filter_map(|(_, m)| match m {
                ReplMsg::Write { key, .. } => Some(*key),
                _ => None,
            })
            .collect();
        keys.sort();
        keys.dedup();
        assert_eq!(
            keys,
            vec![
                Key::for_entity(S, EntityId(2)),
                Key::for_entity(S, EntityId(1))
            ]
        );
        // 4 Writes, 4 WriteAcks: UpdateDone with the last ack only (DDS:230-243).
        for delivered in 1..=8 {
            assert!(net.step());
            let want = if delivered < 8 { 0 } else { 1 };
            assert_eq!(net.replies.len(), want, "after {delivered} deliveries");
        }
        assert!(net.queue.is_empty());
        assert_eq!(net.kinds(), vec![(0, StoreReplyKind::UpdateDone)]);
        assert_eq!(
            net.local_ids(2, Key::for_entity(S, EntityId(1))),
            vec![1, 6]
        );
    }

    #[test]
    fn an_update_while_loading_or_writing_is_dropped() {
        let mut net = Net::new(3, vec![]);
        net.request(0, 0, StoreOp::GetEntities);
        // DDS:177-180: an Update before the load completed is dropped.
        net.update(0, &[1], &[]);
        net.settle();
        assert_eq!(net.kinds(), vec![(0, remembered(&[]))]);
        assert_eq!(net.sent_to(1, is_write), 0);
        // DDS:273-277: an Update while one is in flight is logged ("deferred to next write")
        // and dropped.
        net.update(0, &[2], &[]);
        net.update(0, &[3], &[]);
        assert_eq!(net.sent_to(1, is_write), 1);
        net.settle();
        assert_eq!(
            net.kinds(),
            vec![(0, remembered(&[])), (0, StoreReplyKind::UpdateDone)]
        );
        assert_eq!(net.written, vec![(ids(&[2]), vec![])]);
        assert_eq!(
            net.local_ids(0, Key::for_entity(S, EntityId(1))),
            Vec::<u32>::new()
        );
        assert_eq!(
            net.local_ids(0, Key::for_entity(S, EntityId(3))),
            Vec::<u32>::new()
        );
    }

    #[test]
    fn a_timed_out_write_is_retried_and_done_when_the_replicas_answer() {
        let mut net = Net::new(3, vec![]);
        net.request(0, 0, StoreOp::GetEntities);
        net.settle();
        net.cut.insert(2);
        net.update(0, &[1], &[]);
        net.settle(); // the first attempt reaches node 1 only
        assert_eq!(net.replies.len(), 1);
        net.cut.clear();
        // DDS:245-252: UpdateTimeout with attempts left → the same Update again, which
        // reaches both.
        net.advance(WRITE_TIMEOUT);
        assert_eq!(net.sent_to(2, is_write), 2);
        assert_eq!(
            net.kinds(),
            vec![(0, remembered(&[])), (0, StoreReplyKind::UpdateDone)]
        );
    }

    #[test]
    fn write_timeouts_end_with_the_store_stopped() {
        let mut net = Net::new(3, vec![]);
        net.request(0, 0, StoreOp::GetEntities);
        net.settle();
        net.cut.insert(2);
        net.update(0, &[1], &[]);
        net.advance(Duration::from_secs(10));
        // DDS:253-259: out of attempts → the store stops; the Shard's death watch of it
        // (RememberEntityStoreCrashed) makes it throw.
        assert!(net.sent_to(2, is_write) >= 3);
        assert_eq!(
            net.kinds(),
            vec![(0, remembered(&[])), (0, StoreReplyKind::StoreStopped)]
        );
    }

    #[test]
    fn write_timeouts_are_retried_three_times_then_the_store_stops() {
        let mut net = Net::new(3, vec![]);
        net.request(0, 0, StoreOp::GetEntities);
        net.settle();
        net.cut.insert(2);
        net.update(0, &[1], &[]);
        // Attempts 1..=4, each timing out after updating-state-timeout / 4.
        for attempt in 1..=4 {
            assert_eq!(net.sent_to(2, is_write), attempt);
            assert_eq!(net.replies.len(), 1, "attempt {attempt}");
            net.advance(WRITE_TIMEOUT);
        }
        assert_eq!(net.sent_to(2, is_write), 4);
        assert_eq!(
            net.kinds(),
            vec![(0, remembered(&[])), (0, StoreReplyKind::StoreStopped)]
        );
    }

    #[test]
    fn read_failures_are_retried_15_attempts_in_all_then_the_store_stops() {
        let mut net = Net::new(3, vec![]);
        net.cut.insert(2);
        net.request(0, 0, StoreOp::GetEntities);
        assert_eq!(net.sent_to(2, is_read), 5);
        // DDS:102, 159-173: maxReadAttemptsLeft = 15 for all keys together; each GetFailure
        // takes one and retries while some are left. Round 1 and 2: 5 failures, 5 retries each.
        net.advance(READ_TIMEOUT);
        assert_eq!(net.sent_to(2, is_read), 10);
        net.advance(READ_TIMEOUT);
        assert_eq!(net.sent_to(2, is_read), 15);
        assert!(net.replies.is_empty());
        // Round 3: failures 11-14 retry, the 15th stops the store.
        net.advance(READ_TIMEOUT);
        assert_eq!(net.sent_to(2, is_read), 19);
        assert_eq!(net.kinds(), vec![(0, StoreReplyKind::StoreStopped)]);
        // The 4 reads still in flight fail later, to a stopped store: nothing more.
        net.advance(READ_TIMEOUT.mul(3));
        assert_eq!(net.sent_to(2, is_read), 19);
        assert_eq!(net.replies.len(), 1);
    }

    #[test]
    fn a_failed_read_is_retried_and_the_load_completes_when_the_replicas_answer() {
        let mut net = Net::new(3, vec![BTreeMap::new(), disk(1, &[4]), BTreeMap::new()]);
        net.cut.insert(2);
        net.request(0, 0, StoreOp::GetEntities);
        net.settle(); // the first reads reach node 1 only
        assert!(net.replies.is_empty());
        net.cut.clear();
        // DDS:159-166: each GetFailure is retried, and the retries reach both.
        net.advance(READ_TIMEOUT);
        assert_eq!(net.sent_to(2, is_read), 10);
        assert_eq!(net.kinds(), vec![(0, remembered(&[4]))]);
    }

    #[test]
    fn answers_for_an_old_shard_instance_are_ignored() {
        let mut net = Net::new(3, vec![disk(0, &[1])]);
        // Instance 0 starts loading; the Shard restarts in place before the reads complete:
        // instance 1's store replaces it (the old store was the old Shard's child).
        net.request(0, 0, StoreOp::GetEntities);
        net.request(0, 1, StoreOp::GetEntities);
        net.settle();
        assert_eq!(net.kinds(), vec![(1, remembered(&[1]))]);
        // Instance 1 writes; instance 2 replaces it before the write completes: no UpdateDone
        // for instance 1, only instance 2's load.
        net.update(1, &[2], &[]);
        net.request(0, 2, StoreOp::GetEntities);
        net.settle();
        assert_eq!(
            net.kinds(),
            vec![(1, remembered(&[1])), (2, remembered(&[1, 2]))]
        );
        // An old instance's timeouts answer nobody and retry nothing: instance 3 replaces 2
        // while 2's write cannot complete.
        net.cut.insert(2);
        net.update(2, &[3], &[]);
        net.request(0, 3, StoreOp::GetEntities);
        let writes = net.sent_to(2, is_write);
        net.advance(Duration::from_millis(1_500));
        assert_eq!(net.sent_to(2, is_write), writes);
        assert_eq!(net.replies.len(), 2);
        // Instance 3's first reads failed with node 2 cut; retried, they complete.
        net.cut.clear();
        net.advance(READ_TIMEOUT);
        assert_eq!(
            net.kinds(),
            vec![
                (1, remembered(&[1])),
                (2, remembered(&[1, 2])),
                (3, remembered(&[1, 2, 3])),
            ]
        );
    }
}
