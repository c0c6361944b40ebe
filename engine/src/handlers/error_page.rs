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
        411 => page!("411", "Length Required"),
        412 => page!("412", "Precondition Failed"),
        413 => page!("413", "Content Too Large"),
        414 => page!("414", "URI Too Long"),
        421 => page!("421", "Misdirected Request"),
        416 => page!("416", "Range Not Satisfiable"),
        417 => page!("417", "Expectation Failed"),
        429 => page!("429", "Too Many Requests"),
        431 => page!("431", "Request Header Fields Too Large"),
        500 => page!("500", "Internal Server Error"),
        501 => page!("501", "Not Implemented"),
        502 => page!("502", "Bad Gateway"),
        503 => page!("503", "Service Unavailable"),
        504 => page!("504", "Gateway Timeout"),
        505 => page!("505", "HTTP Version Not Supported"),
        _ => page!("500", "Internal Server Error"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_carry_their_status() {
        for code in [
            400u16, 403, 404, 405, 408, 411, 412, 413, 414, 416, 417, 431, 500, 501, 505,
        ] {
            let p = std::str::from_utf8(page(Status(code))).unwrap();
            let want = format!("<h1>{} {}</h1>", code, Status(code).reason());
            assert!(p.contains(&want), "{code}: {p}");
        }
    }
}
