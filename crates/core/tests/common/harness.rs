//! The region test harness shared by `tests/region.rs` and `tests/remember.rs`: a `Region`
//! driven with zero local delay, its local messages (region ↔ Shard ↔ entity) queued and
//! delivered by the test (`T::pump`, `T::next_local`, `T::pending`), and its other outputs
//! compared in normalised form (`O`).

use super::{norm, not_persist_timer, O};
use shardsim_core::ids::{EntityId, NodeId, NodeInc, RegionRef, SenderId, ShardId};
use shardsim_core::protocol::entity::{Extractors, RecordingFactory, ShardExtractor};
use shardsim_core::protocol::region::{Region, RegionConfig, ShardSlot};
use shardsim_core::protocol::settings::{ProtocolOptions, Settings};
use shardsim_core::protocol::{
    Addr, DropReason, Envelope, Incarnations, Input, Local, LocalDelay, Member, MemberStatus, Msg,
    Observation, Outbox, Output, ShardTimer, StopReason, Timer,
};
use shardsim_core::time::{Duration, Instant};
use std::collections::VecDeque;
use std::sync::Arc;

/// Shard = entity % shards: easy to reason about.
pub struct ModExtractor(pub u32);

impl ShardExtractor for ModExtractor {
    fn shard_id(&self, entity: EntityId) -> ShardId {
        ShardId(entity.0 % self.0)
    }
}

pub const SHARDS: u32 = 3;

pub fn reg(n: u32) -> RegionRef {
    RegionRef {
        node: NodeId(n),
        inc: NodeInc(1),
    }
}

pub fn coord(n: u32) -> Addr {
    Addr::coordinator(reg(n))
}

pub fn raddr(n: u32) -> Addr {
    Addr::region(reg(n))
}

pub fn shard(s: u32) -> ShardId {
    ShardId(s)
}

pub fn env(sender: u32, entity: u32, seq: u64) -> Envelope {
    Envelope {
        sender: SenderId(sender),
        entity: EntityId(entity),
        seq,
    }
}

pub fn member(n: u32, up_number: u32, status: MemberStatus, hosting: bool) -> Member {
    Member {
        node: NodeId(n),
        inc: NodeInc(1),
        up_number,
        status,
        hosting,
        app_version: 0,
    }
}

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub fn send(to: Addr, msg: Msg) -> O {
    O::Send(to, msg)
}

pub fn obs(o: Observation) -> O {
    O::Obs(o)
}

/// `e` was processed by entity incarnation `inc`.
pub fn delivered(e: Envelope, inc: u64) -> O {
    obs(Observation::Delivered {
        env: e,
        incarnation: inc,
    })
}

pub fn dropped(e: Envelope, reason: DropReason) -> O {
    obs(Observation::Dropped { env: e, reason })
}

/// Incarnation `inc` of `entity` started in shard `s`.
pub fn started(entity: u32, s: u32, inc: u64) -> O {
    obs(Observation::EntityStarted {
        entity: EntityId(entity),
        shard: ShardId(s),
        incarnation: inc,
    })
}

/// Incarnation `inc` of `entity` stopped.
pub fn stopped(entity: u32, reason: StopReason, inc: u64) -> O {
    obs(Observation::EntityStopped {
        entity: EntityId(entity),
        reason,
        incarnation: inc,
    })
}

/// The timer `kind` of Shard actor `uid` of shard `s`.
pub fn shard_timer(s: u32, uid: u32, kind: ShardTimer) -> Timer {
    Timer::Shard {
        shard: ShardId(s),
        uid,
        kind,
    }
}

/// The HandOffStopper's stop timeout with default settings: `(handoff-timeout - 5 s).max(1 s)`
/// (SR:530-541).
pub const HANDOFF_STOP_TIMEOUT_MS: u64 = 55_000;

/// Sends only, in order.
pub fn sends(out: &[O]) -> Vec<(Addr, Msg)> {
    out.iter()
        .filter_map(|o| match o {
            O::Send(a, m) => Some((*a, *m)),
            _ => None,
        })
        .collect()
}

/// Akka's defaults, but with idle passivation off: a new Shard would otherwise arm its
/// `PassivateIdleTick` in every exact comparison (checked by its own test).
pub fn quiet() -> Settings {
    Settings {
        passivate_idle_entity_after_ms: 0,
        ..Settings::default()
    }
}

pub struct T {
    pub r: Region,
    pub now: Instant,
    /// The run-wide entity incarnation counter, lent to every call.
    pub incs: Incarnations,
    /// Local messages emitted and not yet delivered, oldest first, with their delay.
    pub pending: VecDeque<(Local, LocalDelay)>,
}

impl T {
    pub fn with(me: u32, hosting: bool, settings: Settings, options: ProtocolOptions) -> T {
        let cfg = RegionConfig {
            settings,
            options,
            extractors: Extractors::Shared(Arc::new(ModExtractor(SHARDS))),
            factory: Arc::new(RecordingFactory),
        };
        T {
            r: Region::new(reg(me), hosting, Arc::new(cfg)),
            now: Instant::ZERO,
            incs: Incarnations::default(),
            pending: VecDeque::new(),
        }
    }

    /// A hosting region on node `me` with default settings (idle passivation off).
    pub fn new(me: u32) -> T {
        T::with(me, true, quiet(), ProtocolOptions::default())
    }

    /// Run `f` against the region with a fresh outbox; queue the local messages it emits and
    /// return every output (locals included) in order.
    pub fn run(&mut self, f: impl FnOnce(&mut Region, Instant, &mut Outbox)) -> Vec<O> {
        let mut out = Outbox(Vec::new(), self.incs);
        f(&mut self.r, self.now, &mut out);
        self.incs = out.1;
        for o in &out.0 {
            if let Output::Local { msg, delay } = o {
                self.pending.push_back((*msg, *delay));
            }
        }
        out.0.iter().map(norm).filter(not_persist_timer).collect()
    }

    /// One input; its local messages are queued, not delivered. Every output, in order.
    pub fn step(&mut self, input: Input) -> Vec<O> {
        self.run(|r, now, out| r.handle(now, input, out))
    }

    /// Deliver the oldest queued local message only. Every output, in order.
    pub fn next_local(&mut self) -> Vec<O> {
        let (msg, _) = self.pending.pop_front().expect("a local message is queued");
        self.run(|r, now, out| r.local(now, msg, out))
    }

    /// Deliver `msg` now, ahead of the queue (a stale or reordered local message). Every
    /// output, in order.
    pub fn local(&mut self, msg: Local) -> Vec<O> {
        self.run(|r, now, out| r.local(now, msg, out))
    }

    /// The newest queued local message overtakes every other one (it moves to the front of
    /// the queue); it is returned.
    pub fn overtake(&mut self) -> Local {
        let newest = self.pending.pop_back().expect("a local message is queued");
        self.pending.push_front(newest);
        newest.0
    }

    /// Entity `entity` (incarnation `inc`) asks to passivate; the Shard marks it Passivating and
    /// queues its stop message, and `e`, requested then, reaches the Shard before that stop
    /// message. The outputs of `e` at the Shard.
    pub fn buffer_behind_passivation(&mut self, entity: u32, inc: u64, e: Envelope) -> Vec<O> {
        self.run(|r, _, out| r.entity_passivates(EntityId(entity), inc, false, out));
        self.next_local();
        self.step(Input::Request(e));
        self.overtake();
        self.next_local()
    }

    /// Deliver queued local messages, oldest first, until none remain (breadth-first: what
    /// each one emits goes behind what is already queued). The non-local outputs, in order.
    pub fn pump(&mut self) -> Vec<O> {
        let mut all = Vec::new();
        while !self.pending.is_empty() {
            all.extend(self.next_local());
        }
        all.retain(|o| !matches!(o, O::Local(_)));
        all
    }

    /// One input, then every local message it causes. The non-local outputs, in order.
    pub fn h(&mut self, input: Input) -> Vec<O> {
        let mut got = self.step(input);
        got.retain(|o| !matches!(o, O::Local(_)));
        got.extend(self.pump());
        got
    }

    pub fn from(&mut self, from: Addr, msg: Msg) -> Vec<O> {
        self.h(Input::Deliver { from, msg })
    }

    pub fn req(&mut self, e: Envelope) -> Vec<O> {
        self.h(Input::Request(e))
    }

    /// The region's slot of `s`, if it has a Shard for it.
    pub fn slot(&self, s: u32) -> Option<&ShardSlot> {
        self.r
            .hosted()
            .find(|(id, _)| *id == shard(s))
            .map(|(_, slot)| slot)
    }

    /// Member view with node 0 as the only (oldest, Up, hosting) coordinator candidate, plus this
    /// region's own node, then RegisterAck from node 0's coordinator.
    pub fn registered(mut self) -> T {
        let me = self.r.me().node.0;
        let mut members = vec![member(0, 1, MemberStatus::Up, true)];
        if me != 0 {
            members.push(member(me, 2, MemberStatus::Up, self.r.hosting()));
        }
        self.h(Input::MembersChanged(members));
        self.from(coord(0), Msg::RegisterAck);
        self
    }
}
