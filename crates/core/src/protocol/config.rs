//! The configuration every region and Shard of a run shares (below both roles, so that
//! the Shard does not import its region).

use crate::protocol::entity::{EntityFactory, Extractors};
use crate::protocol::settings::{ProtocolOptions, Settings};
use std::sync::Arc;

/// Shared, immutable configuration of every region in a run.
pub struct RegionConfig {
    /// Akka settings.
    pub settings: Settings,
    /// Named protocol options.
    pub options: ProtocolOptions,
    /// The application's shard extractors: one every region shares, or one per node
    /// incarnation (§12 B8). Each region takes its own at [`Region::new`](crate::protocol::region::Region::new).
    pub extractors: Extractors,
    /// The application's entities.
    pub factory: Arc<dyn EntityFactory>,
}
