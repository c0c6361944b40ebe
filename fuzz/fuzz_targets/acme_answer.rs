//! What an ACME CA sends brisk's client (`brisk::acme`): the input as a
//! whole HTTP answer (`acme::http::parse`: the head, interim answers, the
//! body by length, chunked or until close; `Retry-After`, `Link`), and
//! its body, or the input itself, as the JSON the client decodes (the
//! reader, `http::json`) and then as each object the client reads from
//! it: a directory, a problem document, an order, an authorization, a
//! failed order's error. Beyond "never panics": a decoded document
//! encodes back to itself, each decoder accepts exactly what has the
//! members it needs, and what it returns comes from the document.

#![no_main]

use brisk::acme::client::{self, AcmeError, Directory, HTTP_01, TLS_ALPN_01};
use brisk::acme::http::{self, Answer, MAX_ANSWER};
use brisk::http::json::{self, Json};
use libfuzzer_sys::fuzz_target;

/// `v` as JSON text (the decoder's inverse).
fn encode(v: &Json, out: &mut Vec<u8>) {
    match v {
        Json::Null => out.extend_from_slice(b"null"),
        Json::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Json::Int(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Json::Float(f) => {
            assert!(f.is_finite(), "a number decoded as {f}");
            json::push_f64(out, *f);
        }
        Json::Str(s) => json::push_string(s, out),
        Json::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                encode(item, out);
            }
            out.push(b']');
        }
        Json::Object(members) => {
            out.push(b'{');
            for (i, (name, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json::push_string(name, out);
                out.push(b':');
                encode(item, out);
            }
            out.push(b'}');
        }
    }
}

fn text<'a>(v: &'a Json, name: &str) -> Option<&'a str> {
    v.get(name).and_then(Json::as_str)
}

/// Every decoder of the client over the document `v`.
fn objects(v: &Json) {
    let mut again = Vec::new();
    encode(v, &mut again);
    assert_eq!(
        json::decode(&again).as_ref(),
        Ok(v),
        "{}",
        String::from_utf8_lossy(&again)
    );

    let needed = ["newNonce", "newAccount", "newOrder"];
    match Directory::from_json(v) {
        Ok(d) => {
            assert_eq!(Some(d.new_nonce.as_str()), text(v, "newNonce"));
            assert_eq!(Some(d.new_account.as_str()), text(v, "newAccount"));
            assert_eq!(Some(d.new_order.as_str()), text(v, "newOrder"));
            assert_eq!(d.renewal_info.as_deref(), text(v, "renewalInfo"));
        }
        Err(_) => assert!(needed.iter().any(|k| text(v, k).is_none())),
    }

    match client::order_urls(v) {
        Ok((authzs, finalize)) => {
            assert_eq!(Some(finalize.as_str()), text(v, "finalize"));
            let listed = v.get("authorizations").map_or(&[][..], Json::items);
            assert!(authzs.len() <= listed.len());
            assert!(authzs
                .iter()
                .all(|a| listed.iter().any(|l| l.as_str() == Some(a))));
        }
        Err(_) => assert!(text(v, "finalize").is_none()),
    }

    for kinds in [&[TLS_ALPN_01, HTTP_01][..], &[HTTP_01], &[]] {
        match client::choose(v, kinds) {
            Ok(None) => assert_eq!(text(v, "status"), Some("valid")),
            Ok(Some(c)) => {
                assert!(kinds.contains(&c.kind));
                let offered = v.get("challenges").map_or(&[][..], Json::items);
                assert!(offered.iter().any(|ch| text(ch, "type") == Some(c.kind)
                    && text(ch, "url") == Some(c.url)
                    && text(ch, "token") == Some(c.token)));
                let id = v.get("identifier").and_then(|i| text(i, "value"));
                assert_eq!(id, Some(c.name.as_str()));
            }
            Err(_) => {}
        }
    }

    // A failed order or authorization: its error, or its challenges'.
    let e = client::failure(v, "https://ca.test/order/1", "invalid");
    let _ = e.to_string();
    let held = v.get("error").is_some()
        || v.get("challenges")
            .map_or(&[][..], Json::items)
            .iter()
            .any(|c| c.get("error").is_some());
    assert_eq!(matches!(e, AcmeError::Problem { .. }), held);
}

/// The client's reading of a failed answer's body: a problem document
/// when it is a JSON object with a `type`.
fn problem(body: &[u8]) {
    let a = Answer {
        status: 400,
        fields: Vec::new(),
        body: body.to_vec(),
    };
    let e = client::problem(&a);
    let _ = e.to_string();
    let doc = json::decode(body).ok();
    let typed = doc.as_ref().is_some_and(|d| d.get("type").is_some());
    assert_eq!(matches!(e, AcmeError::Problem { .. }), typed);
    if let (AcmeError::Problem { kind, .. }, Some(d)) = (&e, &doc) {
        assert_eq!(kind.as_str(), text(d, "type").unwrap_or(""));
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(v) = json::decode(data) {
        objects(&v);
    }
    problem(data);
    for head in [false, true] {
        let Ok(a) = http::parse(data, head) else {
            continue;
        };
        assert!((200..=599).contains(&a.status));
        assert!(a.body.len() <= data.len().min(MAX_ANSWER));
        assert!(!head || a.body.is_empty());
        assert!(a.fields.iter().all(|(n, _)| *n == n.to_ascii_lowercase()));
        let _ = client::retry_after(&a);
        for link in a.links("alternate").iter().chain(&a.links("up")) {
            assert!(!link.contains('>'));
        }
        if let Ok(v) = json::decode(&a.body) {
            objects(&v);
        }
        problem(&a.body);
    }
});
