//! FastCGI (`[[fastcgi]]`, being built: issue #27): requests handed to an
//! application server such as php-fpm over the FastCGI 1.0 protocol.
//!
//! - [`record`]: the web server's side of the records, sans-IO: encoders
//!   for what brisk sends (BEGIN_REQUEST, PARAMS, STDIN, ABORT_REQUEST)
//!   and a decoder for what the application answers (STDOUT, STDERR,
//!   END_REQUEST). One request per connection at a time (no
//!   multiplexing); `FCGI_KEEP_CONN` lets a connection serve the next.
//! - [`peer`]: the application's side, small and allocating where that is
//!   simpler: reads what the encoders write and writes what the decoder
//!   reads, for tests, the fuzz target and stand-in applications.

pub mod peer;
pub mod record;

#[cfg(test)]
mod tests;
