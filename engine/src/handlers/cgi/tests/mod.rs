//! Tests for the CGI building blocks: resolution over a temporary tree,
//! the environment byte for byte, header-block parsing, and which files
//! are programs.

use crate::config::{CgiRule, CgiTarget};

pub(crate) mod env;
mod head;
mod pipeline;
mod programs;
mod resolve;

/// A rule for `target` with no interpreter, environment or writable
/// directories.
fn rule(target: CgiTarget) -> CgiRule {
    CgiRule {
        target,
        interpreter: None,
        env: Vec::new(),
        writable: Vec::new(),
        max_body: None,
    }
}
