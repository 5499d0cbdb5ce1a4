//! Three cluster nodes on a small hand-written host: everything a host of
//! `shardsim_core::node::Node` has to do, outside the shardsim harness.
//!
//! Run it with `cargo run -p shardsim-core --example three_nodes`.
//!
//! The host is one event queue ordered by (time in µs, sequence number); an entry is one input
//! for one node. Each `Node::handle` call gets a fresh `Collect`, and the outputs it collected
//! become later entries. Every network hop takes exactly 1 ms, so the messages between two
//! nodes arrive in the order they were sent, as Akka guarantees.
//!
//! Node 0 forms the cluster; nodes 1 and 2 join through it. Then a client on each node sends
//! three messages to one entity, and the run checks that each was delivered once, in order.
//! There is no clock, no `HashMap` and no unseeded randomness: every run prints the same lines.

use shardsim_core::ids::{EntityId, NodeId, NodeInc, SenderId};
use shardsim_core::membership::{MemberStatus, NodeAddr};
use shardsim_core::node::{
    Collect, Effect, Fact, Node, NodeConfig, NodeInput, NodeOutput, NodeTimer,
};
use shardsim_core::protocol::{
    Addr, CoordinatorEvent, Envelope, Incarnations, Msg, Observation, Role,
};
use shardsim_core::time::Instant;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One network hop, and the journal's answer to a write, in µs.
const LATENCY: u64 = 1_000;
/// The run ends after 20 s of simulated time.
const END: u64 = 20_000_000;

/// The world the nodes run in. A node's index is its `NodeId`.
struct Host {
    nodes: Vec<Node>,
    /// (time in µs, sequence) → (node index, input). The sequence keeps events of the same
    /// time in the order they were queued.
    queue: BTreeMap<(u64, u64), (usize, NodeInput)>,
    seq: u64,
    /// The coordinator's journal: one for the whole cluster.
    journal: Vec<CoordinatorEvent>,
    /// Entity incarnation numbers, unique in the run: one counter for every node.
    incarnations: Incarnations,
    /// Every delivery to an entity: the node it ran on and the message.
    delivered: Vec<(usize, Envelope)>,
}

impl Host {
    fn push(&mut self, at: u64, node: usize, input: NodeInput) {
        self.seq += 1;
        self.queue.insert((at, self.seq), (node, input));
    }

    /// The answer to a node's seed-node timeout: the other live nodes that are Up members,
    /// and the lowest live node.
    fn join_check(&self, node: usize) -> NodeInput {
        let members: Vec<NodeAddr> = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(i, n)| *i != node && n.status_of_self() == Some(MemberStatus::Up))
            .filter(|(_, n)| !n.is_stopped())
            .map(|(_, n)| n.addr())
            .collect();
        let first_live = self.nodes.iter().find(|n| !n.is_stopped()).map(Node::addr);
        NodeInput::JoinCheck {
            members,
            first_live,
        }
    }

    /// Hand one input to node `i` at time `t`, and queue what its outputs ask for.
    fn step(&mut self, t: u64, i: usize, input: NodeInput) {
        let input = match input {
            // A message for an actor that is not running on its node is a dead letter. (Every
            // node here keeps its first incarnation; a host that restarts nodes also drops
            // messages addressed to an older incarnation.)
            NodeInput::Deliver { role, msg, .. } if !self.nodes[i].has_role(role) => {
                if let Msg::User(env) = msg {
                    println!("{}  dead letter on node {i}: {env:?}", Instant(t));
                }
                return;
            }
            // The seed-node timeout is answered with what the node's `InitJoin` would learn now.
            NodeInput::Timer {
                timer: NodeTimer::JoinCheck,
                ..
            } => self.join_check(i),
            input => input,
        };
        // A fresh collecting host per call: it lends the node the journal and the counter.
        let mut collect = Collect {
            out: Vec::new(),
            journal: Some(&self.journal[..]),
            incarnations: &mut self.incarnations,
        };
        self.nodes[i].handle(Instant(t), input, &mut collect);
        let outputs = collect.out;
        let me = self.nodes[i].addr();
        // The address of an actor on this node.
        let actor = |role: Role| Addr {
            node: me.node,
            inc: me.inc,
            role,
        };
        for o in outputs {
            match o {
                // Messages to other nodes (or to itself) cross the network: 1 ms, FIFO.
                NodeOutput::Effect(Effect::Send { from, to, msg }) => {
                    let (from, role) = (actor(from), to.role);
                    let input = NodeInput::Deliver { from, role, msg };
                    self.push(t + LATENCY, to.node.0 as usize, input);
                }
                NodeOutput::Effect(Effect::SendCluster { to, msg }) => {
                    let input = NodeInput::Cluster { from: me, msg };
                    self.push(t + LATENCY, to.node.0 as usize, input);
                }
                NodeOutput::Effect(Effect::SendRepl { to, msg }) => {
                    let input = NodeInput::Repl { from: me, msg };
                    self.push(t + LATENCY, to.node.0 as usize, input);
                }
                // Death watch: every live region hears that the coordinator stopped.
                NodeOutput::Effect(Effect::CoordinatorTerminated) => {
                    let (from, role) = (actor(Role::Coordinator), Role::Region);
                    let msg = Msg::CoordinatorTerminated;
                    let live: Vec<usize> = (0..self.nodes.len())
                        .filter(|&j| !self.nodes[j].is_stopped())
                        .collect();
                    for j in live {
                        self.push(t + LATENCY, j, NodeInput::Deliver { from, role, msg });
                    }
                }
                // Timers come back with their generation; the node ignores stale ones.
                NodeOutput::Effect(Effect::SetTimer { timer, after, gen }) => {
                    self.push(t + after.0, i, NodeInput::Timer { timer, gen })
                }
                // Messages between actors of one node: no delay here, but a later input.
                NodeOutput::Effect(Effect::Local { msg, .. }) => {
                    self.push(t, i, NodeInput::Local(msg))
                }
                // The journal appends the event and acknowledges after 1 ms.
                NodeOutput::Effect(Effect::Persist { gen, event }) => {
                    self.journal.push(event);
                    self.push(t + LATENCY, i, NodeInput::Persisted { gen });
                }
                NodeOutput::Fact(Fact::Observe {
                    obs: Observation::Delivered { env, .. },
                    incarnation,
                }) => {
                    let at = Instant(t);
                    println!("{at}  node {i} delivered {env:?} to incarnation {incarnation}");
                    self.delivered.push((i, env));
                }
                NodeOutput::Fact(Fact::Observe {
                    obs: Observation::Dropped { env, reason },
                    ..
                }) => println!("{}  node {i} dropped {env:?}: {reason:?}", Instant(t)),
                NodeOutput::Fact(Fact::CoordinatorStarted { .. }) => {
                    println!("{}  the coordinator started on node {i}", Instant(t))
                }
                NodeOutput::Fact(Fact::RoleBreach(b)) => {
                    panic!("node {i}: a role broke its own rule: {b}")
                }
                // A stopped node ignores every later input (none stops in this run).
                NodeOutput::Effect(Effect::Shutdown { reason }) => {
                    println!("{}  node {i} stopped: {reason}", Instant(t))
                }
                // The remember-entities stores and the nodes' disks: with the default settings
                // (remember-entities off, persistence state-store mode) nothing emits these.
                NodeOutput::Effect(Effect::Store(_))
                | NodeOutput::Effect(Effect::StoreReplyLocal(_))
                | NodeOutput::Effect(Effect::Durable { .. }) => {}
                // Facts for a trace or a checker: this host needs none of them.
                NodeOutput::Fact(Fact::Observe { .. })
                | NodeOutput::Fact(Fact::StoreWritten { .. })
                | NodeOutput::Fact(Fact::StoreRead { .. })
                | NodeOutput::Fact(Fact::TimerFired(_))
                | NodeOutput::Fact(Fact::View(_))
                | NodeOutput::Fact(Fact::Cluster(_))
                | NodeOutput::Fact(Fact::JoinAgain(_))
                | NodeOutput::Fact(Fact::PersistAcked { .. })
                | NodeOutput::Fact(Fact::RegionCoordinator(_))
                | NodeOutput::Fact(Fact::RegionStopped { .. })
                | NodeOutput::Fact(Fact::CoordinatorStopped { .. })
                | NodeOutput::Fact(Fact::RecoveryFailed { .. }) => {}
            }
        }
    }
}

fn main() {
    // Entity ids 0..100 in 10 shards, the defaults otherwise; every node hosts shards.
    let cfg = Arc::new(NodeConfig::default_for(100, 10));
    let addr = |i: u32| NodeAddr {
        node: NodeId(i),
        inc: NodeInc(1),
    };
    let mut host = Host {
        nodes: (0..3)
            .map(|i| Node::new(addr(i), true, cfg.clone()))
            .collect(),
        queue: BTreeMap::new(),
        seq: 0,
        journal: Vec::new(),
        incarnations: Incarnations { next: 1 },
        delivered: Vec::new(),
    };
    // Node 0 forms a new cluster at 0 s; nodes 1 and 2 join through it at 2 s.
    host.push(0, 0, NodeInput::Start { seeds: vec![] });
    for i in 1..3 {
        let seeds = vec![addr(0)];
        host.push(2_000_000, i, NodeInput::Start { seeds });
    }
    // From 10 s on, the client on node s sends seq 1, 2, 3 to entity s + 1, 100 ms apart.
    for seq in 1..=3u64 {
        for s in 0..3u32 {
            let env = Envelope {
                sender: SenderId(s),
                entity: EntityId(s + 1),
                seq,
            };
            let at = 10_000_000 + seq * 100_000;
            host.push(at, s as usize, NodeInput::Request(env));
        }
    }
    while let Some(((t, _), (i, input))) = host.queue.pop_first() {
        if t > END {
            break;
        }
        host.step(t, i, input);
    }
    // Every client's messages reached their entity exactly once, in the order sent.
    for s in 0..3u32 {
        let seqs: Vec<u64> = host
            .delivered
            .iter()
            .filter(|(_, env)| env.sender == SenderId(s))
            .map(|(_, env)| env.seq)
            .collect();
        assert_eq!(seqs, [1, 2, 3], "client {s}");
    }
    let n = host.delivered.len();
    println!("all {n} messages delivered once, in order");
}

/// `cargo test` runs the example too (`test = true` in the crate's `Cargo.toml`), so it
/// cannot fall behind the model.
#[cfg(test)]
#[test]
fn the_example_runs() {
    main();
}
