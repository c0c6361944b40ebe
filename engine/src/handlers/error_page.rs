//! The small HTML pages sent with error statuses, built at compile time.

use crate::http::Status;

macro_rules! page {
    ($code:literal, $reason:literal) => {
        concat!(
            "<!DOCTYPE html>\n<html><head><title>",
            $code,
            " ",
            $reason,
            "</title></head>\n<body><h1>",
            $code,
            " ",
            $reason,
            "</h1><hr><p>brisk</p></body></html>\n"
        )
        .as_bytes()
    };
}

/// The page for `status` (a generic one for codes without their own).
pub fn page(status: Status) -> &'static [u8] {
    match status.0 {
        301 => page!("301", "Moved Permanently"),
        302 => page!("302", "Found"),
        303 => page!("303", "See Other"),
        307 => page!("307", "Temporary Redirect"),
        308 => page!("308", "Permanent Redirect"),
        400 => page!("400", "Bad Request"),
        401 => page!("401", "Unauthorized"),
        403 => page!("403", "Forbidden"),
        404 => page!("404", "Not Found"),
        405 => page!("405", "Method Not Allowed"),
        408 => page!("408", "Request Timeout"),
        409 => page!("409", "Conflict"),
        411 => page!("411", "Length Required"),
        412 => page!("412", "Precondition Failed"),
        413 => page!("413", "Content Too Large"),
        414 => page!("414", "URI Too Long"),
        415 => page!("415", "Unsupported Media Type"),
        421 => page!("421", "Misdirected Request"),
        416 => page!("416", "Range Not Satisfiable"),
        417 => page!("417", "Expectation Failed"),
        #[cfg(feature = "webdav")]
        423 => page!("423", "Locked"),
        #[cfg(feature = "webdav")]
        424 => page!("424", "Failed Dependency"),
        429 => page!("429", "Too Many Requests"),
        431 => page!("431", "Request Header Fields Too Large"),
        500 => page!("500", "Internal Server Error"),
        501 => page!("501", "Not Implemented"),
        502 => page!("502", "Bad Gateway"),
        503 => page!("503", "Service Unavailable"),
        504 => page!("504", "Gateway Timeout"),
        505 => page!("505", "HTTP Version Not Supported"),
        507 => page!("507", "Insufficient Storage"),
        // (A page that names no status: never another's, as a 409 with
        // "500 Internal Server Error" in it was.)
        _ => b"<!DOCTYPE html>\n<html><head><title>Error</title></head>\n<body><h1>Error</h1><hr><p>brisk</p></body></html>\n",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every error status with a reason phrase of brisk's has a page that
    /// says it; any other gets one that names no status (never another's:
    /// a WebDAV 409 went out with a "500 Internal Server Error" page).
    #[test]
    fn pages_carry_their_status() {
        for code in 400u16..600 {
            let p = std::str::from_utf8(page(Status(code))).unwrap();
            let want = match Status(code).reason() {
                "" => "<h1>Error</h1>".to_string(),
                reason => format!("<h1>{code} {reason}</h1>"),
            };
            assert!(p.contains(&want), "{code}: {p}");
        }
    }
}
