//! Log service tests: byte-exact formats, hostile input, level gating,
//! dropped-line accounting with a stalled writer, and reopening.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::format::{access_draft, access_line, error_line, finish_line, Clock};
use super::{AccessFormat, Level, LogConfig, LogField, LogPiece, LogTarget, LogVar};
use super::{AccessRecord, LogService};
use crate::http::TlsSession;

/// 2026-11-22 01:50:00 UTC.
fn when() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_795_312_200)
}

fn record<'a>() -> AccessRecord<'a> {
    AccessRecord {
        remote: IpAddr::V4(Ipv4Addr::LOCALHOST),
        remote_port: 51234,
        https: false,
        time: when(),
        method: b"GET",
        target: b"/x",
        version: "HTTP/1.1",
        status: 200,
        bytes: 123,
        referer: None,
        user_agent: None,
        user: None,
        host: None,
        duration_us: 52,
        upstream: None,
        tls: None,
    }
}

fn line(format: AccessFormat, rec: &AccessRecord<'_>) -> String {
    line_with(format, &[], rec)
}

fn line_with(format: AccessFormat, fields: &[LogField], rec: &AccessRecord<'_>) -> String {
    let mut out = Vec::new();
    access_line(&mut out, &mut Clock::new(), (format, fields, &[]), rec);
    String::from_utf8(out).unwrap()
}

#[test]
fn common_format() {
    assert_eq!(
        line(AccessFormat::Common, &record()),
        "127.0.0.1 - - [22/Nov/2026:01:50:00 +0000] \"GET /x HTTP/1.1\" 200 123\n"
    );
    let rec = AccessRecord {
        remote: IpAddr::V6(Ipv6Addr::LOCALHOST),
        user: Some(b"alice"),
        host: None,
        bytes: 0,
        status: 304,
        ..record()
    };
    assert_eq!(
        line(AccessFormat::Common, &rec),
        "::1 - alice [22/Nov/2026:01:50:00 +0000] \"GET /x HTTP/1.1\" 304 0\n"
    );
    let rec = AccessRecord {
        method: b"",
        target: b"",
        status: 400,
        bytes: 11,
        ..record()
    };
    assert_eq!(
        line(AccessFormat::Common, &rec),
        "127.0.0.1 - - [22/Nov/2026:01:50:00 +0000] \"-\" 400 11\n"
    );
}

#[test]
fn a_draft_finished_later_is_the_same_line() {
    // The worker drafts a line when it queues an answer and finishes it
    // when the last byte is written: the result must not differ.
    let rec = AccessRecord {
        referer: Some(b"http://a/"),
        user_agent: Some(b"ua"),
        user: Some(b"bob"),
        host: None,
        ..record()
    };
    for format in [
        AccessFormat::Common,
        AccessFormat::Combined,
        AccessFormat::Json,
    ] {
        let mut text = b"earlier".to_vec();
        let draft = access_draft(&mut text, &mut Clock::new(), (format, &[], &[]), &rec);
        assert_eq!(draft.len as usize, text.len() - 7);
        let mut out = Vec::new();
        finish_line(&mut out, &text[7..], draft, 123, 52);
        assert_eq!(String::from_utf8(out).unwrap(), line(format, &rec));
    }
}

#[test]
fn combined_format() {
    assert_eq!(
        line(AccessFormat::Combined, &record()),
        "127.0.0.1 - - [22/Nov/2026:01:50:00 +0000] \"GET /x HTTP/1.1\" 200 123 \"-\" \"-\"\n"
    );
    let rec = AccessRecord {
        referer: Some(b"http://a/"),
        user_agent: Some(b"curl/8.0"),
        ..record()
    };
    assert_eq!(
        line(AccessFormat::Combined, &rec),
        "127.0.0.1 - - [22/Nov/2026:01:50:00 +0000] \"GET /x HTTP/1.1\" 200 123 \"http://a/\" \"curl/8.0\"\n"
    );
}

#[test]
fn json_format() {
    assert_eq!(
        line(AccessFormat::Json, &record()),
        "{\"time\":\"2026-11-22T01:50:00Z\",\"remote\":\"127.0.0.1\",\"method\":\"GET\",\"target\":\"/x\",\
         \"version\":\"HTTP/1.1\",\"status\":200,\"bytes\":123,\"referer\":null,\"user_agent\":null,\
         \"user\":null,\"duration_us\":52}\n"
    );
}

#[test]
fn tls_fields_follow_each_format() {
    let fields = [LogField::TlsVersion, LogField::TlsCipher];
    let tls = AccessRecord {
        tls: Some(TlsSession {
            protocol: "TLSv1.3",
            cipher: "TLS_AES_128_GCM_SHA256",
        }),
        ..record()
    };
    let head = "127.0.0.1 - - [22/Nov/2026:01:50:00 +0000] \"GET /x HTTP/1.1\" 200 123";
    assert_eq!(
        line_with(AccessFormat::Combined, &fields, &tls),
        format!("{head} \"-\" \"-\" \"TLSv1.3\" \"TLS_AES_128_GCM_SHA256\"\n")
    );
    assert_eq!(
        line_with(AccessFormat::Common, &fields[1..], &tls),
        format!("{head} \"TLS_AES_128_GCM_SHA256\"\n")
    );
    // Over plain HTTP: "-", as nginx writes an empty variable.
    assert_eq!(
        line_with(AccessFormat::Combined, &fields, &record()),
        format!("{head} \"-\" \"-\" \"-\" \"-\"\n")
    );
    assert_eq!(
        line_with(AccessFormat::Json, &fields, &tls),
        "{\"time\":\"2026-11-22T01:50:00Z\",\"remote\":\"127.0.0.1\",\"method\":\"GET\",\"target\":\"/x\",\
         \"version\":\"HTTP/1.1\",\"status\":200,\"bytes\":123,\"referer\":null,\"user_agent\":null,\
         \"user\":null,\"tls_version\":\"TLSv1.3\",\"tls_cipher\":\"TLS_AES_128_GCM_SHA256\",\"duration_us\":52}\n"
    );
    assert!(line_with(AccessFormat::Json, &fields, &record())
        .contains(",\"tls_version\":null,\"tls_cipher\":null,"));
    // Drafted and finished later: the same line.
    for format in AccessFormat::ALL {
        let mut text = Vec::new();
        let draft = access_draft(&mut text, &mut Clock::new(), (format, &fields, &[]), &tls);
        let mut out = Vec::new();
        finish_line(&mut out, &text, draft, 123, 52);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            line_with(format, &fields, &tls)
        );
    }
}

#[test]
fn hostile_bytes_cannot_forge_lines() {
    let evil_target: &[u8] =
        b"/a\" 200 1\n127.0.0.1 - - [x] \"GET /forged HTTP/1.1\" 200 1\x1b[2J\xff";
    let evil_ua: &[u8] = b"Mozilla\r\n\"\\";
    let rec = AccessRecord {
        target: evil_target,
        user_agent: Some(evil_ua),
        referer: Some(b"\x00"),
        user: Some(b"a b\""),
        host: None,
        ..record()
    };
    let text = line(AccessFormat::Combined, &rec);
    assert_eq!(text.matches('\n').count(), 1);
    assert_eq!(
        text,
        "127.0.0.1 - a b\\x22 [22/Nov/2026:01:50:00 +0000] \"GET /a\\x22 200 1\\x0A127.0.0.1 - - [x] \\x22GET /forged HTTP/1.1\\x22 200 1\\x1B[2J\\xFF HTTP/1.1\" 200 123 \"\\x00\" \"Mozilla\\x0D\\x0A\\x22\\x5C\"\n"
    );
    // Every `"` left is one of the six delimiters.
    assert_eq!(text.matches('"').count(), 6);

    let json = line(AccessFormat::Json, &rec);
    assert_eq!(json.matches('\n').count(), 1);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v["target"],
        "/a\" 200 1\n127.0.0.1 - - [x] \"GET /forged HTTP/1.1\" 200 1\u{1b}[2J\u{fffd}"
    );
    assert_eq!(v["user_agent"], "Mozilla\r\n\"\\");
    assert_eq!(v["referer"], "\u{0}");
    assert_eq!(v["duration_us"], 52);
}

#[test]
fn error_line_format() {
    let mut out = Vec::new();
    let mut clock = Clock::new();
    error_line(
        &mut out,
        &mut clock,
        when(),
        Level::Warn,
        format_args!("bad {} from {}", "request\r\nX", 7),
    );
    assert_eq!(
        out,
        b"2026/11/22 01:50:00 [warn] bad request\\x0D\\x0AX from 7\n"
    );
}

use super::memory;

fn text(m: &Arc<Mutex<Vec<u8>>>) -> String {
    String::from_utf8(m.lock().unwrap().clone()).unwrap()
}

#[test]
fn service_writes_through_loggers() {
    let m = memory(AccessFormat::Common, Level::Info, 16);
    let mut a = m.service.handle();
    let mut b = m.service.handle();
    assert!(a.access_enabled());
    assert!(a.enabled(Level::Info));
    assert!(!a.enabled(Level::Debug));
    assert!(!a.enabled(Level::Off));
    a.access(&record());
    a.log(Level::Info, format_args!("started"));
    a.log(Level::Debug, format_args!("not written"));
    b.access(&AccessRecord {
        status: 404,
        ..record()
    });
    a.flush();
    b.flush();
    // A worker thread's logger, moved there and dropped unflushed.
    let mut c = m.service.handle();
    std::thread::spawn(move || c.log(Level::Error, format_args!("from a thread")))
        .join()
        .unwrap();
    m.service.shutdown();
    let access = text(&m.access);
    assert_eq!(access.lines().count(), 2);
    assert!(access.contains("\" 200 123\n"));
    assert!(access.contains("\" 404 123\n"));
    let error = text(&m.error);
    assert!(error.contains(" [info] started\n"), "{error}");
    assert!(error.contains(" [error] from a thread\n"), "{error}");
    assert!(!error.contains("not written"));
}

#[test]
fn buffers_are_recycled() {
    // A queue long enough that a busy machine cannot make lines drop here.
    let m = memory(AccessFormat::Common, Level::Info, 1024);
    let mut logger = m.service.handle();
    for _ in 0..200 {
        logger.access(&record());
        logger.flush();
        std::thread::sleep(Duration::from_micros(50));
    }
    // Wait for the writer to send the last buffers home.
    std::thread::sleep(Duration::from_millis(50));
    let mut returned = 0;
    while logger.home_rx.try_recv().is_ok() {
        returned += 1;
    }
    assert!(returned >= 1, "no buffer came back");
    drop(logger);
    m.service.shutdown();
    assert_eq!(text(&m.access).lines().count(), 200);
}

#[test]
fn stalled_writer_drops_and_counts() {
    let m = memory(AccessFormat::Common, Level::Info, 1);
    let mut logger = m.service.handle();
    let total = 100;
    {
        // Holding the sink's lock stalls the writer inside its first write.
        let _stall = m.access.lock().unwrap();
        for _ in 0..total {
            logger.access(&record());
            logger.flush(); // must not block
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    drop(logger);
    m.service.shutdown();
    let written = text(&m.access).lines().count();
    let error = text(&m.error);
    let dropped = total - written;
    assert!(dropped > 0, "nothing was dropped");
    assert!(
        error.contains(&format!(
            " [warn] {dropped} log lines dropped: the log writer could not keep up\n"
        )),
        "{written} written; error log: {error}"
    );
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("brisk-log-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn files_are_appended_and_reopened() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("reopen");
    let access = dir.join("access.log");
    let error = dir.join("error.log");
    std::fs::write(&access, "old line\n").unwrap();
    let config = LogConfig {
        access: LogTarget::File(access.clone()),
        format: AccessFormat::Common,
        fields: Vec::new(),
        template: Vec::new(),
        level: Level::Info,
        error: LogTarget::File(error.clone()),
    };
    let service = LogService::start(&config).unwrap();
    let mut logger = service.handle();
    logger.access(&AccessRecord {
        target: b"/before",
        ..record()
    });
    logger.flush();
    // What logrotate does: rename, then signal.
    std::fs::rename(&access, dir.join("access.log.1")).unwrap();
    service.reopen();
    logger.access(&AccessRecord {
        target: b"/after",
        ..record()
    });
    logger.log(Level::Info, format_args!("after reopen"));
    drop(logger);
    service.shutdown();

    let rotated = std::fs::read_to_string(dir.join("access.log.1")).unwrap();
    assert!(rotated.starts_with("old line\n"));
    assert!(rotated.contains("/before"));
    assert!(!rotated.contains("/after"));
    let fresh = std::fs::read_to_string(&access).unwrap();
    assert_eq!(fresh.lines().count(), 1);
    assert!(fresh.contains("/after"));
    let mode = std::fs::metadata(&access).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode & !0o640, 0, "mode {mode:o} is wider than 0640");
    let errors = std::fs::read_to_string(&error).unwrap();
    assert!(errors.contains("[info] after reopen"));
    assert!(
        errors.contains(&format!(
            "[info] SIGUSR1: reopened {} and {}\n",
            access.display(),
            error.display()
        )),
        "{errors}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_reopen_names_the_file_and_the_error_and_keeps_the_old_file() {
    let dir = temp_dir("reopen-fails");
    let access = dir.join("access.log");
    let error = dir.join("error.log");
    let config = LogConfig {
        access: LogTarget::File(access.clone()),
        format: AccessFormat::Common,
        fields: Vec::new(),
        template: Vec::new(),
        level: Level::Info,
        error: LogTarget::File(error.clone()),
    };
    let mut open = LogService::open(&config).unwrap();
    // Whatever reopens the access log is refused; the error log reopens.
    let refused = access.clone();
    open.reopen_through(Arc::new(move |path: &std::path::Path| {
        if path == refused {
            Err(std::io::Error::from_raw_os_error(libc::EACCES))
        } else {
            crate::sys::fs::open_log(path)
        }
    }));
    let service = open.start().unwrap();
    let mut logger = service.handle();
    std::fs::rename(&access, dir.join("access.log.1")).unwrap();
    service.reopen();
    logger.access(&AccessRecord {
        target: b"/after",
        ..record()
    });
    drop(logger);
    service.shutdown();
    let errors = std::fs::read_to_string(&error).unwrap();
    assert!(
        errors.contains(&format!(
            "[error] SIGUSR1: cannot reopen {}: Permission denied (os error 13) (the user brisk runs as must be able to write it, or make it there); still writing to the old file\n",
            access.display()
        )),
        "{errors}"
    );
    assert!(
        errors.contains(&format!("[info] SIGUSR1: reopened {}\n", error.display())),
        "{errors}"
    );
    // Nothing lost: the line went to the file still open.
    let old = std::fs::read_to_string(dir.join("access.log.1")).unwrap();
    assert!(old.contains("/after"), "{old}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn open_failure_names_the_file() {
    let config = LogConfig {
        access: LogTarget::File(PathBuf::from("/nonexistent-dir/access.log")),
        format: AccessFormat::Common,
        fields: Vec::new(),
        template: Vec::new(),
        level: Level::Info,
        error: LogTarget::Stderr,
    };
    let err = LogService::start(&config).err().unwrap();
    assert!(
        err.message
            .starts_with("cannot open the access log /nonexistent-dir/access.log:"),
        "{}",
        err.message
    );
}

#[test]
fn off_targets_disable_logging() {
    let config = LogConfig {
        access: LogTarget::Off,
        format: AccessFormat::Json,
        fields: Vec::new(),
        template: Vec::new(),
        level: Level::Debug,
        error: LogTarget::Off,
    };
    let service = LogService::start(&config).unwrap();
    let mut logger = service.handle();
    assert!(!logger.access_enabled());
    assert!(!logger.enabled(Level::Error));
    logger.access(&record());
    logger.log(Level::Error, format_args!("x"));
    assert_eq!(logger.batch.lines, 0);
    drop(logger);
    service.shutdown();
}

/// A line of the user's own, from its pieces, written at once and
/// drafted then finished: the same bytes both ways.
fn custom_line(pieces: &[LogPiece], rec: &AccessRecord<'_>) -> String {
    let layout = (AccessFormat::Custom, &[][..], pieces);
    let mut out = Vec::new();
    access_line(&mut out, &mut Clock::new(), layout, rec);
    let mut text = Vec::new();
    let draft = access_draft(&mut text, &mut Clock::new(), layout, rec);
    let mut later = Vec::new();
    finish_line(&mut later, &text, draft, rec.bytes, rec.duration_us);
    assert_eq!(later, out);
    String::from_utf8(out).unwrap()
}

#[test]
fn custom_format() {
    let t = |s: &str| LogPiece::Text(s.to_string());
    let v = LogPiece::Var;
    // The duration before the byte count, text around them, each
    // variable once; absent values are "-".
    let pieces = [
        v(LogVar::RequestTime),
        t(" "),
        v(LogVar::RemoteAddr),
        t(" ["),
        v(LogVar::TimeIso8601),
        t("] \""),
        v(LogVar::Request),
        t("\" "),
        v(LogVar::Status),
        t(" "),
        v(LogVar::BodyBytesSent),
        t(" u="),
        v(LogVar::RemoteUser),
        t(" h="),
        v(LogVar::Host),
        t(" ua="),
        v(LogVar::HttpUserAgent),
        t(" tls="),
        v(LogVar::SslProtocol),
    ];
    let rec = AccessRecord {
        duration_us: 1_234_567,
        upstream: None,
        host: Some(b"Example.ORG:8080"),
        user_agent: Some(b"a \"quoted\"\nagent"),
        ..record()
    };
    assert_eq!(
        custom_line(&pieces, &rec),
        "1.234 127.0.0.1 [2026-11-22T01:50:00Z] \"GET /x HTTP/1.1\" 200 123 u=- h=example.org ua=a \\x22quoted\\x22\\x0Aagent tls=-\n"
    );
    let micros = [
        v(LogVar::DurationUs),
        t(" "),
        v(LogVar::TimeLocal),
        t(" "),
        v(LogVar::RequestMethod),
        t(" "),
        v(LogVar::RequestUri),
        t(" "),
        v(LogVar::ServerProtocol),
    ];
    assert_eq!(
        custom_line(&micros, &record()),
        "52 22/Nov/2026:01:50:00 +0000 GET /x HTTP/1.1\n"
    );
    // No byte count nor duration at all.
    assert_eq!(custom_line(&[v(LogVar::Status)], &record()), "200\n");
}

/// nginx's `$remote_port` and `$scheme`; a port a trusted proxy did not
/// say (0) is `-`.
#[test]
fn remote_port_and_scheme() {
    let t = |s: &str| LogPiece::Text(s.to_string());
    let v = LogPiece::Var;
    let pieces = [
        v(LogVar::Scheme),
        t("://"),
        v(LogVar::RemoteAddr),
        t(" port "),
        v(LogVar::RemotePort),
    ];
    assert_eq!(
        custom_line(&pieces, &record()),
        "http://127.0.0.1 port 51234\n"
    );
    let rec = AccessRecord {
        remote: IpAddr::V6(Ipv6Addr::LOCALHOST),
        remote_port: 0,
        https: true,
        ..record()
    };
    assert_eq!(custom_line(&pieces, &rec), "https://::1 port -\n");
    let names: Vec<&str> = LogVar::ALL.iter().map(|&(n, _)| n).collect();
    assert!(names.contains(&"remote_port") && names.contains(&"scheme"));
}

/// A proxied request's upstream, in a line of one's own, as optional
/// fields after combined, and as JSON keys; `-` (or null) for an answer
/// that no upstream gave.
#[cfg(feature = "upstreams")]
#[test]
fn upstream_fields_in_every_format() {
    let t = |s: &str| LogPiece::Text(s.to_string());
    let v = LogPiece::Var;
    let pieces = [
        v(LogVar::Status),
        t(" "),
        v(LogVar::UpstreamAddr),
        t(" "),
        v(LogVar::UpstreamStatus),
        t(" "),
        v(LogVar::UpstreamHeaderTime),
        t(" "),
        v(LogVar::UpstreamResponseTime),
    ];
    let proxied = AccessRecord {
        status: 502,
        upstream: Some(super::Upstream {
            addr: super::Peer::Unix(std::path::Path::new("/run/app.sock")),
            status: 200,
            header_us: 12_345,
            response_us: Some(1_234_567),
        }),
        ..record()
    };
    assert_eq!(
        custom_line(&pieces, &proxied),
        "502 unix:/run/app.sock 200 0.012 1.234\n"
    );
    assert_eq!(custom_line(&pieces, &record()), "200 - - - -\n");
    let fields = [
        LogField::UpstreamAddr,
        LogField::UpstreamStatus,
        LogField::UpstreamHeaderTime,
        LogField::UpstreamResponseTime,
    ];
    let combined = line_with(AccessFormat::Combined, &fields, &proxied);
    assert!(
        combined.ends_with("\"-\" \"-\" \"unix:/run/app.sock\" \"200\" \"0.012\" \"1.234\"\n"),
        "{combined}"
    );
    let json = line_with(AccessFormat::Json, &fields, &proxied);
    assert!(
        json.contains(
            ",\"upstream_addr\":\"unix:/run/app.sock\",\"upstream_status\":\"200\",\"upstream_header_time\":\"0.012\",\"upstream_response_time\":\"1.234\","
        ),
        "{json}"
    );
    let json = line_with(AccessFormat::Json, &fields, &record());
    assert!(
        json.contains(
            ",\"upstream_addr\":null,\"upstream_status\":null,\"upstream_header_time\":null,\"upstream_response_time\":null,"
        ),
        "{json}"
    );
}

/// A line drafted at its answer's head (HTTP/2) has a hole for the
/// upstream's time to the answer's end, put in when that end comes: the
/// line is then the one written at once at the end; `-` (null) if it
/// never comes.
#[cfg(feature = "upstreams")]
#[test]
fn upstream_response_time_is_put_in_a_line_drafted_before_it() {
    let t = |s: &str| LogPiece::Text(s.to_string());
    let v = LogPiece::Var;
    let pieces = [
        v(LogVar::UpstreamResponseTime),
        t(" "),
        v(LogVar::BodyBytesSent),
        t(" "),
        v(LogVar::RequestTime),
    ];
    let fields = [LogField::UpstreamResponseTime, LogField::Vhost];
    let up = |response_us| super::Upstream {
        addr: super::Peer::Unix(std::path::Path::new("/a")),
        status: 200,
        header_us: 1_000,
        response_us,
    };
    for (format, fields, pieces) in [
        (AccessFormat::Custom, &[][..], &pieces[..]),
        (AccessFormat::Common, &fields[..], &[][..]),
        (AccessFormat::Json, &fields[..], &[][..]),
    ] {
        let layout = (format, fields, pieces);
        let at_end = AccessRecord {
            upstream: Some(up(Some(2_345_678))),
            duration_us: 3_000_000,
            ..record()
        };
        let mut whole = Vec::new();
        access_line(&mut whole, &mut Clock::new(), layout, &at_end);
        let at_head = AccessRecord {
            upstream: Some(up(None)),
            ..at_end
        };
        let mut text = Vec::new();
        let mut draft = access_draft(&mut text, &mut Clock::new(), layout, &at_head);
        let unknown = draft;
        draft.put_upstream_time(&mut text, Some(2_345_678));
        assert_eq!(draft.len as usize, text.len());
        let mut out = Vec::new();
        finish_line(&mut out, &text, draft, 123, 3_000_000);
        let line = String::from_utf8(out).unwrap();
        assert_eq!(line, String::from_utf8(whole).unwrap());
        assert!(line.contains("2.345"), "{line}");
        // Put in twice: the second does nothing.
        let before = text.clone();
        draft.put_upstream_time(&mut text, Some(1));
        assert_eq!(text, before);
        // Never put in: unknown.
        let mut text = Vec::new();
        access_draft(&mut text, &mut Clock::new(), layout, &at_head);
        let mut out = Vec::new();
        finish_line(&mut out, &text, unknown, 123, 3_000_000);
        let line = String::from_utf8(out).unwrap();
        let want = match format {
            AccessFormat::Custom => "- 123 3.000\n",
            AccessFormat::Common => "200 123 \"-\" \"-\"\n",
            _ => "\"upstream_response_time\":null,",
        };
        assert!(line.contains(want), "{line}");
    }
}
