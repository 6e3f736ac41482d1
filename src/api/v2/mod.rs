//! The additive v2 surface.
pub mod activity;
pub mod daos;
pub mod delegates;
pub mod events;
pub mod exports;
pub mod feed;
pub mod proposals;
pub mod signals;
pub mod stream;
pub mod topics;
pub mod voters;
pub mod webhooks;

use std::marker::PhantomData;

use poem_openapi::{
    ApiExtractor, ApiExtractorType, ExtractParamOptions, Tags,
    payload::{Json, ParsePayload, Payload},
    registry::{MetaMediaType, MetaRequest, MetaSchemaRef, Registry},
    types::{ParseFromJSON, ToJSON, Type},
};

use crate::api::AppState;
use crate::contract::{
    access::PARTNER_TOKEN_HEADER,
    body::{self, FromBody, MAX_BODY_BYTES, refuse_body},
    cursor::{Keyset, QueryShape},
    cursor_shape::CursorShape,
    envelope::{CacheStatus, Freshness, PageMeta, V2Items, V2List, V2ListMeta},
    errors::{ErrorCode, FieldError, ParamLocation, Problem},
    ids::{VoterIdentity, parse_voter_identity},
    limits::Window,
    operations::Operation,
    params::{V2Timestamp, resolve_v2_since, resolve_v2_window},
};
#[cfg(doc)]
use crate::edge::serving::Serving;
use crate::store;
use crate::store::failures::problem_marking_read_failed;
use crate::store::tokens::LiveToken;

/// One tag per resource.
#[derive(Tags)]
pub enum V2Tag {
    /// Recent cross-DAO activity: events and signals in one feed.
    Activity,
    /// The covered DAOs, their data sources, counts and freshness.
    Daos,
    /// On-chain delegation: a DAO's delegates, each voter's delegation changes and voting power
    /// over time, from the governance token's own logs.
    Delegates,
    /// Proposals and their votes.
    Proposals,
    /// Dated governance events.
    Events,
    /// Whole tables of a DAO as files (Parquet, CSV, NDJSON), per revision, with their schemas.
    Exports,
    /// Every change, in the order it was published: polled, streamed or pushed.
    Feed,
    /// Curated governance signals.
    Signals,
    /// Governance forum topics.
    Topics,
    /// Voters: rankings within a DAO, cross-DAO profiles and voting histories.
    Voters,
    /// Webhook subscriptions: the feed pushed to your URLs (Standard Webhooks), managed with your
    /// partner token.
    Webhooks,
}

/// What a v2 answer is served from: the revision its cursors are bound to and its `dataAsOf`.
pub struct Bound {
    /// The revision that last changed the DAO the query is about, or the serving revision for a
    /// query over every DAO (0 before the first publication). See [`Serving::revision_of`].
    pub id: i64,
    pub data_as_of_ms: Option<i64>,
}

impl Bound {
    /// The newest data time: windows that default to "the latest" end here (the clock only
    /// before anything is published).
    pub fn newest_ms(&self) -> i64 {
        self.data_as_of_ms.unwrap_or_else(crate::contract::time::now_ms)
    }
}

/// The serving state for a query about `dao` (or every DAO), from the watch: no store read.
pub fn bound(state: &AppState, dao: Option<&str>) -> Bound {
    let serving = state.serving.current();
    Bound { id: serving.revision_of(dao), data_as_of_ms: serving.data_as_of_ms }
}

/// The window of a list that always has one (events, signals): the caller's bounds, or, when
/// neither is given, the longest window ending at the serving revision's `dataAsOf` (the newest
/// data held, so the default shows the latest rows even when ingestion lags the clock).
pub fn window_or_latest(
    from: Option<V2Timestamp>,
    to: Option<V2Timestamp>,
    serving: &Bound,
    window: Window,
) -> Result<(i64, i64), Problem> {
    let end = serving.newest_ms();
    let to = to.or(if from.is_none() { Some(V2Timestamp(end)) } else { None });
    Ok(resolve_v2_window(from, to, window)?.unwrap_or((end - window.max_ms(), end)))
}

/// The revision an append-only list's cursors are bound to: none (revisions count from 1).
const APPEND_ONLY: i64 = 0;

/// One v2 list request on its way to a page, for the operation `Op` whose rows resume after a
/// `K` (the list's keyset, a store type): the revision its cursors are bound to, its query shape
/// and its page size. The shape is named by the operation's declared id, so a cursor of one list
/// is refused by every other; a cursor carries the filters too, so it is refused after they
/// change. The position goes into the cursor and comes out of it typed: the handler hands the
/// store the `K` it read off the last row, and gets back the `K` a cursor carried.
pub struct Listing<'s, Op, K> {
    state: &'s AppState,
    /// What the answer is served from.
    pub revision: Bound,
    shape: QueryShape<'static>,
    op: PhantomData<fn() -> (Op, K)>,
}

impl<'s, Op: Operation, K: Keyset> Listing<'s, Op, K> {
    /// A list about `dao` (or every DAO), `limit` rows a page.
    pub fn new(state: &'s AppState, dao: Option<&str>, limit: u32) -> Self {
        let shape = QueryShape { endpoint: Op::DECL.id, filters: Vec::new(), limit };
        Self { state, revision: bound(state, dao), shape, op: PhantomData }
    }

    /// The filters and sort that shape the list: the operation's own [`CursorShape`].
    pub fn filtered(mut self, filters: impl CursorShape<Op = Op>) -> Self {
        self.shape.filters = filters.filters();
        self
    }

    /// The list's window: the caller's bounds, or the operation's longest window ending at the
    /// revision's `dataAsOf` ([`window_or_latest`]).
    pub fn window_or_latest(&self, from: Option<V2Timestamp>, to: Option<V2Timestamp>) -> Result<(i64, i64), Problem> {
        window_or_latest(from, to, &self.revision, Op::WINDOW)
    }

    /// The start of a feed that reaches at most the operation's window back from the revision's
    /// `dataAsOf` ([`resolve_v2_since`]): `since`, or that floor when absent.
    pub fn since(&self, since: Option<V2Timestamp>) -> Result<i64, Problem> {
        resolve_v2_since(since, self.revision.newest_ms(), Op::WINDOW)
    }

    /// The position `cursor` carries, checked against this list's shape and revision.
    pub fn after(&self, cursor: Option<&str>) -> Result<Option<K>, Problem>
    where
        K: Keyset<Order = ()>,
    {
        self.after_in(cursor, ())
    }

    /// The position `cursor` carries in the list's `order`, checked against this list's shape
    /// and revision.
    pub fn after_in(&self, cursor: Option<&str>, order: K::Order) -> Result<Option<K>, Problem> {
        cursor.map(|c| self.state.cursors.decode(c, &self.shape, self.revision.id, order)).transpose()
    }

    /// A list of an append-only sequence (the feed), `limit` rows a page: its positions never
    /// move, so its cursors are bound to no revision and stay valid across publications.
    pub fn append_only(state: &'s AppState, limit: u32) -> Self {
        let mut list = Self::new(state, None, limit);
        list.revision.id = APPEND_ONLY;
        list
    }

    /// The cursor that continues this list after `position`, as a page ending there would give
    /// it: for an answer that shows the list's first rows itself (a proposal's detail, its first
    /// actions) and hands the rest over to the list.
    pub fn cursor_at(&self, position: &K) -> String {
        self.state.cursors.encode(&self.shape, self.revision.id, position)
    }

    /// Rows to read: one more than a page, to know whether more follow.
    pub fn rows_to_read(&self) -> u64 {
        u64::from(self.shape.limit) + 1
    }

    /// The page of `rows` (read with [`Self::rows_to_read`]); `position` gives the keyset
    /// position of a row, which the next cursor carries.
    pub fn page<R, T: ParseFromJSON + ToJSON + Type>(
        self,
        rows: Vec<R>,
        position: impl Fn(&R) -> K,
        mut item: impl FnMut(R) -> T,
    ) -> Json<V2List<T>> {
        self.page_filter_map(rows, position, |r| Some(item(r)))
    }

    /// [`Self::page`] for rows some of which cannot be shown (logged by `item`): the page and its
    /// cursor still follow the rows read, so a skipped row never stops the walk.
    pub fn page_filter_map<R, T: ParseFromJSON + ToJSON + Type>(
        self,
        mut rows: Vec<R>,
        position: impl Fn(&R) -> K,
        item: impl FnMut(R) -> Option<T>,
    ) -> Json<V2List<T>> {
        let limit = self.shape.limit;
        let has_more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let next_cursor = if has_more {
            rows.last().map(|r| self.state.cursors.encode(&self.shape, self.revision.id, &position(r)))
        } else {
            None
        };
        Json(V2List {
            data: V2Items { items: rows.into_iter().filter_map(item).collect() },
            meta: V2ListMeta {
                page: PageMeta { limit, has_more, next_cursor },
                freshness: Freshness::new(self.revision.data_as_of_ms, CacheStatus::Fresh),
            },
        })
    }
}

/// The rows of a ranking page with their ranks: 1 for the first row of the first page, and on
/// from the rank the cursor carries.
pub fn ranked<R>(after: Option<&store::keysets::RankAfter>, rows: Vec<R>) -> Vec<(u64, R)> {
    let first = after.map_or(0, |a| a.rank);
    rows.into_iter().enumerate().map(|(i, r)| (first + 1 + i as u64, r)).collect()
}

/// The canonical address a voter parameter names (ENS names resolved from the store).
pub async fn resolve_voter(
    state: &AppState,
    text: &str,
    param: &str,
    location: ParamLocation,
) -> Result<String, Problem> {
    match parse_voter_identity(text, param, location)? {
        VoterIdentity::Address(a) => Ok(a),
        VoterIdentity::Ens(name) => store::voters::address_of_ens(&state.reads(), &name)
            .await
            .map_err(|e| problem_marking_read_failed(&e))?
            .ok_or_else(|| {
                Problem::not_found(format!(
                    "No voter with the ENS name `{name}` is known. ENS names are known only for voters an upstream \
                     reported one for (Snapshot and Tally profiles); name the voter by its 0x address or a CAIP-10 account."
                ))
            }),
    }
}

/// A JSON request body of type `T`, read member by member (`contract::body`): an unknown member,
/// a wrong type or an oversized body is a 400 problem naming the member, as a bad parameter is.
/// The document publishes `T`'s schema as the body's.
pub struct JsonBody<T>(pub T);

impl<T: Type + FromBody + Send> Payload for JsonBody<T> {
    const CONTENT_TYPE: &'static str = "application/json";

    fn check_content_type(content_type: &str) -> bool {
        content_type.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: Type + FromBody + Send> ParsePayload for JsonBody<T> {
    const IS_REQUIRED: bool = true;

    async fn from_request(_request: &poem::Request, body: &mut poem::RequestBody) -> poem::Result<Self> {
        let bytes = match body.take() {
            Ok(b) => b.into_bytes_limit(MAX_BODY_BYTES).await,
            Err(e) => Err(e),
        };
        let bytes = bytes.map_err(|e| match e {
            poem::error::ReadBodyError::PayloadTooLarge => refuse_body(
                format!("is larger than {MAX_BODY_BYTES} bytes"),
                &format!("at most {MAX_BODY_BYTES} bytes"),
            ),
            other => refuse_body(format!("could not be read: {other}"), "a JSON object"),
        })?;
        Ok(Self(body::parse::<T>(&bytes)?))
    }
}

impl<'a, T: Type + FromBody + Send> ApiExtractor<'a> for JsonBody<T> {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::RequestObject];
    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        <Self as Payload>::register(registry);
    }

    fn request_meta() -> Option<MetaRequest> {
        Some(MetaRequest {
            description: None,
            content: vec![MetaMediaType { content_type: <Self as Payload>::CONTENT_TYPE, schema: T::schema_ref() }],
            required: true,
        })
    }

    async fn from_request(
        request: &'a poem::Request,
        body: &mut poem::RequestBody,
        _param_opts: ExtractParamOptions<Self::ParamType>,
    ) -> poem::Result<Self> {
        match request.content_type() {
            Some(content_type) if Self::check_content_type(content_type) => {
                <Self as ParsePayload>::from_request(request, body).await
            }
            sent => {
                let problem = Problem::validation(FieldError {
                    location: ParamLocation::Header,
                    name: "content-type".to_owned(),
                    reason: match sent {
                        Some(_) => "is not JSON".to_owned(),
                        None => "is required with a body".to_owned(),
                    },
                    expected: Some("application/json".to_owned()),
                    received: sent.map(str::to_owned),
                });
                Err(problem.into())
            }
        }
    }
}

/// The partner token the gate checked for an operation only a token opens (`edge::gate`).
pub fn partner_token(req: &poem::Request) -> Result<LiveToken, Problem> {
    req.extensions().get::<LiveToken>().cloned().ok_or_else(|| {
        Problem::new(
            ErrorCode::Unauthorized,
            format!(
                "This operation needs a partner token in `{PARTNER_TOKEN_HEADER}`; operators use `govdata webhooks`."
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::activity::ActivityShape;
    use super::delegates::{DelegatesShape, NotableDelegationsShape, VoterDelegationsShape, VoterPowerShape};
    use super::events::EventsShape;
    use super::exports::ExportsShape;
    use super::feed::FeedShape;
    use super::proposals::{ProposalActionsShape, ProposalSort, ProposalVotesShape, ProposalsShape, VoteSort};
    use super::signals::SignalsShape;
    use super::topics::TopicsShape;
    use super::voters::{VoterVotesShape, VotersShape};
    use super::webhooks::WebhookDeliveriesShape;
    use crate::contract::cursor_shape::CursorShape;
    use crate::contract::events::{ActivityKind, EventKind};
    use crate::contract::feed::{FeedKind, FeedPosition};
    use crate::contract::params::DaoScope;
    use crate::contract::signals::{Severity, SignalKind};
    use crate::contract::vocabulary::{DaoId, ProposalSource, ProposalState};
    use crate::store::governor::Side;

    /// The DAO parameter's public name, pinned as text.
    const DAO: &str = "daoId";

    fn shape(filters: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
        filters.iter().map(|(k, v)| (*k, (*v).to_owned())).collect()
    }

    // Every list's shape as the cursors already issued carry it: names, order and text. A change
    // here refuses every cursor in flight; it is never a refactor.
    #[test]
    fn each_list_binds_its_cursors_to_the_shape_they_always_carried() {
        let uniswap = DaoScope::Dao(DaoId::from_request("Uniswap").unwrap());
        let (every, no_dao) = (DaoScope::Every, DaoScope::NoDao("no.such".to_owned()));
        let window = Some((1_000, 2_000));
        let voter = "0xab";

        assert_eq!(DelegatesShape { dao: "uniswap" }.filters(), shape(&[(DAO, "uniswap")]));
        assert_eq!(VotersShape { dao: "uniswap" }.filters(), shape(&[(DAO, "uniswap")]));
        assert_eq!(
            NotableDelegationsShape { dao: "uniswap", window }.filters(),
            shape(&[(DAO, "uniswap"), ("window", "1000..2000")])
        );
        assert_eq!(
            NotableDelegationsShape { dao: "uniswap", window: None }.filters(),
            shape(&[(DAO, "uniswap"), ("window", "")])
        );
        for (side, text) in [(None, ""), (Some(Side::Delegator), "Delegator"), (Some(Side::Delegate), "Delegate")] {
            assert_eq!(
                VoterDelegationsShape { voter, dao: &uniswap, side, window }.filters(),
                shape(&[("voter", voter), (DAO, "uniswap"), ("side", text), ("window", "1000..2000")])
            );
        }
        assert_eq!(
            VoterPowerShape { voter, dao: &every, window: None }.filters(),
            shape(&[("voter", voter), (DAO, ""), ("window", "")])
        );
        assert_eq!(
            VoterVotesShape { voter, dao: &no_dao, window }.filters(),
            shape(&[("voter", voter), (DAO, "no.such"), ("window", "1000..2000")])
        );
        assert_eq!(
            ProposalsShape {
                dao: &uniswap,
                source: Some(ProposalSource::Snapshot),
                state: Some(ProposalState::Closed),
                window,
                sort: ProposalSort::EndTime,
            }
            .filters(),
            shape(&[
                (DAO, "uniswap"),
                ("source", "snapshot"),
                ("state", "closed"),
                ("window", "1000..2000"),
                ("sort", "end_time"),
            ])
        );
        assert_eq!(
            ProposalsShape { dao: &every, source: None, state: None, window: None, sort: ProposalSort::Newest }
                .filters(),
            shape(&[(DAO, ""), ("source", ""), ("state", ""), ("window", ""), ("sort", "newest")])
        );
        assert_eq!(
            ProposalVotesShape { proposal_key: "p_key", voter: Some(voter), choice: Some("1"), sort: VoteSort::Time }
                .filters(),
            shape(&[("proposalKey", "p_key"), ("voter", voter), ("choice", "1"), ("sort", "time")])
        );
        assert_eq!(
            ProposalVotesShape { proposal_key: "p_key", voter: None, choice: None, sort: VoteSort::Power }.filters(),
            shape(&[("proposalKey", "p_key"), ("voter", ""), ("choice", ""), ("sort", "power")])
        );
        assert_eq!(ProposalActionsShape { proposal_key: "p_key" }.filters(), shape(&[("proposalKey", "p_key")]));
        assert_eq!(
            EventsShape { dao: &uniswap, kind: Some(EventKind::VoteCast), window: (1_000, 2_000) }.filters(),
            shape(&[(DAO, "uniswap"), ("kind", "vote_cast"), ("window", "1000..2000")])
        );
        assert_eq!(
            SignalsShape {
                dao: &every,
                kind: Some(SignalKind::CloseRace),
                severity: Some(Severity::Warning),
                window: (1_000, 2_000)
            }
            .filters(),
            shape(&[(DAO, ""), ("kind", "close_race"), ("severity", "warning"), ("window", "1000..2000")])
        );
        assert_eq!(
            ActivityShape { dao: &uniswap, kind: Some(ActivityKind::Signal), since: 1_000 }.filters(),
            shape(&[(DAO, "uniswap"), ("kind", "signal"), ("since", "1000")])
        );
        assert_eq!(
            FeedShape {
                dao: &uniswap,
                kinds: &[FeedKind::SignalRaised, FeedKind::ProposalClosed],
                after: Some(FeedPosition(42))
            }
            .filters(),
            shape(&[(DAO, "uniswap"), ("kinds", "signal_raised,proposal_closed"), ("after", "42")])
        );
        assert_eq!(
            FeedShape { dao: &every, kinds: &[], after: None }.filters(),
            shape(&[(DAO, ""), ("kinds", ""), ("after", "")])
        );
        assert_eq!(
            TopicsShape { dao: &uniswap, window }.filters(),
            shape(&[(DAO, "uniswap"), ("window", "1000..2000")])
        );
        assert_eq!(ExportsShape { dao: &every }.filters(), shape(&[(DAO, "")]));
        assert_eq!(WebhookDeliveriesShape { webhook_id: "wh_1" }.filters(), shape(&[("webhookId", "wh_1")]));
    }
}
