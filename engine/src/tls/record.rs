//! The record layer of an established TLS connection, brisk's own: once
//! rustls has done the handshake (and written its session tickets), it
//! hands over the traffic keys (`dangerous_into_kernel_connection`, its
//! API for kTLS) and this module seals and opens the records with
//! *ring*'s AEADs, as RFC 8446 §5 (TLS 1.3) and RFC 5246 §6.2.3.3 with
//! RFC 5288 (AES-GCM) and RFC 7905 (ChaCha20-Poly1305) for TLS 1.2 say.
//!
//! Why: rustls's established connection keeps ~3 KiB per connection
//! (its common state, the deframer, two boxed AEAD contexts with their
//! key schedules). Here an idle connection keeps the key bytes, IVs and
//! sequence numbers and, for TLS 1.3, the two traffic secrets, to derive
//! the next keys on a KeyUpdate (RFC 8446 §7.2; `super::secrets`): all
//! inline, ~270 B. The expanded AEAD keys (AES's round keys
//! and GHASH table: ~0.5 KiB each way) are built when a record is first
//! sealed or opened, and dropped by [`Records::rest`], which the worker
//! calls when the connection has been idle a second.
//!
//! It handles, as rustls did: application data; alerts (close_notify
//! ends the input; user_canceled and TLS 1.2 warnings are ignored, a few
//! at most; anything else fails the connection); TLS 1.3 KeyUpdate
//! (the receiving keys change, and an `update_requested` is answered
//! with our own KeyUpdate before any later record); a TLS 1.2
//! renegotiation ClientHello (a `no_renegotiation` warning, fatal the
//! second time); the record size limits (§5.1, §5.2); bad MACs
//! (`bad_record_mac`); the AEAD confidentiality limit (TLS 1.3 changes
//! its sending keys, TLS 1.2 closes) and the sequence number's end.
//! Every failure that calls for an alert puts the fatal alert in `out`.

use super::secrets::TrafficSecrets;
use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use rustls::{
    AlertDescription, ConnectionTrafficSecrets, Error, ExtractedSecrets, SupportedCipherSuite,
};

/// A record header: type, legacy version, length (RFC 8446 §5.1).
const HEADER: usize = 5;
/// The AEAD tag of every suite brisk offers.
const TAG: usize = 16;
/// TLS 1.2 AES-GCM's explicit nonce, sent in each record (RFC 5288 §3).
const EXPLICIT: usize = 8;
/// The largest plaintext a record carries (RFC 8446 §5.1, RFC 5246 §6.2.1).
pub const MAX_PLAIN: usize = 1 << 14;
/// The largest ciphertext a record may carry: 2^14 + 256 in TLS 1.3
/// (§5.2); 2^14 + 2048 in TLS 1.2 (RFC 5246 §6.2.3).
const MAX_CIPHER_13: usize = MAX_PLAIN + 256;
const MAX_CIPHER_12: usize = MAX_PLAIN + 2048;

/// Content types (RFC 8446 §5.1).
const ALERT: u8 = 21;
const HANDSHAKE: u8 = 22;
const APPLICATION_DATA: u8 = 23;

/// Handshake message types (RFC 8446 §4, RFC 5246 §7.4).
const CLIENT_HELLO: u8 = 1;
const KEY_UPDATE: u8 = 24;

/// Alert levels (RFC 5246 §7.2; TLS 1.3 ignores them, §6).
const WARNING: u8 = 1;
const FATAL: u8 = 2;

/// Warning alerts, renegotiation attempts and KeyUpdates without data
/// between them tolerated before the connection fails, each its own
/// count: rustls's and BoringSSL's bounds, so that a peer cannot keep us
/// busy for free.
const MAX_WARNINGS: u8 = 4;
const MAX_RENEGOTIATIONS: u8 = 1;
const MAX_KEY_UPDATES: u8 = 32;
/// The largest post-handshake handshake message reassembled from several
/// records (§5.1): a TLS 1.2 renegotiation ClientHello, refused once
/// whole (rustls's bound for a handshake message it receives).
const MAX_HANDSHAKE: usize = 0xffff;
/// Empty application data records in a row tolerated (RFC 8446 §5.1
/// allows them; rustls too, 32 in a row).
const MAX_EMPTY: u8 = 32;

/// Bytes of framing a record adds to its plaintext, at most (header,
/// TLS 1.3's content type, tag; TLS 1.2's explicit nonce).
pub const OVERHEAD: usize = HEADER + 1 + TAG + EXPLICIT;

/// The AEAD of a suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cipher {
    Aes128Gcm,
    Aes256Gcm,
    Chacha20Poly1305,
}

impl Cipher {
    fn algorithm(self) -> &'static aead::Algorithm {
        match self {
            Cipher::Aes128Gcm => &aead::AES_128_GCM,
            Cipher::Aes256Gcm => &aead::AES_256_GCM,
            Cipher::Chacha20Poly1305 => &aead::CHACHA20_POLY1305,
        }
    }
}

/// One direction's keys: what a connection keeps at rest, and the
/// expanded key while it is busy.
struct Half {
    key: [u8; 32],
    iv: [u8; aead::NONCE_LEN],
    /// The next record's sequence number (RFC 8446 §5.3).
    seq: u64,
    /// `key` expanded for the AEAD; built on first use.
    live: Option<Box<LessSafeKey>>,
}

impl Half {
    /// The key and IV rustls derived (the suite's, checked), from `seq`.
    fn new(seq: u64, secrets: ConnectionTrafficSecrets) -> Result<(Cipher, Half), Error> {
        let (cipher, key, iv) = match secrets {
            ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (Cipher::Aes128Gcm, key, iv),
            ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (Cipher::Aes256Gcm, key, iv),
            ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => {
                (Cipher::Chacha20Poly1305, key, iv)
            }
            _ => return Err(Error::General("unsupported cipher for records".into())),
        };
        let (key, iv) = (key.as_ref(), iv.as_ref());
        if key.len() != cipher.algorithm().key_len() || iv.len() != aead::NONCE_LEN {
            return Err(Error::General("traffic key of the wrong size".into()));
        }
        let mut half = Half {
            key: [0; 32],
            iv: [0; aead::NONCE_LEN],
            seq,
            live: None,
        };
        half.key[..key.len()].copy_from_slice(key);
        half.iv.copy_from_slice(iv);
        Ok((cipher, half))
    }

    /// The expanded key, built now if the connection was at rest.
    fn key(&mut self, cipher: Cipher) -> &LessSafeKey {
        let alg = cipher.algorithm();
        let raw = &self.key[..alg.key_len()];
        self.live.get_or_insert_with(|| {
            // The length was checked in `new`: this cannot fail.
            let key = UnboundKey::new(alg, raw).unwrap_or_else(|_| unreachable!());
            Box::new(LessSafeKey::new(key))
        })
    }

    /// The per-record nonce: the IV XOR the sequence number, left-padded
    /// (RFC 8446 §5.3; RFC 7905 §2 for TLS 1.2's ChaCha20; rustls does
    /// the same for TLS 1.2's AES-GCM, sending the last 8 bytes as the
    /// explicit nonce, unique per key as RFC 5288 §3 asks).
    fn nonce(&self) -> [u8; aead::NONCE_LEN] {
        let mut n = self.iv;
        for (b, s) in n[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *b ^= s;
        }
        n
    }
}

impl Half {
    /// Drops the expanded key, zeroing its memory: what the connection
    /// keeps at rest are the key bytes alone.
    fn rest(&mut self) {
        if let Some(live) = self.live.take() {
            crate::sys::memory::drop_zeroed(live);
        }
    }
}

impl Drop for Half {
    fn drop(&mut self) {
        // Key bytes do not outlive the connection in freed memory.
        self.rest();
        self.key.fill(0);
        self.iv.fill(0);
    }
}

/// Why a record was not opened.
enum Refused {
    /// It does not authenticate (or is too short to).
    BadMac,
    /// Its TLSInnerPlaintext is longer than 2^14 + 1 bytes (§5.4).
    Overflow,
    /// Its TLSInnerPlaintext is all zeros: no content type (§5.4).
    NoType,
}

/// Why the record layer stopped: the connection must close (after `out`,
/// which holds the fatal alert when one is due, is written).
pub type Fail = Error;

/// What [`Records::receive`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// Plaintext bytes appended.
    pub plaintext: usize,
    /// The client sent close_notify: nothing after it is read.
    pub peer_closed: bool,
}

/// An established connection's record layer.
pub struct Records {
    suite: SupportedCipherSuite,
    cipher: Cipher,
    rx: Half,
    tx: Half,
    tls13: bool,
    /// TLS 1.3: what the next keys come from on a KeyUpdate.
    secrets: TrafficSecrets,
    /// Warning alerts so far (never reset, as rustls).
    warnings: u8,
    /// TLS 1.2 renegotiation attempts so far.
    renegotiations: u8,
    /// KeyUpdates since the last application data that was not empty
    /// (empty records are free to send: they do not reset it).
    key_updates: u8,
    /// Empty application data records in a row.
    empty: u8,
    /// The start of a handshake message whose end is in a later record
    /// (§5.1); empty (no allocation) between messages.
    pending: Vec<u8>,
}

impl Records {
    /// The record layer after the handshake, from the keys rustls hands
    /// over and, for TLS 1.3, the traffic secrets it told brisk's key log
    /// (without which a KeyUpdate could not be followed).
    pub fn new(
        keys: ExtractedSecrets,
        suite: SupportedCipherSuite,
        secrets: TrafficSecrets,
    ) -> Result<Records, Error> {
        let mut records = Records::from_secrets(keys, suite)?;
        if records.tls13 {
            if !secrets.known() {
                return Err(Error::General("TLS 1.3 traffic secrets not learnt".into()));
            }
            records.secrets = secrets;
        }
        Ok(records)
    }

    /// A record layer from keys alone, that cannot follow a KeyUpdate:
    /// the client's side in tests and the fuzz target, which seal the
    /// records a client could send (from its `dangerous_extract_secrets`).
    pub fn from_secrets(
        secrets: ExtractedSecrets,
        suite: SupportedCipherSuite,
    ) -> Result<Records, Error> {
        let (cipher, rx) = Half::new(secrets.rx.0, secrets.rx.1)?;
        let (tx_cipher, tx) = Half::new(secrets.tx.0, secrets.tx.1)?;
        if cipher != tx_cipher {
            return Err(Error::General("traffic keys of two ciphers".into()));
        }
        Ok(Records::from_halves(suite, cipher, rx, tx))
    }

    /// The other end's record layer, keys alone (no KeyUpdate): what this
    /// one seals, it opens, and the other way round. For the differential
    /// fuzz target, which needs the server's keys beside rustls's own
    /// server, from the client's.
    #[doc(hidden)]
    pub fn mirrored(&self) -> Records {
        let copy = |h: &Half| Half {
            key: h.key,
            iv: h.iv,
            seq: h.seq,
            live: None,
        };
        Records::from_halves(self.suite, self.cipher, copy(&self.tx), copy(&self.rx))
    }

    fn from_halves(suite: SupportedCipherSuite, cipher: Cipher, rx: Half, tx: Half) -> Records {
        Records {
            suite,
            cipher,
            rx,
            tx,
            tls13: suite.tls13().is_some(),
            secrets: TrafficSecrets::NONE,
            warnings: 0,
            renegotiations: 0,
            key_updates: 0,
            empty: 0,
            pending: Vec::new(),
        }
    }

    /// The suite negotiated.
    pub fn suite(&self) -> SupportedCipherSuite {
        self.suite
    }

    fn tls13(&self) -> bool {
        self.tls13
    }

    /// Drops the expanded keys (an idle connection): the next record
    /// builds them again from the bytes kept.
    pub fn rest(&mut self) {
        self.rx.rest();
        self.tx.rest();
    }

    /// Opens the complete records at the front of `incoming` (removing
    /// them; the start of one still arriving stays), appending their
    /// application data to `plaintext`; an answer the protocol calls for
    /// (a KeyUpdate, a warning) goes to `out`. Nothing after close_notify
    /// is read. On an error, `out` ends with the fatal alert, if one is
    /// due.
    pub fn receive(
        &mut self,
        incoming: &mut Vec<u8>,
        plaintext: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) -> Result<Opened, Fail> {
        let mut got = Opened::default();
        let mut at = 0;
        let result = loop {
            let rest = &mut incoming[at..];
            // Garbage is refused from its first bytes, as rustls does. §5:
            // a TLS 1.3 record says application_data outside (a
            // change_cipher_spec is only tolerated before Finished); TLS
            // 1.2 may carry alerts and handshakes too.
            let typ_ok = |t: u8| match self.tls13 {
                true => t == APPLICATION_DATA,
                false => (ALERT..=APPLICATION_DATA).contains(&t),
            };
            if rest.first().is_some_and(|&t| !typ_ok(t)) {
                break Err(self.fatal(
                    out,
                    AlertDescription::UnexpectedMessage,
                    "unexpected record type",
                ));
            }
            // §5.1: every version's records start 0x03 (legacy 0x0303 or
            // 0x0301); anything else is not TLS.
            if rest.get(1).is_some_and(|&major| major != 3) {
                break Err(self.fatal(out, AlertDescription::DecodeError, "not a TLS record"));
            }
            let Some(&[_, _, _, hi, lo]) = rest.get(..HEADER) else {
                break Ok(());
            };
            let len = usize::from(u16::from_be_bytes([hi, lo]));
            let max = match self.tls13() {
                true => MAX_CIPHER_13,
                false => MAX_CIPHER_12,
            };
            if len > max {
                break Err(self.fatal(
                    out,
                    AlertDescription::RecordOverflow,
                    "record longer than allowed",
                ));
            }
            if rest.len() < HEADER + len {
                break Ok(());
            }
            at += HEADER + len;
            let (header, body) = rest[..HEADER + len].split_at_mut(HEADER);
            let header: [u8; HEADER] = header.try_into().unwrap_or_else(|_| unreachable!());
            match self.open(header, body, plaintext, out, &mut got) {
                Ok(()) if got.peer_closed => {
                    // Nothing after close_notify counts (RFC 8446 §6.1).
                    at = incoming.len();
                    break Ok(());
                }
                Ok(()) => {}
                Err(e) => break Err(e),
            }
        };
        incoming.drain(..at);
        result.map(|()| got)
    }

    /// Opens one record in place and does what its content says.
    fn open(
        &mut self,
        header: [u8; HEADER],
        body: &mut [u8],
        plaintext: &mut Vec<u8>,
        out: &mut Vec<u8>,
        got: &mut Opened,
    ) -> Result<(), Fail> {
        if self.rx.seq == u64::MAX {
            return Err(self.fatal(out, AlertDescription::InternalError, "sequence exhausted"));
        }
        let (typ, content) = match self.decrypt(header, body) {
            Ok(opened) => opened,
            Err(Refused::BadMac) => {
                return Err(self.fatal_with(
                    out,
                    AlertDescription::BadRecordMac,
                    Error::DecryptError,
                ))
            }
            Err(Refused::Overflow) => {
                return Err(self.fatal(
                    out,
                    AlertDescription::RecordOverflow,
                    "inner plaintext too long",
                ))
            }
            Err(Refused::NoType) => {
                return Err(self.fatal(
                    out,
                    AlertDescription::UnexpectedMessage,
                    "record without a content type",
                ))
            }
        };
        self.rx.seq += 1;
        if content.len() > MAX_PLAIN {
            return Err(self.fatal(out, AlertDescription::RecordOverflow, "record too long"));
        }
        // §5.1: the records of a handshake message split over several
        // come one after the other, with nothing between them.
        if !self.pending.is_empty() && typ != HANDSHAKE {
            return Err(self.fatal(
                out,
                AlertDescription::UnexpectedMessage,
                "record inside a split handshake message",
            ));
        }
        match typ {
            APPLICATION_DATA if content.is_empty() && self.empty >= MAX_EMPTY => Err(self.fatal(
                out,
                AlertDescription::UnexpectedMessage,
                "too many empty records",
            )),
            APPLICATION_DATA => {
                self.empty = match content.is_empty() {
                    true => self.empty + 1,
                    false => 0,
                };
                plaintext.extend_from_slice(content);
                got.plaintext += content.len();
                if !content.is_empty() {
                    self.key_updates = 0;
                }
                Ok(())
            }
            ALERT => {
                // No fragment of an alert is empty (RFC 5246 §6.2.1: as an
                // empty handshake fragment, unexpected); a level neither
                // warning nor fatal is illegal in either version, as rustls
                // has it.
                let (level, description) = match *content {
                    [level @ (WARNING | FATAL), description] => (level, description),
                    _ => {
                        let bad = match content.len() {
                            0 => AlertDescription::UnexpectedMessage,
                            2 => AlertDescription::IllegalParameter,
                            _ => AlertDescription::DecodeError,
                        };
                        return Err(self.fatal(out, bad, "bad alert"));
                    }
                };
                let description = AlertDescription::from(description);
                // RFC 8446 §6.1: close_notify ends the input; user_canceled
                // is followed by it; every other TLS 1.3 alert is fatal.
                // TLS 1.2 warnings are ignored (RFC 5246 §7.2.2), a few.
                let warning = match self.tls13() {
                    true => description == AlertDescription::UserCanceled,
                    false => level == WARNING,
                };
                if description == AlertDescription::CloseNotify {
                    got.peer_closed = true;
                    Ok(())
                } else if warning && self.warnings < MAX_WARNINGS {
                    self.warnings += 1;
                    Ok(())
                } else {
                    Err(Error::AlertReceived(description))
                }
            }
            HANDSHAKE => self.handshake(content, out),
            _ => Err(self.fatal(
                out,
                AlertDescription::UnexpectedMessage,
                "unexpected record type",
            )),
        }
    }

    /// Decrypts `body` in place: the content type and the content, or
    /// why not.
    fn decrypt<'a>(
        &mut self,
        header: [u8; HEADER],
        body: &'a mut [u8],
    ) -> Result<(u8, &'a [u8]), Refused> {
        let cipher = self.cipher;
        if self.tls13() {
            let nonce = Nonce::assume_unique_for_key(self.rx.nonce());
            let key = self.rx.key(cipher);
            let inner = key
                .open_in_place(nonce, Aad::from(header), body)
                .map_err(|_| Refused::BadMac)?;
            // §5.4: the TLSInnerPlaintext, padding included, is 2^14 + 1
            // bytes at most (record_overflow); the real type is its last
            // non-zero byte, and one of zeros only is unexpected_message.
            if inner.len() > MAX_PLAIN + 1 {
                return Err(Refused::Overflow);
            }
            let end = inner.iter().rposition(|&b| b != 0).ok_or(Refused::NoType)?;
            let typ = inner[end];
            return Ok((typ, &inner[..end]));
        }
        // TLS 1.2: the AAD is seq_num + type + version + plaintext length
        // (RFC 5246 §6.2.3.3), the version as the record says (a record
        // whose version was changed on the way fails, as in rustls).
        let [typ, major, minor, ..] = header;
        let (nonce, sealed) = match cipher {
            Cipher::Chacha20Poly1305 => (self.rx.nonce(), body),
            _ => {
                // RFC 5288 §3: the salt, then the record's explicit part.
                if body.len() < EXPLICIT {
                    return Err(Refused::BadMac);
                }
                let (explicit, sealed) = body.split_at_mut(EXPLICIT);
                let mut nonce = self.rx.iv;
                nonce[4..].copy_from_slice(explicit);
                (nonce, sealed)
            }
        };
        let len = sealed
            .len()
            .checked_sub(TAG)
            .and_then(|l| u16::try_from(l).ok())
            .ok_or(Refused::BadMac)?;
        let aad = aad12(self.rx.seq, typ, [major, minor], len);
        let key = self.rx.key(cipher);
        let content = key
            .open_in_place(Nonce::assume_unique_for_key(nonce), Aad::from(aad), sealed)
            .map_err(|_| Refused::BadMac)?;
        Ok((typ, &*content))
    }

    /// Post-handshake handshake messages: TLS 1.3's KeyUpdate (§4.6.3);
    /// TLS 1.2's renegotiation is refused (RFC 5746 §4.4, as rustls does:
    /// a warning, fatal the second time); anything else is unexpected.
    /// A message may span records (§5.1): its start waits in `pending`,
    /// judged by its header at once (type, length), so that only a
    /// message brisk would take is kept, up to [`MAX_HANDSHAKE`] bytes.
    fn handshake(&mut self, fragment: &[u8], out: &mut Vec<u8>) -> Result<(), Fail> {
        if fragment.is_empty() {
            return Err(self.fatal(out, AlertDescription::UnexpectedMessage, "empty handshake"));
        }
        let joined;
        let mut rest = match self.pending.is_empty() {
            true => fragment,
            false => {
                let mut p = std::mem::take(&mut self.pending);
                p.extend_from_slice(fragment);
                joined = p;
                &joined[..]
            }
        };
        while let Some(&[typ, a, b, c]) = rest.get(..4) {
            let len = u32::from_be_bytes([0, a, b, c]) as usize;
            // Longer than any message taken here: decode_error, whatever
            // its type, as rustls says.
            if len > MAX_HANDSHAKE {
                return Err(self.fatal(
                    out,
                    AlertDescription::DecodeError,
                    "handshake message too long",
                ));
            }
            match (self.tls13(), typ) {
                (true, KEY_UPDATE) if len != 1 => {
                    return Err(self.fatal(out, AlertDescription::DecodeError, "bad KeyUpdate"))
                }
                (false, CLIENT_HELLO) => {}
                (true, KEY_UPDATE) => {}
                _ => {
                    return Err(self.fatal(
                        out,
                        AlertDescription::UnexpectedMessage,
                        "unexpected handshake message",
                    ))
                }
            }
            let Some(body) = rest.get(4..4 + len) else {
                break;
            };
            rest = &rest[4 + len..];
            match typ {
                KEY_UPDATE => {
                    // §5.1: a key change must end its record.
                    if !rest.is_empty() {
                        return Err(self.fatal(
                            out,
                            AlertDescription::UnexpectedMessage,
                            "data after KeyUpdate",
                        ));
                    }
                    return self.key_update(body[0], out);
                }
                _ if self.renegotiations < MAX_RENEGOTIATIONS => {
                    self.renegotiations += 1;
                    self.seal(
                        ALERT,
                        &[WARNING, AlertDescription::NoRenegotiation.into()],
                        out,
                    )?;
                }
                _ => {
                    return Err(self.fatal(
                        out,
                        AlertDescription::NoRenegotiation,
                        "renegotiation refused",
                    ))
                }
            }
        }
        // The start of a message whose end comes in the next record.
        self.pending.extend_from_slice(rest);
        Ok(())
    }

    /// A KeyUpdate (§4.6.3): the client's keys change; ours too when it
    /// asks, after our own KeyUpdate.
    fn key_update(&mut self, request: u8, out: &mut Vec<u8>) -> Result<(), Fail> {
        let requested = match request {
            0 => false,
            1 => true,
            _ => return Err(self.fatal(out, AlertDescription::IllegalParameter, "bad KeyUpdate")),
        };
        if self.key_updates >= MAX_KEY_UPDATES {
            return Err(self.fatal(
                out,
                AlertDescription::UnexpectedMessage,
                "too many KeyUpdates",
            ));
        }
        self.key_updates += 1;
        self.update_rx(out)?;
        if requested {
            self.update_tx(out)?;
        }
        Ok(())
    }

    /// The client's next traffic keys (RFC 8446 §7.2), from seq 0.
    fn update_rx(&mut self, out: &mut Vec<u8>) -> Result<(), Fail> {
        self.rx = self.next_keys(out, false)?;
        Ok(())
    }

    /// Sends a KeyUpdate (update_not_requested) with the current keys,
    /// then moves to the next ones (RFC 8446 §4.6.3).
    fn update_tx(&mut self, out: &mut Vec<u8>) -> Result<(), Fail> {
        self.seal_record(HANDSHAKE, &[KEY_UPDATE, 0, 0, 1, 0], out)?;
        self.tx = self.next_keys(out, true)?;
        Ok(())
    }

    /// The next keys of one direction (`tx`: ours), from its traffic
    /// secret, which moves on (RFC 8446 §7.2).
    fn next_keys(&mut self, out: &mut Vec<u8>, tx: bool) -> Result<Half, Fail> {
        match self.secrets.next(tx, self.cipher.algorithm().key_len()) {
            Some((key, iv)) => Ok(Half {
                key,
                iv,
                seq: 0,
                live: None,
            }),
            None => Err(self.fatal(out, AlertDescription::InternalError, "key update failed")),
        }
    }

    /// Encrypts `data` of content type `typ` into records at the end of
    /// `out` (nothing for empty data).
    /// On failure, `out` is as it was.
    pub fn seal(&mut self, typ: u8, data: &[u8], out: &mut Vec<u8>) -> Result<(), Fail> {
        let start = out.len();
        let sealed = self.seal_chunks(typ, data, out);
        if sealed.is_err() {
            out.truncate(start);
        }
        sealed
    }

    fn seal_chunks(&mut self, typ: u8, data: &[u8], out: &mut Vec<u8>) -> Result<(), Fail> {
        for chunk in data.chunks(MAX_PLAIN) {
            // The suite's confidentiality limit (rustls's figure): TLS 1.3
            // moves to new keys, TLS 1.2 cannot and closes.
            if self.tx.seq >= self.confidentiality_limit() {
                match self.tls13() {
                    true => self.update_tx(out)?,
                    false => return Err(Error::General("record limit reached".into())),
                }
            }
            self.seal_record(typ, chunk, out)?;
        }
        Ok(())
    }

    /// Application data.
    pub fn seal_data(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<(), Fail> {
        self.seal(APPLICATION_DATA, data, out)
    }

    /// close_notify (RFC 8446 §6.1).
    pub fn close_notify(&mut self, out: &mut Vec<u8>) -> Result<(), Fail> {
        self.seal(ALERT, &[WARNING, AlertDescription::CloseNotify.into()], out)
    }

    fn confidentiality_limit(&self) -> u64 {
        let common = match self.suite {
            SupportedCipherSuite::Tls12(s) => &s.common,
            SupportedCipherSuite::Tls13(s) => &s.common,
        };
        common.confidentiality_limit
    }

    /// One record of at most [`MAX_PLAIN`] bytes.
    fn seal_record(&mut self, typ: u8, data: &[u8], out: &mut Vec<u8>) -> Result<(), Fail> {
        if self.tx.seq == u64::MAX {
            return Err(Error::General("sequence exhausted".into()));
        }
        let tls13 = self.tls13();
        let cipher = self.cipher;
        let explicit = match (tls13, cipher) {
            (false, Cipher::Aes128Gcm | Cipher::Aes256Gcm) => EXPLICIT,
            _ => 0,
        };
        let inner = data.len() + usize::from(tls13);
        let len = explicit + inner + TAG;
        let start = out.len();
        // §5.2: TLS 1.3 records say application_data and 0x0303 outside.
        let outer = if tls13 { APPLICATION_DATA } else { typ };
        out.extend_from_slice(&[outer, 3, 3]);
        out.extend_from_slice(&(len as u16).to_be_bytes());
        let nonce = self.tx.nonce();
        out.extend_from_slice(&nonce[4..4 + explicit]);
        out.extend_from_slice(data);
        let (aad, aad_len) = if tls13 {
            out.push(typ);
            let mut a = [0; 13];
            a[..HEADER].copy_from_slice(&out[start..start + HEADER]);
            (a, HEADER)
        } else {
            (aad12(self.tx.seq, typ, [3, 3], data.len() as u16), 13)
        };
        let body = start + HEADER + explicit;
        let key = self.tx.key(cipher);
        let sealed = key.seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(&aad[..aad_len]),
            &mut out[body..body + inner],
        );
        let Ok(tag) = sealed else {
            // No plaintext (nor half a record) stays behind.
            out.truncate(start);
            return Err(Error::EncryptError);
        };
        out.extend_from_slice(tag.as_ref());
        self.tx.seq += 1;
        Ok(())
    }

    /// Puts the fatal alert `description` in `out` (as far as the keys
    /// allow) and returns the error that ends the connection.
    fn fatal(&mut self, out: &mut Vec<u8>, description: AlertDescription, why: &str) -> Error {
        self.fatal_with(out, description, Error::General(why.into()))
    }

    fn fatal_with(&mut self, out: &mut Vec<u8>, description: AlertDescription, e: Error) -> Error {
        let _ = self.seal_record(ALERT, &[FATAL, description.into()], out);
        e
    }
}

/// TLS 1.2's additional data (RFC 5246 §6.2.3.3).
fn aad12(seq: u64, typ: u8, version: [u8; 2], len: u16) -> [u8; 13] {
    let mut a = [0; 13];
    a[..8].copy_from_slice(&seq.to_be_bytes());
    a[8] = typ;
    a[9..11].copy_from_slice(&version);
    a[11..].copy_from_slice(&len.to_be_bytes());
    a
}

#[cfg(test)]
mod tests;
