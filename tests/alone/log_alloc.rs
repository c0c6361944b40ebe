//! The log service's promise to the event loops: once warm, formatting and
//! flushing a line allocates nothing on the worker's thread. Its own test
//! binary, because it needs a counting global allocator.

use crate::common;

use std::net::{IpAddr, Ipv4Addr};
use std::time::SystemTime;

use brisk::config::{AccessFormat, Level, LogConfig, LogField, LogPiece, LogTarget, LogVar};
use brisk::http::TlsSession;
use brisk::log::{AccessRecord, LogService};

use crate::counting::mine as allocs;

#[test]
fn steady_state_logging_does_not_allocate() {
    let _alone = crate::counting::alone();
    let dir = std::env::temp_dir().join(format!("brisk-log-alloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for format in [
        AccessFormat::Common,
        AccessFormat::Combined,
        AccessFormat::Json,
        AccessFormat::Custom,
    ] {
        let config = LogConfig {
            access: LogTarget::File(dir.join("access.log")),
            format,
            // The optional fields too: they must not allocate either.
            fields: vec![LogField::TlsVersion, LogField::TlsCipher],
            // A line of one's own with every variable (one duration).
            template: LogVar::ALL
                .iter()
                .filter(|&&(_, v)| v != LogVar::DurationUs)
                .flat_map(|&(_, v)| [LogPiece::Var(v), LogPiece::Text(" ".into())])
                .collect(),
            level: Level::Info,
            error: LogTarget::File(dir.join("error.log")),
        };
        let service = LogService::start(&config).unwrap();
        let mut logger = service.handle();
        let rec = AccessRecord {
            remote: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7)),
            remote_port: 51234,
            https: true,
            time: SystemTime::now(),
            method: b"GET",
            target: b"/index.html?q=\"x\"\n",
            version: "HTTP/1.1",
            status: 200,
            bytes: 4096,
            referer: Some(b"http://example.test/"),
            user_agent: Some("curl/8 \u{e9}".as_bytes()),
            user: None,
            host: None,
            duration_us: 120,
            upstream: None,
            tls: Some(TlsSession {
                protocol: "TLSv1.3",
                cipher: "TLS_AES_128_GCM_SHA256",
            }),
        };
        let error_log = dir.join("error.log");
        let written = || std::fs::metadata(&error_log).map_or(0, |m| m.len());
        let round = |logger: &mut brisk::log::Logger| {
            let before = written();
            for _ in 0..4 {
                logger.access(&rec);
            }
            logger.log(
                Level::Warn,
                format_args!("status {} for {}", 404, "/missing"),
            );
            logger.flush();
            // The next round starts once the writer has written this one
            // (and so is about to send the buffers home), as an event
            // loop's next iteration would come after a while. Neither
            // the wait nor the metadata call allocates.
            common::wait_until("the writer to write the round", || written() > before);
        };
        for _ in 0..20 {
            round(&mut logger);
        }
        let before = allocs();
        for _ in 0..200 {
            round(&mut logger);
        }
        let spent = allocs() - before;
        // A writer thread starved by a busy machine forces a fresh batch
        // for a round now and then: its two buffers, sized at once (400 if
        // every one of the 200 rounds found the writer behind); an
        // allocation per line would show as 1000 or more.
        assert!(
            spent <= 400,
            "{format:?}: {spent} allocations for 1000 lines"
        );
        drop(logger);
        service.shutdown();
    }
    let _ = std::fs::remove_dir_all(&dir);
}
