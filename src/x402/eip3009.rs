//! EIP-3009 `TransferWithAuthorization`: the EIP-712 signing hash and a local recovery of the
//! signer. This is a cheap pre-filter before the facilitator; balance, nonce use on chain and
//! simulation are the facilitator's job.
use std::str::FromStr;

use alloy_primitives::{Address, B256, Signature, U256};
use alloy_sol_types::{Eip712Domain, SolStruct, sol};

use super::wire::Authorization;

sol! {
    /// The struct the token's `transferWithAuthorization` verifies.
    struct TransferWithAuthorization {
        address from;
        address to;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
    }
}

/// The token's EIP-712 domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenDomain {
    pub name: String,
    pub version: String,
    pub chain_id: u64,
    pub verifying_contract: Address,
}

/// An authorization with its members parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedAuthorization {
    pub from: Address,
    pub to: Address,
    pub value: U256,
    pub valid_after: U256,
    pub valid_before: U256,
    pub nonce: B256,
}

impl ParsedAuthorization {
    /// Parses every member, naming the first that is malformed.
    pub fn parse(a: &Authorization) -> Result<Self, String> {
        let address = |name: &str, text: &str| {
            Address::from_str(text).map_err(|_| format!("authorization.{name} is not a 20-byte 0x address"))
        };
        let uint = |name: &str, text: &str| {
            U256::from_str_radix(text, 10).map_err(|_| format!("authorization.{name} is not a decimal uint256"))
        };
        Ok(Self {
            from: address("from", &a.from)?,
            to: address("to", &a.to)?,
            value: uint("value", &a.value)?,
            valid_after: uint("validAfter", &a.valid_after)?,
            valid_before: uint("validBefore", &a.valid_before)?,
            nonce: B256::from_str(&a.nonce).map_err(|_| "authorization.nonce is not 32 bytes of 0x hex".to_owned())?,
        })
    }

    /// The EIP-712 hash the payer signed.
    pub fn signing_hash(&self, domain: &TokenDomain) -> B256 {
        let domain = Eip712Domain::new(
            Some(domain.name.clone().into()),
            Some(domain.version.clone().into()),
            Some(U256::from(domain.chain_id)),
            Some(domain.verifying_contract),
            None,
        );
        TransferWithAuthorization {
            from: self.from,
            to: self.to,
            value: self.value,
            validAfter: self.valid_after,
            validBefore: self.valid_before,
            nonce: self.nonce,
        }
        .eip712_signing_hash(&domain)
    }
}

/// What the local check concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureCheck {
    /// A 65-byte ECDSA signature by `from`.
    Valid,
    /// Longer signatures (ERC-1271 or ERC-6492 smart wallets) can only be checked on chain.
    NeedsChain,
    Invalid(String),
}

/// Checks that `signature` (0x-hex) over the authorization was made by `authorization.from`.
pub fn check_signature(signature: &str, authorization: &ParsedAuthorization, domain: &TokenDomain) -> SignatureCheck {
    let Some(bytes) = signature.strip_prefix("0x").and_then(|h| hex::decode(h).ok()) else {
        return SignatureCheck::Invalid("the signature is not 0x-prefixed hex".to_owned());
    };
    if bytes.len() != 65 {
        return if bytes.len() > 65 {
            SignatureCheck::NeedsChain
        } else {
            SignatureCheck::Invalid(format!("the signature has {} bytes; an ECDSA signature has 65", bytes.len()))
        };
    }
    let Ok(signature) = Signature::try_from(bytes.as_slice()) else {
        return SignatureCheck::Invalid("the signature is not a valid ECDSA signature".to_owned());
    };
    match signature.recover_address_from_prehash(&authorization.signing_hash(domain)) {
        Ok(signer) if signer == authorization.from => SignatureCheck::Valid,
        Ok(signer) => SignatureCheck::Invalid(format!(
            "the signature was made by {signer}, not by authorization.from {}",
            authorization.from
        )),
        Err(_) => SignatureCheck::Invalid("no signer can be recovered from the signature".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector in `reference/x402.md`, recovered with the same libraries elsewhere.
    #[test]
    fn recovers_the_reference_vector() {
        let auth = ParsedAuthorization::parse(&Authorization {
            from: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8".into(),
            to: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC".into(),
            value: "10000".into(),
            valid_after: "0".into(),
            valid_before: "1900000000".into(),
            nonce: format!("0x{}", "ab".repeat(32)),
        })
        .unwrap();
        let domain = TokenDomain {
            name: "USDC".into(),
            version: "2".into(),
            chain_id: 84532,
            verifying_contract: "0x5FbDB2315678afecb367f032d93F642f64180aa3".parse().unwrap(),
        };
        assert_eq!(
            auth.signing_hash(&domain).to_string(),
            "0x4867c64226e1790c30a6796d5d29f839022d2b680fa370f7565ba04f30ae4677"
        );
        let sig = "0x18a392b8935d575b9148180ecba1eb74c4ed51782f97dad24c2bde920a3f680d22481f66f57ee41411804aae4252c062461b77504a7784185a739f0415ec3f631b";
        assert_eq!(check_signature(sig, &auth, &domain), SignatureCheck::Valid);
        // The same signature over another amount recovers someone else.
        let other = ParsedAuthorization { value: U256::from(10001u64), ..auth.clone() };
        assert!(matches!(check_signature(sig, &other, &domain), SignatureCheck::Invalid(r) if r.contains("not by")));
        // Another domain (version) breaks it too.
        let wrong_domain = TokenDomain { version: "1".into(), ..domain.clone() };
        assert!(matches!(check_signature(sig, &auth, &wrong_domain), SignatureCheck::Invalid(_)));
        assert!(matches!(check_signature("0x1234", &auth, &domain), SignatureCheck::Invalid(_)));
        assert_eq!(check_signature(&format!("0x{}", "00".repeat(200)), &auth, &domain), SignatureCheck::NeedsChain);
    }
}
