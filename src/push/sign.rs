//! Standard Webhooks v1.0.0 signatures: `v1,` + base64 of HMAC-SHA256 over
//! `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the base64 bytes after `whsec_`.
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::contract::webhooks::SECRET_PREFIX;

/// The `webhook-signature` value: one `v1,` signature per secret, space-separated (the
/// standard lets a receiver accept any of them, which is how a rotation overlaps).
pub fn signature(secrets: &[&str], msg_id: &str, timestamp_s: i64, body: &[u8]) -> String {
    secrets.iter().filter_map(|s| sign_one(s, msg_id, timestamp_s, body)).collect::<Vec<_>>().join(" ")
}

fn sign_one(secret: &str, msg_id: &str, timestamp_s: i64, body: &[u8]) -> Option<String> {
    let key = base64::engine::general_purpose::STANDARD.decode(secret.strip_prefix(SECRET_PREFIX)?).ok()?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(msg_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp_s.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Some(format!("v1,{}", base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_the_standards_test_vector() {
        // The example of the Standard Webhooks specification (and its reference libraries' tests).
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            signature(&[secret], "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn a_rotation_sends_both_signatures() {
        let signed = signature(&["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_AAAA"], "msg_1", 1, b"{}");
        assert_eq!(signed.split(' ').count(), 2);
        assert!(signed.split(' ').all(|s| s.starts_with("v1,")));
    }
}
