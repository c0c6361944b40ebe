//! What ACME's manager reads back from its storage (`chain.pem`,
//! `key.pem`) before serving it (`brisk::acme::manager::certified`): PEM
//! blocks (`acme::store::pem_der`), each certificate through the X.509
//! reader, the key through rustls. The input is the chain, a NUL, then
//! the key. Beyond "never panics": a certificate served has the leaf's
//! validity, and its key is the one that matches it (whether it is valid
//! now is judged by the caller: `usable`).

#![no_main]

use brisk::acme::manager::certified;
use brisk::acme::store::{pem_der, Stored};
use libfuzzer_sys::fuzz_target;


fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (chain, key) = text.split_once('\0').unwrap_or((&text, ""));
    for label in ["CERTIFICATE", "PRIVATE KEY"] {
        if let Some(der) = pem_der(chain, label) {
            let _ = brisk::tls::x509::parse(&der);
        }
    }
    let stored = Stored {
        chain_pem: chain.to_string(),
        key_pem: key.to_string(),
    };
    let Ok((served, not_before, not_after)) = certified(&stored) else {
        return;
    };
    let leaf = brisk::tls::x509::parse(served.cert[0].as_ref()).expect("the leaf reads");
    assert_eq!((leaf.not_before, leaf.not_after), (not_before, not_after));
    assert!(served.keys_match().is_ok());
});
