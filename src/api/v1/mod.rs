//! The stable v1 surface.
pub mod activity;
pub mod brief;
pub mod daos;
pub mod events;
pub mod evidence;
pub mod freshness;
pub mod items;
pub mod lookup;
pub mod pricing;
pub mod signals;

use poem_openapi::{
    Tags,
    payload::Json,
    types::{ParseFromJSON, ToJSON, Type},
};

use crate::api::AppState;
use crate::contract::{
    api_error::ApiError,
    envelope::{CacheStatus, Freshness, V1Envelope, V1Request},
};

/// The freshness of an answer read from the store now, from the watched serving state: its
/// `dataAsOf` is the newest ingestion watermark.
pub fn fresh(state: &AppState) -> Freshness {
    Freshness::new(state.serving.current().data_as_of_ms, CacheStatus::Fresh)
}

/// The answer of the v1 operation `Op` read from the store now: the request's echo, the
/// watched freshness and the data, in the operation's result type.
pub fn answer<Op, T: ParseFromJSON + ToJSON + Type>(
    state: &AppState,
    req: V1Request,
    data: T,
) -> Result<Json<V1Envelope<T>>, ApiError<Op>> {
    Ok(Json(req.respond(fresh(state), data)))
}

/// One tag per resource.
#[derive(Tags)]
pub enum V1Tag {
    /// Pricing and access discovery: what each paid endpoint costs and which credentials open it.
    Pricing,
    /// The covered DAOs, their data sources, counts and freshness.
    Daos,
    /// Dataset state: ingestion runs, watermarks and the serving data revision.
    Freshness,
    /// Dated governance events (proposals created, opened, closed, executed; notable votes; forum
    /// topics), each citing its source, for timelines and alerting.
    Events,
    /// Recent cross-DAO activity, events and signals in one feed, for summarising and monitoring.
    Activity,
    /// Proposals: find one by URL, external id or title; evidence-rich detail with exact tallies,
    /// the largest votes and a citation for every fact.
    Proposals,
    /// One normalized item (a proposal or a forum topic) by kind and upstream id.
    Items,
    /// Curated governance signals computed by documented rules (close races, quorum, decisive
    /// voters, turnout, outcomes, new authors, forum spikes), each with its evidence.
    Signals,
}
