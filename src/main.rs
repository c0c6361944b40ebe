//! The `brisk` command: all it does is the engine's
//! [`brisk::process::command`], which parses the command line and the
//! configuration, then serves.

#![deny(unsafe_code)]

fn main() {
    std::process::exit(brisk::process::command(
        std::env::args_os().skip(1).collect(),
    ));
}
