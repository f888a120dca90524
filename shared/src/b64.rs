//! Standard base64 (RFC 4648 §4, with padding): how a `proof` travels in a JSON frame.
//!
//! Written here rather than taken from the `base64` crate because this module is compiled into
//! the browser's wasm module, which every visitor downloads (budget 40 KiB gzipped): with the
//! crate's engine the module and its glue measured 37 864 B gzipped, with these functions
//! 33 469 B (`cargo xtask wasm`). The tests check them against the crate on arbitrary input, so
//! they accept and refuse exactly what its `STANDARD` engine does.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `bytes` as standard base64, padded to a multiple of 4 characters.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let byte = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (byte(0) << 16) | (byte(1) << 8) | byte(2);
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

fn sextet(c: u8) -> Option<u32> {
    let v = match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    };
    Some(u32::from(v))
}

/// The bytes of standard, padded base64; `None` for anything else: a length that is not a
/// multiple of 4, a character outside the alphabet (URL-safe `-` `_`, whitespace), padding
/// other than one or two `=` at the very end, or bits set past the data (each byte string has
/// one encoding).
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let t = text.as_bytes();
    if !t.len().is_multiple_of(4) {
        return None;
    }
    let quads = t.len() / 4;
    let mut out = Vec::with_capacity(quads * 3);
    for (i, q) in t.chunks_exact(4).enumerate() {
        let pad = if i + 1 == quads {
            q.iter().rev().take_while(|&&c| c == b'=').count()
        } else {
            0
        };
        if pad > 2 {
            return None;
        }
        let mut n = 0u32;
        for &c in &q[..4 - pad] {
            n = (n << 6) | sextet(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        if bytes[3 - pad..].iter().any(|&b| b != 0) {
            return None;
        }
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4648 §10's test vectors, both ways.
    #[test]
    fn rfc_4648_vectors() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(encode(plain.as_bytes()), coded);
            assert_eq!(decode(coded).as_deref(), Some(plain.as_bytes()), "{coded}");
        }
        for bad in [
            "Zg", "Zg=", "Zh==", "Zm9=", "Z===", "====", "Zg==Zg==", "Zm 9", "-_8=", "Zm9v\n",
        ] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
    }

    // proptest and the `base64` crate are native dev-dependencies (see Cargo.toml).
    #[cfg(not(target_arch = "wasm32"))]
    mod props {
        use ::base64::engine::general_purpose::STANDARD;
        use ::base64::Engine;
        use proptest::prelude::*;

        proptest! {
            /// Encoding agrees with the `base64` crate, and decoding gives the bytes back.
            #[test]
            fn encodes_as_the_crate_does(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
                let text = super::encode(&bytes);
                prop_assert_eq!(&text, &STANDARD.encode(&bytes));
                prop_assert_eq!(super::decode(&text), Some(bytes));
            }

            /// Any text over the alphabet, `=` and a few strangers is accepted, with the same
            /// bytes, exactly when the crate accepts it.
            #[test]
            fn decodes_as_the_crate_does(text in "[A-Za-z0-9+/=_ -]{0,24}") {
                prop_assert_eq!(super::decode(&text), STANDARD.decode(&text).ok(), "{:?}", text);
            }

            /// Near-valid text (a valid encoding with one character changed) too.
            #[test]
            fn decodes_near_misses_as_the_crate_does(
                bytes in proptest::collection::vec(any::<u8>(), 1..40),
                at in any::<prop::sample::Index>(),
                c in prop::sample::select(b"A/+=Qgw-_ ".to_vec()),
            ) {
                let mut text = STANDARD.encode(&bytes).into_bytes();
                let i = at.index(text.len());
                text[i] = c;
                let text = String::from_utf8(text).unwrap();
                prop_assert_eq!(super::decode(&text), STANDARD.decode(&text).ok(), "{:?}", text);
            }
        }
    }
}
