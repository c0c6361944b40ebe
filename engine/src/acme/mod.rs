//! Automatic HTTPS (issue #28, cargo feature `acme`): certificates
//! obtained and renewed from an ACME CA (RFC 8555) by brisk itself.
//!
//! - [`ari`]: ACME Renewal Information (RFC 9773): a certificate's
//!   identifier, the CA's suggested renewal window and the time chosen in
//!   it;
//! - [`key`]: the keys: ECDSA P-256 (the account's, and each
//!   certificate's by default) or RSA 2048 (a certificate's, by
//!   `key_type`), their JWK and thumbprint, JWS and DER signatures;
//! - [`rsa`]: RSA 2048 keys made by brisk (its own prime search: *ring*
//!   makes no RSA keys);
//! - [`cert`]: what brisk writes and signs in DER: the certification
//!   request of an order, the tls-alpn-01 challenge certificate, a local
//!   CA's certificates;
//! - [`fleet`]: the challenges a fleet shares through the storage, so
//!   that any of its servers answers the CA's validations;
//! - [`client`]: RFC 8555's client: the directory, an account, an order
//!   through its challenges to the certificate chain;
//! - [`http`]: the blocking HTTPS requests of the client, on its own
//!   thread;
//! - [`manager`]: what the ACME thread does: stored certificates served,
//!   missing ones ordered, due ones renewed, under the storage's locks;
//! - [`store`]: the storage directory (account, certificates, 0600 in
//!   0700, written atomically) and its locks, shared by a fleet.

pub mod ari;
pub mod cert;
pub mod client;
#[cfg(test)]
mod fake_ca;
pub mod fleet;
pub mod http;
pub mod key;
pub mod manager;
pub mod rsa;
pub mod store;
