//! The stable v1 surface.
pub mod daos;
pub mod freshness;
pub mod pricing;

use poem_openapi::Tags;

/// One tag per resource.
#[derive(Tags)]
pub enum V1Tag {
    /// Pricing and access discovery: what each paid endpoint costs and which credentials open it.
    Pricing,
    /// The covered DAOs, their data sources, counts and freshness.
    Daos,
    /// Dataset state: ingestion runs, watermarks and the serving data revision.
    Freshness,
}
