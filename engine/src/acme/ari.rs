//! ACME Renewal Information (ARI, RFC 9773): the CA says when it would
//! like a certificate renewed. Its directory names a `renewalInfo` URL;
//! an unauthenticated GET of that URL followed by `/` and the
//! certificate's identifier (§4.1: base64url of its issuer's key
//! identifier, `.`, base64url of its serial number) answers a
//! `suggestedWindow` (§4.2), and `Retry-After` says when to ask again.
//! A renewal names the certificate it replaces in its order (§5).
//!
//! What this module decides (the manager keeps the state and asks):
//! when to renew within a window — a time chosen uniformly at random in
//! it (§4.2's algorithm: a time already passed means now) — and how often
//! to ask — `Retry-After` bounded to [`MIN_POLL`]..[`MAX_POLL`] (§4.3
//! suggests such limits), [`DEFAULT_POLL`] without one.

use std::time::Duration;

use super::http::Client;
use super::key::b64url;
use crate::http::date::days_from_civil;
use crate::http::json::{self, Json};

/// How long until renewal information is asked for again when the CA's
/// answer says nothing (`Retry-After` absent), or after a failure.
pub const DEFAULT_POLL: Duration = Duration::from_secs(6 * 3600);
/// The shortest `Retry-After` honoured.
pub const MIN_POLL: Duration = Duration::from_secs(60);
/// The longest `Retry-After` honoured.
pub const MAX_POLL: Duration = Duration::from_secs(24 * 3600);

/// The identifier of the DER certificate `leaf` (§4.1), as its
/// renewalInfo URL and a replacing order's `replaces` name it; an error
/// when it cannot have one (no Authority Key Identifier).
pub fn cert_id(leaf: &[u8]) -> Result<String, String> {
    let id = crate::tls::x509::identity(leaf).map_err(|e| e.to_string())?;
    let key_id = id
        .authority_key_id
        .ok_or("it has no Authority Key Identifier")?;
    Ok(format!("{}.{}", b64url(key_id), b64url(id.serial)))
}

/// A suggested renewal window (§4.2), seconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// Its start.
    pub start: u64,
    /// Its end, after the start.
    pub end: u64,
    /// `explanationURL`: a page saying why, when the CA gives one.
    pub explanation: Option<String>,
}

/// What the CA answered about a certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    /// The window.
    pub window: Window,
    /// When to ask again (its `Retry-After`, bounded).
    pub poll: Duration,
}

/// The renewalInfo URL of the certificate `cert_id`, the directory's
/// `renewal_info` naming the resource.
pub fn url(renewal_info: &str, cert_id: &str) -> String {
    format!("{}/{cert_id}", renewal_info.trim_end_matches('/'))
}

/// Asks the CA (GET, unauthenticated: §4.2) what it suggests for the
/// certificate `cert_id`.
pub fn fetch(http: &Client, renewal_info: &str, cert_id: &str) -> Result<Info, String> {
    let url = url(renewal_info, cert_id);
    let a = http.get(&url).map_err(|e| e.0)?;
    if a.status != 200 {
        // (With the CA's problem document, when it sent one: its detail
        // says why, "no known issuer matches ...".)
        return Err(match super::client::problem(&a) {
            e @ super::client::AcmeError::Problem { .. } => format!("GET {url} answered {e}"),
            _ => format!("GET {url} answered {}", a.status),
        });
    }
    let window = window(&a.body).map_err(|e| format!("GET {url}: {e}"))?;
    Ok(Info {
        window,
        poll: poll_period(super::client::retry_after(&a)),
    })
}

/// How long to wait before asking again, the answer having said
/// `retry_after`.
pub fn poll_period(retry_after: Option<Duration>) -> Duration {
    retry_after.map_or(DEFAULT_POLL, |d| d.clamp(MIN_POLL, MAX_POLL))
}

/// The window of a RenewalInfo object (§4.2); one whose end is not after
/// its start is invalid.
pub fn window(body: &[u8]) -> Result<Window, String> {
    let v = json::decode(body).map_err(|e| format!("not JSON: {e}"))?;
    let w = v.get("suggestedWindow").ok_or("no suggestedWindow")?;
    let time = |name: &str| {
        w.get(name)
            .and_then(Json::as_str)
            .and_then(rfc3339_ms)
            .ok_or_else(|| format!("suggestedWindow.{name} is not an RFC 3339 time"))
    };
    let (start, end) = (time("start")?, time("end")?);
    if end <= start {
        return Err("the suggested window ends before it starts".into());
    }
    Ok(Window {
        start: start / 1000,
        end: end.div_ceil(1000),
        explanation: v
            .get("explanationURL")
            .and_then(Json::as_str)
            .map(str::to_string),
    })
}

/// The time to renew at in `w` given a `random` number: uniformly in
/// the window (§4.2); in the past when the window is.
pub fn choose(w: &Window, random: u64) -> u64 {
    w.start + random % (w.end - w.start).max(1)
}

/// A random number (0 when the system has none: the window's start).
pub fn random() -> u64 {
    use ring::rand::SecureRandom as _;
    let mut b = [0u8; 8];
    match ring::rand::SystemRandom::new().fill(&mut b) {
        Ok(()) => u64::from_le_bytes(b),
        Err(_) => 0,
    }
}

/// An RFC 3339 `date-time` (`2025-01-02T04:00:00Z`, fractions of a
/// second and an offset allowed) in milliseconds since the Unix epoch.
pub fn rfc3339_ms(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let digits = |from: usize, to: usize| -> Option<u64> {
        let d = b.get(from..to)?;
        d.iter().try_fold(0u64, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u64::from(c - b'0'))
        })
    };
    let at = |i: usize, c: &[u8]| b.get(i).is_some_and(|x| c.contains(x));
    if !(at(4, b"-") && at(7, b"-") && at(10, b"Tt") && at(13, b":") && at(16, b":")) {
        return None;
    }
    let (year, month, day) = (digits(0, 4)?, digits(5, 7)?, digits(8, 10)?);
    let (hour, minute, second) = (digits(11, 13)?, digits(14, 16)?, digits(17, 19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 60 || year < 1970 {
        return None;
    }
    let mut i = 19;
    let mut ms = 0;
    if at(i, b".") {
        let frac = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if frac == 0 {
            return None;
        }
        // Milliseconds: the first three digits, padded.
        ms = (0..3).fold(0, |n, k| {
            n * 10
                + if k < frac {
                    u64::from(b[i + 1 + k] - b'0')
                } else {
                    0
                }
        });
        i += 1 + frac;
    }
    let offset: i64 = match &b[i..] {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (h, m) = (digits(i + 1, i + 3)?, digits(i + 4, i + 6)?);
            if h > 23 || m > 59 {
                return None;
            }
            let secs = i64::try_from(h * 3600 + m * 60).ok()?;
            if *sign == b'+' {
                secs
            } else {
                -secs
            }
        }
        _ => return None,
    };
    let days = days_from_civil(
        u32::try_from(year).ok()?,
        u32::try_from(month).ok()?,
        u32::try_from(day).ok()?,
    )?;
    let local = i64::try_from(days * 86_400 + hour * 3600 + minute * 60 + second).ok()?;
    let utc = u64::try_from(local - offset).ok()?;
    Some(utc * 1000 + ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_identifier_of_rfc_9773s_example_certificate() {
        let der = crate::tls::x509::tests::rfc_9773_example();
        assert_eq!(
            cert_id(&der).unwrap(),
            "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE"
        );
        assert_eq!(
            url(
                "https://ca.test/renewal-info/",
                "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE"
            ),
            "https://ca.test/renewal-info/aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE"
        );
    }

    #[test]
    fn a_certificate_without_an_authority_key_id_has_no_identifier() {
        // A tls-alpn-01 certificate: self-signed, no AKI.
        let key = super::super::key::Key::generate().unwrap();
        let t = super::super::cert::Template {
            names: &[super::super::cert::Alt::Dns("a.test")],
            common_name: None,
            serial: [0x80; 16],
            not_before: 0,
            not_after: 86_400,
            ca: false,
            acme_identifier: None,
        };
        let der = super::super::cert::certificate(&t, &key, None).unwrap();
        let e = cert_id(&der).unwrap_err();
        assert_eq!(e, "it has no Authority Key Identifier");
        // Its serial as RFC 9773 wants it: 0x00 before a high bit.
        let id = crate::tls::x509::identity(&der).unwrap();
        assert_eq!(id.serial.len(), 17);
        assert_eq!(id.serial[..2], [0x00, 0x80]);
    }

    #[test]
    fn the_window_of_rfc_9773s_example_answer() {
        // §4.2's example, and Pebble's form (milliseconds).
        let w = window(
            br#"{"suggestedWindow":{"start":"2025-01-02T04:00:00Z","end":"2025-01-03T04:00:00Z"},"explanationURL":"https://acme.example.com/docs/ari"}"#,
        )
        .unwrap();
        assert_eq!(
            w,
            Window {
                start: 1_735_790_400,
                end: 1_735_876_800,
                explanation: Some("https://acme.example.com/docs/ari".into()),
            }
        );
        let w = window(
            br#"{"suggestedWindow":{"start":"2026-11-29T10:59:59.123Z","end":"2026-11-29T11:00:00.124Z"}}"#,
        )
        .unwrap();
        assert_eq!((w.start, w.end - w.start), (1_795_949_999, 2));
        assert_eq!(w.explanation, None);
        for bad in [
            &br#"{"suggestedWindow":{"start":"2025-01-03T04:00:00Z","end":"2025-01-03T04:00:00Z"}}"#[..],
            br#"{"suggestedWindow":{"start":"2025-01-03T04:00:00Z","end":"2025-01-02T04:00:00Z"}}"#,
            br#"{"suggestedWindow":{"start":"2025-01-02","end":"2025-01-03T04:00:00Z"}}"#,
            br#"{"suggestedWindow":{"start":"2025-01-02T04:00:00Z"}}"#,
            br#"{"start":"2025-01-02T04:00:00Z","end":"2025-01-03T04:00:00Z"}"#,
            b"<html>",
        ] {
            assert!(window(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn rfc_3339_times() {
        assert_eq!(rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(rfc3339_ms("1970-01-01t00:00:01.5z"), Some(1_500));
        assert_eq!(rfc3339_ms("1970-01-01T00:00:00.0129Z"), Some(12));
        // RFC 3339 §5.8's examples.
        assert_eq!(rfc3339_ms("1985-04-12T23:20:50.52Z"), Some(482_196_050_520));
        assert_eq!(
            rfc3339_ms("1996-12-19T16:39:57-08:00"),
            rfc3339_ms("1996-12-20T00:39:57Z")
        );
        assert_eq!(
            rfc3339_ms("1990-12-31T15:59:60-08:00"),
            rfc3339_ms("1991-01-01T00:00:00Z")
        );
        for bad in [
            "",
            "1985-04-12 23:20:50Z",
            "1985-04-12T23:20:50",
            "1985-04-12T23:20:50.Z",
            "1985-13-12T23:20:50Z",
            "1985-04-12T24:20:50Z",
            "1985-04-12T23:20:50+0100",
            "1969-12-31T23:59:59Z",
            "1970-01-01T00:00:00+01:00",
            "1985-04-12T23:20:50Zjunk",
        ] {
            assert_eq!(rfc3339_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_time_is_chosen_in_the_window() {
        let w = Window {
            start: 1_000,
            end: 1_010,
            explanation: None,
        };
        assert_eq!(choose(&w, 0), 1_000);
        assert_eq!(choose(&w, 9), 1_009);
        assert_eq!(choose(&w, 10), 1_000);
        assert_eq!(choose(&w, u64::MAX), 1_005);
        for _ in 0..100 {
            assert!((1_000..1_010).contains(&choose(&w, random())));
        }
    }

    /// A CA on 127.0.0.1 over plain HTTP: its directory (with
    /// `renewalInfo` or not); renewalInfo answers 500. The paths asked
    /// are kept.
    struct FakeCa {
        url: String,
        asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
        /// The storages of the managers in front of it, removed with it.
        storages: std::cell::RefCell<Vec<std::path::PathBuf>>,
    }

    impl Drop for FakeCa {
        fn drop(&mut self) {
            self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
            for dir in self.storages.take() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }

    fn fake_ca(with_ari: bool) -> FakeCa {
        let stop = std::sync::Arc::<std::sync::atomic::AtomicBool>::default();
        let asked = std::sync::Arc::<std::sync::Mutex<Vec<String>>>::default();
        let kept = std::sync::Arc::clone(&asked);
        let base = super::super::fake_ca::serve(std::sync::Arc::clone(&stop), move |base, req| {
            kept.lock().unwrap().push(req.path.to_string());
            let ari = if with_ari {
                format!(r#","renewalInfo":"{base}/ari""#)
            } else {
                String::new()
            };
            if req.path == "/dir" {
                let dir = format!(
                    r#"{{"newNonce":"{base}/n","newAccount":"{base}/a","newOrder":"{base}/o"{ari}}}"#
                );
                return ("200 OK", String::new(), "application/json", dir);
            }
            (
                "500 Internal Server Error",
                String::new(),
                "application/json",
                r#"{"type":"urn:ietf:params:acme:error:serverInternal","detail":"it went wrong"}"#
                    .into(),
            )
        });
        FakeCa {
            url: format!("{base}/dir"),
            asked,
            stop,
            storages: Default::default(),
        }
    }

    /// A manager of `c.test` in front of `ca`, serving the test
    /// certificate `c` (an AKI, valid until 2126) from its storage.
    fn manager_of(ca: &FakeCa, tag: &str) -> super::super::manager::Manager {
        use super::super::manager::{Manager, Published, Settings};
        use super::super::store::{Store, Stored};
        let storage =
            std::env::temp_dir().join(format!("brisk-acme-ari-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&storage);
        ca.storages.borrow_mut().push(storage.clone());
        let testdata = crate::source_dir().join("engine/src/tls/testdata");
        let read = |f: &str| std::fs::read_to_string(testdata.join(f)).unwrap();
        Store::open(&storage, &ca.url)
            .unwrap()
            .save_certificate(
                "c.test",
                &Stored {
                    chain_pem: read("c.pem"),
                    key_pem: read("c.key"),
                },
            )
            .unwrap();
        let settings = Settings {
            directory: ca.url.clone(),
            email: None,
            names: vec!["c.test".into()],
            kinds: vec![super::super::client::HTTP_01],
            storage,
            jail: None,
            holder: "test 1".into(),
            local: Vec::new(),
            key_type: Default::default(),
            eab: None,
        };
        let live = std::sync::Arc::new(crate::tls::sni::Live::default());
        let client = Client::new(rustls::RootCertStore::empty(), Duration::from_secs(5)).unwrap();
        let responder = std::sync::Arc::new(Published {
            live: std::sync::Arc::clone(&live),
        });
        Manager::new(settings, client, live, responder).unwrap()
    }

    /// A manager whose thread was told to stop (a reload replaced it)
    /// orders nothing more, even what is due.
    #[test]
    fn a_stopped_manager_orders_nothing() {
        let ca = fake_ca(false);
        let mut m = manager_of(&ca, "stopped");
        let mut lines = Vec::new();
        let mut log = |_: crate::log::Level, a: std::fmt::Arguments<'_>| lines.push(a.to_string());
        let t = 1_800_000_000;
        m.load_stored(t, &mut log);
        let stop = std::sync::Arc::new((std::sync::Mutex::new(true), std::sync::Condvar::new()));
        m.watch(&stop);
        // Long past two thirds of its life: due.
        m.step(4_000_000_000, &mut log);
        assert!(!lines.iter().any(|l| l.contains("ordering")), "{lines:?}");
        // Not stopped, it orders.
        let mut m = manager_of(&ca, "going");
        let mut lines = Vec::new();
        let mut log = |_: crate::log::Level, a: std::fmt::Arguments<'_>| lines.push(a.to_string());
        m.load_stored(t, &mut log);
        m.step(4_000_000_000, &mut log);
        assert!(lines.iter().any(|l| l.contains("ordering")), "{lines:?}");
    }

    #[test]
    fn a_ca_without_renewal_information_is_said_once_and_never_asked() {
        let ca = fake_ca(false);
        let mut m = manager_of(&ca, "none");
        let mut lines = Vec::new();
        let mut log = |_: crate::log::Level, a: std::fmt::Arguments<'_>| lines.push(a.to_string());
        let t = 1_800_000_000;
        m.load_stored(t, &mut log);
        m.step(t, &mut log);
        m.step(t + 7 * 3600, &mut log);
        m.step(t + 30 * 3600, &mut log);
        assert_eq!(
            lines,
            [
                "acme: c.test: serving the certificate valid until 2126-01-01 00:00:00 UTC".to_string(),
                format!("acme: {} offers no renewal information (ARI, RFC 9773): certificates are renewed two thirds through their lifetime", ca.url),
            ]
        );
        assert_eq!(*ca.asked.lock().unwrap(), ["/dir"]);
    }

    #[test]
    fn a_failed_question_is_one_warning_asked_again_six_hours_later() {
        let ca = fake_ca(true);
        let mut m = manager_of(&ca, "failing");
        let mut lines = Vec::new();
        let mut log = |l: crate::log::Level, a: std::fmt::Arguments<'_>| {
            lines.push(format!("{l:?} {a}"));
        };
        let t = 1_800_000_000;
        m.load_stored(t, &mut log);
        assert_eq!(m.step(t, &mut log), DEFAULT_POLL);
        m.step(t + DEFAULT_POLL.as_secs() - 1, &mut log);
        let id = "NleKQsD4VXzUEan772OV-wjQC9Q.Aw";
        let asked = |n: usize| {
            let mut want = vec!["/dir".to_string()];
            want.extend((0..n).map(|_| format!("/ari/{id}")));
            want
        };
        assert_eq!(*ca.asked.lock().unwrap(), asked(1));
        m.step(t + DEFAULT_POLL.as_secs(), &mut log);
        assert_eq!(*ca.asked.lock().unwrap(), asked(2));
        // Two thirds of 2020-01-01..2126-01-01.
        let warning = format!("Warn acme: c.test: renewal information (ARI): GET {}/ari/{id} answered urn:ietf:params:acme:error:serverInternal (500): it went wrong; renewing at 2090-08-31 16:00:00 UTC unless it says otherwise, asking again in 21600 s", ca.url.trim_end_matches("/dir"));
        assert_eq!(lines[1..], [warning.clone(), warning]);
    }

    #[test]
    fn retry_after_is_bounded_and_six_hours_without_it() {
        assert_eq!(poll_period(None), Duration::from_secs(21_600));
        assert_eq!(poll_period(Some(Duration::ZERO)), MIN_POLL);
        assert_eq!(
            poll_period(Some(Duration::from_secs(3600))),
            Duration::from_secs(3600)
        );
        assert_eq!(poll_period(Some(Duration::from_secs(7 * 86_400))), MAX_POLL);
    }
}
