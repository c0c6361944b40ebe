//! Status codes brisk sends, with their reason phrases (RFC 9110 §15).

/// An HTTP status code that brisk may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status(pub u16);

impl Status {
    /// 100 Continue (RFC 9110 §15.2.1).
    pub const CONTINUE: Status = Status(100);
    /// 200 OK (RFC 9110 §15.3.1).
    pub const OK: Status = Status(200);
    /// 204 No Content (RFC 9110 §15.3.5).
    pub const NO_CONTENT: Status = Status(204);
    /// 206 Partial Content (RFC 9110 §15.3.7).
    pub const PARTIAL_CONTENT: Status = Status(206);
    /// 301 Moved Permanently (RFC 9110 §15.4.2).
    pub const MOVED_PERMANENTLY: Status = Status(301);
    /// 302 Found (RFC 9110 §15.4.3).
    pub const FOUND: Status = Status(302);
    /// 304 Not Modified (RFC 9110 §15.4.5).
    pub const NOT_MODIFIED: Status = Status(304);
    /// 308 Permanent Redirect (RFC 9110 §15.4.9).
    pub const PERMANENT_REDIRECT: Status = Status(308);
    /// 400 Bad Request (RFC 9110 §15.5.1).
    pub const BAD_REQUEST: Status = Status(400);
    /// 401 Unauthorized (RFC 9110 §15.5.2).
    pub const UNAUTHORIZED: Status = Status(401);
    /// 403 Forbidden (RFC 9110 §15.5.4).
    pub const FORBIDDEN: Status = Status(403);
    /// 404 Not Found (RFC 9110 §15.5.5).
    pub const NOT_FOUND: Status = Status(404);
    /// 405 Method Not Allowed (RFC 9110 §15.5.6).
    pub const METHOD_NOT_ALLOWED: Status = Status(405);
    /// 408 Request Timeout (RFC 9110 §15.5.9).
    pub const REQUEST_TIMEOUT: Status = Status(408);
    /// 411 Length Required (RFC 9110 §15.5.12).
    pub const LENGTH_REQUIRED: Status = Status(411);
    /// 412 Precondition Failed (RFC 9110 §15.5.13).
    pub const PRECONDITION_FAILED: Status = Status(412);
    /// 413 Content Too Large (RFC 9110 §15.5.14).
    pub const CONTENT_TOO_LARGE: Status = Status(413);
    /// 414 URI Too Long (RFC 9110 §15.5.15).
    pub const URI_TOO_LONG: Status = Status(414);
    /// 415 Unsupported Media Type (RFC 9110 §15.5.16): a body the target
    /// does not take (a content coding, RFC 9110 §8.4).
    pub const UNSUPPORTED_MEDIA_TYPE: Status = Status(415);
    /// 416 Range Not Satisfiable (RFC 9110 §15.5.17).
    pub const RANGE_NOT_SATISFIABLE: Status = Status(416);
    /// 417 Expectation Failed (RFC 9110 §15.5.18).
    pub const EXPECTATION_FAILED: Status = Status(417);
    /// 421 Misdirected Request (RFC 9110 §15.5.20): the connection cannot
    /// answer for the host the request names.
    pub const MISDIRECTED_REQUEST: Status = Status(421);
    /// 429 Too Many Requests (RFC 6585 §4).
    pub const TOO_MANY_REQUESTS: Status = Status(429);
    /// 431 Request Header Fields Too Large (RFC 6585 §5).
    pub const HEADER_FIELDS_TOO_LARGE: Status = Status(431);
    /// 500 Internal Server Error (RFC 9110 §15.6.1).
    pub const INTERNAL_SERVER_ERROR: Status = Status(500);
    /// 501 Not Implemented (RFC 9110 §15.6.2).
    pub const NOT_IMPLEMENTED: Status = Status(501);
    /// 502 Bad Gateway (RFC 9110 §15.6.3).
    pub const BAD_GATEWAY: Status = Status(502);
    /// 503 Service Unavailable (RFC 9110 §15.6.4).
    pub const SERVICE_UNAVAILABLE: Status = Status(503);
    /// 504 Gateway Timeout (RFC 9110 §15.6.5).
    pub const GATEWAY_TIMEOUT: Status = Status(504);
    /// 505 HTTP Version Not Supported (RFC 9110 §15.6.6).
    pub const VERSION_NOT_SUPPORTED: Status = Status(505);
    /// 507 Insufficient Storage (RFC 4918 §11.5): no room to store what
    /// the request needs kept.
    pub const INSUFFICIENT_STORAGE: Status = Status(507);

    /// Whether brisk has a reason phrase of its own for it (one of
    /// another's is used only where it has none: `write::head`).
    pub fn has_reason(self) -> bool {
        !self.reason().is_empty()
    }

    /// The reason phrase for the status line.
    pub fn reason(self) -> &'static str {
        match self.0 {
            100 => "Continue",
            103 => "Early Hints",
            200 => "OK",
            201 => "Created",
            202 => "Accepted",
            204 => "No Content",
            205 => "Reset Content",
            206 => "Partial Content",
            207 => "Multi-Status",
            301 => "Moved Permanently",
            302 => "Found",
            303 => "See Other",
            304 => "Not Modified",
            307 => "Temporary Redirect",
            308 => "Permanent Redirect",
            400 => "Bad Request",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            408 => "Request Timeout",
            409 => "Conflict",
            411 => "Length Required",
            412 => "Precondition Failed",
            413 => "Content Too Large",
            414 => "URI Too Long",
            415 => "Unsupported Media Type",
            416 => "Range Not Satisfiable",
            417 => "Expectation Failed",
            421 => "Misdirected Request",
            #[cfg(feature = "webdav")]
            423 => "Locked",
            #[cfg(feature = "webdav")]
            424 => "Failed Dependency",
            429 => "Too Many Requests",
            431 => "Request Header Fields Too Large",
            500 => "Internal Server Error",
            501 => "Not Implemented",
            502 => "Bad Gateway",
            503 => "Service Unavailable",
            504 => "Gateway Timeout",
            505 => "HTTP Version Not Supported",
            507 => "Insufficient Storage",
            // (None: RFC 9112 §4 lets it be empty, a client ignores it;
            // "Unknown" read as if the status were not one.)
            _ => "",
        }
    }

    /// Whether a response with this status never carries a body
    /// (RFC 9110 §6.4.1: 1xx, 204 and 304).
    pub fn is_bodiless(self) -> bool {
        self.0 < 200 || self.0 == 204 || self.0 == 304
    }
}
