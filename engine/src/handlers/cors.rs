//! `[[cors]]` rules (Fetch standard, "CORS protocol"): the preflight
//! (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is
//! answered 204 by the rule itself, before `[[auth]]` (a preflight never
//! carries credentials), and every other answer under the rule, errors
//! included, gets `Access-Control-Allow-Origin` and its companions.
//!
//! `origins = ["*"]` answers `*`; a list echoes the request's `Origin`
//! when it is on it, and says `Vary: Origin` on every answer under the
//! rule, so that no cache hands one origin's answer to another.

use super::{push_header, Body, Plan, Scratch};
use crate::ascii::IgnoreCase;
use crate::config::rules::{CorsRule, Origins};
use crate::http::request::OwnedRequest;
use crate::http::{Method, Status};

/// The first rule whose path matches, if any.
pub fn rule_for<'r>(rules: &'r [CorsRule], path: &[u8]) -> Option<&'r CorsRule> {
    rules.iter().find(|r| r.matcher.matches(path))
}

/// The answer to a CORS preflight under `rule`, if `req` is one: 204
/// with the rule's `Access-Control-Allow-*` (only the `Vary` for an
/// origin the rule does not allow, which the browser then refuses).
pub fn preflight(rule: &CorsRule, req: &OwnedRequest, s: &mut Scratch) -> Option<Plan> {
    if req.method() != Method::Options {
        return None;
    }
    req.header("access-control-request-method")?;
    let origin = req.header("origin")?;
    if allow_origin(rule, Some(origin), &mut s.headers) {
        s.header("Access-Control-Allow-Methods", rule.methods.as_bytes());
        if !rule.headers.is_empty() {
            s.header("Access-Control-Allow-Headers", rule.headers.as_bytes());
        }
        if let Some(age) = rule.max_age {
            let mut v = Vec::with_capacity(8);
            crate::http::push_u64(&mut v, age);
            s.header("Access-Control-Max-Age", &v);
        }
    }
    Some(Plan {
        status: Status::NO_CONTENT,
        body: Body::Empty,
        close: false,
    })
}

/// Adds the rule's header lines to an answer's (any status): brisk's
/// own, or a CGI program's unless it wrote `Access-Control-Allow-Origin`
/// itself (then the program's CORS headers are left as they are).
pub fn decorate(rule: &CorsRule, req: &OwnedRequest, lines: &mut Vec<u8>) {
    if has_field(lines, b"access-control-allow-origin") {
        return;
    }
    if allow_origin(rule, req.header("origin"), lines) && !rule.expose.is_empty() {
        push_header(
            lines,
            "Access-Control-Expose-Headers",
            rule.expose.as_bytes(),
        );
    }
}

/// Whether header `lines` (`Name: value\r\n` each) have a field `name`
/// (lower case).
fn has_field(lines: &[u8], name: &[u8]) -> bool {
    lines.split(|&b| b == b'\n').any(|line| {
        line.len() > name.len()
            && line[name.len()] == b':'
            && line[..name.len()].eq_ignore_case(name)
    })
}

/// Writes `Access-Control-Allow-Origin` (and `-Credentials`) when
/// `origin` is allowed, and `Vary: Origin` for a list; whether it was.
fn allow_origin(rule: &CorsRule, origin: Option<&[u8]>, lines: &mut Vec<u8>) -> bool {
    match &rule.origins {
        Origins::Any => {
            if origin.is_none() {
                return false;
            }
            push_header(lines, "Access-Control-Allow-Origin", b"*");
            true
        }
        Origins::List(list) => {
            push_header(lines, "Vary", b"Origin");
            let Some(origin) = origin else { return false };
            if !list.iter().any(|o| o.as_bytes().eq_ignore_case(origin)) {
                return false;
            }
            push_header(lines, "Access-Control-Allow-Origin", origin);
            if rule.credentials {
                push_header(lines, "Access-Control-Allow-Credentials", b"true");
            }
            true
        }
    }
}

// (Through the configuration, whose rules need the cargo feature `sites`.)
#[cfg(all(test, feature = "sites"))]
mod tests {
    use super::*;
    use crate::config::rules::from_toml;
    use crate::http::parse::Limits;

    const LIMITS: Limits = Limits {
        max_request_line: 8192,
        max_head: 8192,
        max_headers: 100,
    };

    fn req(head: &str) -> OwnedRequest {
        let mut r = OwnedRequest::default();
        assert!(r.parse(head.as_bytes(), &LIMITS).unwrap().is_some());
        r
    }

    fn headers(s: &Scratch) -> String {
        String::from_utf8(s.headers.clone()).unwrap()
    }

    const LISTED: &str = "[[cors]]\npath = \"/api/\"\norigins = [\"https://a.example\"]\nmethods = [\"GET\", \"PUT\"]\nheaders = [\"Content-Type\"]\ncredentials = true\nmax_age = 600\nexpose_headers = [\"X-Total\"]\n";

    #[test]
    fn preflight_of_a_listed_origin() {
        let cfg = from_toml(LISTED).unwrap();
        let rule = rule_for(&cfg.site.rules.cors, b"/api/x").unwrap();
        assert!(rule_for(&cfg.site.rules.cors, b"/other").is_none());
        let r = req("OPTIONS /api/x HTTP/1.1\r\nHost: h\r\nOrigin: https://a.example\r\nAccess-Control-Request-Method: PUT\r\n\r\n");
        let mut s = Scratch::default();
        let plan = preflight(rule, &r, &mut s).unwrap();
        assert_eq!(plan.status, Status::NO_CONTENT);
        assert_eq!(
            headers(&s),
            "Vary: Origin\r\nAccess-Control-Allow-Origin: https://a.example\r\nAccess-Control-Allow-Credentials: true\r\nAccess-Control-Allow-Methods: GET, PUT\r\nAccess-Control-Allow-Headers: Content-Type\r\nAccess-Control-Max-Age: 600\r\n"
        );
        // Another origin: 204 without permission; the browser refuses.
        let r = req("OPTIONS /api/x HTTP/1.1\r\nHost: h\r\nOrigin: https://b.example\r\nAccess-Control-Request-Method: PUT\r\n\r\n");
        let mut s = Scratch::default();
        assert!(preflight(rule, &r, &mut s).is_some());
        assert_eq!(headers(&s), "Vary: Origin\r\n");
        // A plain OPTIONS is no preflight.
        let r = req("OPTIONS /api/x HTTP/1.1\r\nHost: h\r\nOrigin: https://a.example\r\n\r\n");
        assert!(preflight(rule, &r, &mut Scratch::default()).is_none());
    }

    #[test]
    fn answers_get_the_headers() {
        let cfg = from_toml(LISTED).unwrap();
        let rule = &cfg.site.rules.cors[0];
        let r = req("GET /api/x HTTP/1.1\r\nHost: h\r\nOrigin: https://A.example\r\n\r\n");
        let mut s = Scratch::default();
        decorate(rule, &r, &mut s.headers);
        assert_eq!(
            headers(&s),
            "Vary: Origin\r\nAccess-Control-Allow-Origin: https://A.example\r\nAccess-Control-Allow-Credentials: true\r\nAccess-Control-Expose-Headers: X-Total\r\n"
        );
        let any = from_toml("[[cors]]\npattern = \"*.json\"\norigins = \"*\"\n").unwrap();
        let rule = rule_for(&any.site.rules.cors, b"/d/x.json").unwrap();
        let mut s = Scratch::default();
        decorate(rule, &r, &mut s.headers);
        assert_eq!(headers(&s), "Access-Control-Allow-Origin: *\r\n");
        // No Origin, no CORS headers (and nothing to vary on for "*").
        let r = req("GET /x.json HTTP/1.1\r\nHost: h\r\n\r\n");
        let mut s = Scratch::default();
        decorate(rule, &r, &mut s.headers);
        assert_eq!(headers(&s), "");
    }

    #[test]
    fn credentials_with_any_origin_is_a_config_error() {
        let err = from_toml("[[cors]]\npath = \"/\"\norigins = [\"*\"]\ncredentials = true\n")
            .unwrap_err()
            .message;
        assert!(
            err.starts_with(
                "test.toml:4: cors[1].credentials: credentials = true needs a list of origins"
            ),
            "{err}"
        );
        let err = from_toml("[[cors]]\npath = \"/\"\norigins = [\"https://a.example/x\"]\n")
            .unwrap_err()
            .message;
        assert!(
            err.starts_with("test.toml:3: cors[1].origins: expected \"*\" or origins like"),
            "{err}"
        );
    }
}
