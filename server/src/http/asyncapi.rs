//! The AsyncAPI 3.0 document of the WebSocket protocol (`docs/asyncapi.json`), served at
//! `/asyncapi.json` from the copy compiled into the binary. Its tests hold it to the shared
//! crate's message types; `tests/browser/asyncapi.test.mjs` validates it with the AsyncAPI
//! parser.

use std::collections::BTreeSet;

use actix_web::{get, HttpResponse};
use serde_json::Value;

/// The document as it is in the repository.
pub const DOCUMENT: &str = include_str!("../../../docs/asyncapi.json");

/// The WebSocket protocol as AsyncAPI 3.0.
#[get("/asyncapi.json")]
pub async fn asyncapi_json() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(DOCUMENT)
}

/// The names of the messages of the operations with this action (`send`: the server sends them;
/// `receive`: it receives them) in a parsed copy of the document, and of the replies to the
/// operations with the other action. Its tests and the end-to-end tests use it.
pub fn messages_of(doc: &Value, action: &str) -> BTreeSet<String> {
    let name = |r: &Value| {
        r["$ref"]
            .as_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .to_owned()
    };
    let mut out = BTreeSet::new();
    for op in doc["operations"].as_object().unwrap().values() {
        if op["action"] == action {
            out.extend(op["messages"].as_array().unwrap().iter().map(name));
        } else if let Some(reply) = op["reply"]["messages"].as_array() {
            out.extend(reply.iter().map(name));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use scorecast_shared::ids::MAX_ID_LEN;
    use scorecast_shared::protocol::{self, ViewKind};
    use scorecast_shared::{
        ClientMsg, Entry, ErrorCode, Id, ServerMsg, View, MAX_POINTS, PROTOCOL_VERSION,
    };
    use serde_json::{json, Value};

    use super::{messages_of, DOCUMENT};
    use crate::http::apidoc::ID_PATTERN;

    fn doc() -> Value {
        serde_json::from_str(DOCUMENT).expect("docs/asyncapi.json is JSON")
    }

    fn id(s: &str) -> Id {
        Id::parse(s).unwrap()
    }

    /// The wire tag of each client message. The match has no `_` arm: a new variant does not
    /// compile until it is named here, and then the tests below want a sample of it.
    fn client_tag(m: &ClientMsg) -> &'static str {
        match m {
            ClientMsg::Hello { .. } => "hello",
            ClientMsg::Submit { .. } => "submit",
            ClientMsg::StartRun { .. } => "start_run",
            ClientMsg::Proof { .. } => "proof",
            ClientMsg::Join { .. } => "join",
            ClientMsg::Subscribe { .. } => "subscribe",
            ClientMsg::Unsubscribe { .. } => "unsubscribe",
            ClientMsg::Ping => "ping",
        }
    }

    /// As [`client_tag`], for server messages.
    fn server_tag(m: &ServerMsg) -> &'static str {
        match m {
            ServerMsg::Welcome { .. } => "welcome",
            ServerMsg::Ack { .. } => "ack",
            ServerMsg::Run { .. } => "run",
            ServerMsg::Joined { .. } => "joined",
            ServerMsg::Rejected { .. } => "rejected",
            ServerMsg::Top { .. } => "top",
            ServerMsg::Rank { .. } => "rank",
            ServerMsg::Around { .. } => "around",
            ServerMsg::Notify { .. } => "notify",
            ServerMsg::Tournament { .. } => "tournament",
            ServerMsg::Pong => "pong",
            ServerMsg::Error { .. } => "error",
        }
    }

    /// Every client message, with each view.
    fn client_samples() -> Vec<ClientMsg> {
        let b = id("b");
        vec![
            ClientMsg::Hello { token: "t".into() },
            ClientMsg::Submit {
                id: id("c-1"),
                board: b.clone(),
                points: 60,
            },
            ClientMsg::StartRun {
                id: id("r-1"),
                board: b.clone(),
            },
            ClientMsg::Proof {
                id: id("p-1"),
                board: b.clone(),
                run: id("run-1"),
                proof: "dWRscg==".into(),
            },
            ClientMsg::Join {
                id: id("j-1"),
                board: b.clone(),
            },
            ClientMsg::Subscribe {
                board: b.clone(),
                view: View::Top { limit: 10 },
            },
            ClientMsg::Subscribe {
                board: b.clone(),
                view: View::Me,
            },
            ClientMsg::Subscribe {
                board: b.clone(),
                view: View::Around { radius: 5 },
            },
            ClientMsg::Unsubscribe {
                board: b,
                view: ViewKind::Around,
            },
            ClientMsg::Ping,
        ]
    }

    /// Every server message, with its optional fields both present and absent.
    fn server_samples() -> Vec<ServerMsg> {
        let entry = Entry {
            rank: 1,
            player: "bob".into(),
            score: 3,
            name: Some("Bob".into()),
            reached_ms: Some(17),
        };
        vec![
            ServerMsg::Welcome {
                protocol: PROTOCOL_VERSION,
                player: None,
                server_time_ms: 1,
            },
            ServerMsg::Welcome {
                protocol: PROTOCOL_VERSION,
                player: Some("ann".into()),
                server_time_ms: 1,
            },
            ServerMsg::Ack {
                id: "c-1".into(),
                board: "b".into(),
                season: "all".into(),
                score: 5,
                rank: 1,
                previous_rank: None,
                duplicate: false,
            },
            ServerMsg::Run {
                id: "r-1".into(),
                board: "b".into(),
                run: "run-1".into(),
                seed: 7,
                started_ms: 1,
                expires_ms: 2,
            },
            ServerMsg::Joined {
                id: "j-1".into(),
                board: "b".into(),
                season: "all".into(),
                player: "ann".into(),
                joined_ms: 1,
            },
            ServerMsg::Rejected {
                id: Some("c-1".into()),
                code: ErrorCode::RateLimited,
                message: "m".into(),
                retry_after_ms: Some(5),
            },
            ServerMsg::Rejected {
                id: None,
                code: ErrorCode::InvalidId,
                message: "m".into(),
                retry_after_ms: None,
            },
            ServerMsg::Top {
                board: "b".into(),
                season: "all".into(),
                total: 1,
                entries: vec![entry.clone()],
                seq: 1,
                resync: true,
            },
            ServerMsg::Rank {
                board: "b".into(),
                season: "all".into(),
                player: "bob".into(),
                score: Some(3),
                rank: Some(1),
                previous_rank: Some(2),
                seq: 2,
                resync: false,
            },
            ServerMsg::Rank {
                board: "b".into(),
                season: "all".into(),
                player: "bob".into(),
                score: None,
                rank: None,
                previous_rank: None,
                seq: 2,
                resync: true,
            },
            ServerMsg::Around {
                board: "b".into(),
                season: "all".into(),
                entries: vec![entry.clone()],
                seq: 3,
                resync: false,
            },
            ServerMsg::Tournament {
                board: "b".into(),
                season: "all".into(),
                event: "started".into(),
                start_ms: Some(1),
                end_ms: Some(2),
                total: None,
                standings: None,
                rank: None,
            },
            ServerMsg::Tournament {
                board: "b".into(),
                season: "all".into(),
                event: "ended".into(),
                start_ms: None,
                end_ms: Some(2),
                total: Some(1),
                standings: Some(vec![entry]),
                rank: Some(1),
            },
            ServerMsg::Notify {
                kind: "reward".into(),
                payload: json!({"rank": 1}),
            },
            ServerMsg::Pong,
            ServerMsg::error(ErrorCode::BadRequest, "m"),
        ]
    }

    /// Checks one serialized message against its documented payload: the `type` is the
    /// documented constant, every field it has is a documented property and every required
    /// property is there.
    fn check_payload(doc: &Value, tag: &str, wire: &Value) {
        let payload = &doc["components"]["messages"][tag]["payload"];
        assert!(payload.is_object(), "no message `{tag}` in the document");
        assert_eq!(payload["properties"]["type"]["const"], tag);
        let props = payload["properties"].as_object().unwrap();
        for key in wire.as_object().unwrap().keys() {
            assert!(
                props.contains_key(key),
                "`{tag}` sends `{key}`, undocumented"
            );
        }
        for key in payload["required"].as_array().unwrap() {
            let key = key.as_str().unwrap();
            assert!(
                wire.get(key).is_some(),
                "`{tag}` documents `{key}` as required: {wire}"
            );
        }
    }

    /// The document names every client message type of the shared crate as a message the server
    /// receives, with the payload the type serializes to.
    #[test]
    fn every_client_message_is_documented() {
        let doc = doc();
        let received = messages_of(&doc, "receive");
        let mut tags = BTreeSet::new();
        for m in client_samples() {
            let wire: Value = serde_json::from_str(&m.to_json()).unwrap();
            let tag = client_tag(&m);
            assert_eq!(wire["type"], tag, "serde's tag");
            assert!(
                received.contains(tag),
                "`{tag}` is not received by any operation"
            );
            check_payload(&doc, tag, &wire);
            tags.insert(tag.to_owned());
        }
        assert_eq!(
            received, tags,
            "documented client messages that do not exist"
        );
    }

    /// As above, for every server message type: sent by an operation or as a reply.
    #[test]
    fn every_server_message_is_documented() {
        let doc = doc();
        let sent = messages_of(&doc, "send");
        let mut tags = BTreeSet::new();
        for m in server_samples() {
            let wire: Value = serde_json::from_str(&m.to_json()).unwrap();
            let tag = server_tag(&m);
            assert_eq!(wire["type"], tag, "serde's tag");
            assert!(sent.contains(tag), "`{tag}` is not sent by any operation");
            check_payload(&doc, tag, &wire);
            tags.insert(tag.to_owned());
        }
        assert_eq!(sent, tags, "documented server messages that do not exist");
    }

    /// Every message's example is a real message: the shared crate parses it (client ones as
    /// the server reads them, server ones as the SDK does) and its type is the message's name.
    #[test]
    fn every_example_parses_as_its_message() {
        let doc = doc();
        let received = messages_of(&doc, "receive");
        let sent = messages_of(&doc, "send");
        for (name, m) in doc["components"]["messages"].as_object().unwrap() {
            assert!(
                received.contains(name) != sent.contains(name),
                "`{name}` must go one way: received by an operation or sent"
            );
            for ex in m["examples"].as_array().unwrap() {
                let text = ex["payload"].to_string();
                if received.contains(name) {
                    let parsed = ClientMsg::parse(&text)
                        .unwrap_or_else(|e| panic!("example of `{name}`: {e:?}"));
                    assert_eq!(client_tag(&parsed), name);
                } else {
                    let parsed = ServerMsg::parse(&text)
                        .unwrap_or_else(|e| panic!("example of `{name}`: {e}"));
                    assert_eq!(server_tag(&parsed), name);
                }
            }
        }
    }

    /// The bounds in the document are the code's: ids, points, view sizes, the protocol version
    /// and the table of error codes.
    #[test]
    fn bounds_match_the_constants() {
        let doc = doc();
        let schemas = &doc["components"]["schemas"];
        assert_eq!(schemas["Id"]["maxLength"], json!(MAX_ID_LEN));
        assert_eq!(schemas["Id"]["minLength"], 1);
        assert_eq!(schemas["Id"]["pattern"], ID_PATTERN);
        assert_eq!(schemas["Points"]["maximum"], json!(MAX_POINTS));
        assert_eq!(schemas["Points"]["minimum"], json!(-MAX_POINTS));
        let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(schemas["ErrorCode"]["enum"], json!(codes));

        let messages = &doc["components"]["messages"];
        let sub = &messages["subscribe"]["payload"]["properties"];
        assert_eq!(sub["limit"]["maximum"], json!(protocol::MAX_TOP_LIMIT));
        assert_eq!(sub["limit"]["default"], json!(protocol::DEFAULT_TOP_LIMIT));
        assert_eq!(sub["radius"]["maximum"], json!(protocol::MAX_RADIUS));
        assert_eq!(sub["radius"]["default"], json!(protocol::DEFAULT_RADIUS));
        assert_eq!(
            messages["welcome"]["payload"]["properties"]["protocol"]["const"],
            json!(PROTOCOL_VERSION)
        );
        assert_eq!(doc["info"]["version"], PROTOCOL_VERSION.to_string());
    }
}
