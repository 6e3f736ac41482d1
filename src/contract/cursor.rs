//! Opaque v2 cursors: URL-safe, at most 512 bytes, signed with HMAC-SHA-256 by the server,
//! carrying a format version, the data revision the page was read under, a fingerprint of the
//! query (endpoint, filters, limit, sort) and the keyset position. Anything else is
//! `INVALID_CURSOR`: the client restarts from the first page.
//!
//! The revision is the one that last changed the DAO the query is about (its `daoId` filter,
//! the DAO of its path or of its proposal), or the serving revision for a query over every DAO
//! (`edge::serving::Serving::revision_of`): a publication that touches only DAO X leaves cursors
//! paging DAO Y valid, and a run that publishes nothing leaves every cursor valid.
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::errors::{ErrorCode, FieldError, ParamLocation, Problem};

/// Format version; a cursor of another version is refused.
const VERSION: u8 = 1;
/// Bytes of the HMAC kept in the cursor (128 bits).
const MAC_BYTES: usize = 16;
/// Upper bound of an encoded cursor, as published.
pub const MAX_CURSOR_BYTES: usize = 512;
/// The public name of the parameter.
pub const CURSOR_PARAM: &str = "cursor";
/// What an issued cursor looks like (base64url without padding), as a published pattern.
pub const CURSOR_PATTERN: &str = "^[A-Za-z0-9_-]+$";

/// What a query is: a cursor only continues the query it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryShape<'a> {
    pub endpoint: &'a str,
    /// Filters and sort, in a fixed order, absent ones as empty strings.
    pub filters: Vec<(&'a str, String)>,
    pub limit: u32,
}

impl QueryShape<'_> {
    fn fingerprint(&self) -> [u8; 16] {
        let mut h = Sha256::new();
        h.update(self.endpoint.as_bytes());
        for (k, v) in &self.filters {
            h.update([0]);
            h.update(k.as_bytes());
            h.update([0x1f]);
            h.update(v.as_bytes());
        }
        h.update([0]);
        h.update(self.limit.to_be_bytes());
        let digest = h.finalize();
        let mut out = [0u8; 16];
        out.copy_from_slice(&digest[..16]);
        out
    }
}

#[derive(Serialize, Deserialize)]
struct Payload {
    v: u8,
    /// The revision the page was read under (see the module documentation).
    r: i64,
    /// Query fingerprint, base64url.
    q: String,
    /// Keyset position: the sort key values of the last row served.
    p: Vec<String>,
}

/// Where a list resumes: the sort key values of the last row served, typed. Each v2 list owns
/// one (in the store, which reads it off a row and seeks from it); a cursor carries it as text,
/// written and read only here, by [`CursorCodec`].
pub trait Keyset: Sized {
    /// What reading a position needs besides its values: the list's order when its orders have
    /// positions of different shapes, `()` otherwise.
    type Order: Copy;
    /// The position's values, as the cursor carries them.
    fn values(&self) -> Vec<String>;
    /// The position `values` stand for in `order`; `None` when they stand for none.
    fn read(values: &[String], order: Self::Order) -> Option<Self>;
}

/// Signs and checks cursors with one secret.
#[derive(Clone)]
pub struct CursorCodec {
    secret: Vec<u8>,
}

impl std::fmt::Debug for CursorCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorCodec(..)")
    }
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

impl CursorCodec {
    pub fn new(secret: &[u8]) -> Self {
        Self { secret: secret.to_vec() }
    }

    fn mac(&self, bytes: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.secret).expect("HMAC takes any key length");
        mac.update(bytes);
        mac
    }

    /// A tag over `text` for `purpose` (hex), with the same secret as cursors: what the service
    /// hands out and must recognise later (an export grant), shared by every process on the
    /// store. The purpose keeps a tag of one kind from passing for another.
    pub fn tag(&self, purpose: &str, text: &str) -> String {
        let mut bytes = Vec::with_capacity(purpose.len() + 1 + text.len());
        bytes.extend_from_slice(purpose.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(text.as_bytes());
        hex::encode(&self.mac(&bytes).finalize().into_bytes()[..MAC_BYTES])
    }

    /// Whether `tag` is [`Self::tag`] of `purpose` and `text` (compared in constant time).
    pub fn tag_matches(&self, purpose: &str, text: &str, tag: &str) -> bool {
        let Ok(sent) = hex::decode(tag) else { return false };
        let mut bytes = Vec::with_capacity(purpose.len() + 1 + text.len());
        bytes.extend_from_slice(purpose.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(text.as_bytes());
        self.mac(&bytes).verify_truncated_left(&sent).is_ok() && sent.len() == MAC_BYTES
    }

    /// The cursor continuing `shape` after `position`, issued under `revision`.
    pub fn encode(&self, shape: &QueryShape<'_>, revision: i64, position: &impl Keyset) -> String {
        let payload = Payload { v: VERSION, r: revision, q: b64().encode(shape.fingerprint()), p: position.values() };
        let mut bytes = serde_json::to_vec(&payload).expect("a cursor payload serialises");
        let tag = self.mac(&bytes).finalize().into_bytes();
        bytes.extend_from_slice(&tag[..MAC_BYTES]);
        let cursor = b64().encode(bytes);
        debug_assert!(cursor.len() <= MAX_CURSOR_BYTES, "cursor of {} bytes", cursor.len());
        cursor
    }

    /// The keyset position of `cursor` in `order`, if it was issued by us, for this very query,
    /// under the serving revision.
    pub fn decode<K: Keyset>(
        &self,
        cursor: &str,
        shape: &QueryShape<'_>,
        revision: i64,
        order: K::Order,
    ) -> Result<K, Problem> {
        let invalid = |reason: &str| invalid_cursor(cursor, reason);
        if cursor.len() > MAX_CURSOR_BYTES {
            return Err(invalid("the cursor is longer than any cursor this API issues"));
        }
        let bytes = b64().decode(cursor).map_err(|_| invalid("the cursor is not one this API issued"))?;
        if bytes.len() <= MAC_BYTES {
            return Err(invalid("the cursor is not one this API issued"));
        }
        let (body, tag) = bytes.split_at(bytes.len() - MAC_BYTES);
        self.mac(body).verify_truncated_left(tag).map_err(|_| invalid("the cursor's signature does not match"))?;
        let payload: Payload =
            serde_json::from_slice(body).map_err(|_| invalid("the cursor is not one this API issued"))?;
        if payload.v != VERSION {
            return Err(invalid("the cursor has an older format"));
        }
        if payload.q != b64().encode(shape.fingerprint()) {
            return Err(invalid("the cursor belongs to another endpoint, filter, sort or limit"));
        }
        if payload.r != revision {
            return Err(invalid("the data was republished since the cursor was issued"));
        }
        // A cursor that verified but whose position this list cannot read: a defect or an old format.
        K::read(&payload.p, order).ok_or_else(|| invalid("the cursor's position is unreadable"))
    }
}

fn invalid_cursor(cursor: &str, reason: &str) -> Problem {
    let mut p =
        Problem::new(ErrorCode::InvalidCursor, format!("{reason}; restart from the first page without `cursor`."));
    p.errors = Some(vec![FieldError {
        location: ParamLocation::Query,
        name: CURSOR_PARAM.to_owned(),
        reason: reason.to_owned(),
        expected: Some("a `meta.page.nextCursor` of the same query, unchanged".to_owned()),
        received: Some(cursor.chars().take(MAX_CURSOR_BYTES).collect()),
    }]);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A position as plain text.
    #[derive(Debug, PartialEq)]
    struct Texts(Vec<String>);

    impl Keyset for Texts {
        type Order = ();
        fn values(&self) -> Vec<String> {
            self.0.clone()
        }
        fn read(values: &[String], (): ()) -> Option<Self> {
            Some(Self(values.to_vec()))
        }
    }

    fn texts(values: &[&str]) -> Texts {
        Texts(values.iter().map(|v| (*v).to_owned()).collect())
    }

    fn shape(limit: u32, dao: &str) -> QueryShape<'static> {
        QueryShape { endpoint: "daos_list", filters: vec![("daoId", dao.to_owned())], limit }
    }

    #[test]
    fn round_trips_and_refuses_everything_else() {
        let codec = CursorCodec::new(b"secret");
        let c = codec.encode(&shape(25, ""), 7, &texts(&["arbitrum"]));
        assert!(c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "URL-safe: {c}");
        assert_eq!(codec.decode::<Texts>(&c, &shape(25, ""), 7, ()).unwrap(), texts(&["arbitrum"]));
        let code = |r: Result<Texts, Problem>| r.unwrap_err().code;
        assert_eq!(code(codec.decode(&c, &shape(26, ""), 7, ())), ErrorCode::InvalidCursor, "another limit");
        assert_eq!(code(codec.decode(&c, &shape(25, "lido"), 7, ())), ErrorCode::InvalidCursor, "another filter");
        assert_eq!(code(codec.decode(&c, &shape(25, ""), 8, ())), ErrorCode::InvalidCursor, "republished");
        let forged = CursorCodec::new(b"other").decode(&c, &shape(25, ""), 7, ());
        assert_eq!(code(forged), ErrorCode::InvalidCursor, "forged");
        let other_endpoint = QueryShape { endpoint: "voters_list", ..shape(25, "") };
        assert_eq!(code(codec.decode(&c, &other_endpoint, 7, ())), ErrorCode::InvalidCursor);
        for i in 0..c.len() {
            let mut bytes = c.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let flipped = String::from_utf8(bytes).unwrap();
            if flipped != c {
                assert!(codec.decode::<Texts>(&flipped, &shape(25, ""), 7, ()).is_err(), "flipped byte {i}");
            }
        }
        for junk in ["", "!!!", "AAAA", &"A".repeat(600)] {
            assert!(codec.decode::<Texts>(junk, &shape(25, ""), 7, ()).is_err(), "{junk:?}");
        }
    }

    #[test]
    fn a_long_position_stays_under_the_bound() {
        let codec = CursorCodec::new(&[7u8; 32]);
        let key = "9".repeat(78) + "." + &"9".repeat(30);
        let c = codec.encode(&shape(100, "arbitrum"), i64::MAX, &Texts(vec![key, format!("0x{}", "a".repeat(64))]));
        assert!(c.len() <= MAX_CURSOR_BYTES, "{}", c.len());
    }
}
