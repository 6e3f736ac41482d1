//! Opaque public keys for rows whose natural key is long or source-specific.
//!
//! A key is derived from the natural key alone, so every store (SQLite or PostgreSQL, fresh or
//! re-imported) gives a record the same key, and clients cannot read structure into it.
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::contract::vocabulary::{KeyKind, SourceKind};

/// The public key of a proposal: `p_` + 22 URL-safe characters.
pub fn proposal_key(dao_id: &str, source: &str, external_id: &str) -> String {
    derive(KeyKind::Proposal, &[dao_id, source, external_id])
}

/// The public key of a forum topic: `t_` + 22 URL-safe characters.
pub fn topic_key(dao_id: &str, external_id: &str) -> String {
    derive(KeyKind::Topic, &[dao_id, SourceKind::Discourse.as_str(), external_id])
}

/// The public id of a governance event (`ev_` + 22 URL-safe characters), derived from its
/// natural key: the same event has the same id after a re-import, on another store and on
/// either backend, unlike its row id.
pub fn event_id(natural_key: &str) -> String {
    derive(KeyKind::Event, &[natural_key])
}

/// The public id of a signal (`sg_` + 22 URL-safe characters), derived from its natural key.
pub fn signal_id(natural_key: &str) -> String {
    derive(KeyKind::Signal, &[natural_key])
}

/// The public id of a delegation change (`dl_` + 22 URL-safe characters), from its place on
/// chain: its DAO, block and log index.
pub fn delegation_id(dao_id: &str, block_number: i64, log_index: i64) -> String {
    derive(KeyKind::Delegation, &[dao_id, &block_number.to_string(), &log_index.to_string()])
}

/// `prefix` + base64url (no padding) of the first 16 bytes of SHA-256 over the parts.
/// Parts are joined with the ASCII unit separator, which none of them contains, so
/// ("a", "bc") and ("ab", "c") cannot collide.
fn derive(kind: KeyKind, parts: &[&str]) -> String {
    let digest = Sha256::digest(parts.join("\u{1f}").as_bytes());
    format!("{}{}", kind.as_str(), URL_SAFE_NO_PAD.encode(&digest[..16]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_opaque_and_url_safe() {
        let a = proposal_key("uniswap", "snapshot", "0xabc");
        assert_eq!(a, proposal_key("uniswap", "snapshot", "0xabc"));
        assert_ne!(a, proposal_key("uniswap", "onchain", "0xabc"));
        assert_ne!(proposal_key("a", "bc", "x"), proposal_key("ab", "c", "x"));
        assert_eq!(a.len(), 2 + 22);
        assert!(a.starts_with("p_"));
        assert!(a[2..].bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert!(topic_key("uniswap", "123").starts_with("t_"));
    }

    #[test]
    fn public_ids_follow_the_natural_key() {
        let key = "arbitrum:snapshot:0xab:vote_cast:0xcd";
        assert_eq!(event_id(key), event_id(key));
        assert_eq!(event_id(key).len(), 3 + 22);
        assert!(event_id(key).starts_with("ev_") && signal_id(key).starts_with("sg_"));
        assert_ne!(event_id(key), event_id("arbitrum:snapshot:0xab:vote_cast:0xce"));
        // Pinned: a stored event keeps this id for as long as its natural key is this.
        assert_eq!(event_id(key), "ev_ICxhpehna15jV_wAeK291g");
    }
}
