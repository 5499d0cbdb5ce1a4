//! Akka's seed-node join process (`seed-node-timeout`, ClusterDaemon's `JoinSeedNodeProcess`):
//! a node that no member has welcomed joins again.

use super::*;

impl Node {
    /// Akka's seed-node process (`seed-node-timeout`): a node that no member has welcomed joins
    /// again through the nodes that are members; when there are none (the whole cluster went
    /// down), the lowest live node joins itself and the others join it.
    pub(super) fn on_join_check(
        &mut self,
        now: Instant,
        members: Vec<NodeAddr>,
        first_live: Option<NodeAddr>,
        out: &mut impl NodeHost,
    ) {
        if self.membership.status_of_self().is_some() {
            return; // welcomed
        }
        let seeds = if !members.is_empty() {
            members
        } else if first_live.map(|a| a.node) == Some(self.me.node) {
            Vec::new() // join itself: a new cluster
        } else {
            first_live.into_iter().collect()
        };
        self.timers
            .retain(|t, _| !matches!(t, NodeTimer::Membership(_)));
        self.membership = Membership::new(self.me, self.hosting, self.cfg.membership.clone());
        self.membership.set_app_version(self.app_version);
        out.output(NodeOutput::Fact(Fact::JoinAgain(seeds.clone())));
        self.membership_input(now, MInput::Start { seeds }, out);
        self.set_timer(NodeTimer::JoinCheck, SEED_NODE_TIMEOUT, out);
    }
}
