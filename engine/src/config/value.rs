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
            DeValue::Float(f) => match f.as_str().replace('_', "").parse() {
                Ok(x) => Value::Float(x),
                Err(_) => return Err(self.expected(v, key, "a number")),
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
