//! A misbehaving ACME CA for the manager's tests, in-process on
//! 127.0.0.1 over plain HTTP: it validates nothing (or fails tls-alpn-01
//! when told to) and issues what its [`Mode`] says, good or bad.

use crate::ascii::IgnoreCase;
use std::io::{Read as _, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::cert::{self, Alt, Template};
use super::key::{Key, KeyError, Signer};
use crate::http::json::{self, Json};
use crate::tls::der::Writer;

/// What the CA issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A good certificate for the names requested, valid 90 days.
    Good,
    /// One that expired yesterday.
    Expired,
    /// One for `other.test` instead of the names requested.
    OtherName,
    /// One for a key of the CA's own, not the request's.
    OtherKey,
}

/// What the CA was asked, and how it behaves.
#[derive(Debug, Default)]
pub struct Seen {
    /// Requests, as `METHOD /path`.
    pub requests: Vec<String>,
    /// The challenge kinds answered, in order.
    pub challenges: Vec<String>,
    /// Whether each newAccount request carried an external account
    /// binding.
    pub bound: Vec<bool>,
    /// A file (a storage's account lock) whose presence each newAccount
    /// request notes in `watched`.
    pub watch: Option<std::path::PathBuf>,
    pub watched: Vec<bool>,
    /// The last request's CSR (DER).
    csr: Option<Vec<u8>>,
    /// The last challenge answered.
    last: Option<String>,
}

/// The CA, running until dropped.
pub struct FakeCa {
    /// Its directory's URL.
    pub url: String,
    /// What it saw.
    pub seen: Arc<Mutex<Seen>>,
    /// What it issues (changeable between orders).
    pub mode: Arc<Mutex<Mode>>,
    /// Whether tls-alpn-01 validations fail (port 443 unreachable).
    pub alpn_fails: Arc<AtomicBool>,
    /// Whether its directory says a new account needs an external
    /// account binding (`meta.externalAccountRequired`).
    pub eab_required: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    /// The storages of the managers a test put in front of it, removed
    /// with it.
    pub storages: std::cell::RefCell<Vec<std::path::PathBuf>>,
}

impl Drop for FakeCa {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for dir in self.storages.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

impl FakeCa {
    /// How many orders it was asked for.
    pub fn orders(&self) -> usize {
        let seen = self.seen.lock().unwrap();
        seen.requests.iter().filter(|r| *r == "POST /o").count()
    }
}

/// A subject key known only by its public key (from a request).
struct Public(Vec<u8>);

impl Signer for Public {
    fn pkcs8(&self) -> &[u8] {
        &[]
    }
    fn spki(&self, w: &mut Writer) {
        w.raw(&self.0);
    }
    fn algorithm(&self, _: &mut Writer) {}
    fn sign_der(&self, _: &[u8]) -> Result<Vec<u8>, KeyError> {
        Err(KeyError("no private key".into()))
    }
}

/// One DER element of `d`: its tag, contents, and the whole of it; and
/// the rest.
fn tlv(d: &[u8]) -> (u8, &[u8], &[u8], &[u8]) {
    let (tag, first) = (d[0], d[1]);
    let (len, start) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let n = usize::from(first & 0x7f);
        let len = d[2..2 + n]
            .iter()
            .fold(0usize, |a, b| a << 8 | usize::from(*b));
        (len, 2 + n)
    };
    (
        tag,
        &d[start..start + len],
        &d[..start + len],
        &d[start + len..],
    )
}

/// The SubjectPublicKeyInfo of a certification request (RFC 2986 §4).
fn request_spki(csr: &[u8]) -> Vec<u8> {
    let (_, req, _, _) = tlv(csr);
    let (_, info, _, _) = tlv(req);
    let (_, _, _, rest) = tlv(info); // version
    let (_, _, _, rest) = tlv(rest); // subject
    let (_, _, spki, _) = tlv(rest);
    spki.to_vec()
}

/// The dNSNames the request asks for (its extensionRequest).
fn request_names(csr: &[u8]) -> Vec<String> {
    // (Good enough for brisk's own requests: every [2] IMPLICIT string
    // after the key.)
    let mut names = Vec::new();
    let mut i = 0;
    while i + 2 < csr.len() {
        if csr[i] == 0x82 && csr[i + 1] < 0x80 {
            let n = usize::from(csr[i + 1]);
            if let Some(s) = csr.get(i + 2..i + 2 + n) {
                if let Ok(s) = std::str::from_utf8(s) {
                    if s.ends_with(".test") {
                        names.push(s.to_string());
                        i += 2 + n;
                        continue;
                    }
                }
            }
        }
        i += 1;
    }
    names
}

fn b64d(s: &str) -> Vec<u8> {
    use base64ct::Encoding as _;
    let mut out = vec![0u8; s.len()];
    let n = base64ct::Base64UrlUnpadded::decode(s, &mut out).map_or(0, |d| d.len());
    out.truncate(n);
    out
}

/// Starts the CA.
/// A request the CA's thread hands to its handler: method, path, body.
pub struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub body: &'a [u8],
}

/// An answer: status line's tail, extra header lines, content type,
/// body.
pub type Reply = (&'static str, String, &'static str, String);

/// Answers requests on 127.0.0.1 (one connection each) with `handle`,
/// until `stop`; its base URL.
pub fn serve(
    stop: Arc<AtomicBool>,
    mut handle: impl FnMut(&str, Request<'_>) -> Reply + Send + 'static,
) -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    let at = base.clone();
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let Ok((mut sock, _)) = l.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            sock.set_nonblocking(false).unwrap();
            let mut head = Vec::new();
            let mut b = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && sock.read(&mut b).unwrap_or(0) == 1 {
                head.push(b[0]);
            }
            let head = String::from_utf8_lossy(&head).to_string();
            let mut words = head.split(' ');
            let method = words.next().unwrap_or("").to_string();
            let path = words.next().unwrap_or("").to_string();
            let length = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            let mut body = vec![0u8; length];
            let _ = sock.read_exact(&mut body);
            let req = Request {
                method: &method,
                path: &path,
                body: &body,
            };
            let (status, extra, ctype, answer) = handle(&at, req);
            let sent = if method == "HEAD" { "" } else { &answer };
            let _ = write!(
                sock,
                "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nReplay-Nonce: n{}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{sent}",
                crate::tls::certs::now(),
                answer.len()
            );
        }
    });
    base
}

/// Starts the CA, issuing as `mode` says.
pub fn start(mode: Mode) -> FakeCa {
    let stop = Arc::new(AtomicBool::new(false));
    let (seen, mode) = (Arc::<Mutex<Seen>>::default(), Arc::new(Mutex::new(mode)));
    let alpn_fails = Arc::<AtomicBool>::default();
    let eab_required = Arc::<AtomicBool>::default();
    let ca_key = Key::generate().unwrap();
    let ca_cert = cert::certificate(
        &Template {
            names: &[],
            common_name: Some("fake CA"),
            serial: cert::serial().unwrap(),
            not_before: 0,
            not_after: crate::tls::certs::now() + 86_400 * 365,
            ca: true,
            acme_identifier: None,
        },
        &ca_key,
        None,
    )
    .unwrap();
    let (seen_, mode_, alpn_fails_, eab_required_, stop_) = (
        Arc::clone(&seen),
        Arc::clone(&mode),
        Arc::clone(&alpn_fails),
        Arc::clone(&eab_required),
        Arc::clone(&stop),
    );
    let base = serve(stop_, move |base, req| {
        let payload = json::decode(req.body)
            .ok()
            .and_then(|v| v.get("payload").and_then(Json::as_str).map(b64d))
            .unwrap_or_default();
        let mut s = seen.lock().unwrap();
        s.requests.push(format!("{} {}", req.method, req.path));
        let order = |s: &Seen| {
            let status = if s.csr.is_some() { "valid" } else { "pending" };
            format!(
                r#"{{"status":"{status}","authorizations":["{base}/z"],"finalize":"{base}/f","certificate":"{base}/cert"}}"#
            )
        };
        let reply = match (req.method, req.path) {
            ("GET", "/dir") => (
                "200 OK",
                String::new(),
                "application/json",
                format!(
                    r#"{{"newNonce":"{base}/n","newAccount":"{base}/a","newOrder":"{base}/o","meta":{{"externalAccountRequired":{}}}}}"#,
                    eab_required.load(Ordering::Relaxed)
                ),
            ),
            ("HEAD", "/n") => ("200 OK", String::new(), "text/plain", String::new()),
            ("POST", "/a") => {
                let bound =
                    json::decode(&payload).is_ok_and(|v| v.get("externalAccountBinding").is_some());
                s.bound.push(bound);
                if let Some(watched) = s.watch.as_ref().map(|f| f.exists()) {
                    s.watched.push(watched);
                }
                (
                    "201 Created",
                    format!("Location: {base}/acct/1\r\n"),
                    "application/json",
                    r#"{"status":"valid"}"#.into(),
                )
            }
            ("POST", "/o") => {
                s.csr = None;
                s.last = None;
                (
                    "201 Created",
                    format!("Location: {base}/o/1\r\n"),
                    "application/json",
                    order(&s),
                )
            }
            ("POST", "/o/1") => ("200 OK", String::new(), "application/json", {
                let o = order(&s);
                o.replace("pending", "ready")
            }),
            ("POST", "/z") => {
                let authz = match s.last.as_deref() {
                    None => format!(
                        r#"{{"status":"pending","identifier":{{"type":"dns","value":"e.test"}},"challenges":[{{"type":"tls-alpn-01","url":"{base}/c/tls-alpn-01","token":"t1"}},{{"type":"http-01","url":"{base}/c/http-01","token":"t2"}}]}}"#
                    ),
                    Some("tls-alpn-01") if alpn_fails.load(Ordering::Relaxed) => {
                        r#"{"status":"invalid","challenges":[{"type":"tls-alpn-01","error":{"type":"urn:ietf:params:acme:error:connection","detail":"127.0.0.1: Connection refused"}}]}"#.to_string()
                    }
                    Some(_) => r#"{"status":"valid"}"#.to_string(),
                };
                ("200 OK", String::new(), "application/json", authz)
            }
            ("POST", p) if p.starts_with("/c/") => {
                let kind = p["/c/".len()..].to_string();
                s.challenges.push(kind.clone());
                s.last = Some(kind);
                ("200 OK", String::new(), "application/json", "{}".into())
            }
            ("POST", "/f") => {
                let csr = json::decode(&payload)
                    .ok()
                    .and_then(|v| v.get("csr").and_then(Json::as_str).map(b64d));
                s.csr = csr;
                ("200 OK", String::new(), "application/json", order(&s))
            }
            ("POST", "/cert") => {
                let csr = s.csr.clone().unwrap_or_default();
                let now = crate::tls::certs::now();
                let mode = *mode.lock().unwrap();
                let (nb, na) = match mode {
                    Mode::Expired => (now - 10 * 86_400, now - 86_400),
                    _ => (now - 3600, now + 90 * 86_400),
                };
                let mut names = request_names(&csr);
                if mode == Mode::OtherName {
                    names = vec!["other.test".into()];
                }
                let alts: Vec<Alt<'_>> = names.iter().map(|n| Alt::Dns(n)).collect();
                let own = Key::generate().unwrap();
                let public = Public(request_spki(&csr));
                let subject: &dyn Signer = match mode {
                    Mode::OtherKey => &own,
                    _ => &public,
                };
                let t = Template {
                    names: &alts,
                    common_name: None,
                    serial: cert::serial().unwrap(),
                    not_before: nb,
                    not_after: na,
                    ca: false,
                    acme_identifier: None,
                };
                let leaf = cert::certificate(&t, subject, Some((&ca_key, "fake CA"))).unwrap();
                (
                    "200 OK",
                    String::new(),
                    "application/pem-certificate-chain",
                    cert::pem("CERTIFICATE", &leaf) + &cert::pem("CERTIFICATE", &ca_cert),
                )
            }
            _ => (
                "404 Not Found",
                String::new(),
                "application/problem+json",
                r#"{"type":"urn:ietf:params:acme:error:malformed"}"#.into(),
            ),
        };
        drop(s);
        reply
    });
    FakeCa {
        url: format!("{base}/dir"),
        seen: seen_,
        mode: mode_,
        alpn_fails: alpn_fails_,
        eab_required: eab_required_,
        stop,
        storages: Default::default(),
    }
}
