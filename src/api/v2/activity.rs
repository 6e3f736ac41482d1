//! `GET /v2/activity`: recent cross-DAO activity, keyset-paginated.
use poem::web::Data;
use poem_openapi::{OpenApi, param::Query, payload::Json};

use super::{Listing, V2Tag};
use crate::api::{
    AppState,
    views::activity::{ActivityEntry, entry_from_row},
};
use crate::contract::{
    api_error::ApiError,
    cursor_shape::cursor_shape,
    envelope::V2List,
    events::ActivityKind,
    limits::MostLists,
    operations::ActivityListV2,
    params::{DAO_ID_PARAM, DaoFilter, DaoScope, V2Limit, V2Timestamp},
};
use crate::store::{
    self,
    activity::{ActivityFilter, ActivityRow},
    keysets::ActivityAfter,
};

cursor_shape! {
    /// What a cursor of `GET /v2/activity` is bound to: the start as resolved (there is always
    /// one).
    ActivityShape<'a> for ActivityListV2 {
        dao: &'a DaoScope => DAO_ID_PARAM,
        kind: Option<ActivityKind> => "kind",
        since: i64 => "since",
    }
}

pub struct Api;

#[OpenApi(prefix_path = "/v2", tag = "V2Tag::Activity")]
impl Api {
    /// List recent cross-DAO activity
    ///
    /// The same feed as `GET /v1/activity`, for summarising and monitoring: proposals created,
    /// opened, closed or executed, notable votes, forum topics opened, and curated signals, across
    /// every covered DAO, newest first. Filter by `daoId`, `kind` and `since` (RFC 3339). The feed
    /// reaches at most {{EVENTS_AND_SIGNALS_WINDOW_DAYS}} days back from the serving revision's `dataAsOf`, like the events
    /// and signals it carries: an absent `since` starts there, an earlier one is a `VALIDATION_ERROR`.
    /// Keyset-paginated; no totals.
    #[oai(path = "/activity", method = "get", operation_id = "v2_activity_list")]
    async fn activity_list(
        &self,
        state: Data<&AppState>,
        /// Only this DAO's activity.
        #[oai(name = "daoId")]
        dao_id: Query<Option<DaoFilter>>,
        /// Only entries of this kind (an event kind, or `signal`).
        kind: Query<Option<ActivityKind>>,
        /// Only entries at or after this time; at most {{EVENTS_AND_SIGNALS_WINDOW_DAYS}} days before the newest data.
        since: Query<Option<V2Timestamp>>,
        /// Rows per page.
        limit: Query<Option<V2Limit<MostLists>>>,
        /// `meta.page.nextCursor` of the previous page, unchanged.
        cursor: Query<Option<String>>,
    ) -> Result<Json<V2List<ActivityEntry>>, ApiError<ActivityListV2>> {
        let limit = V2Limit::resolve(limit.0);
        let dao = DaoFilter::resolve(dao_id.0);
        let list = Listing::<ActivityListV2, ActivityAfter>::new(&state, dao.received(), limit);
        let since_ms = list.since(since.0)?;
        let list = list.filtered(ActivityShape { dao: &dao, kind: kind.0, since: since_ms });
        let after = list.after(cursor.0.as_deref())?;
        let rows = match dao.store_filter() {
            Some(dao_id) => {
                let filter = ActivityFilter { dao_id: dao_id.cloned(), kind: kind.0, since_ms: Some(since_ms), after };
                store::activity::list(&state.reads(), &filter, list.rows_to_read(), 0, false).await?.0
            }
            None => Vec::new(),
        };
        Ok(list.page(rows, ActivityRow::keyset, entry_from_row))
    }
}
