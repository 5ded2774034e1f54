//! Standard base64 (RFC 4648, `+` and `/`), the one encoder and decoder every part uses:
//! masking Secret values in output, reading a Secret's `data` for postBuild substitution,
//! the plaintext-secret lint, and the data of generated Secrets.
//!
//! Decoding is lenient the way each reader needs and no more: white space anywhere is
//! ignored (a base64 block written over several lines, as kyaml writes long values and
//! Go's `StdEncoding` reads them), padding is optional, and anything else outside the
//! alphabet, or a lone trailing character (six bits, no byte), is not base64.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64, with padding.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &c)| n | u32::from(c) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize])
            } else {
                '='
            });
        }
    }
    out
}

/// The bytes `s` encodes; `None` when it is not base64 (see the module's rules).
pub fn decode(s: &str) -> Option<Vec<u8>> {
    let body = s.trim_end_matches(|c: char| c == '=' || c.is_ascii_whitespace());
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in body.bytes().filter(|c| !c.is_ascii_whitespace()) {
        let d = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(d);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    (bits < 6).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4648's test vectors, both ways; then what decoding forgives and refuses.
    #[test]
    fn rfc_4648_vectors_and_the_lenient_reading() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(encode(plain.as_bytes()), encoded);
            assert_eq!(decode(encoded).as_deref(), Some(plain.as_bytes()));
        }
        assert_eq!(decode("Zm9v\nYmFy\n").as_deref(), Some(&b"foobar"[..]));
        assert_eq!(decode("Zm9vYg").as_deref(), Some(&b"foob"[..]));
        assert_eq!(decode("Zm9vY"), None, "a lone trailing character");
        assert_eq!(decode("not base64!"), None);
        assert_eq!(
            decode("Zm9v-_"),
            None,
            "the URL alphabet is another encoding"
        );
    }
}
