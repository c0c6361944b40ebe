//! A configuration value handed as is to code that is not brisk's: the
//! `config` table of a `[[handlers]]` entry (to the handler's init) and
//! of `[servlets]` (to each servlet's `handler_init`). brisk does not
//! know their keys, so it keeps the TOML value whole, in a form of its
//! own (no parser types in the public API).

use toml::de::DeValue;
use toml::Spanned;

use super::load::{sorted, Loader};
use super::ConfigError;

/// A TOML value: what a handler's `config` table holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string.
    String(String),
    /// An integer.
    Integer(i64),
    /// A float.
    Float(f64),
    /// `true` or `false`.
    Boolean(bool),
    /// A date-time, as written (RFC 3339).
    Datetime(String),
    /// An array.
    Array(Vec<Value>),
    /// A table, its keys in file order.
    Table(Vec<(String, Value)>),
}

impl Default for Value {
    /// An empty table (no `config` given).
    fn default() -> Value {
        Value::Table(Vec::new())
    }
}

impl Value {
    /// The value of `key` in a table (`None` for a missing key or a value
    /// that is not a table).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Table(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The keys of a table, in file order (none for other values).
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        let entries: &[(String, Value)] = match self {
            Value::Table(e) => e,
            _ => &[],
        };
        entries.iter().map(|(k, _)| k.as_str())
    }
}

impl Loader<'_> {
    /// Any TOML value, kept whole; `key` names it in errors (a number
    /// out of the 64-bit range).
    pub(super) fn value(&self, key: &str, v: &Spanned<DeValue<'_>>) -> Result<Value, ConfigError> {
        Ok(match v.get_ref() {
            DeValue::String(s) => Value::String(s.to_string()),
            DeValue::Integer(_) => Value::Integer(self.integer(key, v, i64::MIN, i64::MAX)?),
            DeValue::Float(f) => match float(f.as_str()) {
                Some(x) => Value::Float(x),
                None => {
                    let what = "a float of at most 15 significant digits and an exponent \
                                from -22 to 22 (0.5, 1.25e3: read exactly), inf or nan; give \
                                others as a string";
                    return Err(self.expected(v, key, what));
                }
            },
            DeValue::Boolean(b) => Value::Boolean(*b),
            DeValue::Datetime(d) => Value::Datetime(d.to_string()),
            DeValue::Array(items) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| self.value(&format!("{key}[{}]", i + 1), item))
                    .collect::<Result<_, _>>()?,
            ),
            DeValue::Table(t) => Value::Table(
                sorted(t)
                    .into_iter()
                    .map(|(k, item)| {
                        let name = k.get_ref().as_ref();
                        Ok((
                            name.to_string(),
                            self.value(&format!("{key}.{name}"), item)?,
                        ))
                    })
                    .collect::<Result<_, ConfigError>>()?,
            ),
        })
    }

    /// A `config = { … }` table, kept whole.
    pub(super) fn config_table(
        &self,
        key: &str,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<Value, ConfigError> {
        self.table(key, v)?;
        self.value(key, v)
    }
}

/// The TOML float `text` (`[+-]` digits, `_` between them, an optional
/// fraction and exponent; or `inf`, `nan`), read exactly: the decimal's
/// digits as an integer below 2^53 times or over a power of ten of at
/// most 10^22, both exact in an f64, so that one correctly rounded
/// operation gives the nearest f64 (Clinger's fast path). `None` for a
/// decimal outside it (a mantissa past 2^53, about 16 digits, or a power
/// of ten past 10^22 that the mantissa cannot take), never a rounded
/// guess. Written here rather than with `str::parse`,
/// whose exact algorithm and tables cost the smallest build 18 KB for
/// the few floats a handler's `config` holds.
fn float(text: &str) -> Option<f64> {
    let (negative, rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let magnitude = match rest {
        "inf" => f64::INFINITY,
        "nan" => f64::NAN,
        _ => decimal(rest)?,
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// An unsigned decimal float (see [`float`]).
fn decimal(text: &str) -> Option<f64> {
    // 10^0 ..= 10^22: exact in an f64.
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    const EXACT: u64 = 1 << 53;
    let (number, exponent) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    // The digits as an integer and how many came after the point; digits
    // past 19 must be zeros (counted in the exponent).
    let (mut mantissa, mut scale, mut digits, mut point) = (0u64, 0i64, 0u32, false);
    if !number.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    for b in number.bytes() {
        match b {
            b'_' => {}
            b'.' if !point => point = true,
            b'0'..=b'9' => {
                let d = u64::from(b - b'0');
                if mantissa == 0 && d == 0 {
                    // (A leading zero: not significant.)
                } else if digits < 19 {
                    mantissa = mantissa * 10 + d;
                    digits += 1;
                } else if d == 0 {
                    scale += 1;
                } else {
                    return None;
                }
                if point {
                    scale -= 1;
                }
            }
            _ => return None,
        }
    }
    let mut e = scale;
    if let Some(exp) = exponent {
        let exp = exp.replace('_', "");
        let n: i64 = exp.parse().ok().filter(|n: &i64| n.abs() < 100_000)?;
        e += n;
    }
    if mantissa == 0 {
        return Some(0.0);
    }
    // Trailing zeros of the integer go into the exponent, and a large
    // exponent into the integer while it stays exact.
    while mantissa % 10 == 0 {
        mantissa /= 10;
        e += 1;
    }
    while e > 22 && mantissa * 10 < EXACT {
        mantissa *= 10;
        e -= 1;
    }
    if mantissa > EXACT || e.abs() > 22 {
        return None;
    }
    let m = mantissa as f64;
    Some(match e >= 0 {
        true => m * POW10[e as usize],
        false => m / POW10[(-e) as usize],
    })
}

#[cfg(test)]
mod tests {
    use super::float;

    #[test]
    fn floats_are_read_exactly_or_refused() {
        // Exactly what the standard library's parse gives, bit for bit.
        let exact = [
            "0.0",
            "-0.0",
            "+1.5",
            "3.14159",
            "1e3",
            "1E-3",
            "6.626e-34",
            "1_000.000_1",
            "0.1",
            "0.2",
            "0.3",
            "9007199254740992",
            "123456789012345.6",
            "1.7976931348623157e-300",
            "2.5e22",
            "1e30",
            "5e-324",
            "0.000001",
            "1234567890123456.789",
            "1e-22",
            "4.35e+15",
            "00012.5",
            "1.0000000000000000000000",
            "6.02214076e23",
        ];
        for text in exact {
            let std: f64 = text.replace('_', "").parse().unwrap();
            match float(text) {
                Some(x) => assert_eq!(x.to_bits(), std.to_bits(), "{text}"),
                // (Outside the exact range: refused, never approximated.)
                None => assert!(
                    [
                        "1.7976931348623157e-300",
                        "5e-324",
                        "6.626e-34",
                        "1234567890123456.789"
                    ]
                    .contains(&text),
                    "{text} refused"
                ),
            }
        }
        assert_eq!(float("inf"), Some(f64::INFINITY));
        assert_eq!(float("-inf"), Some(f64::NEG_INFINITY));
        assert!(float("nan").is_some_and(f64::is_nan));
        // (A mantissa past 2^53: refused, as it would be rounded.)
        for bad in [
            "1.2.3",
            "1e",
            "e5",
            "1x",
            "12345678901234567891",
            "1e400",
            "9007199254740993",
        ] {
            assert_eq!(float(bad), None, "{bad}");
        }
    }

    #[test]
    fn every_short_decimal_is_the_nearest_f64() {
        // Mantissas of up to 15 digits with exponents -22..=22: within the
        // fast path, where the result must match the exact algorithm's.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let m = x % 1_000_000_000_000_000;
            let e = (x >> 50) as i64 % 45 - 22;
            let text = format!("{m}e{e}");
            let std: f64 = text.parse().unwrap();
            let got = float(&text).unwrap_or_else(|| panic!("{text} refused"));
            assert_eq!(got.to_bits(), std.to_bits(), "{text}");
        }
    }
}
