//! The reverse proxy (`[[reverse_proxy]]`, being built: issue #27): a
//! request forwarded to an application behind brisk, re-framed on the
//! way so that no ambiguity the client wrote reaches it
//! ([`request`]), and its answer parsed as strictly as a request
//! ([`crate::http::parse::response`]) before any of it goes on.

pub mod body;
pub mod request;

#[cfg(test)]
mod tests;
