//! What the logs are told (`[log]`): where each log goes, the access
//! log's format and fields, the error log's level. The configuration
//! fills these (and names them too: `config::Level`); the logs read
//! nothing else of it.

use std::path::PathBuf;

/// Where a log goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogTarget {
    /// Not written at all.
    Off,
    /// Standard output (`"-"` for the access log, or `"stdout"`).
    Stdout,
    /// Standard error (`"-"` for the error log, or `"stderr"`).
    Stderr,
    /// Appended to this file (absolute once loaded).
    File(PathBuf),
}

impl LogTarget {
    /// A file target's relative path resolved against `dir`; others as
    /// they are.
    pub(crate) fn relative_to(self, dir: &std::path::Path) -> LogTarget {
        match self {
            LogTarget::File(p) => LogTarget::File(dir.join(p)),
            other => other,
        }
    }
}

/// Access log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessFormat {
    /// NCSA common log format.
    Common,
    /// Common plus `"referer" "user-agent"` (Apache/nginx `combined`).
    Combined,
    /// One JSON object per line.
    Json,
    /// The user's own line, [`LogConfig::template`] (a `format` with
    /// `$variables`, as nginx's `log_format`).
    Custom,
}

/// One piece of a user-defined access-log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogPiece {
    /// Text as written.
    Text(String),
    /// A `$variable`'s value.
    Var(LogVar),
}

/// A variable of a user-defined access-log line: nginx's names, so that
/// a `log_format` line carries over, and brisk's `duration_us`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogVar {
    /// The client's address.
    RemoteAddr,
    /// The client's port, or `-` when a trusted proxy named the client
    /// without one.
    RemotePort,
    /// `http` or `https`: what the client spoke (to brisk, or to the
    /// trusted proxy that said so), as a redirect's `$scheme`.
    Scheme,
    /// The authenticated user, or `-`.
    RemoteUser,
    /// `28/Nov/2026:04:55:21 +0000`.
    TimeLocal,
    /// `2026-11-28T04:55:21Z`.
    TimeIso8601,
    /// The request line: `GET /x HTTP/1.1`.
    Request,
    /// `GET`.
    RequestMethod,
    /// The target as sent: `/x?y`.
    RequestUri,
    /// `HTTP/1.1`.
    ServerProtocol,
    /// `200`.
    Status,
    /// Body bytes sent.
    BodyBytesSent,
    /// `Referer`, or `-`.
    HttpReferer,
    /// `User-Agent`, or `-`.
    HttpUserAgent,
    /// The host asked for, lower case, without the port; or `-`.
    Host,
    /// `TLSv1.3`, or `-` over plain HTTP.
    SslProtocol,
    /// The cipher suite, or `-` over plain HTTP.
    SslCipher,
    /// Seconds from the first byte of the request to the last of the
    /// answer, with milliseconds: `0.012`.
    RequestTime,
    /// The same in microseconds: `12345`.
    DurationUs,
    /// [`LogField::UpstreamAddr`], or `-`.
    UpstreamAddr,
    /// [`LogField::UpstreamStatus`], or `-`.
    UpstreamStatus,
    /// [`LogField::UpstreamHeaderTime`], or `-`.
    UpstreamHeaderTime,
    /// [`LogField::UpstreamResponseTime`], or `-`.
    UpstreamResponseTime,
}

impl LogVar {
    /// Every variable with its name, in the order error messages list them.
    pub const ALL: [(&'static str, LogVar); 23] = [
        ("remote_addr", LogVar::RemoteAddr),
        ("remote_user", LogVar::RemoteUser),
        ("remote_port", LogVar::RemotePort),
        ("scheme", LogVar::Scheme),
        ("time_local", LogVar::TimeLocal),
        ("time_iso8601", LogVar::TimeIso8601),
        ("request", LogVar::Request),
        ("request_method", LogVar::RequestMethod),
        ("request_uri", LogVar::RequestUri),
        ("server_protocol", LogVar::ServerProtocol),
        ("status", LogVar::Status),
        ("body_bytes_sent", LogVar::BodyBytesSent),
        ("http_referer", LogVar::HttpReferer),
        ("http_user_agent", LogVar::HttpUserAgent),
        ("host", LogVar::Host),
        ("ssl_protocol", LogVar::SslProtocol),
        ("ssl_cipher", LogVar::SslCipher),
        ("request_time", LogVar::RequestTime),
        ("duration_us", LogVar::DurationUs),
        ("upstream_addr", LogVar::UpstreamAddr),
        ("upstream_status", LogVar::UpstreamStatus),
        ("upstream_header_time", LogVar::UpstreamHeaderTime),
        ("upstream_response_time", LogVar::UpstreamResponseTime),
    ];
}

/// An optional access-log field (`[log] fields`), written after the
/// format's own fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogField {
    /// The TLS version (`TLSv1.3`, `TLSv1.2`): nginx's `$ssl_protocol`.
    TlsVersion,
    /// The TLS cipher suite, by OpenSSL's name: nginx's `$ssl_cipher`.
    TlsCipher,
    /// The host the request named, lower case, without its port or a
    /// trailing dot: nginx's `$host`, which picked the site.
    Vhost,
    /// The upstream that answered a proxied request (`127.0.0.1:9001`,
    /// `unix:/run/app.sock`): nginx's `$upstream_addr`.
    UpstreamAddr,
    /// The status the upstream answered: nginx's `$upstream_status`.
    UpstreamStatus,
    /// Seconds, with milliseconds, from the start of the upstream
    /// exchange to its answer's head: nginx's `$upstream_header_time`.
    UpstreamHeaderTime,
    /// Seconds, with milliseconds, from the start of the upstream
    /// exchange to the end of its answer: nginx's
    /// `$upstream_response_time`.
    UpstreamResponseTime,
}

impl LogField {
    /// Every field, in the order error messages list them.
    pub const ALL: [LogField; 7] = [
        LogField::TlsVersion,
        LogField::TlsCipher,
        LogField::Vhost,
        LogField::UpstreamAddr,
        LogField::UpstreamStatus,
        LogField::UpstreamHeaderTime,
        LogField::UpstreamResponseTime,
    ];

    /// The name used in the config file (`"tls_version"`) and as the
    /// JSON format's key.
    pub fn as_str(self) -> &'static str {
        match self {
            LogField::TlsVersion => "tls_version",
            LogField::TlsCipher => "tls_cipher",
            LogField::Vhost => "vhost",
            LogField::UpstreamAddr => "upstream_addr",
            LogField::UpstreamStatus => "upstream_status",
            LogField::UpstreamHeaderTime => "upstream_header_time",
            LogField::UpstreamResponseTime => "upstream_response_time",
        }
    }
}

/// Error log verbosity, most quiet first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Nothing is written.
    Off,
    /// Failures that lose a request or a feature.
    Error,
    /// Suspicious client behaviour, recoverable trouble.
    Warn,
    /// Start-up, shutdown, reloads.
    Info,
    /// Everything, for troubleshooting.
    Debug,
}

impl AccessFormat {
    /// Every format, in the order error messages list them.
    pub const ALL: [AccessFormat; 3] = [
        AccessFormat::Common,
        AccessFormat::Combined,
        AccessFormat::Json,
    ];

    /// The name used in the config file (`"combined"`).
    pub fn as_str(self) -> &'static str {
        match self {
            AccessFormat::Common => "common",
            AccessFormat::Combined => "combined",
            AccessFormat::Json => "json",
            AccessFormat::Custom => "custom",
        }
    }
}

impl Level {
    /// Every level, most quiet first.
    pub const ALL: [Level; 5] = [
        Level::Off,
        Level::Error,
        Level::Warn,
        Level::Info,
        Level::Debug,
    ];

    /// The name used in the config file, on the command line and in
    /// error-log lines (`"warn"`): the one table of level names.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Off => "off",
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }
}

/// `[log]`.
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// Where the access log goes (default stdout).
    pub access: LogTarget,
    /// Access log line format.
    pub format: AccessFormat,
    /// Optional fields after the format's own (`[log] fields`), in order.
    pub fields: Vec<LogField>,
    /// The pieces of a user-defined format ([`AccessFormat::Custom`]).
    pub template: Vec<LogPiece>,
    /// Error log verbosity.
    pub level: Level,
    /// Where the error log goes (default stderr).
    pub error: LogTarget,
}
