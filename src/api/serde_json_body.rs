//! A JSON answer written straight from its serde form, for the pages served hottest.
//!
//! poem-openapi's `Json<T>` answers with `T::to_json()`: a `serde_json::Value` of the whole
//! answer (a map per object, a `String` per key), written out and then dropped. On a page of 100
//! votes that tree cost 17.6 % of the request's instructions (`scripts/costs`,
//! `votes_page_uncached`; 12.6 % of a release build's CPU under load, docs/benchmarks.md). A
//! [`SerdeJson<T>`] is documented exactly as `Json<T>` is (the same schema, media type and
//! status), and written by `T`'s `Serialize`, with no tree in between.
//!
//! A type answered this way implements `Serialize` beside its `Object` derive, writing the same
//! members under the same names, `None`s left out. The documented form writes each object's
//! members in sorted order (serde_json's map is ordered by key in this build), and the response
//! cache relies on it (`edge::cache`'s stamps are found by the freshness object's sorted
//! members), so the serde form must too: serde's derive writes declaration order, and declaring
//! the fields sorted would reorder the documents' `required` lists. So these `Serialize`s are
//! written by hand, each a list of its members in sorted order, and [`same_as_documented`] checks
//! each against the documented bytes in its tests (the HTTP suite's snapshots then see the served
//! bytes).
use poem::{IntoResponse, Response};
use poem_openapi::{
    ApiResponse,
    payload::{Json, Payload},
    registry::{MetaResponses, Registry},
    types::{ToJSON, Type},
};
use serde::Serialize;

/// A JSON answer documented as `Json<T>` and written from `T`'s `Serialize`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SerdeJson<T>(pub T);

impl<T: ToJSON + Serialize + Send> IntoResponse for SerdeJson<T> {
    fn into_response(self) -> Response {
        match serde_json::to_vec(&self.0) {
            Ok(body) => Response::builder().content_type(<Json<T> as Payload>::CONTENT_TYPE).body(body),
            // `Serialize` derived over strings, integers, booleans and structs cannot fail; were
            // one to, the answer is still written, the documented way.
            Err(_) => Json(self.0).into_response(),
        }
    }
}

impl<T: ToJSON + Serialize + Send> ApiResponse for SerdeJson<T> {
    fn meta() -> MetaResponses {
        Json::<T>::meta()
    }

    fn register(registry: &mut Registry) {
        <Json<T> as ApiResponse>::register(registry);
    }
}

impl<T: Type> SerdeJson<T> {
    /// The answer `json` carries, written this way instead.
    pub fn from_json(json: Json<T>) -> Self {
        Self(json.0)
    }
}

/// Whether `value`'s serde form is the bytes its documented (`ToJSON`) form writes: the check
/// every type answered through [`SerdeJson`] passes in its tests.
pub fn same_as_documented<T: ToJSON + Serialize>(value: &T) -> Result<(), String> {
    let written = serde_json::to_string(value).map_err(|e| e.to_string())?;
    let documented = serde_json::to_string(&value.to_json()).map_err(|e| e.to_string())?;
    if written == documented {
        Ok(())
    } else {
        Err(format!("serde writes\n  {written}\nwhere the documented form is\n  {documented}"))
    }
}
