//! Helpers shared by the model's tests: an `Output` with equality for exact comparisons of
//! role outputs, a scripted region ([`harness`]) and coordinator fixtures. Each test crate
//! uses a part of it.
#![allow(dead_code)]

pub mod coordinator_fixtures;
pub mod harness;

use shardsim_core::ids::ShardId;
use shardsim_core::protocol::coordinator::CoordinatorState;
use shardsim_core::protocol::Addr;
use shardsim_core::protocol::{
    CoordinatorEvent, Local, Msg, Observation, Output, StoreRequest, Timer,
};
use shardsim_core::time::Duration;

/// An `Output` with equality, for exact comparisons.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum O {
    Send(Addr, Msg),
    Set(Timer, Duration),
    Cancel(Timer),
    Persist(CoordinatorEvent),
    Obs(Observation),
    Local(Local),
    Store(StoreRequest),
    Stop(&'static str),
    /// ddata mode: a state read with its additional replicas and timeout.
    StateRead(usize, Duration),
    /// ddata mode: a state write (the whole new state), additional replicas, timeout.
    StateWrite(Box<CoordinatorState>, usize, Duration),
    /// ddata mode with remember-entities: the remember store's read of its shard set.
    RememberedShardsRead(usize, Duration),
    /// ddata mode with remember-entities: `AddShard`.
    RememberShardAdd(ShardId, usize, Duration),
}

/// The comparable form of an output.
pub fn norm(o: &Output) -> O {
    match o {
        Output::Send { to, msg } => O::Send(*to, *msg),
        Output::SetTimer { timer, after } => O::Set(*timer, *after),
        Output::CancelTimer(t) => O::Cancel(*t),
        Output::Persist(e) => O::Persist(*e),
        Output::Observe(ob) => O::Obs(ob.clone()),
        Output::Local { msg, .. } => O::Local(*msg),
        Output::Store(req) => O::Store((**req).clone()),
        Output::Stop { reason } => O::Stop(reason),
        Output::StateRead {
            additional,
            timeout,
        } => O::StateRead(*additional, *timeout),
        Output::StateWrite {
            state,
            additional,
            timeout,
        } => O::StateWrite(state.clone(), *additional, *timeout),
        Output::RememberedShardsRead {
            additional,
            timeout,
        } => O::RememberedShardsRead(*additional, *timeout),
        Output::RememberShardAdd {
            shard,
            additional,
            timeout,
        } => O::RememberShardAdd(*shard, *additional, *timeout),
    }
}

/// The journal call-timeout timer that accompanies every persist, and the allocation-decision
/// observation, are checked by their own tests; elsewhere they are left out of exact
/// comparisons.
pub fn not_persist_timer(o: &O) -> bool {
    !matches!(
        o,
        O::Set(Timer::PersistTimeout, _)
            | O::Cancel(Timer::PersistTimeout)
            | O::Obs(Observation::AllocationDecided { .. })
    )
}
