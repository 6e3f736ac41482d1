//! How every row that names a voter names it: the canonical `voterIdentity`, the display
//! `address` and the ENS name when the store knows it, under the same names and with the same
//! meaning on both surfaces. The rows flatten [`VoterNames`] in (`#[oai(flatten)]`).
//!
//! The ENS names of an answer's voters are read at once ([`KnownVoters::load`], one `IN` query
//! through `store::voters::ens_names`), never once per row.
use std::collections::HashMap;

use poem_openapi::Object;
use sea_orm::{ConnectionTrait, DbErr};

use crate::store::{self, address};

/// A voter's names, as every row that names a voter carries them.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct VoterNames {
    /// The voter's canonical handle: the lowercase 0x address (20-byte EVM, or 32-byte Starknet as
    /// Snapshot records them). Every `voterIdentity` parameter accepts it.
    pub voter_identity: String,
    /// The address for display: EIP-55 checksummed for a 20-byte address; a 32-byte (Starknet)
    /// address has no checksummed form and is lowercase.
    pub address: String,
    /// The voter's ENS name, when the store knows it; absent otherwise.
    pub ens: Option<String>,
}

impl VoterNames {
    /// The names of the voter whose canonical (lowercase) address is `lower`.
    pub fn new(lower: String, ens: Option<String>) -> Self {
        Self { address: address::display(&lower), voter_identity: lower, ens }
    }

    /// The names of the voter `lower` as the store holds them (display form, ENS name), read
    /// beside the row (`store::voters::names_sql`); without them, made as [`Self::new`] makes them.
    pub fn stored(lower: String, names: Option<store::voters::StoredNames>) -> Self {
        match names {
            Some(store::voters::StoredNames { display, ens }) => Self { voter_identity: lower, address: display, ens },
            None => Self::new(lower, None),
        }
    }
}

/// Votes cast ÷ the DAO's proposals held here (none known: 0), exact to the share decimals: the
/// participation rate of every ranking and profile.
pub fn participation_rate(votes: i64, proposals: Option<i64>) -> String {
    let whole = bigdecimal::BigDecimal::from(proposals.unwrap_or(0));
    crate::rules::tally::share(&bigdecimal::BigDecimal::from(votes), &whole)
}

/// The ENS names of one answer's voters, read at once, by canonical address.
#[derive(Debug, Clone, Default)]
pub struct KnownVoters(HashMap<String, String>);

impl KnownVoters {
    /// The stored voters among `voters` (canonical lowercase addresses): one query, none for an
    /// empty list.
    pub async fn load(db: &impl ConnectionTrait, voters: impl IntoIterator<Item = String>) -> Result<Self, DbErr> {
        Ok(Self(store::voters::ens_names(db, voters).await?))
    }

    /// The names of the voter `lower`, with the ENS name the store knows, if any.
    pub fn names(&self, lower: &str) -> VoterNames {
        VoterNames::new(lower.to_owned(), self.0.get(lower).cloned())
    }
}

impl From<HashMap<String, String>> for KnownVoters {
    fn from(voters: HashMap<String, String>) -> Self {
        Self(voters)
    }
}

#[cfg(test)]
mod tests {
    use poem_openapi::types::ToJSON;
    use serde_json::json;

    use super::*;

    #[test]
    fn names_are_canonical_checksummed_and_ens_only_when_known() {
        let lower = "0x683a4f9915d6216f73d6df50151725036bd26c02";
        let known = KnownVoters::from(HashMap::from([(lower.to_owned(), "gauntletgov.eth".to_owned())]));
        assert_eq!(
            known.names(lower).to_json(),
            Some(json!({
                "voterIdentity": lower,
                "address": "0x683a4F9915D6216f73d6Df50151725036bD26C02",
                "ens": "gauntletgov.eth",
            }))
        );
        let stark = format!("0x{}", "ab".repeat(32));
        assert_eq!(
            known.names(&stark).to_json(),
            Some(json!({"voterIdentity": stark, "address": stark})),
            "unknown: no ens member; 32 bytes: lowercase"
        );
    }
}
