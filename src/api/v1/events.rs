//! `GET /v1/governance-events`: dated governance events inside a window, for timelines and alerting.
use poem::web::Data;
use poem_openapi::{OpenApi, param::Query, payload::Json};

use super::V1Tag;
use crate::api::{
    AppState,
    views::event::{GovernanceEvent, event_from_row},
};
use crate::contract::{
    api_error::ApiError,
    envelope::{V1Envelope, V1Page, V1Request},
    events::EventKind,
    limits::Events,
    operations::{EventsListV1 as Op, Operation},
    params::{DaoFilter, V1EpochMs, V1Limit, V1Offset, resolve_v1_window},
};
use crate::store::{self, events::EventFilter};

pub struct Api;

#[OpenApi(prefix_path = "/v1", tag = "V1Tag::Events")]
impl Api {
    /// Governance events in a time window
    ///
    /// Dated governance events of every covered DAO between `start_ms` and `end_ms` (both
    /// required, inclusive), newest first: proposals created, voting started and closed
    /// (with the final upstream numbers), on-chain proposals queued, executed or canceled, notable
    /// votes (`vote_cast`: a vote whose power is at least {{NOTABLE_VOTE_PERCENT}}% of its proposal's upstream score
    /// total, with the exact power in `details`), and forum topics opened. Each event names its
    /// subject item and cites its source (URL, Snapshot id, transaction hash, block). Use it for
    /// timelines and alerting; use `/v1/activity` for a feed that also carries signals.
    /// A window longer than {{EVENTS_AND_SIGNALS_WINDOW_DAYS}} days keeps its end and is shortened; `limit` above {{EVENTS_MAX}} is clamped
    /// to {{EVENTS_MAX}}; both are recorded in `request.adjustments`. An unknown `daoId` matches nothing
    /// (an empty page with `total` 0); `/v1/daos` lists the valid ones.
    #[oai(path = "/governance-events", method = "get", operation_id = "events_list")]
    #[allow(clippy::too_many_arguments)]
    async fn events_list(
        &self,
        state: Data<&AppState>,
        req: V1Request,
        /// Window start, epoch milliseconds UTC (inclusive). Required.
        start_ms: Query<V1EpochMs>,
        /// Window end, epoch milliseconds UTC (inclusive). Required. A window over {{EVENTS_AND_SIGNALS_WINDOW_DAYS}} days is
        /// clamped by moving its start forward.
        end_ms: Query<V1EpochMs>,
        /// Only events of this DAO.
        #[oai(name = "daoId")]
        dao_id: Query<Option<DaoFilter>>,
        /// Only events of this kind.
        kind: Query<Option<EventKind>>,
        /// Rows per page.
        limit: Query<Option<V1Limit<Events>>>,
        /// Rows to skip.
        offset: Query<Option<V1Offset>>,
    ) -> Result<Json<V1Envelope<V1Page<GovernanceEvent>>>, ApiError<Op>> {
        let mut req = req;
        let (from, to) =
            resolve_v1_window(("start_ms", start_ms.0.0), ("end_ms", end_ms.0.0), <Op as Operation>::WINDOW, &mut req);
        let limit = V1Limit::resolve(limit.0, "limit", &mut req);
        let offset = V1Offset::resolve(offset.0, "offset", &mut req);
        // As released, an empty `daoId` is a filter (matching nothing), not its absence.
        let dao = DaoFilter::resolve_keeping_empty_v1(dao_id.0, &mut req);
        if let Some(k) = kind.0 {
            req.applied("kind", k.as_str());
        }
        let (rows, total) = match dao.store_filter() {
            Some(dao_id) => {
                let filter = EventFilter {
                    dao_id: dao_id.cloned(),
                    kind: kind.0,
                    from_ms: Some(from),
                    to_ms: Some(to),
                    after: None,
                };
                store::events::list(&state.reads(), &filter, u64::from(limit), offset, true).await?
            }
            None => (Vec::new(), 0),
        };
        let data = V1Page { items: rows.into_iter().map(event_from_row).collect(), total, limit, offset };
        super::answer(&state, req, data)
    }
}
