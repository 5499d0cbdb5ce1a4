//! The node's Distributed Data plumbing: the ddata coordinator's state store (Akka's
//! `DDataShardCoordinator` reading and writing through the `Replicator`) and the
//! remember-entities stores, with their outputs to the timer table and the host.

use super::*;

impl Node {
    /// A ddata coordinator's state request to the node's replicator, tagged with the
    /// coordinator's generation (a late answer to an earlier coordinator here is dropped, as
    /// a reply to a dead actor is).
    pub(super) fn coordinator_state_request(
        &mut self,
        now: Instant,
        o: Output,
        out: &mut impl NodeHost,
    ) {
        let req = u64::from(self.coord_gen);
        let input = match o {
            Output::StateRead {
                additional,
                timeout,
            } => ReplInput::Get {
                req,
                key: Key::CoordinatorState,
                consistency: ReadConsistency::Majority { additional },
                timeout,
            },
            Output::StateWrite {
                state,
                additional,
                timeout,
            } => ReplInput::Update {
                req,
                key: Key::CoordinatorState,
                consistency: WriteConsistency::Majority { additional },
                timeout,
                op: UpdateOp::LwwAssign {
                    value: state,
                    now_us: now.0,
                },
            },
            // The coordinator's remember store (`DDataRememberEntitiesCoordinatorStore`).
            Output::RememberedShardsRead {
                additional,
                timeout,
            } => ReplInput::Get {
                req,
                key: Key::AllShards,
                consistency: ReadConsistency::Majority { additional },
                timeout,
            },
            Output::RememberShardAdd {
                shard,
                additional,
                timeout,
            } => ReplInput::Update {
                req,
                key: Key::AllShards,
                consistency: WriteConsistency::Majority { additional },
                timeout,
                op: UpdateOp::GSetAdd(vec![shard.0]),
            },
            _ => return,
        };
        self.store_input(now, StoreInput::Replicator(input), out);
    }

    /// The replicator answered the coordinator's read or write `req`.
    fn coordinator_state_reply(&mut self, req: u64, reply: Input) {
        let current = self
            .coordinator
            .as_ref()
            .is_some_and(|c| c.is_ddata() && u64::from(self.coord_gen) == req);
        if current {
            self.coord_inbox.push(reply);
        }
    }

    /// One input to the `ddata` stores and their replicator; their outputs go to the timer
    /// table and the host.
    pub(super) fn store_input(&mut self, now: Instant, input: StoreInput, out: &mut impl NodeHost) {
        let Some(stores) = self.stores.as_mut() else {
            return;
        };
        let mut sout = std::mem::take(&mut self.sout);
        stores.handle(now, input, &mut sout);
        for o in sout.drain(..) {
            match o {
                StoreOutput::Replicator(ReplOutput::Send { to, msg }) => {
                    out.output(NodeOutput::Effect(Effect::SendRepl {
                        to,
                        msg: Box::new(msg),
                    }))
                }
                StoreOutput::Replicator(ReplOutput::SetTimer { timer, after }) => {
                    self.set_timer(NodeTimer::Repl(timer), after, out)
                }
                StoreOutput::Replicator(ReplOutput::CancelTimer(timer)) => {
                    self.timers.remove(&NodeTimer::Repl(timer));
                }
                StoreOutput::Replicator(ReplOutput::Durable { key, data }) => {
                    out.output(NodeOutput::Effect(Effect::Durable { key, data }))
                }
                // The coordinator register's answers; the stores' own go to them.
                StoreOutput::Replicator(ReplOutput::GetResponse {
                    req,
                    key: Key::CoordinatorState,
                    result,
                }) => {
                    let r = match result {
                        GetResult::Success(Data::Lww(reg)) => {
                            StateReadResult::Found(Box::new(reg.value))
                        }
                        GetResult::Success(_) | GetResult::NotFound => StateReadResult::NotFound,
                        GetResult::Failure => StateReadResult::Failure,
                    };
                    self.coordinator_state_reply(req, Input::StateRead(r));
                }
                StoreOutput::Replicator(ReplOutput::UpdateResponse {
                    req,
                    key: Key::CoordinatorState,
                    result,
                }) => {
                    let r = match result {
                        UpdateResult::Success => StateWriteResult::Success,
                        UpdateResult::Timeout => StateWriteResult::Timeout,
                        UpdateResult::ModifyFailure => StateWriteResult::ModifyFailure,
                    };
                    self.coordinator_state_reply(req, Input::StateWritten(r));
                }
                StoreOutput::Replicator(ReplOutput::GetResponse {
                    req,
                    key: Key::AllShards,
                    result,
                }) => {
                    let ids = match result {
                        GetResult::Success(d) => {
                            Some(d.elements().into_iter().map(ShardId).collect())
                        }
                        GetResult::NotFound => Some(Vec::new()),
                        GetResult::Failure => None,
                    };
                    self.coordinator_state_reply(req, Input::RememberedShards(ids));
                }
                StoreOutput::Replicator(ReplOutput::UpdateResponse {
                    req,
                    key: Key::AllShards,
                    result,
                }) => {
                    let ok = result == UpdateResult::Success;
                    self.coordinator_state_reply(req, Input::RememberShardAdded(ok));
                }
                StoreOutput::Replicator(_) => {}
                StoreOutput::Reply(reply) => {
                    out.output(NodeOutput::Effect(Effect::StoreReplyLocal(Box::new(reply))))
                }
                StoreOutput::Written {
                    shard,
                    started,
                    stopped,
                } => out.output(NodeOutput::Fact(Fact::StoreWritten {
                    shard,
                    started,
                    stopped,
                })),
                StoreOutput::Read { shard, entities } => {
                    out.output(NodeOutput::Fact(Fact::StoreRead { shard, entities }))
                }
            }
        }
        self.sout = sout;
        self.drain_coord_inbox(now, out);
    }
}
