//! `GET /v2/feed`: every change the publications made, in the order they were published, for
//! clients that poll.
use poem::web::Data;
use poem_openapi::{OpenApi, param::Query, payload::Json};

use super::{Listing, V2Tag};
use crate::api::{AppState, views::feed::FeedEntry};
use crate::contract::{
    api_error::ApiError,
    cursor_shape::cursor_shape,
    envelope::V2List,
    errors::ParamLocation,
    feed::{self, FeedKind, FeedKinds, FeedPosition},
    limits::Events,
    operations::FeedListV2,
    params::{DAO_ID_PARAM, DaoFilter, DaoScope, V2Limit},
};
use crate::store::{
    self,
    feed::{FeedFilter, FeedRecord},
    keysets::FeedAfter,
};

cursor_shape! {
    /// What a cursor of `GET /v2/feed` is bound to. `after` is part of the query a cursor
    /// continues, as every filter is: a cursor goes on from where its page ended, and is refused
    /// with another `after`.
    FeedShape<'a> for FeedListV2 {
        dao: &'a DaoScope => DAO_ID_PARAM,
        kinds: &'a [FeedKind] => "kinds",
        after: Option<FeedPosition> => "after",
    }
}

pub struct Api;

#[OpenApi(prefix_path = "/v2", tag = "V2Tag::Feed")]
impl Api {
    /// List the feed of changes
    ///
    /// Every change a publication made, oldest first, each entry once: governance events as they
    /// are derived (proposals created, voting started, notable votes, proposals closed with their
    /// final tally, queued, executed, canceled, forum topics opened) and corrected, and signals
    /// raised, changed or cleared. Entries are written in the same transaction as the data they
    /// report, so nothing is fed that was not published and nothing published is missing.
    ///
    /// Poll with `after` = the last `sequence` you processed: the answer holds the entries after
    /// it (none when nothing was published since). Entries are kept
    /// {{FEED_RETENTION_DAYS}} days; resuming from a pruned position is refused with
    /// INVALID_CURSOR (resynchronise from `/v2/events` and `/v2/signals`). Up to {{EVENTS_MAX}}
    /// entries a page; `meta.page.nextCursor` continues a page with more, and stays valid across
    /// publications.
    #[oai(path = "/feed", method = "get", operation_id = "v2_feed_list")]
    #[allow(clippy::too_many_arguments)]
    async fn feed_list(
        &self,
        state: Data<&AppState>,
        /// Only entries of this DAO.
        #[oai(name = "daoId")]
        dao_id: Query<Option<DaoFilter>>,
        /// Only entries of these kinds, comma-separated (`proposal_closed,signal_raised`); every kind
        /// when absent.
        #[oai(explode = false, default)]
        kinds: Query<FeedKinds>,
        /// The entries after this `sequence` (`0`, the default: from the oldest entry kept).
        after: Query<Option<FeedPosition>>,
        /// Entries per page.
        limit: Query<Option<V2Limit<Events>>>,
        /// `meta.page.nextCursor` of the previous page, unchanged.
        cursor: Query<Option<String>>,
    ) -> Result<Json<V2List<FeedEntry>>, ApiError<FeedListV2>> {
        let limit = V2Limit::resolve(limit.0);
        let dao = DaoFilter::resolve(dao_id.0);
        let kinds = kinds.0.0;
        let list = Listing::<FeedListV2, FeedAfter>::append_only(&state, limit).filtered(FeedShape {
            dao: &dao,
            kinds: &kinds,
            after: after.0,
        });
        let position = match list.after(cursor.0.as_deref())? {
            Some(FeedAfter(seq)) => seq,
            None => after.0.map_or(0, |p| p.0),
        };
        if let Some(pruned) = store::feed::pruned_past(&state.reads(), position).await? {
            return Err(feed::expired(position, pruned, "after", ParamLocation::Query).into());
        }
        let rows = match dao.store_filter() {
            Some(dao_id) => {
                let filter = FeedFilter { dao_id: dao_id.cloned(), kinds, ..FeedFilter::default() };
                store::feed::after(&state.reads(), &filter, position, list.rows_to_read()).await?
            }
            None => Vec::new(),
        };
        let positions: Vec<FeedAfter> = rows.iter().map(FeedRecord::keyset).collect();
        let entries = FeedEntry::from_records(&state.reads(), rows).await?;
        Ok(list.page(positions.into_iter().zip(entries).collect(), |(p, _)| *p, |(_, e)| e))
    }
}
