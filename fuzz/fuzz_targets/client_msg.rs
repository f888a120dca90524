//! Any frame a client can send: parsing never panics, and whatever parses re-encodes to a frame
//! that parses to the same message (what the browser SDK relies on).
#![no_main]

use libfuzzer_sys::fuzz_target;
use scorecast_shared::protocol::ParseError;
use scorecast_shared::{ClientMsg, ErrorCode};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match ClientMsg::parse(text) {
        Ok(msg) => assert_eq!(ClientMsg::parse(&msg.to_json()), Ok(msg)),
        // A bad submit is answered with its id, and only with the codes a submit can get.
        Err(ParseError::Submit { code, .. }) => assert!(matches!(
            code,
            ErrorCode::BadRequest | ErrorCode::InvalidId | ErrorCode::PointsOutOfRange
        )),
        Err(ParseError::Frame { code, .. }) => {
            assert!(matches!(code, ErrorCode::BadRequest | ErrorCode::InvalidId))
        }
    }
});
