//! The one decoder of Lua script replies, shared by the leaderboard store and the job queues.
//!
//! Every script in `lua/` answers `{'ok', fields...}`, another tag with fields (the queue
//! scripts' `'job'`, `'none'`, ...), or `{'err', code, message, retry_after_ms?, limit?,
//! reset_ms?}`. Redis hands Lua numbers back as integers and strings as bulk strings; scripts
//! print large numbers as strings (see `fmt` in `lua/base.lua`), so a field is read by what it
//! means, not by how it travelled: [`int`] takes an integer or a numeric string, [`text`] a
//! string or an integer.

use redis::Value;
use scorecast_shared::ErrorCode;

use crate::error::{AppError, AppResult, RateInfo};

/// An integer field (an integer reply or a numeric string).
pub fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        Value::SimpleString(s) => s.parse().ok(),
        _ => None,
    }
}

/// A string field (a string reply, or an integer written out).
pub fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

/// The items of a reply packed by `cmsgpack.pack` (a msgpack array of integers and strings, as
/// `lua/submit.lua` returns its batch), as the [`Value`]s Redis would have given for the same
/// Lua table. `None` if it is anything else, or does not end where the array does.
///
/// A batch's ~7 × 48 fields as one string cost Redis one reply item instead of hundreds, and
/// the server one tight loop instead of a parsed value each (BENCHMARKS.md, "What changed,
/// and what each bought").
pub fn unpack(mut bytes: &[u8]) -> Option<Vec<Value>> {
    use rmp::decode::{read_array_len, read_int, read_str_len};
    use rmp::Marker;

    let len = read_array_len(&mut bytes).ok()? as usize;
    // Every item takes at least one byte: a length beyond the bytes left is a lie.
    let mut items = Vec::with_capacity(len.min(bytes.len()));
    for _ in 0..len {
        let item = match Marker::from_u8(*bytes.first()?) {
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {
                let n = read_str_len(&mut bytes).ok()? as usize;
                let (text, rest) = bytes.split_at_checked(n)?;
                bytes = rest;
                Value::BulkString(text.to_vec())
            }
            _ => Value::Int(read_int(&mut bytes).ok()?),
        };
        items.push(item);
    }
    bytes.is_empty().then_some(items)
}

/// A reply that is not what the script promises: logged, and `unavailable` for the caller.
pub fn bad(what: &str) -> AppError {
    tracing::error!(what, "unexpected script reply");
    AppError::new(ErrorCode::Unavailable, "unexpected reply from the store")
}

/// Splits a reply into its tag and fields; an `'err'` reply becomes its error (with the rate
/// limit details of a `rate_limited` one).
pub fn split(v: Value) -> AppResult<(String, Vec<Value>)> {
    let Value::Array(mut items) = v else {
        return Err(bad("not an array"));
    };
    let tag = items.first().and_then(text).ok_or_else(|| bad("no tag"))?;
    let fields = items.split_off(1);
    if tag != "err" {
        return Ok((tag, fields));
    }
    Err(error(&fields))
}

/// The error an `'err'` reply's fields (after the tag) describe: code, message, and for
/// `rate_limited` retry_after_ms, limit, reset_ms.
pub fn error(fields: &[Value]) -> AppError {
    let Some(code) = fields
        .first()
        .and_then(text)
        .and_then(|c| ErrorCode::parse(&c))
    else {
        return bad("error code");
    };
    let mut err = AppError::new(code, fields.get(1).and_then(text).unwrap_or_default());
    if code == ErrorCode::RateLimited {
        let n = |i: usize| fields.get(i).and_then(int).unwrap_or(0).max(0) as u64;
        err.rate = Some(RateInfo {
            allowed: false,
            limit: n(3),
            remaining: 0,
            retry_after_ms: n(2).max(1),
            reset_ms: n(4),
        });
    }
    err
}

/// The fields of an `'ok'` reply.
pub fn ok(v: Value) -> AppResult<Vec<Value>> {
    match split(v)? {
        (tag, fields) if tag == "ok" => Ok(fields),
        _ => Err(bad("not ok")),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A bulk-string reply (for the reply readers' tests).
    pub(crate) fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn fields_read_by_meaning() {
        assert_eq!(int(&Value::Int(7)), Some(7));
        assert_eq!(int(&bulk("9007199254740991")), Some(9_007_199_254_740_991));
        assert_eq!(int(&bulk("x")), None);
        assert_eq!(text(&Value::Int(3)).as_deref(), Some("3"));
        assert_eq!(text(&bulk("all")).as_deref(), Some("all"));
        assert_eq!(text(&Value::Nil), None);
    }

    /// What `cmsgpack.pack` writes for a table of integers and strings (every integer width
    /// and string length class it uses) reads back as the Values of the same table.
    #[test]
    fn packed_replies_unpack_to_their_values() {
        use rmp::encode::{write_array_len, write_sint, write_str, write_uint};
        let long = "x".repeat(300);
        let mut packed = Vec::new();
        write_array_len(&mut packed, 9).unwrap();
        write_str(&mut packed, "").unwrap();
        write_sint(&mut packed, -1).unwrap();
        write_uint(&mut packed, 7).unwrap();
        write_uint(&mut packed, 200).unwrap();
        write_uint(&mut packed, 70_000).unwrap();
        write_uint(&mut packed, 9_007_199_254_740_991).unwrap();
        write_sint(&mut packed, -9_007_199_254_740_991).unwrap();
        write_str(&mut packed, "rate_limited").unwrap();
        write_str(&mut packed, &long).unwrap();
        assert_eq!(
            unpack(&packed),
            Some(vec![
                bulk(""),
                Value::Int(-1),
                Value::Int(7),
                Value::Int(200),
                Value::Int(70_000),
                Value::Int(9_007_199_254_740_991),
                Value::Int(-9_007_199_254_740_991),
                bulk("rate_limited"),
                bulk(&long),
            ])
        );
        // Cut short, with bytes after the array, or not an array: not a reply.
        assert_eq!(unpack(&packed[..packed.len() - 1]), None);
        let mut longer = packed.clone();
        longer.push(0);
        assert_eq!(unpack(&longer), None);
        assert_eq!(unpack(&packed[1..]), None);
        assert_eq!(unpack(&[]), None);
        // A length far beyond the bytes is refused without reserving for it.
        assert_eq!(unpack(&[0xdd, 0xff, 0xff, 0xff, 0xff]), None);
    }

    #[test]
    fn tags_fields_and_errors() {
        let r = split(Value::Array(vec![bulk("job"), Value::Int(1)])).expect("a tagged reply");
        assert_eq!((r.0.as_str(), r.1.len()), ("job", 1));
        assert_eq!(
            ok(Value::Array(vec![bulk("ok"), Value::Int(1)])).expect("ok"),
            vec![Value::Int(1)]
        );
        assert!(ok(Value::Array(vec![bulk("none")])).is_err());
        let e = split(Value::Array(vec![
            bulk("err"),
            bulk("rate_limited"),
            bulk("slow down"),
            Value::Int(250),
            Value::Int(5),
            Value::Int(1000),
        ]))
        .expect_err("an error reply");
        assert_eq!(
            (e.code, e.message.as_str()),
            (ErrorCode::RateLimited, "slow down")
        );
        let rate = e.rate.expect("rate details");
        assert_eq!(
            (rate.retry_after_ms, rate.limit, rate.reset_ms),
            (250, 5, 1000)
        );
        assert_eq!(
            split(bulk("ok")).expect_err("not an array").code,
            ErrorCode::Unavailable
        );
    }
}
