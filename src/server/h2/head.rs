//! An answer's head as an HPACK block: the head is written by the one
//! head writer (`http::response::Head`, as for HTTP/1.1: Server, Date,
//! the handler's fields, Content-Length), then each field goes into the
//! block with its name in lower case (RFC 9113 §8.2.1), less those
//! HTTP/2 forbids (§8.2.2: Connection and the fields it names), through
//! the connection's encoder (repeated fields become table indexes).

use crate::h2::hpack;

/// Appends to `block` the HPACK encoding, by the connection's encoder
/// `enc`, of the HTTP/1.1 head `h1` (a status line, fields, an empty
/// line); `name` is scratch space. The block must be sent before any
/// other the encoder makes.
pub fn encode(h1: &[u8], block: &mut Vec<u8>, name: &mut Vec<u8>, enc: &mut hpack::Encoder) {
    enc.begin(block);
    let mut lines = h1
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let status = lines
        .next()
        .and_then(|l| l.get(9..12))
        .and_then(crate::http::grammar::parse_u64)
        .unwrap_or(500);
    hpack::encode_status(status as u16, block);
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        name.clear();
        name.extend(line[..colon].iter().map(u8::to_ascii_lowercase));
        if matches!(
            &name[..],
            b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
        ) {
            continue;
        }
        let value = crate::http::grammar::trim_ows(&line[colon + 1..]);
        enc.field(name, value, block);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http1_head_becomes_a_block() {
        let h1 = b"HTTP/1.1 206 Partial Content\r\nServer: brisk\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: 5\r\n\r\n";
        let (mut block, mut name) = (Vec::new(), Vec::new());
        encode(h1, &mut block, &mut name, &mut hpack::Encoder::new());
        let mut fields = Vec::new();
        hpack::Decoder::new(4096)
            .decode(&block, 1 << 20, &mut |n, v| {
                fields.push((
                    String::from_utf8(n.to_vec()).unwrap(),
                    String::from_utf8(v.to_vec()).unwrap(),
                ))
            })
            .unwrap();
        let fields: Vec<(&str, &str)> = fields
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            fields,
            [
                (":status", "206"),
                ("server", "brisk"),
                ("content-type", "text/plain"),
                ("content-length", "5")
            ]
        );
    }
}
