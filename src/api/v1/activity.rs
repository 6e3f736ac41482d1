//! `GET /v1/activity`: recent cross-DAO activity (events and signals), newest first.
use poem::web::Data;
use poem_openapi::{OpenApi, param::Query, payload::Json};

use super::V1Tag;
use crate::api::{
    AppState,
    views::activity::{ActivityEntry, entry_from_row},
};
use crate::contract::{
    api_error::ApiError,
    envelope::{V1Envelope, V1Page, V1Request},
    events::ActivityKind,
    limits::MostLists,
    operations::{ActivityListV1 as Op, Operation},
    params::{DaoFilter, V1EpochMs, V1Limit, V1Offset, resolve_v1_since},
    time::now_ms,
};
use crate::store::{self, activity::ActivityFilter};

pub struct Api;

#[OpenApi(prefix_path = "/v1", tag = "V1Tag::Activity")]
impl Api {
    /// Recent cross-DAO activity
    ///
    /// What happened recently across the covered DAOs, newest first, in one feed for summarising
    /// and monitoring: proposals created, opened, closed, queued, executed or canceled; notable
    /// votes (at least {{NOTABLE_VOTE_PERCENT}}% of the proposal's upstream score total); forum topics opened; and
    /// curated signals (close races, quorum at risk or reached, decisive voters, unusual turnout,
    /// outcomes, new authors, forum spikes). Each entry has a one-line `summary`, its subject item
    /// and, for events, a citation and exact `details`. Narrow it with `daoId`, `kind` and
    /// `since_ms`; page with `limit`/`offset` (`total` counts every match). The feed reaches at
    /// most {{EVENTS_AND_SIGNALS_WINDOW_DAYS}} days back from the newest data (`freshness.dataAsOf`), like the events
    /// and signals it carries: an absent `since_ms` starts there, an earlier one is moved up to it and
    /// recorded in `request.adjustments`; `request.applied.since_ms` says where the feed started. For events within an
    /// explicit window use `/v1/governance-events`; for a signal's evidence,
    /// `/v1/governance-signals`. An unknown `daoId` matches nothing (an empty page, `total` 0).
    #[oai(path = "/activity", method = "get", operation_id = "activity_list")]
    #[allow(clippy::too_many_arguments)]
    async fn activity_list(
        &self,
        state: Data<&AppState>,
        req: V1Request,
        /// Only activity of this DAO.
        #[oai(name = "daoId")]
        dao_id: Query<Option<DaoFilter>>,
        /// Only entries of this kind: an event kind, or `signal` for signals.
        kind: Query<Option<ActivityKind>>,
        /// Only entries at or after this time, epoch milliseconds UTC; at most {{EVENTS_AND_SIGNALS_WINDOW_DAYS}} days before the
        /// newest data (earlier is moved up and recorded).
        since_ms: Query<Option<V1EpochMs>>,
        /// Rows per page.
        limit: Query<Option<V1Limit<MostLists>>>,
        /// Rows to skip.
        offset: Query<Option<V1Offset>>,
    ) -> Result<Json<V1Envelope<V1Page<ActivityEntry>>>, ApiError<Op>> {
        let mut req = req;
        let limit = V1Limit::resolve(limit.0, "limit", &mut req);
        let offset = V1Offset::resolve(offset.0, "offset", &mut req);
        // As released, an empty `daoId` is a filter (matching nothing), not its absence.
        let dao = DaoFilter::resolve_keeping_empty_v1(dao_id.0, &mut req);
        if let Some(k) = kind.0 {
            req.applied("kind", k.as_str());
        }
        let newest = state.serving.current().data_as_of_ms.unwrap_or_else(now_ms);
        let since = resolve_v1_since("since_ms", since_ms.0.map(|s| s.0), newest, <Op as Operation>::WINDOW, &mut req);
        let (rows, total) = match dao.store_filter() {
            Some(dao_id) => {
                let filter =
                    ActivityFilter { dao_id: dao_id.cloned(), kind: kind.0, since_ms: Some(since), after: None };
                store::activity::list(&state.reads(), &filter, u64::from(limit), offset, true).await?
            }
            None => (Vec::new(), 0),
        };
        let data = V1Page { items: rows.into_iter().map(entry_from_row).collect(), total, limit, offset };
        super::answer(&state, req, data)
    }
}
