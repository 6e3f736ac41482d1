//! `GET /v2/stream`: the feed as a resumable Server-Sent Events stream, for clients that want
//! each change as soon as it is published. The entries are `/v2/feed`'s; the process's one
//! reader fans them out (`push::hub`).
use std::borrow::Cow;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use poem::{Body, IntoResponse, Request, Response, http::header, web::Data};
use poem_openapi::{
    ApiResponse, OpenApi,
    param::{Header, Query},
    payload::Payload,
    registry::{MetaSchema, MetaSchemaRef, Registry},
    types::{ToJSON, Type},
};
use tokio::time::Instant;

use super::V2Tag;
use crate::api::{AppState, views::feed::FeedEntry};
use crate::contract::{
    api_error::ApiError,
    errors::ParamLocation,
    feed::{
        self, FeedKind, FeedKinds, FeedPosition, SEQUENCE_PATTERN, STREAM_ENDED_EVENT, StreamEndReason, StreamEnded,
    },
    ids::{IssuedKey, VoterIdentity},
    operations::FeedStreamV2,
    params::{DaoFilter, ProposalKeys, VoterIdentities},
};
use crate::edge::payment::PaidByPayment;
use crate::push::hub::StreamPlan;
use crate::store::{self, failures::problem_marking_read_failed, feed::FeedFilter};

/// One event of the stream as an SSE parser hands it over, as the document declares it (the
/// schema of each event of a `text/event-stream`, as schemathesis and OpenAPI 3.2's
/// `itemSchema` read it). Only declared: frames are rendered once per entry (`push::hub`),
/// never through this type. `data` is a string of JSON; its shapes, `FeedEntry` and
/// `StreamEnded`, are components of their own.
pub struct StreamEvent;

impl StreamEvent {
    const NAME: &'static str = "StreamEvent";
}

impl Type for StreamEvent {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> Cow<'static, str> {
        Cow::Borrowed(Self::NAME)
    }

    fn schema_ref() -> MetaSchemaRef {
        MetaSchemaRef::Reference(Self::NAME.to_owned())
    }

    fn register(registry: &mut Registry) {
        registry.create_schema::<Self, _>(Self::NAME.to_owned(), |registry| {
            FeedEntry::register(registry);
            StreamEnded::register(registry);
            let string = |description: &'static str, pattern: Option<&str>, values: Vec<serde_json::Value>| {
                MetaSchemaRef::Inline(Box::new(MetaSchema {
                    description: Some(description),
                    pattern: pattern.map(str::to_owned),
                    enum_items: values,
                    ..MetaSchema::new("string")
                }))
            };
            let types = FeedKind::ALL.iter().map(|k| k.as_str()).chain([STREAM_ENDED_EVENT]).map(Into::into).collect();
            let entry = <FeedEntry as poem_openapi::types::Example>::example();
            MetaSchema {
                description: Some(
                    "One event of the stream. An entry: `id` its sequence, `event` its kind, `data` the entry as \
                     `GET /v2/feed` shows it. The last event of a stream the server ends: `event` `stream_ended`, \
                     no `id`, `data` a `StreamEnded`.",
                ),
                required: vec!["event", "data"],
                properties: vec![
                    (
                        "id",
                        string(
                            "The entry's `sequence`: what `Last-Event-ID` resumes after.",
                            Some(SEQUENCE_PATTERN),
                            vec![],
                        ),
                    ),
                    ("event", string("The entry's kind (a `FeedKind`), or `stream_ended`.", None, types)),
                    (
                        "data",
                        string(
                            "One line of JSON: a `FeedEntry` for an entry, a `StreamEnded` for `stream_ended`.",
                            None,
                            vec![],
                        ),
                    ),
                ],
                example: Some(serde_json::json!({
                    "id": entry.sequence,
                    "event": entry.kind.as_str(),
                    "data": entry.to_json_string(),
                })),
                ..MetaSchema::new("object")
            }
        });
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        Box::new(std::iter::once(self))
    }
}

/// A `text/event-stream` body of finished frames (`push::hub` writes them).
pub struct EventStream(Pin<Box<dyn Stream<Item = Bytes> + Send>>);

impl Payload for EventStream {
    const CONTENT_TYPE: &'static str = "text/event-stream";

    /// The schema of each event (OpenAPI 3.0 and 3.1 have no `itemSchema` yet: the media type's
    /// `schema` stands for each event, as schemathesis reads a `text/event-stream`).
    fn schema_ref() -> MetaSchemaRef {
        StreamEvent::schema_ref()
    }

    fn register(registry: &mut Registry) {
        StreamEvent::register(registry);
    }
}

impl IntoResponse for EventStream {
    fn into_response(self) -> Response {
        Response::builder()
            .content_type(Self::CONTENT_TYPE)
            // Nothing may keep or buffer a live stream (nginx reads `X-Accel-Buffering`).
            .header(header::CACHE_CONTROL, "no-store")
            .header("x-accel-buffering", "no")
            .body(Body::from_bytes_stream(self.0.map(Ok::<_, std::io::Error>)))
    }
}

#[derive(ApiResponse)]
pub enum StreamAnswer {
    /// The stream. First `retry:` (the reconnection delay, in milliseconds), then one event per
    /// feed entry: `id:` its sequence, `event:` its kind, `data:` the entry as `/v2/feed` shows
    /// it (one line of JSON). A `:` comment line now and then keeps the connection alive. When
    /// the server ends the stream, its last event is `event: stream_ended` with a
    /// `StreamEnded` as `data` (and no `id:`, so `Last-Event-ID` stays the last entry's).
    #[oai(status = 200)]
    Events(EventStream),
}

pub struct Api;

#[OpenApi(prefix_path = "/v2", tag = "V2Tag::Feed")]
impl Api {
    /// Stream the feed of changes
    ///
    /// The entries of `GET /v2/feed`, pushed as Server-Sent Events as soon as each publication
    /// commits, oldest first, each once. Without a resume point the stream starts from now: the
    /// entries published after it opened. A client resumes exactly after the last entry it
    /// received with `Last-Event-ID` (an `EventSource` sends it by itself when it reconnects), or
    /// opens the stream with `after` (`0`: from the oldest entry kept); `Last-Event-ID` wins when
    /// both are sent. Resuming reads from the store, so it works across server restarts and on
    /// any process. Entries are kept {{FEED_RETENTION_DAYS}} days: an older resume point is
    /// refused with INVALID_CURSOR (resynchronise from `/v2/events` and `/v2/signals`).
    ///
    /// The stream stays open as long as a partner token likes; an x402 payment holds it for the
    /// time `/v1/meta/pricing` lists as the endpoint's `paidSeconds`. Either way the server may
    /// end it (`stream_ended`, with the reason): reconnect with `Last-Event-ID` and nothing is
    /// missed.
    #[oai(path = "/stream", method = "get", operation_id = "v2_feed_stream")]
    #[allow(clippy::too_many_arguments)]
    async fn feed_stream(
        &self,
        state: Data<&AppState>,
        req: &Request,
        /// Only entries of this DAO.
        #[oai(name = "daoId")]
        dao_id: Query<Option<DaoFilter>>,
        /// Only entries of these kinds, comma-separated (`proposal_closed,signal_raised`); every kind
        /// when absent.
        #[oai(explode = false, default)]
        kinds: Query<FeedKinds>,
        /// Only entries about these proposals (`proposalKey`s, comma-separated, at most
        /// {{WEBHOOK_MAX_PROPOSAL_KEYS}}): their events, signals and moments. A key no proposal has
        /// matches nothing, as `daoId` does.
        #[oai(name = "proposalKeys", explode = false, default)]
        proposal_keys: Query<ProposalKeys>,
        /// Only entries about these voters or delegates (comma-separated, at most
        /// {{WEBHOOK_MAX_VOTERS}}; each a 0x address in any letter case, a CAIP-10 account or an
        /// ENS name): their notable votes and the delegation changes they are the delegator, the
        /// previous or the new delegate of. An ENS name no known voter has matches nothing, as a
        /// key no proposal has. Combined with the other filters, an entry must match each.
        #[oai(explode = false, default)]
        voters: Query<VoterIdentities>,
        /// The entries after this `sequence` (`0`: from the oldest entry kept). Without it (and
        /// without `Last-Event-ID`) the stream starts from now.
        after: Query<Option<FeedPosition>>,
        /// The `id` of the last event received: the stream resumes right after it. Sent by an
        /// `EventSource` when it reconnects; wins over `after`.
        #[oai(name = "Last-Event-ID")]
        last_event_id: Header<Option<FeedPosition>>,
    ) -> Result<StreamAnswer, ApiError<FeedStreamV2>> {
        let dao = DaoFilter::resolve(dao_id.0);
        let voters = resolved_voters(&state, voters.0).await?;
        // Subscribed before the start is read: what is published meanwhile reaches the stream.
        let subscription = state.feed.subscribe();
        let resume = match (last_event_id.0, after.0) {
            (Some(p), _) => Some((p.0, "Last-Event-ID", ParamLocation::Header)),
            (None, Some(p)) => Some((p.0, "after", ParamLocation::Query)),
            (None, None) => None,
        };
        let position = match resume {
            Some((position, name, location)) => {
                if let Some(pruned) = store::feed::pruned_past(&state.reads(), position).await? {
                    return Err(feed::expired(position, pruned, name, location).into());
                }
                position
            }
            None => store::feed::newest(&state.reads()).await?,
        };
        let now = Instant::now();
        let paid = req.extensions().get::<PaidByPayment>().map(|_| {
            (now + Duration::from_secs(state.settings.prices().stream_seconds), StreamEndReason::PaymentExpired)
        });
        let longest = state.settings.limits.stream_max_duration.map(|d| (now + d, StreamEndReason::MaxDuration));
        let plan = StreamPlan {
            // A DAO filter that names no DAO, or a voter filter that names no known voter,
            // matches no entry.
            filter: dao.store_filter().zip(voters).map(|(d, voters)| FeedFilter {
                dao_id: d.cloned(),
                kinds: kinds.0.0,
                proposal_keys: proposal_keys.0.0.iter().map(|k| k.as_str().to_owned()).collect(),
                voters,
            }),
            after: position,
            ends: [paid, longest].into_iter().flatten().min_by_key(|(at, _)| *at),
            keep_alive: state.settings.limits.stream_keep_alive,
        };
        let stream = state.feed.stream(subscription, plan, state.queries.clone(), state.shutdown.clone());
        Ok(StreamAnswer::Events(EventStream(stream)))
    }
}

/// The voters a `voters` parameter names, as lowercase addresses, ENS names resolved from the
/// store. A name no known voter has matches nothing, as a key no proposal has: `None` when the
/// parameter named voters and none of them is known (the filter matches no entry).
async fn resolved_voters(
    state: &AppState,
    voters: VoterIdentities,
) -> Result<Option<Vec<String>>, crate::contract::errors::Problem> {
    let named = !voters.0.is_empty();
    let mut out: Vec<String> = Vec::with_capacity(voters.0.len());
    for voter in voters.0 {
        let address = match voter {
            VoterIdentity::Address(a) => Some(a),
            VoterIdentity::Ens(name) => store::voters::address_of_ens(&state.reads(), &name)
                .await
                .map_err(|e| problem_marking_read_failed(&e))?,
        };
        if let Some(address) = address
            && !out.contains(&address)
        {
            out.push(address);
        }
    }
    Ok((!named || !out.is_empty()).then_some(out))
}
