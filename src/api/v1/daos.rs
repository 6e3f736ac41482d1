//! `GET /v1/daos`: the covered DAOs.
use poem::web::Data;
use poem_openapi::{OpenApi, param::Query, payload::Json};

use super::V1Tag;
use crate::api::{AppState, views::dao::Dao};
use crate::contract::{
    api_error::ApiError,
    envelope::{V1Envelope, V1Page, V1Request},
    limits::MostLists,
    operations::DaosListV1 as Op,
    params::{V1Limit, V1Offset},
};
use crate::store;

pub struct Api;

#[OpenApi(prefix_path = "/v1", tag = "V1Tag::Daos")]
impl Api {
    /// List covered DAOs
    ///
    /// The DAOs this service covers, ordered by `daoId`, each with its data sources, exact counts
    /// (proposals; upstream vote totals and ingested votes kept apart; voters; delegates) and its
    /// own ingestion watermark. Call it first to learn the valid `daoId` values and how current
    /// each DAO's data is. `limit` and `offset` out of range are clamped, never rejected.
    #[oai(path = "/daos", method = "get", operation_id = "daos_list")]
    async fn daos_list(
        &self,
        state: Data<&AppState>,
        req: V1Request,
        /// Rows per page.
        limit: Query<Option<V1Limit<MostLists>>>,
        /// Rows to skip.
        offset: Query<Option<V1Offset>>,
    ) -> Result<Json<V1Envelope<V1Page<Dao>>>, ApiError<Op>> {
        let mut req = req;
        let limit = V1Limit::resolve(limit.0, "limit", &mut req);
        let offset = V1Offset::resolve(offset.0, "offset", &mut req);
        let (rows, total) = store::daos::list(&state.reads(), u64::from(limit), offset).await?;
        let data =
            V1Page { items: rows.into_iter().map(Dao::from_record).collect::<Result<_, _>>()?, total, limit, offset };
        super::answer(&state, req, data)
    }
}
