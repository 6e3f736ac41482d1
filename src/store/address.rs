//! Account addresses: the lowercase form is the canonical handle, EIP-55 is for display.
use sha3::{Digest, Keccak256};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a 0x address (20-byte EVM or 32-byte Starknet hex)")]
pub struct AddressError(pub String);

/// Validates `0x` + 40 hex (EVM) or `0x` + 64 hex (Starknet) and returns it lowercased.
/// The checksum of mixed-case input is not verified: upstreams disagree on casing, and the
/// lowercase form is what identifies an account.
pub fn normalize(text: &str) -> Result<String, AddressError> {
    let hex = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"));
    match hex {
        Some(h) if matches!(h.len(), 40 | 64) && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Ok(format!("0x{}", h.to_ascii_lowercase()))
        }
        _ => Err(AddressError(text.to_owned())),
    }
}

/// The display form of a normalized address: EIP-55 for 20-byte addresses; 32-byte (Starknet)
/// addresses have no EIP-55 form and are shown lowercase.
pub fn display(lower: &str) -> String {
    let hex = lower.strip_prefix("0x").unwrap_or(lower);
    if hex.len() != 40 {
        return lower.to_owned();
    }
    eip55(hex)
}

/// EIP-55: a hex letter is uppercased when the matching nibble of Keccak-256(lowercase hex) ≥ 8.
fn eip55(lower_hex: &str) -> String {
    let hash = Keccak256::digest(lower_hex.as_bytes());
    let mut out = String::with_capacity(2 + lower_hex.len());
    out.push_str("0x");
    for (i, c) in lower_hex.chars().enumerate() {
        let byte = hash[i / 2];
        let nibble = if i % 2 == 0 { byte >> 4 } else { byte & 0x0f };
        out.push(if nibble >= 8 { c.to_ascii_uppercase() } else { c });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eip55_matches_the_reference_vectors() {
        // Test vectors from EIP-55 itself.
        for expected in [
            "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
            "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
            "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
        ] {
            let lower = normalize(expected).unwrap();
            assert_eq!(lower, expected.to_ascii_lowercase());
            assert_eq!(display(&lower), expected);
        }
    }

    #[test]
    fn starknet_addresses_stay_lowercase_and_garbage_is_rejected() {
        let stark = format!("0x{}", "Ab".repeat(32));
        assert_eq!(display(&normalize(&stark).unwrap()), stark.to_ascii_lowercase());
        for bad in [
            "",
            "0x",
            "0x123",
            "abc",
            "5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "0xZZaeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        ] {
            assert!(normalize(bad).is_err(), "{bad:?}");
        }
    }
}
