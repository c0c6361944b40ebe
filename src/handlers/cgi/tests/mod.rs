//! Tests for the CGI building blocks: resolution over a temporary tree,
//! the environment byte for byte, and header-block parsing.

mod env;
mod head;
mod pipeline;
mod resolve;
