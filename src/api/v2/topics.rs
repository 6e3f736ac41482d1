//! `GET /v2/topics` and `GET /v2/topics/{topicKey}`: forum topics.
use poem::web::Data;
use poem_openapi::{
    OpenApi,
    param::{Path, Query},
    payload::Json,
};

use super::{Listing, V2Tag, bound};
use crate::api::{AppState, views::topic::ForumTopicItem};
use crate::contract::ids::{IssuedKey, TopicKey};
use crate::contract::params::KeyParam;
use crate::contract::{
    api_error::ApiError,
    cursor_shape::cursor_shape,
    envelope::{CacheStatus, Freshness, V2List, V2Single},
    errors::Problem,
    limits::MostLists,
    operations::{Operation, TopicsGetV2, TopicsListV2},
    params::{DAO_ID_PARAM, DaoFilter, DaoScope, V2Limit, V2Timestamp, resolve_v2_window},
};
use crate::store::{self, keysets::TimeAfter};

cursor_shape! {
    /// What a cursor of `GET /v2/topics` is bound to.
    TopicsShape<'a> for TopicsListV2 {
        dao: &'a DaoScope => DAO_ID_PARAM,
        window: Option<(i64, i64)> => "window",
    }
}

pub struct Api;

#[OpenApi(prefix_path = "/v2", tag = "V2Tag::Topics")]
impl Api {
    /// List forum topics
    ///
    /// Governance forum (Discourse) topics of the covered DAOs, newest first, each with its
    /// counts, opening-post excerpt and the proposal it discusses when linked. Filter by DAO and
    /// a creation window of at most {{PROPOSALS_AND_HISTORY_WINDOW_DAYS}} days (`from`/`to`, RFC 3339). Keyset-paginated.
    #[oai(path = "/topics", method = "get", operation_id = "v2_topics_list")]
    async fn topics_list(
        &self,
        state: Data<&AppState>,
        /// Only this DAO's topics.
        #[oai(name = "daoId")]
        dao_id: Query<Option<DaoFilter>>,
        /// Window start (inclusive), on creation time.
        from: Query<Option<V2Timestamp>>,
        /// Window end (inclusive), on creation time.
        to: Query<Option<V2Timestamp>>,
        /// Rows per page.
        limit: Query<Option<V2Limit<MostLists>>>,
        /// `meta.page.nextCursor` of the previous page, unchanged.
        cursor: Query<Option<String>>,
    ) -> Result<Json<V2List<ForumTopicItem>>, ApiError<TopicsListV2>> {
        let limit = V2Limit::resolve(limit.0);
        // As released, an empty `daoId` is a filter (matching nothing), not its absence.
        let dao = DaoFilter::resolve_keeping_empty(dao_id.0);
        let window = resolve_v2_window(from.0, to.0, <TopicsListV2 as Operation>::WINDOW)?;
        let list = Listing::<TopicsListV2, TimeAfter>::new(&state, dao.received(), limit)
            .filtered(TopicsShape { dao: &dao, window });
        let after = list.after(cursor.0.as_deref())?;
        let rows = match dao.store_filter() {
            Some(dao_id) => store::topics::list(&state.reads(), dao_id, window, after, list.rows_to_read()).await?,
            None => Vec::new(),
        };
        Ok(list.page(
            rows,
            |(t, _, _)| t.keyset(),
            |(t, post, linked)| ForumTopicItem::build(&t, post.as_ref(), linked.as_ref()),
        ))
    }

    /// Get one forum topic
    ///
    /// One forum topic by its `topicKey`: title, link, author, counts, times, tags, the opening
    /// post's excerpt and the proposal it discusses when linked, with citations.
    #[oai(path = "/topics/:topicKey", method = "get", operation_id = "v2_topics_get")]
    async fn topics_get(
        &self,
        state: Data<&AppState>,
        /// The topic's opaque key, as listed by `/v2/topics`.
        #[oai(name = "topicKey")]
        topic_key: Path<KeyParam<TopicKey>>,
    ) -> Result<Json<V2Single<ForumTopicItem>>, ApiError<TopicsGetV2>> {
        let key = topic_key.0.parse()?;
        let (t, post, linked) = store::topics::by_key(&state.reads(), key.as_str())
            .await?
            .ok_or_else(|| Problem::not_found(format!("No forum topic has the key `{key}`.")))?;
        let serving = bound(&state, None);
        Ok(Json(V2Single::new(
            ForumTopicItem::build(&t, post.as_ref(), linked.as_ref()),
            Freshness::new(serving.data_as_of_ms, CacheStatus::Fresh),
        )))
    }
}
