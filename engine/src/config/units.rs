//! Value syntaxes shared by the config file and the command line: sizes,
//! durations, listen addresses, media types, and "did you mean" hints.
//! (Header names and values follow HTTP's own grammar, `http::grammar`.)
//! Each parser returns a short description of what is allowed on failure,
//! so that the caller only has to prefix the location.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::http::grammar;

/// What a size may look like, for error messages.
pub(crate) const SIZE_HELP: &str =
    "a number of bytes or a size like \"512KiB\", \"1MiB\", \"10M\" (K/M/G and KiB/MiB/GiB are powers of 1024, KB/MB/GB of 1000)";

/// What a duration may look like, for error messages.
pub(crate) const DURATION_HELP: &str =
    "a number of seconds or a duration like \"250ms\", \"5s\", \"2m\", \"1h\"";

/// What a listen address may look like, for error messages.
pub(crate) const LISTEN_HELP: &str =
    "\"IPv4:PORT\" (127.0.0.1:8080), \"[IPv6]:PORT\" ([::1]:8080), or a bare PORT meaning 0.0.0.0:PORT";

/// Splits `"12 MiB"` into `(12, "MiB")`; the number must be decimal digits.
fn number_and_unit(s: &str) -> Option<(u64, &str)> {
    let s = s.trim();
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let n = s[..digits].parse().ok()?;
    Some((n, s[digits..].trim_start()))
}

/// Parses a size string such as `"1MiB"` into bytes.
pub(crate) fn parse_size(s: &str) -> Option<u64> {
    let (n, unit) = number_and_unit(s)?;
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// Parses a duration string such as `"250ms"`; a bare number is seconds.
pub(crate) fn parse_duration(s: &str) -> Option<Duration> {
    let (n, unit) = number_and_unit(s)?;
    let ms: u64 = match unit {
        "" | "s" => 1_000,
        unit => match duration_unit(unit) {
            Some(ms) => ms,
            // "1h30m", "1m 30s": parts, larger units first, as nginx and
            // Go (so Caddy) write them.
            None => return compound_duration(s),
        },
    };
    n.checked_mul(ms).map(Duration::from_millis)
}

/// The milliseconds of a duration's unit.
fn duration_unit(unit: &str) -> Option<u64> {
    match unit {
        "ms" => Some(1),
        "s" => Some(1_000),
        "m" | "min" => Some(60_000),
        "h" => Some(3_600_000),
        _ => None,
    }
}

/// `"1h30m"`, `"2m 30s"`, `"1s500ms"`: two parts or more, each a number
/// and its unit, each unit smaller than the one before.
fn compound_duration(s: &str) -> Option<Duration> {
    let (mut rest, mut total, mut last, mut parts) = (s.trim(), 0u64, u64::MAX, 0);
    while !rest.is_empty() {
        let (n, after) = number_and_unit(rest)?;
        let len = after.bytes().take_while(u8::is_ascii_lowercase).count();
        let ms = duration_unit(&after[..len]).filter(|&ms| ms < last)?;
        total = total.checked_add(n.checked_mul(ms)?)?;
        (rest, last, parts) = (after[len..].trim_start(), ms, parts + 1);
    }
    (parts > 1).then(|| Duration::from_millis(total))
}

/// Parses a listen address. No host names: resolving them at start-up
/// would make the bound address depend on DNS and `/etc/hosts`.
pub(crate) fn parse_listen(s: &str) -> Option<SocketAddr> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        let port = s.parse().ok()?;
        return Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port));
    }
    s.parse().ok()
}

/// Header fields that describe the message framing or are owned by the
/// server, which writes them as the response leaves: a config or a
/// handler setting them would make broken or ambiguous responses.
pub(crate) const FRAMING_HEADERS: &[&str] =
    &["content-length", "transfer-encoding", "connection", "date"];

/// Whether `s` looks like a media type, `type/subtype` with optional
/// parameters (`text/html; charset=utf-8`).
pub(crate) fn is_media_type(s: &str) -> bool {
    if !grammar::is_field_value(s.as_bytes()) {
        return false;
    }
    let essence = s.split(';').next().unwrap_or("").trim();
    match essence.split_once('/') {
        Some((t, sub)) => grammar::is_token(t.as_bytes()) && grammar::is_token(sub.as_bytes()),
        None => false,
    }
}

/// The candidate closest to `word` by edit distance, if it is close enough
/// to be a plausible typo.
pub(crate) fn nearest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let limit = (word.len() / 3).clamp(1, 3);
    candidates
        .iter()
        .map(|c| (edit_distance(word, c), *c))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Levenshtein distance over bytes (names are ASCII), one row of memory.
fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let subst = diag + usize::from(ca != cb);
            diag = row[j + 1];
            row[j + 1] = subst.min(row[j] + 1).min(diag + 1);
        }
    }
    row[b.len()]
}

/// `one of "a", "b", "c"` for error messages.
pub(crate) fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    format!("one of {}", quoted.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("0"), Some(0));
        assert_eq!(parse_size("123"), Some(123));
        assert_eq!(parse_size("512KiB"), Some(512 * 1024));
        assert_eq!(parse_size("1MiB"), Some(1 << 20));
        assert_eq!(parse_size("10M"), Some(10 << 20));
        assert_eq!(parse_size("10 mb"), Some(10_000_000));
        assert_eq!(parse_size("2G"), Some(2 << 30));
        assert_eq!(parse_size("1k"), Some(1024));
        assert_eq!(parse_size("1.5M"), None);
        assert_eq!(parse_size("-1"), None);
        assert_eq!(parse_size("MiB"), None);
        assert_eq!(parse_size("1TiB"), None);
        assert_eq!(parse_size("99999999999999999999"), None);
        assert_eq!(parse_size("18446744073709551615G"), None);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5"), Some(Duration::from_secs(5)));
        assert_eq!(parse_duration("5s"), Some(Duration::from_secs(5)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("2 min"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1d"), None);
        assert_eq!(parse_duration("s"), None);
        assert_eq!(parse_duration("5S"), None);
        // Parts, larger units first (nginx's and Go's "1h30m").
        assert_eq!(parse_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(
            parse_duration(" 1h 30m 5s "),
            Some(Duration::from_secs(5405))
        );
        assert_eq!(parse_duration("1s500ms"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2min30s"), Some(Duration::from_secs(150)));
        for wrong in [
            "30m1h", "1m1m", "1h30", "1h30x", "1h-30m", "1.5h", "1h30m ms", "h30m",
        ] {
            assert_eq!(parse_duration(wrong), None, "{wrong}");
        }
    }

    #[test]
    fn listen_addresses() {
        assert_eq!(
            parse_listen("127.0.0.1:8080"),
            Some("127.0.0.1:8080".parse().unwrap())
        );
        assert_eq!(
            parse_listen("[::1]:8080"),
            Some("[::1]:8080".parse().unwrap())
        );
        assert_eq!(parse_listen("8080"), Some("0.0.0.0:8080".parse().unwrap()));
        assert_eq!(parse_listen("0"), Some("0.0.0.0:0".parse().unwrap()));
        assert_eq!(parse_listen("70000"), None);
        assert_eq!(parse_listen("localhost:80"), None);
        assert_eq!(parse_listen("::1:80"), None);
        assert_eq!(parse_listen(""), None);
        assert_eq!(parse_listen("127.0.0.1"), None);
    }

    #[test]
    fn header_syntax() {
        assert!(is_media_type("text/html"));
        assert!(is_media_type("text/html; charset=utf-8"));
        assert!(!is_media_type("text"));
        assert!(!is_media_type("text/"));
        assert!(!is_media_type("te xt/html"));
    }

    #[test]
    fn suggestions() {
        let names = ["autoindex", "index", "dotfiles", "precompressed"];
        assert_eq!(nearest("autoindx", &names), Some("autoindex"));
        assert_eq!(nearest("dotfile", &names), Some("dotfiles"));
        assert_eq!(nearest("zzzzzz", &names), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(one_of(&["a", "b"]), "one of \"a\", \"b\"");
    }
}
