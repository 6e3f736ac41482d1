//! Public identifiers: how callers may write them and their canonical forms.
use std::fmt;

use super::errors::{FieldError, ParamLocation, Problem};
use super::vocabulary::KeyKind;

/// A voter as a caller may name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VoterIdentity {
    /// Canonical lowercase 0x address (20-byte EVM or 32-byte Starknet).
    Address(String),
    /// An ENS name, resolved against the names the store knows.
    Ens(String),
}

/// The hex digits of `0x…` when there are exactly `len` of them.
fn hex_account(s: &str, lens: &[usize]) -> Option<String> {
    let hex = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    (lens.contains(&hex.len()) && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| format!("0x{}", hex.to_ascii_lowercase()))
}

/// A CAIP-2 reference: 1 to 32 of `[-_a-zA-Z0-9]`.
fn is_chain_reference(s: &str) -> bool {
    (1..=32).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// An ENS name as callers write it: dot-separated labels of letters, digits, `-` and `_`.
fn is_ens_name(s: &str) -> bool {
    s.contains('.')
        && s.split('.').all(|label| {
            !label.is_empty() && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// Parses `voterIdentity`: a 0x address in any letter case (20 bytes for EVM chains, 32 for
/// Starknet), a CAIP-10 account checked against the namespace it claims (`eip155:<chain id>:` +
/// 20 bytes, `starknet:<chain id>:` + 32 bytes), or an ENS name (`name.eth`).
pub fn parse_voter_identity(text: &str, param: &str, location: ParamLocation) -> Result<VoterIdentity, Problem> {
    let raw = text.trim();
    let invalid = |reason: &str, expected: &str| {
        Problem::validation(FieldError {
            location,
            name: param.to_owned(),
            reason: reason.to_owned(),
            expected: Some(expected.to_owned()),
            received: Some(text.to_owned()),
        })
    };
    if let [namespace, reference, account] = raw.split(':').collect::<Vec<_>>().as_slice() {
        let (bytes, account_hex) = match *namespace {
            "eip155" if !reference.is_empty() && reference.bytes().all(|b| b.is_ascii_digit()) => (20, 40),
            "starknet" if is_chain_reference(reference) => (32, 64),
            "eip155" | "starknet" => {
                return Err(invalid(
                    "names no valid chain",
                    "eip155:<decimal chain id>:0x… or starknet:<chain id>:0x…",
                ));
            }
            _ => {
                return Err(invalid(
                    "names a chain namespace this API does not serve",
                    "a CAIP-10 account of the eip155 or starknet namespace",
                ));
            }
        };
        return hex_account(account, &[account_hex]).map(VoterIdentity::Address).ok_or_else(|| {
            invalid(
                &format!("is not an account of the {namespace} namespace"),
                &format!("{namespace}:{reference}:0x followed by {account_hex} hex digits ({bytes} bytes)"),
            )
        });
    }
    if let Some(address) = hex_account(raw, &[40, 64]) {
        return Ok(VoterIdentity::Address(address));
    }
    if is_ens_name(raw) {
        return Ok(VoterIdentity::Ens(raw.to_ascii_lowercase()));
    }
    Err(invalid(
        "is not a voter identity",
        "a 0x address (any letter case), a CAIP-10 account such as eip155:1:0x…, or an ENS name",
    ))
}

/// What [`parse_voter_identity`] accepts, as a published pattern (ECMA 262): a 0x address of 20
/// or 32 bytes, a CAIP-10 account of the eip155 (20 bytes) or starknet (32 bytes) namespace, or an
/// ENS name.
pub const VOTER_IDENTITY_PATTERN: &str = concat!(
    r"^\s*(?:0[xX](?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})|eip155:[0-9]+:0[xX][0-9a-fA-F]{40}",
    r"|starknet:[-_a-zA-Z0-9]{1,32}:0[xX][0-9a-fA-F]{64})\s*$|^\s*[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+\s*$"
);

/// What [`check_key`] accepts for keys of `kind`, as a published pattern.
pub fn key_pattern(kind: KeyKind) -> String {
    let prefix = kind.as_str();
    format!("^{prefix}[A-Za-z0-9_-]{{{KEY_CHARS}}}$")
}

/// URL-safe characters after a key's prefix.
const KEY_CHARS: usize = 22;

/// `proposalKey` / `topicKey` as issued: a prefix and 22 URL-safe characters.
pub fn check_key(text: &str, kind: KeyKind) -> Result<(), Problem> {
    let (prefix, param) = (kind.as_str(), kind.param());
    let ok = text.strip_prefix(prefix).is_some_and(|k| {
        k.len() == KEY_CHARS && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    if ok {
        Ok(())
    } else {
        Err(Problem::validation(FieldError {
            location: ParamLocation::Path,
            name: param.to_owned(),
            reason: "is not a key this API issues".to_owned(),
            expected: Some(format!("`{prefix}` followed by {KEY_CHARS} URL-safe characters, as returned in `{param}`")),
            received: Some(text.to_owned()),
        }))
    }
}

/// A key this API issues, of one kind: checked once by [`IssuedKey::parse`] (as [`check_key`]
/// checks), then carried as its type.
pub trait IssuedKey: Sized + Send + Sync + 'static {
    const KIND: KeyKind;
    /// `text` as a key of this kind, or the VALIDATION_ERROR that names the parameter.
    fn parse(text: &str) -> Result<Self, Problem>;
    fn as_str(&self) -> &str;
}

macro_rules! issued_key {
    ($(#[$doc:meta])* $name:ident = $kind:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub struct $name(String);

        impl IssuedKey for $name {
            const KIND: KeyKind = $kind;

            fn parse(text: &str) -> Result<Self, Problem> {
                check_key(text, Self::KIND).map(|()| Self(text.to_owned()))
            }

            fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

issued_key!(
    /// A proposal's opaque v2 key (`p_…`), as `proposalKey` carries it.
    ProposalKey = KeyKind::Proposal
);
issued_key!(
    /// A forum topic's opaque v2 key (`t_…`), as `topicKey` carries it.
    TopicKey = KeyKind::Topic
);

#[cfg(test)]
mod tests {
    use super::*;

    /// The published patterns accept exactly what the checks accept.
    #[test]
    fn patterns_agree_with_the_checks() {
        let voter = regex::Regex::new(VOTER_IDENTITY_PATTERN).unwrap();
        let samples = [
            "0x683a4F9915D6216f73d6Df50151725036bD26C02",
            "eip155:1:0x683A4F9915D6216F73D6DF50151725036BD26C02",
            " 0x683a4f9915d6216f73d6df50151725036bd26c02 ",
            &format!("0x{}", "A".repeat(64)),
            "Vitalik.eth",
            "a.b-c_d.ETH",
            "",
            "0x123",
            "hello",
            ".eth",
            "x:0x683a4f9915d6216f73d6df50151725036bd26c02",
            "cosmos:hub:0x683a4f9915d6216f73d6df50151725036bd26c02",
            "eip155:1:0x00000000000000000000000000000000000000000000000000000000000000a1",
            "eip155:main:0x683a4f9915d6216f73d6df50151725036bd26c02",
            "starknet:SN_MAIN:0x683a4f9915d6216f73d6df50151725036bd26c02",
            "starknet:SN_MAIN:0x00000000000000000000000000000000000000000000000000000000000000a1",
            "pgov.xyz",
            "a..eth",
            "a b.eth",
            "0xZZ3a4f9915d6216f73d6df50151725036bd26c02",
        ];
        for sample in samples {
            let accepted = parse_voter_identity(sample, "v", ParamLocation::Path).is_ok();
            assert_eq!(voter.is_match(sample), accepted, "{sample:?}");
        }
        let key = regex::Regex::new(&key_pattern(KeyKind::Proposal)).unwrap();
        for sample in [
            "p_Qm1x2y3z4a5b6c7d8e9f0g",
            "p_Qm1x2y3z4a5b6c7d8e9f0",
            "t_Qm1x2y3z4a5b6c7d8e9f0g",
            "p_Qm1x2y3z4a5b6c7d8e9f0!",
        ] {
            assert_eq!(key.is_match(sample), check_key(sample, KeyKind::Proposal).is_ok(), "{sample:?}");
        }
    }

    #[test]
    fn voter_identities() {
        let addr = "0x683a4f9915d6216f73d6df50151725036bd26c02";
        for form in
            ["0x683a4F9915D6216f73d6Df50151725036bD26C02", addr, "eip155:1:0x683A4F9915D6216F73D6DF50151725036BD26C02"]
        {
            assert_eq!(
                parse_voter_identity(form, "voterIdentity", ParamLocation::Path).unwrap(),
                VoterIdentity::Address(addr.into())
            );
        }
        assert_eq!(
            parse_voter_identity("Vitalik.eth", "v", ParamLocation::Path).unwrap(),
            VoterIdentity::Ens("vitalik.eth".into())
        );
        let starknet = format!("0x{}", "A".repeat(64));
        assert_eq!(
            parse_voter_identity(&starknet, "v", ParamLocation::Path).unwrap(),
            VoterIdentity::Address(format!("0x{}", "a".repeat(64)))
        );
        let felt = format!("0x{}a1", "0".repeat(62));
        assert_eq!(
            parse_voter_identity(&format!("starknet:SN_MAIN:{felt}"), "v", ParamLocation::Path).unwrap(),
            VoterIdentity::Address(felt.clone())
        );
        // Each namespace's account length: a Starknet felt is no eip155 account, and the reverse.
        let reason = |text: &str| {
            parse_voter_identity(text, "v", ParamLocation::Path).unwrap_err().errors.unwrap()[0].reason.clone()
        };
        assert_eq!(reason(&format!("eip155:1:{felt}")), "is not an account of the eip155 namespace");
        assert_eq!(reason(&format!("starknet:SN_MAIN:{addr}")), "is not an account of the starknet namespace");
        assert_eq!(reason(&format!("cosmos:hub:{addr}")), "names a chain namespace this API does not serve");
        assert_eq!(reason(&format!("eip155:main:{addr}")), "names no valid chain");
        // Any ENS name parses (an unknown one is a 404 where it is looked up, not a 400).
        assert_eq!(
            parse_voter_identity("Pgov.XYZ", "v", ParamLocation::Path).unwrap(),
            VoterIdentity::Ens("pgov.xyz".into())
        );
        for bad in ["", "0x123", "hello", ".eth", "a..eth", "0xZZ3a4f9915d6216f73d6df50151725036bd26c02"] {
            assert!(parse_voter_identity(bad, "v", ParamLocation::Path).is_err(), "{bad}");
        }
    }
}
