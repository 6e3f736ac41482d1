//! Account addresses: the lowercase form is the canonical handle, EIP-55 is for display.
use sea_orm::{DbBackend, DeriveValueType};
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

/// An account as the `votes` table keeps it: its 20 (EVM) or 32 (Starknet) bytes, half the size
/// of the hex text in the table and in each of its indexes. Bytes compare as the lowercase hex
/// text does (nibble by nibble, a shorter prefix first), so orders by voter are unchanged.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, DeriveValueType)]
pub struct AccountBytes(pub Vec<u8>);

impl AccountBytes {
    /// The bytes of an address in any letter case.
    pub fn parse(text: &str) -> Result<Self, AddressError> {
        let lower = normalize(text)?;
        Ok(Self(hex::decode(&lower[2..]).map_err(|_| AddressError(text.to_owned()))?))
    }

    /// The canonical lowercase `0x` text.
    pub fn lower(&self) -> String {
        format!("0x{}", hex::encode(&self.0))
    }
}

/// SQL for the canonical text (`0x` + lowercase hex) of an [`AccountBytes`] column.
pub fn lower_sql(backend: DbBackend, column: &str) -> String {
    match backend {
        DbBackend::Postgres => format!("('0x' || encode({column}, 'hex'))"),
        _ => format!("('0x' || lower(hex({column})))"),
    }
}

/// SQL for the bytes (an [`AccountBytes`] value) of `text`, an expression holding a canonical
/// lowercase `0x` address: what compares it with a byte column through that column's indexes.
pub fn bytes_sql(backend: DbBackend, text: &str) -> String {
    match backend {
        DbBackend::Postgres => format!("decode(substr({text}, 3), 'hex')"),
        _ => format!("unhex(substr({text}, 3))"),
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
    fn account_bytes_round_trip_and_sort_as_the_text_does() {
        let texts = [
            "0x0000000000000000000000000000000000000001",
            "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed",
            &format!("0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed{}", "0".repeat(24)),
            "0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359",
            &format!("0x{}", "ab".repeat(32)),
        ];
        let mut by_bytes: Vec<AccountBytes> = texts.iter().map(|t| AccountBytes::parse(t).unwrap()).collect();
        by_bytes.sort();
        let mut by_text = texts.to_vec();
        by_text.sort();
        assert_eq!(by_bytes.iter().map(AccountBytes::lower).collect::<Vec<_>>(), by_text);
        assert_eq!(AccountBytes::parse("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed").unwrap().0.len(), 20);
        assert!(AccountBytes::parse("0x12").is_err());
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
