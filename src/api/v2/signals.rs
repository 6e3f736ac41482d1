//! `GET /v2/signals`: curated governance signals, keyset-paginated.
use poem::web::Data;
use poem_openapi::{OpenApi, param::Query, payload::Json};

use super::{Listing, V2Tag};
use crate::api::{
    AppState,
    views::signal::{KindFilter, Signal},
};
use crate::contract::{
    api_error::ApiError,
    cursor_shape::cursor_shape,
    envelope::V2List,
    limits::MostLists,
    operations::SignalsListV2,
    params::{DAO_ID_PARAM, DaoFilter, DaoScope, V2Limit, V2Timestamp},
    signals::{Severity, SignalKind},
};
use crate::store::{
    self,
    keysets::TimeAfter,
    signals::{SignalFilter, SignalRecord},
};

cursor_shape! {
    /// What a cursor of `GET /v2/signals` is bound to: the window as resolved (there is always
    /// one).
    SignalsShape<'a> for SignalsListV2 {
        dao: &'a DaoScope => DAO_ID_PARAM,
        kind: Option<SignalKind> => "kind",
        severity: Option<Severity> => "severity",
        window: (i64, i64) => "window",
    }
}

pub struct Api;

#[OpenApi(prefix_path = "/v2", tag = "V2Tag::Signals")]
impl Api {
    /// List curated governance signals
    ///
    /// The same signals as `GET /v1/governance-signals` (named, documented rules: close races,
    /// quorum reached or at risk, a decisive single voter, unusual turnout, outcomes, new authors,
    /// forum spikes), each with severity, subject, `detectedAt`, summary, rule and evidence with
    /// citations, newest first. The window (`from`/`to`, RFC 3339, at most {{EVENTS_AND_SIGNALS_WINDOW_DAYS}} days,
    /// on `detectedAt`) defaults to the {{EVENTS_AND_SIGNALS_WINDOW_DAYS}} days ending at the serving revision's `dataAsOf`; one
    /// bound alone is completed to {{EVENTS_AND_SIGNALS_WINDOW_DAYS}} days. Keyset-paginated; no totals.
    #[oai(path = "/signals", method = "get", operation_id = "v2_signals_list")]
    #[allow(clippy::too_many_arguments)]
    async fn signals_list(
        &self,
        state: Data<&AppState>,
        /// Only signals of this DAO; an unknown DAO matches nothing.
        #[oai(name = "daoId")]
        dao_id: Query<Option<DaoFilter>>,
        /// Only signals of this rule; the schema lists every rule with its definition and thresholds.
        kind: Query<Option<KindFilter>>,
        /// Only signals of this severity.
        severity: Query<Option<Severity>>,
        /// Window start on `detectedAt` (inclusive).
        from: Query<Option<V2Timestamp>>,
        /// Window end on `detectedAt` (inclusive).
        to: Query<Option<V2Timestamp>>,
        /// Rows per page.
        limit: Query<Option<V2Limit<MostLists>>>,
        /// `meta.page.nextCursor` of the previous page, unchanged.
        cursor: Query<Option<String>>,
    ) -> Result<Json<V2List<Signal>>, ApiError<SignalsListV2>> {
        let limit = V2Limit::resolve(limit.0);
        let dao = DaoFilter::resolve(dao_id.0);
        let list = Listing::<SignalsListV2, TimeAfter>::new(&state, dao.received(), limit);
        let (start_ms, end_ms) = list.window_or_latest(from.0, to.0)?;
        let (kind, severity) = (kind.0.map(|k| k.0), severity.0);
        let list = list.filtered(SignalsShape { dao: &dao, kind, severity, window: (start_ms, end_ms) });
        let after = list.after(cursor.0.as_deref())?;
        let rows = match dao.store_filter() {
            Some(dao_id) => {
                let filter = SignalFilter { dao_id: dao_id.cloned(), kind, severity, start_ms, end_ms };
                store::signals::list_after(&state.reads(), &filter, after, list.rows_to_read()).await?
            }
            None => Vec::new(),
        };
        let positions: Vec<TimeAfter> = rows.iter().map(SignalRecord::keyset).collect();
        let items: Vec<_> = positions.into_iter().zip(Signal::from_records(&state.reads(), rows).await?).collect();
        Ok(list.page(items, |(p, _)| *p, |(_, s)| s))
    }
}
