//! The madsim host: the same [`Node`] state machine on madsim's simulator.
//!
//! - Each cluster node is a madsim node. Its main task owns the node's local event queue
//!   (timers and messages between its own actors, ordered by (time, sequence) so that local
//!   messages stay FIFO per pair, as Akka's mailboxes are) and sleeps in madsim time until the
//!   next one; a timer is cancelled by its generation (the node ignores a stale one). Its
//!   acceptor task takes connections; one reader task per connection hands each message to
//!   the node as it arrives. Every task of a node is paused and killed with it.
//! - Messages between nodes travel on madsim's per-pair ordered, reliable channel
//!   (`Endpoint::connect1`, the channel `TcpStream` is built on): madsim's datagrams are not
//!   FIFO per pair, Akka remoting is (§3). One channel per ordered pair of nodes, opened by the
//!   sender on its first message; a node-to-journal channel carries the answers back.
//! - The journal is a madsim node of its own serving the coordinator's writes and the
//!   eventsourced remember-entities store (`sim::journal::Journal`, shared with the own world).
//! - Faults use madsim's controls: partitions and cuts clog links. madsim's channel would hold
//!   what a clogged link carries and deliver it after the heal; the own world's network
//!   (`sim::net`) loses it (reference §14: links "dropped (partition)"; §11.1 I3: at-most-once,
//!   no redelivery; the blackhole of `ClusterShardingFailureSpec`, §13, drops what it cuts), so
//!   the host keeps its own view of the cuts with the own world's per-link epochs: a message is
//!   lost at the send when its link is cut, and on arrival when its link was cut since it was
//!   sent (a user message dropped with reason `network` at its sender's node, so message
//!   conservation balances). Nothing is handed to a clogged channel, so no held message stalls
//!   a pair after the heal. A crash stops the
//!   node (`NodeInput::Stop`, so its entities' deaths are observed) and kills the madsim node; a
//!   restart re-creates its tasks with a new `Node` incarnation; a pause is madsim's
//!   `pause`/`resume` (nothing of the node runs, its timers fire late); the journal's faults
//!   clog the journal node or make it drop writes.
//! - What both hosts share is written once in [`super::kit`]: the run's [`Cluster`] (node
//!   slots, incarnations, the workload, the checker and the trace) and what a node's outputs
//!   do ([`Ctx`]); this host implements only its [`Transport`], driven from madsim tasks: same
//!   trace schema, same verdicts.
//!
//! All state lives in one [`Shared`] behind a mutex, never held across an `.await`: madsim runs
//! every task on one thread, so the lock order is the event order, fixed by the seed.
//!
//! Differences from the own world, by madsim's design: every sleep lasts at least 1 ms (so a
//! sub-millisecond local delay takes 1 ms), opening a channel costs about 1 ms, and a message
//! to a node that is down is dropped when sent (the own world drops it when it arrives).

use crate::fault::Fault;
use crate::scenario::Scenario;
use crate::sim::faults::{self, FaultHost};
use crate::sim::journal::Journal;
use crate::sim::kit::{self, Cluster, Ctx, Transport};
use crate::sim::outputs;
use crate::sim::RunResult;
use crate::trace::{Place, TraceEvent, TraceMode, Tracer};
use madsim::export::futures::FutureExt;
use madsim::net::{Endpoint, NetSim, Receiver, Sender};
use madsim::runtime::{Handle, NodeHandle, Runtime};
use shardsim_core::ddata::ReplMsg;
use shardsim_core::ids::{EntityId, NodeId, NodeInc};
use shardsim_core::membership::{MMsg, NodeAddr};
use shardsim_core::node::{NodeInput, NodeTimer};
use shardsim_core::protocol::{
    Addr, CoordinatorEvent, DropReason, EntityAct, Envelope, Local, Msg, StoreOp, StoreReply,
    StoreRequest,
};
use shardsim_core::time::Instant;
use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// The port every node and the journal listen on: the top one, as madsim hands out ephemeral
/// ports (the senders' endpoints) from 1 upwards.
const PORT: u16 = u16::MAX;

/// A message on a channel between two madsim nodes.
enum Wire {
    /// A sharding message (`id`: its ledger entry when it carries a user message, else 0).
    Deliver {
        id: u64,
        from: Addr,
        to: Addr,
        msg: Msg,
    },
    Cluster {
        from: NodeAddr,
        to: NodeAddr,
        msg: Box<MMsg>,
    },
    Repl {
        from: NodeAddr,
        to: NodeAddr,
        msg: Box<ReplMsg>,
    },
    /// To the journal: a coordinator write.
    Persist {
        from: NodeAddr,
        gen: u32,
        event: CoordinatorEvent,
    },
    /// To the journal: a request to the eventsourced remember-entities store.
    Store {
        from: NodeAddr,
        req: Box<StoreRequest>,
    },
    /// From the journal.
    Persisted { to: NodeAddr, gen: u32 },
    /// From the journal.
    StoreReply {
        to: NodeAddr,
        reply: Box<StoreReply>,
    },
}

/// A node's local event: an input, or a message it sent to itself (checked on arrival as a
/// message from another node is: the addressed incarnation must be running).
enum LocalEv {
    Input(NodeInput),
    Wire(Wire),
}

/// The user message a local event carries, if any.
fn user_message(i: &LocalEv) -> Option<Envelope> {
    match i {
        LocalEv::Input(NodeInput::Local(m)) => m.user_message(),
        LocalEv::Input(NodeInput::Request(env)) => Some(*env),
        LocalEv::Wire(Wire::Deliver {
            msg: Msg::User(env),
            ..
        }) => Some(*env),
        _ => None,
    }
}

/// The ledger id of a message (0: it carries no user message).
fn wire_id(w: &Wire) -> u64 {
    match w {
        Wire::Deliver { id, .. } => *id,
        _ => 0,
    }
}

/// A message as it travels: from node index `from` (`n`: the journal), in its link's `epoch`
/// as it was when the message was sent. As in the own world's network (`sim::net`), a
/// message arrives only if its link is not cut and has not been cut since it was sent.
struct Packet {
    from: usize,
    epoch: u32,
    w: Wire,
}

/// One ordered pair's channel, as the sender sees it.
#[derive(Default)]
struct Link {
    conn: Option<Sender>,
    /// Messages waiting to be sent (for the channel to open, or for the next batch).
    pending: VecDeque<Packet>,
    connecting: bool,
    /// A flusher task runs.
    flushing: bool,
}

/// The madsim side of a node id's place in the run, beside the shared [`NodeSlot`] of
/// [`Cluster`].
///
/// [`NodeSlot`]: super::kit::NodeSlot
struct Slot {
    /// The madsim node.
    id: madsim::task::NodeId,
    ip: IpAddr,
    /// The node's local events (timers, messages between its actors), by (time µs, seq).
    local: BTreeMap<(u64, u64), LocalEv>,
    /// Wakes the main task when an earlier local event is queued.
    wake: Arc<Notify>,
}

/// Everything of one run, shared by its tasks.
pub struct Shared {
    /// What every host keeps of the run: slots, incarnations, journal, workload, checker,
    /// tracer.
    c: Cluster,
    t0: madsim::time::Instant,
    /// Set once the violation's event is handled: nothing more is recorded.
    frozen: bool,
    slots: Vec<Slot>,
    journal_id: madsim::task::NodeId,
    journal_ip: IpAddr,
    /// Per (from, to) node index (the journal is index n).
    links: BTreeMap<(usize, usize), Link>,
    /// Links clogged by a fault, per (from, to).
    cut: Vec<bool>,
    /// Per (from, to): bumped by every cut, as the own world's `Net` does; a message sent in
    /// an older epoch is lost (it was on a link when it was cut).
    epoch: Vec<u32>,
    /// User messages on their way between nodes: ledger id -> (destination, envelope).
    ledger: BTreeMap<u64, (NodeId, Envelope)>,
    next_id: u64,
    seq: u64,
    /// The madsim node of the workload's senders (never crashes: a sender survives its node's
    /// crash and resumes after, as in the own world).
    clients: NodeHandle,
    done: Arc<Notify>,
}

type Sh = Arc<Mutex<Shared>>;

fn lock(sh: &Sh) -> MutexGuard<'_, Shared> {
    sh.lock().unwrap_or_else(|e| e.into_inner())
}

fn node_ip(i: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, (i / 250) as u8, (i % 250) as u8 + 1))
}

impl Shared {
    fn now(&self) -> Instant {
        Instant(
            madsim::time::Instant::now() // determinism-ok: madsim's simulated clock
                .duration_since(self.t0)
                .as_micros() as u64,
        )
    }

    fn n(&self) -> usize {
        self.slots.len()
    }

    /// Feed an event to the checker and the tracer.
    fn emit(&mut self, ev: TraceEvent) {
        if self.frozen {
            return;
        }
        let now = self.now();
        self.c.record(now, ev);
    }

    /// After an event: a violation freezes the run and wakes the supervisor.
    fn settle(&mut self) {
        if self.c.violation.is_some() && !self.frozen {
            self.frozen = true;
            self.done.notify_one();
        }
    }

    fn drop_msg(&mut self, node: NodeId, env: Envelope, reason: DropReason) {
        let ev = outputs::drop_event(node, env, reason, &mut self.c.stats);
        self.emit(ev);
    }

    fn running(&self, node: NodeId, inc: NodeInc) -> bool {
        self.c.running(node, inc)
    }

    fn addr_of(&self, node: NodeId) -> NodeAddr {
        self.c.addr_of(node)
    }

    /// Run one input through `node`'s running incarnation, applying its outputs.
    fn handle(&mut self, sh: &Sh, node: NodeId, input: NodeInput) {
        if self.frozen {
            return;
        }
        let idx = node.0 as usize;
        let Some(mut n) = self.c.slots[idx].node.take() else {
            return;
        };
        self.c.stats.events += 1;
        self.c.cur = n.addr();
        let now = self.now();
        n.handle(now, input, &mut Ctx(&mut Host { sh, w: self }));
        let s = &mut self.c.slots[idx];
        if s.up {
            s.node = Some(n);
        }
        self.settle();
    }

    /// Queue a local event of the current node at `at`.
    fn local(&mut self, node: NodeId, at: Instant, input: NodeInput) {
        self.local_ev(node, at, LocalEv::Input(input));
    }

    /// Queue a local event of `node` at `at`.
    fn local_ev(&mut self, node: NodeId, at: Instant, input: LocalEv) {
        self.seq += 1;
        let s = &mut self.slots[node.0 as usize];
        let earliest = s.local.keys().next().map(|k| k.0);
        s.local.insert((at.0, self.seq), input);
        if earliest.is_none_or(|t| at.0 < t) {
            s.wake.notify_one();
        }
    }

    /// Send `w` from node index `from` to index `to` (`n`: the journal) on their channel.
    fn send_wire(&mut self, sh: &Sh, from: usize, to: usize, w: Wire) {
        if self.is_cut(from, to) {
            // Lost at the send, as the own world's `Net::schedule` loses it: madsim's clogged
            // channel would hold it and deliver it after the heal.
            self.lost_in_network(from, &w);
            return;
        }
        let epoch = self.epoch[self.link_index(from, to)];
        let link = self.links.entry((from, to)).or_default();
        link.pending.push_back(Packet { from, epoch, w });
        if link.conn.is_some() {
            self.start_flush(sh, from, to);
        } else {
            self.start_connect(sh, from, to);
        }
    }

    /// Make sure a flusher sends what waits on `from -> to`.
    fn start_flush(&mut self, sh: &Sh, from: usize, to: usize) {
        let link = self.links.entry((from, to)).or_default();
        if link.flushing {
            return;
        }
        link.flushing = true;
        let id = self.slots[from].id;
        if let Some(h) = Handle::current().get_node(id) {
            h.spawn(flusher(sh.clone(), from, to));
        }
    }

    /// Send everything waiting on `from -> to` as one batch; false when nothing was sent.
    fn flush(&mut self, sh: &Sh, from: usize, to: usize) -> bool {
        let link = self.links.entry((from, to)).or_default();
        if link.conn.is_none() || link.pending.is_empty() {
            link.flushing = false;
            return false;
        }
        // What waited while its link was cut was on the link when it was cut: lost, as in the
        // own world, rather than handed to madsim's clogged channel (which would hold it, and
        // every later message of the pair, until the heal).
        let waiting = std::mem::take(&mut link.pending);
        let (batch, cut): (Vec<Packet>, Vec<Packet>) = waiting
            .into_iter()
            .partition(|p| self.ok(from, to, p.epoch));
        for p in &cut {
            self.lost_in_network(from, &p.w);
        }
        let link = self.links.entry((from, to)).or_default();
        let Some(c) = &link.conn else {
            return false;
        };
        if batch.is_empty() {
            link.flushing = false;
            self.settle();
            return false;
        }
        let ids: Vec<u64> = batch.iter().map(|p| wire_id(&p.w)).collect();
        if matches!(c.send(Box::new(batch)).now_or_never(), Some(Ok(()))) {
            return true;
        }
        // The channel was reset (the peer's node was killed): what it carried is gone with
        // it; the next message opens a new one.
        link.conn = None;
        link.flushing = false;
        for id in ids {
            self.lost_id(id);
        }
        self.start_connect(sh, from, to);
        self.settle();
        false
    }

    fn start_connect(&mut self, sh: &Sh, from: usize, to: usize) {
        let link = self.links.entry((from, to)).or_default();
        if link.connecting {
            return;
        }
        link.connecting = true;
        let (id, ip, inc) = (
            self.slots[from].id,
            self.slots[from].ip,
            self.c.slots[from].inc,
        );
        let dst = if to == self.n() {
            self.journal_ip
        } else {
            self.slots[to].ip
        };
        if let Some(h) = Handle::current().get_node(id) {
            h.spawn(connect(
                sh.clone(),
                from,
                inc,
                to,
                SocketAddr::new(dst, PORT),
                ip,
            ));
        }
    }

    /// Drop what a message to a node that is gone carried.
    fn lost(&mut self, w: &Wire, reason: DropReason) {
        if let Some((node, env)) = self.ledger.remove(&wire_id(w)) {
            self.drop_msg(node, env, reason);
        }
    }

    /// What `w`, sent by node index `from`, carried is lost on a cut link: a user message is
    /// dropped with the own world's reason for it (`network`, at its sender's node).
    fn lost_in_network(&mut self, from: usize, w: &Wire) {
        if let Some((_, env)) = self.ledger.remove(&wire_id(w)) {
            self.drop_msg(NodeId(from as u32), env, DropReason::Network);
        }
    }

    /// A user message lost with a channel that was reset (its receiver's node was killed).
    fn lost_id(&mut self, id: u64) {
        if let Some((node, env)) = self.ledger.remove(&id) {
            self.drop_msg(node, env, DropReason::DeadLetter);
        }
    }

    /// A sharding message from the current node's `from` actor.
    fn send_msg(&mut self, sh: &Sh, from: Addr, to: Addr, msg: Msg) {
        let (a, b) = (from.node.0 as usize, to.node.0 as usize);
        if b >= self.n() {
            return;
        }
        if a == b {
            // On the same node: no network, as in the own world.
            let at = self.now();
            let w = Wire::Deliver {
                id: 0,
                from,
                to,
                msg,
            };
            self.local_ev(to.node, at, LocalEv::Wire(w));
            return;
        }
        if self.is_cut(a, b) {
            // Lost on the cut link before anything else, as in the own world.
            if let Msg::User(env) = msg {
                self.drop_msg(from.node, env, DropReason::Network);
            }
            return;
        }
        if !self.running(to.node, to.inc) {
            // Nobody to receive it: a dead letter (the own world drops it on arrival).
            if let Msg::User(env) = msg {
                self.drop_msg(to.node, env, DropReason::DeadLetter);
            }
            return;
        }
        let id = match &msg {
            Msg::User(env) => {
                self.next_id += 1;
                self.ledger.insert(self.next_id, (to.node, *env));
                self.next_id
            }
            _ => 0,
        };
        self.send_wire(sh, a, b, Wire::Deliver { id, from, to, msg });
    }

    /// A sharding message reached `to`'s node (the hosts' shared `arrive`).
    fn on_deliver(&mut self, sh: &Sh, from: Addr, to: Addr, msg: Msg) {
        if !kit::arrive(&mut Host { sh, w: self }, from, to, msg) {
            self.settle();
            return;
        }
        self.handle(
            sh,
            to.node,
            NodeInput::Deliver {
                from,
                role: to.role,
                msg,
            },
        );
    }

    /// A message arrived at node `me` on a channel.
    fn on_wire(&mut self, sh: &Sh, me: usize, p: Packet) {
        if self.frozen {
            return;
        }
        let Packet { from, epoch, w } = p;
        if !self.ok(from, me, epoch) {
            // Its link was cut while it travelled (madsim's channel delivers what it carried
            // when it was clogged): lost, as the own world's network loses it.
            self.lost_in_network(from, &w);
            self.settle();
            return;
        }
        match w {
            Wire::Deliver { id, from, to, msg } => {
                if id != 0 && self.ledger.remove(&id).is_none() {
                    return; // already accounted for (its node was killed meanwhile)
                }
                self.on_deliver(sh, from, to, msg)
            }
            Wire::Cluster { from, to, msg } => {
                if self.running(to.node, to.inc) {
                    self.handle(sh, to.node, NodeInput::Cluster { from, msg: *msg });
                }
            }
            Wire::Repl { from, to, msg } => {
                if self.running(to.node, to.inc) {
                    self.handle(sh, to.node, NodeInput::Repl { from, msg });
                }
            }
            Wire::Persisted { to, gen } => {
                if self.running(to.node, to.inc) {
                    self.handle(sh, to.node, NodeInput::Persisted { gen });
                }
            }
            Wire::StoreReply { to, reply } => {
                if self.running(to.node, to.inc) {
                    self.handle(sh, to.node, NodeInput::StoreReply(reply));
                }
            }
            Wire::Persist { .. } | Wire::Store { .. } => {
                debug_assert!(false, "journal message at node {me}");
            }
        }
    }

    /// A node (re)starts as a new incarnation and joins through the live nodes (as the own
    /// world's `on_join`).
    fn on_join(&mut self, sh: &Sh, node: NodeId) {
        self.slots[node.0 as usize].local.clear();
        let (me, seeds) = self.c.new_incarnation(node);
        self.emit(TraceEvent::NodeUp {
            node,
            incarnation: me.inc.0,
        });
        self.handle(sh, node, NodeInput::Start { seeds });
        let now = self.now();
        for (at, sender) in self.c.workload.start_node(node, now) {
            self.clients.spawn(sender_task(sh.clone(), sender, at));
        }
    }

    /// A sender's message (as the own world's `on_send`).
    fn on_send(&mut self, sh: &Sh, sender: u32) -> Option<Instant> {
        let now = self.now();
        let next = self.c.workload.next_send(now);
        let Some((node, env, shard)) = self.c.workload_message(sender, now) else {
            return next;
        };
        let paused = self.c.slots[node.0 as usize].paused_until > now.0;
        self.emit(TraceEvent::Send {
            sender: env.sender,
            entity: env.entity,
            seq: env.seq,
            node,
            shard,
        });
        if paused {
            // The node's tasks are paused: the message waits in its local queue, in order,
            // for the pause to end.
            self.local(node, now, NodeInput::Request(env));
        } else {
            self.handle(sh, node, NodeInput::Request(env));
        }
        self.settle();
        next
    }

    /// A node crashes: it stops at once (its entities die, observed), then its madsim node is
    /// killed; what was on its way to it is lost.
    fn crash(&mut self, sh: &Sh, node: NodeId, reason: &str) {
        let idx = node.0 as usize;
        if !self.c.slots[idx].up {
            return;
        }
        self.handle(
            sh,
            node,
            NodeInput::Stop {
                reason: reason.to_string(),
            },
        );
        self.kill(node);
    }

    /// Kill the madsim node of `node` and account for what its tasks held.
    fn kill(&mut self, node: NodeId) {
        let idx = node.0 as usize;
        Handle::current().kill(self.slots[idx].id);
        let local = std::mem::take(&mut self.slots[idx].local);
        for (_, input) in local {
            if let Some(env) = user_message(&input) {
                self.drop_msg(node, env, DropReason::NodeDown);
            }
        }
        let gone: Vec<u64> = self
            .ledger
            .iter()
            .filter(|(_, (to, _))| *to == node)
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            if let Some((to, env)) = self.ledger.remove(&id) {
                self.drop_msg(to, env, DropReason::DeadLetter);
            }
        }
        let keys: Vec<(usize, usize)> = self
            .links
            .keys()
            .filter(|(a, b)| *a == idx || *b == idx)
            .copied()
            .collect();
        for k in keys {
            if let Some(mut l) = self.links.remove(&k) {
                // Waiting on the killed node to be sent: lost with it; waiting elsewhere to
                // be sent to it: a dead letter.
                let reason = if k.0 == idx {
                    DropReason::NodeDown
                } else {
                    DropReason::DeadLetter
                };
                for p in std::mem::take(&mut l.pending) {
                    self.lost(&p.w, reason);
                }
            }
        }
        self.settle();
    }

    /// Clog or unclog `a -> b` (node indices; `n` is the journal).
    fn set_cut(&mut self, a: usize, b: usize, cut: bool) {
        let n1 = self.n() + 1;
        if self.cut[a * n1 + b] == cut {
            return;
        }
        self.cut[a * n1 + b] = cut;
        if cut {
            self.epoch[a * n1 + b] = self.epoch[a * n1 + b].wrapping_add(1);
        }
        let id = |i: usize| {
            if i == self.n() {
                self.journal_id
            } else {
                self.slots[i].id
            }
        };
        let net = NetSim::current();
        if cut {
            net.clog_link(id(a), id(b));
        } else {
            net.unclog_link(id(a), id(b));
        }
    }

    fn is_cut(&self, a: usize, b: usize) -> bool {
        self.cut[self.link_index(a, b)]
    }

    fn link_index(&self, a: usize, b: usize) -> usize {
        a * (self.n() + 1) + b
    }

    /// Whether a message sent in `epoch` on `a -> b` arrives (as the own world's `Net::ok`):
    /// the link is not cut and was not cut since.
    fn ok(&self, a: usize, b: usize, epoch: u32) -> bool {
        a == b || (!self.is_cut(a, b) && self.epoch[self.link_index(a, b)] == epoch)
    }

    fn set_journal_reachable(&mut self, reachable: bool) {
        let j = self.n();
        for a in 0..j {
            self.set_cut(a, j, !reachable);
            self.set_cut(j, a, !reachable);
        }
        self.c.journal.available = reachable;
    }

    fn heal_nodes(&mut self) {
        let n = self.n();
        for a in 0..n {
            for b in 0..n {
                if a != b {
                    self.set_cut(a, b, false);
                }
            }
        }
    }

    /// User messages the host still carries, each with where it is: on a channel or queued
    /// locally (the nodes' buffers are `Cluster::end_of_run`'s).
    fn user_messages_in_transit(&self) -> Vec<(Envelope, NodeId, Place)> {
        let mut out: Vec<(Envelope, NodeId, Place)> = self
            .ledger
            .values()
            .map(|(to, env)| (*env, *to, Place::Network))
            .collect();
        for (i, s) in self.slots.iter().enumerate() {
            let node = NodeId(i as u32);
            out.extend(
                s.local
                    .values()
                    .filter_map(user_message)
                    .map(|env| (env, node, Place::Local)),
            );
        }
        out
    }
}

/// The node's host while it handles one input.
struct Host<'a> {
    sh: &'a Sh,
    w: &'a mut Shared,
}

/// How the madsim host moves what a node emits: local events on the node's own queue,
/// messages on madsim's channels, journal requests to the journal's madsim node.
impl Transport for Host<'_> {
    fn cluster(&self) -> &Cluster {
        &self.w.c
    }

    fn cluster_mut(&mut self) -> &mut Cluster {
        &mut self.w.c
    }

    fn now(&self) -> Instant {
        self.w.now()
    }

    fn emit(&mut self, ev: TraceEvent) {
        self.w.emit(ev);
    }

    fn emit_deliver(&mut self, env: Envelope, node: NodeId, incarnation: u64) {
        self.w.emit(TraceEvent::Deliver {
            sender: env.sender,
            entity: env.entity,
            seq: env.seq,
            node,
            incarnation,
        });
    }

    fn timer(&mut self, at: Instant, timer: NodeTimer, gen: u64) {
        let node = self.w.c.cur.node;
        self.w.local(node, at, NodeInput::Timer { timer, gen });
    }

    fn local_msg(&mut self, at: Instant, msg: Local) {
        let node = self.w.c.cur.node;
        self.w.local(node, at, NodeInput::Local(msg));
    }

    fn entity_acts(&mut self, at: Instant, entity: EntityId, incarnation: u64, act: EntityAct) {
        let node = self.w.c.cur.node;
        let input = NodeInput::EntityActs {
            entity,
            incarnation,
            act,
        };
        self.w.local(node, at, input);
    }

    fn ddata_store(&mut self, at: Instant, req: Box<StoreRequest>) {
        let node = self.w.c.cur.node;
        self.w.local(node, at, NodeInput::DdataStore(req));
    }

    fn ddata_reply(&mut self, at: Instant, reply: Box<StoreReply>) {
        let node = self.w.c.cur.node;
        self.w.local(node, at, NodeInput::StoreReply(reply));
    }

    fn send_msg(&mut self, from: Addr, to: Addr, msg: Msg) {
        self.w.send_msg(self.sh, from, to, msg);
    }

    fn send_cluster(&mut self, from: NodeAddr, to: NodeAddr, msg: MMsg) {
        let (a, b) = (from.node.0 as usize, to.node.0 as usize);
        if b < self.w.n() && b != a {
            let msg = Box::new(msg);
            self.w
                .send_wire(self.sh, a, b, Wire::Cluster { from, to, msg });
        }
    }

    fn send_repl(&mut self, from: NodeAddr, to: NodeAddr, msg: Box<ReplMsg>) {
        let (a, b) = (from.node.0 as usize, to.node.0 as usize);
        if b < self.w.n() {
            let r = Wire::Repl { from, to, msg };
            if b == a {
                let now = self.w.now();
                self.w.local_ev(from.node, now, LocalEv::Wire(r));
            } else {
                self.w.send_wire(self.sh, a, b, r);
            }
        }
    }

    fn persist(&mut self, from: NodeAddr, gen: u32, event: CoordinatorEvent) {
        let (a, j) = (from.node.0 as usize, self.w.n());
        self.w
            .send_wire(self.sh, a, j, Wire::Persist { from, gen, event });
    }

    fn store(&mut self, from: NodeAddr, req: Box<StoreRequest>) {
        let (a, j) = (from.node.0 as usize, self.w.n());
        self.w.send_wire(self.sh, a, j, Wire::Store { from, req });
    }

    fn journal_reachable(&self, node: usize) -> bool {
        let j = self.w.n();
        !self.w.is_cut(node, j) && !self.w.is_cut(j, node)
    }

    fn shut_down(&mut self, node: usize) {
        self.w.slots[node].wake.notify_one();
    }
}

/// Open the channel `from -> to` on `from`'s madsim node and flush what waits for it.
async fn connect(sh: Sh, from: usize, inc: NodeInc, to: usize, dst: SocketAddr, ip: IpAddr) {
    let mut backoff = std::time::Duration::from_millis(1);
    let ep = loop {
        match Endpoint::bind(SocketAddr::new(ip, 0)).await {
            Ok(ep) => break ep,
            Err(_) => {
                madsim::time::sleep(backoff).await;
                backoff = (backoff * 2).min(std::time::Duration::from_secs(1));
            }
        }
    };
    loop {
        {
            let mut w = lock(&sh);
            let n = w.n();
            if w.frozen || w.c.slots[from].inc != inc {
                return;
            }
            if to < n && !w.c.slots[to].up {
                // Nobody listens there: what waits for it is a dead letter.
                if let Some(l) = w.links.get_mut(&(from, to)) {
                    l.connecting = false;
                    let pending = std::mem::take(&mut l.pending);
                    for m in pending {
                        w.lost(&m.w, DropReason::DeadLetter);
                    }
                }
                w.settle();
                return;
            }
        }
        match ep.connect1(dst).await {
            Ok((tx, rx)) => {
                let journal = {
                    let mut w = lock(&sh);
                    if w.frozen || w.c.slots[from].inc != inc {
                        return;
                    }
                    let n = w.n();
                    let link = w.links.entry((from, to)).or_default();
                    link.connecting = false;
                    // A channel opened meanwhile by another attempt stays the pair's only one
                    // (two would not keep the pair's order).
                    let mine = link.conn.is_none();
                    if mine {
                        link.conn = Some(tx);
                    }
                    w.start_flush(&sh, from, to);
                    mine && to == n
                };
                if journal {
                    // The journal answers on the same channel.
                    reader(sh.clone(), from, rx).await;
                }
                return;
            }
            Err(_) => {
                let refused_by_cut = {
                    let mut w = lock(&sh);
                    let cut = w.c.slots[from].inc == inc && w.is_cut(from, to);
                    if cut {
                        // Refused by the clog: what waits was on the link when it was cut, lost
                        // (as in the own world). The next message after the heal opens the
                        // channel, without waiting for a back-off.
                        if let Some(l) = w.links.get_mut(&(from, to)) {
                            l.connecting = false;
                            let pending = std::mem::take(&mut l.pending);
                            for m in pending {
                                w.lost_in_network(from, &m.w);
                            }
                        }
                        w.settle();
                    }
                    cut
                };
                if refused_by_cut {
                    return;
                }
                madsim::time::sleep(backoff).await;
                backoff = (backoff * 2).min(std::time::Duration::from_secs(1));
            }
        }
    }
}

/// Send what waits on `from -> to` in batches, one per millisecond at most: madsim's channel
/// hands its receiver one payload per millisecond at most (every madsim sleep lasts 1 ms or
/// more), so one payload per message would cap a pair at 1,000 messages/s and queue bursts
/// for tens of milliseconds. A message waits 1 ms at most for its batch.
async fn flusher(sh: Sh, from: usize, to: usize) {
    loop {
        {
            let mut w = lock(&sh);
            // A node that shut down (left, was downed) still sends what it emitted before;
            // a killed node's flusher is gone with it (and `kill` dropped what waited).
            if w.frozen || !w.flush(&sh, from, to) {
                return;
            }
        }
        madsim::time::sleep(std::time::Duration::from_millis(1)).await;
    }
}

/// Hand each message arriving on `rx` to node `me`, in order.
async fn reader(sh: Sh, me: usize, mut rx: Receiver) {
    while let Ok(p) = rx.recv().await {
        let Ok(batch) = p.downcast::<Vec<Packet>>() else {
            continue;
        };
        let mut g = lock(&sh);
        for p in *batch {
            g.on_wire(&sh, me, p);
        }
    }
}

/// A node's acceptor: one reader per incoming channel.
async fn acceptor(sh: Sh, me: usize, ep: Endpoint) {
    while let Ok((_tx, rx, _from)) = ep.accept1().await {
        madsim::task::spawn(reader(sh.clone(), me, rx));
    }
}

/// One node incarnation's main task: start it, then run its local events in madsim time.
async fn node_main(sh: Sh, me: usize) {
    let (ip, inc, wake) = {
        let w = lock(&sh);
        let s = &w.slots[me];
        (s.ip, w.c.slots[me].inc, s.wake.clone())
    };
    let ep = match Endpoint::bind(SocketAddr::new(ip, PORT)).await {
        Ok(ep) => ep,
        Err(_) => return,
    };
    madsim::task::spawn(acceptor(sh.clone(), me, ep));
    let node = NodeId(me as u32);
    loop {
        let next = {
            let mut w = lock(&sh);
            if w.frozen || !w.running(node, inc) {
                return;
            }
            // Everything due, in (time, sequence) order.
            let now = w.now();
            while let Some((&(t, s), _)) = w.slots[me].local.first_key_value() {
                if t > now.0 || w.frozen || !w.running(node, inc) {
                    break;
                }
                let Some(input) = w.slots[me].local.remove(&(t, s)) else {
                    break;
                };
                let input = match input {
                    LocalEv::Wire(wire) => {
                        let p = Packet {
                            from: me,
                            epoch: 0,
                            w: wire,
                        };
                        w.on_wire(&sh, me, p);
                        continue;
                    }
                    LocalEv::Input(NodeInput::Timer {
                        timer: NodeTimer::JoinCheck,
                        ..
                    }) => w.c.join_check(node),
                    LocalEv::Input(i) => i,
                };
                w.handle(&sh, node, input);
            }
            w.slots[me].local.first_key_value().map(|(k, _)| k.0)
        };
        match next {
            None => wake.notified().await,
            Some(t) => {
                let now = lock(&sh).now().0;
                let d = std::time::Duration::from_micros(t.saturating_sub(now));
                let _ = madsim::time::timeout(d, wake.notified()).await;
            }
        }
    }
}

/// The journal's madsim node: serve every channel opened to it, answering on it.
async fn journal_main(sh: Sh, ip: IpAddr) {
    let Ok(ep) = Endpoint::bind(SocketAddr::new(ip, PORT)).await else {
        return;
    };
    while let Ok((tx, mut rx, _)) = ep.accept1().await {
        let sh = sh.clone();
        madsim::task::spawn(async move {
            while let Ok(p) = rx.recv().await {
                let Ok(batch) = p.downcast::<Vec<Packet>>() else {
                    continue;
                };
                for p in *batch {
                    let (from, epoch) = (p.from, p.epoch);
                    let m = Box::new(p.w);
                    // A write takes the journal's write latency (after the network's), in order.
                    let extra = match &*m {
                        Wire::Persist { .. } => lock(&sh).c.journal.write_latency_us(),
                        Wire::Store { req, .. } if matches!(req.op, StoreOp::Update { .. }) => {
                            lock(&sh).c.journal.write_latency_us()
                        }
                        _ => 0,
                    };
                    if extra > 0 {
                        madsim::time::sleep(std::time::Duration::from_micros(extra)).await;
                    }
                    let reply = {
                        let mut w = lock(&sh);
                        // Lost on a link cut since it was sent (as the own world's
                        // `on_journal_write`): the coordinator's call-timeout fires. Akka's
                        // journal plugin fails such a write (call-timeout, circuit breaker) and
                        // persistence never retries it.
                        let j = w.n();
                        if w.frozen || !w.c.journal.available || !w.ok(from, j, epoch) {
                            continue;
                        }
                        match *m {
                            Wire::Persist { from, gen, event } => {
                                if w.c.journal.failing {
                                    continue;
                                }
                                w.c.journal.events.push(event);
                                w.emit(TraceEvent::Persisted {
                                    node: from.node,
                                    incarnation: from.inc.0,
                                    generation: gen,
                                    event,
                                });
                                w.settle();
                                Wire::Persisted { to: from, gen }
                            }
                            Wire::Store { from, req } => {
                                let Some((kind, ev)) = w.c.journal.serve_store(from.node, &req)
                                else {
                                    continue;
                                };
                                w.emit(ev);
                                w.settle();
                                Wire::StoreReply {
                                    to: from,
                                    reply: Box::new(StoreReply {
                                        shard: req.shard,
                                        uid: req.uid,
                                        instance: req.instance,
                                        kind,
                                    }),
                                }
                            }
                            _ => continue,
                        }
                    };
                    let reply = {
                        let w = lock(&sh);
                        let j = w.n();
                        if w.is_cut(j, from) {
                            continue; // lost at the send, as in the own world
                        }
                        let epoch = w.epoch[w.link_index(j, from)];
                        vec![Packet {
                            from: j,
                            epoch,
                            w: reply,
                        }]
                    };
                    if tx.send(Box::new(reply)).await.is_err() {
                        return;
                    }
                }
            }
        });
    }
}

/// One workload sender: its sends in madsim time.
async fn sender_task(sh: Sh, sender: u32, first: Instant) {
    let mut at = first;
    loop {
        let now = lock(&sh).now();
        if at > now {
            madsim::time::sleep(std::time::Duration::from_micros(at.0 - now.0)).await;
        }
        let mut w = lock(&sh);
        if w.frozen {
            return;
        }
        match w.on_send(&sh, sender) {
            Some(next) => at = next,
            None => return,
        }
    }
}

/// What the script of a run does at its time.
enum Act {
    Join(NodeId),
    Fault(Fault),
    Liveness,
}

/// (Re)start `node`: a new incarnation on a fresh madsim node state.
fn start_node(sh: &Sh, w: &mut Shared, node: NodeId) {
    let idx = node.0 as usize;
    if w.c.slots[idx].up {
        return;
    }
    let h = Handle::current();
    let id = w.slots[idx].id;
    // Reset what the last incarnation left (sockets, tasks), then run the new one.
    if w.c.slots[idx].inc != NodeInc(0) {
        w.kill(node);
        h.restart(id);
    }
    // The incarnation starts now, in the script's order (the first to join is the oldest);
    // its tasks then listen and run its local events.
    w.on_join(sh, node);
    if let Some(nh) = h.get_node(id) {
        nh.spawn(node_main(sh.clone(), idx));
    }
}

fn apply(sh: &Sh, act: Act) {
    let mut w = lock(sh);
    if w.frozen {
        return;
    }
    match act {
        Act::Join(node) => start_node(sh, &mut w, node),
        Act::Liveness => {
            let (now, end) = (w.now(), w.c.end);
            faults::liveness_phase(&mut Faults { sh, w: &mut w }, now, end);
        }
        Act::Fault(f) => faults::apply_fault(&mut Faults { sh, w: &mut w }, f),
    }
    w.settle();
}

/// The madsim host under the shared fault injector: links clogged through madsim (and cut in
/// the host's own view, which loses what they carry), crashes as a stop and madsim's `kill`,
/// restarts as madsim's `restart` with a new incarnation, pauses as madsim's `pause`/`resume`.
struct Faults<'a> {
    sh: &'a Sh,
    w: &'a mut Shared,
}

impl FaultHost for Faults<'_> {
    fn node_count(&self) -> usize {
        self.w.n()
    }

    fn scenario(&self) -> &Scenario {
        &self.w.c.sc
    }

    fn emit(&mut self, ev: TraceEvent) {
        self.w.emit(ev);
    }

    fn count_fault(&mut self) {
        self.w.c.stats.faults += 1;
    }

    fn cut(&mut self, from: usize, to: usize) {
        self.w.set_cut(from, to, true);
    }

    fn heal_nodes(&mut self) {
        self.w.heal_nodes();
    }

    fn set_journal_reachable(&mut self, reachable: bool) {
        self.w.set_journal_reachable(reachable);
    }

    fn journal(&mut self) -> &mut Journal {
        &mut self.w.c.journal
    }

    fn is_up(&self, node: NodeId) -> bool {
        self.w.c.slots[node.0 as usize].up
    }

    fn addr_of(&self, node: NodeId) -> NodeAddr {
        self.w.addr_of(node)
    }

    fn input(&mut self, node: NodeId, input: NodeInput) {
        self.w.handle(self.sh, node, input);
    }

    fn crash(&mut self, node: NodeId) {
        self.w.crash(self.sh, node, "crash");
    }

    fn restart(&mut self, node: NodeId) {
        start_node(self.sh, self.w, node);
    }

    fn pause(&mut self, node: NodeId, duration_ms: u64) {
        let idx = node.0 as usize;
        let w = &mut *self.w;
        if w.c.slots[idx].up {
            let until = w.now().0 + duration_ms * 1000;
            let s = &mut w.c.slots[idx];
            s.paused_until = s.paused_until.max(until);
            let id = w.slots[idx].id;
            Handle::current().pause(id);
            let sh2 = self.sh.clone();
            madsim::task::spawn(async move {
                madsim::time::sleep(std::time::Duration::from_millis(duration_ms)).await;
                let w = lock(&sh2);
                if w.c.slots[idx].paused_until <= w.now().0 {
                    Handle::current().resume(id);
                }
            });
        }
    }
}

/// Run one schedule of `sc` on madsim, seeded with `seed`. The caller checks
/// [`super::madsim_unsupported`] first (the CLI exits 2 naming the field).
pub fn run_seed(sc: &Arc<Scenario>, seed: u64, mode: TraceMode) -> (RunResult, Tracer) {
    let rt = Runtime::with_seed_and_config(seed, madsim::Config::default());
    rt.block_on(supervise(sc.clone(), seed, mode))
}

/// The run's supervisor, on madsim's main node of the current runtime (any seed and
/// configuration: `#[madsim::test]` runs it too): sets the network's latency from the
/// scenario, creates the nodes and the journal, plays the script (joins, faults, the liveness
/// phase) and waits for the end or the first violation. `seed` seeds the own streams (the
/// workload, the fault plan); madsim's seed draws latencies and the task interleaving.
pub async fn supervise(sc: Arc<Scenario>, seed: u64, mode: TraceMode) -> (RunResult, Tracer) {
    let [lo, hi] = sc.network.latency_ms;
    let lo = std::time::Duration::from_millis(lo);
    let hi = std::time::Duration::from_millis(hi).max(lo + std::time::Duration::from_micros(1));
    NetSim::current().update_config(|c| c.send_latency = lo..hi);
    let (c, knobs) = Cluster::new(sc, seed, mode);
    let sc = c.sc.clone();
    let n = c.n();
    let h = Handle::current();
    let slots: Vec<Slot> = (0..n)
        .map(|i| {
            let ip = node_ip(i);
            let id = h
                .create_node()
                .name(format!("node-{i}"))
                .ip(ip)
                .build()
                .id();
            Slot {
                id,
                ip,
                local: BTreeMap::new(),
                wake: Arc::new(Notify::new()),
            }
        })
        .collect();
    let journal_ip = IpAddr::V4(Ipv4Addr::new(10, 1, 0, 1));
    let journal_node = h.create_node().name("journal").ip(journal_ip).build();
    let clients = h.create_node().name("clients").build();
    let done = Arc::new(Notify::new());
    let shared = Shared {
        c,
        clients,
        t0: madsim::time::Instant::now(), // determinism-ok: madsim's simulated clock
        frozen: false,
        slots,
        journal_id: journal_node.id(),
        journal_ip,
        links: BTreeMap::new(),
        cut: vec![false; (n + 1) * (n + 1)],
        epoch: vec![0; (n + 1) * (n + 1)],
        ledger: BTreeMap::new(),
        next_id: 0,
        seq: 0,
        done: done.clone(),
    };
    let sh: Sh = Arc::new(Mutex::new(shared));
    journal_node.spawn(journal_main(sh.clone(), journal_ip));
    // The script, in the own world's order at equal times: joins (node order), the faults
    // (plan order), then the liveness phase.
    let mut script: Vec<(u64, Act)> = Vec::new();
    {
        let mut w = lock(&sh);
        for ev in crate::sim::preamble(&sc) {
            w.emit(ev);
        }
        let mut joins: Vec<(u64, u32)> = (0..n as u32).map(|i| (sc.join_at_ms(i), i)).collect();
        joins.sort();
        for (t, i) in joins {
            script.push((t, Act::Join(NodeId(i))));
        }
        let plan = crate::sim::swarm::plan(&sc, seed);
        if let Some(mut profile) = plan.profile {
            if let Some(k) = knobs {
                profile = format!("{profile}; {k}");
            }
            w.emit(TraceEvent::SwarmProfile { profile });
        }
        for f in plan.faults {
            script.push((f.at_ms, Act::Fault(f.fault)));
        }
        if sc.liveness.enabled {
            script.push((sc.run.duration_ms - sc.liveness.quiet_ms, Act::Liveness));
        }
    }
    script.sort_by_key(|(t, _)| *t);
    let sh2 = sh.clone();
    madsim::task::spawn(async move {
        for (t, act) in script {
            let now = lock(&sh2).now();
            let at = t * 1000;
            if at > now.0 {
                madsim::time::sleep(std::time::Duration::from_micros(at - now.0)).await;
            }
            apply(&sh2, act);
        }
    });
    let end_us = sc.run.duration_ms * 1000;
    loop {
        let now = lock(&sh).now().0;
        if now >= end_us || lock(&sh).frozen {
            break;
        }
        let d = std::time::Duration::from_micros(end_us - now);
        let _ = madsim::time::timeout(d, done.notified()).await;
    }
    let mut w = lock(&sh);
    if w.c.violation.is_none() {
        w.frozen = false;
        // Every message still on its way, for the conservation balance, then the
        // end-of-run verdicts: the checker's, at the end time.
        let end = w.c.end;
        let pending = w.user_messages_in_transit();
        w.c.end_of_run(end, pending, |_| {});
    }
    w.frozen = true;
    let end = w.now().min(w.c.end);
    let result = w.c.result(end, None);
    // Frozen, the run records nothing more; the violation stays, as the tasks still running
    // until their nodes are killed read it.
    w.c.violation = result.violation.clone();
    let tracer = std::mem::replace(&mut w.c.tracer, Tracer::new(TraceMode::Off));
    // Break the cycles between the run's state and madsim's (its tasks hold the state, the
    // state holds madsim's node handles and channels), else every seed's world outlives its
    // runtime and a long `agree` or `fuzz` runs out of memory: kill every node (its tasks go),
    // drop the channels and the node state.
    let ids: Vec<madsim::task::NodeId> = w.slots.iter().map(|s| s.id).collect();
    let (journal, clients) = (w.journal_id, w.clients.id());
    w.links.clear();
    for s in &mut w.c.slots {
        s.node = None;
    }
    for s in &mut w.slots {
        s.local.clear();
    }
    w.ledger.clear();
    drop(w);
    let h = Handle::current();
    for id in ids.into_iter().chain([journal, clients]) {
        h.kill(id);
    }
    (result, tracer)
}
