//! Basic authentication (RFC 7617) for the paths that `[[auth]]` rules
//! cover.
//!
//! One [`Auth`] per worker thread: it owns its copies of the htpasswd files,
//! its cache of verified credentials and its failure counters, so nothing
//! is locked. The consequences of that choice, all bounded:
//!
//! - Rules are tried in file order and the first whose `path` or `pattern`
//!   matches decides (put the most specific rule first).
//! - A file is looked at (one `stat`) at most once a second per worker and
//!   re-read when it changed; a change takes effect within about a second.
//!   A file that becomes unreadable or invalid keeps its last good version
//!   in force, and the problem comes out once through
//!   [`Auth::take_warnings`].
//! - bcrypt and argon2id are slow by design. A credential that verified is
//!   remembered (as a SHA-256 digest keyed with a random secret of the
//!   server's and the file's version, never the password) per file, up to
//!   1024 of them, until the file changes; a keep-alive client therefore
//!   pays the hash once per worker, not once per request. A wrong
//!   password is never cached. The server has hashes computed off its
//!   event loops ([`Auth::offload`]), and a check identical to one in
//!   flight (in any worker) waits for that one's verdict rather than
//!   hashing again, and counts as no failure: one guess sent many times
//!   at once is one failed attempt, and many requests at once with a
//!   login cost one hash and none of them a 429.
//! - Failed attempts are counted per client address (an IPv6 /64 counts as
//!   one client) in windows of `timeouts.auth_failure_window`; at
//!   `limits.auth_failures` the client gets [`Verdict::TooManyFailures`]
//!   until its window ends, without a password check, whatever it sends.
//!   The counters are shared by all workers ([`SharedFailures`]).
//!   A request without `Authorization` is not a failure (browsers send one
//!   first to get the challenge); everything else that does not log in is,
//!   and a success resets nothing.

use std::hash::{BuildHasher, Hasher};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Instant;

use sha2::{Digest, Sha256};

use std::sync::Arc;

use super::credentials;
use super::failures::SharedFailures;
use super::htpasswd::Htpasswd;
use super::htpasswd::{escape, Watched};
use super::verify::{flights, land, take_off, Done, Hash};
use crate::http::glob::{Folding, PathMatch, Reach};

/// One `[[auth]]` rule: which requests need a login, and against which
/// file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRule {
    /// Which requests it covers (`path` prefix or `pattern` glob).
    pub matcher: PathMatch,
    /// The realm shown by the browser; no `"`, `\` or control characters.
    pub realm: String,
    /// The htpasswd file, absolute (it was valid when the config loaded).
    pub htpasswd: PathBuf,
    /// Accept plaintext passwords in the file.
    pub allow_plaintext: bool,
    /// Which request methods it covers (`methods`, `except_methods`).
    pub methods: AuthMethods,
    /// Where its `htpasswd` was set (`site.toml:6: auth[1].htpasswd`),
    /// for an error found once the server runs; empty for a rule made in
    /// code.
    pub origin: String,
}

/// The request methods an `[[auth]]` rule covers: a request with
/// another method is passed over by the rule (the next rule is tried).
/// Methods are case-sensitive tokens (RFC 9110 §9.1), kept as one string
/// with a space between two (`"GET HEAD"`): a list costs no more code
/// than a string.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AuthMethods {
    /// Every method (neither key).
    #[default]
    All,
    /// `methods = [...]`: these only.
    Only(Box<str>),
    /// `except_methods = [...]`: every method but these (what nginx's
    /// `limit_except` and Apache's `<LimitExcept>` say): a method added
    /// later, or one a client makes up, needs the login.
    Except(Box<str>),
}

impl AuthMethods {
    /// Whether a request with `method` is covered.
    #[inline(never)]
    pub fn covers(&self, method: &[u8]) -> bool {
        // (Without the feature `sites` the keys are refused: every rule
        // covers every method, and this code is left out.)
        if !cfg!(feature = "sites") {
            return true;
        }
        // GET brings HEAD with it (RFC 9110 §9.3.2: HEAD is a GET without
        // the body, whose head tells as much; nginx's limit_except and
        // Apache's <Limit> do the same), so `methods = ["GET"]` cannot
        // leave a HEAD through unguarded.
        let head_as_get = method == b"HEAD";
        let listed = |list: &str| {
            list.as_bytes()
                .split(|&b| b == b' ')
                .any(|m| m == method || head_as_get && m == b"GET")
        };
        match self {
            AuthMethods::All => true,
            AuthMethods::Only(list) => listed(list),
            AuthMethods::Except(list) => !listed(list),
        }
    }
}

/// Basic authentication state of one worker: every `[[auth]]` rule, its
/// htpasswd file (parsed), the cache of verified credentials, and the
/// per-client failure counters (shared with the other workers).
pub struct Auth {
    /// The site whose rules these are (0: the default site).
    site: usize,
    rules: Vec<Rule>,
    /// Distinct (file, allow_plaintext) pairs; rules point into this.
    files: Vec<Watched>,
    failures: SharedFailures,
    /// The decoded credential of the request being checked; it keeps its
    /// capacity, so checks do not allocate once it has grown.
    buf: Vec<u8>,
    /// Keys the cache digests, so a memory dump does not hold plain
    /// unsalted SHA-256 digests of passwords: the same in every worker
    /// ([`SharedFailures::secret`]), so that identical checks have one
    /// key.
    secret: [u8; 16],
    warnings: Vec<String>,
    /// Hand password hashing to the caller ([`Verdict::Verify`]).
    offload: bool,
    /// The outcome of the last check run elsewhere, for the next request
    /// with that credential.
    settled: Option<(usize, [u8; 32], bool)>,
    /// Where rules match paths in any case.
    folding: Folding,
}

/// What a rule made of a request's credentials ([`Auth::decide`]),
/// before it borrows what it names ([`Auth::verdict`]).
enum Decision {
    /// The user-id is `buf[..n]`.
    Allowed(usize),
    /// None sent, or these did not do (the user-id is `buf[..n]`).
    Refused(Option<(FailureReason, usize)>),
    TooManyFailures(u64),
    Verify(Check),
}

struct Rule {
    matcher: PathMatch,
    methods: AuthMethods,
    file: usize,
    /// `Basic realm="…", charset="UTF-8"`.
    challenge: Box<[u8]>,
}

/// What to do with a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict<'a> {
    /// No rule covers the path: serve it as usual.
    Open,
    /// The credentials are valid: serve it; `user` is the user-id (for
    /// the access log and CGI's `REMOTE_USER`; not necessarily UTF-8).
    Allowed {
        /// The user-id as sent.
        user: &'a [u8],
    },
    /// Answer 401 with `WWW-Authenticate: <realm_header>` (RFC 7617 §2,
    /// RFC 9110 §11.6.1).
    Challenge {
        /// The whole field value: `Basic realm="Private", charset="UTF-8"`.
        realm_header: &'a [u8],
        /// Why credentials that were sent did not do (`None` when none
        /// were sent): for the error log, see [`Failure::log_line`].
        failure: Option<Failure<'a>>,
    },
    /// The client failed too often: answer 429 with
    /// `Retry-After: <retry_after_secs>`.
    TooManyFailures {
        /// Seconds until the client's window ends (at least 1).
        retry_after_secs: u64,
    },
    /// (Only with [`Auth::offload`].) The password must be hashed: run
    /// the check away from the event loop, hand its result to
    /// [`Auth::settle`], and ask again.
    Verify(Check),
}

/// A password check to run off the event loop: the entries of the file
/// it was read from, the user and the password (wiped when dropped).
pub struct Check {
    table: Arc<Htpasswd>,
    site: usize,
    file: usize,
    /// The key of the credential and the file's version (the same in
    /// every worker): identical checks have the same.
    key: [u8; 32],
    user: Vec<u8>,
    password: Vec<u8>,
    asker: Box<Asker>,
}

/// Whose a [`Check`] is, and how it stands among those in flight.
struct Asker {
    /// The client, and when the check was handed out.
    client: IpAddr,
    at: Instant,
    /// Whether it leads: it is hashed, identical checks may wait for its
    /// verdict, and it counts as a failure of its client from when it was
    /// handed out (see [`Auth::remember`]). If not, it waits for the
    /// verdict of an identical check in flight, and counts as none.
    leads: bool,
    /// Its verdict, once hashed.
    ok: bool,
}

impl Check {
    /// Hashes the password (tens of milliseconds for bcrypt or argon2id).
    /// Identical checks that waited for this one get the same verdict.
    pub fn run(mut self) -> Checked {
        #[cfg(debug_assertions)]
        self.hold();
        self.asker.ok = self.table.verify(&self.user, &self.password) == Some(true);
        let mut done = self.checked(self.asker.ok);
        done.hashed = true;
        done
        // `self` drops here, wiping the password (and answering those
        // that waited).
    }

    /// (Debug builds, for tests/it/auth.rs.) With the environment's
    /// `BRISK_TEST_HASH_WAITERS` = n, the process's first check waits (up
    /// to 20 s) until n identical ones wait for it: then none comes too
    /// late to share its verdict, however slowly the requests come in.
    #[cfg(debug_assertions)]
    fn hold(&self) {
        static HELD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        let Some(n) = std::env::var("BRISK_TEST_HASH_WAITERS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
        else {
            return;
        };
        if HELD.swap(true, std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        for _ in 0..20_000 {
            let waiting = |f: &super::verify::Flight| f.0 == self.key && f.1.len() >= n;
            if flights().iter().any(waiting) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// The outcome `ok` for this check.
    #[inline(never)]
    fn checked(&self, ok: bool) -> Checked {
        Checked {
            table: Arc::clone(&self.table),
            site: self.site,
            file: self.file,
            key: self.key,
            ok,
            led: self.asker.leads,
            hashed: false,
            client: self.asker.client,
            at: self.asker.at,
        }
    }

    /// A check that is not to be hashed waits, with `done`, for the
    /// identical one in flight (none is given back). If that one is done
    /// already (it was between the hand-out and now), it is given back, to
    /// be hashed after all (not counted: that one was).
    pub(crate) fn join(self, done: Done) -> Option<Hash> {
        if !self.asker.leads {
            if let Some(flight) = flights().iter_mut().find(|w| w.0 == self.key) {
                // (Its password is wiped now: not needed.)
                flight.1.push((self.checked(false), done));
                return None;
            }
        }
        Some(Hash(self, done))
    }
}

impl Drop for Check {
    fn drop(&mut self) {
        wipe(&mut self.password, 0);
        if self.asker.leads {
            self.land();
        }
    }
}

impl Check {
    /// The identical checks that waited for this one get its verdict (if
    /// it is dropped unhashed, a refusal: their clients are asked again).
    #[inline(never)]
    fn land(&mut self) {
        let mut waited = land(&self.key);
        while let Some((mut checked, done)) = waited.pop() {
            checked.ok = self.asker.ok;
            done(checked);
        }
    }
}

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Check")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Check {
    fn eq(&self, other: &Check) -> bool {
        self.file == other.file && self.key == other.key
    }
}

impl Eq for Check {}

/// The outcome of a [`Check`].
pub struct Checked {
    table: Arc<Htpasswd>,
    site: usize,
    file: usize,
    key: [u8; 32],
    ok: bool,
    /// It was counted as a failure when handed out (see `remember`).
    led: bool,
    /// A password was hashed for it (else it has an identical check's
    /// verdict).
    hashed: bool,
    client: IpAddr,
    at: Instant,
}

impl Checked {
    /// The site whose `[[auth]]` rule asked for the check.
    pub fn site(&self) -> usize {
        self.site
    }

    /// Whether a password was hashed for it (else it is the verdict of
    /// an identical check).
    pub fn hashed(&self) -> bool {
        self.hashed
    }
}

impl std::fmt::Debug for Checked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checked")
            .field("ok", &self.ok)
            .finish_non_exhaustive()
    }
}

/// A failed login, for the error log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure<'a> {
    /// The user-id sent, if the credential could be read.
    pub user: Option<&'a [u8]>,
    /// What went wrong.
    pub reason: FailureReason,
}

/// Why a login failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureReason {
    /// Not `Basic` followed by valid base64 of `user:password`.
    Malformed,
    /// The user is not in the htpasswd file.
    UnknownUser,
    /// The password does not match.
    WrongPassword,
}

impl Failure<'_> {
    /// `auth failed for user "alice" from 192.0.2.7: wrong password`; the
    /// user name escaped (`\xNN`), the password never shown.
    pub fn log_line(&self, client: IpAddr) -> String {
        let what = match self.reason {
            FailureReason::Malformed => "malformed Authorization header",
            FailureReason::UnknownUser => "unknown user",
            FailureReason::WrongPassword => "wrong password",
        };
        match self.user {
            Some(u) => format!("auth failed for user {} from {client}: {what}", escape(u)),
            None => format!("auth failed from {client}: {what}"),
        }
    }
}

impl Auth {
    /// The `[[auth]]` rules `auth` of the configuration's site `site` (0:
    /// the default site), each htpasswd file loaded (errors name the file
    /// and line), counting failures in `failures`, which other workers and
    /// sites share. Call once per worker thread.
    pub fn sharing(
        auth: &[AuthRule],
        site: usize,
        failures: SharedFailures,
    ) -> Result<Auth, super::Error> {
        let now = Instant::now();
        let mut files: Vec<Watched> = Vec::new();
        let mut rules = Vec::with_capacity(auth.len());
        for rule in auth {
            let existing = files.iter().position(|f| {
                f.path() == rule.htpasswd && f.allow_plaintext() == rule.allow_plaintext
            });
            let file = match existing {
                Some(i) => i,
                None => {
                    files.push(Watched::open(&rule.htpasswd, rule.allow_plaintext, now)?);
                    files.len() - 1
                }
            };
            rules.push(Rule {
                matcher: rule.matcher.clone(),
                methods: rule.methods.clone(),
                file,
                challenge: challenge(&rule.realm).into_bytes().into(),
            });
        }
        let secret = failures.secret();
        Ok(Auth {
            site,
            rules,
            files,
            failures,
            buf: Vec::new(),
            secret,
            warnings: Vec::new(),
            offload: false,
            settled: None,
            folding: Folding::NONE,
        })
    }

    /// Where paths are found whatever their case (the site's
    /// [`Folding`]): there the rules match a path in any case.
    pub fn fold_beneath(&mut self, folding: Folding) {
        self.folding = folding;
    }

    /// From now on, a check that must hash a password returns
    /// [`Verdict::Verify`] instead of hashing on the caller's thread.
    pub fn offload(&mut self) {
        self.offload = true;
    }

    /// Takes the outcome of a [`Check`]: a credential that verified is
    /// remembered (if the file did not change meanwhile), and the next
    /// [`Auth::check`] of that credential answers from it, without
    /// hashing again.
    pub fn settle(&mut self, done: Checked) {
        self.settled = Some((done.file, done.key, done.ok));
        self.remember(done);
    }

    /// Keeps only what a [`Check`] proved for later requests: a
    /// credential that verified (when its request is gone). A check
    /// counts as a failure of its client from when it is handed out, so
    /// that one client cannot have more passwords hashed at once than
    /// `limits.auth_failures` lets it fail (each waits its turn on the
    /// hashing threads, as everyone else's logins do); one that verified
    /// is taken off the count again.
    pub fn remember(&mut self, done: Checked) {
        if done.ok {
            if done.led {
                self.failures.lock().forgive(done.client, done.at);
            }
            if let Some(f) = self.files.get_mut(done.file) {
                f.remember_for(&done.table, &done.key);
            }
        }
    }

    /// Whether any rule exists (if not, every [`Auth::check`] is `Open`).
    pub fn is_active(&self) -> bool {
        !self.rules.is_empty()
    }

    /// Whether `other` may be served in answer to a request for `path`
    /// with `method` that passed [`Auth::check`] (a `try_files` file in
    /// place of a missing one): no rule covers `other`, or the rule that
    /// does reads the same htpasswd file as the one that covers `path`,
    /// whose login the request then gave. A file behind a login the
    /// request did not give is not served through a path no rule guards.
    pub fn lets_through(&self, path: &[u8], other: &[u8], method: &[u8]) -> bool {
        let file = |p: &[u8]| {
            self.rules
                .iter()
                .find(|r| r.methods.covers(method) && r.matcher.matches_in(p, &self.folding))
                .map(|r| r.file)
        };
        match file(other) {
            None => true,
            Some(f) => file(path) == Some(f),
        }
    }

    /// Checks a request for the decoded path `path` with method `method`
    /// and the raw value of its `Authorization` field (`None` if absent),
    /// from `client`, at `now`: the first rule that covers both the path
    /// and the method decides. Allocates nothing once warm, except when a
    /// changed htpasswd file is re-read.
    pub fn check(
        &mut self,
        path: &[u8],
        method: &[u8],
        authorization: Option<&[u8]>,
        client: IpAddr,
        now: Instant,
    ) -> Verdict<'_> {
        self.check_both((path, Reach::Own), &[], method, authorization, client, now)
    }

    /// [`Auth::check`] of a request that also reaches the paths `also`
    /// (the `Destination` of a COPY or MOVE, RFC 4918 §10.3, where it
    /// writes; the resources an `If` header names, §10.4.3, whose state it
    /// reads): the rule that covers each must let the credentials in too,
    /// so that a path no client may reach without them cannot be reached
    /// through one where it may. The credentials are checked against each
    /// covering rule of another file than those before it, the path's
    /// first; the first refusal is the answer.
    ///
    /// A request that reaches beneath its paths (`reach`: a WebDAV COPY,
    /// MOVE or DELETE of a collection, a PROPFIND or LOCK with a `Depth`)
    /// is judged by each rule that covers a path it reaches there too
    /// ([`PathMatch::covers_beneath`]): a folder behind a login is no
    /// more copied, moved, removed or listed through a collection above
    /// it than it is read.
    pub fn check_both(
        &mut self,
        (path, reach): (&[u8], Reach),
        also: &[Vec<u8>],
        method: &[u8],
        authorization: Option<&[u8]>,
        client: IpAddr,
        now: Instant,
    ) -> Verdict<'_> {
        // The rules that judge, one a file, the path's first.
        let mut judging: Vec<usize> = Vec::new();
        for p in std::iter::once(path).chain(also.iter().map(Vec::as_slice)) {
            let covering =
                self.rules.iter().enumerate().find(|(_, r)| {
                    r.methods.covers(method) && r.matcher.matches_in(p, &self.folding)
                });
            let beneath = self.rules.iter().enumerate().filter(|(_, r)| {
                r.methods.covers(method) && r.matcher.covers_beneath(p, reach, &self.folding)
            });
            for (i, r) in covering.into_iter().chain(beneath) {
                if !judging.iter().any(|&j| self.rules[j].file == r.file) {
                    judging.push(i);
                }
            }
        }
        let mut rule = match judging.first() {
            Some(&first) => first,
            None => return Verdict::Open,
        };
        let mut decided = self.decide(rule, authorization, client, now);
        for &next in &judging[1..] {
            if !matches!(decided, Decision::Allowed(_)) {
                break;
            }
            decided = self.decide(next, authorization, client, now);
            rule = next;
        }
        self.verdict(rule, decided)
    }

    /// What rule `rule` makes of the credentials.
    fn decide(
        &mut self,
        rule: usize,
        authorization: Option<&[u8]>,
        client: IpAddr,
        now: Instant,
    ) -> Decision {
        let blocked = self.failures.lock().blocked(client, now);
        let at = self.rules[rule].file;
        let file = &mut self.files[at];
        file.refresh(now, &mut self.warnings);
        let Some(value) = authorization else {
            return match blocked {
                Some(retry_after_secs) => Decision::TooManyFailures(retry_after_secs),
                None => Decision::Refused(None),
            };
        };
        // Whether the failure is counted already (a check handed out).
        let mut counted = false;
        let outcome = match credentials::decode(value, &mut self.buf) {
            Err(_) => {
                wipe(&mut self.buf, 0);
                if let Some(retry_after_secs) = blocked {
                    return Decision::TooManyFailures(retry_after_secs);
                }
                Err((FailureReason::Malformed, 0))
            }
            Ok(colon) => {
                // Keyed with the secret and the file's version (so that
                // identical checks are those of one version: see
                // `verify::take_off`).
                let mut keyed = [0; 16 + 56];
                keyed[..16].copy_from_slice(&self.secret);
                file.version(&mut keyed[16..]);
                let key = cache_key(&keyed, &self.buf);
                // (Taken only by a check of the file it was run against.)
                let settled = match self.settled {
                    Some((f, k, _)) if f == at && k == key => self.settled.take(),
                    _ => None,
                };
                // A request back from its check was let in before it (its
                // failure counted then): the limit is not applied twice.
                match (settled, blocked) {
                    (None, Some(retry_after_secs)) => {
                        wipe(&mut self.buf, 0);
                        return Decision::TooManyFailures(retry_after_secs);
                    }
                    (Some((_, _, ok)), _) => counted = !ok,
                    (None, None) => {}
                }
                let (user, password) = (&self.buf[..colon], &self.buf[colon + 1..]);
                let result = match settled {
                    // Hashed elsewhere just now: not again (an unknown
                    // user's decoy too).
                    Some((_, _, false)) if file.needs_hash(&key, user) => {
                        file.knows(user).then_some(false)
                    }
                    _ if self.offload && file.needs_hash(&key, user) => {
                        // Counted until it verifies (see `remember`),
                        // unless an identical check is in flight.
                        let leads = take_off(&key);
                        if leads {
                            self.failures.lock().record(client, now);
                        }
                        let check = Check {
                            table: Arc::clone(file.shared_table()),
                            site: self.site,
                            file: at,
                            key,
                            user: user.to_vec(),
                            password: password.to_vec(),
                            asker: Box::new(Asker {
                                client,
                                at: now,
                                leads,
                                ok: false,
                            }),
                        };
                        wipe(&mut self.buf, 0);
                        return Decision::Verify(check);
                    }
                    _ => file.verify(&key, user, password),
                };
                // The password is not needed any more: do not leave it in
                // memory until the next request overwrites it.
                wipe(&mut self.buf, colon);
                match result {
                    Some(true) => Ok(colon),
                    Some(false) => Err((FailureReason::WrongPassword, colon)),
                    None => Err((FailureReason::UnknownUser, colon)),
                }
            }
        };
        match outcome {
            Ok(colon) => Decision::Allowed(colon),
            Err((reason, colon)) => {
                if !counted {
                    self.failures.lock().record(client, now);
                }
                Decision::Refused(Some((reason, colon)))
            }
        }
    }

    /// The verdict of `decided` by rule `rule`.
    fn verdict(&self, rule: usize, decided: Decision) -> Verdict<'_> {
        match decided {
            Decision::Allowed(colon) => Verdict::Allowed {
                user: &self.buf[..colon],
            },
            Decision::Refused(failure) => Verdict::Challenge {
                realm_header: &self.rules[rule].challenge,
                failure: failure.map(|(reason, colon)| Failure {
                    user: (reason != FailureReason::Malformed).then(|| &self.buf[..colon]),
                    reason,
                }),
            },
            Decision::TooManyFailures(retry_after_secs) => {
                Verdict::TooManyFailures { retry_after_secs }
            }
            Decision::Verify(check) => Verdict::Verify(check),
        }
    }

    /// Problems found since the last call (an htpasswd file that changed
    /// but cannot be used), for the error log.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    #[cfg(test)]
    pub(crate) fn file(&self, i: usize) -> &Watched {
        &self.files[i]
    }

    #[cfg(test)]
    pub(crate) fn tracked_clients(&self) -> usize {
        self.failures.lock().len()
    }

    #[cfg(test)]
    pub(crate) fn failures_of(&self, client: IpAddr) -> u32 {
        self.failures.lock().count(client)
    }
}

/// `Basic realm="…", charset="UTF-8"` (RFC 7617 §2 and §2.1). The config
/// refuses realms with `"`, `\` or control characters, so the realm needs
/// no escaping inside the quoted string.
fn challenge(realm: &str) -> String {
    format!("Basic realm=\"{realm}\", charset=\"UTF-8\"")
}

/// Keeps `buf[..keep]` (the user-id) and zeroes the rest.
fn wipe(buf: &mut Vec<u8>, keep: usize) {
    buf[keep..].fill(0);
    std::hint::black_box(&buf);
    buf.truncate(keep);
}

fn cache_key(keyed: &[u8; 72], credential: &[u8]) -> [u8; 32] {
    Sha256::new()
        .chain_update(keyed)
        .chain_update(credential)
        .finalize()
        .into()
}

/// 128 bits from the standard library's randomly keyed hasher, which the
/// operating system seeds: enough for a cache key (or a WebSocket
/// handshake's nonce), and no extra crate.
pub(crate) fn random_secret() -> [u8; 16] {
    let state = std::collections::hash_map::RandomState::new();
    let mut out = [0u8; 16];
    for (i, chunk) in out.chunks_exact_mut(8).enumerate() {
        let mut h = state.build_hasher();
        h.write_usize(i);
        chunk.copy_from_slice(&h.finish().to_ne_bytes());
    }
    out
}
