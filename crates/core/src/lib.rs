//! # shardsim-core
//!
//! Akka-style cluster sharding as sans-IO state machines: the model that shardsim's hosts run.
//!
//! - [`protocol`]: ShardRegion, Shard and entities, ShardCoordinator (journal or ddata store),
//!   the allocation strategy, with Akka's message names.
//! - [`membership`]: gossip, the leader's actions, failure detection and the downing providers
//!   (split-brain resolver, auto-down).
//! - [`ddata`]: the replicator and the ddata stores of the coordinator and remember entities.
//! - [`node`]: [`node::Node`], one cluster node incarnation: every role above behind one
//!   `handle(now, input, host)`.
//!
//! Every role takes the current time and one input and emits plain data; nothing here reads a
//! clock, a socket or a file, and nothing draws from an unseeded random source ([`rng`] forks
//! every stream from one ChaCha8 root).
//!
//! Comments cite Akka's behaviour by section (`§6.4`) and its known bugs by number (`§12 B35`):
//! both refer to `docs/akka-reference.md` in the repository.
//!
//! # Driving nodes from your own host
//!
//! A host owns the clock, the network, the coordinator journal and the nodes' disks; each
//! [`node::Node`] owns everything else. Every host, shardsim's own and yours, keeps this
//! contract:
//!
//! 1. **Start.** Build one [`node::NodeConfig`] for the run ([`node::NodeConfig::new`] from
//!    its parts, or [`node::NodeConfig::default_for`] with the defaults) and share it in an
//!    `Arc`. A node incarnation is `Node::new(addr, hosting, config)`, where `addr` is a
//!    [`membership::NodeAddr`] (node id and incarnation number: a restarted node is a new
//!    `Node` with a higher incarnation) and `hosting` says whether the node has the sharding
//!    role (hosts shards, may run the coordinator) or runs a proxy-only region. Its first
//!    input is `handle(now, NodeInput::Start { seeds }, &mut host)`: empty `seeds` form a
//!    new cluster; otherwise the node joins through them.
//! 2. **One input per call.** [`node::Node::handle`] takes exactly one [`node::NodeInput`].
//!    Before it returns, it hands the host every [`node::NodeOutput`], in order, through
//!    [`node::NodeHost::output`] or the fast doors [`node::NodeHost::send`],
//!    [`node::NodeHost::observe`] and [`node::NodeHost::delivered`] (by default they call
//!    `output` with `Effect::Send` or `Fact::Observe`; a host that overrides them
//!    must treat them the same way). What the host feeds back (a message, a reply, a fired
//!    timer) is always a later `handle` call. [`node::Collect`] is a ready-made host that
//!    keeps the outputs in a `Vec`, for a host that applies them after the call.
//! 3. **Apply each output.** An output is an [`node::Effect`], work the host must do, or a
//!    [`node::Fact`], for its checkers and trace. The effects:
//!    - `Send { from, to, msg }`: deliver to node `to.node` as `NodeInput::Deliver { from,
//!      role: to.role, msg }`, with `from` this node's [`protocol::Addr`] for role `from`.
//!      A host may lose messages (as a faulty network does) but must not reorder them: FIFO
//!      per ordered pair of nodes, a node to itself included. On arrival, a message for
//!      an incarnation other than `to.inc`, or for a role that is not running there
//!      ([`node::Node::has_role`]), is a dead letter: drop it.
//!    - `SendCluster { to, msg }` and `SendRepl { to, msg }`: the same network, delivered to
//!      the incarnation `to` only, as `NodeInput::Cluster { from, msg }` and
//!      `NodeInput::Repl { from, msg }`, with `from` this node's `NodeAddr`.
//!    - `CoordinatorTerminated`: death watch. Send `Msg::CoordinatorTerminated` from this
//!      node's `Role::Coordinator` to the `Role::Region` of every live node (this one
//!      included), like a `Send`.
//!    - `SetTimer { timer, after, gen }`: `after` later, input
//!      `NodeInput::Timer { timer, gen }`. A host need not cancel or replace timers: the
//!      node ignores a fired timer whose generation it has replaced or cancelled. The one
//!      exception is `NodeTimer::JoinCheck`, answered with `NodeInput::JoinCheck` (see 4).
//!    - `Local { msg, delay }`: `NodeInput::Local(msg)` to this node, always as its own later
//!      input, after the delay `delay` names (the node's local message delay, which may be
//!      0, or the time an entity takes to stop or a Shard to initialise: the host's choice).
//!    - `Persist { gen, event }`: append `event` to the coordinator journal (the one
//!      [`node::NodeHost::journal`] returns) and answer `NodeInput::Persisted { gen }` once
//!      the write is acknowledged. A write that is lost or fails is never answered: the
//!      coordinator's journal call-timeout fires.
//!    - `Store(req)` (remember-entities only): with `remember-entities-store = ddata`, hand
//!      it back to this node as `NodeInput::DdataStore(req)` after the local delay (the node
//!      runs that store itself); with `eventsourced`, the host's store serves it and answers
//!      `NodeInput::StoreReply`, or never when it is unreachable or failing.
//!    - `StoreReplyLocal(reply)`: back to this node as `NodeInput::StoreReply(reply)` after
//!      the local delay.
//!    - `Durable { key, data }`: write it to this node's disk (see `disk()` below).
//!    - `Shutdown { reason }`: the incarnation has stopped. Nothing follows, and it ignores
//!      every later input: drop it.
//!    - Facts are observations for checkers and traces, which a host may drop:
//!      `Observe` (deliveries, drops, entity starts and stops, allocations; a host may
//!      answer a delivery with `NodeInput::EntityActs` to model an entity that passivates or
//!      stops itself), `StoreWritten`, `StoreRead`, `TimerFired`, `View`, `Cluster`,
//!      `JoinAgain`, `CoordinatorStarted`, `PersistAcked`, `RegionCoordinator`,
//!      `RegionStopped`, `CoordinatorStopped`, `RecoveryFailed`, and `RoleBreach` (a role's
//!      check of its own state failed: a bug in the model, worth reporting).
//! 4. **What the host answers.**
//!    - `NodeTimer::JoinCheck` (the seed-node timeout) fires as
//!      `NodeInput::JoinCheck { members, first_live }`, the answer to the `InitJoin` the node
//!      would send: `members` are the other live nodes that are Up members
//!      ([`node::Node::status_of_self`]), `first_live` is the lowest live node. A node that
//!      is a member already (welcomed, or the founder of its cluster) ignores it; otherwise
//!      it joins again through `members`, or, with none, forms a new cluster if it is
//!      `first_live` and joins `first_live` if not.
//!      Handed back as `NodeInput::Timer`, a `JoinCheck` does nothing.
//!    - [`node::NodeHost::journal`]: the coordinator journal as recovery would read it now,
//!      every event written so far in order, one journal for the whole run; `None` while this
//!      node cannot reach it (recovery then fails and the singleton retries after
//!      `coordinator-failure-backoff`). Read when a coordinator starts on this node in the
//!      `persistence` state-store mode.
//!    - [`node::NodeHost::incarnations`]: one counter for the whole run, shared by every
//!      node (start it at `Incarnations { next: 1 }`), so that entity incarnation numbers are
//!      unique in the run.
//!    - [`node::NodeHost::disk`]: the durable entries that earlier incarnations of this node
//!      wrote (`Durable`), read at `Start` by a hosting node that runs Distributed Data (the
//!      `ddata` state-store mode, or remember-entities with the `ddata` store). The default is
//!      an empty disk.
//!    - Clients and operators are inputs too: `Request(envelope)` hands a user message to
//!      the node's region; `Leave`, `LeaveMember`, `Down` and `Stop` (a crash) are the
//!      operator's.
//! 5. **Time and determinism.** `now` is a [`time::Instant`] in microseconds: the host's
//!    clock, passed in on every call and never going back. A node reads no clock, socket,
//!    file or global, draws no unseeded randomness (its gossip targets come from a stream of
//!    `MembershipConfig::gossip_seed`), and does not panic on any input: an unexpected
//!    message is ignored or handled idempotently, and a failed self-check comes out as
//!    `RoleBreach`. The same inputs at the same times give the same outputs.
//!
//! A lone node, driven until it runs the coordinator and delivers a message:
//!
//! ```rust
//! use shardsim_core::ids::{EntityId, NodeId, NodeInc, SenderId};
//! use shardsim_core::membership::NodeAddr;
//! use shardsim_core::node::{Collect, Effect, Fact, Node, NodeConfig, NodeInput, NodeOutput, NodeTimer};
//! use shardsim_core::protocol::{Addr, CoordinatorEvent, Envelope, Incarnations, Observation};
//! use shardsim_core::time::Instant;
//! use std::collections::BTreeMap;
//! use std::sync::Arc;
//!
//! // Entity ids 0..100 in 10 shards, the defaults otherwise; one hosting node.
//! let me = NodeAddr { node: NodeId(0), inc: NodeInc(1) };
//! let mut node = Node::new(me, true, Arc::new(NodeConfig::default_for(100, 10)));
//! let env = Envelope { sender: SenderId(0), entity: EntityId(7), seq: 1 };
//! // The host: inputs by (time in µs, sequence), one journal, one incarnation counter.
//! let mut queue: BTreeMap<(u64, u64), NodeInput> = BTreeMap::new();
//! queue.insert((0, 0), NodeInput::Start { seeds: vec![] }); // a new cluster
//! queue.insert((5_000_000, 1), NodeInput::Request(env));
//! let mut journal: Vec<CoordinatorEvent> = Vec::new();
//! let mut incarnations = Incarnations { next: 1 };
//! let (mut seq, mut delivered) = (2, Vec::new());
//! while let Some(((t, _), input)) = queue.pop_first() {
//!     if t > 10_000_000 {
//!         break;
//!     }
//!     let mut host = Collect {
//!         out: Vec::new(),
//!         journal: Some(&journal[..]),
//!         incarnations: &mut incarnations,
//!     };
//!     node.handle(Instant(t), input, &mut host);
//!     for o in host.out {
//!         let (at, next) = match o {
//!             // Alone, the answer to the seed-node check: no other member, itself first.
//!             NodeOutput::Effect(Effect::SetTimer { timer: NodeTimer::JoinCheck, after, .. }) => {
//!                 (t + after.0, NodeInput::JoinCheck { members: vec![], first_live: Some(me) })
//!             }
//!             NodeOutput::Effect(Effect::SetTimer { timer, after, gen }) => {
//!                 (t + after.0, NodeInput::Timer { timer, gen })
//!             }
//!             // Alone, every message is to itself.
//!             NodeOutput::Effect(Effect::Send { from, to, msg }) => {
//!                 let from = Addr { node: me.node, inc: me.inc, role: from };
//!                 (t, NodeInput::Deliver { from, role: to.role, msg })
//!             }
//!             NodeOutput::Effect(Effect::Persist { gen, event }) => {
//!                 journal.push(event);
//!                 (t + 1_000, NodeInput::Persisted { gen })
//!             }
//!             NodeOutput::Effect(Effect::Local { msg, .. }) => (t, NodeInput::Local(msg)),
//!             NodeOutput::Fact(Fact::Observe { obs: Observation::Delivered { env: e, .. }, .. }) => {
//!                 delivered.push(e);
//!                 continue;
//!             }
//!             _ => continue, // observations, and nothing else a lone node needs
//!         };
//!         seq += 1;
//!         queue.insert((at, seq), next);
//!     }
//! }
//! assert!(node.coordinator().is_some(), "the only member runs the coordinator");
//! assert_eq!(delivered, [env]);
//! ```
//!
//! `examples/three_nodes.rs` is a complete host for three nodes (node 0 forms the cluster,
//! nodes 1 and 2 join through it, messages cross the network between them):
//! `cargo run -p shardsim-core --example three_nodes`.

#![warn(missing_docs)]

pub mod ddata;
pub mod idmap;
pub mod ids;
pub mod membership;
pub mod node;
pub mod protocol;
pub mod rng;
pub mod time;
