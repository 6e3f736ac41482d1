//! The closed sets of values the data is made of, declared once: where a record comes from,
//! what an item is, the states a proposal passes through, how an ingestion run stands and what
//! started it, the prefixes of the opaque keys, and what a DAO id may look like.
//!
//! Each value is stored and served as its text ([`SourceKind::as_str`] and the like) and read
//! back with `parse`, which refuses text it does not know: a stored value the code does not
//! know is an error, never silently another value. The store reads every such column as its
//! enum (`store::stored`), so a row is parsed once, when it is read. The enums the documents show derive
//! poem-openapi's `Enum` as well; a test holds their document text equal to `as_str`.
use std::fmt;

use poem_openapi::Enum;

/// Stored text that is not one of a vocabulary's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a known {vocabulary}")]
pub struct UnknownValue {
    pub vocabulary: &'static str,
    pub text: String,
}

macro_rules! vocabulary {
    ($(#[$meta:meta])* $name:ident ($what:literal) { $($(#[doc = $vdoc:literal])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[doc = $vdoc])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// Every value's text with its description (the variant's doc comment, its lines
            /// joined), in declaration order: what a document lists for an open vocabulary.
            pub fn described() -> Vec<(&'static str, String)> {
                let doc = |lines: &[&str]| lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
                vec![$(($text, doc(&[$($vdoc),*]))),+]
            }

            /// The text the value is stored and served as.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }

            /// Every value's text, as a problem body's `expected` lists them: `a | b`.
            pub fn choices() -> String {
                Self::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(" | ")
            }

            /// The value `text` names; unknown text is an error.
            pub fn parse(text: &str) -> Result<Self, $crate::contract::vocabulary::UnknownValue> {
                match text {
                    $($text => Ok(Self::$variant),)+
                    _ => Err($crate::contract::vocabulary::UnknownValue { vocabulary: $what, text: text.to_owned() }),
                }
            }
        }

        // Records that travel as JSON (staged ingestion records) carry the value as its text.
        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(d)?;
                Self::parse(&text).map_err(::serde::de::Error::custom)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// The declaration of a closed set (also used by `contract::events` and `contract::signals`);
/// `store::stored` makes each one a string-valued column type.
pub(crate) use vocabulary;

vocabulary! {
    /// Where a DAO's data comes from.
    #[derive(Enum)]
    #[oai(rename_all = "lowercase")]
    SourceKind ("source") {
        /// Snapshot off-chain voting (proposals and votes).
        Snapshot = "snapshot",
        /// A Discourse forum (topics and posts).
        Discourse = "discourse",
        /// An on-chain governor contract (proposals, votes, delegation).
        Onchain = "onchain",
        /// A Tally delegate export (delegated voting power).
        Tally = "tally",
    }
}

vocabulary! {
    /// A proposal source a filter may name.
    #[derive(Enum)]
    #[oai(rename_all = "snake_case")]
    ProposalSource ("proposal source") {
        Snapshot = "snapshot",
        Onchain = "onchain",
    }
}

impl ProposalSource {
    pub const fn source(self) -> SourceKind {
        match self {
            Self::Snapshot => SourceKind::Snapshot,
            Self::Onchain => SourceKind::Onchain,
        }
    }

    /// The proposal source `source` is; a source of no proposals (`discourse`, `tally`) is an error.
    pub fn of(source: SourceKind) -> Result<Self, UnknownValue> {
        Self::parse(source.as_str())
    }

    /// Whether the source serves a vote's voting power as a float: Snapshot's `vp` is a JSON
    /// number such as `2.11e-16`, kept as the exact text received (which the upstream may
    /// already have rounded); a governor's weight is an integer in the token's smallest unit.
    ///
    /// Declared once: every writer stores `votes.vp_from_float` from it, and a signal's deciding
    /// vote (stored without the flag) reads it from its proposal's source.
    pub const fn power_from_float(self) -> bool {
        match self {
            Self::Snapshot => true,
            Self::Onchain => false,
        }
    }
}

vocabulary! {
    // Also what a signal is about: its subject kind.
    /// The kind of a normalized item.
    #[derive(Enum)]
    #[oai(rename_all = "snake_case")]
    ItemKind ("item kind") {
        Proposal = "proposal",
        ForumTopic = "forum_topic",
    }
}

vocabulary! {
    /// Proposal states a filter may name.
    #[derive(Enum)]
    #[oai(rename_all = "snake_case")]
    ProposalState ("proposal state") {
        Pending = "pending",
        Active = "active",
        Closed = "closed",
        Queued = "queued",
        Executed = "executed",
        Canceled = "canceled",
        Defeated = "defeated",
        Succeeded = "succeeded",
        Expired = "expired",
    }
}

impl ProposalState {
    /// The states meaning voting has ended with an outcome to report: each yields a
    /// `proposal_closed` event at the proposal's end, and the outcome signals read them.
    /// (`canceled` is not among them: a canceled proposal may never have closed its vote.)
    pub const CLOSED: &'static [Self] =
        &[Self::Closed, Self::Defeated, Self::Succeeded, Self::Queued, Self::Executed, Self::Expired];

    pub fn is_closed(self) -> bool {
        Self::CLOSED.contains(&self)
    }

    /// The states in which an on-chain proposal's execution is simulated and served: voting,
    /// passed, or waiting in the timelock.
    pub const SIMULATED: &'static [Self] = &[Self::Active, Self::Succeeded, Self::Queued];
}

vocabulary! {
    /// Why a delegate's on-chain voting power changed (a token's `DelegateVotesChanged`).
    #[derive(Enum)]
    #[oai(rename_all = "snake_case")]
    PowerCause ("power cause") {
        /// A holder delegated to the delegate, or moved its delegation away (`DelegateChanged`
        /// in the same transaction, just before).
        Delegation = "delegation",
        /// Tokens moved between holders with different delegates: a transfer, a mint or a burn.
        Transfer = "transfer",
    }
}

vocabulary! {
    /// What a database node does for this deployment.
    #[derive(Enum)]
    #[oai(rename_all = "lowercase")]
    NodeRole ("node role") {
        /// `DATABASE_URL`: takes every write, and the reads no replica can serve.
        Primary = "primary",
        /// A PostgreSQL streaming replica (`GOVDATA_READ_REPLICA_URLS`): serves reads of the
        /// revisions it has replayed.
        Replica = "replica",
    }
}

vocabulary! {
    /// Whether a database node is used now.
    #[derive(Enum)]
    #[oai(rename_all = "lowercase")]
    NodeHealth ("node health") {
        /// Answering, and (a replica) within the lag bound: used.
        Serving = "serving",
        /// A replica past the lag bound: left until it catches up.
        Lagging = "lagging",
        /// Not answering: left until it answers again.
        Down = "down",
    }
}

vocabulary! {
    /// How an ingestion run stands.
    RunStatus ("run status") {
        /// Still writing (or its process stopped: see `abandoned`).
        Running = "running",
        /// Every source it ran completed.
        Succeeded = "succeeded",
        /// Some sources failed; what the others fetched was published.
        Partial = "partial",
        /// Every source failed, or the run itself did.
        Failed = "failed",
        /// Its process stopped beating before it finished; its staged records were dropped.
        Abandoned = "abandoned",
    }
}

vocabulary! {
    /// What started an ingestion run.
    RunTrigger ("run trigger") {
        /// `govdata import` or the bundled sample loaded at start-up.
        Import = "import",
        /// The server's own schedule (`--ingest-every`).
        Schedule = "schedule",
        /// An operator (`govdata ingest`, `govdata synth`).
        Manual = "manual",
        /// A request for stale data (`--live-refresh`).
        Live = "live",
    }
}

vocabulary! {
    /// The opaque v2 keys: a prefix naming what the key addresses, then 22 URL-safe characters.
    KeyKind ("key kind") {
        Proposal = "p_",
        Topic = "t_",
        /// A governance event's public id.
        Event = "ev_",
        /// A signal's public id.
        Signal = "sg_",
        /// A notable delegation change's public id (its feed entries' `itemId`).
        Delegation = "dl_",
    }
}

impl KeyKind {
    /// The parameter that carries keys of this kind.
    pub const fn param(self) -> &'static str {
        match self {
            Self::Proposal => "proposalKey",
            Self::Topic => "topicKey",
            Self::Event | Self::Signal | Self::Delegation => "id",
        }
    }
}

/// A DAO's identifier everywhere in the API: a lowercase slug of at most
/// [`DaoId::MAX_LEN`] letters, digits, `-` and `_`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DaoId(String);

impl DaoId {
    pub const MAX_LEN: usize = 64;

    /// `text` as a DAO id, when it is one.
    pub fn parse(text: &str) -> Option<Self> {
        let valid = !text.is_empty()
            && text.len() <= Self::MAX_LEN
            && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        valid.then(|| Self(text.to_owned()))
    }

    /// `text` as a DAO id in any letter case: the one rule by which a request names a DAO, on
    /// both surfaces and in every place that reads one (paths, `daoId` filters, webhook bodies,
    /// live refresh). Slugs are lowercase, so `Uniswap` names `uniswap`; accepting another case
    /// costs the contract nothing, and refusing it surprised users.
    pub fn from_request(text: &str) -> Option<Self> {
        Self::parse(&text.to_ascii_lowercase())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DaoId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use poem_openapi::types::ToJSON;

    use super::*;

    fn served<T: ToJSON>(v: &T) -> String {
        v.to_json().and_then(|j| j.as_str().map(str::to_owned)).expect("an enum serves as a string")
    }

    #[test]
    fn the_documents_show_the_stored_text() {
        for v in SourceKind::ALL {
            assert_eq!(served(v), v.as_str());
        }
        for v in ProposalSource::ALL {
            assert_eq!(served(v), v.as_str());
            assert_eq!(v.source().as_str(), v.as_str());
        }
        for v in ItemKind::ALL {
            assert_eq!(served(v), v.as_str());
        }
        for v in ProposalState::ALL {
            assert_eq!(served(v), v.as_str());
        }
    }

    #[test]
    fn unknown_text_is_refused_never_another_value() {
        assert_eq!(SourceKind::parse("onchain"), Ok(SourceKind::Onchain));
        assert!(SourceKind::parse("Onchain").is_err());
        assert_eq!(ProposalSource::choices(), "snapshot | onchain");
        assert_eq!(ItemKind::choices(), "proposal | forum_topic");
        assert!(ProposalState::parse("cancelled").is_err());
        let e = RunStatus::parse("done").unwrap_err();
        assert_eq!(e.to_string(), "`done` is not a known run status");
        for v in RunTrigger::ALL {
            assert_eq!(RunTrigger::parse(v.as_str()), Ok(*v));
        }
    }

    #[test]
    fn closed_states_exclude_canceled_and_open_ones() {
        let closed: Vec<_> = ProposalState::ALL.iter().filter(|s| s.is_closed()).map(|s| s.as_str()).collect();
        assert_eq!(closed, ["closed", "queued", "executed", "defeated", "succeeded", "expired"]);
    }

    #[test]
    fn dao_ids_are_lowercase_slugs() {
        assert!(DaoId::parse("arbitrum").is_some() && DaoId::parse("op-collective_2").is_some());
        for bad in ["", "Arbitrum", "a b", "a/b", &"a".repeat(65)] {
            assert!(DaoId::parse(bad).is_none(), "{bad:?}");
        }
    }
}
