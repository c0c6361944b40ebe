//! Line formatting: timestamps, escaping, and the access-log formats. All of
//! it appends to a caller-owned `Vec<u8>`, so that once the buffer has grown
//! to its working size no line allocates.

use std::fmt;
use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use super::{AccessFormat, Level, LogField, LogPiece, LogVar};
use crate::http::date::{civil_time, MONTH_NAMES};
use crate::http::grammar::hex_pair;
use crate::http::host::{canonical, MAX_NAME};

use super::AccessRecord;

/// The three timestamp spellings of one second, formatted once per second:
/// every request needs one, and the digits only change once a second.
pub(crate) struct Clock {
    second: Option<u64>,
    /// `2026/11/22 01:50:00` (error log, like nginx).
    error: [u8; 19],
    /// `22/Nov/2026:01:50:00 +0000` (common/combined).
    clf: [u8; 26],
    /// `2026-11-22T01:50:00Z` (JSON, RFC 3339).
    rfc3339: [u8; 20],
}

impl Clock {
    pub(crate) fn new() -> Clock {
        Clock {
            second: None,
            error: [0; 19],
            clf: [0; 26],
            rfc3339: [0; 20],
        }
    }

    /// Brings the cache to `time`'s second (times before 1970 count as 1970).
    fn set(&mut self, time: SystemTime) {
        let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if self.second == Some(secs) {
            return;
        }
        self.second = Some(secs);
        // Years past 9999 would need more digits than the arrays hold;
        // `civil_time` clamps a clock that far off to the last second of 9999.
        let t = civil_time(secs);
        let (y, mo, d) = (t.year, t.month, t.day);
        let (h, mi, sec) = (t.hour, t.minute, t.second);
        let mut w = &mut self.error[..];
        let _ = write!(w, "{y:04}/{mo:02}/{d:02} {h:02}:{mi:02}:{sec:02}");
        let mon = MONTH_NAMES[(mo - 1) as usize];
        self.clf[3..6].copy_from_slice(mon);
        let mut w = &mut self.clf[..];
        let _ = write!(w, "{d:02}/");
        let mut w = &mut self.clf[6..];
        let _ = write!(w, "/{y:04}:{h:02}:{mi:02}:{sec:02} +0000");
        let mut w = &mut self.rfc3339[..];
        let _ = write!(w, "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}Z");
    }

    pub(crate) fn error(&mut self, time: SystemTime) -> &[u8] {
        self.set(time);
        &self.error
    }

    pub(crate) fn clf(&mut self, time: SystemTime) -> &[u8] {
        self.set(time);
        &self.clf
    }

    pub(crate) fn rfc3339(&mut self, time: SystemTime) -> &[u8] {
        self.set(time);
        &self.rfc3339
    }
}

/// Appends `prefix` and the two hex digits of `b` (`\x1B`, `\u001B`).
fn push_hex_escape(out: &mut Vec<u8>, prefix: &[u8], b: u8) {
    out.extend_from_slice(prefix);
    out.extend_from_slice(&hex_pair(b));
}

/// Appends `bytes` for a text-format field: `"`, `\`, controls and every
/// byte ≥ 0x7F become `\xHH` (nginx's escaping), so a client can neither
/// end the field, nor start a new line, nor smuggle terminal escapes.
pub(crate) fn escape_text(out: &mut Vec<u8>, bytes: &[u8]) {
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'"' || b == b'\\' || !(0x20..0x7f).contains(&b) {
            out.extend_from_slice(&bytes[start..i]);
            push_hex_escape(out, b"\\x", b);
            start = i + 1;
        }
    }
    out.extend_from_slice(&bytes[start..]);
}

/// Appends `bytes` as the inside of a JSON string (RFC 8259); invalid UTF-8
/// becomes U+FFFD, so the output is always valid JSON in valid UTF-8. The
/// C1 controls U+0080–U+009F are escaped too (`\u009b`: a terminal that
/// shows the log takes U+009B as CSI), as the error log escapes them.
pub(crate) fn escape_json(out: &mut Vec<u8>, bytes: &[u8]) {
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid().as_bytes();
        let mut start = 0;
        let mut skip = false;
        for (i, &b) in valid.iter().enumerate() {
            if std::mem::take(&mut skip) {
                continue;
            }
            if b == 0xc2 && valid.get(i + 1).is_some_and(|&n| (0x80..0xa0).contains(&n)) {
                out.extend_from_slice(&valid[start..i]);
                push_hex_escape(out, b"\\u00", valid[i + 1]);
                skip = true;
                start = i + 2;
                continue;
            }
            let short: &[u8] = match b {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0x08 => b"\\b",
                0x0c => b"\\f",
                0..=0x1f | 0x7f => b"",
                _ => continue,
            };
            out.extend_from_slice(&valid[start..i]);
            if short.is_empty() {
                push_hex_escape(out, b"\\u00", b);
            } else {
                out.extend_from_slice(short);
            }
            start = i + 1;
        }
        out.extend_from_slice(&valid[start..]);
        if !chunk.invalid().is_empty() {
            out.extend_from_slice(b"\\ufffd");
        }
    }
}

/// `fmt::Write` into a byte buffer, escaping control characters as `\xHH`
/// on the way: error messages may quote client input, and must stay one
/// line each.
struct ControlEscaper<'a>(&'a mut Vec<u8>);

impl fmt::Write for ControlEscaper<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // C0 controls, DEL, and the C1 controls U+0080–U+009F (UTF-8
        // C2 80–C2 9F: a terminal takes C2 9B as CSI) are written as \xHH
        // escapes of their bytes; other text is kept as it is.
        let bytes = s.as_bytes();
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            let len = if b < 0x20 || b == 0x7f {
                1
            } else if b == 0xc2 && bytes.get(i + 1).is_some_and(|&n| (0x80..0xa0).contains(&n)) {
                2
            } else {
                i += 1;
                continue;
            };
            self.0.extend_from_slice(&bytes[start..i]);
            for &c in &bytes[i..i + len] {
                push_hex_escape(self.0, b"\\x", c);
            }
            i += len;
            start = i;
        }
        self.0.extend_from_slice(&bytes[start..]);
        Ok(())
    }
}

/// Appends `2026/11/22 01:50:00 [warn] message\n`.
pub(crate) fn error_line(
    out: &mut Vec<u8>,
    clock: &mut Clock,
    time: SystemTime,
    level: Level,
    args: fmt::Arguments<'_>,
) {
    out.extend_from_slice(clock.error(time));
    out.extend_from_slice(b" [");
    out.extend_from_slice(level.as_str().as_bytes());
    out.extend_from_slice(b"] ");
    let _ = fmt::write(&mut ControlEscaper(out), args);
    out.push(b'\n');
}

/// An access-log line formatted before its answer has left: the byte
/// count and the duration, known only once the last byte is written (or
/// the connection ends), are filled in by `finish_line`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Draft {
    /// Length of the draft's text.
    pub len: u32,
    /// Where the byte count goes, in formats that have one (a line of
    /// the user's own may not).
    bytes_at: Option<u32>,
    /// Where the duration goes, in formats that have one.
    duration_at: Option<u32>,
    /// The duration is written in seconds with milliseconds
    /// (`$request_time`), not in microseconds.
    seconds: bool,
    /// Where a proxied answer's `upstream_response_time` goes, when the
    /// line was drafted before the answer's end.
    upstream_at: Option<u32>,
    /// That hole is a JSON value (`"0.012"` or `null`), not text.
    upstream_json: bool,
}

/// What goes in a hole of a [`Draft`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hole {
    Bytes,
    Duration,
    UpstreamTime,
}

impl Draft {
    /// Its holes, first to last: where each goes, and what.
    fn holes(self) -> impl Iterator<Item = (usize, Hole)> {
        let mut holes = [
            self.bytes_at.map(|at| (at as usize, Hole::Bytes)),
            self.duration_at.map(|at| (at as usize, Hole::Duration)),
            self.upstream_at.map(|at| (at as usize, Hole::UpstreamTime)),
        ];
        holes.sort_by_key(|h| h.map(|(at, _)| at));
        holes.into_iter().flatten()
    }

    /// Appends the value of a hole: the byte count, the duration, or the
    /// upstream's time (`upstream_us`; `-` or null when unknown).
    fn fill(
        self,
        out: &mut Vec<u8>,
        hole: Hole,
        (bytes, duration_us): (u64, u64),
        upstream_us: Option<u64>,
    ) {
        match (hole, self.seconds) {
            (Hole::Bytes, _) => crate::http::push_u64(out, bytes),
            (Hole::Duration, false) => crate::http::push_u64(out, duration_us),
            (Hole::Duration, true) => push_seconds(out, duration_us),
            (Hole::UpstreamTime, _) => match (upstream_us, self.upstream_json) {
                (Some(us), false) => push_seconds(out, us),
                (Some(us), true) => {
                    out.push(b'"');
                    push_seconds(out, us);
                    out.push(b'"');
                }
                (None, false) => out.push(b'-'),
                (None, true) => out.extend_from_slice(b"null"),
            },
        }
    }

    /// Puts a proxied answer's `upstream_response_time` (microseconds;
    /// none: unknown) in its hole in `text`, the line drafted as this,
    /// now that its answer has ended (the hole's later neighbours move
    /// on). Nothing if the line has no such hole.
    pub fn put_upstream_time(&mut self, text: &mut Vec<u8>, upstream_us: Option<u64>) {
        let Some(at) = self.upstream_at.take() else {
            return;
        };
        let before = text.len();
        self.fill(text, Hole::UpstreamTime, (0, 0), upstream_us);
        let n = (text.len() - before) as u32;
        text[at as usize..].rotate_right(n as usize);
        for later in [&mut self.bytes_at, &mut self.duration_at]
            .into_iter()
            .flatten()
        {
            if *later >= at {
                *later += n;
            }
        }
        self.len += n;
    }
}

/// Appends `us` microseconds as seconds with milliseconds: `0.012`.
fn push_seconds(out: &mut Vec<u8>, us: u64) {
    let ms = us / 1000;
    crate::http::push_u64(out, ms / 1000);
    let _ = write!(out, ".{:03}", ms % 1000);
}

/// Whether `field`'s value for `rec` is not known yet: a proxied
/// answer's `upstream_response_time` before its end (its line is
/// drafted with a hole for it).
fn later(field: LogField, rec: &AccessRecord<'_>) -> bool {
    field == LogField::UpstreamResponseTime && rec.upstream.is_some_and(|u| u.response_us.is_none())
}

/// A line's format, the optional fields after its own, and the pieces
/// of a line of the user's own (`[log] format`, `[log] fields`).
pub(crate) type Layout<'a> = (AccessFormat, &'a [LogField], &'a [LogPiece]);

/// Appends one access-log line in `layout`.
pub(crate) fn access_line(
    out: &mut Vec<u8>,
    clock: &mut Clock,
    layout: Layout<'_>,
    rec: &AccessRecord<'_>,
) {
    let start = out.len();
    let draft = access_draft(out, clock, layout, rec);
    // The later hole first, so that the earlier one stays where it was;
    // each value is appended, then rotated into place (no allocation
    // once `out` has room).
    let mut holes = [(0, Hole::Bytes); 3];
    let mut n = 0;
    for hole in draft.holes() {
        holes[n] = hole;
        n += 1;
    }
    let upstream_us = rec.upstream.and_then(|u| u.response_us);
    for &(at, hole) in holes[..n].iter().rev() {
        let before = out.len();
        draft.fill(out, hole, (rec.bytes, rec.duration_us), upstream_us);
        let len = out.len() - before;
        out[start + at..].rotate_right(len);
    }
}

/// Appends the line of `rec` in `layout` without its byte count and
/// duration (`rec.bytes` and `rec.duration_us` are not used); returns
/// where they go.
pub(crate) fn access_draft(
    out: &mut Vec<u8>,
    clock: &mut Clock,
    (format, fields, template): Layout<'_>,
    rec: &AccessRecord<'_>,
) -> Draft {
    let start = out.len();
    let at = |out: &Vec<u8>| (out.len() - start) as u32;
    let mut duration_at = None;
    let mut bytes_at = None;
    let mut seconds = false;
    // (Where upstream_response_time goes, if it is not known yet.)
    let mut upstream = None;
    match format {
        AccessFormat::Common => {
            common(out, clock, rec);
            bytes_at = Some(at(out));
            upstream = quoted_fields(out, fields, rec);
        }
        AccessFormat::Combined => {
            common(out, clock, rec);
            bytes_at = Some(at(out));
            out.push(b' ');
            quoted_or_dash(out, rec.referer);
            out.push(b' ');
            quoted_or_dash(out, rec.user_agent);
            upstream = quoted_fields(out, fields, rec);
        }
        AccessFormat::Json => {
            json_head(out, clock, rec);
            bytes_at = Some(at(out));
            upstream = json_tail(out, fields, rec);
            duration_at = Some(at(out));
            out.push(b'}');
        }
        AccessFormat::Custom => {
            let mut buf = [0; MAX_NAME];
            for piece in template {
                let var = match piece {
                    LogPiece::Text(t) => {
                        out.extend_from_slice(t.as_bytes());
                        continue;
                    }
                    LogPiece::Var(var) => *var,
                };
                match var {
                    LogVar::RemoteAddr => {
                        let _ = write!(out, "{}", rec.remote);
                    }
                    LogVar::RemotePort if rec.remote_port == 0 => out.push(b'-'),
                    LogVar::RemotePort => crate::http::push_u64(out, rec.remote_port.into()),
                    LogVar::Scheme if rec.https => out.extend_from_slice(b"https"),
                    LogVar::Scheme => out.extend_from_slice(b"http"),
                    LogVar::RemoteUser => text_or_dash(out, rec.user),
                    LogVar::TimeLocal => out.extend_from_slice(clock.clf(rec.time)),
                    LogVar::TimeIso8601 => out.extend_from_slice(clock.rfc3339(rec.time)),
                    LogVar::Request if rec.method.is_empty() => out.push(b'-'),
                    LogVar::Request => {
                        escape_text(out, rec.method);
                        out.push(b' ');
                        escape_text(out, rec.target);
                        out.push(b' ');
                        escape_text(out, rec.version.as_bytes());
                    }
                    LogVar::RequestMethod => text_or_dash(out, Some(rec.method)),
                    LogVar::RequestUri => text_or_dash(out, Some(rec.target)),
                    LogVar::ServerProtocol => text_or_dash(out, Some(rec.version.as_bytes())),
                    LogVar::Status => crate::http::push_u64(out, rec.status.into()),
                    LogVar::BodyBytesSent => bytes_at = Some(at(out)),
                    LogVar::HttpReferer => text_or_dash(out, rec.referer),
                    LogVar::HttpUserAgent => text_or_dash(out, rec.user_agent),
                    LogVar::Host => text_or_dash(out, field_value(LogField::Vhost, rec, &mut buf)),
                    LogVar::SslProtocol => {
                        text_or_dash(out, field_value(LogField::TlsVersion, rec, &mut buf))
                    }
                    LogVar::SslCipher => {
                        text_or_dash(out, field_value(LogField::TlsCipher, rec, &mut buf))
                    }
                    LogVar::UpstreamAddr => {
                        text_or_dash(out, field_value(LogField::UpstreamAddr, rec, &mut buf))
                    }
                    LogVar::UpstreamStatus => {
                        text_or_dash(out, field_value(LogField::UpstreamStatus, rec, &mut buf))
                    }
                    LogVar::UpstreamHeaderTime => text_or_dash(
                        out,
                        field_value(LogField::UpstreamHeaderTime, rec, &mut buf),
                    ),
                    LogVar::UpstreamResponseTime if later(LogField::UpstreamResponseTime, rec) => {
                        upstream = Some(out.len());
                    }
                    LogVar::UpstreamResponseTime => text_or_dash(
                        out,
                        field_value(LogField::UpstreamResponseTime, rec, &mut buf),
                    ),
                    LogVar::RequestTime | LogVar::DurationUs => {
                        duration_at = Some(at(out));
                        seconds = var == LogVar::RequestTime;
                    }
                }
            }
            upstream = quoted_fields(out, fields, rec).or(upstream);
        }
    }
    out.push(b'\n');
    Draft {
        len: at(out),
        bytes_at,
        duration_at,
        seconds,
        upstream_at: upstream.map(|hole| (hole - start) as u32),
        upstream_json: format == AccessFormat::Json,
    }
}

/// `value` escaped as in the text formats, or `-` when absent or empty
/// (as nginx writes an empty variable in a log line).
fn text_or_dash(out: &mut Vec<u8>, value: Option<&[u8]>) {
    match value {
        Some(v) if !v.is_empty() => escape_text(out, v),
        _ => out.push(b'-'),
    }
}

/// Appends the line drafted as `text` (see [`access_draft`]) with its
/// byte count and duration.
pub(crate) fn finish_line(
    out: &mut Vec<u8>,
    text: &[u8],
    draft: Draft,
    bytes: u64,
    duration_us: u64,
) {
    let mut from = 0;
    for (at, hole) in draft.holes() {
        out.extend_from_slice(&text[from..at]);
        // (An upstream's time not put in by now is not known.)
        draft.fill(out, hole, (bytes, duration_us), None);
        from = at;
    }
    out.extend_from_slice(&text[from..]);
}

/// `127.0.0.1 - user [22/Nov/2026:01:50:00 +0000] "GET /x HTTP/1.1" 200 `
/// (the byte count follows: written as a number even when 0, as nginx
/// does, so the field is always numeric).
fn common(out: &mut Vec<u8>, clock: &mut Clock, rec: &AccessRecord<'_>) {
    let _ = write!(out, "{} - ", rec.remote);
    match rec.user {
        Some(u) if !u.is_empty() => escape_text(out, u),
        _ => out.push(b'-'),
    }
    out.extend_from_slice(b" [");
    out.extend_from_slice(clock.clf(rec.time));
    out.extend_from_slice(b"] \"");
    if rec.method.is_empty() {
        // No request line could be parsed (e.g. a 400 or a 408).
        out.push(b'-');
    } else {
        escape_text(out, rec.method);
        out.push(b' ');
        escape_text(out, rec.target);
        out.push(b' ');
        escape_text(out, rec.version.as_bytes());
    }
    let _ = write!(out, "\" {} ", rec.status);
}

/// The value of an optional field for `rec` (`None`: absent, as over
/// plain HTTP).
/// `buf` holds the host of `vhost`, lower-cased, or the digits of a
/// number (no allocation).
fn field_value<'b>(
    field: LogField,
    rec: &AccessRecord<'b>,
    buf: &'b mut [u8; MAX_NAME],
) -> Option<&'b [u8]> {
    Some(match field {
        LogField::TlsVersion => rec.tls?.protocol.as_bytes(),
        LogField::TlsCipher => rec.tls?.cipher.as_bytes(),
        LogField::Vhost => {
            return rec
                .host
                .filter(|h| !h.is_empty())
                .and_then(|h| canonical(h, buf))
        }
        LogField::UpstreamAddr => {
            let mut w = &mut buf[..];
            let _ = match rec.upstream?.addr {
                super::Peer::Tcp(addr) => write!(w, "{addr}"),
                super::Peer::Unix(path) => write!(w, "unix:{}", path.display()),
            };
            let n = MAX_NAME - w.len();
            &buf[..n]
        }
        LogField::UpstreamStatus => {
            let status = rec.upstream?.status;
            let mut w = &mut buf[..];
            let _ = write!(w, "{status}");
            let n = MAX_NAME - w.len();
            &buf[..n]
        }
        LogField::UpstreamHeaderTime => seconds_in(rec.upstream?.header_us, buf),
        LogField::UpstreamResponseTime => seconds_in(rec.upstream?.response_us?, buf),
    })
}

/// `us` microseconds written in `buf` as seconds with milliseconds.
fn seconds_in(us: u64, buf: &mut [u8; MAX_NAME]) -> &[u8] {
    let ms = us / 1000;
    let mut w = &mut buf[..];
    let _ = write!(w, "{}.{:03}", ms / 1000, ms % 1000);
    let n = MAX_NAME - w.len();
    &buf[..n]
}

/// ` "value"` (or ` "-"`) for each of `fields`, as nginx users write
/// `"$ssl_protocol" "$ssl_cipher"` after the combined format. Returns
/// where in `out` a value not known yet goes ([`later`]).
fn quoted_fields(out: &mut Vec<u8>, fields: &[LogField], rec: &AccessRecord<'_>) -> Option<usize> {
    let mut buf = [0; MAX_NAME];
    let mut hole = None;
    for &f in fields {
        out.push(b' ');
        if later(f, rec) {
            out.push(b'"');
            hole = Some(out.len());
            out.push(b'"');
            continue;
        }
        quoted_or_dash(out, field_value(f, rec, &mut buf));
    }
    hole
}

/// `"value"`, or `"-"` when absent.
fn quoted_or_dash(out: &mut Vec<u8>, value: Option<&[u8]>) {
    out.push(b'"');
    match value {
        Some(v) => escape_text(out, v),
        None => out.push(b'-'),
    }
    out.push(b'"');
}

/// One JSON object, up to the byte count; absent fields are `null`.
fn json_head(out: &mut Vec<u8>, clock: &mut Clock, rec: &AccessRecord<'_>) {
    out.extend_from_slice(b"{\"time\":\"");
    out.extend_from_slice(clock.rfc3339(rec.time));
    let _ = write!(out, "\",\"remote\":\"{}\",\"method\":", rec.remote);
    json_string(out, Some(rec.method));
    out.extend_from_slice(b",\"target\":");
    json_string(out, Some(rec.target));
    out.extend_from_slice(b",\"version\":");
    json_string(out, Some(rec.version.as_bytes()));
    let _ = write!(out, ",\"status\":{},\"bytes\":", rec.status);
}

/// The JSON fields after the byte count, up to the duration: the
/// optional `fields` by their names (`null` when absent). Returns where
/// in `out` a value not known yet goes ([`later`]).
fn json_tail(out: &mut Vec<u8>, fields: &[LogField], rec: &AccessRecord<'_>) -> Option<usize> {
    out.extend_from_slice(b",\"referer\":");
    json_string(out, rec.referer);
    out.extend_from_slice(b",\"user_agent\":");
    json_string(out, rec.user_agent);
    out.extend_from_slice(b",\"user\":");
    json_string(out, rec.user);
    let mut buf = [0; MAX_NAME];
    let mut hole = None;
    for &f in fields {
        out.extend_from_slice(b",\"");
        out.extend_from_slice(f.as_str().as_bytes());
        out.extend_from_slice(b"\":");
        if later(f, rec) {
            hole = Some(out.len());
            continue;
        }
        json_string(out, field_value(f, rec, &mut buf));
    }
    out.extend_from_slice(b",\"duration_us\":");
    hole
}

fn json_string(out: &mut Vec<u8>, value: Option<&[u8]>) {
    match value {
        Some(v) => {
            out.push(b'"');
            escape_json(out, v);
            out.push(b'"');
        }
        None => out.extend_from_slice(b"null"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn civil_dates_agree_with_httpdate() {
        // Every ~10 days over 1970..2100, plus leap-day edges.
        let mut clock = Clock::new();
        let mut secs = 0u64;
        while secs < 4_102_444_800 {
            let t = UNIX_EPOCH + Duration::from_secs(secs);
            let http = httpdate::fmt_http_date(t); // "Sun, 06 Nov 1994 08:49:37 GMT"
            let clf = String::from_utf8(clock.clf(t).to_vec()).unwrap();
            let want = format!(
                "{}/{}/{}:{} +0000",
                &http[5..7],
                &http[8..11],
                &http[12..16],
                &http[17..25]
            );
            assert_eq!(clf, want);
            secs += 863_999;
        }
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(clock.rfc3339(leap), b"2000-02-29T00:00:00Z");
        assert_eq!(clock.error(leap), b"2000/02/29 00:00:00");
        // Past year 9999 the four-digit fields hold the last second of 9999.
        let far = UNIX_EPOCH + Duration::from_secs(400_000_000_000);
        assert_eq!(clock.rfc3339(far), b"9999-12-31T23:59:59Z");
        assert_eq!(clock.clf(far), b"31/Dec/9999:23:59:59 +0000");
    }

    #[test]
    fn text_escaping() {
        let mut out = Vec::new();
        escape_text(&mut out, b"a\"b\\c\nd\x1b[31m\x7f\xff\xc3\xa9 ok");
        assert_eq!(out, b"a\\x22b\\x5Cc\\x0Ad\\x1B[31m\\x7F\\xFF\\xC3\\xA9 ok");
    }

    #[test]
    fn json_escaping() {
        let mut out = Vec::new();
        escape_json(&mut out, "a\"b\\c\n\t\u{1}\u{7f}é\u{2028}".as_bytes());
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            "a\\\"b\\\\c\\n\\t\\u0001\\u007Fé\u{2028}"
        );
        out.clear();
        escape_json(&mut out, b"x\xffy\xc3");
        assert_eq!(out, b"x\\ufffdy\\ufffd");
        // C1 controls (UTF-8 C2 80–C2 9F) are escaped; U+00A0 on is kept.
        out.clear();
        escape_json(&mut out, "a\u{9b}2J\u{80}\u{a0}é".as_bytes());
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            "a\\u009B2J\\u0080\u{a0}é"
        );
    }
}
