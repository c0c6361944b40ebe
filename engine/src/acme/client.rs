//! RFC 8555's client: an account at a CA's directory, and an order from
//! its creation to the certificate chain (§7.1's flow: order,
//! authorizations, challenges, finalize with a request, download).
//!
//! Blocking, for the ACME thread. Every request is a JWS (§6.2) with a
//! fresh nonce (§6.5: each answer brings the next in `Replay-Nonce`; a
//! `badNonce` error is retried with the nonce it brought, as §6.5 says a
//! client should); the server's errors are its problem documents (RFC
//! 7807, §6.7), kept whole for the log.

use std::time::{Duration, Instant};

use super::cert;
use super::http::{Answer, Client};
use super::key::{b64url, Key, Signer};
use crate::http::json::{self, Json};

/// How many times a request is sent again after `badNonce`.
const NONCE_RETRIES: usize = 5;

/// How long an order may take from its creation to its certificate
/// (validations included) before it is given up.
pub const ORDER_DEADLINE: Duration = Duration::from_secs(300);

/// What a CA's directory (§7.1.1) names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directory {
    /// `newNonce`.
    pub new_nonce: String,
    /// `newAccount`.
    pub new_account: String,
    /// `newOrder`.
    pub new_order: String,
    /// `renewalInfo` (RFC 9773), when the CA offers it.
    pub renewal_info: Option<String>,
    /// `meta.termsOfService`.
    pub terms_of_service: Option<String>,
    /// `meta.externalAccountRequired`: a new account needs an external
    /// account binding (§7.3.4).
    pub external_account_required: bool,
}

/// An external account binding (§7.3.4): the key identifier and the MAC
/// key a CA that requires one (ZeroSSL, Google Trust Services, private
/// CAs) gives with the account at its site, to tie the ACME account to
/// it. Sent only when an account is made.
#[derive(Clone, PartialEq, Eq)]
pub struct Eab {
    /// The key identifier (`kid`), as the CA gives it.
    pub kid: String,
    /// The MAC key, decoded from the base64url the CA gives.
    pub hmac_key: Vec<u8>,
}

impl std::fmt::Debug for Eab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // (Never the MAC key.)
        write!(f, "Eab {{ kid: {:?}, hmac_key: .. }}", self.kid)
    }
}

impl Drop for Eab {
    fn drop(&mut self) {
        self.hmac_key.fill(0);
        std::hint::black_box(&self.hmac_key);
    }
}

impl Eab {
    /// The `externalAccountBinding` of a newAccount request to `url`
    /// (§7.3.4) for the account key of `jwk`: a flattened JWS whose
    /// protected header is `{"alg":"HS256","kid":…,"url":…}` (no nonce),
    /// whose payload is the JWK, MAC'd with HMAC-SHA256 (RFC 7518 §3.2)
    /// under the MAC key.
    pub fn binding(&self, url: &str, jwk: &str) -> String {
        let protected = format!(
            r#"{{"alg":"HS256","kid":{},"url":{}}}"#,
            quoted(&self.kid),
            quoted(url)
        );
        let protected = b64url(protected.as_bytes());
        let payload = b64url(jwk.as_bytes());
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &self.hmac_key);
        let tag = ring::hmac::sign(&key, format!("{protected}.{payload}").as_bytes());
        format!(
            r#"{{"protected":"{protected}","payload":"{payload}","signature":"{}"}}"#,
            b64url(tag.as_ref())
        )
    }
}

/// Why talking to the CA failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcmeError {
    /// The connection or the HTTP exchange.
    Http(String),
    /// The CA's problem document: its status, `type`, `detail`.
    Problem {
        /// The answer's status.
        status: u16,
        /// `type`, such as `urn:ietf:params:acme:error:rateLimited`.
        kind: String,
        /// `detail` (with the subproblems' when there are some).
        detail: String,
    },
    /// An answer that does not follow the protocol, or a failure of ours
    /// (a key, a deadline).
    Protocol(String),
}

impl std::fmt::Display for AcmeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AcmeError::Http(e) | AcmeError::Protocol(e) => f.write_str(e),
            AcmeError::Problem {
                status,
                kind,
                detail,
            } => write!(f, "{kind} ({status}): {detail}"),
        }
    }
}

fn protocol(what: impl Into<String>) -> AcmeError {
    AcmeError::Protocol(what.into())
}

/// A challenge brisk answers, as the ACME thread hands it to whoever
/// serves it (the engine's listeners).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    /// http-01 (§8.3): `/.well-known/acme-challenge/{token}` on port 80
    /// answers `key_authorization`.
    Http01 {
        /// The token (base64url).
        token: String,
        /// `token.thumbprint`.
        key_authorization: String,
    },
    /// tls-alpn-01 (RFC 8737): a handshake for `name` offering only ALPN
    /// `acme-tls/1` gets `certificate` (signed by `key`'s PKCS#8).
    TlsAlpn01 {
        /// The name validated.
        name: String,
        /// The self-signed certificate with the acmeIdentifier.
        certificate: Vec<u8>,
        /// Its key, PKCS#8.
        key: Vec<u8>,
        /// The SHA-256 of the key authorization (its acmeIdentifier):
        /// what another server of a fleet needs to answer it too.
        digest: [u8; 32],
    },
}

/// Challenge kinds by their names in the protocol.
pub const HTTP_01: &str = "http-01";
/// (See [`HTTP_01`].)
pub const TLS_ALPN_01: &str = "tls-alpn-01";

/// Whoever serves challenges while an authorization is validated.
pub trait Responder {
    /// Serves `c` until [`Responder::withdraw`].
    fn publish(&self, c: &Challenge);
    /// Stops serving `c`.
    fn withdraw(&self, c: &Challenge);
    /// What went wrong while publishing since the last call, for the
    /// log (none by default).
    fn take_warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// An account at a CA, and the client that reaches it.
#[derive(Debug)]
pub struct Account {
    http: Client,
    /// The CA's directory.
    pub directory: Directory,
    key: Key,
    /// The account's URL (`kid`), once registered or found.
    pub url: Option<String>,
    nonce: Option<String>,
    /// How long to wait at most between two polls, and at least.
    poll: (Duration, Duration),
    /// The challenge kind of the last validation that failed in the
    /// last order, if one did.
    failed_kind: Option<String>,
}

/// A certificate an order gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    /// The chain, PEM, leaf first.
    pub chain_pem: String,
    /// The order's URL.
    pub order: String,
    /// The certificate the order replaces (RFC 9773 §5), as the CA's
    /// order object names it.
    pub replaces: Option<String>,
    /// Why the CA refused the order as a replacement, when it did (the
    /// order was then made again without `replaces`).
    pub replaces_refused: Option<String>,
}

/// `Retry-After` (RFC 9110 §10.2.3) of `a`: seconds or a date.
pub fn retry_after(a: &Answer) -> Option<Duration> {
    let v = a.field("retry-after")?.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = crate::http::date::parse_http_date(v.as_bytes())?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// The JSON body of `a`.
fn body(a: &Answer) -> Result<Json, AcmeError> {
    json::decode(&a.body).map_err(|e| protocol(format!("the CA's answer: {e}")))
}

/// The string member `name` of `v`.
fn text<'a>(v: &'a Json, name: &str) -> Result<&'a str, AcmeError> {
    v.get(name)
        .and_then(Json::as_str)
        .ok_or_else(|| protocol(format!("the CA's answer has no {name:?}")))
}

/// A JSON string literal of `s`.
fn quoted(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len() + 2);
    json::push_string(s, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

impl Directory {
    /// Reads the directory at `url`.
    pub fn fetch(http: &Client, url: &str) -> Result<Directory, AcmeError> {
        let a = http.get(url).map_err(|e| AcmeError::Http(e.0))?;
        if a.status != 200 {
            return Err(protocol(format!(
                "the directory {url} answered {}",
                a.status
            )));
        }
        Directory::from_json(&body(&a)?)
    }

    /// The directory object `d` (§7.1.1).
    pub fn from_json(d: &Json) -> Result<Directory, AcmeError> {
        let opt = |v: Option<&Json>| v.and_then(Json::as_str).map(str::to_string);
        let meta = d.get("meta");
        Ok(Directory {
            new_nonce: text(d, "newNonce")?.to_string(),
            new_account: text(d, "newAccount")?.to_string(),
            new_order: text(d, "newOrder")?.to_string(),
            renewal_info: opt(d.get("renewalInfo")),
            terms_of_service: opt(meta.and_then(|m| m.get("termsOfService"))),
            external_account_required: matches!(
                meta.and_then(|m| m.get("externalAccountRequired")),
                Some(Json::Bool(true))
            ),
        })
    }
}

impl Account {
    /// The account of `key` at the CA of `directory` (not registered yet:
    /// [`Account::register`]).
    pub fn new(http: Client, directory: Directory, key: Key) -> Account {
        Account {
            http,
            directory,
            key,
            url: None,
            nonce: None,
            poll: (Duration::from_secs(10), Duration::from_millis(500)),
            failed_kind: None,
        }
    }

    /// Polls no faster than `min` and no slower than `max` apart (the
    /// CA's `Retry-After` within them).
    pub fn set_poll(&mut self, min: Duration, max: Duration) {
        self.poll = (max, min);
    }

    /// The challenge kind whose validation failed in the last order
    /// (taken: none until another fails).
    pub fn take_failed_kind(&mut self) -> Option<String> {
        self.failed_kind.take()
    }

    /// The key authorization of `token` (§8.1).
    pub fn key_authorization(&self, token: &str) -> String {
        format!("{token}.{}", self.key.thumbprint())
    }

    /// A nonce: the last answer's, or a new one (§7.2).
    fn nonce(&mut self) -> Result<String, AcmeError> {
        if let Some(n) = self.nonce.take() {
            return Ok(n);
        }
        let a = self
            .http
            .head(&self.directory.new_nonce)
            .map_err(|e| AcmeError::Http(e.0))?;
        a.field("replay-nonce")
            .map(str::to_string)
            .ok_or_else(|| protocol("newNonce gave no Replay-Nonce"))
    }

    /// The JWS of `payload` (None: POST-as-GET, §6.3) for `url`, signed
    /// with the account's `kid`, or its `jwk` before it has one (§6.2).
    pub fn jws(&self, url: &str, nonce: &str, payload: Option<&str>) -> Result<String, AcmeError> {
        let who = match &self.url {
            Some(kid) => format!(r#""kid":{}"#, quoted(kid)),
            None => format!(r#""jwk":{}"#, self.key.jwk()),
        };
        let protected = format!(
            r#"{{"alg":"ES256",{who},"nonce":{},"url":{}}}"#,
            quoted(nonce),
            quoted(url)
        );
        let protected = b64url(protected.as_bytes());
        let payload = b64url(payload.unwrap_or_default().as_bytes());
        let signed = format!("{protected}.{payload}");
        let sig = self
            .key
            .sign_jws(signed.as_bytes())
            .map_err(|e| protocol(e.0))?;
        Ok(format!(
            r#"{{"protected":"{protected}","payload":"{payload}","signature":"{}"}}"#,
            b64url(&sig)
        ))
    }

    /// POSTs `payload` (None: POST-as-GET) to `url`; a problem document
    /// is an error, `badNonce` is sent again.
    pub fn post(&mut self, url: &str, payload: Option<&str>) -> Result<Answer, AcmeError> {
        let mut tries = 0;
        loop {
            let nonce = self.nonce()?;
            let jws = self.jws(url, &nonce, payload)?;
            let a = self
                .http
                .post_jose(url, jws.as_bytes())
                .map_err(|e| AcmeError::Http(e.0))?;
            self.nonce = a.field("replay-nonce").map(str::to_string);
            if a.status < 400 {
                return Ok(a);
            }
            let e = problem(&a);
            let bad_nonce = matches!(&e, AcmeError::Problem { kind, .. }
                if kind == "urn:ietf:params:acme:error:badNonce");
            if !bad_nonce || tries >= NONCE_RETRIES {
                return Err(e);
            }
            tries += 1;
        }
    }

    /// Registers the account, or finds it when the key has one (§7.3),
    /// agreeing to the CA's terms; `email` as its contact. An account
    /// found with another contact (`email` changed or removed since it
    /// was made) is updated to this one (§7.3.2). Its URL, and whether
    /// the contact was updated.
    pub fn register(&mut self, email: Option<&str>) -> Result<(String, bool), AcmeError> {
        self.register_bound(email, None)
    }

    /// [`Account::register`], the request carrying `eab`'s external
    /// account binding (§7.3.4) when there is one: what a CA that
    /// requires one needs to make the account (one that finds it by its
    /// key needs none).
    pub fn register_bound(
        &mut self,
        email: Option<&str>,
        eab: Option<&Eab>,
    ) -> Result<(String, bool), AcmeError> {
        let mailto = email.map(|e| format!("mailto:{e}"));
        let contact = match &mailto {
            Some(m) => format!("[{}]", quoted(m)),
            None => "[]".to_string(),
        };
        let url = self.directory.new_account.clone();
        let mut payload = r#"{"termsOfServiceAgreed":true"#.to_string();
        if mailto.is_some() {
            payload.push_str(&format!(r#","contact":{contact}"#));
        }
        if let Some(eab) = eab {
            let binding = eab.binding(&url, &self.key.jwk());
            payload.push_str(&format!(r#","externalAccountBinding":{binding}"#));
        }
        payload.push('}');
        let a = self.post(&url, Some(&payload))?;
        let kid = a
            .field("location")
            .ok_or_else(|| protocol("newAccount gave no Location"))?
            .to_string();
        self.url = Some(kid.clone());
        // 201: made now, with this contact. 200: found, the body the
        // account as it was, the request's fields ignored (§7.3.1).
        if a.status != 200 {
            return Ok((kid, false));
        }
        let had = body(&a)?;
        let had: Vec<&str> = had
            .get("contact")
            .map(Json::items)
            .unwrap_or_default()
            .iter()
            .filter_map(Json::as_str)
            .collect();
        if had == mailto.as_deref().into_iter().collect::<Vec<_>>() {
            return Ok((kid, false));
        }
        self.post(&kid, Some(&format!(r#"{{"contact":{contact}}}"#)))?;
        Ok((kid, true))
    }

    /// Obtains a certificate for `names` (host names) with `csr_key`:
    /// an order, each authorization by the first kind of `kinds` the CA
    /// offers for it, served by `responder`, then the request and the
    /// chain. Gives up after [`ORDER_DEADLINE`].
    pub fn obtain(
        &mut self,
        names: &[&str],
        kinds: &[&str],
        csr_key: &dyn Signer,
        responder: &dyn Responder,
    ) -> Result<Issued, AcmeError> {
        self.obtain_replacing(names, kinds, csr_key, responder, None)
    }

    /// [`Account::obtain`], the order naming the certificate it replaces
    /// (RFC 9773 §5: `replaces`, the certificate's identifier). When the
    /// CA refuses that order (`alreadyReplaced`, or anything else it
    /// holds against the `replaces`; a rate limit excepted), the order is
    /// made once more without it.
    pub fn obtain_replacing(
        &mut self,
        names: &[&str],
        kinds: &[&str],
        csr_key: &dyn Signer,
        responder: &dyn Responder,
        replaces: Option<&str>,
    ) -> Result<Issued, AcmeError> {
        let deadline = Instant::now() + ORDER_DEADLINE;
        self.failed_kind = None;
        let ids: Vec<String> = names
            .iter()
            .map(|n| format!(r#"{{"type":"dns","value":{}}}"#, quoted(n)))
            .collect();
        let payload = |replaces: Option<&str>| {
            let replaces = replaces
                .map(|r| format!(r#","replaces":{}"#, quoted(r)))
                .unwrap_or_default();
            format!(r#"{{"identifiers":[{}]{replaces}}}"#, ids.join(","))
        };
        let new_order = self.directory.new_order.clone();
        let mut replaces_refused = None;
        let a = match self.post(&new_order, Some(&payload(replaces))) {
            Err(e @ AcmeError::Problem { .. })
                if replaces.is_some()
                    && !matches!(&e, AcmeError::Problem { kind, .. }
                        if kind == "urn:ietf:params:acme:error:rateLimited") =>
            {
                replaces_refused = Some(e.to_string());
                self.post(&new_order, Some(&payload(None)))?
            }
            a => a?,
        };
        let order_url = a
            .field("location")
            .ok_or_else(|| protocol("newOrder gave no Location"))?
            .to_string();
        let (authzs, finalize) = order_urls(&body(&a)?)?;
        for authz in &authzs {
            self.authorize(authz, kinds, responder, deadline)?;
        }
        let order = self.wait(&order_url, &["ready", "valid"], deadline)?;
        let order = if text(&order, "status")? == "ready" {
            let csr = cert::request(
                csr_key,
                &names.iter().map(|n| cert::Alt::Dns(n)).collect::<Vec<_>>(),
            )
            .map_err(|e| protocol(e.0))?;
            let payload = format!(r#"{{"csr":"{}"}}"#, b64url(&csr));
            self.post(&finalize, Some(&payload))?;
            self.wait(&order_url, &["valid"], deadline)?
        } else {
            order
        };
        let cert_url = text(&order, "certificate")?.to_string();
        let a = self.post(&cert_url, None)?;
        let chain_pem =
            String::from_utf8(a.body).map_err(|_| protocol("the certificate chain is not text"))?;
        if !chain_pem.contains("-----BEGIN CERTIFICATE-----") {
            return Err(protocol("the certificate URL gave no PEM chain"));
        }
        Ok(Issued {
            chain_pem,
            order: order_url,
            replaces: order
                .get("replaces")
                .and_then(Json::as_str)
                .map(str::to_string),
            replaces_refused,
        })
    }

    /// Gets the authorization at `url` validated (§7.5.1), unless it is
    /// already.
    fn authorize(
        &mut self,
        url: &str,
        kinds: &[&str],
        responder: &dyn Responder,
        deadline: Instant,
    ) -> Result<(), AcmeError> {
        let a = self.post(url, None)?;
        let authz = body(&a)?;
        let Some(Chosen {
            name,
            kind,
            url: ch_url,
            token,
        }) = choose(&authz, kinds)?
        else {
            return Ok(());
        };
        let key_authorization = self.key_authorization(token);
        let challenge = if kind == HTTP_01 {
            Challenge::Http01 {
                token: token.to_string(),
                key_authorization,
            }
        } else {
            alpn_challenge(&name, &key_authorization)?
        };
        let (ch_url, kind) = (ch_url.to_string(), kind.to_string());
        responder.publish(&challenge);
        let done = self
            .post(&ch_url, Some("{}"))
            .and_then(|_| self.wait(url, &["valid"], deadline));
        responder.withdraw(&challenge);
        if done.is_err() {
            self.failed_kind = Some(kind);
        }
        done.map(|_| ())
    }

    /// Polls the order or authorization at `url` (POST-as-GET) until its
    /// status is one of `want`; `invalid` (or any end not wanted) is the
    /// error it holds, as is the deadline.
    fn wait(&mut self, url: &str, want: &[&str], deadline: Instant) -> Result<Json, AcmeError> {
        loop {
            let a = self.post(url, None)?;
            let v = body(&a)?;
            let status = text(&v, "status")?;
            if want.contains(&status) {
                return Ok(v);
            }
            if !matches!(status, "pending" | "processing" | "ready") {
                return Err(failure(&v, url, status));
            }
            let (max, min) = self.poll;
            let pause = retry_after(&a)
                .unwrap_or(Duration::from_secs(1))
                .clamp(min, max);
            if Instant::now() + pause > deadline {
                return Err(protocol(format!(
                    "{url} still {status} after {} s: given up",
                    ORDER_DEADLINE.as_secs()
                )));
            }
            std::thread::sleep(pause);
        }
    }
}

/// The authorizations' URLs and the `finalize` URL of an order (§7.1.3).
pub fn order_urls(order: &Json) -> Result<(Vec<String>, String), AcmeError> {
    let authzs: Vec<String> = order
        .get("authorizations")
        .map(Json::items)
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    let finalize = text(order, "finalize")?.to_string();
    Ok((authzs, finalize))
}

/// The challenge brisk answers for an authorization (§7.1.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen<'a> {
    /// The identifier validated.
    pub name: String,
    /// Its kind ([`HTTP_01`] or [`TLS_ALPN_01`]).
    pub kind: &'a str,
    /// The challenge's URL.
    pub url: &'a str,
    /// Its token.
    pub token: &'a str,
}

/// The challenge of `authz` to answer: the first of `kinds` the CA offers;
/// `None` when the authorization is already valid.
pub fn choose<'a>(authz: &'a Json, kinds: &[&str]) -> Result<Option<Chosen<'a>>, AcmeError> {
    if text(authz, "status")? == "valid" {
        return Ok(None);
    }
    let name = authz
        .get("identifier")
        .and_then(|i| i.get("value"))
        .and_then(Json::as_str)
        .ok_or_else(|| protocol("an authorization without its identifier"))?
        .to_string();
    let offered = authz.get("challenges").map(Json::items).unwrap_or_default();
    let chosen = kinds.iter().find_map(|kind| {
        offered
            .iter()
            .find(|c| c.get("type").and_then(Json::as_str) == Some(kind))
    });
    let Some(ch) = chosen else {
        return Err(protocol(format!(
            "the CA offers none of {kinds:?} for {name}"
        )));
    };
    Ok(Some(Chosen {
        name,
        kind: text(ch, "type")?,
        url: text(ch, "url")?,
        token: text(ch, "token")?,
    }))
}

/// The tls-alpn-01 answer for `name`: a new key and its certificate.
fn alpn_challenge(name: &str, key_authorization: &str) -> Result<Challenge, AcmeError> {
    let key = Key::generate().map_err(|e| protocol(e.0))?;
    let digest = cert::acme_identifier(key_authorization);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let certificate = cert::alpn_certificate(name, digest, &key, now).map_err(|e| protocol(e.0))?;
    Ok(Challenge::TlsAlpn01 {
        name: name.to_string(),
        certificate,
        key: key.pkcs8().to_vec(),
        digest,
    })
}

/// The error an order or authorization in state `status` holds (its
/// `error`, or its challenges'), for the log.
pub fn failure(v: &Json, url: &str, status: &str) -> AcmeError {
    let from_challenges = v
        .get("challenges")
        .map(Json::items)
        .unwrap_or_default()
        .iter()
        .find_map(|c| c.get("error"));
    match v.get("error").or(from_challenges) {
        Some(e) => problem_of(e, 0),
        None => protocol(format!("{url} became {status}")),
    }
}

/// The problem document of an answer that failed.
pub fn problem(a: &Answer) -> AcmeError {
    match json::decode(&a.body) {
        Ok(v) if v.get("type").is_some() => problem_of(&v, a.status),
        _ => protocol(format!(
            "the CA answered {} without a problem document",
            a.status
        )),
    }
}

/// A problem document (RFC 7807) as an error: its type, its detail and
/// its subproblems' (§6.7.1).
fn problem_of(v: &Json, status: u16) -> AcmeError {
    let s = |v: &Json, name: &str| v.get(name).and_then(Json::as_str).unwrap_or("").to_string();
    let mut detail = s(v, "detail");
    for sub in v.get("subproblems").map(Json::items).unwrap_or_default() {
        let id = sub
            .get("identifier")
            .map(|i| s(i, "value"))
            .unwrap_or_default();
        detail.push_str(&format!("; {id}: {}", s(sub, "detail")));
    }
    let status = match v.get("status") {
        Some(Json::Int(n)) => u16::try_from(*n).unwrap_or(status),
        _ => status,
    };
    AcmeError::Problem {
        status,
        kind: s(v, "type"),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};

    fn account() -> Account {
        let http = Client::new(rustls::RootCertStore::empty(), Duration::from_secs(1)).unwrap();
        let dir = Directory {
            new_nonce: "https://ca.test/nonce".into(),
            new_account: "https://ca.test/acct".into(),
            new_order: "https://ca.test/order".into(),
            renewal_info: None,
            terms_of_service: None,
            external_account_required: false,
        };
        Account::new(http, dir, Key::generate().unwrap())
    }

    fn b64d(s: &str) -> Vec<u8> {
        use base64ct::Encoding as _;
        let mut out = vec![0u8; s.len()];
        let n = base64ct::Base64UrlUnpadded::decode(s, &mut out)
            .unwrap()
            .len();
        out.truncate(n);
        out
    }

    #[test]
    fn a_jws_carries_jwk_then_kid_and_its_signature_verifies() {
        let mut acct = account();
        for kid in [None, Some("https://ca.test/acct/7")] {
            acct.url = kid.map(str::to_string);
            let jws = acct
                .jws("https://ca.test/order", "n\"1", Some(r#"{"a":1}"#))
                .unwrap();
            let v = json::decode(jws.as_bytes()).unwrap();
            let (p, l, sig) = (
                text(&v, "protected").unwrap(),
                text(&v, "payload").unwrap(),
                text(&v, "signature").unwrap(),
            );
            let protected = json::decode(&b64d(p)).unwrap();
            assert_eq!(text(&protected, "alg").unwrap(), "ES256");
            assert_eq!(text(&protected, "nonce").unwrap(), "n\"1");
            assert_eq!(text(&protected, "url").unwrap(), "https://ca.test/order");
            match kid {
                Some(k) => {
                    assert_eq!(text(&protected, "kid").unwrap(), k);
                    assert!(protected.get("jwk").is_none());
                }
                None => {
                    let jwk = protected.get("jwk").unwrap();
                    assert_eq!(text(jwk, "kty").unwrap(), "EC");
                    assert!(protected.get("kid").is_none());
                }
            }
            assert_eq!(b64d(l), br#"{"a":1}"#);
            UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, acct.key.public_point())
                .verify(format!("{p}.{l}").as_bytes(), &b64d(sig))
                .unwrap();
        }
        // POST-as-GET: an empty payload.
        let jws = acct.jws("https://ca.test/x", "n", None).unwrap();
        assert!(jws.contains(r#""payload":"""#), "{jws}");
    }

    /// RFC 8555 §7.3.4's binding, byte for byte: the protected header
    /// and the payload (the JWK as given), and the HMAC-SHA256 over
    /// `protected.payload` computed apart (Python's hmac module) with
    /// the MAC key Pebble's own example configuration holds.
    #[test]
    fn the_external_account_binding_is_hs256_over_the_jwk_for_the_new_account_url() {
        let eab = Eab {
            kid: "kid-1".into(),
            hmac_key: b64d("zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W"),
        };
        let jwk = r#"{"crv":"P-256","kty":"EC","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#;
        let binding = eab.binding("https://ca.test/acme/new-acct", jwk);
        let protected = "eyJhbGciOiJIUzI1NiIsImtpZCI6ImtpZC0xIiwidXJsIjoiaHR0cHM6Ly9jYS50ZXN0L2FjbWUvbmV3LWFjY3QifQ";
        let payload = "eyJjcnYiOiJQLTI1NiIsImt0eSI6IkVDIiwieCI6ImY4M09KM0QyeEYxQmc4dnViOXRMZTFnSE16Vjc2ZThUdXM5dVBIdlJWRVUiLCJ5IjoieF9GRXpSdTltMzZITE5fdHVlNjU5TE5wWFc2cEN5U3Rpa1lqS0lXSTVhMCJ9";
        assert_eq!(
            binding,
            format!(
                r#"{{"protected":"{protected}","payload":"{payload}","signature":"42FHbGogT0ECixw0KG7rdS5pg9FwhTVzucgvvY-fpZM"}}"#
            )
        );
        assert_eq!(
            b64d(protected),
            br#"{"alg":"HS256","kid":"kid-1","url":"https://ca.test/acme/new-acct"}"#
        );
        assert_eq!(b64d(payload), jwk.as_bytes());
        // The MAC key stays out of Debug.
        assert_eq!(format!("{eab:?}"), r#"Eab { kid: "kid-1", hmac_key: .. }"#);
    }

    #[test]
    fn a_new_account_carries_the_binding_of_its_own_key_and_nothing_else_changes() {
        let acct = account();
        let eab = Eab {
            kid: "k\"1".into(),
            hmac_key: vec![7; 32],
        };
        let binding = eab.binding(&acct.directory.new_account, &acct.key.jwk());
        let v = json::decode(binding.as_bytes()).unwrap();
        let protected = json::decode(&b64d(text(&v, "protected").unwrap())).unwrap();
        assert_eq!(text(&protected, "kid").unwrap(), "k\"1");
        assert_eq!(text(&protected, "url").unwrap(), "https://ca.test/acct");
        assert!(protected.get("nonce").is_none() && protected.get("jwk").is_none());
        assert_eq!(
            b64d(text(&v, "payload").unwrap()),
            acct.key.jwk().as_bytes()
        );
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &[7; 32]);
        let signed = format!(
            "{}.{}",
            text(&v, "protected").unwrap(),
            text(&v, "payload").unwrap()
        );
        ring::hmac::verify(
            &key,
            signed.as_bytes(),
            &b64d(text(&v, "signature").unwrap()),
        )
        .unwrap();
    }

    #[test]
    fn the_directory_says_whether_an_external_account_is_required() {
        let dir = |meta: &str| {
            let d = format!(r#"{{"newNonce":"n","newAccount":"a","newOrder":"o"{meta}}}"#);
            Directory::from_json(&json::decode(d.as_bytes()).unwrap())
                .unwrap()
                .external_account_required
        };
        assert!(dir(r#","meta":{"externalAccountRequired":true}"#));
        assert!(!dir(r#","meta":{"externalAccountRequired":false}"#));
        assert!(!dir(r#","meta":{"termsOfService":"t"}"#));
        assert!(!dir(""));
    }

    #[test]
    fn problems_name_their_type_detail_and_subproblems() {
        let a = Answer {
            status: 400,
            fields: vec![],
            body: br#"{"type":"urn:ietf:params:acme:error:rejectedIdentifier","detail":"Error creating new order","status":400,"subproblems":[{"type":"urn:ietf:params:acme:error:rejectedIdentifier","detail":"blocked","identifier":{"type":"dns","value":"x.test"}}]}"#.to_vec(),
        };
        assert_eq!(
            problem(&a).to_string(),
            "urn:ietf:params:acme:error:rejectedIdentifier (400): Error creating new order; x.test: blocked"
        );
        let a = Answer {
            status: 500,
            fields: vec![],
            body: b"<html>".to_vec(),
        };
        assert_eq!(
            problem(&a).to_string(),
            "the CA answered 500 without a problem document"
        );
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        let with = |v: &str| Answer {
            status: 200,
            fields: vec![("retry-after".into(), v.into())],
            body: vec![],
        };
        assert_eq!(retry_after(&with("3")), Some(Duration::from_secs(3)));
        assert_eq!(
            retry_after(&with("Sun, 06 Nov 1994 08:49:37 GMT")),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&with("soon")), None);
    }

    #[test]
    fn the_alpn_challenge_certificate_is_for_the_name_with_the_digest() {
        let Challenge::TlsAlpn01 {
            name,
            certificate,
            key,
            digest: held,
        } = alpn_challenge("a.test", "tok.thumb").unwrap()
        else {
            panic!("a tls-alpn-01 challenge")
        };
        assert_eq!(name, "a.test");
        assert_eq!(
            crate::tls::x509::parse(&certificate).unwrap().names,
            ["a.test"]
        );
        let digest = ring::digest::digest(&ring::digest::SHA256, b"tok.thumb");
        let mut ext = vec![0x04, 0x20];
        ext.extend_from_slice(digest.as_ref());
        assert!(certificate.windows(ext.len()).any(|w| w == ext));
        assert_eq!(held[..], *digest.as_ref());
        assert!(Key::from_pkcs8(&key).is_ok());
    }
}
