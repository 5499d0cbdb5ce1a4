//! A tiny deterministic harness: one event queue ordered by (time, seq), 1-5 ms latency derived
//! from (from, to, count), FIFO per link, crashes and a partition that drops messages between
//! sides (at send and at delivery).

use super::*;

fn addr(i: usize) -> NodeAddr {
    NodeAddr {
        node: NodeId(i as u32),
        inc: NodeInc(1),
    }
}

fn secs(s: u64) -> Instant {
    Instant(s * 1_000_000)
}

#[derive(Debug)]
enum Ev {
    Input(usize, MInput),
    Timer(usize, MTimer, u64),
    Deliver {
        to: NodeAddr,
        from: NodeAddr,
        msg: MMsg,
    },
}

struct Sim {
    now: Instant,
    seq: u64,
    queue: BTreeMap<(Instant, u64), Ev>,
    nodes: Vec<Membership>,
    crashed: BTreeSet<usize>,
    stopped: BTreeMap<usize, String>,
    side: Vec<u8>,
    timer_gen: BTreeMap<(usize, MTimer), u64>,
    link_last: BTreeMap<(usize, usize), Instant>,
    link_count: BTreeMap<(usize, usize), u64>,
    views: Vec<Vec<Member>>,
    observed: Vec<(Instant, usize, MembershipEvent)>,
    /// Every full gossip sent: (time, sender, target, state), delivered or not.
    gossips: Vec<(Instant, usize, NodeAddr, Arc<GossipState>)>,
}

impl Sim {
    fn new(n: usize, cfg: MembershipConfig) -> Sim {
        Sim {
            now: Instant::ZERO,
            seq: 0,
            queue: BTreeMap::new(),
            nodes: (0..n)
                .map(|i| Membership::new(addr(i), true, cfg.clone()))
                .collect(),
            crashed: BTreeSet::new(),
            stopped: BTreeMap::new(),
            side: vec![0; n],
            timer_gen: BTreeMap::new(),
            link_last: BTreeMap::new(),
            link_count: BTreeMap::new(),
            views: vec![Vec::new(); n],
            observed: Vec::new(),
            gossips: Vec::new(),
        }
    }

    fn push(&mut self, at: Instant, ev: Ev) {
        self.seq += 1;
        self.queue.insert((at, self.seq), ev);
    }

    fn input(&mut self, at: Instant, node: usize, i: MInput) {
        self.push(at, Ev::Input(node, i));
    }

    /// Start node 0 alone, then node i at i seconds via seed node 0.
    fn start_all(&mut self) {
        for i in 0..self.nodes.len() {
            let seeds = if i == 0 { vec![] } else { vec![addr(0)] };
            self.input(secs(i as u64), i, MInput::Start { seeds });
        }
    }

    fn dead(&self, i: usize) -> bool {
        self.crashed.contains(&i) || self.stopped.contains_key(&i)
    }

    fn run_until(&mut self, t: Instant) {
        while let Some(entry) = self.queue.first_entry() {
            if entry.key().0 > t {
                break;
            }
            let ((at, _), ev) = entry.remove_entry();
            self.now = at;
            let (node, input) = match ev {
                Ev::Input(n, i) => (n, i),
                Ev::Timer(n, timer, g) => {
                    if self.timer_gen.get(&(n, timer)) != Some(&g) {
                        continue;
                    }
                    (n, MInput::Timeout(timer))
                }
                Ev::Deliver { to, from, msg } => {
                    let (t, f) = (to.node.0 as usize, from.node.0 as usize);
                    // A crashed sender's in-flight messages are lost; a shut-down sender's
                    // are not. Messages to an older incarnation are dead letters.
                    if self.crashed.contains(&f)
                        || self.side[f] != self.side[t]
                        || self.nodes[t].me() != to
                    {
                        continue;
                    }
                    (t, MInput::Deliver { from, msg })
                }
            };
            if self.dead(node) {
                continue;
            }
            let mut out = Vec::new();
            self.nodes[node].handle(at, input, &mut out);
            for o in out {
                self.apply(node, o);
            }
        }
        self.now = t;
    }

    fn apply(&mut self, node: usize, o: MOutput) {
        match o {
            MOutput::Send { to: to_addr, msg } => {
                if let MMsg::Gossip { gossip } = &msg {
                    self.gossips.push((self.now, node, to_addr, gossip.clone()));
                }
                let to = to_addr.node.0 as usize;
                if to >= self.nodes.len() || self.side[to] != self.side[node] {
                    return;
                }
                let c = self.link_count.entry((node, to)).or_insert(0);
                *c += 1;
                let lat = 1 + (node as u64 * 7 + to as u64 * 3 + *c) % 5;
                let last = self.link_last.get(&(node, to)).copied().unwrap_or_default();
                let at = (self.now + Duration::from_millis(lat)).max(last);
                self.link_last.insert((node, to), at);
                self.push(
                    at,
                    Ev::Deliver {
                        to: to_addr,
                        from: self.nodes[node].me(),
                        msg,
                    },
                );
            }
            MOutput::SetTimer { timer, after } => {
                let g = self.timer_gen.entry((node, timer)).or_insert(0);
                *g += 1;
                let g = *g;
                self.push(self.now + after, Ev::Timer(node, timer, g));
            }
            MOutput::CancelTimer(timer) => {
                *self.timer_gen.entry((node, timer)).or_insert(0) += 1;
            }
            MOutput::MembersChanged(v) => self.views[node] = v,
            MOutput::Shutdown { reason } => {
                self.stopped.insert(node, reason);
            }
            // No singleton here: the exiting tasks are done at once.
            MOutput::SelfExiting => self.input(self.now, node, MInput::ExitingCompleted),
            MOutput::Observe(e) => self.observed.push((self.now, node, e)),
        }
    }

    fn partition(&mut self, sides: &[&[usize]]) {
        for (k, s) in sides.iter().enumerate() {
            for i in s.iter() {
                self.side[*i] = k as u8;
            }
        }
    }

    fn heal(&mut self) {
        self.side.iter_mut().for_each(|s| *s = 0);
    }

    /// (node, up_number, status) of a node's last MembersChanged.
    fn view(&self, i: usize) -> Vec<(u32, u32, MemberStatus)> {
        self.views[i]
            .iter()
            .map(|m| (m.node.0, m.up_number, m.status))
            .collect()
    }

    fn view_nodes(&self, i: usize) -> Vec<u32> {
        let mut v: Vec<u32> = self.views[i].iter().map(|m| m.node.0).collect();
        v.sort();
        v
    }

    fn first_event(&self, f: impl Fn(usize, &MembershipEvent) -> bool) -> Option<Instant> {
        self.observed
            .iter()
            .find(|(_, n, e)| f(*n, e))
            .map(|(t, _, _)| *t)
    }
}

fn up(n: u32) -> Vec<(u32, u32, MemberStatus)> {
    (0..n).map(|i| (i, i + 1, MemberStatus::Up)).collect()
}

fn sbr(strategy: SbrStrategy) -> MembershipConfig {
    MembershipConfig {
        downing: DowningProvider::SplitBrainResolver {
            strategy,
            stable_after_ms: 5000,
            down_removal_margin_ms: 5000,
            down_all_when_unstable: Default::default(),
        },
        ..Default::default()
    }
}

/// (1) Three nodes join in order, all become Up with up-numbers 1, 2, 3; views converge.
#[test]
fn three_nodes_join_and_converge() {
    let mut s = Sim::new(3, MembershipConfig::default());
    s.start_all();
    s.run_until(secs(12));
    for i in 0..3 {
        assert_eq!(s.view(i), up(3), "view of node {i}");
        assert_eq!(s.nodes[i].leader(), Some(addr(0)));
        assert!(s.nodes[i].unreachable().is_empty());
        assert_eq!(s.nodes[i].status_of_self(), Some(MemberStatus::Up));
    }
    assert!(s.nodes[0].is_leader() && !s.nodes[1].is_leader());
    assert!(s.stopped.is_empty());
}

/// (2) A crashed node is unreachable after ~3-4 s; an operator Down makes it Down, then
/// Removed, and MembersChanged omits it.
#[test]
fn crash_then_operator_down() {
    let mut s = Sim::new(3, MembershipConfig::default());
    s.start_all();
    s.run_until(secs(12));
    s.crashed.insert(2);
    s.run_until(secs(14));
    assert!(s.nodes[0].unreachable().is_empty());
    s.run_until(secs(20));
    for i in 0..2 {
        assert_eq!(s.nodes[i].unreachable(), BTreeSet::from([addr(2)]));
        let t = s
            .first_event(|n, e| {
                n == i && matches!(e, MembershipEvent::Unreachable { subject, .. } if *subject == addr(2))
            })
            .unwrap();
        assert!(t >= secs(15) && t <= secs(17), "unreachable at {t}");
    }
    // No downing provider: still a member, and it blocks nothing but leader actions.
    s.run_until(secs(30));
    assert_eq!(s.view_nodes(0), vec![0, 1, 2]);
    s.input(secs(30), 1, MInput::DownCommand(addr(2)));
    s.run_until(secs(40));
    for i in 0..2 {
        assert_eq!(s.view(i), up(2));
        assert!(s.nodes[i].unreachable().is_empty());
        let down = s.first_event(|n, e| {
            n == i
                && *e
                    == MembershipEvent::StatusChanged {
                        node: addr(2),
                        status: MemberStatus::Down,
                    }
        });
        let removed = s.first_event(|n, e| {
            n == i
                && *e
                    == MembershipEvent::StatusChanged {
                        node: addr(2),
                        status: MemberStatus::Removed,
                    }
        });
        assert!(down.unwrap() < removed.unwrap());
    }
    assert!(s.stopped.is_empty());
}

/// (3) 5 nodes, partition {0,1,2} | {3,4}, keep-majority: the minority downs itself, the
/// majority removes it after the removal margin.
#[test]
fn sbr_keep_majority_partition() {
    let mut s = Sim::new(5, sbr(SbrStrategy::KeepMajority));
    s.start_all();
    s.run_until(secs(15));
    for i in 0..5 {
        assert_eq!(s.view(i), up(5));
    }
    s.partition(&[&[0, 1, 2], &[3, 4]]);
    s.run_until(secs(60));
    for i in [3, 4] {
        let r = s.stopped.get(&i).expect("minority node stopped");
        assert!(r.starts_with("sbr: keep-majority"), "{r}");
        // The role's own getter agrees with its `Shutdown` output (a cargo-mutants survivor
        // made it always false).
        assert!(s.nodes[i].is_stopped());
    }
    for i in 0..3 {
        assert!(!s.stopped.contains_key(&i));
        assert!(!s.nodes[i].is_stopped());
        assert_eq!(s.view(i), up(3));
    }
    let decided = s
        .first_event(|n, e| n == 0 && matches!(e, MembershipEvent::DowningDecision { .. }))
        .unwrap();
    let removed = s
        .first_event(|n, e| {
            n == 0
                && *e
                    == MembershipEvent::StatusChanged {
                        node: addr(3),
                        status: MemberStatus::Removed,
                    }
        })
        .unwrap();
    // Unreachable at ~19 s, stable for 5 s, then 5 s of removal margin.
    assert!(decided >= secs(23), "decided at {decided}");
    assert!(
        removed - decided >= Duration::from_secs(5),
        "removed at {removed}"
    );
    let minority_decision = s
        .observed
        .iter()
        .find(|(_, n, e)| *n == 3 && matches!(e, MembershipEvent::DowningDecision { .. }));
    match minority_decision {
        Some((_, _, MembershipEvent::DowningDecision { downed, .. })) => {
            assert_eq!(downed, &vec![addr(3), addr(4)])
        }
        _ => panic!("minority leader decided nothing"),
    }
}

/// (4) Same partition with auto-down: two clusters, each with its own leader, nobody stops.
#[test]
fn auto_down_makes_two_clusters() {
    let cfg = MembershipConfig {
        downing: DowningProvider::AutoDown { after_ms: 2000 },
        ..Default::default()
    };
    let mut s = Sim::new(5, cfg);
    s.start_all();
    s.run_until(secs(15));
    s.partition(&[&[0, 1, 2], &[3, 4]]);
    s.run_until(secs(40));
    assert!(s.stopped.is_empty());
    for i in 0..3 {
        assert_eq!(s.view(i), up(3));
        assert_eq!(s.nodes[i].leader(), Some(addr(0)));
    }
    for i in 3..5 {
        assert_eq!(
            s.view(i),
            vec![(3, 4, MemberStatus::Up), (4, 5, MemberStatus::Up)]
        );
        assert_eq!(s.nodes[i].leader(), Some(addr(3)));
    }
    // After a heal the two clusters ignore each other (removed incarnations are quarantined).
    s.heal();
    s.run_until(secs(60));
    assert!(s.stopped.is_empty());
    assert_eq!(s.view_nodes(0), vec![0, 1, 2]);
    assert_eq!(s.view_nodes(4), vec![3, 4]);
}

/// (5) Graceful leave of the newest and of the oldest (leader) node.
#[test]
fn graceful_leave() {
    let mut s = Sim::new(4, MembershipConfig::default());
    s.start_all();
    s.run_until(secs(12));
    s.input(secs(12), 3, MInput::Leave);
    s.run_until(secs(25));
    assert_eq!(s.stopped.get(&3).map(String::as_str), Some("left"));
    assert!(matches!(
        s.nodes[3].status_of_self(),
        Some(MemberStatus::Exiting | MemberStatus::Removed)
    ));
    for i in 0..3 {
        assert_eq!(s.view(i), up(3));
    }
    // The oldest, also the leader, leaves: node 1 takes over leadership.
    s.input(secs(25), 0, MInput::Leave);
    s.run_until(secs(40));
    assert_eq!(s.stopped.get(&0).map(String::as_str), Some("left"));
    for i in 1..3 {
        assert_eq!(
            s.view(i),
            vec![(1, 2, MemberStatus::Up), (2, 3, MemberStatus::Up)]
        );
        assert_eq!(s.nodes[i].leader(), Some(addr(1)));
    }
    assert_eq!(s.stopped.len(), 2);
}

fn split_2_3(strategy: SbrStrategy) -> Sim {
    let mut s = Sim::new(5, sbr(strategy));
    s.start_all();
    s.run_until(secs(15));
    s.partition(&[&[0, 1], &[2, 3, 4]]);
    s.run_until(secs(60));
    s
}

fn survivors(s: &Sim) -> Vec<usize> {
    (0..s.nodes.len())
        .filter(|i| !s.stopped.contains_key(i))
        .collect()
}

/// (6) keep-oldest, static-quorum and down-all on a 2 | 3 split.
#[test]
fn sbr_strategies_on_2_3_split() {
    // Node 0 (up-number 1) is the oldest: its side of two survives.
    let s = split_2_3(SbrStrategy::KeepOldest {
        down_if_alone: false,
    });
    assert_eq!(survivors(&s), vec![0, 1]);
    assert_eq!(s.view(0), up(2));
    assert!(s.stopped[&3].starts_with("sbr: keep-oldest"));

    let s = split_2_3(SbrStrategy::StaticQuorum { quorum_size: 3 });
    assert_eq!(survivors(&s), vec![2, 3, 4]);
    assert_eq!(s.view_nodes(4), vec![2, 3, 4]);
    assert!(s.stopped[&0].starts_with("sbr: static-quorum"));

    let s = split_2_3(SbrStrategy::DownAll);
    assert!(survivors(&s).is_empty());
    assert!(s.stopped.values().all(|r| r.starts_with("sbr: down-all")));

    let s = split_2_3(SbrStrategy::KeepMajority);
    assert_eq!(survivors(&s), vec![2, 3, 4]);

    // keep-oldest with down-if-alone: the oldest alone downs itself, the rest survive.
    let mut s = Sim::new(
        5,
        sbr(SbrStrategy::KeepOldest {
            down_if_alone: true,
        }),
    );
    s.start_all();
    s.run_until(secs(15));
    s.partition(&[&[0], &[1, 2, 3, 4]]);
    s.run_until(secs(60));
    assert_eq!(survivors(&s), vec![1, 2, 3, 4]);
    assert_eq!(
        s.view(1),
        (1..5)
            .map(|i| (i, i + 1, MemberStatus::Up))
            .collect::<Vec<_>>()
    );
}

/// (7) A partition healed before stable-after: nobody is downed, everyone reachable again.
/// The heal comes 4 s after detection (1 s before stable-after): each observer's reachable
/// record spreads by gossip to one node per round (ClusterDaemon `gossip()`), so the leader
/// needs a few rounds to learn that every observer hears the other side again. (With the old
/// push to every member the heal could come 3 s after detection.)
#[test]
fn heal_before_stable_after() {
    let mut s = Sim::new(5, sbr(SbrStrategy::KeepMajority));
    s.start_all();
    s.run_until(secs(15));
    s.partition(&[&[0, 1, 2], &[3, 4]]);
    s.run_until(secs(19));
    assert_eq!(s.nodes[0].unreachable(), BTreeSet::from([addr(3), addr(4)]));
    assert_eq!(
        s.nodes[4].unreachable(),
        BTreeSet::from([addr(0), addr(1), addr(2)])
    );
    s.heal();
    s.run_until(secs(60));
    assert!(s.stopped.is_empty());
    assert!(!s
        .observed
        .iter()
        .any(|(_, _, e)| matches!(e, MembershipEvent::DowningDecision { .. })));
    for i in 0..5 {
        assert_eq!(s.view(i), up(5));
        assert!(s.nodes[i].unreachable().is_empty());
    }
    assert!(s
        .first_event(|n, e| n == 0 && matches!(e, MembershipEvent::Reachable { .. }))
        .is_some());
}

/// Joining is delayed by a partition: the leader cannot move the joiner Up without
/// convergence, and does after the heal.
#[test]
fn partition_delays_join() {
    let mut s = Sim::new(4, MembershipConfig::default());
    for i in 0..3 {
        let seeds = if i == 0 { vec![] } else { vec![addr(0)] };
        s.input(secs(i as u64), i, MInput::Start { seeds });
    }
    s.run_until(secs(10));
    s.partition(&[&[0, 1, 3], &[2]]);
    s.input(
        secs(15),
        3,
        MInput::Start {
            seeds: vec![addr(0)],
        },
    );
    s.run_until(secs(25));
    assert_eq!(s.nodes[0].status_of_self(), Some(MemberStatus::Up));
    assert_eq!(s.nodes[3].status_of_self(), Some(MemberStatus::Joining));
    s.heal();
    s.run_until(secs(35));
    for i in 0..4 {
        assert_eq!(s.view(i), up(4));
    }
}

/// A restarted node (new incarnation) replaces the old one, which is downed and removed.
#[test]
fn restart_with_new_incarnation() {
    let mut s = Sim::new(3, MembershipConfig::default());
    s.start_all();
    s.run_until(secs(10));
    // Node 2 restarts: new incarnation, same node id; the harness addresses by node id.
    s.nodes[2] = Membership::new(
        NodeAddr {
            node: NodeId(2),
            inc: NodeInc(2),
        },
        true,
        MembershipConfig::default(),
    );
    s.timer_gen.retain(|(n, _), _| *n != 2);
    s.input(
        secs(10),
        2,
        MInput::Start {
            seeds: vec![addr(0)],
        },
    );
    s.run_until(secs(30));
    for i in 0..3 {
        let v: Vec<(u32, u32, u32, MemberStatus)> = s.views[i]
            .iter()
            .map(|m| (m.node.0, m.inc.0, m.up_number, m.status))
            .collect();
        assert_eq!(
            v,
            vec![
                (0, 1, 1, MemberStatus::Up),
                (1, 1, 2, MemberStatus::Up),
                (2, 2, 4, MemberStatus::Up)
            ],
            "view of {i}"
        );
    }
}

/// Stale, unknown and out-of-order inputs never panic and are ignored.
#[test]
fn garbage_is_ignored() {
    let mut m = Membership::new(addr(0), true, MembershipConfig::default());
    let mut out = Vec::new();
    let stranger = addr(9);
    let junk = [
        MInput::Timeout(MTimer::GossipTick),
        MInput::Deliver {
            from: stranger,
            msg: MMsg::HeartbeatRsp,
        },
        MInput::Leave,
        MInput::DownCommand(stranger),
        MInput::Deliver {
            from: stranger,
            msg: MMsg::Gossip {
                gossip: std::sync::Arc::new(GossipState::default()),
            },
        },
    ];
    for i in junk.iter().cloned() {
        m.handle(Instant::ZERO, i, &mut out);
    }
    assert!(out.is_empty());
    m.handle(Instant::ZERO, MInput::Start { seeds: vec![] }, &mut out);
    for i in junk {
        m.handle(secs(1), i, &mut out);
    }
    assert!(!m.is_stopped());
    assert_eq!(m.members().len(), 1);
}

/// Same inputs, same outputs.
#[test]
fn deterministic() {
    let run = || {
        let mut s = Sim::new(5, sbr(SbrStrategy::KeepMajority));
        s.start_all();
        s.run_until(secs(15));
        s.partition(&[&[0, 1, 2], &[3, 4]]);
        s.run_until(secs(40));
        format!("{:?}{:?}", s.observed, s.stopped)
    };
    assert_eq!(run(), run());
}

#[test]
fn config_deserializes() {
    let c: MembershipConfig = toml::from_str(
        r#"
        gossip-interval-ms = 500
        [downing]
        provider = "split-brain-resolver"
        strategy = "keep-oldest"
        down-if-alone = true
        stable-after-ms = 7000
        down-removal-margin-ms = 7000
        "#,
    )
    .unwrap();
    assert_eq!(c.gossip_interval_ms, 500);
    assert_eq!(c.heartbeat_interval_ms, 1000);
    assert_eq!(
        c.downing,
        DowningProvider::SplitBrainResolver {
            strategy: SbrStrategy::KeepOldest {
                down_if_alone: true
            },
            stable_after_ms: 7000,
            down_removal_margin_ms: 7000,
            down_all_when_unstable: Default::default(),
        }
    );
    // An omitted down-if-alone is Akka's default, on.
    let c: MembershipConfig = toml::from_str(
        "[downing]\nprovider = \"split-brain-resolver\"\nstrategy = \"keep-oldest\"\n",
    )
    .unwrap();
    assert!(matches!(
        c.downing,
        DowningProvider::SplitBrainResolver {
            strategy: SbrStrategy::KeepOldest {
                down_if_alone: true
            },
            ..
        }
    ));
    let c: MembershipConfig =
        toml::from_str("[downing]\nprovider = \"auto-down\"\nafter-ms = 2000\n").unwrap();
    assert_eq!(c.downing, DowningProvider::AutoDown { after_ms: 2000 });
    assert_eq!(
        toml::from_str::<MembershipConfig>("").unwrap(),
        MembershipConfig::default()
    );
    assert!(toml::from_str::<MembershipConfig>("bogus = 1").is_err());
}

/// Pseudo-random garbage (fixed LCG) thrown at a running node never panics.
#[test]
fn fuzz_never_panics() {
    let x = std::cell::Cell::new(0x2545_f491_4f6c_dd1d_u64);
    let next = |n: u64| {
        x.set(
            x.get()
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1),
        );
        (x.get() >> 33) % n
    };
    let mut m = Membership::new(addr(0), true, sbr(SbrStrategy::KeepMajority));
    let mut out = Vec::new();
    m.handle(Instant::ZERO, MInput::Start { seeds: vec![] }, &mut out);
    let statuses = [
        MemberStatus::Joining,
        MemberStatus::Up,
        MemberStatus::Leaving,
        MemberStatus::Exiting,
        MemberStatus::Down,
        MemberStatus::Removed,
    ];
    for step in 0..5000u64 {
        let a = || NodeAddr {
            node: NodeId(next(4) as u32),
            inc: NodeInc(next(3) as u32),
        };
        let from = a();
        let input = match next(8) {
            0 => MInput::Timeout(MTimer::GossipTick),
            1 => MInput::Timeout(MTimer::HeartbeatTick),
            2 => MInput::DownCommand(a()),
            3 => MInput::Deliver {
                from,
                msg: MMsg::Join {
                    hosting: true,
                    app_version: 0,
                },
            },
            4 => MInput::Deliver {
                from,
                msg: MMsg::HeartbeatRsp,
            },
            _ => {
                let mut g = GossipState::default();
                for _ in 0..next(5) {
                    let st = statuses[next(6) as usize];
                    g.members.insert(
                        a(),
                        GossipMember {
                            up_number: [0, 1, 2, u32::MAX][next(4) as usize],
                            status: if st >= MemberStatus::Down && next(4) != 0 {
                                MemberStatus::Up
                            } else {
                                st
                            },
                            hosting: true,
                            app_version: 0,
                            down_reason: None,
                        },
                    );
                    g.reachability.insert(
                        (a(), a()),
                        ReachRecord {
                            version: next(10),
                            unreachable: next(2) == 0,
                        },
                    );
                }
                MInput::Deliver {
                    from,
                    msg: MMsg::Gossip {
                        gossip: std::sync::Arc::new(g),
                    },
                }
            }
        };
        m.handle(Instant(step * 300_000), input, &mut out);
    }
}

/// An operator Down of a live member reaches it, and it shuts itself down.
#[test]
fn operator_down_of_live_member() {
    let mut s = Sim::new(3, MembershipConfig::default());
    s.start_all();
    s.run_until(secs(12));
    s.input(secs(12), 0, MInput::DownCommand(addr(1)));
    s.run_until(secs(20));
    assert_eq!(
        s.stopped.get(&1).map(String::as_str),
        Some("downed: operator")
    );
    assert_eq!(s.view_nodes(0), vec![0, 2]);
    assert_eq!(s.view_nodes(2), vec![0, 2]);
}

/// A crashed node restarts and retries its Join to every seed (each gossip interval) while
/// its old incarnation is Down. Akka downs the old incarnation only `if (m.status != Down)`
/// (ClusterDaemon `joining`), so a retried Join leaves the gossip and its seen set alone. The
/// model used to re-down it and reset the seen set on every Join; when the Joins landed just
/// before the leader's gossip tick, convergence never held and the old incarnation stayed for
/// 30 s and more (swarm-remember seeds 45411, 61616, 89542; ddata 22278, 61616).
#[test]
fn retried_join_of_a_new_incarnation_keeps_the_seen_set() {
    let cfg = sbr(SbrStrategy::KeepMajority);
    let mut s = Sim::new(5, cfg);
    s.start_all();
    s.run_until(secs(10));
    s.crashed.insert(3);
    s.run_until(secs(11));
    let old = addr(3);
    let new = NodeAddr {
        node: NodeId(3),
        inc: NodeInc(2),
    };
    // The first Join downs the old incarnation (still Up: not yet unreachable).
    let mut out = Vec::new();
    s.nodes[0].handle(
        s.now,
        MInput::Deliver {
            from: new,
            msg: MMsg::Join {
                hosting: true,
                app_version: 0,
            },
        },
        &mut out,
    );
    assert_eq!(s.nodes[0].gossip.status(old), Some(MemberStatus::Down));
    // Let the others see the state, then a retried Join must change nothing.
    let t = s.now + Duration::from_millis(900);
    s.run_until(t);
    let (seen, rev) = (s.nodes[0].gossip.seen.clone(), s.nodes[0].rev);
    assert!(seen.len() > 1, "gossip spread the state: {seen:?}");
    let mut out = Vec::new();
    s.nodes[0].handle(
        t,
        MInput::Deliver {
            from: new,
            msg: MMsg::Join {
                hosting: true,
                app_version: 0,
            },
        },
        &mut out,
    );
    assert_eq!(
        s.nodes[0].gossip.seen, seen,
        "a retried Join reset the seen set"
    );
    assert_eq!(s.nodes[0].rev, rev);
}

fn min_members(count: usize, of_role: bool) -> MembershipConfig {
    MembershipConfig {
        min_nr_of_members: MinMembers { count, of_role },
        ..Default::default()
    }
}

/// `min-nr-of-members` (§9.2, ClusterDaemon `isMinNrOfMembersFulfilled`): with 3, the first
/// two members stay Joining (no up-number) until the third joins at 6 s; then all three are Up.
#[test]
fn leader_holds_joining_members_until_min_nr_of_members() {
    let mut s = Sim::new(3, min_members(3, false));
    s.input(secs(0), 0, MInput::Start { seeds: vec![] });
    s.input(
        secs(1),
        1,
        MInput::Start {
            seeds: vec![addr(0)],
        },
    );
    s.input(
        secs(6),
        2,
        MInput::Start {
            seeds: vec![addr(0)],
        },
    );
    s.run_until(secs(5));
    for i in 0..2 {
        assert_eq!(s.nodes[i].status_of_self(), Some(MemberStatus::Joining));
        assert!(s
            .view(i)
            .iter()
            .all(|(_, up, st)| *st == MemberStatus::Joining && *up == u32::MAX));
    }
    s.run_until(secs(12));
    for i in 0..3 {
        assert_eq!(s.view(i), up(3), "view of node {i}");
    }
}

/// The role's `min-nr-of-members` counts members with the sharding role only: a node without
/// it (here node 0, the first and the leader) does not count, the other two do.
#[test]
fn role_min_nr_of_members_counts_role_members_only() {
    let cfg = min_members(2, true);
    let mut s = Sim::new(3, cfg.clone());
    s.nodes[0] = Membership::new(addr(0), false, cfg);
    s.input(secs(0), 0, MInput::Start { seeds: vec![] });
    s.input(
        secs(1),
        1,
        MInput::Start {
            seeds: vec![addr(0)],
        },
    );
    s.run_until(secs(5));
    // Two members, one with the role: nobody is Up.
    assert_eq!(s.nodes[1].status_of_self(), Some(MemberStatus::Joining));
    assert_eq!(s.nodes[0].status_of_self(), Some(MemberStatus::Joining));
    s.input(
        secs(5),
        2,
        MInput::Start {
            seeds: vec![addr(0)],
        },
    );
    s.run_until(secs(12));
    for i in 0..3 {
        assert_eq!(
            s.nodes[i].status_of_self(),
            Some(MemberStatus::Up),
            "node {i}"
        );
    }
    assert_eq!(s.views[0].iter().filter(|m| m.hosting).count(), 2);
}

/// The app version travels in `Join` and gossip: every view shows each member's version.
#[test]
fn app_versions_are_gossiped() {
    let mut s = Sim::new(3, MembershipConfig::default());
    for (i, v) in [(0, 1), (1, 1), (2, 2)] {
        s.nodes[i].set_app_version(v);
    }
    s.start_all();
    s.run_until(secs(12));
    for i in 0..3 {
        let versions: Vec<(u32, u32)> = s.views[i]
            .iter()
            .map(|m| (m.node.0, m.app_version))
            .collect();
        assert_eq!(versions, vec![(0, 1), (1, 1), (2, 2)], "view of node {i}");
    }
}

/// `adjustedGossipDifferentViewProbability` as Akka HEAD computes it with the selector built
/// from `ReduceGossipDifferentViewProbability` (400): 400 (always prefer members with another
/// view) up to 400 members, then linear to a tenth of it at 1,200 members and flat beyond.
/// No scenario reaches 400 members, so only this test pins the large-cluster branch (found by
/// cargo-mutants, `reports/mutants.md`).
#[test]
fn gossip_different_view_probability_follows_akka() {
    let p = adjusted_gossip_different_view_probability;
    assert_eq!(p(3), 400.0);
    assert_eq!(p(400), 400.0);
    // k = (40 - 400) / (1200 - 400) = -0.45 per member above 400.
    assert!((p(800) - 220.0).abs() < 1e-9, "{}", p(800));
    assert!((p(401) - 399.55).abs() < 1e-9, "{}", p(401));
    assert_eq!(p(1200), 40.0);
    assert_eq!(p(5000), 40.0);
}

/// ClusterDaemon `gossipTick`: while `isGossipSpeedupNeeded`, exactly two speed-up rounds
/// follow a gossip tick (at 1/3 and 2/3 of the interval), not a chain of them (a survivor of
/// cargo-mutants: `speedup_left > 0` as `>= 0` only adds gossip rounds, which no scenario
/// notices).
#[test]
fn a_gossip_tick_schedules_two_speedup_rounds() {
    let mut m = Membership::new(addr(0), true, MembershipConfig::default());
    let mut out = Vec::new();
    m.handle(secs(0), MInput::Start { seeds: vec![] }, &mut out);
    // Four joiners: five members, only this node has seen the state, so speed-up is needed.
    for i in 1..5 {
        let join = MMsg::Join {
            hosting: true,
            app_version: 0,
        };
        m.handle(
            secs(0),
            MInput::Deliver {
                from: addr(i),
                msg: join,
            },
            &mut out,
        );
    }
    // ClusterDaemon `gossipSpeedupTick` is scheduled at a third of the gossip interval (a
    // cargo-mutants survivor scheduled it at `interval % 3`, a chain of rounds at once).
    let third = Duration(ms(MembershipConfig::default().gossip_interval_ms).0 / 3);
    let speedups = |out: &[MOutput]| {
        out.iter()
            .filter(|o| match o {
                MOutput::SetTimer {
                    timer: MTimer::GossipSpeedupTick,
                    after,
                } => {
                    assert_eq!(*after, third, "speed-up round at a third of the interval");
                    true
                }
                _ => false,
            })
            .count()
    };
    let mut step = |t: MTimer| {
        let mut out = Vec::new();
        m.handle(secs(1), MInput::Timeout(t), &mut out);
        speedups(&out)
    };
    assert_eq!(
        step(MTimer::GossipTick),
        1,
        "the tick schedules the first speed-up"
    );
    assert_eq!(
        step(MTimer::GossipSpeedupTick),
        1,
        "the first schedules the second"
    );
    assert_eq!(step(MTimer::GossipSpeedupTick), 0, "the second is the last");
}

/// ClusterDaemon `receiveGossip`: once joined, gossip from a sender that is not a member of
/// the local state is ignored (a survivor of cargo-mutants accepted it: `||` as `&&` in the
/// sender check).
#[test]
fn gossip_from_an_unknown_sender_is_ignored() {
    let mut s = Sim::new(3, MembershipConfig::default());
    s.start_all();
    s.run_until(secs(12));
    // Node 2's state, as if sent by a stranger (node 7, never a member): node 0 must not merge
    // it, even though it names node 0.
    let mut stranger = s.nodes[2].gossip_state().clone();
    stranger.version.bump(addr(7));
    stranger
        .members
        .entry(addr(0))
        .and_modify(|m| m.status = MemberStatus::Leaving);
    let before = s.nodes[0].gossip_state().clone();
    let mut out = Vec::new();
    s.nodes[0].handle(
        secs(12),
        MInput::Deliver {
            from: addr(7),
            msg: MMsg::Gossip {
                gossip: Arc::new(stranger),
            },
        },
        &mut out,
    );
    assert_eq!(*s.nodes[0].gossip_state(), before);
    assert!(out.is_empty(), "{out:?}");
}

/// Akka `MembershipState.leaderOf`: candidates are the reachable members that are not Down,
/// so a Down member with the lowest address does not lead, reachable or not (a survivor of
/// cargo-mutants: `< Down` as `<= Down`).
#[test]
fn a_down_member_is_never_the_leader() {
    let member = |status| GossipMember {
        up_number: 1,
        status,
        hosting: true,
        app_version: 0,
        down_reason: None,
    };
    let mut g = GossipState::default();
    g.members.insert(addr(0), member(MemberStatus::Down));
    g.members.insert(addr(1), member(MemberStatus::Up));
    g.members.insert(addr(2), member(MemberStatus::Up));
    assert_eq!(g.leader(addr(1)), Some(addr(1)));
    assert_eq!(g.leader(addr(2)), Some(addr(1)));
    // With nobody Up or Leaving the leader is the lowest candidate, still not the Down one.
    g.members.insert(addr(1), member(MemberStatus::Joining));
    g.members.insert(addr(2), member(MemberStatus::Joining));
    assert_eq!(g.leader(addr(2)), Some(addr(1)));
    g.members.insert(addr(0), member(MemberStatus::Up));
    assert_eq!(g.leader(addr(2)), Some(addr(0)));
}

/// `LeaderChanged` is published when the leader changes, and only then (ClusterDomainEvent
/// diff; a survivor of cargo-mutants published it on every change but that one): while three
/// nodes join and converge, each node sees its leader change once or twice (none, then
/// itself or node 0, then node 0), never twice in a row to the same leader.
#[test]
fn leader_changed_is_observed_only_on_a_change() {
    let mut s = Sim::new(3, MembershipConfig::default());
    s.start_all();
    s.run_until(secs(12));
    for i in 0..3 {
        let leaders: Vec<Option<NodeAddr>> = s
            .observed
            .iter()
            .filter(|(_, n, _)| *n == i)
            .filter_map(|(_, _, e)| match e {
                MembershipEvent::LeaderChanged { leader } => Some(*leader),
                _ => None,
            })
            .collect();
        assert!(
            !leaders.is_empty() && leaders.len() <= 2,
            "node {i}: {leaders:?}"
        );
        assert_eq!(leaders.last(), Some(&Some(addr(0))), "node {i}");
        assert!(
            leaders.windows(2).all(|w| w[0] != w[1]),
            "node {i}: {leaders:?}"
        );
    }
}

/// `ClusterHeartbeatSenderState.membershipChange`: a receiver that leaves this node's ring
/// selection is kept heartbeated (`oldReceiversNowUnreachable`) only when the failure detector
/// does not find it available; a reachable one, heard within the pause, is dropped at once (a
/// survivor of cargo-mutants kept every member: `&&` as `||` in `update_receivers`). Twelve
/// nodes join one by one, so the later joins move some node's nine receivers: after each ms,
/// each kept former receiver is one not heard within the pause or observed unreachable.
#[test]
fn a_reachable_former_heartbeat_receiver_is_not_kept() {
    let mut s = Sim::new(12, MembershipConfig::default());
    s.start_all();
    let pause = Duration::from_millis(MembershipConfig::default().acceptable_heartbeat_pause_ms);
    let mut moved = 0;
    let mut before: Vec<BTreeSet<NodeAddr>> = s.nodes.iter().map(|m| m.receivers.clone()).collect();
    let mut t = Instant::ZERO;
    while t < secs(30) {
        t = t + Duration::from_millis(1);
        s.run_until(t);
        for (i, m) in s.nodes.iter().enumerate() {
            if before[i].difference(&m.receivers).next().is_some() {
                moved += 1;
            }
            before[i] = m.receivers.clone();
            for a in &m.old_receivers_unreachable {
                let heard = m.last_heard.get(a).is_some_and(|l| t - *l <= pause);
                assert!(
                    !heard || m.observes_unreachable(*a),
                    "node {i} at {t:?} keeps {a:?}, heard within the pause and reachable"
                );
            }
        }
    }
    assert!(
        moved > 0,
        "no join moved a receiver out of a ring selection"
    );
}

/// Twelve nodes converged at 30 s, and a member outside node 0's ring selection (nine of its
/// eleven peers are receivers).
fn twelve_with_an_outsider() -> (Sim, NodeAddr) {
    let mut s = Sim::new(12, MembershipConfig::default());
    s.start_all();
    s.run_until(secs(30));
    assert_eq!(s.view_nodes(0).len(), 12);
    let x = (1..12)
        .map(addr)
        .find(|a| !s.nodes[0].receivers.contains(a))
        .expect("a member outside node 0's ring selection");
    (s, x)
}

/// `ClusterHeartbeatSenderState.removeMember`: a former receiver kept heartbeated because it
/// was not available (`oldReceiversNowUnreachable`) is dropped when it is removed from the
/// cluster (a survivor of cargo-mutants kept it, and heartbeated a removed node for ever: `&&`
/// as `||` in `update_receivers`'s retain). Twelve nodes; node 0 holds a member outside its
/// ring selection as such a former receiver (the state a ring change leaves while that member
/// is unreachable); the member crashes, is downed and removed.
#[test]
fn a_removed_former_heartbeat_receiver_is_no_longer_heartbeated() {
    let (mut s, x) = twelve_with_an_outsider();
    s.nodes[0].old_receivers_unreachable.insert(x);
    s.nodes[0].last_heard.insert(x, s.now);
    s.crashed.insert(x.node.0 as usize);
    s.input(secs(30), 0, MInput::DownCommand(x));
    s.run_until(secs(45));
    assert!(
        !s.view_nodes(0).contains(&x.node.0),
        "{:?}",
        s.view_nodes(0)
    );
    let m = &s.nodes[0];
    assert!(!m.old_receivers_unreachable.contains(&x));
    assert!(!m.last_heard.contains_key(&x));
}

/// `ClusterHeartbeatSenderState.membershipChange` keeps a receiver that leaves the ring
/// selection while its failure detector does not find it available, even before any observer
/// marked it unreachable: here one silent for longer than the pause (a survivor of
/// cargo-mutants dropped it unless it was also observed unreachable: `&&` as `||` in
/// `update_receivers`'s availability).
#[test]
fn a_silent_former_heartbeat_receiver_is_kept_before_it_is_marked_unreachable() {
    let (mut s, x) = twelve_with_an_outsider();
    let pause = Duration::from_millis(MembershipConfig::default().acceptable_heartbeat_pause_ms);
    let now = s.now;
    let m = &mut s.nodes[0];
    assert!(!m.observes_unreachable(x));
    // As if x had been a receiver, silent for twice the pause, not yet marked unreachable.
    m.receivers.insert(x);
    m.last_heard.insert(x, Instant(now.0 - 2 * pause.0));
    m.update_receivers(now);
    assert!(!m.receivers.contains(&x));
    assert!(m.old_receivers_unreachable.contains(&x));
    assert!(m.last_heard.contains_key(&x), "still heartbeated");
}

/// `ClusterHeartbeatSenderState.heartbeatRsp`: a former receiver kept heartbeated while it was
/// unreachable answers; it leaves `oldReceiversNowUnreachable` and, no longer a receiver, is no
/// longer heartbeated (a survivor of cargo-mutants kept heartbeating it: `delete !` in
/// `on_deliver`).
#[test]
fn a_former_receiver_that_answers_is_no_longer_heartbeated() {
    let (mut s, x) = twelve_with_an_outsider();
    let now = s.now;
    let m = &mut s.nodes[0];
    m.old_receivers_unreachable.insert(x);
    m.last_heard.insert(x, Instant(0));
    let r = *m.receivers.iter().next().unwrap();
    let mut out = Vec::new();
    for from in [x, r] {
        let msg = MMsg::HeartbeatRsp;
        m.handle(now, MInput::Deliver { from, msg }, &mut out);
    }
    assert!(!m.old_receivers_unreachable.contains(&x));
    assert!(!m.last_heard.contains_key(&x), "x is no longer heartbeated");
    assert_eq!(
        m.last_heard.get(&r),
        Some(&now),
        "a receiver's answer is recorded"
    );
}

/// ClusterCoreDaemon `joining`: a `Join` from a node that is already a member (its `Welcome`
/// was lost, and it retries) is answered with `Welcome` again (a survivor of cargo-mutants
/// welcomed only Removed members again: `!=` as `==` in `on_join`).
#[test]
fn a_repeated_join_of_a_member_is_welcomed_again() {
    let mut s = Sim::new(3, MembershipConfig::default());
    s.start_all();
    s.run_until(secs(10));
    assert_eq!(s.view_nodes(0), vec![0, 1, 2]);
    let now = s.now;
    let mut out = Vec::new();
    let join = MMsg::Join {
        hosting: true,
        app_version: 0,
    };
    s.nodes[0].handle(
        now,
        MInput::Deliver {
            from: addr(2),
            msg: join,
        },
        &mut out,
    );
    assert!(
        out.iter().any(|o| matches!(
            o,
            MOutput::Send { to, msg: MMsg::Welcome { .. } } if *to == addr(2)
        )),
        "{out:?}"
    );
}

/// `MembershipState.validNodeForGossip`: a gossip round never picks this node itself nor a
/// member it observes unreachable (a survivor of cargo-mutants let every member not in the
/// fix option's skip set through: `&&` as `||` in `gossip_round`). Three nodes, node 2
/// crashed: fifty of node 0's rounds go to node 1 only.
#[test]
fn gossip_rounds_skip_self_and_unreachable_members() {
    let mut s = Sim::new(3, MembershipConfig::default());
    s.start_all();
    s.run_until(secs(12));
    s.crashed.insert(2);
    s.run_until(secs(20));
    assert!(s.nodes[0].observes_unreachable(addr(2)));
    let mut out = Vec::new();
    for _ in 0..50 {
        s.nodes[0].gossip_round(&mut out);
    }
    let targets: BTreeSet<NodeAddr> = out
        .iter()
        .filter_map(|o| match o {
            MOutput::Send {
                to,
                msg: MMsg::Gossip { .. } | MMsg::GossipStatus { .. },
            } => Some(*to),
            _ => None,
        })
        .collect();
    assert_eq!(targets, BTreeSet::from([addr(1)]));
}

/// ClusterDaemon `isGossipSpeedupNeeded`: `seen.size < members.size / 2` (a survivor of
/// cargo-mutants sped up also when exactly half had seen the state: `<` as `<=`).
#[test]
fn gossip_speedup_is_needed_while_fewer_than_half_have_seen() {
    let mut s = Sim::new(4, MembershipConfig::default());
    s.start_all();
    s.run_until(secs(15));
    assert_eq!(s.view_nodes(0), vec![0, 1, 2, 3]);
    let m = &mut s.nodes[0];
    for (seen, needed) in [(0, true), (1, true), (2, false), (3, false), (4, false)] {
        let g = Arc::make_mut(&mut m.gossip);
        g.seen = (0..seen).map(addr).collect();
        assert_eq!(m.is_gossip_speedup_needed(), needed, "{seen} of 4 seen");
    }
}

/// ClusterDaemon `leaving`: the Leaving state goes at once to the two oldest members
/// (`gossipTargetsForLeavingAndExitingMembers`), besides a gossip round (survivors of
/// cargo-mutants skipped it: `gossip_after_leaving` and `gossip_to_oldest` as `()`).
#[test]
fn a_leaving_node_gossips_to_the_two_oldest_at_once() {
    let mut s = Sim::new(4, MembershipConfig::default());
    s.start_all();
    s.run_until(secs(15));
    assert_eq!(s.view_nodes(3), vec![0, 1, 2, 3]);
    let now = s.now;
    let mut out = Vec::new();
    s.nodes[3].handle(now, MInput::Leave, &mut out);
    let targets: BTreeSet<NodeAddr> = out
        .iter()
        .filter_map(|o| match o {
            MOutput::Send {
                to,
                msg: MMsg::Gossip { gossip },
            } if gossip.status(addr(3)) == Some(MemberStatus::Leaving) => Some(*to),
            _ => None,
        })
        .collect();
    assert!(
        targets.contains(&addr(0)) && targets.contains(&addr(1)),
        "{targets:?}"
    );
}

/// `auto-down-unreachable-after`: a member is downed once it has been unreachable for that
/// long, not before (a survivor of cargo-mutants downed at once: `>=` as `<` in `downing`).
#[test]
fn auto_down_waits_for_the_unreachable_period() {
    let cfg = MembershipConfig {
        downing: DowningProvider::AutoDown { after_ms: 5000 },
        ..Default::default()
    };
    let mut s = Sim::new(3, cfg);
    s.start_all();
    s.run_until(secs(12));
    s.crashed.insert(2);
    s.run_until(secs(40));
    let unreachable = s
        .first_event(
            |_, e| matches!(e, MembershipEvent::Unreachable { subject, .. } if *subject == addr(2)),
        )
        .expect("node 2 is found unreachable");
    let down = s
        .first_event(|_, e| {
            *e == MembershipEvent::StatusChanged {
                node: addr(2),
                status: MemberStatus::Down,
            }
        })
        .expect("node 2 is downed");
    assert!(
        down >= unreachable + Duration::from_millis(5000) && down <= secs(30),
        "unreachable at {unreachable}, down at {down}"
    );
}

/// ClusterDaemon: `MemberRemoved(self)` shuts the node down, whatever it was doing (here an
/// Exiting node whose exiting tasks have not completed learns that the leader removed it; a
/// survivor of cargo-mutants only stopped a Down node: the Removed arm of `post` deleted).
#[test]
fn a_node_that_sees_itself_removed_stops() {
    let mut s = Sim::new(3, MembershipConfig::default());
    s.start_all();
    s.run_until(secs(10));
    let now = s.now;
    let m = &mut s.nodes[2];
    for status in [
        MemberStatus::Leaving,
        MemberStatus::Exiting,
        MemberStatus::Removed,
    ] {
        let g = Arc::make_mut(&mut m.gossip);
        g.members.get_mut(&addr(2)).unwrap().status = status;
    }
    let mut out = Vec::new();
    let msg = MMsg::Heartbeat;
    m.handle(now, MInput::Deliver { from: addr(0), msg }, &mut out);
    assert!(
        out.iter()
            .any(|o| matches!(o, MOutput::Shutdown { reason } if reason == "left")),
        "{out:?}"
    );
    assert!(m.is_stopped());
}

/// SBR keep-majority (`KeepMajority.decide`): the larger side survives; on an even split the
/// side with the lowest address does. Node 0 alone against two is the minority even though
/// it holds the lowest address; three against three keep the side of node 0 (a survivor of
/// cargo-mutants took `n + 2 == total` for the tie: `*` as `+`).
#[test]
fn keep_majority_minority_with_the_lowest_address_and_an_even_split() {
    for (n, sides, kept) in [
        (3, vec![vec![0], vec![1, 2]], vec![1, 2]),
        (6, vec![vec![0, 1, 2], vec![3, 4, 5]], vec![0, 1, 2]),
    ] {
        let mut s = Sim::new(n, sbr(SbrStrategy::KeepMajority));
        s.start_all();
        s.run_until(secs(15 + n as u64));
        let sides: Vec<&[usize]> = sides.iter().map(|v| v.as_slice()).collect();
        s.partition(&sides);
        s.run_until(secs(60));
        assert_eq!(survivors(&s), kept, "{n} nodes, {sides:?}");
    }
}

/// Akka SBR restarts `stable-after` on a member's Up, Exited, Unreachable, Reachable and
/// Downed events, not on a join (SplitBrainResolver.scala `receive`, SBR:274-291: `addJoining`
/// changes the members without `mutateMemberInfo(resetStable = true)`). Five nodes, {3, 4} cut
/// off; while the majority waits, node 5 joins it (Joining: convergence is blocked, so it does
/// not become Up); the decision comes `stable-after` after the unreachability, before
/// `stable-after` has passed since the join.
#[test]
fn sbr_stable_after_does_not_restart_when_a_member_joins() {
    let mut s = Sim::new(6, sbr(SbrStrategy::KeepMajority));
    for i in 0..5 {
        let seeds = if i == 0 { vec![] } else { vec![addr(0)] };
        s.input(secs(i as u64), i, MInput::Start { seeds });
    }
    s.run_until(secs(15));
    s.partition(&[&[0, 1, 2, 5], &[3, 4]]);
    s.run_until(secs(21));
    s.input(
        secs(21),
        5,
        MInput::Start {
            seeds: vec![addr(0)],
        },
    );
    s.run_until(secs(60));
    let joined = s
        .first_event(|n, e| {
            n == 0
                && *e
                    == MembershipEvent::StatusChanged {
                        node: addr(5),
                        status: MemberStatus::Joining,
                    }
        })
        .expect("node 5 joins");
    let decided = s
        .first_event(|n, e| n == 0 && matches!(e, MembershipEvent::DowningDecision { .. }))
        .expect("the majority decides");
    assert!(
        decided < joined + Duration::from_millis(5000),
        "joined at {joined}, decided at {decided}"
    );
}

/// `HeartbeatNodeRing.receivers`: unreachable nodes on the way are taken too but do not count
/// towards the nine, and none is added once the selection holds nine (a survivor of
/// cargo-mutants took another: `<` as `<=`). Twelve nodes, two unreachable on node 0's ring.
#[test]
fn ring_receivers_never_exceed_the_monitored_number() {
    let nodes: BTreeSet<NodeAddr> = (0..12).map(addr).collect();
    let me = addr(0);
    let all = ring::receivers(me, &nodes, &BTreeSet::new(), 11);
    assert_eq!(all.len(), 11);
    // Ring order after `me`: a selection of 11 of 11 is every node; find the order by growing n.
    let mut order: Vec<NodeAddr> = Vec::new();
    for n in 1..=11 {
        let sel = ring::receivers(me, &nodes, &BTreeSet::new(), n);
        order.push(
            *sel.difference(&order.iter().copied().collect())
                .next()
                .unwrap(),
        );
    }
    // Eight reachable, two unreachable, one reachable: the first unreachable is taken (eight
    // so far), the second is not (nine so far), and the ninth reachable one ends the walk.
    let unreachable: BTreeSet<NodeAddr> = [order[8], order[9]].into_iter().collect();
    let sel = ring::receivers(me, &nodes, &unreachable, 9);
    let mut want: BTreeSet<NodeAddr> = order[..9].iter().copied().collect();
    want.insert(order[10]);
    assert_eq!(sel, want);
}

/// The fix option `gossip-skips-unreachable-members` (Akka before 2.6.10,
/// `reachabilityExcludingDownedObservers`): a member that another member observes as
/// unreachable is no gossip target. Without it (Akka since akka#29640, `validNodeForGossip`
/// asks only this node's own observation) it still is. Four converged nodes; node 1 records
/// node 3 unreachable in node 0's state; node 0's gossip ticks then target node 3 only without
/// the option (a survivor of cargo-mutants emptied the skip set, which only the 100-node
/// scenario noticed).
#[test]
fn gossip_skips_members_others_observe_unreachable_only_with_the_fix_option() {
    let targets_of_3 = |skip: bool| {
        let cfg = MembershipConfig {
            gossip_skips_unreachable: skip,
            ..MembershipConfig::default()
        };
        let mut s = Sim::new(4, cfg);
        s.start_all();
        s.run_until(secs(15));
        assert_eq!(s.view_nodes(0), vec![0, 1, 2, 3]);
        let m = &mut s.nodes[0];
        Arc::make_mut(&mut m.gossip).reachability.insert(
            (addr(1), addr(3)),
            ReachRecord {
                version: 1,
                unreachable: true,
            },
        );
        let mut n = 0;
        for k in 0..200 {
            let mut out = Vec::new();
            m.handle(secs(15 + k), MInput::Timeout(MTimer::GossipTick), &mut out);
            n += out
                .iter()
                .filter(|o| matches!(o, MOutput::Send { to, .. } if *to == addr(3)))
                .count();
        }
        n
    };
    assert!(
        targets_of_3(false) > 0,
        "Akka: node 3 stays a gossip target"
    );
    assert_eq!(targets_of_3(true), 0, "the fix option skips it");
}

/// ClusterDaemon `downing` of itself: "spread the word quickly" with
/// `gossipRandomN(MaxGossipsBeforeShuttingDownMyself)`, five random members, not every one
/// (a survivor of cargo-mutants gossiped to all: `>` as `==` in `gossip_random_n`).
#[test]
fn a_node_downing_itself_gossips_to_five_random_members() {
    let mut s = Sim::new(8, MembershipConfig::default());
    s.start_all();
    s.run_until(secs(20));
    assert_eq!(s.view_nodes(7).len(), 8);
    let mut out = Vec::new();
    s.nodes[7].handle(secs(20), MInput::DownCommand(addr(7)), &mut out);
    let gossiped: BTreeSet<NodeAddr> = out
        .iter()
        .filter_map(|o| match o {
            MOutput::Send {
                to,
                msg: MMsg::Gossip { .. },
            } => Some(*to),
            _ => None,
        })
        .collect();
    assert_eq!(gossiped.len(), GOSSIPS_BEFORE_SHUTDOWN, "{gossiped:?}");
    assert!(!gossiped.contains(&addr(7)));
}

/// The fix option `down-self-gossip-excludes-downed-observers` (Akka before 2.6.10,
/// `reachabilityExcludingDownedObservers`): a node that downs itself while it observes every
/// other member unreachable (a split-brain decision just after a heal) gossips its farewell to
/// five members, its own records no longer counting once it is Down. Without it (Akka since
/// 2.6.10, `validNodeForGossip` asks this node's own observation) the farewell reaches no one
/// (hazards/sbr-heal-race-downs-all.toml).
#[test]
fn a_down_node_observing_all_unreachable_gossips_its_farewell_only_with_the_fix_option() {
    let farewell_targets = |fix: bool| {
        let cfg = MembershipConfig {
            down_self_gossip_excludes_downed_observers: fix,
            ..MembershipConfig::default()
        };
        let mut s = Sim::new(8, cfg);
        s.start_all();
        s.run_until(secs(20));
        assert_eq!(s.view_nodes(7).len(), 8);
        let m = &mut s.nodes[7];
        for i in 0..7 {
            Arc::make_mut(&mut m.gossip).reachability.insert(
                (addr(7), addr(i)),
                ReachRecord {
                    version: 1,
                    unreachable: true,
                },
            );
        }
        let mut out = Vec::new();
        m.handle(secs(20), MInput::DownCommand(addr(7)), &mut out);
        out.iter()
            .filter(|o| {
                matches!(
                    o,
                    MOutput::Send {
                        msg: MMsg::Gossip { .. },
                        ..
                    }
                )
            })
            .count()
    };
    assert_eq!(
        farewell_targets(false),
        0,
        "Akka: no farewell reaches anyone"
    );
    assert_eq!(
        farewell_targets(true),
        GOSSIPS_BEFORE_SHUTDOWN,
        "the fix option: five members hear it"
    );
}

/// SplitBrainResolverBase `actOnDecision` downs this node last ("down selfAddress last, since
/// it may shutdown itself if down alone"), so its farewell gossip (`gossipRandomN`) shows every
/// member it downed. On a 2 | 3 split under keep-majority, node 0 downs node 1 (a gossip to
/// it as the STONITH signal), then itself: every gossip that shows node 0 Down (the farewell)
/// shows node 1 Down too. The model used to down itself
/// first: its farewell showed node 1 Up, and when the split had just healed, the survivors kept
/// the dead node 1 as Up with its stale unreachable records, looked indirectly connected and
/// downed themselves (swarm-keep-majority seed 178786).
#[test]
fn a_side_downing_itself_gossips_every_member_it_downed() {
    let s = split_2_3(SbrStrategy::KeepMajority);
    let decided = s
        .first_event(|n, e| n == 0 && matches!(e, MembershipEvent::DowningDecision { .. }))
        .expect("node 0 decides");
    let farewell: Vec<_> = s
        .gossips
        .iter()
        .filter(|(t, n, _, g)| {
            *t >= decided && *n == 0 && g.status(addr(0)) == Some(MemberStatus::Down)
        })
        .collect();
    assert!(!farewell.is_empty(), "node 0 sends its farewell gossip");
    for (t, _, to, g) in farewell {
        assert_eq!(
            g.status(addr(1)),
            Some(MemberStatus::Down),
            "farewell gossip at {t:?} to {to:?} shows node 1 not Down"
        );
    }
}

/// ClusterDaemon `receiveGossipStatus` compares seen digests (Akka: a SHA-1 of the seen
/// set): two seen sets of one version that differ in one member must give different
/// digests, or the node that lacks a "seen" is never sent the full state and convergence
/// waits for a later version. The members here differ only in the lowest bit of the node
/// id, a bit the FNV offset basis already has set (a digest that ORs bytes in loses it).
#[test]
fn seen_digests_of_different_seen_sets_differ() {
    let digest = |seen: &[NodeAddr]| {
        let mut g = GossipState::default();
        g.seen = seen.iter().copied().collect();
        g.seen_digest()
    };
    let (a0, a1) = (addr(0), addr(1));
    let a1_inc2 = NodeAddr {
        inc: NodeInc(2),
        ..a1
    };
    assert_ne!(digest(&[a0]), digest(&[a1]));
    assert_ne!(digest(&[a1]), digest(&[a1_inc2]));
    assert_ne!(digest(&[a0]), digest(&[a0, a1]));
    assert_eq!(digest(&[a0, a1]), digest(&[a1, a0]));
}

/// A keep-majority resolver (stable-after 10 s) on five nodes whose reachability keeps
/// changing from 15 s on: node 3 is cut off from {0, 1, 2} 8 s of every 10, node 4 the same 5 s
/// later, so one of them is always unreachable, the set changes at least every 5 s, and
/// stable-after never passes.
fn flapping(unstable: DownAllWhenUnstable) -> Sim {
    let mut s = Sim::new(
        5,
        MembershipConfig {
            downing: DowningProvider::SplitBrainResolver {
                strategy: SbrStrategy::KeepMajority,
                stable_after_ms: 10_000,
                down_removal_margin_ms: 10_000,
                down_all_when_unstable: unstable,
            },
            ..Default::default()
        },
    );
    s.start_all();
    s.run_until(secs(15));
    for t in 0..45u64 {
        let cut3 = t % 10 < 8;
        let cut4 = t >= 5 && (t - 5) % 10 < 8;
        match (cut3, cut4) {
            (true, true) => s.partition(&[&[0, 1, 2], &[3, 4]]),
            (true, false) => s.partition(&[&[0, 1, 2, 4], &[3]]),
            (false, true) => s.partition(&[&[0, 1, 2, 3], &[4]]),
            (false, false) => s.heal(),
        }
        s.run_until(secs(15 + t + 1));
    }
    s
}

/// Akka's `down-all-when-unstable` (on by default: 3/4 of stable-after, here 7.5 s): when
/// reachability has kept changing for stable-after + 7.5 s since the first change, every node
/// downs every member (SplitBrainResolver.scala `tick`, SBR:298-316), and the whole cluster
/// stops. Off, nobody is downed that way.
#[test]
fn sbr_downs_everyone_when_reachability_stays_unstable() {
    let s = flapping(DownAllWhenUnstable::On);
    let at = s
        .first_event(|n, e| {
            n == 0
                && matches!(e, MembershipEvent::DowningDecision { provider, .. }
                    if provider == "sbr-down-all-when-unstable")
        })
        .expect("node 0 downs everyone");
    // The first change (node 3 unreachable) comes about 3 s after the cut at 15 s.
    assert!(
        at > secs(35) && at < secs(38),
        "down all at {at}: 17.5 s after the first change"
    );
    assert!(
        s.observed.iter().all(|(t, _, e)| *t >= at
            || !matches!(e, MembershipEvent::DowningDecision { provider, .. }
                if provider != "sbr-down-all-when-unstable")),
        "stable-after never passed before"
    );
    assert!(survivors(&s).is_empty(), "{:?}", survivors(&s));

    let s = flapping(DownAllWhenUnstable::Off);
    assert!(s
        .first_event(
            |_, e| matches!(e, MembershipEvent::DowningDecision { provider, .. }
            if provider == "sbr-down-all-when-unstable")
        )
        .is_none());
    assert_eq!(survivors(&s).len(), 5);
}
