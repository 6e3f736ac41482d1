//! The additive v2 surface.
pub mod daos;

use poem_openapi::Tags;

/// One tag per resource.
#[derive(Tags)]
pub enum V2Tag {
    /// The covered DAOs, their data sources, counts and freshness.
    Daos,
}
