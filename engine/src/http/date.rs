//! HTTP dates (RFC 9110 §5.6.7) and the per-second `Date` cache.
//!
//! Hand-written rather than through `httpdate`: formatting goes straight
//! into a fixed buffer with no `SystemTime` round trip, and parsing works on
//! bytes as they come off the wire. `httpdate` is used in the tests as an
//! independent reference.

use std::time::{SystemTime, UNIX_EPOCH};

/// Length of an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub const HTTP_DATE_LEN: usize = 29;

/// The last second an IMF-fixdate can express (9999-12-31 23:59:59 UTC);
/// later times are clamped to it since the format has four year digits.
pub const MAX_HTTP_DATE_SECS: u64 = 253_402_300_799;

const DAY_NAMES: [&[u8; 3]; 7] = [b"Sun", b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat"];
const LONG_DAY_NAMES: [&[u8]; 7] = [
    b"Sunday",
    b"Monday",
    b"Tuesday",
    b"Wednesday",
    b"Thursday",
    b"Friday",
    b"Saturday",
];
/// English month abbreviations, as IMF-fixdate and the common log format
/// spell them.
pub const MONTH_NAMES: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// A moment broken down into UTC calendar fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CivilTime {
    /// Full year, e.g. 2026.
    pub year: u32,
    /// 1–12.
    pub month: u32,
    /// 1–31.
    pub day: u32,
    /// 0–23.
    pub hour: u32,
    /// 0–59.
    pub minute: u32,
    /// 0–59.
    pub second: u32,
    /// 0 = Sunday … 6 = Saturday.
    pub weekday: u32,
}

/// Breaks seconds since the Unix epoch into UTC calendar fields (proleptic
/// Gregorian calendar, no leap seconds, as POSIX time has none). Times past
/// year 9999 are clamped to [`MAX_HTTP_DATE_SECS`].
pub fn civil_time(secs: u64) -> CivilTime {
    let secs = secs.min(MAX_HTTP_DATE_SECS);
    let days = secs / 86_400;
    let rem = (secs % 86_400) as u32;
    // Days-to-civil over 400-year eras (each era is 146 097 days), with the
    // year starting on March 1st so that the leap day falls at its end.
    let z = days + 719_468; // days since 0000-03-01
    let era = z / 146_097;
    let doe = (z % 146_097) as u32; // day of era, 0..=146096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // 0..=399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of year from March 1st
    let mp = (5 * doy + 2) / 153; // month from March, 0..=11
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = (era * 400) as u32 + yoe + u32::from(month <= 2);
    CivilTime {
        year,
        month,
        day,
        hour: rem / 3600,
        minute: rem / 60 % 60,
        second: rem % 60,
        // 1970-01-01 was a Thursday.
        weekday: ((days + 4) % 7) as u32,
    }
}

/// Days since 1970-01-01 of a civil date (inverse of the era arithmetic in
/// [`civil_time`]); `None` before the epoch. Also used for X.509 validity
/// times (`tls::x509`).
pub fn days_from_civil(year: u32, month: u32, day: u32) -> Option<u64> {
    let y = u64::from(year) - u64::from(month <= 2);
    let era = y / 400;
    let yoe = y % 400;
    let mp = u64::from(if month > 2 { month - 3 } else { month + 9 });
    let doy = (153 * mp + 2) / 5 + u64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe).checked_sub(719_468)
}

/// The last two decimal digits of `n`, zero-padded: the fields of a date.
pub fn two_digits(n: u32) -> [u8; 2] {
    [b'0' + (n / 10 % 10) as u8, b'0' + (n % 10) as u8]
}

/// Formats seconds since the Unix epoch as an IMF-fixdate.
///
/// Times past the year 9999 are clamped to its last second.
pub fn format_http_date(secs: u64, out: &mut [u8; HTTP_DATE_LEN]) {
    let t = civil_time(secs);
    *out = *b"Sun, 00 Jan 0000 00:00:00 GMT";
    out[0..3].copy_from_slice(DAY_NAMES[t.weekday as usize]);
    out[5..7].copy_from_slice(&two_digits(t.day));
    out[8..11].copy_from_slice(MONTH_NAMES[t.month as usize - 1]);
    out[12..14].copy_from_slice(&two_digits(t.year / 100));
    out[14..16].copy_from_slice(&two_digits(t.year % 100));
    out[17..19].copy_from_slice(&two_digits(t.hour));
    out[20..22].copy_from_slice(&two_digits(t.minute));
    out[23..25].copy_from_slice(&two_digits(t.second));
}

fn digits(s: &[u8]) -> Option<u32> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0, |n, &d| n * 10 + u32::from(d - b'0')))
}

fn month_number(name: &[u8]) -> Option<u32> {
    MONTH_NAMES
        .iter()
        .position(|m| &m[..] == name)
        .map(|i| i as u32 + 1)
}

fn is_leap(year: u32) -> bool {
    year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
}

/// Validates the fields and converts them to seconds since the epoch.
fn to_secs(year: u32, month: u32, day: u32, time: &[u8]) -> Option<u64> {
    // time-of-day = hour ":" minute ":" second, each exactly two digits.
    if time.len() != 8 || time[2] != b':' || time[5] != b':' {
        return None;
    }
    let hour = digits(&time[0..2])?;
    let minute = digits(&time[3..5])?;
    // RFC 9110 allows second 60 (a leap second); POSIX time folds it into
    // the next minute, which is what the plain arithmetic below does.
    let second = digits(&time[6..8])?;
    let month_days = [
        31,
        28 + u32::from(is_leap(year)),
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&month)
        || day == 0
        || day > month_days[month as usize - 1]
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let days = days_from_civil(year, month, day)?;
    Some(days * 86_400 + u64::from(hour * 3600 + minute * 60 + second))
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`
fn parse_imf_fixdate(v: &[u8]) -> Option<u64> {
    if v.len() != HTTP_DATE_LEN
        || &v[3..5] != b", "
        || v[7] != b' '
        || v[11] != b' '
        || v[16] != b' '
        || &v[25..] != b" GMT"
        || !DAY_NAMES.iter().any(|d| d[..] == v[..3])
    {
        return None;
    }
    let year = digits(&v[12..16])?;
    to_secs(
        year,
        month_number(&v[8..11])?,
        digits(&v[5..7])?,
        &v[17..25],
    )
}

/// `Sunday, 06-Nov-94 08:49:37 GMT`; the two-digit year is taken as the
/// most recent matching year not more than 50 years after `now_year`
/// (RFC 9110 §5.6.7).
fn parse_rfc850(v: &[u8], now_year: u32) -> Option<u64> {
    let comma = v.iter().position(|&b| b == b',')?;
    if !LONG_DAY_NAMES.contains(&&v[..comma]) {
        return None;
    }
    let rest = &v[comma..];
    // ", 06-Nov-94 08:49:37 GMT"
    if rest.len() != 24
        || &rest[..2] != b", "
        || rest[4] != b'-'
        || rest[8] != b'-'
        || rest[11] != b' '
        || &rest[20..] != b" GMT"
    {
        return None;
    }
    let yy = digits(&rest[9..11])?;
    let mut year = now_year / 100 * 100 + yy;
    // Pick the one year ending in `yy` within (now - 50, now + 50].
    if year > now_year + 50 {
        year = year.checked_sub(100)?;
    } else if year + 100 <= now_year + 50 {
        year += 100;
    }
    to_secs(
        year,
        month_number(&rest[5..8])?,
        digits(&rest[2..4])?,
        &rest[12..20],
    )
}

/// `Sun Nov  6 08:49:37 1994` (C's asctime; the day is space-padded).
fn parse_asctime(v: &[u8]) -> Option<u64> {
    if v.len() != 24
        || v[3] != b' '
        || v[7] != b' '
        || v[10] != b' '
        || v[19] != b' '
        || !DAY_NAMES.iter().any(|d| d[..] == v[..3])
    {
        return None;
    }
    let day = match v[8] {
        b' ' => digits(&v[9..10])?,
        _ => digits(&v[8..10])?,
    };
    to_secs(
        digits(&v[20..24])?,
        month_number(&v[4..7])?,
        day,
        &v[11..19],
    )
}

/// Parses an HTTP-date as if the current year were `now_year`, which only
/// matters for the two-digit years of the obsolete RFC 850 format.
pub fn parse_http_date_with_year(value: &[u8], now_year: u32) -> Option<u64> {
    let v = value.trim_ascii();
    match v.get(3)? {
        b',' => parse_imf_fixdate(v),
        b' ' => parse_asctime(v),
        _ => parse_rfc850(v, now_year),
    }
}

/// Parses any of the three HTTP-date formats; `None` if invalid.
///
/// Names (`Sun`, `Nov`, `GMT`) are case-sensitive as RFC 9110 §5.6.7
/// defines them; the day name must be a real one but is not checked against
/// the date, since a wrong one is harmless. Dates before 1970 cannot be
/// represented and are `None`, like any other invalid date.
pub fn parse_http_date(value: &[u8]) -> Option<u64> {
    let v = value.trim_ascii();
    // Only the obsolete RFC 850 form needs the clock.
    if v.get(3).is_some_and(|&b| b == b',' || b == b' ') {
        return parse_http_date_with_year(v, 0);
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    parse_http_date_with_year(v, civil_time(now).year)
}

/// The current time as an IMF-fixdate, re-formatted at most once a second.
#[derive(Debug)]
pub struct DateCache {
    secs: u64,
    buf: [u8; HTTP_DATE_LEN],
}

impl DateCache {
    /// A cache holding the current time.
    pub fn new() -> DateCache {
        let mut cache = DateCache {
            secs: 0,
            buf: [0; HTTP_DATE_LEN],
        };
        format_http_date(0, &mut cache.buf);
        cache.update(SystemTime::now());
        cache
    }

    /// Brings the cache up to `now`; cheap when the second has not changed.
    ///
    /// A clock before 1970 counts as the epoch itself.
    pub fn update(&mut self, now: SystemTime) {
        let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if secs != self.secs {
            self.secs = secs;
            format_http_date(secs, &mut self.buf);
        }
    }

    /// The cached date, for a `Date` header value.
    pub fn get(&self) -> &[u8; HTTP_DATE_LEN] {
        &self.buf
    }

    /// The cached time in seconds since the epoch.
    pub fn secs(&self) -> u64 {
        self.secs
    }
}

impl Default for DateCache {
    fn default() -> Self {
        DateCache::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn fmt(secs: u64) -> String {
        let mut buf = [0; HTTP_DATE_LEN];
        format_http_date(secs, &mut buf);
        String::from_utf8(buf.to_vec()).unwrap()
    }

    #[test]
    fn formats_imf_fixdate() {
        assert_eq!(fmt(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(fmt(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(fmt(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(fmt(1_700_000_000), "Tue, 14 Nov 2023 22:13:20 GMT");
        assert_eq!(fmt(4_107_542_399), "Sun, 28 Feb 2100 23:59:59 GMT");
        assert_eq!(fmt(4_107_542_400), "Mon, 01 Mar 2100 00:00:00 GMT");
        assert_eq!(fmt(MAX_HTTP_DATE_SECS), "Fri, 31 Dec 9999 23:59:59 GMT");
        assert_eq!(fmt(u64::MAX), "Fri, 31 Dec 9999 23:59:59 GMT");
    }

    #[test]
    fn formatting_matches_httpdate() {
        // Sweep across leap years, century boundaries and every weekday.
        let mut s = 0u64;
        while s < 8_000_000_000 {
            let want = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(s));
            assert_eq!(fmt(s), want, "secs {s}");
            assert_eq!(parse_http_date(want.as_bytes()), Some(s));
            s += 86_400 * 37 + 3_599;
        }
    }

    #[test]
    fn parses_all_three_formats() {
        let t = Some(784_111_777);
        assert_eq!(parse_http_date(b"Sun, 06 Nov 1994 08:49:37 GMT"), t);
        assert_eq!(parse_http_date(b"Sunday, 06-Nov-94 08:49:37 GMT"), t);
        assert_eq!(parse_http_date(b"Sun Nov  6 08:49:37 1994"), t);
        assert_eq!(parse_http_date(b"Sun Nov 06 08:49:37 1994"), t);
        assert_eq!(parse_http_date(b"  Sun, 06 Nov 1994 08:49:37 GMT\t"), t);
        assert_eq!(parse_http_date(b"Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date(b"Fri, 31 Dec 9999 23:59:59 GMT"),
            Some(MAX_HTTP_DATE_SECS)
        );
        assert_eq!(
            parse_http_date(b"Tue, 29 Feb 2000 00:00:00 GMT"),
            Some(951_782_400)
        );
        // A leap second folds into the next minute.
        assert_eq!(
            parse_http_date(b"Sat, 31 Dec 2016 23:59:60 GMT"),
            parse_http_date(b"Sun, 01 Jan 2017 00:00:00 GMT")
        );
    }

    #[test]
    fn rfc850_two_digit_years_use_a_fifty_year_window() {
        let p = |v: &str, now| parse_http_date_with_year(v.as_bytes(), now);
        let y = |year| days_from_civil(year, 1, 1).map(|d| d * 86_400);
        assert_eq!(p("Friday, 01-Jan-99 00:00:00 GMT", 2026), y(1999));
        assert_eq!(p("Thursday, 01-Jan-76 00:00:00 GMT", 2026), y(2076));
        assert_eq!(p("Monday, 01-Jan-77 00:00:00 GMT", 2026), y(1977));
        assert_eq!(p("Saturday, 01-Jan-00 00:00:00 GMT", 2026), y(2000));
        assert_eq!(p("Monday, 01-Jan-70 00:00:00 GMT", 2090), y(2070));
        assert_eq!(p("Saturday, 01-Jan-50 00:00:00 GMT", 2090), y(2050));
        assert_eq!(p("Friday, 01-Jan-41 00:00:00 GMT", 2090), y(2041));
        // Exactly fifty years ahead is not "more than 50 years in the future".
        assert_eq!(p("Sunday, 01-Jan-40 00:00:00 GMT", 2090), y(2140));
        // The window crosses the century: late in 2099, "20" is 2120.
        assert_eq!(p("Friday, 01-Jan-20 00:00:00 GMT", 2099), y(2120));
        // Before the epoch is unrepresentable.
        assert_eq!(p("Sunday, 01-Jan-50 00:00:00 GMT", 1999), None);
    }

    #[test]
    fn rejects_invalid_dates() {
        for v in [
            "",
            "0",
            "Sun",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Nov 1994 08:49:37 gmt",
            "sun, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT",
            "Xyz, 06 Nov 1994 08:49:37 GMT",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT",
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37",
            "Sun, 06 Nov 1994 08:49:37 GMTX",
            "Sun, 31 Nov 1994 08:49:37 GMT",
            "Sun, 00 Nov 1994 08:49:37 GMT",
            "Sun, 29 Feb 1900 08:49:37 GMT",
            "Sun, 29 Feb 2023 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 23:60:00 GMT",
            "Sun, 06 Nov 1994 23:59:61 GMT",
            "Sun, 06 Nov 1994 08-49-37 GMT",
            "Sun, 06 Nov 1969 08:49:37 GMT",
            "Sun, +6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:+7 GMT",
            "Sun, 06 Nov 199x 08:49:37 GMT",
            "Sun,06 Nov 1994 08:49:37 GMT ",
            "Sunday, 06-Nov-1994 08:49:37 GMT",
            "Sunday, 06 Nov 94 08:49:37 GMT",
            "Sun, 06-Nov-94 08:49:37 GMT",
            "Sundae, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 94",
            "Sun Nov 6 08:49:37 1994",
            "Sun Nov  6 08:49:37 1994 GMT",
            "Sun Nov   6 08:49:37 1994",
            "1994-11-06T08:49:37Z",
            "784111777",
            "Sun, 06 Nov 1994 08:49:37 GMT\u{e9}",
        ] {
            assert_eq!(parse_http_date(v.as_bytes()), None, "{v:?}");
        }
        assert_eq!(parse_http_date(b"Sun, 06 Nov 1994 08:49:37 GM\xff"), None);
    }

    #[test]
    fn civil_time_fields() {
        let t = civil_time(1_795_312_200);
        assert_eq!(
            (t.year, t.month, t.day, t.hour, t.minute, t.second, t.weekday),
            (2026, 11, 22, 1, 50, 0, 0)
        );
        for days in [0u64, 59, 60, 365, 10_956, 11_016, 2_932_896] {
            let t = civil_time(days * 86_400);
            assert_eq!(days_from_civil(t.year, t.month, t.day), Some(days));
        }
    }

    #[test]
    fn cache_reformats_only_on_a_new_second() {
        let mut c = DateCache::new();
        assert!(c.secs() > 1_600_000_000);
        c.update(UNIX_EPOCH + Duration::from_millis(784_111_777_250));
        assert_eq!(c.get(), b"Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(c.secs(), 784_111_777);
        c.update(UNIX_EPOCH + Duration::from_millis(784_111_777_999));
        assert_eq!(c.get(), b"Sun, 06 Nov 1994 08:49:37 GMT");
        c.update(UNIX_EPOCH + Duration::from_secs(784_111_778));
        assert_eq!(c.get(), b"Sun, 06 Nov 1994 08:49:38 GMT");
        c.update(UNIX_EPOCH - Duration::from_secs(5));
        assert_eq!(c.get(), b"Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(c.secs(), 0);
        let d = DateCache::default();
        assert_eq!(d.get().len(), HTTP_DATE_LEN);
    }
}
