//! Table test of the request parser and body decoder against llhttp's
//! request test cases (`tests/data/http-vectors/`, see its README.md).
//!
//! For each strict-mode case the raw bytes go through brisk the way a
//! connection would: parse a head, decode its body, advance, repeat. Where
//! llhttp reports an error brisk must reject at or before that point; where
//! llhttp accepts, brisk must complete the same number of requests. Cases
//! where brisk deliberately differs are listed in `KNOWN_DIFFERENCES`, and
//! that list must stay exact: an unlisted difference fails, and so does a
//! listed case that no longer differs.

use brisk::http::body::{BodyDecoder, BodyLimits};
use brisk::http::parse::{parse_request, Header, Limits};
use std::collections::BTreeMap;

const VECTORS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/http-vectors/llhttp-requests.jsonl"
);

const LIMITS: Limits = Limits {
    max_request_line: 8192,
    max_head: 16384,
    max_headers: 100,
};

const BODY_LIMITS: BodyLimits = BodyLimits {
    max_body: 1 << 20,
    max_chunk_ext: 1024,
    max_trailers: 4096,
};

// Why brisk differs, one line each; the cases below point at these.
const NO_VERSION: &str = "HTTP/0.9-style request line without a version: brisk answers 400";
const METHOD: &str = "any token is a method at parse level (501 later); llhttp keeps a method list";
const UPGRADE: &str = "llhttp pauses on Upgrade/CONNECT; brisk has no upgrade and reads on";
const SKIP_BODY: &str = "the llhttp test skips the body through its API (skipBody); brisk reads it";
const OTHER_PROTOCOL: &str = "RTSP/ICE request lines are not HTTP: brisk answers 400";
const ASTERISK: &str = "asterisk-form with a method other than OPTIONS: 400 (RFC 9112 §3.2.4)";
const CODING: &str = "a transfer coding before chunked: brisk decodes none, so 501";
const USERINFO: &str = "userinfo in an http URI is treated as an error (RFC 9110 §4.2.4): 400";
const RAW_UTF8: &str = "raw UTF-8 in the target is accepted, as nginx, lighttpd and Caddy do";

/// `source` suffix (file:line in llhttp's tests) → reason.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[
    ("test/request/connection.md:682", UPGRADE),
    ("test/request/connection.md:716", UPGRADE),
    ("test/request/content-length.md:447", SKIP_BODY),
    ("test/request/invalid.md:69", METHOD),
    ("test/request/invalid.md:359", METHOD),
    ("test/request/method.md:65", UPGRADE),
    ("test/request/method.md:138", ASTERISK),
    ("test/request/method.md:375", OTHER_PROTOCOL),
    ("test/request/method.md:405", OTHER_PROTOCOL),
    ("test/request/method.md:433", OTHER_PROTOCOL),
    ("test/request/sample.md:317", NO_VERSION),
    ("test/request/transfer-encoding.md:754", CODING),
    ("test/request/transfer-encoding.md:796", CODING),
    ("test/request/uri.md:151", RAW_UTF8),
    ("test/request/uri.md:191", UPGRADE),
    ("test/request/uri.md:225", USERINFO),
];

/// What brisk made of one case.
#[derive(Debug)]
struct Run {
    /// Requests whose head and body were both complete.
    completed: usize,
    end: End,
    /// How many Host headers the harness had to add (see `run_adjusted`).
    hosts_added: usize,
    /// How many fragments the harness had to remove (see `run_adjusted`).
    fragments_removed: usize,
}

#[derive(Debug, PartialEq)]
enum End {
    /// Everything was consumed.
    Clean,
    /// Waiting for more bytes.
    Incomplete,
    /// Refused with this status.
    Error(u16, &'static str),
    /// A request without keep-alive was followed by more bytes, which a
    /// server closing the connection never reads (llhttp's error 5).
    ClosedWithData,
}

/// Runs `raw` through brisk like a connection would. On an error, also
/// returns where the failing request started.
fn run_brisk(raw: &[u8]) -> (usize, End, usize) {
    let mut pos = 0;
    let mut completed = 0;
    let end = loop {
        if pos == raw.len() {
            break End::Clean;
        }
        let mut storage = [Header::EMPTY; 100];
        let req = match parse_request(&raw[pos..], &LIMITS, &mut storage) {
            Err(e) => break End::Error(e.status.0, e.reason),
            Ok(None) => break End::Incomplete,
            Ok(Some(req)) => req,
        };
        assert!(req.head_len <= raw.len() - pos);
        let start = pos;
        pos += req.head_len;
        let mut decoder = match BodyDecoder::new(req.body, &BODY_LIMITS) {
            Ok(d) => d,
            Err(e) => break End::Error(e.status.0, e.reason),
        };
        let decoded = decoder.decode(&raw[pos..], &mut |_| ());
        match decoded {
            Ok(n) => {
                assert!(n <= raw.len() - pos);
                pos += n;
            }
            Err(e) => {
                pos = start;
                break End::Error(e.status.0, e.reason);
            }
        }
        if !decoder.is_done() {
            break End::Incomplete;
        }
        completed += 1;
        if !req.keep_alive && pos < raw.len() {
            break End::ClosedWithData;
        }
    };
    (completed, end, pos)
}

/// Most llhttp cases are HTTP/1.1 requests without Host, which brisk must
/// refuse (RFC 9112 §3.2). Refusing them all for that one reason would test
/// nothing else, so when that is the error the harness adds a Host header
/// after the offending request line and runs the case again: the rest of
/// the case is then still compared with llhttp.
///
/// The same goes for a fragment (`#…`) in the target, which brisk refuses
/// (400, RFC 9112 §3.2 and RFC 3986 §3.5) and llhttp accepts: nine of the
/// eleven cases that send one are about Transfer-Encoding, not the target,
/// so the harness removes the fragment and compares the rest. The refusal
/// itself is checked by `fragments_are_refused_as_sent`.
fn run_adjusted(raw: &[u8]) -> Run {
    let mut input = raw.to_vec();
    let (mut hosts_added, mut fragments_removed) = (0, 0);
    loop {
        let (completed, end, pos) = run_brisk(&input);
        let missing_host = matches!(end, End::Error(400, r) if r.contains("without Host"));
        let fragment = matches!(end, End::Error(400, r) if r.contains("fragment"));
        if !(missing_host || fragment) || hosts_added + fragments_removed == 8 {
            return Run {
                completed,
                end,
                hosts_added,
                fragments_removed,
            };
        }
        let skipped = input[pos..]
            .iter()
            .position(|&b| b != b'\r' && b != b'\n')
            .unwrap_or(0);
        let line_start = pos + skipped;
        let line_end = input[line_start..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .map(|i| line_start + i + 2)
            .expect("a complete request line before a Host or fragment error");
        if missing_host {
            input.splice(
                line_end..line_end,
                b"Host: vectors.test\r\n".iter().copied(),
            );
            hosts_added += 1;
        } else {
            let line = &input[line_start..line_end];
            let hash = line.iter().position(|&b| b == b'#').expect("a '#'");
            let space = line[hash..]
                .iter()
                .position(|&b| b == b' ')
                .expect("a space after the target");
            input.drain(line_start + hash..line_start + hash + space);
            fragments_removed += 1;
        }
    }
}

/// Whether brisk's run agrees with llhttp's verdict.
fn agrees(run: &Run, llhttp_ok: bool, llhttp_complete: usize) -> bool {
    match run.end {
        End::Clean | End::Incomplete => llhttp_ok && run.completed == llhttp_complete,
        End::Error(..) | End::ClosedWithData => !llhttp_ok && run.completed <= llhttp_complete,
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("invalid base64 byte {c:#x}"),
        }
    };
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for group in s.trim_end_matches('=').as_bytes().chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in group.iter().enumerate() {
            acc |= value(c) << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..group.len()]);
    }
    out
}

#[test]
fn base64_decoder() {
    assert_eq!(base64_decode("aGVsbG8="), b"hello");
    assert_eq!(base64_decode("aGVsbG8h"), b"hello!");
    assert_eq!(base64_decode("aGk="), b"hi");
    assert_eq!(base64_decode("/w=="), [0xff]);
    assert_eq!(base64_decode(""), b"");
}

struct Case {
    source: String,
    name: String,
    mode: String,
    raw: Vec<u8>,
    ok: bool,
    complete: usize,
}

fn load() -> Vec<Case> {
    let text = std::fs::read_to_string(VECTORS).expect("read the vectors file");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("a JSON object per line");
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            Case {
                source: s("source"),
                name: s("name"),
                mode: s("llhttp_mode"),
                raw: base64_decode(&s("raw_b64")),
                ok: s("llhttp_verdict") == "ok",
                complete: v["messages_complete"].as_u64().unwrap_or(0) as usize,
            }
        })
        .collect()
}

#[test]
fn llhttp_request_vectors() {
    let cases = load();
    assert_eq!(cases.len(), 166, "the vectors file changed");
    let known: BTreeMap<&str, &str> = KNOWN_DIFFERENCES.iter().copied().collect();
    let mut used = BTreeMap::new();
    let (mut strict, mut agree, mut agree_with_host, mut other_modes) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    for case in &cases {
        // Every case, whatever the mode, must go through without a panic.
        let run = run_adjusted(&case.raw);
        if case.mode != "request" {
            other_modes += 1;
            continue;
        }
        strict += 1;
        let key = case.source.split_once(':').map_or("", |(_, k)| k);
        let listed = known.get(key);
        let same = agrees(&run, case.ok, case.complete);
        let preview = String::from_utf8_lossy(&case.raw[..case.raw.len().min(60)]).into_owned();
        match (same, listed) {
            (true, None) if run.hosts_added + run.fragments_removed > 0 => agree_with_host += 1,
            (true, None) => agree += 1,
            (false, Some(reason)) => {
                used.insert(key, *reason);
            }
            (false, None) => failures.push(format!(
                "UNLISTED DIFFERENCE {key} ({}): llhttp {} after {}, brisk {run:?}\n    {preview:?}",
                case.name,
                if case.ok { "ok" } else { "error" },
                case.complete,
            )),
            (true, Some(_)) => failures.push(format!(
                "LISTED BUT AGREES {key} ({}): remove it from KNOWN_DIFFERENCES",
                case.name
            )),
        }
    }
    for key in known.keys() {
        if !cases
            .iter()
            .any(|c| c.mode == "request" && c.source.ends_with(key))
        {
            failures.push(format!("LISTED BUT NOT A STRICT CASE: {key}"));
        }
    }
    let mut by_reason: BTreeMap<&str, usize> = BTreeMap::new();
    for reason in used.values() {
        *by_reason.entry(reason).or_default() += 1;
    }
    for (reason, n) in &by_reason {
        println!("  {n:3} × {reason}");
    }
    println!(
        "llhttp vectors: {strict} strict cases: {agree} agree as sent, {agree_with_host} agree \
         once a missing Host is added or a fragment removed, {} deliberate differences; \
         {other_modes} lenient/finish cases run for panics only",
        used.len()
    );
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// Every case whose request line carries a fragment is refused as sent,
/// with 400 and the fragment as the reason: the difference the harness
/// adjusts away above is real and deliberate, and this says so case by
/// case.
#[test]
fn fragments_are_refused_as_sent() {
    let mut seen = 0;
    for case in load() {
        let first_line = case.raw.split(|&b| b == b'\n').next().unwrap_or_default();
        if !first_line.contains(&b'#') {
            continue;
        }
        seen += 1;
        let (completed, end, _) = run_brisk(&case.raw);
        assert_eq!(completed, 0, "{}", case.source);
        match end {
            End::Error(400, r) if r.contains("fragment") => {}
            other => panic!("{}: {other:?}", case.source),
        }
        let adjusted = run_adjusted(&case.raw);
        assert_eq!(adjusted.fragments_removed, 1, "{}", case.source);
    }
    assert_eq!(seen, 11, "the cases with a fragment changed");
}
