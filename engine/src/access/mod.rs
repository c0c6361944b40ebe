//! Access control: rules by client address (`admission`), request
//! rates per client (`rate`), HTTP basic authentication (RFC 7617) with
//! htpasswd files and per-client limits on failed attempts; throttling.
//!
//! Authentication is sans-IO towards the network: the engine hands
//! [`auth::Auth::check`] a decoded path, the raw `Authorization` value, the
//! client address and the time, and gets a [`auth::Verdict`] back. The
//! only I/O is reading the htpasswd files (at start-up and when they
//! change).

pub mod admission;
pub mod auth;
mod credentials;
mod error;
mod failures;
pub mod htpasswd;
pub mod limits;
pub mod proxy;
pub mod rate;
pub mod throttle;
pub mod verify;

pub use auth::{Auth, Check, Checked, Failure, FailureReason, Verdict};
pub use error::Error;
pub use failures::SharedFailures;

#[cfg(test)]
mod tests;
