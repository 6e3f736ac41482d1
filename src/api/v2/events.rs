//! `GET /v2/events`: governance events, keyset-paginated.
use poem::web::Data;
use poem_openapi::{OpenApi, param::Query, payload::Json};

use super::{Listing, V2Tag};
use crate::api::{
    AppState,
    views::event::{GovernanceEvent, event_from_row},
};
use crate::contract::{
    api_error::ApiError,
    cursor_shape::cursor_shape,
    envelope::V2List,
    events::EventKind,
    limits::Events,
    operations::EventsListV2,
    params::{DAO_ID_PARAM, DaoFilter, DaoScope, V2Limit, V2Timestamp},
};
use crate::store::{
    self,
    events::{EventFilter, EventRow},
    keysets::TimeAfter,
};

cursor_shape! {
    /// What a cursor of `GET /v2/events` is bound to: the window as resolved (there is always one).
    EventsShape<'a> for EventsListV2 {
        dao: &'a DaoScope => DAO_ID_PARAM,
        kind: Option<EventKind> => "kind",
        window: (i64, i64) => "window",
    }
}

pub struct Api;

#[OpenApi(prefix_path = "/v2", tag = "V2Tag::Events")]
impl Api {
    /// List governance events
    ///
    /// The same dated governance events as `GET /v1/governance-events` (proposals created,
    /// voting started, notable votes, proposals closed, queued, executed or canceled, forum topics
    /// opened), each naming its subject item and citing its source, newest first. The window
    /// (`from`/`to`, RFC 3339, at most {{EVENTS_AND_SIGNALS_WINDOW_DAYS}} days, on the event time)
    /// defaults to the {{EVENTS_AND_SIGNALS_WINDOW_DAYS}} days ending at the serving revision's
    /// `dataAsOf`; one bound alone is completed to that length. Up to {{EVENTS_MAX}} rows a page;
    /// keyset-paginated; no totals.
    #[oai(path = "/events", method = "get", operation_id = "v2_events_list")]
    #[allow(clippy::too_many_arguments)]
    async fn events_list(
        &self,
        state: Data<&AppState>,
        /// Only events of this DAO.
        #[oai(name = "daoId")]
        dao_id: Query<Option<DaoFilter>>,
        /// Only events of this kind.
        kind: Query<Option<EventKind>>,
        /// Window start (inclusive).
        from: Query<Option<V2Timestamp>>,
        /// Window end (inclusive).
        to: Query<Option<V2Timestamp>>,
        /// Rows per page.
        limit: Query<Option<V2Limit<Events>>>,
        /// `meta.page.nextCursor` of the previous page, unchanged.
        cursor: Query<Option<String>>,
    ) -> Result<Json<V2List<GovernanceEvent>>, ApiError<EventsListV2>> {
        let limit = V2Limit::resolve(limit.0);
        let dao = DaoFilter::resolve(dao_id.0);
        let list = Listing::<EventsListV2, TimeAfter>::new(&state, dao.received(), limit);
        let (from_ms, to_ms) = list.window_or_latest(from.0, to.0)?;
        let list = list.filtered(EventsShape { dao: &dao, kind: kind.0, window: (from_ms, to_ms) });
        let after = list.after(cursor.0.as_deref())?;
        let rows = match dao.store_filter() {
            Some(dao_id) => {
                let filter = EventFilter {
                    dao_id: dao_id.cloned(),
                    kind: kind.0,
                    from_ms: Some(from_ms),
                    to_ms: Some(to_ms),
                    after,
                };
                store::events::list(&state.reads(), &filter, list.rows_to_read(), 0, false).await?.0
            }
            None => Vec::new(),
        };
        Ok(list.page(rows, EventRow::keyset, event_from_row))
    }
}
