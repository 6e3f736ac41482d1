//! `GET /v1/governance-signals`: curated signals computed from the data by documented rules.
use poem::web::Data;
use poem_openapi::{OpenApi, param::Query, payload::Json};

use super::V1Tag;
use crate::api::{
    AppState,
    views::signal::{KindFilter, Signal},
};
use crate::contract::{
    api_error::ApiError,
    envelope::{V1Envelope, V1Page, V1Request},
    limits::MostLists,
    operations::{Operation, SignalsListV1 as Op},
    params::{DaoFilter, V1EpochMs, V1Limit, V1Offset, resolve_v1_window},
    signals::Severity,
    time::now_ms,
};
use crate::store::{self, signals::SignalFilter};

pub struct Api;

#[OpenApi(prefix_path = "/v1", tag = "V1Tag::Signals")]
impl Api {
    /// List curated governance signals
    ///
    /// Signals computed from the published data by named, documented rules: close races, quorum
    /// reached or at risk, a single voter deciding the outcome, unusual turnout against the DAO's
    /// history, proposals passed or failed, new authors, forum discussion spikes. Each signal has
    /// a kind, a severity, the DAO, the subject item (proposal or forum topic), `detectedAt` (the
    /// data time that triggered it, never the wall clock), a one-line summary with the exact
    /// numbers, its `rule` (definition and thresholds) and its `evidence` (exact decimal strings
    /// and citations to quote). The `kind` parameter's schema lists every rule with its
    /// thresholds. Call it to find what deserves attention in governance without reading every
    /// proposal; filter by `daoId`, `kind`, `severity` and a window on `detectedAt`.
    ///
    /// Window: `end_ms` defaults to the serving revision's `dataAsOf` (the newest data held, so
    /// the default window shows the latest signals even when ingestion lags the clock) and
    /// `start_ms` to {{EVENTS_AND_SIGNALS_WINDOW_DAYS}} days before `end_ms`. A longer window keeps its end and is
    /// shortened to {{EVENTS_AND_SIGNALS_WINDOW_DAYS}} days; a start after the end is moved to the end; each change is recorded in
    /// `request.adjustments`. Newest first (`detectedAt` desc); `limit`/`offset` with `total`.
    #[oai(path = "/governance-signals", method = "get", operation_id = "signals_list")]
    #[allow(clippy::too_many_arguments)]
    async fn signals_list(
        &self,
        state: Data<&AppState>,
        req: V1Request,
        /// Only signals of this DAO (a `daoId` of `GET /v1/daos`); an unknown DAO matches nothing.
        #[oai(name = "daoId")]
        dao_id: Query<Option<DaoFilter>>,
        /// Only signals of this rule; the schema lists every rule with its definition and thresholds.
        kind: Query<Option<KindFilter>>,
        /// Only signals of this severity.
        severity: Query<Option<Severity>>,
        /// Window start on `detectedAt`, epoch milliseconds (inclusive); default `end_ms` − {{EVENTS_AND_SIGNALS_WINDOW_DAYS}} days.
        start_ms: Query<Option<V1EpochMs>>,
        /// Window end on `detectedAt`, epoch milliseconds (inclusive); default the serving
        /// revision's `dataAsOf`.
        end_ms: Query<Option<V1EpochMs>>,
        /// Rows per page.
        limit: Query<Option<V1Limit<MostLists>>>,
        /// Rows to skip.
        offset: Query<Option<V1Offset>>,
    ) -> Result<Json<V1Envelope<V1Page<Signal>>>, ApiError<Op>> {
        let mut req = req;
        // Like every v1 filter, an unknown DAO matches nothing (v1 rejects only what cannot be parsed).
        let dao = DaoFilter::resolve_v1(dao_id.0, &mut req);
        let kind = kind.0.map(|k| k.0);
        if let Some(k) = kind {
            req.applied("kind", k.as_str());
        }
        if let Some(s) = severity.0 {
            req.applied("severity", s.as_str());
        }
        let end = end_ms.0.map_or_else(|| state.serving.current().data_as_of_ms.unwrap_or_else(now_ms), |e| e.0);
        let start = start_ms.0.map_or(end.saturating_sub(<Op as Operation>::WINDOW.max_ms()), |s| s.0);
        let (start, end) = resolve_v1_window(("start_ms", start), ("end_ms", end), <Op as Operation>::WINDOW, &mut req);
        let limit = V1Limit::resolve(limit.0, "limit", &mut req);
        let offset = V1Offset::resolve(offset.0, "offset", &mut req);
        let (rows, total) = match dao.store_filter() {
            Some(dao_id) => {
                let filter =
                    SignalFilter { dao_id: dao_id.cloned(), kind, severity: severity.0, start_ms: start, end_ms: end };
                store::signals::list(&state.reads(), &filter, u64::from(limit), offset).await?
            }
            None => (Vec::new(), 0),
        };
        let items = Signal::from_records(&state.reads(), rows).await?;
        let data = V1Page { items, total, limit, offset };
        super::answer(&state, req, data)
    }
}
