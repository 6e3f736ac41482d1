//! `GET /v2/daos/{daoId}`: one covered DAO.
use poem::web::Data;
use poem_openapi::{OpenApi, param::Path, payload::Json};

use super::V2Tag;
use crate::api::{AppState, model::Dao};
use crate::contract::{
    envelope::{CacheStatus, Freshness, V2Single},
    errors::{ApiError, Problem},
    operations::DaosGetV2 as Op,
};
use crate::store;

pub struct Api;

#[OpenApi(prefix_path = "/v2", tag = "V2Tag::Daos")]
impl Api {
    /// Get one DAO
    ///
    /// One covered DAO by its `daoId`: its data sources with their watermarks, exact counts
    /// (upstream vote totals and ingested votes kept apart) and freshness. `cacheStatus` is
    /// `registry_only` when the DAO is registered but nothing has been ingested for it.
    #[oai(path = "/daos/:daoId", method = "get", operation_id = "daos_get")]
    async fn daos_get(
        &self,
        state: Data<&AppState>,
        /// The DAO's slug, as `GET /v1/daos` lists it (`uniswap`, `arbitrum`, …).
        #[oai(name = "daoId")]
        dao_id: Path<String>,
    ) -> Result<Json<V2Single<Dao>>, ApiError<Op>> {
        let record = store::daos::get(&state.db, &dao_id.0)
            .await?
            .ok_or_else(|| Problem::not_found(format!("No DAO has the id `{}`; GET /v1/daos lists them.", dao_id.0)))?;
        let status = if record.summary.is_some() { CacheStatus::Fresh } else { CacheStatus::RegistryOnly };
        let as_of = record.summary.as_ref().and_then(|s| s.data_as_of_ms);
        Ok(Json(V2Single::new(Dao::from_record(record), Freshness::new(as_of, status))))
    }
}
