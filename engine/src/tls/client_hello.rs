//! The server name (SNI, RFC 6066 §3) of a ClientHello, read from the
//! connection's first record before rustls takes it: rustls's unbuffered
//! connection does not tell it, and the router needs it to refuse a
//! request whose host names another site than the one the certificate
//! was chosen for (RFC 9110 §15.5.20). (A hello split over records is
//! not whole in its first: then the name is the one rustls gives the
//! certificate resolver, `super::sni::heard`, once it has the whole.)

/// A cursor over a record's bytes; each read is bounds-checked.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<usize> {
        self.take(1).map(|b| usize::from(b[0]))
    }

    fn u16(&mut self) -> Option<usize> {
        self.take(2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
    }

    /// A vector whose length is given in `width` bytes (RFC 8446 §3.4).
    fn vec(&mut self, width: usize) -> Option<Reader<'a>> {
        let len = match width {
            1 => self.u8()?,
            2 => self.u16()?,
            _ => {
                let b = self.take(3)?;
                usize::from(b[0]) << 16 | usize::from(b[1]) << 8 | usize::from(b[2])
            }
        };
        self.take(len).map(Reader)
    }
}

/// What the first bytes of a connection say of its server name.
#[derive(Debug, PartialEq, Eq)]
pub enum Sni {
    /// The first record is not complete yet.
    Incomplete,
    /// The ClientHello names this host (lower case, no trailing dot).
    Name(Box<str>),
    /// It names none, or is not a ClientHello rustls would take.
    None,
}

/// The server name of the ClientHello that `incoming` starts with (its
/// first record: a ClientHello fits in one, at most 16 KiB).
pub fn server_name(incoming: &[u8]) -> Sni {
    let mut r = Reader(incoming);
    let (Some(22), Some(_), Some(len)) = (r.u8(), r.take(2), r.u16()) else {
        return if incoming.len() < 5 {
            Sni::Incomplete
        } else {
            Sni::None
        };
    };
    let Some(record) = r.take(len) else {
        return Sni::Incomplete;
    };
    match find(record) {
        Some(name) => Sni::Name(name),
        None => Sni::None,
    }
}

fn find(record: &[u8]) -> Option<Box<str>> {
    let mut r = Reader(record);
    if r.u8()? != 1 {
        return None; // Not a ClientHello.
    }
    let mut hello = r.vec(3)?;
    hello.take(2 + 32)?; // legacy_version, random
    hello.vec(1)?; // legacy_session_id
    hello.vec(2)?; // cipher_suites
    hello.vec(1)?; // legacy_compression_methods
    let mut extensions = hello.vec(2)?;
    while !extensions.0.is_empty() {
        let kind = extensions.u16()?;
        let mut data = extensions.vec(2)?;
        if kind != 0 {
            continue;
        }
        let mut list = data.vec(2)?;
        while !list.0.is_empty() {
            let name_type = list.u8()?;
            let name = list.vec(2)?.0;
            if name_type == 0 {
                return host(name);
            }
        }
        return None;
    }
    None
}

/// A DNS name as rustls accepts one, lower case, without a trailing dot.
fn host(name: &[u8]) -> Option<Box<str>> {
    let name = name.strip_suffix(b".").unwrap_or(name);
    let ok = !name.is_empty()
        && name.len() <= 253
        && name
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    ok.then(|| name.to_ascii_lowercase())
        .and_then(|v| String::from_utf8(v).ok())
        .map(String::into_boxed_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TLS 1.3 ClientHello record with the given extensions.
    fn hello(extensions: &[u8]) -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]);
        body.extend_from_slice(&[0]); // session id
        body.extend_from_slice(&[0, 2, 0x13, 0x01]); // one suite
        body.extend_from_slice(&[1, 0]); // null compression
        body.extend_from_slice(&(extensions.len() as u16).to_be_bytes());
        body.extend_from_slice(extensions);
        let mut hs = vec![1];
        hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
        hs.extend_from_slice(&body);
        let mut rec = vec![22, 3, 1];
        rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
        rec.extend_from_slice(&hs);
        rec
    }

    fn sni_ext(name: &[u8]) -> Vec<u8> {
        let mut entry = vec![0];
        entry.extend_from_slice(&(name.len() as u16).to_be_bytes());
        entry.extend_from_slice(name);
        let mut list = (entry.len() as u16).to_be_bytes().to_vec();
        list.extend_from_slice(&entry);
        let mut ext = vec![0, 0];
        ext.extend_from_slice(&(list.len() as u16).to_be_bytes());
        ext.extend_from_slice(&list);
        ext
    }

    #[test]
    fn the_server_name_is_read_from_the_first_record() {
        let mut exts = vec![0, 43, 0, 3, 2, 3, 4]; // supported_versions first
        exts.extend_from_slice(&sni_ext(b"WWW.Example.ORG."));
        let rec = hello(&exts);
        assert_eq!(server_name(&rec), Sni::Name("www.example.org".into()));
        for cut in [0, 3, 5, rec.len() - 1] {
            assert_eq!(server_name(&rec[..cut]), Sni::Incomplete, "{cut}");
        }
        assert_eq!(server_name(&hello(&[0, 43, 0, 3, 2, 3, 4])), Sni::None);
        assert_eq!(server_name(&hello(&sni_ext(b"a b"))), Sni::None);
        assert_eq!(server_name(b"GET / HTTP/1.1\r\n"), Sni::None);
        // A length that runs past the record is not believed.
        let mut bad = hello(&sni_ext(b"a.test"));
        let n = bad.len();
        bad[n - 7] = 0xff;
        assert_eq!(server_name(&bad), Sni::None);
    }
}
