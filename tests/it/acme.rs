//! ACME (issue #28) against Let's Encrypt's test CA, Pebble, and its DNS
//! helper, pebble-challtestsrv (`scripts/test` installs both with Go;
//! without them these tests say that they skipped). Everything listens
//! on 127.0.0.1: challtestsrv answers every name with 127.0.0.1, and
//! Pebble validates on the ports the test names.
//!
//! Pebble's TLS certificate is made by brisk's own local CA code
//! (`acme::cert`), so the test trusts exactly that CA for the directory.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use brisk::acme::cert::{self, Alt, Template};
use brisk::acme::client::{Account, Directory, HTTP_01};
use brisk::acme::http::Client;
use brisk::acme::key::Key;
use rustls::client::danger::ServerCertVerifier as _;
use rustls::pki_types::{pem::PemObject as _, CertificateDer, ServerName, UnixTime};

use crate::common::{free_port, poll, skip, TempDir};

/// A Go tool: `$VAR`, else on PATH, else in Go's bin directory.
pub(crate) fn go_tool(var: &str, name: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var) {
        return Some(PathBuf::from(p));
    }
    let on_path = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let gobin = std::env::var_os("HOME").map(|h| PathBuf::from(h).join("go/bin").join(name));
    on_path.into_iter().chain(gobin).find(|p| p.is_file())
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Whether a DNS server on `port` of 127.0.0.1 answers an A query for
/// `a.test` (RFC 1035 §4.1) over UDP within a second.
fn answers_dns(port: u16) -> bool {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    // Id 0x4252, recursion desired, one question: a.test, A, IN.
    let mut q = vec![0x42, 0x52, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    q.extend_from_slice(b"\x01a\x04test\x00\x00\x01\x00\x01");
    if sock.send_to(&q, ("127.0.0.1", port)).is_err() {
        return false;
    }
    let mut buf = [0u8; 512];
    matches!(sock.recv_from(&mut buf), Ok((n, from)) if n >= 12 && buf[..2] == q[..2] && from.port() == port)
}

/// A child process killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Pebble and challtestsrv, running.
pub(crate) struct Pebble {
    pub(crate) directory: String,
    pub(crate) management: String,
    /// The ports Pebble validates http-01 and tls-alpn-01 on.
    pub(crate) http_port: u16,
    pub(crate) tls_port: u16,
    /// Trusts Pebble's HTTPS (our CA, `ca`).
    pub(crate) client: Client,
    pub(crate) ca: Vec<u8>,
    _procs: Vec<Killed>,
    _dir: TempDir,
    /// One Pebble at a time: the ports each picks (free when picked)
    /// could otherwise be picked by two, and one's DNS server would then
    /// answer the other's CA until it stops.
    _one: std::sync::MutexGuard<'static, ()>,
}

pub(crate) static ONE_PEBBLE: Mutex<()> = Mutex::new(());

impl Pebble {
    /// Pebble with its defaults but for `env` (such as
    /// `PEBBLE_VA_NOSLEEP=1`); None (a skip) without the tools.
    pub(crate) fn start(env: &[(&str, &str)]) -> Option<Pebble> {
        Pebble::start_with(env, 90 * 86_400)
    }

    /// [`Pebble::start`], its certificates valid `validity` seconds.
    pub(crate) fn start_with(env: &[(&str, &str)], validity: u64) -> Option<Pebble> {
        Pebble::start_refusing(env, validity, &[])
    }

    /// [`Pebble::start_with`], refusing to issue for `blocked` (its
    /// `domainBlocklist`: a new order naming one is `rejectedIdentifier`).
    pub(crate) fn start_refusing(
        env: &[(&str, &str)],
        validity: u64,
        blocked: &[&str],
    ) -> Option<Pebble> {
        Pebble::start_binding(env, validity, blocked, &[])
    }

    /// [`Pebble::start_refusing`], requiring an external account
    /// binding (RFC 8555 §7.3.4) of a new account when `macs` names
    /// some: the key IDs and their MAC keys (base64url) it knows.
    pub(crate) fn start_binding(
        env: &[(&str, &str)],
        validity: u64,
        blocked: &[&str],
        macs: &[(&str, &str)],
    ) -> Option<Pebble> {
        let (Some(pebble), Some(challtest)) = (
            go_tool("PEBBLE", "pebble"),
            go_tool("PEBBLE_CHALLTESTSRV", "pebble-challtestsrv"),
        ) else {
            skip("pebble and pebble-challtestsrv are not installed (scripts/test installs them with Go)");
            return None;
        };
        let one = ONE_PEBBLE.lock().unwrap_or_else(|e| e.into_inner());
        let dir = TempDir::new("pebble");
        // Pebble's own HTTPS: a certificate for 127.0.0.1 from a CA of
        // brisk's making.
        let ca_key = Key::generate().unwrap();
        let ca_t = Template {
            names: &[],
            common_name: Some("test CA for pebble"),
            serial: cert::serial().unwrap(),
            not_before: now() - 3600,
            not_after: now() + 86_400,
            ca: true,
            acme_identifier: None,
        };
        let ca = cert::certificate(&ca_t, &ca_key, None).unwrap();
        let key = Key::generate().unwrap();
        let names = [Alt::Ip("127.0.0.1".parse().unwrap()), Alt::Dns("localhost")];
        let leaf_t = Template {
            names: &names,
            common_name: None,
            ca: false,
            ..ca_t.clone()
        };
        let leaf = cert::certificate(&leaf_t, &key, Some((&ca_key, "test CA for pebble"))).unwrap();
        std::fs::write(dir.path.join("cert.pem"), cert::pem("CERTIFICATE", &leaf)).unwrap();
        std::fs::write(
            dir.path.join("key.pem"),
            cert::pem("PRIVATE KEY", key.pkcs8()),
        )
        .unwrap();

        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from(ca.clone())).unwrap();
        let client = Client::new(roots, Duration::from_secs(10)).unwrap();
        // The ports are free when picked, and may be taken (by another
        // program's listener or connection) before the Go programs bind
        // them: then one of them exits, and it is all tried again.
        let mut attempt = 0;
        let (procs, directory, manage, http_port, tls_port) = loop {
            attempt += 1;
            assert!(
                attempt <= 5,
                "pebble and challtestsrv never both started: see {}",
                dir.path.display()
            );
            let (dns, http_port, tls_port) = (free_port(), free_port(), free_port());
            let (listen, manage, chall_manage) = (free_port(), free_port(), free_port());
            let config = format!(
                r#"{{"pebble": {{
  "listenAddress": "127.0.0.1:{listen}",
  "managementListenAddress": "127.0.0.1:{manage}",
  "certificate": "{d}/cert.pem",
  "privateKey": "{d}/key.pem",
  "httpPort": {http_port},
  "tlsPort": {tls_port},
  "ocspResponderURL": "",
  "externalAccountBindingRequired": {required},
  "externalAccountMACKeys": {{{macs}}},
  "retryAfter": {{"authz": 1, "order": 1}},
  "domainBlocklist": {blocked:?},
  "profiles": {{"default": {{"description": "the test's", "validityPeriod": {validity}}}}}
}}}}"#,
                d = dir.path.display(),
                required = !macs.is_empty(),
                macs = macs
                    .iter()
                    .map(|(kid, mac)| format!("{kid:?}: {mac:?}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            std::fs::write(dir.path.join("pebble.json"), config).unwrap();
            let log = |name: &str| std::fs::File::create(dir.path.join(name)).unwrap();
            let chall = Command::new(&challtest)
                .args(["-dnsserver", &format!("127.0.0.1:{dns}")])
                .args(["-management", &format!("127.0.0.1:{chall_manage}")])
                .args(["-http01", "", "-https01", "", "-tlsalpn01", "", "-doh", ""])
                .args(["-defaultIPv4", "127.0.0.1", "-defaultIPv6", ""])
                .stdout(log("challtestsrv.log"))
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut procs = vec![Killed(chall)];
            // Its DNS answers a query (a TCP connect alone may meet
            // another program's listener, or connect the socket to itself
            // when the port is in the ephemeral range).
            let dns_up = poll(Duration::from_secs(30), || {
                if procs[0].0.try_wait().unwrap().is_some() {
                    return Some(false);
                }
                answers_dns(dns).then_some(true)
            });
            if dns_up != Some(true) {
                continue;
            }
            let mut cmd = Command::new(&pebble);
            cmd.args(["-config", &format!("{}/pebble.json", dir.path.display())])
                .args(["-dnsserver", &format!("127.0.0.1:{dns}")])
                .stdout(log("pebble.log"))
                .stderr(Stdio::null());
            for (k, v) in env {
                cmd.env(k, v);
            }
            procs.push(Killed(cmd.spawn().unwrap()));
            let directory = format!("https://127.0.0.1:{listen}/dir");
            let up = poll(Duration::from_secs(30), || {
                if procs.iter_mut().any(|p| p.0.try_wait().unwrap().is_some()) {
                    return Some(false);
                }
                Directory::fetch(&client, &directory).ok().map(|_| true)
            });
            if up == Some(true) {
                break (procs, directory, manage, http_port, tls_port);
            }
        };
        Some(Pebble {
            directory,
            management: format!("https://127.0.0.1:{manage}"),
            http_port,
            tls_port,
            client,
            ca,
            _procs: procs,
            _dir: dir,
            _one: one,
        })
    }

    /// The root Pebble issues under now.
    pub(crate) fn root(&self) -> CertificateDer<'static> {
        let a = self
            .client
            .get(&format!("{}/roots/0", self.management))
            .unwrap();
        assert_eq!(a.status, 200);
        CertificateDer::from_pem_slice(&a.body).unwrap()
    }
}

impl Pebble {
    /// What Pebble printed so far.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path.join("pebble.log")).unwrap_or_default()
    }
}

/// The certificates of a PEM chain.
pub(crate) fn chain(pem: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .map(Result::unwrap)
        .collect()
}

#[test]
fn a_certificate_for_two_names_by_http_01_verifies_against_pebbles_root() {
    // Pebble as it comes: 5 % of nonces refused (badNonce, sent again),
    // and each validation after a random pause of up to 15 s (polled
    // with Retry-After). The other tests validate at once.
    let Some(pebble) = Pebble::start(&[]) else {
        return;
    };
    let live = Arc::new(brisk::tls::sni::Live::default());
    let _l = listeners(&pebble, &live);
    let responder = brisk::acme::manager::Published {
        live: Arc::clone(&live),
    };
    let dir = Directory::fetch(&pebble.client, &pebble.directory).unwrap();
    let account_key = Key::generate().unwrap();
    let pkcs8 = account_key.pkcs8().to_vec();
    let mut acct = Account::new(pebble.client.clone(), dir.clone(), account_key);
    acct.set_poll(Duration::from_millis(200), Duration::from_secs(2));
    let (kid, _) = acct.register(Some("ops@example.org")).unwrap();
    assert!(kid.starts_with("https://127.0.0.1:"), "{kid}");
    // Found again by its key (RFC 8555 §7.3.1): its contact updated
    // (§7.3.2) only when the one given is another, or none.
    for (email, updated) in [
        (Some("ops@example.org"), false),
        (Some("web@example.org"), true),
        (Some("web@example.org"), false),
        (None, true),
        (None, false),
    ] {
        let key = Key::from_pkcs8(&pkcs8).unwrap();
        let mut again = Account::new(pebble.client.clone(), dir.clone(), key);
        assert_eq!(
            again.register(email).unwrap(),
            (kid.clone(), updated),
            "{email:?}"
        );
    }

    let cert_key = Key::generate().unwrap();
    let issued = acct
        .obtain(&["a.test", "b.test"], &[HTTP_01], &cert_key, &responder)
        .unwrap();
    let certs = chain(&issued.chain_pem);
    assert!(
        certs.len() >= 2,
        "leaf and intermediate: {}",
        issued.chain_pem
    );
    let facts = brisk::tls::x509::parse(&certs[0]).unwrap();
    let mut names = facts.names.clone();
    names.sort();
    assert_eq!(names, ["a.test", "b.test"]);
    let mut roots = rustls::RootCertStore::empty();
    roots.add(pebble.root()).unwrap();
    let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::new(brisk::tls::provider()),
    )
    .build()
    .unwrap();
    for name in ["a.test", "b.test"] {
        verifier
            .verify_server_cert(
                &certs[0],
                &certs[1..],
                &ServerName::try_from(name).unwrap(),
                &[],
                UnixTime::now(),
            )
            .unwrap();
    }
    // The certificate is for the key the request named.
    let pkcs8 = rustls::pki_types::PrivateKeyDer::Pkcs8(cert_key.pkcs8().to_vec().into());
    rustls::ServerConfig::builder_with_provider(Arc::new(brisk::tls::provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, pkcs8)
        .unwrap();
}

/// Answers http-01 (from the process's table, as brisk's listeners do)
/// and tls-alpn-01 (through a TLS server of brisk's configuration over
/// `live`, as its TLS listeners do) on Pebble's ports.
pub(crate) struct Listeners {
    stop: Arc<AtomicBool>,
}

impl Drop for Listeners {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn accept_loop(
    port: u16,
    stop: Arc<AtomicBool>,
    serve: impl Fn(std::net::TcpStream) + Send + 'static,
) {
    let l = TcpListener::bind(("127.0.0.1", port)).unwrap();
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match l.accept() {
                Ok((sock, _)) => {
                    sock.set_nonblocking(false).unwrap();
                    let _ = sock.set_read_timeout(Some(Duration::from_secs(5)));
                    serve(sock);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    });
}

pub(crate) fn listeners(pebble: &Pebble, live: &Arc<brisk::tls::sni::Live>) -> Listeners {
    let stop = Arc::new(AtomicBool::new(false));
    accept_loop(pebble.http_port, Arc::clone(&stop), |sock| {
        let mut r = BufReader::new(sock);
        let mut line = String::new();
        r.read_line(&mut line).unwrap_or_default();
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                break;
            }
        }
        let path = line.split(' ').nth(1).unwrap_or("");
        let token = path
            .strip_prefix("/.well-known/acme-challenge/")
            .unwrap_or("");
        let answer = match brisk::acme::manager::http01_answer(token) {
            Some(ka) => format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{ka}",
                ka.len()
            ),
            None => {
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into()
            }
        };
        let _ = r.get_mut().write_all(answer.as_bytes());
    });
    let mut shared = brisk::tls::context::Shared::new(0).unwrap();
    shared.live = Arc::clone(live);
    let config = brisk::tls::context::server_config(&[], true, &shared).unwrap();
    accept_loop(pebble.tls_port, Arc::clone(&stop), move |mut sock| {
        let Ok(mut conn) = rustls::ServerConnection::new(Arc::clone(&config)) else {
            return;
        };
        while conn.is_handshaking() {
            if conn.complete_io(&mut sock).is_err() {
                break;
            }
        }
        let _ = conn.complete_io(&mut sock);
    });
    Listeners { stop }
}

/// A manager of `names` on `storage`, answering `kinds`; its log lines
/// go to `lines`.
pub(crate) fn manager(
    pebble: &Pebble,
    storage: &std::path::Path,
    names: &[&str],
    kinds: &[&'static str],
    holder: &str,
) -> (brisk::acme::manager::Manager, Arc<brisk::tls::sni::Live>) {
    use brisk::acme::manager::{Manager, Published, Settings};
    let live = Arc::new(brisk::tls::sni::Live::default());
    let settings = Settings {
        directory: pebble.directory.clone(),
        email: Some("ops@example.org".into()),
        names: names.iter().map(|n| n.to_string()).collect(),
        kinds: kinds.to_vec(),
        storage: storage.to_path_buf(),
        jail: None,
        holder: holder.into(),
        local: Vec::new(),
        key_type: Default::default(),
        eab: None,
    };
    let published = Arc::new(Published {
        live: Arc::clone(&live),
    });
    let m = Manager::new(
        settings,
        pebble.client.clone(),
        Arc::clone(&live),
        published,
    )
    .unwrap();
    (m, live)
}

/// A log that keeps its lines.
pub(crate) fn keep(
    lines: &Mutex<Vec<String>>,
) -> impl FnMut(brisk::log::Level, std::fmt::Arguments<'_>) + '_ {
    move |level, args| lines.lock().unwrap().push(format!("{level:?} {args}"))
}

pub(crate) fn verifier(pebble: &Pebble) -> Arc<rustls::client::WebPkiServerVerifier> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(pebble.root()).unwrap();
    rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::new(brisk::tls::provider()),
    )
    .build()
    .unwrap()
}

#[test]
fn the_manager_orders_by_tls_alpn_01_and_a_restart_serves_the_stored_ones_without_an_order() {
    let Some(pebble) = Pebble::start(&[("PEBBLE_VA_NOSLEEP", "1")]) else {
        return;
    };
    let storage = TempDir::new("acme-storage");
    let names = ["a.test", "b.test"];
    let (mut m, live) = manager(
        &pebble,
        &storage.path,
        &names,
        &[brisk::acme::client::TLS_ALPN_01],
        "one 1",
    );
    let _l = listeners(&pebble, &live);
    let lines = Mutex::new(Vec::new());
    m.load_stored(now(), &mut keep(&lines));
    assert!(live.issued("a.test").is_none());
    let next = m.step(now(), &mut keep(&lines));
    let log = lines.lock().unwrap().join("\n");
    assert_eq!(log.matches("ordering a certificate").count(), 2, "{log}");
    assert!(!log.contains("Error"), "{log}");
    // Served, and verified as a client would.
    let v = verifier(&pebble);
    for name in names {
        let key = live
            .issued(name)
            .unwrap_or_else(|| panic!("{name} served: {log}"));
        v.verify_server_cert(
            &key.cert[0],
            &key.cert[1..],
            &ServerName::try_from(name).unwrap(),
            &[],
            UnixTime::now(),
        )
        .unwrap();
    }
    // Next: Pebble's renewal information asked again as its Retry-After
    // says (6 h); the renewal itself is about 60 days on (Pebble's
    // window: 90 days' two thirds, a day either side).
    assert_eq!(next, Duration::from_secs(6 * 3600), "{log}");
    assert_eq!(
        log.matches("the CA suggests renewing between").count(),
        2,
        "{log}"
    );

    // The storage's files and modes.
    use std::os::unix::fs::PermissionsExt as _;
    let ca = storage
        .path
        .join(brisk::acme::store::ca_dir_name(&pebble.directory));
    for file in [
        "account.key",
        "account.url",
        "certs/a.test/chain.pem",
        "certs/a.test/key.pem",
        "certs/b.test/key.pem",
    ] {
        let mode = std::fs::metadata(ca.join(file))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600, "{file}");
    }

    // A restart: served from the storage at once, nothing ordered.
    let (mut again, live2) = manager(
        &pebble,
        &storage.path,
        &names,
        &[brisk::acme::client::TLS_ALPN_01],
        "one 2",
    );
    let lines = Mutex::new(Vec::new());
    again.load_stored(now(), &mut keep(&lines));
    again.step(now(), &mut keep(&lines));
    let log = lines.lock().unwrap().join("\n");
    assert_eq!(log.matches("serving the certificate").count(), 2, "{log}");
    assert!(!log.contains("ordering"), "{log}");
    assert_eq!(
        live2.issued("a.test").unwrap().cert,
        live.issued("a.test").unwrap().cert
    );
}

#[test]
fn a_fleet_of_three_on_one_storage_orders_once_per_name_and_serves_the_same_certificates() {
    let Some(pebble) = Pebble::start(&[("PEBBLE_VA_NOSLEEP", "1")]) else {
        return;
    };
    let storage = TempDir::new("acme-fleet");
    let names = ["a.test", "b.test"];
    let live_all = Arc::new(brisk::tls::sni::Live::default());
    let _l = listeners(&pebble, &live_all);
    let lines = Arc::new(Mutex::new(Vec::new()));
    let t0 = now();
    let servers: Vec<_> = (0..3)
        .map(|i| {
            let (m, live) = manager(
                &pebble,
                &storage.path,
                &names,
                &[HTTP_01],
                &format!("server{i} {i}"),
            );
            (m, live)
        })
        .collect();
    let handles: Vec<_> = servers
        .into_iter()
        .map(|(mut m, live)| {
            let lines = Arc::clone(&lines);
            std::thread::spawn(move || {
                m.load_stored(t0, &mut keep(&lines));
                m.step(t0, &mut keep(&lines));
                (m, live)
            })
        })
        .collect();
    let mut done: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    // Those that found a lock held look again later, and serve what its
    // holder stored.
    let later = t0 + brisk::acme::manager::LOCK_RECHECK.as_secs() + 1;
    for (m, _) in &mut done {
        m.step(later, &mut keep(&lines));
    }
    let log = lines.lock().unwrap().join("\n");
    assert_eq!(
        log.matches("ordering a certificate").count(),
        2,
        "one order per name:\n{log}"
    );
    assert!(!log.contains("Error"), "{log}");
    for name in names {
        let first = done[0]
            .1
            .issued(name)
            .unwrap_or_else(|| panic!("{name}: {log}"));
        for (m, live) in &done[1..] {
            let got = live.issued(name);
            let got = got.unwrap_or_else(|| panic!("{name} in {m:?}: {log}"));
            assert_eq!(got.cert, first.cert, "{name}");
        }
    }
    assert!(
        std::fs::read_dir(storage.path.join("locks"))
            .unwrap()
            .next()
            .is_none(),
        "every lock released"
    );
}

/// A TLS 1.3 handshake with `addr` for `name`, verified against `root`:
/// the certificate chain served, or why not.
pub(crate) fn served_chain(
    addr: std::net::SocketAddr,
    name: &str,
    root: CertificateDer<'static>,
) -> Result<Vec<CertificateDer<'static>>, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(root).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(brisk::tls::provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from(name.to_string()).unwrap();
    let mut conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut sock = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    while conn.is_handshaking() {
        conn.complete_io(&mut sock).map_err(|e| e.to_string())?;
    }
    Ok(conn.peer_certificates().unwrap_or_default().to_vec())
}

#[test]
fn brisk_obtains_its_certificates_by_tls_alpn_01_and_by_http_01_and_serves_them_in_its_sandbox() {
    for (kinds, names) in [
        ("\"tls-alpn-01\"", ["a.test", "b.test"]),
        ("\"http-01\"", ["c.test", "d.test"]),
    ] {
        let Some(pebble) = Pebble::start(&[("PEBBLE_VA_NOSLEEP", "1")]) else {
            return;
        };
        let mut b = crate::common::Builder::new();
        let base = b.base().to_path_buf();
        std::fs::write(base.join("ca.pem"), cert::pem("CERTIFICATE", &pebble.ca)).unwrap();
        let toml = format!(
            r#"listen = ["127.0.0.1:{http}"]
[tls]
listen = ["127.0.0.1:{tls}"]
[acme]
email = "ops@example.org"
directory = "{dir}"
ca_roots = ["{base}/ca.pem"]
storage = "{base}/acme"
hosts = ["{a}", "{b}"]
challenges = [{kinds}]
"#,
            http = pebble.http_port,
            tls = pebble.tls_port,
            dir = pebble.directory,
            base = base.display(),
            a = names[0],
            b = names[1],
        );
        b.config(&toml).listen_from_config().listeners(2);
        let server = b.start();
        let tls_addr: std::net::SocketAddr =
            format!("127.0.0.1:{}", pebble.tls_port).parse().unwrap();
        let root = pebble.root();
        for name in names {
            let chain = poll(Duration::from_secs(60), || {
                served_chain(tls_addr, name, root.clone()).ok()
            });
            let chain = chain.unwrap_or_else(|| panic!("{name} never served: {}", server.stderr()));
            let names_in = brisk::tls::x509::parse(&chain[0]).unwrap().names;
            assert_eq!(names_in, [name]);
        }
        let log = server.stderr();
        assert!(log.contains("seccomp on"), "{log}");
        assert!(!log.contains("[error]"), "{log}");
        // Plain HTTP goes to HTTPS (redirect_http by default, with the
        // feature `sites`).
        #[cfg(feature = "sites")]
        {
            let raw = format!(
                "GET /x HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                names[0]
            );
            let r = server.request(raw.as_bytes());
            assert_eq!(r.status, 308, "{}", String::from_utf8_lossy(&r.raw));
            let to = format!("https://{}:{}/x", names[0], pebble.tls_port);
            let head = String::from_utf8_lossy(&r.raw);
            assert!(head.contains(&format!("Location: {to}\r\n")), "{head}");
        }
    }
}

/// The certificate served now for `name` on `addr`, and its expiry.
pub(crate) fn leaf_of(
    addr: std::net::SocketAddr,
    name: &str,
    root: &CertificateDer<'static>,
) -> Option<(Vec<u8>, u64)> {
    let chain = served_chain(addr, name, root.clone()).ok()?;
    let facts = brisk::tls::x509::parse(&chain[0]).ok()?;
    Some((chain[0].to_vec(), facts.not_after))
}

/// A server of `names` in front of `pebble`, its error log in its
/// stderr; the TLS address.
pub(crate) fn acme_server(
    pebble: &Pebble,
    names: &[&str],
    files: &[(&str, &[u8])],
) -> (crate::common::Server, std::net::SocketAddr) {
    acme_server_on(pebble, names, files, None)
}

/// [`acme_server`], with `extra` lines in its `[acme]`.
pub(crate) fn acme_server_with(
    pebble: &Pebble,
    names: &[&str],
    files: &[(&str, &[u8])],
    extra: &str,
) -> (crate::common::Server, std::net::SocketAddr) {
    let (b, tls) = acme_builder(pebble, names, files, "", None, extra);
    (b.start(), tls)
}

/// [`acme_server`], its ACME storage `storage` (None: one of its own).
pub(crate) fn acme_server_on(
    pebble: &Pebble,
    names: &[&str],
    files: &[(&str, &[u8])],
    storage: Option<&std::path::Path>,
) -> (crate::common::Server, std::net::SocketAddr) {
    let (b, tls) = acme_builder(pebble, names, files, "", storage, "");
    (b.start(), tls)
}

/// [`acme_server_on`] not started yet, its configuration beginning with
/// `top` (top-level keys), with `extra` lines in its `[acme]`.
pub(crate) fn acme_builder(
    pebble: &Pebble,
    names: &[&str],
    files: &[(&str, &[u8])],
    top: &str,
    storage: Option<&std::path::Path>,
    extra: &str,
) -> (crate::common::Builder, std::net::SocketAddr) {
    let ports = (pebble.http_port, pebble.tls_port);
    let b = acme_builder_on_ports(pebble, ports, names, files, top, "", storage, extra);
    let tls = format!("127.0.0.1:{}", pebble.tls_port).parse().unwrap();
    (b, tls)
}

/// [`acme_builder`] listening on `ports` (plain, TLS; 0: any) rather
/// than where Pebble validates (a fleet behind a load balancer), with
/// `tls_extra` lines in its `[tls]`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn acme_builder_on_ports(
    pebble: &Pebble,
    ports: (u16, u16),
    names: &[&str],
    files: &[(&str, &[u8])],
    top: &str,
    tls_extra: &str,
    storage: Option<&std::path::Path>,
    extra: &str,
) -> crate::common::Builder {
    let mut b = crate::common::Builder::new();
    for (name, bytes) in files {
        b.file(name, bytes);
    }
    let base = b.base().to_path_buf();
    std::fs::write(base.join("ca.pem"), cert::pem("CERTIFICATE", &pebble.ca)).unwrap();
    let hosts: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    let toml = format!(
        "{top}listen = [\"127.0.0.1:{http}\"]\n[tls]\nlisten = [\"127.0.0.1:{tls}\"]\n{tls_extra}\n[acme]\n\
         directory = \"{dir}\"\nca_roots = [\"{base}/ca.pem\"]\nstorage = \"{storage}\"\n\
         hosts = [{hosts}]\n{extra}",
        http = ports.0,
        tls = ports.1,
        dir = pebble.directory,
        base = base.display(),
        storage = storage
            .map_or(base.join("acme"), std::path::Path::to_path_buf)
            .display(),
        hosts = hosts.join(", "),
    );
    b.config(&toml).listen_from_config().listeners(2);
    b
}

#[test]
fn a_certificate_is_renewed_without_a_restart_while_a_download_on_the_old_one_goes_on() {
    // Certificates of 60 s: renewed 40 s into their lifetime.
    let Some(pebble) = Pebble::start_with(&[("PEBBLE_VA_NOSLEEP", "1")], 60) else {
        return;
    };
    let body = vec![b'x'; 4 << 20];
    let (server, tls) = acme_server(&pebble, &["a.test"], &[("big.bin", &body)]);
    let root = pebble.root();
    let first = poll(Duration::from_secs(60), || leaf_of(tls, "a.test", &root));
    let (first, first_end) = first.unwrap_or_else(|| panic!("never served: {}", server.stderr()));
    // A download over the first certificate, read slowly.
    let mut roots = rustls::RootCertStore::empty();
    roots.add(root.clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(brisk::tls::provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let conn =
        rustls::ClientConnection::new(Arc::new(config), ServerName::try_from("a.test").unwrap())
            .unwrap();
    let sock = std::net::TcpStream::connect(tls).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut stream = rustls::StreamOwned::new(conn, sock);
    use std::io::{Read as _, Write as _};
    stream
        .write_all(b"GET /big.bin HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut piece = [0u8; 16 * 1024];
    // Until the renewal, a piece now and then.
    let renewed = poll(Duration::from_secs(90), || {
        if let Ok(n) = stream.read(&mut piece) {
            got.extend_from_slice(&piece[..n]);
        }
        std::thread::sleep(Duration::from_millis(200));
        leaf_of(tls, "a.test", &root).filter(|(leaf, _)| *leaf != first)
    });
    let (_, second_end) = renewed.unwrap_or_else(|| panic!("never renewed: {}", server.stderr()));
    assert!(second_end > first_end);
    assert!(stream.conn.peer_certificates().unwrap()[0].as_ref() == first.as_slice());
    stream.read_to_end(&mut got).unwrap();
    let head_end = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(
        got.len() - head_end,
        body.len(),
        "the download on the old certificate completed"
    );
    // (Pebble's renewal window for so short a certificate is its whole
    // lifetime: a time chosen in it may renew it again sooner.)
    let log = server.stderr();
    assert!(log.matches("ordering a certificate").count() >= 2, "{log}");
}

#[test]
fn an_unreachable_ca_is_tried_again_later_with_a_line_each_time_and_the_server_serves_on() {
    let Some(pebble) = Pebble::start(&[("PEBBLE_VA_NOSLEEP", "1")]) else {
        return;
    };
    // The directory names a port nothing listens on.
    let dead = Pebble {
        directory: format!("https://127.0.0.1:{}/dir", free_port()),
        ..pebble
    };
    let (server, tls) = acme_server(&dead, &["a.test"], &[("index.html", b"still here\n")]);
    let line = server.wait_stderr_line("acme: a.test:");
    let line = if line.contains("ordering") {
        server.wait_stderr_line("next try in")
    } else {
        line
    };
    assert!(
        line.contains("[error] acme: a.test: GET https://127.0.0.1:"),
        "{line}"
    );
    assert!(line.contains("cannot connect"), "{line}");
    assert!(
        line.contains(
            "no certificate for it yet: its handshakes fail; next try in 60 s (failure 1)"
        ),
        "{line}"
    );
    // No certificate: the handshake fails with an alert (not a hang).
    let refused = served_chain(tls, "a.test", CertificateDer::from(dead.ca.clone())).unwrap_err();
    assert!(refused.contains("alert"), "{refused}");
    // Plain HTTP is still served (redirected to HTTPS, with the feature
    // `sites`).
    let r = server.request(b"GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    assert_eq!(r.status, if cfg!(feature = "sites") { 308 } else { 200 });
    // A name no certificate is for is served over plain HTTP, not sent
    // to an HTTPS whose handshake would fail.
    let r = server.request(b"GET / HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n");
    assert_eq!(r.status, 200);
}

#[test]
fn localhost_and_addresses_get_a_certificate_from_the_local_ca_without_any_ca_asked() {
    let mut b = crate::common::Builder::new();
    let base = b.base().to_path_buf();
    let (http, tls) = (free_port(), free_port());
    // (No directory is reachable here: none is needed.)
    let toml = format!(
        "listen = [\"127.0.0.1:{http}\"]\n[tls]\nlisten = [\"127.0.0.1:{tls}\"]\n[acme]\n\
         storage = \"{}/acme\"\nhosts = [\"localhost\", \"127.0.0.1\"]\n",
        base.display()
    );
    b.file("index.html", b"local\n");
    b.config(&toml).listen_from_config().listeners(2);
    let server = b.start();
    let line = server.wait_stderr_line("from brisk's local CA");
    let ca_path = base.join("acme/local/ca.pem");
    assert!(
        line.contains(&format!("trust {}", ca_path.display())),
        "{line}"
    );
    let ca = CertificateDer::from_pem_file(&ca_path).unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{tls}").parse().unwrap();
    // By name (SNI localhost), and by address (no SNI: the default).
    for name in ["localhost", "127.0.0.1"] {
        let chain = poll(Duration::from_secs(10), || {
            served_chain(addr, name, ca.clone()).ok()
        });
        assert!(chain.is_some(), "{name}: {}", server.stderr());
    }
    use std::os::unix::fs::PermissionsExt as _;
    for file in ["ca.key", "key.pem", "ca.pem", "chain.pem"] {
        let mode = std::fs::metadata(base.join("acme/local").join(file))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file}");
    }
    assert!(!server.stderr().contains("[error]"), "{}", server.stderr());
}

/// A name brisk holds no certificate for (none configured, none
/// obtained) is refused with the alert RFC 6066 §3 gives for a server
/// name the server does not recognise, unrecognized_name (112), as
/// nginx's `ssl_reject_handshake` does, not access_denied (49: "a valid
/// certificate or PSK was received" and access control refused it),
/// which rustls sends when no certificate resolves.
#[test]
fn a_name_with_no_certificate_is_refused_with_unrecognized_name() {
    let mut b = crate::common::Builder::new();
    let base = b.base().to_path_buf();
    let (http, tls) = (free_port(), free_port());
    let toml = format!(
        "listen = [\"127.0.0.1:{http}\"]\n[tls]\nlisten = [\"127.0.0.1:{tls}\"]\n[acme]\n\
         storage = \"{}/acme\"\nhosts = [\"localhost\"]\n",
        base.display()
    );
    b.config(&toml).listen_from_config().listeners(2);
    let server = b.start();
    server.wait_stderr_line("from brisk's local CA");
    let ca = CertificateDer::from_pem_file(base.join("acme/local/ca.pem")).unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{tls}").parse().unwrap();
    let chain = poll(Duration::from_secs(10), || {
        served_chain(addr, "localhost", ca.clone()).ok()
    });
    assert!(chain.is_some(), "{}", server.stderr());
    let refused = served_chain(addr, "unknown.test", ca).unwrap_err();
    assert!(refused.contains("UnrecognisedName"), "{refused}");
}

/// With `chroot`, the storage lies in the jail and is used from inside
/// it (it was made by its outside path after the chroot: no
/// certificate); the line naming the local CA gives the path from
/// outside, where the operator finds it. Needs root.
#[test]
fn a_chrooted_server_keeps_its_certificates_in_the_jail() {
    if brisk::sys::privileges::euid() != 0 {
        skip("chroot needs root");
        return;
    }
    let mut b = crate::common::Builder::new();
    let base = b.base().canonicalize().unwrap();
    let (http, tls) = (free_port(), free_port());
    let toml = format!(
        "chroot = \".\"\nuser = \"nobody\"\nlisten = [\"127.0.0.1:{http}\"]\n\
         [tls]\nlisten = [\"127.0.0.1:{tls}\"]\n[acme]\nstorage = \"acme\"\nhosts = [\"localhost\"]\n"
    );
    b.file("index.html", b"jailed\n");
    b.config(&toml).listen_from_config().listeners(2);
    let server = b.start();
    let ca_path = base.join("acme/local/ca.pem");
    let line = server.wait_stderr_line("from brisk's local CA");
    assert!(
        line.contains(&format!("trust {} ", ca_path.display())),
        "{line}"
    );
    let ca = CertificateDer::from_pem_file(&ca_path).unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{tls}").parse().unwrap();
    let chain = poll(Duration::from_secs(10), || {
        served_chain(addr, "localhost", ca.clone()).ok()
    });
    assert!(chain.is_some(), "{}", server.stderr());
    assert!(!server.stderr().contains("[error]"), "{}", server.stderr());
}
