//! `GET /v2/daos` and `GET /v2/daos/{daoId}`: the covered DAOs.
use poem::web::Data;
use poem_openapi::{
    OpenApi,
    param::{Path, Query},
    payload::Json,
};

use super::{Listing, V2Tag};
use crate::api::{AppState, views::dao::Dao};
use crate::contract::params::DaoIdParam;
use crate::contract::{
    api_error::ApiError,
    envelope::{CacheStatus, Freshness, V2List, V2Single},
    errors::Problem,
    limits::MostLists,
    operations::{DaosGetV2 as Op, DaosListV2},
    params::V2Limit,
};
use crate::store::{self, keysets::DaoAfter};

pub struct Api;

#[OpenApi(prefix_path = "/v2", tag = "V2Tag::Daos")]
impl Api {
    /// List covered DAOs
    ///
    /// The DAOs this service covers, ordered by `daoId`, each with its data sources and their
    /// watermarks, exact counts (upstream vote totals and ingested votes kept apart) and
    /// freshness. Keyset-paginated: pass `meta.page.nextCursor` back as `cursor` with the same
    /// `limit` until `hasMore` is false. No totals.
    #[oai(path = "/daos", method = "get", operation_id = "v2_daos_list")]
    async fn daos_list(
        &self,
        state: Data<&AppState>,
        /// Rows per page.
        limit: Query<Option<V2Limit<MostLists>>>,
        /// `meta.page.nextCursor` of the previous page, unchanged. Cursors are bound to the data
        /// revision: after a publication, restart from the first page.
        cursor: Query<Option<String>>,
    ) -> Result<Json<V2List<Dao>>, ApiError<DaosListV2>> {
        let limit = V2Limit::resolve(limit.0);
        let list = Listing::<DaosListV2, DaoAfter>::new(&state, None, limit);
        let after = list.after(cursor.0.as_deref())?;
        let rows = store::daos::list_after(&state.reads(), after.as_ref(), list.rows_to_read()).await?;
        let daos =
            rows.into_iter().map(|r| Ok((r.keyset(), Dao::from_record(r)?))).collect::<Result<Vec<_>, Problem>>()?;
        Ok(list.page(daos, |(k, _)| k.clone(), |(_, d)| d))
    }

    /// Get one DAO
    ///
    /// One covered DAO by its `daoId`: its data sources with their watermarks, exact counts
    /// (upstream vote totals and ingested votes kept apart) and freshness. `cacheStatus` is
    /// `registry_only` when the DAO is registered but nothing has been ingested for it.
    #[oai(path = "/daos/:daoId", method = "get", operation_id = "v2_daos_get")]
    async fn daos_get(
        &self,
        state: Data<&AppState>,
        /// The DAO's slug, as `GET /v1/daos` lists it (`uniswap`, `arbitrum`, …).
        #[oai(name = "daoId")]
        dao_id: Path<DaoIdParam>,
    ) -> Result<Json<V2Single<Dao>>, ApiError<Op>> {
        let dao = dao_id.0.parse().map_err(|received| Problem::unknown_dao(&received))?;
        let record =
            store::daos::get(&state.reads(), dao.as_str()).await?.ok_or_else(|| Problem::unknown_dao(dao.as_str()))?;
        let status = if record.summary.is_some() { CacheStatus::Fresh } else { CacheStatus::RegistryOnly };
        let as_of = record.summary.as_ref().and_then(|s| s.data_as_of_ms);
        Ok(Json(V2Single::new(Dao::from_record(record)?, Freshness::new(as_of, status))))
    }
}
