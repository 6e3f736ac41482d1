//! The additive v2 surface.
pub mod activity;
pub mod daos;
pub mod events;
pub mod proposals;
pub mod signals;
pub mod topics;
pub mod voters;

use poem_openapi::{
    Tags,
    types::{ParseFromJSON, ToJSON, Type},
};

use crate::api::AppState;
#[cfg(doc)]
use crate::api::serving::Serving;
use crate::contract::{
    cursor::QueryShape,
    envelope::{CacheStatus, Freshness, PageMeta, V2Items, V2List, V2ListMeta},
    errors::Problem,
    limits::Window,
    params::{V2Timestamp, resolve_v2_window},
};

/// One tag per resource.
#[derive(Tags)]
pub enum V2Tag {
    /// Recent cross-DAO activity: events and signals in one feed.
    Activity,
    /// The covered DAOs, their data sources, counts and freshness.
    Daos,
    /// Proposals and their votes.
    Proposals,
    /// Dated governance events.
    Events,
    /// Curated governance signals.
    Signals,
    /// Governance forum topics.
    Topics,
    /// Voters: rankings within a DAO, cross-DAO profiles and voting histories.
    Voters,
}

/// What a v2 answer is served from: the revision its cursors are bound to and its `dataAsOf`.
pub struct Bound {
    /// The revision that last changed the DAO the query is about, or the serving revision for a
    /// query over every DAO (0 before the first publication). See [`Serving::revision_of`].
    pub id: i64,
    pub data_as_of_ms: Option<i64>,
}

/// The serving state for a query about `dao` (or every DAO), from the watch: no store read.
pub fn bound(state: &AppState, dao: Option<&str>) -> Bound {
    let serving = state.serving.current();
    Bound { id: serving.revision_of(dao), data_as_of_ms: serving.data_as_of_ms }
}

/// The window of a list that always has one (events, signals): the caller's bounds, or, when
/// neither is given, the longest window ending at the serving revision's `dataAsOf` (the newest
/// data held, so the default shows the latest rows even when ingestion lags the clock).
pub fn window_or_latest(
    from: Option<V2Timestamp>,
    to: Option<V2Timestamp>,
    serving: &Bound,
    window: Window,
) -> Result<(i64, i64), Problem> {
    let end = serving.data_as_of_ms.unwrap_or_else(crate::contract::time::now_ms);
    let to = to.or(if from.is_none() { Some(V2Timestamp(end)) } else { None });
    Ok(resolve_v2_window(from, to, window)?.unwrap_or((end - window.max_ms(), end)))
}

/// A keyset page from `limit + 1` rows: the extra row only says whether more follow; the
/// cursor carries the position of the last row served.
pub fn page<R, T: ParseFromJSON + ToJSON + Type>(
    state: &AppState,
    shape: &QueryShape<'_>,
    serving: &Bound,
    limit: u32,
    rows: Vec<R>,
    position: impl Fn(&R) -> Vec<String>,
    mut item: impl FnMut(R) -> T,
) -> V2List<T> {
    page_filter_map(state, shape, serving, limit, rows, position, |r| Some(item(r)))
}

/// [`page`] for rows some of which cannot be shown (logged by `item`): the page and its cursor
/// still follow the rows read, so a skipped row never stops the walk.
pub fn page_filter_map<R, T: ParseFromJSON + ToJSON + Type>(
    state: &AppState,
    shape: &QueryShape<'_>,
    serving: &Bound,
    limit: u32,
    mut rows: Vec<R>,
    position: impl Fn(&R) -> Vec<String>,
    item: impl FnMut(R) -> Option<T>,
) -> V2List<T> {
    let has_more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next_cursor =
        if has_more { rows.last().map(|r| state.cursors.encode(shape, serving.id, position(r))) } else { None };
    V2List {
        data: V2Items { items: rows.into_iter().filter_map(item).collect() },
        meta: V2ListMeta {
            page: PageMeta { limit, has_more, next_cursor },
            freshness: Freshness::new(serving.data_as_of_ms, CacheStatus::Fresh),
        },
    }
}
