//! Parameter types that carry their bounds from `limits.rs` into the document, so no bound is
//! written twice. v1 types parse any integer and clamp in the handler (recording the clamp);
//! v2 types reject out-of-range values at parse time (VALIDATION_ERROR).
use std::{
    borrow::Cow,
    collections::HashMap,
    marker::PhantomData,
    sync::{Mutex, OnceLock},
};

use poem_openapi::{
    registry::{MetaSchema, MetaSchemaRef},
    types::{ParseError, ParseFromParameter, ParseResult, Type},
};

use super::{
    envelope::{AdjustmentReason, V1Request},
    errors::{ParamLocation, Problem},
    ids::{self, IssuedKey, ProposalKey, VoterIdentity},
    limits::{PageSizeDecl, Window},
    vocabulary::{DaoId, KeyKind},
    webhooks::{MAX_PROPOSAL_KEYS, MAX_VOTERS, WebhookId},
};

/// Document metadata wants `&'static str`; texts built from declarations are interned so each
/// distinct text is allocated once per process.
fn intern(text: String) -> &'static str {
    static TEXTS: OnceLock<Mutex<HashMap<String, &'static str>>> = OnceLock::new();
    let mut texts = TEXTS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = texts.get(&text) {
        return s;
    }
    let leaked: &'static str = Box::leak(text.clone().into_boxed_str());
    texts.insert(text, leaked);
    leaked
}

/// A v1 integer parameter: published as `int64`, so a value beyond int64 is refused (a clamp
/// could not record what was sent).
fn parse_int64(value: &str) -> Result<i64, String> {
    parse_saturating(value)?;
    value.parse::<i64>().map_err(|_| format!("`{value}` is beyond the int64 range"))
}

/// An integer as sent; values beyond i64 saturate (a v2 range check refuses them anyway).
fn parse_saturating(value: &str) -> Result<i64, String> {
    let digits = value.strip_prefix(['-', '+']).unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{value}` is not an integer"));
    }
    Ok(value.parse::<i64>().unwrap_or(if value.starts_with('-') { i64::MIN } else { i64::MAX }))
}

macro_rules! integer_param_type {
    ($ty:ident<$g:ident>, $name:expr, $schema:expr) => {
        impl<$g: PageSizeDecl> Type for $ty<$g> {
            const IS_REQUIRED: bool = true;
            type RawValueType = Self;
            type RawElementValueType = Self;

            fn name() -> Cow<'static, str> {
                $name.into()
            }

            fn schema_ref() -> MetaSchemaRef {
                MetaSchemaRef::Inline(Box::new($schema))
            }

            fn as_raw_value(&self) -> Option<&Self::RawValueType> {
                Some(self)
            }

            fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
                Box::new(self.as_raw_value().into_iter())
            }
        }
    };
}

/// v1 `limit`: any integer; clamped to `1..=max` by [`V1Limit::resolve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V1Limit<L> {
    received: i64,
    size: PhantomData<L>,
}

integer_param_type!(V1Limit<L>, format!("v1_limit_{}", L::NAME), {
    let size = L::SIZE;
    let mut s = MetaSchema::new_with_format("integer", "int64");
    s.default = Some(size.default.into());
    s.description = Some(intern(format!(
        "Rows per page: {} by default, at most {}. Values above {} are clamped to {} and values below 1 to 1; \
         each clamp is recorded in `request.adjustments`.",
        size.default, size.max, size.max, size.max
    )));
    s
});

impl<L: PageSizeDecl> ParseFromParameter for V1Limit<L> {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        Ok(Self { received: parse_int64(value).map_err(ParseError::custom)?, size: PhantomData })
    }
}

impl<L: PageSizeDecl> V1Limit<L> {
    /// The effective page size, recorded in the request echo with any clamp.
    pub fn resolve(param: Option<Self>, name: &str, req: &mut V1Request) -> u32 {
        let size = L::SIZE;
        let applied = match param {
            None => size.default,
            Some(p) if p.received > i64::from(size.max) => {
                req.adjust(name, p.received, size.max, AdjustmentReason::ClampedToMax);
                size.max
            }
            Some(p) if p.received < 1 => {
                req.adjust(name, p.received, 1, AdjustmentReason::ClampedToMin);
                1
            }
            Some(p) => p.received as u32,
        };
        req.applied(name, applied);
        applied
    }
}

/// v1 `offset`: any integer; negative values are clamped to 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V1Offset {
    received: i64,
}

impl Type for V1Offset {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> Cow<'static, str> {
        "v1_offset".into()
    }

    fn schema_ref() -> MetaSchemaRef {
        let mut s = MetaSchema::new_with_format("integer", "int64");
        s.default = Some(0.into());
        s.description = Some(
            "Rows to skip (legacy pagination). Negative values are clamped to 0 and recorded in `request.adjustments`.",
        );
        MetaSchemaRef::Inline(Box::new(s))
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        Box::new(self.as_raw_value().into_iter())
    }
}

impl ParseFromParameter for V1Offset {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        Ok(Self { received: parse_int64(value).map_err(ParseError::custom)? })
    }
}

impl V1Offset {
    pub fn resolve(param: Option<Self>, name: &str, req: &mut V1Request) -> u64 {
        let applied = match param {
            None => 0,
            Some(p) if p.received < 0 => {
                req.adjust(name, p.received, 0, AdjustmentReason::ClampedToMin);
                0
            }
            Some(p) => p.received as u64,
        };
        req.applied(name, applied);
        applied
    }
}

/// v1 `start_ms` / `end_ms`: epoch milliseconds (UTC). Any integer parses; the window is
/// clamped by [`resolve_v1_window`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V1EpochMs(pub i64);

impl Type for V1EpochMs {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> Cow<'static, str> {
        "v1_epoch_ms".into()
    }

    fn schema_ref() -> MetaSchemaRef {
        let mut s = MetaSchema::new_with_format("integer", "int64");
        s.description = Some("Epoch milliseconds, UTC.");
        s.example = Some(1_767_225_600_000_i64.into());
        MetaSchemaRef::Inline(Box::new(s))
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        Box::new(self.as_raw_value().into_iter())
    }
}

impl ParseFromParameter for V1EpochMs {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        Ok(Self(parse_int64(value).map_err(ParseError::custom)?))
    }
}

/// The effective v1 window `[start, end]` in epoch ms. A window longer than `window` keeps its end
/// and moves its start forward; a start after the end is moved to the end. Each change is recorded.
pub fn resolve_v1_window(start: (&str, i64), end: (&str, i64), window: Window, req: &mut V1Request) -> (i64, i64) {
    let ((start_name, received_start), (end_name, end_ms)) = (start, end);
    let mut start_ms = received_start;
    if start_ms > end_ms {
        start_ms = end_ms;
        req.adjust(start_name, received_start, start_ms, AdjustmentReason::StartAfterEnd);
    } else if end_ms.saturating_sub(start_ms) > window.max_ms() {
        start_ms = end_ms - window.max_ms();
        req.adjust(start_name, received_start, start_ms, AdjustmentReason::WindowClampedToMax);
    }
    req.applied(start_name, start_ms);
    req.applied(end_name, end_ms);
    (start_ms, end_ms)
}

/// A v1 path or query value in its canonical form, recording the change when there was one: 0x
/// hex ids are lowercase (`0xAB…` → `0xab…`); other ids are kept as received. (DAO slugs are
/// lowercased by [`DaoIdParam::resolve_v1`].)
pub fn canonical_v1_value(name: &str, received: &str, req: &mut V1Request) -> String {
    let hex_id = received.len() > 2
        && (received.starts_with("0x") || received.starts_with("0X"))
        && received[2..].bytes().all(|b| b.is_ascii_hexdigit());
    let canonical = if hex_id { received.to_ascii_lowercase() } else { received.to_owned() };
    if canonical != received {
        req.adjust(name, received, &canonical, AdjustmentReason::Normalized);
    }
    canonical
}

/// Declares a parameter type published as a plain string, exactly as `String` is (the released
/// documents show no pattern for it, or add their own), that takes any text at parse time: the
/// handler parses it once into the contract's type, so a malformed value gets that type's answer
/// rather than the generic one of an unparsable parameter.
macro_rules! plain_string_param {
    ($ty:ident $(<$g:ident: $bound:path>)?) => {
        impl$(<$g: $bound>)? Type for $ty$(<$g>)? {
            const IS_REQUIRED: bool = true;
            type RawValueType = Self;
            type RawElementValueType = Self;

            fn name() -> Cow<'static, str> {
                <String as Type>::name()
            }

            fn schema_ref() -> MetaSchemaRef {
                <String as Type>::schema_ref()
            }

            fn as_raw_value(&self) -> Option<&Self::RawValueType> {
                Some(self)
            }

            fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
                Box::new(self.as_raw_value().into_iter())
            }
        }
    };
}

/// `file` in an export's path (`<table>.<format>`): any text parses; the handler names the file
/// with `contract::exports::ExportFile::parse`, or answers VALIDATION_ERROR (the document
/// publishes the pattern).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportFileParam(pub String);

plain_string_param!(ExportFileParam);

impl ParseFromParameter for ExportFileParam {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        Ok(Self(value.to_owned()))
    }
}

/// The public name of the parameter that names a DAO, in a path (`/v2/daos/{daoId}`) or a query
/// string (`?daoId=`).
pub const DAO_ID_PARAM: &str = "daoId";

/// `daoId` in a path: any text parses; [`DaoIdParam::parse`] (v2) or
/// [`DaoIdParam::resolve_v1`] (v1, which also records another letter case) makes it a [`DaoId`]
/// in any letter case ([`DaoId::from_request`]), or hands back the text, which no DAO has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaoIdParam(String);

plain_string_param!(DaoIdParam);

impl ParseFromParameter for DaoIdParam {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        Ok(Self(value.to_owned()))
    }
}

/// `webhookId` in a path: published as a plain string, exactly as before; any text parses.
/// [`WebhookIdParam::parse`] reads it once as a [`WebhookId`], or hands back the text, which
/// no webhook has: the handler
/// answers it 404 as it answers an id no webhook of the token has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookIdParam(String);

plain_string_param!(WebhookIdParam);

impl ParseFromParameter for WebhookIdParam {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        Ok(Self(value.to_owned()))
    }
}

impl WebhookIdParam {
    /// The webhook id, or the text when it is none.
    pub fn parse(&self) -> Result<WebhookId, &str> {
        WebhookId::parse(&self.0).ok_or(&self.0)
    }
}

impl DaoIdParam {
    /// The DAO id, in any letter case, or the text when it is none.
    pub fn parse(self) -> Result<DaoId, String> {
        DaoId::from_request(&self.0).ok_or(self.0)
    }

    /// The DAO id in its canonical form: another letter case of a slug is served under the
    /// lowercase slug (`Uniswap` → `uniswap`), the normalisation recorded. A text whose lowercase
    /// form is no slug is handed back as [`canonical_v1_value`] makes it.
    pub fn resolve_v1(self, req: &mut V1Request) -> Result<DaoId, String> {
        match DaoId::from_request(&self.0) {
            Some(id) => {
                record_v1_case(&self.0, &id, req);
                Ok(id)
            }
            None => Err(canonical_v1_value(DAO_ID_PARAM, &self.0, req)),
        }
    }
}

/// v1 records a DAO id written in another letter case as normalised, wherever it was read.
fn record_v1_case(received: &str, id: &DaoId, req: &mut V1Request) {
    if received != id.as_str() {
        req.adjust(DAO_ID_PARAM, received, id.as_str(), AdjustmentReason::Normalized);
    }
}

/// `daoId` in a query string: published as a plain string, exactly as before; any text parses.
/// The handler makes it a [`DaoScope`] once, with [`DaoFilter::resolve`] (an empty value is no
/// filter) or [`DaoFilter::resolve_keeping_empty`] (an empty value is a DAO no row has), as each
/// list has always read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaoFilter(String);

plain_string_param!(DaoFilter);

impl ParseFromParameter for DaoFilter {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        Ok(Self(value.to_owned()))
    }
}

impl DaoFilter {
    /// The scope of `param`, an empty value being no filter.
    pub fn resolve(param: Option<Self>) -> DaoScope {
        Self::resolve_keeping_empty(param.filter(|p| !p.0.is_empty()))
    }

    /// The scope of `param`, an empty value being a value no DAO has (it matches nothing).
    pub fn resolve_keeping_empty(param: Option<Self>) -> DaoScope {
        match param {
            None => DaoScope::Every,
            Some(Self(text)) => DaoId::from_request(&text).map_or(DaoScope::NoDao(text), DaoScope::Dao),
        }
    }

    /// v1's [`Self::resolve`], the filter recorded as applied (in its canonical form) and another
    /// letter case as normalised, as in a path.
    pub fn resolve_v1(param: Option<Self>, req: &mut V1Request) -> DaoScope {
        Self::resolve_keeping_empty_v1(param.filter(|p| !p.0.is_empty()), req)
    }

    /// v1's [`Self::resolve_keeping_empty`], recorded as [`Self::resolve_v1`] records it.
    pub fn resolve_keeping_empty_v1(param: Option<Self>, req: &mut V1Request) -> DaoScope {
        let received = param.as_ref().map(|p| p.0.clone());
        let scope = Self::resolve_keeping_empty(param);
        if let (Some(received), Some(id)) = (received, scope.dao()) {
            record_v1_case(&received, id, req);
        }
        if let Some(applied) = scope.received() {
            req.applied(DAO_ID_PARAM, applied);
        }
        scope
    }
}

/// What a `daoId` query filter asks for, parsed once at the handler's edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DaoScope {
    /// No filter: every DAO.
    Every,
    /// One DAO (which may be unknown: then it matches nothing).
    Dao(DaoId),
    /// A text that is no DAO id in any letter case (malformed, or empty where that is no
    /// absence): it matches nothing, and is echoed and bound into cursors as received.
    NoDao(String),
}

impl DaoScope {
    /// The DAO asked for, when the value is a DAO id.
    pub fn dao(&self) -> Option<&DaoId> {
        match self {
            Self::Dao(id) => Some(id),
            Self::Every | Self::NoDao(_) => None,
        }
    }

    /// What the store is asked for: `Some(None)` for every DAO, `Some(Some(id))` for one DAO,
    /// and `None` for a text that is no DAO id: no stored row names such a DAO, so the handler
    /// answers the empty result without asking the store.
    pub fn store_filter(&self) -> Option<Option<&DaoId>> {
        match self {
            Self::Every => Some(None),
            Self::Dao(id) => Some(Some(id)),
            Self::NoDao(_) => None,
        }
    }

    /// The value as received, when there is a filter: what is echoed, what a 404 names and what
    /// a cursor's query shape carries ([`Self::shape`]); never what the store is asked for
    /// ([`Self::store_filter`]).
    pub fn received(&self) -> Option<&str> {
        match self {
            Self::Every => None,
            Self::Dao(id) => Some(id.as_str()),
            Self::NoDao(text) => Some(text),
        }
    }

    /// The filter as a cursor's query shape carries it: the value, or empty when absent.
    pub fn shape(&self) -> String {
        self.received().unwrap_or_default().to_owned()
    }
}

/// `proposalKey` / `topicKey` in a path: any text parses (the document adds the key pattern);
/// [`KeyParam::parse`] makes it a `K`, or the VALIDATION_ERROR [`IssuedKey::parse`] answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyParam<K> {
    text: String,
    key: PhantomData<K>,
}

plain_string_param!(KeyParam<K: IssuedKey>);

impl<K: IssuedKey> ParseFromParameter for KeyParam<K> {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        Ok(Self { text: value.to_owned(), key: PhantomData })
    }
}

impl<K: IssuedKey> KeyParam<K> {
    pub fn parse(&self) -> Result<K, Problem> {
        K::parse(&self.text)
    }
}

/// v1 `since_ms` of a feed that reaches at most `window` back from `end_ms` (the newest data): an
/// absent `since_ms` starts at that floor, an earlier one is moved up to it and the adjustment
/// recorded; the applied value is echoed either way.
pub fn resolve_v1_since(name: &str, since: Option<i64>, end_ms: i64, window: Window, req: &mut V1Request) -> i64 {
    let floor = end_ms.saturating_sub(window.max_ms());
    let applied = match since {
        Some(received) if received < floor => {
            req.adjust(name, received, floor, AdjustmentReason::WindowClampedToMax);
            floor
        }
        Some(received) => received,
        None => floor,
    };
    req.applied(name, applied);
    applied
}

/// v2 `since` of a feed that reaches at most `window` back from `end_ms` (the newest data): an
/// absent `since` is that floor; an earlier one is a VALIDATION_ERROR (v2 rejects, never clamps).
pub fn resolve_v2_since(
    since: Option<V2Timestamp>,
    end_ms: i64,
    window: Window,
) -> Result<i64, super::errors::Problem> {
    use super::errors::{FieldError, ParamLocation, Problem};
    let floor = end_ms.saturating_sub(window.max_ms());
    match since {
        None => Ok(floor),
        Some(V2Timestamp(since)) if since >= floor => Ok(since),
        Some(V2Timestamp(since)) => Err(Problem::validation(FieldError {
            location: ParamLocation::Query,
            name: "since".to_owned(),
            reason: format!("is more than {} days before the newest data", window.max_days),
            expected: Some(format!("at or after {}", super::time::rfc3339_ms(floor))),
            received: Some(super::time::rfc3339_ms(since)),
        })),
    }
}

/// v2 `from` / `to`: an RFC 3339 timestamp with any offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V2Timestamp(pub i64);

impl Type for V2Timestamp {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> Cow<'static, str> {
        "v2_timestamp".into()
    }

    fn schema_ref() -> MetaSchemaRef {
        let mut s = MetaSchema::new_with_format("string", "date-time");
        s.description = Some("RFC 3339 timestamp, any offset (`2026-01-01T00:00:00Z`).");
        s.example = Some("2026-01-01T00:00:00Z".into());
        MetaSchemaRef::Inline(Box::new(s))
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        Box::new(self.as_raw_value().into_iter())
    }
}

impl ParseFromParameter for V2Timestamp {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        super::time::parse_rfc3339_ms(value)
            .map(Self)
            .ok_or_else(|| ParseError::custom(format!("`{value}` is not an RFC 3339 timestamp")))
    }
}

/// The v2 window `[from, to]` in epoch ms: both bounds optional; one alone is completed to the
/// longest window allowed; longer than `window`, or `from` after `to` → VALIDATION_ERROR.
pub fn resolve_v2_window(
    from: Option<V2Timestamp>,
    to: Option<V2Timestamp>,
    window: Window,
) -> Result<Option<(i64, i64)>, super::errors::Problem> {
    use super::errors::{FieldError, ParamLocation, Problem};
    let (from, to) = match (from, to) {
        (None, None) => return Ok(None),
        (Some(f), None) => (f.0, f.0.saturating_add(window.max_ms())),
        (None, Some(t)) => (t.0.saturating_sub(window.max_ms()), t.0),
        (Some(f), Some(t)) => (f.0, t.0),
    };
    let error = |reason: String| {
        Problem::validation(FieldError {
            location: ParamLocation::Query,
            name: "to".to_owned(),
            reason,
            expected: Some(format!("`from` ≤ `to` ≤ `from` + {} days", window.max_days)),
            received: Some(super::time::rfc3339_ms(to)),
        })
    };
    if from > to {
        return Err(error("is before `from`".to_owned()));
    }
    if to - from > window.max_ms() {
        return Err(error(format!("makes a window longer than {} days", window.max_days)));
    }
    Ok(Some((from, to)))
}

/// v2 `limit`: `1..=max`, anything else is VALIDATION_ERROR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V2Limit<L> {
    pub value: u32,
    size: PhantomData<L>,
}

integer_param_type!(V2Limit<L>, format!("v2_limit_{}", L::NAME), {
    let size = L::SIZE;
    let mut s = MetaSchema::new_with_format("integer", "int32");
    s.default = Some(size.default.into());
    s.minimum = Some(1.0);
    s.maximum = Some(f64::from(size.max));
    s.description = Some(intern(format!("Rows per page, 1 to {}; {} by default.", size.max, size.default)));
    s
});

impl<L: PageSizeDecl> ParseFromParameter for V2Limit<L> {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        let max = L::SIZE.max;
        let n = parse_saturating(value).map_err(ParseError::custom)?;
        if n < 1 || n > i64::from(max) {
            return Err(ParseError::custom(format!("must be between 1 and {max}")));
        }
        Ok(Self { value: n as u32, size: PhantomData })
    }
}

impl<L: PageSizeDecl> V2Limit<L> {
    pub fn resolve(param: Option<Self>) -> u32 {
        param.map_or(L::SIZE.default, |p| p.value)
    }
}

/// The members of a comma-separated list parameter (an array sent `explode: false`; poem-openapi
/// hands it over split at its commas): an empty member is none (so every form a client may
/// serialise an empty list in is accepted), each member is read by `read`, a repeat is dropped,
/// and more than `max` is refused.
fn list_members<T: PartialEq, I: IntoIterator<Item = A>, A: AsRef<str>>(
    iter: I,
    max: usize,
    read: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    let mut out = Vec::new();
    for member in iter {
        let member = member.as_ref().trim();
        if member.is_empty() {
            continue;
        }
        let value = read(member)?;
        if !out.contains(&value) {
            out.push(value);
        }
    }
    if out.len() > max {
        return Err(format!("names {} values; at most {max}", out.len()));
    }
    Ok(out)
}

/// The published schema of a list parameter: strings of `pattern`, at most `max`.
fn list_schema(pattern: String, max: usize) -> MetaSchemaRef {
    let item = MetaSchema { pattern: Some(pattern), ..MetaSchema::new("string") };
    MetaSchemaRef::Inline(Box::new(MetaSchema {
        items: Some(Box::new(MetaSchemaRef::Inline(Box::new(item)))),
        max_items: Some(max),
        ..MetaSchema::new("array")
    }))
}

macro_rules! list_param_type {
    ($ty:ident, $name:expr, $schema:expr, $text:expr) => {
        impl Type for $ty {
            const IS_REQUIRED: bool = true;
            type RawValueType = Self;
            type RawElementValueType = Self;

            fn name() -> Cow<'static, str> {
                Cow::Borrowed($name)
            }

            fn schema_ref() -> MetaSchemaRef {
                $schema
            }

            fn as_raw_value(&self) -> Option<&Self::RawValueType> {
                Some(self)
            }

            fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
                Box::new(self.as_raw_value().into_iter())
            }

            fn is_empty(&self) -> bool {
                self.0.is_empty()
            }
        }

        /// The document's `default` (`[]`).
        impl poem_openapi::types::ToJSON for $ty {
            fn to_json(&self) -> Option<serde_json::Value> {
                let text: fn(&_) -> String = $text;
                Some(serde_json::Value::Array(self.0.iter().map(|v| serde_json::Value::String(text(v))).collect()))
            }
        }
    };
}

/// `proposalKeys` in a query string: proposal keys (`proposalKey`), comma-separated, at most
/// [`MAX_PROPOSAL_KEYS`], each checked as a key this API issues.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProposalKeys(pub Vec<ProposalKey>);

list_param_type!(
    ProposalKeys,
    "proposal_keys",
    list_schema(ids::key_pattern(KeyKind::Proposal), MAX_PROPOSAL_KEYS),
    |k: &ProposalKey| k.as_str().to_owned()
);

impl ParseFromParameter for ProposalKeys {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        Self::parse_from_parameters(value.split(','))
    }

    fn parse_from_parameters<I: IntoIterator<Item = A>, A: AsRef<str>>(iter: I) -> ParseResult<Self> {
        list_members(iter, MAX_PROPOSAL_KEYS, |member| {
            ProposalKey::parse(member).map_err(|_| {
                format!("`{member}` is not a proposal key: `p_` and 22 URL-safe characters, a `proposalKey` as served")
            })
        })
        .map(Self)
        .map_err(ParseError::custom)
    }
}

/// `voters` in a query string: voters or delegates, comma-separated, at most [`MAX_VOTERS`], each
/// as `voterIdentity` takes one (a 0x address in any letter case, a CAIP-10 account, an ENS name);
/// the handler resolves ENS names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VoterIdentities(pub Vec<VoterIdentity>);

list_param_type!(
    VoterIdentities,
    "voter_identities",
    list_schema(ids::VOTER_IDENTITY_PATTERN.to_owned(), MAX_VOTERS),
    |v: &VoterIdentity| match v {
        VoterIdentity::Address(a) => a.clone(),
        VoterIdentity::Ens(name) => name.clone(),
    }
);

impl ParseFromParameter for VoterIdentities {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        Self::parse_from_parameters(value.split(','))
    }

    fn parse_from_parameters<I: IntoIterator<Item = A>, A: AsRef<str>>(iter: I) -> ParseResult<Self> {
        list_members(iter, MAX_VOTERS, |member| {
            ids::parse_voter_identity(member, "voters", ParamLocation::Query).map_err(|problem| {
                let why = problem.errors.as_deref().and_then(<[_]>::first);
                let reason = why.map_or("is not a voter identity", |e| e.reason.as_str());
                let expected = why.and_then(|e| e.expected.as_deref()).unwrap_or("a 0x address");
                format!("`{member}` {reason}; expected {expected}")
            })
        })
        .map(Self)
        .map_err(ParseError::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::limits::MostLists;

    #[test]
    fn v1_limit_parses_any_int64() {
        assert_eq!(V1Limit::<MostLists>::parse_from_parameter("5000").unwrap().received, 5000);
        assert_eq!(V1Limit::<MostLists>::parse_from_parameter("-3").unwrap().received, -3);
        assert_eq!(V1Limit::<MostLists>::parse_from_parameter("9223372036854775807").unwrap().received, i64::MAX);
        // Published as int64: beyond it, a clamp could not say what was received.
        let beyond = V1Limit::<MostLists>::parse_from_parameter("99999999999999999999999").unwrap_err();
        assert!(beyond.into_message().contains("beyond the int64 range"));
        assert!(V1Offset::parse_from_parameter("-9223372036854775809").is_err());
        assert!(V1Limit::<MostLists>::parse_from_parameter("ten").is_err());
        assert!(V1Limit::<MostLists>::parse_from_parameter("1.5").is_err());
        assert!(V1Limit::<MostLists>::parse_from_parameter("").is_err());
    }

    #[test]
    fn v2_limit_rejects_out_of_range() {
        assert_eq!(V2Limit::<MostLists>::parse_from_parameter("100").unwrap().value, 100);
        assert!(V2Limit::<MostLists>::parse_from_parameter("101").is_err());
        assert!(V2Limit::<MostLists>::parse_from_parameter("0").is_err());
    }

    #[test]
    fn v2_since_reaches_exactly_the_window_back() {
        let window = crate::contract::limits::EVENTS_AND_SIGNALS_WINDOW;
        let end = 1_774_483_200_000;
        let floor = end - window.max_ms();
        assert_eq!(resolve_v2_since(None, end, window).unwrap(), floor);
        assert_eq!(resolve_v2_since(Some(V2Timestamp(floor)), end, window).unwrap(), floor);
        let refused = resolve_v2_since(Some(V2Timestamp(floor - 1)), end, window).unwrap_err();
        assert_eq!(refused.errors.unwrap()[0].name, "since");
        assert_eq!(resolve_v2_since(Some(V2Timestamp(end + 1)), end, window).unwrap(), end + 1);
    }

    #[test]
    fn dao_filter_scopes() {
        let p = |s: &str| Some(DaoFilter::parse_from_parameter(s).unwrap());
        assert_eq!(DaoFilter::resolve(None), DaoScope::Every);
        assert_eq!(DaoFilter::resolve(p("")), DaoScope::Every);
        assert_eq!(DaoFilter::resolve_keeping_empty(p("")), DaoScope::NoDao(String::new()));
        assert_eq!(DaoFilter::resolve(p("uniswap")).dao().map(DaoId::as_str), Some("uniswap"));
        // Another letter case names the same DAO, and is bound into cursors in its canonical form.
        let upper = DaoFilter::resolve(p("Uniswap"));
        assert_eq!((upper.dao().map(DaoId::as_str), upper.shape()), (Some("uniswap"), "uniswap".to_owned()));
        let bad = DaoFilter::resolve(p("no.such"));
        assert_eq!(bad, DaoScope::NoDao("no.such".to_owned()));
        assert_eq!((bad.dao(), bad.received(), bad.shape()), (None, Some("no.such"), "no.such".to_owned()));
        assert_eq!(DaoScope::Every.shape(), "");
        assert_eq!(bad.store_filter(), None, "a text that is no DAO id is never sent to the store");
        assert_eq!(DaoScope::Every.store_filter(), Some(None));
        assert_eq!(DaoFilter::resolve(p("uniswap")).store_filter().flatten().map(DaoId::as_str), Some("uniswap"));
    }

    #[test]
    fn target_lists_read_each_member_and_refuse_a_bad_one_by_its_text() {
        let key = "p_Qm1x2y3z4a5b6c7d8e9f0g";
        let keys = |members: &[&str]| ProposalKeys::parse_from_parameters(members.iter()).map(|k| k.0);
        assert_eq!(keys(&[""]).unwrap(), vec![]);
        assert_eq!(keys(&[key, " ", key]).unwrap().iter().map(|k| k.as_str()).collect::<Vec<_>>(), [key]);
        let err = keys(&[key, "t_Qm1x2y3z4a5b6c7d8e9f0g"]).unwrap_err().into_message();
        assert!(err.contains("`t_Qm1x2y3z4a5b6c7d8e9f0g` is not a proposal key"), "{err}");
        let voters = |members: &[&str]| VoterIdentities::parse_from_parameters(members.iter()).map(|v| v.0);
        let lower = "0x683a4f9915d6216f73d6df50151725036bd26c02";
        assert_eq!(
            voters(&["0x683A4F9915D6216F73D6DF50151725036BD26C02", &format!("eip155:1:{lower}"), "Pgov.ETH"]).unwrap(),
            vec![VoterIdentity::Address(lower.to_owned()), VoterIdentity::Ens("pgov.eth".to_owned())],
            "one address in two spellings is one voter"
        );
        let err = voters(&[lower, "0x123"]).unwrap_err().into_message();
        assert!(err.contains("`0x123` is not a voter identity; expected a 0x address"), "{err}");
        let many: Vec<String> = (0..=MAX_VOTERS).map(|i| format!("0x{i:040x}")).collect();
        let err = VoterIdentities::parse_from_parameters(many.iter()).unwrap_err().into_message();
        assert!(err.contains(&format!("at most {MAX_VOTERS}")), "{err}");
    }

    #[test]
    fn a_webhook_id_is_read_once_and_never_refused() {
        let read = |text: &str| WebhookIdParam::parse_from_parameter(text).expect("any text parses");
        assert_eq!(
            read("wh_3f9a1c0b7e5d2a846c1f").parse().map(|id| id.as_str().to_owned()),
            Ok("wh_3f9a1c0b7e5d2a846c1f".to_owned())
        );
        for other in ["nope", "wh_", "wh_3F9A1C0B7E5D2A846C1F", "wh_3f9a1c0b7e5d2a846c1f0", "whsec_x"] {
            assert_eq!(read(other).parse().err(), Some(other));
        }
    }
}
