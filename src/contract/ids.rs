//! Public identifiers: how callers may write them and their canonical forms.
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

fn is_hex_address(s: &str) -> bool {
    s.strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .is_some_and(|h| (h.len() == 40 || h.len() == 64) && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Parses `voterIdentity`: a 0x address in any letter case, a CAIP-10 account
/// (`eip155:1:0x…`), or an ENS name (`name.eth`).
pub fn parse_voter_identity(text: &str, param: &str, location: ParamLocation) -> Result<VoterIdentity, Problem> {
    let raw = text.trim();
    let candidate = match raw.split(':').collect::<Vec<_>>().as_slice() {
        [namespace, reference, account] if !namespace.is_empty() && !reference.is_empty() => *account,
        _ => raw,
    };
    if is_hex_address(candidate) {
        return Ok(VoterIdentity::Address(format!("0x{}", candidate[2..].to_ascii_lowercase())));
    }
    let ens = raw.to_ascii_lowercase();
    if ens.ends_with(".eth")
        && ens.len() > 4
        && ens.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
    {
        return Ok(VoterIdentity::Ens(ens));
    }
    Err(Problem::validation(FieldError {
        location,
        name: param.to_owned(),
        reason: "is not a voter identity".to_owned(),
        expected: Some(
            "a 0x address (any letter case), a CAIP-10 account such as eip155:1:0x…, or an ENS name".to_owned(),
        ),
        received: Some(text.to_owned()),
    }))
}

/// What [`parse_voter_identity`] accepts, as a published pattern (ECMA 262): a 0x address of 20
/// or 32 bytes, optionally as a CAIP-10 account, or an ENS name.
pub const VOTER_IDENTITY_PATTERN: &str =
    r"^\s*(?:[^:]+:[^:]+:)?0[xX](?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})\s*$|^\s*[A-Za-z0-9._-]+\.[Ee][Tt][Hh]\s*$";

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
        for bad in ["", "0x123", "hello", ".eth", "0xZZ3a4f9915d6216f73d6df50151725036bd26c02"] {
            assert!(parse_voter_identity(bad, "v", ParamLocation::Path).is_err(), "{bad}");
        }
    }
}
