//! The client side, for `https://` upstreams of `[[reverse_proxy]]`:
//! a rule's rustls client configuration ([`UpstreamTls`], built when the
//! configuration loads: the system's roots and the rule's `ca`, or no
//! verification with `tls_verify = false`), and one connection to an
//! upstream driven over its non-blocking socket ([`TlsLink`]): plaintext
//! in and out, records to and from the socket, never blocking.
//!
//! The system's roots are read from its PEM bundle (the first of
//! [`SYSTEM_BUNDLES`] that exists) rather than through a crate such as
//! rustls-native-certs or webpki-roots: one file read, no dependency, and
//! the roots the system's administrator keeps up to date.

use std::fmt;
use std::io::{self, Read as _, Write as _};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use crate::sys::net::{read_into_spare, send};

/// Where systems keep their bundle of trusted roots (Debian, Ubuntu,
/// Arch, Alpine; Fedora, RHEL; openSUSE; the BSDs): the first that can
/// be read is used.
pub const SYSTEM_BUNDLES: [&str; 4] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// What one read of the socket asks for at most (a record and more).
const PIECE: usize = 32 * 1024;

/// One rule's client configuration for its https upstreams, shared by
/// every worker (its session cache too: a new connection resumes).
#[derive(Clone)]
pub struct UpstreamTls {
    config: Arc<ClientConfig>,
}

impl UpstreamTls {
    /// Verifying the upstreams' certificates against the system's roots
    /// and those of the PEM file `ca` (`verify`), or not at all.
    pub fn new(verify: bool, ca: Option<&Path>) -> Result<UpstreamTls, String> {
        let provider = Arc::new(super::provider());
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let mut config = if verify {
            builder
                .with_root_certificates(roots(ca.as_slice())?)
                .with_no_client_auth()
        } else {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Unverified(provider)))
                .with_no_client_auth()
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(UpstreamTls {
            config: Arc::new(config),
        })
    }

    /// A connection to `host` (its name as written in `to`, an IPv6
    /// address in brackets), sent as SNI and verified.
    pub fn connect(&self, host: &str) -> Result<TlsLink, String> {
        let name = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(name)
            .map_err(|e| format!("{host} is no server name: {e}"))?
            .to_owned();
        let conn = ClientConnection::new(Arc::clone(&self.config), name)
            .map_err(|e| format!("TLS: {e}"))?;
        Ok(TlsLink {
            conn,
            pending: Vec::new(),
            read_to_end: false,
            cut: false,
            config: Arc::clone(&self.config),
        })
    }
}

impl fmt::Debug for UpstreamTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UpstreamTls").finish_non_exhaustive()
    }
}

/// (The same configuration, not an equal one: each load builds its own.)
impl PartialEq for UpstreamTls {
    fn eq(&self, other: &UpstreamTls) -> bool {
        Arc::ptr_eq(&self.config, &other.config)
    }
}

impl Eq for UpstreamTls {}

/// The system's roots and those of the PEM files `cas`; an error when
/// there are none.
pub fn roots(cas: &[&Path]) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    let parsed = |pem: &[u8]| {
        CertificateDer::pem_slice_iter(pem)
            .filter_map(Result::ok)
            .collect::<Vec<_>>()
    };
    if let Some(pem) = SYSTEM_BUNDLES.iter().find_map(|p| std::fs::read(p).ok()) {
        roots.add_parsable_certificates(parsed(&pem));
    }
    for ca in cas {
        let pem = std::fs::read(ca).map_err(|e| format!("cannot read {}: {e}", ca.display()))?;
        let (added, _) = roots.add_parsable_certificates(parsed(&pem));
        if added == 0 {
            return Err(format!("no usable CA certificate in {}", ca.display()));
        }
    }
    if roots.is_empty() {
        return Err(format!(
            "no trusted roots to verify https upstreams with: none of {} could be read \
             (set ca = \"roots.pem\", or tls_verify = false)",
            SYSTEM_BUNDLES.join(", ")
        ));
    }
    Ok(roots)
}

/// `tls_verify = false`: any certificate is taken (the handshake's
/// signatures are still checked, so the connection is private to whoever
/// holds the key, whoever that is).
#[derive(Debug)]
struct Unverified(Arc<CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// One TLS connection to an upstream over a non-blocking socket (given
/// to each call): [`TlsLink::read`] and [`TlsLink::send`] behave as the
/// socket's own reads and writes would, plaintext in place of bytes.
pub struct TlsLink {
    conn: ClientConnection,
    /// Records read from the socket that rustls has not taken yet.
    pending: Vec<u8>,
    /// The upstream closed its side (rustls was told).
    read_to_end: bool,
    /// It closed without close_notify (see [`TlsLink::cut_short`]).
    cut: bool,
    /// Whose connection it is (a kept one goes only to its rule's kind).
    config: Arc<ClientConfig>,
}

impl fmt::Debug for TlsLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsLink")
            .field("handshaking", &self.conn.is_handshaking())
            .finish_non_exhaustive()
    }
}

/// The socket as rustls writes records to it.
struct Out<'a, S: AsRawFd>(&'a S);

impl<S: AsRawFd> io::Write for Out<'_, S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        send(self.0, buf, false)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl TlsLink {
    /// Whether it was made with `tls`'s configuration.
    pub fn made_with(&self, tls: &UpstreamTls) -> bool {
        Arc::ptr_eq(&self.config, &tls.config)
    }

    /// The handshake is not over.
    pub fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Writes the records that wait to `sock`, until none does (or it
    /// would block: `WouldBlock`).
    pub fn flush(&mut self, sock: &impl AsRawFd) -> io::Result<()> {
        while self.conn.wants_write() {
            self.conn.write_tls(&mut Out(sock))?;
        }
        Ok(())
    }

    /// Takes plaintext from `buf` (what rustls holds until the handshake
    /// ends is bounded): how much, or `WouldBlock` when none fits now.
    pub fn send(&mut self, sock: &impl AsRawFd, buf: &[u8]) -> io::Result<usize> {
        self.flush(sock)?;
        let n = self.conn.writer().write(buf)?;
        if n == 0 {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        match self.flush(sock) {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => Err(e),
            _ => Ok(n),
        }
    }

    /// Whether the upstream closed without close_notify: an answer
    /// whose end is the close (no length, not chunked) is then not known
    /// to be whole (RFC 9112 §9.8: an attacker on the way can close it).
    pub fn cut_short(&self) -> bool {
        self.cut
    }

    /// Appends plaintext read from `sock` to `buf`, as a read would: how
    /// much (0: the upstream closed), `WouldBlock` when none has come, or
    /// the failure (a certificate refused: the reason).
    pub fn read(&mut self, sock: &impl AsRawFd, buf: &mut Vec<u8>) -> io::Result<usize> {
        loop {
            let start = buf.len();
            buf.resize(start + PIECE, 0);
            let got = self.conn.reader().read(&mut buf[start..]);
            buf.truncate(start + *got.as_ref().unwrap_or(&0));
            match got {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // (Closed without close_notify, as many servers do: the
                // answer's framing says whether it was whole, and one
                // that ends at the close is not: see `cut_short`.)
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    self.cut = true;
                    return Ok(0);
                }
                Err(e) => return Err(e),
            }
            if !self.pending.is_empty() || self.read_to_end {
                let mut records = &self.pending[..];
                let took = self.conn.read_tls(&mut records)?;
                self.pending.drain(..took);
                if let Err(e) = self.conn.process_new_packets() {
                    // (Its alert goes, if it can.)
                    let _ = self.flush(sock);
                    return Err(io::Error::other(format!("TLS: {e}")));
                }
                // (The handshake's next flight, if any.)
                match self.flush(sock) {
                    Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(e),
                    _ => {}
                }
                if took > 0 || self.read_to_end {
                    continue;
                }
            }
            self.pending.reserve(PIECE);
            if read_into_spare(sock, &mut self.pending)? == 0 {
                self.read_to_end = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixStream;

    use super::*;
    use crate::tls::testing::{server, testdata};

    /// `link` asks for `/` and reads the answer of a rustls server with
    /// the test certificate `a` at the other end of a socket pair (the
    /// test drives both): the answer, or the link's failure.
    fn exchange(mut link: TlsLink) -> io::Result<Vec<u8>> {
        let (ours, mut theirs) = UnixStream::pair()?;
        ours.set_nonblocking(true)?;
        theirs.set_nonblocking(true)?;
        let mut up = rustls::ServerConnection::new(server()).expect("server");
        let request = b"GET / HTTP/1.1\r\n\r\n";
        let (mut sent, mut heard, mut got) = (0, Vec::new(), Vec::new());
        for _ in 0..200 {
            match link.send(&ours, &request[sent..]) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if sent == request.len() {
                let _ = link.flush(&ours);
            }
            if up.read_tls(&mut theirs).is_ok() && up.process_new_packets().is_err() {
                up.write_tls(&mut theirs)?;
            }
            let _ = up.reader().read_to_end(&mut heard);
            if heard == request {
                up.writer().write_all(b"HTTP/1.1 200 OK\r\n\r\nhi")?;
                heard.clear();
            }
            while up.wants_write() {
                up.write_tls(&mut theirs)?;
            }
            match link.read(&ours, &mut got) {
                Ok(_) if got.ends_with(b"hi") => return Ok(got),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        panic!("no answer: {got:?}");
    }

    #[test]
    fn a_link_talks_tls_over_a_non_blocking_socket() {
        let verified = UpstreamTls::new(true, Some(&testdata("ca.pem"))).unwrap();
        let answer = exchange(verified.connect("a.test").unwrap()).unwrap();
        assert_eq!(answer, b"HTTP/1.1 200 OK\r\n\r\nhi");
        // Another name than the certificate's: refused, with the reason.
        let e = exchange(verified.connect("b.test").unwrap()).unwrap_err();
        assert!(
            e.to_string().starts_with("TLS: invalid peer certificate"),
            "{e}"
        );
        // Not verified: taken.
        let unverified = UpstreamTls::new(false, None).unwrap();
        assert!(exchange(unverified.connect("b.test").unwrap()).is_ok());
    }

    #[test]
    fn a_kept_link_serves_only_its_own_configuration() {
        let verified = UpstreamTls::new(true, Some(&testdata("ca.pem"))).unwrap();
        let unverified = UpstreamTls::new(false, None).unwrap();
        let link = unverified.connect("[::1]").unwrap();
        assert!(link.made_with(&unverified));
        assert!(
            !link.made_with(&verified),
            "an unverified link never serves a verified rule"
        );
        assert!(verified.connect("not a name").is_err());
    }

    #[test]
    fn a_ca_file_without_certificates_is_refused() {
        let e = UpstreamTls::new(true, Some(&testdata("a.key"))).unwrap_err();
        assert!(e.starts_with("no usable CA certificate in "), "{e}");
    }
}
